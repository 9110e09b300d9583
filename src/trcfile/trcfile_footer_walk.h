/* trcfile_footer_walk.h - a trace's footer read and checked in bounded memory.
 *
 * Purpose: the reader loads the whole index to open a file (the footer, a chunk reference per
 * chunk, a stream entry per stream, the metadata tables: about 200 bytes a chunk), so
 * trace-run's end-of-run compaction grew with every thread the program ever started. This
 * walks the footer entry by entry through a 64 KiB buffer instead, and checks what the reader
 * would check before it trusts a footer, in memory that does not depend on the file:
 *   - the trailer, the footer's place and size, its magic, counts and checksum;
 *   - every stream entry (known kind) and every chunk entry (sizes, inside the data, of a known
 *     stream, not overlapping the previous one);
 *   - per stream, that its chunks' record counts add up to its entry's and that their sequence
 *     numbers are distinct. The reader does this with a table per stream; here each side is
 *     summed as a random linear combination over the streams modulo the prime 2^61 - 1 (the
 *     sequence numbers as the polynomial sum of x^seq at a random x), with weights drawn from
 *     the kernel per walk: two sides that differ anywhere agree with a probability below 2^-28
 *     (Schwartz-Zippel), and no file can be crafted for the draw.
 * The same checks run again as the caller reads the entries a second time (the streamed
 * compaction): a file changed in place between the passes fails them there (1 from the walk
 * calls, or from trcfile__footer_walk_end at the end), and the caller discards what it made
 * of it. The second pass also checks that the stream entry it gets for each chunk (read apart,
 * trcfile__footer_walk_chunk's s) is the one the sequential pass gave for that stream.
 * What it asks of a file beyond the reader, and which every file the writer makes has: stream
 * ids 0, 1, 2... in the stream table (stream i at entry i), chunk entries in file order, and
 * each stream's sequence numbers 0 .. chunks - 1 with no gap. A footer that is not so (or is
 * missing or damaged) is "not walkable": the caller takes the loading reader's way, which
 * recovers and checks everything exactly.
 *
 * Threads: a walk and its reader belong to one thread at a time.
 * Errors: 0 or -errno (I/O, memory) with the reader's message set; "not walkable" is 1 with
 * the reason.
 */
#ifndef TRC_TRCFILE_FOOTER_WALK_H
#define TRC_TRCFILE_FOOTER_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trcfile_codec.h"

struct trcfile_reader;
struct trcfile__stream_block;

struct trcfile__footer_walk {
	struct trcfile_reader *r; /* opened with trcfile__reader_open_header */
	uint64_t footer_offset, footer_bytes;
	uint32_t footer_crc;
	uint32_t n_streams;
	uint64_t n_chunks;
	/* The sequential read: buf[at, len) are the file's bytes from pos on. */
	uint8_t *buf;
	size_t at, len;
	uint64_t pos;
	uint32_t crc; /* of the footer bytes read into buf so far */
	uint32_t crc_fixed; /* of the footer's fixed part: where the entries' CRC starts from */
	/* Stream entries by id for trcfile__footer_walk_stream_at: a few blocks of the table. */
	struct trcfile__stream_block *blocks;
	/* The checks of a pass over the entries (both passes make them). */
	struct trcfile__tally *tally;
	uint32_t streams_seen;
	uint64_t chunks_seen, chunks_listed, prev_end, chunks_with_stream;
	const char *why; /* the check an entry failed: a walk call returned 1 */
};

/* Locates r's footer and checks it entry by entry (the list at the top). 0: walkable, and the
 * walk is at the first stream entry again for the caller's pass (n_streams and n_chunks set);
 * 1: not walkable, *why says why; <0: error (the reader's message says it). fw is to be
 * freed in every case. */
int trcfile__footer_walk_check(struct trcfile__footer_walk *fw, struct trcfile_reader *r,
			       const char **why);

/* The next stream entry (n_streams of them, by id), then the next chunk entry (n_chunks of
 * them, in file order), each checked as trcfile__footer_walk_check checked it: 0, 1 (it
 * fails a check: the file changed since, fw->why says how) or <0. s, when not NULL, gets the
 * chunk's stream entry (trcfile__footer_walk_stream_at), checked at the end to be the one
 * the sequential read gave. */
int trcfile__footer_walk_stream(struct trcfile__footer_walk *fw, struct trcfile__footer_stream *e);
int trcfile__footer_walk_chunk(struct trcfile__footer_walk *fw, struct trcfile__footer_chunk *e,
			       struct trcfile__footer_stream *s);
/* After the last chunk entry: the checks over the whole pass (the footer's CRC, each stream's
 * records and sequence numbers, and the stream entries given through s). 0, or 1 with *why. */
int trcfile__footer_walk_end(struct trcfile__footer_walk *fw, const char **why);

/* Stream entry id (< n_streams), from a small cache of the table's blocks. 0 or <0. */
int trcfile__footer_walk_stream_at(struct trcfile__footer_walk *fw, uint32_t id,
				   struct trcfile__footer_stream *e);

void trcfile__footer_walk_free(struct trcfile__footer_walk *fw);

#endif /* TRC_TRCFILE_FOOTER_WALK_H */
