/* sampler.h - the out-of-band RSS sampler: a thread that reads the RSS of a set of processes at
 * a fixed rate and pushes each sample into a ring, so no /proc read ever happens on the event
 * path.
 *
 * Purpose: DESIGN.md "The sampler". The recorder starts one sampler for the process trace-run
 * launched, which also samples the processes of its tree as they attach (cfg.discover); the
 * sampler is the producer of a ring whose memory the caller owns, and the
 * recorder drains that ring (records tagged SAMPLER_TAG_SAMPLE, payload struct rss_sample)
 * into the trace, beside the event streams, on the same clock (CLOCK_MONOTONIC).
 *
 * Timing:
 *   - The first sample is taken as soon as the thread runs; tick k is due at
 *     D0 + k * interval_ns, D0 being the time the first read started (absolute deadlines, so
 *     no drift). The thread waits with ppoll on an eventfd that sampler_stop signals.
 *   - Late ticks: after a sample, the next tick is the first deadline still in the future; the
 *     deadlines that passed meanwhile are skipped, counted in the stats, and carried by the
 *     next sample (skipped_ticks). A sample is never taken twice to catch up.
 *   - Slow sources: reading may never take more than a tenth of the interval. When the
 *     cheapest of the last SAMPLER_READ_WINDOW reads (the source's cost, not one preemption on
 *     a loaded machine) exceeds interval_ns / 10, the interval in force becomes the smallest
 *     multiple of interval_ns that is at least ten times that read (samples stay on the grid),
 *     the sample carries TRC_RSS_STRETCHED and interval_ns says which interval is in force.
 *     smaps_rollup of a 1 GiB process takes ~13 ms, so at 10 Hz it is sampled every 200 ms.
 *
 * A tree of processes: with cfg.discover the sampler asks, at the start of every tick, which
 * processes exist, and samples each new one from that tick on, on the same grid as the rest;
 * each is dropped when it is gone, as below. The traced tree's processes are thus sampled on
 * the same ticks, each from its first tick to its exit.
 *
 * Process gone: when a read says the process is gone (ESRCH, or a zombie's empty figures:
 * never recorded as a 0-byte sample), that pid is dropped and the last sample stands; when
 * every pid is gone the thread ends quietly (stats.process_gone) and sampler_stop still has to
 * be called. A sample already pushed cannot be flagged afterwards, so TRC_RSS_FINAL is never
 * set by the sampler; a consumer that wants it sets it on the last sample of a pid when it
 * sees that pid's SAMPLER_TAG_GONE record (pushed only if cfg.push_gone_record is set).
 * Other read errors (malformed text, EACCES) are counted (read_errors) and the tick skipped;
 * after SAMPLER_MAX_READ_ERRORS consecutive ones the pid is dropped too (stats.last_error).
 *
 * Stop: sampler_stop takes no final sample. The recorder stops the sampler when the process
 * has exited (its peak is then wait4's ru_maxrss) or when recording ends; a read on the stop
 * path would make stop as slow as the source (13 ms for smaps_rollup at 1 GiB) for a sample
 * off the grid. Stop returns as soon as the thread leaves ppoll (tens of microseconds), or
 * after the read in progress, if any.
 *
 * Trace buffers: the rings are mapped into the traced process, so the pages of them it has
 * touched count in rss_bytes, hwm_bytes, anon/shmem and smaps_rollup's figures alike. Each
 * sample carries buffers_bytes, from cfg.buffers_resident_bytes (called in the sampler thread
 * right after the read; it must not block). The program's own RSS is rss_bytes -
 * buffers_bytes. The peak: VmHWM counts buffers resident at the time of the peak, which were
 * at most buffers_bytes now (buffers only grow), so hwm_bytes - buffers_bytes is a lower
 * bound of the program's own peak, exact when the buffers had stopped growing by then; the
 * tools show max(hwm_bytes - buffers_bytes, the largest sampled rss_bytes - buffers_bytes).
 * The same correction applies to wait4's ru_maxrss at exit.
 *
 * Concurrency (S = the sampler thread, O = the thread that owns the handle):
 *
 *   operation          thread  may run concurrently with        blocks
 *   sampler_start      O       nothing on that handle           no (creates S)
 *   sampler_get_stats  any     S, other sampler_get_stats       no
 *   sampler_stop       O       S (wakes and joins it)           until S leaves ppoll/read
 * S calls cfg.buffers_resident_bytes and is the ring's producer. Stats are relaxed atomics:
 * each field is exact, the set of fields is not one snapshot.
 *
 * Dependencies: libc, pthreads, ringbuf/. Flags and sources are wire.h's (src/include/trc/wire.h).
 */
#ifndef TRC_SAMPLER_H
#define TRC_SAMPLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring.h"
#include "rss_parse.h"

#define SAMPLER_TAG_SAMPLE 1 /* ring tag of a struct rss_sample record */
#define SAMPLER_TAG_GONE 2 /* ring tag of a struct rss_gone record (cfg.push_gone_record) */

