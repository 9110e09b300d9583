/* chunk_pipeline_priv.h - the recorder's chunk pipeline: the trace file writer of trcfile.h
 * (trcfile_writer_*, trcfile_stream_*), chunks through compressor threads to a writer thread.
 * Shared by its files: chunk_pipeline.c (streams, appends, store-when-behind, open, close),
 * chunk_pool.c (the chunk pool, prefault), chunk_compress.c (the compressor threads),
 * chunk_write.c (the writer thread); chunk_bgc.h is the background compressor.
 *
 * Chunk pipeline (its threads: DESIGN.md "The pipeline"): appending threads fill chunks,
 * compressor threads compress them, one writer thread writes them; stored chunks skip the
 * compressors when they are behind.
 *
 * Purpose: take records per stream from the recorder's threads and turn them into the file
 * of FORMAT.md without ever compressing or writing on the appending thread. What the file
 * holds and how (header, chunk framing, index, stream entries, footer, the end of a trace
 * whose disk filled) is the format's: trcfile_out.h, called by the writer thread and close.
 * These files decide which chunk reaches the file when, and on which thread it is compressed.
 *
 * Pipeline:
 *   appending thread (one per stream)  encodes records into the stream's open chunk
 *        | full chunk  -> compress queue (cds_wfcq, many producers, many consumers)
 *   compressor threads (N)             one reused ZSTD_CCtx each; header + one zstd frame
 *        | done chunk  -> its compressor's done ring (single producer, single consumer)
 *   writer thread (1)                  writes in completion order, keeps the index
 * Chunks are self-contained (stream id and sequence number in their header), so file order
 * = completion order is fine: the reader orders a stream's chunks by sequence number.
 *
 * Wake-ups: each queue has a counting semaphore posted once per enqueued node (and once per
 * consumer thread at shutdown), so consumers sleep when idle and never spin.
 * Back-pressure: the `slots` semaphore starts at max_chunks_in_flight; submitting a chunk
 * takes a slot (blocking when none is left) and the writer thread gives it back once the
 * chunk is on disk, so at most that many chunks wait in the pipeline.
 * Stored chunks (TRCFILE_WRITER_STORE_WHEN_BEHIND, FORMAT.md "Stored chunks"): when no slot is
 * free at once, the appending thread takes a `store_slots` unit instead (blocking only when
 * those are gone too: the disk is behind) and enqueues the chunk straight on the write queue,
 * marked stored; the writer thread writes header and records as they are (CRC on its own
 * thread) and gives the store slot back. The write queue has the appending threads as its
 * producers (and trcfile__writer_put_chunk's caller), one consumer. Once a stored chunk is written,
 * the writer thread tells the hook set with trcfile__writer_on_stored (the background
 * compressor, chunk_bgc.h) where it is.
 * Whole chunks (trcfile__stream_put_chunk and trcfile__writer_put_chunk, for trcfile_compact):
 * a stored one enters the compress queue like any chunk; a compressed one goes to the write
 * queue with its frame. trcfile_compact's streamed way opens no stream: it gives the stream
 * table's entries straight to the stream spill (trcfile__writer_add_ended_streams).
 * The fused append (trcfile_stream_window_*) lends the open chunk's free bytes and coder to
 * the stream's one appending thread; nothing else touches them meanwhile.
 *
 * Concurrency (see also the table in trcfile.h):
 *
 *   thread (class)             takes                       waits for
 *   appending (normal)         lock, pool_lock             slots/store_slots (the writer)
 *   compressor (idle when      cq's dequeue mutex (among   cq_sem (appenders); never for
 *     storing, else nice +10)    compressors only)           the writer thread
 *   writer (normal when        pool_lock, hook_lock        wq_sem; a write-queue enqueue in
 *     storing)                   (the hook: lock-free)       progress (appending threads)
 *   background compressor      nothing shared              its semaphore (chunk_bgc.c)
 *     (idle, chunk_bgc.c)
 *
 * No lock or queue makes a thread of the normal class wait for one of the idle class, which
 * may get no core while the machine is busy (a priority inversion that would stall the drain
 * behind the writer thread): the compressors hand done chunks over through their own rings
 * (one release store publishes; a wfcqueue's consumer may wait on an enqueuer between its tail
 * exchange and its next store), the background compressor takes notes from a lock-free ring,
 * and the locks the writer thread takes are held only by normal-class threads.
 *
 *   - open stream list, the file's stream count and stream entry spill: mutex `lock`
 *     (stream_open, stream_end, close).
 *   - a stream's open chunk and coder: its one appending thread only.
 *   - chunk pool: mutex `pool_lock` (once per chunk, never per record).
 *   - the file (trcfile_out.h: index, offset, room): writer thread only until it is joined,
 *     then close.
 *   - error: atomic, first error wins (compare-exchange from 0); bytes_written: relaxed
 *     atomic, accounting only.
 *
 * Memory that does not grow with the threads traced: a stream that ends
 * (trcfile_stream_end) writes its footer entry (final once its last chunk is submitted) into
 * the stream spill (trcfile__out_stream_entry) and is freed; the chunk index spills too
 * (trcfile_out.h). Close writes the open streams' entries, then the footer.
 *
 * Errors: a failed write (ENOSPC, EIO...) becomes the sticky error. The writer thread then
 * cuts the file back to the end of the last whole chunk and writes nothing more, so every
 * chunk already written stays readable (the reader finds no footer and reports the file as
 * truncated). Chunks still in the pipeline are dropped, appends return the error.
 */
