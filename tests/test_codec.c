/* test_codec.c - the codec's fixed structures: layout, round trips, damaged copies.
 *
 * Purpose: each fixed structure of FORMAT.md (file header, chunk header, footer with its
 * stream and chunk entries, trailer) has one put and one get in src/trcfile/trcfile_codec.c.
 * Three kinds of check, because a round trip alone cannot see a layout error that put and get
 * share:
 *   - layout: every field's offset and width in the codec's images equals FORMAT.md's tables
 *     (the numbers here are copied from the spec, not from the code);
 *   - round trip: put then get gives back every field exactly (values chosen so that no two
 *     fields, and no two bytes of a field, are alike: a swapped or truncated field shows);
 *   - damage: a get of a damaged copy is refused, with the reason the reader reports.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trcfile_codec.h"

/* ---- layout: FORMAT.md's tables -------------------------------------------------------- */

struct layout_row {
	const char *field;
	size_t offset, bytes; /* from the codec's image */
	size_t spec_off, spec_by; /* from FORMAT.md */
};

#define ROW(image, field, off, by)                                                         \
	{                                                                                  \
#field, offsetof(struct trcfile__##image##_image, field),                  \
			sizeof(((struct trcfile__##image##_image *)0)->field), (off), (by) \
	}

static void check_rows(const char *what, const struct layout_row *rows, size_t n, size_t total,
		       size_t spec_total)
{
	size_t next = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(rows[i].offset, rows[i].spec_off, "%s.%s at %zu, FORMAT.md says %zu",
			     what, rows[i].field, rows[i].offset, rows[i].spec_off);
		cr_assert_eq(rows[i].bytes, rows[i].spec_by,
			     "%s.%s is %zu bytes, FORMAT.md says %zu", what, rows[i].field,
			     rows[i].bytes, rows[i].spec_by);
		cr_assert_eq(rows[i].offset, next, "%s.%s: a gap or overlap before it", what,
			     rows[i].field);
		next = rows[i].offset + rows[i].bytes;
	}
	cr_assert_eq(next, total, "%s: the table stops at %zu of %zu bytes", what, next, total);
	cr_assert_eq(total, spec_total, "%s is %zu bytes, FORMAT.md says %zu", what, total,
		     spec_total);
}

Test(codec, layout_matches_format_md, .timeout = 60)
{
	static const struct layout_row hdr[] = {
		ROW(file_hdr, magic, 0, 8),
		ROW(file_hdr, version_major, 8, 2),
		ROW(file_hdr, version_minor, 10, 2),
		ROW(file_hdr, endian_mark, 12, 4),
		ROW(file_hdr, header_bytes, 16, 4),
		ROW(file_hdr, flags, 20, 4),
		ROW(file_hdr, pid, 24, 4),
		ROW(file_hdr, clock_source, 28, 4),
		ROW(file_hdr, tsc_hz, 32, 8),
		ROW(file_hdr, start_mono_ns, 40, 8),
		ROW(file_hdr, start_realtime_ns, 48, 8),
		ROW(file_hdr, rss_interval_ns, 56, 8),
		ROW(file_hdr, rss_source, 64, 4),
		ROW(file_hdr, chunk_bytes, 68, 4),
		ROW(file_hdr, buffer_bytes, 72, 8),
		ROW(file_hdr, cmdline_len, 80, 4),
		ROW(file_hdr, host_len, 84, 4),
		ROW(file_hdr, tool_len, 88, 4),
		ROW(file_hdr, reserved, 92, 4),
	};
	check_rows("header", hdr, sizeof(hdr) / sizeof(hdr[0]),
		   sizeof(struct trcfile__file_hdr_image), 96);

	static const struct layout_row chunk[] = {
		ROW(chunk_hdr, magic, 0, 4),	   ROW(chunk_hdr, stream_id, 4, 4),
		ROW(chunk_hdr, seq, 8, 4),	   ROW(chunk_hdr, kind, 12, 4),
		ROW(chunk_hdr, pid, 16, 4),	   ROW(chunk_hdr, tid, 20, 4),
		ROW(chunk_hdr, first_ts, 24, 8),   ROW(chunk_hdr, last_ts, 32, 8),
		ROW(chunk_hdr, count, 40, 4),	   ROW(chunk_hdr, raw_bytes, 44, 4),
		ROW(chunk_hdr, comp_bytes, 48, 4), ROW(chunk_hdr, flags, 52, 4),
		ROW(chunk_hdr, payload_crc, 56, 4), ROW(chunk_hdr, crc, 60, 4),
	};
	check_rows("chunk header", chunk, sizeof(chunk) / sizeof(chunk[0]),
		   sizeof(struct trcfile__chunk_hdr_image), 64);

	static const struct layout_row footer[] = {
		ROW(footer, magic, 0, 4),
		ROW(footer, stream_count, 4, 4),
		ROW(footer, chunk_count, 8, 8),
	};
	check_rows("footer", footer, sizeof(footer) / sizeof(footer[0]),
		   sizeof(struct trcfile__footer_image), 16);

	/* "u32 id, u32 kind, u32 pid, u32 tid, u32 chunks, u32 reserved, u64 records" */
	static const struct layout_row stream[] = {
		ROW(footer_stream, id, 0, 4),	    ROW(footer_stream, kind, 4, 4),
		ROW(footer_stream, pid, 8, 4),	    ROW(footer_stream, tid, 12, 4),
		ROW(footer_stream, chunks, 16, 4),  ROW(footer_stream, reserved, 20, 4),
		ROW(footer_stream, records, 24, 8),
	};
	check_rows("footer stream", stream, sizeof(stream) / sizeof(stream[0]),
		   sizeof(struct trcfile__footer_stream_image), 32);

	/* "u64 offset, u32 stream_id, u32 seq, u64 first_ts, u64 last_ts, u32 count,
	 * u32 raw_bytes, u32 comp_bytes, u32 reserved" */
	static const struct layout_row fchunk[] = {
		ROW(footer_chunk, offset, 0, 8),     ROW(footer_chunk, stream_id, 8, 4),
		ROW(footer_chunk, seq, 12, 4),	     ROW(footer_chunk, first_ts, 16, 8),
		ROW(footer_chunk, last_ts, 24, 8),   ROW(footer_chunk, count, 32, 4),
		ROW(footer_chunk, raw_bytes, 36, 4), ROW(footer_chunk, comp_bytes, 40, 4),
		ROW(footer_chunk, reserved, 44, 4),
	};
	check_rows("footer chunk", fchunk, sizeof(fchunk) / sizeof(fchunk[0]),
		   sizeof(struct trcfile__footer_chunk_image), 48);

	static const struct layout_row trailer[] = {
		ROW(trailer, footer_offset, 0, 8), ROW(trailer, footer_bytes, 8, 8),
		ROW(trailer, footer_crc, 16, 4),   ROW(trailer, trailer_crc, 20, 4),
		ROW(trailer, magic, 24, 8),
	};
	check_rows("trailer", trailer, sizeof(trailer) / sizeof(trailer[0]),
		   sizeof(struct trcfile__trailer_image), 32);

	/* FORMAT.md: footer_bytes = 16 + 32 x streams + 48 x chunks. */
	cr_assert_eq(trcfile__footer_bytes(3, 5), 16 + 32 * 3 + 48 * 5);
	cr_assert_eq(trcfile__footer_stream_at(2), 16 + 32 * 2);
	cr_assert_eq(trcfile__footer_chunk_at(3, 2), 16 + 32 * 3 + 48 * 2);
}

/* What a put writes, read back at FORMAT.md's offsets (a second, independent reading of the
 * spec: the magic numbers, the endianness, the checksum's span). */
Test(codec, put_writes_format_md_bytes, .timeout = 60)
{
	uint8_t b[64];
	struct trcfile__chunk_hdr ch = {.stream_id = 7,
					.seq = 9,
					.kind = TRC_STREAM_RSS,
					.first_ts = 0x0102030405060708ull,
					.count = 1,
					.raw_bytes = 2,
					.comp_bytes = 3};
	trcfile__chunk_hdr_put(b, &ch);
	static const uint8_t tchk[4] = {0x54, 0x43, 0x48, 0x4b}; /* 0x4b484354 LE, "TCHK" */
	cr_assert_arr_eq(b, tchk, 4);
	cr_assert_eq(b[4], 7);
	cr_assert_eq(b[24], 0x08);
	cr_assert_eq(b[31], 0x01);
	cr_assert_eq(trcfile__get32(b + 60), trcfile__crc32c(0, b, 60));

	uint8_t t[32];
	trcfile__trailer_put(t, &(struct trcfile__trailer){.footer_offset = 100,
							   .footer_bytes = 16,
							   .footer_crc = 0xabcdef01u});
	cr_assert_eq(trcfile__get64(t), 100);
	cr_assert_eq(trcfile__get64(t + 8), 16);
	cr_assert_eq(trcfile__get32(t + 16), 0xabcdef01u);
	cr_assert_eq(trcfile__get32(t + 20), trcfile__crc32c(0, t, 20));
	cr_assert_arr_eq(t + 24, "TRCEND\r\n", 8);

	uint8_t f[16];
	trcfile__footer_put(f, &(struct trcfile__footer){.stream_count = 2, .chunk_count = 3});
	cr_assert_arr_eq(f, "TFTR", 4); /* 0x52544654 LE */
	cr_assert_eq(trcfile__get32(f + 4), 2);
	cr_assert_eq(trcfile__get64(f + 8), 3);
}

/* ---- file header -------------------------------------------------------------------------- */

static const char t_cmdline[] = "prog\0--flag\0arg";
static const char t_host[] = "host Linux 6.1";
static const char t_tool[] = "trc 1.0";

/* Every field a different value, no two bytes of a field alike. */
static struct trcfile__file_hdr t_header(void)
{
	struct trcfile__file_hdr h = {
		.version_major = TRCFILE_VERSION_MAJOR,
		.version_minor = 0x0203,
		.flags = 0x11121314u,
		.pid = 0x21222324u,
		.clock_source = 0x31323334u,
		.tsc_hz = 0x4142434445464748ull,
		.start_mono_ns = 0x5152535455565758ull,
		.start_realtime_ns = 0x6162636465666768ull,
		.rss_interval_ns = 0x7172737475767778ull,
		.rss_source = 0x81828384u,
		.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES + 0x0102,
		.buffer_bytes = 0x9192939495969798ull,
		.cmdline = t_cmdline,
		.cmdline_len = sizeof(t_cmdline),
		.host = t_host,
		.host_len = sizeof(t_host) - 1,
		.tool = t_tool,
		.tool_len = sizeof(t_tool) - 1,
	};
	h.header_bytes = (uint32_t)trcfile__header_size(&h);
	return h;
}

/* The header h, put into a fresh buffer (freed by the caller). */
static uint8_t *t_header_bytes(const struct trcfile__file_hdr *h)
{
	uint8_t *b = malloc(h->header_bytes);
	cr_assert_not_null(b);
	memset(b, 0xee, h->header_bytes);
	trcfile__header_put(b, h);
	return b;
}

static void t_header_eq(const struct trcfile__file_hdr *a, const struct trcfile__file_hdr *b)
{
	cr_assert_eq(a->version_major, b->version_major);
	cr_assert_eq(a->version_minor, b->version_minor);
	cr_assert_eq(a->header_bytes, b->header_bytes);
	cr_assert_eq(a->flags, b->flags);
	cr_assert_eq(a->pid, b->pid);
	cr_assert_eq(a->clock_source, b->clock_source);
	cr_assert_eq(a->tsc_hz, b->tsc_hz);
	cr_assert_eq(a->start_mono_ns, b->start_mono_ns);
	cr_assert_eq(a->start_realtime_ns, b->start_realtime_ns);
	cr_assert_eq(a->rss_interval_ns, b->rss_interval_ns);
	cr_assert_eq(a->rss_source, b->rss_source);
	cr_assert_eq(a->chunk_bytes, b->chunk_bytes);
	cr_assert_eq(a->buffer_bytes, b->buffer_bytes);
	cr_assert_eq(a->cmdline_len, b->cmdline_len);
	cr_assert_eq(a->host_len, b->host_len);
	cr_assert_eq(a->tool_len, b->tool_len);
	cr_assert_arr_eq(a->cmdline, b->cmdline, a->cmdline_len);
	cr_assert_arr_eq(a->host, b->host, a->host_len);
	cr_assert_arr_eq(a->tool, b->tool, a->tool_len);
}

Test(codec, header_round_trip, .timeout = 60)
{
	struct trcfile__file_hdr h = t_header(), got;
	uint8_t *b = t_header_bytes(&h);
	char why[256] = "";
	/* The fixed part alone says how much more to read. */
	cr_assert_eq(trcfile__header_get(b, TRCFILE__HDR_FIXED_BYTES, h.header_bytes, &got, why,
					 sizeof(why)),
		     1, "%s", why);
	cr_assert_eq(got.header_bytes, h.header_bytes);
	cr_assert_eq(trcfile__header_get(b, h.header_bytes, h.header_bytes, &got, why, sizeof(why)),
		     0, "%s", why);
	t_header_eq(&got, &h);
	cr_assert_eq((const uint8_t *)got.cmdline, b + TRCFILE__HDR_FIXED_BYTES);
	free(b);

	/* Bytes a newer minor version appended are skipped; empty strings are fine. */
	h.cmdline_len = h.host_len = h.tool_len = 0;
	h.header_bytes = (uint32_t)trcfile__header_size(&h) + 40;
	b = t_header_bytes(&h);
	cr_assert_eq(trcfile__header_get(b, h.header_bytes, h.header_bytes, &got, why, sizeof(why)),
		     0, "%s", why);
	t_header_eq(&got, &h);
	free(b);
}

/* Re-seals a header after a forged field, so only the field's own check can refuse it. */
static void t_header_reseal(uint8_t *b, uint32_t header_bytes)
{
	uint32_t at = header_bytes - TRCFILE__HDR_CRC_BYTES;
	trcfile__put32(b + at, trcfile__crc32c(0, b, at));
}

static int t_header_get(const struct trcfile__file_hdr *h, const uint8_t *b, char *why, size_t n)
{
	struct trcfile__file_hdr got;
	why[0] = 0;
	return trcfile__header_get(b, h->header_bytes, h->header_bytes, &got, why, n);
}

Test(codec, header_damaged_copies_are_refused, .timeout = 60)
{
	struct trcfile__file_hdr h = t_header();
	uint8_t *b = t_header_bytes(&h);
	uint8_t *d = malloc(h.header_bytes);
	char why[256];
	const size_t hb = h.header_bytes;

	memcpy(d, b, hb);
	d[3] ^= 0x20; /* "\x89TrC..." */
	cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
	cr_assert_str_eq(why, "not a trc trace (bad magic)");

	memcpy(d, b, hb);
	trcfile__put16(d + TRCFILE__OFFSET(file_hdr, version_major), TRCFILE_VERSION_MAJOR + 1);
	trcfile__put16(d + TRCFILE__OFFSET(file_hdr, version_minor), 4);
	cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EPROTONOSUPPORT);
	cr_assert_str_eq(why, "trace format version 2.4 is newer than this reader supports (1.x): "
			      "use a newer trace-dump");

	memcpy(d, b, hb);
	trcfile__put16(d + TRCFILE__OFFSET(file_hdr, version_major), 0);
	cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
	cr_assert_str_eq(why, "unknown trace format version 0.515");

	memcpy(d, b, hb);
	trcfile__put32(d + TRCFILE__OFFSET(file_hdr, endian_mark), 0x04030201u);
	cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
	cr_assert_str_eq(why, "trace was written big-endian, which this reader does not support");

	memcpy(d, b, hb);
	trcfile__put32(d + TRCFILE__OFFSET(file_hdr, endian_mark), 0x01020305u);
	cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
	cr_assert_str_eq(why, "bad endianness mark 0x01020305 (damaged header)");

	/* header_bytes: below the fixed part and checksum, above the format's bound, past the
	 * end of the file. */
	static const uint32_t sizes[] = {0, 99, TRCFILE__HDR_MAX_BYTES + 1, 0xffffffffu};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memcpy(d, b, hb);
		trcfile__put32(d + TRCFILE__OFFSET(file_hdr, header_bytes), sizes[i]);
		cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
		char want[128];
		snprintf(want, sizeof(want), "impossible header size %u (file has %u bytes)",
			 sizes[i], h.header_bytes);
		cr_assert_str_eq(why, want);
	}
	struct trcfile__file_hdr got;
	cr_assert_eq(trcfile__header_get(b, hb, hb - 1, &got, why, sizeof(why)), -EBADMSG);
	cr_assert(strstr(why, "impossible header size"), "%s", why);

	/* Any byte after the fields checked first: the checksum says so. */
	for (size_t at = TRCFILE__OFFSET(file_hdr, flags); at < hb; at++) {
		memcpy(d, b, hb);
		d[at] ^= (uint8_t)(1u << (at % 8));
		cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG, "byte %zu", at);
		cr_assert_str_eq(why, "header checksum mismatch (damaged header)", "byte %zu", at);
	}

	/* Sealed, but impossible. */
	static const uint32_t chunk_sizes[] = {0, TRCFILE_MIN_CHUNK_BYTES - 1,
					       TRCFILE_MAX_CHUNK_BYTES + 1};
	for (size_t i = 0; i < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); i++) {
		memcpy(d, b, hb);
		trcfile__put32(d + TRCFILE__OFFSET(file_hdr, chunk_bytes), chunk_sizes[i]);
		t_header_reseal(d, hb);
		cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
		char want[128];
		snprintf(want, sizeof(want), "impossible chunk size %u in the header",
			 chunk_sizes[i]);
		cr_assert_str_eq(why, want);
	}
	static const size_t lens[] = {TRCFILE__OFFSET(file_hdr, cmdline_len),
				      TRCFILE__OFFSET(file_hdr, host_len),
				      TRCFILE__OFFSET(file_hdr, tool_len)};
	for (size_t i = 0; i < 3; i++) {
		for (uint32_t extra = 1; extra <= 2; extra++) {
			memcpy(d, b, hb);
			uint32_t v = extra == 1 ? trcfile__get32(d + lens[i]) + 1
						: TRCFILE_MAX_STRING_BYTES + 1;
			trcfile__put32(d + lens[i], v);
			t_header_reseal(d, hb);
			cr_assert_eq(t_header_get(&h, d, why, sizeof(why)), -EBADMSG);
			cr_assert_str_eq(why, "header string lengths exceed the header");
		}
	}
	free(d);
	free(b);
}

