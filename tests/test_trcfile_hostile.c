/* test_trcfile_hostile.c - the reader on damaged and hostile files (also run under ASan+UBSan).
 *
 * Every case must end in either a clear error (non-empty message, negative errno) or a
 * truncated-but-correct result: each stream read back is exactly a prefix of what was
 * written. Never a crash, a hang, or an allocation the file's size does not justify.
 *   - truncation at every offset of a many-chunk trace (chunk boundaries and inside chunks,
 *     headers, footer, trailer);
 *   - one flipped byte at many offsets;
 *   - wrong magic, newer and older versions, big-endian mark, absurd header fields;
 *   - forged chunks with valid checksums and bad contents (overlong varints, strings past
 *     the chunk, wrong counts, huge sizes), forged footers;
 *   - a file whose chunks would need gigabytes to merge.
 */
#include <criterion/criterion.h>
#include <zstd.h>

#include "summary.h"
#include "test_trcfile_util.h"
#include "trcfile_codec.h"

/* Offset of a field in the file header, a chunk header, the footer and its entries, the
 * trailer (the codec's images: FORMAT.md's tables, written once). */
#define HZ_HDR(field) TRCFILE__OFFSET(file_hdr, field)
#define HZ_CHUNK(field) TRCFILE__OFFSET(chunk_hdr, field)
#define HZ_FOOTER(field) TRCFILE__OFFSET(footer, field)
#define HZ_FSTREAM(field) TRCFILE__OFFSET(footer_stream, field)
#define HZ_FCHUNK(field) TRCFILE__OFFSET(footer_chunk, field)
#define HZ_TRAILER(field) TRCFILE__OFFSET(trailer, field)

/* tu_header() as the codec's header, for files forged without the writer. */
static struct trcfile__file_hdr hz_file_hdr(uint32_t chunk_bytes)
{
	struct trcfile_header_info i = tu_header();
	struct trcfile__file_hdr h = {.version_major = TRCFILE_VERSION_MAJOR,
				      .version_minor = TRCFILE_VERSION_MINOR,
				      .pid = i.pid,
				      .clock_source = i.clock_source,
				      .start_mono_ns = i.start_mono_ns,
				      .start_realtime_ns = i.start_realtime_ns,
				      .rss_interval_ns = i.rss_interval_ns,
				      .rss_source = i.rss_source,
				      .chunk_bytes = chunk_bytes,
				      .buffer_bytes = i.buffer_bytes,
				      .cmdline = i.cmdline,
				      .cmdline_len = i.cmdline_len,
				      .host = i.host,
				      .host_len = (uint32_t)strlen(i.host),
				      .tool = i.tool_version,
				      .tool_len = (uint32_t)strlen(i.tool_version)};
	h.header_bytes = (uint32_t)trcfile__header_size(&h);
	return h;
}

static const struct trcfile_writer_opts hz_opts = {
	.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
	.compress_threads = 1, /* chunks reach the file in stream order: prefixes stay exact */
	.flags = TRCFILE_WRITER_NO_FSYNC,
};

/* The small plan plus two busy streams so the file has many chunks. */
static void hz_plan(struct tu_plan *p)
{
	tu_small_plan(p);
	uint64_t seed = 5;
	for (int i = 0; i < 2; i++) {
		struct tu_stream *s = tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 5000 + i);
		uint64_t t = 1000000000ull;
		/* ~9 raw bytes a record, compressible: many 4 KiB chunks in a small file */
		for (int k = 0; k < 2500; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			struct trc_record r = {.type = TRC_REC_COUNTER, .ts_ns = t += seed >> 59};
			r.value.name_id = 5;
			r.value.value = (1ll << 50) + (int64_t)(seed >> 60);
			tu_add(s, &r);
		}
	}
}

struct hz_file {
	uint8_t *buf;
	size_t len;
	struct tu_plan plan;
	uint32_t header_bytes;
	/* chunk extents, from a walk of the chunk headers */
	size_t n_chunks;
	uint64_t off[256], end[256];
	uint32_t count[256];
	uint64_t data_end; /* footer offset */
};

static void hz_index(struct hz_file *f);

static void hz_make(struct hz_file *f)
{
	memset(f, 0, sizeof(*f));
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	hz_plan(&f->plan);
	cr_assert_eq(tu_write_plan(path, &f->plan, &hz_opts, 100), 0);
	f->buf = tu_read_file(path, &f->len);
	tu_rm_rf(dir);
	hz_index(f);
	cr_assert_gt(f->n_chunks, 10, "want many chunks, got %zu", f->n_chunks);
}

/* Fills f's chunk extents from f->buf (a file with a footer). */
static void hz_index(struct hz_file *f)
{
	f->header_bytes = trcfile__get32(f->buf + HZ_HDR(header_bytes));
	uint64_t off = f->header_bytes;
	f->data_end = trcfile__get64(f->buf + f->len - TRCFILE__TRAILER_BYTES +
				     HZ_TRAILER(footer_offset));
	while (off < f->data_end) {
		cr_assert_lt(f->n_chunks, 256);
		cr_assert_eq(trcfile__get32(f->buf + off + HZ_CHUNK(magic)), TRCFILE__CHUNK_MAGIC);
		f->off[f->n_chunks] = off;
		f->count[f->n_chunks] = trcfile__get32(f->buf + off + HZ_CHUNK(count));
		off += TRCFILE__CHUNK_HDR_BYTES +
		       trcfile__get32(f->buf + off + HZ_CHUNK(comp_bytes));
		f->end[f->n_chunks++] = off;
	}
	cr_assert_eq(off, f->data_end);
}

/* Offsets worth every byte: the file header, each chunk header and the first bytes of its
 * frame (zstd's frame header), the footer and trailer. Elsewhere (inside compressed frames,
 * where one checksum covers every byte alike) every `stride`-th offset. */
static bool hz_interesting(const struct hz_file *f, size_t off, size_t stride)
{
	if (off <= f->header_bytes + 2 || off + 2 >= f->data_end)
		return true;
	for (size_t i = 0; i < f->n_chunks; i++)
		if (off + 2 >= f->off[i] && off <= f->off[i] + TRCFILE__CHUNK_HDR_BYTES + 8)
			return true;
	return off % stride == 0;
}

static void hz_free(struct hz_file *f)
{
	free(f->buf);
	tu_plan_free(&f->plan);
}

/* Reads everything (merged, per stream, summary). Returns -1 when the file was refused or
 * reading failed with an error; else the number of records, after checking each stream is a
 * prefix of the plan. */
static long hz_read_all(const uint8_t *buf, size_t len, const struct tu_plan *plan,
			struct trcfile_reader_stats *st)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	int err = trcfile_reader_open_mem(buf, len, &r, msg, sizeof(msg));
	if (err) {
		cr_assert_lt(err, 0);
		cr_assert_null(r);
		cr_assert_neq(msg[0], 0, "an error without a message");
		return -1;
	}
	trcfile_reader_get_stats(r, st);
	long total = 0;
	bool failed = false;
	/* Per stream: an exact prefix of what was written to the stream with that id. */
	for (unsigned s = 0; s < trcfile_reader_stream_count(r) && !failed; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		cr_assert_lt(si->id, plan->n, "stream id %u was never written", si->id);
		const struct tu_stream *ps = &plan->streams[si->id];
		cr_assert_eq(si->kind, ps->kind);
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		struct trc_record rec;
		size_t k = 0, got = 0;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) == 1) {
			got++;
			/* A damaged chunk is skipped (issue 12 item 15): the stream is then the
			 * plan with whole chunks missing, never a record that was not written. */
			if (k < ps->n && !tu_rec_eq(&rec, &ps->recs[k])) {
				struct trcfile_reader_stats now;
				trcfile_reader_get_stats(r, &now);
				while (now.chunks_damaged && k < ps->n &&
				       !tu_rec_eq(&rec, &ps->recs[k]))
					k++;
			}
			/* plain ifs: a passing cr_assert per record costs more than the read */
			if (k >= ps->n || !tu_rec_eq(&rec, &ps->recs[k]))
				cr_assert_fail("stream %u record %zu differs", si->id, k);
			k++;
		}
		if (rc < 0) {
			cr_assert_neq(trcfile_reader_errmsg(r)[0], 0);
			failed = true;
		}
		cr_assert_eq(si->records >= k, true);
		total += (long)got;
		trcfile_cursor_free(c);
	}
	/* The merge and the summary must agree or fail cleanly too. */
	struct trcfile_iter *it = trcfile_iter_new(r);
	cr_assert_not_null(it);
	struct trc_record rec;
	long merged = 0;
	uint64_t prev = 0;
	int rc;
	while ((rc = trcfile_iter_next(it, &rec, NULL)) == 1) {
		if (rec.ts_ns < prev)
			cr_assert_fail("merge out of order");
		prev = rec.ts_ns;
		merged++;
	}
	trcfile_iter_free(it);
	if (!failed) {
		cr_assert_eq(rc, 0, "%s", trcfile_reader_errmsg(r));
		cr_assert_eq(merged, total);
	}
	struct summary sm;
	err = summary_compute(r, &sm);
	if (!err) {
		cr_assert_not(failed, "summary succeeded where the cursors failed");
		cr_assert_eq(sm.records, (uint64_t)total);
		summary_free(&sm);
	}
	trcfile_reader_close(r);
	return failed ? -1 : total;
}

