/* test_trcfile.c - the trace file round trip: writer, reader, cursors, merge, seek, summary.
 *
 * Every test writes with the real writer (its compression pipeline included) and reads back
 * with the real reader, then compares with the plan it wrote, record by record and field by
 * field. Hostile input lives in test_trcfile_hostile.c.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>

#include "rss_source.h"
#include "summary.h"
#include "test_trcfile_util.h"

static const struct trcfile_writer_opts tu_small_chunks = {
	.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
	.compress_threads = 2,
	.max_chunks_in_flight = 3,
	.flags = TRCFILE_WRITER_NO_FSYNC,
};

static struct trcfile_reader *tu_open(const char *path)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	int err = trcfile_reader_open(path, &r, msg, sizeof(msg));
	cr_assert_eq(err, 0, "reader_open: %d %s", err, msg);
	return r;
}

/* Checks that the merged iteration returns exactly the expected order. */
static void tu_check_merged(struct trcfile_reader *r, const struct tu_plan *p)
{
	size_t n = 0;
	struct tu_ref *want = tu_expected_order(p, &n);
	struct trcfile_iter *it = trcfile_iter_new(r);
	cr_assert_not_null(it);
	struct trc_record rec;
	unsigned s;
	size_t k = 0;
	int rc;
	while ((rc = trcfile_iter_next(it, &rec, &s)) == 1) {
		/* plain ifs: a passing cr_assert per record costs more than the read */
		if (k >= n)
			cr_assert_fail("more records than written");
		const struct trc_record *w = &p->streams[want[k].stream].recs[want[k].pos];
		if (s != want[k].stream)
			cr_assert_fail("record %zu: stream %u, want %u", k, s, want[k].stream);
		if (!tu_rec_eq(&rec, w))
			cr_assert_fail("record %zu (type %u ts %lu) differs", k, rec.type,
				       (unsigned long)rec.ts_ns);
		k++;
	}
	cr_assert_eq(rc, 0, "iteration error: %s", trcfile_reader_errmsg(r));
	cr_assert_eq(k, n, "read %zu records, wrote %zu", k, n);
	trcfile_iter_free(it);

	/* trcfile_iter_next_refs: the same order in runs of up to max, every record of a run
	 * (strings too) still intact when the run is read after the call. */
	static const unsigned maxes[] = {1, 2, 7, 64, 1000};
	const struct trc_record *run[1000];
	unsigned sid[1000];
	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		it = trcfile_iter_new(r);
		cr_assert_not_null(it);
		size_t longest = 0;
		k = 0;
		while ((rc = trcfile_iter_next_refs(it, run, sid, maxes[m])) > 0) {
			if ((unsigned)rc > maxes[m])
				cr_assert_fail("max %u: a run of %d", maxes[m], rc);
			longest = (size_t)rc > longest ? (size_t)rc : longest;
			for (int i = 0; i < rc; i++, k++) {
				if (k >= n)
					cr_assert_fail("max %u: more records than written",
						       maxes[m]);
				const struct trc_record *w =
					&p->streams[want[k].stream].recs[want[k].pos];
				if (sid[i] != want[k].stream || !tu_rec_eq(run[i], w))
					cr_assert_fail("max %u: record %zu (run item %d) differs",
						       maxes[m], k, i);
			}
		}
		cr_assert_eq(rc, 0, "max %u: iteration error: %s", maxes[m],
			     trcfile_reader_errmsg(r));
		cr_assert_eq(k, n, "max %u: read %zu records, wrote %zu", maxes[m], k, n);
		if (maxes[m] > 1 && n > 100)
			cr_assert_gt(longest, 1, "max %u: no run longer than one record", maxes[m]);
		trcfile_iter_free(it);
	}
	free(want);
}

/* Checks each stream alone with both cursor calls. */
static void tu_check_streams(struct trcfile_reader *r, const struct tu_plan *p)
{
	cr_assert_eq(trcfile_reader_stream_count(r), p->n);
	for (size_t i = 0; i < p->n; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, (unsigned)i);
		const struct tu_stream *ps = &p->streams[i];
		cr_assert_eq(si->id, i);
		cr_assert_eq(si->kind, ps->kind);
		cr_assert_eq(si->pid, ps->pid);
		cr_assert_eq(si->tid, ps->tid);
		cr_assert_eq(si->records, ps->n);
		struct trcfile_cursor *c = trcfile_cursor_new(r, (unsigned)i);
		struct trc_record rec;
		size_t k = 0;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) == 1) {
			if (k >= ps->n || !tu_rec_eq(&rec, &ps->recs[k]))
				cr_assert_fail("stream %zu record %zu differs", i, k);
			k++;
		}
		cr_assert_eq(rc, 0, "%s", trcfile_reader_errmsg(r));
		cr_assert_eq(k, ps->n);
		trcfile_cursor_free(c);

		c = trcfile_cursor_new(r, (unsigned)i);
		struct trc_record batch[37];
		k = 0;
		while ((rc = trcfile_cursor_read(c, batch, 37)) > 0)
			for (int j = 0; j < rc; j++, k++)
				if (k >= ps->n || !tu_rec_eq(&batch[j], &ps->recs[k]))
					cr_assert_fail("batch: stream %zu record %zu", i, k);
		cr_assert_eq(rc, 0);
		cr_assert_eq(k, ps->n);
		trcfile_cursor_free(c);
	}
}