/* ---- chunk header ------------------------------------------------------------------------- */

static const struct trcfile__chunk_hdr t_chunk = {
	.stream_id = 0x01020304u,
	.seq = 0x11121314u,
	.kind = TRC_STREAM_META,
	.pid = 0x21222324u,
	.tid = 0x31323334u,
	.first_ts = 0x4142434445464748ull,
	.last_ts = 0x5152535455565758ull,
	.count = 0x00616263u,
	.raw_bytes = 0x00f1f2f3u,
	.comp_bytes = 0x71727374u,
};

static void t_chunk_eq(const struct trcfile__chunk_hdr *a, const struct trcfile__chunk_hdr *b)
{
	cr_assert_eq(a->stream_id, b->stream_id);
	cr_assert_eq(a->seq, b->seq);
	cr_assert_eq(a->kind, b->kind);
	cr_assert_eq(a->pid, b->pid);
	cr_assert_eq(a->tid, b->tid);
	cr_assert_eq(a->first_ts, b->first_ts);
	cr_assert_eq(a->last_ts, b->last_ts);
	cr_assert_eq(a->count, b->count);
	cr_assert_eq(a->raw_bytes, b->raw_bytes);
	cr_assert_eq(a->comp_bytes, b->comp_bytes);
	cr_assert_eq(a->flags, b->flags);
}

