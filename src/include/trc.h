/* trc.h - instrument a program for the trc tracer.
 *
 * WHAT IT DOES
 *   Each macro below records one event (a span begin or end, an instant, a counter value) with a
 *   timestamp into a per-thread ring in memory shared with the recorder (`trace-run`), which
 *   writes the trace file. Build: `cc -I src/include prog.c -L build/lib -ltrc`.
 *
 *     TRC_BEGIN(name)            a span of the calling thread starts
 *     TRC_END(name)              ... and ends (match BEGIN/END by name, innermost first)
 *     TRC_SCOPE(name)            BEGIN now, END when the enclosing block is left (any way but
 *                                longjmp); one per block
 *     TRC_INSTANT(name, value)   a point event carrying an int64_t value
 *     TRC_COUNTER(name, value)   a sample of a counter (queue length, bytes in use...)
 *     trc_thread_name(name)      names the calling thread in the trace (not in the kernel)
 *
 *   `name` must be a string that does not change at that call site (normally a literal): it is
 *   interned into the session's string table the first time the call site runs, and the id is
 *   kept in a static at the call site. A call site that passes a different string later keeps
 *   recording the first one. Names longer than 1024 bytes are cut.
 *
 * WITHOUT A SESSION
 *   When the program does not run under `trace-run` (TRC_SESSION_FD unset or not a session),
 *   every macro is one load of a global and a predictable branch (under 1 ns, bench=producer
 *   case=disabled). Nothing is allocated, no thread-local state is touched, behaviour is
 *   unchanged. The library never prints, never exits and never calls malloc.
 *
 * COST WITH A SESSION
 *   An event is a thread-local load, an rdtsc (or clock_gettime when the recorder found no
 *   invariant TSC), 16 or 24 bytes stored into the ring and one release store: no syscall, no
 *   lock, no allocation (bench=producer case=enabled; close to a bare rdtsc plus store).
 *   Slow, out-of-line cases: a thread's first event claims a ring slot and faults the first
 *   64 KiB of its ring in; while the ring's first lap goes on, it faults the next chunk in ahead
 *   of the writer now and then (a fresh page costs microseconds, so the first lap costs a few
 *   times a steady event), so the hot path itself never page-faults; a call site's first event
 *   interns its name (lock-free). A full ring: by default (trace-run --when-full wait) the
 *   thread waits for the recorder to make room, yielding and then sleeping (sched_yield and
 *   nanosleep, the only syscalls, made only while the recorder lags), and drops and counts
 *   only when the recorder stops reading its ring; with --when-full drop it drops the event at
 *   once and counts it. Either way the summary says what it cost.
 *
 * THREADS
 *   Every call is safe from any thread, and from a signal handler (an event from a handler that
 *   interrupted an event of the same thread is dropped and counted, never corrupts the ring).
 *   Each thread writes only its own ring. After fork() the child writes to its own rings (it
 *   never touches its parent's); an exec'd program attaches to the same session again through
 *   the inherited descriptor, so a process tree is traced as one.
 *
 * ERRORS AND LOSSES
 *   The macros return nothing and never fail visibly. An event that cannot be stored is counted,
 *   and the count appears in the trace as a LOST record: the thread's ring was full (under
 *   --when-full drop, or when the recorder stopped reading it), every ring slot of the session
 *   was taken, or a signal handler interrupted an event. Every trace satisfies emitted = recorded + lost, exactly.
 *
 * OWNERSHIP
 *   The session (shared memory, string table, rings) belongs to the recorder; the library only
 *   maps it. `name` is copied at interning; the caller keeps ownership.
 */
#ifndef TRC_H
#define TRC_H

#include <stdint.h>
#include <time.h>

#include "trc/ring_producer.h"
#include "trc/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- public functions ---------------------------------------------------------------------- */

/* True when this process is attached to a session (events are being recorded). */
static inline int trc_enabled(void);

/* Names the calling thread in the trace (emits a THREAD record; up to 15 bytes are kept).
 * Without a session: a load and a branch. Any thread. */
static inline void trc_thread_name(const char *name);

/* Attaches to the session named by the environment variable TRC_SESSION_FD. The library does
 * this by itself when it is loaded; call it only if the variable was set later (tests, a
 * program that is its own recorder). Call before any other thread emits. Idempotent.
 * Returns 0, -ENOENT (no variable), -EINVAL/-EPROTO (not a session, or another version),
 * or another -errno from mapping it. */
int trc_attach(void);

/* ---- the macros ---------------------------------------------------------------------------- */

#define TRC_BEGIN(name) TRC__NAMED(TRC_REC_SPAN_BEGIN, name, 0, 0)
#define TRC_END(name) TRC__NAMED(TRC_REC_SPAN_END, name, 0, 0)
#define TRC_INSTANT(name, value) TRC__NAMED(TRC_REC_INSTANT, name, 1, value)
#define TRC_COUNTER(name, value) TRC__NAMED(TRC_REC_COUNTER, name, 1, value)
#define TRC_SCOPE(name) TRC__SCOPE(name, TRC__CAT(trc__scope_, __COUNTER__))

