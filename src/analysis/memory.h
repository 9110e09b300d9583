/* memory.h - what made RSS grow: allocations set beside the RSS samples, per process.
 *
 * Purpose: `trace-dump memory` (and the summary's top five). The trace holds every
 * allocation, every span and function frame and every RSS sample on one clock; this puts
 * them together, for each process with RSS samples:
 *   - growth intervals: between two consecutive samples of the process in which its RSS
 *     rose, the bytes its threads allocated, grouped by site: what the allocating thread was
 *     running (its innermost span or function, by name; or the whole stack, opts.stack);
 *   - the series: at each sample, RSS beside the live heap (allocated minus freed, the
 *     process's own) and the gap between them (what malloc does not explain: mappings,
 *     stacks, fragmentation, memory freed but not returned to the system);
 *   - the sites live at the RSS peak (the first sample of its largest value).
 *   - what it allocated before its first sample (before_first: from its first allocation to
 *     that sample, which a process that grows at once and stays flat would otherwise hide);
 *     its RSS before is not known (rss_before 0), so it is not a growth interval.
 * RSS is the program's (rss_bytes - buffers_bytes: trace buffers excluded, as everywhere);
 * a sample without a pid is the traced program's (header pid). The "peak" here is the largest
 * sample ("max sampled", as trace-dump summary calls it), not the kernel's peak.
 *
 * How: two merged passes (trcfile_iter). The first reads only the RSS streams to find each
 * process's peak sample; the second replays everything: stacks per thread (flame.h, weight
 * FLAME_STACKS), a live map per process (allocmap.h: address -> size and site), the
 * interval's bytes per site. Memory: the live map (one entry per live block, capped at
 * MEMORY_LIVE_MAX per process: then approximate, said so), the distinct stacks (flame.h's
 * cap), one entry per RSS sample and per growth interval with at most opts.sites sites
 * each; never per record.
 *
 * Ownership: the report owns its arrays and names (memory_report_free). Threads: the reader's.
 */
#ifndef TRC_MEMORY_H
#define TRC_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"
#include "trcfile.h"

#define MEMORY_LIVE_MAX (1u << 26)
/* The name of what was allocated in the rest of the sites when they are cut to opts.sites. */
#define MEMORY_OTHER_SITES "(other sites)"

struct memory_opts {
	bool stack; /* sites are whole stacks ("a;b;c"), not the innermost frame */
	unsigned sites; /* sites kept per interval and at the peak, largest first (0: all) */
	unsigned run_sites; /* the same for the whole-run tables (0: as sites) */
};

struct memory_site {
	const char *name; /* owned by the report */
	uint64_t bytes, allocs;
};

struct memory_interval {
	uint32_t pid;
	uint64_t t0_ns, t1_ns; /* the two samples' times (trace clock) */
	uint64_t rss_before, rss_after; /* after > before */
	uint64_t alloc_bytes, allocs, free_bytes; /* the process's, in (t0, t1] */
	uint64_t live_before, live_after; /* its live heap at the two samples */
	struct memory_site *sites; /* largest first, cut to opts.sites (+ MEMORY_OTHER_SITES) */
	size_t n_sites;
};

struct memory_sample {
	uint64_t ts_ns;
	uint64_t rss_bytes, live_bytes; /* gap: rss_bytes - live_bytes (may be negative) */
	/* Mapped outside malloc (MAP minus UNMAP records: mmap, mremap, brk by the program or a
	 * library), counted by the calls: overlapping maps (MAP_FIXED over a mapping) count
	 * twice, unmaps of what the trace did not see mapped count nothing. */
	uint64_t mapped_bytes;
};

struct memory_process {
	uint32_t pid;
	struct memory_sample *series; /* every sample, in time order */
	size_t n_series;
	struct memory_interval *intervals; /* growth intervals, in time order */
	size_t n_intervals;
	/* Before its first sample (has_before_first: it allocated or freed then): t0 its first
	 * allocation, t1 the sample, rss_after the sample's, live_after the live heap then. */
	struct memory_interval before_first;
	bool has_before_first;
	uint64_t peak_ts_ns, peak_rss_bytes, peak_live_bytes; /* its largest sample */
	struct memory_site *peak_sites; /* live at the peak, largest first, cut as above */
	size_t n_peak_sites;
	/* Over the whole run, largest first, cut as above: bytes allocated by site; temporary
	 * allocations by site (freed by their thread's next allocation event, before it
	 * allocated anything else: heaptrack's "temporary"); live at the end of the trace by
	 * site (leaks, when the trace saw the process exit), exit_live_bytes in all. With
	 * sampled stacks the sites' figures are estimates (alloc_weight.h). */
	struct memory_site *sites, *temp_sites, *exit_sites;
	size_t n_sites, n_temp_sites, n_exit_sites;
	uint64_t exit_live_bytes;
	bool live_approximate; /* its live map hit MEMORY_LIVE_MAX */
};

struct memory_report {
	struct memory_process *procs; /* processes with RSS samples, by pid */
	size_t n_procs;
	uint64_t alloc_bytes_unsampled; /* allocated by processes without samples */
	uint64_t folded_frames; /* frames past flame.h's cap of stacks (folded into callers) */
	char **names; /* the site names (owned) */
	size_t n_names;
};

/* Analyzes r (syms may be NULL: functions as module+offset). 0, or -errno with the reader's
 * message set (out of memory: "out of memory"); *out holds nothing to free on failure. */
int memory_analyze(struct trcfile_reader *r, struct sym_resolver *syms,
		   const struct memory_opts *opts, struct memory_report *out);
void memory_report_free(struct memory_report *m);

/* The same fed by a merged pass the caller runs anyway (the summary's live bytes): new reads
 * the RSS streams (the first pass; NULL with *err = -errno); add takes every record of the
 * merged order (trcfile_iter) with its stream index (0 or -ENOMEM, then the feed is failed);
 * finish makes the report (0, or -ENOMEM when an add failed) and frees the feed, as free
 * does without a report. */
struct memory_feed;
struct memory_feed *memory_feed_new(struct trcfile_reader *r, struct sym_resolver *syms,
				    const struct memory_opts *opts, int *err);
int memory_feed_add(struct memory_feed *f, const struct trc_record *rec, unsigned sidx);
int memory_feed_finish(struct memory_feed *f, struct memory_report *out);
void memory_feed_free(struct memory_feed *f);

/* The n growth intervals of every process with the largest RSS growth (ties: the earlier),
 * into out (pointers into m); returns how many (<= n). */
size_t memory_top_intervals(const struct memory_report *m, const struct memory_interval **out,
			    size_t n);

#endif /* TRC_MEMORY_H */
