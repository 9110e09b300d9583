/* frames.c - each thread's open -finstrument-functions frames (its shadow stack; the hooks'
 * fast path is trc/func_frames.h), and the records that close or reopen them when the program
 * leaves frames without returning from them.
 *
 * The frames are {fn, call site, stack pointer at entry} in private anonymous memory mapped on
 * the thread's first function event (TRC__FRAMES_MAX of them, reserved but faulted in only as
 * deep as the program goes; a mapping that fails leaves the thread counting depth only). They are
 * the program's own memory, so a fork child gets a copy, as it gets a copy of the stack they
 * describe.
 *
 * - A jump (longjmp, siglongjmp: src/preload/hooks_longjmp.c) restores a stack pointer: every
 *   frame entered below it is gone. trc__frames_jump writes their FUNC_EXITs, innermost first,
 *   at the jump's time, so every view closes them where the jump lands.
 * - A thread that ends inside frames (pthread_exit, cancellation) or a process that exits inside
 *   them: trc__frames_close_ring writes their exits before the thread's slot is given back or
 *   the process's EXIT record is written.
 * - A process that execs leaves its frames (trc__frames_exec, src/preload/hooks_exec.c): their
 *   exits go first, and their entries again if the exec fails.
 * - A context switch (swapcontext, setcontext: src/preload/hooks_context.c) suspends the
 *   running context's frames (trc__frames_suspend: their exits, a copy kept by the hook on that
 *   context's stack) and enters them again when it resumes (trc__frames_resume).
 * - A fork child starts inside its parent's open frames: its first claim writes a FUNC_ENTER for
 *   each (trc__frames_replay), at that time, so the calls it makes nest under them. Frames past
 *   TRC__FRAMES_MAX are not entered: their exits close nothing in the child.
 *
 * Threads: each function touches the calling thread's frames only. Signal handlers: the hooks
 * push and pop above whatever they interrupted; the jump runs in the handler it leaves.
 */
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime.h"
#include "trc/func_frames.h"

#define TRC__FRAMES_MAX 8192u /* the sentinel included */

/* Every thread's frames point here until its first entry maps its own (thread.c's initializer
 * of trc__self): a sentinel, never written. */
const struct trc__frame trc__frames_none[1];

void trc__frames_push_slow(struct trc__thread *t, uint64_t fn, uint64_t site, uint64_t sp)
{
	if (t->frames == trc__frames_none && t->frames_end) {
		size_t bytes = (size_t)TRC__FRAMES_MAX * sizeof(struct trc__frame);
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			t->frames_end = NULL; /* counted from now on, never mapped again */
		} else {
			struct trc__frame *f = p; /* zero: f[0] is the sentinel */
			t->frames = f;
			t->frames_top = f + 1;
			TRC__BARRIER();
			t->frames_end = f + TRC__FRAMES_MAX;
		}
	}
	struct trc__frame *f = t->frames_top;
	if (t->frames_end && f < t->frames_end) {
		t->frames_top = f + 1;
		TRC__BARRIER(); /* taken before written (trc/func_frames.h) */
		*f = (struct trc__frame){.fn = fn, .site = site, .sp = sp};
	} else {
		t->frames_over++;
	}
	unsigned m = trc__mode_load();
	if (m)
		trc__emit(m, TRC_REC_FUNC_ENTER, 2, fn, site);
}

void trc__frames_pop_slow(struct trc__thread *t, uint64_t fn, uint64_t site)
{
	if (t->frames_over) {
		t->frames_over--; /* past what is kept: taken as the innermost frame's */
	} else {
		/* Not the innermost: frames above it were left without their exits (a vfork
		 * child's calls that never returned, a jump this library did not see). The views
		 * close those with it; here they go with it. An exit of a frame not open at all
		 * (entered before the session or the thread began) changes nothing. */
		for (struct trc__frame *f = t->frames_top - 1; f > t->frames; f--)
			if (f->fn == fn) {
				t->frames_top = f;
				break;
			}
	}
	unsigned m = trc__mode_load();
	if (m)
		trc__emit(m, TRC_REC_FUNC_EXIT, 2, fn, site);
}

