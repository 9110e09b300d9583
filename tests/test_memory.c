/* test_memory.c - `trace-dump memory`: what made RSS grow (src/analysis/memory.c).
 *
 * Purpose: a trace written with the file writer whose every figure is known: five RSS samples
 * of one process (1, 3, 2, 6, 5 MiB at 1, 2, 3, 4, 5 us), two threads allocating inside a span
 * ("load", "parse"), inside a function (prog+0x2136: its module file does not exist, so the
 * name is module+offset) and outside any frame. The tests check the growth intervals and the
 * bytes by site (innermost and --stack), the live heap beside RSS, the sites live at the RSS
 * peak, the JSON and CSV shapes, the summary's top five, and the usage errors; and one
 * recorded program whose one big allocation is made inside its span; and that a peak is the
 * first of equal samples, and a flat step no growth.
 *
 * Threads: each test is one process (Criterion); trace-dump runs as a child.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>

#include "test_trcfile_util.h"

#define TM_T0 1000000000ull /* the header's start of recording */

static void tm_rec(struct tu_stream *s, uint32_t type, uint64_t t, uint64_t a, uint64_t b)
{
	struct trc_record r = {.type = type, .ts_ns = TM_T0 + t};
	if (type == TRC_REC_ALLOC || type == TRC_REC_FREE) {
		r.alloc.addr = a;
		r.alloc.size = b;
	} else if (type == TRC_REC_MAP || type == TRC_REC_UNMAP) {
		r.map.addr = a;
		r.map.len = b;
		r.map.kind = type == TRC_REC_MAP ? TRC_MAP_ANON : 0;
	} else if (type == TRC_REC_FUNC_ENTER || type == TRC_REC_FUNC_EXIT) {
		r.func.addr = a;
	} else {
		r.span.name_id = (uint32_t)a;
	}
	tu_add(s, &r);
}

/* Writes dir/in.trc (the plan in the file comment). */
static void tm_write(const char *dir)
{
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4243);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct tu_stream *meta = &p.streams[0], *a = &p.streams[1], *b = &p.streams[2],
			 *rss = &p.streams[3];
	static const char *const names[] = {"", "load", "parse"};
	struct trc_record r;
	for (uint32_t i = 1; i < 3; i++)
		tu_add_name(meta, i, names[i], TM_T0);
	r = (struct trc_record){.type = TRC_REC_MODULE, .ts_ns = TM_T0};
	r.module.pid = 4242;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.offset = 0x1000;
	r.module.path = "/nonexistent/prog";
	r.module.path_len = 17;
	tu_add(meta, &r);
	/* thread a */
	tm_rec(a, TRC_REC_ALLOC, 500, 0x10000, 100); /* before the first sample */
	tm_rec(a, TRC_REC_SPAN_BEGIN, 1100, 1, 0);
	tm_rec(a, TRC_REC_ALLOC, 1200, 0x11000, 1000); /* load */
	tm_rec(a, TRC_REC_FUNC_ENTER, 1300, 0x401136, 0);
	tm_rec(a, TRC_REC_ALLOC, 1400, 0x12000, 300); /* load;prog+0x2136 */
	tm_rec(a, TRC_REC_FUNC_EXIT, 1500, 0x401136, 0);
	tm_rec(a, TRC_REC_SPAN_END, 1600, 1, 0);
	tm_rec(a, TRC_REC_FREE, 2500, 0x11000, 0);
	tm_rec(a, TRC_REC_SPAN_BEGIN, 3100, 2, 0);
	tm_rec(a, TRC_REC_ALLOC, 3200, 0x13000, 5000); /* parse */
	tm_rec(a, TRC_REC_SPAN_END, 3300, 2, 0);
	/* thread b */
	tm_rec(b, TRC_REC_ALLOC, 1700, 0x20000, 700); /* no frame */
	/* b maps 64 KiB outside malloc from before the second sample to after the fourth */
	tm_rec(b, TRC_REC_MAP, 1800, 0x7f0000000000, 65536);
	tm_rec(b, TRC_REC_SPAN_BEGIN, 3500, 1, 0);
	tm_rec(b, TRC_REC_ALLOC, 3600, 0x21000, 2000); /* load */
	tm_rec(b, TRC_REC_SPAN_END, 3700, 1, 0);
	tm_rec(b, TRC_REC_FREE, 4500, 0x21000, 0); /* after the peak */
	tm_rec(b, TRC_REC_UNMAP, 4600, 0x7f0000000000, 65536);
	static const uint64_t mib[] = {1, 3, 2, 6, 5};
	for (int i = 0; i < 5; i++) {
		r = (struct trc_record){.type = TRC_REC_RSS,
					.ts_ns = TM_T0 + 1000 * (uint64_t)(i + 1)};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = 4242;
		r.rss.rss_bytes = (mib[i] << 20) + 4096; /* the buffers are taken out */
		r.rss.buffers_bytes = 4096;
		tu_add(rss, &r);
	}
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);
}

