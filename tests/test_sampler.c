/* test_sampler.c - the sampler thread on live children (tests/prog_touch_mem).
 *
 * What is checked (issue 3, Tests): sample timing at 10 Hz over 2 s, stop latency at a 60 s
 * interval, start failures that leave nothing behind (fds counted in /proc/self/fd), a process
 * that exits mid-run (reaped or left a zombie), each source on a child whose RSS grows by a
 * known amount, the trace-buffers callback carried into samples, late ticks skipped and
 * counted, slow sources stretching their interval, the notify eventfd, several pids, a full
 * ring. Timing is checked on what the sampler recorded about itself (each sample's time,
 * read time, skipped ticks and interval in force: expect_on_grid, expect_stretch_rule), so a
 * loaded machine, which decides how late each wake-up is, cannot fail a correct sampler.
 *
 * The child binary is $TRC_BUILD/tests/prog_touch_mem (make sets TRC_BUILD to build or
 * build/asan), "build" when unset.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "sampler.h"
#include "trcfile.h" /* trcfile_rss_source_name */

#define MS 1000000ull
#define MIB (1ull << 20)
#define MAX_SAMPLES 4096

/* ---- helpers: time, fds, children ------------------------------------------------------ */

static uint64_t now_ns(void)
{
	return trc_mono_ns();
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

struct child {
	pid_t pid;
	int to_child; /* its stdin: a byte advances "staged", end of file ends "wait" */
	int from_child; /* its stdout: "base\n", "ready\n" */
	bool reaped;
};

static void child_expect_line(struct child *c, const char *line)
{
	char buf[16];
	size_t n = 0, want = strlen(line);

	while (n < want) {
		ssize_t r = read(c->from_child, buf + n, want - n);
		if (r < 0 && errno == EINTR)
			continue;
		cr_assert_gt(r, 0, "child %d said nothing (wanted %s)", c->pid, line);
		n += (size_t)r;
	}
	cr_assert(memcmp(buf, line, want) == 0, "child said %.*s, wanted %s", (int)n, buf, line);
}

/* Starts prog_touch_mem MIB MODE and waits until it has said `first_line`. */
static struct child child_start(unsigned mib, const char *mode, const char *first_line)
{
	const char *b = getenv("TRC_BUILD") ? getenv("TRC_BUILD") : "build";
	char path[512], mib_s[16];
	int in[2], out[2];
	struct child c = {0};

	snprintf(path, sizeof(path), "%s/tests/prog_touch_mem", b);
	snprintf(mib_s, sizeof(mib_s), "%u", mib);
	cr_assert_eq(access(path, X_OK), 0, "%s not built", path);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	c.pid = fork();
	cr_assert_geq(c.pid, 0);
	if (c.pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl(path, "prog_touch_mem", mib_s, mode, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c.to_child = in[1];
	c.from_child = out[0];
	child_expect_line(&c, first_line);
	return c;
}

/* Ends a "wait" child (end of file on its stdin) and reaps it; fine on an exited one. */
static void child_end(struct child *c)
{
	if (c->to_child >= 0)
		close(c->to_child);
	if (c->from_child >= 0)
		close(c->from_child);
	c->to_child = c->from_child = -1;
	if (!c->reaped) {
		int st;
		cr_assert_eq(waitpid(c->pid, &st, 0), c->pid);
		c->reaped = true;
	}
}

/* ---- helpers: the ring and the sampler ------------------------------------------------- */

struct rig {
	struct ring_ctl *ctl;
	void *data;
	uint64_t capacity;
	struct rss_sample samples[MAX_SAMPLES];
	uint64_t due[MAX_SAMPLES]; /* expect_on_grid: sample k is due at D0 + due[k] */
	size_t n;
	struct rss_gone gone[8];
	size_t n_gone;
};

static struct rig *rig_new(uint64_t capacity)
{
	struct rig *r = calloc(1, sizeof(*r));
	cr_assert_not_null(r);
	r->capacity = capacity;
	r->ctl = aligned_alloc(RING_CACHELINE, sizeof(struct ring_ctl));
	r->data = aligned_alloc(RING_CACHELINE, capacity);
	cr_assert(r->ctl && r->data);
	cr_assert_eq(ring_ctl_init(r->ctl, capacity, 0), 0);
	return r;
}

static void rig_free(struct rig *r)
{
	free(r->ctl);
	free(r->data);
	free(r);
}

/* Reads every record the sampler pushed (after sampler_stop, or concurrently: SPSC). */
static void rig_drain(struct rig *r)
{
	struct ring_consumer c;
	struct ring_batch b;
	struct ring_record rec;
	int got;

	cr_assert_eq(ring_consumer_attach(&c, r->ctl, r->data, r->capacity), 0);
	r->n = r->n_gone = 0;
	cr_assert_eq(ring_batch_begin(&c, &b), 0);
	while ((got = ring_batch_next(&c, &b, &rec)) == 1) {
		if (rec.tag == SAMPLER_TAG_SAMPLE) {
			cr_assert_geq(rec.payload_bytes, sizeof(struct rss_sample));
			cr_assert_lt(r->n, MAX_SAMPLES);
			memcpy(&r->samples[r->n++], rec.payload, sizeof(struct rss_sample));
		} else {
			cr_assert_eq(rec.tag, SAMPLER_TAG_GONE, "unknown tag %u", rec.tag);
			cr_assert_lt(r->n_gone, 8);
			memcpy(&r->gone[r->n_gone++], rec.payload, sizeof(struct rss_gone));
		}
	}
	cr_assert_eq(got, 0);
	ring_batch_release(&c, &b);
}

static struct sampler_config rig_config(struct rig *r, const pid_t *pids, size_t n_pids,
					uint64_t interval_ns, enum trc_rss_source source)
{
	return (struct sampler_config){
		.pids = pids,
		.n_pids = n_pids,
		.interval_ns = interval_ns,
		.source = source,
		.ring_ctl = r->ctl,
		.ring_data = r->data,
		.ring_capacity = r->capacity,
		.notify_fd = -1,
	};
}

static struct sampler *start_ok(const struct sampler_config *cfg)
{
	int err = 0;
	struct sampler *s = sampler_start(cfg, &err);
	cr_assert_not_null(s, "sampler_start: %s", strerror(-err));
	return s;
}

/* Waits until the sampler has taken n samples (or given up); fails after timeout_ns. */
static void wait_samples(struct sampler *s, uint64_t n, uint64_t timeout_ns)
{
	struct sampler_stats st;
	uint64_t end = now_ns() + timeout_ns;

	for (;;) {
		sampler_get_stats(s, &st);
		if (st.samples >= n)
			return;
		cr_assert_lt(now_ns(), end, "only %llu of %llu samples in time",
			     (unsigned long long)st.samples, (unsigned long long)n);
		sleep_ns(2 * MS);
	}
}

static void wait_gone(struct sampler *s, uint64_t timeout_ns)
{
	struct sampler_stats st;
	uint64_t end = now_ns() + timeout_ns;

	for (;;) {
		sampler_get_stats(s, &st);
		if (st.process_gone)
			return;
		cr_assert_lt(now_ns(), end, "the sampler did not notice the process was gone");
		sleep_ns(2 * MS);
	}
}

/* Waits until the sampler has accounted for n ticks (taken or skipped as late): once it waits
 * for deadline j, ticks 0..j-1 are all counted. Fails after timeout_ns. */
static void wait_ticks(struct sampler *s, uint64_t n, uint64_t timeout_ns)
{
	struct sampler_stats st;
	uint64_t end = now_ns() + timeout_ns;

	for (;;) {
		sampler_get_stats(s, &st);
		if (st.samples + st.skipped_ticks >= n)
			return;
		cr_assert_lt(now_ns(), end, "only %llu + %llu skipped of %llu ticks in time",
			     (unsigned long long)st.samples, (unsigned long long)st.skipped_ticks,
			     (unsigned long long)n);
		sleep_ns(2 * MS);
	}
}

/* Checks the drained samples against the grid, from what the sampler recorded about its own
 * timing (no wall-clock expectation, so a loaded machine cannot fail it). D0, the first
 * deadline, is not recorded, but t_start <= D0 <= samples[0].ts_ns (t_start: taken before
 * sampler_start). Sample k is due at D0 + due[k], due[k] = due[k-1] + (1 + its skipped ticks)
 * * the interval in force after sample k-1. For every k >= 1:
 *   - never early, and no tick counted as skipped that had not passed (it would put the
 *     sample's deadline after it): ts_k >= t_start + due[k];
 *   - no passed tick left uncounted (no catching up): the deadline chosen after sample k-1 was
 *     the first one still ahead when that tick ended, which was after its read:
 *     ts_0 + due[k] > ts_{k-1} + read_ns_{k-1}.
 * Fills r->due. */
static void expect_on_grid(struct rig *r, uint64_t t_start)
{
	cr_assert_gt(r->n, 0);
	cr_expect_geq(r->samples[0].ts_ns, t_start);
	r->due[0] = 0;
	for (size_t k = 1; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k], *p = &r->samples[k - 1];
		r->due[k] = r->due[k - 1] + (1ull + x->skipped_ticks) * p->interval_ns;
		cr_expect_gt(x->ts_ns, p->ts_ns, "sample %zu not after %zu", k, k - 1);
		cr_expect_geq(
			x->ts_ns, t_start + r->due[k],
			"sample %zu (due %llu ms after start) early, or skipped ticks overcounted",
			k, (unsigned long long)(r->due[k] / MS));
		cr_expect_gt(
			r->samples[0].ts_ns + r->due[k], p->ts_ns + p->fig.read_ns,
			"sample %zu: a tick that passed during the previous one was not skipped",
			k);
	}
}

/* ---- timing ---------------------------------------------------------------------------- */

/* 10 Hz for 2 s. What a loaded machine decides (how late each wake-up is, so how many ticks
 * are taken or skipped) is measured, not assumed: the checks are on what the sampler recorded
 * (expect_on_grid) and on ticks derived from the time this test actually waited. */
Test(sampler, timing_10hz_over_2s, .timeout = 30)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	struct sampler *s;
	uint64_t t_start, t_first, t_mid, due_by_mid, counted_skipped = 0;
	size_t decreases = 0;

	t_start = now_ns();
	s = start_ok(&cfg);
	wait_samples(s, 1, 5000 * MS);
	t_first = now_ns(); /* >= the first sample >= D0 */
	sleep_ns(2000 * MS);
	t_mid = now_ns();
	/* The deadlines D0 + k * 100 ms up to t_mid, at least (t_mid - t_first) / 100 ms + 1 of
	 * them, are all taken or skipped once the thread has caught up (a sampler that stopped
	 * ticking fails here). */
	due_by_mid = (t_mid - t_first) / (100 * MS) + 1;
	cr_assert_geq(due_by_mid, 20);
	wait_ticks(s, due_by_mid, 10000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_assert_geq(r->n, st.samples);
	cr_assert_geq(r->n, 3);
	cr_expect_eq(st.read_errors, 0);
	cr_expect_gt(st.cpu_ns, 0);
	cr_expect(!st.process_gone);
	for (size_t k = 0; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k];
		cr_expect_eq(x->fig.pid, (uint32_t)c.pid);
		cr_expect_eq(x->fig.source, TRC_RSS_STATM);
		cr_expect_eq(x->interval_ns, 100 * MS);
		cr_expect_eq(x->fig.flags & TRC_RSS_STRETCHED, 0);
		cr_expect_gt(x->fig.rss_bytes, 0);
		cr_expect_gt(x->fig.read_ns, 0);
		if (k < st.samples)
			counted_skipped += x->skipped_ticks;
	}
	cr_expect_eq(r->samples[0].skipped_ticks, 0);
	/* The stats count at least the skipped ticks of the samples pushed when they were read
	 * (ticks skipped since the last sample are counted before a sample carries them). */
	cr_expect_geq(st.skipped_ticks, counted_skipped, "stats %llu, samples %llu",
		      (unsigned long long)st.skipped_ticks, (unsigned long long)counted_skipped);
	/* Absolute deadlines: never early, every passed tick skipped and counted. */
	expect_on_grid(r, t_start);
	/* No drift: with absolute deadlines a sample's lateness is its own wake-up's, so it
	 * goes down now and then; deadlines taken from the end of the previous tick would make
	 * it grow at every sample by the tick's cost. */
	for (size_t k = 2; k < r->n; k++) {
		int64_t late_k = (int64_t)(r->samples[k].ts_ns - r->samples[0].ts_ns - r->due[k]);
		int64_t late_p =
			(int64_t)(r->samples[k - 1].ts_ns - r->samples[0].ts_ns - r->due[k - 1]);
		if (late_k < late_p)
			decreases++;
	}
	cr_expect_gt(decreases, 0, "the lateness grew at each of %zu samples: drift", r->n);
	rig_free(r);
	child_end(&c);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The median of nine stops, not the worst: a loaded machine can delay any one wake-up by
 * hundreds of ms, but not most of them, while a stop that waited for the tick (60 s) or
 * polled in slices (0..slice each) is slow in most. */
Test(sampler, stop_is_immediate_at_60s_interval, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 12);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 60000 * MS, TRC_RSS_STATM);
	uint64_t took[9];

	for (int i = 0; i < 9; i++) {
		struct sampler *s = start_ok(&cfg);
		wait_samples(s, 1, 2000 * MS);
		sleep_ns(20 * MS); /* the thread is now in ppoll with ~60 s to go */
		uint64_t t0 = now_ns();
		sampler_stop(s);
		took[i] = now_ns() - t0;
	}
	qsort(took, 9, sizeof(took[0]), cmp_u64);
	cr_expect_lt(took[4], 100 * MS, "median stop took %llu us (fastest %llu us)",
		     (unsigned long long)(took[4] / 1000), (unsigned long long)(took[0] / 1000));
	rig_drain(r);
	cr_expect_eq(r->n, 9, "one sample per start (first at once), none at stop");
	rig_free(r);
	child_end(&c);
}

