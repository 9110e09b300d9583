/* export_perfetto.c - Perfetto's native protobuf trace, streamed: export.h's export_perfetto.
 *
 * Purpose: the export for traces too large for JSON. The output is a perfetto.protos.Trace
 * (repeated TracePacket packet = 1) written packet by packet as the merge produces records,
 * with the encoding Perfetto's own SDK uses to keep events small:
 *   - one packet sequence per stream, and one per counter track, so that no event names its
 *     track (a thread with two streams, a fork's and then its exec's, has one track, which
 *     both sequences default to); trusted_packet_sequence_id 1 holds the track descriptors
 *     and the trace's clock snapshot (CLOCK_MONOTONIC and, from the header's anchor,
 *     CLOCK_REALTIME: the file has no BOOTTIME), the others are numbered from 2 in order of
 *     first use (the first 126 used take one byte in every packet, however many threads the
 *     trace has);
 *   - each sequence starts with a packet that clears the incremental state and sets the
 *     sequence's defaults: timestamps on clock 64, a sequence-scoped incremental clock
 *     (ClockSnapshot.Clock.is_incremental) pinned to CLOCK_MONOTONIC at that packet, and the
 *     stream's thread track (the counter track) as the default track; later packets carry
 *     the delta from the previous packet of the sequence (a timestamp that goes backwards is
 *     written absolute on CLOCK_MONOTONIC instead, which leaves the incremental clock where
 *     it was). Each carries SEQ_NEEDS_INCREMENTAL_STATE: trace_packet.proto requires it of
 *     every packet after a sequence's TracePacketDefaults (2 bytes; no packet free of the
 *     sequence's state would be shorter);
 *   - event names are interned per sequence (InternedData.event_names, iids from 1 in order of
 *     first use), sent in the packet that first uses them;
 *   - each counter value is the shorter of counter_value (an int64 varint: 10 bytes for any
 *     negative value) and double_counter_value (8 bytes) that holds it exactly: a double for
 *     negative values and values from 2^56 whose bits span at most 53, a varint otherwise
 *     (trace processor keeps both as doubles; the file keeps every value exact).
 * So an event is its packet's tag and length, the time delta, the sequence id and flag, the
 * track event's tag and length and its type (12 bytes with 1-byte deltas), plus 2 for a slice
 * begin's name and 3 or more for a counter's value (see README for measured figures).
 *
 * Why not fewer: none of those fields can go. Trace processor refuses a track event with no
 * sequence id, no timestamp, or neither a type nor a legacy phase (a LegacyEvent costs more
 * than the type), and a counter event with neither counter_value nor double_counter_value;
 * the sequence's defaults, interned names and incremental clock all need the sequence id;
 * TrackEvent has no field for a counter but those two (no zigzag: a negative value is 10
 * bytes either way, counting the tag); a coarser clock unit would round the times. What is
 * left to choose is which sequence an event goes on: one per stream and one per counter
 * track is the smallest layout that keeps a thread's events on sequences of their own
 * (sharing a sequence makes every other thread's events name their track).
 *
 * Mapping:
 *   span_begin/end, func_enter/exit  TYPE_SLICE_BEGIN/END on the thread's track; functions are
 *                                    named module+offset (0xADDR without a module record)
 *   instant                          TYPE_INSTANT on the thread track, debug annotation value
 *   counter                          a counter track per (thread, name), parent the thread,
 *                                    each its own sequence
 *   alloc/free                       a counter track "heap live bytes" per process
 *   rss                              counter tracks "RSS" (program, buffers excluded) and
 *                                    "RSS trace buffers" per sampled process
 *   lost                             an instant "lost N records (reason)" on the thread
 *   exit                             one instant a process on its track, "exited with status
 *                                    N" (exit_code) or "killed by signal N" (signal), by the
 *                                    summary's rule: the status trace-run waited for, else
 *                                    the runtime's own record
 *   note                             instants on the program's process track
 *   thread, process                  TrackDescriptors (process: pid, cmdline, name once;
 *                                    thread: pid, tid, name, one a (pid, tid) whatever its
 *                                    streams, described on its first record with the name
 *                                    known then, re-sent when renamed)
 * Balance follows trace-dump chrome: an end with no open span on its thread is dropped, spans
 * still open at the end (or at to_ns) are closed at the last timestamp written, with a debug
 * annotation unfinished = true.
 *
 * Memory: per stream a small state, its intern table (distinct names and functions of the
 * thread) and dense copies of it and of its counter tracks for name ids below
 * DUMP__PF_DENSE_NAMES (16 KiB each at most), per process a few words, per counter track
 * (distinct thread x counter name, and three a process) a small state, the live-allocation
 * table (capped, as chrome's) and a 1 MiB output buffer: never the number of events.
 *
 * Speed: records come from the merge in runs (trcfile_iter_next_refs); slice begins and ends
 * and counter values of known tracks take export__pf_hot, inlined in the loop, which places
 * the packet with a few unaligned stores and sizes its varints without branches (the
 * deltas' sizes follow no pattern a branch predictor learns); everything else, and the
 * first use of a name or track, takes the general path (pb_wire.h), with the same bytes.
 *
 * Several traces (one output): records merged on CLOCK_REALTIME (export_merge.h), written on that
 * clock (each trace's records shifted by its anchor, start_realtime_ns - start_mono_ns), the
 * trace clock REALTIME instead of MONOTONIC. Trace N (from 1, in the order given) shows pids
 * and tids as pid + N x 10000000 and tid + N x 10000000 (export_pid_offset), the ranges chrome gives
 * pids (tids too: Perfetto keys threads by tid, and two hosts have the same tids), and names
 * its processes "HOST TRACE: name". Every stream of every trace is its own sequence.
 *
 * Schema: field numbers from Perfetto's protos/perfetto/trace/ (copied, with the version, in
 * tests/perfetto_trace.proto, which the tests decode the output with; they take Perfetto's
 * complete schema too, see tests/test_perfetto.c).
 *
 * Files: this one runs an export (one trace, or several merged); export_perfetto_records.c
 * maps the records and holds the hot path with the loop it is inlined into;
 * export_perfetto_tracks.c writes the packets, tracks and clock; export_perfetto_priv.h is
 * their shared state.
 *
 * Threads: the caller's; no globals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_merge.h"
#include "export_perfetto_priv.h"
#include "export_spans.h"

/* Makes trace i of several the one at hand. */
static void export__pf_select(struct export__pf *p, const struct export_input *in,
			      const struct export__pf_label *labels, const unsigned *base,
			      unsigned i, unsigned n)
{
	p->r = in[i].r;
	p->label = &labels[i];
	p->pid_base = (uint32_t)export_pid_offset(i, n);
	p->seq_base = base[i];
	p->seqs = p->all_seqs + base[i];
	p->n_streams = base[i + 1] - base[i];
}

