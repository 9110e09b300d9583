/* report_data.c - the report's bounded aggregates (contract in report_data.h).
 *
 * One pass per stream: RSS streams fill the per-process columns through a cursor; a thread
 * stream's chunks are decoded here with the codec's inline decoder (trcfile_scan.h, as the
 * summary's pass does), each record going to the trie of open frames (report_trie.h: weighted
 * by time, the bytes each node allocated counted beside it and folded by the node's stack at
 * the end, which is what FLAME_ALLOC would fold), the per-thread activity columns and the
 * duration stacks (one stack of open spans and one of open calls per stream, REPORT__DEPTH
 * deep; deeper frames are counted and their durations dropped). Durations are counted per
 * span name id and per function (pid, address) by histogram.h's group, within the budget a
 * histogram of them would take (so the same ones are left out), named and merged by name at
 * the end, as the summary's tables are.
 *
 * The pass runs on its own cursors (report_data_compute) or on the summary's chunks
 * (report_pass_*): the same per-stream code, given each stream's chunks in stream order; the
 * streams with no chunk handed over still begin and end in their place, so the threads' list
 * is the same.
 *
 * Threads: the reader's thread.
 */
#include "report_data.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "report_trie.h"
#include "trcfile_scan.h"
#include "u64map.h"

#define REPORT__DEPTH 1024u
#define REPORT__MAX_PROCS 1024u
#define REPORT__MAX_THREADS 4096u
#define REPORT__HIST_BUDGET (64u << 20)
/* Span name ids below this find their durations through an array, the rest through a map. */
#define REPORT__DENSE_IDS 4096u

struct report__open {
	uint64_t key, ts;
};

struct report__stack {
	struct report__open v[REPORT__DEPTH];
	unsigned n, deeper; /* deeper: frames open past REPORT__DEPTH */
};

/* The durations of one span name id or function: counts by histogram.h's group. A histogram
 * would allocate itself and then each group on first use, within the budget; bins stands for
 * the first (it takes as many bytes) and groups says which of the second it would hold, so
 * exactly the durations it would leave out are left out. */
struct report__acc {
	uint32_t pid; /* functions: the process of addr */
	uint64_t key; /* span name id, or function address */
	uint64_t *bins; /* HIST_GROUPS counts; NULL until the first duration counted */
	uint64_t groups; /* bit g: group g counted */
	uint64_t n;
};

_Static_assert(HIST_GROUPS <= 64, "a group's bit fits report__acc's groups");
_Static_assert(HIST_GROUPS * sizeof(uint64_t) == sizeof(struct hist),
	       "bins weigh what the histogram itself would");

#define REPORT__CACHE 256u

struct report__accs {
	struct report__acc *v;
	size_t n, cap;
	struct u64map ix;
	/* A direct-mapped cache in front of ix (index + 1, 0: empty): a few names recur. */
	uint64_t cache_key[REPORT__CACHE];
	uint32_t cache_idx[REPORT__CACHE];
	/* Spans: index + 1 of name id i's (0: none yet), in front of the cache. */
	uint32_t dense[REPORT__DENSE_IDS];
};

/* The current thread stream's state that every record touches, kept by the chunk loop in its
 * own locals (report__thread_chunk copies it in and back out), where no store through a
 * pointer can alias it: */
struct report__hot {
	struct report_trie_node *nodes; /* m->trie.nodes (moves when the trie grows) */
	uint32_t cur; /* the trie's innermost open node */
	uint32_t folded; /* frames open past the trie's bound */
	uint64_t last_ts; /* the previous record's time; UINT64_MAX before the first */
	uint64_t act_lo, act_hi; /* the activity column *col counts: [lo, hi) */
	uint64_t *col;
	uint64_t events;
	struct report__open *sv; /* the open spans, sn of them, sdeeper more past REPORT__DEPTH */
	unsigned sn, sdeeper;
};

struct report__state {
	struct trcfile_reader *r;
	struct sym_resolver *syms;
	struct report_data *d;
	struct u64map rss_ix, thr_ix;
	size_t cap_threads;
	struct report__accs spans, funcs;
	struct report_trie trie;
	uint64_t act_width_ns; /* an activity column's width */
	uint64_t budget;
	struct report__stack *sp, *fn; /* the current stream's */
	/* The current stream's thread (no_thread past REPORT__MAX_THREADS, not kept), pid, and
	 * state between its chunks. */
	struct report_thread *t, no_thread;
	uint32_t pid;
	struct report__hot hot;
};

