/* test_dump.c - trace-dump, the built command, on traces made with the writer.
 *
 * Golden outputs (tests/golden/) for summary (text and --json) and events on the small fixed
 * trace of test_trcfile_util.h; chrome checked by Python's json module (a strict parser)
 * plus balance and content checks; rss CSV; filters; help and usage errors; bad and
 * truncated files; output errors (closed pipe, full disk); control bytes, DEL and broken
 * UTF-8 escaped in text and JSON; chrome's live heap and RSS on the process they belong to;
 * the exact offsets events names when --from leaves no record.
 *
 * The binary is $TRC_BUILD/bin/trace-dump (make test sets TRC_BUILD to build or
 * build/asan), default build/bin/trace-dump. TRC_UPDATE_GOLDEN=1 rewrites the golden files
 * instead of comparing (then review the diff).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>

#include "cli_version.h"
#include "test_trcfile_util.h"

struct td_run {
	int status; /* exit status, or 128 + signal */
	char *out, *err;
	size_t out_len;
};

static const char *td_dump(void)
{
	static char path[512];
	const char *b = getenv("TRC_BUILD");
	snprintf(path, sizeof(path), "%s/bin/trace-dump", b && *b ? b : "build");
	cr_assert_eq(access(path, X_OK), 0, "%s not built", path);
	return path;
}

static char *td_slurp(const char *path, size_t *len)
{
	size_t n = 0;
	uint8_t *b = tu_read_file(path, &n);
	char *s = realloc(b, n + 1);
	s[n] = 0;
	if (len)
		*len = n;
	return s;
}

/* Runs trace-dump with args; stdout to out_path (or a file in dir), stderr captured. */
static struct td_run td_run_to(const char *dir, const char *out_path, const char *const *args)
{
	char outf[400], errf[400];
	snprintf(outf, sizeof(outf), "%s/stdout", dir);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	const char *argv[32];
	int n = 0;
	argv[n++] = td_dump();
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(out_path ? out_path : outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(99);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char **)argv);
		_exit(98);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	struct td_run r = {0};
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = out_path ? strdup("") : td_slurp(outf, &r.out_len);
	r.err = td_slurp(errf, NULL);
	return r;
}

static struct td_run td_run(const char *dir, const char *const *args)
{
	return td_run_to(dir, NULL, args);
}

static void td_free(struct td_run *r)
{
	free(r->out);
	free(r->err);
}

/* The small fixed trace, written into dir/small.trc. */
static void td_small(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/small.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 3), 0);
	tu_plan_free(&p);
}

static void td_golden(const char *name, const char *got, size_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "tests/golden/%s", name);
	const char *upd = getenv("TRC_UPDATE_GOLDEN");
	if (upd && *upd && strcmp(upd, "0")) {
		tu_write_file(path, got, len);
		return;
	}
	size_t wlen = 0;
	char *want = td_slurp(path, &wlen);
	if (wlen != len || memcmp(want, got, len) != 0) {
		/* Show the first differing line. */
		size_t i = 0, line = 1, ls = 0;
		while (i < len && i < wlen && got[i] == want[i]) {
			if (got[i] == '\n') {
				line++;
				ls = i + 1;
			}
			i++;
		}
		cr_assert_fail("%s differs from the golden file at line %zu:\n got: %.120s\nwant: "
			       "%.120s\n(TRC_UPDATE_GOLDEN=1 rewrites it)",
			       path, line, got + ls, want + (ls < wlen ? ls : wlen));
	}
	free(want);
}

