/* trcfile_cursor.c - one stream's records in stream order: chunk loading and decoding.
 *
 * Purpose: the unit every read path is built on. A cursor holds one decompressed chunk at a
 * time (its buffer is the reader's memory bound: streams x chunk size), loads the next chunk
 * of its stream by sequence number when the current one is used up, and checks each chunk
 * fully: its header must repeat the index entry, its frame must be one zstd frame with a
 * checksum, the records must fill the raw bytes exactly and the last one must carry the
 * header's last time. A chunk that fails the checks made before its records are handed out
 * (header, frame, checksum, size) is skipped: counted in the reader's stats with the first
 * reason, and the stream goes on with its next chunk. Damage found inside the records of a
 * chunk already being handed out is an error of the cursor; which of that chunk's records are
 * handed out first is decided in one place, trcfile_cursor_read, the one decoder every read
 * path (record by record, in batches, the seek, the merge) goes through.
 *
 * Threads: a cursor belongs to the reader's thread; it uses the reader's DCtx and I/O buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "trcfile_reader_priv.h"
#include "trcfile_stored.h"

int trcfile__load_chunk(struct trcfile_reader *r, size_t idx, uint8_t **buf, size_t *cap)
{
	const struct trcfile__chunk_ref *c = &r->chunks[idx];
	int err = 0;
	const uint8_t *p = trcfile__read_at(r, c->offset,
					    (size_t)TRCFILE__CHUNK_HDR_BYTES + c->comp_bytes, &err);
	if (!p)
		return err;
	struct trcfile__chunk_hdr h;
	const char *why = NULL;
	if (trcfile__chunk_hdr_get(p, &h, &why) != 0)
		goto bad;
	const struct trcfile_stream_info *si = &r->streams[c->stream_idx];
	why = "chunk header disagrees with the index";
	if (h.stream_id != c->stream_id || h.seq != c->seq || h.first_ts != c->first_ts ||
	    h.last_ts != c->last_ts || h.count != c->count || h.raw_bytes != c->raw_bytes ||
	    h.comp_bytes != c->comp_bytes || h.kind != si->kind || h.pid != si->pid ||
	    h.tid != si->tid)
		goto bad;
	const uint8_t *frame = p + TRCFILE__CHUNK_HDR_BYTES;
	bool stored = trcfile__chunk_is_stored(&h);
	why = stored ? trcfile__stored_check(frame, &h)
		     : trcfile__frame_check(frame, c->comp_bytes, c->raw_bytes);
	if (why)
		goto bad;
	if (*cap < c->raw_bytes) {
		/* raw_bytes is bounded by trcfile__raw_limit (checked at open). */
		uint8_t *nb = realloc(*buf, c->raw_bytes);
		if (!nb)
			return trcfile_reader_fail(r, -ENOMEM, "out of memory for a %u-byte chunk",
						   c->raw_bytes);
		*buf = nb;
		*cap = c->raw_bytes;
	}
	if (stored) {
		/* A stored chunk's payload is its records (FORMAT.md "Stored chunks"). */
		memcpy(*buf, frame, c->raw_bytes);
		return 0;
	}
	size_t n = ZSTD_decompressDCtx(r->dctx, *buf, c->raw_bytes, frame, c->comp_bytes);
	if (ZSTD_isError(n)) {
		why = ZSTD_getErrorName(n);
		goto bad;
	}
	if (n != c->raw_bytes) {
		why = "decompressed size disagrees with the chunk header";
		goto bad;
	}
	return 0;
bad:
	return trcfile_reader_fail(r, -EBADMSG, "damaged chunk %u of stream %u at offset %llu: %s",
				   c->seq, c->stream_id, (unsigned long long)c->offset, why);
}

struct trcfile_cursor *trcfile_cursor_new(struct trcfile_reader *r, unsigned stream_idx)
{
	if (!r || stream_idx >= r->n_streams)
		return NULL;
	struct trcfile_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->r = r;
	c->stream = stream_idx;
	c->next = r->stream_chunk0[stream_idx];
	c->end = r->stream_chunk0[stream_idx + 1];
	return c;
}

void trcfile_cursor_free(struct trcfile_cursor *c)
{
	if (!c)
		return;
	free(c->raw);
	free(c);
}

static int trcfile__cursor_load(struct trcfile_cursor *c, size_t idx)
{
	int err = trcfile__load_chunk(c->r, idx, &c->raw, &c->raw_cap);
	if (err) {
		c->error = err;
		c->left = 0;
		return err;
	}
	const struct trcfile__chunk_ref *ref = &c->r->chunks[idx];
	c->cur = idx;
	c->next = idx + 1;
	c->p = c->raw;
	c->pend = c->raw + ref->raw_bytes;
	c->left = ref->count;
	trcfile__coder_reset(&c->coder, ref->first_ts);
	return 1;
}

/* Chunk idx failed its checks: count it once per reader and keep the first reason. */
static void trcfile__chunk_skipped(struct trcfile_reader *r, size_t idx)
{
	if (!r->chunk_damaged)
		r->chunk_damaged = calloc(r->n_chunks ? r->n_chunks : 1, 1);
	if (r->chunk_damaged && r->chunk_damaged[idx])
		return;
	if (r->chunk_damaged)
		r->chunk_damaged[idx] = 1;
	r->stats.chunks_damaged++;
	if (!r->damage_note[0])
		memcpy(r->damage_note, r->errmsg, sizeof(r->damage_note));
}

