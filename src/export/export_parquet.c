/* export_parquet.c - traces as Parquet tables for query engines (DuckDB, Spark, Trino,
 * ClickHouse), export.h's export_parquet.
 *
 * Purpose: the fleet view. Every trace added puts rows in seven tables, one Parquet file each,
 * each written to its own sink: spans, events, allocations, rss, traces, processes. The
 * schema, its units and its compatibility rule are in PARQUET.md; the writer is
 * parquet_writer.c.
 *
 * Time: every timestamp column is nanoseconds on CLOCK_REALTIME, computed from each trace's
 * anchor (header start_realtime_ns + ts - start_mono_ns, export_anchor), so traces from
 * several hosts line up. Durations are plain nanosecond counts.
 *
 * Order and memory: each trace is read with the reader's merged iterator, so each table's rows
 * of one trace are in time order (spans by their end) and row groups cover short time ranges,
 * which makes their min/max statistics useful to engines. Memory is bounded by the writers' row
 * groups (pq_writer_opts.rows_per_group rows per table), the open-span stacks and the
 * live-allocation table (capped; past the cap a free's size is unknown: null).
 *
 * Span matching is FORMAT.md's rule, the summary's and every export's (export_spans.h): a
 * stream has one stack of open spans and functions; span_end and func_exit close the innermost
 * frame whatever it is, and a span closed is a row named by its begin (depth: the frames open
 * around it). Spans still open at the end of a trace, or when their stream lost events, are
 * not rows (the summary does not count them either). So the spans table agrees with `summary
 * --json` exactly.
 *
 * The traces table takes its figures from the summary computation itself
 * (summary_compute), so they are the summary's, exactly.
 *
 * Threads: the caller's; an export_parquet belongs to one thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "export.h"
#include "export_spans.h"
#include "parquet_writer.h"
#include "summary.h"
#include "u64map.h"
#include "trcfile.h"

#define EXPORT__PQ_STACK_MAX (1u << 20) /* as the summary: past it the outer half is forgotten */
#define EXPORT__PQ_LIVE_MAX_ENTRIES (1u << 20)

/* ---- the tables ------------------------------------------------------------------------ */

const char *const export_parquet_tables[EXPORT_PQ_N_TABLES] = {
	"spans", "events", "allocations", "rss", "traces", "processes", "stacks"};

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