Test(trcfile_hostile, truncation_at_every_offset, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	long full = (long)tu_plan_records(&f.plan);
	size_t tried = 0;
	for (size_t cut = 0; cut <= f.len; cut++) {
		if (!hz_interesting(&f, cut, 11))
			continue;
		tried++;
		/* A copy of exactly cut bytes, so ASan sees any read past the end. */
		uint8_t *b = malloc(cut ? cut : 1);
		memcpy(b, f.buf, cut);
		struct trcfile_reader_stats st;
		long n = hz_read_all(b, cut, &f.plan, &st);
		free(b);
		if (cut < f.header_bytes) {
			cr_assert_eq(n, -1, "cut %zu inside the header was accepted", cut);
			continue;
		}
		cr_assert_geq(n, 0, "cut %zu: whole chunks are readable", cut);
		long want = 0;
		for (size_t i = 0; i < f.n_chunks; i++)
			if (f.end[i] <= cut)
				want += f.count[i];
		cr_assert_eq(n, want, "cut %zu: read %ld records, %ld in whole chunks", cut, n,
			     want);
		if (cut == f.len) {
			cr_assert_not(st.truncated);
			cr_assert_eq(n, full);
		} else {
			cr_assert(st.truncated, "cut %zu not reported truncated", cut);
			cr_assert_eq(st.bytes_recovered + st.bytes_ignored, cut);
		}
	}
	cr_assert_gt(tried, f.n_chunks * 70);
	hz_free(&f);
}

Test(trcfile_hostile, flipped_bytes, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	uint8_t *b = malloc(f.len);
	size_t accepted = 0, refused = 0;
	for (size_t off = 0; off < f.len; off++) {
		if (!hz_interesting(&f, off, 7))
			continue;
		memcpy(b, f.buf, f.len);
		b[off] ^= (uint8_t)(1u << (off % 8));
		struct trcfile_reader_stats st;
		long n = hz_read_all(b, f.len, &f.plan, &st);
		if (n < 0)
			refused++;
		else
			accepted++;
	}
	cr_assert_gt(refused, 0);
	cr_assert_gt(accepted, 0);
	free(b);
	hz_free(&f);
}

/* ---- forged files ----------------------------------------------------------------------- */

static void hz_fix_header_crc(uint8_t *b)
{
	uint32_t hb = trcfile__get32(b + HZ_HDR(header_bytes));
	uint32_t crc_at = hb - TRCFILE__HDR_CRC_BYTES;
	trcfile__put32(b + crc_at, trcfile__crc32c(0, b, crc_at));
}

static int hz_open_msg(const uint8_t *b, size_t len, char *msg, size_t n)
{
	struct trcfile_reader *r = NULL;
	int err = trcfile_reader_open_mem(b, len, &r, msg, n);
	trcfile_reader_close(r);
	return err;
}

Test(trcfile_hostile, header_checks_and_versions, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	uint8_t *b = malloc(f.len);
	char msg[512];

	memcpy(b, f.buf, f.len);
	b[1] = 'X';
	cr_assert_eq(hz_open_msg(b, f.len, msg, sizeof(msg)), -EBADMSG);
	cr_assert(strstr(msg, "magic"), "%s", msg);

	memcpy(b, f.buf, f.len);
	trcfile__put16(b + HZ_HDR(version_major), TRCFILE_VERSION_MAJOR + 1);
	trcfile__put16(b + HZ_HDR(version_minor), 0);
	hz_fix_header_crc(b);
	cr_assert_eq(hz_open_msg(b, f.len, msg, sizeof(msg)), -EPROTONOSUPPORT);
	cr_assert(strstr(msg, "newer"), "%s", msg);
	cr_assert(strstr(msg, "2.0"), "%s", msg);

	memcpy(b, f.buf, f.len);
	trcfile__put16(b + HZ_HDR(version_major), 0);
	hz_fix_header_crc(b);
	cr_assert_eq(hz_open_msg(b, f.len, msg, sizeof(msg)), -EBADMSG);

	/* A newer minor version is read. */
	memcpy(b, f.buf, f.len);
	trcfile__put16(b + HZ_HDR(version_minor), TRCFILE_VERSION_MINOR + 7);
	hz_fix_header_crc(b);
	cr_assert_eq(hz_open_msg(b, f.len, msg, sizeof(msg)), 0, "%s", msg);

	memcpy(b, f.buf, f.len);
	trcfile__put32(b + HZ_HDR(endian_mark), 0x04030201);
	hz_fix_header_crc(b);
	cr_assert_eq(hz_open_msg(b, f.len, msg, sizeof(msg)), -EBADMSG);
	cr_assert(strstr(msg, "big-endian"), "%s", msg);

	/* Absurd sizes with valid checksums. */
	static const struct {
		size_t off;
		uint32_t v;
	} bad[] = {
		{HZ_HDR(header_bytes), 0xffffffffu},
		{HZ_HDR(header_bytes), 99},
		{HZ_HDR(chunk_bytes), 0},
		{HZ_HDR(chunk_bytes), 0xffffffffu},
		{HZ_HDR(cmdline_len), 0xffffffffu},
		{HZ_HDR(host_len), 0xfffffff0u},
		{HZ_HDR(tool_len), TRCFILE_MAX_STRING_BYTES + 1},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(b, f.buf, f.len);
		trcfile__put32(b + bad[i].off, bad[i].v);
		if (bad[i].off != HZ_HDR(header_bytes))
			hz_fix_header_crc(b);
		int err = hz_open_msg(b, f.len, msg, sizeof(msg));
		cr_assert_eq(err, -EBADMSG, "field at %zu = %u: %d", bad[i].off, bad[i].v, err);
		cr_assert_neq(msg[0], 0);
	}

	/* Too small, empty, not a file. */
	cr_assert_eq(hz_open_msg(f.buf, 10, msg, sizeof(msg)), -EBADMSG);
	cr_assert(strstr(msg, "too small"), "%s", msg);
	cr_assert_eq(hz_open_msg(NULL, 0, msg, sizeof(msg)), -EBADMSG);
	struct trcfile_reader *r = NULL;
	cr_assert_eq(trcfile_reader_open("/nonexistent/x.trc", &r, msg, sizeof(msg)), -ENOENT);
	cr_assert(strstr(msg, "/nonexistent/x.trc"), "%s", msg);
	cr_assert_eq(trcfile_reader_open("/", &r, msg, sizeof(msg)), -EINVAL);
	free(b);
	hz_free(&f);
}

/* Rewrites chunk i's header with field at `off` = v and a valid checksum, and the footer
 * entry accordingly when fix_footer, so only deeper checks can catch it. */
static void hz_forge_chunk_field(uint8_t *b, const struct hz_file *f, size_t i, size_t off,
				 uint32_t v)
{
	uint8_t *h = b + f->off[i];
	trcfile__put32(h + off, v);
	trcfile__put32(h + HZ_CHUNK(crc), trcfile__crc32c(0, h, HZ_CHUNK(crc)));
}

