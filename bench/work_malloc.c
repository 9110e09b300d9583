/* work_malloc.c - an allocation-heavy workload (bench=preload case=malloc, bench/peers.sh).
 *
 * Usage: work_malloc [OPS [PEAK_MIB]]   (defaults 20000000 and 128)
 *   churn  OPS rounds of free + malloc over a table of 4096 live blocks, sizes mixed (16 B to
 *          4 KiB, one in 256 of 64 KiB), the first byte of each block written and the next one
 *          read, so neither call can be optimised out;
 *   peak   then PEAK_MIB in 64 KiB blocks, every page touched, all freed: RSS rises to a known
 *          peak and falls (for checking the peak a tool reports).
 * Prints one line: work_malloc ops=N peak_mib=M wall_ns=W checksum=C. Same interface as
 * bench/peers/peer_malloc.c, so bench/peers.sh can use either. Built plain (linked with
 * libtrc.so, which costs nothing without a session), _finst and _pg by the Makefile.
 * Threads: one.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TABLE 4096u

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t next_random(uint64_t *state)
{
	/* splitmix64: cheap, and the size sequence is the same on every run */
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
	char *end = NULL;
	uint64_t ops = argc > 1 ? strtoull(argv[1], &end, 10) : 20000000u;
	if (argc > 1 && *end)
		ops = 0;
	uint64_t peak_mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 128u;
	if (argc > 3 || ops == 0 || peak_mib > (1u << 20)) {
		fprintf(stderr, "usage: work_malloc [OPS [PEAK_MIB]]\n");
		return 2;
	}
	static unsigned char *table[TABLE];
	uint64_t state = 42, checksum = 0, t0 = clock_ns();
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t r = next_random(&state);
		unsigned k = (unsigned)r & (TABLE - 1);
		size_t size = ((r >> 16) & 255) == 0 ? 65536 : 16 + (size_t)((r >> 24) % 4081);
		free(table[k]);
		table[k] = malloc(size);
		if (!table[k])
			return 1;
		table[k][0] = (unsigned char)i;
		unsigned char *other = table[(k + 1) & (TABLE - 1)];
		checksum += other ? other[0] : 0;
	}
	size_t blocks = (size_t)peak_mib * 16, block_bytes = 65536;
	unsigned char **big = calloc(blocks ? blocks : 1, sizeof(*big));
	if (!big)
		return 1;
	for (size_t b = 0; b < blocks; b++) {
		if (!(big[b] = malloc(block_bytes)))
			return 1;
		for (size_t off = 0; off < block_bytes; off += 4096)
			big[b][off] = (unsigned char)b;
	}
	for (size_t b = 0; b < blocks; b++) {
		checksum += big[b][block_bytes - 4096];
		free(big[b]);
	}
	free(big);
	for (unsigned k = 0; k < TABLE; k++)
		free(table[k]);
	printf("work_malloc ops=%" PRIu64 " peak_mib=%" PRIu64 " wall_ns=%" PRIu64
	       " checksum=%" PRIu64 "\n",
	       ops, peak_mib, clock_ns() - t0, checksum);
	return 0;
}
