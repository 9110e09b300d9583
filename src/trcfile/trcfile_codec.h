/* trcfile_codec.h - the bytes of a trace file: layout, fixed structures, varints, records.
 *
 * Purpose: the byte-level half of FORMAT.md in one place, so the writer, the reader and the
 * summary's hot loop agree by construction. Each fixed structure (file header, chunk header,
 * footer and its entries, trailer) is laid out once, as an image below, and read and written
 * only by its one put and one get (trcfile_codec.c). Everything on disk is little-endian.
 * Private to the file format's code and to the analysis, tests and fuzzers that look inside.
 *
 * Threads: pure functions over caller memory; no shared state.
 *
 * Invariants:
 * - Encoding never writes more than trcfile__record_max_bytes() says.
 * - There is one decoder of records: trcfile__decode_fast (inline, the event types) and
 *   trcfile__decode_slow (checked, every type), which agree on every record the first takes;
 *   trcfile__decode composes them. Nothing else reads a record's bytes.
 * - Decoding never reads past `end`, rejects every varint longer than 10 bytes or above the
 *   field's width, every string over TRCFILE_MAX_STRING_BYTES or past the chunk, every
 *   unknown type and reserved bit. The fast path skips per-byte checks only when more than
 *   TRCFILE__FAST_MARGIN bytes remain, more than any fixed part of a record can take.
 */
#ifndef TRC_TRCFILE_CODEC_H
#define TRC_TRCFILE_CODEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record.h"
#include "trc/wire.h"
#include "trcfile.h"

#if defined(__GNUC__)
#define trcfile__likely(x) __builtin_expect(!!(x), 1)
#define trcfile__unlikely(x) __builtin_expect(!!(x), 0)
#else
#define trcfile__likely(x) (x)
#define trcfile__unlikely(x) (x)
#endif

/* ---- layout (FORMAT.md) --------------------------------------------------------------- */

/* "\x89TRC\r\n\x1a\n": binary, and damaged by text-mode transfers in a detectable way. */
#define TRCFILE__MAGIC "\x89TRC\r\n\x1a\n"
#define TRCFILE__ENDIAN_MARK 0x01020304u
#define TRCFILE__ENDIAN_MARK_SWAPPED 0x04030201u /* what a big-endian writer leaves */
#define TRCFILE__HDR_FIXED_BYTES 96u
#define TRCFILE__HDR_CRC_BYTES 4u
#define TRCFILE__HDR_MAX_BYTES (TRCFILE__HDR_FIXED_BYTES + 3u * TRCFILE_MAX_STRING_BYTES + 4096u)

#define TRCFILE__CHUNK_MAGIC 0x4b484354u /* "TCHK" */
#define TRCFILE__CHUNK_HDR_BYTES 64u
/* Chunk header flags (FORMAT.md "Chunks"): the payload is the records themselves, not a zstd
 * frame; payload_crc is their crc32c. */
#define TRCFILE__CHUNK_STORED 1u
#define TRCFILE__CHUNK_FLAGS_KNOWN TRCFILE__CHUNK_STORED

#define TRCFILE__FOOTER_MAGIC 0x52544654u /* "TFTR" */
#define TRCFILE__FOOTER_FIXED_BYTES 16u
#define TRCFILE__FOOTER_STREAM_BYTES 32u
#define TRCFILE__FOOTER_CHUNK_BYTES 48u
#define TRCFILE__TRAILER_MAGIC "TRCEND\r\n"
#define TRCFILE__TRAILER_BYTES 32u

/* Record byte 0: type in bits 0-4, bit 7 = the timestamp delta is negative. */
#define TRCFILE__TYPE_MASK 0x1fu
#define TRCFILE__NEG_DELTA 0x80u
#define TRCFILE__RESERVED_BITS 0x60u
/* Bit 5 on a MODULE record (format 1.1): a build-id string follows the path. Reserved on
 * every other type. */
#define TRCFILE__MODULE_HAS_BUILD_ID 0x20u
/* Bit 5 on an EXIT record (format 1.3): a varint of flags (TRC_EXIT_*) follows buffers_bytes.
 * The same bit, one meaning per type: the encoder and decoder below are its only users. */
