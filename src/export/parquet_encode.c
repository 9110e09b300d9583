/* parquet_encode.c - Parquet's value encodings and page headers (see parquet_encode.h).
 *
 * The RLE / bit-packing hybrid, as Encodings.md defines it:
 *   run := rle-run | bit-packed-run
 *   rle-run := varint(count << 1), then the value in ceil(bw / 8) bytes, little-endian
 *   bit-packed-run := varint(groups << 1 | 1), then groups x 8 values of bw bits each,
 *                     packed from the least significant bit of each byte
 * A bit-packed run covers a multiple of 8 values; only the last run of a page may be padded
 * (with zeros: the reader knows how many values the page holds). This encoder walks the values
 * once: a run of 8 or more equal values starting where the pending literals end on a group
 * boundary becomes an RLE run; everything else goes into the pending literal groups. Literals
 * are flushed before each RLE run and at the end.
 *
 * Threads: plain functions on caller-owned buffers.
 */
#include "parquet_encode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pq_buf_reserve(struct pq_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (b->cap - b->len >= n)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return b->err = -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

void pq_buf_put(struct pq_buf *b, const void *p, size_t n)
{
	if (n && pq_buf_reserve(b, n) == 0) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
	}
}

void pq_buf_u32le(struct pq_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	pq_buf_put(b, x, 4);
}

void pq_buf_i64le(struct pq_buf *b, int64_t v)
{
	uint64_t u = (uint64_t)v;
	uint8_t x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(u >> (8 * i));
	pq_buf_put(b, x, 8);
}

void pq_buf_free(struct pq_buf *b)
{
	if (!b)
		return;
	free(b->p);
	memset(b, 0, sizeof(*b));
}

unsigned pq_bit_width(uint64_t max)
{
	unsigned bw = 0;
	while (max) {
		bw++;
		max >>= 1;
	}
	return bw;
}

static void pq__uvarint(struct pq_buf *b, uint64_t v)
{
	if (pq_buf_reserve(b, 10) == 0)
		b->len += thrift_put_uvarint(b->p + b->len, v);
}

/* One bit-packed run of the n values v (n a multiple of 8, or the page's last values). */
static void pq__literals(struct pq_buf *out, const uint32_t *v, size_t n, unsigned bw)
{
	if (!n)
		return;
	size_t groups = (n + 7) / 8;
	pq__uvarint(out, groups << 1 | 1);
	size_t bytes = groups * bw; /* 8 values of bw bits = bw bytes */
	if (pq_buf_reserve(out, bytes))
		return;
	uint8_t *p = out->p + out->len;
	memset(p, 0, bytes);
	/* An accumulator of at most 7 + 32 bits: bytes leave it as soon as they are whole. */
	uint64_t acc = 0;
	unsigned nb = 0;
	for (size_t i = 0; i < n; i++) {
		acc |= (uint64_t)v[i] << nb;
		nb += bw;
		while (nb >= 8) {
			*p++ = (uint8_t)acc;
			acc >>= 8;
			nb -= 8;
		}
	}
	if (nb)
		*p = (uint8_t)acc;
	out->len += bytes;
}

static void pq__rle_run(struct pq_buf *out, uint32_t value, size_t count, unsigned bw)
{
	pq__uvarint(out, (uint64_t)count << 1);
	uint8_t x[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
			(uint8_t)(value >> 24)};
	pq_buf_put(out, x, (bw + 7) / 8);
}

void pq_rle_encode(struct pq_buf *out, const uint32_t *v, size_t n, unsigned bw)
{
	if (!n)
		return; /* nothing to encode; v may be NULL (an empty column), and v + 0 with it */
	size_t lit = 0; /* start of the pending literals */
	size_t i = 0;
	while (i < n) {
		size_t run = 1;
		while (i + run < n && v[i + run] == v[i])
			run++;
		/* Literals must be whole groups before an RLE run may start. */
		size_t pad = (8 - (i - lit) % 8) % 8;
		if (run >= pad + 8) {
			i += pad;
			run -= pad;
			pq__literals(out, v + lit, i - lit, bw);
			pq__rle_run(out, v[i], run, bw);
			i += run;
			lit = i;
		} else {
			i += run;
		}
	}
	pq__literals(out, v + lit, n - lit, bw);
}

/* PageHeader fields: 1 type, 2 uncompressed_page_size, 3 compressed_page_size,
 * 5 data_page_header, 7 dictionary_page_header. */
void pq_data_page_header(struct thrift_enc *e, int32_t uncompressed_bytes, int32_t compressed_bytes,
			 int32_t num_values, enum pq_encoding encoding)
{
	thrift_field_i32(e, 1, PQ_PAGE_DATA);
	thrift_field_i32(e, 2, uncompressed_bytes);
	thrift_field_i32(e, 3, compressed_bytes);
	thrift_field_struct(e, 5);
	/* DataPageHeader: 1 num_values, 2 encoding, 3 definition_level_encoding,
	 * 4 repetition_level_encoding */
	thrift_field_i32(e, 1, num_values);
	thrift_field_i32(e, 2, encoding);
	thrift_field_i32(e, 3, PQ_ENC_RLE);
	thrift_field_i32(e, 4, PQ_ENC_RLE);
	thrift_struct_end(e);
	thrift_struct_end(e);
}

void pq_dict_page_header(struct thrift_enc *e, int32_t uncompressed_bytes, int32_t compressed_bytes,
			 int32_t num_values)
{
	thrift_field_i32(e, 1, PQ_PAGE_DICTIONARY);
	thrift_field_i32(e, 2, uncompressed_bytes);
	thrift_field_i32(e, 3, compressed_bytes);
	thrift_field_struct(e, 7);
	/* DictionaryPageHeader: 1 num_values, 2 encoding */
	thrift_field_i32(e, 1, num_values);
	thrift_field_i32(e, 2, PQ_ENC_PLAIN);
	thrift_struct_end(e);
	thrift_struct_end(e);
}