Test(trcfile, every_record_type_round_trips, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	/* Extremes the encoding must carry exactly. */
	struct tu_stream *x = tu_plan_stream(&p, TRC_STREAM_THREAD, UINT32_MAX, UINT32_MAX - 1);
	struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = 2000000000ull};
	r.value.name_id = UINT32_MAX;
	r.value.value = INT64_MIN;
	tu_add(x, &r);
	r.value.value = INT64_MAX;
	tu_add(x, &r);
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = 2000000001ull};
	r.alloc.addr = UINT64_MAX;
	r.alloc.size = UINT64_MAX;
	tu_add(x, &r);
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = 2000000001ull};
	r.alloc.addr = 0;
	tu_add(x, &r);
	r = (struct trc_record){.type = TRC_REC_FUNC_ENTER, .ts_ns = 2000000002ull};
	r.func.addr = 0;
	r.func.call_site = UINT64_MAX;
	tu_add(x, &r);
	r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = UINT64_MAX};
	r.exit.status = INT32_MIN;
	tu_add(x, &r);
	r = (struct trc_record){.type = TRC_REC_NOTE, .ts_ns = UINT64_MAX};
	r.note.text = "";
	r.note.len = 0;
	tu_add(x, &r);

	cr_assert_eq(tu_write_plan(path, &p, &tu_small_chunks, 3), 0);
	struct trcfile_reader *rd = tu_open(path);
	cr_assert_not(trcfile_reader_truncated(rd));
	const struct trcfile_header *h = trcfile_reader_header(rd);
	struct trcfile_header_info hi = tu_header();
	cr_assert_eq(h->version_major, TRCFILE_VERSION_MAJOR);
	cr_assert_eq(h->pid, hi.pid);
	cr_assert_eq(h->start_mono_ns, hi.start_mono_ns);
	cr_assert_eq(h->start_realtime_ns, hi.start_realtime_ns);
	cr_assert_eq(h->rss_interval_ns, hi.rss_interval_ns);
	cr_assert_eq(h->rss_source, hi.rss_source);
	cr_assert_eq(h->buffer_bytes, hi.buffer_bytes);
	cr_assert_eq(h->chunk_bytes, TRCFILE_MIN_CHUNK_BYTES);
	cr_assert_eq(h->cmdline_len, hi.cmdline_len);
	cr_assert_eq(memcmp(h->cmdline, hi.cmdline, hi.cmdline_len), 0);
	cr_assert_str_eq(h->host, hi.host);
	cr_assert_str_eq(h->tool_version, hi.tool_version);

	tu_check_streams(rd, &p);
	tu_check_merged(rd, &p);

	uint32_t len = 0;
	cr_assert_str_eq(trcfile_reader_name(rd, 3, &len), "compute");
	cr_assert_eq(len, 7);
	cr_assert_null(trcfile_reader_name(rd, 99, NULL));
	cr_assert_str_eq(trcfile_reader_thread_name(rd, 4242, 4243, NULL), "worker \"1\"");
	cr_assert_null(trcfile_reader_thread_name(rd, 4242, 1, NULL));
	cr_assert_not_null(trcfile_reader_process_cmdline(rd, 4242, &len));
	cr_assert_eq(len, sizeof(tu_proc_cmd));
	const struct trcfile_module *m = trcfile_reader_module(rd, 4242, 0x401136);
	cr_assert_not_null(m);
	cr_assert_str_eq(m->path, "/usr/bin/prog");
	cr_assert_null(trcfile_reader_module(rd, 4242, 0x500000));
	cr_assert_null(trcfile_reader_module(rd, 1, 0x401136));
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* Many streams written from several threads at once, small chunks, two compressors: chunks
 * of a stream reach the file out of order relative to other streams. */
struct tu_thread_arg {
	struct trcfile_stream **streams;
	const struct tu_plan *plan;
	size_t first, n;
};

static void *tu_append_thread(void *arg)
{
	struct tu_thread_arg *a = arg;
	for (size_t round = 0;; round++) {
		bool more = false;
		for (size_t i = a->first; i < a->first + a->n; i++) {
			const struct tu_stream *s = &a->plan->streams[i];
			for (size_t k = round * 50; k < (round + 1) * 50 && k < s->n; k++)
				if (trcfile_stream_append(a->streams[i], &s->recs[k]) != 0)
					return (void *)1;
			more |= (round + 1) * 50 < s->n;
		}
		if (!more)
			return NULL;
	}
}

