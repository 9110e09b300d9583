/* dump_pprof.c - `trace-dump pprof`: heap profiles in pprof's format (gzip profile.proto).
 *
 * Purpose: look at a trace's allocations with pprof (go tool pprof, speedscope, Perfetto UI):
 * which stacks hold memory at a moment (--live-at peak|end|TIME: bytes and objects live
 * then) or allocated it over the whole trace (--alloc).
 *
 * Stacks: each thread stream keeps its current stack of spans and functions as the merge
 * replays them (span_begin / func_enter push a frame; span_end / func_exit pop the innermost,
 * the rule FORMAT.md gives for spans); an allocation is charged to that stack, under a root
 * frame for its thread ("tid T NAME"). Function frames are named by dump_func_name
 * (their symbol names, else module+offset), span frames by the span's name. Stacks are interned
 * in a trie (node = parent + frame), so memory grows with the distinct stacks, never with the
 * number of events.
 *
 * Live accounting is the chrome exporter's: per process (a forked child shares addresses
 * with its parent), an allocation at a live address replaces it, a free of an unknown
 * address changes nothing; the live table keeps each allocation's size and stack node
 * (packed: 40 bits of size, 24 of node) and is capped (then the profile says approximate).
 * --live-at peak takes two passes: the first finds the record at which the live bytes
 * first reach their maximum, the second stops there.
 *
 * Output: Profile with sample_type [objects count, space bytes] (inuse_* or alloc_*), one
 * Function and one Location (with one Line) per frame, one Mapping (the program's executable,
 * for pprof's "File" and "Build ID": the names carry their module), period_type space bytes
 * and period 1 (every allocation counted), samples leaf first; gzip (src/export/gz_deflate.c),
 * as pprof reads it.
 * Schema: google/pprof proto/profile.proto (tests/profile.proto copies it).
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "cli_duration.h"
#include "dump_common.h"
#include "gz_deflate.h"
#include "pb_wire.h"
#include "u64map.h"

static const char dump__pprof_help[] =
	"usage: trace-dump pprof (--live-at peak|end|T | --alloc) FILE -o OUT\n"
	"\n"
	"A heap profile in pprof's format (gzip-compressed profile.proto): open it with\n"
	"`go tool pprof OUT`, speedscope or ui.perfetto.dev. The stack of each allocation is\n"
	"the spans and functions open on its thread at that moment (functions named\n"
	"module+offset), under a frame for the thread.\n"
	"  --live-at peak      bytes and objects live when the live bytes first peak\n"
	"  --live-at end       ... at the end of the trace: every process of the tree, each\n"
	"                      at its exit or at the end (the summary's live_by_process\n"
	"                      summed; its \"live at end\" is the program's alone)\n"
	"  --live-at T         ... at T from the start of recording (a duration: 1.5s)\n"
	"  --alloc             bytes and objects allocated over the whole trace\n"
	"  -o, --output OUT    the file to write (required)\n"
	"  -h, --help          this text\n";

#define DUMP__PP_LIVE_MAX (1u << 21)
#define DUMP__PP_SIZE_BITS 40
#define DUMP__PP_MAX_NODES (1u << (64 - DUMP__PP_SIZE_BITS))

enum { DUMP__PP_SPAN = 1, DUMP__PP_FUNC = 2, DUMP__PP_THREAD = 3 };

struct dump__pp_frame {
	uint32_t kind, pid;
	uint64_t id; /* name id, address, or tid */
	char *name; /* owned: a thread's latest name from its THREAD records; NULL none seen */
};

struct dump__pp_node {
	uint32_t parent, frame;
	int64_t objs, bytes;
};

struct dump__pp {
	struct trcfile_reader *r;
	struct dump__pp_frame *frames;
	size_t n_frames, cap_frames;
	struct u64index frame_ix; /* (kind, pid, id) -> frames */
	struct dump__pp_node *nodes; /* nodes[0] is the root */
	size_t n_nodes, cap_nodes;
	struct u64index node_ix; /* (parent, frame) -> nodes */
	uint32_t *cur; /* per stream: its current node */
	struct allocmap *live;
	bool alloc_mode, approximate;
	uint64_t live_bytes, peak_bytes, peak_ord;
	int err;
};

