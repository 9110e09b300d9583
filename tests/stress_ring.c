/* stress_ring.c - one producer thread and one consumer thread hammer a small ring.
 *
 * A plain program (Criterion does not run under TSan), built plain and with TSan. The producer
 * pushes records of varying size, alternating ring_push_sp and reserve/fill/commit, each with a
 * sequence number, a size derived from it and a checksum. The consumer checks that sequence
 * numbers only go up (no duplicate, no reordering), that every record has its size and checksum
 * (no torn record), and at the end that sent = received + dropped and that the sequence numbers
 * it never saw are exactly the dropped ones. The ring is small (it wraps hundreds of thousands
 * of times and drops a lot) and starts a little below 2^64, so the positions overflow.
 *
 * The producer alternates bursts (pushes flat out, drops freely) with polite stretches (yields
 * after a drop), so both a full ring and a draining ring get exercised.
 *
 * STRESS_SCALE (env, default 1) multiplies the record count. Prints one line of figures; exits
 * 0 on success, 1 with a message on the first failure.
 *
 * Load: the two threads yield, and on a loaded 2-core machine each yield can cost a whole
 * time slice (seen: 0.4 s of CPU in 5 minutes at load 20). So the producer also stops at
 * STRESS_BUDGET_S * STRESS_SCALE seconds, once the run has covered what it is for (both
 * phases, the positions across 2^64, records received and dropped); the checks are exact for
 * whatever was sent. A watchdog turns a hang into a failure: a ring whose positions (pushed,
 * drained or dropped) have not moved for STRESS_HANG_S.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif

/* Records per STRESS_SCALE unit: tens of millions plain, fewer under TSan's ~10x slowdown. */
#ifdef STRESS_TSAN
#define STRESS_RECORDS_PER_SCALE 8000000ull
#else
#define STRESS_RECORDS_PER_SCALE 20000000ull
#endif
#define STRESS_RING_BYTES 4096u
#define STRESS_TAG 0x5eu
#define STRESS_PHASE_RECORDS 65536u
#define STRESS_HANG_S 60 /* no progress for this long is a hang */
#define STRESS_BUDGET_S 60 /* per STRESS_SCALE: past it, stop once the run covered everything */

struct stress {
	struct ring_ctl *ctl;
	uint8_t *data;
	uint64_t records; /* how many the producer attempts at most */
	uint64_t start_pos; /* the ring's first position, a little below 2^64 */
	double deadline_s; /* now_s() past which the producer stops once covered() */
	/* Set (release) by the producer once its last push is done; the consumer's acquire load
	 * pairs with it, so the final drain and dropped count see everything. */
	_Atomic int done;
	uint64_t sent; /* producer-private until done */
	uint64_t received, gaps, dropped, batches;
};

