/* test_pprof.c - `trace-dump pprof` read back by an outside reader.
 *
 * Purpose: the heap profile is only right if pprof's schema reads it as meant. Each test
 * exports a trace made with the writer, gunzips the output, decodes it with `protoc --decode`
 * against tests/profile.proto (pprof's field numbers, copied) and checks it with
 * tests/check_pprof.py (pprof's rules), then checks totals against `trace-dump summary --json`
 * and exact stacks of the small fixed trace (test_trcfile_util.h).
 * Needs protoc, gzip and python3 (`make deps`).
 * Threads: each test is one process (Criterion); the commands run as children.
 */
#include <criterion/criterion.h>
#include <sys/wait.h>

#include "test_trcfile_util.h"

/* Exports dir/in.trc with mode, decodes, checks; returns the checker's JSON. */
static char *tq_export(const char *dir, const char *mode)
{
	int rc = tu_sh("%s/bin/trace-dump pprof %s '%s/in.trc' -o '%s/out.pb.gz' 2>'%s/err'",
		       tu_build(), mode, dir, dir, dir);
	cr_assert_eq(rc, 0, "trace-dump pprof %s: %s", mode, tu_slurp_text(dir, "err"));
	rc = tu_sh("gzip -dc '%s/out.pb.gz' | protoc --decode=perftools.profiles.Profile -Itests "
		   "tests/profile.proto > '%s/out.txt' 2>'%s/err'",
		   dir, dir, dir);
	cr_assert_eq(rc, 0, "not a gzip profile.proto: %s", tu_slurp_text(dir, "err"));
	rc = tu_sh("python3 tests/check_pprof.py '%s/out.txt' > '%s/check' 2>&1", dir, dir);
	char *out = tu_slurp_text(dir, "check");
	cr_assert_eq(rc, 0, "%s", out);
	return out;
}

/* A top-level number of `trace-dump summary --json` of dir/in.trc (the same key names a
 * thread's or a process's figure inside arrays: read by a JSON parser). */
static unsigned long long tq_summary(const char *dir, const char *key)
{
	int rc = tu_sh("%s/bin/trace-dump summary --json '%s/in.trc' | python3 -c 'import json, "
		       "sys; print(json.load(sys.stdin)[\"%s\"])' > '%s/sum.txt'",
		       tu_build(), dir, key, dir);
	cr_assert_eq(rc, 0, "%s not in the summary", key);
	char *s = tu_slurp_text(dir, "sum.txt");
	unsigned long long v = strtoull(s, NULL, 10);
	free(s);
	return v;
}

/* Asserts the profile's total is [objects, bytes]. */
static void tq_total(const char *rep, unsigned long long objs, unsigned long long bytes)
{
	char want[100];
	snprintf(want, sizeof(want), "\"total\": [%llu, %llu]", objs, bytes);
	cr_assert(strstr(rep, want), "want %s (from the summary) in\n%s", want, rep);
}

#define tq_has(rep, s) cr_assert(strstr(rep, s), "not in the report: %s\n%s", s, rep)

Test(pprof, small_trace_profiles_agree_with_summary, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	/* summary: allocs 4, alloc_bytes 4544, live_peak_bytes 4480, live_end_bytes 4352. Thread
	 * a allocates 64, 128, 256 inside main/parse; thread b 4096 inside compute; a frees the
	 * 128, b frees a's 64. The peak (4480) is after b's 4096 and a's free of 128. */
	char *r = tq_export(dir, "--alloc");
	tq_has(r, "\"types\": [[\"alloc_objects\", \"count\"], [\"alloc_space\", \"bytes\"]]");
	tq_total(r, tq_summary(dir, "allocs"), tq_summary(dir, "alloc_bytes"));
	tq_has(r, "\"total\": [4, 4544]");
	tq_has(r, "\"tid 4242 main;main;parse\": [3, 448]");
	tq_has(r, "\"tid 4243 worker \\\"1\\\";compute\": [1, 4096]");
	free(r);
	r = tq_export(dir, "--live-at end");
	tq_has(r, "\"types\": [[\"inuse_objects\", \"count\"], [\"inuse_space\", \"bytes\"]]");
	tq_total(r, 2, tq_summary(dir, "live_end_bytes"));
	tq_has(r, "\"total\": [2, 4352]");
	tq_has(r, "\"tid 4242 main;main;parse\": [1, 256]");
	free(r);
	r = tq_export(dir, "--live-at peak");
	tq_total(r, 3, tq_summary(dir, "live_peak_bytes"));
	tq_has(r, "\"total\": [3, 4480]");
	free(r);
	/* Before any allocation: empty; after the first: 64 bytes. */
	r = tq_export(dir, "--live-at 1us");
	tq_has(r, "\"total\": [0, 0]");
	free(r);
	r = tq_export(dir, "--live-at 1150ns");
	tq_has(r, "\"total\": [1, 64]");
	free(r);
	tu_rm_rf(dir);
}

/* A recorded program built with -finstrument-functions: its frames carry the functions' names
 * from the program's symbols (not module+offset). prog_finst_calls allocates once, stdout's
 * buffer, in printf called from main after fib has returned: with call stacks the profile
 * has the whole call, without them the instrumented frame open then. */
