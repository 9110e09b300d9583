/* prog_touch_threads.c - a multi-threaded process whose RSS is known and whose trace buffers
 * grow: `prog_touch_threads THREADS MIB MS`.
 *
 * Purpose: the process of a traced tree that peaks highest, with a peak that is a range (its
 * rings grow while it runs, so the buffers' share at the moment of the peak is not known).
 * THREADS threads emit events for MS milliseconds, which makes each claim a ring and fault it
 * in as the drain lags; meanwhile the main thread touches MIB MiB (one private anonymous
 * mapping, every page written). After MS ms it prints "done\n" and exits 0 with the threads
 * still emitting, as many programs do (so its rings may grow after its runtime wrote its exit
 * record); 2 on a usage error, 1 when memory or a thread cannot be had.
 *
 * Threads: THREADS emitters (never joined) and the main thread.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "trc.h"

#define PTT_MAX_THREADS 32

static void *ptt_emit(void *arg)
{
	(void)arg;
	int64_t i = 0;
	for (;;)
		TRC_INSTANT("touch_threads.tick", i++);
	return NULL;
}

/* Not instrumented: in the ASan build each checked store reads the shadow of its page, and
 * those reads commit shadow pages, so the growth would not be MIB MiB. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address")))
#endif
#endif
static int
ptt_touch(unsigned long mib)
{
	size_t bytes = (size_t)mib << 20;
	long page = sysconf(_SC_PAGESIZE);
	if (!mib)
		return 0;
	unsigned char *p =
		mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t off = 0; off < bytes; off += (size_t)page)
		p[off] = 1;
	return 0;
}

int main(int argc, char **argv)
{
	char *e1, *e2, *e3;
	if (argc != 4)
		goto usage;
	long threads = strtol(argv[1], &e1, 10);
	unsigned long mib = strtoul(argv[2], &e2, 10);
	long ms = strtol(argv[3], &e3, 10);
	if (*e1 || *e2 || *e3 || threads < 1 || threads > PTT_MAX_THREADS || mib > (1ul << 20) ||
	    ms < 0)
		goto usage;
	pthread_t th[PTT_MAX_THREADS];
	for (long i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, ptt_emit, NULL) != 0) {
			fprintf(stderr, "prog_touch_threads: cannot start a thread\n");
			return 1;
		}
	if (ptt_touch(mib) != 0) {
		fprintf(stderr, "prog_touch_threads: cannot map %lu MiB\n", mib);
		return 1;
	}
	struct timespec ts = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
	printf("done\n");
	exit(0);

usage:
	fprintf(stderr, "usage: prog_touch_threads THREADS MIB MS\n");
	return 2;
}
