/* bench_ring.c - what producing one event into the ring costs, against a plain store.
 *
 * case=push  One thread. A record is a TSC timestamp (__rdtsc) and a 16-byte payload, written
 *            in place with ring_reserve_sp / ring_commit_sp (the tracer's path). Baseline, same
 *            run: the same loop storing timestamp and payload into a plain array. Timed batches
 *            of BATCH records; between batches (untimed) the same thread drains and releases the
 *            ring, so no push is ever dropped and the timed loop always writes warm memory
 *            (ring and array both fit in L2). Runs alternate bare / ring so drift on this shared
 *            machine hits both alike. Reports medians over the runs, min and max, and
 *            ratio = median ring / median bare (target <= 1.25).
 * case=spsc  A producer thread and a consumer thread together, the consumer draining as fast
 *            as it can: records per second end to end, records dropped, and the producer's
 *            ns per record against the bare loop above.
 *
 * Output: a readable table, then one `SUMMARY bench=ring case=...` line per case.
 * Flags: --quick (a few seconds in all), --runs N (>= 5 for medians that mean something).
 * Threads: main (and in spsc one producer and one consumer thread).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "ring.h"

#define BATCH 1024u /* records per timed batch */
#define PUSH_RING_BYTES (64u << 10) /* holds a batch (32 KiB of records) with room to spare */
#define SPSC_RING_BYTES (4u << 20)
/* The spsc consumer drains once this much is waiting (or the poll interval passed): reading
 * right behind the producer would bounce write_pos and half-written data lines between the
 * cores on every record, which slows both sides; a recorder drains in chunks. */
#define SPSC_MIN_BATCH_BYTES (SPSC_RING_BYTES / 16)
#define SPSC_POLL_NS 2000u
#define EVENT_TAG 1u

struct event {
	uint64_t ts;
	uint64_t a, b; /* the 16-byte payload (e.g. a name id and a value) */
};

struct opts {
	int runs;
	uint32_t batches; /* per push run */
	uint64_t spsc_records; /* per spsc run */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

struct stats {
	double median, min, max;
};

static struct stats stats_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return (struct stats){med, v[0], v[n - 1]};
}

/* ---- the two loops under test ------------------------------------------------------------- */

/* noinline: each loop is compiled on its own, the way it would sit in instrumented code. */
__attribute__((noinline)) static void bare_loop(struct event *arr, uint32_t n, uint64_t seed)
{
	for (uint32_t i = 0; i < n; i++) {
		arr[i].ts = __rdtsc();
		arr[i].a = seed + i;
		arr[i].b = seed ^ i;
	}
}

__attribute__((noinline)) static uint32_t ring_loop(struct ring_producer *p, uint32_t n,
						    uint64_t seed)
{
	uint32_t dropped = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct event *e = ring_reserve_sp(p, EVENT_TAG, sizeof(struct event));
		if (__builtin_expect(!e, 0)) {
			dropped++;
			continue;
		}
		e->ts = __rdtsc();
		e->a = seed + i;
		e->b = seed ^ i;
		ring_commit_sp(p);
	}
	return dropped;
}

/* ---- case=push -------------------------------------------------------------------------- */

struct push_ring {
	struct ring_ctl *ctl;
	uint8_t *data;
	struct ring_producer p;
	struct ring_consumer c;
};

/* Untimed: hands the batch's space back so the next batch never drops. Returns records seen. */
static uint32_t drain_all(struct ring_consumer *c)
{
	struct ring_batch b;
	struct ring_record r;
	uint32_t n = 0;
	if (ring_batch_begin(c, &b))
		return 0;
	while (ring_batch_next(c, &b, &r) == 1)
		n++;
	ring_batch_release(c, &b);
	return n;
}

static double run_bare(struct event *arr, uint32_t batches)
{
	uint64_t total = 0;
	for (uint32_t k = 0; k < batches; k++) {
		uint64_t t0 = now_ns();
		bare_loop(arr, BATCH, k);
		total += now_ns() - t0;
		__asm__ volatile("" : : "r"(arr) : "memory"); /* the stores must happen */
	}
	return (double)total / ((double)batches * BATCH);
}

static double run_ring(struct push_ring *pr, uint32_t batches, uint64_t *dropped)
{
	uint64_t total = 0;
	for (uint32_t k = 0; k < batches; k++) {
		uint64_t t0 = now_ns();
		*dropped += ring_loop(&pr->p, BATCH, k);
		total += now_ns() - t0;
		if (drain_all(&pr->c) != BATCH) {
			fprintf(stderr, "bench_ring: a batch did not come out whole\n");
			exit(1);
		}
	}
	return (double)total / ((double)batches * BATCH);
}

