/* test_mut_units.c - exact values of small parts that the wider suites check only loosely
 * (tests/mutants/LIST names the bugs each test is for).
 *
 * Purpose: the histogram's quantile rank (ceil(q * n), 1-based) on values that have buckets of
 * their own, where a quantile one rank off is a different number.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "histogram.h"

/* mutants hist-quantile-rank, hist-quantile-ceil: values 1..10, one each (exact buckets below
 * HIST_SUB): the quantile q is the value of rank ceil(10 q). */
Test(mut_units, histogram_quantile_ranks_exact)
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
		cr_assert_eq(hist_quantile(h, cases[i].q, 10), cases[i].want,
			     "q %.2f: %llu, not %llu", cases[i].q,
			     (unsigned long long)hist_quantile(h, cases[i].q, 10),
			     (unsigned long long)cases[i].want);
	hist_free(h);
}