static void fail(const char *what, uint64_t seq)
{
	fprintf(stderr, "stress_ring: FAIL: %s (seq %llu)\n", what, (unsigned long long)seq);
	exit(1);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Payload: u64 seq, u64 checksum, filler; 16..123 bytes, a function of seq (so not always a
 * multiple of 8). */
static uint32_t payload_bytes_of(uint64_t seq)
{
	return 16 + (uint32_t)(mix64(seq) % 108);
}

static uint64_t checksum(const uint8_t *p, uint32_t n, uint64_t seq)
{
	/* FNV-1a style over 8-byte words (then the tail bytes), seeded by seq: any changed,
	 * missing or moved byte changes it, and it keeps the consumer quick enough to keep up. */
	uint64_t h = 0xcbf29ce484222325ull ^ seq;
	uint32_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void make_payload(uint8_t *dst, uint64_t seq, uint32_t n)
{
	uint64_t x = mix64(seq ^ 0xabcdefull);
	for (uint32_t i = 16; i < n; i++)
		dst[i] = (uint8_t)((x >> (8 * (i & 7))) + i);
	uint64_t sum = checksum(dst + 16, n - 16, seq);
	memcpy(dst, &seq, 8);
	memcpy(dst + 8, &sum, 8);
}

static double now_s(void);

/* Whether the run so far exercised everything it is for (producer thread, any time). */
static bool covered(const struct stress *st, const struct ring_producer *p, uint64_t seq)
{
	uint64_t w = atomic_load_explicit(&st->ctl->write_pos, memory_order_relaxed);
	uint64_t r = atomic_load_explicit(&st->ctl->read_pos, memory_order_relaxed);
	return seq >= 2 * STRESS_PHASE_RECORDS && w < st->start_pos && r != st->start_pos &&
	       ring_producer_dropped(p) > 0;
}

static void *producer_main(void *arg)
{
	struct stress *st = arg;
	struct ring_producer p;
	if (ring_producer_attach(&p, st->ctl, st->data, STRESS_RING_BYTES))
		fail("producer attach", 0);
	uint8_t buf[128];
	uint64_t seq;
	for (seq = 0; seq < st->records; seq++) {
		if ((seq & 0xfff) == 0 && now_s() > st->deadline_s && covered(st, &p, seq))
			break; /* the time budget is spent: stop at a record boundary */
		uint32_t n = payload_bytes_of(seq);
		int rc;
		if (seq & 1) {
			make_payload(buf, seq, n);
			rc = ring_push_sp(&p, STRESS_TAG, buf, n);
		} else {
			void *dst = ring_reserve_sp(&p, STRESS_TAG, n);
			rc = dst ? 0 : p.last_error;
			if (dst) {
				make_payload(dst, seq, n);
				ring_commit_sp(&p);
			}
		}
		if (rc != 0 && rc != -ENOBUFS)
			fail("push returned an unexpected error", seq);
		bool polite = (seq / STRESS_PHASE_RECORDS) % 2;
		if (rc && polite)
			sched_yield();
	}
	st->sent = seq;
	if (ring_producer_dropped(&p) > st->sent)
		fail("producer dropped more than it sent", ring_producer_dropped(&p));
	atomic_store_explicit(&st->done, 1, memory_order_release);
	return NULL;
}

/* One batch; returns the number of records received. */
static uint64_t drain(struct stress *st, struct ring_consumer *c, uint64_t *next_seq)
{
	struct ring_batch b;
	struct ring_record r;
	uint64_t n = 0;
	if (ring_batch_begin(c, &b))
		fail("batch_begin reported a corrupt ring", *next_seq);
	int rc;
	while ((rc = ring_batch_next(c, &b, &r)) == 1) {
		const uint8_t *pl = r.payload;
		uint64_t seq, sum;
		if (r.tag != STRESS_TAG || r.payload_bytes < 16)
			fail("bad tag or size", *next_seq);
		memcpy(&seq, pl, 8);
		memcpy(&sum, pl + 8, 8);
		if (seq < *next_seq)
			fail("duplicate or reordered record", seq);
		uint32_t want = payload_bytes_of(seq);
		if (r.payload_bytes != ((want + 7) & ~7u))
			fail("record has the wrong size", seq);
		if (sum != checksum(pl + 16, want - 16, seq))
			fail("torn record (checksum)", seq);
		st->gaps += seq - *next_seq;
		*next_seq = seq + 1;
		n++;
	}
	if (rc)
		fail("batch_next reported a corrupt ring", *next_seq);
	ring_batch_release(c, &b);
	st->received += n;
	st->batches++;
	return n;
}

static void *consumer_main(void *arg)
{
	struct stress *st = arg;
	struct ring_consumer c;
	uint64_t next_seq = 0;
	if (ring_consumer_attach(&c, st->ctl, st->data, STRESS_RING_BYTES))
		fail("consumer attach", 0);
	for (;;) {
		/* Pairs with the producer's release store of done: read it before draining, so a
		 * drain after seeing 1 is final. */
		int done = atomic_load_explicit(&st->done, memory_order_acquire);
		uint64_t n = drain(st, &c, &next_seq);
		if (done)
			break;
		if (n == 0)
			sched_yield();
	}
	if (drain(st, &c, &next_seq) != 0)
		fail("records appeared after the final drain", next_seq);
	int err;
	st->dropped = ring_consumer_dropped(&c, &err);
	if (err)
		fail("dropped count went backwards", st->dropped);
	/* Drops after the last record received are gaps too. */
	st->gaps += st->sent - next_seq; /* sent: published by done (acquire above) */
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static atomic_bool watchdog_stop; /* main sets it once producer and consumer are joined */

/* Watchdog thread: ends the process when the ring has not moved for STRESS_HANG_S. Reads
 * only the ring's atomics (relaxed: any change is progress). Main joins it (within a second
 * of watchdog_stop) before freeing the ring. */
static void *watchdog_main(void *arg)
{
	struct ring_ctl *ctl = arg;
	uint64_t last = 0;
	unsigned still_s = 0;

	while (!atomic_load(&watchdog_stop)) {
		uint64_t now = atomic_load_explicit(&ctl->write_pos, memory_order_relaxed) +
			       atomic_load_explicit(&ctl->read_pos, memory_order_relaxed) +
			       atomic_load_explicit(&ctl->dropped, memory_order_relaxed);
		if (now != last) {
			last = now;
			still_s = 0;
		} else if (++still_s >= STRESS_HANG_S) {
			fail("hang: the ring did not move for a minute", last);
		}
		sleep(1);
	}
	return NULL;
}

int main(void)
{
	uint64_t scale = 1;
	const char *env = getenv("STRESS_SCALE");
	if (env && *env) {
		char *end;
		unsigned long long v = strtoull(env, &end, 10);
		if (*end || v == 0 || v > 100000) {
			fprintf(stderr, "stress_ring: bad STRESS_SCALE '%s'\n", env);
			return 2;
		}
		scale = v;
	}
	struct stress st = {.records = STRESS_RECORDS_PER_SCALE * scale};
	st.ctl = aligned_alloc(RING_CACHELINE, sizeof(*st.ctl));
	st.data = aligned_alloc(RING_CACHELINE, STRESS_RING_BYTES);
	if (!st.ctl || !st.data)
		fail("out of memory", 0);
	/* A few thousand laps below 2^64: the positions overflow early in the run. */
	uint64_t start = (uint64_t)0 - 5000ull * STRESS_RING_BYTES;
	if (ring_ctl_init(st.ctl, STRESS_RING_BYTES, start))
		fail("ring_ctl_init", 0);

	st.start_pos = start;
	double t0 = now_s();
	st.deadline_s = t0 + (double)STRESS_BUDGET_S * (double)scale;
	pthread_t prod, cons, dog;
	if (pthread_create(&dog, NULL, watchdog_main, st.ctl))
		fail("pthread_create", 0);
	if (pthread_create(&cons, NULL, consumer_main, &st))
		fail("pthread_create", 0);
	if (pthread_create(&prod, NULL, producer_main, &st))
		fail("pthread_create", 0);
	pthread_join(prod, NULL);
	pthread_join(cons, NULL);
	atomic_store(&watchdog_stop, true);
	pthread_join(dog, NULL);
	double secs = now_s() - t0;

	uint64_t end_pos = atomic_load(&st.ctl->write_pos);
	if (st.sent != st.received + st.dropped)
		fail("sent != received + dropped", st.sent);
	if (st.gaps != st.dropped)
		fail("missing sequence numbers != dropped count", st.gaps);
	if (st.received == 0 || st.dropped == 0)
		fail("the run did not exercise both receiving and dropping", st.received);
	if (end_pos >= start)
		fail("positions did not cross 2^64", end_pos);
	printf("stress_ring: ok sent=%llu received=%llu dropped=%llu batches=%llu laps=%llu "
	       "seconds=%.2f records_per_s=%.0f\n",
	       (unsigned long long)st.sent, (unsigned long long)st.received,
	       (unsigned long long)st.dropped, (unsigned long long)st.batches,
	       (unsigned long long)((end_pos - start) / STRESS_RING_BYTES), secs,
	       (double)st.sent / secs);
	free(st.ctl);
	free(st.data);
	return 0;
}
