/* test_dump_multi.c - commands given several FILEs: records of traces from different hosts
 * merged on CLOCK_REALTIME (each file's anchor), labelled by host and trace (dump_multi.c).
 *
 * Two tiny traces with hand-picked clocks: "alpha" starts at real time R (monotonic 1 s),
 * "beta" 200 ns later (monotonic 5 s). alpha's instants a1, a2 are at R+100 and R+300 ns,
 * beta's b1, b2 at R+200 and R+350 ns, so the merged order is a1 b1 a2 b2, although beta's
 * monotonic times are 4 s later than alpha's.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <sys/wait.h>

#include "test_trcfile_util.h"

#define TDM_R 1700000000000000000ull

/* A trace of host `host` whose recording started at real time TDM_R + rt_off and monotonic
 * time mono0, with instants named names[i] at mono0 + at[i]. */
static void tdm_write(const char *path, const char *host, uint64_t rt_off, uint64_t mono0,
		      const char *const *names, const uint64_t *at, unsigned n)
{
	struct trcfile_header_info h = tu_header();
	h.host = host;
	h.start_mono_ns = mono0;
	h.start_realtime_ns = TDM_R + rt_off;
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *meta = trcfile_stream_open(w, TRC_STREAM_META, 7, 0);
	struct trcfile_stream *th = trcfile_stream_open(w, TRC_STREAM_THREAD, 7, 8);
	for (unsigned i = 0; i < n; i++) {
		struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = mono0};
		r.name.id = i + 1;
		r.name.str = names[i];
		r.name.len = (uint32_t)strlen(names[i]);
		cr_assert_eq(trcfile_stream_append(meta, &r), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = mono0 + at[i]};
		r.value.name_id = i + 1;
		r.value.value = (int64_t)i;
		cr_assert_eq(trcfile_stream_append(th, &r), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
}

static char *tdm_run(const char *dir, const char *const *args, int *status)
{
	char exe[512], outf[400];
	const char *b = getenv("TRC_BUILD");
	snprintf(exe, sizeof(exe), "%s/bin/trace-dump", b && *b ? b : "build");
	snprintf(outf, sizeof(outf), "%s/out", dir);
	const char *argv[16] = {exe};
	int n = 1;
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0)
			_exit(99);
		dup2(o, 1);
		char errf[420];
		snprintf(errf, sizeof(errf), "%s/err", dir);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (e < 0)
			_exit(99);
		dup2(e, 2);
		execv(argv[0], (char **)argv);
		_exit(98);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	size_t len;
	uint8_t *o = tu_read_file(outf, &len);
	char *s = realloc(o, len + 1);
	s[len] = 0;
	return s;
}

static void tdm_two(const char *dir, char *a, char *b, size_t len)
{
	snprintf(a, len, "%s/a.trc", dir);
	snprintf(b, len, "%s/b.trc", dir);
	tdm_write(a, "alpha Linux 6.1", 0, 1000000000ull, (const char *const[]){"a1", "a2"},
		  (const uint64_t[]){100, 300}, 2);
	tdm_write(b, "beta Linux 6.1", 200, 5000000000ull, (const char *const[]){"b1", "b2"},
		  (const uint64_t[]){0, 150}, 2);
}

