/* test_report.c - `trace-dump report`, the built command, on traces written with the writer
 * (test_gates_util.h): the page is one file with nothing to fetch, its figures are summary
 * --json's, a hostile name cannot end its script, lists are cut to their bounds on a trace
 * with more names, threads and processes than shown, and a damaged trace (a chunk corrupted,
 * the file cut short) gives a page that says what was damaged instead of failing. The page in
 * a browser is tests/report_check.mjs's (make test-report).
 *
 * The binary is $TRC_BUILD/bin/trace-dump (make test sets TRC_BUILD); python3 reads the page.
 */
#include <criterion/criterion.h>

#include "test_gates_util.h"

#define GT_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Python that loads the page's data (PAGE) and the summary (SUMMARY) as D and S. */
#define RT_PY_LOAD                                                                            \
	"import json, re, sys\n"                                                              \
	"html = open(sys.argv[1], encoding='utf-8').read()\n"                                 \
	"m = re.search(r'<script type=\"application/json\" id=\"trc-data\">(.*?)</script>', " \
	"html, "                                                                              \
	"re.S)\n"                                                                             \
	"D = json.loads(m.group(1))\n"                                                        \
	"S = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None\n"

/* Runs py (after RT_PY_LOAD) on dir/page.html and dir/summary.json. */
static int rt_py(const char *dir, const char *py)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/check.py", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(RT_PY_LOAD, f);
	fputs(py, f);
	fclose(f);
	return tu_sh("python3 %s/check.py %s/page.html %s/summary.json", dir, dir, dir);
}

/* The report of trace into dir/page.html and its summary into dir/summary.json. */
static void rt_report(const char *dir, const char *trace)
{
	char page[512];
	snprintf(page, sizeof(page), "%s/page.html", dir);
	struct gt_run r = gt_dump(dir, GT_ARGS("report", "-o", page, trace));
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	cr_assert_str_empty(r.out);
	gt_free(&r);
	r = gt_dump(dir, GT_ARGS("summary", "--json", trace));
	cr_assert_eq(r.status, 0);
	char sj[512];
	snprintf(sj, sizeof(sj), "%s/summary.json", dir);
	tu_write_file(sj, r.out, strlen(r.out));
	gt_free(&r);
}

Test(report, figures_are_summary_json_s, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	rt_report(dir, a);
	cr_expect_eq(
		rt_py(dir,
		      "assert D['events_recorded'] == S['events_recorded'] == 134, "
		      "D['events_recorded']\n"
		      "assert D['alloc_bytes'] == S['alloc_bytes'] == 40500\n"
		      "assert D['live_peak_bytes'] == S['live_peak_bytes']\n"
		      "assert D['duration_ns'] == S['duration_ns']\n"
		      "assert D['damage'] == [], D['damage']\n"
		      "p, q = D['processes'][0], S['processes'][0]\n"
		      "assert (p['pid'], p['command'], p['peak_bytes'], p['samples']) == "
		      "(q['pid'], 'prog --gates', q['rss_peak_bytes'], q['rss_samples']), (p, q)\n"
		      "assert p['peak_source'].startswith('kernel')\n"
		      "r = D['rss'][0]\n"
		      "assert len(r['points']) == q['rss_samples'] and r['max_bytes'] == "
		      "q['rss_sampled_max_bytes'] == 12 << 20, r\n"
		      "assert max(x[1] for x in r['points']) == q['rss_sampled_max_bytes']\n"
		      "assert all(x[2] is not None and x[2] <= S['live_peak_bytes'] for x in "
		      "r['points']), r['points']\n"
		      "sp = {x['name']: x for x in S['names']}\n"
		      "for row in D['spans']:\n"
		      "  n = sp[row['name']]\n"
		      "  assert (row['count'], row['total_ns'], row['p50_ns'], row['p99_ns'], "
		      "row['max_ns']) == (n['spans'], n['span_total_ns'], n['span_p50_ns'], "
		      "n['span_p99_ns'], n['span_max_ns']), row\n"
		      "  assert sum(row['bins']) == n['spans'], row\n"
		      "assert [x['name'] for x in D['spans']] == ['parse', 'load']\n"
		      "f = D['functions'][0]\n"
		      "assert (f['name'], f['calls'], f['total_ns']) == "
		      "(S['functions'][0]['name'], 20, "
		      "20000), f\n"
		      "assert sum(f['bins']) == 20\n"
		      "assert D['flame_bytes']['total'] == S['alloc_bytes']\n"
		      "assert sum(w for s, w in D['flame_bytes']['stacks']) + "
		      "D['flame_bytes']['other'] "
		      "== S['alloc_bytes']\n"
		      "assert dict(D['flame_bytes']['stacks']) == {'parse': 40000, 'load': 500}\n"
		      "assert [(t['name'], t['events']) for t in D['threads']] == [('main', 94), "
		      "('worker', 40)], D['threads']\n"
		      "assert len(D['threads'][0]['cols']) == 200\n"
		      "assert max(max(t['cols']) for t in D['threads']) == 99\n"),
		0);
	tu_rm_rf(dir);
}