/* The build directory as an absolute path (the commands run in the test's directory). */
static const char *tm_build(void)
{
	static char abs[4096];
	cr_assert_not_null(realpath(tu_build(), abs), "%s: %s", tu_build(), strerror(errno));
	return abs;
}

/* Runs `trace-dump memory OPTS dir/in.trc` (or another command line after "trace-dump"),
 * asserts its exit status and returns its standard output. */
static char *tm_run(const char *dir, int want, const char *cmd)
{
	int rc = tu_sh("cd '%s' && %s/bin/trace-dump %s > out 2> err", dir, tm_build(), cmd);
	cr_assert_eq(rc, want, "trace-dump %s: status %d: %s", cmd, rc, tu_slurp_text(dir, "err"));
	return tu_slurp_text(dir, "out");
}

#define tm_has(out, s) cr_expect(strstr(out, s), "not in the output: %s\n%s", s, out)

Test(memory, json_intervals_series_and_peak_are_exact, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tm_write(dir);
	char *o = tm_run(dir, 0, "memory --json in.trc");
	/* 1 -> 3 MiB: a's 1000 in load and 300 in the function, b's 700 outside any frame;
	 * 100 bytes live from before the first sample. 3 -> 2 MiB fell: not an interval. */
	tm_has(o,
	       "{\"pid\":4242,\"t0_ns\":1000,\"t1_ns\":2000,\"rss_before_bytes\":1048576,"
	       "\"rss_after_bytes\":3145728,\"rss_growth_bytes\":2097152,\"alloc_bytes\":2000,"
	       "\"allocs\":3,\"free_bytes\":0,\"live_before_bytes\":100,\"live_after_bytes\":2100,"
	       "\"sites\":[{\"name\":\"load\",\"bytes\":1000,\"allocs\":1},"
	       "{\"name\":\"[no span or function]\",\"bytes\":700,\"allocs\":1},"
	       "{\"name\":\"prog+0x2136\",\"bytes\":300,\"allocs\":1}]}");
	/* 2 -> 6 MiB: a's 5000 in parse, b's 2000 in load; a freed the 1000 before it began. */
	tm_has(o,
	       "{\"pid\":4242,\"t0_ns\":3000,\"t1_ns\":4000,\"rss_before_bytes\":2097152,"
	       "\"rss_after_bytes\":6291456,\"rss_growth_bytes\":4194304,\"alloc_bytes\":7000,"
	       "\"allocs\":2,\"free_bytes\":0,\"live_before_bytes\":1100,\"live_after_bytes\":8100,"
	       "\"sites\":[{\"name\":\"parse\",\"bytes\":5000,\"allocs\":1},"
	       "{\"name\":\"load\",\"bytes\":2000,\"allocs\":1}]}]");
	tm_has(o, "\"series\":[{\"t_ns\":1000,\"rss_bytes\":1048576,\"live_heap_bytes\":100,"
		  "\"gap_bytes\":1048476,\"mapped_bytes\":0},{\"t_ns\":2000,\"rss_bytes\":3145728,\"live_heap_bytes\":"
		  "2100,"
		  "\"gap_bytes\":3143628,\"mapped_bytes\":65536},{\"t_ns\":3000,\"rss_bytes\":2097152,\"live_heap_bytes\":"
		  "1100,"
		  "\"gap_bytes\":2096052,\"mapped_bytes\":65536},{\"t_ns\":4000,\"rss_bytes\":6291456,\"live_heap_bytes\":"
		  "8100,"
		  "\"gap_bytes\":6283356,\"mapped_bytes\":65536},{\"t_ns\":5000,\"rss_bytes\":5242880,\"live_heap_bytes\":"
		  "6100,"
		  "\"gap_bytes\":5236780,\"mapped_bytes\":0}]");
	/* At the peak (6 MiB at 4 us): parse 5000, load 2000 (b's; a's was freed), the two
	 * blocks made outside any frame, the function's 300. */
	tm_has(o, "{\"pid\":4242,\"rss_peak_bytes\":6291456,\"rss_peak_t_ns\":4000,"
		  "\"live_at_peak_bytes\":8100,\"live_approximate\":false,\"intervals\":[");
	tm_has(o, "\"peak_sites\":[{\"name\":\"parse\",\"bytes\":5000,\"allocs\":1},"
		  "{\"name\":\"load\",\"bytes\":2000,\"allocs\":1},"
		  "{\"name\":\"[no span or function]\",\"bytes\":800,\"allocs\":2},"
		  "{\"name\":\"prog+0x2136\",\"bytes\":300,\"allocs\":1}],");
	/* Over the run: load's two blocks; at the end: what a kept (parse's, the function's)
	 * and the two made outside a frame; temporary: b's 2000, freed before b allocated
	 * again (a's 1000 was not: a allocated the 300 in between). */
	tm_has(o, "\"sites\":[{\"name\":\"parse\",\"bytes\":5000,\"allocs\":1},"
		  "{\"name\":\"load\",\"bytes\":3000,\"allocs\":2},"
		  "{\"name\":\"[no span or function]\",\"bytes\":800,\"allocs\":2},"
		  "{\"name\":\"prog+0x2136\",\"bytes\":300,\"allocs\":1}],"
		  "\"live_at_end_bytes\":6100,"
		  "\"live_at_end_sites\":[{\"name\":\"parse\",\"bytes\":5000,\"allocs\":1},"
		  "{\"name\":\"[no span or function]\",\"bytes\":800,\"allocs\":2},"
		  "{\"name\":\"prog+0x2136\",\"bytes\":300,\"allocs\":1}],"
		  "\"temporary_sites\":[{\"name\":\"load\",\"bytes\":2000,\"allocs\":1}]}]");
	tm_has(o, "],\"alloc_bytes_unsampled\":0,\"folded_frames\":0}\n");
	free(o);
	/* A strict parser reads it; two processes' worth of keys are where they belong. */
	cr_expect_eq(tu_sh("cd '%s' && python3 -c 'import json; d=json.load(open(\"out\")); "
			   "assert d[\"sites\"]==\"innermost\"; p=d[\"processes\"]; "
			   "assert len(p)==1 and len(p[0][\"intervals\"])==2 and "
			   "len(p[0][\"series\"])==5'",
			   dir),
		     0);
	tu_rm_rf(dir);
}