/* Keeps the failure's one line s for the caller. */
static void export__pf_say(const struct export_perfetto_opts *o, const char *s)
{
	if (o->err && o->err_len)
		snprintf(o->err, o->err_len, "%s", s);
}

/* Several traces into one output: records merged on CLOCK_REALTIME and written on that clock,
 * each trace's processes and threads in their own pid/tid range. */
static int export__pf_multi(struct export__pf *p, const struct export_input *in, unsigned n,
			    struct export_perfetto_result *res)
{
	struct export_merge m = {0};
	int err = -ENOMEM;
	unsigned *base = calloc(n + 1, sizeof(*base));
	uint64_t *last = calloc(n, sizeof(*last)); /* each trace's last time, on REALTIME */
	struct export__pf_label *labels = calloc(n, sizeof(*labels));
	struct trcfile_reader **r = calloc(n, sizeof(*r));
	if (!base || !last || !labels || !r)
		goto nomem;
	for (unsigned i = 0; i < n; i++) {
		base[i + 1] = base[i] + trcfile_reader_stream_count(in[i].r);
		r[i] = in[i].r;
		const char *host = trcfile_reader_header(in[i].r)->host;
		const char *slash = strrchr(in[i].path, '/');
		labels[i] = (struct export__pf_label){
			host, strcspn(host, " "), slash ? slash + 1 : in[i].path};
	}
	err = export_merge_start(&m, r, n, NULL);
	if (err) {
		res->failed_input = m.failed;
		export__pf_say(p->o, err == -ERANGE ? "its start on CLOCK_REALTIME is out of range"
			       : trcfile_reader_errmsg(in[m.failed].r)[0]
				       ? trcfile_reader_errmsg(in[m.failed].r)
				       : "out of memory");
		goto out;
	}
	p->clock = PF_CLOCK_REALTIME;
	export__pf_clock(p, (uint64_t)m.start_rt);
	for (unsigned i = 0; i < n; i++) {
		export__pf_select(p, in, labels, base, i, n);
		export__pf_tracks(p);
		last[i] = export_start_ns(in[i].r) + (uint64_t)m.t[i].anchor;
	}
	struct trc_record rec;
	unsigned ti, sidx;
	int k = 0;
	while (!p->err && (k = export_merge_next(&m, &rec, &ti, &sidx)) == 1) {
		export__pf_select(p, in, labels, base, ti, n);
		rec.ts_ns += (uint64_t)m.t[ti].anchor; /* on CLOCK_REALTIME */
		export__pf_record(p, sidx, &rec);
		if (rec.ts_ns > last[ti])
			last[ti] = rec.ts_ns;
	}
	if (!p->err && k < 0) {
		export__pf_flush(p);
		res->failed_input = m.failed;
		res->flushed = true;
		export__pf_say(p->o, trcfile_reader_errmsg(in[m.failed].r));
		err = k;
		goto out;
	}
	/* Spans still open: closed at their trace's last timestamp. */
	export__pf_pending_exits(p);
	for (unsigned i = 0; i < n; i++) {
		export__pf_select(p, in, labels, base, i, n);
		export__pf_close_open(p, last[i]);
	}
	export__pf_heap_finish(p, r, last, n);
	export__pf_flush(p);
	res->flushed = true;
	err = p->err;
	if (err)
		export__pf_say(p->o, strerror(-err));
	goto out;
nomem:
	export__pf_say(p->o, "out of memory");
out:
	export_merge_stop(&m);
	free(base);
	free(last);
	free(labels);
	free(r);
	return err;
}

