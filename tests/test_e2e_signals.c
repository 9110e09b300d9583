/* test_e2e_signals.c - trace-run and the signals that stop a traced program, on the built
 * binary: one external signal, however it was addressed (to trace-run alone, to its process
 * group, or to both as coreutils timeout sends it), reaches the program once and counts as
 * one interrupt; and trace-run stays stoppable while it finishes.
 *
 * The traced programs get SIGINT and SIGTERM at their default (a test runner started in the
 * background by a non-interactive shell has SIGINT ignored, and an ignored signal never
 * reaches trace-run's signalfd), and trace-run runs in a process group of its own, so a
 * group signal reaches only it and what it started.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "e2e_util.h"
#include "test_stored_util.h" /* tu_count_chunks */

#define TR e2e_path("bin/trace-run")
#define PROG e2e_path("tests/prog_term_cleanup")

/* Starts argv in its own process group with SIGINT and SIGTERM at their default; stdout and
 * stderr go to files in dir. */
static pid_t start_in_group(const char *dir, char *const argv[])
{
	char outp[256], errp[256];
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(99);
	}
	setpgid(pid, pid); /* both sides: the kill below must find the group */
	return pid;
}

/* Waits (at most 60 s) until path exists. */
static void wait_for_file(const char *path)
{
	struct stat st;
	for (int i = 0; i < 6000 && stat(path, &st) != 0; i++)
		usleep(10000);
	cr_assert_eq(stat(path, &st), 0, "%s never appeared", path);
}

/* The program's clean shutdown ran to its end, its handler ran once, trace-run exited with
 * the program's status and the trace is complete. */
static void expect_one_clean_shutdown(const char *dir, const char *out, struct e2e_run *r)
{
	cr_expect_eq(r->exit_code, 7, "exit %d: %s", r->exit_code, r->err);
	cr_expect_str_eq(r->out, "handled 1\n", "%s", r->err);
	cr_expect(strstr(r->err, "program exited with status 7") != NULL, "%s", r->err);
	cr_expect(strstr(r->err, "second interrupt") == NULL, "%s", r->err);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
}

