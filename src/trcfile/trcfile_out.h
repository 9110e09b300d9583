/* trcfile_out.h - the file a writer writes (FORMAT.md): the header, whole chunks at its end
 * with their index, the streams' footer entries, the footer, and the end of a trace whose disk
 * filled. The format's side of the writer; the recorder's chunk pipeline
 * (src/recorder/chunk_pipeline.c: pool, compressor and writer threads, store-when-behind)
 * decides which chunk reaches the file when, and calls these.
 *
 * Chunks reach the file in the order they are put: whole (header and payload), so the file
 * is readable up to its last whole chunk at any moment. A chunk's frame (one zstd frame with
 * a checksum and its content size: FORMAT.md) is made by trcfile__chunk_frame, on whichever
 * thread the caller likes.
 *
 * Memory that does not grow with the threads traced: the stream entries go to a spill file at
 * 32 x id (trcfile_spill.h); the chunk index's entries stay in a small buffer and are spilled
 * when it is full. The footer is copied from both spills; the file is the same as when all
 * was kept.
 *
 * Errors: a failed chunk write cuts the file back to the end of the last whole chunk and
 * returns -errno; the caller makes it sticky. With TRCFILE_WRITER_LOSE_WHEN_FULL, a full disk
 * (trcfile__out_fills) instead starts the dropping: the chunks that do not fit are counted
 * lost (trcfile__out_lost), and trcfile__out_finish writes their lost records, a note and the
 * footer in the room made by cutting the last chunks off.
 *
 * Threads: one thread puts chunks (the pipeline's writer thread), then the closing thread
 * once it is joined: index, offset, tally, kept chunks and room are theirs. n_streams and the
 * stream spill: under the caller's lock (trcfile__out_stream_entry,
 * trcfile__out_add_ended_streams). bytes_written: relaxed atomic, any thread reads. full_err,
 * store_off and room_raw: written by the writer thread, read by appending threads (relaxed:
 * flags; the chunks they concern go through the pipeline's queues).
 */
#ifndef TRC_TRCFILE_OUT_H
#define TRC_TRCFILE_OUT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "trcfile.h"
#include "trcfile_codec.h"
#include "trcfile_spill.h"
#include "u64map.h"

/* What a chunk loses if it is not written: its events and the counts of its lost records
 * (sampler ticks aside), as the appending thread added them; of them, the events. */
struct trcfile__weight {
	uint64_t weight, events;
};

/* What one stream lost to a full disk: its chunks that were not written (or were cut off to
 * make room for the footer). */
struct trcfile__full_tally {
	uint32_t stream_id;
	uint32_t min_seq; /* the first such chunk's seq: the lost record's chunk takes it */
	uint64_t first_ts; /* the earliest of their first times: the lost record's time */
	uint32_t chunks;
	uint64_t records; /* records they held */
	uint64_t events; /* their weights: the lost record's count */
	bool have_entry;
	struct trcfile__footer_stream entry; /* the stream's footer entry as submitted */
};

/* A metadata chunk the full disk did not take, kept for close. */
struct trcfile__kept {
	struct trcfile__chunk_hdr hdr;
	uint8_t *raw;
	size_t raw_len;
};

struct trcfile_out {
	int fd;
	uint32_t chunk_bytes;
	int zstd_level;
	uint32_t pid; /* the header's: the note's stream */
	char *spill_dir; /* where the spill files go (NULL: $TMPDIR or /tmp) */

	/* under the caller's lock, then close */
	uint32_t n_streams; /* opened so far: the next id */
	struct trcfile__spill stream_spill; /* footer entries of ended streams at 32 x id */
	bool stream_spill_ready;

	/* the writer thread only until it is joined, then close */
	uint64_t offset;
	uint64_t n_index; /* chunk index entries: spilled, then in index_buf */
	uint8_t *index_buf; /* footer images of the last entries (the last one always here) */
	uint32_t index_buf_n;
	uint64_t last_index_offset; /* the file offset of the last entry's chunk */
	struct trcfile__weight *index_weight; /* each index_buf entry's (lost if it is cut off) */
	struct trcfile__spill chunk_spill;
	bool chunk_spill_ready;

	_Atomic uint64_t bytes_written;

	/* A full disk (TRCFILE_WRITER_LOSE_WHEN_FULL). full_err: 0, or the -errno of the write
	 * that found the disk full, set once; store_off: the room left is short, nothing more is
	 * stored. */
	bool lose_when_full;
	bool regular; /* a regular file: its room can be asked */
	_Atomic int full_err;
	atomic_bool store_off;
	/* Raw bytes a new chunk may take (UINT64_MAX: no bound), set after each write: a quarter
	 * of the room left, in raw bytes at the compression ratio of the chunks written so far
	 * (the last one's alone would feed back: a small chunk compresses worse, which makes the
	 * next ones smaller still). So the last chunks before the disk fills are small once
	 * written, and so is the room the one that does not fit leaves unused. */
	_Atomic uint64_t room_raw;
	uint64_t fsize_limit; /* RLIMIT_FSIZE's soft limit at open; UINT64_MAX: none */
	uint64_t stored_bytes; /* stored chunks written */
	uint64_t raw_total, comp_total; /* of the chunks written: their ratio sizes new ones */
	struct trcfile__full_tally *tally; /* per stream: what was not written */
	size_t n_tally, cap_tally;
	struct u64map tally_of; /* stream id + 1 -> its index in tally */
	ZSTD_CCtx *wcctx; /* the writer thread's, then close's (trcfile__out_cctx) */
	struct trcfile__kept *kept;
	size_t n_kept, cap_kept, kept_bytes;
	uint64_t full_lost_events, full_unwritten, full_unwritten_events;
};

