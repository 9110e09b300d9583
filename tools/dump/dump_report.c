/* dump_report.c - `trace-dump report FILE -o report.html`: one self-contained HTML page.
 *
 * Purpose: the pictures of a trace, readable in any current browser with no network: the run
 * at a glance, RSS of every process over time with its live heap and what is not heap, the
 * largest rises marked with what allocated most in each, lost events shaded, flame graphs by
 * time and by bytes, span and function tables with duration histograms, the threads' activity.
 * The page is the figures as JSON (<script type="application/json">) and a script that draws
 * them (dump_report.js, built in: dump_report_assets.c). Numbers come from the summary
 * (dump_figures.h), so the page and `summary --json` agree; the shapes from report_data.h.
 *
 * Bounded whatever the trace (dump_report.h, report_data.h): every list is cut to a fixed
 * number of rows, columns or stacks and every name to DUMP_REPORT_NAME_BYTES, so the page
 * stays under DUMP_REPORT_MAX_MIB (the help states it). A damaged trace gives a page that
 * says what was damaged, with what could be read; only a file that is not a trace fails.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "dump_common.h"
#include "dump_figures.h"
#include "dump_report.h"
#include "report_data.h"

/* JSON bytes of one flame graph's stacks at most; the rest summed into the other weight. */
#define DUMP__FLAME_JSON_BYTES (1u << 20)
#define DUMP__NOTES 50u
#define DUMP_REPORT_MAX_MIB 5

static const char dump__report_help[] =
	"usage: trace-dump report [-o OUT.html] FILE\n"
	"\n"
	"One self-contained HTML page (no network: script and style inline) for any current\n"
	"browser: the run at a glance (command, duration, exit, events, lost and when, the\n"
	"peak RSS of each process and whose peak it is); RSS of every process over time with\n"
	"its live heap and the RSS not in the heap (mappings, stacks, fragmentation) on the\n"
	"same axes, hover for values, the largest rises marked with what allocated most in\n"
	"each, lost events shaded; flame graphs by time and by bytes allocated (click to zoom,\n"
	"search by name); span and function tables with duration histograms; each thread's\n"
	"activity over time. Its figures are those of `trace-dump summary --json`.\n"
	"\n"
	"Its size is bounded whatever the trace: RSS in 600 columns for the 24 processes with\n"
	"the largest RSS, 500 processes listed, 200 spans and 200 functions (by total time),\n"
	"256 threads (by events) in 200 columns, per flame graph the 4000 heaviest stacks within\n"
	"1 MiB, 50 notes, names cut to 200 bytes: under 5 MiB. A damaged trace's page says what\n"
	"was damaged and shows what could be read.\n"
	"\n"
	"  -o OUT      the page (default: standard output); written beside OUT and renamed\n"
	"              over it when whole\n"
	"  -h, --help  this text\n"
	"\n"
	"Exit status: 0 written (a damaged trace too: the page says so); 1 FILE is not a\n"
	"trace, or OUT could not be written; 2 usage error.\n";

/* ---- JSON for inside a <script> element ------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t dump__utf8_len(const unsigned char *s, size_t n)
{
	size_t k = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (!k || k > n || s[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (k == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0;
	if (k == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return k;
}

/* A JSON string of s, at most cap bytes written inside the quotes (cut at a character), safe
 * inside <script>: '<', '>' and '&' escaped, so no "</script" can end the element; bytes that
 * are not UTF-8 as \u00XX (strict parsers accept the page). Returns the bytes written. */
static size_t dump__str(const char *s, size_t len, size_t cap)
{
	size_t out = 0;
	dump_char('"');
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		size_t k = 1, w;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			w = 2;
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
			w = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
		} else if (c < 0x80) {
			esc[0] = (char)c;
			w = 1;
		} else if ((k = dump__utf8_len((const unsigned char *)s + i, len - i))) {
			w = k;
		} else {
			k = 1;
			w = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
		}
		if (out + w > cap)
			break;
		if (c >= 0x80 && w == k && k > 1)
			dump_write(s + i, k);
		else
			dump_write(esc, w);
		out += w;
		i += k;
	}
	dump_char('"');
	return out + 2;
}

static void dump__name(const char *s, size_t len)
{
	dump__str(s, len, DUMP_REPORT_NAME_BYTES);
}

