/* test_summary.c - summary figures that only traces of a real size, or of several threads,
 * exercise, and the figures of loss over time.
 *
 * Purpose: exact expected values for a counter written by two threads (each thread's figures
 * are merged into the name's), for a counter stream long enough that its records go through
 * the summary's fast decoder (only a chunk's last bytes take the checked one), and for the RSS
 * samples' minimum, peak and last. The traces are written with the real writer.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "summary.h"
#include "test_trcfile_util.h"

static struct trcfile_reader *open_trace(const char *path)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	int err = trcfile_reader_open(path, &r, msg, sizeof(msg));
	cr_assert_eq(err, 0, "reader_open: %d %s", err, msg);
	return r;
}

static const struct summary_name *find_name(const struct summary *s, const char *name)
{
	for (size_t i = 0; i < s->n_names; i++)
		if (!strcmp(s->names[i].name, name))
			return &s->names[i];
	cr_assert_fail("no name \"%s\" in the summary", name);
	return NULL;
}

static void add_counter(struct tu_stream *s, uint32_t id, int64_t v, uint64_t ts)
{
	struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = ts};
	r.value.name_id = id;
	r.value.value = v;
	tu_add(s, &r);
}

/* A meta stream and two threads' streams (tids 4242 and 4243) of process 4242. */
static void plan_two_threads(struct tu_plan *p, struct tu_stream **meta, struct tu_stream **a,
			     struct tu_stream **b)
{
	tu_plan_stream(p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 4243);
	*meta = &p->streams[0];
	*a = &p->streams[1];
	*b = &p->streams[2];
}

/* "depth" under two name ids (as two processes, or a name interned twice, have): thread 1
 * writes 5000 values from -1000 to 3999 under id 1 (its minimum is the name's), thread 2 five
 * values from -5 to 4500 under id 2 (its maximum is the name's, its last value the latest in
 * time). The summary merges the ids of one string: a value cut to 32 bits on the fast path, or
 * the larger of two minima kept, each changes an exact figure below. */
Test(summary, counter_of_two_threads_exact, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t t0 = 1000000000ull;
	struct tu_plan p = {0};
	struct tu_stream *meta, *a, *b;
	plan_two_threads(&p, &meta, &a, &b);
	tu_add_name(meta, 1, "depth", t0);
	tu_add_name(meta, 2, "depth", t0);
	for (int i = 0; i < 5000; i++)
		add_counter(a, 1, (i * 7919) % 5000 - 1000, t0 + 1000 + 10 * (uint64_t)i);
	static const int64_t bv[] = {-5, 4500, 17, 0, 42};
	for (int i = 0; i < 5; i++)
		add_counter(b, 2, bv[i], t0 + 2000 + 20000 * (uint64_t)i);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 64), 0);
	struct trcfile_reader *rd = open_trace(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	const struct summary_name *n = find_name(&s, "depth");
	cr_assert_eq(s.n_names, 1, "one entry per distinct string");
	cr_assert_eq(n->counters, 5005);
	cr_assert_eq(n->counter_min, -1000, "min %lld", (long long)n->counter_min);
	cr_assert_eq(n->counter_max, 4500, "max %lld", (long long)n->counter_max);
	/* The latest in time: thread 2's 42 at t0 + 82000 (thread 1 ends at t0 + 50990). */
	cr_assert_eq(n->counter_last, 42, "last %lld", (long long)n->counter_last);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* The same counter on one thread only, long enough for the fast path: negative values must
 * keep their 64 bits there. */
Test(summary, counter_negative_on_the_fast_path, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t t0 = 1000000000ull;
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	tu_add_name(&p.streams[0], 1, "balance", t0);
	for (int i = 0; i < 3000; i++) /* -3e9 .. about +3e9: past 32 bits both ways */
		add_counter(&p.streams[1], 1, ((int64_t)(i % 1000) - 500) * 6000000ll,
			    t0 + 100 + (uint64_t)i);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 3000), 0);
	struct trcfile_reader *rd = open_trace(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	const struct summary_name *n = find_name(&s, "balance");
	cr_assert_eq(n->counters, 3000);
	cr_assert_eq(n->counter_min, -3000000000ll, "min %lld", (long long)n->counter_min);
	cr_assert_eq(n->counter_max, 2994000000ll, "max %lld", (long long)n->counter_max);
	cr_assert_eq(n->counter_last, 2994000000ll, "last %lld", (long long)n->counter_last);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A trace at path of the program's RSS samples 5, 3, 8, 4 MiB (no buffers) at 100, 200, 300
 * and 400 ms after the start of recording, and nothing else; opened. */
static struct trcfile_reader *rss_samples_5_3_8_4(struct tu_plan *p, const char *path)
{
	const uint64_t t0 = 1000000000ull;
	struct tu_stream *rss = tu_plan_stream(p, TRC_STREAM_RSS, 4242, 0);
	static const uint64_t mib[] = {5, 3, 8, 4};
	for (int i = 0; i < 4; i++) {
		struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = t0 + 100000000ull * (i + 1)};
		r.rss.pid = 4242;
		r.rss.rss_bytes = mib[i] << 20;
		tu_add(rss, &r);
	}
	cr_assert_eq(tu_write_plan(path, p, NULL, 4), 0);
	return open_trace(path);
}