static struct report__acc *report__acc(struct report__accs *a, uint64_t mapkey, uint32_t pid,
				       uint64_t key)
{
	unsigned slot = (unsigned)(mapkey ^ mapkey >> 32) & (REPORT__CACHE - 1);
	if (a->cache_idx[slot] && a->cache_key[slot] == mapkey) {
		struct report__acc *x = &a->v[a->cache_idx[slot] - 1];
		return x->pid == pid && x->key == key ? x : NULL;
	}
	uint64_t *v = u64map_get(&a->ix, mapkey);
	if (v) {
		struct report__acc *x = &a->v[*v];
		a->cache_key[slot] = mapkey;
		a->cache_idx[slot] = (uint32_t)*v + 1;
		/* Two functions whose keys met: the second's durations are left out. */
		return x->pid == pid && x->key == key ? x : NULL;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		struct report__acc *p = realloc(a->v, cap * sizeof(*p));
		if (!p)
			return NULL;
		a->v = p;
		a->cap = cap;
	}
	if (u64map_put(&a->ix, mapkey, a->n, NULL, NULL))
		return NULL;
	struct report__acc *x = &a->v[a->n++];
	memset(x, 0, sizeof(*x));
	x->pid = pid;
	x->key = key;
	return x;
}

/* The first duration in group g of x: what hist_count_slow would allocate, within the
 * budget. */
__attribute__((noinline)) static void report__count_slow(struct report__state *m,
							 struct report__acc *x, unsigned g)
{
	size_t need = (x->bins ? 0 : sizeof(struct hist)) + HIST_GROUP_BYTES;
	if (need > m->budget) {
		m->d->durations_dropped++;
		return;
	}
	if (!x->bins && !(x->bins = calloc(HIST_GROUPS, sizeof(uint64_t)))) {
		m->d->durations_dropped++;
		return;
	}
	m->budget -= need;
	x->groups |= 1ull << g;
	x->bins[g]++;
	x->n++;
}

static inline void report__count(struct report__state *m, struct report__acc *x, uint64_t ns)
{
	unsigned g, sub;
	hist_bucket(ns, &g, &sub);
	if (__builtin_expect(x->groups >> g & 1, 1)) {
		x->bins[g]++;
		x->n++;
		return;
	}
	report__count_slow(m, x, g);
}

static void report__duration(struct report__state *m, struct report__accs *a, uint64_t mapkey,
			     uint32_t pid, uint64_t key, uint64_t ns)
{
	struct report__acc *x = report__acc(a, mapkey, pid, key);
	if (!x) {
		m->d->durations_dropped++;
		return;
	}
	report__count(m, x, ns);
}

/* A span of name id ended after ns. */
static inline void report__span_duration(struct report__state *m, uint64_t id, uint64_t ns)
{
	struct report__accs *a = &m->spans;
	uint32_t ix;
	if (__builtin_expect(id < REPORT__DENSE_IDS && (ix = a->dense[id]) != 0, 1)) {
		report__count(m, &a->v[ix - 1], ns);
		return;
	}
	struct report__acc *x = report__acc(a, id, 0, id);
	if (!x) {
		m->d->durations_dropped++;
		return;
	}
	if (id < REPORT__DENSE_IDS)
		a->dense[id] = (uint32_t)(x - a->v) + 1;
	report__count(m, x, ns);
}

static inline void report__push(struct report__stack *s, uint64_t key, uint64_t ts)
{
	if (__builtin_expect(s->n == REPORT__DEPTH, 0)) {
		s->deeper++;
		return;
	}
	s->v[s->n++] = (struct report__open){key, ts};
}

