/* test_flame.c - folded stacks (src/analysis/flame.c) against a small trace computed by hand:
 * two threads of one process, spans and a function (named module+offset: no symbols), nested
 * both ways, an allocation inside each kind of frame and one outside every frame, an end that
 * closes nothing; the same trace through `trace-dump flame` (both weights, with and without
 * the process frame); and a parent and its forked child, each tree under its process. */
#include "e2e_util.h"
#include "flame.h"
#include "test_trcfile_util.h"

#define TD e2e_path("bin/trace-dump")

static void tf_span(struct tu_stream *s, uint32_t type, uint64_t ts, uint32_t id)
{
	struct trc_record r = {.type = type, .ts_ns = ts};
	r.span.name_id = id;
	tu_add(s, &r);
}

static void tf_func(struct tu_stream *s, uint32_t type, uint64_t ts, uint64_t addr)
{
	struct trc_record r = {.type = type, .ts_ns = ts};
	r.func.addr = addr;
	r.func.call_site = addr + 0x40;
	tu_add(s, &r);
}

static void tf_alloc(struct tu_stream *s, uint64_t ts, uint64_t addr, uint64_t size)
{
	struct trc_record r = {.type = TRC_REC_ALLOC, .ts_ns = ts};
	r.alloc.addr = addr;
	r.alloc.size = size;
	tu_add(s, &r);
}

/* The hand-computed case (times in ns from 1000; f = 0x401000 = prog+0x1000).
 *   thread 4242: outer[1000  f[1010  alloc 64 @1015  ]f 1030  inner[1050 ]inner 1055
 *                ]outer 1100  alloc 8 @1110 (no frame)
 *   thread 4243: f[1000  inner[1007  alloc 100 @1009  ]inner 1010  ]inner 1012 (closes
 *                nothing)  ]f 1020
 * Time: outer = 10 + 20 + 45 = 75, outer;f = 5 + 15 = 20, outer;inner = 5; f = 7 + 2 + 8 =
 * 17, f;inner = 3. Bytes: outer;f 64, f;inner 100, outside 8. */
static void tf_write(const char *path)
{
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add_name(m, 2, "outer", 900);
	tu_add_name(m, 3, "inner", 900);
	struct trc_record mod = {.type = TRC_REC_MODULE, .ts_ns = 900};
	mod.module.pid = 4242;
	mod.module.start = 0x400000;
	mod.module.end = 0x500000;
	mod.module.offset = 0;
	mod.module.path = "/nonexistent/prog";
	mod.module.path_len = (uint32_t)strlen(mod.module.path);
	tu_add(m, &mod);
	struct tu_stream *a = tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tf_span(a, TRC_REC_SPAN_BEGIN, 1000, 2);
	tf_func(a, TRC_REC_FUNC_ENTER, 1010, 0x401000);
	tf_alloc(a, 1015, 0x10, 64);
	tf_func(a, TRC_REC_FUNC_EXIT, 1030, 0x401000);
	tf_span(a, TRC_REC_SPAN_BEGIN, 1050, 3);
	tf_span(a, TRC_REC_SPAN_END, 1055, 3);
	tf_span(a, TRC_REC_SPAN_END, 1100, 2);
	tf_alloc(a, 1110, 0x20, 8);
	struct tu_stream *b = tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4243);
	tf_func(b, TRC_REC_FUNC_ENTER, 1000, 0x401000);
	tf_span(b, TRC_REC_SPAN_BEGIN, 1007, 3);
	tf_alloc(b, 1009, 0x30, 100);
	tf_span(b, TRC_REC_SPAN_END, 1010, 3);
	tf_span(b, TRC_REC_SPAN_END, 1012, 3);
	tf_func(b, TRC_REC_FUNC_EXIT, 1020, 0x401000);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 2), 0);
	tu_plan_free(&p);
}

struct tf_out {
	char buf[4096];
	size_t len;
};

