/* prog_scribble.c - a traced program with a wild pointer: `prog_scribble THREADS MS`. One thread
 * writes random words over the whole session region it shares with the recorder (mapped from
 * TRC_SESSION_FD, as a stray pointer into that mapping would; half of them into its first 64
 * KiB, where the header and the slot table are) for MS milliseconds, while THREADS
 * threads allocate and emit events. Prints "scribbled N words" and exits 0. Untraced (no
 * session) it only allocates. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trc.h"

static atomic_int stop;

static void *allocate(void *arg)
{
	(void)arg;
	uint64_t i = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		void *p = malloc(16 + (i % 512));
		TRC_INSTANT("scribble.alloc", (int64_t)i);
		free(p);
		i++;
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	double ms = argc > 2 ? atof(argv[2]) : 500;
	pthread_t th[64];
	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, allocate, NULL);
	uint64_t words = 0;
	const char *env = getenv("TRC_SESSION_FD");
	struct stat st;
	uint64_t *region = NULL;
	size_t n = 0;
	if (env && fstat(atoi(env), &st) == 0 && st.st_size > 0) {
		n = (size_t)st.st_size / 8;
		region = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      atoi(env), 0);
		if (region == MAP_FAILED)
			region = NULL;
	}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	double end = now_s() + ms / 1e3;
	while (now_s() < end) {
		for (int k = 0; k < 4096 && region; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Half into the first 64 KiB (header, slot table: the counters), half
			 * anywhere (rings). */
			size_t at = k & 1 ? x % n : x % (n < 8192 ? n : 8192);
			region[at] = x * 0x2545f4914f6cdd1dull;
			words++;
		}
		if (!region)
			usleep(1000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("scribbled %s\n", words ? "some words" : "nothing");
	return 0;
}
