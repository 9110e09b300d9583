/* u64map.c - the u64 -> u64 hash map of u64map.h.
 *
 * Invariants: cap is 0 or a power of two; n <= max_n; 2 * n <= cap once anything was put, so
 * a probe always meets an empty slot; every key sits in the probe run that starts at its home
 * slot (u64map__home), with no empty slot between home and it. Deletion keeps the last
 * invariant by shifting later members of the run back into the hole.
 *
 * Hostile keys: the home slot mixes in a per-process random seed (u64map__seed), so no file
 * can be crafted to make the keys of a reader's maps collide; keys crafted by someone who knew
 * the seed meet the run bound (U64MAP__MAX_RUN) and a new seed. u64index (at the end) keeps
 * the same rules for keys that live in their owner's array.
 *
 * Threads: none (u64map.h); the seed is the same for every thread.
 */
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

#define U64MAP__MIN_CAP 16u

/* The longest run of occupied slots (a cluster) a map keeps. Every probe stays inside one
 * cluster, so this bounds each get, put and del. At load <= 1/2 a cluster of k slots has odds
 * about 0.82^k, so 256 never happens by chance (2^30 slots: 1e-13); keys that make one were
 * crafted for this seed, and a put that sees one moves the map to a new random seed. */
#define U64MAP__MAX_RUN 256u

/* A test's forced process seed (u64map_test_force_seed), 0 when none. */
static uint64_t u64map__forced_seed;

/* The process's hash seed: random per process (the kernel's AT_RANDOM bytes for this exec),
 * so keys crafted to collide in one process (a hostile file of allocation addresses) spread in
 * another. Read-only: the same for every map and thread. */
static uint64_t u64map__seed(void)
{
	static uint64_t seed;
	uint64_t s = __atomic_load_n(&u64map__forced_seed, __ATOMIC_RELAXED);
	if (s)
		return s;
	s = __atomic_load_n(&seed, __ATOMIC_RELAXED);
	if (__builtin_expect(s == 0, 0)) {
		const char *env = secure_getenv("TRC_TEST_HASH_SEED"); /* end-to-end tests */
		const uint8_t *r = (const uint8_t *)(uintptr_t)getauxval(AT_RANDOM);
		if (env && *env)
			s = strtoull(env, NULL, 16);
		else if (r)
			memcpy(&s, r + 8, sizeof(s));
		s |= 1; /* never 0 again: every thread computes the same value */
		__atomic_store_n(&seed, s, __ATOMIC_RELAXED);
	}
	return s;
}

/* The key's first slot: the seed, then a multiply-xorshift mix, so keys that differ only in
 * high bits (pid << 32 | tid) or by small strides (addresses) spread. */
static uint64_t u64map__mix(uint64_t key, uint64_t seed)
{
	key ^= seed;
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ull;
	key ^= key >> 32;
	return key;
}

static size_t u64map__home(uint64_t key, uint64_t seed, size_t cap)
{
	return (size_t)u64map__mix(key, seed) & (cap - 1);
}

uint64_t u64map_mix(uint64_t key, uint64_t seed)
{
	return u64map__mix(key, seed);
}

uint64_t u64map_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	/* The seed enters every step: with it only at the start, the first step would cancel it
	 * and equal-length strings would collide alike under every seed. */
	const unsigned char *b = p;
	uint64_t h = u64map__mix(n, seed);
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		h = u64map__mix(h ^ w, seed);
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, b, n);
		h = u64map__mix(h ^ w, seed);
	}
	return h;
}

void u64map_test_force_seed(uint64_t seed)
{
	__atomic_store_n(&u64map__forced_seed, seed, __ATOMIC_RELAXED);
}

/* A fresh seed for a map whose keys were crafted against its current one: the kernel's
 * random bytes, else the clock mixed into the old seed (never 0). */
static uint64_t u64map__new_seed(uint64_t old)
{
	uint64_t s = 0;
	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = old + 0x9e3779b97f4a7c15ull * (uint64_t)(ts.tv_sec * 1000000000 + ts.tv_nsec);
		s ^= s >> 31;
	}
	return s == old ? ~s | 1 : s | 1;
}

