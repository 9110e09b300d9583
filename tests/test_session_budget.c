/* test_session_budget.c - ring memory that does not grow with the thread count (session_layout.h
 * "Residency"): rings grow only as far as the drain lags and beyond their base only from the
 * region's pool, a full ring waits for the drain instead of dropping (and again, after a wait
 * that ran out, once its ring had room), idle rings give their pages back and take them again
 * without losing or corrupting a record, and the recorder's own mapping of the rings keeps a
 * bounded share of what it has read. In one process, as
 * test_session.c: the test creates the session, attaches, emits through trc.h and drains.
 * Criterion runs each test in its own process. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "runtime.h"
#include "session_internal.h"
#include "test_session_util.h"

/* A light sink (test_session_util's keeps every record): per stream, counters counted and
 * checked to come in order 0, 1, 2... (a give-back that lost or scribbled on a record breaks
 * that); lost counts summed. */
struct bt_collect {
	uint64_t counters, out_of_order, lost, thread_key;
	int64_t next[64];
	uint64_t keys[64];
	int nkeys;
};

static int bt_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct bt_collect *c = arg;
	if (r->type == TRC_REC_LOST)
		c->lost += r->lost.count;
	if (r->type != TRC_REC_COUNTER)
		return 0;
	int k = 0;
	while (k < c->nkeys && c->keys[k] != st->key)
		k++;
	if (k == c->nkeys) {
		cr_assert_lt(k, 64);
		c->keys[c->nkeys++] = st->key;
		c->next[k] = 0;
	}
	if (r->value.value != c->next[k])
		c->out_of_order++;
	c->next[k] = r->value.value + 1;
	c->counters++;
	return 0;
}

static long bt_drain(struct trc_session *s, struct bt_collect *c)
{
	struct session_sink k = {.arg = c, .record = bt_record};
	return session_drain(s, &k);
}

static void bt_drain_idle(struct trc_session *s, struct bt_collect *c)
{
	for (int idle = 0; idle < 2;)
		idle = bt_drain(s, c) == 0 ? idle + 1 : 0;
}

/* wait_ns: how long a thread with a full ring waits for a drain that makes no progress (0:
 * ts_start's 200 ms, for the tests whose drain never comes). */
static struct trc_session *bt_start_cfg(const struct session_config *cfg)
{
	int rc = -1;
	struct trc_session *s = ts_start(cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0, "trc_attach: %d", rc);
	return s;
}

static struct trc_session *bt_start_waiting(uint64_t ring, uint64_t pool, uint64_t wait_ns)
{
	struct session_config cfg = {.max_slots = 32,
				     .ring_bytes = ring,
				     .ring_pool_bytes = pool,
				     .ring_wait_ns = wait_ns};
	return bt_start_cfg(&cfg);
}

static struct trc_session *bt_start(uint64_t ring, uint64_t pool)
{
	return bt_start_waiting(ring, pool, 0);
}

static uint64_t bt_rings(struct trc_session *s)
{
	return session_buffers_resident_bytes(s, getpid()) - s->geom.rings_off;
}

/* Resident bytes of the mapping of the region at base, from the kernel: the rings' and the
 * metadata's before them (which a mapping need not have touched whole). */
static uint64_t bt_kernel_rss_at(const void *base)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	cr_assert_not_null(f);
	char line[512];
	int in = 0;
	uint64_t rss = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = start == (uintptr_t)base;
			continue;
		}
		unsigned long kb;
		if (in && sscanf(line, "Rss: %lu kB", &kb) == 1) {
			rss = kb * 1024;
			break;
		}
	}
	fclose(f);
	cr_assert_neq(rss, UINT64_MAX, "no mapping at %p in /proc/self/smaps", base);
	return rss;
}

/* Resident bytes of the rings in the mapping of the region at base, at least: its Rss less the
 * whole metadata (exact when all of it is resident; 0 when less than its size is). */
