/* histogram.c - the log-linear histogram of histogram.h.
 *
 * Invariant: a group pointer is NULL or HIST_SUB counts; hist_hot.grp, when set, is one of its
 * histogram's groups (groups are never freed before the histogram).
 *
 * Threads: none.
 */
#include "histogram.h"

#include <errno.h>
#include <stdlib.h>

/* Middle of a bucket's value range. */
static uint64_t hist__bucket_value(unsigned g, unsigned sub)
{
	if (g == 0)
		return sub;
	unsigned e = g + 4;
	uint64_t lo = (1ull << e) + ((uint64_t)sub << (e - 5));
	return lo + ((1ull << (e - 5)) >> 1);
}

int hist_count_slow(struct hist **hp, struct hist_hot *hot, unsigned g, unsigned sub,
		    uint64_t *budget_bytes)
{
	struct hist *h = *hp;
	size_t need = (h ? 0 : sizeof(*h)) + (h && h->group[g] ? 0 : HIST_GROUP_BYTES);
	if (need > *budget_bytes)
		return 1;
	if (!h) {
		h = *hp = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
	}
	if (!h->group[g]) {
		h->group[g] = calloc(HIST_SUB, sizeof(uint64_t));
		if (!h->group[g])
			return -ENOMEM;
	}
	*budget_bytes -= need;
	h->group[g][sub]++;
	hot->g = g;
	hot->grp = h->group[g];
	return 0;
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned g = 0; g < HIST_GROUPS; g++) {
		if (!src->group[g])
			continue;
		if (!dst->group[g]) {
			dst->group[g] = calloc(HIST_SUB, sizeof(uint64_t));
			if (!dst->group[g])
				return -ENOMEM;
		}
		for (unsigned i = 0; i < HIST_SUB; i++)
			dst->group[g][i] += src->group[g][i];
	}
	return 0;
}

uint64_t hist_quantile(const struct hist *h, double q, uint64_t min, uint64_t max)
{
	uint64_t n = 0;
	for (unsigned g = 0; g < HIST_GROUPS; g++)
		for (unsigned i = 0; h->group[g] && i < HIST_SUB; i++)
			n += h->group[g][i];
	if (!n)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)n);
	if ((double)rank < q * (double)n)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned g = 0; g < HIST_GROUPS; g++) {
		if (!h->group[g])
			continue;
		for (unsigned i = 0; i < HIST_SUB; i++) {
			seen += h->group[g][i];
			if (seen >= rank) {
				uint64_t v = hist__bucket_value(g, i);
				return v > max ? max : v < min ? min : v;
			}
		}
	}
	return max;
}

void hist_clear(struct hist *h)
{
	for (unsigned g = 0; g < HIST_GROUPS; g++) {
		free(h->group[g]);
		h->group[g] = NULL;
	}
}

void hist_free(struct hist *h)
{
	if (!h)
		return;
	hist_clear(h);
	free(h);
}
