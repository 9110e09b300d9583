/* test_calltrees.c - call trees exactly as programs ran them, through the built commands: the
 * trace of each program (tests/prog_finst_jumps.c and the other prog_* named below) must hold
 * the call tree its source implies, name for name, level for level, call for call
 * (calltree_util.h), with every frame closed; and the summary must agree (no exit that closed
 * nothing, no call closed by its caller's exit, none left open). The views of a call tree
 * (trace-dump flame, the summary's function table) say which process each tree is. */
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

/* The pid of the process whose ppid is parent in the summary's "processes"; -1 when none. */
static int64_t ct_child_pid(const char *json, int64_t parent)
{
	const char *p = strstr(json, "\"processes\":[");
	cr_assert_not_null(p);
	while ((p = strstr(p, "{\"pid\":")) != NULL) {
		int64_t pid = e2e_json_int_from(json, p, "pid");
		if (e2e_json_int_from(json, p, "ppid") == parent)
			return pid;
		p++;
	}
	return -1;
}

/* "P0" for pid parent, "P1" for child, else the pid itself. */
static void ct_pname(char *out, size_t cap, int64_t pid, int64_t parent, int64_t child)
{
	if (pid == parent || pid == child)
		snprintf(out, cap, "P%d", pid == child);
	else
		snprintf(out, cap, "pid%lld", (long long)pid);
}

static int ct_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* n malloc'd lines sorted, joined with newlines (each freed); the result is malloc'd. */
static char *ct_join_sorted(char **lines, size_t n)
{
	qsort(lines, n, sizeof(*lines), ct_cmp_str);
	size_t total = 1;
	for (size_t i = 0; i < n; i++)
		total += strlen(lines[i]) + 1;
	char *res = malloc(total);
	res[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(lines[i], lines[i - 1]) == 0)
			continue;
		strcat(res, lines[i]);
		strcat(res, "\n");
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	return res;
}

/* The summary's function rows as "P<k> name calls" lines, sorted. */
static char *ct_function_rows(const char *json, int64_t parent, int64_t child)
{
	char *lines[64];
	size_t n = 0;
	const char *p = strstr(json, "\"functions\":[");
	cr_assert_not_null(p);
	const char *end = strchr(p, ']');
	while ((p = strstr(p, "{\"name\":")) != NULL && p < end) {
		char who[32], name[128], *line = malloc(192);
		ct_pname(who, sizeof(who), e2e_json_int_from(json, p, "pid"), parent, child);
		const char *q = strstr(p, "\"name\":\"");
		cr_assert_not_null(q);
		q += 8;
		size_t len = (size_t)(strchr(q, '"') - q);
		snprintf(name, sizeof(name), "%.*s", (int)len, q);
		snprintf(line, 192, "%s %s %lld", who, name,
			 (long long)e2e_json_int_from(json, p, "calls"));
		cr_assert_lt(n, 64);
		lines[n++] = line;
		p++;
	}
	return ct_join_sorted(lines, n);
}

/* trace-dump flame's lines as the set of their stacks and every stack's callers ("P0;main",
 * the process frame "prog (pid N)" written P<k>), sorted; *sum gets the weights' sum. Every
 * line must have a weight above zero. */
