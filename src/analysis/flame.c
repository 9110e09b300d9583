/* flame.c - folded stacks from function and span records (contract in flame.h).
 *
 * A trie of frames: node 0 is the root (no frame); a node is (parent, kind, pid, key) with
 * kind span (key = name id) or function (key = address, pid = its process: the same address
 * is another function in another process), found through a u64index on that
 * tuple. Each thread stream points at its innermost open node. Weights accumulate on nodes
 * (self weight); folding walks each weighted node up to the root to write its stack, then
 * sorts the lines so that stacks that read the same (one function in two processes) merge.
 * With flame_root_processes, each thread's stack starts at its process's node (kind process,
 * key 0, pid the process), so no two processes' frames share a node or a line.
 *
 * Threads: one thread per flame.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_weight.h"
#include "flame.h"
#include "u64map.h"

enum { FLAME__ROOT, FLAME__SPAN, FLAME__FUNC, FLAME__OUTSIDE, FLAME__CALL, FLAME__PROCESS };

struct flame__node {
	uint32_t parent;
	uint32_t kind;
	uint32_t pid;
	uint64_t key;
	uint64_t weight;
};

struct flame__stream {
	uint32_t cur;
	uint32_t root; /* the stream's process node (flame_root_processes), else 0: nothing open */
	uint32_t folded; /* frames open past FLAME_MAX_NODES (not in the trie) */
	uint64_t last_ts;
	bool seen;
};

struct flame {
	enum flame_weight weight;
	bool process_roots;
	struct flame__node *nodes;
	uint32_t n_nodes, cap_nodes;
	struct u64index index; /* (parent, kind, pid, key) -> node */
	struct flame__stream *streams;
	unsigned n_streams;
	struct flame_stats stats;
	/* Allocation call stacks (flame_use_stacks): the reader that defines them, and the node
	 * an allocation of stack id s made under node n goes to, n << 32 | s -> node. */
	const struct trcfile_reader *stacks;
	struct u64map alloc_nodes;
	double sample_bytes; /* sampled stacks: allocations weigh alloc_weight.h's */
};

/* Seeded under the index's seed: keys come from the file, which must not choose collisions
 * (u64index keeps probes bounded should it try). */
static uint64_t flame__hash(uint32_t parent, uint32_t kind, uint32_t pid, uint64_t key,
			    uint64_t seed)
{
	return u64map_mix(
		key ^ u64map_mix((uint64_t)parent << 32 | (uint64_t)pid << 2 | kind, seed), seed);
}

static uint64_t flame__node_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct flame__node *n = &((const struct flame *)ctx)->nodes[i];
	return flame__hash(n->parent, n->kind, n->pid, n->key, seed);
}

/* The child of parent for (kind, pid, key), made when missing; UINT32_MAX when the trie is
 * full, -ENOMEM (as UINT32_MAX - 1) when out of memory. */
#define FLAME__FULL UINT32_MAX
#define FLAME__NOMEM (UINT32_MAX - 1)
static uint32_t flame__child(struct flame *f, uint32_t parent, uint32_t kind, uint32_t pid,
			     uint64_t key)
{
	uint64_t h = flame__hash(parent, kind, pid, key, u64index_seed(&f->index));
	uint32_t e;
	for (size_t pos = u64index_start(&f->index, h);
	     (e = u64index_next(&f->index, &pos)) != U64INDEX_END;) {
		const struct flame__node *n = &f->nodes[e];
		if (n->parent == parent && n->kind == kind && n->pid == pid && n->key == key)
			return e;
	}
	if (f->n_nodes >= FLAME_MAX_NODES)
		return FLAME__FULL;
	if (f->n_nodes == f->cap_nodes) {
		uint32_t nc = 2 * f->cap_nodes;
		struct flame__node *p = realloc(f->nodes, (size_t)nc * sizeof(*p));
		if (!p)
			return FLAME__NOMEM;
		f->nodes = p;
		f->cap_nodes = nc;
	}
	uint32_t i = f->n_nodes;
	f->nodes[i] = (struct flame__node){.parent = parent, .kind = kind, .pid = pid, .key = key};
	if (u64index_add(&f->index, i, h) != 0)
		return FLAME__NOMEM;
	f->n_nodes++;
	return i;
}

