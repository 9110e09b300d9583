/* trcfile_summary.c - the numbers behind `trace-dump summary`, in one pass per stream.
 *
 * Purpose: counts per type, name and thread, lost records, span durations, allocation totals
 * and the RSS figures, computed without the merge: every figure here except live allocation
 * bytes is a sum or extreme that does not depend on the order across streams, so each
 * stream is walked alone, chunk by chunk, by a decode-and-count loop of its own for the hot
 * types (trcfile__fast_run). Live bytes need the global time order (a thread may free what
 * another allocated): a second, merged pass runs when the trace has allocations.
 *
 * Memory is bounded whatever the file says: distinct name ids, threads, live allocations,
 * histogram bytes and kept strings all have caps (past them figures are merged or marked
 * approximate, never dropped silently).
 *
 * Span durations: a begin is matched with the next end of the same name on the same stream
 * (a stack per stream, innermost first); a LOST record of the stream ends every span open on
 * it as unknown (spans_cut_by_loss), and a span whose end is stamped before its begin lasts 0.
 * Percentiles come from a log-linear histogram per name (32 sub-buckets per power of two: within 3%
 * of the exact value), so memory does not grow with the number of spans.
 *
 * RSS: everything is the traced program's figure with the trace buffers taken out. The exact
 * peak is the EXIT record's maxrss_bytes - buffers_bytes for the header's pid; without one,
 * the largest sample stands in (rss_peak_source says which).
 *
 * Threads: the reader's thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trcfile_reader_priv.h"

#define TRCFILE__HIST_GROUPS 60
#define TRCFILE__HIST_SUB 32
#define TRCFILE__DENSE_IDS 65536u
#define TRCFILE__STACK_MAX (1u << 20)
#define TRCFILE__MATCH_DEPTH 4096u
#define TRCFILE__NOTES_MAX 1000u
/* Bounds on what hostile input can make the summary hold (a real program stays far below):
 * distinct name ids (beyond: counted together as "(other names)"), threads, live
 * allocations (beyond: live bytes approximate), histogram memory (beyond: percentiles from
 * the spans that fitted). */
#define TRCFILE__NAME_IDS_MAX (256u << 10)
#define TRCFILE__THREADS_MAX (1u << 20)
#define TRCFILE__LIVE_MAX_ENTRIES (1u << 20)
#define TRCFILE__HIST_BUDGET_BYTES (32u << 20)
#define TRCFILE__OTHER_NAMES "(other names)"
/* Strings the summary keeps are cut to these (a record may carry 4 MiB). */
#define TRCFILE__THREAD_NAME_MAX 256u
#define TRCFILE__NOTE_MAX 4096u

struct trcfile__hist {
	uint64_t *group[TRCFILE__HIST_GROUPS];
};

struct trcfile__idstat {
	uint32_t id;
	uint64_t begins, ends, instants, counters;
	uint64_t spans, span_total_ns, span_max_ns;
	int64_t counter_min, counter_max, counter_last;
	uint64_t counter_last_ts;
	struct trcfile__hist *hist; /* NULL until the first span ends */
	/* The group the last duration fell in: most durations of a name share a few groups,
	 * and this saves the fast loop a dependent load through hist. */
	uint64_t *hot_grp;
	unsigned hot_g;
};

struct trcfile__frame {
	uint32_t name_id;
	uint64_t ts;
};

struct trcfile__sum {
	struct trcfile_reader *r;
	struct trcfile_summary *s;
	struct trcfile__idstat *ids;
	size_t n_ids, cap_ids;
	uint32_t *dense; /* id -> index + 1 for small ids */
	struct trcfile__map id_map;
	struct trcfile__idstat other; /* ids beyond TRCFILE__NAME_IDS_MAX */
	bool other_used;
	uint64_t hist_budget; /* bytes histograms may still take */
	struct trcfile__map thread_map; /* pid<<32|tid -> index in s->threads */
	size_t cap_threads;
	struct trcfile__frame *stack;
	size_t stack_n, stack_cap;
	size_t cap_notes;
	uint64_t t0, t1; /* spark time range */
	uint32_t root_pid;
	bool have_sample;
	uint64_t exit_ts;
	int err;
};

/* ---- histogram --------------------------------------------------------------------------- */

static inline void trcfile__hist_bucket(uint64_t v, unsigned *g, unsigned *sub)
{
	if (v < TRCFILE__HIST_SUB) {
		*g = 0;
		*sub = (unsigned)v;
		return;
	}
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	*g = e - 4;
	*sub = (unsigned)(v >> (e - 5)) & (TRCFILE__HIST_SUB - 1);
}

/* Middle of a bucket's value range. */
static uint64_t trcfile__hist_value(unsigned g, unsigned sub)
{
	if (g == 0)
		return sub;
	unsigned e = g + 4;
	uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 5));
	return lo + ((1ull << (e - 5)) >> 1);
}

/* Counts v in st's histogram, allocating what it needs within the budget (past it the
 * value is left out and the percentiles say so). 0 or -ENOMEM. */