static const struct pq_col_def export__pq_spans_cols[] = {
	S("host"), S("trace"),	  I("pid"),    I("tid"),   S("thread"),
	S("name"), T("start_ns"), I("dur_ns"), I("depth"),
};
static const struct pq_col_def export__pq_events_cols[] = {
	S("host"), S("trace"), I("pid"), I("tid"), T("ts_ns"), S("kind"), S("name"), I("value"),
};
static const struct pq_col_def export__pq_allocs_cols[] = {
	S("host"), S("trace"), T("ts_ns"), I("pid"),   I("tid"),
	S("kind"), I("addr"),  IN("size"), SN("span"), IN("stack_id"),
};
static const struct pq_col_def export__pq_stacks_cols[] = {
	S("host"), S("trace"), I("pid"), I("stack_id"), I("depth"), I("frame"), S("function"),
	I("truncated"),
};
static const struct pq_col_def export__pq_rss_cols[] = {
	S("host"),	  S("trace"),	      T("ts_ns"),	  I("pid"),
	I("rss_bytes"),	  I("program_bytes"), I("buffers_bytes"), IN("hwm_bytes"),
	IN("anon_bytes"), IN("file_bytes"),   IN("shmem_bytes"),  IN("rss_exact_bytes"),
	IN("pss_bytes"),  I("read_ns"),	      I("flags"),
};
static const struct pq_col_def export__pq_traces_cols[] = {
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
static const struct pq_col_def export__pq_processes_cols[] = {
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

#define EXPORT__PQ_NCOLS(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

static const struct {
	const struct pq_col_def *cols;
	unsigned n;
} export__pq_schemas[EXPORT_PQ_N_TABLES] = {
	{export__pq_spans_cols, EXPORT__PQ_NCOLS(export__pq_spans_cols)},   {export__pq_events_cols, EXPORT__PQ_NCOLS(export__pq_events_cols)},
	{export__pq_allocs_cols, EXPORT__PQ_NCOLS(export__pq_allocs_cols)}, {export__pq_rss_cols, EXPORT__PQ_NCOLS(export__pq_rss_cols)},
	{export__pq_traces_cols, EXPORT__PQ_NCOLS(export__pq_traces_cols)}, {export__pq_processes_cols, EXPORT__PQ_NCOLS(export__pq_processes_cols)},
	{export__pq_stacks_cols, EXPORT__PQ_NCOLS(export__pq_stacks_cols)},
};

/* ---- per-trace state ------------------------------------------------------------------- */

struct export__pq_stream {
	uint32_t pid, tid;
	char *thread; /* owned; "" when unknown */
	size_t thread_len;
	struct export_stack open; /* open spans and functions (export_spans.h) */
};

struct export_parquet {
	struct pq_writer *t[EXPORT_PQ_N_TABLES];
	struct export_namer names;
	char *msg; /* the caller's error buffer (export_parquet_opts.err) */
	size_t msg_len;
	/* the current trace */
	struct trcfile_reader *r;
	const char *host, *trace;
	size_t host_len, trace_len;
	int64_t anchor; /* start_realtime_ns - start_mono_ns */
	struct export__pq_stream *st;
	unsigned n_st;
	struct allocmap *live;
	struct u64map stacks_done; /* stack ids of this trace whose rows are written */
	uint64_t spans; /* span rows of this trace */
	int err;
};

static int64_t export__pq_rt(const struct export_parquet *d, uint64_t ts)
{
	return export_realtime(ts, d->anchor);
}

static void export__pq_check(struct export_parquet *d, int err)
{
	if (err && !d->err)
		d->err = err;
}

static void export__pq_labels(struct export_parquet *d, struct pq_writer *w)
{
	export__pq_check(d, pq_put_str(w, 0, d->host, d->host_len));
	export__pq_check(d, pq_put_str(w, 1, d->trace, d->trace_len));
}

/* The name of an id as the summary shows it: its string, or "#<id>". */
static void export__pq_put_name(struct export_parquet *d, struct pq_writer *w, unsigned col, uint32_t id)
{
	uint32_t len = 0;
	const char *n = trcfile_reader_name(d->r, id, &len);
	if (n) {
		export__pq_check(d, pq_put_str(w, col, n, len));
	} else {
		char b[16];
		int k = snprintf(b, sizeof(b), "#%" PRIu32, id);
		export__pq_check(d, pq_put_str(w, col, b, (size_t)k));
	}
}

/* A function by the caller's namer, the name every other output gives it (trace-dump: its
 * symbol, else module+offset, else the address). */
static void export__pq_put_func(struct export_parquet *d, struct pq_writer *w, unsigned col, uint32_t pid,
			uint64_t addr)
{
	char b[320];
	size_t k = d->names.name(d->names.ctx, d->r, pid, addr, b, sizeof(b));
	export__pq_check(d, pq_put_str(w, col, b, k));
}

static void export__pq_set_thread(struct export__pq_stream *s, const char *name, size_t len)
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

/* span_begin and func_enter push a frame (past EXPORT__PQ_STACK_MAX the outer half is
 * forgotten, as the summary does: they stay open, never rows). */
static void export__pq_push(struct export_parquet *d, struct export__pq_stream *s,
			    const struct export_frame *f)
{
	export__pq_check(d, export_stack_push(&s->open, f, EXPORT__PQ_STACK_MAX));
}

/* span_end and func_exit close the innermost frame whatever it is; a span closed is a row,
 * named by its begin (FORMAT.md's rule, as the summary and the viewers' exports). */
static void export__pq_pop(struct export_parquet *d, struct export__pq_stream *s, uint64_t ts)
{
	const struct export_frame *f = export_stack_pop(&s->open);
	if (!f)
		return; /* an end without its begin: no row (the summary counts it unmatched) */
	struct export_frame top = *f;
	if (top.type == TRC_REC_FUNC_ENTER)
		return;
	struct pq_writer *w = d->t[EXPORT_PQ_SPANS];
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, s->pid));
	export__pq_check(d, pq_put_i64(w, 3, s->tid));
	export__pq_check(d, pq_put_str(w, 4, s->thread ? s->thread : "", s->thread_len));
	export__pq_put_name(d, w, 5, top.name_id);
	export__pq_check(d, pq_put_i64(w, 6, export__pq_rt(d, top.ts_ns)));
	export__pq_check(d, pq_put_i64(w, 7, (int64_t)(ts >= top.ts_ns ? ts - top.ts_ns : 0)));
	export__pq_check(d, pq_put_i64(w, 8, (int64_t)s->open.n));
	export__pq_check(d, pq_end_row(w));
	d->spans++;
}

