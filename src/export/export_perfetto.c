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
 * Why not fewer (measured against the bench=dump trace; the figures below leave out the
 * flag, which adds its 2 bytes an event to every layout alike): none of those fields can go.
 * Trace processor refuses a track event with no sequence id, no timestamp, or neither a type
 * nor a legacy phase (a LegacyEvent costs more than the type),
 * and a counter event with neither counter_value nor double_counter_value; the sequence's
 * defaults, interned names and incremental clock all need the sequence id; TrackEvent has
 * no field for a counter but those two (no zigzag: a negative value is 10 bytes either way,
 * counting the tag); a coarser clock unit would round the times. What is left to choose is
 * which sequence an event goes on. Modelled on the bench trace (its generator replayed,
 * bytes a field summed; 5 M / 100 M events): this layout 12.002 / 12.475 (with the flag,
 * what it writes: 14.002 / 14.475);
 * counters on their thread's sequence, naming their track (2 bytes) 12.081 / 12.554;
 * counter tracks incremental (is_incremental: a negative step is 10 bytes too) 12.148 /
 * 12.150; two threads to a sequence 12.650 / 13.124, all on one 12.935 / 13.408; and the
 * bound for any layout keeping a thread's events on sequences of their own, where a delta is
 * at least the gap since the thread's previous event, even with tracks free to name: 11.846
 * / 12.319. Only with every event's delta taken as the gap in the whole trace and no track
 * ever named does the sum reach 11.969 on 100 M, and that needs threads sharing a sequence,
 * whose events but one thread's then name their track (2 bytes each).
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
 * and counter values of known tracks take dump__pf_hot, inlined in the loop, which places
 * the packet with a few unaligned stores and sizes its varints without branches (the
 * deltas' sizes follow no pattern a branch predictor learns); everything else, and the
 * first use of a name or track, takes the general path (pb_wire.h), with the same bytes.
 *
 * Several traces (one output): records merged on CLOCK_REALTIME (export_merge.h), written on that
 * clock (each trace's records shifted by its anchor, start_realtime_ns - start_mono_ns), the
 * trace clock REALTIME instead of MONOTONIC. Trace N (from 1, in the order given) shows pids
 * and tids as pid + N x 10000000 and tid + N x 10000000, the ranges trace-dump chrome gives
 * pids (tids too: Perfetto keys threads by tid, and two hosts have the same tids), and names
 * its processes "HOST TRACE: name". Every stream of every trace is its own sequence.
 *
 * Schema: field numbers from Perfetto's protos/perfetto/trace/ (copied, with the version, in
 * tests/perfetto_trace.proto, which the tests decode the output with; they take Perfetto's
 * complete schema too, see tests/test_perfetto.c).
 *
 * Threads: the caller's; no globals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "allocmap.h"
#include "export.h"
#include "export_merge.h"
#include "export_spans.h"
#include "pb_wire.h"
#include "trcfile.h"
#include "u64map.h"

/* Several traces: what names trace i's processes ("HOST TRACE: name"). */
struct export__pf_label {
	const char *host; /* the header's host string; its first host_len bytes: the node name */
	size_t host_len;
	const char *trace; /* the FILE's base name */
};

/* Perfetto constants (tests/perfetto_trace.proto has the messages). */
enum {
	PF_TRACE_PACKET = 1,
	/* TracePacket */
	PF_TIMESTAMP = 8,
	PF_CLOCK_SNAPSHOT = 6,
	PF_SEQ_ID = 10,
	PF_TRACK_EVENT = 11,
	PF_INTERNED_DATA = 12,
	PF_SEQ_FLAGS = 13,
	PF_TIMESTAMP_CLOCK_ID = 58,
	PF_DEFAULTS = 59,
	PF_TRACK_DESCRIPTOR = 60,
	PF_FIRST_ON_SEQ = 87,
	/* sequence flags */
	PF_SEQ_CLEARED = 1,
	PF_SEQ_NEEDS_STATE = 2,
	/* TrackEvent */
	PF_TE_DEBUG = 4,
	PF_TE_TYPE = 9,
	PF_TE_NAME_IID = 10,
	PF_TE_TRACK = 11,
	PF_TE_NAME = 23,
	PF_TE_COUNTER_VALUE = 30,
	PF_TE_DOUBLE_COUNTER_VALUE = 44,
	PF_TE_TRACK_EVENT_TAG = (PF_TRACK_EVENT << 3) | PB_LEN,
	PF_TYPE_BEGIN = 1,
	PF_TYPE_END = 2,
	PF_TYPE_INSTANT = 3,
	PF_TYPE_COUNTER = 4,
	/* clocks */
	PF_CLOCK_REALTIME = 1,
	PF_CLOCK_MONOTONIC = 3,
	PF_CLOCK_SEQ = 64,
	/* counter units */
	PF_UNIT_COUNT = 2,
	PF_UNIT_BYTES = 3,
};

#define EXPORT__PF_LIVE_MAX_ENTRIES (1u << 20)
#define EXPORT__PF_SEQ_BASE 2u
#define EXPORT__PF_DENSE_NAMES 4096u
#define EXPORT__PF_RUN 64u /* merged records taken at once */
/* The exporter's own output buffer, handed to the sink in writes this large: each write
 * call costs the file system its own update, apart from the bytes. */
#define EXPORT__PF_OUT_BYTES (1u << 20)
/* Room the hot paths need after the buffer's end: a packet (< 128 bytes) and the width of
 * their last unaligned store. */
#define EXPORT__PF_OUT_SLACK 160u

/* Open slices a stream keeps (its stack of intern keys, 8 bytes each): a trace of begins
 * that never end would otherwise grow it by 8 bytes a begin, and every --split-size file
 * would start by replaying it. Begins past it are left out with their ends, and counted
 * (the note after the export). Deeper than any program's real nesting. */
#define EXPORT__PF_MAX_DEPTH EXPORT_PERFETTO_MAX_DEPTH

/* Intern keys: kind in the top two bits. */
#define EXPORT__PF_KEY_NAME (1ull << 62)
#define EXPORT__PF_KEY_FUNC (2ull << 62)

struct export__pf_seq {
	uint32_t id; /* trusted_packet_sequence_id; 0 until its first packet */
	bool started;
	uint8_t hdr_len; /* bytes of hdr */
	/* The packet's trusted_packet_sequence_id field (tag, varint) and sequence_flags field
	 * (SEQ_NEEDS_INCREMENTAL_STATE: 2 bytes), byte 0 low: at most 8 bytes. */
	uint64_t hdr;
	uint64_t last_ts; /* of the incremental clock */
	uint64_t track; /* the default track: the thread's, or the process's */
	uint32_t pid; /* the stream's process (the program's for META/RSS streams of pid 0) */
	/* Thread streams: the first stream of the trace with this (pid, tid), which owns the
	 * thread's track (a fork and an exec give one thread two streams, one track); whether
	 * the owner's track is described yet (on first use, with the name known then). */
	bool thread;
	unsigned owner;
	bool described;
	unsigned active; /* owner: its stream that started last (the one that may hold slices) */
	uint64_t depth; /* open slices, at most EXPORT__PF_MAX_DEPTH */
	uint64_t over; /* begins past EXPORT__PF_MAX_DEPTH still open: left out, with their ends */
	uint64_t *stack; /* the intern keys of the open slices, outermost first (for splits) */
	size_t stack_cap;
	uint64_t next_iid;
	struct u64map iids; /* intern key -> iid */
	/* The same for event names of id < EXPORT__PF_DENSE_NAMES, by id (0: not yet interned):
	 * the span hot path's lookup without hashing. */
	uint32_t *name_iid;
	uint32_t name_cap;
	/* Its counter tracks (index + 1 in ctrs; 0: none yet) by name id, the same way. */
	uint32_t *ctr_of;
	uint32_t ctr_cap;
};

struct export__pf_proc {
	uint32_t pid;
	uint64_t track;
	uint64_t heap_ctr, rss_ctr, rss_buf_ctr; /* counter sequences (index + 1; 0: none yet) */
	bool named;
	uint64_t live_bytes;
	/* Its exit, one instant a process, by the summary's rule (summary_processes.c): the
	 * status trace-run waited for is the one that counts, written when it comes; else the
	 * runtime's own record (TRC_EXIT_SELF; the latest), kept pending until the end of the
	 * export (or of the file, for --split-size), since a waited-for one may follow. */
	bool exit_done, exit_pending;
	struct export__pf_seq *exit_seq; /* the pending record's stream */
	uint64_t exit_ts;
	uint32_t exit_status, exit_flags;
};

struct export__pf {
	struct trcfile_reader *r; /* the trace of the record at hand */
	/* Output not yet handed to the sink (EXPORT__PF_OUT_BYTES + EXPORT__PF_OUT_SLACK). Every
	 * byte of the export goes through it, in order; export__pf_flush before a split. */
	uint8_t *out;
	size_t out_len;
	const struct export_sink *sink;
	uint64_t file_bytes; /* handed to the sink since the current file began */
	uint64_t split_bytes; /* export_perfetto_opts.split_bytes */
	const struct export_perfetto_opts *o;
	struct pb_buf pkt;
	struct export__pf_seq *seqs; /* that trace's streams: all_seqs + seq_base */
	unsigned n_streams; /* that trace's */
	unsigned seq_base; /* the index of its first stream among every trace's */
	struct export__pf_seq *all_seqs;
	unsigned n_all;
	unsigned clock; /* the trace clock: MONOTONIC, REALTIME for several FILEs */
	/* Several FILEs: the trace at hand's label and pid (and tid) offset; NULL, 0 for one. */
	const struct export__pf_label *label;
	uint32_t pid_base;
	uint64_t next_uuid;
	uint32_t next_seq_id; /* the next sequence to start takes it */
	struct export__pf_proc *procs;
	size_t n_procs, cap_procs;
	struct u64map counters; /* (stream << 32 | name id) + 1 -> counter index + 1 */
	/* Every counter track is a sequence of its own, with the track as its default: its
	 * events name no track. */
	struct export__pf_seq **ctrs;
	size_t n_ctrs, cap_ctrs;
	struct allocmap *live;
	uint64_t last_ts;
	uint64_t unmatched_end, closed_at_end;
	uint64_t too_deep; /* begins left out past EXPORT__PF_MAX_DEPTH (export__pf_push) */
	bool live_approximate;
	int err;
	/* --split-size: the descriptors written so far (replayed at the start of each file) */
	struct pb_buf desc_log;
	bool replaying;
	bool splitting; /* export__pf_split is beginning the open slices again */
};

/* ---- packets --------------------------------------------------------------------------- */

/* Gives sequence s its id (and the bytes of its id and flags fields, for the hot path). */
static void export__pf_seq_set_id(struct export__pf_seq *s, uint32_t id)
{
	uint8_t b[8] = {(PF_SEQ_ID << 3) | PB_VARINT};
	s->id = id;
	uint8_t *q = pb_put_varint(b + 1, id);
	*q++ = (PF_SEQ_FLAGS << 3) | PB_VARINT;
	*q++ = PF_SEQ_NEEDS_STATE;
	s->hdr_len = (uint8_t)(q - b);
	s->hdr = 0;
	for (unsigned i = 0; i < s->hdr_len; i++)
		s->hdr |= (uint64_t)b[i] << (8 * i);
}

/* Hands the exporter's buffer to the sink (a sink's error is the export's). */
static void export__pf_flush(struct export__pf *p)
{
	if (p->out_len) {
		int err = p->sink->write(p->sink->ctx, p->out, p->out_len);
		if (err && !p->err)
			p->err = err;
		p->file_bytes += p->out_len;
	}
	p->out_len = 0;
}

/* Room for n more bytes (plus the slack) in the exporter's buffer: where they go. */
static inline uint8_t *export__pf_room(struct export__pf *p, size_t n)
{
	if (__builtin_expect(EXPORT__PF_OUT_BYTES - p->out_len < n, 0))
		export__pf_flush(p);
	return p->out + p->out_len;
}

static void export__pf_write(struct export__pf *p, const void *data, size_t n)
{
	if (n > EXPORT__PF_OUT_BYTES) {
		export__pf_flush(p);
		int err = p->sink->write(p->sink->ctx, data, n);
		if (err && !p->err)
			p->err = err;
		p->file_bytes += n;
		return;
	}
	memcpy(export__pf_room(p, n), data, n);
	p->out_len += n;
}

/* The current file has reached the split size, counting what is still in the buffer. */
static inline bool export__pf_full(const struct export__pf *p)
{
	return p->split_bytes && p->file_bytes + p->out_len >= p->split_bytes;
}

static void export__pf_emit(struct export__pf *p)
{
	if (p->pkt.err) {
		p->err = p->pkt.err;
		return;
	}
	export__pf_write(p, p->pkt.p, p->pkt.len);
}

/* A track descriptor packet on sequence 1: name, parent, and (by kind) process, thread or
 * counter details. */
static void export__pf_descriptor(struct export__pf *p, uint64_t uuid, uint64_t parent,
				const char *name, size_t name_len, const struct export__pf_proc *proc,
				const char *cmdline, size_t cmdline_len, uint32_t tid,
				int counter_unit)
{
	struct pb_buf *b = &p->pkt;
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	pb_uint(b, PF_SEQ_ID, 1);
	size_t td = pb_open(b, PF_TRACK_DESCRIPTOR);
	pb_uint(b, 1, uuid);
	if (parent)
		pb_uint(b, 5, parent);
	if (tid) {
		size_t th = pb_open(b, 4);
		pb_uint(b, 1, proc->pid);
		pb_uint(b, 2, tid + p->pid_base);
		if (name)
			pb_bytes(b, 5, name, name_len);
		pb_close(b, th);
	} else if (counter_unit >= 0) {
		if (name)
			pb_bytes(b, 2, name, name_len);
		size_t cd = pb_open(b, 8);
		if (counter_unit)
			pb_uint(b, 3, (uint64_t)counter_unit);
		pb_close(b, cd);
	} else {
		size_t pd = pb_open(b, 3);
		pb_uint(b, 1, proc->pid);
		/* cmdline: NUL-separated arguments, one repeated string each; the name is the
		 * first argument's last path component. */
		size_t n = cmdline_len;
		if (n && cmdline[n - 1] == 0)
			n--;
		const char *first = NULL;
		size_t first_len = 0;
		for (size_t i = 0; cmdline && i <= n;) {
			const char *e = memchr(cmdline + i, 0, n - i);
			size_t len = e ? (size_t)(e - (cmdline + i)) : n - i;
			if (!first) {
				first = cmdline + i;
				first_len = len;
			}
			pb_bytes(b, 2, cmdline + i, len);
			i += len + 1;
		}
		if (first) {
			const char *base = first;
			for (size_t i = 0; i < first_len; i++)
				if (first[i] == '/')
					base = first + i + 1;
			size_t base_len = first_len - (size_t)(base - first);
			const struct export__pf_label *l = p->label;
			char *tmp =
				l ? malloc(l->host_len + strlen(l->trace) + base_len + 4) : NULL;
			if (tmp) {
				/* Several FILEs: "HOST TRACE: name". */
				int k = sprintf(tmp, "%.*s %s: ", (int)l->host_len, l->host,
						l->trace);
				memcpy(tmp + k, base, base_len);
				pb_bytes(b, 6, tmp, (size_t)k + base_len);
				free(tmp);
			} else {
				if (l)
					p->err = -ENOMEM;
				pb_bytes(b, 6, base, base_len);
			}
		}
		pb_close(b, pd);
	}
	pb_close(b, td);
	pb_close(b, pk);
	export__pf_emit(p);
	if (!b->err) {
		/* Kept for the next file of --split-size (tracks are few: bounded). */
		if (pb_reserve(&p->desc_log, b->len) == 0) {
			memcpy(p->desc_log.p + p->desc_log.len, b->p, b->len);
			p->desc_log.len += b->len;
		} else {
			p->err = -ENOMEM;
		}
	}
}

/* The process pid of the trace at hand (described on first use). */
static struct export__pf_proc *export__pf_proc(struct export__pf *p, uint32_t pid)
{
	for (size_t i = 0; i < p->n_procs; i++)
		if (p->procs[i].pid == pid + p->pid_base)
			return &p->procs[i];
	if (p->n_procs == p->cap_procs) {
		size_t cap = p->cap_procs ? p->cap_procs * 2 : 16;
		struct export__pf_proc *n = realloc(p->procs, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return NULL;
		}
		p->procs = n;
		p->cap_procs = cap;
	}
	struct export__pf_proc *pr = &p->procs[p->n_procs++];
	*pr = (struct export__pf_proc){.pid = pid + p->pid_base, .track = p->next_uuid++};
	uint32_t len = 0;
	const char *cmd = trcfile_reader_process_cmdline(p->r, pid, &len);
	const struct trcfile_header *h = trcfile_reader_header(p->r);
	if (!cmd && pid == h->pid) {
		cmd = h->cmdline;
		len = h->cmdline_len;
	}
	pr->named = cmd != NULL;
	export__pf_descriptor(p, pr->track, 0, NULL, 0, pr, cmd, cmd ? len : 0, 0, -1);
	return pr;
}

/* A new counter track under parent, and its sequence: its index + 1, or 0 out of memory. */
static uint64_t export__pf_new_counter(struct export__pf *p, uint64_t parent, const char *name,
				     size_t len, int unit)
{
	if (p->n_ctrs == p->cap_ctrs) {
		size_t cap = p->cap_ctrs ? p->cap_ctrs * 2 : 16;
		struct export__pf_seq **n = realloc(p->ctrs, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return 0;
		}
		p->ctrs = n;
		p->cap_ctrs = cap;
	}
	struct export__pf_seq *c = calloc(1, sizeof(*c));
	if (!c) {
		p->err = -ENOMEM;
		return 0;
	}
	c->track = p->next_uuid++;
	u64map_init(&c->iids, SIZE_MAX);
	p->ctrs[p->n_ctrs++] = c;
	export__pf_descriptor(p, c->track, parent, name, len, NULL, NULL, 0, 0, unit);
	return p->n_ctrs;
}

/* A process's counter track in *slot, created on first use. */
static uint64_t export__pf_counter_track(struct export__pf *p, uint64_t *slot, uint64_t parent,
				       const char *name, int unit)
{
	if (!*slot)
		*slot = export__pf_new_counter(p, parent, name, strlen(name), unit);
	return *slot;
}

static void export__pf_close_shared(struct export__pf *p, const struct export__pf_seq *s, uint64_t ts);
static void export__pf_thread_track(struct export__pf *p, unsigned sidx, const char *name,
				  uint32_t len);

/* Starts a packet of sequence s at ts: the sequence's first packet first (if needed), then
 * the new packet's header (timestamp, sequence). Returns the packet's mark. */
static size_t export__pf_begin_seq(struct export__pf *p, struct export__pf_seq *s, uint64_t ts)
{
	struct pb_buf *b = &p->pkt;
	if (!s->started) {
		if (s->thread && !p->splitting)
			export__pf_close_shared(p, s, ts);
		s->started = true;
		if (!s->id)
			export__pf_seq_set_id(s, p->next_seq_id++);
		pb_reset(b);
		size_t pk = pb_open(b, PF_TRACE_PACKET);
		pb_uint(b, PF_TIMESTAMP, ts);
		pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
		pb_uint(b, PF_SEQ_ID, s->id);
		pb_uint(b, PF_SEQ_FLAGS, PF_SEQ_CLEARED);
		pb_uint(b, PF_FIRST_ON_SEQ, 1);
		size_t d = pb_open(b, PF_DEFAULTS);
		pb_uint(b, PF_TIMESTAMP_CLOCK_ID, PF_CLOCK_SEQ);
		size_t ted = pb_open(b, 11);
		pb_uint(b, 11, s->track);
		pb_close(b, ted);
		pb_close(b, d);
		size_t cs = pb_open(b, PF_CLOCK_SNAPSHOT);
		size_t c = pb_open(b, 1);
		pb_uint(b, 1, PF_CLOCK_SEQ);
		pb_uint(b, 2, ts);
		pb_uint(b, 3, 1);
		pb_close(b, c);
		c = pb_open(b, 1);
		pb_uint(b, 1, p->clock);
		pb_uint(b, 2, ts);
		pb_close(b, c);
		pb_close(b, cs);
		pb_close(b, pk);
		export__pf_emit(p);
		s->last_ts = ts;
	}
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	if (ts >= s->last_ts) {
		pb_uint(b, PF_TIMESTAMP, ts - s->last_ts);
		s->last_ts = ts;
	} else {
		pb_uint(b, PF_TIMESTAMP, ts);
		pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
	}
	/* Every packet after the first depends on the sequence's incremental state (its
	 * defaults, the incremental clock, interned names): trace_packet.proto asks for the
	 * flag on each. */
	pb_uint(b, PF_SEQ_ID, s->id);
	pb_uint(b, PF_SEQ_FLAGS, PF_SEQ_NEEDS_STATE);
	return pk;
}

/* The same on stream sidx's sequence. */
static size_t export__pf_begin(struct export__pf *p, unsigned sidx, uint64_t ts)
{
	return export__pf_begin_seq(p, &p->seqs[sidx], ts);
}

/* t[id] = v in a dense table by name id (grown by doubling, new entries 0), for ids below
 * EXPORT__PF_DENSE_NAMES (larger ones are not kept: the callers' maps have them). */
static void export__pf_dense_set(struct export__pf *p, uint32_t **t, uint32_t *cap, uint32_t id,
			       uint64_t v)
{
	if (id >= EXPORT__PF_DENSE_NAMES || v > UINT32_MAX)
		return;
	if (id >= *cap) {
		uint32_t c = *cap ? *cap : 64;
		while (c <= id)
			c *= 2;
		uint32_t *n = realloc(*t, c * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return;
		}
		memset(n + *cap, 0, (c - *cap) * sizeof(*n));
		*t = n;
		*cap = c;
	}
	(*t)[id] = (uint32_t)v;
}

/* Keeps an event name's iid in the sequence's dense table too (when its id is small). */
static void export__pf_dense_put(struct export__pf *p, struct export__pf_seq *s, uint64_t key,
			       uint64_t iid)
{
	if ((key & (3ull << 62)) == EXPORT__PF_KEY_NAME)
		export__pf_dense_set(p, &s->name_iid, &s->name_cap, (uint32_t)key, iid);
}

/* The iid of an event name on stream sidx; adds InternedData to the open packet the first
 * time. name/len are read only then (name may be NULL: then made from key). */
static uint64_t export__pf_iid(struct export__pf *p, unsigned sidx, uint64_t key, const char *name,
			     size_t len)
{
	struct export__pf_seq *s = &p->seqs[sidx];
	uint64_t *v = u64map_get(&s->iids, key);
	if (v)
		return *v;
	uint64_t iid = ++s->next_iid;
	if (u64map_put(&s->iids, key, iid, NULL, NULL)) {
		p->err = -ENOMEM;
		return 0;
	}
	export__pf_dense_put(p, s, key, iid);
	struct pb_buf *b = &p->pkt;
	size_t id = pb_open(b, PF_INTERNED_DATA);
	size_t en = pb_open(b, 2);
	pb_uint(b, 1, iid);
	pb_bytes(b, 2, name, len);
	pb_close(b, en);
	pb_close(b, id);
	return iid;
}

static uint64_t export__pf_name_iid(struct export__pf *p, unsigned sidx, uint32_t name_id)
{
	uint64_t key = EXPORT__PF_KEY_NAME | name_id;
	if (u64map_get(&p->seqs[sidx].iids, key))
		return *u64map_get(&p->seqs[sidx].iids, key);
	uint32_t len = 0;
	const char *n = trcfile_reader_name(p->r, name_id, &len);
	char b[16];
	if (!n) {
		len = (uint32_t)snprintf(b, sizeof(b), "#%u", name_id);
		n = b;
	}
	return export__pf_iid(p, sidx, key, n, len);
}

static uint64_t export__pf_func_iid(struct export__pf *p, unsigned sidx, uint32_t pid, uint64_t addr)
{
	uint64_t key = EXPORT__PF_KEY_FUNC | (addr & ~(3ull << 62));
	uint64_t *v = u64map_get(&p->seqs[sidx].iids, key);
	if (v)
		return *v;
	char b[320];
	size_t k = p->o->names.name(p->o->names.ctx, p->r, pid, addr, b, sizeof(b));
	return export__pf_iid(p, sidx, key, b, k);
}

/* A whole track event packet on stream sidx. name_iid 0 = no interned name; name (non-NULL)
 * = a plain name; track 0 = the sequence's default track. */
struct export__pf_ev {
	unsigned type;
	uint64_t name_iid;
	const char *name;
	size_t name_len;
	uint64_t track;
	bool has_value;
	int64_t value;
	const char *annot; /* debug annotation name for value (instants) */
	const char *flag; /* a debug annotation FLAG = true ("unfinished", "split"...) */
};

/* Whether v is exactly a double: its significant bits span at most 53 (true of every value
 * of magnitude up to 2^53, and of INT64_MIN). */
static inline bool export__pf_exact_double(int64_t v)
{
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	return u == 0 || u >> __builtin_ctzll(u) < (1ull << 53);
}

/* Whether v goes as double_counter_value (tag and 8 bytes): when that is shorter than
 * counter_value's tag and int64 varint (10 bytes for a negative value, 9 from 2^56) and
 * holds v exactly. */
static inline bool export__pf_counter_as_double(int64_t v)
{
	return (v < 0 || (uint64_t)v >= 1ull << 56) && export__pf_exact_double(v);
}

/* A counter's value at q (room for 12 bytes), as export__pf_counter_as_double chooses; returns
 * the byte after it. */
static uint8_t *export__pf_put_counter_value(uint8_t *q, int64_t v)
{
	if (!export__pf_counter_as_double(v)) {
		q = pb_put_varint(q, (PF_TE_COUNTER_VALUE << 3) | PB_VARINT);
		return pb_put_varint(q, (uint64_t)v);
	}
	q = pb_put_varint(q, (PF_TE_DOUBLE_COUNTER_VALUE << 3) | PB_I64);
	double d = (double)v;
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	for (int i = 0; i < 8; i++)
		*q++ = (uint8_t)(bits >> (8 * i));
	return q;
}

static void export__pf_event_body(struct export__pf *p, size_t pk, const struct export__pf_ev *e)
{
	struct pb_buf *b = &p->pkt;
	size_t te = pb_open(b, PF_TRACK_EVENT);
	pb_uint(b, PF_TE_TYPE, e->type);
	if (e->name_iid)
		pb_uint(b, PF_TE_NAME_IID, e->name_iid);
	else if (e->name)
		pb_bytes(b, PF_TE_NAME, e->name, e->name_len);
	if (e->track)
		pb_uint(b, PF_TE_TRACK, e->track);
	if (e->has_value && e->annot) {
		size_t da = pb_open(b, PF_TE_DEBUG);
		pb_str(b, 10, e->annot);
		pb_int(b, 4, e->value);
		pb_close(b, da);
	} else if (e->has_value && pb_reserve(b, 12) == 0) {
		b->len = (size_t)(export__pf_put_counter_value(b->p + b->len, e->value) - b->p);
	}
	if (e->flag) {
		size_t da = pb_open(b, PF_TE_DEBUG);
		pb_str(b, 10, e->flag);
		pb_uint(b, 2, 1);
		pb_close(b, da);
	}
	pb_close(b, te);
	pb_close(b, pk);
	export__pf_emit(p);
}

/* Slices still open on stream sidx: closed at ts (flagged unfinished), counted. */
static void export__pf_close_stream(struct export__pf *p, unsigned sidx, uint64_t ts)
{
	p->seqs[sidx].over = 0; /* left out: nothing to close */
	for (; p->seqs[sidx].depth; p->seqs[sidx].depth--) {
		size_t pk = export__pf_begin(p, sidx, ts);
		struct export__pf_ev e = {.type = PF_TYPE_END, .flag = "unfinished"};
		export__pf_event_body(p, pk, &e);
		p->closed_at_end++;
	}
}

/* Thread stream s starts at ts: what another stream of its thread (the image before an
 * exec) left open on their shared track ends there, as unfinished: that stream has ended,
 * and its slices must not enclose the new one's. */
static void export__pf_close_shared(struct export__pf *p, const struct export__pf_seq *s, uint64_t ts)
{
	if (s < p->seqs || s >= p->seqs + p->n_streams)
		return; /* another trace's (several FILEs: a pending exit written at the end) */
	/* A thread's streams follow one another: only the one that started last can hold
	 * slices open on the track (its owner keeps which). */
	struct export__pf_seq *own = &p->seqs[s->owner];
	unsigned k = own->active, me = (unsigned)(s - p->seqs);
	if (k != me && p->seqs[k].started && p->seqs[k].depth)
		export__pf_close_stream(p, k, ts);
	own->active = me;
}

/* pb_varint_size and pb_put_varint with the one-byte case (most deltas, ids and iids) first. */
static inline size_t export__pf_varint_size(uint64_t v)
{
	return __builtin_expect(v < 0x80, 1) ? 1 : pb_varint_size(v);
}

static inline uint8_t *export__pf_put_varint(uint8_t *o, uint64_t v)
{
	if (__builtin_expect(v < 0x80, 1)) {
		*o = (uint8_t)v;
		return o + 1;
	}
	return pb_put_varint(o, v);
}

/* Bytes of a counter value as export__pf_put_counter_value writes it. */
static inline size_t export__pf_counter_value_size(int64_t v)
{
	return export__pf_counter_as_double(v) ? 10 : 2 + pb_varint_size((uint64_t)v);
}

/* The hot path: a track event packet of a started sequence, forward in time, whose name (if
 * any) is already interned, written straight into the output buffer with no nesting fix-ups
 * (every length is computed before the bytes are placed). Returns false when it does not
 * apply (the caller then takes the general path). Same bytes as the general path. Inlined
 * into each caller so the constant arguments fold away. */
static inline __attribute__((always_inline)) bool
export__pf_fast_seq(struct export__pf *p, struct export__pf_seq *s, uint64_t ts, unsigned type,
		  uint64_t iid, uint64_t track, bool has_value, int64_t value)
{
	if (__builtin_expect(!s->started || ts < s->last_ts, 0))
		return false;
	uint64_t dt = ts - s->last_ts;
	uint32_t seq = s->id;
	size_t tel = 2 + (iid ? 1 + export__pf_varint_size(iid) : 0) +
		     (track ? 1 + export__pf_varint_size(track) : 0) +
		     (has_value ? export__pf_counter_value_size(value) : 0);
	size_t pkl = 1 + export__pf_varint_size(dt) + 1 + export__pf_varint_size(seq) + 2 + 2 + tel;
	/* Packet and header fit in 127 bytes (at most 1+10+1+5+2+2+2+11+11+12): the packet's
	 * length is one byte, and so is the track event's. */
	uint8_t *o = export__pf_room(p, 2 + pkl);
	*o++ = (PF_TRACE_PACKET << 3) | PB_LEN;
	*o++ = (uint8_t)pkl;
	*o++ = (PF_TIMESTAMP << 3) | PB_VARINT;
	o = export__pf_put_varint(o, dt);
	*o++ = (PF_SEQ_ID << 3) | PB_VARINT;
	o = export__pf_put_varint(o, seq);
	*o++ = (PF_SEQ_FLAGS << 3) | PB_VARINT;
	*o++ = PF_SEQ_NEEDS_STATE;
	*o++ = PF_TE_TRACK_EVENT_TAG;
	*o++ = (uint8_t)tel;
	*o++ = (PF_TE_TYPE << 3) | PB_VARINT;
	*o++ = (uint8_t)type;
	if (iid) {
		*o++ = (PF_TE_NAME_IID << 3) | PB_VARINT;
		o = export__pf_put_varint(o, iid);
	}
	if (track) {
		*o++ = (PF_TE_TRACK << 3) | PB_VARINT;
		o = export__pf_put_varint(o, track);
	}
	if (has_value)
		o = export__pf_put_counter_value(o, value);
	p->out_len = (size_t)(o - p->out);
	s->last_ts = ts;
	return true;
}

/* The same on stream sidx's sequence. */
static inline __attribute__((always_inline)) bool export__pf_fast(struct export__pf *p, unsigned sidx,
								uint64_t ts, unsigned type,
								uint64_t iid, uint64_t track,
								bool has_value, int64_t value)
{
	return export__pf_fast_seq(p, &p->seqs[sidx], ts, type, iid, track, has_value, value);
}

/* A value of counter ctr (index + 1; 0, a track that could not be made, writes nothing), on
 * the counter's own sequence. */
static void export__pf_counter(struct export__pf *p, uint64_t ctr, uint64_t ts, int64_t value)
{
	if (!ctr)
		return;
	struct export__pf_seq *c = p->ctrs[ctr - 1];
	if (export__pf_fast_seq(p, c, ts, PF_TYPE_COUNTER, 0, 0, true, value))
		return;
	size_t pk = export__pf_begin_seq(p, c, ts);
	struct export__pf_ev e = {.type = PF_TYPE_COUNTER, .has_value = true, .value = value};
	export__pf_event_body(p, pk, &e);
}

static void export__pf_alloc(struct export__pf *p, unsigned sidx, uint32_t pid,
			   const struct trc_record *rec)
{
	struct export__pf_proc *pr = export__pf_proc(p, pid);
	if (!pr)
		return;
	/* By process: a forked child has the same addresses as its parent (and traces of other
	 * hosts, the same pids). */
	uint64_t proc = (uint64_t)pid + p->pid_base;
	uint64_t old = 0;
	if (rec->type == TRC_REC_ALLOC) {
		if (allocmap_put(p->live, proc, rec->alloc.addr, rec->alloc.size, &old)) {
			p->live_approximate = true;
			return;
		}
		pr->live_bytes += rec->alloc.size - old;
	} else if (allocmap_take(p->live, proc, rec->alloc.addr, &old)) {
		pr->live_bytes -= old;
	} else {
		return; /* unknown address: nothing changes */
	}
	uint64_t t = export__pf_counter_track(p, &pr->heap_ctr, pr->track, "heap live bytes",
					    PF_UNIT_BYTES);
	export__pf_counter(p, t, rec->ts_ns, (int64_t)pr->live_bytes);
}

/* Pushes an open slice's intern key on its stream's stack; false on out of memory, or past
 * EXPORT__PF_MAX_DEPTH (then the begin is left out, counted, and its end will be too). The
 * stack's capacity stops at that depth, so the hot paths (which push only below the
 * capacity) come here for every begin past it. */
static bool export__pf_push(struct export__pf *p, struct export__pf_seq *s, uint64_t key)
{
	if (s->depth >= EXPORT__PF_MAX_DEPTH) {
		s->over++;
		p->too_deep++;
		return false;
	}
	if (s->depth == s->stack_cap) {
		size_t cap = s->stack_cap ? s->stack_cap * 2 : 16;
		if (cap > EXPORT__PF_MAX_DEPTH)
			cap = EXPORT__PF_MAX_DEPTH;
		uint64_t *n = realloc(s->stack, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return false;
		}
		s->stack = n;
		s->stack_cap = cap;
	}
	s->stack[s->depth++] = key;
	return true;
}

/* A slice begin by the general path (interning its name as needed), with an optional flag. */
static void export__pf_slice_begin(struct export__pf *p, unsigned sidx, uint64_t ts, uint32_t pid,
				 uint64_t key, const char *flag)
{
	size_t pk = export__pf_begin(p, sidx, ts);
	struct export__pf_ev e = {.type = PF_TYPE_BEGIN, .flag = flag};
	if ((key & (3ull << 62)) == EXPORT__PF_KEY_NAME)
		e.name_iid = export__pf_name_iid(p, sidx, (uint32_t)key);
	else
		e.name_iid = export__pf_func_iid(p, sidx, pid, key & ~(3ull << 62));
	export__pf_event_body(p, pk, &e);
}

/* v (< 2^21) as a varint, in the low bytes of the result (byte 0 lowest), its length in
 * *len: without branches, because one- and two-byte deltas come in no order a branch
 * predictor could learn. */
static inline uint32_t export__pf_varint21(uint32_t v, unsigned *len)
{
	uint32_t two = v >= 0x80, three = v >= 0x4000;
	*len = 1 + two + three;
	return (v & 0x7f) | two << 7 | (v << 1 & 0x7f00) | three << 15 | (v << 2 & 0x7f0000);
}

static inline void export__pf_store(uint8_t *o, uint64_t v, size_t n)
{
	memcpy(o, &v, n); /* little-endian: byte 0 is v's lowest */
}

/* The two bytes of the tag of field f (16..2047) of wire type t, byte 0 lowest. */
#define EXPORT__PF_TAG2(f, t) (((((f) << 3 | (t)) & 0x7f) | 0x80) | (((f) << 3 | (t)) >> 7) << 8)

/* The hottest path's packet: on started sequence s, at ts (forward by less than 2^21 ns), a
 * track event whose fields after its tag and length are the low n bytes (n <= 16) of f0, f1
 * (byte 0 lowest). Placed with a few unaligned stores and no branch on the sizes of the
 * fields; same bytes as export__pf_fast_seq (and so as the general path). False when it does
 * not apply. */
static inline __attribute__((always_inline)) bool export__pf_put(struct export__pf *p,
							       struct export__pf_seq *s, uint64_t ts,
							       uint64_t f0, uint64_t f1, unsigned n)
{
	uint64_t last = s->last_ts, dt = ts - last;
	if (__builtin_expect(!s->started || ts < last || dt >= (1u << 21), 0))
		return false;
	unsigned hl = s->hdr_len;
	uint64_t hdr = s->hdr;
	size_t len = p->out_len;
	if (__builtin_expect(EXPORT__PF_OUT_BYTES - len < 48, 0)) {
		export__pf_flush(p);
		len = 0;
	}
	unsigned dl;
	uint32_t dv = export__pf_varint21((uint32_t)dt, &dl);
	unsigned pkl = 1 + dl + hl + 2 + n;
	uint8_t *o = p->out + len;
	/* packet tag and length, timestamp tag, delta, sequence field, track event tag and
	 * length, its fields */
	export__pf_store(o,
		       (PF_TRACE_PACKET << 3 | PB_LEN) | pkl << 8 | (PF_TIMESTAMP << 3) << 16 |
			       (uint64_t)dv << 24,
		       8);
	o += 3 + dl;
	export__pf_store(o, hdr, 8);
	o += hl;
	export__pf_store(o, PF_TE_TRACK_EVENT_TAG | n << 8 | f0 << 16, 8);
	export__pf_store(o + 8, f0 >> 48 | f1 << 16, 8);
	p->out_len = (size_t)(o + 2 + n - p->out);
	s->last_ts = ts;
	if (ts > p->last_ts)
		p->last_ts = ts;
	return true;
}

/* A slice begin whose name is interned as iid, key its intern key: iid below 128 (one byte;
 * wide false: the loop's inlined case, every size constant), or below 2^21 (wide). */
static inline __attribute__((always_inline)) bool export__pf_hot_begin(struct export__pf *p,
								     struct export__pf_seq *s,
								     uint64_t ts, uint64_t iid,
								     uint64_t key, bool wide)
{
	if (iid - 1 >= (wide ? (1u << 21) - 1 : 0x7f) || s->depth >= s->stack_cap)
		return false; /* iid 0 (not interned yet) or too large; or a stack to grow */
	unsigned il = 1;
	uint64_t iv = iid;
	if (wide)
		iv = export__pf_varint21((uint32_t)iid, &il);
	uint64_t f =
		(PF_TE_TYPE << 3) | PF_TYPE_BEGIN << 8 | (PF_TE_NAME_IID << 3) << 16 | iv << 24;
	if (!export__pf_put(p, s, ts, f, 0, 3 + il))
		return false;
	s->stack[s->depth++] = key;
	return true;
}

/* The same for any iid below 2^21, out of the loop (names past a thread's first 127). */
static __attribute__((noinline)) bool export__pf_hot_begin_wide(struct export__pf *p,
							      struct export__pf_seq *s, uint64_t ts,
							      uint64_t iid, uint64_t key)
{
	return export__pf_hot_begin(p, s, ts, iid, key, true);
}

/* A function entry whose name is interned: looked up in the intern map (addresses are too
 * sparse for a dense table), out of the loop so the span paths keep their registers. */
static __attribute__((noinline)) bool export__pf_hot_func(struct export__pf *p, struct export__pf_seq *s,
							const struct trc_record *rec)
{
	uint64_t key = EXPORT__PF_KEY_FUNC | (rec->func.addr & ~(3ull << 62));
	const uint64_t *iid = u64map_get(&s->iids, key);
	return iid && export__pf_hot_begin(p, s, rec->ts_ns, *iid, key, true);
}

/* The hottest paths, inlined in the loop: a slice begin of a span or function (name
 * interned, iid below 2^21), a slice end (closing an open slice), a counter value (of a
 * track known by name id; >= 0 and below 2^21, or negative and exact as a double). False
 * when the record takes export__pf_record. */
static inline __attribute__((always_inline)) bool export__pf_hot(struct export__pf *p, unsigned sidx,
							       const struct trc_record *rec)
{
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return false;
	struct export__pf_seq *s = &p->seqs[sidx];
	uint32_t type = rec->type;
	if (type == TRC_REC_SPAN_BEGIN) {
		uint32_t id = rec->span.name_id;
		if (id >= s->name_cap)
			return false;
		uint32_t iid = s->name_iid[id];
		if (__builtin_expect(iid < 0x80, 1))
			return export__pf_hot_begin(p, s, rec->ts_ns, iid, EXPORT__PF_KEY_NAME | id,
						  false);
		return export__pf_hot_begin_wide(p, s, rec->ts_ns, iid, EXPORT__PF_KEY_NAME | id);
	}
	if (type == TRC_REC_SPAN_END || type == TRC_REC_FUNC_EXIT) {
		if (!s->depth || s->over ||
		    !export__pf_put(p, s, rec->ts_ns, (PF_TE_TYPE << 3) | PF_TYPE_END << 8, 0, 2))
			return false;
		s->depth--;
		return true;
	}
	if (type == TRC_REC_FUNC_ENTER)
		return export__pf_hot_func(p, s, rec);
	if (type == TRC_REC_COUNTER) {
		uint32_t id = rec->value.name_id;
		if (id >= s->ctr_cap || !s->ctr_of[id])
			return false;
		struct export__pf_seq *c = p->ctrs[s->ctr_of[id] - 1];
		int64_t v = rec->value.value;
		uint64_t f = (PF_TE_TYPE << 3) | PF_TYPE_COUNTER << 8;
		if (v >= 0) {
			if (v >= 1 << 21)
				return false;
			unsigned vl;
			uint64_t vv = export__pf_varint21((uint32_t)v, &vl);
			f |= (uint64_t)EXPORT__PF_TAG2(PF_TE_COUNTER_VALUE, PB_VARINT) << 16 |
			     vv << 32;
			return export__pf_put(p, c, rec->ts_ns, f, 0, 4 + vl);
		}
		/* double_counter_value, as export__pf_put_counter_value writes it (a value a double
		 * would round: the general path's counter_value) */
		if (!export__pf_exact_double(v))
			return false;
		double d = (double)v;
		uint64_t bits;
		memcpy(&bits, &d, sizeof(bits));
		f |= (uint64_t)EXPORT__PF_TAG2(PF_TE_DOUBLE_COUNTER_VALUE, PB_I64) << 16 | bits << 32;
		return export__pf_put(p, c, rec->ts_ns, f, bits >> 32, 12);
	}
	return false;
}

/* Process pr's exit instant, on its track, from sequence s at ts: named as the summary says it
 * ("exited with status 3", "killed by signal 9"), with the exit code (exit_code) or the
 * signal (signal, and core_dumped) as debug annotations; "exited" alone when the status is not
 * known. */
static void export__pf_exit(struct export__pf *p, struct export__pf_proc *pr, struct export__pf_seq *s,
			  uint64_t ts, uint32_t status, bool known)
{
	pr->exit_done = true;
	int st = (int)status;
	char b[48];
	struct export__pf_ev e = {.type = PF_TYPE_INSTANT, .track = pr->track, .name = b};
	if (known && WIFEXITED(st)) {
		e.name_len =
			(size_t)snprintf(b, sizeof(b), "exited with status %d", WEXITSTATUS(st));
		e.has_value = true;
		e.value = WEXITSTATUS(st);
		e.annot = "exit_code";
	} else if (known && WIFSIGNALED(st)) {
		e.name_len = (size_t)snprintf(b, sizeof(b), "killed by signal %d", WTERMSIG(st));
		e.has_value = true;
		e.value = WTERMSIG(st);
		e.annot = "signal";
		if (WCOREDUMP(st))
			e.flag = "core_dumped";
	} else {
		e.name_len = (size_t)snprintf(b, sizeof(b), "exited");
	}
	size_t pk = export__pf_begin_seq(p, s, ts);
	export__pf_event_body(p, pk, &e);
}

/* The exits still pending (a process whose runtime said it exited, and trace-run did not):
 * written now, at their times. */
static void export__pf_pending_exits(struct export__pf *p)
{
	for (size_t i = 0; i < p->n_procs; i++) {
		struct export__pf_proc *pr = &p->procs[i];
		if (pr->exit_pending && !pr->exit_done) {
			pr->exit_pending = false;
			export__pf_exit(p, pr, pr->exit_seq, pr->exit_ts, pr->exit_status,
				      pr->exit_flags & TRC_EXIT_STATUS);
		}
	}
}

static __attribute__((noinline)) void export__pf_record(struct export__pf *p, unsigned sidx,
						      const struct trc_record *rec)
{
	struct export__pf_seq *s = &p->seqs[sidx];
	uint32_t pid = s->pid;
	if (rec->ts_ns > p->last_ts)
		p->last_ts = rec->ts_ns;
	if (s->thread && !p->seqs[s->owner].described) {
		/* The thread's first record: a THREAD record of its own (the one at the start of
		 * its stream) names its track from the start. */
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, sidx);
		bool own = rec->type == TRC_REC_THREAD && rec->thread.pid == si->pid &&
			   rec->thread.tid == si->tid && rec->thread.name_len;
		export__pf_thread_track(p, sidx, own ? rec->thread.name : NULL,
				      own ? rec->thread.name_len : 0);
		if (own)
			return;
	}
	/* The hot paths of spans: a begin whose name is interned (by id), an end that closes an
	 * open slice. */
	if (rec->type == TRC_REC_SPAN_BEGIN && rec->span.name_id < s->name_cap) {
		uint32_t iid = s->name_iid[rec->span.name_id];
		if (iid && s->depth < s->stack_cap) {
			s->stack[s->depth++] = EXPORT__PF_KEY_NAME | rec->span.name_id;
			if (export__pf_fast(p, sidx, rec->ts_ns, PF_TYPE_BEGIN, iid, 0, false, 0))
				return;
			s->depth--;
		}
	} else if (rec->type == TRC_REC_SPAN_END && s->depth && !s->over) {
		if (export__pf_fast(p, sidx, rec->ts_ns, PF_TYPE_END, 0, 0, false, 0)) {
			s->depth--;
			return;
		}
	}
	struct export__pf_ev e = {0};
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_FUNC_ENTER: {
		uint64_t key = rec->type == TRC_REC_SPAN_BEGIN
				       ? EXPORT__PF_KEY_NAME | rec->span.name_id
				       : EXPORT__PF_KEY_FUNC | (rec->func.addr & ~(3ull << 62));
		uint64_t *iid = u64map_get(&s->iids, key);
		if (!export__pf_push(p, s, key))
			break;
		if (iid && export__pf_fast(p, sidx, rec->ts_ns, PF_TYPE_BEGIN, *iid, 0, false, 0))
			break;
		export__pf_slice_begin(p, sidx, rec->ts_ns, pid, key, NULL);
		break;
	}
	case TRC_REC_SPAN_END:
	case TRC_REC_FUNC_EXIT: {
		if (s->over) { /* closes a begin left out past the depth bound */
			s->over--;
			break;
		}
		if (!s->depth) {
			p->unmatched_end++;
			break;
		}
		s->depth--;
		if (export__pf_fast(p, sidx, rec->ts_ns, PF_TYPE_END, 0, 0, false, 0))
			break;
		size_t pk = export__pf_begin(p, sidx, rec->ts_ns);
		e.type = PF_TYPE_END;
		export__pf_event_body(p, pk, &e);
		break;
	}
	case TRC_REC_INSTANT: {
		size_t pk = export__pf_begin(p, sidx, rec->ts_ns);
		e.type = PF_TYPE_INSTANT;
		e.name_iid = export__pf_name_iid(p, sidx, rec->value.name_id);
		e.has_value = true;
		e.value = rec->value.value;
		e.annot = "value";
		export__pf_event_body(p, pk, &e);
		break;
	}
	case TRC_REC_COUNTER: {
		uint64_t key = (((uint64_t)(p->seq_base + sidx) << 32) | rec->value.name_id) + 1;
		uint64_t *t = u64map_get(&p->counters, key);
		uint64_t track;
		if (t) {
			track = *t;
		} else {
			uint32_t len = 0;
			const char *n = trcfile_reader_name(p->r, rec->value.name_id, &len);
			char b[16];
			if (!n) {
				len = (uint32_t)snprintf(b, sizeof(b), "#%u", rec->value.name_id);
				n = b;
			}
			track = export__pf_new_counter(p, s->track, n, len, PF_UNIT_COUNT);
			if (!track || u64map_put(&p->counters, key, track, NULL, NULL)) {
				p->err = -ENOMEM;
				break;
			}
			export__pf_dense_set(p, &s->ctr_of, &s->ctr_cap, rec->value.name_id, track);
		}
		export__pf_counter(p, track, rec->ts_ns, rec->value.value);
		break;
	}
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		export__pf_alloc(p, sidx, pid, rec);
		break;
	case TRC_REC_RSS: {
		struct export__pf_proc *pr = export__pf_proc(p, rec->rss.pid ? rec->rss.pid : pid);
		if (!pr)
			break;
		uint64_t bb = rec->rss.buffers_bytes;
		uint64_t prog = rec->rss.rss_bytes > bb ? rec->rss.rss_bytes - bb : 0;
		uint64_t t1 =
			export__pf_counter_track(p, &pr->rss_ctr, pr->track, "RSS", PF_UNIT_BYTES);
		uint64_t t2 = export__pf_counter_track(p, &pr->rss_buf_ctr, pr->track,
						     "RSS trace buffers", PF_UNIT_BYTES);
		export__pf_counter(p, t1, rec->ts_ns, (int64_t)prog);
		export__pf_counter(p, t2, rec->ts_ns, (int64_t)bb);
		break;
	}
	case TRC_REC_LOST: {
		/* FORMAT.md: events of this stream are missing here, so what is open on it ends as
		 * unknown, at the loss (flagged), never closed by an END after the gap. */
		for (; rec->lost.count && s->depth; s->depth--) {
			size_t pk = export__pf_begin(p, sidx, rec->ts_ns);
			struct export__pf_ev ce = {.type = PF_TYPE_END, .flag = "cut_by_loss"};
			export__pf_event_body(p, pk, &ce);
		}
		char b[96];
		int k = snprintf(b, sizeof(b), "lost %" PRIu64 " %s (%s)", rec->lost.count,
				 rec->lost.count == 1 ? "record" : "records",
				 trcfile_lost_reason_name(rec->lost.reason));
		size_t pk = export__pf_begin(p, sidx, rec->ts_ns);
		e.type = PF_TYPE_INSTANT;
		e.name = b;
		e.name_len = (size_t)k;
		e.has_value = true;
		e.value = (int64_t)rec->lost.count;
		e.annot = "count";
		export__pf_event_body(p, pk, &e);
		break;
	}
	case TRC_REC_EXIT: {
		struct export__pf_proc *pr = export__pf_proc(p, rec->exit.pid);
		if (!pr || pr->exit_done)
			break;
		if (rec->exit.flags & TRC_EXIT_SELF) {
			if (!pr->exit_pending || rec->ts_ns >= pr->exit_ts) {
				pr->exit_pending = true;
				pr->exit_seq = s;
				pr->exit_ts = rec->ts_ns;
				pr->exit_status = rec->exit.status;
				pr->exit_flags = rec->exit.flags;
			}
			break;
		}
		pr->exit_pending = false;
		export__pf_exit(p, pr, s, rec->ts_ns, rec->exit.status, true);
		break;
	}
	case TRC_REC_NOTE: {
		struct export__pf_proc *pr = export__pf_proc(p, trcfile_reader_header(p->r)->pid);
		if (!pr)
			break;
		size_t pk = export__pf_begin(p, sidx, rec->ts_ns);
		e.type = PF_TYPE_INSTANT;
		e.track = pr->track;
		e.name = rec->note.text;
		e.name_len = rec->note.len;
		export__pf_event_body(p, pk, &e);
		break;
	}
	case TRC_REC_THREAD: {
		/* A name for a thread (its first, or a rename: an exec, a prctl): its track's
		 * descriptor, once for the thread however many streams it has. */
		for (unsigned k = 0; k < p->n_streams; k++) {
			const struct trcfile_stream_info *ti = trcfile_reader_stream(p->r, k);
			if (!p->seqs[k].thread || ti->pid != rec->thread.pid ||
			    ti->tid != rec->thread.tid)
				continue;
			if (!p->seqs[p->seqs[k].owner].described || rec->thread.name_len)
				export__pf_thread_track(p, k, rec->thread.name, rec->thread.name_len);
			break;
		}
		break;
	}
	case TRC_REC_PROCESS: {
		struct export__pf_proc *pr = export__pf_proc(p, rec->process.pid);
		if (pr && !pr->named) {
			pr->named = true;
			export__pf_descriptor(p, pr->track, 0, NULL, 0, pr, rec->process.cmdline,
					    rec->process.cmdline_len, 0, -1);
		}
		break;
	}
	}
}

