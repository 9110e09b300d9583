/* pb_wire.h - a protobuf wire-format writer: varints, tags, length-delimited fields, nesting.
 *
 * Purpose: the one encoder of Protocol Buffers bytes in the tree, for the exporters that write
 * protobuf (trace-dump perfetto: Perfetto's TracePacket; pprof's profile.proto). Protobuf on
 * the wire is simple enough that no library is needed: each field is a tag (field number << 3
 * | wire type) as a varint, then a varint (wire type 0), 8 bytes (1), a length-prefixed
 * payload (2: strings, bytes, nested messages) or 4 bytes (5). Reference:
 * https://protobuf.dev/programming-guides/encoding/
 *
 * The buffer grows by doubling (realloc). Nested messages: pb_open writes the tag and reserves
 * one byte for the length; pb_close writes the length and, when it needs more than one byte,
 * moves the payload up. So small nested messages (most of them) cost no copy, and the output
 * is the canonical (shortest) encoding that protoc and every decoder accept.
 *
 * Errors: an allocation failure makes the buffer sticky-failed (err = -ENOMEM): later writes
 * do nothing, and the caller checks err once when it is done with the message.
 *
 * Invariants: pb_open/pb_close pairs nest like parentheses (the mark of pb_open is given back
 * to pb_close); len never exceeds cap.
 *
 * Threads: a buffer belongs to one thread; no globals.
 */
#ifndef TRC_PB_WIRE_H
#define TRC_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum pb_wire_type { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	int err; /* 0, or -ENOMEM (sticky) */
};

/* Makes room for n more bytes; 0, or -ENOMEM (and err set). */
int pb__grow(struct pb_buf *b, size_t n);

static inline int pb_reserve(struct pb_buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	return pb__grow(b, n);
}

static inline void pb_reset(struct pb_buf *b)
{
	b->len = 0;
}

void pb_buf_free(struct pb_buf *b);

/* Bytes of v as a varint (1..10). */
static inline unsigned pb_varint_size(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v as a varint at p (room for 10 bytes); returns the byte after it. */
static inline uint8_t *pb_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline void pb_varint(struct pb_buf *b, uint64_t v)
{
	if (pb_reserve(b, 10))
		return;
	b->len = (size_t)(pb_put_varint(b->p + b->len, v) - b->p);
}

static inline void pb_tag(struct pb_buf *b, uint32_t field, enum pb_wire_type t)
{
	pb_varint(b, ((uint64_t)field << 3) | (uint64_t)t);
}

/* uint32/uint64/int32/int64/bool/enum fields (int64 negative values take 10 bytes, as
 * protobuf's int64 does). */
static inline void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (pb_reserve(b, 20))
		return;
	uint8_t *p = pb_put_varint(b->p + b->len, ((uint64_t)field << 3) | PB_VARINT);
	b->len = (size_t)(pb_put_varint(p, v) - b->p);
}

static inline void pb_int(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

/* sint32/sint64 fields (zigzag). */
static inline void pb_sint(struct pb_buf *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* string/bytes fields. */
void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t n);

static inline void pb_str(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* A nested message (or packed repeated field): pb_open returns a mark for pb_close. */
size_t pb_open(struct pb_buf *b, uint32_t field);
void pb_close(struct pb_buf *b, size_t mark);

#endif /* TRC_PB_WIRE_H */
