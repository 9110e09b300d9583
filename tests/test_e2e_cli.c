/* test_e2e_cli.c - trace-run's command line, exit statuses and failure paths, on the built
 * binary: usage errors (exit 2, one line naming the value), the command's own status,
 * 128+N after a signal, 127/126 when the command cannot run, an unwritable output (exit 1,
 * and the command never ran), signals forwarded to the program, the report line; and the
 * README's build line and what it builds, run as written. */
#include <regex.h>
#include <sys/resource.h>

#include "cli_version.h"
#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")
#define TD e2e_path("bin/trace-dump")

static void expect_usage_error(const char *what, char *const argv[])
{
	const char *dir = e2e_tmpdir();
	struct e2e_run r = e2e_runv(dir, argv);
	cr_expect_eq(r.exit_code, 2, "%s: exit %d, stderr: %s", what, r.exit_code, r.err);
	cr_expect(strstr(r.err, "trace-run:") != NULL, "%s: no message: %s", what, r.err);
	/* one line naming the problem */
	char *nl = strchr(r.err, '\n');
	cr_expect(nl && nl[1] == '\0', "%s: not one line: %s", what, r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(e2e_cli, bad_values_are_usage_errors, .timeout = 60)
{
	struct {
		const char *what;
		char *argv[8];
		const char *named; /* the message must name this */
	} cases[] = {
		{"zero interval", {(char *)TR, "--rss-interval", "0", "true", NULL}, "0"},
		{"negative interval", {(char *)TR, "--rss-interval", "-5ms", "true", NULL}, "-5ms"},
		{"garbage interval", {(char *)TR, "--rss-interval", "fast", "true", NULL}, "fast"},
		{"nan interval", {(char *)TR, "--rss-interval", "nan", "true", NULL}, "nan"},
		{"tiny interval", {(char *)TR, "--rss-interval", "10us", "true", NULL}, "10us"},
		{"bad source", {(char *)TR, "--rss-source", "vmrss", "true", NULL}, "vmrss"},
		{"bad buffer", {(char *)TR, "--buffer-size", "3M", "true", NULL}, "3M"},
		{"huge buffer", {(char *)TR, "--buffer-size", "64G", "true", NULL}, "64G"},
		{"zero budget", {(char *)TR, "--ring-budget", "0", "true", NULL}, "--ring-budget"},
		{"bad level", {(char *)TR, "--compression-level", "99", "true", NULL}, "99"},
		{"unknown option", {(char *)TR, "--frobnicate", "true", NULL}, "--frobnicate"},
		{"missing value", {(char *)TR, "--rss-interval", NULL}, "--rss-interval"},
		{"no command", {(char *)TR, "-q", NULL}, "command"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *dir = e2e_tmpdir();
		struct e2e_run r = e2e_runv(dir, cases[i].argv);
		cr_expect_eq(r.exit_code, 2, "%s: exit %d, stderr: %s", cases[i].what, r.exit_code,
			     r.err);
		cr_expect(strstr(r.err, cases[i].named) != NULL,
			  "%s: message does not name '%s': %s", cases[i].what, cases[i].named,
			  r.err);
		char *nl = strchr(r.err, '\n');
		cr_expect(nl && nl[1] == '\0', "%s: not one line: %s", cases[i].what, r.err);
		e2e_free(&r);
		e2e_rm_rf(dir);
	}
	char *argv[] = {(char *)TR, NULL};
	expect_usage_error("no arguments", argv);
}

Test(e2e_cli, help_and_version, .timeout = 30)
{
	const char *dir = e2e_tmpdir();
	struct e2e_run r = e2e_run(dir, TR, "--help", NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect(strstr(r.out, "--rss-interval") && strstr(r.out, "--buffer-size"));
	cr_expect(strstr(r.out, "1ms to 1h") && strstr(r.out, "ns, us, ms, s, m or h"), "%s",
		  r.out);
	cr_expect_str_empty(r.err);
	/* It fits a terminal of 80 columns. */
	for (const char *l = r.out; *l; l = strchr(l, '\n') + 1)
		cr_expect_leq(strchr(l, '\n') - l, 80, "too wide: %.*s", (int)(strchr(l, '\n') - l),
			      l);
	e2e_free(&r);
	/* The version both tools share, and the one trace-run writes into the header. */
	r = e2e_run(dir, TR, "--version", NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, "trace-run " CLI_VERSION "\n");
	e2e_free(&r);
	r = e2e_run(dir, TR, "-V", NULL);
	cr_expect_str_eq(r.out, "trace-run " CLI_VERSION "\n");
	e2e_free(&r);
	r = e2e_run(dir, TD, "--version", NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, "trace-dump " CLI_VERSION "\n");
	e2e_free(&r);
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	r = e2e_run(dir, TR, "-q", "-o", out, "--", "/bin/true", NULL);
	cr_expect_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	char *json = e2e_summary_json(dir, out);
	cr_expect(strstr(json, "\"tool_version\":\"trace-run " CLI_VERSION "\""), "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* A usage error of trace-run: exit 2, exactly this one line on stderr, nothing run. */
static void expect_usage_line(const char *dir, char *const argv[], const char *want)
{
	struct e2e_run r = e2e_runv_in(dir, dir, argv);
	cr_expect_eq(r.exit_code, 2, "%s: exit %d, stderr: %s", argv[1], r.exit_code, r.err);
	cr_expect_str_eq(r.err, want);
	cr_expect_str_empty(r.out);
	e2e_free(&r);
}

Test(e2e_cli, rss_interval_takes_the_one_duration_rule, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	expect_usage_line(
		dir, (char *[]){(char *)TR, "--rss-interval", "100", "true", NULL},
		"trace-run: --rss-interval: \"100\" has no unit; write 100ms or 100s (see "
		"trace-run --help)\n");
	expect_usage_line(
		dir, (char *[]){(char *)TR, "--rss-interval=0", "true", NULL},
		"trace-run: --rss-interval: \"0\" has no unit; accepted: 1ms to 1h, with a "
		"unit (ns, us, ms, s, m, h) (see trace-run --help)\n");
	expect_usage_line(
		dir, (char *[]){(char *)TR, "--rss-interval", "2h", "true", NULL},
		"trace-run: --rss-interval: invalid duration \"2h\": too large; accepted: "
		"1ms to 1h, with a unit (ns, us, ms, s, m, h) (see trace-run --help)\n");
	/* --help says up to 1h: 1h and minutes are accepted, exactly. */
	static const struct {
		const char *text;
		const char *ns;
	} ok[] = {{"1h", "3600000000000"}, {"0.5m", "30000000000"}, {"0.25s", "250000000"}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct e2e_run r = e2e_run(dir, TR, "-q", "--rss-interval", ok[i].text, "-o", out,
					   "--", "/bin/true", NULL);
		cr_expect_eq(r.exit_code, 0, "%s: %s", ok[i].text, r.err);
		e2e_free(&r);
		char *json = e2e_summary_json(dir, out);
		char want[64];
		snprintf(want, sizeof(want), "\"rss_interval_ns\":%s,", ok[i].ns);
		cr_expect(strstr(json, want), "%s: %s", ok[i].text, json);
		free(json);
	}
	e2e_rm_rf(dir);
}

Test(e2e_cli, option_errors_are_one_exact_line, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	/* "--" ends the options: it is never an option's value (no file named "--"). */
	expect_usage_line(dir, (char *[]){(char *)TR, "-o", "--", "/bin/true", NULL},
			  "trace-run: option \"-o\" needs a value, got \"--\" (see trace-run "
			  "--help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "--output", "--", "/bin/true", NULL},
			  "trace-run: option \"--output\" needs a value, got \"--\" (see trace-run "
			  "--help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "-q", "--output=--", "/bin/true", NULL},
			  "trace-run: option \"--output\" needs a value, got \"--\" (see trace-run "
			  "--help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "--rss-source", "--", "/bin/true", NULL},
			  "trace-run: option \"--rss-source\" needs a value, got \"--\" (see "
			  "trace-run --help)\n");
	struct stat st;
	char dashes[300];
	snprintf(dashes, sizeof(dashes), "%s/--", dir);
	cr_expect_neq(stat(dashes, &st), 0, "a file named \"--\" was written");
	/* Nothing at all after it. */
	expect_usage_line(dir, (char *[]){(char *)TR, "-o", NULL},
			  "trace-run: option \"-o\" needs a value (see trace-run --help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "--rss-interval", NULL},
			  "trace-run: option \"--rss-interval\" needs a value (see trace-run "
			  "--help)\n");
	/* Unknown options, as typed. */
	expect_usage_line(dir, (char *[]){(char *)TR, "--frobnicate", "true", NULL},
			  "trace-run: unknown option \"--frobnicate\" (see trace-run --help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "-qx", "true", NULL},
			  "trace-run: unknown option \"-x\" (see trace-run --help)\n");
	expect_usage_line(dir, (char *[]){(char *)TR, "--quiet=yes", "true", NULL},
			  "trace-run: option \"--quiet\" takes no value (see trace-run --help)\n");
	e2e_rm_rf(dir);
}

/* The report line, matched whole: sizes vary, the words do not. */
static void expect_report(const char *err, const char *trace, const char *events, const char *ended)
{
	char pat[1024];
	regex_t re;
	snprintf(pat, sizeof(pat),
		 "^trace-run: %s \\([0-9.]+ (B|KiB|MiB)\\): %s, 0 lost, peak RSS [0-9.]+ "
		 "(B|KiB|MiB|GiB)( to [0-9.]+ (B|KiB|MiB|GiB))? \\(trace buffers excluded\\); %s; "
		 "recorder RSS [0-9.]+ MiB, CPU [0-9]+\\.[0-9]{2} s\n$",
		 trace, events, ended);
	cr_assert_eq(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0, "%s", pat);
	cr_expect_eq(regexec(&re, err, 0, NULL, 0), 0, "report line:\n%s\ndoes not match:\n%s", err,
		     pat);
	regfree(&re);
}

Test(e2e_cli, report_line_says_how_the_program_ended, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/sh", "-c", "exit 3", NULL);
	cr_expect_eq(r.exit_code, 3);
	expect_report(r.err, out, "0 events", "program exited with status 3");
	e2e_free(&r);
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/true", NULL);
	cr_expect_eq(r.exit_code, 0);
	expect_report(r.err, out, "0 events", "program exited with status 0");
	e2e_free(&r);
	/* A crash: the signal's number and name. */
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/sh", "-c", "kill -SEGV $$",
		    NULL);
	cr_expect_eq(r.exit_code, 128 + SIGSEGV);
	expect_report(r.err, out, "0 events",
		      "program killed by signal 11 \\(Segmentation fault(, core dumped)?\\)");
	e2e_free(&r);
	/* One event is "1 event". */
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", e2e_path("tests/prog_e2e_emit"), "1",
		    "1", NULL);
	cr_expect_eq(r.exit_code, 0, "%s", r.err);
	expect_report(r.err, out, "1 event", "program exited with status 0");
	e2e_free(&r);
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", e2e_path("tests/prog_e2e_emit"), "1",
		    "2", NULL);
	expect_report(r.err, out, "2 events", "program exited with status 0");
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* CPU seconds of the children this test process waited for (trace-run and, through it, the
 * program it ran). */
static double children_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The CPU figure of the report line, or -1. */
static double reported_recorder_cpu_s(const char *err)
{
	const char *p = strstr(err, ", CPU ");
	return p ? strtod(p + strlen(", CPU "), NULL) : -1;
}

/* The report's recorder CPU is trace-run's own threads', not the program's: a program that
 * burns ~1 s of CPU and emits nothing leaves it near 0 while trace-run and the program took a
 * second between them; one that emits 20 M events as fast as it can costs the recorder a
 * real share (drain, compression: ~0.7 s here), within what trace-run and its child took. */
Test(e2e_cli, report_line_gives_the_recorders_own_cpu, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	double before = children_cpu_s();
	struct e2e_run r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/sh", "-c",
				   "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done", NULL);
	double took = children_cpu_s() - before;
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	double rec = reported_recorder_cpu_s(r.err);
	cr_expect(took > 0.4, "the busy program took %.2f s of CPU in all", took);
	cr_expect(rec >= 0 && rec < 0.25, "recorder CPU %.2f s of %.2f: the program's counted?\n%s",
		  rec, took, r.err);
	e2e_free(&r);

	before = children_cpu_s();
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", e2e_path("tests/prog_rt_events"), "0",
		    "20000000", NULL);
	took = children_cpu_s() - before;
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	rec = reported_recorder_cpu_s(r.err);
	cr_expect(rec >= 0.1 && rec <= took + 0.02,
		  "recorder CPU %.2f s for 20 M events, %.2f s for trace-run and its child\n%s",
		  rec, took, r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* 127 after exec is a shell's or the loader's "could not run it": not reported as a run. */
Test(e2e_cli, exit_127_is_not_reported_as_a_run, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/sh", "-c",
				   "no-such-command-xyz", NULL);
	cr_expect_eq(r.exit_code, 127, "%s", r.err);
	const char *report = strstr(r.err, "trace-run: ");
	cr_assert_not_null(report, "%s", r.err);
	cr_expect_null(strstr(report, "program exited"), "%s", report);
	expect_report(report, out, "0 events",
		      "the command could not be run \\(exit status 127: not found, or a shared "
		      "library it needs is missing\\)");
	e2e_free(&r);
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", "/bin/sh", "-c", "exit 126", NULL);
	cr_expect_eq(r.exit_code, 126, "%s", r.err);
	expect_report(r.err, out, "0 events",
		      "the command could not be run \\(exit status 126: not executable\\)");
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* The README's build line, taken from README.md itself so the two cannot drift, run as
 * written (in a directory where src/ and build/ are this tree's) on a small program: the
 * program must run, on its own and under trace-run, with no LD_LIBRARY_PATH. */
Test(e2e_cli, readme_build_line_works_as_written, .timeout = 120)
{
	char *readme = e2e_slurp("README.md");
	const char *start = strstr(readme, "`cc -I src/include ");
	cr_assert_not_null(start, "README.md has no `cc -I src/include ...` build line");
	start++;
	const char *end = strchr(start, '`');
	cr_assert_not_null(end);
	char line[512];
	snprintf(line, sizeof(line), "%.*s", (int)(end - start), start);
	cr_assert(strstr(line, "prog.c"), "%s", line);
	free(readme);

	const char *dir = e2e_tmpdir();
	char path[600], src[4096], build[4096];
	cr_assert_not_null(realpath("src", src));
	cr_assert_not_null(realpath(e2e_build(), build));
	snprintf(path, sizeof(path), "%s/src", dir);
	cr_assert_eq(symlink(src, path), 0);
	snprintf(path, sizeof(path), "%s/build", dir);
	cr_assert_eq(symlink(build, path), 0);
	snprintf(path, sizeof(path), "%s/prog.c", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("#include <stdio.h>\n#include \"trc.h\"\nint "
	      "main(void)\n{\n\tTRC_BEGIN(\"readme\");\n"
	      "\tTRC_INSTANT(\"readme.hello\", 1);\n\tTRC_END(\"readme\");\n"
	      "\tputs(\"hello from prog\");\n\treturn 0;\n}\n",
	      f);
	fclose(f);
	/* The line builds (it names a.out nothing else: cc's default). */
	unsetenv("LD_LIBRARY_PATH");
	struct e2e_run r = e2e_runv_in(dir, dir, (char *[]){"/bin/sh", "-c", line, NULL});
	cr_assert_eq(r.exit_code, 0, "`%s` failed (%d): %s", line, r.exit_code, r.err);
	e2e_free(&r);
	/* What it built runs, found from anywhere. */
	char prog[600], out[600];
	snprintf(prog, sizeof(prog), "%s/a.out", dir);
	r = e2e_run(dir, prog, NULL);
	cr_expect_eq(r.exit_code, 0, "`%s` built a program that exits %d: %s", line, r.exit_code,
		     r.err);
	cr_expect_str_eq(r.out, "hello from prog\n");
	e2e_free(&r);
	/* And under trace-run, its three events are recorded. */
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	r = e2e_run(dir, TR, "--no-preload", "-o", out, "--", prog, NULL);
	cr_expect_eq(r.exit_code, 0, "%s", r.err);
	expect_report(strstr(r.err, "trace-run: ") ? strstr(r.err, "trace-run: ") : r.err, out,
		      "3 events", "program exited with status 0");
	e2e_free(&r);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 3, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

Test(e2e_cli, exit_status_is_the_commands, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-q", "-o", out, "--", "/bin/sh", "-c", "exit 3", NULL);
	cr_expect_eq(r.exit_code, 3, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	r = e2e_run(dir, TR, "-q", "-o", out, "--", "/bin/sh", "-c", "kill -TERM $$", NULL);
	cr_expect_eq(r.exit_code, 128 + SIGTERM, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	r = e2e_run(dir, TR, "-o", out, "--", "/bin/true", NULL);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	/* the one-line report names the file */
	cr_expect(strstr(r.err, out) != NULL, "report does not name the file: %s", r.err);
	e2e_free(&r);
	struct stat st;
	cr_expect_eq(stat(out, &st), 0, "no trace file written");
	e2e_rm_rf(dir);
}

Test(e2e_cli, command_not_found_or_not_executable, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256], noexec[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-o", out, "--", "/no/such/program-xyz", NULL);
	cr_expect_eq(r.exit_code, 127, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "/no/such/program-xyz") != NULL, "%s", r.err);
	e2e_free(&r);
	r = e2e_run(dir, TR, "-o", out, "--", "no-such-command-xyz", NULL);
	cr_expect_eq(r.exit_code, 127, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);

	snprintf(noexec, sizeof(noexec), "%s/noexec.sh", dir);
	FILE *f = fopen(noexec, "w");
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	chmod(noexec, 0644);
	r = e2e_run(dir, TR, "-o", out, "--", noexec, NULL);
	cr_expect_eq(r.exit_code, 126, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(e2e_cli, unwritable_output_never_runs_the_command, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char marker[256], script[300];
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(script, sizeof(script), "touch %s", marker);
	struct e2e_run r = e2e_run(dir, TR, "-o", "/nonexistent-dir-xyz/t.trc", "--", "/bin/sh",
				   "-c", script, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "/nonexistent-dir-xyz/t.trc") != NULL, "%s", r.err);
	e2e_free(&r);
	struct stat st;
	cr_expect_neq(stat(marker, &st), 0, "the command ran although the output was unwritable");
	/* the child was reaped: trace-run has no zombie left (it exited), nothing to check beyond
	 * its exit; a child left running would have created the marker by now */
	usleep(200000);
	cr_expect_neq(stat(marker, &st), 0, "the command ran later");
	e2e_rm_rf(dir);
}

Test(e2e_cli, sigterm_is_forwarded_and_trace_finalized, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	char *argv[] = {(char *)TR, "-q", "-o", out, "--", "/bin/sleep", "30", NULL};
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	usleep(500000);
	kill(pid, SIGTERM);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	cr_expect_eq(r.exit_code, 128 + SIGTERM, "exit %d: %s", r.exit_code, r.err);
	cr_expect_lt(r.seconds, 10.0, "trace-run did not stop promptly (%.1fs)", r.seconds);
	e2e_free(&r);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "trace not finalized: %s", json);
	free(json);
	e2e_rm_rf(dir);
}

Test(e2e_cli, recorder_start_failure_stops_the_program, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char marker[256], script[300], out[256];
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(script, sizeof(script), "touch %s", marker);
	setenv("TRC_TEST_FAIL_THREAD", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "-o", out, "--", "/bin/sh", "-c", script, NULL);
	unsetenv("TRC_TEST_FAIL_THREAD");
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "recorder") != NULL, "%s", r.err);
	e2e_free(&r);
	usleep(200000);
	struct stat st;
	cr_expect_neq(stat(marker, &st), 0, "the command ran although the recorder failed");
	e2e_rm_rf(dir);
}
