/* fuzz_reader.c - libFuzzer target over the trace reader (`make fuzz`).
 *
 * Each input is read three ways, so mutations get past the checksums that would otherwise
 * stop almost all of them at the door:
 *   1. as it is (what trace-dump meets);
 *   2. with every checksum recomputed (header, each chunk header found by walking the
 *      chunks, footer and trailer): the structural checks behind them get fuzzed;
 *   3. as the raw records of one chunk, wrapped in a valid file (header, chunk header, zstd
 *      frame with checksum): the record decoders (the cursor's and the summary's) get fuzzed.
 * Each read walks everything the way trace-dump does: the merged iteration with a seek, each
 * stream's cursor in batches, the summary and the metadata lookups. The reader must give an
 * error or records for any input, and the ways of reading must agree (fuzz_agree: record
 * counts of the merge, the cursors and the summary; each stream's records and how its read
 * ended, record by record and in batches; the summary does not refuse what the cursors read);
 * ASan/UBSan (the fuzz build) catch the rest.
 * Seed corpus: tests/corpus/reader/ (small valid traces, a truncated one, an empty one),
 * written by test_trcfile's fuzz_seed_corpus test when TRC_WRITE_CORPUS=1.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "summary.h"
#include "trcfile.h"
#include "trcfile_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What was read must add up, whichever way it was read: a decoder that accepts wrong data
 * on one path but not another (the summary's fast decoder against the cursor's checked one,
 * say) shows here as a difference, not only as a crash. Aborts (a finding) when it does not. */
static void fuzz_agree(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_reader: readers disagree: %s\n", what);
		abort();
	}
}

/* Stream s read record by record: the records handed out; *rc how the read ended (0 or <0). */
static long fuzz_by_next(struct trcfile_reader *r, unsigned s, int *rc)
{
	struct trcfile_cursor *c = trcfile_cursor_new(r, s);
	if (!c) {
		*rc = -ENOMEM;
		return -1;
	}
	struct trc_record rec;
	long n = 0;
	while ((*rc = trcfile_cursor_next(c, &rec)) == 1)
		n++;
	trcfile_cursor_free(c);
	return n;
}

static void fuzz_read(const uint8_t *data, size_t size)
{
	struct trcfile_reader *r = NULL;
	char msg[256];
	if (trcfile_reader_open_mem(data, size, &r, msg, sizeof(msg)) != 0)
		return;
	struct trc_record rec;
	unsigned sidx;
	uint64_t last = 0;
	long merged = 0;
	int merged_rc = -1;
	struct trcfile_iter *it = trcfile_iter_new(r);
	if (it) {
		while (merged < 1000000 && (merged_rc = trcfile_iter_next(it, &rec, &sidx)) == 1) {
			merged++;
			last = rec.ts_ns;
			/* Touch the strings: ASan checks they lie inside the chunk buffer. */
			volatile char sink = 0;
			if (rec.type == TRC_REC_NOTE && rec.note.len)
				sink = rec.note.text[rec.note.len - 1];
			if (rec.type == TRC_REC_NAME && rec.name.len)
				sink = rec.name.str[rec.name.len - 1];
			(void)sink;
		}
		trcfile_iter_seek(it, last / 2);
		while (trcfile_iter_next(it, &rec, &sidx) == 1)
			;
		trcfile_iter_free(it);
	}
	struct trc_record batch[64];
	long by_cursor = 0;
	bool cursors_ok = true;
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		if (!c) {
			cursors_ok = false;
			break;
		}
		long n, in_stream = 0;
		while ((n = trcfile_cursor_read(c, batch, 64)) > 0)
			in_stream += n;
		cursors_ok &= n == 0;
		fuzz_agree((uint64_t)in_stream <= trcfile_reader_stream(r, s)->records,
			   "a stream read more records than its chunks hold");
		by_cursor += in_stream;
		trcfile_cursor_free(c);
		/* Record by record, the same records up to the same end (FORMAT.md: every read
		 * path hands out the same records of a chunk found damaged). */
		int next_rc;
		long by_next = fuzz_by_next(r, s, &next_rc);
		if (next_rc != -ENOMEM)
			fuzz_agree(by_next == in_stream && next_rc == (int)n,
				   "the stream's records read one by one and in batches");
	}
	if (cursors_ok && merged_rc == 0)
		fuzz_agree(merged == by_cursor, "merged and per-stream record counts");
	struct summary sm;
	int sum_rc = summary_compute(r, &sm);
	if (sum_rc == 0) {
		if (cursors_ok)
			fuzz_agree(sm.records == (uint64_t)by_cursor,
				   "the summary's and the cursors' record counts");
		summary_free(&sm);
	} else if (cursors_ok) {
		/* The same chunks decoded by the summary's own loop: no record it refuses
		 * that the cursors took (other failures, memory bounds, may happen). */
		fuzz_agree(sum_rc != -EBADMSG, "the summary refused what the cursors read");
	}
	trcfile_reader_name(r, 1, NULL);
	trcfile_reader_module(r, trcfile_reader_header(r)->pid, 0x401000);
	trcfile_reader_close(r);
}