/* The activity column of ts, when it is not the current one. */
__attribute__((noinline)) static void report__act_move(struct report__state *m,
						       struct report__hot *h, uint64_t ts)
{
	uint64_t t0 = m->d->t0_ns, w = m->act_width_ns;
	uint64_t off = ts > t0 ? ts - t0 : 0;
	uint64_t c = off / w;
	unsigned col = c < REPORT_ACT_COLS ? (unsigned)c : REPORT_ACT_COLS - 1;
	h->act_lo = ts > t0 ? t0 + col * w : 0;
	h->act_hi = col + 1 < REPORT_ACT_COLS ? t0 + (col + 1) * w : UINT64_MAX;
	if (ts <= t0)
		h->act_hi = t0 + 1;
	h->col = &m->t->cols[col];
}

/* A frame opens on the current stream. 0 or -ENOMEM. */
static inline int report__open_frame(struct report__state *m, struct report__hot *h, uint32_t kind,
				     uint32_t pid, uint64_t key)
{
	if (h->folded) {
		h->folded++;
		return 0;
	}
	uint32_t c = report_trie_child(&m->trie, h->cur, kind, pid, key);
	h->nodes = m->trie.nodes;
	if (__builtin_expect(c >= REPORT_TRIE_NOMEM, 0)) {
		if (c == REPORT_TRIE_NOMEM)
			return -ENOMEM;
		h->folded = 1;
		return 0;
	}
	h->cur = c;
	return 0;
}

static inline void report__close_frame(struct report__state *m, struct report__hot *h,
				       uint32_t kind, uint32_t pid, uint64_t key)
{
	if (h->folded)
		h->folded--;
	else
		h->cur = report_trie_close(&m->trie, h->cur, kind, pid, key);
}

/* One record of the current thread stream (type, time, and for the event types a: the name
 * id or address, b: an allocation's size). 0 or -ENOMEM. */
static inline __attribute__((always_inline)) int report__thread_rec(struct report__state *m,
								    struct report__hot *h,
								    uint32_t type, uint64_t ts,
								    uint64_t a, uint64_t b)
{
	/* The time since the stream's previous record, to the node open since (flame.h). */
	if (ts > h->last_ts && h->cur)
		h->nodes[h->cur].weight += ts - h->last_ts;
	h->last_ts = ts;
	if (trc_rec_is_event(type)) {
		/* A stream's records come in time order: the column changes rarely. */
		if (__builtin_expect(ts < h->act_lo || ts >= h->act_hi, 0))
			report__act_move(m, h, ts);
		(*h->col)++;
		h->events++;
	}
	struct report__stack *fn = m->fn;
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
		if (__builtin_expect(h->sn < REPORT__DEPTH, 1))
			h->sv[h->sn++] = (struct report__open){a, ts};
		else
			h->sdeeper++;
		return report__open_frame(m, h, REPORT_TRIE_SPAN, 0, a);
	case TRC_REC_SPAN_END:
		report__close_frame(m, h, REPORT_TRIE_SPAN, 0, a);
		if (h->sdeeper) {
			h->sdeeper--;
			m->d->durations_dropped++;
		} else if (h->sn) {
			const struct report__open o = h->sv[--h->sn];
			if (ts >= o.ts)
				report__span_duration(m, o.key, ts - o.ts);
		}
		return 0;
	case TRC_REC_FUNC_ENTER:
		report__push(fn, a, ts);
		return report__open_frame(m, h, REPORT_TRIE_FUNC, m->pid, a);
	case TRC_REC_FUNC_EXIT: {
		report__close_frame(m, h, REPORT_TRIE_FUNC, m->pid, a);
		if (fn->deeper) {
			fn->deeper--;
			m->d->durations_dropped++;
			return 0;
		}
		unsigned k = fn->n;
		while (k && fn->v[k - 1].key != a)
			k--;
		if (!k)
			return 0; /* no such call open: ignored, as functions.h does */
		const struct report__open *o = &fn->v[k - 1];
		if (ts >= o->ts)
			report__duration(m, &m->funcs, u64map_mix(o->key, m->pid), m->pid, o->key,
					 ts - o->ts);
		fn->n = k - 1;
		return 0;
	}
	case TRC_REC_ALLOC:
		h->nodes[h->cur].bytes += b;
		return 0;
	case TRC_REC_LOST:
		/* What was open has lost its end. */
		h->sn = h->sdeeper = 0;
		fn->n = fn->deeper = 0;
		return 0;
	default:
		return 0;
	}
}

/* A record the fast decoder declined, decoded whole: its fields as report__thread_rec takes
 * them. */
