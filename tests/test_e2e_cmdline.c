/* test_e2e_cmdline.c - long command lines, end to end (issue 12, noticed while fixing item 8):
 * the runtime recorded a process's command line cut at 4 KiB, silently. Now it is recorded
 * whole up to 128 KiB (session_layout.h TRC_CMDLINE_MAX, default ring), and a longer one keeps
 * its first 128 KiB with a note in the trace saying so.
 *
 * Threads: each test is one process (Criterion); trace-run and trace-dump run as children.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")

/* An argument of n copies of c (free it). */
static char *cl_arg(char c, size_t n)
{
	char *s = malloc(n + 1);
	cr_assert_not_null(s);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* Python's verdict on the shell's command in the summary JSON at json_path: 0 when its
 * arguments joined by NUL bytes are the first `kept` bytes of the real ones (all of them, the
 * last NUL included, when kept is the whole length). */
static int cl_py(const char *dir, const char *json_path, size_t na, size_t nb, size_t nc,
		 size_t kept)
{
	static const char script[] =
		"import json, sys\n"
		"d = json.load(open(sys.argv[1]))\n"
		"na, nb, nc, kept = map(int, sys.argv[2:6])\n"
		"want = '\\0'.join(['sh', '-c', 'exit 0', 'sh', 'a' * na, 'b' * nb, 'c' * nc]) + "
		"'\\0'\n"
		"for p in d['processes']:\n"
		"    if p['command'][:2] == ['sh', '-c']:\n"
		"        got = '\\0'.join(p['command'])\n"
		"        ok = got + '\\0' == want if kept == len(want) else got == want[:kept]\n"
		"        print('kept', len(got), 'of', len(want), file=sys.stderr)\n"
		"        sys.exit(0 if ok else 3)\n"
		"sys.exit(2)\n";
	char py[300];
	snprintf(py, sizeof(py), "%s/check.py", dir);
	FILE *f = fopen(py, "w");
	cr_assert_not_null(f);
	fputs(script, f);
	fclose(f);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' %zu %zu %zu %zu", py, json_path, na, nb, nc,
		 kept);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Records `sh -c 'exit 0' sh A B C` (A, B, C: na, nb, nc copies of a, b, c) and checks the
 * shell's command in the summary's JSON with python: its arguments joined by NUL bytes are
 * the first `kept` bytes of the real ones. Returns the JSON (free it). */
static char *cl_record(const char *dir, const char *buffer_size, size_t na, size_t nb, size_t nc,
		       size_t kept)
{
	char out[300], json_path[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	char *a = cl_arg('a', na), *b = cl_arg('b', nb), *c = cl_arg('c', nc);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--buffer-size", buffer_size, "-o", out, "--",
				   "sh", "-c", "exit 0", "sh", a, b, c, NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	free(a);
	free(b);
	free(c);
	char *json = e2e_summary_json(dir, out);
	snprintf(json_path, sizeof(json_path), "%s/s.json", dir);
	FILE *f = fopen(json_path, "w");
	cr_assert_not_null(f);
	fputs(json, f);
	fclose(f);
	int rc = cl_py(dir, json_path, na, nb, nc, kept);
	cr_assert_eq(rc, 0, "the shell's command is not its first %zu bytes (python exit %d)", kept,
		     rc);
	return json;
}

Test(e2e_cmdline, a_long_command_line_is_recorded_whole, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	/* 120 KiB of arguments: thirty times the old 4 KiB */
	size_t na = 100000, nb = 20000, nc = 2000;
	size_t whole = strlen("sh") + 1 + strlen("-c") + 1 + strlen("exit 0") + 1 + strlen("sh") +
		       1 + na + 1 + nb + 1 + nc + 1;
	char *json = cl_record(dir, "16M", na, nb, nc, whole);
	cr_expect_null(strstr(json, "longer than recorded"), "no cut noted: %.300s",
		       strstr(json, "\"notes\""));
	free(json);
	e2e_rm_rf(dir);
}

Test(e2e_cmdline, a_longer_one_keeps_128_KiB_and_says_so, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char *json = cl_record(dir, "16M", 100000, 100000, 100000, 128 * 1024);
	const char *note = strstr(json, "1 command line was longer than recorded (at most 128 KiB");
	cr_assert_not_null(note, "no note: %.400s", strstr(json, "\"notes\""));
	cr_expect_not_null(strstr(note, "(131072 bytes kept)"), "%.300s", note);
	free(json);
	e2e_rm_rf(dir);
}

/* The smallest rings (64 KiB) keep a quarter of the ring: 16 KiB, said the same way. */
Test(e2e_cmdline, small_rings_keep_a_quarter_of_the_ring, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char *json = cl_record(dir, "64K", 100000, 100000, 100000, 16 * 1024);
	const char *note = strstr(json, "1 command line was longer than recorded");
	cr_assert_not_null(note, "no note: %.400s", strstr(json, "\"notes\""));
	cr_expect_not_null(strstr(note, "(16384 bytes kept)"), "%.300s", note);
	free(json);
	e2e_rm_rf(dir);
}
