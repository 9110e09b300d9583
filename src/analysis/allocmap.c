/* allocmap.c - live allocations over a u64map (see allocmap.h).
 *
 * Threads: none; one owner at a time.
 */
#include "allocmap.h"

#include <stdlib.h>

#include "u64map.h"

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