static void report__slow_fields(const struct trc_record *rec, uint64_t *a, uint64_t *b)
{
	*a = *b = 0;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		*a = rec->span.name_id;
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		*a = rec->func.addr;
		break;
	case TRC_REC_ALLOC:
		*b = rec->alloc.size;
		break;
	default:
		break;
	}
}

/* One loaded chunk of the current thread stream. 0 with the chunk used up; -EBADMSG with
 * the cursor on the damaged record; -ENOMEM. */
__attribute__((noinline)) static int
report__thread_chunk(struct report__state *m, struct report__hot *hp, struct trcfile_cursor *c)
{
	struct report__hot h = *hp;
	const uint8_t *p = c->p;
	const uint8_t *const end = c->pend;
	const uint8_t *const fast_end = trcfile__fast_end(p, end);
	struct trcfile__coder cd = c->coder;
	uint32_t left = c->left;
	int rc = 0;
	for (; left; left--) {
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(p, fast_end, &cd, &ev);
		if (trcfile__unlikely(!q)) {
			struct trc_record rec;
			const uint8_t *sp = p;
			struct trcfile__coder sc = cd;
			if (trcfile__decode_slow(&sp, end, &sc, &rec) != 0) {
				rc = -EBADMSG;
				break;
			}
			p = sp;
			cd = sc;
			uint64_t a, b;
			report__slow_fields(&rec, &a, &b);
			if ((rc = report__thread_rec(m, &h, rec.type, rec.ts_ns, a, b)))
				break;
			continue;
		}
		p = q;
		if ((rc = report__thread_rec(m, &h, ev.type, ev.ts_ns, ev.a, ev.b)))
			break;
	}
	c->p = p;
	c->coder = cd;
	c->left = left;
	*hp = h;
	return rc;
}

static struct report_thread *report__thread(struct report__state *m, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint64_t *v = u64map_get(&m->thr_ix, key);
	if (v)
		return &m->d->threads[*v];
	if (m->d->n_threads == REPORT__MAX_THREADS)
		return NULL;
	if (m->d->n_threads == m->cap_threads) {
		size_t cap = m->cap_threads ? 2 * m->cap_threads : 16;
		struct report_thread *p = realloc(m->d->threads, cap * sizeof(*p));
		if (!p)
			return NULL;
		m->d->threads = p;
		m->cap_threads = cap;
	}
	if (u64map_put(&m->thr_ix, key, m->d->n_threads, NULL, NULL))
		return NULL;
	struct report_thread *t = &m->d->threads[m->d->n_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	return t;
}

static struct report_rss *report__rss(struct report__state *m, uint32_t pid)
{
	uint64_t *v = u64map_get(&m->rss_ix, pid);
	if (v)
		return &m->d->rss[*v];
	if (m->d->n_rss == REPORT__MAX_PROCS)
		return NULL;
	struct report_rss *p = realloc(m->d->rss, (m->d->n_rss + 1) * sizeof(*p));
	if (!p)
		return NULL;
	m->d->rss = p;
	if (u64map_put(&m->rss_ix, pid, m->d->n_rss, NULL, NULL))
		return NULL;
	struct report_rss *x = &m->d->rss[m->d->n_rss++];
	memset(x, 0, sizeof(*x));
	x->pid = pid;
	return x;
}

static void report__rss_rec(struct report__state *m, const struct trc_record *rec)
{
	if (rec->type != TRC_REC_RSS)
		return;
	uint32_t pid = rec->rss.pid ? rec->rss.pid : trcfile_reader_header(m->r)->pid;
	struct report_rss *x = report__rss(m, pid);
	if (!x)
		return;
	/* The program's RSS, as the summary and memory.c take it. */
	uint64_t b = rec->rss.buffers_bytes;
	uint64_t v = rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
	struct report_rss_col *c =
		&x->cols[report_col(rec->ts_ns, m->d->t0_ns, m->d->t1_ns, REPORT_RSS_COLS)];
	x->samples++;
	if (v > x->max_bytes)
		x->max_bytes = v;
	if (!c->ts_ns || v > c->rss_bytes) {
		c->ts_ns = rec->ts_ns ? rec->ts_ns : 1;
		c->rss_bytes = v;
	}
}

/* ---- the flames' heaviest stacks ---------------------------------------------------------- */

struct report__keep {
	struct report_flame *f;
	size_t bytes;
	bool nomem;
};

static void report__heap_down(struct report_stack *v, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, s = i;
		if (l < n && v[l].weight < v[s].weight)
			s = l;
		if (l + 1 < n && v[l + 1].weight < v[s].weight)
			s = l + 1;
		if (s == i)
			return;
		struct report_stack t = v[i];
		v[i] = v[s];
		v[s] = t;
		i = s;
	}
}

