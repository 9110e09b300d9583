/* u64map.h - a u64 -> u64 hash map: the tree's one map (reader tables, summary, recorder);
 * and u64index (at the end), the same rules for keys wider than 64 bits (analysis tables,
 * the Parquet writer's dictionaries).
 *
 * Purpose: open addressing with linear probing, load at most 1/2, backward-shift deletion (no
 * tombstones build up under put/del churn, e.g. allocations and frees, streams opened and
 * ended). Any key is allowed (0 and UINT64_MAX too: occupancy is a separate byte array).
 * Capacity doubles from 16; max_n bounds the entries, so hostile input cannot make a map
 * allocate without bound: a put of a new key beyond it fails with -ENOSPC (replacing stays
 * possible). The struct is visible so owners can embed it; its fields are the module's.
 *
 * Lives in src/common/, the leaf folder every part may include (it depends on nothing but
 * libc); it knows nothing of trace files.
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

/* u64map's mix of key under seed (its slots are u64map_mix(key, m->seed)): for the owners of
 * a u64index, which hash their keys under the index's seed (u64index_seed). Combine several
 * fields as u64map_mix(a ^ u64map_mix(b, seed), seed). */
uint64_t u64map_mix(uint64_t key, uint64_t seed);
/* A seeded hash of n bytes (a name): a chain of u64map_mix over 8-byte words, so that
 * strings crafted to collide under one seed spread under another. */
uint64_t u64map_hash_bytes(const void *p, size_t n, uint64_t seed);

/* Tests only: maps and indexes initialised from now on use seed (0: the process's random
 * seed again), so a test can craft keys that collide under it. trace-dump and trace-run take
 * the same from the environment (TRC_TEST_HASH_SEED, hex), read once, for end-to-end tests
 * (README "Test hooks"): ignored in a setuid context, and harmless elsewhere, since the bounded
 * probe runs keep keys crafted for a known seed linear (only the seed's layer is off). */
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

/* ---- u64index: the same table for keys wider than 64 bits --------------------------------
 *
 * Purpose: an index of entries the owner keeps in its own array (entry numbers below
 * UINT32_MAX), for keys that do not fit in a u64: a (pid, address) pair, a trie node's
 * (parent, kind, pid, key), a string. The owner hashes a key under u64index_seed (u64map_mix,
 * u64map_hash_bytes) and compares the entries the probe yields; the index keeps u64map's rules
 * (load at most 1/2, no run of occupied slots past the bound of u64map.c, a new random seed
 * when keys crafted against the old one make one), rehashing every entry through the owner's
 * hash callback. No deletion.
 *
 * Threads: none; an index belongs to one thread at a time.
 */

/* The hash of entry's key under seed: the same value the owner computes for a probe. */
typedef uint64_t (*u64index_hash_fn)(const void *ctx, uint32_t entry, uint64_t seed);

struct u64index {
	uint32_t *slots; /* entry + 1; 0 empty */
	size_t cap; /* power of two, 0 before the first add */
	size_t n;
	uint64_t seed; /* hash keys under this one (u64index_seed) */
	unsigned reseeds; /* how many times colliding keys moved the index to a new seed */
	u64index_hash_fn hash;
	const void *ctx;
};

#define U64INDEX_END UINT32_MAX

/* An empty index (allocates nothing); hash(ctx, entry, seed) rehashes entries. */
void u64index_init(struct u64index *ix, u64index_hash_fn hash, const void *ctx);
/* Frees the slots; the index is empty (and usable) again. */
void u64index_destroy(struct u64index *ix);

/* The seed to hash probe keys under; it changes when u64index_add moves the index. */
static inline uint64_t u64index_seed(const struct u64index *ix)
{
	return ix->seed;
}

/* Probing for a key of hash h: for (pos = u64index_start(ix, h);
 * (e = u64index_next(ix, &pos)) != U64INDEX_END;) compare entry e with the key. Every probe
 * stays inside one run of occupied slots, so it meets at most the bound of u64map.c. */
static inline size_t u64index_start(const struct u64index *ix, uint64_t h)
{
	return ix->cap ? (size_t)h & (ix->cap - 1) : 0;
}

static inline uint32_t u64index_next(const struct u64index *ix, size_t *pos)
{
	if (!ix->cap || !ix->slots[*pos])
		return U64INDEX_END;
	uint32_t e = ix->slots[*pos] - 1;
	*pos = (*pos + 1) & (ix->cap - 1);
	return e;
}

/* Adds entry, whose key is not in the index yet, h its hash under u64index_seed. 0 or
 * -ENOMEM (not added). Probes started before are void afterwards (the index may have grown or
 * moved to a new seed). */
int u64index_add(struct u64index *ix, uint32_t entry, uint64_t h);

/* Tests and diagnostics: the longest run of occupied slots (what any probe may meet). */
size_t u64index_longest_run(const struct u64index *ix);
/* Tests: the longest run any index of this process held after an add (the owners' indexes
 * are private; keys crafted against them must never make this exceed the bound). */
size_t u64index_worst_run(void);

#endif /* TRC_U64MAP_H */
