/* chunk_pool.c - the pipeline's chunks: made, kept for reuse, prefaulted
 * (chunk_pipeline_priv.h).
 *
 * Threads: the pool is taken under pool_lock, once per chunk (never per record), by appending
 * threads (a stream's next chunk), the writer thread (a written chunk back; the prefault) and
 * close. A chunk being filled or in a queue belongs to one thread at a time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_pipeline_priv.h"

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
struct trcfile__wchunk *trcfile__chunk_get_limit(struct trcfile_writer *w, size_t need,
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

struct trcfile__wchunk *trcfile__chunk_get(struct trcfile_writer *w, size_t need)
{
	return trcfile__chunk_get_limit(w, need, w->chunk_bytes);
}

void trcfile__chunk_free(struct trcfile__wchunk *c)
{
	if (!c)
		return;
	free(c->raw);
	free(c->out);
	free(c);
}

void trcfile__chunk_put(struct trcfile_writer *w, struct trcfile__wchunk *c)
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

/* ---- prefault ------------------------------------------------------------------------ */

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
void trcfile__prefault_pool(struct trcfile_writer *w)
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