struct flame *flame_new(enum flame_weight weight)
{
	struct flame *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->weight = weight;
	f->cap_nodes = 1024;
	f->nodes = calloc(f->cap_nodes, sizeof(*f->nodes));
	f->n_nodes = 1; /* the root */
	u64index_init(&f->index, flame__node_hash, f);
	u64map_init(&f->alloc_nodes, FLAME_MAX_NODES);
	if (!f->nodes) {
		flame_free(f);
		return NULL;
	}
	return f;
}

void flame_free(struct flame *f)
{
	if (!f)
		return;
	free(f->nodes);
	u64index_destroy(&f->index);
	u64map_destroy(&f->alloc_nodes);
	free(f->streams);
	free(f);
}

static struct flame__stream *flame__stream(struct flame *f, unsigned sidx)
{
	if (sidx >= f->n_streams) {
		unsigned nc = sidx + 16;
		struct flame__stream *p = realloc(f->streams, (size_t)nc * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + f->n_streams, 0, (size_t)(nc - f->n_streams) * sizeof(*p));
		f->streams = p;
		f->n_streams = nc;
	}
	return &f->streams[sidx];
}

static int flame__push(struct flame *f, struct flame__stream *st, uint32_t kind, uint32_t pid,
		       uint64_t key)
{
	if (st->folded) {
		st->folded++;
		f->stats.folded_frames++;
		return 0;
	}
	uint32_t c = flame__child(f, st->cur, kind, pid, key);
	if (c == FLAME__NOMEM)
		return -ENOMEM;
	if (c == FLAME__FULL) {
		st->folded = 1;
		f->stats.folded_frames++;
		return 0;
	}
	st->cur = c;
	return 0;
}

static void flame__pop(struct flame *f, struct flame__stream *st, uint32_t kind, uint32_t pid,
		       uint64_t key)
{
	if (st->folded) {
		st->folded--;
		return;
	}
	for (uint32_t i = st->cur; i != 0; i = f->nodes[i].parent) {
		const struct flame__node *n = &f->nodes[i];
		if (n->kind == kind && n->pid == pid && n->key == key) {
			st->cur = n->parent;
			return;
		}
	}
	f->stats.unmatched_ends++;
}

void flame_root_processes(struct flame *f)
{
	f->process_roots = true;
}

void flame_use_stacks(struct flame *f, const struct trcfile_reader *r)
{
	f->stacks = r;
	f->sample_bytes = r ? alloc_weight_sample_bytes(r) : 0;
}

/* The node of an allocation of call stack id made while the thread was at node cur: the spans
 * open at cur (outermost first: they are not in the call stack), then the stack's frames,
 * outermost first (functions of -finstrument-functions are in the call stack already). cur
 * itself when the trace does not define the stack, or the trie is full. */
static uint32_t flame__alloc_stack_node(struct flame *f, uint32_t root, uint32_t cur, uint32_t pid,
					uint32_t id, int *err)
{
	uint64_t key = (uint64_t)cur << 32 | id;
	const uint64_t *hit = u64map_get(&f->alloc_nodes, key);
	if (hit)
		return (uint32_t)*hit;
	uint32_t n = 0;
	const uint64_t *fr = trcfile_reader_stack(f->stacks, id, &n, NULL);
	if (!fr || n == 0)
		return cur;
	uint32_t spans[256], n_spans = 0;
	for (uint32_t i = cur; i != 0 && n_spans < 256; i = f->nodes[i].parent)
		if (f->nodes[i].kind == FLAME__SPAN)
			spans[n_spans++] = i;
	uint32_t at = root;
	for (uint32_t k = n_spans; k-- > 0;) {
		at = flame__child(f, at, FLAME__SPAN, 0, f->nodes[spans[k]].key);
		if (at >= FLAME__NOMEM)
			goto full;
	}
	for (uint32_t k = n; k-- > 0;) {
		/* A return address: the call is the instruction before it. */
		at = flame__child(f, at, FLAME__CALL, pid, fr[k] ? fr[k] - 1 : 0);
		if (at >= FLAME__NOMEM)
			goto full;
	}
	if (u64map_put(&f->alloc_nodes, key, at, NULL, NULL) == -ENOMEM) {
		*err = -ENOMEM;
		return cur;
	}
	return at;
full:
	if (at == FLAME__NOMEM)
		*err = -ENOMEM;
	else
		f->stats.folded_frames++;
	return cur;
}

