/* recorder.c - the drain thread: session rings and the sampler's ring into the trace file.
 *
 * Threads (see recorder.h for the calls):
 *   drain thread   the only caller of session_drain and of trcfile_stream_append for every
 *                  stream of this recorder, and the only consumer of the sampler's ring.
 *   sampler thread the only producer of the sampler's ring (sampler/).
 *   caller         start and finish; reads the stats.
 * The stats are relaxed atomics written by the drain thread; finish signals the drain thread
 * through an eventfd and joins it, and only then touches the writer itself (the join orders
 * the drain thread's appends before the caller's).
 *
 * Idle policy: the drain thread waits on the eventfd with a timeout that grows from 1 ms to
 * DRAIN_IDLE_MAX_NS while rings are empty and drops back to zero while they yield records, so
 * an idle program costs a few hundred wake-ups per second and a busy one is drained without
 * sleeping. With the default 16 MiB rings and 16-byte records, DRAIN_IDLE_MAX_NS leaves room for
 * bursts of over 100 million events per second.
 */
#include "recorder.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "recorder_place.h"
#include "ring.h"
#include "sampler.h"
#include "session.h"
#include "session_layout.h" /* TRC_CMDLINE_MAX */
#include "trcfile.h"
#include "chunk_bgc.h"
#include "u64map.h"

#define DRAIN_IDLE_MIN_NS 500000ull /* 0.5 ms */
#define DRAIN_IDLE_MAX_NS 2000000ull /* 2 ms */
#define DRAIN_BUSY_NAP_NS 20000ull /* 20 us */
#define SAMPLER_RING_BYTES (256u * 1024u)
/* Open chunks are ended at least this often, so a recorder killed with SIGKILL loses at most
 * about this much of the trace. */
#define FLUSH_EVERY_NS 1000000000ull

struct recorder {
	struct recorder_config cfg;
	int wake_fd; /* eventfd: finish wakes the drain thread */
	atomic_bool stop; /* set by finish before it writes wake_fd */
	pthread_t drain_thread;

	/* Sampler and its ring (private memory, consumed by the drain thread). */
	struct sampler *sampler;
	struct ring_ctl *sring_ctl;
	void *sring_data;
	struct ring_consumer sring;
	uint64_t sampler_dropped_seen;
	uint64_t sampler_late_written; /* late ticks in the trace's LOST records so far */

	/* Session stream key -> its struct trcfile_stream *, drain thread only; the last one
	 * looked up is kept aside (records come in runs of one stream). */
	struct u64map streams;
	uint64_t last_key;
	struct trcfile_stream *last_stream;

	struct trcfile_stream *rss_stream; /* created on the first sample */
	struct trcfile_stream *meta_stream; /* the recorder's own: exit record and notes */

	/* Drain-thread counters, published to the atomics below once per drain pass: a locked
	 * add per record would cost more than the rest of the drain. */
	uint64_t events_local, lost_local;
	_Atomic uint64_t events, lost, rss_samples, last_rss, last_buffers, max_rss;
	/* Highest trace-buffer residency seen in the program: what its ru_maxrss is corrected
	 * by (the buffers only shrink when threads exit and their rings are freed, so the peak
	 * is the closest known figure to the share at the moment of the program's peak). */
	_Atomic uint64_t buffers_peak;
	atomic_int error;

	/* Command lines the runtime cut (longer than session_layout.h's TRC_CMDLINE_MAX or a
	 * quarter of the ring): how many, and the first few, for the note at the end. Drain
	 * thread, then finish after it joined. */
	uint32_t cmdlines_cut;
	struct {
		uint32_t pid, kept;
	} cut_first[4];

	/* The writer's stored chunks compressed in the background (chunk_bgc.h), or NULL
	 * (TRC_NO_BG_COMPRESS, or it could not start). Start and finish only. */
	struct trcfile_bgc *bgc;

	/* Keeps this process's threads off busy producers' CPUs (recorder_place.h), or NULL.
	 * Created before the drain thread, freed after the join; the drain thread's meanwhile. */
	struct recorder_place *place;
};

static void recorder__set_error(struct recorder *r, int err)
{
	int expected = 0;
	atomic_compare_exchange_strong(&r->error, &expected, err);
}

