/* work_loop.h - the timed event loop shared by every tracer's event workload.
 *
 * Purpose: bench/work_events.c (this project, TRC_* macros) and bench/peers/lttng_events.c
 * (LTTng-UST tracepoints) must run literally the same loop, so that "ns per event" compares
 * the tracers and nothing else. This header owns that loop: argument parsing, the threads,
 * the start barrier, the timing and the one result line. The includer supplies the modes: one
 * function per mode that emits `n` events on the calling thread, with the emit inlined into
 * its own loop (a function pointer is called once per thread, never per event).
 *
 * Usage of a workload:  PROG EVENTS [THREADS [MODE]]
 *   EVENTS   total events over all threads (integer, optional k/M/G suffix)
 *   THREADS  threads emitting at once (default 1); events are split evenly
 *   MODE     one of the includer's modes (default: the first)
 * Output, one line on stdout, key=value, read by bench/peers.sh:
 *   PROG mode=M events=N threads=T emitted=N wall_ns=W ns_per_event=X
 * where ns_per_event is the mean over threads of (thread's loop time / thread's events): the
 * cost one event adds to the thread that emits it.
 *
 * Threads: the main thread starts THREADS workers that wait on one barrier, so they run the
 * loop at the same time; each times its own loop on CLOCK_MONOTONIC. Nothing is shared during
 * the loop. Only bench/ workloads include this header (it prints and exits).
 */
#ifndef TRC_BENCH_WORK_LOOP_H
#define TRC_BENCH_WORK_LOOP_H

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define WORKLOOP_MAX_THREADS 256

/* One mode: emit `n` events on this thread, the first carrying value `first`. */
struct workloop_mode {
	const char *name;
	void (*emit_n)(unsigned thread_idx, uint64_t first, uint64_t n);
};

struct workloop__thread {
	pthread_t tid;
	unsigned idx;
	uint64_t first;
	uint64_t n;
	uint64_t elapsed_ns;
	const struct workloop_mode *mode;
	void (*thread_init)(unsigned idx);
	pthread_barrier_t *start;
};

static inline uint64_t workloop_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timestamp the "bare" baseline stores: the TSC where there is one, as the tracers do. */
static inline uint64_t workloop_stamp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	return workloop_now_ns();
#endif
}

/* The bare baseline, a mode every workload offers: read the timestamp and store it with the
 * value into a per-thread array (what a tracer's event costs at the very least). The array
 * is 64 KiB so it stays in cache; its checksum is published so the stores cannot vanish. */
static volatile uint64_t workloop__sink;

static inline void workloop_emit_bare(unsigned thread_idx, uint64_t first, uint64_t n)
{
	enum { SLOTS = 4096 };
	uint64_t(*buf)[2] = calloc(SLOTS, sizeof(*buf));
	if (!buf)
		abort();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *slot = buf[i & (SLOTS - 1)];
		slot[0] = workloop_stamp();
		slot[1] = first + i;
		/* keep the compiler from batching or dropping the stores */
		__asm__ __volatile__("" ::: "memory");
	}
	workloop__sink += buf[(n - 1) & (SLOTS - 1)][0] + (uint64_t)thread_idx;
	free(buf);
}

static inline void *workloop__main(void *arg)
{
	struct workloop__thread *t = arg;
	if (t->thread_init)
		t->thread_init(t->idx);
	pthread_barrier_wait(t->start);
	uint64_t t0 = workloop_now_ns();
	if (t->n)
		t->mode->emit_n(t->idx, t->first, t->n);
	t->elapsed_ns = workloop_now_ns() - t0;
	return NULL;
}

/* Parse "10000000", "10M", "500k", "1G". Returns 0 or -EINVAL. */
static inline int workloop_parse_count(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	uint64_t mult = 1;
	if (*end == 'k' || *end == 'K')
		mult = 1000, end++;
	else if (*end == 'M')
		mult = 1000000, end++;
	else if (*end == 'G')
		mult = 1000000000, end++;
	if (*end || v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

static inline int workloop__usage(const char *prog, const struct workloop_mode *modes,
				  size_t n_modes)
{
	fprintf(stderr, "usage: %s EVENTS [THREADS [MODE]]\n  MODE:", prog);
	for (size_t i = 0; i < n_modes; i++)
		fprintf(stderr, " %s", modes[i].name);
	fprintf(stderr, "\n");
	return 2;
}

/* Run the workload: returns the process exit status (0, or 2 on a usage error, 1 on failure).
 * thread_init, if not NULL, runs on each worker before the barrier (e.g. to name it). */
static inline int workloop_run(int argc, char **argv, const char *prog,
			       const struct workloop_mode *modes, size_t n_modes,
			       void (*thread_init)(unsigned idx))
{
	uint64_t events, threads = 1;
	if (argc < 2 || argc > 4 || workloop_parse_count(argv[1], &events) ||
	    (argc >= 3 && workloop_parse_count(argv[2], &threads)) || threads == 0 ||
	    threads > WORKLOOP_MAX_THREADS)
		return workloop__usage(prog, modes, n_modes);
	const struct workloop_mode *mode = &modes[0];
	if (argc == 4) {
		mode = NULL;
		for (size_t i = 0; i < n_modes; i++)
			if (strcmp(argv[3], modes[i].name) == 0)
				mode = &modes[i];
		if (!mode)
			return workloop__usage(prog, modes, n_modes);
	}

	struct workloop__thread *th = calloc(threads, sizeof(*th));
	pthread_barrier_t start;
	if (!th || pthread_barrier_init(&start, NULL, (unsigned)threads)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	uint64_t first = 0;
	for (uint64_t k = 0; k < threads; k++) {
		th[k].idx = (unsigned)k;
		th[k].n = events / threads + (k < events % threads);
		th[k].first = first;
		th[k].mode = mode;
		th[k].thread_init = thread_init;
		th[k].start = &start;
		first += th[k].n;
	}

	uint64_t w0 = workloop_now_ns();
	uint64_t started = 0;
	for (; started < threads; started++) {
		if (pthread_create(&th[started].tid, NULL, workloop__main, &th[started])) {
			fprintf(stderr, "%s: cannot create thread %" PRIu64 "\n", prog, started);
			/* the barrier would never open: nothing sane is left to do */
			_exit(1);
		}
	}
	for (uint64_t k = 0; k < threads; k++)
		pthread_join(th[k].tid, NULL);
	uint64_t wall_ns = workloop_now_ns() - w0;

	double ns_sum = 0;
	uint64_t emitted = 0;
	unsigned busy = 0;
	for (uint64_t k = 0; k < threads; k++) {
		emitted += th[k].n;
		if (th[k].n) {
			ns_sum += (double)th[k].elapsed_ns / (double)th[k].n;
			busy++;
		}
	}
	printf("%s mode=%s events=%" PRIu64 " threads=%" PRIu64 " emitted=%" PRIu64
	       " wall_ns=%" PRIu64 " ns_per_event=%.3f\n",
	       prog, mode->name, events, threads, emitted, wall_ns, busy ? ns_sum / busy : 0.0);
	pthread_barrier_destroy(&start);
	free(th);
	return 0;
}

#endif /* TRC_BENCH_WORK_LOOP_H */