/* Recomputes every checksum a walk of the structure can find. */
static void fuzz_fix_checksums(uint8_t *b, size_t size)
{
	if (size < TRCFILE__HDR_FIXED_BYTES + TRCFILE__HDR_CRC_BYTES)
		return;
	uint32_t hb = trcfile__get32(b + TRCFILE__OFFSET(file_hdr, header_bytes));
	if (hb < TRCFILE__HDR_FIXED_BYTES + TRCFILE__HDR_CRC_BYTES || hb > size)
		return;
	trcfile__put32(b + hb - TRCFILE__HDR_CRC_BYTES,
		       trcfile__crc32c(0, b, hb - TRCFILE__HDR_CRC_BYTES));
	uint64_t off = hb;
	for (int n = 0; n < 100000 && size - off >= TRCFILE__CHUNK_HDR_BYTES; n++) {
		uint8_t *c = b + off;
		if (trcfile__get32(c + TRCFILE__OFFSET(chunk_hdr, magic)) != TRCFILE__CHUNK_MAGIC)
			break;
		size_t crc_at = TRCFILE__OFFSET(chunk_hdr, crc);
		trcfile__put32(c + crc_at, trcfile__crc32c(0, c, crc_at));
		off += TRCFILE__CHUNK_HDR_BYTES +
		       (uint64_t)trcfile__get32(c + TRCFILE__OFFSET(chunk_hdr, comp_bytes));
		if (off > size)
			break;
	}
	if (size < hb + TRCFILE__TRAILER_BYTES)
		return;
	uint8_t *t = b + size - TRCFILE__TRAILER_BYTES;
	uint64_t foff = trcfile__get64(t + TRCFILE__OFFSET(trailer, footer_offset));
	uint64_t fbytes = trcfile__get64(t + TRCFILE__OFFSET(trailer, footer_bytes));
	if (foff <= size && fbytes <= size - foff)
		trcfile__put32(t + TRCFILE__OFFSET(trailer, footer_crc),
			       trcfile__crc32c(0, b + foff, (size_t)fbytes));
	size_t crc_at = TRCFILE__OFFSET(trailer, trailer_crc);
	trcfile__put32(t + crc_at, trcfile__crc32c(0, t, crc_at));
}

/* The fast decoder against the checked one on the same records: where the fast one decodes a
 * record (it may decline any), the checked one must decode the same record to the same place
 * and coder state; where the fast one's record runs past the end (it reads without bounds
 * checks, into the margin), the checked one must refuse it. The fast decoder only runs with
 * TRCFILE__FAST_MARGIN bytes after it, so the records are copied before a zeroed margin. */
static void fuzz_decoders_agree(const uint8_t *raw, size_t len)
{
	uint8_t *buf = calloc(1, len + TRCFILE__FAST_MARGIN);
	if (!buf)
		return;
	memcpy(buf, raw, len);
	const uint8_t *p = buf, *end = buf + len;
	struct trcfile__coder c;
	trcfile__coder_reset(&c, 1000);
	while (p < end) {
		struct trcfile__coder fc = c, sc = c;
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(p, end, &fc, &ev);
		const uint8_t *sp = p;
		struct trc_record srec, frec;
		memset(&srec, 0, sizeof(srec));
		memset(&frec, 0, sizeof(frec));
		int rc = trcfile__decode_slow(&sp, end, &sc, &srec);
		if (q && q <= end) {
			fuzz_agree(rc == 0,
				   "the fast decoder took a record the checked one refused");
			trcfile__event_record(&ev, &frec);
			fuzz_agree(sp == q && !memcmp(&frec, &srec, sizeof(frec)) &&
					   !memcmp(&fc, &sc, sizeof(fc)),
				   "the fast and the checked decoder read a record differently");
		} else if (q) {
			fuzz_agree(rc != 0, "the checked decoder read past the end of the records");
		}
		if (rc)
			break;
		p = sp;
		c = sc;
	}
	free(buf);
}

/* A valid file around one chunk whose raw records are the input. */
static void fuzz_wrapped_chunk(const uint8_t *raw, size_t raw_len)
{
	if (raw_len < 2 || raw_len > (64u << 10))
		return;
	fuzz_decoders_agree(raw, raw_len);
	static const char host[] = "fuzz";
	struct trcfile__file_hdr h = {.version_major = TRCFILE_VERSION_MAJOR,
				      .version_minor = TRCFILE_VERSION_MINOR,
				      .cmdline = "x",
				      .cmdline_len = 1,
				      .pid = 1,
				      .host = host,
				      .host_len = sizeof(host) - 1,
				      .chunk_bytes = TRCFILE_MAX_CHUNK_BYTES};
	size_t hb = trcfile__header_size(&h);
	h.header_bytes = (uint32_t)hb;
	size_t cap = hb + TRCFILE__CHUNK_HDR_BYTES + ZSTD_compressBound(raw_len);
	uint8_t *b = calloc(1, cap);
	if (!b)
		return;
	trcfile__header_put(b, &h);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	size_t n = ZSTD_compress2(cc, b + hb + TRCFILE__CHUNK_HDR_BYTES,
				  cap - hb - TRCFILE__CHUNK_HDR_BYTES, raw, raw_len);
	ZSTD_freeCCtx(cc);
	if (!ZSTD_isError(n)) {
		/* count and last time from the first bytes, so both right and wrong values occur */
		uint32_t count = raw[0] ? raw[0] : (uint32_t)(raw_len / 2);
		struct trcfile__chunk_hdr ch = {.kind = TRC_STREAM_THREAD,
						.pid = 1,
						.tid = 1,
						.first_ts = 1000,
						.last_ts = 1000 + raw[1],
						.count = count,
						.raw_bytes = (uint32_t)raw_len,
						.comp_bytes = (uint32_t)n};
		trcfile__chunk_hdr_put(b + hb, &ch);
		fuzz_read(b, hb + TRCFILE__CHUNK_HDR_BYTES + n);
	}
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_read(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (copy) {
		memcpy(copy, data, size);
		fuzz_fix_checksums(copy, size);
		fuzz_read(copy, size);
		free(copy);
	}
	fuzz_wrapped_chunk(data, size);
	return 0;
}
