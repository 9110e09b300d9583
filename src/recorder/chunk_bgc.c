/* chunk_bgc.c - the background compressor of stored chunks (chunk_bgc.h).
 *
 * Concurrency: the writer thread (normal priority: the drain waits for it) hands notes to the
 * compressor thread (SCHED_IDLE: it may wait for a core as long as the machine is busy). So
 * the writer must never wait for the compressor: no lock is shared between them. The queue is
 * a single-producer single-consumer ring (the hook on the writer thread produces, the thread
 * consumes) with a semaphore that counts its entries (sem_post never blocks).
 *
 *   operation               thread            may run concurrently with          blocks
 *   trcfile__bgc_hook       writer            the thread's pop                   never
 *   the thread's pop        compressor        the hook                           sem_wait
 *   trcfile_bgc_start/stop  the recorder's    the hook (until unhooked), the     stop: join
 *                                             thread
 *   min_bytes               set by start after hooking (the hook may run): atomic, relaxed
 */
#include "chunk_bgc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "trcfile.h"
#include "trcfile_codec.h"
#include "chunk_idle.h"
#include "trcfile_stored.h"
#include "pio.h"

#define TRCFILE__BGC_QUEUE 64u /* chunks waiting: 1.5 KiB */
#define TRCFILE__BGC_SLICE (128u << 10) /* input between checks for stop */

/* One chunk compressed into the side file. Entries are in trace offset order: the writer
 * thread tells of its chunks in file order and the queue is FIFO. */
struct trcfile__bgc_entry {
	uint64_t trace_off, side_off;
	uint32_t side_len; /* header and frame */
	uint32_t crc; /* CRC-32C of those bytes */
};

struct trcfile_bgc {
	struct trcfile_writer *w; /* until stop */
	int rfd, sfd; /* the trace (read), the side file */
	int zstd_level;
	uint32_t flags;

	/* Smaller chunks are left for the end; UINT32_MAX until start sets it. */
	_Atomic uint32_t min_bytes;
	/* The ring: q_tail written by the hook only, q_head by the thread only; each entry's
	 * bytes are published by the release store of q_tail and given back by that of q_head. */
	struct trcfile_stored_note q[TRCFILE__BGC_QUEUE];
	_Atomic uint32_t q_head, q_tail;
	sem_t wake; /* one unit per entry pushed, and one at stop */
	bool wake_ready;
	atomic_bool stop;
	pthread_t tid;
	bool started;

	/* The thread's until joined, then frozen. */
	struct trcfile__bgc_entry *map;
	size_t n_map, cap_map;
	uint64_t side_end;
	_Atomic uint64_t compressed;
};

/* The writer thread: queue the chunk, or leave it for the end. Never blocks. */
static void trcfile__bgc_hook(void *arg, const struct trcfile_stored_note *n)
{
	struct trcfile_bgc *b = arg;
	if (n->raw_bytes < atomic_load_explicit(&b->min_bytes, memory_order_relaxed))
		return;
	uint32_t tail = atomic_load_explicit(&b->q_tail, memory_order_relaxed); /* ours */
	/* Pairs with the release store of q_head in trcfile__bgc_pop: the entry is free. */
	uint32_t head = atomic_load_explicit(&b->q_head, memory_order_acquire);
	if (tail - head >= TRCFILE__BGC_QUEUE)
		return; /* full: left for the end */
	b->q[tail % TRCFILE__BGC_QUEUE] = *n;
	/* Pairs with the acquire load of q_tail in trcfile__bgc_pop. */
	atomic_store_explicit(&b->q_tail, tail + 1, memory_order_release);
	sem_post(&b->wake);
}

/* The thread: the next note into *n, waiting for one; false once stopped. */
static bool trcfile__bgc_pop(struct trcfile_bgc *b, struct trcfile_stored_note *n)
{
	for (;;) {
		while (sem_wait(&b->wake) != 0 && errno == EINTR)
			;
		/* Pairs with the release store in trcfile_bgc_stop. */
		if (atomic_load_explicit(&b->stop, memory_order_acquire))
			return false;
		uint32_t head = atomic_load_explicit(&b->q_head, memory_order_relaxed); /* ours */
		/* Pairs with the release store of q_tail in the hook. */
		if (atomic_load_explicit(&b->q_tail, memory_order_acquire) == head)
			continue; /* cannot happen: a unit is posted after its entry */
		*n = b->q[head % TRCFILE__BGC_QUEUE];
		/* Pairs with the acquire load of q_head in the hook: the entry may be reused. */
		atomic_store_explicit(&b->q_head, head + 1, memory_order_release);
		return true;
	}
}

/* Buffers and zstd context of the thread, made at its first chunk. */
struct trcfile__bgc_work {
	ZSTD_CCtx *cctx;
	uint8_t *in, *out;
	size_t in_cap, out_cap;
};

static int trcfile__bgc_grow(uint8_t **p, size_t *cap, size_t need)
{
	if (*cap >= need)
		return 0;
	uint8_t *q = realloc(*p, need);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = need;
	return 0;
}

/* Compresses src into the frame at dst (cap bytes), a slice at a time, giving up when stop is
 * set. Its size, or 0 (stopped or failed). */
