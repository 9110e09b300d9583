/* chunk_compress.c - the pipeline's compressor threads (chunk_pipeline_priv.h).
 *
 * Threads: each compressor takes full chunks from the compress queue (cds_wfcq; its dequeue
 * mutex is taken among compressors only), makes the chunk's frame with its own reused
 * ZSTD_CCtx (trcfile__chunk_frame, trcfile_out.h) and hands it to the writer thread through
 * its own done ring (single producer, single consumer: one release store publishes, so the
 * writer never waits for a compressor, which may run in the idle class).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chunk_idle.h"
#include "chunk_pipeline_priv.h"

/* c's records into its frame (trcfile__chunk_frame). 0 or -errno. */
int trcfile__compress(ZSTD_CCtx *cctx, struct trcfile__wchunk *c)
{
	return trcfile__chunk_frame(cctx, &c->hdr, c->raw, c->raw_len, &c->out, &c->out_cap,
				    &c->out_len);
}

/* Lowers the calling thread's priority when the writer runs in the background (nice +10;
 * Linux: nice is per thread). Not SCHED_IDLE: on a machine the traced program saturates, an
 * idle-class compressor gets next to no CPU, the pipeline fills and the drain stalls, so
 * the rings overflow; at nice +10 it still gets about a tenth of a contended core. Failure is
 * harmless: the thread keeps its priority. */
void trcfile__maybe_background(const struct trcfile_writer *w)
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
struct trcfile__wchunk *trcfile__done_pop(struct trcfile_writer *w)
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

void *trcfile__compress_main(void *arg)
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
