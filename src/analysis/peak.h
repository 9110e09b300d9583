/* peak.h - a process's peak RSS, trace buffers excluded, from the figures a trace holds:
 * the one rule that trace-run's last line and trace-dump summary both print (peak_of,
 * given the same figures: struct peak_figures).
 *
 * The kernel's high-water mark H counts the trace buffers resident at the moment of the peak,
 * and that share is not known exactly: it lay between bmin (0 is assumed: the peak may precede
 * the first sample) and bmax, the most the buffers ever held (the exit record's figure: the
 * runtime's count of it, exit flag TRC_EXIT_BUFFERS_PEAK, or the share at exit; or the largest
 * share a sample saw, whichever is more). So the peak is the interval [H - bmax, H - bmin],
 * raised to the largest sample wherever it is below it (a peak is never below a sampled value),
 * and exact only when the interval is a point.
 *
 * Which H (peak_hwm):
 *   - the process's own VmHWM as it exited (its SELF exit record): it counts that process alone;
 *   - else, for the program trace-run started, wait4's ru_maxrss: the largest of the program
 *     and its waited-for descendants. When another process of the tree had an own peak at
 *     least as high, it may be that descendant's: not taken;
 *   - else none: the largest sample is the peak, with wait4's figure, when there is one, as
 *     the top of the interval (peak_sampled).
 *
 * What is not believed (DESIGN: a figure the recorder cannot believe is reported as unknown
 * and flagged, never as fact). A process's own VmHWM and its buffers' count are its runtime's
 * word, written in memory the program can scribble on; ru_maxrss is the kernel's, but a file
 * can be crafted. So:
 *   - an own VmHWM above the program's wait4 ru_maxrss is refused (ru_maxrss is the largest of
 *     the program's own peak, across its execs, and its waited-for descendants': the program's
 *     own VmHWM cannot exceed it, but for the counters' inexactness,
 *     peak_wait_slack), and so is any figure above PEAK_PLAUSIBLE_BYTES;
 *     the process is then decided as if it had given none (flag PEAK_HWM_REFUSED);
 *   - a buffers' most above H is taken as H (the buffers are resident pages of the process,
 *     part of H): flag PEAK_BUFFERS_BOUNDED, the low end then the largest sample.
 * A process that is not the program has no kernel figure of its own in the file (trace-run
 * waits for the program only, and an orphan's peak is not in the program's ru_maxrss): its
 * own VmHWM is bounded by the plausible bound alone.
 *
 * trace-dump summary can narrow an interval further when every sample carries VmHWM and the
 * exit record has no count (summary_processes.c): trace-run keeps no samples to do it with.
 *
 * Header only: trace-run does not link the analysis code. Threads: any (pure functions).
 */
#ifndef TRC_PEAK_H
#define TRC_PEAK_H

#include <stdbool.h>
#include <stdint.h>

/* The most RSS a process can have: its resident pages are mapped in its address space, which
 * Linux keeps below 2^57 bytes on every 64-bit architecture (the largest, x86-64 with 5-level
 * page tables, gives user space 2^56). A figure above it was not written by a kernel. */
#define PEAK_PLAUSIBLE_BYTES (1ull << 57)

/* Bits of peak.bounded: a figure given for the peak was not believed (see the top). */
#define PEAK_HWM_REFUSED 1u /* an own VmHWM (or ru_maxrss) was refused: refused_bytes */
#define PEAK_BUFFERS_BOUNDED 2u /* the buffers' most exceeded H: taken as H */

enum peak_source {
	PEAK_NONE = 0, /* no kernel figure and no sample */
	PEAK_KERNEL = 1, /* from H */
	PEAK_SAMPLED = 2 /* no H: the largest sample */
};

struct peak {
	uint64_t low_bytes, high_bytes;
	bool exact;
	/* peak_of only (0 from the helpers below): where it came from. */
	uint8_t source; /* enum peak_source */
	uint8_t bounded; /* PEAK_* bits */
	bool own; /* H is the process's own VmHWM (else wait4's ru_maxrss) */
	uint64_t hwm_bytes; /* H, buffers included; 0: none */
	uint64_t buffers_max_bytes; /* bmax taken (after its bound) */
	uint64_t refused_bytes; /* the figure refused (PEAK_HWM_REFUSED), else 0 */
};

/* What a trace (or trace-run, from the same sources) holds for one process. 0: none. */
struct peak_figures {
	uint64_t self_hwm_bytes, self_buffers_bytes; /* its own exit record: VmHWM, buffers */
	uint64_t wait_maxrss_bytes, wait_buffers_bytes; /* trace-run's (the program only) */
	/* The largest own VmHWM of the other processes of the tree that is believed
	 * (peak_own_believed with their own wait figure, 0 for all but the program);
	 * UINT64_MAX when one of them was refused: wait4's figure may be that process's. */
	uint64_t others_hwm_bytes;
	uint64_t samples; /* how many samples it has */
	uint64_t sampled_max_bytes; /* the largest sample, buffers excluded */
	uint64_t sampled_buffers_max_bytes; /* the largest buffers' share a sample saw */
};

