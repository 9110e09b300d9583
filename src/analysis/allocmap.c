/* allocmap.c - live allocations keyed by (process, address) (see allocmap.h).
 *
 * Two exact stores:
 *  - packed: one u64map whose key is the address (below 2^47: every user address of 4-level
 *    paging) with a dense index of the process above it (the first 2^17 processes the map
 *    meets, numbered through a u64map pid -> index). One map operation per record, as with
 *    a plain address key; the last process seen is cached, since records come in runs of
 *    one stream.
 *  - fallback: everything else (an address with bit 47 or higher set, 5-level paging or a
 *    hostile trace; a process beyond the first 2^17). Entries in an array, found through a
 *    u64map from a seeded hash of the pair to the first of a chain of entries with that hash;
 *    the chain compares pid and address, so a collision costs a step, never an alias.
 * A pair always goes to the same store: its address decides, or whether its process has an
 * index, which once given (or refused, the index table being full) never changes.
 *
 * Threads: none; one owner at a time.
 */
#include "allocmap.h"

#include <errno.h>
#include <stdlib.h>

#include "u64map.h"

#define ALLOCMAP__ADDR_BITS 47
#define ALLOCMAP__MAX_PROCS (1u << (64 - ALLOCMAP__ADDR_BITS))
#define ALLOCMAP__NO_IDX UINT32_MAX
/* allocmap_next's position once the packed map is done: the fallback's entry in the low bits */
#define ALLOCMAP__FB_POS ((size_t)1 << (sizeof(size_t) * 8 - 1))

struct allocmap__fb_entry {
	uint64_t pid, addr, size;
	uint32_t next; /* the next entry of the chain (or of the free list) + 1; 0 none */
	bool used;
};

struct allocmap {
	struct u64map packed; /* addr | index << 47 -> size */
	struct u64map idx; /* pid -> index, at most ALLOCMAP__MAX_PROCS */
	uint64_t *pids; /* index -> pid */
	size_t cap_pids;
	/* The cache (records come in runs of one stream): when cached, last_pid's index is
	 * last_high >> 47. */
	uint64_t last_pid, last_high;
	bool cached;
	/* 0 when the fast paths may use the cache: cached, and no fallback entries (which share
	 * the cap); 1 else. One test with the pid and the address. */
	uint64_t slow;
	size_t max_entries;

	struct u64map fb_heads; /* hash of (pid, addr) -> first entry of its chain */
	struct allocmap__fb_entry *fb;
	size_t n_fb; /* entries used or on the free list */
	size_t cap_fb;
	size_t fb_live;
	uint32_t fb_free; /* first free entry + 1; 0 none */
	uint64_t fb_seed;
};

struct allocmap *allocmap_new(size_t max_entries)
{
	struct allocmap *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	u64map_init(&a->packed, max_entries);
	u64map_init(&a->idx, ALLOCMAP__MAX_PROCS);
	u64map_init(&a->fb_heads, SIZE_MAX);
	a->fb_seed = a->fb_heads.seed; /* the process's random seed (or a test's) */
	a->max_entries = max_entries;
	a->slow = 1;
	return a;
}

/* pid's index, given one now if add and there is room; ALLOCMAP__NO_IDX when it has none, or
 * -ENOMEM in *err. */
static uint32_t allocmap__index(struct allocmap *a, uint64_t pid, bool add, int *err)
{
	uint64_t *v = u64map_get(&a->idx, pid);
	uint32_t i;
	if (v) {
		i = (uint32_t)*v;
	} else {
		if (!add || u64map_count(&a->idx) >= ALLOCMAP__MAX_PROCS)
			return ALLOCMAP__NO_IDX;
		i = (uint32_t)u64map_count(&a->idx);
		if (i == a->cap_pids) {
			size_t cap = a->cap_pids ? a->cap_pids * 2 : 16;
			uint64_t *p = realloc(a->pids, cap * sizeof(*p));
			if (!p) {
				*err = -ENOMEM;
				return ALLOCMAP__NO_IDX;
			}
			a->pids = p;
			a->cap_pids = cap;
		}
		int e = u64map_put(&a->idx, pid, i, NULL, NULL);
		if (e) {
			*err = e;
			return ALLOCMAP__NO_IDX;
		}
		a->pids[i] = pid;
	}
	a->last_pid = pid;
	a->last_high = (uint64_t)i << ALLOCMAP__ADDR_BITS;
	a->cached = true;
	a->slow = a->fb_live != 0;
	return i;
}

