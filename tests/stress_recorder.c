/* stress_recorder.c - the whole recorder pipeline in one process, under ThreadSanitizer.
 *
 * This process is recorder and traced program at once: it creates a session, attaches the
 * library to it, starts the recorder (sampler thread, drain thread, the writer's compression
 * threads) on a trace file, runs producer threads that emit a known number of events (some
 * with small rings so they overflow, thread churn so slots are recycled), finishes, and reads
 * the file back: recorded + lost must equal emitted exactly, for every round, and the RSS
 * series must be there. Plain program (Criterion cannot run under TSan); exits non-zero on
 * failure. Scale with STRESS_SCALE.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "session.h"
#include "summary.h"
#include "trc.h"
#include "trcfile.h"
#include "chunk_bgc.h"

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "stress_recorder: FAIL: " __VA_ARGS__);                            \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static long events_per_thread;
static atomic_long emitted;

static void *producer(void *arg)
{
	long id = (long)arg;
	long n = 0;
	for (long i = 0; i + 3 <= events_per_thread; i += 3) {
		TRC_BEGIN("stress.span");
		TRC_COUNTER("stress.counter", i);
		TRC_END("stress.span");
		n += 3;
		/* odd threads breathe now and then (the drain catches up), even ones flood */
		if ((i % 6144) == 0 && id % 2) {
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
		}
	}
	atomic_fetch_add(&emitted, n);
	return NULL;
}

static void run_threads(int n_threads)
{
	pthread_t t[16];
	for (long i = 0; i < n_threads; i++)
		if (pthread_create(&t[i], NULL, producer, (void *)i))
			FAIL("pthread_create");
	for (int i = 0; i < n_threads; i++)
		pthread_join(t[i], NULL);
}

int main(void)
{
	const char *sc = getenv("STRESS_SCALE");
	long scale = sc ? atol(sc) : 1;
	if (scale < 1)
		scale = 1;
	events_per_thread = 300000 * scale;

	int err = 0;
	/* 256 KiB rings: the flooding threads overflow them, the others mostly do not. */
	struct session_config scfg = {.max_slots = 32, .ring_bytes = 256 << 10};
	struct trc_session *s = session_create(&scfg, &err);
	if (!s)
		FAIL("session_create: %s", strerror(-err));
	int fd = session_fd(s);
	fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
	char num[16];
	snprintf(num, sizeof(num), "%d", fd);
	setenv(TRC_SESSION_FD_ENV, num, 1);
	if (trc_attach())
		FAIL("trc_attach");

	char path[] = "/tmp/stress_recorder-XXXXXX";
	int tfd = mkstemp(path);
	if (tfd < 0)
		FAIL("mkstemp");
	close(tfd);
	struct trcfile_header_info hdr = {.pid = (uint32_t)getpid(), .tool_version = "stress"};
	/* One chunk in three stored: the recorder's background compressor (chunk_bgc.h) runs
	 * beside the drain, the writer thread and the stats readers, and finish stops it. */
	struct trcfile_writer_opts wo = {.compress_threads = 2,
					 .chunk_bytes = 16 << 10,
					 .flags = TRCFILE_WRITER_STORE_WHEN_BEHIND,
					 .store_one_in = 3};
	struct trcfile_writer *w = trcfile_writer_open(path, &hdr, &wo, &err);
	if (!w)
		FAIL("trcfile_writer_open: %s", strerror(-err));
	struct recorder_config rc = {
		.session = s,
		.writer = w,
		.pid = getpid(),
		.rss_enabled = true,
		.rss_interval_ns = 5000000,
		.rss_source = TRC_RSS_STATM,
	};
	struct recorder *rec = recorder_start(&rc, &err);
	if (!rec)
		FAIL("recorder_start: %s", strerror(-err));

	/* rounds of threads: slots are given back and reused (thread churn) */
	for (int round = 0; round < 6; round++)
		run_threads(round % 3 + 2);
	TRC_INSTANT("stress.main", 1);
	atomic_fetch_add(&emitted, 1);

	struct recorder_stats st;
	struct recorder_exit ex = {.status = 0, .maxrss_bytes = 0};
	if (recorder_finish(rec, &ex, &st))
		FAIL("recorder_finish");
	if (trcfile_writer_close(w))
		FAIL("trcfile_writer_close");
	trcfile_bgc_free(st.bgc);

	struct trcfile_reader *rd = NULL;
	char msg[256];
	if (trcfile_reader_open(path, &rd, msg, sizeof(msg)))
		FAIL("reader: %s", msg);
	struct summary sum;
	if (summary_compute(rd, &sum))
		FAIL("summary");
	long want = atomic_load(&emitted);
	/* the runtime may add records of its own (none of the event kinds), so compare exactly */
	if ((long)(sum.events_recorded + sum.events_lost) != want)
		FAIL("recorded %" PRIu64 " + lost %" PRIu64 " != emitted %ld", sum.events_recorded,
		     sum.events_lost, want);
	if (st.events != sum.events_recorded || st.lost != sum.events_lost)
		FAIL("recorder counted %" PRIu64 "/%" PRIu64 ", file has %" PRIu64 "/%" PRIu64,
		     st.events, st.lost, sum.events_recorded, sum.events_lost);
	if (sum.rss_samples < 2)
		FAIL("only %" PRIu64 " RSS samples", sum.rss_samples);
	if (sum.truncated)
		FAIL("trace reported truncated");
	printf("stress_recorder: ok emitted=%ld recorded=%" PRIu64 " lost=%" PRIu64
	       " rss_samples=%" PRIu64 " threads=%zu\n",
	       want, sum.events_recorded, sum.events_lost, sum.rss_samples, sum.n_threads);
	summary_free(&sum);
	trcfile_reader_close(rd);
	unlink(path);
	session_destroy(s);
	return 0;
}