/* Frames and nodes are interned through u64index under its seed: a frame's id is an
 * address or a name id the trace chose, and keys crafted to collide in a fixed hash made the
 * probes quadratic (u64map.h: a random seed, and a bound on every run). */
static uint64_t dump__pp_frame_hash(const struct dump__pp_frame *f, uint64_t seed)
{
	return u64map_mix(f->id ^ u64map_mix((uint64_t)f->kind << 32 | f->pid, seed), seed);
}

static uint64_t dump__pp_frame_entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	return dump__pp_frame_hash(&((const struct dump__pp *)ctx)->frames[i], seed);
}

static uint64_t dump__pp_node_hash(uint32_t parent, uint32_t frame, uint64_t seed)
{
	return u64map_mix((uint64_t)parent << 32 | frame, seed);
}

static uint64_t dump__pp_node_entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct dump__pp_node *n = &((const struct dump__pp *)ctx)->nodes[i];
	return dump__pp_node_hash(n->parent, n->frame, seed);
}

/* The frame's index (interned); UINT32_MAX on out of memory. */
static uint32_t dump__pp_frame(struct dump__pp *p, uint32_t kind, uint32_t pid, uint64_t id)
{
	struct dump__pp_frame f = {
		.kind = kind, .pid = kind == DUMP__PP_SPAN ? 0 : pid, .id = id, .name = NULL};
	uint64_t h = dump__pp_frame_hash(&f, u64index_seed(&p->frame_ix));
	uint32_t e;
	for (size_t pos = u64index_start(&p->frame_ix, h);
	     (e = u64index_next(&p->frame_ix, &pos)) != U64INDEX_END;) {
		const struct dump__pp_frame *g = &p->frames[e];
		if (g->kind == f.kind && g->pid == f.pid && g->id == f.id)
			return e;
	}
	if (p->n_frames >= DUMP__PP_MAX_NODES)
		return UINT32_MAX; /* more frames than nodes could use */
	if (p->n_frames == p->cap_frames) {
		size_t cap = p->cap_frames ? p->cap_frames * 2 : 256;
		struct dump__pp_frame *n = realloc(p->frames, cap * sizeof(*n));
		if (!n)
			return UINT32_MAX;
		p->frames = n;
		p->cap_frames = cap;
	}
	p->frames[p->n_frames] = f;
	if (u64index_add(&p->frame_ix, (uint32_t)p->n_frames, h))
		return UINT32_MAX;
	return (uint32_t)p->n_frames++;
}

/* The child of parent by frame (interned); parent itself when out of memory or nodes. */
static uint32_t dump__pp_child(struct dump__pp *p, uint32_t parent, uint32_t frame)
{
	if (frame == UINT32_MAX || p->n_nodes >= DUMP__PP_MAX_NODES - 1) {
		p->approximate = true;
		return parent;
	}
	uint64_t h = dump__pp_node_hash(parent, frame, u64index_seed(&p->node_ix));
	uint32_t v;
	for (size_t pos = u64index_start(&p->node_ix, h);
	     (v = u64index_next(&p->node_ix, &pos)) != U64INDEX_END;)
		if (p->nodes[v].parent == parent && p->nodes[v].frame == frame)
			return v;
	if (p->n_nodes == p->cap_nodes) {
		size_t cap = p->cap_nodes * 2;
		struct dump__pp_node *n = realloc(p->nodes, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return parent;
		}
		p->nodes = n;
		p->cap_nodes = cap;
	}
	v = (uint32_t)p->n_nodes;
	p->nodes[v] = (struct dump__pp_node){.parent = parent, .frame = frame};
	if (u64index_add(&p->node_ix, v, h)) {
		p->err = -ENOMEM;
		return parent;
	}
	p->n_nodes++;
	return v;
}