Test(sampler, stop_right_after_start, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 12);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 60000 * MS, TRC_RSS_STATM);

	/* A stop that lands before the thread reaches ppoll must still end it at once. */
	for (int i = 0; i < 20; i++) {
		uint64_t t0 = now_ns();
		sampler_stop(start_ok(&cfg));
		/* Start + stop includes creating and joining a thread, which a loaded 2-core
		 * machine can delay by tens of ms; a stop that waited for the tick would take 60 s. */
		cr_expect_lt(now_ns() - t0, 1000 * MS);
	}
	rig_free(r);
	child_end(&c);
}

struct slow_call {
	atomic_int calls;
	_Atomic uint64_t slept_until; /* when the slow call returned */
};

/* The second call holds the sampler thread 350 ms. */
static uint64_t slow_second_call(void *arg, pid_t pid)
{
	struct slow_call *sc = arg;
	(void)pid;
	if (atomic_fetch_add(&sc->calls, 1) == 1) {
		sleep_ns(350 * MS);
		atomic_store(&sc->slept_until, now_ns());
	}
	return 0;
}

/* The callback of sample 1 (due at D0 + 100 ms) holds the thread 350 ms: the ticks due
 * meanwhile are skipped (at least 3: 200, 300 and 400 ms when nothing else is late), counted,
 * and carried by sample 2, which stays on the grid. How many more a loaded machine adds is
 * measured from the recorded times, not assumed. */
