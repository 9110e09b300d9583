/* test_parquet.c - the Parquet writer (src/export/): Thrift compact encoding, the RLE /
 * bit-packed hybrid, page headers and a whole small file, byte for byte.
 *
 * Expected bytes are derived by hand from the specifications (Thrift's compact protocol;
 * parquet-format's parquet.thrift field ids and Encodings.md), written out in the comments
 * beside them, never produced by the code under test. Reading by real engines is checked by
 * the DuckDB tier (tests/duckdb_check.mjs, make test-duckdb).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parquet_encode.h"
#include "parquet_writer.h"
#include "thrift_compact.h"

static void tp_expect(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	char g[2048] = "", w[2048] = "";
	for (size_t i = 0; i < got_len && i < 600; i++)
		snprintf(g + strlen(g), sizeof(g) - strlen(g), "%02x ", got[i]);
	for (size_t i = 0; i < want_len && i < 600; i++)
		snprintf(w + strlen(w), sizeof(w) - strlen(w), "%02x ", want[i]);
	cr_assert(got_len == want_len && !memcmp(got, want, want_len),
		  "bytes differ\n got:  %s\n want: %s", g, w);
}

Test(parquet, thrift_compact_fields_byte_exact, .timeout = 60)
{
	struct thrift_enc e;
	thrift_enc_init(&e);
	thrift_field_i32(&e, 1, 5);
	thrift_field_bool(&e, 2, true);
	thrift_field_i64(&e, 3, -1);
	thrift_field_binary(&e, 4, "ab", 2);
	thrift_field_list(&e, 5, THRIFT_I32, 3);
	thrift_elem_i32(&e, 1);
	thrift_elem_i32(&e, -2);
	thrift_elem_i32(&e, 300);
	thrift_field_struct(&e, 6);
	thrift_field_i32(&e, 1, 0);
	thrift_struct_end(&e);
	thrift_field_bool(&e, 21, false); /* delta 15: still a short header */
	thrift_field_i32(&e, 40, 1); /* delta 19: long form */
	thrift_field_list(&e, 41, THRIFT_BINARY, 20);
	for (int i = 0; i < 20; i++)
		thrift_elem_binary(&e, "", 0);
	thrift_struct_end(&e);
	cr_assert_eq(thrift_enc_error(&e), 0);
	/* clang-format off */
	static const uint8_t want[] = {
		0x15, 0x0a, /* 1: i32 5 (zigzag 10) */
		0x11, /* 2: bool true (type 1, no value byte) */
		0x16, 0x01, /* 3: i64 -1 (zigzag 1) */
		0x18, 0x02, 'a', 'b', /* 4: binary "ab" */
		0x19, 0x35, 0x02, 0x03, 0xd8, 0x04, /* 5: list<i32> 3: 1, -2, 300 (zigzag 600) */
		0x1c, 0x15, 0x00, 0x00, /* 6: struct { 1: i32 0 } */
		0xf2, /* 21: bool false, delta 15 */
		0x05, 0x50, 0x02, /* 40: i32 1, long form: type, zigzag id 80 */
		0x19, 0xf8, 0x14, /* 41: list<binary> of 20: 0xf0 | type, varint size */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 20 empty strings */
		0x00, /* STOP */
	};
	/* clang-format on */
	tp_expect(e.buf, e.len, want, sizeof(want));
	thrift_enc_free(&e);
}

Test(parquet, thrift_nesting_is_bounded, .timeout = 60)
{
	struct thrift_enc e;
	thrift_enc_init(&e);
	for (int i = 0; i < THRIFT_MAX_DEPTH + 2; i++)
		thrift_field_struct(&e, 1);
	cr_assert_eq(thrift_enc_error(&e), -EOVERFLOW);
	thrift_enc_free(&e);
}

