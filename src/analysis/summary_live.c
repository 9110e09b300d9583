/* summary_live.c - live allocation bytes: the only summary figure that needs time order.
 *
 * Purpose: a thread may free what another allocated, so the streams are replayed merged in
 * time order (trcfile_iter) into a live-allocation map (allocmap.h): the peak and final live
 * bytes, the bytes freed, and frees of addresses the trace never saw allocated. A second
 * allocation at a live address replaces the first. At most SUMMARY__LIVE_MAX_ENTRIES live
 * allocations are tracked (beyond: live bytes flagged approximate).
 *
 * Threads: the reader's thread.
 */
#include "allocmap.h"
#include "summary_priv.h"

#define SUMMARY__LIVE_MAX_ENTRIES (1u << 20)

static void summary__live_rec(struct summary__state *m, struct allocmap *live,
			      const struct trc_record *rec, uint64_t *cur)
{
	struct summary *s = m->s;
	uint64_t size = 0;
	if (rec->type == TRC_REC_ALLOC) {
		int err = allocmap_put(live, rec->alloc.addr, rec->alloc.size, &size);
		if (err == -ENOSPC) {
			s->live_approximate = true;
			return;
		}
		if (err) {
			m->err = trcfile__fail(m->r, err, "out of memory");
			return;
		}
		*cur = *cur - size + rec->alloc.size;
		if (*cur > s->live_peak_bytes)
			s->live_peak_bytes = *cur;
	} else if (rec->type == TRC_REC_FREE) {
		if (allocmap_take(live, rec->alloc.addr, &size)) {
			*cur -= size;
			s->free_bytes += size;
		} else if (rec->alloc.addr) {
			s->frees_unknown++;
		}
	}
}

int summary__live(struct summary__state *m)
{
	struct allocmap *live = allocmap_new(SUMMARY__LIVE_MAX_ENTRIES);
	if (!live)
		return summary__nomem(m);
	uint64_t cur = 0;
	int rc;
	struct trc_record rec;
	struct trcfile_iter *it = trcfile_iter_new(m->r);
	if (!it) {
		allocmap_free(live);
		if (!m->r->errmsg[0])
			trcfile__fail(m->r, -ENOMEM, "out of memory");
		return m->err = -ENOMEM;
	}
	while (!m->err && (rc = trcfile_iter_next(it, &rec, NULL)) == 1)
		summary__live_rec(m, live, &rec, &cur);
	trcfile_iter_free(it);
	allocmap_free(live);
	if (!m->err && rc < 0)
		m->err = rc;
	m->s->live_end_bytes = cur;
	return m->err;
}