static uint64_t bt_kernel_rings_at(struct trc_session *s, const void *base)
{
	uint64_t rss = bt_kernel_rss_at(base);
	return rss > s->geom.rings_off ? rss - s->geom.rings_off : 0;
}

/* ... of the runtime's own mapping (the program's side). */
static uint64_t bt_kernel_rings(struct trc_session *s)
{
	return bt_kernel_rings_at(s, trc__rt.base);
}

Test(budget, ring_stays_at_its_head_while_the_drain_keeps_up, .timeout = 120)
{
	struct trc_session *s = bt_start(4 << 20, 0);
	struct bt_collect c = {0};
	/* 1000 counters (24 KB) between drains: at the end of the 64 KiB head the drain has
	 * left less than half of it, so the ring wraps there instead of growing. */
	for (int k = 0; k < 100; k++) {
		for (int i = 0; i < 1000; i++)
			TRC_COUNTER("c", k * 1000 + i);
		bt_drain_idle(s, &c);
	}
	cr_assert_eq(bt_rings(s), TRC_RING_PREFAULT_BYTES);
	cr_assert_eq(bt_kernel_rings(s), TRC_RING_PREFAULT_BYTES, "kernel: %lu",
		     (unsigned long)bt_kernel_rings(s));
	cr_assert_eq(c.counters, 100000);
	cr_assert_eq(c.lost, 0);
	cr_assert_eq(c.out_of_order, 0);
	session_destroy(s);
}

struct bt_burst {
	int n;
	pthread_barrier_t *bar; /* NULL: emit and exit */
	int rounds;
};

static void *bt_burst_main(void *p)
{
	struct bt_burst *b = p;
	int64_t v = 0;
	for (int r = 0; r < (b->rounds ? b->rounds : 1); r++) {
		for (int i = 0; i < b->n; i++)
			TRC_COUNTER("c", v++);
		if (b->bar) {
			pthread_barrier_wait(b->bar); /* burst done */
			pthread_barrier_wait(b->bar); /* checked: go on */
		}
	}
	return NULL;
}

/* k threads each burst n counters (one round); returns once every burst is written, the threads
 * alive and holding their rings (nothing drains meanwhile unless the caller does).
 * bt_bursts_end lets them exit and joins them. */
struct bt_bursts {
	int k;
	pthread_barrier_t bar;
	struct bt_burst b;
	pthread_t th[16];
};

static void bt_bursts_start(struct bt_bursts *x, int k, int n)
{
	cr_assert_leq(k, 16);
	x->k = k;
	pthread_barrier_init(&x->bar, NULL, (unsigned)k + 1);
	x->b = (struct bt_burst){.n = n, .bar = &x->bar};
	for (int i = 0; i < k; i++)
		pthread_create(&x->th[i], NULL, bt_burst_main, &x->b);
	pthread_barrier_wait(&x->bar);
}

static void bt_bursts_end(struct bt_bursts *x)
{
	pthread_barrier_wait(&x->bar);
	for (int i = 0; i < x->k; i++)
		pthread_join(x->th[i], NULL);
	pthread_barrier_destroy(&x->bar);
}

Test(budget, ring_grows_past_its_base_only_from_the_pool, .timeout = 120)
{
	enum { POOL = 256 << 10, N = 100000 }; /* 2.4 MB of counters, nothing drained */
	struct trc_session *s = bt_start(4 << 20, POOL);
	struct bt_bursts x;
	bt_bursts_start(&x, 1, N);
	/* The base, then the whole pool; then the full ring waited for a drain that never came
	 * (ts_start's ring_wait_ns) and dropped the rest. */
	cr_assert_eq(bt_rings(s), TRC_RING_BASE_BYTES + POOL);
	cr_assert_eq(bt_kernel_rings(s), TRC_RING_BASE_BYTES + POOL);
	cr_assert_eq(atomic_load(&s->hdr->ring_pool_used), POOL);
	bt_bursts_end(&x);
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	cr_assert_gt(c.lost, 0);
	cr_assert_eq(c.counters + c.lost, N);
	/* The thread exited: its slot freed, its pool bytes back, its pages gone. */
	cr_assert_eq(atomic_load(&s->hdr->ring_pool_used), 0);
	cr_assert_eq(bt_rings(s), 0);
	cr_assert_eq(bt_kernel_rings(s), 0);
	session_destroy(s);
}

