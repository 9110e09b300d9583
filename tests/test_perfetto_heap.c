/* test_perfetto_heap.c - the allocations' call stacks in `trace-dump perfetto`: heapprofd's
 * ProfilePacket (src/export/export_perfetto_heap.c), read back by an outside reader.
 *
 * Purpose: Perfetto's UI draws a heap profile from exactly what trace processor makes of the
 * packets, so each test decodes the output with `protoc --decode` against
 * tests/perfetto_trace.proto (Perfetto's field numbers; or its complete schema, the file
 * $TRC_PERFETTO_PROTO names, which must then decode the output to the same text) and replays
 * it with tests/check_perfetto.py, which checks what trace processor requires (one sequence,
 * indexes in order, every iid defined, values that never go down, the total against the
 * summary) and reports each process's dumps: for each call stack, outermost frame first, its
 * [bytes allocated, bytes freed, allocations, frees]. The tests check those figures exactly:
 * for a written trace of known stacks, frees, a replaced address and an RSS peak; for programs
 * recorded by trace-run with stacks known and no frame pointers (tests/prog_stack_*.c), against
 * the summary's sites, sampled ones weighted as the other views weigh them; no profile for a
 * trace without stacks; damaged traces never crash the export.
 *
 * Needs protoc and python3 (`make deps`). Threads: each test is one process (Criterion); the
 * commands run as children.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <sys/stat.h>

#include "test_trcfile_util.h"

/* protoc's command for the schema the tests read with (test_perfetto.c's tp_decode). */
static const char *ph_decode(void)
{
	static char cmd[PATH_MAX * 2 + 64];
	const char *full = getenv("TRC_PERFETTO_PROTO");
	if (!full || !*full)
		return "protoc --decode=perfetto.protos.Trace -Itests tests/perfetto_trace.proto";
	const char *slash = strrchr(full, '/');
	int dl = !slash ? 1 : slash == full ? 1 : (int)(slash - full);
	snprintf(cmd, sizeof(cmd), "protoc --decode=perfetto.protos.Trace -I'%.*s' '%s'", dl,
		 slash ? full : ".", full);
	return cmd;
}

/* Exports dir/NAME.trc, decodes it and runs the checker; returns the checker's "heap" report
 * as one line of JSON ({pid: [dump...]}), and the decoded text in *text when asked. */
static char *ph_export(const char *dir, const char *name, char **text)
{
	const char *td = tu_build();
	int rc = tu_sh("%s/bin/trace-dump perfetto '%s/%s.trc' -o '%s/out.pb' 2>'%s/err'", td, dir,
		       name, dir, dir);
	cr_assert_eq(rc, 0, "trace-dump perfetto failed: %s", tu_slurp_text(dir, "err"));
	rc = tu_sh("%s < '%s/out.pb' > '%s/out.txt' 2>'%s/err'", ph_decode(), dir, dir, dir);
	cr_assert_eq(rc, 0, "protoc refused the output: %s", tu_slurp_text(dir, "err"));
	if (getenv("TRC_PERFETTO_PROTO")) {
		rc = tu_sh("protoc --decode=perfetto.protos.Trace -Itests "
			   "tests/perfetto_trace.proto < '%s/out.pb' | cmp -s - '%s/out.txt'",
			   dir, dir);
		cr_assert_eq(rc, 0, "tests/perfetto_trace.proto decodes the output otherwise");
	}
	rc = tu_sh("%s/bin/trace-dump summary --json '%s/%s.trc' > '%s/sum.json'", td, dir, name,
		   dir);
	cr_assert_eq(rc, 0);
	rc = tu_sh(
		"python3 tests/check_perfetto.py '%s/out.txt' '%s/sum.json' > '%s/check' 2>&1 "
		"&& python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[\"heap\"], "
		"sort_keys=True))' < '%s/check' > '%s/heap'",
		dir, dir, dir, dir, dir);
	cr_assert_eq(rc, 0, "%s", tu_slurp_text(dir, "check"));
	if (text)
		*text = tu_slurp_text(dir, "out.txt");
	return tu_slurp_text(dir, "heap");
}

#define ph_has(report, s) cr_expect(strstr(report, s), "not in the report: %s\n%s", s, report)

