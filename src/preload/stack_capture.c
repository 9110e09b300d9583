/* stack_capture.c - call stacks of allocations, captured in the allocating thread
 * (libtrc-preload.so).
 *
 * The unwinder is libunwind's unw_backtrace (its fast trace cache, per thread), loaded with
 * dlopen(RTLD_LOCAL) by the constructor: linked into this library, libunwind's own
 * _Unwind_* and backtrace definitions would come first in the program's symbol order and take
 * over C++ exception unwinding from libgcc. Frame pointers are not used: the programs people
 * run and the libraries they use are built without them, where a frame-pointer walk stops
 * after one frame.
 *
 * Three layers, each the calling thread's own (a per-thread arena, below):
 *   1. The cache: a stack is the same as the one captured before from the same frame of this
 *      file (the same stack pointer here and return address into the hook) when every slot
 *      that held one of its return addresses still holds it. A hit reads those slots (never
 *      writes to the stack) and returns the id at once; a miss unwinds. The slots are found
 *      on the miss by looking upward from here for each return address in turn, within the
 *      thread's stack; a stale copy of a return address below its true slot could make a
 *      later, different stack look the same, so one hit in PRELOAD_RECHECK_EVERY unwinds
 *      anyway and replaces the entry when the stacks differ (TRC_STACK_VERIFY=1 unwinds on
 *      every hit and says on stderr when the cache was wrong: the tests run with it). The
 *      search stays inside the mapping that holds the stack (read from /proc/self/maps when
 *      the stack is another than last time: a thread's first capture, a signal handler on an
 *      alternate stack, a coroutine's own stack), so it never reads past the stack's end.
 *   2. The table: a hash of the frames -> the thread's id for them. A new stack gets the next
 *      id and its STACK record (trc__stack_emit); the id is kept only once the record is in
 *      the ring. A table three-quarters full starts again from id 1 (ids are redefined by
 *      their next STACK record: session_layout.h), so the recorder's map of a thread's ids
 *      stays small. Two stacks with the same 64-bit hash would share an id.
 *   3. Sampling (TRC_ALLOC_STACKS=sample=BYTES): the bytes until the next sampled allocation
 *      are drawn from an exponential distribution of mean BYTES (Poisson sampling of bytes),
 *      so an allocation of n bytes is sampled with probability 1 - exp(-n / BYTES), every one
 *      of BYTES or more always: readers weigh a sampled stack's bytes by the inverse.
 *
 * The arena is private anonymous memory that the kernel zeroes in a forked child
 * (MADV_WIPEONFORK): the child's ring is a new one, which has defined none of the parent's
 * ids, and a zeroed arena starts the child's tables afresh. A thread's arena is unmapped by
 * its key's destructor; an allocation after that (a later destructor) gets no stack.
 *
 * The capture's own allocations are not the program's and are not recorded: libunwind's
 * thread-local storage (it is loaded with dlopen, so each thread's first unwind allocates a
 * block for it) and the thread-specific data of the arena's key, both made when a thread's
 * arena is set up (preload__own). Their frees, at the thread's exit, are recorded as frees of
 * blocks the trace never saw allocated.
 *
 * Threads: any, each on its own arena. A signal handler that allocates while its thread is in
 * here is recorded without a stack (preload__busy), unless it interrupted the arena's set-up
 * (then it is taken for the capture's own).
 */
#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stack_capture.h"
#include "trc.h"

#define PRELOAD_TABLE_SLOTS 4096u
#define PRELOAD_TABLE_FULL (PRELOAD_TABLE_SLOTS / 4 * 3)
#define PRELOAD_CACHE_ENTRIES 64u
#define PRELOAD_CACHE_WAYS 4u
/* How far above the previous slot a return address is looked for: a frame larger than this
 * (a big local array) makes its stack uncacheable, not wrong. */
#define PRELOAD_SCAN_BYTES (64u << 10)
#define PRELOAD_RECHECK_EVERY 64u
#define PRELOAD_UNW_CACHE_ENTRIES 32u
/* unw_backtrace's buffer: the cap, the frames of this library and the unwinder before the
 * program's, and one more to see that the stack went on past the cap. */
