/* bench_drain.c - bench=drain: what the recorder's drain pays per record, against memcpy.
 *
 * case=raw   One process is producer and recorder. Each run: the producer (trc.h's real fast
 *            path, TSC clock) writes RECORDS events into its ring, a round-robin of every event
 *            type (span begin/end, instant, counter, alloc, free, function enter/exit: 16 to 32
 *            ring bytes each); then session_drain moves them into chunk buffers. Timed:
 *              ns_per_record         the fused path (session.h window: ring bytes straight
 *                                    into chunk bytes), as the recorder runs it
 *              struct_ns_per_record  the old path: each record decoded into a struct
 *                                    trc_record and encoded again (trcfile__encode)
 *              memcpy_ns_per_record  memcpy of the same ring bytes into a chunk-sized buffer
 *            Each is measured right after the producer wrote the ring, so all three find the
 *            ring in the same cache state. The chunk buffers here are the bench's own
 *            (reused, 1 MiB like the writer's): compression and the disk are not in it.
 *            ratio = ns_per_record / memcpy_ns_per_record (target <= 2), the
 *            ratio of the medians; ratio_paired = the median of each run's own ratio (its
 *            fused and memcpy passes a few ms apart: steadier under a load that comes and
 *            goes).
 *
 * case=raw-TYPE+TYPE...  The same with only the record types --types names (a comma-separated
 *            list of span_begin, func_enter, alloc, counter, free, instant, func_exit,
 *            span_end): what each type costs the drain against its bytes' memcpy. Here, quiet:
 *            spans 1.5 ns against 0.5 (16 bytes: the drain's cost is per record, memcpy's per
 *            byte), frees 1.8 against 0.8, function entries 2.4 against 1.0, the mix 2.1
 *            against 0.9. Not in `make bench`: a tool for work on the drain.
 *
 * Output: a readable table, then `SUMMARY bench=drain case=raw ...` (medians of the runs, with
 * _min and _max). Flags: --quick, --runs N, --types LIST, --records N (1000 to 500000 a run; at
 * 40000 the ring's bytes fit in L2, and both passes then pay for reading, through the recorder's
 * mapping, lines this same core just wrote through the producer's, which a real drain on another
 * CPU does not: 20000 records here, memcpy 0.90 ns a record through the drain's view against 0.34
 * through the producer's, and the drain 2.4 ns against 1.5 at 100000 and more; the default
 * 400000 leaves little of that), --fused-only (fused drains alone, for callgrind: `valgrind
 * --tool=callgrind --toggle-collect=session_drain build/bench/bench_drain --quick --fused-only`,
 * then Ir / the records it prints as drained, the warm-up laps included, is the fused drain's
 * instructions per record; under valgrind a lap takes longer than the drain's clock refit
 * interval, so every record there is converted through the previous clock segment, which a
 * real run does only for what was written before a refit).
 *
 * The memcpy baseline is apples to apples: the very ring bytes the drain reads (the records,
 * not the padding), in the drain's order, through the drain's own mapping of them (the
 * recorder's view of the shared ring, as session_drain reads it: same page-table entries and
 * TLB state, not only the same cache lines; BENCH_DRAIN_PRODUCER_VIEW=1 copies through the
 * producer's mapping instead, which the producer pass just warmed), straight after the same
 * producer pass, into a buffer of a chunk's size reused like the drain's chunk buffer.
 * Threads: main only.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record.h"
#include "session.h"
#include "session_internal.h"
#include "trc.h"
#include "trcfile.h"
#include "trcfile_codec.h"

#define RING_BYTES (16u << 20)
#define CHUNK_BYTES (1u << 20)

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

/* ---- the sink: chunk buffers of our own ------------------------------------------------------ */

struct bsink {
	uint8_t *buf; /* CHUNK_BYTES + slack: one chunk, reused when full */
	size_t used;
	struct trcfile__coder coder;
	uint64_t records, sum; /* sum: keeps the old path's work observable */
};

static int b_window_open(void *arg, const struct session_stream *st, uint64_t ts,
			 struct trcfile_window *win)
{
	struct bsink *k = arg;
	(void)st;
	if (k->used == 0)
		trcfile__coder_reset(&k->coder, ts);
	win->p = k->buf + k->used;
	win->limit = k->buf + CHUNK_BYTES;
	win->count = 0;
	win->ts = k->coder.ts;
	win->alloc_addr = k->coder.alloc_addr;
	win->func_addr = k->coder.func_addr;
	return 0;
}

