/* dump_parquet.c - `trace-dump parquet FILE... -o DIR`: traces as Parquet tables for query
 * engines (DuckDB, Spark, Trino, ClickHouse).
 *
 * Purpose: the fleet view. Every input trace adds rows to five tables in DIR, one Parquet file
 * each: spans.parquet, events.parquet, allocations.parquet, rss.parquet, traces.parquet. The
 * schema, its units and its compatibility rule are in src/export/PARQUET.md; the writer is
 * src/export/parquet_writer.c.
 *
 * Time: every timestamp column is nanoseconds on CLOCK_REALTIME, computed from each trace's
 * anchor (header start_realtime_ns + ts - start_mono_ns), so traces from several hosts line
 * up. Durations are plain nanosecond counts.
 *
 * Order and memory: each trace is read with the reader's merged iterator, so each table's rows
 * of one trace are in time order (spans by their end) and row groups cover short time ranges,
 * which makes their min/max statistics useful to engines. Memory is bounded by the writers' row
 * groups (pq_writer_opts.rows_per_group rows per table), the open-span stacks and the
 * live-allocation table (capped; past the cap a free's size is unknown: null).
 *
 * Span matching is FORMAT.md's rule, the summary's and every export's: a stream has one stack
 * of open spans and functions; span_end and func_exit close the innermost frame whatever it
 * is, and a span closed is a row named by its begin (depth: the frames open around it). Spans
 * still open at the end of a trace, or when their stream lost events, are not rows (the summary
 * does not count them either). So the spans table agrees with `summary --json` exactly.
 *
 * The traces table takes its figures from the summary computation itself
 * (summary_compute), so they are the summary's, exactly.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_outfile.h"
#include "cli_version.h"
#include "dump_common.h"
#include "allocmap.h"
#include "parquet_writer.h"
#include "summary.h"

static const char dump__parquet_help[] =
	"usage: trace-dump parquet -o DIR FILE...\n"
	"\n"
	"Writes the traces as Parquet tables into DIR (created if missing), one file per\n"
	"table; every FILE adds its rows, labelled with its host and trace:\n"
	"  spans.parquet        host, trace, pid, tid, thread, name, start_ns, dur_ns, depth\n"
	"  events.parquet       host, trace, pid, tid, ts_ns, kind, name, value: instants,\n"
	"                       counters, func_enter/func_exit (name = the function, value =\n"
	"                       address), lost (name = reason, value = count)\n"
	"  allocations.parquet  host, trace, ts_ns, pid, tid, kind, addr, size, span (the\n"
	"                       innermost open span or function; null when none)\n"
	"  rss.parquet          host, trace, ts_ns, pid, rss_bytes, program_bytes,\n"
	"                       buffers_bytes, the status and smaps_rollup figures, read_ns, "
	"flags\n"
	"  traces.parquet       one row per FILE: host, trace, command, pid, start_ns,\n"
	"                       duration_ns, events_recorded, events_lost, rss_peak_bytes "
	"(exact)...\n"
	"  processes.parquet    one row per process of each traced tree: host, trace, pid,\n"
	"                       ppid, command, exit_status, peak_low_bytes, peak_high_bytes\n"
	"                       (the peak as summary gives it, buffers excluded), peak_source,\n"
	"                       rss_samples, rss_sampled_max_bytes, buffers_max_bytes\n"
	"Timestamps (start_ns, ts_ns) are nanoseconds on CLOCK_REALTIME, from each trace's\n"
	"recorded anchor, so traces of several hosts line up. host is the recording machine's\n"
	"node name, trace the FILE's base name. Strings are dictionary-encoded, pages zstd-\n"
	"compressed, every column chunk has min/max statistics. Schema: src/export/PARQUET.md.\n"
	"\n"
	"  -o, --output DIR         the directory of the tables (required; yours: one\n"
	"                           another user owns is refused). The tables appear\n"
	"                           when every FILE is in; a failure leaves DIR as it was\n"
	"      --rows-per-group N   rows per row group (default 131072; memory is bounded\n"
	"                           by it)\n"
	"  -h, --help               this text\n";

#define DP_STACK_MAX (1u << 20) /* as the summary: past it the outer half is forgotten */
#define DP_LIVE_MAX_ENTRIES (1u << 20)

