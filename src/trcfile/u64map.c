/* u64map.c - the u64 -> u64 hash map of u64map.h.
 *
 * Invariants: cap is 0 or a power of two; n <= max_n; 2 * n <= cap once anything was put, so
 * a probe always meets an empty slot; every key sits in the probe run that starts at its home
 * slot (u64map__home), with no empty slot between home and it. Deletion keeps the last
 * invariant by shifting later members of the run back into the hole.
 *
 * Threads: none (u64map.h).
 */
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define U64MAP__MIN_CAP 16u

/* The key's first slot: a multiply-xorshift mix, so keys that differ only in high bits (pid <<
 * 32 | tid) or by small strides (addresses) spread. */
static size_t u64map__home(uint64_t key, size_t cap)
{
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 32;
	return (size_t)key & (cap - 1);
}

void u64map_init(struct u64map *m, size_t max_n)
{
	memset(m, 0, sizeof(*m));
	m->max_n = max_n;
}

void u64map_destroy(struct u64map *m)
{
	if (!m)
		return;
	free(m->keys);
	free(m->vals);
	free(m->used);
	size_t max_n = m->max_n;
	u64map_init(m, max_n);
}

static int u64map__grow(struct u64map *m)
{
	size_t cap = m->cap ? 2 * m->cap : U64MAP__MIN_CAP;
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
		size_t j = u64map__home(m->keys[i], cap);
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

uint64_t *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = u64map__home(key, m->cap);
	while (m->used[i]) {
		if (m->keys[i] == key)
			return &m->vals[i];
		i = (i + 1) & (m->cap - 1);
	}
	return NULL;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val, uint64_t *old, bool *had)
{
	uint64_t *v = u64map_get(m, key);
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
		int err = u64map__grow(m);
		if (err)
			return err;
	}
	size_t i = u64map__home(key, m->cap);
	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

bool u64map_del(struct u64map *m, uint64_t key, uint64_t *val)
{
	uint64_t *v = u64map_get(m, key);
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
		size_t home = u64map__home(m->keys[j], m->cap);
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

size_t u64map_count(const struct u64map *m)
{
	return m->n;
}

bool u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	for (size_t i = *pos; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		if (key)
			*key = m->keys[i];
		if (val)
			*val = m->vals[i];
		*pos = i + 1;
		return true;
	}
	*pos = m->cap;
	return false;
}
