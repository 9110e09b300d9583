/* prog_preload_exact.c - known allocations through every member of the malloc family, between
 * two markers, for tests/test_preload.c's exact check of what the preload hooks record.
 *
 * The main thread emits INSTANT "exact" 0 (a warm-up: the thread's first event and the name's
 * interning may allocate), then 1, the calls below, then 2. Between 1 and 2 the only
 * allocations are the ones written here (none of these calls allocates on its own in glibc), so
 * the test can expect the exact ALLOC and FREE records, in order. After the end marker it
 * prints the addresses: "a=0x... b=0x... ...". Exits 0, or 2 when an allocation failed.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trc.h"

static void mark(int64_t v)
{
	TRC_INSTANT("exact", v);
}

/* Keeps the compiler from removing an allocation it can see is unused. */
static void *volatile sink;
/* Kept as numbers when taken: a and d are freed before they are printed. */
static volatile uintptr_t a_addr, d_addr;
/* NULL the compiler cannot see (it turns realloc(NULL, n) into malloc(n), drops free(NULL)). */
static void *volatile null_ptr;
/* Sizes no allocation can have (volatile: the compiler would refuse the calls). */
static volatile size_t too_big = SIZE_MAX - 4096;

int main(void)
{
	mark(0);
	mark(1);
	void *a = malloc(1000);
	a_addr = (uintptr_t)a;
	sink = a;
	void *b = calloc(10, 300);
	void *c = realloc(a, 50000); /* FREE a, ALLOC c 50000 */
	void *d = realloc(null_ptr, 700); /* as malloc: ALLOC d 700, no FREE */
	sink = d;
	d_addr = (uintptr_t)d;
	void *e = realloc(d, 0); /* frees d, returns NULL: FREE d */
	free(null_ptr); /* nothing */
	void *big = realloc(c, too_big); /* fails: c stays, nothing recorded */
	void *huge = calloc(too_big / 2, 3); /* n*size overflows: NULL, nothing recorded */
	void *f = NULL;
	if (posix_memalign(&f, 64, 1100) != 0)
		return 2;
	void *g = aligned_alloc(256, 1280);
	void *h = memalign(128, 1300);
	void *i = valloc(1400);
	void *j = pvalloc(1500);
	void *k = reallocarray(null_ptr, 20, 30); /* ALLOC k 600 */
	if (!b || !c || e || big || huge || !g || !h || !i || !j || !k)
		return 2;
	memset(b, 1, 3000);
	memset(c, 2, 50000);
	uintptr_t addr[] = {a_addr,	  (uintptr_t)b, (uintptr_t)c, d_addr,	    (uintptr_t)f,
			    (uintptr_t)g, (uintptr_t)h, (uintptr_t)i, (uintptr_t)j, (uintptr_t)k};
	free(b);
	free(c);
	free(f);
	free(g);
	free(h);
	free(i);
	free(j);
	free(k);
	mark(2);
	const char names[] = "abcdfghijk";
	for (int n = 0; n < 10; n++)
		printf("%c=%#lx ", names[n], (unsigned long)addr[n]);
	printf("\n");
	return 0;
}
