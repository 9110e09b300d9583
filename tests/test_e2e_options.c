/* test_e2e_options.c - trace-run's options take effect, not only parse: each one is checked
 * where it lands (the trace's header, read back through trace-dump summary --json or the
 * reader) or by what it does (events lost for small rings or too few ring slots, compressor
 * threads started), and every documented limit is accepted at its ends and refused one past
 * them with one exact line. */
#include <dirent.h>
#include <sys/resource.h>

#include "e2e_util.h"
#include "trcfile.h"

#define TR e2e_path("bin/trace-run")
#define EMIT e2e_path("tests/prog_e2e_emit")

static int64_t emitted_from(const char *out)
{
	const char *p = strstr(out, "emitted ");
	return p ? strtoll(p + 8, NULL, 10) : -1;
}

/* The value of a string field ("key":"value") of a JSON text, in a static buffer ("" if none). */
static const char *json_str(const char *json, const char *key)
{
	static char val[64];
	char pat[96];
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	const char *p = strstr(json, pat);
	val[0] = '\0';
	if (p) {
		p += strlen(pat);
		size_t n = strcspn(p, "\"");
		snprintf(val, sizeof(val), "%.*s", (int)(n < sizeof(val) - 1 ? n : sizeof(val) - 1),
			 p);
	}
	return val;
}

static uint64_t header_buffer_bytes(const char *trace)
{
	struct trcfile_reader *rd = NULL;
	char msg[256] = "";
	cr_assert_eq(trcfile_reader_open(trace, &rd, msg, sizeof(msg)), 0, "%s: %s", trace, msg);
	uint64_t b = trcfile_reader_header(rd)->buffer_bytes;
	trcfile_reader_close(rd);
	return b;
}

/* Records `prog_e2e_emit THREADS EVENTS` with the options given (NULL-terminated, at most 8);
 * asserts trace-run and the program succeeded; returns the summary JSON (free it) and the
 * number of events the program emitted. */
static char *record(const char *dir, const char *trace, const char *threads, const char *events,
		    int64_t *emitted, const char *const opts[])
{
	char *argv[24];
	int n = 0;
	argv[n++] = (char *)TR;
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = (char *)trace;
	for (int i = 0; opts[i] && i < 8; i++)
		argv[n++] = (char *)opts[i];
	argv[n++] = "--";
	argv[n++] = (char *)EMIT;
	argv[n++] = (char *)threads;
	argv[n++] = (char *)events;
	argv[n] = NULL;
	struct e2e_run r = e2e_runv(dir, argv);
	cr_assert_eq(r.exit_code, 0, "trace-run %s: exit %d: %s", opts[0] ? opts[0] : "",
		     r.exit_code, r.err);
	if (emitted)
		*emitted = emitted_from(r.out);
	e2e_free(&r);
	return e2e_summary_json(dir, trace);
}

/* The case: 64K rings under 2 x 3 million events lose some when threads drop rather
 * than wait (the drain cannot keep up with 4096-event rings), 64M rings hold every thread's whole
 * stream and lose none. Each way the accounting is exact, and the header says the ring size asked
 * for. */