static int b_window_close(void *arg, const struct session_stream *st, struct trcfile_window *win)
{
	struct bsink *k = arg;
	(void)st;
	k->used = (size_t)(win->p - k->buf);
	k->records += win->count;
	k->coder.ts = win->ts;
	k->coder.alloc_addr = win->alloc_addr;
	k->coder.func_addr = win->func_addr;
	if (k->used >= CHUNK_BYTES)
		k->used = 0; /* the chunk goes to the compressors; the next one starts */
	return 0;
}

/* The old path: the record as a struct, encoded as trcfile_stream_append does. */
static int b_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct bsink *k = arg;
	if (st->kind != TRC_STREAM_THREAD || !trc_rec_is_event(r->type))
		return 0;
	if (k->used == 0)
		trcfile__coder_reset(&k->coder, r->ts_ns);
	uint8_t *end = trcfile__encode(k->buf + k->used, r, &k->coder);
	k->used = (size_t)(end - k->buf);
	k->records++;
	if (k->used >= CHUNK_BYTES) {
		k->sum += k->buf[k->used - 1];
		k->used = 0;
	}
	return 0;
}

/* ---- the producer --------------------------------------------------------------------------- */

/* The producer's eight cases, in this order (--types picks some): span begin, function enter,
 * alloc, counter, free, instant, function exit, span end. mix[i & 7] is the case of event i:
 * every case, or those picked, repeated to fill the eight places. */
#define BENCH_TYPE_NAMES "span_begin,func_enter,alloc,counter,free,instant,func_exit,span_end"
static unsigned mix[8] = {0, 1, 2, 3, 4, 5, 6, 7};

/* Writes n events round-robin over mix; returns the ring bytes they took. */
__attribute__((noinline)) static uint64_t produce(uint32_t n, uint32_t id)
{
	unsigned m = trc__mode_load();
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = 0x7f0000001000ull + (i & 1023) * 64;
		switch (mix[i & 7]) {
		case 0:
			trc__emit(m, TRC_TAG(TRC_REC_SPAN_BEGIN, id), 0, 0, 0);
			bytes += 16;
			break;
		case 1:
			trc__emit(m, TRC_REC_FUNC_ENTER, 2, 0x401000 + (i & 63) * 32, 0x402000);
			bytes += 32;
			break;
		case 2:
			trc__emit(m, TRC_REC_ALLOC, 2, addr, 64 + (i & 255));
			bytes += 32;
			break;
		case 3:
			trc__emit(m, TRC_TAG(TRC_REC_COUNTER, id), 1, i, 0);
			bytes += 24;
			break;
		case 4:
			trc__emit(m, TRC_REC_FREE, 1, addr, 0);
			bytes += 24;
			break;
		case 5:
			trc__emit(m, TRC_TAG(TRC_REC_INSTANT, id), 1, (uint64_t) - (int64_t)i, 0);
			bytes += 24;
			break;
		case 6:
			trc__emit(m, TRC_REC_FUNC_EXIT, 2, 0x401000 + (i & 63) * 32, 0x402000);
			bytes += 32;
			break;
		default:
			trc__emit(m, TRC_TAG(TRC_REC_SPAN_END, id), 0, 0, 0);
			bytes += 16;
			break;
		}
	}
	return bytes;
}

/* --types LIST: the cases named in LIST (BENCH_TYPE_NAMES, comma-separated) fill mix; case_name
 * gets "raw-" and the list with '+' between the names. 0, or 1 with a line on stderr. */
static int parse_types(const char *list, char *case_name, size_t cap)
{
	static const char *const names[8] = {"span_begin", "func_enter", "alloc",     "counter",
					     "free",	   "instant",	 "func_exit", "span_end"};
	unsigned picked[8], n = 0;
	int used = snprintf(case_name, cap, "raw");
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		unsigned k = 0;
		while (k < 8 && !(strlen(names[k]) == len && !strncmp(p, names[k], len)))
			k++;
		if (k == 8 || n == 8) {
			fprintf(stderr, "bench_drain: --types: '%.*s' is not one of %s\n", (int)len,
				p, BENCH_TYPE_NAMES);
			return 1;
		}
		picked[n++] = k;
		used += snprintf(case_name + used, cap - (size_t)used, "%c%s", n == 1 ? '-' : '+',
				 names[k]);
		if ((size_t)used >= cap) {
			fprintf(stderr, "bench_drain: --types: list too long\n");
			return 1;
		}
		p += len + (p[len] == ',');
	}
	if (n == 0) {
		fprintf(stderr, "bench_drain: --types: no type named (%s)\n", BENCH_TYPE_NAMES);
		return 1;
	}
	for (unsigned i = 0; i < 8; i++)
		mix[i] = picked[i % n];
	return 0;
}

