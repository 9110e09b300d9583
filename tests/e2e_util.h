/* e2e_util.h - helpers for the end-to-end suites: run the built commands, capture what they
 * print, read numbers out of `trace-dump summary --json`. Header-only (static functions) so
 * each suite stays one file. Tests find the build through $TRC_BUILD (make test sets it to
 * build, or build/asan in the sanitizer tier); default "build". */
#ifndef TRC_E2E_UTIL_H
#define TRC_E2E_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct e2e_run {
	int status; /* raw wait status */
	int exit_code; /* WEXITSTATUS, or 128+signal */
	char *out; /* captured stdout, NUL-terminated */
	char *err; /* captured stderr */
	double seconds;
};

static inline const char *e2e_build(void)
{
	const char *b = getenv("TRC_BUILD");
	return b && *b ? b : "build";
}

/* "<build>/<rel>" in a static rotating buffer (valid for a few calls). */
static inline const char *e2e_path(const char *rel)
{
	static char bufs[8][512];
	static int i;
	char *b = bufs[i++ & 7];
	snprintf(b, 512, "%s/%s", e2e_build(), rel);
	return b;
}

static inline char *e2e_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	size_t got = fread(buf, 1, (size_t)n, f);
	buf[got] = '\0';
	fclose(f);
	return buf;
}

static inline double e2e_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A fresh temporary directory for one test. */
static inline const char *e2e_tmpdir(void)
{
	static char dir[64];
	snprintf(dir, sizeof(dir), "/tmp/trc-e2e-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

/* Starts argv with stdout/stderr captured to files in dir (an absolute path when cwd is
 * given), in the working directory cwd (NULL: this one); returns the pid. */
static inline pid_t e2e_start_in(const char *dir, const char *cwd, char *const argv[])
{
	char outp[256], errp[256], exe[4096];
	snprintf(outp, sizeof(outp), "%s/stdout", dir);
	snprintf(errp, sizeof(errp), "%s/stderr", dir);
	/* A relative program path is relative to here, not to cwd. */
	snprintf(exe, sizeof(exe), "%s", argv[0]);
	if (cwd && argv[0][0] != '/')
		cr_assert_not_null(realpath(argv[0], exe), "%s: %s", argv[0], strerror(errno));
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int in = open("/dev/null", O_RDONLY);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		if (cwd && chdir(cwd) != 0)
			_exit(98);
		execv(exe, argv);
		_exit(99);
	}
	return pid;
}

/* Starts argv with stdout/stderr captured to files in dir; returns the pid. */
static inline pid_t e2e_start(const char *dir, char *const argv[])
{
	return e2e_start_in(dir, NULL, argv);
}

static inline void e2e_collect(const char *dir, pid_t pid, struct e2e_run *r, double t0)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	r->seconds = e2e_now() - t0;
	r->status = st;
	r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	char p[256];
	snprintf(p, sizeof(p), "%s/stdout", dir);
	r->out = e2e_slurp(p);
	snprintf(p, sizeof(p), "%s/stderr", dir);
	r->err = e2e_slurp(p);
}

/* Runs argv to completion. */
static inline struct e2e_run e2e_runv(const char *dir, char *const argv[])
{
	struct e2e_run r = {0};
	double t0 = e2e_now();
	pid_t pid = e2e_start(dir, argv);
	e2e_collect(dir, pid, &r, t0);
	return r;
}

/* Runs argv to completion in the working directory cwd. */
static inline struct e2e_run e2e_runv_in(const char *dir, const char *cwd, char *const argv[])
{
	struct e2e_run r = {0};
	double t0 = e2e_now();
	pid_t pid = e2e_start_in(dir, cwd, argv);
	e2e_collect(dir, pid, &r, t0);
	return r;
}

/* Convenience: e2e_run(dir, "a", "b", NULL). */
static inline struct e2e_run e2e_run(const char *dir, ...)
{
	char *argv[64];
	int n = 0;
	va_list ap;
	va_start(ap, dir);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return e2e_runv(dir, argv);
}

static inline void e2e_free(struct e2e_run *r)
{
	free(r->out);
	free(r->err);
}

/* Kills trace-run (pid, started at t0 with e2e_start) with SIGKILL, as a crash would, reaps it,
 * then kills the program it traced, whose pid that program wrote to pidfile (it outlives a
 * killed recorder). */
static inline void e2e_kill_recorder(const char *dir, pid_t pid, double t0, const char *pidfile)
{
	kill(pid, SIGKILL);
	struct e2e_run r = {0};
	e2e_collect(dir, pid, &r, t0);
	e2e_free(&r);
	char *pidtxt = e2e_slurp(pidfile);
	int prog = atoi(pidtxt);
	free(pidtxt);
	if (prog > 0)
		kill(prog, SIGKILL);
}

/* The number after "key": in a JSON text (first occurrence at or after `from`), or -1. */
static inline int64_t e2e_json_int_from(const char *json, const char *from, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(from ? from : json, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	if (!strncmp(p, "true", 4))
		return 1;
	if (!strncmp(p, "false", 5))
		return 0;
	return strtoll(p, NULL, 10);
}

static inline int64_t e2e_json_int(const char *json, const char *key)
{
	return e2e_json_int_from(json, NULL, key);
}

/* Runs `trace-dump summary --json FILE` in dir/dump; returns the run (e2e_free it), whatever
 * its exit: for a trace still being written, which may not be readable yet. */
static inline struct e2e_run e2e_summary_json_run(const char *dir, const char *trace)
{
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/dump", dir);
	mkdir(sub, 0755);
	return e2e_run(sub, (char *)e2e_path("bin/trace-dump"), "summary", "--json", (char *)trace,
		       NULL);
}

/* Runs `trace-dump summary --json FILE`; asserts it succeeded; returns the JSON (free it). */
static inline char *e2e_summary_json(const char *dir, const char *trace)
{
	struct e2e_run r = e2e_summary_json_run(dir, trace);
	cr_assert_eq(r.exit_code, 0, "trace-dump summary --json %s failed (%d): %s", trace,
		     r.exit_code, r.err);
	free(r.err);
	return r.out;
}

/* Runs `trace-dump summary FILE` (text) and returns its stdout+stderr (free it). */
static inline char *e2e_summary_text(const char *dir, const char *trace, int *code)
{
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/dumptxt", dir);
	mkdir(sub, 0755);
	struct e2e_run r =
		e2e_run(sub, (char *)e2e_path("bin/trace-dump"), "summary", (char *)trace, NULL);
	*code = r.exit_code;
	size_t n = strlen(r.out) + strlen(r.err) + 2;
	char *all = malloc(n);
	snprintf(all, n, "%s\n%s", r.out, r.err);
	e2e_free(&r);
	return all;
}

static inline void e2e_rm_rf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	int rc = system(cmd);
	(void)rc;
}

#endif /* TRC_E2E_UTIL_H */
