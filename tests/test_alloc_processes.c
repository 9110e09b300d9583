/* test_alloc_processes.c - live allocations of processes that share addresses, end to end.
 *
 * Purpose: after a fork parent and child allocate at the same addresses; pids may differ by a
 * multiple of 65536 (pid_max reaches 4194304), and an address may have bit 48 or higher set.
 * The replays once keyed allocations by addr ^ pid << 48, so pid 65636's FREE cancelled pid
 * 100's ALLOC at the same address and pid 101's FREE of 0x1000 cancelled pid 100's ALLOC at
 * 0x1000 | 1 << 48. A trace written with the writer (test_trcfile_util.h) has exactly that;
 * `trace-dump summary --json`, `pprof --live-at end` (decoded by tests/check_pprof.py) and
 * chrome's heap counter must give each process its own exact live bytes.
 * Needs protoc, gzip and python3 (`make deps`).
 * Threads: each test is one process (Criterion); the commands run as children.
 */
#include <criterion/criterion.h>

#include "test_trcfile_util.h"

#define TAP_HIGH (0x1000ull | 1ull << 48)

static void tap_rec(struct tu_stream *s, enum trc_rec_type type, uint64_t ts, uint64_t addr,
		    uint64_t size)
{
	struct trc_record r = {.type = type, .ts_ns = 1000000000ull + ts};
	r.alloc.addr = addr;
	r.alloc.size = size;
	tu_add(s, &r);
}

/* dir/in.trc: pid 100 (the traced program: the header's pid) allocates 100 B at 0x1000, 200 B
 * at 0x2000 and 7 B at 0x1000 | 1 << 48; pid 65636 allocates 1000 B at 0x1000 and frees it,
 * then frees 0x2000 (not its own); pid 101 frees 0x1000 (not its own). Live at the end: pid
 * 100 307 B in 3 blocks, the others 0. */
static void tap_write(const char *dir)
{
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_THREAD, 100, 100);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 65636, 65636);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 101, 101);
	struct tu_stream *a = &p.streams[0], *b = &p.streams[1], *c = &p.streams[2];
	tap_rec(a, TRC_REC_ALLOC, 1000, 0x1000, 100);
	tap_rec(b, TRC_REC_ALLOC, 1050, 0x1000, 1000);
	tap_rec(a, TRC_REC_ALLOC, 1100, 0x2000, 200);
	tap_rec(a, TRC_REC_ALLOC, 1150, TAP_HIGH, 7);
	tap_rec(b, TRC_REC_FREE, 1200, 0x1000, 0);
	tap_rec(b, TRC_REC_FREE, 1300, 0x2000, 0);
	tap_rec(c, TRC_REC_FREE, 1400, 0x1000, 0);
	struct trcfile_header_info h = tu_header();
	h.pid = 100;
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(trc, &h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	for (size_t i = 0; i < p.n; i++) {
		struct trcfile_stream *s = trcfile_stream_open(w, p.streams[i].kind,
							       p.streams[i].pid, p.streams[i].tid);
		cr_assert_not_null(s);
		for (size_t k = 0; k < p.streams[i].n; k++)
			cr_assert_eq(trcfile_stream_append(s, &p.streams[i].recs[k]), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	tu_plan_free(&p);
}

/* The text of dir/out.txt, which the command (exit status rc) wrote. */
static char *tap_out(const char *dir, const char *what, int rc)
{
	char *out = tu_slurp_text(dir, "out.txt");
	cr_assert_eq(rc, 0, "%s: exit %d: %s", what, rc, out);
	return out;
}
#define tap_run(dir, what, ...) tap_out(dir, what, tu_sh(__VA_ARGS__))

Test(alloc_processes, summary_gives_each_process_its_own_live_bytes, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tap_write(dir);
	char *out = tap_run(
		dir, "summary",
		"%s/bin/trace-dump summary --json '%s/in.trc' | python3 -c 'import json, sys; "
		"s = json.load(sys.stdin); print(s[\"live_end_bytes\"], s[\"live_peak_bytes\"], "
		"s[\"frees\"], s[\"free_bytes\"], s[\"frees_unknown\"], s[\"live_approximate\"], "
		"[(h[\"pid\"], h[\"allocs\"], h[\"alloc_bytes\"], h[\"live_peak_bytes\"], "
		"h[\"live_end_bytes\"]) for h in s[\"live_by_process\"]])' > '%s/out.txt' "
		"2>&1",
		tu_build(), dir, dir);
	cr_assert_str_eq(out,
			 "307 1307 3 1000 2 False [(100, 3, 307, 307, 307), (101, 0, 0, 0, 0), "
			 "(65636, 1, 1000, 1000, 0)]\n");
	free(out);
	tu_rm_rf(dir);
}

Test(alloc_processes, pprof_live_at_end_has_the_blocks_of_each_process, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tap_write(dir);
	char *out =
		tap_run(dir, "pprof",
			"%s/bin/trace-dump pprof --live-at end '%s/in.trc' -o '%s/out.pb.gz' "
			"2>/dev/null && gzip -dc '%s/out.pb.gz' | protoc "
			"--decode=perftools.profiles.Profile -Itests tests/profile.proto | "
			"python3 tests/check_pprof.py /dev/stdin | python3 -c 'import json, sys; "
			"r = json.load(sys.stdin); print(r[\"total\"], r[\"stacks\"])' > "
			"'%s/out.txt' 2>&1",
			tu_build(), dir, dir, dir, dir);
	cr_assert_str_eq(out, "[3, 307] {'tid 100': [3, 307]}\n");
	free(out);
	tu_rm_rf(dir);
}

Test(alloc_processes, chrome_heap_counter_is_each_process_own, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tap_write(dir);
	char *out = tap_run(dir, "chrome",
			    "%s/bin/trace-dump chrome '%s/in.trc' | python3 -c 'import json, sys; "
			    "t = json.load(sys.stdin); print([(e[\"pid\"], e[\"args\"][\"bytes\"]) "
			    "for e in t[\"traceEvents\"] if e[\"name\"] == \"heap live bytes\"], "
			    "t[\"otherData\"][\"heap_approximate\"])' > '%s/out.txt' 2>&1",
			    tu_build(), dir, dir);
	cr_assert_str_eq(out, "[(100, 100), (65636, 1000), (100, 300), (100, 307), (65636, 0)] "
			      "False\n");
	free(out);
	tu_rm_rf(dir);
}
