/* test_bench_smoke.c - the benchmark harness (bench/run.sh, bench/report.py) catches what it
 * must catch.
 *
 * `make test` runs `bench/run.sh smoke` on the real benchmark programs; that check is only worth
 * something if it fails when a program crashes, prints nothing, or prints a malformed SUMMARY
 * line, and if the report it renders carries the programs' figures and nothing else. Each test
 * here builds a sandbox tree (a copy of bench/run.sh, report.py and peers.sh, with small shell
 * scripts standing in for build/bench/bench_* programs), runs the harness in it, and checks its
 * exit status and the files it wrote.
 *
 * Runs from the repository root (make test does); needs bash and python3 (make deps).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char sandbox[64];

__attribute__((format(printf, 1, 2))) static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "setup failed: %s", cmd);
}

static char *slurp(const char *rel)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", sandbox, rel);
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	size_t got = fread(buf, 1, (size_t)n, f);
	buf[got] = '\0';
	fclose(f);
	return buf;
}

static void setup(void)
{
	cr_assert_eq(access("bench/run.sh", X_OK), 0, "run from the repository root");
	snprintf(sandbox, sizeof(sandbox), "/tmp/trc-benchsmoke-XXXXXX");
	cr_assert_not_null(mkdtemp(sandbox));
	sh("mkdir -p %s/bench %s/build/bench && cp bench/run.sh bench/report.py bench/peers.sh "
	   "%s/bench/",
	   sandbox, sandbox, sandbox);
}

static void teardown(void)
{
	if (sandbox[0])
		sh("rm -rf %s", sandbox);
}

/* A stand-in benchmark: bench/bench_NAME.c (empty) and build/bench/bench_NAME (a script). */
static void fake_bench(const char *name, const char *script_body)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/bench/bench_%s.c", sandbox, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/build/bench/bench_%s", sandbox, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", script_body);
	fclose(f);
	cr_assert_eq(chmod(path, 0755), 0);
}

/* Runs bench/run.sh MODE in the sandbox; returns its exit status. */
static int run_harness(const char *mode)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "BENCH_PEERS=0 %s/bench/run.sh %s >%s/harness.out 2>&1", sandbox,
		 mode, sandbox);
	int st = system(cmd);
	cr_assert(st != -1 && WIFEXITED(st), "harness did not exit normally");
	return WEXITSTATUS(st);
}

#define GOOD_RING                                                                            \
	"echo 'case push: 12.1 ns'\n"                                                        \
	"echo 'SUMMARY bench=ring case=push ns_per_record=12.1 ns_per_record_min=11.9 "      \
	"ns_per_record_max=19.0 bare_ns_per_record=10.5 ratio=1.15'\n"                       \
	"echo 'SUMMARY bench=ring case=spsc records_per_s=123456789 "                        \
	"records_per_s_min=120000000 records_per_s_max=130000000'"

TestSuite(bench_smoke, .init = setup, .fini = teardown, .timeout = 60);

Test(bench_smoke, good_programs_pass_and_lines_are_collected, .timeout = 180)
{
	fake_bench("ring", GOOD_RING);
	cr_assert_eq(run_harness("smoke"), 0, "%s", slurp("harness.out"));
	char *sum = slurp("build/bench/smoke/summary.txt");
	cr_expect_not_null(strstr(sum, "SUMMARY bench=ring case=push ns_per_record=12.1"), "%s", sum);
	cr_expect_not_null(strstr(sum, "SUMMARY bench=ring case=spsc"), "%s", sum);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "ring\tok\t"), "%s", runs);
	/* smoke passes --quick --runs 1 */
	cr_expect_not_null(strstr(runs, "bench_ring --quick --runs 1"), "%s", runs);
	free(sum);
	free(runs);
}

Test(bench_smoke, crashing_program_fails, .timeout = 180)
{
	fake_bench("ring", GOOD_RING);
	fake_bench("crash", "echo 'SUMMARY bench=crash case=x v=1'\nkill -SEGV $$");
	cr_assert_neq(run_harness("smoke"), 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "crash\tfailed\t"), "%s", runs);
	cr_expect_not_null(strstr(runs, "signal 11"), "%s", runs);
	cr_expect_not_null(strstr(runs, "ring\tok\t"), "one crash must not hide the others: %s",
			   runs);
	free(runs);
}

Test(bench_smoke, nonzero_exit_fails, .timeout = 180)
{
	fake_bench("bad", "echo 'SUMMARY bench=bad case=x v=1'\nexit 3");
	cr_assert_neq(run_harness("smoke"), 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "exit status 3"), "%s", runs);
	free(runs);
}

Test(bench_smoke, no_summary_line_fails, .timeout = 180)
{
	fake_bench("quiet", "echo 'a table but no summary'");
	cr_assert_neq(run_harness("smoke"), 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "no well-formed SUMMARY line with bench=quiet"), "%s", runs);
	free(runs);
}