Test(trcfile_hostile, forged_chunk_headers, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	uint8_t *b = malloc(f.len);
	struct trcfile_reader_stats st;
	/* Fields a valid checksum does not make true: count, raw and compressed sizes, kind,
	 * reserved bits. With the footer intact the index disagrees (error when the chunk is
	 * read); without it the scan stops there (truncated, earlier chunks intact). */
	static const struct {
		size_t off;
		uint32_t v;
		bool footer_only; /* a plausible value: only the index can tell it is wrong */
	} bad[] = {
		{HZ_CHUNK(count), 0xffffffffu, false}, {HZ_CHUNK(count), 0, false},
		{HZ_CHUNK(count), 1, false},	       {HZ_CHUNK(raw_bytes), 0xffffffffu, false},
		{HZ_CHUNK(raw_bytes), 3, false},       {HZ_CHUNK(comp_bytes), 0xffffffffu, false},
		{HZ_CHUNK(comp_bytes), 1, false},      {HZ_CHUNK(kind), 7, false},
		{HZ_CHUNK(flags), 1, false},	       {HZ_CHUNK(payload_crc), 9, false},
		{HZ_CHUNK(seq), 1000, true},	       {HZ_CHUNK(stream_id), 77, true},
	};
	size_t i = f.n_chunks / 2;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memcpy(b, f.buf, f.len);
		hz_forge_chunk_field(b, &f, i, bad[k].off, bad[k].v);
		long n = hz_read_all(b, f.len, &f.plan, &st);
		cr_assert(n < (long)tu_plan_records(&f.plan), "field %zu = %u went unnoticed",
			  bad[k].off, bad[k].v);
		if (bad[k].footer_only)
			continue;
		/* no footer: scan mode */
		long n2 = hz_read_all(b, f.data_end, &f.plan, &st);
		if (n2 >= 0) {
			cr_assert(st.truncated);
			long want = 0;
			for (size_t j = 0; j < i; j++)
				want += f.count[j];
			cr_assert_geq(n2, want, "field %zu = %u: lost chunks before it", bad[k].off,
				      bad[k].v);
		}
	}
	free(b);
	hz_free(&f);
}

Test(trcfile_hostile, forged_footers, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	uint8_t *b = malloc(f.len);
	struct trcfile_reader_stats st;
	long full = (long)tu_plan_records(&f.plan);
	uint64_t foff = f.data_end;
	size_t fbytes = f.len - TRCFILE__TRAILER_BYTES - foff;
	uint32_t n_streams = trcfile__get32(f.buf + foff + HZ_FOOTER(stream_count));
	uint8_t *chunks0 = NULL, *chunks1 = NULL;
	/* Each forgery gets valid footer and trailer checksums: the consistency checks must
	 * catch it, and the reader falls back to the scan (everything still readable). */
	for (int k = 0; k < 9; k++) {
		memcpy(b, f.buf, f.len);
		uint8_t *ft = b + foff;
		chunks0 = ft + trcfile__footer_chunk_at(n_streams, 0);
		chunks1 = ft + trcfile__footer_chunk_at(n_streams, 1);
		switch (k) {
		case 0:
			trcfile__put64(ft + HZ_FOOTER(chunk_count), 0xffffffffffffull);
			break;
		case 1:
			trcfile__put32(ft + HZ_FOOTER(stream_count), 0xffffffu);
			break;
		case 2: /* offset past the end */
			trcfile__put64(chunks0 + HZ_FCHUNK(offset), f.len * 4);
			break;
		case 3: /* offset inside the header */
			trcfile__put64(chunks0 + HZ_FCHUNK(offset), 3);
			break;
		case 4: /* overlap */
			trcfile__put64(chunks1 + HZ_FCHUNK(offset),
				       trcfile__get64(chunks0 + HZ_FCHUNK(offset)));
			break;
		case 5: /* unknown stream */
			trcfile__put32(chunks0 + HZ_FCHUNK(stream_id), 999);
			break;
		case 6: /* totals */
			trcfile__put32(chunks0 + HZ_FCHUNK(count),
				       trcfile__get32(chunks0 + HZ_FCHUNK(count)) + 1);
			break;
		case 7: /* duplicate seq */
			trcfile__put32(chunks0 + HZ_FCHUNK(seq),
				       trcfile__get32(chunks1 + HZ_FCHUNK(seq)));
			trcfile__put32(chunks0 + HZ_FCHUNK(stream_id),
				       trcfile__get32(chunks1 + HZ_FCHUNK(stream_id)));
			break;
		case 8: /* stream kind */
			trcfile__put32(ft + trcfile__footer_stream_at(0) + HZ_FSTREAM(kind), 0);
			break;
		}
		uint8_t *t = b + f.len - TRCFILE__TRAILER_BYTES;
		trcfile__put32(t + HZ_TRAILER(footer_crc), trcfile__crc32c(0, ft, fbytes));
		trcfile__put32(t + HZ_TRAILER(trailer_crc),
			       trcfile__crc32c(0, t, HZ_TRAILER(trailer_crc)));
		long n = hz_read_all(b, f.len, &f.plan, &st);
		cr_assert_eq(n, full, "forgery %d: %ld of %ld records", k, n, full);
		cr_assert(st.footer_damaged, "forgery %d not noticed", k);
		cr_assert(st.truncated);
	}
	/* A trailer pointing anywhere. */
	static const uint64_t offs[] = {0, 1, UINT64_MAX, UINT64_MAX - 31};
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		memcpy(b, f.buf, f.len);
		uint8_t *t = b + f.len - TRCFILE__TRAILER_BYTES;
		trcfile__put64(t + HZ_TRAILER(footer_offset), offs[k]);
		trcfile__put64(t + HZ_TRAILER(footer_bytes), UINT64_MAX - offs[k]);
		trcfile__put32(t + HZ_TRAILER(trailer_crc),
			       trcfile__crc32c(0, t, HZ_TRAILER(trailer_crc)));
		cr_assert_eq(hz_read_all(b, f.len, &f.plan, &st), full);
		cr_assert(st.footer_damaged);
	}
	free(b);
	hz_free(&f);
}

/* ---- forged chunk contents (valid frames, bad records) -------------------------------------- */

/* A file of one header and one chunk of stream 0 (thread) holding `raw`, no footer. */
static uint8_t *hz_one_chunk(const uint8_t *raw, size_t raw_len, uint32_t count, uint64_t first,
			     uint64_t last, size_t *len)
{
	struct trcfile__file_hdr h = hz_file_hdr(TRCFILE_MIN_CHUNK_BYTES);
	size_t hb = h.header_bytes;
	size_t cap = hb + TRCFILE__CHUNK_HDR_BYTES + ZSTD_compressBound(raw_len);
	uint8_t *b = calloc(1, cap);
	trcfile__header_put(b, &h);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	size_t n = ZSTD_compress2(cc, b + hb + TRCFILE__CHUNK_HDR_BYTES,
				  cap - hb - TRCFILE__CHUNK_HDR_BYTES, raw, raw_len);
	cr_assert_not(ZSTD_isError(n));
	ZSTD_freeCCtx(cc);
	struct trcfile__chunk_hdr ch = {.stream_id = 0,
					.seq = 0,
					.kind = TRC_STREAM_THREAD,
					.pid = 1,
					.tid = 2,
					.first_ts = first,
					.last_ts = last,
					.count = count,
					.raw_bytes = (uint32_t)raw_len,
					.comp_bytes = (uint32_t)n};
	trcfile__chunk_hdr_put(b + hb, &ch);
	*len = hb + TRCFILE__CHUNK_HDR_BYTES + n;
	return b;
}

