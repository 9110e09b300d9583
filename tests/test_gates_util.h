/* test_gates_util.h - traces of one small program in several versions, and a runner for
 * trace-dump, for the suites of the commands that judge and compare traces (test_check.c,
 * test_diff.c, test_report.c).
 *
 * Purpose: a planted regression needs two traces of "the same program" that differ in known
 * ways. gt_plan writes such a program's trace with the real writer from a shape: how many
 * "parse" spans and how long each lasts, how much each allocates, how many calls of one
 * function, how high RSS goes. Every figure of the trace follows from the shape exactly, so
 * the suites assert exact values. Header-only, like test_trcfile_util.h.
 */
#ifndef TRC_TEST_GATES_UTIL_H
#define TRC_TEST_GATES_UTIL_H

#include "test_trcfile_util.h"

struct gt_shape {
	unsigned spans; /* "parse" spans on the main thread, back to back */
	uint64_t span_ns; /* each one's duration */
	unsigned allocs_per_span; /* allocations inside each parse span */
	uint64_t alloc_bytes; /* each allocation's size */
	unsigned calls; /* calls of function 0x401136 on the worker, 1 us each */
	uint64_t rss_peak_mib; /* RSS rises from 2 MiB to this, then falls by 1 MiB */
	uint32_t pid; /* the process's pid (another run: another pid) */
};

static inline struct gt_shape gt_base(void)
{
	return (struct gt_shape){.spans = 10,
				 .span_ns = 100000,
				 .allocs_per_span = 4,
				 .alloc_bytes = 1000,
				 .calls = 20,
				 .rss_peak_mib = 12,
				 .pid = 4242};
}

static const char gt_cmd[] = "prog\0--gates";

/* Fills p with the trace of shape sh: a meta stream (names, the process, two named threads,
 * its exit), the main thread (parse spans with their allocations, each freed but the last of
 * each span; then one "load" span), the worker (calls), and RSS samples every 1 ms. */
static inline void gt_plan(struct tu_plan *p, const struct gt_shape *sh)
{
	const uint64_t t0 = 1000000000ull;
	const uint32_t pid = sh->pid, worker = sh->pid + 1;
	struct trc_record r;
	tu_plan_stream(p, TRC_STREAM_META, pid, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, pid, pid);
	tu_plan_stream(p, TRC_STREAM_THREAD, pid, worker);
	tu_plan_stream(p, TRC_STREAM_RSS, pid, 0);
	struct tu_stream *meta = &p->streams[0], *a = &p->streams[1], *b = &p->streams[2],
			 *rss = &p->streams[3];
	tu_add_name(meta, 1, "parse", t0);
	tu_add_name(meta, 2, "load", t0);
	r = (struct trc_record){.type = TRC_REC_PROCESS, .ts_ns = t0};
	r.process.pid = pid;
	r.process.ppid = 1;
	r.process.cmdline = gt_cmd;
	r.process.cmdline_len = sizeof(gt_cmd);
	tu_add(meta, &r);
	r = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = t0};
	r.thread.pid = pid;
	r.thread.tid = pid;
	r.thread.name = "main";
	r.thread.name_len = 4;
	tu_add(meta, &r);
	r.thread.tid = worker;
	r.thread.name = "worker";
	r.thread.name_len = 6;
	tu_add(meta, &r);

	uint64_t t = t0 + 1000, addr = 0x10000000;
	for (unsigned i = 0; i < sh->spans; i++) {
		uint64_t begin = t;
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = begin};
		r.span.name_id = 1;
		tu_add(a, &r);
		for (unsigned k = 0; k < sh->allocs_per_span; k++) {
			r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = begin + 10 + 2 * k};
			r.alloc.addr = addr + 0x10000 * k;
			r.alloc.size = sh->alloc_bytes;
			tu_add(a, &r);
		}
		for (unsigned k = 0; k + 1 < sh->allocs_per_span; k++) {
			r = (struct trc_record){.type = TRC_REC_FREE,
						.ts_ns = begin + 20 + 2 * sh->allocs_per_span + k};
			r.alloc.addr = addr + 0x10000 * k;
			tu_add(a, &r);
		}
		addr += 0x1000000;
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = begin + sh->span_ns};
		r.span.name_id = 1;
		tu_add(a, &r);
		t = begin + sh->span_ns + 1000;
	}
	r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
	r.span.name_id = 2;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = t + 10};
	r.alloc.addr = 0x7f0000000000ull;
	r.alloc.size = 500;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = t + 20};
	r.alloc.addr = 0x7f0000000000ull;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 50000};
	r.span.name_id = 2;
	tu_add(a, &r);

	uint64_t tb = t0 + 2000;
	for (unsigned i = 0; i < sh->calls; i++) {
		r = (struct trc_record){.type = TRC_REC_FUNC_ENTER, .ts_ns = tb};
		r.func.addr = 0x401136;
		r.func.call_site = 0x401200;
		tu_add(b, &r);
		r = (struct trc_record){.type = TRC_REC_FUNC_EXIT, .ts_ns = tb += 1000};
		r.func.addr = 0x401136;
		r.func.call_site = 0x401200;
		tu_add(b, &r);
		tb += 500;
	}

	/* RSS every 1 ms over the run: 2 MiB, up to the peak at the middle, then 1 MiB less. */
	uint64_t end = t > tb ? t : tb;
	unsigned n = (unsigned)((end - t0) / 1000000) + 2;
	for (unsigned i = 0; i < n; i++) {
		uint64_t mib = i < n / 2    ? 2 + (sh->rss_peak_mib - 2) * i / (n / 2)
			       : i == n / 2 ? sh->rss_peak_mib
					    : sh->rss_peak_mib - 1;
		r = (struct trc_record){.type = TRC_REC_RSS, .ts_ns = t0 + 1000000ull * i};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = pid;
		r.rss.rss_bytes = mib << 20;
		r.rss.flags = i + 1 == n ? TRC_RSS_FINAL : 0;
		tu_add(rss, &r);
	}
	r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = t0 + 1000000ull * n};
	r.exit.pid = pid;
	r.exit.status = 0;
	r.exit.maxrss_bytes = sh->rss_peak_mib << 20;
	r.exit.buffers_bytes = 0;
	tu_add(meta, &r);
}