static size_t trcfile__bgc_frame(struct trcfile_bgc *b, ZSTD_CCtx *cctx, uint8_t *dst, size_t cap,
				 const uint8_t *src, size_t len)
{
	ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
	if (ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx, len)))
		return 0;
	ZSTD_inBuffer in = {src, 0, 0};
	ZSTD_outBuffer out = {dst, cap, 0};
	for (;;) {
		if (atomic_load_explicit(&b->stop, memory_order_relaxed))
			return 0;
		size_t left = len - in.pos;
		in.size = in.pos + (left < TRCFILE__BGC_SLICE ? left : TRCFILE__BGC_SLICE);
		ZSTD_EndDirective mode = in.size == len ? ZSTD_e_end : ZSTD_e_continue;
		size_t r = ZSTD_compressStream2(cctx, &out, &in, mode);
		if (ZSTD_isError(r))
			return 0;
		if (mode == ZSTD_e_end && r == 0)
			return out.pos;
		if (out.pos == out.size)
			return 0; /* cannot happen with a compressBound buffer */
	}
}

/* One chunk the writer wrote stored: read, check, compress, append to the side file. 0, or
 * -errno for a failure that stops the thread (the side file cannot be written); a chunk that
 * does not check is skipped (the end compaction reports it). */
static int trcfile__bgc_one(struct trcfile_bgc *b, struct trcfile__bgc_work *wk,
			    const struct trcfile_stored_note *n)
{
	size_t len = (size_t)TRCFILE__CHUNK_HDR_BYTES + n->raw_bytes;
	if (!wk->cctx) {
		wk->cctx = ZSTD_createCCtx();
		if (!wk->cctx)
			return -ENOMEM;
		ZSTD_CCtx_setParameter(wk->cctx, ZSTD_c_compressionLevel, b->zstd_level);
		ZSTD_CCtx_setParameter(wk->cctx, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(wk->cctx, ZSTD_c_contentSizeFlag, 1);
	}
	size_t out_need = TRCFILE__CHUNK_HDR_BYTES + ZSTD_compressBound(n->raw_bytes);
	if (trcfile__bgc_grow(&wk->in, &wk->in_cap, len) ||
	    trcfile__bgc_grow(&wk->out, &wk->out_cap, out_need))
		return -ENOMEM;
	if (pio_pread_all(b->rfd, wk->in, len, n->offset))
		return 0;
	struct trcfile__chunk_hdr h;
	const char *why = NULL;
	if (trcfile__chunk_hdr_get(wk->in, &h, &why) != 0 || !trcfile__chunk_is_stored(&h) ||
	    h.stream_id != n->stream_id || h.seq != n->seq || h.raw_bytes != n->raw_bytes ||
	    trcfile__stored_check(wk->in + TRCFILE__CHUNK_HDR_BYTES, &h))
		return 0;
	size_t fsz = trcfile__bgc_frame(b, wk->cctx, wk->out + TRCFILE__CHUNK_HDR_BYTES,
					wk->out_cap - TRCFILE__CHUNK_HDR_BYTES,
					wk->in + TRCFILE__CHUNK_HDR_BYTES, h.raw_bytes);
	if (!fsz || fsz > UINT32_MAX - TRCFILE__CHUNK_HDR_BYTES)
		return 0;
	h.flags = 0;
	h.payload_crc = 0;
	h.comp_bytes = (uint32_t)fsz;
	if ((b->flags & TRCFILE_BGC_TEST_MISMATCH) && b->n_map == 0)
		h.seq++; /* test hook: a copy that names another chunk */
	trcfile__chunk_hdr_put(wk->out, &h);
	uint32_t side_len = (uint32_t)(TRCFILE__CHUNK_HDR_BYTES + fsz);
	if (b->n_map == b->cap_map) {
		size_t cap = b->cap_map ? 2 * b->cap_map : 64;
		struct trcfile__bgc_entry *m = realloc(b->map, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		b->map = m;
		b->cap_map = cap;
	}
	int err = pio_pwrite_all(b->sfd, wk->out, side_len, b->side_end);
	if (err)
		return err;
	b->map[b->n_map++] = (struct trcfile__bgc_entry){
		.trace_off = n->offset,
		.side_off = b->side_end,
		.side_len = side_len,
		.crc = trcfile__crc32c_fast(0, wk->out, side_len),
	};
	b->side_end += side_len;
	atomic_fetch_add_explicit(&b->compressed, 1, memory_order_relaxed);
	return 0;
}

static void *trcfile__bgc_main(void *arg)
{
	struct trcfile_bgc *b = arg;
	pthread_setname_np(pthread_self(), "trc-bgc"); /* as top and /proc show it */
	trcfile__run_when_idle(); /* only CPU nobody else wants (see the header) */
	struct trcfile__bgc_work wk = {0};
	for (struct trcfile_stored_note n; trcfile__bgc_pop(b, &n);) {
		if (trcfile__bgc_one(b, &wk, &n) != 0)
			break; /* side file full or no memory: the rest is left for the end */
	}
	ZSTD_freeCCtx(wk.cctx);
	free(wk.in);
	free(wk.out);
	return NULL;
}

/* An unlinked file in the trace's directory (same disk as the trace). */
static int trcfile__bgc_side_file(int rfd)
{
	char proc[64], path[PATH_MAX];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", rfd);
	ssize_t n = readlink(proc, path, sizeof(path) - 1);
	if (n <= 0)
		return -EINVAL;
	path[n] = '\0';
	char *slash = strrchr(path, '/');
	if (!slash)
		return -EINVAL;
	if (slash == path)
		slash[1] = '\0';
	else
		*slash = '\0';
	int fd = open(path, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* A file system without O_TMPFILE: a named file unlinked at once. */
	char tmpl[PATH_MAX + 32];
	snprintf(tmpl, sizeof(tmpl), "%s/.trc-bgc.XXXXXX", path);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

struct trcfile_bgc *trcfile_bgc_start(struct trcfile_writer *w, uint32_t flags, int *err)
{
	int e = 0;
	struct trcfile_bgc *b = calloc(1, sizeof(*b));
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	b->rfd = b->sfd = -1;
	b->flags = flags;
	atomic_init(&b->min_bytes, UINT32_MAX); /* nothing is queued until it is set */
	if (sem_init(&b->wake, 0, 0) != 0) {
		e = -errno;
		goto fail;
	}
	b->wake_ready = true;
	/* Chunks told of before the thread runs wait in the queue. */
	struct trcfile_stored_source src;
	e = trcfile__writer_on_stored(w, trcfile__bgc_hook, b, &src);
	if (e)
		goto fail;
	/* The hook may run already: it reads only min_bytes. The rest is the thread's, made
	 * after this (pthread_create orders it). */
	b->rfd = src.fd;
	b->zstd_level = src.zstd_level;
	atomic_store_explicit(&b->min_bytes, src.chunk_bytes / 16, memory_order_relaxed);
	b->w = w;
	b->sfd = trcfile__bgc_side_file(b->rfd);
	if (b->sfd < 0) {
		e = b->sfd;
		goto fail_hooked;
	}
	if (pthread_create(&b->tid, NULL, trcfile__bgc_main, b) != 0) {
		e = -EAGAIN;
		goto fail_hooked;
	}
	b->started = true;
	return b;
fail_hooked:
	trcfile__writer_on_stored(w, NULL, NULL, NULL);
fail:
	trcfile_bgc_free(b);
	*err = e;
	return NULL;
}

void trcfile_bgc_stop(struct trcfile_bgc *b)
{
	if (!b)
		return;
	if (b->w) {
		trcfile__writer_on_stored(b->w, NULL, NULL, NULL);
		b->w = NULL;
	}
	if (!b->started)
		return;
	/* Pairs with the acquire load in trcfile__bgc_pop. */
	atomic_store_explicit(&b->stop, true, memory_order_release);
	sem_post(&b->wake);
	/* An idle-class thread may wait long for a core on a busy machine: back to the normal
	 * class for its last slice (where refused, it finishes the slice it is in, at most 128
	 * KiB of input). */
	trcfile__run_normally(b->tid);
	pthread_join(b->tid, NULL);
	b->started = false;
}

uint64_t trcfile_bgc_compressed(const struct trcfile_bgc *b)
{
	return b ? atomic_load_explicit(&((struct trcfile_bgc *)b)->compressed,
					memory_order_relaxed)
		 : 0;
}

void trcfile_bgc_free(struct trcfile_bgc *b)
{
	if (!b)
		return;
	trcfile_bgc_stop(b);
	if (b->rfd >= 0)
		close(b->rfd);
	if (b->sfd >= 0)
		close(b->sfd);
	if (b->wake_ready)
		sem_destroy(&b->wake);
	free(b->map);
	free(b);
}

int trcfile__bgc_find(const struct trcfile_bgc *b, uint64_t off, uint64_t *side_off,
		      uint32_t *side_len, uint32_t *crc)
{
	size_t lo = 0, hi = b ? b->n_map : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->map[mid].trace_off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!b || lo == b->n_map || b->map[lo].trace_off != off)
		return -ENOENT;
	*side_off = b->map[lo].side_off;
	*side_len = b->map[lo].side_len;
	*crc = b->map[lo].crc;
	return 0;
}

int trcfile__bgc_fd(const struct trcfile_bgc *b)
{
	return b->sfd;
}

static int trcfile__bgc_copy(const void *arg, uint64_t off, uint64_t *side_off,
			     uint32_t *side_len, uint32_t *crc)
{
	return trcfile__bgc_find(arg, off, side_off, side_len, crc);
}

int trcfile__compact_bgc(const char *in_path, const char *out_path,
			 const struct trcfile_writer_opts *o, const struct trcfile_bgc *b,
			 void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
			 struct trcfile_bgc_use *use, char *msg, size_t msg_len)
{
	struct trcfile_copies c = {.fd = b ? b->sfd : -1, .find = trcfile__bgc_copy, .arg = b};
	return trcfile__compact_copies(in_path, out_path, o, b ? &c : NULL, progress, arg, use,
				       msg, msg_len);
}
