/* trcfile_reader.c - opens a trace: header, index (footer or recovery scan), metadata tables.
 *
 * Purpose: turn a file (path, fd or memory) into a validated in-memory index that cursors
 * and the merge can trust, with a clear message for everything that is wrong. The file is
 * untrusted: every length, count and offset is checked against the file size and the
 * format's limits before it sizes an allocation or a read.
 *
 * How the index is found: a valid trailer at the end of the file locates the footer, whose
 * checksum, stream table and chunk entries are checked (sizes add up, entries inside the
 * file, not overlapping, seqs distinct, sums match the stream table). A missing trailer
 * (recorder killed) or a footer that fails any check makes the reader scan the chunk headers
 * from the start instead, keeping every whole chunk up to the first thing that is not one;
 * the file is then reported as truncated (with what was recovered and ignored).
 *
 * Threads: a reader belongs to one thread at a time (see trcfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "pio.h"
#include "trcfile_reader_priv.h"
#include "trcfile_stored.h"

/* Bounds on what metadata tables may hold (hostile META streams). Beyond them the reader
 * reads on: strings are cut and definitions dropped, counted in the stats. */
#define TRCFILE__META_MAX_ENTRIES (1u << 20)
#define TRCFILE__META_MAX_BYTES (64ull << 20)

int trcfile_reader_fail(struct trcfile_reader *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

void trcfile_reader_time_span(const struct trcfile_reader *r, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t k = 0; k < r->n_chunks; k++) {
		const struct trcfile__chunk_ref *c = &r->chunks[k];
		uint64_t a = c->first_ts < c->last_ts ? c->first_ts : c->last_ts;
		uint64_t b = c->first_ts < c->last_ts ? c->last_ts : c->first_ts;
		if (a < *lo)
			*lo = a;
		if (b > *hi)
			*hi = b;
	}
}

const char *trcfile_reader_errmsg(const struct trcfile_reader *r)
{
	return r ? r->errmsg : "";
}

const char *trcfile_reader_damage_note(const struct trcfile_reader *r)
{
	return r ? r->damage_note : "";
}

const char *trcfile_reader_scan_stop(const struct trcfile_reader *r)
{
	return r ? r->scan_stop : "";
}

const uint8_t *trcfile__read_at(struct trcfile_reader *r, uint64_t off, size_t len, int *err)
{
	if (off > r->size || len > r->size - off) {
		*err = trcfile_reader_fail(r, -EBADMSG,
					   "read of %zu bytes at offset %llu is past the end "
					   "of the file (%llu bytes)",
					   len, (unsigned long long)off,
					   (unsigned long long)r->size);
		return NULL;
	}
	if (r->mem)
		return r->mem + off;
	if (len > r->io_cap) {
		size_t cap = len < 65536 ? 65536 : len;
		uint8_t *p = realloc(r->io_buf, cap);
		if (!p) {
			*err = trcfile_reader_fail(r, -ENOMEM, "out of memory reading %zu bytes",
						   len);
			return NULL;
		}
		r->io_buf = p;
		r->io_cap = cap;
	}
	size_t done;
	int rc = pio_pread_upto(r->fd, r->io_buf, len, off, &done);
	if (rc) {
		*err = trcfile_reader_fail(r, rc, "read error at offset %llu: %s",
					   (unsigned long long)(off + done), strerror(-rc));
		return NULL;
	}
	if (done < len) {
		*err = trcfile_reader_fail(r, -EBADMSG,
					   "file shrank while being read (offset %llu)",
					   (unsigned long long)(off + done));
		return NULL;
	}
	return r->io_buf;
}

/* ---- header ---------------------------------------------------------------------------- */

