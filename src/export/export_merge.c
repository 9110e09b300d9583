/* export_merge.c - several traces merged on CLOCK_REALTIME (export_merge.h).
 *
 * Threads: no globals; a merge belongs to one export.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_merge.h"

int export_merge_start(struct export_merge *m, struct trcfile_reader *const *r, unsigned n,
		       bool *const *include)
{
	memset(m, 0, sizeof(*m));
	m->last = -1;
	m->t = calloc(n ? n : 1, sizeof(*m->t));
	if (!m->t)
		return -ENOMEM;
	m->n = n;
	for (unsigned i = 0; i < n; i++) {
		struct export_merge_head *t = &m->t[i];
		t->r = r[i];
		int64_t s;
		if (export_anchor(t->r, &t->anchor, &s)) {
			m->failed = (int)i;
			return -ERANGE;
		}
		if (i == 0 || s < m->start_rt)
			m->start_rt = s;
		t->it = include && include[i] ? trcfile_iter_new_subset(t->r, include[i])
					      : trcfile_iter_new(t->r);
		if (!t->it) {
			m->failed = (int)i;
			return -ENOMEM;
		}
	}
	return 0;
}

/* Reads the next head of trace i: 0 ok (maybe at its end), -errno. */
static int export__merge_advance(struct export_merge *m, unsigned i)
{
	struct export_merge_head *t = &m->t[i];
	int k = trcfile_iter_next(t->it, &t->rec, &t->sidx);
	if (k < 0) {
		m->failed = (int)i;
		return k;
	}
	t->state = k == 1 ? 1 : 2;
	return 0;
}

int export_merge_next(struct export_merge *m, struct trc_record *rec, unsigned *trace,
		      unsigned *sidx)
{
	if (m->last >= 0) {
		int err = export__merge_advance(m, (unsigned)m->last);
		m->last = -1;
		if (err)
			return err;
	}
	int best = -1;
	int64_t best_rt = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct export_merge_head *t = &m->t[i];
		if (t->state == 0) {
			int err = export__merge_advance(m, i);
			if (err)
				return err;
		}
		if (t->state != 1)
			continue;
		int64_t rt = export_realtime(t->rec.ts_ns, t->anchor);
		if (best < 0 || rt < best_rt) {
			best = (int)i;
			best_rt = rt;
		}
	}
	if (best < 0)
		return 0;
	m->last = best;
	*rec = m->t[best].rec;
	*trace = (unsigned)best;
	*sidx = m->t[best].sidx;
	return 1;
}

void export_merge_stop(struct export_merge *m)
{
	for (unsigned i = 0; m->t && i < m->n; i++)
		trcfile_iter_free(m->t[i].it);
	free(m->t);
	memset(m, 0, sizeof(*m));
}
