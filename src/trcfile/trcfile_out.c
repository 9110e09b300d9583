/* trcfile_out.c - the file a writer writes: header, chunks with their index, footer
 * (trcfile_out.h). */
#include "trcfile_out.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "pio.h"
#include "trcfile_stored.h"

/* Chunk index entries buffered before they are spilled (footer images). */
#define TRCFILE__INDEX_BUF_ENTRIES 1024u
/* TRCFILE_WRITER_LOSE_WHEN_FULL: chunks are stored only while the room left (free space, the
 * file size limit) is at least this, and at least STORE_ROOM_PER_STORED times the stored bytes
 * written so far. A stored chunk takes about three times the room of its compressed form, so
 * this way stored chunks hold at most about a fifth of the room the trace had, and a disk that
 * fills holds nearly the events the compressed trace would. */
#define TRCFILE__STORE_MIN_ROOM (64ull << 20)
#define TRCFILE__STORE_ROOM_PER_STORED 4u
/* Metadata chunks (names, threads, processes, modules) the full disk did not take are kept in
 * memory, up to this many bytes, and written at close ahead of the footer (the room made by
 * cutting event chunks off): without their names a trace's events are numbers. */
#define TRCFILE__KEEP_META_BYTES (8u << 20)

/* ---- frames ---------------------------------------------------------------------------- */

ZSTD_CCtx *trcfile__cctx_new(int level)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (cctx) {
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	}
	return cctx;
}

int trcfile__chunk_frame(ZSTD_CCtx *cctx, struct trcfile__chunk_hdr *h, const uint8_t *raw,
			 size_t raw_len, uint8_t **out, size_t *out_cap, size_t *out_len)
{
	size_t bound = ZSTD_compressBound(raw_len) + TRCFILE__CHUNK_HDR_BYTES;
	if (*out_cap < bound) {
		uint8_t *p = realloc(*out, bound);
		if (!p)
			return -ENOMEM;
		*out = p;
		*out_cap = bound;
	}
	size_t n = ZSTD_compress2(cctx, *out + TRCFILE__CHUNK_HDR_BYTES,
				  *out_cap - TRCFILE__CHUNK_HDR_BYTES, raw, raw_len);
	if (ZSTD_isError(n))
		return -EIO;
	if (n > UINT32_MAX)
		return -EFBIG;
	h->raw_bytes = (uint32_t)raw_len;
	h->comp_bytes = (uint32_t)n;
	trcfile__chunk_hdr_put(*out, h);
	*out_len = TRCFILE__CHUNK_HDR_BYTES + n;
	return 0;
}

ZSTD_CCtx *trcfile__out_cctx(struct trcfile_out *o)
{
	if (!o->wcctx)
		o->wcctx = trcfile__cctx_new(o->zstd_level);
	return o->wcctx;
}

/* ---- open / free ----------------------------------------------------------------------- */

int trcfile__out_check(int fd, const struct trcfile_header_info *h)
{
	const char *host = h && h->host ? h->host : "";
	const char *tool = h && h->tool_version ? h->tool_version : "";
	size_t host_len = strlen(host), tool_len = strlen(tool);
	if (fd < 0 || !h || (h->cmdline_len && !h->cmdline) ||
	    h->cmdline_len > TRCFILE_MAX_STRING_BYTES || host_len > TRCFILE_MAX_STRING_BYTES ||
	    tool_len > TRCFILE_MAX_STRING_BYTES)
		return -EINVAL;
	return 0;
}

void trcfile__out_init(struct trcfile_out *o, int fd, const struct trcfile_header_info *h,
		       uint32_t chunk_bytes, int zstd_level, uint32_t flags, char *spill_dir)
{
	o->spill_dir = spill_dir;
	o->fd = fd;
	o->chunk_bytes = chunk_bytes;
	o->zstd_level = zstd_level;
	o->lose_when_full = (flags & TRCFILE_WRITER_LOSE_WHEN_FULL) != 0;
	o->pid = h->pid;
	struct rlimit fsize;
	o->fsize_limit = getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY
				 ? (uint64_t)fsize.rlim_cur
				 : UINT64_MAX;
	struct stat fst;
	o->regular = fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode);
	u64map_init(&o->tally_of, SIZE_MAX);
	atomic_init(&o->room_raw, UINT64_MAX);
}

