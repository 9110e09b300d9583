/* summary.h - what happened in a trace, what it cost, what was lost: `trace-dump summary`.
 *
 * Purpose: the figures trace-dump summary prints (text and JSON), computed from a reader:
 * counts per record type, per span/counter name and per thread, lost records, span durations
 * and their percentiles, allocation totals and live bytes, the traced program's RSS (exact
 * peak and sampled series, trace buffers taken out), notes. How they are computed, and the
 * bounds that keep its memory small whatever the file says, is in summary.c.
 *
 * Threads: summary_compute runs on the reader's thread (it uses the reader); a
 * computed summary is plain data.
 *
 * Errors: compute returns 0 or -errno with the reader's message set; free accepts NULL.
 */
#ifndef TRC_SUMMARY_H
#define TRC_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trcfile.h"
#include "peak.h" /* struct peak: a peak RSS as an interval, and its rule */

/* Events are the records that are not metadata: span begin/end, instant, counter, alloc,
 * free, function enter/exit. Lost is the sum of LOST counts, except TRC_LOST_SAMPLER_LATE
 * (sampler ticks, not events), counted in rss_ticks_skipped. */
struct summary_thread {
	uint32_t pid, tid;
	const char *name; /* owned by the summary; "tid N" when the trace does not name it */
	uint64_t events, lost;
	uint64_t waits, waited_ns; /* its waits for the drain (WAIT records) */
	uint64_t alloc_bytes; /* bytes its allocation records asked for */
	uint64_t first_ts_ns, last_ts_ns;
};

/* One process's heap (summary_live.c): what its threads allocated, its live bytes' peak, and
 * its live bytes when it exited (exited: its EXIT record was seen), else at the trace's end. */
struct summary_heap {
	uint32_t pid;
	bool exited;
	uint64_t allocs, alloc_bytes, live_peak_bytes, live_end_bytes;
};

struct summary_name {
	const char *name; /* owned by the summary; "#<id>" when the id has no NAME record,
			   * "(other names)" for ids past the summary's table bound */
	uint32_t name_len; /* its bytes: a NAME string may hold NUL bytes (name is also
			    * NUL-terminated after them) */
	uint64_t begins, ends, instants, counters;
	/* span durations (matched begin/end of the same stream), ns */
	uint64_t spans, span_total_ns, span_min_ns, span_max_ns, span_p50_ns, span_p99_ns;
	int64_t counter_min, counter_max, counter_last;
};

struct summary_note {
	uint64_t ts_ns;
	const char *text;
};

enum summary_rss_peak_source {
	SUMMARY_RSS_PEAK_NONE = 0, /* no EXIT record and no sample */
	SUMMARY_RSS_PEAK_EXIT = 1, /* exact: ru_maxrss at exit minus buffers */
	SUMMARY_RSS_PEAK_SAMPLED = 2 /* fallback: the largest sample */
};

#define SUMMARY_SPARK_COLUMNS 60
#define SUMMARY_SPARK_NONE UINT64_MAX /* a sparkline column with nothing known */
/* Fewer samples than this cannot show a shape over SUMMARY_SPARK_COLUMNS columns: the summary
 * says so, and how to sample more often. */
#define SUMMARY_SPARK_MIN_SAMPLES 5
#define SUMMARY_MAX_PROCESSES 65536

enum summary_process_peak_source {
	SUMMARY_PROC_PEAK_NONE = 0, /* neither an exit figure nor a sample */
	SUMMARY_PROC_PEAK_KERNEL = 1, /* the kernel's high-water mark (ru_maxrss or VmHWM) */
	SUMMARY_PROC_PEAK_SAMPLED = 2 /* the largest sample: no exit figure (killed, _exit...) */
};

/* One process of the traced tree (PROCESS records, samples, EXIT records), trace buffers
 * excluded from every figure. */
struct summary_process {
	uint32_t pid, ppid; /* ppid 0: unknown (the process never attached) */
	const char *command; /* owned; arguments separated by NUL bytes; NULL when unknown */
	uint32_t command_len;
	bool exit_known; /* exit_status holds the status as from waitpid */
	int32_t exit_status;
	struct peak peak; /* peak.bounded: a figure of it was not believed */
	enum summary_process_peak_source peak_source;
	uint64_t hwm_bytes, exit_buffers_bytes; /* the exit figure used, buffers included */
	bool exit_buffers_peak; /* exit_buffers_bytes is the most they held at once (counted) */
	uint64_t rss_samples, rss_sampled_max_bytes, buffers_max_bytes;
	uint64_t first_ts_ns, last_ts_ns; /* of its samples and records */
};

struct summary {
	uint64_t first_ts_ns, last_ts_ns; /* over all records; 0 when none */
	uint64_t start_ns; /* header start_mono_ns, or first_ts_ns if unset */
	uint64_t duration_ns; /* last_ts_ns - start_ns */
	uint64_t records;
	uint64_t events_recorded, events_lost, rss_ticks_skipped;
	uint64_t per_type[TRC_REC_TYPE_COUNT];
	uint64_t lost_per_reason[8];
	/* What a thread with a full ring did (header: TRCFILE_WHEN_FULL_*), and how long threads
	 * waited for the drain under "wait" (WAIT records): waits, their total (summed over the
	 * threads) and the longest one. All 0 when nothing waited. */
	uint32_t when_full;
	uint64_t waits, waited_ns, wait_max_ns;

	struct summary_thread *threads; /* sorted by pid, tid */
	size_t n_threads;
	struct summary_name *names; /* sorted by name; one entry per distinct string */
	size_t n_names;
	struct summary_note *notes; /* in time order (at most 1000 kept) */
	size_t n_notes;
	uint64_t notes_dropped;

