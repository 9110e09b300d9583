/* trcfile_compact.c - compresses a trace's stored chunks (trcfile.h trcfile_compact).
 *
 * Purpose: the second half of "compression never holds the drain back" (DESIGN "The pipeline"):
 * the recorder writes chunks stored when its compressors are behind; this rewrites the file
 * with every chunk compressed, on all the threads the caller gives it. Used by trace-run before
 * it exits (unless --keep-stored) and by `trace-dump compact`.
 *
 * Two ways, the same output (the same streams, chunks, records and header; chunk order in the
 * file may differ, which no reader sees):
 *   - streamed, for a file whose footer can be walked (trcfile_footer_walk.h: every file the
 *     writer closed): the footer is checked and then read entry by entry, in memory that does
 *     not depend on the file (trace-run's memory must not grow with the threads a program
 *     ever started). The stream table goes to the output writer as it is
 *     (trcfile__writer_add_ended_streams); each chunk, in file order, is read, checked against
 *     its entry, and given to the writer whole (trcfile__writer_put_chunk), with the kind, pid
 *     and tid of its stream's entry.
 *   - loaded, for anything else (no footer: a recorder killed; a damaged footer; one the walk
 *     does not take): the reader opens the file as trace-dump would (recovering a file without
 *     a footer up to its last whole chunk, checking every chunk header against the index) and
 *     each stream's chunks go to a stream of the writer, in seq order. Its memory is the
 *     reader's: about 200 bytes a chunk.
 * Either way each chunk goes to the writer as a whole chunk: a stored one through the writer's
 * compressor threads, a compressed one as it is. trace-run's compaction
 * (trcfile__compact_copies) first looks for a stored chunk's copy made by the recorder's
 * background compressor while the program ran (struct trcfile_copies, trcfile_stored.h): one
 * that matches the chunk's index entry goes to the writer as a compressed chunk, so only the
 * rest is compressed here.
 *
 * Threads: the caller's thread reads; the writer's threads compress and write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trcfile_footer_walk.h"
#include "pio.h"
#include "trcfile_reader_priv.h"
#include "trcfile_stored.h"

static int trcfile__compact_fail(char *msg, size_t msg_len, int err, const char *what,
				 const char *detail)
{
	if (msg && msg_len)
		snprintf(msg, msg_len, "%s: %s", what, detail ? detail : strerror(-err));
	return err;
}

/* The output's writer: the input's header and chunk size, every chunk compressed. */
static struct trcfile_writer *trcfile__compact_writer(const struct trcfile_reader *r,
						      const char *out_path,
						      const struct trcfile_writer_opts *o, int *err)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	struct trcfile_header_info info = {
		.cmdline = h->cmdline,
		.cmdline_len = h->cmdline_len,
		.pid = h->pid,
		.start_mono_ns = h->start_mono_ns,
		.start_realtime_ns = h->start_realtime_ns,
		.clock_source = h->clock_source,
		.tsc_hz = h->tsc_hz,
		.rss_interval_ns = h->rss_interval_ns,
		.rss_source = h->rss_source,
		.buffer_bytes = h->buffer_bytes,
		.when_full = h->when_full,
		.alloc_stacks = h->alloc_stacks,
		.stack_depth = h->stack_depth,
		.sample_bytes = h->sample_bytes,
		.host = h->host,
		.tool_version = h->tool_version,
	};
	struct trcfile_writer_opts wo = {0};
	if (o)
		wo = *o;
	wo.chunk_bytes = h->chunk_bytes; /* the input's chunks must fit the output's limits */
	wo.flags &= ~TRCFILE_WRITER_STORE_WHEN_BEHIND;
	wo.store_one_in = 0;
	return trcfile_writer_open(out_path, &info, &wo, err);
}

/* Reads the chunk an index entry names, checks its header against the entry and its payload.
 * The chunk's header into *ch; its payload (valid until the next read of r), or NULL with
 * *err set and msg written. */
