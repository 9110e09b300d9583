/* session_internal.h - the recorder's private state for a session (src/session/ only).
 *
 * Everything the recorder needs to interpret the region is kept here: its geometry is the plan
 * it made (trc_region_plan), never re-read from the shared header: a traced process may scribble
 * on the region, and the drain must stay in bounds whatever it finds there (session_layout.h).
 *
 * Threads: fields marked (drain) belong to the drain thread; the rest are written once by
 * session_create and then only read.
 */
#ifndef TRC_SESSION_INTERNAL_H
#define TRC_SESSION_INTERNAL_H

#include <stdatomic.h>

#include "clock.h"
#include "ring.h"
#include "session.h"
#include "session_layout.h"

/* The drain's view of one slot. (drain) */
struct session_slot {
	uint32_t gen; /* generation of the open stream */
	uint32_t region_pid; /* the slot's pid as written (TRC_PID_FOREIGN kept): for liveness */
	uint8_t active; /* a stream is open on this slot */
	uint8_t corrupt; /* its stream ended on corruption; free the slot once the thread is gone */
	struct session_stream st;
	struct ring_consumer cons;
	uint64_t dropped_reported;
	uint64_t reentrant_reported; /* the slot's lost_reentrant, as reported */
	uint64_t waits_reported, waited_reported; /* the slot's waits and waited_ns, as reported */
	uint64_t dropped_seen_ns; /* when dropped_reported was last checked */
	uint64_t last_ts_ns;
	uint64_t idle_w; /* write position last seen, and since when (the idle give-back) */
	uint64_t idle_since_ns;
	uint64_t trimmed_at; /* idle_w + 1 when the ring was trimmed at that position, else 0 */
};

/* The drain's view of one entry of the thread-loss table. (drain) */
struct session_tlost {
	uint64_t who; /* the entry's who when its stream was opened (0: none yet) */
	uint64_t no_slot_reported, reentrant_reported;
	struct session_stream st;
};

/* A slot's map from its thread's stack ids to the session's (session_stacks.c). (drain) */
struct session_stack_ids {
	uint32_t *ids; /* [thread id] -> session id, 0 unknown */
	uint32_t cap;
};

struct session_stacks;

struct trc_session {
	int fd;
	uint8_t *base;
	struct trc_region_hdr *hdr; /* the shared header: its counters only */
	struct trc_region_geom geom; /* the layout (clock_mode: TRC_CLOCK_*, set at creation) */

	/* Clock (drain): records with ticks >= cur.tick0 use cur, older ones prev. */
	struct trc_clock_pair anchor; /* first calibration pair: every refit spans from here */
	struct trc_clock_conv conv_prev;
	struct trc_clock_conv conv_cur;
	uint64_t last_refit_ns;
	_Atomic uint64_t tsc_hz; /* read by session_clock_info from any thread */