/* ---- private: everything below is the inline fast path, not API ----------------------------- */

#define TRC__CAT2(a, b) a##b
#define TRC__CAT(a, b) TRC__CAT2(a, b)
#define TRC__LIKELY(x) __builtin_expect(!!(x), 1)
#define TRC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TRC__BARRIER() __asm__ volatile("" ::: "memory")

/* 0: no session; TRC_CLOCK_GETTIME or TRC_CLOCK_TSC: session, stamp with that clock.
 * Written once when the process attaches (before it emits), read relaxed by every call. */
extern unsigned trc__mode;

/* Per-thread state (initial-exec TLS: one %fs-relative access, no __tls_get_addr). The fast
 * path is the ring's own producer (trc/ring_producer.h, the same code ringbuf/ uses): an inline
 * reserve below the producer's limit, the record's stores, an inline commit. The runtime caps
 * that limit at the end of the part of the ring it has faulted in, so a writer about to leave
 * it takes the slow path (trc__emit_full), which faults the next chunk in first. */
struct trc__frame;
struct trc__thread {
	/* The fast path's flag: *ok_flag is 1 when the thread holds a ring and is not inside an
	 * emit, the only thing the fast path tests. Cleared around each emit, so a signal handler
	 * that interrupts one sees 0 and goes to the slow path, which counts its event as lost
	 * instead of corrupting the ring. The byte lives outside TLS, in the runtime's page that
	 * the kernel zeroes in a forked child (MADV_WIPEONFORK; src/runtime/thread.c): a child made
	 * without the atfork handlers (raw clone, _Fork) finds 0, takes the slow path and gets a
	 * ring of its own instead of writing into its parent's. ok_flag[1] is 1 while the thread
	 * holds a ring (0 in such a child too). No ring: ok_flag points at a 0 never written. */
	volatile uint8_t *ok_flag;
	uint8_t busy; /* inside a slow path (claim, naming) */
	uint8_t parked; /* no free slot last time: retry when the recorder frees one */
	uint8_t named; /* name[] holds a trc_thread_name */
	uint32_t slot;
	/* The thread's ring; prod.data is NULL when the thread holds none. Right after ok_flag, so
	 * the fields an event touches share a cache line or two. */
	struct ring_producer prod;
	uint64_t freed_seen;
	uint64_t faulted; /* bytes of the ring faulted in (from its start; grows by doubling) */
	char name[16];
	/* Its entry in the region's thread-loss table (index + 1, 0 none yet), taken for the
	 * region pid tlost_pid (a fork child takes its own). Slow paths only. */
	uint32_t tlost;
	uint32_t tlost_pid;
	/* The thread's open -finstrument-functions frames (trc/func_frames.h, mapped by
	 * src/runtime/frames.c): frames[0] a sentinel, then the open ones, innermost last, up to
	 * frames_top; room up to frames_end. frames_over: open below the mapping, counted only.
	 * frames_replay: in a fork child, how many inherited frames its first claim enters again. */
	struct trc__frame *frames, *frames_top, *frames_end;
	uint32_t frames_over, frames_replay;
};

extern __thread struct trc__thread trc__self __attribute__((tls_model("initial-exec")));

/* Out of line (src/runtime/thread.c, src/runtime/intern.c). trc__emit_slow: the ok flag was 0
 * (no ring yet, or nested in this thread's own emit). trc__emit_full: called with the flag set
 * to 0 by the caller; writes the event through the ring's general path with the session's
 * clock and sets the flag back to 1 (a caller built with an older trc.h sets it again: same
 * value). */
void trc__emit_slow(uint32_t tag, unsigned nwords, uint64_t a, uint64_t b);
void trc__emit_full(struct trc__thread *t, uint32_t tag, unsigned nwords, uint64_t a, uint64_t b);
uint32_t trc__site_intern(uint32_t *site, const char *name);
void trc__thread_name(const char *name);
/* Reports the executable mappings not reported yet (the preload library's dlopen hook). */
void trc__modules_changed(void);
/* The process is exiting: writes its EXIT record (own VmHWM) once. code: the exit code when
 * known (the preload library's _exit hook), -1 when not (the runtime's destructor). */
void trc__process_exiting(int code);
/* Writes the calling thread's STACK record id (frames innermost first, TRC_STACK_* flags)
 * into its ring: 1 when it is there, 0 when not (the preload library's allocation hooks). */
int trc__stack_emit(uint32_t id, uint32_t flags, const uint64_t *frames, uint32_t n);
/* The exit code the process is leaving with (the preload library's exit and main hooks), for
 * the record the runtime's destructor writes. */
void trc__exit_code(int code);

static inline unsigned trc__mode_load(void)
{
	return __atomic_load_n(&trc__mode, __ATOMIC_RELAXED);
}

static inline int trc_enabled(void)
{
	return trc__mode_load() != 0;
}

static inline uint64_t trc__now(unsigned mode)
{
#if defined(__x86_64__) || defined(__i386__)
	if (TRC__LIKELY(mode == TRC_CLOCK_TSC)) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return trc_mono_ns();
}

