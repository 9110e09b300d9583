/* report_data.c - the report's bounded aggregates (contract in report_data.h).
 *
 * One cursor per stream: RSS streams fill the per-process columns; thread streams feed one
 * flame (weighted by time; the bytes each of its nodes allocated are counted beside it, by
 * node, and folded by the node's stack at the end, which is what FLAME_ALLOC would fold, at
 * half the cost), the per-thread activity columns and the duration stacks (one stack of
 * open spans and one of open calls per stream, REPORT__DEPTH deep; deeper frames are counted
 * and their durations dropped). Durations go to one histogram per span name id and per
 * function (pid, address), named and merged by name at the end, as the summary's tables are.
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
#include "u64map.h"

#define REPORT__DEPTH 1024u
#define REPORT__MAX_PROCS 1024u
#define REPORT__MAX_THREADS 4096u
#define REPORT__HIST_BUDGET (64u << 20)
#define REPORT__BATCH 256

struct report__open {
	uint64_t key, ts;
};

struct report__stack {
	struct report__open v[REPORT__DEPTH];
	unsigned n, deeper; /* deeper: frames open past REPORT__DEPTH */
};

struct report__acc {
	uint32_t pid; /* functions: the process of addr */
	uint64_t key; /* span name id, or function address */
	struct hist *h;
	struct hist_hot hot;
	uint64_t n;
};

#define REPORT__CACHE 256u

struct report__accs {
	struct report__acc *v;
	size_t n, cap;
	struct u64map ix;
	/* A direct-mapped cache in front of ix (index + 1, 0: empty): a few names recur. */
	uint64_t cache_key[REPORT__CACHE];
	uint32_t cache_idx[REPORT__CACHE];
};

