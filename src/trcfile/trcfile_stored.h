/* trcfile_stored.h - stored chunks: a chunk whose payload is its encoded records as they are,
 * not a zstd frame (FORMAT.md "Stored chunks"). The writer stores a chunk when its compressors
 * are behind, so compression never holds the recorder's drain back; a later compaction
 * (trcfile_compact) compresses them.
 *
 * Purpose: the one place that checks a stored payload (its crc32c, in the chunk header's
 * payload_crc field) and the CRC-32C that writes and checks it at memory speed (the SSE4.2
 * crc32 instruction where the CPU has it; the same values as trcfile__crc32c).
 *
 * Threads: pure functions; the CPU check is done once, racily but idempotently.
 */
#ifndef TRC_TRCFILE_STORED_H
#define TRC_TRCFILE_STORED_H

#include <stddef.h>
#include <stdint.h>

#include "trcfile_codec.h"

/* CRC-32C of buf, continuing from crc (0 to start): trcfile__crc32c's values, about 8 bytes a
 * cycle with SSE4.2. */
uint32_t trcfile__crc32c_fast(uint32_t crc, const void *buf, size_t len);

/* Whether a chunk header says stored. */
static inline int trcfile__chunk_is_stored(const struct trcfile__chunk_hdr *h)
{
	return (h->flags & TRCFILE__CHUNK_STORED) != 0;
}

/* Checks a stored chunk's payload (h->comp_bytes bytes at p) against its header. NULL or why
 * not. */
const char *trcfile__stored_check(const uint8_t *p, const struct trcfile__chunk_hdr *h);

/* Appends one whole chunk to stream s of a writer (trcfile_compact): h's count, times, seq and
 * sizes, payload its h->comp_bytes bytes, already checked. A stored chunk goes through the
 * compressors; a compressed one is written as it is. The stream must have no open chunk of
 * records, or it is submitted first. Same thread rule and blocking as trcfile_stream_append.
 * 0 or -errno. */
struct trcfile_stream;
int trcfile__stream_put_chunk(struct trcfile_stream *s, const struct trcfile__chunk_hdr *h,
			      const uint8_t *payload);

/* trcfile_compact's streaming path, which keeps no stream handle (its memory must not grow with
 * the streams of the file it compacts):
 * trcfile__writer_add_ended_streams gives the next n stream ids (the writer's streams so far,
 * on) to streams that are over already, with their final footer entries e (e[i].id is
 * ignored: the id given is); they go to the stream spill at once. Under the writer's lock, any
 * thread. 0 or -errno (also the writer's sticky error).
 * trcfile__writer_put_chunk writes one whole chunk with its header h as it is (stream id, kind,
 * pid, tid, seq, count, times): the caller keeps it consistent with the streams' entries. A
 * stored chunk goes through the compressors; a compressed one is written as it is. Blocks for a
 * slot, as an append does. 0 or -errno. */
struct trcfile_writer;
int trcfile__writer_add_ended_streams(struct trcfile_writer *w,
				      const struct trcfile__footer_stream *e, size_t n);
int trcfile__writer_put_chunk(struct trcfile_writer *w, const struct trcfile__chunk_hdr *h,
			      const uint8_t *payload);

/* Compressed copies of stored chunks made while the trace was written (the recorder's
 * background compressor, src/recorder/chunk_bgc.h), for a compaction to take instead of
 * compressing the chunks again. find: the copy of the chunk at trace offset off, 0 and
 * *side_off, *side_len (header and frame), *crc (CRC-32C of those bytes), or -ENOENT; fd: the
 * file the copies are in (pread only). A copy is taken only when it matches its chunk's index
 * entry and its CRC. */
struct trcfile_copies {
	int fd;
	int (*find)(const void *arg, uint64_t off, uint64_t *side_off, uint32_t *side_len,
		    uint32_t *crc);
	const void *arg;
};

/* What a compaction did with the copies. */
struct trcfile_bgc_use {
	uint64_t stored; /* stored chunks in the input */
	uint64_t used; /* of them, taken compressed from the copies */
	uint64_t refused; /* copies found that did not match their chunk: compressed again */
};

/* trcfile_compact (trcfile.h) taking the stored chunks' compressed copies from c (may be NULL:
 * plain trcfile_compact). *use (may be NULL) says how many. */
struct trcfile_writer_opts;
int trcfile__compact_copies(const char *in_path, const char *out_path,
			    const struct trcfile_writer_opts *o, const struct trcfile_copies *c,
			    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			    struct trcfile_bgc_use *use, char *msg, size_t msg_len);

/* trcfile_compact the loading way (trcfile_compact.c), whatever the file: what trcfile_compact
 * does for a file whose footer cannot be walked, in memory in proportion to the file's chunks.
 * For tests, which compare the two ways. */
struct trcfile_writer_opts;
int trcfile__compact_loaded(const char *in_path, const char *out_path,
			    const struct trcfile_writer_opts *o,
			    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			    uint64_t *stored_in, char *msg, size_t msg_len);

/* The stored-chunk notification (the background compressor, src/recorder/chunk_bgc.h): after the writer
 * thread wrote a stored chunk whole, it calls the hook with where the chunk is. The hook runs
 * on the writer thread, whose latency is the drain's: it must not block (the background compressor
 * queues or drops). */
struct trcfile_stored_note {
	uint64_t offset; /* of the chunk header in the file */
	uint32_t stream_id, seq, raw_bytes;
};
typedef void (*trcfile_stored_hook)(void *arg, const struct trcfile_stored_note *n);

/* What a hook needs to read the chunks back and compress them as the writer would. */
struct trcfile_stored_source {
	int fd; /* the file, opened anew for reading: the caller closes it */
	int zstd_level; /* the writer's */
	uint32_t chunk_bytes;
};

/* Sets the hook (fn NULL: removes it; once this returns, the old hook is never called again).
 * With fn and src, fills *src (a new read descriptor of the file). Any thread; not after
 * trcfile_writer_close. 0 or -errno (the read descriptor could not be opened: no hook set). */
int trcfile__writer_on_stored(struct trcfile_writer *w, trcfile_stored_hook fn, void *arg,
			      struct trcfile_stored_source *src);

#endif /* TRC_TRCFILE_STORED_H */