static int trcfile__parse_header(struct trcfile_reader *r)
{
	int err = 0;
	char why[sizeof(r->errmsg)];
	if (r->size < TRCFILE__HDR_FIXED_BYTES + TRCFILE__HDR_CRC_BYTES)
		return trcfile_reader_fail(r, -EBADMSG,
					   "not a trc trace: %llu bytes is too small for a header",
					   (unsigned long long)r->size);
	/* The fixed part says how long the whole header is. */
	struct trcfile__file_hdr fh;
	const uint8_t *p = trcfile__read_at(r, 0, TRCFILE__HDR_FIXED_BYTES, &err);
	if (!p)
		return err;
	err = trcfile__header_get(p, TRCFILE__HDR_FIXED_BYTES, r->size, &fh, why, sizeof(why));
	if (err == 1) {
		p = trcfile__read_at(r, 0, fh.header_bytes, &err);
		if (!p)
			return err;
		err = trcfile__header_get(p, fh.header_bytes, r->size, &fh, why, sizeof(why));
	}
	if (err)
		return trcfile_reader_fail(r, err, "%s", why);
	uint64_t cl = fh.cmdline_len, hl = fh.host_len, tl = fh.tool_len;
	char *s = malloc(cl + hl + tl + 3);
	if (!s)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	memcpy(s, fh.cmdline, cl);
	s[cl] = 0;
	memcpy(s + cl + 1, fh.host, hl);
	s[cl + 1 + hl] = 0;
	memcpy(s + cl + hl + 2, fh.tool, tl);
	s[cl + hl + 2 + tl] = 0;
	r->hdr_strings = s;
	r->hdr = (struct trcfile_header){
		.version_major = fh.version_major,
		.version_minor = fh.version_minor,
		.pid = fh.pid,
		.start_mono_ns = fh.start_mono_ns,
		.start_realtime_ns = fh.start_realtime_ns,
		.clock_source = fh.clock_source,
		.tsc_hz = fh.tsc_hz,
		.rss_interval_ns = fh.rss_interval_ns,
		.rss_source = fh.rss_source,
		.buffer_bytes = fh.buffer_bytes,
		.when_full = fh.flags & TRCFILE_HDR_WHEN_FULL_MASK,
		.chunk_bytes = fh.chunk_bytes,
		.alloc_stacks = fh.alloc_stacks,
		.stack_depth = fh.stack_depth,
		.sample_bytes = fh.sample_bytes,
		.cmdline = s,
		.cmdline_len = fh.cmdline_len,
		.host = s + cl + 1,
		.tool_version = s + cl + hl + 2,
	};
	r->header_bytes = fh.header_bytes;
	return 0;
}

/* ---- index ----------------------------------------------------------------------------- */

struct trcfile__scan_stream {
	uint32_t id, kind, pid, tid;
};

