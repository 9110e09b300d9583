/* clock.c - TSC detection, (tsc, ns) pairs and the fit between them. See clock.h.
 * Built into libtrc (rt_ prefix) because both sides use it: the runtime reads the clocks, the
 * recorder (libtrc-core.a, linked together with libtrc.a) calibrates and converts.
 * No shared state: every function is safe from any thread. */
#include "clock.h"

#include <errno.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

bool trc_clock_tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1u;
#else
	return false;
#endif
}

void trc_clock_read_pair(struct trc_clock_pair *out)
{
	uint64_t best_gap = UINT64_MAX;
	/* The pair is only as good as the gap between the two TSC reads around clock_gettime:
	 * keep the tightest of a few (a preemption or vDSO retry shows up as a wide gap). */
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = trc_clock_rdtsc();
		uint64_t ns = trc_mono_ns();
		uint64_t t1 = trc_clock_rdtsc();
		if (t1 - t0 < best_gap) {
			best_gap = t1 - t0;
			out->tsc = t0 + (t1 - t0) / 2;
			out->ns = ns;
		}
	}
}

int trc_clock_fit(struct trc_clock_conv *c, const struct trc_clock_pair *a,
		  const struct trc_clock_pair *b)
{
	if (b->tsc <= a->tsc || b->ns <= a->ns)
		return -EINVAL;
	unsigned __int128 num = (unsigned __int128)(b->ns - a->ns) << TRC_CLOCK_SHIFT;
	unsigned __int128 mult = num / (b->tsc - a->tsc);
	if (mult == 0 || mult > UINT64_MAX)
		return -EINVAL;
	c->tick0 = b->tsc;
	c->ns0 = b->ns;
	c->mult = (uint64_t)mult;
	return 0;
}

uint64_t trc_clock_hz(const struct trc_clock_conv *c)
{
	if (!c->mult)
		return 0;
	return (uint64_t)(((unsigned __int128)1000000000ull << TRC_CLOCK_SHIFT) / c->mult);
}

uint64_t trc_clock_calibrate(struct trc_clock_conv *c, uint64_t window_ns)
{
	struct trc_clock_pair a, b;
	trc_clock_read_pair(&a);
	do
		trc_clock_read_pair(&b);
	while (b.ns - a.ns < window_ns);
	if (trc_clock_fit(c, &a, &b) < 0) {
		c->tick0 = 0;
		c->ns0 = 0;
		c->mult = 1ull << TRC_CLOCK_SHIFT;
		return 0;
	}
	return trc_clock_hz(c);
}