/* ---- the tables ------------------------------------------------------------------------ */

enum { DP_SPANS, DP_EVENTS, DP_ALLOCS, DP_RSS, DP_TRACES, DP_PROCESSES, DP_N_TABLES };

static const char *const dp_table_names[DP_N_TABLES] = {
	"spans", "events", "allocations", "rss", "traces", "processes"};

#define S(n)                            \
	{                               \
		n, PQ_COL_STRING, false \
	}
#define SN(n)                          \
	{                              \
		n, PQ_COL_STRING, true \
	}
#define I(n)                           \
	{                              \
		n, PQ_COL_INT64, false \
	}
#define IN(n)                         \
	{                             \
		n, PQ_COL_INT64, true \
	}
#define T(n)                                  \
	{                                     \
		n, PQ_COL_TIMESTAMP_NS, false \
	}

static const struct pq_col_def dp_spans_cols[] = {
	S("host"), S("trace"),	  I("pid"),    I("tid"),   S("thread"),
	S("name"), T("start_ns"), I("dur_ns"), I("depth"),
};
static const struct pq_col_def dp_events_cols[] = {
	S("host"), S("trace"), I("pid"), I("tid"), T("ts_ns"), S("kind"), S("name"), I("value"),
};
static const struct pq_col_def dp_allocs_cols[] = {
	S("host"), S("trace"), T("ts_ns"), I("pid"),   I("tid"),
	S("kind"), I("addr"),  IN("size"), SN("span"),
};
static const struct pq_col_def dp_rss_cols[] = {
	S("host"),	  S("trace"),	      T("ts_ns"),	  I("pid"),
	I("rss_bytes"),	  I("program_bytes"), I("buffers_bytes"), IN("hwm_bytes"),
	IN("anon_bytes"), IN("file_bytes"),   IN("shmem_bytes"),  IN("rss_exact_bytes"),
	IN("pss_bytes"),  I("read_ns"),	      I("flags"),
};
static const struct pq_col_def dp_traces_cols[] = {
	S("host"),
	S("trace"),
	S("system"),
	S("command"),
	I("pid"),
	T("start_ns"),
	I("duration_ns"),
	I("records"),
	I("events_recorded"),
	I("events_lost"),
	IN("rss_peak_bytes"),
	S("rss_peak_source"),
	IN("exit_status"),
	I("allocs"),
	I("alloc_bytes"),
	I("spans"),
	I("truncated"),
	S("format_version"),
	S("path"),
};
static const struct pq_col_def dp_processes_cols[] = {
	S("host"),
	S("trace"),
	I("pid"),
	IN("ppid"),
	SN("command"),
	IN("exit_status"),
	IN("peak_low_bytes"),
	IN("peak_high_bytes"),
	S("peak_source"),
	I("rss_samples"),
	I("rss_sampled_max_bytes"),
	I("buffers_max_bytes"),
};

#undef S
#undef SN
#undef I
#undef IN
#undef T

#define DP_NCOLS(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

static const struct {
	const struct pq_col_def *cols;
	unsigned n;
} dp_schemas[DP_N_TABLES] = {
	{dp_spans_cols, DP_NCOLS(dp_spans_cols)},   {dp_events_cols, DP_NCOLS(dp_events_cols)},
	{dp_allocs_cols, DP_NCOLS(dp_allocs_cols)}, {dp_rss_cols, DP_NCOLS(dp_rss_cols)},
	{dp_traces_cols, DP_NCOLS(dp_traces_cols)}, {dp_processes_cols, DP_NCOLS(dp_processes_cols)},
};

/* ---- per-trace state ------------------------------------------------------------------- */