static void report__heap_up(struct report_stack *v, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		if (v[p].weight <= v[i].weight)
			return;
		struct report_stack t = v[i];
		v[i] = v[p];
		v[p] = t;
		i = p;
	}
}

/* Drops the lightest kept stack into the other weight. */
static void report__drop_min(struct report__keep *k)
{
	struct report_flame *f = k->f;
	f->other_weight += f->v[0].weight;
	f->other_stacks++;
	k->bytes -= strlen(f->v[0].stack);
	free(f->v[0].stack);
	f->v[0] = f->v[--f->n];
	report__heap_down(f->v, f->n, 0);
}

static void report__emit(void *ctx, const char *stack, size_t len, uint64_t weight)
{
	struct report__keep *k = ctx;
	struct report_flame *f = k->f;
	f->total += weight;
	if (k->nomem || len > REPORT_FLAME_BYTES / 4 ||
	    (f->n == REPORT_FLAME_STACKS && weight <= f->v[0].weight)) {
		f->other_weight += weight;
		f->other_stacks++;
		return;
	}
	if (f->n == REPORT_FLAME_STACKS)
		report__drop_min(k);
	char *s = strndup(stack, len);
	if (!s) {
		k->nomem = true;
		return;
	}
	f->v[f->n] = (struct report_stack){s, weight};
	report__heap_up(f->v, f->n++);
	k->bytes += len;
	while (k->bytes > REPORT_FLAME_BYTES && f->n > 1)
		report__drop_min(k);
}

static int report__by_weight(const void *x, const void *y)
{
	const struct report_stack *a = x, *b = y;
	if (a->weight != b->weight)
		return a->weight < b->weight ? 1 : -1;
	return strcmp(a->stack, b->stack);
}

static int report__fold(struct report__state *m, struct flame *fl, struct report_flame *f)
{
	f->v = calloc(REPORT_FLAME_STACKS, sizeof(*f->v));
	if (!f->v)
		return -ENOMEM;
	struct report__keep k = {.f = f};
	int rc = flame_fold(fl, m->r, m->syms, report__emit, &k);
	if (rc || k.nomem)
		return rc ? rc : -ENOMEM;
	qsort(f->v, f->n, sizeof(*f->v), report__by_weight);
	return 0;
}

/* The bytes by node as folded stacks: each node's whole stack (flame_node_name of fl, the
 * trie's node i being fl's map[i]), the bytes allocated with no frame open under
 * FLAME_OUTSIDE, as FLAME_ALLOC folds them. */
static int report__fold_bytes(struct report__state *m, const struct flame *fl, const uint32_t *map,
			      struct report_flame *f)
{
	f->v = calloc(REPORT_FLAME_STACKS, sizeof(*f->v));
	if (!f->v)
		return -ENOMEM;
	struct report__keep k = {.f = f};
	char *buf = malloc(REPORT_FLAME_BYTES / 4 + 1);
	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->trie.n_nodes && !k.nomem; i++) {
		const uint64_t bytes = m->trie.nodes[i].bytes;
		if (!bytes)
			continue;
		size_t len = flame_node_name(fl, map[i], true, m->r, m->syms, buf,
					     REPORT_FLAME_BYTES / 4 + 1);
		report__emit(&k, buf, len, bytes);
	}
	free(buf);
	if (k.nomem)
		return -ENOMEM;
	qsort(f->v, f->n, sizeof(*f->v), report__by_weight);
	return 0;
}

/* ---- naming the durations ------------------------------------------------------------------ */

static int report__by_name(const void *x, const void *y)
{
	const struct report_durations *a = x, *b = y;
	return strcmp(a->name, b->name);
}

