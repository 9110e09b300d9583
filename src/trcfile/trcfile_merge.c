/* trcfile_merge.c - all streams of a trace in one time order.
 *
 * Purpose: a binary min-heap over one cursor per stream, keyed by (ts_ns, stream index), so
 * equal times come out in stream-index order and each stream keeps its own order: the output
 * order is a function of the file alone.
 *
 * Lazy advance: the record handed out last may point into its cursor's chunk buffer, so that
 * cursor moves on only at the start of the next call (moving on may load its next chunk over
 * the strings the caller is still reading).
 *
 * Memory: one chunk buffer per stream that has records left, which is the reader's bound.
 * Streams merge only after their total worst case passes a sanity limit, so a hostile index
 * cannot make the merge allocate without bound.
 *
 * Threads: the reader's thread.
 */
#include <errno.h>
#include <stdlib.h>

#include "trcfile_reader_priv.h"

/* Worst case of all the chunk buffers one merge may hold at once. */
#define TRCFILE__MERGE_MAX_BUFFER_BYTES (2ull << 30)

struct trcfile_iter {
	struct trcfile_reader *r;
	unsigned n;
	struct trcfile_cursor **cur;
	struct trc_record *head; /* head[s]: stream s's next record, valid while s is in heap */
	unsigned *heap;
	unsigned heap_n;
	int pending; /* stream whose cursor must advance before the next pop, or -1 */
	bool started;
	int error;
};

static bool trcfile__before(const struct trcfile_iter *it, unsigned a, unsigned b)
{
	uint64_t ta = it->head[a].ts_ns, tb = it->head[b].ts_ns;
	return ta < tb || (ta == tb && a < b);
}

static void trcfile__sift_down(struct trcfile_iter *it, unsigned i)
{
	unsigned n = it->heap_n, *h = it->heap;
	unsigned v = h[i];
	for (;;) {
		unsigned l = 2 * i + 1;
		if (l >= n)
			break;
		unsigned m = l;
		if (l + 1 < n && trcfile__before(it, h[l + 1], h[l]))
			m = l + 1;
		if (!trcfile__before(it, h[m], v))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = v;
}

struct trcfile_iter *trcfile_iter_new_subset(struct trcfile_reader *r, const bool *include)
{
	if (!r)
		return NULL;
	uint64_t worst = 0;
	for (unsigned s = 0; s < r->n_streams; s++)
		if (!include || include[s])
			worst += r->streams[s].max_chunk_raw_bytes;
	if (worst > TRCFILE__MERGE_MAX_BUFFER_BYTES) {
		trcfile__fail(
			r, -EFBIG,
			"merging %u streams would need %llu MiB of chunk buffers (limit %llu)",
			r->n_streams, (unsigned long long)(worst >> 20),
			TRCFILE__MERGE_MAX_BUFFER_BYTES >> 20);
		return NULL;
	}
	struct trcfile_iter *it = calloc(1, sizeof(*it));
	if (!it)
		return NULL;
	it->r = r;
	it->n = r->n_streams;
	it->pending = -1;
	unsigned n = it->n ? it->n : 1;
	it->cur = calloc(n, sizeof(*it->cur));
	it->head = calloc(n, sizeof(*it->head));
	it->heap = calloc(n, sizeof(*it->heap));
	if (!it->cur || !it->head || !it->heap)
		goto fail;
	/* Streams left out keep a NULL cursor and never enter the heap. */
	for (unsigned s = 0; s < it->n; s++) {
		if (include && !include[s])
			continue;
		it->cur[s] = trcfile_cursor_new(r, s);
		if (!it->cur[s])
			goto fail;
	}
	return it;
fail:
	trcfile_iter_free(it);
	return NULL;
}

struct trcfile_iter *trcfile_iter_new(struct trcfile_reader *r)
{
	return trcfile_iter_new_subset(r, NULL);
}

void trcfile_iter_free(struct trcfile_iter *it)
{
	if (!it)
		return;
	if (it->cur)
		for (unsigned s = 0; s < it->n; s++)
			trcfile_cursor_free(it->cur[s]);
	free(it->cur);
	free(it->head);
	free(it->heap);
	free(it);
}

/* Fills the heap with each stream's next record. */
static int trcfile__iter_fill(struct trcfile_iter *it)
{
	it->heap_n = 0;
	it->pending = -1;
	for (unsigned s = 0; s < it->n; s++) {
		if (!it->cur[s])
			continue;
		int rc = trcfile_cursor_next(it->cur[s], &it->head[s]);
		if (rc < 0)
			return it->error = rc;
		if (rc == 1)
			it->heap[it->heap_n++] = s;
	}
	for (unsigned i = it->heap_n / 2; i-- > 0;)
		trcfile__sift_down(it, i);
	it->started = true;
	return 0;
}

int trcfile_iter_next(struct trcfile_iter *it, struct trc_record *rec, unsigned *stream_idx)
{
	if (it->error)
		return it->error;
	if (!it->started) {
		int err = trcfile__iter_fill(it);
		if (err)
			return err;
	}
	if (it->pending >= 0) {
		/* The stream handed out last is still at the root. */
		unsigned s = (unsigned)it->pending;
		it->pending = -1;
		int rc = trcfile_cursor_next(it->cur[s], &it->head[s]);
		if (rc < 0)
			return it->error = rc;
		if (rc == 0)
			it->heap[0] = it->heap[--it->heap_n];
		if (it->heap_n)
			trcfile__sift_down(it, 0);
	}
	if (!it->heap_n)
		return 0;
	unsigned s = it->heap[0];
	*rec = it->head[s];
	if (stream_idx)
		*stream_idx = s;
	it->pending = (int)s;
	return 1;
}

int trcfile_iter_seek(struct trcfile_iter *it, uint64_t t_ns)
{
	if (it->error)
		return it->error;
	for (unsigned s = 0; s < it->n; s++) {
		if (!it->cur[s])
			continue;
		int err = trcfile_cursor_seek(it->cur[s], t_ns);
		if (err < 0)
			return it->error = err;
	}
	return trcfile__iter_fill(it);
}
