/* recorder_place.h - keeps the recorder's threads off the CPUs where the program's busiest
 * threads run, while there are CPUs to spare.
 *
 * Why: a thread that emits flat out needs its core to itself, and the recorder needs about
 * one core to keep up with it. Left to the scheduler, on a 2-core machine the recorder's
 * threads (drain, writer, compressor, sampler) are balanced onto the producer's core too: in a
 * `perf sched` run of 10 M events the producer was off its CPU 101 ms of 211, 73 ms of it
 * for the drain thread, whose short naps woke it there. Confined to the other CPUs they still
 * have a whole core, and the producer keeps its own. Measured (work_events 10 M events, one
 * thread, 52 rounds alternating with TRC_NO_PLACE=1 in a quiet minute, bare loop 9.71 ns):
 * 11.36 ns an event (1.18x bare) against 12.65 (1.31x), faster in 35 rounds of 52, 0 lost.
 *
 * Policy (recorder_place_tick, every PLACE_PERIOD_NS of the drain thread's passes):
 *   - A busy producer is a thread stream that gave at least PLACE_BUSY_EVENTS_PER_S events
 *     over the period (recorder_place_count). Its CPU is the one it last ran on
 *     (/proc/PID/task/TID/stat, field "processor").
 *   - When there are busy producers, none of them in this process (its threads are all
 *     confined alike), each a thread of a process below this one (the traced tree: the
 *     slot's pid and tid are the program's to write, so they are believed only for a
 *     descendant's thread, /proc/PID/stat's parent chain and /proc/PID/task/TID), fewer CPUs of theirs than the CPUs allowed at start, each one's CPU
 *     could be read, and the machine is not crowded, every thread of this process
 *     (drain, sampler, writer, compressors, background compressor and the caller's) is
 *     confined to the allowed CPUs less theirs. Otherwise every thread gets all the allowed
 *     CPUs back. Masks are set only when the choice changes.
 *   - Not crowded: the threads runnable on the machine (/proc/loadavg) are at most the busy
 *     producers, one per CPU left and PLACE_OURS_RUNNABLE more; or, when there are more,
 *     those not of this process are at most the busy producers and one per CPU left (this
 *     process's runnable threads read from /proc/self/task: confined, they all queue on the
 *     CPUs left and would read as a crowd of their own). Where other programs' threads
 *     wait for a CPU too, the recorder confined would share the CPUs left with them and
 *     could not use the producer's when it sleeps; free, it gets a share of every CPU.
 *     Measured at a load average of 20 (2 CPUs), confinement made the producer 1.5-4x slower.
 *   - Confinement must not starve the drain. When, while confined, a producer waited for the
 *     drain or lost events (recorder_place_pressure), or the program's ring residency grew
 *     by PLACE_GROWTH_BYTES (a ring grows only when the drain lags by half of it; a little
 *     growth is normal, the drain's naps and the writer's turns on its CPU), the CPUs
 *     left do not suffice (another program runs there, say): every CPU is given back for
 *     a backoff (PLACE_BACKOFF_MIN_NS, doubling each time up to PLACE_BACKOFF_MAX_NS) before
 *     confinement is tried again. A waiting producer leaves its own CPU idle, which a
 *     confined drain could not use.
 *   - recorder_place_free gives every CPU back (the end compaction uses them all).
 *   - TRC_NO_PLACE=1 in the environment, or fewer than two allowed CPUs: no placement at all
 *     (recorder_place_new returns NULL; every call accepts NULL).
 *
 * Threads: recorder_place_new before the drain thread starts and recorder_place_free after it
 * joined, on the caller's thread; recorder_place_count and recorder_place_tick on the drain
 * thread only. None blocks (the tick reads /proc, some microseconds, once a period).
 */
#ifndef TRC_RECORDER_PLACE_H
#define TRC_RECORDER_PLACE_H

#include <stdint.h>

struct session_stream;
struct recorder_place;

/* A placement for this process's threads, or NULL (disabled, see above, or out of memory). */
struct recorder_place *recorder_place_new(void);

/* The drain moved n events of stream st. Drain thread. */
void recorder_place_count(struct recorder_place *p, const struct session_stream *st, uint64_t n);

/* A producer waited for the drain or lost events (a WAIT or LOST record). Drain thread. */
void recorder_place_pressure(struct recorder_place *p);

/* After a drain pass: decides and applies the placement once a period. resident_bytes: the
 * program's ring residency now (session_buffers_resident_bytes). Drain thread. */
void recorder_place_tick(struct recorder_place *p, uint64_t now_ns, uint64_t resident_bytes);

/* Times the threads were confined so far (tests, stats). Drain thread, or after it joined. */
uint64_t recorder_place_confinements(const struct recorder_place *p);

/* Gives every thread all the allowed CPUs back and frees p. NULL is fine. */
void recorder_place_free(struct recorder_place *p);

#endif
