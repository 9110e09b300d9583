/* test_e2e_recorder.c - the recorder at the producer's speed, through the built commands:
 * chunks written stored when compression is behind are compressed before trace-run exits, or
 * kept with --keep-stored, and a recorder killed with stored chunks in the file leaves a
 * readable trace; trace-run's last line gives the trace's own event and loss figures. (The
 * call-heavy program recorded whole: test_e2e_calls.c.)
 *
 * TRC_TEST_STORE_ALL=1 makes trace-run's writer store every chunk, as when its compressors are
 * always behind (the test hook of tools/run/run_main.c). The stored chunks are compressed in the
 * background while the program runs (chunk_bgc.h; TRC_NO_BG_COMPRESS=1: not) and the rest
 * before exit.
 */
#include <dirent.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/stat.h>

#include "e2e_util.h"
#include "test_stored_util.h" /* tu_count_chunks */

#define TR e2e_path("bin/trace-run")

Test(e2e_recorder, stored_chunks_are_compressed_before_exit, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "--verbose", "--no-progress", "--no-preload",
				   "--buffer-size", "64M", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "2", "300000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "written uncompressed while compression was behind ("), "%s",
		  r.err);
	cr_expect(strstr(r.err, " MiB written while recording): "), "%s", r.err);
	cr_expect(strstr(r.err, " compressed before exit in "), "%s", r.err);
	e2e_free(&r);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_eq(st, 0, "%u stored chunks left", st);
	cr_expect_gt(co, 2);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 600000, "%s", json);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
	/* No temporary file is left beside the trace. */
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c compacting", dir);
	FILE *p = popen(cmd, "r");
	int left = -1;
	cr_assert_eq(fscanf(p, "%d", &left), 1);
	pclose(p);
	cr_expect_eq(left, 0);
	e2e_rm_rf(dir);
}