static int hz_read_chunk(const uint8_t *raw, size_t raw_len, uint32_t count, uint64_t last,
			 char *msg, size_t msg_len)
{
	size_t len;
	uint8_t *b = hz_one_chunk(raw, raw_len, count, 100, last, &len);
	struct trcfile_reader *r = NULL;
	int err = trcfile_reader_open_mem(b, len, &r, msg, msg_len);
	if (!err) {
		struct trcfile_cursor *c = trcfile_cursor_new(r, 0);
		struct trc_record rec;
		while ((err = trcfile_cursor_next(c, &rec)) == 1)
			;
		snprintf(msg, msg_len, "%s", trcfile_reader_errmsg(r));
		trcfile_cursor_free(c);
		/* the summary's own decoder must agree */
		struct summary s;
		int err2 = summary_compute(r, &s);
		if (!err2)
			summary_free(&s);
		cr_assert_eq(err2 < 0, err < 0, "summary and cursor disagree: %d %d", err2, err);
		/* and say the same (the summary's fast path decodes on its own) */
		if (err2 < 0)
			cr_assert_str_eq(trcfile_reader_errmsg(r), msg);
		trcfile_reader_close(r);
	}
	free(b);
	return err;
}

Test(trcfile_hostile, forged_records, .timeout = 60)
{
	char msg[512];
	/* Valid: span_begin delta 0 name 1; span_end delta 5 name 1. */
	uint8_t ok[] = {1, 0, 1, 2, 5, 1};
	cr_assert_eq(hz_read_chunk(ok, sizeof(ok), 2, 105, msg, sizeof(msg)), 0, "%s", msg);
	/* Wrong last time, wrong counts. */
	cr_assert_eq(hz_read_chunk(ok, sizeof(ok), 2, 106, msg, sizeof(msg)), -EBADMSG);
	cr_assert(strstr(msg, "last record"), "%s", msg);
	cr_assert_eq(hz_read_chunk(ok, sizeof(ok), 1, 100, msg, sizeof(msg)), -EBADMSG);
	cr_assert_eq(hz_read_chunk(ok, sizeof(ok), 3, 105, msg, sizeof(msg)), -EBADMSG);

	/* Each is refused where the bad record starts (issue 13: not by a later check, such as
	 * the last record's time, that a decoder reading past the bad field would reach). */
	struct {
		uint8_t raw[40];
		size_t len;
		uint32_t count;
		const char *want;
	} bad[] = {
		/* overlong varint (11 bytes) */
		{{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1},
		 13,
		 1,
		 "bad record at byte 0"},
		/* 10th byte above 1: does not fit 64 bits */
		{{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 1},
		 12,
		 1,
		 "bad record at byte 0"},
		/* the same after a valid record */
		{{1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 1},
		 15,
		 2,
		 "bad record at byte 3"},
		{{1, 0, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1},
		 16,
		 2,
		 "bad record at byte 3"},
		/* name id above 32 bits: refused, not cut to 32 bits (span, counter, name) */
		{{1, 0, 0x80, 0x80, 0x80, 0x80, 0x10}, 7, 1, "bad record at byte 0"},
		{{1, 0, 1, TRC_REC_COUNTER, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 2},
		 11,
		 2,
		 "bad record at byte 3"},
		{{TRC_REC_NAME, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 'x'},
		 9,
		 1,
		 "bad record at byte 0"},
		/* unknown types, reserved bits */
		{{0, 0, 0, 0}, 4, 2, "bad record at byte 0"},
		{{17, 0, 0, 0}, 4, 2, "bad record at byte 0"},
		{{0x21, 0, 1, 0}, 4, 2, "bad record at byte 0"},
		/* a string longer than the chunk, and longer than allowed */
		{{TRC_REC_NOTE, 0, 0x20, 'a', 'b'}, 5, 1, "bad record at byte 0"},
		{{TRC_REC_NOTE, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'},
		 8,
		 1,
		 "bad record at byte 0"},
		/* a record cut short */
		{{TRC_REC_RSS, 0, 1, 1, 1, 1}, 6, 1, "bad record at byte 0"},
		/* exit status out of 32 bits */
		{{TRC_REC_EXIT, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 0},
		 10,
		 1,
		 "bad record at byte 0"},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		int err =
			hz_read_chunk(bad[k].raw, bad[k].len, bad[k].count, 100, msg, sizeof(msg));
		cr_assert_eq(err, -EBADMSG, "case %zu: %d", k, err);
		char want[200];
		snprintf(want, sizeof(want), "damaged chunk 0 of stream 0 at offset %u: %s",
			 hz_file_hdr(TRCFILE_MIN_CHUNK_BYTES).header_bytes, bad[k].want);
		cr_assert_str_eq(msg, want, "case %zu", k);
	}

	/* The cases of varints and name ids again where the fast decoders meet them (more than
	 * 160 bytes left in the chunk): the bad record first, then 100 valid ones. */
	static const struct {
		uint8_t head[16];
		size_t len;
	} fast_bad[] = {
		{{TRC_REC_SPAN_BEGIN, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
		  1},
		 12},
		{{TRC_REC_SPAN_BEGIN, 0, 0x80, 0x80, 0x80, 0x80, 0x10}, 7},
		{{TRC_REC_SPAN_END, 0, 0x81, 0x80, 0x80, 0x80, 0x10}, 7},
		{{TRC_REC_COUNTER, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 2}, 8},
		{{TRC_REC_INSTANT, 0, 0xff, 0xff, 0xff, 0xff, 0x1f, 2}, 8},
		{{TRC_REC_COUNTER, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		  0x02},
		 13},
		{{TRC_REC_ALLOC, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03},
		 13},
	};
	for (size_t k = 0; k < sizeof(fast_bad) / sizeof(fast_bad[0]); k++) {
		uint8_t raw[400];
		size_t n = fast_bad[k].len;
		memcpy(raw, fast_bad[k].head, n);
		for (int i = 0; i < 100; i++) {
			raw[n++] = TRC_REC_SPAN_BEGIN;
			raw[n++] = 1;
			raw[n++] = 3;
		}
		cr_assert_eq(hz_read_chunk(raw, n, 101, 200, msg, sizeof(msg)), -EBADMSG,
			     "fast case %zu accepted", k);
		cr_assert(strstr(msg, ": bad record at byte 0"), "fast case %zu: %s", k, msg);
	}

	/* The same records long enough for the summary's fast path (>= 160 bytes left). */
	uint8_t big[400];
	size_t n = 0;
	big[n++] = TRC_REC_SPAN_END;
	big[n++] = 1;
	for (int i = 0; i < 10; i++)
		big[n++] = 0x80; /* overlong name id, first, so the fast path meets it */
	big[n++] = 1;
	for (int i = 0; i < 100; i++) {
		big[n++] = TRC_REC_SPAN_BEGIN;
		big[n++] = 1;
		big[n++] = 3;
	}
	cr_assert_eq(hz_read_chunk(big, n, 101, 201, msg, sizeof(msg)), -EBADMSG);
	cr_assert(strstr(msg, "bad record at byte 0"), "%s", msg);
	/* and the same chunk made valid reads */
	big[2] = 3;
	memmove(big + 3, big + 12, n - 12);
	n -= 9;
	cr_assert_eq(hz_read_chunk(big, n, 101, 201, msg, sizeof(msg)), 0, "%s", msg);
}

/* Chunks that decompress to the most the header allows, in many streams: a merge would need
 * gigabytes, and is refused with a message instead of allocating. */
Test(trcfile_hostile, merge_memory_is_bounded, .timeout = 60)
{
	enum { STREAMS = 160 };
	size_t raw_len = TRCFILE_MAX_CHUNK_BYTES;
	uint8_t *raw = calloc(1, raw_len);
	for (size_t i = 0; i + 3 <= raw_len; i += 3) {
		raw[i] = TRC_REC_SPAN_BEGIN; /* delta 0, name 0 */
	}
	size_t records = raw_len / 3;
	cr_assert_eq(raw_len % 3, 1);
	raw[raw_len - 1] = 0;
	/* The last byte must belong to a record: make the last one a 4-byte span_begin with a
	 * two-byte name id. */
	raw[raw_len - 4] = TRC_REC_SPAN_BEGIN;
	raw[raw_len - 3] = 0;
	raw[raw_len - 2] = 0x80;
	raw[raw_len - 1] = 0x00;
	size_t fcap = ZSTD_compressBound(raw_len);
	uint8_t *frame = malloc(fcap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	size_t flen = ZSTD_compress2(cc, frame, fcap, raw, raw_len);
	cr_assert_not(ZSTD_isError(flen));
	ZSTD_freeCCtx(cc);
	free(raw);

	struct trcfile__file_hdr h = hz_file_hdr(TRCFILE_MAX_CHUNK_BYTES);
	size_t hb = h.header_bytes;
	size_t len = hb + STREAMS * (TRCFILE__CHUNK_HDR_BYTES + flen);
	uint8_t *b = calloc(1, len);
	trcfile__header_put(b, &h);
	size_t off = hb;
	for (uint32_t s = 0; s < STREAMS; s++) {
		struct trcfile__chunk_hdr ch = {.stream_id = s,
						.kind = TRC_STREAM_THREAD,
						.pid = 1,
						.tid = s,
						.first_ts = 0,
						.last_ts = 0,
						.count = (uint32_t)records,
						.raw_bytes = (uint32_t)raw_len,
						.comp_bytes = (uint32_t)flen};
		trcfile__chunk_hdr_put(b + off, &ch);
		memcpy(b + off + TRCFILE__CHUNK_HDR_BYTES, frame, flen);
		off += TRCFILE__CHUNK_HDR_BYTES + flen;
	}
	free(frame);
	struct trcfile_reader *r = NULL;
	char msg[512];
	cr_assert_eq(trcfile_reader_open_mem(b, len, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(trcfile_reader_stream_count(r), STREAMS);
	cr_assert_null(trcfile_iter_new(r));
	cr_assert(strstr(trcfile_reader_errmsg(r), "merging"), "%s", trcfile_reader_errmsg(r));
	/* One stream at a time is fine: 16 MiB. */
	struct trcfile_cursor *c = trcfile_cursor_new(r, 7);
	struct trc_record rec;
	size_t k = 0;
	int rc;
	while ((rc = trcfile_cursor_next(c, &rec)) == 1)
		k++;
	cr_assert_eq(rc, 0, "%s", trcfile_reader_errmsg(r));
	cr_assert_eq(k, records);
	trcfile_cursor_free(c);
	trcfile_reader_close(r);
	free(b);
}

/* Random garbage after a valid header: the scan stops at once, nothing crashes. */
Test(trcfile_hostile, garbage_after_the_header, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	uint64_t seed = 3;
	uint8_t *b = malloc(f.len);
	for (int round = 0; round < 200; round++) {
		memcpy(b, f.buf, f.len);
		for (size_t i = f.header_bytes; i < f.len; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			b[i] = (uint8_t)(seed >> 56);
		}
		struct trcfile_reader_stats st;
		long n = hz_read_all(b, f.len, &f.plan, &st);
		cr_assert_eq(n, 0);
		cr_assert(st.truncated);
	}
	free(b);
	hz_free(&f);
}

/* ---- chunks that are whole but must not be believed (issue 13) ---------------------------- */

/* Opens (buf, len), reads every stream with its cursor; returns the records read, -1 when the
 * open failed (message in msg). Copies why the scan stopped and the first damage note. */
static long hz_read_notes(const uint8_t *buf, size_t len, char *msg, size_t msg_len,
			  char *scan_stop, char *damage, size_t note_len,
			  struct trcfile_reader_stats *st)
{
	struct trcfile_reader *r = NULL;
	int err = trcfile_reader_open_mem(buf, len, &r, msg, msg_len);
	if (err)
		return -1;
	long total = 0;
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		struct trc_record rec;
		int rc;
		while ((rc = trcfile_cursor_next(c, &rec)) == 1)
			total++;
		cr_assert_eq(rc, 0, "stream %u: %s", s, trcfile_reader_errmsg(r));
		trcfile_cursor_free(c);
	}
	snprintf(scan_stop, note_len, "%s", trcfile_reader_scan_stop(r));
	snprintf(damage, note_len, "%s", trcfile_reader_damage_note(r));
	trcfile_reader_get_stats(r, st);
	trcfile_reader_close(r);
	return total;
}

/* A chunk of a stream that already had one (so the scan has its stream's pid and tid). */
static size_t hz_later_chunk(const struct hz_file *f)
{
	for (size_t i = f->n_chunks / 2; i < f->n_chunks; i++)
		if (trcfile__get32(f->buf + f->off[i] + HZ_CHUNK(seq)) > 0)
			return i;
	cr_assert_fail("no chunk with seq > 0");
	return 0;
}

static long hz_records_before(const struct hz_file *f, size_t i)
{
	long n = 0;
	for (size_t j = 0; j < i; j++)
		n += f->count[j];
	return n;
}

/* Recomputes the footer's and the trailer's checksums after a forgery. */
static void hz_fix_footer(uint8_t *b, const struct hz_file *f)
{
	uint64_t foff = f->data_end;
	size_t fbytes = f->len - TRCFILE__TRAILER_BYTES - foff;
	uint8_t *t = b + f->len - TRCFILE__TRAILER_BYTES;
	trcfile__put32(t + HZ_TRAILER(footer_crc), trcfile__crc32c(0, b + foff, fbytes));
	trcfile__put32(t + HZ_TRAILER(trailer_crc), trcfile__crc32c(0, t, HZ_TRAILER(trailer_crc)));
}

/* f's data (no footer) with chunk i written twice in a row. *len set. */
static uint8_t *hz_forge_duplicate(const struct hz_file *f, size_t i, size_t *len)
{
	size_t clen = f->end[i] - f->off[i];
	uint8_t *b = malloc(f->data_end + clen);
	memcpy(b, f->buf, f->end[i]);
	memcpy(b + f->end[i], f->buf + f->off[i], clen);
	memcpy(b + f->end[i] + clen, f->buf + f->end[i], f->data_end - f->end[i]);
	*len = f->data_end + clen;
	return b;
}

/* The footer's index entry of chunk i in b (a copy of f's bytes): the one that names its
 * offset, which must be exactly one. */
static uint8_t *hz_footer_chunk(uint8_t *b, const struct hz_file *f, size_t i)
{
	uint8_t *ft = b + f->data_end;
	uint32_t ns = trcfile__get32(ft + HZ_FOOTER(stream_count));
	uint64_t nc = trcfile__get64(ft + HZ_FOOTER(chunk_count));
	uint8_t *entry = NULL;
	int found = 0;
	for (uint64_t k = 0; k < nc; k++) {
		uint8_t *e = ft + trcfile__footer_chunk_at(ns, k);
		if (trcfile__get64(e + HZ_FCHUNK(offset)) == f->off[i]) {
			entry = e;
			found++;
		}
	}
	cr_assert_eq(found, 1, "chunk %zu in the footer's index %d times", i, found);
	return entry;
}

/* f with chunk i's zstd frame without its content checksum: the descriptor's flag cleared,
 * the last 4 bytes (the checksum) left out of the chunk, the footer's entry saying the same
 * size (checksums valid). The 4 bytes stay in the file, between chunk i and the next. */
static uint8_t *hz_forge_no_checksum(const struct hz_file *f, size_t i)
{
	uint8_t *b = malloc(f->len);
	memcpy(b, f->buf, f->len);
	uint8_t *h = b + f->off[i];
	uint32_t comp = trcfile__get32(h + HZ_CHUNK(comp_bytes));
	uint8_t *frame = h + TRCFILE__CHUNK_HDR_BYTES;
	cr_assert_eq(trcfile__get32(h + HZ_CHUNK(flags)), 0, "a compressed chunk");
	cr_assert(frame[4] & 0x04, "the writer's frames have a checksum");
	frame[4] &= (uint8_t)~0x04;
	trcfile__put32(h + HZ_CHUNK(comp_bytes), comp - 4);
	trcfile__put32(h + HZ_CHUNK(crc), trcfile__crc32c(0, h, HZ_CHUNK(crc)));
	trcfile__put32(hz_footer_chunk(b, f, i) + HZ_FCHUNK(comp_bytes), comp - 4);
	hz_fix_footer(b, f);
	/* the frame itself is sound without its checksum: only the rule refuses it */
	uint8_t *out = malloc(TRCFILE_MAX_CHUNK_BYTES);
	size_t n = ZSTD_decompress(out, TRCFILE_MAX_CHUNK_BYTES, frame, comp - 4);
	cr_assert_not(ZSTD_isError(n), "%s", ZSTD_getErrorName(n));
	cr_assert_eq(n, trcfile__get32(h + HZ_CHUNK(raw_bytes)));
	free(out);
	return b;
}

/* f with chunk i's header field (pid or tid) one more (checksum valid). */
static uint8_t *hz_forge_field_plus_one(const struct hz_file *f, size_t i, size_t field)
{
	uint8_t *b = malloc(f->len);
	memcpy(b, f->buf, f->len);
	hz_forge_chunk_field(b, f, i, field, trcfile__get32(f->buf + f->off[i] + field) + 1);
	return b;
}

/* A chunk written twice (same stream, same seq): two chunks with one (stream, seq) cannot
 * come from one writer, and the file is refused naming them (FORMAT.md: duplicates not
 * allowed). Without a footer, so the scan finds both. */
static void hz_check_duplicate(const struct hz_file *f, size_t i, const uint8_t *b, size_t len)
{
	char msg[512] = "", want[200];
	struct trcfile_reader *r = NULL;
	cr_assert_eq(trcfile_reader_open_mem(b, len, &r, msg, sizeof(msg)), -EBADMSG,
		     "a duplicated chunk was accepted");
	snprintf(want, sizeof(want), "stream %u has two chunks with sequence number %u",
		 trcfile__get32(f->buf + f->off[i] + HZ_CHUNK(stream_id)),
		 trcfile__get32(f->buf + f->off[i] + HZ_CHUNK(seq)));
	cr_assert_str_eq(msg, want);
}

/* A zstd frame without its content checksum (FORMAT.md: every compressed chunk has one):
 * the chunk is damaged, whatever it decompresses to. With the footer, the chunk is skipped
 * with a note and the rest read; without it, the scan stops there. */
static void hz_check_no_checksum(const struct hz_file *f, size_t i, const uint8_t *b)
{
	long full = 0;
	for (size_t j = 0; j < f->n_chunks; j++)
		full += f->count[j];
	char msg[512] = "", stop[512], damage[512], want[512];
	struct trcfile_reader_stats st;
	long got = hz_read_notes(b, f->len, msg, sizeof(msg), stop, damage, sizeof(stop), &st);
	cr_assert_eq(got, full - (long)f->count[i], "%ld of %ld records read: %s", got, full, msg);
	cr_assert_not(st.truncated);
	cr_assert_eq(st.chunks_damaged, 1);
	snprintf(want, sizeof(want),
		 "damaged chunk %u of stream %u at offset %llu: zstd frame without content "
		 "checksum",
		 trcfile__get32(f->buf + f->off[i] + HZ_CHUNK(seq)),
		 trcfile__get32(f->buf + f->off[i] + HZ_CHUNK(stream_id)),
		 (unsigned long long)f->off[i]);
	cr_assert_str_eq(damage, want);
	cr_assert_str_eq(stop, "");
	/* No footer: the scan keeps the chunks before it. */
	got = hz_read_notes(b, f->data_end, msg, sizeof(msg), stop, damage, sizeof(stop), &st);
	cr_assert_eq(got, hz_records_before(f, i), "%ld records: %s", got, msg);
	cr_assert(st.truncated);
	snprintf(want, sizeof(want), "zstd frame without content checksum at offset %llu",
		 (unsigned long long)f->off[i]);
	cr_assert_str_eq(stop, want);
}

/* A chunk whose header says another pid or tid than its stream's other chunks: with the
 * footer, skipped with a note (the header disagrees with the index); without, the scan stops
 * there. */
static void hz_check_field_differs(const struct hz_file *f, size_t i, const uint8_t *b,
				   const char *what)
{
	long full = 0;
	for (size_t j = 0; j < f->n_chunks; j++)
		full += f->count[j];
	char msg[512] = "", stop[512], damage[512], want[512];
	struct trcfile_reader_stats st;
	long got = hz_read_notes(b, f->len, msg, sizeof(msg), stop, damage, sizeof(stop), &st);
	cr_assert_eq(got, full - (long)f->count[i], "%s: %ld of %ld records: %s", what, got, full,
		     msg);
	cr_assert_eq(st.chunks_damaged, 1);
	snprintf(want, sizeof(want),
		 "damaged chunk %u of stream %u at offset %llu: chunk header disagrees with the "
		 "index",
		 trcfile__get32(b + f->off[i] + HZ_CHUNK(seq)),
		 trcfile__get32(b + f->off[i] + HZ_CHUNK(stream_id)),
		 (unsigned long long)f->off[i]);
	cr_assert_str_eq(damage, want, "%s", what);
	got = hz_read_notes(b, f->data_end, msg, sizeof(msg), stop, damage, sizeof(stop), &st);
	cr_assert_eq(got, hz_records_before(f, i), "%s: %ld records: %s", what, got, msg);
	snprintf(want, sizeof(want), "stream kind/pid/tid differ between chunks at offset %llu",
		 (unsigned long long)f->off[i]);
	cr_assert_str_eq(stop, want, "%s", what);
}

Test(trcfile_hostile, duplicated_chunk_is_refused, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	size_t i = hz_later_chunk(&f), len;
	uint8_t *b = hz_forge_duplicate(&f, i, &len);
	hz_check_duplicate(&f, i, b, len);
	free(b);
	hz_free(&f);
}

Test(trcfile_hostile, frame_without_checksum_is_not_believed, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	size_t i = hz_later_chunk(&f);
	uint8_t *b = hz_forge_no_checksum(&f, i);
	hz_check_no_checksum(&f, i, b);
	free(b);
	hz_free(&f);
}

Test(trcfile_hostile, chunk_of_another_pid_or_tid_is_not_believed, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	size_t i = hz_later_chunk(&f);
	uint8_t *b = hz_forge_field_plus_one(&f, i, HZ_CHUNK(pid));
	hz_check_field_differs(&f, i, b, "pid");
	free(b);
	b = hz_forge_field_plus_one(&f, i, HZ_CHUNK(tid));
	hz_check_field_differs(&f, i, b, "tid");
	free(b);
	hz_free(&f);
}

/* The fuzzer's seeds for these forgeries (tests/corpus/reader/), made from its small
 * chunks.trc seed: with TRC_WRITE_CORPUS=1 (re)written, else each checked as above (so a
 * seed that no longer shows its case fails here). The raw_*.bin seeds are records for the
 * fuzz target's wrapped-chunk reading (fuzz_reader.c: byte 0 is also the count). */
Test(trcfile_hostile, forgery_seeds_in_the_corpus, .timeout = 60)
{
	const char *dir = "tests/corpus/reader";
	const char *wr = getenv("TRC_WRITE_CORPUS");
	bool write = wr && *wr && strcmp(wr, "0");
	char path[300];
	struct hz_file f = {0};
	snprintf(path, sizeof(path), "%s/chunks.trc", dir);
	f.buf = tu_read_file(path, &f.len);
	hz_index(&f);
	size_t i = hz_later_chunk(&f), len;
	uint8_t *dup = hz_forge_duplicate(&f, i, &len);
	uint8_t *nock = hz_forge_no_checksum(&f, i);
	uint8_t *pid = hz_forge_field_plus_one(&f, i, HZ_CHUNK(pid));
	static const uint8_t raw_varint[] = {1,	   0,	 1,    1,    0xff, 0xff, 0xff, 0xff,
					     0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 1};
	static const uint8_t raw_name_id[] = {1,    0,	  1, TRC_REC_COUNTER, 0, 0x80, 0x80, 0x80,
					      0x80, 0x10, 2};
	static const struct {
		const char *name;
		const uint8_t *b;
		size_t len;
	} raw[] = {{"raw_varint_past_64_bits.bin", raw_varint, sizeof(raw_varint)},
		   {"raw_name_id_past_32_bits.bin", raw_name_id, sizeof(raw_name_id)}};
	if (write) {
		snprintf(path, sizeof(path), "%s/duplicated_chunk.trc", dir);
		tu_write_file(path, dup, len);
		snprintf(path, sizeof(path), "%s/frame_without_checksum.trc", dir);
		tu_write_file(path, nock, f.len);
		snprintf(path, sizeof(path), "%s/chunk_of_another_pid.trc", dir);
		tu_write_file(path, pid, f.len);
		for (size_t k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "%s/%s", dir, raw[k].name);
			tu_write_file(path, raw[k].b, raw[k].len);
		}
	}
	free(dup);
	free(nock);
	free(pid);
	size_t n;
	snprintf(path, sizeof(path), "%s/duplicated_chunk.trc", dir);
	uint8_t *b = tu_read_file(path, &n);
	hz_check_duplicate(&f, i, b, n);
	free(b);
	snprintf(path, sizeof(path), "%s/frame_without_checksum.trc", dir);
	b = tu_read_file(path, &n);
	cr_assert_eq(n, f.len);
	hz_check_no_checksum(&f, i, b);
	free(b);
	snprintf(path, sizeof(path), "%s/chunk_of_another_pid.trc", dir);
	b = tu_read_file(path, &n);
	cr_assert_eq(n, f.len);
	hz_check_field_differs(&f, i, b, "pid");
	free(b);
	for (size_t k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, raw[k].name);
		b = tu_read_file(path, &n);
		cr_assert(n == raw[k].len && !memcmp(b, raw[k].b, n), "%s", path);
		char msg[512];
		cr_assert_eq(hz_read_chunk(b, n, 2, 100, msg, sizeof(msg)), -EBADMSG, "%s", path);
		cr_assert(strstr(msg, "bad record at byte 3"), "%s: %s", path, msg);
		free(b);
	}
	free(f.buf);
}

/* ---- a chunk whose end is wrong: one rule on every read path ------------------------------ */

enum hz_end { HZ_END_LAST_TS, HZ_END_COUNT_LOW, HZ_END_COUNT_HIGH };

/* f with chunk i's end made wrong, every checksum valid and the footer agreeing (so only its
 * records can tell): its last time one later, or its count one lower (the records end before
 * the chunk's bytes do) or one higher (the bytes end before the records do). */
static uint8_t *hz_forge_end(const struct hz_file *f, size_t i, enum hz_end how)
{
	uint8_t *b = malloc(f->len);
	memcpy(b, f->buf, f->len);
	uint8_t *h = b + f->off[i];
	uint32_t sid = trcfile__get32(h + HZ_CHUNK(stream_id));
	uint32_t count = f->count[i] + (how == HZ_END_COUNT_HIGH) - (how == HZ_END_COUNT_LOW);
	uint64_t last = trcfile__get64(h + HZ_CHUNK(last_ts)) + (how == HZ_END_LAST_TS);
	trcfile__put32(h + HZ_CHUNK(count), count);
	trcfile__put64(h + HZ_CHUNK(last_ts), last);
	trcfile__put32(h + HZ_CHUNK(crc), trcfile__crc32c(0, h, HZ_CHUNK(crc)));
	uint8_t *entry = hz_footer_chunk(b, f, i);
	trcfile__put32(entry + HZ_FCHUNK(count), count);
	trcfile__put64(entry + HZ_FCHUNK(last_ts), last);
	uint8_t *ft = b + f->data_end;
	uint32_t ns = trcfile__get32(ft + HZ_FOOTER(stream_count));
	int found = 0;
	for (uint32_t k = 0; k < ns; k++) {
		uint8_t *e = ft + trcfile__footer_stream_at(k);
		if (trcfile__get32(e + HZ_FSTREAM(id)) != sid)
			continue;
		uint64_t recs = trcfile__get64(e + HZ_FSTREAM(records));
		trcfile__put64(e + HZ_FSTREAM(records), recs + count - f->count[i]);
		found++;
	}
	cr_assert_eq(found, 1, "stream %u in the footer %d times", sid, found);
	hz_fix_footer(b, f);
	return b;
}

/* The ways a stream is read: record by record, in batches of several sizes (flame's and the
 * function table's trcfile_cursor_read), after a seek, merged (the summary's, events' and the
 * exporters' path). */
enum hz_path {
	HZ_NEXT,
	HZ_READ_1,
	HZ_READ_7,
	HZ_READ_256,
	HZ_READ_4096,
	HZ_SEEK_NEXT,
	HZ_SEEK_READ,
	HZ_MERGE,
	HZ_PATHS
};

/* Reads stream s of r by `path`, from plan record `from` on (the seeks start at its time),
 * each record checked against the plan. The records handed out; *rc the status that ended
 * the read (0 or <0). */
static long hz_read_path(struct trcfile_reader *r, const struct tu_stream *ps, unsigned s,
			 size_t from, enum hz_path path, int *rc)
{
	static struct trc_record recs[4096];
	static const unsigned max[] = {[HZ_READ_1] = 1,
				       [HZ_READ_7] = 7,
				       [HZ_READ_256] = 256,
				       [HZ_READ_4096] = 4096,
				       [HZ_SEEK_READ] = 256};
	size_t k = from;
	int n;
	if (path == HZ_MERGE) {
		struct trcfile_iter *it = trcfile_iter_new(r);
		cr_assert_not_null(it);
		unsigned sidx;
		while ((n = trcfile_iter_next(it, &recs[0], &sidx)) == 1)
			if (sidx == s && (k >= ps->n || !tu_rec_eq(&recs[0], &ps->recs[k++])))
				cr_assert_fail("merge: stream %u record %zu differs", s, k - 1);
		trcfile_iter_free(it);
		*rc = n;
		return (long)(k - from);
	}
	struct trcfile_cursor *c = trcfile_cursor_new(r, s);
	cr_assert_not_null(c);
	if (path == HZ_SEEK_NEXT || path == HZ_SEEK_READ)
		cr_assert_eq(trcfile_cursor_seek(c, ps->recs[from].ts_ns), 0, "%s",
			     trcfile_reader_errmsg(r));
	if (path == HZ_NEXT || path == HZ_SEEK_NEXT) {
		while ((n = trcfile_cursor_next(c, &recs[0])) == 1)
			if (k >= ps->n || !tu_rec_eq(&recs[0], &ps->recs[k++]))
				cr_assert_fail("path %d: record %zu differs", path, k - 1);
	} else {
		while ((n = trcfile_cursor_read(c, recs, max[path])) > 0) {
			cr_assert_leq((unsigned)n, max[path]);
			for (int j = 0; j < n; j++)
				if (k >= ps->n || !tu_rec_eq(&recs[j], &ps->recs[k++]))
					cr_assert_fail("path %d: record %zu differs", path, k - 1);
		}
	}
	trcfile_cursor_free(c);
	*rc = n;
	return (long)(k - from);
}

/* A chunk whose end is wrong, found only once its records are being handed out (FORMAT.md
 * "Reading rules"): every read path hands out the same records (the chunk's before the one
 * whose decoding meets the damage, never that one), then fails with the same message, and
 * the summary fails with it too. */
static void hz_check_end(const struct hz_file *f, size_t i, enum hz_end how)
{
	uint8_t *b = hz_forge_end(f, i, how);
	uint32_t sid = trcfile__get32(b + f->off[i] + HZ_CHUNK(stream_id));
	uint32_t seq = trcfile__get32(b + f->off[i] + HZ_CHUNK(seq));
	uint32_t raw = trcfile__get32(b + f->off[i] + HZ_CHUNK(raw_bytes));
	const struct tu_stream *ps = &f->plan.streams[sid];
	long before = 0; /* the stream's records in its chunks before chunk i */
	for (size_t j = 0; j < i; j++)
		if (trcfile__get32(f->buf + f->off[j] + HZ_CHUNK(stream_id)) == sid)
			before += f->count[j];
	long want = before + (long)f->count[i] - (how == HZ_END_COUNT_LOW ? 2 : 1) +
		    (how == HZ_END_COUNT_HIGH);
	char why[64], msg[512];
	if (how == HZ_END_LAST_TS)
		snprintf(why, sizeof(why), "last record's time disagrees with the chunk header");
	else if (how == HZ_END_COUNT_LOW)
		snprintf(why, sizeof(why), "records end before the chunk does");
	else
		snprintf(why, sizeof(why), "bad record at byte %u", raw);
	snprintf(msg, sizeof(msg), "damaged chunk %u of stream %u at offset %llu: %s", seq, sid,
		 (unsigned long long)f->off[i], why);
	/* The seeks start a few records before the chunk, in the chunk before it. */
	size_t from = (size_t)before - 5;
	while (from > 0 && ps->recs[from - 1].ts_ns == ps->recs[from].ts_ns)
		from--;
	struct trcfile_reader *r = NULL;
	char open_msg[512] = "";
	cr_assert_eq(trcfile_reader_open_mem(b, f->len, &r, open_msg, sizeof(open_msg)), 0, "%s",
		     open_msg);
	for (int path = 0; path < HZ_PATHS; path++) {
		bool seek = path == HZ_SEEK_NEXT || path == HZ_SEEK_READ;
		int rc;
		long got = hz_read_path(r, ps, sid, seek ? from : 0, (enum hz_path)path, &rc);
		cr_expect_eq(got, want - (seek ? (long)from : 0),
			     "end %d, path %d: %ld records handed out, want %ld", how, path, got,
			     want - (seek ? (long)from : 0));
		cr_expect_eq(rc, -EBADMSG, "end %d, path %d: %d", how, path, rc);
		cr_expect_str_eq(trcfile_reader_errmsg(r), msg, "end %d, path %d", how, path);
	}
	struct summary sm;
	cr_expect_eq(summary_compute(r, &sm), -EBADMSG, "end %d: the summary read on", how);
	cr_expect_str_eq(trcfile_reader_errmsg(r), msg, "end %d: summary", how);
	/* trace-dump: events shows the same records of the stream, then the summary (with its
	 * function table), flame and events fail alike, naming the chunk. */
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/end.trc", dir);
	tu_write_file(trc, b, f->len);
	const char *dump = tu_build();
	cr_expect_eq(tu_sh("'%s/bin/trace-dump' events --no-symbols --thread %u '%s' >'%s/events' "
			   "2>'%s/events.err'",
			   dump, ps->tid, trc, dir, dir),
		     1);
	char *out = tu_slurp_text(dir, "events");
	long lines = 0;
	for (const char *q = out; (q = strchr(q, '\n')); q++)
		lines++;
	cr_expect_eq(lines, want, "end %d: trace-dump events showed %ld records", how, lines);
	free(out);
	static const char *const cmds[] = {"summary", "flame", "events"};
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		cr_expect_eq(tu_sh("'%s/bin/trace-dump' %s '%s' >/dev/null 2>'%s/err'", dump,
				   cmds[k], trc, dir),
			     1, "end %d: trace-dump %s", how, cmds[k]);
		char *err = tu_slurp_text(dir, "err");
		cr_expect(strstr(err, msg), "end %d: trace-dump %s said %s", how, cmds[k], err);
		free(err);
	}
	tu_rm_rf(dir);
	trcfile_reader_close(r);
	free(b);
}