Test(dump, golden_summary_text, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	struct td_run r = td_run(dir, (const char *const[]){"summary", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* The function table names the one function from its module's file, which is not here:
	 * said once. */
	cr_assert_str_eq(r.err, "trace-dump: /usr/bin/prog: the file is gone: its functions show "
				"as module+offset\n");
	td_golden("summary.txt", r.out, r.out_len);
	td_free(&r);
	/* summary is the default command */
	r = td_run(dir, (const char *const[]){trc, NULL});
	cr_assert_eq(r.status, 0);
	td_golden("summary.txt", r.out, r.out_len);
	td_free(&r);
	tu_rm_rf(dir);
}

Test(dump, golden_summary_json, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	struct td_run r = td_run(dir, (const char *const[]){"summary", "--json", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	td_golden("summary.json", r.out, r.out_len);
	/* The documented keys with the values the small trace must give. */
	static const char *const want[] = {
		"\"duration_ns\":5000,",
		"\"events_recorded\":23,",
		"\"events_lost\":7,",
		"\"rss_peak_bytes\":10485760,",
		"\"rss_peak_sampled_bytes\":9437184,",
		"\"rss_samples\":5,",
		"\"buffers_resident_peak_bytes\":131072,",
		"\"truncated\":false,",
		("{\"pid\":4242,\"tid\":4243,\"name\":\"worker \\\"1\\\"\",\"events\":4,\"lost\":7,"
		 "\"waits\":0,\"waited_ns\":0,\"alloc_bytes\":4096}"),
		("\"live_end_bytes\":4352,\"live_by_process\":[{\"pid\":4242,\"allocs\":4,"
		 "\"alloc_bytes\":4544,\"live_peak_bytes\":4480,\"live_end_bytes\":4352,"
		 "\"exited\":true}]"),
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(r.out, want[i]), "missing %s in %s", want[i], r.out);
	td_free(&r);
	/* A strict parser accepts it. */
	char cmd[600];
	snprintf(cmd, sizeof(cmd),
		 "%s summary --json '%s' | python3 -c 'import json,sys; "
		 "d=json.loads(sys.stdin.buffer.read().decode(\"utf-8\")); "
		 "assert d[\"threads\"][0][\"name\"]==\"main\"; assert d[\"command\"][2]==\"arg "
		 "with space\"'",
		 td_dump(), trc);
	cr_assert_eq(system(cmd), 0);
	tu_rm_rf(dir);
}

/* Heaps are per process (issue 14 item 5): a forked child (pid 4300) reuses its parent's
 * address A for an allocation of its own and frees it, allocates 2000 at B and exits; then
 * the parent allocates 300. The parent's 1000 at A stays live (one map per process), the
 * child's 2000 leaves the tree's live bytes at its exit, and live at end is the parent's.
 * One map for all would give live at end 2300 and peak 2500. */
Test(dump, live_bytes_are_per_process, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4300, 4300);
	const uint64_t t0 = 1000000000ull;
	struct trc_record r;
	/* stream 1: the parent's thread, 2: the child's; A = 0x...1000, B = 0x...2000 */
	static const struct {
		int st;
		uint32_t type;
		uint64_t dt, addr, size;
	} ev[] = {
		{1, TRC_REC_ALLOC, 100, 0x7f0000001000ull, 1000},
		{2, TRC_REC_ALLOC, 200, 0x7f0000001000ull, 500},
		{2, TRC_REC_ALLOC, 300, 0x7f0000002000ull, 2000},
		{2, TRC_REC_FREE, 400, 0x7f0000001000ull, 0},
		{1, TRC_REC_ALLOC, 600, 0x7f0000003000ull, 300},
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		r = (struct trc_record){.type = ev[i].type, .ts_ns = t0 + ev[i].dt};
		r.alloc.addr = ev[i].addr;
		r.alloc.size = ev[i].size;
		tu_add(&p.streams[ev[i].st], &r);
	}
	r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = t0 + 500};
	r.exit.pid = 4300;
	tu_add(&p.streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = t0 + 700};
	r.exit.pid = 4242;
	tu_add(&p.streams[0], &r);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);
	struct td_run q = td_run(dir, (const char *const[]){"summary", "--json", trc, NULL});
	cr_assert_eq(q.status, 0, "%s", q.err);
	static const char *const want[] = {
		("\"live_peak_bytes\":3500,\"live_end_bytes\":1300,\"live_by_process\":["
		 "{\"pid\":4242,\"allocs\":2,\"alloc_bytes\":1300,\"live_peak_bytes\":1300,"
		 "\"live_end_bytes\":1300,\"exited\":true},"
		 "{\"pid\":4300,\"allocs\":2,\"alloc_bytes\":2500,\"live_peak_bytes\":2500,"
		 "\"live_end_bytes\":2000,\"exited\":true}]"),
		"\"free_bytes\":500,",
		("{\"pid\":4300,\"tid\":4300,\"name\":\"tid 4300\",\"events\":3,\"lost\":0,"
		 "\"waits\":0,\"waited_ns\":0,\"alloc_bytes\":2500}"),
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(q.out, want[i]), "missing %s in %s", want[i], q.out);
	td_free(&q);
	q = td_run(dir, (const char *const[]){"summary", trc, NULL});
	cr_assert_eq(q.status, 0, "%s", q.err);
	cr_expect(strstr(q.out, "      4300          2      2.4 KiB      2.4 KiB        2.0 KiB\n"),
		  "%s", q.out);
	cr_expect(strstr(q.out, "      4300     4300  tid 4300                        3          "
				"0      2.4 KiB\n"),
		  "%s", q.out);
	td_free(&q);
	tu_rm_rf(dir);
}

Test(dump, golden_events, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	struct td_run r = td_run(dir, (const char *const[]){"events", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	td_golden("events.txt", r.out, r.out_len);
	td_free(&r);
	tu_rm_rf(dir);
}

static size_t td_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(dump, events_filters, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	struct td_run r =
		td_run(dir, (const char *const[]){"events", "--thread", "4243", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(td_lines(r.out), 5, "%s", r.out);
	cr_assert(strstr(r.out, "0.000003100 4242/4243 span_end name=\"compute\"\n"), "%s", r.out);
	td_free(&r);
	r = td_run(dir, (const char *const[]){"events", "--thread", "4242/4242", "--thread",
					      "1/4243", trc, NULL});
	cr_assert_eq(r.status, 0);
	cr_assert_eq(td_lines(r.out), 19);
	td_free(&r);
	r = td_run(dir, (const char *const[]){"events", "--name", "parse", trc, NULL});
	cr_assert_eq(td_lines(r.out), 6, "%s", r.out);
	td_free(&r);
	r = td_run(dir,
		   (const char *const[]){"events", "--from", "2us", "--to", "3.03us", trc, NULL});
	cr_assert_eq(r.status, 0);
	cr_assert(strncmp(r.out, "0.000002000 ", 12) == 0, "%s", r.out);
	cr_assert(strstr(r.out, "0.000003025 4242/4242 func_exit"), "%s", r.out);
	cr_assert_null(strstr(r.out, "0.000003032"), "%s", r.out);
	cr_assert_null(strstr(r.out, "0.000001"), "%s", r.out);
	td_free(&r);
	r = td_run(dir, (const char *const[]){"events", "--from", "1d", trc, NULL});
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--from"), "%s", r.err);
	td_free(&r);
	r = td_run(dir, (const char *const[]){"events", "--thread", "x/1", trc, NULL});
	cr_assert_eq(r.status, 2);
	td_free(&r);
	tu_rm_rf(dir);
}

/* trace-dump's usage errors are one line, exactly; stdout stays empty. */
static void td_expect_usage(const char *dir, const char *const *args, const char *want_err)
{
	struct td_run r = td_run(dir, args);
	cr_expect_eq(r.status, 2, "%s: status %d, stderr: %s", args[0], r.status, r.err);
	cr_expect_str_eq(r.err, want_err);
	cr_expect_str_empty(r.out, "%s", r.out);
	td_free(&r);
}

/* Runs args, which must succeed; returns its stdout (free it); *err gets its stderr. */
static char *td_ok(const char *dir, const char *const *args, char **err)
{
	struct td_run r = td_run(dir, args);
	cr_assert_eq(r.status, 0, "%s: status %d, stderr: %s", args[0], r.status, r.err);
	if (err)
		*err = r.err;
	else
		free(r.err);
	return r.out;
}

/* Issue 13: every number trace-dump reads from its command line refuses 2^64
 * (18446744073709551616) and a sign after spaces (" -1", which strtoull would negate into
 * 2^64 - 1) with its usage error, never wraps them into a value. */
Test(dump, numbers_past_64_bits_are_refused, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], out[400];
	td_small(dir, trc, sizeof(trc));
	snprintf(out, sizeof(out), "%s/out", dir);
	static const char big[] = "18446744073709551616";
	td_expect_usage(dir, (const char *const[]){"events", "--thread", big, trc, NULL},
			"trace-dump events: --thread: expected TID or PID/TID, got "
			"\"18446744073709551616\" (see trace-dump events --help)\n");
	td_expect_usage(
		dir,
		(const char *const[]){"events", "--thread", "1/18446744073709551616", trc, NULL},
		"trace-dump events: --thread: expected TID or PID/TID, got "
		"\"1/18446744073709551616\" (see trace-dump events --help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--thread", "4294967296", trc, NULL},
			"trace-dump events: --thread: expected TID or PID/TID, got "
			"\"4294967296\" (see trace-dump events --help)\n");
	td_expect_usage(
		dir, (const char *const[]){"events", "--from", "18446744073709551616ns", trc, NULL},
		"trace-dump events: --from: invalid duration \"18446744073709551616ns\": "
		"too large; accepted: 0s to 5124095h, with a unit (ns, us, ms, s, m, h) "
		"(see trace-dump events --help)\n");
	td_expect_usage(dir,
			(const char *const[]){"compact", "--threads", big, "-o", out, trc, NULL},
			"trace-dump compact: --threads: invalid value \"18446744073709551616\" "
			"(expected 1 to 64) (see trace-dump compact --help)\n");
	td_expect_usage(
		dir,
		(const char *const[]){"parquet", "--rows-per-group", big, "-o", out, trc, NULL},
		"trace-dump parquet: --rows-per-group wants a count from 1 to 16777216, not "
		"\"18446744073709551616\" (see trace-dump parquet --help)\n");
	static const char *const sizes[] = {big, " -1", "18446744073709551615K"};
	for (size_t i = 0; i < 3; i++) {
		char want[300];
		snprintf(want, sizeof(want),
			 "trace-dump chrome: --split-size: invalid size \"%s\" (expected 1M or "
			 "more: 64M, 1G) (see trace-dump chrome --help)\n",
			 sizes[i]);
		td_expect_usage(dir,
				(const char *const[]){"chrome", "--split-size", sizes[i], "-o", out,
						      trc, NULL},
				want);
	}
	tu_rm_rf(dir);
}

Test(dump, events_durations_need_a_unit, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	td_expect_usage(dir, (const char *const[]){"events", "--from", "100", trc, NULL},
			"trace-dump events: --from: \"100\" has no unit; write 100ns, 100us, 100ms "
			"or 100s (see trace-dump events --help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--to", "0.5", trc, NULL},
			"trace-dump events: --to: \"0.5\" has no unit; write 0.5us, 0.5ms or 0.5s "
			"(see trace-dump events --help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--to=3", trc, NULL},
			"trace-dump events: --to: \"3\" has no unit; write 3ns, 3us, 3ms or 3s "
			"(see trace-dump events --help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--from", "-1us", trc, NULL},
			"trace-dump events: --from: invalid duration \"-1us\": negative; accepted: "
			"0s to 5124095h, with a unit (ns, us, ms, s, m, h) (see trace-dump events "
			"--help)\n");
	td_expect_usage(
		dir, (const char *const[]){"events", "--from", "1.5ps", trc, NULL},
		"trace-dump events: --from: invalid duration \"1.5ps\": unknown unit; "
		"accepted: 0s to 5124095h, with a unit (ns, us, ms, s, m, h) (see trace-dump "
		"events --help)\n");
	/* Exact decimal: 3.025us is 3025 ns, not 3024.999... */
	char *all = td_ok(dir, (const char *const[]){"events", trc, NULL}, NULL);
	char *out =
		td_ok(dir, (const char *const[]){"events", "--from", "3.025us", trc, NULL}, NULL);
	cr_expect(strncmp(out, "0.000003025 4242/4242 func_exit", 31) == 0, "%s", out);
	free(out);
	/* Minutes and hours: --to 1h and --to 0.5m hold the whole (5 us) trace. */
	out = td_ok(dir, (const char *const[]){"events", "--to", "1h", trc, NULL}, NULL);
	cr_expect_str_eq(out, all);
	free(out);
	out = td_ok(dir,
		    (const char *const[]){"events", "--from", "0ns", "--to", "0.5m", trc, NULL},
		    NULL);
	cr_expect_str_eq(out, all);
	free(out);
	free(all);
	tu_rm_rf(dir);
}

