/* summary_live.c - live allocation bytes: the only summary figure that needs time order.
 *
 * Purpose: a thread may free what another allocated, so the streams are replayed merged in
 * time order (trcfile_iter) into a live-allocation map (allocmap.h): the peak and final live
 * bytes, the bytes freed, and frees of addresses the trace never saw allocated. A second
 * allocation at a live address replaces the first. At most SUMMARY__LIVE_MAX_ENTRIES live
 * allocations are tracked (beyond: live bytes flagged approximate).
 *
 * Per process: a forked child has its parent's addresses, so the map is keyed by the pid of
 * the stream that allocated or freed and the address (an exact pair, allocmap.h: the
 * exporters' rule), and each process keeps its own live bytes (s->heaps). A process's "live at end"
 * is its heap when it exited (its EXIT record), or at the end of the trace when no exit was
 * recorded for it. From its exit on, its heap is out of the tree's live total: the total's peak is
 * the largest sum of the heaps of the processes alive at one moment, and live_end_bytes is the
 * traced program's (header pid) at its exit: children that exited before it are not counted there
 * (their own figures are in s->heaps).
 *
 * Threads: the reader's thread.
 */
#include "allocmap.h"
#include "summary_priv.h"

#define SUMMARY__LIVE_MAX_ENTRIES (1u << 20)
/* Processes with a heap of their own; past it the rest share the last entry (hostile only). */
#define SUMMARY__HEAPS_MAX 65536u

struct summary__live {
	struct allocmap *map;
	struct u64map pids; /* pid -> index in s->heaps */
	size_t cap;
	uint64_t cur; /* the sum of the live heaps of the processes not exited */
};

static struct summary_heap *summary__heap(struct summary__state *m, struct summary__live *l,
					  uint32_t pid)
{
	struct summary *s = m->s;
	uint64_t *ix = u64map_get(&l->pids, pid);
	if (ix)
		return &s->heaps[*ix];
	if (s->n_heaps == SUMMARY__HEAPS_MAX)
		return &s->heaps[s->n_heaps - 1];
	if (s->n_heaps == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		void *p = realloc(s->heaps, cap * sizeof(*s->heaps));
		if (!p)
			goto nomem;
		s->heaps = p;
		l->cap = cap;
	}
	if (u64map_put(&l->pids, pid, s->n_heaps, NULL, NULL))
		goto nomem;
	struct summary_heap *h = &s->heaps[s->n_heaps++];
	memset(h, 0, sizeof(*h));
	h->pid = pid;
	return h;
nomem:
	summary__nomem(m);
	return NULL;
}

static void summary__live_rec(struct summary__state *m, struct summary__live *l,
			      const struct trc_record *rec, unsigned sidx)
{
	struct summary *s = m->s;
	uint64_t size = 0;
	if (rec->type == TRC_REC_EXIT) {
		struct summary_heap *h = summary__heap(m, l, rec->exit.pid);
		if (h && !h->exited) {
			h->exited = true;
			l->cur -= h->live_end_bytes;
		}
		return;
	}
	if (rec->type != TRC_REC_ALLOC && rec->type != TRC_REC_FREE)
		return;
	uint32_t pid = trcfile_reader_stream(m->r, sidx)->pid;
	struct summary_heap *h = summary__heap(m, l, pid);
	if (!h)
		return;
	if (rec->type == TRC_REC_ALLOC) {
		h->allocs++;
		h->alloc_bytes += rec->alloc.size;
		int err = allocmap_put(l->map, pid, rec->alloc.addr, rec->alloc.size, &size);
		if (err == -ENOSPC) {
			s->live_approximate = true;
			return;
		}
		if (err) {
			m->err = trcfile_reader_fail(m->r, err, "out of memory");
			return;
		}
		h->live_end_bytes = h->live_end_bytes - size + rec->alloc.size;
		if (h->live_end_bytes > h->live_peak_bytes)
			h->live_peak_bytes = h->live_end_bytes;
		if (h->exited) /* records after its EXIT (hostile): its own figure only */
			return;
		l->cur = l->cur - size + rec->alloc.size;
		if (l->cur > s->live_peak_bytes)
			s->live_peak_bytes = l->cur;
	} else if (allocmap_take(l->map, pid, rec->alloc.addr, &size)) {
		h->live_end_bytes -= size;
		if (!h->exited)
			l->cur -= size;
		s->free_bytes += size;
	} else if (rec->alloc.addr) {
		s->frees_unknown++;
	}
}

static int summary__cmp_heap(const void *a, const void *b)
{
	const struct summary_heap *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int summary__live(struct summary__state *m)
{
	struct summary__live l = {.map = allocmap_new(SUMMARY__LIVE_MAX_ENTRIES)};
	u64map_init(&l.pids, SIZE_MAX);
	int rc = 0;
	struct trc_record rec;
	unsigned sidx;
	struct trcfile_iter *it = l.map ? trcfile_iter_new(m->r) : NULL;
	if (!it) {
		allocmap_free(l.map);
		if (!trcfile_reader_errmsg(m->r)[0])
			trcfile_reader_fail(m->r, -ENOMEM, "out of memory");
		return m->err = -ENOMEM;
	}
	while (!m->err && (rc = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		summary__live_rec(m, &l, &rec, sidx);
		if (m->feed && m->feed(m->feed_ctx, &rec, sidx))
			summary__nomem(m);
	}
	trcfile_iter_free(it);
	allocmap_free(l.map);
	u64map_destroy(&l.pids);
	if (!m->err && rc < 0)
		m->err = rc;
	struct summary *s = m->s;
	if (s->n_heaps)
		qsort(s->heaps, s->n_heaps, sizeof(*s->heaps), summary__cmp_heap);
	s->live_end_bytes = 0;
	for (size_t i = 0; i < s->n_heaps; i++)
		if (s->heaps[i].pid == m->rss.root_pid || s->n_heaps == 1)
			s->live_end_bytes = s->heaps[i].live_end_bytes;
	return m->err;
}