/* An open span or function of a stream (FORMAT.md's one stack per stream). */
struct dp_frame {
	uint32_t func; /* 1 for a function (addr), 0 for a span (name_id) */
	uint32_t name_id;
	uint64_t addr;
	uint64_t ts;
};

struct dp_stream {
	uint32_t pid, tid;
	char *thread; /* owned; "" when unknown */
	size_t thread_len;
	struct dp_frame *stack; /* open spans and functions, innermost last */
	size_t n_stack, cap_stack;
};

struct dp {
	struct pq_writer *t[DP_N_TABLES];
	/* the current trace */
	struct trcfile_reader *r;
	const char *host, *trace;
	size_t host_len, trace_len;
	int64_t anchor; /* start_realtime_ns - start_mono_ns */
	struct dp_stream *st;
	unsigned n_st;
	struct allocmap *live;
	uint64_t spans; /* span rows of this trace */
	int err;
};

static int64_t dp_rt(const struct dp *d, uint64_t ts)
{
	return dump_realtime(ts, d->anchor);
}

static void dp_check(struct dp *d, int err)
{
	if (err && !d->err)
		d->err = err;
}

static void dp_labels(struct dp *d, struct pq_writer *w)
{
	dp_check(d, pq_put_str(w, 0, d->host, d->host_len));
	dp_check(d, pq_put_str(w, 1, d->trace, d->trace_len));
}

/* The name of an id as the summary shows it: its string, or "#<id>". */
static void dp_put_name(struct dp *d, struct pq_writer *w, unsigned col, uint32_t id)
{
	uint32_t len = 0;
	const char *n = trcfile_reader_name(d->r, id, &len);
	if (n) {
		dp_check(d, pq_put_str(w, col, n, len));
	} else {
		char b[16];
		int k = snprintf(b, sizeof(b), "#%" PRIu32, id);
		dp_check(d, pq_put_str(w, col, b, (size_t)k));
	}
}

/* A function by address: module+offset when a module record covers it, else 0x... */
/* A function by the name every other output gives it (dump_func_name: its symbol, else
 * module+offset, else the address). */
static void dp_put_func(struct dp *d, struct pq_writer *w, unsigned col, uint32_t pid,
			uint64_t addr)
{
	char b[320];
	size_t k = dump_func_name(d->r, pid, addr, b, sizeof(b));
	dp_check(d, pq_put_str(w, col, b, k));
}

static void dp_set_thread(struct dp_stream *s, const char *name, size_t len)
{
	char *c = malloc(len + 1);
	if (!c)
		return;
	memcpy(c, name, len);
	c[len] = 0;
	free(s->thread);
	s->thread = c;
	s->thread_len = len;
}

/* span_begin and func_enter push a frame. */
static void dp_push(struct dp *d, struct dp_stream *s, struct dp_frame f)
{
	if (s->n_stack == s->cap_stack) {
		if (s->cap_stack >= DP_STACK_MAX) {
			/* As the summary: forget the outer half (they stay open, never rows). */
			size_t drop = s->n_stack / 2;
			memmove(s->stack, s->stack + drop, (s->n_stack - drop) * sizeof(*s->stack));
			s->n_stack -= drop;
		} else {
			size_t cap = s->cap_stack ? 2 * s->cap_stack : 64;
			void *p = realloc(s->stack, cap * sizeof(*s->stack));
			if (!p) {
				dp_check(d, -ENOMEM);
				return;
			}
			s->stack = p;
			s->cap_stack = cap;
		}
	}
	s->stack[s->n_stack++] = f;
}

/* span_end and func_exit close the innermost frame whatever it is; a span closed is a row,
 * named by its begin (FORMAT.md's rule, as the summary and the viewers' exports). */
