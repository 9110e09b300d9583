/* prog_rt_sigalloc.c - a signal handler that allocates, racing the thread it interrupts, for the
 * preload tests: `prog_rt_sigalloc MILLISECONDS [LOG [MIN_ITERATIONS]]` (it runs that long and at
 * least that many iterations: a starved run still emits enough). A 50 us interval timer's SIGALRM
 * handler mallocs HANDLER_BYTES + k bytes (k: the handler's number, so each handler's ALLOC is its
 * own in the trace), writes 777 of them and frees them (ALLOC + FREE through the preload hooks).
 * The main loop emits 20 TRC_COUNTERs with SIGALRM unblocked, so the handler's events land inside
 * the main thread's own emits, then mallocs and frees 12345 bytes with SIGALRM blocked (glibc's
 * malloc is not async-signal-safe, so the program itself stays correct).
 * Prints "iters=N handler=M in_emit=K no_ring=R wrote=W dropped=D handler_bytes=B logged=L"
 * and exits 0 (B: HANDLER_BYTES; handler k's block is B + k % L bytes). Emitted events
 * on the main thread: 22 * N (counters, allocs, frees) + 2 * M (the handler's) + the few glibc
 * makes for stdio. K of the M handlers found the thread inside an emit (trc.h's fast-path flag 0
 * with a ring): their events are REENTRANT losses; R found no ring yet (the thread's first
 * event, its claim, was under way or still to come); W wrote their events into the ring and D
 * had the ring drop one (ring full). So a shortfall says which side lost them.
 *
 * It also checks the runtime's protocol as it goes, reading its private per-thread state
 * (trc.h struct trc__thread), and exits 70 with one line on stderr on the first breach: the
 * flag is 1 outside an emit (before and after each counter); a handler that found it 1 wrote
 * or dropped its ALLOC, one that found it 0 wrote nothing, and it finds the flag as it was; the
 * write position never goes back below a handler's records. The reads go through a volatile
 * pointer: GCC treats malloc and free as builtins that touch no global memory, so a plain read
 * of trc__self after malloc(777) returns the value loaded before the call (a handler then seems
 * to have written nothing with the flag at 1: a false lead once).
 *
 * LOG: a file to write, at exit, one line per handler "k ring ok w0 w1 w2 d0 d2" (what it
 * found: a ring, the flag, the write position and dropped count before the malloc, after it and
 * after the free), so that a test that misses a handler's events can say what that handler saw. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "trc.h"

static volatile sig_atomic_t handler_count, handler_in_emit, handler_no_ring, handler_wrote,
	handler_dropped;
/* The end of the last records a handler wrote (ring position). */
static volatile uint64_t handler_end;

#define HANDLER_BYTES 20000 /* + k: below glibc's mmap threshold (128 KiB) up to MAX_LOGGED */
#define MAX_LOGGED 100000
static struct handler_log {
	uint8_t ring, ok;
	uint64_t w0, w1, w2, d0, d2;
} logged[MAX_LOGGED];

static void breach(const char *what, unsigned long a, unsigned long b)
{
	char line[200];
	int n = snprintf(line, sizeof(line), "prog_rt_sigalloc: %s (%lu, %lu) after %ld handlers\n",
			 what, a, b, (long)handler_count);
	if (n > 0)
		(void)!write(2, line, (size_t)n);
	_exit(70);
}

static void on_alarm(int sig)
{
	(void)sig;
	volatile struct trc__thread *t = &trc__self;
	int ring = t->prod.data != NULL;
	uint8_t ok = *t->ok_flag;
	uint64_t w0 = t->prod.write, d0 = t->prod.dropped;
	long k = handler_count;
	char *p = malloc(HANDLER_BYTES + (size_t)(k % MAX_LOGGED));
	if (!p)
		return;
	memset(p, 1, 777);
	uint64_t w1 = t->prod.write, d1 = t->prod.dropped;
	free(p);
	uint64_t w2 = t->prod.write, d2 = t->prod.dropped;
	if (k < MAX_LOGGED)
		logged[k] = (struct handler_log){(uint8_t)ring, ok, w0, w1, w2, d0, d2};
	handler_count++;
	handler_in_emit += ring && !ok;
	handler_no_ring += !ring;
	handler_wrote += ring && w2 != w0;
	handler_dropped += ring && d2 != d0;
	if (!ring)
		return;
	if (ok && w1 == w0 && d1 == d0)
		breach("a handler found the flag 1 but its ALLOC was neither written nor dropped",
		       (unsigned long)w0, (unsigned long)d0);
	if (!ok && (w2 != w0 || d2 != d0))
		breach("a handler found the flag 0 but wrote", (unsigned long)w0,
		       (unsigned long)w2);
	if (*t->ok_flag != ok)
		breach("a handler left the flag changed", ok, *t->ok_flag);
	if (w2 != w0)
		handler_end = w2;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Main's side of the protocol checks (see the top): outside an emit. */
static void check_main(const char *when)
{
	volatile struct trc__thread *t = &trc__self;
	if (!t->prod.data)
		return;
	uint8_t ok = *t->ok_flag;
	if (ok != 1)
		breach(when, ok, 0);
	/* The handler's end first: a handler that runs between the two loads moves both, and the
	 * write position loaded second is then past the end loaded first. */
	uint64_t end = handler_end;
	uint64_t w = t->prod.write;
	if ((int64_t)(w - end) < 0)
		breach("the write position went back below a handler's records", (unsigned long)w,
		       (unsigned long)end);
}

int main(int argc, char **argv)
{
	double secs = (argc > 1 ? atof(argv[1]) : 300) / 1000.0;
	long min_iters = argc > 3 ? atol(argv[3]) : 0;
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
	while (now_s() < end || iters < min_iters) {
		sigprocmask(SIG_UNBLOCK, &alrm, NULL);
		for (int i = 0; i < 20; i++) {
			check_main("the flag is not 1 before a counter");
			TRC_COUNTER("main", i);
			check_main("the flag is not 1 after a counter");
		}
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
	printf("iters=%ld handler=%ld in_emit=%ld no_ring=%ld wrote=%ld dropped=%ld "
	       "handler_bytes=%d logged=%d\n",
	       iters, (long)handler_count, (long)handler_in_emit, (long)handler_no_ring,
	       (long)handler_wrote, (long)handler_dropped, HANDLER_BYTES, MAX_LOGGED);
	FILE *log = argc > 2 ? fopen(argv[2], "w") : NULL;
	for (long k = 0; log && k < handler_count && k < MAX_LOGGED; k++) {
		const struct handler_log *h = &logged[k];
		fprintf(log, "%ld %u %u %lu %lu %lu %lu %lu\n", k, h->ring, h->ok,
			(unsigned long)h->w0, (unsigned long)h->w1, (unsigned long)h->w2,
			(unsigned long)h->d0, (unsigned long)h->d2);
	}
	if (log)
		fclose(log);
	return 0;
}
