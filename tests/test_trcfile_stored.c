/* test_trcfile_stored.c - stored chunks (FORMAT.md "Stored chunks") and compaction.
 *
 * The same records written three ways (every chunk compressed; every other chunk stored; every
 * chunk stored) must read back identically, through the footer and through the recovery scan
 * of a file cut before its footer (a recorder killed with stored chunks in the file). A damaged
 * stored payload is an error naming the chunk. trcfile_compact turns a mixed or footer-less
 * file into one with every chunk compressed and the same records. The fast CRC-32C agrees with
 * the table one. Seeds with stored chunks go to the fuzz corpus (TRC_WRITE_CORPUS=1 rewrites
 * them). A compressor that falls behind gets chunks stored instead of holding the appends.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_stored_util.h"
#include "trcfile_codec.h"
#include "trcfile_footer_walk.h"
#include "trcfile_reader_priv.h" /* the chunk index, for chunk sizes */
#include "trcfile_stored.h"

/* tu_small_plan plus a long thread stream of every event type (many chunks). */
static void big_plan(struct tu_plan *p)
{
	tu_small_plan(p);
	struct tu_stream *x = tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 4300);
	uint64_t t = 2000000000ull;
	for (uint32_t i = 0; i < 6000; i++) {
		struct trc_record r = {.type = 1 + i % 8, .ts_ns = t += 1 + (i % 7) * 100};
		switch (r.type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_SPAN_END:
			r.span.name_id = 1 + i % 5;
			break;
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			r.value.name_id = 1 + i % 5;
			r.value.value = (int64_t)i * -77;
			break;
		case TRC_REC_ALLOC:
		case TRC_REC_FREE:
			r.alloc.addr = 0x7f0000000000ull + (i % 300) * 64;
			r.alloc.size = r.type == TRC_REC_ALLOC ? i : 0;
			break;
		default:
			r.func.addr = 0x401000 + (i % 40) * 16;
			r.func.call_site = r.func.addr + 99;
			break;
		}
		tu_add(x, &r);
	}
}

/* Every record of a and b, merged in time order, equal one for one (max records of a when
 * b is a prefix: b_prefix). Returns the records compared. */
static size_t same_records(const char *a, const char *b, bool b_prefix)
{
	struct trcfile_reader *ra = tu_open_ok(a), *rb = tu_open_ok(b);
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
		if (b_prefix && kb == 0)
			break;
		cr_assert_eq(ka, kb, "record %zu: one file ended first", n);
		if (ka == 0)
			break;
		cr_assert(tu_rec_eq(&x, &y), "record %zu differs (types %u, %u)", n, x.type, y.type);
		cr_assert_eq(trcfile_reader_stream(ra, sx)->tid, trcfile_reader_stream(rb, sy)->tid);
		n++;
	}
	trcfile_iter_free(ia);
	trcfile_iter_free(ib);
	trcfile_reader_close(ra);
	trcfile_reader_close(rb);
	return n;
}

static const struct trcfile_writer_opts small_chunks = {
	.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
	.compress_threads = 2,
	.flags = TRCFILE_WRITER_NO_FSYNC,
};