#define PRELOAD_SKIP_MAX 15u
#define PRELOAD_BUF_FRAMES (TRC_STACK_DEPTH_MAX + PRELOAD_SKIP_MAX + 1u)

int preload__stack_mode = 1;
static uint32_t preload__depth = TRC_STACK_DEPTH_DEFAULT;
static double preload__sample_bytes;
static bool preload__verify;
static int (*preload__unw_backtrace)(void **buf, int size);
/* The text of this library and of libunwind: leading frames inside them are not the
 * program's. */
static uintptr_t preload__self_lo, preload__self_hi, preload__unw_lo, preload__unw_hi;
static pthread_key_t preload__key;
static bool preload__key_ok;
/* Hits the periodic unwind found wrong (the cache replaced them). */
static atomic_ulong preload__cache_wrong;

struct preload_table_slot {
	uint64_t hash; /* 0: empty */
	uint32_t id;
	uint32_t n;
};

/* A cached stack; slot_off[] (u32, offsets of the slots from here) and ip[] follow it. */
struct preload_cache_entry {
	uintptr_t here, ra;
	uint32_t n, flags, id, epoch, hits, pad;
};

struct preload_arena {
	uint32_t ready; /* 0: new, or zeroed in a forked child */
	uint32_t next_id;
	uint32_t used;
	uint32_t epoch; /* table generation: cache entries of another one re-intern */
	uint32_t victim; /* the next way a full set replaces */
	uintptr_t stack_lo, stack_hi;
	int64_t sample_left;
	uint64_t rng;
	struct preload_table_slot table[PRELOAD_TABLE_SLOTS];
	uint64_t buf[PRELOAD_BUF_FRAMES];
	unsigned char cache[]; /* PRELOAD_CACHE_ENTRIES entries of preload__entry_bytes */
};

#define PRELOAD_DEAD ((struct preload_arena *)1)

static __thread struct preload_arena *preload__arena_tls
	__attribute__((tls_model("initial-exec")));
__thread uint8_t preload__busy __attribute__((tls_model("initial-exec")));
__thread uint8_t preload__own __attribute__((tls_model("initial-exec")));

static size_t preload__entry_bytes(void)
{
	size_t b = sizeof(struct preload_cache_entry) + preload__depth * (4u + 8u);
	return (b + 7) & ~(size_t)7;
}

static size_t preload__arena_bytes(void)
{
	size_t b = sizeof(struct preload_arena) + PRELOAD_CACHE_ENTRIES * preload__entry_bytes();
	return (b + 4095) & ~(size_t)4095;
}

static struct preload_cache_entry *preload__entry(struct preload_arena *a, unsigned i)
{
	return (struct preload_cache_entry *)(a->cache + (size_t)i * preload__entry_bytes());
}

static uint32_t *preload__entry_off(struct preload_cache_entry *e)
{
	return (uint32_t *)(e + 1);
}

static uint64_t *preload__entry_ip(struct preload_cache_entry *e)
{
	return (uint64_t *)((unsigned char *)(e + 1) + ((preload__depth * 4u + 7u) & ~7u));
}

static uint64_t preload__mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t preload__hash(const uint64_t *f, uint32_t n, uint32_t flags)
{
	uint64_t h = preload__mix(0x9e3779b97f4a7c15ull ^ n ^ (uint64_t)flags << 32);
	for (uint32_t i = 0; i < n; i++)
		h = preload__mix(h ^ f[i]) + i;
	return h | 1; /* 0 marks an empty slot */
}

static void preload__arena_gone(void *p)
{
	struct preload_arena *a = p;
	if (a && a != PRELOAD_DEAD)
		munmap(a, preload__arena_bytes());
	preload__arena_tls = PRELOAD_DEAD;
}

