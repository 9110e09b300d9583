/* test_u64map.c - the one u64 -> u64 hash map (src/common/u64map.c).
 *
 * Purpose: put, get, del, replace, growth, the entry cap (-ENOSPC), iteration, and
 * backward-shift deletion under churn checked against a plain array, with keys that collide
 * on purpose (the same home slot, runs that wrap around the table's end).
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

Test(u64map, put_get_del, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	cr_assert_null(u64map_get(&m, 1), "an empty map has nothing");
	cr_assert_not(u64map_del(&m, 1, NULL));
	cr_assert_eq(u64map_count(&m), 0);

	/* 0 and UINT64_MAX are keys like any other. */
	static const uint64_t keys[] = {0, 1, UINT64_MAX, 0x8000000000000000ull, 42};
	for (size_t i = 0; i < 5; i++) {
		bool had = true;
		cr_assert_eq(u64map_put(&m, keys[i], 100 + i, NULL, &had), 0);
		cr_assert_not(had);
	}
	cr_assert_eq(u64map_count(&m), 5);
	for (size_t i = 0; i < 5; i++) {
		uint64_t *v = u64map_get(&m, keys[i]);
		cr_assert_not_null(v, "key %zu", i);
		cr_assert_eq(*v, 100 + i);
	}
	cr_assert_null(u64map_get(&m, 2));

	uint64_t val = 0;
	cr_assert(u64map_del(&m, UINT64_MAX, &val));
	cr_assert_eq(val, 102);
	cr_assert_null(u64map_get(&m, UINT64_MAX));
	cr_assert_not(u64map_del(&m, UINT64_MAX, &val));
	cr_assert_eq(u64map_count(&m), 4);
	cr_assert_eq(*u64map_get(&m, 0), 100);

	/* The value pointer writes through. */
	*u64map_get(&m, 42) = 7;
	cr_assert_eq(*u64map_get(&m, 42), 7);
	u64map_destroy(&m);
	cr_assert_null(u64map_get(&m, 0), "a destroyed map is empty");
	cr_assert_eq(u64map_put(&m, 5, 6, NULL, NULL), 0, "and usable again");
	u64map_destroy(&m);
	u64map_destroy(&m);
	u64map_destroy(NULL);
}

Test(u64map, replace, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	uint64_t old = 0;
	bool had = true;
	cr_assert_eq(u64map_put(&m, 9, 1, &old, &had), 0);
	cr_assert_not(had);
	cr_assert_eq(u64map_put(&m, 9, 2, &old, &had), 0);
	cr_assert(had);
	cr_assert_eq(old, 1);
	cr_assert_eq(*u64map_get(&m, 9), 2);
	cr_assert_eq(u64map_count(&m), 1, "a replace adds no entry");
	cr_assert_eq(u64map_put(&m, 9, 3, NULL, NULL), 0);
	cr_assert_eq(*u64map_get(&m, 9), 3);
	u64map_destroy(&m);
}

Test(u64map, growth_keeps_every_entry, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	const uint64_t n = 100000;
	/* pid << 32 | tid keys and 16-byte strides: what the reader and the summary put. */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key = i % 2 ? (i << 32 | (i + 7)) : 0x7f0000000000ull + 16 * i;
		cr_assert_eq(u64map_put(&m, key, i, NULL, NULL), 0);
		if ((i & (i - 1)) == 0) /* at each power of two: everything so far is there */
			for (uint64_t k = 0; k <= i; k++) {
				uint64_t kk =
					k % 2 ? (k << 32 | (k + 7)) : 0x7f0000000000ull + 16 * k;
				uint64_t *v = u64map_get(&m, kk);
				if (!v || *v != k)
					cr_assert_fail("entry %llu lost after %llu puts",
						       (unsigned long long)k,
						       (unsigned long long)i);
			}
	}
	cr_assert_eq(u64map_count(&m), n);
	cr_assert_geq(m.cap, 2 * n, "load stays at most 1/2");
	u64map_destroy(&m);
}