	/* Drain state. (drain) */
	struct session_slot *slots;
	/* Per slot: ring bytes given back by the idle give-back and not faulted in again yet.
	 * Written by the drain, read by session_buffers_resident_bytes from any thread. */
	_Atomic uint64_t *trimmed;
	/* Per process entry: the VmHWM its process's own exit record gave (0: none drained) and
	 * that record's buffers figure. Written by the drain, read by session_self_hwm from any
	 * thread. */
	_Atomic uint64_t *self_hwm;
	_Atomic uint64_t *self_buffers;
	/* Per process entry: the largest RSS sample of its pid (buffers excluded) and the largest
	 * buffers' share a sample saw, taken while it was the pid's latest entry
	 * (session_note_sample, the drain thread; read by session_self_hwm). */
	_Atomic uint64_t *sampled_max;
	_Atomic uint64_t *sampled_buffers_max;
	/* Per process entry: its command's name (argv[0] after the last '/', cut to
	 * SESSION_PROC_NAME_BYTES - 1), from its PROCESS record. (drain) */
	char (*proc_name)[SESSION_PROC_NAME_BYTES];
	uint8_t *name_seen; /* bit per name id: NAME record delivered */
	uint64_t name_seen_bits;
	uint64_t next_key;
	uint64_t lost_no_slot_reported;
	uint64_t lost_reentrant_reported;
	uint64_t region_lost_seen_ns; /* when the region's lost counters were last checked */
	uint8_t region_lost_flagged; /* a NOTE said a region lost counter is not believed */
	uint64_t created_ns; /* CLOCK_MONOTONIC at creation: no record is older */
	uint32_t cpus; /* online processors: the bound on how fast counters can move */
	uint64_t last_reap_ns;
	uint64_t read_since_unmap; /* ring bytes read since the drain last unmapped its view */
	uint64_t reap_no_slot_seen;
	uint8_t strtab_full_noted;
	struct session_tlost *tlost; /* geom.max_tlost entries, allocated on the first loss */
	uint64_t tlost_added_seen; /* hdr->tlost_added when the table was last read */
	uint64_t tlost_seen_ns;
	struct session_stream meta;
	/* Call stacks (session_stacks.c), allocated on the first STACK record. (drain) */
	struct session_stacks *stacks;
	struct session_stack_ids *stack_ids; /* geom.max_slots entries */
	uint64_t stack_frames[TRC_STACK_DEPTH_MAX]; /* a STACK record's frames, copied */
	char text[TRC_CMDLINE_MAX + 256]; /* copies of strings handed to the sink */
};

/* The session's region: session_layout.h's helpers on its geometry. */
static inline struct trc_slot *session__slot(const struct trc_session *s, uint32_t i)
{
	return trc_region_slot(s->base, &s->geom, i);
}

static inline struct trc_proc *session__proc(const struct trc_session *s, uint32_t i)
{
	return trc_region_proc(s->base, &s->geom, i);
}

/* How many process entries to look at: the region's count of those taken, which the traced
 * program may have scribbled on, bounded by the table. */
static inline uint32_t session__procs_used(const struct trc_session *s)
{
	uint32_t used = atomic_load_explicit(&s->hdr->procs_used, memory_order_relaxed);
	return used < s->geom.max_procs ? used : s->geom.max_procs;
}

/* 1 + the index of the process entry slot sl names (the region's word, bounded by the table),
 * or 0 for none. */
static inline uint32_t session__slot_proc(const struct trc_session *s, struct trc_slot *sl)
{
	uint32_t proc = atomic_load_explicit(&sl->proc, memory_order_relaxed);
	return proc <= s->geom.max_procs ? proc : 0;
}

static inline uint8_t *session__ring(const struct trc_session *s, uint32_t i)
{
	return trc_region_ring(s->base, &s->geom, i);
}

/* The thread's stack id local_id of slot, from a STACK record of its stream, names these
 * frames of pid: *global is the session's id for them; *fresh when the trace has not seen them
 * (its STACK record is to be written). 0, -EINVAL (an id no thread uses), -ENOMEM. */
int session_stacks_define(struct trc_session *s, uint32_t slot, uint32_t pid, uint32_t local_id,
			  uint32_t flags, const uint64_t *frames, uint32_t n, uint32_t *global,
			  bool *fresh);
/* The session's id of slot's thread id local_id: 0 when its stream has not defined it. */
static inline uint32_t session_stacks_global(const struct trc_session *s, uint32_t slot,
					     uint32_t local_id)
{
	if (!s->stack_ids)
		return 0;
	const struct session_stack_ids *m = &s->stack_ids[slot];
	return local_id < m->cap ? m->ids[local_id] : 0;
}
/* A new stream on slot: its thread defines its ids anew. */
void session_stacks_slot_reset(struct trc_session *s, uint32_t slot);
void session_stacks_free(struct trc_session *s);

#endif /* TRC_SESSION_INTERNAL_H */
