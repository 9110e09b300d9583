/* peer_malloc.c - an allocation-heavy program for the peer comparison (bench/peers.sh).
 *
 * Purpose: peer workload 2 when the project's own bench/work_malloc is not built: the same
 * program runs untraced (under /usr/bin/time -v), under heaptrack and under trace-run, so the
 * slowdown and the peak RSS each tool reports can be compared against the untraced run.
 * Usage: peer_malloc [OPS [PEAK_MIB]]   (defaults 2000000 and 128)
 *   churn  OPS malloc/free pairs of mixed sizes (16 B to 4 KiB, one in 256 of 64 KiB) over a
 *          table of 4096 live blocks, each block's first byte written;
 *   peak   then PEAK_MIB in 64 KiB blocks, every page touched, all freed: RSS rises to a known
 *          peak and falls, so a tool's peak can be checked against /usr/bin/time's.
 * Prints one line: peer_malloc ops=N peak_mib=M wall_ns=W checksum=C
 * Threads: one. Built only by bench/peers.sh (plain cc, no library of this project).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 4096u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

int main(int argc, char **argv)
{
	uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000u;
	uint64_t peak_mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 128u;
	if (argc > 3 || ops == 0) {
		fprintf(stderr, "usage: peer_malloc [OPS [PEAK_MIB]]\n");
		return 2;
	}
	static unsigned char *live[SLOTS];
	uint64_t seed = 0x9e3779b97f4a7c15u, sum = 0;
	uint64_t t0 = now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = xorshift(&seed);
		unsigned k = (unsigned)(r & (SLOTS - 1));
		size_t size = (r >> 20) % 256 == 0 ? 65536 : 16 + (size_t)((r >> 32) % 4081);
		free(live[k]);
		live[k] = malloc(size);
		if (!live[k])
			return 1;
		live[k][0] = (unsigned char)i;
		sum += live[(k + 1) & (SLOTS - 1)] ? live[(k + 1) & (SLOTS - 1)][0] : 0;
	}

	size_t blocks = (size_t)peak_mib * 16, block = 65536;
	unsigned char **big = malloc(blocks * sizeof(*big));
	if (!big && blocks)
		return 1;
	for (size_t b = 0; b < blocks; b++) {
		big[b] = malloc(block);
		if (!big[b])
			return 1;
		for (size_t off = 0; off < block; off += 4096)
			big[b][off] = (unsigned char)b;
	}
	for (size_t b = 0; b < blocks; b++) {
		sum += big[b][block - 4096];
		free(big[b]);
	}
	free(big);
	for (unsigned k = 0; k < SLOTS; k++)
		free(live[k]);

	printf("peer_malloc ops=%" PRIu64 " peak_mib=%" PRIu64 " wall_ns=%" PRIu64
	       " checksum=%" PRIu64 "\n",
	       ops, peak_mib, now_ns() - t0, sum);
	return 0;
}