/* Exponential with mean preload__sample_bytes, from the thread's xorshift64*. */
static int64_t preload__next_sample(struct preload_arena *a)
{
	a->rng ^= a->rng >> 12;
	a->rng ^= a->rng << 25;
	a->rng ^= a->rng >> 27;
	uint64_t r = a->rng * 0x2545f4914f6cdd1dull;
	double u = ((double)(r >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
	double x = -log(u) * preload__sample_bytes;
	return x > 9e18 ? INT64_MAX : (int64_t)x + 1;
}

/* The mapping that holds addr, from /proc/self/maps read into a buffer on the stack (no
 * allocation: this runs inside the program's malloc). */
static bool preload__mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[4096];
	size_t have = 0;
	bool found = false, eof = false;
	while (!found && !(eof && have == 0)) {
		if (!eof && have < sizeof(buf)) {
			ssize_t got = read(fd, buf + have, sizeof(buf) - have);
			if (got <= 0)
				eof = true;
			else
				have += (size_t)got;
		}
		char *nl = memchr(buf, '\n', have);
		size_t line = nl ? (size_t)(nl - buf) + 1 : (eof ? have : 0);
		if (!line) {
			have = 0; /* a line longer than the buffer: not a stack's */
			continue;
		}
		uintptr_t a = 0, b = 0;
		size_t i = 0;
		for (; i < line && isxdigit((unsigned char)buf[i]); i++)
			a = a * 16 + (uintptr_t)(isdigit((unsigned char)buf[i]) ? buf[i] - '0'
										: (buf[i] | 0x20) - 'a' + 10);
		if (i < line && buf[i] == '-')
			for (i++; i < line && isxdigit((unsigned char)buf[i]); i++)
				b = b * 16 + (uintptr_t)(isdigit((unsigned char)buf[i])
								 ? buf[i] - '0'
								 : (buf[i] | 0x20) - 'a' + 10);
		if (addr >= a && addr < b) {
			*lo = a;
			*hi = b;
			found = true;
		}
		memmove(buf, buf + line, have - line);
		have -= line;
	}
	close(fd);
	return found;
}

static void preload__arena_setup(struct preload_arena *a)
{
	a->stack_lo = a->stack_hi = 0;
	const char *seed = getenv("TRC_STACK_SEED");
	a->rng = preload__mix(seed ? strtoull(seed, NULL, 0)
				   : trc_mono_ns() ^ (uint64_t)gettid() << 32) | 1;
	a->sample_left = preload__stack_mode == 2 ? preload__next_sample(a) : 0;
	a->next_id = 0;
	a->used = 0;
	a->epoch = 1;
	a->ready = 1;
}

static struct preload_arena *preload__arena(void)
{
	struct preload_arena *a = preload__arena_tls;
	if (a == PRELOAD_DEAD)
		return NULL;
	if (!a) {
		void *m = mmap(NULL, preload__arena_bytes(), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		/* Without it a forked child would use its parent's ids on a ring that never
		 * defined them; the recorder would then record its allocations without stacks
		 * (session_stacks.c), never with wrong ones. */
		(void)madvise(m, preload__arena_bytes(), MADV_WIPEONFORK);
		a = m;
		preload__arena_tls = a;
		/* What allocates for the capture itself does it now, once per thread, and is not
		 * recorded: the key's thread-specific data, the unwinder's thread-local storage
		 * (it is loaded with dlopen: each thread's first use allocates a block for it). */
		preload__own = 1;
		atomic_signal_fence(memory_order_seq_cst);
		if (preload__key_ok)
			(void)pthread_setspecific(preload__key, a);
		(void)preload__unw_backtrace((void **)a->buf, 2);
		atomic_signal_fence(memory_order_seq_cst);
		preload__own = 0;
	}
	if (!a->ready)
		preload__arena_setup(a);
	return a;
}

/* The thread's id for the stack, writing its STACK record when it is new; 0 when it could not
 * be written. */
static uint32_t preload__intern(struct preload_arena *a, const uint64_t *f, uint32_t n,
				uint32_t flags)
{
	uint64_t h = preload__hash(f, n, flags);
	uint32_t i = (uint32_t)h & (PRELOAD_TABLE_SLOTS - 1);
	for (;; i = (i + 1) & (PRELOAD_TABLE_SLOTS - 1)) {
		struct preload_table_slot *s = &a->table[i];
		if (s->hash == h && s->n == n)
			return s->id;
		if (!s->hash)
			break;
	}
	if (a->used >= PRELOAD_TABLE_FULL) {
		memset(a->table, 0, sizeof(a->table));
		a->used = 0;
		a->next_id = 0;
		a->epoch++;
		i = (uint32_t)h & (PRELOAD_TABLE_SLOTS - 1);
	}
	uint32_t id = a->next_id + 1;
	if (!trc__stack_emit(id, flags, f, n))
		return 0;
	a->next_id = id;
	a->table[i] = (struct preload_table_slot){h, id, n};
	a->used++;
	return id;
}

/* Finds the slot of each of the n return addresses above here, in order, within the thread's
 * stack; false when one is not there (the entry is then not cached). */
static bool preload__find_slots(struct preload_arena *a, uintptr_t here, const uint64_t *f,
				uint32_t n, uint32_t *off)
{
	if (here < a->stack_lo || here >= a->stack_hi) {
		/* Another stack than last time (the first capture, a signal handler on its
		 * alternate stack, a coroutine's): its mapping bounds the search. */
		if (!preload__mapping_of(here, &a->stack_lo, &a->stack_hi))
			return false;
	}
	uintptr_t pos = here + 16; /* past this function's saved frame pointer and return */
	for (uint32_t i = 0; i < n; i++) {
		uintptr_t lim = pos + PRELOAD_SCAN_BYTES;
		if (lim > a->stack_hi - 8 || lim < pos)
			lim = a->stack_hi - 8;
		while (pos <= lim && *(const uint64_t *)pos != f[i])
			pos += 8;
		if (pos > lim || pos - here > UINT32_MAX)
			return false;
		off[i] = (uint32_t)(pos - here);
		pos += 8;
	}
	return true;
}

/* The first entry of the set of (here, ra). */
static unsigned preload__cache_set(uintptr_t here, uintptr_t ra)
{
	return (unsigned)(preload__mix(here ^ ra * 31) %
			  (PRELOAD_CACHE_ENTRIES / PRELOAD_CACHE_WAYS)) * PRELOAD_CACHE_WAYS;
}

/* The entry a missed stack replaces: an empty way, else another key's (the ways of this key
 * hold its other stacks, likely to come back), else the next in turn. */
static struct preload_cache_entry *preload__cache_victim(struct preload_arena *a, unsigned set,
							  uintptr_t here, uintptr_t ra)
{
	struct preload_cache_entry *other = NULL;
	for (unsigned w = 0; w < PRELOAD_CACHE_WAYS; w++) {
		struct preload_cache_entry *e = preload__entry(a, set + w);
		if (e->n == 0)
			return e;
		if (!other && (e->here != here || e->ra != ra))
			other = e;
	}
	return other ? other : preload__entry(a, set + (a->victim++ % PRELOAD_CACHE_WAYS));
}

/* The cached id when the stack is the cached one; 0 when it is not, or must be unwound. */
static uint32_t preload__cache_hit(struct preload_arena *a, struct preload_cache_entry *e,
				   uintptr_t here, uintptr_t ra, bool *recheck)
{
	*recheck = false;
	if (e->here != here || e->ra != ra || e->n == 0)
		return 0;
	const uint32_t *off = preload__entry_off(e);
	const uint64_t *ip = preload__entry_ip(e);
	for (uint32_t i = 0; i < e->n; i++)
		if (*(const volatile uint64_t *)(here + off[i]) != ip[i])
			return 0;
	if (preload__verify || ++e->hits % PRELOAD_RECHECK_EVERY == 0) {
		*recheck = true;
		return 0;
	}
	if (e->epoch != a->epoch) {
		uint32_t id = preload__intern(a, ip, e->n, e->flags);
		if (!id)
			return 0;
		e->id = id;
		e->epoch = a->epoch;
	}
	return e->id;
}

static bool preload__in(uintptr_t ip, uintptr_t lo, uintptr_t hi)
{
	return ip >= lo && ip < hi;
}

bool preload_stack_in_unwinder(uintptr_t ip)
{
	return preload__in(ip, preload__unw_lo, preload__unw_hi);
}

__attribute__((noinline)) uint32_t preload_stack_id_slow(size_t size)
{
	if (preload__own)
		return PRELOAD_STACK_OWN;
	if (preload__busy || !preload__unw_backtrace || !trc__mode_load())
		return 0; /* nested in a capture: a signal handler's, recorded without a stack */
	preload__busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	uint32_t id = 0;
	struct preload_arena *a = preload__arena();
	if (!a)
		goto out;
	if (preload__stack_mode == 2) {
		a->sample_left -= (int64_t)(size < INT64_MAX ? size : INT64_MAX);
		if (a->sample_left > 0 && (double)size < preload__sample_bytes)
			goto out;
		if (a->sample_left <= 0)
			a->sample_left = preload__next_sample(a);
	}
	/* This function keeps a frame pointer (here, __builtin_frame_address): its saved
	 * frame pointer and return address are the two words at here. */
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	/* Several stacks reach here from the same stack pointer and return address (the calls
	 * of one function from its callers at one depth): PRELOAD_CACHE_WAYS entries per key. */
	struct preload_cache_entry *e = NULL;
	bool recheck = false;
	unsigned set = preload__cache_set(here, ra);
	for (unsigned w = 0; w < PRELOAD_CACHE_WAYS; w++) {
		struct preload_cache_entry *ew = preload__entry(a, set + w);
		id = preload__cache_hit(a, ew, here, ra, &recheck);
		if (id)
			goto out;
		if (recheck) {
			e = ew;
			break;
		}
	}
	if (!e)
		e = preload__cache_victim(a, set, here, ra);

	int got = preload__unw_backtrace((void **)a->buf, (int)(preload__depth + PRELOAD_SKIP_MAX + 1));
	uint32_t skip = 0;
	while (skip < (uint32_t)(got > 0 ? got : 0) && skip < PRELOAD_SKIP_MAX &&
	       (preload__in(a->buf[skip], preload__self_lo, preload__self_hi) ||
		preload__in(a->buf[skip], preload__unw_lo, preload__unw_hi)))
		skip++;
	/* This library's frames further out (its __libc_start_main and dlopen hooks) are not
	 * the program's either: left out. */
	uint32_t kept = skip;
	for (uint32_t i = skip; i < (uint32_t)(got > 0 ? got : 0); i++)
		if (!preload__in(a->buf[i], preload__self_lo, preload__self_hi))
			a->buf[kept++] = a->buf[i];
	got = (int)kept;
	uint32_t n = got > (int)skip ? (uint32_t)got - skip : 0, flags = 0;
	if (n > preload__depth) {
		n = preload__depth;
		flags = TRC_STACK_TRUNCATED;
	}
	const uint64_t *f = a->buf + skip;
	if (recheck && memcmp(preload__entry_ip(e), f, (size_t)n * 8) != 0) {
		atomic_fetch_add_explicit(&preload__cache_wrong, 1, memory_order_relaxed);
		if (preload__verify) {
			static const char msg[] = "trc: stack cache returned a wrong stack\n";
			(void)!write(2, msg, sizeof(msg) - 1);
		}
	}
	id = preload__intern(a, f, n, flags);
	if (!id)
		goto out;
	if (recheck && e->n == n && memcmp(preload__entry_ip(e), f, (size_t)n * 8) == 0) {
		e->id = id;
		e->epoch = a->epoch;
		goto out; /* the same stack: the entry stays */
	}
	e->n = 0;
	if (n && preload__find_slots(a, here, f, n, preload__entry_off(e))) {
		memcpy(preload__entry_ip(e), f, (size_t)n * 8);
		e->here = here;
		e->ra = ra;
		e->flags = flags;
		e->id = id;
		e->epoch = a->epoch;
		e->hits = 0;
		e->n = n;
	}
out:
	atomic_signal_fence(memory_order_seq_cst);
	preload__busy = 0;
	return id;
}

struct preload__range_query {
	uintptr_t addr, lo, hi;
};

static int preload__range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct preload__range_query *q = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (q->addr >= lo && q->addr < hi) {
			q->lo = lo;
			q->hi = hi;
			return 1;
		}
	}
	return 0;
}