Test(trcfile, many_streams_from_many_threads_merge_in_time_order, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	enum { STREAMS = 48, THREADS = 4 };
	uint64_t seed = 12345;
	for (int i = 0; i < STREAMS; i++) {
		struct tu_stream *s = tu_plan_stream(&p, TRC_STREAM_THREAD, 100, 200 + i);
		uint64_t t = 1000 + (uint64_t)i % 5; /* equal start times: ties across streams */
		size_t n = 500 + (size_t)(i * 37) % 1500;
		for (size_t k = 0; k < n; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			struct trc_record r = {.ts_ns = t};
			switch ((seed >> 33) % 4) {
			case 0:
				r.type = TRC_REC_SPAN_BEGIN;
				r.span.name_id = (uint32_t)(seed >> 40) % 9;
				break;
			case 1:
				r.type = TRC_REC_COUNTER;
				r.value.name_id = 3;
				r.value.value = (int64_t)(seed >> 20) - (1ll << 43);
				break;
			case 2:
				r.type = TRC_REC_ALLOC;
				r.alloc.addr = 0x7f0000000000ull + ((seed >> 16) & 0xffff0);
				r.alloc.size = (seed >> 50) + 1;
				break;
			default:
				r.type = TRC_REC_FUNC_EXIT;
				r.func.addr = 0x400000 + ((seed >> 30) & 0xfff);
				r.func.call_site = r.func.addr + 17;
			}
			tu_add(s, &r);
			t += (seed >> 59) ? (seed >> 50) % 700 : 0; /* some zero deltas */
		}
	}
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &tu_small_chunks, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *streams[STREAMS];
	for (int i = 0; i < STREAMS; i++)
		streams[i] = trcfile_stream_open(w, TRC_STREAM_THREAD, 100, 200 + i);
	pthread_t th[THREADS];
	struct tu_thread_arg args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct tu_thread_arg){streams, &p, (size_t)i * (STREAMS / THREADS),
						 STREAMS / THREADS};
		cr_assert_eq(pthread_create(&th[i], NULL, tu_append_thread, &args[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		cr_assert_null(ret, "append failed");
	}
	cr_assert_gt(trcfile_writer_bytes_written(w), 0);
	cr_assert_eq(trcfile_writer_close(w), 0);

	struct trcfile_reader *rd = tu_open(path);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(rd, &st);
	cr_assert_gt(st.chunks, STREAMS, "small chunks expected, got %lu",
		     (unsigned long)st.chunks);
	cr_assert_eq(st.records, tu_plan_records(&p));
	tu_check_streams(rd, &p);
	tu_check_merged(rd, &p);

	/* Seek: the suffix of the merged order from t, for several t. */
	size_t n = 0;
	struct tu_ref *want = tu_expected_order(&p, &n);
	struct trcfile_iter *it = trcfile_iter_new(rd);
	uint64_t seeks[] = {0,
			    1000,
			    1003,
			    want[n / 3].ts,
			    want[n / 2].ts + 1,
			    want[n - 1].ts,
			    want[n - 1].ts + 1};
	for (size_t q = 0; q < sizeof(seeks) / sizeof(seeks[0]); q++) {
		cr_assert_eq(trcfile_iter_seek(it, seeks[q]), 0);
		size_t k = 0;
		while (k < n && want[k].ts < seeks[q])
			k++;
		struct trc_record rec;
		unsigned s;
		int rc;
		while ((rc = trcfile_iter_next(it, &rec, &s)) == 1) {
			if (k >= n || s != want[k].stream ||
			    !tu_rec_eq(&rec, &p.streams[s].recs[want[k].pos]))
				cr_assert_fail("seek %zu: record %zu differs", q, k);
			k++;
		}
		cr_assert_eq(rc, 0);
		cr_assert_eq(k, n, "seek %lu: ended at %zu of %zu", (unsigned long)seeks[q], k, n);
	}
	trcfile_iter_free(it);
	free(want);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile, footer_and_scan_give_the_same_index, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300], cut[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	snprintf(cut, sizeof(cut), "%s/cut.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	cr_assert_eq(tu_write_plan(path, &p, &tu_small_chunks, 1), 0);
	size_t len;
	uint8_t *buf = tu_read_file(path, &len);
	/* Drop the trailer's magic: the reader must scan and find every chunk. */
	buf[len - 1] ^= 0xff;
	tu_write_file(cut, buf, len);
	struct trcfile_reader *rd = tu_open(cut);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(rd, &st);
	cr_assert(st.truncated);
	cr_assert_not(st.footer_damaged);
	cr_assert_eq(st.records, tu_plan_records(&p));
	tu_check_streams(rd, &p);
	tu_check_merged(rd, &p);
	trcfile_reader_close(rd);
	free(buf);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile, empty_trace_and_empty_streams, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, NULL, &err);
	cr_assert_not_null(w);
	cr_assert_not_null(trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 2));
	cr_assert_null(trcfile_stream_open(w, (enum trc_stream_kind)9, 1, 2));
	cr_assert_eq(trcfile_writer_close(w), 0);
	struct trcfile_reader *rd = tu_open(path);
	cr_assert_not(trcfile_reader_truncated(rd));
	cr_assert_eq(trcfile_reader_stream_count(rd), 1);
	cr_assert_eq(trcfile_reader_stream(rd, 0)->records, 0);
	cr_assert_null(trcfile_reader_stream(rd, 1));
	struct trcfile_iter *it = trcfile_iter_new(rd);
	struct trc_record rec;
	cr_assert_eq(trcfile_iter_next(it, &rec, NULL), 0);
	cr_assert_eq(trcfile_iter_seek(it, 5), 0);
	cr_assert_eq(trcfile_iter_next(it, &rec, NULL), 0);
	trcfile_iter_free(it);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0);
	cr_assert_eq(s.records, 0);
	cr_assert_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_NONE);
	summary_free(&s);
	trcfile_reader_close(rd);
	trcfile_writer_close(NULL);
	trcfile_reader_close(NULL);
	tu_rm_rf(dir);
}

Test(trcfile, bad_records_are_refused_and_do_not_poison_the_stream, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, NULL, &err);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_META, 1, 0);
	struct trc_record r = {.type = 0, .ts_ns = 5};
	cr_assert_eq(trcfile_stream_append(s, &r), -EINVAL);
	r.type = TRC_REC_TYPE_COUNT;
	cr_assert_eq(trcfile_stream_append(s, &r), -EINVAL);
	r.type = TRC_REC_NOTE;
	r.note.text = NULL;
	r.note.len = 3;
	cr_assert_eq(trcfile_stream_append(s, &r), -EINVAL);
	char *big = malloc(TRCFILE_MAX_STRING_BYTES + 1);
	memset(big, 'x', TRCFILE_MAX_STRING_BYTES + 1);
	r.note.text = big;
	r.note.len = TRCFILE_MAX_STRING_BYTES + 1;
	cr_assert_eq(trcfile_stream_append(s, &r), -EINVAL);
	/* The largest string allowed gets a chunk of its own, bigger than the chunk size. */
	r.note.len = TRCFILE_MAX_STRING_BYTES;
	cr_assert_eq(trcfile_stream_append(s, &r), 0);
	r.note.text = "after";
	r.note.len = 5;
	r.ts_ns = 6;
	cr_assert_eq(trcfile_stream_append(s, &r), 0);
	cr_assert_eq(trcfile_writer_error(w), 0);
	cr_assert_eq(trcfile_writer_close(w), 0);

	struct trcfile_reader *rd = tu_open(path);
	struct trcfile_cursor *c = trcfile_cursor_new(rd, 0);
	struct trc_record rec;
	cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
	cr_assert_eq(rec.note.len, TRCFILE_MAX_STRING_BYTES);
	cr_assert_eq(memcmp(rec.note.text, big, TRCFILE_MAX_STRING_BYTES), 0);
	cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
	cr_assert(tu_str_eq(rec.note.text, rec.note.len, "after", 5));
	cr_assert_eq(trcfile_cursor_next(c, &rec), 0);
	trcfile_cursor_free(c);
	trcfile_reader_close(rd);
	free(big);

	/* Bad header info. */
	h.cmdline = NULL;
	cr_assert_null(trcfile_writer_open(path, &h, NULL, &err));
	cr_assert_eq(err, -EINVAL);
	cr_assert_null(trcfile_writer_open("/nonexistent-dir/x.trc", &h, NULL, &err));
	h = tu_header();
	cr_assert_null(trcfile_writer_open("/nonexistent-dir/x.trc", &h, NULL, &err));
	cr_assert_eq(err, -ENOENT);
	tu_rm_rf(dir);
}