Test(e2e_options, buffer_size_sets_the_ring_size, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/small.trc", dir);
	int64_t emitted = 0;
	/* --when-full drop: under the default (wait) the threads wait and lose nothing. */
	char *json = record(dir, trace, "2", "3000000", &emitted,
			    (const char *[]){"--no-preload", "--buffer-size", "64K", "--when-full",
					     "drop", NULL});
	int64_t rec = e2e_json_int(json, "events_recorded");
	int64_t lost = e2e_json_int(json, "events_lost");
	cr_expect_eq(emitted, 6000000);
	cr_expect_eq(header_buffer_bytes(trace), 64u << 10);
	cr_expect_gt(lost, 0, "64K rings lost nothing: %s", json);
	cr_expect_eq(e2e_json_int(json, "ring_full"), lost, "%s", json);
	cr_expect_eq(rec + lost, emitted, "recorded %" PRId64 " + lost %" PRId64, rec, lost);
	free(json);

	snprintf(trace, sizeof(trace), "%s/big.trc", dir);
	json = record(dir, trace, "2", "3000000", &emitted,
		      (const char *[]){"--no-preload", "--buffer-size", "64M", NULL});
	cr_expect_eq(header_buffer_bytes(trace), 64u << 20);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "64M rings lost events: %s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), emitted, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* --max-threads N is the number of ring slots: with one slot, four threads emitting at once
 * leave three without a ring (lost, reason no_slot, every event accounted for); with the
 * default 256 none lose any. 64M rings so that no ring overflows: every loss is for a slot. */
Test(e2e_options, max_threads_sets_the_ring_slots, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/one.trc", dir);
	int64_t emitted = 0;
	char *json = record(dir, trace, "4", "1000000", &emitted,
			    (const char *[]){"--no-preload", "--buffer-size", "64M",
					     "--max-threads", "1", NULL});
	int64_t rec = e2e_json_int(json, "events_recorded");
	int64_t lost = e2e_json_int(json, "events_lost");
	cr_expect_eq(emitted, 4000000);
	cr_expect_geq(lost, 1000000, "one slot, four threads at once: %s", json);
	cr_expect_eq(e2e_json_int(json, "no_slot"), lost, "%s", json);
	cr_expect_eq(rec + lost, emitted, "recorded %" PRId64 " + lost %" PRId64, rec, lost);
	free(json);

	snprintf(trace, sizeof(trace), "%s/all.trc", dir);
	json = record(dir, trace, "4", "1000000", &emitted,
		      (const char *[]){"--no-preload", "--buffer-size", "64M", NULL});
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), emitted, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* The samples of `trace-dump rss` (CSV, source in the sixth column) that were not read from
 * source, or -1 when there are none at all. */
static int samples_not_from(const char *dir, const char *trace, const char *source)
{
	struct e2e_run r =
		e2e_run(dir, (char *)e2e_path("bin/trace-dump"), "rss", (char *)trace, NULL);
	cr_assert_eq(r.exit_code, 0, "trace-dump rss: %s", r.err);
	int rows = 0, other = 0;
	char *save = NULL;
	for (char *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "time_ns,", 8))
			continue;
		const char *f = l;
		for (int c = 0; c < 5 && f; c++)
			f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
		rows++;
		other += !f || strncmp(f, source, strlen(source)) || f[strlen(source)] != ',';
	}
	e2e_free(&r);
	return rows ? other : -1;
}

/* --rss-source, --rss-interval, --no-rss and --clock are written in the header and read back
 * as given, and the samples are read from the source asked for. */
Test(e2e_options, rss_and_clock_settings_reach_the_trace, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	static const char *const sources[] = {"statm", "status", "smaps_rollup", "both"};
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		char *json = record(dir, trace, "1", "10", NULL,
				    (const char *[]){"--rss-source", sources[i], "--rss-interval",
						     "7ms", NULL});
		cr_expect_str_eq(json_str(json, "rss_source"), sources[i], "%s", json);
		cr_expect_eq(e2e_json_int(json, "rss_interval_ns"), 7000000, "%s", json);
		cr_expect_geq(e2e_json_int(json, "rss_samples"), 1, "%s", json);
		cr_expect_eq(samples_not_from(dir, trace, sources[i]), 0, "%s", sources[i]);
		free(json);
	}

	char *json = record(dir, trace, "1", "10", NULL, (const char *[]){"--no-rss", NULL});
	cr_expect_str_eq(json_str(json, "rss_source"), "none", "%s", json);
	cr_expect_eq(e2e_json_int(json, "rss_interval_ns"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "rss_samples"), 0, "%s", json);
	free(json);

	json = record(dir, trace, "1", "10", NULL, (const char *[]){"--clock", "gettime", NULL});
	cr_expect_str_eq(json_str(json, "clock_source"), "clock_gettime", "%s", json);
	free(json);
	/* auto takes the TSC where it is invariant; elsewhere both runs read clock_gettime and
	 * this one says nothing more. */
	json = record(dir, trace, "1", "10", NULL, (const char *[]){"--clock", "auto", NULL});
	const char *src = json_str(json, "clock_source");
	cr_expect(!strcmp(src, "tsc") || !strcmp(src, "clock_gettime"), "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* Without -o the trace is <command's base name>.<pid>.trc in the working directory, pid
 * being the program's (the header's pid), and nothing else is written there. */
