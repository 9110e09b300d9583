/* work_events.c - the tight event loop: N events over T threads through trc.h.
 *
 * Purpose: the trc side of peer workload 1 (bench/peers.sh): the program that
 * `trace-run -- build/bench/work_events 10000000 2` records, against the very same loop
 * through LTTng-UST (bench/peers/lttng_events.c; both loops live in bench/work_loop.h).
 * Anyone can run it by hand, with or without trace-run.
 *
 * Usage: work_events EVENTS [THREADS [MODE]]
 *   instant (default)  TRC_INSTANT("work.instant", i): one event per iteration
 *   span               TRC_BEGIN / TRC_END pairs: two events per iteration (EVENTS counts
 *                      events, so EVENTS/2 iterations)
 *   bare               the baseline: TSC read and a store into an array, no tracer
 * Prints one line (see work_loop.h), e.g.
 *   work_events mode=instant events=10000000 threads=2 emitted=10000000 wall_ns=... ns_per_event=...
 * `emitted` is what the program emitted, to check against the trace's
 * events_recorded + events_lost.
 *
 * Threads: THREADS workers, each emitting into its own ring (trc.h); each names itself
 * "work-K" first when traced (a THREAD record, not counted in `emitted`).
 */
#include <stdio.h>

#include "trc.h"
#include "work_loop.h"

static void work_events__instant(unsigned thread_idx, uint64_t first, uint64_t n)
{
	(void)thread_idx;
	for (uint64_t i = 0; i < n; i++)
		TRC_INSTANT("work.instant", (int64_t)(first + i));
}

static void work_events__span(unsigned thread_idx, uint64_t first, uint64_t n)
{
	(void)thread_idx;
	(void)first;
	/* n is a number of events; an odd last one is a lone BEGIN, closed by nothing (the
	 * reader closes it at the end of the trace) */
	uint64_t i = 0;
	for (; i + 1 < n; i += 2) {
		TRC_BEGIN("work.span");
		TRC_END("work.span");
	}
	if (i < n)
		TRC_BEGIN("work.span");
}

static void work_events__name_thread(unsigned idx)
{
	char name[16];
	snprintf(name, sizeof(name), "work-%u", idx);
	trc_thread_name(name);
}

static const struct workloop_mode work_events__modes[] = {
	{"instant", work_events__instant},
	{"span", work_events__span},
	{"bare", workloop_emit_bare},
};

int main(int argc, char **argv)
{
	return workloop_run(argc, argv, "work_events", work_events__modes,
			    sizeof(work_events__modes) / sizeof(work_events__modes[0]),
			    work_events__name_thread);
}