/* A write error (file size limit reached) becomes the sticky error; the chunks written
 * before stay readable and the file reads as truncated. */
Test(trcfile, write_error_is_sticky_and_keeps_written_chunks, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit rl = {.rlim_cur = 64 << 10, .rlim_max = RLIM_INFINITY};
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &tu_small_chunks, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 2);
	uint64_t seed = 99, appended = 0;
	err = 0;
	/* Random values: incompressible enough to pass 64 KiB quickly. */
	for (int i = 0; i < 2000000 && !err; i++) {
		seed = seed * 6364136223846793005ull + 1;
		struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = (uint64_t)i * 10};
		r.value.name_id = 1;
		r.value.value = (int64_t)seed;
		err = trcfile_stream_append(s, &r);
		if (!err)
			appended++;
	}
	cr_assert_eq(err, -EFBIG, "got %d", err);
	cr_assert_eq(trcfile_writer_error(w), -EFBIG);
	cr_assert_eq(trcfile_writer_close(w), -EFBIG);
	rl.rlim_cur = RLIM_INFINITY;
	setrlimit(RLIMIT_FSIZE, &rl);

	struct trcfile_reader *rd = tu_open(path);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(rd, &st);
	cr_assert(st.truncated);
	cr_assert_gt(st.records, 0);
	cr_assert_leq(st.records, appended);
	cr_assert_leq(st.file_bytes, 64 << 10);
	/* Every recovered record is the one written at its place (two compressors: a chunk
	 * may be missing before the last one, and the reader says how many). */
	uint64_t *vals = malloc(appended * sizeof(*vals));
	seed = 99;
	for (uint64_t i = 0; i < appended; i++) {
		seed = seed * 6364136223846793005ull + 1;
		vals[i] = seed;
	}
	struct trcfile_cursor *c = trcfile_cursor_new(rd, 0);
	struct trc_record rec;
	uint64_t k = 0, prev = 0;
	int rc;
	while ((rc = trcfile_cursor_next(c, &rec)) == 1) {
		uint64_t i = rec.ts_ns / 10;
		cr_assert_eq(rec.ts_ns % 10, 0);
		cr_assert_lt(i, appended);
		cr_assert(k == 0 || i > prev);
		cr_assert_eq(rec.value.value, (int64_t)vals[i]);
		prev = i;
		k++;
	}
	free(vals);
	cr_assert_eq(rc, 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(k, st.records);
	if (k == prev + 1)
		cr_assert_eq(st.chunks_missing, 0);
	else
		cr_assert_gt(st.chunks_missing, 0);
	trcfile_cursor_free(c);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

/* One chunk in flight, one compressor: every append that fills a chunk waits for the
 * writer; nothing deadlocks and nothing is lost. */
Test(trcfile, back_pressure_with_one_chunk_in_flight, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	for (int i = 0; i < 3; i++) {
		struct tu_stream *s = tu_plan_stream(&p, TRC_STREAM_THREAD, 1, 10 + i);
		for (int k = 0; k < 20000; k++) {
			struct trc_record r = {.type = TRC_REC_INSTANT,
					       .ts_ns = (uint64_t)k * 3 + i};
			r.value.name_id = (uint32_t)k % 100;
			r.value.value = k;
			tu_add(s, &r);
		}
	}
	struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.compress_threads = 1,
					.max_chunks_in_flight = 1,
					.zstd_level = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 1000), 0);
	struct trcfile_reader *rd = tu_open(path);
	tu_check_merged(rd, &p);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* Resident bytes of this process (statm, through the sampler's reader), for the prefault
 * test. */
static uint64_t tu_resident_bytes(void)
{
	int err = 0;
	struct rss_reader *r = rss_reader_open(getpid(), TRC_RSS_STATM, &err);
	cr_assert_not_null(r, "rss_reader_open: %d", err);
	struct trc_rss_figures fig = {0};
	cr_assert_eq(rss_reader_read(r, &fig), 0);
	rss_reader_close(r);
	return fig.rss_bytes;
}

/* Opens a writer with 4 MiB chunks, two in flight, and returns how much this process's RSS grew
 * within wait_ms while nothing was appended. */
static uint64_t tu_rss_growth_after_open(const char *path, uint32_t flags, int wait_ms,
					 uint64_t stop_at, uint64_t *before_out,
					 struct trcfile_writer **out)
{
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.chunk_bytes = 4u << 20,
					.compress_threads = 1,
					.max_chunks_in_flight = 2,
					.zstd_level = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC | flags};
	uint64_t before = tu_resident_bytes(), grew = 0;
	*before_out = before;
	int err = 0;
	*out = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(*out, "open: %d", err);
	for (int ms = 0; ms < wait_ms && grew < stop_at; ms += 10) {
		usleep(10000);
		uint64_t now = tu_resident_bytes();
		grew = now > before ? now - before : 0;
	}
	return grew;
}

/* TRCFILE_WRITER_PREFAULT: the writer thread makes and touches the chunks the pipeline holds at
 * once plus a few open ones (in flight + 3: 5 here, 4 MiB each, ~20 MiB; their compressed
 * copies are made, not touched) before the first append needs one, so the drain's first
 * records do not pay their page faults; without the flag nothing is made until an append asks. A
 * trace written through the warmed chunks reads back whole, and a writer closed while it warms
 * stops and leaks nothing (the sanitizer tier's leak check). */