Test(memory, stack_sites_and_cut_to_n, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tm_write(dir);
	char *o = tm_run(dir, 0, "memory --json --stack in.trc");
	tm_has(o, "{\"sites\":\"stack\",");
	tm_has(o, "\"sites\":[{\"name\":\"load\",\"bytes\":1000,\"allocs\":1},"
		  "{\"name\":\"[no span or function]\",\"bytes\":700,\"allocs\":1},"
		  "{\"name\":\"load;prog+0x2136\",\"bytes\":300,\"allocs\":1}]}");
	free(o);
	/* --sites 1: the largest, then the rest together. */
	o = tm_run(dir, 0, "memory --json --sites 1 in.trc");
	tm_has(o, "\"sites\":[{\"name\":\"load\",\"bytes\":1000,\"allocs\":1},"
		  "{\"name\":\"(other sites)\",\"bytes\":1000,\"allocs\":2}]}");
	free(o);
	tu_rm_rf(dir);
}

Test(memory, csv_tables_and_text, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tm_write(dir);
	char *o = tm_run(dir, 0, "memory --csv series in.trc");
	cr_expect_str_eq(o, "pid,t_ns,rss_bytes,live_heap_bytes,gap_bytes,mapped_bytes\n"
			    "4242,1000,1048576,100,1048476,0\n"
			    "4242,2000,3145728,2100,3143628,65536\n"
			    "4242,3000,2097152,1100,2096052,65536\n"
			    "4242,4000,6291456,8100,6283356,65536\n"
			    "4242,5000,5242880,6100,5236780,0\n");
	free(o);
	o = tm_run(dir, 0, "memory --csv intervals in.trc");
	cr_expect_str_eq(
		o, "pid,t0_ns,t1_ns,rss_before_bytes,rss_after_bytes,rss_growth_bytes,"
		   "alloc_bytes,allocs,free_bytes,live_before_bytes,live_after_bytes,site,"
		   "site_bytes,site_allocs\n"
		   "4242,1000,2000,1048576,3145728,2097152,2000,3,0,100,2100,\"load\",1000,1\n"
		   "4242,1000,2000,1048576,3145728,2097152,2000,3,0,100,2100,"
		   "\"[no span or function]\",700,1\n"
		   "4242,1000,2000,1048576,3145728,2097152,2000,3,0,100,2100,"
		   "\"prog+0x2136\",300,1\n"
		   "4242,3000,4000,2097152,6291456,4194304,7000,2,0,1100,8100,\"parse\",5000,1\n"
		   "4242,3000,4000,2097152,6291456,4194304,7000,2,0,1100,8100,\"load\",2000,1\n");
	free(o);
	o = tm_run(dir, 0, "memory --csv peak -o peak.csv in.trc");
	cr_expect_str_eq(o, "");
	free(o);
	o = tu_slurp_text(dir, "peak.csv");
	cr_expect_str_eq(o, "pid,t_ns,rss_bytes,live_heap_bytes,site,bytes,blocks\n"
			    "4242,4000,6291456,8100,\"parse\",5000,1\n"
			    "4242,4000,6291456,8100,\"load\",2000,1\n"
			    "4242,4000,6291456,8100,\"[no span or function]\",800,2\n"
			    "4242,4000,6291456,8100,\"prog+0x2136\",300,1\n");
	free(o);
	/* Text: largest growth first, the sites under each, the peak marked. */
	o = tm_run(dir, 0, "memory in.trc");
	tm_has(o, "process 4242: max sampled 6.0 MiB at 4.000 us (live heap 7.9 KiB, gap 6.0 MiB; "
		  "the peak, the kernel's, is in trace-dump summary)\n");
	tm_has(o, "  before its first sample (500 ns to 1.000 us): 100 B allocated in 1 alloc, "
		  "0 B freed, 100 B live; RSS at the first sample 1.0 MiB\n");
	tm_has(o, "  RSS rose in 2 of 4 intervals between samples; all 2, largest growth first");
	const char *big = strstr(o, "    3.000 us   4.000 us    2.0 MiB   +4.0 MiB    6.8 KiB");
	const char *small = strstr(o, "    1.000 us   2.000 us    1.0 MiB   +2.0 MiB    2.0 KiB");
	cr_expect(big && small && big < small, "%s", o);
	tm_has(o, "             4.9 KiB        1  parse\n");
	tm_has(o, "    4.000 us    6.0 MiB    7.9 KiB    6.0 MiB   64.0 KiB  peak\n");
	tm_has(o, "  live at the max sample, by site:\n");
	free(o);
	tu_rm_rf(dir);
}

