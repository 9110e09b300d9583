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

/* ---- programs recorded by trace-run ----------------------------------------------------- */

#define PH_ENTRY "_start;__libc_start_main;__libc_start_call_main;"

/* Records `tests/PROG` into dir/NAME.trc with trace-run OPTS (environment ENV first). */
static void ph_record(const char *dir, const char *env, const char *opts, const char *name,
		      const char *prog)
{
	int rc = tu_sh("%s %s/bin/trace-run -q %s -o '%s/%s.trc' -- %s/tests/%s >/dev/null "
		       "2>'%s/err'",
		       env, tu_build(), opts, dir, name, tu_build(), prog, dir);
	cr_assert_eq(rc, 0, "trace-run %s: %s", prog, tu_slurp_text(dir, "err"));
}

/* The summary's site NAME of process pid (dir/sum.json): its bytes and allocations. */
static void ph_site(const char *dir, unsigned pid, const char *name, unsigned long long *bytes,
		    unsigned long long *allocs)
{
	char *sum = tu_slurp_text(dir, "sum.json");
	char pat[160];
	snprintf(pat, sizeof(pat), "{\"pid\":%u,\"name\":\"%s\",\"bytes\":", pid, name);
	const char *s = strstr(sum, pat);
	cr_assert_not_null(s, "no site %s of %u in the summary: %s", name, pid, sum);
	cr_assert_eq(sscanf(s + strlen(pat), "%llu,\"allocs\":%llu", bytes, allocs), 2);
	free(sum);
}

/* The summary's pid (the program's). */
static unsigned ph_pid(const char *dir)
{
	char *sum = tu_slurp_text(dir, "sum.json");
	const char *s = strstr(sum, "\"pid\":");
	cr_assert_not_null(s);
	unsigned pid = (unsigned)strtoul(s + 6, NULL, 10);
	free(sum);
	return pid;
}

/* 37 frames through two libraries without frame pointers, and a fork: every frame named by
 * its symbol, outermost first, each process's stacks apart (the child's first stack is the
 * parent's, its own sample), the bytes and counts of each the summary's for its site. The
 * deep program, sampled every 5 ms while its 10 MiB are held, also has a dump at its RSS
 * peak, holding what was allocated by then. */
Test(perfetto_heap, recorded_stacks_are_the_summarys_sites, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	ph_record(dir, "", "--rss-interval 5ms", "deep", "prog_stack_deep 30 10 1048576 100");
	char *h = ph_export(dir, "deep", NULL);
	unsigned pid = ph_pid(dir);
	unsigned long long bytes, allocs;
	ph_site(dir, pid, "stack_b_leaf", &bytes, &allocs);
	cr_expect_eq(bytes, 10485760);
	cr_expect_eq(allocs, 10);
	char want[2048] = PH_ENTRY "main;run_deep;stack_a_enter;";
	for (int i = 0; i < 30; i++)
		strcat(want, "stack_b_recurse;");
	char line[2200];
	snprintf(line, sizeof(line), "\"%sstack_b_leaf\": [%llu, 0, %llu, 0]", want, bytes, allocs);
	ph_has(h, line);
	/* two dumps: the peak's (during the hold: all ten live) and the end's */
	const char *first = strstr(h, "\"ts\": ");
	cr_assert_not_null(first, "%s", h);
	cr_expect_not_null(strstr(first + 1, "\"ts\": "), "no dump at the RSS peak: %s", h);
	cr_expect(strstr(h, line) < first, "the peak's dump lacks the ten blocks: %s", h);
	free(h);

	ph_record(dir, "", "", "fork", "prog_stack_procs fork");
	h = ph_export(dir, "fork", NULL);
	char *sum = tu_slurp_text(dir, "sum.json");
	unsigned parent = ph_pid(dir), child = 0;
	const char *c = strstr(sum, "\"ppid\":");
	for (; c && !child; c = strstr(c + 1, "\"ppid\":"))
		if (strtoul(c + 7, NULL, 10) == parent) {
			const char *q = c;
			while (q > sum && strncmp(q, "\"pid\":", 6))
				q--;
			child = (unsigned)strtoul(q + 6, NULL, 10);
		}
	free(sum);
	cr_assert(child, "no child process in the summary");
	static const struct {
		bool child;
		const char *caller;
		int depth;
		unsigned long long bytes;
	} fw[] = {
		{false, "", 5, 20010}, /* 10 x 2001 before the fork */
		{false, "", 7, 20040}, /* 10 x 2004 after it */
		{true, "", 5, 20020}, /* the child's 10 x 2002, from the same call */
		{true, "in_child;", 9, 20030},
	};
	for (size_t i = 0; i < sizeof(fw) / sizeof(fw[0]); i++) {
		char stack[1024];
		snprintf(stack, sizeof(stack), PH_ENTRY "do_fork;%salloc_n;stack_a_enter;",
			 fw[i].caller);
		for (int k = 0; k < fw[i].depth; k++)
			strcat(stack, "stack_b_recurse;");
		snprintf(line, sizeof(line), "\"%sstack_b_leaf\": [%llu, 0, 10, 0]", stack,
			 fw[i].bytes);
		/* in the right process's dumps */
		char key[32];
		snprintf(key, sizeof(key), "\"%u\": [", fw[i].child ? child : parent);
		const char *at = strstr(h, key);
		cr_assert_not_null(at, "no dump of %s in %s", key, h);
		const char *end = strstr(at, "}]");
		const char *got = strstr(at, line);
		cr_expect(got && got < end, "not in %s's dumps: %s\n%s", key, line, h);
	}
	free(h);
	tu_rm_rf(dir);
}

