/* session_create.c - making, describing and destroying a session region (recorder side).
 *
 * The region is a sealed memfd (session_layout.h). Creation writes the header, the slot table
 * (every ring_ctl initialised, every slot FREE, generation 0) and the string table's first entry,
 * calibrates the clock, and publishes the magic last with a release store, so a process that
 * sees the magic sees a complete layout. Ring pages are never touched here: the recorder's own
 * RSS stays small before it spawns the program (wait4's ru_maxrss carries it across exec).
 *
 * Threads: create/destroy and session_processes_running by the owner; session_region_bytes,
 * session_buffers_resident_bytes, session_buffers_peak_bytes, session_processes_attached,
 * session_fd and session_clock_info from any thread (they read shared counters and states with
 * relaxed loads: accounting, racy by nature).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_internal.h"

#define SESSION_DEFAULT_SLOTS 256u
#define SESSION_DEFAULT_RING (4ull << 20)
#define SESSION_DEFAULT_STRTAB (64u << 10)
#define SESSION_DEFAULT_RING_POOL (64ull << 20)
#define SESSION_DEFAULT_RING_WAIT_NS 10000000000ull
#define SESSION_MAX_PROCS 1024u
#define SESSION_CALIBRATE_NS 2000000ull

static const char session__full_name[] = "(string table full)";

/* The layout of the configured region (defaults for zeros). Returns 0 or -EINVAL. */
static int session__config(const struct session_config *cfg, struct trc_region_geom *g)
{
	uint32_t slots = cfg && cfg->max_slots ? cfg->max_slots : SESSION_DEFAULT_SLOTS;
	uint64_t ring = cfg && cfg->ring_bytes ? cfg->ring_bytes : SESSION_DEFAULT_RING;
	uint64_t strtab = cfg && cfg->strtab_bytes ? cfg->strtab_bytes : SESSION_DEFAULT_STRTAB;
	int e = trc_region_plan(g, slots, SESSION_MAX_PROCS, ring, strtab);
	if (!e) {
		g->ring_pool_bytes = cfg && cfg->ring_pool_bytes ? cfg->ring_pool_bytes
								 : SESSION_DEFAULT_RING_POOL;
		g->ring_wait_ns =
			cfg && cfg->ring_wait_ns ? cfg->ring_wait_ns : SESSION_DEFAULT_RING_WAIT_NS;
		if (cfg && cfg->drop_when_full)
			g->ring_wait_ns = 0; /* session_layout.h: 0 in the region means drop */
	}
	return e;
}

static bool session__want_tsc(const struct session_config *cfg)
{
	const char *env = getenv(TRC_CLOCK_ENV);
	if ((cfg && cfg->force_clock_gettime) || (env && strcmp(env, "gettime") == 0))
		return false;
	return trc_clock_tsc_invariant();
}

static void session__init_clock(struct trc_session *s, const struct session_config *cfg)
{
	s->geom.clock_mode = TRC_CLOCK_GETTIME;
	if (!session__want_tsc(cfg))
		return;
	struct trc_clock_pair b;
	trc_clock_read_pair(&s->anchor);
	do
		trc_clock_read_pair(&b);
	while (b.ns - s->anchor.ns < SESSION_CALIBRATE_NS);
	if (trc_clock_fit(&s->conv_cur, &s->anchor, &b) != 0)
		return;
	s->conv_prev = s->conv_cur;
	s->last_refit_ns = b.ns;
	atomic_store_explicit(&s->tsc_hz, trc_clock_hz(&s->conv_cur), memory_order_relaxed);
	s->geom.clock_mode = TRC_CLOCK_TSC;
}

