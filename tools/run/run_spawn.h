/* run_spawn.h - starting the traced command in two steps.
 *
 * run_spawn_prepare forks a child that sets up its environment (the session fd, LD_PRELOAD)
 * and then waits for a go-ahead before it execs: trace-run forks while it is still small
 * (the kernel carries the spawner's RSS high-water mark into the child's ru_maxrss across
 * exec), then creates the trace file and starts the sampler, and only then lets the command
 * run. If any of that fails, run_spawn_abort makes the child exit without ever running the
 * command. run_spawn_go releases it and reports whether exec worked, through a close-on-exec
 * pipe: EOF means exec succeeded, four bytes carry the errno of a failed exec.
 *
 * Descriptors 0-2: a program started with some of them closed (daemons, cron jobs) must not find
 * trace-run's own descriptors (the session memfd, the trace file) there, or its writes to
 * stdout land in the session region. run_spawn_guard_std_fds, called first thing in main, puts
 * /dev/null on every closed one, so every descriptor trace-run opens lands above them; the
 * child closes them again before exec, so the program starts with exactly the descriptors it
 * was given.
 *
 * Threads: the caller's thread only. Call before other threads exist that could fork.
 */
#ifndef TRC_RUN_SPAWN_H
#define TRC_RUN_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/* Exit status of a child told to give up before exec (never seen by the user: trace-run
 * reports its own error). */
#define RUN_SPAWN_ABORTED_STATUS 125

struct run_child {
	pid_t pid;
	int go_fd; /* write end: one byte = exec, close = give up */
	int err_fd; /* read end: exec errno, EOF = exec happened */
	unsigned closed_std_fds; /* in: bit n set: fd n (0-2) is closed again in the child */
};

/* Opens /dev/null on each of descriptors 0-2 that is closed. Returns the mask of those (bit n
 * for fd n), for struct run_child's closed_std_fds. */
unsigned run_spawn_guard_std_fds(void);

/* Forks the child. session_fd is made inheritable in the child as the fd number named by the
 * session env var; preload (may be NULL) is prepended to LD_PRELOAD; child_mask is the signal
 * mask the command starts with. Returns 0 or -errno. */
int run_spawn_prepare(struct run_child *c, char **argv, int session_fd, const char *env_name,
		      const char *preload, const sigset_t *child_mask);

/* Lets the child exec. Returns 0 when exec succeeded, or the positive errno of a failed exec
 * (the child has then exited with 127 and must still be reaped), or -errno on a local error. */
int run_spawn_go(struct run_child *c);

/* Tells the child to exit without running the command, and reaps it. */
void run_spawn_abort(struct run_child *c);

/* Finds libtrc-preload.so next to this executable (../lib/ or the same folder), or in
 * $TRC_PRELOAD: a path, or a colon-separated list of them put in the program's LD_PRELOAD in
 * that order (the tests put a sanitizer's runtime right after an instrumented preload library
 * that way, for the program only). Returns a malloc'd string or NULL when one is missing. */
char *run_find_preload(void);

#endif /* TRC_RUN_SPAWN_H */
