/* histogram.h - a log-linear histogram of u64 values (span durations), quantiles from it.
 *
 * Purpose: percentiles of any number of values in bounded memory. Values below 32 count
 * exactly; above, each power of two is cut into 32 sub-buckets, so a bucket's middle is within
 * 3% of any value in it. Groups (one power of two each) are allocated on first use, within a
 * byte budget the caller passes down: past it a value is left out and the caller says its
 * percentiles are approximate.
 *
 * Hot loops: hist_count counts a value that falls in the same group as the previous one of
 * its histogram through a struct hist_hot kept beside it, with no load through the histogram
 * (durations of one span name share a few groups).
 *
 * Threads: none; a histogram belongs to one thread at a time.
 * Errors: 0 or -ENOMEM; hist_count returns 1 for a value left out over budget.
 */
#ifndef TRC_HISTOGRAM_H
#define TRC_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define HIST_GROUPS 60 /* group 0: values 0..31; group g >= 1: [2^(g+4), 2^(g+5)) */
#define HIST_SUB 32 /* sub-buckets per group */
#define HIST_GROUP_BYTES (HIST_SUB * sizeof(uint64_t))

struct hist {
	uint64_t *group[HIST_GROUPS]; /* HIST_SUB counts each, NULL until used */
};

/* Where the last value of a histogram was counted. Zero-initialised: nothing yet. */
struct hist_hot {
	uint64_t *grp;
	unsigned g;
};

/* The bucket (group, sub-bucket) of v. */
static inline void hist_bucket(uint64_t v, unsigned *g, unsigned *sub)
{
	if (v < HIST_SUB) {
		*g = 0;
		*sub = (unsigned)v;
		return;
	}
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 5 */
	*g = e - 4;
	*sub = (unsigned)(v >> (e - 5)) & (HIST_SUB - 1);
}

/* The out-of-line half of hist_count: group g must be allocated first. */
int hist_count_slow(struct hist **h, struct hist_hot *hot, unsigned g, unsigned sub,
		    uint64_t *budget_bytes);

/* Counts v into *h (allocated on first use, as is v's group, each within *budget_bytes,
 * which shrinks by what was allocated). 0; 1 when v was left out (over budget); -ENOMEM. */
static inline int hist_count(struct hist **h, struct hist_hot *hot, uint64_t v,
			     uint64_t *budget_bytes)
{
	unsigned g, sub;
	hist_bucket(v, &g, &sub);
	if (__builtin_expect(g == hot->g && hot->grp != NULL, 1)) {
		hot->grp[sub]++;
		return 0;
	}
	/* Another group, allocated already: jittered durations move between a few groups. */
	const struct hist *hh = *h;
	if (hh && hh->group[g]) {
		hot->g = g;
		hot->grp = hh->group[g];
		hot->grp[sub]++;
		return 0;
	}
	return hist_count_slow(h, hot, g, sub, budget_bytes);
}

/* Adds src's counts to dst (groups allocated as needed, outside any budget). 0 or -ENOMEM. */
int hist_merge(struct hist *dst, const struct hist *src);
/* The value at rank ceil(q * n) (1-based) of the n values counted, as the middle of its bucket
 * clamped to [min, max] (the smallest and largest values counted, known exactly by the
 * caller: a value counted once is its every quantile); 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q, uint64_t min, uint64_t max);
/* Frees the groups of h (h itself stays: for a histogram on the stack). */
void hist_clear(struct hist *h);
/* Frees a histogram allocated by hist_count. Accepts NULL. */
void hist_free(struct hist *h);

#endif /* TRC_HISTOGRAM_H */
