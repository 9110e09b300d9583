/* clock.h - the tracer's time base: TSC detection and calibration, and tick -> ns conversion.
 *
 * The trace has one clock domain, CLOCK_MONOTONIC nanoseconds (DESIGN "Time"). Producers stamp
 * with the TSC when the recorder found it invariant (CPUID 0x80000007 EDX bit 8: constant rate,
 * keeps counting in deep C-states), else with clock_gettime. The recorder converts in the drain:
 * ns = ns0 + ((ticks - tick0) * mult) >> shift, one 64x64->128 multiply, no division per record.
 *
 * Calibration: at session creation the recorder takes (tsc, monotonic) pairs a couple of ms
 * apart; while it runs it refits the rate over the whole elapsed time (the longer the baseline
 * the smaller the error: a pair is good to ~50 ns, so 2 ms gives ~25 ppm and 10 s ~5 ppb).
 * Each refit starts a new segment anchored on a fresh pair; a record uses the segment its tick
 * falls in, so conversion stays monotonic within a segment.
 *
 * Used by both sides: the runtime (src/runtime/) reads the TSC, the recorder (src/session/)
 * calibrates and converts. All functions are thread-safe (no shared state) and never block
 * except trc_clock_calibrate, which spins for the window it is given.
 */
#ifndef TRC_CLOCK_H
#define TRC_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "trc/wire.h" /* trc_mono_ns: the clock this converts to */

#define TRC_CLOCK_SHIFT 32u

/* A linear map from ticks to CLOCK_MONOTONIC ns, anchored at (tick0, ns0). */
struct trc_clock_conv {
	uint64_t tick0;
	uint64_t ns0;
	uint64_t mult; /* ns per tick << TRC_CLOCK_SHIFT */
};

/* One simultaneous reading of both clocks. */
struct trc_clock_pair {
	uint64_t tsc;
	uint64_t ns;
};

static inline uint64_t trc_clock_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

/* True when the CPU says its TSC is invariant (and this is x86). */
bool trc_clock_tsc_invariant(void);

/* A (tsc, ns) pair read as close together as this machine allows (best of a few tries). */
void trc_clock_read_pair(struct trc_clock_pair *out);

/* Spins for window_ns, fills *c anchored at the first pair and returns the TSC rate in Hz
 * (0 when the TSC did not advance: then *c is the identity and must not be used). */
uint64_t trc_clock_calibrate(struct trc_clock_conv *c, uint64_t window_ns);

/* The conversion fitted between two pairs (a.tsc < b.tsc), anchored at b. Returns 0 or -EINVAL
 * when the pairs cannot define a rate. */
int trc_clock_fit(struct trc_clock_conv *c, const struct trc_clock_pair *a,
		  const struct trc_clock_pair *b);

/* Hz implied by a conversion. */
uint64_t trc_clock_hz(const struct trc_clock_conv *c);

static inline uint64_t trc_clock_to_ns(const struct trc_clock_conv *c, uint64_t ticks)
{
	if (ticks >= c->tick0)
		return c->ns0 + (uint64_t)(((unsigned __int128)(ticks - c->tick0) * c->mult) >>
					   TRC_CLOCK_SHIFT);
	uint64_t back =
		(uint64_t)(((unsigned __int128)(c->tick0 - ticks) * c->mult) >> TRC_CLOCK_SHIFT);
	return back > c->ns0 ? 0 : c->ns0 - back;
}

#endif /* TRC_CLOCK_H */
