/* session.h - the recorder's side of the session region: create it, drain it.
 *
 * trace-run creates a session before it spawns the program, passes session_fd() to the child
 * (clearing O_CLOEXEC on the child's copy) with its number in TRC_SESSION_FD_ENV, and calls
 * session_drain from its drain thread until the program has exited, then once more.
 * The region layout and its invariants are in session_layout.h; the producer side is libtrc
 * (src/runtime/, src/include/trc.h).
 *
 * Streams delivered by session_drain:
 *   kind 1 (thread): one per claimed ring, i.e. per thread (a thread that gives its ring back
 *     and later emits again gets a new stream). Starts with the thread's THREAD record (pid, tid,
 *     name; again after trc_thread_name), then its events in order, LOST records (reason
 *     RING_FULL, or CORRUPT followed by the end of the stream) where its ring dropped some.
 *     Also one per thread that lost events while it held no ring (every slot taken, or a
 *     signal handler's emit during its claim): only LOST records (NO_SLOT, REENTRANT), from
 *     the region's thread-loss table, so emitted = recorded + lost holds per thread.
 *   kind 3 (meta): one for the session, key 1, pid 0, tid 0. NAME records (each before the first
 *     record that uses the id), PROCESS and MODULE records (taken from the rings of the threads
 *     that wrote them), NOTE records (a corrupt ring, a full string table), LOST records for
 *     the region-wide counters (reason NO_SLOT, REENTRANT: losses of threads that found the
 *     thread-loss table full).
 * Timestamps are CLOCK_MONOTONIC ns (converted from TSC ticks in the drain).
 *
 * Concurrency:
 *   operation                          thread             concurrent with          blocks
 *   session_create / session_destroy   any (owner)        nothing on that session  no
 *   session_drain                      one drain thread   producers, racy reads    no
 *   session_buffers_resident_bytes     any                everything (racy read)   no
 *   session_buffers_peak_bytes         any                everything (racy read)   no
 *   session_self_hwm                   any                everything (racy read)   no
 *   session_note_sample                drain thread       racy reads               no
 *   session_process_name               owner              not session_drain        no
 *   session_processes_attached         any                everything               no
 *   session_processes_running          owner              everything (racy read)   no
 *   session_fd, session_clock_info     any                everything               no
 */
#ifndef TRC_SESSION_H
#define TRC_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

#define SESSION_META_KEY 1u

struct trcfile_window;

struct session_config {
	uint32_t max_slots; /* 0 = default (256) */
	uint64_t ring_bytes; /* per-thread ring, power of two >= 4096; 0 = default 4 MiB: the most
			      * one ring grows to */
	/* Ring bytes shared by every ring beyond its first TRC_RING_BASE_BYTES (session_layout.h
	 * "Residency"); 0 = default 64 MiB. */
	uint64_t ring_pool_bytes;
	/* How long a thread whose ring is full waits for a drain that shows no sign of life
	 * (session_layout.h "Residency"); 0 = default 10 s. Unused when drop_when_full. */
	uint64_t ring_wait_ns;
	/* trace-run --when-full drop: a thread whose ring is full drops the event at once (and
	 * counts it), never waits; the region then says ring_wait_ns == 0. */
	bool drop_when_full;
	uint32_t strtab_bytes; /* 0 = default (64 KiB); at least 4096, rounded up to a page */
	bool force_clock_gettime; /* also forced by the environment variable TRC_CLOCK=gettime */
};

struct trc_session;

/* Creates the memfd region, lays it out, calibrates the clock (~2 ms), publishes the magic.
 * Touches only the metadata pages (header, tables; ~100 KiB with the defaults), never the
 * rings. Returns NULL with *err = -EINVAL (bad config) or -errno. Any thread. */
struct trc_session *session_create(const struct session_config *cfg, int *err);

/* The length of the region session_create makes for cfg (its memfd's size, which a file size
 * limit bounds, though the rings are sparse), or 0 for a config it refuses. Any thread. */
uint64_t session_region_bytes(const struct session_config *cfg);

/* The region's fd (O_CLOEXEC in this process; the child's copy must not be). */
int session_fd(const struct trc_session *s);

struct session_stream {
	uint64_t key; /* unique for the session's lifetime */
	uint32_t kind; /* TRC_STREAM_THREAD or TRC_STREAM_META (trcfile's values) */
	uint32_t pid, tid;
};