#define TRCFILE__EXIT_HAS_FLAGS 0x20u
/* Bit 5 on an ALLOC or MAP record (format 1.4): a varint stack id follows the size (ALLOC) or
 * the kind (MAP). */
#define TRCFILE__ALLOC_HAS_STACK 0x20u

/* Bytes of the fixed part of the largest record (RSS: 1 + 13 varints of 10 bytes) plus a
 * string length varint. */
#define TRCFILE__FIXED_MAX_BYTES 160u
#define TRCFILE__FAST_MARGIN TRCFILE__FIXED_MAX_BYTES
#define TRCFILE__VARINT_MAX_BYTES 10u

_Static_assert(TRC_REC_TYPE_COUNT - 1 <= TRCFILE__TYPE_MASK, "record types outgrew byte 0");
_Static_assert((TRCFILE__TYPE_MASK & (TRCFILE__NEG_DELTA | TRCFILE__RESERVED_BITS)) == 0 &&
		       (TRCFILE__TYPE_MASK | TRCFILE__NEG_DELTA | TRCFILE__RESERVED_BITS) == 0xffu,
	       "record byte 0: type, reserved bits and sign cover the byte once");
/* trcfile__decode_fast's dispatch: the event types in this order, and byte 0 of a record with
 * a reserved or sign bit set above all of them. */
_Static_assert(TRC_REC_SPAN_BEGIN == 1 && TRC_REC_SPAN_END == 2 && TRC_REC_INSTANT == 3 &&
		       TRC_REC_COUNTER == 4 && TRC_REC_ALLOC == 5 && TRC_REC_FREE == 6 &&
		       TRC_REC_FUNC_ENTER == 7 && TRC_REC_FUNC_EXIT == 8,
	       "the event types and their order");
_Static_assert(TRC_REC_FUNC_EXIT <= TRCFILE__TYPE_MASK,
	       "a reserved or sign bit makes byte 0 larger than any event type");
_Static_assert(TRCFILE__FIXED_MAX_BYTES >= 1 + 13 * TRCFILE__VARINT_MAX_BYTES,
	       "the largest fixed record part (RSS) and a string length fit the margin");

/* ---- on-disk images of the fixed structures ---------------------------------------------- *
 *
 * Each fixed structure of FORMAT.md is written down once, here, as a struct of byte arrays in
 * file order: offsetof gives a field's offset, sizeof its width, and with no member wider than
 * a byte there is no padding, so sizeof the struct is the sum of its fields (asserted against
 * FORMAT.md's sizes below). They are never copied or passed by value: the put and get
 * functions in trcfile_codec.c lay them over a byte buffer and read or write each field
 * through TRCFILE__PUT / TRCFILE__GET, which take the width from the field and refuse at
 * compile time a value of another width. Everything is little-endian.
 */

struct trcfile__file_hdr_image { /* FORMAT.md "Header", then strings and header_crc */
	uint8_t magic[8];
	uint8_t version_major[2];
	uint8_t version_minor[2];
	uint8_t endian_mark[4];
	uint8_t header_bytes[4];
	uint8_t flags[4];
	uint8_t pid[4];
	uint8_t clock_source[4];
	uint8_t tsc_hz[8];
	uint8_t start_mono_ns[8];
	uint8_t start_realtime_ns[8];
	uint8_t rss_interval_ns[8];
	uint8_t rss_source[4];
	uint8_t chunk_bytes[4];
	uint8_t buffer_bytes[8];
	uint8_t cmdline_len[4];
	uint8_t host_len[4];
	uint8_t tool_len[4];
	uint8_t reserved[4];
};

struct trcfile__chunk_hdr_image { /* FORMAT.md "Chunks" */
	uint8_t magic[4];
	uint8_t stream_id[4];
	uint8_t seq[4];
	uint8_t kind[4];
	uint8_t pid[4];
	uint8_t tid[4];
	uint8_t first_ts[8];
	uint8_t last_ts[8];
	uint8_t count[4];
	uint8_t raw_bytes[4];
	uint8_t comp_bytes[4];
	uint8_t flags[4];
	uint8_t payload_crc[4]; /* stored chunks (flags bit 0): crc32c of the payload; else 0 */
	uint8_t crc[4]; /* crc32c of the bytes before it */
};