#ifndef TRC_RECORDER_CHUNK_PIPELINE_PRIV_H
#define TRC_RECORDER_CHUNK_PIPELINE_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <urcu/wfcqueue.h>
#include <zstd.h>

#include "trcfile_codec.h"
#include "trcfile_out.h"
#include "trcfile_stored.h"

/* Level 1: on span/counter streams it writes several times faster than level 3 and reads
 * faster (fewer literals to decode), for a little more room per event (bench_dump --level). */
#define TRCFILE__DEFAULT_LEVEL 1
#define TRCFILE__MAX_THREADS 64u
#define TRCFILE__STORE_IN_FLIGHT 16u /* stored chunks in flight, at least */
/* Open chunks (one per stream being appended) share this many bytes: a new chunk ends at the
 * smallest of chunk_bytes, its fair share (OPEN_BUDGET / open chunks) and what the open chunks
 * have left of the budget (the sum of their limits, open_bytes), never below OPEN_MIN_CHUNK.
 * So with a program's hundreds of busy threads the open chunks hold at most OPEN_BUDGET plus
 * OPEN_MIN_CHUNK per stream, not chunk_bytes per thread. (The fair share alone does not bound
 * the sum: chunks opened while few were open keep their size, and streams starting at once
 * sum to a harmonic series of shares.) Appending threads race only on the
 * sizes: concurrent openers may overshoot by a chunk each. */
#define TRCFILE__OPEN_BUDGET (32u << 20)
#define TRCFILE__OPEN_MIN_CHUNK (64u << 10)

struct trcfile__wchunk {
	struct cds_wfcq_node node;
	/* Handed over: bumped (release) by the thread that enqueues the chunk, read (acquire) by
	 * the one that dequeues it. The queue itself orders them, but its atomics live in
	 * liburcu, which ThreadSanitizer does not see; this pair makes the hand-over visible to
	 * it (and costs one atomic per chunk). */
	_Atomic uint32_t handoff;
	struct trcfile__chunk_hdr hdr;
	uint8_t *raw;
	size_t raw_len, raw_cap;
	uint8_t *out; /* chunk header + frame, filled by a compressor */
	size_t out_len, out_cap;
	bool stored; /* goes to the file stored (FORMAT.md "Stored chunks"), took a store slot */
	bool drop; /* sent after the disk filled: only counted (took a store slot, not counted
		    * in chunks_stored) */
	/* What the chunk loses if it is not written: its events and the counts of its lost
	 * records (sampler ticks aside), as the appending thread added them. */
	uint64_t weight;
	uint64_t events; /* of them, the events (the rest: lost already) */
	bool open; /* counted in open_chunks and open_bytes (a stream's chunk being appended) */
	size_t limit; /* the chunk is full (submitted) once raw_len reaches this */
	struct trcfile__wchunk *next_free;
};

struct trcfile_stream {
	struct trcfile_writer *w;
	struct trcfile_stream *prev, *next; /* the writer's open streams (lock) */
	uint32_t id, kind, pid, tid;
	uint32_t seq; /* next chunk's sequence number */
	uint32_t chunks; /* chunks submitted */
	uint64_t records; /* records appended */
	struct trcfile__wchunk *cur;
	struct trcfile__coder coder;
};

/* Chunks one compressor has done, for the writer thread: a single-producer single-consumer
 * ring. The compressor runs in the idle class when chunks may be stored; a queue whose consumer
 * may have to wait for a half-done enqueue (wfcqueue's, between its tail exchange and its next
 * store) would make the writer, and the drain behind it, wait for an idle thread that gets no
 * core while the machine is busy. A ring entry is published by one release store: nothing to
 * wait for. Never full: at most max_chunks_in_flight chunks (slots) are past the appenders. */
struct trcfile__done_ring {
	_Atomic uint32_t head; /* the writer thread's */
	char pad[60];
	_Atomic uint32_t tail; /* the compressor's */
	uint32_t mask;
	struct trcfile__wchunk **slot;
	struct trcfile_writer *w;
};

struct trcfile_writer {
	/* The file (trcfile_out.h): its header, index, stream entries and footer, the room
	 * left and the full disk's accounting. Its streams' count and spill under lock. */
	struct trcfile_out out;
	uint32_t chunk_bytes;
	int zstd_level;
	unsigned n_compress;
	uint32_t flags;