Test(sampler, late_ticks_are_skipped_and_counted, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM);
	struct slow_call sc = {0};
	struct sampler_stats st;
	struct sampler *s;
	uint64_t t_start, counted_skipped = 0;

	cfg.buffers_resident_bytes = slow_second_call;
	cfg.buffers_arg = &sc;
	t_start = now_ns();
	s = start_ok(&cfg);
	wait_samples(s, 5, 10000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_assert_geq(r->n, 5);
	/* Every sample on the grid: none early, no passed tick left uncounted. */
	expect_on_grid(r, t_start);
	/* Sample 1's tick ended after the slow call returned: every deadline up to then had
	 * passed, so sample 2's is later (expect_on_grid's bound with the call's end, which
	 * comes after the read). */
	cr_expect_gt(
		r->samples[0].ts_ns + r->due[2], atomic_load(&sc.slept_until),
		"sample 2 due %llu ms after sample 0, the slow call ended %llu ms after it",
		(unsigned long long)(r->due[2] / MS),
		(unsigned long long)((atomic_load(&sc.slept_until) - r->samples[0].ts_ns) / MS));
	/* The call started after sample 1's deadline and slept 350 ms: 3 deadlines at least. */
	cr_expect_geq(r->samples[2].skipped_ticks, 3);
	cr_expect_eq(r->samples[0].skipped_ticks, 0);
	for (size_t k = 0; k < r->n && k < st.samples; k++)
		counted_skipped += r->samples[k].skipped_ticks;
	cr_expect_geq(st.samples, 3);
	cr_expect_geq(st.skipped_ticks, counted_skipped, "stats %llu, samples %llu",
		      (unsigned long long)st.skipped_ticks, (unsigned long long)counted_skipped);
	rig_free(r);
	child_end(&c);
}

