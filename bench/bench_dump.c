/* bench_dump.c - bench=dump: how fast trace-dump reads a large trace, and how small it is.
 *
 * What it measures: a trace of >= 100 million records (--quick: 5 million) from several
 * thread streams (nested spans with jittered durations, counters doing random walks,
 * realistic gaps between events) is written once with the file writer into build/bench/;
 * then the built trace-dump runs on it `--runs` times per case, output to /dev/null:
 *   case=summary  trace-dump summary FILE   (per-stream pass, no merge)
 *   case=chrome   trace-dump chrome FILE    (full merge and JSON formatting)
 *   case=parquet  trace-dump parquet -o DIR FILE  (full merge, span matching, five Parquet
 *                 tables, zstd); its output_bytes_per_event is the tables' size per event
 *   case=perfetto trace-dump perfetto FILE -o OUT  (full merge, protobuf; OUT is a file in
 *                 build/bench/, deleted after the case: output_bytes_per_event is its size)
 *   case=check    trace-dump check FILE RULE...  (the summary's figures, four rules)
 *   case=diff     trace-dump diff FILE FILE  (the figures and the sites of both)
 *   case=report   trace-dump report FILE -o OUT  (the figures, then the report's pass over
 *                 every stream; output_bytes is the page's size)
 * The last three also print x_summary: their CPU time over summary's in the same run (with
 * --case, summary's runs alternate with theirs, so that load shifts weigh on both alike).
 * Per case: events_per_s = events / CPU time (user + system from wait4; trace-dump is
 * single-threaded, so this is its rate on one core, and it does not move when other work
 * shares the machine), with min and max over the runs; events_per_wall_s the same over wall
 * time; bytes_per_event (file size / events); peak_rss_bytes (trace-dump's ru_maxrss,
 * median). Baselines measured in the same run: x_read = wall time / the time `cat FILE`
 * takes (reading the bytes alone), x_decode = CPU time / an in-process pass over every record
 * with the plainest reader API (cursor batches, no aggregation).
 * Targets: summary >= 100 M events/s on one core, <= 3 bytes per event, peak memory < 64 MiB
 * whatever the trace size; perfetto >= 30 M events/s, <= 14 bytes of output per event (2 of
 * them the SEQ_NEEDS_INCREMENTAL_STATE flag the schema asks of every packet but a sequence's
 * first), memory bounded.
 *
 * Paths: trace-dump is found next to this program (../bin/trace-dump); the trace goes to
 * build/bench/bench_dump.<pid>.trc beside it and is deleted at exit (--keep keeps it, to
 * profile trace-dump on it). --level N writes with zstd level N instead of the writer's
 * default. --case NAME runs one case only; --records N sets the trace's size (scaling runs).
 * Threads: the generator appends from one thread (like the recorder's drain thread); the
 * writer compresses on 2 threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trcfile.h"

#define BENCH_STREAMS 4
#define BENCH_NAMES 24

static char bench_trace[PATH_MAX + 64];
static char bench_pb[PATH_MAX + 64]; /* case=perfetto's output */
static int bench_level; /* zstd level of the writer; 0 = its default */

static uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t bench_rng(uint64_t *s)
{
	/* xorshift64*: deterministic, fast, good enough for jitter. */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A gap of roughly `mean` ns with a long tail (sum of two uniforms plus rare outliers). */
static uint64_t bench_gap(uint64_t *s, uint64_t mean)
{
	uint64_t r = bench_rng(s);
	uint64_t g = (r % mean) + ((r >> 20) % mean) / 2 + 5;
	if ((r >> 40 & 255) == 0)
		g += mean * 20;
	return g;
}

struct bench_thread {
	struct trcfile_stream *s;
	uint64_t rng, ts, emitted;
	int64_t counter;
	/* state of the nested-span program */
	unsigned phase, inner_left;
	uint32_t inner_name, outer_name;
};

/* Appends the next record of thread t (its own little state machine). */
static int bench_step(struct bench_thread *t)
{
	struct trc_record r = {0};
	uint64_t x = bench_rng(&t->rng);
	switch (t->phase) {
	case 0: /* begin a request */
		t->ts += bench_gap(&t->rng, 400);
		r.type = TRC_REC_SPAN_BEGIN;
		t->outer_name = 1 + (uint32_t)(x % 4);
		r.span.name_id = t->outer_name;
		t->inner_left = 2 + (unsigned)(x >> 8) % 5;
		t->phase = 1;
		break;
	case 1: /* inner span begin, or a counter, or end the request */
		if (!t->inner_left) {
			t->ts += bench_gap(&t->rng, 100);
			r.type = TRC_REC_SPAN_END;
			r.span.name_id = t->outer_name;
			t->phase = 0;
			break;
		}
		if ((x & 3) == 0) {
			t->ts += bench_gap(&t->rng, 60);
			r.type = TRC_REC_COUNTER;
			r.value.name_id = 20 + (uint32_t)(x >> 4) % 4;
			t->counter += (int64_t)((x >> 16) % 9) - 4;
			r.value.value = t->counter;
			break;
		}
		t->ts += bench_gap(&t->rng, 80);
		r.type = TRC_REC_SPAN_BEGIN;
		t->inner_name = 5 + (uint32_t)(x >> 4) % 15;
		r.span.name_id = t->inner_name;
		t->phase = 2;
		break;
	default: /* inner span end */
		t->ts += bench_gap(&t->rng, 300);
		r.type = TRC_REC_SPAN_END;
		r.span.name_id = t->inner_name;
		t->inner_left--;
		t->phase = 1;
		break;
	}
	r.ts_ns = t->ts;
	t->emitted++;
	return trcfile_stream_append(t->s, &r);
}

/* Writes the trace; returns the number of events. */
static uint64_t bench_generate(uint64_t records, double *secs)
{
	static const char *const names[BENCH_NAMES] = {"",
						       "request.get",
						       "request.put",
						       "request.list",
						       "request.delete",
						       "parse",
						       "lookup",
						       "hash",
						       "compress",
						       "encode",
						       "decode",
						       "alloc_pages",
						       "io.read",
						       "io.write",
						       "lock.wait",
						       "sched",
						       "gc",
						       "flush",
						       "merge",
						       "sort",
						       "queue.depth",
						       "bytes.in",
						       "bytes.out",
						       "connections"};
	static const char cmd[] = "bench_workload\0--threads\0004";
	struct trcfile_header_info h = {
		.cmdline = cmd,
		.cmdline_len = sizeof(cmd),
		.pid = 1000,
		.start_mono_ns = 1000000000ull,
		.start_realtime_ns = 1700000000000000000ull,
		.clock_source = 1,
		.host = "bench",
		.tool_version = "bench_dump",
	};
	struct trcfile_writer_opts o = {
		.compress_threads = 2,
		.zstd_level = bench_level,
		.flags = TRCFILE_WRITER_NO_FSYNC,
	};
	int err = 0;
	uint64_t t0 = bench_now_ns();
	struct trcfile_writer *w = trcfile_writer_open(bench_trace, &h, &o, &err);
	if (!w) {
		fprintf(stderr, "bench_dump: cannot create %s: %s\n", bench_trace, strerror(-err));
		exit(1);
	}
	struct trcfile_stream *meta = trcfile_stream_open(w, TRC_STREAM_META, 1000, 0);
	for (uint32_t i = 1; i < BENCH_NAMES; i++) {
		struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = h.start_mono_ns};
		r.name.id = i;
		r.name.str = names[i];
		r.name.len = (uint32_t)strlen(names[i]);
		trcfile_stream_append(meta, &r);
	}
	struct bench_thread th[BENCH_STREAMS];
	for (unsigned i = 0; i < BENCH_STREAMS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].s = trcfile_stream_open(w, TRC_STREAM_THREAD, 1000, 1001 + i);
		th[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		th[i].ts = h.start_mono_ns + 1000 * i;
		char tn[32];
		int n = snprintf(tn, sizeof(tn), "worker-%u", i);
		struct trc_record r = {.type = TRC_REC_THREAD, .ts_ns = h.start_mono_ns};
		r.thread.pid = 1000;
		r.thread.tid = 1001 + i;
		r.thread.name = tn;
		r.thread.name_len = (uint32_t)n;
		trcfile_stream_append(meta, &r);
	}
	/* Round-robin in small batches, the way a drain thread empties rings. */
	uint64_t per = records / BENCH_STREAMS;
	for (uint64_t done = 0; done < per;) {
		uint64_t batch = per - done < 256 ? per - done : 256;
		for (unsigned i = 0; i < BENCH_STREAMS; i++)
			for (uint64_t k = 0; k < batch; k++)
				if ((err = bench_step(&th[i])) != 0) {
					fprintf(stderr, "bench_dump: append: %s\n", strerror(-err));
					exit(1);
				}
		done += batch;
	}
	err = trcfile_writer_close(w);
	if (err) {
		fprintf(stderr, "bench_dump: writing %s: %s\n", bench_trace, strerror(-err));
		exit(1);
	}
	*secs = (double)(bench_now_ns() - t0) / 1e9;
	return per * BENCH_STREAMS;
}

