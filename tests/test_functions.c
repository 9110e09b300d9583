/* test_functions.c - the function table (src/analysis/functions.c): calls, inclusive and self
 * time against a small trace computed by hand, the same function in two processes merged by
 * name, exits that close nothing or close calls that never exited, and the sort keys. */
#include "functions.h"
#include "test_trcfile_util.h"

static void tfn_func(struct tu_stream *s, uint32_t type, uint64_t ts, uint64_t addr)
{
	struct trc_record r = {.type = type, .ts_ns = ts};
	r.func.addr = addr;
	r.func.call_site = addr + 0x40;
	tu_add(s, &r);
}

static void tfn_module(struct tu_stream *m, uint32_t pid)
{
	struct trc_record r = {.type = TRC_REC_MODULE, .ts_ns = 900};
	r.module.pid = pid;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.path = "/nonexistent/prog";
	r.module.path_len = (uint32_t)strlen(r.module.path);
	tu_add(m, &r);
}

/* Writes plan p to path (and frees it), then opens the file. */
static struct trcfile_reader *tfn_write_open(const char *path, struct tu_plan *p)
{
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, p, &o, 2), 0);
	tu_plan_free(p);
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	return r;
}

#define F 0x401000u /* prog+0x1000 */
#define G 0x402000u /* prog+0x2000 */
#define H 0x403000u /* prog+0x3000 */

/* pid 10: f[1000 g[1010 ]g 1030 ]f 1100; f[2000 ]f 2050; ]g 3000 (closes nothing)
 * pid 11: f[1000 h[1005 (never exits) ]f 1040 -> h closed at 1040 (unclosed), f 40 incl, self 5
 * f: calls 3, incl 100, 50, 40 -> total 190, max 100, mean 63, p50 50, p99 100;
 *    self 80, 50, 5 -> total 135, max 80.
 * g: 1 call, 20 / 20. h: 1 call, 35 / 35. */
static struct trcfile_reader *tfn_open(const char *dir)
{
	char path[320];
	snprintf(path, sizeof(path), "%s/f.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 10, 0);
	tfn_module(m, 10);
	tfn_module(m, 11);
	struct tu_stream *a = tu_plan_stream(&p, TRC_STREAM_THREAD, 10, 10);
	tfn_func(a, TRC_REC_FUNC_ENTER, 1000, F);
	tfn_func(a, TRC_REC_FUNC_ENTER, 1010, G);
	tfn_func(a, TRC_REC_FUNC_EXIT, 1030, G);
	tfn_func(a, TRC_REC_FUNC_EXIT, 1100, F);
	tfn_func(a, TRC_REC_FUNC_ENTER, 2000, F);
	tfn_func(a, TRC_REC_FUNC_EXIT, 2050, F);
	tfn_func(a, TRC_REC_FUNC_EXIT, 3000, G);
	struct tu_stream *b = tu_plan_stream(&p, TRC_STREAM_THREAD, 11, 11);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1000, F);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1005, H);
	tfn_func(b, TRC_REC_FUNC_EXIT, 1040, F);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1050, G); /* still open at the end */
	return tfn_write_open(path, &p);
}

static struct func_table *tfn_table(struct trcfile_reader *r, enum func_sort key)
{
	struct func_table *t = func_table_new();
	struct trcfile_iter *it = trcfile_iter_new(r);
	cr_assert(t && it);
	struct trc_record rec;
	unsigned sidx;
	int k;
	while ((k = trcfile_iter_next(it, &rec, &sidx)) == 1)
		cr_assert_eq(func_table_add(t, sidx, trcfile_reader_stream(r, sidx), &rec), 0);
	cr_assert_eq(k, 0);
	trcfile_iter_free(it);
	cr_assert_eq(func_table_finish(t, r, NULL, key), 0);
	return t;
}

