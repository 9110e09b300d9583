/* stress_sampler.c - start and stop the RSS sampler hundreds of times while other threads
 * drain its ring and read its stats, and sample processes while they die.
 *
 * A plain program (Criterion does not run under TSan), built plain and with TSan. Threads:
 *   main      owns the sampler handles (start, stop), forks and kills the children;
 *   consumer  drains the ring (woken by the sampler's notify eventfd) and checks every record;
 *   stats     calls sampler_get_stats on the live handle in a loop and checks the counters.
 * One ring serves every cycle: each sampler attaches to it as producer, and main waits for the
 * consumer to catch up (read_pos == write_pos) after each stop, so the records in the ring
 * always belong to the current cycle.
 *
 * Phases:
 *   1. cycles: this process sampled at 1-5 ms for 1-5 ms, mostly statm, every source now and
 *      then. Per cycle: at least one sample, no more than the grid allows, none early.
 *   2. deaths: a forked child (touches 4 MiB, then sleeps) sampled while it exits or is killed:
 *      left as a zombie, reaped at once, SIGKILLed, or SIGKILLed and stopped at once. The
 *      sampler must end quietly (stats.process_gone, no read error, one GONE record when
 *      asked) and every sample it pushed must reach the consumer.
 *   3. multi: this process and three children in one sampler, every source including `both`;
 *      one child is killed midway in half of the cycles and the sampler goes on with the rest.
 * Every stop is timed: one over STRESS_STOP_MAX_NS is a failure, even under TSan.
 *
 * Synchronisation of the test's own data: `cyc` and `ps` are written by main only while no
 * sampler runs and the consumer has caught up; the consumer reads/writes them only while
 * handling a record. The chains main -> pthread_create -> sampler's release of write_pos ->
 * consumer's acquire, and consumer -> release of read_pos -> main's acquire, order them. The
 * stats thread sees the handle under a mutex main holds to clear it before stopping.
 *
 * STRESS_SCALE (env, default 1) multiplies the cycle counts; STRESS_SEED fixes the random
 * choices (printed on failure). Prints one line of figures; exits 0 on success, 1 with a
 * message on the first failure. A watchdog alarm turns a hang into a failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "sampler.h"
#include "trcfile.h" /* trcfile_rss_source_name */

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif

/* Per STRESS_SCALE unit. Forks are slower under TSan, so its death and multi phases are
 * shorter (the whole run takes ~5 s there on an idle 2-core machine, ~4 s plain). */
#define STRESS_CYCLES 200u
#ifdef STRESS_TSAN
#define STRESS_DEATHS 32u
#define STRESS_MULTI 12u
#else
#define STRESS_DEATHS 40u
#define STRESS_MULTI 16u
#endif

#define STRESS_RING_BYTES 65536u
#define STRESS_MAX_PIDS 4
#define STRESS_STOP_MAX_NS 500000000ull /* a stop slower than this is a failure */
#define STRESS_WAIT_MAX_NS 5000000000ull /* catch-up, process_gone, child ready */
#define STRESS_TOUCH_BYTES (4u << 20) /* what each child makes resident */
#define STRESS_BUFFERS_SALT 0x5a5a000ull
#define MS 1000000ull

/* The cycle in progress: main writes it between cycles, the consumer reads it per record. */
struct cycle {
	pid_t pids[STRESS_MAX_PIDS];
	uint64_t min_rss_bytes[STRESS_MAX_PIDS];
	size_t n_pids;
	enum trc_rss_source source;
	uint64_t interval_ns;
	uint64_t start_ns; /* CLOCK_MONOTONIC before sampler_start */
	bool push_gone;
	bool buffers_cb;
	bool discover; /* the sampler starts with pids[0] and discovers the others */
};

/* cfg.discover of a cycle with c->discover: the pids after the first (written before the
 * sampler starts, read by its thread only). */
static size_t discover_of(void *arg, pid_t *out, size_t max)
{
	const struct cycle *c = arg;
	size_t n = 0;
	for (size_t i = 1; i < c->n_pids && n < max; i++)
		out[n++] = c->pids[i];
	return n;
}

