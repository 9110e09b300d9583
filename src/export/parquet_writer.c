/* parquet_writer.c - the Parquet file writer (see parquet_writer.h for the layout and the API).
 *
 * Purpose: turn rows into column chunks and the footer. Values of the open row group are kept
 * per column (INT64 values, or dictionary indices plus a per-chunk dictionary for strings, and
 * definition levels for OPTIONAL columns); when the group is full every column chunk is encoded
 * (parquet_encode.c), compressed page by page with one reused ZSTD_CCtx, and written at once,
 * so the file is written front to back with plain write(2) calls. What the footer needs of each
 * chunk (offsets, sizes, statistics) is kept until pq_writer_close encodes the FileMetaData.
 *
 * Invariants: every row has exactly one value (or null) per column, given in column order; a
 * column chunk's dictionary never outlives its row group (dictionary pages are per chunk, as
 * the format requires); statistics compare INT64 as signed and strings as unsigned bytes, the
 * type-defined orders that the footer's column_orders announce; a min or max string longer
 * than PQ__STAT_MAX bytes leaves that chunk without min/max (never a wrong bound).
 *
 * Threads: one thread per writer.
 * References: apache/parquet-format README.md, parquet.thrift (FileMetaData, RowGroup,
 * ColumnChunk, ColumnMetaData, Statistics, SchemaElement, LogicalType, ColumnOrder).
 */
#include "parquet_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "parquet_encode.h"
#include "thrift_compact.h"
#include "u64map.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "parquet_writer.c writes PLAIN INT64 pages with memcpy: little-endian hosts only"
#endif

#define PQ__DEFAULT_ROWS (128u << 10)
#define PQ__STAT_MAX 64u

struct pq__chunk {
	int64_t data_off, dict_off; /* dict_off -1: no dictionary page */
	int64_t comp_bytes, raw_bytes; /* page headers included */
	int64_t num_values, nulls; /* num_values counts nulls too */
	bool has_minmax;
	uint8_t min_len, max_len;
	uint8_t min[PQ__STAT_MAX], max[PQ__STAT_MAX];
};

struct pq__group {
	int64_t rows, raw_bytes, comp_bytes, file_offset;
};

struct pq__col {
	const struct pq_col_def *def;
	size_t rows, nv, cap; /* rows in the group; non-null values */
	int64_t *iv; /* INT64 values */
	uint32_t *idx; /* STRING dictionary indices */
	uint32_t *defs; /* OPTIONAL: definition level of each row (0 null, 1 value) */
	size_t defs_cap;
	bool has_minmax;
	int64_t min, max;
	/* the chunk's dictionary: PLAIN-encoded entries (u32 length, bytes) */
	struct pq_buf dict;
	uint32_t *ent_off, *ent_len;
	uint32_t n_ent, ent_cap;
	struct u64index index; /* string -> entry (seeded, probes bounded: the strings are the
				* trace's, which must not choose collisions) */
	uint32_t last; /* entry index + 1 of the previous value, 0 none: runs skip the hash */
	struct pq__chunk *chunks; /* one per row group written */
	size_t n_chunks, chunks_cap;
};

struct pq_writer {
	int fd; /* -1: the bytes go to sink */
	struct export_sink sink;
	int err;
	int64_t off; /* bytes written */
	const struct pq_col_def *defs;
	unsigned n_cols, cur_col;
	struct pq__col *cols;
	struct pq_writer_opts o;
	uint64_t rows, group_rows;
	ZSTD_CCtx *cctx;
	struct pq_buf page, comp, out;
	struct thrift_enc hdr;
	struct pq__group *groups;
	size_t n_groups, groups_cap;
};