static void dp_pop(struct dp *d, struct dp_stream *s, uint64_t ts)
{
	if (!s->n_stack)
		return; /* an end without its begin: no row (the summary counts it unmatched) */
	struct dp_frame top = s->stack[--s->n_stack];
	if (top.func)
		return;
	struct pq_writer *w = d->t[DP_SPANS];
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, s->pid));
	dp_check(d, pq_put_i64(w, 3, s->tid));
	dp_check(d, pq_put_str(w, 4, s->thread ? s->thread : "", s->thread_len));
	dp_put_name(d, w, 5, top.name_id);
	dp_check(d, pq_put_i64(w, 6, dp_rt(d, top.ts)));
	dp_check(d, pq_put_i64(w, 7, (int64_t)(ts >= top.ts ? ts - top.ts : 0)));
	dp_check(d, pq_put_i64(w, 8, (int64_t)s->n_stack));
	dp_check(d, pq_end_row(w));
	d->spans++;
}

static void dp_func(struct dp *d, struct dp_stream *s, const struct trc_record *rec)
{
	if (rec->type == TRC_REC_FUNC_ENTER)
		dp_push(d, s,
			(struct dp_frame){.func = 1, .addr = rec->func.addr, .ts = rec->ts_ns});
	else
		dp_pop(d, s, rec->ts_ns);
	struct pq_writer *w = d->t[DP_EVENTS];
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, s->pid));
	dp_check(d, pq_put_i64(w, 3, s->tid));
	dp_check(d, pq_put_i64(w, 4, dp_rt(d, rec->ts_ns)));
	if (rec->type == TRC_REC_FUNC_ENTER)
		dp_check(d, pq_put_str(w, 5, "func_enter", 10));
	else
		dp_check(d, pq_put_str(w, 5, "func_exit", 9));
	dp_put_func(d, w, 6, s->pid, rec->func.addr);
	dp_check(d, pq_put_i64(w, 7, (int64_t)rec->func.addr));
	dp_check(d, pq_end_row(w));
}

static void dp_value(struct dp *d, struct dp_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[DP_EVENTS];
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, s->pid));
	dp_check(d, pq_put_i64(w, 3, s->tid));
	dp_check(d, pq_put_i64(w, 4, dp_rt(d, rec->ts_ns)));
	if (rec->type == TRC_REC_INSTANT)
		dp_check(d, pq_put_str(w, 5, "instant", 7));
	else
		dp_check(d, pq_put_str(w, 5, "counter", 7));
	dp_put_name(d, w, 6, rec->value.name_id);
	dp_check(d, pq_put_i64(w, 7, rec->value.value));
	dp_check(d, pq_end_row(w));
}

static void dp_lost(struct dp *d, struct dp_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[DP_EVENTS];
	const char *why = trcfile_lost_reason_name(rec->lost.reason);
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, s->pid));
	dp_check(d, pq_put_i64(w, 3, s->tid));
	dp_check(d, pq_put_i64(w, 4, dp_rt(d, rec->ts_ns)));
	dp_check(d, pq_put_str(w, 5, "lost", 4));
	dp_check(d, pq_put_str(w, 6, why, strlen(why)));
	dp_check(d, pq_put_i64(w, 7, (int64_t)rec->lost.count));
	dp_check(d, pq_end_row(w));
}

static void dp_alloc(struct dp *d, struct dp_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[DP_ALLOCS];
	bool alloc = rec->type == TRC_REC_ALLOC;
	uint64_t size = 0;
	bool known = true;
	if (alloc) {
		uint64_t old = 0;
		size = rec->alloc.size;
		/* full: frees go unknown */
		(void)allocmap_put(d->live, s->pid, rec->alloc.addr, size, &old);
	} else {
		known = allocmap_take(d->live, s->pid, rec->alloc.addr, &size);
	}
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, dp_rt(d, rec->ts_ns)));
	dp_check(d, pq_put_i64(w, 3, s->pid));
	dp_check(d, pq_put_i64(w, 4, s->tid));
	dp_check(d, alloc ? pq_put_str(w, 5, "alloc", 5) : pq_put_str(w, 5, "free", 4));
	dp_check(d, pq_put_i64(w, 6, (int64_t)rec->alloc.addr));
	dp_check(d, known ? pq_put_i64(w, 7, (int64_t)size) : pq_put_null(w, 7));
	/* The innermost open context: the span or function entered last. */
	const struct dp_frame *top = s->n_stack ? &s->stack[s->n_stack - 1] : NULL;
	if (top && top->func)
		dp_put_func(d, w, 8, s->pid, top->addr);
	else if (top)
		dp_put_name(d, w, 8, top->name_id);
	else
		dp_check(d, pq_put_null(w, 8));
	dp_check(d, pq_end_row(w));
}

