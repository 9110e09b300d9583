/* prog_rt_longjmp.c - a signal handler that leaves by siglongjmp, often out of the middle of an
 * event the main thread was emitting: `prog_rt_longjmp JUMPS AFTER`. A 50 us interval timer's
 * SIGALRM handler jumps back to the main loop, which emits TRC_COUNTER("longjmp.loop") without
 * pause, until JUMPS jumps happened; then the timer stops and the main thread emits AFTER
 * TRC_COUNTER("longjmp.after") events (after a pause for the recorder to drain the ring the
 * loop filled), which nothing interrupts: every one of them must be
 * recorded. Prints "jumps=N after=M" and exits 0. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "trc.h"

static sigjmp_buf jump_back;
static volatile sig_atomic_t jumps;

static void on_alarm(int sig)
{
	(void)sig;
	jumps++;
	siglongjmp(jump_back, 1);
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 2000;
	long after = argc > 2 ? atol(argv[2]) : 1000;
	TRC_COUNTER("longjmp.start", 0); /* the slot is claimed before any jump */
	struct sigaction sa = {.sa_handler = on_alarm};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	sigsetjmp(jump_back, 1);
	while (jumps < want)
		for (int i = 0; i < 64; i++)
			TRC_COUNTER("longjmp.loop", i);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	/* The loop may have filled the ring: let the recorder drain it, so nothing but the flag
	 * can keep the events below out of the trace. */
	struct timespec pause = {1, 0}; /* generous: a sanitizer's drain on a loaded machine */
	nanosleep(&pause, NULL);
	for (long i = 0; i < after; i++)
		TRC_COUNTER("longjmp.after", i);
	printf("jumps=%ld after=%ld\n", (long)jumps, after);
	return 0;
}