static int trcfile__hist_add(struct trcfile__sum *m, struct trcfile__idstat *st, uint64_t v)
{
	unsigned g, sub;
	trcfile__hist_bucket(v, &g, &sub);
	struct trcfile__hist *h = st->hist;
	size_t need = (h ? 0 : sizeof(*h)) + (h && h->group[g] ? 0 : TRCFILE__HIST_SUB * 8);
	if (need > m->hist_budget) {
		m->s->percentiles_approximate = true;
		return 0;
	}
	if (!h) {
		h = st->hist = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
	}
	if (!h->group[g]) {
		h->group[g] = calloc(TRCFILE__HIST_SUB, sizeof(uint64_t));
		if (!h->group[g])
			return -ENOMEM;
	}
	m->hist_budget -= need;
	h->group[g][sub]++;
	st->hot_g = g;
	st->hot_grp = h->group[g];
	return 0;
}

static void trcfile__hist_free_groups(struct trcfile__hist *h)
{
	for (unsigned g = 0; g < TRCFILE__HIST_GROUPS; g++)
		free(h->group[g]);
}

static void trcfile__hist_free(struct trcfile__hist *h)
{
	if (!h)
		return;
	trcfile__hist_free_groups(h);
	free(h);
}

static int trcfile__hist_merge(struct trcfile__hist *dst, const struct trcfile__hist *src)
{
	for (unsigned g = 0; g < TRCFILE__HIST_GROUPS; g++) {
		if (!src->group[g])
			continue;
		if (!dst->group[g]) {
			dst->group[g] = calloc(TRCFILE__HIST_SUB, sizeof(uint64_t));
			if (!dst->group[g])
				return -ENOMEM;
		}
		for (unsigned i = 0; i < TRCFILE__HIST_SUB; i++)
			dst->group[g][i] += src->group[g][i];
	}
	return 0;
}

/* Value at rank ceil(q * n) (1-based) of the n values counted, clamped to max. */
static uint64_t trcfile__hist_quantile(const struct trcfile__hist *h, double q, uint64_t max)
{
	uint64_t n = 0;
	for (unsigned g = 0; g < TRCFILE__HIST_GROUPS; g++)
		for (unsigned i = 0; h->group[g] && i < TRCFILE__HIST_SUB; i++)
			n += h->group[g][i];
	if (!n)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)n);
	if ((double)rank < q * (double)n)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned g = 0; g < TRCFILE__HIST_GROUPS; g++) {
		if (!h->group[g])
			continue;
		for (unsigned i = 0; i < TRCFILE__HIST_SUB; i++) {
			seen += h->group[g][i];
			if (seen >= rank) {
				uint64_t v = trcfile__hist_value(g, i);
				return v > max ? max : v;
			}
		}
	}
	return max;
}

/* ---- per-id and per-thread tables ------------------------------------------------------- */

static struct trcfile__idstat *trcfile__idstat_slow(struct trcfile__sum *m, uint32_t id)
{
	uint64_t *slot = trcfile__map_get(&m->id_map, id);
	if (slot)
		return &m->ids[*slot];
	if (m->n_ids == m->cap_ids) {
		size_t cap = m->cap_ids ? 2 * m->cap_ids : 64;
		void *p = realloc(m->ids, cap * sizeof(*m->ids));
		if (!p)
			goto nomem;
		m->ids = p;
		m->cap_ids = cap;
	}
	int err = trcfile__map_put(&m->id_map, id, m->n_ids, NULL, NULL);
	if (err == -ENOSPC) {
		m->other_used = true;
		return &m->other;
	}
	if (err)
		goto nomem;
	struct trcfile__idstat *st = &m->ids[m->n_ids];
	memset(st, 0, sizeof(*st));
	st->id = id;
	st->counter_min = INT64_MAX;
	st->counter_max = INT64_MIN;
	if (id < TRCFILE__DENSE_IDS)
		m->dense[id] = (uint32_t)m->n_ids + 1;
	m->n_ids++;
	return st;
nomem:
	m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
	return NULL;
}

static inline struct trcfile__idstat *trcfile__idstat(struct trcfile__sum *m, uint32_t id)
{
	if (trcfile__likely(id < TRCFILE__DENSE_IDS && m->dense[id]))
		return &m->ids[m->dense[id] - 1];
	return trcfile__idstat_slow(m, id);
}

static char *trcfile__strndup(const char *s, uint32_t len)
{
	char *c = malloc((size_t)len + 1);
	if (c) {
		if (len)
			memcpy(c, s, len);
		c[len] = 0;
	}
	return c;
}

