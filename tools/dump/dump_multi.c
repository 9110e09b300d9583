/* dump_multi.c - several traces as one: readers opened together, records merged on
 * CLOCK_REALTIME, each labelled by its host and trace.
 *
 * Purpose: the commands that accept several FILEs (events, chrome, perfetto, summary, parquet)
 * open them here, each checked and labelled by its host and trace; events and summary then
 * see one record stream (start, then dump_traces_next until 0), the merge of
 * src/export/export_merge.h: heads by real time, t_rt = ts_ns + anchor where anchor =
 * start_realtime_ns - start_mono_ns of that file's header, so traces from several machines
 * line up; ties go to the file given first, so the order is the same on every run.
 *
 * Invariant: a record returned by dump_traces_next (and its strings) stays valid until the
 * next call: the file it came from is advanced only then.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "export.h"
#include "export_merge.h"

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
	export_merge_stop(&m->merge);
	struct trcfile_reader **r = calloc(m->n ? m->n : 1, sizeof(*r));
	if (!r) {
		dump_error("out of memory");
		return DUMP_EXIT_FAIL;
	}
	for (unsigned i = 0; i < m->n; i++)
		r[i] = m->t[i].r;
	int err = export_merge_start(&m->merge, r, m->n, include);
	free(r);
	if (err) {
		/* The anchors were checked at open: only an iterator can fail here. */
		const struct dump_trace *t = &m->t[m->merge.failed];
		dump_error("%s: %s", t->path,
			   trcfile_reader_errmsg(t->r)[0] ? trcfile_reader_errmsg(t->r)
							  : "out of memory");
		return DUMP_EXIT_FAIL;
	}
	return DUMP_EXIT_OK;
}

int dump_traces_next(struct dump_traces *m, struct trc_record *rec, unsigned *trace, unsigned *sidx)
{
	unsigned s;
	int k = export_merge_next(&m->merge, rec, trace, &s);
	if (k < 0)
		m->failed = m->merge.failed;
	if (k == 1 && sidx)
		*sidx = s;
	return k;
}

void dump_traces_close(struct dump_traces *m)
{
	export_merge_stop(&m->merge);
	for (unsigned i = 0; m->t && i < m->n; i++)
		dump_reader_free(m->t[i].r);
	free(m->t);
	memset(m, 0, sizeof(*m));
}
