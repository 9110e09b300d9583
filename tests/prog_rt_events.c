/* prog_rt_events.c - a traced program for the runtime's process tests (tests/test_rt_process.c):
 *   prog_rt_events THREADS EVENTS [exec|fork|exit-thread]
 * The main thread and THREADS threads each emit EVENTS counters "prog" with value
 * (index << 32 | i) (index 0 = main), so the test can check counts and attribution exactly.
 *   exec         then execs itself without the mode: the new image emits again, same pid
 *   fork         then forks a child that emits EVENTS counters with index 1000 and exits
 *   exit-thread  a secondary thread, after emitting, calls exit(3) while main waits forever
 * Prints "emitted N" (this image's total; the fork child prints nothing) and exits 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trc.h"

static long events;

static void emit(long index)
{
	for (long i = 0; i < events; i++)
		TRC_COUNTER("prog", (index << 32) | i);
}

static void *thread_main(void *arg)
{
	emit((long)(intptr_t)arg);
	return NULL;
}

static void *exit_thread(void *arg)
{
	emit((long)(intptr_t)arg);
	fflush(stdout);
	exit(3);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long threads = atol(argv[1]);
	events = atol(argv[2]);
	const char *mode = argc > 3 ? argv[3] : "";
	pthread_t th[64];
	if (threads < 0 || threads > 64 || events < 0)
		return 2;
	emit(0);
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)(i + 1));
	for (long i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("emitted %ld\n", (threads + 1) * events);
	fflush(stdout);
	if (strcmp(mode, "exec") == 0) {
		char *args[] = {argv[0], argv[1], argv[2], NULL};
		execv(argv[0], args);
		return 4;
	}
	if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			emit(1000);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 5;
	}
	if (strcmp(mode, "exit-thread") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exit_thread, (void *)(intptr_t)(threads + 1));
		for (;;)
			pause();
	}
	return 0;
}
