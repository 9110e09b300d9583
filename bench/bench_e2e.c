/* bench_e2e.c - bench=e2e: the whole recorder, end to end, through trace-run to disk.
 *
 * case=1thread, case=2threads: the highest rate that paced producers (bench/work_paced) can
 *   sustain through trace-run with nothing lost. A ladder of rates is tried with short runs;
 *   the highest lossless rate is then run RUNS times for the full duration (10 s; --quick 1 s)
 *   and reported if every run was lossless (else the next rung down). At that rate:
 *   events_per_s (recorded), bytes_per_event (trace file), recorder_cpu (CPU seconds of
 *   trace-run per second of run: the wait4 total less the program's own CPU, which it prints),
 *   recorder_peak_rss_bytes (trace-run's own ru_maxrss, from its report line).
 * case=max-lossless: as 1thread with a ladder that climbs from 30 M to 100 M events/s in 10 M
 *   steps: the highest paced rate with nothing lost in every one of RUNS runs of 10 s.
 * case=flood: producers as fast as they can (1 thread, 5 s): events_per_s recorded and lost,
 *   lost_fraction, finish_s (program exit to trace-run exit: the last drain and the
 *   compression of stored chunks), bytes_per_event of the finished file, write_mb_per_s (what
 *   trace-run wrote while recording, per second of the run) beside machine_write_mb_per_s:
 *   memcpy plus pwrite of as many bytes to a file in the same folder, measured in the same run,
 *   so a disk-bound result shows as one; rss_samples beside rss_samples_requested (10 Hz: the
 *   sampler keeps its rate during the flood); stored_chunks (written uncompressed while
 *   compression was behind) and bg_compressed_chunks (of them, compressed in the background
 *   while the program ran, chunk_bgc.h; the rest before exit). TRC_NO_BG_COMPRESS=1 in the
 *   environment runs trace-run without the background compressor, for a before/after.
 *
 * case=threads-200: 200 threads each emitting 200 000 events at once (work_events 40M 200),
 *   as a new user would: events lost (lost_fraction), the ring bytes resident in the program
 *   at their peak (ring_bytes_resident: the summary's buffers_resident_peak_bytes, which
 *   also counts the region's tables before the rings, 212 KiB at the defaults: 264.2 MiB
 *   here is the bound exactly, 64 MiB of budget and 1 MiB per thread, plus those), the
 *   program's peak RSS (program_maxrss_bytes, buffers included) and trace-run's own
 *   (recorder_peak_rss_bytes). Medians of RUNS runs.
 *
 * Paths: trace-run, trace-dump and work_paced are found next to this program
 * (build/bench/../bin). Trace files go to build/bench/ and are deleted after each run.
 * Threads: single-threaded driver; the measured processes are its children.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <stdint.h>
#include <unistd.h>

static char dir_bench[PATH_MAX], trace_run[PATH_MAX + 32], trace_dump[PATH_MAX + 32],
	work[PATH_MAX + 32];
static char work_events[PATH_MAX + 32];

struct e2e_result {
	bool ok;
	double wall_s;
	double events_recorded, events_lost, emitted;
	double file_bytes;
	double recorder_cpu_s;
	double recorder_rss_bytes;
	double finish_s; /* program's end to trace-run's exit */
	double written_bytes; /* what trace-run wrote while recording */
	double rss_samples; /* RSS samples in the trace (the sampler's rate under load) */
	double stored_chunks, bg_chunks; /* written stored; of them compressed in the background */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with stdout to out_path (may be NULL) and stderr to err_path; returns exit code. */
static int run_cmd(char *const argv[], const char *out_path, const char *err_path,
		   struct rusage *ru)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int o = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	struct rusage r;
	while (wait4(pid, &st, 0, &r) < 0 && errno == EINTR)
		;
	if (ru)
		*ru = r;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	size_t got = fread(b, 1, (size_t)n, f);
	b[got] = 0;
	fclose(f);
	return b;
}

