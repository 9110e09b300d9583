/* attach.c - finding and mapping the session region in a traced process.
 *
 * The recorder passes the region as an inherited memfd named in TRC_SESSION_FD. The library
 * attaches in a constructor (libtrc.so is initialised before the program and the preload
 * library), so the fast path needs no "attached yet?" state beyond trc__mode. The constructor
 * is cheap and allocation-free: secure_getenv, fcntl, fstat, mmap, madvise, pthread_key_create,
 * pthread_atfork; it emits nothing (the PROCESS/MODULE records are written by the first thread
 * that claims a slot, procinfo.c).
 *
 * Trust: the fd number comes from the environment, which any program may have edited or
 * inherited stale (a program that closed fd N and reused it). We attach only to a sealed memfd
 * whose header carries our magic and version and whose layout fits its size. The header is
 * shared with every traced process (any of which may scribble on it): it is read once, into a
 * private copy, and the copy is validated into trc__rt.geom (session_layout.h "geometry"),
 * from which every address is computed.
 *
 * fork: the child keeps the shared mapping but must never write to its parent's rings: the
 * atfork child handler forgets the forking thread's slot (the only thread in the child), records
 * the new pid and registers the child as a process of the session. exec: the new image finds the
 * variable and the fd again and attaches from scratch; the slots its previous image held (same
 * pid, all of its threads died in exec) are retired here so the recorder can free them.
 *
 * PID namespaces: in a container (or under unshare -p) this process's pids are its namespace's,
 * not the recorder's. Such a process writes them with TRC_PID_FOREIGN set, so the recorder never
 * tgkills or kills them, and it never retires slots by pid (a namesake in another namespace may
 * own them). Its slots are freed when its threads retire them.
 *
 * Two runtimes in one image: a program linked with libtrc.a, traced with the preload library
 * (which brings libtrc.so), holds two copies of this file, each with its own state and slots.
 * They tell each other from an exec'd predecessor by the image token (AT_RANDOM, the same for
 * both, new at every exec) kept in slots and process entries: a copy never retires the other's
 * slots, and the process is registered and described (PROCESS, MODULE records) once.
 *
 * Threads: trc_attach runs before any thread of this process emits (constructor, or the
 * program's own call); the fork child handler runs in the child's only thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

unsigned trc__mode;
struct trc__rt trc__rt = {.fd = -1};

void trc__populate_meta(void)
{
	/* Exactly [0, rings_off) becomes resident in this process (session_layout.h: what the
	 * recorder subtracts). */
	if (madvise(trc__rt.base, trc__rt.geom.rings_off, MADV_POPULATE_READ) == 0)
		return;
	for (uint64_t off = 0; off < trc__rt.geom.rings_off; off += TRC_REGION_PAGE)
		(void)*(volatile uint8_t *)(trc__rt.base + off);
}

/* Whether this process lives in another PID namespace than the recorder's (recorder_ns from
 * the header; unknown on either side counts as another: its pids are then never signalled). */
static bool trc__foreign_pid_ns(uint64_t recorder_ns)
{
	struct stat st;
	if (!recorder_ns || stat("/proc/self/ns/pid", &st) != 0)
		return true;
	return (uint64_t)st.st_ino != recorder_ns;
}

/* This program image's token: bytes the kernel chose at random for this exec (AT_RANDOM).
 * Every copy of the runtime in the image reads the same; an exec'd image gets new ones; a fork
 * child keeps them (its pid tells it apart). Never 0. */
static uint32_t trc__image_token(void)
{
	const uint8_t *r = (const uint8_t *)(uintptr_t)getauxval(AT_RANDOM);
	uint32_t v = 0;
	if (r)
		memcpy(&v, r + 8, sizeof(v)); /* glibc takes the stack guard from the first 8 */
	return v ? v : 1;
}

/* Registers this process in the region's process table. Returns false when another runtime of
 * this very image (libtrc.a in the program beside libtrc.so from the preload library) already
 * did: the process is then registered and described once, by that one. */
