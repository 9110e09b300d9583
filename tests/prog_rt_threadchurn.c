/* prog_rt_threadchurn.c - many short-lived threads (issue 12 item 10): `prog_rt_threadchurn
 * THREADS BATCH EVENTS` starts THREADS threads, BATCH at a time (each batch joined before the
 * next), each emitting EVENTS instants; prints "emitted N". The recorder's memory must not
 * grow with the number of threads ever seen. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "trc.h"

static long events;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < events; i++)
		TRC_INSTANT("churn.work", i);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc > 1 ? atol(argv[1]) : 10000;
	long batch = argc > 2 ? atol(argv[2]) : 1000;
	events = argc > 3 ? atol(argv[3]) : 10;
	if (batch < 1 || batch > 4096)
		return 2;
	pthread_t *t = calloc((size_t)batch, sizeof(*t));
	if (!t)
		return 1;
	for (long done = 0; done < threads; done += batch) {
		long k = threads - done < batch ? threads - done : batch;
		for (long i = 0; i < k; i++)
			if (pthread_create(&t[i], NULL, worker, NULL) != 0)
				return 1;
		for (long i = 0; i < k; i++)
			pthread_join(t[i], NULL);
	}
	printf("emitted %ld\n", threads * events);
	free(t);
	return 0;
}