static double json_num(const char *json, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(json, pat);
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static struct e2e_result run_once(int threads, double rate_per_thread, double seconds)
{
	struct e2e_result r = {0};
	char trace[PATH_MAX + 32], out[PATH_MAX + 32], err[PATH_MAX + 32], rate[32], thr[8],
		secs[32];
	snprintf(trace, sizeof(trace), "%s/e2e-%d.trc", dir_bench, (int)getpid());
	snprintf(out, sizeof(out), "%s/e2e-%d.out", dir_bench, (int)getpid());
	snprintf(err, sizeof(err), "%s/e2e-%d.err", dir_bench, (int)getpid());
	snprintf(rate, sizeof(rate), "%.0f", rate_per_thread);
	snprintf(thr, sizeof(thr), "%d", threads);
	snprintf(secs, sizeof(secs), "%.3f", seconds);
	char *argv[] = {trace_run, "--verbose", "--no-preload", "-o", trace, "--",
			work,	   thr,		rate,		secs, NULL};
	struct rusage ru;
	double t0 = now_s();
	int rc = run_cmd(argv, out, err, &ru);
	double t1 = now_s();
	r.wall_s = t1 - t0;
	char *o = slurp(out), *e = slurp(err);
	double prog_cpu = 0, end_ns = 0;
	const char *p = strstr(o, "emitted ");
	if (p &&
	    sscanf(p, "emitted %lf cpu_s %lf end_mono_ns %lf", &r.emitted, &prog_cpu, &end_ns) == 3)
		r.finish_s = t1 - end_ns / 1e9;
	r.written_bytes = -1;
	p = strstr(e, "MiB written while recording");
	if (p) {
		while (p > e && p[-1] != '(')
			p--;
		r.written_bytes = strtod(p, NULL) * 1048576.0;
	}
	p = strstr(e, "written uncompressed while compression was behind");
	if (p) {
		while (p > e && p[-1] != '\n')
			p--;
		sscanf(p, "trace-run: %lf", &r.stored_chunks);
	}
	p = strstr(e, " compressed in the background");
	if (p) {
		while (p > e && p[-1] != ' ')
			p--;
		r.bg_chunks = strtod(p, NULL);
	}
	r.recorder_cpu_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime) - prog_cpu;
	p = strstr(e, "recorder RSS ");
	if (p) {
		double v = strtod(p + 13, NULL);
		r.recorder_rss_bytes = v * 1024 * 1024; /* reported in MiB */
	}
	free(o);
	free(e);
	struct stat st;
	if (rc == 0 && stat(trace, &st) == 0) {
		r.file_bytes = (double)st.st_size;
		if (r.written_bytes < 0)
			r.written_bytes = r.file_bytes; /* nothing was stored: the file is it */
		char *dargv[] = {trace_dump, "summary", "--json", trace, NULL};
		if (run_cmd(dargv, out, NULL, NULL) == 0) {
			char *j = slurp(out);
			r.events_recorded = json_num(j, "events_recorded");
			r.events_lost = json_num(j, "events_lost");
			r.rss_samples = json_num(j, "rss_samples");
			r.ok = r.events_recorded >= 0;
			free(j);
		}
	}
	unlink(trace);
	unlink(out);
	unlink(err);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_RUNS 32

static void paced_case(const char *name, int threads, int runs, double seconds, bool quick)
{
	/* total rates (all threads) tried, low to high; --quick tries three rungs only */
	static const double full_ladder[] = {1e6,  5e6,	 10e6, 15e6, 20e6, 25e6,
					     30e6, 35e6, 40e6, 50e6, 60e6, 80e6};
	static const double quick_ladder[] = {5e6, 20e6, 30e6};
	static const double max_ladder[] = {30e6, 40e6, 50e6, 60e6, 70e6, 80e6, 90e6, 100e6};
	static const double max_quick_ladder[] = {30e6, 60e6};
	bool max = !strcmp(name, "max-lossless");
	const double *ladder = max ? (quick ? max_quick_ladder : max_ladder)
				   : (quick ? quick_ladder : full_ladder);
	int n_ladder = max ? (quick ? 2 : (int)(sizeof(max_ladder) / sizeof(max_ladder[0])))
			   : (quick ? 3 : (int)(sizeof(full_ladder) / sizeof(full_ladder[0])));
	double probe_s = quick ? 0.3 : 2.0;
	int best = -1;
	for (int i = 0; i < n_ladder; i++) {
		struct e2e_result r = run_once(threads, ladder[i] / threads, probe_s);
		bool lossless = r.ok && r.events_lost == 0 &&
				r.events_recorded >= 0.95 * ladder[i] * probe_s;
		printf("  %-9s probe %5.0fM ev/s: recorded %.0f lost %.0f (%s)\n", name,
		       ladder[i] / 1e6, r.events_recorded, r.events_lost,
		       lossless ? "lossless" : "not sustained");
		if (!lossless)
			break;
		best = i;
	}
	double eps[MAX_RUNS], bpe[MAX_RUNS], cpu[MAX_RUNS], rss[MAX_RUNS];
	int got = 0;
	while (best >= 0) {
		got = 0;
		bool all = true;
		for (int k = 0; k < runs; k++) {
			struct e2e_result r = run_once(threads, ladder[best] / threads, seconds);
			if (!r.ok || r.events_lost != 0) {
				all = false;
				break;
			}
			eps[got] = r.events_recorded / seconds;
			bpe[got] = r.events_recorded > 0 ? r.file_bytes / r.events_recorded : 0;
			cpu[got] = r.recorder_cpu_s / r.wall_s;
			rss[got] = r.recorder_rss_bytes;
			got++;
		}
		if (all)
			break;
		printf("  %-9s %.0fM ev/s lost events over %.0f s; trying the rung below\n", name,
		       ladder[best] / 1e6, seconds);
		best--;
	}
	if (best < 0 || !got) {
		printf("SUMMARY bench=e2e case=%s events_per_s=0 sustained=none\n", name);
		return;
	}
	double eps_sorted[MAX_RUNS];
	memcpy(eps_sorted, eps, sizeof(double) * (size_t)got);
	qsort(eps_sorted, (size_t)got, sizeof(double), cmp_double);
	printf("SUMMARY bench=e2e case=%s events_per_s=%.0f events_per_s_min=%.0f "
	       "events_per_s_max=%.0f target_rate=%.0f bytes_per_event=%.3f recorder_cpu=%.3f "
	       "recorder_peak_rss_bytes=%.0f threads=%d seconds=%.1f runs=%d\n",
	       name, median(eps, got), eps_sorted[0], eps_sorted[got - 1], ladder[best],
	       median(bpe, got), median(cpu, got), median(rss, got), threads, seconds, got);
}

/* This machine's own rate for what the writer does with stored chunks: memcpy into a 1 MiB
 * buffer, pwrite to a file in the bench folder, total bytes (as many as a flood run writes),
 * MB/s. The file is deleted. */
static double machine_write_mb_per_s(double total)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/e2e-disk-%d.tmp", dir_bench, (int)getpid());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 0;
	size_t chunk = 1u << 20;
	size_t src_n = 64u << 20;
	uint8_t *src = malloc(src_n), *buf = malloc(chunk);
	if (!src || !buf) {
		free(src);
		free(buf);
		close(fd);
		unlink(path);
		return 0;
	}
	for (size_t i = 0; i < src_n; i++)
		src[i] = (uint8_t)(i * 131u >> 3);
	memset(buf, 0, chunk);
	double t0 = now_s();
	off_t off = 0;
	for (double done = 0; done < total; done += (double)chunk) {
		memcpy(buf, src + ((size_t)off % src_n), chunk);
		if (pwrite(fd, buf, chunk, off) != (ssize_t)chunk)
			break;
		off += (off_t)chunk;
	}
	double t = now_s() - t0;
	close(fd);
	unlink(path);
	free(src);
	free(buf);
	return t > 0 ? (double)off / t / 1e6 : 0;
}