static int report__name_durations(struct report__state *m, struct report__accs *a, bool func,
				  struct report_durations **out, size_t *n_out)
{
	struct report_durations *v = calloc(a->n ? a->n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*out = v;
	for (size_t i = 0; i < a->n; i++) {
		const struct report__acc *x = &a->v[i];
		char buf[1024];
		if (!func) {
			uint32_t len = 0;
			const char *s = trcfile_reader_name(m->r, (uint32_t)x->key, &len);
			if (s)
				snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
			else
				snprintf(buf, sizeof(buf), "#%" PRIu64, x->key);
		} else if (m->syms) {
			sym_display(m->syms, x->pid, x->key, buf, sizeof(buf));
		} else {
			/* As functions.c names a function without symbols. */
			const struct trcfile_module *mo =
				trcfile_reader_module(m->r, x->pid, x->key);
			const char *base = mo ? strrchr(mo->path, '/') : NULL;
			if (mo)
				snprintf(buf, sizeof(buf), "%s+0x%" PRIx64,
					 base ? base + 1 : mo->path,
					 x->key - mo->start + mo->offset);
			else
				snprintf(buf, sizeof(buf), "0x%" PRIx64, x->key);
		}
		if (!(v[i].name = strdup(buf))) {
			*n_out = i;
			return -ENOMEM;
		}
		v[i].n = x->n;
		if (x->bins)
			memcpy(v[i].bins, x->bins, sizeof(v[i].bins));
	}
	size_t n = a->n;
	qsort(v, n, sizeof(*v), report__by_name);
	/* One row per name: the same function in several processes, a name id defined twice. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1].name, v[i].name)) {
			v[k - 1].n += v[i].n;
			for (unsigned g = 0; g < HIST_GROUPS; g++)
				v[k - 1].bins[g] += v[i].bins[g];
			free(v[i].name);
			continue;
		}
		v[k++] = v[i];
	}
	*n_out = k;
	return 0;
}

/* ---- the pass ------------------------------------------------------------------------------ */

static int report__by_pid(const void *x, const void *y)
{
	const struct report_rss *a = x, *b = y;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

static int report__by_thread(const void *x, const void *y)
{
	const struct report_thread *a = x, *b = y;
	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->tid > b->tid) - (a->tid < b->tid);
}

static void report__accs_free(struct report__accs *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].bins);
	free(a->v);
	u64map_destroy(&a->ix);
}

/* m for d over [t0_ns, t1_ns]. 0 or -ENOMEM (then report__close(m) still frees it). */
static int report__open(struct report__state *m, struct trcfile_reader *r, uint64_t t0_ns,
			uint64_t t1_ns, struct report_data *d)
{
	memset(d, 0, sizeof(*d));
	d->t0_ns = t0_ns;
	d->t1_ns = t1_ns;
	*m = (struct report__state){.r = r, .d = d, .budget = REPORT__HIST_BUDGET};
	u64map_init(&m->rss_ix, SIZE_MAX);
	u64map_init(&m->thr_ix, SIZE_MAX);
	u64map_init(&m->spans.ix, SIZE_MAX);
	u64map_init(&m->funcs.ix, SIZE_MAX);
	/* Columns of whole nanoseconds covering [t0, t1]. */
	m->act_width_ns = (t1_ns > t0_ns ? t1_ns - t0_ns : 0) / REPORT_ACT_COLS + 1;
	m->sp = malloc(sizeof(*m->sp));
	m->fn = malloc(sizeof(*m->fn));
	if (report_trie_init(&m->trie) || !m->sp || !m->fn)
		return -ENOMEM;
	return 0;
}

static void report__close(struct report__state *m)
{
	free(m->sp);
	free(m->fn);
	report_trie_free(&m->trie);
	u64map_destroy(&m->rss_ix);
	u64map_destroy(&m->thr_ix);
	report__accs_free(&m->spans);
	report__accs_free(&m->funcs);
}

/* Stream s (a thread or RSS stream) begins: its thread's activity, its frames. */
static void report__stream_begin(struct report__state *m, const struct trcfile_stream_info *si)
{
	if (si->kind != TRC_STREAM_THREAD)
		return;
	m->t = report__thread(m, si->pid, si->tid);
	if (!m->t)
		m->t = &m->no_thread;
	m->pid = si->pid;
	m->hot = (struct report__hot){.nodes = m->trie.nodes,
				      .last_ts = UINT64_MAX,
				      .col = &m->t->cols[0],
				      .sv = m->sp->v};
	m->fn->n = m->fn->deeper = 0;
}