Test(codec, chunk_header_round_trip, .timeout = 60)
{
	uint8_t b[TRCFILE__CHUNK_HDR_BYTES];
	memset(b, 0xee, sizeof(b));
	trcfile__chunk_hdr_put(b, &t_chunk);
	struct trcfile__chunk_hdr got;
	memset(&got, 0xee, sizeof(got));
	const char *why = "unset";
	cr_assert_eq(trcfile__chunk_hdr_get(b, &got, &why), 0, "%s", why);
	t_chunk_eq(&got, &t_chunk);
	for (uint32_t k = TRC_STREAM_THREAD; k <= TRC_STREAM_META; k++) {
		struct trcfile__chunk_hdr h = t_chunk;
		h.kind = k;
		trcfile__chunk_hdr_put(b, &h);
		cr_assert_eq(trcfile__chunk_hdr_get(b, &got, &why), 0, "%s", why);
		cr_assert_eq(got.kind, k);
	}
}

/* Puts h and gets it back: the get's return, *why its reason. */
static int t_chunk_forged(const struct trcfile__chunk_hdr *h, const char **why)
{
	uint8_t b[TRCFILE__CHUNK_HDR_BYTES];
	trcfile__chunk_hdr_put(b, h);
	struct trcfile__chunk_hdr got;
	*why = NULL;
	return trcfile__chunk_hdr_get(b, &got, why);
}

Test(codec, chunk_header_damaged_copies_are_refused, .timeout = 60)
{
	uint8_t b[TRCFILE__CHUNK_HDR_BYTES], d[TRCFILE__CHUNK_HDR_BYTES];
	trcfile__chunk_hdr_put(b, &t_chunk);
	struct trcfile__chunk_hdr got;
	const char *why;

	/* Every single bit: the magic, or else the checksum. */
	for (size_t bit = 0; bit < 8 * sizeof(b); bit++) {
		memcpy(d, b, sizeof(b));
		d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		why = NULL;
		cr_assert_eq(trcfile__chunk_hdr_get(d, &got, &why), -EBADMSG, "bit %zu", bit);
		cr_assert_str_eq(why,
				 bit < 32 ? "no chunk magic" : "chunk header checksum mismatch",
				 "bit %zu", bit);
	}

	/* Sealed (a valid checksum), but no chunk can be like this. */
	struct trcfile__chunk_hdr h;
	static const uint32_t kinds[] = {0, TRC_STREAM_META + 1, 0xffffffffu};
	for (size_t i = 0; i < 3; i++) {
		h = t_chunk;
		h.kind = kinds[i];
		cr_assert_eq(t_chunk_forged(&h, &why), -EBADMSG);
		cr_assert_str_eq(why, "unknown stream kind");
	}
	h = t_chunk;
	h.flags = 2; /* bit 0 is "stored" (FORMAT.md "Stored chunks"); the rest are reserved */
	cr_assert_eq(t_chunk_forged(&h, &why), -EBADMSG);
	cr_assert_str_eq(why, "reserved chunk header bits set");
	/* A stored chunk's payload is its records: comp_bytes = raw_bytes. */
	h = t_chunk;
	h.flags = 1;
	h.comp_bytes = h.raw_bytes + 1;
	cr_assert_eq(t_chunk_forged(&h, &why), -EBADMSG);
	cr_assert_str_eq(why, "stored chunk whose payload is not its records' size");
	h.comp_bytes = h.raw_bytes;
	h.payload_crc = 0x12345678u;
	cr_assert_eq(t_chunk_forged(&h, &why), 0, "%s", why);
	trcfile__chunk_hdr_put(d, &h);
	cr_assert_eq(trcfile__chunk_hdr_get(d, &got, &why), 0);
	cr_assert_eq(got.payload_crc, 0x12345678u);
	cr_assert_eq(got.flags, 1);
	/* payload_crc is 0 in a compressed chunk */
	memcpy(d, b, sizeof(b));
	trcfile__put32(d + TRCFILE__OFFSET(chunk_hdr, payload_crc), 1);
	trcfile__put32(d + TRCFILE__OFFSET(chunk_hdr, crc),
		       trcfile__crc32c(0, d, TRCFILE__OFFSET(chunk_hdr, crc)));
	cr_assert_eq(trcfile__chunk_hdr_get(d, &got, &why), -EBADMSG);
	cr_assert_str_eq(why, "reserved chunk header bits set");

	static const struct {
		uint32_t count, raw, comp;
		const char *why;
	} sizes[] = {
		{0, 100, 10, "impossible record count"},
		{51, 100, 10, "impossible record count"},
		{1, 1, 10, "impossible record count"},
		{1, TRCFILE_MAX_CHUNK_BYTES + TRCFILE_MAX_RECORD_BYTES + 1, 10,
		 "chunk larger than the format allows"},
		{1, 100, 0, "empty compressed frame"},
		{50, 100, 1, NULL}, /* the limits themselves are fine */
		{1, TRCFILE_MAX_CHUNK_BYTES + TRCFILE_MAX_RECORD_BYTES, 1, NULL},
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		h = t_chunk;
		h.count = sizes[i].count;
		h.raw_bytes = sizes[i].raw;
		h.comp_bytes = sizes[i].comp;
		int err = t_chunk_forged(&h, &why);
		if (!sizes[i].why) {
			cr_assert_eq(err, 0, "case %zu: %s", i, why);
			continue;
		}
		cr_assert_eq(err, -EBADMSG, "case %zu", i);
		cr_assert_str_eq(why, sizes[i].why, "case %zu", i);
	}
}