Test(parquet, rle_hybrid_byte_exact, .timeout = 60)
{
	struct pq_buf b = {0};
	/* Ten zeros at bit width 1: one RLE run, header varint(10 << 1), value in one byte. */
	static const uint32_t zeros[10] = {0};
	pq_rle_encode(&b, zeros, 10, 1);
	tp_expect(b.p, b.len, (const uint8_t[]){0x14, 0x00}, 2);

	/* Nine mixed bits: one bit-packed run of 2 groups (header 2 << 1 | 1), LSB first:
	 * 1,0,1,1,0,0,1,0 -> 0b01001101; 1 then zero padding -> 0x01. */
	b.len = 0;
	static const uint32_t bits[9] = {1, 0, 1, 1, 0, 0, 1, 0, 1};
	pq_rle_encode(&b, bits, 9, 1);
	tp_expect(b.p, b.len, (const uint8_t[]){0x05, 0x4d, 0x01}, 3);

	/* 1, 2, 3 then thirteen 5s at bit width 3: the literals are completed to a group of 8
	 * with five of the 5s (header 1 << 1 | 1; 8 x 3 bits = d1 da b6), then an RLE run of
	 * the other 8 (header 8 << 1, value 05). */
	b.len = 0;
	uint32_t mixed[16] = {1, 2, 3};
	for (int i = 3; i < 16; i++)
		mixed[i] = 5;
	pq_rle_encode(&b, mixed, 16, 3);
	tp_expect(b.p, b.len, (const uint8_t[]){0x03, 0xd1, 0xda, 0xb6, 0x10, 0x05}, 6);

	/* A value of 9 bits takes 2 bytes in an RLE run. */
	b.len = 0;
	static const uint32_t wide[8] = {300, 300, 300, 300, 300, 300, 300, 300};
	pq_rle_encode(&b, wide, 8, 9);
	tp_expect(b.p, b.len, (const uint8_t[]){0x10, 0x2c, 0x01}, 3);
	pq_buf_free(&b);

	cr_assert_eq(pq_bit_width(0), 0);
	cr_assert_eq(pq_bit_width(1), 1);
	cr_assert_eq(pq_bit_width(7), 3);
	cr_assert_eq(pq_bit_width(8), 4);
}

Test(parquet, page_headers_byte_exact, .timeout = 60)
{
	struct thrift_enc e;
	thrift_enc_init(&e);
	pq_data_page_header(&e, 100, 50, 10, PQ_ENC_RLE_DICTIONARY);
	/* clang-format off */
	static const uint8_t data[] = {
		0x15, 0x00, /* 1 type: DATA_PAGE */
		0x15, 0xc8, 0x01, /* 2 uncompressed_page_size 100 */
		0x15, 0x64, /* 3 compressed_page_size 50 */
		0x2c, /* 5 data_page_header */
		0x15, 0x14, /* 1 num_values 10 */
		0x15, 0x10, /* 2 encoding RLE_DICTIONARY (8) */
		0x15, 0x06, /* 3 definition_level_encoding RLE (3) */
		0x15, 0x06, /* 4 repetition_level_encoding RLE */
		0x00, 0x00,
	};
	/* clang-format on */
	tp_expect(e.buf, e.len, data, sizeof(data));
	thrift_enc_reset(&e);
	pq_dict_page_header(&e, 7, 7, 2);
	/* clang-format off */
	static const uint8_t dict[] = {
		0x15, 0x04, /* 1 type: DICTIONARY_PAGE (2) */
		0x15, 0x0e, 0x15, 0x0e, /* 2, 3 sizes 7 */
		0x4c, /* 7 dictionary_page_header (delta 4) */
		0x15, 0x04, /* 1 num_values 2 */
		0x15, 0x00, /* 2 encoding PLAIN */
		0x00, 0x00,
	};
	/* clang-format on */
	tp_expect(e.buf, e.len, dict, sizeof(dict));
	thrift_enc_free(&e);
}