static int trcfile__cmp_u32(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

static int trcfile__cmp_ref_stream(const void *a, const void *b)
{
	const struct trcfile__chunk_ref *x = a, *y = b;
	int c = trcfile__cmp_u32(x->stream_id, y->stream_id);
	return c ? c : trcfile__cmp_u32(x->seq, y->seq);
}

static int trcfile__cmp_ref_offset(const void *a, const void *b)
{
	const struct trcfile__chunk_ref *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int trcfile__cmp_stream_info(const void *a, const void *b)
{
	const struct trcfile_stream_info *x = a, *y = b;
	return trcfile__cmp_u32(x->id, y->id);
}

static struct trcfile_stream_info *trcfile__find_stream(struct trcfile_reader *r, uint32_t id)
{
	size_t lo = 0, hi = r->n_streams;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->streams[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n_streams && r->streams[lo].id == id ? &r->streams[lo] : NULL;
}

const char *trcfile__ref_check(const struct trcfile_reader *r, const struct trcfile__chunk_ref *c,
			       uint64_t data_end)
{
	/* What no chunk can hold was refused by trcfile__chunk_hdr_get or
	 * trcfile__footer_chunk_get already; these figures depend on this file. */
	if (c->raw_bytes > trcfile__raw_limit(r, c->count))
		return "chunk larger than the header's chunk size allows";
	if (c->comp_bytes > ZSTD_compressBound(c->raw_bytes))
		return "impossible compressed size";
	if (c->offset < r->header_bytes || c->offset > data_end ||
	    data_end - c->offset < (uint64_t)TRCFILE__CHUNK_HDR_BYTES + c->comp_bytes)
		return "chunk outside the file's data";
	return NULL;
}

/* Sorts the chunks, maps them to stream indexes, fills the per-stream figures and checks
 * that seqs are distinct. Streams must be sorted by id already. */
static int trcfile__finish_index(struct trcfile_reader *r)
{
	if (r->n_chunks)
		qsort(r->chunks, r->n_chunks, sizeof(*r->chunks), trcfile__cmp_ref_stream);
	r->stream_chunk0 = calloc(r->n_streams + 1, sizeof(*r->stream_chunk0));
	if (!r->stream_chunk0)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	for (unsigned s = 0; s < r->n_streams; s++) {
		struct trcfile_stream_info *si = &r->streams[s];
		si->records = 0;
		si->chunks = 0;
		si->first_ts_ns = si->last_ts_ns = 0;
		si->max_chunk_raw_bytes = 0;
	}
	size_t k = 0;
	for (unsigned s = 0; s < r->n_streams; s++) {
		struct trcfile_stream_info *si = &r->streams[s];
		r->stream_chunk0[s] = k;
		for (; k < r->n_chunks && r->chunks[k].stream_id == si->id; k++) {
			struct trcfile__chunk_ref *c = &r->chunks[k];
			if (k > r->stream_chunk0[s] && c[-1].seq == c->seq)
				return trcfile_reader_fail(
					r, -EBADMSG,
					"stream %u has two chunks with sequence number %u", si->id,
					c->seq);
			c->stream_idx = s;
			if (!si->chunks)
				si->first_ts_ns = c->first_ts;
			si->last_ts_ns = c->last_ts;
			si->chunks++;
			si->records += c->count;
			if (c->raw_bytes > si->max_chunk_raw_bytes)
				si->max_chunk_raw_bytes = c->raw_bytes;
		}
	}
	r->stream_chunk0[r->n_streams] = k;
	if (k != r->n_chunks)
		return trcfile_reader_fail(r, -EBADMSG, "chunk of an unknown stream in the index");
	r->stats.chunks = r->n_chunks;
	r->stats.chunks_missing = 0;
	for (unsigned s = 0; s < r->n_streams; s++) {
		size_t a = r->stream_chunk0[s], b = r->stream_chunk0[s + 1];
		if (b > a)
			r->stats.chunks_missing += (uint64_t)r->chunks[b - 1].seq + 1 - (b - a);
	}
	r->stats.records = 0;
	for (size_t i = 0; i < r->n_chunks; i++)
		r->stats.records += r->chunks[i].count;
	return 0;
}

/* Streams a footer may list beyond one per chunk (streams that never got a chunk). */
#define TRCFILE__FOOTER_EMPTY_STREAMS_MAX 65536u

/* Reads the footer. 0 = index loaded; 1 = no usable footer (why in r->errmsg, state reset);
 * <0 = hard error (out of memory, I/O). */
static int trcfile__load_footer(struct trcfile_reader *r)
{
	int err = 0;
	uint64_t size = r->size;
	if (size < (uint64_t)r->header_bytes + TRCFILE__FOOTER_FIXED_BYTES + TRCFILE__TRAILER_BYTES)
		return trcfile_reader_fail(r, 1, "no footer");
	const uint8_t *p =
		trcfile__read_at(r, size - TRCFILE__TRAILER_BYTES, TRCFILE__TRAILER_BYTES, &err);
	if (!p)
		return err;
	struct trcfile__trailer t;
	const char *why = NULL;
	err = trcfile__trailer_get(p, &t, &why);
	if (err == -ENOENT)
		return trcfile_reader_fail(r, 1, "%s", why);
	r->stats.footer_damaged = true; /* until proven otherwise */
	if (err)
		return trcfile_reader_fail(r, 1, "%s", why);
	uint64_t foff = t.footer_offset, fbytes = t.footer_bytes;
	if (foff < r->header_bytes || fbytes < TRCFILE__FOOTER_FIXED_BYTES ||
	    foff > size - TRCFILE__TRAILER_BYTES || fbytes != size - TRCFILE__TRAILER_BYTES - foff)
		return trcfile_reader_fail(r, 1, "trailer points outside the file");
	/* The footer indexes the chunks before it, each of which takes at least a chunk header
	 * there (streams without a chunk are few): a footer larger than that area can need is not
	 * believed, before a byte of it is read (a sparse file's trailer can claim tens of GB). */
	uint64_t max_chunks = (foff - r->header_bytes) / TRCFILE__CHUNK_HDR_BYTES;
	uint64_t max_fbytes =
		TRCFILE__FOOTER_FIXED_BYTES +
		(max_chunks + TRCFILE__FOOTER_EMPTY_STREAMS_MAX) * TRCFILE__FOOTER_STREAM_BYTES +
		max_chunks * TRCFILE__FOOTER_CHUNK_BYTES;
	if (fbytes > max_fbytes || fbytes > SIZE_MAX / 2)
		return trcfile_reader_fail(r, 1,
					   "footer larger than the chunks before it can need");
	const uint8_t *f = trcfile__read_at(r, foff, (size_t)fbytes, &err);
	if (!f)
		return err;
	struct trcfile__footer fixed;
	if (trcfile__footer_get(f, &t, &fixed, &why) != 0)
		return trcfile_reader_fail(r, 1, "%s", why);
	uint64_t ns = fixed.stream_count, nc = fixed.chunk_count;
	r->streams = calloc(ns ? ns : 1, sizeof(*r->streams));
	r->chunks = calloc(nc ? nc : 1, sizeof(*r->chunks));
	uint64_t *want_records = calloc(ns ? ns : 1, sizeof(uint64_t));
	uint32_t *want_chunks = calloc(ns ? ns : 1, sizeof(uint32_t));
	if (!r->streams || !r->chunks || !want_records || !want_chunks) {
		free(want_records);
		free(want_chunks);
		return trcfile_reader_fail(r, -ENOMEM, "out of memory for the index");
	}
	r->n_streams = (unsigned)ns;
	r->n_chunks = (size_t)nc;
	for (uint64_t i = 0; i < ns && !why; i++) {
		struct trcfile__footer_stream e;
		if (trcfile__footer_stream_get(f + trcfile__footer_stream_at(i), &e, &why) != 0)
			break;
		struct trcfile_stream_info *si = &r->streams[i];
		si->id = e.id;
		si->kind = e.kind;
		si->pid = e.pid;
		si->tid = e.tid;
		want_chunks[i] = e.chunks;
		want_records[i] = e.records;
		if (i > 0 && si->id <= si[-1].id)
			why = "footer streams not in increasing id order";
	}
	uint64_t data_end = foff;
	for (uint64_t i = 0; i < nc && !why; i++) {
		struct trcfile__footer_chunk e;
		if (trcfile__footer_chunk_get(f + trcfile__footer_chunk_at(ns, i), &e, &why) != 0)
			break;
		struct trcfile__chunk_ref *c = &r->chunks[i];
		*c = trcfile__chunk_ref_of(&e);
		why = trcfile__ref_check(r, c, data_end);
		if (!why && !trcfile__find_stream(r, c->stream_id))
			why = "chunk entry of an unknown stream";
	}
	if (!why) {
		/* Chunks must not overlap (each byte of data belongs to one chunk at most). */
		qsort(r->chunks, r->n_chunks, sizeof(*r->chunks), trcfile__cmp_ref_offset);
		for (size_t i = 1; i < r->n_chunks && !why; i++) {
			const struct trcfile__chunk_ref *a = &r->chunks[i - 1];
			if (a->offset + TRCFILE__CHUNK_HDR_BYTES + a->comp_bytes >
			    r->chunks[i].offset)
				why = "overlapping chunks in the index";
		}
	}
	if (!why) {
		int e = trcfile__finish_index(r);
		if (e == -ENOMEM) {
			free(want_records);
			free(want_chunks);
			return e;
		}
		if (e)
			why = "duplicate chunk in the index";
	}
	for (unsigned s = 0; s < r->n_streams && !why; s++)
		if (r->streams[s].records != want_records[s] ||
		    r->streams[s].chunks != want_chunks[s])
			why = "footer stream totals do not match its chunk entries";
	free(want_records);
	free(want_chunks);
	if (why) {
		free(r->streams);
		free(r->chunks);
		free(r->stream_chunk0);
		r->streams = NULL;
		r->chunks = NULL;
		r->stream_chunk0 = NULL;
		r->n_streams = 0;
		r->n_chunks = 0;
		return trcfile_reader_fail(r, 1, "%s", why);
	}
	r->stats.footer_damaged = false;
	r->stats.truncated = false;
	r->stats.bytes_recovered = size;
	r->stats.bytes_ignored = 0;
	return 0;
}

/* Checks that [p, p + comp) is exactly one zstd frame with a checksum and raw content size.
 * NULL or why not. */
const char *trcfile__frame_check(const uint8_t *p, uint32_t comp, uint32_t raw)
{
	/* Frame header: magic, then the descriptor byte whose bit 2 is the content checksum
	 * flag (RFC 8878 section 3.1.1.1.1). The stable API has no accessor for it. */
	if (comp < 6 || trcfile__get32(p) != ZSTD_MAGICNUMBER)
		return "not a zstd frame";
	if (!(p[4] & 0x04))
		return "zstd frame without content checksum";
	unsigned long long cs = ZSTD_getFrameContentSize(p, comp);
	if (cs == ZSTD_CONTENTSIZE_ERROR || cs == ZSTD_CONTENTSIZE_UNKNOWN || cs != raw)
		return "zstd frame content size disagrees with the chunk header";
	size_t fs = ZSTD_findFrameCompressedSize(p, comp);
	if (ZSTD_isError(fs) || fs != comp)
		return "zstd frame size disagrees with the chunk header";
	return NULL;
}

/* Recovery: walks the chunk headers from the start and keeps every whole chunk. */
static int trcfile__scan(struct trcfile_reader *r)
{
	int err = 0;
	uint64_t off = r->header_bytes, size = r->size;
	size_t cap_chunks = 0, cap_streams = 0;
	const char *stop = NULL;
	char stop_buf[160];
	struct u64map ids; /* stream id -> index in r->streams */
	u64map_init(&ids, SIZE_MAX);
	r->stats.truncated = true;
	while (!stop) {
		if (off == size) {
			stop = "end of file";
			break;
		}
		if (size - off < TRCFILE__CHUNK_HDR_BYTES) {
			stop = "partial chunk header at the end";
			break;
		}
		const uint8_t *p = trcfile__read_at(r, off, TRCFILE__CHUNK_HDR_BYTES, &err);
		if (!p) {
			u64map_destroy(&ids);
			return err;
		}
		if (trcfile__is_footer(p)) {
			stop = "damaged footer";
			break;
		}
		struct trcfile__chunk_hdr h;
		const char *why = NULL;
		if (trcfile__chunk_hdr_get(p, &h, &why) != 0) {
			snprintf(stop_buf, sizeof(stop_buf), "%s at offset %llu", why,
				 (unsigned long long)off);
			stop = stop_buf;
			break;
		}
		struct trcfile__chunk_ref c = {.offset = off,
					       .first_ts = h.first_ts,
					       .last_ts = h.last_ts,
					       .stream_id = h.stream_id,
					       .seq = h.seq,
					       .count = h.count,
					       .raw_bytes = h.raw_bytes,
					       .comp_bytes = h.comp_bytes};
		if (size - off < (uint64_t)TRCFILE__CHUNK_HDR_BYTES + h.comp_bytes) {
			stop = "partial chunk at the end";
			break;
		}
		why = trcfile__ref_check(r, &c, size);
		if (!why) {
			p = trcfile__read_at(r, off + TRCFILE__CHUNK_HDR_BYTES, h.comp_bytes, &err);
			if (!p) {
				u64map_destroy(&ids);
				return err;
			}
			why = trcfile__chunk_is_stored(&h)
				      ? trcfile__stored_check(p, &h)
				      : trcfile__frame_check(p, h.comp_bytes, h.raw_bytes);
		}
		struct trcfile_stream_info *si = NULL;
		const uint64_t *sidx = u64map_get(&ids, h.stream_id);
		if (sidx)
			si = &r->streams[*sidx];
		if (!why && si && (si->kind != h.kind || si->pid != h.pid || si->tid != h.tid))
			why = "stream kind/pid/tid differ between chunks";
		if (why) {
			snprintf(stop_buf, sizeof(stop_buf), "%s at offset %llu", why,
				 (unsigned long long)off);
			stop = stop_buf;
			break;
		}
		if (!si) {
			if (r->n_streams == cap_streams) {
				size_t cap = cap_streams ? 2 * cap_streams : 16;
				void *np = realloc(r->streams, cap * sizeof(*r->streams));
				if (!np) {
					u64map_destroy(&ids);
					return trcfile_reader_fail(r, -ENOMEM, "out of memory");
				}
				r->streams = np;
				cap_streams = cap;
			}
			if (u64map_put(&ids, h.stream_id, r->n_streams, NULL, NULL) != 0) {
				u64map_destroy(&ids);
				return trcfile_reader_fail(r, -ENOMEM, "out of memory");
			}
			si = &r->streams[r->n_streams++];
			memset(si, 0, sizeof(*si));
			si->id = h.stream_id;
			si->kind = h.kind;
			si->pid = h.pid;
			si->tid = h.tid;
		}
		if (r->n_chunks == cap_chunks) {
			size_t cap = cap_chunks ? 2 * cap_chunks : 64;
			void *np = realloc(r->chunks, cap * sizeof(*r->chunks));
			if (!np) {
				u64map_destroy(&ids);
				return trcfile_reader_fail(r, -ENOMEM, "out of memory");
			}
			r->chunks = np;
			cap_chunks = cap;
		}
		r->chunks[r->n_chunks++] = c;
		off += TRCFILE__CHUNK_HDR_BYTES + h.comp_bytes;
	}
	u64map_destroy(&ids);
	snprintf(r->scan_stop, sizeof(r->scan_stop), "%s", stop);
	r->stats.bytes_recovered = off;
	r->stats.bytes_ignored = size - off;
	if (r->n_streams)
		qsort(r->streams, r->n_streams, sizeof(*r->streams), trcfile__cmp_stream_info);
	/* Two chunks with one (stream, seq) cannot come from one writer: stop trusting the
	 * scan there would be arbitrary, so this is an error. */
	return trcfile__finish_index(r);
}

/* ---- metadata -------------------------------------------------------------------------- */

/* How much of a len-byte string the metadata budget (TRCFILE__META_MAX_BYTES) still holds,
 * counting the freed bytes of a string it replaces: all of it, or a cut noted in the stats
 * (a trace of 20000 processes with long command lines is legitimate: it reads on). */
static uint32_t trcfile__meta_fit(struct trcfile_reader *r, uint32_t len, uint64_t freed)
{
	uint64_t used = r->meta_bytes - freed + 1;
	if (used + len <= TRCFILE__META_MAX_BYTES)
		return len;
	r->stats.meta_strings_cut++;
	r->stats.meta_bytes_cut += len;
	return 0;
}

static int trcfile__table_put(struct trcfile_reader *r, struct u64map *map,
			      struct trcfile__string **arr, size_t *n, size_t *cap, uint64_t key,
			      uint32_t a, uint32_t b, const char *str, uint32_t len)
{
	uint64_t *slot = u64map_get(map, key);
	len = trcfile__meta_fit(r, len, slot ? (*arr)[*slot].len + 1 : 0);
	char *copy = malloc((size_t)len + 1);
	if (!copy)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	if (len)
		memcpy(copy, str, len);
	copy[len] = 0;
	if (slot) {
		struct trcfile__string *e = &(*arr)[*slot];
		r->meta_bytes -= e->len + 1;
		free(e->str);
		e->str = copy;
		e->len = len;
		e->a = a;
		e->b = b;
		r->meta_bytes += len + 1;
		return 0;
	}
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		void *p = realloc(*arr, nc * sizeof(**arr));
		if (!p) {
			free(copy);
			return trcfile_reader_fail(r, -ENOMEM, "out of memory");
		}
		*arr = p;
		*cap = nc;
	}
	int err = u64map_put(map, key, *n, NULL, NULL);
	if (err) {
		free(copy);
		if (err != -ENOSPC)
			return trcfile_reader_fail(r, err, "out of memory");
		r->stats.meta_entries_dropped++; /* the table is full: read on without it */
		return 0;
	}
	(*arr)[*n] = (struct trcfile__string){copy, len, a, b};
	(*n)++;
	r->meta_bytes += len + 1;
	return 0;
}

static int trcfile__module_add(struct trcfile_reader *r, const struct trc_record *rec)
{
	if (r->n_modules >= TRCFILE__META_MAX_ENTRIES ||
	    r->meta_bytes + rec->module.path_len + 1 > TRCFILE__META_MAX_BYTES) {
		r->stats.meta_entries_dropped++; /* a module without its path is no use */
		return 0;
	}
	if (r->n_modules == r->cap_modules) {
		size_t nc = r->cap_modules ? 2 * r->cap_modules : 16;
		void *p = realloc(r->modules, nc * sizeof(*r->modules));
		if (!p)
			return trcfile_reader_fail(r, -ENOMEM, "out of memory");
		r->modules = p;
		r->cap_modules = nc;
	}
	char *copy = malloc((size_t)rec->module.path_len + 1);
	if (!copy)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	if (rec->module.path_len)
		memcpy(copy, rec->module.path, rec->module.path_len);
	copy[rec->module.path_len] = 0;
	r->modules[r->n_modules++] = (struct trcfile_module){
		.pid = rec->module.pid,
		.start = rec->module.start,
		.end = rec->module.end,
		.offset = rec->module.offset,
		.path = copy,
		.path_len = rec->module.path_len,
		.build_id_len = rec->module.build_id_len,
	};
	if (rec->module.build_id_len)
		memcpy(r->modules[r->n_modules - 1].build_id, rec->module.build_id,
		       rec->module.build_id_len);
	r->meta_bytes += rec->module.path_len + 1;
	return 0;
}

static int trcfile__cmp_module(const void *a, const void *b)
{
	const struct trcfile_module *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Keeps a STACK record's frames (a later definition of an id replaces it: its old frames stay
 * in the pool, counted in the budget). */
static int trcfile__stack_add(struct trcfile_reader *r, const struct trc_record *rec)
{
	uint64_t frames[TRC_STACK_DEPTH_MAX];
	int n = trcfile_stack_unpack(rec, frames, TRC_STACK_DEPTH_MAX);
	if (n < 0)
		return 0; /* cannot happen: the decoder checked it */
	uint64_t bytes = (uint64_t)n * sizeof(uint64_t) + sizeof(struct trcfile__stack);
	if (r->meta_bytes + bytes > TRCFILE__META_MAX_BYTES) {
		r->stats.meta_entries_dropped++;
		return 0;
	}
	if (r->n_stack_frames + (size_t)n > r->cap_stack_frames) {
		size_t nc = r->cap_stack_frames ? 2 * r->cap_stack_frames : 4096;
		while (nc < r->n_stack_frames + (size_t)n)
			nc *= 2;
		void *p = realloc(r->stack_frames, nc * sizeof(uint64_t));
		if (!p)
			return trcfile_reader_fail(r, -ENOMEM, "out of memory");
		r->stack_frames = p;
		r->cap_stack_frames = nc;
	}
	uint64_t *slot = u64map_get(&r->stack_map, rec->stack.id);
	if (!slot) {
		if (r->n_stacks == r->cap_stacks) {
			size_t nc = r->cap_stacks ? 2 * r->cap_stacks : 256;
			void *p = realloc(r->stacks, nc * sizeof(*r->stacks));
			if (!p)
				return trcfile_reader_fail(r, -ENOMEM, "out of memory");
			r->stacks = p;
			r->cap_stacks = nc;
		}
		int err = u64map_put(&r->stack_map, rec->stack.id, r->n_stacks, NULL, NULL);
		if (err) {
			if (err != -ENOSPC)
				return trcfile_reader_fail(r, err, "out of memory");
			r->stats.meta_entries_dropped++;
			return 0;
		}
		slot = u64map_get(&r->stack_map, rec->stack.id);
		r->n_stacks++;
	}
	struct trcfile__stack *e = &r->stacks[*slot];
	e->flags = rec->stack.flags;
	e->n = (uint32_t)n;
	e->first = r->n_stack_frames;
	memcpy(r->stack_frames + r->n_stack_frames, frames, (size_t)n * sizeof(uint64_t));
	r->n_stack_frames += (size_t)n;
	r->meta_bytes += bytes;
	return 0;
}

const uint64_t *trcfile_reader_stack(const struct trcfile_reader *r, uint32_t id, uint32_t *n,
				     uint32_t *flags)
{
	const uint64_t *slot = id ? u64map_get(&r->stack_map, id) : NULL;
	if (!slot) {
		*n = 0;
		if (flags)
			*flags = 0;
		return NULL;
	}
	const struct trcfile__stack *e = &r->stacks[*slot];
	*n = e->n;
	if (flags)
		*flags = e->flags;
	return r->stack_frames + e->first;
}

size_t trcfile_reader_stack_count(const struct trcfile_reader *r)
{
	return r->n_stacks;
}

static int trcfile__load_meta(struct trcfile_reader *r)
{
	for (unsigned s = 0; s < r->n_streams; s++) {
		if (r->streams[s].kind != TRC_STREAM_META)
			continue;
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		if (!c)
			return trcfile_reader_fail(r, -ENOMEM, "out of memory");
		struct trc_record rec;
		int rc, err = 0;
		while (!err && (rc = trcfile_cursor_next(c, &rec)) == 1) {
			switch (rec.type) {
			case TRC_REC_NAME:
				err = trcfile__table_put(r, &r->name_map, &r->names, &r->n_names,
							 &r->cap_names, rec.name.id, rec.name.id, 0,
							 rec.name.str, rec.name.len);
				break;
			case TRC_REC_THREAD:
				err = trcfile__table_put(r, &r->thread_map, &r->threads,
							 &r->n_threads, &r->cap_threads,
							 (uint64_t)rec.thread.pid << 32 |
								 rec.thread.tid,
							 rec.thread.pid, rec.thread.tid,
							 rec.thread.name, rec.thread.name_len);
				break;
			case TRC_REC_PROCESS:
				err = trcfile__table_put(
					r, &r->proc_map, &r->procs, &r->n_procs, &r->cap_procs,
					rec.process.pid, rec.process.pid, rec.process.ppid,
					rec.process.cmdline, rec.process.cmdline_len);
				break;
			case TRC_REC_MODULE:
				err = trcfile__module_add(r, &rec);
				break;
			case TRC_REC_STACK:
				err = trcfile__stack_add(r, &rec);
				break;
			}
		}
		trcfile_cursor_free(c);
		if (err)
			return err;
		if (rc < 0)
			return rc;
	}
	if (r->n_modules)
		qsort(r->modules, r->n_modules, sizeof(*r->modules), trcfile__cmp_module);
	return 0;
}

/* ---- open / close ---------------------------------------------------------------------- */

static struct trcfile_reader *trcfile__reader_new(void)
{
	struct trcfile_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	u64map_init(&r->name_map, TRCFILE__META_MAX_ENTRIES);
	u64map_init(&r->thread_map, TRCFILE__META_MAX_ENTRIES);
	u64map_init(&r->proc_map, TRCFILE__META_MAX_ENTRIES);
	u64map_init(&r->stack_map, TRCFILE__META_MAX_ENTRIES);
	return r;
}

static int trcfile__reader_load(struct trcfile_reader *r)
{
	r->stats.file_bytes = r->size;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	int err = trcfile__parse_header(r);
	if (err || r->header_only)
		return err;
	err = trcfile__load_footer(r);
	if (err < 0)
		return err;
	if (err == 1) {
		err = trcfile__scan(r);
		if (err)
			return err;
	}
	r->errmsg[0] = 0;
	return trcfile__load_meta(r);
}

static int trcfile__open_finish(struct trcfile_reader *r, struct trcfile_reader **out, char *msg,
				size_t msg_len)
{
	int err = trcfile__reader_load(r);
	if (err) {
		if (msg && msg_len)
			snprintf(msg, msg_len, "%s", r->errmsg);
		trcfile_reader_close(r);
		*out = NULL;
		return err;
	}
	*out = r;
	return 0;
}

/* trcfile_reader_open_fd, or with header_only the header and trailer alone
 * (trcfile__reader_open_header). */
static int trcfile__open_fd(int fd, bool header_only, struct trcfile_reader **out, char *msg,
			    size_t msg_len)
{
	struct stat st;
	*out = NULL;
	if (fstat(fd, &st) != 0) {
		int e = -errno;
		if (msg && msg_len)
			snprintf(msg, msg_len, "%s", strerror(errno));
		return e;
	}
	if (!S_ISREG(st.st_mode)) {
		if (msg && msg_len)
			snprintf(msg, msg_len, "not a regular file");
		return -EINVAL;
	}
	struct trcfile_reader *r = trcfile__reader_new();
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->size = (uint64_t)st.st_size;
	r->header_only = header_only;
	return trcfile__open_finish(r, out, msg, msg_len);
}

int trcfile_reader_open_fd(int fd, struct trcfile_reader **out, char *msg, size_t msg_len)
{
	return trcfile__open_fd(fd, false, out, msg, msg_len);
}

/* Opens path and reads it as trcfile__open_fd does; the reader owns the descriptor. */
static int trcfile__open_path(const char *path, bool header_only, struct trcfile_reader **out,
			      char *msg, size_t msg_len)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		if (msg && msg_len)
			snprintf(msg, msg_len, "%s: %s", path, strerror(errno));
		return e;
	}
	int err = trcfile__open_fd(fd, header_only, out, msg, msg_len);
	if (err) {
		close(fd);
		return err;
	}
	(*out)->own_fd = true;
	return 0;
}