struct trcfile__footer_image { /* FORMAT.md "Footer": the fixed part */
	uint8_t magic[4];
	uint8_t stream_count[4];
	uint8_t chunk_count[8];
};

struct trcfile__footer_stream_image { /* one per stream, after the fixed part */
	uint8_t id[4];
	uint8_t kind[4];
	uint8_t pid[4];
	uint8_t tid[4];
	uint8_t chunks[4];
	uint8_t reserved[4];
	uint8_t records[8];
};

struct trcfile__footer_chunk_image { /* one per chunk, after the streams */
	uint8_t offset[8];
	uint8_t stream_id[4];
	uint8_t seq[4];
	uint8_t first_ts[8];
	uint8_t last_ts[8];
	uint8_t count[4];
	uint8_t raw_bytes[4];
	uint8_t comp_bytes[4];
	uint8_t reserved[4];
};

struct trcfile__trailer_image { /* FORMAT.md "Trailer": the last bytes of the file */
	uint8_t footer_offset[8];
	uint8_t footer_bytes[8];
	uint8_t footer_crc[4];
	uint8_t trailer_crc[4]; /* crc32c of the bytes before it */
	uint8_t magic[8];
};

_Static_assert(sizeof(struct trcfile__file_hdr_image) == TRCFILE__HDR_FIXED_BYTES,
	       "header fields add up to its fixed size");
_Static_assert(sizeof(struct trcfile__chunk_hdr_image) == TRCFILE__CHUNK_HDR_BYTES,
	       "chunk header fields add up to its size");
_Static_assert(sizeof(struct trcfile__footer_image) == TRCFILE__FOOTER_FIXED_BYTES,
	       "footer fields add up to its fixed size");
_Static_assert(sizeof(struct trcfile__footer_stream_image) == TRCFILE__FOOTER_STREAM_BYTES,
	       "footer stream entry fields add up to its size");
_Static_assert(sizeof(struct trcfile__footer_chunk_image) == TRCFILE__FOOTER_CHUNK_BYTES,
	       "footer chunk entry fields add up to its size");
_Static_assert(sizeof(struct trcfile__trailer_image) == TRCFILE__TRAILER_BYTES,
	       "trailer fields add up to its size");
_Static_assert(sizeof(((struct trcfile__file_hdr_image *)0)->magic) == sizeof(TRCFILE__MAGIC) - 1 &&
		       sizeof(((struct trcfile__trailer_image *)0)->magic) ==
			       sizeof(TRCFILE__TRAILER_MAGIC) - 1,
	       "the magic strings fill their fields");

/* Field offset of a structure's image, for tests and tools that forge files. */
#define TRCFILE__OFFSET(image, field) offsetof(struct trcfile__##image##_image, field)

/* ---- little-endian helpers ------------------------------------------------------------- */

static inline void trcfile__put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void trcfile__put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void trcfile__put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t trcfile__get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t trcfile__get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t trcfile__get64(const uint8_t *p)
{
	return (uint64_t)trcfile__get32(p) | (uint64_t)trcfile__get32(p + 4) << 32;
}

/* A field of an image (see above) of n = 2, 4 or 8 bytes. */
static inline void trcfile__put_le(uint8_t *p, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t trcfile__get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* field = value / lvalue = field, for a field of an image; the two must be of one width. */
#define TRCFILE__PUT(field, value)                                                         \
	do {                                                                               \
		_Static_assert(sizeof(value) == sizeof(field), "width differs from disk"); \
		trcfile__put_le((field), sizeof(field), (value));                          \
	} while (0)
#define TRCFILE__GET(lvalue, field)                                                         \
	do {                                                                                \
		_Static_assert(sizeof(lvalue) == sizeof(field), "width differs from disk"); \
		(lvalue) = trcfile__get_le((field), sizeof(field));                         \
	} while (0)

/* CRC-32C (Castagnoli) of a buffer; crc = 0 to start. */
uint32_t trcfile__crc32c(uint32_t crc, const void *buf, size_t len);

/* ---- varints (LEB128, at most 10 bytes) --------------------------------------------------- */

static inline uint8_t *trcfile__put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t trcfile__zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t trcfile__unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Checked decode. Returns the new position, or NULL when the varint runs past end, is longer
 * than 10 bytes or does not fit in 64 bits. */
static inline const uint8_t *trcfile__get_varint(const uint8_t *p, const uint8_t *end,
						 uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (trcfile__unlikely(p >= end))
			return NULL;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return NULL;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return p;
		}
	}
	return NULL;
}

