/* trcfile_codec.h - private to src/trcfile_*.c: on-disk layout, varints, record encoding.
 *
 * Purpose: the byte-level half of src/FORMAT.md in one place, so the writer, the reader and
 * the summary's hot loop agree by construction. Everything on disk is little-endian.
 *
 * Threads: pure functions over caller memory; no shared state.
 *
 * Invariants:
 * - Encoding never writes more than trcfile__record_max_bytes() says.
 * - Decoding never reads past `end`, rejects every varint longer than 10 bytes or above the
 *   field's width, every string over TRCFILE_MAX_STRING_BYTES or past the chunk, every
 *   unknown type and reserved bit. The fast path skips per-byte checks only when at least
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
#define TRCFILE__HDR_FIXED_BYTES 96u
#define TRCFILE__HDR_MAX_BYTES (TRCFILE__HDR_FIXED_BYTES + 3u * TRCFILE_MAX_STRING_BYTES + 4096u)

#define TRCFILE__CHUNK_MAGIC 0x4b484354u /* "TCHK" */
#define TRCFILE__CHUNK_HDR_BYTES 64u

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

/* Bytes of the fixed part of the largest record (RSS: 1 + 13 varints of 10 bytes) plus a
 * string length varint. */
#define TRCFILE__FIXED_MAX_BYTES 160u
#define TRCFILE__FAST_MARGIN TRCFILE__FIXED_MAX_BYTES

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

/* The decoder for hot loops: the common event types inline, everything else out of line.
 * Same contract as trcfile__decode_slow. */
static inline int trcfile__decode(const uint8_t **pp, const uint8_t *end, struct trcfile__coder *c,
				  struct trc_record *r)
{
	const uint8_t *p = *pp;
	if (trcfile__unlikely(end - p < (ptrdiff_t)TRCFILE__FAST_MARGIN))
		return trcfile__decode_slow(pp, end, c, r);
	uint8_t t0 = p[0];
	uint32_t type = t0 & TRCFILE__TYPE_MASK;
	uint64_t d, a, b;
	if (trcfile__unlikely(t0 & (TRCFILE__RESERVED_BITS | TRCFILE__NEG_DELTA)) ||
	    type > TRC_REC_FUNC_EXIT || type == TRC_REC_INVALID)
		return trcfile__decode_slow(pp, end, c, r);
	p = trcfile__get_varint_fast(p + 1, &d);
	if (trcfile__unlikely(!p))
		return -EBADMSG;
	uint64_t ts = c->ts + d;
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		p = trcfile__get_varint_fast(p, &a);
		if (trcfile__unlikely(!p || a > UINT32_MAX))
			return -EBADMSG;
		r->span.name_id = (uint32_t)a;
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		p = trcfile__get_varint_fast(p, &a);
		if (trcfile__unlikely(!p || a > UINT32_MAX))
			return -EBADMSG;
		p = trcfile__get_varint_fast(p, &b);
		if (trcfile__unlikely(!p))
			return -EBADMSG;
		r->value.name_id = (uint32_t)a;
		r->value.value = trcfile__unzigzag(b);
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		p = trcfile__get_varint_fast(p, &a);
		if (trcfile__unlikely(!p))
			return -EBADMSG;
		c->alloc_addr += (uint64_t)trcfile__unzigzag(a);
		r->alloc.addr = c->alloc_addr;
		if (type == TRC_REC_ALLOC) {
			p = trcfile__get_varint_fast(p, &b);
			if (trcfile__unlikely(!p))
				return -EBADMSG;
			r->alloc.size = b;
		} else {
			r->alloc.size = 0;
		}
		break;
	default: /* FUNC_ENTER, FUNC_EXIT */
		p = trcfile__get_varint_fast(p, &a);
		if (trcfile__unlikely(!p))
			return -EBADMSG;
		p = trcfile__get_varint_fast(p, &b);
		if (trcfile__unlikely(!p))
			return -EBADMSG;
		c->func_addr += (uint64_t)trcfile__unzigzag(a);
		r->func.addr = c->func_addr;
		r->func.call_site = c->func_addr + (uint64_t)trcfile__unzigzag(b);
		break;
	}
	c->ts = ts;
	r->type = type;
	r->ts_ns = ts;
	*pp = p;
	return 0;
}

/* ---- header, chunk header, footer ------------------------------------------------------ */

struct trcfile__chunk_hdr {
	uint32_t stream_id, seq, kind, pid, tid;
	uint64_t first_ts, last_ts;
	uint32_t count, raw_bytes, comp_bytes, flags;
};

void trcfile__chunk_hdr_put(uint8_t *p, const struct trcfile__chunk_hdr *h);
/* 0, or -EBADMSG with the reason in *why (bad magic, checksum, impossible sizes). Checks
 * what the header alone can say; the caller checks sizes against the file. */
int trcfile__chunk_hdr_get(const uint8_t *p, struct trcfile__chunk_hdr *h, const char **why);

/* Encoded header size for these strings. */
size_t trcfile__header_bytes(const struct trcfile_header_info *h, uint32_t host_len,
			     uint32_t tool_len);
void trcfile__header_put(uint8_t *p, size_t bytes, const struct trcfile_header_info *h,
			 uint32_t chunk_bytes, uint32_t host_len, uint32_t tool_len);

#endif /* TRC_TRCFILE_CODEC_H */
