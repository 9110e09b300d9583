/* summary_names.c - the summary's per-name figures: by name id while the streams are walked,
 * then by name string.
 *
 * Purpose: span begins and ends, instants, counters (min, max, last value) and span durations
 * (count, total, max, histogram for the percentiles), per name id. Ids are session-wide and
 * two ids may carry the same string (two processes named the same span), so at the end the
 * ids are aggregated by their NAME string into s->names, histograms merged.
 *
 * Bounds: at most SUMMARY__NAME_IDS_MAX distinct ids (beyond: counted together as "(other
 * names)", hostile input only); histograms take at most SUMMARY__HIST_BUDGET_BYTES (beyond:
 * percentiles from the spans that fitted, flagged approximate).
 *
 * Threads: the reader's thread.
 */
#include <stdio.h>

#include "summary_priv.h"

#define SUMMARY__NAME_IDS_MAX (256u << 10)
#define SUMMARY__HIST_BUDGET_BYTES (32u << 20)
#define SUMMARY__OTHER_NAMES "(other names)"

static void summary__idstat_init(struct summary__idstat *st, uint32_t id)
{
	memset(st, 0, sizeof(*st));
	st->id = id;
	st->counter_min = INT64_MAX;
	st->counter_max = INT64_MIN;
}

int summary__names_init(struct summary__state *m)
{
	struct summary__names *n = &m->names;
	u64map_init(&n->map, SUMMARY__NAME_IDS_MAX);
	n->hist_budget = SUMMARY__HIST_BUDGET_BYTES;
	summary__idstat_init(&n->other, 0);
	n->dense = calloc(SUMMARY__DENSE_IDS, sizeof(*n->dense));
	return n->dense ? 0 : summary__nomem(m);
}

void summary__names_free(struct summary__names *n)
{
	for (size_t i = 0; i < n->n; i++)
		hist_free(n->ids[i].hist);
	hist_free(n->other.hist);
	free(n->ids);
	free(n->dense);
	u64map_destroy(&n->map);
}

struct summary__idstat *summary__idstat_slow(struct summary__state *m, uint32_t id)
{
	struct summary__names *n = &m->names;
	uint64_t *slot = u64map_get(&n->map, id);
	if (slot)
		return &n->ids[*slot];
	if (n->n == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 64;
		void *p = realloc(n->ids, cap * sizeof(*n->ids));
		if (!p)
			goto nomem;
		n->ids = p;
		n->cap = cap;
	}
	int err = u64map_put(&n->map, id, n->n, NULL, NULL);
	if (err == -ENOSPC) {
		n->other_used = true;
		return &n->other;
	}
	if (err)
		goto nomem;
	struct summary__idstat *st = &n->ids[n->n];
	summary__idstat_init(st, id);
	if (id < SUMMARY__DENSE_IDS)
		n->dense[id] = (uint32_t)n->n + 1;
	n->n++;
	return st;
nomem:
	summary__nomem(m);
	return NULL;
}

/* ---- by name string ---------------------------------------------------------------------- */

struct summary__byname {
	const char *name; /* may hold NUL bytes: compared by (name, len) */
	uint32_t len;
	const struct summary__idstat *st;
};

/* Byte order, then length: the strings of two NAME records are the same only when every
 * byte is (a NUL inside a name does not end it). */
