/* chunk_pipeline.c - the recorder's chunk pipeline: the trace file writer of trcfile.h
 * (trcfile_writer_*, trcfile_stream_*), chunks through compressor threads to a writer thread.
 *
 * Purpose: take records per stream from the recorder's threads and turn them into the file
 * of FORMAT.md without ever compressing or writing on the appending thread. What the file
 * holds and how (header, chunk framing, index, stream entries, footer, the end of a trace
 * whose disk filled) is the format's: trcfile_out.h, called by the writer thread and close.
 * This file decides which chunk reaches the file when, and on which thread it is compressed.
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
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <urcu/wfcqueue.h>
#include <zstd.h>

#include "chunk_idle.h"
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

static void trcfile__set_error(struct trcfile_writer *w, int err)
{
	int expected = 0;
	/* Relaxed is enough: the error is a flag, no data is published through it. */
	atomic_compare_exchange_strong_explicit(&w->error, &expected, err, memory_order_relaxed,
						memory_order_relaxed);
}

int trcfile_writer_error(const struct trcfile_writer *w)
{
	return atomic_load_explicit(&((struct trcfile_writer *)w)->error, memory_order_relaxed);
}

uint64_t trcfile_writer_chunks_stored(const struct trcfile_writer *w)
{
	return atomic_load_explicit(&((struct trcfile_writer *)w)->chunks_stored,
				    memory_order_relaxed);
}

uint64_t trcfile_writer_bytes_written(const struct trcfile_writer *w)
{
	return atomic_load_explicit(&((struct trcfile_writer *)w)->out.bytes_written,
				    memory_order_relaxed);
}

static void trcfile__sem_wait(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

/* true when a unit was taken without waiting. */
static bool trcfile__sem_trywait(sem_t *s)
{
	for (;;) {
		if (sem_trywait(s) == 0)
			return true;
		if (errno != EINTR)
			return false;
	}
}

/* ---- chunk pool ----------------------------------------------------------------------- */

/* c (NULL: a new one) made ready for use: its buffer holds limit + TRCFILE__FIXED_MAX_BYTES
 * bytes, and need at least. NULL when out of memory (c freed). */
static struct trcfile__wchunk *
trcfile__chunk_ready(struct trcfile_writer *w, struct trcfile__wchunk *c, size_t need, size_t limit)
{
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		atomic_fetch_add_explicit(&w->chunks_made, 1, memory_order_relaxed);
	}
	size_t want = limit + TRCFILE__FIXED_MAX_BYTES;
	if (need > want)
		want = need;
	if (c->raw_cap < want) {
		uint8_t *raw = realloc(c->raw, want);
		if (!raw) {
			free(c->out);
			free(c->raw);
			free(c);
			return NULL;
		}
		c->raw = raw;
		c->raw_cap = want;
	}
	cds_wfcq_node_init(&c->node);
	c->raw_len = 0;
	c->out_len = 0;
	c->stored = false;
	c->drop = false;
	c->weight = 0;
	c->events = 0;
	c->open = false;
	c->limit = limit;
	memset(&c->hdr, 0, sizeof(c->hdr));
	return c;
}

/* A chunk from the pool, or a new one, ready as trcfile__chunk_ready says. */
static struct trcfile__wchunk *trcfile__chunk_get_limit(struct trcfile_writer *w, size_t need,
							size_t limit)
{
	pthread_mutex_lock(&w->pool_lock);
	struct trcfile__wchunk *c = w->pool;
	if (c) {
		w->pool = c->next_free;
		w->pool_n--;
	}
	pthread_mutex_unlock(&w->pool_lock);
	return trcfile__chunk_ready(w, c, need, limit);
}

static struct trcfile__wchunk *trcfile__chunk_get(struct trcfile_writer *w, size_t need)
{
	return trcfile__chunk_get_limit(w, need, w->chunk_bytes);
}

/* Marks everything this thread wrote into c as published to whoever dequeues it next. */
static void trcfile__handoff(struct trcfile__wchunk *c)
{
	atomic_fetch_add_explicit(&c->handoff, 1, memory_order_release);
}

static void trcfile__chunk_free(struct trcfile__wchunk *c)
{
	if (!c)
		return;
	free(c->raw);
	free(c->out);
	free(c);
}

static void trcfile__chunk_put(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	/* A chunk grown for one huge record goes back to normal size. */
	if (c->raw_cap > 2 * ((size_t)w->chunk_bytes + TRCFILE__FIXED_MAX_BYTES)) {
		trcfile__chunk_free(c);
		return;
	}
	pthread_mutex_lock(&w->pool_lock);
	bool keep = w->pool_n < w->pool_max;
	if (keep) {
		c->next_free = w->pool;
		w->pool = c;
		w->pool_n++;
	}
	pthread_mutex_unlock(&w->pool_lock);
	if (!keep)
		trcfile__chunk_free(c); /* more than the pipeline holds at once: give it back */
}

/* ---- pipeline threads ----------------------------------------------------------------- */