int trcfile__out_header(struct trcfile_out *o, const struct trcfile_header_info *h)
{
	const char *host = h->host ? h->host : "";
	const char *tool = h->tool_version ? h->tool_version : "";
	size_t host_len = strlen(host), tool_len = strlen(tool);
	struct trcfile__file_hdr fh = {
		.version_major = TRCFILE_VERSION_MAJOR,
		.version_minor = TRCFILE_VERSION_MINOR,
		.pid = h->pid,
		.clock_source = h->clock_source,
		.tsc_hz = h->tsc_hz,
		.start_mono_ns = h->start_mono_ns,
		.start_realtime_ns = h->start_realtime_ns,
		.rss_interval_ns = h->rss_interval_ns,
		.rss_source = h->rss_source,
		.chunk_bytes = o->chunk_bytes,
		.buffer_bytes = h->buffer_bytes,
		.flags = h->when_full & TRCFILE_HDR_WHEN_FULL_MASK,
		.cmdline = h->cmdline,
		.cmdline_len = h->cmdline_len,
		.host = host,
		.host_len = (uint32_t)host_len,
		.tool = tool,
		.tool_len = (uint32_t)tool_len,
		.alloc_stacks = h->alloc_stacks,
		.stack_depth = h->stack_depth,
		.sample_bytes = h->sample_bytes,
	};
	size_t hbytes = trcfile__header_size(&fh);
	fh.header_bytes = (uint32_t)hbytes;
	uint8_t *hbuf = malloc(hbytes);
	if (!hbuf)
		return -ENOMEM;
	trcfile__header_put(hbuf, &fh);
	int e = pio_pwrite_all(o->fd, hbuf, hbytes, 0);
	free(hbuf);
	if (e)
		return e;
	o->offset = hbytes;
	atomic_store_explicit(&o->bytes_written, hbytes, memory_order_relaxed);
	trcfile__out_check_room(o, NULL); /* a disk short of room from the start: nothing stored */
	return 0;
}

void trcfile__out_free(struct trcfile_out *o)
{
	if (o->stream_spill_ready)
		trcfile__spill_free(&o->stream_spill);
	if (o->chunk_spill_ready)
		trcfile__spill_free(&o->chunk_spill);
	free(o->index_buf);
	free(o->index_weight);
	free(o->tally);
	for (size_t i = 0; i < o->n_kept; i++)
		free(o->kept[i].raw);
	free(o->kept);
	u64map_destroy(&o->tally_of);
	ZSTD_freeCCtx(o->wcctx);
	free(o->spill_dir);
}

/* ---- the chunk index ------------------------------------------------------------------- */

/* Appends a chunk's index entry (its footer image) to the buffer, spilling the buffer first
 * when it is full, so the last entry can still be taken back (trcfile__index_drop_last). */
static int trcfile__index_add(struct trcfile_out *o, uint64_t off,
			      const struct trcfile__chunk_hdr *h)
{
	if (!o->index_buf) {
		o->index_buf =
			malloc((size_t)TRCFILE__INDEX_BUF_ENTRIES * TRCFILE__FOOTER_CHUNK_BYTES);
		o->index_weight = calloc(TRCFILE__INDEX_BUF_ENTRIES, sizeof(*o->index_weight));
		if (!o->index_buf || !o->index_weight)
			return -ENOMEM;
	}
	if (o->index_buf_n == TRCFILE__INDEX_BUF_ENTRIES) {
		if (!o->chunk_spill_ready) {
			trcfile__spill_init(&o->chunk_spill, o->spill_dir);
			o->chunk_spill_ready = true;
		}
		size_t bytes = (size_t)o->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES;
		int err = trcfile__spill_pwrite(&o->chunk_spill, o->index_buf, bytes,
						o->chunk_spill.len);
		if (err)
			return err;
		o->index_buf_n = 0;
	}
	struct trcfile__footer_chunk e = {.offset = off,
					  .stream_id = h->stream_id,
					  .seq = h->seq,
					  .first_ts = h->first_ts,
					  .last_ts = h->last_ts,
					  .count = h->count,
					  .raw_bytes = h->raw_bytes,
					  .comp_bytes = h->comp_bytes};
	trcfile__footer_chunk_put(
		o->index_buf + (size_t)o->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES, &e);
	o->index_weight[o->index_buf_n] = (struct trcfile__weight){0, 0};
	o->index_buf_n++;
	o->n_index++;
	o->last_index_offset = off;
	return 0;
}