/* Writes shape sh's trace into dir/name (its header naming sh->pid, as trace-run's names
 * the program it ran); the path into path. */
static inline void gt_write(const char *dir, const char *name, const struct gt_shape *sh,
			    char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	struct tu_plan p = {0};
	gt_plan(&p, sh);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	struct trcfile_header_info h = tu_header();
	h.pid = sh->pid;
	h.cmdline = gt_cmd;
	h.cmdline_len = sizeof(gt_cmd);
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	for (size_t i = 0; i < p.n; i++) {
		struct trcfile_stream *s = trcfile_stream_open(w, p.streams[i].kind,
							       p.streams[i].pid, p.streams[i].tid);
		cr_assert_not_null(s);
		for (size_t k = 0; k < p.streams[i].n; k++)
			cr_assert_eq(trcfile_stream_append(s, &p.streams[i].recs[k]), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	tu_plan_free(&p);
}

struct gt_run {
	int status; /* exit status, or 128 + signal */
	char *out, *err;
};

/* Runs $TRC_BUILD/bin/trace-dump with args (NULL-terminated), stdout and stderr captured in
 * files of dir. */
static inline struct gt_run gt_dump(const char *dir, const char *const *args)
{
	char bin[512], outf[400], errf[400];
	const char *b = getenv("TRC_BUILD");
	snprintf(bin, sizeof(bin), "%s/bin/trace-dump", b && *b ? b : "build");
	cr_assert_eq(access(bin, X_OK), 0, "%s not built", bin);
	snprintf(outf, sizeof(outf), "%s/stdout", dir);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	const char *argv[64];
	int n = 0;
	argv[n++] = bin;
	for (; args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(99);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char **)argv);
		_exit(98);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	struct gt_run r = {0};
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = tu_slurp_text(dir, "stdout");
	r.err = tu_slurp_text(dir, "stderr");
	return r;
}

static inline void gt_free(struct gt_run *r)
{
	free(r->out);
	free(r->err);
}

/* The integer after "key": in json at or after from (a key of the object that holds it). */
static inline int64_t gt_json_int(const char *json, const char *from, const char *key)
{
	const char *p = from ? strstr(json, from) : json;
	cr_assert_not_null(p, "no %s in the JSON", from);
	char k[128];
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(p, k);
	cr_assert_not_null(p, "no key %s in the JSON", key);
	return strtoll(p + strlen(k), NULL, 10);
}

#endif /* TRC_TEST_GATES_UTIL_H */