/* ---- footer and trailer ----------------------------------------------------------------- */

static const struct trcfile__footer_stream t_streams[2] = {
	{.id = 0x01020304u,
	 .kind = TRC_STREAM_THREAD,
	 .pid = 0x11121314u,
	 .tid = 0x21222324u,
	 .chunks = 0x31323334u,
	 .records = 0x4142434445464748ull},
	{.id = 0x51525354u,
	 .kind = TRC_STREAM_META,
	 .pid = 0x61626364u,
	 .tid = 0x71727374u,
	 .chunks = 0x01828384u,
	 .records = 0x9192939495969798ull},
};

static const struct trcfile__footer_chunk t_chunks[3] = {
	{.offset = 0x0102030405060708ull,
	 .stream_id = 0x11121314u,
	 .seq = 0x21222324u,
	 .first_ts = 0x3132333435363738ull,
	 .last_ts = 0x4142434445464748ull,
	 .count = 0x00215253u,
	 .raw_bytes = 0x00616263u,
	 .comp_bytes = 0x71727374u},
	{.offset = 1,
	 .stream_id = 2,
	 .seq = 3,
	 .first_ts = 4,
	 .last_ts = 5,
	 .count = 6,
	 .raw_bytes = 12,
	 .comp_bytes = 8},
	{.offset = UINT64_MAX,
	 .stream_id = UINT32_MAX,
	 .seq = UINT32_MAX,
	 .first_ts = UINT64_MAX,
	 .last_ts = 0,
	 .count = 1,
	 .raw_bytes = 2,
	 .comp_bytes = UINT32_MAX},
};

/* A footer of t_streams and t_chunks and its trailer, as the writer lays them out. */
static uint8_t *t_footer(size_t *bytes, struct trcfile__trailer *t)
{
	*bytes = (size_t)trcfile__footer_bytes(2, 3);
	uint8_t *f = malloc(*bytes + TRCFILE__TRAILER_BYTES);
	cr_assert_not_null(f);
	memset(f, 0xee, *bytes + TRCFILE__TRAILER_BYTES);
	trcfile__footer_put(f, &(struct trcfile__footer){.stream_count = 2, .chunk_count = 3});
	for (size_t i = 0; i < 2; i++)
		trcfile__footer_stream_put(f + trcfile__footer_stream_at(i), &t_streams[i]);
	for (size_t i = 0; i < 3; i++)
		trcfile__footer_chunk_put(f + trcfile__footer_chunk_at(2, i), &t_chunks[i]);
	*t = (struct trcfile__trailer){.footer_offset = 0x0102030405060708ull,
				       .footer_bytes = *bytes,
				       .footer_crc = trcfile__crc32c(0, f, *bytes)};
	trcfile__trailer_put(f + *bytes, t);
	return f;
}

Test(codec, footer_and_trailer_round_trip, .timeout = 60)
{
	size_t bytes;
	struct trcfile__trailer t, gt;
	uint8_t *f = t_footer(&bytes, &t);
	const char *why = "unset";

	cr_assert_eq(trcfile__trailer_get(f + bytes, &gt, &why), 0, "%s", why);
	cr_assert_eq(gt.footer_offset, t.footer_offset);
	cr_assert_eq(gt.footer_bytes, t.footer_bytes);
	cr_assert_eq(gt.footer_crc, t.footer_crc);

	struct trcfile__footer ft;
	cr_assert(trcfile__is_footer(f));
	cr_assert_eq(trcfile__footer_get(f, &gt, &ft, &why), 0, "%s", why);
	cr_assert_eq(ft.stream_count, 2);
	cr_assert_eq(ft.chunk_count, 3);

	for (size_t i = 0; i < 2; i++) {
		struct trcfile__footer_stream s;
		memset(&s, 0xee, sizeof(s));
		cr_assert_eq(trcfile__footer_stream_get(f + trcfile__footer_stream_at(i), &s, &why),
			     0, "%s", why);
		cr_assert_eq(s.id, t_streams[i].id);
		cr_assert_eq(s.kind, t_streams[i].kind);
		cr_assert_eq(s.pid, t_streams[i].pid);
		cr_assert_eq(s.tid, t_streams[i].tid);
		cr_assert_eq(s.chunks, t_streams[i].chunks);
		cr_assert_eq(s.records, t_streams[i].records);
	}
	for (size_t i = 0; i < 3; i++) {
		struct trcfile__footer_chunk c;
		memset(&c, 0xee, sizeof(c));
		cr_assert_eq(
			trcfile__footer_chunk_get(f + trcfile__footer_chunk_at(2, i), &c, &why), 0,
			"%s", why);
		cr_assert_eq(c.offset, t_chunks[i].offset);
		cr_assert_eq(c.stream_id, t_chunks[i].stream_id);
		cr_assert_eq(c.seq, t_chunks[i].seq);
		cr_assert_eq(c.first_ts, t_chunks[i].first_ts);
		cr_assert_eq(c.last_ts, t_chunks[i].last_ts);
		cr_assert_eq(c.count, t_chunks[i].count);
		cr_assert_eq(c.raw_bytes, t_chunks[i].raw_bytes);
		cr_assert_eq(c.comp_bytes, t_chunks[i].comp_bytes);
	}
	/* The empty footer of a trace with no stream. */
	uint8_t e[TRCFILE__FOOTER_FIXED_BYTES];
	trcfile__footer_put(e, &(struct trcfile__footer){0});
	struct trcfile__trailer et = {.footer_bytes = sizeof(e),
				      .footer_crc = trcfile__crc32c(0, e, sizeof(e))};
	cr_assert_eq(trcfile__footer_get(e, &et, &ft, &why), 0, "%s", why);
	cr_assert_eq(ft.stream_count + ft.chunk_count, 0);
	free(f);
}

Test(codec, trailer_damaged_copies_are_refused, .timeout = 60)
{
	size_t bytes;
	struct trcfile__trailer t, got;
	uint8_t *f = t_footer(&bytes, &t);
	uint8_t d[TRCFILE__TRAILER_BYTES];
	const char *why;
	for (size_t bit = 0; bit < 8 * sizeof(d); bit++) {
		memcpy(d, f + bytes, sizeof(d));
		d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		why = NULL;
		int err = trcfile__trailer_get(d, &got, &why);
		if (bit >= 8 * TRCFILE__OFFSET(trailer, magic)) {
			/* no magic: not a trailer at all (a file cut before its footer) */
			cr_assert_eq(err, -ENOENT, "bit %zu", bit);
			cr_assert_str_eq(why, "no footer");
		} else {
			cr_assert_eq(err, -EBADMSG, "bit %zu", bit);
			cr_assert_str_eq(why, "trailer checksum mismatch", "bit %zu", bit);
		}
	}
	free(f);
}

