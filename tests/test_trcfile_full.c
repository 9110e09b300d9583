/* test_trcfile_full.c - the writer on a full disk (TRCFILE_WRITER_LOSE_WHEN_FULL, trcfile.h):
 * what the file cannot take is counted lost per stream (FORMAT.md "lost", reason 7), the
 * footer is written, cutting whole chunks off to make room for it, and the metadata is kept.
 *
 * The full disk is the file size limit (RLIMIT_FSIZE, lowered in the test's worker process,
 * SIGXFSZ ignored: writes past it fail with EFBIG), set after a first run without it measured
 * where the data ends. Small chunks (TRCFILE_MIN_CHUNK_BYTES) make the footer larger than one
 * compressed chunk, so the footer cannot fit in the room the dropped chunk left.
 *
 * Threads: the test's own (the writer's threads inside).
 */
#include <inttypes.h>
#include <signal.h>
#include <sys/resource.h>

#include "test_trcfile_util.h"
#include "trcfile_spill.h"

#define TF_EVENTS 400000u
#define TF_NAME_ID 7u

/* Writes TF_EVENTS span events on one thread stream (and their name on a meta stream) with
 * the file size limited to limit bytes (0: no limit). Returns close's status; *st its stats. */
static int tf_write(const char *path, uint64_t limit, struct trcfile_writer_stats *st)
{
	struct rlimit old, low;
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	if (limit) {
		low = old;
		low.rlim_cur = limit;
		cr_assert_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	}
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.compress_threads = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC |
						 TRCFILE_WRITER_LOSE_WHEN_FULL};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	struct trcfile_stream *meta = trcfile_stream_open(w, TRC_STREAM_META, 100, 0);
	struct trcfile_stream *th = trcfile_stream_open(w, TRC_STREAM_THREAD, 100, 101);
	cr_assert(meta && th);
	struct trc_record name = {.type = TRC_REC_NAME, .ts_ns = 1000};
	name.name.id = TF_NAME_ID;
	name.name.str = "tf.work";
	name.name.len = 7;
	cr_assert_eq(trcfile_stream_append(meta, &name), 0);
	uint64_t ts = 1000;
	for (uint32_t i = 0; i < TF_EVENTS; i++) {
		/* Varied gaps, so chunks do not compress to nothing. */
		ts += 10 + (i * 2654435761u >> 24);
		struct trc_record r = {.type = i & 1 ? TRC_REC_SPAN_END : TRC_REC_SPAN_BEGIN,
				       .ts_ns = ts};
		r.span.name_id = TF_NAME_ID;
		err = trcfile_stream_append(th, &r);
		cr_assert_eq(err, 0, "append %u: %s", i, strerror(-err));
	}
	err = trcfile_writer_close_stats(w, st);
	if (limit)
		cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	return err;
}

/* Where the footer of a whole trace begins (its trailer's first field). */
static uint64_t tf_footer_offset(const char *path)
{
	size_t len;
	uint8_t *f = tu_read_file(path, &len);
	cr_assert_geq(len, 32u);
	uint64_t off = 0;
	for (int i = 7; i >= 0; i--)
		off = off << 8 | f[len - 32 + (size_t)i];
	free(f);
	return off;
}