/* Unchecked-length decode: the caller guarantees 10 readable bytes. NULL on a varint that is
 * too long or too large (corrupt data). */
static inline const uint8_t *trcfile__get_varint_fast(const uint8_t *p, uint64_t *out)
{
	uint64_t b = p[0];
	if (trcfile__likely(b < 0x80)) {
		*out = b;
		return p + 1;
	}
	uint64_t v = b & 0x7f;
	b = p[1];
	v |= (b & 0x7f) << 7;
	if (b < 0x80) {
		*out = v;
		return p + 2;
	}
	for (unsigned i = 2; i < 10; i++) {
		b = p[i];
		if (i == 9 && b > 1)
			return NULL;
		v |= (b & 0x7f) << (7 * i);
		if (b < 0x80) {
			*out = v;
			return p + i + 1;
		}
	}
	return NULL;
}

/* ---- records -------------------------------------------------------------------------- */

/* Per-chunk coding state: deltas restart at every chunk so a chunk decodes alone. */
struct trcfile__coder {
	uint64_t ts; /* previous record's time (the chunk's first_ts at the start) */
	uint64_t alloc_addr; /* previous ALLOC/FREE address */
	uint64_t func_addr; /* previous FUNC_ENTER/EXIT address */
};

static inline void trcfile__coder_reset(struct trcfile__coder *c, uint64_t first_ts)
{
	c->ts = first_ts;
	c->alloc_addr = 0;
	c->func_addr = 0;
}

/* Validates r for encoding and returns the most bytes it can take, or -EINVAL. */
long trcfile__record_max_bytes(const struct trc_record *r);

/* Encodes r at p (room for trcfile__record_max_bytes(r) bytes); returns the end. r must have
 * passed trcfile__record_max_bytes. */
uint8_t *trcfile__encode(uint8_t *p, const struct trc_record *r, struct trcfile__coder *c);

/* Decodes one record from [*pp, end). Returns 0 and advances *pp, or -EBADMSG. Strings in
 * *r point into the buffer. Only the union member of the record's type is written; callers
 * must not read the others. */
int trcfile__decode_slow(const uint8_t **pp, const uint8_t *end, struct trcfile__coder *c,
			 struct trc_record *r);

/* An event record (TRC_REC_SPAN_BEGIN..TRC_REC_FUNC_EXIT) as the fast decoder hands it out:
 * plain fields instead of struct trc_record's union, so that a hot loop's copy of it can live
 * in registers (a union read at another width than it was written forces it to memory).
 *   span begin/end    a = name_id
 *   instant, counter  a = name_id, b = value (int64_t)
 *   alloc, free       a = addr, b = size (0 for free), stack = the alloc's stack id
 *   func enter/exit   a = addr, b = call_site */
struct trcfile__event {
	uint32_t type;
	uint32_t stack; /* alloc: its stack id (0 none) */
	uint64_t ts_ns;
	uint64_t a, b;
};

/* Where the fast decoder stops for a buffer [begin, end): past it fewer than
 * TRCFILE__FAST_MARGIN bytes remain. A loop computes it once per chunk. */
static inline const uint8_t *trcfile__fast_end(const uint8_t *begin, const uint8_t *end)
{
	return end - begin > (ptrdiff_t)TRCFILE__FAST_MARGIN ? end - TRCFILE__FAST_MARGIN : begin;
}

/* The decoder for hot loops: the event types with a delta >= 0, inline, without per-byte
 * bounds checks: it decodes the record at p only when p < fast_end (trcfile__fast_end of the
 * buffer), so that more than TRCFILE__FAST_MARGIN bytes remain, and declines it otherwise.
 * Returns the position after the record, with *ev filled and the coder advanced as
 * trcfile__decode_slow would; or NULL, the coder unchanged, when it declines the record
 * (another type, a negative delta, a reserved bit, too near the end, or damaged): decode that
 * one with trcfile__decode_slow, which also says whether it is damaged.
 *
 * It takes the position by value and calls nothing out of line, so a loop that keeps its
 * position, its struct trcfile__coder and its struct trcfile__event in locals, and hands
 * trcfile__decode_slow copies, keeps all of them in registers (the summary's pass over a
 * stream does: well over 100 million records a second). */