/* Sampled stacks (sample=4096, a fixed seed): the profile's sample of main's allocations is
 * the summary's site main, weighted alike (flame, memory and pprof weigh it the same), all of
 * it freed; the dump says the interval. */
Test(perfetto_heap, recorded_sampled_stacks_weigh_as_the_summary, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	ph_record(dir, "TRC_STACK_SEED=12345", "--alloc-stacks sample=4096", "smp",
		  "prog_stack_sample");
	char *h = ph_export(dir, "smp", NULL);
	unsigned long long bytes, allocs;
	ph_site(dir, ph_pid(dir), "main", &bytes, &allocs);
	/* 22100 allocations, 8.8 MB in all: far fewer sampled, each standing for more */
	cr_expect(allocs > 2000 && allocs < 40000, "%llu", allocs);
	char line[512];
	snprintf(line, sizeof(line), "\"" PH_ENTRY "main\": [%llu, %llu, %llu, %llu]", bytes, bytes,
		 allocs, allocs);
	ph_has(h, line);
	ph_has(h, "\"interval\": 4096");
	free(h);
	tu_rm_rf(dir);
}

/* ---- hostile traces ---------------------------------------------------------------------- */

/* Stacks of frames 0 and ~0, of 256 frames; allocations of 2^50 and 2^41 bytes (wider than
 * the size the live table keeps beside a sample), the second at the first's address, freed;
 * one of 0 bytes: the export stays whole,
 * the heap counter and the profile exact, and trace processor's rules hold
 * (check_perfetto.py). */