static void export__pq_func(struct export_parquet *d, struct export__pq_stream *s, const struct trc_record *rec)
{
	if (rec->type == TRC_REC_FUNC_ENTER)
		export__pq_push(d, s,
				&(struct export_frame){.type = TRC_REC_FUNC_ENTER,
						       .addr = rec->func.addr,
						       .ts_ns = rec->ts_ns});
	else
		export__pq_pop(d, s, rec->ts_ns);
	struct pq_writer *w = d->t[EXPORT_PQ_EVENTS];
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, s->pid));
	export__pq_check(d, pq_put_i64(w, 3, s->tid));
	export__pq_check(d, pq_put_i64(w, 4, export__pq_rt(d, rec->ts_ns)));
	if (rec->type == TRC_REC_FUNC_ENTER)
		export__pq_check(d, pq_put_str(w, 5, "func_enter", 10));
	else
		export__pq_check(d, pq_put_str(w, 5, "func_exit", 9));
	export__pq_put_func(d, w, 6, s->pid, rec->func.addr);
	export__pq_check(d, pq_put_i64(w, 7, (int64_t)rec->func.addr));
	export__pq_check(d, pq_end_row(w));
}

static void export__pq_value(struct export_parquet *d, struct export__pq_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[EXPORT_PQ_EVENTS];
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, s->pid));
	export__pq_check(d, pq_put_i64(w, 3, s->tid));
	export__pq_check(d, pq_put_i64(w, 4, export__pq_rt(d, rec->ts_ns)));
	if (rec->type == TRC_REC_INSTANT)
		export__pq_check(d, pq_put_str(w, 5, "instant", 7));
	else
		export__pq_check(d, pq_put_str(w, 5, "counter", 7));
	export__pq_put_name(d, w, 6, rec->value.name_id);
	export__pq_check(d, pq_put_i64(w, 7, rec->value.value));
	export__pq_check(d, pq_end_row(w));
}

static void export__pq_lost(struct export_parquet *d, struct export__pq_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[EXPORT_PQ_EVENTS];
	const char *why = trcfile_lost_reason_name(rec->lost.reason);
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, s->pid));
	export__pq_check(d, pq_put_i64(w, 3, s->tid));
	export__pq_check(d, pq_put_i64(w, 4, export__pq_rt(d, rec->ts_ns)));
	export__pq_check(d, pq_put_str(w, 5, "lost", 4));
	export__pq_check(d, pq_put_str(w, 6, why, strlen(why)));
	export__pq_check(d, pq_put_i64(w, 7, (int64_t)rec->lost.count));
	export__pq_check(d, pq_end_row(w));
}

/* The stacks table: a stack's rows (a row per frame, innermost depth 0, each a return address
 * named by the namer at the call before it), once per trace, at its first allocation. */
static void export__pq_stack(struct export_parquet *d, uint32_t pid, uint32_t id)
{
	if (u64map_get(&d->stacks_done, id))
		return;
	if (u64map_put(&d->stacks_done, id, 1, NULL, NULL)) {
		export__pq_check(d, -ENOMEM);
		return;
	}
	uint32_t n = 0, flags = 0;
	const uint64_t *fr = trcfile_reader_stack(d->r, id, &n, &flags);
	struct pq_writer *w = d->t[EXPORT_PQ_STACKS];
	for (uint32_t i = 0; fr && i < n; i++) {
		export__pq_labels(d, w);
		export__pq_check(d, pq_put_i64(w, 2, pid));
		export__pq_check(d, pq_put_i64(w, 3, id));
		export__pq_check(d, pq_put_i64(w, 4, i));
		export__pq_check(d, pq_put_i64(w, 5, (int64_t)fr[i]));
		export__pq_put_func(d, w, 6, pid, fr[i] ? fr[i] - 1 : 0);
		export__pq_check(d, pq_put_i64(w, 7, (flags & TRC_STACK_TRUNCATED) != 0));
		export__pq_check(d, pq_end_row(w));
	}
}