/* ---- start failures -------------------------------------------------------------------- */

static int failing_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	(void)t, (void)a, (void)fn, (void)arg;
	return EAGAIN;
}

Test(sampler, injected_start_failure_leaves_nothing, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 12);
	enum trc_rss_source sources[] = {TRC_RSS_STATM, TRC_RSS_STATUS, TRC_RSS_SMAPS_ROLLUP,
				     TRC_RSS_BOTH};
	int fds_before = count_fds();

	for (size_t i = 0; i < 4; i++) {
		struct sampler_config cfg = rig_config(r, &c.pid, 1, 100 * MS, sources[i]);
		int err = 0;
		cfg.create_thread = failing_create;
		cr_expect_null(sampler_start(&cfg, &err));
		cr_expect_eq(err, -EAGAIN);
	}
	cr_expect_eq(count_fds(), fds_before, "fds leaked by a failed start");
	cr_expect_eq(atomic_load(&r->ctl->write_pos), 0, "a failed start wrote to the ring");
	/* The child is ours to stop, and nothing else holds it. */
	rig_free(r);
	child_end(&c);
}

Test(sampler, bad_configs_are_rejected, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 12);
	struct rig *tiny = rig_new(64); /* valid ring, too small for one sample */
	pid_t none = 0x3fffffff; /* above any pid_max: no such process */
	pid_t two[2] = {c.pid, none};
	int efd = eventfd(0, EFD_CLOEXEC);
	int fds_before = count_fds();
	struct sampler_config cfg;
	int err;

#define EXPECT_FAIL(mutate, want)                                           \
	do {                                                                \
		cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM); \
		mutate;                                                     \
		err = 0;                                                    \
		cr_expect_null(sampler_start(&cfg, &err), #mutate);         \
		cr_expect_eq(err, want, "%s: %d", #mutate, err);            \
	} while (0)

	EXPECT_FAIL(cfg.n_pids = 0, -EINVAL);
	EXPECT_FAIL(cfg.pids = NULL, -EINVAL);
	EXPECT_FAIL(cfg.n_pids = SAMPLER_MAX_PIDS + 1, -EINVAL);
	EXPECT_FAIL(cfg.interval_ns = 0, -EINVAL);
	EXPECT_FAIL(cfg.interval_ns = TRC_RSS_INTERVAL_MIN_NS - 1, -EINVAL);
	EXPECT_FAIL(cfg.interval_ns = TRC_RSS_INTERVAL_MAX_NS + 1, -EINVAL);
	EXPECT_FAIL(cfg.source = (enum trc_rss_source)0, -EINVAL);
	EXPECT_FAIL(cfg.source = (enum trc_rss_source)5, -EINVAL);
	EXPECT_FAIL(cfg.ring_ctl = NULL, -EINVAL);
	EXPECT_FAIL(cfg.ring_capacity = 1000, -EINVAL);
	EXPECT_FAIL((cfg.ring_ctl = tiny->ctl, cfg.ring_data = tiny->data,
		     cfg.ring_capacity = tiny->capacity),
		    -EINVAL);
	EXPECT_FAIL(cfg.notify_fd = 0, -EINVAL); /* stdin is no eventfd: a forgotten -1 */
	EXPECT_FAIL(cfg.notify_fd = -2, -EINVAL);
	EXPECT_FAIL(cfg.pids = &none, -ESRCH);
	/* The second pid fails after the first one's files were opened: all closed again. */
	EXPECT_FAIL((cfg.pids = two, cfg.n_pids = 2), -ESRCH);
	EXPECT_FAIL((cfg.pids = two, cfg.n_pids = 2, cfg.source = TRC_RSS_BOTH), -ESRCH);
#undef EXPECT_FAIL
	cr_expect_eq(count_fds(), fds_before, "fds leaked by rejected configs");
	cr_expect_null(sampler_start(NULL, &err));
	cr_expect_eq(err, -EINVAL);
	/* A real eventfd is accepted. */
	cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM);
	cfg.notify_fd = efd;
	sampler_stop(start_ok(&cfg));
	cr_expect_eq(count_fds(), fds_before, "fds leaked by start and stop");
	sampler_stop(NULL); /* accepted */
	close(efd);
	rig_free(tiny);
	rig_free(r);
	child_end(&c);
}

/* ---- the process goes away ------------------------------------------------------------- */