Test(codec, footer_damaged_copies_are_refused, .timeout = 60)
{
	size_t bytes;
	struct trcfile__trailer t;
	uint8_t *f = t_footer(&bytes, &t);
	uint8_t *d = malloc(bytes);
	struct trcfile__footer ft;
	const char *why;

	/* Any bit: the trailer's checksum of the footer says so. */
	for (size_t bit = 0; bit < 8 * bytes; bit += 3) {
		memcpy(d, f, bytes);
		d[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		cr_assert_eq(trcfile__footer_get(d, &t, &ft, &why), -EBADMSG, "bit %zu", bit);
		cr_assert_str_eq(why, "footer checksum mismatch", "bit %zu", bit);
	}

	/* Sealed (the trailer's checksum recomputed), but inconsistent. */
	struct trcfile__trailer st = t;
	memcpy(d, f, bytes);
	d[TRCFILE__OFFSET(footer, magic)] ^= 1;
	st.footer_crc = trcfile__crc32c(0, d, bytes);
	cr_assert_not(trcfile__is_footer(d));
	cr_assert_eq(trcfile__footer_get(d, &st, &ft, &why), -EBADMSG);
	cr_assert_str_eq(why, "bad footer magic");

	static const struct {
		uint32_t streams;
		uint64_t chunks;
	} counts[] = {{3, 3}, {2, 2}, {0, 4}, {1, UINT64_MAX / 48 + 1}, {UINT32_MAX, 0}};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memcpy(d, f, bytes);
		trcfile__footer_put(d, &(struct trcfile__footer){.stream_count = counts[i].streams,
								 .chunk_count = counts[i].chunks});
		st.footer_crc = trcfile__crc32c(0, d, bytes);
		cr_assert_eq(trcfile__footer_get(d, &st, &ft, &why), -EBADMSG, "case %zu", i);
		cr_assert_str_eq(why, "footer counts do not match its size", "case %zu", i);
	}
	st.footer_bytes = TRCFILE__FOOTER_FIXED_BYTES - 1;
	cr_assert_eq(trcfile__footer_get(f, &st, &ft, &why), -EBADMSG);
	cr_assert_str_eq(why, "footer counts do not match its size");

	/* Entries: what no stream or chunk can be. */
	uint8_t e[TRCFILE__FOOTER_CHUNK_BYTES];
	struct trcfile__footer_stream s = t_streams[0];
	struct trcfile__footer_stream gs;
	static const uint32_t kinds[] = {0, TRC_STREAM_META + 1};
	for (size_t i = 0; i < 2; i++) {
		s.kind = kinds[i];
		trcfile__footer_stream_put(e, &s);
		cr_assert_eq(trcfile__footer_stream_get(e, &gs, &why), -EBADMSG);
		cr_assert_str_eq(why, "unknown stream kind in the footer");
	}
	static const struct {
		uint32_t count, raw, comp;
		const char *why;
	} sizes[] = {
		{0, 100, 10, "impossible record count"},
		{51, 100, 10, "impossible record count"},
		{1, TRCFILE_MAX_CHUNK_BYTES + TRCFILE_MAX_RECORD_BYTES + 1, 10,
		 "chunk larger than the format allows"},
		{1, 100, 0, "empty compressed frame"},
	};
	struct trcfile__footer_chunk c = t_chunks[1], gc;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		c.count = sizes[i].count;
		c.raw_bytes = sizes[i].raw;
		c.comp_bytes = sizes[i].comp;
		trcfile__footer_chunk_put(e, &c);
		cr_assert_eq(trcfile__footer_chunk_get(e, &gc, &why), -EBADMSG, "case %zu", i);
		cr_assert_str_eq(why, sizes[i].why, "case %zu", i);
	}
	free(d);
	free(f);
}

/* ---- records: one decoder, fast and checked paths agree ---------------------------------- */

static bool t_rec_eq(const struct trc_record *a, const struct trc_record *b)
{
	if (a->type != b->type || a->ts_ns != b->ts_ns)
		return false;
	switch (a->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		return a->span.name_id == b->span.name_id;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		return a->value.name_id == b->value.name_id && a->value.value == b->value.value;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		return a->alloc.addr == b->alloc.addr && a->alloc.size == b->alloc.size &&
		       a->alloc.stack_id == b->alloc.stack_id;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		return a->map.addr == b->map.addr && a->map.len == b->map.len &&
		       a->map.kind == b->map.kind && a->map.stack_id == b->map.stack_id;
	case TRC_REC_STACK: {
		uint64_t fa[TRC_STACK_DEPTH_MAX], fb[TRC_STACK_DEPTH_MAX];
		int na = trcfile_stack_unpack(a, fa, TRC_STACK_DEPTH_MAX);
		int nb = trcfile_stack_unpack(b, fb, TRC_STACK_DEPTH_MAX);
		return a->stack.id == b->stack.id && a->stack.flags == b->stack.flags && na >= 0 &&
		       na == nb && !memcmp(fa, fb, (size_t)na * sizeof(*fa));
	}
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		return a->func.addr == b->func.addr && a->func.call_site == b->func.call_site;
	case TRC_REC_LOST:
		return a->lost.count == b->lost.count && a->lost.reason == b->lost.reason;
	case TRC_REC_NOTE:
		return a->note.len == b->note.len &&
		       !memcmp(a->note.text, b->note.text, a->note.len);
	case TRC_REC_EXIT:
		return a->exit.pid == b->exit.pid && a->exit.status == b->exit.status &&
		       a->exit.maxrss_bytes == b->exit.maxrss_bytes &&
		       a->exit.buffers_bytes == b->exit.buffers_bytes &&
		       a->exit.flags == b->exit.flags;
	case TRC_REC_WAIT:
		return a->wait.waits == b->wait.waits && a->wait.waited_ns == b->wait.waited_ns &&
		       a->wait.max_ns == b->wait.max_ns;
	case TRC_REC_RSS:
		return a->rss.pid == b->rss.pid && a->rss.rss_bytes == b->rss.rss_bytes &&
		       a->rss.pss_bytes == b->rss.pss_bytes && a->rss.read_ns == b->rss.read_ns;
	default:
		return true; /* strings of meta records: test_trcfile covers them */
	}
}

/* n records of every type, times going back now and then, extreme values among them. */
static struct trc_record *t_records(size_t n)
{
	struct trc_record *v = calloc(n, sizeof(*v));
	cr_assert_not_null(v);
	uint64_t seed = 99, ts = 1000000;
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		struct trc_record *r = &v[i];
		r->type = TRC_REC_SPAN_BEGIN +
			  (uint32_t)(i % 10 == 9 ? (seed >> 33) % (TRC_REC_TYPE_COUNT - 1) : i % 8);
		ts += (seed >> 54);
		r->ts_ns = i % 13 == 5 ? ts - (seed >> 60) : ts;
		uint64_t x = seed >> 7, y = (i % 17 == 0) ? UINT64_MAX - i : seed >> 21;
		switch (r->type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_SPAN_END:
			r->span.name_id = i % 19 == 0 ? UINT32_MAX : (uint32_t)(x % 1000);
			break;
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			r->value.name_id = (uint32_t)x;
			r->value.value = i % 11 == 0 ? INT64_MIN : (int64_t)(y - (UINT64_MAX >> 1));
			break;
		case TRC_REC_ALLOC:
		case TRC_REC_FREE:
			r->alloc.addr =
				i % 23 == 0 ? UINT64_MAX : 0x7f0000000000ull + (x % 4096) * 16;
			r->alloc.size = r->type == TRC_REC_ALLOC ? y : 0;
			/* a stack on most allocations, the largest id now and then */
			r->alloc.stack_id = r->type != TRC_REC_ALLOC || i % 5 == 0 ? 0
					    : i % 31 == 0			 ? UINT32_MAX
										 : (uint32_t)(x % 5000) + 1;
			break;
		case TRC_REC_MAP:
		case TRC_REC_UNMAP:
			r->map.addr = 0x7f0000000000ull + (x % 4096) * 4096;
			r->map.len = i % 23 == 0 ? TRC_MAP_LEN_MASK : y >> 8;
			r->map.kind = r->type == TRC_REC_MAP ? 1 + (uint32_t)(x % TRC_MAP_KIND_MAX) : 0;
			r->map.stack_id = r->type == TRC_REC_MAP && i % 3 ? (uint32_t)(x % 900) + 1 : 0;
			break;
		case TRC_REC_STACK: {
			/* frames going up and down the address space, 0 to the cap of them */
			static uint64_t frames[64][TRC_STACK_DEPTH_MAX];
			uint64_t *f = frames[i % 64];
			uint32_t nf = i % 7 == 0 ? TRC_STACK_DEPTH_MAX : (uint32_t)(x % 40);
			for (uint32_t k = 0; k < nf; k++)
				f[k] = k % 9 == 8 ? UINT64_MAX - k : 0x7f0000000000ull + (y >> (k % 32)) + k;
			r->stack.id = 1 + (uint32_t)(x % 100000);
			r->stack.flags = nf == TRC_STACK_DEPTH_MAX ? TRC_STACK_TRUNCATED : 0;
			r->stack.n = nf;
			r->stack.frames = f;
			break;
		}
		case TRC_REC_FUNC_ENTER:
		case TRC_REC_FUNC_EXIT:
			r->func.addr = 0x400000 + (x % 65536);
			r->func.call_site = i % 29 == 0 ? 0 : r->func.addr + (y % 200) - 100;
			break;
		case TRC_REC_LOST:
			r->lost.count = y;
			r->lost.reason = 1 + (uint32_t)(x % 5);
			break;
		case TRC_REC_NOTE:
			r->note.text = "a note";
			r->note.len = 6;
			break;
		case TRC_REC_EXIT:
			r->exit.pid = (uint32_t)x;
			r->exit.status = -(int32_t)(x % 300);
			r->exit.maxrss_bytes = y;
			r->exit.flags = (uint32_t)(x % 4); /* 0: wait4's, 1 and 3: a process's own */
			break;
		case TRC_REC_WAIT:
			r->wait.waits = x;
			r->wait.waited_ns = y;
			r->wait.max_ns = i % 7 == 0 ? UINT64_MAX : y / 3;
			break;
		case TRC_REC_RSS:
			r->rss.source = TRC_RSS_STATM;
			r->rss.pid = 7;
			r->rss.rss_bytes = y;
			r->rss.pss_bytes = x;
			r->rss.read_ns = 1500;
			break;
		case TRC_REC_THREAD:
			r->thread.pid = 1;
			r->thread.tid = 2;
			break;
		case TRC_REC_PROCESS:
			r->process.pid = 1;
			break;
		case TRC_REC_NAME:
			r->name.id = (uint32_t)x;
			break;
		case TRC_REC_MODULE:
			r->module.pid = 1;
			r->module.end = y;
			break;
		}
	}
	return v;
}

