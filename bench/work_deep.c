/* work_deep.c - allocations 30 frames deep through a library without frame pointers
 * (bench=preload case=deep-stacks).
 *
 * Usage: work_deep [OPS [PATHS]]   (defaults 2000000 and 8)
 *   OPS rounds of free + malloc over a table of 4096 live blocks (16 B to 1 KiB), each malloc
 *   made by lib_deep.so's deep_alloc 30 frames below churn (bench/lib_deep.c, loaded with
 *   dlopen from this program's directory), on one of PATHS distinct call paths (1-8), the path
 *   changing every 16 rounds: the capture's cache hits on a repeat and misses on a change.
 * Prints one line: work_deep ops=N paths=P wall_ns=W checksum=C.
 * Threads: one.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TABLE 4096u
#define DEPTH 30

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef void *(*deep_fn)(int path, int depth, size_t size);

__attribute__((noipa)) static uint64_t churn(deep_fn deep, uint64_t ops, unsigned paths)
{
	static unsigned char *table[TABLE];
	uint64_t state = 42, checksum = 0;
	for (uint64_t i = 0; i < ops; i++) {
		state = state * 6364136223846793005u + 1442695040888963407u;
		uint64_t r = state >> 24;
		unsigned k = (unsigned)r & (TABLE - 1);
		size_t size = 16 + (size_t)((r >> 12) % 1009);
		free(table[k]);
		table[k] = deep((int)((i >> 4) % paths), DEPTH, size);
		if (!table[k])
			exit(1);
		table[k][0] = (unsigned char)i;
		unsigned char *other = table[(k + 1) & (TABLE - 1)];
		checksum += other ? other[0] : 0;
	}
	for (unsigned k = 0; k < TABLE; k++)
		free(table[k]);
	return checksum;
}

int main(int argc, char **argv)
{
	char *end = NULL;
	uint64_t ops = argc > 1 ? strtoull(argv[1], &end, 10) : 2000000u;
	if (argc > 1 && *end)
		ops = 0;
	unsigned long paths = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
	if (argc > 3 || ops == 0 || paths < 1 || paths > 8) {
		fprintf(stderr, "usage: work_deep [OPS [PATHS]]\n");
		return 2;
	}
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 16);
	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "lib_deep.so");
	void *h = dlopen(path, RTLD_NOW);
	deep_fn deep = h ? (deep_fn)(uintptr_t)dlsym(h, "deep_alloc") : NULL;
	if (!deep) {
		fprintf(stderr, "work_deep: %s\n", dlerror());
		return 1;
	}
	uint64_t t0 = clock_ns();
	uint64_t checksum = churn(deep, ops, (unsigned)paths);
	printf("work_deep ops=%" PRIu64 " paths=%lu wall_ns=%" PRIu64 " checksum=%" PRIu64 "\n",
	       ops, paths, clock_ns() - t0, checksum);
	return 0;
}