int trcfile_reader_open(const char *path, struct trcfile_reader **out, char *msg, size_t msg_len)
{
	return trcfile__open_path(path, false, out, msg, msg_len);
}

int trcfile__reader_open_header(const char *path, struct trcfile_reader **out, char *msg,
				size_t msg_len)
{
	return trcfile__open_path(path, true, out, msg, msg_len);
}

int trcfile_reader_open_mem(const void *buf, size_t len, struct trcfile_reader **out, char *msg,
			    size_t msg_len)
{
	*out = NULL;
	struct trcfile_reader *r = trcfile__reader_new();
	if (!r)
		return -ENOMEM;
	static const uint8_t empty[1];
	r->mem = buf ? buf : empty;
	r->size = buf ? len : 0;
	return trcfile__open_finish(r, out, msg, msg_len);
}

static void trcfile__strings_free(struct trcfile__string *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(a[i].str);
	free(a);
}

void trcfile_reader_close(struct trcfile_reader *r)
{
	if (!r)
		return;
	if (r->own_fd)
		close(r->fd);
	ZSTD_freeDCtx(r->dctx);
	free(r->io_buf);
	free(r->hdr_strings);
	free(r->streams);
	free(r->chunks);
	free(r->chunk_damaged);
	free(r->stream_chunk0);
	u64map_destroy(&r->name_map);
	u64map_destroy(&r->thread_map);
	u64map_destroy(&r->proc_map);
	trcfile__strings_free(r->names, r->n_names);
	trcfile__strings_free(r->threads, r->n_threads);
	trcfile__strings_free(r->procs, r->n_procs);
	for (size_t i = 0; i < r->n_modules; i++)
		free((char *)r->modules[i].path);
	free(r->modules);
	u64map_destroy(&r->stack_map);
	free(r->stacks);
	free(r->stack_frames);
	free(r);
}

