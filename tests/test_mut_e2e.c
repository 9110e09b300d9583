/* test_mut_e2e.c - trace-run's report line against the trace it wrote (tests/mutants/LIST:
 * recorder-lost-count).
 *
 * Purpose: the "N events, M lost" of trace-run's last line are the trace's own figures (trace-dump
 * summary --json: events_recorded, events_lost), in a run that loses events (one ring slot
 * for four threads emitting a million each at once: a full ring makes its thread wait, a thread
 * without a slot loses its events): the lost figure counts the events, not the LOST records
 * that carry them.
 *
 * Threads: single-threaded test; the commands run as child processes.
 */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "e2e_util.h"

Test(mut_e2e, report_line_counts_what_the_trace_holds, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, e2e_path("bin/trace-run"), "--no-progress", "--no-preload",
				   "--max-threads", "1", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "4", "1000000", NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	const char *line = strstr(r.err, "trace-run: ");
	cr_assert_not_null(line, "%s", r.err);
	const char *figs = strstr(line, "): ");
	cr_assert_not_null(figs, "%s", r.err);
	uint64_t events = 0, lost = 0;
	cr_assert_eq(sscanf(figs, "): %" SCNu64 " events, %" SCNu64 " lost", &events, &lost), 2,
		     "%s", r.err);
	char *json = e2e_summary_json(dir, out);
	int64_t recorded = e2e_json_int(json, "events_recorded");
	int64_t events_lost = e2e_json_int(json, "events_lost");
	cr_assert_gt(events_lost, 0, "one slot, four threads at once: %s", json);
	cr_expect_eq((int64_t)events, recorded, "report %" PRIu64 " events, trace %" PRId64, events,
		     recorded);
	cr_expect_eq((int64_t)lost, events_lost, "report %" PRIu64 " lost, trace %" PRId64, lost,
		     events_lost);
	free(json);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
