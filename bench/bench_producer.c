/* bench_producer.c - bench=producer: what one event costs the traced thread.
 *
 * case=disabled  no session attached: TRC_COUNTER in a loop; ns_per_call (target <= 1 ns: a load
 *                and a predictable branch), beside an empty loop of the same shape
 *                (baseline_loop_ns) measured in the same run.
 * case=enabled   a live session created in this process (the library supports being its own
 *                recorder): TRC_BEGIN in a loop, 16-byte records; ns_per_event, against bare_ns,
 *                a loop storing the same 16 bytes (header + rdtsc) into an array of the ring's
 * size, measured in the same run; ratio = ns_per_event / bare_ns (target <= 1.25). The ring (64
 * MiB) holds a whole timed batch; it is drained between batches (untimed), so nothing is lost and
 * the drain does not compete for the core. lost is reported and must be 0. first_lap_ns: the first
 * lap through a fresh ring, which also faults it in (session_layout.h "Residency"), timed apart.
 * Noise: this machine has 2 cores shared with other work, and a preemption inside a timed
 * batch inflates it by milliseconds. So a run times many short batches (~0.3 ms), alternating
 * the measured loop with its baseline, and takes each one's median over its batches; the
 * SUMMARY gives the median over --runs N runs (default 7) with min and max.
 * --quick: fewer and smaller runs (a few seconds). Prints a table, then one SUMMARY per case.
 * Threads: the bench thread only. Clock: CLOCK_MONOTONIC.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "session.h"
#include "trc.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct stat3 {
	double med, min, max;
};

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct stat3 stats(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	struct stat3 s = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1]};
	return s;
}

/* ---- disabled -------------------------------------------------------------------------------- */

__attribute__((noinline)) static double time_disabled(long n)
{
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		TRC_COUNTER("bench.disabled", i);
		__asm__ volatile("" ::: "memory");
	}
	return (double)(now_ns() - t0) / (double)n;
}

__attribute__((noinline)) static double time_empty(long n)
{
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	return (double)(now_ns() - t0) / (double)n;
}

/* ---- enabled --------------------------------------------------------------------------------- */

static uint64_t drained, lost;

static int count_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	(void)arg;
	(void)st;
	if (r->type == TRC_REC_SPAN_BEGIN)
		drained++;
	else if (r->type == TRC_REC_LOST)
		lost += r->lost.count;
	return 0;
}

static void drain_all(struct trc_session *s)
{
	struct session_sink k = {.record = count_record};
	while (session_drain(s, &k) > 0)
		;
}

__attribute__((noinline)) static double time_enabled(long n)
{
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		TRC_BEGIN("bench.enabled");
	return (double)(now_ns() - t0) / (double)n;
}