static struct trcfile_summary_thread *trcfile__thread(struct trcfile__sum *m, uint32_t pid,
						      uint32_t tid)
{
	struct trcfile_summary *s = m->s;
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint64_t *slot = trcfile__map_get(&m->thread_map, key);
	if (slot)
		return &s->threads[*slot];
	if (s->n_threads == m->cap_threads) {
		size_t cap = m->cap_threads ? 2 * m->cap_threads : 16;
		void *p = realloc(s->threads, cap * sizeof(*s->threads));
		if (!p)
			goto nomem;
		s->threads = p;
		m->cap_threads = cap;
	}
	int err = trcfile__map_put(&m->thread_map, key, s->n_threads, NULL, NULL);
	if (err) {
		m->err = trcfile__fail(m->r, err == -ENOSPC ? -EFBIG : err, "too many threads");
		return NULL;
	}
	struct trcfile_summary_thread *t = &s->threads[s->n_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	uint32_t len = 0;
	const char *name = trcfile_reader_thread_name(m->r, pid, tid, &len);
	if (!name)
		name = "";
	t->name = trcfile__strndup(name,
				   len < TRCFILE__THREAD_NAME_MAX ? len : TRCFILE__THREAD_NAME_MAX);
	if (!t->name) {
		s->n_threads--;
		trcfile__map_del(&m->thread_map, key, NULL);
		goto nomem;
	}
	return t;
nomem:
	m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
	return NULL;
}

/* ---- the per-record work ---------------------------------------------------------------- */

static void trcfile__span_end(struct trcfile__sum *m, struct trcfile__idstat *st, uint32_t id,
			      uint64_t ts)
{
	/* Innermost open span of that name; usually the top. The search stops TRCFILE__MATCH_DEPTH
	 * frames down, so a stream of ends that match nothing (their begins were lost) cannot
	 * cost a scan of a deep stack each. */
	size_t i = m->stack_n;
	size_t lowest = m->stack_n > TRCFILE__MATCH_DEPTH ? m->stack_n - TRCFILE__MATCH_DEPTH : 0;
	while (i > lowest && m->stack[i - 1].name_id != id)
		i--;
	if (i == lowest) {
		m->s->spans_unmatched_end++;
		return;
	}
	uint64_t begin = m->stack[i - 1].ts;
	/* Spans opened inside it and never closed stay open (counted at the end). */
	memmove(&m->stack[i - 1], &m->stack[i], (m->stack_n - i) * sizeof(*m->stack));
	m->stack_n--;
	uint64_t d = ts >= begin ? ts - begin : 0;
	st->spans++;
	st->span_total_ns += d;
	if (d > st->span_max_ns)
		st->span_max_ns = d;
	if (trcfile__hist_add(m, st, d))
		m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
}

static void trcfile__span_begin(struct trcfile__sum *m, uint32_t id, uint64_t ts)
{
	if (m->stack_n == m->stack_cap) {
		if (m->stack_cap >= TRCFILE__STACK_MAX) {
			/* Nesting this deep is not a program's (begins whose ends were lost, or a
			 * name with two ids): forget the outer half at once, so a stream of
			 * unmatched begins costs O(1) each, not a memmove of the whole stack. */
			size_t drop = m->stack_n / 2;
			memmove(m->stack, m->stack + drop, (m->stack_n - drop) * sizeof(*m->stack));
			m->stack_n -= drop;
			m->s->spans_open_at_end += drop;
		} else {
			size_t cap = m->stack_cap ? 2 * m->stack_cap : 64;
			void *p = realloc(m->stack, cap * sizeof(*m->stack));
			if (!p) {
				m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
				return;
			}
			m->stack = p;
			m->stack_cap = cap;
		}
	}
	m->stack[m->stack_n++] = (struct trcfile__frame){id, ts};
}

static void trcfile__rss_sample(struct trcfile__sum *m, const struct trc_record *rec)
{
	struct trcfile_summary *s = m->s;
	if (m->root_pid && rec->rss.pid && rec->rss.pid != m->root_pid)
		return;
	uint64_t b = rec->rss.buffers_bytes;
	uint64_t v = rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
	if (!m->have_sample || v < s->rss_sampled_min_bytes)
		s->rss_sampled_min_bytes = v;
	if (v > s->rss_peak_sampled_bytes)
		s->rss_peak_sampled_bytes = v;
	if (b > s->buffers_resident_peak_bytes)
		s->buffers_resident_peak_bytes = b;
	s->rss_samples++;
	m->have_sample = true;
	uint64_t span = m->t1 > m->t0 ? m->t1 - m->t0 : 1;
	uint64_t t = rec->ts_ns < m->t0 ? 0 : rec->ts_ns - m->t0;
	if (t > span)
		t = span;
	unsigned col = (unsigned)((__uint128_t)t * TRCFILE_SPARK_COLUMNS / (span + 1));
	if (col >= TRCFILE_SPARK_COLUMNS)
		col = TRCFILE_SPARK_COLUMNS - 1;
	if (v > s->spark_bytes[col])
		s->spark_bytes[col] = v;
}

static void trcfile__note(struct trcfile__sum *m, const struct trc_record *rec)
{
	struct trcfile_summary *s = m->s;
	if (s->n_notes >= TRCFILE__NOTES_MAX) {
		s->notes_dropped++;
		return;
	}
	if (s->n_notes == m->cap_notes) {
		size_t cap = m->cap_notes ? 2 * m->cap_notes : 8;
		void *p = realloc(s->notes, cap * sizeof(*s->notes));
		if (!p)
			goto nomem;
		s->notes = p;
		m->cap_notes = cap;
	}
	uint32_t len = rec->note.len < TRCFILE__NOTE_MAX ? rec->note.len : TRCFILE__NOTE_MAX;
	char *text = trcfile__strndup(rec->note.text, len);
	if (!text)
		goto nomem;
	s->notes[s->n_notes++] = (struct trcfile_summary_note){rec->ts_ns, text};
	return;
nomem:
	m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
}

/* Everything but the hot event types. */
static void trcfile__other(struct trcfile__sum *m, const struct trc_record *rec,
			   struct trcfile_summary_thread *th, uint64_t *last_rss_ts)
{
	struct trcfile_summary *s = m->s;
	switch (rec->type) {
	case TRC_REC_RSS:
		trcfile__rss_sample(m, rec);
		if (m->s->rss_samples && rec->ts_ns >= *last_rss_ts &&
		    (!m->root_pid || !rec->rss.pid || rec->rss.pid == m->root_pid)) {
			*last_rss_ts = rec->ts_ns;
			uint64_t b = rec->rss.buffers_bytes;
			s->rss_sampled_last_bytes =
				rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
		}
		break;
	case TRC_REC_LOST:
		if (rec->lost.reason < 8)
			s->lost_per_reason[rec->lost.reason] += rec->lost.count;
		if (rec->lost.reason == TRC_LOST_SAMPLER_LATE) {
			s->rss_ticks_skipped += rec->lost.count;
		} else {
			s->events_lost += rec->lost.count;
			if (th)
				th->lost += rec->lost.count;
			/* Events of this stream are missing here: the spans open on it may have
			 * ended in the gap, so they end as unknown, never paired with an END
			 * after it (a 20 ns span would show as lasting the whole gap). */
			if (rec->lost.count) {
				s->spans_cut_by_loss += m->stack_n;
				m->stack_n = 0;
			}
		}
		break;
	case TRC_REC_THREAD: {
		struct trcfile_summary_thread *t =
			trcfile__thread(m, rec->thread.pid, rec->thread.tid);
		if (!t)
			return;
		uint32_t len = rec->thread.name_len;
		char *name = trcfile__strndup(rec->thread.name, len < TRCFILE__THREAD_NAME_MAX
									? len
									: TRCFILE__THREAD_NAME_MAX);
		if (!name) {
			m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
			return;
		}
		free((char *)t->name);
		t->name = name;
		break;
	}
	case TRC_REC_NOTE:
		trcfile__note(m, rec);
		break;
	case TRC_REC_EXIT:
		if ((rec->exit.pid == m->root_pid || !m->root_pid) &&
		    (!s->has_exit || rec->ts_ns >= m->exit_ts)) {
			s->has_exit = true;
			m->exit_ts = rec->ts_ns;
			s->exit_status = rec->exit.status;
			s->rss_exit_maxrss_bytes = rec->exit.maxrss_bytes;
			s->rss_exit_buffers_bytes = rec->exit.buffers_bytes;
			if (rec->exit.buffers_bytes > s->buffers_resident_peak_bytes)
				s->buffers_resident_peak_bytes = rec->exit.buffers_bytes;
		}
		break;
	}
}

/* The types the fast loop decodes itself; their counts live in the per-id stats. */
static bool trcfile__hot_type(unsigned t)
{
	return t == TRC_REC_SPAN_BEGIN || t == TRC_REC_SPAN_END || t == TRC_REC_INSTANT ||
	       t == TRC_REC_COUNTER;
}

static void trcfile__sum_hot_types(struct trcfile__sum *m)
{
	uint64_t *pt = m->s->per_type;
	for (size_t i = 0; i <= m->n_ids; i++) {
		const struct trcfile__idstat *st = i < m->n_ids ? &m->ids[i] : &m->other;
		pt[TRC_REC_SPAN_BEGIN] += st->begins;
		pt[TRC_REC_SPAN_END] += st->ends;
		pt[TRC_REC_INSTANT] += st->instants;
		pt[TRC_REC_COUNTER] += st->counters;
	}
}

/* Any record, the slow way (also the hot types when they arrive near a chunk's end). */
static void trcfile__sum_generic(struct trcfile__sum *m, const struct trc_record *rec,
				 struct trcfile_summary_thread *th, uint64_t *last_rss_ts)
{
	struct trcfile__idstat *st;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		st = trcfile__idstat(m, rec->span.name_id);
		if (!st)
			return;
		st->begins++;
		trcfile__span_begin(m, rec->span.name_id, rec->ts_ns);
		break;
	case TRC_REC_SPAN_END:
		st = trcfile__idstat(m, rec->span.name_id);
		if (!st)
			return;
		st->ends++;
		trcfile__span_end(m, st, rec->span.name_id, rec->ts_ns);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		st = trcfile__idstat(m, rec->value.name_id);
		if (!st)
			return;
		if (rec->type == TRC_REC_INSTANT) {
			st->instants++;
			break;
		}
		st->counters++;
		if (rec->value.value < st->counter_min)
			st->counter_min = rec->value.value;
		if (rec->value.value > st->counter_max)
			st->counter_max = rec->value.value;
		if (rec->ts_ns >= st->counter_last_ts) {
			st->counter_last_ts = rec->ts_ns;
			st->counter_last = rec->value.value;
		}
		break;
	case TRC_REC_ALLOC:
		m->s->alloc_bytes += rec->alloc.size;
		break;
	case TRC_REC_FREE:
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		break;
	default:
		trcfile__other(m, rec, th, last_rss_ts);
	}
}