Test(trcfile_stored, mixed_and_stored_files_read_back_identically, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300], c[300];
	snprintf(a, sizeof(a), "%s/compressed.trc", dir);
	snprintf(b, sizeof(b), "%s/mixed.trc", dir);
	snprintf(c, sizeof(c), "%s/stored.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	struct trcfile_writer_opts o = small_chunks;
	cr_assert_eq(tu_write_plan(a, &p, &o, 7), 0);
	o.store_one_in = 2;
	cr_assert_eq(tu_write_plan(b, &p, &o, 7), 0);
	o.store_one_in = 1;
	cr_assert_eq(tu_write_plan(c, &p, &o, 7), 0);

	unsigned st, co;
	tu_count_chunks(a, &st, &co);
	cr_assert_eq(st, 0);
	cr_assert_gt(co, 10);
	unsigned total = co;
	tu_count_chunks(b, &st, &co);
	cr_assert_eq(st + co, total);
	cr_assert(st >= total / 2 - 1 && co >= total / 2 - 1, "mixed: %u stored, %u compressed",
		  st, co);
	tu_count_chunks(c, &st, &co);
	cr_assert_eq(st, total);
	cr_assert_eq(co, 0);

	size_t n = tu_plan_records(&p);
	cr_assert_eq(same_records(a, b, false), n);
	cr_assert_eq(same_records(a, c, false), n);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A recorder killed with stored chunks in the file: no footer; the scan keeps every whole
 * chunk, stored or not. */
Test(trcfile_stored, a_file_cut_before_its_footer_is_read_up_to_its_last_whole_chunk, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300], cut[300], cut2[300];
	snprintf(a, sizeof(a), "%s/compressed.trc", dir);
	snprintf(b, sizeof(b), "%s/mixed.trc", dir);
	snprintf(cut, sizeof(cut), "%s/cut.trc", dir);
	snprintf(cut2, sizeof(cut2), "%s/cut2.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	struct trcfile_writer_opts o = small_chunks;
	o.compress_threads = 1;
	cr_assert_eq(tu_write_plan(a, &p, &o, 7), 0);
	o.store_one_in = 2;
	cr_assert_eq(tu_write_plan(b, &p, &o, 7), 0);

	size_t len;
	uint8_t *buf = tu_read_file(b, &len);
	uint64_t footer = trcfile__get64(buf + len - TRCFILE__TRAILER_BYTES);
	tu_write_file(cut, buf, footer); /* every chunk, no footer */
	struct trcfile_reader *r = tu_open_ok(cut);
	cr_assert(trcfile_reader_truncated(r));
	trcfile_reader_close(r);
	cr_assert_eq(same_records(a, cut, false), tu_plan_records(&p));

	/* Cut in the middle of the last chunk: a prefix of each stream survives. */
	tu_write_file(cut2, buf, footer - 100);
	r = tu_open_ok(cut2);
	struct trcfile_reader_stats rs;
	trcfile_reader_get_stats(r, &rs);
	cr_assert(rs.truncated);
	cr_assert_gt(rs.bytes_ignored, 0);
	uint64_t kept = rs.records;
	cr_assert_gt(kept, 0);
	cr_assert_lt(kept, tu_plan_records(&p));
	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	uint64_t got = 0;
	int k;
	while ((k = trcfile_iter_next(it, &rec, NULL)) == 1)
		got++;
	cr_assert_eq(k, 0, "%s", trcfile_reader_errmsg(r));
	cr_assert_eq(got, kept);
	trcfile_iter_free(it);
	trcfile_reader_close(r);
	free(buf);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A damaged chunk is skipped with its reason kept, the rest read (issue 12 item 15). */
Test(trcfile_stored, a_damaged_stored_payload_is_skipped_naming_the_chunk, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char b[300], bad[300];
	snprintf(b, sizeof(b), "%s/stored.trc", dir);
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	struct trcfile_writer_opts o = small_chunks;
	o.store_one_in = 1;
	cr_assert_eq(tu_write_plan(b, &p, &o, 7), 0);
	size_t len;
	uint8_t *buf = tu_read_file(b, &len);
	uint64_t off = trcfile__get32(buf + 16); /* the first chunk */
	buf[off + TRCFILE__CHUNK_HDR_BYTES + 5] ^= 0x40;
	tu_write_file(bad, buf, len);
	struct trcfile_reader *r = tu_open_ok(bad); /* the footer is fine */
	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	int k;
	uint64_t n = 0;
	while ((k = trcfile_iter_next(it, &rec, NULL)) == 1)
		n++;
	cr_assert_eq(k, 0);
	struct trcfile_reader_stats ds;
	trcfile_reader_get_stats(r, &ds);
	cr_assert_eq(ds.chunks_damaged, 1);
	cr_assert_lt(n, ds.records, "the damaged chunk's records are not read");
	cr_assert_gt(n, 0, "the other chunks are read");
	cr_assert(strstr(trcfile_reader_errmsg(r), "stored chunk payload checksum mismatch"), "%s",
		  trcfile_reader_errmsg(r));
	cr_assert(strstr(trcfile_reader_errmsg(r), "damaged chunk"), "%s",
		  trcfile_reader_errmsg(r));
	trcfile_iter_free(it);
	trcfile_reader_close(r);

	/* Without its footer the scan stops at that chunk: nothing after it is trusted. */
	uint64_t footer = trcfile__get64(buf + len - TRCFILE__TRAILER_BYTES);
	tu_write_file(bad, buf, footer);
	r = tu_open_ok(bad);
	struct trcfile_reader_stats rs;
	trcfile_reader_get_stats(r, &rs);
	cr_assert(rs.truncated);
	cr_assert_eq(rs.chunks, 0);
	cr_assert_eq(rs.bytes_recovered, off);
	trcfile_reader_close(r);
	free(buf);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

static uint64_t progress_calls, progress_last, progress_total;
static void on_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	progress_calls++;
	progress_last = done;
	progress_total = total;
}

Test(trcfile_stored, compact_compresses_every_stored_chunk_and_keeps_the_records, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300], out[300], cut[300], out2[300];
	snprintf(a, sizeof(a), "%s/compressed.trc", dir);
	snprintf(b, sizeof(b), "%s/mixed.trc", dir);
	snprintf(out, sizeof(out), "%s/compact.trc", dir);
	snprintf(cut, sizeof(cut), "%s/cut.trc", dir);
	snprintf(out2, sizeof(out2), "%s/compact2.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	struct trcfile_writer_opts o = small_chunks;
	cr_assert_eq(tu_write_plan(a, &p, &o, 7), 0);
	o.store_one_in = 3;
	cr_assert_eq(tu_write_plan(b, &p, &o, 7), 0);
	unsigned st_b, co_b, st, co;
	tu_count_chunks(b, &st_b, &co_b);
	cr_assert_gt(st_b, 0);

	char msg[512] = "";
	uint64_t stored_in = 0;
	struct trcfile_writer_opts co_opts = {.compress_threads = 2,
					      .flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(trcfile_compact(b, out, &co_opts, on_progress, NULL, &stored_in, msg,
				     sizeof(msg)),
		     0, "%s", msg);
	cr_assert_eq(stored_in, st_b);
	cr_assert_eq(progress_last, st_b + co_b);
	cr_assert_eq(progress_total, st_b + co_b);
	cr_assert_eq(progress_calls, st_b + co_b);
	tu_count_chunks(out, &st, &co);
	cr_assert_eq(st, 0);
	cr_assert_eq(co, st_b + co_b);
	cr_assert_eq(same_records(a, out, false), tu_plan_records(&p));
	/* Same streams, same sequence numbers and header. */
	struct trcfile_reader *ra = tu_open_ok(a), *ro = tu_open_ok(out);
	cr_assert_not(trcfile_reader_truncated(ro));
	cr_assert_eq(trcfile_reader_stream_count(ra), trcfile_reader_stream_count(ro));
	for (unsigned i = 0; i < trcfile_reader_stream_count(ra); i++) {
		const struct trcfile_stream_info *x = trcfile_reader_stream(ra, i),
						 *y = trcfile_reader_stream(ro, i);
		cr_assert(x->id == y->id && x->kind == y->kind && x->pid == y->pid &&
			  x->tid == y->tid && x->records == y->records && x->chunks == y->chunks);
	}
	cr_assert_eq(trcfile_reader_header(ro)->start_realtime_ns,
		     trcfile_reader_header(ra)->start_realtime_ns);
	cr_assert_str_eq(trcfile_reader_header(ro)->host, trcfile_reader_header(ra)->host);
	trcfile_reader_close(ra);
	trcfile_reader_close(ro);

	/* A file without a footer gets one. */
	size_t len;
	uint8_t *buf = tu_read_file(b, &len);
	tu_write_file(cut, buf, trcfile__get64(buf + len - TRCFILE__TRAILER_BYTES));
	free(buf);
	cr_assert_eq(trcfile_compact(cut, out2, &co_opts, NULL, NULL, NULL, msg, sizeof(msg)), 0,
		     "%s", msg);
	ro = tu_open_ok(out2);
	cr_assert_not(trcfile_reader_truncated(ro));
	trcfile_reader_close(ro);
	cr_assert_eq(same_records(a, out2, false), tu_plan_records(&p));

	/* A missing input is an error with a message. */
	snprintf(cut, sizeof(cut), "%s/none.trc", dir);
	cr_assert_eq(trcfile_compact(cut, out2, &co_opts, NULL, NULL, NULL, msg, sizeof(msg)),
		     -ENOENT);
	cr_assert(strstr(msg, "none.trc"), "%s", msg);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

Test(trcfile_stored, fast_crc32c_agrees_with_the_table, .timeout = 60)
{
	uint8_t buf[4096 + 16];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	cr_assert_eq(trcfile__crc32c_fast(0, "123456789", 9), 0xe3069283u); /* the check value */
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 300; len += 1 + len / 8)
			cr_assert_eq(trcfile__crc32c_fast(0, buf + off, len),
				     trcfile__crc32c(0, buf + off, len), "off %zu len %zu", off, len);
	cr_assert_eq(trcfile__crc32c_fast(7, buf, 4096), trcfile__crc32c(7, buf, 4096));
}

/* Seeds with stored chunks for the reader's fuzzer: a mixed file, and the same cut before
 * its footer. Written with TRC_WRITE_CORPUS=1; always read back here. */
Test(trcfile_stored, fuzz_seeds_with_stored_chunks, .timeout = 60)
{
	const char *wr = getenv("TRC_WRITE_CORPUS");
	char path[300];
	if (wr && *wr && strcmp(wr, "0")) {
		struct tu_plan p = {0};
		tu_small_plan(&p);
		struct trcfile_writer_opts o = {.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
						.compress_threads = 1,
						.flags = TRCFILE_WRITER_NO_FSYNC,
						.store_one_in = 2};
		snprintf(path, sizeof(path), "tests/corpus/reader/stored.trc");
		cr_assert_eq(tu_write_plan(path, &p, &o, 3), 0);
		size_t len;
		uint8_t *b = tu_read_file(path, &len);
		snprintf(path, sizeof(path), "tests/corpus/reader/stored_truncated.trc");
		tu_write_file(path, b, trcfile__get64(b + len - TRCFILE__TRAILER_BYTES) - 7);
		free(b);
		tu_plan_free(&p);
	}
	static const char *const seeds[] = {"stored.trc", "stored_truncated.trc"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "tests/corpus/reader/%s", seeds[i]);
		unsigned st, co;
		tu_count_chunks(path, &st, &co);
		cr_assert_gt(st, 0, "%s has stored chunks", path);
		cr_assert_gt(co, 0, "%s has compressed chunks", path);
		struct trcfile_reader *r = tu_open_ok(path);
		cr_assert_eq(trcfile_reader_truncated(r), i == 1);
		struct trcfile_iter *it = trcfile_iter_new(r);
		struct trc_record rec;
		int k;
		while ((k = trcfile_iter_next(it, &rec, NULL)) == 1)
			;
		cr_assert_eq(k, 0, "%s: %s", path, trcfile_reader_errmsg(r));
		trcfile_iter_free(it);
		trcfile_reader_close(r);
	}
}

/* The writer's memory does not grow with the streams open at once: open chunks share 32 MiB
 * (32 streams of 1 MiB chunks); past that, a new chunk ends at the smaller of 32 MiB / open
 * chunks and what the open ones left of the 32 MiB, at least 64 KiB. The records are the
 * same either way. */
static void budget_record(uint32_t k, uint32_t i, struct trc_record *r)
{
	*r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = 1000 + (uint64_t)i * 3};
	r->value.name_id = 1 + k;
	r->value.value = (int64_t)((uint64_t)i * 2654435761u ^ k);
}

Test(trcfile_stored, many_open_streams_share_the_open_chunk_budget, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/many.trc", dir);
	enum { STREAMS = 128, PER = 200000 };
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.compress_threads = 2, .flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w);
	static struct trcfile_stream *st[STREAMS];
	for (uint32_t k = 0; k < STREAMS; k++)
		st[k] = trcfile_stream_open(w, TRC_STREAM_THREAD, 1, k);
	for (uint32_t i = 0; i < PER; i += 100)
		for (uint32_t k = 0; k < STREAMS; k++)
			for (uint32_t j = i; j < i + 100; j++) {
				struct trc_record r;
				budget_record(k, j, &r);
				cr_assert_eq(trcfile_stream_append(st[k], &r), 0);
			}
	cr_assert_eq(trcfile_writer_close(w), 0);

	struct trcfile_reader *rd = tu_open_ok(path);
	cr_assert_eq(trcfile_reader_header(rd)->chunk_bytes, TRCFILE_DEFAULT_CHUNK_BYTES);
	cr_assert_eq(trcfile_reader_stream_count(rd), STREAMS);
	/* A chunk's size is decided when it is opened: the first chunks of the first streams
	 * were opened with few others open and may take 1 MiB; every later one shares. */
	uint64_t max_raw = 0, first_sum = 0;
	for (size_t i = 0; i < rd->n_chunks; i++) {
		if (rd->chunks[i].seq > 0 && rd->chunks[i].raw_bytes > max_raw)
			max_raw = rd->chunks[i].raw_bytes;
		if (rd->chunks[i].seq == 0)
			first_sum += rd->chunks[i].raw_bytes;
	}
	/* Every stream's first chunk was open at once (none fills in the first round): together
	 * they stay within the budget and 64 KiB per stream (a record's slack each). Sized by
	 * the fair share alone, the first 32 took 1 MiB each and the rest 32 MiB / k: 76 MiB. */
	cr_assert_leq(first_sum, (32u << 20) + STREAMS * ((64u << 10) + 160u),
		      "the first chunks of %d streams open at once hold %llu bytes", STREAMS,
		      (unsigned long long)first_sum);
	for (unsigned i = 0; i < STREAMS; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(rd, i);
		cr_assert_eq(si->records, PER);
		cr_assert_gt(si->chunks, 1, "stream %u: %u chunks", i, si->chunks);
		struct trcfile_cursor *c = trcfile_cursor_new(rd, i);
		struct trc_record got, want;
		for (uint32_t j = 0; j < PER; j++) {
			cr_assert_eq(trcfile_cursor_next(c, &got), 1);
			budget_record(si->tid, j, &want);
			cr_assert(tu_rec_eq(&got, &want), "stream %u record %u", i, j);
		}
		trcfile_cursor_free(c);
	}
	/* 128 open chunks: 256 KiB each (and a record's slack). A few streams may have none
	 * open when another opens one (a chunk that filled on the last record of its stream's
	 * turn is replaced on its next turn): the share is then 32 MiB / 123 here. */
	cr_assert_leq(max_raw, (32u << 20) / (STREAMS - 8) + 160, "largest chunk %llu bytes",
		      (unsigned long long)max_raw);
	cr_assert_geq(max_raw, (32u << 20) / STREAMS);
	trcfile_reader_close(rd);
	tu_rm_rf(dir);
}