Test(perfetto_heap, odd_stacks_and_sizes_stay_within_the_rules, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/o.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	struct tu_stream *meta = &p.streams[0], *a = &p.streams[1];
	static const uint64_t odd[] = {0, UINT64_MAX, 1};
	static uint64_t deep[TRC_STACK_DEPTH_MAX];
	for (unsigned i = 0; i < TRC_STACK_DEPTH_MAX; i++)
		deep[i] = 0x400000 + 16 * (uint64_t)i;
	ph_stack(meta, 2, odd, 3);
	ph_stack(meta, 3, deep, TRC_STACK_DEPTH_MAX);
	uint64_t t = 1000001000;
	ph_alloc(a, t += 10, 0x10, 1ull << 50, 2);
	ph_alloc(a, t += 10, 0x10, 1ull << 41, 2); /* the 2^50 freed */
	ph_alloc(a, t += 10, 0x20, 0, 3);
	ph_alloc(a, t += 10, 0x30, 5, 3);
	ph_free(a, t += 10, 0x10);
	struct trcfile_header_info h = tu_header();
	h.alloc_stacks = TRCFILE_ALLOC_STACKS_ALL;
	h.stack_depth = TRC_STACK_DEPTH_MAX;
	ph_write(trc, &p, &h);
	tu_plan_free(&p);
	char *r = ph_export(dir, "o", NULL);
	/* frame 0 is named 0x0 (0 - 1 would wrap), ~0 as ~0 - 1 */
	ph_has(r, "\"0x0;0xfffffffffffffffe;0x0\": [1128098930098176, 1128098930098176, 2, 2]");
	cr_expect_null(strstr(r, "\"guardrail\": true"), "%s", r);
	char want[TRC_STACK_DEPTH_MAX * 10 + 32] = "\"";
	for (unsigned i = TRC_STACK_DEPTH_MAX; i-- > 0;) {
		char f[16];
		snprintf(f, sizeof(f), "0x%x%s", 0x400000 + 16 * i - 1, i ? ";" : "");
		strcat(want, f);
	}
	strcat(want, "\": [5, 0, 2, 0]");
	ph_has(r, want);
	free(r);
	tu_rm_rf(dir);
}

/* A recorded trace with stacks, cut short at 4 lengths and with bytes flipped at 8 places
 * across it: the export either reads it (a whole Perfetto trace protoc decodes) or says what
 * is wrong; it never crashes. */
Test(perfetto_heap, damaged_traces_never_crash_the_export, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	ph_record(dir, "", "", "ok", "prog_stack_deep 8 20 5000");
	char path[300];
	snprintf(path, sizeof(path), "%s/ok.trc", dir);
	size_t len = 0;
	uint8_t *orig = tu_read_file(path, &len);
	cr_assert_gt(len, 1000);
	int read_whole = 0;
	for (unsigned k = 0; k < 12; k++) {
		char bad[320];
		snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
		uint8_t *b = malloc(len);
		memcpy(b, orig, len);
		size_t n = len;
		if (k < 4) {
			n = len * (k + 1) / 5; /* cut short */
		} else {
			size_t at = (len * (k - 3)) / 9;
			for (size_t i = 0; i < 4 && at + i < len; i++)
				b[at + i] ^= 0x5a;
		}
		tu_write_file(bad, b, n);
		free(b);
		int rc = tu_sh("%s/bin/trace-dump perfetto '%s' -o '%s/bad.pb' 2>'%s/err'",
			       tu_build(), bad, dir, dir);
		cr_assert(rc == 0 || rc == 1, "damage %u: status %d: %s", k, rc,
			  tu_slurp_text(dir, "err"));
		if (rc == 0) {
			read_whole++;
			rc = tu_sh("%s < '%s/bad.pb' > /dev/null 2>'%s/err'", ph_decode(), dir,
				   dir);
			cr_assert_eq(rc, 0, "damage %u: protoc: %s", k, tu_slurp_text(dir, "err"));
		}
	}
	cr_expect_gt(read_whole, 0, "no damaged trace was read at all");
	free(orig);
	tu_rm_rf(dir);
}

/* 200 stacks of 40 distinct frames each: a dump of ~300 KB, cut into packets of about 256 KiB
 * (ProfilePacket.continued, the interned tables shared across them): every sample whole, with
 * its frames interned in an earlier packet of the dump or its own. */