Test(u64map, the_cap, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, 3);
	for (uint64_t k = 1; k <= 3; k++)
		cr_assert_eq(u64map_put(&m, k, k, NULL, NULL), 0);
	bool had = true;
	cr_assert_eq(u64map_put(&m, 4, 4, NULL, &had), -ENOSPC);
	cr_assert_not(had);
	cr_assert_null(u64map_get(&m, 4), "a refused put leaves nothing");
	cr_assert_eq(u64map_count(&m), 3);
	uint64_t old = 0;
	cr_assert_eq(u64map_put(&m, 2, 20, &old, &had), 0, "replacing is always possible");
	cr_assert(had);
	cr_assert_eq(old, 2);
	cr_assert(u64map_del(&m, 1, NULL));
	cr_assert_eq(u64map_put(&m, 4, 4, NULL, NULL), 0, "room again after a del");
	cr_assert_eq(u64map_put(&m, 5, 5, NULL, NULL), -ENOSPC);
	u64map_destroy(&m);

	u64map_init(&m, 0);
	cr_assert_eq(u64map_put(&m, 1, 1, NULL, NULL), -ENOSPC);
	cr_assert_eq(m.cap, 0, "a map of no entries allocates nothing");
	u64map_destroy(&m);
}

Test(u64map, iteration_visits_each_entry_once, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	size_t pos = 0;
	cr_assert_not(u64map_next(&m, &pos, NULL, NULL));
	const uint64_t n = 1000;
	for (uint64_t k = 0; k < n; k++)
		cr_assert_eq(u64map_put(&m, k * 3, k, NULL, NULL), 0);
	uint8_t *seen = calloc(n, 1);
	uint64_t key, val, count = 0;
	pos = 0;
	while (u64map_next(&m, &pos, &key, &val)) {
		cr_assert_eq(key, val * 3);
		cr_assert_lt(val, n);
		cr_assert_eq(seen[val], 0, "value %llu twice", (unsigned long long)val);
		seen[val] = 1;
		count++;
	}
	cr_assert_eq(count, n);
	cr_assert_not(u64map_next(&m, &pos, &key, &val), "the end stays the end");
	free(seen);
	u64map_destroy(&m);
}

/* The process's hash seed, as every map has it (u64map.h). */
static uint64_t map_seed(void)
{
	struct u64map t;
	u64map_init(&t, 1);
	return t.seed;
}

/* Keys whose home slot in a table of cap slots is `home` (the map's hash, with this process's
 * seed, inverted by search: cheap for small tables). */
static uint64_t colliding_key(uint64_t after, size_t home, size_t cap)
{
	const uint64_t seed = map_seed();
	for (uint64_t k = after + 1;; k++) {
		uint64_t x = k ^ seed;
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		x ^= x >> 32;
		if (((size_t)x & (cap - 1)) == home)
			return k;
	}
}

/* Puts keys[0..n) (values 0..n-1) into a fresh 16-slot map, checks each lands in slot[i],
 * then for each key: deletes it from a copy and checks every other key is still found. */
static void check_deletions(const uint64_t *keys, const size_t *slot, int n)
{
	for (int del = -1; del < n; del++) {
		struct u64map m;
		u64map_init(&m, SIZE_MAX);
		for (int i = 0; i < n; i++)
			cr_assert_eq(u64map_put(&m, keys[i], (uint64_t)i, NULL, NULL), 0);
		cr_assert_eq(m.cap, 16);
		if (del < 0) {
			/* The layout is the one the caller means (colliding_key copies the hash).
			 */
			for (int i = 0; i < n; i++)
				cr_assert(m.used[slot[i]] && m.keys[slot[i]] == keys[i],
					  "key %d is not in slot %zu: did the hash change?", i,
					  slot[i]);
			u64map_destroy(&m);
			continue;
		}
		cr_assert(u64map_del(&m, keys[del], NULL));
		for (int i = 0; i < n; i++) {
			uint64_t *v = u64map_get(&m, keys[i]);
			if (i == del) {
				cr_assert_null(v);
				continue;
			}
			cr_assert_not_null(v, "deleting key %d lost key %d", del, i);
			cr_assert_eq(*v, (uint64_t)i);
		}
		u64map_destroy(&m);
	}
}