/* The packed key of (pid, addr) into *key; false when the pair belongs to the fallback. */
static inline bool allocmap__packed_key(struct allocmap *a, uint64_t pid, uint64_t addr, bool add,
					uint64_t *key, int *err)
{
	if (addr >> ALLOCMAP__ADDR_BITS)
		return false;
	if (!a->cached || pid != a->last_pid) {
		if (allocmap__index(a, pid, add, err) == ALLOCMAP__NO_IDX)
			return false;
	}
	*key = addr | a->last_high;
	return true;
}

static uint64_t allocmap__fb_hash(const struct allocmap *a, uint64_t pid, uint64_t addr)
{
	return u64map_mix(addr ^ u64map_mix(pid, a->fb_seed), a->fb_seed);
}

/* The fallback entry of (pid, addr) + 1, or 0; *prev gets the entry before it + 1 (0: it is
 * the chain's first). */
static uint32_t allocmap__fb_find(const struct allocmap *a, uint64_t h, uint64_t pid, uint64_t addr,
				  uint32_t *prev)
{
	const uint64_t *head = u64map_get(&a->fb_heads, h);
	*prev = 0;
	for (uint32_t e = head ? (uint32_t)*head + 1 : 0; e; e = a->fb[e - 1].next) {
		if (a->fb[e - 1].pid == pid && a->fb[e - 1].addr == addr)
			return e;
		*prev = e;
	}
	return 0;
}

