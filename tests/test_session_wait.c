/* test_session_wait.c - a stream the drain ended as corrupt never holds its writer under
 * --when-full wait (session_layout.h "Residency"): the drain reads nothing of that ring any
 * more, so it hands the writer the space back at once (session_drain.c), and the writer runs to
 * its end without waiting for room. The writer's own rule (give up after ring_wait_ns without
 * its read position moving; test_session_budget's drain that never comes) is only the backstop:
 * here it would cost ring_wait_ns, which the test makes long enough to tell apart.
 *
 * The test is recorder and producer at once (ts_start): thread A writes a record the drain
 * refuses, then several times its ring; a drain thread drains all along while thread B keeps it
 * busy with a live ring. Criterion runs each test in its own process.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ring_producer.h"
#include "session_internal.h"
#include "test_session_util.h"

enum {
	WAIT_MS = 2000, /* ring_wait_ns of the session */
	A_EVENTS = 20000, /* 480 KB of counters: several times A's 64 KiB ring */
};

struct drainer {
	struct trc_session *s;
	struct ts_collect c;
	atomic_int stop;
};

static void *drainer_main(void *p)
{
	struct drainer *d = p;
	struct session_sink k = ts_sink(&d->c);
	while (!atomic_load(&d->stop)) {
		session_drain(d->s, &k);
		ts_sleep_ms(1);
	}
	ts_drain_idle(d->s, &d->c);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static atomic_int b_stop;

/* Keeps the drain busy with a live ring of its own until told to stop. */
static void *b_main(void *p)
{
	(void)p;
	int64_t v = 0;
	while (!atomic_load(&b_stop)) {
		for (int i = 0; i < 100; i++)
			TRC_COUNTER("b", v++);
		ts_sleep_ms(1);
	}
	return NULL;
}

static atomic_int a_done;
static atomic_uint a_tid;

/* Three good counters, a COUNTER record too short for its type (the drain ends the stream
 * there), then far more than the ring holds. */
static void *a_main(void *p)
{
	(void)p;
	atomic_store(&a_tid, (unsigned)gettid());
	for (int i = 0; i < 3; i++)
		TRC_COUNTER("a.before", i);
	uint64_t payload[8] = {trc__now(trc__mode_load())};
	cr_assert_eq(ring_push_sp(&trc__self.prod, TRC_TAG(TRC_REC_COUNTER, 1), payload,
				  sizeof(struct trc_ring_value) - 8),
		     0);
	for (int i = 0; i < A_EVENTS; i++)
		TRC_COUNTER("a.after", i);
	atomic_store(&a_done, 1);
	return NULL;
}

Test(session_wait, writer_of_a_stream_ended_as_corrupt_never_waits, .timeout = 60)
{
	struct session_config cfg = {
		.max_slots = 8,
		.ring_bytes = 64 << 10,
		.ring_pool_bytes = 64 << 10,
		.ring_wait_ns = (uint64_t)WAIT_MS * 1000000u,
	};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0, "trc_attach: %d", rc);

	struct drainer d = {.s = s};
	pthread_t dr, a, b;
	pthread_create(&dr, NULL, drainer_main, &d);
	pthread_create(&b, NULL, b_main, NULL);
	double t0 = now_s();
	pthread_create(&a, NULL, a_main, NULL);

	/* With the space handed back A never waits for room: it ends within a few drain passes
	 * (1 ms apart). Without it A waits WAIT_MS, gives up and drops; a writer that judged the
	 * drain by its being alive would wait for ever (bounded here at 10 x WAIT_MS). */
	while (!atomic_load(&a_done) && now_s() - t0 < 10.0 * WAIT_MS / 1000)
		ts_sleep_ms(10);
	double took = now_s() - t0;
	int finished = atomic_load(&a_done);
	atomic_store(&b_stop, 1);
	pthread_join(b, NULL);
	cr_assert(finished, "the writer still waits %.1f s after its ring was abandoned", took);
	cr_expect_lt(took, WAIT_MS / 2000.0,
		     "the writer took %.2f s: it waited for room in a ring nobody reads", took);
	pthread_join(a, NULL);
	ts_sleep_ms(60); /* past the reap interval: A's and B's slots freed */
	atomic_store(&d.stop, 1);
	pthread_join(dr, NULL);

	/* What A wrote before the bad record is kept, nothing after it; the stream ended as
	 * corrupt; B, on the same drain, lost nothing. */
	size_t a_before = 0, a_after = 0, b_lost = 0, a_corrupt = 0;
	unsigned tid = atomic_load(&a_tid);
	for (size_t i = 0; i < d.c.n; i++) {
		const struct ts_rec *x = &d.c.v[i];
		if (x->r.type == TRC_REC_LOST && x->st.tid != tid)
			b_lost += x->r.lost.count;
		if (x->st.tid != tid)
			continue;
		if (x->r.type == TRC_REC_LOST && x->r.lost.reason == TRC_LOST_CORRUPT)
			a_corrupt++;
		if (x->r.type == TRC_REC_COUNTER) {
			const char *name = ts_name_of(&d.c, x->r.value.name_id);
			cr_assert_not_null(name);
			if (!strcmp(name, "a.before"))
				a_before++;
			else
				a_after++;
		}
	}
	cr_expect_eq(a_before, 3);
	cr_expect_eq(a_after, 0);
	cr_expect_eq(a_corrupt, 1);
	cr_expect_eq(b_lost, 0);
	ts_collect_free(&d.c);
	session_destroy(s);
}