/* The track of thread stream sidx's thread (its owner's), described: named name (len) when
 * given, else as the trace's metadata names it, else "tid N" (as in the summary and pprof). */
static void export__pf_thread_track(struct export__pf *p, unsigned sidx, const char *name, uint32_t len)
{
	unsigned k = p->seqs[sidx].owner;
	struct export__pf_seq *o = &p->seqs[k];
	const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, k);
	struct export__pf_proc *pr = export__pf_proc(p, o->pid);
	if (!pr)
		return;
	o->described = true;
	if (!name || !len)
		name = trcfile_reader_thread_name(p->r, si->pid, si->tid, &len);
	char unnamed[24];
	if (!name || !len) {
		len = (uint32_t)snprintf(unnamed, sizeof(unnamed), "tid %u", si->tid);
		name = unnamed;
	}
	export__pf_descriptor(p, o->track, pr->track, name, len, pr, NULL, 0, si->tid, -1);
}

/* The trace's clock snapshot, then a track for every process and thread of the streams. */
static void export__pf_clock(struct export__pf *p, uint64_t t0)
{
	struct pb_buf *b = &p->pkt;
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	pb_uint(b, PF_TIMESTAMP, t0);
	pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
	pb_uint(b, PF_SEQ_ID, 1);
	size_t cs = pb_open(b, PF_CLOCK_SNAPSHOT);
	/* Only the clocks the file knows: the trace clock, CLOCK_MONOTONIC (CLOCK_REALTIME for
	 * several FILEs), and for one FILE CLOCK_REALTIME at the same moment, from the header's
	 * anchor (start_realtime_ns - start_mono_ns). The header has no BOOTTIME (FORMAT.md):
	 * declaring it equal to MONOTONIC would be off by the machine's time in suspend and
	 * contradict a system trace's own snapshots when the two are merged; left out, trace
	 * processor converts through the clocks given (a system trace relates MONOTONIC to
	 * BOOTTIME itself). */
	size_t c = pb_open(b, 1);
	pb_uint(b, 1, p->clock);
	pb_uint(b, 2, t0);
	pb_close(b, c);
	int64_t anchor = 0, start_rt = 0;
	if (p->clock == PF_CLOCK_MONOTONIC && trcfile_reader_header(p->r)->start_realtime_ns &&
	    export_anchor(p->r, &anchor, &start_rt) == 0 && export_realtime(t0, anchor) > 0) {
		c = pb_open(b, 1);
		pb_uint(b, 1, PF_CLOCK_REALTIME);
		pb_uint(b, 2, (uint64_t)export_realtime(t0, anchor));
		pb_close(b, c);
	}
	pb_uint(b, 2, p->clock);
	pb_close(b, cs);
	pb_close(b, pk);
	export__pf_emit(p);
}

