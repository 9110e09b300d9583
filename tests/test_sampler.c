/* test_sampler.c - the sampler thread on live children (tests/prog_touch_mem).
 *
 * What is checked (issue 3, Tests): sample timing at 10 Hz over 2 s, stop latency at a 60 s
 * interval, start failures that leave nothing behind (fds counted in /proc/self/fd), a process
 * that exits mid-run (reaped or left a zombie), each source on a child whose RSS grows by a
 * known amount, the trace-buffers callback carried into samples, late ticks skipped and
 * counted, slow sources stretching their interval, the notify eventfd, several pids, a full
 * ring. Timing assertions are generous where the loaded machine decides, strict on counts
 * and ordering.
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

/* ---- timing ---------------------------------------------------------------------------- */

Test(sampler, timing_10hz_over_2s, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	struct sampler *s;
	uint64_t t_start;

	t_start = now_ns();
	s = start_ok(&cfg);
	sleep_ns(2000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	/* Ticks at 0, 100, ..., 1900 ms and maybe 2000: 20 or 21 samples, none skipped. */
	cr_expect(r->n == 20 || r->n == 21, "%zu samples", r->n);
	cr_expect_eq(st.skipped_ticks, 0);
	/* The stats were read just before stop: the tick at 2000 ms may fall in between. */
	cr_expect(st.samples == r->n || st.samples + 1 == r->n, "stats %llu, ring %zu",
		  (unsigned long long)st.samples, r->n);
	cr_expect_eq(st.read_errors, 0);
	cr_expect_gt(st.cpu_ns, 0);
	cr_expect(!st.process_gone);
	cr_expect_geq(r->samples[0].ts_ns, t_start);
	for (size_t k = 0; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k];
		uint64_t since = x->ts_ns - r->samples[0].ts_ns;
		cr_expect_eq(x->fig.pid, (uint32_t)c.pid);
		cr_expect_eq(x->fig.source, TRC_RSS_STATM);
		cr_expect_eq(x->interval_ns, 100 * MS);
		cr_expect_eq(x->fig.flags & TRC_RSS_STRETCHED, 0);
		cr_expect_eq(x->skipped_ticks, 0);
		cr_expect_gt(x->fig.rss_bytes, 0);
		cr_expect_gt(x->fig.read_ns, 0);
		if (k == 0)
			continue;
		cr_expect_gt(x->ts_ns, r->samples[k - 1].ts_ns, "sample %zu not after %zu", k,
			     k - 1);
		/* Absolute deadlines: never early (the first read started a hair after D0),
		 * and no drift; the upper slack is for a loaded machine. */
		cr_expect_geq(since + 1 * MS, k * 100 * MS, "sample %zu early: %llu ns", k,
			      (unsigned long long)since);
		cr_expect_leq(since, k * 100 * MS + 60 * MS, "sample %zu late: %llu ns", k,
			      (unsigned long long)since);
	}
	rig_free(r);
	child_end(&c);
}

Test(sampler, stop_is_immediate_at_60s_interval, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 12);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 60000 * MS, TRC_RSS_STATM);
	uint64_t worst = 0;

	for (int i = 0; i < 5; i++) {
		struct sampler *s = start_ok(&cfg);
		wait_samples(s, 1, 2000 * MS);
		sleep_ns(20 * MS); /* the thread is now in ppoll with ~60 s to go */
		uint64_t t0 = now_ns();
		sampler_stop(s);
		uint64_t dt = now_ns() - t0;
		if (dt > worst)
			worst = dt;
	}
	cr_expect_lt(worst, 100 * MS, "stop took %llu us", (unsigned long long)(worst / 1000));
	rig_drain(r);
	cr_expect_eq(r->n, 5, "one sample per start (first at once), none at stop");
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

/* The second call holds the sampler thread 350 ms (arg: an atomic_int call counter). */
static uint64_t slow_second_call(void *arg, pid_t pid)
{
	(void)pid;
	if (atomic_fetch_add((atomic_int *)arg, 1) == 1)
		sleep_ns(350 * MS);
	return 0;
}