static void exits_mid_run(enum trc_rss_source source, bool reap)
{
	struct child c = child_start(4, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 10 * MS, source);
	struct sampler_stats st;
	struct sampler *s;
	int fds_before = count_fds();

	cfg.push_gone_record = true;
	s = start_ok(&cfg);
	/* The child exits when told (end of file on its stdin), not after a fixed time: on a
	 * loaded machine a timed exit can come before the sampler has read anything. */
	wait_samples(s, 4, 5000 * MS);
	close(c.to_child);
	c.to_child = -1;
	fds_before--; /* the pipe end just closed */
	if (reap) {
		int wst;
		cr_assert_eq(waitpid(c.pid, &wst, 0), c.pid);
		c.reaped = true;
	}
	/* Not reaped: a zombie, whose statm reads zeros; it must not become a 0-byte sample. */
	wait_gone(s, 5000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_expect(st.process_gone);
	cr_expect_eq(st.read_errors, 0, "gone is not an error (last %d)", st.last_error);
	cr_assert_gt(r->n, 3, "%s: %zu samples", trcfile_rss_source_name(source), r->n);
	cr_expect_eq(st.samples, r->n);
	for (size_t k = 0; k < r->n; k++) {
		cr_expect_gt(r->samples[k].fig.rss_bytes, 4 * MIB, "%s: sample %zu reads %llu",
			     trcfile_rss_source_name(source), k,
			     (unsigned long long)r->samples[k].fig.rss_bytes);
		if (source == TRC_RSS_SMAPS_ROLLUP || source == TRC_RSS_BOTH)
			cr_expect_gt(r->samples[k].fig.pss_bytes, 0);
	}
	cr_assert_eq(r->n_gone, 1);
	cr_expect_eq(r->gone[0].pid, (uint32_t)c.pid);
	cr_expect_eq(r->gone[0].error, -ESRCH);
	cr_expect_gt(r->gone[0].ts_ns, r->samples[r->n - 1].ts_ns);
	cr_expect_eq(count_fds(), fds_before, "the thread left fds behind");
	if (!reap) {
		int wst;
		cr_assert_eq(waitpid(c.pid, &wst, 0), c.pid);
		c.reaped = true;
	}
	rig_free(r);
	child_end(&c);
}

Test(sampler, process_exits_mid_run_reaped, .timeout = 30)
{
	exits_mid_run(TRC_RSS_STATM, true);
	exits_mid_run(TRC_RSS_SMAPS_ROLLUP, true);
}

Test(sampler, process_exits_mid_run_zombie, .timeout = 30)
{
	exits_mid_run(TRC_RSS_STATM, false);
	exits_mid_run(TRC_RSS_STATUS, false);
	exits_mid_run(TRC_RSS_SMAPS_ROLLUP, false);
	exits_mid_run(TRC_RSS_BOTH, false);
}

Test(sampler, gone_record_is_opt_in, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 5 * MS, TRC_RSS_STATM);
	struct sampler *s = start_ok(&cfg);

	wait_samples(s, 1, 5000 * MS);
	close(c.to_child);
	c.to_child = -1;
	wait_gone(s, 5000 * MS);
	sampler_stop(s);
	rig_drain(r);
	cr_expect_gt(r->n, 0);
	cr_expect_eq(r->n_gone, 0, "a GONE record without push_gone_record");
	rig_free(r);
	child_end(&c);
}

/* ---- figures --------------------------------------------------------------------------- */

/* Runs a sampler until it has taken 3 samples and returns the last one. */
static struct rss_sample sample_now(pid_t pid, enum trc_rss_source source)
{
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &pid, 1, 5 * MS, source);
	struct sampler *s = start_ok(&cfg);
	struct rss_sample last;

	wait_samples(s, 3, 5000 * MS);
	sampler_stop(s);
	rig_drain(r);
	cr_assert_geq(r->n, 3);
	last = r->samples[r->n - 1];
	rig_free(r);
	return last;
}

static void expect_grown(const char *what, enum trc_rss_source src, uint64_t before, uint64_t after,
			 uint64_t mib)
{
	int64_t delta = (int64_t)(after - before);
	/* The mapping itself is exact; allow the page tables (0.2 %), a few libc pages, and
	 * sanitizer runtime noise in the ASan tier. */
	cr_expect_geq(delta, (int64_t)((mib - 1) * MIB), "%s %s grew %lld bytes, want ~%llu MiB",
		      trcfile_rss_source_name(src), what, (long long)delta, (unsigned long long)mib);
	cr_expect_leq(delta, (int64_t)((mib + 4) * MIB), "%s %s grew %lld bytes, want ~%llu MiB",
		      trcfile_rss_source_name(src), what, (long long)delta, (unsigned long long)mib);
}

