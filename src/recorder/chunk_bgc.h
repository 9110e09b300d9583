/* chunk_bgc.h - the background compressor: compresses the writer's stored chunks while the
 * recording goes on, with CPU nobody else wants ("in the background as CPU frees up", DESIGN.md's
 * pipeline).
 *
 * The writer tells it of each stored chunk it wrote (trcfile__writer_on_stored: offset,
 * stream, seq), through a bounded queue: when the queue is full, or the chunk is small (under
 * chunk_bytes / 16: stream ends and flushes, cheap to compress at the end), the chunk is left
 * for the end. A thread at SCHED_IDLE (it runs only on a core nothing else wants, so it never
 * slows the program or the drain; so do the writer's own compressors when they may store,
 * chunk_idle.h) reads each chunk back with pread, checks its header and CRC, compresses it
 * with the writer's zstd level and appends the compressed chunk (header with the same fields,
 * no stored flag, then the frame: FORMAT.md) to a side file: an unlinked file in the trace's
 * directory (O_TMPFILE), so a recorder killed at any moment leaves nothing behind and the
 * trace as it would be without this. The file is never rewritten in place: the footer's
 * entries and the recovery scan depend on the chunks where they are.
 *
 * In memory: one 24-byte entry per chunk compressed (trace offset -> side offset, length,
 * CRC-32C), so at most 24 bytes per 64 KiB of stored data; the thread's zstd context and two
 * chunk buffers are allocated at its first chunk.
 *
 * At the end, trcfile__compact_bgc (through trcfile__compact_copies, trcfile_compact.c)
 * rewrites the trace as trcfile_compact does, taking each stored chunk's compressed copy from the side file when it matches the
 * chunk's index entry (stream, seq, records, sizes, times) and its CRC, and compressing only
 * the rest.
 *
 * Threads: trcfile_bgc_start and trcfile_bgc_stop on one thread (the recorder's caller);
 * the hook on the writer thread; the compressor thread its own. After trcfile_bgc_stop the
 * object is frozen: trcfile__compact_bgc and trcfile_bgc_compressed read it from any thread;
 * trcfile_bgc_free once.
 */
#ifndef TRC_RECORDER_CHUNK_BGC_H
#define TRC_RECORDER_CHUNK_BGC_H

#include <stddef.h>
#include <stdint.h>

#include "trcfile_stored.h" /* struct trcfile_bgc_use */

struct trcfile_writer;
struct trcfile_writer_opts;
struct trcfile_bgc;

/* Opens the side file beside w's file and starts the thread, hooked to w's stored chunks.
 * flags: TRCFILE_BGC_*. NULL with *err = -errno when it cannot (the recording goes on
 * without it). */
#define TRCFILE_BGC_TEST_MISMATCH 1u /* tests: the first copy names the next seq */
struct trcfile_bgc *trcfile_bgc_start(struct trcfile_writer *w, uint32_t flags, int *err);

/* Unhooks it from the writer (call before trcfile_writer_close) and stops the thread, which
 * abandons the chunk it is compressing (it checks every 128 KiB) and what is queued: those are
 * compressed at the end. Accepts NULL. */
void trcfile_bgc_stop(struct trcfile_bgc *b);

/* Chunks compressed into the side file so far. Any thread. */
uint64_t trcfile_bgc_compressed(const struct trcfile_bgc *b);

/* Closes the side file (its space is freed with it) and frees b. Accepts NULL. */
void trcfile_bgc_free(struct trcfile_bgc *b);

/* The background copy of the chunk at trace offset off, once stopped: 0 and *side_off,
 * *side_len (header and frame), *crc (CRC-32C of those bytes), or -ENOENT. */
int trcfile__bgc_find(const struct trcfile_bgc *b, uint64_t off, uint64_t *side_off,
		      uint32_t *side_len, uint32_t *crc);

/* The side file's descriptor (pread only). */
int trcfile__bgc_fd(const struct trcfile_bgc *b);

/* trcfile__compact_copies (trcfile_stored.h) taking the stored chunks' compressed copies from b
 * (stopped; may be NULL: plain trcfile_compact). *use (may be NULL) says how many. */
int trcfile__compact_bgc(const char *in_path, const char *out_path,
			 const struct trcfile_writer_opts *o, const struct trcfile_bgc *b,
			 void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			 struct trcfile_bgc_use *use, char *msg, size_t msg_len);

#endif /* TRC_RECORDER_CHUNK_BGC_H */