Test(dump_multi, events_merge_on_realtime_with_labels, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	tdm_two(dir, a, b, sizeof(a));
	int st;
	/* The order of the FILEs does not matter; time does. */
	char *out = tdm_run(dir, (const char *const[]){"events", b, a, NULL}, &st);
	cr_assert_eq(st, 0);
	static const char *const want[] = {
		"0.000000100 alpha a.trc 7/8 instant name=\"a1\"",
		"0.000000200 beta b.trc 7/8 instant name=\"b1\"",
		"0.000000300 alpha a.trc 7/8 instant name=\"a2\"",
		"0.000000350 beta b.trc 7/8 instant name=\"b2\"",
	};
	const char *p = out;
	for (size_t i = 0; i < 4; i++) {
		const char *q = strstr(p, want[i]);
		cr_assert_not_null(q, "\"%s\" missing or out of order in:\n%s", want[i], out);
		p = q + 1;
	}
	free(out);
	/* --from and --to count from the earliest start (alpha's). */
	out = tdm_run(
		dir,
		(const char *const[]){"events", "--from", "150ns", "--to", "320ns", a, b, NULL},
		&st);
	cr_assert_eq(st, 0);
	cr_expect_not_null(strstr(out, "name=\"b1\""), "%s", out);
	cr_expect_not_null(strstr(out, "name=\"a2\""), "%s", out);
	cr_expect_null(strstr(out, "name=\"a1\""), "%s", out);
	cr_expect_null(strstr(out, "name=\"b2\""), "%s", out);
	free(out);
	tu_rm_rf(dir);
}

/* Records at the same real time come in the order the FILEs were given (dump_common.h): both
 * traces' instants at R+100 ns, the files given one way and then the other. */
Test(dump_multi, ties_go_to_the_file_given_first, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	snprintf(a, sizeof(a), "%s/a.trc", dir);
	snprintf(b, sizeof(b), "%s/b.trc", dir);
	tdm_write(a, "alpha Linux 6.1", 0, 1000000000ull, (const char *const[]){"a1"},
		  (const uint64_t[]){100}, 1);
	tdm_write(b, "beta Linux 6.1", 50, 5000000000ull, (const char *const[]){"b1"},
		  (const uint64_t[]){50}, 1);
	for (int way = 0; way < 2; way++) {
		int st;
		char *out = tdm_run(
			dir, (const char *const[]){"events", way ? b : a, way ? a : b, NULL}, &st);
		cr_assert_eq(st, 0);
		const char *x = strstr(out, "name=\"a1\""), *y = strstr(out, "name=\"b1\"");
		cr_assert(x && y, "%s", out);
		cr_assert(way ? y < x : x < y, "given %s first:\n%s", way ? "b" : "a", out);
		free(out);
	}
	tu_rm_rf(dir);
}

Test(dump_multi, chrome_merges_on_realtime_with_a_pid_range_per_trace, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	tdm_two(dir, a, b, sizeof(a));
	int st;
	char *out = tdm_run(dir, (const char *const[]){"chrome", a, b, NULL}, &st);
	cr_assert_eq(st, 0);
	/* trace 1 (a) shows pid 7 as 10000007, trace 2 (b) as 20000007; times in us from
	 * alpha's start, the earliest. */
	static const char *const want[] = {
		"{\"ph\":\"i\",\"pid\":10000007,\"tid\":8,\"ts\":0.100,\"name\":\"a1\"",
		"{\"ph\":\"i\",\"pid\":20000007,\"tid\":8,\"ts\":0.200,\"name\":\"b1\"",
		"{\"ph\":\"i\",\"pid\":10000007,\"tid\":8,\"ts\":0.300,\"name\":\"a2\"",
		"{\"ph\":\"i\",\"pid\":20000007,\"tid\":8,\"ts\":0.350,\"name\":\"b2\"",
		("\"otherData\":{\"traces\":[{\"host\":\"alpha\",\"trace\":\"a.trc\",\"pid_offset\":"
		 "10000000,\"start_realtime_ns\":1700000000000000000,"),
	};
	const char *p = out;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *q = strstr(p, want[i]);
		cr_assert_not_null(q, "\"%s\" missing or out of order in:\n%s", want[i], out);
		p = q + 1;
	}
	free(out);
	tu_rm_rf(dir);
}