Test(sampler, each_source_sees_known_growth, .timeout = 30)
{
	const uint64_t mib = 48;
	enum trc_rss_source sources[] = {TRC_RSS_STATM, TRC_RSS_STATUS, TRC_RSS_SMAPS_ROLLUP,
				     TRC_RSS_BOTH};
	struct rss_sample before[4], after[4];
	struct child c = child_start((unsigned)mib, "staged", "base\n");

	for (int i = 0; i < 4; i++)
		before[i] = sample_now(c.pid, sources[i]);
	cr_assert_eq(write(c.to_child, "t", 1), 1);
	child_expect_line(&c, "ready\n");
	for (int i = 0; i < 4; i++)
		after[i] = sample_now(c.pid, sources[i]);

	for (int i = 0; i < 4; i++) {
		enum trc_rss_source src = sources[i];
		const struct rss_sample *b = &before[i], *a = &after[i];
		cr_expect_eq(a->fig.source, (uint32_t)src);
		expect_grown("rss", src, b->fig.rss_bytes, a->fig.rss_bytes, mib);
		switch (src) {
		case TRC_RSS_STATM:
			cr_expect_eq(a->fig.flags & (TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT |
						 TRC_RSS_HAS_EXACT),
				     0);
			break;
		case TRC_RSS_STATUS:
			cr_expect_eq(a->fig.flags & (TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT),
				     TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT);
			expect_grown("anon", src, b->fig.anon_bytes, a->fig.anon_bytes, mib);
			expect_grown("hwm", src, b->fig.hwm_bytes, a->fig.hwm_bytes, mib);
			cr_expect_eq(a->fig.anon_bytes + a->fig.file_bytes + a->fig.shmem_bytes, a->fig.rss_bytes);
			cr_expect_geq(a->fig.hwm_bytes, a->fig.rss_bytes);
			break;
		case TRC_RSS_SMAPS_ROLLUP:
		case TRC_RSS_BOTH:
			cr_expect(a->fig.flags & TRC_RSS_HAS_EXACT);
			expect_grown("exact", src, b->fig.rss_exact_bytes, a->fig.rss_exact_bytes, mib);
			expect_grown("pss", src, b->fig.pss_bytes, a->fig.pss_bytes, mib);
			cr_expect_leq(a->fig.pss_bytes, a->fig.rss_exact_bytes);
			/* The child is idle: statm and the rollup agree (exactly, on this kernel).
			 */
			cr_expect_leq(a->fig.rss_bytes > a->fig.rss_exact_bytes
					      ? a->fig.rss_bytes - a->fig.rss_exact_bytes
					      : a->fig.rss_exact_bytes - a->fig.rss_bytes,
				      MIB);
			break;
		}
	}
	child_end(&c);
}

struct cb_log {
	atomic_int calls;
	atomic_int wrong_pid;
	pid_t want_pid;
};

static uint64_t buffers_cb(void *arg, pid_t pid)
{
	struct cb_log *log = arg;
	if (pid != log->want_pid)
		atomic_fetch_add(&log->wrong_pid, 1);
	return 4096ull * (uint64_t)atomic_fetch_add(&log->calls, 1) + 12345;
}

Test(sampler, buffers_callback_is_carried, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 5 * MS, TRC_RSS_STATM);
	struct cb_log log = {.want_pid = c.pid};
	struct sampler *s;

	cfg.buffers_resident_bytes = buffers_cb;
	cfg.buffers_arg = &log;
	s = start_ok(&cfg);
	wait_samples(s, 4, 5000 * MS);
	sampler_stop(s);
	rig_drain(r);
	cr_assert_geq(r->n, 4);
	cr_expect_eq(atomic_load(&log.wrong_pid), 0);
	cr_expect_eq((size_t)atomic_load(&log.calls), r->n, "one call per sample");
	for (size_t k = 0; k < r->n; k++)
		cr_expect_eq(r->samples[k].fig.buffers_bytes, 4096ull * k + 12345, "sample %zu", k);
	rig_free(r);
	child_end(&c);
}

Test(sampler, no_callback_means_zero_buffers, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rss_sample x = sample_now(c.pid, TRC_RSS_STATM);
	cr_expect_eq(x.fig.buffers_bytes, 0);
	child_end(&c);
}

/* ---- slow sources, notify, several pids, full ring ------------------------------------- */

/* The interval the stretch rule (sampler.h "Slow sources") puts in force after sample k, from
 * the reads the samples recorded: the configured interval, or the smallest multiple of it at
 * least ten times the cheapest of the last SAMPLER_READ_WINDOW reads. One pid, no read
 * errors: each tick's read is its sample's read_ns. */
static uint64_t stretch_rule(const struct rig *r, size_t k, uint64_t interval_ns)
{
	uint64_t cheapest = UINT64_MAX;

	for (size_t j = k + 1 > SAMPLER_READ_WINDOW ? k + 1 - SAMPLER_READ_WINDOW : 0; j <= k; j++)
		if (r->samples[j].fig.read_ns < cheapest)
			cheapest = r->samples[j].fig.read_ns;
	if (cheapest <= interval_ns / 10)
		return interval_ns;
	return (cheapest * 10 + interval_ns - 1) / interval_ns * interval_ns;
}

/* Every sample carries the interval the rule gives from the recorded reads, flagged
 * stretched exactly when it is above the configured one. Returns how many are. */
static size_t expect_stretch_rule(const struct rig *r, uint64_t interval_ns)
{
	size_t stretched = 0;

	for (size_t k = 0; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k];
		uint64_t want = stretch_rule(r, k, interval_ns);
		cr_expect_eq(x->interval_ns, want, "sample %zu: interval %llu, reads want %llu", k,
			     (unsigned long long)x->interval_ns, (unsigned long long)want);
		cr_expect_eq(!!(x->fig.flags & TRC_RSS_STRETCHED), x->interval_ns > interval_ns,
			     "sample %zu: flag and interval %llu disagree", k,
			     (unsigned long long)x->interval_ns);
		stretched += x->interval_ns > interval_ns;
	}
	return stretched;
}

/* smaps_rollup of 128 MiB walks ~32k pages (about 1.7 ms here, more under load), far above a
 * tenth of a 1 ms interval; statm on the same process stays far below it. The intervals are
 * checked against the reads the sampler recorded, which a loaded machine makes longer but
 * cannot make disagree with the rule. */
