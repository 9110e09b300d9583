/* prog_sig_everywhere.c - the traced side of test_sig_everywhere.c:
 * `prog_sig_everywhere N [M [malloc]]`. A SIGALRM handler emits one TRC_INSTANT; the main loop
 * runs N iterations of M TRC_COUNTERs (default 1), after one TRC_COUNTER before the loop; with
 * "malloc", M mallocs of 72 bytes and their frees instead (the preload library's emits, when
 * it is loaded). The test ptraces it and injects the
 * signals itself, one instruction at a time.
 * Protocol: prints "stop_at=ADDRESS at=ADDRESS" (two longs of its own) and stops itself
 * (SIGSTOP) before the loop. Iteration i starts with sig_everywhere_mark(i), which, when i has
 * reached stop_at (which the test writes), stores i in `at` and traps (int3: the test gets a
 * SIGTRAP stop there). Prints "handled=M" at the end (handlers that ran) and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trc.h"

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	TRC_INSTANT("sig.handler", (long)handled);
	handled++;
}

/* Written by the test (PTRACE_POKEDATA): the first iteration that traps. */
volatile long sig_everywhere_stop_at;
volatile long sig_everywhere_at;

/* The start of an iteration: traps into the test from stop_at on. Never inlined: the test counts
 * the instructions from the trap. */
__attribute__((noinline)) void sig_everywhere_mark(long i);
__attribute__((noinline)) void sig_everywhere_mark(long i)
{
	if (i >= sig_everywhere_stop_at) {
		sig_everywhere_at = i;
		__asm__ volatile("int3" ::: "memory");
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long m = argc > 2 ? atol(argv[2]) : 1;
	int allocs = argc > 3 && strcmp(argv[3], "malloc") == 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	TRC_COUNTER("sig.main", -1); /* the claim, before the test starts stepping */
	printf("stop_at=%p at=%p\n", (void *)&sig_everywhere_stop_at, (void *)&sig_everywhere_at);
	fflush(stdout);
	raise(SIGSTOP);
	for (long i = 0; i < n; i++) {
		sig_everywhere_mark(i);
		for (long j = 0; j < m; j++) {
			if (allocs) {
				char *volatile p = malloc(72); /* volatile: kept, not elided */
				if (!p)
					return 1;
				p[0] = (char)j;
				free(p);
			} else {
				TRC_COUNTER("sig.main", i * m + j);
			}
		}
	}
	printf("handled=%ld\n", (long)handled);
	return 0;
}
