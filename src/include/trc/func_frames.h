/* func_frames.h - the -finstrument-functions hooks' fast path: every thread keeps its open
 * function frames (a shadow stack of {fn, call site, stack pointer at entry}) beside the trace,
 * so that frames the program leaves without returning (longjmp, siglongjmp, a thread or process
 * that ends inside them) are closed in the trace itself, where and when they were left, and a
 * forked child begins with the frames it inherited. Private (not API): included only by the two
 * copies of the hooks (src/runtime/finst.c, src/preload/hooks_finst.c); the frames live in the
 * runtime (src/runtime/frames.c), which maps them on a thread's first function event.
 *
 * Layout (why): frames[0] is a sentinel {fn 0} and frames_top points just past the innermost
 * open frame, so an exit tests one thing, frames_top[-1].fn == fn (no function is at address 0:
 * an empty stack fails it too), and an entry one, frames_top < frames_end. A thread that has no
 * frames mapped points both at a sentinel of the runtime's (trc__frames_none), so its first
 * entry takes the slow path, which maps them.
 *
 * Cost: on entry a compare and three stores in memory the thread alone touches, on exit a load
 * and a compare, and a pointer store each; no byte more in the trace. Frames deeper than the
 * mapping are counted (frames_over) but not kept: a jump out of them cannot close them.
 *
 * Order (why): the frame is pushed or popped before the record is emitted, so the emit stays in
 * tail position (trc.h: its rare paths are tail calls). A fork child enters the frames it
 * inherited again on its first claim (trc__frames_replay): as many as were open at the fork,
 * counted then, so the push or pop of the event that claims does not change them (a pop only
 * moves frames_top down; a push writes above them).
 *
 * Threads: the calling thread's frames only; a signal handler's calls push and pop above the
 * interrupted ones (a push takes its slot before it writes it, so a handler that interrupts the
 * writes pushes above it; a jump out of such a handler may see that one frame half written).
 */
#ifndef TRC_FUNC_FRAMES_H
#define TRC_FUNC_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "trc.h"

struct trc__frame {
	uint64_t fn, site, sp;
};

/* Out of line (src/runtime/frames.c), each writing the event's record too, so that every call
 * the hooks make is a tail call (no register saved on their fast path): a push without room
 * (the first maps the frames); an exit that is not the innermost frame's. */
void trc__frames_push_slow(struct trc__thread *t, uint64_t fn, uint64_t site, uint64_t sp);
void trc__frames_pop_slow(struct trc__thread *t, uint64_t fn, uint64_t site);
/* A jump restores stack pointer landing_sp: writes FUNC_EXIT for every frame of the calling
 * thread entered below it, innermost first, and forgets them (the preload's jump hooks). */
void trc__frames_jump(uint64_t landing_sp);
/* The calling process execs (failed false): writes FUNC_EXIT for the calling thread's open
 * frames, innermost first, keeping them; the exec failed (true): enters them again. Nothing in
 * a vfork child (the frames are its parent's). The preload's exec hooks. */
void trc__frames_exec(bool failed);
/* A context switch (the preload's swapcontext/setcontext hooks): writes FUNC_EXIT for the
 * calling thread's open frames, innermost first, copies the outermost max of them into save
 * and forgets them all; returns how many it copied. trc__frames_resume enters n saved frames
 * again (FUNC_ENTER, outermost first) on top of the thread's. */
uint32_t trc__frames_suspend(struct trc__frame *save, uint32_t max);
void trc__frames_resume(const struct trc__frame *save, uint32_t n);

/* The stack pointer of the function that called the hook, as it was before the call: above
 * every frame that function's callees push, at or below its own frame's base. The hook's
 * canonical frame address (DWARF CFA): computed from the stack pointer, no frame pointer set up.
 * Must be expanded in the hook itself. */
#define TRC__CALLER_SP() ((uint64_t)(uintptr_t)__builtin_dwarf_cfa())

/* How many frames of t are kept (open and known; frames_over more may be open below them). */
static inline uint32_t trc__frames_kept(const struct trc__thread *t)
{
	return (uint32_t)(t->frames_top - t->frames - 1);
}

static inline __attribute__((always_inline)) void trc__func_enter(uint64_t fn, uint64_t site,
								  uint64_t sp)
{
	unsigned m = trc__mode_load();
	if (!m)
		return;
	struct trc__thread *t = &trc__self;
	struct trc__frame *f = t->frames_top;
	if (TRC__UNLIKELY(f >= t->frames_end)) {
		trc__frames_push_slow(t, fn, site, sp); /* and the record */
		return;
	}
	t->frames_top = f + 1;
	TRC__BARRIER(); /* the slot is taken before it is written: a handler pushes above it */
	f->fn = fn;
	f->site = site;
	f->sp = sp;
	trc__emit(m, TRC_REC_FUNC_ENTER, 2, fn, site);
}

static inline __attribute__((always_inline)) void trc__func_exit(uint64_t fn, uint64_t site)
{
	unsigned m = trc__mode_load();
	if (!m)
		return;
	struct trc__thread *t = &trc__self;
	struct trc__frame *f = t->frames_top - 1;
	if (TRC__UNLIKELY(f->fn != fn)) {
		trc__frames_pop_slow(t, fn, site); /* and the record */
		return;
	}
	t->frames_top = f;
	trc__emit(m, TRC_REC_FUNC_EXIT, 2, fn, site);
}

#endif /* TRC_FUNC_FRAMES_H */
