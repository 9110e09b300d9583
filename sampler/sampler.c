/* sampler.c - the sampler thread: read every pid each tick, push samples, wait for the next
 * absolute deadline or for stop.
 *
 * Behaviour and contract: sampler.h. Here, the mechanics:
 *   - One tick: add the pids cfg.discover lists that are new, read each live pid (timed), gather
 * its sample, then decide the interval in force from the reads' cost, stamp it into every sample
 * and push them all; then write the notify fd once, refresh the CPU-time stat, and compute the next
 * deadline.
 *   - Waiting: ppoll on an eventfd with the time left to the deadline. ppoll never returns
 *     before its timeout (an hrtimer armed from a later "now"), so a sample is never early;
 *     lateness is absorbed by the absolute deadlines.
 *   - Stop: sampler_stop sets `stop` (release) then writes the eventfd. The eventfd is never
 *     read, so a stop that lands before the thread reaches ppoll still wakes it at once.
 *   - Signals are all blocked in the thread (it inherits the mask set around its creation),
 *     so the recorder's SIGCHLD or SIGINT are delivered to its other threads.
 *
 * Ownership: the handle owns the readers (their /proc fds), the eventfd and the targets
 * array; the ring memory and notify_fd belong to the caller.
 *
 * Threads: see the concurrency table in sampler.h. Fields other than the atomics are written
 * by O before the thread is created (pthread_create orders them) and then only by S, until
 * pthread_join in sampler_stop orders S's last writes before O frees them.
 */
#include "sampler.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rss_source.h"

struct sampler__target {
	pid_t pid;
	struct rss_reader *reader; /* NULL once the pid is dropped */
	unsigned consecutive_errors;
	uint32_t skipped_pending; /* late ticks since this pid's previous sample */
	bool has_sample; /* sample holds this tick's figures, not pushed yet */
	struct rss_sample sample;
};

struct sampler {
	/* Set by O before the thread starts, read-only afterwards. */
	uint64_t interval_ns;
	enum trc_rss_source source;
	uint64_t (*buffers_resident_bytes)(void *arg, pid_t pid);
	void *buffers_arg;
	int notify_fd;
	bool push_gone_record;
	size_t (*discover)(void *arg, pid_t *out, size_t max);
	void *discover_arg;
	int wake_fd;
	pthread_t thread;

	/* S only. targets holds the live pids and the dropped ones (reader NULL), which are
	 * remembered so a discovered pid is never sampled twice; cap_targets entries. */
	struct ring_producer ring;
	struct sampler__target *targets;
	size_t n_targets, cap_targets;
	size_t n_live;
	pid_t *found; /* SAMPLER_MAX_PIDS entries: what discover wrote this tick */
	uint64_t read_window_ns[SAMPLER_READ_WINDOW];
	unsigned read_window_fill;
	unsigned read_window_pos;

	/* O writes (release), S reads (acquire) before every wait: asks S to end. */
	atomic_bool stop;

	/* Stats: S writes, any thread reads; relaxed (counters, no data published with them),
	 * except process_gone, whose release store pairs with the acquire in get_stats. */
	_Atomic uint64_t st_samples;
	_Atomic uint64_t st_skipped_ticks;
	_Atomic uint64_t st_stretched;
	_Atomic uint64_t st_read_errors;
	_Atomic uint64_t st_read_ns_max;
	_Atomic uint64_t st_read_ns_total;
	_Atomic uint64_t st_cpu_ns;
	_Atomic uint64_t st_ring_dropped;
	_Atomic uint64_t st_pids_added;
	_Atomic uint64_t st_pids_refused;
	atomic_int st_last_error;
	atomic_bool st_process_gone;
};