Test(trcfile_hostile, chunk_with_a_wrong_end_reads_alike_on_every_path, .timeout = 60)
{
	struct hz_file f;
	hz_make(&f);
	size_t i = hz_later_chunk(&f);
	cr_assert_gt(f.count[i], 100, "a chunk long enough for the fast decoders");
	hz_check_end(&f, i, HZ_END_LAST_TS);
	hz_check_end(&f, i, HZ_END_COUNT_LOW);
	hz_check_end(&f, i, HZ_END_COUNT_HIGH);
	hz_free(&f);
}

/* ---- the streamed compaction on a file changed in place between its passes ------------- */

/* The input's path and the footer entry to change once the first chunk is written. */
struct hz_changer {
	const char *path;
	uint64_t entry_off, from_off; /* entry from_off's bytes go over entry_off's */
	bool done;
};

static void hz_change_on_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)total;
	struct hz_changer *c = arg;
	if (done != 1 || c->done)
		return;
	c->done = true;
	int fd = open(c->path, O_RDWR);
	cr_assert_geq(fd, 0);
	uint8_t e[TRCFILE__FOOTER_CHUNK_BYTES];
	cr_assert_eq(pread(fd, e, sizeof(e), (off_t)c->from_off), (ssize_t)sizeof(e));
	cr_assert_eq(pwrite(fd, e, sizeof(e), (off_t)c->entry_off), (ssize_t)sizeof(e));
	close(fd);
}