/* ---- accessors ------------------------------------------------------------------------- */

const struct trcfile_header *trcfile_reader_header(const struct trcfile_reader *r)
{
	return &r->hdr;
}

void trcfile_reader_get_stats(const struct trcfile_reader *r, struct trcfile_reader_stats *st)
{
	*st = r->stats;
}

bool trcfile_reader_truncated(const struct trcfile_reader *r)
{
	return r->stats.truncated;
}

unsigned trcfile_reader_stream_count(const struct trcfile_reader *r)
{
	return r->n_streams;
}

const struct trcfile_stream_info *trcfile_reader_stream(const struct trcfile_reader *r,
							unsigned idx)
{
	return idx < r->n_streams ? &r->streams[idx] : NULL;
}

const char *trcfile_reader_name(const struct trcfile_reader *r, uint32_t id, uint32_t *len)
{
	const uint64_t *i = u64map_get(&r->name_map, id);
	if (!i)
		return NULL;
	if (len)
		*len = r->names[*i].len;
	return r->names[*i].str;
}

const char *trcfile_reader_thread_name(const struct trcfile_reader *r, uint32_t pid, uint32_t tid,
				       uint32_t *len)
{
	const uint64_t *i = u64map_get(&r->thread_map, (uint64_t)pid << 32 | tid);
	if (!i)
		return NULL;
	if (len)
		*len = r->threads[*i].len;
	return r->threads[*i].str;
}

