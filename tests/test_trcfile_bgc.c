/* test_trcfile_bgc.c - the background compressor of stored chunks (chunk_bgc.h, issue 11
 * item 2): what it compressed while the writer ran is taken by the end compaction instead of
 * compressing again, and the result reads back exactly as the same file compacted without it;
 * a copy that does not match its chunk is refused and that chunk compressed at the end.
 * (Through trace-run: test_e2e_recorder.c.)
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_stored_util.h"
#include "chunk_bgc.h"
#include "trcfile_codec.h"
#include "trcfile_stored.h"

/* Every record of a and b in time order, equal one for one; the streams equal. Returns the
 * records compared. */
static size_t same_records(const char *a, const char *b)
{
	struct trcfile_reader *ra = tu_open_ok(a), *rb = tu_open_ok(b);
	cr_assert_not(trcfile_reader_truncated(rb), "%s", b);
	cr_assert_eq(trcfile_reader_stream_count(ra), trcfile_reader_stream_count(rb));
	for (unsigned i = 0; i < trcfile_reader_stream_count(ra); i++) {
		const struct trcfile_stream_info *x = trcfile_reader_stream(ra, i),
						 *y = trcfile_reader_stream(rb, i);
		cr_assert(x->id == y->id && x->kind == y->kind && x->pid == y->pid &&
				  x->tid == y->tid && x->records == y->records &&
				  x->chunks == y->chunks,
			  "stream %u differs", i);
	}
	struct trcfile_iter *ia = trcfile_iter_new(ra), *ib = trcfile_iter_new(rb);
	cr_assert(ia && ib);
	size_t n = 0;
	for (;;) {
		struct trc_record x, y;
		unsigned sx, sy;
		int ka = trcfile_iter_next(ia, &x, &sx);
		int kb = trcfile_iter_next(ib, &y, &sy);
		cr_assert_geq(ka, 0, "%s: %s", a, trcfile_reader_errmsg(ra));
		cr_assert_geq(kb, 0, "%s: %s", b, trcfile_reader_errmsg(rb));
		cr_assert_eq(ka, kb, "record %zu: one file ended first", n);
		if (ka == 0)
			break;
		cr_assert(tu_rec_eq(&x, &y), "record %zu differs (types %u, %u)", n, x.type,
			  y.type);
		cr_assert_eq(sx, sy);
		n++;
	}
	trcfile_iter_free(ia);
	trcfile_iter_free(ib);
	trcfile_reader_close(ra);
	trcfile_reader_close(rb);
	return n;
}

static char *events_text(const char *dir, const char *path)
{
	cr_assert_eq(tu_sh("%s/bin/trace-dump events '%s' > '%s/events.txt' 2>/dev/null",
			   tu_build(), path, dir),
		     0);
	return tu_slurp_text(dir, "events.txt");
}

/* Three thread streams of 40000 events each (several 64 KiB chunks per stream). */
static void plan(struct tu_plan *p)
{
	tu_small_plan(p);
	for (uint32_t k = 0; k < 3; k++)
		tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 5000 + k);
	for (uint32_t k = 0; k < 3; k++) {
		struct tu_stream *x = &p->streams[p->n - 3 + k];
		uint64_t t = 3000000000ull + k;
		for (uint32_t i = 0; i < 40000; i++) {
			struct trc_record r = {.type = i % 2 ? TRC_REC_ALLOC : TRC_REC_FUNC_ENTER,
					       .ts_ns = t += 3 + (i * 7919u) % 1000};
			if (r.type == TRC_REC_ALLOC) {
				r.alloc.addr =
					0x7f0000000000ull + ((i * 2654435761u) % 100000) * 16;
				r.alloc.size = 16 + i % 4000;
			} else {
				r.func.addr = 0x401000 + (i % 97) * 16;
				r.func.call_site = r.func.addr + 5;
			}
			tu_add(x, &r);
		}
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Writes p with every chunk stored and a background compressor (flags) given time to catch
 * up after each stream: a batch of chunks at a time, so its queue never overflows. Returns it
 * stopped (the writer closed); *stored: the chunks the writer stored. */
static struct trcfile_bgc *write_with_bgc(const char *path, const struct tu_plan *p, uint32_t flags,
					  uint64_t *stored)
{
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.chunk_bytes = 64u << 10,
					.compress_threads = 1,
					.store_one_in = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "%s", strerror(-err));
	struct trcfile_bgc *b = trcfile_bgc_start(w, flags, &err);
	cr_assert_not_null(b, "bgc: %s", strerror(-err));
	for (size_t i = 0; i < p->n; i++) {
		struct trcfile_stream *s = trcfile_stream_open(
			w, p->streams[i].kind, p->streams[i].pid, p->streams[i].tid);
		cr_assert_not_null(s);
		for (size_t k = 0; k < p->streams[i].n; k++)
			cr_assert_eq(trcfile_stream_append(s, &p->streams[i].recs[k]), 0);
		cr_assert_eq(trcfile_stream_flush(s), 0);
		/* Until the background has taken every chunk big enough (a 16th of a chunk). */
		uint64_t t0 = now_ms(), last = trcfile_bgc_compressed(b), since = now_ms();
		while (now_ms() - t0 < 20000 && now_ms() - since < 300) {
			usleep(10000);
			uint64_t c = trcfile_bgc_compressed(b);
			if (c != last) {
				last = c;
				since = now_ms();
			}
		}
	}
	trcfile_bgc_stop(b);
	struct trcfile_writer_stats st;
	cr_assert_eq(trcfile_writer_close_stats(w, &st), 0);
	*stored = st.chunks_stored;
	return b;
}

