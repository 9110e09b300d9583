/* session_drain.c - turning the session region into trace records (recorder side).
 *
 * Two ways out, chosen by the sink (session.h): events (spans, values, allocations, function
 * entries) of a sink with a window are encoded straight from their ring bytes into the chunk
 * bytes of FORMAT.md (the fused path: no struct trc_record, no call per record; the drain's
 * cost is then close to copying the bytes, bench=drain); every other record, and every record
 * of a sink without a window, is decoded into a struct trc_record for sink->record.
 *
 * One pass over the slot table per call: open a stream for every newly claimed slot, hand out
 * every record its ring has published, report what the ring dropped, and, for a slot whose
 * thread has exited (RETIRED) or is found gone (CLAIMED, but tgkill says ESRCH: the process
 * exited or exec'd without running thread destructors), drain it to the end, end the stream and
 * free the slot (punch the ring's pages out, re-initialise its ring_ctl, bump the generation,
 * publish FREE). Then the region-wide lost counters go out on the meta stream.
 *
 * Trust: the region is written by traced processes. Layout comes from the recorder's own copy;
 * each ring is read through a ring_consumer (which validates every header); each record's
 * payload is copied out before it is checked and every length in it is bounded by the record.
 * A ring or record that makes no sense ends that stream with a LOST (CORRUPT) and a NOTE; the
 * slot is left alone until its thread is gone, then freed. Nothing here trusts a pid, tid, name
 * id or length it read, beyond using it as a number.
 *
 * Every lost count read from the region is bounded before it is reported: a count that goes
 * back or gains more than its producers could emit in the time since the last look (one event
 * a nanosecond each) was scribbled: a ring's ends its stream as corrupt; a region-wide one is
 * reported as unknown (LOST count 0, reason CORRUPT) with a NOTE, never as a number. A record
 * stamped before the session was created or after the drain started (beyond SESSION_TS_SLACK)
 * ends its stream as corrupt too: a scribbled time would stretch the trace to centuries.
 *
 * Liveness checks (tgkill, kill with signal 0) run at most every SESSION_REAP_NS, or at once
 * when producers report that no slot was free. A slot found gone is taken only by CAS from the
 * exact state word that was checked: a thread may move it (finish a claim, retire) between the
 * load and the check, and a slot it moved is drained, never freed unread.
 *
 * Threads: the drain thread only (see session.h). Never blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session_internal.h"
#include "trcfile_codec.h" /* the chunk encoding the fused path writes (FORMAT.md) */

#define SESSION_REAP_NS 50000000ull
/* The idle give-back (session_layout.h "Residency"): a ring that published nothing for this
 * long, drained to its end, gives back its pages below the writer, when at least MIN of them. */
#define SESSION_TRIM_IDLE_NS 200000000ull
#define SESSION_TRIM_MIN_BYTES (64u << 10)
/* The recorder drops its own mapping of the ring pages after reading this much of them, when
 * the rings hold more than SESSION_UNMAP_ABOVE_BYTES. */
#define SESSION_UNMAP_EVERY_BYTES (16ull << 20)
#define SESSION_UNMAP_ABOVE_BYTES (32ull << 20)
/* The fused loop gives ring space back to the writer every this many bytes. */
#define SESSION_SLICE_BYTES (256u << 10)
#define SESSION_REFIT_NS 200000000ull
#define SESSION_CORRUPT 1000000 /* internal: decode found the stream corrupt */
/* How far a record's time may lie outside [session creation, now] (clock conversion error). */
#define SESSION_TS_SLACK 100000000ull
/* Events a lost counter may gain beyond one a nanosecond per producer (first look, clock skew). */
#define SESSION_LOST_SLACK 1000000ull

struct session__ctx {
	struct trc_session *s;
	const struct session_sink *sink;
	long delivered;
	uint64_t now_ns;
	/* A record's time t is believed when t - ts_lo <= ts_span: between the session's
	 * creation and now, with SESSION_TS_SLACK either side (clock conversion). */
	uint64_t ts_lo, ts_span;
};

static inline bool session__ts_ok(const struct session__ctx *c, uint64_t ts_ns)
{
	return ts_ns - c->ts_lo <= c->ts_span;
}

static uint64_t session__ns(const struct trc_session *s, uint64_t t)
{
	if (s->geom.clock_mode != TRC_CLOCK_TSC)
		return t;
	return trc_clock_to_ns(t >= s->conv_cur.tick0 ? &s->conv_cur : &s->conv_prev, t);
}

static void session__refit(struct trc_session *s, uint64_t now)
{
	if (s->geom.clock_mode != TRC_CLOCK_TSC || now - s->last_refit_ns < SESSION_REFIT_NS)
		return;
	/* Refit the rate over everything since creation; the new segment starts at this pair. */
	struct trc_clock_pair p;
	struct trc_clock_conv c;
	trc_clock_read_pair(&p);
	if (trc_clock_fit(&c, &s->anchor, &p) == 0) {
		s->conv_prev = s->conv_cur;
		s->conv_cur = c;
		atomic_store_explicit(&s->tsc_hz, trc_clock_hz(&c), memory_order_relaxed);
	}
	s->last_refit_ns = p.ns;
}

static int session__emit(struct session__ctx *c, const struct session_stream *st,
			 const struct trc_record *r)
{
	int rc = c->sink->record(c->sink->arg, st, r);
	c->delivered++;
	return rc;
}

static int session__note(struct session__ctx *c, const char *text)
{
	struct trc_record r = {.type = TRC_REC_NOTE, .ts_ns = c->now_ns};
	size_t len = strlen(text);
	memcpy(c->s->text, text, len);
	r.note.text = c->s->text;
	r.note.len = (uint32_t)len;
	return session__emit(c, &c->s->meta, &r);
}

static int session__lost(struct session__ctx *c, const struct session_stream *st, uint64_t ts_ns,
			 uint64_t count, uint32_t reason)
{
	struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = ts_ns};
	r.lost.count = count;
	r.lost.reason = reason;
	return session__emit(c, st, &r);
}

/* A pid with TRC_PID_FOREIGN (another PID namespace) is never signalled: never gone. */
static bool session__thread_gone(uint32_t pid, uint32_t tid)
{
	if (!pid || !tid || pid > INT32_MAX || tid > INT32_MAX)
		return false;
	return syscall(SYS_tgkill, (pid_t)pid, (pid_t)tid, 0) < 0 && errno == ESRCH;
}

/* Delivers the NAME record of id (once) before the first record that uses it. */
static int session__name(struct session__ctx *c, uint32_t id, uint64_t ts_ns)
{
	struct trc_session *s = c->s;
	if (id == 0 || id >= s->name_seen_bits)
		return SESSION_CORRUPT;
	if (s->name_seen[id / 8] & (1u << (id % 8)))
		return 0;
	s->name_seen[id / 8] |= (uint8_t)(1u << (id % 8));
	static const char unknown[] = "(unknown name)";
	const char *str = unknown;
	uint32_t len = sizeof(unknown) - 1;
	uint64_t off = trc_strtab_off(id);
	if (off + 8 <= s->geom.strtab_bytes) {
		const uint8_t *e = trc_region_strtab(s->base, &s->geom) + off;
		/* Pairs with the producer's release store that published the entry (it did so
		 * before it used the id, and we got the id from a record we acquired). */
		uint32_t rl = __atomic_load_n((const uint32_t *)(const void *)e, __ATOMIC_ACQUIRE);
		uint32_t l = rl & ~TRC_STRTAB_READY;
		if ((rl & TRC_STRTAB_READY) && l <= TRC_STRTAB_MAX_LEN &&
		    off + trc_strtab_entry_bytes(l) <= s->geom.strtab_bytes) {
			memcpy(s->text, e + 8, l);
			str = s->text;
			len = l;
		}
	}
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = ts_ns};
	r.name.id = id;
	r.name.str = str;
	r.name.len = len;
	return session__emit(c, &s->meta, &r);
}

