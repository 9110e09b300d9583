/* summary_priv.h - the state of one summary computation, shared by the summary's files.
 *
 * Purpose: summary_compute (summary.c) is split by job, each file owning one part of
 * this state and the figures it produces:
 *   summary_pass.c     one stream, chunk by chunk: decodes every record, hands each to its part
 *   summary_names.c    per name id (counts, counter range, span durations), then by name string
 *   summary_threads.c  per thread (events, lost, time range, name)
 *   summary_spans.c    span matching: open spans of the stream being walked
 *   summary_rss.c      RSS: samples, the EXIT record, peak, sparkline
 *   summary_live.c     live allocation bytes (a merged pass over every stream)
 * A part's fields are written by its own file; summary_pass.c's hot loop also reads the name
 * table and works the span stack directly for the common cases of matching (a push when there
 * is room, a pop when the top matches; see there).
 *
 * Errors: the first error is kept in m->err, with its message in the reader
 * (trcfile_reader_fail); every part stops adding once it is set.
 *
 * Threads: the reader's thread.
 */
#ifndef TRC_SUMMARY_PRIV_H
#define TRC_SUMMARY_PRIV_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "summary.h"
#include "trcfile_scan.h"
#include "u64map.h"

/* Name ids below this are found through a dense array (no hashing), the rest through a map. */
#define SUMMARY__DENSE_IDS 65536u

/* One name id's figures (summary_names.c). */
struct summary__idstat {
	uint32_t id;
	uint64_t begins, ends, instants, counters;
	uint64_t spans, span_total_ns, span_max_ns;
	int64_t counter_min, counter_max, counter_last;
	uint64_t counter_last_ts;
	struct hist *hist; /* durations; NULL until the first span ends */
	struct hist_hot hot; /* where the last duration was counted */
	uint64_t span_min_ns; /* (its place keeps the size a power of two: see below) */
};
_Static_assert((sizeof(struct summary__idstat) & (sizeof(struct summary__idstat) - 1)) == 0,
	       "the per-name entry's size is a power of two");

struct summary__names {
	struct summary__idstat *ids;
	size_t n, cap;
	uint32_t *dense; /* id -> index + 1, for ids below SUMMARY__DENSE_IDS */
	struct u64map map; /* id -> index */
	struct summary__idstat other; /* ids past the table's bound, together */
	bool other_used;
	uint64_t hist_budget; /* bytes histograms may still take */
};

/* An open span or function (summary_spans.c). */
struct summary__frame {
	uint32_t name_id; /* a span's name id; 0 for a function */
	uint32_t func; /* 1: a function (func_enter), 0: a span */
	uint64_t ts;
};

struct summary__spans {
	struct summary__frame *stack; /* innermost last */
	size_t n, cap;
};

struct summary__threads {
	struct u64map map; /* pid << 32 | tid -> index in s->threads */
	size_t cap;
};

struct summary__rss {
	uint64_t t0, t1; /* the sparkline's time range */
	uint32_t root_pid; /* the traced program (header pid) */
	bool have_sample;
	uint64_t last_sample_ts;
	uint64_t exit_ts;
};

/* What is gathered of one process before its figures are decided (summary_processes.c),
 * beside its entry of s->processes (same index). */
struct summary__proc_acc {
	uint64_t cols[SUMMARY_SPARK_COLUMNS]; /* its largest sample per column, 0: none */
	uint64_t command_ts; /* time of the PROCESS record kept (the latest: after an exec) */
	uint64_t sample_first_ts, sample_last_ts;
	uint64_t self_ts, self_hwm, self_buffers; /* its own EXIT record (the latest) */
	uint64_t wait_maxrss, wait_buffers; /* trace-run's (wait4) EXIT record */
	/* With VmHWM in every sample (status source), the moment of the peak is bracketed by
	 * samples: bounds of the program's own peak from each sample i (summary_processes.c). */
	uint64_t hwm_low, hwm_high; /* max (hwm_i - buffers up to i), max (hwm_i - buffers_i-1) */
	uint64_t last_buffers, buffers_upto;
	bool hwm_all; /* every sample so far had VmHWM, in time order */
	bool has_self, has_wait, has_sample;
	/* The EXIT record's buffers are the most they held at once (TRC_EXIT_BUFFERS_PEAK), not
	 * their share at exit. */
	bool self_buffers_peak, wait_buffers_peak;
};

struct summary__procs {
	struct u64map map; /* pid -> index */
	size_t cap;
	struct summary__proc_acc *acc;
};

struct summary__state {
	struct trcfile_reader *r;
	struct summary *s;
	struct summary__names names;
	struct summary__threads threads;
	struct summary__spans spans;
	struct summary__rss rss;
	struct summary__procs procs;
	size_t cap_notes;
	summary_feed_fn feed; /* also given the merged pass's records (NULL: none) */
	void *feed_ctx;
	summary_chunk_fn chunk; /* also given the per-stream pass's chunks (NULL: none) */
	void *chunk_ctx;
	int err;
};