/* Where the fast loop is in a chunk. */
struct trcfile__run {
	const uint8_t *p; /* next record */
	const uint8_t *fast_end; /* records starting before this have TRCFILE__FAST_MARGIN bytes */
	uint64_t ts; /* time of the previous record */
	uint32_t left; /* records not decoded yet */
};

/* The hot loop: span begin/end, counter and instant records, decoded and aggregated with
 * everything in locals (the aggregation's stores are uint64_t, which may alias any size_t or
 * uint64_t field the compiler would otherwise reload per record; and a function of its own
 * keeps the register allocator's job small). Stops at the first record it does not handle
 * (another type, or too near the chunk's end): 0 with run->p on that record; -EBADMSG with
 * run->p on a damaged record; -ENOMEM etc. with m->err set. */
static int trcfile__fast_run(struct trcfile__sum *m, struct trcfile__run *run)
{
	const uint8_t *p = run->p;
	const uint8_t *const fast_end = run->fast_end;
	uint64_t ts = run->ts;
	uint32_t left = run->left;
	struct trcfile__frame *stk = m->stack;
	size_t sn = m->stack_n, scap = m->stack_cap;
	struct trcfile__idstat *ids = m->ids;
	const uint32_t *const dense = m->dense;
	int rc = 0;
	while (left && p < fast_end) {
		const uint8_t *q = p;
		uint64_t d, a, v;
		uint32_t ix;
		struct trcfile__idstat *st;
		const uint8_t t0 = *q;
		if (t0 == TRC_REC_SPAN_BEGIN || t0 == TRC_REC_SPAN_END) {
			q = trcfile__get_varint_fast(q + 1, &d);
			if (trcfile__unlikely(!q))
				goto bad;
			q = trcfile__get_varint_fast(q, &a);
			if (trcfile__unlikely(!q || a > UINT32_MAX))
				goto bad;
			if (trcfile__likely(a < TRCFILE__DENSE_IDS && (ix = dense[a]) != 0)) {
				st = &ids[ix - 1];
			} else {
				st = trcfile__idstat_slow(m, (uint32_t)a);
				if (!st)
					goto fail;
				ids = m->ids;
			}
			ts += d;
			if (t0 == TRC_REC_SPAN_BEGIN) {
				st->begins++;
				if (trcfile__likely(sn < scap)) {
					stk[sn].name_id = (uint32_t)a;
					stk[sn].ts = ts;
					sn++;
				} else {
					m->stack_n = sn;
					trcfile__span_begin(m, (uint32_t)a, ts);
					stk = m->stack;
					sn = m->stack_n;
					scap = m->stack_cap;
				}
			} else {
				st->ends++;
				if (trcfile__likely(sn && stk[sn - 1].name_id == a)) {
					/* Deltas are >= 0 inside a chunk here (negative ones take
					 * the checked path), but the begin may be from an earlier
					 * chunk stamped later (time stepped back: a TSC refit):
					 * such a span lasts 0, as on the slow path. */
					uint64_t begin = stk[--sn].ts;
					uint64_t dur = ts >= begin ? ts - begin : 0;
					st->spans++;
					st->span_total_ns += dur;
					if (dur > st->span_max_ns)
						st->span_max_ns = dur;
					unsigned g, sub;
					trcfile__hist_bucket(dur, &g, &sub);
					if (trcfile__likely(g == st->hot_g && st->hot_grp)) {
						st->hot_grp[sub]++;
					} else if (st->hist && st->hist->group[g]) {
						st->hot_g = g;
						st->hot_grp = st->hist->group[g];
						st->hot_grp[sub]++;
					} else if (trcfile__hist_add(m, st, dur)) {
						m->err = trcfile__fail(m->r, -ENOMEM,
								       "out of memory");
						goto fail;
					}
				} else {
					m->stack_n = sn;
					trcfile__span_end(m, st, (uint32_t)a, ts);
					sn = m->stack_n;
					if (m->err)
						goto fail;
				}
			}
		} else if (t0 == TRC_REC_COUNTER || t0 == TRC_REC_INSTANT) {
			q = trcfile__get_varint_fast(q + 1, &d);
			if (trcfile__unlikely(!q))
				goto bad;
			q = trcfile__get_varint_fast(q, &a);
			if (trcfile__unlikely(!q || a > UINT32_MAX))
				goto bad;
			q = trcfile__get_varint_fast(q, &v);
			if (trcfile__unlikely(!q))
				goto bad;
			if (trcfile__likely(a < TRCFILE__DENSE_IDS && (ix = dense[a]) != 0)) {
				st = &ids[ix - 1];
			} else {
				st = trcfile__idstat_slow(m, (uint32_t)a);
				if (!st)
					goto fail;
				ids = m->ids;
			}
			ts += d;
			if (t0 == TRC_REC_INSTANT) {
				st->instants++;
			} else {
				int64_t val = trcfile__unzigzag(v);
				st->counters++;
				if (val < st->counter_min)
					st->counter_min = val;
				if (val > st->counter_max)
					st->counter_max = val;
				if (ts >= st->counter_last_ts) {
					st->counter_last_ts = ts;
					st->counter_last = val;
				}
			}
		} else {
			break; /* not ours: the generic path takes it */
		}
		p = q;
		left--;
	}
	goto out;
bad:
	rc = -EBADMSG;
	goto out;
fail:
	rc = m->err ? m->err : -ENOMEM;
out:
	run->p = p;
	run->ts = ts;
	run->left = left;
	m->stack_n = sn;
	return rc;
}

