/* test_report_trie.c - the report's flame graphs (src/analysis/report_data.c, built on its own
 * trie, report_trie.h) against flame.c's, fed the same trace record by record: two processes
 * whose functions share addresses (named from modules of their own), three threads, spans
 * and calls nested at random with recursion, ends of frames not innermost and of frames not
 * open, allocations inside and outside every frame, counters, a LOST record, time stepping
 * back. By time: every stack and weight of flame_fold with FLAME_TIME; by bytes: FLAME_ALLOC's.
 * And the same pass on the summary's chunks (report_pass_*) gives report_data_compute's
 * aggregates, when the index's range is the summary's and when it is not (the largest time of
 * a stream before its last record: it makes a pass of its own).
 */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "flame.h"
#include "report_data.h"
#include "summary.h"
#include "test_trcfile_util.h"

struct rt_lines {
	struct report_stack v[4096];
	size_t n;
	uint64_t total;
};

static void rt_emit(void *ctx, const char *stack, size_t len, uint64_t weight)
{
	struct rt_lines *l = ctx;
	cr_assert_lt(l->n, 4096);
	l->v[l->n++] = (struct report_stack){strndup(stack, len), weight};
	l->total += weight;
}

static int rt_by_weight(const void *x, const void *y)
{
	const struct report_stack *a = x, *b = y;
	if (a->weight != b->weight)
		return a->weight < b->weight ? 1 : -1;
	return strcmp(a->stack, b->stack);
}

static uint64_t rt_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One thread's records: a random walk over open frames (at most 12 deep). */
static void rt_thread(struct tu_stream *s, uint64_t seed, unsigned n)
{
	uint64_t ts = 2000, rng = seed;
	struct {
		bool func;
		uint64_t key;
	} open[16];
	unsigned depth = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t x = rt_rng(&rng);
		/* Mostly forward, now and then a step back (a TSC refit). */
		ts = (x & 63) == 0 && ts > 3000 ? ts - (x >> 8 & 511) : ts + 1 + (x >> 8 & 255);
		struct trc_record r = {.ts_ns = ts};
		unsigned what = (unsigned)(x >> 20 & 15);
		if (what < 5 && depth < 12) {
			bool func = what & 1;
			uint64_t key = func ? 0x401000 + 0x100 * (x >> 30 & 3) : 1 + (x >> 30 & 3);
			r.type = func ? TRC_REC_FUNC_ENTER : TRC_REC_SPAN_BEGIN;
			if (func) {
				r.func.addr = key;
				r.func.call_site = key + 8;
			} else {
				r.span.name_id = (uint32_t)key;
			}
			open[depth].func = func;
			open[depth].key = key;
			depth++;
		} else if (what < 10 && depth) {
			/* The innermost frame, or now and then one further out. */
			unsigned k = (x >> 40 & 7) == 0 && depth > 1 ? depth - 2 : depth - 1;
			r.type = open[k].func ? TRC_REC_FUNC_EXIT : TRC_REC_SPAN_END;
			if (open[k].func)
				r.func.addr = open[k].key;
			else
				r.span.name_id = (uint32_t)open[k].key;
			depth = k;
		} else if (what == 10) {
			/* An end of a frame that is not open. */
			r.type = TRC_REC_SPAN_END;
			r.span.name_id = 5;
		} else if (what < 13) {
			r.type = TRC_REC_ALLOC;
			r.alloc.addr = 0x10000 + 16 * i;
			r.alloc.size = 1 + (x >> 44 & 4095);
		} else if (what == 13 && (x >> 50 & 63) == 0) {
			r.type = TRC_REC_LOST;
			r.lost.count = 3;
			r.lost.reason = TRC_LOST_RING_FULL;
		} else {
			r.type = TRC_REC_COUNTER;
			r.value.name_id = 6;
			r.value.value = (int64_t)(x >> 48);
		}
		tu_add(s, &r);
	}
}

static void rt_module(struct tu_stream *m, uint32_t pid, const char *path)
{
	struct trc_record r = {.type = TRC_REC_MODULE, .ts_ns = 1000};
	r.module.pid = pid;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.path = path;
	r.module.path_len = (uint32_t)strlen(path);
	tu_add(m, &r);
}