/* Runs argv with stdout to /dev/null; returns wall ns; *maxrss_bytes and *cpu_ns (user +
 * system) from wait4. */
static uint64_t bench_run(char *const argv[], uint64_t *maxrss_bytes, uint64_t *cpu_ns)
{
	uint64_t t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		perror("bench_dump: fork");
		exit(1);
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("bench_dump: wait4");
		exit(1);
	}
	uint64_t dt = bench_now_ns() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_dump: %s %s failed (status 0x%x)\n", argv[0], argv[1],
			status);
		exit(1);
	}
	*maxrss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	*cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
		  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
	return dt;
}

static int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t bench_median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), bench_cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The library's plainest full pass (per-stream cursor batches, no aggregation): ns. */
static uint64_t bench_decode_pass(void)
{
	struct trcfile_reader *r = NULL;
	char msg[256];
	if (trcfile_reader_open(bench_trace, &r, msg, sizeof(msg))) {
		fprintf(stderr, "bench_dump: %s\n", msg);
		exit(1);
	}
	/* The cheapest full pass the API offers: batches of decoded records per stream. */
	static struct trc_record batch[1024];
	uint64_t t0 = bench_now_ns(), n = 0;
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		int k;
		while ((k = trcfile_cursor_read(c, batch, 1024)) > 0)
			n += (uint64_t)k;
		trcfile_cursor_free(c);
	}
	uint64_t dt = bench_now_ns() - t0;
	trcfile_reader_close(r);
	(void)n;
	return dt;
}

/* The command line of case name, in buf (8 entries). */
static char **bench_argv(const char *name, char *dump, char *pq_dir, char **buf)
{
	char *v[8] = {dump, (char *)name, bench_trace, NULL};
	if (!strcmp(name, "parquet")) {
		char *a[] = {dump, (char *)"parquet", (char *)"-o", pq_dir, bench_trace, NULL};
		memcpy(v, a, sizeof(a));
	} else if (!strcmp(name, "perfetto")) {
		char *a[] = {dump, (char *)"perfetto", bench_trace, (char *)"-o", bench_pb, NULL};
		memcpy(v, a, sizeof(a));
	} else if (!strcmp(name, "report")) {
		char *a[] = {dump, (char *)"report", bench_trace, (char *)"-o", bench_pb, NULL};
		memcpy(v, a, sizeof(a));
	} else if (!strcmp(name, "check")) {
		char *a[] = {dump,
			     (char *)"check",
			     bench_trace,
			     (char *)"lost==0",
			     (char *)"events>=1",
			     (char *)"peak-rss<=1G",
			     (char *)"span:parse.p99<=1h",
			     NULL};
		memcpy(v, a, sizeof(a));
	} else if (!strcmp(name, "diff")) {
		char *a[] = {dump, (char *)"diff", bench_trace, bench_trace, NULL};
		memcpy(v, a, sizeof(a));
	}
	memcpy(buf, v, sizeof(v));
	return buf;
}

static bool bench_keep;

static void bench_cleanup(void)
{
	if (bench_trace[0] && !bench_keep)
		unlink(bench_trace);
	if (bench_pb[0])
		unlink(bench_pb);
}

