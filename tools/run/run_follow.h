/* run_follow.h - trace-run follows the whole process tree it starts, not only the command.
 *
 * A process of the tree may outlive the command (a daemon forks, its parent exits, the child
 * detaches with setsid and does the work). trace-run makes itself the child subreaper
 * (PR_SET_CHILD_SUBREAPER) before it starts the command, so every process of the tree whose
 * parent ends becomes trace-run's child: the kernel, not a race with the process's attach to
 * the session, says who is still running, and trace-run reaps each as it ends. The command's
 * own status stays the one trace-run exits with.
 *
 * Threads: trace-run's main thread only.
 */
#ifndef TRC_RUN_FOLLOW_H
#define TRC_RUN_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Makes trace-run the subreaper of the processes it starts from now on (before the command is
 * forked). false when the kernel refused (then only processes still attached to the session
 * can be followed: run_follow_scan falls back to them). */
bool run_follow_start(void);

/* trace-run's children other than skip (the witness) that are still running, after reaping
 * those that ended: fills up to max pids and returns how many there are. */
uint32_t run_follow_scan(pid_t skip, pid_t *pids, uint32_t max);

/* "pid 123 (name), pid 456 (name)" for up to n of pids, into buf (names from /proc/PID/comm). */
void run_follow_names(const pid_t *pids, uint32_t n, char *buf, size_t len);

#endif /* TRC_RUN_FOLLOW_H */
