/* test_e2e_recorder.c - the recorder at the producer's speed, through the built commands
 * (issue 11): chunks written stored when compression is behind are compressed before trace-run
 * exits, or kept with --keep-stored, and a recorder killed with stored chunks in the file leaves
 * a readable trace. (The call-heavy program recorded whole: test_e2e_calls.c.)
 *
 * TRC_TEST_STORE_ALL=1 makes trace-run's writer store every chunk, as when its compressors are
 * always behind (the test hook of tools/run_main.c).
 */
#include "e2e_util.h"
#include "trcfile_codec.h"
#include "trcfile_stored.h"

#define TR e2e_path("bin/trace-run")

/* Stored and compressed chunks of a trace, by walking its chunk headers. */
static void count_chunks(const char *path, unsigned *stored, unsigned *compressed)
{
	*stored = *compressed = 0;
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	uint8_t h[TRCFILE__CHUNK_HDR_BYTES];
	cr_assert_eq(fread(h, 1, 20, f), 20);
	long off = (long)trcfile__get32(h + 16);
	for (;;) {
		fseek(f, off, SEEK_SET);
		if (fread(h, 1, sizeof(h), f) != sizeof(h))
			break;
		struct trcfile__chunk_hdr ch;
		const char *why;
		if (trcfile__chunk_hdr_get(h, &ch, &why) != 0)
			break;
		if (trcfile__chunk_is_stored(&ch))
			(*stored)++;
		else
			(*compressed)++;
		off += (long)(TRCFILE__CHUNK_HDR_BYTES + ch.comp_bytes);
	}
	fclose(f);
}

Test(e2e_recorder, stored_chunks_are_compressed_before_exit, .timeout = 120)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	setenv("TRC_TEST_STORE_ALL", "1", 1);
	struct e2e_run r =
		e2e_run(dir, TR, "--no-progress", "--no-preload", "--buffer-size", "64M", "-o", out,
			"--", e2e_path("tests/prog_e2e_emit"), "2", "300000", NULL);
	unsetenv("TRC_TEST_STORE_ALL");
	cr_assert_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect(strstr(r.err, "written uncompressed while compression was behind ("), "%s",
		  r.err);
	cr_expect(strstr(r.err, " MiB written while recording); compressed before exit in "), "%s",
		  r.err);
	e2e_free(&r);
	unsigned st, co;
	count_chunks(out, &st, &co);
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
	cr_expect(strstr(r.err, "left so (--keep-stored)"), "%s", r.err);
	e2e_free(&r);
	unsigned st, co;
	count_chunks(out, &st, &co);
	cr_expect_gt(st, 2);
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 600000, "%s", json);
	cr_expect_eq(e2e_json_int(json, "truncated"), 0, "%s", json);
	free(json);
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
	kill(pid, SIGKILL);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	e2e_free(&r);
	char *pidtxt = e2e_slurp(pidfile);
	int prog = atoi(pidtxt);
	free(pidtxt);
	if (prog > 0)
		kill(prog, SIGKILL);
	unsigned st, co;
	count_chunks(out, &st, &co);
	cr_expect_gt(st, 0, "no stored chunk in the file");
	char *json = e2e_summary_json(dir, out);
	cr_expect_eq(e2e_json_int(json, "truncated"), 1, "not reported truncated: %s", json);
	cr_expect_eq(e2e_json_int(json, "events_recorded"), 200000, "%s", json);
	free(json);
	e2e_rm_rf(dir);
}