static void dump__key(const char *k)
{
	dump_str(",\"");
	dump_str(k);
	dump_str("\":");
}

static void dump__u64(const char *k, uint64_t v)
{
	dump__key(k);
	dump_u64(v);
}

static void dump__text(const char *k, const char *v)
{
	dump__key(k);
	dump__name(v, strlen(v));
}

/* A command line (NUL-separated) as one string, arguments separated by spaces. */
static void dump__command(const char *cmd, size_t len)
{
	char buf[DUMP_REPORT_NAME_BYTES + 1];
	while (len && !cmd[len - 1])
		len--;
	size_t n = len < DUMP_REPORT_NAME_BYTES ? len : DUMP_REPORT_NAME_BYTES;
	for (size_t i = 0; i < n; i++)
		buf[i] = cmd[i] ? cmd[i] : ' ';
	dump__name(buf, n);
}

static void dump__exit_text(char *buf, size_t len, bool known, int32_t st)
{
	if (!known)
		snprintf(buf, len, "unknown");
	else if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "status 0x%x", (unsigned)st);
}

/* ---- the sections ------------------------------------------------------------------------- */

struct dump__page {
	struct trcfile_reader *r;
	const struct dump_figures *f; /* NULL: the summary could not be computed */
	const struct report_data *d; /* NULL: the shapes could not be computed */
	const char *damage[16];
	char damage_buf[16][512];
	unsigned n_damage;
};

static void dump__damage(struct dump__page *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void dump__damage(struct dump__page *p, const char *fmt, ...)
{
	if (p->n_damage == 16)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->damage_buf[p->n_damage], sizeof(p->damage_buf[0]), fmt, ap);
	va_end(ap);
	p->damage[p->n_damage] = p->damage_buf[p->n_damage];
	p->n_damage++;
}

static const struct summary_process *dump__proc(const struct summary *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i].pid == pid)
			return &s->processes[i];
	return NULL;
}

static void dump__glance(const struct dump__page *p)
{
	const struct trcfile_header *h = trcfile_reader_header(p->r);
	const struct summary *s = p->f ? &p->f->s : NULL;
	dump_str("{\"command\":");
	dump__command(h->cmdline, h->cmdline_len);
	dump__text("host", h->host ? h->host : "");
	dump__u64("start_realtime_ns", h->start_realtime_ns);
	char ex[64];
	dump__exit_text(ex, sizeof(ex), s && s->has_exit, s ? s->exit_status : 0);
	dump__text("exit", ex);
	dump__u64("duration_ns", s ? s->duration_ns : 0);
	dump__u64("events_recorded", s ? s->events_recorded : 0);
	dump__u64("events_lost", s ? s->events_lost : 0);
	dump__key("lost_first_t_ns");
	if (s && s->lost_first_ts_ns)
		dump_u64(s->lost_first_ts_ns - s->start_ns);
	else
		dump_str("null");
	dump__key("lost_last_t_ns");
	if (s && s->lost_first_ts_ns)
		dump_u64(s->lost_last_ts_ns - s->start_ns);
	else
		dump_str("null");
	dump__u64("allocs", s ? s->allocs : 0);
	dump__u64("alloc_bytes", s ? s->alloc_bytes : 0);
	dump__u64("live_end_bytes", s ? s->live_end_bytes : 0);
	dump__u64("live_peak_bytes", s ? s->live_peak_bytes : 0);
	dump__key("damage");
	dump_char('[');
	for (unsigned i = 0; i < p->n_damage; i++) {
		if (i)
			dump_char(',');
		dump__str(p->damage[i], strlen(p->damage[i]), 1024);
	}
	dump_char(']');
	dump__key("notes");
	dump_char('[');
	for (size_t i = 0; s && i < s->n_notes && i < DUMP__NOTES; i++) {
		dump_str(i ? ",{\"t_ns\":" : "{\"t_ns\":");
		dump_u64(s->notes[i].ts_ns - s->start_ns);
		dump__text("text", s->notes[i].text);
		dump_char('}');
	}
	dump_char(']');
	dump__key("processes");
	dump_char('[');
	size_t np = s ? s->n_processes : 0;
	for (size_t i = 0; i < np && i < DUMP_REPORT_PROCS; i++) {
		const struct summary_process *pr = &s->processes[i];
		dump_printf("%s{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"command\":",
			    i ? "," : "", pr->pid, pr->ppid);
		if (pr->command)
			dump__command(pr->command, pr->command_len);
		else
			dump_str("\"(unknown)\"");
		dump__u64("peak_bytes", pr->peak.low_bytes);
		dump__u64("peak_high_bytes", pr->peak.high_bytes);
		dump__text("peak_source", pr->peak_source == SUMMARY_PROC_PEAK_KERNEL
						  ? "kernel (its high-water mark)"
					  : pr->peak_source == SUMMARY_PROC_PEAK_SAMPLED
						  ? "sampled (its largest sample)"
						  : "none");
		dump__exit_text(ex, sizeof(ex), pr->exit_known, pr->exit_status);
		dump__text("exit", ex);
		dump__u64("samples", pr->rss_samples);
		dump__u64("sampled_max_bytes", pr->rss_sampled_max_bytes);
		dump_char('}');
	}
	dump_char(']');
	dump__u64("processes_more", np > DUMP_REPORT_PROCS ? np - DUMP_REPORT_PROCS : 0);
}