static void flood_case(int runs, double seconds)
{
	double eps[MAX_RUNS], lost[MAX_RUNS], lostf[MAX_RUNS], fin[MAX_RUNS], bpe[MAX_RUNS];
	double wmb[MAX_RUNS], wbytes[MAX_RUNS], rss[MAX_RUNS], nst[MAX_RUNS], nbg[MAX_RUNS];
	int got = 0;
	for (int k = 0; k < runs; k++) {
		struct e2e_result r = run_once(1, 0, seconds);
		if (!r.ok)
			continue;
		eps[got] = r.events_recorded / seconds;
		lost[got] = r.events_lost;
		lostf[got] = r.emitted > 0 ? r.events_lost / r.emitted : 0;
		fin[got] = r.finish_s;
		bpe[got] = r.events_recorded > 0 ? r.file_bytes / r.events_recorded : 0;
		wmb[got] = r.written_bytes / seconds / 1e6;
		wbytes[got] = r.written_bytes;
		rss[got] = r.rss_samples;
		nst[got] = r.stored_chunks;
		nbg[got] = r.bg_chunks;
		printf("  flood     run %d: recorded %.0f lost %.0f emitted %.0f; finish %.2f s, "
		       "%.2f bytes/event, %.0f MB written while recording (%.0f MB/s); %.0f chunks "
		       "stored, %.0f compressed in the background\n",
		       k, r.events_recorded, r.events_lost, r.emitted, r.finish_s, bpe[got],
		       r.written_bytes / 1e6, wmb[got], r.stored_chunks, r.bg_chunks);
		got++;
	}
	if (!got) {
		printf("SUMMARY bench=e2e case=flood events_per_s=0 failed=1\n");
		return;
	}
	double machine = machine_write_mb_per_s(median(wbytes, got));
	printf("  flood     this machine: memcpy + pwrite of as many bytes: %.0f MB/s\n", machine);
	printf("SUMMARY bench=e2e case=flood events_per_s=%.0f lost=%.0f lost_fraction=%.4f "
	       "finish_s=%.3f bytes_per_event=%.3f write_mb_per_s=%.1f "
	       "machine_write_mb_per_s=%.1f rss_samples=%.0f rss_samples_requested=%.0f "
	       "stored_chunks=%.0f bg_compressed_chunks=%.0f seconds=%.1f runs=%d\n",
	       median(eps, got), median(lost, got), median(lostf, got), median(fin, got),
	       median(bpe, got), median(wmb, got), machine, median(rss, got), seconds * 10,
	       median(nst, got), median(nbg, got), seconds, got);
}

