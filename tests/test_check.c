/* test_check.c - `trace-dump check FILE RULE...`, the built command, on traces written with
 * the writer (test_gates_util.h): rules that hold on a program's trace, the same rules
 * catching a planted regression (twice the bytes allocated, a span made slower) with one
 * exact line each, every figure equal to summary --json's, bad rules as one line and exit 2,
 * JUnit XML read back by a strict parser, an unreadable file.
 *
 * The binary is $TRC_BUILD/bin/trace-dump (make test sets TRC_BUILD).
 */
#include <criterion/criterion.h>

#include "test_gates_util.h"

#define GT_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(check, rules_that_hold_exit_0_quietly, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	struct gt_run r =
		gt_dump(dir, GT_ARGS("check", a, "peak-rss<=200M", "lost==0", "allocs<=1e6",
				     "alloc-bytes<=2G", "live-at-exit<=1M", "span:parse.p99<=5ms",
				     "function:0x401136.calls<=1000"));
	cr_expect_eq(r.status, 0, "stdout: %s stderr: %s", r.out, r.err);
	cr_expect_str_empty(r.out);
	cr_expect_str_empty(r.err);
	gt_free(&r);
	/* Exact figures of the shape: 10 parse spans of 100 us, 4 x 1000 B each and 500 B in
	 * load, 3 of each span's 4 blocks freed, 20 calls, RSS up to 12 MiB. */
	r = gt_dump(dir, GT_ARGS("check", a, "allocs==41", "alloc-bytes==40500", "frees==31",
				 "free-bytes==30500", "live-at-exit==10000", "live-peak==13000",
				 "peak-rss==12M", "span:parse.count==10", "span:parse.p99==100us",
				 "span:parse.max==100us", "span:parse.total==1ms",
				 "span:load.mean==50us", "function:0x401136.calls==20",
				 "function:0x401136.p50==1us", "lost==0", "events>100"));
	cr_expect_eq(r.status, 0, "stdout: %s stderr: %s", r.out, r.err);
	cr_expect_str_empty(r.out);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(check, planted_regression_fails_one_line_per_rule, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.alloc_bytes *= 2; /* allocates twice as much */
	sh.span_ns = 300000; /* parse made slower */
	sh.pid = 5151;
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	const char *const *rules = GT_ARGS("alloc-bytes<=50K", "span:parse.p99<=200us", "lost==0",
					   "span:parse.count==10");
	const char *args[16] = {"check", a};
	size_t n = 2;
	for (size_t i = 0; rules[i]; i++)
		args[n++] = rules[i];
	struct gt_run r = gt_dump(dir, args);
	cr_expect_eq(r.status, 0, "the base trace passes: %s", r.out);
	gt_free(&r);
	args[1] = b;
	r = gt_dump(dir, args);
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(
		r.out,
		"FAIL alloc-bytes<=50K: alloc-bytes is 78.6 KiB (80500 B), limit 50.0 KiB "
		"(51200 B)\n"
		"FAIL span:parse.p99<=200us: p99 is 300.000 us (300000 ns), limit 200.000 us "
		"(200000 ns)\n");
	cr_expect_str_empty(r.err);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(check, every_figure_is_summary_json_s, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	struct gt_run s = gt_dump(dir, GT_ARGS("summary", "--json", a));
	cr_assert_eq(s.status, 0);
	static const char *const pairs[][2] = {
		{"peak-rss", "rss_peak_bytes"},
		{"rss-sampled-max", "rss_peak_sampled_bytes"},
		{"lost", "events_lost"},
		{"events", "events_recorded"},
		{"allocs", "allocs"},
		{"alloc-bytes", "alloc_bytes"},
		{"frees", "frees"},
		{"free-bytes", "free_bytes"},
		{"live-at-exit", "live_end_bytes"},
		{"live-peak", "live_peak_bytes"},
		{"waits", "waits"},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		char rule[128];
		snprintf(rule, sizeof(rule), "%s==%lld", pairs[i][0],
			 (long long)gt_json_int(s.out, NULL, pairs[i][1]));
		struct gt_run r = gt_dump(dir, GT_ARGS("check", a, rule));
		cr_expect_eq(r.status, 0, "%s: %s", rule, r.out);
		gt_free(&r);
	}
	/* Times: the span's and the function's, against their JSON rows. */
	static const char *const spans[][2] = {
		{"p50", "span_p50_ns"}, {"p99", "span_p99_ns"},	    {"max", "span_max_ns"},
		{"min", "span_min_ns"}, {"total", "span_total_ns"}, {"mean", "span_mean_ns"}};
	for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
		char rule[128];
		snprintf(rule, sizeof(rule), "span:load.%s==%lldns", spans[i][0],
			 (long long)gt_json_int(s.out, "\"name\":\"load\"", spans[i][1]));
		struct gt_run r = gt_dump(dir, GT_ARGS("check", a, rule));
		cr_expect_eq(r.status, 0, "%s: %s", rule, r.out);
		gt_free(&r);
	}
	char rule[128];
	snprintf(rule, sizeof(rule), "duration==%lldns",
		 (long long)gt_json_int(s.out, NULL, "duration_ns"));
	struct gt_run r = gt_dump(dir, GT_ARGS("check", a, rule));
	cr_expect_eq(r.status, 0, "%s: %s", rule, r.out);
	gt_free(&r);
	snprintf(rule, sizeof(rule), "function:0x401136.self-total==%lldns",
		 (long long)gt_json_int(s.out, "\"functions\"", "self_total_ns"));
	r = gt_dump(dir, GT_ARGS("check", a, rule));
	cr_expect_eq(r.status, 0, "%s: %s", rule, r.out);
	gt_free(&r);
	gt_free(&s);
	tu_rm_rf(dir);
}