/* This process's entry in s's process table (the test is the traced program). */
static struct trc_proc *bt_own_proc(const struct trc_session *s)
{
	cr_assert_gt(trc__rt.proc, 0, "the process has an entry");
	return session__proc(s, trc__rt.proc - 1);
}

/* The process entry's counts (session_layout.h "Residency"): now, what the slot scan says too;
 * the peak, what it said at its most, after the rings are gone. One thread fills its ring (the
 * base and the whole pool), exits, and its slot is freed: the count falls back to the metadata
 * while the peak keeps the ring. Then two threads at once: the peak is both rings (the base
 * each, the pool between them), though the samples' view (the scan) never shows more than one
 * at a time once they are gone. */
Test(budget, the_process_entry_counts_the_most_its_buffers_held, .timeout = 120)
{
	enum { POOL = 256 << 10, N = 100000 };
	struct trc_session *s = bt_start(4 << 20, POOL);
	const uint64_t meta = s->geom.rings_off;
	struct trc_proc *pe = bt_own_proc(s);
	cr_assert_eq(atomic_load(&pe->buffers_now), meta);
	cr_assert_eq(atomic_load(&pe->buffers_peak), meta);
	struct bt_bursts x;
	bt_bursts_start(&x, 1, N);
	const uint64_t one = meta + TRC_RING_BASE_BYTES + POOL;
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), one);
	cr_assert_eq(atomic_load(&pe->buffers_now), one);
	cr_assert_eq(atomic_load(&pe->buffers_peak), one);
	bt_bursts_end(&x);
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	/* Freed: the scan and the count agree again; the peak stays. */
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), meta);
	cr_assert_eq(atomic_load(&pe->buffers_now), meta);
	cr_assert_eq(session_buffers_peak_bytes(s, getpid()), one);

	bt_bursts_start(&x, 2, N);
	const uint64_t two = meta + 2 * TRC_RING_BASE_BYTES + POOL;
	cr_assert_eq(atomic_load(&pe->buffers_now), two);
	bt_bursts_end(&x);
	bt_drain_idle(s, &c);
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), meta);
	cr_assert_eq(atomic_load(&pe->buffers_now), meta);
	cr_assert_eq(session_buffers_peak_bytes(s, getpid()), two);
	session_destroy(s);
}

/* A slot's proc word is the program's to scribble on: one past the process table is bounded
 * (session__slot_proc) when the slot is freed, so no entry gives back what it did not count
 * and nothing is written outside the table (UINT32_MAX names an entry far outside the region:
 * unbounded, the drain would fault). */
Test(budget, a_slot_naming_no_process_entry_is_freed_without_touching_one, .timeout = 120)
{
	enum { POOL = 256 << 10, N = 100000 };
	struct trc_session *s = bt_start(4 << 20, POOL);
	const uint64_t meta = s->geom.rings_off;
	struct trc_proc *pe = bt_own_proc(s);
	struct bt_bursts x;
	bt_bursts_start(&x, 1, N);
	const uint64_t one = meta + TRC_RING_BASE_BYTES + POOL;
	cr_assert_eq(atomic_load(&pe->buffers_now), one);
	int scribbled = 0;
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		struct trc_slot *sl = session__slot(s, i);
		if (atomic_load(&sl->proc) &&
		    __atomic_load_n(&sl->tid, __ATOMIC_RELAXED) != (uint32_t)gettid()) {
			atomic_store(&sl->proc, UINT32_MAX);
			scribbled++;
		}
	}
	cr_assert_eq(scribbled, 1, "the burst thread's slot");
	bt_bursts_end(&x);
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), meta, "the slot was freed");
	cr_assert_eq(atomic_load(&pe->buffers_now), one,
		     "the entry keeps what no slot naming it gave back");
	session_destroy(s);
}