/* Faults n bytes at p in: one store per 4 KiB (larger pages are covered too). */
static void trcfile__touch_pages(void *p, size_t n)
{
	/* A store per page, volatile: GCC may turn a malloc and then a memset to 0 into calloc,
	 * which touches nothing on fresh pages. */
	volatile uint8_t *b = p;
	const size_t page = 4096;
	for (size_t i = 0; i < n; i += page)
		b[i] = 0;
	if (n)
		b[n - 1] = 0;
}

/* TRCFILE_WRITER_PREFAULT: new chunks, their raw pages touched (the drain writes there) and put
 * in the pool one by one, until the writer has made as many as the pipeline holds at once plus
 * a few open ones, whoever made them. The writer thread does it before its first write, not
 * trcfile_writer_open: several MiB of page faults at the defaults, a large part of what
 * trace-run would spend before the program could start; this way it overlaps the program's
 * start. It makes chunks rather than warming pooled ones it would hold meanwhile: appenders
 * that find the pool empty make their own, and those count (held ones would add to what
 * hundreds of threads starting at once make: bench=e2e case=threads-200's recorder RSS). */
static void trcfile__prefault_pool(struct trcfile_writer *w)
{
	/* Closing already (a program that ran a few ms): no use for them any more. */
	while (!atomic_load_explicit(&w->stop_compress, memory_order_relaxed) &&
	       atomic_load_explicit(&w->chunks_made, memory_order_relaxed) < w->prefault_chunks) {
		struct trcfile__wchunk *c = trcfile__chunk_ready(w, NULL, 0, w->chunk_bytes);
		if (!c)
			break;
		trcfile__touch_pages(c->raw, c->raw_cap);
		/* The compressed copy is only made, not touched: a compressor writes a tenth of it
		 * or so, off the drain's path, and touching it all would add as much RSS for
		 * nothing. */
		size_t bound = ZSTD_compressBound(c->raw_cap) + TRCFILE__CHUNK_HDR_BYTES;
		uint8_t *out = malloc(bound);
		if (out) {
			c->out = out;
			c->out_cap = bound;
		}
		trcfile__chunk_put(w, c);
	}
}

/* c's records into its frame (trcfile__chunk_frame). 0 or -errno. */
static int trcfile__compress(ZSTD_CCtx *cctx, struct trcfile__wchunk *c)
{
	return trcfile__chunk_frame(cctx, &c->hdr, c->raw, c->raw_len, &c->out, &c->out_cap,
				    &c->out_len);
}

/* Lowers the calling thread's priority when the writer runs in the background (nice +10;
 * Linux: nice is per thread). Not SCHED_IDLE: on a machine the traced program saturates, an
 * idle-class compressor gets next to no CPU, the pipeline fills and the drain stalls, so
 * the rings overflow; at nice +10 it still gets about a tenth of a contended core. Failure is
 * harmless: the thread keeps its priority. */
static void trcfile__maybe_background(const struct trcfile_writer *w)
{
	if (!(w->flags & TRCFILE_WRITER_BACKGROUND))
		return;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	errno = 0;
	int cur = getpriority(PRIO_PROCESS, (id_t)tid);
	if (errno == 0)
		setpriority(PRIO_PROCESS, (id_t)tid, cur + 10 > 19 ? 19 : cur + 10);
}

/* Compresses one chunk-sized buffer of varied bytes once, so the context's work space is
 * allocated and faulted in before real chunks arrive (TRCFILE_WRITER_PREFAULT). */
static void trcfile__prewarm_cctx(const struct trcfile_writer *w, ZSTD_CCtx *cctx)
{
	size_t n = w->chunk_bytes;
	uint8_t *in = malloc(n);
	size_t cap = ZSTD_compressBound(n);
	uint8_t *out = malloc(cap);
	if (in && out) {
		uint32_t x = 2463534242u;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			in[i] = (uint8_t)(x & 0x0f); /* low entropy, like encoded records */
		}
		(void)ZSTD_compress2(cctx, out, cap, in, n);
	}
	free(in);
	free(out);
}

/* Compressor thread: c is done (the writer thread writes it next). Never blocks. */
static void trcfile__done_push(struct trcfile__done_ring *d, struct trcfile__wchunk *c)
{
	uint32_t tail = atomic_load_explicit(&d->tail, memory_order_relaxed); /* ours */
	/* Pairs with the release store of head in trcfile__done_pop: never full (slots bound
	 * what is past the appenders), checked all the same. */
	while (tail - atomic_load_explicit(&d->head, memory_order_acquire) > d->mask)
		sched_yield();
	d->slot[tail & d->mask] = c;
	/* Pairs with the acquire load of tail in trcfile__done_pop. */
	atomic_store_explicit(&d->tail, tail + 1, memory_order_release);
}

/* Writer thread: a done chunk of any compressor, or NULL. Never blocks. */
static struct trcfile__wchunk *trcfile__done_pop(struct trcfile_writer *w)
{
	for (unsigned k = 0; k < w->n_compress; k++) {
		unsigned i = (w->done_next + k) % w->n_compress;
		struct trcfile__done_ring *d = &w->done[i];
		uint32_t head = atomic_load_explicit(&d->head, memory_order_relaxed); /* ours */
		/* Pairs with the release store of tail in trcfile__done_push. */
		if (atomic_load_explicit(&d->tail, memory_order_acquire) == head)
			continue;
		struct trcfile__wchunk *c = d->slot[head & d->mask];
		/* Pairs with the acquire load of head in trcfile__done_push. */
		atomic_store_explicit(&d->head, head + 1, memory_order_release);
		w->done_next = i + 1;
		return c;
	}
	return NULL;
}

