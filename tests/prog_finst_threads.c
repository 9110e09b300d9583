/* prog_finst_threads.c - threads that end inside instrumented frames (Makefile: prog_finst_*,
 * built with -finstrument-functions), for tests/test_calltrees.c. `prog_finst_threads MODE`:
 *   exit    a thread runs t_main() -> t_a() -> t_b(), which calls pthread_exit; main joins it,
 *           then calls after()
 *   cancel  a thread runs c_main() -> c_loop(), which waits in pthread_testcancel until main
 *           cancels it; main joins it, then calls after()
 *   churn   2000 threads one after another, each calling after(); then prints
 *           "rss_kb=N after100=M vm_kb=V vm_after100=W", the process's VmRSS and VmSize
 *           now and after the first 100
 * Exit 0; 1 when a call fails. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static atomic_int looping;

NOINLINE static void after(void)
{
	sink++;
}

NOINLINE static void t_b(void)
{
	sink++;
	pthread_exit(NULL);
}

NOINLINE static void t_a(void)
{
	t_b();
	sink++;
}

NOINLINE static void *t_main(void *arg)
{
	(void)arg;
	t_a();
	return NULL;
}

NOINLINE static void c_loop(void)
{
	atomic_store(&looping, 1);
	for (;;) {
		pthread_testcancel();
		usleep(1000);
	}
}

NOINLINE static void *c_main(void *arg)
{
	(void)arg;
	c_loop();
	return NULL;
}

NOINLINE static void *churn_one(void *arg)
{
	(void)arg;
	after();
	return NULL;
}

/* The KiB of /proc/self/status's line KEY ("VmRSS:"), -1 when it has none. */
static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0)
			kb = strtol(line + n, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static int churn(void)
{
	long first = 0, vm_first = 0;
	for (int i = 0; i < 2000; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, churn_one, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
		if (i == 99) {
			first = status_kb("VmRSS:");
			vm_first = status_kb("VmSize:");
		}
	}
	printf("rss_kb=%ld after100=%ld vm_kb=%ld vm_after100=%ld\n", status_kb("VmRSS:"), first,
	       status_kb("VmSize:"), vm_first);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	if (strcmp(mode, "churn") == 0)
		return churn();
	bool cancel = strcmp(mode, "cancel") == 0;
	pthread_t t;
	if (pthread_create(&t, NULL, cancel ? c_main : t_main, NULL) != 0)
		return 1;
	if (cancel) {
		while (!atomic_load(&looping))
			usleep(1000);
		if (pthread_cancel(t) != 0)
			return 1;
	}
	if (pthread_join(t, NULL) != 0)
		return 1;
	after();
	return 0;
}
