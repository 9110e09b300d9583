/* trcfile_scan.h - a cursor's chunks decoded by the caller's own loop: the interface of a pass
 * that must go faster than a record at a time (the summary's: src/analysis/summary_pass.c).
 *
 * Purpose: trcfile_cursor_read hands out decoded records; a pass that aggregates as it decodes
 * loads each chunk of the cursor's stream here, decodes its bytes with the codec's inline
 * decoders (trcfile_codec.h: trcfile__decode_fast, trcfile__decode_slow) from c->p to c->pend,
 * and tells the cursor when the chunk is used up, which checks its end. The reader's own state
 * stays in trcfile_reader_priv.h, which nothing outside src/trcfile/ includes.
 *
 * Threads: a cursor belongs to its reader's thread.
 */
#ifndef TRC_TRCFILE_SCAN_H
#define TRC_TRCFILE_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trcfile.h"
#include "trcfile_codec.h"

/* A cursor's state, visible so that a pass can decode the loaded chunk itself. Its fields are
 * the reader's: a pass reads p, pend, left, coder and skipped, and advances p, left and coder
 * as it decodes (trcfile_codec.h), never anything else. */
struct trcfile_cursor {
	struct trcfile_reader *r;
	unsigned stream;
	size_t next, end; /* next chunk to load, one past the stream's last */
	size_t cur; /* chunk being decoded (valid when left or loaded) */
	uint8_t *raw;
	size_t raw_cap;
	const uint8_t *p, *pend;
	uint32_t left; /* records not yet decoded in the loaded chunk */
	struct trcfile__coder coder;
	bool have_peek;
	struct trc_record peek;
	int error;
	/* A damaged chunk was skipped since the owner last cleared this: records are missing
	 * between the previous chunk and this one (a span open across it ended unseen). */
	bool skipped;
};

/* Loads the cursor's next chunk, skipping damaged ones (counted in the reader's stats, noted,
 * `skipped` set). 1 loaded, 0 no more chunks, <0 error (sticky). */
int trcfile_scan_next_chunk(struct trcfile_cursor *c);
/* Checks the end of a fully decoded chunk (bytes used up, last time). 0 or -EBADMSG. */
int trcfile_scan_chunk_done(struct trcfile_cursor *c);

/* Sets r's error message (printf format), which trcfile_reader_errmsg then gives, for a pass
 * that stops on what it decoded; returns err for tail calls. */
int trcfile_reader_fail(struct trcfile_reader *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TRC_TRCFILE_SCAN_H */