/* The tracks of the trace at hand. */
static void export__pf_tracks(struct export__pf *p)
{
	struct u64map owners; /* (pid, tid) -> the first thread stream of it */
	u64map_init(&owners, SIZE_MAX);
	for (unsigned s = 0; s < p->n_streams; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, s);
		/* META and RSS streams may say pid 0: they are the program's. */
		uint32_t pid = si->pid ? si->pid : trcfile_reader_header(p->r)->pid;
		p->seqs[s].pid = pid;
		struct export__pf_proc *pr = export__pf_proc(p, pid);
		if (!pr)
			break;
		if (si->kind != TRC_STREAM_THREAD) {
			p->seqs[s].track = pr->track;
			continue;
		}
		/* One track per thread: a later stream of the same (pid, tid) shares the first's.
		 * Described on first use (export__pf_thread_track), with the name known then. */
		p->seqs[s].thread = true;
		uint64_t key = (uint64_t)si->pid << 32 | si->tid;
		const uint64_t *o = u64map_get(&owners, key);
		p->seqs[s].owner = o ? (unsigned)*o : s;
		p->seqs[s].active = p->seqs[s].owner;
		p->seqs[s].track = o ? p->seqs[*o].track : p->next_uuid++;
		if (!o && u64map_put(&owners, key, s, NULL, NULL)) {
			p->err = -ENOMEM;
			break;
		}
	}
	u64map_destroy(&owners);
}