/* Encodes recs into a fresh buffer; *len its size. */
static uint8_t *t_encode(const struct trc_record *recs, size_t n, size_t *len)
{
	size_t cap = 0;
	for (size_t i = 0; i < n; i++) {
		long m = trcfile__record_max_bytes(&recs[i]);
		cr_assert_gt(m, 0, "record %zu", i);
		cap += (size_t)m;
	}
	uint8_t *b = malloc(cap), *p = b;
	struct trcfile__coder c;
	trcfile__coder_reset(&c, recs[0].ts_ns);
	for (size_t i = 0; i < n; i++)
		p = trcfile__encode(p, &recs[i], &c);
	*len = (size_t)(p - b);
	return b;
}

Test(codec, records_round_trip_fast_and_checked_alike, .timeout = 60)
{
	const size_t n = 20000;
	struct trc_record *recs = t_records(n);
	size_t len;
	uint8_t *b = t_encode(recs, n, &len);
	/* The same bytes three ways: the hot loops' decoder (fast, checked near the end), the
	 * checked decoder alone, and the fast one alone wherever it takes the record. */
	const uint8_t *p = b, *s = b, *end = b + len;
	struct trcfile__coder c, cs, cf;
	trcfile__coder_reset(&c, recs[0].ts_ns);
	trcfile__coder_reset(&cs, recs[0].ts_ns);
	size_t fast = 0;
	for (size_t i = 0; i < n; i++) {
		struct trc_record r, rs;
		const uint8_t *at = s;
		cf = cs;
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(s, trcfile__fast_end(b, end), &cf, &ev);
		/* what the fast decoder must take: an event, delta >= 0, the margin ahead */
		bool takes = recs[i].type <= TRC_REC_FUNC_EXIT && recs[i].ts_ns >= cs.ts &&
			     end - at > (ptrdiff_t)TRCFILE__FAST_MARGIN;
		if (trcfile__decode(&p, end, &c, &r) != 0 ||
		    trcfile__decode_slow(&s, end, &cs, &rs))
			cr_assert_fail("record %zu refused", i);
		if (!t_rec_eq(&r, &recs[i]) || !t_rec_eq(&rs, &recs[i]))
			cr_assert_fail("record %zu (type %u) differs", i, recs[i].type);
		if (p != s || c.ts != cs.ts || c.alloc_addr != cs.alloc_addr ||
		    c.func_addr != cs.func_addr)
			cr_assert_fail("record %zu: the decoders part ways", i);
		if ((q != NULL) != takes)
			cr_assert_fail("record %zu (type %u): the fast decoder %s it", i,
				       recs[i].type, q ? "took" : "declined");
		if (q) {
			struct trc_record rf;
			trcfile__event_record(&ev, &rf);
			if (q != s || !t_rec_eq(&rf, &recs[i]) || cf.ts != cs.ts ||
			    cf.alloc_addr != cs.alloc_addr || cf.func_addr != cs.func_addr)
				cr_assert_fail("record %zu: the fast decoder differs", i);
			fast++;
		}
	}
	cr_assert_eq(p, end);
	cr_assert_gt(fast, n / 2, "the fast decoder took %zu of %zu", fast, n);
	free(b);
	free(recs);
}

