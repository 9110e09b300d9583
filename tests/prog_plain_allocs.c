/* prog_plain_allocs.c - every entry of the malloc family once, with sizes no C library picks
 * (70001 to 70050 bytes), each block written whole and freed: a program whose allocations a
 * test can count exactly in the trace (tests/test_preload_asan.c). Built without sanitizers
 * in every tier (prog_plain_*), so the preload library in LD_PRELOAD, not a sanitizer's
 * allocator linked into the program, is the first malloc it finds. Prints "allocs 8 bytes N".
 *
 *   malloc 70001, calloc 7 x 10001 (70007), realloc of the first to 70010, posix_memalign
 *   70020 (64), aligned_alloc 70144 (128), memalign 70030 (256), valloc 70040, reallocarray
 *   2 x 35025 (70050): 8 blocks, 8 frees (the realloc frees the first block). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	void *b[8];
	size_t sz[8] = {70001, 70007, 70010, 70020, 70144, 70030, 70040, 70050};
	b[0] = malloc(sz[0]);
	b[1] = calloc(7, 10001);
	memset(b[0], 1, sz[0]);
	b[2] = realloc(b[0], sz[2]);
	b[0] = NULL;
	if (posix_memalign(&b[3], 64, sz[3]) != 0)
		return 1;
	b[4] = aligned_alloc(128, sz[4]);
	b[5] = memalign(256, sz[5]);
	b[6] = valloc(sz[6]);
	b[7] = reallocarray(NULL, 2, 35025);
	size_t total = 0;
	for (int i = 1; i < 8; i++) {
		if (!b[i])
			return 1;
		memset(b[i], 2, sz[i]);
		total += sz[i];
	}
	total += sz[0];
	for (int i = 1; i < 8; i++)
		free(b[i]);
	printf("allocs 8 bytes %zu\n", total);
	return 0;
}
