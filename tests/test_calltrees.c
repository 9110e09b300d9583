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

static void ct_procs(const char *mode, const char *want, int64_t open_at_end)
{
	const char *dir = e2e_tmpdir();
	char *json = NULL, done[512];
	snprintf(done, sizeof(done), "%s/done", dir);
	const char *args[] = {mode, done, NULL};
	char go[600];
	snprintf(go, sizeof(go), "%s.go", done);
	fclose(fopen(go, "w")); /* the daemon's work may begin at once */
	char *tree = ct_record(dir, &json, NULL, "tests/prog_finst_procs", args);
	cr_expect_str_eq(tree, want, "mode %s:\n%s", mode, tree);
	cr_expect_eq(e2e_json_int(json, "function_exits_unmatched"), 0);
	cr_expect_eq(e2e_json_int(json, "function_calls_unclosed"), 0);
	cr_expect_eq(e2e_json_int(json, "function_calls_open_at_end"), open_at_end);
	free(tree);
	free(json);
	e2e_rm_rf(dir);
}

/* The child's calls nest under the frames it was forked in (main;spawn), entered again at the
 * fork; both processes return through them. */
Test(calltrees, fork_with_calls_in_both, .timeout = 120)
{
	ct_procs("fork",
		 "P0 main 1\n"
		 "P0 main;done 1\n"
		 "P0 main;spawn 1\n"
		 "P0 main;spawn;parent_work 1\n"
		 "P1 main 1\n"
		 "P1 main;done 1\n"
		 "P1 main;spawn 1\n"
		 "P1 main;spawn;child_work 1\n",
		 0);
}

/* trace-run follows the detached child to its end; the parent ended inside main (daemon()
 * calls _exit), the only frame left open. */
Test(calltrees, daemon_with_work_in_the_child, .timeout = 120)
{
	ct_procs("daemon",
		 "!open P0 main 1\n"
		 "P0 main 1\n"
		 "P1 main 1\n"
		 "P1 main;work 1\n"
		 "P1 main;work;step 3\n",
		 1);
}

/* The child's copy of main;spawn ends at the exec; the new image starts its own tree. */
Test(calltrees, fork_then_exec, .timeout = 120)
{
	ct_procs("forkexec",
		 "P0 main 1\n"
		 "P0 main;done 1\n"
		 "P0 main;spawn 1\n"
		 "P1 main 2\n"
		 "P1 main;leaf_work 1\n"
		 "P1 main;spawn 1\n",
		 0);
}

/* A vfork child borrows its parent's memory and thread until it execs: nothing of it is
 * recorded before the exec, and its exec closes none of its parent's frames. */
Test(calltrees, vfork_then_exec, .timeout = 120)
{
	ct_procs("vforkexec",
		 "P0 main 1\n"
		 "P0 main;done 1\n"
		 "P0 main;spawn 1\n"
		 "P1 main 1\n"
		 "P1 main;leaf_work 1\n",
		 0);
}

/* The thread's frames end at its exec; main, waiting in pthread_join, ends inside main: the
 * exec removes its thread without a word. */
Test(calltrees, a_thread_that_calls_exec, .timeout = 120)
{
	ct_procs("threadexec",
		 "!open P0 main 1\n"
		 "P0 main 2\n"
		 "P0 main;leaf_work 1\n"
		 "P0 worker 1\n"
		 "P0 worker;do_exec 1\n"
		 "P0 worker;do_exec;exec_leaf 1\n",
		 1);
}

/* --no-follow: trace-run ends with the command, while the daemon it left waits; none of the
 * daemon's calls are in the trace. */
Test(calltrees, no_follow_ends_with_the_command, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char trace[512], done[512], go[600];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	snprintf(done, sizeof(done), "%s/done", dir);
	snprintf(go, sizeof(go), "%s.go", done);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--no-follow", "-o", trace, "--",
				   e2e_path("tests/prog_finst_procs"), "daemon", done, NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	cr_expect_neq(access(done, F_OK), 0, "the daemon finished before trace-run did");
	/* The daemon may have made its first records (main, entered again at the fork) before
	 * trace-run ended; none of its work. */
	char *tree = ct_tree(trace);
	cr_expect_not_null(strstr(tree, "!open P0 main 1\n"), "%s", tree);
	cr_expect_not_null(strstr(tree, "\nP0 main 1\n"), "%s", tree);
	cr_expect_null(strstr(tree, "work"), "%s", tree);
	free(tree);
	fclose(fopen(go, "w"));
	for (int i = 0; i < 2000 && access(done, F_OK) != 0; i++)
		usleep(10000);
	cr_expect_eq(access(done, F_OK), 0, "the daemon never finished");
	e2e_rm_rf(dir);
}

/* Following a daemon that waits, Ctrl-C (SIGINT to trace-run) ends the recording at once,
 * names the process still running, and trace-run exits with the command's status (0). */