Test(trcfile_full, a_full_disk_cuts_chunks_for_the_footer_and_counts_them_lost, .timeout = 60)
{
	signal(SIGXFSZ, SIG_IGN);
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/full.trc", dir);
	struct trcfile_writer_stats st;
	cr_assert_eq(tf_write(path, 0, &st), 0);
	cr_expect_eq(st.full_err, 0);
	uint64_t data_end = tf_footer_offset(path);

	/* Half the data: the chunk across the limit is dropped, and with it the rest. */
	uint64_t limit = data_end / 2;
	int err = tf_write(path, limit, &st);
	cr_assert_eq(err, 0, "close: %s", strerror(-err));
	cr_expect_eq(st.full_err, -EFBIG);
	size_t len;
	free(tu_read_file(path, &len));
	cr_expect_leq(len, limit, "the file passed the limit");

	char msg[256];
	struct trcfile_reader *r = NULL;
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_not(trcfile_reader_truncated(r), "the footer was written");
	struct trcfile_reader_stats rs;
	trcfile_reader_get_stats(r, &rs);
	cr_expect_eq(rs.chunks_missing, 0);
	struct trcfile_iter *it = trcfile_iter_new(r);
	cr_assert_not_null(it);
	uint64_t events = 0, lost = 0, losts = 0, notes = 0;
	struct trc_record rec;
	unsigned sidx;
	while ((err = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, sidx);
		if (trc_rec_is_event(rec.type)) {
			events++;
		} else if (rec.type == TRC_REC_LOST) {
			cr_expect_eq(rec.lost.reason, TRC_LOST_DISK_FULL);
			cr_expect_eq(si->tid, 101u, "the loss is the thread's");
			lost += rec.lost.count;
			losts++;
		} else if (rec.type == TRC_REC_NOTE) {
			cr_expect_eq(si->kind, TRC_STREAM_META);
			cr_expect_not_null(memmem(rec.note.text, rec.note.len, "the disk filled", 15));
			notes++;
		}
	}
	cr_expect_eq(err, 0, "%s", trcfile_reader_errmsg(r));
	trcfile_iter_free(it);
	cr_expect_eq(losts, 1);
	cr_expect_eq(notes, 1);
	cr_expect_gt(lost, 0);
	cr_expect_gt(events, 0);
	cr_expect_eq(events + lost, TF_EVENTS, "recorded %" PRIu64 " + lost %" PRIu64, events,
		     lost);
	cr_expect_eq(st.full_lost_events, lost);
	cr_expect_eq(st.full_events_unwritten, lost);
	/* The name's chunk, submitted at close after the disk filled, was kept and written. */
	uint32_t nlen = 0;
	const char *n = trcfile_reader_name(r, TF_NAME_ID, &nlen);
	cr_expect(n && tu_str_eq(n, nlen, "tf.work", 7), "the name was lost");
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* Without the flag a full disk is the writer's error, as any failed write (the compaction). */
Test(trcfile_full, without_the_flag_a_full_disk_is_an_error, .timeout = 60)
{
	signal(SIGXFSZ, SIG_IGN);
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/strict.trc", dir);
	struct rlimit old, low;
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 64u << 10;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *th = trcfile_stream_open(w, TRC_STREAM_THREAD, 100, 101);
	uint64_t ts = 1000;
	for (uint32_t i = 0; i < TF_EVENTS && !err; i++) {
		ts += 10 + (i * 2654435761u >> 24);
		struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = ts};
		r.value.name_id = 1;
		err = trcfile_stream_append(th, &r);
	}
	int cerr = trcfile_writer_close(w);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_expect(err == -EFBIG || cerr == -EFBIG, "append %d, close %d", err, cerr);
	tu_rm_rf(dir);
}

/* The writer's spill files share the trace's disk: when theirs is full too (here the file size
 * limit, 4 KiB), what they hold moves to memory and writing goes on, so that the full disk's
 * trace can still get its footer. */
Test(trcfile_full, a_spill_whose_disk_is_full_goes_on_in_memory, .timeout = 30)
{
	signal(SIGXFSZ, SIG_IGN);
	const char *dir = tu_tmpdir();
	struct trcfile__spill sp;
	trcfile__spill_init(&sp, dir);
	cr_assert_geq(sp.fd, 0, "no spill file in %s", dir);
	uint8_t buf[1024], got[1024];
	struct rlimit old, low;
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	low = old;
	low.rlim_cur = 4096;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	int err = 0;
	for (uint32_t i = 0; i < 16 && !err; i++) {
		memset(buf, (int)(i + 1), sizeof(buf));
		err = trcfile__spill_pwrite(&sp, buf, sizeof(buf), (uint64_t)i * sizeof(buf));
	}
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_expect_eq(err, 0, "spill write: %s", strerror(-err));
	cr_expect_eq(sp.fd, -1, "still in the file");
	cr_expect_eq(sp.len, 16u * sizeof(buf));
	for (uint32_t i = 0; i < 16; i++) {
		memset(buf, (int)(i + 1), sizeof(buf));
		cr_assert_eq(trcfile__spill_pread(&sp, got, sizeof(got), (uint64_t)i * sizeof(got)),
			     0);
		cr_expect_eq(memcmp(got, buf, sizeof(buf)), 0, "block %u", i);
	}
	trcfile__spill_free(&sp);
	tu_rm_rf(dir);
}