static void session__init_region(struct trc_session *s)
{
	struct trc_region_hdr *h = s->hdr;
	trc_region_hdr_init(h, &s->geom);
	h->tsc_hz = atomic_load_explicit(&s->tsc_hz, memory_order_relaxed);
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		struct trc_slot *sl = session__slot(s, i);
		atomic_init(&sl->state, TRC_SLOT_WORD(0, TRC_SLOT_FREE));
		(void)ring_ctl_init(&sl->ctl, s->geom.ring_bytes, 0);
	}
	/* Entry 0 (id 1): what a name gets when the table is full. */
	uint8_t *e = trc_region_strtab(s->base, &s->geom);
	uint32_t len = sizeof(session__full_name) - 1;
	memcpy(e + 8, session__full_name, len + 1);
	atomic_store_explicit((_Atomic uint32_t *)(void *)e, len | TRC_STRTAB_READY,
			      memory_order_relaxed);
	atomic_init(&h->strtab_used, trc_strtab_entry_bytes(len));
}

/* The header as a process attaching will see it passes the check it will make (so a region
 * the runtime refuses is never published) and describes exactly the recorder's own layout. */
static int session__check_own_header(const struct trc_session *s)
{
	struct trc_region_hdr copy;
	struct trc_region_geom g;
	trc_region_hdr_read(&copy, s->hdr);
	atomic_store_explicit(&copy.magic, TRC_REGION_MAGIC, memory_order_relaxed);
	if (trc_region_geom_check(&g, &copy, s->geom.region_bytes) != 0 ||
	    memcmp(&g, &s->geom, sizeof(g)) != 0)
		return -EINVAL;
	return 0;
}

struct trc_session *session_create(const struct session_config *cfg, int *err)
{
	struct trc_region_geom geom;
	int e = session__config(cfg, &geom);
	if (e)
		goto out;
	e = -ENOMEM;
	struct trc_session *s = calloc(1, sizeof(*s));
	if (!s)
		goto out;
	s->fd = -1;
	s->geom = geom;
	s->name_seen_bits = geom.strtab_bytes / 8 + 2;
	s->slots = calloc(geom.max_slots, sizeof(*s->slots));
	s->trimmed = calloc(geom.max_slots, sizeof(*s->trimmed));
	s->self_hwm = calloc(geom.max_procs, sizeof(*s->self_hwm));
	s->self_buffers = calloc(geom.max_procs, sizeof(*s->self_buffers));
	s->sampled_max = calloc(geom.max_procs, sizeof(*s->sampled_max));
	s->sampled_buffers_max = calloc(geom.max_procs, sizeof(*s->sampled_buffers_max));
	s->proc_name = calloc(geom.max_procs, sizeof(*s->proc_name));
	s->name_seen = calloc(s->name_seen_bits / 8 + 1, 1);
	if (!s->slots || !s->trimmed || !s->self_hwm || !s->self_buffers || !s->sampled_max ||
	    !s->sampled_buffers_max || !s->proc_name || !s->name_seen)
		goto free_s;