Test(pprof, recorded_program_frames_are_named, .timeout = 60)
{
	if (getenv("TRC_SANITIZER_TIER"))
		cr_skip_test(
			"a sanitizer's allocator is not the preload library's: no allocations");
	const char *dir = tu_tmpdir();
	int rc = tu_sh("%s/bin/trace-run -q -o '%s/in.trc' -- %s/tests/prog_finst_calls 5 "
		       ">/dev/null 2>'%s/err'",
		       tu_build(), dir, tu_build(), dir);
	cr_assert_eq(rc, 0, "trace-run: %s", tu_slurp_text(dir, "err"));
	/* With its call stack (the default): main's call into printf, down to the allocation. */
	char *r = tq_export(dir, "--alloc");
	cr_assert(strstr(r, ";main;printf;"), "%s", r);
	cr_assert(strstr(r, "_IO_file_doallocate\": [1, 4096]"), "%s", r);
	cr_assert_null(strstr(r, "prog_finst_calls+0x"), "%s", r);
	free(r);
	/* Without call stacks: the instrumented function open at the allocation, main. */
	rc = tu_sh("%s/bin/trace-run -q --alloc-stacks none -o '%s/in.trc' -- "
		   "%s/tests/prog_finst_calls 5 >/dev/null 2>'%s/err'",
		   tu_build(), dir, tu_build(), dir);
	cr_assert_eq(rc, 0, "trace-run: %s", tu_slurp_text(dir, "err"));
	r = tq_export(dir, "--alloc");
	cr_assert(strstr(r, ";main\": [1, "), "%s", r);
	cr_assert_null(strstr(r, "prog_finst_calls+0x"), "%s", r);
	free(r);
	tu_rm_rf(dir);
}

Test(pprof, usage_errors, .timeout = 60)
{
	const char *td = tu_build();
	cr_assert_eq(tu_sh("%s/bin/trace-dump pprof x.trc -o y 2>/dev/null", td), 2);
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump pprof --alloc --live-at end x.trc -o y 2>/dev/null", td),
		2);
	cr_assert_eq(tu_sh("%s/bin/trace-dump pprof --live-at soon x.trc -o y 2>/dev/null", td), 2);
	cr_assert_eq(tu_sh("%s/bin/trace-dump pprof --alloc x.trc 2>/dev/null", td), 2);
	cr_assert_eq(tu_sh("%s/bin/trace-dump pprof --help | grep -q -- --live-at", td), 0);
}

/* What pprof shows beside the samples: the period (space in bytes, 1: nothing sampled), the
 * main binary (the program's module named as its command, with its build-id), and each
 * thread's root frame under the name the thread gave itself in its own stream, which the
 * reader's metadata tables do not hold. */
Test(pprof, period_main_binary_and_thread_names_from_their_streams, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4243);
	struct tu_stream *meta = &p.streams[0], *t = &p.streams[1];
	static const char *const paths[] = {"/usr/lib/libc.so.6", "/opt/app/bin/prog"};
	static const uint64_t starts[] = {0x7f0000000000ull, 0x400000};
	for (int i = 0; i < 2; i++) {
		struct trc_record r = {.type = TRC_REC_MODULE, .ts_ns = 1000000010};
		r.module.pid = 4242;
		r.module.start = starts[i];
		r.module.end = starts[i] + 0x100000;
		r.module.offset = 0x1000;
		r.module.path = paths[i];
		r.module.path_len = (uint32_t)strlen(paths[i]);
		static const uint8_t ids[2][2] = {{0xa0, 0x0f}, {0xa1, 0x0f}};
		r.module.build_id = ids[i];
		r.module.build_id_len = 2;
		tu_add(meta, &r);
	}
	struct trc_record r = {.type = TRC_REC_THREAD, .ts_ns = 1000000020};
	r.thread.pid = 4242;
	r.thread.tid = 4243;
	r.thread.name = "loader";
	r.thread.name_len = 6;
	tu_add(t, &r);
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = 1000000030};
	r.alloc.addr = 0x10000;
	r.alloc.size = 300;
	tu_add(t, &r);
	cr_assert_eq(tu_write_plan(trc, &p, NULL, 10), 0);
	tu_plan_free(&p);
	char *rep = tq_export(dir, "--alloc");
	tq_has(rep, "\"period\": 1");
	tq_has(rep, "\"period_type\": [\"space\", \"bytes\"]");
	tq_has(rep, "\"mappings\": [[\"/opt/app/bin/prog\", \"a10f\"]]");
	tq_has(rep, "\"stacks\": {\"tid 4243 loader\": [1, 300]}");
	free(rep);
	tu_rm_rf(dir);
}

/* --live-at end is every process's heap (each at its exit or at the end), where the summary's
 * live_end_bytes is the program's alone: the profile's total is the sum of the summary's
 * live_by_process, and the profile says whose it is, in the summary's words. */
Test(pprof, live_at_end_is_every_process_as_it_says, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4300, 4300);
	struct tu_stream *a = &p.streams[1], *c = &p.streams[2];
	struct trc_record r = {.type = TRC_REC_ALLOC, .ts_ns = 1000001000};
	r.alloc.addr = 0x1000;
	r.alloc.size = 100;
	tu_add(a, &r);
	r.ts_ns = 1000002000;
	r.alloc.size = 7000;
	tu_add(c, &r); /* the child's own heap, at the same address */
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);
	cr_assert_eq(tq_summary(dir, "live_end_bytes"), 100, "the program's");
	char *rep = tq_export(dir, "--live-at end");
	tq_has(rep, "\"total\": [2, 7100]");
	free(rep);
	cr_assert_eq(tu_sh("gzip -dc '%s/out.pb.gz' | protoc --decode=perftools.profiles.Profile "
			   "-Itests tests/profile.proto | grep -q 'every process of the tree, "
			   "each at its exit or at the end (the summary: live_by_process)'",
			   dir),
		     0, "the profile does not say whose heap it is");
	tu_rm_rf(dir);
}