/* A zstd context that makes chunk frames at level (FORMAT.md: checksum, content size), or
 * NULL on out of memory. */
ZSTD_CCtx *trcfile__cctx_new(int level);

/* Compresses raw_len bytes at raw into the chunk h: sets h's raw_bytes and comp_bytes and puts
 * the header and the frame at *out (grown to fit: *out_cap), *out_len bytes. 0 or -errno. */
int trcfile__chunk_frame(ZSTD_CCtx *cctx, struct trcfile__chunk_hdr *h, const uint8_t *raw,
			 size_t raw_len, uint8_t **out, size_t *out_cap, size_t *out_len);

/* -EINVAL when h cannot make a header (a string too long, a missing command line), else 0. */
int trcfile__out_check(int fd, const struct trcfile_header_info *h);

/* Sets o up for fd (o zeroed; spill_dir malloc'd or NULL, taken over). Nothing written. */
void trcfile__out_init(struct trcfile_out *o, int fd, const struct trcfile_header_info *h,
		       uint32_t chunk_bytes, int zstd_level, uint32_t flags, char *spill_dir);

/* Writes the file header at offset 0. 0 or -errno. */
int trcfile__out_header(struct trcfile_out *o, const struct trcfile_header_info *h);

/* Frees what o holds (not fd). */
void trcfile__out_free(struct trcfile_out *o);

/* Writes a chunk (header h; its bytes a, then b) at the file's end and indexes it with its
 * weight. On failure cuts the file back to the end of the last whole chunk (best effort: a
 * reader also stops at a partial chunk on its own). 0 or -errno. */
int trcfile__out_put(struct trcfile_out *o, const struct trcfile__chunk_hdr *h, const void *a,
		     size_t an, const void *b, size_t bn, struct trcfile__weight wt);

/* Writes a stored chunk (FORMAT.md "Stored chunks"): sets h's sizes, flag and payload CRC,
 * then header and the raw_len bytes at raw as they are; *at: where it starts. Once written,
 * counts its bytes and checks the room (trcfile__out_check_room). 0 or -errno. */
int trcfile__out_put_stored(struct trcfile_out *o, struct trcfile__chunk_hdr *h,
			    const uint8_t *raw, size_t raw_len, struct trcfile__weight wt,
			    uint64_t *at);

/* Publishes the room left (room_raw; h: the chunk written last, NULL: none yet), and stops
 * storing once it is short. After a write; one fstatvfs. */
void trcfile__out_check_room(struct trcfile_out *o, const struct trcfile__chunk_hdr *h);

static inline bool trcfile__is_full_err(int err)
{
	return err == -ENOSPC || err == -EFBIG;
}

/* Whether the disk filled (dropping has started). Any thread, relaxed. */
static inline bool trcfile__out_full(struct trcfile_out *o)
{
	return atomic_load_explicit(&o->full_err, memory_order_relaxed) != 0;
}

/* A write failed with err: true when that starts (or continues) the dropping of a file that
 * may lose (full_err set, nothing more stored); false: err is an error. */
bool trcfile__out_fills(struct trcfile_out *o, int err);

/* The chunk h (its records: raw_len bytes at raw; weight wt) is not written: the disk is
 * full. Counted lost, or kept for close if it is metadata. 0 or -ENOMEM. */
int trcfile__out_lost(struct trcfile_out *o, const struct trcfile__chunk_hdr *h,
		      const uint8_t *raw, size_t raw_len, struct trcfile__weight wt);

/* The zstd context of the writer thread and close (made at the first call). NULL on out of
 * memory. */
ZSTD_CCtx *trcfile__out_cctx(struct trcfile_out *o);

/* Writes stream entry e (its final counts) at its id into the stream spill. Under the
 * caller's lock. 0 or -errno. */
int trcfile__out_stream_entry(struct trcfile_out *o, const struct trcfile__footer_stream *e);

/* trcfile__writer_add_ended_streams (trcfile_stored.h) on o; closing: the writer closes (new
 * ids are refused). Under the caller's lock. 0 or -errno. */
int trcfile__out_add_ended_streams(struct trcfile_out *o, const struct trcfile__footer_stream *e,
				   size_t n, bool closing);

/* Writes the footer, or for a disk that filled the lost records, the note and the footer
 * (see the top). Every stream's entry is in the spill; nothing is put any more. 0 or -errno. */
int trcfile__out_finish(struct trcfile_out *o);

/* fsync of the file: a file that cannot be synced (EINVAL, EROFS: a pipe, a read-only mount) is
 * no error. 0 or -errno. */
int trcfile__out_sync(const struct trcfile_out *o);

#endif /* TRC_TRCFILE_OUT_H */