/* RSS samples 5, 3, 8, 4 MiB (no buffers): sampled minimum 3, peak 8, last 4; and the peak
 * without an EXIT record is the sampled one. */
Test(summary, rss_sampled_min_peak_last, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct trcfile_reader *rd = rss_samples_5_3_8_4(&p, path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.rss_samples, 4);
	cr_assert_eq(s.rss_sampled_min_bytes, 3u << 20, "min %llu",
		     (unsigned long long)s.rss_sampled_min_bytes);
	cr_assert_eq(s.rss_peak_sampled_bytes, 8u << 20);
	cr_assert_eq(s.rss_sampled_last_bytes, 4u << 20);
	cr_assert_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_SAMPLED);
	cr_assert_eq(s.rss_peak_bytes, 8u << 20);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

static void add_lost(struct tu_stream *s, uint64_t count, uint64_t ts)
{
	struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = ts};
	r.lost.count = count;
	r.lost.reason = TRC_LOST_RING_FULL;
	tu_add(s, &r);
}

/* When events were lost (issue 11 item 3): thread 1 loses 3 events early and 5 late, thread 2
 * loses 2 in the middle, over a run of 10 us. The first and last losses are the earliest and
 * latest of the three, whatever stream they are on, and the spark holds 3, 2, 5 in that order
 * in three columns. */
Test(summary, loss_over_time_first_last_and_spark, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t t0 = 1000000000ull;
	struct tu_plan p = {0};
	struct tu_stream *meta, *a, *b;
	plan_two_threads(&p, &meta, &a, &b);
	tu_add_name(meta, 1, "x", t0);
	add_counter(a, 1, 0, t0);
	add_lost(a, 3, t0 + 100);
	add_lost(b, 2, t0 + 4000);
	add_lost(a, 5, t0 + 9000);
	add_counter(b, 1, 1, t0 + 10000);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 4), 0);
	struct trcfile_reader *rd = open_trace(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.events_lost, 10);
	cr_assert_eq(s.lost_first_ts_ns, t0 + 100, "first %llu",
		     (unsigned long long)(s.lost_first_ts_ns - t0));
	cr_assert_eq(s.lost_last_ts_ns, t0 + 9000, "last %llu",
		     (unsigned long long)(s.lost_last_ts_ns - t0));
	uint64_t seen[SUMMARY_SPARK_COLUMNS], n = 0, total = 0;
	for (unsigned i = 0; i < SUMMARY_SPARK_COLUMNS; i++) {
		total += s.lost_spark[i];
		if (s.lost_spark[i])
			seen[n++] = s.lost_spark[i];
	}
	cr_assert_eq(total, 10);
	cr_assert_eq(n, 3, "%llu columns with losses", (unsigned long long)n);
	cr_assert(seen[0] == 3 && seen[1] == 2 && seen[2] == 5, "spark %llu %llu %llu",
		  (unsigned long long)seen[0], (unsigned long long)seen[1],
		  (unsigned long long)seen[2]);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* Samples from a quarter of the way in: the sparkline knows nothing before the first one, so
 * those columns are none (blank in the text, null in --json), never 0 B; four samples are too
 * few to show a shape, and the text says so. */
Test(summary, sparkline_is_blank_before_the_first_sample, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct trcfile_reader *rd = rss_samples_5_3_8_4(&p, path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.n_spark, SUMMARY_SPARK_COLUMNS);
	/* [t0, t0 + 400 ms] in 60 columns: the first sample (t0 + 100 ms) falls in column 14. */
	for (unsigned c = 0; c < 14; c++)
		cr_expect_eq(s.spark_bytes[c], SUMMARY_SPARK_NONE, "column %u: %llu", c,
			     (unsigned long long)s.spark_bytes[c]);
	cr_expect_eq(s.spark_bytes[14], 5u << 20);
	cr_expect_eq(s.spark_bytes[SUMMARY_SPARK_COLUMNS - 1], 4u << 20);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary '%s' > '%s/out.txt' 2>&1", tu_build(), path,
			   dir),
		     0);
	char *out = tu_slurp_text(dir, "out.txt");
	cr_expect_not_null(strstr(out, "  over time:               \u2583"), "%s", out);
	cr_expect_not_null(strstr(out, "(3.0 MiB .. 8.0 MiB)"), "%s", out);
	cr_expect_not_null(strstr(out, "(4 samples: too few to show a shape; a shorter "
				       "--rss-interval samples more often)"),
			   "%s", out);
	free(out);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary --json '%s' > '%s/out.json' 2>&1", tu_build(),
			   path, dir),
		     0);
	out = tu_slurp_text(dir, "out.json");
	cr_expect_not_null(strstr(out, "\"rss_spark_bytes\":[null,null,null,null,null,null,null,"
				       "null,null,null,null,null,null,null,5242880,"),
			   "%s", out);
	free(out);
	tu_rm_rf(dir);
}
