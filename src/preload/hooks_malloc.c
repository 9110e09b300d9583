/* hooks_malloc.c - LD_PRELOAD hooks that record the program's allocations (libtrc-preload.so).
 *
 * malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc and malloc_usable_size are interposed; each forwards to the next definition in symbol
 * order (dlsym(RTLD_NEXT)): the program's own allocator, whether it is linked in (jemalloc,
 * tcmalloc, mimalloc), preloaded after us, or glibc's. Each records ALLOC {addr, size} /
 * FREE {addr} records through trc.h's inline fast path, each ALLOC with its call stack
 * (stack_capture.c) (realloc is a FREE of the old block and
 * an ALLOC of the new one; frees of NULL and failed allocations are not events). glibc routes
 * its own internal allocations through these symbols too.
 *
 * Why not glibc's __libc_malloc: a program whose allocator does not define the __libc_*
 * aliases (jemalloc) would get glibc blocks from malloc and hand them to its own free and
 * malloc_usable_size (SIGSEGV), and would no longer be measured with its own allocator. Every
 * member of the family goes to the allocator that owns malloc: the aligned and page variants are
 * taken from the same object as malloc when it defines them (dladdr), else made with its
 * posix_memalign.
 *
 * Bootstrap: dlsym may allocate (dlerror state), which re-enters these hooks before the next
 * allocator is known. While the one resolving thread is inside dlsym, allocations come from a
 * small static arena (bump allocation, never reused); its blocks are recognised by address in
 * free, realloc and malloc_usable_size for the rest of the process's life. Resolution happens
 * on the first call (usually from the loader's or libc's start-up, on the main thread).
 *
 * Hard cases:
 *   - before libtrc attaches (allocations by the loader, libc and earlier constructors) and
 *     without a session: trc__mode is 0, the hook is the allocator call plus one load and branch;
 *   - recursion from inside the recording path (the slow path of a first event) and signal
 *     handlers that allocate while this thread records: trc.h's per-thread ok/busy flags turn
 *     the nested event into a counted loss (LOST reason REENTRANT), never a corrupt ring;
 *   - threads exiting at any moment, fork, exec, exit from any thread: handled by libtrc
 *     (src/runtime/thread.c, src/runtime/attach.c); the hooks hold no state beyond the resolved
 *     pointers, written once before the release store of preload__state.
 * A FREE is recorded before the block goes back to the allocator, so another thread's ALLOC of
 * the same address is always stamped after it.
 *
 * Threads: any, concurrently; async-signal-safe as far as the program's allocator itself is.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stack_capture.h"
#include "trc.h"

#define PRELOAD_API __attribute__((visibility("default")))

PRELOAD_API void *reallocarray(void *old, size_t n, size_t size);
PRELOAD_API size_t malloc_usable_size(void *p);

struct preload__next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	size_t (*usable_size)(void *);
	/* NULL when the allocator that owns malloc does not define them: made with
	 * posix_memalign. */
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
};

enum { PRELOAD_UNRESOLVED, PRELOAD_RESOLVING, PRELOAD_RESOLVED };

static struct preload__next preload__next;
static atomic_int preload__state;

/* The bootstrap arena: [16-byte size header][block], blocks 16-byte aligned. */
#define PRELOAD_ARENA_BYTES (128u << 10)
static alignas(4096) unsigned char preload__arena[PRELOAD_ARENA_BYTES];
static atomic_size_t preload__arena_used;

static bool preload__in_arena(const void *p)
{
	return (const unsigned char *)p >= preload__arena &&
	       (const unsigned char *)p < preload__arena + PRELOAD_ARENA_BYTES;
}

static void *preload__arena_alloc(size_t align, size_t n)
{
	if (align < 16)
		align = 16;
	if (n > PRELOAD_ARENA_BYTES || align > 4096)
		return NULL;
	/* Room for the header and the worst alignment padding; a failed reservation just wastes
	 * the rest of the arena (it is only used while dlsym runs). */
	size_t need = (n + 15 + 16 + align) & ~(size_t)15;
	size_t off = atomic_fetch_add_explicit(&preload__arena_used, need, memory_order_relaxed);
	if (off > PRELOAD_ARENA_BYTES || need > PRELOAD_ARENA_BYTES - off)
		return NULL;
	uintptr_t start = (uintptr_t)(preload__arena + off) + 16;
	uintptr_t p = (start + align - 1) & ~(uintptr_t)(align - 1);
	((size_t *)p)[-1] = n;
	return (void *)p; /* static storage: already zero */
}

static size_t preload__arena_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

/* The symbol from the object that defines next malloc, or NULL if another object defines it. */
static void *preload__same_object(const char *name, const void *malloc_fn)
{
	void *f = dlsym(RTLD_NEXT, name);
	Dl_info a, b;
	if (!f || !dladdr(f, &a) || !dladdr(malloc_fn, &b) || a.dli_fbase != b.dli_fbase)
		return NULL;
	return f;
}

/* Resolves the next allocator. Returns false while another call (dlsym's own allocations on
 * this thread, or a concurrent first call) is resolving it: use the arena then. */
