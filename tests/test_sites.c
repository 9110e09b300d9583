/* test_sites.c - bytes allocated per site over the whole trace (src/analysis/sites.c) on a
 * trace computed by hand: a span and a function nested, allocations inside each and outside
 * every frame, the same span on another thread and the same function in another process (one
 * row each), sizes whose percentiles are known. */
#include "sites.h"
#include "test_trcfile_util.h"

static void ts_rec(struct tu_stream *s, uint32_t type, uint64_t ts, uint64_t a, uint64_t b)
{
	struct trc_record r = {.type = type, .ts_ns = ts};
	if (type == TRC_REC_ALLOC) {
		r.alloc.addr = a;
		r.alloc.size = b;
	} else if (type == TRC_REC_FUNC_ENTER || type == TRC_REC_FUNC_EXIT) {
		r.func.addr = a;
	} else {
		r.span.name_id = (uint32_t)a;
	}
	tu_add(s, &r);
}

/* thread 1: parse[ alloc 100, f[ alloc 200 ]f, alloc 300 ]parse, alloc 50 (no frame)
 * thread 2: parse[ alloc 1000 ]parse
 * process 4343: f[ alloc 400 ]f (its own frame of the same address: one row by name)
 * Sites: parse 3 x (100, 300, 1000) = 1400 B, 0x401136 200 + 400 B, outside 50 B. */
Test(sites, by_innermost_frame_merged_by_name, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/s.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4243);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4343, 4343);
	tu_add_name(&p.streams[0], 1, "parse", 900);
	struct tu_stream *a = &p.streams[1], *b = &p.streams[2];
	ts_rec(a, TRC_REC_SPAN_BEGIN, 1000, 1, 0);
	ts_rec(a, TRC_REC_ALLOC, 1001, 0x10, 100);
	ts_rec(a, TRC_REC_FUNC_ENTER, 1002, 0x401136, 0);
	ts_rec(a, TRC_REC_ALLOC, 1003, 0x20, 200);
	ts_rec(a, TRC_REC_FUNC_EXIT, 1004, 0x401136, 0);
	ts_rec(a, TRC_REC_ALLOC, 1005, 0x30, 300);
	ts_rec(a, TRC_REC_SPAN_END, 1006, 1, 0);
	ts_rec(a, TRC_REC_ALLOC, 1007, 0x40, 50);
	ts_rec(b, TRC_REC_SPAN_BEGIN, 1000, 1, 0);
	ts_rec(b, TRC_REC_ALLOC, 1001, 0x50, 1000);
	ts_rec(b, TRC_REC_SPAN_END, 1002, 1, 0);
	struct tu_stream *c3 = &p.streams[3];
	ts_rec(c3, TRC_REC_FUNC_ENTER, 1000, 0x401136, 0);
	ts_rec(c3, TRC_REC_ALLOC, 1001, 0x60, 400);
	ts_rec(c3, TRC_REC_FUNC_EXIT, 1002, 0x401136, 0);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 4), 0);
	tu_plan_free(&p);

	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	struct site_table *t = site_table_new(r);
	cr_assert_not_null(t);
	struct trc_record recs[64];
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		cr_assert_not_null(c);
		int n;
		while ((n = trcfile_cursor_read(c, recs, 64)) > 0)
			for (int i = 0; i < n; i++)
				cr_assert_eq(
					site_table_add(t, s, trcfile_reader_stream(r, s), &recs[i]),
					0);
		cr_assert_eq(n, 0);
		trcfile_cursor_free(c);
	}
	cr_assert_eq(site_table_finish(t, r, NULL), 0);
	const struct site_row *rows = NULL;
	cr_assert_eq(site_table_rows(t, &rows), 3);
	cr_expect_str_eq(rows[0].name, "parse");
	cr_expect_eq(rows[0].allocs, 3);
	cr_expect_eq(rows[0].bytes, 1400);
	cr_expect_eq(rows[0].size_max, 1000);
	/* The p50 of 100, 300, 1000 is 300 within histogram.h's 3 %; the p99 is 1000. */
	cr_expect(rows[0].size_p50 >= 291 && rows[0].size_p50 <= 309, "p50 %lu",
		  (unsigned long)rows[0].size_p50);
	cr_expect_eq(rows[0].size_p99, 1000);
	cr_expect_str_eq(rows[1].name, "0x401136");
	cr_expect_eq(rows[1].allocs, 2);
	cr_expect_eq(rows[1].bytes, 600);
	cr_expect_eq(rows[1].size_max, 400);
	cr_expect_str_eq(rows[2].name, "[no span or function]");
	cr_expect_eq(rows[2].allocs, 1);
	cr_expect_eq(rows[2].bytes, 50);
	cr_expect(!site_table_approximate(t));
	site_table_free(t);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}