Test(trcfile, prefault_warms_the_pipelines_chunks_before_the_first_append, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t mib = 1u << 20, warmed = 5 * 4 * mib;
	struct trcfile_writer *w = NULL;
	uint64_t before = 0;
	uint64_t cold = tu_rss_growth_after_open(path, 0, 300, UINT64_MAX, &before, &w);
	cr_expect_lt(cold, 4 * mib, "without the flag: %.1f MiB", (double)cold / mib);
	cr_assert_eq(trcfile_writer_close(w), 0);

	uint64_t warm = tu_rss_growth_after_open(path, TRCFILE_WRITER_PREFAULT, 10000,
						 warmed * 9 / 10, &before, &w);
	cr_expect_geq(warm, warmed * 9 / 10, "with the flag: %.1f MiB, not ~%.0f",
		      (double)warm / mib, (double)warmed / mib);
	/* ... and no more (touched, the compressed copies would double it). */
	usleep(200000);
	uint64_t settled = tu_resident_bytes() - before;
	cr_expect_lt(settled, warmed * 3 / 2, "with the flag, settled: %.1f MiB",
		     (double)settled / mib);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 2);
	for (int i = 0; i < 100000; i++) {
		struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = (uint64_t)i};
		r.value.name_id = 7;
		r.value.value = i;
		cr_assert_eq(trcfile_stream_append(s, &r), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	struct trcfile_reader *rd = tu_open(path);
	cr_expect_eq(trcfile_reader_stream(rd, 0)->records, 100000);
	trcfile_reader_close(rd);

	/* Closed at once: the prefault stops (close joins the writer thread that runs it). */
	int err = 0;
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.chunk_bytes = 4u << 20,
					.max_chunks_in_flight = 64,
					.flags = TRCFILE_WRITER_NO_FSYNC | TRCFILE_WRITER_PREFAULT};
	w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w);
	cr_assert_eq(trcfile_writer_close(w), 0);
	tu_rm_rf(dir);
}

Test(trcfile, flush_ends_a_chunk_and_the_stream_continues, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, NULL, &err);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 2);
	cr_assert_eq(trcfile_stream_flush(s), 0); /* nothing open: a no-op */
	for (int i = 0; i < 10; i++) {
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = (uint64_t)i};
		cr_assert_eq(trcfile_stream_append(s, &r), 0);
		if (i % 3 == 2)
			cr_assert_eq(trcfile_stream_flush(s), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	struct trcfile_reader *rd = tu_open(path);
	cr_assert_eq(trcfile_reader_stream(rd, 0)->chunks, 4);
	cr_assert_eq(trcfile_reader_stream(rd, 0)->records, 10);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

/* Timestamps that go backwards within a stream are kept exactly. */
Test(trcfile, decreasing_times_round_trip, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *s = tu_plan_stream(&p, TRC_STREAM_META, 1, 0);
	uint64_t ts[] = {500, 100, UINT64_MAX, 0, 7, 7, 6};
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = ts[i]};
		r.lost.count = i;
		r.lost.reason = 1;
		tu_add(s, &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 100), 0);
	struct trcfile_reader *rd = tu_open(path);
	tu_check_streams(rd, &p);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* ---- summary ------------------------------------------------------------------------- */

Test(trcfile, summary_of_the_small_trace, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	cr_assert_eq(tu_write_plan(path, &p, &tu_small_chunks, 2), 0);
	struct trcfile_reader *rd = tu_open(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.records, tu_plan_records(&p));
	/* thread a: 1+3*4+1+2+1+1+1 = 19 events; b: 4 events + 1 lost record */
	cr_assert_eq(s.events_recorded, 19 + 4);
	cr_assert_eq(s.events_lost, 7);
	cr_assert_eq(s.rss_ticks_skipped, 2);
	cr_assert_eq(s.lost_per_reason[TRC_LOST_RING_FULL], 7);
	cr_assert_eq(s.per_type[TRC_REC_SPAN_BEGIN], 6);
	cr_assert_eq(s.per_type[TRC_REC_NAME], 5);
	cr_assert_eq(s.start_ns, 1000000000ull);
	cr_assert_eq(s.duration_ns, 5000, "duration %lu first %lu last %lu",
		     (unsigned long)s.duration_ns, (unsigned long)s.first_ts_ns,
		     (unsigned long)s.last_ts_ns);
	cr_assert_eq(s.n_threads, 2);
	cr_assert_eq(s.threads[0].tid, 4242);
	cr_assert_str_eq(s.threads[0].name, "main");
	cr_assert_eq(s.threads[0].events, 19);
	cr_assert_eq(s.threads[0].lost, 0);
	cr_assert_str_eq(s.threads[1].name, "worker \"1\"");
	cr_assert_eq(s.threads[1].events, 4);
	cr_assert_eq(s.threads[1].lost, 7);
	/* names sorted: compute main parse queue ready */
	cr_assert_eq(s.n_names, 5);
	cr_assert_str_eq(s.names[0].name, "compute");
	/* The span rule (FORMAT.md): thread a's "END main" closes the innermost open span,
	 * compute (1000 ns, beside thread b's 2000), and main stays open. */
	cr_assert_eq(s.names[0].begins, 2);
	/* thread a's END main closes compute, the innermost (FORMAT.md's rule): 1000 ns; thread
	 * b's compute is cut by its LOST record (issue 12 item 15): its end is unknown, and the
	 * END after the gap closes nothing */
	cr_assert_eq(s.names[0].spans, 1);
	cr_assert_eq(s.names[0].span_total_ns, 1000);
	cr_assert_eq(s.names[0].span_min_ns, 1000);
	cr_assert_eq(s.names[0].span_p50_ns, 1000);
	cr_assert_eq(s.names[0].span_p99_ns, 1000);
	cr_assert_eq(s.spans_cut_by_loss, 1);
	cr_assert_eq(s.spans_unmatched_end, 1);
	cr_assert_str_eq(s.names[1].name, "main");
	cr_assert_eq(s.names[1].spans, 0);
	cr_assert_eq(s.names[1].span_max_ns, 0);
	cr_assert_eq(s.spans_end_mismatched, 1);
	cr_assert_eq(s.spans_open_at_end, 1);
	cr_assert_str_eq(s.names[2].name, "parse");
	cr_assert_eq(s.names[2].spans, 3);
	cr_assert_eq(s.names[2].span_total_ns, 250 + 450 + 650);
	cr_assert_eq(s.names[2].span_max_ns, 650);
	cr_assert_eq(s.names[2].span_min_ns, 250);
	cr_assert_eq(s.names[2].span_p50_ns, 452, "p50 %lu", (unsigned long)s.names[2].span_p50_ns);
	cr_assert_eq(s.names[2].span_p99_ns, 648); /* middle of the 640..655 bucket */
	cr_assert_str_eq(s.names[3].name, "queue");
	cr_assert_eq(s.names[3].counters, 3);
	cr_assert_eq(s.names[3].counter_min, -4);
	cr_assert_eq(s.names[3].counter_max, 10);
	cr_assert_eq(s.names[3].counter_last, -4);
	cr_assert_str_eq(s.names[4].name, "ready");
	cr_assert_eq(s.names[4].instants, 1);
	cr_assert_eq(s.spans_open_at_end, 1);
	cr_assert_eq(s.spans_unmatched_end, 1);
	/* allocations: 64+128+256 by a, 4096 by b; a frees 0x..1100 (128), b frees 0x..1000 (64) */
	cr_assert_eq(s.allocs, 4);
	cr_assert_eq(s.alloc_bytes, 64 + 128 + 256 + 4096);
	cr_assert_eq(s.frees, 2);
	cr_assert_eq(s.free_bytes, 128 + 64);
	cr_assert_eq(s.live_peak_bytes, 128 + 256 + 4096);
	cr_assert_eq(s.live_end_bytes, 256 + 4096);
	cr_assert_eq(s.frees_unknown, 0);
	/* RSS: exact from the exit record, buffers excluded */
	cr_assert_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_EXIT);
	cr_assert_eq(s.rss_peak_bytes, 10u << 20);
	cr_assert_eq(s.rss_samples, 5);
	cr_assert_eq(s.rss_peak_sampled_bytes, 9u << 20);
	cr_assert_eq(s.rss_sampled_min_bytes, 3u << 20);
	cr_assert_eq(s.rss_sampled_last_bytes, 6u << 20);
	cr_assert_eq(s.buffers_resident_peak_bytes, 128u << 10);
	cr_assert_eq(s.n_spark, SUMMARY_SPARK_COLUMNS);
	cr_assert_eq(s.spark_bytes[0], 3u << 20);
	cr_assert_eq(s.spark_bytes[SUMMARY_SPARK_COLUMNS - 1], 6u << 20);
	cr_assert(s.has_exit);
	cr_assert_eq(s.exit_status, 3 << 8);
	cr_assert_eq(s.n_notes, 1);
	cr_assert_str_eq(s.notes[0].text, "recorder: all good");
	cr_assert_not(s.truncated);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile, summary_falls_back_to_samples_without_exit, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *rss = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	for (int i = 0; i < 4; i++) {
		struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = 1000000000ull + (uint64_t)i};
		r.rss.pid = i == 2 ? 777 : 4242; /* another pid: not the program's figure */
		r.rss.rss_bytes = (uint64_t)(i + 1) << 20;
		r.rss.buffers_bytes = i == 3 ? 8u << 20 : 1u << 10; /* more than rss: clamps */
		tu_add(rss, &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	struct trcfile_reader *rd = tu_open(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0);
	cr_assert_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_SAMPLED);
	cr_assert_eq(s.rss_samples, 3);
	cr_assert_eq(s.rss_peak_sampled_bytes, (2u << 20) - 1024);
	cr_assert_eq(s.rss_peak_bytes, (2u << 20) - 1024);
	cr_assert_eq(s.rss_sampled_min_bytes, 0);
	cr_assert_eq(s.rss_sampled_last_bytes, 0);
	cr_assert_eq(s.buffers_resident_peak_bytes, 8u << 20);
	cr_assert_not(s.has_exit);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* Percentiles stay within the histogram's 1/32 relative resolution on a wide spread. */
