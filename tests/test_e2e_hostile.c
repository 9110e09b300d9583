/* test_e2e_hostile.c - trace-run in a hostile world (issue 12): programs that start with their
 * standard descriptors closed, that are interrupted from the terminal, that outlive or
 * out-write the recorder. Each test runs the built commands on real programs, with a timeout,
 * and compares with the program run untraced where that is the contract. */
#include <sys/resource.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")
#define TD e2e_path("bin/trace-dump")

/* Item 2: a program started with stdin and stdout closed (daemons, cron jobs) keeps them
 * closed, and its writes never land in the session region. */
Test(e2e_hostile, closed_stdin_stdout_stay_closed_and_miss_the_region, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run bare = e2e_run(dir, "/bin/sh", "-c", "seq 100000 <&- >&-", NULL);
	struct e2e_run r = e2e_run(dir, "/bin/sh", "-c",
				   "exec \"$0\" -o \"$1\" -- seq 100000 <&- >&-", TR, out, NULL);
	cr_assert_eq(bare.exit_code, 1, "seq with stdout closed: %d (%s)", bare.exit_code,
		     bare.err);
	cr_expect_eq(r.exit_code, bare.exit_code, "traced %d, bare %d: %s", r.exit_code,
		     bare.exit_code, r.err);
	cr_expect(strstr(r.err, "seq: write error: Bad file descriptor") != NULL, "%s", r.err);
	cr_expect(strstr(r.err, " 0 lost,") != NULL, "report: %s", r.err);
	cr_expect(strstr(r.err, "program exited with status 1") != NULL, "report: %s", r.err);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "%s", json);
	cr_expect_gt(e2e_json_int(json, "allocs"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	cr_expect(strstr(json, "string table is full") == NULL, "%s", json);
	free(json);
	e2e_free(&bare);
	e2e_free(&r);

	/* Closed stays closed in the program: what it opens first lands on 0, as untraced. */
	const char *probe = "exec 2>\"$1\"; exec \"$0\" -q -o \"$2\" -- /bin/sh -c "
			    "'exec 3</dev/null; ls -l /proc/$$/fd/0 >/dev/null 2>&1 && echo open "
			    ">&2 || echo closed >&2' <&-";
	char errp[256];
	snprintf(errp, sizeof(errp), "%s/probe.err", dir);
	r = e2e_run(dir, "/bin/sh", "-c", probe, TR, errp, out, NULL);
	cr_expect_eq(r.exit_code, 0, "%d: %s", r.exit_code, r.err);
	char *said = e2e_slurp(errp);
	cr_expect_str_eq(said, "closed\n");
	free(said);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