static void *trcfile__compress_main(void *arg)
{
	struct trcfile__done_ring *done = arg;
	struct trcfile_writer *w = done->w;
	pthread_setname_np(pthread_self(), "trc-compress"); /* as top -H and /proc show it */
	/* When what they cannot take is stored, nothing waits for the compressors: they take only
	 * idle CPU. At nice +10 they would still take a share of the drain's core once the
	 * recorder is confined to it (recorder_place.h) and, unconfined, of the producer's. */
	if ((w->flags & TRCFILE_WRITER_BACKGROUND) && (w->flags & TRCFILE_WRITER_STORE_WHEN_BEHIND))
		trcfile__run_when_idle();
	else
		trcfile__maybe_background(w);
	ZSTD_CCtx *cctx = trcfile__cctx_new(w->zstd_level);
	if (cctx) {
		if (w->flags & TRCFILE_WRITER_PREFAULT)
			trcfile__prewarm_cctx(w, cctx);
	} else {
		trcfile__set_error(w, -ENOMEM);
	}
	for (;;) {
		trcfile__sem_wait(&w->cq_sem);
		struct cds_wfcq_node *n = cds_wfcq_dequeue_blocking(&w->cq_head, &w->cq_tail);
		if (!n) {
			if (atomic_load_explicit(&w->stop_compress, memory_order_acquire))
				break;
			continue;
		}
		struct trcfile__wchunk *c = caa_container_of(n, struct trcfile__wchunk, node);
		/* Pairs with the release in trcfile__handoff by the enqueuing thread. */
		(void)atomic_load_explicit(&c->handoff, memory_order_acquire);
		c->out_len = 0;
		if (cctx && !trcfile_writer_error(w) &&
		    !atomic_load_explicit(&w->out.full_err, memory_order_relaxed)) {
			int err = trcfile__compress(cctx, c);
			if (err) {
				trcfile__set_error(w, err);
				c->out_len = 0;
			}
		}
		/* Even a chunk that will not be written goes to the writer thread, which gives
		 * its slot back. */
		trcfile__handoff(c);
		trcfile__done_push(done, c);
		sem_post(&w->wq_sem);
	}
	ZSTD_freeCCtx(cctx);
	return NULL;
}

/* ---- the writer thread's writes -------------------------------------------------------- */

static struct trcfile__weight trcfile__weight_of(const struct trcfile__wchunk *c)
{
	return (struct trcfile__weight){c->weight, c->events};
}

/* c is not written: the disk is full. Counted lost, or kept for close if it is metadata
 * (trcfile__out_lost). Writer thread. */
static void trcfile__drop(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (c->stored && !c->drop)
		atomic_fetch_sub_explicit(&w->chunks_stored, 1, memory_order_relaxed);
	int err = trcfile__out_lost(&w->out, &c->hdr, c->raw, c->raw_len, trcfile__weight_of(c));
	if (err)
		trcfile__set_error(w, err);
}

/* Writing c failed with err: the sticky error, or, for a full disk that may lose, the start
 * of the dropping (c is the first chunk dropped). Writer thread. */
static void trcfile__write_failed(struct trcfile_writer *w, struct trcfile__wchunk *c, int err)
{
	if (!trcfile__out_fills(&w->out, err)) {
		trcfile__set_error(w, err);
		return;
	}
	trcfile__drop(w, c);
}

static void trcfile__write_chunk(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (trcfile_writer_error(w))
		return;
	if (trcfile__out_full(&w->out)) {
		trcfile__drop(w, c);
		return;
	}
	if (!c->out_len)
		return;
	int err = trcfile__out_put(&w->out, &c->hdr, c->out, c->out_len, NULL, 0,
				   trcfile__weight_of(c));
	if (err)
		trcfile__write_failed(w, c, err);
	else
		trcfile__out_check_room(&w->out, &c->hdr);
}

/* The stored chunk c that did not fit, compressed on the writer thread: it may fit so. 0 or
 * -errno. */
static int trcfile__write_compressed_instead(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	ZSTD_CCtx *cctx = trcfile__out_cctx(&w->out);
	if (!cctx)
		return -ENOMEM;
	c->hdr.flags = 0;
	c->hdr.payload_crc = 0;
	int err = trcfile__compress(cctx, c);
	if (!err)
		err = trcfile__out_put(&w->out, &c->hdr, c->out, c->out_len, NULL, 0,
				       trcfile__weight_of(c));
	if (!err)
		atomic_fetch_sub_explicit(&w->chunks_stored, 1, memory_order_relaxed);
	return err;
}

/* A stored chunk: header, then the records as they are (FORMAT.md "Stored chunks"). Writer
 * thread. */
