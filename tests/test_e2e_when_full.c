/* test_e2e_when_full.c - trace-run --when-full: what a thread whose ring is full does, and that
 * the trace says so. drop: events are lost and counted exactly, no thread ever waits; wait (the
 * default): nothing is lost and the waits are reported (count and time), in the summary's
 * JSON and text. The policy is in the trace's header and both summaries. Small rings (64K, a
 * 1M budget) under four threads emitting 2 million events each on this 2-core machine: the
 * drain cannot keep up, so rings fill whatever the load. */
#include "e2e_util.h"
#include "trcfile.h"

#define TR e2e_path("bin/trace-run")
#define EMIT e2e_path("tests/prog_e2e_emit")

static int64_t emitted_from(const char *out)
{
	const char *p = strstr(out, "emitted ");
	return p ? strtoll(p + 8, NULL, 10) : -1;
}

static uint32_t header_when_full(const char *trace)
{
	struct trcfile_reader *rd = NULL;
	char msg[256] = "";
	cr_assert_eq(trcfile_reader_open(trace, &rd, msg, sizeof(msg)), 0, "%s: %s", trace, msg);
	uint32_t w = trcfile_reader_header(rd)->when_full;
	trcfile_reader_close(rd);
	return w;
}

/* Records prog_e2e_emit 4 x 2M with small rings and --when-full policy; returns the summary
 * JSON (free it) and what the program emitted. */
static char *record(const char *dir, const char *trace, const char *policy, int64_t *emitted)
{
	struct e2e_run r = e2e_run(dir, TR, "-q", "--no-preload", "--no-rss", "--buffer-size",
				   "64K", "--ring-budget", "1M", "--when-full", policy, "-o", trace,
				   "--", EMIT, "4", "2000000", NULL);
	cr_assert_eq(r.exit_code, 0, "trace-run --when-full %s: exit %d: %s", policy, r.exit_code,
		     r.err);
	*emitted = emitted_from(r.out);
	e2e_free(&r);
	return e2e_summary_json(dir, trace);
}

Test(e2e_when_full, drop_loses_counted_events_and_never_waits, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/drop.trc", dir);
	int64_t emitted = 0;
	char *json = record(dir, trace, "drop", &emitted);
	int64_t rec = e2e_json_int(json, "events_recorded"),
		lost = e2e_json_int(json, "events_lost");
	cr_expect_eq(emitted, 8000000);
	cr_expect_gt(lost, 0, "small rings under drop lost nothing: %s", json);
	cr_expect_eq(e2e_json_int(json, "ring_full"), lost, "%s", json);
	cr_expect_eq(rec + lost, emitted, "recorded %" PRId64 " + lost %" PRId64, rec, lost);
	cr_expect_eq(e2e_json_int(json, "waits"), 0, "drop waited: %s", json);
	cr_expect_eq(e2e_json_int(json, "waited_ns"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "wait_max_ns"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "wait"), 0, "wait records under drop: %s", json);
	cr_expect(strstr(json, "\"when_full\":\"drop\"") != NULL, "%s", json);
	cr_expect_eq(header_when_full(trace), TRCFILE_WHEN_FULL_DROP);
	free(json);
	int code = 0;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect_eq(code, 0);
	cr_expect(strstr(text, "when full: drop") != NULL, "%s", text);
	cr_expect(strstr(text, "waited for the drain") == NULL, "%s", text);
	free(text);
	e2e_rm_rf(dir);
}

Test(e2e_when_full, wait_loses_nothing_and_reports_the_waits, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/wait.trc", dir);
	int64_t emitted = 0;
	char *json = record(dir, trace, "wait", &emitted);
	cr_expect_eq(emitted, 8000000);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "wait lost events: %s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), emitted, "%s", json);
	int64_t waits = e2e_json_int(json, "waits"), ns = e2e_json_int(json, "waited_ns");
	int64_t max = e2e_json_int(json, "wait_max_ns");
	cr_expect_gt(waits, 0, "small rings under wait never waited: %s", json);
	cr_expect_gt(ns, 0, "%s", json);
	cr_expect(max > 0 && max <= ns, "longest %" PRId64 " of %" PRId64, max, ns);
	cr_expect_gt(e2e_json_int(json, "wait"), 0, "no wait records: %s", json);
	/* The threads' own figures add up to the totals. */
	int64_t tw = 0, tns = 0;
	for (const char *p = strstr(json, "\"threads\":"); p && (p = strstr(p, "\"tid\":")); p++) {
		tw += e2e_json_int_from(json, p, "waits");
		tns += e2e_json_int_from(json, p, "waited_ns");
	}
	cr_expect_eq(tw, waits, "%s", json);
	cr_expect_eq(tns, ns, "%s", json);
	cr_expect(strstr(json, "\"when_full\":\"wait\"") != NULL, "%s", json);
	cr_expect_eq(header_when_full(trace), TRCFILE_WHEN_FULL_WAIT);
	free(json);
	int code = 0;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect_eq(code, 0);
	cr_expect(strstr(text, "when full: wait") != NULL, "%s", text);
	char line[96];
	snprintf(line, sizeof(line), "threads waited for the drain: %" PRId64 " time", waits);
	cr_expect(strstr(text, line) != NULL, "no '%s' in: %s", line, text);
	cr_expect(strstr(text, "of the run") && strstr(text, ", longest "), "%s", text);
	cr_expect(strstr(text, "waited\n") != NULL, "no waited column: %s", text);
	free(text);
	e2e_rm_rf(dir);
}

/* The default is wait, and a run in which nothing waited says so. */
Test(e2e_when_full, default_is_wait_and_no_wait_is_said, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/calm.trc", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "--no-preload", "-o", trace, "--", EMIT, "1", "1000", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	cr_expect_eq(header_when_full(trace), TRCFILE_WHEN_FULL_WAIT);
	char *json = e2e_summary_json(dir, trace);
	cr_expect_eq(e2e_json_int(json, "waits"), 0, "%s", json);
	cr_expect(strstr(json, "\"when_full\":\"wait\"") != NULL, "%s", json);
	free(json);
	int code = 0;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect(strstr(text, "when full: wait") && strstr(text, "no thread waited for the drain"),
		  "%s", text);
	free(text);
	e2e_rm_rf(dir);
}

Test(e2e_when_full, bad_value_is_a_usage_error, .timeout = 30)
{
	const char *dir = e2e_tmpdir();
	struct e2e_run r = e2e_run(dir, TR, "--when-full", "block", "true", NULL);
	cr_expect_eq(r.exit_code, 2, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.err, "trace-run: --when-full: invalid value \"block\" (expected wait or "
				"drop) (see trace-run --help)\n");
	e2e_free(&r);
	e2e_rm_rf(dir);
}