static void tf_emit(void *ctx, const char *stack, size_t len, uint64_t weight)
{
	struct tf_out *o = ctx;
	int k = snprintf(o->buf + o->len, sizeof(o->buf) - o->len, "%.*s %llu\n", (int)len, stack,
			 (unsigned long long)weight);
	cr_assert(k > 0 && (size_t)k < sizeof(o->buf) - o->len);
	o->len += (size_t)k;
}

static void tf_fold_as(const char *path, enum flame_weight w, bool by_process, struct tf_out *out,
		       struct flame_stats *st)
{
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	struct flame *f = flame_new(w);
	struct trcfile_iter *it = trcfile_iter_new(r);
	cr_assert(f && it);
	if (by_process)
		flame_root_processes(f);
	struct trc_record rec;
	unsigned sidx;
	int k;
	while ((k = trcfile_iter_next(it, &rec, &sidx)) == 1)
		cr_assert_eq(flame_add(f, sidx, trcfile_reader_stream(r, sidx), &rec), 0);
	cr_assert_eq(k, 0);
	out->len = 0;
	out->buf[0] = 0;
	cr_assert_eq(flame_fold(f, r, NULL, tf_emit, out), 0);
	flame_get_stats(f, st);
	trcfile_iter_free(it);
	flame_free(f);
	trcfile_reader_close(r);
}

static void tf_fold(const char *path, enum flame_weight w, struct tf_out *out,
		    struct flame_stats *st)
{
	tf_fold_as(path, w, false, out, st);
}

static const char tf_time[] = "outer 75\n"
			      "outer;inner 5\n"
			      "outer;prog+0x1000 20\n"
			      "prog+0x1000 17\n"
			      "prog+0x1000;inner 3\n";
static const char tf_alloc_want[] = "[no span or function] 8\n"
				    "outer;prog+0x1000 64\n"
				    "prog+0x1000;inner 100\n";

Test(flame, hand_computed_time_and_bytes, .timeout = 180)
{
	const char *dir = tu_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/f.trc", dir);
	tf_write(path);
	struct tf_out out;
	struct flame_stats st;
	tf_fold(path, FLAME_TIME, &out, &st);
	cr_expect_str_eq(out.buf, tf_time);
	cr_expect_eq(st.total_weight, 120);
	cr_expect_eq(st.unmatched_ends, 1);
	cr_expect_eq(st.folded_frames, 0);
	tf_fold(path, FLAME_ALLOC, &out, &st);
	cr_expect_str_eq(out.buf, tf_alloc_want);
	cr_expect_eq(st.total_weight, 172);
	tu_rm_rf(dir);
}

