/* trcfile_merge.c - all streams of a trace in one time order.
 *
 * Purpose: a tournament (loser tree) over one cursor per stream, keyed by (ts_ns, stream
 * index), so equal times come out in stream-index order and each stream keeps its own order:
 * the output order is a function of the file alone. Each record costs log2(streams)
 * comparisons against keys held in the tree itself, and each stream's records are decoded
 * TRCFILE__MERGE_BATCH at a time by the cursors' one decoder (trcfile_cursor_read), never past
 * its loaded chunk; the record handed out is the one in that batch (trcfile_iter_next_ref), or
 * a copy of it.
 *
 * Lazy advance: the record handed out last may point into its cursor's chunk buffer (and,
 * by reference, into its batch), so that stream moves on only at the start of the next call
 * (moving on may decode its next batch over it, or load its next chunk over the strings the
 * caller is still reading).
 *
 * Memory: one chunk buffer per stream that has records left, which is the reader's bound,
 * and TRCFILE__MERGE_BATCH decoded records per stream.
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
/* Records decoded ahead per stream (within its loaded chunk): one tight decoding loop per
 * batch instead of a call chain per record. */
#define TRCFILE__MERGE_BATCH 32u

/* A key of the tournament: the time of a stream's next record in the high 64 bits, the
 * stream in the low ones, so one unsigned comparison (branch-free) orders by (ts_ns, stream).
 * A stream with no record left has ts UINT64_MAX and stream n + its leaf, after every live
 * key (a live record may have ts UINT64_MAX too: its stream < n still puts it first). */
typedef unsigned __int128 trcfile__key;

static inline trcfile__key trcfile__key_make(uint64_t ts, uint64_t s)
{
	return (trcfile__key)ts << 64 | s;
}

/* A stream's decoded records: next is its next one (NULL once it has none), end one past the
 * batch. */
struct trcfile__lane {
	const struct trc_record *next, *end;
};

struct trcfile_iter {
	struct trcfile_reader *r;
	unsigned n;
	struct trcfile_cursor **cur;
	struct trc_record *batch; /* stream s's batch at s * TRCFILE__MERGE_BATCH */
	struct trcfile__lane *lane;
	/* A loser tree over k leaves (k = the streams with records left rounded up to a power of
	 * two; leaf[s] is stream s's): loser[1..k-1] hold the key that lost the match at each
	 * node, win the overall winner. Replacing the winner's key replays its path only:
	 * log2(k) comparisons, each against one stored key, with no indirection and no branch
	 * on the outcome. When half the leaves are finished streams the tree is played again
	 * over the others (streams that end early, like the metadata's, cost nothing after). */
	trcfile__key *loser;
	trcfile__key win;
	unsigned k, live;
	unsigned *leaf;
	bool pending; /* win's stream must pass its record before the next one is chosen */
	bool started;
	int error;
};

/* Decodes stream s's next batch: 1 (its first record is next), 0 (s is done) or <0. */
static int trcfile__refill(struct trcfile_iter *it, unsigned s)
{
	struct trc_record *b = it->batch + (size_t)s * TRCFILE__MERGE_BATCH;
	int rc = trcfile_cursor_read(it->cur[s], b, TRCFILE__MERGE_BATCH);
	if (rc <= 0)
		return rc;
	it->lane[s] = (struct trcfile__lane){b, b + rc};
	return 1;
}

/* The key of a finished leaf. */
static inline trcfile__key trcfile__key_done(const struct trcfile_iter *it, unsigned leaf)
{
	return trcfile__key_make(UINT64_MAX, (uint64_t)it->n + leaf);
}

