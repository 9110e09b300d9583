/* test_allocmap.c - the live-allocation map (src/analysis/allocmap.c).
 *
 * Purpose: put/take against a reference array under churn (many collisions), replacement of a
 * live address, and the entry cap; (process, address) pairs kept apart exactly: pids 65536
 * apart with the same addresses, addresses with high bits set, more processes than the packed
 * key numbers (the fallback), fallback pairs whose hashes collide; iteration giving back
 * process and address.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "allocmap.h"
#include "u64map.h"

Test(allocmap, matches_a_reference_under_churn, .timeout = 60)
{
	enum { N = 4096 };
	static uint64_t ref_size[N];
	static bool ref_live[N];
	struct allocmap *m = allocmap_new(1u << 20);
	cr_assert_not_null(m);
	uint64_t seed = 7;
	for (int i = 0; i < 200000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned k = (unsigned)(seed >> 40) % N;
		uint64_t addr = (uint64_t)k * 0x1000 * 37; /* many collisions in a small table */
		uint64_t size;
		if ((seed >> 20) & 1) {
			uint64_t old = 99;
			cr_assert_eq(allocmap_put(m, 7, addr, seed >> 50, &old), 0);
			cr_assert_eq(old, ref_live[k] ? ref_size[k] : 0);
			ref_live[k] = true;
			ref_size[k] = seed >> 50;
		} else {
			bool had = allocmap_take(m, 7, addr, &size);
			cr_assert_eq(had, ref_live[k]);
			if (had)
				cr_assert_eq(size, ref_size[k]);
			ref_live[k] = false;
		}
	}
	allocmap_free(m);

	m = allocmap_new(2);
	cr_assert_eq(allocmap_put(m, 7, 1, 1, NULL), 0);
	cr_assert_eq(allocmap_put(m, 7, 2, 1, NULL), 0);
	cr_assert_eq(allocmap_put(m, 7, 3, 1, NULL), -ENOSPC);
	cr_assert_eq(allocmap_put(m, 7, 2, 5, NULL), 0); /* replacing is always possible */
	allocmap_free(m);
	allocmap_free(NULL);
}

/* After a fork both processes use the same addresses; pids 65536 apart shared the old key
 * (addr ^ pid << 48), so one's free cancelled the other's allocation. */
Test(allocmap, processes_with_the_same_addresses_stay_apart, .timeout = 30)
{
	static const uint64_t pids[] = {100, 100 + 65536, 100 + 4 * 65536, 100 + 4194304};
	enum { NP = sizeof(pids) / sizeof(pids[0]), NA = 64 };
	struct allocmap *m = allocmap_new(1000);
	cr_assert_not_null(m);
	for (unsigned p = 0; p < NP; p++)
		for (unsigned a = 0; a < NA; a++) {
			uint64_t old = 99;
			cr_assert_eq(allocmap_put(m, pids[p], 0x7f0000001000ull + 64 * a,
						  p * 100 + a, &old),
				     0);
			cr_assert_eq(old, 0, "pid %" PRIu64 " addr %u replaced %" PRIu64, pids[p],
				     a, old);
		}
	cr_assert_eq(allocmap_count(m), NP * NA);
	/* pid 65636 frees everything: the others keep theirs */
	for (unsigned a = 0; a < NA; a++) {
		uint64_t size = 0;
		cr_assert(allocmap_take(m, pids[1], 0x7f0000001000ull + 64 * a, &size));
		cr_assert_eq(size, 100 + a);
		cr_assert_not(allocmap_take(m, pids[1], 0x7f0000001000ull + 64 * a, &size));
	}
	cr_assert_eq(allocmap_count(m), (NP - 1) * NA);
	for (unsigned p = 0; p < NP; p++)
		for (unsigned a = 0; a < NA; a++) {
			uint64_t size = 0;
			bool had = allocmap_take(m, pids[p], 0x7f0000001000ull + 64 * a, &size);
			cr_assert_eq(had, p != 1, "pid %" PRIu64 " addr %u", pids[p], a);
			if (had)
				cr_assert_eq(size, p * 100 + a);
		}
	cr_assert_eq(allocmap_count(m), 0);
	allocmap_free(m);
}

/* Addresses with bit 47 or higher set (5-level paging, hostile traces) are exact too: they
 * alias neither a low address nor another process's. */
