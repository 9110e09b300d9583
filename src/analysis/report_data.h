/* report_data.h - the aggregates `trace-dump report` draws, bounded whatever the trace's size.
 *
 * Purpose: the figures of the report's pictures that the summary does not keep: RSS of each
 * process over time, cut into REPORT_RSS_COLS columns of the run (each column: its largest
 * sample and that sample's time, so the chart's maximum is the summary's sampled maximum);
 * each thread's events per REPORT_ACT_COLS columns; the durations of each span and function
 * name by power of two (histogram.h's groups); the folded stacks by time and by bytes
 * allocated (flame.h), the REPORT_FLAME_STACKS heaviest kept within REPORT_FLAME_BYTES of
 * text, the rest summed into one "(other stacks)" weight. The report's tables and numbers
 * come from the summary (dump_figures.h), never from here: these are shapes.
 *
 * Durations follow each stream's nesting: a span end closes the innermost open frame when it
 * is a span (summary.h's rule), a function exit its innermost open call (functions.h's); a
 * LOST record or a damaged chunk cuts what is open (its end is unknown).
 *
 * Memory: per process with samples REPORT_RSS_COLS columns, per thread REPORT_ACT_COLS, per
 * name HIST_GROUPS counts (within the budget their histogram would take), the trie of frames
 * (report_trie.h, flame.h's bound) and at the end its flame, the kept stacks; never per
 * record.
 * Threads: the reader's. Errors: 0 or -errno (the reader's message set for read errors).
 */
#ifndef TRC_REPORT_DATA_H
#define TRC_REPORT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "histogram.h"
#include "symbols.h"
#include "trcfile.h"

struct trcfile_cursor;

#define REPORT_RSS_COLS 600u
#define REPORT_ACT_COLS 200u
#define REPORT_FLAME_STACKS 4000u
#define REPORT_FLAME_BYTES (1u << 20)
#define REPORT_OTHER_STACKS "(other stacks)"

struct report_rss_col {
	uint64_t ts_ns; /* 0: no sample in the column */
	uint64_t rss_bytes; /* the program's RSS (trace buffers taken out) */
};

struct report_rss {
	uint32_t pid;
	uint64_t samples, max_bytes;
	struct report_rss_col cols[REPORT_RSS_COLS];
};

struct report_thread {
	uint32_t pid, tid;
	uint64_t events;
	uint64_t cols[REPORT_ACT_COLS];
};

struct report_durations {
	char *name; /* owned */
	uint64_t n; /* durations counted */
	uint64_t bins[HIST_GROUPS]; /* bin g: histogram.h's group g */
};

struct report_stack {
	char *stack; /* owned: "a;b;c" */
	uint64_t weight;
};

struct report_flame {
	struct report_stack *v; /* heaviest first */
	size_t n;
	uint64_t total, other_weight; /* other: the weight of the stacks not kept */
	uint64_t other_stacks;
};

struct report_data {
	uint64_t t0_ns, t1_ns; /* the columns' range */
	struct report_rss *rss; /* by pid */
	size_t n_rss;
	struct report_thread *threads; /* by pid, tid */
	size_t n_threads;
	struct report_durations *spans, *funcs; /* by name */
	size_t n_spans, n_funcs;
	uint64_t durations_dropped; /* past the histogram budget, or deeper than tracked */
	struct report_flame by_time, by_bytes;
};

/* Computes d for r over [t0_ns, t1_ns] (syms may be NULL). One pass over each stream. */
int report_data_compute(struct trcfile_reader *r, struct sym_resolver *syms, uint64_t t0_ns,
			uint64_t t1_ns, struct report_data *d);
/* Frees what d owns and zeroes it. Accepts a zeroed d. */
void report_data_free(struct report_data *d);

/* The same pass on the summary's chunks (summary_compute_chunks: the bytes read and
 * decompressed once for both): report_pass_new before the summary, report_pass_chunk its
 * summary_chunk_fn, then report_pass_finish with the summary's range, which gives what
 * report_data_compute would. The columns are cut over the range the file's index gives
 * (summary.h's start_ns to last_ts_ns as its chunks' times say); when the summary's differs
 * (a damaged chunk at a stream's end, time stepping back) or a chunk failed, finish makes its
 * own pass instead. new: NULL out of memory; finish frees p and returns as
 * report_data_compute; free (NULL accepted) drops a pass not finished. */
struct report_pass;
struct report_pass *report_pass_new(struct trcfile_reader *r);
int report_pass_chunk(void *ctx, unsigned sidx, const struct trcfile_cursor *loaded);
int report_pass_finish(struct report_pass *p, struct sym_resolver *syms, uint64_t t0_ns,
		       uint64_t t1_ns, struct report_data *d);
void report_pass_free(struct report_pass *p);

/* The column of ts in [t0, t1] cut into cols (clamped to the ends). */
static inline unsigned report_col(uint64_t ts, uint64_t t0, uint64_t t1, unsigned cols)
{
	if (ts <= t0 || t1 <= t0)
		return 0;
	if (ts >= t1)
		return cols - 1;
	return (unsigned)((unsigned __int128)(ts - t0) * cols / (t1 - t0 + 1));
}

#endif /* TRC_REPORT_DATA_H */