static void trcfile__write_stored(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (trcfile_writer_error(w))
		return;
	if (c->drop || trcfile__out_full(&w->out)) {
		trcfile__drop(w, c);
		return;
	}
	uint64_t at;
	int err = trcfile__out_put_stored(&w->out, &c->hdr, c->raw, c->raw_len,
					  trcfile__weight_of(c), &at);
	if (err && w->out.lose_when_full && trcfile__is_full_err(err)) {
		/* Stored, it takes about three times the room it would compressed: from now on
		 * nothing is stored, and this one may fit compressed. */
		atomic_store_explicit(&w->out.store_off, true, memory_order_relaxed);
		int e = trcfile__write_compressed_instead(w, c);
		if (!e)
			return;
		err = trcfile__is_full_err(e) ? e : err;
	}
	if (err) {
		trcfile__write_failed(w, c, err);
		return;
	}
	struct trcfile_stored_note note = {.offset = at,
					   .stream_id = c->hdr.stream_id,
					   .seq = c->hdr.seq,
					   .raw_bytes = c->hdr.raw_bytes};
	/* Once a chunk is on disk (a stored chunk is about 1 MiB: one uncontended lock each). */
	pthread_mutex_lock(&w->hook_lock);
	if (w->hook)
		w->hook(w->hook_arg, &note);
	pthread_mutex_unlock(&w->hook_lock);
}

int trcfile__writer_on_stored(struct trcfile_writer *w, trcfile_stored_hook fn, void *arg,
			      struct trcfile_stored_source *src)
{
	if (fn && src) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->out.fd);
		/* The writer's descriptor is write-only: its proc link opens the file to read. */
		int rfd = open(proc, O_RDONLY | O_CLOEXEC);
		if (rfd < 0)
			return -errno;
		src->fd = rfd;
		src->zstd_level = w->zstd_level;
		src->chunk_bytes = w->chunk_bytes;
	}
	pthread_mutex_lock(&w->hook_lock);
	w->hook = fn;
	w->hook_arg = fn ? arg : NULL;
	pthread_mutex_unlock(&w->hook_lock);
	return 0;
}

static void *trcfile__writer_main(void *arg)
{
	struct trcfile_writer *w = arg;
	pthread_setname_np(pthread_self(), "trc-writer");
	trcfile__prefault_pool(w);
	/* Stored chunks make the writer thread's latency the drain's: it stays at the normal
	 * priority when they may come (its CPU time is small: copies into the page cache). */
	if (!(w->flags & TRCFILE_WRITER_STORE_WHEN_BEHIND))
		trcfile__maybe_background(w);
	for (;;) {
		trcfile__sem_wait(&w->wq_sem);
		/* A unit is posted once per chunk, after it was published: a compressor's in its
		 * ring, found at once; else an appending thread's in the write queue, where the
		 * dequeue may wait only for an appending thread's enqueue (normal class). */
		struct trcfile__wchunk *c = trcfile__done_pop(w);
		if (!c) {
			/* One consumer: the unlocked dequeue is enough (wfcqueue table, [3]
			 * alone). */
			struct cds_wfcq_node *n =
				__cds_wfcq_dequeue_blocking(&w->wq_head, &w->wq_tail);
			if (!n) {
				if (atomic_load_explicit(&w->stop_write, memory_order_acquire))
					break;
				continue;
			}
			c = caa_container_of(n, struct trcfile__wchunk, node);
		}
		/* Pairs with the release in trcfile__handoff by the enqueuing thread. */
		(void)atomic_load_explicit(&c->handoff, memory_order_acquire);
		bool stored = c->stored;
		if (stored)
			trcfile__write_stored(w, c);
		else
			trcfile__write_chunk(w, c);
		trcfile__chunk_put(w, c);
		sem_post(stored ? &w->store_slots : &w->slots);
	}
	return NULL;
}

/* ---- streams ------------------------------------------------------------------------- */

struct trcfile_stream *trcfile_stream_open(struct trcfile_writer *w, enum trc_stream_kind k,
					   uint32_t pid, uint32_t tid)
{
	if (!w || k < TRC_STREAM_THREAD || k > TRC_STREAM_META)
		return NULL;
	struct trcfile_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->w = w;
	s->kind = k;
	s->pid = pid;
	s->tid = tid;
	pthread_mutex_lock(&w->lock);
	if (w->closing || w->out.n_streams == UINT32_MAX) {
		pthread_mutex_unlock(&w->lock);
		free(s);
		return NULL;
	}
	s->id = w->out.n_streams++;
	/* At the tail: close submits the open streams' last chunks in id order, as always. */
	s->prev = w->open_tail;
	if (s->prev)
		s->prev->next = s;
	else
		w->open_streams = s;
	w->open_tail = s;
	pthread_mutex_unlock(&w->lock);
	return s;
}

/* Writes s's footer entry into the stream spill and takes s off the open list. Called with
 * w->lock held; s's chunks are all submitted (its counts are final). */
static int trcfile__stream_retire(struct trcfile_writer *w, struct trcfile_stream *s)
{
	int err = trcfile__out_stream_entry(&w->out, &(struct trcfile__footer_stream){
							     .id = s->id,
							     .kind = s->kind,
							     .pid = s->pid,
							     .tid = s->tid,
							     .chunks = s->chunks,
							     .records = s->records});
	if (s->prev)
		s->prev->next = s->next;
	else
		w->open_streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		w->open_tail = s->prev;
	s->prev = s->next = NULL;
	return err;
}

