/* stress_trcfile.c - the file writer's pipeline under concurrency (plain and TSan).
 *
 * Several appending threads, each with its own streams (the writer's contract: one thread per
 * stream), small chunks, two compressor threads and few chunks in flight so back-pressure
 * engages constantly; flushes at random; a watcher thread polls trcfile_writer_error and
 * trcfile_writer_bytes_written throughout; one more thread opens streams while the others
 * append. Then the file is read back: every stream must hold exactly what was appended, in
 * order, and the merge must be in time order.
 *
 * It runs twice: compressed chunks only, then with TRCFILE_WRITER_STORE_WHEN_BEHIND and every
 * fifth chunk stored besides (stored chunks go straight from the appending threads to the
 * writer thread, beside the compressors' output), the watcher also checking that the stored
 * count never goes back; the second run also has trace-run's other flags (BACKGROUND: idle-class
 * compressors; PREFAULT: the writer thread warms the chunk pool as the appenders start).
 *
 * A third run is the second on a full disk (TRCFILE_WRITER_LOSE_WHEN_FULL, the file size limit
 * at FULL_LIMIT_BYTES, SIGXFSZ ignored): the appenders race the writer thread's dropping, and
 * each stream must hold, in events and its disk-full lost count, exactly what was appended.
 *
 * STRESS_SCALE (env, default 1) multiplies the record count. Prints one line of figures per
 * run; exits 1 on any failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trcfile.h"
#include "chunk_bgc.h"

#define THREADS 4
#define STREAMS_PER_THREAD 3
#define LATE_STREAMS 8
#define FULL_LIMIT_BYTES (256u << 10)

static unsigned long records_per_stream = 60000;
static struct trcfile_writer *writer;
static atomic_bool done;
static atomic_int failures;

#define FAIL(...)                                                \
	do {                                                     \
		fprintf(stderr, "stress_trcfile: " __VA_ARGS__); \
		fputc('\n', stderr);                             \
		atomic_fetch_add(&failures, 1);                  \
	} while (0)

/* Record k of stream s: derived from (s, k) alone so the check needs no copy. */
static void make_record(unsigned s, unsigned long k, struct trc_record *r)
{
	uint64_t x = (uint64_t)s * 0x9e3779b97f4a7c15ull ^ (uint64_t)k * 0xbf58476d1ce4e5b9ull;
	memset(r, 0, sizeof(*r));
	r->ts_ns = 1000 + (uint64_t)k * 16 + s % 16;
	switch (k % 3) {
	case 0:
		r->type = TRC_REC_SPAN_BEGIN;
		r->span.name_id = (uint32_t)(x % 50);
		break;
	case 1:
		r->type = TRC_REC_COUNTER;
		r->value.name_id = s;
		r->value.value = (int64_t)(x >> 3);
		break;
	default:
		r->type = TRC_REC_ALLOC;
		r->alloc.addr = x & ~15ull;
		r->alloc.size = x >> 52;
	}
}

struct app_arg {
	unsigned first; /* first stream number */
	struct trcfile_stream *s[STREAMS_PER_THREAD];
};

static void *appender(void *p)
{
	struct app_arg *a = p;
	uint64_t rnd = a->first + 1;
	for (unsigned long k = 0; k < records_per_stream; k++) {
		for (unsigned i = 0; i < STREAMS_PER_THREAD; i++) {
			struct trc_record r;
			make_record(a->first + i, k, &r);
			int err = trcfile_stream_append(a->s[i], &r);
			if (err) {
				FAIL("append: %s", strerror(-err));
				return NULL;
			}
			rnd = rnd * 6364136223846793005ull + 1;
			if ((rnd >> 50) == 0 && trcfile_stream_flush(a->s[i]) != 0)
				FAIL("flush failed");
		}
	}
	return NULL;
}

static void *watcher(void *p)
{
	(void)p;
	uint64_t last = 0, last_stored = 0;
	while (!atomic_load(&done)) {
		if (trcfile_writer_error(writer))
			FAIL("writer error %d", trcfile_writer_error(writer));
		uint64_t b = trcfile_writer_bytes_written(writer);
		if (b < last)
			FAIL("bytes_written went back");
		last = b;
		uint64_t c = trcfile_writer_chunks_stored(writer);
		if (c < last_stored)
			FAIL("chunks_stored went back");
		last_stored = c;
		usleep(100);
	}
	return NULL;
}