/* The summary: the two rises, largest first, each with the site that allocated most. */
Test(memory, summary_top_five, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tm_write(dir);
	char *o = tm_run(dir, 0, "summary --json in.trc");
	tm_has(o, ",\"memory\":[{\"pid\":4242,\"t0_ns\":3000,\"t1_ns\":4000,");
	tm_has(o, "\"sites\":[{\"name\":\"parse\",\"bytes\":5000,\"allocs\":1},"
		  "{\"name\":\"(other sites)\",\"bytes\":2000,\"allocs\":1}]},{\"pid\":4242,"
		  "\"t0_ns\":1000,\"t1_ns\":2000,");
	free(o);
	o = tm_run(dir, 0, "summary in.trc");
	tm_has(o, "RSS growth (the 2 largest rises between samples; trace-dump memory for all):\n");
	tm_has(o, "      4242    3.000 us   4.000 us   +4.0 MiB    6.8 KiB  parse (4.9 KiB)\n");
	free(o);
	tu_rm_rf(dir);
}

/* Per process: the RSS samples carry their pid (the sampler samples every process of the
 * tree); a child (4300) allocating at the parent's address is charged to itself, its
 * intervals are its own, and a sample without a pid is the traced program's (4242). */
Test(memory, processes_apart, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4300, 4300);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tm_rec(&p.streams[1], TRC_REC_ALLOC, 1500, 0x10000, 100);
	tm_rec(&p.streams[2], TRC_REC_ALLOC, 1600, 0x10000, 9000);
	tm_rec(&p.streams[2], TRC_REC_FREE, 2500, 0x10000, 0);
	static const struct {
		uint32_t pid;
		uint64_t t, mib;
	} smp[] = {{0, 1000, 1}, {4300, 1000, 1}, {0, 2000, 2}, {4300, 2000, 4}, {4300, 3000, 5}};
	for (size_t i = 0; i < sizeof(smp) / sizeof(smp[0]); i++) {
		struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = TM_T0 + smp[i].t};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = smp[i].pid;
		r.rss.rss_bytes = smp[i].mib << 20;
		tu_add(&p.streams[3], &r);
	}
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);
	char *out = tm_run(dir, 0, "memory --csv intervals in.trc");
	cr_expect_str_eq(out,
			 "pid,t0_ns,t1_ns,rss_before_bytes,rss_after_bytes,rss_growth_bytes,"
			 "alloc_bytes,allocs,free_bytes,live_before_bytes,live_after_bytes,site,"
			 "site_bytes,site_allocs\n"
			 "4242,1000,2000,1048576,2097152,1048576,100,1,0,0,100,"
			 "\"[no span or function]\",100,1\n"
			 "4300,1000,2000,1048576,4194304,3145728,9000,1,0,0,9000,"
			 "\"[no span or function]\",9000,1\n"
			 "4300,2000,3000,4194304,5242880,1048576,0,0,9000,9000,0,,,\n");
	free(out);
	out = tm_run(dir, 0, "memory --csv series in.trc");
	cr_expect_str_eq(out, "pid,t_ns,rss_bytes,live_heap_bytes,gap_bytes,mapped_bytes\n"
			      "4242,1000,1048576,0,1048576,0\n"
			      "4242,2000,2097152,100,2097052,0\n"
			      "4300,1000,1048576,0,1048576,0\n"
			      "4300,2000,4194304,9000,4185304,0\n"
			      "4300,3000,5242880,0,5242880,0\n");
	free(out);
	tu_rm_rf(dir);
}