static void report__stream_end(struct report__state *m, const struct trcfile_stream_info *si)
{
	if (si->kind == TRC_STREAM_THREAD)
		m->t->events += m->hot.events;
}

/* The records of an RSS stream's loaded chunk, which its cursor has checked whole. 0 or
 * -EBADMSG. */
static int report__rss_chunk(struct report__state *m, struct trcfile_cursor *c)
{
	for (; c->left; c->left--) {
		struct trc_record rec;
		/* The checked decoder alone: the fast one takes no RSS record, and inlined a
		 * second time it would not be inlined in the thread streams' loop. */
		if (trcfile__decode_slow(&c->p, c->pend, &c->coder, &rec))
			return -EBADMSG;
		report__rss_rec(m, &rec);
	}
	return 0;
}

/* Every record of stream si through c (the stream begun). 0 or -errno (the reader's message
 * set). */
static int report__stream(struct report__state *m, const struct trcfile_stream_info *si,
			  struct trcfile_cursor *c)
{
	if (si->kind == TRC_STREAM_RSS) {
		struct trc_record rec;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) > 0)
			report__rss_rec(m, &rec);
		return rc;
	}
	int rc;
	while ((rc = trcfile_scan_next_chunk(c)) == 1) {
		rc = report__thread_chunk(m, &m->hot, c);
		if (rc == -EBADMSG) {
			/* Let the cursor's own decoder say where (same message as every reader). */
			struct trc_record dummy;
			rc = trcfile_cursor_next(c, &dummy);
			return rc < 0 ? rc : trcfile_reader_fail(m->r, -EBADMSG, "damaged chunk");
		}
		if (rc || (rc = trcfile_scan_chunk_done(c)))
			return rc;
	}
	return rc;
}

/* After the last stream: the flames folded, the durations named, the lists sorted. */
static int report__finish(struct report__state *m, struct sym_resolver *syms)
{
	struct report_data *d = m->d;
	m->syms = syms;
	int rc = -ENOMEM;
	/* The trie as the flame flame_add would have built: folded and named by flame.c. */
	struct flame *fl = flame_new(FLAME_TIME);
	uint32_t *map = calloc(m->trie.n_nodes, sizeof(*map));
	if (!fl || !map)
		goto out;
	if ((rc = report_trie_to_flame(&m->trie, fl, map)) ||
	    (rc = report__fold(m, fl, &d->by_time)) ||
	    (rc = report__fold_bytes(m, fl, map, &d->by_bytes)) ||
	    (rc = report__name_durations(m, &m->spans, false, &d->spans, &d->n_spans)) ||
	    (rc = report__name_durations(m, &m->funcs, true, &d->funcs, &d->n_funcs)))
		goto out;
	if (d->n_rss)
		qsort(d->rss, d->n_rss, sizeof(*d->rss), report__by_pid);
	if (d->n_threads)
		qsort(d->threads, d->n_threads, sizeof(*d->threads), report__by_thread);
	rc = 0;
out:
	flame_free(fl);
	free(map);
	return rc;
}

static bool report__kind(const struct trcfile_stream_info *si)
{
	return si->kind == TRC_STREAM_THREAD || si->kind == TRC_STREAM_RSS;
}

int report_data_compute(struct trcfile_reader *r, struct sym_resolver *syms, uint64_t t0_ns,
			uint64_t t1_ns, struct report_data *d)
{
	struct report__state m;
	int rc = report__open(&m, r, t0_ns, t1_ns, d);
	unsigned ns = trcfile_reader_stream_count(r);
	for (unsigned s = 0; !rc && s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (!report__kind(si))
			continue;
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		if (!c) {
			rc = -ENOMEM;
			break;
		}
		report__stream_begin(&m, si);
		rc = report__stream(&m, si, c);
		report__stream_end(&m, si);
		trcfile_cursor_free(c);
	}
	if (!rc)
		rc = report__finish(&m, syms);
	report__close(&m);
	if (rc)
		report_data_free(d);
	return rc;
}

