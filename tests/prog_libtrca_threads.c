/* prog_libtrca_threads.c - a program linked with libtrc.a whose worker threads emit and allocate:
 * `prog_libtrca_threads THREADS EVENTS`. Under trace-run the preload library brings libtrc.so
 * in too, so two copies of the runtime live in the process: it must still be recorded once, with
 * every event of every thread, including the allocations of a constructor that runs before
 * libtrc.a's attaches (10 of 48 bytes), the workers' (64 bytes, one in 100 events) and main's
 * last (12345 bytes). Prints "emitted N" (its TRC_COUNTERs) and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "trc.h"

static long events;
static long early_allocs;

/* Runs before libtrc.a's own constructor attaches (priority 101 comes first): the preload
 * library's runtime has already claimed a slot for this thread by then. */
__attribute__((constructor(101))) static void allocate_early(void)
{
	for (int i = 0; i < 10; i++) {
		void *volatile p = malloc(48);
		free(p);
		early_allocs++;
	}
}

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < events; i++) {
		TRC_COUNTER("libtrca.work", i);
		if (i % 100 == 0) {
			void *volatile p =
				malloc(64); /* volatile: the pair is not optimised away */
			free(p);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	events = argc > 2 ? atol(argv[2]) : 10000;
	pthread_t th[64];
	if (n > 64)
		n = 64;
	void *volatile p = malloc(100);
	free(p);
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, work, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	void *volatile last = malloc(12345); /* a size the test looks for: the last one */
	free(last);
	printf("emitted %ld\n", (long)n * events);
	return 0;
}