static int allocmap__fb_put(struct allocmap *a, uint64_t pid, uint64_t addr, uint64_t size,
			    uint64_t *replaced_size)
{
	uint64_t h = allocmap__fb_hash(a, pid, addr);
	uint32_t prev;
	uint32_t e = allocmap__fb_find(a, h, pid, addr, &prev);
	if (e) {
		*replaced_size = a->fb[e - 1].size;
		a->fb[e - 1].size = size;
		return 0;
	}
	if (allocmap_count(a) >= a->max_entries)
		return -ENOSPC;
	if (a->fb_free) {
		e = a->fb_free;
		a->fb_free = a->fb[e - 1].next;
	} else {
		if (a->n_fb >= UINT32_MAX - 1) /* entry numbers are 32-bit */
			return -ENOSPC;
		if (a->n_fb == a->cap_fb) {
			size_t cap = a->cap_fb ? a->cap_fb * 2 : 16;
			struct allocmap__fb_entry *v = realloc(a->fb, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			a->fb = v;
			a->cap_fb = cap;
		}
		e = (uint32_t)++a->n_fb;
	}
	const uint64_t *head = u64map_get(&a->fb_heads, h);
	a->fb[e - 1] = (struct allocmap__fb_entry){
		.pid = pid, .addr = addr, .size = size, .next = head ? (uint32_t)*head + 1 : 0};
	int err = u64map_put(&a->fb_heads, h, e - 1, NULL, NULL);
	if (err) {
		a->fb[e - 1].next = a->fb_free;
		a->fb_free = e;
		return err;
	}
	a->fb[e - 1].used = true;
	a->fb_live++;
	a->slow = 1;
	return 0;
}

static bool allocmap__fb_take(struct allocmap *a, uint64_t pid, uint64_t addr, uint64_t *size)
{
	if (!a->fb_live)
		return false;
	uint64_t h = allocmap__fb_hash(a, pid, addr);
	uint32_t prev;
	uint32_t e = allocmap__fb_find(a, h, pid, addr, &prev);
	if (!e)
		return false;
	struct allocmap__fb_entry *x = &a->fb[e - 1];
	if (prev)
		a->fb[prev - 1].next = x->next;
	else if (x->next) /* replacing a present key never fails */
		(void)u64map_put(&a->fb_heads, h, x->next - 1, NULL, NULL);
	else
		u64map_del(&a->fb_heads, h, NULL);
	if (size)
		*size = x->size;
	x->used = false;
	x->next = a->fb_free;
	a->fb_free = e;
	a->fb_live--;
	a->slow = !a->cached || a->fb_live;
	return true;
}

/* allocmap_put past its fast path: a process not cached, the fallback, the cap shared with it. */
__attribute__((noinline)) static int allocmap__put_slow(struct allocmap *a, uint64_t pid,
							uint64_t addr, uint64_t size,
							uint64_t *replaced_size)
{
	uint64_t key, old = 0, dummy;
	bool had = false;
	int err = 0;
	if (!replaced_size)
		replaced_size = &dummy;
	*replaced_size = 0;
	if (!allocmap__packed_key(a, pid, addr, true, &key, &err))
		return err ? err : allocmap__fb_put(a, pid, addr, size, replaced_size);
	/* The packed map's own cap is the whole cap; with fallback entries too, a new key must
	 * also leave room for them. */
	if (a->fb_live && allocmap_count(a) >= a->max_entries && !u64map_get(&a->packed, key))
		return -ENOSPC;
	err = u64map_put(&a->packed, key, size, &old, &had);
	if (had)
		*replaced_size = old;
	return err;
}

int allocmap_put(struct allocmap *a, uint64_t pid, uint64_t addr, uint64_t size,
		 uint64_t *replaced_size)
{
	/* The hot path (one per ALLOC record): the last process again, a 47-bit address, no
	 * fallback entries to share the cap with; one map operation. */
	if (__builtin_expect(((pid ^ a->last_pid) | addr >> ALLOCMAP__ADDR_BITS | a->slow) == 0,
			     1)) {
		uint64_t old;
		bool had;
		int err = u64map_put(&a->packed, addr | a->last_high, size, &old, &had);
		if (replaced_size)
			*replaced_size = had ? old : 0;
		return err;
	}
	return allocmap__put_slow(a, pid, addr, size, replaced_size);
}

/* allocmap_take past its fast path: a process not cached, the fallback, or entries in it. */
__attribute__((noinline)) static bool allocmap__take_slow(struct allocmap *a, uint64_t pid,
							  uint64_t addr, uint64_t *size)
{
	uint64_t key;
	int err = 0;
	if (allocmap__packed_key(a, pid, addr, false, &key, &err))
		return u64map_del(&a->packed, key, size);
	return allocmap__fb_take(a, pid, addr, size);
}

bool allocmap_take(struct allocmap *a, uint64_t pid, uint64_t addr, uint64_t *size)
{
	if (__builtin_expect(((pid ^ a->last_pid) | addr >> ALLOCMAP__ADDR_BITS | a->slow) == 0, 1))
		return u64map_del(&a->packed, addr | a->last_high, size);
	return allocmap__take_slow(a, pid, addr, size);
}

bool allocmap_next(const struct allocmap *a, size_t *pos, uint64_t *pid, uint64_t *addr,
		   uint64_t *size)
{
	if (!(*pos & ALLOCMAP__FB_POS)) {
		uint64_t key;
		if (u64map_next(&a->packed, pos, &key, size)) {
			if (pid)
				*pid = a->pids[key >> ALLOCMAP__ADDR_BITS];
			if (addr)
				*addr = key & ((1ull << ALLOCMAP__ADDR_BITS) - 1);
			return true;
		}
		*pos = ALLOCMAP__FB_POS;
	}
	for (size_t i = *pos & ~ALLOCMAP__FB_POS; i < a->n_fb; i++) {
		const struct allocmap__fb_entry *x = &a->fb[i];
		if (!x->used)
			continue;
		if (pid)
			*pid = x->pid;
		if (addr)
			*addr = x->addr;
		if (size)
			*size = x->size;
		*pos = ALLOCMAP__FB_POS | (i + 1);
		return true;
	}
	*pos = ALLOCMAP__FB_POS | a->n_fb;
	return false;
}

size_t allocmap_count(const struct allocmap *a)
{
	return u64map_count(&a->packed) + a->fb_live;
}

void allocmap_free(struct allocmap *a)
{
	if (!a)
		return;
	u64map_destroy(&a->packed);
	u64map_destroy(&a->idx);
	u64map_destroy(&a->fb_heads);
	free(a->pids);
	free(a->fb);
	free(a);
}