/* kill -TERM -PGID: the program got it from the group; trace-run does not pass it on. */
Test(e2e_signals, group_sigterm_reaches_the_program_once, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], ready[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	char *argv[] = {(char *)TR, "--no-progress", "-o", out, "--", (char *)PROG, ready, NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	wait_for_file(ready);
	cr_assert_eq(kill(-pid, SIGTERM), 0);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	expect_one_clean_shutdown(dir, out, &r);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* kill -TERM PID of trace-run only: the program did not get it; trace-run passes it on, once. */
Test(e2e_signals, sigterm_to_trace_run_alone_is_passed_on_once, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], ready[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	char *argv[] = {(char *)TR, "--no-progress", "-o", out, "--", (char *)PROG, ready, NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	wait_for_file(ready);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	expect_one_clean_shutdown(dir, out, &r);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* timeout -s TERM: trace-run gets the signal twice (to it, then to the group), the program
 * once from the group: one interrupt, not a second one that kills the program. */
Test(e2e_signals, timeout_sigterm_is_one_interrupt, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], ready[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	/* 4 s: the program has its handlers in place by then, even under ASan on a loaded
	 * machine (checked below: the ready file exists when the run ends). */
	char *argv[] = {"/usr/bin/timeout",
			"--preserve-status",
			"-s",
			"TERM",
			"4",
			(char *)TR,
			"--no-progress",
			"-o",
			out,
			"--",
			(char *)PROG,
			ready,
			NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	struct stat st;
	cr_assert_eq(stat(ready, &st), 0, "the program was not ready in 4 s: %s", r.err);
	expect_one_clean_shutdown(dir, out, &r);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* Waits (at most max_s) for pid to end; returns true and fills r when it did. */
static bool collect_within(const char *dir, pid_t pid, double t0, double max_s, struct e2e_run *r)
{
	for (double t = e2e_now(); e2e_now() - t < max_s;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			r->seconds = e2e_now() - t0;
			r->status = st;
			r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			char p[256];
			snprintf(p, sizeof(p), "%s/stdout", dir);
			r->out = e2e_slurp(p);
			snprintf(p, sizeof(p), "%s/stderr", dir);
			r->err = e2e_slurp(p);
			return true;
		}
		usleep(10000);
	}
	return false;
}

/* Startup: the output is a FIFO, whose open blocks until a reader comes; SIGTERM then ends
 * trace-run at once and the command never runs. */
Test(e2e_signals, sigterm_before_the_command_ran_ends_trace_run, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char fifo[256], marker[256], script[300];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(script, sizeof(script), "touch %s", marker);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	char *argv[] = {(char *)TR, "-o", fifo, "--", "/bin/sh", "-c", script, NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	usleep(500000);
	kill(pid, SIGTERM);
	struct e2e_run r = {0};
	bool ended = collect_within(dir, pid, t0, 5.0, &r);
	if (!ended) {
		kill(pid, SIGKILL);
		e2e_collect(dir, pid, &r, t0);
	}
	cr_expect(ended, "trace-run ignored SIGTERM while it started: %s", r.err);
	/* A writer that refuses a FIFO at once says so instead (exit 1). */
	if (r.exit_code != 1) {
		cr_expect_eq(r.exit_code, 128 + SIGTERM, "exit %d: %s", r.exit_code, r.err);
		cr_expect_str_eq(r.err,
				 "trace-run: interrupted before the command ran: nothing was "
				 "recorded\n");
	}
	e2e_free(&r);
	usleep(200000);
	struct stat st;
	cr_expect_neq(stat(marker, &st), 0, "the command ran");
	e2e_rm_rf(dir);
}

/* The compaction at exit (level 19, every chunk stored, none compressed in the background:
 * many seconds of work): SIGTERM abandons it, the trace stays complete with its chunks stored,
 * and trace-run exits with the program's status at once. */
Test(e2e_signals, sigterm_during_the_compaction_keeps_the_trace_whole, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	setenv("TRC_NO_BG_COMPRESS", "1", 1);
	char *argv[] = {(char *)TR,
			"--no-progress",
			"--no-preload",
			"--compression-level",
			"19",
			"-o",
			out,
			"--",
			(char *)e2e_path("tests/prog_e2e_emit"),
			"2",
			"1000000",
			NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	unsetenv("TRC_NO_BG_COMPRESS");
	unsetenv("TRC_TEST_STORE_ALL");
	/* The program prints "emitted" as it ends; the compaction starts right after the last
	 * drain, with a temporary beside the trace when it makes a named one. */
	char outp[256], cmd[400];
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	for (int i = 0; i < 6000; i++) {
		char *o = e2e_slurp(outp);
		bool done = strstr(o, "emitted") != NULL;
		free(o);
		if (done)
			break;
		usleep(10000);
	}
	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c compacting", dir);
	for (int i = 0; i < 100; i++) {
		FILE *p = popen(cmd, "r");
		int n = 0;
		cr_assert_eq(fscanf(p, "%d", &n), 1);
		pclose(p);
		if (n)
			break;
		usleep(10000);
	}
	kill(pid, SIGTERM);
	double t_sig = e2e_now();
	struct e2e_run r = {0};
	bool ended = collect_within(dir, pid, t0, 60.0, &r);
	cr_assert(ended);
	double after_s = e2e_now() - t_sig;
	cr_expect_lt(after_s, 2.0, "%.1f s after SIGTERM: %s", after_s, r.err);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	/* Abandoned where it was: the compaction, or (no named temporary to wait for) the end of
	 * the finish just before it, which skips it. */
	cr_expect(strstr(r.err, "trace-run: interrupted while compressing the stored chunks: ") ||
			  strstr(r.err, "trace-run: interrupted while finishing: "),
		  "%s", r.err);
	e2e_free(&r);
	unsigned stored, compressed;
	tu_count_chunks(out, &stored, &compressed);
	cr_expect_gt(stored, 0, "the compaction was not abandoned");
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 2000000, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
	/* Nothing but the trace (and the captured output) is left in the directory. */
	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -vc '^stdout$\\|^stderr$\\|^t.trc$\\|^dump$'",
		 dir);
	FILE *p = popen(cmd, "r");
	int left = -1;
	cr_assert_eq(fscanf(p, "%d", &left), 1);
	pclose(p);
	cr_expect_eq(left, 0);
	e2e_rm_rf(dir);
}

/* Finishing: a process of the tree outlives the program and floods its rings (three threads,
 * --when-full drop), which keeps the last drain busy, and the writer's close, whose
 * compressors take only idle CPU, waiting for as long as the flood lasts. The first SIGTERM
 * stops the last drain and lets the compressors run; a second exits at once; either way
 * trace-run ends within a second and a half of it and the trace reads back. */
Test(e2e_signals, sigterm_while_finishing_ends_the_finish, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], pidfile[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	/* --no-follow: the survivor is not waited for; the finish is what is interrupted. */
	char *argv[] = {(char *)TR, "--no-progress", "--no-follow", "--when-full", "drop", "-o",
			out, "--", (char *)e2e_path("tests/prog_flood_survivor"), pidfile, NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	wait_for_file(pidfile);
	usleep(200000); /* the pid is written as the program ends: trace-run is finishing */
	char *pidtxt = e2e_slurp(pidfile);
	pid_t flooder = atoi(pidtxt);
	free(pidtxt);
	struct e2e_run r = {0};
	if (collect_within(dir, pid, t0, 0.3, &r)) {
		kill(flooder, SIGKILL);
		e2e_free(&r);
		e2e_rm_rf(dir);
		cr_skip_test("the finish ended by itself before the interrupt (a fast machine)");
	}
	kill(pid, SIGTERM);
	bool ended = collect_within(dir, pid, t0, 1.5, &r);
	bool second = false;
	if (!ended) {
		second = true;
		kill(pid, SIGTERM);
		ended = collect_within(dir, pid, t0, 1.5, &r);
	}
	if (!ended) {
		kill(pid, SIGKILL);
		e2e_collect(dir, pid, &r, t0);
	}
	kill(flooder, SIGKILL);
	cr_assert(ended, "trace-run ignored SIGTERM while it finished: %s", r.err);
	/* Where the first interrupt landed: the finish, or (when the flood let the finish end
	 * in the meantime) the compaction of the chunks it stored, which it abandons. */
	cr_expect(strstr(r.err, "trace-run: interrupted while finishing: the last drain stops now "
				"and the trace keeps what was written (interrupt again to exit at "
				"once)\n") ||
			  (!second &&
			   strstr(r.err,
				  "trace-run: interrupted while compressing the stored chunks: ")),
		  "%s", r.err);
	char *json = e2e_summary_json(dir, out);
	if (second) {
		cr_expect_eq(r.exit_code, 128 + SIGTERM, "exit %d: %s", r.exit_code, r.err);
		cr_expect(strstr(r.err,
				 "trace-run: second interrupt while finishing: exiting now; ") !=
				  NULL,
			  "%s", r.err);
		cr_expect_eq(e2e_json_int(json, "truncated"), 1, "%s", json);
	} else {
		cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
		/* Cut where it was: the last drain (then a note says what was not written),
		 * closing the file or the compaction; either way the footer is there. */
		cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	}
	free(json);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* The first line of a /proc file (whose size reads as 0, which e2e_slurp believes), or "". */
static char *proc_line(const char *path)
{
	char *buf = calloc(1, 4096);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, 4096, f))
			buf[0] = 0;
		fclose(f);
	}
	return buf;
}

/* The CPU time (user + system) of pid so far, in seconds, from /proc/PID/stat. */
static double cpu_seconds(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *st = proc_line(path);
	const char *p = strrchr(st, ')');
	unsigned long long ut = 0, stime = 0;
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stime);
	free(st);
	return (double)(ut + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* The witness killed by someone: trace-run neither spins on its closed pipe nor stops passing
 * on a signal sent to it alone. */
Test(e2e_signals, a_killed_witness_costs_nothing_and_signals_still_pass, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], ready[256], path[96];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	char *argv[] = {(char *)TR, "--no-progress", "-o", out, "--", (char *)PROG, ready, NULL};
	double t0 = e2e_now();
	pid_t pid = start_in_group(dir, argv);
	wait_for_file(ready);
	/* trace-run's children: the program and the witness (named trc-witness). */
	pid_t witness = -1;
	DIR *d = opendir("/proc");
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		int p = atoi(e->d_name);
		if (p <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", p);
		char *st = proc_line(path);
		int ppid = -1;
		const char *close = strrchr(st, ')');
		if (close && strstr(st, "(trc-witness)") &&
		    sscanf(close + 2, "%*c %d", &ppid) == 1 && ppid == pid)
			witness = p;
		free(st);
	}
	closedir(d);
	cr_assert_gt(witness, 0, "no trc-witness among trace-run's children");
	cr_assert_eq(kill(witness, SIGKILL), 0);
	usleep(200000);
	double cpu0 = cpu_seconds(pid);
	usleep(1000000);
	double cpu1 = cpu_seconds(pid);
	cr_expect_lt(cpu1 - cpu0, 0.3, "trace-run used %.2f s of CPU in 1 s", cpu1 - cpu0);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	expect_one_clean_shutdown(dir, out, &r);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