static int bench_push(const struct opts *o, double *bare_median)
{
	struct push_ring pr;
	pr.ctl = aligned_alloc(RING_CACHELINE, sizeof(*pr.ctl));
	pr.data = aligned_alloc(4096, PUSH_RING_BYTES);
	struct event *arr = aligned_alloc(4096, BATCH * sizeof(struct event));
	double *bare = calloc((size_t)o->runs, sizeof(double));
	double *ring = calloc((size_t)o->runs, sizeof(double));
	if (!pr.ctl || !pr.data || !arr || !bare || !ring) {
		fprintf(stderr, "bench_ring: out of memory\n");
		return 1;
	}
	memset(pr.data, 0, PUSH_RING_BYTES);
	memset(arr, 0, BATCH * sizeof(struct event));
	if (ring_ctl_init(pr.ctl, PUSH_RING_BYTES, 0) ||
	    ring_producer_attach(&pr.p, pr.ctl, pr.data, PUSH_RING_BYTES) ||
	    ring_consumer_attach(&pr.c, pr.ctl, pr.data, PUSH_RING_BYTES)) {
		fprintf(stderr, "bench_ring: ring setup failed\n");
		return 1;
	}
	uint64_t dropped = 0;
	/* Warm-up: caches, page faults, branch predictors, CPU frequency. */
	run_bare(arr, o->batches / 4 + 1);
	run_ring(&pr, o->batches / 4 + 1, &dropped);
	for (int r = 0; r < o->runs; r++) {
		bare[r] = run_bare(arr, o->batches);
		ring[r] = run_ring(&pr, o->batches, &dropped);
	}
	struct stats sb = stats_of(bare, o->runs), sr = stats_of(ring, o->runs);
	double ratio = sr.median / sb.median;
	*bare_median = sb.median;

	printf("%-6s %-26s %10s %10s %10s\n", "case", "metric", "median", "min", "max");
	printf("%-6s %-26s %10.2f %10.2f %10.2f\n", "push", "bare ns/record", sb.median, sb.min,
	       sb.max);
	printf("%-6s %-26s %10.2f %10.2f %10.2f\n", "push", "ring ns/record", sr.median, sr.min,
	       sr.max);
	printf("%-6s %-26s %10.3f %10s %10s   (target <= 1.25)\n", "push", "ratio ring/bare", ratio,
	       "", "");
	printf("%-6s %-26s %10llu\n", "push", "dropped", (unsigned long long)dropped);
	printf("SUMMARY bench=ring case=push ns_per_record=%.2f ns_per_record_min=%.2f "
	       "ns_per_record_max=%.2f bare_ns_per_record=%.2f bare_ns_per_record_min=%.2f "
	       "bare_ns_per_record_max=%.2f ratio=%.3f dropped=%llu runs=%d records_per_run=%llu\n",
	       sr.median, sr.min, sr.max, sb.median, sb.min, sb.max, ratio,
	       (unsigned long long)dropped, o->runs, (unsigned long long)o->batches * BATCH);
	free(bare);
	free(ring);
	free(arr);
	free(pr.data);
	free(pr.ctl);
	if (dropped) {
		fprintf(stderr, "bench_ring: push case dropped records; the ring is too small\n");
		return 1;
	}
	return 0;
}

/* ---- case=spsc ---------------------------------------------------------------------------- */

struct spsc {
	struct ring_ctl *ctl;
	uint8_t *data;
	uint64_t records;
	_Atomic int go;
	_Atomic int done; /* producer finished (release), consumer's acquire pairs with it */
	uint64_t prod_ns, received, dropped;
};

static void *spsc_producer(void *arg)
{
	struct spsc *s = arg;
	struct ring_producer p;
	if (ring_producer_attach(&p, s->ctl, s->data, SPSC_RING_BYTES))
		return NULL;
	while (!atomic_load_explicit(&s->go, memory_order_acquire))
		;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < s->records; i += BATCH) {
		uint64_t left = s->records - i;
		ring_loop(&p, left < BATCH ? (uint32_t)left : BATCH, i);
	}
	s->prod_ns = now_ns() - t0;
	atomic_store_explicit(&s->done, 1, memory_order_release);
	return NULL;
}

static void *spsc_consumer(void *arg)
{
	struct spsc *s = arg;
	struct ring_consumer c;
	if (ring_consumer_attach(&c, s->ctl, s->data, SPSC_RING_BYTES))
		return NULL;
	uint64_t sum = 0;
	uint64_t last_poll = now_ns();
	for (;;) {
		int done = atomic_load_explicit(&s->done, memory_order_acquire);
		struct ring_batch b;
		struct ring_record r;
		if (ring_batch_begin(&c, &b))
			break;
		if (!done && b.end - b.pos < SPSC_MIN_BATCH_BYTES) {
			uint64_t t = now_ns();
			if (t - last_poll < SPSC_POLL_NS) {
				_mm_pause();
				continue;
			}
		}
		last_poll = now_ns();
		while (ring_batch_next(&c, &b, &r) == 1) {
			const struct event *e = r.payload;
			sum += e->a; /* read the record, as a real consumer would */
			s->received++;
		}
		ring_batch_release(&c, &b);
		if (done)
			break;
	}
	int err;
	s->dropped = ring_consumer_dropped(&c, &err);
	__asm__ volatile("" : : "r"(sum));
	return NULL;
}