struct bt_drainer {
	struct trc_session *s;
	struct bt_collect *c;
	atomic_int stop;
	uint64_t max_rings;
};

static void *bt_drainer_main(void *p)
{
	struct bt_drainer *d = p;
	while (!atomic_load(&d->stop)) {
		bt_drain(d->s, d->c);
		uint64_t r = bt_rings(d->s);
		if (r > d->max_rings)
			d->max_rings = r;
		ts_sleep_ms(1);
	}
	bt_drain_idle(d->s, d->c);
	return NULL;
}

Test(budget, full_rings_wait_for_the_drain_and_stay_within_the_budget, .timeout = 120)
{
	enum { T = 16, N = 200000, POOL = 2 << 20 };
	/* 16 threads x 4.8 MB into 4 MiB rings: without waiting, a drain that sleeps 1 ms between
	 * passes loses most of it; with it, nothing, and the rings never hold more than the pool
	 * plus a base each. */
	/* The recorder's own wait (10 s without progress), not ts_start's 200 ms: on a loaded
	 * machine (CI runs two suites' tests at once) the drainer can be off the CPU that long. */
	struct trc_session *s = bt_start_waiting(4 << 20, POOL, 10000000000ull);
	struct bt_collect c = {0};
	struct bt_drainer d = {.s = s, .c = &c};
	pthread_t dr, th[T];
	pthread_create(&dr, NULL, bt_drainer_main, &d);
	struct bt_burst b = {.n = N};
	for (int i = 0; i < T; i++)
		pthread_create(&th[i], NULL, bt_burst_main, &b);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	ts_sleep_ms(60); /* the last slots freed */
	atomic_store(&d.stop, 1);
	pthread_join(dr, NULL);
	cr_assert_eq(c.lost, 0, "lost %lu, recorded %lu", (unsigned long)c.lost,
		     (unsigned long)c.counters);
	cr_assert_eq(c.counters, (uint64_t)T * N);
	cr_assert_eq(c.out_of_order, 0);
	cr_assert_leq(d.max_rings, POOL + (uint64_t)T * TRC_RING_BASE_BYTES, "max %lu",
		      (unsigned long)d.max_rings);
	cr_assert_eq(atomic_load(&s->hdr->ring_pool_used), 0);
	session_destroy(s);
}

Test(budget, idle_ring_gives_pages_back_and_takes_them_again, .timeout = 120)
{
	enum { N = 20000 }; /* 480 KB a burst */
	struct trc_session *s = bt_start(1 << 20, 0);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	struct bt_burst b = {.n = N, .bar = &bar, .rounds = 3};
	pthread_t th;
	struct bt_collect c = {0};
	pthread_create(&th, NULL, bt_burst_main, &b);
	for (int r = 0; r < 3; r++) {
		pthread_barrier_wait(&bar); /* the burst is in */
		bt_drain_idle(s, &c); /* drained; the drain sees the position (and, after a
				       * give-back, that the writer took the pages again) */
		uint64_t busy = bt_rings(s);
		cr_assert_gt(busy, 256 << 10, "round %d: %lu resident busy", r,
			     (unsigned long)busy);
		cr_assert_eq(bt_kernel_rings(s), busy, "round %d: the kernel agrees", r);
		ts_sleep_ms(250); /* idle past SESSION_TRIM_IDLE_NS */
		bt_drain(s, &c); /* gives the pages below the writer back */
		uint64_t idle = bt_rings(s);
		cr_assert_lt(idle, busy, "round %d: %lu resident idle, %lu busy", r,
			     (unsigned long)idle, (unsigned long)busy);
		cr_assert_eq(bt_kernel_rings(s), idle, "round %d: the kernel agrees", r);
		pthread_barrier_wait(&bar); /* next burst: wraps into the pages given back */
	}
	pthread_join(th, NULL);
	bt_drain_idle(s, &c);
	cr_assert_eq(c.lost, 0);
	cr_assert_eq(c.counters, 3 * N);
	cr_assert_eq(c.out_of_order, 0);
	session_destroy(s);
}