static void export__pf_prologue(struct export__pf *p, uint64_t t0)
{
	export__pf_clock(p, t0);
	export__pf_tracks(p);
}

/* --split-size: ends this file at the last timestamp written (open slices end there, flagged
 * "split") and starts the next one: clock, every track described so far, fresh sequences,
 * and the open slices begun again at that time (flagged "continued"). Each file is a whole
 * trace; together they cover consecutive time ranges. */
static int export__pf_split(struct export__pf *p)
{
	uint64_t t = p->last_ts;
	export__pf_pending_exits(p);
	for (unsigned s = 0; s < p->n_streams; s++) {
		for (uint64_t d = p->seqs[s].depth; d; d--) {
			size_t pk = export__pf_begin(p, s, t);
			struct export__pf_ev e = {.type = PF_TYPE_END, .flag = "split"};
			export__pf_event_body(p, pk, &e);
		}
	}
	export__pf_flush(p);
	if (p->err)
		return p->err;
	int err = p->o->split(p->o->split_ctx);
	if (err)
		return err;
	p->file_bytes = 0;
	export__pf_clock(p, t);
	export__pf_write(p, p->desc_log.p, p->desc_log.len);
	for (size_t c = 0; c < p->n_ctrs; c++)
		p->ctrs[c]->started = false;
	for (unsigned s = 0; s < p->n_streams; s++) {
		struct export__pf_seq *q = &p->seqs[s];
		q->started = false;
		q->next_iid = 0;
		u64map_destroy(&q->iids);
		if (q->name_cap)
			memset(q->name_iid, 0, q->name_cap * sizeof(*q->name_iid));
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, s);
		uint32_t pid = si->pid ? si->pid : trcfile_reader_header(p->r)->pid;
		p->splitting = true;
		for (uint64_t d = 0; d < q->depth; d++)
			export__pf_slice_begin(p, s, t, pid, q->stack[d], "continued");
		p->splitting = false;
	}
	return 0;
}

