/* stress_session.c - producers, thread churn and a drain thread on one in-process session, for
 * TSan (make test's tsan tier; make stress runs it with STRESS_SCALE=10).
 *
 * Small rings (full often: ring drops), few slots (churning threads find none free: NO_SLOT
 * losses), a drain thread that frees slots as threads exit. Checks, exactly: every record comes
 * back in its thread's order and in the stream of the thread that wrote it, and
 * recorded + lost = emitted. Exits 1 with a message on any failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"
#include "trc.h"

#define MAX_THREADS 4096

static long scale = 1;
static atomic_long emitted;
static atomic_int stop;
static uint32_t tids[MAX_THREADS];
static int64_t next_seq[MAX_THREADS];
static uint64_t recorded, lost, corrupt, ends, streams;

static void fail(const char *what, long a, long b)
{
	fprintf(stderr, "stress_session: FAIL: %s (%ld, %ld)\n", what, a, b);
	exit(1);
}

static int on_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	(void)arg;
	if (r->type == TRC_REC_LOST) {
		lost += r->lost.count;
		corrupt += r->lost.reason == TRC_LOST_CORRUPT;
		return 0;
	}
	if (r->type == TRC_REC_THREAD)
		streams++;
	if (r->type == TRC_REC_INSTANT)
		recorded++;
	if (r->type != TRC_REC_COUNTER)
		return 0;
	long idx = (long)(r->value.value >> 32);
	int64_t seq = r->value.value & 0xffffffff;
	if (idx < 0 || idx >= MAX_THREADS)
		fail("bad thread index", idx, 0);
	/* tids[] is written by the thread before it emits; the ring's release/acquire makes it
	 * visible here. */
	if (st->tid != __atomic_load_n(&tids[idx], __ATOMIC_RELAXED))
		fail("record in another thread's stream", idx, (long)st->tid);
	if (seq < next_seq[idx])
		fail("records out of order", idx, (long)seq);
	next_seq[idx] = seq + 1;
	recorded++;
	return 0;
}

static void on_end(void *arg, const struct session_stream *st)
{
	(void)arg;
	(void)st;
	ends++;
}

static void *drainer(void *arg)
{
	struct trc_session *s = arg;
	struct session_sink k = {.record = on_record, .stream_end = on_end};
	while (!atomic_load(&stop)) {
		if (session_drain(s, &k) < 0)
			fail("session_drain failed", 0, 0);
		usleep(100);
	}
	return NULL;
}

struct job {
	int index;
	long events;
};

static void *producer(void *arg)
{
	struct job *j = arg;
	__atomic_store_n(&tids[j->index], (uint32_t)gettid(), __ATOMIC_RELAXED);
	for (long i = 0; i < j->events; i++) {
		TRC_COUNTER("stress", ((int64_t)j->index << 32) | i);
		if ((i & 1023) == 0)
			TRC_INSTANT("tick", i); /* a second name, interned concurrently */
	}
	atomic_fetch_add(&emitted, j->events + (j->events + 1023) / 1024);
	return NULL;
}

int main(void)
{
	const char *sc = getenv("STRESS_SCALE");
	if (sc && atol(sc) > 0)
		scale = atol(sc);
	struct session_config cfg = {.max_slots = 6, .ring_bytes = 64 << 10};
	int err;
	struct trc_session *s = session_create(&cfg, &err);
	if (!s)
		fail("session_create", err, 0);
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	if (trc_attach() != 0)
		fail("trc_attach", 0, 0);
	uint64_t meta_bytes = session_buffers_resident_bytes(s, 0); /* attached, no ring yet */

	pthread_t d;
	pthread_create(&d, NULL, drainer, s);
	static struct job jobs[MAX_THREADS];
	int n = 0;
	/* Long-lived producers alongside rounds of short-lived ones. */
	pthread_t longs[3];
	for (int i = 0; i < 3; i++) {
		jobs[n] = (struct job){.index = n, .events = 60000 * scale};
		pthread_create(&longs[i], NULL, producer, &jobs[n++]);
	}
	int rounds = (int)(40 * scale);
	if (rounds * 5 + 3 > MAX_THREADS)
		rounds = (MAX_THREADS - 3) / 5;
	for (int r = 0; r < rounds; r++) {
		pthread_t th[5];
		for (int k = 0; k < 5; k++) {
			jobs[n] = (struct job){.index = n, .events = 2000};
			pthread_create(&th[k], NULL, producer, &jobs[n++]);
		}
		for (int k = 0; k < 5; k++)
			pthread_join(th[k], NULL);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(longs[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(d, NULL);
	/* Final drains: past the reap interval so everything is freed. */
	struct session_sink k = {.record = on_record, .stream_end = on_end};
	for (int i = 0; i < 3; i++) {
		usleep(60000);
		session_drain(s, &k);
	}
	long em = atomic_load(&emitted);
	printf("stress_session: %d threads, emitted %ld, recorded %lu, lost %lu, streams %lu, "
	       "ended %lu\n",
	       n, em, (unsigned long)recorded, (unsigned long)lost, (unsigned long)streams,
	       (unsigned long)ends);
	if (corrupt)
		fail("a ring was reported corrupt", (long)corrupt, 0);
	if (recorded + lost != (uint64_t)em)
		fail("recorded + lost != emitted", (long)(recorded + lost), em);
	if (ends != streams || streams < 3)
		fail("streams ended != streams opened", (long)ends, (long)streams);
	if (session_buffers_resident_bytes(s, 0) != meta_bytes)
		fail("slots not all freed", (long)session_buffers_resident_bytes(s, 0),
		     (long)meta_bytes);
	session_destroy(s);
	return 0;
}