/* What the consumer saw of one pid this cycle (main resets and reads it between cycles). */
struct pid_seen {
	uint64_t samples;
	uint64_t gone;
	uint64_t last_ts_ns;
	uint64_t grid_ns; /* lower bound of the deadline of the last sample, from start_ns */
	uint64_t last_interval_ns;
};

struct stress {
	struct ring_ctl *ctl;
	uint8_t *data;
	int notify_fd;
	struct cycle cyc;
	struct pid_seen seen[STRESS_MAX_PIDS];
	/* Set (release) by main after the last catch-up; the consumer's acquire pairs with it. */
	atomic_bool done;
	/* Consumer-private until joined. */
	uint64_t records, samples, gone_records, batches;

	/* The stats thread's view of the live handle. */
	pthread_mutex_t lock;
	struct sampler *live; /* NULL between cycles */
	uint64_t live_gen; /* bumped per handle, so counters are compared within one handle */
	bool live_expect_alive; /* a pid of this handle never dies: process_gone is a failure */
	uint64_t stats_calls; /* stats-thread private until joined */
};

static uint64_t g_seed;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "stress_sampler: FAIL (seed %llu): ", (unsigned long long)g_seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* _exit: other threads are running; no atexit handlers racing with them. */
	_exit(1);
}

static uint64_t now_ns(void)
{
	return trc_mono_ns();
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* splitmix64: main's random choices (intervals, durations, variants). Main thread only. */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

/* The recorder's callback stand-in: a value the consumer can recompute. Sampler thread. */
static uint64_t buffers_of(void *arg, pid_t pid)
{
	return (uint64_t)(uintptr_t)arg + ((uint64_t)pid << 12);
}

/* ---- consumer ------------------------------------------------------------------------- */

static int pid_index(const struct cycle *c, uint32_t pid)
{
	for (size_t i = 0; i < c->n_pids; i++)
		if ((uint32_t)c->pids[i] == pid)
			return (int)i;
	return -1;
}

static void check_gone(struct stress *st, const struct ring_record *r)
{
	const struct cycle *c = &st->cyc;
	struct rss_gone g;
	int i;

	if (!c->push_gone)
		fail("GONE record although push_gone_record is off");
	if (r->payload_bytes != ((sizeof(g) + 7) & ~(size_t)7))
		fail("GONE record of %u bytes", r->payload_bytes);
	memcpy(&g, r->payload, sizeof(g));
	i = pid_index(c, g.pid);
	if (i < 0)
		fail("GONE record for pid %u, not sampled", g.pid);
	if (g.error != -ESRCH)
		fail("GONE record for pid %u with error %d, expected -ESRCH", g.pid, g.error);
	if (st->seen[i].gone++)
		fail("two GONE records for pid %u", g.pid);
	if (g.ts_ns < c->start_ns || g.ts_ns < st->seen[i].last_ts_ns || g.ts_ns > now_ns())
		fail("GONE record for pid %u stamped out of order", g.pid);
	st->gone_records++;
}

/* The flags a source must set (and the only HAS_* ones it may set). */
static uint32_t flags_of(enum trc_rss_source s)
{
	switch (s) {
	case TRC_RSS_STATUS:
		return TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT;
	case TRC_RSS_SMAPS_ROLLUP:
	case TRC_RSS_BOTH:
		return TRC_RSS_HAS_EXACT;
	default:
		return 0;
	}
}

static void check_sample(struct stress *st, const struct ring_record *r)
{
	const struct cycle *c = &st->cyc;
	const uint32_t has_mask = TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT | TRC_RSS_HAS_EXACT;
	struct rss_sample s;
	struct pid_seen *ps;
	int i;

	if (r->payload_bytes != ((sizeof(s) + 7) & ~(size_t)7))
		fail("sample record of %u bytes, expected %zu", r->payload_bytes, sizeof(s));
	memcpy(&s, r->payload, sizeof(s));
	i = pid_index(c, s.fig.pid);
	if (i < 0)
		fail("sample for pid %u, not sampled in this cycle", s.fig.pid);
	ps = &st->seen[i];
	if (ps->gone)
		fail("sample for pid %u after its GONE record", s.fig.pid);
	if (s.fig.source != (uint32_t)c->source)
		fail("sample source %u, configured %s", s.fig.source, trcfile_rss_source_name(c->source));
	if (s.ts_ns < c->start_ns || s.ts_ns > now_ns())
		fail("pid %u: sample stamped outside its cycle", s.fig.pid);
	if (s.ts_ns < ps->last_ts_ns)
		fail("pid %u: timestamps go back (%llu after %llu)", s.fig.pid,
		     (unsigned long long)s.ts_ns, (unsigned long long)ps->last_ts_ns);
	if (s.fig.rss_bytes == 0 || s.fig.rss_bytes < c->min_rss_bytes[i])
		fail("pid %u: rss_bytes %llu, expected at least %llu", s.fig.pid,
		     (unsigned long long)s.fig.rss_bytes, (unsigned long long)c->min_rss_bytes[i]);
	if ((s.fig.flags & has_mask) != flags_of(c->source) ||
	    (s.fig.flags & ~(has_mask | TRC_RSS_STRETCHED)))
		fail("pid %u: flags %#x for source %s", s.fig.pid, s.fig.flags, trcfile_rss_source_name(c->source));
	if (s.interval_ns < c->interval_ns || s.interval_ns % c->interval_ns ||
	    !(s.fig.flags & TRC_RSS_STRETCHED) != (s.interval_ns == c->interval_ns))
		fail("pid %u: interval %llu (stretched flag %d) for configured %llu", s.fig.pid,
		     (unsigned long long)s.interval_ns, !!(s.fig.flags & TRC_RSS_STRETCHED),
		     (unsigned long long)c->interval_ns);
	if (c->source == TRC_RSS_STATUS &&
	    (s.fig.hwm_bytes < s.fig.rss_bytes ||
	     s.fig.anon_bytes + s.fig.file_bytes + s.fig.shmem_bytes != s.fig.rss_bytes))
		fail("pid %u: status figures disagree: rss %llu hwm %llu anon+file+shmem %llu",
		     s.fig.pid, (unsigned long long)s.fig.rss_bytes, (unsigned long long)s.fig.hwm_bytes,
		     (unsigned long long)(s.fig.anon_bytes + s.fig.file_bytes + s.fig.shmem_bytes));
	if ((c->source == TRC_RSS_SMAPS_ROLLUP && s.fig.rss_bytes != s.fig.rss_exact_bytes) ||
	    ((s.fig.flags & TRC_RSS_HAS_EXACT) &&
	     (s.fig.rss_exact_bytes == 0 || s.fig.pss_bytes == 0 || s.fig.pss_bytes > s.fig.rss_exact_bytes)))
		fail("pid %u: smaps_rollup figures wrong: rss %llu exact %llu pss %llu", s.fig.pid,
		     (unsigned long long)s.fig.rss_bytes, (unsigned long long)s.fig.rss_exact_bytes,
		     (unsigned long long)s.fig.pss_bytes);
	uint64_t want_buf =
		c->buffers_cb ? buffers_of((void *)STRESS_BUFFERS_SALT, (pid_t)s.fig.pid) : 0;
	if (s.fig.buffers_bytes != want_buf)
		fail("pid %u: buffers_bytes %llu, callback said %llu", s.fig.pid,
		     (unsigned long long)s.fig.buffers_bytes, (unsigned long long)want_buf);
	/* The grid: a sample is never early. Its deadline is the previous one plus the interval
	 * in force times (1 + ticks skipped); a tick lost to a read error is not counted, so
	 * grid_ns is a lower bound. */
	if (ps->samples)
		ps->grid_ns += ps->last_interval_ns * (1 + (uint64_t)s.skipped_ticks);
	if (s.ts_ns < c->start_ns + ps->grid_ns)
		fail("pid %u: sample %llu taken %llu ns before its tick", s.fig.pid,
		     (unsigned long long)ps->samples,
		     (unsigned long long)(c->start_ns + ps->grid_ns - s.ts_ns));
	ps->samples++;
	ps->last_ts_ns = s.ts_ns;
	ps->last_interval_ns = s.interval_ns;
	st->samples++;
}

/* Drains everything published. Returns the number of records handled. */
static uint64_t drain(struct stress *st, struct ring_consumer *c)
{
	uint64_t n = 0;
	for (;;) {
		struct ring_batch b;
		struct ring_record r;
		uint64_t in_batch = 0;
		int rc;

		if (ring_batch_begin(c, &b))
			fail("ring_batch_begin: corrupt ring");
		while ((rc = ring_batch_next(c, &b, &r)) == 1) {
			if (r.tag == SAMPLER_TAG_SAMPLE)
				check_sample(st, &r);
			else if (r.tag == SAMPLER_TAG_GONE)
				check_gone(st, &r);
			else
				fail("record with tag %u", r.tag);
			in_batch++;
		}
		if (rc < 0)
			fail("ring_batch_next: %d", rc);
		/* The release store in here orders the checks above before main's catch-up. */
		ring_batch_release(c, &b);
		if (!in_batch)
			return n;
		st->batches++;
		st->records += in_batch;
		n += in_batch;
	}
}

static void *consumer_main(void *arg)
{
	struct stress *st = arg;
	struct ring_consumer c;

	if (ring_consumer_attach(&c, st->ctl, st->data, STRESS_RING_BYTES))
		fail("ring_consumer_attach");
	for (;;) {
		/* Pairs with main's release store after its last catch-up. */
		bool done = atomic_load_explicit(&st->done, memory_order_acquire);
		drain(st, &c);
		if (done)
			break;
		struct pollfd p = {.fd = st->notify_fd, .events = POLLIN};
		uint64_t v;
		if (poll(&p, 1, 1) > 0 && read(st->notify_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			fail("read notify fd: %s", strerror(errno));
	}
	return NULL;
}

/* ---- stats reader -------------------------------------------------------------------- */

static void *stats_main(void *arg)
{
	struct stress *st = arg;
	struct sampler_stats prev = {0}, cur;
	uint64_t gen = 0;

	while (!atomic_load_explicit(&st->done, memory_order_acquire)) {
		pthread_mutex_lock(&st->lock);
		if (st->live) {
			sampler_get_stats(st->live, &cur);
			st->stats_calls++;
			/* One writer, relaxed loads: each counter is coherent, so never goes back.
			 */
			if (st->live_gen == gen &&
			    (cur.samples < prev.samples || cur.skipped_ticks < prev.skipped_ticks ||
			     cur.stretched < prev.stretched || cur.read_ns_max < prev.read_ns_max ||
			     cur.read_ns_total < prev.read_ns_total || cur.cpu_ns < prev.cpu_ns ||
			     (prev.process_gone && !cur.process_gone)))
				fail("stats went back: samples %llu -> %llu",
				     (unsigned long long)prev.samples,
				     (unsigned long long)cur.samples);
			if (cur.read_errors || cur.last_error)
				fail("stats: %llu read errors, last %d",
				     (unsigned long long)cur.read_errors, cur.last_error);
			if (st->live_expect_alive && cur.process_gone)
				fail("stats: process_gone while this process is sampled");
			gen = st->live_gen;
			prev = cur;
		}
		pthread_mutex_unlock(&st->lock);
		sleep_ns(200000);
	}
	return NULL;
}

/* ---- main's side of a cycle ------------------------------------------------------------ */

struct figures {
	uint64_t starts, stop_ns_max, stop_ns_total, gone_seen, gone_wait_ns_max;
	uint64_t dropped, pushed;
};

/* Waits until the consumer has handled everything published. Main, no sampler running. */
static void catch_up(struct stress *st)
{
	uint64_t deadline = now_ns() + STRESS_WAIT_MAX_NS;
	/* Acquire pairs with the consumer's release of read_pos in ring_batch_release: what it
	 * wrote into st->seen before is visible here. */
	while (atomic_load_explicit(&st->ctl->read_pos, memory_order_acquire) !=
	       atomic_load_explicit(&st->ctl->write_pos, memory_order_relaxed)) {
		if (now_ns() > deadline)
			fail("the consumer did not catch up within %llu ms",
			     STRESS_WAIT_MAX_NS / MS);
		sleep_ns(50000);
	}
}

struct cycle_run {
	struct sampler *s;
	uint64_t dropped_before;
};

static struct cycle_run cycle_start(struct stress *st, struct figures *f, bool expect_alive)
{
	struct cycle *c = &st->cyc;
	struct cycle_run run;
	int err = 0;

	memset(st->seen, 0, sizeof(st->seen));
	run.dropped_before = atomic_load_explicit(&st->ctl->dropped, memory_order_acquire);
	c->start_ns = now_ns();
	struct sampler_config cfg = {
		.pids = c->pids,
		.n_pids = c->discover ? 1 : c->n_pids,
		.discover = c->discover ? discover_of : NULL,
		.discover_arg = c,
		.interval_ns = c->interval_ns,
		.source = c->source,
		.buffers_resident_bytes = c->buffers_cb ? buffers_of : NULL,
		.buffers_arg = (void *)STRESS_BUFFERS_SALT,
		.ring_ctl = st->ctl,
		.ring_data = st->data,
		.ring_capacity = STRESS_RING_BYTES,
		.notify_fd = st->notify_fd,
		.push_gone_record = c->push_gone,
	};
	run.s = sampler_start(&cfg, &err);
	if (!run.s)
		fail("sampler_start (%zu pids, %s): %s", c->n_pids, trcfile_rss_source_name(c->source),
		     strerror(-err));
	f->starts++;
	pthread_mutex_lock(&st->lock);
	st->live = run.s;
	st->live_gen++;
	st->live_expect_alive = expect_alive;
	pthread_mutex_unlock(&st->lock);
	return run;
}

/* Stops and times it, waits for the consumer; returns records dropped by this sampler. */
static uint64_t cycle_stop(struct stress *st, struct figures *f, struct cycle_run *run)
{
	pthread_mutex_lock(&st->lock);
	st->live = NULL;
	pthread_mutex_unlock(&st->lock);

	uint64_t t0 = now_ns();
	sampler_stop(run->s);
	uint64_t took = now_ns() - t0;
	if (took > STRESS_STOP_MAX_NS)
		fail("sampler_stop took %llu ms", (unsigned long long)(took / MS));
	if (took > f->stop_ns_max)
		f->stop_ns_max = took;
	f->stop_ns_total += took;
	run->s = NULL;
	catch_up(st);
	uint64_t dropped =
		atomic_load_explicit(&st->ctl->dropped, memory_order_acquire) - run->dropped_before;
	f->dropped += dropped;
	return dropped;
}

static void self_only(struct stress *st)
{
	struct cycle *c = &st->cyc;
	memset(c, 0, sizeof(*c));
	c->pids[0] = getpid();
	c->min_rss_bytes[0] = 1;
	c->n_pids = 1;
}

/* Phase 1: short cycles on this process. */
static void phase_cycles(struct stress *st, struct figures *f, unsigned n)
{
	static const enum trc_rss_source rare[] = {TRC_RSS_STATUS, TRC_RSS_SMAPS_ROLLUP,
					       TRC_RSS_BOTH};
	for (unsigned k = 0; k < n; k++) {
		struct cycle *c = &st->cyc;
		struct sampler_stats snap;

		self_only(st);
		c->source = k % 4 == 3 ? rare[(k / 4) % 3] : TRC_RSS_STATM;
		c->interval_ns = rnd_range(1, 5) * MS;
		c->buffers_cb = k % 2;
		uint64_t run_ns = rnd_range(1 * MS, 5 * MS);
		struct cycle_run run = cycle_start(st, f, true);
		sleep_ns(run_ns);
		sampler_get_stats(run.s, &snap);
		uint64_t dropped = cycle_stop(st, f, &run);
		uint64_t elapsed = now_ns() - c->start_ns;

		uint64_t pushed = st->seen[0].samples + dropped;
		f->pushed += pushed;
		if (st->seen[0].samples == 0 && dropped == 0)
			fail("cycle %u: no sample at all (the first is due at once)", k);
		if (pushed < snap.samples)
			fail("cycle %u: %llu samples pushed, stats said %llu before stop", k,
			     (unsigned long long)pushed, (unsigned long long)snap.samples);
		if (pushed > elapsed / c->interval_ns + 1)
			fail("cycle %u: %llu samples in %llu us at %llu ms: off the grid", k,
			     (unsigned long long)pushed, (unsigned long long)(elapsed / 1000),
			     (unsigned long long)(c->interval_ns / MS));
		if (snap.process_gone)
			fail("cycle %u: process_gone while sampling this process", k);
	}
}

/* ---- children -------------------------------------------------------------------------- */

/* Forks a child that makes STRESS_TOUCH_BYTES resident and says so. With life_ns 0 it then
 * lives until killed (at most a minute); otherwise it waits for a byte on *go_fd (so it is
 * alive when the sampler starts, whatever the load), lives life_ns more and exits. Returns
 * once the memory is touched. Main only. */
static pid_t child_spawn(uint64_t life_ns, int *go_fd)
{
	int ready[2], go[2];
	char byte;

	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		fail("pipe2: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		/* Only syscalls and plain stores here: the parent has other threads. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		close(go[1]);
		volatile uint8_t *m = mmap(NULL, STRESS_TOUCH_BYTES, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(3);
		for (size_t off = 0; off < STRESS_TOUCH_BYTES; off += 4096)
			m[off] = 1;
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		if (life_ns && read(go[0], &byte, 1) != 1)
			_exit(5);
		sleep_ns(life_ns ? life_ns : 60000 * MS);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	struct pollfd pfd = {.fd = ready[0], .events = POLLIN};
	if (poll(&pfd, 1, (int)(STRESS_WAIT_MAX_NS / MS)) != 1 || read(ready[0], &byte, 1) != 1)
		fail("child %d never got ready", (int)pid);
	close(ready[0]);
	if (go_fd)
		*go_fd = go[1];
	else
		close(go[1]);
	return pid;
}

/* Lets a child spawned with a life start counting it. */
static void child_go(int go_fd)
{
	if (write(go_fd, "g", 1) != 1)
		fail("write go pipe: %s", strerror(errno));
	close(go_fd);
}

static void child_reap(pid_t pid)
{
	int wst;
	while (waitpid(pid, &wst, 0) < 0)
		if (errno != EINTR)
			fail("waitpid %d: %s", (int)pid, strerror(errno));
}

/* Waits for stats.process_gone; returns the final stats (the thread has ended). */
static void wait_gone(struct sampler *s, struct figures *f, pid_t pid, struct sampler_stats *out)
{
	uint64_t t0 = now_ns();
	for (;;) {
		sampler_get_stats(s, out);
		if (out->process_gone)
			break;
		if (now_ns() - t0 > STRESS_WAIT_MAX_NS)
			fail("the sampler did not notice pid %d gone within %llu ms", (int)pid,
			     STRESS_WAIT_MAX_NS / MS);
		sleep_ns(200000);
	}
	uint64_t waited = now_ns() - t0;
	if (waited > f->gone_wait_ns_max)
		f->gone_wait_ns_max = waited;
	f->gone_seen++;
}

/* Phase 2: a child dies while sampled. */
static void phase_deaths(struct stress *st, struct figures *f, unsigned n)
{
	static const enum trc_rss_source srcs[] = {TRC_RSS_STATM, TRC_RSS_STATUS,
					       TRC_RSS_SMAPS_ROLLUP, TRC_RSS_BOTH};
	for (unsigned k = 0; k < n; k++) {
		struct cycle *c = &st->cyc;
		struct sampler_stats fin = {0};
		unsigned variant = k % 4; /* zombie, reaped, killed, killed and stopped at once */
		bool waited = variant != 3;

		int go_fd = -1;
		pid_t pid = child_spawn(variant < 2 ? rnd_range(2 * MS, 10 * MS) : 0, &go_fd);
		memset(c, 0, sizeof(*c));
		c->pids[0] = pid;
		c->min_rss_bytes[0] = STRESS_TOUCH_BYTES / 2;
		c->n_pids = 1;
		c->source = srcs[(k / 4) % 4];
		c->interval_ns = rnd_range(1, 3) * MS;
		c->push_gone = (k / 2) % 2;
		c->buffers_cb = k % 3 == 0;
		struct cycle_run run = cycle_start(st, f, false);
		child_go(go_fd);
		switch (variant) {
		case 0: /* exits by itself and stays a zombie until the sampler has noticed */
			wait_gone(run.s, f, pid, &fin);
			child_reap(pid);
			break;
		case 1: /* exits by itself, reaped at once: the pid is gone for good */
			child_reap(pid);
			wait_gone(run.s, f, pid, &fin);
			break;
		case 2: /* killed mid-run */
			sleep_ns(rnd_range(1 * MS, 8 * MS));
			kill(pid, SIGKILL);
			child_reap(pid);
			wait_gone(run.s, f, pid, &fin);
			break;
		default: /* killed, and stopped while it dies */
			sleep_ns(rnd_range(1 * MS, 8 * MS));
			kill(pid, SIGKILL);
			break;
		}
		uint64_t dropped = cycle_stop(st, f, &run);
		if (variant == 3)
			child_reap(pid);
		uint64_t pushed = st->seen[0].samples + dropped;
		f->pushed += pushed;
		if (waited) {
			if (fin.read_errors || fin.last_error)
				fail("death %u (%s): %llu read errors, last %d", k,
				     trcfile_rss_source_name(c->source),
				     (unsigned long long)fin.read_errors, fin.last_error);
			if (pushed != fin.samples)
				fail("death %u: stats say %llu samples, %llu pushed", k,
				     (unsigned long long)fin.samples, (unsigned long long)pushed);
			if (c->push_gone && !dropped && st->seen[0].gone != 1)
				fail("death %u: %llu GONE records, expected 1", k,
				     (unsigned long long)st->seen[0].gone);
		}
	}
}

/* Phase 3: several pids in one sampler, one of them killed midway every other cycle. */
static void phase_multi(struct stress *st, struct figures *f, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		struct cycle *c = &st->cyc;
		bool kill_one = k % 2;

		self_only(st);
		for (size_t i = 1; i < STRESS_MAX_PIDS; i++) {
			c->pids[i] = child_spawn(0, NULL);
			c->min_rss_bytes[i] = STRESS_TOUCH_BYTES / 2;
		}
		c->n_pids = STRESS_MAX_PIDS;
		c->source = (enum trc_rss_source)(TRC_RSS_STATM + (int)(k % 4));
		c->interval_ns = rnd_range(1, 5) * MS;
		c->push_gone = kill_one;
		c->buffers_cb = k % 3 != 0;
		c->discover = k % 4 >= 2; /* the same pids, found at the first tick */
		uint64_t run_ns = rnd_range(5 * MS, 20 * MS);
		struct cycle_run run = cycle_start(st, f, true);
		sleep_ns(run_ns / 2);
		if (kill_one) {
			/* After the first tick, which reads every pid, so each has a sample. */
			struct sampler_stats first;
			uint64_t t0 = now_ns();
			for (sampler_get_stats(run.s, &first); first.samples < c->n_pids;
			     sampler_get_stats(run.s, &first)) {
				if (now_ns() - t0 > STRESS_WAIT_MAX_NS)
					fail("multi %u: the first tick never ended", k);
				sleep_ns(100000);
			}
			kill(c->pids[STRESS_MAX_PIDS - 1], SIGKILL);
			child_reap(c->pids[STRESS_MAX_PIDS - 1]);
		}
		sleep_ns(run_ns - run_ns / 2);
		struct sampler_stats snap;
		sampler_get_stats(run.s, &snap);
		uint64_t dropped = cycle_stop(st, f, &run);
		f->pushed += dropped;
		for (size_t i = 0; i < STRESS_MAX_PIDS; i++)
			f->pushed += st->seen[i].samples;
		if (snap.process_gone || snap.read_errors)
			fail("multi %u: process_gone %d, %llu read errors", k, snap.process_gone,
			     (unsigned long long)snap.read_errors);
		/* Every pid was alive at the first tick, which reads them all. */
		for (size_t i = 0; i < STRESS_MAX_PIDS && !dropped; i++)
			if (!st->seen[i].samples)
				fail("multi %u (%s): no sample of pid %d", k,
				     trcfile_rss_source_name(c->source), (int)c->pids[i]);
		for (size_t i = 1; i < STRESS_MAX_PIDS - (kill_one ? 1 : 0); i++) {
			kill(c->pids[i], SIGKILL);
			child_reap(c->pids[i]);
		}
	}
}

/* ---- main ------------------------------------------------------------------------------- */

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
	const char *env = getenv(name);
	if (!env || !*env)
		return dflt;
	char *end;
	unsigned long long v = strtoull(env, &end, 10);
	if (*end || v == 0 || v > max) {
		fprintf(stderr, "stress_sampler: bad %s '%s'\n", name, env);
		exit(2);
	}
	return (unsigned)v;
}

int main(void)
{
	unsigned scale = env_uint("STRESS_SCALE", 1, 10000);
	g_seed = env_uint("STRESS_SEED", (unsigned)(now_ns() % 1000000007u) + 1, UINT32_MAX);
	rnd_state = g_seed;
	/* Watchdog: a hang is a failure (SIGALRM's default action ends the process). */
	alarm(120 * scale);

	static struct stress st;
	struct figures f = {0};
	pthread_t cons, stats;

	st.ctl = aligned_alloc(RING_CACHELINE, sizeof(*st.ctl));
	st.data = aligned_alloc(RING_CACHELINE, STRESS_RING_BYTES);
	if (!st.ctl || !st.data)
		fail("out of memory");
	/* Positions start near 2^64, so they wrap during the run. */
	if (ring_ctl_init(st.ctl, STRESS_RING_BYTES, (uint64_t)0 - 40ull * STRESS_RING_BYTES))
		fail("ring_ctl_init");
	st.notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (st.notify_fd < 0)
		fail("eventfd: %s", strerror(errno));
	pthread_mutex_init(&st.lock, NULL);

	uint64_t t0 = now_ns();
	if (pthread_create(&cons, NULL, consumer_main, &st) ||
	    pthread_create(&stats, NULL, stats_main, &st))
		fail("pthread_create");
	phase_cycles(&st, &f, STRESS_CYCLES * scale);
	phase_deaths(&st, &f, STRESS_DEATHS * scale);
	phase_multi(&st, &f, STRESS_MULTI * scale);
	/* Pairs with the acquire loads in the consumer and stats threads. */
	atomic_store_explicit(&st.done, true, memory_order_release);
	pthread_join(cons, NULL);
	pthread_join(stats, NULL);
	double secs = (double)(now_ns() - t0) * 1e-9;

	if (st.samples + f.dropped != f.pushed)
		fail("consumer saw %llu samples + %llu dropped, cycles counted %llu",
		     (unsigned long long)st.samples, (unsigned long long)f.dropped,
		     (unsigned long long)f.pushed);
	if (!st.stats_calls)
		fail("the stats thread never saw a live sampler");

	printf("stress_sampler: ok starts=%llu deaths=%llu gone_seen=%llu records=%llu "
	       "samples=%llu "
	       "gone_records=%llu dropped=%llu batches=%llu stats_calls=%llu "
	       "stop_us_max=%llu stop_us_mean=%llu gone_wait_us_max=%llu seconds=%.1f\n",
	       (unsigned long long)f.starts, (unsigned long long)(STRESS_DEATHS * scale),
	       (unsigned long long)f.gone_seen, (unsigned long long)st.records,
	       (unsigned long long)st.samples, (unsigned long long)st.gone_records,
	       (unsigned long long)f.dropped, (unsigned long long)st.batches,
	       (unsigned long long)st.stats_calls, (unsigned long long)(f.stop_ns_max / 1000),
	       (unsigned long long)(f.stop_ns_total / f.starts / 1000),
	       (unsigned long long)(f.gone_wait_ns_max / 1000), secs);
	close(st.notify_fd);
	free(st.ctl);
	free(st.data);
	return 0;
}
