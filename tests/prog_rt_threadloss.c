/* prog_rt_threadloss.c - losses of threads without a ring of their own (issue 12 item 11).
 * `prog_rt_threadloss THREADS N` (run with --max-threads smaller than THREADS): the threads
 * start together and each emits N instants, then waits for all the others, so the threads
 * that found no free slot lose their events (NO_SLOT). Thread 0 first emits 7 events as if
 * a signal handler had interrupted its slot claim (trc__self.busy set: REENTRANT, with no ring
 * yet). Every thread that holds a ring then has a signal handler emit 3 events while its own
 * emit is in progress (its fast-path flag cleared: REENTRANT, on its ring). Prints one line
 * "thread TID emitted E" per thread: E = events + lost of that thread. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "trc.h"

static long n;
static pthread_barrier_t start, done;

static void on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < 3; i++)
		TRC_INSTANT("tl.handler", i);
}

static void *worker(void *arg)
{
	long idx = (long)arg, emitted = 0;
	pthread_barrier_wait(&start);
	if (idx == 0) {
		trc__self.busy = 1; /* as inside a claim */
		for (int i = 0; i < 7; i++)
			TRC_INSTANT("tl.in_claim", i);
		trc__self.busy = 0;
		emitted += 7;
	}
	for (long i = 0; i < n; i++)
		TRC_INSTANT("tl.work", i);
	emitted += n;
	if (trc__self.prod.data) {
		*trc__self.ok_flag = 0; /* as inside an emit */
		raise(SIGUSR1);
		*trc__self.ok_flag = 1;
		emitted += 3;
	}
	printf("thread %d emitted %ld\n", (int)gettid(), emitted);
	pthread_barrier_wait(&done);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 6;
	n = argc > 2 ? atol(argv[2]) : 1000;
	if (threads < 1 || threads > 64)
		return 2;
	signal(SIGUSR1, on_usr1);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	pthread_barrier_init(&done, NULL, (unsigned)threads);
	pthread_t t[64];
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