Test(e2e_recorder, keep_stored_leaves_them_and_the_trace_reads_the_same, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "--no-progress", "--no-preload", "--keep-stored",
				   "--buffer-size", "64M", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "2", "300000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	const char *said = strstr(r.err, "trace-run: ");
	said = said ? strstr(said + 1, "trace-run: ") : NULL; /* the line after the report */
	unsigned left = 0;
	int end = 0;
	cr_assert_not_null(said, "%s", r.err);
	cr_expect_eq(
		sscanf(said,
		       "trace-run: %u chunks were left uncompressed (--keep-stored): the trace "
		       "is larger than it need be until trace-dump compact compresses them\n%n",
		       &left, &end),
		1, "%s", said);
	cr_expect_gt(end, 0, "%s", said);
	e2e_free(&r);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_gt(st, 2);
	cr_expect_eq(left, st, "the line says %u, the file holds %u", left, st);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 600000, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* Stored chunks are normal when compression is behind: a compaction at exit that cost no
 * noticeable time is not mentioned (it read as a fault to a newcomer, on every run of make
 * demo on 2 cores). */
Test(e2e_recorder, a_quick_compaction_at_exit_is_not_mentioned, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_run(dir, TR, "--no-progress", "--no-preload", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "1", "1000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	/* One line: the report. */
	const char *nl = strchr(r.err, '\n');
	cr_expect(nl && !nl[1], "%s", r.err);
	cr_expect_null(strstr(r.err, "uncompressed"), "%s", r.err);
	cr_expect_null(strstr(r.err, "compress"), "%s", r.err);
	e2e_free(&r);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_eq(st, 0, "%u stored chunks left", st);
	cr_expect_gt(co, 0);
	e2e_rm_rf(dir);
}

/* A compaction at exit that takes long enough (1 s; here, with TRC_TEST_COMPACT_SAY_MS=0,
 * any: the test needs no compaction of seconds) is said, with its time, in words that say it
 * is normal and how to skip it. Nothing is compressed in the background. */
Test(e2e_recorder, a_long_compaction_at_exit_says_its_time_as_normal, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	setenv("TRC_NO_BG_COMPRESS", "1", 1);
	setenv("TRC_TEST_COMPACT_SAY_MS", "0", 1);
	struct e2e_run r = e2e_run(dir, TR, "--no-progress", "--no-preload", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "2", "300000", NULL);
	unsetenv("TRC_TEST_COMPACT_SAY_MS");
	unsetenv("TRC_NO_BG_COMPRESS");
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	const char *said = strstr(r.err, "trace-run: compressing the trace took ");
	cr_assert_not_null(said, "%s", r.err);
	double s = -1;
	unsigned bg = 99, all = 0;
	cr_expect_eq(sscanf(said,
			    "trace-run: compressing the trace took %lf s at exit: normal when the "
			    "program writes faster than compression runs (%u of %u chunks were "
			    "compressed in the background; --keep-stored skips this and leaves "
			    "the trace larger)",
			    &s, &bg, &all),
		     3, "%s", said);
	cr_expect_geq(s, 0.0, "%s", said);
	cr_expect_eq(bg, 0, "%s", said);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_eq(st, 0, "%u stored chunks left", st);
	cr_expect_eq(all, co, "%s: %u chunks in the file", said, co);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* The scheduling class of trace-run's (pid) thread named name (its /proc task comm):
 * SCHED_OTHER, SCHED_IDLE..., or -1 when it runs no thread of that name. */
static int thread_policy(pid_t pid, const char *name)
{
	char path[300], comm[32];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int policy = -1;
	struct dirent *e;
	while (policy < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool match = fgets(comm, sizeof(comm), f) && strcspn(comm, "\n") == strlen(name) &&
			     !strncmp(comm, name, strlen(name));
		fclose(f);
		if (match)
			policy = sched_getscheduler((pid_t)atoi(e->d_name));
	}
	closedir(d);
	return policy;
}

/* Starts trace-run (with flag) on a program that emits 1000 events and sleeps 1.5 s, into out,
 * and waits 0.7 s: its threads are all up then. *t0: for e2e_collect. */
static pid_t start_on_a_sleeper(const char *dir, const char *out, const char *flag, double *t0)
{
	char *argv[] = {
		(char *)TR, "-q",	 "--no-preload", (char *)flag,
		"-o",	    (char *)out, "--",		 (char *)e2e_path("tests/prog_e2e_emit"),
		"1",	    "1000",	 "sleep",	 "1500",
		NULL};
	*t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	usleep(700000);
	return pid;
}

/* --keep-stored: no background compressor (its copies would be thrown away); without it, one
 * (which also shows the name check can see it). */
Test(e2e_recorder, keep_stored_runs_no_background_compressor, .timeout = 60)
{
	for (int keep = 0; keep < 2; keep++) {
		const char *dir = e2e_tmpdir();
		char out[256];
		snprintf(out, sizeof(out), "%s/t.trc", dir);
		double t0;
		pid_t pid =
			start_on_a_sleeper(dir, out, keep ? "--keep-stored" : "--no-progress", &t0);
		bool bgc = thread_policy(pid, "trc-bgc") >= 0;
		bool sampler = thread_policy(pid, "trc-sampler") >= 0;
		struct e2e_run r = {0};
		e2e_collect(dir, pid, &r, t0);
		cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
		cr_expect(sampler, "no trc-sampler thread seen: the check sees nothing");
		cr_expect_eq(bgc, !keep, "%s: background compressor %s",
			     keep ? "--keep-stored" : "default", bgc ? "running" : "absent");
		e2e_free(&r);
		e2e_rm_rf(dir);
	}
}

/* The threads that keep the rings from overflowing (drain, writer: the drain waits for it
 * when chunks are stored) run in the normal class; the compressors and the background
 * compressor only on idle CPU (what they cannot take is stored). */
Test(e2e_recorder, compressors_take_only_idle_cpu_drain_and_writer_do_not, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	double t0;
	pid_t pid = start_on_a_sleeper(dir, out, "--no-progress", &t0);
	int drain = thread_policy(pid, "trc-drain"), writer = thread_policy(pid, "trc-writer");
	int compress = thread_policy(pid, "trc-compress"), bgc = thread_policy(pid, "trc-bgc");
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_eq(drain, SCHED_OTHER, "trc-drain: policy %d", drain);
	cr_expect_eq(writer, SCHED_OTHER, "trc-writer: policy %d", writer);
	cr_expect_eq(compress, SCHED_IDLE, "trc-compress: policy %d", compress);
	cr_expect_eq(bgc, SCHED_IDLE, "trc-bgc: policy %d", bgc);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(e2e_recorder, killed_recorder_with_stored_chunks_leaves_a_readable_trace, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256], pidfile[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	char *argv[] = {(char *)TR,
			"-q",
			"--no-preload",
			"-o",
			out,
			"--",
			(char *)e2e_path("tests/prog_e2e_emit"),
			"1",
			"200000",
			"pidfile",
			pidfile,
			"sleep",
			"20000",
			"linger",
			NULL}; /* the emitter's stream stays open */
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	unsetenv("TRC_TEST_STORE_ALL");
	/* The open chunks are ended every second: past that, stored chunks are on disk. */
	usleep(2500000);
	e2e_kill_recorder(dir, pid, t0, pidfile);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_gt(st, 0, "no stored chunk in the file");
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 1, "not reported truncated: %s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 200000, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* trace-run's last line about stored chunks: N stored, M compressed in the background, K
 * before exit, R copies refused (0 when not said). */
struct stored_line {
	unsigned long long n, m, k, refused;
};

static struct stored_line stored_line(const char *err)
{
	struct stored_line l = {0};
	const char *p = strstr(err, "trace-run: ");
	for (; p; p = strstr(p + 1, "trace-run: ")) {
		if (sscanf(p, "trace-run: %llu chunk", &l.n) == 1)
			break;
	}
	cr_assert_not_null(p, "%s", err);
	const char *q = strstr(p, "while recording): ");
	cr_assert_not_null(q, "%s", err);
	cr_assert_eq(sscanf(q,
			    "while recording): %llu compressed in the background, %llu "
			    "compressed before exit in",
			    &l.m, &l.k),
		     2, "%s", err);
	const char *r = strstr(q, " s (");
	if (r)
		cr_assert_eq(sscanf(r, " s (%llu background cop", &l.refused), 1, "%s", err);
	return l;
}

/* Records, streams and chunks of a finished trace, as the summary says them. */
static void expect_whole(const char *dir, const char *out, int64_t events)
{
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_eq(st, 0, "%u stored chunks left", st);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), events, "%s", json);
	cr_expect_eq(e2e_json_int(json, "events_lost"), 0, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
}

static struct stored_line run_sleeper(const char *dir, const char *out, const char *no_bg,
				      const char *mismatch)
{
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	if (no_bg)
		setenv("TRC_NO_BG_COMPRESS", "1", 1);
	if (mismatch)
		setenv("TRC_TEST_BGC_MISMATCH", "1", 1);
	/* 2 x 300000 events, then 3 s of sleep: time for the background. */
	struct e2e_run r = e2e_run(
		dir, TR, "--verbose", "--no-progress", "--no-preload", "--buffer-size", "64M", "-o",
		out, "--", e2e_path("tests/prog_e2e_emit"), "2", "300000", "sleep", "3000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	unsetenv("TRC_NO_BG_COMPRESS");
	unsetenv("TRC_TEST_BGC_MISMATCH");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	struct stored_line l = stored_line(r.err);
	e2e_free(&r);
	return l;
}

Test(e2e_recorder, stored_chunks_are_compressed_in_the_background_while_the_program_runs,
     .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256], out2[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(out2, sizeof(out2), "%s/nobg.trc", dir);
	struct stored_line l = run_sleeper(dir, out, NULL, NULL);
	/* The 1 MiB chunks written during the 3 s are taken in the background (the chunks of
	 * a 16th of that and less, and those written after the program ended, at the end). */
	cr_expect_geq(l.m, 2, "%llu of %llu in the background", l.m, l.n);
	cr_expect_eq(l.m + l.k, l.n);
	cr_expect_eq(l.refused, 0);
	expect_whole(dir, out, 600000);
	struct stored_line z = run_sleeper(dir, out2, "no", NULL);
	cr_expect_eq(z.m, 0);
	cr_expect_eq(z.k, z.n);
	cr_expect_gt(z.n, 2);
	expect_whole(dir, out2, 600000);
	/* (That the file reads back the same with its background copies as without them, which
	 * two runs cannot show: test_chunk_bgc.c.) */
	e2e_rm_rf(dir);
}

Test(e2e_recorder, a_background_copy_that_does_not_match_is_compressed_again_before_exit,
     .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct stored_line l = run_sleeper(dir, out, NULL, "yes");
	cr_expect_eq(l.refused, 1);
	cr_expect_geq(l.m, 1, "%llu of %llu in the background", l.m, l.n);
	cr_expect_eq(l.m + l.k, l.n);
	expect_whole(dir, out, 600000);
	e2e_rm_rf(dir);
}

/* The side file of trace-run (pid), as its size, or -1 while it has none with a chunk in it:
 * an open file beside the trace whose link names no file ("... (deleted)"). */
static long side_file_bytes(pid_t pid, const char *dir)
{
	char fds[64];
	snprintf(fds, sizeof(fds), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(fds);
	if (!d)
		return -1;
	long size = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		char link[600], target[512];
		snprintf(link, sizeof(link), "%s/%s", fds, e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strncmp(target, dir, strlen(dir)) != 0 || !strstr(target, "(deleted)"))
			continue;
		/* The writer's spill files are unlinked there too: the side file is the one that
		 * starts with a compressed chunk. */
		FILE *f = fopen(link, "rb");
		uint8_t h[TRCFILE__CHUNK_HDR_BYTES];
		struct trcfile__chunk_hdr ch;
		const char *why;
		if (f && fread(h, 1, sizeof(h), f) == sizeof(h) &&
		    trcfile__chunk_hdr_get(h, &ch, &why) == 0 && !trcfile__chunk_is_stored(&ch)) {
			struct stat st;
			if (stat(link, &st) == 0)
				size = (long)st.st_size;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return size;
}

/* events_recorded of `trace-dump summary --json` on a trace still being written, or -1 when
 * it cannot be read yet. */
static int64_t live_events_recorded(const char *dir, const char *trace)
{
	struct e2e_run r = e2e_summary_json_run(dir, trace);
	int64_t n = r.exit_code == 0 ? e2e_json_int(r.out, "events_recorded") : -1;
	e2e_free(&r);
	return n;
}

Test(e2e_recorder, killed_recorder_with_a_side_file_in_flight_leaves_a_readable_trace,
     .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256], pidfile[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	char *argv[] = {(char *)TR,
			"-q",
			"--no-preload",
			"-o",
			out,
			"--",
			(char *)e2e_path("tests/prog_e2e_emit"),
			"1",
			"400000",
			"pidfile",
			pidfile,
			"sleep",
			"20000",
			NULL};
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	unsetenv("TRC_TEST_STORE_ALL");
	long side = -1;
	for (int i = 0; i < 1500 && side <= 0; i++) {
		usleep(10000);
		side = side_file_bytes(pid, dir);
	}
	cr_assert_gt(side, 0, "no side file with a compressed chunk in it");
	/* The kill must find every event in the file (the last chunk may still be in the drain
	 * or the writer on a loaded machine): wait until the live file holds them all. */
	int64_t live = -1;
	for (int i = 0; i < 600 && live != 400000; i++) {
		live = live_events_recorded(dir, out);
		if (live != 400000)
			usleep(50000);
	}
	cr_assert_eq(live, 400000, "the live trace never held every event");
	e2e_kill_recorder(dir, pid, t0, pidfile);
	unsigned st, co;
	tu_count_chunks(out, &st, &co);
	cr_expect_gt(st, 0, "no stored chunk in the file");
	/* Only the side file had the compressed copies: the trace is as it would be without. */
	cr_expect_eq(co, 0);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 1, "not reported truncated: %s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 400000, "%s", json);
	free(json);
	/* Nothing is left beside the trace but what the test made. */
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -v -c -E '^(t.trc|pid|dump|stderr|stdout)$'",
		 dir);
	FILE *p = popen(cmd, "r");
	int left = -1;
	cr_assert_eq(fscanf(p, "%d", &left), 1);
	pclose(p);
	cr_expect_eq(left, 0);
	e2e_rm_rf(dir);
}

/* The "N events, M lost" of trace-run's last line are the trace's own figures (summary --json
 * events_recorded, events_lost), in a run that loses events (one ring slot for four threads
 * emitting a million each at once: a thread without a slot loses its events): the lost figure
 * counts the events, not the LOST records that carry them. */
Test(e2e_recorder, report_line_counts_what_the_trace_holds, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, e2e_path("bin/trace-run"), "--no-progress", "--no-preload",
				   "--max-threads", "1", "-o", out, "--",
				   e2e_path("tests/prog_e2e_emit"), "4", "1000000", NULL);
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	const char *line = strstr(r.err, "trace-run: ");
	cr_assert_not_null(line, "%s", r.err);
	const char *figs = strstr(line, "): ");
	cr_assert_not_null(figs, "%s", r.err);
	uint64_t events = 0, lost = 0;
	cr_assert_eq(sscanf(figs, "): %" SCNu64 " events, %" SCNu64 " lost", &events, &lost), 2,
		     "%s", r.err);
	char *json = e2e_summary_json(dir, out);
	int64_t recorded = e2e_json_int(json, "events_recorded");
	int64_t events_lost = e2e_json_int(json, "events_lost");
	cr_assert_gt(events_lost, 0, "one slot, four threads at once: %s", json);
	cr_expect_eq((int64_t)events, recorded, "report %" PRIu64 " events, trace %" PRId64, events,
		     recorded);
	cr_expect_eq((int64_t)lost, events_lost, "report %" PRIu64 " lost, trace %" PRId64, lost,
		     events_lost);
	free(json);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