/* Sets the first error: "out of memory" for -ENOMEM. Returns m->err. */
static inline int summary__nomem(struct summary__state *m)
{
	if (!m->err)
		m->err = trcfile_reader_fail(m->r, -ENOMEM, "out of memory");
	return m->err;
}

/* A NUL-terminated copy of (s, len) (s may be NULL when len is 0). NULL on out of memory. */
static inline char *summary__strndup(const char *s, uint32_t len)
{
	char *c = malloc((size_t)len + 1);
	if (c) {
		if (len)
			memcpy(c, s, len);
		c[len] = 0;
	}
	return c;
}

/* ---- summary_names.c ---- */

int summary__names_init(struct summary__state *m);
void summary__names_free(struct summary__names *n);
/* The figures of name id `id`, created on first use (the shared `other` entry past the table's
 * bound). NULL on out of memory (m->err set). */
struct summary__idstat *summary__idstat_slow(struct summary__state *m, uint32_t id);

static inline struct summary__idstat *summary__idstat(struct summary__state *m, uint32_t id)
{
	uint32_t ix;
	if (__builtin_expect(id < SUMMARY__DENSE_IDS && (ix = m->names.dense[id]) != 0, 1))
		return &m->names.ids[ix - 1];
	return summary__idstat_slow(m, id);
}

/* A span of st's name ended after d ns. 0 or -ENOMEM (m->err set). */
static inline int summary__span_duration(struct summary__state *m, struct summary__idstat *st,
					 uint64_t d)
{
	if (!st->spans++ || d < st->span_min_ns)
		st->span_min_ns = d;
	st->span_total_ns += d;
	if (d > st->span_max_ns)
		st->span_max_ns = d;
	int rc = hist_count(&st->hist, &st->hot, d, &m->names.hist_budget);
	if (__builtin_expect(rc == 0, 1))
		return 0;
	if (rc > 0) {
		m->s->percentiles_approximate = true; /* over budget: this one left out */
		return 0;
	}
	return summary__nomem(m);
}

/* A counter record's value. */
static inline void summary__counter(struct summary__idstat *st, int64_t val, uint64_t ts)
{
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

/* After every pass: the per-type counts of the name-counted types, and s->names (one entry
 * per distinct string, sorted). 0 or -errno. */
int summary__names_finish(struct summary__state *m);

/* ---- summary_threads.c ---- */

void summary__threads_init(struct summary__threads *t);
void summary__threads_free(struct summary__threads *t);
/* The summary's entry for (pid, tid), created on first use. NULL with m->err set. */
struct summary_thread *summary__thread(struct summary__state *m, uint32_t pid, uint32_t tid);
/* A THREAD record: the thread's name, as it was last set. */
void summary__thread_named(struct summary__state *m, const struct trc_record *rec);
/* Sorts s->threads by (pid, tid). */
void summary__threads_finish(struct summary__state *m);

/* ---- summary_spans.c ---- */

/* A span (func 0) or function (func 1) begins on the stream being walked (any depth). */
void summary__span_begin(struct summary__state *m, uint32_t id, uint32_t func, uint64_t ts);
/* A span_end (func 0, name id) or func_exit (func 1) closes the innermost open frame, whatever
 * it is (FORMAT.md's rule); a span closed is charged to its begin's name. */
void summary__span_end(struct summary__state *m, uint32_t id, uint32_t func, uint64_t ts);
/* Spans (not functions) open on the stack. */
uint64_t summary__spans_open(const struct summary__spans *sp);
void summary__spans_free(struct summary__spans *sp);

/* ---- summary_rss.c ---- */

/* Before the passes: the sparkline's time range (from the index), the traced program. */
void summary__rss_init(struct summary__state *m);
void summary__rss_sample(struct summary__state *m, const struct trc_record *rec);
/* The sparkline column (spark_bytes, lost_spark) a time falls in. */
unsigned summary__spark_col(const struct summary__state *m, uint64_t ts_ns);
void summary__rss_exit(struct summary__state *m, const struct trc_record *rec);
/* After the passes: the sparkline's empty columns, the peak and where it came from. */
void summary__rss_finish(struct summary__state *m);

/* ---- summary_processes.c ---- */

void summary__procs_init(struct summary__procs *p);
void summary__procs_free(struct summary__procs *p);
/* A PROCESS, RSS or EXIT record (any pid). */
void summary__procs_record(struct summary__state *m, const struct trc_record *rec);
/* After the passes (and summary__rss_finish): each process's peak interval and source, the
 * tree's total over time, the list sorted by pid. */
void summary__procs_finish(struct summary__state *m);

/* ---- summary_live.c ---- */

/* Live allocation bytes (peak, at the end), frees of unknown addresses: a merged pass. 0 or
 * -errno (m->err set). */
int summary__live(struct summary__state *m);

/* ---- summary_pass.c ---- */

/* Walks stream sidx and adds what it holds. 0 or -errno (m->err set). */
int summary__pass_stream(struct summary__state *m, unsigned sidx);
/* Sorts the notes kept by time. */
void summary__notes_finish(struct summary__state *m);

#endif /* TRC_SUMMARY_PRIV_H */
