/* run_witness.h - tells a signal sent to trace-run's process group from one sent to trace-run.
 *
 * trace-run passes on to the program a signal that was sent to trace-run alone (kill PID, a
 * service manager's main-process kill), but not one sent to the process group the program is
 * also in (kill -TERM -PGID, coreutils timeout, a terminal's Ctrl-C): that one reached the
 * program already, and passing it on would deliver it twice. The two look alike in trace-run's
 * own siginfo. The witness is a small process of trace-run's, forked into its process group
 * with the signals blocked, that receives only what was sent to the group (or to each
 * process of it) and reports each signal on a pipe: trace-run compares.
 *
 * The witness leaves no trace: it holds no descriptor but its pipe's write end, dies with
 * trace-run (PR_SET_PDEATHSIG), and is killed and reaped by run_witness_stop.
 *
 * Threads: trace-run's main thread only; start it before any other thread exists.
 */
#ifndef TRC_RUN_WITNESS_H
#define TRC_RUN_WITNESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One external signal, however it was addressed, is one event: coreutils `timeout` sends its
 * signal to trace-run and then to the whole process group, so trace-run reads it twice (once,
 * when the kernel merged the two) while the program got it from the group. The same signal
 * from the same sender within this time is that same event; and a signal sent only to
 * trace-run is passed on once this time has shown that the witness did not get it too. Two
 * interrupts a user means as two are further apart than this. */
#define RUN_ONE_SIGNAL_NS 150000000ull

/* One signal the witness received. */
struct run_witness_report {
	int32_t signo;
	int32_t sender_pid; /* its siginfo's si_pid (0 from the kernel, e.g. the terminal) */
	uint64_t mono_ns; /* when the witness took it, CLOCK_MONOTONIC */
};

struct run_witness {
	pid_t pid; /* -1: none (the caller then passes on every signal sent to trace-run) */
	int fd; /* read end of the report pipe, non-blocking, close-on-exec; -1: none */
};

/* Forks the witness into the caller's process group; signals: what it waits for (the caller
 * has them blocked, and the witness inherits the mask). Returns 0 or -errno (no witness). */
int run_witness_start(struct run_witness *w, const sigset_t *signals);

/* Reads one report without blocking. Returns true when *out was filled. */
bool run_witness_read(struct run_witness *w, struct run_witness_report *out);

/* Kills and reaps the witness, closes the pipe. Accepts a witness that did not start. */
void run_witness_stop(struct run_witness *w);

#endif /* TRC_RUN_WITNESS_H */
