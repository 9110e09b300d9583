/* test_e2e_write_fail.c - trace-run when the trace cannot be written or closed (README,
 * trace-run, "When the trace cannot be written"). A full disk does not stop the program: one
 * message, a trace that reads back whole with what the disk did not take counted lost (reason
 * disk_full, by thread), the program's own status.
 * Every other failure (an I/O error while recording, fsync, close or the footer's write
 * failing, an output that refuses every write) is one line and exit 1. The failures are made
 * by tests/shim_failio.c, preloaded into trace-run, on the trace file only. A compaction that
 * fails leaves no temporary file behind. */
#include <dirent.h>
#include <sys/resource.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")
#define EMIT e2e_path("tests/prog_e2e_emit")

/* Runs argv (trace-run ...) with the shim in its LD_PRELOAD doing what `mode` says
 * (TRC_TEST_FAILIO), and with store_all, trace-run's writer storing every chunk
 * (TRC_TEST_STORE_ALL). */
static struct e2e_run run_with_shim(const char *dir, const char *mode, bool store_all,
				    char *const argv[])
{
	setenv("LD_PRELOAD", e2e_path("tests/shim_failio.so"), 1);
	setenv("TRC_TEST_FAILIO", mode, 1);
	if (store_all)
		setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_runv(dir, argv);
	unsetenv("LD_PRELOAD");
	unsetenv("TRC_TEST_FAILIO");
	unsetenv("TRC_TEST_STORE_ALL");
	return r;
}

/* Runs trace-run -q -o trace over a shell that runs prog_e2e_emit 2 6000000 and exits 3, with
 * the shim making writes or closes of the trace fail as `mode` says. */
static struct e2e_run run_failing(const char *dir, const char *trace, const char *mode)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "%s 2 6000000; exit 3", EMIT);
	char *argv[] = {(char *)TR, "-q", "-o", (char *)trace, "--", "/bin/sh", "-c", cmd, NULL};
	return run_with_shim(dir, mode, false, argv);
}

/* Checks a trace whose disk filled while `emitted` events were emitted: the footer was written
 * (not truncated), every event is recorded or lost (emitted = recorded + lost, exactly), the
 * loss is the disk's (reason disk_full) and belongs to the threads whose chunks were not
 * written (their lost column sums to it), and the notes say the disk filled. */
static void check_full_trace(const char *dir, const char *trace, int64_t emitted)
{
	char *json = e2e_summary_json(dir, trace);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	int64_t rec = e2e_json_int(json, "events_recorded");
	int64_t lost = e2e_json_int(json, "events_lost");
	cr_expect_gt(rec, 0, "%s", json);
	cr_expect_gt(lost, 0, "%s", json);
	cr_expect_eq(rec + lost, emitted, "recorded %lld + lost %lld: %s", (long long)rec,
		     (long long)lost, json);
	cr_expect_eq(e2e_json_int(json, "disk_full"), lost, "%s", json);
	int64_t by_thread = 0;
	const char *th = strstr(json, "\"threads\":[");
	const char *th_end = th ? strchr(th, ']') : NULL;
	cr_assert_not_null(th_end, "%s", json);
	for (const char *p = th; (p = strstr(p, "\"lost\":")) && p < th_end; p++)
		by_thread += strtoll(p + 7, NULL, 10);
	cr_expect_eq(by_thread, lost, "the threads' lost column: %s", json);
	cr_expect_not_null(strstr(json, "the disk filled while recording"), "%s", json);
	free(json);
	int code;
	char *text = e2e_summary_text(dir, trace, &code);
	cr_expect_null(strstr(text, "recorder killed"), "%s", text);
	cr_expect_null(strstr(text, "TRUNCATED"), "%s", text);
	free(text);
}

/* Runs trace-run --no-progress --no-preload -o trace -- prog_e2e_emit 2 6000000 (no
 * allocation events: the program's count is every event), with the shim doing `mode` (NULL:
 * none) and every chunk stored when store_all. */
static struct e2e_run run_emit_full(const char *dir, const char *trace, const char *mode,
				    bool store_all)
{
	char *argv[] = {(char *)TR, "--no-progress", "--no-preload", "-o", (char *)trace, "--",
			(char *)EMIT, "2", "6000000", NULL};
	if (mode)
		return run_with_shim(dir, mode, store_all, argv);
	if (store_all)
		setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r = e2e_runv(dir, argv);
	unsetenv("TRC_TEST_STORE_ALL");
	return r;
}