void trc__frames_unmap(struct trc__thread *t)
{
	struct trc__frame *f = t->frames;
	t->frames_end = (struct trc__frame *)trc__frames_none + 1;
	t->frames_top = (struct trc__frame *)trc__frames_none + 1;
	t->frames = (struct trc__frame *)trc__frames_none;
	t->frames_over = 0;
	TRC__BARRIER(); /* the hooks see no frames before the memory goes */
	if (f != trc__frames_none)
		munmap(f, (size_t)TRC__FRAMES_MAX * sizeof(struct trc__frame));
}

/* Forgets every open frame of t. */
static void trc__frames_clear(struct trc__thread *t)
{
	t->frames_over = 0;
	t->frames_top = (struct trc__frame *)t->frames + 1;
}

void trc__frames_jump(uint64_t landing_sp)
{
	unsigned m = trc__mode_load();
	struct trc__thread *t = &trc__self;
	if (!m)
		return;
	if (t->frames_over) {
		/* The uncounted ones lie below the innermost kept frame: gone with it, or kept. */
		uint32_t k = trc__frames_kept(t);
		if (k && t->frames_top[-1].sp >= landing_sp)
			return;
		t->frames_over = 0;
	}
	while (trc__frames_kept(t) && t->frames_top[-1].sp < landing_sp) {
		const struct trc__frame *f = --t->frames_top;
		trc__emit(m, TRC_REC_FUNC_EXIT, 2, f->fn, f->site);
	}
}

void trc__frames_exec(bool failed)
{
	unsigned m = trc__mode_load();
	struct trc__thread *t = &trc__self;
	uint32_t k = trc__frames_kept(t);
	/* A vfork child runs on its parent's memory: these frames are the parent's. */
	if (!m || !k || getpid() != trc__rt.pid)
		return;
	for (uint32_t i = 0; i < k; i++) {
		const struct trc__frame *f = &t->frames[1 + (failed ? i : k - 1 - i)];
		trc__emit(m, failed ? TRC_REC_FUNC_ENTER : TRC_REC_FUNC_EXIT, 2, f->fn, f->site);
	}
}

uint32_t trc__frames_suspend(struct trc__frame *save, uint32_t max)
{
	unsigned m = trc__mode_load();
	struct trc__thread *t = &trc__self;
	if (!m)
		return 0;
	uint32_t k = trc__frames_kept(t), n = k < max ? k : max;
	for (uint32_t i = 0; i < n; i++)
		save[i] = t->frames[1 + i];
	while (trc__frames_kept(t)) {
		const struct trc__frame *f = --t->frames_top;
		trc__emit(m, TRC_REC_FUNC_EXIT, 2, f->fn, f->site);
	}
	trc__frames_clear(t);
	return n;
}

void trc__frames_resume(const struct trc__frame *save, uint32_t n)
{
	unsigned m = trc__mode_load();
	struct trc__thread *t = &trc__self;
	if (!m)
		return;
	for (uint32_t i = 0; i < n; i++) {
		struct trc__frame *f = t->frames_top;
		if (f < t->frames_end) {
			t->frames_top = f + 1;
			TRC__BARRIER(); /* taken before written (trc/func_frames.h) */
			*f = save[i];
			trc__emit(m, TRC_REC_FUNC_ENTER, 2, save[i].fn, save[i].site);
		} else {
			trc__frames_push_slow(t, save[i].fn, save[i].site, save[i].sp);
		}
	}
}

/* One FUNC_ENTER or FUNC_EXIT through the ring's general path (slow paths: ok == 0). */
static void trc__frames_put(struct trc__thread *t, unsigned mode, uint32_t type,
			    const struct trc__frame *f)
{
	struct trc_ring_func *r = trc__reserve(t, TRC_TAG(type, 0), sizeof(*r));
	if (!r)
		return; /* dropped and counted by the ring */
	r->ts = trc__now(mode);
	r->fn = f->fn;
	r->call_site = f->site;
	ring_commit_sp(&t->prod);
}

void trc__frames_replay(struct trc__thread *t, unsigned mode)
{
	uint32_t k = t->frames_replay;
	t->frames_replay = 0;
	for (uint32_t i = 0; i < k; i++)
		trc__frames_put(t, mode, TRC_REC_FUNC_ENTER, &t->frames[1 + i]);
}

void trc__frames_close_ring(struct trc__thread *t, unsigned mode)
{
	uint32_t k = trc__frames_kept(t);
	while (k)
		trc__frames_put(t, mode, TRC_REC_FUNC_EXIT, &t->frames[k--]);
	trc__frames_clear(t);
}