static void export__pq_alloc(struct export_parquet *d, struct export__pq_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[EXPORT_PQ_ALLOCS];
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
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, export__pq_rt(d, rec->ts_ns)));
	export__pq_check(d, pq_put_i64(w, 3, s->pid));
	export__pq_check(d, pq_put_i64(w, 4, s->tid));
	export__pq_check(d, alloc ? pq_put_str(w, 5, "alloc", 5) : pq_put_str(w, 5, "free", 4));
	export__pq_check(d, pq_put_i64(w, 6, (int64_t)rec->alloc.addr));
	export__pq_check(d, known ? pq_put_i64(w, 7, (int64_t)size) : pq_put_null(w, 7));
	/* The innermost open context: the span or function entered last. */
	const struct export_frame *top = export_stack_top(&s->open);
	if (top && top->type == TRC_REC_FUNC_ENTER)
		export__pq_put_func(d, w, 8, s->pid, top->addr);
	else if (top)
		export__pq_put_name(d, w, 8, top->name_id);
	else
		export__pq_check(d, pq_put_null(w, 8));
	uint32_t sid = alloc ? rec->alloc.stack_id : 0;
	uint32_t nf = 0;
	if (sid && !trcfile_reader_stack(d->r, sid, &nf, NULL))
		sid = 0; /* not defined by the trace: no stack */
	export__pq_check(d, sid ? pq_put_i64(w, 9, sid) : pq_put_null(w, 9));
	export__pq_check(d, pq_end_row(w));
	if (sid)
		export__pq_stack(d, s->pid, sid);
}

static void export__pq_rss(struct export_parquet *d, struct export__pq_stream *s, const struct trc_record *rec)
{
	struct pq_writer *w = d->t[EXPORT_PQ_RSS];
	const struct trc_rss_figures *f = &rec->rss;
	export__pq_labels(d, w);
	export__pq_check(d, pq_put_i64(w, 2, export__pq_rt(d, rec->ts_ns)));
	export__pq_check(d, pq_put_i64(w, 3, f->pid ? f->pid : s->pid));
	export__pq_check(d, pq_put_i64(w, 4, (int64_t)f->rss_bytes));
	export__pq_check(d, pq_put_i64(w, 5,
			       (int64_t)(f->rss_bytes > f->buffers_bytes
						 ? f->rss_bytes - f->buffers_bytes
						 : 0)));
	export__pq_check(d, pq_put_i64(w, 6, (int64_t)f->buffers_bytes));
	const struct {
		uint32_t flag;
		uint64_t v;
	} opt[] = {
		{TRC_RSS_HAS_HWM, f->hwm_bytes},	 {TRC_RSS_HAS_SPLIT, f->anon_bytes},
		{TRC_RSS_HAS_SPLIT, f->file_bytes},	 {TRC_RSS_HAS_SPLIT, f->shmem_bytes},
		{TRC_RSS_HAS_EXACT, f->rss_exact_bytes}, {TRC_RSS_HAS_EXACT, f->pss_bytes},
	};
	for (unsigned i = 0; i < 6; i++)
		export__pq_check(d, f->flags & opt[i].flag ? pq_put_i64(w, 7 + i, (int64_t)opt[i].v)
						   : pq_put_null(w, 7 + i));
	export__pq_check(d, pq_put_i64(w, 13, (int64_t)f->read_ns));
	export__pq_check(d, pq_put_i64(w, 14, f->flags));
	export__pq_check(d, pq_end_row(w));
}