/* An RSS stream of samples 1 ms apart, rising. */
static void rt_rss(struct tu_stream *s, uint32_t pid, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = 2000 + 1000000ull * i};
		r.rss.pid = pid;
		r.rss.rss_bytes = (2u + i) << 20;
		tu_add(s, &r);
	}
}

static void rt_write_late(const char *path, bool late)
{
	struct tu_plan p = {0};
	struct tu_stream *m = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	static const char *const names[] = {"", "parse", "load", "io", "lock", "gone", "depth"};
	for (uint32_t i = 1; i < 7; i++)
		tu_add_name(m, i, names[i], 1000);
	rt_module(m, 4242, "/nonexistent/prog");
	rt_module(m, 4300, "/nonexistent/other");
	rt_thread(tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242), 0x9e3779b97f4a7c15ull, 6000);
	rt_thread(tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4243), 0x2545f4914f6cdd1dull, 6000);
	rt_rss(tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0), 4242, 40);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4250); /* no record */
	struct tu_stream *last = tu_plan_stream(&p, TRC_STREAM_THREAD, 4300, 4300);
	rt_thread(last, 0x853c49e6748fea9bull, 6000);
	if (late) {
		/* The trace's largest time, then one back before it: the index's last time is
		 * not the summary's. */
		struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = 90000000};
		r.value.name_id = 6;
		tu_add(last, &r);
		r.ts_ns = 80000000;
		tu_add(last, &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 2), 0);
	tu_plan_free(&p);
}

static void rt_write(const char *path)
{
	rt_write_late(path, false);
}

/* flame.c's fold of the trace with weight w, every record fed in each stream's order. */
static void rt_reference(struct trcfile_reader *r, enum flame_weight w, struct rt_lines *out)
{
	struct flame *f = flame_new(w);
	cr_assert_not_null(f);
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (si->kind != TRC_STREAM_THREAD)
			continue;
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		struct trc_record rec;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) > 0)
			cr_assert_eq(flame_add(f, s, si, &rec), 0);
		cr_assert_eq(rc, 0);
		trcfile_cursor_free(c);
	}
	cr_assert_eq(flame_fold(f, r, NULL, rt_emit, out), 0);
	flame_free(f);
	qsort(out->v, out->n, sizeof(out->v[0]), rt_by_weight);
}

static void rt_expect_same(const struct report_flame *got, const struct rt_lines *want,
			   const char *what)
{
	cr_assert_gt(want->n, 10, "%s: the trace makes too few stacks to tell", what);
	cr_expect_eq(got->total, want->total, "%s: total %" PRIu64 ", flame.c's %" PRIu64, what,
		     got->total, want->total);
	cr_expect_eq(got->other_weight, 0, "%s", what);
	cr_assert_eq(got->n, want->n, "%s: %zu stacks, flame.c's %zu", what, got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		cr_expect_str_eq(got->v[i].stack, want->v[i].stack, "%s: stack %zu", what, i);
		cr_expect_eq(got->v[i].weight, want->v[i].weight,
			     "%s: %s weighs %" PRIu64 ", flame.c's %" PRIu64, what,
			     want->v[i].stack, got->v[i].weight, want->v[i].weight);
	}
}

static void rt_lines_free(struct rt_lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].stack);
}