/* The live heap of pid at its sample at ts (memory.h's series), or -1 when not known. */
static int64_t dump__live_at(const struct memory_report *m, uint32_t pid, uint64_t ts)
{
	for (size_t i = 0; m && i < m->n_procs; i++) {
		if (m->procs[i].pid != pid)
			continue;
		const struct memory_sample *v = m->procs[i].series;
		size_t lo = 0, hi = m->procs[i].n_series;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (v[mid].ts_ns < ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < m->procs[i].n_series && v[lo].ts_ns == ts)
			return (int64_t)v[lo].live_bytes;
		return -1;
	}
	return -1;
}

static int dump__by_max(const void *x, const void *y)
{
	const struct report_rss *a = *(const struct report_rss *const *)x,
				*b = *(const struct report_rss *const *)y;
	if (a->max_bytes != b->max_bytes)
		return a->max_bytes < b->max_bytes ? 1 : -1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

static int dump__rss(const struct dump__page *p)
{
	const struct report_data *d = p->d;
	const struct summary *s = &p->f->s;
	size_t n = d ? d->n_rss : 0;
	const struct report_rss **order = calloc(n ? n : 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = &d->rss[i];
	qsort(order, n, sizeof(*order), dump__by_max);
	dump__u64("rss_cols", REPORT_RSS_COLS);
	dump__u64("rss_more", n > DUMP_REPORT_RSS_PROCS ? n - DUMP_REPORT_RSS_PROCS : 0);
	dump__key("rss");
	dump_char('[');
	for (size_t i = 0; i < n && i < DUMP_REPORT_RSS_PROCS; i++) {
		const struct report_rss *x = order[i];
		const struct summary_process *pr = dump__proc(s, x->pid);
		dump_printf("%s{\"pid\":%" PRIu32 ",\"command\":", i ? "," : "", x->pid);
		if (pr && pr->command)
			dump__command(pr->command, pr->command_len);
		else
			dump_str("\"\"");
		dump__u64("max_bytes", x->max_bytes);
		dump__key("points");
		dump_char('[');
		bool first = true;
		for (unsigned c = 0; c < REPORT_RSS_COLS; c++) {
			const struct report_rss_col *col = &x->cols[c];
			if (!col->ts_ns)
				continue;
			int64_t live = dump__live_at(&p->f->mem, x->pid, col->ts_ns);
			dump_printf("%s[%" PRIu64 ",%" PRIu64 ",", first ? "" : ",",
				    col->ts_ns > s->start_ns ? col->ts_ns - s->start_ns : 0,
				    col->rss_bytes);
			if (live >= 0)
				dump_i64(live);
			else
				dump_str("null");
			dump_char(']');
			first = false;
		}
		dump_str("]}");
	}
	dump_char(']');
	free(order);
	/* The largest rises, and what allocated most during each (memory.h). */
	const struct memory_interval *top[5];
	size_t nt = memory_top_intervals(&p->f->mem, top, 5);
	dump__key("rises");
	dump_char('[');
	for (size_t i = 0; i < nt; i++) {
		const struct memory_interval *iv = top[i];
		dump_printf("%s{\"pid\":%" PRIu32, i ? "," : "", iv->pid);
		dump__u64("t0_ns", iv->t0_ns > s->start_ns ? iv->t0_ns - s->start_ns : 0);
		dump__u64("t1_ns", iv->t1_ns > s->start_ns ? iv->t1_ns - s->start_ns : 0);
		dump__u64("rss_before", iv->rss_before);
		dump__u64("rss_after", iv->rss_after);
		dump__text("site", iv->n_sites ? iv->sites[0].name : "(nothing allocated)");
		dump__u64("site_bytes", iv->n_sites ? iv->sites[0].bytes : 0);
		dump_char('}');
	}
	dump_char(']');
	dump__key("lost_cols");
	dump_char('[');
	for (unsigned i = 0; s->lost_first_ts_ns && i < SUMMARY_SPARK_COLUMNS; i++) {
		if (i)
			dump_char(',');
		dump_u64(s->lost_spark[i]);
	}
	dump_char(']');
	return 0;
}

static void dump__flame(const char *key, const struct report_flame *fl)
{
	dump__key(key);
	uint64_t other = fl ? fl->other_weight : 0, other_stacks = fl ? fl->other_stacks : 0;
	size_t bytes = 0;
	dump_str("{\"stacks\":[");
	for (size_t i = 0; fl && i < fl->n; i++) {
		if (bytes >= DUMP__FLAME_JSON_BYTES) {
			other += fl->v[i].weight;
			other_stacks++;
			continue;
		}
		if (i)
			dump_char(',');
		dump_char('[');
		bytes += dump__str(fl->v[i].stack, strlen(fl->v[i].stack), DUMP__FLAME_JSON_BYTES);
		dump_printf(",%" PRIu64 "]", fl->v[i].weight);
		bytes += 24;
	}
	dump_char(']');
	dump__u64("total", fl ? fl->total : 0);
	dump__u64("other", other);
	dump__u64("other_stacks", other_stacks);
	dump__text("other_name", REPORT_OTHER_STACKS);
	dump_char('}');
}

/* The histogram of name in v (sorted by name): `,"bins_first":G,"bins":[...]`, or nothing. */
static void dump__bins(const struct report_durations *v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(v[mid].name, name);
		if (!c) {
			lo = mid;
			break;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n || strcmp(v[lo].name, name))
		return;
	unsigned g0 = 0, g1 = HIST_GROUPS;
	while (g0 < HIST_GROUPS && !v[lo].bins[g0])
		g0++;
	while (g1 > g0 && !v[lo].bins[g1 - 1])
		g1--;
	if (g0 == g1)
		return;
	dump__u64("bins_first", g0);
	dump__key("bins");
	dump_char('[');
	for (unsigned g = g0; g < g1; g++) {
		if (g > g0)
			dump_char(',');
		dump_u64(v[lo].bins[g]);
	}
	dump_char(']');
}

static int dump__by_span_total(const void *x, const void *y)
{
	const struct summary_name *a = *(const struct summary_name *const *)x,
				  *b = *(const struct summary_name *const *)y;
	if (a->span_total_ns != b->span_total_ns)
		return a->span_total_ns < b->span_total_ns ? 1 : -1;
	return strcmp(a->name, b->name);
}

static int dump__tables(const struct dump__page *p)
{
	const struct summary *s = &p->f->s;
	const struct report_data *d = p->d;
	const struct summary_name **v = calloc(s->n_names ? s->n_names : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < s->n_names; i++)
		if (s->names[i].spans)
			v[n++] = &s->names[i];
	qsort(v, n, sizeof(*v), dump__by_span_total);
	dump__key("spans");
	dump_char('[');
	for (size_t i = 0; i < n && i < DUMP_REPORT_ROWS; i++) {
		const struct summary_name *nm = v[i];
		dump_str(i ? ",{\"name\":" : "{\"name\":");
		dump__name(nm->name, nm->name_len);
		dump__u64("count", nm->spans);
		dump__u64("total_ns", nm->span_total_ns);
		dump__u64("mean_ns", nm->span_total_ns / nm->spans);
		dump__u64("p50_ns", nm->span_p50_ns);
		dump__u64("p99_ns", nm->span_p99_ns);
		dump__u64("max_ns", nm->span_max_ns);
		if (d)
			dump__bins(d->spans, d->n_spans, nm->name);
		dump_char('}');
	}
	dump_char(']');
	dump__u64("spans_more", n > DUMP_REPORT_ROWS ? n - DUMP_REPORT_ROWS : 0);
	free(v);
	/* Functions: the table is sorted by inclusive total (dump_figures_compute's key). */
	const struct func_row *fr = NULL;
	size_t nf = p->f->ft ? func_table_rows(p->f->ft, &fr) : 0;
	dump__key("functions");
	dump_char('[');
	for (size_t i = 0; i < nf && i < DUMP_REPORT_ROWS; i++) {
		dump_str(i ? ",{\"name\":" : "{\"name\":");
		dump__name(fr[i].name, strlen(fr[i].name));
		dump__u64("calls", fr[i].calls);
		dump__u64("total_ns", fr[i].incl.total_ns);
		dump__u64("self_total_ns", fr[i].self.total_ns);
		dump__u64("p50_ns", fr[i].incl.p50_ns);
		dump__u64("p99_ns", fr[i].incl.p99_ns);
		dump__u64("max_ns", fr[i].incl.max_ns);
		if (d)
			dump__bins(d->funcs, d->n_funcs, fr[i].name);
		dump_char('}');
	}
	dump_char(']');
	dump__u64("functions_more", nf > DUMP_REPORT_ROWS ? nf - DUMP_REPORT_ROWS : 0);
	return 0;
}

static int dump__by_events(const void *x, const void *y)
{
	const struct summary_thread *a = *(const struct summary_thread *const *)x,
				    *b = *(const struct summary_thread *const *)y;
	if (a->events != b->events)
		return a->events < b->events ? 1 : -1;
	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->tid > b->tid) - (a->tid < b->tid);
}

static const struct report_thread *dump__act(const struct report_data *d, uint32_t pid,
					     uint32_t tid)
{
	for (size_t lo = 0, hi = d ? d->n_threads : 0; lo < hi;) {
		size_t mid = (lo + hi) / 2;
		const struct report_thread *t = &d->threads[mid];
		if (t->pid == pid && t->tid == tid)
			return t;
		if (t->pid < pid || (t->pid == pid && t->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int dump__threads(const struct dump__page *p)
{
	const struct summary *s = &p->f->s;
	const struct summary_thread **v = calloc(s->n_threads ? s->n_threads : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_threads; i++)
		v[i] = &s->threads[i];
	qsort(v, s->n_threads, sizeof(*v), dump__by_events);
	uint64_t max = 1;
	for (size_t i = 0; p->d && i < p->d->n_threads; i++)
		for (unsigned c = 0; c < REPORT_ACT_COLS; c++)
			if (p->d->threads[i].cols[c] > max)
				max = p->d->threads[i].cols[c];
	dump__key("threads");
	dump_char('[');
	for (size_t i = 0; i < s->n_threads && i < DUMP_REPORT_THREADS; i++) {
		const struct summary_thread *t = v[i];
		dump_printf("%s{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":", i ? "," : "",
			    t->pid, t->tid);
		dump__name(t->name, strlen(t->name));
		dump__u64("events", t->events);
		dump__u64("lost", t->lost);
		dump__u64("alloc_bytes", t->alloc_bytes);
		dump__key("cols");
		dump_char('[');
		const struct report_thread *a = dump__act(p->d, t->pid, t->tid);
		for (unsigned c = 0; c < REPORT_ACT_COLS; c++) {
			uint64_t k = a ? a->cols[c] : 0;
			/* 0 stays 0 (idle); anything else 1..99 of the busiest column. */
			uint64_t lv = k ? 1 + (k * (DUMP_REPORT_LEVELS - 2)) / max : 0;
			if (c)
				dump_char(',');
			dump_u64(lv);
		}
		dump_str("]}");
	}
	dump_char(']');
	dump__u64("threads_more",
		  s->n_threads > DUMP_REPORT_THREADS ? s->n_threads - DUMP_REPORT_THREADS : 0);
	free(v);
	return 0;
}

static int dump__page_write(struct dump__page *p)
{
	dump_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		 "<meta name=\"generator\" content=\"trace-dump report\">\n"
		 "<title>trace report</title>\n<style>\n");
	dump_str(dump_report_css);
	dump_str("</style></head>\n<body>\n<div id=\"app\"></div>\n"
		 "<script type=\"application/json\" id=\"trc-data\">\n");
	dump__glance(p);
	if (p->f) {
		if (dump__rss(p) || dump__tables(p) || dump__threads(p))
			return -ENOMEM;
	} else {
		dump_str(",\"rss_cols\":0,\"rss_more\":0,\"rss\":[],\"rises\":[],\"lost_cols\":[],"
			 "\"spans\":[],\"spans_more\":0,\"functions\":[],\"functions_more\":0,"
			 "\"threads\":[],\"threads_more\":0");
	}
	dump__flame("flame_time", p->d ? &p->d->by_time : NULL);
	dump__flame("flame_bytes", p->d ? &p->d->by_bytes : NULL);
	dump__text("bound", "This page holds at most: RSS in 600 columns for the 24 processes "
			    "with the largest RSS, 500 processes, 200 spans and 200 functions (by "
			    "total time), 256 threads (by events) in 200 columns, per flame graph "
			    "the 4000 heaviest stacks within 1 MiB, 50 notes; names cut to 200 "
			    "bytes.");
	dump_str("}\n</script>\n<script>\n");
	dump_str(dump_report_js);
	dump_str("</script>\n</body></html>\n");
	return 0;
}

/* What the reader says was wrong with the file, in the page's words. */
static void dump__damage_of(struct dump__page *p)
{
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(p->r, &st);
	if (st.truncated)
		dump__damage(p,
			     "%s: read up to the last whole chunk (%" PRIu64 " records), %" PRIu64
			     " bytes after it ignored",
			     st.footer_damaged ? "the footer is damaged"
					       : "the footer is missing (the recorder was killed?)",
			     st.records, st.bytes_ignored);
	if (st.chunks_missing)
		dump__damage(p,
			     "%" PRIu64 " chunks are missing before the last ones of their streams",
			     st.chunks_missing);
	if (st.chunks_damaged)
		dump__damage(p,
			     "%" PRIu64 " chunks failed their checks and were skipped (first: %s)",
			     st.chunks_damaged, trcfile_reader_damage_note(p->r));
	if (st.meta_strings_cut || st.meta_entries_dropped)
		dump__damage(p, "%s", dump_meta_cut_note(&st));
}

int dump_report_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = "-";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(argv[0], argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(dump__report_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(argv[0], c, argv, opts);
		}
	}
	const char *path = dump_file_operand(argv[0], argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	struct dump__page p = {.r = r};
	struct dump_figures f;
	struct report_data d;
	bool have_f = false, have_d = false;
	/* The report's pass rides on the summary's (NULL: out of memory, it makes its own). */
	struct report_pass *rp = report_pass_new(r);
	if (dump_figures_compute_chunks(r, path, FUNC_SORT_TOTAL, rp ? report_pass_chunk : NULL, rp,
					&f) == DUMP_EXIT_OK) {
		have_f = true;
		p.f = &f;
		int err = rp ? report_pass_finish(rp, f.syms, f.s.start_ns, f.s.last_ts_ns, &d)
			     : report_data_compute(r, f.syms, f.s.start_ns, f.s.last_ts_ns, &d);
		rp = NULL;
		if (!err) {
			have_d = true;
			p.d = &d;
		} else {
			dump__damage(&p, "the flame graphs and histograms could not be made: %s",
				     err == -ENOMEM || !trcfile_reader_errmsg(r)[0]
					     ? "out of memory"
					     : trcfile_reader_errmsg(r));
		}
	} else {
		report_pass_free(rp);
		dump__damage(
			&p, "the trace could not be read through: %s; only its header is shown",
			trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r) : "out of memory");
	}
	dump__damage_of(&p);
	int rc = DUMP_EXIT_FAIL;
	struct dump_outfile o = {.base = out};
	if (dump_outfile_next(&o))
		goto done;
	if (dump__page_write(&p)) {
		dump_error("out of memory");
		if (!dump_outfile_discard(&o))
			dump_outfile_close(&o);
		goto done;
	}
	if (dump_outfile_close(&o)) {
		dump_outfile_discard(&o);
		goto done;
	}
	rc = DUMP_EXIT_OK;
done:
	if (have_d)
		report_data_free(&d);
	if (have_f)
		dump_figures_free(&f);
	dump_close(r, path);
	return rc;
}