Test(flame, command_prints_the_same, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/f.trc", dir);
	tf_write(path);
	struct e2e_run r = e2e_run(dir, TD, "flame", "--merge-processes", path, NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, tf_time);
	cr_expect(strstr(r.err, "trace-dump flame: 1 end closed no open frame (ignored)\n"), "%s",
		  r.err);
	e2e_free(&r);
	r = e2e_run(dir, TD, "flame", "--weight", "alloc", "--merge-processes", path, NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, tf_alloc_want);
	e2e_free(&r);
	/* By default every line starts at the process: the header's command, prog. */
	r = e2e_run(dir, TD, "flame", path, NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, "prog (pid 4242);outer 75\n"
				"prog (pid 4242);outer;inner 5\n"
				"prog (pid 4242);outer;prog+0x1000 20\n"
				"prog (pid 4242);prog+0x1000 17\n"
				"prog (pid 4242);prog+0x1000;inner 3\n");
	e2e_free(&r);
	r = e2e_run(dir, TD, "flame", "--weight", "alloc", path, NULL);
	cr_expect_eq(r.exit_code, 0);
	cr_expect_str_eq(r.out, "prog (pid 4242);[no span or function] 8\n"
				"prog (pid 4242);outer;prog+0x1000 64\n"
				"prog (pid 4242);prog+0x1000;inner 100\n");
	e2e_free(&r);
	r = e2e_run(dir, TD, "flame", "--weight", "bytes", path, NULL);
	cr_expect_eq(r.exit_code, 2);
	cr_expect_str_eq(r.err, "trace-dump flame: --weight: expected time or alloc, got \"bytes\" "
				"(see trace-dump flame --help)\n");
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* A parent (4242, the header's prog) and the child it forked (4300, "/usr/bin/k;i<newline>d -x":
 * named by its PROCESS record, the ';' and the line break made ':' and ' ') in the same
 * function f, the child entering f as it inherited it, then calling g; a third process (4400)
 * that the trace names nowhere.
 *   4242/4242: f[1000  g[1010 ]g 1030  ]f 1100        f 10 + 70 = 80, f;g 20
 *   4300/4300: f[1040  g[1050 ]g 1060  ]f 1090  alloc 5 @1095 (no frame)
 *                                                  f 10 + 30 = 40, f;g 10
 *   4400/4400: f[1000  ]f 1001                      f 1
 * Merged, f is 121 and f;g 30; by process each tree is its own. */
static void tf_write_procs(const char *path)
{
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	static const char kid[] = "/usr/bin/k;i\nd\0-x";
	struct trc_record pr = {.type = TRC_REC_PROCESS, .ts_ns = 1035};
	pr.process.pid = 4300;
	pr.process.ppid = 4242;
	pr.process.cmdline = kid;
	pr.process.cmdline_len = sizeof(kid);
	tu_add(m, &pr);
	for (uint32_t pid = 4242; pid <= 4400; pid += pid == 4242 ? 58 : 100) {
		struct trc_record mod = {.type = TRC_REC_MODULE, .ts_ns = 900};
		mod.module.pid = pid;
		mod.module.start = 0x400000;
		mod.module.end = 0x500000;
		mod.module.path = "/nonexistent/prog";
		mod.module.path_len = (uint32_t)strlen(mod.module.path);
		tu_add(m, &mod);
	}
	struct tu_stream *a = tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tf_func(a, TRC_REC_FUNC_ENTER, 1000, 0x401000);
	tf_func(a, TRC_REC_FUNC_ENTER, 1010, 0x402000);
	tf_func(a, TRC_REC_FUNC_EXIT, 1030, 0x402000);
	tf_func(a, TRC_REC_FUNC_EXIT, 1100, 0x401000);
	struct tu_stream *b = tu_plan_stream(&p, TRC_STREAM_THREAD, 4300, 4300);
	tf_func(b, TRC_REC_FUNC_ENTER, 1040, 0x401000);
	tf_func(b, TRC_REC_FUNC_ENTER, 1050, 0x402000);
	tf_func(b, TRC_REC_FUNC_EXIT, 1060, 0x402000);
	tf_func(b, TRC_REC_FUNC_EXIT, 1090, 0x401000);
	tf_alloc(b, 1095, 0x40, 5);
	struct tu_stream *c = tu_plan_stream(&p, TRC_STREAM_THREAD, 4400, 4400);
	tf_func(c, TRC_REC_FUNC_ENTER, 1000, 0x401000);
	tf_func(c, TRC_REC_FUNC_EXIT, 1001, 0x401000);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 2), 0);
	tu_plan_free(&p);
}

Test(flame, each_process_its_own_tree, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/p.trc", dir);
	tf_write_procs(path);
	struct tf_out out;
	struct flame_stats st;
	tf_fold_as(path, FLAME_TIME, true, &out, &st);
	cr_expect_str_eq(out.buf, "k:i d (pid 4300);prog+0x1000 40\n"
				  "k:i d (pid 4300);prog+0x1000;prog+0x2000 10\n"
				  "pid 4400;prog+0x1000 1\n"
				  "prog (pid 4242);prog+0x1000 80\n"
				  "prog (pid 4242);prog+0x1000;prog+0x2000 20\n");
	cr_expect_eq(st.total_weight, 151);
	cr_expect_eq(st.unmatched_ends, 0);
	tf_fold_as(path, FLAME_ALLOC, true, &out, &st);
	cr_expect_str_eq(out.buf, "k:i d (pid 4300);[no span or function] 5\n");
	tf_fold(path, FLAME_TIME, &out, &st);
	cr_expect_str_eq(out.buf, "prog+0x1000 121\n"
				  "prog+0x1000;prog+0x2000 30\n");
	tu_rm_rf(dir);
}
