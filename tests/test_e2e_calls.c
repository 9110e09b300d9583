/* test_e2e_calls.c - a call-heavy program recorded whole (issue 11), through the built commands.
 *
 * A suite of its own: Criterion runs the tests of a suite in parallel, and this one should not
 * compete with the others for the drain's core (it would still be whole, only slower).
 */
#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")

static int64_t calls_from(const char *out)
{
	const char *p = strstr(out, "calls=");
	return p ? strtoll(p + 6, NULL, 10) : -1;
}

/* Entries into the function at addr (as the program printed it) in the trace: the records of
 * fib alone (main is instrumented too, and so are the sanitizers' own constructors). */
static int64_t entries_of(const char *trace, const char *addr)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' events '%s' | grep -c 'func_enter addr=%s '",
		 e2e_path("bin/trace-dump"), trace, addr);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	long long n = -1;
	if (fscanf(p, "%lld", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

/* fib(N) built with -finstrument-functions, default settings, as a new user would: every call
 * is recorded. The plain build records fib(28): 2.1 M function events in about 25 ms, 4 times
 * what the default 16 MiB ring holds, so the drain must keep up while the program runs (the
 * issue measured 13 % lost for fib(27) and 49 % for fib(30) with the old record-by-record
 * drain). The sanitizer builds, whose recorder is several times slower, record fib(22). */
Test(e2e_calls, call_heavy_program_recorded_whole, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	const char *tier = getenv("TRC_SANITIZER_TIER");
	const char *n = tier && *tier ? "22" : "28";
	/* A full ring waits for the drain (session_layout.h "Residency"), so nothing is lost even
	 * when other engineers' builds take this machine's two cores: every run is whole. */
	for (int attempt = 0; attempt < 2; attempt++) {
		struct e2e_run r = e2e_run(dir, TR, "-q", "-o", out, "--",
					   e2e_path("tests/prog_finst_calls"), n, NULL);
		cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
		int64_t calls = calls_from(r.out);
		cr_assert_gt(calls, 50000, "%s", r.out);
		char addr[40] = "";
		const char *a = strstr(r.out, "addr=");
		cr_assert_not_null(a, "%s", r.out);
		sscanf(a + 5, "%39s", addr);
		e2e_free(&r);
		char *json = e2e_summary_json(dir, out);
		int64_t lost = e2e_json_int(json, "events_lost");
		int64_t enter = e2e_json_int(json, "func_enter"),
			exits = e2e_json_int(json, "func_exit");
		free(json);
		cr_expect_eq(lost, 0, "run %d of fib(%s): %lld lost", attempt, n, (long long)lost);
		cr_expect_eq(enter, exits);
		cr_expect_eq(entries_of(out, addr), calls, "entries of fib at %s", addr);
	}
	e2e_rm_rf(dir);
}