/* ---- the pass on the summary's chunks ------------------------------------------------------ */

struct report_pass {
	struct report__state m;
	struct report_data d;
	uint64_t t0_ns, t1_ns; /* the columns' range, from the index */
	unsigned next; /* streams begun so far */
	bool in_stream; /* stream next - 1 is begun and not ended */
	int err;
};

struct report_pass *report_pass_new(struct trcfile_reader *r)
{
	/* The summary's range (summary.h: start_ns, last_ts_ns) as the index tells it: each
	 * stream's first and last chunk's times, the header's start before them. */
	uint64_t first = UINT64_MAX, last = 0;
	unsigned ns = trcfile_reader_stream_count(r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (!si->chunks)
			continue;
		if (si->first_ts_ns < first)
			first = si->first_ts_ns;
		if (si->last_ts_ns > last)
			last = si->last_ts_ns;
	}
	if (first > last)
		first = last = 0;
	const struct trcfile_header *h = trcfile_reader_header(r);
	struct report_pass *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->t0_ns = h->start_mono_ns && h->start_mono_ns <= first ? h->start_mono_ns : first;
	p->t1_ns = last;
	if (report__open(&p->m, r, p->t0_ns, p->t1_ns, &p->d)) {
		report_pass_free(p);
		return NULL;
	}
	return p;
}

void report_pass_free(struct report_pass *p)
{
	if (!p)
		return;
	report__close(&p->m);
	report_data_free(&p->d);
	free(p);
}

/* Ends the stream begun, and begins and ends every stream before end not begun yet: their
 * threads take their places in the list in stream order, as in report_data_compute. */
static void report__pass_upto(struct report_pass *p, unsigned end)
{
	struct trcfile_reader *r = p->m.r;
	if (p->in_stream)
		report__stream_end(&p->m, trcfile_reader_stream(r, p->next - 1));
	p->in_stream = false;
	for (; p->next < end; p->next++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, p->next);
		if (!report__kind(si))
			continue;
		report__stream_begin(&p->m, si);
		report__stream_end(&p->m, si);
	}
}

int report_pass_chunk(void *ctx, unsigned sidx, const struct trcfile_cursor *loaded)
{
	struct report_pass *p = ctx;
	const struct trcfile_stream_info *si = trcfile_reader_stream(p->m.r, sidx);
	if (p->err || !report__kind(si))
		return 0;
	if (!p->in_stream || sidx != p->next - 1) {
		report__pass_upto(p, sidx);
		report__stream_begin(&p->m, si);
		p->next = sidx + 1;
		p->in_stream = true;
	}
	struct trcfile_cursor c = *loaded;
	p->err = si->kind == TRC_STREAM_THREAD ? report__thread_chunk(&p->m, &p->m.hot, &c)
					       : report__rss_chunk(&p->m, &c);
	return 0;
}

int report_pass_finish(struct report_pass *p, struct sym_resolver *syms, uint64_t t0_ns,
		       uint64_t t1_ns, struct report_data *d)
{
	struct trcfile_reader *r = p->m.r;
	int rc;
	if (p->err || t0_ns != p->t0_ns || t1_ns != p->t1_ns) {
		/* Another range than the index's (a damaged chunk at a stream's end, time
		 * stepping back), or a chunk that failed here: a pass of the report's own. */
		report_pass_free(p);
		return report_data_compute(r, syms, t0_ns, t1_ns, d);
	}
	report__pass_upto(p, trcfile_reader_stream_count(r));
	rc = report__finish(&p->m, syms);
	if (!rc) {
		*d = p->d;
		memset(&p->d, 0, sizeof(p->d));
	}
	report_pass_free(p);
	return rc;
}

static void report__flame_free(struct report_flame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].stack);
	free(f->v);
}

void report_data_free(struct report_data *d)
{
	free(d->rss);
	free(d->threads);
	for (size_t i = 0; i < d->n_spans; i++)
		free(d->spans[i].name);
	free(d->spans);
	for (size_t i = 0; i < d->n_funcs; i++)
		free(d->funcs[i].name);
	free(d->funcs);
	report__flame_free(&d->by_time);
	report__flame_free(&d->by_bytes);
	memset(d, 0, sizeof(*d));
}