static const uint8_t *trcfile__compact_read_chunk(struct trcfile_reader *r, const char *in_path,
						  const struct trcfile__chunk_ref *c,
						  struct trcfile__chunk_hdr *ch, int *err,
						  char *msg, size_t msg_len)
{
	const uint8_t *p = trcfile__read_at(r, c->offset,
					    (size_t)TRCFILE__CHUNK_HDR_BYTES + c->comp_bytes, err);
	if (!p) {
		trcfile__compact_fail(msg, msg_len, *err, in_path, trcfile_reader_errmsg(r));
		return NULL;
	}
	const char *why = NULL;
	if (trcfile__chunk_hdr_get(p, ch, &why) == 0 &&
	    (ch->stream_id != c->stream_id || ch->seq != c->seq || ch->count != c->count ||
	     ch->raw_bytes != c->raw_bytes || ch->comp_bytes != c->comp_bytes ||
	     ch->first_ts != c->first_ts || ch->last_ts != c->last_ts))
		why = "chunk header disagrees with the index";
	const uint8_t *payload = p + TRCFILE__CHUNK_HDR_BYTES;
	if (!why)
		why = trcfile__chunk_is_stored(ch)
			      ? trcfile__stored_check(payload, ch)
			      : trcfile__frame_check(payload, ch->comp_bytes, ch->raw_bytes);
	if (why) {
		char detail[256];
		snprintf(detail, sizeof(detail), "damaged chunk %u of stream %u at offset %llu: %s",
			 c->seq, c->stream_id, (unsigned long long)c->offset, why);
		*err = trcfile__compact_fail(msg, msg_len, -EBADMSG, in_path, detail);
		return NULL;
	}
	return payload;
}

/* The background compressor's copy (struct trcfile_copies) of the stored chunk the index
 * entry c names: 1 with its header in *ch and its frame in *buf, when b has one and it matches c
 * (stream, seq, records, raw size, times; its own CRC; a whole frame of that size); else 0,
 * and the chunk is compressed here as any stored one (a copy that did not match is counted
 * as refused). */
static int trcfile__compact_side_copy(const struct trcfile_copies *b,
				      const struct trcfile__chunk_ref *c,
				      struct trcfile__chunk_hdr *ch, uint8_t **buf, size_t *cap,
				      struct trcfile_bgc_use *use)
{
	uint64_t soff;
	uint32_t slen, crc;
	if (!b || c->comp_bytes != c->raw_bytes ||
	    b->find(b->arg, c->offset, &soff, &slen, &crc) != 0)
		return 0;
	if (*cap < slen) {
		uint8_t *p = realloc(*buf, slen);
		if (!p)
			return 0;
		*buf = p;
		*cap = slen;
	}
	const char *why = NULL;
	bool ok = pio_pread_all(b->fd, *buf, slen, soff) == 0 &&
		  slen >= TRCFILE__CHUNK_HDR_BYTES && trcfile__crc32c_fast(0, *buf, slen) == crc &&
		  trcfile__chunk_hdr_get(*buf, ch, &why) == 0 && !trcfile__chunk_is_stored(ch) &&
		  ch->stream_id == c->stream_id && ch->seq == c->seq && ch->count == c->count &&
		  ch->raw_bytes == c->raw_bytes && ch->first_ts == c->first_ts &&
		  ch->last_ts == c->last_ts && ch->comp_bytes == slen - TRCFILE__CHUNK_HDR_BYTES &&
		  !trcfile__frame_check(*buf + TRCFILE__CHUNK_HDR_BYTES, ch->comp_bytes,
					ch->raw_bytes);
	if (!ok) {
		use->refused++;
		return 0;
	}
	use->used++;
	return 1;
}

/* The input changed in place since the footer was checked (the second pass's entries fail
 * the first pass's checks): what was written from it is not to be used. */
static int trcfile__compact_changed(const char *in_path, const char *why, char *msg, size_t msg_len)
{
	char detail[300];
	snprintf(detail, sizeof(detail), "the file changed while it was compacted (%s)", why);
	return trcfile__compact_fail(msg, msg_len, -EBADMSG, in_path, detail);
}

/* A walk call's failure: 1 (an entry fails a check) means the file changed. */
static int trcfile__compact_walk_fail(struct trcfile_reader *r,
				      const struct trcfile__footer_walk *fw, int err,
				      const char *in_path, char *msg, size_t msg_len)
{
	if (err == 1)
		return trcfile__compact_changed(in_path, fw->why, msg, msg_len);
	return trcfile__compact_fail(msg, msg_len, err, in_path, trcfile_reader_errmsg(r));
}

