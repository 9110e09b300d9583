/* hooks_context.c - swapcontext and setcontext (libtrc-preload.so): coroutines switch stacks,
 * and each context's function frames stay its own.
 *
 * The thread's open frames (trc/func_frames.h) are those of the context running on it. A
 * switch suspends them: swapcontext writes a FUNC_EXIT for each (innermost first), keeps a copy
 * in its own stack frame, which lives on the suspended context's stack, and switches; when
 * that context is resumed (by a swapcontext of another, or by glibc when a makecontext
 * function returns to its uc_link), execution comes back into this hook, which enters the
 * saved frames again (FUNC_ENTER, outermost first). So every view shows each stretch a
 * context ran as calls of its own frames: a function suspended k times inside shows k + 1
 * runs, each with its true time, and no context's calls nest under another's.
 *
 * setcontext abandons the current context: its frames end (as a longjmp's do). A context
 * resumed where getcontext saved it comes back outside any hook: the frames it had open then
 * are not entered again, and their exits close nothing in the views.
 *
 * The next definitions (glibc's) are resolved in the constructor.
 * Threads: any; the calling thread's frames only.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <ucontext.h>

#include "trc/func_frames.h"

#define PRELOAD_API __attribute__((visibility("default")))

/* At most this many frames are saved across a switch (on the context's own stack). */
#define PRELOAD_CONTEXT_FRAMES_MAX 512u

typedef int (*preload__swap_fn)(ucontext_t *, const ucontext_t *);
typedef int (*preload__set_fn)(const ucontext_t *);

static preload__swap_fn preload__next_swap;
static preload__set_fn preload__next_set;

__attribute__((constructor)) static void preload__context_ctor(void)
{
	__atomic_store_n(&preload__next_swap, (preload__swap_fn)dlsym(RTLD_NEXT, "swapcontext"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&preload__next_set, (preload__set_fn)dlsym(RTLD_NEXT, "setcontext"),
			 __ATOMIC_RELAXED);
}

/* How many frames a switch saves now: the thread's kept frames, capped. */
static uint32_t preload__context_frames(void)
{
	if (!trc__mode_load())
		return 0;
	uint32_t n = trc__frames_kept(&trc__self);
	return n < PRELOAD_CONTEXT_FRAMES_MAX ? n : PRELOAD_CONTEXT_FRAMES_MAX;
}

PRELOAD_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	preload__swap_fn f = __atomic_load_n(&preload__next_swap, __ATOMIC_RELAXED);
	if (!f)
		f = (preload__swap_fn)dlsym(RTLD_NEXT, "swapcontext");
	if (!f)
		return errno = ENOSYS, -1;
	uint32_t n = preload__context_frames();
	struct trc__frame *saved = n ? alloca(n * sizeof(*saved)) : NULL;
	n = trc__frames_suspend(saved, n);
	int rc = f(oucp, ucp);
	/* Here again: this context runs (or the switch failed). */
	trc__frames_resume(saved, n);
	return rc;
}

PRELOAD_API int setcontext(const ucontext_t *ucp)
{
	preload__set_fn f = __atomic_load_n(&preload__next_set, __ATOMIC_RELAXED);
	if (!f)
		f = (preload__set_fn)dlsym(RTLD_NEXT, "setcontext");
	if (!f)
		return errno = ENOSYS, -1;
	uint32_t n = preload__context_frames();
	struct trc__frame *saved = n ? alloca(n * sizeof(*saved)) : NULL;
	n = trc__frames_suspend(saved, n);
	int rc = f(ucp);
	trc__frames_resume(saved, n); /* it failed: the frames go on */
	return rc;
}