/* RSS 2, 6, 6, 6 MiB at 1, 2, 3, 4 us: the peak is the first sample of the largest value (2 us,
 * with 1000 bytes live), and the flat steps after it are no growth: one interval only. */
Test(memory, peak_is_the_first_of_equal_samples_and_flat_steps_are_no_growth, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct tu_stream *a = &p.streams[1],
			 *rss = &p.streams[2]; /* the plan is whole: no realloc */
	tm_rec(a, TRC_REC_ALLOC, 1500, 0x10000, 1000);
	tm_rec(a, TRC_REC_FREE, 2500, 0x10000, 0);
	tm_rec(a, TRC_REC_ALLOC, 2600, 0x20000, 500);
	static const uint64_t mib[] = {2, 6, 6, 6};
	for (int i = 0; i < 4; i++) {
		struct trc_record r = {.type = TRC_REC_RSS,
				       .ts_ns = TM_T0 + 1000 * (uint64_t)(i + 1)};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = 4242;
		r.rss.rss_bytes = mib[i] << 20;
		tu_add(rss, &r);
	}
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2), 0);
	tu_plan_free(&p);
	char *out = tm_run(dir, 0, "memory --json in.trc");
	tm_has(out, "{\"pid\":4242,\"rss_peak_bytes\":6291456,\"rss_peak_t_ns\":2000,"
		    "\"live_at_peak_bytes\":1000,");
	tm_has(out, "\"intervals\":[{\"pid\":4242,\"t0_ns\":1000,\"t1_ns\":2000,");
	tm_has(out, "\"rss_growth_bytes\":4194304,");
	cr_expect_null(strstr(out, "\"t0_ns\":2000"), "a flat step listed as growth:\n%s", out);
	free(out);
	tu_rm_rf(dir);
}