/* The same work without a tracer: a 16-byte record (header + TSC) stored into an array. */
__attribute__((noinline)) static double time_bare(uint64_t *arr, uint64_t mask_words, long n)
{
	uint64_t t0 = now_ns();
	uint64_t w = 0;
	for (long i = 0; i < n; i++) {
		uint64_t *r = arr + (w & mask_words);
		r[0] = 16u | ((uint64_t)1 << 32);
		r[1] = trc_clock_rdtsc();
		w += 2;
		__asm__ volatile("" ::: "memory");
	}
	return (double)(now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	int runs = 7;
	int quick = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_producer [--quick] [--runs N]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 1000)
		runs = 7;
	enum { MAX_BATCHES = 200 };
	long n_disabled = 500000; /* per batch */
	long batch = 25000; /* events per batch: 400 KB of ring */
	int batches = quick ? 30 : MAX_BATCHES;
	double bt_a[MAX_BATCHES], bt_b[MAX_BATCHES];

	/* disabled: the library is linked, no session. */
	unsetenv(TRC_SESSION_FD_ENV);
	if (trc_enabled()) {
		fprintf(stderr, "bench_producer: a session is attached already\n");
		return 1;
	}
	double *dis = calloc((size_t)runs, sizeof(double)),
	       *base = calloc((size_t)runs, sizeof(double));
	double *en = calloc((size_t)runs, sizeof(double)),
	       *bare = calloc((size_t)runs, sizeof(double));
	double *ratio = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++) {
		for (int b = 0; b < batches; b++) {
			bt_a[b] = time_empty(n_disabled);
			bt_b[b] = time_disabled(n_disabled);
		}
		base[r] = median(bt_a, batches);
		dis[r] = median(bt_b, batches);
	}

	/* enabled: a session in this process, 64 MiB ring (faulted in at the first event). */
	struct session_config cfg = {.max_slots = 4, .ring_bytes = 64ull << 20};
	int err = 0;
	struct trc_session *s = session_create(&cfg, &err);
	if (!s) {
		fprintf(stderr, "bench_producer: session_create: %s\n", strerror(-err));
		return 1;
	}
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	if (trc_attach() != 0) {
		fprintf(stderr, "bench_producer: trc_attach failed\n");
		return 1;
	}
	struct session_clock_info ci;
	session_clock_info(s, &ci);
	uint64_t arr_bytes = 64ull << 20;
	uint64_t *arr = mmap(NULL, arr_bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (arr == MAP_FAILED)
		return 1;
	TRC_BEGIN("bench.enabled"); /* claim the slot */
	drain_all(s);
	drained = 0;
	/* The first lap of the ring also faults it in (in doubling chunks, on the slow path):
	 * timed on its own, reported as first_lap_ns, then the runs measure the steady state. */
	long lap = (long)(cfg.ring_bytes / 16), lap_batch = lap / 8;
	double first_lap = 0;
	for (int b = 0; b < 8; b++) {
		first_lap += time_enabled(lap_batch) / 8;
		drain_all(s);
	}
	uint64_t emitted = (uint64_t)lap_batch * 8;
	for (int r = 0; r < runs; r++) {
		for (int b = 0; b < batches; b++) {
			bt_a[b] = time_bare(arr, arr_bytes / 8 - 1, batch);
			bt_b[b] = time_enabled(batch);
			emitted += (uint64_t)batch;
			drain_all(s);
		}
		bare[r] = median(bt_a, batches);
		en[r] = median(bt_b, batches);
		ratio[r] = en[r] / bare[r];
	}
	struct stat3 sd = stats(dis, runs), sb0 = stats(base, runs), se = stats(en, runs),
		     sb = stats(bare, runs), sr = stats(ratio, runs);

	printf("bench=producer  runs=%d%s  clock=%s\n", runs, quick ? " (quick)" : "",
	       ci.clock_source == TRC_CLOCK_TSC ? "tsc" : "clock_gettime");
	printf("%-34s %10s %10s %10s\n", "case", "median", "min", "max");
	printf("%-34s %10.3f %10.3f %10.3f\n", "disabled: ns per call", sd.med, sd.min, sd.max);
	printf("%-34s %10.3f %10.3f %10.3f\n", "  empty loop, ns per iteration", sb0.med, sb0.min,
	       sb0.max);
	printf("%-34s %10.3f %10.3f %10.3f\n", "enabled: ns per event", se.med, se.min, se.max);
	printf("%-34s %10.3f %10.3f %10.3f\n", "  bare rdtsc + store, ns", sb.med, sb.min, sb.max);
	printf("%-34s %10.3f %10.3f %10.3f\n", "  ratio (target <= 1.25)", sr.med, sr.min, sr.max);
	printf("%-34s %10.3f\n", "first lap of the ring, ns per event", first_lap);
	printf("events emitted %lu, recorded %lu, lost %lu\n", (unsigned long)emitted,
	       (unsigned long)drained, (unsigned long)lost);
	printf("SUMMARY bench=producer case=disabled ns_per_call=%.3f ns_per_call_min=%.3f "
	       "ns_per_call_max=%.3f baseline_loop_ns=%.3f runs=%d calls_per_run=%ld\n",
	       sd.med, sd.min, sd.max, sb0.med, runs, n_disabled * batches);
	printf("SUMMARY bench=producer case=enabled ns_per_event=%.3f ns_per_event_min=%.3f "
	       "ns_per_event_max=%.3f bare_ns=%.3f bare_ns_min=%.3f bare_ns_max=%.3f ratio=%.3f "
	       "ratio_min=%.3f ratio_max=%.3f first_lap_ns=%.3f lost=%lu runs=%d "
	       "events_per_run=%ld clock=%s\n",
	       se.med, se.min, se.max, sb.med, sb.min, sb.max, sr.med, sr.min, sr.max, first_lap,
	       (unsigned long)lost, runs, batch * batches,
	       ci.clock_source == TRC_CLOCK_TSC ? "tsc" : "gettime");
	session_destroy(s);
	return drained == emitted && lost == 0 ? 0 : 1;
}