/* The exporter's state for n streams (of every trace); NULL when out of memory. */
static struct export__pf *export__pf_new(unsigned n)
{
	struct export__pf *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->n_all = n;
	p->next_uuid = 1;
	p->clock = PF_CLOCK_MONOTONIC;
	p->all_seqs = calloc(n ? n : 1, sizeof(*p->all_seqs));
	p->live = allocmap_new(EXPORT__PF_LIVE_MAX_ENTRIES);
	p->out = malloc(EXPORT__PF_OUT_BYTES + EXPORT__PF_OUT_SLACK);
	u64map_init(&p->counters, SIZE_MAX);
	p->next_seq_id = EXPORT__PF_SEQ_BASE;
	for (unsigned k = 0; p->all_seqs && k < n; k++)
		u64map_init(&p->all_seqs[k].iids, SIZE_MAX);
	p->seqs = p->all_seqs;
	p->n_streams = n;
	return p;
}

static void export__pf_free(struct export__pf *p)
{
	if (!p)
		return;
	for (unsigned s = 0; s < p->n_all && p->all_seqs; s++) {
		u64map_destroy(&p->all_seqs[s].iids);
		free(p->all_seqs[s].name_iid);
		free(p->all_seqs[s].ctr_of);
		free(p->all_seqs[s].stack);
	}
	for (size_t c = 0; c < p->n_ctrs; c++) {
		u64map_destroy(&p->ctrs[c]->iids);
		free(p->ctrs[c]);
	}
	free(p->ctrs);
	pb_buf_free(&p->desc_log);
	u64map_destroy(&p->counters);
	allocmap_free(p->live);
	pb_buf_free(&p->pkt);
	free(p->procs);
	free(p->all_seqs);
	free(p->out);
	free(p);
}