/* session__record reads payloads as little-endian words: v[1] = pid | tid << 32 (THREAD,
 * PROCESS), v[2] = cmdline_len, v[4] = path_len, ALLOC/FREE/FUNC fields in v[1], v[2];
 * EXIT: v[1] = pid | flags << 32, v[2] = hwm, v[3] = buffers, v[4] = status. */
_Static_assert(offsetof(struct trc_ring_exit, flags) == 12 &&
		       offsetof(struct trc_ring_exit, hwm_bytes) == 2 * 8 &&
		       offsetof(struct trc_ring_exit, buffers_bytes) == 3 * 8 &&
		       offsetof(struct trc_ring_exit, status) == 4 * 8 &&
		       offsetof(struct trc_ring_thread, pid) == 8 &&
		       offsetof(struct trc_ring_thread, tid) == 12 &&
		       offsetof(struct trc_ring_process, pid) == 8 &&
		       offsetof(struct trc_ring_process, ppid) == 12 &&
		       offsetof(struct trc_ring_process, cmdline_len) == 2 * 8 &&
		       offsetof(struct trc_ring_module, path_len) == 4 * 8 &&
		       offsetof(struct trc_ring_alloc, size) == 2 * 8 &&
		       offsetof(struct trc_ring_func, call_site) == 2 * 8,
	       "the drain's word indexes");

/* Keeps the VmHWM and buffers figure of a process's own exit record, written on slot i's
 * ring, with the process entry the slot names (bounded by the table: the region's word), for
 * trace-run's last line (session_self_hwm). */
static void session__note_self_hwm(struct trc_session *s, uint32_t i, uint64_t hwm,
				   uint64_t buffers)
{
	uint32_t proc = session__slot_proc(s, session__slot(s, i));
	if (!proc)
		return;
	atomic_store_explicit(&s->self_buffers[proc - 1], buffers, memory_order_relaxed);
	atomic_store_explicit(&s->self_hwm[proc - 1], hwm, memory_order_relaxed);
}

/* Keeps the name of a process's command (argv[0] after its last '/') with the process entry
 * slot i names, from its PROCESS record's command line (len bytes, NUL-separated, copied from
 * the ring already), for trace-run's last line (session_process_name). */
static void session__note_proc_name(struct trc_session *s, uint32_t i, const char *cmdline,
				    uint64_t len)
{
	uint32_t proc = session__slot_proc(s, session__slot(s, i));
	if (!proc)
		return;
	size_t arg0 = strnlen(cmdline, len);
	const char *base = memrchr(cmdline, '/', arg0);
	base = base ? base + 1 : cmdline;
	size_t n = arg0 - (size_t)(base - cmdline);
	char *name = s->proc_name[proc - 1];
	if (n > SESSION_PROC_NAME_BYTES - 1)
		n = SESSION_PROC_NAME_BYTES - 1;
	for (size_t k = 0; k < n; k++) /* printed in a terminal: no control bytes */
		name[k] = (unsigned char)base[k] < 0x20 || base[k] == 0x7f ? '?' : base[k];
	name[n] = 0;
}

/* Decodes and delivers one ring record. Returns 0, the sink's nonzero value, or
 * SESSION_CORRUPT. */
