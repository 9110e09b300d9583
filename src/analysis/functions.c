/* functions.c - per-function calls, inclusive and self time (contract in functions.h).
 *
 * Functions are keyed by (pid, address) while the trace is read (a u64index over an array), each
 * with two histograms; a stack of open calls per thread stream. At the end each function is named,
 * and two sets of rows are made, each sorted by the key: functions of one name merged over the
 * processes (histograms add), and functions of one name in one process.
 *
 * Histogram: values below 32 ns are exact; above, 32 sub-buckets per power of two, the
 * value reported for a bucket its midpoint clamped to the observed [min, max]: within 1.6 %
 * of the exact value. Groups (one per power of two) are allocated on first use.
 *
 * Threads: one thread per table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "functions.h"
#include "u64map.h"

#define FUNC__SUB 32u
#define FUNC__GROUPS 60u
#define FUNC__DEPTH_MAX (1u << 20)

struct func__hist {
	uint64_t *group[FUNC__GROUPS];
	uint64_t n, total, min, max;
};

struct func__fn {
	uint32_t pid;
	uint64_t addr;
	const char *name;
	struct func__hist incl, self;
	uint64_t outer_ns; /* inclusive time of the calls with no call of this function below */
	/* Open calls of this function: open_n of them on stack open_sidx's, the rest (a second
	 * stream's while the first still has one open) counted in func_table.nested. */
	uint32_t open_sidx, open_n;
};

struct func__frame {
	uint32_t fn;
	bool outer; /* no call of the same function below it on its stack */
	bool in_map; /* counted in func_table.nested, not in the function's open_n */
	uint64_t enter_ts;
	uint64_t child_ns;
};

struct func__stack {
	struct func__frame *v;
	uint32_t n, cap;
	uint32_t over; /* frames past FUNC__DEPTH_MAX, not kept */
};

struct func_table {
	struct func__fn *fns;
	uint32_t n_fns, cap_fns;
	struct u64index index; /* (pid, addr) -> fn */
	struct u64map nested; /* (stream << 32 | fn) -> open calls, when open_sidx is another's */
	struct func__stack *stacks;
	unsigned n_stacks;
	uint64_t unmatched, unclosed, unfinished;
	struct func_row *rows; /* one per name */
	size_t n_rows;
	struct func_row *proc_rows; /* one per (process, name) */
	size_t n_proc_rows;
	unsigned n_processes; /* distinct pids of proc_rows */
	char **names; /* owned */
	size_t n_names;
};

/* ---- histogram ------------------------------------------------------------------------- */

static void func__bucket(uint64_t v, unsigned *g, unsigned *s)
{
	if (v < FUNC__SUB) {
		*g = 0;
		*s = (unsigned)v;
		return;
	}
	unsigned top = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	*g = top - 4u;
	*s = (unsigned)(v >> (top - 5u)) & (FUNC__SUB - 1u);
}

static uint64_t func__bucket_value(unsigned g, unsigned s)
{
	if (g == 0)
		return s;
	unsigned shift = g - 1u; /* top - 5 */
	return ((uint64_t)(FUNC__SUB + s) << shift) + (((uint64_t)1 << shift) >> 1);
}

static int func__hist_add_n(struct func__hist *h, unsigned g, unsigned s, uint64_t count)
{
	if (!h->group[g]) {
		h->group[g] = calloc(FUNC__SUB, sizeof(uint64_t));
		if (!h->group[g])
			return -ENOMEM;
	}
	h->group[g][s] += count;
	return 0;
}

static int func__hist_add(struct func__hist *h, uint64_t v)
{
	unsigned g, s;
	func__bucket(v, &g, &s);
	if (g >= FUNC__GROUPS)
		g = FUNC__GROUPS - 1, s = FUNC__SUB - 1;
	if (func__hist_add_n(h, g, s, 1) != 0)
		return -ENOMEM;
	h->min = h->n == 0 || v < h->min ? v : h->min;
	h->max = v > h->max ? v : h->max;
	h->n++;
	h->total += v;
	return 0;
}

static int func__hist_merge(struct func__hist *into, const struct func__hist *from)
{
	for (unsigned g = 0; g < FUNC__GROUPS; g++)
		for (unsigned s = 0; from->group[g] && s < FUNC__SUB; s++)
			if (from->group[g][s] && func__hist_add_n(into, g, s, from->group[g][s]))
				return -ENOMEM;
	if (from->n) {
		into->min = into->n == 0 || from->min < into->min ? from->min : into->min;
		into->max = from->max > into->max ? from->max : into->max;
	}
	into->n += from->n;
	into->total += from->total;
	return 0;
}