static int summary__cmp_name(const struct summary__byname *x, const struct summary__byname *y)
{
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int summary__cmp_byname(const void *a, const void *b)
{
	const struct summary__byname *x = a, *y = b;
	int c = summary__cmp_name(x, y);
	if (c)
		return c;
	return x->st->id < y->st->id ? -1 : x->st->id > y->st->id;
}

/* The per-type counts of the types counted per name id (the pass leaves them out). */
static void summary__names_per_type(struct summary__state *m)
{
	uint64_t *pt = m->s->per_type;
	const struct summary__names *n = &m->names;
	for (size_t i = 0; i <= n->n; i++) {
		const struct summary__idstat *st = i < n->n ? &n->ids[i] : &n->other;
		pt[TRC_REC_SPAN_BEGIN] += st->begins;
		pt[TRC_REC_SPAN_END] += st->ends;
		pt[TRC_REC_INSTANT] += st->instants;
		pt[TRC_REC_COUNTER] += st->counters;
	}
}

/* Adds one id's figures to a name's; *have_counter and *last_ts carry what the counter figures
 * so far came from. 0 or -ENOMEM (histogram merge). */
static int summary__name_add(struct summary_name *out, struct hist *h,
			     const struct summary__idstat *st, bool *have_counter,
			     uint64_t *last_ts)
{
	out->begins += st->begins;
	out->ends += st->ends;
	out->instants += st->instants;
	out->counters += st->counters;
	if (st->spans && (!out->spans || st->span_min_ns < out->span_min_ns))
		out->span_min_ns = st->span_min_ns;
	out->spans += st->spans;
	out->span_total_ns += st->span_total_ns;
	if (st->span_max_ns > out->span_max_ns)
		out->span_max_ns = st->span_max_ns;
	if (st->counters) {
		if (!*have_counter || st->counter_min < out->counter_min)
			out->counter_min = st->counter_min;
		if (!*have_counter || st->counter_max > out->counter_max)
			out->counter_max = st->counter_max;
		if (!*have_counter || st->counter_last_ts >= *last_ts) {
			*last_ts = st->counter_last_ts;
			out->counter_last = st->counter_last;
		}
		*have_counter = true;
	}
	return st->hist ? hist_merge(h, st->hist) : 0;
}

int summary__names_finish(struct summary__state *m)
{
	summary__names_per_type(m);
	struct summary *s = m->s;
	const struct summary__names *names = &m->names;
	size_t n = names->n + (names->other_used ? 1 : 0);
	if (!n)
		return 0;
	struct summary__byname *v = calloc(n, sizeof(*v));
	char(*fallback)[16] = calloc(n, sizeof(*fallback));
	s->names = calloc(n, sizeof(*s->names));
	if (!v || !fallback || !s->names) {
		free(v);
		free(fallback);
		return summary__nomem(m);
	}
	for (size_t i = 0; i < names->n; i++) {
		uint32_t len = 0;
		const char *name = trcfile_reader_name(m->r, names->ids[i].id, &len);
		if (!name) {
			snprintf(fallback[i], sizeof(fallback[i]), "#%u", names->ids[i].id);
			name = fallback[i];
			len = (uint32_t)strlen(name);
		}
		v[i] = (struct summary__byname){name, len, &names->ids[i]};
	}
	/* Ids past the table's bound, all together (hostile or broken input only). */
	if (names->other_used)
		v[names->n] = (struct summary__byname){SUMMARY__OTHER_NAMES,
						       (uint32_t)strlen(SUMMARY__OTHER_NAMES),
						       &names->other};
	qsort(v, n, sizeof(*v), summary__cmp_byname);
	for (size_t i = 0; i < n && !m->err;) {
		size_t j = i;
		struct summary_name *out = &s->names[s->n_names];
		struct hist h = {0};
		uint64_t last_ts = 0;
		bool have_counter = false;
		memset(out, 0, sizeof(*out));
		for (; j < n && summary__cmp_name(&v[j], &v[i]) == 0; j++)
			if (summary__name_add(out, &h, v[j].st, &have_counter, &last_ts))
				summary__nomem(m);
		out->span_p50_ns = hist_quantile(&h, 0.50, out->span_min_ns, out->span_max_ns);
		out->span_p99_ns = hist_quantile(&h, 0.99, out->span_min_ns, out->span_max_ns);
		hist_clear(&h);
		out->name = summary__strndup(v[i].name, v[i].len);
		out->name_len = v[i].len;
		if (!out->name)
			summary__nomem(m);
		else
			s->n_names++;
		i = j;
	}
	free(v);
	free(fallback);
	return m->err;
}