/* Relaxed add of a counter only S writes: a load and a store, no locked instruction. */
static void sampler__stat_add(_Atomic uint64_t *stat, uint64_t n)
{
	atomic_store_explicit(stat, atomic_load_explicit(stat, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Stops sampling a pid: closes its files and, if asked, tells the consumer. S only. */
static void sampler__drop_target(struct sampler *s, struct sampler__target *t, int error,
				 uint64_t now_ns)
{
	rss_reader_close(t->reader);
	t->reader = NULL;
	t->has_sample = false;
	s->n_live--;
	if (s->push_gone_record) {
		struct rss_gone g = {.ts_ns = now_ns, .pid = (uint32_t)t->pid, .error = error};
		if (ring_push_sp(&s->ring, SAMPLER_TAG_GONE, &g, sizeof(g)) != 0)
			atomic_store_explicit(&s->st_ring_dropped, ring_producer_dropped(&s->ring),
					      memory_order_relaxed);
	}
}

/* Reads one pid and gathers its sample. Returns the wall time the read took. S only. */
static uint64_t sampler__read_target(struct sampler *s, struct sampler__target *t)
{
	struct trc_rss_figures fig;
	uint64_t t0 = trc_clock_ns(CLOCK_MONOTONIC);
	int err = rss_reader_read(t->reader, &fig);
	uint64_t t1 = trc_clock_ns(CLOCK_MONOTONIC);
	uint64_t read_ns = t1 - t0;

	sampler__stat_add(&s->st_read_ns_total, read_ns);
	if (read_ns > atomic_load_explicit(&s->st_read_ns_max, memory_order_relaxed))
		atomic_store_explicit(&s->st_read_ns_max, read_ns, memory_order_relaxed);

	if (err == -ESRCH) {
		sampler__drop_target(s, t, err, t1);
		return read_ns;
	}
	if (err) {
		sampler__stat_add(&s->st_read_errors, 1);
		atomic_store_explicit(&s->st_last_error, err, memory_order_relaxed);
		if (++t->consecutive_errors >= SAMPLER_MAX_READ_ERRORS)
			sampler__drop_target(s, t, err, t1);
		return read_ns;
	}
	t->consecutive_errors = 0;
	fig.source = (uint32_t)s->source;
	fig.pid = (uint32_t)t->pid;
	fig.read_ns = read_ns;
	t->sample = (struct rss_sample){
		.ts_ns = t0,
		.fig = fig,
		.skipped_ticks = t->skipped_pending,
	};
	/* Outside the timed read: the callback is the recorder's cost, not the source's. */
	if (s->buffers_resident_bytes)
		t->sample.fig.buffers_bytes = s->buffers_resident_bytes(s->buffers_arg, t->pid);
	t->has_sample = true;
	return read_ns;
}

/* Whether pid is sampled now or was dropped before. S only. */
static bool sampler__known(const struct sampler *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_targets; i++)
		if (s->targets[i].pid == pid)
			return true;
	return false;
}

/* Room for one more target: grows the array up to twice SAMPLER_MAX_PIDS, then forgets the
 * dropped pids (a forgotten one listed again is opened again and found gone). S only. */
static bool sampler__make_room(struct sampler *s)
{
	if (s->n_live >= SAMPLER_MAX_PIDS)
		return false;
	if (s->n_targets < s->cap_targets)
		return true;
	if (s->cap_targets < 2 * SAMPLER_MAX_PIDS) {
		size_t cap = s->cap_targets * 2 < 2 * SAMPLER_MAX_PIDS ? s->cap_targets * 2
								       : 2 * SAMPLER_MAX_PIDS;
		struct sampler__target *t = realloc(s->targets, cap * sizeof(*t));
		if (t) {
			s->targets = t;
			s->cap_targets = cap;
			return true;
		}
	}
	size_t kept = 0;
	for (size_t i = 0; i < s->n_targets; i++)
		if (s->targets[i].reader)
			s->targets[kept++] = s->targets[i];
	s->n_targets = kept;
	return kept < s->cap_targets;
}

/* Adds the processes cfg.discover lists that are new. A pid that cannot be opened (gone
 * already, or not ours to read) is remembered as dropped. S only. */
static void sampler__discover(struct sampler *s)
{
	size_t n = s->discover(s->discover_arg, s->found, SAMPLER_MAX_PIDS);
	if (n > SAMPLER_MAX_PIDS)
		n = SAMPLER_MAX_PIDS;
	for (size_t i = 0; i < n; i++) {
		pid_t pid = s->found[i];
		if (pid <= 0 || sampler__known(s, pid))
			continue;
		if (!sampler__make_room(s)) {
			sampler__stat_add(&s->st_pids_refused, 1);
			continue;
		}
		int err = 0;
		struct sampler__target *t = &s->targets[s->n_targets++];
		*t = (struct sampler__target){.pid = pid};
		t->reader = rss_reader_open(pid, s->source, &err);
		if (!t->reader) {
			if (err != -ESRCH) {
				sampler__stat_add(&s->st_read_errors, 1);
				atomic_store_explicit(&s->st_last_error, err, memory_order_relaxed);
			}
			continue;
		}
		s->n_live++;
		sampler__stat_add(&s->st_pids_added, 1);
	}
}

/* The interval in force after a tick whose reads took tick_read_ns: the configured one, or
 * the smallest multiple of it at least ten times the cheapest recent tick. S only. */
static uint64_t sampler__interval_in_force(struct sampler *s, uint64_t tick_read_ns)
{
	uint64_t cheapest = UINT64_MAX, need, mult;

	s->read_window_ns[s->read_window_pos] = tick_read_ns;
	s->read_window_pos = (s->read_window_pos + 1) % SAMPLER_READ_WINDOW;
	if (s->read_window_fill < SAMPLER_READ_WINDOW)
		s->read_window_fill++;
	for (unsigned i = 0; i < s->read_window_fill; i++)
		if (s->read_window_ns[i] < cheapest)
			cheapest = s->read_window_ns[i];
	if (cheapest <= s->interval_ns / 10)
		return s->interval_ns;
	need = cheapest * 10;
	mult = (need + s->interval_ns - 1) / s->interval_ns;
	return mult * s->interval_ns;
}

/* Pushes the samples gathered this tick, stamped with the interval in force. S only. */
static void sampler__push_samples(struct sampler *s, uint64_t interval_ns)
{
	bool stretched = interval_ns > s->interval_ns;

	for (size_t i = 0; i < s->n_targets; i++) {
		struct sampler__target *t = &s->targets[i];
		if (!t->has_sample)
			continue;
		t->has_sample = false;
		t->skipped_pending = 0;
		t->sample.interval_ns = interval_ns;
		if (stretched) {
			t->sample.fig.flags |= TRC_RSS_STRETCHED;
			sampler__stat_add(&s->st_stretched, 1);
		}
		if (ring_push_sp(&s->ring, SAMPLER_TAG_SAMPLE, &t->sample, sizeof(t->sample)) != 0)
			atomic_store_explicit(&s->st_ring_dropped, ring_producer_dropped(&s->ring),
					      memory_order_relaxed);
		sampler__stat_add(&s->st_samples, 1);
	}
}

/* Waits until deadline_ns (CLOCK_MONOTONIC) or stop. Returns true when asked to stop. */
static bool sampler__wait(struct sampler *s, uint64_t deadline_ns)
{
	struct pollfd pfd = {.fd = s->wake_fd, .events = POLLIN};

	for (;;) {
		/* Pairs with the release store in sampler_stop. */
		if (atomic_load_explicit(&s->stop, memory_order_acquire))
			return true;
		uint64_t now = trc_clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline_ns)
			return false;
		uint64_t left = deadline_ns - now;
		struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ull),
				      .tv_nsec = (long)(left % 1000000000ull)};
		int r = ppoll(&pfd, 1, &ts, NULL);
		if (r > 0)
			return true; /* only sampler_stop writes the eventfd */
		/* r == 0: timeout, loop re-checks the time; r < 0: EINTR, loop again. */
	}
}

