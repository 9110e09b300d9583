/* thread.c - a producer thread's life: claiming a ring slot on its first event, the slow
 * emit paths (no slot yet, ring full or wrapping, nested from a signal handler), naming, and
 * giving the slot back when the thread exits.
 *
 * Claim: scan the slot table for a FREE slot and CAS its state word (generation kept) to
 * CLAIMING, fill pid/tid/name, attach the ring's producer (trc__self.prod, the one the fast
 * path in trc.h uses), fault the head of the ring in and cap the producer's fast path there (the
 * rest follows in chunks ahead of the writer: trc__reserve, session_layout.h "Residency"),
 * publish CLAIMED (release). The first thread of a process to claim also writes the PROCESS and
 * MODULE records. Every claim writes a THREAD record. An event nested in the thread's own emit
 * (signal handler) is counted in its slot's lost_reentrant. When no slot is free the
 * event is counted in the thread's entry of the region's thread-loss table (trc__lost_mine)
 * and the thread parks: it rescans only when the recorder has freed a slot since
 * (hdr->slots_freed moved), so a full table costs one load.
 *
 * Exit: a pthread key destructor (runs when a thread returns from its start routine or calls
 * pthread_exit) publishes RETIRED; the recorder drains the ring and frees the slot. An event
 * emitted after that (a later destructor that frees memory) claims again and re-arms the key,
 * so glibc calls the destructor again. Threads that never run destructors (the whole process
 * exits, or execs) leave CLAIMED slots behind: the recorder frees those once it finds the
 * thread gone, and an exec'd image retires its predecessor's at attach (attach.c).
 *
 * Threads: every function runs on the thread it concerns; see runtime.h.
 */
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* What a thread without a ring points its fast-path flag at: 0, and never written (ok[1],
 * "holds a ring", is read by the preload library's jump hooks). */
static volatile uint8_t trc__ok_none[2];

__thread struct trc__thread trc__self __attribute__((tls_model("initial-exec"))) = {
	.ok_flag = trc__ok_none,
	/* No frames mapped: the first function entry maps them (trc/func_frames.h). */
	.frames = (struct trc__frame *)trc__frames_none,
	.frames_top = (struct trc__frame *)trc__frames_none + 1,
	.frames_end = (struct trc__frame *)trc__frames_none + 1,
};

/* ---- the fork guard ----------------------------------------------------------------------
 *
 * A fork that skips the atfork handlers (raw clone(SIGCHLD), glibc's _Fork) copies the
 * forking thread's TLS, ring producer included: its fast path would go on writing into the
 * parent's ring. TLS cannot tell the copy apart, so the fast-path flag lives in a private
 * anonymous mapping marked MADV_WIPEONFORK, one cache line per slot (threads' flags never share
 * a line): in the child the kernel zeroes it, the first event takes the slow path, which sees
 * the zeroed line 0 (trc__forked_unseen) and adopts the child as a process of its own
 * (trc__atfork_child). The cost on the fast path is one load of the flag's address. Kernels
 * before 4.14 refuse the advice: the child is then not detected (as before). */
#define TRC__GUARD_LINE 64u

int trc__guard_map(const struct trc_region_geom *geom)
{
	uint64_t bytes = (uint64_t)(geom->max_slots + 1) * TRC__GUARD_LINE;
	bytes = (bytes + TRC_REGION_PAGE - 1) & ~(uint64_t)(TRC_REGION_PAGE - 1);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	trc__rt.guard_wipes = madvise(p, bytes, MADV_WIPEONFORK) == 0;
	trc__rt.guard = p;
	trc__rt.guard_bytes = bytes;
	__atomic_store_n(trc__rt.guard, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Points the thread's fast-path flag at slot i's line (0 = in an emit; the caller sets 1). */
static void trc__ok_bind(struct trc__thread *t, uint32_t i)
{
	volatile uint8_t *ok = trc__rt.guard + (uint64_t)(i + 1) * TRC__GUARD_LINE;
	ok[0] = 0;
	ok[1] = 1;
	TRC__BARRIER();
	t->ok_flag = ok;
}

/* Back to no flag (no ring). Before the slot is given up (RETIRED): see trc__thread_exit. */
static void trc__ok_unbind(struct trc__thread *t)
{
	volatile uint8_t *ok = t->ok_flag;
	t->ok_flag = trc__ok_none;
	TRC__BARRIER();
	if (ok != trc__ok_none) {
		ok[0] = 0;
		ok[1] = 0;
	}
}

/* Sets the flag of a thread that holds a ring (no-op without one). */
static void trc__ok_set(struct trc__thread *t, uint8_t v)
{
	if (t->ok_flag != trc__ok_none)
		t->ok_flag[0] = v;
}

/* trc.h writes every event as struct trc__event {ts, a, b} cut to 8 + 8 * nwords bytes: the
 * payloads of session_layout.h's encoding table, byte for byte. */
_Static_assert(offsetof(struct trc__event, ts) == 0 && offsetof(struct trc__event, a) == 8 &&
		       offsetof(struct trc__event, b) == 16,
	       "trc__event is { ts, a, b }");
_Static_assert(8 + 8 * 0 == sizeof(struct trc_ring_span) &&
		       8 + 8 * 1 == sizeof(struct trc_ring_value) &&
		       8 + 8 * 1 == sizeof(struct trc_ring_free) &&
		       8 + 8 * 2 == sizeof(struct trc_ring_alloc) &&
		       8 + 8 * 2 == sizeof(struct trc_ring_func),
	       "events: { ts } + nwords words");

static void trc__drop_ring(struct trc__thread *t)
{
	trc__ok_unbind(t);
	memset(&t->prod, 0, sizeof(t->prod)); /* prod.data == NULL: no ring */
	t->faulted = 0;
}

/* Maps len bytes at p in (MADV_POPULATE_WRITE) and touches each page once, so the hypervisor's
 * first-touch cost is paid here rather than on the hot path (session_layout.h "Residency").
 * Older kernels without MADV_POPULATE_WRITE: the touches fault the pages in. The range is ours
 * and unpublished, or already holds data (the touch rewrites a byte with its own value). */
static void trc__populate(uint8_t *p, uint64_t len)
{
	(void)madvise(p, len, MADV_POPULATE_WRITE);
	for (uint64_t off = 0; off < len; off += TRC_REGION_PAGE)
		__atomic_store_n(p + off, __atomic_load_n(p + off, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
}

/* Where records of the ring may end: the faulted part, less room for the header of the padding
 * that wraps early (written where the last record ended, so it must lie in the faulted part);
 * the whole ring once it is all faulted in (it wraps at its end). */
static uint64_t trc__usable(const struct trc__thread *t)
{
	return t->faulted < t->prod.capacity ? t->faulted - RING_HDR_BYTES : t->faulted;
}

/* Faults [t->faulted, want) of the ring in, publishes the new resident size and lets the fast
 * path run up to it (the producer's limit cap). */
static void trc__fault_to(struct trc__thread *t, uint64_t want)
{
	uint64_t cap = t->prod.capacity;
	if (want > cap)
		want = cap;
	if (want <= t->faulted)
		return;
	trc__populate(t->prod.data + t->faulted, want - t->faulted);
	/* Counted before published: the recorder subtracts what resident_bytes says when it
	 * frees the slot, so a thread dying in between leaves the count high, never low. */
	trc__buffers_add(want - t->faulted);
	t->faulted = want;
	atomic_store_explicit(&trc__slot(t->slot)->resident_bytes, want, memory_order_relaxed);
	ring_producer_cap_limit(&t->prod, trc__usable(t));
}

/* Pool bytes a ring with this much faulted in holds (session_layout.h "Residency"). */
static uint64_t trc__pool_share(uint64_t faulted)
{
	return faulted > TRC_RING_BASE_BYTES ? faulted - TRC_RING_BASE_BYTES : 0;
}

/* Takes n bytes from the region's ring pool; false when it has not that much left. */
static bool trc__pool_take(uint64_t n)
{
	if (n == 0)
		return true;
	_Atomic uint64_t *used = &trc__rt.hdr->ring_pool_used;
	uint64_t cur = atomic_load_explicit(used, memory_order_relaxed);
	do {
		if (cur + n < cur || cur + n > trc__rt.geom.ring_pool_bytes)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(used, &cur, cur + n, memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/* Faults more of the ring in so that [0, need) is, growing by doubling (at most
 * TRC_RING_FAULT_MAX_CHUNK at a time), beyond the base only with bytes from the pool. Returns
 * whether [0, need) is faulted in now. */
static bool trc__grow(struct trc__thread *t, uint64_t need)
{
	uint64_t cap = t->prod.capacity;
	if (need > cap)
		return false;
	/* Doubling keeps the slow-path visits few; the cap bounds one visit's stall (~2 ms here
	 * for 256 KiB) and what a thread holds beyond what it needs. */
	uint64_t grow = t->faulted < TRC_RING_FAULT_MAX_CHUNK
				? t->faulted * 2
				: t->faulted + TRC_RING_FAULT_MAX_CHUNK;
	uint64_t want = (need + TRC_REGION_PAGE - 1) & ~(uint64_t)(TRC_REGION_PAGE - 1);
	if (grow > want)
		want = grow;
	if (want > cap)
		want = cap;
	if (!trc__pool_take(trc__pool_share(want) - trc__pool_share(t->faulted))) {
		/* Not that much: just what this record needs, if the pool has it. */
		want = (need + TRC_REGION_PAGE - 1) & ~(uint64_t)(TRC_REGION_PAGE - 1);
		if (!trc__pool_take(trc__pool_share(want) - trc__pool_share(t->faulted)))
			return false;
	}
	trc__fault_to(t, want);
	return true;
}

/* 1 after a wait for the drain ran out (ring_wait_ns without a sign of life): the thread drops
 * without waiting until its ring has had room again. */
static __thread uint8_t trc__nowait __attribute__((tls_model("initial-exec")));

static uint64_t trc__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Room for the record where it would go now (wrap included), or, with wrap, room to wrap early
 * and put it at offset 0 (checked only: trc__wrap_early pads). */
static bool trc__room(struct ring_producer *p, uint32_t payload_bytes, bool wrap)
{
	return wrap ? ring_producer_has_wrap_room(p, payload_bytes) != 0
		    : ring_producer_has_room(p, payload_bytes) != 0;
}

/* Counts one wait for the drain that began at start_ns in the thread's slot (session_layout.h
 * "Residency": the trace reports it). Returns ok, for the caller's return. */
static bool trc__count_wait(struct trc__thread *t, uint64_t start_ns, bool ok)
{
	struct trc_slot *s = trc__slot(t->slot);
	uint64_t d = trc__mono_ns() - start_ns;
	atomic_fetch_add_explicit(&s->waits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->waited_ns, d, memory_order_relaxed);
	if (d > atomic_load_explicit(&s->wait_max_ns, memory_order_relaxed))
		atomic_store_explicit(&s->wait_max_ns, d, memory_order_relaxed);
	return ok;
}

/* Waits, yielding the CPU, until trc__room holds, as long as the drain reads this ring (its read
 * position moves; session_layout.h "Residency"). Returns whether it holds. The yield is what lets
 * the drain run at all when the program's threads outnumber the cores. Under --when-full drop
 * (geom.ring_wait_ns == 0) it never waits: false at once when there is no room. */
static bool trc__wait_room(struct trc__thread *t, uint32_t payload_bytes, bool wrap)
{
	struct ring_producer *p = &t->prod;
	if (trc__room(p, payload_bytes, wrap)) {
		trc__nowait = 0;
		return true;
	}
	if (trc__nowait || trc__rt.geom.ring_wait_ns == 0)
		return false;
	/* Progress is judged by this ring's own read position (cached_read, refreshed by each
	 * trc__room), not by whether the drain is alive: a drain that is alive but never reads
	 * this ring again (it declared the stream corrupt after the program scribbled its
	 * region) would otherwise hold the thread forever. */
	uint64_t seen = p->cached_read, since = trc__mono_ns();
	const uint64_t start = since;
	for (unsigned k = 0;; k++) {
		/* A few yields first (the drain may be on another core, about to release room);
		 * then short sleeps: a thread that only yields stays runnable, and with the
		 * program's threads filling the cores the drain would wait its turn behind every
		 * one of them. After ~40 ms, 1 ms sleeps: with many threads waiting, their
		 * wake-ups themselves took the CPU the drain needed (200 threads at 200 us: up to
		 * a million wake-ups a second; bench=e2e case=threads-200 ran 3-14 s, waits up to
		 * 10 s, one run in 6 dropped 9 % when a wait ran out; with 1 ms, 2-3 s and under
		 * 1 s, none dropped). */
		if (k < 16) {
			sched_yield();
		} else {
			struct timespec nap = {0, k < 64 ? 20000 : k < 256 ? 200000 : 1000000};
			nanosleep(&nap, NULL);
		}
		if (trc__room(p, payload_bytes, wrap))
			return trc__count_wait(t, start, true);
		uint64_t now = trc__mono_ns(), r = p->cached_read;
		if (r != seen || k < 64) {
			/* The clock runs only once this thread sleeps: while it merely yields it
			 * may be off the CPU as long as the drain is (the program's threads
			 * outnumber the cores), and that says nothing of the drain. */
			seen = r;
			since = now;
		} else if (now - since > trc__rt.geom.ring_wait_ns) {
			trc__nowait = 1;
			return trc__count_wait(t, start, false);
		}
	}
}

/* Announces the lap the writer is about to write in (slot->trim, session_layout.h "Residency":
 * the idle give-back), before it writes anything there; faults its part of the ring in again
 * when the recorder gave pages of it back. Waits while the recorder punches (microseconds);
 * false only when that never ends (the recorder died in between). */
static bool trc__enter_lap(struct trc__thread *t, uint32_t lap)
{
	_Atomic uint64_t *word = &trc__slot(t->slot)->trim;
	uint64_t x = atomic_load_explicit(word, memory_order_relaxed);
	if ((uint32_t)x == lap && !(x & TRC_TRIM_DONE))
		return true;
	uint64_t since = 0, start = 0;
	for (unsigned k = 0;; k++) {
		if (x & TRC_TRIM_BUSY) {
			/* --when-full drop (ring_wait_ns 0): never waits, not even microseconds. */
			if (trc__rt.geom.ring_wait_ns == 0)
				return false;
			uint64_t now = trc__mono_ns();
			if (!since)
				since = start = now;
			else if (now - since > trc__rt.geom.ring_wait_ns)
				return trc__count_wait(t, start, false);
			if (k < 16) {
				sched_yield();
			} else {
				struct timespec nap = {0, 20000};
				nanosleep(&nap, NULL);
			}
			x = atomic_load_explicit(word, memory_order_relaxed);
			continue;
		}
		/* seq_cst: ordered before every store of the new lap's bytes, and against the
		 * recorder's CAS to busy (one word: one of the two CASes fails). */
		if (atomic_compare_exchange_weak_explicit(word, &x, lap, memory_order_seq_cst,
							  memory_order_relaxed))
			break;
	}
	if (start)
		(void)trc__count_wait(t, start, true);
	/* Pages the recorder gave back come back here, in the slow path. No touch per page (as
	 * trc__populate does): part of the range may hold records the drain is reading, and the
	 * guest pages just freed are warm on the host. */
	if (x & TRC_TRIM_DONE)
		(void)madvise(t->prod.data, t->faulted, MADV_POPULATE_WRITE);
	return true;
}

/* Wraps early to offset 0 (ring_producer_wrap_sp) once there is room, waiting for it as
 * trc__wait_room does. The lap it enters is announced first: the padding moves the write
 * position into that lap and lets the fast path write there, so a lap the recorder is punching
 * (trim busy) must stop the wrap, not just the record that asked for it. Returns whether it
 * wrapped. */
static bool trc__wrap_early(struct trc__thread *t, uint32_t payload_bytes)
{
	struct ring_producer *p = &t->prod;
	if (!trc__wait_room(t, payload_bytes, true))
		return false;
	if ((p->write & p->mask) && !trc__enter_lap(t, trc_ring_lap(p->write, p->capacity) + 1))
		return false;
	return ring_producer_wrap_sp(p, payload_bytes) == 0; /* room only grows meanwhile */
}

void *trc__reserve(struct trc__thread *t, uint32_t tag, uint32_t payload_bytes)
{
	struct ring_producer *p = &t->prod;
	uint64_t total = ring_record_bytes(payload_bytes);
	uint64_t off = p->write & p->mask;
	if (t->faulted < p->capacity && off + total > trc__usable(t) && total <= p->capacity) {
		/* At the end of the faulted part (which is [0, faulted): rings start at position 0
		 * and wrap early). Grow only when the drain lags by more than half of it; else,
		 * or when it can grow no more, wrap to offset 0 (waiting for room if need be). */
		uint64_t used = ring_producer_used(p);
		bool lags = used + total > t->faulted / 2 || total > trc__usable(t);
		if (lags && trc__grow(t, off + total + RING_HDR_BYTES))
			;
		else if (total > trc__usable(t) || !trc__wrap_early(t, payload_bytes))
			return ring_producer_drop_sp(p);
	}
	if (!trc__wait_room(t, payload_bytes, false))
		return ring_producer_drop_sp(p);
	/* The lap the record lands in: the next one when it wraps at the end of data. */
	off = p->write & p->mask;
	uint32_t lap = trc_ring_lap(p->write, p->capacity) + (off + total > p->capacity);
	if (total <= p->capacity && !trc__enter_lap(t, lap))
		return ring_producer_drop_sp(p);
	return ring_reserve_sp(p, tag, payload_bytes);
}

static void trc__kernel_name(char out[TRC_THREAD_NAME_BYTES])
{
	memset(out, 0, TRC_THREAD_NAME_BYTES);
	if (prctl(PR_GET_NAME, out, 0, 0, 0) != 0)
		out[0] = 0;
	out[TRC_THREAD_NAME_BYTES - 1] = 0;
}

/* Writes a THREAD record (pid, tid, name) into the thread's ring. Slot held, ok == 0. */
static void trc__emit_thread_record(struct trc__thread *t, unsigned mode)
{
	struct trc_slot *s = trc__slot(t->slot);
	struct trc_ring_thread *r = trc__reserve(t, TRC_TAG(TRC_REC_THREAD, 0), sizeof(*r));
	if (r) {
		r->ts = trc__now(mode);
		r->pid =
			(uint32_t)trc__rt.pid; /* this namespace's pid (the slot's may be tagged) */
		r->tid = s->tid;
		memcpy(r->name, t->named ? t->name : s->name, sizeof(r->name));
		ring_commit_sp(&t->prod);
	}
	/* A fork child's first claim: it is inside the frames it inherited (frames.c). */
	if (t->frames_replay)
		trc__frames_replay(t, mode);
}

static int trc__claim(struct trc__thread *t)
{
	struct trc_region_hdr *h = trc__rt.hdr;
	uint64_t freed = atomic_load_explicit(&h->slots_freed, memory_order_acquire);
	if (t->parked && freed == t->freed_seen)
		return -ENOSPC;
	uint32_t n = trc__rt.geom.max_slots;
	uint32_t tid = (uint32_t)gettid();
	/* Start where tid points so threads starting together rarely CAS the same slot. */
	for (uint32_t k = 0, i = tid % n; k < n; k++, i = i + 1 == n ? 0 : i + 1) {
		struct trc_slot *s = trc__slot(i);
		/* Acquire pairs with the recorder's release store of FREE: its re-initialisation
		 * of ring_ctl and the punched ring are complete. */
		uint64_t w = atomic_load_explicit(&s->state, memory_order_acquire);
		if (TRC_SLOT_STATE(w) != TRC_SLOT_FREE)
			continue;
		if (!atomic_compare_exchange_strong_explicit(
			    &s->state, &w, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_CLAIMING),
			    memory_order_acquire, memory_order_relaxed))
			continue;
		/* Relaxed atomics: session_buffers_resident_bytes reads pid at any time. */
		__atomic_store_n(&s->pid, trc__rt.region_pid, __ATOMIC_RELAXED);
		__atomic_store_n(&s->tid, tid, __ATOMIC_RELAXED);
		__atomic_store_n(&s->image, trc__rt.image, __ATOMIC_RELAXED);
		atomic_store_explicit(&s->proc, trc__rt.proc, memory_order_relaxed);
		if (t->named)
			memcpy(s->name, t->name, TRC_THREAD_NAME_BYTES);
		else
			trc__kernel_name(s->name);
		/* The slot before the ring: from the attach on, a signal handler's emit counts its
		 * REENTRANT loss in slot t->slot (trc__emit_slow), which must already be this one. */
		t->slot = i;
		if (ring_producer_attach(&t->prod, &s->ctl, trc__ring_data(i),
					 trc__rt.geom.ring_bytes) != 0) {
			/* Cannot happen with a validated header; give the slot back as retired so
			 * the recorder frees it. */
			trc__drop_ring(t);
			atomic_store_explicit(&s->state,
					      TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_RETIRED),
					      memory_order_release);
			return -EPROTO;
		}
		trc__ok_bind(t, i);
		t->faulted = 0;
		/* Nothing faulted yet: the fast path stops at once, until the head is in. */
		ring_producer_cap_limit(&t->prod, 0);
		trc__fault_to(t, TRC_RING_PREFAULT_BYTES);
		/* Pairs with the recorder's acquire load of the state: pid, tid and name are
		 * written. */
		atomic_store_explicit(&s->state, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_CLAIMED),
				      memory_order_release);
		t->parked = 0;
		if (trc__rt.key_ok)
			pthread_setspecific(trc__rt.key, (void *)1);
		return 0;
	}
	t->parked = 1;
	t->freed_seen = freed;
	return -ENOSPC;
}

/* Counts one event this thread lost while it held no ring (reason TRC_LOST_NO_SLOT or
 * TRC_LOST_REENTRANT) in its entry of the region's thread-loss table, so the recorder reports
 * it on this thread's stream; region-wide (the process's) only when the table is full.
 * Taking an entry is a scan from the tid's place, once per thread; async-signal-safe. */
static void trc__lost_mine(struct trc__thread *t, uint32_t reason)
{
	struct trc_region_hdr *h = trc__rt.hdr;
	uint32_t n = trc__rt.geom.max_tlost;
	if (t->tlost_pid != trc__rt.region_pid) {
		t->tlost = 0;
		t->tlost_pid = trc__rt.region_pid;
	}
	if (!t->tlost && n) {
		uint32_t tid = (uint32_t)gettid();
		uint64_t who = (uint64_t)trc__rt.region_pid << 32 | tid;
		for (uint32_t k = 0, i = tid % n; k < n && !t->tlost;
		     k++, i = i + 1 == n ? 0 : i + 1) {
			struct trc_tlost *e = trc_region_tlost(trc__rt.base, &trc__rt.geom, i);
			uint64_t w = atomic_load_explicit(&e->who, memory_order_relaxed);
			if (w == 0 && atomic_compare_exchange_strong_explicit(&e->who, &w, who,
									      memory_order_relaxed,
									      memory_order_relaxed))
				w = who;
			if (w == who)
				t->tlost = i + 1;
		}
	}
	if (!t->tlost) {
		atomic_fetch_add_explicit(reason == TRC_LOST_NO_SLOT ? &h->lost_no_slot
								     : &h->lost_reentrant,
					  1, memory_order_relaxed);
		return;
	}
	struct trc_tlost *e = trc_region_tlost(trc__rt.base, &trc__rt.geom, t->tlost - 1);
	atomic_fetch_add_explicit(reason == TRC_LOST_NO_SLOT ? &e->no_slot : &e->reentrant, 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&h->tlost_added, 1, memory_order_relaxed);
}

/* Fills and publishes a reserved event record, or does nothing when the reservation failed
 * (e == NULL: the ring dropped and counted it). */
static inline void trc__put_event(struct trc__thread *t, struct trc__event *e, unsigned mode,
				  unsigned nwords, uint64_t a, uint64_t b)
{
	if (!e)
		return;
	e->ts = trc__now(mode);
	if (nwords > 0)
		e->a = a;
	if (nwords > 1)
		e->b = b;
	ring_commit_sp(&t->prod);
}

/* Writes one event record through the ring's general path (wrap, full). ok == 0. */
static void trc__emit_ring(struct trc__thread *t, unsigned mode, uint32_t tag, unsigned nwords,
			   uint64_t a, uint64_t b)
{
	trc__put_event(t, trc__reserve(t, tag, 8u + 8u * nwords), mode, nwords, a, b);
}

/* The fast path's way out (trc.h): ok == 0, set by the caller; sets it back to 1, so that the
 * caller's call is a tail call (a caller built with an older trc.h sets it again). */
void trc__emit_full(struct trc__thread *t, uint32_t tag, unsigned nwords, uint64_t a, uint64_t b)
{
	unsigned mode = trc__mode_load();
	/* A clock the fast path does not read inline (clock_gettime) sends every event here:
	 * the ring's own fast path first, the general one only when that fails. */
	struct trc__event *e = ring_reserve_fast_sp(&t->prod, tag, 8u + 8u * nwords);
	if (e)
		trc__put_event(t, e, mode, nwords, a, b);
	else
		trc__emit_ring(t, mode, tag, nwords, a, b);
	TRC__BARRIER();
	*t->ok_flag = 1;
}

void trc__emit_slow(uint32_t tag, unsigned nwords, uint64_t a, uint64_t b)
{
	struct trc__thread *t = &trc__self;
	unsigned mode = trc__mode_load();
	if (!mode)
		return;
	if (__builtin_expect(trc__forked_unseen(), 0))
		trc__atfork_child(); /* a copy made without the atfork handlers: a ring of its own
				      */
	if (t->prod.data) {
		/* ok == 0 with a ring: a signal handler interrupted this thread's own emit.
		 * Writing now would corrupt the ring; the loss is this thread's. */
		atomic_fetch_add_explicit(&trc__slot(t->slot)->lost_reentrant, 1,
					  memory_order_relaxed);
		return;
	}
	if (t->busy) {
		/* Inside a claim: no ring of its own yet, so its entry of the loss table counts it.
		 */
		trc__lost_mine(t, TRC_LOST_REENTRANT);
		return;
	}
	t->busy = 1;
	TRC__BARRIER();
	if (trc__claim(t) != 0) {
		trc__lost_mine(t, TRC_LOST_NO_SLOT);
		TRC__BARRIER();
		t->busy = 0;
		return;
	}
	if (!__atomic_exchange_n(&trc__rt.meta_done, 1, __ATOMIC_ACQ_REL))
		trc__emit_process_info(t, mode);
	trc__emit_thread_record(t, mode);
	trc__emit_ring(t, mode, tag, nwords, a, b);
	TRC__BARRIER();
	t->busy = 0;
	trc__ok_set(t, 1);
}

void trc__thread_name(const char *name)
{
	struct trc__thread *t = &trc__self;
	unsigned mode = trc__mode_load();
	if (!mode || !name)
		return;
	if (__builtin_expect(trc__forked_unseen(), 0))
		trc__atfork_child();
	if (t->busy || (t->prod.data && !*t->ok_flag)) {
		/* Nested in this thread's own emit (signal handler): do not write. A name is not
		 * an event, so nothing is counted lost (emitted = recorded + lost counts events).
		 */
		return;
	}
	trc__ok_set(t, 0);
	t->busy = 1;
	TRC__BARRIER();
	memset(t->name, 0, sizeof(t->name));
	strncpy(t->name, name, sizeof(t->name) - 1);
	t->named = 1;
	if (t->prod.data) {
		trc__emit_thread_record(t, mode);
	} else if (trc__claim(t) == 0) {
		if (!__atomic_exchange_n(&trc__rt.meta_done, 1, __ATOMIC_ACQ_REL))
			trc__emit_process_info(t, mode);
		trc__emit_thread_record(t, mode);
	}
	/* No slot: the name is kept in t->name for the THREAD record of a later claim; a name is
	 * not an event, so nothing is counted lost. */
	TRC__BARRIER();
	t->busy = 0;
	trc__ok_set(t, t->prod.data != NULL);
}

void trc__modules_changed(void)
{
	struct trc__thread *t = &trc__self;
	unsigned mode = trc__mode_load();
	if (!mode)
		return;
	if (__builtin_expect(trc__forked_unseen(), 0))
		trc__atfork_child();
	if (t->busy || (t->prod.data && !*t->ok_flag)) {
		/* Nested in this thread's own emit (signal handler): count, do not write. */
		if (t->prod.data)
			atomic_fetch_add_explicit(&trc__slot(t->slot)->lost_reentrant, 1,
						  memory_order_relaxed);
		else
			trc__lost_mine(t, TRC_LOST_REENTRANT);
		return;
	}
	trc__ok_set(t, 0);
	t->busy = 1;
	TRC__BARRIER();
	if (t->prod.data) {
		trc__emit_new_modules(t, mode);
	} else if (trc__claim(t) == 0) {
		/* The process's first records include every module mapped now. */
		if (!__atomic_exchange_n(&trc__rt.meta_done, 1, __ATOMIC_ACQ_REL))
			trc__emit_process_info(t, mode);
		else
			trc__emit_new_modules(t, mode);
		trc__emit_thread_record(t, mode);
	} else {
		trc__lost_mine(t, TRC_LOST_NO_SLOT);
	}
	TRC__BARRIER();
	t->busy = 0;
	trc__ok_set(t, t->prod.data != NULL);
}

/* A STACK record (trc.h): the preload library writes each distinct call stack of a thread once,
 * and the thread's later ALLOC records carry its id in their tag (session_layout.h). Not an
 * event: 1 when the record is in the ring, so that the id may be used; 0 when it is not (no
 * session, no slot, the ring full under --when-full drop, or nested in this thread's own emit
 * by a signal handler). */
int trc__stack_emit(uint32_t id, uint32_t flags, const uint64_t *frames, uint32_t n)
{
	struct trc__thread *t = &trc__self;
	unsigned mode = trc__mode_load();
	if (!mode || id == 0 || id > TRC_NAME_ID_MAX || n > TRC_STACK_DEPTH_MAX)
		return 0;
	if (__builtin_expect(trc__forked_unseen(), 0))
		trc__atfork_child();
	if (t->busy || (t->prod.data && !*t->ok_flag))
		return 0; /* nested in this thread's own emit (a signal handler) */
	trc__ok_set(t, 0);
	t->busy = 1;
	TRC__BARRIER();
	int done = 0;
	if (!t->prod.data && trc__claim(t) == 0) {
		if (!__atomic_exchange_n(&trc__rt.meta_done, 1, __ATOMIC_ACQ_REL))
			trc__emit_process_info(t, mode);
		trc__emit_thread_record(t, mode);
	}
	if (t->prod.data) {
		struct trc_ring_stack *r = trc__reserve(t, TRC_TAG(TRC_REC_STACK, 0),
							(uint32_t)(sizeof(*r) + 8u * n));
		if (r) {
			r->ts = trc__now(mode);
			r->id = id;
			r->n = (uint16_t)n;
			r->flags = (uint16_t)(flags & TRC_STACK_FLAGS_ALL);
			memcpy(r + 1, frames, 8u * n);
			ring_commit_sp(&t->prod);
			done = 1;
		}
	}
	TRC__BARRIER();
	t->busy = 0;
	trc__ok_set(t, t->prod.data != NULL);
	return done;
}

void trc__process_exiting(int code)
{
	struct trc__thread *t = &trc__self;
	unsigned mode = trc__mode_load();
	if (!mode || t->busy || (t->prod.data && !*t->ok_flag))
		return; /* exit from a signal handler that interrupted an emit: no record */
	/* A vfork child runs on its parent's memory and thread: the record would be the parent's,
	 * and the parent's own would then never be written. */
	if (getpid() != trc__rt.pid)
		return;
	trc__ok_set(t, 0);
	t->busy = 1;
	TRC__BARRIER();
	/* The frames this thread is still in end with the process (exit from inside them). */
	if (t->prod.data) {
		trc__frames_close_ring(t, mode);
		trc__emit_exit_info(t, mode, code);
	} else if (trc__claim(t) == 0) {
		if (!__atomic_exchange_n(&trc__rt.meta_done, 1, __ATOMIC_ACQ_REL))
			trc__emit_process_info(t, mode);
		trc__emit_thread_record(t, mode);
		trc__frames_close_ring(t, mode);
		trc__emit_exit_info(t, mode, code);
	}
	TRC__BARRIER();
	t->busy = 0;
	trc__ok_set(t, t->prod.data != NULL);
}

void trc__thread_exit(void *arg)
{
	(void)arg;
	struct trc__thread *t = &trc__self;
	/* A copy's ring is its parent's thread's: never retire it from here. */
	if (!t->prod.data || t->busy || !*t->ok_flag || trc__forked_unseen()) {
		if (!t->prod.data && !t->busy)
			trc__frames_unmap(t); /* no ring to close them on */
		return;
	}
	/* Frames still open end with the thread (pthread_exit, cancellation: no exit hook ran). */
	unsigned mode = trc__mode_load();
	if ((t->frames_top != t->frames + 1 || t->frames_over) && mode) {
		*t->ok_flag = 0;
		TRC__BARRIER();
		trc__frames_close_ring(t, mode);
	}
	/* Off the slot's flag line before RETIRED: once the recorder frees the slot, its next
	 * claimer owns the line (a late write here would clear that thread's flag). */
	trc__ok_unbind(t);
	TRC__BARRIER();
	struct trc_slot *s = trc__slot(t->slot);
	uint64_t w = atomic_load_explicit(&s->state, memory_order_relaxed);
	/* Release: every record this thread committed is visible to the recorder once it
	 * acquires RETIRED, so it can drain the ring to its end and free it. */
	if (TRC_SLOT_STATE(w) == TRC_SLOT_CLAIMED)
		atomic_store_explicit(&s->state, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_RETIRED),
				      memory_order_release);
	trc__drop_ring(t);
	t->parked = 0;
	trc__frames_unmap(t); /* else every thread that ended would keep its frames mapped */
}

void trc__thread_forget(void)
{
	struct trc__thread *t = &trc__self;
	/* The parent still owns that ring; the child claims its own on its next event, and
	 * enters there the frames it inherited (its stack is a copy of its parent's). */
	trc__drop_ring(t);
	t->frames_replay = trc__frames_kept(t);
	t->busy = 0;
	t->parked = 0;
}