/* The streamed way (top of the file): fw is checked and at its first stream entry. Every
 * entry is checked again as it is read (trcfile__footer_walk_stream, _chunk, _end): the file
 * may have changed in place since, and the stream table given to the writer must be the one
 * its chunks match. */
static int trcfile__compact_streamed(struct trcfile_reader *r, struct trcfile__footer_walk *fw,
				     const char *in_path, const char *out_path,
				     const struct trcfile_writer_opts *o,
				     const struct trcfile_copies *b,
				     void (*progress)(void *arg, uint64_t done, uint64_t total),
				     void *arg, struct trcfile_bgc_use *use, char *msg,
				     size_t msg_len)
{
	uint8_t *side = NULL;
	size_t side_cap = 0;
	int err = 0;
	struct trcfile_writer *w = trcfile__compact_writer(r, out_path, o, &err);
	if (!w)
		return trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
	enum { BATCH = 64 };
	struct trcfile__footer_stream se[BATCH];
	for (uint32_t i = 0; i < fw->n_streams && !err;) {
		uint32_t k = 0;
		for (; k < BATCH && i + k < fw->n_streams && !err; k++)
			err = trcfile__footer_walk_stream(fw, &se[k]);
		if (err) {
			err = trcfile__compact_walk_fail(r, fw, err, in_path, msg, msg_len);
			break;
		}
		err = trcfile__writer_add_ended_streams(w, se, k);
		if (err)
			trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
		i += k;
	}
	for (uint64_t i = 0; i < fw->n_chunks && !err; i++) {
		struct trcfile__footer_chunk e;
		struct trcfile__footer_stream s;
		err = trcfile__footer_walk_chunk(fw, &e, &s);
		if (err) {
			err = trcfile__compact_walk_fail(r, fw, err, in_path, msg, msg_len);
			break;
		}
		struct trcfile__chunk_ref c = trcfile__chunk_ref_of(&e);
		struct trcfile__chunk_hdr ch;
		const uint8_t *payload;
		if (trcfile__compact_side_copy(b, &c, &ch, &side, &side_cap, use)) {
			payload = side + TRCFILE__CHUNK_HDR_BYTES;
			use->stored++;
		} else {
			payload = trcfile__compact_read_chunk(r, in_path, &c, &ch, &err, msg,
							      msg_len);
			if (!payload)
				break;
			if (trcfile__chunk_is_stored(&ch))
				use->stored++;
		}
		/* As the loaded way does: the stream's entry says what the stream is. */
		ch.kind = s.kind;
		ch.pid = s.pid;
		ch.tid = s.tid;
		err = trcfile__writer_put_chunk(w, &ch, payload);
		if (err) {
			trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
			break;
		}
		if (progress)
			progress(arg, i + 1, fw->n_chunks);
	}
	const char *why = NULL;
	if (!err && trcfile__footer_walk_end(fw, &why))
		err = trcfile__compact_changed(in_path, why, msg, msg_len);
	int cerr = trcfile_writer_close(w);
	if (!err && cerr)
		err = trcfile__compact_fail(msg, msg_len, cerr, out_path, NULL);
	free(side);
	return err;
}

static int trcfile__compact_loaded_copies(const char *in_path, const char *out_path,
				       const struct trcfile_writer_opts *o,
				       const struct trcfile_copies *b,
				       void (*progress)(void *arg, uint64_t done, uint64_t total),
				       void *arg, struct trcfile_bgc_use *use, char *msg,
				       size_t msg_len);

int trcfile_compact(const char *in_path, const char *out_path, const struct trcfile_writer_opts *o,
		    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
		    uint64_t *stored_in, char *msg, size_t msg_len)
{
	struct trcfile_bgc_use use = {0};
	int err =
		trcfile__compact_copies(in_path, out_path, o, NULL, progress, arg, &use, msg, msg_len);
	if (stored_in)
		*stored_in = use.stored;
	return err;
}