Test(dump, events_reversed_range_is_a_usage_error, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	td_expect_usage(
		dir, (const char *const[]){"events", "--from", "20ms", "--to", "10ms", trc, NULL},
		"trace-dump events: --from 20ms is after --to 10ms: the range is empty (see "
		"trace-dump events --help)\n");
	td_expect_usage(
		dir, (const char *const[]){"events", "--to", "1us", "--from", "1001ns", trc, NULL},
		"trace-dump events: --from 1001ns is after --to 1us: the range is empty (see "
		"trace-dump events --help)\n");
	/* A one-instant range is not reversed: the records at exactly 2us. */
	char *err;
	char *out = td_ok(
		dir, (const char *const[]){"events", "--from", "2us", "--to", "2000ns", trc, NULL},
		&err);
	cr_expect_str_eq(out,
			 "0.000002000 rss rss pid=4242 program_bytes=9437184 rss_bytes=9502720 "
			 "buffers_bytes=65536 source=status hwm_bytes=9437184 "
			 "anon_bytes=4718592 file_bytes=4718592 shmem_bytes=65536 "
			 "read_ns=1502\n");
	cr_expect_str_empty(err);
	free(out);
	free(err);
	tu_rm_rf(dir);
}

Test(dump, events_that_match_nothing_say_so, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], want[800];
	char *err, *out;
	td_small(dir, trc, sizeof(trc));

	/* A --thread of no thread in the file: nothing printed, one line, exit 0. */
	out = td_ok(dir, (const char *const[]){"events", "--thread", "1", trc, NULL}, &err);
	cr_expect_str_empty(out);
	snprintf(want, sizeof(want),
		 "trace-dump events: no thread in %s matches --thread 1 (its threads: 4242/4242, "
		 "4242/4243)\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	/* One of several matching nothing is worth the same line; the others still print. */
	out = td_ok(dir,
		    (const char *const[]){"events", "--thread", "4243", "--thread", "4242/99",
					  "--thread", "7", trc, NULL},
		    &err);
	cr_expect_eq(td_lines(out), 5, "%s", out);
	snprintf(want, sizeof(want),
		 "trace-dump events: no thread in %s matches --thread 4242/99 or --thread 7 (its "
		 "threads: 4242/4242, 4242/4243)\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	/* A name no record has. */
	out = td_ok(dir, (const char *const[]){"events", "--name", "nosuch", trc, NULL}, &err);
	cr_expect_str_empty(out);
	snprintf(want, sizeof(want), "trace-dump events: no record in %s matches --name nosuch\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	/* A range past the end says where the records are, in the form --from takes. */
	out = td_ok(dir, (const char *const[]){"events", "--from", "1h", trc, NULL}, &err);
	cr_expect_str_empty(out);
	snprintf(want, sizeof(want),
		 "trace-dump events: no record in %s matches --from 1h (its records lie between "
		 "0s and 0.000005s)\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	out = td_ok(dir,
		    (const char *const[]){"events", "--name", "parse", "--from", "3.1us", "--to",
					  "1h", trc, NULL},
		    &err);
	cr_expect_str_empty(out);
	snprintf(want, sizeof(want),
		 "trace-dump events: no record in %s matches --name parse, --from 3.1us, --to 1h "
		 "(its records lie between 0s and 0.000005s)\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	/* Every filter given is named, --thread too. */
	out = td_ok(dir,
		    (const char *const[]){"events", "--thread", "4243", "--name", "main", "--name",
					  "ready", trc, NULL},
		    &err);
	cr_expect_str_empty(out);
	snprintf(want, sizeof(want),
		 "trace-dump events: no record in %s matches --thread 4243, --name main or --name "
		 "ready\n",
		 trc);
	cr_expect_str_eq(err, want);
	free(out);
	free(err);
	/* What matches prints quietly. */
	out = td_ok(dir, (const char *const[]){"events", "--thread", "4243", trc, NULL}, &err);
	cr_expect_eq(td_lines(out), 5);
	cr_expect_str_empty(err);
	free(out);
	free(err);
	tu_rm_rf(dir);
}

Test(dump, events_name_accumulates, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	char *parse =
		td_ok(dir, (const char *const[]){"events", "--name", "parse", trc, NULL}, NULL);
	char *queue =
		td_ok(dir, (const char *const[]){"events", "--name", "queue", trc, NULL}, NULL);
	char *both = td_ok(
		dir,
		(const char *const[]){"events", "--name", "parse", "--name", "queue", trc, NULL},
		NULL);
	cr_expect_eq(td_lines(parse), 6, "%s", parse);
	cr_expect_eq(td_lines(queue), 3, "%s", queue);
	/* Every line of each, in time order: the union. */
	cr_expect_eq(td_lines(both), 9, "%s", both);
	for (const char *l = parse; *l; l = strchr(l, '\n') + 1) {
		char line[200];
		snprintf(line, sizeof(line), "%.*s", (int)(strchr(l, '\n') - l + 1), l);
		cr_expect(strstr(both, line), "missing %s", line);
	}
	cr_expect(strstr(both, "counter name=\"queue\" value=-4\n"), "%s", both);
	/* The same name twice is the name once. */
	char *twice = td_ok(
		dir,
		(const char *const[]){"events", "--name", "parse", "--name", "parse", trc, NULL},
		NULL);
	cr_expect_str_eq(twice, parse);
	free(parse);
	free(queue);
	free(both);
	free(twice);
	tu_rm_rf(dir);
}

Test(dump, rss_csv, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	struct td_run r = td_run(dir, (const char *const[]){"rss", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(td_lines(r.out), 6, "%s", r.out);
	cr_assert(
		strncmp(r.out,
			"time_ns,pid,program_bytes,rss_bytes,buffers_bytes,source,hwm_bytes,"
			"anon_bytes,file_bytes,shmem_bytes,rss_exact_bytes,pss_bytes,stretched,"
			"read_ns\n0,4242,3145728,3211264,65536,status,9437184,1572864,1572864,"
			"65536,,"
			",0,1500\n",
			strlen("time_ns,pid,program_bytes,rss_bytes,buffers_bytes,source,hwm_bytes,"
			       "anon_bytes,file_bytes,shmem_bytes,rss_exact_bytes,pss_bytes,"
			       "stretched,read_ns\n0,4242,3145728,3211264,65536,status,9437184,"
			       "1572864,1572864,65536,,,0,1500\n")) == 0,
		"%s", r.out);
	cr_assert(strstr(r.out, "\n4000,4242,6291456,"), "%s", r.out);
	td_free(&r);
	tu_rm_rf(dir);
}

/* Python checks the chrome output: strict JSON, B/E balanced per thread, each E named as the
 * B it ends (speedscope pairs them by name), names, counters. */
static const char td_chrome_check[] =
	"import json,sys,collections\n"
	"d=json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))\n"
	"ev=d['traceEvents']\n"
	"open_=collections.defaultdict(list)\n"
	"for e in ev:\n"
	"  assert isinstance(e['ts'] if e['ph']!='M' else 0,(int,float)), e\n"
	"  k=(e['pid'],e['tid'])\n"
	"  if e['ph']=='B': open_[k].append(e['name'])\n"
	"  if e['ph']=='E':\n"
	"    assert open_[k], e\n"
	"    assert e['name']==open_[k].pop(), e\n"
	"assert all(not v for v in open_.values()), open_\n"
	"ph=collections.Counter(e['ph'] for e in ev)\n"
	"names=[e['args']['name'] for e in ev if e['ph']=='M']\n"
	"assert 'main' in names and 'worker \"1\"' in names and 'prog --flag arg with space' in "
	"names, names\n"
	"rss=[e for e in ev if e['ph']=='C' and e['name']=='RSS']\n"
	"assert len(rss)==5 and rss[0]['args']['program_bytes']==3145728, rss\n"
	"heap=[e['args']['bytes'] for e in ev if e['ph']=='C' and e['name']=='heap live bytes']\n"
	"assert max(heap)==4480 and heap[-1]==4352, heap\n"
	"unf=[e for e in ev if e['ph']=='E' and e.get('args',{}).get('unfinished')]\n"
	"assert len(unf)==1 and unf[0]['tid']==4242 and unf[0]['ts']==5.0, unf\n"
	"fn=[e for e in ev if e['ph']=='B' and e['name']=='prog+0x2136']\n"
	"assert len(fn)==1, [e['name'] for e in ev if e['ph']=='B']\n"
	"parse=[e for e in ev if e['ph']=='B' and e['name']=='parse']\n"
	"assert [e['ts'] for e in parse]==[1.1,1.46,2.02], parse\n"
	"assert d['otherData']['spans_closed_at_end']==1\n"
	"print('ok', len(ev))\n";

Test(dump, chrome_is_strict_json_and_balanced, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], json[300], py[300];
	td_small(dir, trc, sizeof(trc));
	snprintf(json, sizeof(json), "%s/out.json", dir);
	snprintf(py, sizeof(py), "%s/check.py", dir);
	struct td_run r = td_run_to(dir, json, (const char *const[]){"chrome", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	td_free(&r);
	tu_write_file(py, td_chrome_check, strlen(td_chrome_check));
	char cmd[1000];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; "
		 "json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))' < '%s'",
		 json);
	cr_assert_eq(system(cmd), 0, "python3 json.load refused the output");
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' > '%s/py.out' 2>&1", py, json, dir);
	int rc = system(cmd);
	if (rc != 0) {
		char p2[400];
		snprintf(p2, sizeof(p2), "%s/py.out", dir);
		char *o = td_slurp(p2, NULL);
		cr_assert_fail("chrome check failed:\n%s", o);
	}
	tu_rm_rf(dir);
}

/* Names with quotes, control bytes and invalid UTF-8 still give strict JSON. */
Test(dump, chrome_and_json_escape_hostile_strings, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], json[300];
	snprintf(trc, sizeof(trc), "%s/esc.trc", dir);
	snprintf(json, sizeof(json), "%s/out.json", dir);
	static const char nasty[] = "a\"b\\c\n\td\x01\x7f\xff\xc3\xa9\xe2\x82\xac\xed\xa0\x80z\0y";
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 1, 0);
	struct trc_record rec = {.type = TRC_REC_NAME, .ts_ns = 10};
	rec.name.id = 1;
	rec.name.str = nasty;
	rec.name.len = sizeof(nasty) - 1;
	tu_add(m, &rec);
	rec = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = 10};
	rec.thread.pid = 1;
	rec.thread.tid = 2;
	rec.thread.name = nasty;
	rec.thread.name_len = sizeof(nasty) - 1;
	tu_add(m, &rec);
	rec = (struct trc_record){.type = TRC_REC_NOTE, .ts_ns = 11};
	rec.note.text = nasty;
	rec.note.len = sizeof(nasty) - 1;
	tu_add(m, &rec);
	struct tu_stream *t = tu_plan_stream(&p, TRC_STREAM_THREAD, 1, 2);
	rec = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = 12};
	rec.span.name_id = 1;
	tu_add(t, &rec);
	rec = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 13};
	rec.span.name_id = 1;
	tu_add(t, &rec);
	rec = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 14}; /* unmatched */
	rec.span.name_id = 77;
	tu_add(t, &rec);
	cr_assert_eq(tu_write_plan(trc, &p, NULL, 10), 0);
	tu_plan_free(&p);
	struct td_run r = td_run_to(dir, json, (const char *const[]){"chrome", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	td_free(&r);
	char cmd[1000];
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; "
		 "d=json.loads(sys.stdin.buffer.read().decode(\"utf-8\")); "
		 "assert d[\"otherData\"][\"spans_unmatched_end\"]==1; "
		 "n=[e[\"name\"] for e in d[\"traceEvents\"] if e[\"ph\"]==\"B\"][0]; "
		 "assert n.startswith(\"a\\\"b\\\\c\\n\\td\\x01\\x7f\\xff\\u00e9\\u20ac\"), "
		 "repr(n)' "
		 "< '%s'",
		 json);
	cr_assert_eq(system(cmd), 0, "bad escaping");
	snprintf(json, sizeof(json), "%s/sum.json", dir);
	r = td_run_to(dir, json, (const char *const[]){"summary", "--json", trc, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	td_free(&r);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; "
		 "json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))' < '%s'",
		 json);
	cr_assert_eq(system(cmd), 0, "summary --json is not strict JSON");
	r = td_run(dir, (const char *const[]){"events", trc, NULL});
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "name=\"a\\\"b\\\\c\\n\\td\\x01\\x7f"), "%s", r.out);
	td_free(&r);
	tu_rm_rf(dir);
}

