/* parquet_writer.h - a small Apache Parquet file writer: one flat table per file.
 *
 * Purpose: the Parquet export (src/export/export_parquet.c) writes tables that DuckDB, Spark,
 * Trino and ClickHouse read. Flat schema only (no nesting, no repetition): each column is an
 * INT64, an INT64 TIMESTAMP(NANOS, UTC), or a UTF-8 STRING; REQUIRED, or OPTIONAL (nulls).
 *
 * Layout of the file: "PAR1", then row groups of at most rows_per_group rows, each one column
 * chunk per column (strings: a PLAIN dictionary page, then one data page of RLE_DICTIONARY
 * indices; integers: one PLAIN data page), every page compressed with zstd (codec ZSTD), then
 * the FileMetaData (Thrift compact), its length (u32 LE) and "PAR1". Each column chunk carries
 * min/max statistics (min_value/max_value, with TypeDefinedOrder column orders) and its null
 * count, so engines skip row groups on predicates.
 *
 * Use: pq_writer_open, then per row one pq_put_* per column in column order and pq_end_row;
 * pq_writer_close writes the rest and the footer. Memory: one row group's values (bounded by
 * rows_per_group and PQ_MAX_GROUP_STRING_BYTES of dictionary per column) plus the footer's
 * per-chunk metadata (a few hundred bytes per column chunk).
 *
 * Errors: actions return 0 or -errno and are sticky (after an error every call returns it and
 * does nothing); the constructor returns NULL with *err. The writer never prints.
 * Threads: a writer belongs to one thread; writers of different files are independent.
 * Reference: apache/parquet-format README.md (file layout), parquet.thrift, Encodings.md,
 * LogicalTypes.md (STRING, TIMESTAMP).
 */
#ifndef TRC_PARQUET_WRITER_H
#define TRC_PARQUET_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

enum pq_col_type {
	PQ_COL_INT64 = 1, /* INT64 */
	PQ_COL_TIMESTAMP_NS, /* INT64, logical TIMESTAMP(isAdjustedToUTC=true, NANOS) */
	PQ_COL_STRING, /* BYTE_ARRAY, logical STRING, dictionary-encoded */
};

struct pq_col_def {
	const char *name;
	enum pq_col_type type;
	bool optional; /* nullable (OPTIONAL, definition levels); else REQUIRED */
};

/* Zero fields take the defaults: 131072 rows per group, zstd level 1. */
struct pq_writer_opts {
	uint32_t rows_per_group;
	int zstd_level;
	bool uncompressed; /* codec UNCOMPRESSED (tests: byte-exact pages) */
	const char *created_by; /* NULL: "trc parquet writer" */
	/* Key/value pairs for the footer's key_value_metadata (n_kv of them); the arrays and
	 * strings must outlive the writer (they are written at close). */
	const char *const *kv_keys, *const *kv_values;
	unsigned n_kv;
};

/* A row group is closed early when a column's dictionary reaches this size. */
#define PQ_MAX_GROUP_STRING_BYTES (64u << 20)
#define PQ_MAX_COLUMNS 64

struct pq_writer;

/* Creates (truncates) path and writes the magic. The column definitions (and their names) must
 * outlive the writer. NULL with *err = -errno (-EINVAL for a bad schema). */
struct pq_writer *pq_writer_open(const char *path, const struct pq_col_def *cols, unsigned n_cols,
				 const struct pq_writer_opts *o, int *err);
/* The same, the file's bytes handed to sink in order (export.h; its first error is the
 * writer's sticky error). */
struct pq_writer *pq_writer_open_sink(const struct export_sink *sink,
				      const struct pq_col_def *cols, unsigned n_cols,
				      const struct pq_writer_opts *o, int *err);

/* One value of column col of the current row (columns in order). 0 or the sticky error;
 * -EINVAL for a wrong column or type, or a null in a REQUIRED column. */
int pq_put_i64(struct pq_writer *w, unsigned col, int64_t v);
int pq_put_str(struct pq_writer *w, unsigned col, const char *s, size_t len);
int pq_put_null(struct pq_writer *w, unsigned col);
/* Ends the row (every column must have its value); writes the row group when full. */
int pq_end_row(struct pq_writer *w);

/* Rows written so far (ended rows). */
uint64_t pq_writer_rows(const struct pq_writer *w);

/* Writes the last row group and the footer, closes the file, frees w. 0 or the first error.
 * Accepts NULL. On error the file is left incomplete (no footer): callers delete it. */
int pq_writer_close(struct pq_writer *w);

#endif /* TRC_PARQUET_WRITER_H */