struct report__state {
	struct trcfile_reader *r;
	struct sym_resolver *syms;
	struct report_data *d;
	struct u64map rss_ix, thr_ix;
	size_t cap_threads;
	struct report__accs spans, funcs;
	struct flame *ft;
	uint64_t *node_bytes; /* bytes allocated with flame node i innermost */
	size_t cap_nodes;
	bool nomem;
	uint64_t act_width_ns; /* an activity column's width */
	uint64_t act_lo, act_hi; /* the current stream's column: [lo, hi) */
	unsigned act_col;
	uint64_t budget;
	struct report__stack *sp, *fn; /* the current stream's */
	unsigned sidx; /* the current stream */
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

static void report__duration(struct report__state *m, struct report__accs *a, uint64_t mapkey,
			     uint32_t pid, uint64_t key, uint64_t ns)
{
	struct report__acc *x = report__acc(a, mapkey, pid, key);
	if (!x || hist_count(&x->h, &x->hot, ns, &m->budget) != 0) {
		m->d->durations_dropped++;
		return;
	}
	x->n++;
}

static void report__push(struct report__stack *s, uint64_t key, uint64_t ts)
{
	if (s->n == REPORT__DEPTH) {
		s->deeper++;
		return;
	}
	s->v[s->n++] = (struct report__open){key, ts};
}

static void report__thread_rec(struct report__state *m, const struct trcfile_stream_info *si,
			       struct report_thread *t, const struct trc_record *rec)
{
	if (trc_rec_is_event(rec->type) && t) {
		/* A stream's records come in time order: the column changes rarely. */
		uint64_t ts = rec->ts_ns;
		if (ts < m->act_lo || ts >= m->act_hi) {
			uint64_t off = ts > m->d->t0_ns ? ts - m->d->t0_ns : 0;
			uint64_t c = off / m->act_width_ns;
			m->act_col = c < REPORT_ACT_COLS ? (unsigned)c : REPORT_ACT_COLS - 1;
			m->act_lo =
				ts > m->d->t0_ns ? m->d->t0_ns + m->act_col * m->act_width_ns : 0;
			m->act_hi = m->act_col + 1 < REPORT_ACT_COLS
					    ? m->d->t0_ns + (m->act_col + 1) * m->act_width_ns
					    : UINT64_MAX;
			if (ts <= m->d->t0_ns)
				m->act_hi = m->d->t0_ns + 1;
		}
		t->events++;
		t->cols[m->act_col]++;
	}
	if (rec->type == TRC_REC_ALLOC) {
		uint32_t node = flame_stream_node(m->ft, m->sidx);
		if (node >= m->cap_nodes) {
			size_t cap = m->cap_nodes ? m->cap_nodes : 1024;
			while (cap <= node)
				cap *= 2;
			uint64_t *p = realloc(m->node_bytes, cap * sizeof(*p));
			if (!p) {
				m->nomem = true;
				return;
			}
			memset(p + m->cap_nodes, 0, (cap - m->cap_nodes) * sizeof(*p));
			m->node_bytes = p;
			m->cap_nodes = cap;
		}
		m->node_bytes[node] += rec->alloc.size;
	}
	struct report__stack *sp = m->sp, *fn = m->fn;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		report__push(sp, rec->span.name_id, rec->ts_ns);
		break;
	case TRC_REC_SPAN_END:
		if (sp->deeper) {
			sp->deeper--;
			m->d->durations_dropped++;
		} else if (sp->n) {
			const struct report__open *o = &sp->v[--sp->n];
			if (rec->ts_ns >= o->ts)
				report__duration(m, &m->spans, o->key, 0, o->key,
						 rec->ts_ns - o->ts);
		}
		break;
	case TRC_REC_FUNC_ENTER:
		report__push(fn, rec->func.addr, rec->ts_ns);
		break;
	case TRC_REC_FUNC_EXIT: {
		if (fn->deeper) {
			fn->deeper--;
			m->d->durations_dropped++;
			break;
		}
		unsigned k = fn->n;
		while (k && fn->v[k - 1].key != rec->func.addr)
			k--;
		if (!k)
			break; /* no such call open: ignored, as functions.h does */
		const struct report__open *o = &fn->v[k - 1];
		if (rec->ts_ns >= o->ts)
			report__duration(m, &m->funcs, u64map_mix(o->key, si->pid), si->pid, o->key,
					 rec->ts_ns - o->ts);
		fn->n = k - 1;
		break;
	}
	case TRC_REC_LOST:
		/* What was open has lost its end. */
		sp->n = sp->deeper = 0;
		fn->n = fn->deeper = 0;
		break;
	default:
		break;
	}
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

/* The bytes by node as folded stacks: each node's whole stack (flame_node_name), the bytes
 * allocated with no frame open under FLAME_OUTSIDE, as FLAME_ALLOC folds them. */
static int report__fold_bytes(struct report__state *m, struct report_flame *f)
{
	f->v = calloc(REPORT_FLAME_STACKS, sizeof(*f->v));
	if (!f->v)
		return -ENOMEM;
	struct report__keep k = {.f = f};
	char *buf = malloc(REPORT_FLAME_BYTES / 4 + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap_nodes && !k.nomem; i++) {
		if (!m->node_bytes[i])
			continue;
		size_t len = flame_node_name(m->ft, (uint32_t)i, true, m->r, m->syms, buf,
					     REPORT_FLAME_BYTES / 4 + 1);
		report__emit(&k, buf, len, m->node_bytes[i]);
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
		for (unsigned g = 0; x->h && g < HIST_GROUPS; g++)
			for (unsigned s = 0; x->h->group[g] && s < HIST_SUB; s++)
				v[i].bins[g] += x->h->group[g][s];
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
		hist_free(a->v[i].h);
	free(a->v);
	u64map_destroy(&a->ix);
}

int report_data_compute(struct trcfile_reader *r, struct sym_resolver *syms, uint64_t t0_ns,
			uint64_t t1_ns, struct report_data *d)
{
	memset(d, 0, sizeof(*d));
	d->t0_ns = t0_ns;
	d->t1_ns = t1_ns;
	struct report__state m = {.r = r, .syms = syms, .d = d, .budget = REPORT__HIST_BUDGET};
	u64map_init(&m.rss_ix, SIZE_MAX);
	u64map_init(&m.thr_ix, SIZE_MAX);
	u64map_init(&m.spans.ix, SIZE_MAX);
	u64map_init(&m.funcs.ix, SIZE_MAX);
	m.ft = flame_new(FLAME_TIME);
	/* Columns of whole nanoseconds covering [t0, t1]. */
	m.act_width_ns = (t1_ns > t0_ns ? t1_ns - t0_ns : 0) / REPORT_ACT_COLS + 1;
	m.sp = malloc(sizeof(*m.sp));
	m.fn = malloc(sizeof(*m.fn));
	struct trc_record *recs = malloc(REPORT__BATCH * sizeof(*recs));
	int rc = -ENOMEM;
	if (!m.ft || !m.sp || !m.fn || !recs)
		goto out;
	unsigned ns = trcfile_reader_stream_count(r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (si->kind != TRC_STREAM_THREAD && si->kind != TRC_STREAM_RSS)
			continue;
		struct report_thread *t =
			si->kind == TRC_STREAM_THREAD ? report__thread(&m, si->pid, si->tid) : NULL;
		m.sp->n = m.sp->deeper = m.fn->n = m.fn->deeper = 0;
		m.sidx = s;
		m.act_lo = m.act_hi = 0;
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		if (!c)
			goto out;
		int n;
		while ((n = trcfile_cursor_read(c, recs, REPORT__BATCH)) > 0) {
			for (int i = 0; i < n; i++) {
				if (si->kind == TRC_STREAM_RSS) {
					report__rss_rec(&m, &recs[i]);
					continue;
				}
				if (flame_add(m.ft, s, si, &recs[i])) {
					trcfile_cursor_free(c);
					goto out;
				}
				report__thread_rec(&m, si, t, &recs[i]);
			}
		}
		trcfile_cursor_free(c);
		if (n < 0) {
			rc = n;
			goto out;
		}
	}
	if (m.nomem) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = report__fold(&m, m.ft, &d->by_time)) ||
	    (rc = report__fold_bytes(&m, &d->by_bytes)) ||
	    (rc = report__name_durations(&m, &m.spans, false, &d->spans, &d->n_spans)) ||
	    (rc = report__name_durations(&m, &m.funcs, true, &d->funcs, &d->n_funcs)))
		goto out;
	if (d->n_rss)
		qsort(d->rss, d->n_rss, sizeof(*d->rss), report__by_pid);
	if (d->n_threads)
		qsort(d->threads, d->n_threads, sizeof(*d->threads), report__by_thread);
	rc = 0;
out:
	free(recs);
	free(m.sp);
	free(m.fn);
	flame_free(m.ft);
	free(m.node_bytes);
	u64map_destroy(&m.rss_ix);
	u64map_destroy(&m.thr_ix);
	report__accs_free(&m.spans);
	report__accs_free(&m.funcs);
	if (rc)
		report_data_free(d);
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