/* The trim handshake under --when-full drop: while the recorder punches the pages the writer's
 * next lap reuses (trim word busy), a writer at the end of its ring's faulted part must not wrap
 * into them. It drops (counted) until the punch is done; nothing it writes lands below its
 * offset, and afterwards it wraps and records again. The recorder is played by hand here: the
 * test sets the word busy as session__trim_idle's CAS does, and done as after its punch. */
Test(budget, a_writer_wraps_early_only_after_the_punch_under_drop, .timeout = 120)
{
	struct session_config cfg = {
		.max_slots = 32, .ring_bytes = 1 << 20, .drop_when_full = true};
	struct trc_session *s = bt_start_cfg(&cfg);
	cr_assert_eq(s->hdr->ring_wait_ns, 0, "drop mode");
	struct bt_collect c = {0};
	struct trc__thread *t = &trc__self;
	int64_t v = 0;
	TRC_COUNTER("c", v++); /* the claim */
	/* Up to the end of the faulted head (the drain keeps up, so the ring wraps there). */
	const uint64_t rec = ring_record_bytes(sizeof(struct trc_ring_value));
	while ((t->prod.write & t->prod.mask) + rec <= t->faulted - RING_HDR_BYTES) {
		TRC_COUNTER("c", v++);
		if (v % 512 == 0)
			bt_drain_idle(s, &c);
	}
	bt_drain_idle(s, &c);
	cr_assert_eq(t->faulted, TRC_RING_PREFAULT_BYTES);
	const uint64_t w0 = t->prod.write, off = w0 & t->prod.mask;
	uint8_t *before = malloc(off);
	memcpy(before, t->prod.data, off);
	_Atomic uint64_t *word = &trc__slot(t->slot)->trim;
	uint64_t x = atomic_load(word);
	cr_assert_eq((uint32_t)x, trc_ring_lap(w0, t->prod.capacity));
	cr_assert_eq(x & (TRC_TRIM_BUSY | TRC_TRIM_DONE), 0);
	atomic_store(word, x | TRC_TRIM_BUSY); /* the recorder punches [0, off) */
	enum { BUSY_EVENTS = 200, AFTER = 300 };
	for (int i = 0; i < BUSY_EVENTS; i++)
		TRC_COUNTER("c", v++);
	cr_assert_eq(t->prod.write, w0, "the writer moved into the lap being punched");
	cr_assert_eq(memcmp(before, t->prod.data, off), 0,
		     "the writer wrote below its offset while the recorder punched there");
	atomic_store(word, x | TRC_TRIM_DONE); /* punched */
	for (int i = 0; i < AFTER; i++)
		TRC_COUNTER("c", v++);
	cr_assert_eq(trc_ring_lap(t->prod.write, t->prod.capacity),
		     trc_ring_lap(w0, t->prod.capacity) + 1, "wrapped after the punch");
	bt_drain_idle(s, &c);
	cr_assert_eq(c.lost, BUSY_EVENTS, "lost %lu", (unsigned long)c.lost);
	cr_assert_eq(c.counters + c.lost, (uint64_t)v);
	cr_assert_eq(c.out_of_order, 1, "one gap, where the punch was");
	free(before);
	session_destroy(s);
}

