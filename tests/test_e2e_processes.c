/* test_e2e_processes.c - every process's memory (issue 14 items 4 and 5), end to end:
 * trace-run records a shell and its two children; the summary's processes list has each with
 * its pid, ppid, command and exit as they were, and a peak that matches what the same command
 * reaches untraced; a child killed by a signal falls back to its samples, flagged; a peak is
 * never below a sampled value.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_util.h"
#include "session_layout.h"

#define TR e2e_path("bin/trace-run")
#define TOUCH e2e_path("tests/prog_touch_mem")

/* The processes-list object whose command begins with `cmd_prefix` (a JSON fragment such
 * as `"/path","20"`): a copy to free, or NULL. */
static char *process_obj(const char *json, const char *cmd_prefix)
{
	char pat[512];
	snprintf(pat, sizeof(pat), "\"command\":[%s", cmd_prefix);
	const char *list = strstr(json, "\"processes\":[");
	const char *c = list ? strstr(list, pat) : NULL;
	if (!c)
		return NULL;
	const char *b = c;
	while (b > list && strncmp(b, "{\"pid\":", 7) != 0)
		b--;
	const char *e = strchr(c, '}');
	return e ? strndup(b, (size_t)(e - b + 1)) : NULL;
}

/* ru_maxrss of `prog_touch_mem MIB exit=0` run untraced, in bytes. */
static int64_t untraced_peak(const char *mib)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execl(TOUCH, TOUCH, mib, "exit=0", (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return (int64_t)ru.ru_maxrss * 1024;
}

static void expect_near(int64_t got, int64_t want, const char *what)
{
	int64_t tol = want / 100 > (1 << 20) ? want / 100 : (1 << 20);
	cr_expect(llabs(got - want) <= tol, "%s: %lld, untraced %lld (tolerance %lld)", what,
		  (long long)got, (long long)want, (long long)tol);
}

Test(e2e_processes, a_shell_and_its_two_children, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], script[1024], q20[300], q50[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(script, sizeof(script), "%s 20 exit=300 & %s 50 exit=300; wait; %s x y z; exit 3",
		 TOUCH, TOUCH, TOUCH);
	/* Without allocation stacks: their unwinder's own memory (its tables and caches, about
	 * 1 MiB a process) is in each process's RSS, and this compares with the untraced run. */
	struct e2e_run r = e2e_run(dir, TR, "-q", "--alloc-stacks", "none", "--rss-interval",
				   "10ms", "-o", out, "--", "sh", "-c", script, NULL);
	cr_assert_eq(r.exit_code, 3, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	char *json = e2e_summary_json(dir, out);
	int64_t root = e2e_json_int(json, "pid");
	snprintf(q20, sizeof(q20), "\"%s\",\"20\",\"exit=300\"]", TOUCH);
	snprintf(q50, sizeof(q50), "\"%s\",\"50\",\"exit=300\"]", TOUCH);
	char *sh = process_obj(json, "\"sh\",\"-c\"");
	char *a = process_obj(json, q20), *b = process_obj(json, q50);
	cr_assert(sh && a && b, "processes missing: %s", json);
	/* pid and ppid as they were: the shell is the program, the children are its. */
	cr_expect_eq(e2e_json_int(sh, "pid"), root, "%s", sh);
	cr_expect_eq(e2e_json_int(a, "ppid"), root, "%s", a);
	cr_expect_eq(e2e_json_int(b, "ppid"), root, "%s", b);
	cr_expect_neq(e2e_json_int(a, "pid"), e2e_json_int(b, "pid"));
	/* The shell's exit (wait4), exactly; the children's own peaks from the kernel. */
	cr_expect_eq(e2e_json_int(sh, "exit"), 3, "%s", sh);
	/* The children's own: main returned 0; the third returned 2 (usage error). */
	cr_expect(strstr(a, "\"exit\":0,"), "%s", a);
	cr_expect(strstr(b, "\"exit\":0,"), "%s", b);
	char q3[300];
	snprintf(q3, sizeof(q3), "\"%s\",\"x\",\"y\",\"z\"]", TOUCH);
	char *c3 = process_obj(json, q3);
	cr_expect(c3 && strstr(c3, "\"exit\":2,"), "%s", c3 ? c3 : json);
	free(c3);
	cr_expect(strstr(a, "\"rss_peak_source\":\"kernel\""), "%s", a);
	cr_expect(strstr(b, "\"rss_peak_source\":\"kernel\""), "%s", b);
	/* Each child's peak is its own, as untraced, not the largest of the tree. */
	int64_t u20 = untraced_peak("20"), u50 = untraced_peak("50");
	/* The high end is the kernel's VmHWM, which counts the trace buffers resident at the
	 * peak: it may exceed the untraced peak by their most (buffers_max_bytes) as well. */
	expect_near(e2e_json_int(a, "rss_peak_bytes"), u20, "20 MiB child, low");
	expect_near(e2e_json_int(a, "rss_peak_high_bytes") - e2e_json_int(a, "buffers_max_bytes"),
		    u20, "20 MiB child, high less the buffers");
	expect_near(e2e_json_int(b, "rss_peak_bytes"), u50, "50 MiB child, low");
	expect_near(e2e_json_int(b, "rss_peak_high_bytes") - e2e_json_int(b, "buffers_max_bytes"),
		    u50, "50 MiB child, high less the buffers");
	cr_expect_lt(e2e_json_int(sh, "rss_peak_high_bytes"), u20 / 2,
		     "the shell's peak is its own, not a child's: %s", sh);
	/* trace-dump rss: a series per process, told apart by the pid column. */
	char sub[300], pidcol[64];
	snprintf(sub, sizeof(sub), "%s/rss", dir);
	mkdir(sub, 0755);
	r = e2e_run(sub, e2e_path("bin/trace-dump"), "rss", out, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_expect(!strncmp(r.out, "time_ns,pid,", 12), "%s", r.out);
	int64_t pids[3] = {root, e2e_json_int(a, "pid"), e2e_json_int(b, "pid")};
	for (int i = 0; i < 3; i++) {
		snprintf(pidcol, sizeof(pidcol), ",%lld,", (long long)pids[i]);
		cr_expect(strstr(r.out, pidcol), "no rows of pid %lld", (long long)pids[i]);
	}
	e2e_free(&r);
	/* Sampled on the same ticks: every process has samples, none above its peak. */
	char *objs[] = {sh, a, b};
	for (int i = 0; i < 3; i++) {
		cr_expect_gt(e2e_json_int(objs[i], "rss_samples"), 0, "%s", objs[i]);
		cr_expect_geq(e2e_json_int(objs[i], "rss_peak_bytes"),
			      e2e_json_int(objs[i], "rss_sampled_max_bytes"), "%s", objs[i]);
		free(objs[i]);
	}
	free(json);
}

Test(e2e_processes, a_child_killed_by_a_signal_is_sampled_and_flagged, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], script[1024], q[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(script, sizeof(script), "%s 10 exit=5000 & sleep 0.5; kill -9 $!; wait", TOUCH);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--rss-interval", "10ms", "-o", out, "--", "sh",
				   "-c", script, NULL);
	e2e_free(&r);
	char *json = e2e_summary_json(dir, out);
	/* The killed child is the shell's first child (its command may still be the shell's: a
	 * process killed before its first event has not described its exec'd image). */
	snprintf(q, sizeof(q), "\"ppid\":%lld,", (long long)e2e_json_int(json, "pid"));
	const char *list = strstr(json, "\"processes\":[");
	const char *at = list ? strstr(list, q) : NULL;
	cr_assert(at, "%s", json);
	char *k = strndup(at, (size_t)(strchr(at, '}') - at + 1));
	cr_expect(strstr(k, "\"rss_peak_source\":\"sampled\""), "%s", k);
	cr_expect_eq(e2e_json_int(k, "rss_peak_exact"), 0, "%s", k);
	cr_expect_gt(e2e_json_int(k, "rss_samples"), 10, "%s", k);
	cr_expect_eq(e2e_json_int(k, "rss_peak_bytes"), e2e_json_int(k, "rss_sampled_max_bytes"));
	cr_expect(strstr(k, "\"exit\":null"), "%s", k);
	free(k);
	/* The text summary says so too. */
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/txt", dir);
	mkdir(sub, 0755);
	r = e2e_run(sub, e2e_path("bin/trace-dump"), "summary", out, NULL);
	cr_expect(strstr(r.out, "SAMPLED"), "%s", r.out);
	cr_expect(strstr(r.out, "tree total over time"), "%s", r.out);
	e2e_free(&r);
	free(json);
}

/* Item 5: over several traces, small and large rings, many threads and a tree, the peak shown
 * is never below the largest sample, and "exact" only when the interval is a point. */
Test(e2e_processes, the_peak_is_never_below_a_sample, .timeout = 300)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	const char *sizes[] = {"64K", "16M", "1G"};
	for (int i = 0; i < 3; i++) {
		struct e2e_run r = e2e_run(dir, TR, "-q", "--rss-interval", "5ms", "--buffer-size",
					   sizes[i], "-o", out, "--",
					   e2e_path("tests/prog_e2e_emit"), "8", "100000", NULL);
		cr_assert_eq(r.exit_code, 0, "%s", r.err);
		e2e_free(&r);
		char *json = e2e_summary_json(dir, out);
		int64_t low = e2e_json_int(json, "rss_peak_bytes");
		int64_t high = e2e_json_int(json, "rss_peak_high_bytes");
		cr_expect_geq(low, e2e_json_int(json, "rss_peak_sampled_bytes"), "%s: %s", sizes[i],
			      json);
		cr_expect_geq(high, low);
		if (e2e_json_int(json, "rss_peak_exact") == 1)
			cr_expect_eq(low, high);
		const char *p = strstr(json, "\"processes\":[");
		cr_assert(p);
		while ((p = strstr(p, "{\"pid\":")) != NULL) {
			cr_expect_geq(e2e_json_int_from(json, p, "rss_peak_bytes"),
				      e2e_json_int_from(json, p, "rss_sampled_max_bytes"), "%s", p);
			p++;
		}
		free(json);
	}
}

/* The text between `after` (and the spaces that follow it) and `until` in s: a copy to free, or
 * NULL. */
static char *text_between(const char *s, const char *after, const char *until)
{
	const char *a = s ? strstr(s, after) : NULL;
	if (!a)
		return NULL;
	a += strlen(after);
	while (*a == ' ')
		a++;
	const char *e = strstr(a, until);
	return e ? strndup(a, (size_t)(e - a)) : NULL;
}

/* trace-run's last line and trace-dump summary give the program the same peak, from the same
 * rule (peak.h): a program that is the big one itself, and a shell whose child is the
 * big one, where wait4's ru_maxrss is the child's and the shell's own VmHWM is the shell's.
 * There the line names the child (pid and command) and its own peak as well; for a tree of one
 * it names none. */
Test(e2e_processes, trace_run_says_the_peak_the_summary_says, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], script[512];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(script, sizeof(script), "%s 40 exit=50 >/dev/null; true", TOUCH);
	char *const cases[][8] = {
		{(char *)TR, "-o", out, "--", (char *)TOUCH, "40", "exit=50", NULL},
		{(char *)TR, "-o", out, "--", "sh", "-c", script, NULL},
	};
	for (int i = 0; i < 2; i++) {
		struct e2e_run r = e2e_runv(dir, cases[i]);
		cr_assert_eq(r.exit_code, 0, "%s", r.err);
		char *said = text_between(r.err, "peak RSS", " (trace buffers excluded");
		int code;
		char *summary = e2e_summary_text(dir, out, &code);
		cr_assert_eq(code, 0, "%s", summary);
		char *shown = text_between(summary, "\n  peak:", " (");
		cr_assert(said && shown, "trace-run: %s\nsummary: %s", r.err, summary);
		cr_expect_str_eq(said, shown, "case %d: trace-run %s, summary %s", i, said, shown);
		/* The figure is the program's: 40 MiB and more for the toucher, not for the
		 * shell (double: "40.3 MiB" or "1.8 MiB to 2.1 MiB", the low end first). */
		double low = strtod(said, NULL);
		const char *tree = strstr(r.err, "; pid ");
		int pid = 0;
		double reached = 0;
		if (tree)
			cr_assert_eq(sscanf(tree,
					    "; pid %d (prog_touch_mem) of its tree reached %lf",
					    &pid, &reached),
				     2, "%s", r.err);
		if (i == 0) {
			cr_expect(low >= 40.0 && strstr(said, "MiB"), "%s", said);
			cr_expect_null(tree, "a tree of one: %s", r.err);
		} else {
			cr_expect(low < 20.0 || !strstr(said, "MiB"), "the shell's: %s", said);
			/* The child's own peak, named, as the summary lists it. */
			char *json = e2e_summary_json(dir, out), q[300];
			snprintf(q, sizeof(q), "\"%s\",\"40\",\"exit=50\"]", TOUCH);
			char *child = process_obj(json, q);
			cr_assert(tree && child, "%s\n%s", r.err, json);
			cr_expect_eq(pid, e2e_json_int(child, "pid"), "%s", child);
			cr_expect_geq(reached, 40.0, "%s", r.err);
			cr_expect_leq(reached * 1048576.0,
				      (double)e2e_json_int(child, "rss_peak_high_bytes") + 52429.0,
				      "%s\n%s", r.err, child);
			free(child);
			free(json);
		}
		free(said);
		free(shown);
		free(summary);
		e2e_free(&r);
	}
}