/* Issue 13: every kind of byte a string may hold, escaped exactly, in each JSON output (chrome,
 * summary --json), and the output strict JSON read as strict UTF-8 (Python reading stdin in
 * the C locale would take invalid UTF-8 through as surrogate escapes: bytes are decoded here
 * with errors='strict'). Bytes that are not valid UTF-8 (surrogates U+D800..DFFF encoded,
 * overlong forms, past U+10FFFF, cut short, never valid) become \u00XX, one per byte;
 * control bytes \u00XX (\n, \t, \", \\ short); valid UTF-8 up to 4 bytes passes as it is. */
static const char td_hostile_name[] = "A\x1f"
				      "B\x7f"
				      "C\xed\xa0\x80"
				      "D\xed\xbf\xbf"
				      "E\xf0\x9f\x98\x80"
				      "F\xc0\xaf"
				      "G\xe0\x80\xaf"
				      "H\xf4\x90\x80\x80"
				      "I\xf5\x80"
				      "J\xff"
				      "K\xc3\xa9"
				      "L\x00"
				      "M\r\x08"
				      "N\"\\\n\t"
				      "O\xf0\x9f\x98"
				      "P\xe2\x82";
static const char td_hostile_json[] = "\"A\\u001f"
				      "B\x7f"
				      "C\\u00ed\\u00a0\\u0080"
				      "D\\u00ed\\u00bf\\u00bf"
				      "E\xf0\x9f\x98\x80"
				      "F\\u00c0\\u00af"
				      "G\\u00e0\\u0080\\u00af"
				      "H\\u00f4\\u0090\\u0080\\u0080"
				      "I\\u00f5\\u0080"
				      "J\\u00ff"
				      "K\xc3\xa9"
				      "L\\u0000"
				      "M\\u000d\\u0008"
				      "N\\\"\\\\\\n\\t"
				      "O\\u00f0\\u009f\\u0098"
				      "P\\u00e2\\u0082\"";