/* Takes back the entry just added for the chunk at off, when its write failed. */
static void trcfile__index_drop_last(struct trcfile_out *o, uint64_t off)
{
	if (o->index_buf_n && o->last_index_offset == off) {
		o->index_buf_n--;
		o->n_index--;
	}
}


/* Counts the chunk h (weight wt) as not written. Writer thread, then close. 0 or -ENOMEM. */
static int trcfile__tally(struct trcfile_out *o, const struct trcfile__chunk_hdr *h,
			  struct trcfile__weight wt)
{
	uint64_t key = (uint64_t)h->stream_id + 1;
	const uint64_t *v = u64map_get(&o->tally_of, key);
	struct trcfile__full_tally *t;
	if (v) {
		t = &o->tally[*v];
	} else {
		if (o->n_tally == o->cap_tally) {
			size_t cap = o->cap_tally ? 2 * o->cap_tally : 16;
			struct trcfile__full_tally *m = realloc(o->tally, cap * sizeof(*m));
			if (!m)
				return -ENOMEM;
			o->tally = m;
			o->cap_tally = cap;
		}
		if (u64map_put(&o->tally_of, key, o->n_tally, NULL, NULL))
			return -ENOMEM;
		t = &o->tally[o->n_tally++];
		*t = (struct trcfile__full_tally){
			.stream_id = h->stream_id, .min_seq = h->seq, .first_ts = h->first_ts};
	}
	if (h->seq < t->min_seq)
		t->min_seq = h->seq;
	if (h->first_ts < t->first_ts)
		t->first_ts = h->first_ts;
	t->chunks++;
	t->records += h->count;
	t->events += wt.weight;
	o->full_lost_events += wt.weight;
	o->full_unwritten_events += wt.events;
	o->full_unwritten += h->count;
	return 0;
}

/* Keeps a copy of metadata chunk h (raw_len bytes at raw) for close (TRCFILE__KEEP_META_BYTES).
 * 0, or -ENOSPC when there is no room left for it, -ENOMEM. Writer thread. */