static void export__pq_record(struct export_parquet *d, unsigned sidx, const struct trc_record *rec)
{
	struct export__pq_stream *s = &d->st[sidx];
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		export__pq_push(d, s,
				&(struct export_frame){.type = TRC_REC_SPAN_BEGIN,
						       .name_id = rec->span.name_id,
						       .ts_ns = rec->ts_ns});
		break;
	case TRC_REC_SPAN_END:
		export__pq_pop(d, s, rec->ts_ns);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		export__pq_value(d, s, rec);
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		export__pq_func(d, s, rec);
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		export__pq_alloc(d, s, rec);
		break;
	case TRC_REC_RSS:
		export__pq_rss(d, s, rec);
		break;
	case TRC_REC_LOST:
		/* FORMAT.md: what is open on the stream ends as unknown at a loss: no row. */
		if (rec->lost.count)
			s->open.n = 0;
		export__pq_lost(d, s, rec);
		break;
	case TRC_REC_THREAD:
		/* A thread named (or renamed): every stream of that thread takes the name. */
		for (unsigned i = 0; i < d->n_st; i++)
			if (d->st[i].pid == rec->thread.pid && d->st[i].tid == rec->thread.tid)
				export__pq_set_thread(&d->st[i], rec->thread.name, rec->thread.name_len);
		break;
	}
}

/* The traces row, from the summary's own figures. */
/* A command line's n bytes, its NUL-separated arguments shown separated by spaces, into column
 * col; false when out of memory (the error kept in d). */