/* Opens streams while the others append, and writes a few records to each. */
static void *late_opener(void *p)
{
	(void)p;
	for (unsigned i = 0; i < LATE_STREAMS; i++) {
		unsigned s = THREADS * STREAMS_PER_THREAD + i;
		struct trcfile_stream *st = trcfile_stream_open(writer, TRC_STREAM_META, 7, s);
		if (!st) {
			FAIL("late stream_open");
			return NULL;
		}
		for (unsigned long k = 0; k < 100; k++) {
			struct trc_record r;
			make_record(s, k, &r);
			if (trcfile_stream_append(st, &r) != 0)
				FAIL("late append");
		}
	}
	return NULL;
}

static bool same(const struct trc_record *a, const struct trc_record *b)
{
	if (a->type != b->type || a->ts_ns != b->ts_ns)
		return false;
	switch (a->type) {
	case TRC_REC_SPAN_BEGIN:
		return a->span.name_id == b->span.name_id;
	case TRC_REC_COUNTER:
		return a->value.name_id == b->value.name_id && a->value.value == b->value.value;
	default:
		return a->alloc.addr == b->alloc.addr && a->alloc.size == b->alloc.size;
	}
}

static int run(bool store, bool full)
{
	atomic_store(&done, false);
	char path[] = "/tmp/stress_trcfile.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	struct trcfile_header_info h = {.cmdline = "stress", .cmdline_len = 6, .pid = 7};
	struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.compress_threads = 2,
					.max_chunks_in_flight = 3,
					.zstd_level = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC};
	if (store) {
		/* As trace-run runs it: idle-class compressors, the pool faulted in by the writer
		 * thread while the appenders already take chunks from it. */
		o.flags |= TRCFILE_WRITER_STORE_WHEN_BEHIND | TRCFILE_WRITER_BACKGROUND |
			   TRCFILE_WRITER_PREFAULT;
		o.store_one_in = 5;
	}
	struct rlimit fsize_old;
	if (full) {
		o.flags |= TRCFILE_WRITER_LOSE_WHEN_FULL;
		struct rlimit low;
		getrlimit(RLIMIT_FSIZE, &fsize_old);
		low = fsize_old;
		low.rlim_cur = FULL_LIMIT_BYTES;
		if (setrlimit(RLIMIT_FSIZE, &low) != 0)
			FAIL("setrlimit: %s", strerror(errno));
	}
	int err = 0;
	writer = trcfile_writer_open_fd(fd, &h, &o, &err);
	if (!writer) {
		fprintf(stderr, "stress_trcfile: writer_open: %s\n", strerror(-err));
		unlink(path);
		return 1;
	}
	/* With stored chunks, the background compressor runs beside the appenders (its hook
	 * on the writer thread, its own thread, stop while chunks are still stored). */
	struct trcfile_bgc *bgc = NULL;
	if (store && !(bgc = trcfile_bgc_start(writer, 0, &err)))
		FAIL("bgc_start: %s", strerror(-err));
	struct app_arg args[THREADS];
	for (unsigned t = 0; t < THREADS; t++) {
		args[t].first = t * STREAMS_PER_THREAD;
		for (unsigned i = 0; i < STREAMS_PER_THREAD; i++)
			args[t].s[i] = trcfile_stream_open(writer, TRC_STREAM_THREAD, 7,
							   args[t].first + i);
	}
	pthread_t th[THREADS], w, late;
	pthread_create(&w, NULL, watcher, NULL);
	for (unsigned t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, appender, &args[t]);
	pthread_create(&late, NULL, late_opener, NULL);
	for (unsigned t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_join(late, NULL);
	atomic_store(&done, true);
	pthread_join(w, NULL);
	trcfile_bgc_stop(bgc);
	struct trcfile_writer_stats wst;
	err = trcfile_writer_close_stats(writer, &wst);
	if (full)
		setrlimit(RLIMIT_FSIZE, &fsize_old);
	if (err)
		FAIL("close: %s", strerror(-err));
	if (full && (wst.full_err != -EFBIG || !wst.full_lost_events))
		FAIL("full: err %d, %lu lost", wst.full_err, (unsigned long)wst.full_lost_events);
	if (store && !full && wst.chunks_stored == 0)
		FAIL("no chunk was stored");
	if (!store && wst.chunks_stored != 0)
		FAIL("chunks stored without the flag");

	struct trcfile_reader *r = NULL;
	char msg[256];
	if (trcfile_reader_open(path, &r, msg, sizeof(msg)) != 0) {
		FAIL("reader: %s", msg);
		unlink(path);
		return 1;
	}
	uint64_t bg_used = 0;
	if (bgc) {
		/* The end compaction takes every copy the background made, and reads back the
		 * same records. */
		char out[] = "/tmp/stress_trcfile_c.XXXXXX";
		int ofd = mkstemp(out);
		if (ofd >= 0)
			close(ofd);
		struct trcfile_writer_opts co = {.compress_threads = 2,
						 .flags = TRCFILE_WRITER_NO_FSYNC};
		struct trcfile_bgc_use use = {0};
		err = trcfile__compact_bgc(path, out, &co, bgc, NULL, NULL, &use, msg, sizeof(msg));
		if (err)
			FAIL("compact: %s", msg);
		if (use.used != trcfile_bgc_compressed(bgc) || use.refused ||
		    use.stored != wst.chunks_stored)
			FAIL("compact: %lu of %lu copies taken, %lu refused, %lu of %lu stored",
			     (unsigned long)use.used, (unsigned long)trcfile_bgc_compressed(bgc),
			     (unsigned long)use.refused, (unsigned long)use.stored,
			     (unsigned long)wst.chunks_stored);
		bg_used = use.used;
		struct trcfile_reader *rc = NULL;
		if (trcfile_reader_open(out, &rc, msg, sizeof(msg)) != 0) {
			FAIL("compacted: %s", msg);
		} else {
			struct trcfile_reader_stats a, b;
			trcfile_reader_get_stats(r, &a);
			trcfile_reader_get_stats(rc, &b);
			if (a.records != b.records || a.chunks != b.chunks || b.truncated)
				FAIL("compacted: %lu records in %lu chunks, want %lu in %lu",
				     (unsigned long)b.records, (unsigned long)b.chunks,
				     (unsigned long)a.records, (unsigned long)a.chunks);
			trcfile_reader_close(rc);
		}
		unlink(out);
		trcfile_bgc_free(bgc);
	}
	unlink(path);
	unsigned ns = trcfile_reader_stream_count(r);
	if (full)
		ns--; /* the last: the note's */
	if (ns != THREADS * STREAMS_PER_THREAD + LATE_STREAMS)
		FAIL("%u streams", ns);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	if (st.truncated)
		FAIL("truncated");
	/* Each stream: exactly what was appended. Streams are identified by their tid. */
	for (unsigned i = 0; i < ns; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, i);
		unsigned s = si->tid;
		unsigned long want = s < THREADS * STREAMS_PER_THREAD ? records_per_stream : 100;
		struct trcfile_cursor *c = trcfile_cursor_new(r, i);
		struct trc_record rec, exp;
		unsigned long k = 0, lost = 0;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) == 1) {
			if (full) {
				/* Chunks may be missing (dropped in completion order): count. */
				if (rec.type == TRC_REC_LOST && rec.lost.reason == TRC_LOST_DISK_FULL)
					lost += rec.lost.count;
				else
					k++;
				continue;
			}
			make_record(s, k, &exp);
			if (k >= want || !same(&rec, &exp)) {
				FAIL("stream %u record %lu differs", s, k);
				break;
			}
			k++;
		}
		if (rc < 0)
			FAIL("stream %u: %s", s, trcfile_reader_errmsg(r));
		if (k + lost != want)
			FAIL("stream %u: %lu records and %lu lost, want %lu", s, k, lost, want);
		trcfile_cursor_free(c);
	}
	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	uint64_t prev = 0, n = 0;
	int rc;
	while ((rc = trcfile_iter_next(it, &rec, NULL)) == 1) {
		if (rec.ts_ns < prev)
			FAIL("merge out of order at %lu", (unsigned long)n);
		prev = rec.ts_ns;
		n++;
	}
	if (rc != 0 || n != st.records)
		FAIL("merge: rc %d, %lu of %lu records", rc, (unsigned long)n,
		     (unsigned long)st.records);
	trcfile_iter_free(it);
	printf("stress_trcfile: %lu records in %lu chunks (%lu stored, %lu compressed in the "
	       "background), %u streams, %d failures\n",
	       (unsigned long)st.records, (unsigned long)st.chunks,
	       (unsigned long)wst.chunks_stored, (unsigned long)bg_used, ns,
	       atomic_load(&failures));
	trcfile_reader_close(r);
	return atomic_load(&failures) ? 1 : 0;
}

int main(void)
{
	const char *sc = getenv("STRESS_SCALE");
	if (sc) {
		long v = atol(sc);
		if (v < 1 || v > 10000) {
			fprintf(stderr, "stress_trcfile: bad STRESS_SCALE '%s'\n", sc);
			return 2;
		}
		records_per_stream *= (unsigned long)v;
	}
	signal(SIGXFSZ, SIG_IGN); /* the full run: writes past the limit fail with EFBIG */
	int a = run(false, false);
	int b = run(true, false);
	int c = run(true, true);
	return a || b || c ? 1 : 0;
}
