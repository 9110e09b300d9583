/* test_trcfile_util.h - helpers shared by the trace-file suites (test_trcfile*.c, test_dump*.c).
 *
 * Purpose: build traces with the real writer from deterministic record lists, compare
 * records field by field, read files into memory. Header-only (static functions), so each
 * suite links it without a Makefile rule.
 *
 * A "trace plan" is a list of streams, each with its records in stream order; every record's
 * strings point into static storage or into the plan, so plans can be compared with what the
 * reader returns.
 */
#ifndef TRC_TEST_TRCFILE_UTIL_H
#define TRC_TEST_TRCFILE_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trcfile.h"

struct tu_stream {
	enum trc_stream_kind kind;
	uint32_t pid, tid;
	struct trc_record *recs;
	size_t n, cap;
};

struct tu_plan {
	struct tu_stream *streams;
	size_t n;
};

/* Adds a stream. The pointer is valid until the next tu_plan_stream (the array grows). */
static inline struct tu_stream *tu_plan_stream(struct tu_plan *p, enum trc_stream_kind kind,
					       uint32_t pid, uint32_t tid)
{
	p->streams = realloc(p->streams, (p->n + 1) * sizeof(*p->streams));
	cr_assert_not_null(p->streams);
	struct tu_stream *s = &p->streams[p->n++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->pid = pid;
	s->tid = tid;
	return s;
}

static inline void tu_add(struct tu_stream *s, const struct trc_record *r)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->recs = realloc(s->recs, s->cap * sizeof(*s->recs));
		cr_assert_not_null(s->recs);
	}
	s->recs[s->n++] = *r;
}

/* A NAME record (id -> str, as the runtime interns a span's or value's name) at ts. */
static inline void tu_add_name(struct tu_stream *s, uint32_t id, const char *str, uint64_t ts)
{
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = ts};
	r.name.id = id;
	r.name.str = str;
	r.name.len = (uint32_t)strlen(str);
	tu_add(s, &r);
}

static inline void tu_plan_free(struct tu_plan *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->streams[i].recs);
	free(p->streams);
	memset(p, 0, sizeof(*p));
}

static inline size_t tu_plan_records(const struct tu_plan *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		n += p->streams[i].n;
	return n;
}

/* A per-test scratch directory under $TMPDIR (or /tmp). */
static inline const char *tu_tmpdir(void)
{
	static char dir[256];
	const char *base = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/trcfile-test.XXXXXX", base && *base ? base : "/tmp");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	return dir;
}

static inline void tu_rm_rf(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	int rc = system(cmd);
	(void)rc;
}

static const char tu_cmdline[] = "prog\0--flag\0arg with space";

static inline struct trcfile_header_info tu_header(void)
{
	struct trcfile_header_info h = {
		.cmdline = tu_cmdline,
		.cmdline_len = sizeof(tu_cmdline),
		.pid = 4242,
		.start_mono_ns = 1000000000ull,
		.start_realtime_ns = 1700000000123456789ull,
		.clock_source = 1,
		.tsc_hz = 0,
		.rss_interval_ns = 100000000ull,
		.rss_source = TRC_RSS_STATM,
		.buffer_bytes = 1u << 20,
		.host = "testhost Linux 6.1",
		.tool_version = "trc-test 1.0",
	};
	return h;
}

/* Writes a plan: streams opened in plan order, records appended round-robin in batches of
 * `batch` per stream (so chunks of different streams interleave). Returns the writer's
 * close status. */
static inline int tu_write_plan(const char *path, const struct tu_plan *p,
				const struct trcfile_writer_opts *o, size_t batch)
{
	struct trcfile_header_info h = tu_header();
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	struct trcfile_stream **s = calloc(p->n ? p->n : 1, sizeof(*s));
	size_t *pos = calloc(p->n ? p->n : 1, sizeof(*pos));
	for (size_t i = 0; i < p->n; i++) {
		s[i] = trcfile_stream_open(w, p->streams[i].kind, p->streams[i].pid,
					   p->streams[i].tid);
		cr_assert_not_null(s[i]);
		cr_assert_eq(trcfile_stream_id(s[i]), i);
	}
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < p->n; i++) {
			const struct tu_stream *st = &p->streams[i];
			for (size_t k = 0; k < batch && pos[i] < st->n; k++, pos[i]++) {
				err = trcfile_stream_append(s[i], &st->recs[pos[i]]);
				cr_assert_eq(err, 0, "append: %s", strerror(-err));
			}
			more |= pos[i] < st->n;
		}
	}
	free(s);
	free(pos);
	return trcfile_writer_close(w);
}