Test(e2e_options, default_output_name_is_command_dot_pid, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char cwd[300];
	snprintf(cwd, sizeof(cwd), "%s/cwd", dir);
	cr_assert_eq(mkdir(cwd, 0755), 0);
	char emit[4096];
	cr_assert_not_null(realpath(EMIT, emit)); /* trace-run runs it from cwd */
	char *argv[] = {(char *)TR, "-q", "--", emit, "1", "10", NULL};
	struct e2e_run r = e2e_runv_in(dir, cwd, argv);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
	DIR *d = opendir(cwd);
	cr_assert_not_null(d);
	struct dirent *de;
	char name[256] = "";
	int files = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		files++;
		snprintf(name, sizeof(name), "%s", de->d_name);
	}
	closedir(d);
	cr_assert_eq(files, 1, "expected one file in the working directory, got %d", files);
	char trace[600];
	snprintf(trace, sizeof(trace), "%s/%s", cwd, name);
	char *json = e2e_summary_json(dir, trace);
	char want[256];
	snprintf(want, sizeof(want), "prog_e2e_emit.%" PRId64 ".trc", e2e_json_int(json, "pid"));
	cr_expect_str_eq(name, want, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* The number of threads of process pid (its /proc/pid/task entries), or -1. */
static int thread_count(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* trace-run's threads while the program sleeps (it has printed "emitted" by then, so the
 * recorder is started and steady). */
static int recorder_threads(const char *compress_threads)
{
	const char *dir = e2e_tmpdir();
	char trace[300], outp[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	char *argv[] = {(char *)TR,
			"-q",
			"--compress-threads",
			(char *)compress_threads,
			"-o",
			trace,
			"--",
			(char *)EMIT,
			"1",
			"10",
			"sleep",
			"3000",
			NULL};
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	int n = -1;
	for (int i = 0; i < 200; i++) {
		char *out = e2e_slurp(outp);
		bool started = strstr(out, "emitted") != NULL;
		free(out);
		if (started) {
			usleep(200000);
			n = thread_count(pid);
			break;
		}
		usleep(10000);
	}
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_assert_gt(n, 0, "the program never said it had started");
	e2e_free(&r);
	e2e_rm_rf(dir);
	return n;
}

/* --compress-threads N starts N compressor threads in trace-run: 7 is six more than 1. */
Test(e2e_options, compress_threads_starts_that_many_compressors, .timeout = 120)
{
	int one = recorder_threads("1");
	int seven = recorder_threads("7");
	cr_expect_eq(seven - one, 6, "trace-run had %d threads with 1 compressor, %d with 7", one,
		     seven);
}

/* Every size and count option: both ends of the documented range are accepted (and the program
 * runs and is recorded), one past either end is refused with exactly one line. */
Test(e2e_options, documented_limits_accepted_one_past_refused, .timeout = 180)
{
	static const struct {
		const char *opt, *lo, *hi, *below, *above, *range;
		const char *what; /* as the message names it */
	} lim[] = {
		{"--buffer-size", "64K", "1G", "32K", "2G",
		 "a power of two from 64K to 1G, e.g. 4M", "invalid size"},
		{"--max-threads", "1", "4096", "0", "4097", "1 to 4096", "invalid value"},
		{"--compression-level", "1", "19", "0", "20", "1 to 19", "invalid level"},
		{"--compress-threads", "1", "64", "0", "65", "1 to 64", "invalid value"},
	};
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	/* Documented: --help gives each range. */
	struct e2e_run h = e2e_run(dir, TR, "--help", NULL);
	static const char *const documented[] = {"from 64K to 1G", "1 to 4096", "1..19", "1 to 64"};
	for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); i++)
		cr_expect(strstr(h.out, documented[i]), "--help does not say \"%s\"",
			  documented[i]);
	e2e_free(&h);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		const char *ok[] = {lim[i].lo, lim[i].hi};
		for (int k = 0; k < 2; k++) {
			int64_t emitted = 0;
			char *json =
				record(dir, trace, "1", "100", &emitted,
				       (const char *[]){"--no-preload", lim[i].opt, ok[k], NULL});
			cr_expect_eq(e2e_json_int(json, "events_recorded"), 100, "%s %s: %s",
				     lim[i].opt, ok[k], json);
			free(json);
		}
		const char *bad[] = {lim[i].below, lim[i].above};
		for (int k = 0; k < 2; k++) {
			char *argv[] = {(char *)TR,
					"-o",
					trace,
					(char *)lim[i].opt,
					(char *)bad[k],
					"--",
					(char *)EMIT,
					"1",
					"1",
					NULL};
			struct e2e_run r = e2e_runv(dir, argv);
			char want[300];
			snprintf(want, sizeof(want),
				 "trace-run: %s: %s \"%s\" (expected %s) (see trace-run --help)\n",
				 lim[i].opt, lim[i].what, bad[k], lim[i].range);
			cr_expect_eq(r.exit_code, 2, "%s %s: exit %d", lim[i].opt, bad[k],
				     r.exit_code);
			cr_expect_str_eq(r.err, want);
			cr_expect_str_eq(r.out, "", "%s %s: the program ran", lim[i].opt, bad[k]);
			e2e_free(&r);
		}
	}
	e2e_rm_rf(dir);
}

