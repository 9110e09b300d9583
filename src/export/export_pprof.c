/* export_pprof.c - heap profiles in pprof's format (gzip profile.proto), export.h's
 * export_pprof.
 *
 * Purpose: look at a trace's allocations with pprof (go tool pprof, speedscope, Perfetto UI):
 * which stacks hold memory at a moment (EXPORT_PPROF_LIVE_*: bytes and objects live then) or
 * allocated it over the whole trace (EXPORT_PPROF_ALLOC).
 *
 * Call stacks: an allocation that carries one (trace-run --alloc-stacks) is charged to its
 * thread's frame, the spans open on the thread, then the stack's frames outermost first
 * (functions of -finstrument-functions are in it already), each a Location at its return
 * address less one, named by the namer. With sampled stacks each sampled allocation weighs
 * alloc_weight.h's n / p bytes and 1 / p objects and an unsampled one nothing: the profile's
 * totals per stack are unbiased estimates.
 *
 * Stacks: each thread stream keeps its open spans and functions as the merge replays them
 * (export_spans.h: span_begin / func_enter push a frame; span_end / func_exit pop the
 * innermost, the rule FORMAT.md gives for spans); an allocation is charged to that stack,
 * under a root frame for its thread ("tid T NAME"). Function frames are named by the
 * caller's namer (trace-dump: their symbol names, else module+offset), span frames by the
 * span's name. Stacks are interned in a trie (node = parent + frame; each open frame keeps
 * the node it opened), so memory grows with the distinct stacks and the nesting, never with
 * the number of events.
 *
 * Live accounting is the chrome exporter's: per process (a forked child shares addresses
 * with its parent), an allocation at a live address replaces it, a free of an unknown
 * address changes nothing; the live table keeps each allocation's size and stack node
 * (packed: 40 bits of size, 24 of node) and is capped (then the profile says approximate).
 * EXPORT_PPROF_LIVE_PEAK takes two passes: the first finds the record at which the live
 * bytes first reach their maximum, the second stops there.
 *
 * Output: Profile with sample_type [objects count, space bytes] (inuse_* or alloc_*), one
 * Function and one Location (with one Line) per frame, one Mapping (the program's executable,
 * for pprof's "File" and "Build ID": the names carry their module), period_type space bytes
 * and period 1 (every allocation counted), samples leaf first; gzip (gz_deflate.c), as pprof
 * reads it.
 * Schema: google/pprof proto/profile.proto (tests/profile.proto copies it).
 *
 * Threads: the caller's; no globals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_weight.h"
#include "allocmap.h"
#include "export.h"
#include "export_spans.h"
#include "gz_deflate.h"
#include "pb_wire.h"
#include "trcfile.h"
#include "u64map.h"

#define EXPORT__PP_SIZE_BITS 40

enum { EXPORT__PP_SPAN = 1, EXPORT__PP_FUNC = 2, EXPORT__PP_THREAD = 3 };

struct export__pp_frame {
	uint32_t kind, pid;
	uint64_t id; /* name id, address, or tid */
	char *name; /* owned: a thread's latest name from its THREAD records; NULL none seen */
};

struct export__pp_node {
	uint32_t parent, frame;
	int64_t objs, bytes;
};

struct export__pp {
	struct trcfile_reader *r;
	struct export__pp_frame *frames;
	size_t n_frames, cap_frames;
	struct u64index frame_ix; /* (kind, pid, id) -> frames */
	struct export__pp_node *nodes; /* nodes[0] is the root */
	size_t n_nodes, cap_nodes;
	struct u64index node_ix; /* (parent, frame) -> nodes */
	struct export_stack *open; /* per stream: its open spans and functions, tag: the node
				     * each opened */
	struct export_namer names;
	struct allocmap *live;
	bool alloc_mode, approximate;
	double sample_bytes; /* sampled stacks (alloc_weight.h), 0 none */
	struct u64map stack_nodes; /* cur node << 32 | stack id -> node */
	uint64_t live_bytes, peak_bytes, peak_ord;
	int err;
};

