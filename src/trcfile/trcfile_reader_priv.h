/* trcfile_reader_priv.h - the reader's state, shared inside the file format's code.
 *
 * Purpose: what the reader (trcfile_reader.c), the cursors (trcfile_cursor.c), the merge
 * (trcfile_merge.c), the footer walk and the compaction share. Nothing here is API; what a
 * pass outside this folder needs to decode a cursor's chunks in its own loop is
 * trcfile_scan.h.
 *
 * Threads: a reader and everything made from it belong to one thread at a time, which is why
 * the cursors can share the reader's ZSTD_DCtx and read buffer.
 *
 * Invariants (established by trcfile_reader_open, relied on everywhere else):
 * - chunks[] is sorted by (stream index, seq), seqs of a stream are distinct, and
 *   stream_chunk0[s] .. stream_chunk0[s + 1] are stream s's chunks.
 * - every chunk_ref lies inside the file (header and frame), has count >= 1, raw_bytes within
 *   the format's limits (trcfile__raw_limit) and comp_bytes <= ZSTD_compressBound(raw_bytes).
 */
#ifndef TRC_TRCFILE_READER_PRIV_H
#define TRC_TRCFILE_READER_PRIV_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trcfile.h"
#include "trcfile_codec.h"
#include "trcfile_scan.h"
#include "u64map.h"

/* ---- reader ------------------------------------------------------------------------- */

struct trcfile__chunk_ref {
	uint64_t offset; /* of the chunk header */
	uint64_t first_ts, last_ts;
	uint32_t stream_id, seq, count, raw_bytes, comp_bytes;
	uint32_t stream_idx;
};

/* The reference to the chunk a footer entry describes (stream_idx: 0, the caller's to find).
 * Every reader of footer entries (the reader, the footer walk, the compaction) takes them so. */
static inline struct trcfile__chunk_ref trcfile__chunk_ref_of(const struct trcfile__footer_chunk *e)
{
	return (struct trcfile__chunk_ref){.offset = e->offset,
					   .first_ts = e->first_ts,
					   .last_ts = e->last_ts,
					   .stream_id = e->stream_id,
					   .seq = e->seq,
					   .count = e->count,
					   .raw_bytes = e->raw_bytes,
					   .comp_bytes = e->comp_bytes};
}

struct trcfile__string {
	char *str; /* NUL-terminated copy */
	uint32_t len;
	uint32_t a, b; /* pid/tid for threads, pid for processes, id for names */
};

struct trcfile__stack {
	uint32_t flags, n;
	size_t first; /* index of its innermost frame in stack_frames */
};

struct trcfile_reader {
	int fd; /* -1 for memory */
	bool own_fd;
	const uint8_t *mem;
	uint64_t size;

	/* Opened by trcfile__reader_open_header: no index, no metadata. */
	bool header_only;

	struct trcfile_header hdr;
	char *hdr_strings;
	uint32_t header_bytes;

	struct trcfile_stream_info *streams;
	unsigned n_streams;
	struct trcfile__chunk_ref *chunks;
	size_t n_chunks;
	size_t *stream_chunk0; /* n_streams + 1 entries */

	struct trcfile_reader_stats stats;

	/* shared by every cursor of this reader (one thread at a time) */
	void *dctx; /* ZSTD_DCtx */
	uint8_t *io_buf;
	size_t io_cap;

	/* metadata */
	struct u64map name_map, thread_map, proc_map; /* key -> index in the arrays */
	struct trcfile__string *names, *threads, *procs;
	size_t n_names, n_threads, n_procs, cap_names, cap_threads, cap_procs;
	struct trcfile_module *modules;
	size_t n_modules, cap_modules;
	/* call stacks: id -> index in stacks, whose frames are in stack_frames */
	struct u64map stack_map;
	struct trcfile__stack *stacks;
	size_t n_stacks, cap_stacks;
	uint64_t *stack_frames;
	size_t n_stack_frames, cap_stack_frames;
	uint64_t meta_bytes;

	char errmsg[512];
	/* Damaged chunks, skipped by the cursors: one flag per chunk (allocated on the first),
	 * so a chunk read by several passes counts once; why the first one was. */
	uint8_t *chunk_damaged;
	char damage_note[512];
	/* Why the recovery scan stopped ("" when the footer was used). */
	char scan_stop[200];
};

/* Largest raw chunk the format allows for a chunk of `count` records in this file. */
static inline uint64_t trcfile__raw_limit(const struct trcfile_reader *r, uint32_t count)
{
	uint64_t lim = (uint64_t)r->hdr.chunk_bytes + TRCFILE__FIXED_MAX_BYTES;
	/* A record larger than a chunk gets a chunk of its own. */
	if (count == 1 && lim < TRCFILE_MAX_RECORD_BYTES)
		lim = TRCFILE_MAX_RECORD_BYTES;
	return lim;
}

/* Pointer to [off, off + len) of the file: into memory, or read into the reader's buffer
 * (valid until the next call). NULL with the message set on a short read / I/O error / OOM;
 * *err receives -errno. */
const uint8_t *trcfile__read_at(struct trcfile_reader *r, uint64_t off, size_t len, int *err);

/* Opens path with its header only: no index, no metadata tables (n_streams and n_chunks 0),
 * for a caller that walks the footer itself in bounded memory (trcfile_compact);
 * trcfile__read_at reads its bytes. 0 or -errno with msg set. */
int trcfile__reader_open_header(const char *path, struct trcfile_reader **out, char *msg,
				size_t msg_len);

/* Checks the fields of a chunk entry that do not need the chunk itself against this file: its
 * sizes against the header's chunk size, and that it lies in [header_bytes, data_end). NULL or
 * why not. */
const char *trcfile__ref_check(const struct trcfile_reader *r, const struct trcfile__chunk_ref *c,
			       uint64_t data_end);

/* Checks that [p, p + comp) is exactly one zstd frame with a content checksum and a content
 * size of raw. NULL or why not. */
const char *trcfile__frame_check(const uint8_t *p, uint32_t comp, uint32_t raw);

/* Loads chunk `idx` into *buf (grown as needed; *cap its size), checking its header against
 * the index and its frame (one frame, content size, checksum). 0 or -EBADMSG/-ENOMEM/-EIO
 * with the message set. */
int trcfile__load_chunk(struct trcfile_reader *r, size_t idx, uint8_t **buf, size_t *cap);

#endif /* TRC_TRCFILE_READER_PRIV_H */
