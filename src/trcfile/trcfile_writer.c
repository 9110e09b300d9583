/* trcfile_writer.c - writes a trace file: header, chunks through a compression pipeline, footer.
 *
 * Purpose: take records per stream from the recorder's threads and turn them into the file
 * of FORMAT.md without ever compressing or writing on the appending thread.
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
 *   - open stream list, stream entry spill: mutex `lock` (stream_open, stream_end, close).
 *   - a stream's open chunk and coder: its one appending thread only.
 *   - chunk pool: mutex `pool_lock` (once per chunk, never per record).
 *   - index, file offset: writer thread only until it is joined, then close.
 *   - error: atomic, first error wins (compare-exchange from 0); bytes_written: relaxed
 *     atomic, accounting only.
 *
 * Memory that does not grow with the threads traced: a stream that ends
 * (trcfile_stream_end) writes its footer entry (final once its last chunk is submitted) into
 * a spill file at 32 x id and is freed; the writer thread keeps the chunk index's entries in a
 * small buffer and spills it when full. Close writes the open streams' entries and copies
 * both spills into the footer (trcfile_spill.h); the file is the same as when all was kept.
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

#include "trcfile_codec.h"
#include "trcfile_spill.h"
#include "pio.h"
#include "trcfile_idle.h"
#include "trcfile_stored.h"
#include "u64map.h"

/* Level 1: on span/counter streams it writes ~3x faster than level 3 and reads ~20% faster
 * (fewer literals to decode), for ~0.2 more bytes per event (bench_dump --level). */
#define TRCFILE__DEFAULT_LEVEL 1
#define TRCFILE__MAX_THREADS 64u
#define TRCFILE__STORE_IN_FLIGHT 16u /* stored chunks in flight, at least */
/* Open chunks (one per stream being appended) share this many bytes: a new chunk ends at the
 * smallest of chunk_bytes, its fair share (OPEN_BUDGET / open chunks) and what the open chunks
 * have left of the budget (the sum of their limits, open_bytes), never below OPEN_MIN_CHUNK.
 * So with a program's hundreds of busy threads the open chunks hold at most OPEN_BUDGET plus
 * OPEN_MIN_CHUNK per stream, not chunk_bytes per thread. (The fair share alone did not bound
 * the sum: chunks opened while few were open keep their size, and 200 streams starting at
 * once summed to ~90 MiB, as the harmonic series says.) Appending threads race only on the
 * sizes: concurrent openers may overshoot by a chunk each. */
#define TRCFILE__OPEN_BUDGET (32u << 20)
#define TRCFILE__OPEN_MIN_CHUNK (64u << 10)
/* TRCFILE_WRITER_LOSE_WHEN_FULL: chunks are stored only while the room left (free space, the
 * file size limit) is at least this, and at least STORE_ROOM_PER_STORED times the stored bytes
 * written so far. A stored chunk takes about three times the room of its compressed form, so
 * this way stored chunks hold at most about a fifth of the room the trace had, and a disk that
 * fills holds nearly the events the compressed trace would. */
#define TRCFILE__STORE_MIN_ROOM (64ull << 20)
#define TRCFILE__STORE_ROOM_PER_STORED 4u
/* Metadata chunks (names, threads, processes, modules) the full disk did not take are kept in
 * memory, up to this many bytes, and written at close ahead of the footer (the room made by
 * cutting event chunks off): without their names a trace's events are numbers. */
#define TRCFILE__KEEP_META_BYTES (8u << 20)

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

/* Chunk index entries the writer thread buffers before it spills them (footer image). */
#define TRCFILE__INDEX_BUF_ENTRIES 1024u

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

/* A metadata chunk the full disk did not take, kept for close. */
struct trcfile__kept {
	struct trcfile__chunk_hdr hdr;
	uint8_t *raw;
	size_t raw_len;
};

struct trcfile__weight {
	uint64_t weight, events; /* as trcfile__wchunk's */
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
	int fd;
	uint32_t chunk_bytes;
	int zstd_level;
	unsigned n_compress;
	uint32_t flags;

	pthread_mutex_t lock; /* open streams, the stream spill, closing */
	struct trcfile_stream *open_streams, *open_tail; /* not ended yet, by id */
	uint32_t n_streams; /* opened so far: the next id */
	bool closing;
	char *spill_dir; /* where the spill files go (NULL: $TMPDIR or /tmp) */
	struct trcfile__spill stream_spill; /* footer entries of ended streams at 32 x id */
	bool stream_spill_ready;

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

	/* writer thread only (then close) */
	uint64_t offset;
	uint64_t n_index; /* chunk index entries: spilled, then in index_buf */
	uint8_t *index_buf; /* footer images of the last entries (the last one always here) */
	uint32_t index_buf_n;
	uint64_t last_index_offset; /* the file offset of the last entry's chunk */
	struct trcfile__spill chunk_spill;
	bool chunk_spill_ready;

	_Atomic int error;
	_Atomic uint64_t bytes_written;
	_Atomic uint64_t chunks_stored;

