/* run_guard.h - trace-run stays stoppable while its main thread is busy.
 *
 * trace-run's main thread reads the signalfd of the signals it handles only while it waits for
 * the program (run_main.c). Before that (creating the trace file, which blocks on a FIFO until
 * a reader comes; starting the recorder) and after it (the last drain, which a process of the
 * tree that outlived the program can keep busy for ever; closing the writer; the compaction
 * of stored chunks) the guard, a thread of its own, reads it instead, so SIGINT and SIGTERM
 * still end trace-run quickly, keeping every trace readable:
 *   startup   the command never runs (its child is killed and reaped), a trace file already
 *             made is removed; exit 128+N;
 *   finish    the first stops the last drain (recorder_config.finish_interrupt): the footer is
 *             written for what was drained, a note says the rest was not (how much is
 *             unknown), and the compaction is skipped; the second exits at once (the trace
 *             then reads up to its last whole chunk, marked truncated): exit 128+N;
 *   compact   the compaction is abandoned: the trace stays complete as written, its stored
 *             chunks uncompressed, synced; exit with the program's status.
 * The same signal from the same sender within RUN_ONE_SIGNAL_NS is one interrupt (coreutils
 * timeout signals trace-run and then its group). Other signals read meanwhile are dropped: the
 * program is not running yet, or has ended.
 *
 * Threads: start and stop from the main thread; the guard thread calls _exit itself where a
 * phase says so. The fields below marked (any) may be set while the guard runs.
 */
#ifndef TRC_RUN_GUARD_H
#define TRC_RUN_GUARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

enum run_guard_phase { RUN_GUARD_STARTUP, RUN_GUARD_FINISH, RUN_GUARD_COMPACT };

struct run_guard {
	int sfd; /* trace-run's signalfd (borrowed) */
	const char *output; /* the trace file's path (borrowed) */
	_Atomic pid_t child; /* (any) startup: the child waiting to exec, or -1 */
	atomic_bool output_made; /* (any) startup: the trace file exists (remove it) */
	atomic_bool finish_interrupt; /* finish: set by the first interrupt (the recorder reads) */
	int exit_code; /* compact: the program's status, as trace-run exits with it */
	/* private */
	enum run_guard_phase phase;
	pthread_t thread;
	int stop_fd;
	bool running;
};

/* Initialises g (no thread). */
void run_guard_init(struct run_guard *g, int sfd, const char *output);

/* Starts the guard for phase. Returns 0 or -errno (then no guard: signals wait in the
 * signalfd, as before). */
int run_guard_start(struct run_guard *g, enum run_guard_phase phase);

/* Stops and joins the guard (no-op when none runs). */
void run_guard_stop(struct run_guard *g);

#endif /* TRC_RUN_GUARD_H */
