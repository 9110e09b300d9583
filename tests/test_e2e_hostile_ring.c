/* test_e2e_hostile_ring.c - trace-run recording a program that writes its own ring wrong.
 *
 * A record of length 0 (tests/prog_zero_record.c) once made the drain encode the same record
 * forever: trace-run wrote gigabytes and did not end. Here it must end on its own, with the
 * program's status, a small trace that reads and says the stream is corrupt. Bounded: trace-run
 * runs under a file-size limit and is killed after RUN_BOUND_S, so that drain fails the test
 * rather than filling the disk or holding the suite. */
#include <sys/resource.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")

#define RUN_BOUND_S 30.0
#define FSIZE_BOUND (64u << 20)

Test(e2e_hostile_ring, a_record_of_length_0_ends_its_stream_not_the_run, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], outp[256], errp[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	char *argv[] = {(char *)TR, "-o", out, "--", (char *)e2e_path("tests/prog_zero_record"),
			NULL};
	double t0 = e2e_now();
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* The soft limit only: trace-run lifts it while it sizes the session. */
		struct rlimit rl = {FSIZE_BOUND, RLIM_INFINITY};
		setrlimit(RLIMIT_FSIZE, &rl);
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(99);
	}
	bool ended = false;
	while (e2e_now() - t0 < RUN_BOUND_S) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			ended = true;
			/* e2e_collect reaps it: give it back the status it would have read. */
			struct e2e_run r = {.status = st};
			r.seconds = e2e_now() - t0;
			r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			r.out = e2e_slurp(outp);
			r.err = e2e_slurp(errp);
			cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
			cr_expect_str_eq(r.out, "wrote it\n");
			e2e_free(&r);
			break;
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
	struct stat sb;
	int have = stat(out, &sb);
	if (!ended) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	cr_assert(ended, "trace-run did not end in %.0f s (trace %lld bytes)", RUN_BOUND_S,
		  have == 0 ? (long long)sb.st_size : -1ll);
	cr_assert_eq(have, 0);
	cr_expect_lt(sb.st_size, 1 << 20, "the trace is %lld bytes", (long long)sb.st_size);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	cr_expect(strstr(json, " is corrupt (bad record header)") != NULL,
		  "the corruption is not reported: %s", json);
	free(json);
	e2e_rm_rf(dir);
}
