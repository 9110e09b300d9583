/* stress_ring_budget.c - the ring memory budget under a concurrent drain, for TSan (make test's
 * tsan tier; make stress runs it with STRESS_SCALE=10).
 *
 * Producers emit bursts into rings that grow from a small pool, then idle past the drain's
 * give-back threshold, so the drain punches their pages out while they sleep and they take them
 * again on their next burst (session_layout.h "Residency"); full rings wait for the drain. Checks,
 * exactly: every counter comes back in its thread's order (a give-back that raced a writer would
 * lose or zero records), nothing is lost, and pages were given back (ring bytes resident while
 * every producer idles fell below their peak). Exits 1 with a message on any failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "trc.h"

#define PRODUCERS 4
#define BURST 60000 /* 1.4 MB of counters a burst: past the 1 MiB base, into the pool */

static long scale = 1;
static atomic_int stop, idle_now;
static uint64_t keys[64];
static int64_t next_val[64];
static int nkeys;
static uint64_t recorded, lost, out_of_order;
static uint64_t peak_busy, low_idle = UINT64_MAX;

static void fail(const char *what, unsigned long a, unsigned long b)
{
	fprintf(stderr, "stress_ring_budget: FAIL: %s (%lu, %lu)\n", what, a, b);
	exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int on_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	(void)arg;
	if (r->type == TRC_REC_LOST) {
		lost += r->lost.count;
		return 0;
	}
	if (r->type != TRC_REC_COUNTER)
		return 0;
	int k = 0;
	while (k < nkeys && keys[k] != st->key)
		k++;
	if (k == nkeys) {
		if (k == 64)
			fail("too many streams", (unsigned long)k, 64);
		keys[nkeys++] = st->key;
		next_val[k] = 0;
	}
	if (r->value.value != next_val[k])
		out_of_order++;
	next_val[k] = r->value.value + 1;
	recorded++;
	return 0;
}

static void *drain_main(void *p)
{
	struct trc_session *s = p;
	struct session_sink sink = {.record = on_record};
	while (!atomic_load(&stop)) {
		session_drain(s, &sink);
		uint64_t r = session_buffers_resident_bytes(s, getpid());
		if (atomic_load(&idle_now)) {
			if (r < low_idle)
				low_idle = r;
		} else if (r > peak_busy) {
			peak_busy = r;
		}
		sleep_ms(1);
	}
	for (int i = 0; i < 4; i++)
		session_drain(s, &sink);
	return NULL;
}

static pthread_barrier_t bar;

static void *producer_main(void *p)
{
	(void)p;
	int64_t v = 0;
	for (long r = 0; r < 3 * scale; r++) {
		for (int i = 0; i < BURST; i++)
			TRC_COUNTER("stress.budget", v++);
		pthread_barrier_wait(&bar); /* every burst in */
		pthread_barrier_wait(&bar); /* idle period over */
	}
	return NULL;
}

int main(void)
{
	const char *sc = getenv("STRESS_SCALE");
	if (sc && atol(sc) > 0)
		scale = atol(sc);
	struct session_config cfg = {
		.max_slots = 16, .ring_bytes = 4 << 20, .ring_pool_bytes = 1 << 20};
	int err = 0;
	struct trc_session *s = session_create(&cfg, &err);
	if (!s)
		fail("session_create", (unsigned long)-err, 0);
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	if (trc_attach() != 0)
		fail("trc_attach", 0, 0);
	pthread_barrier_init(&bar, NULL, PRODUCERS + 1);
	pthread_t dr, th[PRODUCERS];
	pthread_create(&dr, NULL, drain_main, s);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&th[i], NULL, producer_main, NULL);
	for (long r = 0; r < 3 * scale; r++) {
		pthread_barrier_wait(&bar);
		atomic_store(&idle_now, 1);
		sleep_ms(400); /* past the drain's idle threshold (200 ms) */
		atomic_store(&idle_now, 0);
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	sleep_ms(60);
	atomic_store(&stop, 1);
	pthread_join(dr, NULL);
	unsigned long want = (unsigned long)(PRODUCERS * 3 * scale * BURST);
	if (lost)
		fail("events lost", (unsigned long)lost, 0);
	if (recorded != want)
		fail("recorded != emitted", (unsigned long)recorded, want);
	if (out_of_order)
		fail("records out of order or corrupt", (unsigned long)out_of_order, 0);
	if (low_idle >= peak_busy)
		fail("no pages given back while idle", (unsigned long)low_idle,
		     (unsigned long)peak_busy);
	printf("stress_ring_budget: ok: %lu records, resident peak %lu busy, %lu idle\n",
	       (unsigned long)recorded, (unsigned long)peak_busy, (unsigned long)low_idle);
	session_destroy(s);
	return 0;
}