static uint8_t *tp_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* One REQUIRED INT64 column "v" holding 1 and 2, uncompressed: every byte of the file. */
Test(parquet, whole_small_file_byte_exact, .timeout = 60)
{
	char path[] = "/tmp/trc-parquet-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	static const struct pq_col_def cols[] = {{"v", PQ_COL_INT64, false}};
	struct pq_writer_opts o = {.uncompressed = true, .created_by = "t"};
	int err = 1;
	struct pq_writer *w = pq_writer_open(path, cols, 1, &o, &err);
	cr_assert_not_null(w);
	cr_assert_eq(err, 0);
	for (int64_t v = 1; v <= 2; v++) {
		cr_assert_eq(pq_put_i64(w, 0, v), 0);
		cr_assert_eq(pq_end_row(w), 0);
	}
	cr_assert_eq(pq_writer_close(w), 0);
	size_t n;
	uint8_t *got = tp_slurp(path, &n);
	unlink(path);
	/* clang-format off */
	static const uint8_t want[] = {
		'P', 'A', 'R', '1',
		/* offset 4: PageHeader (17 bytes): DATA_PAGE, sizes 16, 2 values, PLAIN, RLE, RLE */
		0x15, 0x00, 0x15, 0x20, 0x15, 0x20, 0x2c, 0x15, 0x04, 0x15, 0x00, 0x15, 0x06, 0x15,
		0x06, 0x00, 0x00,
		/* PLAIN int64 1, 2 */
		1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
		/* offset 37: FileMetaData */
		0x15, 0x04, /* 1 version 2 */
		0x19, 0x2c, /* 2 schema: list of 2 structs */
		0x48, 0x06, 's', 'c', 'h', 'e', 'm', 'a', 0x15, 0x02, 0x00, /* root: name, 1 child */
		0x15, 0x04, 0x25, 0x00, 0x18, 0x01, 'v', 0x00, /* v: INT64, REQUIRED, name */
		0x16, 0x04, /* 3 num_rows 2 */
		0x19, 0x1c, /* 4 row_groups: list of 1 struct */
		0x19, 0x1c, /* RowGroup 1 columns: list of 1 struct */
		0x26, 0x08, /* ColumnChunk 2 file_offset 4 */
		0x1c, /* 3 meta_data */
		0x15, 0x04, /* 1 type INT64 */
		0x19, 0x25, 0x00, 0x06, /* 2 encodings: PLAIN, RLE */
		0x19, 0x18, 0x01, 'v', /* 3 path_in_schema ["v"] */
		0x15, 0x00, /* 4 codec UNCOMPRESSED */
		0x16, 0x04, /* 5 num_values 2 */
		0x16, 0x42, 0x16, 0x42, /* 6, 7 sizes 33 (header 17 + 16) */
		0x26, 0x08, /* 9 data_page_offset 4 */
		0x3c, /* 12 statistics */
		0x36, 0x00, /* 3 null_count 0 */
		0x28, 0x08, 2, 0, 0, 0, 0, 0, 0, 0, /* 5 max_value 2 */
		0x18, 0x08, 1, 0, 0, 0, 0, 0, 0, 0, /* 6 min_value 1 */
		0x00, 0x00, 0x00, /* end Statistics, ColumnMetaData, ColumnChunk */
		0x16, 0x42, /* RowGroup 2 total_byte_size 33 (delta 1 from the columns list) */
		0x16, 0x04, /* 3 num_rows 2 */
		0x26, 0x08, /* 5 file_offset 4 */
		0x16, 0x42, /* 6 total_compressed_size 33 */
		0x00, /* end RowGroup */
		0x28, 0x01, 't', /* 6 created_by "t" */
		0x19, 0x1c, 0x1c, 0x00, 0x00, /* 7 column_orders: [TYPE_ORDER {}] */
		0x00, /* end FileMetaData */
		/* footer length (96 bytes), magic */
		96, 0, 0, 0, 'P', 'A', 'R', '1',
	};
	/* clang-format on */
	tp_expect(got, n, want, sizeof(want));
	free(got);
}

/* One REQUIRED STRING column "s" holding "b", "a", uncompressed: a dictionary page, a data page
 * of RLE_DICTIONARY indices, and the column metadata that points at both. */