/* Spans still open in the trace at hand: closed at ts (flagged unfinished). */
static void export__pf_close_open(struct export__pf *p, uint64_t ts)
{
	for (unsigned s = 0; s < p->n_streams; s++) {
		if (p->seqs[s].thread && !p->seqs[p->seqs[s].owner].described &&
		    trcfile_reader_stream(p->r, s)->records)
			export__pf_thread_track(p, s, NULL, 0); /* a thread with no event shown */
		export__pf_close_stream(p, s, ts);
	}
}

/* The records of it from t_from to t_to (both included) into p, in runs of merged records (no
 * call per record into the merge), cutting the output at the split size. Returns 0 (p->err
 * may say out of memory or a sink's error), a negative reader error, or a split's error
 * (*split_failed set). Apart from the export's other work, so the loop keeps its few values
 * in registers. */
static int export__pf_records(struct export__pf *p, struct trcfile_iter *it, uint64_t t_from,
			      uint64_t t_to, bool *split_failed)
{
	const struct trc_record *recs[EXPORT__PF_RUN];
	unsigned sidx[EXPORT__PF_RUN];
	int n = 0;
	while (!p->err && (n = trcfile_iter_next_refs(it, recs, sidx, EXPORT__PF_RUN)) > 0) {
		for (int i = 0; i < n; i++) {
			const struct trc_record *rec = recs[i];
			if (rec->ts_ns > t_to) {
				/* What is open is known to be open until --to: closed there. */
				p->last_ts = t_to;
				return 0;
			}
			if (rec->ts_ns < t_from)
				continue;
			if (export__pf_full(p)) {
				int err = export__pf_split(p);
				if (err) {
					*split_failed = !p->err;
					return err;
				}
			}
			if (!export__pf_hot(p, sidx[i], rec)) {
				export__pf_record(p, sidx[i], rec);
				if (p->err)
					return 0;
			}
		}
	}
	return n < 0 ? n : 0;
}

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