static int bench_spsc(const struct opts *o, double bare_ns)
{
	double *rate = calloc((size_t)o->runs, sizeof(double));
	double *prod = calloc((size_t)o->runs, sizeof(double));
	double *drops = calloc((size_t)o->runs, sizeof(double));
	struct spsc s = {0};
	s.ctl = aligned_alloc(RING_CACHELINE, sizeof(*s.ctl));
	s.data = aligned_alloc(4096, SPSC_RING_BYTES);
	if (!rate || !prod || !drops || !s.ctl || !s.data) {
		fprintf(stderr, "bench_ring: out of memory\n");
		return 1;
	}
	memset(s.data, 0, SPSC_RING_BYTES);
	uint64_t dropped_total = 0;
	for (int r = 0; r < o->runs; r++) {
		ring_ctl_init(s.ctl, SPSC_RING_BYTES, 0);
		s.records = o->spsc_records;
		s.received = s.dropped = 0;
		atomic_store(&s.go, 0);
		atomic_store(&s.done, 0);
		pthread_t tp, tc;
		if (pthread_create(&tc, NULL, spsc_consumer, &s)) {
			fprintf(stderr, "bench_ring: pthread_create failed\n");
			return 1;
		}
		if (pthread_create(&tp, NULL, spsc_producer, &s)) {
			fprintf(stderr, "bench_ring: pthread_create failed\n");
			return 1;
		}
		uint64_t t0 = now_ns();
		atomic_store_explicit(&s.go, 1, memory_order_release);
		pthread_join(tp, NULL);
		pthread_join(tc, NULL);
		uint64_t elapsed = now_ns() - t0;
		if (s.received + s.dropped != s.records) {
			fprintf(stderr, "bench_ring: spsc lost track: %llu + %llu != %llu\n",
				(unsigned long long)s.received, (unsigned long long)s.dropped,
				(unsigned long long)s.records);
			return 1;
		}
		rate[r] = (double)s.received / ((double)elapsed * 1e-9);
		prod[r] = (double)s.prod_ns / (double)s.records;
		drops[r] = (double)s.dropped;
		dropped_total += s.dropped;
	}
	struct stats sr = stats_of(rate, o->runs), sp = stats_of(prod, o->runs),
		     sd = stats_of(drops, o->runs);
	double ratio = sp.median / bare_ns;
	printf("%-6s %-26s %10.3g %10.3g %10.3g\n", "spsc", "records/s (received)", sr.median,
	       sr.min, sr.max);
	printf("%-6s %-26s %10.2f %10.2f %10.2f\n", "spsc", "producer ns/record", sp.median, sp.min,
	       sp.max);
	printf("%-6s %-26s %10.0f %10.0f %10.0f\n", "spsc", "dropped per run", sd.median, sd.min,
	       sd.max);
	printf("%-6s %-26s %10.3f\n", "spsc", "ratio producer/bare", ratio);
	printf("SUMMARY bench=ring case=spsc records_per_s=%.0f records_per_s_min=%.0f "
	       "records_per_s_max=%.0f ns_per_record=%.2f ns_per_record_min=%.2f "
	       "ns_per_record_max=%.2f ratio=%.3f dropped=%.0f dropped_min=%.0f dropped_max=%.0f "
	       "dropped_total=%llu runs=%d records_per_run=%llu\n",
	       sr.median, sr.min, sr.max, sp.median, sp.min, sp.max, ratio, sd.median, sd.min,
	       sd.max, (unsigned long long)dropped_total, o->runs,
	       (unsigned long long)o->spsc_records);
	free(rate);
	free(prod);
	free(drops);
	free(s.ctl);
	free(s.data);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.runs = 11, .batches = 4000, .spsc_records = 20000000};
	bool quick = false;
	int runs = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000) {
				fprintf(stderr, "bench_ring: --runs wants 1..1000\n");
				return 2;
			}
			runs = (int)v;
		} else {
			fprintf(stderr, "usage: bench_ring [--quick] [--runs N]\n");
			return 2;
		}
	}
	if (quick) {
		o.runs = 5;
		o.batches = 300;
		o.spsc_records = 2000000;
	}
	if (runs)
		o.runs = runs;

	printf("bench_ring: one record = TSC timestamp + 16-byte payload (%zu bytes, %llu in the "
	       "ring)\n",
	       sizeof(struct event), (unsigned long long)ring_record_bytes(sizeof(struct event)));
	printf("push: %d runs x %llu records, bare and ring interleaved; spsc: %d runs x %llu "
	       "records, %u KiB ring\n\n",
	       o.runs, (unsigned long long)o.batches * BATCH, o.runs,
	       (unsigned long long)o.spsc_records, SPSC_RING_BYTES >> 10);
	double bare_ns = 0;
	int rc = bench_push(&o, &bare_ns);
	if (rc)
		return rc;
	return bench_spsc(&o, bare_ns);
}