Test(parquet, string_column_byte_exact, .timeout = 60)
{
	char path[] = "/tmp/trc-parquet-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	static const struct pq_col_def cols[] = {{"s", PQ_COL_STRING, false}};
	struct pq_writer_opts o = {.uncompressed = true, .created_by = "t"};
	int err = 1;
	struct pq_writer *w = pq_writer_open(path, cols, 1, &o, &err);
	cr_assert_not_null(w);
	cr_assert_eq(pq_put_str(w, 0, "b", 1), 0);
	cr_assert_eq(pq_end_row(w), 0);
	cr_assert_eq(pq_put_str(w, 0, "a", 1), 0);
	cr_assert_eq(pq_end_row(w), 0);
	cr_assert_eq(pq_writer_close(w), 0);
	size_t n;
	uint8_t *got = tp_slurp(path, &n);
	unlink(path);
	/* clang-format off */
	static const uint8_t want[] = {
		'P', 'A', 'R', '1',
		/* offset 4: dictionary page header (13 bytes): DICTIONARY_PAGE, sizes 10,
		 * 2 entries, PLAIN */
		0x15, 0x04, 0x15, 0x14, 0x15, 0x14, 0x4c, 0x15, 0x04, 0x15, 0x00, 0x00, 0x00,
		/* PLAIN entries in first-use order: "b", "a" */
		1, 0, 0, 0, 'b', 1, 0, 0, 0, 'a',
		/* offset 27: data page header (17 bytes): sizes 3, 2 values, RLE_DICTIONARY */
		0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x2c, 0x15, 0x04, 0x15, 0x10, 0x15, 0x06,
		0x15, 0x06, 0x00, 0x00,
		/* bit width 1; one bit-packed group: indices 0, 1 -> 0b10 */
		0x01, 0x03, 0x02,
		/* offset 47: FileMetaData */
		0x15, 0x04, 0x19, 0x2c,
		0x48, 0x06, 's', 'c', 'h', 'e', 'm', 'a', 0x15, 0x02, 0x00,
		/* s: BYTE_ARRAY, REQUIRED, name, converted UTF8, logicalType { STRING {} } */
		0x15, 0x0c, 0x25, 0x00, 0x18, 0x01, 's', 0x25, 0x00, 0x4c, 0x1c, 0x00, 0x00, 0x00,
		0x16, 0x04, /* num_rows 2 */
		0x19, 0x1c, 0x19, 0x1c,
		0x26, 0x08, /* ColumnChunk file_offset 4: the dictionary page */
		0x1c,
		0x15, 0x0c, /* type BYTE_ARRAY */
		0x19, 0x35, 0x00, 0x06, 0x10, /* encodings PLAIN, RLE, RLE_DICTIONARY */
		0x19, 0x18, 0x01, 's',
		0x15, 0x00, 0x16, 0x04,
		0x16, 0x56, 0x16, 0x56, /* sizes 43 */
		0x26, 0x36, /* 9 data_page_offset 27 */
		0x26, 0x08, /* 11 dictionary_page_offset 4 */
		0x1c, 0x36, 0x00, 0x28, 0x01, 'b', 0x18, 0x01, 'a', 0x00, /* stats: 0 nulls, b, a */
		0x00, 0x00,
		0x16, 0x56, 0x16, 0x04, 0x26, 0x08, 0x16, 0x56, 0x00, /* RowGroup */
		0x28, 0x01, 't',
		0x19, 0x1c, 0x1c, 0x00, 0x00,
		0x00,
		91, 0, 0, 0, 'P', 'A', 'R', '1',
	};
	/* clang-format on */
	tp_expect(got, n, want, sizeof(want));
	free(got);
}

Test(parquet, misuse_is_refused_and_sticky, .timeout = 60)
{
	char path[] = "/tmp/trc-parquet-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	static const struct pq_col_def cols[] = {{"a", PQ_COL_INT64, false},
						 {"b", PQ_COL_STRING, true}};
	int err;
	struct pq_writer *w = pq_writer_open(path, cols, 2, NULL, &err);
	cr_assert_not_null(w);
	cr_assert_eq(pq_put_null(w, 0), -EINVAL, "a null in a REQUIRED column");
	cr_assert_eq(pq_put_i64(w, 0, 1), -EINVAL, "errors are sticky");
	cr_assert_eq(pq_writer_close(w), -EINVAL);

	w = pq_writer_open(path, cols, 2, NULL, &err);
	cr_assert_eq(pq_put_str(w, 0, "x", 1), -EINVAL, "a string in an INT64 column");
	pq_writer_close(w);
	w = pq_writer_open(path, cols, 2, NULL, &err);
	cr_assert_eq(pq_put_i64(w, 0, 1), 0);
	cr_assert_eq(pq_end_row(w), -EINVAL, "a row without its last column");
	pq_writer_close(w);
	w = pq_writer_open(path, cols, 2, NULL, &err);
	cr_assert_eq(pq_put_str(w, 1, "x", 1), -EINVAL, "columns out of order");
	pq_writer_close(w);

	static const struct pq_col_def bad[] = {{NULL, PQ_COL_INT64, false}};
	cr_assert_null(pq_writer_open(path, bad, 1, NULL, &err));
	cr_assert_eq(err, -EINVAL);
	cr_assert_null(pq_writer_open("/nonexistent/dir/x.parquet", cols, 2, NULL, &err));
	cr_assert_eq(err, -ENOENT);
	unlink(path);
}