static void threads_case(int runs)
{
	double lostf[MAX_RUNS], res[MAX_RUNS], prog[MAX_RUNS], rec[MAX_RUNS];
	int got = 0;
	char trace[PATH_MAX + 32], out[PATH_MAX + 32], err[PATH_MAX + 32];
	snprintf(trace, sizeof(trace), "%s/e2e-%d.trc", dir_bench, (int)getpid());
	snprintf(out, sizeof(out), "%s/e2e-%d.out", dir_bench, (int)getpid());
	snprintf(err, sizeof(err), "%s/e2e-%d.err", dir_bench, (int)getpid());
	for (int k = 0; k < runs; k++) {
		char *argv[] = {trace_run,   "--no-preload", "-o",  trace, "--",
				work_events, "40000000",     "200", NULL};
		if (run_cmd(argv, out, err, NULL) != 0)
			continue;
		char *e = slurp(err);
		const char *p = strstr(e, "recorder RSS ");
		double rrss = p ? strtod(p + 13, NULL) * 1048576.0 : 0;
		free(e);
		char *dargv[] = {trace_dump, "summary", "--json", trace, NULL};
		if (run_cmd(dargv, out, NULL, NULL) != 0)
			continue;
		char *j = slurp(out);
		double recd = json_num(j, "events_recorded"), lost = json_num(j, "events_lost");
		lostf[got] = recd + lost > 0 ? lost / (recd + lost) : 0;
		res[got] = json_num(j, "buffers_resident_peak_bytes");
		prog[got] = json_num(j, "exit_maxrss_bytes");
		rec[got] = rrss;
		free(j);
		printf("  threads-200 run %d: lost %.0f of %.0f, ring bytes resident %.1f MiB, "
		       "program "
		       "peak RSS %.1f MiB, recorder peak RSS %.1f MiB\n",
		       k, lost, recd + lost, res[got] / 1048576.0, prog[got] / 1048576.0,
		       rrss / 1048576.0);
		got++;
	}
	unlink(trace);
	unlink(out);
	unlink(err);
	if (!got) {
		printf("SUMMARY bench=e2e case=threads-200 failed=1 lost_fraction=1\n");
		return;
	}
	printf("SUMMARY bench=e2e case=threads-200 lost_fraction=%.4f ring_bytes_resident=%.0f "
	       "program_maxrss_bytes=%.0f recorder_peak_rss_bytes=%.0f threads=200 "
	       "events_per_thread=200000 runs=%d\n",
	       median(lostf, got), median(res, got), median(prog, got), median(rec, got), got);
}

