/* export_merge.h - several traces' records as one stream, merged on CLOCK_REALTIME, for the
 * exporters that take several traces into one output (export_merge.c).
 *
 * Purpose: each trace keeps its own merged iterator (trcfile_iter: time order within the
 * file); this merges those heads by real time, t_rt = ts_ns + anchor where anchor =
 * start_realtime_ns - start_mono_ns of that trace's header (export_anchor), so traces from
 * several machines line up. Ties go to the trace given first, so the order is the same on
 * every run. trace-dump's text commands merge several traces with it too
 * (tools/dump/dump_multi.c).
 *
 * Invariant: a record returned by export_merge_next (and its strings) stays valid until the
 * next call: the trace it came from is advanced only then. Memory: one iterator per trace;
 * the head search is linear in the number of traces.
 * Threads: a merge belongs to one export.
 */
#ifndef TRC_EXPORT_MERGE_H
#define TRC_EXPORT_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "trcfile.h"

struct export_merge_head {
	struct trcfile_reader *r;
	int64_t anchor;
	struct trcfile_iter *it;
	struct trc_record rec; /* the head */
	unsigned sidx;
	int state; /* 0 not read yet, 1 head valid, 2 at the end */
};

struct export_merge {
	struct export_merge_head *t;
	unsigned n;
	int64_t start_rt; /* the earliest start of recording on CLOCK_REALTIME */
	int last; /* the trace whose record was returned last (advanced on the next call) */
	int failed; /* the trace of the last error */
};

/* Starts merging the n readers, each over the streams include[i] selects (include or
 * include[i] NULL: all): -ERANGE when one's anchor is out of range (export_anchor; its index
 * in m->failed), -ENOMEM; 0. export_merge_stop frees what was made either way. */
int export_merge_start(struct export_merge *m, struct trcfile_reader *const *r, unsigned n,
		       bool *const *include);
/* The next record of all traces in CLOCK_REALTIME order: 1 with *rec, *trace and *sidx
 * filled, 0 at the end, -errno (the reader's message in m->t[m->failed].r). */
int export_merge_next(struct export_merge *m, struct trc_record *rec, unsigned *trace,
		      unsigned *sidx);
void export_merge_stop(struct export_merge *m);

#endif /* TRC_EXPORT_MERGE_H */