/* One stream, chunk by chunk: the fast loop for runs of hot records, the checked decoder and
 * trcfile__sum_generic for everything else (other types, the last TRCFILE__FAST_MARGIN bytes
 * of a chunk). */
static int trcfile__sum_stream(struct trcfile__sum *m, unsigned sidx, uint64_t *last_rss_ts)
{
	struct trcfile_summary *s = m->s;
	const struct trcfile_stream_info *si = &m->r->streams[sidx];
	struct trcfile_summary_thread *th = NULL;
	if (si->kind == TRC_STREAM_THREAD && si->records) {
		th = trcfile__thread(m, si->pid, si->tid);
		if (!th)
			return m->err;
	}
	struct trcfile_cursor *c = trcfile_cursor_new(m->r, sidx);
	if (!c)
		return m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
	m->stack_n = 0;
	/* Types seen by the generic path only: the hot types are counted per name id, and
	 * their totals come from there (trcfile__sum_hot_types). */
	uint64_t per_type[32] = {0};
	uint64_t decoded = 0; /* records of the stream, from the chunk counts */
	uint64_t first = UINT64_MAX, last = 0;
	int rc;
	while (!m->err && (rc = trcfile__cursor_load_next(c)) == 1) {
		if (c->skipped) {
			/* A damaged chunk was skipped: as after a LOST record, the spans open
			 * across it end as unknown. */
			c->skipped = false;
			s->spans_cut_by_loss += m->stack_n;
			m->stack_n = 0;
		}
		const uint8_t *end = c->pend;
		struct trcfile__run run = {
			.p = c->p,
			.fast_end = end - c->p > (ptrdiff_t)TRCFILE__FAST_MARGIN
					    ? end - TRCFILE__FAST_MARGIN
					    : c->p,
			.ts = c->coder.ts,
			.left = c->left,
		};
		decoded += run.left;
		/* The fast loop only adds to ts, so the chunk's smallest time in it is where it
		 * starts: first_ts (the first record's time, delta 0) or right after a generic
		 * record, which updates first itself. */
		if (run.ts < first)
			first = run.ts;
		while (run.left) {
			rc = trcfile__fast_run(m, &run);
			if (rc == -EBADMSG)
				goto bad;
			if (rc)
				goto out;
			if (!run.left)
				break;
			/* One record the slow way. */
			struct trc_record rec;
			if (run.ts > last)
				last = run.ts;
			c->coder.ts = run.ts;
			const uint8_t *q = run.p;
			if (trcfile__decode(&q, end, &c->coder, &rec) != 0)
				goto bad;
			run.p = q;
			run.ts = rec.ts_ns;
			run.left--;
			per_type[rec.type]++;
			trcfile__sum_generic(m, &rec, th, last_rss_ts);
			if (m->err)
				goto out;
			if (run.ts < first)
				first = run.ts;
			if (run.ts > last)
				last = run.ts;
		}
		if (run.ts > last)
			last = run.ts;
		c->p = run.p;
		c->coder.ts = run.ts;
		c->left = 0;
		rc = trcfile__cursor_chunk_done(c);
		if (rc)
			break;
		continue;
	bad:
		/* Let the cursor's own decoder say where (same message as every reader). */
		c->p = run.p;
		c->coder.ts = run.ts;
		c->left = run.left;
		{
			struct trc_record dummy;
			rc = trcfile_cursor_next(c, &dummy);
			if (rc >= 0)
				rc = trcfile__fail(m->r, -EBADMSG, "damaged chunk");
		}
		break;
	}
out:
	trcfile_cursor_free(c);
	if (m->err)
		return m->err;
	if (rc < 0)
		return m->err = rc;
	s->spans_open_at_end += m->stack_n;
	uint64_t events = decoded;
	for (unsigned t = 0; t < TRC_REC_TYPE_COUNT; t++) {
		if (!trcfile__hot_type(t))
			s->per_type[t] += per_type[t];
		if (!trc_rec_is_event(t))
			events -= per_type[t];
	}
	s->records += decoded;
	s->events_recorded += events;
	s->allocs += per_type[TRC_REC_ALLOC];
	s->frees += per_type[TRC_REC_FREE];
	if (first <= last) {
		if (!s->first_ts_ns || first < s->first_ts_ns)
			s->first_ts_ns = first;
		if (last > s->last_ts_ns)
			s->last_ts_ns = last;
	}
	if (th) {
		th->events += events;
		if (first <= last) {
			if (!th->first_ts_ns || first < th->first_ts_ns)
				th->first_ts_ns = first;
			if (last > th->last_ts_ns)
				th->last_ts_ns = last;
		}
	}
	return 0;
}

