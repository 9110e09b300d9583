/* peer_calls.c - a function-call-heavy program for the peer comparison (bench/peers.sh).
 *
 * Purpose: peer workload 3 when the project's own bench/work_calls is not built. bench/peers.sh
 * builds it three ways: plain (the untraced time), -pg (for `uftrace record`) and
 * -finstrument-functions (for trace-run, whose preload library provides the
 * __cyg_profile_func_enter/exit hooks), so every tool sees the same calls.
 * Usage: peer_calls [CALLS]   (default 12000000): CALLS/3 iterations of outer(), which calls
 *   inner() twice: three instrumented calls per iteration, six entry/exit events.
 * Prints one line: peer_calls calls=N wall_ns=W checksum=C
 * Threads: one. Built only by bench/peers.sh.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* noinline and (gcc) noclone: each call stays a real, instrumented call under every build */
#if defined(__clang__)
#define PEER_CALL __attribute__((noinline))
#else
#define PEER_CALL __attribute__((noinline, noclone))
#endif

PEER_CALL static uint64_t inner(uint64_t x)
{
	return (x * 0x9e3779b97f4a7c15u) ^ (x >> 7);
}

PEER_CALL static uint64_t outer(uint64_t x)
{
	return inner(x) + inner(x + 1);
}

int main(int argc, char **argv)
{
	uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 12000000u;
	if (argc > 2 || calls < 3) {
		fprintf(stderr, "usage: peer_calls [CALLS]\n");
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t sum = 0;
	for (uint64_t i = 0; i < calls / 3; i++)
		sum += outer(i);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("peer_calls calls=%" PRIu64 " wall_ns=%" PRIu64 " checksum=%" PRIu64 "\n",
	       calls / 3 * 3,
	       (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec -
		       (uint64_t)a.tv_nsec,
	       sum);
	return 0;
}