/* Writes plan p with header h (tu_write_plan's order: streams round-robin, batches of 4). */
static void ph_write(const char *path, const struct tu_plan *p, struct trcfile_header_info *h)
{
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	struct trcfile_stream *s[8];
	size_t pos[8] = {0};
	cr_assert_leq(p->n, 8);
	for (size_t i = 0; i < p->n; i++)
		cr_assert_not_null(s[i] = trcfile_stream_open(w, p->streams[i].kind,
							      p->streams[i].pid,
							      p->streams[i].tid));
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < p->n; i++) {
			for (size_t k = 0; k < 4 && pos[i] < p->streams[i].n; k++, pos[i]++)
				cr_assert_eq(
					trcfile_stream_append(s[i], &p->streams[i].recs[pos[i]]),
					0);
			more |= pos[i] < p->streams[i].n;
		}
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
}

static void ph_stack(struct tu_stream *meta, uint32_t id, const uint64_t *frames, uint32_t n)
{
	struct trc_record r = {.type = TRC_REC_STACK, .ts_ns = 1000000100};
	r.stack.id = id;
	r.stack.n = n;
	r.stack.frames = frames;
	tu_add(meta, &r);
}

static void ph_alloc(struct tu_stream *s, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack)
{
	struct trc_record r = {.type = TRC_REC_ALLOC, .ts_ns = ts};
	r.alloc.addr = addr;
	r.alloc.size = size;
	r.alloc.stack_id = stack;
	tu_add(s, &r);
}

static void ph_free(struct tu_stream *s, uint64_t ts, uint64_t addr)
{
	struct trc_record r = {.type = TRC_REC_FREE, .ts_ns = ts};
	r.alloc.addr = addr;
	tu_add(s, &r);
}

static void ph_rss(struct tu_stream *s, uint64_t ts, uint32_t pid, uint64_t bytes)
{
	struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = ts};
	r.rss.source = TRC_RSS_STATM;
	r.rss.pid = pid;
	r.rss.rss_bytes = bytes;
	tu_add(s, &r);
}

static const uint64_t ph_frames1[] = {0x1010, 0x2020, 0x3030}; /* innermost first */
static const uint64_t ph_frames2[] = {0x1110, 0x2020, 0x3030};

/* The written trace of the tests below: process 4242 allocates under stacks 1 and 2 (frames
 * named 0xADDR - 1: no module covers them), frees one block, reallocates at a live address
 * (the old block counts as freed), allocates under a stack id no record defines and under none
 * (both "[no call stack]"), frees an unknown address (nothing), its RSS peaking in between;
 * process 4243 allocates under stack 1 too, and has no RSS sample. With `sample`, the header
 * says sampled stacks of that mean. */
static void ph_written(const char *path, uint64_t sample)
{
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4243, 4243);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct tu_stream *meta = &p.streams[0], *a = &p.streams[1], *b = &p.streams[2],
			 *rss = &p.streams[3];
	ph_stack(meta, 1, ph_frames1, 3);
	ph_stack(meta, 2, ph_frames2, 3);
	uint64_t t = 1000001000;
	ph_alloc(a, t += 10, 0x10, 100, 1);
	ph_alloc(a, t += 10, 0x20, 200, 1);
	ph_alloc(a, t += 10, 0x30, 50, 2);
	ph_rss(rss, t += 10, 4242, 1 << 20);
	ph_free(a, t += 10, 0x20);
	ph_rss(rss, t += 10, 4242, 3 << 20); /* the peak: 300 B, 200 freed, and 50 */
	ph_alloc(a, t += 10, 0x40, 1000, 1);
	ph_alloc(a, t += 10, 0x30, 70, 2); /* replaces the 50 */
	ph_alloc(a, t += 10, 0x50, 7, 99); /* stack 99 is not defined */
	ph_alloc(a, t += 10, 0x60, 9, 0);
	ph_free(a, t += 10, 0x999);
	ph_rss(rss, t += 10, 4242, 2 << 20);
	ph_alloc(b, t += 10, 0x10, 64, 1);
	struct trcfile_header_info h = tu_header();
	h.alloc_stacks = sample ? TRCFILE_ALLOC_STACKS_SAMPLED : TRCFILE_ALLOC_STACKS_ALL;
	h.stack_depth = 64;
	h.sample_bytes = sample;
	ph_write(path, &p, &h);
	tu_plan_free(&p);
}