/* Frames and nodes are interned through u64index under its seed: a frame's id is an
 * address or a name id the trace chose, and keys crafted to collide in a fixed hash made the
 * probes quadratic (u64map.h: a random seed, and a bound on every run). */
static uint64_t export__pp_frame_hash(const struct export__pp_frame *f, uint64_t seed)
{
	return u64map_mix(f->id ^ u64map_mix((uint64_t)f->kind << 32 | f->pid, seed), seed);
}

static uint64_t export__pp_frame_entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	return export__pp_frame_hash(&((const struct export__pp *)ctx)->frames[i], seed);
}

static uint64_t export__pp_node_hash(uint32_t parent, uint32_t frame, uint64_t seed)
{
	return u64map_mix((uint64_t)parent << 32 | frame, seed);
}

static uint64_t export__pp_node_entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct export__pp_node *n = &((const struct export__pp *)ctx)->nodes[i];
	return export__pp_node_hash(n->parent, n->frame, seed);
}

/* The frame's index (interned); UINT32_MAX on out of memory. */
static uint32_t export__pp_frame(struct export__pp *p, uint32_t kind, uint32_t pid, uint64_t id)
{
	struct export__pp_frame f = {
		.kind = kind, .pid = kind == EXPORT__PP_SPAN ? 0 : pid, .id = id, .name = NULL};
	uint64_t h = export__pp_frame_hash(&f, u64index_seed(&p->frame_ix));
	uint32_t e;
	for (size_t pos = u64index_start(&p->frame_ix, h);
	     (e = u64index_next(&p->frame_ix, &pos)) != U64INDEX_END;) {
		const struct export__pp_frame *g = &p->frames[e];
		if (g->kind == f.kind && g->pid == f.pid && g->id == f.id)
			return e;
	}
	if (p->n_frames >= EXPORT_PPROF_MAX_NODES)
		return UINT32_MAX; /* more frames than nodes could use */
	if (p->n_frames == p->cap_frames) {
		size_t cap = p->cap_frames ? p->cap_frames * 2 : 256;
		struct export__pp_frame *n = realloc(p->frames, cap * sizeof(*n));
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
static uint32_t export__pp_child(struct export__pp *p, uint32_t parent, uint32_t frame)
{
	if (frame == UINT32_MAX || p->n_nodes >= EXPORT_PPROF_MAX_NODES - 1) {
		p->approximate = true;
		return parent;
	}
	uint64_t h = export__pp_node_hash(parent, frame, u64index_seed(&p->node_ix));
	uint32_t v;
	for (size_t pos = u64index_start(&p->node_ix, h);
	     (v = u64index_next(&p->node_ix, &pos)) != U64INDEX_END;)
		if (p->nodes[v].parent == parent && p->nodes[v].frame == frame)
			return v;
	if (p->n_nodes == p->cap_nodes) {
		size_t cap = p->cap_nodes * 2;
		struct export__pp_node *n = realloc(p->nodes, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return parent;
		}
		p->nodes = n;
		p->cap_nodes = cap;
	}
	v = (uint32_t)p->n_nodes;
	p->nodes[v] = (struct export__pp_node){.parent = parent, .frame = frame};
	if (u64index_add(&p->node_ix, v, h)) {
		p->err = -ENOMEM;
		return parent;
	}
	p->n_nodes++;
	return v;
}

/* The node of an allocation of stack id made at node cur of stream open (under base, its
 * thread's frame): cur when the trace does not define the stack. */
static uint32_t export__pp_stack_node(struct export__pp *p, const struct export_stack *open,
				      uint32_t base, uint32_t cur, uint32_t pid, uint32_t id)
{
	uint64_t key = (uint64_t)cur << 32 | id;
	const uint64_t *hit = u64map_get(&p->stack_nodes, key);
	if (hit)
		return (uint32_t)*hit;
	uint32_t n = 0;
	const uint64_t *fr = trcfile_reader_stack(p->r, id, &n, NULL);
	if (!fr || !n)
		return cur;
	uint32_t at = base;
	for (size_t i = 0; i < open->n && at != UINT32_MAX; i++) {
		uint32_t fi = p->nodes[open->v[i].tag].frame;
		if (p->frames[fi].kind == EXPORT__PP_SPAN)
			at = export__pp_child(p, at, fi);
	}
	for (uint32_t k = n; k-- > 0 && at != UINT32_MAX;)
		at = export__pp_child(p, at,
				      export__pp_frame(p, EXPORT__PP_FUNC, pid, fr[k] ? fr[k] - 1 : 0));
	if (at == UINT32_MAX) {
		p->approximate = true;
		return cur;
	}
	if (u64map_put(&p->stack_nodes, key, at, NULL, NULL) == -ENOMEM)
		p->err = -ENOMEM;
	return at;
}

/* What the allocation of size bytes adds to its node (alloc_weight.h). */
static inline int64_t export__pp_wbytes(const struct export__pp *p, uint64_t size)
{
	return (int64_t)alloc_weight_bytes(size, p->sample_bytes);
}

static inline int64_t export__pp_wobjs(const struct export__pp *p, uint64_t size)
{
	return (int64_t)alloc_weight_count(size, p->sample_bytes);
}

static void export__pp_alloc(struct export__pp *p, uint32_t pid, uint32_t node,
			   const struct trc_record *rec)
{
	uint64_t old = 0;
	if (rec->type == TRC_REC_ALLOC) {
		/* Sampled stacks: an allocation without one is stood for by those sampled; it
		 * is live (node 0, which no sample shows) but weighs nothing. */
		if (p->sample_bytes > 0 && !rec->alloc.stack_id)
			node = 0;
		if (p->alloc_mode && node) {
			p->nodes[node].objs += export__pp_wobjs(p, rec->alloc.size);
			p->nodes[node].bytes += export__pp_wbytes(p, rec->alloc.size);
		}
		uint64_t size = rec->alloc.size;
		if (size >> EXPORT__PP_SIZE_BITS ||
		    allocmap_put(p->live, pid, rec->alloc.addr,
				 size | (uint64_t)node << EXPORT__PP_SIZE_BITS, &old)) {
			p->approximate = true;
			return;
		}
		p->live_bytes += size;
		if (!p->alloc_mode && node) {
			p->nodes[node].objs += export__pp_wobjs(p, size);
			p->nodes[node].bytes += export__pp_wbytes(p, size);
		}
	} else if (!allocmap_take(p->live, pid, rec->alloc.addr, &old)) {
		return;
	}
	/* old: what this record frees (a free, or an allocation replaced at a live address). */
	if (old) {
		uint64_t size = old & ((1ull << EXPORT__PP_SIZE_BITS) - 1);
		uint32_t n = (uint32_t)(old >> EXPORT__PP_SIZE_BITS);
		p->live_bytes -= size;
		if (!p->alloc_mode && n) {
			p->nodes[n].objs -= export__pp_wobjs(p, size);
			p->nodes[n].bytes -= export__pp_wbytes(p, size);
		}
	}
}

/* A THREAD record: its thread's frame takes the name (a thread names itself in its own
 * stream, which the reader's tables, read from the metadata stream, do not hold). */
static void export__pp_thread_name(struct export__pp *p, const struct trc_record *rec)
{
	uint32_t f = export__pp_frame(p, EXPORT__PP_THREAD, rec->thread.pid, rec->thread.tid);
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
static int export__pp_pass(struct export__pp *p, uint64_t stop, uint64_t t_stop)
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
				  ? export__pp_child(
					    p, 0,
					    export__pp_frame(p, EXPORT__PP_THREAD, si->pid, si->tid))
				  : 0;
		p->open[s].n = 0;
	}
	struct trc_record rec;
	unsigned sidx;
	int err;
	uint64_t ord = 0;
	while (!p->err && (err = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		if (rec.ts_ns > t_stop)
			break;
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, sidx);
		struct export_stack *open = &p->open[sidx];
		const struct export_frame *top = export_stack_top(open);
		uint32_t cur = top ? (uint32_t)top->tag : base[sidx];
		struct export_frame f = {.type = rec.type, .ts_ns = rec.ts_ns};
		switch (rec.type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_FUNC_ENTER:
			if (rec.type == TRC_REC_SPAN_BEGIN)
				f.tag = export__pp_child(
					p, cur,
					export__pp_frame(p, EXPORT__PP_SPAN, 0, rec.span.name_id));
			else
				f.tag = export__pp_child(
					p, cur,
					export__pp_frame(p, EXPORT__PP_FUNC, si->pid, rec.func.addr));
			if (export_stack_push(open, &f, 0))
				p->err = -ENOMEM;
			break;
		case TRC_REC_SPAN_END:
		case TRC_REC_FUNC_EXIT:
			(void)export_stack_pop(open); /* unmatched: the thread's frame stays */
			break;
		case TRC_REC_THREAD:
			export__pp_thread_name(p, &rec);
			break;
		case TRC_REC_ALLOC:
		case TRC_REC_FREE:
			if (rec.type == TRC_REC_ALLOC && rec.alloc.stack_id)
				cur = export__pp_stack_node(p, open, base[sidx], cur, si->pid,
							    rec.alloc.stack_id);
			export__pp_alloc(p, si->pid, cur, &rec);
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

static size_t export__pp_plain_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				   uint64_t addr, char *buf, size_t len)
{
	(void)ctx;
	return export_func_name_plain(r, pid, addr, buf, len);
}

/* The name of frame f into buf; its length. */
static size_t export__pp_frame_name(const struct export__pp *p, const struct export__pp_frame *f,
				  char *buf, size_t len)
{
	if (f->kind == EXPORT__PP_FUNC)
		return p->names.name(p->names.ctx, p->r, f->pid, f->id, buf, len);
	if (f->kind == EXPORT__PP_SPAN) {
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
static const struct trcfile_module *export__pp_main_module(const struct trcfile_reader *r)
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
static void export__pp_profile(struct export__pp *p, struct pb_buf *b, const char *mode)
{
	const struct trcfile_header *h = trcfile_reader_header(p->r);
	const struct trcfile_module *exe = export__pp_main_module(p->r);
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
		const struct export__pp_node *nd = &p->nodes[n];
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
		size_t k = export__pp_frame_name(p, &p->frames[f], name, sizeof(name));
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

static void export__pp_free(struct export__pp *p, unsigned ns)
{
	if (!p)
		return;
	for (size_t f = 0; f < p->n_frames; f++)
		free(p->frames[f].name);
	free(p->frames);
	u64index_destroy(&p->frame_ix);
	free(p->nodes);
	u64index_destroy(&p->node_ix);
	u64map_destroy(&p->stack_nodes);
	export_stacks_free(p->open, ns);
	allocmap_free(p->live);
	free(p);
}

/* The comment the profile carries: the mode as the caller gave it. */
static void export__pp_mode(const struct export_pprof_opts *o, char *buf, size_t len)
{
	char at[32];
	const char *text = o->at_text;
	if (o->mode == EXPORT_PPROF_ALLOC) {
		snprintf(buf, len, "--alloc");
		return;
	}
	if (!text && o->mode == EXPORT_PPROF_LIVE_PEAK)
		text = "peak";
	else if (!text && o->mode == EXPORT_PPROF_LIVE_END)
		text = "end";
	else if (!text) {
		snprintf(at, sizeof(at), "%" PRIu64 "ns", o->at_ns);
		text = at;
	}
	snprintf(buf, len, "--live-at %s%s", text,
		 o->mode == EXPORT_PPROF_LIVE_END
			 ? ": every process of the tree, each at its exit or at the end (the "
			   "summary: live_by_process)"
			 : "");
}

int export_pprof(struct trcfile_reader *r, const struct export_pprof_opts *o,
		 const struct export_sink *sink, struct export_pprof_result *res)
{
	if (o->mode < EXPORT_PPROF_ALLOC || o->mode > EXPORT_PPROF_LIVE_AT) {
		if (o->err && o->err_len)
			snprintf(o->err, o->err_len, "no such pprof mode %d", (int)o->mode);
		return -EINVAL;
	}
	int err = 0;
	unsigned ns = trcfile_reader_stream_count(r);
	struct pb_buf b = {0};
	uint8_t *gz = NULL;
	size_t gz_len = 0;
	struct export__pp *p = calloc(1, sizeof(*p));
	if (!p)
		goto oom;
	p->r = r;
	p->alloc_mode = o->mode == EXPORT_PPROF_ALLOC;
	p->names = o->names;
	if (!p->names.name)
		p->names = (struct export_namer){.name = export__pp_plain_name};
	u64index_init(&p->frame_ix, export__pp_frame_entry_hash, p);
	u64index_init(&p->node_ix, export__pp_node_entry_hash, p);
	u64map_init(&p->stack_nodes, SIZE_MAX);
	p->sample_bytes = alloc_weight_sample_bytes(r);
	p->open = export_stacks_new(ns);
	p->cap_nodes = 1024;
	p->nodes = calloc(p->cap_nodes, sizeof(*p->nodes));
	p->n_nodes = 1;
	p->live = allocmap_new(EXPORT_PPROF_LIVE_MAX);
	if (!p->open || !p->nodes || !p->live)
		goto oom;
	uint64_t start = export_start_ns(r);
	uint64_t stop = UINT64_MAX, t_stop = UINT64_MAX;
	if (o->mode == EXPORT_PPROF_LIVE_PEAK) {
		err = export__pp_pass(p, UINT64_MAX, UINT64_MAX);
		if (err)
			goto fail;
		stop = p->peak_ord;
		/* Second pass from scratch: the same nodes, values and live table cleared. */
		for (size_t n = 0; n < p->n_nodes; n++)
			p->nodes[n].objs = p->nodes[n].bytes = 0;
		allocmap_free(p->live);
		p->live = allocmap_new(EXPORT_PPROF_LIVE_MAX);
		if (!p->live)
			goto oom;
		p->live_bytes = 0;
		if (!p->peak_bytes)
			stop = 0; /* nothing allocated: an empty profile */
	} else if (o->mode == EXPORT_PPROF_LIVE_AT) {
		t_stop = o->at_ns > UINT64_MAX - start ? UINT64_MAX : start + o->at_ns;
	}
	err = export__pp_pass(p, stop, t_stop);
	if (err)
		goto fail;
	char mode[160];
	export__pp_mode(o, mode, sizeof(mode));
	export__pp_profile(p, &b, mode);
	if (b.err)
		goto oom;
	err = gz_deflate(b.p, b.len, &gz, &gz_len);
	if (err)
		goto fail;
	err = sink->write(sink->ctx, gz, gz_len);
	if (err) {
		if (o->err && o->err_len)
			snprintf(o->err, o->err_len, "%s", strerror(-err));
		goto out;
	}
	if (res)
		res->approximate = p->approximate;
	goto out;
oom:
	err = -ENOMEM;
fail:
	if (o->err && o->err_len)
		snprintf(o->err, o->err_len, "%s",
			 trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r) : strerror(-err));
out:
	export__pp_free(p, ns);
	free(gz);
	pb_buf_free(&b);
	return err;
}