uint32_t flame_alloc_node(struct flame *f, unsigned sidx, const struct trcfile_stream_info *si,
			  const struct trc_record *rec, int *err)
{
	*err = 0;
	uint32_t cur = flame_stream_node(f, sidx);
	if (sidx < f->n_streams && f->streams[sidx].folded)
		return cur;
	uint32_t root = sidx < f->n_streams ? f->streams[sidx].root : 0;
	if (f->stacks && rec->type == TRC_REC_ALLOC && rec->alloc.stack_id)
		return flame__alloc_stack_node(f, root, cur, si->pid, rec->alloc.stack_id, err);
	return cur;
}

int flame_add(struct flame *f, unsigned sidx, const struct trcfile_stream_info *si,
	      const struct trc_record *rec)
{
	if (si->kind != TRC_STREAM_THREAD)
		return 0;
	struct flame__stream *st = flame__stream(f, sidx);
	if (!st)
		return -ENOMEM;
	if (f->process_roots && !st->root) {
		uint32_t p = flame__child(f, 0, FLAME__PROCESS, si->pid, 0);
		if (p == FLAME__NOMEM)
			return -ENOMEM;
		if (p != FLAME__FULL && st->cur == 0)
			st->cur = st->root = p;
	}
	if (f->weight == FLAME_TIME) {
		if (st->seen && st->cur != st->root && rec->ts_ns > st->last_ts) {
			f->nodes[st->cur].weight += rec->ts_ns - st->last_ts;
			f->stats.total_weight += rec->ts_ns - st->last_ts;
		}
		st->seen = true;
		st->last_ts = rec->ts_ns;
	}
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		return flame__push(f, st, FLAME__SPAN, 0, rec->span.name_id);
	case TRC_REC_SPAN_END:
		flame__pop(f, st, FLAME__SPAN, 0, rec->span.name_id);
		return 0;
	case TRC_REC_FUNC_ENTER:
		return flame__push(f, st, FLAME__FUNC, si->pid, rec->func.addr);
	case TRC_REC_FUNC_EXIT:
		flame__pop(f, st, FLAME__FUNC, si->pid, rec->func.addr);
		return 0;
	case TRC_REC_ALLOC: {
		if (f->weight != FLAME_ALLOC)
			return 0;
		int err = 0;
		uint32_t at = flame_alloc_node(f, sidx, si, rec, &err);
		if (err)
			return err;
		if (at == st->root) {
			at = flame__child(f, st->root, FLAME__OUTSIDE, 0, 0);
			if (at == FLAME__NOMEM)
				return -ENOMEM;
			if (at == FLAME__FULL)
				return 0; /* cannot happen: made on the first allocation */
		}
		/* Sampled stacks: one without a stack is stood for by those sampled. */
		if (f->sample_bytes > 0 && !rec->alloc.stack_id)
			return 0;
		uint64_t w = alloc_weight_bytes(rec->alloc.size, f->sample_bytes);
		f->nodes[at].weight += w;
		f->stats.total_weight += w;
		return 0;
	}
	default:
		return 0;
	}
}

void flame_get_stats(const struct flame *f, struct flame_stats *out)
{
	*out = f->stats;
}

uint32_t flame_stream_node(const struct flame *f, unsigned sidx)
{
	return sidx < f->n_streams ? f->streams[sidx].cur : 0;
}

static size_t flame__frame_name(const struct flame__node *n, const struct trcfile_reader *r,
				struct sym_resolver *syms, char *buf, size_t cap);

/* Whether a function of that name only allocates for its caller: C++'s operator new and the
 * standard allocator, and the checked wrappers programs put around malloc (gnulib's xmalloc
 * family, GLib's g_malloc). */