/* ---- live allocation bytes (needs time order across streams) ---------------------------- */

static void trcfile__live_rec(struct trcfile__sum *m, struct trcfile_allocmap *live,
			      const struct trc_record *rec, uint64_t *cur)
{
	struct trcfile_summary *s = m->s;
	uint64_t size = 0;
	if (rec->type == TRC_REC_ALLOC) {
		int err = trcfile_allocmap_put(live, rec->alloc.addr, rec->alloc.size, &size);
		if (err == -ENOSPC) {
			s->live_approximate = true;
			return;
		}
		if (err) {
			m->err = trcfile__fail(m->r, err, "out of memory");
			return;
		}
		*cur = *cur - size + rec->alloc.size;
		if (*cur > s->live_peak_bytes)
			s->live_peak_bytes = *cur;
	} else if (rec->type == TRC_REC_FREE) {
		if (trcfile_allocmap_take(live, rec->alloc.addr, &size)) {
			*cur -= size;
			s->free_bytes += size;
		} else if (rec->alloc.addr) {
			s->frees_unknown++;
		}
	}
}

static int trcfile__sum_live(struct trcfile__sum *m)
{
	struct trcfile_allocmap *live = trcfile_allocmap_new(TRCFILE__LIVE_MAX_ENTRIES);
	if (!live)
		return m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
	uint64_t cur = 0;
	int rc;
	struct trc_record rec;
	struct trcfile_iter *it = trcfile_iter_new(m->r);
	if (!it) {
		trcfile_allocmap_free(live);
		if (!m->r->errmsg[0])
			trcfile__fail(m->r, -ENOMEM, "out of memory");
		return m->err = -ENOMEM;
	}
	while (!m->err && (rc = trcfile_iter_next(it, &rec, NULL)) == 1)
		trcfile__live_rec(m, live, &rec, &cur);
	trcfile_iter_free(it);
	trcfile_allocmap_free(live);
	if (!m->err && rc < 0)
		m->err = rc;
	m->s->live_end_bytes = cur;
	return m->err;
}