/* ---- key -> stream map ------------------------------------------------------------------ */

static struct trcfile_stream *recorder__stream_of(uint64_t value)
{
	return (struct trcfile_stream *)(uintptr_t)value;
}

static struct trcfile_stream *recorder__stream_for(struct recorder *r,
						   const struct session_stream *st)
{
	if (r->last_stream && r->last_key == st->key)
		return r->last_stream;
	const uint64_t *v = u64map_get(&r->streams, st->key);
	struct trcfile_stream *s;
	if (v) {
		s = recorder__stream_of(*v);
	} else {
		s = trcfile_stream_open(r->cfg.writer, (enum trc_stream_kind)st->kind, st->pid,
					st->tid);
		if (!s)
			return NULL;
		if (u64map_put(&r->streams, st->key, (uintptr_t)s, NULL, NULL))
			return NULL;
	}
	r->last_key = st->key;
	r->last_stream = s;
	return s;
}

/* ---- session sink ------------------------------------------------------------------------ */

/* A command line that does not end in a NUL byte was cut by the runtime (procinfo.c). */
static void recorder__check_cmdline(struct recorder *r, const struct trc_record *rec)
{
	uint32_t len = rec->process.cmdline_len;
	if (!len || rec->process.cmdline[len - 1] == 0)
		return;
	if (r->cmdlines_cut < sizeof(r->cut_first) / sizeof(r->cut_first[0])) {
		r->cut_first[r->cmdlines_cut].pid = rec->process.pid;
		r->cut_first[r->cmdlines_cut].kept = len;
	}
	r->cmdlines_cut++;
}

static int recorder__on_record(void *arg, const struct session_stream *st,
			       const struct trc_record *rec)
{
	struct recorder *r = arg;
	struct trcfile_stream *s = recorder__stream_for(r, st);
	if (!s)
		return trcfile_writer_error(r->cfg.writer) ?: -ENOMEM;
	int err = trcfile_stream_append(s, rec);
	if (err)
		return err;
	if (trc_rec_is_event(rec->type))
		r->events_local++;
	else if (rec->type == TRC_REC_LOST)
		r->lost_local += rec->lost.count;
	else if (rec->type == TRC_REC_PROCESS)
		recorder__check_cmdline(r, rec);
	/* A producer lost events or waited for the drain: it is not keeping up. */
	if (rec->type == TRC_REC_LOST || rec->type == TRC_REC_WAIT)
		recorder_place_pressure(r->place);
	return 0;
}

/* The fused path (session.h): the drain encodes events into the stream's open chunk. */
static int recorder__window_open(void *arg, const struct session_stream *st, uint64_t ts,
				 struct trcfile_window *win)
{
	struct recorder *r = arg;
	struct trcfile_stream *s = recorder__stream_for(r, st);
	if (!s)
		return trcfile_writer_error(r->cfg.writer) ?: -ENOMEM;
	return trcfile_stream_window_open(s, ts, win);
}

static int recorder__window_close(void *arg, const struct session_stream *st,
				  struct trcfile_window *win)
{
	struct recorder *r = arg;
	/* The window was opened on this stream by the call just before: the cache holds it. */
	struct trcfile_stream *s = recorder__stream_for(r, st);
	if (!s)
		return trcfile_writer_error(r->cfg.writer) ?: -ENOMEM;
	r->events_local += win->count; /* every record of a window is an event */
	recorder_place_count(r->place, st, win->count);
	return trcfile_stream_window_close(s, win);
}

static void recorder__on_stream_end(void *arg, const struct session_stream *st)
{
	struct recorder *r = arg;
	uint64_t v;
	if (!u64map_del(&r->streams, st->key, &v))
		return;
	/* The thread is gone: its stream leaves the writer's memory too. */
	int err = trcfile_stream_end(recorder__stream_of(v));
	if (err)
		recorder__set_error(r, err);
	if (r->last_key == st->key)
		r->last_stream = NULL;
}

/* ---- sampler ring ------------------------------------------------------------------------- */

