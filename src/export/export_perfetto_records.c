/* export_perfetto_records.c - the Perfetto exporter's records: each record type's packets,
 * the interning of names, the open slices, and the hot path that places slice begins and
 * ends and known counters' values with a few unaligned stores (export_perfetto.c has the
 * design). The loop over the merge and everything it inlines stay in this one file.
 *
 * Threads: an exporter's state belongs to one export.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "export_merge.h"
#include "export_perfetto_priv.h"
#include "export_spans.h"

static void export__pf_close_shared(struct export__pf *p, const struct export__pf_seq *s, uint64_t ts);

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
		uint64_t v = p->heap ? export__pf_heap_alloc(p, pr, proc, rec) : rec->alloc.size;
		if (allocmap_put(p->live, proc, rec->alloc.addr, v, &old)) {
			p->live_approximate = true;
			return;
		}
		if (p->heap && old) /* replaced: freed */
			old = export__pf_heap_release(p, proc, rec->alloc.addr, old);
		pr->live_bytes += rec->alloc.size - old;
	} else if (allocmap_take(p->live, proc, rec->alloc.addr, &old)) {
		pr->live_bytes -= p->heap ? export__pf_heap_release(p, proc, rec->alloc.addr, old)
					  : old;
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
void export__pf_pending_exits(struct export__pf *p)
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

__attribute__((noinline)) void export__pf_record(struct export__pf *p, unsigned sidx,
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
		if (p->heap)
			export__pf_heap_rss(pr, rec->ts_ns, prog);
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

/* Spans still open in the trace at hand: closed at ts (flagged unfinished). */
void export__pf_close_open(struct export__pf *p, uint64_t ts)
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
int export__pf_records(struct export__pf *p, struct trcfile_iter *it, uint64_t t_from,
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