/* The value at quantile q (rank ceil(q * n)), clamped to [min, max]. */
static uint64_t func__hist_quantile(const struct func__hist *h, double q)
{
	if (!h->n)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)h->n);
	if ((double)rank < q * (double)h->n)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned g = 0; g < FUNC__GROUPS; g++) {
		for (unsigned s = 0; h->group[g] && s < FUNC__SUB; s++) {
			seen += h->group[g][s];
			if (seen >= rank) {
				uint64_t v = func__bucket_value(g, s);
				return v < h->min ? h->min : v > h->max ? h->max : v;
			}
		}
	}
	return h->max;
}

static void func__hist_free(struct func__hist *h)
{
	for (unsigned g = 0; g < FUNC__GROUPS; g++)
		free(h->group[g]);
}

static void func__stat(const struct func__hist *h, struct func_stat *out)
{
	out->total_ns = h->total;
	out->max_ns = h->max;
	out->mean_ns = h->n ? h->total / h->n : 0;
	out->p50_ns = func__hist_quantile(h, 0.50);
	out->p99_ns = func__hist_quantile(h, 0.99);
}

/* ---- functions and stacks -------------------------------------------------------------- */

/* Seeded under the index's seed: addresses come from the file, which must not choose
 * collisions (u64index keeps probes bounded should it try). */
static uint64_t func__hash(uint32_t pid, uint64_t addr, uint64_t seed)
{
	return u64map_mix(addr ^ u64map_mix(pid, seed), seed);
}

static uint64_t func__entry_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct func_table *t = ctx;
	return func__hash(t->fns[i].pid, t->fns[i].addr, seed);
}

/* The function of (pid, addr), made when new; UINT32_MAX when out of memory. */
static uint32_t func__fn(struct func_table *t, uint32_t pid, uint64_t addr)
{
	uint64_t h = func__hash(pid, addr, u64index_seed(&t->index));
	uint32_t e;
	for (size_t pos = u64index_start(&t->index, h);
	     (e = u64index_next(&t->index, &pos)) != U64INDEX_END;)
		if (t->fns[e].addr == addr && t->fns[e].pid == pid)
			return e;
	if (t->n_fns == t->cap_fns) {
		uint32_t nc = t->cap_fns ? 2 * t->cap_fns : 256;
		struct func__fn *p = realloc(t->fns, (size_t)nc * sizeof(*p));
		if (!p)
			return UINT32_MAX;
		t->fns = p;
		t->cap_fns = nc;
	}
	uint32_t i = t->n_fns;
	memset(&t->fns[i], 0, sizeof(t->fns[i]));
	t->fns[i].pid = pid;
	t->fns[i].addr = addr;
	if (u64index_add(&t->index, i, h) != 0)
		return UINT32_MAX;
	t->n_fns++;
	return i;
}

struct func_table *func_table_new(void)
{
	struct func_table *t = calloc(1, sizeof(*t));
	if (t) {
		u64index_init(&t->index, func__entry_hash, t);
		u64map_init(&t->nested, SIZE_MAX);
	}
	return t;
}

void func_table_free(struct func_table *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n_fns; i++) {
		func__hist_free(&t->fns[i].incl);
		func__hist_free(&t->fns[i].self);
	}
	free(t->fns);
	u64index_destroy(&t->index);
	u64map_destroy(&t->nested);
	for (unsigned i = 0; i < t->n_stacks; i++)
		free(t->stacks[i].v);
	free(t->stacks);
	free(t->rows);
	free(t->proc_rows);
	for (size_t i = 0; i < t->n_names; i++)
		free(t->names[i]);
	free(t->names);
	free(t);
}

static struct func__stack *func__stack(struct func_table *t, unsigned sidx)
{
	if (sidx >= t->n_stacks) {
		unsigned nc = sidx + 16;
		struct func__stack *p = realloc(t->stacks, (size_t)nc * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + t->n_stacks, 0, (size_t)(nc - t->n_stacks) * sizeof(*p));
		t->stacks = p;
		t->n_stacks = nc;
	}
	return &t->stacks[sidx];
}

/* Counts a call of fn opening on stream sidx's stack; sets its frame's outer and in_map. A
 * stream's calls come in its order, but the streams' records may interleave (a merged walk):
 * the first stream to open the function counts in the function itself, any other in the map
 * meanwhile. 0 or -ENOMEM. */
static int func__open(struct func_table *t, unsigned sidx, struct func__frame *fr)
{
	struct func__fn *f = &t->fns[fr->fn];
	if (!f->open_n || f->open_sidx == sidx) {
		fr->outer = !f->open_n;
		fr->in_map = false;
		f->open_sidx = sidx;
		f->open_n++;
		return 0;
	}
	uint64_t key = (uint64_t)sidx << 32 | fr->fn;
	uint64_t *n = u64map_get(&t->nested, key);
	fr->outer = !n;
	fr->in_map = true;
	if (n) {
		++*n;
		return 0;
	}
	return u64map_put(&t->nested, key, 1, NULL, NULL);
}