Test(memory, usage_errors, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	tm_write(dir);
	static const struct {
		const char *args, *msg;
	} bad[] = {
		{"memory --csv tables in.trc", "--csv: expected intervals, series, peak, sites"},
		{"memory --json --csv series in.trc", "--json and --csv: choose one"},
		{"memory --sites x in.trc", "--sites: expected a count"},
		{"memory --top -1 in.trc", "--top: expected a count"},
		{"memory --bogus in.trc", "--bogus"},
		{"memory", "FILE"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		free(tm_run(dir, 2, bad[i].args));
		char *e = tu_slurp_text(dir, "err");
		cr_expect(strstr(e, "trace-dump memory: ") && strstr(e, bad[i].msg), "%s: %s",
			  bad[i].args, e);
		cr_expect_eq(strchr(e, '\n') - e + 1, (long)strlen(e), "one line: %s", e);
		free(e);
	}
	free(tm_run(dir, 1, "memory missing.trc"));
	char *e = tu_slurp_text(dir, "err");
	tm_has(e, "missing.trc");
	free(e);
	free(tm_run(dir, 0, "memory --help"));
	tu_rm_rf(dir);
}

/* A recorded program: prog_e2e_mem allocates 16 MiB inside its span "touch" and holds them;
 * RSS rises while it touches them, and at the RSS peak the 16 MiB are live, from "touch"
 * (without call stacks the site is the innermost span). */
Test(memory, recorded_program_allocation_in_its_span, .timeout = 120)
{
	if (getenv("TRC_SANITIZER_TIER"))
		cr_skip_test(
			"a sanitizer's allocator is not the preload library's: no allocations");
	const char *dir = tu_tmpdir();
	int rc = tu_sh("cd '%s' && %s/bin/trace-run -q --alloc-stacks none --rss-interval 5ms "
		       "-o in.trc -- %s/tests/prog_e2e_mem 16 200 > /dev/null 2> err",
		       dir, tm_build(), tm_build());
	cr_assert_eq(rc, 0, "trace-run: %s", tu_slurp_text(dir, "err"));
	char *o = tm_run(dir, 0, "memory --csv peak in.trc");
	tm_has(o, ",\"touch\",16777216,1\n");
	free(o);
	o = tm_run(dir, 0, "memory --csv intervals in.trc");
	tm_has(o, ",\"touch\",16777216,1\n");
	free(o);
	tu_rm_rf(dir);
}

/* The same with call stacks (the default): the site is the function that called malloc
 * (main), and the whole stack is the span open around the call, then the call stack from
 * the program's entry to main. */
Test(memory, recorded_program_allocation_by_call_stack, .timeout = 120)
{
	if (getenv("TRC_SANITIZER_TIER"))
		cr_skip_test(
			"a sanitizer's allocator is not the preload library's: no allocations");
	const char *dir = tu_tmpdir();
	int rc = tu_sh("cd '%s' && TRC_STACK_VERIFY=1 %s/bin/trace-run -q --rss-interval 5ms "
		       "-o in.trc -- %s/tests/prog_e2e_mem 16 200 > /dev/null 2> err",
		       dir, tm_build(), tm_build());
	cr_assert_eq(rc, 0, "trace-run: %s", tu_slurp_text(dir, "err"));
	cr_assert_null(strstr(tu_slurp_text(dir, "err"), "wrong stack"));
	char *o = tm_run(dir, 0, "memory --csv peak in.trc");
	tm_has(o, ",\"main\",16777216,1\n");
	free(o);
	o = tm_run(dir, 0, "memory --stack --csv peak in.trc");
	tm_has(o, ",\"touch;_start;__libc_start_main;__libc_start_call_main;main\",16777216,1\n");
	free(o);
	tu_rm_rf(dir);
}

/* A process that allocates (and touches) 64 MiB before its first sample and is flat after it:
 * no interval between samples rose, but the growth before the first one is said, with its
 * site, in the text and in --json. The largest sample is called what it is ("max sampled"),
 * not the peak (the kernel's, in trace-dump summary). */
Test(memory, growth_before_the_first_sample_is_said, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tu_add_name(&p.streams[0], 1, "fill", TM_T0);
	tm_rec(&p.streams[1], TRC_REC_SPAN_BEGIN, 400, 1, 0);
	tm_rec(&p.streams[1], TRC_REC_ALLOC, 500, 0x10000, 64ull << 20);
	tm_rec(&p.streams[1], TRC_REC_ALLOC, 600, 0x20000, 1000);
	tm_rec(&p.streams[1], TRC_REC_FREE, 700, 0x20000, 0);
	tm_rec(&p.streams[1], TRC_REC_SPAN_END, 800, 1, 0);
	for (int i = 0; i < 2; i++) {
		struct trc_record r = {.type = TRC_REC_RSS,
				       .ts_ns = TM_T0 + 1000 * (uint64_t)(i + 1)};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = 4242;
		r.rss.rss_bytes = 65ull << 20;
		tu_add(&p.streams[2], &r);
	}
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct trcfile_writer_opts wo = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &wo, 2), 0);
	tu_plan_free(&p);
	char *o = tm_run(dir, 0, "memory in.trc");
	tm_has(o, "process 4242: max sampled 65.0 MiB at 1.000 us (live heap 64.0 MiB, gap 1.0 "
		  "MiB; the peak, the kernel's, is in trace-dump summary)\n");
	tm_has(o, "  before its first sample (500 ns to 1.000 us): 64.0 MiB allocated in 2 "
		  "allocs, 1000 B freed, 64.0 MiB live; RSS at the first sample 65.0 MiB\n");
	tm_has(o, "            64.0 MiB        2  fill\n");
	tm_has(o, "  RSS never rose between two of its 2 samples\n");
	tm_has(o, "  live at the max sample, by site:\n");
	free(o);
	o = tm_run(dir, 0, "memory --json in.trc");
	tm_has(o, "\"before_first_sample\":{\"pid\":4242,\"t0_ns\":500,\"t1_ns\":1000,"
		  "\"rss_before_bytes\":0,\"rss_after_bytes\":68157440,\"rss_growth_bytes\":"
		  "68157440,\"alloc_bytes\":67109864,\"allocs\":2,\"free_bytes\":1000,"
		  "\"live_before_bytes\":0,\"live_after_bytes\":67108864,\"sites\":[{\"name\":"
		  "\"fill\",\"bytes\":67109864,\"allocs\":2}]},\"series\":[");
	free(o);
	tu_rm_rf(dir);
}
