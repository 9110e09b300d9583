/* chunk_write.c - the pipeline's writer thread (chunk_pipeline_priv.h): chunks to the file in
 * completion order, stored ones as they are, and what a full disk does not take.
 *
 * Threads: the writer thread alone takes chunks from the compressors' done rings and the write
 * queue (one consumer), writes them through trcfile_out.h, gives their slots back and the
 * chunks to the pool; it tells the stored-chunk hook (the background compressor) under
 * hook_lock, which trcfile__writer_on_stored takes too, from any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "chunk_pipeline_priv.h"

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

void *trcfile__writer_main(void *arg)
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