static bool trc__register_process(void)
{
	struct trc_region_hdr *h = trc__rt.hdr;
	uint32_t used = atomic_load_explicit(&h->procs_used, memory_order_relaxed);
	trc__rt.proc = 0;
	for (uint32_t i = 0; i < used && i < trc__rt.geom.max_procs; i++) {
		struct trc_proc *pe = trc_region_proc(trc__rt.base, &trc__rt.geom, i);
		if (atomic_load_explicit(&pe->pid, memory_order_acquire) == trc__rt.region_pid &&
		    __atomic_load_n(&pe->image, __ATOMIC_RELAXED) == trc__rt.image &&
		    !atomic_load_explicit(&pe->dead, memory_order_relaxed)) {
			trc__rt.proc = i + 1; /* its metadata is counted there already */
			return false;
		}
	}
	uint32_t idx = atomic_fetch_add_explicit(&h->procs_used, 1, memory_order_relaxed);
	/* An older entry with our pid is the image exec replaced (or a dead process whose pid
	 * was reused): it no longer maps anything. */
	for (uint32_t i = 0; i < idx && i < trc__rt.geom.max_procs; i++) {
		struct trc_proc *old = trc_region_proc(trc__rt.base, &trc__rt.geom, i);
		if (atomic_load_explicit(&old->pid, memory_order_relaxed) == trc__rt.region_pid)
			atomic_store_explicit(&old->dead, 1, memory_order_relaxed);
	}
	if (idx < trc__rt.geom.max_procs) {
		struct trc_proc *pe = trc_region_proc(trc__rt.base, &trc__rt.geom, idx);
		pe->ppid = (uint32_t)getppid();
		__atomic_store_n(&pe->image, trc__rt.image, __ATOMIC_RELAXED);
		trc__rt.proc = idx + 1;
		/* The metadata this process mapped as it attached (trc__populate_meta). */
		trc__buffers_add(trc__rt.geom.rings_off);
		/* Pairs with the recorder's acquire load of pid: ppid, image and the counts are
		 * written before. */
		atomic_store_explicit(&pe->pid, trc__rt.region_pid, memory_order_release);
	}
	atomic_fetch_add_explicit(&h->procs_attached, 1, memory_order_relaxed);
	return true;
}

/* This image's process entry, or NULL when the table was full. */
static struct trc_proc *trc__own_proc(void)
{
	if (!trc__rt.proc || trc__rt.proc > trc__rt.geom.max_procs)
		return NULL;
	return trc_region_proc(trc__rt.base, &trc__rt.geom, trc__rt.proc - 1);
}

void trc__buffers_add(uint64_t n)
{
	struct trc_proc *pe = trc__own_proc();
	if (!pe)
		return;
	/* One add returns the sum at that point of the counter's order: the peak taken from
	 * every add's sum is the most it ever was, concurrent adds and the recorder's subtractions
	 * included. */
	uint64_t now = atomic_fetch_add_explicit(&pe->buffers_now, n, memory_order_relaxed) + n;
	uint64_t peak = atomic_load_explicit(&pe->buffers_peak, memory_order_relaxed);
	while (peak < now &&
	       !atomic_compare_exchange_weak_explicit(&pe->buffers_peak, &peak, now,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

uint64_t trc__buffers_peak(void)
{
	struct trc_proc *pe = trc__own_proc();
	return pe ? atomic_load_explicit(&pe->buffers_peak, memory_order_relaxed) : 0;
}

/* Slots that still name this pid belong to the image exec replaced: its threads are gone. */
static void trc__retire_stale_slots(void)
{
	/* In another PID namespace a pid is not unique in the session (two containers both have
	 * a pid 1): leave slots alone rather than retire a namesake's live ring. */
	if (trc__rt.pid_tag)
		return;
	for (uint32_t i = 0; i < trc__rt.geom.max_slots; i++) {
		struct trc_slot *s = trc__slot(i);
		uint64_t w = atomic_load_explicit(&s->state, memory_order_acquire);
		/* Another runtime of this image (same token) holds live slots: not stale. */
		if (TRC_SLOT_STATE(w) != TRC_SLOT_CLAIMED ||
		    __atomic_load_n(&s->pid, __ATOMIC_RELAXED) != trc__rt.region_pid ||
		    __atomic_load_n(&s->image, __ATOMIC_RELAXED) == trc__rt.image)
			continue;
		/* Release: pairs with the recorder's acquire load of the state; the dead image's
		 * ring writes were published already. A failed CAS means the recorder moved it. */
		atomic_compare_exchange_strong_explicit(
			&s->state, &w, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_RETIRED),
			memory_order_release, memory_order_relaxed);
	}
}

void trc__atfork_child(void)
{
	if (!trc__mode_load())
		return;
	trc__thread_forget();
	/* The kernel zeroed the guard in this copy: this process is the attached one now. */
	__atomic_store_n(trc__rt.guard, 1, __ATOMIC_RELAXED);
	trc__rt.pid = getpid();
	trc__rt.region_pid = (uint32_t)trc__rt.pid | trc__rt.pid_tag;
	trc__procinfo_atfork_child();
	/* Shared mappings are not copied into the child's page tables: map the metadata again so
	 * the child's resident share is exactly what the recorder counts. */
	trc__populate_meta();
	/* Described once per process: by the first runtime copy whose handler runs. */
	trc__rt.describes = trc__register_process();
	trc__rt.meta_done = trc__rt.describes ? 0 : 1;
}

static int trc__parse_fd(const char *s)
{
	long v = 0;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 1000000)
			return -EINVAL;
		v = v * 10 + (*s - '0');
	}
	return (int)v;
}