void preload_text_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	struct preload__range_query q = {(uintptr_t)addr, 0, 0};
	dl_iterate_phdr(preload__range_cb, &q);
	*lo = q.lo;
	*hi = q.hi;
}

void preload_stack_init(void)
{
	const char *mode = getenv(TRC_ALLOC_STACKS_ENV);
	if (mode && strcmp(mode, "none") == 0) {
		preload__stack_mode = 0;
		return;
	}
	if (mode && strncmp(mode, "sample=", 7) == 0) {
		char *end;
		double b = strtod(mode + 7, &end);
		if (end != mode + 7 && *end == 0 && b >= 1) {
			preload__stack_mode = 2;
			preload__sample_bytes = b;
		}
	}
	const char *depth = getenv(TRC_STACK_DEPTH_ENV);
	if (depth) {
		unsigned long d = strtoul(depth, NULL, 10);
		if (d >= 1 && d <= TRC_STACK_DEPTH_MAX)
			preload__depth = (uint32_t)d;
	}
	const char *verify = getenv("TRC_STACK_VERIFY");
	preload__verify = verify && strcmp(verify, "1") == 0;
	/* Loaded apart (RTLD_LOCAL): its symbols stay out of the program's lookup order. What
	 * the loader allocates for it is not the program's (preload__own). */
	preload__own = 1;
	atomic_signal_fence(memory_order_seq_cst);
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	void *bt = h ? dlsym(h, "unw_backtrace") : NULL;
	if (bt) {
		/* Its first use opens a pipe it keeps (it validates addresses by writing them
		 * to it): a program started with stdin or stdout closed would find the pipe on
		 * that descriptor. Descriptors 0-2 are held while it opens it. */
		int held[3], nheld = 0;
		for (int fd = 0; fd < 3; fd++)
			if (fcntl(fd, F_GETFD) < 0) {
				int d = open("/dev/null", O_RDWR | O_CLOEXEC);
				if (d >= 0)
					held[nheld++] = d;
			}
		void *warm[2];
		(void)((int (*)(void **, int))bt)(warm, 2);
		while (nheld)
			close(held[--nheld]);
	}
	if (bt) {
		/* Per-thread caches: the unwinder takes no lock once a thread's cache is warm.
		 * Each thread's costs memory in the program (its default, 128 entries, is 256
		 * KiB): 32 entries hold the unwind rules of the functions an allocation-heavy
		 * thread keeps returning through; the trace cache in front of it does the rest.
		 * Set while the loader's and the unwinder's allocations are still the capture's
		 * own (preload__own). */
		void *policy = dlsym(h, "_ULx86_64_set_caching_policy");
		void *csize = dlsym(h, "_ULx86_64_set_cache_size");
		void **space = dlsym(h, "_ULx86_64_local_addr_space");
		if (policy && space)
			((int (*)(void *, int))policy)(*space, 2 /* UNW_CACHE_PER_THREAD */);
		if (csize && space)
			((int (*)(void *, size_t, int))csize)(*space, PRELOAD_UNW_CACHE_ENTRIES,
							       0);
		preload_text_range((const void *)preload_stack_id_slow, &preload__self_lo,
				   &preload__self_hi);
		preload_text_range(bt, &preload__unw_lo, &preload__unw_hi);
		preload__key_ok = pthread_key_create(&preload__key, preload__arena_gone) == 0;
	}
	atomic_signal_fence(memory_order_seq_cst);
	preload__own = 0;
	if (!bt) {
		preload__stack_mode = 0;
		return;
	}
	__atomic_store_n(&preload__unw_backtrace, (int (*)(void **, int))bt, __ATOMIC_RELEASE);
}