Test(sampler, slow_source_stretches_its_interval, .timeout = 30)
{
	struct child c = child_start(128, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 1 * MS, TRC_RSS_SMAPS_ROLLUP);
	struct sampler_stats st;
	struct sampler *s;
	uint64_t t_start = now_ns();
	size_t stretched;

	s = start_ok(&cfg);
	wait_samples(s, 8, 15000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_assert_geq(r->n, 8);
	cr_expect_eq(st.read_errors, 0);
	stretched = expect_stretch_rule(r, 1 * MS);
	cr_expect_gt(st.stretched, 0);
	cr_expect_leq(st.stretched, stretched);
	/* Once three reads are known to be slow, every sample is stretched (the rule above
	 * says so for reads over 100 us; this says the rollup's are). */
	for (size_t k = SAMPLER_READ_WINDOW - 1; k < r->n; k++)
		cr_expect(r->samples[k].fig.flags & TRC_RSS_STRETCHED,
			  "sample %zu not stretched: "
			  "read %llu ns",
			  k, (unsigned long long)r->samples[k].fig.read_ns);
	/* Absolute deadlines on the stretched grid: none early, no passed tick uncounted. */
	expect_on_grid(r, t_start);
	rig_free(r);

	/* The fast source on the same process: the rule holds too, and keeps the configured
	 * interval (a statm read takes microseconds; only a thread preempted in three reads in
	 * a row could see the cheapest above 1 ms, so "not all" rather than "none"). */
	r = rig_new(1 << 16);
	cfg = rig_config(r, &c.pid, 1, 10 * MS, TRC_RSS_STATM);
	t_start = now_ns();
	s = start_ok(&cfg);
	wait_samples(s, 10, 5000 * MS);
	sampler_stop(s);
	rig_drain(r);
	cr_assert_geq(r->n, 10);
	cr_expect_lt(expect_stretch_rule(r, 10 * MS), r->n, "statm stretched");
	expect_on_grid(r, t_start);
	rig_free(r);
	child_end(&c);
}

Test(sampler, notify_fd_is_written_each_tick, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 5 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	uint64_t count = 0;
	int efd = eventfd(0, EFD_CLOEXEC);
	struct sampler *s;

	cfg.notify_fd = efd;
	s = start_ok(&cfg);
	wait_samples(s, 5, 5000 * MS);
	sampler_stop(s);
	sampler_get_stats(NULL, &st); /* NULL handle: zeros, no crash */
	cr_expect_eq(st.samples, 0);
	rig_drain(r);
	cr_assert_eq(read(efd, &count, sizeof(count)), (ssize_t)sizeof(count));
	cr_expect_eq(count, r->n, "one wake-up per tick");
	close(efd);
	rig_free(r);
	child_end(&c);
}

Test(sampler, several_pids_one_series_each, .timeout = 20)
{
	struct child a = child_start(8, "wait", "ready\n");
	struct child b = child_start(2, "wait", "ready\n");
	pid_t pids[2] = {a.pid, b.pid};
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, pids, 2, 10 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	struct sampler *s;
	size_t na = 0, nb = 0;
	uint64_t last_b = 0;
	int wst;

	cfg.push_gone_record = true;
	s = start_ok(&cfg);
	wait_samples(s, 10, 5000 * MS); /* a few of each pid, then b exits */
	close(b.to_child);
	b.to_child = -1;
	cr_assert_eq(waitpid(b.pid, &wst, 0), b.pid);
	b.reaped = true;
	sleep_ns(100 * MS);
	sampler_get_stats(s, &st);
	cr_expect(!st.process_gone, "one pid gone is not all gone");
	child_end(&a); /* now the last one goes */
	wait_gone(s, 5000 * MS);
	sampler_stop(s);
	rig_drain(r);

	for (size_t k = 0; k < r->n; k++) {
		if (r->samples[k].fig.pid == (uint32_t)a.pid) {
			na++;
			cr_expect_gt(r->samples[k].fig.rss_bytes, 8 * MIB);
		} else {
			cr_assert_eq(r->samples[k].fig.pid, (uint32_t)b.pid);
			nb++;
			last_b = r->samples[k].ts_ns;
			cr_expect_gt(r->samples[k].fig.rss_bytes, 2 * MIB);
			cr_expect_lt(r->samples[k].fig.rss_bytes, 8 * MIB);
		}
	}
	cr_expect_gt(nb, 3);
	cr_expect_gt(na, nb + 3, "a outlived b by >100 ms: %zu vs %zu samples", na, nb);
	cr_assert_eq(r->n_gone, 2);
	cr_expect_eq(r->gone[0].pid, (uint32_t)b.pid);
	cr_expect_gt(r->gone[0].ts_ns, last_b);
	cr_expect_eq(r->gone[1].pid, (uint32_t)a.pid);
	rig_free(r);
	child_end(&b);
}

Test(sampler, full_ring_drops_and_counts, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	/* 512 bytes hold four 112-byte records; nobody drains. */
	struct rig *r = rig_new(512);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 1 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	uint64_t ticks = 0;
	int efd = eventfd(0, EFD_CLOEXEC);
	struct sampler *s;

	cfg.notify_fd = efd; /* one count per tick: the number of samples taken */
	s = start_ok(&cfg);
	wait_samples(s, 10, 5000 * MS);
	sampler_get_stats(s, &st);
	cr_expect_gt(st.ring_dropped, 0);
	sampler_stop(s);
	rig_drain(r);
	cr_assert_eq(read(efd, &ticks, sizeof(ticks)), (ssize_t)sizeof(ticks));
	cr_expect_eq(r->n, 4);
	cr_expect_geq(ticks, 10);
	/* Every sample taken was either pushed or counted as dropped, exactly. */
	cr_expect_eq(atomic_load(&r->ctl->dropped) + r->n, ticks);
	close(efd);
	rig_free(r);
	child_end(&c);
}

/* ---- a tree: pids discovered as they appear ------------------------------------------------ */

struct discover_list {
	_Atomic int n; /* pids listed so far (the test appends; the sampler thread reads) */
	pid_t pids[4];
	_Atomic int calls;
};

static size_t discover_list(void *arg, pid_t *out, size_t max)
{
	struct discover_list *d = arg;
	int n = atomic_load(&d->n);
	atomic_fetch_add(&d->calls, 1);
	for (int i = 0; i < n && (size_t)i < max; i++)
		out[i] = d->pids[i];
	return (size_t)n;
}

Test(sampler, discovered_pids_join_on_the_same_ticks, .timeout = 20)
{
	struct child a = child_start(2, "wait", "ready\n");
	struct child b = child_start(8, "wait", "ready\n");
	struct discover_list d = {0};
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &a.pid, 1, 10 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	struct sampler *s;

	cfg.discover = discover_list;
	cfg.discover_arg = &d;
	/* Listed again and again: a pid already sampled is not added twice; 0 and the root's own
	 * pid are ignored. */
	d.pids[0] = a.pid;
	d.pids[1] = 0;
	atomic_store(&d.n, 2);
	s = start_ok(&cfg);
	wait_samples(s, 5, 5000 * MS);
	d.pids[2] = b.pid;
	atomic_store(&d.n, 3);
	wait_samples(s, 20, 5000 * MS);
	/* b exits: dropped, and not re-added although still listed. */
	child_end(&b);
	sleep_ns(100 * MS);
	sampler_get_stats(s, &st);
	cr_expect_eq(st.pids_added, 1);
	cr_expect(!st.process_gone);
	cr_expect_gt(atomic_load(&d.calls), 10);
	sampler_stop(s);
	rig_drain(r);

	size_t na = 0, nb = 0, same_tick = 0;
	uint64_t first_b = 0, last_a_before = 0;
	for (size_t k = 0; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k];
		if (x->fig.pid == (uint32_t)a.pid) {
			na++;
			if (!first_b)
				last_a_before = x->ts_ns;
		} else {
			cr_assert_eq(x->fig.pid, (uint32_t)b.pid);
			cr_expect_gt(x->fig.rss_bytes, 8 * MIB);
			if (!first_b)
				first_b = x->ts_ns;
			nb++;
			/* b's sample follows a's of the same tick: a tick pushes every pid's
			 * sample together, a (read first) then b. */
			if (k > 0 && r->samples[k - 1].fig.pid == (uint32_t)a.pid)
				same_tick++;
		}
	}
	cr_expect_gt(na, nb);
	cr_expect_geq(nb, 5);
	cr_expect_eq(same_tick, nb, "every b sample on one of a's ticks: %zu of %zu", same_tick,
		     nb);
	cr_expect_gt(first_b, last_a_before);
	rig_free(r);
	child_end(&a);
}