Test(trcfile_bgc, background_copies_are_taken_and_read_back_as_a_compaction_without_them,
     .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char in[300], with[300], without[300];
	snprintf(in, sizeof(in), "%s/in.trc", dir);
	snprintf(with, sizeof(with), "%s/with.trc", dir);
	snprintf(without, sizeof(without), "%s/without.trc", dir);
	struct tu_plan p = {0};
	plan(&p);
	uint64_t stored = 0;
	struct trcfile_bgc *b = write_with_bgc(in, &p, 0, &stored);
	unsigned st, co;
	tu_count_chunks(in, &st, &co);
	cr_assert_eq(co, 0);
	cr_assert_eq(st, stored);
	uint64_t bg = trcfile_bgc_compressed(b);
	/* Each thread stream: its 64 KiB chunks, all taken; the small plan's streams are
	 * under the 4 KiB cut. */
	cr_assert_geq(bg, 6, "%llu compressed in the background", (unsigned long long)bg);
	cr_assert_lt(bg, stored);

	struct trcfile_writer_opts co_opts = {.compress_threads = 2,
					      .flags = TRCFILE_WRITER_NO_FSYNC};
	char msg[512] = "";
	struct trcfile_bgc_use use = {0}, plain = {0};
	cr_assert_eq(
		trcfile__compact_bgc(in, with, &co_opts, b, NULL, NULL, &use, msg, sizeof(msg)), 0,
		"%s", msg);
	cr_assert_eq(trcfile__compact_bgc(in, without, &co_opts, NULL, NULL, NULL, &plain, msg,
					  sizeof(msg)),
		     0, "%s", msg);
	cr_assert_eq(use.stored, stored);
	cr_assert_eq(use.used, bg);
	cr_assert_eq(use.refused, 0);
	cr_assert_eq(plain.stored, stored);
	cr_assert_eq(plain.used, 0);
	tu_count_chunks(with, &st, &co);
	cr_assert_eq(st, 0);
	cr_assert_eq(co, stored);

	cr_assert_eq(same_records(without, with), tu_plan_records(&p));
	char *ja = tu_summary_json(dir, with), *jb = tu_summary_json(dir, without);
	cr_assert_str_eq(ja, jb);
	char *ea = events_text(dir, with), *eb = events_text(dir, without);
	cr_assert_str_eq(ea, eb);
	cr_assert_gt(strlen(ea), 100000);
	free(ja);
	free(jb);
	free(ea);
	free(eb);
	trcfile_bgc_free(b);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile_bgc, a_copy_that_does_not_match_its_chunk_is_refused_and_compressed_again,
     .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char in[300], with[300], without[300];
	snprintf(in, sizeof(in), "%s/in.trc", dir);
	snprintf(with, sizeof(with), "%s/with.trc", dir);
	snprintf(without, sizeof(without), "%s/without.trc", dir);
	struct tu_plan p = {0};
	plan(&p);
	uint64_t stored = 0;
	struct trcfile_bgc *b = write_with_bgc(in, &p, TRCFILE_BGC_TEST_MISMATCH, &stored);
	uint64_t bg = trcfile_bgc_compressed(b);
	cr_assert_geq(bg, 6);
	struct trcfile_writer_opts co_opts = {.compress_threads = 2,
					      .flags = TRCFILE_WRITER_NO_FSYNC};
	char msg[512] = "";
	struct trcfile_bgc_use use = {0};
	cr_assert_eq(
		trcfile__compact_bgc(in, with, &co_opts, b, NULL, NULL, &use, msg, sizeof(msg)), 0,
		"%s", msg);
	cr_assert_eq(trcfile_compact(in, without, &co_opts, NULL, NULL, NULL, msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert_eq(use.stored, stored);
	cr_assert_eq(use.refused, 1);
	cr_assert_eq(use.used, bg - 1);
	unsigned st, co;
	tu_count_chunks(with, &st, &co);
	cr_assert_eq(st, 0);
	cr_assert_eq(co, stored);
	cr_assert_eq(same_records(without, with), tu_plan_records(&p));
	char *ja = tu_summary_json(dir, with), *jb = tu_summary_json(dir, without);
	cr_assert_str_eq(ja, jb);
	free(ja);
	free(jb);
	trcfile_bgc_free(b);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* The side file is unlinked from the start: nothing is left beside the trace, whatever
 * becomes of the process, and the trace's directory holds the trace alone meanwhile. */
Test(trcfile_bgc, the_side_file_has_no_name, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char in[300];
	snprintf(in, sizeof(in), "%s/in.trc", dir);
	struct tu_plan p = {0};
	plan(&p);
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {
		.chunk_bytes = 64u << 10, .store_one_in = 1, .flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(in, &h, &o, &err);
	cr_assert_not_null(w);
	struct trcfile_bgc *b = trcfile_bgc_start(w, 0, &err);
	cr_assert_not_null(b, "%s", strerror(-err));
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, 1);
	for (size_t k = 0; k < p.streams[p.n - 1].n; k++)
		cr_assert_eq(trcfile_stream_append(s, &p.streams[p.n - 1].recs[k]), 0);
	for (int i = 0; i < 2000 && trcfile_bgc_compressed(b) == 0; i++)
		usleep(5000);
	cr_assert_gt(trcfile_bgc_compressed(b), 0);
	cr_assert_eq(tu_sh("test \"$(ls -A '%s')\" = in.trc", dir), 0);
	trcfile_bgc_stop(b);
	cr_assert_eq(trcfile_writer_close(w), 0);
	trcfile_bgc_free(b);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A side file damaged after the copy was made (a byte of the first copy's frame flipped): its
 * CRC refuses it, and the chunk is compressed at the end. */
Test(trcfile_bgc, a_damaged_copy_is_refused_by_its_checksum, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char in[300], with[300], without[300];
	snprintf(in, sizeof(in), "%s/in.trc", dir);
	snprintf(with, sizeof(with), "%s/with.trc", dir);
	snprintf(without, sizeof(without), "%s/without.trc", dir);
	struct tu_plan p = {0};
	plan(&p);
	uint64_t stored = 0;
	struct trcfile_bgc *b = write_with_bgc(in, &p, 0, &stored);
	uint64_t bg = trcfile_bgc_compressed(b);
	cr_assert_geq(bg, 6);
	uint8_t x;
	off_t at = TRCFILE__CHUNK_HDR_BYTES + 20; /* inside the first copy's frame */
	cr_assert_eq(pread(trcfile__bgc_fd(b), &x, 1, at), 1);
	x ^= 0x10;
	cr_assert_eq(pwrite(trcfile__bgc_fd(b), &x, 1, at), 1);
	struct trcfile_writer_opts co_opts = {.compress_threads = 2,
					      .flags = TRCFILE_WRITER_NO_FSYNC};
	char msg[512] = "";
	struct trcfile_bgc_use use = {0};
	cr_assert_eq(
		trcfile__compact_bgc(in, with, &co_opts, b, NULL, NULL, &use, msg, sizeof(msg)), 0,
		"%s", msg);
	cr_assert_eq(trcfile_compact(in, without, &co_opts, NULL, NULL, NULL, msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert_eq(use.refused, 1);
	cr_assert_eq(use.used, bg - 1);
	cr_assert_eq(same_records(without, with), tu_plan_records(&p));
	trcfile_bgc_free(b);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}
