/* thrift_compact.h - a Thrift compact-protocol encoder, just enough for Parquet's metadata.
 *
 * Purpose: Parquet's page headers and its footer (FileMetaData) are Thrift structs serialized
 * with the compact protocol. This encoder writes them by hand (no generated code, no Thrift
 * library): the caller names each field by its id in parquet.thrift and the encoder writes the
 * field header (a delta from the previous id of the same struct when it fits in 4 bits, else the
 * full zigzag id), then the value: integers as zigzag varints, binary/strings as a varint length
 * and the bytes, booleans folded into the field header, lists as a size/element-type header.
 *
 * Invariants: field ids of one struct must be written in increasing order (the compact protocol
 * allows any order, but deltas only work upwards and readers of Parquet expect ascending ids);
 * every thrift_struct_begin / thrift_field_struct is closed by thrift_struct_end, which writes
 * the STOP byte. Nesting is bounded (THRIFT_MAX_DEPTH). Errors (out of memory, nesting) are
 * sticky: the calls do nothing after the first one, and thrift_enc_error says which.
 *
 * Threads: an encoder belongs to one thread.
 *
 * Reference: Apache Thrift, doc/specs/thrift-compact-protocol.md; apache/parquet-format,
 * src/main/thrift/parquet.thrift (the structs and their field ids).
 */
#ifndef TRC_THRIFT_COMPACT_H
#define TRC_THRIFT_COMPACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compact-protocol type codes (field headers and list headers). */
enum thrift_type {
	THRIFT_BOOL_TRUE = 1, /* in a list: any bool element */
	THRIFT_BOOL_FALSE = 2,
	THRIFT_BYTE = 3,
	THRIFT_I16 = 4,
	THRIFT_I32 = 5,
	THRIFT_I64 = 6,
	THRIFT_DOUBLE = 7,
	THRIFT_BINARY = 8,
	THRIFT_LIST = 9,
	THRIFT_SET = 10,
	THRIFT_MAP = 11,
	THRIFT_STRUCT = 12,
};

#define THRIFT_MAX_DEPTH 16

/* A growable output buffer plus the last field id of each open struct. */
struct thrift_enc {
	uint8_t *buf;
	size_t len, cap;
	int err; /* 0 or the first -errno */
	unsigned depth;
	int16_t last_id[THRIFT_MAX_DEPTH];
};

/* Initialises e (empty buffer, top-level struct open at depth 0). */
void thrift_enc_init(struct thrift_enc *e);
/* Forgets the bytes, keeps the buffer (for the next header). */
void thrift_enc_reset(struct thrift_enc *e);
void thrift_enc_free(struct thrift_enc *e);
static inline int thrift_enc_error(const struct thrift_enc *e)
{
	return e->err;
}

/* Fields of the current struct. */
void thrift_field_i32(struct thrift_enc *e, int16_t id, int32_t v);
void thrift_field_i64(struct thrift_enc *e, int16_t id, int64_t v);
void thrift_field_bool(struct thrift_enc *e, int16_t id, bool v);
void thrift_field_binary(struct thrift_enc *e, int16_t id, const void *p, size_t n);
void thrift_field_string(struct thrift_enc *e, int16_t id, const char *s);
/* A struct-valued field: opens a nested struct (close it with thrift_struct_end). */
void thrift_field_struct(struct thrift_enc *e, int16_t id);
/* A list-valued field of n elements of type elem; then write exactly n elements with the
 * thrift_elem_* calls (or thrift_struct_begin/end per struct element). */
void thrift_field_list(struct thrift_enc *e, int16_t id, enum thrift_type elem, uint32_t n);

/* List elements. */
void thrift_elem_i32(struct thrift_enc *e, int32_t v);
void thrift_elem_binary(struct thrift_enc *e, const void *p, size_t n);
/* Opens a struct element of a list (or a top-level struct after the first). */
void thrift_struct_begin(struct thrift_enc *e);
/* Writes STOP and closes the innermost open struct. */
void thrift_struct_end(struct thrift_enc *e);

/* The raw encodings, exposed for the Parquet page encoder and for tests. */
size_t thrift_put_uvarint(uint8_t *out, uint64_t v); /* out needs 10 bytes; returns bytes */
static inline uint64_t thrift_zigzag64(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

#endif /* TRC_THRIFT_COMPACT_H */
