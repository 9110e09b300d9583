/* chunk_pipeline.c - the recorder's chunk pipeline: streams, appends, store-when-behind, open
 * and close (chunk_pipeline_priv.h says how the pipeline works and which thread does what).
 *
 * The trace file writer of trcfile.h (trcfile_writer_*, trcfile_stream_*): appending threads
 * encode records into their stream's open chunk and submit it full, to a compressor or, when
 * the compressors are behind, stored to the writer thread; close submits the last chunks,
 * joins the threads and writes the footer (trcfile_out.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunk_idle.h"
#include "chunk_pipeline_priv.h"

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