uint32_t trcfile_stream_id(const struct trcfile_stream *s)
{
	return s->id;
}

/* Sends the open chunk down the pipeline (blocks for a slot: back-pressure). */
static int trcfile__submit(struct trcfile_stream *s)
{
	struct trcfile_writer *w = s->w;
	struct trcfile__wchunk *c = s->cur;
	if (!c)
		return trcfile_writer_error(w);
	s->cur = NULL;
	if (c->open) {
		c->open = false;
		atomic_fetch_sub_explicit(&w->open_chunks, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&w->open_bytes, c->limit, memory_order_relaxed);
	}
	c->hdr.last_ts = s->coder.ts;
	if (w->out.lose_when_full && trcfile__out_full(&w->out)) {
		/* The disk is full: the writer thread only counts the chunk (compressing it would
		 * be for nothing). */
		trcfile__sem_wait(&w->store_slots);
		c->stored = true;
		c->drop = true;
		trcfile__handoff(c);
		cds_wfcq_enqueue(&w->wq_head, &w->wq_tail, &c->node);
		sem_post(&w->wq_sem);
		s->chunks++;
		return trcfile_writer_error(w);
	}
	bool store = false;
	bool may_store = !atomic_load_explicit(&w->out.store_off, memory_order_relaxed);
	if (w->store_one_in && may_store) {
		uint64_t n = atomic_fetch_add_explicit(&w->submitted, 1, memory_order_relaxed);
		store = n % w->store_one_in == 0;
	}
	if (!store) {
		if (w->store_when_behind && may_store)
			store = !trcfile__sem_trywait(&w->slots); /* the compressors are behind */
		else
			trcfile__sem_wait(&w->slots);
	}
	if (store) {
		/* Straight to the writer thread (blocks only when the disk is behind too). */
		trcfile__sem_wait(&w->store_slots);
		c->stored = true;
		atomic_fetch_add_explicit(&w->chunks_stored, 1, memory_order_relaxed);
		trcfile__handoff(c);
		cds_wfcq_enqueue(&w->wq_head, &w->wq_tail, &c->node);
		sem_post(&w->wq_sem);
	} else {
		trcfile__handoff(c);
		cds_wfcq_enqueue(&w->cq_head, &w->cq_tail, &c->node);
		sem_post(&w->cq_sem);
	}
	s->chunks++;
	return trcfile_writer_error(w);
}

int trcfile_stream_flush(struct trcfile_stream *s)
{
	if (!s)
		return -EINVAL;
	return trcfile__submit(s);
}

int trcfile_stream_end(struct trcfile_stream *s)
{
	if (!s)
		return -EINVAL;
	struct trcfile_writer *w = s->w;
	int err = trcfile__submit(s);
	pthread_mutex_lock(&w->lock);
	int e = trcfile__stream_retire(w, s);
	pthread_mutex_unlock(&w->lock);
	if (e)
		trcfile__set_error(w, e);
	free(s);
	return err ? err : e;
}

/* Opens the stream's next chunk, its first record at ts; its limit from OPEN_BUDGET. */
static struct trcfile__wchunk *trcfile__chunk_open(struct trcfile_stream *s, uint64_t ts,
						   size_t need)
{
	struct trcfile_writer *w = s->w;
	/* Relaxed: counts to size buffers by, no data is published through them. */
	uint32_t n = atomic_fetch_add_explicit(&w->open_chunks, 1, memory_order_relaxed) + 1;
	uint64_t used = atomic_load_explicit(&w->open_bytes, memory_order_relaxed);
	uint64_t limit = w->chunk_bytes;
	uint64_t fair = TRCFILE__OPEN_BUDGET / n;
	uint64_t left = used < TRCFILE__OPEN_BUDGET ? TRCFILE__OPEN_BUDGET - used : 0;
	if (limit > fair)
		limit = fair;
	if (limit > left)
		limit = left;
	uint64_t room = atomic_load_explicit(&w->out.room_raw, memory_order_relaxed);
	if (limit > room)
		limit = room; /* the disk is filling (TRCFILE_WRITER_LOSE_WHEN_FULL) */
	if (limit < TRCFILE__OPEN_MIN_CHUNK)
		limit = TRCFILE__OPEN_MIN_CHUNK < w->chunk_bytes ? TRCFILE__OPEN_MIN_CHUNK
								 : w->chunk_bytes;
	struct trcfile__wchunk *c = trcfile__chunk_get_limit(w, need, (size_t)limit);
	if (!c) {
		atomic_fetch_sub_explicit(&w->open_chunks, 1, memory_order_relaxed);
		return NULL;
	}
	atomic_fetch_add_explicit(&w->open_bytes, c->limit, memory_order_relaxed);
	c->open = true;
	c->hdr.stream_id = s->id;
	c->hdr.seq = s->seq++;
	c->hdr.kind = s->kind;
	c->hdr.pid = s->pid;
	c->hdr.tid = s->tid;
	c->hdr.first_ts = ts;
	trcfile__coder_reset(&s->coder, ts);
	s->cur = c;
	return c;
}

