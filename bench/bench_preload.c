/* bench_preload.c - bench=preload: what the preload library costs a real program, recorded.
 *
 * This program is a mini recorder: it creates a session, spawns the workload with the session
 * fd inherited and LD_PRELOAD=libtrc-preload.so (found at ../lib next to this program), and
 * drains the session in a loop (back to back while there is data, else every 100 us; its sink
 * counts records) until the child exits, then drains what is left. The baseline is the same
 * workload spawned bare (no session, no preload), alternating with the recorded run, so both see
 * the same machine.
 *
 * case=malloc  work_malloc OPS 0 (OPS = 20M, --quick 2M): malloc/free of mixed sizes (no
 *              peak phase: its page faults would cost both runs alike and dilute the ratio),
 *              recorded without call stacks (TRC_ALLOC_STACKS=none).
 *              ratio = recorded wall / bare wall (target <= 1.5).
 * case=malloc-stacks   the same with the call stack of every allocation (TRC_ALLOC_STACKS=all).
 * case=malloc-sampled  the same with sampled stacks (TRC_ALLOC_STACKS=sample=BYTES, --sample
 *              BYTES, default 524288): one stack per BYTES allocated on average.
 * case=deep-stacks     work_deep OPS 8 (OPS = 4M, --quick 400K): every allocation 30 frames
 *              deep through lib_deep.so (no frame pointers), on 8 call paths taken in turns
 *              of 16 allocations, with all stacks; ns_per_alloc is the recorded loop's time
 *              per allocation, overhead_ns_per_alloc its excess over the bare loop's.
 * case=calls   work_calls CALLS (12M, --quick 3M) bare (plain build) against work_calls_finst
 *              recorded (-finstrument-functions: FUNC_ENTER/EXIT through the preload hooks).
 * Wall = fork to reap, as a user would see it; loop_ratio uses the wall_ns the workload prints
 * for its own loop (no start-up). events and lost are the recorded run's (lost should be 0).
 * Medians over --runs N (default 5) with min and max. Prints a table, one SUMMARY per case.
 * Threads: one (the drain runs between polls of the child).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

static char dir[PATH_MAX], preload[PATH_MAX + 64];

static uint64_t now_ns(void)
{
	return trc_mono_ns();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct stat3 {
	double med, min, max;
};

static struct stat3 stats(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	struct stat3 s = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0], v[n - 1]};
	return s;
}

static uint64_t events, lost;

static int count(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	(void)arg;
	(void)st;
	if (r->type == TRC_REC_LOST)
		lost += r->lost.count;
	else if (r->type >= TRC_REC_SPAN_BEGIN && r->type <= TRC_REC_FUNC_EXIT)
		events++;
	return 0;
}

struct run {
	double wall_s;
	double loop_s; /* the workload's own wall_ns */
	int ok;
};