/* The ticks due at 200, 300 and 400 ms pass while the callback of the 100 ms sample sleeps;
 * the next sample is the 500 ms tick, carrying skipped_ticks 3. */
Test(sampler, late_ticks_are_skipped_and_counted, .timeout = 20)
{
	struct child c = child_start(0, "wait", "ready\n");
	struct rig *r = rig_new(1 << 14);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 100 * MS, TRC_RSS_STATM);
	struct sampler_stats st;
	struct sampler *s;
	size_t late_sample = 0;

	atomic_int calls = 0;
	cfg.buffers_resident_bytes = slow_second_call;
	cfg.buffers_arg = &calls;
	s = start_ok(&cfg);
	wait_samples(s, 5, 5000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_expect_geq(st.skipped_ticks, 3);
	cr_expect_leq(st.skipped_ticks, 6, "a loaded machine may add a few, not many");
	for (size_t k = 1; k < r->n; k++)
		if (r->samples[k].skipped_ticks) {
			cr_expect_eq(late_sample, 0, "more than one sample carries skipped ticks");
			late_sample = k;
		}
	cr_assert_eq(late_sample, 2, "the sample after the slow one carries the skip");
	cr_expect_eq(r->samples[2].skipped_ticks, st.skipped_ticks);
	/* Still on the grid: sample 2 is at tick 2 + skipped, never before it. */
	uint64_t since = r->samples[2].ts_ns - r->samples[0].ts_ns;
	uint64_t tick = 2 + st.skipped_ticks;
	cr_expect_geq(since + MS, tick * 100 * MS, "%llu", (unsigned long long)since);
	cr_expect_lt(since, tick * 100 * MS + 100 * MS, "%llu", (unsigned long long)since);
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

Test(sampler, slow_source_stretches_its_interval, .timeout = 30)
{
	/* smaps_rollup of 128 MiB walks ~32k pages (about 1.7 ms here), far above a tenth of a
	 * 1 ms interval; statm on the same process stays far below it. */
	struct child c = child_start(128, "wait", "ready\n");
	struct rig *r = rig_new(1 << 16);
	struct sampler_config cfg = rig_config(r, &c.pid, 1, 1 * MS, TRC_RSS_SMAPS_ROLLUP);
	struct sampler_stats st;
	struct sampler *s = start_ok(&cfg);

	sleep_ns(400 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	rig_drain(r);

	cr_assert_geq(r->n, 4);
	cr_expect_gt(st.stretched, 0);
	/* Once three reads are known to be slow, every sample is stretched. */
	for (size_t k = SAMPLER_READ_WINDOW - 1; k < r->n; k++) {
		const struct rss_sample *x = &r->samples[k];
		cr_expect(x->fig.flags & TRC_RSS_STRETCHED, "sample %zu not stretched", k);
		cr_expect_gt(x->interval_ns, 1 * MS);
		cr_expect_eq(x->interval_ns % (1 * MS), 0, "off the grid: %llu",
			     (unsigned long long)x->interval_ns);
	}
	/* Reading took at most about a tenth of the time: ~400 ms of run, ~40 ms reading. */
	cr_expect_lt(st.read_ns_total, 400 * MS / 5, "read %llu ns in 400 ms",
		     (unsigned long long)st.read_ns_total);
	/* Absolute deadlines: sample k is due at D0 plus the intervals in force before it
	 * (plus skipped ticks, which only push it later); it never comes early. */
	uint64_t due = 0;
	for (size_t k = 1; k < r->n; k++) {
		due += (1ull + r->samples[k].skipped_ticks) * r->samples[k - 1].interval_ns;
		cr_expect_geq(r->samples[k].ts_ns - r->samples[0].ts_ns + 1 * MS, due,
			      "sample %zu came before its deadline", k);
	}
	rig_free(r);

	/* The fast source on the same process, same interval: not stretched. */
	r = rig_new(1 << 16);
	cfg = rig_config(r, &c.pid, 1, 10 * MS, TRC_RSS_STATM);
	s = start_ok(&cfg);
	wait_samples(s, 10, 5000 * MS);
	sampler_get_stats(s, &st);
	sampler_stop(s);
	cr_expect_eq(st.stretched, 0);
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
