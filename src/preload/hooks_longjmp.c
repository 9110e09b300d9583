/* hooks_longjmp.c - non-local jumps out of an emit (libtrc-preload.so).
 *
 * trc.h's fast path clears the thread's `ok` flag for the few instructions of an emit, so a
 * signal handler that interrupts it sees 0, and its own events are counted as REENTRANT losses
 * instead of corrupting the ring. A handler that leaves by siglongjmp (or longjmp) never returns
 * into that emit, which would have set the flag again: the thread would then count every later
 * event as lost. These hooks interpose glibc's jumps and set the flag again on the way out:
 * the abandoned emit had published nothing (a record is published by its commit, the last
 * step), and the producer's next reservation starts from its last committed position, so the
 * ring is consistent.
 *
 * Not covered: a jump whose target lies inside the handler itself, nested on the interrupted
 * emit (setjmp and longjmp both inside one handler invocation): the flag is set while the emit
 * below is unfinished, and the handler's later events may overwrite its reservation (the
 * recorder then ends that stream as corrupt, never crashes). Programs do not do that.
 *
 * A jump also leaves every function frame entered below the stack pointer it restores: the hooks
 * close those in the trace (trc__frames_jump, src/runtime/frames.c) before jumping. The stack
 * pointer is read from the jump buffer, where glibc keeps it mangled with the thread's pointer
 * guard (PTR_MANGLE: xor with the guard, then rotate left by 17 bits on x86-64); reading it
 * there costs nothing until a jump, where recording it at every setjmp would mean interposing a
 * function that returns twice. Other architectures: the frames stay open (as before).
 *
 * The next definitions (glibc's) are resolved in the constructor, so the hooks stay
 * async-signal-safe; a jump before that resolves them on the spot.
 *
 * Threads: any; touches only the calling thread's trc__self.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include "trc/func_frames.h"

#define PRELOAD_API __attribute__((visibility("default"), noreturn))

typedef void (*preload__jump_fn)(struct __jmp_buf_tag *env, int val);

PRELOAD_API void longjmp(jmp_buf env, int val);
PRELOAD_API void _longjmp(jmp_buf env, int val);
PRELOAD_API void siglongjmp(sigjmp_buf env, int val);
PRELOAD_API void __longjmp_chk(jmp_buf env, int val);

enum { PRELOAD_LONGJMP, PRELOAD__LONGJMP, PRELOAD_SIGLONGJMP, PRELOAD_LONGJMP_CHK, PRELOAD_JUMPS };

static const char *const preload__jump_names[PRELOAD_JUMPS] = {"longjmp", "_longjmp", "siglongjmp",
							       "__longjmp_chk"};
static preload__jump_fn preload__next_jump[PRELOAD_JUMPS];

__attribute__((constructor)) static void preload__jump_ctor(void)
{
	for (int i = 0; i < PRELOAD_JUMPS; i++)
		preload__next_jump[i] = (preload__jump_fn)dlsym(RTLD_NEXT, preload__jump_names[i]);
}

/* Leaves this thread's emit state as a finished emit would (see the top). */
static inline void preload__jump_out(void)
{
	struct trc__thread *t = &trc__self;
	/* busy: inside a claim or naming, which cannot be resumed; leave those alone. ok[1] == 0
	 * with a ring: a fork child made without the atfork handlers (its flag line was wiped,
	 * trc.h), whose ring is its parent's; its next event's slow path gives it its own. */
	if (t->prod.data && !t->ok_flag[0] && t->ok_flag[1] && !t->busy)
		t->ok_flag[0] = 1;
}

#if defined(__x86_64__)
/* glibc's x86-64 jmp_buf: rbx, rbp, r12-r15, rsp, pc; rsp is word 6, mangled. */
#define PRELOAD_JB_RSP 6

/* The stack pointer env restores (glibc's PTR_DEMANGLE: rotate right by 17, xor the pointer
 * guard, tcbhead_t.pointer_guard at %fs:0x30). */
static uint64_t preload__landing_sp(struct __jmp_buf_tag *env)
{
	uint64_t v = (uint64_t)env->__jmpbuf[PRELOAD_JB_RSP], guard;
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	return ((v >> 17) | (v << 47)) ^ guard;
}
#endif

__attribute__((noreturn)) static void preload__jump(int which, struct __jmp_buf_tag *env, int val)
{
	preload__jump_out();
#if defined(__x86_64__)
	trc__frames_jump(preload__landing_sp(env));
#endif
	preload__jump_fn f = __atomic_load_n(&preload__next_jump[which], __ATOMIC_RELAXED);
	if (!f)
		f = (preload__jump_fn)dlsym(RTLD_NEXT, preload__jump_names[which]);
	if (!f)
		abort();
	f(env, val);
	abort(); /* not reached: the jump does not return */
}

PRELOAD_API void longjmp(jmp_buf env, int val)
{
	preload__jump(PRELOAD_LONGJMP, env, val);
}

PRELOAD_API void _longjmp(jmp_buf env, int val)
{
	preload__jump(PRELOAD__LONGJMP, env, val);
}

PRELOAD_API void siglongjmp(sigjmp_buf env, int val)
{
	preload__jump(PRELOAD_SIGLONGJMP, env, val);
}

PRELOAD_API void __longjmp_chk(jmp_buf env, int val)
{
	preload__jump(PRELOAD_LONGJMP_CHK, env, val);
}