static void recorder__note_buffers(struct recorder *r, uint64_t bytes)
{
	uint64_t cur = atomic_load_explicit(&r->buffers_peak, memory_order_relaxed);
	while (bytes > cur &&
	       !atomic_compare_exchange_weak_explicit(&r->buffers_peak, &cur, bytes,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* Sampler thread: the buffers' share of the sample it is taking. */
static uint64_t recorder__buffers_of(void *arg, pid_t pid)
{
	struct recorder *r = arg;
	uint64_t b = session_buffers_resident_bytes(r->cfg.session, pid);
	if (pid == r->cfg.pid)
		recorder__note_buffers(r, b);
	return b;
}

/* Sampler thread, every tick: the processes of the traced tree, as the session knows them
 * (each registers when it attaches: exec'd images and fork children alike). A process that
 * never attaches (static, setuid, --no-preload) is not seen; the program itself is sampled
 * from the start. */
static size_t recorder__discover(void *arg, pid_t *out, size_t max)
{
	struct recorder *r = arg;
	uint32_t n = session_processes_running(r->cfg.session, 0, out,
					       max > UINT32_MAX ? UINT32_MAX : (uint32_t)max);
	return n < max ? n : max;
}

/* The RSS stream, opened (under pid, the first sample's) when it is not yet. 0 or -errno. */
static int recorder__rss_stream(struct recorder *r, uint32_t pid)
{
	if (!r->rss_stream)
		r->rss_stream = trcfile_stream_open(r->cfg.writer, TRC_STREAM_RSS, pid, 0);
	return r->rss_stream ? 0 : trcfile_writer_error(r->cfg.writer) ?: -ENOMEM;
}

/* A LOST record of count sampler ticks skipped because they came late, at ts_ns, in the RSS
 * stream (open). Drain thread, or finish once it has joined it. */
static int recorder__append_late(struct recorder *r, uint64_t count, uint64_t ts_ns)
{
	struct trc_record lost = {.type = TRC_REC_LOST, .ts_ns = ts_ns};
	lost.lost.count = count;
	lost.lost.reason = TRC_LOST_SAMPLER_LATE;
	int err = trcfile_stream_append(r->rss_stream, &lost);
	if (!err)
		r->sampler_late_written += count;
	return err;
}

static int recorder__append_sample(struct recorder *r, const struct rss_sample *smp)
{
	int err = recorder__rss_stream(r, smp->fig.pid);
	if (err)
		return err;
	/* The ticks skipped before this sample, where they were: the sampler counts them for every
	 * pid alike, so the program's samples carry them (the rest at the end, recorder_finish). */
	if (smp->skipped_ticks && smp->fig.pid == (uint32_t)r->cfg.pid) {
		err = recorder__append_late(r, smp->skipped_ticks, smp->ts_ns);
		if (err)
			return err;
	}
	struct trc_record rec = {.type = TRC_REC_RSS, .ts_ns = smp->ts_ns};
	rec.rss = smp->fig;
	err = trcfile_stream_append(r->rss_stream, &rec);
	if (err)
		return err;
	atomic_fetch_add_explicit(&r->rss_samples, 1, memory_order_relaxed);
	const struct trc_rss_figures *f = &smp->fig;
	/* Each process's largest, for trace-run's last line (session_self_hwm). */
	session_note_sample(r->cfg.session, (pid_t)f->pid, f->rss_bytes, f->buffers_bytes);
	if (f->pid != (uint32_t)r->cfg.pid)
		return 0; /* the stats below are the program's */
	uint64_t prog = f->rss_bytes > f->buffers_bytes ? f->rss_bytes - f->buffers_bytes : 0;
	atomic_store_explicit(&r->last_rss, prog, memory_order_relaxed);
	if (prog > atomic_load_explicit(&r->max_rss, memory_order_relaxed))
		atomic_store_explicit(&r->max_rss, prog, memory_order_relaxed); /* one writer */
	atomic_store_explicit(&r->last_buffers, f->buffers_bytes, memory_order_relaxed);
	return 0;
}

/* Drains the sampler's ring; returns samples moved or -errno. Drain thread only. */
static long recorder__drain_sampler(struct recorder *r)
{
	if (!r->sring_ctl)
		return 0;
	struct ring_batch b;
	struct ring_record rec = {0};
	long n = 0;
	int err = ring_batch_begin(&r->sring, &b);
	while (!err && (err = ring_batch_next(&r->sring, &b, &rec)) == 1) {
		err = 0;
		if (rec.tag != SAMPLER_TAG_SAMPLE || rec.payload_bytes < sizeof(struct rss_sample))
			continue;
		struct rss_sample smp;
		memcpy(&smp, rec.payload, sizeof(smp));
		err = recorder__append_sample(r, &smp);
		n++;
	}
	ring_batch_release(&r->sring, &b);
	if (err < 0)
		return err;
	/* Samples the ring could not take: the series has a gap, and the file says so. */
	int derr;
	uint64_t dropped = ring_consumer_dropped(&r->sring, &derr);
	if (dropped > r->sampler_dropped_seen && r->rss_stream) {
		struct trc_record lost = {.type = TRC_REC_LOST, .ts_ns = trc_mono_ns()};
		lost.lost.count = dropped - r->sampler_dropped_seen;
		lost.lost.reason = TRC_LOST_RING_FULL;
		r->sampler_dropped_seen = dropped;
		err = trcfile_stream_append(r->rss_stream, &lost);
		if (err)
			return err;
	}
	return n;
}

/* ---- the drain thread --------------------------------------------------------------------- */

static long recorder__drain_once(struct recorder *r)
{
	static const struct session_sink sink_template = {
		.record = recorder__on_record,
		.stream_end = recorder__on_stream_end,
		.window_open = recorder__window_open,
		.window_close = recorder__window_close,
	};
	struct session_sink sink = sink_template;
	sink.arg = r;
	long n = session_drain(r->cfg.session, &sink);
	atomic_store_explicit(&r->events, r->events_local, memory_order_relaxed);
	atomic_store_explicit(&r->lost, r->lost_local, memory_order_relaxed);
	if (n < 0)
		return n;
	long m = recorder__drain_sampler(r);
	if (m < 0)
		return m;
	uint64_t resident = session_buffers_resident_bytes(r->cfg.session, r->cfg.pid);
	recorder__note_buffers(r, resident);
	recorder_place_tick(r->place, trc_mono_ns(), resident);
	return n + m;
}

/* Ends every open chunk, so what was drained reaches the file. Drain thread only. */
static int recorder__flush_all(struct recorder *r)
{
	size_t pos = 0;
	uint64_t v;
	while (u64map_next(&r->streams, &pos, NULL, &v)) {
		int err = trcfile_stream_flush(recorder__stream_of(v));
		if (err)
			return err;
	}
	int err = r->rss_stream ? trcfile_stream_flush(r->rss_stream) : 0;
	return err ? err : trcfile_stream_flush(r->meta_stream);
}

static void *recorder__drain_main(void *arg)
{
	struct recorder *r = arg;
	pthread_setname_np(pthread_self(), "trc-drain"); /* as top -H and /proc show it */
	uint64_t idle_ns = DRAIN_IDLE_MIN_NS;
	uint64_t next_flush_ns = trc_mono_ns() + FLUSH_EVERY_NS;

	while (!atomic_load_explicit(&r->stop, memory_order_acquire)) {
		long n = recorder__drain_once(r);
		if (n >= 0 && trc_mono_ns() >= next_flush_ns) {
			int err = recorder__flush_all(r);
			if (err)
				n = err;
			next_flush_ns = trc_mono_ns() + FLUSH_EVERY_NS;
		}
		if (n < 0) {
			/* The writer failed (disk full...): keep the program running, stop
			 * recording; what was written stays readable. */
			recorder__set_error(r, (int)n);
			break;
		}
		uint64_t nap_ns;
		if (n > 4096) {
			/* Busy: a very short sleep instead of none. Each wake-up lets the scheduler
			 * put this thread on an idle CPU; a thread that never sleeps stays queued
			 * behind the traced program on a shared core (for tens of ms here) and its
			 * rings overflow meanwhile. */
			idle_ns = DRAIN_IDLE_MIN_NS;
			nap_ns = DRAIN_BUSY_NAP_NS;
		} else if (n > 0) {
			idle_ns = DRAIN_IDLE_MIN_NS;
			nap_ns = idle_ns;
		} else {
			if (idle_ns < DRAIN_IDLE_MAX_NS)
				idle_ns *= 2;
			nap_ns = idle_ns;
		}
		struct pollfd pfd = {.fd = r->wake_fd, .events = POLLIN};
		struct timespec to = {.tv_sec = 0, .tv_nsec = (long)nap_ns};
		ppoll(&pfd, 1, &to, NULL);
	}
	return NULL;
}

/* ---- start / finish ----------------------------------------------------------------------- */

static void recorder__free(struct recorder *r)
{
	if (!r)
		return;
	recorder_place_free(r->place);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	free(r->sring_ctl);
	free(r->sring_data);
	u64map_destroy(&r->streams);
	free(r);
}

struct recorder *recorder_start(const struct recorder_config *cfg, int *err)
{
	struct recorder *r = calloc(1, sizeof(*r));
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	r->cfg = *cfg;
	u64map_init(&r->streams, SIZE_MAX);
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake_fd < 0) {
		*err = -errno;
		goto fail_free;
	}
	r->meta_stream = trcfile_stream_open(cfg->writer, TRC_STREAM_META, (uint32_t)cfg->pid, 0);
	if (!r->meta_stream) {
		*err = trcfile_writer_error(cfg->writer) ?: -ENOMEM;
		goto fail_free;
	}

	if (cfg->rss_enabled) {
		r->sring_ctl = aligned_alloc(RING_CACHELINE, sizeof(struct ring_ctl));
		r->sring_data = aligned_alloc(RING_CACHELINE, SAMPLER_RING_BYTES);
		if (!r->sring_ctl || !r->sring_data) {
			*err = -ENOMEM;
			goto fail_free;
		}
		ring_ctl_init(r->sring_ctl, SAMPLER_RING_BYTES, 0);
		ring_consumer_attach(&r->sring, r->sring_ctl, r->sring_data, SAMPLER_RING_BYTES);
		pid_t pid = cfg->pid;
		struct sampler_config sc = {
			.pids = &pid,
			.n_pids = 1,
			.interval_ns = cfg->rss_interval_ns,
			.source = cfg->rss_source,
			.buffers_resident_bytes = recorder__buffers_of,
			.buffers_arg = r,
			.ring_ctl = r->sring_ctl,
			.ring_data = r->sring_data,
			.ring_capacity = SAMPLER_RING_BYTES,
			.notify_fd = -1,
			.create_thread = cfg->create_thread,
			.discover = recorder__discover,
			.discover_arg = r,
		};
		r->sampler = sampler_start(&sc, err);
		if (!r->sampler)
			goto fail_free;
		/* Wait (briefly) for the first sample, so that even a program that ends at once
		 * has one: the caller lets it run only after we return. */
		for (int i = 0; i < 1000; i++) {
			struct sampler_stats sst;
			sampler_get_stats(r->sampler, &sst);
			if (sst.samples || sst.process_gone)
				break;
			struct timespec nap = {0, 200000};
			nanosleep(&nap, NULL);
		}
	}

	r->place = recorder_place_new();
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		cfg->create_thread ? cfg->create_thread : pthread_create;
	int rc = create(&r->drain_thread, NULL, recorder__drain_main, r);
	if (rc) {
		*err = -rc;
		goto fail_sampler;
	}
	/* Last, so nothing after it can fail. Without it the stored chunks are all compressed
	 * at the end: not a reason to stop the recording. */
	if (!cfg->keep_stored && !getenv("TRC_NO_BG_COMPRESS")) {
		int berr = 0;
		r->bgc = trcfile_bgc_start(
			cfg->writer,
			getenv("TRC_TEST_BGC_MISMATCH") ? TRCFILE_BGC_TEST_MISMATCH : 0, &berr);
		(void)berr;
	}
	return r;

fail_sampler:
	sampler_stop(r->sampler);
fail_free:
	recorder__free(r);
	return NULL;
}

static void recorder__note(struct recorder *r, uint64_t ts_ns, const char *text)
{
	struct trc_record rec = {.type = TRC_REC_NOTE, .ts_ns = ts_ns};
	rec.note.text = text;
	rec.note.len = (uint32_t)strlen(text);
	int err = trcfile_stream_append(r->meta_stream, &rec);
	if (err)
		recorder__set_error(r, err);
}

/* Processes of the tree that outlived the program: trace-run does not wait for them (they may
 * run for ever), and their events after the last drain are not in the trace; say who they were.
 * Their names come from /proc/PID/comm. */
static void recorder__note_survivors(struct recorder *r, uint64_t now_ns)
{
	enum { MAX_NAMED = 8 };
	pid_t pids[MAX_NAMED];
	uint32_t n = session_processes_running(r->cfg.session, r->cfg.pid, pids, MAX_NAMED);
	if (!n)
		return;
	char text[1024];
	size_t off =
		(size_t)snprintf(text, sizeof(text),
				 "%u %s of the traced tree still running when the program "
				 "ended (not waited for; their later events are not recorded):",
				 n, n == 1 ? "process" : "processes");
	for (uint32_t i = 0; i < n && i < MAX_NAMED && off < sizeof(text); i++) {
		char path[64], comm[32] = "?";
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pids[i]);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s pid %d (%s)",
					i ? "," : "", (int)pids[i], comm);
	}
	if (n > MAX_NAMED && off < sizeof(text))
		snprintf(text + off, sizeof(text) - off, ", ...");
	recorder__note(r, now_ns, text);
}

