/* test_diff.c - `trace-dump diff A B`, the built command, on traces of one program written
 * with the writer (test_gates_util.h): two runs alike but for their pids show no change;
 * a planted regression (twice the bytes allocated, a span made slower) is the first row;
 * --json's figures are summary --json's; --threshold fails (exit 1) or passes as the change
 * is above or below it, --ignore-times leaves times out; a function gone shows in one trace
 * only; a program recorded twice (told to allocate twice as much: other arguments, other
 * pids) is matched by executable, and what allocated more comes first; usage errors and an
 * unreadable file.
 *
 * The binary is $TRC_BUILD/bin/trace-dump (make test sets TRC_BUILD).
 */
#include <criterion/criterion.h>

#include "test_gates_util.h"

#define GT_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The n-th line of s (0-based) into buf. */
static const char *dd_line(const char *s, unsigned n, char *buf, size_t len)
{
	for (; n && s; n--) {
		s = strchr(s, '\n');
		s = s ? s + 1 : NULL;
	}
	if (!s)
		return "";
	const char *e = strchr(s, '\n');
	size_t k = e ? (size_t)(e - s) : strlen(s);
	snprintf(buf, len, "%.*s", (int)k, s);
	return buf;
}

Test(diff, same_program_other_pids_shows_no_change, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.pid = 7777; /* another run: other pids, the same command and thread names */
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	struct gt_run r = gt_dump(dir, GT_ARGS("diff", "--threshold", "0", a, b));
	cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
	char want[2048];
	snprintf(want, sizeof(want),
		 "A %s\nB %s\nno figure changed\nthreshold 0%%: 0 figures above it\n", a, b);
	cr_expect_str_eq(r.out, want);
	cr_expect_str_empty(r.err);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(diff, planted_regression_is_shown_first, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512], c[512], l[1024];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.pid = 5151;
	sh.alloc_bytes *= 2; /* a build that allocates twice as much */
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	sh.span_ns = 300000; /* and one whose parse is also 3x slower */
	gt_write(dir, "c.trc", &sh, c, sizeof(c));

	struct gt_run r = gt_dump(dir, GT_ARGS("diff", a, b));
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(dd_line(r.out, 2, l, sizeof(l)),
			 "4 of 9 rows changed, largest change first:");
	cr_expect_str_eq(
		dd_line(r.out, 3, l, sizeof(l)),
		"  site     parse: bytes 39.1 KiB -> 78.1 KiB (+100.0%), size-p50 1000 B -> "
		"2.0 KiB (+100.0%), size-p99 1000 B -> 2.0 KiB (+100.0%)");
	/* Then the process (its heap's peak doubled too), the thread, the totals. */
	cr_expect_str_eq(dd_line(r.out, 4, l, sizeof(l)),
			 "  process  prog --gates: alloc-bytes 39.6 KiB -> 78.6 KiB (+98.8%), "
			 "live-peak 12.7 KiB -> 25.4 KiB (+100.0%)");
	gt_free(&r);

	r = gt_dump(dir, GT_ARGS("diff", a, c));
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(
		dd_line(r.out, 3, l, sizeof(l)),
		"  span     parse: total 1.000 ms -> 3.000 ms (+200.0%), p50 100.000 us -> "
		"300.000 us (+200.0%), p99 100.000 us -> 300.000 us (+200.0%)");
	cr_expect_str_eq(
		dd_line(r.out, 4, l, sizeof(l)),
		"  site     parse: bytes 39.1 KiB -> 78.1 KiB (+100.0%), size-p50 1000 B -> "
		"2.0 KiB (+100.0%), size-p99 1000 B -> 2.0 KiB (+100.0%)");
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(diff, json_figures_are_summary_json_s, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512], cmd[8192];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.pid = 5151;
	sh.alloc_bytes *= 2;
	sh.span_ns = 300000;
	sh.calls = 25;
	sh.rss_peak_mib = 20;
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	/* Python reads the three JSON objects and compares every figure diff shows that the
	 * summary has. */
	snprintf(
		cmd, sizeof(cmd),
		"D=${TRC_BUILD:-build}/bin/trace-dump; "
		"$D diff --json %s %s > %s/d.json && $D summary --json %s > %s/a.json && "
		"$D summary --json %s > %s/b.json && python3 -c '"
		"import json, sys\n"
		"d = json.load(open(sys.argv[1])); s = [json.load(open(p)) for p in "
		"sys.argv[2:4]]\n"
		"rows = {(r[\"kind\"], r[\"name\"]): r for r in d[\"rows\"]}\n"
		"def fig(k, n, f): return {x[\"name\"]: x for x in rows[(k, n)][\"figures\"]}[f]\n"
		"for i, side in ((0, \"a\"), (1, \"b\")):\n"
		"  S = s[i]\n"
		"  sp = {x[\"name\"]: x for x in S[\"names\"]}[\"parse\"]\n"
		"  for f, k in ((\"count\", \"spans\"), (\"total\", \"span_total_ns\"), "
		"(\"p50\", \"span_p50_ns\"), (\"p99\", \"span_p99_ns\")):\n"
		"    assert fig(\"span\", \"parse\", f)[side] == sp[k], (f, side)\n"
		"  fn = S[\"functions\"][0]\n"
		"  for f, k in ((\"calls\", \"calls\"), (\"total\", \"total_ns\"), (\"p99\", "
		"\"p99_ns\")):\n"
		"    assert fig(\"function\", fn[\"name\"], f)[side] == fn[k], (f, side)\n"
		"  for f, k in ((\"allocs\", \"allocs\"), (\"alloc-bytes\", \"alloc_bytes\"), "
		"(\"live-peak\", \"live_peak_bytes\"), (\"peak-rss\", \"rss_peak_bytes\"), "
		"(\"events\", \"events_recorded\")):\n"
		"    assert fig(\"trace\", \"totals\", f)[side] == S[k], (f, side)\n"
		"  p = S[\"processes\"][0]\n"
		"  assert fig(\"process\", \"prog --gates\", \"peak-rss\")[side] == "
		"p[\"rss_peak_bytes\"], side\n"
		"assert d[\"rows\"][0][\"name\"] == \"parse\" and d[\"rows\"][0][\"change\"] == 2, "
		"d[\"rows\"][0]\n"
		"assert all(x[\"change\"] >= y[\"change\"] for x, y in zip(d[\"rows\"], "
		"d[\"rows\"][1:]) if y[\"change\"] is not None)\n"
		"' %s/d.json %s/a.json %s/b.json",
		a, b, dir, a, dir, b, dir, dir, dir, dir);
	cr_expect_eq(tu_sh("%s", cmd), 0);
	tu_rm_rf(dir);
}

