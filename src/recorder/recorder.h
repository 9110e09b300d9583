/* recorder.h - the recorder pipeline: session rings and RSS samples into the trace file.
 *
 * trace-run creates the session region and the file writer, spawns the program, then hands
 * both to recorder_start, which starts two threads:
 *   - the sampler thread (sampler/), which reads the RSS of every process of the traced tree
 *     (the program from the start, the others as they attach to the session, on the same
 *     ticks) and pushes samples into a private ring;
 *   - the drain thread, which empties the session's per-thread rings (session_drain) and the
 *     sampler's ring into per-stream chunks of the writer. Events are encoded straight from
 *     their ring bytes into the open chunk (session.h's window, trcfile.h "The fused
 *     append"); the rest goes record by record. Compression and file writes happen on the
 *     writer's own threads; trace-run opens the writer with TRCFILE_WRITER_STORE_WHEN_BEHIND,
 *     so draining never waits on zstd (a chunk the compressors cannot take is written stored)
 *     and waits on the disk only when its bounded queue of stored chunks is full.
 * A third thread, the background compressor (chunk_bgc.h, at SCHED_IDLE), compresses the
 * chunks the writer stored into a side file while the program runs, so that less is left for
 * the end (TRC_NO_BG_COMPRESS=1 in the environment: none; TRC_TEST_BGC_MISMATCH=1: tests,
 * its first copy does not match its chunk).
 * While a program's thread emits flat out and CPUs are to spare, the drain thread keeps every
 * thread of this process off that thread's CPU (recorder_place.h; TRC_NO_PLACE=1: not), so the
 * recorder does not take turns with it on its core.
 * recorder_finish stops the sampler, drains everything that is left, appends the exit record
 * and notes, and joins the threads; the caller then closes the writer.
 *
 * Threads:
 *   recorder_start, recorder_finish                   the caller's thread (trace-run's main)
 *   recorder_get_stats                                any thread, any time between start and
 *                                                     finish (relaxed counters)
 *   *cfg.finish_interrupt                             set by any thread (trace-run's signal
 *                                                     guard), read by finish
 * None of them blocks for long: finish waits for one last drain pass and the thread joins.
 */
#ifndef TRC_RECORDER_H
#define TRC_RECORDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "trc/wire.h" /* enum trc_rss_source */

struct trc_session;
struct trcfile_writer;
struct trcfile_bgc;

struct recorder_config {
	struct trc_session *session; /* borrowed; outlives the recorder */
	struct trcfile_writer *writer; /* borrowed; closed by the caller after finish */
	pid_t pid; /* the program trace-run started */
	bool rss_enabled;
	uint64_t rss_interval_ns;
	enum trc_rss_source rss_source;
	/* true: trace-run did not preload libtrc-preload.so (--no-preload); the note on a
	 * program that never attached then names that instead of guessing. */
	bool no_preload;
	/* true: stored chunks stay stored (trace-run --keep-stored): no background compressor,
	 * whose copies nothing would take. */
	bool keep_stored;
	/* Borrowed, may be NULL, outlives the recorder: once another thread sets it, a
	 * recorder_finish that runs (or is about to) stops draining at its next pass (the tree
	 * left more in its rings than the user will wait for: a process that outlived the
	 * program and floods them) and then writes the notes and the exit record as usual, with
	 * final->interrupted set. */
	const atomic_bool *finish_interrupt;
	/* Test hook, passed to the sampler (NULL: pthread_create). Also used for the drain
	 * thread, so a test can make either fail. */
	int (*create_thread)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
};

struct recorder_stats {
	uint64_t events; /* event records written (not metadata, not RSS) */
	uint64_t lost; /* records reported lost so far */
	uint64_t rss_samples; /* RSS samples written */
	uint64_t last_rss_bytes; /* latest sample, program only (buffers excluded) */
	uint64_t last_buffers_bytes; /* latest sample's trace-buffer share */
	uint64_t bytes_written; /* file bytes so far */
	int drain_error; /* first error of the drain thread (e.g. writer -ENOSPC), 0 */
	uint64_t buffers_peak_bytes; /* highest trace-buffer share seen in the program: the
				      * samples', and after its exit its own count of its peak */
	uint64_t rss_sampled_max_bytes; /* largest sample of the program (buffers excluded) */
	uint64_t bg_compressed; /* stored chunks compressed in the background so far */
	/* recorder_finish only: recorder_interrupt cut the last drain short; what was still in
	 * the rings is not in the trace (how much is unknown), and a note says so. */
	bool interrupted;
	/* recorder_finish only (NULL elsewhere): the background compressor, stopped, with the
	 * compressed copies of stored chunks for the end compaction (run_compact); the caller
	 * frees it with trcfile_bgc_free. */
	struct trcfile_bgc *bgc;
};

/* The end of the program, as trace-run saw it. */
struct recorder_exit {
	int status; /* as from wait4 */
	uint64_t maxrss_bytes; /* wait4's ru_maxrss; 0 when unknown */
};

/* Starts the sampler (when enabled) and the drain thread. On failure returns NULL with
 * *err = -errno and leaves nothing running, so the caller can stop the program it started. */
struct recorder *recorder_start(const struct recorder_config *cfg, int *err);

/* Stops the sampler, drains everything, writes the exit record (when exit is not NULL) and
 * notes (e.g. why there are no events), joins the drain thread, fills *final (may be NULL)
 * with the totals, and frees the recorder. Returns 0 or the first error met while recording
 * (the trace holds everything drained before it). Accepts NULL. */
int recorder_finish(struct recorder *r, const struct recorder_exit *exit,
		    struct recorder_stats *final);

/* Counters so far. Any thread. */
void recorder_get_stats(struct recorder *r, struct recorder_stats *out);

#endif /* TRC_RECORDER_H */