static void dp_rss(struct dp *d, struct dp_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[DP_RSS];
	const struct trc_rss_figures *f = &rec->rss;
	dp_labels(d, w);
	dp_check(d, pq_put_i64(w, 2, dp_rt(d, rec->ts_ns)));
	dp_check(d, pq_put_i64(w, 3, f->pid ? f->pid : s->pid));
	dp_check(d, pq_put_i64(w, 4, (int64_t)f->rss_bytes));
	dp_check(d, pq_put_i64(w, 5,
			       (int64_t)(f->rss_bytes > f->buffers_bytes
						 ? f->rss_bytes - f->buffers_bytes
						 : 0)));
	dp_check(d, pq_put_i64(w, 6, (int64_t)f->buffers_bytes));
	const struct {
		uint32_t flag;
		uint64_t v;
	} opt[] = {
		{TRC_RSS_HAS_HWM, f->hwm_bytes},	 {TRC_RSS_HAS_SPLIT, f->anon_bytes},
		{TRC_RSS_HAS_SPLIT, f->file_bytes},	 {TRC_RSS_HAS_SPLIT, f->shmem_bytes},
		{TRC_RSS_HAS_EXACT, f->rss_exact_bytes}, {TRC_RSS_HAS_EXACT, f->pss_bytes},
	};
	for (unsigned i = 0; i < 6; i++)
		dp_check(d, f->flags & opt[i].flag ? pq_put_i64(w, 7 + i, (int64_t)opt[i].v)
						   : pq_put_null(w, 7 + i));
	dp_check(d, pq_put_i64(w, 13, (int64_t)f->read_ns));
	dp_check(d, pq_put_i64(w, 14, f->flags));
	dp_check(d, pq_end_row(w));
}

static void dp_record(struct dp *d, unsigned sidx, const struct trc_record *rec)
{
	struct dp_stream *s = &d->st[sidx];
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		dp_push(d, s, (struct dp_frame){.name_id = rec->span.name_id, .ts = rec->ts_ns});
		break;
	case TRC_REC_SPAN_END:
		dp_pop(d, s, rec->ts_ns);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		dp_value(d, s, rec);
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		dp_func(d, s, rec);
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		dp_alloc(d, s, rec);
		break;
	case TRC_REC_RSS:
		dp_rss(d, s, rec);
		break;
	case TRC_REC_LOST:
		/* FORMAT.md: what is open on the stream ends as unknown at a loss: no row. */
		if (rec->lost.count)
			s->n_stack = 0;
		dp_lost(d, s, rec);
		break;
	case TRC_REC_THREAD:
		/* A thread named (or renamed): every stream of that thread takes the name. */
		for (unsigned i = 0; i < d->n_st; i++)
			if (d->st[i].pid == rec->thread.pid && d->st[i].tid == rec->thread.tid)
				dp_set_thread(&d->st[i], rec->thread.name, rec->thread.name_len);
		break;
	}
}

/* The traces row, from the summary's own figures. */
/* A command line's n bytes, its NUL-separated arguments shown separated by spaces, into column
 * col; false when out of memory (the error kept in d). */
