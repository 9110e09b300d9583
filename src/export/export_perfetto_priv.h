/* export_perfetto_priv.h - what the two files of the Perfetto exporter share: the schema's
 * numbers, the exporter's state, and the packets and tracks of export_perfetto_tracks.c
 * that the records' paths in export_perfetto.c write (the design: export_perfetto.c).
 *
 * Threads: an exporter's state belongs to one export.
 */
#ifndef TRC_EXPORT_PERFETTO_PRIV_H
#define TRC_EXPORT_PERFETTO_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "allocmap.h"
#include "export.h"
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
	/* The heap profile's (export_perfetto_heap.c): the trace it is of and its pid there,
	 * its largest RSS sample and when, how many times that grew (peak_epoch), and whether
	 * allocations of it were left out of the profile (its samples at their bound). */
	const struct trcfile_reader *r;
	uint32_t trace_pid;
	bool rss_seen, heap_capped;
	uint64_t rss_peak, rss_peak_ts;
	uint32_t peak_epoch;
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
	/* live: each allocation's size (and, with a heap profile, its sample: heap_alloc) */
	struct allocmap *live;
	struct export__pf_heap *heap; /* the heap profile; NULL when no trace has stacks */
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

/* ---- export_perfetto_tracks.c ------------------------------------------------------------ */

void export__pf_seq_set_id(struct export__pf_seq *s, uint32_t id);
void export__pf_flush(struct export__pf *p);
void export__pf_write(struct export__pf *p, const void *data, size_t n);
void export__pf_emit(struct export__pf *p);
void export__pf_descriptor(struct export__pf *p, uint64_t uuid, uint64_t parent,
				const char *name, size_t name_len, const struct export__pf_proc *proc,
				const char *cmdline, size_t cmdline_len, uint32_t tid,
				int counter_unit);
struct export__pf_proc *export__pf_proc(struct export__pf *p, uint32_t pid);
uint64_t export__pf_new_counter(struct export__pf *p, uint64_t parent, const char *name,
				     size_t len, int unit);
uint64_t export__pf_counter_track(struct export__pf *p, uint64_t *slot, uint64_t parent,
				       const char *name, int unit);
void export__pf_thread_track(struct export__pf *p, unsigned sidx, const char *name, uint32_t len);
void export__pf_clock(struct export__pf *p, uint64_t t0);
void export__pf_tracks(struct export__pf *p);
void export__pf_prologue(struct export__pf *p, uint64_t t0);
struct export__pf *export__pf_new(unsigned n);
void export__pf_free(struct export__pf *p);

/* Room for n more bytes (plus the slack) in the exporter's buffer: where they go. */
static inline uint8_t *export__pf_room(struct export__pf *p, size_t n)
{
	if (__builtin_expect(EXPORT__PF_OUT_BYTES - p->out_len < n, 0))
		export__pf_flush(p);
	return p->out + p->out_len;
}

/* The current file has reached the split size, counting what is still in the buffer. */
static inline bool export__pf_full(const struct export__pf *p)
{
	return p->split_bytes && p->file_bytes + p->out_len >= p->split_bytes;
}

/* ---- export_perfetto_records.c ----------------------------------------------------------- */

void export__pf_record(struct export__pf *p, unsigned sidx, const struct trc_record *rec);
void export__pf_pending_exits(struct export__pf *p);
void export__pf_close_open(struct export__pf *p, uint64_t ts);
int export__pf_records(struct export__pf *p, struct trcfile_iter *it, uint64_t t_from,
		       uint64_t t_to, bool *split_failed);

/* ---- export_perfetto_heap.c ------------------------------------------------------------- */

struct export__pf_heap;

/* Whether trace r gets a heap profile: it defines call stacks. */
bool export__pf_heap_wanted(const struct trcfile_reader *r);
struct export__pf_heap *export__pf_heap_new(void);
void export__pf_heap_free(struct export__pf_heap *h);
/* An ALLOC of process pr (proc: its key in the live table) into the profile: the value the
 * live table keeps for it (its size and its sample). */
uint64_t export__pf_heap_alloc(struct export__pf *p, struct export__pf_proc *pr, uint64_t proc,
			       const struct trc_record *rec);
/* A live allocation at (proc, addr) freed (or replaced there), its live-table value: what it
 * freed taken from its sample; returns its size. */
uint64_t export__pf_heap_release(struct export__pf *p, uint64_t proc, uint64_t addr,
				 uint64_t live);
/* An RSS sample of process pr (the program's bytes): its peak so far. */
void export__pf_heap_rss(struct export__pf_proc *pr, uint64_t ts, uint64_t bytes);
/* The dumps, in time order: each trace r[i] at end_ts[i], and each process at its RSS peak
 * before that. */
void export__pf_heap_finish(struct export__pf *p, struct trcfile_reader *const *r,
			    const uint64_t *end_ts, unsigned n);

#endif /* TRC_EXPORT_PERFETTO_PRIV_H */
