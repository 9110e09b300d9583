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
#include <sys/stat.h>

#include "e2e_util.h"

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
	char *argv[] = {"/usr/bin/timeout", "--preserve-status", "-s", "TERM", "4", (char *)TR,
			"--no-progress", "-o", out, "--", (char *)PROG, ready, NULL};
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
