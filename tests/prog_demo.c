/* prog_demo.c - the `make demo` program: a small traced application with something to see.
 *
 * Four worker threads ("worker-0".."worker-3") and the main thread. Over ~1 s each worker takes
 * 20 steps, each a span "demo.step" that allocates and touches a 2 MiB block and does a burst
 * of small allocations with an instant "demo.tick" per burst, reporting the memory it holds as
 * a counter "demo.held_mib": RSS rises to ~160 MiB. Over the next ~1 s the workers free a block
 * per step: RSS falls back. The main thread wraps it all in a span "demo.run" and counts the
 * steps done in "demo.steps". Allocations are recorded when the preload library is loaded
 * (trace-run does that). Prints what it did; exit status 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trc.h"

#define WORKERS 4
#define STEPS 20
#define BLOCK_BYTES (2u << 20)
#define STEP_NS 50000000L

static atomic_int steps_done;

static void nap(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&ts, NULL);
}

static void small_burst(int n)
{
	void *p[64];
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 64; k++)
			p[k] = malloc(16 + (size_t)((i * 64 + k) % 200));
		for (int k = 0; k < 64; k++)
			free(p[k]);
	}
	TRC_INSTANT("demo.tick", n * 64);
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	char name[16];
	snprintf(name, sizeof(name), "worker-%d", id);
	trc_thread_name(name);
	char *blocks[STEPS];
	long held = 0;
	for (int s = 0; s < STEPS; s++) {
		TRC_SCOPE("demo.step");
		blocks[s] = malloc(BLOCK_BYTES);
		if (!blocks[s])
			abort();
		memset(blocks[s], id + s, BLOCK_BYTES); /* make it resident */
		held += BLOCK_BYTES >> 20;
		TRC_COUNTER("demo.held_mib", held);
		small_burst(20);
		atomic_fetch_add(&steps_done, 1);
		nap(STEP_NS);
	}
	for (int s = STEPS - 1; s >= 0; s--) {
		TRC_BEGIN("demo.release");
		free(blocks[s]);
		held -= BLOCK_BYTES >> 20;
		TRC_COUNTER("demo.held_mib", held);
		small_burst(5);
		TRC_END("demo.release");
		nap(STEP_NS);
	}
	return NULL;
}

int main(void)
{
	trc_thread_name("main");
	TRC_BEGIN("demo.run");
	pthread_t th[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int t = 0; t < 40; t++) {
		TRC_COUNTER("demo.steps", atomic_load(&steps_done));
		nap(STEP_NS);
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	TRC_END("demo.run");
	printf("prog_demo: %d workers, %d steps, peak ~%u MiB held, %s\n", WORKERS,
	       atomic_load(&steps_done), WORKERS * STEPS * (BLOCK_BYTES >> 20),
	       trc_enabled() ? "traced" : "not traced");
	return 0;
}