static void dump__pp_alloc(struct dump__pp *p, uint32_t pid, uint32_t node,
			   const struct trc_record *rec)
{
	uint64_t old = 0;
	if (rec->type == TRC_REC_ALLOC) {
		if (p->alloc_mode) {
			p->nodes[node].objs++;
			p->nodes[node].bytes += (int64_t)rec->alloc.size;
		}
		uint64_t size = rec->alloc.size;
		if (size >> DUMP__PP_SIZE_BITS ||
		    allocmap_put(p->live, pid, rec->alloc.addr,
				 size | (uint64_t)node << DUMP__PP_SIZE_BITS, &old)) {
			p->approximate = true;
			return;
		}
		p->live_bytes += size;
		if (!p->alloc_mode) {
			p->nodes[node].objs++;
			p->nodes[node].bytes += (int64_t)size;
		}
	} else if (!allocmap_take(p->live, pid, rec->alloc.addr, &old)) {
		return;
	}
	/* old: what this record frees (a free, or an allocation replaced at a live address). */
	if (old) {
		uint64_t size = old & ((1ull << DUMP__PP_SIZE_BITS) - 1);
		uint32_t n = (uint32_t)(old >> DUMP__PP_SIZE_BITS);
		p->live_bytes -= size;
		if (!p->alloc_mode) {
			p->nodes[n].objs--;
			p->nodes[n].bytes -= (int64_t)size;
		}
	}
}

/* A THREAD record: its thread's frame takes the name (a thread names itself in its own
 * stream, which the reader's tables, read from the metadata stream, do not hold). */
static void dump__pp_thread_name(struct dump__pp *p, const struct trc_record *rec)
{
	uint32_t f = dump__pp_frame(p, DUMP__PP_THREAD, rec->thread.pid, rec->thread.tid);
	if (f == UINT32_MAX) {
		p->approximate = true;
		return;
	}
	uint32_t n = rec->thread.name_len < 256 ? rec->thread.name_len : 256;
	char *c = malloc(n + 1u);
	if (!c) {
		p->err = -ENOMEM;
		return;
	}
	memcpy(c, rec->thread.name, n);
	c[n] = 0;
	free(p->frames[f].name);
	p->frames[f].name = c;
}

/* One pass over the merge, up to and including record number stop (or ts_ns > t_stop). The
 * first pass of --live-at peak finds peak_ord. 0 or -errno. */
static int dump__pp_pass(struct dump__pp *p, uint64_t stop, uint64_t t_stop)
{
	unsigned ns = trcfile_reader_stream_count(p->r);
	struct trcfile_iter *it = trcfile_iter_new(p->r);
	if (!it)
		return -ENOMEM;
	uint32_t *base = calloc(ns ? ns : 1, sizeof(*base));
	if (!base) {
		trcfile_iter_free(it);
		return -ENOMEM;
	}
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, s);
		base[s] = si->kind == TRC_STREAM_THREAD
				  ? dump__pp_child(
					    p, 0,
					    dump__pp_frame(p, DUMP__PP_THREAD, si->pid, si->tid))
				  : 0;
		p->cur[s] = base[s];
	}
	struct trc_record rec;
	unsigned sidx;
	int err;
	uint64_t ord = 0;
	while (!p->err && (err = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		if (rec.ts_ns > t_stop)
			break;
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, sidx);
		uint32_t *cur = &p->cur[sidx];
		switch (rec.type) {
		case TRC_REC_SPAN_BEGIN:
			*cur = dump__pp_child(
				p, *cur, dump__pp_frame(p, DUMP__PP_SPAN, 0, rec.span.name_id));
			break;
		case TRC_REC_FUNC_ENTER:
			*cur = dump__pp_child(
				p, *cur, dump__pp_frame(p, DUMP__PP_FUNC, si->pid, rec.func.addr));
			break;
		case TRC_REC_SPAN_END:
		case TRC_REC_FUNC_EXIT:
			if (*cur != base[sidx])
				*cur = p->nodes[*cur].parent;
			break;
		case TRC_REC_THREAD:
			dump__pp_thread_name(p, &rec);
			break;
		case TRC_REC_ALLOC:
		case TRC_REC_FREE:
			dump__pp_alloc(p, si->pid, *cur, &rec);
			if (p->live_bytes > p->peak_bytes) {
				p->peak_bytes = p->live_bytes;
				p->peak_ord = ord;
			}
			break;
		}
		if (ord++ == stop)
			break;
	}
	free(base);
	trcfile_iter_free(it);
	if (err < 0)
		return err;
	return p->err;
}