struct session_sink {
	void *arg;
	/* One decoded record of a stream, in the stream's order. Nonzero return stops the drain
	 * and is returned by session_drain (the record counts as delivered). Strings in rec point
	 * into the drain's buffers or the region: copy them to keep them. */
	int (*record)(void *arg, const struct session_stream *st, const struct trc_record *rec);
	/* The stream ended (its thread exited and its ring was drained); key will not recur.
	 * May be NULL. */
	void (*stream_end)(void *arg, const struct session_stream *st);
	/* The fused path (optional; both or neither): event records (SPAN_BEGIN..FUNC_EXIT) of a
	 * thread stream are encoded by the drain straight into a window of the stream's open
	 * chunk (trcfile.h "The fused append"), with no struct trc_record in between; the
	 * other records still go to record(). window_open lends the window for stream st (ts:
	 * the first record's time), window_close takes it back; the drain closes a window before
	 * it hands the same stream anything through record(). Nonzero returns stop the drain as
	 * record()'s do. Without them every record goes through record(). */
	int (*window_open)(void *arg, const struct session_stream *st, uint64_t ts,
			   struct trcfile_window *win);
	int (*window_close)(void *arg, const struct session_stream *st, struct trcfile_window *win);
};

/* Drains every ring once (records published so far), name/thread/process/module metadata,
 * and lost counts as TRC_REC_LOST records, converting ticks to CLOCK_MONOTONIC ns. Frees the
 * slots of threads that exited (retired, or found gone) once their rings are empty. Drain
 * thread only. Never blocks; returns records delivered (>= 0) or the sink's nonzero return.
 * A corrupt ring is reported (LOST reason CORRUPT and a NOTE) and skipped, not an error. */
long session_drain(struct trc_session *s, const struct session_sink *sink);

/* Ring and metadata memory resident in process pid (0 = all attached processes), from the
 * region's state alone, no syscall (session_layout.h "Residency"). Any thread (racy). */
uint64_t session_buffers_resident_bytes(struct trc_session *s, pid_t pid);

/* The most trace-buffer bytes process pid held at once, as its runtime counted them (its
 * process entries' buffers_peak, the largest over its images; session_layout.h "Residency");
 * 0 when it has no entry. The process's own word: a bound for reports, nothing acts on it.
 * Any thread (racy). */
uint64_t session_buffers_peak_bytes(struct trc_session *s, pid_t pid);

/* The VmHWM process pid gave in its own exit record (the largest over its images) with that
 * record's buffers figure, and the largest that any other process of the session gave at most
 * others_max_bytes (peak.h: what is believed), with its pid, buffers figure and
 * samples (session_note_sample); the largest above others_max_bytes, not believed, apart.
 * 0 for none drained. What trace-run's last line needs to decide the program's peak as
 * trace-dump summary does (peak.h), and to name the tree's largest. Any thread (racy:
 * final once the drain has stopped). */
struct session_self_hwm {
	uint64_t own_bytes, own_buffers_bytes;
	uint64_t own_sampled_buffers_max_bytes;
	uint64_t others_bytes, others_buffers_bytes;
	uint64_t others_sampled_max_bytes, others_sampled_buffers_max_bytes;
	pid_t others_pid;
	uint64_t refused_bytes;
	pid_t refused_pid;
};
void session_self_hwm(struct trc_session *s, pid_t pid, uint64_t others_max_bytes,
		      struct session_self_hwm *out);

/* Keeps an RSS sample of pid (rss_bytes, buffers_bytes: as the sample record has them) with
 * pid's latest process entry, for session_self_hwm: the largest sample, buffers excluded, and
 * the largest buffers' share, as trace-dump summary takes them from the file. A pid with no
 * entry is not kept. The drain thread (the recorder appends samples there), or the owner once
 * it has stopped; one scan of the process table. */
void session_note_sample(struct trc_session *s, pid_t pid, uint64_t rss_bytes,
			 uint64_t buffers_bytes);

/* The name of process pid's command (argv[0] after its last '/', as its PROCESS record gave it;
 * its latest image's) into buf (at most SESSION_PROC_NAME_BYTES with the NUL); "" when none.
 * Owner thread, once the drain has stopped (the drain writes the names). */
#define SESSION_PROC_NAME_BYTES 32
void session_process_name(const struct trc_session *s, pid_t pid, char *buf, size_t len);

/* How many processes attached so far (0 = the program could not load the library, e.g.
 * static or setuid). Any thread. */
uint32_t session_processes_attached(const struct trc_session *s);

/* Processes of the traced tree that attached and are still running (kill(pid, 0) succeeds),
 * other than `except` (the program itself): fills up to max pids, returns how many there are.
 * For the end of a run, to say who outlived the program. Owner thread; a kill(2) per entry. */
uint32_t session_processes_running(const struct trc_session *s, pid_t except, pid_t *pids,
				   uint32_t max);

struct session_clock_info {
	uint32_t clock_source; /* TRC_CLOCK_* */
	uint64_t tsc_hz; /* current estimate; 0 with clock_gettime */
};
void session_clock_info(const struct trc_session *s, struct session_clock_info *out);

/* Unmaps and closes. Accepts NULL. */
void session_destroy(struct trc_session *s);

#endif /* TRC_SESSION_H */