Test(trcfile, summary_percentiles_are_close, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *s = tu_plan_stream(&p, TRC_STREAM_THREAD, 1, 1);
	uint64_t t = 0;
	for (uint64_t i = 1; i <= 1000; i++) {
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
		r.span.name_id = 1;
		tu_add(s, &r);
		t += i * i; /* durations 1 .. 1e6 */
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t};
		r.span.name_id = 1;
		tu_add(s, &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 100), 0);
	struct trcfile_reader *rd = tu_open(path);
	struct summary sm;
	cr_assert_eq(summary_compute(rd, &sm), 0);
	cr_assert_eq(sm.n_names, 1);
	cr_assert_str_eq(sm.names[0].name, "#1");
	double p50 = (double)sm.names[0].span_p50_ns, p99 = (double)sm.names[0].span_p99_ns;
	cr_assert(p50 >= 250000 * 0.96 && p50 <= 250000 * 1.04, "p50 %f", p50);
	cr_assert(p99 >= 980100 * 0.96 && p99 <= 980100 * 1.04, "p99 %f", p99);
	cr_assert_eq(sm.names[0].span_max_ns, 1000000);
	summary_free(&sm);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile, type_and_reason_names, .timeout = 60)
{
	cr_assert_str_eq(trcfile_type_name(TRC_REC_SPAN_BEGIN), "span_begin");
	cr_assert_str_eq(trcfile_type_name(TRC_REC_EXIT), "exit");
	cr_assert_str_eq(trcfile_type_name(999), "unknown");
	cr_assert(trc_rec_is_event(TRC_REC_FUNC_EXIT));
	cr_assert_not(trc_rec_is_event(TRC_REC_RSS));
	cr_assert_not(trc_rec_is_event(TRC_REC_LOST));
	cr_assert_str_eq(trcfile_rss_source_name(TRC_RSS_SMAPS_ROLLUP), "smaps_rollup");
	cr_assert_str_eq(trcfile_lost_reason_name(TRC_LOST_SAMPLER_LATE), "sampler_late");
	cr_assert_str_eq(trcfile_lost_reason_name(TRC_LOST_REENTRANT), "reentrant");
	cr_assert_str_eq(trcfile_clock_name(TRC_CLOCK_GETTIME), "clock_gettime");
	cr_assert_str_eq(trcfile_clock_name(TRC_CLOCK_TSC), "tsc");
	cr_assert_str_eq(trcfile_clock_name(0), "unknown");
}

/* ---- the fuzzer's seed corpus (tests/corpus/reader/) ------------------------------------- */

/* The seeds are small valid traces; with TRC_WRITE_CORPUS=1 this test (re)writes them, else
 * it checks that each one still opens and reads without error (a format change must come
 * with new seeds). */