/* The peak column of the summary's processes-table row of pid, as printed (the text between
 * the exit column and the source column): a copy to free, or NULL. */
static char *table_peak(const char *summary, int pid)
{
	const char *t = summary ? strstr(summary, "\nprocesses (") : NULL;
	char key[32];
	snprintf(key, sizeof(key), "\n  %8d ", pid);
	const char *row = t ? strstr(t, key) : NULL;
	if (!row || strlen(row) < 27)
		return NULL;
	const char *a = row + 27; /* "\n", pid, ppid and exit: 1 + 2 + 8 + 1 + 8 + 7 */
	while (*a == ' ')
		a++;
	const char *e = strstr(a, "  ");
	return e ? strndup(a, (size_t)(e - a)) : NULL;
}

/* trace-run's "pid N of its tree reached X" is the summary's row of pid N, to the byte: a
 * shell whose multi-threaded child peaks highest and exits with its threads still emitting, so
 * that its rings grow after its runtime wrote its exit record and its peak is a range raised to
 * its largest sample. Both take the same figures by one rule and print them alike. */
Test(e2e_processes, trace_run_names_the_tree_peak_the_summary_lists, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char out[256], script[512];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(script, sizeof(script), "%s 4 40 300 >/dev/null; true",
		 e2e_path("tests/prog_touch_threads"));
	for (int i = 0; i < 2; i++) {
		struct e2e_run r = e2e_run(dir, TR, "--rss-interval", "20ms", "-o", out, "--", "sh",
					   "-c", script, NULL);
		cr_assert_eq(r.exit_code, 0, "%s", r.err);
		const char *tree = strstr(r.err, "; pid ");
		int pid = 0;
		cr_assert(tree && sscanf(tree, "; pid %d (prog_touch_threads)", &pid) == 1, "%s",
			  r.err);
		char *said = text_between(tree, "of its tree reached", ")");
		int code;
		char *summary = e2e_summary_text(dir, out, &code);
		cr_assert_eq(code, 0, "%s", summary);
		char *row = table_peak(summary, pid);
		cr_assert(said && row, "trace-run: %s\nsummary: %s", r.err, summary);
		cr_expect_str_eq(said, row, "run %d: trace-run %s, summary %s\n%s", i, said, row,
				 summary);
		cr_expect_geq(strtod(row, NULL), 40.0, "%s", row);
		free(said);
		free(row);
		free(summary);
		e2e_free(&r);
	}
}

