/* test_histogram.c - the log-linear histogram (src/analysis/histogram.c).
 *
 * Purpose: bucket bounds (exact below 32, within 3% above), quantiles against a sorted
 * reference, the byte budget (values left out, nothing allocated past it), the hot-group
 * shortcut, merging.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "histogram.h"

Test(histogram, buckets, .timeout = 60)
{
	for (uint64_t v = 0; v < HIST_SUB; v++) {
		unsigned g, sub;
		hist_bucket(v, &g, &sub);
		cr_assert(g == 0 && sub == v, "%llu: exact below %d", (unsigned long long)v,
			  HIST_SUB);
	}
	/* Above, each bucket is 1/32 of its power of two; values order like their buckets. */
	unsigned pg = 0, ps = HIST_SUB - 1;
	for (uint64_t v = HIST_SUB; v < (1ull << 40); v += v / 7 + 1) {
		unsigned g, sub;
		hist_bucket(v, &g, &sub);
		cr_assert_lt(g, HIST_GROUPS);
		cr_assert_lt(sub, HIST_SUB);
		cr_assert(g > pg || (g == pg && sub >= ps), "buckets out of order at %llu",
			  (unsigned long long)v);
		pg = g;
		ps = sub;
	}
	unsigned g, sub;
	hist_bucket(UINT64_MAX, &g, &sub);
	cr_assert_eq(g, HIST_GROUPS - 1, "the largest value has a bucket");
	cr_assert_eq(sub, HIST_SUB - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(histogram, quantiles_within_3_percent, .timeout = 60)
{
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct hist *h = NULL;
	struct hist_hot hot = {0};
	uint64_t budget = 1u << 20, min = 0, max = 0, seed = 17;
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* a long-tailed mix: mostly ~1 us, some ~1 ms, a few ~1 s */
		uint64_t x = seed >> 40;
		v[i] = (seed >> 20) % 100 == 0 ? 1000000000 + x * 7
		       : (seed >> 8) % 10 == 0 ? 1000000 + x
					       : 1000 + x % 500;
		if (v[i] > max)
			max = v[i];
		if (i == 0 || v[i] < min)
			min = v[i];
		cr_assert_eq(hist_count(&h, &hot, v[i], &budget), 0);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	static const double qs[] = {0.01, 0.5, 0.9, 0.99, 0.999, 1.0};
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t want = v[(size_t)(qs[i] * N + 0.999999) - 1];
		uint64_t got = hist_quantile(h, qs[i], min, max);
		double err = got > want ? (double)(got - want) / want : (double)(want - got) / want;
		cr_assert_leq(err, 0.03, "q %.3f: %llu, exact %llu", qs[i], (unsigned long long)got,
			      (unsigned long long)want);
	}
	cr_assert_eq(hist_quantile(h, 1.0, min, max), max, "the top is clamped to the exact max");
	struct hist empty = {0};
	cr_assert_eq(hist_quantile(&empty, 0.5, 0, 10), 0);
	hist_free(h);
	hist_free(NULL);
	free(v);
}

Test(histogram, budget_and_hot_group, .timeout = 60)
{
	struct hist *h = NULL;
	struct hist_hot hot = {0};
	uint64_t budget = sizeof(struct hist) + HIST_GROUP_BYTES; /* the histogram, one group */
	cr_assert_eq(hist_count(&h, &hot, 40, &budget), 0);
	cr_assert_not_null(h);
	cr_assert_eq(budget, 0, "what was allocated came off the budget");
	cr_assert_eq(hist_count(&h, &hot, 41, &budget), 0, "same group: no allocation");
	cr_assert_eq(hist_count(&h, &hot, 5000, &budget), 1, "a new group over budget");
	unsigned g5000, s5000;
	hist_bucket(5000, &g5000, &s5000);
	cr_assert_null(h->group[g5000]);
	cr_assert_eq(hist_count(&h, &hot, 42, &budget), 0);
	unsigned g, sub;
	hist_bucket(40, &g, &sub);
	uint64_t n = 0;
	for (unsigned i = 0; i < HIST_SUB; i++)
		n += h->group[g][i];
	cr_assert_eq(n, 3, "the value over budget was left out, the others counted");
	cr_assert_eq(hot.grp, h->group[g]);
	cr_assert_eq(hot.g, g);

	/* Moving between groups that exist needs no budget. */
	budget = sizeof(struct hist) + HIST_GROUP_BYTES;
	struct hist *h2 = NULL;
	struct hist_hot hot2 = {0};
	cr_assert_eq(hist_count(&h2, &hot2, 1, &budget), 0);
	budget = HIST_GROUP_BYTES;
	cr_assert_eq(hist_count(&h2, &hot2, 1000, &budget), 0);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(hist_count(&h2, &hot2, i % 2 ? 1 : 1000, &budget), 0);
		cr_assert_eq(budget, 0);
	}
	unsigned g1, s1, gk, sk;
	hist_bucket(1, &g1, &s1);
	hist_bucket(1000, &gk, &sk);
	cr_assert_eq(h2->group[g1][s1], 51, "each value counted in its own bucket");
	cr_assert_eq(h2->group[gk][sk], 51);
	/* Merge: counts add up, groups follow. */
	struct hist sum = {0};
	cr_assert_eq(hist_merge(&sum, h), 0);
	cr_assert_eq(hist_merge(&sum, h2), 0);
	cr_assert_eq(hist_quantile(&sum, 1.0, 1, 1000), 1000);
	cr_assert_eq(hist_quantile(&sum, 0.01, 1, 1000), 1);
	hist_clear(&sum);
	cr_assert_null(sum.group[0]);
	hist_free(h);
	hist_free(h2);
}

/* One value counted: its bucket's middle (1232 for 1234) lies below it, and every quantile is
 * the value itself, the exact min and max the caller passes. */
Test(histogram, a_single_value_is_every_quantile, .timeout = 60)
{
	struct hist *h = NULL;
	struct hist_hot hot = {0};
	uint64_t budget = 1u << 20;
	cr_assert_eq(hist_count(&h, &hot, 1234, &budget), 0);
	cr_expect_eq(hist_quantile(h, 0.01, 1234, 1234), 1234);
	cr_expect_eq(hist_quantile(h, 0.50, 1234, 1234), 1234);
	cr_expect_eq(hist_quantile(h, 0.99, 1234, 1234), 1234);
	/* Two values in one bucket: the low quantile is clamped up to the smaller one. */
	cr_assert_eq(hist_count(&h, &hot, 1240, &budget), 0);
	cr_expect_eq(hist_quantile(h, 0.50, 1234, 1240), 1234);
	hist_free(h);
}

/* Values 1..10, one each (exact buckets below
 * HIST_SUB): the quantile q is the value of rank ceil(10 q). */
Test(histogram, histogram_quantile_ranks_exact, .timeout = 60)
{
	struct hist *h = NULL;
	struct hist_hot hot = {0};
	uint64_t budget = 1u << 20;
	for (uint64_t v = 1; v <= 10; v++)
		cr_assert_eq(hist_count(&h, &hot, v, &budget), 0);
	static const struct {
		double q;
		uint64_t want;
	} cases[] = {{0.1, 1}, {0.5, 5}, {0.55, 6}, {0.9, 9}, {0.91, 10}, {1.0, 10}, {0.01, 1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(hist_quantile(h, cases[i].q, 1, 10), cases[i].want,
			     "q %.2f: %llu, not %llu", cases[i].q,
			     (unsigned long long)hist_quantile(h, cases[i].q, 1, 10),
			     (unsigned long long)cases[i].want);
	hist_free(h);
}