int trc_attach(void)
{
	if (trc__mode_load())
		return 0;
	/* A privileged (setuid, setgid, capabilities) program does not trust its environment. */
	const char *env = secure_getenv(TRC_SESSION_FD_ENV);
	if (!env)
		return -ENOENT;
	int fd = trc__parse_fd(env);
	if (fd < 0)
		return fd;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0)
		return errno == EBADF ? -EBADF : -EINVAL;
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EINVAL;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)TRC_REGION_PAGE)
		return -EINVAL;
	uint64_t size = (uint64_t)st.st_size;
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	struct trc_region_hdr *h = base;
	/* Pairs with the recorder's release store of magic: the layout below is complete. */
	int err = -EPROTO;
	if (atomic_load_explicit(&h->magic, memory_order_acquire) != TRC_REGION_MAGIC)
		goto unmap;
	/* One read of the shared header, then only the copy (session_layout.h "geometry"). */
	struct trc_region_hdr copy;
	struct trc_region_geom geom;
	trc_region_hdr_read(&copy, h);
	err = trc_region_geom_check(&geom, &copy, size);
	if (err)
		goto unmap;
	if (!trc__rt.key_ok) {
		if (pthread_key_create(&trc__rt.key, trc__thread_exit) != 0) {
			err = -EAGAIN;
			goto unmap;
		}
		trc__rt.key_ok = true;
	}
	if (!trc__rt.atfork_ok) {
		if (pthread_atfork(NULL, NULL, trc__atfork_child) != 0) {
			err = -ENOMEM;
			goto unmap;
		}
		trc__rt.atfork_ok = true;
	}
	err = trc__guard_map(&geom);
	if (err)
		goto unmap;
	trc__rt.base = base;
	trc__rt.hdr = h;
	trc__rt.geom = geom;
	trc__rt.fd = fd;
	trc__rt.pid = getpid();
	trc__rt.pid_tag = trc__foreign_pid_ns(copy.pid_ns) ? TRC_PID_FOREIGN : 0;
	trc__rt.region_pid = (uint32_t)trc__rt.pid | trc__rt.pid_tag;
	trc__rt.image = trc__image_token();
	trc__populate_meta();
	trc__retire_stale_slots();
	/* A second runtime in this image (libtrc.a beside the preload library's libtrc.so)
	 * records its threads' events like the first, but the process is described once. */
	trc__rt.describes = trc__register_process();
	trc__rt.meta_done = trc__rt.describes ? 0 : 1;
	/* Release: a thread that sees the mode also sees trc__rt (the program's own threads are
	 * started after this anyway). */
	__atomic_store_n(&trc__mode, geom.clock_mode, __ATOMIC_RELEASE);
	return 0;
unmap:
	munmap(base, size);
	return err;
}

__attribute__((constructor)) static void trc__ctor(void)
{
	(void)trc_attach();
}