Test(allocmap, addresses_with_high_bits_are_exact, .timeout = 30)
{
	static const uint64_t addrs[] = {0x1000,
					 0x1000 | 1ull << 47,
					 0x1000 | 1ull << 48,
					 0x1000 | 100ull << 48,
					 0x1000 | 1ull << 63,
					 UINT64_MAX,
					 0,
					 (1ull << 47) - 1};
	static const uint64_t pids[] = {100, 65636, 1, 0, UINT64_MAX, 1ull << 40};
	enum { NA = sizeof(addrs) / sizeof(addrs[0]), NP = sizeof(pids) / sizeof(pids[0]) };
	struct allocmap *m = allocmap_new(1000);
	cr_assert_not_null(m);
	for (unsigned p = 0; p < NP; p++)
		for (unsigned a = 0; a < NA; a++) {
			uint64_t old = 99;
			cr_assert_eq(allocmap_put(m, pids[p], addrs[a], 1 + p * NA + a, &old), 0);
			cr_assert_eq(old, 0, "pid %u addr %u", p, a);
		}
	cr_assert_eq(allocmap_count(m), NP * NA);
	for (unsigned p = 0; p < NP; p++) /* a second allocation replaces exactly its own */
		for (unsigned a = 0; a < NA; a++) {
			uint64_t old = 0;
			cr_assert_eq(allocmap_put(m, pids[p], addrs[a], 1000 + p * NA + a, &old),
				     0);
			cr_assert_eq(old, 1 + p * NA + a, "pid %u addr %u", p, a);
		}
	cr_assert_eq(allocmap_count(m), NP * NA);
	for (unsigned p = 0; p < NP; p += 2) /* every other process frees */
		for (unsigned a = 0; a < NA; a++) {
			uint64_t size = 0;
			cr_assert(allocmap_take(m, pids[p], addrs[a], &size));
			cr_assert_eq(size, 1000 + p * NA + a);
		}
	for (unsigned p = 0; p < NP; p++)
		for (unsigned a = 0; a < NA; a++) {
			uint64_t size = 0;
			bool had = allocmap_take(m, pids[p], addrs[a], &size);
			cr_assert_eq(had, p % 2 == 1, "pid %u addr %u", p, a);
			if (had)
				cr_assert_eq(size, 1000 + p * NA + a);
		}
	cr_assert_eq(allocmap_count(m), 0);
	allocmap_free(m);
}

/* Iteration gives back each allocation's process and address, whichever store holds it. */
Test(allocmap, iteration_gives_back_process_and_address, .timeout = 30)
{
	static const struct {
		uint64_t pid, addr, size;
	} want[] = {{100, 0x1000, 1},
		    {65636, 0x1000, 2},
		    {100, 0x1000 | 1ull << 50, 3},
		    {65636, 0x1000 | 1ull << 50, 4},
		    {UINT64_MAX, 0x2000, 5},
		    {7, (1ull << 47) - 8, 6},
		    {7, 1ull << 47, 7}};
	enum { N = sizeof(want) / sizeof(want[0]) };
	struct allocmap *m = allocmap_new(100);
	cr_assert_not_null(m);
	for (unsigned i = 0; i < N; i++)
		cr_assert_eq(allocmap_put(m, want[i].pid, want[i].addr, want[i].size, NULL), 0);
	bool seen[N] = {0};
	size_t pos = 0, n = 0;
	uint64_t pid, addr, size;
	while (allocmap_next(m, &pos, &pid, &addr, &size)) {
		cr_assert_lt(n++, N);
		cr_assert(size >= 1 && size <= N, "size %" PRIu64, size);
		unsigned i = (unsigned)size - 1;
		cr_assert_not(seen[i]);
		seen[i] = true;
		cr_assert_eq(pid, want[i].pid, "entry %u: pid %" PRIu64, i, pid);
		cr_assert_eq(addr, want[i].addr, "entry %u: addr %#" PRIx64, i, addr);
	}
	cr_assert_eq(n, N);
	cr_assert_not(allocmap_next(m, &pos, &pid, &addr, &size)); /* stays at the end */
	allocmap_free(m);
}

