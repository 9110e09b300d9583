/* work_calls.c - a function-call-heavy workload (bench=preload case=calls, bench/peers.sh).
 *
 * Usage: work_calls [CALLS]   (default 12000000): CALLS/3 rounds of outer(), which calls
 *   inner() twice, so three real calls a round (six entry/exit events when instrumented).
 * Prints one line: work_calls calls=N wall_ns=W checksum=C. Same interface as
 * bench/peers/peer_calls.c. The Makefile builds it plain (work_calls), with
 * -finstrument-functions (work_calls_finst: recorded through libtrc-preload.so's
 * __cyg_profile_func_enter/exit) and with -pg (work_calls_pg, for uftrace).
 * Threads: one.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* noinline, noclone: every call stays a real call, instrumented the same in every build */
__attribute__((noinline, noclone)) static uint64_t inner(uint64_t x)
{
	return (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9u;
}

__attribute__((noinline, noclone)) static uint64_t outer(uint64_t x)
{
	return inner(x) ^ inner(x + 0x9e3779b97f4a7c15u);
}

int main(int argc, char **argv)
{
	char *end = NULL;
	uint64_t calls = argc > 1 ? strtoull(argv[1], &end, 10) : 12000000u;
	if (argc > 2 || calls < 3 || (argc > 1 && *end)) {
		fprintf(stderr, "usage: work_calls [CALLS]\n");
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t checksum = 0;
	for (uint64_t i = 0; i < calls / 3; i++)
		checksum += outer(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	uint64_t wall = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec -
			(uint64_t)a.tv_nsec;
	printf("work_calls calls=%" PRIu64 " wall_ns=%" PRIu64 " checksum=%" PRIu64 "\n",
	       calls / 3 * 3, wall, checksum);
	return 0;
}
