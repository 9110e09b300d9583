/* run_guard.c - reading trace-run's signals while its main thread is busy (run_guard.h). */
#include "run_guard.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run_witness.h" /* RUN_ONE_SIGNAL_NS */
#include "trcfile.h" /* trcfile_sync_path */

static uint64_t run_guard__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The compaction's temporary beside the trace (run_compact.c), if it is a named one. */
static void run_guard__remove_compacting(const char *output)
{
	size_t n = strlen(output) + 32;
	char *pat = malloc(n);
	if (!pat)
		return;
	snprintf(pat, n, "%s.compacting.??????", output);
	glob_t gl;
	if (glob(pat, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &gl) == 0) {
		for (size_t i = 0; i < gl.gl_pathc; i++)
			unlink(gl.gl_pathv[i]);
		globfree(&gl);
	}
	free(pat);
}

/* Every thread of trace-run back to the normal class: the compressors run at SCHED_IDLE, which a
 * busy machine (a process of the tree that outlived the program and floods its rings) starves
 * for as long as it stays busy; the finish that waits for them, and even the exit of their
 * threads, would wait as long. An interrupt means "finish now". */
static void run_guard__unidle(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	struct dirent *e;
	const struct sched_param normal = {0};
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && sched_getscheduler(tid) == SCHED_IDLE)
			sched_setscheduler(tid, SCHED_OTHER, &normal);
	}
	closedir(d);
}

/* The nth interrupt (SIGINT or SIGTERM: signo) of the phase. Guard thread. */
static void run_guard__interrupt(struct run_guard *g, int signo, unsigned nth)
{
	switch (g->phase) {
	case RUN_GUARD_STARTUP: {
		fprintf(stderr, "trace-run: interrupted before the command ran: nothing was "
				"recorded\n");
		pid_t pid = atomic_load(&g->child);
		if (pid > 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		if (atomic_load(&g->output_made))
			unlink(g->output);
		_exit(128 + signo);
	}
	case RUN_GUARD_FINISH:
		run_guard__unidle();
		if (nth == 1) {
			fprintf(stderr,
				"\ntrace-run: interrupted while finishing: the last drain stops "
				"now "
				"and the trace keeps what was written (interrupt again to exit at "
				"once)\n");
			atomic_store(&g->finish_interrupt, true);
			return;
		}
		fprintf(stderr,
			"trace-run: second interrupt while finishing: exiting now; %s reads "
			"up to its last whole chunk (marked truncated)\n",
			g->output);
		_exit(128 + signo);
	case RUN_GUARD_COMPACT:
		fprintf(stderr,
			"\ntrace-run: interrupted while compressing the stored chunks: %s stays "
			"complete as written, its stored chunks uncompressed (trace-dump compact "
			"compresses them)\n",
			g->output);
		run_guard__unidle();
		run_guard__remove_compacting(g->output);
		if (trcfile_sync_path(g->output) != 0)
			_exit(1);
		_exit(g->exit_code);
	}
}

static void *run_guard__main(void *arg)
{
	struct run_guard *g = arg;
	unsigned nth = 0;
	int last_signo = 0;
	pid_t last_sender = 0;
	uint64_t last_ns = 0;
	for (;;) {
		struct pollfd pfd[2] = {{.fd = g->sfd, .events = POLLIN},
					{.fd = g->stop_fd, .events = POLLIN}};
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (pfd[1].revents)
			return NULL;
		struct signalfd_siginfo si;
		if (read(g->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo != SIGINT && si.ssi_signo != SIGTERM)
			continue;
		const uint64_t now = run_guard__now_ns();
		if (nth && (int)si.ssi_signo == last_signo && (pid_t)si.ssi_pid == last_sender &&
		    si.ssi_code == SI_USER && now - last_ns < RUN_ONE_SIGNAL_NS)
			continue; /* the same signal, sent to trace-run and to its group */
		last_signo = (int)si.ssi_signo;
		last_sender = (pid_t)si.ssi_pid;
		last_ns = now;
		run_guard__interrupt(g, (int)si.ssi_signo, ++nth);
	}
}

void run_guard_init(struct run_guard *g, int sfd, const char *output)
{
	memset(g, 0, sizeof(*g));
	g->sfd = sfd;
	g->output = output;
	atomic_init(&g->child, -1);
	atomic_init(&g->output_made, false);
	atomic_init(&g->finish_interrupt, false);
	g->stop_fd = -1;
}

int run_guard_start(struct run_guard *g, enum run_guard_phase phase)
{
	if (g->running)
		return -EBUSY;
	g->phase = phase;
	g->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (g->stop_fd < 0)
		return -errno;
	int rc = pthread_create(&g->thread, NULL, run_guard__main, g);
	if (rc) {
		close(g->stop_fd);
		g->stop_fd = -1;
		return -rc;
	}
	g->running = true;
	return 0;
}

void run_guard_stop(struct run_guard *g)
{
	if (!g->running)
		return;
	uint64_t one = 1;
	if (write(g->stop_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow, which one write cannot cause */
	}
	pthread_join(g->thread, NULL);
	close(g->stop_fd);
	g->stop_fd = -1;
	g->running = false;
}