Test(diff, threshold_fails_a_ci_job, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512], c[512], l[1024];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.span_ns = 150000; /* parse 50 % slower, nothing else */
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	sh.span_ns = 100000;
	sh.allocs_per_span = 5; /* a quarter more allocations */
	gt_write(dir, "c.trc", &sh, c, sizeof(c));
	struct {
		const char *pct, *file;
		bool ignore_times;
		int status;
		const char *last;
	} cases[] = {
		{"40", b, false, 1, "threshold 40%: 3 figures above it"},
		{"50%", b, false, 0, "threshold 50%: 0 figures above it"},
		{"10", b, true, 0, "threshold 10% (times ignored): 0 figures above it"},
		{"10", c, true, 1, "threshold 10% (times ignored): 8 figures above it"},
		{"30", c, true, 0, "threshold 30% (times ignored): 0 figures above it"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gt_run r =
			cases[i].ignore_times
				? gt_dump(dir, GT_ARGS("diff", "--threshold", cases[i].pct,
						       "--ignore-times", a, cases[i].file))
				: gt_dump(dir, GT_ARGS("diff", "--threshold", cases[i].pct, a,
						       cases[i].file));
		cr_expect_eq(r.status, cases[i].status, "case %zu: %s", i, r.out);
		unsigned n = 0;
		for (const char *p = r.out; (p = strchr(p, '\n')); p++)
			n++;
		cr_expect_str_eq(dd_line(r.out, n - 1, l, sizeof(l)), cases[i].last, "case %zu: %s",
				 i, r.out);
		gt_free(&r);
	}
	tu_rm_rf(dir);
}