/* ---- aggregation by name string --------------------------------------------------------- */

struct trcfile__byname {
	const char *name;
	struct trcfile__idstat *st;
};

static int trcfile__cmp_byname(const void *a, const void *b)
{
	const struct trcfile__byname *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->st->id < y->st->id ? -1 : x->st->id > y->st->id;
}

static int trcfile__cmp_thread(const void *a, const void *b)
{
	const struct trcfile_summary_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int trcfile__sum_names(struct trcfile__sum *m)
{
	struct trcfile_summary *s = m->s;
	size_t n = m->n_ids + (m->other_used ? 1 : 0);
	if (!n)
		return 0;
	struct trcfile__byname *v = calloc(n, sizeof(*v));
	char(*fallback)[16] = calloc(n, sizeof(*fallback));
	s->names = calloc(n, sizeof(*s->names));
	if (!v || !fallback || !s->names) {
		free(v);
		free(fallback);
		return m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->n_ids; i++) {
		const char *name = trcfile_reader_name(m->r, m->ids[i].id, NULL);
		if (!name) {
			snprintf(fallback[i], sizeof(fallback[i]), "#%u", m->ids[i].id);
			name = fallback[i];
		}
		v[i] = (struct trcfile__byname){name, &m->ids[i]};
	}
	/* Ids past the table's bound, all together (hostile or broken input only). */
	if (m->other_used)
		v[m->n_ids] = (struct trcfile__byname){TRCFILE__OTHER_NAMES, &m->other};
	qsort(v, n, sizeof(*v), trcfile__cmp_byname);
	for (size_t i = 0; i < n && !m->err;) {
		size_t j = i;
		struct trcfile_summary_name *out = &s->names[s->n_names];
		struct trcfile__hist h = {0};
		uint64_t last_ts = 0;
		bool have_counter = false;
		memset(out, 0, sizeof(*out));
		for (; j < n && strcmp(v[j].name, v[i].name) == 0; j++) {
			const struct trcfile__idstat *st = v[j].st;
			out->begins += st->begins;
			out->ends += st->ends;
			out->instants += st->instants;
			out->counters += st->counters;
			out->spans += st->spans;
			out->span_total_ns += st->span_total_ns;
			if (st->span_max_ns > out->span_max_ns)
				out->span_max_ns = st->span_max_ns;
			if (st->counters) {
				if (!have_counter || st->counter_min < out->counter_min)
					out->counter_min = st->counter_min;
				if (!have_counter || st->counter_max > out->counter_max)
					out->counter_max = st->counter_max;
				if (!have_counter || st->counter_last_ts >= last_ts) {
					last_ts = st->counter_last_ts;
					out->counter_last = st->counter_last;
				}
				have_counter = true;
			}
			if (st->hist && trcfile__hist_merge(&h, st->hist))
				m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
		}
		out->span_p50_ns = trcfile__hist_quantile(&h, 0.50, out->span_max_ns);
		out->span_p99_ns = trcfile__hist_quantile(&h, 0.99, out->span_max_ns);
		trcfile__hist_free_groups(&h);
		out->name = strdup(v[i].name);
		if (!out->name)
			m->err = trcfile__fail(m->r, -ENOMEM, "out of memory");
		else
			s->n_names++;
		i = j;
	}
	free(v);
	free(fallback);
	return m->err;
}

/* ---- entry points ----------------------------------------------------------------------- */

void trcfile_summary_free(struct trcfile_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_threads; i++)
		free((char *)s->threads[i].name);
	free(s->threads);
	for (size_t i = 0; i < s->n_names; i++)
		free((char *)s->names[i].name);
	free(s->names);
	for (size_t i = 0; i < s->n_notes; i++)
		free((char *)s->notes[i].text);
	free(s->notes);
	memset(s, 0, sizeof(*s));
}