static inline const uint8_t *trcfile__decode_fast(const uint8_t *p, const uint8_t *fast_end,
						  struct trcfile__coder *c,
						  struct trcfile__event *ev)
{
	if (trcfile__unlikely(p >= fast_end))
		return NULL;
	/* Byte 0 of an event record with a delta >= 0 is its type: any reserved or sign bit
	 * makes it larger than every event type, so the dispatch below declines those too. The
	 * two varints every event starts with are read first (the margin makes that safe even
	 * when the record is declined). */
	const uint32_t type = p[0];
	uint64_t d, a, b = 0;
	const uint8_t *q = trcfile__get_varint_fast(p + 1, &d);
	if (trcfile__unlikely(!q))
		return NULL;
	q = trcfile__get_varint_fast(q, &a);
	if (trcfile__unlikely(!q))
		return NULL;
	/* Most frequent first; the coder changes only once the record decoded. */
	if (type - TRC_REC_SPAN_BEGIN <= TRC_REC_SPAN_END - TRC_REC_SPAN_BEGIN) {
		if (trcfile__unlikely(a > UINT32_MAX))
			return NULL;
	} else if (type - TRC_REC_INSTANT <= TRC_REC_COUNTER - TRC_REC_INSTANT) {
		if (trcfile__unlikely(a > UINT32_MAX))
			return NULL;
		q = trcfile__get_varint_fast(q, &b);
		if (trcfile__unlikely(!q))
			return NULL;
		b = (uint64_t)trcfile__unzigzag(b);
	} else if (type - TRC_REC_ALLOC <= TRC_REC_FREE - TRC_REC_ALLOC) {
		if (type == TRC_REC_ALLOC) {
			q = trcfile__get_varint_fast(q, &b);
			if (trcfile__unlikely(!q))
				return NULL;
		}
		c->alloc_addr += (uint64_t)trcfile__unzigzag(a);
		a = c->alloc_addr;
	} else if (type - TRC_REC_FUNC_ENTER <= TRC_REC_FUNC_EXIT - TRC_REC_FUNC_ENTER) {
		q = trcfile__get_varint_fast(q, &b);
		if (trcfile__unlikely(!q))
			return NULL;
		c->func_addr += (uint64_t)trcfile__unzigzag(a);
		a = c->func_addr;
		b = a + (uint64_t)trcfile__unzigzag(b);
	} else if (type == (TRC_REC_ALLOC | TRCFILE__ALLOC_HAS_STACK)) {
		uint64_t sid;
		q = trcfile__get_varint_fast(q, &b);
		if (trcfile__unlikely(!q))
			return NULL;
		q = trcfile__get_varint_fast(q, &sid);
		if (trcfile__unlikely(!q || sid == 0 || sid > UINT32_MAX))
			return NULL;
		c->alloc_addr += (uint64_t)trcfile__unzigzag(a);
		c->ts += d;
		ev->type = TRC_REC_ALLOC;
		ev->ts_ns = c->ts;
		ev->a = c->alloc_addr;
		ev->b = b;
		ev->stack = (uint32_t)sid;
		return q;
	} else {
		return NULL; /* not an event type, or a reserved or sign bit set */
	}
	c->ts += d;
	ev->type = type;
	ev->ts_ns = c->ts;
	ev->a = a;
	ev->b = b;
	ev->stack = 0;
	return q;
}

/* The record an event is. The event members of struct trc_record's union keep their second
 * field at one place and their first at another (asserted below), so two stores fill any of
 * them, and a third narrows the name id of the types that have one: no dispatch on the type
 * (the cursors call this once per record). */
_Static_assert(offsetof(struct trc_record, value.value) ==
			       offsetof(struct trc_record, alloc.size) &&
		       offsetof(struct trc_record, func.call_site) ==
			       offsetof(struct trc_record, alloc.size) &&
		       offsetof(struct trc_record, func.addr) ==
			       offsetof(struct trc_record, alloc.addr) &&
		       offsetof(struct trc_record, span.name_id) ==
			       offsetof(struct trc_record, alloc.addr) &&
		       offsetof(struct trc_record, value.name_id) ==
			       offsetof(struct trc_record, alloc.addr),
	       "the event members of struct trc_record share their fields' places");