Test(bench_smoke, malformed_summary_lines_fail, .timeout = 180)
{
	/* one program per kind of bad line, all in one harness run */
	static const char *bad[] = {
		"SUMMARY bench=m0 case=x v=nan",      /* not a finite figure */
		"SUMMARY bench=m1 case=x v=1 junk",   /* token without = */
		"SUMMARY bench=m2 v=1",               /* no case */
		"SUMMARY bench=m3 case=x label=text", /* no numeric figure at all */
		"SUMMARY bench=other case=x v=1",     /* another bench's name (program m4) */
		"SUMMARY bench=m5 case=x v=1 v=2",    /* key repeated */
	};
	enum { N = sizeof(bad) / sizeof(bad[0]) };
	for (int i = 0; i < N; i++) {
		char name[8], body[256];
		snprintf(name, sizeof(name), "m%d", i);
		snprintf(body, sizeof(body), "echo '%s'", bad[i]);
		fake_bench(name, body);
	}
	fake_bench("good", "echo 'SUMMARY bench=good case=x v=1 label=text'");
	cr_assert_neq(run_harness("smoke"), 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	for (int i = 0; i < N; i++) {
		char want[16];
		snprintf(want, sizeof(want), "m%d\tfailed\t", i);
		cr_expect_not_null(strstr(runs, want), "accepted: %s\n%s", bad[i], runs);
	}
	cr_expect_not_null(strstr(runs, "good\tok\t"), "%s", runs);
	free(runs);
}

Test(bench_smoke, missing_program_fails_only_when_its_source_exists, .timeout = 180)
{
	fake_bench("ring", GOOD_RING);
	sh("touch %s/bench/bench_notyet.c", sandbox);
	cr_assert_neq(run_harness("smoke"), 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "notyet\tnot built\t"), "%s", runs);
	free(runs);

	/* a program whose source is gone is stale: skipped, not an error */
	sh("rm %s/bench/bench_notyet.c && printf '#!/bin/sh\\nexit 1\\n' >%s/build/bench/bench_old "
	   "&& chmod +x %s/build/bench/bench_old",
	   sandbox, sandbox, sandbox);
	cr_expect_eq(run_harness("smoke"), 0, "%s", slurp("harness.out"));
	runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "old\tskipped\t"), "%s", runs);
	free(runs);
}

Test(bench_smoke, hung_program_is_stopped, .timeout = 180)
{
	fake_bench("hang", "echo 'SUMMARY bench=hang case=x v=1'\nexec sleep 30");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "BENCH_TIMEOUT=1 BENCH_PEERS=0 %s/bench/run.sh smoke >%s/h.out 2>&1",
		 sandbox, sandbox);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	char *runs = slurp("build/bench/smoke/runs.txt");
	cr_expect_not_null(strstr(runs, "hang\ttimeout\t"), "%s", runs);
	free(runs);
}

Test(bench_smoke, usage_error, .timeout = 180)
{
	cr_expect_eq(run_harness("sideways"), 2);
}

Test(bench_smoke, report_carries_figures_spread_and_status, .timeout = 180)
{
	fake_bench("ring", GOOD_RING);
	fake_bench("rss",
		   "echo 'SUMMARY bench=rss case=none events_per_s=50000000 "
		   "events_per_s_min=49000000 events_per_s_max=51000000'\n"
		   "echo 'SUMMARY bench=rss case=inband events_per_s=700000 ratio=0.014'\n"
		   "echo 'SUMMARY bench=rss case=oob events_per_s=49500000 ratio=0.99'");
	fake_bench("dead", "exit 1");
	cr_assert_neq(run_harness("quick"), 0, "a failed benchmark must fail the run");
	char *md = slurp("build/bench/report.md");
	/* machine, status with the reason, every figure, the spread flag only where it is wide */
	cr_expect_not_null(strstr(md, "| cores |"), "no machine section");
	cr_expect_not_null(strstr(md, "| clocksource |"), "no clock source");
	cr_expect_not_null(strstr(md, "| dead | failed: exit status 1"), "%s", md);
	cr_expect_not_null(strstr(md, "| ns_per_record | 12.1 | 11.9 | 19 | 60 % | noisy |"), "%s",
			   md);
	cr_expect_not_null(strstr(md, "| records_per_s | 123,456,789 | 120,000,000 | 130,000,000 | 8 % |  |"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "| ratio | 0.014 |"), "%s", md);
	cr_expect_not_null(strstr(md, "`build/bench/bench_ring --quick`"), "no command: %s", md);
	cr_expect_not_null(strstr(md, "case push: 12.1 ns"), "program output not quoted");
	/* the chart draws the in-band vs out-of-band comparison from the rss lines */
	char *svg = slurp("build/bench/report.svg");
	cr_expect_not_null(strstr(svg, "<svg"), "no chart");
	cr_expect_not_null(strstr(svg, "in-band every event"), "%s", svg);
	cr_expect_not_null(strstr(svg, "700,000 ev/s"), "%s", svg);
	free(md);
	free(svg);
}

Test(bench_smoke, no_chart_without_figures_and_no_stale_chart, .timeout = 180)
{
	fake_bench("plain", "echo 'SUMMARY bench=plain case=x v=1'");
	sh("echo '<svg>old</svg>' >%s/build/bench/report.svg", sandbox);
	cr_assert_eq(run_harness("quick"), 0, "%s", slurp("harness.out"));
	/* plain's keys feed no chart: the old picture must not survive beside the new report */
	char path[256];
	snprintf(path, sizeof(path), "%s/build/bench/report.svg", sandbox);
	cr_expect_neq(access(path, F_OK), 0, "stale report.svg left in place");
}