static void bench_on_signal(int sig)
{
	bench_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	bool quick = false;
	unsigned runs = 5;
	const char *only = NULL;
	uint64_t records_arg = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--level") && i + 1 < argc) {
			bench_level = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--records") && i + 1 < argc) {
			records_arg = strtoull(argv[++i], NULL, 10);
			if (records_arg < 1000) {
				fprintf(stderr, "bench_dump: --records must be at least 1000\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--keep")) {
			bench_keep = true;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = (unsigned)atoi(argv[++i]);
			if (runs < 1 || runs > 1000) {
				fprintf(stderr, "bench_dump: --runs must be 1..1000\n");
				return 2;
			}
		} else {
			fprintf(stderr,
				"usage: bench_dump [--quick] [--runs N] [--level ZSTD_LEVEL] "
				"[--case summary|chrome|parquet|perfetto|check|diff|report] "
				"[--records N] [--keep]\n");
			return 2;
		}
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("bench_dump: /proc/self/exe");
		return 1;
	}
	self[n] = 0;
	*strrchr(self, '/') = 0;
	char dump[PATH_MAX + 32];
	snprintf(dump, sizeof(dump), "%s/../bin/trace-dump", self);
	if (access(dump, X_OK) != 0) {
		fprintf(stderr, "bench_dump: %s not built\n", dump);
		return 1;
	}
	snprintf(bench_trace, sizeof(bench_trace), "%s/bench_dump.%d.trc", self, (int)getpid());
	snprintf(bench_pb, sizeof(bench_pb), "%s/bench_dump.%d.pb", self, (int)getpid());
	atexit(bench_cleanup);
	signal(SIGINT, bench_on_signal);
	signal(SIGTERM, bench_on_signal);

	uint64_t records = records_arg ? records_arg : quick ? 5000000ull : 100000000ull;
	double gen_s = 0;
	uint64_t events = bench_generate(records, &gen_s);
	struct stat st;
	if (stat(bench_trace, &st) != 0) {
		perror("bench_dump: stat");
		return 1;
	}
	double bpe = (double)st.st_size / (double)events;
	printf("bench=dump: %" PRIu64 " events in %d streams, %.1f MB on disk (%.2f bytes/event), "
	       "written in %.2f s (%.1f M records/s through the writer)\n",
	       events, BENCH_STREAMS, (double)st.st_size / 1e6, bpe, gen_s,
	       (double)events / gen_s / 1e6);

	/* Baselines in this run: reading the bytes, and the plain decode pass. */
	uint64_t *t = calloc(runs, sizeof(uint64_t)), *m = calloc(runs, sizeof(uint64_t));
	uint64_t *cpu = calloc(runs, sizeof(uint64_t));
	/* The runs of the case measured alternately with summary's (against_summary). */
	uint64_t *alt_t = calloc(runs, sizeof(uint64_t)), *alt_m = calloc(runs, sizeof(uint64_t));
	uint64_t *alt_cpu = calloc(runs, sizeof(uint64_t));
	char *cat_argv[] = {(char *)"/bin/cat", bench_trace, NULL};
	for (unsigned i = 0; i < runs; i++)
		t[i] = bench_run(cat_argv, &m[i], &cpu[i]);
	uint64_t read_ns = bench_median(t, runs);
	for (unsigned i = 0; i < runs; i++)
		t[i] = bench_decode_pass();
	uint64_t floor_ns = bench_median(t, runs);
	printf("baselines (median of %u): cat %.3f s; decode pass in-process (cursor batches, no "
	       "aggregation) %.3f s (%.1f M events/s)\n",
	       runs, (double)read_ns / 1e9, (double)floor_ns / 1e9,
	       (double)events / ((double)floor_ns / 1e9) / 1e6);

	printf("\n%-8s %12s %10s %10s %12s %9s %13s %8s %9s\n", "case", "M events/s", "min", "max",
	       "M ev/wall-s", "B/event", "peak RSS MiB", "x_read", "x_decode");
	const char *cases[7] = {"summary", "chrome", "parquet", "perfetto",
				"check",   "diff",   "report"};
	uint64_t summary_cpu = 0;
	char pq_dir[sizeof(bench_trace) + 16];
	snprintf(pq_dir, sizeof(pq_dir), "%s.parquet.d", bench_trace);
	/* check, diff and report are measured against summary: it runs with them. */
	bool against_summary = only && (!strcmp(only, "check") || !strcmp(only, "diff") ||
					!strcmp(only, "report"));
	for (unsigned c = 0; c < 7; c++) {
		if (only && strcmp(only, cases[c]) && !(c == 0 && against_summary))
			continue;
		char *buf[8];
		char **argv_c = bench_argv(cases[c], dump, pq_dir, buf);
		bool pq = !strcmp(cases[c], "parquet");
		bool pf = !strcmp(cases[c], "perfetto") || !strcmp(cases[c], "report");
		if (c == 0 && against_summary) {
			/* Alternated with the case measured against it, so that the ratio is of
			 * runs under the same load. */
			char *obuf[8];
			char **argv_o = bench_argv(only, dump, pq_dir, obuf);
			for (unsigned i = 0; i < runs; i++) {
				t[i] = bench_run(argv_c, &m[i], &cpu[i]);
				alt_t[i] = bench_run(argv_o, &alt_m[i], &alt_cpu[i]);
			}
		} else if (against_summary) {
			memcpy(t, alt_t, runs * sizeof(*t));
			memcpy(m, alt_m, runs * sizeof(*m));
			memcpy(cpu, alt_cpu, runs * sizeof(*cpu));
		} else {
			for (unsigned i = 0; i < runs; i++)
				t[i] = bench_run(argv_c, &m[i], &cpu[i]);
		}
		/* The tables' size, then they go (the trace is the only input kept). */
		uint64_t out_bytes = 0;
		if (pq) {
			static const char *const tables[] = {"spans", "events", "allocations",
							     "rss", "traces"};
			for (unsigned k = 0; k < 5; k++) {
				char p[sizeof(pq_dir) + 32];
				struct stat ts;
				snprintf(p, sizeof(p), "%s/%s.parquet", pq_dir, tables[k]);
				if (stat(p, &ts) == 0)
					out_bytes += (uint64_t)ts.st_size;
				unlink(p);
			}
			rmdir(pq_dir);
		}
		struct stat os;
		if (pf && stat(bench_pb, &os) == 0) {
			out_bytes = (uint64_t)os.st_size;
			unlink(bench_pb);
		}
		uint64_t lo = UINT64_MAX, hi = 0;
		for (unsigned i = 0; i < runs; i++) {
			lo = cpu[i] < lo ? cpu[i] : lo;
			hi = cpu[i] > hi ? cpu[i] : hi;
		}
		uint64_t wall = bench_median(t, runs);
		uint64_t med = bench_median(cpu, runs);
		uint64_t rss = bench_median(m, runs);
		double eps = (double)events / ((double)med / 1e9);
		double eps_min = (double)events / ((double)hi / 1e9);
		double eps_max = (double)events / ((double)lo / 1e9);
		double eps_wall = (double)events / ((double)wall / 1e9);
		printf("%-8s %12.1f %10.1f %10.1f %12.1f %9.2f %13.1f %8.2f %9.2f\n", cases[c],
		       eps / 1e6, eps_min / 1e6, eps_max / 1e6, eps_wall / 1e6, bpe,
		       (double)rss / 1048576.0, (double)wall / (double)read_ns,
		       (double)med / (double)floor_ns);
		printf("SUMMARY bench=dump case=%s events=%" PRIu64 " runs=%u events_per_s=%.0f "
		       "events_per_s_min=%.0f events_per_s_max=%.0f events_per_wall_s=%.0f "
		       "bytes_per_event=%.3f peak_rss_bytes=%" PRIu64 " cpu_ns=%" PRIu64
		       " wall_ns=%" PRIu64 " x_read=%.2f x_decode=%.2f",
		       cases[c], events, runs, eps, eps_min, eps_max, eps_wall, bpe, rss, med, wall,
		       (double)wall / (double)read_ns, (double)med / (double)floor_ns);
		if (pq || pf)
			printf(" output_bytes=%" PRIu64 " output_bytes_per_event=%.3f", out_bytes,
			       (double)out_bytes / (double)events);
		if (c == 0)
			summary_cpu = med;
		else if (c >= 4 && summary_cpu)
			printf(" x_summary=%.2f", (double)med / (double)summary_cpu);
		printf("\n");
	}
	free(alt_cpu);
	free(alt_m);
	free(alt_t);
	free(cpu);
	free(t);
	free(m);
	return 0;
}