int trcfile_stream_append(struct trcfile_stream *s, const struct trc_record *r)
{
	struct trcfile_writer *w = s->w;
	int err = trcfile_writer_error(w);
	if (trcfile__unlikely(err))
		return err;
	long need = trcfile__record_max_bytes(r);
	if (need < 0)
		return (int)need;
	struct trcfile__wchunk *c = s->cur;
	if (c && (c->raw_len + (size_t)need > c->raw_cap || c->hdr.count == UINT32_MAX)) {
		err = trcfile__submit(s);
		if (err)
			return err;
		c = NULL;
	}
	if (!c) {
		c = trcfile__chunk_open(s, r->ts_ns, (size_t)need);
		if (!c)
			return -ENOMEM;
	}
	uint8_t *end = trcfile__encode(c->raw + c->raw_len, r, &s->coder);
	c->raw_len = (size_t)(end - c->raw);
	c->hdr.count++;
	if (trc_rec_is_event(r->type)) {
		c->weight++;
		c->events++;
	} else if (r->type == TRC_REC_LOST && r->lost.reason != TRC_LOST_SAMPLER_LATE)
		c->weight += r->lost.count; /* lost already: lost still if this chunk is */
	s->records++;
	if (c->raw_len >= c->limit)
		return trcfile__submit(s);
	return 0;
}

/* ---- whole chunks (trcfile_compact) ------------------------------------------------------ */

int trcfile__writer_put_chunk(struct trcfile_writer *w, const struct trcfile__chunk_hdr *h,
			      const uint8_t *payload)
{
	int err = trcfile_writer_error(w);
	if (err)
		return err;
	bool stored = trcfile__chunk_is_stored(h);
	struct trcfile__wchunk *c = trcfile__chunk_get(w, stored ? h->raw_bytes : 0);
	if (!c)
		return -ENOMEM;
	c->hdr = *h;
	c->hdr.flags = 0;
	c->hdr.payload_crc = 0;
	if (stored) {
		/* The compressors make it a frame, as any chunk appended record by record. */
		memcpy(c->raw, payload, h->raw_bytes);
		c->raw_len = h->raw_bytes;
		trcfile__sem_wait(&w->slots);
		trcfile__handoff(c);
		cds_wfcq_enqueue(&w->cq_head, &w->cq_tail, &c->node);
		sem_post(&w->cq_sem);
		return trcfile_writer_error(w);
	}
	/* Compressed already: the frame as it is, straight to the writer thread. */
	size_t need = (size_t)TRCFILE__CHUNK_HDR_BYTES + h->comp_bytes;
	if (c->out_cap < need) {
		uint8_t *out = realloc(c->out, need);
		if (!out) {
			trcfile__chunk_free(c);
			return -ENOMEM;
		}
		c->out = out;
		c->out_cap = need;
	}
	memcpy(c->out + TRCFILE__CHUNK_HDR_BYTES, payload, h->comp_bytes);
	trcfile__chunk_hdr_put(c->out, &c->hdr);
	c->out_len = need;
	trcfile__sem_wait(&w->slots);
	trcfile__handoff(c);
	cds_wfcq_enqueue(&w->wq_head, &w->wq_tail, &c->node);
	sem_post(&w->wq_sem);
	return trcfile_writer_error(w);
}

int trcfile__stream_put_chunk(struct trcfile_stream *s, const struct trcfile__chunk_hdr *h,
			      const uint8_t *payload)
{
	struct trcfile_writer *w = s->w;
	int err = trcfile_writer_error(w);
	if (err)
		return err;
	if (s->cur && (err = trcfile__submit(s)))
		return err;
	struct trcfile__chunk_hdr ch = *h;
	ch.stream_id = s->id;
	ch.kind = s->kind;
	ch.pid = s->pid;
	ch.tid = s->tid;
	s->records += h->count;
	if (h->seq >= s->seq)
		s->seq = h->seq + 1;
	s->chunks++;
	return trcfile__writer_put_chunk(w, &ch, payload);
}

int trcfile__writer_add_ended_streams(struct trcfile_writer *w,
				      const struct trcfile__footer_stream *e, size_t n)
{
	pthread_mutex_lock(&w->lock);
	int err = trcfile__out_add_ended_streams(&w->out, e, n, w->closing);
	pthread_mutex_unlock(&w->lock);
	if (err)
		trcfile__set_error(w, err);
	return err;
}

/* ---- the fused append (trcfile.h "The fused append") ------------------------------------ */

_Static_assert(TRCFILE_WINDOW_EVENT_MAX <= TRCFILE__FIXED_MAX_BYTES,
	       "an event written below limit fits the slack every chunk buffer has");

int trcfile_stream_window_open(struct trcfile_stream *s, uint64_t ts, struct trcfile_window *win)
{
	struct trcfile_writer *w = s->w;
	int err = trcfile_writer_error(w);
	if (trcfile__unlikely(err))
		return err;
	struct trcfile__wchunk *c = s->cur;
	/* An open chunk is never full (append and close submit a chunk the moment it fills),
	 * and its buffer holds chunk_bytes + TRCFILE__FIXED_MAX_BYTES. */
	if (!c) {
		c = trcfile__chunk_open(s, ts, 0);
		if (!c)
			return -ENOMEM;
	}
	win->p = c->raw + c->raw_len;
	win->limit = c->raw + c->limit;
	win->count = 0;
	win->ts = s->coder.ts;
	win->alloc_addr = s->coder.alloc_addr;
	win->func_addr = s->coder.func_addr;
	return 0;
}