Test(codec, fast_decoder_declines_what_it_does_not_take, .timeout = 60)
{
	uint8_t b[2 * TRCFILE__FAST_MARGIN];
	memset(b, 0, sizeof(b));
	const uint8_t *end = b + sizeof(b), *fast_end = trcfile__fast_end(b, end);
	struct trcfile__coder c = {.ts = 1000, .alloc_addr = 5, .func_addr = 6};
	const struct trcfile__coder c0 = c;
	struct trcfile__event ev;
	/* span_begin, delta 3, name 7: taken */
	b[0] = TRC_REC_SPAN_BEGIN;
	b[1] = 3;
	b[2] = 7;
	cr_assert_eq(trcfile__decode_fast(b, fast_end, &c, &ev), b + 3);
	cr_assert_eq(ev.ts_ns, 1003);
	cr_assert_eq(ev.a, 7);
	c = c0;
	/* too near the end: declined, though it would decode */
	cr_assert_eq(fast_end, end - TRCFILE__FAST_MARGIN);
	uint8_t *last = b + (fast_end - b);
	memcpy(last, b, 3);
	cr_assert_null(trcfile__decode_fast(last, fast_end, &c, &ev));
	memcpy(last - 1, b, 3);
	cr_assert_eq(trcfile__decode_fast(last - 1, fast_end, &c, &ev), last + 2,
		     "more than the margin left: taken");
	memset(last - 1, 0, 4);
	c = c0;
	cr_assert_eq(trcfile__fast_end(b, b + TRCFILE__FAST_MARGIN), b,
		     "a short buffer: nothing fast");
	/* negative delta, reserved bits, not an event type: declined, coder unchanged */
	static const uint8_t t0s[] = {TRC_REC_SPAN_BEGIN | TRCFILE__NEG_DELTA,
				      TRC_REC_COUNTER | 0x20,
				      TRC_REC_COUNTER | 0x40,
				      TRC_REC_INVALID,
				      TRC_REC_RSS,
				      TRC_REC_LOST,
				      TRC_REC_NOTE,
				      TRC_REC_EXIT,
				      TRC_REC_WAIT,
				      TRCFILE__TYPE_MASK};
	for (size_t i = 0; i < sizeof(t0s); i++) {
		b[0] = t0s[i];
		cr_assert_null(trcfile__decode_fast(b, fast_end, &c, &ev), "byte 0 = 0x%02x",
			       t0s[i]);
		cr_assert(c.ts == c0.ts && c.alloc_addr == c0.alloc_addr &&
			  c.func_addr == c0.func_addr);
	}
	/* damaged: declined with the coder unchanged; the checked decoder refuses it */
	static const uint8_t bad[][12] = {
		/* delta of 11 bytes */
		{TRC_REC_SPAN_END, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1},
		/* 10th byte above 1: past 64 bits */
		{TRC_REC_SPAN_END, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 2},
		/* name id 2^32 */
		{TRC_REC_INSTANT, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0},
		/* alloc whose size varint is too long */
		{TRC_REC_ALLOC, 0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(b, 0xff, sizeof(b));
		memcpy(b, bad[i], sizeof(bad[i]));
		c = c0;
		cr_assert_null(trcfile__decode_fast(b, fast_end, &c, &ev), "case %zu", i);
		cr_assert(c.ts == c0.ts && c.alloc_addr == c0.alloc_addr &&
				  c.func_addr == c0.func_addr,
			  "case %zu", i);
		const uint8_t *p = b;
		struct trc_record r;
		cr_assert_eq(trcfile__decode(&p, end, &c, &r), -EBADMSG, "case %zu", i);
		cr_assert_eq(p, b, "case %zu", i);
	}
}

/* FORMAT.md "exit", version 1.3: the flags follow buffers_bytes when bit 5 of byte 0 is set;
 * a record without flags is the 1.0 encoding, byte for byte, and reads with flags 0. */
Test(codec, exit_flags_bit5_and_old_encoding, .timeout = 60)
{
	uint8_t buf[64];
	struct trcfile__coder c = {0}, cd = {0};
	struct trc_record r = {.type = TRC_REC_EXIT, .ts_ns = 5};
	r.exit.pid = 3;
	r.exit.status = 256;
	r.exit.maxrss_bytes = 100;
	r.exit.buffers_bytes = 7;
	uint8_t *e = trcfile__encode(buf, &r, &c);
	static const uint8_t old[] = {TRC_REC_EXIT, 5, 3, 0x80, 0x04, 100, 7};
	cr_assert_eq(e - buf, (long)sizeof(old));
	cr_assert_arr_eq(buf, old, sizeof(old));

	r.exit.flags = TRC_EXIT_SELF | TRC_EXIT_STATUS;
	memset(&c, 0, sizeof(c));
	e = trcfile__encode(buf, &r, &c);
	cr_assert_eq(e - buf, (long)sizeof(old) + 1);
	cr_assert_eq(buf[0], TRC_REC_EXIT | 0x20);
	cr_assert_eq(buf[sizeof(old)], 3);
	struct trc_record d;
	const uint8_t *s = buf;
	cr_assert_eq(trcfile__decode_slow(&s, e, &cd, &d), 0);
	cr_assert_eq(s, e);
	cr_assert_eq(d.exit.flags, 3);
	cr_assert_eq(d.exit.maxrss_bytes, 100);

	/* The bit stays reserved on other types (a NOTE's byte 0 with bit 5: damaged). */
	uint8_t note[] = {TRC_REC_NOTE | 0x20, 0, 0};
	s = note;
	memset(&cd, 0, sizeof(cd));
	cr_assert_eq(trcfile__decode_slow(&s, note + sizeof(note), &cd, &d), -EBADMSG);
}

/* ---- records at every varint width boundary: the encoder's bytes, exactly ------------------
 *
 * Each field of each record kind, after byte 0 and the time delta, in FORMAT.md's order, as
 * the value it has on the wire (a zigzag field's zigzag form, an address its step from the
 * coder's 0); the record is built from those, so every wire value can be set to each width
 * boundary. The bytes trcfile__encode writes must be exactly byte 0 and the LEB128 of each wire
 * value (written here another way), and each decoder must give back a record that encodes to
 * the same bytes again. */

enum t_wire { T_U64, T_U32, T_STR, T_BID, T_FLAGS };

static const struct {
	uint32_t type;
	uint8_t n;
	uint8_t w[12];
} t_kinds[] = {
	{TRC_REC_SPAN_BEGIN, 1, {T_U32}},
	{TRC_REC_SPAN_END, 1, {T_U32}},
	{TRC_REC_INSTANT, 2, {T_U32, T_U64}},
	{TRC_REC_COUNTER, 2, {T_U32, T_U64}},
	{TRC_REC_ALLOC, 2, {T_U64, T_U64}},
	{TRC_REC_FREE, 1, {T_U64}},
	{TRC_REC_FUNC_ENTER, 2, {T_U64, T_U64}},
	{TRC_REC_FUNC_EXIT, 2, {T_U64, T_U64}},
	{TRC_REC_RSS,
	 12,
	 {T_U32, T_U32, T_U32, T_U64, T_U64, T_U64, T_U64, T_U64, T_U64, T_U64, T_U64, T_U64}},
	{TRC_REC_LOST, 2, {T_U64, T_U32}},
	{TRC_REC_THREAD, 3, {T_U32, T_U32, T_STR}},
	{TRC_REC_PROCESS, 3, {T_U32, T_U32, T_STR}},
	{TRC_REC_NAME, 2, {T_U32, T_STR}},
	{TRC_REC_MODULE, 6, {T_U32, T_U64, T_U64, T_U64, T_STR, T_BID}},
	{TRC_REC_NOTE, 1, {T_STR}},
	/* the status: the zigzag form of an int32_t, so a u32 on the wire */
	{TRC_REC_EXIT, 5, {T_U32, T_U32, T_U64, T_U64, T_FLAGS}},
	{TRC_REC_WAIT, 3, {T_U64, T_U64, T_U64}},
};

static char *t_text; /* TRCFILE_MAX_STRING_BYTES bytes for every string field */

/* The record whose wire values are w (strings: w is the length), time ts. */
static struct trc_record t_from_wire(uint32_t type, uint64_t ts, const uint64_t *w)
{
	struct trc_record r = {.type = type, .ts_ns = ts};
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		r.span.name_id = (uint32_t)w[0];
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		r.value.name_id = (uint32_t)w[0];
		r.value.value = trcfile__unzigzag(w[1]);
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		r.alloc.addr = (uint64_t)trcfile__unzigzag(w[0]); /* the step from the coder's 0 */
		r.alloc.size = type == TRC_REC_ALLOC ? w[1] : 0;
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		r.func.addr = (uint64_t)trcfile__unzigzag(w[0]);
		r.func.call_site = r.func.addr + (uint64_t)trcfile__unzigzag(w[1]);
		break;
	case TRC_REC_RSS:
		r.rss = (struct trc_rss_figures){
			(uint32_t)w[0], (uint32_t)w[1], (uint32_t)w[2], w[3], w[4],  w[5],
			w[6],		w[7],		w[8],		w[9], w[10], w[11]};
		break;
	case TRC_REC_LOST:
		r.lost.count = w[0];
		r.lost.reason = (uint32_t)w[1];
		break;
	case TRC_REC_THREAD:
		r.thread.pid = (uint32_t)w[0];
		r.thread.tid = (uint32_t)w[1];
		r.thread.name = t_text;
		r.thread.name_len = (uint32_t)w[2];
		break;
	case TRC_REC_PROCESS:
		r.process.pid = (uint32_t)w[0];
		r.process.ppid = (uint32_t)w[1];
		r.process.cmdline = t_text + 1;
		r.process.cmdline_len = (uint32_t)w[2];
		break;
	case TRC_REC_NAME:
		r.name.id = (uint32_t)w[0];
		r.name.str = t_text + 2;
		r.name.len = (uint32_t)w[1];
		break;
	case TRC_REC_MODULE:
		r.module.pid = (uint32_t)w[0];
		r.module.start = w[1];
		r.module.end = w[2];
		r.module.offset = w[3];
		r.module.path = t_text + 3;
		r.module.path_len = (uint32_t)w[4];
		r.module.build_id = (const uint8_t *)t_text + 4;
		r.module.build_id_len = (uint32_t)w[5];
		break;
	case TRC_REC_NOTE:
		r.note.text = t_text + 5;
		r.note.len = (uint32_t)w[0];
		break;
	case TRC_REC_EXIT:
		r.exit.pid = (uint32_t)w[0];
		r.exit.status = (int32_t)trcfile__unzigzag(w[1]);
		r.exit.maxrss_bytes = w[2];
		r.exit.buffers_bytes = w[3];
		r.exit.flags = (uint32_t)w[4];
		break;
	case TRC_REC_WAIT:
		r.wait.waits = w[0];
		r.wait.waited_ns = w[1];
		r.wait.max_ns = w[2];
		break;
	}
	return r;
}