static bool export__pq_put_args(struct export_parquet *d, struct pq_writer *w, unsigned col, const char *args,
			size_t n)
{
	char *cmd = malloc(n + 1);
	if (!cmd) {
		export__pq_check(d, -ENOMEM);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		cmd[i] = args[i] ? args[i] : ' ';
	export__pq_check(d, pq_put_str(w, col, cmd, n));
	free(cmd);
	return true;
}

/* One row per process of the traced tree, with the figures summary gives it (buffers
 * excluded): its peak as an interval, null when no figure is known. */
static void export__pq_process_rows(struct export_parquet *d, const struct summary *sm)
{
	static const char *const src[] = {"none", "kernel", "sampled"};
	struct pq_writer *w = d->t[EXPORT_PQ_PROCESSES];
	for (size_t i = 0; i < sm->n_processes; i++) {
		const struct summary_process *pr = &sm->processes[i];
		export__pq_labels(d, w);
		export__pq_check(d, pq_put_i64(w, 2, pr->pid));
		export__pq_check(d, pr->ppid ? pq_put_i64(w, 3, pr->ppid) : pq_put_null(w, 3));
		if (pr->command) {
			uint32_t n = pr->command_len;
			while (n && !pr->command[n - 1])
				n--;
			if (!export__pq_put_args(d, w, 4, pr->command, n))
				return;
		} else {
			export__pq_check(d, pq_put_null(w, 4));
		}
		export__pq_check(d, pr->exit_known ? pq_put_i64(w, 5, pr->exit_status) : pq_put_null(w, 5));
		unsigned ps = pr->peak_source <= SUMMARY_PROC_PEAK_SAMPLED ? pr->peak_source : 0;
		export__pq_check(d, ps ? pq_put_i64(w, 6, (int64_t)pr->peak.low_bytes) : pq_put_null(w, 6));
		export__pq_check(d, ps ? pq_put_i64(w, 7, (int64_t)pr->peak.high_bytes) : pq_put_null(w, 7));
		export__pq_check(d, pq_put_str(w, 8, src[ps], strlen(src[ps])));
		export__pq_check(d, pq_put_i64(w, 9, (int64_t)pr->rss_samples));
		export__pq_check(d, pq_put_i64(w, 10, (int64_t)pr->rss_sampled_max_bytes));
		export__pq_check(d, pq_put_i64(w, 11, (int64_t)pr->buffers_max_bytes));
		export__pq_check(d, pq_end_row(w));
	}
}

static void export__pq_trace_row(struct export_parquet *d, const struct summary *sm, const char *path)
{
	const struct trcfile_header *h = trcfile_reader_header(d->r);
	struct pq_writer *w = d->t[EXPORT_PQ_TRACES];
	export__pq_labels(d, w);
	const char *sys = h->host + d->host_len;
	while (*sys == ' ')
		sys++;
	export__pq_check(d, pq_put_str(w, 2, sys, strlen(sys)));
	size_t n = h->cmdline_len;
	if (n && h->cmdline[n - 1] == 0)
		n--;
	if (!export__pq_put_args(d, w, 3, h->cmdline, n))
		return;
	export__pq_check(d, pq_put_i64(w, 4, h->pid));
	export__pq_check(d, pq_put_i64(w, 5, export__pq_rt(d, h->start_mono_ns ? h->start_mono_ns : sm->start_ns)));
	export__pq_check(d, pq_put_i64(w, 6, (int64_t)sm->duration_ns));
	export__pq_check(d, pq_put_i64(w, 7, (int64_t)sm->records));
	export__pq_check(d, pq_put_i64(w, 8, (int64_t)sm->events_recorded));
	export__pq_check(d, pq_put_i64(w, 9, (int64_t)sm->events_lost));
	static const char *const src[] = {"none", "exit", "sampled"};
	unsigned ps = sm->rss_peak_source <= SUMMARY_RSS_PEAK_SAMPLED ? sm->rss_peak_source : 0;
	export__pq_check(d, ps ? pq_put_i64(w, 10, (int64_t)sm->rss_peak_bytes) : pq_put_null(w, 10));
	export__pq_check(d, pq_put_str(w, 11, src[ps], strlen(src[ps])));
	export__pq_check(d, sm->has_exit ? pq_put_i64(w, 12, sm->exit_status) : pq_put_null(w, 12));
	export__pq_check(d, pq_put_i64(w, 13, (int64_t)sm->allocs));
	export__pq_check(d, pq_put_i64(w, 14, (int64_t)sm->alloc_bytes));
	uint64_t spans = 0;
	for (size_t i = 0; i < sm->n_names; i++)
		spans += sm->names[i].spans;
	export__pq_check(d, pq_put_i64(w, 15, (int64_t)spans));
	export__pq_check(d, pq_put_i64(w, 16, sm->truncated));
	char v[32];
	int k = snprintf(v, sizeof(v), "%u.%u", h->version_major, h->version_minor);
	export__pq_check(d, pq_put_str(w, 17, v, (size_t)k));
	export__pq_check(d, pq_put_str(w, 18, path, strlen(path)));
	export__pq_check(d, pq_end_row(w));
}

static void export__pq_trace_free(struct export_parquet *d)
{
	for (unsigned i = 0; i < d->n_st; i++) {
		free(d->st[i].thread);
		free(d->st[i].open.v);
	}
	free(d->st);
	d->st = NULL;
	d->n_st = 0;
	allocmap_free(d->live);
	d->live = NULL;
	u64map_destroy(&d->stacks_done);
}

/* Keeps err's message (printf-style) for the caller; returns err. */
static int export__pq_fail(struct export_parquet *d, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int export__pq_fail(struct export_parquet *d, int err, const char *fmt, ...)
{
	if (d->msg && d->msg_len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->msg, d->msg_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static size_t export__pq_plain_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				    uint64_t addr, char *buf, size_t len)
{
	(void)ctx;
	return export_func_name_plain(r, pid, addr, buf, len);
}

struct export_parquet *export_parquet_open(const struct export_parquet_opts *o,
					   const struct export_sink sinks[EXPORT_PQ_N_TABLES],
					   int *err, unsigned *table)
{
	static const char *const kv_keys[] = {"trc.parquet.schema", "trc.parquet.table"};
	/* The writers keep these pointers until they close. */
	static const char *const kv_values[EXPORT_PQ_N_TABLES][2] = {
		{"1.2", "spans"}, {"1.2", "events"},	 {"1.2", "allocations"}, {"1.2", "rss"},
		{"1.2", "traces"}, {"1.2", "processes"}, {"1.2", "stacks"},
	};
	struct export_parquet *d = calloc(1, sizeof(*d));
	if (!d) {
		*err = -ENOMEM;
		*table = 0;
		return NULL;
	}
	d->names = o->names;
	if (!d->names.name)
		d->names = (struct export_namer){.name = export__pq_plain_name};
	d->msg = o->err;
	d->msg_len = o->err_len;
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++) {
		struct pq_writer_opts w = {
			.rows_per_group = o->rows_per_group,
			.created_by = o->created_by,
			.kv_keys = kv_keys,
			.kv_values = kv_values[t],
			.n_kv = 2,
		};
		d->t[t] = pq_writer_open_sink(&sinks[t], export__pq_schemas[t].cols,
					      export__pq_schemas[t].n, &w, err);
		if (!d->t[t]) {
			*table = t;
			(void)export__pq_fail(d, *err, "%s", strerror(-*err));
			(void)export_parquet_close(d, NULL);
			return NULL;
		}
	}
	*err = 0;
	return d;
}

int export_parquet_add(struct export_parquet *d, struct trcfile_reader *r, const char *path)
{
	int rc;
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
	rc = export_anchor(r, &d->anchor, &start_rt);
	if (rc) {
		export__pq_fail(d, rc,
				"start_realtime_ns %" PRIu64 " and start_mono_ns %" PRIu64
				" put its records outside CLOCK_REALTIME's range (0 to 2^63 ns)",
				h->start_realtime_ns, h->start_mono_ns);
		goto out;
	}
	d->spans = 0;
	rc = summary_compute(r, &sm);
	if (rc) {
		export__pq_fail(d, rc, "%s", trcfile_reader_errmsg(r));
		goto out;
	}
	d->n_st = trcfile_reader_stream_count(r);
	d->st = calloc(d->n_st ? d->n_st : 1, sizeof(*d->st));
	d->live = allocmap_new(EXPORT__PQ_LIVE_MAX_ENTRIES);
	u64map_init(&d->stacks_done, SIZE_MAX);
	it = trcfile_iter_new(r);
	if (!d->st || !d->live || !it) {
		rc = export__pq_fail(d, -ENOMEM, "%s",
				     trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
								 : "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < d->n_st; i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, i);
		struct export__pq_stream *s = &d->st[i];
		s->pid = si->pid;
		s->tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		uint32_t len = 0;
		const char *name = trcfile_reader_thread_name(r, s->pid, s->tid, &len);
		if (name && si->kind == TRC_STREAM_THREAD)
			export__pq_set_thread(s, name, len);
	}
	struct trc_record rec;
	unsigned sidx;
	int k = 0;
	while (!d->err && (k = trcfile_iter_next(it, &rec, &sidx)) == 1)
		export__pq_record(d, sidx, &rec);
	if (k < 0) {
		rc = export__pq_fail(d, k, "%s", trcfile_reader_errmsg(r));
		goto out;
	}
	export__pq_trace_row(d, &sm, path);
	export__pq_process_rows(d, &sm);
	if (d->err) {
		rc = export__pq_fail(d, d->err, "writing the tables: %s", strerror(-d->err));
		goto out;
	}
	rc = 0;
out:
	trcfile_iter_free(it);
	summary_free(&sm);
	export__pq_trace_free(d);
	d->r = NULL;
	return rc;
}

int export_parquet_close(struct export_parquet *d, unsigned *table)
{
	if (!d)
		return 0;
	int rc = 0;
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++) {
		if (!d->t[t])
			continue;
		int err = pq_writer_close(d->t[t]);
		if (err && !rc) {
			rc = export__pq_fail(d, err, "%s", strerror(-err));
			if (table)
				*table = t;
		}
	}
	free(d);
	return rc;
}

int export_parquet(struct trcfile_reader *const *r, const char *const *paths, unsigned n,
		   const struct export_parquet_opts *o,
		   const struct export_sink sinks[EXPORT_PQ_N_TABLES])
{
	int err;
	unsigned table;
	struct export_parquet *d = export_parquet_open(o, sinks, &err, &table);
	if (!d)
		return err;
	for (unsigned i = 0; i < n && !err; i++)
		err = export_parquet_add(d, r[i], paths[i]);
	if (err) {
		(void)export_parquet_close(d, NULL);
		return err;
	}
	return export_parquet_close(d, &table);
}