int main(int argc, char **argv)
{
	bool quick = false;
	int runs = 5;
	const char *only = NULL; /* case=NAME: that case alone */
	/* line by line: a harness that stops us on a timeout still sees what was measured */
	setvbuf(stdout, NULL, _IOLBF, 0);
	static const char *const cases[] = {"1thread", "2threads", "max-lossless", "flood",
					    "threads-200"};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > MAX_RUNS) {
				fprintf(stderr, "bench_e2e: --runs: expected 1 to %d, got '%s'\n",
					MAX_RUNS, argv[i]);
				return 2;
			}
			runs = (int)v;
		} else if (!strncmp(argv[i], "case=", 5)) {
			only = argv[i] + 5;
			bool known = false;
			for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
				known |= !strcmp(only, cases[k]);
			if (!known) {
				fprintf(stderr,
					"bench_e2e: unknown case '%s' (1thread, 2threads, "
					"max-lossless, flood, threads-200)\n",
					only);
				return 2;
			}
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: bench_e2e [--quick] [--runs N] [case=NAME]\n"
			       "cases: 1thread 2threads max-lossless flood threads-200 (default: "
			       "all, several minutes); bench/bench_e2e.c's header says what each "
			       "measures\n");
			return 0;
		} else {
			/* An unknown word must not start minutes of load. */
			fprintf(stderr, "bench_e2e: unknown argument '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	if (quick && runs > 3)
		runs = 3;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(dir_bench, sizeof(dir_bench), "%s", self);
	snprintf(trace_run, sizeof(trace_run), "%s/../bin/trace-run", self);
	snprintf(trace_dump, sizeof(trace_dump), "%s/../bin/trace-dump", self);
	snprintf(work, sizeof(work), "%s/work_paced", self);
	snprintf(work_events, sizeof(work_events), "%s/work_events", self);
	if (access(trace_run, X_OK) || access(trace_dump, X_OK) || access(work, X_OK)) {
		fprintf(stderr, "bench_e2e: needs %s, %s and %s\n", trace_run, trace_dump, work);
		return 1;
	}
	double seconds = quick ? 0.5 : 10.0;
	printf("bench=e2e: trace-run -- work_paced THREADS RATE SECONDS, default settings "
	       "(16 MiB rings, 64 MiB ring budget, zstd level 1), %d runs of %.0f s\n",
	       runs, seconds);
#define E2E_WANT(name) (!only || !strcmp(only, name))
	if (E2E_WANT("1thread"))
		paced_case("1thread", 1, runs, seconds, quick);
	if (E2E_WANT("2threads"))
		paced_case("2threads", 2, runs, seconds, quick);
	if (E2E_WANT("max-lossless"))
		paced_case("max-lossless", 1, runs, seconds, quick);
	if (E2E_WANT("flood"))
		flood_case(runs, quick ? 0.5 : 5.0);
	if (E2E_WANT("threads-200"))
		threads_case(quick ? 1 : runs);
	return 0;
}
