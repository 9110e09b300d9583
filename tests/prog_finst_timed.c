/* prog_finst_timed.c - calls whose times are known, for the summary's function table
 * (Makefile: prog_finst_* get -finstrument-functions): main calls timed_outer twice; each
 * timed_outer calls timed_sleep(20 ms) twice and nothing else, so timed_sleep has 4 calls of
 * at least 20 ms inclusive (and as much self: it calls nothing instrumented), timed_outer 2
 * calls of at least 40 ms inclusive and almost no self time. Prints "done", exits 0. */
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) static void timed_sleep(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) static void timed_outer(void)
{
	timed_sleep(20);
	timed_sleep(20);
}

int main(void)
{
	timed_outer();
	timed_outer();
	puts("done");
	return 0;
}