/* A trace of two thread streams of 2000 records, one chunk each (4000 chunks, written
 * alternately): a footer of 192 KB, past the walk's 64 KiB buffer, so the second pass reads
 * its last entries from the file again. Once the compaction has written its first chunk, the
 * last chunk entry (stream 1's last chunk) is overwritten by the one before it (stream 0's
 * last): an entry the first pass would refuse (not in file order, a sequence number twice).
 * The compaction must not make an output whose stream table and chunks disagree: it fails,
 * saying the file changed. */
Test(trcfile_hostile, compaction_of_a_file_changed_between_its_passes_fails, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char in[300], out[300];
	snprintf(in, sizeof(in), "%s/in.trc", dir);
	snprintf(out, sizeof(out), "%s/out.trc", dir);
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(in, &h, &o, &err);
	cr_assert_not_null(w);
	struct trcfile_stream *s[2] = {trcfile_stream_open(w, TRC_STREAM_THREAD, 10, 10),
				       trcfile_stream_open(w, TRC_STREAM_THREAD, 10, 11)};
	const uint32_t n = 2000;
	for (uint32_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++) {
			struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = 1000 + 10ull * i};
			r.value.name_id = 1;
			r.value.value = (int64_t)i + k;
			cr_assert_eq(trcfile_stream_append(s[k], &r), 0);
			cr_assert_eq(trcfile_stream_flush(s[k]), 0);
		}
	cr_assert_eq(trcfile_writer_close(w), 0);
	size_t len = 0;
	free(tu_read_file(in, &len));
	uint64_t chunks0 = len - TRCFILE__TRAILER_BYTES -
			   (TRCFILE__FOOTER_CHUNK_BYTES * 2ull * n); /* the first chunk entry */
	struct hz_changer c = {.path = in,
			       .entry_off = chunks0 + TRCFILE__FOOTER_CHUNK_BYTES * (2ull * n - 1),
			       .from_off = chunks0 + TRCFILE__FOOTER_CHUNK_BYTES * (2ull * n - 2)};
	/* the entries are where they were computed: the last one is stream 1's seq n - 1 */
	uint8_t *f = tu_read_file(in, &len);
	struct trcfile__footer_chunk e;
	const char *why = NULL;
	cr_assert_eq(trcfile__footer_chunk_get(f + c.entry_off, &e, &why), 0, "%s", why);
	cr_assert(e.stream_id == 1 && e.seq == n - 1, "stream %u seq %u", e.stream_id, e.seq);
	free(f);

	char msg[512] = "";
	struct trcfile_writer_opts co = {.compress_threads = 1, .flags = TRCFILE_WRITER_NO_FSYNC};
	int rc = trcfile_compact(in, out, &co, hz_change_on_progress, &c, NULL, msg, sizeof(msg));
	cr_assert(c.done, "the file was changed during the compaction");
	if (rc == 0) {
		/* what the output holds: its stream table against its chunks */
		struct trcfile_reader *r = NULL;
		char rmsg[512] = "";
		int k = trcfile_reader_open(out, &r, rmsg, sizeof(rmsg));
		struct trcfile_reader_stats st = {0};
		if (!k)
			trcfile_reader_get_stats(r, &st);
		cr_assert_fail("the compaction took the changed file: exit 0; its output: open %d "
			       "(%s), %llu chunks missing, truncated %d",
			       k, rmsg, (unsigned long long)st.chunks_missing,
			       !k && trcfile_reader_truncated(r));
	}
	cr_expect_lt(rc, 0);
	cr_expect(strstr(msg, in) && strstr(msg, "changed while it was compacted"), "%s", msg);
	tu_rm_rf(dir);
}