/* Every figure of the written trace: per process one sample per distinct stack, frames
 * outermost first, allocated and freed bytes and counts; the dump at 4242's RSS peak holds the
 * values of then (a stack with nothing yet is left out); 4243 has its end dump only. */
Test(perfetto_heap, written_stacks_frees_and_the_rss_peak_exactly, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/w.trc", dir);
	ph_written(trc, 0);
	char *text = NULL;
	char *h = ph_export(dir, "w", &text);
	ph_has(h, "\"4242\": [{\"guardrail\": false, \"interval\": 0, \"samples\": "
		  "{\"0x302f;0x201f;0x100f\": [300, 200, 2, 1], "
		  "\"0x302f;0x201f;0x110f\": [50, 0, 1, 0]}, \"ts\": 1000001060}, "
		  "{\"guardrail\": false, \"interval\": 0, \"samples\": "
		  "{\"0x302f;0x201f;0x100f\": [1300, 200, 3, 1], "
		  "\"0x302f;0x201f;0x110f\": [120, 50, 2, 1], "
		  "\"[no call stack]\": [16, 0, 2, 0]}, \"ts\": 1000001130}]");
	ph_has(h, "\"4243\": [{\"guardrail\": false, \"interval\": 0, \"samples\": "
		  "{\"0x302f;0x201f;0x100f\": [64, 0, 1, 0]}, \"ts\": 1000001130}]");
	/* Two dumps, one packet each, indexed 0 and 1 on one sequence; the malloc heap; frames
	 * in a mapping (none covers them: the one without a path) with rel_pc the address. */
	ph_has(text, "index: 0\n");
	ph_has(text, "index: 1\n");
	cr_expect_null(strstr(text, "index: 2\n"));
	cr_expect_null(strstr(text, "continued"));
	ph_has(text, "heap_name: \"libc.malloc\"");
	ph_has(text, "rel_pc: 12335\n"); /* 0x302f */
	free(text);
	free(h);
	tu_rm_rf(dir);
}

/* Sampled stacks (mean 64 B): each allocation with a stack weighs alloc_weight.h's n / p bytes
 * and 1 / p allocations, rounded, as flame, memory and pprof weigh it; frees take back the
 * same; the unsampled allocation (no stack) weighs nothing; the dumps say the interval. */
Test(perfetto_heap, sampled_stacks_are_weighted, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/w.trc", dir);
	ph_written(trc, 64);
	char *h = ph_export(dir, "w", NULL);
	/* From the mean up p = 1 (100, 200, 1000, 70 and 64 B: themselves, once); 50 B: p =
	 * 1 - e^(-50/64), 92 B and 2 allocations; 7 B (stack 99, undefined: "[no call stack]"):
	 * 68 B and 10; the 9 B one has no stack: sampled out. */
	ph_has(h, "\"4242\": [{\"guardrail\": false, \"interval\": 64, \"samples\": "
		  "{\"0x302f;0x201f;0x100f\": [300, 200, 2, 1], "
		  "\"0x302f;0x201f;0x110f\": [92, 0, 2, 0]}, \"ts\": 1000001060}, "
		  "{\"guardrail\": false, \"interval\": 64, \"samples\": "
		  "{\"0x302f;0x201f;0x100f\": [1300, 200, 3, 1], "
		  "\"0x302f;0x201f;0x110f\": [162, 92, 3, 2], "
		  "\"[no call stack]\": [68, 0, 10, 0]}, \"ts\": 1000001130}]");
	free(h);
	tu_rm_rf(dir);
}

/* A trace without stacks (--alloc-stacks none, or no stack record) gets no profile at all. */
Test(perfetto_heap, no_stacks_no_profile_packet, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/n.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	char *text = NULL;
	char *h = ph_export(dir, "n", &text);
	cr_expect_str_eq(h, "{}\n");
	cr_expect_null(strstr(text, "profile_packet"), "%s", text);
	cr_expect_null(strstr(text, "clock_id: 4\n"), "%s", text);
	free(text);
	free(h);
	tu_rm_rf(dir);
}