/* 0 when path holds strict JSON in strict UTF-8. */
static int td_strict_json(const char *path)
{
	return tu_sh("python3 -c 'import json,sys; "
		     "json.loads(open(sys.argv[1],\"rb\").read().decode(\"utf-8\",\"strict\"))' "
		     "'%s'",
		     path);
}

Test(dump, json_escapes_every_kind_of_byte_exactly, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], json[300];
	snprintf(trc, sizeof(trc), "%s/esc.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 1, 0);
	struct trc_record rec = {.type = TRC_REC_NAME, .ts_ns = 10};
	rec.name.id = 1;
	rec.name.str = td_hostile_name;
	rec.name.len = sizeof(td_hostile_name) - 1;
	tu_add(m, &rec);
	/* A note cut short in a 3-byte sequence, whose next byte in the chunk is the next
	 * record's first, 0x8f (a NOTE with a negative time delta): a continuation byte, which an
	 * escaper reading past the string's end would take in. */
	rec = (struct trc_record){.type = TRC_REC_NOTE, .ts_ns = 20};
	rec.note.text = "Q\xe2\x82";
	rec.note.len = 3;
	tu_add(m, &rec);
	rec = (struct trc_record){.type = TRC_REC_NOTE, .ts_ns = 19};
	rec.note.text = "R";
	rec.note.len = 1;
	tu_add(m, &rec);
	struct tu_stream *t = tu_plan_stream(&p, TRC_STREAM_THREAD, 1, 2);
	rec = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = 12};
	rec.span.name_id = 1;
	tu_add(t, &rec);
	rec = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 13};
	rec.span.name_id = 1;
	tu_add(t, &rec);
	cr_assert_eq(tu_write_plan(trc, &p, NULL, 10), 0);
	tu_plan_free(&p);
	static const char *const cmds[][2] = {{"chrome", "chrome.json"},
					      {"summary", "summary.json"}};
	for (size_t k = 0; k < 2; k++) {
		snprintf(json, sizeof(json), "%s/%s", dir, cmds[k][1]);
		const char *args[] = {cmds[k][0], trc, NULL, NULL};
		if (k == 1) {
			args[1] = "--json";
			args[2] = trc;
		}
		struct td_run r = td_run_to(dir, json, args);
		cr_assert_eq(r.status, 0, "%s: %s", cmds[k][0], r.err);
		td_free(&r);
		size_t len;
		char *out = td_slurp(json, &len);
		cr_assert_not_null(memmem(out, len, td_hostile_json, sizeof(td_hostile_json) - 1),
				   "%s: the name is not escaped as expected:\n%s", cmds[k][0], out);
		if (k == 0)
			cr_assert_not_null(memmem(out, len, "\"Q\\u00e2\\u0082\"", 15),
					   "the note cut short:\n%s", out);
		free(out);
		cr_assert_eq(td_strict_json(json), 0, "%s: not strict JSON in UTF-8", cmds[k][0]);
	}
	/* The checker itself refuses what it must: invalid UTF-8, a raw control byte. */
	snprintf(json, sizeof(json), "%s/bad.json", dir);
	tu_write_file(json, "[\"\xed\xa0\x80\"]", 7);
	cr_assert_neq(td_strict_json(json), 0);
	tu_write_file(json, "[\"\x1f\"]", 5);
	cr_assert_neq(td_strict_json(json), 0);
	tu_write_file(json, "[\"\xc3\xa9\"]", 6);
	cr_assert_eq(td_strict_json(json), 0);
	tu_rm_rf(dir);
}

/* Issue 13: a trace of two processes (a parent and a child it forked, three threads): every
 * event carries its own process's pid and its thread's tid, and each process and thread is
 * named exactly once. */
static const char td_two_procs_check[] =
	"import json,sys,collections\n"
	"d=json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))\n"
	"ev=d['traceEvents']\n"
	"pn=collections.Counter((e['pid'],e['args']['name']) for e in ev\n"
	"  if e['ph']=='M' and e['name']=='process_name')\n"
	"assert pn=={(100,'parent --x'):1,(200,'child'):1}, pn\n"
	"tn=collections.Counter((e['pid'],e['tid'],e['args']['name']) for e in ev\n"
	"  if e['ph']=='M' and e['name']=='thread_name')\n"
	"assert tn=={(100,100,'main'):1,(100,101,'worker'):1,(200,200,'kid'):1}, tn\n"
	"be=[(e['ph'],e['pid'],e['tid'],e.get('name'),e['ts']) for e in ev if e['ph'] in 'BE']\n"
	"want=[('B',100,100,'p.work',1.0),('B',200,200,'c.work',1.2),\n"
	"  ('B',100,101,'p.work',1.5),('E',100,100,'p.work',2.0),('E',200,200,'c.work',2.2),\n"
	"  ('E',100,101,'p.work',2.5)]\n"
	"assert be==want, be\n"
	"print('ok')\n";

Test(dump, chrome_two_processes_pids_tids_and_names_once, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], json[300], py[300];
	snprintf(trc, sizeof(trc), "%s/two.trc", dir);
	snprintf(json, sizeof(json), "%s/two.json", dir);
	snprintf(py, sizeof(py), "%s/check.py", dir);
	const uint64_t t0 = 1000000000ull; /* tu_header's start */
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 100, 0);
	struct trc_record r = {.type = TRC_REC_PROCESS, .ts_ns = t0};
	r.process.pid = 100;
	r.process.ppid = 1;
	r.process.cmdline = "parent\0--x";
	r.process.cmdline_len = 10;
	tu_add(m, &r);
	r = (struct trc_record){.type = TRC_REC_PROCESS, .ts_ns = t0 + 100};
	r.process.pid = 200;
	r.process.ppid = 100;
	r.process.cmdline = "child";
	r.process.cmdline_len = 5;
	tu_add(m, &r);
	static const struct {
		uint32_t pid, tid;
		const char *name;
	} threads[] = {{100, 100, "main"}, {100, 101, "worker"}, {200, 200, "kid"}};
	for (int i = 0; i < 3; i++) {
		r = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = t0 + 200};
		r.thread.pid = threads[i].pid;
		r.thread.tid = threads[i].tid;
		r.thread.name = threads[i].name;
		r.thread.name_len = (uint32_t)strlen(threads[i].name);
		tu_add(m, &r);
	}
	static const char *const names[] = {"p.work", "c.work"};
	for (uint32_t i = 0; i < 2; i++) {
		r = (struct trc_record){.type = TRC_REC_NAME, .ts_ns = t0 + 300};
		r.name.id = i + 1;
		r.name.str = names[i];
		r.name.len = (uint32_t)strlen(names[i]);
		tu_add(m, &r);
	}
	/* (pid, tid, name id, begin, end) */
	static const uint32_t spans[3][5] = {
		{100, 100, 1, 1000, 2000}, {100, 101, 1, 1500, 2500}, {200, 200, 2, 1200, 2200}};
	for (int i = 0; i < 3; i++) {
		struct tu_stream *t =
			tu_plan_stream(&p, TRC_STREAM_THREAD, spans[i][0], spans[i][1]);
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t0 + spans[i][3]};
		r.span.name_id = spans[i][2];
		tu_add(t, &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t0 + spans[i][4]};
		r.span.name_id = spans[i][2];
		tu_add(t, &r);
	}
	cr_assert_eq(tu_write_plan(trc, &p, NULL, 10), 0);
	tu_plan_free(&p);
	struct td_run run = td_run_to(dir, json, (const char *const[]){"chrome", trc, NULL});
	cr_assert_eq(run.status, 0, "%s", run.err);
	td_free(&run);
	tu_write_file(py, td_two_procs_check, strlen(td_two_procs_check));
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' > '%s/py.out' 2>&1", py, json, dir);
	if (system(cmd) != 0) {
		char p2[400];
		snprintf(p2, sizeof(p2), "%s/py.out", dir);
		char *o = td_slurp(p2, NULL);
		char *j = td_slurp(json, NULL);
		cr_assert_fail("chrome of two processes:\n%s\n%s", o, j);
	}
	tu_rm_rf(dir);
}