#define SAMPLER_MAX_PIDS 1024
#define SAMPLER_READ_WINDOW 3 /* reads whose minimum decides a stretch */
#define SAMPLER_MAX_READ_ERRORS 5 /* consecutive non-gone errors before a pid is dropped */

/* The payload the sampler pushes into its ring (tag SAMPLER_TAG_SAMPLE). */
struct rss_sample {
	uint64_t ts_ns; /* CLOCK_MONOTONIC when the read started */
	struct trc_rss_figures fig; /* buffers_bytes from the callback (0 without one) */
	uint32_t skipped_ticks; /* ticks skipped (late) since the previous sample of this pid */
	uint64_t interval_ns; /* interval in force after this sample (> configured: stretched) */
};

/* The payload of a SAMPLER_TAG_GONE record: the sampler stopped sampling pid. */
struct rss_gone {
	uint64_t ts_ns; /* CLOCK_MONOTONIC when it was found gone */
	uint32_t pid;
	int32_t error; /* -ESRCH: the process is gone; otherwise the last read error */
};

struct sampler_config {
	const pid_t *pids; /* the first pids (at least 1, up to SAMPLER_MAX_PIDS) */
	size_t n_pids;
	uint64_t interval_ns; /* in [TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS], wire.h */
	enum trc_rss_source source;
	/* Trace buffers resident in the process, from the recorder (no syscall). May be NULL.
	 * Called in the sampler thread once per sample; must not block. */
	uint64_t (*buffers_resident_bytes)(void *arg, pid_t pid);
	void *buffers_arg;
	/* The ring the sampler writes into (caller-owned memory, already ring_ctl_init'ed; the
	 * sampler is its producer until sampler_stop returns). Its capacity must hold a sample. */
	struct ring_ctl *ring_ctl;
	void *ring_data;
	uint64_t ring_capacity;
	/* Optional: eventfd the sampler writes 1 to after each tick so a consumer can wake; -1
	 * for none (0 is taken as a real fd). Not owned by the sampler. */
	int notify_fd;
	/* Test hook: defaults to pthread_create when NULL (inject failure in tests). */
	int (*create_thread)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	/* Push a SAMPLER_TAG_GONE record when a pid is dropped (off by default, so a consumer
	 * that knows only SAMPLER_TAG_SAMPLE sees nothing else). */
	bool push_gone_record;
	/* Optional: the processes that appeared since (the traced tree's). Called in the sampler
	 * thread at the start of every tick; writes up to max pids into out and returns how many
	 * there are. A pid not sampled before is opened and read on that same tick; a pid the
	 * sampler samples already, or has dropped, is ignored (a process is sampled from when it
	 * appears until it is gone). Must not block. At most SAMPLER_MAX_PIDS pids are sampled at
	 * once; more are counted in stats.pids_refused. */
	size_t (*discover)(void *arg, pid_t *out, size_t max);
	void *discover_arg;
};

struct sampler;

/* Validates cfg, opens the /proc files of every pid, creates the eventfd and starts the
 * thread; the first sample is taken at once. Returns the handle, or NULL and *err = -errno
 * (-EINVAL bad config, -ESRCH no such process, -EACCES, -EMFILE, -ENOMEM, or the error of
 * create_thread, e.g. -EAGAIN), leaving nothing behind (no thread, no fd, no memory).
 * O only; does not block. */
struct sampler *sampler_start(const struct sampler_config *cfg, int *err);

/* Wakes the thread, joins it, frees everything; returns within a millisecond whatever the
 * interval (unless a read is in progress: then after it). No final sample. Accepts NULL. O
 * only. After it returns the caller may drain and free the ring. */
void sampler_stop(struct sampler *s);

struct sampler_stats {
	uint64_t samples; /* samples pushed (or dropped because the ring was full) */
	uint64_t skipped_ticks; /* ticks skipped because the thread came late */
	uint64_t stretched; /* samples taken with a stretched interval */
	uint64_t read_errors; /* reads that failed for a reason other than the process gone */
	uint64_t read_ns_max;
	uint64_t read_ns_total;
	bool process_gone; /* every pid is gone (or dropped); the thread has ended */
	/* Additions to the required API: */
	uint64_t cpu_ns; /* CPU time of the sampler thread so far (CLOCK_THREAD_CPUTIME_ID) */
	uint64_t ring_dropped; /* records the ring could not take (full) */
	int last_error; /* last read error other than -ESRCH, 0 if none */
	uint64_t pids_added; /* pids added by cfg.discover */
	uint64_t pids_refused; /* discovered pids not sampled: SAMPLER_MAX_PIDS live already */
};

/* Copies the stats. Any thread, while the handle lives; never blocks. */
void sampler_get_stats(const struct sampler *s, struct sampler_stats *out);

#endif /* TRC_SAMPLER_H */