/* Plays the tournament over the streams with records left; 0 or -ENOMEM. */
static int trcfile__play(struct trcfile_iter *it)
{
	unsigned k = 1;
	while (k < it->live)
		k *= 2;
	trcfile__key *w = calloc(2 * (size_t)k, sizeof(*w)); /* winners, leaves at k.. */
	if (!w)
		return -ENOMEM;
	unsigned j = 0;
	for (unsigned s = 0; s < it->n; s++) {
		if (!it->lane[s].next)
			continue;
		it->leaf[s] = j;
		w[k + j++] = trcfile__key_make(it->lane[s].next->ts_ns, s);
	}
	for (; j < k; j++)
		w[k + j] = trcfile__key_done(it, j);
	for (unsigned i = k; i-- > 1;) {
		bool l = w[2 * i] < w[2 * i + 1];
		w[i] = l ? w[2 * i] : w[2 * i + 1];
		it->loser[i] = l ? w[2 * i + 1] : w[2 * i];
	}
	it->win = w[1];
	it->k = k;
	free(w);
	return 0;
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
		trcfile_reader_fail(
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
	unsigned n = it->n ? it->n : 1;
	for (it->k = 1; it->k < n;)
		it->k *= 2;
	it->cur = calloc(n, sizeof(*it->cur));
	it->batch = calloc((size_t)n * TRCFILE__MERGE_BATCH, sizeof(*it->batch));
	it->lane = calloc(n, sizeof(*it->lane));
	it->leaf = calloc(n, sizeof(*it->leaf));
	it->loser = calloc(it->k, sizeof(*it->loser));
	if (!it->cur || !it->batch || !it->lane || !it->leaf || !it->loser)
		goto fail;
	/* Streams left out keep a NULL cursor and are finished leaves from the start. */
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
	free(it->batch);
	free(it->lane);
	free(it->leaf);
	free(it->loser);
	free(it);
}

/* Plays the tournament from each stream's next record. */
static int trcfile__iter_fill(struct trcfile_iter *it)
{
	it->pending = false;
	it->live = 0;
	for (unsigned s = 0; s < it->n; s++) {
		it->lane[s].next = NULL;
		if (!it->cur[s])
			continue;
		int rc = trcfile__refill(it, s); /* (what was decoded ahead is dropped) */
		if (rc < 0)
			return it->error = rc;
		it->live += rc == 1;
	}
	int err = trcfile__play(it);
	if (err)
		return it->error = err;
	it->started = true;
	return 0;
}

int trcfile_iter_next_ref(struct trcfile_iter *it, const struct trc_record **rec,
			  unsigned *stream_idx)
{
	if (trcfile__unlikely(it->error))
		return it->error;
	if (trcfile__unlikely(!it->started)) {
		int err = trcfile__iter_fill(it);
		if (err)
			return err;
	}
	if (it->pending) {
		/* The stream handed out last moves on, and replays its path to the root. */
		unsigned s = (unsigned)it->win;
		struct trcfile__lane *l = &it->lane[s];
		trcfile__key v;
		bool replay = true;
		it->pending = false;
		if (trcfile__likely(++l->next < l->end)) {
			v = trcfile__key_make(l->next->ts_ns, s);
		} else {
			int rc = trcfile__refill(it, s);
			if (trcfile__unlikely(rc < 0))
				return it->error = rc;
			if (rc == 1) {
				v = trcfile__key_make(l->next->ts_ns, s);
			} else {
				l->next = NULL;
				v = trcfile__key_done(it, it->leaf[s]);
				if (--it->live <= it->k / 2 && it->k > 1) {
					int err = trcfile__play(it); /* over the others */
					if (err)
						return it->error = err;
					replay = false;
				}
			}
		}
		trcfile__key *loser = it->loser;
		for (unsigned i = (it->leaf[s] + it->k) / 2; replay && i; i /= 2) {
			trcfile__key o = loser[i];
			bool b = o < v;
			loser[i] = b ? v : o;
			v = b ? o : v;
		}
		if (replay)
			it->win = v;
	}
	unsigned s = (unsigned)it->win;
	if (s >= it->n)
		return 0; /* the best key is a finished stream's: all are */
	*rec = it->lane[s].next;
	if (stream_idx)
		*stream_idx = s;
	it->pending = true;
	return 1;
}

int trcfile_iter_next_refs(struct trcfile_iter *it, const struct trc_record **recs,
			   unsigned *stream_idx, unsigned max)
{
	if (trcfile__unlikely(!max))
		return 0;
	unsigned first;
	int rc = trcfile_iter_next_ref(it, &recs[0], &first);
	if (rc != 1)
		return rc;
	stream_idx[0] = first;
	/* The winner's stream moves on here while its batch has a record left: no refill, so
	 * the records handed out so far (and their strings) stay where they are. The one that
	 * needs a refill stops the run, and moves on at the start of the next call (pending). */
	trcfile__key *loser = it->loser;
	struct trcfile__lane *lane = it->lane;
	const unsigned k = it->k, *leaf = it->leaf;
	trcfile__key win = it->win;
	unsigned s = first, n = 1;
	while (n < max) {
		struct trcfile__lane *l = &lane[s];
		if (l->next + 1 >= l->end)
			break;
		l->next++;
		trcfile__key v = trcfile__key_make(l->next->ts_ns, s);
		for (unsigned i = (leaf[s] + k) / 2; i; i /= 2) {
			trcfile__key o = loser[i];
			trcfile__key w = o < v ? o : v;
			loser[i] = o ^ v ^ w; /* the other one */
			v = w;
		}
		/* The winner is live: s's own new key, live, beats every finished one. */
		win = v;
		s = (unsigned)v;
		recs[n] = lane[s].next;
		stream_idx[n++] = s;
	}
	it->win = win;
	return (int)n;
}

int trcfile_iter_next(struct trcfile_iter *it, struct trc_record *rec, unsigned *stream_idx)
{
	const struct trc_record *r;
	int rc = trcfile_iter_next_ref(it, &r, stream_idx);
	if (rc == 1)
		*rec = *r;
	return rc;
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
