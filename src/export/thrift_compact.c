/* thrift_compact.c - the Thrift compact-protocol encoder (see thrift_compact.h).
 *
 * Purpose: bytes of Parquet's Thrift structs, byte for byte what Apache Thrift's
 * TCompactProtocol writes for the same calls (tests/test_parquet.c checks small structs
 * against hand-derived bytes).
 *
 * Field header: one byte (delta << 4 | type) when the id is 1..15 above the previous field of
 * the same struct, else the type byte followed by the id as a zigzag varint (i16). Booleans
 * have no value byte: the type is 1 (true) or 2 (false). Integers are zigzag varints; binary is
 * a varint length then the bytes. A list header is one byte (size << 4 | elem) for fewer than
 * 15 elements, else 0xf0 | elem followed by the size as a varint.
 *
 * Threads: an encoder belongs to one thread. Memory: the buffer doubles as needed.
 */
#include "thrift_compact.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void thrift_enc_init(struct thrift_enc *e)
{
	memset(e, 0, sizeof(*e));
}

void thrift_enc_reset(struct thrift_enc *e)
{
	e->len = 0;
	e->err = 0;
	e->depth = 0;
	e->last_id[0] = 0;
}

void thrift_enc_free(struct thrift_enc *e)
{
	if (!e)
		return;
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

static bool thrift__reserve(struct thrift_enc *e, size_t n)
{
	if (e->err)
		return false;
	if (e->cap - e->len >= n)
		return true;
	size_t cap = e->cap ? e->cap : 256;
	while (cap - e->len < n)
		cap *= 2;
	uint8_t *p = realloc(e->buf, cap);
	if (!p) {
		e->err = -ENOMEM;
		return false;
	}
	e->buf = p;
	e->cap = cap;
	return true;
}

size_t thrift_put_uvarint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static void thrift__uvarint(struct thrift_enc *e, uint64_t v)
{
	if (thrift__reserve(e, 10))
		e->len += thrift_put_uvarint(e->buf + e->len, v);
}

static void thrift__byte(struct thrift_enc *e, uint8_t b)
{
	if (thrift__reserve(e, 1))
		e->buf[e->len++] = b;
}

static void thrift__bytes(struct thrift_enc *e, const void *p, size_t n)
{
	thrift__uvarint(e, n);
	if (n && thrift__reserve(e, n)) {
		memcpy(e->buf + e->len, p, n);
		e->len += n;
	}
}

static void thrift__field(struct thrift_enc *e, int16_t id, enum thrift_type t)
{
	if (e->err)
		return;
	int delta = id - e->last_id[e->depth];
	if (delta > 0 && delta <= 15) {
		thrift__byte(e, (uint8_t)(delta << 4 | (int)t));
	} else {
		thrift__byte(e, (uint8_t)t);
		thrift__uvarint(e, thrift_zigzag64(id));
	}
	e->last_id[e->depth] = id;
}

void thrift_field_i32(struct thrift_enc *e, int16_t id, int32_t v)
{
	thrift__field(e, id, THRIFT_I32);
	thrift__uvarint(e, thrift_zigzag64(v));
}

void thrift_field_i64(struct thrift_enc *e, int16_t id, int64_t v)
{
	thrift__field(e, id, THRIFT_I64);
	thrift__uvarint(e, thrift_zigzag64(v));
}

void thrift_field_bool(struct thrift_enc *e, int16_t id, bool v)
{
	thrift__field(e, id, v ? THRIFT_BOOL_TRUE : THRIFT_BOOL_FALSE);
}

void thrift_field_binary(struct thrift_enc *e, int16_t id, const void *p, size_t n)
{
	thrift__field(e, id, THRIFT_BINARY);
	thrift__bytes(e, p, n);
}

void thrift_field_string(struct thrift_enc *e, int16_t id, const char *s)
{
	thrift_field_binary(e, id, s, strlen(s));
}

static void thrift__push(struct thrift_enc *e)
{
	if (e->err)
		return;
	if (e->depth + 1 >= THRIFT_MAX_DEPTH) {
		e->err = -EOVERFLOW;
		return;
	}
	e->last_id[++e->depth] = 0;
}

void thrift_field_struct(struct thrift_enc *e, int16_t id)
{
	thrift__field(e, id, THRIFT_STRUCT);
	thrift__push(e);
}

void thrift_field_list(struct thrift_enc *e, int16_t id, enum thrift_type elem, uint32_t n)
{
	thrift__field(e, id, THRIFT_LIST);
	if (n < 15) {
		thrift__byte(e, (uint8_t)(n << 4 | elem));
	} else {
		thrift__byte(e, (uint8_t)(0xf0 | elem));
		thrift__uvarint(e, n);
	}
}

void thrift_elem_i32(struct thrift_enc *e, int32_t v)
{
	thrift__uvarint(e, thrift_zigzag64(v));
}

void thrift_elem_binary(struct thrift_enc *e, const void *p, size_t n)
{
	thrift__bytes(e, p, n);
}

void thrift_struct_begin(struct thrift_enc *e)
{
	thrift__push(e);
}

void thrift_struct_end(struct thrift_enc *e)
{
	thrift__byte(e, 0); /* STOP */
	if (e->err)
		return;
	if (e->depth)
		e->depth--;
	else
		e->last_id[0] = 0; /* a top-level struct ended; another may follow */
}