	/* The span rule (FORMAT.md): an end closes the innermost open span or function of its
	 * stream. Unmatched: a span_end with nothing open. Mismatched: an end that closed a span
	 * of another name, or a span and a function closing each other. Open at end: spans (not
	 * functions) never closed. Cut by loss: open when a LOST record of their stream (or a
	 * damaged chunk skipped) came: their end is unknown, never paired across the gap. */
	uint64_t spans_unmatched_end, spans_end_mismatched, spans_open_at_end;
	uint64_t spans_cut_by_loss;
	bool percentiles_approximate; /* histogram memory ran out: some spans left out */

	uint64_t allocs, frees, alloc_bytes, free_bytes;
	/* Live bytes are per process (a child's heap is its own, and gone when it exits): the
	 * peak is the largest sum of the heaps of the processes alive at one moment; at end is
	 * the traced program's heap (header pid, or the only process) when it exited. Each
	 * process's own figures are in heaps (sorted by pid; processes that allocated or freed). */
	uint64_t live_peak_bytes, live_end_bytes;
	struct summary_heap *heaps;
	size_t n_heaps;
	uint64_t frees_unknown; /* free of an address not allocated in the trace */
	bool live_approximate; /* the live-allocation table hit its cap */

	/* RSS of the traced program (header pid), trace buffers excluded everywhere. */
	uint64_t rss_peak_bytes;
	enum summary_rss_peak_source rss_peak_source;
	uint64_t rss_exit_maxrss_bytes, rss_exit_buffers_bytes; /* from the EXIT record */
	bool has_exit;
	int32_t exit_status;
	uint64_t rss_samples;
	uint64_t rss_sampled_min_bytes, rss_peak_sampled_bytes, rss_sampled_last_bytes;
	uint64_t buffers_resident_peak_bytes;
	/* The program's word for the buffers' most (its exit records) was above what its RSS can
	 * hold (its peak's H, else wait4's figure, else peak.h's plausible bound), so
	 * buffers_resident_peak_bytes is that bound and this the figure not believed; 0: none. */
	uint64_t buffers_resident_refused_bytes;
	/* The root's peak as an interval (rss_peak_bytes is its low end). */
	struct peak rss_peak;
	/* The kernel figure it comes from (0: none), buffers included: the program's own VmHWM
	 * (rss_peak_hwm_own) or wait4's ru_maxrss; and the most buffers it ever held. */
	uint64_t rss_peak_hwm_bytes, rss_peak_buffers_max_bytes;
	bool rss_peak_hwm_own;
	/* Every process of the tree, by pid; the tree's total over time (the sum of each
	 * process's largest sample per column of spark_bytes' range; n_spark columns). */
	struct summary_process *processes;
	size_t n_processes;
	bool processes_truncated; /* more than SUMMARY_MAX_PROCESSES: the rest left out */
	uint64_t tree_spark_bytes[SUMMARY_SPARK_COLUMNS];
	/* RSS over time: the max sample per column, a column without one taking the one before
	 * it; SUMMARY_SPARK_NONE before the first sample (nothing is known there, not 0 B);
	 * n_spark columns used. */
	uint64_t spark_bytes[SUMMARY_SPARK_COLUMNS];
	unsigned n_spark;
	/* Events lost over time (when it happened, not just how many): the lost counts of the
	 * LOST records (not sampler ticks) per column of the same time range as spark_bytes,
	 * and the times of the first and last such record (0 when none). */
	uint64_t lost_spark[SUMMARY_SPARK_COLUMNS];
	uint64_t lost_first_ts_ns, lost_last_ts_ns;

	bool truncated;
};

/* Computes the summary of the trace r reads: one pass over each stream, plus one merged pass
 * over all of them when the trace has allocations. Returns 0 or -errno (the message in
 * trcfile_reader_errmsg(r)); on failure *s holds nothing to free. The summary owns its arrays
 * and strings: free with summary_free. */
int summary_compute(struct trcfile_reader *r, struct summary *s);
/* The same, also handing every record of the merged pass to feed(ctx, record, stream index)
 * (memory.h's "what made RSS grow" needs that pass too: one pass instead of two; a callback
 * so that the summary does not link what the feed links). The merged pass runs only when the
 * trace has allocations: otherwise feed is never called. A feed's non-zero return stops the
 * computation with "out of memory". */
typedef int (*summary_feed_fn)(void *ctx, const struct trc_record *rec, unsigned sidx);
int summary_compute_feeding(struct trcfile_reader *r, struct summary *s, summary_feed_fn feed,
			    void *feed_ctx);
/* The same, also handing chunk(ctx, stream index, loaded) every chunk the per-stream pass has
 * decoded and found whole, in stream order, before the next is loaded: loaded's p, pend, left
 * and coder as the chunk was loaded (trcfile_scan.h), so that another pass decodes the same
 * bytes without reading and decompressing them again (the report's: report_data.h). A
 * chunk's non-zero return stops the computation with "out of memory". */
struct trcfile_cursor;
typedef int (*summary_chunk_fn)(void *ctx, unsigned sidx, const struct trcfile_cursor *loaded);
int summary_compute_chunks(struct trcfile_reader *r, struct summary *s, summary_feed_fn feed,
			   void *feed_ctx, summary_chunk_fn chunk, void *chunk_ctx);
/* Frees what a summary owns and zeroes it. Accepts NULL and a zeroed summary. */
void summary_free(struct summary *s);

#endif /* TRC_SUMMARY_H */