int trcfile_scan_next_chunk(struct trcfile_cursor *c)
{
	if (c->error)
		return c->error;
	while (c->next < c->end) {
		size_t idx = c->next;
		int rc = trcfile__cursor_load(c, idx);
		if (rc != -EBADMSG)
			return rc;
		/* Chunks are self-contained: a damaged one costs its own records only. */
		trcfile__chunk_skipped(c->r, idx);
		c->error = 0;
		c->next = idx + 1;
		c->skipped = true;
	}
	return 0;
}

int trcfile_scan_chunk_done(struct trcfile_cursor *c)
{
	const struct trcfile__chunk_ref *ref = &c->r->chunks[c->cur];
	const char *why = NULL;
	if (c->p != c->pend)
		why = "records end before the chunk does";
	else if (c->coder.ts != ref->last_ts)
		why = "last record's time disagrees with the chunk header";
	if (!why)
		return 0;
	c->error = trcfile_reader_fail(c->r, -EBADMSG,
				       "damaged chunk %u of stream %u at offset %llu: %s", ref->seq,
				       ref->stream_id, (unsigned long long)ref->offset, why);
	return c->error;
}

static int trcfile__cursor_bad_record(struct trcfile_cursor *c)
{
	const struct trcfile__chunk_ref *ref = &c->r->chunks[c->cur];
	c->error = trcfile_reader_fail(
		c->r, -EBADMSG,
		"damaged chunk %u of stream %u at offset %llu: bad record at "
		"byte %zu",
		ref->seq, ref->stream_id, (unsigned long long)ref->offset, (size_t)(c->p - c->raw));
	c->left = 0;
	return c->error;
}

/* The one decoder of a stream's records: trcfile_cursor_next is this with max 1, the seek and
 * the merge call it too, so every read path hands out the same records. The rule for a chunk
 * found damaged while its records are handed out (FORMAT.md "Reading rules"): a record is
 * handed out once it is decoded whole inside its chunk, and the chunk's last record only once
 * the chunk's end is checked too (its records fill its bytes exactly, the last carries the
 * header's last time); a record that fails, or a last record whose chunk end is wrong, is not
 * handed out, and the stream ends with the error. Never past the loaded chunk: the records'
 * strings point into it. */
int trcfile_cursor_read(struct trcfile_cursor *c, struct trc_record *recs, unsigned max)
{
	unsigned n = 0;
	if (!max)
		return 0;
	if (c->have_peek) {
		c->have_peek = false;
		recs[n++] = c->peek;
		/* The peeked record's strings live in the loaded chunk: stay in it. */
		if (!c->left || n == max)
			return (int)n;
	}
	if (c->error)
		return n ? (int)n : c->error;
	if (!c->left) {
		if (n)
			return (int)n;
		int rc = trcfile_scan_next_chunk(c);
		if (rc <= 0)
			return rc;
	}
	unsigned end = max - n > c->left ? n + c->left : max;
	/* Position and coder in locals (registers) across the fast decodes; written back
	 * before anything that reads them from the cursor. */
	const uint8_t *p = c->p, *fast_end = trcfile__fast_end(c->p, c->pend);
	struct trcfile__coder coder = c->coder;
	uint32_t left = c->left;
	for (; n < end; n++, left--) {
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(p, fast_end, &coder, &ev);
		if (trcfile__likely(q != NULL)) {
			trcfile__event_record(&ev, &recs[n]);
			p = q;
			continue;
		}
		c->p = p;
		c->coder = coder;
		c->left = left;
		if (trcfile__decode_slow(&c->p, c->pend, &c->coder, &recs[n]) != 0) {
			int err = trcfile__cursor_bad_record(c);
			return n ? (int)n : err;
		}
		p = c->p;
		coder = c->coder;
	}
	c->p = p;
	c->coder = coder;
	c->left = left;
	if (!left) {
		/* recs[n - 1] is the chunk's last record: withheld when the chunk's end is
		 * wrong. */
		int err = trcfile_scan_chunk_done(c);
		if (err)
			return n > 1 ? (int)n - 1 : err;
	}
	return (int)n;
}

int trcfile_cursor_next(struct trcfile_cursor *c, struct trc_record *rec)
{
	return trcfile_cursor_read(c, rec, 1);
}

int trcfile_cursor_seek(struct trcfile_cursor *c, uint64_t t_ns)
{
	struct trcfile_reader *r = c->r;
	if (c->error)
		return c->error;
	c->have_peek = false;
	c->left = 0;
	size_t first = r->stream_chunk0[c->stream], end = r->stream_chunk0[c->stream + 1];
	/* Linear over the in-memory index (not the file): correct even when a stream's chunk
	 * times are not monotonic. */
	size_t i = first;
	while (i < end && r->chunks[i].last_ts < t_ns)
		i++;
	c->next = i;
	for (;;) {
		struct trc_record rec;
		int rc = trcfile_cursor_read(c, &rec, 1);
		if (rc <= 0)
			return rc;
		if (rec.ts_ns >= t_ns) {
			c->peek = rec;
			c->have_peek = true;
			return 0;
		}
	}
}