/* Runs argv; with s, under the session and the preload library, draining until it exits. */
static struct run run_one(char *const argv[], struct trc_session *s, const char *stacks)
{
	struct run res = {0};
	char out[] = "/tmp/trc-bench-preload-XXXXXX";
	int ofd = mkstemp(out);
	if (ofd < 0)
		return res;
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	if (pid < 0)
		return res;
	if (pid == 0) {
		dup2(ofd, 1);
		if (s) {
			int fd = session_fd(s);
			fcntl(fd, F_SETFD, 0); /* the child's copy must survive exec */
			char num[16];
			snprintf(num, sizeof(num), "%d", fd);
			setenv(TRC_SESSION_FD_ENV, num, 1);
			setenv("LD_PRELOAD", preload, 1);
			if (stacks)
				setenv("TRC_ALLOC_STACKS", stacks, 1);
			else
				unsetenv("TRC_ALLOC_STACKS");
		} else {
			unsetenv(TRC_SESSION_FD_ENV);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	struct session_sink k = {.record = count};
	int status = 0;
	struct timespec nap = {0, 100000};
	for (;;) {
		/* Keep draining while there is data; nap only when idle. */
		long got = s ? session_drain(s, &k) : 0;
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return res;
		if (got <= 0)
			nanosleep(&nap, NULL);
	}
	res.wall_s = (double)(now_ns() - t0) / 1e9;
	if (s)
		while (session_drain(s, &k) > 0)
			;
	char buf[512] = {0};
	ssize_t n = pread(ofd, buf, sizeof(buf) - 1, 0);
	close(ofd);
	unlink(out);
	const char *w = n > 0 ? strstr(buf, "wall_ns=") : NULL;
	res.loop_s = w ? strtod(w + 8, NULL) / 1e9 : 0;
	res.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && w;
	return res;
}

/* stacks: TRC_ALLOC_STACKS of the recorded run (NULL: the preload library's default); allocs:
 * the allocations of the workload's loop, for ns per allocation (0: not printed). */
static int bench_case(const char *name, char *const bare_argv[], char *const rec_argv[], int runs,
		      const char *stacks, uint64_t allocs)
{
	double *bw = calloc((size_t)runs, sizeof(double)),
	       *rw = calloc((size_t)runs, sizeof(double));
	double *ra = calloc((size_t)runs, sizeof(double)),
	       *la = calloc((size_t)runs, sizeof(double));
	double *na = calloc((size_t)runs, sizeof(double)),
	       *oa = calloc((size_t)runs, sizeof(double));
	uint64_t ev_total = 0, lost_total = 0;
	for (int r = 0; r < runs; r++) {
		struct session_config cfg = {.max_slots = 16, .ring_bytes = 16u << 20};
		int err = 0;
		struct trc_session *s = session_create(&cfg, &err);
		if (!s) {
			fprintf(stderr, "bench_preload: session_create: %s\n", strerror(-err));
			return 1;
		}
		struct run b = run_one(bare_argv, NULL, NULL);
		events = lost = 0;
		struct run t = run_one(rec_argv, s, stacks);
		uint32_t attached = session_processes_attached(s);
		session_destroy(s);
		if (!b.ok || !t.ok || attached != 1 || events == 0) {
			fprintf(stderr,
				"bench_preload: case %s: run %d failed (bare ok %d, recorded ok "
				"%d, "
				"attached %u, events %lu)\n",
				name, r, b.ok, t.ok, attached, (unsigned long)events);
			return 1;
		}
		ev_total += events;
		lost_total += lost;
		bw[r] = b.wall_s;
		rw[r] = t.wall_s;
		ra[r] = t.wall_s / b.wall_s;
		la[r] = t.loop_s / b.loop_s;
		na[r] = allocs ? t.loop_s * 1e9 / (double)allocs : 0;
		oa[r] = allocs ? (t.loop_s - b.loop_s) * 1e9 / (double)allocs : 0;
	}
	struct stat3 sb = stats(bw, runs), sr = stats(rw, runs), sx = stats(ra, runs),
		     sl = stats(la, runs), sn = stats(na, runs), so = stats(oa, runs);
	printf("case=%s (TRC_ALLOC_STACKS=%s)\n", name, stacks ? stacks : "default");
	printf("  %-30s %10s %10s %10s\n", "", "median", "min", "max");
	printf("  %-30s %10.4f %10.4f %10.4f\n", "bare wall, s", sb.med, sb.min, sb.max);
	printf("  %-30s %10.4f %10.4f %10.4f\n", "recorded wall, s", sr.med, sr.min, sr.max);
	printf("  %-30s %10.3f %10.3f %10.3f\n", "ratio", sx.med, sx.min, sx.max);
	printf("  %-30s %10.3f %10.3f %10.3f\n", "loop ratio (no start-up)", sl.med, sl.min,
	       sl.max);
	if (allocs) {
		printf("  %-30s %10.1f %10.1f %10.1f\n", "recorded loop, ns per alloc", sn.med,
		       sn.min, sn.max);
		printf("  %-30s %10.1f %10.1f %10.1f\n", "overhead, ns per alloc", so.med, so.min,
		       so.max);
	}
	printf("  events per recorded run %lu, lost %lu\n", (unsigned long)(ev_total / runs),
	       (unsigned long)(lost_total / runs));
	printf("SUMMARY bench=preload case=%s ratio=%.3f ratio_min=%.3f ratio_max=%.3f "
	       "bare_wall_s=%.4f bare_wall_s_min=%.4f bare_wall_s_max=%.4f recorded_wall_s=%.4f "
	       "recorded_wall_s_min=%.4f recorded_wall_s_max=%.4f loop_ratio=%.3f "
	       "events=%lu lost=%lu runs=%d",
	       name, sx.med, sx.min, sx.max, sb.med, sb.min, sb.max, sr.med, sr.min, sr.max, sl.med,
	       (unsigned long)(ev_total / runs), (unsigned long)(lost_total / runs), runs);
	if (allocs)
		printf(" ns_per_alloc=%.1f overhead_ns_per_alloc=%.1f "
		       "overhead_ns_per_alloc_min=%.1f "
		       "overhead_ns_per_alloc_max=%.1f",
		       sn.med, so.med, so.min, so.max);
	printf("\n");
	fflush(stdout);
	free(bw);
	free(rw);
	free(ra);
	free(la);
	free(na);
	free(oa);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 5, quick = 0;
	const char *sample = "524288";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--sample") == 0 && i + 1 < argc &&
			 strtoull(argv[i + 1], NULL, 10) > 0)
			sample = argv[++i];
		else {
			fprintf(stderr,
				"usage: bench_preload [--quick] [--runs N] [--sample BYTES]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 1000)
		runs = 5;
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return 1;
	dir[n] = 0;
	*strrchr(dir, '/') = 0;
	snprintf(preload, sizeof(preload), "%s/../lib/libtrc-preload.so", dir);
	char wm[PATH_MAX + 32], wc[PATH_MAX + 32], wcf[PATH_MAX + 32], wd[PATH_MAX + 32],
		ld[PATH_MAX + 32];
	snprintf(wm, sizeof(wm), "%s/work_malloc", dir);
	snprintf(wc, sizeof(wc), "%s/work_calls", dir);
	snprintf(wcf, sizeof(wcf), "%s/work_calls_finst", dir);
	snprintf(wd, sizeof(wd), "%s/work_deep", dir);
	snprintf(ld, sizeof(ld), "%s/lib_deep.so", dir);
	const char *need[] = {preload, wm, wc, wcf, wd, ld};
	for (int i = 0; i < 6; i++)
		if (access(need[i], R_OK) != 0) {
			fprintf(stderr, "bench_preload: %s is not built\n", need[i]);
			return 1;
		}
	char *ops = quick ? "2000000" : "20000000", *calls = quick ? "3000000" : "12000000";
	char *deep_ops = quick ? "400000" : "4000000";
	char sampled[64];
	snprintf(sampled, sizeof(sampled), "sample=%s", sample);
	printf("bench=preload  runs=%d%s  (workloads in %s)\n", runs, quick ? " (quick)" : "", dir);
	uint64_t nops = strtoull(ops, NULL, 10);
	char *malloc_argv[] = {wm, ops, "0", NULL};
	if (bench_case("malloc", malloc_argv, malloc_argv, runs, "none", nops) ||
	    bench_case("malloc-stacks", malloc_argv, malloc_argv, runs, "all", nops) ||
	    bench_case("malloc-sampled", malloc_argv, malloc_argv, runs, sampled, nops))
		return 1;
	char *deep_argv[] = {wd, deep_ops, "8", NULL};
	if (bench_case("deep-stacks", deep_argv, deep_argv, runs, "all",
		       strtoull(deep_ops, NULL, 10)))
		return 1;
	char *bare_calls[] = {wc, calls, NULL}, *rec_calls[] = {wcf, calls, NULL};
	if (bench_case("calls", bare_calls, rec_calls, runs, NULL, 0))
		return 1;
	return 0;
}