/* The name of frame f into buf; its length. */
static size_t dump__pp_frame_name(const struct dump__pp *p, const struct dump__pp_frame *f,
				  char *buf, size_t len)
{
	if (f->kind == DUMP__PP_FUNC)
		return dump_func_name(p->r, f->pid, f->id, buf, len);
	if (f->kind == DUMP__PP_SPAN) {
		uint32_t n = 0;
		const char *s = trcfile_reader_name(p->r, (uint32_t)f->id, &n);
		if (s)
			return (size_t)snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), s);
		return (size_t)snprintf(buf, len, "#%" PRIu64, f->id);
	}
	uint32_t n = 0;
	const char *t = f->name;
	if (t)
		n = (uint32_t)strlen(t);
	else
		t = trcfile_reader_thread_name(p->r, f->pid, (uint32_t)f->id, &n);
	int k = snprintf(buf, len, "tid %" PRIu64 "%s%.*s", f->id, t ? " " : "",
			 t ? (int)(n < 256 ? n : 256) : 0, t ? t : "");
	return k < 0 ? 0 : (size_t)k >= len ? len - 1 : (size_t)k;
}

/* The traced program's executable: of the modules of the header's pid, the one named as the
 * command's argv[0] is, else the lowest (maps list the executable first); NULL without one. */
static const struct trcfile_module *dump__pp_main_module(const struct trcfile_reader *r)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	const struct trcfile_module *m;
	size_t n = trcfile_reader_modules_of(r, h->pid, &m);
	if (!n)
		return NULL;
	size_t a0 = strnlen(h->cmdline, h->cmdline_len);
	const char *cmd = memrchr(h->cmdline, '/', a0);
	cmd = cmd ? cmd + 1 : h->cmdline;
	size_t cmd_len = a0 - (size_t)(cmd - h->cmdline);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(m[i].path, '/');
		base = base ? base + 1 : m[i].path;
		if (cmd_len && strlen(base) == cmd_len && !memcmp(base, cmd, cmd_len))
			return &m[i];
	}
	return &m[0];
}