/* Backward-shift deletion: deleting from the middle of a probe run (one that wraps around the
 * end of the table, too) must leave every other member findable, and must not move a member
 * that already sits between its home and the hole. */
Test(u64map, deletion_keeps_probe_runs_whole, .timeout = 60)
{
	/* A run of 5 homed at slot 14 wraps to slot 2; then keys homed at 0 and 15 queue up
	 * behind it. */
	uint64_t keys[7];
	uint64_t k = 0;
	for (int i = 0; i < 5; i++)
		keys[i] = k = colliding_key(k, 14, 16);
	keys[5] = colliding_key(0, 0, 16);
	keys[6] = colliding_key(0, 15, 16);
	static const size_t slots[7] = {14, 15, 0, 1, 2, 3, 4};
	check_deletions(keys, slots, 7);

	/* A key at home in slot 0, then a run homed at 15 that wraps past it: deleting the run's
	 * first member must leave the key at 0 where it is. */
	uint64_t keys2[3];
	keys2[0] = colliding_key(0, 0, 16);
	keys2[1] = colliding_key(0, 15, 16);
	keys2[2] = colliding_key(keys2[1], 15, 16);
	static const size_t slots2[3] = {0, 15, 1};
	check_deletions(keys2, slots2, 3);
}

/* Alloc/free churn against a plain array: the map and the reference agree after every step. */
Test(u64map, churn_matches_a_reference, .timeout = 60)
{
	enum { SLOTS = 512 };
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	uint64_t ref_val[SLOTS];
	bool ref_has[SLOTS] = {false};
	uint64_t seed = 12345;
	size_t live = 0;
	for (int step = 0; step < 200000; step++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		size_t slot = (size_t)(seed >> 40) % SLOTS;
		uint64_t key = 0x5500000000ull + slot * 16; /* heap-like addresses */
		if ((seed >> 20) & 1) {
			uint64_t old = 0;
			bool had = false;
			cr_assert_eq(u64map_put(&m, key, seed, &old, &had), 0);
			if (had != ref_has[slot] || (had && old != ref_val[slot]))
				cr_assert_fail("step %d: put disagrees", step);
			live += !ref_has[slot];
			ref_has[slot] = true;
			ref_val[slot] = seed;
		} else {
			uint64_t val = 0;
			bool had = u64map_del(&m, key, &val);
			if (had != ref_has[slot] || (had && val != ref_val[slot]))
				cr_assert_fail("step %d: del disagrees", step);
			live -= ref_has[slot];
			ref_has[slot] = false;
		}
		if (u64map_count(&m) != live)
			cr_assert_fail("step %d: %zu entries, want %zu", step, u64map_count(&m),
				       live);
		if (step % 997 == 0)
			for (size_t s = 0; s < SLOTS; s++) {
				uint64_t *v = u64map_get(&m, 0x5500000000ull + s * 16);
				if ((v != NULL) != ref_has[s] || (v && *v != ref_val[s]))
					cr_assert_fail("step %d: slot %zu disagrees", step, s);
			}
	}
	cr_assert_leq(m.cap, 4 * SLOTS, "deletions leave no tombstones to grow on");
	u64map_destroy(&m);
}

/* ---- hostile keys: a crafted set that collides under a known seed ---------------------- */

/* The inverse of u64map.c's home-slot mix (xorshift 29, multiply, xorshift 32): the key whose
 * mixed value is y under seed. Keys with y = j << 32 all share home slot 0 in any table of up
 * to 2^32 slots: what someone who knew the seed would put in a file. */
static uint64_t crafted_key(uint64_t y, uint64_t seed)
{
	uint64_t x = y ^ (y >> 32);
	uint64_t inv = 0xbf58476d1ce4e5b9ull; /* Newton: inverse of an odd number mod 2^64 */
	for (int i = 0; i < 5; i++)
		inv *= 2 - 0xbf58476d1ce4e5b9ull * inv;
	x *= inv;
	x = x ^ (x >> 29) ^ (x >> 58);
	return x ^ seed;
}

/* The longest run of occupied slots: every probe (get, put, del, of present or missing keys)
 * stays inside one, so it bounds them all. */
