/* test_summary_thread_names.c - every thread in the summary has a name (issue 12): a thread
 * the trace does not name (it never held a ring, so only its NO_SLOT losses are recorded; or
 * its THREAD record carries no name) is "tid N" in the text and in --json, never empty or
 * "-"; a named thread keeps its name.
 *
 * Threads: each test is one process (Criterion); trace-dump runs as a child.
 */
#include <criterion/criterion.h>

#include "test_trcfile_util.h"

/* Runs `trace-dump summary [--json] trc` and returns its stdout (free it). */
static char *tn_summary(const char *dir, const char *trc, bool json)
{
	cr_assert_eq(tu_sh("'%s/bin/trace-dump' summary %s '%s' >'%s/out'", tu_build(),
			   json ? "--json" : "", trc, dir),
		     0);
	return tu_slurp_text(dir, "out");
}

Test(summary_thread_names, threads_the_trace_does_not_name_are_tid_n, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/t.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 100, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 100, 101);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 100, 102);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 100, 103);
	struct trc_record r = {.type = TRC_REC_THREAD, .ts_ns = 1000};
	r.thread.pid = 100;
	r.thread.tid = 101;
	r.thread.name = "worker";
	r.thread.name_len = 6;
	tu_add(&p.streams[1], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1100};
	tu_add(&p.streams[1], &r);
	/* 102 never held a ring: the recorder reports its losses on a stream of its own */
	r = (struct trc_record){.type = TRC_REC_LOST, .ts_ns = 1200};
	r.lost.count = 5;
	r.lost.reason = TRC_LOST_NO_SLOT;
	tu_add(&p.streams[2], &r);
	/* 103's THREAD record names nothing */
	r = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = 1000};
	r.thread.pid = 100;
	r.thread.tid = 103;
	r.thread.name = "";
	tu_add(&p.streams[3], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1300};
	tu_add(&p.streams[3], &r);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);

	char *json = tn_summary(dir, trc, true);
	cr_expect_not_null(
		strstr(json, "{\"pid\":100,\"tid\":101,\"name\":\"worker\",\"events\":1,"), "%s",
		json);
	cr_expect_not_null(strstr(json,
				  "{\"pid\":100,\"tid\":102,\"name\":\"tid 102\",\"events\":0,"
				  "\"lost\":5,"),
			   "%s", json);
	cr_expect_not_null(
		strstr(json, "{\"pid\":100,\"tid\":103,\"name\":\"tid 103\",\"events\":1,"), "%s",
		json);
	cr_expect_null(strstr(json, "\"name\":\"\""), "an empty name: %s", json);
	free(json);
	char *text = tn_summary(dir, trc, false);
	const char *threads = strstr(text, "\nthreads:\n");
	cr_assert_not_null(threads, "%s", text);
	cr_expect_not_null(strstr(threads, " 102  tid 102 "), "%s", threads);
	cr_expect_not_null(strstr(threads, " 103  tid 103 "), "%s", threads);
	cr_expect_not_null(strstr(threads, " 101  worker "), "%s", threads);
	free(text);
	tu_rm_rf(dir);
}