Test(trcfile, fuzz_seed_corpus, .timeout = 60)
{
	const char *dir = "tests/corpus/reader";
	const char *wr = getenv("TRC_WRITE_CORPUS");
	bool write = wr && *wr && strcmp(wr, "0");
	const char *tmp = tu_tmpdir();
	char path[400];
	struct tu_plan p = {0};
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	static const char *const seeds[] = {"small.trc", "chunks.trc", "truncated.trc",
					    "empty.trc"};
	if (write) {
		mkdir("tests/corpus", 0755);
		mkdir(dir, 0755);
		tu_small_plan(&p);
		snprintf(path, sizeof(path), "%s/small.trc", dir);
		cr_assert_eq(tu_write_plan(path, &p, &o, 3), 0);
		size_t len;
		uint8_t *b = tu_read_file(path, &len);
		snprintf(path, sizeof(path), "%s/truncated.trc", dir);
		tu_write_file(path, b, len - 32);
		free(b);
		tu_plan_free(&p);

		/* Many tiny chunks: flush every few records. */
		snprintf(path, sizeof(path), "%s/chunks.trc", dir);
		struct trcfile_header_info h = tu_header();
		int err = 0;
		struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
		struct trcfile_stream *s[3];
		for (int i = 0; i < 3; i++)
			s[i] = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, (uint32_t)i);
		for (int k = 0; k < 60; k++) {
			struct trc_record r = {.type = (uint32_t)(1 + k % 8), .ts_ns = 100 + k * 7};
			r.alloc.addr = 0x1000 + (uint64_t)k * 16;
			r.alloc.size = (uint64_t)k;
			cr_assert_eq(trcfile_stream_append(s[k % 3], &r), 0);
			if (k % 5 == 4)
				trcfile_stream_flush(s[k % 3]);
		}
		cr_assert_eq(trcfile_writer_close(w), 0);

		snprintf(path, sizeof(path), "%s/empty.trc", dir);
		w = trcfile_writer_open(path, &h, &o, &err);
		cr_assert_eq(trcfile_writer_close(w), 0);
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i]);
		struct trcfile_reader *r = NULL;
		char msg[256];
		cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s: %s", path,
			     msg);
		struct trcfile_iter *it = trcfile_iter_new(r);
		struct trc_record rec;
		int rc;
		while ((rc = trcfile_iter_next(it, &rec, NULL)) == 1)
			;
		cr_assert_eq(rc, 0, "%s: %s", path, trcfile_reader_errmsg(r));
		cr_assert_eq(trcfile_reader_truncated(r), strcmp(seeds[i], "truncated.trc") == 0);
		trcfile_iter_free(it);
		trcfile_reader_close(r);
	}
	tu_rm_rf(tmp);
}

/* Hostile numbers of distinct name ids and durations stay within the summary's bounds: ids
 * past the table are counted together, histograms past their budget are marked. */
