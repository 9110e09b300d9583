/* u64map.h - a u64 -> u64 hash map: the tree's one map (reader tables, summary, recorder).
 *
 * Purpose: open addressing with linear probing, load at most 1/2, backward-shift deletion (no
 * tombstones build up under put/del churn, e.g. allocations and frees, streams opened and
 * ended). Any key is allowed (0 and UINT64_MAX too: occupancy is a separate byte array).
 * Capacity doubles from 16; max_n bounds the entries, so hostile input cannot make a map
 * allocate without bound: a put of a new key beyond it fails with -ENOSPC (replacing stays
 * possible). The struct is visible so owners can embed it; its fields are the module's.
 *
 * Lives in src/trcfile/ as the lowest folder that both the recorder and the analysis may
 * include; it knows nothing of trace files.
 *
 * Hostile keys: slots depend on a per-process random seed, so no file can be crafted to make
 * a reader's keys collide (a million colliding addresses cost 10^12 probes unseeded). Should
 * keys collide anyway (crafted by someone who knows the seed), no run of occupied slots
 * outgrows a fixed bound (u64map.c): the map moves to a new random seed, so every call
 * probes a bounded number of slots whatever the keys.
 *
 * Threads: none; a map belongs to one thread at a time. Calls never block; put allocates
 * when it grows.
 *
 * Errors: actions return 0 or -errno; get returns a pointer or NULL; destroy accepts a map
 * that was only initialised (or destroyed already).
 */
#ifndef TRC_U64MAP_H
#define TRC_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *used;
	size_t cap; /* power of two, 0 before the first put */
	size_t n;
	size_t max_n; /* puts of new keys beyond this fail with -ENOSPC */
	uint64_t seed; /* the process's random hash seed (u64map.c), set by u64map_init; a new
			* random one after keys collided under it */
	unsigned reseeds; /* how many times colliding keys moved the map to a new seed */
};

/* The process's seeded mix of key (the one u64map uses for slots): for the open-addressing
 * tables elsewhere (src/analysis) whose keys come from a file, so that a file cannot be
 * crafted to make them collide. Combine several fields as u64map_hash(a ^ u64map_hash(b)). */
uint64_t u64map_hash(uint64_t key);

/* Tests only: maps initialised from now on use seed (0: the process's random seed again), so
 * a test can craft keys that collide under it. */
void u64map_test_force_seed(uint64_t seed);

/* An empty map of at most max_n entries (SIZE_MAX: no bound). Allocates nothing. */
void u64map_init(struct u64map *m, size_t max_n);
/* Frees the tables; the map is empty (and usable) again. */
void u64map_destroy(struct u64map *m);

/* Inserts or replaces. 0, -ENOSPC (max_n entries already, key new) or -ENOMEM. *old (may be
 * NULL) receives the replaced value and *had (may be NULL) whether there was one. */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val, uint64_t *old, bool *had);
/* Pointer to key's value, or NULL. Valid until the next put or del. */
uint64_t *u64map_get(const struct u64map *m, uint64_t key);
/* Removes key; true with *val (may be NULL) filled if it was there. */
bool u64map_del(struct u64map *m, uint64_t key, uint64_t *val);
/* Number of entries. */
size_t u64map_count(const struct u64map *m);

/* Iteration in table order: start with *pos = 0; true with the next entry's key and value
 * (either may be NULL), false at the end. The map must not change meanwhile. */
bool u64map_next(const struct u64map *m, size_t *pos, uint64_t *key, uint64_t *val);

#endif /* TRC_U64MAP_H */