static int session__record(struct session__ctx *c, struct session_slot *ds,
			   const struct ring_record *rr)
{
	struct trc_session *s = c->s;
	uint32_t pb = rr->payload_bytes;
	uint32_t type = TRC_TAG_TYPE(rr->tag), id = TRC_TAG_ID(rr->tag);

	/* Fast path for the records of a busy program (spans, instants, counters): two words
	 * read once each, no zeroing of the whole record (downstream reads only the fields of
	 * its type), the name check inline. This loop runs tens of millions of times a second. */
	if (type >= TRC_REC_SPAN_BEGIN && type <= TRC_REC_COUNTER) {
		const uint64_t *w = rr->payload;
		bool has_value = type >= TRC_REC_INSTANT;
		if (pb < (has_value ? 16u : 8u))
			return SESSION_CORRUPT;
		struct trc_record r;
		r.type = type;
		r.ts_ns = session__ns(s, w[0]);
		if (__builtin_expect(!session__ts_ok(c, r.ts_ns), 0))
			return SESSION_CORRUPT;
		ds->last_ts_ns = r.ts_ns;
		if (id == 0 || id >= s->name_seen_bits)
			return SESSION_CORRUPT;
		if (__builtin_expect(!(s->name_seen[id / 8] & (1u << (id % 8))), 0)) {
			int rc = session__name(c, id, r.ts_ns);
			if (rc)
				return rc;
		}
		if (has_value) {
			r.value.name_id = id;
			r.value.value = (int64_t)w[1];
		} else {
			r.span.name_id = id;
		}
		return session__emit(c, &ds->st, &r);
	}

	uint64_t v[5] = {0};
	uint8_t bid_copy[TRC_BUILD_ID_MAX];
	/* Copy first: the producer may change the bytes while we look at them. The payloads are
	 * read as words v[i] at offset 8 * i (session_layout.h's payload structs). */
	memcpy(v, rr->payload, pb < sizeof(v) ? pb : sizeof(v));
	static const uint8_t need[TRC_REC_TYPE_COUNT] = {
		[TRC_REC_SPAN_BEGIN] = sizeof(struct trc_ring_span),
		[TRC_REC_SPAN_END] = sizeof(struct trc_ring_span),
		[TRC_REC_INSTANT] = sizeof(struct trc_ring_value),
		[TRC_REC_COUNTER] = sizeof(struct trc_ring_value),
		[TRC_REC_ALLOC] = sizeof(struct trc_ring_alloc),
		[TRC_REC_FREE] = sizeof(struct trc_ring_free),
		[TRC_REC_FUNC_ENTER] = sizeof(struct trc_ring_func),
		[TRC_REC_FUNC_EXIT] = sizeof(struct trc_ring_func),
		[TRC_REC_THREAD] = sizeof(struct trc_ring_thread),
		[TRC_REC_PROCESS] = sizeof(struct trc_ring_process),
		[TRC_REC_MODULE] = sizeof(struct trc_ring_module),
		[TRC_REC_EXIT] = sizeof(struct trc_ring_exit),
		[TRC_REC_STACK] = sizeof(struct trc_ring_stack),
		[TRC_REC_MAP] = sizeof(struct trc_ring_alloc),
		[TRC_REC_UNMAP] = sizeof(struct trc_ring_alloc),
	};
	if (type >= TRC_REC_TYPE_COUNT || !need[type] || pb < need[type])
		return SESSION_CORRUPT;
	struct trc_record r = {.type = type, .ts_ns = session__ns(s, v[0])};
	if (!session__ts_ok(c, r.ts_ns))
		return SESSION_CORRUPT;
	const struct session_stream *st = &ds->st;
	ds->last_ts_ns = r.ts_ns;
	int rc;
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		if ((rc = session__name(c, id, r.ts_ns)))
			return rc;
		r.span.name_id = id;
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		if ((rc = session__name(c, id, r.ts_ns)))
			return rc;
		r.value.name_id = id;
		r.value.value = (int64_t)v[1];
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		r.alloc.addr = v[1];
		r.alloc.size = type == TRC_REC_ALLOC ? v[2] : 0;
		r.alloc.stack_id = type == TRC_REC_ALLOC && id
					   ? session_stacks_global(s, (uint32_t)(ds - s->slots), id)
					   : 0;
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		/* {ts, addr, len | kind << 56}, the tag naming MAP's stack (session_layout.h) */
		r.map.addr = v[1];
		r.map.len = v[2] & TRC_MAP_LEN_MASK;
		r.map.kind = type == TRC_REC_MAP ? (uint32_t)(v[2] >> 56) : 0;
		if (type == TRC_REC_MAP && (r.map.kind == 0 || r.map.kind > TRC_MAP_KIND_MAX))
			return SESSION_CORRUPT;
		r.map.stack_id = type == TRC_REC_MAP && id
					 ? session_stacks_global(s, (uint32_t)(ds - s->slots), id)
					 : 0;
		break;
	case TRC_REC_STACK: {
		/* {ts, u32 id, u16 n, u16 flags} then the frames (session_layout.h) */
		uint32_t local = (uint32_t)v[1], n = (uint32_t)(v[1] >> 32) & 0xffffu;
		uint32_t flags = (uint32_t)(v[1] >> 48);
		if (local == 0 || n > TRC_STACK_DEPTH_MAX || (flags & ~TRC_STACK_FLAGS_ALL) ||
		    pb < sizeof(struct trc_ring_stack) + 8u * n)
			return SESSION_CORRUPT;
		memcpy(s->stack_frames,
		       (const uint8_t *)rr->payload + sizeof(struct trc_ring_stack), 8u * n);
		uint32_t global;
		bool fresh;
		rc = session_stacks_define(s, (uint32_t)(ds - s->slots), ds->st.pid, local, flags,
					   s->stack_frames, n, &global, &fresh);
		if (rc == -EINVAL)
			return SESSION_CORRUPT;
		if (rc || !fresh)
			return 0; /* out of memory: its ALLOCs are recorded without a stack */
		r.stack.id = global;
		r.stack.flags = flags;
		r.stack.n = n;
		r.stack.frames = s->stack_frames;
		st = &s->meta;
		break;
	}
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		r.func.addr = v[1];
		r.func.call_site = v[2];
		break;
	case TRC_REC_THREAD:
		r.thread.pid = (uint32_t)v[1];
		r.thread.tid = (uint32_t)(v[1] >> 32);
		memcpy(s->text,
		       (const uint8_t *)rr->payload + offsetof(struct trc_ring_thread, name),
		       TRC_THREAD_NAME_BYTES);
		r.thread.name = s->text;
		r.thread.name_len = (uint32_t)strnlen(s->text, TRC_THREAD_NAME_BYTES);
		break;
	case TRC_REC_PROCESS: {
		uint64_t len = v[2];
		if (len > pb - sizeof(struct trc_ring_process) || len > TRC_CMDLINE_MAX)
			return SESSION_CORRUPT;
		memcpy(s->text, (const uint8_t *)rr->payload + sizeof(struct trc_ring_process),
		       len);
		r.process.pid = (uint32_t)v[1];
		r.process.ppid = (uint32_t)(v[1] >> 32);
		r.process.cmdline = s->text;
		r.process.cmdline_len = (uint32_t)len;
		session__note_proc_name(s, (uint32_t)(ds - s->slots), s->text, len);
		st = &s->meta;
		break;
	}
	case TRC_REC_MODULE: {
		/* path, then build-id (session_layout.h TRC_RING_MODULE_LENS) */
		uint64_t len = TRC_RING_MODULE_PATH_LEN(v[4]), bid = TRC_RING_MODULE_BID_LEN(v[4]);
		const uint8_t *src = (const uint8_t *)rr->payload + sizeof(struct trc_ring_module);
		if (len > pb - sizeof(struct trc_ring_module) || bid > TRC_BUILD_ID_MAX ||
		    bid > pb - sizeof(struct trc_ring_module) - len)
			return SESSION_CORRUPT;
		/* Copied, like the path: the program may change its ring's bytes under us. */
		memcpy(bid_copy, src + len, bid);
		r.module.build_id = bid_copy;
		r.module.build_id_len = (uint32_t)bid;
		if (len > sizeof(s->text))
			len = sizeof(s->text);
		memcpy(s->text, src, len);
		r.module.pid = ds->st.pid;
		r.module.start = v[1];
		r.module.end = v[2];
		r.module.offset = v[3];
		r.module.path = s->text;
		r.module.path_len = (uint32_t)len;
		st = &s->meta;
		break;
	}
	case TRC_REC_EXIT:
		/* A process's own exit record (procinfo.c); the pid is the ring's owner's. SELF
		 * whatever the ring says: no process writes wait4's. */
		r.exit.pid = ds->st.pid;
		r.exit.flags = TRC_EXIT_SELF |
			       ((uint32_t)(v[1] >> 32) & (TRC_EXIT_STATUS | TRC_EXIT_BUFFERS_PEAK));
		r.exit.maxrss_bytes = v[2];
		r.exit.buffers_bytes = v[3];
		r.exit.status = (r.exit.flags & TRC_EXIT_STATUS) ? (int32_t)(uint32_t)v[4] : 0;
		session__note_self_hwm(s, (uint32_t)(ds - s->slots), v[2], v[3]);
		st = &s->meta;
		break;
	}
	return session__emit(c, st, &r);
}

/* Whether a lost counter read from the region may have moved by delta in elapsed_ns, with
 * `producers` threads counting into it: none can count faster than one event a nanosecond (a
 * producer emits about one every 10 ns here), plus slack for the first look. A counter that
 * moves faster was written by something else: the traced program scribbled on the region. */
static bool session__plausible(uint64_t delta, uint64_t elapsed_ns, uint64_t producers)
{
	uint64_t bound;
	if (__builtin_mul_overflow(elapsed_ns + SESSION_LOST_SLACK, producers, &bound))
		return true;
	return delta <= bound;
}

static int session__report_dropped(struct session__ctx *c, struct session_slot *ds, int *err)
{
	uint64_t d = ring_consumer_dropped(&ds->cons, err);
	uint64_t since = c->now_ns - ds->dropped_seen_ns;
	ds->dropped_seen_ns = c->now_ns;
	if (*err || d <= ds->dropped_reported)
		return 0;
	uint64_t n = d - ds->dropped_reported;
	if (!session__plausible(n, since, 1)) {
		*err = SESSION_CORRUPT;
		return 0;
	}
	ds->dropped_reported = d;
	return session__lost(c, &ds->st, ds->last_ts_ns, n, TRC_LOST_RING_FULL);
}

/* The thread's own REENTRANT losses (its slot's counter), bounded like the ring's. */
static int session__report_reentrant(struct session__ctx *c, struct session_slot *ds,
				     uint64_t since_ns, bool *bad)
{
	struct trc_slot *sl = session__slot(c->s, (uint32_t)(ds - c->s->slots));
	uint64_t v = atomic_load_explicit(&sl->lost_reentrant, memory_order_relaxed);
	if (v == ds->reentrant_reported)
		return 0;
	if (v < ds->reentrant_reported ||
	    !session__plausible(v - ds->reentrant_reported, since_ns, 1)) {
		*bad = true;
		return 0;
	}
	uint64_t n = v - ds->reentrant_reported;
	ds->reentrant_reported = v;
	return session__lost(c, &ds->st, ds->last_ts_ns, n, TRC_LOST_REENTRANT);
}

/* The thread's waits for the drain (its slot's counters, session_layout.h "Residency") since the
 * last look, as a WAIT record. Bounded before they are believed: the counts never go back, the
 * waits come no faster than one a nanosecond since the last look (like the lost counts), and
 * one thread's waits, which never overlap, add up to no more than the session's age (the
 * longest one too). Not since the last look: a wait that began before it ends after it. */