Test(dump_multi, summary_per_trace_in_realtime_order_with_totals, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	tdm_two(dir, a, b, sizeof(a));
	int st;
	char *out = tdm_run(dir, (const char *const[]){"summary", "--json", b, a, NULL}, &st);
	cr_assert_eq(st, 0);
	/* alpha started first (real time R), beta 200 ns later, whatever the order given. */
	static const char *const want[] = {
		"{\"traces\":[\n{\"host\":\"alpha\",\"trace\":\"a.trc\",\"start_realtime_ns\":"
		"1700000000000000000,\"start_offset_ns\":0,\"summary\":{\"format_version\":\"1.4\"",
		",{\"host\":\"beta\",\"trace\":\"b.trc\",\"start_realtime_ns\":1700000000000000200,"
		"\"start_offset_ns\":200,\"summary\":{",
		"],\"traces_count\":2,",
		"\"events_recorded\":4,\"events_lost\":0}\n",
	};
	const char *p = out;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *q = strstr(p, want[i]);
		cr_assert_not_null(q, "\"%s\" missing or out of order in:\n%s", want[i], out);
		p = q + 1;
	}
	free(out);
	out = tdm_run(dir, (const char *const[]){"summary", b, a, NULL}, &st);
	cr_assert_eq(st, 0);
	const char *x = strstr(out, "== alpha a.trc (started 0 ns after the first) ==\n");
	const char *y = strstr(out, "== beta b.trc (started 200 ns after the first) ==\n");
	cr_expect(x && y && x < y, "%s", out);
	cr_expect_not_null(strstr(out, "\n== 2 traces: 4 events recorded, 0 lost, "), "%s", out);
	free(out);
	tu_rm_rf(dir);
}

/* Each trace's part of a multi-file summary is that trace's own summary, every key: what made
 * RSS grow (`memory`) and the function table included (both were empty when several FILEs
 * were given). Two real recordings: prog_demo (allocations, RSS growth) and prog_finst_calls
 * (function calls). Text likewise: each trace's section is its own summary's text. */
Test(dump_multi, summary_per_trace_is_that_traces_own_summary, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char b[PATH_MAX]; /* absolute: the commands below run in dir */
	cr_assert_not_null(realpath(tu_build(), b));
	cr_assert_eq(tu_sh("%s/bin/trace-run -q -o %s/d.trc -- %s/tests/prog_demo >/dev/null", b,
			   dir, b),
		     0);
	cr_assert_eq(tu_sh("%s/bin/trace-run -q -o %s/f.trc -- %s/tests/prog_finst_calls 12 "
			   ">/dev/null",
			   b, dir, b),
		     0);
	int st = tu_sh(
		"cd %s && %s/bin/trace-dump summary --json d.trc f.trc >multi.json && "
		"%s/bin/trace-dump summary --json d.trc >d.json && "
		"%s/bin/trace-dump summary --json f.trc >f.json && python3 -c '"
		"import json\n"
		"m = json.load(open(\"multi.json\"))\n"
		"own = {n: json.load(open(n[0] + \".json\")) for n in (\"d.trc\", \"f.trc\")}\n"
		"assert [t[\"trace\"] for t in m[\"traces\"]] == [\"d.trc\", \"f.trc\"]\n"
		"for t in m[\"traces\"]:\n"
		"    s = own[t[\"trace\"]]\n"
		"    diff = [k for k in set(s) | set(t[\"summary\"]) "
		"if s.get(k) != t[\"summary\"].get(k)]\n"
		"    assert not diff, (t[\"trace\"], diff)\n"
		/* Under ASan its allocator, not the preload, serves prog_demo: no allocation
		 * records, no growth to explain (the plain tier checks it). */
		"d = own[\"d.trc\"]\n"
		"assert d[\"memory\"] or d[\"allocs\"] == 0, \"no RSS growth in prog_demo\"\n"
		"assert own[\"f.trc\"][\"functions\"], \"no functions in prog_finst_calls\"\n"
		"' >&2",
		dir, b, b, b);
	cr_assert_eq(st, 0, "multi-file summary --json differs from the traces' own (above)");
	st = tu_sh(
		"cd %s && %s/bin/trace-dump summary d.trc f.trc >multi.txt && "
		"%s/bin/trace-dump summary d.trc >d.txt && %s/bin/trace-dump summary f.trc >f.txt "
		"&& grep -q '^functions' multi.txt && "
		"[ $(grep -c '^RSS growth' multi.txt) = $(cat d.txt f.txt | grep -c '^RSS growth') "
		"]"
		" && [ $(grep -c '^functions' multi.txt) = "
		"$(cat d.txt f.txt | grep -c '^functions') ]",
		dir, b, b, b);
	cr_assert_eq(st, 0, "multi-file summary text lacks a section of the traces' own");
	tu_rm_rf(dir);
}

