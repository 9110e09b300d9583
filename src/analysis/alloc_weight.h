/* alloc_weight.h - what one allocation stands for in views by call stack.
 *
 * With every stack captured (--alloc-stacks all) an allocation of n bytes is n bytes and one
 * allocation. With Poisson sampling of bytes (--alloc-stacks sample=S: the trace header's
 * sample_bytes) an allocation of n bytes carries a stack with probability p = 1 - exp(-n / S);
 * counting each sampled one as n / p bytes and 1 / p allocations makes the totals per stack
 * unbiased (their expectation is the true total), and an unsampled one (no stack) adds
 * nothing to them. Totals that do not go by stack (bytes allocated, live heap, counts) take
 * every allocation exactly, sampled or not.
 *
 * Threads: pure functions.
 */
#ifndef TRC_ALLOC_WEIGHT_H
#define TRC_ALLOC_WEIGHT_H

#include <math.h>
#include <stdint.h>

#include "trcfile.h"

/* The trace's sampling mean in bytes, or 0 when stacks were not sampled. */
static inline double alloc_weight_sample_bytes(const struct trcfile_reader *r)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	return h->alloc_stacks == TRCFILE_ALLOC_STACKS_SAMPLED && h->sample_bytes
		       ? (double)h->sample_bytes
		       : 0;
}

/* The probability that an allocation of size bytes was sampled (1 without sampling). */
static inline double alloc_weight_p(uint64_t size, double sample_bytes)
{
	if (sample_bytes <= 0 || (double)size >= sample_bytes)
		return 1;
	double p = -expm1(-(double)size / sample_bytes);
	return p > 0 ? p : 1e-300;
}

/* The bytes an allocation stands for (size / p), rounded. */
static inline uint64_t alloc_weight_bytes(uint64_t size, double sample_bytes)
{
	double w = (double)size / alloc_weight_p(size, sample_bytes);
	return w >= 1.8e19 ? UINT64_MAX : (uint64_t)(w + 0.5);
}

/* The allocations it stands for (1 / p), rounded. */
static inline uint64_t alloc_weight_count(uint64_t size, double sample_bytes)
{
	double w = 1 / alloc_weight_p(size, sample_bytes);
	return w >= 1.8e19 ? UINT64_MAX : (uint64_t)(w + 0.5);
}

#endif /* TRC_ALLOC_WEIGHT_H */