static int session__report_waits(struct session__ctx *c, struct session_slot *ds, uint64_t since_ns,
				 bool *bad)
{
	struct trc_slot *sl = session__slot(c->s, (uint32_t)(ds - c->s->slots));
	uint64_t n = atomic_load_explicit(&sl->waits, memory_order_relaxed);
	uint64_t ns = atomic_load_explicit(&sl->waited_ns, memory_order_relaxed);
	uint64_t max = atomic_load_explicit(&sl->wait_max_ns, memory_order_relaxed);
	if (n == ds->waits_reported && ns == ds->waited_reported)
		return 0;
	uint64_t age = trc_mono_ns() - c->s->created_ns + SESSION_LOST_SLACK;
	if (n < ds->waits_reported || ns < ds->waited_reported ||
	    !session__plausible(n - ds->waits_reported, since_ns, 1) || ns > age || max > age) {
		*bad = true;
		return 0;
	}
	struct trc_record r = {.type = TRC_REC_WAIT, .ts_ns = ds->last_ts_ns};
	r.wait.waits = n - ds->waits_reported;
	r.wait.waited_ns = ns - ds->waited_reported;
	r.wait.max_ns = max;
	ds->waits_reported = n;
	ds->waited_reported = ns;
	return session__emit(c, &ds->st, &r);
}

/* Ends a stream whose ring is corrupt: LOST (CORRUPT), a NOTE, stream_end. */
static int session__corrupt(struct session__ctx *c, struct session_slot *ds, const char *why)
{
	char text[160];
	snprintf(text, sizeof(text),
		 "trc: ring of pid %u tid %u is corrupt (%s): its stream ends here", ds->st.pid,
		 ds->st.tid, why);
	int rc = session__lost(c, &ds->st, ds->last_ts_ns, 0, TRC_LOST_CORRUPT);
	if (!rc)
		rc = session__note(c, text);
	if (c->sink->stream_end)
		c->sink->stream_end(c->sink->arg, &ds->st);
	ds->active = 0;
	ds->corrupt = 1;
	return rc;
}

/* ---- the fused path: ring events straight into chunk bytes ---------------------------------
 *
 * An event's ring record ({ts, a?, b?}, session_layout.h) becomes its chunk record (FORMAT.md
 * "Records") in one step: type byte, ts delta, then the fields, the address predictors of the
 * window carried along. No struct trc_record, no call per record. The bytes are exactly
 * trcfile__encode's for the same record (tests/test_drain_fused.c checks every event type).
 *
 * Two loops: the careful one (session__fused_run: one record at a time, every check, the
 * window's opening and closing, a name's first use, the previous clock segment, records near
 * the end of the ring or of the batch) and, inside it while a window is open, the fast one
 * (session_drain_fast.h: an encoder per event type, only the checks that vary per record, the
 * others made once per run). Whatever the fast loop does not take, the careful one does, and
 * whatever that does not take goes to ring_batch_next and session__record. */

_Static_assert(
	(RING_TAG_PAD & 0xffu) > TRC_REC_FUNC_EXIT,
	"padding's type byte is no event type (the fused loop leaves it to ring_batch_next)");

/* The exact ring length (header + payload) of each event type as trc.h writes it ({ts, a?, b?}),
 * indexed by the tag's type byte; 0 for everything else (padding's 0xff, metadata, unknown):
 * no event, whatever the record's length says (0 included). A record of another length is left
 * to the general path, which takes any length >= need and refuses one below a header. */
static const uint8_t session__event_len[256] = {
	[TRC_REC_SPAN_BEGIN] = RING_HDR_BYTES + sizeof(struct trc_ring_span),
	[TRC_REC_SPAN_END] = RING_HDR_BYTES + sizeof(struct trc_ring_span),
	[TRC_REC_INSTANT] = RING_HDR_BYTES + sizeof(struct trc_ring_value),
	[TRC_REC_COUNTER] = RING_HDR_BYTES + sizeof(struct trc_ring_value),
	[TRC_REC_ALLOC] = RING_HDR_BYTES + sizeof(struct trc_ring_alloc),
	[TRC_REC_FREE] = RING_HDR_BYTES + sizeof(struct trc_ring_free),
	[TRC_REC_FUNC_ENTER] = RING_HDR_BYTES + sizeof(struct trc_ring_func),
	[TRC_REC_FUNC_EXIT] = RING_HDR_BYTES + sizeof(struct trc_ring_func),
};
/* Both loops read a record's header and 3 payload words whatever the type: they take a record
 * only when that stays inside data (and, the fast one, inside the batch). */
#define SESSION__MAX_EVENT_LEN (RING_HDR_BYTES + 24u)

/* The clock conversion of a tick count at or after the current segment's start (nearly every
 * record): trc_clock_to_ns's first branch, without the choice of segment and the second branch
 * evaluated alongside. */
static inline uint64_t session__ns_cur(const struct trc_clock_conv *cur, uint64_t t)
{
	return cur->ns0 +
	       (uint64_t)(((unsigned __int128)(t - cur->tick0) * cur->mult) >> TRC_CLOCK_SHIFT);
}

/* A varint of three bytes or more: out of line, so the inline cases keep their registers. */
__attribute__((noinline, cold)) static uint8_t *session__varint_long(uint8_t *p, uint64_t v)
{
	return trcfile__put_varint(p, v);
}

/* A varint, the one- to three-byte cases (nearly every delta, id, address step and small value)
 * inline. */
static inline uint8_t *session__varint(uint8_t *p, uint64_t v)
{
	*p = (uint8_t)v;
	if (__builtin_expect(v < 0x80, 1))
		return p + 1;
	if (__builtin_expect(v < 0x4000, 1)) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	if (__builtin_expect(v < 0x200000, 1)) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)((v >> 7) | 0x80);
		p[2] = (uint8_t)(v >> 14);
		return p + 3;
	}
	return session__varint_long(p, v);
}

/* The fast loop's state: the window and the position, in locals of session__fused_run. */
struct session__fast {
	uint8_t *p;
	uint64_t wts, walloc, wfunc;
	uint32_t count;
};

/* What the fast loop checks records against (session__fused_run's copies). */
struct session__fast_in {
	struct trc_clock_conv cur, prev;
	uint64_t ts_lo, ts_span;
	const uint8_t *seen;
	uint64_t seen_bits;
	/* the slot's map of its thread's stack ids (session_stacks.c): [id] -> session id */
	const uint32_t *stack_ids;
	uint32_t stack_cap;
};

/* The fast loop, one instance per clock form (session_drain_fast.h). */
#define SESSION__FAST_FN session__fast_ns
#define SESSION__FAST_CLOCK 0
#include "session_drain_fast.h"
#define SESSION__FAST_FN session__fast_tsc_hi
#define SESSION__FAST_CLOCK 1
#include "session_drain_fast.h"
#define SESSION__FAST_FN session__fast_tsc
#define SESSION__FAST_CLOCK 2
#include "session_drain_fast.h"

/* Closes the stream's window if one is open. */
static int session__window_close(struct session__ctx *c, struct session_slot *ds,
				 struct trcfile_window *win, bool *open)
{
	if (!*open)
		return 0;
	*open = false;
	c->delivered += win->count;
	return c->sink->window_close(c->sink->arg, &ds->st, win);
}

/* The fused loop: from b->pos, while the records are well-formed events, encodes them into the
 * window. Stops, with b->pos on it, at the first record that is anything else (metadata,
 * padding, or whatever looks wrong: ring_batch_next and session__record then deal with it
 * exactly as without a window, corruption included). Everything the loop touches per record
 * is in locals: the chunk bytes are written through a uint8_t pointer, which may alias
 * anything, so state left in memory would be reloaded after every byte.
 * Returns 0 or the sink's nonzero value (or SESSION_CORRUPT from a name lookup). */
