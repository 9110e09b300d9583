/* prog_e2e_emit.c - emits a known number of events from several threads, for the end-to-end
 * accounting tests: `prog_e2e_emit THREADS EVENTS_PER_THREAD [crash] [sleep MS] [linger]
 * [pidfile P]`. Each thread emits EVENTS_PER_THREAD records (begin/end pairs, plus one instant
 * when odd) and the program prints "emitted N" with the total. With `linger` the threads
 * sleep the MS after emitting, before they exit (their streams stay open meanwhile), and print
 * "emitted N" first. With `crash` the main thread then
 * dereferences NULL (SIGSEGV) after printing. With `main-first` the main thread emits one
 * instant before it starts the threads (not counted in N), so its ring is live beside theirs. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trc.h"

static long events_per_thread;
static long linger_ms; /* the emitting threads' sleep before they exit */

static void *emit_thread(void *arg)
{
	(void)arg;
	trc_thread_name("emitter");
	long i = 0;
	for (; i + 2 <= events_per_thread; i += 2) {
		TRC_BEGIN("e2e.work");
		TRC_END("e2e.work");
	}
	if (i < events_per_thread)
		TRC_INSTANT("e2e.tail", i);
	if (linger_ms) {
		struct timespec ts = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: prog_e2e_emit THREADS EVENTS [crash] [sleep MS] [linger] "
				"[main-first] "
				"[pidfile P]\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	events_per_thread = atol(argv[2]);
	int crash = 0, linger = 0, main_first = 0;
	long sleep_ms = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "crash"))
			crash = 1;
		else if (!strcmp(argv[i], "linger"))
			linger = 1;
		else if (!strcmp(argv[i], "main-first"))
			main_first = 1;
		else if (!strcmp(argv[i], "sleep") && i + 1 < argc)
			sleep_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "pidfile") && i + 1 < argc) {
			FILE *f = fopen(argv[++i], "w");
			if (f) {
				fprintf(f, "%d\n", (int)getpid());
				fclose(f);
			}
		}
	}
	pthread_t tids[256];
	if (threads < 1 || threads > 256)
		return 2;
	if (linger) {
		linger_ms = sleep_ms;
		sleep_ms = 0;
		printf("emitted %ld\n", (long)threads * events_per_thread);
		fflush(stdout);
	}
	if (main_first)
		TRC_INSTANT("e2e.main", 0);
	for (int t = 0; t < threads; t++)
		pthread_create(&tids[t], NULL, emit_thread, NULL);
	for (int t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	if (!linger)
		printf("emitted %ld\n", (long)threads * events_per_thread);
	fflush(stdout);
	if (sleep_ms) {
		struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (crash) {
		/* the default action, even under a sanitizer that installed its own handler */
		signal(SIGSEGV, SIG_DFL);
		volatile int *p = NULL;
		*p = 1;
	}
	return 0;
}
