/* prog_alloc_common.h - the body of the tests/prog_alloc_*.c programs: a program that uses its
 * allocator the way real programs do (the whole malloc family, malloc_usable_size on every
 * block) and asks the allocator itself whether it is in charge.
 *
 * Each prog_alloc_NAME.c is this file, linked with one allocator (Makefile: PROG_ALLOC_LIBS_NAME).
 * The allocator is found at run time (dlsym(RTLD_DEFAULT) of jemalloc's mallctl, tcmalloc's
 * MallocExtension_GetOwnership or mimalloc's mi_is_in_heap_region), so the same program also
 * answers for an allocator put in LD_PRELOAD. Prints "allocator NAME: N blocks owned, usable ok"
 * and exits 0 when every block is the allocator's own; exit 3 when one is not, 4 when no
 * allocator that can be asked is loaded.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG_ALLOC_BLOCKS 200

typedef int (*prog_mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*prog_ownership_fn)(const void *);
typedef bool (*prog_in_heap_fn)(const void *);

static const char *prog_alloc_name;

/* 1: the block is the loaded allocator's, 0: it is not, -1: no allocator to ask. */
static int prog_alloc_owned(void *p)
{
	prog_mallctl_fn mallctl = (prog_mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	if (mallctl) {
		prog_alloc_name = "jemalloc";
		unsigned arena;
		size_t sz = sizeof(arena);
		return mallctl("arenas.lookup", &arena, &sz, &p, sizeof(p)) == 0;
	}
	prog_ownership_fn own =
		(prog_ownership_fn)dlsym(RTLD_DEFAULT, "MallocExtension_GetOwnership");
	if (own) {
		prog_alloc_name = "tcmalloc";
		return own(p) == 1; /* MallocExtension_kOwned */
	}
	prog_in_heap_fn in_heap = (prog_in_heap_fn)dlsym(RTLD_DEFAULT, "mi_is_in_heap_region");
	if (in_heap) {
		prog_alloc_name = "mimalloc";
		return in_heap(p);
	}
	return -1;
}

int main(void)
{
	void *v[PROG_ALLOC_BLOCKS];
	int owned = 0, usable_ok = 1;
	for (int i = 0; i < PROG_ALLOC_BLOCKS; i++) {
		size_t n = 16 + (size_t)i * 40;
		switch (i % 6) {
		case 0:
			v[i] = malloc(n);
			break;
		case 1:
			v[i] = calloc(1, n);
			break;
		case 2:
			v[i] = realloc(malloc(8), n);
			break;
		case 3:
			if (posix_memalign(&v[i], 64, n) != 0)
				v[i] = NULL;
			break;
		case 4:
			v[i] = aligned_alloc(128, (n + 127) & ~(size_t)127);
			break;
		default:
			v[i] = memalign(256, n);
			break;
		}
		if (!v[i])
			return 2;
		memset(v[i], 0xa5, n);
		/* What jemalloc-linked programs do: ask the size of every block. */
		if (malloc_usable_size(v[i]) < n)
			usable_ok = 0;
		int o = prog_alloc_owned(v[i]);
		if (o < 0) {
			puts("no allocator to ask");
			return 4;
		}
		owned += o;
	}
	char *s = strdup("a string from libc");
	int o = prog_alloc_owned(s);
	owned += o > 0;
	free(s);
	for (int i = 0; i < PROG_ALLOC_BLOCKS; i++)
		free(v[i]);
	printf("allocator %s: %d blocks owned, usable %s\n", prog_alloc_name, owned,
	       usable_ok ? "ok" : "short");
	return owned == PROG_ALLOC_BLOCKS + 1 && usable_ok ? 0 : 3;
}