static void *sampler__main(void *arg)
{
	struct sampler *s = arg;
	uint64_t deadline = trc_clock_ns(CLOCK_MONOTONIC);
	const uint64_t one = 1;

	pthread_setname_np(pthread_self(), "trc-sampler");
	for (;;) {
		uint64_t tick_read_ns = 0, interval, next, now;

		if (s->discover)
			sampler__discover(s);
		for (size_t i = 0; i < s->n_targets; i++)
			if (s->targets[i].reader)
				tick_read_ns += sampler__read_target(s, &s->targets[i]);
		interval = sampler__interval_in_force(s, tick_read_ns);
		sampler__push_samples(s, interval);
		if (s->notify_fd >= 0 && write(s->notify_fd, &one, sizeof(one)) < 0) {
			/* A full or closed notify fd only costs the consumer a wake-up. */
		}
		atomic_store_explicit(&s->st_cpu_ns, trc_clock_ns(CLOCK_THREAD_CPUTIME_ID),
				      memory_order_relaxed);
		if (s->n_live == 0) {
			/* Pairs with the acquire load in sampler_get_stats. */
			atomic_store_explicit(&s->st_process_gone, true, memory_order_release);
			break;
		}

		/* The next tick is the first deadline still ahead; those passed are skipped. */
		next = deadline + interval;
		now = trc_clock_ns(CLOCK_MONOTONIC);
		if (now >= next) {
			uint64_t late = (now - next) / interval + 1;
			next += late * interval;
			sampler__stat_add(&s->st_skipped_ticks, late);
			for (size_t i = 0; i < s->n_targets; i++) {
				/* Saturates: after a suspend of years, "very many" is enough. */
				uint64_t sum = s->targets[i].skipped_pending + late;
				s->targets[i].skipped_pending =
					sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
			}
		}
		deadline = next;
		if (sampler__wait(s, deadline))
			break;
	}
	atomic_store_explicit(&s->st_cpu_ns, trc_clock_ns(CLOCK_THREAD_CPUTIME_ID),
			      memory_order_relaxed);
	return NULL;
}

/* True when fd is an eventfd (what notify_fd must be); catches a config left at 0 (stdin). */
static bool sampler__is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