Test(calltrees, interrupt_while_following_names_the_survivors, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char trace[512], done[512], go[600];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	snprintf(done, sizeof(done), "%s/done", dir);
	snprintf(go, sizeof(go), "%s.go", done);
	char *argv[] = {(char *)TR, "-q", "-o",
			trace,	    "--", (char *)e2e_path("tests/prog_finst_procs"),
			"daemon",   done, NULL};
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	/* Until the daemon runs (and its parent, the command, has had time to end). */
	char started[600];
	snprintf(started, sizeof(started), "%s.started", done);
	for (int i = 0; i < 2000 && access(started, F_OK) != 0; i++)
		usleep(10000);
	cr_assert_eq(access(started, F_OK), 0, "the daemon never started");
	usleep(200000);
	double sent = e2e_now();
	kill(pid, SIGINT);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	double took = e2e_now() - sent;
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_lt(took, 5.0, "trace-run took %.1f s to end after SIGINT", took);
	cr_expect_not_null(strstr(r.err, "1 process of the traced tree still running"), "%s",
			   r.err);
	cr_expect_not_null(strstr(r.err, "(prog_finst_proc)"), "%s", r.err);
	e2e_free(&r);
	cr_expect_neq(access(done, F_OK), 0);
	fclose(fopen(go, "w"));
	for (int i = 0; i < 2000 && access(done, F_OK) != 0; i++)
		usleep(10000);
	e2e_rm_rf(dir);
}

static void ct_closed(const char *prog, const char *mode, const char *want)
{
	const char *dir = e2e_tmpdir();
	char *json = NULL;
	const char *args[] = {mode, NULL};
	char *tree = ct_record(dir, &json, NULL, prog, args);
	cr_expect_str_eq(tree, want, "%s %s:\n%s", prog, mode ? mode : "", tree);
	ct_expect_all_closed(json);
	free(tree);
	free(json);
	e2e_rm_rf(dir);
}

/* pthread_exit two frames down: the thread's frames end with it. */
Test(calltrees, pthread_exit_inside_frames, .timeout = 120)
{
	ct_closed("tests/prog_finst_threads", "exit",
		  "P0 main 1\n"
		  "P0 main;after 1\n"
		  "P0 t_main 1\n"
		  "P0 t_main;t_a 1\n"
		  "P0 t_main;t_a;t_b 1\n");
}

/* Cancelled inside c_loop: its frames end with the thread. */
Test(calltrees, cancelled_inside_frames, .timeout = 120)
{
	ct_closed("tests/prog_finst_threads", "cancel",
		  "P0 c_main 1\n"
		  "P0 c_main;c_loop 1\n"
		  "P0 main 1\n"
		  "P0 main;after 1\n");
}

/* A C++ exception thrown through three instrumented frames and caught above them, twice. */
Test(calltrees, cxx_exception_caught_three_frames_up, .timeout = 120)
{
	ct_closed("tests/prog_finst_throw", NULL,
		  "P0 main 1\n"
		  "P0 main;catcher(int) 2\n"
		  "P0 main;catcher(int);handled() 2\n"
		  "P0 main;catcher(int);l1(int) 2\n"
		  "P0 main;catcher(int);l1(int);l2(int) 2\n"
		  "P0 main;catcher(int);l1(int);l2(int);l3(int) 2\n");
}

/* Two coroutines taking turns: each context's frames are its own. Each stretch a context runs
 * is a run of its frames: main and run run three times (before co_a, between, after co_b),
 * co_a and co_b four (three steps, each followed by a switch, then the return). */
Test(calltrees, swapcontext_between_two_coroutines, .timeout = 120)
{
	ct_closed("tests/prog_finst_coro", NULL,
		  "P0 co_a 4\n"
		  "P0 co_a;step_a 3\n"
		  "P0 co_b 4\n"
		  "P0 co_b;step_b 3\n"
		  "P0 main 3\n"
		  "P0 main;run 3\n");
}

/* Followed to its end, a tree whose command exits first (status 4) while a child runs on:
 * trace-run waits for the child and exits with the command's status; nothing is said to be
 * still running. */
Test(calltrees, follow_waits_for_the_tree_and_keeps_the_commands_status, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char trace[512];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-q", "-o", trace, "--", "/bin/sh", "-c",
				   "sleep 0.6 >/dev/null 2>&1 & exit 4", NULL);
	cr_expect_eq(r.exit_code, 4, "exit %d: %s", r.exit_code, r.err);
	cr_expect_geq(r.seconds, 0.6, "trace-run did not wait for the sleep: %.2f s", r.seconds);
	e2e_free(&r);
	int code;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect_eq(code, 0, "%s", text);
	cr_expect_null(strstr(text, "still running"), "%s", text);
	free(text);
	e2e_rm_rf(dir);
}

/* 2000 threads, each one call: every thread's frames go back to the system as it ends. Kept,
 * they held a page each: the RSS grew by 7.4 MiB over the last 1900 threads; it must grow by
 * less than 2 MiB. */
Test(calltrees, ended_threads_give_their_frames_back, .timeout = 120)
{
	/* The sanitizer tier's libtrc carries ASan, which keeps memory of its own per thread
	 * that ended (10 MiB over these threads): the figure would not be ours. */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (tier && *tier)
		cr_skip_test("RSS per ended thread is the sanitizer's own in this tier");
	const char *dir = e2e_tmpdir();
	char trace[512];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-q", "-o", trace, "--",
				   e2e_path("tests/prog_finst_threads"), "churn", NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	const char *p = strstr(r.out, "rss_kb=");
	cr_assert_not_null(p, "%s", r.out);
	long kb = strtol(p + 7, NULL, 10);
	const char *q = strstr(r.out, "after100=");
	cr_assert_not_null(q, "%s", r.out);
	long first = strtol(q + 9, NULL, 10);
	cr_expect_gt(first, 0, "%s", r.out);
	cr_expect_lt(kb - first, 2 * 1024, "RSS %ld KiB after 100 threads, %ld after 2000", first,
		     kb);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