Test(budget, the_recorders_own_mapping_holds_a_bounded_share_of_the_rings, .timeout = 120)
{
	/* 16 threads x 2.9 MB of counters, none drained until all are written: 46 MB resident in
	 * the rings, more than the 32 MiB above which the drain drops its own page-table entries
	 * for them after every 16 MiB it reads (session_layout.h "Residency"). So, drained in one
	 * go, the recorder's mapping keeps at most what it read since its last drop: under 16 MiB
	 * plus one ring's records. */
	enum { T = 16, N = 120000 };
	struct trc_session *s = bt_start_waiting(4 << 20, 64 << 20, 10000000000ull);
	cr_assert_neq((void *)s->base, trc__rt.base, "the recorder's mapping is its own");
	struct bt_bursts x;
	bt_bursts_start(&x, T, N); /* every burst written, every thread alive */
	const uint64_t bytes = (uint64_t)T * N * (RING_HDR_BYTES + sizeof(struct trc_ring_value));
	cr_assert_geq(bt_kernel_rings(s), bytes, "the program's side holds the rings: %lu",
		      (unsigned long)bt_kernel_rings(s));
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	cr_assert_eq(c.counters, (uint64_t)T * N);
	cr_assert_eq(c.lost, 0);
	cr_assert_eq(c.out_of_order, 0);
	/* At most: the mapping's whole Rss less none of the metadata, which the recorder may
	 * not have touched whole. */
	uint64_t mine = bt_kernel_rss_at(s->base);
	cr_assert_lt(mine, (16u << 20) + bytes / T + s->geom.rings_off,
		     "the recorder's mapping holds %.1f MiB with the metadata's %.1f MiB, of the "
		     "rings' %.1f MiB",
		     mine / 1048576.0, s->geom.rings_off / 1048576.0, bytes / 1048576.0);
	cr_assert_geq(bt_kernel_rings(s), bytes, "the program's side keeps its pages");
	bt_bursts_end(&x);
	bt_drain_idle(s, &c);
	cr_assert_eq(c.counters, (uint64_t)T * N);
	session_destroy(s);
}

Test(budget, a_thread_whose_wait_ran_out_waits_again_once_its_ring_had_room, .timeout = 120)
{
	/* Round 1: 2.4 MB of counters into a 1 MiB ring that nothing drains: the thread waits 1 s,
	 * gives up and drops the rest without waiting again. Then the ring is drained (room
	 * again), and round 2 writes as much while a drainer runs: the thread waits for it once
	 * more, as at first, and loses nothing. */
	enum { N = 100000 };
	struct trc_session *s = bt_start_waiting(1 << 20, 0, 1000000000ull);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	struct bt_burst b = {.n = N, .bar = &bar, .rounds = 2};
	pthread_t th;
	pthread_create(&th, NULL, bt_burst_main, &b);
	pthread_barrier_wait(&bar); /* round 1 written */
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	const uint64_t lost1 = c.lost;
	cr_assert_gt(lost1, 0, "round 1 lost nothing: the ring held %lu counters",
		     (unsigned long)c.counters);
	cr_assert_eq(c.counters + lost1, N);
	struct bt_drainer d = {.s = s, .c = &c};
	pthread_t dr;
	pthread_create(&dr, NULL, bt_drainer_main, &d);
	pthread_barrier_wait(&bar); /* round 2 */
	pthread_barrier_wait(&bar); /* round 2 written */
	atomic_store(&d.stop, 1);
	pthread_join(dr, NULL);
	cr_assert_eq(c.lost, lost1, "round 2 lost %lu", (unsigned long)(c.lost - lost1));
	cr_assert_eq(c.counters, 2 * (uint64_t)N - lost1);
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	session_destroy(s);
}

/* A writer that waits for room as long as the drain reads its ring, not ring_wait_ns in all: a
 * record larger than what one read gives back (here a 48 KiB PROCESS record, written by hand as
 * the runtime writes one, into a ring the writer filled with counters) needs many reads, each
 * well within ring_wait_ns of the last, and more than ring_wait_ns in all. */
struct bt_bigwait {
	pthread_barrier_t bar;
	int n; /* counters that fill the ring, less room than the big record needs */
	uint32_t tid;
	atomic_int done;
	bool got; /* the big record was reserved (not dropped) */
};

#define BT_BIG_CMDLINE (48u << 10)

