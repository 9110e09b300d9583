/* prog_flood_survivor.c - a program that leaves a process of its tree flooding its ring after
 * it ends, for the tests of trace-run's finish: `prog_flood_survivor PIDFILE`. It forks a
 * child that emits instants without pause (it stops by itself after 60 s, so a failed test
 * leaves nothing behind for long), waits until the child has emitted a while, writes the
 * child's pid to PIDFILE and exits 0: trace-run's last drain then always finds more. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "trc.h"

#define FLOODERS 3

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One flooding thread: instants without pause until 60 s after it started. */
static void *flood(void *arg)
{
	(void)arg;
	trc_thread_name("flooder");
	const double end = now_s() + 60.0;
	for (;;) {
		for (int i = 0; i < 100000; i++)
			TRC_INSTANT("flood.tick", i);
		if (now_s() > end)
			_exit(0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prog_flood_survivor PIDFILE\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0)
		return 3;
	if (pid == 0) {
		/* Several threads, so that some ring has always published more by the next pass of
		 * the drain, whichever of them the scheduler runs. */
		pthread_t t[FLOODERS];
		for (int i = 0; i < FLOODERS; i++)
			pthread_create(&t[i], NULL, flood, NULL);
		flood(NULL);
	}
	struct timespec nap = {0, 300000000L};
	nanosleep(&nap, NULL);
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 4;
	fprintf(f, "%d\n", (int)pid);
	fclose(f);
	return 0;
}