Test(perfetto_heap, a_large_dump_is_cut_into_continued_packets, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/l.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	enum { STACKS = 200, FRAMES = 40 };
	static uint64_t frames[STACKS][FRAMES];
	uint64_t t = 1000001000;
	for (uint32_t k = 0; k < STACKS; k++) {
		for (uint32_t j = 0; j < FRAMES; j++)
			frames[k][j] = 0x10000000 + 16 * ((uint64_t)k * FRAMES + j) + 1;
		ph_stack(&p.streams[0], k + 1, frames[k], FRAMES);
		ph_alloc(&p.streams[1], t += 10, 0x1000 + 16 * (uint64_t)k, k + 1, k + 1);
	}
	struct trcfile_header_info h = tu_header();
	h.alloc_stacks = TRCFILE_ALLOC_STACKS_ALL;
	h.stack_depth = 64;
	ph_write(trc, &p, &h);
	tu_plan_free(&p);
	char *text = NULL;
	char *r = ph_export(dir, "l", &text);
	unsigned continued = 0;
	for (const char *q = text; (q = strstr(q, "continued: true")); q++)
		continued++;
	cr_expect_geq(continued, 1, "one packet for a dump of 200 x 40 frames");
	cr_expect_leq(continued, 2);
	/* stack 1 (frames 0x10000000.. innermost first) and stack 200, each its bytes once */
	char want[FRAMES * 12 + 64];
	for (uint32_t k = 0; k < STACKS; k += STACKS - 1) {
		strcpy(want, "\"");
		for (uint32_t j = FRAMES; j-- > 0;) {
			char f[16];
			snprintf(f, sizeof(f), "0x%llx%s", (unsigned long long)frames[k][j] - 1,
				 j ? ";" : "");
			strcat(want, f);
		}
		char v[48];
		snprintf(v, sizeof(v), "\": [%u, 0, 1, 0]", k + 1);
		strcat(want, v);
		ph_has(r, want);
	}
	unsigned samples = 0;
	for (const char *q = r; (q = strstr(q, ", 0, 1, 0]")); q++)
		samples++;
	cr_expect_eq(samples, STACKS);
	free(text);
	free(r);
	tu_rm_rf(dir);
}

/* Two traces in one export: each process's profile under its trace's pid range (pid + N x
 * 10000000), its dumps on CLOCK_REALTIME (the start's anchor, 1700000000123456789 at
 * 1000000000), all on the one sequence in time order. */
Test(perfetto_heap, several_files_keep_their_processes_apart, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/a.trc", dir);
	ph_written(trc, 0);
	snprintf(trc, sizeof(trc), "%s/b.trc", dir);
	ph_written(trc, 0);
	int rc = tu_sh("%s/bin/trace-dump perfetto '%s/a.trc' '%s/b.trc' -o '%s/out.pb' 2>'%s/err' "
		       "&& %s < '%s/out.pb' > '%s/out.txt' && python3 tests/check_perfetto.py "
		       "--heap '%s/out.txt' > '%s/heap' 2>&1",
		       tu_build(), dir, dir, dir, dir, ph_decode(), dir, dir, dir, dir);
	cr_assert_eq(rc, 0, "%s%s", tu_slurp_text(dir, "err"), tu_slurp_text(dir, "heap"));
	char *h = tu_slurp_text(dir, "heap");
	static const char *const pids[] = {"10004242", "20004242"};
	for (int i = 0; i < 2; i++) {
		char want[600];
		snprintf(want, sizeof(want),
			 "\"%s\": [{\"guardrail\": false, \"interval\": 0, \"samples\": "
			 "{\"0x302f;0x201f;0x100f\": [300, 200, 2, 1], "
			 "\"0x302f;0x201f;0x110f\": [50, 0, 1, 0]}, \"ts\": 1700000000123457849}, "
			 "{\"guardrail\": false, \"interval\": 0, \"samples\": "
			 "{\"0x302f;0x201f;0x100f\": [1300, 200, 3, 1], "
			 "\"0x302f;0x201f;0x110f\": [120, 50, 2, 1], "
			 "\"[no call stack]\": [16, 0, 2, 0]}, \"ts\": 1700000000123457919}]",
			 pids[i]);
		ph_has(h, want);
	}
	ph_has(h, "\"10004243\": [{");
	ph_has(h, "\"20004243\": [{");
	free(h);
	tu_rm_rf(dir);
}