static int trcfile__keep(struct trcfile_out *o, const struct trcfile__chunk_hdr *h,
			 const uint8_t *raw_in, size_t raw_len)
{
	if (h->kind != TRC_STREAM_META || !raw_len ||
	    raw_len > TRCFILE__KEEP_META_BYTES - o->kept_bytes)
		return -ENOSPC;
	if (o->n_kept == o->cap_kept) {
		size_t cap = o->cap_kept ? 2 * o->cap_kept : 16;
		struct trcfile__kept *k = realloc(o->kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		o->kept = k;
		o->cap_kept = cap;
	}
	uint8_t *raw = malloc(raw_len);
	if (!raw)
		return -ENOMEM;
	memcpy(raw, raw_in, raw_len);
	o->kept[o->n_kept++] = (struct trcfile__kept){.hdr = *h, .raw = raw, .raw_len = raw_len};
	o->kept_bytes += raw_len;
	return 0;
}

int trcfile__out_lost(struct trcfile_out *o, const struct trcfile__chunk_hdr *h,
		      const uint8_t *raw, size_t raw_len, struct trcfile__weight wt)
{
	if (trcfile__keep(o, h, raw, raw_len) == 0)
		return 0;
	return trcfile__tally(o, h, wt);
}

bool trcfile__out_fills(struct trcfile_out *o, int err)
{
	if (!o->lose_when_full || !trcfile__is_full_err(err))
		return false;
	int expected = 0;
	atomic_compare_exchange_strong_explicit(&o->full_err, &expected, err,
						memory_order_relaxed, memory_order_relaxed);
	atomic_store_explicit(&o->store_off, true, memory_order_relaxed);
	return true;
}

/* The room is short below TRCFILE__STORE_MIN_ROOM. */
void trcfile__out_check_room(struct trcfile_out *o, const struct trcfile__chunk_hdr *h)
{
	if (!o->lose_when_full || !o->regular)
		return;
	uint64_t room = UINT64_MAX;
	struct statvfs sv;
	if (fstatvfs(o->fd, &sv) == 0)
		room = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (o->fsize_limit != UINT64_MAX) {
		uint64_t left = o->fsize_limit > o->offset ? o->fsize_limit - o->offset : 0;
		if (left < room)
			room = left;
	}
	if (h) {
		o->raw_total += h->raw_bytes;
		o->comp_total += h->comp_bytes;
	}
	uint64_t raw = UINT64_MAX;
	if (room != UINT64_MAX && o->comp_total && o->raw_total < UINT64_MAX / 16) {
		uint64_t ratio_x16 = o->raw_total * 16 / o->comp_total;
		raw = room / 4 > UINT64_MAX / 16 / (ratio_x16 + 1) ? UINT64_MAX
								     : room / 4 * ratio_x16 / 16;
	} else if (room != UINT64_MAX) {
		raw = room / 4;
	}
	atomic_store_explicit(&o->room_raw, raw, memory_order_relaxed);
	uint64_t want = TRCFILE__STORE_MIN_ROOM;
	if (o->stored_bytes > want / TRCFILE__STORE_ROOM_PER_STORED)
		want = o->stored_bytes * TRCFILE__STORE_ROOM_PER_STORED;
	if (room < want)
		atomic_store_explicit(&o->store_off, true, memory_order_relaxed);
}

/* ---- chunks at the file's end ------------------------------------------------------------ */

int trcfile__out_put(struct trcfile_out *o, const struct trcfile__chunk_hdr *h, const void *a,
		     size_t an, const void *b, size_t bn, struct trcfile__weight wt)
{
	int err = trcfile__index_add(o, o->offset, h);
	if (!err)
		err = pio_pwrite_all(o->fd, a, an, o->offset);
	if (!err && bn)
		err = pio_pwrite_all(o->fd, b, bn, o->offset + an);
	if (err) {
		trcfile__index_drop_last(o, o->offset);
		if (ftruncate(o->fd, (off_t)o->offset) != 0) {
			/* nothing more to do: the caller records the error */
		}
		return err;
	}
	o->index_weight[o->index_buf_n - 1] = wt;
	o->offset += an + bn;
	atomic_fetch_add_explicit(&o->bytes_written, an + bn, memory_order_relaxed);
	return 0;
}

int trcfile__out_put_stored(struct trcfile_out *o, struct trcfile__chunk_hdr *h,
			    const uint8_t *raw, size_t raw_len, struct trcfile__weight wt,
			    uint64_t *at)
{
	h->raw_bytes = (uint32_t)raw_len;
	h->comp_bytes = (uint32_t)raw_len;
	h->flags = TRCFILE__CHUNK_STORED;
	h->payload_crc = trcfile__crc32c_fast(0, raw, raw_len);
	uint8_t hdr[TRCFILE__CHUNK_HDR_BYTES];
	trcfile__chunk_hdr_put(hdr, h);
	*at = o->offset;
	int err = trcfile__out_put(o, h, hdr, sizeof(hdr), raw, raw_len, wt);
	if (err)
		return err;
	o->stored_bytes += sizeof(hdr) + raw_len;
	trcfile__out_check_room(o, h);
	return 0;
}

/* ---- streams' entries ------------------------------------------------------------------ */

static void trcfile__stream_spill_ready(struct trcfile_out *o)
{
	if (!o->stream_spill_ready) {
		trcfile__spill_init(&o->stream_spill, o->spill_dir);
		o->stream_spill_ready = true;
	}
}

int trcfile__out_stream_entry(struct trcfile_out *o, const struct trcfile__footer_stream *e)
{
	trcfile__stream_spill_ready(o);
	uint8_t img[TRCFILE__FOOTER_STREAM_BYTES];
	trcfile__footer_stream_put(img, e);
	return trcfile__spill_pwrite(&o->stream_spill, img, sizeof(img),
				     (uint64_t)e->id * TRCFILE__FOOTER_STREAM_BYTES);
}

int trcfile__out_add_ended_streams(struct trcfile_out *o, const struct trcfile__footer_stream *e,
				   size_t n, bool closing)
{
	uint8_t img[64 * TRCFILE__FOOTER_STREAM_BYTES];
	int err = 0;
	trcfile__stream_spill_ready(o);
	for (size_t i = 0; i < n && !err;) {
		size_t k = n - i < 64 ? n - i : 64;
		if (closing || (uint64_t)o->n_streams + k > UINT32_MAX) {
			err = -EINVAL;
			break;
		}
		for (size_t j = 0; j < k; j++) {
			struct trcfile__footer_stream f = e[i + j];
			f.id = o->n_streams + (uint32_t)j;
			trcfile__footer_stream_put(img + j * TRCFILE__FOOTER_STREAM_BYTES, &f);
		}
		err = trcfile__spill_pwrite(&o->stream_spill, img, k * TRCFILE__FOOTER_STREAM_BYTES,
					    (uint64_t)o->n_streams * TRCFILE__FOOTER_STREAM_BYTES);
		if (!err)
			o->n_streams += (uint32_t)k;
		i += k;
	}
	return err;
}

/* ---- the footer ------------------------------------------------------------------------ */

/* Appends n bytes to the footer being written at *pos, chaining its crc. */
static int trcfile__footer_out(struct trcfile_out *o, const void *buf, size_t n, uint64_t *pos,
			       uint32_t *crc)
{
	int err = pio_pwrite_all(o->fd, buf, n, *pos);
	if (err)
		return err;
	*crc = trcfile__crc32c(*crc, buf, n);
	*pos += n;
	return 0;
}

/* Copies [0, n) of a spill into the footer, through buf. */
static int trcfile__footer_copy(struct trcfile_out *o, const struct trcfile__spill *sp,
				uint64_t n, uint8_t *buf, size_t buf_len, uint64_t *pos,
				uint32_t *crc)
{
	for (uint64_t off = 0; off < n;) {
		size_t k = n - off < buf_len ? (size_t)(n - off) : buf_len;
		int err = trcfile__spill_pread(sp, buf, k, off);
		if (!err)
			err = trcfile__footer_out(o, buf, k, pos, crc);
		if (err)
			return err;
		off += k;
	}
	return 0;
}

/* The footer (FORMAT.md), written piece by piece from the spills so that its size never sits
 * in memory: the fixed part, the streams' entries by id, the chunk index (and n_extra more
 * entries' images, extra: a full disk's lost chunks), the trailer. Every stream is retired
 * (its entry in the stream spill). */
static int trcfile__write_footer(struct trcfile_out *o, const uint8_t *extra, size_t n_extra)
{
	size_t n_streams = o->n_streams;
	uint64_t n_chunks = o->n_index + n_extra;
	uint64_t bytes = trcfile__footer_bytes(n_streams, n_chunks);
	uint64_t stream_bytes = (uint64_t)n_streams * TRCFILE__FOOTER_STREAM_BYTES;
	if (n_streams && (!o->stream_spill_ready || o->stream_spill.len != stream_bytes))
		return -EIO; /* a stream without its entry: cannot happen */
	uint64_t spilled = o->chunk_spill_ready ? o->chunk_spill.len : 0;
	if (spilled + (uint64_t)o->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES !=
	    o->n_index * TRCFILE__FOOTER_CHUNK_BYTES)
		return -EIO;
	const size_t buf_len = 64u << 10;
	uint8_t *buf = malloc(buf_len);
	if (!buf)
		return -ENOMEM;
	uint64_t pos = o->offset;
	uint32_t crc = 0;
	uint8_t fixed[TRCFILE__FOOTER_FIXED_BYTES];
	trcfile__footer_put(fixed, &(struct trcfile__footer){.stream_count = (uint32_t)n_streams,
							     .chunk_count = n_chunks});
	int err = trcfile__footer_out(o, fixed, sizeof(fixed), &pos, &crc);
	if (!err && n_streams)
		err = trcfile__footer_copy(o, &o->stream_spill, stream_bytes, buf, buf_len, &pos,
					   &crc);
	if (!err && spilled)
		err = trcfile__footer_copy(o, &o->chunk_spill, spilled, buf, buf_len, &pos, &crc);
	if (!err && o->index_buf_n)
		err = trcfile__footer_out(o, o->index_buf,
					  (size_t)o->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES,
					  &pos, &crc);
	if (!err && n_extra)
		err = trcfile__footer_out(o, extra, n_extra * TRCFILE__FOOTER_CHUNK_BYTES, &pos,
					  &crc);
	if (!err) {
		uint8_t tr[TRCFILE__TRAILER_BYTES];
		struct trcfile__trailer t = {
			.footer_offset = o->offset, .footer_bytes = bytes, .footer_crc = crc};
		trcfile__trailer_put(tr, &t);
		err = pio_pwrite_all(o->fd, tr, sizeof(tr), pos);
	}
	free(buf);
	if (!err)
		atomic_fetch_add_explicit(&o->bytes_written, bytes + TRCFILE__TRAILER_BYTES,
					  memory_order_relaxed);
	else if (ftruncate(o->fd, (off_t)o->offset) != 0) {
		/* best effort, as in trcfile__out_put */
	}
	return err;
}

/* ---- the end of a trace whose disk filled ----------------------------------------------- */

/* Appends the chunk h (its records: raw_len bytes at raw), compressed with cctx, to *buf (*len
 * bytes of *cap) for file offset off; its index entry's image at img. 0 or -errno. */
static int trcfile__end_chunk(struct trcfile_out *o, ZSTD_CCtx *cctx,
			      const struct trcfile__chunk_hdr *h, const uint8_t *raw, size_t raw_len,
			      uint64_t off, uint8_t **buf, size_t *len, size_t *cap, uint8_t *img)
{
	struct trcfile__chunk_hdr ch = *h;
	ch.flags = 0;
	ch.payload_crc = 0;
	uint8_t *out = NULL;
	size_t out_cap = 0, out_len = 0;
	int err = trcfile__chunk_frame(cctx, &ch, raw, raw_len, &out, &out_cap, &out_len);
	if (!err && *cap - *len < out_len) {
		size_t ncap = 2 * (*cap + out_len);
		uint8_t *nb = realloc(*buf, ncap);
		if (!nb)
			err = -ENOMEM;
		else {
			*buf = nb;
			*cap = ncap;
		}
	}
	if (!err) {
		memcpy(*buf + *len, out, out_len);
		*len += out_len;
		trcfile__footer_chunk_put(img, &(struct trcfile__footer_chunk){
						       .offset = off,
						       .stream_id = ch.stream_id,
						       .seq = ch.seq,
						       .first_ts = ch.first_ts,
						       .last_ts = ch.last_ts,
						       .count = ch.count,
						       .raw_bytes = ch.raw_bytes,
						       .comp_bytes = ch.comp_bytes});
	}
	free(out);
	return err;
}

/* trcfile__end_chunk of a chunk of stream st, seq, holding the one record r. */
static int trcfile__end_record(struct trcfile_out *o, ZSTD_CCtx *cctx,
			       const struct trcfile__footer_stream *st, uint32_t seq,
			       const struct trc_record *r, uint64_t off, uint8_t **buf, size_t *len,
			       size_t *cap, uint8_t *img)
{
	long need = trcfile__record_max_bytes(r);
	if (need < 0)
		return (int)need;
	uint8_t *raw = malloc((size_t)need);
	if (!raw)
		return -ENOMEM;
	struct trcfile__coder coder;
	trcfile__coder_reset(&coder, r->ts_ns);
	size_t raw_len = (size_t)(trcfile__encode(raw, r, &coder) - raw);
	struct trcfile__chunk_hdr h = {.stream_id = st->id,
				       .seq = seq,
				       .kind = st->kind,
				       .pid = st->pid,
				       .tid = st->tid,
				       .first_ts = r->ts_ns,
				       .last_ts = r->ts_ns,
				       .count = 1};
	int err = trcfile__end_chunk(o, cctx, &h, raw, raw_len, off, buf, len, cap, img);
	free(raw);
	return err;
}

/* Cuts the last whole chunk off the file (to make room for the footer) and counts it lost.
 * false when there is none left to cut (its index entry spilled already). Close. */
static bool trcfile__cut_last(struct trcfile_out *o)
{
	if (!o->index_buf_n)
		return false;
	uint32_t i = o->index_buf_n - 1;
	struct trcfile__footer_chunk e;
	const char *why;
	if (trcfile__footer_chunk_get(o->index_buf + (size_t)i * TRCFILE__FOOTER_CHUNK_BYTES, &e,
				      &why) != 0 ||
	    e.offset > o->offset)
		return false;
	struct trcfile__chunk_hdr h = {
		.stream_id = e.stream_id, .seq = e.seq, .first_ts = e.first_ts, .count = e.count};
	if (trcfile__tally(o, &h, o->index_weight[i]) != 0)
		return false;
	o->index_buf_n--;
	o->n_index--;
	atomic_fetch_sub_explicit(&o->bytes_written, o->offset - e.offset, memory_order_relaxed);
	o->offset = e.offset;
	return ftruncate(o->fd, (off_t)o->offset) == 0;
}

/* The note of a full disk (FORMAT.md "lost", reason 7). */
static void trcfile__full_note(const struct trcfile_out *o, char *buf, size_t len)
{
	int err = atomic_load_explicit(&((struct trcfile_out *)o)->full_err,
				       memory_order_relaxed);
	snprintf(buf, len,
		 "the disk filled while recording (%s): %" PRIu64 " events were not written "
		 "and are counted lost (reason disk_full), %" PRIu64
		 " records in all (RSS samples and metadata among them)",
		 err == -EFBIG ? "the file size limit" : strerror(-err), o->full_lost_events,
		 o->full_unwritten);
}

/* Writes what the streams lost (a chunk with one lost record, reason disk full, for each
 * stream that lost events, at its first lost chunk's seq and time), a note in a meta stream
 * of its own, and the footer, whose stream entries count what the file holds. Where those do
 * not fit, the last whole chunks are cut off, and counted lost too, until they do. Close, the
 * threads joined and every stream retired. 0 or -errno. */
static int trcfile__write_full_end(struct trcfile_out *o)
{
	ZSTD_CCtx *cctx = trcfile__out_cctx(o);
	if (!cctx)
		return -ENOMEM;
	if (o->n_streams == UINT32_MAX)
		return -EFBIG;
	if (!o->stream_spill_ready) {
		trcfile__spill_init(&o->stream_spill, o->spill_dir);
		o->stream_spill_ready = true;
	}
	/* The note's stream: the last id. */
	struct trcfile__footer_stream note_st = {
		.id = o->n_streams, .kind = TRC_STREAM_META, .pid = o->pid, .chunks = 1, .records = 1};
	uint8_t img[TRCFILE__FOOTER_STREAM_BYTES];
	trcfile__footer_stream_put(img, &note_st);
	int err = trcfile__spill_pwrite(&o->stream_spill, img, sizeof(img),
					(uint64_t)note_st.id * TRCFILE__FOOTER_STREAM_BYTES);
	if (err)
		return err;
	o->n_streams++;
	uint8_t *buf = NULL, *extra = NULL;
	size_t cap = 0;
	for (;;) {
		size_t len = 0, n_extra = 0;
		free(extra);
		extra = malloc((o->n_kept + o->n_tally + 1) * TRCFILE__FOOTER_CHUNK_BYTES);
		if (!extra) {
			err = -ENOMEM;
			break;
		}
		/* The metadata first, as it was (its streams' entries count it already). */
		for (size_t i = 0; i < o->n_kept && !err; i++, n_extra++)
			err = trcfile__end_chunk(o, cctx, &o->kept[i].hdr, o->kept[i].raw,
						 o->kept[i].raw_len, o->offset + len, &buf, &len,
						 &cap, extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
		uint64_t first_ts = UINT64_MAX;
		for (size_t i = 0; i < o->n_tally && !err; i++) {
			struct trcfile__full_tally *t = &o->tally[i];
			uint64_t at = (uint64_t)t->stream_id * TRCFILE__FOOTER_STREAM_BYTES;
			const char *why;
			if (!t->have_entry) {
				err = t->stream_id < note_st.id
					      ? trcfile__spill_pread(&o->stream_spill, img,
								     sizeof(img), at)
					      : -EIO;
				if (!err && trcfile__footer_stream_get(img, &t->entry, &why))
					err = -EIO;
				if (err)
					break;
				t->have_entry = true;
			}
			if (t->chunks > t->entry.chunks || t->records > t->entry.records) {
				err = -EIO; /* more lost than the stream had: cannot happen */
				break;
			}
			if (t->first_ts < first_ts)
				first_ts = t->first_ts;
			struct trcfile__footer_stream e = t->entry;
			e.chunks -= t->chunks;
			e.records -= t->records;
			if (t->events) {
				struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = t->first_ts};
				r.lost.count = t->events;
				r.lost.reason = TRC_LOST_DISK_FULL;
				err = trcfile__end_record(
					o, cctx, &t->entry, t->min_seq, &r, o->offset + len, &buf,
					&len, &cap, extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
				n_extra++;
				e.chunks++;
				e.records++;
			}
			trcfile__footer_stream_put(img, &e);
			if (!err)
				err = trcfile__spill_pwrite(&o->stream_spill, img, sizeof(img), at);
		}
		if (!err) {
			char text[320];
			trcfile__full_note(o, text, sizeof(text));
			struct trc_record r = {.type = TRC_REC_NOTE,
					       .ts_ns = first_ts == UINT64_MAX ? 0 : first_ts};
			r.note.text = text;
			r.note.len = (uint32_t)strlen(text);
			err = trcfile__end_record(o, cctx, &note_st, 0, &r, o->offset + len, &buf,
						  &len, &cap,
						  extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
			n_extra++;
		}
		if (err)
			break;
		uint64_t at = o->offset;
		err = pio_pwrite_all(o->fd, buf, len, at);
		if (!err) {
			o->offset += len;
			err = trcfile__write_footer(o, extra, n_extra);
			if (!err) {
				atomic_fetch_add_explicit(&o->bytes_written, len,
							  memory_order_relaxed);
				break;
			}
			o->offset = at;
		}
		if (ftruncate(o->fd, (off_t)at) != 0 || !trcfile__is_full_err(err) ||
		    !trcfile__cut_last(o))
			break;
		err = 0;
	}
	free(buf);
	free(extra);
	return err;
}

/* 0 or -errno: a file that cannot be synced (EINVAL, EROFS: a pipe, a read-only mount) is no
 * error. */
static int trcfile__fsync(int fd)
{
	return fsync(fd) != 0 && errno != EINVAL && errno != EROFS ? -errno : 0;
}

int trcfile_sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = trcfile__fsync(fd);
	close(fd);
	return err;
}

int trcfile__out_finish(struct trcfile_out *o)
{
	return trcfile__out_full(o) ? trcfile__write_full_end(o) : trcfile__write_footer(o, NULL, 0);
}

int trcfile__out_sync(const struct trcfile_out *o)
{
	return trcfile__fsync(o->fd);
}