/* Says which command lines were cut and where: readers see only a shorter command. */
static void recorder__note_cmdlines_cut(struct recorder *r, uint64_t now_ns)
{
	if (!r->cmdlines_cut)
		return;
	char text[512];
	size_t off = (size_t)snprintf(
		text, sizeof(text),
		"%u command %s longer than recorded (at most %u KiB, or a quarter of the ring): "
		"cut,",
		r->cmdlines_cut, r->cmdlines_cut == 1 ? "line was" : "lines were",
		TRC_CMDLINE_MAX >> 10);
	uint32_t shown = sizeof(r->cut_first) / sizeof(r->cut_first[0]);
	for (uint32_t i = 0; i < r->cmdlines_cut && i < shown && off < sizeof(text); i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s pid %u (%u bytes kept)",
					i ? "," : "", r->cut_first[i].pid, r->cut_first[i].kept);
	if (r->cmdlines_cut > shown && off < sizeof(text))
		snprintf(text + off, sizeof(text) - off, ", ...");
	recorder__note(r, now_ns, text);
}

/* The sampler's late ticks, skipped in total: those no sample of the program carried (it had
 * exited, or its last ones) go into the trace now, so the LOST records add up to the note's
 * figure, which says it. Finish only, after the drain thread has ended. */
static void recorder__note_late_ticks(struct recorder *r, uint64_t skipped, uint64_t now_ns)
{
	if (skipped > r->sampler_late_written) {
		int err = recorder__rss_stream(r, (uint32_t)r->cfg.pid);
		if (!err)
			err = recorder__append_late(r, skipped - r->sampler_late_written, now_ns);
		if (err)
			recorder__set_error(r, err);
	}
	uint64_t total = r->sampler_late_written;
	if (!total)
		return;
	char text[128];
	snprintf(text, sizeof(text), "rss sampler skipped %llu late %s", (unsigned long long)total,
		 total == 1 ? "tick" : "ticks");
	recorder__note(r, now_ns, text);
}