/* A header whose start_realtime_ns (the file's word) puts its records past CLOCK_REALTIME's
 * int64 range: merging it with another trace is refused with one line naming the file
 * (exit 1), by every command that merges, instead of adding past INT64_MAX (undefined: the
 * sanitizer tier aborts) and misordering. Below 2^63 by 100 ns: the start fits, the records
 * at +0 and +150 ns end past it; then 2^64 - 1: the anchor itself does not fit. */
Test(dump_multi, realtime_start_past_the_int64_range_is_refused_naming_the_file, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	snprintf(a, sizeof(a), "%s/a.trc", dir);
	snprintf(b, sizeof(b), "%s/b.trc", dir);
	tdm_write(a, "alpha Linux 6.1", 0, 1000000000ull, (const char *const[]){"a1", "a2"},
		  (const uint64_t[]){100, 300}, 2);
	static const uint64_t rt_offs[] = {(1ull << 63) - 100 - TDM_R, UINT64_MAX - TDM_R};
	static const char *const cmds[] = {"events", "summary", "chrome", "perfetto"};
	for (size_t k = 0; k < 2; k++) {
		tdm_write(b, "beta Linux 6.1", rt_offs[k], 5000000000ull,
			  (const char *const[]){"b1", "b2"}, (const uint64_t[]){0, 150}, 2);
		char want[600];
		snprintf(want, sizeof(want),
			 "trace-dump: %s: start_realtime_ns %llu and start_mono_ns 5000000000 put "
			 "its records outside CLOCK_REALTIME's range (0 to 2^63 ns): it cannot be "
			 "merged with other traces\n",
			 b, (unsigned long long)(TDM_R + rt_offs[k]));
		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			char out[400];
			snprintf(out, sizeof(out), "%s/o.pftrace", dir);
			int st;
			const char *args[] = {cmds[c], a, b, NULL, NULL, NULL};
			if (!strcmp(cmds[c], "perfetto"))
				args[3] = "-o", args[4] = out;
			free(tdm_run(dir, args, &st));
			char *err = tu_slurp_text(dir, "err");
			cr_expect_eq(st, 1, "%s: exit %d: %s", cmds[c], st, err);
			cr_expect_str_eq(err, want, "%s: %s", cmds[c], err);
			free(err);
		}
	}
	/* The same file alone is not merged: events reads it (its own times) */
	int st;
	free(tdm_run(dir, (const char *const[]){"events", b, NULL}, &st));
	cr_expect_eq(st, 0);
	/* Parquet puts every time on CLOCK_REALTIME, alone or with others: refused, said once. */
	char tables[400], want[600];
	snprintf(tables, sizeof(tables), "%s/tables", dir);
	snprintf(want, sizeof(want),
		 "trace-dump: %s: start_realtime_ns %llu and start_mono_ns 5000000000 put its "
		 "records outside CLOCK_REALTIME's range (0 to 2^63 ns)\n",
		 b, (unsigned long long)(TDM_R + rt_offs[1]));
	free(tdm_run(dir, (const char *const[]){"parquet", "-o", tables, b, NULL}, &st));
	char *err = tu_slurp_text(dir, "err");
	cr_expect_eq(st, 1, "parquet: exit %d: %s", st, err);
	cr_expect_str_eq(err, want);
	free(err);
	tu_rm_rf(dir);
}