static long drain_all(struct trc_session *s, const struct session_sink *k)
{
	long total = 0, n;
	while ((n = session_drain(s, k)) > 0)
		total += n;
	return n < 0 ? n : total;
}

int main(int argc, char **argv)
{
	int runs = 7;
	uint32_t records = 400000; /* ~9.6 MB of ring: more than this machine's caches */
	bool fused_only = false; /* --fused-only: for callgrind, session_drain's Ir / records */
	char types[200] = "raw"; /* the case: raw, or raw-TYPE+TYPE... under --types */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			runs = 3;
			records = 200000;
		} else if (!strcmp(argv[i], "--types") && i + 1 < argc) {
			if (parse_types(argv[++i], types, sizeof(types)))
				return 2;
		} else if (!strcmp(argv[i], "--fused-only")) {
			fused_only = true;
		} else if (!strcmp(argv[i], "--records") && i + 1 < argc) {
			records = (uint32_t)atoi(argv[++i]);
			if (records < 1000 || records > 500000)
				records = records < 1000 ? 1000 : 500000;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
			if (runs < 1)
				runs = 1;
		} else {
			fprintf(stderr, "usage: bench_drain [--quick] [--runs N] [--records N] "
					"[--types LIST] [--fused-only]\n");
			return 2;
		}
	}

	struct session_config cfg = {.max_slots = 4, .ring_bytes = RING_BYTES};
	int err = 0;
	struct trc_session *s = session_create(&cfg, &err);
	if (!s) {
		fprintf(stderr, "bench_drain: session_create: %s\n", strerror(-err));
		return 1;
	}
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	if (trc_attach() != 0) {
		fprintf(stderr, "bench_drain: trc_attach failed\n");
		return 1;
	}
	struct bsink k = {.buf = malloc(CHUNK_BYTES + 4096)};
	uint8_t *copy = malloc(CHUNK_BYTES);
	if (!k.buf || !copy)
		return 1;
	memset(k.buf, 0, CHUNK_BYTES + 4096);
	memset(copy, 0, CHUNK_BYTES);
	struct session_sink fused = {.arg = &k,
				     .record = b_record,
				     .window_open = b_window_open,
				     .window_close = b_window_close};
	struct session_sink old = {.arg = &k, .record = b_record};

	/* Claim the ring, intern the name, fault the whole ring in (a lap), drain. */
	TRC_BEGIN("drain-bench");
	uint32_t id = 0;
	{
		static uint32_t site;
		id = trc__site_intern(&site, "drain-bench");
	}
	for (int lap = 0; lap < 3; lap++) {
		produce(records, id);
		drain_all(s, &fused);
	}
	if (fused_only) {
		/* valgrind --tool=callgrind --toggle-collect=session_drain: Ir / the records
		 * printed is the fused drain's instructions per record. */
		for (int r = 0; r < runs; r++) {
			produce(records, id);
			if (drain_all(s, &fused) != (long)records)
				return 1;
		}
		printf("bench=drain fused-only: %d runs of %u records; session_drain drained %llu "
		       "records (3 warm-up laps included)\n",
		       runs, records, (unsigned long long)(runs + 3) * records);
		return 0;
	}

	/* The ring as the drain maps it (the recorder's own view of the shared pages, not the
	 * producer's): the memcpy reads the very addresses session_drain reads, so both go
	 * through the same page-table entries and TLB, not just the same cache lines. */
	const uint8_t *drain_view = NULL;
	for (uint32_t i = 0; i < s->geom.max_slots; i++)
		if (s->slots[i].active && s->slots[i].cons.capacity == trc__self.prod.capacity)
			drain_view = s->slots[i].cons.data;
	if (!drain_view || memcmp(drain_view, trc__self.prod.data, 4096)) {
		fprintf(stderr, "bench_drain: the drain's view of the ring not found\n");
		return 1;
	}
	if (getenv("BENCH_DRAIN_PRODUCER_VIEW")) /* the memcpy through the producer's view */
		drain_view = trc__self.prod.data;
	double *fus = calloc((size_t)runs, sizeof(double));
	double *str = calloc((size_t)runs, sizeof(double));
	double *cpy = calloc((size_t)runs, sizeof(double));
	uint64_t ring_bytes = 0;
	long got_f = 0, got_s = 0;
	for (int r = 0; r < runs; r++) {
		/* fused */
		ring_bytes = produce(records, id);
		uint64_t t0 = now_ns();
		got_f = drain_all(s, &fused);
		fus[r] = (double)(now_ns() - t0) / records;
		/* old */
		produce(records, id);
		t0 = now_ns();
		got_s = drain_all(s, &old);
		str[r] = (double)(now_ns() - t0) / records;
		/* memcpy of the same bytes, straight after the producer wrote them */
		produce(records, id);
		/* The records' bytes: the ring wraps early at the end of its faulted part (session_
		 * layout.h "Residency"), so they are [0, write offset) and, before that, the end of
		 * the faulted part (within a record: the padding's header), never the padding. */
		const uint8_t *ring = drain_view;
		uint64_t cap = trc__self.prod.capacity;
		uint64_t lap_end = trc__self.faulted < cap ? trc__self.faulted - 8 : cap;
		uint64_t wo = trc__self.prod.write & (cap - 1);
		uint64_t head = wo < ring_bytes ? wo : ring_bytes;
		uint64_t spans[2][2] = {{lap_end - (ring_bytes - head), ring_bytes - head},
					{wo - head, head}};
		t0 = now_ns();
		for (int sp = 0; sp < 2; sp++) {
			for (uint64_t done = 0; done < spans[sp][1];) {
				uint64_t n = spans[sp][1] - done;
				if (n > CHUNK_BYTES)
					n = CHUNK_BYTES;
				memcpy(copy, ring + spans[sp][0] + done, n);
				__asm__ volatile("" ::"r"(copy) : "memory");
				done += n;
			}
		}
		cpy[r] = (double)(now_ns() - t0) / records;
		drain_all(s, &fused); /* untimed: frees the ring */
	}
	if (got_f != (long)records || got_s != (long)records)
		fprintf(stderr, "bench_drain: drained %ld / %ld records of %u\n", got_f, got_s,
			records);
	/* Per run, fused / memcpy, both measured within the same few ms: on a shared machine,
	 * load that comes and goes hits both sides of a pair alike. */
	double *pair = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++)
		pair[r] = fus[r] / cpy[r];
	struct stats pr = stats_of(pair, runs);
	free(pair);
	struct stats f = stats_of(fus, runs), o = stats_of(str, runs), c = stats_of(cpy, runs);
	printf("bench=drain  runs=%d  records=%u per run  ring bytes=%" PRIu64
	       " (%.1f per record)\n",
	       runs, records, ring_bytes, (double)ring_bytes / records);
	printf("  %-34s %8s %8s %8s\n", "ns per record", "median", "min", "max");
	printf("  %-34s %8.2f %8.2f %8.2f\n", "fused drain (ring -> chunk bytes)", f.median, f.min,
	       f.max);
	printf("  %-34s %8.2f %8.2f %8.2f\n", "old drain (struct trc_record)", o.median, o.min,
	       o.max);
	printf("  %-34s %8.2f %8.2f %8.2f\n", "memcpy of the same bytes", c.median, c.min, c.max);
	printf("  fused / memcpy = %.2f (target <= 2; per run: median %.2f, %.2f to %.2f); "
	       "old / fused = %.2f\n",
	       f.median / c.median, pr.median, pr.min, pr.max, o.median / f.median);
	printf("SUMMARY bench=drain case=%s ns_per_record=%.3f ns_per_record_min=%.3f "
	       "ns_per_record_max=%.3f memcpy_ns_per_record=%.3f memcpy_ns_per_record_min=%.3f "
	       "memcpy_ns_per_record_max=%.3f ratio=%.3f struct_ns_per_record=%.3f "
	       "struct_ns_per_record_min=%.3f struct_ns_per_record_max=%.3f records=%u runs=%d "
	       "ring_bytes_per_record=%.1f ratio_paired=%.3f ratio_paired_min=%.3f "
	       "ratio_paired_max=%.3f\n",
	       types, f.median, f.min, f.max, c.median, c.min, c.max, f.median / c.median, o.median,
	       o.min, o.max, records, runs, (double)ring_bytes / records, pr.median, pr.min,
	       pr.max);
	free(fus);
	free(str);
	free(cpy);
	free(copy);
	free(k.buf);
	return (got_f == (long)records && got_s == (long)records) ? 0 : 1;
}