/* Past the first 2^17 processes the fallback holds the pairs: still exact, still capped. */
Test(allocmap, many_processes_use_the_fallback_exactly, .timeout = 60)
{
	enum { NP = (1 << 17) + 5000 };
	struct allocmap *m = allocmap_new(2 * NP);
	cr_assert_not_null(m);
	for (uint64_t p = 0; p < NP; p++) {
		cr_assert_eq(allocmap_put(m, p, 0x1000, p + 1, NULL), 0);
		cr_assert_eq(allocmap_put(m, p + 65536, 0x1000 | 1ull << 48, p + 2, NULL), 0);
	}
	cr_assert_eq(allocmap_count(m), 2 * NP);
	cr_assert_eq(allocmap_put(m, NP + 1000000, 0x1000, 1, NULL), -ENOSPC); /* full */
	cr_assert_eq(allocmap_put(m, NP + 70000, 0x1000 | 1ull << 48, 1, NULL), -ENOSPC);
	uint64_t old = 0;
	cr_assert_eq(allocmap_put(m, NP - 1, 0x1000, 77, &old), 0); /* replacing is possible */
	cr_assert_eq(old, NP);
	cr_assert_eq(allocmap_put(m, NP - 1 + 65536, 0x1000 | 1ull << 48, 78, &old), 0);
	cr_assert_eq(old, NP + 1);
	for (uint64_t p = 0; p < NP; p += 2) {
		uint64_t size = 0;
		cr_assert(allocmap_take(m, p, 0x1000, &size));
		cr_assert_eq(size, p == NP - 1 ? 77 : p + 1);
	}
	for (uint64_t p = 0; p < NP; p++) {
		uint64_t size = 0;
		bool had = allocmap_take(m, p, 0x1000, &size);
		cr_assert_eq(had, p % 2 == 1, "pid %" PRIu64, p);
		if (had)
			cr_assert_eq(size, p == NP - 1 ? 77 : p + 1);
		cr_assert(allocmap_take(m, p + 65536, 0x1000 | 1ull << 48, &size));
		cr_assert_eq(size, p == NP - 1 ? 78 : p + 2);
	}
	cr_assert_eq(allocmap_count(m), 0);
	allocmap_free(m);
}

/* Pairs whose fallback hashes collide (crafted under a known seed) share a chain and stay
 * exact, whichever of them goes first. */
Test(allocmap, colliding_fallback_pairs_stay_exact, .timeout = 30)
{
	const uint64_t seed = 0x9e3779b97f4a7c15ull;
	u64map_test_force_seed(seed);
	/* hash(pid, addr) = mix(addr ^ mix(pid)): equal when addr ^ mix(pid) is */
	const uint64_t a0 = 0xdead0000000000ull;
	uint64_t pid[3] = {100, 0, 0}, addr[3] = {a0, 0, 0};
	unsigned k = 1;
	for (uint64_t p = 101; k < 3; p++) {
		uint64_t a = a0 ^ u64map_mix(100, seed) ^ u64map_mix(p, seed);
		if (!(a >> 47))
			continue; /* must be a fallback address */
		pid[k] = p;
		addr[k++] = a;
	}
	for (unsigned first = 0; first < 3; first++) {
		struct allocmap *m = allocmap_new(100);
		cr_assert_not_null(m);
		for (unsigned i = 0; i < 3; i++)
			cr_assert_eq(allocmap_put(m, pid[i], addr[i], 10 + i, NULL), 0);
		cr_assert_eq(allocmap_count(m), 3);
		uint64_t size = 0;
		cr_assert_not(allocmap_take(m, pid[first] + 1, addr[first], &size));
		cr_assert(allocmap_take(m, pid[first], addr[first], &size));
		cr_assert_eq(size, 10 + first);
		cr_assert_not(allocmap_take(m, pid[first], addr[first], &size));
		for (unsigned i = 0; i < 3; i++) {
			if (i == first)
				continue;
			uint64_t old = 0;
			cr_assert_eq(allocmap_put(m, pid[i], addr[i], 20 + i, &old), 0);
			cr_assert_eq(old, 10 + i, "first %u, then %u", first, i);
		}
		/* the freed entry is reused */
		cr_assert_eq(allocmap_put(m, pid[first], addr[first], 30, NULL), 0);
		for (unsigned i = 0; i < 3; i++) {
			cr_assert(allocmap_take(m, pid[i], addr[i], &size));
			cr_assert_eq(size, i == first ? 30 : 20 + i);
		}
		cr_assert_eq(allocmap_count(m), 0);
		allocmap_free(m);
	}
	u64map_test_force_seed(0);
}
