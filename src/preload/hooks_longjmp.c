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
 * The next definitions (glibc's) are resolved in the constructor, so the hooks stay
 * async-signal-safe; a jump before that resolves them on the spot.
 *
 * Threads: any; touches only the calling thread's trc__self.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdlib.h>

#include "trc.h"

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

__attribute__((noreturn)) static void preload__jump(int which, struct __jmp_buf_tag *env, int val)
{
	preload__jump_out();
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