static int session__fused_run(struct session__ctx *c, struct session_slot *ds, struct ring_batch *b,
			      struct trcfile_window *win, bool *open, bool *sliced)
{
	struct trc_session *s = c->s;
	const struct ring_consumer *cons = &ds->cons;
	if (cons->error)
		return 0;
	const uint8_t *data = cons->data;
	const uint64_t mask = cons->mask, cap = cons->capacity;
	uint64_t pos = b->pos;
	const uint64_t end = b->end;
	/* At most a slice of the batch per call: the caller gives its space back to the writer
	 * between slices, so a writer waiting for room (session_layout.h "Residency") fills the
	 * ring while the drain reads it instead of after. */
	const uint64_t stop = end - pos > SESSION_SLICE_BYTES ? pos + SESSION_SLICE_BYTES : end;
	const bool tsc = s->geom.clock_mode == TRC_CLOCK_TSC;
	const struct trc_clock_conv cur = s->conv_cur, prev = s->conv_prev;
	const uint8_t *seen = s->name_seen;
	const uint64_t seen_bits = s->name_seen_bits;
	const uint32_t slot_i = (uint32_t)(ds - s->slots);
	const struct session_stack_ids *sids = s->stack_ids ? &s->stack_ids[slot_i] : NULL;
	/* What the fast loop checks against (ts_span is refreshed per run: drain_ring moves it). */
	struct session__fast_in fin = {.cur = cur,
				       .prev = prev,
				       .ts_lo = c->ts_lo,
				       .ts_span = c->ts_span,
				       .seen = seen,
				       .seen_bits = seen_bits,
				       .stack_ids = sids ? sids->ids : NULL,
				       .stack_cap = sids ? sids->cap : 0};
	/* The window, in locals while the loop runs (win holds them across calls out). */
	uint8_t *p = win->p, *limit = win->limit;
	uint64_t wts = win->ts, walloc = win->alloc_addr, wfunc = win->func_addr;
	uint32_t count = win->count;
	uint64_t last_ts = ds->last_ts_ns;
	int rc = 0;

#define SESSION__WIN_STORE()              \
	do {                              \
		win->p = p;               \
		win->ts = wts;            \
		win->alloc_addr = walloc; \
		win->func_addr = wfunc;   \
		win->count = count;       \
	} while (0)
#define SESSION__WIN_LOAD()               \
	do {                              \
		p = win->p;               \
		limit = win->limit;       \
		wts = win->ts;            \
		walloc = win->alloc_addr; \
		wfunc = win->func_addr;   \
		count = win->count;       \
	} while (0)

	/* ring_batch_begin checked end - pos <= cap and both aligned; pos only moves by whole
	 * checked records (multiples of 8, within avail), so that stays true below. */
	if (end - pos > cap || (pos & 7u))
		return 0;
	while ((int64_t)(stop - pos) > 0) {
		if (*open) {
			/* The fast loop over what lies wholly inside data and the batch (the last
			 * SESSION__MAX_EVENT_LEN bytes of either are the careful loop's), at most
			 * the slice, and at most as many records as the window has room for: the
			 * shortest event takes RING_HDR_BYTES + 8 ring bytes and the longest writes
			 * TRCFILE_WINDOW_EVENT_MAX - 1 bytes, so p stays below limit. */
			uint64_t off = pos & mask, room = cap - off;
			if (room > end - pos)
				room = end - pos;
			uint64_t span = room >= SESSION__MAX_EVENT_LEN
						? room - SESSION__MAX_EVENT_LEN + 1
						: 0;
			if (span > stop - pos)
				span = stop - pos;
			uint64_t fit = p < limit
					       ? (uint64_t)(limit - p) / TRCFILE_WINDOW_EVENT_MAX *
							 (RING_HDR_BYTES + 8)
					       : 0;
			if (span > fit)
				span = fit;
			if (span) {
				struct session__fast f = {p, wts, walloc, wfunc, count};
				const uint8_t *q0 = data + off;
				fin.ts_span = c->ts_span;
				/* The one-product form needs 0 < mult < 2^32. */
				const uint8_t *q =
					!tsc ? session__fast_ns(q0, q0 + span, &f, &fin)
					: cur.mult >> 32 || !cur.mult
						? session__fast_tsc(q0, q0 + span, &f, &fin)
						: session__fast_tsc_hi(q0, q0 + span, &f, &fin);
				if (q != q0) {
					pos += (uint64_t)(q - q0);
					p = f.p;
					wts = f.wts;
					walloc = f.walloc;
					wfunc = f.wfunc;
					count = f.count;
					last_ts = wts;
					if ((int64_t)(stop - pos) <= 0)
						break;
				}
			}
		}
		/* The rest of ring_batch_next's checks, in the form an event passes: its exact
		 * length for its type (which also says it is an event, and a multiple of 8), within
		 * what was published and within data. Anything odd is left to ring_batch_next. */
		uint64_t avail = end - pos;
		uint64_t off = pos & mask;
		__builtin_prefetch(data + ((off + 256) & mask));
		if (__builtin_expect(avail < RING_HDR_BYTES || off + SESSION__MAX_EVENT_LEN > cap,
				     0))
			break; /* (near the end of data: the general path, one record) */
		struct ring__hdr hdr;
		memcpy(&hdr, data + off, sizeof(hdr));
		atomic_signal_fence(memory_order_seq_cst); /* the header is read once */
		uint64_t len = hdr.len;
		uint32_t type = TRC_TAG_TYPE(hdr.tag), id = TRC_TAG_ID(hdr.tag);
		/* A type whose entry is 0 is no event, whatever its length: a length of 0 would
		 * match the entry, and taking it would encode the record again and again without
		 * moving pos. */
		const uint64_t want = session__event_len[type];
		if (!want || len != want || len > avail)
			break;
		if (type <= TRC_REC_COUNTER && (id == 0 || id >= seen_bits))
			break;
		/* Copy first: the producer may change the bytes while we look at them. Three words
		 * whatever the type (inside data: checked above), no branch on the type. */
		const uint8_t *pl = data + off + RING_HDR_BYTES;
		uint64_t t, a, bb;
		memcpy(&t, pl, 8);
		memcpy(&a, pl + 8, 8);
		memcpy(&bb, pl + 16, 8);
		atomic_signal_fence(memory_order_seq_cst); /* the payload is read once */
		if (tsc)
			t = __builtin_expect(t >= cur.tick0, 1) ? session__ns_cur(&cur, t)
								: trc_clock_to_ns(&prev, t);
		if (__builtin_expect(!session__ts_ok(c, t), 0))
			break; /* a time no record can have: the general path reports it */
		if (type <= TRC_REC_COUNTER &&
		    __builtin_expect(!(seen[id / 8] & (1u << (id % 8))), 0)) {
			/* The NAME goes to the meta stream: this stream's window stays open. */
			if (*open)
				SESSION__WIN_STORE();
			rc = session__name(c, id, t);
			if (rc)
				goto out_stored;
		}
		if (!*open) {
			rc = c->sink->window_open(c->sink->arg, &ds->st, t, win);
			if (rc)
				goto out_stored;
			*open = true;
			SESSION__WIN_LOAD();
		}
		/* The record, as trcfile__encode writes it (FORMAT.md "Records"). An ALLOC's tag
		 * names its thread's stack id: the session's, or none when its stream never
		 * defined it (session_stacks.c). */
		uint32_t sid = type == TRC_REC_ALLOC && id ? session_stacks_global(c->s, slot_i, id)
							   : 0;
		uint8_t t0 = (uint8_t)(type | (sid ? TRCFILE__ALLOC_HAS_STACK : 0));
		uint64_t d = t - wts;
		if (__builtin_expect(t < wts, 0)) {
			d = wts - t;
			t0 |= TRCFILE__NEG_DELTA;
		}
		wts = t;
		*p++ = t0;
		p = session__varint(p, d);
		switch (type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_SPAN_END:
			p = session__varint(p, id);
			break;
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			p = session__varint(p, id);
			p = session__varint(p, trcfile__zigzag((int64_t)a));
			break;
		case TRC_REC_ALLOC:
		case TRC_REC_FREE:
			p = session__varint(p, trcfile__zigzag((int64_t)(a - walloc)));
			walloc = a;
			if (type == TRC_REC_ALLOC) {
				p = session__varint(p, bb);
				if (sid)
					p = session__varint(p, sid);
			}
			break;
		default: /* FUNC_ENTER, FUNC_EXIT */
			p = session__varint(p, trcfile__zigzag((int64_t)(a - wfunc)));
			p = session__varint(p, trcfile__zigzag((int64_t)(bb - a)));
			wfunc = a;
			break;
		}
		count++;
		pos += len;
		last_ts = t;
		if (__builtin_expect(p >= limit, 0)) {
			SESSION__WIN_STORE();
			rc = session__window_close(c, ds, win, open);
			if (rc)
				goto out_stored;
		}
	}
	/* Stopped at the slice's end rather than at the batch's or at a record the loop leaves
	 * to ring_batch_next. */
	*sliced = (int64_t)(stop - pos) <= 0 && pos != end;
	if (*open)
		SESSION__WIN_STORE();
out_stored:
	b->pos = pos;
	ds->last_ts_ns = last_ts;
	return rc;
#undef SESSION__WIN_STORE
#undef SESSION__WIN_LOAD
}