static bool flame__allocator(const char *name, size_t len)
{
	static const char *const prefixes[] = {
		"operator new", "std::allocator", "std::__new_allocator", "__gnu_cxx::new_allocator",
		"std::allocator_traits", "g_malloc", "g_realloc", "g_try_malloc", "g_slice_alloc",
	};
	static const char *const exact[] = {
		"xmalloc",   "xcalloc",	   "xrealloc",	 "xzalloc",    "xnmalloc",   "xinmalloc",
		"ximalloc",  "xcharalloc", "x2nrealloc", "x2realloc",  "xmemdup",    "xstrdup",
		"xireallocarray", "xreallocarray", "xpalloc", "xnrealloc", "ximemdup", "xizalloc",
	};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t k = strlen(prefixes[i]);
		if (len >= k && memcmp(name, prefixes[i], k) == 0)
			return true;
	}
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strlen(exact[i]) == len && memcmp(name, exact[i], len) == 0)
			return true;
	return false;
}

size_t flame_node_name(const struct flame *f, uint32_t node, bool stack,
		       const struct trcfile_reader *r, struct sym_resolver *syms, char *buf,
		       size_t cap)
{
	if (!cap)
		return 0;
	if (node == 0 || node >= f->n_nodes) {
		snprintf(buf, cap, "%s", FLAME_OUTSIDE);
		return strlen(buf);
	}
	if (!stack) {
		/* A call stack's innermost frame outside the allocator: an allocation made
		 * through operator new or xmalloc is the caller's. */
		size_t len = flame__frame_name(&f->nodes[node], r, syms, buf, cap);
		for (uint32_t j = node; f->nodes[j].kind == FLAME__CALL && flame__allocator(buf, len);) {
			j = f->nodes[j].parent;
			if (j == 0 || f->nodes[j].kind != FLAME__CALL)
				break;
			len = flame__frame_name(&f->nodes[j], r, syms, buf, cap);
		}
		return len;
	}
	/* Outermost first: the depth, then each frame written at its place from the end. */
	uint32_t path[256];
	size_t depth = 0;
	for (uint32_t j = node; j != 0 && depth < sizeof(path) / sizeof(path[0]);
	     j = f->nodes[j].parent)
		path[depth++] = j;
	size_t pos = 0;
	for (size_t d = depth; d-- > 0 && pos + 1 < cap;) {
		size_t k = flame__frame_name(&f->nodes[path[d]], r, syms, buf + pos, cap - pos);
		pos += k;
		if (d && pos + 1 < cap)
			buf[pos++] = ';';
	}
	buf[pos] = 0;
	return pos;
}

/* ---- folding ----------------------------------------------------------------------------- */

struct flame__line {
	char *text;
	size_t len;
	uint64_t weight;
};

static int flame__line_cmp(const void *a, const void *b)
{
	const struct flame__line *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->text, y->text, n);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* A process's frame: its program's file name (argv[0] without the directories, as ps shows a
 * command) and its pid, "prog (pid 42)"; "pid 42" when the trace does not say what it ran.
 * Returns the length written to buf. */
static size_t flame__process_name(const struct trcfile_reader *r, uint32_t pid, char *buf,
				  size_t cap)
{
	uint32_t len = 0;
	const char *cmd = trcfile_reader_process_cmdline(r, pid, &len);
	const struct trcfile_header *h = trcfile_reader_header(r);
	if (!cmd && h && pid == h->pid) {
		cmd = h->cmdline;
		len = h->cmdline_len;
	}
	size_t arg0 = cmd ? strnlen(cmd, len) : 0;
	const char *base = cmd;
	for (size_t i = 0; i < arg0; i++)
		if (cmd[i] == '/' && i + 1 < arg0)
			base = cmd + i + 1;
	size_t blen = arg0 - (size_t)(base - cmd);
	int k = blen ? snprintf(buf, cap, "%.*s (pid %" PRIu32 ")", (int)blen, base, pid)
		     : snprintf(buf, cap, "pid %" PRIu32, pid);
	return k < 0 ? 0 : (size_t)k < cap ? (size_t)k : cap - 1;
}