int trcfile_stream_window_close(struct trcfile_stream *s, struct trcfile_window *win)
{
	struct trcfile__wchunk *c = s->cur;
	if (!c)
		return trcfile_writer_error(s->w);
	c->raw_len = (size_t)(win->p - c->raw);
	c->hdr.count += win->count;
	c->weight += win->count; /* events only */
	c->events += win->count;
	s->records += win->count;
	s->coder.ts = win->ts;
	s->coder.alloc_addr = win->alloc_addr;
	s->coder.func_addr = win->func_addr;
	win->count = 0;
	if (c->raw_len >= c->limit)
		return trcfile__submit(s);
	return 0;
}

/* ---- open / close -------------------------------------------------------------------- */

static void trcfile__writer_free(struct trcfile_writer *w)
{
	while (w->open_streams) {
		struct trcfile_stream *s = w->open_streams;
		w->open_streams = s->next;
		trcfile__chunk_free(s->cur);
		free(s);
	}
	trcfile__out_free(&w->out);
	while (w->pool) {
		struct trcfile__wchunk *c = w->pool;
		w->pool = c->next_free;
		trcfile__chunk_free(c);
	}
	for (unsigned i = 0; i < TRCFILE__MAX_THREADS; i++)
		free(w->done[i].slot);
	sem_destroy(&w->cq_sem);
	sem_destroy(&w->wq_sem);
	sem_destroy(&w->slots);
	sem_destroy(&w->store_slots);
	cds_wfcq_destroy(&w->cq_head, &w->cq_tail);
	cds_wfcq_destroy(&w->wq_head, &w->wq_tail);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->pool_lock);
	pthread_mutex_destroy(&w->hook_lock);
	free(w);
}

static void trcfile__stop_threads(struct trcfile_writer *w)
{
	/* Compressors first: once they are joined every chunk is in the write queue. The
	 * release stores pair with the acquire loads in the thread loops. */
	atomic_store_explicit(&w->stop_compress, true, memory_order_release);
	for (unsigned i = 0; i < w->compress_started; i++) {
		/* Idle-class compressors (TRCFILE_WRITER_STORE_WHEN_BEHIND) may wait long for a
		 * core on a busy machine: back to the normal class for what is left in the
		 * queue (at most max_chunks_in_flight chunks), as the background compressor's
		 * stop does. */
		trcfile__run_normally(w->compress_tids[i]);
		sem_post(&w->cq_sem);
	}
	for (unsigned i = 0; i < w->compress_started; i++)
		pthread_join(w->compress_tids[i], NULL);
	w->compress_started = 0;
	if (w->writer_started) {
		atomic_store_explicit(&w->stop_write, true, memory_order_release);
		sem_post(&w->wq_sem);
		pthread_join(w->writer_tid, NULL);
		w->writer_started = false;
	}
}

static struct trcfile_writer *trcfile__writer_open(int fd, const struct trcfile_header_info *h,
						   const struct trcfile_writer_opts *o, int *err,
						   char *spill_dir);

struct trcfile_writer *trcfile_writer_open_fd(int fd, const struct trcfile_header_info *h,
					      const struct trcfile_writer_opts *o, int *err)
{
	return trcfile__writer_open(fd, h, o, err, NULL);
}