/* The call of frame fr on stream sidx's stack is closed: its count goes. */
static void func__opened_close(struct func_table *t, unsigned sidx, const struct func__frame *fr)
{
	if (!fr->in_map) {
		t->fns[fr->fn].open_n--;
		return;
	}
	uint64_t key = (uint64_t)sidx << 32 | fr->fn;
	uint64_t *n = u64map_get(&t->nested, key);
	if (n && --*n == 0)
		u64map_del(&t->nested, key, NULL);
}

/* Closes the top frame of stream sidx's stack st at ts. */
static int func__close(struct func_table *t, unsigned sidx, struct func__stack *st, uint64_t ts)
{
	struct func__frame fr = st->v[--st->n];
	uint64_t incl = ts > fr.enter_ts ? ts - fr.enter_ts : 0;
	uint64_t self = incl > fr.child_ns ? incl - fr.child_ns : 0;
	struct func__fn *f = &t->fns[fr.fn];
	func__opened_close(t, sidx, &fr);
	if (func__hist_add(&f->incl, incl) || func__hist_add(&f->self, self))
		return -ENOMEM;
	if (fr.outer)
		f->outer_ns += incl;
	if (st->n)
		st->v[st->n - 1].child_ns += incl;
	return 0;
}

int func_table_add(struct func_table *t, unsigned sidx, const struct trcfile_stream_info *si,
		   const struct trc_record *rec)
{
	if (si->kind != TRC_STREAM_THREAD ||
	    (rec->type != TRC_REC_FUNC_ENTER && rec->type != TRC_REC_FUNC_EXIT))
		return 0;
	struct func__stack *st = func__stack(t, sidx);
	if (!st)
		return -ENOMEM;
	if (rec->type == TRC_REC_FUNC_ENTER) {
		if (st->n >= FUNC__DEPTH_MAX) {
			st->over++;
			return 0;
		}
		uint32_t fn = func__fn(t, si->pid, rec->func.addr);
		if (fn == UINT32_MAX)
			return -ENOMEM;
		if (st->n == st->cap) {
			uint32_t nc = st->cap ? 2 * st->cap : 64;
			struct func__frame *p = realloc(st->v, (size_t)nc * sizeof(*p));
			if (!p)
				return -ENOMEM;
			st->v = p;
			st->cap = nc;
		}
		struct func__frame *fr = &st->v[st->n];
		*fr = (struct func__frame){.fn = fn, .enter_ts = rec->ts_ns};
		if (func__open(t, sidx, fr))
			return -ENOMEM;
		st->n++;
		return 0;
	}
	if (st->over) {
		st->over--;
		return 0;
	}
	uint32_t k = st->n;
	while (k > 0 && !(t->fns[st->v[k - 1].fn].addr == rec->func.addr &&
			  t->fns[st->v[k - 1].fn].pid == si->pid))
		k--;
	if (k == 0) {
		t->unmatched++;
		return 0;
	}
	while (st->n > k) { /* calls that never exited end with their caller */
		t->unclosed++;
		if (func__close(t, sidx, st, rec->ts_ns))
			return -ENOMEM;
	}
	return func__close(t, sidx, st, rec->ts_ns);
}

/* ---- rows ------------------------------------------------------------------------------ */

static int func__cmp_name(const void *a, const void *b)
{
	const struct func__fn *x = *(const struct func__fn *const *)a;
	const struct func__fn *y = *(const struct func__fn *const *)b;
	return strcmp(x->name, y->name);
}