/* H less the buffers' share at the moment of the peak, which lay in [bmin, bmax]; never below
 * sampled_max. */
static inline struct peak peak_interval(uint64_t hwm, uint64_t bmin, uint64_t bmax,
							uint64_t sampled_max)
{
	struct peak p;
	if (bmin > bmax)
		bmin = bmax;
	p.low_bytes = hwm > bmax ? hwm - bmax : 0;
	p.high_bytes = hwm > bmin ? hwm - bmin : 0;
	p.exact = bmin == bmax && sampled_max <= p.low_bytes;
	if (p.low_bytes < sampled_max)
		p.low_bytes = sampled_max;
	if (p.high_bytes < p.low_bytes)
		p.high_bytes = p.low_bytes;
	return p;
}

/* The kernel figure that is the process's H (see the top), 0 for none. self_hwm: its own VmHWM
 * at exit (0: no SELF exit record); wait_maxrss: wait4's ru_maxrss (0: trace-run did not wait
 * for it); others_hwm: the largest own VmHWM of the other processes of the tree. */
static inline uint64_t peak_hwm(uint64_t self_hwm, uint64_t wait_maxrss,
					uint64_t others_hwm)
{
	if (self_hwm)
		return self_hwm;
	return wait_maxrss > others_hwm ? wait_maxrss : 0;
}

/* Without an H: the largest sample, and wait4's figure (maybe a descendant's: an upper bound
 * only) as the top when it is above. */
static inline struct peak peak_sampled(uint64_t sampled_max, uint64_t wait_maxrss)
{
	struct peak p = {.low_bytes = sampled_max, .high_bytes = sampled_max};
	if (wait_maxrss > p.high_bytes)
		p.high_bytes = wait_maxrss;
	return p;
}

/* How far an own VmHWM may exceed wait4's ru_maxrss and still be believed: the kernel keeps
 * RSS in per-CPU counters that /proc reads approximately, so the VmHWM the runtime reads just
 * before exit and the ru_maxrss the kernel takes at exit can differ by some per-CPU batches
 * either way (an eighth, and 8 MiB, cover them: the bound is there for figures no kernel
 * wrote, not for those). */
static inline uint64_t peak_wait_slack(uint64_t wait_maxrss)
{
	return wait_maxrss / 8 + (8ull << 20);
}

/* Whether a process's own VmHWM is believed (see the top): given, plausible, and not above
 * wait_maxrss, wait4's figure for it (0: trace-run did not wait for it), beyond its slack. */
static inline bool peak_own_believed(uint64_t self_hwm, uint64_t wait_maxrss)
{
	return self_hwm && self_hwm <= PEAK_PLAUSIBLE_BYTES &&
	       (!wait_maxrss || wait_maxrss > PEAK_PLAUSIBLE_BYTES ||
		self_hwm <= wait_maxrss ||
		self_hwm - wait_maxrss <= peak_wait_slack(wait_maxrss));
}

/* The peak of one process by the rule at the top: what trace-run's last line and trace-dump
 * summary print. */
static inline struct peak peak_of(const struct peak_figures *f)
{
	uint64_t self = f->self_hwm_bytes, wait = f->wait_maxrss_bytes, refused = 0;
	if (wait > PEAK_PLAUSIBLE_BYTES) {
		refused = wait;
		wait = 0;
	}
	if (self && !peak_own_believed(self, wait)) {
		refused = self;
		self = 0;
	}
	const uint64_t hwm = peak_hwm(self, wait, f->others_hwm_bytes);
	struct peak p = {0};
	uint8_t bounded = refused ? PEAK_HWM_REFUSED : 0;
	uint64_t bmax = 0;
	if (hwm) {
		bmax = self ? f->self_buffers_bytes : f->wait_buffers_bytes;
		if (f->sampled_buffers_max_bytes > bmax)
			bmax = f->sampled_buffers_max_bytes;
		if (bmax > hwm) {
			bmax = hwm;
			bounded |= PEAK_BUFFERS_BOUNDED;
		}
		p = peak_interval(hwm, 0, bmax, f->sampled_max_bytes);
		p.source = PEAK_KERNEL;
	} else if (f->samples) {
		p = peak_sampled(f->sampled_max_bytes, wait);
		p.source = PEAK_SAMPLED;
	}
	p.bounded = bounded;
	p.own = hwm && self;
	p.hwm_bytes = hwm;
	p.buffers_max_bytes = bmax;
	p.refused_bytes = refused;
	return p;
}

#endif /* TRC_PEAK_H */