Test(diff, rows_in_one_trace_only_come_first, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], b[512], l[1024];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	sh.calls = 0; /* the worker calls nothing: its function is gone */
	gt_write(dir, "b.trc", &sh, b, sizeof(b));
	struct gt_run r = gt_dump(dir, GT_ARGS("diff", "--threshold", "0", a, b));
	cr_expect_eq(r.status, 0, "nothing grew: %s", r.out);
	cr_expect_str_eq(dd_line(r.out, 3, l, sizeof(l)),
			 "  function 0x401136: only in A, calls 20, total 20.000 us, p50 1.000 us, "
			 "p99 1.000 us");
	cr_expect_str_eq(dd_line(r.out, 4, l, sizeof(l)),
			 "  thread   prog --gates / worker: events 40 -> 0 (-100.0%)");
	gt_free(&r);
	/* The other way round, the rows only in B exceed any threshold. */
	r = gt_dump(dir, GT_ARGS("diff", "--threshold", "1000", b, a));
	cr_expect_eq(r.status, 1, "%s", r.out);
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(diff, usage_errors_and_unreadable_files, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512], bad[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	tu_write_file(bad, "garbage, not a trace file", 25);
	const char *const *usage[] = {
		GT_ARGS("diff", a),
		GT_ARGS("diff", a, a, a),
		GT_ARGS("diff", "--threshold", "ten", a, a),
		GT_ARGS("diff", "--threshold", "-5", a, a),
		GT_ARGS("diff", "--threshold", "5%%", a, a),
		GT_ARGS("diff", "--ignore-times", a, a),
		GT_ARGS("diff", "--top", "x", a, a),
	};
	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		struct gt_run r = gt_dump(dir, usage[i]);
		cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
		char *nl = strchr(r.err, '\n');
		cr_expect(nl && nl[1] == 0, "case %zu: one line: %s", i, r.err);
		cr_expect_eq(strncmp(r.err, "trace-dump diff: ", 17), 0, "%s", r.err);
		cr_expect_str_empty(r.out);
		gt_free(&r);
	}
	struct gt_run r = gt_dump(dir, GT_ARGS("diff", a, bad));
	cr_expect_eq(r.status, 1);
	cr_expect_str_empty(r.out);
	cr_expect_not_null(strstr(r.err, bad), "%s", r.err);
	gt_free(&r);
	tu_rm_rf(dir);
}

/* Records prog_e2e_mem MIB 100 with the built trace-run into dir/name. */
static void dd_record(const char *dir, const char *name, const char *mib, char *path, size_t len)
{
	const char *b = getenv("TRC_BUILD");
	b = b && *b ? b : "build";
	snprintf(path, len, "%s/%s", dir, name);
	cr_assert_eq(tu_sh("%s/bin/trace-run -q -o %s -- %s/tests/prog_e2e_mem %s 100 >/dev/null",
			   b, path, b, mib),
		     0, "trace-run prog_e2e_mem %s", mib);
}

Test(diff, recorded_program_allocating_twice_as_much, .timeout = 120)
{
	if (getenv("TRC_SANITIZER_TIER"))
		cr_skip_test(
			"a sanitizer's allocator is not the preload library's: no allocations");
	const char *dir = tu_tmpdir();
	char a[512], b[512], l[1024];
	/* The same program, the second run told to allocate and touch twice as much. */
	dd_record(dir, "a.trc", "8", a, sizeof(a));
	dd_record(dir, "b.trc", "16", b, sizeof(b));
	struct gt_run r =
		gt_dump(dir, GT_ARGS("check", a, "alloc-bytes<=12M", "span:touch.count==1"));
	cr_expect_eq(r.status, 0, "%s", r.out);
	gt_free(&r);
	r = gt_dump(dir, GT_ARGS("check", b, "alloc-bytes<=12M", "span:touch.count==1"));
	cr_expect_eq(r.status, 1);
	cr_expect_eq(strncmp(r.out, "FAIL alloc-bytes<=12M: alloc-bytes is 16.0 MiB (", 48), 0,
		     "%s", r.out);
	const char *nl = strchr(r.out, '\n');
	cr_expect(nl && nl[1] == 0, "one line: %s", r.out);
	gt_free(&r);
	/* What allocated it comes first: the span touch (its time doubles too) or its site,
	 * main (the function that called malloc: its call stack); the process is matched
	 * though its arguments differ. */
	r = gt_dump(dir, GT_ARGS("diff", "--threshold", "50", "--ignore-times", a, b));
	cr_expect_eq(r.status, 1, "%s", r.out);
	const char *first = dd_line(r.out, 3, l, sizeof(l));
	cr_expect(!strncmp(first, "  span     touch: ", 18) ||
			  !strncmp(first, "  site     main: ", 17),
		  "%s", r.out);
	cr_expect_not_null(strstr(r.out, "  site     main: bytes 8.0 MiB -> 16.0 MiB (+100.0%)"),
			   "%s", r.out);
	cr_expect_not_null(strstr(r.out, "prog_e2e_mem 8 100 (B: "), "%s", r.out);
	cr_expect_null(strstr(r.out, "only in"), "%s", r.out);
	gt_free(&r);
	tu_rm_rf(dir);
}
