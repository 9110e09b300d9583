/* prog_rt_sigalloc.c - a signal handler that allocates, racing the thread it interrupts, for the
 * preload tests: `prog_rt_sigalloc MILLISECONDS`. A 50 us interval timer's SIGALRM handler
 * mallocs 777 bytes, writes them and frees them (ALLOC + FREE through the preload hooks). The
 * main loop emits 20 TRC_COUNTERs with SIGALRM unblocked, so the handler's events land inside
 * the main thread's own emits, then mallocs and frees 12345 bytes with SIGALRM blocked (glibc's
 * malloc is not async-signal-safe, so the program itself stays correct).
 * Prints "iters=N handler=M in_emit=K" and exits 0. Emitted events on the main thread: 22 * N
 * (counters, allocs, frees) + 2 * M (the handler's) + the few glibc makes for stdio. K of the M
 * handlers found the thread inside an emit (trc.h's fast-path flag 0 with a ring): exactly their
 * 2 * K events are REENTRANT losses, the others' are recorded, so a shortfall says which side
 * lost them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "trc.h"

static volatile sig_atomic_t handler_count, handler_in_emit;

static void on_alarm(int sig)
{
	(void)sig;
	/* The runtime's private flag (trc.h struct trc__thread), read only to explain a failure. */
	int in_emit = trc__self.prod.data && !*trc__self.ok_flag;
	char *p = malloc(777);
	if (p) {
		memset(p, 1, 777);
		free(p);
		handler_count++;
		handler_in_emit += in_emit;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = (argc > 1 ? atof(argv[1]) : 300) / 1000.0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	long iters = 0;
	double end = now_s() + secs;
	while (now_s() < end) {
		sigprocmask(SIG_UNBLOCK, &alrm, NULL);
		for (int i = 0; i < 20; i++)
			TRC_COUNTER("main", i);
		sigprocmask(SIG_BLOCK, &alrm, NULL);
		char *p = malloc(12345);
		if (!p)
			return 1;
		p[0] = 1;
		free(p);
		iters++;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("iters=%ld handler=%ld in_emit=%ld\n", iters, (long)handler_count,
	       (long)handler_in_emit);
	return 0;
}