/* ---- the streamed compaction (issue 12 item 10) ----------------------------------------- */

/* Whether trcfile_compact streams path (its footer walk takes it), and why not. */
static int footer_walk(const char *path, char *why, size_t why_len)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	cr_assert_eq(trcfile__reader_open_header(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	struct trcfile__footer_walk fw;
	const char *w = NULL;
	int k = trcfile__footer_walk_check(&fw, r, &w);
	snprintf(why, why_len, "%s", w ? w : "");
	trcfile__footer_walk_free(&fw);
	trcfile_reader_close(r);
	return k;
}

/* Same streams (id, kind, pid, tid, records, chunks) and header. */
static void same_streams(const char *a, const char *b)
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
			  "%s, %s: stream %u differs", a, b, i);
	}
	cr_assert_eq(trcfile_reader_header(ra)->start_realtime_ns,
		     trcfile_reader_header(rb)->start_realtime_ns);
	cr_assert_str_eq(trcfile_reader_header(ra)->host, trcfile_reader_header(rb)->host);
	trcfile_reader_close(ra);
	trcfile_reader_close(rb);
}

/* A mixed and an all-stored file, compacted the streamed way and the loading way: both read
 * back as the file that never had a stored chunk, record for record, stream for stream, and in
 * trace-dump's summary. */