/* A vfork child's _exit writes nothing in its parent's name: the parent's own exit record is
 * its own (its 8 MiB, its exit(6)), the child's status is not taken for the parent's. */
Test(e2e_processes, a_vfork_child_writes_no_record_for_its_parent, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "-o", out, "--", e2e_path("tests/prog_vfork_exit"), NULL);
	cr_assert_eq(r.exit_code, 6, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/ev", dir);
	mkdir(sub, 0755);
	r = e2e_run(sub, e2e_path("bin/trace-dump"), "events", out, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	int self = 0;
	for (const char *p = r.out; (p = strstr(p, " exit pid=")) != NULL; p++) {
		const char *eol = strchr(p, '\n');
		const char *f = strstr(p, " flags=");
		bool is_self = f && f < eol && (strtoul(f + 7, NULL, 10) & TRC_EXIT_SELF);
		if (!is_self)
			continue;
		self++;
		/* Its own, with the code exit() was called with (the exit hook). */
		cr_expect(strstr(p, " status=1536 ") && strstr(p, " status=1536 ") < eol, "%.*s",
			  (int)(eol - p), p);
		/* SELF | STATUS | BUFFERS_PEAK */
		cr_expect(strstr(p, " flags=7") && strstr(p, " flags=7") < eol, "%.*s",
			  (int)(eol - p), p);
		cr_expect_geq(strtoull(strstr(p, "maxrss_bytes=") + 13, NULL, 10), 8u << 20, "%.*s",
			      (int)(eol - p), p);
	}
	cr_expect_eq(self, 1, "one record of the program's own: %s", r.out);
	e2e_free(&r);
}

/* The value after "key=" on the line at p, or UINT64_MAX. */
static uint64_t line_u64(const char *p, const char *key)
{
	const char *eol = strchr(p, '\n');
	const char *k = strstr(p, key);
	if (!k || (eol && k > eol))
		return UINT64_MAX;
	return strtoull(k + strlen(key), NULL, 10);
}

/* A thread that claims a ring (beside main's: main-first) and exits while main lives on: its
 * ring is freed, so neither the
 * samples taken after it (main sleeps 300 ms, sampled every 20 ms) nor the share at exit see it,
 * though it was resident beside main's. Both exit records carry the most the buffers held at
 * once (flag BUFFERS_PEAK): the last sample's share plus that ring's first 64 KiB, exactly (10
 * events never grow it). Before, they carried the share at exit, and the peak's low end could
 * be what the program had plus a ring of buffers. */
Test(e2e_processes, exit_records_carry_the_buffers_peak_a_freed_ring_included, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], sub[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--rss-interval", "20ms", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "1", "10", "sleep", "300",
				   "main-first", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	snprintf(sub, sizeof(sub), "%s/ev", dir);
	mkdir(sub, 0755);
	r = e2e_run(sub, e2e_path("bin/trace-dump"), "events", out, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	uint64_t last_sample = UINT64_MAX, self = UINT64_MAX, run = UINT64_MAX;
	uint64_t self_flags = 0, run_flags = 0;
	for (const char *p = r.out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		const char *eol = strchr(p, '\n');
		const char *rss = strstr(p, " rss rss ");
		const char *ex = strstr(p, " meta exit ");
		if (rss && (!eol || rss < eol)) {
			last_sample = line_u64(p, " buffers_bytes=");
		} else if (ex && (!eol || ex < eol)) {
			uint64_t flags = line_u64(p, " flags=");
			if (flags & TRC_EXIT_SELF) {
				self = line_u64(p, " buffers_bytes=");
				self_flags = flags;
			} else {
				run = line_u64(p, " buffers_bytes=");
				run_flags = flags;
			}
		}
	}
	cr_assert_neq(last_sample, UINT64_MAX, "no sample: %s", r.out);
	cr_assert_neq(self, UINT64_MAX, "no exit record of the program's own: %s", r.out);
	cr_assert_neq(run, UINT64_MAX, "no exit record of trace-run's: %s", r.out);
	cr_expect(self_flags & TRC_EXIT_BUFFERS_PEAK, "flags %lu", (unsigned long)self_flags);
	cr_expect(run_flags & TRC_EXIT_BUFFERS_PEAK, "flags %lu", (unsigned long)run_flags);
	cr_expect_eq(self, last_sample + TRC_RING_PREFAULT_BYTES, "%lu = %lu + 64 KiB? %s",
		     (unsigned long)self, (unsigned long)last_sample, r.out);
	cr_expect_eq(run, self, "trace-run's record takes the program's count");
	e2e_free(&r);
}
