/* test_allocmap.c - the live-allocation map (src/analysis/allocmap.c).
 *
 * Purpose: put/take against a reference array under churn (many collisions), replacement of a
 * live address, and the entry cap.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "allocmap.h"

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
			cr_assert_eq(allocmap_put(m, addr, seed >> 50, &old), 0);
			cr_assert_eq(old, ref_live[k] ? ref_size[k] : 0);
			ref_live[k] = true;
			ref_size[k] = seed >> 50;
		} else {
			bool had = allocmap_take(m, addr, &size);
			cr_assert_eq(had, ref_live[k]);
			if (had)
				cr_assert_eq(size, ref_size[k]);
			ref_live[k] = false;
		}
	}
	allocmap_free(m);

	m = allocmap_new(2);
	cr_assert_eq(allocmap_put(m, 1, 1, NULL), 0);
	cr_assert_eq(allocmap_put(m, 2, 1, NULL), 0);
	cr_assert_eq(allocmap_put(m, 3, 1, NULL), -ENOSPC);
	cr_assert_eq(allocmap_put(m, 2, 5, NULL), 0); /* replacing is always possible */
	allocmap_free(m);
	allocmap_free(NULL);
}