/* Hands out everything the ring has published: events through the sink's window when it has
 * one (session__fused_run), everything else, and every record without a window, through
 * session__record. */
static int session__drain_ring(struct session__ctx *c, struct session_slot *ds)
{
	struct ring_batch b;
	struct ring_record rr = {0};
	if (ring_batch_begin(&ds->cons, &b) < 0)
		return session__corrupt(c, ds, "bad write position");
	const uint64_t start = b.pos;
	/* Every record of the batch was committed before this clock read (the batch acquired
	 * the write position): none may be stamped later. Read here, not once a pass: a pass over
	 * full rings can take longer than the slack. */
	c->ts_span = trc_mono_ns() + SESSION_TS_SLACK - c->ts_lo;
	bool fused = c->sink->window_open && c->sink->window_close, open = false;
	struct trcfile_window win;
	int n, rc;
	for (;;) {
		if (fused) {
			bool sliced = false;
			rc = session__fused_run(c, ds, &b, &win, &open, &sliced);
			if (rc)
				goto stop;
			if (sliced) {
				ring_batch_release(&ds->cons, &b);
				continue;
			}
		}
		if ((n = ring_batch_next(&ds->cons, &b, &rr)) != 1)
			break;
		/* Not an event, or not one the fused loop would take: the old path, after the
		 * window is given back (the record may be for the same stream). */
		rc = session__window_close(c, ds, &win, &open);
		if (!rc)
			rc = session__record(c, ds, &rr);
		if (rc)
			goto stop;
	}
	rc = session__window_close(c, ds, &win, &open);
	if (rc) {
		ring_batch_release(&ds->cons, &b);
		return rc;
	}
	if (n < 0)
		return session__corrupt(c, ds, "bad record header");
	c->s->read_since_unmap += b.pos - start; /* the unmapping in session_drain */
	ring_batch_release(&ds->cons, &b);
	bool bad = false;
	rc = session__report_reentrant(c, ds, c->now_ns - ds->dropped_seen_ns, &bad);
	if (rc)
		return rc;
	if (bad)
		return session__corrupt(c, ds, "reentrant lost count implausible");
	rc = session__report_waits(c, ds, c->now_ns - ds->dropped_seen_ns, &bad);
	if (rc)
		return rc;
	if (bad)
		return session__corrupt(c, ds, "wait counters implausible");
	int err;
	rc = session__report_dropped(c, ds, &err);
	if (!rc && err)
		return session__corrupt(
			c, ds,
			err == SESSION_CORRUPT ? "dropped count moved faster than a thread can emit"
					       : "dropped count went back");
	return rc;

stop:
	if (rc == SESSION_CORRUPT) {
		/* What the window holds was well-formed: it is kept. */
		if ((rc = session__window_close(c, ds, &win, &open)))
			return rc;
		return session__corrupt(c, ds, "bad record");
	}
	/* The sink refused: what is in the window was still written. */
	(void)session__window_close(c, ds, &win, &open);
	ring_batch_release(&ds->cons, &b);
	return rc;
}

/* Takes n from a count shared with the traced processes, never below zero (the count comes from
 * the region: a program may have scribbled it). */
