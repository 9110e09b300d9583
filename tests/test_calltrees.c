/* test_calltrees.c - call trees exactly as programs ran them, through the built commands: the
 * trace of each program (tests/prog_finst_jumps.c and the other prog_* named below) must hold
 * the call tree its source implies, name for name, level for level, call for call
 * (calltree_util.h), with every frame closed; and the summary must agree (no exit that closed
 * nothing, no call closed by its caller's exit, none left open). */
#include "calltree_util.h"

#define TR e2e_path("bin/trace-run")

/* Records prog with args under trace-run (extra options first, up to "--"), and returns the
 * tree; *json gets the summary's JSON when json is not NULL. */
static char *ct_record(const char *dir, char **json, const char *const *opts, const char *prog,
		       const char *const *args)
{
	char trace[512];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	const char *argv[32];
	unsigned n = 0;
	argv[n++] = TR;
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = trace;
	for (; opts && *opts; opts++)
		argv[n++] = *opts;
	argv[n++] = "--";
	argv[n++] = e2e_path(prog);
	for (; args && *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	struct e2e_run r = e2e_runv(dir, (char *const *)argv);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	if (json)
		*json = e2e_summary_json(dir, trace);
	return ct_tree(trace);
}

/* The summary's function counters: exits that closed nothing, calls closed by their caller's
 * exit, calls open at the end. */
static void ct_expect_all_closed(const char *json)
{
	cr_expect_eq(e2e_json_int(json, "function_exits_unmatched"), 0);
	cr_expect_eq(e2e_json_int(json, "function_calls_unclosed"), 0);
	cr_expect_eq(e2e_json_int(json, "function_calls_open_at_end"), 0);
}

static void ct_jumps(const char *mode, const char *want)
{
	const char *dir = e2e_tmpdir();
	char *json = NULL;
	const char *args[] = {mode, NULL};
	char *tree = ct_record(dir, &json, NULL, "tests/prog_finst_jumps", args);
	cr_expect_str_eq(tree, want, "mode %s:\n%s", mode, tree);
	ct_expect_all_closed(json);
	free(tree);
	free(json);
	e2e_rm_rf(dir);
}

Test(calltrees, longjmp_out_of_one_frame, .timeout = 120)
{
	ct_jumps("one", "P0 main 1\n"
			"P0 main;bar 1\n"
			"P0 main;foo 1\n");
}

Test(calltrees, longjmp_out_of_several_frames, .timeout = 120)
{
	ct_jumps("deep", "P0 main 1\n"
			 "P0 main;a 1\n"
			 "P0 main;a;b 1\n"
			 "P0 main;a;b;c 1\n"
			 "P0 main;bar 1\n");
}

Test(calltrees, nested_longjmps, .timeout = 120)
{
	ct_jumps("nested", "P0 main 1\n"
			   "P0 main;bar 1\n"
			   "P0 main;l1 1\n"
			   "P0 main;l1;l2 1\n"
			   "P0 main;l1;l2;l3 1\n"
			   "P0 main;l1;l4 1\n");
}

Test(calltrees, siglongjmp_out_of_a_handler, .timeout = 120)
{
	ct_jumps("signal", "P0 main 1\n"
			   "P0 main;bar 1\n"
			   "P0 main;work 1\n"
			   "P0 main;work;handler 1\n");
}

Test(calltrees, longjmp_in_a_loop, .timeout = 120)
{
	ct_jumps("loop", "P0 main 1\n"
			 "P0 main;bar 1\n"
			 "P0 main;thrower 5\n"
			 "P0 main;thrower;inner 5\n");
}