/* spill_dir (malloc'd or NULL) is taken over, on failure too. */
static struct trcfile_writer *trcfile__writer_open(int fd, const struct trcfile_header_info *h,
						   const struct trcfile_writer_opts *o, int *err,
						   char *spill_dir)
{
	int e = 0;
	struct trcfile_writer *w = NULL;
	struct trcfile_writer_opts opts = {0};
	if (o)
		opts = *o;
	e = trcfile__out_check(fd, h);
	if (e)
		goto fail_fd;
	w = calloc(1, sizeof(*w));
	if (!w) {
		e = -ENOMEM;
		goto fail_fd;
	}
	w->zstd_level = opts.zstd_level ? opts.zstd_level : TRCFILE__DEFAULT_LEVEL;
	w->n_compress = opts.compress_threads ? opts.compress_threads : 1;
	if (w->n_compress > TRCFILE__MAX_THREADS)
		w->n_compress = TRCFILE__MAX_THREADS;
	w->chunk_bytes = opts.chunk_bytes ? opts.chunk_bytes : TRCFILE_DEFAULT_CHUNK_BYTES;
	if (w->chunk_bytes < TRCFILE_MIN_CHUNK_BYTES)
		w->chunk_bytes = TRCFILE_MIN_CHUNK_BYTES;
	if (w->chunk_bytes > TRCFILE_MAX_CHUNK_BYTES)
		w->chunk_bytes = TRCFILE_MAX_CHUNK_BYTES;
	unsigned in_flight =
		opts.max_chunks_in_flight ? opts.max_chunks_in_flight : 2 * w->n_compress + 2;
	w->flags = opts.flags;
	trcfile__out_init(&w->out, fd, h, w->chunk_bytes, w->zstd_level, opts.flags, spill_dir);
	spill_dir = NULL;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->pool_lock, NULL);
	pthread_mutex_init(&w->hook_lock, NULL);
	cds_wfcq_init(&w->cq_head, &w->cq_tail);
	cds_wfcq_init(&w->wq_head, &w->wq_tail);
	sem_init(&w->cq_sem, 0, 0);
	sem_init(&w->wq_sem, 0, 0);
	sem_init(&w->slots, 0, in_flight);
	/* Stored chunks wait only for the disk: a deeper queue rides out its pauses (writeback,
	 * a busy core) without holding the drain. */
	sem_init(&w->store_slots, 0, in_flight < TRCFILE__STORE_IN_FLIGHT ? TRCFILE__STORE_IN_FLIGHT
								       : in_flight);
	w->store_one_in = opts.store_one_in;
	/* Every chunk the pipeline can hold at once, and a few being filled. */
	w->pool_max = 2 * in_flight + TRCFILE__STORE_IN_FLIGHT + 8;
	w->store_when_behind = (opts.flags & TRCFILE_WRITER_STORE_WHEN_BEHIND) != 0;

	e = trcfile__out_header(&w->out, h);
	if (e)
		goto fail_w;

	if (w->flags & TRCFILE_WRITER_PREFAULT)
		w->prefault_chunks = in_flight + 3; /* the writer thread's first job */

	if (pthread_create(&w->writer_tid, NULL, trcfile__writer_main, w) != 0) {
		e = -EAGAIN;
		goto fail_w;
	}
	w->writer_started = true;
	uint32_t ring = 1;
	while (ring < in_flight)
		ring <<= 1;
	for (unsigned i = 0; i < w->n_compress; i++) {
		struct trcfile__done_ring *d = &w->done[i];
		d->w = w;
		d->mask = ring - 1;
		d->slot = calloc(ring, sizeof(*d->slot));
		if (!d->slot) {
			e = -ENOMEM;
			goto fail_threads;
		}
	}
	for (unsigned i = 0; i < w->n_compress; i++) {
		if (pthread_create(&w->compress_tids[i], NULL, trcfile__compress_main,
				   &w->done[i]) != 0) {
			e = -EAGAIN;
			goto fail_threads;
		}
		w->compress_started++;
	}
	return w;

fail_threads:
	trcfile__stop_threads(w);
fail_w:
	trcfile__writer_free(w);
fail_fd:
	close(fd);
	free(spill_dir); /* NULL once w took it */
	if (err)
		*err = e;
	return NULL;
}

struct trcfile_writer *trcfile_writer_open(const char *path, const struct trcfile_header_info *h,
					   const struct trcfile_writer_opts *o, int *err)
{
	if (!path) {
		if (err)
			*err = -EINVAL;
		return NULL;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		if (err)
			*err = -errno;
		return NULL;
	}
	/* The spill files go next to the trace (same file system, no tmpfs in memory). */
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (dir && !slash) {
		free(dir);
		dir = strdup(".");
	} else if (slash) {
		slash[slash == dir ? 1 : 0] = 0;
	}
	return trcfile__writer_open(fd, h, o, err, dir);
}

int trcfile_writer_close(struct trcfile_writer *w)
{
	return trcfile_writer_close_stats(w, NULL);
}

int trcfile_writer_close_stats(struct trcfile_writer *w, struct trcfile_writer_stats *st)
{
	if (st)
		memset(st, 0, sizeof(*st));
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->closing = true;
	pthread_mutex_unlock(&w->lock);
	/* No appends run now (contract), so the streams are ours. The last chunks wait for the
	 * compressors: storing them would only leave work for a compaction, and nothing is
	 * held back by waiting now. So trcfile_writer_chunks_stored read before close is final. */
	w->store_when_behind = false;
	for (struct trcfile_stream *s = w->open_streams; s; s = s->next)
		trcfile__submit(s);
	trcfile__stop_threads(w);
	int err = trcfile_writer_error(w);
	pthread_mutex_lock(&w->lock);
	while (!err && w->open_streams) {
		struct trcfile_stream *s = w->open_streams;
		err = trcfile__stream_retire(w, s);
		trcfile__chunk_free(s->cur);
		free(s);
	}
	pthread_mutex_unlock(&w->lock);
	if (!err) {
		err = trcfile__out_finish(&w->out);
		bool no_sync = (w->flags & TRCFILE_WRITER_NO_FSYNC) ||
			       ((w->flags & TRCFILE_WRITER_NO_FSYNC_IF_STORED) &&
				trcfile_writer_chunks_stored(w) > 0);
		if (!err && !no_sync)
			err = trcfile__out_sync(&w->out);
	}
	if (close(w->out.fd) != 0 && !err && errno != EINTR)
		err = -errno;
	if (st) {
		st->bytes_written = trcfile_writer_bytes_written(w);
		st->chunks_stored = trcfile_writer_chunks_stored(w);
		st->full_err = atomic_load_explicit(&w->out.full_err, memory_order_relaxed);
		st->full_lost_events = w->out.full_lost_events;
		st->full_events_unwritten = w->out.full_unwritten_events;
		st->full_records_unwritten = w->out.full_unwritten;
	}
	trcfile__writer_free(w);
	return err;
}