/* The profile (uncompressed) into b. */
static void dump__pp_profile(struct dump__pp *p, struct pb_buf *b, const char *mode)
{
	const struct trcfile_header *h = trcfile_reader_header(p->r);
	const struct trcfile_module *exe = dump__pp_main_module(p->r);
	bool a = p->alloc_mode;
	/* Strings: 0 "", 1..4 the sample types, one per frame from 5, then the comment, "space"
	 * (the period's type), and the executable's path and build-id when known. */
	const uint64_t s_comment = 5 + p->n_frames, s_space = s_comment + 1, s_exe = s_space + 1;
	size_t m = pb_open(b, 1);
	pb_uint(b, 1, 1);
	pb_uint(b, 2, 2);
	pb_close(b, m);
	m = pb_open(b, 1);
	pb_uint(b, 1, 3);
	pb_uint(b, 2, 4);
	pb_close(b, m);
	for (size_t n = 1; n < p->n_nodes; n++) {
		const struct dump__pp_node *nd = &p->nodes[n];
		if (!nd->objs && !nd->bytes)
			continue;
		size_t s = pb_open(b, 2);
		size_t l = pb_open(b, 1); /* packed location ids, leaf first */
		for (uint32_t k = (uint32_t)n; k; k = p->nodes[k].parent)
			pb_varint(b, p->nodes[k].frame + 1u);
		pb_close(b, l);
		l = pb_open(b, 2);
		pb_varint(b, (uint64_t)nd->objs);
		pb_varint(b, (uint64_t)nd->bytes);
		pb_close(b, l);
		pb_close(b, s);
	}
	if (exe) {
		/* The main binary, so pprof names it ("Main binary filename"); the locations are
		 * named by their functions and need no mapping. */
		size_t mp = pb_open(b, 3);
		pb_uint(b, 1, 1);
		pb_uint(b, 2, exe->start);
		pb_uint(b, 3, exe->end);
		pb_uint(b, 4, exe->offset);
		pb_uint(b, 5, s_exe);
		if (exe->build_id_len)
			pb_uint(b, 6, s_exe + 1);
		pb_uint(b, 7, 1); /* has_functions */
		pb_close(b, mp);
	}
	for (size_t f = 0; f < p->n_frames; f++) {
		size_t l = pb_open(b, 4);
		pb_uint(b, 1, f + 1);
		size_t ln = pb_open(b, 4);
		pb_uint(b, 1, f + 1);
		pb_close(b, ln);
		pb_close(b, l);
	}
	for (size_t f = 0; f < p->n_frames; f++) {
		size_t fn = pb_open(b, 5);
		pb_uint(b, 1, f + 1);
		pb_uint(b, 2, f + 5);
		pb_uint(b, 3, f + 5);
		pb_close(b, fn);
	}
	pb_bytes(b, 6, "", 0);
	pb_str(b, 6, a ? "alloc_objects" : "inuse_objects");
	pb_str(b, 6, "count");
	pb_str(b, 6, a ? "alloc_space" : "inuse_space");
	pb_str(b, 6, "bytes");
	char name[400];
	for (size_t f = 0; f < p->n_frames; f++) {
		size_t k = dump__pp_frame_name(p, &p->frames[f], name, sizeof(name));
		pb_bytes(b, 6, name, k);
	}
	char c[200];
	int k = snprintf(c, sizeof(c), "trace-dump pprof %s%s", mode,
			 p->approximate ? " (approximate: a table hit its cap)" : "");
	pb_bytes(b, 6, c, (size_t)k);
	pb_str(b, 6, "space");
	if (exe) {
		pb_bytes(b, 6, exe->path, exe->path_len);
		if (exe->build_id_len) {
			char hex[2 * TRC_BUILD_ID_MAX + 1];
			for (uint32_t i = 0; i < exe->build_id_len; i++)
				snprintf(hex + 2 * i, 3, "%02x", exe->build_id[i]);
			pb_bytes(b, 6, hex, 2 * (size_t)exe->build_id_len);
		}
	}
	pb_uint(b, 9, h->start_realtime_ns);
	/* period_type space/bytes, period 1: every allocation is counted, none sampled. */
	size_t pt = pb_open(b, 11);
	pb_uint(b, 1, s_space);
	pb_uint(b, 2, 4);
	pb_close(b, pt);
	pb_uint(b, 12, 1);
	pb_uint(b, 13, s_comment); /* comment */
	pb_uint(b, 14, 3); /* default: space */
}