static int trcfile__cmp_note(const void *a, const void *b)
{
	const struct trcfile_summary_note *x = a, *y = b;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

int trcfile_summary_compute(struct trcfile_reader *r, struct trcfile_summary *s)
{
	memset(s, 0, sizeof(*s));
	struct trcfile__sum m = {.r = r, .s = s, .root_pid = r->hdr.pid};
	trcfile__map_init(&m.id_map, TRCFILE__NAME_IDS_MAX);
	trcfile__map_init(&m.thread_map, TRCFILE__THREADS_MAX);
	m.hist_budget = TRCFILE__HIST_BUDGET_BYTES;
	m.other.counter_min = INT64_MAX;
	m.other.counter_max = INT64_MIN;
	m.dense = calloc(TRCFILE__DENSE_IDS, sizeof(*m.dense));
	if (!m.dense) {
		m.err = trcfile__fail(r, -ENOMEM, "out of memory");
		goto out;
	}
	/* Time range for the sparkline, from the index. */
	m.t0 = UINT64_MAX;
	m.t1 = 0;
	for (unsigned i = 0; i < r->n_streams; i++) {
		for (size_t k = r->stream_chunk0[i]; k < r->stream_chunk0[i + 1]; k++) {
			const struct trcfile__chunk_ref *c = &r->chunks[k];
			uint64_t lo = c->first_ts < c->last_ts ? c->first_ts : c->last_ts;
			uint64_t hi = c->first_ts < c->last_ts ? c->last_ts : c->first_ts;
			if (lo < m.t0)
				m.t0 = lo;
			if (hi > m.t1)
				m.t1 = hi;
		}
	}
	if (r->hdr.start_mono_ns && r->hdr.start_mono_ns < m.t0)
		m.t0 = r->hdr.start_mono_ns;
	if (m.t0 > m.t1)
		m.t0 = m.t1 = 0;

	uint64_t last_rss_ts = 0;
	for (unsigned i = 0; i < r->n_streams && !m.err; i++)
		trcfile__sum_stream(&m, i, &last_rss_ts);
	if (!m.err)
		trcfile__sum_hot_types(&m);
	if (!m.err && s->allocs + s->frees)
		trcfile__sum_live(&m);
	if (!m.err)
		trcfile__sum_names(&m);
	if (m.err)
		goto out;

	if (s->n_threads)
		qsort(s->threads, s->n_threads, sizeof(*s->threads), trcfile__cmp_thread);
	if (s->n_notes)
		qsort(s->notes, s->n_notes, sizeof(*s->notes), trcfile__cmp_note);
	s->start_ns = r->hdr.start_mono_ns && r->hdr.start_mono_ns <= s->first_ts_ns
			      ? r->hdr.start_mono_ns
			      : s->first_ts_ns;
	s->duration_ns = s->last_ts_ns > s->start_ns ? s->last_ts_ns - s->start_ns : 0;
	if (m.have_sample) {
		s->n_spark = TRCFILE_SPARK_COLUMNS;
		/* An empty column means no sample fell in it: RSS stayed where it was. */
		uint64_t prev = s->spark_bytes[0];
		for (unsigned i = 0; i < TRCFILE_SPARK_COLUMNS; i++) {
			if (!s->spark_bytes[i])
				s->spark_bytes[i] = prev;
			prev = s->spark_bytes[i];
		}
	}
	if (s->has_exit && s->rss_exit_maxrss_bytes) {
		uint64_t b = s->rss_exit_buffers_bytes;
		s->rss_peak_bytes = s->rss_exit_maxrss_bytes > b ? s->rss_exit_maxrss_bytes - b : 0;
		s->rss_peak_source = TRCFILE_RSS_PEAK_EXIT;
	} else if (m.have_sample) {
		s->rss_peak_bytes = s->rss_peak_sampled_bytes;
		s->rss_peak_source = TRCFILE_RSS_PEAK_SAMPLED;
	}
	s->truncated = r->stats.truncated;
out:
	for (size_t i = 0; i < m.n_ids; i++)
		trcfile__hist_free(m.ids[i].hist);
	trcfile__hist_free(m.other.hist);
	free(m.ids);
	free(m.dense);
	free(m.stack);
	trcfile__map_destroy(&m.id_map);
	trcfile__map_destroy(&m.thread_map);
	if (m.err)
		trcfile_summary_free(s);
	return m.err;
}