/* trace-run's words for a run the disk cut short: the disk-filled line, and the last line's
 * loss with its share. */
static void check_full_words(const struct e2e_run *r, const char *trace, const char *why)
{
	char want[600];
	snprintf(want, sizeof(want), "trace-run: the disk filled: writing %s failed: %s; the "
				     "program ran on, and the ",
		 trace, why);
	cr_expect_not_null(strstr(r->err, want), "%s", r->err);
	cr_expect_not_null(strstr(r->err, " as the disk filled), peak RSS"), "%s", r->err);
	cr_expect_null(strstr(r->err, " 0 lost"), "%s", r->err);
}

/* Disk full at 1.5 MiB: the program runs to its end and exits with its status (3), and what
 * the disk did not take is lost and counted: the trace reads back whole (footer and all). */
Test(e2e_write_fail, disk_full_stops_the_recording_not_the_program, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300], want[600];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	struct e2e_run r = run_failing(dir, trace, "enospc:1572864");
	cr_expect_eq(r.exit_code, 3, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.out, "emitted 12000000\n");
	snprintf(want, sizeof(want),
		 "trace-run: the disk filled: writing %s failed: No space left on device; the "
		 "program ran on, and the ",
		 trace);
	cr_expect_eq(strncmp(r.err, want, strlen(want)), 0, "%s", r.err);
	e2e_free(&r);
	char *json = e2e_summary_json(dir, trace);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	cr_expect_gt(e2e_json_int(json, "disk_full"), 0, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* A disk that fills part way (ENOSPC past 1.5 MiB): every event emitted is recorded or counted
 * lost, by thread, as the disk's; trace-run's last line says so. */
Test(e2e_write_fail, a_full_disk_counts_every_event_not_written, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	struct e2e_run r = run_emit_full(dir, trace, "enospc:1572864", false);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.out, "emitted 12000000\n");
	check_full_words(&r, trace, "No space left on device");
	e2e_free(&r);
	check_full_trace(dir, trace, 12000000);
	e2e_rm_rf(dir);
}

/* The file size limit (RLIMIT_FSIZE, EFBIG) is a full disk too. Every chunk is to be stored
 * (TRC_TEST_STORE_ALL), but 2 MiB is short room: they are compressed, so the file holds about
 * what the compressed trace would (10.1 M of the 12 M events here; stored, the 2 MiB held 1.0 M
 * and the run said "0 lost"). */