/* The frame's name into buf (cleaned for the folded format); returns its length. */
static size_t flame__frame_name(const struct flame__node *n, const struct trcfile_reader *r,
				struct sym_resolver *syms, char *buf, size_t cap)
{
	int k = 0;
	if (n->kind == FLAME__OUTSIDE) {
		k = snprintf(buf, cap, "%s", FLAME_OUTSIDE);
	} else if (n->kind == FLAME__PROCESS) {
		k = (int)flame__process_name(r, n->pid, buf, cap);
	} else if (n->kind == FLAME__SPAN) {
		uint32_t len = 0;
		const char *s = trcfile_reader_name(r, (uint32_t)n->key, &len);
		if (s)
			k = snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), s);
		else
			k = snprintf(buf, cap, "#%" PRIu64, n->key);
	} else if (syms) {
		sym_display(syms, n->pid, n->key, buf, cap);
		k = (int)strlen(buf);
	} else {
		const struct trcfile_module *m = trcfile_reader_module(r, n->pid, n->key);
		if (m) {
			const char *base = strrchr(m->path, '/');
			k = snprintf(buf, cap, "%s+0x%" PRIx64, base ? base + 1 : m->path,
				     n->key - m->start + m->offset);
		} else {
			k = snprintf(buf, cap, "0x%" PRIx64, n->key);
		}
	}
	size_t len = k < 0 ? 0 : (size_t)k < cap ? (size_t)k : cap - 1;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == ';')
			buf[i] = ':';
		else if (buf[i] == '\n' || buf[i] == '\r')
			buf[i] = ' ';
	}
	return len;
}

int flame_fold(struct flame *f, const struct trcfile_reader *r, struct sym_resolver *syms,
	       flame_emit_fn emit, void *ctx)
{
	int err = -ENOMEM;
	size_t n_lines = 0;
	struct flame__line *lines = NULL;
	/* Each node's name, made once: offsets into one buffer. */
	size_t *name_off = calloc(f->n_nodes, sizeof(*name_off));
	uint32_t *name_len = calloc(f->n_nodes, sizeof(*name_len));
	char *names = NULL;
	size_t names_len = 0, names_cap = 0;
	uint32_t *path = NULL;
	size_t path_cap = 0;
	if (!name_off || !name_len)
		goto out;
	for (uint32_t i = 1; i < f->n_nodes; i++) {
		char buf[1024];
		size_t len = flame__frame_name(&f->nodes[i], r, syms, buf, sizeof(buf));
		if (names_len + len > names_cap) {
			size_t nc = names_cap ? 2 * names_cap : 4096;
			while (nc < names_len + len)
				nc *= 2;
			char *p = realloc(names, nc);
			if (!p)
				goto out;
			names = p;
			names_cap = nc;
		}
		memcpy(names + names_len, buf, len);
		name_off[i] = names_len;
		name_len[i] = (uint32_t)len;
		names_len += len;
	}
	size_t n_weighted = 0;
	for (uint32_t i = 1; i < f->n_nodes; i++)
		n_weighted += f->nodes[i].weight != 0;
	lines = calloc(n_weighted ? n_weighted : 1, sizeof(*lines));
	if (!lines)
		goto out;
	for (uint32_t i = 1; i < f->n_nodes; i++) {
		if (!f->nodes[i].weight)
			continue;
		size_t depth = 0, len = 0;
		for (uint32_t j = i; j != 0; j = f->nodes[j].parent) {
			if (depth == path_cap) {
				size_t nc = path_cap ? 2 * path_cap : 64;
				uint32_t *p = realloc(path, nc * sizeof(*p));
				if (!p)
					goto out;
				path = p;
				path_cap = nc;
			}
			path[depth++] = j;
			len += name_len[j] + 1;
		}
		char *t = malloc(len);
		if (!t)
			goto out;
		size_t pos = 0;
		for (size_t d = depth; d-- > 0;) {
			memcpy(t + pos, names + name_off[path[d]], name_len[path[d]]);
			pos += name_len[path[d]];
			if (d)
				t[pos++] = ';';
		}
		lines[n_lines++] = (struct flame__line){t, pos, f->nodes[i].weight};
	}
	qsort(lines, n_lines, sizeof(*lines), flame__line_cmp);
	for (size_t i = 0; i < n_lines;) {
		uint64_t w = lines[i].weight;
		size_t j = i + 1;
		for (; j < n_lines && flame__line_cmp(&lines[i], &lines[j]) == 0; j++)
			w += lines[j].weight;
		emit(ctx, lines[i].text, lines[i].len, w);
		i = j;
	}
	err = 0;
out:
	for (size_t i = 0; i < n_lines; i++)
		free(lines[i].text);
	free(lines);
	free(path);
	free(names);
	free(name_len);
	free(name_off);
	return err;
}