Test(dump, help_and_usage, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	static const char *const cmds[] = {"summary", "events", "rss", "chrome"};
	for (size_t i = 0; i < 4; i++) {
		struct td_run r = td_run(dir, (const char *const[]){cmds[i], "--help", NULL});
		cr_assert_eq(r.status, 0);
		cr_assert(strstr(r.out, "usage: trace-dump"), "%s", r.out);
		td_free(&r);
		r = td_run(dir, (const char *const[]){cmds[i], "--bogus", "x", NULL});
		cr_assert_eq(r.status, 2, "%s --bogus: %d", cmds[i], r.status);
		td_free(&r);
		r = td_run(dir, (const char *const[]){cmds[i], NULL});
		cr_assert_eq(r.status, 2, "%s without FILE: %d", cmds[i], r.status);
		td_free(&r);
	}
	struct td_run r = td_run(dir, (const char *const[]){"--help", NULL});
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "chrome"));
	td_free(&r);
	r = td_run(dir, (const char *const[]){NULL});
	cr_assert_eq(r.status, 2);
	td_free(&r);
	/* The documented JSON keys are in summary --help. */
	r = td_run(dir, (const char *const[]){"summary", "--help", NULL});
	static const char *const keys[] = {"duration_ns",    "events_recorded",
					   "events_lost",    "threads",
					   "rss_peak_bytes", "rss_peak_sampled_bytes",
					   "rss_samples",    "buffers_resident_peak_bytes",
					   "truncated"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert(strstr(r.out, keys[i]), "%s undocumented", keys[i]);
	td_free(&r);
	tu_rm_rf(dir);
}

Test(dump, unknown_command_help_and_version, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	/* A typo is not the FILE of summary: unknown command, the closest suggested. */
	td_expect_usage(dir, (const char *const[]){"sumary", trc, NULL},
			"trace-dump: unknown command \"sumary\"; did you mean \"summary\"? (see "
			"trace-dump help)\n");
	td_expect_usage(dir, (const char *const[]){"evnets", trc, NULL},
			"trace-dump: unknown command \"evnets\"; did you mean \"events\"? (see "
			"trace-dump help)\n");
	td_expect_usage(dir, (const char *const[]){"chrom", trc, NULL},
			"trace-dump: unknown command \"chrom\"; did you mean \"chrome\"? (see "
			"trace-dump help)\n");
	td_expect_usage(
		dir, (const char *const[]){"frobnicate", trc, NULL},
		"trace-dump: unknown command \"frobnicate\" (and no such file); the "
		"commands are summary, events, rss, chrome, flame, memory, parquet, perfetto, "
		"pprof, compact, check, diff, report and help\n");
	td_expect_usage(dir, (const char *const[]){"sumary", NULL},
			"trace-dump: unknown command \"sumary\"; did you mean \"summary\"? (see "
			"trace-dump help)\n");
	/* A name that looks like a file is read as one: summary of it. */
	struct td_run r = td_run(dir, (const char *const[]){"missing.trc", NULL});
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "trace-dump: missing.trc: No such file"), "%s", r.err);
	td_free(&r);
	/* help lists every command; help COMMAND is COMMAND --help. */
	static const char *const cmds[] = {"summary",  "events", "rss",	    "chrome", "parquet",
					   "perfetto", "pprof",	 "compact", "help"};
	char *help = td_ok(dir, (const char *const[]){"help", NULL}, NULL);
	char *dash_help = td_ok(dir, (const char *const[]){"--help", NULL}, NULL);
	cr_expect_str_eq(help, dash_help);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char line[32];
		snprintf(line, sizeof(line), "\n  %-8s ", cmds[i]);
		cr_expect(strstr(help, line), "help does not list %s:\n%s", cmds[i], help);
	}
	free(help);
	free(dash_help);
	for (size_t i = 0; i < 8; i++) {
		char *a = td_ok(dir, (const char *const[]){"help", cmds[i], NULL}, NULL);
		char *b = td_ok(dir, (const char *const[]){cmds[i], "--help", NULL}, NULL);
		cr_expect_str_eq(a, b);
		cr_expect(strncmp(a, "usage: trace-dump ", 18) == 0, "%s", a);
		free(a);
		free(b);
	}
	td_expect_usage(dir, (const char *const[]){"help", "sumary", NULL},
			"trace-dump: unknown command \"sumary\"; did you mean \"summary\"? (see "
			"trace-dump help)\n");
	/* The version the tools share. */
	char *v = td_ok(dir, (const char *const[]){"--version", NULL}, NULL);
	cr_expect_str_eq(v, "trace-dump " CLI_VERSION "\n");
	free(v);
	v = td_ok(dir, (const char *const[]){"-V", NULL}, NULL);
	cr_expect_str_eq(v, "trace-dump " CLI_VERSION "\n");
	free(v);
	tu_rm_rf(dir);
}

/* compact: a file with stored chunks becomes one without, with the same summary. */
Test(dump, compact_compresses_stored_chunks, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char mixed[300], out[300];
	snprintf(mixed, sizeof(mixed), "%s/mixed.trc", dir);
	snprintf(out, sizeof(out), "%s/out.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.flags = TRCFILE_WRITER_NO_FSYNC,
					.store_one_in = 1};
	cr_assert_eq(tu_write_plan(mixed, &p, &o, 3), 0);
	tu_plan_free(&p);
	struct td_run r = td_run(dir, (const char *const[]){"compact", mixed, "-o", out, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.err, "trace-dump compact: "), "%s", r.err);
	cr_expect(strstr(r.err, " 4 stored chunks compressed; "), "%s", r.err);
	td_free(&r);
	char *a = td_ok(dir, (const char *const[]){"summary", "--json", mixed, NULL}, NULL);
	char *b = td_ok(dir, (const char *const[]){"summary", "--json", out, NULL}, NULL);
	cr_expect_str_eq(a, b);
	free(a);
	free(b);
	td_expect_usage(dir, (const char *const[]){"compact", mixed, NULL},
			"trace-dump compact: no output given (-o OUT) (see trace-dump compact "
			"--help)\n");
	td_expect_usage(dir, (const char *const[]){"compact", mixed, "-o", mixed, NULL},
			"trace-dump compact: OUT is FILE: write another file, then rename it (see "
			"trace-dump compact --help)\n");
	r = td_run(dir, (const char *const[]){"compact", "missing.trc", "-o", out, NULL});
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "trace-dump: missing.trc: "), "%s", r.err);
	td_free(&r);
	tu_rm_rf(dir);
}

