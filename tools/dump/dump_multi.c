/* dump_multi.c - several traces as one: readers opened together, records merged on
 * CLOCK_REALTIME, each labelled by its host and trace.
 *
 * Purpose: the commands that accept several FILEs (events, chrome, perfetto, summary, parquet:
 * open, start, then dump_traces_next until 0) see one record stream. Each file keeps its own
 * merged iterator (trcfile_iter: time order within the file); this file merges those heads by
 * real time, t_rt = ts_ns + anchor where anchor = start_realtime_ns -
 * start_mono_ns of that file's header, so traces from several machines line up. Ties go to
 * the file given first, so the order is the same on every run.
 *
 * Invariant: a record returned by dump_traces_next (and its strings) stays valid until the
 * next call: the file it came from is advanced only then. Memory: one iterator per file (the
 * reader's bound per file); the head search is linear in the number of files.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "export.h"

int dump_anchor(const struct trcfile_reader *r, int64_t *anchor, int64_t *start_rt)
{
	return export_anchor(r, anchor, start_rt);
}

int64_t dump_realtime(uint64_t ts, int64_t anchor)
{
	return export_realtime(ts, anchor);
}

int dump_traces_open(struct dump_traces *m, char *const *paths, unsigned n)
{
	memset(m, 0, sizeof(*m));
	m->t = calloc(n ? n : 1, sizeof(*m->t));
	if (!m->t) {
		dump_error("out of memory");
		return DUMP_EXIT_FAIL;
	}
	m->last = -1;
	for (unsigned i = 0; i < n; i++) {
		struct dump_trace *t = &m->t[i];
		t->path = paths[i];
		t->r = dump_open(paths[i], false);
		if (!t->r) {
			dump_traces_close(m);
			return DUMP_EXIT_FAIL;
		}
		m->n = i + 1;
		const struct trcfile_header *h = trcfile_reader_header(t->r);
		t->host = h->host;
		t->host_len = strcspn(h->host, " ");
		const char *base = strrchr(paths[i], '/');
		t->trace = base ? base + 1 : paths[i];
		/* The real time every relative time counts from: the earliest start. */
		int64_t s;
		if (dump_anchor(t->r, &t->anchor, &s) != 0) {
			dump_error(
				"%s: start_realtime_ns %" PRIu64 " and start_mono_ns %" PRIu64
				" put its records outside CLOCK_REALTIME's range (0 to 2^63 ns): "
				"it cannot be merged with other traces",
				paths[i], h->start_realtime_ns, h->start_mono_ns);
			dump_traces_close(m);
			return DUMP_EXIT_FAIL;
		}
		if (i == 0 || s < m->start_rt)
			m->start_rt = s;
	}
	return DUMP_EXIT_OK;
}

uint64_t dump_trace_start(const struct dump_traces *m, unsigned i)
{
	return (uint64_t)m->start_rt - (uint64_t)m->t[i].anchor; /* wraps, as documented */
}

int dump_traces_start(struct dump_traces *m, bool *const *include)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct dump_trace *t = &m->t[i];
		t->it = include && include[i] ? trcfile_iter_new_subset(t->r, include[i])
					      : trcfile_iter_new(t->r);
		if (!t->it) {
			dump_error("%s: %s", t->path,
				   trcfile_reader_errmsg(t->r)[0] ? trcfile_reader_errmsg(t->r)
								  : "out of memory");
			return DUMP_EXIT_FAIL;
		}
		t->state = 0;
	}
	m->last = -1;
	return DUMP_EXIT_OK;
}

/* Reads the next head of file i: 0 ok (maybe at its end), -errno. */
static int dump__advance(struct dump_traces *m, unsigned i)
{
	struct dump_trace *t = &m->t[i];
	int k = trcfile_iter_next(t->it, &t->rec, &t->sidx);
	if (k < 0) {
		m->failed = (int)i;
		return k;
	}
	t->state = k == 1 ? 1 : 2;
	return 0;
}

int dump_traces_next(struct dump_traces *m, struct trc_record *rec, unsigned *trace, unsigned *sidx)
{
	if (m->last >= 0) {
		int err = dump__advance(m, (unsigned)m->last);
		m->last = -1;
		if (err)
			return err;
	}
	int best = -1;
	int64_t best_rt = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct dump_trace *t = &m->t[i];
		if (t->state == 0) {
			int err = dump__advance(m, i);
			if (err)
				return err;
		}
		if (t->state != 1)
			continue;
		int64_t rt = dump_realtime(t->rec.ts_ns, t->anchor);
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
	if (sidx)
		*sidx = m->t[best].sidx;
	return 1;
}

void dump_traces_close(struct dump_traces *m)
{
	for (unsigned i = 0; m->t && i < m->n; i++) {
		trcfile_iter_free(m->t[i].it);
		dump_reader_free(m->t[i].r);
	}
	free(m->t);
	memset(m, 0, sizeof(*m));
}