static bool dp_put_args(struct dp *d, struct pq_writer *w, unsigned col, const char *args,
			size_t n)
{
	char *cmd = malloc(n + 1);
	if (!cmd) {
		dp_check(d, -ENOMEM);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		cmd[i] = args[i] ? args[i] : ' ';
	dp_check(d, pq_put_str(w, col, cmd, n));
	free(cmd);
	return true;
}

/* One row per process of the traced tree, with the figures summary gives it (buffers
 * excluded): its peak as an interval, null when no figure is known. */
static void dp_process_rows(struct dp *d, const struct summary *sm)
{
	static const char *const src[] = {"none", "kernel", "sampled"};
	struct pq_writer *w = d->t[DP_PROCESSES];
	for (size_t i = 0; i < sm->n_processes; i++) {
		const struct summary_process *pr = &sm->processes[i];
		dp_labels(d, w);
		dp_check(d, pq_put_i64(w, 2, pr->pid));
		dp_check(d, pr->ppid ? pq_put_i64(w, 3, pr->ppid) : pq_put_null(w, 3));
		if (pr->command) {
			uint32_t n = pr->command_len;
			while (n && !pr->command[n - 1])
				n--;
			if (!dp_put_args(d, w, 4, pr->command, n))
				return;
		} else {
			dp_check(d, pq_put_null(w, 4));
		}
		dp_check(d, pr->exit_known ? pq_put_i64(w, 5, pr->exit_status) : pq_put_null(w, 5));
		unsigned ps = pr->peak_source <= SUMMARY_PROC_PEAK_SAMPLED ? pr->peak_source : 0;
		dp_check(d, ps ? pq_put_i64(w, 6, (int64_t)pr->peak.low_bytes) : pq_put_null(w, 6));
		dp_check(d, ps ? pq_put_i64(w, 7, (int64_t)pr->peak.high_bytes) : pq_put_null(w, 7));
		dp_check(d, pq_put_str(w, 8, src[ps], strlen(src[ps])));
		dp_check(d, pq_put_i64(w, 9, (int64_t)pr->rss_samples));
		dp_check(d, pq_put_i64(w, 10, (int64_t)pr->rss_sampled_max_bytes));
		dp_check(d, pq_put_i64(w, 11, (int64_t)pr->buffers_max_bytes));
		dp_check(d, pq_end_row(w));
	}
}

static void dp_trace_row(struct dp *d, const struct summary *sm, const char *path)
{
	const struct trcfile_header *h = trcfile_reader_header(d->r);
	struct pq_writer *w = d->t[DP_TRACES];
	dp_labels(d, w);
	const char *sys = h->host + d->host_len;
	while (*sys == ' ')
		sys++;
	dp_check(d, pq_put_str(w, 2, sys, strlen(sys)));
	size_t n = h->cmdline_len;
	if (n && h->cmdline[n - 1] == 0)
		n--;
	if (!dp_put_args(d, w, 3, h->cmdline, n))
		return;
	dp_check(d, pq_put_i64(w, 4, h->pid));
	dp_check(d, pq_put_i64(w, 5, dp_rt(d, h->start_mono_ns ? h->start_mono_ns : sm->start_ns)));
	dp_check(d, pq_put_i64(w, 6, (int64_t)sm->duration_ns));
	dp_check(d, pq_put_i64(w, 7, (int64_t)sm->records));
	dp_check(d, pq_put_i64(w, 8, (int64_t)sm->events_recorded));
	dp_check(d, pq_put_i64(w, 9, (int64_t)sm->events_lost));
	static const char *const src[] = {"none", "exit", "sampled"};
	unsigned ps = sm->rss_peak_source <= SUMMARY_RSS_PEAK_SAMPLED ? sm->rss_peak_source : 0;
	dp_check(d, ps ? pq_put_i64(w, 10, (int64_t)sm->rss_peak_bytes) : pq_put_null(w, 10));
	dp_check(d, pq_put_str(w, 11, src[ps], strlen(src[ps])));
	dp_check(d, sm->has_exit ? pq_put_i64(w, 12, sm->exit_status) : pq_put_null(w, 12));
	dp_check(d, pq_put_i64(w, 13, (int64_t)sm->allocs));
	dp_check(d, pq_put_i64(w, 14, (int64_t)sm->alloc_bytes));
	uint64_t spans = 0;
	for (size_t i = 0; i < sm->n_names; i++)
		spans += sm->names[i].spans;
	dp_check(d, pq_put_i64(w, 15, (int64_t)spans));
	dp_check(d, pq_put_i64(w, 16, sm->truncated));
	char v[32];
	int k = snprintf(v, sizeof(v), "%u.%u", h->version_major, h->version_minor);
	dp_check(d, pq_put_str(w, 17, v, (size_t)k));
	dp_check(d, pq_put_str(w, 18, path, strlen(path)));
	dp_check(d, pq_end_row(w));
}

static void dp_trace_free(struct dp *d)
{
	for (unsigned i = 0; i < d->n_st; i++) {
		free(d->st[i].thread);
		free(d->st[i].stack);
	}
	free(d->st);
	d->st = NULL;
	d->n_st = 0;
	allocmap_free(d->live);
	d->live = NULL;
}

/* Adds one trace's rows. Returns DUMP_EXIT_OK or DUMP_EXIT_FAIL (message printed). */
static int dp_trace(struct dp *d, const char *path)
{
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	struct trcfile_iter *it = NULL;
	struct summary sm;
	memset(&sm, 0, sizeof(sm));
	const struct trcfile_header *h = trcfile_reader_header(r);
	d->r = r;
	d->host = h->host;
	d->host_len = strcspn(h->host, " ");
	const char *base = strrchr(path, '/');
	d->trace = base ? base + 1 : path;
	d->trace_len = strlen(d->trace);
	int64_t start_rt;
	if (dump_anchor(r, &d->anchor, &start_rt) != 0) {
		dump_error("%s: start_realtime_ns %" PRIu64 " and start_mono_ns %" PRIu64
			   " put its records outside CLOCK_REALTIME's range (0 to 2^63 ns)",
			   path, h->start_realtime_ns, h->start_mono_ns);
		goto out;
	}
	d->spans = 0;
	int err = summary_compute(r, &sm);
	if (err) {
		dump_error("%s: %s", path, trcfile_reader_errmsg(r));
		goto out;
	}
	d->n_st = trcfile_reader_stream_count(r);
	d->st = calloc(d->n_st ? d->n_st : 1, sizeof(*d->st));
	d->live = allocmap_new(DP_LIVE_MAX_ENTRIES);
	it = trcfile_iter_new(r);
	if (!d->st || !d->live || !it) {
		dump_error("%s: %s", path,
			   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
						       : "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < d->n_st; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, i);
		struct dp_stream *s = &d->st[i];
		s->pid = si->pid;
		s->tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		uint32_t len = 0;
		const char *name = trcfile_reader_thread_name(r, s->pid, s->tid, &len);
		if (name && si->kind == TRC_STREAM_THREAD)
			dp_set_thread(s, name, len);
	}
	struct trc_record rec;
	unsigned sidx;
	while (!d->err && (err = trcfile_iter_next(it, &rec, &sidx)) == 1)
		dp_record(d, sidx, &rec);
	if (err < 0) {
		dump_error("%s: %s", path, trcfile_reader_errmsg(r));
		goto out;
	}
	dp_trace_row(d, &sm, path);
	dp_process_rows(d, &sm);
	if (d->err) {
		dump_error("%s: writing the tables: %s", path, strerror(-d->err));
		goto out;
	}
	rc = DUMP_EXIT_OK;
out:
	trcfile_iter_free(it);
	summary_free(&sm);
	dp_trace_free(d);
	dump_close(r, path);
	d->r = NULL;
	return rc;
}

/* DIR, made if missing, opened: the tables are made in it by its fd (openat, no symlink in
 * it followed). A directory another user owns is refused: who can write in it can plant
 * names there. -1 after the message. */
static int dp_open_dir(const char *dir)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		dump_error("%s: %s", dir, strerror(errno));
		return -1;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) != 0) {
		dump_error("%s: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		dump_error("%s: the directory belongs to uid %ju, not to you (uid %ju): give a "
			   "directory of your own",
			   dir, (uintmax_t)st.st_uid, (uintmax_t)geteuid());
		close(dfd);
		return -1;
	}
	return dfd;
}