	/* A full disk (TRCFILE_WRITER_LOSE_WHEN_FULL). full_err: 0, or the -errno of the write
	 * that found the disk full, set once by the writer thread; store_off: the room left is
	 * short, nothing more is stored, set by the writer thread. Both are read by appending
	 * threads (relaxed: flags; the chunks they concern go through the queues). */
	bool lose_when_full;
	bool regular; /* a regular file: its room can be asked */
	_Atomic int full_err;
	atomic_bool store_off;
	/* Raw bytes a new chunk may take (UINT64_MAX: no bound), set by the writer thread after
	 * each write: a quarter of the room left, in raw bytes at the compression ratio of the
	 * chunks written so far (the last one's alone would feed back: a small chunk compresses
	 * worse, which makes the next ones smaller still). So the last chunks before the disk fills are small once written, and so is the
	 * room the one that does not fit leaves unused. */
	_Atomic uint64_t room_raw;
	uint64_t fsize_limit; /* RLIMIT_FSIZE's soft limit at open; UINT64_MAX: none */
	uint32_t pid; /* the header's: the note's stream */
	/* writer thread until joined, then close */
	uint64_t stored_bytes; /* stored chunks written */
	uint64_t raw_total, comp_total; /* of the chunks written: their ratio sizes new ones */
	/* each index_buf entry's weight and events (lost if the chunk is cut off) */
	struct trcfile__weight *index_weight;
	struct trcfile__full_tally *tally; /* per stream: what was not written */
	size_t n_tally, cap_tally;
	struct u64map tally_of; /* stream id + 1 -> its index in tally */
	ZSTD_CCtx *wcctx; /* the writer thread's own: a stored chunk that did not fit */
	struct trcfile__kept *kept;
	size_t n_kept, cap_kept, kept_bytes;
	uint64_t full_lost_events, full_unwritten, full_unwritten_events;

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
	return atomic_load_explicit(&((struct trcfile_writer *)w)->bytes_written,
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

/* Faults n bytes at p in: one store a page (4 KiB here; larger pages are covered too). */
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
 * trcfile_writer_open: 7 MiB at the defaults, at ~2 us a page here ~4 ms, about half of what
 * trace-run spent before the program could start
 * (perf: trace-run -- /bin/true took 14.5 ms, /bin/true 2.2); this way it overlaps the
 * program's start. It makes chunks rather than warming pooled ones it would hold meanwhile:
 * appenders that find the pool empty make their own, and those count (held, 200 threads
 * starting at once added them on top: threads-200 recorder RSS 41.5-57.7 MiB, median 51.6,
 * against 41.5-47.6, median 44.1, counted). */
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

static int trcfile__compress(struct trcfile_writer *w, ZSTD_CCtx *cctx, struct trcfile__wchunk *c)
{
	size_t bound = ZSTD_compressBound(c->raw_len) + TRCFILE__CHUNK_HDR_BYTES;
	if (c->out_cap < bound) {
		uint8_t *out = realloc(c->out, bound);
		if (!out)
			return -ENOMEM;
		c->out = out;
		c->out_cap = bound;
	}
	size_t n = ZSTD_compress2(cctx, c->out + TRCFILE__CHUNK_HDR_BYTES,
				  c->out_cap - TRCFILE__CHUNK_HDR_BYTES, c->raw, c->raw_len);
	if (ZSTD_isError(n))
		return -EIO;
	if (n > UINT32_MAX)
		return -EFBIG;
	c->hdr.raw_bytes = (uint32_t)c->raw_len;
	c->hdr.comp_bytes = (uint32_t)n;
	trcfile__chunk_hdr_put(c->out, &c->hdr);
	c->out_len = TRCFILE__CHUNK_HDR_BYTES + n;
	return 0;
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
	 * idle CPU. At nice +10 they still took a tenth of the drain's CPU once the recorder was
	 * confined to it (recorder_place.h) and, unconfined, of the producer's: work_events 10 M,
	 * 11 runs, 1.25x the bare loop against 1.08x idle (with placement's fixes). */
	if ((w->flags & TRCFILE_WRITER_BACKGROUND) && (w->flags & TRCFILE_WRITER_STORE_WHEN_BEHIND))
		trcfile__run_when_idle();
	else
		trcfile__maybe_background(w);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (cctx) {
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, w->zstd_level);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
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
		    !atomic_load_explicit(&w->full_err, memory_order_relaxed)) {
			int err = trcfile__compress(w, cctx, c);
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

/* Appends a chunk's index entry (its footer image) to the buffer, spilling the buffer first
 * when it is full, so the last entry can still be taken back (trcfile__index_drop_last). */
static int trcfile__index_add(struct trcfile_writer *w, uint64_t off,
			      const struct trcfile__chunk_hdr *h)
{
	if (!w->index_buf) {
		w->index_buf =
			malloc((size_t)TRCFILE__INDEX_BUF_ENTRIES * TRCFILE__FOOTER_CHUNK_BYTES);
		w->index_weight = calloc(TRCFILE__INDEX_BUF_ENTRIES, sizeof(*w->index_weight));
		if (!w->index_buf || !w->index_weight)
			return -ENOMEM;
	}
	if (w->index_buf_n == TRCFILE__INDEX_BUF_ENTRIES) {
		if (!w->chunk_spill_ready) {
			trcfile__spill_init(&w->chunk_spill, w->spill_dir);
			w->chunk_spill_ready = true;
		}
		size_t bytes = (size_t)w->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES;
		int err = trcfile__spill_pwrite(&w->chunk_spill, w->index_buf, bytes,
						w->chunk_spill.len);
		if (err)
			return err;
		w->index_buf_n = 0;
	}
	struct trcfile__footer_chunk e = {.offset = off,
					  .stream_id = h->stream_id,
					  .seq = h->seq,
					  .first_ts = h->first_ts,
					  .last_ts = h->last_ts,
					  .count = h->count,
					  .raw_bytes = h->raw_bytes,
					  .comp_bytes = h->comp_bytes};
	trcfile__footer_chunk_put(
		w->index_buf + (size_t)w->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES, &e);
	w->index_weight[w->index_buf_n] = (struct trcfile__weight){0, 0};
	w->index_buf_n++;
	w->n_index++;
	w->last_index_offset = off;
	return 0;
}

/* Takes back the entry just added for the chunk at off, when its write failed. */
static void trcfile__index_drop_last(struct trcfile_writer *w, uint64_t off)
{
	if (w->index_buf_n && w->last_index_offset == off) {
		w->index_buf_n--;
		w->n_index--;
	}
}

/* ---- a full disk (TRCFILE_WRITER_LOSE_WHEN_FULL) ----------------------------------------- */

static bool trcfile__is_full_err(int err)
{
	return err == -ENOSPC || err == -EFBIG;
}

static bool trcfile__full(struct trcfile_writer *w)
{
	return atomic_load_explicit(&w->full_err, memory_order_relaxed) != 0;
}

/* Counts the chunk h (weight: what trcfile__wchunk.weight says) as not written. Writer thread,
 * then close. 0 or -ENOMEM. */
static int trcfile__tally(struct trcfile_writer *w, const struct trcfile__chunk_hdr *h,
			  struct trcfile__weight wt)
{
	uint64_t key = (uint64_t)h->stream_id + 1;
	const uint64_t *v = u64map_get(&w->tally_of, key);
	struct trcfile__full_tally *t;
	if (v) {
		t = &w->tally[*v];
	} else {
		if (w->n_tally == w->cap_tally) {
			size_t cap = w->cap_tally ? 2 * w->cap_tally : 16;
			struct trcfile__full_tally *m = realloc(w->tally, cap * sizeof(*m));
			if (!m)
				return -ENOMEM;
			w->tally = m;
			w->cap_tally = cap;
		}
		if (u64map_put(&w->tally_of, key, w->n_tally, NULL, NULL))
			return -ENOMEM;
		t = &w->tally[w->n_tally++];
		*t = (struct trcfile__full_tally){
			.stream_id = h->stream_id, .min_seq = h->seq, .first_ts = h->first_ts};
	}
	if (h->seq < t->min_seq)
		t->min_seq = h->seq;
	if (h->first_ts < t->first_ts)
		t->first_ts = h->first_ts;
	t->chunks++;
	t->records += h->count;
	t->events += wt.weight;
	w->full_lost_events += wt.weight;
	w->full_unwritten_events += wt.events;
	w->full_unwritten += h->count;
	return 0;
}

/* Keeps a copy of metadata chunk c for close (TRCFILE__KEEP_META_BYTES). 0, or -ENOSPC when
 * there is no room left for it, -ENOMEM. Writer thread. */
static int trcfile__keep(struct trcfile_writer *w, const struct trcfile__wchunk *c)
{
	if (c->hdr.kind != TRC_STREAM_META || !c->raw_len ||
	    c->raw_len > TRCFILE__KEEP_META_BYTES - w->kept_bytes)
		return -ENOSPC;
	if (w->n_kept == w->cap_kept) {
		size_t cap = w->cap_kept ? 2 * w->cap_kept : 16;
		struct trcfile__kept *k = realloc(w->kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		w->kept = k;
		w->cap_kept = cap;
	}
	uint8_t *raw = malloc(c->raw_len);
	if (!raw)
		return -ENOMEM;
	memcpy(raw, c->raw, c->raw_len);
	w->kept[w->n_kept++] = (struct trcfile__kept){.hdr = c->hdr, .raw = raw, .raw_len = c->raw_len};
	w->kept_bytes += c->raw_len;
	return 0;
}

/* c is not written: the disk is full. Counted lost, or kept for close if it is metadata.
 * Writer thread. */
static void trcfile__drop(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (c->stored && !c->drop)
		atomic_fetch_sub_explicit(&w->chunks_stored, 1, memory_order_relaxed);
	if (trcfile__keep(w, c) == 0)
		return;
	int err = trcfile__tally(w, &c->hdr, (struct trcfile__weight){c->weight, c->events});
	if (err)
		trcfile__set_error(w, err);
}

/* Writing c failed with err: the sticky error, or, for a full disk that may lose, the start
 * of the dropping (c is the first chunk dropped). Writer thread. */
static void trcfile__write_failed(struct trcfile_writer *w, struct trcfile__wchunk *c, int err)
{
	if (!w->lose_when_full || !trcfile__is_full_err(err)) {
		trcfile__set_error(w, err);
		return;
	}
	int expected = 0;
	atomic_compare_exchange_strong_explicit(&w->full_err, &expected, err,
						memory_order_relaxed, memory_order_relaxed);
	atomic_store_explicit(&w->store_off, true, memory_order_relaxed);
	trcfile__drop(w, c);
}

/* Publishes the room left (room_raw; h: the chunk written last, NULL: none yet), and stops
 * storing once it is short (TRCFILE__STORE_MIN_ROOM). Writer thread, after a write; one
 * fstatvfs. */
static void trcfile__check_room(struct trcfile_writer *w, const struct trcfile__chunk_hdr *h)
{
	if (!w->lose_when_full || !w->regular)
		return;
	uint64_t room = UINT64_MAX;
	struct statvfs sv;
	if (fstatvfs(w->fd, &sv) == 0)
		room = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (w->fsize_limit != UINT64_MAX) {
		uint64_t left = w->fsize_limit > w->offset ? w->fsize_limit - w->offset : 0;
		if (left < room)
			room = left;
	}
	if (h) {
		w->raw_total += h->raw_bytes;
		w->comp_total += h->comp_bytes;
	}
	uint64_t raw = UINT64_MAX;
	if (room != UINT64_MAX && w->comp_total && w->raw_total < UINT64_MAX / 16) {
		uint64_t ratio_x16 = w->raw_total * 16 / w->comp_total;
		raw = room / 4 > UINT64_MAX / 16 / (ratio_x16 + 1) ? UINT64_MAX
								     : room / 4 * ratio_x16 / 16;
	} else if (room != UINT64_MAX) {
		raw = room / 4;
	}
	atomic_store_explicit(&w->room_raw, raw, memory_order_relaxed);
	uint64_t want = TRCFILE__STORE_MIN_ROOM;
	if (w->stored_bytes > want / TRCFILE__STORE_ROOM_PER_STORED)
		want = w->stored_bytes * TRCFILE__STORE_ROOM_PER_STORED;
	if (room < want)
		atomic_store_explicit(&w->store_off, true, memory_order_relaxed);
}

/* ---- the writer thread's writes -------------------------------------------------------- */

/* Writes a chunk (header h; its bytes a, then b) at the file's end and indexes it with its
 * weight. On failure cuts the file back to the end of the last whole chunk (best effort: a
 * reader also stops at a partial chunk on its own). Writer thread. 0 or -errno. */
static int trcfile__put(struct trcfile_writer *w, const struct trcfile__chunk_hdr *h,
			const void *a, size_t an, const void *b, size_t bn,
			const struct trcfile__wchunk *c)
{
	int err = trcfile__index_add(w, w->offset, h);
	if (!err)
		err = pio_pwrite_all(w->fd, a, an, w->offset);
	if (!err && bn)
		err = pio_pwrite_all(w->fd, b, bn, w->offset + an);
	if (err) {
		trcfile__index_drop_last(w, w->offset);
		if (ftruncate(w->fd, (off_t)w->offset) != 0) {
			/* nothing more to do: the caller records the error */
		}
		return err;
	}
	w->index_weight[w->index_buf_n - 1] = (struct trcfile__weight){c->weight, c->events};
	w->offset += an + bn;
	atomic_fetch_add_explicit(&w->bytes_written, an + bn, memory_order_relaxed);
	return 0;
}

static void trcfile__write_chunk(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (trcfile_writer_error(w))
		return;
	if (trcfile__full(w)) {
		trcfile__drop(w, c);
		return;
	}
	if (!c->out_len)
		return;
	int err = trcfile__put(w, &c->hdr, c->out, c->out_len, NULL, 0, c);
	if (err)
		trcfile__write_failed(w, c, err);
	else
		trcfile__check_room(w, &c->hdr);
}

/* The stored chunk c that did not fit, compressed on the writer thread: it may fit so. 0 or
 * -errno. */
static int trcfile__write_compressed_instead(struct trcfile_writer *w, struct trcfile__wchunk *c)
{
	if (!w->wcctx) {
		w->wcctx = ZSTD_createCCtx();
		if (!w->wcctx)
			return -ENOMEM;
		ZSTD_CCtx_setParameter(w->wcctx, ZSTD_c_compressionLevel, w->zstd_level);
		ZSTD_CCtx_setParameter(w->wcctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(w->wcctx, ZSTD_c_contentSizeFlag, 1);
	}
	c->hdr.flags = 0;
	c->hdr.payload_crc = 0;
	int err = trcfile__compress(w, w->wcctx, c);
	if (!err)
		err = trcfile__put(w, &c->hdr, c->out, c->out_len, NULL, 0, c);
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
	if (c->drop || trcfile__full(w)) {
		trcfile__drop(w, c);
		return;
	}
	c->hdr.raw_bytes = (uint32_t)c->raw_len;
	c->hdr.comp_bytes = (uint32_t)c->raw_len;
	c->hdr.flags = TRCFILE__CHUNK_STORED;
	c->hdr.payload_crc = trcfile__crc32c_fast(0, c->raw, c->raw_len);
	uint8_t hdr[TRCFILE__CHUNK_HDR_BYTES];
	trcfile__chunk_hdr_put(hdr, &c->hdr);
	uint64_t at = w->offset;
	int err = trcfile__put(w, &c->hdr, hdr, sizeof(hdr), c->raw, c->raw_len, c);
	if (err && w->lose_when_full && trcfile__is_full_err(err)) {
		/* Stored, it takes about three times the room it would compressed: from now on
		 * nothing is stored, and this one may fit compressed. */
		atomic_store_explicit(&w->store_off, true, memory_order_relaxed);
		int e = trcfile__write_compressed_instead(w, c);
		if (!e)
			return;
		err = trcfile__is_full_err(e) ? e : err;
	}
	if (err) {
		trcfile__write_failed(w, c, err);
		return;
	}
	w->stored_bytes += sizeof(hdr) + c->raw_len;
	trcfile__check_room(w, &c->hdr);
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
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
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
	if (w->closing || w->n_streams == UINT32_MAX) {
		pthread_mutex_unlock(&w->lock);
		free(s);
		return NULL;
	}
	s->id = w->n_streams++;
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
	if (!w->stream_spill_ready) {
		trcfile__spill_init(&w->stream_spill, w->spill_dir);
		w->stream_spill_ready = true;
	}
	uint8_t img[TRCFILE__FOOTER_STREAM_BYTES];
	trcfile__footer_stream_put(img, &(struct trcfile__footer_stream){.id = s->id,
									 .kind = s->kind,
									 .pid = s->pid,
									 .tid = s->tid,
									 .chunks = s->chunks,
									 .records = s->records});
	int err = trcfile__spill_pwrite(&w->stream_spill, img, sizeof(img),
					(uint64_t)s->id * TRCFILE__FOOTER_STREAM_BYTES);
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
	if (w->lose_when_full && trcfile__full(w)) {
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
	bool may_store = !atomic_load_explicit(&w->store_off, memory_order_relaxed);
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
	uint64_t room = atomic_load_explicit(&w->room_raw, memory_order_relaxed);
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
	uint8_t img[64 * TRCFILE__FOOTER_STREAM_BYTES];
	int err = 0;
	pthread_mutex_lock(&w->lock);
	if (!w->stream_spill_ready) {
		trcfile__spill_init(&w->stream_spill, w->spill_dir);
		w->stream_spill_ready = true;
	}
	for (size_t i = 0; i < n && !err;) {
		size_t k = n - i < 64 ? n - i : 64;
		if (w->closing || (uint64_t)w->n_streams + k > UINT32_MAX) {
			err = -EINVAL;
			break;
		}
		for (size_t j = 0; j < k; j++) {
			struct trcfile__footer_stream f = e[i + j];
			f.id = w->n_streams + (uint32_t)j;
			trcfile__footer_stream_put(img + j * TRCFILE__FOOTER_STREAM_BYTES, &f);
		}
		err = trcfile__spill_pwrite(&w->stream_spill, img, k * TRCFILE__FOOTER_STREAM_BYTES,
					    (uint64_t)w->n_streams * TRCFILE__FOOTER_STREAM_BYTES);
		if (!err)
			w->n_streams += (uint32_t)k;
		i += k;
	}
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
	if (w->stream_spill_ready)
		trcfile__spill_free(&w->stream_spill);
	if (w->chunk_spill_ready)
		trcfile__spill_free(&w->chunk_spill);
	free(w->index_buf);
	free(w->index_weight);
	free(w->tally);
	for (size_t i = 0; i < w->n_kept; i++)
		free(w->kept[i].raw);
	free(w->kept);
	u64map_destroy(&w->tally_of);
	ZSTD_freeCCtx(w->wcctx);
	free(w->spill_dir);
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
	uint8_t *hbuf = NULL;
	struct trcfile_writer_opts opts = {0};
	if (o)
		opts = *o;
	const char *host = h && h->host ? h->host : "";
	const char *tool = h && h->tool_version ? h->tool_version : "";
	size_t host_len = strlen(host), tool_len = strlen(tool);
	if (fd < 0 || !h || (h->cmdline_len && !h->cmdline) ||
	    h->cmdline_len > TRCFILE_MAX_STRING_BYTES || host_len > TRCFILE_MAX_STRING_BYTES ||
	    tool_len > TRCFILE_MAX_STRING_BYTES) {
		e = -EINVAL;
		goto fail_fd;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		e = -ENOMEM;
		goto fail_fd;
	}
	w->spill_dir = spill_dir;
	spill_dir = NULL;
	w->fd = fd;
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
	w->lose_when_full = (opts.flags & TRCFILE_WRITER_LOSE_WHEN_FULL) != 0;
	w->pid = h->pid;
	struct rlimit fsize;
	w->fsize_limit = getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY
				 ? (uint64_t)fsize.rlim_cur
				 : UINT64_MAX;
	struct stat fst;
	w->regular = fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode);
	u64map_init(&w->tally_of, SIZE_MAX);
	atomic_init(&w->room_raw, UINT64_MAX);
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

	struct trcfile__file_hdr fh = {
		.version_major = TRCFILE_VERSION_MAJOR,
		.version_minor = TRCFILE_VERSION_MINOR,
		.pid = h->pid,
		.clock_source = h->clock_source,
		.tsc_hz = h->tsc_hz,
		.start_mono_ns = h->start_mono_ns,
		.start_realtime_ns = h->start_realtime_ns,
		.rss_interval_ns = h->rss_interval_ns,
		.rss_source = h->rss_source,
		.chunk_bytes = w->chunk_bytes,
		.buffer_bytes = h->buffer_bytes,
		.flags = h->when_full & TRCFILE_HDR_WHEN_FULL_MASK,
		.cmdline = h->cmdline,
		.cmdline_len = h->cmdline_len,
		.host = host,
		.host_len = (uint32_t)host_len,
		.tool = tool,
		.tool_len = (uint32_t)tool_len,
		.alloc_stacks = h->alloc_stacks,
		.stack_depth = h->stack_depth,
		.sample_bytes = h->sample_bytes,
	};
	size_t hbytes = trcfile__header_size(&fh);
	fh.header_bytes = (uint32_t)hbytes;
	hbuf = malloc(hbytes);
	if (!hbuf) {
		e = -ENOMEM;
		goto fail_w;
	}
	trcfile__header_put(hbuf, &fh);
	e = pio_pwrite_all(fd, hbuf, hbytes, 0);
	free(hbuf);
	if (e)
		goto fail_w;
	w->offset = hbytes;
	atomic_store_explicit(&w->bytes_written, hbytes, memory_order_relaxed);
	trcfile__check_room(w, NULL); /* a disk short of room from the start: nothing stored */

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

/* Appends n bytes to the footer being written at *pos, chaining its crc. */
static int trcfile__footer_out(struct trcfile_writer *w, const void *buf, size_t n, uint64_t *pos,
			       uint32_t *crc)
{
	int err = pio_pwrite_all(w->fd, buf, n, *pos);
	if (err)
		return err;
	*crc = trcfile__crc32c(*crc, buf, n);
	*pos += n;
	return 0;
}

/* Copies [0, n) of a spill into the footer, through buf. */
static int trcfile__footer_copy(struct trcfile_writer *w, const struct trcfile__spill *sp,
				uint64_t n, uint8_t *buf, size_t buf_len, uint64_t *pos,
				uint32_t *crc)
{
	for (uint64_t off = 0; off < n;) {
		size_t k = n - off < buf_len ? (size_t)(n - off) : buf_len;
		int err = trcfile__spill_pread(sp, buf, k, off);
		if (!err)
			err = trcfile__footer_out(w, buf, k, pos, crc);
		if (err)
			return err;
		off += k;
	}
	return 0;
}

/* The footer (FORMAT.md), written piece by piece from the spills so that its size never sits
 * in memory: the fixed part, the streams' entries by id, the chunk index (and n_extra more
 * entries' images, extra: a full disk's lost chunks), the trailer. Every stream is retired
 * (its entry in the stream spill). */
static int trcfile__write_footer(struct trcfile_writer *w, const uint8_t *extra, size_t n_extra)
{
	size_t n_streams = w->n_streams;
	uint64_t n_chunks = w->n_index + n_extra;
	uint64_t bytes = trcfile__footer_bytes(n_streams, n_chunks);
	uint64_t stream_bytes = (uint64_t)n_streams * TRCFILE__FOOTER_STREAM_BYTES;
	if (n_streams && (!w->stream_spill_ready || w->stream_spill.len != stream_bytes))
		return -EIO; /* a stream without its entry: cannot happen */
	uint64_t spilled = w->chunk_spill_ready ? w->chunk_spill.len : 0;
	if (spilled + (uint64_t)w->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES !=
	    w->n_index * TRCFILE__FOOTER_CHUNK_BYTES)
		return -EIO;
	const size_t buf_len = 64u << 10;
	uint8_t *buf = malloc(buf_len);
	if (!buf)
		return -ENOMEM;
	uint64_t pos = w->offset;
	uint32_t crc = 0;
	uint8_t fixed[TRCFILE__FOOTER_FIXED_BYTES];
	trcfile__footer_put(fixed, &(struct trcfile__footer){.stream_count = (uint32_t)n_streams,
							     .chunk_count = n_chunks});
	int err = trcfile__footer_out(w, fixed, sizeof(fixed), &pos, &crc);
	if (!err && n_streams)
		err = trcfile__footer_copy(w, &w->stream_spill, stream_bytes, buf, buf_len, &pos,
					   &crc);
	if (!err && spilled)
		err = trcfile__footer_copy(w, &w->chunk_spill, spilled, buf, buf_len, &pos, &crc);
	if (!err && w->index_buf_n)
		err = trcfile__footer_out(w, w->index_buf,
					  (size_t)w->index_buf_n * TRCFILE__FOOTER_CHUNK_BYTES,
					  &pos, &crc);
	if (!err && n_extra)
		err = trcfile__footer_out(w, extra, n_extra * TRCFILE__FOOTER_CHUNK_BYTES, &pos,
					  &crc);
	if (!err) {
		uint8_t tr[TRCFILE__TRAILER_BYTES];
		struct trcfile__trailer t = {
			.footer_offset = w->offset, .footer_bytes = bytes, .footer_crc = crc};
		trcfile__trailer_put(tr, &t);
		err = pio_pwrite_all(w->fd, tr, sizeof(tr), pos);
	}
	free(buf);
	if (!err)
		atomic_fetch_add_explicit(&w->bytes_written, bytes + TRCFILE__TRAILER_BYTES,
					  memory_order_relaxed);
	else if (ftruncate(w->fd, (off_t)w->offset) != 0) {
		/* best effort, as in trcfile__write_chunk */
	}
	return err;
}

/* ---- the end of a trace whose disk filled ----------------------------------------------- */

/* Appends the chunk h (its records: raw_len bytes at raw), compressed with cctx, to *buf (*len
 * bytes of *cap) for file offset off; its index entry's image at img. 0 or -errno. */
static int trcfile__end_chunk(struct trcfile_writer *w, ZSTD_CCtx *cctx,
			      const struct trcfile__chunk_hdr *h, const uint8_t *raw, size_t raw_len,
			      uint64_t off, uint8_t **buf, size_t *len, size_t *cap, uint8_t *img)
{
	struct trcfile__wchunk *c = trcfile__chunk_get(w, raw_len);
	if (!c)
		return -ENOMEM;
	c->hdr = *h;
	c->hdr.flags = 0;
	c->hdr.payload_crc = 0;
	memcpy(c->raw, raw, raw_len);
	c->raw_len = raw_len;
	int err = trcfile__compress(w, cctx, c);
	if (!err && *cap - *len < c->out_len) {
		size_t ncap = 2 * (*cap + c->out_len);
		uint8_t *nb = realloc(*buf, ncap);
		if (!nb)
			err = -ENOMEM;
		else {
			*buf = nb;
			*cap = ncap;
		}
	}
	if (!err) {
		memcpy(*buf + *len, c->out, c->out_len);
		*len += c->out_len;
		trcfile__footer_chunk_put(img, &(struct trcfile__footer_chunk){
						       .offset = off,
						       .stream_id = c->hdr.stream_id,
						       .seq = c->hdr.seq,
						       .first_ts = c->hdr.first_ts,
						       .last_ts = c->hdr.last_ts,
						       .count = c->hdr.count,
						       .raw_bytes = c->hdr.raw_bytes,
						       .comp_bytes = c->hdr.comp_bytes});
	}
	trcfile__chunk_free(c);
	return err;
}

/* trcfile__end_chunk of a chunk of stream st, seq, holding the one record r. */
static int trcfile__end_record(struct trcfile_writer *w, ZSTD_CCtx *cctx,
			       const struct trcfile__footer_stream *st, uint32_t seq,
			       const struct trc_record *r, uint64_t off, uint8_t **buf, size_t *len,
			       size_t *cap, uint8_t *img)
{
	long need = trcfile__record_max_bytes(r);
	if (need < 0)
		return (int)need;
	uint8_t *raw = malloc((size_t)need);
	if (!raw)
		return -ENOMEM;
	struct trcfile__coder coder;
	trcfile__coder_reset(&coder, r->ts_ns);
	size_t raw_len = (size_t)(trcfile__encode(raw, r, &coder) - raw);
	struct trcfile__chunk_hdr h = {.stream_id = st->id,
				       .seq = seq,
				       .kind = st->kind,
				       .pid = st->pid,
				       .tid = st->tid,
				       .first_ts = r->ts_ns,
				       .last_ts = r->ts_ns,
				       .count = 1};
	int err = trcfile__end_chunk(w, cctx, &h, raw, raw_len, off, buf, len, cap, img);
	free(raw);
	return err;
}

/* Cuts the last whole chunk off the file (to make room for the footer) and counts it lost.
 * false when there is none left to cut (its index entry spilled already). Close. */
static bool trcfile__cut_last(struct trcfile_writer *w)
{
	if (!w->index_buf_n)
		return false;
	uint32_t i = w->index_buf_n - 1;
	struct trcfile__footer_chunk e;
	const char *why;
	if (trcfile__footer_chunk_get(w->index_buf + (size_t)i * TRCFILE__FOOTER_CHUNK_BYTES, &e,
				      &why) != 0 ||
	    e.offset > w->offset)
		return false;
	struct trcfile__chunk_hdr h = {
		.stream_id = e.stream_id, .seq = e.seq, .first_ts = e.first_ts, .count = e.count};
	if (trcfile__tally(w, &h, w->index_weight[i]) != 0)
		return false;
	w->index_buf_n--;
	w->n_index--;
	atomic_fetch_sub_explicit(&w->bytes_written, w->offset - e.offset, memory_order_relaxed);
	w->offset = e.offset;
	return ftruncate(w->fd, (off_t)w->offset) == 0;
}

/* The note of a full disk (FORMAT.md "lost", reason 7). */
static void trcfile__full_note(const struct trcfile_writer *w, char *buf, size_t len)
{
	int err = atomic_load_explicit(&((struct trcfile_writer *)w)->full_err,
				       memory_order_relaxed);
	snprintf(buf, len,
		 "the disk filled while recording (%s): %" PRIu64 " events were not written "
		 "and are counted lost (reason disk_full), %" PRIu64
		 " records in all (RSS samples and metadata among them)",
		 err == -EFBIG ? "the file size limit" : strerror(-err), w->full_lost_events,
		 w->full_unwritten);
}

/* Writes what the streams lost (a chunk with one lost record, reason disk full, for each
 * stream that lost events, at its first lost chunk's seq and time), a note in a meta stream
 * of its own, and the footer, whose stream entries count what the file holds. Where those do
 * not fit, the last whole chunks are cut off, and counted lost too, until they do. Close, the
 * threads joined and every stream retired. 0 or -errno. */
static int trcfile__write_full_end(struct trcfile_writer *w)
{
	ZSTD_CCtx *cctx = w->wcctx ? w->wcctx : (w->wcctx = ZSTD_createCCtx());
	if (!cctx)
		return -ENOMEM;
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, w->zstd_level);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
	if (w->n_streams == UINT32_MAX)
		return -EFBIG;
	if (!w->stream_spill_ready) {
		trcfile__spill_init(&w->stream_spill, w->spill_dir);
		w->stream_spill_ready = true;
	}
	/* The note's stream: the last id. */
	struct trcfile__footer_stream note_st = {
		.id = w->n_streams, .kind = TRC_STREAM_META, .pid = w->pid, .chunks = 1, .records = 1};
	uint8_t img[TRCFILE__FOOTER_STREAM_BYTES];
	trcfile__footer_stream_put(img, &note_st);
	int err = trcfile__spill_pwrite(&w->stream_spill, img, sizeof(img),
					(uint64_t)note_st.id * TRCFILE__FOOTER_STREAM_BYTES);
	if (err)
		return err;
	w->n_streams++;
	uint8_t *buf = NULL, *extra = NULL;
	size_t cap = 0;
	for (;;) {
		size_t len = 0, n_extra = 0;
		free(extra);
		extra = malloc((w->n_kept + w->n_tally + 1) * TRCFILE__FOOTER_CHUNK_BYTES);
		if (!extra) {
			err = -ENOMEM;
			break;
		}
		/* The metadata first, as it was (its streams' entries count it already). */
		for (size_t i = 0; i < w->n_kept && !err; i++, n_extra++)
			err = trcfile__end_chunk(w, cctx, &w->kept[i].hdr, w->kept[i].raw,
						 w->kept[i].raw_len, w->offset + len, &buf, &len,
						 &cap, extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
		uint64_t first_ts = UINT64_MAX;
		for (size_t i = 0; i < w->n_tally && !err; i++) {
			struct trcfile__full_tally *t = &w->tally[i];
			uint64_t at = (uint64_t)t->stream_id * TRCFILE__FOOTER_STREAM_BYTES;
			const char *why;
			if (!t->have_entry) {
				err = t->stream_id < note_st.id
					      ? trcfile__spill_pread(&w->stream_spill, img,
								     sizeof(img), at)
					      : -EIO;
				if (!err && trcfile__footer_stream_get(img, &t->entry, &why))
					err = -EIO;
				if (err)
					break;
				t->have_entry = true;
			}
			if (t->chunks > t->entry.chunks || t->records > t->entry.records) {
				err = -EIO; /* more lost than the stream had: cannot happen */
				break;
			}
			if (t->first_ts < first_ts)
				first_ts = t->first_ts;
			struct trcfile__footer_stream e = t->entry;
			e.chunks -= t->chunks;
			e.records -= t->records;
			if (t->events) {
				struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = t->first_ts};
				r.lost.count = t->events;
				r.lost.reason = TRC_LOST_DISK_FULL;
				err = trcfile__end_record(
					w, cctx, &t->entry, t->min_seq, &r, w->offset + len, &buf,
					&len, &cap, extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
				n_extra++;
				e.chunks++;
				e.records++;
			}
			trcfile__footer_stream_put(img, &e);
			if (!err)
				err = trcfile__spill_pwrite(&w->stream_spill, img, sizeof(img), at);
		}
		if (!err) {
			char text[320];
			trcfile__full_note(w, text, sizeof(text));
			struct trc_record r = {.type = TRC_REC_NOTE,
					       .ts_ns = first_ts == UINT64_MAX ? 0 : first_ts};
			r.note.text = text;
			r.note.len = (uint32_t)strlen(text);
			err = trcfile__end_record(w, cctx, &note_st, 0, &r, w->offset + len, &buf,
						  &len, &cap,
						  extra + n_extra * TRCFILE__FOOTER_CHUNK_BYTES);
			n_extra++;
		}
		if (err)
			break;
		uint64_t at = w->offset;
		err = pio_pwrite_all(w->fd, buf, len, at);
		if (!err) {
			w->offset += len;
			err = trcfile__write_footer(w, extra, n_extra);
			if (!err) {
				atomic_fetch_add_explicit(&w->bytes_written, len,
							  memory_order_relaxed);
				break;
			}
			w->offset = at;
		}
		if (ftruncate(w->fd, (off_t)at) != 0 || !trcfile__is_full_err(err) ||
		    !trcfile__cut_last(w))
			break;
		err = 0;
	}
	free(buf);
	free(extra);
	return err;
}

int trcfile_writer_close(struct trcfile_writer *w)
{
	return trcfile_writer_close_stats(w, NULL);
}

/* 0 or -errno: a file that cannot be synced (EINVAL, EROFS: a pipe, a read-only mount) is no
 * error. */
static int trcfile__fsync(int fd)
{
	return fsync(fd) != 0 && errno != EINVAL && errno != EROFS ? -errno : 0;
}

int trcfile_sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = trcfile__fsync(fd);
	close(fd);
	return err;
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
		err = trcfile__full(w) ? trcfile__write_full_end(w) : trcfile__write_footer(w, NULL, 0);
		bool no_sync = (w->flags & TRCFILE_WRITER_NO_FSYNC) ||
			       ((w->flags & TRCFILE_WRITER_NO_FSYNC_IF_STORED) &&
				trcfile_writer_chunks_stored(w) > 0);
		if (!err && !no_sync)
			err = trcfile__fsync(w->fd);
	}
	if (close(w->fd) != 0 && !err && errno != EINTR)
		err = -errno;
	if (st) {
		st->bytes_written = trcfile_writer_bytes_written(w);
		st->chunks_stored = trcfile_writer_chunks_stored(w);
		st->full_err = atomic_load_explicit(&w->full_err, memory_order_relaxed);
		st->full_lost_events = w->full_lost_events;
		st->full_events_unwritten = w->full_unwritten_events;
		st->full_records_unwritten = w->full_unwritten;
	}
	trcfile__writer_free(w);
	return err;
}