/* Option errors name the command they belong to, in one line. */
Test(dump, option_errors_name_their_command, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], want[1000];
	td_small(dir, trc, sizeof(trc));
	static const char *const cmds[] = {"summary", "events", "rss", "chrome"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(want, sizeof(want),
			 "trace-dump %s: unknown option \"--bogus\" (see trace-dump %s --help)\n",
			 cmds[i], cmds[i]);
		td_expect_usage(dir, (const char *const[]){cmds[i], "--bogus", trc, NULL}, want);
		snprintf(want, sizeof(want),
			 "trace-dump %s: unknown option \"-x\" (see trace-dump %s --help)\n",
			 cmds[i], cmds[i]);
		td_expect_usage(dir, (const char *const[]){cmds[i], trc, "-x", NULL}, want);
		snprintf(want, sizeof(want),
			 "trace-dump %s: option \"--help\" takes no value (see trace-dump %s "
			 "--help)\n",
			 cmds[i], cmds[i]);
		td_expect_usage(dir, (const char *const[]){cmds[i], "--help=yes", trc, NULL}, want);
		snprintf(want, sizeof(want),
			 "trace-dump %s: no FILE given (see trace-dump %s --help)\n", cmds[i],
			 cmds[i]);
		td_expect_usage(dir, (const char *const[]){cmds[i], NULL}, want);
		/* summary, events and chrome take several FILEs (test_dump_multi.c). */
		if (strcmp(cmds[i], "rss"))
			continue;
		snprintf(want, sizeof(want),
			 "trace-dump %s: one FILE expected, got 2: \"%s\", \"%s\" (see trace-dump "
			 "%s --help)\n",
			 cmds[i], trc, trc, cmds[i]);
		td_expect_usage(dir, (const char *const[]){cmds[i], trc, trc, NULL}, want);
	}
	/* The default command is summary, and says so. */
	td_expect_usage(dir, (const char *const[]){"--bogus", trc, NULL},
			"trace-dump summary: unknown option \"--bogus\" (see trace-dump summary "
			"--help)\n");
	td_expect_usage(dir, (const char *const[]){"summary", "--json=1", trc, NULL},
			"trace-dump summary: option \"--json\" takes no value (see trace-dump "
			"summary --help)\n");
	td_expect_usage(
		dir, (const char *const[]){"events", trc, "--thread", NULL},
		"trace-dump events: option \"--thread\" needs a value (see trace-dump events "
		"--help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--thread", "x/1", trc, NULL},
			"trace-dump events: --thread: expected TID or PID/TID, got \"x/1\" (see "
			"trace-dump events --help)\n");
	/* "--" is the end of the options, not a value. */
	td_expect_usage(dir, (const char *const[]){"events", "--name", "--", trc, NULL},
			"trace-dump events: option \"--name\" needs a value, got \"--\" (see "
			"trace-dump events --help)\n");
	td_expect_usage(dir, (const char *const[]){"events", "--from=--", trc, NULL},
			"trace-dump events: option \"--from\" needs a value, got \"--\" (see "
			"trace-dump events --help)\n");
	tu_rm_rf(dir);
}

/* "1 sample", "1 record in 1 chunk": counts agree in number. */
Test(dump, summary_counts_agree_in_number, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/one.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record rec = {.type = TRC_REC_RSS, .ts_ns = 1000};
	rec.rss.pid = 4242;
	rec.rss.rss_bytes = 1u << 20;
	rec.rss.source = TRC_RSS_STATM;
	tu_add(rs, &rec);
	cr_assert_eq(tu_write_plan(trc, &p, NULL, 10), 0);
	tu_plan_free(&p);
	char *out = td_ok(dir, (const char *const[]){"summary", trc, NULL}, NULL);
	cr_expect(strstr(out, ", 1 record in 1 chunk, "), "%s", out);
	cr_expect(strstr(out, "; 1 sample"), "%s", out);
	cr_expect_null(strstr(out, " 1 records"), "%s", out);
	cr_expect_null(strstr(out, " 1 chunks"), "%s", out);
	cr_expect_null(strstr(out, " 1 samples"), "%s", out);
	free(out);
	tu_rm_rf(dir);
}

Test(dump, bad_files_fail_with_a_message, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], bad[300];
	td_small(dir, trc, sizeof(trc));
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	tu_write_file(bad, "hello, I am not a trace file at all, not even close.......", 56);
	static const char *const cmds[] = {"summary", "events", "rss", "chrome"};
	for (size_t i = 0; i < 4; i++) {
		struct td_run r = td_run(dir, (const char *const[]){cmds[i], bad, NULL});
		cr_assert_eq(r.status, 1);
		cr_assert(strstr(r.err, "trace-dump: "), "%s", r.err);
		cr_assert(strstr(r.err, "bad.trc"), "%s", r.err);
		td_free(&r);
	}
	struct td_run r = td_run(dir, (const char *const[]){"summary", "/nonexistent.trc", NULL});
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "No such file"), "%s", r.err);
	td_free(&r);
	/* A newer major version says so. */
	size_t len;
	uint8_t *b = tu_read_file(trc, &len);
	b[8] = TRCFILE_VERSION_MAJOR + 1;
	tu_write_file(bad, b, len);
	r = td_run(dir, (const char *const[]){"summary", bad, NULL});
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "newer"), "%s", r.err);
	td_free(&r);
	/* A damaged chunk: skipped with a warning naming it, the rest read, status 0 (issue 12
	 * item 15). */
	free(b);
	b = tu_read_file(trc, &len); /* a fresh copy */
	uint32_t hb = (uint32_t)b[16] | (uint32_t)b[17] << 8;
	b[hb + 64 + 20] ^= 0x55; /* inside the first chunk's frame */
	tu_write_file(bad, b, len);
	r = td_run(dir, (const char *const[]){"events", bad, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "1 damaged chunk skipped, the rest read (first: damaged chunk"),
		  "%s", r.err);
	cr_assert_gt(r.out_len, 0);
	td_free(&r);
	free(b);
	tu_rm_rf(dir);
}

Test(dump, truncated_file_is_read_and_reported, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300], cut[300];
	td_small(dir, trc, sizeof(trc));
	snprintf(cut, sizeof(cut), "%s/cut.trc", dir);
	size_t len;
	uint8_t *b = tu_read_file(trc, &len);
	tu_write_file(cut, b, len - 40); /* no trailer */
	free(b);
	struct td_run r = td_run(dir, (const char *const[]){"summary", "--json", cut, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "\"truncated\":true"), "%s", r.out);
	cr_assert(strstr(r.out, "\"events_recorded\":23,"), "%s", r.out);
	cr_assert(strstr(r.err, "truncated"), "%s", r.err);
	td_free(&r);
	r = td_run(dir, (const char *const[]){"summary", cut, NULL});
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "TRUNCATED"), "%s", r.out);
	td_free(&r);
	tu_rm_rf(dir);
}