static inline void trcfile__event_record(const struct trcfile__event *ev, struct trc_record *r)
{
	r->type = ev->type;
	r->ts_ns = ev->ts_ns;
	r->alloc.addr = ev->a; /* = func.addr */
	r->alloc.size = ev->b; /* = value.value, func.call_site */
	r->alloc.stack_id = ev->stack; /* a place no other event member uses */
	if (ev->type <= TRC_REC_COUNTER)
		r->span.name_id = (uint32_t)ev->a; /* = value.name_id, whatever the byte order */
}

/* Any record: trcfile__decode_fast, or trcfile__decode_slow where it declines. Same contract
 * as trcfile__decode_slow. */
static inline int trcfile__decode(const uint8_t **pp, const uint8_t *end, struct trcfile__coder *c,
				  struct trc_record *r)
{
	struct trcfile__event ev;
	const uint8_t *q = trcfile__decode_fast(*pp, trcfile__fast_end(*pp, end), c, &ev);
	if (trcfile__likely(q != NULL)) {
		trcfile__event_record(&ev, r);
		*pp = q;
		return 0;
	}
	return trcfile__decode_slow(pp, end, c, r);
}

/* ---- the fixed structures: one put and one get each ------------------------------------ *
 *
 * A put writes the whole structure (reserved fields 0, magic and checksum included) from its
 * decoded form; a get checks what the structure alone can say (magic, checksum, reserved
 * fields, sizes it holds) and fills the decoded form, or refuses with -EBADMSG and the reason.
 * Checks that need the rest of the file (offsets against its size, entries against each
 * other) are the reader's.
 */

/* The file header (FORMAT.md "Header"). */
struct trcfile__file_hdr {
	uint16_t version_major, version_minor;
	uint32_t header_bytes; /* the whole header, strings and checksum included */
	uint32_t flags;
	uint32_t pid;
	uint32_t clock_source;
	uint64_t tsc_hz;
	uint64_t start_mono_ns, start_realtime_ns;
	uint64_t rss_interval_ns;
	uint32_t rss_source;
	uint32_t chunk_bytes;
	uint64_t buffer_bytes;
	/* (pointer, length), not NUL-terminated; after a get they point into its buffer */
	const char *cmdline, *host, *tool;
	uint32_t cmdline_len, host_len, tool_len;
	/* The allocation stacks part (1.4), after the strings, present when alloc_stacks != 0:
	 * TRCFILE_ALLOC_STACKS_*, the depth cap, the sampling's mean bytes (sampled only). */
	uint32_t alloc_stacks, stack_depth;
	uint64_t sample_bytes;
};
#define TRCFILE__HDR_STACKS_BYTES 16u

/* The fewest bytes a header with h's strings takes (header_bytes may be more: bytes a newer
 * minor version appended, which readers skip). */
size_t trcfile__header_size(const struct trcfile__file_hdr *h);
/* Writes h->header_bytes bytes (>= trcfile__header_size(h)) at p. */
void trcfile__header_put(uint8_t *p, const struct trcfile__file_hdr *h);
/* Decodes the header at p, of which len >= TRCFILE__HDR_FIXED_BYTES bytes are at hand, of a
 * file of file_bytes bytes. Returns 0 with every field filled (strings point into p); 1 when
 * the fixed part passed its checks but len < h->header_bytes (call again with that many
 * bytes); or -EBADMSG, -EPROTONOSUPPORT (a newer major version) with the reason, as the reader
 * reports it, in why. */
int trcfile__header_get(const uint8_t *p, size_t len, uint64_t file_bytes,
			struct trcfile__file_hdr *h, char *why, size_t why_len);

/* The chunk header (FORMAT.md "Chunks"). */
struct trcfile__chunk_hdr {
	uint32_t stream_id, seq, kind, pid, tid;
	uint64_t first_ts, last_ts;
	uint32_t count, raw_bytes, comp_bytes, flags;
	uint32_t payload_crc; /* stored chunks: crc32c of the payload; else 0 */
};