	s->fd = memfd_create("trc-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->fd < 0) {
		e = -errno;
		goto free_s;
	}
	if (ftruncate(s->fd, (off_t)geom.region_bytes) < 0 ||
	    fcntl(s->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		e = -errno;
		goto free_s;
	}
	void *base = mmap(NULL, geom.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (base == MAP_FAILED) {
		e = -errno;
		goto free_s;
	}
	s->base = base;
	s->hdr = base;
	s->created_ns = trc_mono_ns();
	session__init_clock(s, cfg);
	session__init_region(s);
	struct stat ns;
	s->hdr->pid_ns = stat("/proc/self/ns/pid", &ns) == 0 ? (uint64_t)ns.st_ino : 0;
	e = session__check_own_header(s);
	if (e)
		goto free_s;
	s->next_key = SESSION_META_KEY + 1;
	s->meta.key = SESSION_META_KEY;
	s->meta.kind = TRC_STREAM_META;
	s->last_reap_ns = trc_mono_ns();
	s->region_lost_seen_ns = s->last_reap_ns;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	s->cpus = cpus > 0 ? (uint32_t)cpus : 1;
	/* Publishes the region: pairs with the acquire load of magic in trc_attach. */
	atomic_store_explicit(&s->hdr->magic, TRC_REGION_MAGIC, memory_order_release);
	return s;

free_s:
	session_destroy(s);
out:
	if (err)
		*err = e;
	return NULL;
}

uint64_t session_region_bytes(const struct session_config *cfg)
{
	struct trc_region_geom g;
	return session__config(cfg, &g) == 0 ? g.region_bytes : 0;
}

int session_fd(const struct trc_session *s)
{
	return s->fd;
}

uint32_t session_processes_attached(const struct trc_session *s)
{
	return atomic_load_explicit(&s->hdr->procs_attached, memory_order_relaxed);
}

uint32_t session_processes_running(const struct trc_session *s, pid_t except, pid_t *pids,
				   uint32_t max)
{
	const uint32_t used = session__procs_used(s);
	uint32_t n = 0;
	for (uint32_t i = 0; i < used; i++) {
		struct trc_proc *pe = session__proc(s, i);
		/* Untrusted: a number, checked against the kernel, never believed on its own. */
		uint32_t pid = atomic_load_explicit(&pe->pid, memory_order_acquire);
		if (pid <= 1 || pid > INT32_MAX || (pid_t)pid == except || (pid_t)pid == getpid() ||
		    atomic_load_explicit(&pe->dead, memory_order_relaxed))
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			continue;
		bool seen = false;
		for (uint32_t k = 0; k < n && k < max; k++)
			seen |= pids[k] == (pid_t)pid;
		if (seen)
			continue;
		if (n < max)
			pids[n] = (pid_t)pid;
		n++;
	}
	return n;
}

void session_clock_info(const struct trc_session *s, struct session_clock_info *out)
{
	out->clock_source = s->geom.clock_mode;
	out->tsc_hz = s->geom.clock_mode == TRC_CLOCK_TSC
			      ? atomic_load_explicit(&((struct trc_session *)s)->tsc_hz,
						     memory_order_relaxed)
			      : 0;
}

uint64_t session_buffers_resident_bytes(struct trc_session *s, pid_t pid)
{
	uint64_t rings = 0, procs = 0;
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		struct trc_slot *sl = session__slot(s, i);
		uint32_t st =
			TRC_SLOT_STATE(atomic_load_explicit(&sl->state, memory_order_relaxed));
		/* The claimer publishes what it faulted in; the recorder punches it out when it
		 * frees the slot (session_layout.h "Residency"). */
		if (st == TRC_SLOT_FREE || st > TRC_SLOT_RETIRED)
			continue;
		uint32_t owner = __atomic_load_n(&sl->pid, __ATOMIC_RELAXED);
		uint64_t n = atomic_load_explicit(&sl->resident_bytes, memory_order_relaxed);
		uint64_t gone = atomic_load_explicit(&s->trimmed[i], memory_order_relaxed);
		if (n > s->geom.ring_bytes)
			n = s->geom.ring_bytes;
		if (pid == 0 || owner == (uint32_t)pid)
			rings += n > gone ? n - gone : 0;
	}
	const uint32_t used = session__procs_used(s);
	for (uint32_t i = 0; i < used; i++) {
		struct trc_proc *pe = session__proc(s, i);
		uint32_t p = atomic_load_explicit(&pe->pid, memory_order_relaxed);
		if (!p || atomic_load_explicit(&pe->dead, memory_order_relaxed))
			continue;
		if (pid == 0)
			procs++;
		else if (p == (uint32_t)pid)
			procs = 1;
	}
	return rings + procs * s->geom.rings_off;
}

uint64_t session_buffers_peak_bytes(struct trc_session *s, pid_t pid)
{
	uint64_t peak = 0;
	const uint32_t used = session__procs_used(s);
	for (uint32_t i = 0; i < used; i++) {
		struct trc_proc *pe = session__proc(s, i);
		if (atomic_load_explicit(&pe->pid, memory_order_acquire) != (uint32_t)pid)
			continue;
		uint64_t b = atomic_load_explicit(&pe->buffers_peak, memory_order_relaxed);
		if (b > peak)
			peak = b;
	}
	return peak;
}

/* Raises *cell to v (one writer: the drain thread). */
static void session__raise(_Atomic uint64_t *cell, uint64_t v)
{
	if (v > atomic_load_explicit(cell, memory_order_relaxed))
		atomic_store_explicit(cell, v, memory_order_relaxed);
}

void session_note_sample(struct trc_session *s, pid_t pid, uint64_t rss_bytes,
			 uint64_t buffers_bytes)
{
	const uint32_t used = session__procs_used(s);
	for (uint32_t i = used; i-- > 0;) { /* the latest image of pid registered last */
		if (atomic_load_explicit(&session__proc(s, i)->pid, memory_order_acquire) !=
		    (uint32_t)pid)
			continue;
		session__raise(&s->sampled_max[i],
			       rss_bytes > buffers_bytes ? rss_bytes - buffers_bytes : 0);
		session__raise(&s->sampled_buffers_max[i], buffers_bytes);
		return;
	}
}

void session_self_hwm(struct trc_session *s, pid_t pid, uint64_t others_max_bytes,
		      struct session_self_hwm *out)
{
	memset(out, 0, sizeof(*out));
	const uint32_t used = session__procs_used(s);
	for (uint32_t i = 0; i < used; i++) {
		uint64_t h = atomic_load_explicit(&s->self_hwm[i], memory_order_relaxed);
		if (!h)
			continue;
		uint64_t b = atomic_load_explicit(&s->self_buffers[i], memory_order_relaxed);
		uint32_t who =
			atomic_load_explicit(&session__proc(s, i)->pid, memory_order_acquire);
		if (who == (uint32_t)pid) {
			if (h > out->own_bytes) {
				out->own_bytes = h;
				out->own_buffers_bytes = b;
			}
		} else if (h > others_max_bytes) {
			if (h > out->refused_bytes) {
				out->refused_bytes = h;
				out->refused_pid = (pid_t)who;
			}
		} else if (h > out->others_bytes) {
			out->others_bytes = h;
			out->others_buffers_bytes = b;
			out->others_pid = (pid_t)who;
		}
	}
	/* The samples of both pids, over all their images. */
	for (uint32_t i = 0; i < used; i++) {
		uint32_t who =
			atomic_load_explicit(&session__proc(s, i)->pid, memory_order_acquire);
		uint64_t m = atomic_load_explicit(&s->sampled_max[i], memory_order_relaxed);
		uint64_t b = atomic_load_explicit(&s->sampled_buffers_max[i], memory_order_relaxed);
		if (who == (uint32_t)pid && b > out->own_sampled_buffers_max_bytes)
			out->own_sampled_buffers_max_bytes = b;
		if (!out->others_pid || who != (uint32_t)out->others_pid)
			continue;
		if (m > out->others_sampled_max_bytes)
			out->others_sampled_max_bytes = m;
		if (b > out->others_sampled_buffers_max_bytes)
			out->others_sampled_buffers_max_bytes = b;
	}
}

void session_process_name(const struct trc_session *s, pid_t pid, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	const uint32_t used = session__procs_used(s);
	/* The last entry of pid with a name: an exec'd image registers after the one it replaced.
	 */
	for (uint32_t i = used; i-- > 0;) {
		if (atomic_load_explicit(&session__proc(s, i)->pid, memory_order_acquire) !=
			    (uint32_t)pid ||
		    !s->proc_name[i][0])
			continue;
		snprintf(buf, len, "%s", s->proc_name[i]);
		return;
	}
}

void session_destroy(struct trc_session *s)
{
	if (!s)
		return;
	if (s->base)
		munmap(s->base, s->geom.region_bytes);
	if (s->fd >= 0)
		close(s->fd);
	session_stacks_free(s);
	free(s->tlost);
	free(s->slots);
	free((void *)s->trimmed);
	free((void *)s->self_hwm);
	free((void *)s->self_buffers);
	free((void *)s->sampled_max);
	free((void *)s->sampled_buffers_max);
	free(s->proc_name);
	free(s->name_seen);
	free(s);
}