int trcfile__compact_copies(const char *in_path, const char *out_path,
			    const struct trcfile_writer_opts *o, const struct trcfile_copies *b,
			    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			    struct trcfile_bgc_use *use_out, char *msg, size_t msg_len)
{
	struct trcfile_bgc_use use = {0};
	char rmsg[512] = "";
	struct trcfile_reader *r = NULL;
	int err = trcfile__reader_open_header(in_path, &r, rmsg, sizeof(rmsg));
	if (err)
		return trcfile__compact_fail(msg, msg_len, err, in_path, rmsg);
	struct trcfile__footer_walk fw;
	const char *why = NULL;
	err = trcfile__footer_walk_check(&fw, r, &why);
	if (err == 0)
		err = trcfile__compact_streamed(r, &fw, in_path, out_path, o, b, progress, arg,
						&use, msg, msg_len);
	else if (err < 0)
		trcfile__compact_fail(msg, msg_len, err, in_path, trcfile_reader_errmsg(r));
	trcfile__footer_walk_free(&fw);
	trcfile_reader_close(r);
	if (err == 1) /* not walkable: the reader recovers and checks it */
		err = trcfile__compact_loaded_copies(in_path, out_path, o, b, progress, arg, &use, msg,
						  msg_len);
	if (use_out)
		*use_out = use;
	return err;
}

int trcfile__compact_loaded(const char *in_path, const char *out_path,
			    const struct trcfile_writer_opts *o,
			    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			    uint64_t *stored_in, char *msg, size_t msg_len)
{
	struct trcfile_bgc_use use = {0};
	int err = trcfile__compact_loaded_copies(in_path, out_path, o, NULL, progress, arg, &use, msg,
					      msg_len);
	if (stored_in)
		*stored_in = use.stored;
	return err;
}

static int trcfile__compact_loaded_copies(const char *in_path, const char *out_path,
				       const struct trcfile_writer_opts *o,
				       const struct trcfile_copies *b,
				       void (*progress)(void *arg, uint64_t done, uint64_t total),
				       void *arg, struct trcfile_bgc_use *use, char *msg,
				       size_t msg_len)
{
	char rmsg[512] = "";
	struct trcfile_reader *r = NULL;
	uint8_t *side = NULL;
	size_t side_cap = 0;
	int err = trcfile_reader_open(in_path, &r, rmsg, sizeof(rmsg));
	if (err)
		return trcfile__compact_fail(msg, msg_len, err, in_path, rmsg);
	struct trcfile_writer *w = trcfile__compact_writer(r, out_path, o, &err);
	if (!w) {
		trcfile_reader_close(r);
		return trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
	}
	uint64_t total = r->n_chunks, done = 0;
	for (unsigned si = 0; si < r->n_streams && !err; si++) {
		const struct trcfile_stream_info *info_s = &r->streams[si];
		struct trcfile_stream *s = trcfile_stream_open(
			w, (enum trc_stream_kind)info_s->kind, info_s->pid, info_s->tid);
		if (!s) {
			err = trcfile_writer_error(w) ?: -ENOMEM;
			trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
			break;
		}
		for (size_t i = r->stream_chunk0[si]; i < r->stream_chunk0[si + 1] && !err; i++) {
			struct trcfile__chunk_hdr ch;
			const uint8_t *payload;
			if (trcfile__compact_side_copy(b, &r->chunks[i], &ch, &side, &side_cap,
						       use)) {
				payload = side + TRCFILE__CHUNK_HDR_BYTES;
				use->stored++;
			} else {
				payload = trcfile__compact_read_chunk(r, in_path, &r->chunks[i],
								      &ch, &err, msg, msg_len);
				if (!payload)
					break;
				if (trcfile__chunk_is_stored(&ch))
					use->stored++;
			}
			err = trcfile__stream_put_chunk(s, &ch, payload);
			if (err) {
				trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
				break;
			}
			done++;
			if (progress)
				progress(arg, done, total);
		}
		/* Done with it: its footer entry leaves the writer's memory (trcfile_stream_end).
		 */
		int eerr = trcfile_stream_end(s);
		if (!err && eerr)
			err = trcfile__compact_fail(msg, msg_len, eerr, out_path, NULL);
	}
	int cerr = trcfile_writer_close(w);
	if (!err && cerr)
		err = trcfile__compact_fail(msg, msg_len, cerr, out_path, NULL);
	trcfile_reader_close(r);
	free(side);
	return err;
}