static int pq__fail(struct pq_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

static int pq__write_all(struct pq_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (w->fd < 0) {
		int err = w->sink.write(w->sink.ctx, p, n);
		if (err)
			return pq__fail(w, err);
		w->off += (int64_t)n;
		return 0;
	}
	while (n) {
		ssize_t k = write(w->fd, b, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return pq__fail(w, -errno);
		}
		b += k;
		n -= (size_t)k;
		w->off += k;
	}
	return 0;
}

static bool pq__grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

/* A dictionary entry's hash under seed (its string, after its u32 length in dict). */
static uint64_t pq__ent_hash(const void *ctx, uint32_t e, uint64_t seed)
{
	const struct pq__col *c = ctx;
	return u64map_hash_bytes(c->dict.p + c->ent_off[e] + 4, c->ent_len[e], seed);
}

/* The writer of pq_writer_open or pq_writer_open_sink: the bytes go to path (opened here) or,
 * path NULL, to *sink. */
static struct pq_writer *pq__open(const char *path, const struct export_sink *sink,
				  const struct pq_col_def *cols, unsigned n_cols,
				  const struct pq_writer_opts *o, int *err)
{
	*err = -EINVAL;
	if (!n_cols || n_cols > PQ_MAX_COLUMNS)
		return NULL;
	for (unsigned i = 0; i < n_cols; i++)
		if (!cols[i].name || cols[i].type < PQ_COL_INT64 || cols[i].type > PQ_COL_STRING)
			return NULL;
	struct pq_writer *w = calloc(1, sizeof(*w));
	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	if (o)
		w->o = *o;
	if (!w->o.rows_per_group)
		w->o.rows_per_group = PQ__DEFAULT_ROWS;
	if (!w->o.zstd_level)
		w->o.zstd_level = 1;
	w->defs = cols;
	w->n_cols = n_cols;
	w->cols = calloc(n_cols, sizeof(*w->cols));
	w->cctx = w->o.uncompressed ? NULL : ZSTD_createCCtx();
	if (!w->cols || (!w->o.uncompressed && !w->cctx)) {
		*err = -ENOMEM;
		goto fail_alloc;
	}
	for (unsigned i = 0; i < n_cols; i++) {
		w->cols[i].def = &cols[i];
		u64index_init(&w->cols[i].index, pq__ent_hash, &w->cols[i]);
	}
	thrift_enc_init(&w->hdr);
	if (path) {
		w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (w->fd < 0) {
			*err = -errno;
			goto fail_alloc;
		}
	} else {
		w->fd = -1;
		w->sink = *sink;
	}
	if (pq__write_all(w, "PAR1", 4)) {
		*err = w->err;
		if (w->fd >= 0)
			close(w->fd);
		goto fail_alloc;
	}
	*err = 0;
	return w;
fail_alloc:
	ZSTD_freeCCtx(w->cctx);
	free(w->cols);
	free(w);
	return NULL;
}

struct pq_writer *pq_writer_open(const char *path, const struct pq_col_def *cols, unsigned n_cols,
				 const struct pq_writer_opts *o, int *err)
{
	return pq__open(path, NULL, cols, n_cols, o, err);
}

struct pq_writer *pq_writer_open_sink(const struct export_sink *sink,
				      const struct pq_col_def *cols, unsigned n_cols,
				      const struct pq_writer_opts *o, int *err)
{
	return pq__open(NULL, sink, cols, n_cols, o, err);
}

/* ---- rows ----------------------------------------------------------------------------- */

static struct pq__col *pq__col_for(struct pq_writer *w, unsigned col, enum pq_col_type t)
{
	if (w->err)
		return NULL;
	if (col != w->cur_col || col >= w->n_cols) {
		pq__fail(w, -EINVAL);
		return NULL;
	}
	struct pq__col *c = &w->cols[col];
	bool str = c->def->type == PQ_COL_STRING;
	if (str != (t == PQ_COL_STRING)) {
		pq__fail(w, -EINVAL);
		return NULL;
	}
	if (!pq__grow((void **)(str ? (void *)&c->idx : (void *)&c->iv), &c->cap, c->nv + 1,
		      str ? sizeof(*c->idx) : sizeof(*c->iv))) {
		pq__fail(w, -ENOMEM);
		return NULL;
	}
	if (c->def->optional) {
		if (!pq__grow((void **)&c->defs, &c->defs_cap, c->rows + 1, sizeof(*c->defs))) {
			pq__fail(w, -ENOMEM);
			return NULL;
		}
		c->defs[c->rows] = 1;
	}
	return c;
}

int pq_put_i64(struct pq_writer *w, unsigned col, int64_t v)
{
	struct pq__col *c = pq__col_for(w, col, PQ_COL_INT64);
	if (!c)
		return w->err;
	c->iv[c->nv++] = v;
	c->rows++;
	if (!c->has_minmax) {
		c->min = c->max = v;
		c->has_minmax = true;
	} else if (v < c->min) {
		c->min = v;
	} else if (v > c->max) {
		c->max = v;
	}
	w->cur_col++;
	return 0;
}

/* The dictionary index of s in the column's chunk dictionary (added if new); -1 on ENOMEM. */
static int64_t pq__intern(struct pq__col *c, const char *s, size_t n)
{
	uint64_t h = u64map_hash_bytes(s, n, u64index_seed(&c->index));
	uint32_t e;
	for (size_t pos = u64index_start(&c->index, h);
	     (e = u64index_next(&c->index, &pos)) != U64INDEX_END;)
		if (c->ent_len[e] == n && !memcmp(c->dict.p + c->ent_off[e] + 4, s, n))
			return e;
	if (c->n_ent == c->ent_cap) {
		uint32_t cap = c->ent_cap ? c->ent_cap * 2 : 256;
		uint32_t *a = realloc(c->ent_off, cap * sizeof(*a));
		if (a)
			c->ent_off = a;
		uint32_t *b = realloc(c->ent_len, cap * sizeof(*b));
		if (b)
			c->ent_len = b;
		if (!a || !b)
			return -1;
		c->ent_cap = cap;
	}
	e = c->n_ent;
	c->ent_off[e] = (uint32_t)c->dict.len;
	c->ent_len[e] = (uint32_t)n;
	pq_buf_u32le(&c->dict, (uint32_t)n);
	pq_buf_put(&c->dict, s, n);
	if (c->dict.err || u64index_add(&c->index, e, h) != 0)
		return -1;
	c->n_ent++;
	return e;
}

int pq_put_str(struct pq_writer *w, unsigned col, const char *s, size_t len)
{
	if (len > PQ_MAX_GROUP_STRING_BYTES)
		return pq__fail(w, -EINVAL);
	struct pq__col *c = pq__col_for(w, col, PQ_COL_STRING);
	if (!c)
		return w->err;
	int64_t e;
	uint32_t l = c->last;
	if (l && c->ent_len[l - 1] == len && !memcmp(c->dict.p + c->ent_off[l - 1] + 4, s, len))
		e = l - 1;
	else
		e = pq__intern(c, s, len);
	if (e < 0)
		return pq__fail(w, -ENOMEM);
	c->idx[c->nv++] = (uint32_t)e;
	c->last = (uint32_t)e + 1;
	c->rows++;
	w->cur_col++;
	return 0;
}

int pq_put_null(struct pq_writer *w, unsigned col)
{
	if (w->err)
		return w->err;
	if (col != w->cur_col || col >= w->n_cols || !w->cols[col].def->optional)
		return pq__fail(w, -EINVAL);
	struct pq__col *c = &w->cols[col];
	if (!pq__grow((void **)&c->defs, &c->defs_cap, c->rows + 1, sizeof(*c->defs)))
		return pq__fail(w, -ENOMEM);
	c->defs[c->rows++] = 0;
	w->cur_col++;
	return 0;
}

/* ---- column chunks ---------------------------------------------------------------------- */

/* Compresses w->page (unless uncompressed) and appends header + body to w->out. Adds the
 * bytes to *raw and *comp. */
static int pq__page(struct pq_writer *w, const struct pq_buf *body, bool dict, int32_t num_values,
		    enum pq_encoding enc, int64_t *raw, int64_t *comp)
{
	const uint8_t *data = body->p;
	size_t n = body->len;
	if (n > INT32_MAX)
		return pq__fail(w, -EFBIG);
	if (w->cctx) {
		size_t bound = ZSTD_compressBound(n);
		w->comp.len = 0;
		if (pq_buf_reserve(&w->comp, bound))
			return pq__fail(w, -ENOMEM);
		size_t k =
			ZSTD_compressCCtx(w->cctx, w->comp.p, bound, body->p, n, w->o.zstd_level);
		if (ZSTD_isError(k))
			return pq__fail(w, -EIO);
		data = w->comp.p;
		n = k;
	}
	thrift_enc_reset(&w->hdr);
	if (dict)
		pq_dict_page_header(&w->hdr, (int32_t)body->len, (int32_t)n, num_values);
	else
		pq_data_page_header(&w->hdr, (int32_t)body->len, (int32_t)n, num_values, enc);
	if (thrift_enc_error(&w->hdr))
		return pq__fail(w, thrift_enc_error(&w->hdr));
	pq_buf_put(&w->out, w->hdr.buf, w->hdr.len);
	pq_buf_put(&w->out, data, n);
	if (w->out.err)
		return pq__fail(w, w->out.err);
	*raw += (int64_t)(w->hdr.len + body->len);
	*comp += (int64_t)(w->hdr.len + n);
	return 0;
}

static int pq__strcmp(const struct pq__col *c, uint32_t a, uint32_t b)
{
	uint32_t la = c->ent_len[a], lb = c->ent_len[b];
	int r = memcmp(c->dict.p + c->ent_off[a] + 4, c->dict.p + c->ent_off[b] + 4,
		       la < lb ? la : lb);
	return r ? r : (la > lb) - (la < lb);
}

static void pq__stats(struct pq__col *c, struct pq__chunk *k)
{
	if (!c->nv)
		return;
	if (c->def->type != PQ_COL_STRING) {
		for (int i = 0; i < 8; i++) {
			k->min[i] = (uint8_t)((uint64_t)c->min >> (8 * i));
			k->max[i] = (uint8_t)((uint64_t)c->max >> (8 * i));
		}
		k->min_len = k->max_len = 8;
		k->has_minmax = true;
		return;
	}
	/* Every entry of the chunk's dictionary is used by some row. */
	uint32_t lo = 0, hi = 0;
	for (uint32_t e = 1; e < c->n_ent; e++) {
		if (pq__strcmp(c, e, lo) < 0)
			lo = e;
		if (pq__strcmp(c, e, hi) > 0)
			hi = e;
	}
	if (c->ent_len[lo] > PQ__STAT_MAX || c->ent_len[hi] > PQ__STAT_MAX)
		return;
	k->min_len = (uint8_t)c->ent_len[lo];
	k->max_len = (uint8_t)c->ent_len[hi];
	memcpy(k->min, c->dict.p + c->ent_off[lo] + 4, k->min_len);
	memcpy(k->max, c->dict.p + c->ent_off[hi] + 4, k->max_len);
	k->has_minmax = true;
}

static int pq__chunk(struct pq_writer *w, struct pq__col *c)
{
	if (!pq__grow((void **)&c->chunks, &c->chunks_cap, c->n_chunks + 1, sizeof(*c->chunks)))
		return pq__fail(w, -ENOMEM);
	struct pq__chunk *k = &c->chunks[c->n_chunks];
	memset(k, 0, sizeof(*k));
	k->dict_off = -1;
	k->num_values = (int64_t)c->rows;
	k->nulls = (int64_t)(c->rows - c->nv);
	int64_t start = w->off;
	w->out.len = 0;
	bool str = c->def->type == PQ_COL_STRING;
	if (str && c->nv) {
		k->dict_off = start;
		if (pq__page(w, &c->dict, true, (int32_t)c->n_ent, PQ_ENC_PLAIN, &k->raw_bytes,
			     &k->comp_bytes))
			return w->err;
	}
	k->data_off = start + (int64_t)w->out.len;
	struct pq_buf *p = &w->page;
	p->len = 0;
	if (c->def->optional) {
		size_t at = p->len;
		pq_buf_u32le(p, 0);
		pq_rle_encode(p, c->defs, c->rows, 1);
		if (!p->err) {
			uint32_t n = (uint32_t)(p->len - at - 4);
			for (int i = 0; i < 4; i++)
				p->p[at + (size_t)i] = (uint8_t)(n >> (8 * i));
		}
	}
	enum pq_encoding enc = PQ_ENC_PLAIN;
	if (str) {
		enc = PQ_ENC_RLE_DICTIONARY;
		unsigned bw = pq_bit_width(c->n_ent ? c->n_ent - 1 : 0);
		if (bw < 1)
			bw = 1;
		uint8_t b = (uint8_t)bw;
		pq_buf_put(p, &b, 1);
		pq_rle_encode(p, c->idx, c->nv, bw);
	} else {
		pq_buf_put(p, c->iv, c->nv * sizeof(*c->iv)); /* PLAIN: little-endian int64 */
	}
	if (p->err)
		return pq__fail(w, p->err);
	if (pq__page(w, p, false, (int32_t)c->rows, enc, &k->raw_bytes, &k->comp_bytes))
		return w->err;
	pq__stats(c, k);
	if (pq__write_all(w, w->out.p, w->out.len))
		return w->err;
	c->n_chunks++;
	/* The next group starts empty, dictionary included. */
	c->rows = c->nv = 0;
	c->has_minmax = false;
	c->dict.len = 0;
	c->n_ent = 0;
	c->last = 0;
	u64index_destroy(&c->index);
	return 0;
}

static int pq__flush_group(struct pq_writer *w)
{
	if (w->err || !w->group_rows)
		return w->err;
	if (!pq__grow((void **)&w->groups, &w->groups_cap, w->n_groups + 1, sizeof(*w->groups)))
		return pq__fail(w, -ENOMEM);
	struct pq__group *g = &w->groups[w->n_groups];
	memset(g, 0, sizeof(*g));
	g->rows = (int64_t)w->group_rows;
	g->file_offset = w->off;
	for (unsigned i = 0; i < w->n_cols; i++) {
		struct pq__col *c = &w->cols[i];
		if (pq__chunk(w, c))
			return w->err;
		g->raw_bytes += c->chunks[c->n_chunks - 1].raw_bytes;
		g->comp_bytes += c->chunks[c->n_chunks - 1].comp_bytes;
	}
	w->n_groups++;
	w->group_rows = 0;
	return 0;
}

int pq_end_row(struct pq_writer *w)
{
	if (w->err)
		return w->err;
	if (w->cur_col != w->n_cols)
		return pq__fail(w, -EINVAL);
	w->cur_col = 0;
	w->rows++;
	w->group_rows++;
	bool full = w->group_rows >= w->o.rows_per_group;
	for (unsigned i = 0; i < w->n_cols && !full; i++)
		full = w->cols[i].dict.len >= PQ_MAX_GROUP_STRING_BYTES;
	return full ? pq__flush_group(w) : 0;
}

uint64_t pq_writer_rows(const struct pq_writer *w)
{
	return w->rows;
}

/* ---- footer ---------------------------------------------------------------------------- */

static void pq__schema(struct thrift_enc *e, const struct pq_writer *w)
{
	/* FileMetaData 2: schema, depth-first: the root group, then the leaves. */
	thrift_field_list(e, 2, THRIFT_STRUCT, w->n_cols + 1);
	thrift_struct_begin(e);
	thrift_field_string(e, 4, "schema"); /* SchemaElement 4: name */
	thrift_field_i32(e, 5, (int32_t)w->n_cols); /* 5: num_children */
	thrift_struct_end(e);
	for (unsigned i = 0; i < w->n_cols; i++) {
		const struct pq_col_def *d = &w->defs[i];
		thrift_struct_begin(e);
		/* SchemaElement: 1 type, 3 repetition_type, 4 name, 6 converted_type, 10
		 * logicalType */
		thrift_field_i32(e, 1, d->type == PQ_COL_STRING ? PQ_T_BYTE_ARRAY : PQ_T_INT64);
		thrift_field_i32(e, 3, d->optional ? 1 : 0);
		thrift_field_string(e, 4, d->name);
		if (d->type == PQ_COL_STRING) {
			thrift_field_i32(e, 6, 0); /* ConvertedType UTF8 */
			thrift_field_struct(e, 10);
			thrift_field_struct(e, 1); /* LogicalType.STRING: StringType {} */
			thrift_struct_end(e);
			thrift_struct_end(e);
		} else if (d->type == PQ_COL_TIMESTAMP_NS) {
			thrift_field_struct(e, 10);
			thrift_field_struct(e, 8); /* LogicalType.TIMESTAMP: TimestampType */
			thrift_field_bool(e, 1, true); /* isAdjustedToUTC */
			thrift_field_struct(e, 2); /* unit: TimeUnit */
			thrift_field_struct(e, 3); /* NANOS: NanoSeconds {} */
			thrift_struct_end(e);
			thrift_struct_end(e);
			thrift_struct_end(e);
			thrift_struct_end(e);
		}
		thrift_struct_end(e);
	}
}

static void pq__column_chunk(struct thrift_enc *e, const struct pq__col *c,
			     const struct pq__chunk *k, int32_t codec)
{
	thrift_struct_begin(e);
	/* ColumnChunk: 2 file_offset, 3 meta_data */
	thrift_field_i64(e, 2, k->dict_off >= 0 ? k->dict_off : k->data_off);
	thrift_field_struct(e, 3);
	/* ColumnMetaData: 1 type, 2 encodings, 3 path_in_schema, 4 codec, 5 num_values,
	 * 6 total_uncompressed_size, 7 total_compressed_size, 9 data_page_offset,
	 * 11 dictionary_page_offset, 12 statistics */
	bool str = c->def->type == PQ_COL_STRING;
	thrift_field_i32(e, 1, str ? PQ_T_BYTE_ARRAY : PQ_T_INT64);
	if (str) {
		thrift_field_list(e, 2, THRIFT_I32, 3);
		thrift_elem_i32(e, PQ_ENC_PLAIN);
		thrift_elem_i32(e, PQ_ENC_RLE);
		thrift_elem_i32(e, PQ_ENC_RLE_DICTIONARY);
	} else {
		thrift_field_list(e, 2, THRIFT_I32, 2);
		thrift_elem_i32(e, PQ_ENC_PLAIN);
		thrift_elem_i32(e, PQ_ENC_RLE);
	}
	thrift_field_list(e, 3, THRIFT_BINARY, 1);
	thrift_elem_binary(e, c->def->name, strlen(c->def->name));
	thrift_field_i32(e, 4, codec);
	thrift_field_i64(e, 5, k->num_values);
	thrift_field_i64(e, 6, k->raw_bytes);
	thrift_field_i64(e, 7, k->comp_bytes);
	thrift_field_i64(e, 9, k->data_off);
	if (k->dict_off >= 0)
		thrift_field_i64(e, 11, k->dict_off);
	thrift_field_struct(e, 12);
	/* Statistics: 3 null_count, 5 max_value, 6 min_value */
	thrift_field_i64(e, 3, k->nulls);
	if (k->has_minmax) {
		thrift_field_binary(e, 5, k->max, k->max_len);
		thrift_field_binary(e, 6, k->min, k->min_len);
	}
	thrift_struct_end(e);
	thrift_struct_end(e); /* ColumnMetaData */
	thrift_struct_end(e); /* ColumnChunk */
}

static void pq__footer(struct thrift_enc *e, const struct pq_writer *w)
{
	int32_t codec = w->o.uncompressed ? PQ_CODEC_UNCOMPRESSED : PQ_CODEC_ZSTD;
	/* FileMetaData: 1 version, 2 schema, 3 num_rows, 4 row_groups, 5 key_value_metadata,
	 * 6 created_by, 7 column_orders */
	thrift_field_i32(e, 1, 2);
	pq__schema(e, w);
	thrift_field_i64(e, 3, (int64_t)w->rows);
	thrift_field_list(e, 4, THRIFT_STRUCT, (uint32_t)w->n_groups);
	for (size_t g = 0; g < w->n_groups; g++) {
		const struct pq__group *rg = &w->groups[g];
		thrift_struct_begin(e);
		/* RowGroup: 1 columns, 2 total_byte_size, 3 num_rows, 5 file_offset,
		 * 6 total_compressed_size */
		thrift_field_list(e, 1, THRIFT_STRUCT, w->n_cols);
		for (unsigned i = 0; i < w->n_cols; i++)
			pq__column_chunk(e, &w->cols[i], &w->cols[i].chunks[g], codec);
		thrift_field_i64(e, 2, rg->raw_bytes);
		thrift_field_i64(e, 3, rg->rows);
		thrift_field_i64(e, 5, rg->file_offset);
		thrift_field_i64(e, 6, rg->comp_bytes);
		thrift_struct_end(e);
	}
	if (w->o.n_kv) {
		thrift_field_list(e, 5, THRIFT_STRUCT, w->o.n_kv);
		for (unsigned i = 0; i < w->o.n_kv; i++) {
			thrift_struct_begin(e);
			thrift_field_string(e, 1, w->o.kv_keys[i]); /* KeyValue: 1 key, 2 value */
			thrift_field_string(e, 2, w->o.kv_values[i]);
			thrift_struct_end(e);
		}
	}
	thrift_field_string(e, 6, w->o.created_by ? w->o.created_by : "trc parquet writer");
	/* ColumnOrder is a union: 1 TYPE_ORDER (TypeDefinedOrder {}), one per leaf. */
	thrift_field_list(e, 7, THRIFT_STRUCT, w->n_cols);
	for (unsigned i = 0; i < w->n_cols; i++) {
		thrift_struct_begin(e);
		thrift_field_struct(e, 1);
		thrift_struct_end(e);
		thrift_struct_end(e);
	}
	thrift_struct_end(e);
}

static void pq__free(struct pq_writer *w)
{
	for (unsigned i = 0; i < w->n_cols; i++) {
		struct pq__col *c = &w->cols[i];
		free(c->iv);
		free(c->idx);
		free(c->defs);
		pq_buf_free(&c->dict);
		free(c->ent_off);
		free(c->ent_len);
		u64index_destroy(&c->index);
		free(c->chunks);
	}
	free(w->cols);
	free(w->groups);
	pq_buf_free(&w->page);
	pq_buf_free(&w->comp);
	pq_buf_free(&w->out);
	thrift_enc_free(&w->hdr);
	ZSTD_freeCCtx(w->cctx);
	free(w);
}

int pq_writer_close(struct pq_writer *w)
{
	if (!w)
		return 0;
	if (!w->err && w->cur_col)
		pq__fail(w, -EINVAL); /* a row was started and not ended */
	pq__flush_group(w);
	if (!w->err) {
		thrift_enc_reset(&w->hdr);
		pq__footer(&w->hdr, w);
		if (thrift_enc_error(&w->hdr))
			pq__fail(w, thrift_enc_error(&w->hdr));
		else if (w->hdr.len > UINT32_MAX)
			pq__fail(w, -EFBIG);
	}
	if (!w->err) {
		uint8_t tail[8];
		uint32_t n = (uint32_t)w->hdr.len;
		for (int i = 0; i < 4; i++)
			tail[i] = (uint8_t)(n >> (8 * i));
		memcpy(tail + 4, "PAR1", 4);
		if (!pq__write_all(w, w->hdr.buf, w->hdr.len))
			pq__write_all(w, tail, 8);
	}
	if (w->fd >= 0 && close(w->fd) != 0 && !w->err)
		w->err = -errno;
	int err = w->err;
	pq__free(w);
	return err;
}