static void session__count_take(_Atomic uint64_t *count, uint64_t n)
{
	uint64_t cur = atomic_load_explicit(count, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(count, &cur, cur > n ? cur - n : 0,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* What a slot being freed had faulted in of its ring, as its writer published it, bounded by
 * the ring (session_layout.h "Residency"). */
static uint64_t session__slot_resident(const struct trc_session *s, struct trc_slot *sl)
{
	uint64_t res = atomic_load_explicit(&sl->resident_bytes, memory_order_relaxed);
	return res < s->geom.ring_bytes ? res : s->geom.ring_bytes;
}

/* Gives the ring pool bytes of a slot being freed back to the region's pool (session_layout.h
 * "Residency"): what its resident size res holds beyond the base. */
static void session__pool_give_back(struct trc_session *s, uint64_t res)
{
	if (res > TRC_RING_BASE_BYTES)
		session__count_take(&s->hdr->ring_pool_used, res - TRC_RING_BASE_BYTES);
}

/* Punches [off, off + len) of the region out of the memfd (and so out of every process that
 * maps it). */
static void session__punch(struct trc_session *s, uint64_t off, uint64_t len)
{
	if (fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		(void)madvise(s->base + off, len, MADV_REMOVE);
}

/* The idle give-back of ring i (session_layout.h "Residency"), after its drain: once it has
 * published nothing for SESSION_TRIM_IDLE_NS and is drained to its end, punch its pages below the
 * writer's offset, under the slot's trim word. Drain thread. */
static void session__trim_idle(struct session__ctx *c, uint32_t i)
{
	struct trc_session *s = c->s;
	struct session_slot *ds = &s->slots[i];
	struct trc_slot *sl = session__slot(s, i);
	uint64_t x = atomic_load_explicit(&sl->trim, memory_order_acquire);
	if (!(x & TRC_TRIM_DONE))
		atomic_store_explicit(&s->trimmed[i], 0, memory_order_relaxed); /* faulted again */
	uint64_t w = atomic_load_explicit(&sl->ctl.write_pos, memory_order_acquire);
	if (w != ds->idle_w) {
		ds->idle_w = w;
		ds->idle_since_ns = c->now_ns;
		return;
	}
	uint64_t len = (w & (s->geom.ring_bytes - 1)) & ~(uint64_t)(TRC_REGION_PAGE - 1);
	if (w != ds->cons.read || ds->trimmed_at == w + 1 || len < SESSION_TRIM_MIN_BYTES ||
	    c->now_ns - ds->idle_since_ns < SESSION_TRIM_IDLE_NS)
		return;
	ds->trimmed_at = w + 1;
	/* The writer has not announced a later lap: it writes at or above w's offset until its
	 * next wrap, which waits while the word is busy. */
	if ((x & TRC_TRIM_BUSY) || (uint32_t)x != trc_ring_lap(w, s->geom.ring_bytes) ||
	    !atomic_compare_exchange_strong_explicit(&sl->trim, &x, x | TRC_TRIM_BUSY,
						     memory_order_seq_cst, memory_order_relaxed))
		return;
	session__punch(s, trc_region_ring_off(&s->geom, i), len);
	atomic_store_explicit(&s->trimmed[i], len, memory_order_relaxed);
	/* Release: the punch is done before the writer may enter the next lap. */
	atomic_store_explicit(&sl->trim, x | TRC_TRIM_DONE, memory_order_release);
}

/* Takes the ring of a slot being freed, res bytes, out of its process entry's buffer count
 * (session_layout.h "Residency"); the entry's index comes from the region, bounded by the
 * table. */
static void session__proc_give_back(struct trc_session *s, struct trc_slot *sl, uint64_t res)
{
	uint32_t proc = session__slot_proc(s, sl);
	if (proc)
		session__count_take(&session__proc(s, proc - 1)->buffers_now, res);
}

static void session__free_slot(struct trc_session *s, uint32_t i, uint32_t gen)
{
	struct trc_slot *sl = session__slot(s, i);
	const uint64_t res = session__slot_resident(s, sl);
	session__pool_give_back(s, res);
	session__proc_give_back(s, sl, res);
	/* Drops the ring's pages from the memfd and from every process that mapped them
	 * (session_layout.h "Residency"). */
	session__punch(s, trc_region_ring_off(&s->geom, i), s->geom.ring_bytes);
	(void)ring_ctl_init(&sl->ctl, s->geom.ring_bytes, 0);
	atomic_store_explicit(&sl->trim, 0, memory_order_relaxed);
	atomic_store_explicit(&s->trimmed[i], 0, memory_order_relaxed);
	atomic_store_explicit(&sl->resident_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->proc, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->lost_reentrant, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->waits, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->waited_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&sl->wait_max_ns, 0, memory_order_relaxed);
	__atomic_store_n(&sl->pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sl->tid, 0, __ATOMIC_RELAXED);
	memset(sl->name, 0, sizeof(sl->name));
	/* Pairs with the producer's acquire load of the state before its CAS: the ring_ctl
	 * above is initialised before anyone can claim the slot. */
	atomic_store_explicit(&sl->state, TRC_SLOT_WORD(gen + 1, TRC_SLOT_FREE),
			      memory_order_release);
	atomic_fetch_add_explicit(&s->hdr->slots_freed, 1, memory_order_release);
	s->slots[i].active = 0;
	s->slots[i].corrupt = 0;
}

static int session__open_stream(struct session__ctx *c, uint32_t i, uint32_t gen)
{
	struct trc_session *s = c->s;
	struct session_slot *ds = &s->slots[i];
	struct trc_slot *sl = session__slot(s, i);
	memset(ds, 0, sizeof(*ds));
	session_stacks_slot_reset(s, i);
	ds->gen = gen;
	ds->st.key = s->next_key++;
	ds->st.kind = TRC_STREAM_THREAD;
	ds->region_pid = __atomic_load_n(&sl->pid, __ATOMIC_RELAXED);
	ds->st.pid = ds->region_pid & ~TRC_PID_FOREIGN;
	ds->st.tid = __atomic_load_n(&sl->tid, __ATOMIC_RELAXED);
	ds->last_ts_ns = c->now_ns;
	/* The thread may have emitted (and dropped) since long before this first look: its first
	 * counts are bounded by the time since the session began. */
	ds->dropped_seen_ns = s->created_ns;
	ds->active = 1;
	if (ring_consumer_attach(&ds->cons, &sl->ctl, session__ring(s, i), s->geom.ring_bytes) < 0)
		return session__corrupt(c, ds, "bad control block");
	return 0;
}

static int session__drain_slot(struct session__ctx *c, uint32_t i, bool reap)
{
	struct trc_session *s = c->s;
	struct session_slot *ds = &s->slots[i];
	struct trc_slot *sl = session__slot(s, i);
	/* Acquire pairs with the producer's release store of CLAIMED (pid, tid, name written)
	 * or RETIRED (every record committed). */
	uint64_t w = atomic_load_explicit(&sl->state, memory_order_acquire);
	uint32_t st = TRC_SLOT_STATE(w), gen = TRC_SLOT_GEN(w);
	int rc;

	/* Only the recorder bumps the generation or frees: anything else under an open stream is
	 * a scribble. */
	if (st > TRC_SLOT_RETIRED ||
	    (ds->active && (gen != ds->gen || st == TRC_SLOT_FREE || st == TRC_SLOT_CLAIMING)))
		return ds->active ? session__corrupt(c, ds, "bad slot state") : 0;
	if (!ds->active && !ds->corrupt) {
		if (st == TRC_SLOT_FREE)
			return 0;
		if (st == TRC_SLOT_CLAIMING) {
			/* A claimer that died half-way leaves its tid behind, or nothing. A
			 * short-lived thread may also have finished its claim, emitted, retired and
			 * exited since the load above: take the slot only by CAS from the exact
			 * word checked, so such a slot stays RETIRED and is drained on the next
			 * pass. */
			if (reap &&
			    session__thread_gone(__atomic_load_n(&sl->pid, __ATOMIC_RELAXED),
						 __atomic_load_n(&sl->tid, __ATOMIC_RELAXED)) &&
			    atomic_compare_exchange_strong_explicit(
				    &sl->state, &w, TRC_SLOT_WORD(gen, TRC_SLOT_RETIRED),
				    memory_order_acquire, memory_order_relaxed))
				session__free_slot(s, i, gen);
			return 0;
		}
		if ((rc = session__open_stream(c, i, gen)))
			return rc;
	}
	if (st == TRC_SLOT_CLAIMED && reap && session__thread_gone(ds->region_pid, ds->st.tid)) {
		/* Exited without destructors (process exit or exec). It is gone, so nothing
		 * writes the ring any more; retire it ourselves. A failed CAS means an exec'd
		 * image retired it first, which is the same. */
		if (atomic_compare_exchange_strong_explicit(
			    &sl->state, &w, TRC_SLOT_WORD(gen, TRC_SLOT_RETIRED),
			    memory_order_acquire, memory_order_acquire) ||
		    w == TRC_SLOT_WORD(gen, TRC_SLOT_RETIRED))
			st = TRC_SLOT_RETIRED;
	}
	if (ds->corrupt) {
		if (st == TRC_SLOT_RETIRED) {
			session__free_slot(s, i, gen);
		} else {
			/* Nothing of it is read any more: give its writer the space back, so it
			 * does not wait for a drain that will not come (session_layout.h
			 * "Residency"). The producer clamps whatever it derives from read_pos. */
			uint64_t wp =
				atomic_load_explicit(&sl->ctl.write_pos, memory_order_relaxed);
			atomic_store_explicit(&sl->ctl.read_pos, wp, memory_order_release);
		}
		return 0;
	}
	if ((rc = session__drain_ring(c, ds)))
		return rc;
	if (st == TRC_SLOT_RETIRED && ds->active) {
		if (c->sink->stream_end)
			c->sink->stream_end(c->sink->arg, &ds->st);
		session__free_slot(s, i, gen);
	} else if (ds->active) {
		session__trim_idle(c, i);
	}
	return 0;
}

/* Reports what one of the region's lost counters gained since the last look. A counter that
 * went back, or moved faster than every processor emitting one event a nanosecond could move
 * it, is not believed: its gain is reported as unknown (LOST with count 0, reason CORRUPT), a
 * NOTE says why (once a session), and counting resumes from the value found. */
static int session__region_counter(struct session__ctx *c, _Atomic uint64_t *counter,
				   uint64_t *reported, uint32_t reason, const char *what,
				   uint64_t since_ns)
{
	struct trc_session *s = c->s;
	uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
	if (v == *reported)
		return 0;
	uint64_t old = *reported;
	*reported = v;
	if (v > old && session__plausible(v - old, since_ns, s->cpus))
		return session__lost(c, &s->meta, c->now_ns, v - old, reason);
	int rc = session__lost(c, &s->meta, c->now_ns, 0, TRC_LOST_CORRUPT);
	if (rc || s->region_lost_flagged)
		return rc;
	s->region_lost_flagged = 1;
	char text[256];
	snprintf(text, sizeof(text),
		 "trc: the session region's %s lost count jumped from %llu to %llu (%s): not "
		 "believed, the traced program wrote over the region; losses it counts are unknown "
		 "from here",
		 what, (unsigned long long)old, (unsigned long long)v,
		 v < old ? "backwards" : "faster than the machine can emit");
	return session__note(c, text);
}

static int session__region_lost(struct session__ctx *c)
{
	struct trc_session *s = c->s;
	struct trc_region_hdr *h = s->hdr;
	uint64_t since = c->now_ns - s->region_lost_seen_ns;
	s->region_lost_seen_ns = c->now_ns;
	int rc = session__region_counter(c, &h->lost_no_slot, &s->lost_no_slot_reported,
					 TRC_LOST_NO_SLOT, "no-slot", since);
	if (rc)
		return rc;
	rc = session__region_counter(c, &h->lost_reentrant, &s->lost_reentrant_reported,
				     TRC_LOST_REENTRANT, "reentrant", since);
	if (rc)
		return rc;
	uint64_t used = atomic_load_explicit(&h->strtab_used, memory_order_relaxed);
	if (used > s->geom.strtab_bytes && !s->strtab_full_noted) {
		s->strtab_full_noted = 1;
		rc = session__note(c, "trc: the string table is full; later names read "
				      "\"(string table full)\" (raise strtab_bytes)");
	}
	return rc;
}

/* One counter of a thread-loss entry: the delta since the last report, as a LOST record of
 * reason on the thread's stream; a counter that went back or moved faster than the machine
 * can emit (the program scribbled on the region) is reported as CORRUPT (unknown) instead. */
static int session__tlost_counter(struct session__ctx *c, struct session_tlost *d,
				  _Atomic uint64_t *counter, uint64_t *reported, uint32_t reason,
				  uint64_t since_ns)
{
	uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
	if (v == *reported)
		return 0;
	uint64_t old = *reported;
	*reported = v;
	if (v > old && session__plausible(v - old, since_ns, 1))
		return session__lost(c, &d->st, c->now_ns, v - old, reason);
	return session__lost(c, &d->st, c->now_ns, 0, TRC_LOST_CORRUPT);
}

/* The thread-loss table (session_layout.h): losses of threads that held no ring, reported
 * on a stream of each such thread, so emitted = recorded + lost holds per thread. Read only
 * when a producer added to it since the last look. */
static int session__thread_losses(struct session__ctx *c)
{
	struct trc_session *s = c->s;
	uint64_t added = atomic_load_explicit(&s->hdr->tlost_added, memory_order_relaxed);
	if (added == s->tlost_added_seen || !s->geom.max_tlost)
		return 0;
	if (!s->tlost) {
		s->tlost = calloc(s->geom.max_tlost, sizeof(*s->tlost));
		if (!s->tlost)
			return 0; /* read again next time */
		s->tlost_seen_ns = s->created_ns;
	}
	s->tlost_added_seen = added;
	uint64_t since = c->now_ns - s->tlost_seen_ns;
	s->tlost_seen_ns = c->now_ns;
	for (uint32_t i = 0; i < s->geom.max_tlost; i++) {
		struct trc_tlost *e = trc_region_tlost(s->base, &s->geom, i);
		struct session_tlost *d = &s->tlost[i];
		uint64_t who = atomic_load_explicit(&e->who, memory_order_relaxed);
		if (!who)
			continue;
		if (who !=
		    d->who) { /* a new entry (or one the program rewrote): a stream of its own */
			memset(d, 0, sizeof(*d));
			d->who = who;
			d->st.key = s->next_key++;
			d->st.kind = TRC_STREAM_THREAD;
			d->st.pid = (uint32_t)(who >> 32) & ~TRC_PID_FOREIGN;
			d->st.tid = (uint32_t)who;
		}
		int rc = session__tlost_counter(c, d, &e->no_slot, &d->no_slot_reported,
						TRC_LOST_NO_SLOT, since);
		if (!rc)
			rc = session__tlost_counter(c, d, &e->reentrant, &d->reentrant_reported,
						    TRC_LOST_REENTRANT, since);
		if (rc)
			return rc;
	}
	return 0;
}

static void session__reap_procs(struct trc_session *s)
{
	const uint32_t used = session__procs_used(s);
	for (uint32_t i = 0; i < used; i++) {
		struct trc_proc *pe = session__proc(s, i);
		uint32_t pid = atomic_load_explicit(&pe->pid, memory_order_acquire);
		if (!pid || pid > INT32_MAX ||
		    atomic_load_explicit(&pe->dead, memory_order_relaxed))
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			atomic_store_explicit(&pe->dead, 1, memory_order_relaxed);
	}
}

long session_drain(struct trc_session *s, const struct session_sink *sink)
{
	struct session__ctx c = {.s = s, .sink = sink, .now_ns = trc_mono_ns()};
	c.ts_lo = s->created_ns - SESSION_TS_SLACK;
	c.ts_span = c.now_ns + SESSION_TS_SLACK - c.ts_lo;
	session__refit(s, c.now_ns);
	/* Threads without a slot count their losses in the region or in the thread-loss table:
	 * either moving means someone waits for a slot, so reap now. */
	uint64_t no_slot = atomic_load_explicit(&s->hdr->lost_no_slot, memory_order_relaxed) +
			   atomic_load_explicit(&s->hdr->tlost_added, memory_order_relaxed);
	bool reap =
		c.now_ns - s->last_reap_ns >= SESSION_REAP_NS || no_slot != s->reap_no_slot_seen;
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		int rc = session__drain_slot(&c, i, reap);
		if (rc)
			return rc;
		if (s->read_since_unmap >= SESSION_UNMAP_EVERY_BYTES) {
			s->read_since_unmap = 0;
			/* The recorder's own page-table entries for the rings: dropped when the
			 * rings hold more than it should map, so its RSS holds at most that much of
			 * the program's ring pages, however many threads (session_layout.h
			 * "Residency"). Not below: a page mapped again costs ~10 us here (measured:
			 * bench_drain's 10 MB ring drained 4x slower), so a few big rings that the
			 * drain reads lap after lap stay mapped. Shared mapping: the data stays. */
			if (session_buffers_resident_bytes(s, 0) >
			    s->geom.rings_off + SESSION_UNMAP_ABOVE_BYTES)
				(void)madvise(s->base + s->geom.rings_off,
					      s->geom.region_bytes - s->geom.rings_off,
					      MADV_DONTNEED);
		}
	}
	int rc = session__region_lost(&c);
	if (!rc)
		rc = session__thread_losses(&c);
	if (rc)
		return rc;
	if (reap) {
		session__reap_procs(s);
		s->last_reap_ns = c.now_ns;
		s->reap_no_slot_seen = no_slot;
	}
	return c.delivered;
}