static size_t longest_run(const struct u64map *m)
{
	size_t best = 0, run = 0;
	for (size_t i = 0; i < 2 * m->cap; i++) { /* twice round: a run may wrap */
		run = m->used[i & (m->cap - 1)] ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best > m->cap ? m->cap : best;
}

Test(u64map, crafted_collisions_keep_probes_bounded, .timeout = 60)
{
	const uint64_t seed = 0x243f6a8885a308d3ull;
	u64map_test_force_seed(seed);
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	u64map_test_force_seed(0);
	cr_assert_eq(m.seed, seed);
	cr_assert_eq(crafted_key(0, seed) ^ seed, 0, "the inverse is an inverse");

	const uint64_t n = 50000;
	for (uint64_t j = 1; j <= n; j++)
		cr_assert_eq(u64map_put(&m, crafted_key(j << 32, seed), j, NULL, NULL), 0);
	cr_assert_eq(u64map_count(&m), n);
	cr_assert_geq(m.reseeds, 1, "colliding keys moved the map to a new seed");
	size_t run = longest_run(&m);
	cr_assert_leq(run, 256, "longest probe run %zu slots for %llu crafted keys", run,
		      (unsigned long long)n);
	for (uint64_t j = 1; j <= n; j++) {
		uint64_t *v = u64map_get(&m, crafted_key(j << 32, seed));
		if (!v || *v != j)
			cr_assert_fail("crafted key %llu lost", (unsigned long long)j);
	}
	/* Churn under the new seed: deletions keep every other key. */
	for (uint64_t j = 1; j <= n; j += 2)
		cr_assert(u64map_del(&m, crafted_key(j << 32, seed), NULL));
	for (uint64_t j = 2; j <= n; j += 2)
		cr_assert_not_null(u64map_get(&m, crafted_key(j << 32, seed)));
	cr_assert_null(u64map_get(&m, crafted_key((n + 1) << 32, seed)));
	u64map_destroy(&m);
}

Test(u64map, ordinary_keys_keep_the_seed, .timeout = 60)
{
	struct u64map m;
	u64map_init(&m, SIZE_MAX);
	uint64_t seed = m.seed;
	for (uint64_t k = 0; k < 200000; k++)
		cr_assert_eq(u64map_put(&m, 0x7f0000000000ull + 16 * k, k, NULL, NULL), 0);
	cr_assert_eq(m.reseeds, 0, "addresses never look crafted");
	cr_assert_eq(m.seed, seed);
	cr_assert_leq(longest_run(&m), 256);
	u64map_destroy(&m);
}

/* ---- u64index: the same rules for keys kept in the owner's array ------------------------ */

struct ix_owner {
	uint64_t *keys;
};

static uint64_t ix_hash(const void *ctx, uint32_t e, uint64_t seed)
{
	return u64map_mix(((const struct ix_owner *)ctx)->keys[e], seed);
}

/* The entry holding key, or U64INDEX_END. */
static uint32_t ix_find(const struct u64index *ix, const struct ix_owner *o, uint64_t key)
{
	uint64_t h = u64map_mix(key, u64index_seed(ix));
	uint32_t e;
	for (size_t pos = u64index_start(ix, h); (e = u64index_next(ix, &pos)) != U64INDEX_END;)
		if (o->keys[e] == key)
			return e;
	return U64INDEX_END;
}

/* Keys that all share home slot 0 under the forced seed: without the run bound every add
 * probes the whole run (quadratic); with it the index moves to a new seed and every run
 * stays within 256 slots, every key still found at its entry. */
Test(u64index, crafted_collisions_keep_probes_bounded, .timeout = 60)
{
	const uint64_t seed = 0x13198a2e03707344ull;
	const uint32_t n = 50000;
	struct ix_owner o = {.keys = calloc(n + 1, sizeof(uint64_t))};
	cr_assert_not_null(o.keys);
	u64map_test_force_seed(seed);
	struct u64index ix;
	u64index_init(&ix, ix_hash, &o);
	u64map_test_force_seed(0);
	cr_assert_eq(u64index_seed(&ix), seed);
	for (uint32_t j = 0; j < n; j++) {
		o.keys[j] = crafted_key((uint64_t)(j + 1) << 32, seed);
		cr_assert_eq(ix_find(&ix, &o, o.keys[j]), U64INDEX_END);
		cr_assert_eq(u64index_add(&ix, j, u64map_mix(o.keys[j], u64index_seed(&ix))), 0);
	}
	cr_assert_geq(ix.reseeds, 1, "colliding keys moved the index to a new seed");
	cr_assert_leq(u64index_longest_run(&ix), 256, "longest run %zu", u64index_longest_run(&ix));
	cr_assert_leq(u64index_worst_run(), 256, "a run of %zu slots was made",
		      u64index_worst_run());
	for (uint32_t j = 0; j < n; j++)
		if (ix_find(&ix, &o, o.keys[j]) != j)
			cr_assert_fail("crafted key %u lost", j);
	cr_assert_eq(ix_find(&ix, &o, crafted_key((uint64_t)(n + 1) << 32, seed)), U64INDEX_END);
	u64index_destroy(&ix);
	free(o.keys);
}

Test(u64index, ordinary_keys_keep_the_seed, .timeout = 60)
{
	const uint32_t n = 200000;
	struct ix_owner o = {.keys = calloc(n, sizeof(uint64_t))};
	struct u64index ix;
	u64index_init(&ix, ix_hash, &o);
	uint64_t seed = u64index_seed(&ix);
	for (uint32_t j = 0; j < n; j++) {
		o.keys[j] = 0x7f0000000000ull + 16ull * j;
		cr_assert_eq(u64index_add(&ix, j, u64map_mix(o.keys[j], u64index_seed(&ix))), 0);
	}
	cr_assert_eq(ix.reseeds, 0, "addresses never look crafted");
	cr_assert_eq(u64index_seed(&ix), seed);
	for (uint32_t j = 0; j < n; j += 7)
		cr_assert_eq(ix_find(&ix, &o, o.keys[j]), j);
	u64index_destroy(&ix);
	free(o.keys);
}

/* Strings of 16 bytes (no NUL) whose u64map_hash_bytes under seed is y: the first word is
 * chosen, the second solves mix(h1 ^ w2) = y; retried until no byte of it is 0. */
static void crafted_name(char out[17], uint64_t y, uint64_t seed, uint32_t j)
{
	for (uint64_t salt = 0;; salt++) {
		uint64_t v = (uint64_t)j | salt << 28, w1 = 0x8080808080808080ull; /* no 0 byte */
		for (int b = 0; b < 8; b++)
			w1 |= ((v >> (7 * b)) & 0x7f) << (8 * b);
		uint64_t h1 = u64map_mix(u64map_mix(16, seed) ^ w1, seed);
		uint64_t w2 = crafted_key(y, seed) ^ h1;
		bool zero = false;
		for (int b = 0; b < 8; b++)
			zero |= ((w1 >> (8 * b)) & 0xff) == 0 || ((w2 >> (8 * b)) & 0xff) == 0;
		if (zero)
			continue;
		memcpy(out, &w1, 8);
		memcpy(out + 8, &w2, 8);
		out[16] = 0;
		return;
	}
}

Test(u64index, hash_bytes_is_seeded, .timeout = 60)
{
	const uint64_t seed = 0xa4093822299f31d0ull;
	char a[17], b[17];
	crafted_name(a, 5ull << 32, seed, 1);
	crafted_name(b, 5ull << 32, seed, 2);
	cr_assert_neq(memcmp(a, b, 16), 0);
	cr_assert_eq(u64map_hash_bytes(a, 16, seed), 5ull << 32, "crafted under seed");
	cr_assert_eq(u64map_hash_bytes(b, 16, seed), 5ull << 32);
	/* a string crafted against one seed does not collide under another */
	cr_assert_neq(u64map_hash_bytes(a, 16, seed ^ 2), u64map_hash_bytes(b, 16, seed ^ 2));
	cr_assert_neq(u64map_hash_bytes("ab", 2, seed), u64map_hash_bytes("ab\0", 3, seed),
		      "the length counts");
}