/* Each sample's interval is exactly the rule's (sampler.c, for one pid a tick's read is its
 * sample's read_ns): the configured interval while the cheapest of the last
 * SAMPLER_READ_WINDOW reads costs at most a tenth of it, else the smallest multiple of it at
 * least ten times that read. smaps_rollup of 512 MiB (about 7 ms a read here) against 20 ms:
 * stretched, and the window's minimum lands on both sides of a multiple. Mutants
 * sampler-stretch-never, sampler-stretch-round-down (tests/mutants/LIST). */
Test(sampler, stretched_interval_is_the_rule_exactly, .timeout = 60)
{
	const uint64_t iv = 20 * MS;
	struct child c = child_start(512, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, iv, TRC_RSS_SMAPS_ROLLUP);
	struct sampler *s = start_ok(&cfg);
	wait_samples(s, 20, 20000 * MS);
	sampler_stop(s);
	rig_drain(r);
	cr_assert_geq(r->n, 20);
	size_t stretched = 0;
	for (size_t k = 0; k < r->n; k++) {
		uint64_t cheapest = UINT64_MAX;
		size_t j0 = k + 1 >= SAMPLER_READ_WINDOW ? k + 1 - SAMPLER_READ_WINDOW : 0;
		for (size_t j = j0; j <= k; j++)
			if (r->samples[j].fig.read_ns < cheapest)
				cheapest = r->samples[j].fig.read_ns;
		uint64_t want = cheapest <= iv / 10 ? iv : (10 * cheapest + iv - 1) / iv * iv;
		cr_expect_eq(
			r->samples[k].interval_ns, want,
			"sample %zu: interval %llu ns, the rule gives %llu (cheapest read %llu)", k,
			(unsigned long long)r->samples[k].interval_ns, (unsigned long long)want,
			(unsigned long long)cheapest);
		stretched += want > iv;
	}
	cr_assert_gt(stretched, 0, "reads of 512 MiB's smaps_rollup cost over 2 ms");
	rig_free(r);
	child_end(&c);
}
