/* trcfile_map.c - u64 -> u64 hash map for the reader's tables, the summary and live allocations.
 *
 * Purpose: one small open-addressing map (linear probing, load <= 1/2, backward-shift
 * deletion so no tombstones build up under alloc/free churn). Keys may be any value: slot
 * occupancy is a separate byte array. Growth doubles; max_n bounds what hostile input can make
 * it allocate.
 *
 * Threads: none; one owner at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trcfile_reader_priv.h"

void trcfile__map_init(struct trcfile__map *m, size_t max_n)
{
	memset(m, 0, sizeof(*m));
	m->max_n = max_n;
}

void trcfile__map_destroy(struct trcfile__map *m)
{
	if (!m)
		return;
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static int trcfile__map_grow(struct trcfile__map *m)
{
	size_t cap = m->cap ? 2 * m->cap : 16;
	uint64_t *keys = malloc(cap * sizeof(*keys));
	uint64_t *vals = malloc(cap * sizeof(*vals));
	uint8_t *used = calloc(cap, 1);
	if (!keys || !vals || !used) {
		free(keys);
		free(vals);
		free(used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = trcfile__map_hash(m->keys[i], cap);
		while (used[j])
			j = (j + 1) & (cap - 1);
		used[j] = 1;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	free(m->used);
	m->keys = keys;
	m->vals = vals;
	m->used = used;
	m->cap = cap;
	return 0;
}

uint64_t *trcfile__map_get(const struct trcfile__map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = trcfile__map_hash(key, m->cap);
	while (m->used[i]) {
		if (m->keys[i] == key)
			return &m->vals[i];
		i = (i + 1) & (m->cap - 1);
	}
	return NULL;
}

int trcfile__map_put(struct trcfile__map *m, uint64_t key, uint64_t val, uint64_t *old, bool *had)
{
	uint64_t *v = trcfile__map_get(m, key);
	if (v) {
		if (old)
			*old = *v;
		if (had)
			*had = true;
		*v = val;
		return 0;
	}
	if (had)
		*had = false;
	if (m->n >= m->max_n)
		return -ENOSPC;
	if (2 * (m->n + 1) > m->cap) {
		int err = trcfile__map_grow(m);
		if (err)
			return err;
	}
	size_t i = trcfile__map_hash(key, m->cap);
	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

bool trcfile__map_del(struct trcfile__map *m, uint64_t key, uint64_t *val)
{
	uint64_t *v = trcfile__map_get(m, key);
	if (!v)
		return false;
	if (val)
		*val = *v;
	size_t mask = m->cap - 1;
	size_t i = (size_t)(v - m->vals);
	/* Backward shift: pull later members of the probe run into the hole when their home
	 * slot is not inside (hole, them]. */
	size_t j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->used[j])
			break;
		size_t home = trcfile__map_hash(m->keys[j], m->cap);
		bool in_range = i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (in_range)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
	m->used[i] = 0;
	m->n--;
	return true;
}

/* ---- live allocations (public wrapper) -------------------------------------------------- */

struct trcfile_allocmap {
	struct trcfile__map map;
};

struct trcfile_allocmap *trcfile_allocmap_new(size_t max_entries)
{
	struct trcfile_allocmap *a = malloc(sizeof(*a));
	if (!a)
		return NULL;
	trcfile__map_init(&a->map, max_entries);
	return a;
}

int trcfile_allocmap_put(struct trcfile_allocmap *a, uint64_t addr, uint64_t size,
			 uint64_t *replaced_size)
{
	bool had = false;
	uint64_t old = 0;
	int err = trcfile__map_put(&a->map, addr, size, &old, &had);
	if (replaced_size)
		*replaced_size = had ? old : 0;
	return err;
}

bool trcfile_allocmap_take(struct trcfile_allocmap *a, uint64_t addr, uint64_t *size)
{
	return trcfile__map_del(&a->map, addr, size);
}

void trcfile_allocmap_free(struct trcfile_allocmap *a)
{
	if (!a)
		return;
	trcfile__map_destroy(&a->map);
	free(a);
}