Test(functions, hand_computed_calls_and_times, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = tfn_open(dir);
	struct func_table *t = tfn_table(r, FUNC_SORT_SELF);
	const struct func_row *rows;
	size_t n = func_table_rows(t, &rows);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(rows[0].name, "prog+0x1000");
	cr_expect_eq(rows[0].calls, 3);
	cr_expect_eq(rows[0].incl.total_ns, 190);
	cr_expect_eq(rows[0].incl.max_ns, 100);
	cr_expect_eq(rows[0].incl.mean_ns, 63);
	cr_expect_eq(rows[0].incl.p50_ns, 50);
	cr_expect_eq(rows[0].incl.p99_ns, 100);
	cr_expect_eq(rows[0].self.total_ns, 135);
	cr_expect_eq(rows[0].self.max_ns, 80);
	cr_expect_eq(rows[0].self.p50_ns, 50);
	cr_expect_str_eq(rows[1].name, "prog+0x3000");
	cr_expect_eq(rows[1].calls, 1);
	cr_expect_eq(rows[1].incl.total_ns, 35);
	cr_expect_eq(rows[1].self.total_ns, 35);
	cr_expect_str_eq(rows[2].name, "prog+0x2000");
	cr_expect_eq(rows[2].calls, 1);
	cr_expect_eq(rows[2].incl.total_ns, 20);
	cr_expect_eq(rows[2].self.total_ns, 20);
	uint64_t unmatched, unclosed, unfinished;
	func_table_counts(t, &unmatched, &unclosed, &unfinished);
	cr_expect_eq(unmatched, 1);
	cr_expect_eq(unclosed, 1);
	cr_expect_eq(unfinished, 1);
	func_table_free(t);

	t = tfn_table(r, FUNC_SORT_NAME);
	n = func_table_rows(t, &rows);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(rows[0].name, "prog+0x1000");
	cr_expect_str_eq(rows[1].name, "prog+0x2000");
	cr_expect_str_eq(rows[2].name, "prog+0x3000");
	func_table_free(t);
	t = tfn_table(r, FUNC_SORT_TOTAL);
	n = func_table_rows(t, &rows);
	cr_expect_str_eq(rows[1].name, "prog+0x3000");
	func_table_free(t);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

Test(functions, sort_keys, .timeout = 60)
{
	enum func_sort k;
	cr_expect(func_sort_parse("self", &k) && k == FUNC_SORT_SELF);
	cr_expect(func_sort_parse("total", &k) && k == FUNC_SORT_TOTAL);
	cr_expect(func_sort_parse("calls", &k) && k == FUNC_SORT_CALLS);
	cr_expect(func_sort_parse("max", &k) && k == FUNC_SORT_MAX);
	cr_expect(func_sort_parse("name", &k) && k == FUNC_SORT_NAME);
	cr_expect_not(func_sort_parse("Self", &k));
	cr_expect_not(func_sort_parse("", &k));
}

/* Recursion on two threads whose records interleave in the merged walk:
 * pid 10 tid 10: f[1000 f[1100 f[1200 ]f 1300 ]f 1400 ]f 2000 (f inside f inside f)
 * pid 10 tid 12: f[1050 g[1060 f[1070 ]f 1080 ]g 1090 ]f 1150 (f inside g inside f)
 * f: 5 calls of 1000, 300, 100, 100, 10 ns: the outermost ones total 1000 + 100 = 1100,
 *    not 1510; mean over every call 302, max 1000; self 700 + 200 + 100 + 70 + 10 = 1080.
 * g: 1 call, 30 incl, 20 self. */
Test(functions, recursive_calls_count_their_outermost_time_once, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[320];
	snprintf(path, sizeof(path), "%s/rec.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 10, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 10, 10);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 10, 12);
	/* Taken once every stream is made: making one may move the others. */
	struct tu_stream *m = &p.streams[0], *a = &p.streams[1], *b = &p.streams[2];
	tfn_module(m, 10);
	tfn_func(a, TRC_REC_FUNC_ENTER, 1000, F);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1050, F);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1060, G);
	tfn_func(b, TRC_REC_FUNC_ENTER, 1070, F);
	tfn_func(b, TRC_REC_FUNC_EXIT, 1080, F);
	tfn_func(b, TRC_REC_FUNC_EXIT, 1090, G);
	tfn_func(a, TRC_REC_FUNC_ENTER, 1100, F);
	tfn_func(b, TRC_REC_FUNC_EXIT, 1150, F);
	tfn_func(a, TRC_REC_FUNC_ENTER, 1200, F);
	tfn_func(a, TRC_REC_FUNC_EXIT, 1300, F);
	tfn_func(a, TRC_REC_FUNC_EXIT, 1400, F);
	tfn_func(a, TRC_REC_FUNC_EXIT, 2000, F);
	struct trcfile_reader *r = tfn_write_open(path, &p);
	struct func_table *t = tfn_table(r, FUNC_SORT_TOTAL);
	const struct func_row *rows;
	size_t n = func_table_rows(t, &rows);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(rows[0].name, "prog+0x1000");
	cr_expect_eq(rows[0].calls, 5);
	cr_expect_eq(rows[0].incl.total_ns, 1100);
	cr_expect_eq(rows[0].incl.mean_ns, 302);
	cr_expect_eq(rows[0].incl.max_ns, 1000);
	cr_expect_eq(rows[0].self.total_ns, 1080);
	cr_expect_str_eq(rows[1].name, "prog+0x2000");
	cr_expect_eq(rows[1].calls, 1);
	cr_expect_eq(rows[1].incl.total_ns, 30);
	cr_expect_eq(rows[1].self.total_ns, 20);
	uint64_t unmatched, unclosed, unfinished;
	func_table_counts(t, &unmatched, &unclosed, &unfinished);
	cr_expect_eq(unmatched + unclosed + unfinished, 0);
	func_table_free(t);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}