static int sampler__check_config(const struct sampler_config *cfg)
{
	if (!cfg || !cfg->pids || cfg->n_pids == 0 || cfg->n_pids > SAMPLER_MAX_PIDS)
		return -EINVAL;
	for (size_t i = 0; i < cfg->n_pids; i++)
		if (cfg->pids[i] <= 0)
			return -EINVAL;
	if (cfg->interval_ns < TRC_RSS_INTERVAL_MIN_NS || cfg->interval_ns > TRC_RSS_INTERVAL_MAX_NS)
		return -EINVAL;
	if (cfg->source < TRC_RSS_STATM || cfg->source > TRC_RSS_BOTH)
		return -EINVAL;
	if (!cfg->ring_ctl || !cfg->ring_data || !ring_capacity_valid(cfg->ring_capacity) ||
	    ring_max_payload(cfg->ring_capacity) < sizeof(struct rss_sample))
		return -EINVAL;
	if (cfg->notify_fd < -1 || (cfg->notify_fd >= 0 && !sampler__is_eventfd(cfg->notify_fd)))
		return -EINVAL;
	return 0;
}

/* Frees what sampler_start built; the thread is not running (never started or joined). */
static void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_targets; i++)
		rss_reader_close(s->targets[i].reader);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->targets);
	free(s->found);
	free(s);
}

struct sampler *sampler_start(const struct sampler_config *cfg, int *err)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct sampler *s;
	sigset_t all, old;
	int e, rc;

	e = sampler__check_config(cfg);
	if (e)
		goto fail;
	s = calloc(1, sizeof(*s));
	if (!s) {
		e = -ENOMEM;
		goto fail;
	}
	s->wake_fd = -1;
	s->interval_ns = cfg->interval_ns;
	s->source = cfg->source;
	s->buffers_resident_bytes = cfg->buffers_resident_bytes;
	s->buffers_arg = cfg->buffers_arg;
	s->notify_fd = cfg->notify_fd;
	s->push_gone_record = cfg->push_gone_record;
	s->discover = cfg->discover;
	s->discover_arg = cfg->discover_arg;
	s->cap_targets = cfg->n_pids;
	if (s->discover && s->cap_targets < 16)
		s->cap_targets = 16;
	s->targets = calloc(s->cap_targets, sizeof(*s->targets));
	if (s->discover)
		s->found = calloc(SAMPLER_MAX_PIDS, sizeof(*s->found));
	if (!s->targets || (s->discover && !s->found)) {
		e = -ENOMEM;
		goto fail_free;
	}
	for (size_t i = 0; i < cfg->n_pids; i++) {
		struct sampler__target *t = &s->targets[s->n_targets];
		t->pid = cfg->pids[i];
		t->reader = rss_reader_open(t->pid, cfg->source, &e);
		if (!t->reader)
			goto fail_free;
		s->n_targets++;
	}
	s->n_live = s->n_targets;
	e = ring_producer_attach(&s->ring, cfg->ring_ctl, cfg->ring_data, cfg->ring_capacity);
	if (e)
		goto fail_free;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		e = -errno;
		goto fail_free;
	}

	/* The thread inherits a mask blocking every signal (see the top of this file). */
	create = cfg->create_thread ? cfg->create_thread : pthread_create;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = create(&s->thread, NULL, sampler__main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		e = rc > 0 ? -rc : rc;
		goto fail_free;
	}
	return s;

fail_free:
	sampler__free(s);
fail:
	if (err)
		*err = e;
	return NULL;
}

void sampler_stop(struct sampler *s)
{
	const uint64_t one = 1;

	if (!s)
		return;
	/* Pairs with the acquire load in sampler__wait. */
	atomic_store_explicit(&s->stop, true, memory_order_release);
	while (write(s->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(s->thread, NULL);
	sampler__free(s);
}

void sampler_get_stats(const struct sampler *s, struct sampler_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	/* Acquire pairs with the release store at the thread's end: if gone, the counters
	 * read below include the thread's last tick. */
	out->process_gone = atomic_load_explicit(&s->st_process_gone, memory_order_acquire);
	out->samples = atomic_load_explicit(&s->st_samples, memory_order_relaxed);
	out->skipped_ticks = atomic_load_explicit(&s->st_skipped_ticks, memory_order_relaxed);
	out->stretched = atomic_load_explicit(&s->st_stretched, memory_order_relaxed);
	out->read_errors = atomic_load_explicit(&s->st_read_errors, memory_order_relaxed);
	out->read_ns_max = atomic_load_explicit(&s->st_read_ns_max, memory_order_relaxed);
	out->read_ns_total = atomic_load_explicit(&s->st_read_ns_total, memory_order_relaxed);
	out->cpu_ns = atomic_load_explicit(&s->st_cpu_ns, memory_order_relaxed);
	out->ring_dropped = atomic_load_explicit(&s->st_ring_dropped, memory_order_relaxed);
	out->last_error = atomic_load_explicit(&s->st_last_error, memory_order_relaxed);
	out->pids_added = atomic_load_explicit(&s->st_pids_added, memory_order_relaxed);
	out->pids_refused = atomic_load_explicit(&s->st_pids_refused, memory_order_relaxed);
}
