/* work_paced.c - a workload for bench=e2e, runnable by hand:
 *   work_paced THREADS RATE_PER_THREAD SECONDS
 * Each thread emits span begin/end events at RATE_PER_THREAD events per second (RATE 0: as
 * fast as it can) for SECONDS, in batches of about 0.5 ms worth of events, sleeping off its
 * lead after each batch (spinning only for the last few microseconds).
 * Prints "emitted N cpu_s X" (its own CPU time, so a harness can tell the recorder's CPU from
 * the program's). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "trc.h"

static double rate;
static double seconds;
static long counts[64];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	long *count = arg;
	double t0 = now_s();
	double end = t0 + seconds;
	/* Emit in batches of about half a millisecond's worth, then sleep off the lead: a real
	 * program at this rate does other work between events, it does not spin, and a spinning
	 * producer would steal the recorder's core on a small machine. */
	long batch = rate > 0 ? (long)(rate / 2000.0) : 4096;
	if (batch < 256)
		batch = 256;
	batch &= ~1L;
	long n = 0;
	for (;;) {
		for (long i = 0; i < batch; i += 2) {
			TRC_BEGIN("paced");
			TRC_END("paced");
		}
		n += batch;
		double t = now_s();
		if (t >= end)
			break;
		if (rate > 0) {
			double due = t0 + (double)n / rate;
			if (due - t > 100e-6) {
				double nap = due - t - 50e-6; /* timer slack is about 50 us */
				struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
				nanosleep(&ts, NULL);
				t = now_s();
			}
			while (due > t && t < end)
				t = now_s();
		}
	}
	*count = n;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: work_paced THREADS RATE_PER_THREAD SECONDS\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	rate = atof(argv[2]);
	seconds = atof(argv[3]);
	if (threads < 1 || threads > 64 || seconds <= 0)
		return 2;
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, &counts[i]);
	long total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		total += counts[i];
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	/* end_mono_ns: when the program is done, for bench=e2e's finish_s (exit to trace-run's
	 * exit) */
	printf("emitted %ld cpu_s %.6f end_mono_ns %lld\n", total, cpu,
	       (long long)end.tv_sec * 1000000000ll + end.tv_nsec);
	return 0;
}