Test(trcfile, summary_memory_is_bounded, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC, .zstd_level = 1};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 1);
	const uint32_t ids = 300000;
	uint64_t t = 0;
	for (uint32_t i = 0; i < ids; i++) {
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
		r.span.name_id = i;
		cr_assert_eq(trcfile_stream_append(s, &r), 0);
		/* durations spread over many histogram groups */
		t += 1ull << (i % 40);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t};
		r.span.name_id = i;
		cr_assert_eq(trcfile_stream_append(s, &r), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	struct trcfile_reader *rd = tu_open(path);
	struct summary sm;
	cr_assert_eq(summary_compute(rd, &sm), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(sm.events_recorded, 2 * ids);
	cr_assert(sm.percentiles_approximate);
	const struct summary_name *other = NULL;
	uint64_t spans = 0;
	for (size_t i = 0; i < sm.n_names; i++) {
		spans += sm.names[i].spans;
		if (!strcmp(sm.names[i].name, "(other names)"))
			other = &sm.names[i];
	}
	cr_assert_not_null(other);
	cr_assert_lt(sm.n_names, ids);
	cr_assert_gt(other->spans, 0);
	cr_assert_eq(spans, ids, "every span is counted somewhere");
	summary_free(&sm);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

/* Spans whose ends never match (their begins were lost, or BEGIN and END carry different ids):
 * the summary stays linear. Over a million begins of one id (more than the summary keeps open),
 * as many ends of another, in one stream: before the fix this took minutes (a memmove of a
 * 1M-deep stack per begin). By the span rule each end closes the innermost open span
 * (mismatched); the begins forgotten past the stack's bound are open at the end, and as many
 * ends find nothing open (unmatched). */
Test(trcfile, unmatched_spans_keep_the_summary_linear, .timeout = 30)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &tu_small_chunks, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *m = trcfile_stream_open(w, TRC_STREAM_META, 1, 0);
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 2);
	for (uint32_t id = 1; id <= 2; id++) {
		struct trc_record n = {.type = TRC_REC_NAME, .ts_ns = 0};
		n.name.id = id;
		n.name.str = "same";
		n.name.len = 4;
		cr_assert_eq(trcfile_stream_append(m, &n), 0);
	}
	const uint64_t n_spans = 1200000; /* more than the 1M-deep stack the summary keeps */
	for (uint64_t i = 0; i < n_spans; i++) {
		struct trc_record b = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = 10 + 2 * i};
		b.span.name_id = 1;
		cr_assert_eq(trcfile_stream_append(s, &b), 0);
	}
	for (uint64_t i = 0; i < n_spans; i++) {
		struct trc_record e = {.type = TRC_REC_SPAN_END, .ts_ns = 10 + 2 * n_spans + i};
		e.span.name_id = 2;
		cr_assert_eq(trcfile_stream_append(s, &e), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	struct trcfile_reader *rd = tu_open(path);
	struct summary sum;
	cr_assert_eq(summary_compute(rd, &sum), 0);
	cr_expect_eq(sum.events_recorded, 2 * n_spans);
	cr_expect_gt(sum.spans_end_mismatched, 0);
	cr_expect_eq(sum.spans_end_mismatched + sum.spans_unmatched_end, n_spans);
	cr_expect_eq(sum.spans_open_at_end, sum.spans_unmatched_end);
	summary_free(&sum);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

/* Item 10 (issue 12): streams ended with trcfile_stream_end and a chunk index longer than the
 * writer's buffer leave memory for a spill file (or stay in memory when no file can be
 * made); either way the footer is the one a reader checks and reads exactly: every stream in
 * id order, ended ones and open ones, every chunk. */
static void ended_streams_round_trip(bool spill_in_memory)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/ended.trc", dir);
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	if (spill_in_memory)
		setenv("TMPDIR", "/nonexistent-trc-dir", 1);
	struct trcfile_header_info h = tu_header();
	int err = 0;
	/* An fd, not a path: the spill then goes to $TMPDIR (or memory when it cannot). */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	struct trcfile_writer *w = trcfile_writer_open_fd(fd, &h, &tu_small_chunks, &err);
	cr_assert_not_null(w, "%s", strerror(-err));
	enum { STREAMS = 3000, PER = 3 };
	struct trcfile_stream *open_one = trcfile_stream_open(w, TRC_STREAM_THREAD, 7, 7);
	cr_assert_eq(trcfile_stream_append(
			     open_one, &(struct trc_record){.type = TRC_REC_INSTANT,
							    .ts_ns = 5,
							    .value = {.name_id = 1, .value = 0}}),
		     0);
	for (uint32_t i = 0; i < STREAMS; i++) {
		struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 100, 1000 + i);
		cr_assert_not_null(s);
		cr_assert_eq(trcfile_stream_id(s), i + 1);
		for (uint32_t k = 0; k < PER; k++) {
			struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = 10 + i * 10 + k};
			r.value.name_id = 1;
			r.value.value = i * PER + k;
			cr_assert_eq(trcfile_stream_append(s, &r), 0);
			if (i % 2 && k == 0)
				cr_assert_eq(trcfile_stream_flush(s), 0,
					     "two chunks for odd streams");
		}
		if (i % 5 != 4) /* most end; every fifth stays open until close */
			cr_assert_eq(trcfile_stream_end(s), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	if (saved) {
		setenv("TMPDIR", saved, 1);
		free(saved);
	} else {
		unsetenv("TMPDIR");
	}

	struct trcfile_reader *rd = tu_open(path);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(rd, &st);
	cr_assert_not(st.truncated, "the footer is valid");
	cr_assert_eq(trcfile_reader_stream_count(rd), STREAMS + 1);
	cr_assert_eq(st.chunks, 1 + STREAMS + STREAMS / 2, "one chunk each, two for odd ones");
	cr_assert_eq(st.records, 1 + STREAMS * PER);
	for (uint32_t i = 0; i < STREAMS; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(rd, i + 1);
		if (si->tid != 1000 + i || si->pid != 100 || si->records != PER ||
		    si->chunks != 1 + i % 2)
			cr_assert_fail("stream %u: tid %u records %llu chunks %u", i + 1, si->tid,
				       (unsigned long long)si->records, si->chunks);
	}
	struct trcfile_iter *it = trcfile_iter_new(rd);
	struct trc_record rec;
	unsigned s;
	uint64_t want = 0;
	int rc;
	while ((rc = trcfile_iter_next(it, &rec, &s)) == 1) {
		if (s == 0)
			continue;
		if ((uint64_t)rec.value.value != want)
			cr_assert_fail("record %llu read as %llu", (unsigned long long)want,
				       (unsigned long long)rec.value.value);
		want++;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(want, STREAMS * PER);
	trcfile_iter_free(it);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

Test(trcfile, ended_streams_and_a_long_index_spill_to_a_file, .timeout = 60)
{
	ended_streams_round_trip(false);
}

Test(trcfile, ended_streams_and_a_long_index_stay_in_memory_without_a_spill_file, .timeout = 60)
{
	ended_streams_round_trip(true);
}

/* Stream 0 at t0 + 10 i, stream 1 at t0 + 10 i + 5, 20000 instants each (many chunks). */
Test(trcfile, seek_lands_on_the_first_record_at_or_after_t, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t t0 = 1000000000ull;
	enum { N = 20000 };
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 8);
	for (unsigned s = 0; s < 2; s++)
		for (int i = 0; i < N; i++) {
			struct trc_record r = {.type = TRC_REC_INSTANT,
					       .ts_ns = t0 + 10 * (uint64_t)i + 5 * s};
			r.value.name_id = 2;
			r.value.value = i;
			tu_add(&p.streams[s], &r);
		}
	cr_assert_eq(tu_write_plan(path, &p, &tu_small_chunks, 1000), 0);
	struct trcfile_reader *rd = NULL;
	char msg[512] = "";
	cr_assert_eq(trcfile_reader_open(path, &rd, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_gt(trcfile_reader_stream(rd, 0)->chunks, 3, "several chunks");
	static const int ks[] = {0, 1, 999, 1000, 4321, 12345, N - 1};
	struct trc_record rec;
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		uint64_t t = t0 + 10 * (uint64_t)ks[j];
		struct trcfile_cursor *c = trcfile_cursor_new(rd, 0);
		cr_assert_not_null(c);
		cr_assert_eq(trcfile_cursor_seek(c, t), 0);
		cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
		cr_assert_eq(rec.ts_ns, t, "cursor seek to record %d: at %llu", ks[j],
			     (unsigned long long)(rec.ts_ns - t0));
		cr_assert_eq(trcfile_cursor_seek(c, t + 1), 0);
		if (ks[j] == N - 1) {
			cr_assert_eq(trcfile_cursor_next(c, &rec), 0, "nothing after the last");
		} else {
			cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
			cr_assert_eq(rec.ts_ns, t + 10);
		}
		trcfile_cursor_free(c);

		struct trcfile_iter *it = trcfile_iter_new(rd);
		cr_assert_not_null(it);
		cr_assert_eq(trcfile_iter_seek(it, t + 5), 0);
		cr_assert_eq(trcfile_iter_next(it, &rec, NULL), 1);
		cr_assert_eq(rec.ts_ns, t + 5, "merged seek: stream 1's record at exactly t");
		cr_assert_eq(rec.value.value, ks[j]);
		trcfile_iter_free(it);
	}
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}