const char *trcfile_reader_process_cmdline(const struct trcfile_reader *r, uint32_t pid,
					   uint32_t *len)
{
	const uint64_t *i = u64map_get(&r->proc_map, pid);
	if (!i)
		return NULL;
	if (len)
		*len = r->procs[*i].len;
	return r->procs[*i].str;
}

size_t trcfile_reader_modules(const struct trcfile_reader *r, const struct trcfile_module **first)
{
	*first = r->modules;
	return r->n_modules;
}

size_t trcfile_reader_modules_of(const struct trcfile_reader *r, uint32_t pid,
				 const struct trcfile_module **first)
{
	/* The first module of pid (sorted by pid, then start). */
	size_t lo = 0, hi = r->n_modules;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->modules[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t n = 0;
	while (lo + n < r->n_modules && r->modules[lo + n].pid == pid)
		n++;
	*first = n ? &r->modules[lo] : NULL;
	return n;
}

const struct trcfile_module *trcfile_reader_module(const struct trcfile_reader *r, uint32_t pid,
						   uint64_t addr)
{
	/* Last module of pid starting at or below addr. */
	size_t lo = 0, hi = r->n_modules;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct trcfile_module *m = &r->modules[mid];
		if (m->pid < pid || (m->pid == pid && m->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct trcfile_module *m = &r->modules[lo - 1];
	return m->pid == pid && addr >= m->start && addr < m->end ? m : NULL;
}