/* Many rows over several row groups, strings and nulls: the file ends with a footer whose
 * length points back at a FileMetaData that records every row. */
Test(parquet, row_groups_and_footer_framing, .timeout = 60)
{
	char path[] = "/tmp/trc-parquet-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	static const struct pq_col_def cols[] = {{"ts", PQ_COL_TIMESTAMP_NS, false},
						 {"name", PQ_COL_STRING, false},
						 {"v", PQ_COL_INT64, true}};
	struct pq_writer_opts o = {.rows_per_group = 1000};
	int err;
	struct pq_writer *w = pq_writer_open(path, cols, 3, &o, &err);
	cr_assert_not_null(w);
	for (int i = 0; i < 2500; i++) {
		char b[16];
		int k = snprintf(b, sizeof(b), "n%d", i % 7);
		cr_assert_eq(pq_put_i64(w, 0, i), 0);
		cr_assert_eq(pq_put_str(w, 1, b, (size_t)k), 0);
		cr_assert_eq(i % 3 ? pq_put_i64(w, 2, i) : pq_put_null(w, 2), 0);
		cr_assert_eq(pq_end_row(w), 0);
	}
	cr_assert_eq(pq_writer_rows(w), 2500);
	cr_assert_eq(pq_writer_close(w), 0);
	size_t n;
	uint8_t *got = tp_slurp(path, &n);
	unlink(path);
	cr_assert(n > 16);
	cr_assert(!memcmp(got, "PAR1", 4));
	cr_assert(!memcmp(got + n - 4, "PAR1", 4));
	uint32_t flen = (uint32_t)got[n - 8] | (uint32_t)got[n - 7] << 8 |
			(uint32_t)got[n - 6] << 16 | (uint32_t)got[n - 5] << 24;
	cr_assert(flen < n - 12);
	/* FileMetaData: version, schema (4 elements), then 3 num_rows = 2500 (zigzag 5000). */
	const uint8_t *f = got + n - 8 - flen;
	cr_assert_eq(f[0], 0x15);
	cr_assert_eq(f[2], 0x19);
	cr_assert_eq(f[3], 0x4c);
	const uint8_t rows[] = {0x16, 0x88, 0x27}; /* 5000 = 0x1388: 0x88 0x27 */
	cr_assert_not_null(memmem(f, flen, rows, 3));
	free(got);
}

/* A Thrift compact list header's size nibble 15 means "size follows", so 15
 * elements take the long form (0xf0 | type, then the size). */
Test(parquet, thrift_list_header_at_14_15_16, .timeout = 60)
{
	static const struct {
		uint32_t n;
		uint8_t hdr[2];
		size_t hdr_len;
	} cases[] = {{14, {0xe5}, 1}, {15, {0xf5, 0x0f}, 2}, {16, {0xf5, 0x10}, 2}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct thrift_enc e;
		thrift_enc_init(&e);
		thrift_field_list(&e, 1, THRIFT_I32, cases[i].n);
		for (uint32_t k = 0; k < cases[i].n; k++)
			thrift_elem_i32(&e, 1); /* zigzag 2 */
		cr_assert_eq(thrift_enc_error(&e), 0);
		/* field 1, type list (0x19), the header, then n bytes of 0x02 */
		size_t want_len = 1 + cases[i].hdr_len + cases[i].n;
		cr_assert_eq(e.len, want_len, "n %u: %zu bytes", cases[i].n, e.len);
		cr_assert_eq(e.buf[0], 0x19);
		cr_assert_eq(memcmp(e.buf + 1, cases[i].hdr, cases[i].hdr_len), 0,
			     "n %u: header %02x %02x", cases[i].n, e.buf[1], e.buf[2]);
		for (uint32_t k = 0; k < cases[i].n; k++)
			cr_assert_eq(e.buf[1 + cases[i].hdr_len + k], 0x02);
		thrift_enc_free(&e);
	}
}