Test(report, one_file_nothing_fetched_no_name_ends_the_script, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/h.trc", dir);
	/* A span named to end the data's script and start one of its own. */
	struct tu_plan p = {0};
	struct gt_shape sh = gt_base();
	gt_plan(&p, &sh);
	p.streams[0].recs[0].name.str = "</script><script>alert(1)</script><!--&\xff";
	p.streams[0].recs[0].name.len = (uint32_t)strlen(p.streams[0].recs[0].name.str);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 16), 0);
	tu_plan_free(&p);
	rt_report(dir, path);
	cr_expect_eq(
		rt_py(dir,
		      "assert html.count('</script') == 2, html.count('</script')\n"
		      "assert html.count('<script') == 2\n"
		      "assert not re.search(r'(src|href)\\s*=', html), 'a reference'\n"
		      "assert 'http://' not in html.replace('http://www.w3.org/2000/svg', '') and "
		      "'https://' not in html\n"
		      "names = [x['name'] for x in D['spans']]\n"
		      "assert '</script><script>alert(1)</script><!--&\\xff' in names, names\n"),
		0);
	tu_rm_rf(dir);
}

Test(report, lists_are_cut_to_their_bounds, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/big.trc", dir);
	/* 1000 span names on 300 threads, and 30 processes with RSS samples. */
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	for (uint32_t t = 0; t < 300; t++)
		tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 5000 + t);
	tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	static char names[1000][16];
	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(names[i], sizeof(names[i]), "span%04u", i);
		tu_add_name(&p.streams[0], i + 1, names[i], 1000000000ull);
	}
	for (uint32_t i = 0; i < 1000; i++) {
		struct tu_stream *s = &p.streams[1 + i % 300];
		uint64_t t = 1000001000ull + 10000ull * i;
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
		r.span.name_id = i + 1;
		tu_add(s, &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t + 100 + i};
		r.span.name_id = i + 1;
		tu_add(s, &r);
	}
	for (uint32_t k = 0; k < 30; k++)
		for (uint32_t i = 0; i < 5; i++) {
			struct trc_record r = {.type = TRC_REC_RSS,
					       .ts_ns = 1000000000ull + 2000000ull * i + k};
			r.rss.pid = 6000 + k;
			r.rss.rss_bytes = (1ull + k + i) << 20;
			tu_add(&p.streams[301], &r);
		}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 64), 0);
	tu_plan_free(&p);
	rt_report(dir, path);
	cr_expect_eq(
		rt_py(dir,
		      "assert len(D['spans']) == 200 and D['spans_more'] == 800, len(D['spans'])\n"
		      "assert D['spans'][0]['name'] == 'span0999', D['spans'][0]\n"
		      "assert len(D['threads']) == 256 and D['threads_more'] == 44\n"
		      "assert len(D['rss']) == 24 and D['rss_more'] == 6, len(D['rss'])\n"
		      "assert D['rss'][0]['pid'] == 6029 and D['rss'][0]['max_bytes'] == 34 << 20\n"
		      "assert len(html) < 5 << 20\n"),
		0);
	tu_rm_rf(dir);
}

/* Overwrites len bytes at off of path with garbage. */
static void rt_scribble(const char *path, long off, size_t len)
{
	int fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	char junk[256];
	memset(junk, 0x5a, sizeof(junk));
	cr_assert_eq(pwrite(fd, junk, len, off), (ssize_t)len);
	close(fd);
}

Test(report, damaged_trace_says_what_was_damaged, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	sh.spans = 400; /* several chunks per stream */
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	struct stat st;
	cr_assert_eq(stat(a, &st), 0);
	/* A chunk in the middle: its bytes overwritten. */
	rt_scribble(a, st.st_size / 2, 64);
	rt_report(dir, a);
	cr_expect_eq(rt_py(dir,
			   "assert any('chunks failed their checks and were skipped' in d for d in "
			   "D['damage']), D['damage']\n"
			   "assert S['chunks_damaged'] >= 1\n"
			   "assert D['events_recorded'] == S['events_recorded'] and D['spans'], "
			   "D['spans']\n"),
		     0);
	/* Cut short: no footer. */
	cr_assert_eq(truncate(a, st.st_size * 2 / 3), 0);
	rt_report(dir, a);
	cr_expect_eq(rt_py(dir, "assert any('footer is missing' in d for d in D['damage']), "
				"D['damage']\n"),
		     0);
	/* Not a trace at all: nothing to draw, one line, exit 1. */
	char bad[512], page[512];
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	snprintf(page, sizeof(page), "%s/bad.html", dir);
	tu_write_file(bad, "this is not a trace file at all", 31);
	struct gt_run r = gt_dump(dir, GT_ARGS("report", "-o", page, bad));
	cr_expect_eq(r.status, 1);
	cr_expect_not_null(strstr(r.err, bad), "%s", r.err);
	cr_expect_neq(access(page, F_OK), 0, "no page for a file that is not a trace");
	gt_free(&r);
	tu_rm_rf(dir);
}

Test(report, usage_and_output_errors, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[512];
	struct gt_shape sh = gt_base();
	gt_write(dir, "a.trc", &sh, a, sizeof(a));
	struct gt_run r = gt_dump(dir, GT_ARGS("report"));
	cr_expect_eq(r.status, 2);
	cr_expect_not_null(strstr(r.err, "no FILE given"), "%s", r.err);
	gt_free(&r);
	r = gt_dump(dir, GT_ARGS("report", "-o"));
	cr_expect_eq(r.status, 2);
	gt_free(&r);
	r = gt_dump(dir, GT_ARGS("report", "-o", "/nonexistent/dir/r.html", a));
	cr_expect_eq(r.status, 1);
	cr_expect_not_null(strstr(r.err, "/nonexistent/dir/r.html"), "%s", r.err);
	gt_free(&r);
	/* Standard output by default: the whole page. */
	r = gt_dump(dir, GT_ARGS("report", a));
	cr_expect_eq(r.status, 0);
	cr_expect_eq(strncmp(r.out, "<!DOCTYPE html>", 15), 0);
	cr_expect_not_null(strstr(r.out, "</html>\n"));
	gt_free(&r);
	tu_rm_rf(dir);
}