static uint64_t bt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void *bt_bigwait_main(void *p)
{
	struct bt_bigwait *w = p;
	w->tid = (uint32_t)gettid();
	TRC_COUNTER("c", 0); /* claims the ring */
	pthread_barrier_wait(&w->bar); /* the drain attaches to it */
	pthread_barrier_wait(&w->bar);
	for (int i = 1; i < w->n; i++)
		TRC_COUNTER("c", i);
	struct trc__thread *t = &trc__self;
	pthread_barrier_wait(&w->bar); /* full: the slow reads start */
	*t->ok_flag = 0; /* as the runtime's slow paths hold the ring */
	t->busy = 1;
	struct trc_ring_process *r =
		trc__reserve(t, TRC_TAG(TRC_REC_PROCESS, 0), (uint32_t)sizeof(*r) + BT_BIG_CMDLINE);
	if (r) {
		r->ts = trc__now(trc__mode_load());
		r->pid = (uint32_t)getpid();
		r->ppid = (uint32_t)getppid();
		r->cmdline_len = BT_BIG_CMDLINE;
		memset(r + 1, 'a', BT_BIG_CMDLINE - 1);
		((char *)(r + 1))[BT_BIG_CMDLINE - 1] = 0;
		ring_commit_sp(&t->prod);
	}
	t->busy = 0;
	*t->ok_flag = 1;
	w->got = r != NULL;
	atomic_store(&w->done, 1);
	return NULL;
}

Test(budget, a_writer_waits_while_the_drain_reads_its_ring_however_long_in_all, .timeout = 120)
{
	enum { RING = 256 << 10, WAIT_MS = 300, STEP_MS = 10, PER_STEP = 50 };
	struct trc_session *s = bt_start_waiting(RING, 0, WAIT_MS * 1000000ull);
	/* 10000 counters of 24 bytes leave ~19 KiB at the ring's end: the big record wraps, and
	 * needs the first 48 KiB of the ring read, ~1930 counters, ~39 reads of 50, 10 ms apart:
	 * ~390 ms, over ring_wait_ns (300 ms) in all, each read 30 times within it. */
	struct bt_bigwait w = {.n = 10000};
	pthread_barrier_init(&w.bar, NULL, 2);
	pthread_t th;
	pthread_create(&th, NULL, bt_bigwait_main, &w);
	pthread_barrier_wait(&w.bar);
	struct bt_collect c = {0};
	bt_drain_idle(s, &c);
	int slot = ts_slot_of_tid(s, w.tid);
	cr_assert(slot >= 0 && s->slots[slot].active, "the drain has the writer's ring");
	struct ring_consumer *cons = &s->slots[slot].cons;
	pthread_barrier_wait(&w.bar);
	pthread_barrier_wait(&w.bar);
	/* The drain's reads, PER_STEP records at a time, as a drain that is alive but slow
	 * gives space back. */
	uint64_t read = 0, t0 = bt_now_ms(), waited_ms = 0;
	while (!atomic_load(&w.done)) {
		ts_sleep_ms(STEP_MS);
		struct ring_batch b;
		struct ring_record rec;
		cr_assert_eq(ring_batch_begin(cons, &b), 0);
		for (int k = 0; k < PER_STEP && ring_batch_next(cons, &b, &rec) == 1; k++)
			read++;
		ring_batch_release(cons, &b);
	}
	waited_ms = bt_now_ms() - t0;
	pthread_join(th, NULL);
	cr_assert(w.got, "the big record was dropped after %lu ms, %lu records read meanwhile",
		  (unsigned long)waited_ms, (unsigned long)read);
	cr_assert_gt(waited_ms, WAIT_MS, "the wait (%lu ms) must outlast ring_wait_ns in all",
		     (unsigned long)waited_ms);
	int err = 0;
	cr_assert_eq(ring_consumer_dropped(cons, &err), 0);
	cr_assert_eq(err, 0);
	session_destroy(s);
}