/* LEB128, seven bits at a time, the continuation bit set on all but the last byte. */
static size_t t_leb(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	do {
		uint8_t low = v & 0x7f;
		v >>= 7;
		p[n++] = low | (v ? 0x80 : 0);
	} while (v);
	return n;
}

/* What FORMAT.md says the record of wire values w is: byte 0, the delta, the fields. The
 * string of field i starts at the offset t_from_wire gives it. */
static size_t t_expect(uint8_t *p, size_t kind, uint64_t d, bool back, const uint64_t *w)
{
	static const size_t str_at[TRC_REC_TYPE_COUNT] = {[TRC_REC_PROCESS] = 1,
							  [TRC_REC_NAME] = 2,
							  [TRC_REC_MODULE] = 3,
							  [TRC_REC_NOTE] = 5};
	const uint32_t type = t_kinds[kind].type;
	uint8_t t0 = (uint8_t)type | (back && d ? TRCFILE__NEG_DELTA : 0);
	for (size_t i = 0; i < t_kinds[kind].n; i++)
		if ((t_kinds[kind].w[i] == T_BID || t_kinds[kind].w[i] == T_FLAGS) && w[i])
			t0 |= 0x20; /* MODULE's build-id, EXIT's flags follow */
	size_t n = 0;
	p[n++] = t0;
	n += t_leb(p + n, d);
	for (size_t i = 0; i < t_kinds[kind].n; i++) {
		switch (t_kinds[kind].w[i]) {
		case T_STR:
			n += t_leb(p + n, w[i]);
			memcpy(p + n, t_text + str_at[type], w[i]);
			n += w[i];
			break;
		case T_BID:
			if (w[i]) {
				n += t_leb(p + n, w[i]);
				memcpy(p + n, t_text + 4, w[i]);
				n += w[i];
			}
			break;
		case T_FLAGS:
			if (w[i])
				n += t_leb(p + n, w[i]);
			break;
		default:
			n += t_leb(p + n, w[i]);
		}
	}
	return n;
}

/* 0, 1, both sides of each width boundary below 2^64 (or the field's top) and the top. */
static size_t t_edges(uint64_t *v, uint64_t top)
{
	size_t n = 0;
	v[n++] = 0;
	v[n++] = 1;
	for (unsigned k = 7; k < 64 && (1ull << k) <= top; k += 7) {
		v[n++] = (1ull << k) - 1;
		v[n++] = 1ull << k;
	}
	if (v[n - 1] != top)
		v[n++] = top;
	return n;
}

/* Encodes the record of wire values w at time delta d (back: negative) and checks its bytes and
 * what each decoder makes of them. */
static void t_check_wire(size_t kind, uint64_t d, bool back, const uint64_t *w, uint8_t *buf,
			 uint8_t *want, size_t cap, const char *what)
{
	const uint32_t type = t_kinds[kind].type;
	const uint64_t from = back ? UINT64_MAX : 0;
	struct trc_record r = t_from_wire(type, back ? from - d : from + d, w);
	long max = trcfile__record_max_bytes(&r);
	cr_assert_gt(max, 0, "%s: %s refused", trcfile_type_name(type), what);
	cr_assert_leq((size_t)max + TRCFILE__FAST_MARGIN, cap);
	struct trcfile__coder c = {.ts = from};
	size_t n = (size_t)(trcfile__encode(buf, &r, &c) - buf);
	size_t m = t_expect(want, kind, d, back, w);
	cr_assert_leq(n, (size_t)max, "%s: %s", trcfile_type_name(type), what);
	if (n != m || memcmp(buf, want, n))
		cr_assert_fail("%s: %s: the encoder wrote %zu bytes, not the %zu of FORMAT.md",
			       trcfile_type_name(type), what, n, m);
	memset(buf + n, 0, TRCFILE__FAST_MARGIN); /* what follows: the fast decoder's margin */
	/* Each decoder's record must encode to the same bytes again. */
	for (int how = 0; how < 3; how++) {
		struct trcfile__coder cd = {.ts = from}, ce = {.ts = from};
		struct trc_record x;
		const uint8_t *p = buf;
		if (how == 0) {
			cr_assert_eq(trcfile__decode_slow(&p, buf + n, &cd, &x), 0, "%s: %s",
				     trcfile_type_name(type), what);
		} else if (how == 1) {
			cr_assert_eq(trcfile__decode(&p, buf + n + TRCFILE__FAST_MARGIN, &cd, &x),
				     0, "%s: %s", trcfile_type_name(type), what);
		} else {
			struct trcfile__event ev;
			const uint8_t *end = buf + n + TRCFILE__FAST_MARGIN;
			p = trcfile__decode_fast(buf, trcfile__fast_end(buf, end), &cd, &ev);
			bool takes = type <= TRC_REC_FUNC_EXIT && !(back && d);
			cr_assert_eq(p != NULL, takes, "%s: %s: the fast decoder %s it",
				     trcfile_type_name(type), what, p ? "took" : "declined");
			if (!p)
				continue;
			trcfile__event_record(&ev, &x);
		}
		cr_assert_eq(p, buf + n, "%s: %s: decoder %d", trcfile_type_name(type), what, how);
		uint8_t *again = want + cap / 2;
		size_t k = (size_t)(trcfile__encode(again, &x, &ce) - again);
		if (k != n || memcmp(again, buf, n) || cd.ts != c.ts ||
		    cd.alloc_addr != c.alloc_addr || cd.func_addr != c.func_addr)
			cr_assert_fail("%s: %s: decoder %d gave another record",
				       trcfile_type_name(type), what, how);
	}
}

Test(codec, every_record_kind_at_every_varint_boundary, .timeout = 60)
{
	const size_t cap = 4 * (size_t)TRCFILE_MAX_STRING_BYTES;
	t_text = malloc(TRCFILE_MAX_STRING_BYTES + 8);
	uint8_t *buf = malloc(cap), *want = malloc(cap);
	cr_assert(t_text && buf && want);
	for (size_t i = 0; i < TRCFILE_MAX_STRING_BYTES + 8; i++)
		t_text[i] = (char)('a' + (i * 7) % 26);
	uint64_t e64[32], e32[32], estr[32],
		ebid[4] = {0, 1, TRC_BUILD_ID_MAX - 1, TRC_BUILD_ID_MAX};
	size_t n64 = t_edges(e64, UINT64_MAX), n32 = t_edges(e32, UINT32_MAX),
	       nstr = t_edges(estr, TRCFILE_MAX_STRING_BYTES);
	cr_assert_eq(n64, 21);
	cr_assert_eq(estr[nstr - 1], TRCFILE_MAX_STRING_BYTES);
	size_t checked = 0;
	for (size_t k = 0; k < sizeof(t_kinds) / sizeof(t_kinds[0]); k++) {
		const uint8_t nf = t_kinds[k].n;
		uint64_t w[12];
		for (size_t i = 0; i < nf; i++)
			w[i] = 3 + 5 * i; /* one byte each, all different */
		char what[96];
		/* the time delta, forward and back */
		for (size_t j = 0; j < n64; j++)
			for (int back = 0; back < 2; back++) {
				snprintf(what, sizeof(what), "delta %s%llu", back ? "-" : "",
					 (unsigned long long)e64[j]);
				t_check_wire(k, e64[j], back, w, buf, want, cap, what);
				checked++;
			}
		/* each field, the others as they are, after a delta of its own width */
		for (size_t i = 0; i < nf; i++) {
			const uint64_t *e;
			size_t ne;
			switch (t_kinds[k].w[i]) {
			case T_U64:
				e = e64, ne = n64;
				break;
			case T_STR:
				e = estr, ne = nstr;
				break;
			case T_BID:
				e = ebid, ne = 4;
				break;
			default:
				e = e32, ne = n32;
			}
			const uint64_t keep = w[i];
			for (size_t j = 0; j < ne; j++) {
				w[i] = e[j];
				snprintf(what, sizeof(what), "field %zu = %llu", i,
					 (unsigned long long)e[j]);
				t_check_wire(k, e[j] % 200, j % 2, w, buf, want, cap, what);
				checked++;
			}
			w[i] = keep;
		}
	}
	cr_assert_gt(checked, 1000);
	free(t_text);
	free(buf);
	free(want);
}
