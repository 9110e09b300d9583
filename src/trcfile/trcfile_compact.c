/* trcfile_compact.c - compresses a trace's stored chunks (trcfile.h trcfile_compact).
 *
 * Purpose: the second half of "compression never holds the drain back" (DESIGN "The pipeline"):
 * the recorder writes chunks stored when its compressors are behind; this rewrites the file
 * with every chunk compressed, on all the threads the caller gives it. Used by trace-run before
 * it exits (unless --keep-stored) and by `trace-dump compact`.
 *
 * How: the input is opened with the reader (so a file without a footer is recovered up to its
 * last whole chunk, and every chunk header is checked against the index); each chunk goes to a
 * writer on the output as a whole chunk (trcfile__stream_put_chunk): a stored one through the
 * writer's compressor threads, a compressed one as it is. Streams keep their order, kind, pid
 * and tid; chunks keep their sequence numbers, counts and times; the header is the input's.
 *
 * Threads: the caller's thread reads; the writer's threads compress and write.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trcfile_reader_priv.h"
#include "trcfile_stored.h"

static int trcfile__compact_fail(char *msg, size_t msg_len, int err, const char *what,
				 const char *detail)
{
	if (msg && msg_len)
		snprintf(msg, msg_len, "%s: %s", what, detail ? detail : strerror(-err));
	return err;
}

int trcfile_compact(const char *in_path, const char *out_path,
		    const struct trcfile_writer_opts *o,
		    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
		    uint64_t *stored_in, char *msg, size_t msg_len)
{
	char rmsg[512] = "";
	struct trcfile_reader *r = NULL;
	uint64_t stored = 0;
	int err = trcfile_reader_open(in_path, &r, rmsg, sizeof(rmsg));
	if (err)
		return trcfile__compact_fail(msg, msg_len, err, in_path, rmsg);
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
		.host = h->host,
		.tool_version = h->tool_version,
	};
	struct trcfile_writer_opts wo = {0};
	if (o)
		wo = *o;
	wo.chunk_bytes = h->chunk_bytes; /* the input's chunks must fit the output's limits */
	wo.flags &= ~TRCFILE_WRITER_STORE_WHEN_BEHIND;
	wo.store_one_in = 0;
	struct trcfile_writer *w = trcfile_writer_open(out_path, &info, &wo, &err);
	if (!w) {
		trcfile_reader_close(r);
		return trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
	}
	uint64_t total = r->n_chunks, done = 0;
	for (unsigned si = 0; si < r->n_streams && !err; si++) {
		const struct trcfile_stream_info *info_s = &r->streams[si];
		struct trcfile_stream *s = trcfile_stream_open(w, (enum trc_stream_kind)info_s->kind,
							       info_s->pid, info_s->tid);
		if (!s) {
			err = trcfile_writer_error(w) ?: -ENOMEM;
			trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
			break;
		}
		for (size_t i = r->stream_chunk0[si]; i < r->stream_chunk0[si + 1] && !err; i++) {
			const struct trcfile__chunk_ref *c = &r->chunks[i];
			const uint8_t *p = trcfile__read_at(
				r, c->offset, (size_t)TRCFILE__CHUNK_HDR_BYTES + c->comp_bytes, &err);
			if (!p) {
				trcfile__compact_fail(msg, msg_len, err, in_path,
						      trcfile_reader_errmsg(r));
				break;
			}
			struct trcfile__chunk_hdr ch;
			const char *why = NULL;
			if (trcfile__chunk_hdr_get(p, &ch, &why) == 0 &&
			    (ch.stream_id != c->stream_id || ch.seq != c->seq ||
			     ch.count != c->count || ch.raw_bytes != c->raw_bytes ||
			     ch.comp_bytes != c->comp_bytes || ch.first_ts != c->first_ts ||
			     ch.last_ts != c->last_ts))
				why = "chunk header disagrees with the index";
			const uint8_t *payload = p + TRCFILE__CHUNK_HDR_BYTES;
			if (!why)
				why = trcfile__chunk_is_stored(&ch)
					      ? trcfile__stored_check(payload, &ch)
					      : trcfile__frame_check(payload, ch.comp_bytes,
								     ch.raw_bytes);
			if (why) {
				char detail[256];
				snprintf(detail, sizeof(detail),
					 "damaged chunk %u of stream %u at offset %llu: %s", c->seq,
					 c->stream_id, (unsigned long long)c->offset, why);
				err = trcfile__compact_fail(msg, msg_len, -EBADMSG, in_path, detail);
				break;
			}
			if (trcfile__chunk_is_stored(&ch))
				stored++;
			err = trcfile__stream_put_chunk(s, &ch, payload);
			if (err) {
				trcfile__compact_fail(msg, msg_len, err, out_path, NULL);
				break;
			}
			done++;
			if (progress)
				progress(arg, done, total);
		}
		/* Done with it: its footer entry leaves the writer's memory (trcfile_stream_end). */
		int eerr = trcfile_stream_end(s);
		if (!err && eerr)
			err = trcfile__compact_fail(msg, msg_len, eerr, out_path, NULL);
	}
	int cerr = trcfile_writer_close(w);
	if (!err && cerr)
		err = trcfile__compact_fail(msg, msg_len, cerr, out_path, NULL);
	trcfile_reader_close(r);
	if (stored_in)
		*stored_in = stored;
	return err;
}