void trcfile__chunk_hdr_put(uint8_t *p, const struct trcfile__chunk_hdr *h);
/* 0, or -EBADMSG with the reason in *why (bad magic, checksum, impossible sizes). Checks
 * what the header alone can say; the caller checks sizes against the file. */
int trcfile__chunk_hdr_get(const uint8_t *p, struct trcfile__chunk_hdr *h, const char **why);

/* The footer's fixed part (FORMAT.md "Footer"); its entries follow it. */
struct trcfile__footer {
	uint32_t stream_count;
	uint64_t chunk_count;
};

/* One stream entry of the footer. */
struct trcfile__footer_stream {
	uint32_t id, kind, pid, tid;
	uint32_t chunks;
	uint64_t records;
};

/* One chunk entry of the footer: where a chunk is, and its header's figures. */
struct trcfile__footer_chunk {
	uint64_t offset; /* of the chunk header */
	uint32_t stream_id, seq;
	uint64_t first_ts, last_ts;
	uint32_t count, raw_bytes, comp_bytes;
};

/* The trailer (FORMAT.md "Trailer"): the last TRCFILE__TRAILER_BYTES of a file. */
struct trcfile__trailer {
	uint64_t footer_offset, footer_bytes;
	uint32_t footer_crc; /* trcfile__crc32c of the footer's footer_bytes bytes */
};

/* Bytes of a footer with these many entries. */
static inline uint64_t trcfile__footer_bytes(uint64_t streams, uint64_t chunks)
{
	return TRCFILE__FOOTER_FIXED_BYTES + streams * TRCFILE__FOOTER_STREAM_BYTES +
	       chunks * TRCFILE__FOOTER_CHUNK_BYTES;
}

/* Byte offset of stream entry i / chunk entry i in a footer with `streams` streams. */
static inline uint64_t trcfile__footer_stream_at(uint64_t i)
{
	return TRCFILE__FOOTER_FIXED_BYTES + i * TRCFILE__FOOTER_STREAM_BYTES;
}

static inline uint64_t trcfile__footer_chunk_at(uint64_t streams, uint64_t i)
{
	return trcfile__footer_stream_at(streams) + i * TRCFILE__FOOTER_CHUNK_BYTES;
}

void trcfile__footer_put(uint8_t *p, const struct trcfile__footer *f);
/* Whether p (TRCFILE__FOOTER_FIXED_BYTES readable) starts with the footer's magic: where a
 * scan of the chunks meets a footer it could not use. */
bool trcfile__is_footer(const uint8_t *p);
/* p holds the whole footer the trailer t describes: checks its checksum, magic and that its
 * counts fill exactly t->footer_bytes. 0, or -EBADMSG with the reason in *why. */
int trcfile__footer_get(const uint8_t *p, const struct trcfile__trailer *t,
			struct trcfile__footer *f, const char **why);

/* The fixed part alone (p: its TRCFILE__FOOTER_FIXED_BYTES bytes) of a footer of `bytes` bytes
 * whose checksum the caller checks (trcfile_compact reads the footer piece by piece): its magic
 * and that its counts fill exactly `bytes`. 0, or -EBADMSG with the reason in *why. */
int trcfile__footer_fixed_get(const uint8_t *p, uint64_t bytes, struct trcfile__footer *f,
			      const char **why);

void trcfile__footer_stream_put(uint8_t *p, const struct trcfile__footer_stream *s);
/* 0, or -EBADMSG (unknown stream kind) with the reason in *why. */
int trcfile__footer_stream_get(const uint8_t *p, struct trcfile__footer_stream *s,
			       const char **why);

void trcfile__footer_chunk_put(uint8_t *p, const struct trcfile__footer_chunk *c);
/* 0, or -EBADMSG with the reason in *why: the figures no chunk header could hold (the same
 * checks as trcfile__chunk_hdr_get's). */
int trcfile__footer_chunk_get(const uint8_t *p, struct trcfile__footer_chunk *c, const char **why);

void trcfile__trailer_put(uint8_t *p, const struct trcfile__trailer *t);
/* 0; -ENOENT when the bytes are not a trailer at all (no magic: a file cut before its
 * footer); -EBADMSG when they are a damaged one. The reason is in *why. */
int trcfile__trailer_get(const uint8_t *p, struct trcfile__trailer *t, const char **why);

#endif /* TRC_TRCFILE_CODEC_H */