Test(check, operators, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	/* allocs is 41: each operator on each side of it. */
	static const char *const hold[] = {"allocs<=41", "allocs<42", "allocs==41",
					   "allocs>=41", "allocs>40", "allocs!=40"};
	static const char *const fail[] = {"allocs<=40", "allocs<41", "allocs==42",
					   "allocs>=42", "allocs>41", "allocs!=41"};
	for (size_t i = 0; i < 6; i++) {
		struct gt_run r = gt_dump(dir, GT_ARGS("check", a, hold[i]));
		cr_expect_eq(r.status, 0, "%s: %s", hold[i], r.out);
		gt_free(&r);
		r = gt_dump(dir, GT_ARGS("check", a, fail[i]));
		cr_expect_eq(r.status, 1, "%s", fail[i]);
		char want[128];
		snprintf(want, sizeof(want), "FAIL %s: allocs is 41, limit ", fail[i]);
		cr_expect_eq(strncmp(r.out, want, strlen(want)), 0, "%s", r.out);
		gt_free(&r);
	}
	tu_rm_rf(dir);
}

Test(check, absent_span_fails_its_time_rules, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	struct gt_run r =
		gt_dump(dir, GT_ARGS("check", a, "span:parsing.p99<=5ms", "span:parsing.count==0",
				     "function:nope.calls==0", "function:nope.max<1s"));
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(
		r.out, "FAIL span:parsing.p99<=5ms: no span \"parsing\" ended in the trace, limit "
		       "5.000 ms (5000000 ns)\n"
		       "FAIL function:nope.max<1s: no function \"nope\" returned in the trace, "
		       "limit 1.000 s (1000000000 ns)\n");
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(check, bad_rules_are_one_line_and_exit_2, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	static const char *const bad[][2] = {
		{"peak-rss", "no operator"},
		{"peak-rss<=", "no limit"},
		{"<=5", "no figure"},
		{"peak-rss=>5M", "unknown operator \"=>\""},
		{"peak-rss<==5M", "unknown operator"},
		{"peak-rss<=5X", "not a size"},
		{"peak-rss<=-1", "not a size"},
		{"lost<=1.5", "not a count"},
		{"lost<=99999999999999999999", "too large"},
		{"allocs<=1e30", "too large"},
		{"span:parse.p99<=5", "has no unit"},
		{"span:parse.p99<=fast", "invalid duration"},
		{"span:parse.p98<=5ms", "unknown figure \"p98\" of a span"},
		{"span:parse<=5ms", "expected span:NAME.FIGURE"},
		{"function:f.self<=5ms", "unknown figure \"self\" of a function"},
		{"rss<=1M", "unknown figure \"rss\""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* A good rule before it: nothing is judged, the trace is not even needed. */
		struct gt_run r = gt_dump(dir, GT_ARGS("check", a, "lost==0", bad[i][0]));
		cr_expect_eq(r.status, 2, "%s: exit %d", bad[i][0], r.status);
		cr_expect_str_empty(r.out, "%s", bad[i][0]);
		char *nl = strchr(r.err, '\n');
		cr_expect(nl && nl[1] == 0, "one line for %s: %s", bad[i][0], r.err);
		char name[160];
		snprintf(name, sizeof(name), "bad rule \"%s\"", bad[i][0]);
		cr_expect_not_null(strstr(r.err, name), "%s", r.err);
		cr_expect_not_null(strstr(r.err, bad[i][1]), "%s: %s", bad[i][1], r.err);
		cr_expect_eq(strncmp(r.err, "trace-dump check: ", 18), 0, "%s", r.err);
		gt_free(&r);
	}
	struct gt_run r = gt_dump(dir, GT_ARGS("check", a));
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "no RULE given"), "%s", r.err);
	gt_free(&r);
	r = gt_dump(dir, GT_ARGS("check", "--junit"));
	cr_expect_eq(r.status, 2);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(check, junit_xml_for_ci, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], xml[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	snprintf(xml, sizeof(xml), "%s/out.xml", dir);
	struct gt_run r = gt_dump(dir, GT_ARGS("check", "--junit", xml, a, "lost==0", "allocs<10",
					       "span:<parse>&\"x\".p99<=1ms"));
	cr_expect_eq(r.status, 1);
	gt_free(&r);
	/* A strict XML parser reads it: 3 testcases, 2 failures, named by their rules. */
	cr_expect_eq(tu_sh("python3 -c '"
			   "import sys, xml.etree.ElementTree as E\n"
			   "t = E.parse(sys.argv[1]).getroot()\n"
			   "assert t.tag == \"testsuites\" and t.get(\"tests\") == \"3\" and "
			   "t.get(\"failures\") == \"2\", t.attrib\n"
			   "c = t.findall(\"testsuite/testcase\")\n"
			   "assert [x.get(\"name\") for x in c] == [\"lost==0\", \"allocs<10\", "
			   "\"span:<parse>&\\\"x\\\".p99<=1ms\"], [x.get(\"name\") for x in c]\n"
			   "assert c[0].find(\"failure\") is None\n"
			   "m = c[1].find(\"failure\").get(\"message\")\n"
			   "assert m == \"allocs is 41, limit 10\", m\n"
			   "assert c[2].find(\"failure\") is not None\n"
			   "' %s",
			   xml),
		     0);
	/* All hold: written too, no failure. */
	r = gt_dump(dir, GT_ARGS("check", "--junit", xml, a, "lost==0"));
	cr_expect_eq(r.status, 0);
	gt_free(&r);
	char *x = tu_slurp_text(dir, "out.xml");
	cr_expect_not_null(strstr(x, "failures=\"0\""), "%s", x);
	cr_expect_null(strstr(x, "<failure"), "%s", x);
	free(x);
	/* An output that cannot be written: exit 1, one line. */
	r = gt_dump(dir, GT_ARGS("check", "--junit", "/nonexistent/dir/x.xml", a, "lost==0"));
	cr_expect_eq(r.status, 1);
	cr_expect_not_null(strstr(r.err, "/nonexistent/dir/x.xml"), "%s", r.err);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(check, unreadable_trace_exits_1_with_its_message, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char bad[512];
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	tu_write_file(bad, "not a trace at all, not at all", 30);
	struct gt_run r = gt_dump(dir, GT_ARGS("check", bad, "lost==0"));
	cr_expect_eq(r.status, 1);
	cr_expect_str_empty(r.out);
	cr_expect_not_null(strstr(r.err, bad), "%s", r.err);
	gt_free(&r);
	tu_rm_rf(dir);
}