Test(report_trie, flames_are_flame_c_s, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	rt_write(path);
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	struct report_data d;
	cr_assert_eq(report_data_compute(r, NULL, 1000, 2000000, &d), 0);
	static struct rt_lines time_lines, byte_lines;
	rt_reference(r, FLAME_TIME, &time_lines);
	rt_reference(r, FLAME_ALLOC, &byte_lines);
	rt_expect_same(&d.by_time, &time_lines, "by time");
	rt_expect_same(&d.by_bytes, &byte_lines, "by bytes");
	/* The two processes' functions at one address are two frames. */
	bool prog = false, other = false;
	for (size_t i = 0; i < d.by_time.n; i++) {
		prog |= strstr(d.by_time.v[i].stack, "prog+0x1") != NULL;
		other |= strstr(d.by_time.v[i].stack, "other+0x1") != NULL;
	}
	cr_expect(prog && other);
	rt_lines_free(&time_lines);
	rt_lines_free(&byte_lines);
	report_data_free(&d);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

static void rt_expect_flame_eq(const struct report_flame *a, const struct report_flame *b)
{
	cr_expect_eq(a->total, b->total);
	cr_expect_eq(a->other_weight, b->other_weight);
	cr_expect_eq(a->other_stacks, b->other_stacks);
	cr_assert_eq(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		cr_expect_str_eq(a->v[i].stack, b->v[i].stack);
		cr_expect_eq(a->v[i].weight, b->v[i].weight);
	}
}

static void rt_expect_durations_eq(const struct report_durations *a, size_t na,
				   const struct report_durations *b, size_t nb)
{
	cr_assert_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		cr_expect_str_eq(a[i].name, b[i].name);
		cr_expect_eq(a[i].n, b[i].n);
		cr_expect_arr_eq(a[i].bins, b[i].bins, sizeof(a[i].bins));
	}
}

/* Everything of a and b. */
static void rt_expect_data_eq(const struct report_data *a, const struct report_data *b)
{
	cr_expect_eq(a->t0_ns, b->t0_ns);
	cr_expect_eq(a->t1_ns, b->t1_ns);
	cr_assert_eq(a->n_rss, b->n_rss);
	for (size_t i = 0; i < a->n_rss; i++) {
		cr_expect_eq(a->rss[i].pid, b->rss[i].pid);
		cr_expect_eq(a->rss[i].samples, b->rss[i].samples);
		cr_expect_eq(a->rss[i].max_bytes, b->rss[i].max_bytes);
		cr_expect_arr_eq(a->rss[i].cols, b->rss[i].cols, sizeof(a->rss[i].cols));
	}
	cr_assert_eq(a->n_threads, b->n_threads);
	for (size_t i = 0; i < a->n_threads; i++) {
		cr_expect_eq(a->threads[i].pid, b->threads[i].pid);
		cr_expect_eq(a->threads[i].tid, b->threads[i].tid);
		cr_expect_eq(a->threads[i].events, b->threads[i].events);
		cr_expect_arr_eq(a->threads[i].cols, b->threads[i].cols,
				 sizeof(a->threads[i].cols));
	}
	rt_expect_durations_eq(a->spans, a->n_spans, b->spans, b->n_spans);
	rt_expect_durations_eq(a->funcs, a->n_funcs, b->funcs, b->n_funcs);
	cr_expect_eq(a->durations_dropped, b->durations_dropped);
	rt_expect_flame_eq(&a->by_time, &b->by_time);
	rt_expect_flame_eq(&a->by_bytes, &b->by_bytes);
}

/* The report's pass on the summary's chunks against its own pass, over the summary's range. */
static void rt_pass_on_summary(bool late)
{
	const char *dir = tu_tmpdir();
	char path[512];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	rt_write_late(path, late);
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	struct report_pass *p = report_pass_new(r);
	cr_assert_not_null(p);
	struct summary s;
	cr_assert_eq(summary_compute_chunks(r, &s, NULL, NULL, report_pass_chunk, p), 0);
	cr_assert_eq(s.last_ts_ns, late ? 90000000u : s.last_ts_ns);
	struct report_data on_summary, own;
	cr_assert_eq(report_pass_finish(p, NULL, s.start_ns, s.last_ts_ns, &on_summary), 0);
	cr_assert_eq(report_data_compute(r, NULL, s.start_ns, s.last_ts_ns, &own), 0);
	cr_assert_eq(own.n_threads, 4); /* the thread with no record included */
	cr_assert_eq(own.n_rss, 1);
	rt_expect_data_eq(&on_summary, &own);
	report_data_free(&on_summary);
	report_data_free(&own);
	summary_free(&s);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

Test(report_trie, pass_on_the_summary_s_chunks_is_its_own, .timeout = 60)
{
	rt_pass_on_summary(false);
}

Test(report_trie, pass_on_the_summary_s_chunks_past_the_index_s_range, .timeout = 60)
{
	rt_pass_on_summary(true);
}