/* The caller's interrupt (recorder_config.finish_interrupt): a flag, no data rides on it. */
static bool recorder__interrupted(const struct recorder *r)
{
	return r->cfg.finish_interrupt &&
	       atomic_load_explicit(r->cfg.finish_interrupt, memory_order_relaxed);
}

int recorder_finish(struct recorder *r, const struct recorder_exit *ex,
		    struct recorder_stats *final)
{
	if (!r)
		return 0;
	/* The sampler first: its last sample goes into the ring before the last drain. */
	struct sampler_stats sst = {0};
	if (r->sampler) {
		sampler_get_stats(r->sampler, &sst);
		sampler_stop(r->sampler);
		r->sampler = NULL;
	}
	atomic_store_explicit(&r->stop, true, memory_order_release);
	uint64_t one = 1;
	if (write(r->wake_fd, &one, sizeof(one)) < 0) {
		/* eventfd writes only fail on overflow, which one write cannot cause */
	}
	pthread_join(r->drain_thread, NULL);
	/* Every CPU back before the last passes and the end compaction. */
	recorder_place_free(r->place);
	r->place = NULL;

	/* Everything the program published before it ended: drain until two passes in a row
	 * find nothing (a retired slot is freed on the pass after the one that emptied it). */
	bool interrupted = false; /* the last drain was cut short */
	if (!atomic_load(&r->error)) {
		int empty_passes = 0;
		while (empty_passes < 2) {
			if (recorder__interrupted(r)) {
				interrupted = true;
				break;
			}
			long n = recorder__drain_once(r);
			if (n < 0) {
				recorder__set_error(r, (int)n);
				break;
			}
			empty_passes = n == 0 ? empty_passes + 1 : 0;
		}
	}