static char *ct_flame_tree(const char *dir, const char *trace, bool merge, const char *prog,
			   int64_t parent, int64_t child, uint64_t *sum)
{
	struct e2e_run r = merge ? e2e_run(dir, e2e_path("bin/trace-dump"), "flame",
					   "--merge-processes", trace, NULL)
				 : e2e_run(dir, e2e_path("bin/trace-dump"), "flame", trace, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	char *lines[256];
	size_t n = 0;
	*sum = 0;
	for (char *save = NULL, *l = strtok_r(r.out, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');
		cr_assert_not_null(sp, "%s", l);
		*sp = 0;
		uint64_t w = strtoull(sp + 1, NULL, 10);
		cr_expect_gt(w, 0, "%s", l);
		*sum += w;
		char stack[1024];
		const char *rest = l;
		stack[0] = 0;
		if (!merge) {
			char want[2][128];
			int64_t pids[2] = {parent, child};
			bool found = false;
			for (int k = 0; k < 2 && !found; k++) {
				snprintf(want[k], sizeof(want[k]), "%s (pid %lld)", prog,
					 (long long)pids[k]);
				size_t wl = strlen(want[k]);
				if (strncmp(l, want[k], wl) == 0 && (l[wl] == ';' || !l[wl])) {
					snprintf(stack, sizeof(stack), "P%d", k);
					rest = l + wl + (l[wl] == ';');
					found = true;
				}
			}
			cr_assert(found, "a line rooted at no process of the tree: %s", l);
		}
		/* the stack and each of its callers, the process frame included */
		if (!merge) {
			cr_assert_lt(n, 256);
			lines[n++] = strdup(stack);
		}
		for (const char *c = rest;; c++) {
			if (*c == ';' || !*c) {
				char *pre = malloc(1100);
				snprintf(pre, 1100, "%s%s%.*s", stack,
					 *stack && c > rest ? ";" : "", (int)(c - rest), rest);
				cr_assert_lt(n, 256);
				lines[n++] = pre;
			}
			if (!*c)
				break;
		}
	}
	e2e_free(&r);
	return ct_join_sorted(lines, n);
}

/* The fork program's views: flame roots each process's tree at its own frame (the child's
 * calls under the main;spawn it inherited, no line shared with the parent), --merge-processes
 * folds them together with the same total, and the summary's functions are counted in each
 * process, in JSON and in the text (a pid column). */
Test(calltrees, the_views_say_which_process_each_tree_is, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char *json = NULL, done[512], trace[512];
	snprintf(done, sizeof(done), "%s/done", dir);
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	const char *args[] = {"fork", done, NULL};
	free(ct_record(dir, &json, NULL, "tests/prog_finst_procs", args));
	int64_t parent = e2e_json_int(json, "pid");
	int64_t child = ct_child_pid(json, parent);
	cr_assert_gt(child, 0, "no child of %lld in %s", (long long)parent, json);

	uint64_t sum, merged_sum;
	char *tree = ct_flame_tree(dir, trace, false, "prog_finst_procs", parent, child, &sum);
	cr_expect_str_eq(tree, "P0\n"
			       "P0;main\n"
			       "P0;main;done\n"
			       "P0;main;spawn\n"
			       "P0;main;spawn;parent_work\n"
			       "P1\n"
			       "P1;main\n"
			       "P1;main;done\n"
			       "P1;main;spawn\n"
			       "P1;main;spawn;child_work\n");
	free(tree);
	tree = ct_flame_tree(dir, trace, true, NULL, parent, child, &merged_sum);
	cr_expect_str_eq(tree, "main\n"
			       "main;done\n"
			       "main;spawn\n"
			       "main;spawn;child_work\n"
			       "main;spawn;parent_work\n");
	cr_expect_eq(sum, merged_sum);
	free(tree);

	char *rows = ct_function_rows(json, parent, child);
	cr_expect_str_eq(rows, "P0 done 1\n"
			       "P0 main 1\n"
			       "P0 parent_work 1\n"
			       "P0 spawn 1\n"
			       "P1 child_work 1\n"
			       "P1 done 1\n"
			       "P1 main 1\n"
			       "P1 spawn 1\n");
	free(rows);

	int code;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect_eq(code, 0, "%s", text);
	cr_expect_not_null(strstr(text, "\nfunctions (by self time, in each of 2 processes; "
					"inclusive time, then self time):\n"
					"       pid  name "),
			   "%s", text);
	char row[128];
	snprintf(row, sizeof(row), "\n  %8lld  child_work ", (long long)child);
	cr_expect_not_null(strstr(text, row), "no row %s in:\n%s", row, text);
	snprintf(row, sizeof(row), "\n  %8lld  parent_work ", (long long)parent);
	cr_expect_not_null(strstr(text, row), "no row %s in:\n%s", row, text);
	free(text);
	free(json);
	e2e_rm_rf(dir);
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
 * they held their mapping and a page each; the address space must grow by less than 32 MiB
 * over the last 1900 threads. */
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
	/* Judged by address space: frames kept would add their 192 KiB mapping a thread (356 MiB
	 * over the last 1900), where RSS moves by some MiB with the rings the recorder has not
	 * yet drained when the machine is loaded. */
	const char *v = strstr(r.out, "vm_kb=");
	const char *w = strstr(r.out, "vm_after100=");
	cr_assert(v && w, "%s", r.out);
	long vm = strtol(v + 6, NULL, 10), vm_first = strtol(w + 12, NULL, 10);
	cr_expect_gt(vm_first, 0, "%s", r.out);
	cr_expect_lt(vm - vm_first, 32 * 1024,
		     "VmSize %ld KiB after 100 threads, %ld after 2000 (RSS %ld, %ld)", vm_first, vm,
		     first, kb);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