	pthread_mutex_t lock; /* open streams, the stream spill, closing */
	struct trcfile_stream *open_streams, *open_tail; /* not ended yet, by id */
	bool closing;

	pthread_mutex_t pool_lock;
	struct trcfile__wchunk *pool;
	unsigned pool_n, pool_max; /* chunks kept for reuse; beyond pool_max they are freed */
	_Atomic uint64_t chunks_made; /* chunk structs allocated so far (the prefault's bound) */
	unsigned prefault_chunks; /* TRCFILE_WRITER_PREFAULT: chunks the writer thread warms */
	_Atomic uint32_t open_chunks; /* streams' chunks being appended (OPEN_BUDGET) */
	_Atomic uint64_t open_bytes; /* the sum of their limits */

	struct cds_wfcq_head cq_head; /* to compress */
	struct cds_wfcq_tail cq_tail;
	sem_t cq_sem;
	struct cds_wfcq_head wq_head; /* to write */
	struct cds_wfcq_tail wq_tail;
	sem_t wq_sem;
	sem_t slots;
	sem_t store_slots; /* stored chunks in flight (TRCFILE_WRITER_STORE_WHEN_BEHIND) */
	bool store_when_behind; /* appending threads only, then close (which clears it) */
	unsigned store_one_in;
	_Atomic uint64_t submitted; /* chunks submitted, for store_one_in */
	atomic_bool stop_compress, stop_write;

	pthread_t compress_tids[TRCFILE__MAX_THREADS];
	struct trcfile__done_ring done[TRCFILE__MAX_THREADS]; /* compressor i's done chunks */
	unsigned done_next; /* the ring the writer thread looks at first (round robin) */
	unsigned compress_started;
	pthread_t writer_tid;
	bool writer_started;

	_Atomic int error;
	_Atomic uint64_t chunks_stored;

	/* Told of each stored chunk the writer thread wrote (trcfile__writer_on_stored): the
	 * background compressor. Called by the writer thread under hook_lock, which setting it
	 * takes too, so once it is removed it is never called again. */
	pthread_mutex_t hook_lock;
	trcfile_stored_hook hook;
	void *hook_arg;
};

static inline void trcfile__set_error(struct trcfile_writer *w, int err)
{
	int expected = 0;
	/* Relaxed is enough: the error is a flag, no data is published through it. */
	atomic_compare_exchange_strong_explicit(&w->error, &expected, err, memory_order_relaxed,
						memory_order_relaxed);
}

static inline void trcfile__sem_wait(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

/* true when a unit was taken without waiting. */
static inline bool trcfile__sem_trywait(sem_t *s)
{
	for (;;) {
		if (sem_trywait(s) == 0)
			return true;
		if (errno != EINTR)
			return false;
	}
}

/* Marks everything this thread wrote into c as published to whoever dequeues it next. */
static inline void trcfile__handoff(struct trcfile__wchunk *c)
{
	atomic_fetch_add_explicit(&c->handoff, 1, memory_order_release);
}

/* ---- across the pipeline's files ------------------------------------------------------ */

/* chunk_pool.c. Any thread (pool_lock inside). */
/* A chunk from the pool, or a new one: its buffer holds limit + TRCFILE__FIXED_MAX_BYTES bytes,
 * and need at least; emptied. NULL when out of memory. */
struct trcfile__wchunk *trcfile__chunk_get_limit(struct trcfile_writer *w, size_t need,
						 size_t limit);
/* The same with limit chunk_bytes. */
struct trcfile__wchunk *trcfile__chunk_get(struct trcfile_writer *w, size_t need);
/* Back to the pool, or freed (a chunk grown for one huge record, or beyond pool_max). */
void trcfile__chunk_put(struct trcfile_writer *w, struct trcfile__wchunk *c);
/* Frees c (NULL: nothing). */
void trcfile__chunk_free(struct trcfile__wchunk *c);
/* TRCFILE_WRITER_PREFAULT: the writer thread, before its first write. */
void trcfile__prefault_pool(struct trcfile_writer *w);

/* chunk_compress.c. */
/* c's records into its frame. Compressor threads, the writer thread. 0 or -errno. */
int trcfile__compress(ZSTD_CCtx *cctx, struct trcfile__wchunk *c);
/* TRCFILE_WRITER_BACKGROUND: the calling thread to nice +10. The pipeline's threads. */
void trcfile__maybe_background(const struct trcfile_writer *w);
/* The thread function of compressor i (arg: &w->done[i]). */
void *trcfile__compress_main(void *arg);
/* A done chunk of any compressor, or NULL. The writer thread; never blocks. */
struct trcfile__wchunk *trcfile__done_pop(struct trcfile_writer *w);

/* chunk_write.c. */
/* The writer thread's function (arg: w). */
void *trcfile__writer_main(void *arg);

#endif /* TRC_RECORDER_CHUNK_PIPELINE_PRIV_H */