/* One trace, from o->from_ns to o->to_ns. */
static int export__pf_one(struct export__pf *p, struct trcfile_reader *r,
			  struct export_perfetto_result *res)
{
	const struct export_perfetto_opts *o = p->o;
	p->r = r;
	struct trcfile_iter *it = trcfile_iter_new(r);
	if (!it) {
		res->failed_input = 0;
		export__pf_say(o, trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
							   : "out of memory");
		return -ENOMEM;
	}
	uint64_t start = export_start_ns(r);
	uint64_t t_from = o->from_ns > UINT64_MAX - start ? UINT64_MAX : start + o->from_ns;
	uint64_t t_to = o->to_ns > UINT64_MAX - start ? UINT64_MAX : start + o->to_ns;
	p->last_ts = o->has_from ? t_from : start;
	export__pf_prologue(p, p->last_ts);
	bool split_failed = false;
	int err = o->has_from ? trcfile_iter_seek(it, t_from) : 0;
	if (!err)
		err = export__pf_records(p, it, t_from, t_to, &split_failed);
	if (split_failed) {
		res->split_failed = true;
		export__pf_say(o, strerror(-err));
		goto out;
	}
	if (err < 0 && !p->err) {
		export__pf_flush(p);
		res->failed_input = 0;
		res->flushed = true;
		export__pf_say(o, trcfile_reader_errmsg(r));
		goto out;
	}
	if (p->err) {
		err = p->err;
		export__pf_say(o, strerror(-err));
		goto out;
	}
	/* Spans still open: closed at the last timestamp written. */
	export__pf_pending_exits(p);
	export__pf_close_open(p, p->last_ts);
	export__pf_heap_finish(p, &p->r, &p->last_ts, 1);
	export__pf_flush(p);
	res->flushed = true;
	err = p->err;
	if (err)
		export__pf_say(o, strerror(-err));
out:
	trcfile_iter_free(it);
	return err;
}

static size_t export__pf_plain_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				    uint64_t addr, char *buf, size_t len)
{
	(void)ctx;
	return export_func_name_plain(r, pid, addr, buf, len);
}

int export_perfetto(const struct export_input *in, unsigned n,
		    const struct export_perfetto_opts *o, const struct export_sink *sink,
		    struct export_perfetto_result *res)
{
	struct export_perfetto_result none;
	if (!res)
		res = &none;
	*res = (struct export_perfetto_result){.failed_input = -1};
	if (!n || (n > 1 && (o->has_from || o->to_ns != UINT64_MAX || o->split_bytes)) ||
	    (o->split_bytes && !o->split)) {
		export__pf_say(o, !n ? "no trace given"
			       : n > 1 ? "a range or a split takes one trace"
				       : "a split size needs a split callback");
		return -EINVAL;
	}
	struct export_perfetto_opts named = *o;
	if (!named.names.name)
		named.names = (struct export_namer){.name = export__pf_plain_name};
	unsigned streams = 0;
	for (unsigned i = 0; i < n; i++)
		streams += trcfile_reader_stream_count(in[i].r);
	struct export__pf *p = export__pf_new(streams);
	int err;
	if (!p || !p->all_seqs || !p->live || !p->out) {
		res->failed_input = n == 1 ? 0 : -1;
		export__pf_say(o, n == 1 && trcfile_reader_errmsg(in[0].r)[0]
				       ? trcfile_reader_errmsg(in[0].r)
				       : "out of memory");
		err = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < n && !p->heap; i++)
		if (export__pf_heap_wanted(in[i].r) && !(p->heap = export__pf_heap_new())) {
			res->failed_input = -1;
			export__pf_say(o, "out of memory");
			err = -ENOMEM;
			goto out;
		}
	p->o = &named;
	p->sink = sink;
	p->split_bytes = o->split_bytes;
	err = n == 1 ? export__pf_one(p, in[0].r, res) : export__pf_multi(p, in, n, res);
	if (!err)
		res->too_deep = p->too_deep;
out:
	export__pf_free(p);
	return err;
}
