/* lttng_events.c - the tight event loop of bench/work_events.c, through LTTng-UST.
 *
 * Purpose: the LTTng side of peer workload 1 (bench/peers.sh): the same loop (bench/work_loop.h)
 * emitting trc_bench:instant tracepoints instead of TRC_INSTANT. Run it inside an LTTng
 * session with `trc_bench:*` enabled to measure the recording cost, or without one to measure
 * a disabled tracepoint.
 * Usage and output: see bench/work_loop.h (modes: instant, bare).
 * Threads: as work_loop.h; LTTng-UST's own listener threads register the process with the
 * session daemon from a constructor, before main, so the loop starts with tracing enabled.
 * Built only by bench/peers.sh (cc ... -llttng-ust -ldl).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "trc_bench_tp.h"

#include "work_loop.h"

static void lttng_events__instant(unsigned thread_idx, uint64_t first, uint64_t n)
{
	(void)thread_idx;
	for (uint64_t i = 0; i < n; i++)
		lttng_ust_tracepoint(trc_bench, instant, (int64_t)(first + i));
}

static const struct workloop_mode lttng_events__modes[] = {
	{"instant", lttng_events__instant},
	{"bare", workloop_emit_bare},
};

int main(int argc, char **argv)
{
	return workloop_run(argc, argv, "lttng_events", lttng_events__modes,
			    sizeof(lttng_events__modes) / sizeof(lttng_events__modes[0]), NULL);
}
