/* hooks_malloc.c - LD_PRELOAD hooks that record the program's allocations (libtrc-preload.so).
 *
 * malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc are
 * interposed; each calls glibc's allocator through its exported __libc_* entry points and
 * records ALLOC {addr, size} / FREE {addr} records through trc.h's inline fast path (realloc is
 * a FREE of the old block and an ALLOC of the new one; frees of NULL and failed allocations are
 * not events). glibc routes its own internal allocations through these symbols too.
 *
 * Why __libc_malloc & co. and not dlsym(RTLD_NEXT): dlsym allocates (dlerror buffers), which
 * recurses into the hook before the pointer is known; the __libc_* symbols are resolved by the
 * loader like any other, so there is no bootstrap phase and no recursion.
 *
 * Hard cases:
 *   - before libtrc attaches (allocations by the loader, libc and earlier constructors) and
 *     without a session: trc__mode is 0, the hook is the libc call plus one load and branch;
 *   - recursion from inside the recording path (the slow path of a first event) and signal
 *     handlers that allocate while this thread records: trc.h's per-thread ok/busy flags turn
 *     the nested event into a counted loss (LOST reason REENTRANT), never a corrupt ring;
 *   - threads exiting at any moment, fork, exec, exit from any thread: handled by libtrc
 *     (src/runtime/thread.c, src/runtime/attach.c); the hooks hold no state of their own.
 * A FREE is recorded before the block goes back to the allocator, so another thread's ALLOC of
 * the same address is always stamped after it.
 *
 * Threads: any, concurrently; async-signal-safe as far as glibc's malloc itself is.
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trc.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

#define PRELOAD_API __attribute__((visibility("default")))

static inline void preload__alloc(void *p, size_t n)
{
	unsigned m = trc__mode_load();
	if (m && p)
		trc__emit(m, TRC_REC_ALLOC, 2, (uint64_t)(uintptr_t)p, n);
}

static inline void preload__free(void *p)
{
	unsigned m = trc__mode_load();
	if (m && p)
		trc__emit(m, TRC_REC_FREE, 1, (uint64_t)(uintptr_t)p, 0);
}

PRELOAD_API void *malloc(size_t n)
{
	void *p = __libc_malloc(n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void free(void *p)
{
	preload__free(p);
	__libc_free(p);
}

PRELOAD_API void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	preload__alloc(p, n * size);
	return p;
}

PRELOAD_API void *realloc(void *old, size_t n)
{
	void *p = __libc_realloc(old, n);
	/* realloc(p, 0) frees p and returns NULL; a failed realloc leaves old as it was. */
	if (p || (old && n == 0))
		preload__free(old);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	preload__alloc(p, n);
	*out = p;
	return 0;
}

PRELOAD_API void *aligned_alloc(size_t align, size_t n)
{
	void *p = __libc_memalign(align, n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *memalign(size_t align, size_t n)
{
	void *p = __libc_memalign(align, n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *valloc(size_t n)
{
	void *p = __libc_valloc(n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *pvalloc(size_t n)
{
	void *p = __libc_pvalloc(n);
	preload__alloc(p, n);
	return p;
}