/* Whether the fast path reads the clock inline. On x86 the TSC only: clock_gettime is a call,
 * which would cost every TSC event the registers it saves (GCC saves them in the prologue,
 * whichever path needs them); a session on clock_gettime (no invariant TSC, --clock gettime)
 * stamps in trc__emit_full instead, ~5 % more per event than inline. Elsewhere there is no
 * TSC path to keep lean: clock_gettime inline. */
#if defined(__x86_64__) || defined(__i386__)
#define TRC__CLOCK_INLINE(mode) ((mode) == TRC_CLOCK_TSC)
#else
#define TRC__CLOCK_INLINE(mode) 1
#endif

/* An event's payload in the ring: ts, then nwords of a, b (session_layout.h's encoding table).
 * Written through this struct type so that the compiler knows the stores cannot change the
 * producer's own fields (it keeps them in registers across the stores). */
struct trc__event {
	uint64_t ts, a, b;
};

/* Stores one record {header, ts, a?, b?} (nwords = 0..2 after the timestamp) into the calling
 * thread's ring. mode is trc__mode, already loaded and nonzero.
 * Shape (why): the fast path calls nothing. Everything rare leaves it by a call in tail
 * position that finishes the event itself (trc__emit_slow: no ring or nested; trc__emit_full:
 * wrap, full, the end of the faulted part, or a clock other than the TSC, which also sets the
 * ok flag back), so a hook that is nothing but this emit (the -finstrument-functions hooks)
 * compiles to a leaf with no register saved, and the ok flag's address stays in a register. */
static inline __attribute__((always_inline)) void trc__emit(unsigned mode, uint32_t tag,
							    unsigned nwords, uint64_t a, uint64_t b)
{
	struct trc__thread *t = &trc__self;
	volatile uint8_t *ok = t->ok_flag;
	if (TRC__UNLIKELY(!*ok)) {
		trc__emit_slow(tag, nwords, a, b);
		return;
	}
	*ok = 0;
	TRC__BARRIER(); /* ok = 0 is in place before the ring is touched (signal handlers) */
	struct trc__event *e = NULL;
	if (TRC__LIKELY(TRC__CLOCK_INLINE(mode)))
		e = (struct trc__event *)ring_reserve_fast_sp(&t->prod, tag, 8u + 8u * nwords);
	if (TRC__UNLIKELY(e == NULL)) {
		/* Wrap, full, the end of the faulted part of the ring, or a clock read out of
		 * line: the general path, which also sets ok back to 1. */
		trc__emit_full(t, tag, nwords, a, b);
		return;
	}
	e->ts = trc__now(mode);
	if (nwords > 0)
		e->a = a;
	if (nwords > 1)
		e->b = b;
	/* One release store; pairs with the consumer's acquire load of write_pos
	 * (ring_batch_begin). */
	ring_commit_sp(&t->prod);
	TRC__BARRIER();
	*ok = 1; /* the same flag: nothing on this path can rebind it */
}

/* The call site's name id, interned on first use. The acquire load pairs with the release
 * store in trc__site_intern, so the string-table entry is complete before any record that
 * carries the id is published. */
#define TRC__SITE(name)                                                              \
	__extension__({                                                              \
		static uint32_t trc__site_id;                                        \
		uint32_t trc__id = __atomic_load_n(&trc__site_id, __ATOMIC_ACQUIRE); \
		if (TRC__UNLIKELY(!trc__id))                                         \
			trc__id = trc__site_intern(&trc__site_id, (name));           \
		trc__id;                                                             \
	})

/* value is evaluated only with a session; name only the first time the call site runs. */
#define TRC__NAMED(type, name, nwords, value)                                         \
	do {                                                                          \
		unsigned trc__m = trc__mode_load();                                   \
		if (trc__m)                                                           \
			trc__emit(trc__m, TRC_TAG((type), TRC__SITE(name)), (nwords), \
				  TRC__VAL(value), 0);                                \
	} while (0)
#define TRC__VAL(v) ((uint64_t)(int64_t)(v))

static inline void trc__scope_end(uint32_t *tag)
{
	unsigned m = trc__mode_load();
	if (*tag && m)
		trc__emit(m, TRC_TAG(TRC_REC_SPAN_END, TRC_TAG_ID(*tag)), 0, 0, 0);
}

#define TRC__SCOPE(name, var)                                                           \
	__attribute__((cleanup(trc__scope_end), unused)) uint32_t var = __extension__({ \
		uint32_t trc__tag = 0;                                                  \
		unsigned trc__m = trc__mode_load();                                     \
		if (trc__m) {                                                           \
			trc__tag = TRC_TAG(TRC_REC_SPAN_BEGIN, TRC__SITE(name));        \
			trc__emit(trc__m, trc__tag, 0, 0, 0);                           \
		}                                                                       \
		trc__tag;                                                               \
	})

static inline void trc_thread_name(const char *name)
{
	if (trc__mode_load())
		trc__thread_name(name);
}

#ifdef __cplusplus
}
#endif

#endif /* TRC_H */