/* Sets RLIMIT_FSIZE (soft and hard, as `ulimit -f` does) in this test's worker, so trace-run
 * and what it runs inherit it. Lowering is always allowed; the worker runs this test only. */
static void limit_file_size(rlim_t bytes)
{
	struct rlimit rl = {bytes, bytes};
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0, "setrlimit: %s", strerror(errno));
}

/* ulimit -f stops the recording, never the start: the session's memfd (4 GiB of sparse rings
 * with the defaults) counts against the limit, so trace-run sizes it to fit, says so in one
 * line, and records. */
Test(e2e_options, a_file_size_limit_sizes_the_session_to_fit, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	limit_file_size(64ull << 20);
	struct e2e_run r = e2e_run(dir, TR, "--no-progress", "--no-preload", "-o", out, "--", EMIT,
				   "2", "1000", NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "trace-run: note: the file size limit (ulimit -f: 64.0 MiB) bounds "
				"the session's buffers: 256 threads at once (--max-threads), rings "
				"of at most 128.0 KiB (--buffer-size)\n") == r.err,
		  "%s", r.err);
	int64_t emitted = emitted_from(r.out);
	e2e_free(&r);
	cr_expect_eq(header_buffer_bytes(out), 128u << 10);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), emitted, "%s", json);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* A limit too low for the smallest session, or a --buffer-size given that cannot fit: one line
 * naming the limit and what to change, exit 1, nothing run, no trace left. */
Test(e2e_options, a_file_size_limit_too_low_is_one_line_naming_what_to_change, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], marker[256], script[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(marker, sizeof(marker), "%s/ran", dir);
	snprintf(script, sizeof(script), "touch %s", marker);
	limit_file_size(64ull << 20);
	struct e2e_run r = e2e_run(dir, TR, "--buffer-size", "1G", "-o", out, "--", "/bin/sh", "-c",
				   script, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(
		r.err, "trace-run: cannot create the trace session: the file size limit (ulimit "
		       "-f: 64.0 MiB) is below the 16.0 GiB its buffers need at the least with "
		       "--buffer-size 1.0 GiB (sparse memory, not disk): raise the limit or lower "
		       "--buffer-size\n");
	e2e_free(&r);
	limit_file_size(100u << 10);
	r = e2e_run(dir, TR, "-o", out, "--", "/bin/sh", "-c", script, NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.err,
			 "trace-run: cannot create the trace session: the file size limit (ulimit "
			 "-f: 100.0 KiB) is below the 1.1 MiB its buffers need at the least "
			 "(sparse memory, not disk): raise the limit\n");
	e2e_free(&r);
	struct stat st;
	cr_expect_neq(stat(marker, &st), 0, "the command ran");
	cr_expect_neq(stat(out, &st), 0, "a trace was left");
	e2e_rm_rf(dir);
}