static bool preload__resolve_slow(void)
{
	int st = PRELOAD_UNRESOLVED;
	if (!atomic_compare_exchange_strong_explicit(&preload__state, &st, PRELOAD_RESOLVING,
						     memory_order_acquire, memory_order_acquire))
		return st == PRELOAD_RESOLVED;
	struct preload__next n = {0};
	n.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	n.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	n.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	n.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	n.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	n.usable_size = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	if (n.malloc) {
		const void *m = (const void *)n.malloc;
		n.aligned_alloc =
			(void *(*)(size_t, size_t))preload__same_object("aligned_alloc", m);
		n.memalign = (void *(*)(size_t, size_t))preload__same_object("memalign", m);
		n.valloc = (void *(*)(size_t))preload__same_object("valloc", m);
		n.pvalloc = (void *(*)(size_t))preload__same_object("pvalloc", m);
	}
	if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.posix_memalign)
		abort(); /* no allocator after us: the C library itself is missing */
	preload__next = n;
	/* Pairs with the acquire load in preload__resolved: the pointers are written. */
	atomic_store_explicit(&preload__state, PRELOAD_RESOLVED, memory_order_release);
	return true;
}

static inline bool preload__resolved(void)
{
	if (__builtin_expect(atomic_load_explicit(&preload__state, memory_order_acquire) ==
				     PRELOAD_RESOLVED,
			     1))
		return true;
	return preload__resolve_slow();
}

__attribute__((constructor)) static void preload__ctor(void)
{
	(void)preload__resolved();
	preload_stack_init();
}

/* The ALLOC record, its tag naming the thread's id of the allocation's call stack
 * (stack_capture.h; 0: none). */
static inline void preload__alloc(void *p, size_t n)
{
	unsigned m = trc__mode_load();
	if (m && p) {
		uint32_t stack = preload_stack_id(n);
		if (__builtin_expect(stack == PRELOAD_STACK_OWN, 0))
			return; /* the unwinder's own */
		trc__emit(m, TRC_TAG(TRC_REC_ALLOC, stack), 2, (uint64_t)(uintptr_t)p, n);
	}
}

static inline void preload__free(void *p)
{
	unsigned m = trc__mode_load();
	if (m && p && !__builtin_expect(preload__own, 0))
		trc__emit(m, TRC_REC_FREE, 1, (uint64_t)(uintptr_t)p, 0);
}

static void *preload__aligned(size_t align, size_t n)
{
	if (!preload__resolved())
		return preload__arena_alloc(align, n);
	if (align < sizeof(void *))
		align = sizeof(void *);
	void *p;
	int rc = preload__next.posix_memalign(&p, align, n);
	if (rc) {
		errno = rc;
		return NULL;
	}
	return p;
}

static size_t preload__page(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	return pg > 0 ? (size_t)pg : 4096;
}

PRELOAD_API void *malloc(size_t n)
{
	void *p = preload__resolved() ? preload__next.malloc(n) : preload__arena_alloc(16, n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void free(void *p)
{
	preload__free(p);
	if (!p || preload__in_arena(p))
		return;
	if (preload__resolved())
		preload__next.free(p);
	/* else: a block the next allocator made before we knew it, freed while it is being
	 * resolved: cannot happen (nothing had it before resolution); leaked if it does. */
}

PRELOAD_API void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = preload__resolved() ? preload__next.calloc(n, size)
				      : preload__arena_alloc(16, total);
	preload__alloc(p, total);
	return p;
}

/* realloc of an arena block: a new block of the next allocator, the old one stays. */
static void *preload__realloc_arena(void *old, size_t n)
{
	if (n == 0)
		return NULL;
	void *p = preload__resolved() ? preload__next.malloc(n) : preload__arena_alloc(16, n);
	if (p) {
		size_t old_n = preload__arena_size(old);
		memcpy(p, old, old_n < n ? old_n : n);
	}
	return p;
}

PRELOAD_API void *realloc(void *old, size_t n)
{
	void *p;
	if (old && preload__in_arena(old))
		p = preload__realloc_arena(old, n);
	else if (preload__resolved())
		p = preload__next.realloc(old, n);
	else
		p = old ? NULL : preload__arena_alloc(16, n);
	/* realloc(p, 0) frees p and returns NULL; a failed realloc leaves old as it was. */
	if (p || (old && n == 0))
		preload__free(old);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *reallocarray(void *old, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, total);
}

PRELOAD_API int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	void *p;
	if (preload__resolved()) {
		int rc = preload__next.posix_memalign(&p, align, n);
		if (rc)
			return rc;
	} else if (!(p = preload__arena_alloc(align, n))) {
		return ENOMEM;
	}
	preload__alloc(p, n);
	*out = p;
	return 0;
}

PRELOAD_API void *aligned_alloc(size_t align, size_t n)
{
	void *p = preload__resolved() && preload__next.aligned_alloc
			  ? preload__next.aligned_alloc(align, n)
			  : preload__aligned(align, n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *memalign(size_t align, size_t n)
{
	void *p;
	if (preload__resolved() && preload__next.memalign) {
		p = preload__next.memalign(align, n);
	} else {
		/* glibc's rule: an alignment that is not a power of two is rounded up to one. */
		size_t a = 1;
		while (a < align && a < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
			a <<= 1;
		p = preload__aligned(a, n);
	}
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *valloc(size_t n)
{
	void *p = preload__resolved() && preload__next.valloc
			  ? preload__next.valloc(n)
			  : preload__aligned(preload__page(), n);
	preload__alloc(p, n);
	return p;
}

PRELOAD_API void *pvalloc(size_t n)
{
	void *p;
	if (preload__resolved() && preload__next.pvalloc) {
		p = preload__next.pvalloc(n);
	} else {
		size_t pg = preload__page();
		if (n > SIZE_MAX - pg) {
			errno = ENOMEM;
			return NULL;
		}
		p = preload__aligned(pg, n ? (n + pg - 1) & ~(pg - 1) : pg);
	}
	preload__alloc(p, n);
	return p;
}

PRELOAD_API size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (preload__in_arena(p))
		return preload__arena_size(p);
	if (preload__resolved() && preload__next.usable_size)
		return preload__next.usable_size(p);
	return 0;
}
