/* allocmap.c - live allocations over a u64map (see allocmap.h).
 *
 * Threads: none; one owner at a time.
 */
#include "allocmap.h"

#include <stdlib.h>

#include "u64map.h"

struct allocmap {
	struct u64map map;
};

struct allocmap *allocmap_new(size_t max_entries)
{
	struct allocmap *a = malloc(sizeof(*a));
	if (!a)
		return NULL;
	u64map_init(&a->map, max_entries);
	return a;
}

int allocmap_put(struct allocmap *a, uint64_t addr, uint64_t size, uint64_t *replaced_size)
{
	bool had = false;
	uint64_t old = 0;
	int err = u64map_put(&a->map, addr, size, &old, &had);
	if (replaced_size)
		*replaced_size = had ? old : 0;
	return err;
}

bool allocmap_take(struct allocmap *a, uint64_t addr, uint64_t *size)
{
	return u64map_del(&a->map, addr, size);
}

bool allocmap_next(const struct allocmap *a, size_t *pos, uint64_t *addr, uint64_t *size)
{
	return u64map_next(&a->map, pos, addr, size);
}

size_t allocmap_count(const struct allocmap *a)
{
	return u64map_count(&a->map);
}

void allocmap_free(struct allocmap *a)
{
	if (!a)
		return;
	u64map_destroy(&a->map);
	free(a);
}