Test(dump, output_errors, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	td_small(dir, trc, sizeof(trc));
	/* Full disk: one line on stderr, status 1. */
	struct td_run r = td_run_to(dir, "/dev/full", (const char *const[]){"events", trc, NULL});
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "No space left"), "%s", r.err);
	td_free(&r);
	/* Closed pipe: quiet, status 141, whatever SIGPIPE's disposition. */
	for (int ign = 0; ign < 2; ign++) {
		int fds[2];
		cr_assert_eq(pipe(fds), 0);
		close(fds[0]);
		char errf[400];
		snprintf(errf, sizeof(errf), "%s/stderr", dir);
		pid_t pid = fork();
		if (pid == 0) {
			signal(SIGPIPE, ign ? SIG_IGN : SIG_DFL);
			int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(fds[1], 1);
			dup2(e, 2);
			execl(td_dump(), td_dump(), "chrome", trc, (char *)NULL);
			_exit(98);
		}
		close(fds[1]);
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 141, "status 0x%x", st);
		char *err = td_slurp(errf, NULL);
		cr_assert_str_empty(err);
		free(err);
	}
	tu_rm_rf(dir);
}

/* A trace of two processes (a parent and its forked child: the same heap addresses) with one
 * NAME, for trace-dump's JSON outputs. */
static void td_two_process_plan(struct tu_plan *p, const char *name, uint32_t name_len)
{
	tu_plan_stream(p, TRC_STREAM_META, 10, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, 10, 10);
	tu_plan_stream(p, TRC_STREAM_THREAD, 11, 11);
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000ull};
	r.name.id = 2;
	r.name.str = name;
	r.name.len = name_len;
	tu_add(&p->streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1000000050ull};
	r.value.name_id = 2;
	tu_add(&p->streams[1], &r);
	/* parent: ALLOC X 100 at 100; child: ALLOC X 50 at 200, FREE X at 300 */
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = 1000000100ull};
	r.alloc.addr = 0x7f0000001000ull;
	r.alloc.size = 100;
	tu_add(&p->streams[1], &r);
	r.ts_ns = 1000000200ull;
	r.alloc.size = 50;
	tu_add(&p->streams[2], &r);
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = 1000000300ull};
	r.alloc.addr = 0x7f0000001000ull;
	tu_add(&p->streams[2], &r);
}

/* trace-dump events shows a name's control bytes and DEL escaped, never raw to the terminal. */
Test(dump, events_text_escapes_control_bytes_and_del, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	static const char name[] = "a\x7f"
				   "b\x1b"
				   "c\"d\\e\tf";
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000ull};
	r.name.id = 2;
	r.name.str = name;
	r.name.len = sizeof(name) - 1;
	tu_add(&p.streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1000000100ull};
	r.value.name_id = 2;
	r.value.value = 5;
	tu_add(&p.streams[1], &r);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump events '%s' >'%s/out.txt' 2>&1", tu_build(), path, dir),
		0);
	char *out = tu_slurp_text(dir, "out.txt");
	cr_assert(strstr(out, "\"a\\x7fb\\x1bc\\\"d\\\\e\\tf\""), "%s", out);
	cr_assert_null(strchr(out, 0x7f), "a raw DEL in: %s", out);
	cr_assert_null(strchr(out, 0x1b), "a raw ESC in: %s", out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* trace-dump chrome keeps each process's live heap apart: the child's block at the parent's
 * address is its own. */
Test(dump, chrome_live_heap_per_process, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	td_two_process_plan(&p, "mark", 4);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' -o '%s/out.json' >'%s/err.txt' 2>&1",
			   tu_build(), path, dir, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	/* In time order: parent 100; child 50, then 0; the parent's 100 untouched. */
	static const char key[] = "\"name\":\"heap live bytes\",\"args\":{\"bytes\":";
	unsigned long long want[] = {100, 50, 0}, got[4] = {0};
	int n = 0;
	for (const char *q = strstr(out, key); q; q = strstr(q + 1, key)) {
		cr_assert_lt(n, 4, "%s", out);
		got[n++] = strtoull(q + sizeof(key) - 1, NULL, 10);
	}
	cr_assert_eq(n, 3, "%s", out);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(got[i], want[i], "heap live bytes #%d: %llu, want %llu: %s", i, got[i],
			     want[i], out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A lead byte followed by another lead byte is not UTF-8: both bytes escaped in JSON */
Test(dump, json_lead_byte_without_continuation_escaped, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	static const char name[] = "a\xc3\xc3z\xe2\x82\xf0y\xc3\xa9";
	struct tu_plan p = {0};
	td_two_process_plan(&p, name, sizeof(name) - 1);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary --json '%s' >'%s/out.json' 2>&1", tu_build(),
			   path, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	/* Invalid bytes one by one as \u00XX; the valid é (c3 a9) as it is. */
	cr_assert(strstr(out, "\"a\\u00c3\\u00c3z\\u00e2\\u0082\\u00f0y\xc3\xa9\""), "%s", out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* The pid of the chrome event that holds at, and its program_bytes. */
static void td_rss_event(const char *out, const char *at, unsigned long *pid, unsigned long *bytes)
{
	const char *q = at;
	while (q > out && strncmp(q, "\"pid\":", 6) != 0)
		q--;
	cr_assert_eq(strncmp(q, "\"pid\":", 6), 0, "no pid before %.60s", at);
	*pid = strtoul(q + 6, NULL, 10);
	const char *b = strstr(at, "\"program_bytes\":");
	cr_assert_not_null(b);
	*bytes = strtoul(b + 16, NULL, 10);
}

/* trace-dump chrome puts an RSS sample on the process it measured (a child's samples come in
 * the RSS stream of the traced program). */
Test(dump, chrome_rss_sample_on_its_process, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	td_two_process_plan(&p, "mark", 4);
	struct tu_stream *rss = tu_plan_stream(&p, TRC_STREAM_RSS, 10, 0);
	struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = 1000000400ull};
	r.rss.pid = 10;
	r.rss.rss_bytes = 5u << 20;
	tu_add(rss, &r);
	r.ts_ns = 1000000500ull;
	r.rss.pid = 11;
	r.rss.rss_bytes = 7u << 20;
	tu_add(rss, &r);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' -o '%s/out.json' >'%s/err.txt' 2>&1",
			   tu_build(), path, dir, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	unsigned long pids[2] = {0}, bytes[2] = {0};
	int n = 0;
	for (const char *q = strstr(out, "\"name\":\"RSS\""); q;
	     q = strstr(q + 1, "\"name\":\"RSS\"")) {
		cr_assert_lt(n, 2, "%s", out);
		td_rss_event(out, q, &pids[n], &bytes[n]);
		n++;
	}
	cr_assert_eq(n, 2, "%s", out);
	cr_assert_eq(pids[0], 10);
	cr_assert_eq(bytes[0], 5ul << 20);
	cr_assert_eq(pids[1], 11, "the child's sample shown on pid %lu", pids[1]);
	cr_assert_eq(bytes[1], 7ul << 20);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* trace-dump events says where the records lie when --from leaves none, in exact offsets */
Test(dump, events_no_match_names_exact_offsets, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	/* tu_header's start is 1 s: records 0.25 s and 1.234567891 s after it */
	static const uint64_t ts[] = {1250000000ull, 2234567891ull};
	for (int i = 0; i < 2; i++) {
		struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = ts[i]};
		r.value.name_id = 2;
		tu_add(&p.streams[0], &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	tu_sh("%s/bin/trace-dump events --from 5s '%s' >'%s/out.txt' 2>'%s/err.txt'", tu_build(),
	      path, dir, dir);
	char *err = tu_slurp_text(dir, "err.txt");
	cr_assert(strstr(err, "(its records lie between 0.25s and 1.234567891s)"), "%s", err);
	free(err);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}
