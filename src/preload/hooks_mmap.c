/* hooks_mmap.c - memory that does not come from malloc: mmap, munmap, mremap, brk, sbrk
 * (libtrc-preload.so).
 *
 * A program's RSS is its heap plus what it maps by itself or through a library: a custom
 * allocator's arenas, a file mapped to be read, a buffer of shared memory. Each successful
 * call made through these symbols is a MAP record {addr, length, kind} with the call stack
 * (stack_capture.h) or an UNMAP record {addr, length}; mremap is an UNMAP of the old range and
 * a MAP of the new one; a break that moves up is a MAP of kind BRK, down an UNMAP.
 *
 * Not recorded: the tracer's own mappings. libtrc's (the session region, the fork guard),
 * this library's and libunwind's calls are told by their caller's address; the unwinder's
 * allocations while it captures a stack by preload__busy/preload__own. glibc's malloc maps
 * its large blocks and moves the break through internal calls these hooks never see, so the
 * heap is counted once, by the malloc hooks.
 *
 * Each forwards to the next definition (glibc's), resolved in the constructor; a call before
 * that (another library's constructor) is made with the system call itself for mmap, munmap
 * and mremap, and resolves brk and sbrk on the spot (glibc keeps the break it hands out in
 * its own variable: a raw brk would leave it behind).
 *
 * Threads: any; the records are the calling thread's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stack_capture.h"
#include "trc.h"

#define PRELOAD_API __attribute__((visibility("default")))

PRELOAD_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
PRELOAD_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
PRELOAD_API int munmap(void *addr, size_t len);
PRELOAD_API void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...);
PRELOAD_API int brk(void *end);
PRELOAD_API void *sbrk(intptr_t incr);

static void *(*preload__next_mmap)(void *, size_t, int, int, int, off_t);
static int (*preload__next_munmap)(void *, size_t);
static void *(*preload__next_mremap)(void *, size_t, size_t, int, ...);
static int (*preload__next_brk)(void *);
static void *(*preload__next_sbrk)(intptr_t);

/* The text of libtrc and of this library: their own mappings are not the program's. */
static uintptr_t preload__tracer_lo[2], preload__tracer_hi[2];


__attribute__((constructor)) static void preload__mmap_ctor(void)
{
	preload__next_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	preload__next_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
	preload__next_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
	preload__next_brk = (int (*)(void *))dlsym(RTLD_NEXT, "brk");
	preload__next_sbrk = (void *(*)(intptr_t))dlsym(RTLD_NEXT, "sbrk");
	preload_text_range((const void *)trc_attach, &preload__tracer_lo[0], &preload__tracer_hi[0]);
	preload_text_range((const void *)preload__mmap_ctor, &preload__tracer_lo[1],
			   &preload__tracer_hi[1]);
}

/* Whether a call from ra is the program's (not the tracer's, not inside a capture). */
static inline bool preload__programs(uintptr_t ra)
{
	if (preload__own || preload__busy)
		return false;
	for (unsigned i = 0; i < 2; i++)
		if (ra >= preload__tracer_lo[i] && ra < preload__tracer_hi[i])
			return false;
	return !preload_stack_in_unwinder(ra);
}

static inline void preload__map(uintptr_t ra, void *p, size_t len, uint32_t kind)
{
	unsigned m = trc__mode_load();
	if (!m || !len || !preload__programs(ra))
		return;
	uint32_t stack = preload_stack_id(len);
	if (stack == PRELOAD_STACK_OWN)
		return;
	uint64_t lk = ((uint64_t)len & TRC_MAP_LEN_MASK) | (uint64_t)kind << 56;
	trc__emit(m, TRC_TAG(TRC_REC_MAP, stack), 2, (uint64_t)(uintptr_t)p, lk);
}

static inline void preload__unmap(uintptr_t ra, void *p, size_t len)
{
	unsigned m = trc__mode_load();
	if (m && len && preload__programs(ra))
		trc__emit(m, TRC_REC_UNMAP, 2, (uint64_t)(uintptr_t)p,
			  (uint64_t)len & TRC_MAP_LEN_MASK);
}

static uint32_t preload__map_kind(int flags, int fd)
{
	if (!(flags & MAP_ANONYMOUS) && fd >= 0)
		return TRC_MAP_FILE;
	return (flags & MAP_SHARED) ? TRC_MAP_SHARED : TRC_MAP_ANON;
}

static void *preload__do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (preload__next_mmap)
		return preload__next_mmap(addr, len, prot, flags, fd, off);
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return (void *)r;
}

PRELOAD_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = preload__do_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED)
		preload__map((uintptr_t)__builtin_return_address(0), p, len,
			     preload__map_kind(flags, fd));
	return p;
}

PRELOAD_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = preload__do_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED)
		preload__map((uintptr_t)__builtin_return_address(0), p, len,
			     preload__map_kind(flags, fd));
	return p;
}

PRELOAD_API int munmap(void *addr, size_t len)
{
	int rc = preload__next_munmap ? preload__next_munmap(addr, len)
				      : (int)syscall(SYS_munmap, addr, len);
	if (rc == 0)
		preload__unmap((uintptr_t)__builtin_return_address(0), addr, len);
	return rc;
}

PRELOAD_API void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	void *p = preload__next_mremap ? preload__next_mremap(old, old_len, new_len, flags, want)
				       : (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
							 want);
	if (p != MAP_FAILED) {
		uintptr_t ra = (uintptr_t)__builtin_return_address(0);
		preload__unmap(ra, old, old_len);
		preload__map(ra, p, new_len, TRC_MAP_REMAP);
	}
	return p;
}

static void preload__resolve_brk(void)
{
	if (!preload__next_sbrk)
		preload__next_sbrk = (void *(*)(intptr_t))dlsym(RTLD_NEXT, "sbrk");
	if (!preload__next_brk)
		preload__next_brk = (int (*)(void *))dlsym(RTLD_NEXT, "brk");
}

/* The break moved from before to after: a MAP of kind BRK up, an UNMAP down. */
static void preload__moved(uintptr_t ra, uintptr_t before, uintptr_t after)
{
	if (after > before)
		preload__map(ra, (void *)before, after - before, TRC_MAP_BRK);
	else if (after < before)
		preload__unmap(ra, (void *)after, before - after);
}

PRELOAD_API int brk(void *end)
{
	preload__resolve_brk();
	if (!preload__next_brk || !preload__next_sbrk) {
		errno = ENOMEM;
		return -1;
	}
	void *before = preload__next_sbrk(0);
	int rc = preload__next_brk(end);
	if (rc == 0 && before != (void *)-1)
		preload__moved((uintptr_t)__builtin_return_address(0), (uintptr_t)before,
			       (uintptr_t)end);
	return rc;
}

PRELOAD_API void *sbrk(intptr_t incr)
{
	preload__resolve_brk();
	if (!preload__next_sbrk) {
		errno = ENOMEM;
		return (void *)-1;
	}
	void *before = preload__next_sbrk(incr);
	if (before != (void *)-1 && incr)
		preload__moved((uintptr_t)__builtin_return_address(0), (uintptr_t)before,
			       (uintptr_t)before + (uintptr_t)incr);
	return before;
}
