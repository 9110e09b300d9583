/* prog_rt_sigalloc.c - a signal handler that allocates, racing the thread it interrupts, for the
 * preload tests: `prog_rt_sigalloc MILLISECONDS`. A 50 us interval timer's SIGALRM handler
 * mallocs 777 bytes, writes them and frees them (ALLOC + FREE through the preload hooks). The
 * main loop emits 20 TRC_COUNTERs with SIGALRM unblocked, so the handler's events land inside
 * the main thread's own emits, then mallocs and frees 12345 bytes with SIGALRM blocked (glibc's
 * malloc is not async-signal-safe, so the program itself stays correct).
 * Prints "iters=N handler=M" and exits 0. Emitted events on the main thread: 22 * N (counters,
 * allocs, frees) + 2 * M (the handler's) + the few glibc makes for stdio. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "trc.h"

static volatile sig_atomic_t handler_count;

static void on_alarm(int sig)
{
	(void)sig;
	char *p = malloc(777);
	if (p) {
		memset(p, 1, 777);
		free(p);
		handler_count++;
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
	printf("iters=%ld handler=%ld\n", iters, (long)handler_count);
	return 0;
}
