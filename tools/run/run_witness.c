/* run_witness.c - the process-group witness (run_witness.h).
 *
 * The kernel queues a signal sent to a process group to every member in one pass, so a group
 * signal that reached trace-run also reached the witness; the witness, blocked in
 * sigwaitinfo, wakes and writes its report within a scheduling delay, which trace-run's main
 * loop waits for (run_main.c, RUN_ONE_SIGNAL_NS) before it passes a signal on.
 */
#include "run_witness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t run_witness__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The witness process: never returns. */
static void run_witness__main(int wfd, pid_t parent, const sigset_t *signals)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "trc-witness");
	/* Nothing of trace-run's stays open here: not the terminal, not a pipe it shares. */
	for (int fd = 0; fd < 3; fd++)
		if (fd != wfd)
			close(fd);
	if (wfd > 3)
		syscall(SYS_close_range, 3u, (unsigned)wfd - 1, 0u);
	syscall(SYS_close_range, (unsigned)wfd + 1, ~0u, 0u);
	for (;;) {
		siginfo_t si;
		int s = sigwaitinfo(signals, &si);
		if (s < 0)
			continue;
		struct run_witness_report r = {
			.signo = s, .sender_pid = si.si_pid, .mono_ns = run_witness__now_ns()};
		/* A full pipe (trace-run not reading) loses the report, never blocks the witness.
		 */
		if (write(wfd, &r, sizeof(r)) < 0 && errno == EPIPE)
			_exit(0);
	}
}

int run_witness_start(struct run_witness *w, const sigset_t *signals)
{
	w->pid = -1;
	w->fd = -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		close(p[0]);
		run_witness__main(p[1], parent, signals);
	}
	close(p[1]);
	w->pid = pid;
	w->fd = p[0];
	return 0;
}

bool run_witness_read(struct run_witness *w, struct run_witness_report *out)
{
	if (w->fd < 0)
		return false;
	/* Reports are written whole (smaller than PIPE_BUF): a read gets one or none. */
	ssize_t n = read(w->fd, out, sizeof(*out));
	return n == (ssize_t)sizeof(*out);
}

void run_witness_stop(struct run_witness *w)
{
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (w->fd >= 0)
		close(w->fd);
	w->pid = -1;
	w->fd = -1;
}