Test(trcfile_stored, streamed_compaction_reads_back_as_the_loading_one, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], in[300], out_s[300], out_l[300], why[200];
	snprintf(a, sizeof(a), "%s/never_stored.trc", dir);
	snprintf(out_s, sizeof(out_s), "%s/streamed.trc", dir);
	snprintf(out_l, sizeof(out_l), "%s/loaded.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4301); /* a stream without a chunk */
	struct trcfile_writer_opts o = small_chunks;
	cr_assert_eq(tu_write_plan(a, &p, &o, 7), 0);
	char *json_a = tu_summary_json(dir, a);
	struct trcfile_writer_opts co = {.compress_threads = 2, .flags = TRCFILE_WRITER_NO_FSYNC};
	for (unsigned one_in = 1; one_in <= 3; one_in += 2) {
		snprintf(in, sizeof(in), "%s/stored_1_in_%u.trc", dir, one_in);
		o.store_one_in = one_in;
		cr_assert_eq(tu_write_plan(in, &p, &o, 7), 0);
		unsigned st_in, co_in, st, cc;
		tu_count_chunks(in, &st_in, &co_in);
		cr_assert_gt(st_in, 0);
		cr_assert_eq(footer_walk(in, why, sizeof(why)), 0, "%s", why);
		char msg[512] = "";
		uint64_t stored_s = 0, stored_l = 0;
		progress_calls = progress_last = progress_total = 0;
		cr_assert_eq(trcfile_compact(in, out_s, &co, on_progress, NULL, &stored_s, msg,
					     sizeof(msg)),
			     0, "%s", msg);
		cr_assert_eq(progress_calls, st_in + co_in);
		cr_assert_eq(progress_last, st_in + co_in);
		cr_assert_eq(progress_total, st_in + co_in);
		cr_assert_eq(trcfile__compact_loaded(in, out_l, &co, NULL, NULL, &stored_l, msg,
						     sizeof(msg)),
			     0, "%s", msg);
		cr_assert_eq(stored_s, st_in);
		cr_assert_eq(stored_l, st_in);
		tu_count_chunks(out_s, &st, &cc);
		cr_assert_eq(st, 0);
		cr_assert_eq(cc, st_in + co_in);
		cr_assert_eq(same_records(a, out_s, false), tu_plan_records(&p));
		cr_assert_eq(same_records(out_l, out_s, false), tu_plan_records(&p));
		same_streams(a, out_s);
		same_streams(out_l, out_s);
		/* Its own footer is one the next compaction streams too. */
		cr_assert_eq(footer_walk(out_s, why, sizeof(why)), 0, "%s", why);
		char *json_s = tu_summary_json(dir, out_s), *json_l = tu_summary_json(dir, out_l);
		cr_assert_str_eq(json_s, json_a);
		cr_assert_str_eq(json_l, json_a);
		free(json_s);
		free(json_l);
	}
	free(json_a);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* Footer surgery: the entries of a file image, rewritten with a valid checksum (what only a
 * crafted file has). */
struct footer_image {
	uint8_t *buf;
	size_t len;
	uint64_t off;
	uint32_t streams;
	uint64_t chunks;
};

static void footer_open(struct footer_image *f, const char *path)
{
	f->buf = tu_read_file(path, &f->len);
	f->off = trcfile__get64(f->buf + f->len - TRCFILE__TRAILER_BYTES);
	f->streams = trcfile__get32(f->buf + f->off + 4);
	f->chunks = trcfile__get64(f->buf + f->off + 8);
}

static uint8_t *footer_stream(struct footer_image *f, uint32_t i)
{
	return f->buf + f->off + trcfile__footer_stream_at(i);
}

static uint8_t *footer_chunk(struct footer_image *f, uint64_t i)
{
	return f->buf + f->off + trcfile__footer_chunk_at(f->streams, i);
}

static void footer_save(struct footer_image *f, const char *path)
{
	uint64_t bytes = f->len - TRCFILE__TRAILER_BYTES - f->off;
	struct trcfile__trailer t = {.footer_offset = f->off,
				     .footer_bytes = bytes,
				     .footer_crc = trcfile__crc32c(0, f->buf + f->off, bytes)};
	trcfile__trailer_put(f->buf + f->len - TRCFILE__TRAILER_BYTES, &t);
	tu_write_file(path, f->buf, f->len);
	free(f->buf);
}

/* Two chunk entries of one stream (the long one): indexes into the footer. */
static void two_chunks_of_a_stream(struct footer_image *f, uint64_t *x, uint64_t *y)
{
	for (uint64_t i = 0; i < f->chunks; i++)
		for (uint64_t j = i + 1; j < f->chunks; j++)
			if (trcfile__get32(footer_chunk(f, i) + 8) ==
			    trcfile__get32(footer_chunk(f, j) + 8)) {
				*x = i;
				*y = j;
				return;
			}
	cr_assert_fail("no stream with two chunks");
}

/* A footer whose checksum holds but which the walk cannot vouch for (as the reader's index
 * checks would not): the walk says why, and trcfile_compact takes the loading way, whose
 * output it gives (the reader recovers these by their chunks). */
Test(trcfile_stored, footers_the_walk_refuses_are_compacted_the_loading_way, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], in[300], bad[300], out_s[300], out_l[300], why[200];
	snprintf(a, sizeof(a), "%s/never_stored.trc", dir);
	snprintf(in, sizeof(in), "%s/stored.trc", dir);
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	snprintf(out_s, sizeof(out_s), "%s/out_s.trc", dir);
	snprintf(out_l, sizeof(out_l), "%s/out_l.trc", dir);
	struct tu_plan p = {0};
	big_plan(&p);
	struct trcfile_writer_opts o = small_chunks;
	cr_assert_eq(tu_write_plan(a, &p, &o, 7), 0);
	o.store_one_in = 1;
	cr_assert_eq(tu_write_plan(in, &p, &o, 7), 0);
	static const char *const want[] = {
		"chunk entries not in file order, or overlapping",
		"footer stream totals do not match its chunk entries",
		"a stream's chunk sequence numbers are not 0 .. chunks - 1",
		"a stream's chunk sequence numbers are not 0 .. chunks - 1",
		"no footer",
		"footer checksum mismatch",
	};
	for (unsigned c = 0; c < sizeof(want) / sizeof(want[0]); c++) {
		struct footer_image f;
		footer_open(&f, in);
		uint64_t x, y;
		two_chunks_of_a_stream(&f, &x, &y);
		uint8_t tmp[TRCFILE__FOOTER_CHUNK_BYTES];
		uint8_t *s0 = footer_stream(&f, 0), *s_last = footer_stream(&f, f.streams - 1);
		switch (c) {
		case 0: /* two entries swapped: the reader sorts them, the walk wants file order */
			memcpy(tmp, footer_chunk(&f, x), sizeof(tmp));
			memcpy(footer_chunk(&f, x), footer_chunk(&f, y), sizeof(tmp));
			memcpy(footer_chunk(&f, y), tmp, sizeof(tmp));
			break;
		case 1: /* a record moved from one stream's total to another's */
			trcfile__put64(s0 + 24, trcfile__get64(s0 + 24) + 1);
			trcfile__put64(s_last + 24, trcfile__get64(s_last + 24) - 1);
			break;
		case 2: /* two chunks of a stream with one sequence number */
			trcfile__put32(footer_chunk(&f, y) + 12,
				       trcfile__get32(footer_chunk(&f, x) + 12));
			break;
		case 3: /* a chunk moved from one stream's count to another's */
			trcfile__put32(s0 + 16, trcfile__get32(s0 + 16) + 1);
			trcfile__put32(s_last + 16, trcfile__get32(s_last + 16) - 1);
			break;
		case 4: /* a recorder killed: no footer */
			f.len = f.off;
			break;
		}
		if (c == 4) {
			tu_write_file(bad, f.buf, f.len);
			free(f.buf);
		} else {
			footer_save(&f, bad);
		}
		if (c == 5) { /* a damaged footer: one bit, checksum left as it was */
			size_t len;
			uint8_t *b = tu_read_file(bad, &len);
			b[f.off + trcfile__footer_stream_at(0) + 20] ^= 1; /* reserved */
			tu_write_file(bad, b, len);
			free(b);
		}
		cr_assert_eq(footer_walk(bad, why, sizeof(why)), 1, "case %u", c);
		cr_assert_str_eq(why, want[c], "case %u", c);
		char msg[512] = "";
		cr_assert_eq(trcfile_compact(bad, out_s, &small_chunks, NULL, NULL, NULL, msg,
					     sizeof(msg)),
			     0, "case %u: %s", c, msg);
		cr_assert_eq(trcfile__compact_loaded(bad, out_l, &small_chunks, NULL, NULL, NULL,
						     msg, sizeof(msg)),
			     0, "case %u: %s", c, msg);
		cr_assert_eq(same_records(a, out_s, false), tu_plan_records(&p), "case %u", c);
		same_streams(out_l, out_s);
		same_streams(a, out_s);
	}
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A file of n thread streams, each one stored chunk of 10 records: what trace-run writes for a
 * program that started n short-lived threads, with its compressors behind. */
static void write_short_streams(const char *path, uint32_t n)
{
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.compress_threads = 1,
					.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
					.store_one_in = 1,
					.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "%s", strerror(-err));
	for (uint32_t i = 0; i < n; i++) {
		struct trcfile_stream *s =
			trcfile_stream_open(w, TRC_STREAM_THREAD, 4242, 10000 + i);
		cr_assert_not_null(s);
		for (uint32_t k = 0; k < 10; k++) {
			struct trc_record r = {.type = TRC_REC_INSTANT,
					       .ts_ns = 1000000 + (uint64_t)i * 100 + k};
			r.value.name_id = 1;
			r.value.value = k;
			cr_assert_eq(trcfile_stream_append(s, &r), 0);
		}
		cr_assert_eq(trcfile_stream_end(s), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
}

static long status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* What trcfile_compact adds to a process's peak RSS, in KiB: run in a child whose peak is
 * first reset to its RSS (/proc/self/clear_refs 5), so only what the compaction touches counts.
 * -1 when the kernel cannot reset it. */
static long compact_peak_kib(const char *in, const char *out)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		long res[2] = {-1, -1};
		FILE *f = fopen("/proc/self/clear_refs", "w");
		if (f && fputs("5", f) >= 0 && fclose(f) == 0) {
			res[0] = status_kib("VmRSS:");
			struct trcfile_writer_opts co = {.compress_threads = 1,
							 .flags = TRCFILE_WRITER_NO_FSYNC};
			char msg[512];
			if (trcfile_compact(in, out, &co, NULL, NULL, NULL, msg, sizeof(msg)) != 0)
				_exit(2);
			res[1] = status_kib("VmHWM:");
		}
		_exit(write(fds[1], res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 3);
	}
	close(fds[1]);
	long res[2] = {-1, -1};
	cr_assert_eq(read(fds[0], res, sizeof(res)), (ssize_t)sizeof(res));
	close(fds[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "compaction child: status %d", st);
	return res[0] < 0 || res[1] < 0 ? -1 : res[1] - res[0];
}

/* Issue 12 item 10: trace-run's end-of-run compaction must not grow with the threads the
 * program ever started. The loading way took about 200 bytes a chunk (10 MB here for 50000
 * threads); the streamed way walks the footer in a fixed amount of memory. */
Test(trcfile_stored, compaction_memory_does_not_grow_with_the_streams, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char small[300], big[300], out[300];
	snprintf(small, sizeof(small), "%s/5000.trc", dir);
	snprintf(big, sizeof(big), "%s/50000.trc", dir);
	snprintf(out, sizeof(out), "%s/out.trc", dir);
	write_short_streams(small, 5000);
	write_short_streams(big, 50000);
	long k5 = compact_peak_kib(small, out);
	long k50 = compact_peak_kib(big, out);
	struct trcfile_reader *r = tu_open_ok(out);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	cr_assert_eq(trcfile_reader_stream_count(r), 50000);
	cr_assert_eq(st.records, 500000);
	trcfile_reader_close(r);
	unsigned stored, compressed;
	tu_count_chunks(out, &stored, &compressed);
	cr_assert_eq(stored, 0);
	cr_assert_eq(compressed, 50000);
	/* A sanitizer's allocator keeps freed memory in quarantine: RSS says nothing there. */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (k5 >= 0 && k50 >= 0 && !(tier && *tier))
		cr_expect_leq(k50, k5 + 2048,
			      "compaction peak +%ld KiB for 50000 streams, +%ld KiB "
			      "for 5000",
			      k50, k5);
	tu_rm_rf(dir);
}

/* Writes 400000 counters (pseudo-random values: zstd has work to do) to one stream with one
 * compressor at level 19 (milliseconds a 64 KiB chunk, against a fraction of one to append
 * it) and 2 chunks in flight; returns the chunks stored. */
static uint64_t write_behind(const char *path, uint32_t flags)
{
	enum { N = 400000 };
	struct trcfile_writer_opts o = {.zstd_level = 19,
					.compress_threads = 1,
					.chunk_bytes = 64 << 10,
					.max_chunks_in_flight = 2,
					.flags = TRCFILE_WRITER_NO_FSYNC | flags};
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	struct trcfile_stream *s = trcfile_stream_open(w, TRC_STREAM_THREAD, 4242, 4242);
	cr_assert_not_null(s);
	uint64_t x = 88172645463325252ull;
	for (uint32_t i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = 1000000000ull + i * 10ull};
		r.value.name_id = 1 + (uint32_t)(x % 3);
		r.value.value = (int64_t)(x >> 40);
		cr_assert_eq(trcfile_stream_append(s, &r), 0);
	}
	struct trcfile_writer_stats st;
	cr_assert_eq(trcfile_writer_close_stats(w, &st), 0);
	struct trcfile_reader *r = tu_open_ok(path);
	struct trcfile_reader_stats rs;
	trcfile_reader_get_stats(r, &rs);
	cr_assert_eq(rs.records, N, "%llu records", (unsigned long long)rs.records);
	trcfile_reader_close(r);
	return st.chunks_stored;
}

/* Issue 11 item 2: compression never holds the appending thread (the drain) back. With
 * TRCFILE_WRITER_STORE_WHEN_BEHIND, chunks the one slow compressor cannot take go to the file
 * stored; without it every chunk waits for the compressor. Either way every record reads back. */
Test(trcfile_stored, a_compressor_behind_gets_chunks_stored_instead_of_holding_appends,
     .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300];
	snprintf(a, sizeof(a), "%s/behind.trc", dir);
	snprintf(b, sizeof(b), "%s/waits.trc", dir);
	uint64_t stored = write_behind(a, TRCFILE_WRITER_STORE_WHEN_BEHIND);
	cr_assert_gt(stored, 0, "no chunk was stored while the compressor was behind");
	cr_assert_eq(write_behind(b, 0), 0);
	tu_rm_rf(dir);
}
