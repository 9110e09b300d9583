/* parquet_encode.h - Parquet's value encodings and page framing, for parquet_writer.c.
 *
 * Purpose: the byte-level pieces of a Parquet column chunk, kept apart from the file writer so
 * each can be tested byte for byte:
 *   - pq_buf: a growable byte buffer (sticky -ENOMEM);
 *   - the RLE / bit-packing hybrid (dictionary indices, definition levels): runs of 8 or more
 *     equal values become RLE runs, the rest bit-packed groups of 8 values, LSB first;
 *   - PLAIN: INT64 as 8 bytes little-endian, BYTE_ARRAY as a u32 LE length then the bytes;
 *   - page headers (Thrift PageHeader with a DataPageHeader or DictionaryPageHeader).
 *
 * Invariants: bit widths are 0..32; every value given to the RLE encoder fits its bit width.
 * Threads: plain functions on caller-owned buffers.
 * Reference: apache/parquet-format Encodings.md (PLAIN, RLE, RLE_DICTIONARY) and
 * src/main/thrift/parquet.thrift (PageHeader, DataPageHeader, DictionaryPageHeader).
 */
#ifndef TRC_PARQUET_ENCODE_H
#define TRC_PARQUET_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "thrift_compact.h"

/* parquet.thrift enums used by the writer. */
enum pq_physical { PQ_T_BOOLEAN = 0, PQ_T_INT32 = 1, PQ_T_INT64 = 2, PQ_T_BYTE_ARRAY = 6 };
enum pq_encoding { PQ_ENC_PLAIN = 0, PQ_ENC_RLE = 3, PQ_ENC_RLE_DICTIONARY = 8 };
enum pq_page_type { PQ_PAGE_DATA = 0, PQ_PAGE_DICTIONARY = 2 };
#define PQ_CODEC_UNCOMPRESSED 0
#define PQ_CODEC_ZSTD 6

struct pq_buf {
	uint8_t *p;
	size_t len, cap;
	int err; /* 0 or -ENOMEM, sticky */
};

/* Makes room for n more bytes; 0 or -ENOMEM (also sticky in b->err). */
int pq_buf_reserve(struct pq_buf *b, size_t n);
void pq_buf_put(struct pq_buf *b, const void *p, size_t n);
void pq_buf_u32le(struct pq_buf *b, uint32_t v);
void pq_buf_i64le(struct pq_buf *b, int64_t v);
void pq_buf_free(struct pq_buf *b);

/* Bits needed for values 0..max (0 for max 0). */
unsigned pq_bit_width(uint64_t max);

/* Appends the RLE / bit-packed hybrid encoding of v[0..n) at bit width bw (no length prefix,
 * no bit-width byte: the caller adds what the context needs). */
void pq_rle_encode(struct pq_buf *out, const uint32_t *v, size_t n, unsigned bw);

/* Appends a PageHeader for a v1 data page of num_values values (nulls included) encoded with
 * `encoding`, definition and repetition levels RLE. */
void pq_data_page_header(struct thrift_enc *e, int32_t uncompressed_bytes, int32_t compressed_bytes,
			 int32_t num_values, enum pq_encoding encoding);
/* Appends a PageHeader for a PLAIN dictionary page of num_values entries. */
void pq_dict_page_header(struct thrift_enc *e, int32_t uncompressed_bytes, int32_t compressed_bytes,
			 int32_t num_values);

#endif /* TRC_PARQUET_ENCODE_H */
