/* trcfile_map.c - live allocations: address -> size of what is allocated and not yet freed.
 *
 * Purpose: the summary's live bytes and trace-dump chrome's heap counter, over u64map (which
 * caps it: past max_entries a put fails with -ENOSPC and the caller's figure is approximate).
 *
 * Threads: none; one owner at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trcfile.h"
#include "u64map.h"

/* ---- live allocations (public wrapper) -------------------------------------------------- */

struct trcfile_allocmap {
	struct u64map map;
};

struct trcfile_allocmap *trcfile_allocmap_new(size_t max_entries)
{
	struct trcfile_allocmap *a = malloc(sizeof(*a));
	if (!a)
		return NULL;
	u64map_init(&a->map, max_entries);
	return a;
}

int trcfile_allocmap_put(struct trcfile_allocmap *a, uint64_t addr, uint64_t size,
			 uint64_t *replaced_size)
{
	bool had = false;
	uint64_t old = 0;
	int err = u64map_put(&a->map, addr, size, &old, &had);
	if (replaced_size)
		*replaced_size = had ? old : 0;
	return err;
}

bool trcfile_allocmap_take(struct trcfile_allocmap *a, uint64_t addr, uint64_t *size)
{
	return u64map_del(&a->map, addr, size);
}

void trcfile_allocmap_free(struct trcfile_allocmap *a)
{
	if (!a)
		return;
	u64map_destroy(&a->map);
	free(a);
}