static int func__cmp_pid_name(const void *a, const void *b)
{
	const struct func__fn *x = *(const struct func__fn *const *)a;
	const struct func__fn *y = *(const struct func__fn *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static enum func_sort func__key;

static int func__cmp_u64_desc(uint64_t x, uint64_t y)
{
	return x > y ? -1 : x < y;
}

static int func__cmp_row(const void *a, const void *b)
{
	const struct func_row *x = a, *y = b;
	int c = 0;
	switch (func__key) {
	case FUNC_SORT_SELF:
		c = func__cmp_u64_desc(x->self.total_ns, y->self.total_ns);
		break;
	case FUNC_SORT_TOTAL:
		c = func__cmp_u64_desc(x->incl.total_ns, y->incl.total_ns);
		break;
	case FUNC_SORT_CALLS:
		c = func__cmp_u64_desc(x->calls, y->calls);
		break;
	case FUNC_SORT_MAX:
		c = func__cmp_u64_desc(x->incl.max_ns, y->incl.max_ns);
		break;
	case FUNC_SORT_NAME:
		break;
	}
	if (!c)
		c = strcmp(x->name, y->name);
	return c ? c : x->pid < y->pid ? -1 : x->pid > y->pid;
}

bool func_sort_parse(const char *s, enum func_sort *out)
{
	static const char *const keys[] = {"self", "total", "calls", "max", "name"};
	for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(s, keys[i]) == 0) {
			*out = (enum func_sort)i;
			return true;
		}
	return false;
}

/* The rows of order (n functions sorted by name, or by process then name when by_process): one
 * per run of the same name (and process), histograms added, into rows (*n_rows of them); a
 * function of no completed call makes no row. 0 or -ENOMEM. */
static int func__group(struct func__fn *const *order, uint32_t n, bool by_process,
		       struct func_row *rows, size_t *n_rows)
{
	for (uint32_t i = 0; i < n;) {
		struct func__hist incl = {0}, self = {0};
		uint64_t outer_ns = 0;
		uint32_t j = i;
		for (; j < n && strcmp(order[j]->name, order[i]->name) == 0 &&
		       (!by_process || order[j]->pid == order[i]->pid);
		     j++) {
			outer_ns += order[j]->outer_ns;
			if (func__hist_merge(&incl, &order[j]->incl) ||
			    func__hist_merge(&self, &order[j]->self)) {
				func__hist_free(&incl);
				func__hist_free(&self);
				return -ENOMEM;
			}
		}
		if (incl.n) {
			struct func_row *row = &rows[(*n_rows)++];
			row->name = order[i]->name;
			row->pid = by_process ? order[i]->pid : 0;
			row->calls = incl.n;
			func__stat(&incl, &row->incl);
			row->incl.total_ns = outer_ns;
			func__stat(&self, &row->self);
		}
		func__hist_free(&incl);
		func__hist_free(&self);
		i = j;
	}
	return 0;
}

int func_table_finish(struct func_table *t, const struct trcfile_reader *r,
		      struct sym_resolver *syms, enum func_sort key)
{
	int err = -ENOMEM;
	struct func__fn **order = NULL;
	for (unsigned i = 0; i < t->n_stacks; i++)
		t->unfinished += t->stacks[i].n + t->stacks[i].over;
	t->names = calloc(t->n_fns ? t->n_fns : 1, sizeof(*t->names));
	order = calloc(t->n_fns ? t->n_fns : 1, sizeof(*order));
	t->rows = calloc(t->n_fns ? t->n_fns : 1, sizeof(*t->rows));
	t->proc_rows = calloc(t->n_fns ? t->n_fns : 1, sizeof(*t->proc_rows));
	if (!t->names || !order || !t->rows || !t->proc_rows)
		goto out;
	for (uint32_t i = 0; i < t->n_fns; i++) {
		char buf[1024];
		struct func__fn *f = &t->fns[i];
		if (syms) {
			sym_display(syms, f->pid, f->addr, buf, sizeof(buf));
		} else {
			const struct trcfile_module *m = trcfile_reader_module(r, f->pid, f->addr);
			const char *base = m ? strrchr(m->path, '/') : NULL;
			if (m)
				snprintf(buf, sizeof(buf), "%s+0x%" PRIx64,
					 base ? base + 1 : m->path, f->addr - m->start + m->offset);
			else
				snprintf(buf, sizeof(buf), "0x%" PRIx64, f->addr);
		}
		t->names[t->n_names] = strdup(buf);
		if (!t->names[t->n_names])
			goto out;
		f->name = t->names[t->n_names++];
		order[i] = f;
	}
	qsort(order, t->n_fns, sizeof(*order), func__cmp_name);
	if (func__group(order, t->n_fns, false, t->rows, &t->n_rows) != 0)
		goto out;
	qsort(order, t->n_fns, sizeof(*order), func__cmp_pid_name);
	if (func__group(order, t->n_fns, true, t->proc_rows, &t->n_proc_rows) != 0)
		goto out;
	for (size_t i = 0; i < t->n_proc_rows; i++) /* by pid here */
		t->n_processes += i == 0 || t->proc_rows[i].pid != t->proc_rows[i - 1].pid;
	func__key = key;
	qsort(t->rows, t->n_rows, sizeof(*t->rows), func__cmp_row);
	qsort(t->proc_rows, t->n_proc_rows, sizeof(*t->proc_rows), func__cmp_row);
	err = 0;
out:
	free(order);
	return err;
}

size_t func_table_rows(const struct func_table *t, const struct func_row **rows)
{
	*rows = t->rows;
	return t->n_rows;
}

size_t func_table_process_rows(const struct func_table *t, const struct func_row **rows,
			       unsigned *n_processes)
{
	if (n_processes)
		*n_processes = t->n_processes;
	*rows = t->proc_rows;
	return t->n_proc_rows;
}

void func_table_counts(const struct func_table *t, uint64_t *unmatched_exits, uint64_t *unclosed,
		       uint64_t *unfinished)
{
	*unmatched_exits = t->unmatched;
	*unclosed = t->unclosed;
	*unfinished = t->unfinished;
}