int dump_pprof_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"live-at", required_argument, NULL, 'L'},
		{"alloc", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0], *live_at = NULL;
	struct dump_outfile of = {0};
	bool alloc = false;
	uint64_t at = 0;
	char msg[256];
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (opt) {
		case 'o':
			of.base = optarg;
			break;
		case 'L':
			live_at = optarg;
			if (strcmp(optarg, "peak") && strcmp(optarg, "end") &&
			    duration_parse_ns(optarg, 0, DUMP_TIME_MAX_NS, &at, msg, sizeof(msg)))
				return dump_usage_error(cmd, "--live-at: peak, end or a time: %s",
							msg);
			break;
		case 'A':
			alloc = true;
			break;
		case 'h':
			fputs(dump__pprof_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(cmd, opt, argv, opts);
		}
	}
	if (!!live_at == alloc)
		return dump_usage_error(cmd, "give one of --live-at peak|end|T and --alloc");
	const char *path = dump_file_operand(cmd, argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	if (!of.base || !strcmp(of.base, "-"))
		return dump_usage_error(cmd, "-o OUT is required (the output is binary)");
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL, err = 0;
	unsigned ns = trcfile_reader_stream_count(r);
	struct pb_buf b = {0};
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	struct dump__pp *p = calloc(1, sizeof(*p));
	if (!p)
		goto oom;
	p->r = r;
	p->alloc_mode = alloc;
	u64index_init(&p->frame_ix, dump__pp_frame_entry_hash, p);
	u64index_init(&p->node_ix, dump__pp_node_entry_hash, p);
	p->cur = calloc(ns ? ns : 1, sizeof(*p->cur));
	p->cap_nodes = 1024;
	p->nodes = calloc(p->cap_nodes, sizeof(*p->nodes));
	p->n_nodes = 1;
	p->live = allocmap_new(DUMP__PP_LIVE_MAX);
	if (!p->cur || !p->nodes || !p->live)
		goto oom;
	uint64_t start = dump_start_ns(r);
	uint64_t stop = UINT64_MAX, t_stop = UINT64_MAX;
	if (live_at && !strcmp(live_at, "peak")) {
		err = dump__pp_pass(p, UINT64_MAX, UINT64_MAX);
		if (err)
			goto fail;
		stop = p->peak_ord;
		/* Second pass from scratch: the same nodes, values and live table cleared. */
		for (size_t n = 0; n < p->n_nodes; n++)
			p->nodes[n].objs = p->nodes[n].bytes = 0;
		allocmap_free(p->live);
		p->live = allocmap_new(DUMP__PP_LIVE_MAX);
		if (!p->live)
			goto oom;
		p->live_bytes = 0;
		if (!p->peak_bytes)
			stop = 0; /* nothing allocated: an empty profile */
	} else if (live_at && strcmp(live_at, "end")) {
		t_stop = at > UINT64_MAX - start ? UINT64_MAX : start + at;
	}
	err = dump__pp_pass(p, stop, t_stop);
	if (err)
		goto fail;
	char mode[160];
	snprintf(mode, sizeof(mode), "%s%s%s", alloc ? "--alloc" : "--live-at ",
		 alloc ? "" : live_at,
		 live_at && !strcmp(live_at, "end")
			 ? ": every process of the tree, each at its exit or at the end (the "
			   "summary: live_by_process)"
			 : "");
	dump__pp_profile(p, &b, mode);
	if (b.err)
		goto oom;
	err = gz_deflate(b.p, b.len, &gz, &gz_len);
	if (err)
		goto fail;
	if (dump_outfile_next(&of))
		goto out;
	dump_write(gz, gz_len);
	if (dump_outfile_close(&of))
		goto out;
	if (p->approximate)
		fprintf(stderr,
			"trace-dump pprof: approximate: a table hit its cap (%u live "
			"allocations, %u stacks)\n",
			DUMP__PP_LIVE_MAX, DUMP__PP_MAX_NODES);
	rc = DUMP_EXIT_OK;
	goto out;
oom:
	err = -ENOMEM;
fail:
	dump_error("%s: %s", path,
		   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r) : strerror(-err));
out:
	if (p) {
		for (size_t f = 0; f < p->n_frames; f++)
			free(p->frames[f].name);
		free(p->frames);
		u64index_destroy(&p->frame_ix);
		free(p->nodes);
		u64index_destroy(&p->node_ix);
		free(p->cur);
		allocmap_free(p->live);
		free(p);
	}
	free(gz);
	pb_buf_free(&b);
	if (rc == DUMP_EXIT_OK)
		dump_close(r, path);
	else
		dump_reader_free(r);
	return rc;
}