void u64map_init(struct u64map *m, size_t max_n)
{
	memset(m, 0, sizeof(*m));
	m->max_n = max_n;
	m->seed = u64map__seed();
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

/* Moves every entry into new tables of cap slots under m->seed (a grow, or a new seed). */
static int u64map__rehash(struct u64map *m, size_t cap)
{
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
		size_t j = u64map__home(m->keys[i], m->seed, cap);
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

static int u64map__grow(struct u64map *m)
{
	return u64map__rehash(m, m->cap ? 2 * m->cap : U64MAP__MIN_CAP);
}

/* The length of the cluster that holds slot i (occupied), counted up to U64MAP__MAX_RUN + 1:
 * the run behind it and the run after it. At load <= 1/2 both are a slot or two. */
static size_t u64map__run_at(const struct u64map *m, size_t i)
{
	size_t mask = m->cap - 1, len = 1;
	for (size_t j = (i - 1) & mask; m->used[j] && len <= U64MAP__MAX_RUN; j = (j - 1) & mask)
		len++;
	for (size_t j = (i + 1) & mask; m->used[j] && len <= U64MAP__MAX_RUN; j = (j + 1) & mask)
		len++;
	return len;
}

/* After a put made a cluster longer than U64MAP__MAX_RUN: new seeds (keys crafted against
 * the old one spread under a new one), and after a few that did not help, a larger table.
 * Failing to rehash leaves the map correct, only slower. */
static void u64map__break_run(struct u64map *m)
{
	for (int tries = 0; tries < 4; tries++) {
		uint64_t old = m->seed;
		m->seed = u64map__new_seed(old);
		if (u64map__rehash(m, tries < 3 ? m->cap : 2 * m->cap) != 0) {
			m->seed = old;
			return;
		}
		m->reseeds++;
		size_t worst = 0;
		for (size_t i = 0; i < m->cap && worst <= U64MAP__MAX_RUN; i++)
			if (m->used[i] && (i == 0 || !m->used[i - 1]))
				worst = u64map__run_at(m, i) > worst ? u64map__run_at(m, i) : worst;
		if (worst <= U64MAP__MAX_RUN)
			return;
	}
}

uint64_t *u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t i = u64map__home(key, m->seed, m->cap);
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
	size_t i = u64map__home(key, m->seed, m->cap);
	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	if (__builtin_expect(u64map__run_at(m, i) > U64MAP__MAX_RUN, 0))
		u64map__break_run(m);
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
		size_t home = u64map__home(m->keys[j], m->seed, m->cap);
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

/* ---- u64index ---------------------------------------------------------------------------- */

/* The longest run any index of this process held after an add (u64index_worst_run). */
static size_t u64index__worst;

void u64index_init(struct u64index *ix, u64index_hash_fn hash, const void *ctx)
{
	memset(ix, 0, sizeof(*ix));
	ix->seed = u64map__seed();
	ix->hash = hash;
	ix->ctx = ctx;
}

void u64index_destroy(struct u64index *ix)
{
	if (!ix)
		return;
	free(ix->slots);
	u64index_init(ix, ix->hash, ix->ctx);
}

/* New slots of cap entries holding every entry under ix->seed (a grow, or a new seed). */
static int u64index__rehash(struct u64index *ix, size_t cap)
{
	uint32_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ix->cap; i++) {
		if (!ix->slots[i])
			continue;
		size_t j = (size_t)ix->hash(ix->ctx, ix->slots[i] - 1, ix->seed) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = ix->slots[i];
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

/* As u64map__run_at: the cluster holding slot i, counted up to U64MAP__MAX_RUN + 1. */
static size_t u64index__run_at(const struct u64index *ix, size_t i)
{
	size_t mask = ix->cap - 1, len = 1;
	for (size_t j = (i - 1) & mask; ix->slots[j] && len <= U64MAP__MAX_RUN; j = (j - 1) & mask)
		len++;
	for (size_t j = (i + 1) & mask; ix->slots[j] && len <= U64MAP__MAX_RUN; j = (j + 1) & mask)
		len++;
	return len;
}

/* As u64map__break_run: new seeds, then a larger table; a failure leaves it correct. */
static void u64index__break_run(struct u64index *ix)
{
	for (int tries = 0; tries < 4; tries++) {
		uint64_t old = ix->seed;
		ix->seed = u64map__new_seed(old);
		if (u64index__rehash(ix, tries < 3 ? ix->cap : 2 * ix->cap) != 0) {
			ix->seed = old;
			return;
		}
		ix->reseeds++;
		if (u64index_longest_run(ix) <= U64MAP__MAX_RUN)
			return;
	}
}

int u64index_add(struct u64index *ix, uint32_t entry, uint64_t h)
{
	if (2 * (ix->n + 1) > ix->cap) {
		int err = u64index__rehash(ix, ix->cap ? 2 * ix->cap : U64MAP__MIN_CAP);
		if (err)
			return err;
	}
	size_t i = (size_t)h & (ix->cap - 1);
	while (ix->slots[i])
		i = (i + 1) & (ix->cap - 1);
	ix->slots[i] = entry + 1;
	ix->n++;
	size_t run = u64index__run_at(ix, i);
	if (__builtin_expect(run > U64MAP__MAX_RUN, 0)) {
		u64index__break_run(ix);
		run = u64index_longest_run(ix);
	}
	if (run > __atomic_load_n(&u64index__worst, __ATOMIC_RELAXED))
		__atomic_store_n(&u64index__worst, run, __ATOMIC_RELAXED);
	return 0;
}

size_t u64index_worst_run(void)
{
	return __atomic_load_n(&u64index__worst, __ATOMIC_RELAXED);
}

size_t u64index_longest_run(const struct u64index *ix)
{
	size_t best = 0, run = 0;
	for (size_t i = 0; i < 2 * ix->cap; i++) { /* twice round: a run may wrap */
		run = ix->slots[i & (ix->cap - 1)] ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	return best > ix->cap ? ix->cap : best;
}