int dump_parquet_main(int argc, char **argv)
{
	enum { OPT_ROWS = 1000 };
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"rows-per-group", required_argument, NULL, OPT_ROWS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *dir = NULL;
	uint32_t rows = 0;
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(dump__parquet_help, stdout);
			return DUMP_EXIT_OK;
		case 'o':
			if (dump_value_missing(argv[0], argv))
				return DUMP_EXIT_USAGE;
			dir = optarg;
			break;
		case OPT_ROWS: {
			char *end = NULL;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || !*optarg || *end || optarg[0] == '-' || v < 1 ||
			    v > (1u << 24))
				return dump_usage_error(argv[0],
							"--rows-per-group wants a count from 1 to "
							"16777216, not \"%s\"",
							optarg);
			rows = (uint32_t)v;
			break;
		}
		default:
			return dump_refused_option(argv[0], opt, argv, opts);
		}
	}
	if (!dir)
		return dump_usage_error(argv[0], "no output directory given (-o DIR)");
	if (optind >= argc)
		return dump_usage_error(argv[0], "no FILE given");
	int dfd = dp_open_dir(dir);
	if (dfd < 0)
		return DUMP_EXIT_FAIL;
	struct dp d;
	memset(&d, 0, sizeof(d));
	struct cli_outfile files[DP_N_TABLES];
	char paths[DP_N_TABLES][4096];
	static const char *const kv_keys[] = {"trc.parquet.schema", "trc.parquet.table"};
	/* The writers keep these pointers until they close. */
	static const char *const kv_values[DP_N_TABLES][2] = {
		{"1.1", "spans"}, {"1.1", "events"}, {"1.1", "allocations"},
		{"1.1", "rss"},	  {"1.1", "traces"}, {"1.1", "processes"},
	};
	int rc = DUMP_EXIT_FAIL;
	unsigned opened = 0;
	for (unsigned t = 0; t < DP_N_TABLES; t++) {
		snprintf(paths[t], sizeof(paths[t]), "%s/%s.parquet", dir, dp_table_names[t]);
		char msg[600];
		/* Each table unnamed in DIR until every FILE is in: a failure leaves DIR's tables
		 * as they were, and whatever entry a table's name holds (a symlink) is replaced at
		 * the end, never followed. */
		if (cli_outfile_open(&files[t], dfd, paths[t], 0644, 0, NULL, "part", false, msg,
				     sizeof(msg))) {
			dump_error("%s", msg);
			goto out;
		}
		opened = t + 1;
		struct pq_writer_opts o = {
			.rows_per_group = rows,
			.created_by = "trc trace-dump " CLI_VERSION,
			.kv_keys = kv_keys,
			.kv_values = kv_values[t],
			.n_kv = 2,
		};
		int err = 0;
		d.t[t] = pq_writer_open(files[t].path, dp_schemas[t].cols, dp_schemas[t].n, &o,
					&err);
		if (!d.t[t]) {
			dump_error("%s: %s", paths[t], strerror(-err));
			goto out;
		}
	}
	for (int i = optind; i < argc; i++)
		if (dp_trace(&d, argv[i]) != DUMP_EXIT_OK)
			goto out;
	rc = DUMP_EXIT_OK;
out:
	for (unsigned t = 0; t < DP_N_TABLES; t++) {
		if (!d.t[t])
			continue;
		int err = pq_writer_close(d.t[t]);
		if (err && rc == DUMP_EXIT_OK) {
			dump_error("%s: %s", paths[t], strerror(-err));
			rc = DUMP_EXIT_FAIL;
		}
	}
	/* Every table written: each put in place; else none (no half-written table). */
	for (unsigned t = 0; t < opened; t++) {
		char msg[600];
		if (rc != DUMP_EXIT_OK)
			cli_outfile_abort(&files[t]);
		else if (cli_outfile_commit(&files[t], msg, sizeof(msg))) {
			dump_error("%s", msg);
			rc = DUMP_EXIT_FAIL;
		}
	}
	close(dfd);
	return rc;
}