static inline bool tu_str_eq(const char *a, uint32_t al, const char *b, uint32_t bl)
{
	return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* Field-by-field equality of the fields the record's type uses. */
static inline bool tu_rec_eq(const struct trc_record *a, const struct trc_record *b)
{
	if (a->type != b->type || a->ts_ns != b->ts_ns)
		return false;
	switch (a->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		return a->span.name_id == b->span.name_id;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		return a->value.name_id == b->value.name_id && a->value.value == b->value.value;
	case TRC_REC_ALLOC:
		return a->alloc.addr == b->alloc.addr && a->alloc.size == b->alloc.size;
	case TRC_REC_FREE:
		return a->alloc.addr == b->alloc.addr;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		return a->func.addr == b->func.addr && a->func.call_site == b->func.call_site;
	case TRC_REC_RSS:
		return a->rss.source == b->rss.source && a->rss.flags == b->rss.flags &&
		       a->rss.pid == b->rss.pid && a->rss.rss_bytes == b->rss.rss_bytes &&
		       a->rss.buffers_bytes == b->rss.buffers_bytes &&
		       a->rss.hwm_bytes == b->rss.hwm_bytes &&
		       a->rss.anon_bytes == b->rss.anon_bytes &&
		       a->rss.file_bytes == b->rss.file_bytes &&
		       a->rss.shmem_bytes == b->rss.shmem_bytes &&
		       a->rss.rss_exact_bytes == b->rss.rss_exact_bytes &&
		       a->rss.pss_bytes == b->rss.pss_bytes && a->rss.read_ns == b->rss.read_ns;
	case TRC_REC_LOST:
		return a->lost.count == b->lost.count && a->lost.reason == b->lost.reason;
	case TRC_REC_THREAD:
		return a->thread.pid == b->thread.pid && a->thread.tid == b->thread.tid &&
		       tu_str_eq(a->thread.name, a->thread.name_len, b->thread.name,
				 b->thread.name_len);
	case TRC_REC_PROCESS:
		return a->process.pid == b->process.pid && a->process.ppid == b->process.ppid &&
		       tu_str_eq(a->process.cmdline, a->process.cmdline_len, b->process.cmdline,
				 b->process.cmdline_len);
	case TRC_REC_NAME:
		return a->name.id == b->name.id &&
		       tu_str_eq(a->name.str, a->name.len, b->name.str, b->name.len);
	case TRC_REC_MODULE:
		return a->module.pid == b->module.pid && a->module.start == b->module.start &&
		       a->module.end == b->module.end && a->module.offset == b->module.offset &&
		       tu_str_eq(a->module.path, a->module.path_len, b->module.path,
				 b->module.path_len);
	case TRC_REC_NOTE:
		return tu_str_eq(a->note.text, a->note.len, b->note.text, b->note.len);
	case TRC_REC_EXIT:
		return a->exit.pid == b->exit.pid && a->exit.status == b->exit.status &&
		       a->exit.maxrss_bytes == b->exit.maxrss_bytes &&
		       a->exit.buffers_bytes == b->exit.buffers_bytes;
	}
	return false;
}

/* One merged-order entry: stream and position in it. */
struct tu_ref {
	uint64_t ts;
	uint32_t stream;
	uint32_t pos;
};

static inline int tu_ref_cmp(const void *a, const void *b)
{
	const struct tu_ref *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The order the reader must produce: by ts, then stream index, then stream order. Streams
 * of the plan must have non-decreasing times. Free the result. */
static inline struct tu_ref *tu_expected_order(const struct tu_plan *p, size_t *n)
{
	*n = tu_plan_records(p);
	struct tu_ref *v = calloc(*n ? *n : 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		for (size_t j = 0; j < p->streams[i].n; j++)
			v[k++] = (struct tu_ref){p->streams[i].recs[j].ts_ns, (uint32_t)i,
						 (uint32_t)j};
	qsort(v, *n, sizeof(*v), tu_ref_cmp);
	return v;
}

static inline uint8_t *tu_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	size_t done = 0;
	while (done < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);
		cr_assert_gt(n, 0);
		done += (size_t)n;
	}
	close(fd);
	*len = done;
	return buf;
}

/* dir/name as a NUL-terminated string (the tests that read tools' text output). */
static inline char *tu_slurp_text(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	size_t n = 0;
	uint8_t *b = tu_read_file(path, &n);
	char *s = realloc(b, n + 1);
	s[n] = 0;
	return s;
}

/* The build the tests run ($TRC_BUILD: build, or build/asan in the sanitizer tier). */
static inline const char *tu_build(void)
{
	const char *b = getenv("TRC_BUILD");
	return b && *b ? b : "build";
}

/* Runs a shell command; returns its exit status (128 + N after signal N). */
static inline int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int tu_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(len >= 0 && (size_t)len < sizeof(cmd), "command cut at %zu bytes: %s", sizeof(cmd),
		  cmd);
	int st = system(cmd);
	/* No shell at all (fork refused: a machine out of pids) is not the command's failure. */
	cr_assert_neq(st, -1, "system(%s): %s", cmd, strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline void tu_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* ---- a small trace with every record type, fixed times (golden outputs use it) ---------- */

static const char tu_proc_cmd[] = "prog\0--flag\0arg with space";

/* Fills p with: a meta stream (names, process, threads, module, notes, exit), two thread
 * streams with spans, instants, counters, allocations, function entry/exit and a lost
 * record, and an RSS stream. Times are fixed: the output of trace-dump on it is stable. */
static inline void tu_small_plan(struct tu_plan *p)
{
	const uint64_t t0 = 1000000000ull;
	struct trc_record r;
	/* Streams first: tu_plan_stream may move the array, so pointers are taken after. */
	size_t base = p->n;
	tu_plan_stream(p, TRC_STREAM_META, 4242, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 4242);
	tu_plan_stream(p, TRC_STREAM_THREAD, 4242, 4243);
	tu_plan_stream(p, TRC_STREAM_RSS, 4242, 0);
	struct tu_stream *meta = &p->streams[base], *a = &p->streams[base + 1],
			 *b = &p->streams[base + 2], *rss = &p->streams[base + 3];
	static const char *const names[] = {"", "main", "parse", "compute", "ready", "queue"};
	for (uint32_t i = 1; i < 6; i++) {
		r = (struct trc_record){.type = TRC_REC_NAME, .ts_ns = t0};
		r.name.id = i;
		r.name.str = names[i];
		r.name.len = (uint32_t)strlen(names[i]);
		tu_add(meta, &r);
	}
	r = (struct trc_record){.type = TRC_REC_PROCESS, .ts_ns = t0};
	r.process.pid = 4242;
	r.process.ppid = 1;
	r.process.cmdline = tu_proc_cmd;
	r.process.cmdline_len = sizeof(tu_proc_cmd);
	tu_add(meta, &r);
	r = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = t0 + 10};
	r.thread.pid = 4242;
	r.thread.tid = 4242;
	r.thread.name = "main";
	r.thread.name_len = 4;
	tu_add(meta, &r);
	r = (struct trc_record){.type = TRC_REC_MODULE, .ts_ns = t0 + 10};
	r.module.pid = 4242;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.offset = 0x1000;
	r.module.path = "/usr/bin/prog";
	r.module.path_len = 13;
	tu_add(meta, &r);
	r = (struct trc_record){.type = TRC_REC_THREAD, .ts_ns = t0 + 20};
	r.thread.pid = 4242;
	r.thread.tid = 4243;
	r.thread.name = "worker \"1\"";
	r.thread.name_len = 10;
	tu_add(meta, &r);

	uint64_t t = t0 + 1000;
	/* thread a: main { parse {} compute { func } } with instants, counters, allocs */
	r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
	r.span.name_id = 1;
	tu_add(a, &r);
	for (int i = 0; i < 3; i++) {
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 100};
		r.span.name_id = 2;
		tu_add(a, &r);
		r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = t += 50};
		r.alloc.addr = 0x7f0000001000ull + 0x100 * i;
		r.alloc.size = 64u << i;
		tu_add(a, &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 200 * (i + 1)};
		r.span.name_id = 2;
		tu_add(a, &r);
		r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = t += 10};
		r.value.name_id = 5;
		r.value.value = 10 - 7 * i;
		tu_add(a, &r);
	}
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = t += 40};
	r.alloc.addr = 0x7f0000001100ull;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_FUNC_ENTER, .ts_ns = t += 5};
	r.func.addr = 0x401136;
	r.func.call_site = 0x401200;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_FUNC_EXIT, .ts_ns = t += 300};
	r.func.addr = 0x401136;
	r.func.call_site = 0x401200;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = t += 7};
	r.value.name_id = 4;
	r.value.value = -1;
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 3};
	r.span.name_id = 3; /* compute: never ended */
	tu_add(a, &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 1000};
	r.span.name_id = 1;
	tu_add(a, &r);

	/* thread b: a span, the same time as one of a's records (tie), a lost record */
	uint64_t tb = t0 + 1100;
	r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = tb};
	r.span.name_id = 3;
	tu_add(b, &r);
	r = (struct trc_record){.type = TRC_REC_LOST, .ts_ns = tb += 500};
	r.lost.count = 7;
	r.lost.reason = TRC_LOST_RING_FULL;
	tu_add(b, &r);
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = tb += 100};
	r.alloc.addr = 0x7f0000009000ull;
	r.alloc.size = 4096;
	tu_add(b, &r);
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = tb += 100};
	r.alloc.addr = 0x7f0000001000ull; /* allocated by thread a */
	tu_add(b, &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = tb += 1300};
	r.span.name_id = 3;
	tu_add(b, &r);

	/* RSS: five samples, the sampler's view, then one late tick */
	static const uint64_t rss_mib[] = {3, 5, 9, 8, 6};
	for (int i = 0; i < 5; i++) {
		r = (struct trc_record){.type = TRC_REC_RSS, .ts_ns = t0 + 1000 * (uint64_t)i};
		r.rss.source = TRC_RSS_STATUS;
		r.rss.flags = TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT | (i == 4 ? TRC_RSS_FINAL : 0);
		r.rss.pid = 4242;
		r.rss.rss_bytes = (rss_mib[i] << 20) + (64u << 10);
		r.rss.buffers_bytes = 64u << 10;
		r.rss.hwm_bytes = 9u << 20;
		r.rss.anon_bytes = rss_mib[i] << 19;
		r.rss.file_bytes = rss_mib[i] << 19;
		r.rss.shmem_bytes = 64u << 10;
		r.rss.read_ns = 1500 + (uint64_t)i;
		tu_add(rss, &r);
	}
	r = (struct trc_record){.type = TRC_REC_LOST, .ts_ns = t0 + 4500};
	r.lost.count = 2;
	r.lost.reason = TRC_LOST_SAMPLER_LATE;
	tu_add(rss, &r);

	r = (struct trc_record){.type = TRC_REC_NOTE, .ts_ns = t0 + 5000};
	r.note.text = "recorder: all good";
	r.note.len = 18;
	tu_add(meta, &r);
	r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = t0 + 5000};
	r.exit.pid = 4242;
	r.exit.status = 3 << 8;
	r.exit.maxrss_bytes = (10u << 20) + (128u << 10);
	r.exit.buffers_bytes = 128u << 10;
	tu_add(meta, &r);
}

#endif /* TRC_TEST_TRCFILE_UTIL_H */