	uint64_t now_ns = trc_mono_ns();
	if (interrupted)
		recorder__note(r, now_ns,
			       "trace-run was interrupted while it drained what the program's tree "
			       "left in its buffers: the records still in them were not written "
			       "(how many is unknown)");

	if (session_processes_attached(r->cfg.session) == 0 && r->cfg.no_preload)
		recorder__note(
			r, now_ns,
			"no events: the program never attached to the session: it does not "
			"link libtrc and trace-run ran it with --no-preload (without it, "
			"libtrc-preload.so records its allocations, and its functions when it "
			"is built with -finstrument-functions), so only its lifetime, exit "
			"status and RSS were recorded");
	else if (session_processes_attached(r->cfg.session) == 0)
		recorder__note(
			r, now_ns,
			"no events: the program never attached to the session (statically "
			"linked, setuid, or it cleared LD_PRELOAD), so only its lifetime, exit "
			"status and RSS were recorded");
	recorder__note_survivors(r, now_ns);
	recorder__note_cmdlines_cut(r, now_ns);
	recorder__note_late_ticks(r, sst.skipped_ticks, now_ns);
	if (ex) {
		struct trc_record rec = {.type = TRC_REC_EXIT, .ts_ns = now_ns};
		rec.exit.pid = (uint32_t)r->cfg.pid;
		rec.exit.status = ex->status;
		rec.exit.maxrss_bytes = ex->maxrss_bytes;
		recorder__note_buffers(r,
				       session_buffers_resident_bytes(r->cfg.session, r->cfg.pid));
		/* The samples' largest share misses a ring that grew and was freed between two
		 * samples; the program's own count of its peak does not (session_layout.h
		 * "Residency"). With it, the record says so. */
		uint64_t counted = session_buffers_peak_bytes(r->cfg.session, r->cfg.pid);
		recorder__note_buffers(r, counted);
		rec.exit.buffers_bytes = atomic_load(&r->buffers_peak);
		if (counted)
			rec.exit.flags |= TRC_EXIT_BUFFERS_PEAK;
		int err = trcfile_stream_append(r->meta_stream, &rec);
		if (err)
			recorder__set_error(r, err);
	}
	/* Unhooked before the caller closes the writer; what it compressed goes to the caller. */
	trcfile_bgc_stop(r->bgc);
	if (final) {
		recorder_get_stats(r, final);
		final->bgc = r->bgc;
		final->bg_compressed = trcfile_bgc_compressed(r->bgc);
		final->interrupted = interrupted;
	} else {
		trcfile_bgc_free(r->bgc);
	}
	r->bgc = NULL;
	int err = atomic_load(&r->error);
	recorder__free(r);
	return err;
}

void recorder_get_stats(struct recorder *r, struct recorder_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->events = atomic_load_explicit(&r->events, memory_order_relaxed);
	out->lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
	out->rss_samples = atomic_load_explicit(&r->rss_samples, memory_order_relaxed);
	out->last_rss_bytes = atomic_load_explicit(&r->last_rss, memory_order_relaxed);
	out->last_buffers_bytes = atomic_load_explicit(&r->last_buffers, memory_order_relaxed);
	out->bytes_written = trcfile_writer_bytes_written(r->cfg.writer);
	out->drain_error = atomic_load_explicit(&r->error, memory_order_relaxed);
	out->buffers_peak_bytes = atomic_load_explicit(&r->buffers_peak, memory_order_relaxed);
	out->rss_sampled_max_bytes = atomic_load_explicit(&r->max_rss, memory_order_relaxed);
	out->bg_compressed = trcfile_bgc_compressed(r->bgc);
}