Test(e2e_write_fail, the_file_size_limit_counts_every_event_not_written, .timeout = 180)
{
	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	struct rlimit old, low;
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 2u << 20;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	struct e2e_run r = run_emit_full(dir, trace, NULL, true);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.out, "emitted 12000000\n");
	check_full_words(&r, trace, "File too large");
	e2e_free(&r);
	check_full_trace(dir, trace, 12000000);
	char *json = e2e_summary_json(dir, trace);
	cr_expect_geq(e2e_json_int(json, "events_recorded"), 4000000, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

/* Each failure that is not a full disk: exit 1, and exactly one line saying what failed and
 * how the program ended. */
Test(e2e_write_fail, other_write_or_close_failures_exit_1, .timeout = 180)
{
	static const struct {
		const char *mode, *verb, *what;
	} cases[] = {
		{"eio:200000", "writing", "an I/O error while recording"},
		{"footer", "closing", "the footer's write"},
		{"fsync", "closing", "fsync"},
		{"close", "closing", "close"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *dir = e2e_tmpdir();
		char trace[300], want[600];
		snprintf(trace, sizeof(trace), "%s/t.trc", dir);
		struct e2e_run r = run_failing(dir, trace, cases[i].mode);
		cr_expect_eq(r.exit_code, 1, "%s: exit %d: %s", cases[i].what, r.exit_code, r.err);
		cr_expect_str_eq(r.out, "emitted 12000000\n", "%s", cases[i].what);
		snprintf(want, sizeof(want),
			 "trace-run: %s %s failed: Input/output error; the trace is incomplete or "
			 "unreadable (program exited with status 3)\n",
			 cases[i].verb, trace);
		cr_expect_str_eq(r.err, want, "%s", cases[i].what);
		e2e_free(&r);
		e2e_rm_rf(dir);
	}
}

/* With stored chunks the writer leaves the trace unsynced: the compaction syncs the trace that
 * replaces it, or, with --keep-stored, trace-run syncs the trace itself. Either sync failing
 * is the same one line and exit 1 as the writer's own. */
Test(e2e_write_fail, a_trace_with_stored_chunks_whose_sync_fails_exits_1, .timeout = 120)
{
	for (int keep = 0; keep < 2; keep++) {
		const char *dir = e2e_tmpdir();
		char trace[300], cmd[600], want[600];
		snprintf(trace, sizeof(trace), "%s/t.trc", dir);
		snprintf(cmd, sizeof(cmd), "%s 1 200000; exit 3", EMIT);
		char *argv[] = {(char *)TR, "-q",  keep ? "--keep-stored" : "-q",
				"-o",	    trace, "--",
				"/bin/sh",  "-c",  cmd,
				NULL};
		struct e2e_run r = run_with_shim(dir, "fsync", true, argv);
		const char *how = keep ? "--keep-stored" : "compacted";
		cr_expect_eq(r.exit_code, 1, "%s: exit %d: %s", how, r.exit_code, r.err);
		snprintf(
			want, sizeof(want),
			"trace-run: closing %s failed: Input/output error; the trace is incomplete "
			"or unreadable (program exited with status 3)\n",
			trace);
		cr_expect_str_eq(r.err, want, "%s", how);
		/* The failed compaction took its temporary file away with it. */
		DIR *d = opendir(dir);
		cr_assert_not_null(d);
		for (struct dirent *e; (e = readdir(d));)
			cr_expect_null(strstr(e->d_name, ".compacting."), "%s: %s left in %s", how,
				       e->d_name, dir);
		closedir(d);
		e2e_free(&r);
		e2e_rm_rf(dir);
	}
}

/* Which files trace-run syncs: the trace once; with stored chunks, not the trace (the
 * compaction replaces it at once: its sync took 17-45 ms here for a call-heavy program) but
 * the compaction's new trace once and then the directory it was renamed in, or the trace once
 * with --keep-stored. */
Test(e2e_write_fail, the_trace_that_stays_is_synced_once, .timeout = 120)
{
	static const struct {
		bool store, keep;
	} cases[] = {{false, false}, {true, false}, {true, true}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *dir = e2e_tmpdir();
		char trace[300], log[300], mode[320];
		snprintf(trace, sizeof(trace), "%s/t.trc", dir);
		snprintf(log, sizeof(log), "%s/sync.log", dir);
		snprintf(mode, sizeof(mode), "synclog:%s", log);
		/* --verbose: its last lines say whether chunks were stored (without the test hook
		 * a few may be, when the idle-class compressor waits for a core at the end). */
		char *argv[] = {(char *)TR,
				"--verbose",
				cases[i].keep ? "--keep-stored" : "--no-progress",
				"-o",
				trace,
				"--",
				(char *)EMIT,
				"1",
				"200000",
				NULL};
		struct e2e_run r = run_with_shim(dir, mode, cases[i].store, argv);
		cr_expect_eq(r.exit_code, 0, "case %zu: exit %d: %s", i, r.exit_code, r.err);
		char *got = e2e_slurp(log);
		bool stored = strstr(r.err, "written uncompressed") ||
			      strstr(r.err, "left uncompressed (--keep-stored)");
		cr_expect(stored || !cases[i].store, "case %zu: nothing stored: %s", i, r.err);
		/* The compacted copy, then its directory after the rename. */
		const char *want = stored && !cases[i].keep ? "compacting\ndirectory\n" : "trace\n";
		cr_expect_str_eq(got, want, "case %zu (stored %d, --keep-stored %d): %s", i, stored,
				 cases[i].keep, r.err);
		free(got);
		e2e_free(&r);
		e2e_rm_rf(dir);
	}
}

/* An output that takes no write at all (/dev/full): exit 1 before the program runs. */
Test(e2e_write_fail, output_refusing_every_write_exits_1_before_the_program, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	struct e2e_run r = e2e_run(dir, TR, "-q", "-o", "/dev/full", "--", EMIT, "1", "10", NULL);
	cr_expect_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.out, "", "the program ran");
	cr_expect_str_eq(r.err, "trace-run: cannot create /dev/full: No space left on device\n");
	e2e_free(&r);
	e2e_rm_rf(dir);
}
