/* dump_diff.c - `trace-dump diff A B`: what changed between two traces of one program.
 *
 * Purpose: rows of figures of both traces, matched by what stays the same from run to run:
 * spans and functions by name, allocation sites by their name as `trace-dump memory` gives it
 * (sites.h), processes by command and threads by their process's command and their name (the
 * k-th process of a command in order of appearance with the k-th: pids differ between runs),
 * then what is left of them by executable (argv[0]: the same program run with other
 * arguments).
 * Each figure is the summary's (dump_figures.h), so diff's A column is `summary --json A`'s.
 * Rows are sorted by their largest relative change (a row in one trace only first), so the
 * regression a change brought is the first line. --threshold PCT makes diff exit 1 when a
 * figure grew by more than PCT percent (--ignore-times: counts, bytes and RSS only), so it
 * can fail a CI job.
 *
 * Memory: one row per span name, function, site, process and thread of either trace.
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "dump_figures.h"
#include "dump_rules.h" /* enum dump_unit */
#include "sites.h"

static const char dump__diff_help[] =
	"usage: trace-dump diff [--json] [--threshold PCT [--ignore-times]] [--top N] A B\n"
	"\n"
	"What changed from trace A to trace B of the same program: per span (count, total,\n"
	"p50, p99), function (calls, total, p50, p99), allocation site (allocations, bytes, p50\n"
	"and p99 of the sizes; a site is what the allocating thread was running, its innermost\n"
	"span or function, as in `trace-dump memory`), process (peak RSS, largest sample,\n"
	"bytes allocated) and thread (events, bytes allocated), and the trace's totals. Rows\n"
	"are matched by name, processes by command and threads by process command and name\n"
	"(then those left by executable: a run with other arguments), never by pid; the\n"
	"largest relative change comes first, rows in one trace only before all. The\n"
	"figures are those of `trace-dump summary --json`.\n"
	"\n"
	"  --json           one JSON object: {\"a\", \"b\", \"threshold_pct\" (null: none),\n"
	"                   \"exceeded\", \"unchanged\", \"rows\": [{\"kind\", \"name\", "
	"\"in_a\",\n"
	"                   \"in_b\", \"change\" (largest relative change; null: in one trace\n"
	"                   only or from 0), \"figures\": [{\"name\", \"unit\" (count, bytes, "
	"ns),\n"
	"                   \"a\", \"b\", \"change\" ((b - a) / a; null when a is 0)}]}]}, every\n"
	"                   row, changed ones first\n"
	"  --threshold PCT  exit 1 when a figure of B is more than PCT percent above A's (or\n"
	"                   above 0 from 0, or a row only in B): for CI (10 or 10%%)\n"
	"  --ignore-times   the threshold looks at counts, bytes and RSS only (times vary\n"
	"                   from run to run)\n"
	"  --top N          text: the N rows of largest change (default 30; 0: all)\n"
	"  -h, --help       this text\n"
	"\n"
	"Exit status: 0 done (nothing above the threshold); 1 a figure above the threshold,\n"
	"or a file could not be read; 2 usage error.\n";

/* In the order rows of equal change are shown: what the program ran before where it ran. */
enum dump__kind { DK_SPAN = 0, DK_FUNCTION, DK_SITE, DK_PROCESS, DK_THREAD, DK_TRACE };
static const char *const dump__kind_names[] = {"span",	  "function", "site",
					       "process", "thread",   "trace"};

#define DUMP__FIGS 8

struct dump__fig {
	const char *name;
	enum dump_unit unit;
	bool time;
	uint64_t v[2];
};

/* One row of one trace before the merge (side 0: A, 1: B), then of both. */
struct dump__row {
	enum dump__kind kind;
	char *name; /* owned */
	char *alt; /* owned: processes and threads, their key by executable (argv[0]) */
	bool gone; /* paired into another row */
	unsigned occ; /* k-th process or thread of this name in its trace */
	uint64_t order; /* first seen (for occ) */
	bool in[2];
	unsigned n;
	struct dump__fig f[DUMP__FIGS];
	double score;
};

struct dump__rows {
	struct dump__row *v;
	size_t n, cap;
	bool nomem;
};

static char *dump__dup_spaced(const char *s, size_t len)
{
	char *d = malloc(len + 1);
	if (!d)
		return NULL;
	/* NUL bytes (argument separators, NAME strings) shown as spaces. */
	for (size_t i = 0; i < len; i++)
		d[i] = s[i] ? s[i] : ' ';
	d[len] = 0;
	return d;
}

static struct dump__row *dump__add(struct dump__rows *rs, enum dump__kind kind, const char *name,
				   size_t len, int side, uint64_t order)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 256;
		struct dump__row *p = realloc(rs->v, cap * sizeof(*p));
		if (!p) {
			rs->nomem = true;
			return NULL;
		}
		rs->v = p;
		rs->cap = cap;
	}
	struct dump__row *r = &rs->v[rs->n];
	memset(r, 0, sizeof(*r));
	r->name = dump__dup_spaced(name, len);
	if (!r->name) {
		rs->nomem = true;
		return NULL;
	}
	r->kind = kind;
	r->order = order;
	r->in[side] = true;
	rs->n++;
	return r;
}

static void dump__fig(struct dump__row *r, int side, const char *name, enum dump_unit unit,
		      bool time, uint64_t v)
{
	if (!r || r->n >= DUMP__FIGS)
		return;
	r->f[r->n].name = name;
	r->f[r->n].unit = unit;
	r->f[r->n].time = time;
	r->f[r->n].v[side] = v;
	r->n++;
}

static size_t dump__cmd_len(const struct summary_process *p)
{
	size_t n = p->command_len;
	while (n && p->command[n - 1] == 0)
		n--;
	return n;
}

static const struct summary_process *dump__proc(const struct summary *s, uint32_t pid)
{
	size_t lo = 0, hi = s->n_processes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->processes[mid].pid == pid)
			return &s->processes[mid];
		if (s->processes[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const struct summary_heap *dump__heap(const struct summary *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n_heaps; i++)
		if (s->heaps[i].pid == pid)
			return &s->heaps[i];
	return NULL;
}

/* Every row of one trace. */
static void dump__collect(struct dump__rows *rs, int side, const struct dump_figures *f,
			  const struct site_table *sites)
{
	const struct summary *s = &f->s;
	struct dump__row *r = dump__add(rs, DK_TRACE, "totals", 6, side, 0);
	dump__fig(r, side, "events", DUMP_UNIT_COUNT, false, s->events_recorded);
	dump__fig(r, side, "lost", DUMP_UNIT_COUNT, false, s->events_lost);
	dump__fig(r, side, "allocs", DUMP_UNIT_COUNT, false, s->allocs);
	dump__fig(r, side, "alloc-bytes", DUMP_UNIT_BYTES, false, s->alloc_bytes);
	dump__fig(r, side, "live-peak", DUMP_UNIT_BYTES, false, s->live_peak_bytes);
	dump__fig(r, side, "live-at-exit", DUMP_UNIT_BYTES, false, s->live_end_bytes);
	dump__fig(r, side, "peak-rss", DUMP_UNIT_BYTES, false, s->rss_peak_bytes);
	dump__fig(r, side, "duration", DUMP_UNIT_NS, true, s->duration_ns);
	for (size_t i = 0; i < s->n_processes; i++) {
		const struct summary_process *p = &s->processes[i];
		const char *cmd = p->command ? p->command : "(command unknown)";
		size_t len = p->command ? dump__cmd_len(p) : strlen(cmd);
		r = dump__add(rs, DK_PROCESS, cmd, len, side, p->first_ts_ns);
		if (r && !(r->alt = dump__dup_spaced(cmd, strnlen(cmd, len))))
			rs->nomem = true;
		const struct summary_heap *h = dump__heap(s, p->pid);
		dump__fig(r, side, "peak-rss", DUMP_UNIT_BYTES, false, p->peak.low_bytes);
		dump__fig(r, side, "rss-sampled-max", DUMP_UNIT_BYTES, false,
			  p->rss_sampled_max_bytes);
		dump__fig(r, side, "alloc-bytes", DUMP_UNIT_BYTES, false, h ? h->alloc_bytes : 0);
		dump__fig(r, side, "live-peak", DUMP_UNIT_BYTES, false, h ? h->live_peak_bytes : 0);
	}
	for (size_t i = 0; i < s->n_threads; i++) {
		const struct summary_thread *t = &s->threads[i];
		const struct summary_process *p = dump__proc(s, t->pid);
		/* "COMMAND / THREAD": the command's NUL separators become spaces in dump__add. */
		char name[1024];
		size_t len = 0;
		if (p && p->command) {
			len = dump__cmd_len(p);
			if (len > sizeof(name) / 2)
				len = sizeof(name) / 2;
			memcpy(name, p->command, len);
		} else {
			name[len++] = '?';
		}
		int n = snprintf(name + len, sizeof(name) - len, " / %s", t->name);
		len += n < 0				? 0
		       : (size_t)n < sizeof(name) - len ? (size_t)n
							: sizeof(name) - len - 1;
		r = dump__add(rs, DK_THREAD, name, len, side, t->first_ts_ns);
		/* Its key by executable: "ARGV0 / THREAD". */
		size_t exe = strnlen(name, p && p->command ? dump__cmd_len(p) : 1);
		char alt[1024];
		int an = snprintf(alt, sizeof(alt), "%.*s / %s", (int)exe, name, t->name);
		if (r &&
		    !(r->alt = dump__dup_spaced(alt, an < 0			? 0
						     : (size_t)an < sizeof(alt) ? (size_t)an
										: sizeof(alt) - 1)))
			rs->nomem = true;
		dump__fig(r, side, "events", DUMP_UNIT_COUNT, false, t->events);
		dump__fig(r, side, "alloc-bytes", DUMP_UNIT_BYTES, false, t->alloc_bytes);
	}
	for (size_t i = 0; i < s->n_names; i++) {
		const struct summary_name *nm = &s->names[i];
		if (!nm->begins && !nm->spans)
			continue;
		r = dump__add(rs, DK_SPAN, nm->name, nm->name_len, side, 0);
		dump__fig(r, side, "count", DUMP_UNIT_COUNT, false, nm->spans);
		dump__fig(r, side, "total", DUMP_UNIT_NS, true, nm->span_total_ns);
		dump__fig(r, side, "p50", DUMP_UNIT_NS, true, nm->span_p50_ns);
		dump__fig(r, side, "p99", DUMP_UNIT_NS, true, nm->span_p99_ns);
	}
	const struct func_row *fr = NULL;
	size_t nf = f->ft ? func_table_rows(f->ft, &fr) : 0;
	for (size_t i = 0; i < nf; i++) {
		r = dump__add(rs, DK_FUNCTION, fr[i].name, strlen(fr[i].name), side, 0);
		dump__fig(r, side, "calls", DUMP_UNIT_COUNT, false, fr[i].calls);
		dump__fig(r, side, "total", DUMP_UNIT_NS, true, fr[i].incl.total_ns);
		dump__fig(r, side, "p50", DUMP_UNIT_NS, true, fr[i].incl.p50_ns);
		dump__fig(r, side, "p99", DUMP_UNIT_NS, true, fr[i].incl.p99_ns);
	}
	const struct site_row *sr = NULL;
	size_t ns = sites ? site_table_rows(sites, &sr) : 0;
	for (size_t i = 0; i < ns; i++) {
		r = dump__add(rs, DK_SITE, sr[i].name, strlen(sr[i].name), side, 0);
		dump__fig(r, side, "allocs", DUMP_UNIT_COUNT, false, sr[i].allocs);
		dump__fig(r, side, "bytes", DUMP_UNIT_BYTES, false, sr[i].bytes);
		dump__fig(r, side, "size-p50", DUMP_UNIT_BYTES, false, sr[i].size_p50);
		dump__fig(r, side, "size-p99", DUMP_UNIT_BYTES, false, sr[i].size_p99);
	}
}

static int dump__by_key(const void *x, const void *y)
{
	const struct dump__row *a = x, *b = y;
	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->in[1] != b->in[1])
		return a->in[1] ? 1 : -1;
	return (a->order > b->order) - (a->order < b->order);
}

static int dump__by_key_occ(const void *x, const void *y)
{
	const struct dump__row *a = x, *b = y;
	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	if (a->occ != b->occ)
		return a->occ < b->occ ? -1 : 1;
	return a->in[1] - b->in[1];
}

/* (b - a) / a; INFINITY from 0 to more; 0 unchanged. */
static double dump__change(uint64_t a, uint64_t b)
{
	if (a == b)
		return 0;
	if (!a)
		return INFINITY;
	return ((double)b - (double)a) / (double)a;
}

static int dump__by_score(const void *x, const void *y)
{
	const struct dump__row *a = x, *b = y;
	if (a->score != b->score)
		return a->score < b->score ? 1 : -1;
	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	return strcmp(a->name, b->name);
}

static int dump__by_alt(const void *x, const void *y)
{
	const struct dump__row *a = *(const struct dump__row *const *)x,
			       *b = *(const struct dump__row *const *)y;
	if (a->kind != b->kind)
		return (int)a->kind - (int)b->kind;
	int c = strcmp(a->alt, b->alt);
	if (c)
		return c;
	if (a->in[1] != b->in[1])
		return a->in[1] ? 1 : -1;
	return (a->order > b->order) - (a->order < b->order);
}

/* Processes and threads left in one trace only after matching by command: paired by
 * executable (argv[0]), the k-th of A with the k-th of B, so that a run with other arguments
 * still meets its own. The row keeps A's name and says B's. */
static void dump__pair_by_executable(struct dump__rows *rs)
{
	size_t n = 0;
	struct dump__row **v = calloc(rs->n ? rs->n : 1, sizeof(*v));
	if (!v) {
		rs->nomem = true;
		return;
	}
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].alt && rs->v[i].in[0] != rs->v[i].in[1])
			v[n++] = &rs->v[i];
	qsort(v, n, sizeof(*v), dump__by_alt);
	for (size_t i = 0; i < n;) {
		size_t j = i, b = i;
		while (j < n && v[j]->kind == v[i]->kind && !strcmp(v[j]->alt, v[i]->alt))
			j++;
		while (b < j && !v[b]->in[1])
			b++;
		for (size_t a = i; a < b && b < j; a++, b++) {
			struct dump__row *ra = v[a], *rb = v[b];
			size_t la = strlen(ra->name), lb = strlen(rb->name);
			char *name = malloc(la + lb + 8);
			if (!name) {
				rs->nomem = true;
				break;
			}
			snprintf(name, la + lb + 8, "%s (B: %s)", ra->name, rb->name);
			free(ra->name);
			ra->name = name;
			ra->in[1] = true;
			for (unsigned k = 0; k < ra->n && k < rb->n; k++)
				ra->f[k].v[1] = rb->f[k].v[1];
			rb->gone = true;
		}
		i = j;
	}
	free(v);
	size_t k = 0;
	for (size_t i = 0; i < rs->n; i++) {
		if (rs->v[i].gone) {
			free(rs->v[i].name);
			free(rs->v[i].alt);
			continue;
		}
		rs->v[k++] = rs->v[i];
	}
	rs->n = k;
}

/* Pairs the rows of A and B (sorted by key, occurrences numbered), scores each. */
static void dump__merge(struct dump__rows *rs)
{
	qsort(rs->v, rs->n, sizeof(*rs->v), dump__by_key);
	for (size_t i = 0; i < rs->n; i++) {
		const struct dump__row *p = i ? &rs->v[i - 1] : NULL;
		rs->v[i].occ = p && p->kind == rs->v[i].kind && p->in[1] == rs->v[i].in[1] &&
					       !strcmp(p->name, rs->v[i].name)
				       ? p->occ + 1
				       : 0;
	}
	qsort(rs->v, rs->n, sizeof(*rs->v), dump__by_key_occ);
	size_t k = 0;
	for (size_t i = 0; i < rs->n; i++) {
		struct dump__row *r = &rs->v[i];
		struct dump__row *p = k ? &rs->v[k - 1] : NULL;
		if (p && p->in[0] && !p->in[1] && r->in[1] && p->kind == r->kind &&
		    p->occ == r->occ && !strcmp(p->name, r->name)) {
			p->in[1] = true;
			for (unsigned j = 0; j < p->n && j < r->n; j++)
				p->f[j].v[1] = r->f[j].v[1];
			free(r->name);
			free(r->alt);
			continue;
		}
		rs->v[k++] = *r;
	}
	rs->n = k;
	dump__pair_by_executable(rs);
	for (size_t i = 0; i < rs->n; i++) {
		struct dump__row *r = &rs->v[i];
		r->score = 0;
		if (!r->in[0] || !r->in[1]) {
			r->score = INFINITY;
			continue;
		}
		for (unsigned j = 0; j < r->n; j++) {
			double c = fabs(dump__change(r->f[j].v[0], r->f[j].v[1]));
			if (c > r->score)
				r->score = c;
		}
	}
	qsort(rs->v, rs->n, sizeof(*rs->v), dump__by_score);
}

/* Figures of B above A's by more than pct percent (a row only in B: its non-zero ones). */
static size_t dump__exceeded(const struct dump__row *r, double pct, bool ignore_times)
{
	size_t n = 0;
	for (unsigned j = 0; j < r->n; j++) {
		const struct dump__fig *f = &r->f[j];
		if (ignore_times && f->time)
			continue;
		uint64_t a = r->in[0] ? f->v[0] : 0, b = r->in[1] ? f->v[1] : 0;
		if (b > a && (a == 0 || ((double)b - (double)a) * 100.0 > pct * (double)a))
			n++;
	}
	return n;
}

static void dump__pct(double c)
{
	if (isinf(c))
		dump_str("new");
	else
		dump_printf("%+.1f%%", c * 100.0);
}

/* v for the text: "1.5 MiB", "300.000 us", "41" (--json has the exact figures). */
static const char *dump__fmt(enum dump_unit unit, uint64_t v, char *buf, size_t len)
{
	if (unit == DUMP_UNIT_BYTES)
		return cli_fmt_bytes(buf, len, v);
	if (unit == DUMP_UNIT_NS)
		return dump_fmt_ns(buf, len, v);
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

static void dump__text_row(const struct dump__row *r)
{
	dump_printf("%-8s %s: ", dump__kind_names[r->kind], r->name);
	if (!r->in[1]) {
		dump_str("only in A");
	} else if (!r->in[0]) {
		dump_str("only in B");
	}
	bool first = r->in[0] && r->in[1];
	for (unsigned j = 0; j < r->n; j++) {
		const struct dump__fig *f = &r->f[j];
		char a[64], b[64];
		if (r->in[0] && r->in[1] && f->v[0] == f->v[1])
			continue;
		dump_str(first ? "" : ", ");
		first = false;
		dump_str(f->name);
		dump_char(' ');
		if (r->in[0] && r->in[1]) {
			dump_printf("%s -> %s (", dump__fmt(f->unit, f->v[0], a, sizeof(a)),
				    dump__fmt(f->unit, f->v[1], b, sizeof(b)));
			dump__pct(dump__change(f->v[0], f->v[1]));
			dump_char(')');
		} else {
			dump_str(dump__fmt(f->unit, f->v[r->in[1]], a, sizeof(a)));
		}
	}
	dump_char('\n');
}

static const char *const dump__unit_names[] = {"count", "bytes", "ns"};

static void dump__json_change(double c)
{
	if (isinf(c) || isnan(c))
		dump_str("null");
	else
		dump_printf("%.6g", c);
}

static void dump__json(const struct dump__rows *rs, const char *pa, const char *pb, double pct,
		       size_t exceeded, size_t unchanged)
{
	dump_str("{\"a\":");
	dump_json_str(pa, strlen(pa));
	dump_str(",\"b\":");
	dump_json_str(pb, strlen(pb));
	dump_str(",\"threshold_pct\":");
	if (pct < 0)
		dump_str("null");
	else
		dump_printf("%.6g", pct);
	dump_printf(",\"exceeded\":%zu,\"unchanged\":%zu,\"rows\":[", exceeded, unchanged);
	for (size_t i = 0; i < rs->n; i++) {
		const struct dump__row *r = &rs->v[i];
		dump_str(i ? ",\n{\"kind\":\"" : "\n{\"kind\":\"");
		dump_str(dump__kind_names[r->kind]);
		dump_str("\",\"name\":");
		dump_json_str(r->name, strlen(r->name));
		dump_printf(",\"in_a\":%s,\"in_b\":%s,\"change\":", r->in[0] ? "true" : "false",
			    r->in[1] ? "true" : "false");
		dump__json_change(r->score);
		dump_str(",\"figures\":[");
		for (unsigned j = 0; j < r->n; j++) {
			const struct dump__fig *f = &r->f[j];
			dump_printf("%s{\"name\":\"%s\",\"unit\":\"%s\",\"a\":", j ? "," : "",
				    f->name, dump__unit_names[f->unit]);
			if (r->in[0])
				dump_u64(f->v[0]);
			else
				dump_str("null");
			dump_str(",\"b\":");
			if (r->in[1])
				dump_u64(f->v[1]);
			else
				dump_str("null");
			dump_str(",\"change\":");
			if (r->in[0] && r->in[1])
				dump__json_change(dump__change(f->v[0], f->v[1]));
			else
				dump_str("null");
			dump_char('}');
		}
		dump_str("]}");
	}
	dump_str("]}\n");
}

/* The sites of r: one pass over each thread stream (flame.h needs only each stream's order). */
static struct site_table *dump__sites(struct trcfile_reader *r, struct sym_resolver *syms, int *err)
{
	struct site_table *t = site_table_new(r);
	struct trc_record *recs = malloc(256 * sizeof(*recs));
	*err = -ENOMEM;
	if (!t || !recs)
		goto fail;
	unsigned ns = trcfile_reader_stream_count(r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (si->kind != TRC_STREAM_THREAD)
			continue;
		struct trcfile_cursor *c = trcfile_cursor_new(r, s);
		if (!c)
			goto fail;
		int n;
		while ((n = trcfile_cursor_read(c, recs, 256)) > 0)
			for (int i = 0; i < n; i++)
				if (site_table_add(t, s, si, &recs[i]) != 0) {
					trcfile_cursor_free(c);
					goto fail;
				}
		trcfile_cursor_free(c);
		if (n < 0) {
			*err = n;
			goto fail;
		}
	}
	if (site_table_finish(t, r, syms) != 0)
		goto fail;
	free(recs);
	*err = 0;
	return t;
fail:
	free(recs);
	site_table_free(t);
	return NULL;
}

/* PCT as typed: a finite number >= 0, with or without '%'. */
static int dump__parse_pct(const char *s, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0 || (*end && strcmp(end, "%")) ||
	    s[0] == '+' || s[0] == ' ')
		return -EINVAL;
	*out = v;
	return 0;
}

int dump_diff_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"threshold", required_argument, NULL, 't'},
		{"ignore-times", no_argument, NULL, 'i'},
		{"top", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, ignore_times = false;
	double pct = -1;
	uint64_t top = 30;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (dump_value_missing(argv[0], argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 'j':
			json = true;
			break;
		case 't':
			if (dump__parse_pct(optarg, &pct))
				return dump_usage_error(argv[0],
							"--threshold: expected a percentage (10 or "
							"10%%), got \"%s\"",
							optarg);
			break;
		case 'i':
			ignore_times = true;
			break;
		case 'n': {
			char *end = NULL;
			errno = 0;
			top = strtoull(optarg, &end, 10);
			if (!*optarg || *end || errno || optarg[0] == '-')
				return dump_usage_error(
					argv[0], "--top: expected a number of rows, got \"%s\"",
					optarg);
			break;
		}
		case 'h':
			fputs(dump__diff_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(argv[0], c, argv, opts);
		}
	}
	if (argc - optind != 2)
		return dump_usage_error(argv[0], "two FILEs expected (A B), got %d", argc - optind);
	if (ignore_times && pct < 0)
		return dump_usage_error(argv[0], "--ignore-times needs --threshold");
	const char *path[2] = {argv[optind], argv[optind + 1]};
	struct trcfile_reader *r[2] = {NULL, NULL};
	struct dump_figures f[2];
	struct site_table *sites[2] = {NULL, NULL};
	bool have[2] = {false, false};
	struct dump__rows rs = {0};
	int rc = DUMP_EXIT_FAIL;
	for (int i = 0; i < 2; i++) {
		r[i] = dump_open(path[i], false);
		if (!r[i])
			goto out;
		if (dump_figures_compute(r[i], path[i], FUNC_SORT_NAME, &f[i]) != DUMP_EXIT_OK)
			goto out;
		have[i] = true;
		int err = 0;
		if (f[i].s.allocs && !(sites[i] = dump__sites(r[i], f[i].syms, &err))) {
			dump_error("%s: %s", path[i],
				   err == -ENOMEM || !trcfile_reader_errmsg(r[i])[0]
					   ? "out of memory"
					   : trcfile_reader_errmsg(r[i]));
			goto out;
		}
		dump__collect(&rs, i, &f[i], sites[i]);
	}
	if (rs.nomem) {
		dump_error("out of memory");
		goto out;
	}
	dump__merge(&rs);
	if (rs.nomem) {
		dump_error("out of memory");
		goto out;
	}
	size_t exceeded = 0, unchanged = 0;
	for (size_t i = 0; i < rs.n; i++) {
		if (pct >= 0)
			exceeded += dump__exceeded(&rs.v[i], pct, ignore_times);
		unchanged += rs.v[i].score == 0;
	}
	if (json) {
		dump__json(&rs, path[0], path[1], pct, exceeded, unchanged);
	} else {
		size_t changed = rs.n - unchanged;
		dump_printf("A %s\nB %s\n", path[0], path[1]);
		if (!changed)
			dump_str("no figure changed\n");
		else
			dump_printf("%zu of %zu rows changed, largest change first:\n", changed,
				    rs.n);
		for (size_t i = 0; i < changed && (!top || i < top); i++) {
			dump_str("  ");
			dump__text_row(&rs.v[i]);
		}
		if (top && changed > top)
			dump_printf("  (%zu more changed rows: --top 0 shows all)\n",
				    changed - top);
		if (pct >= 0)
			dump_printf("threshold %.6g%%%s: %zu %s above it\n", pct,
				    ignore_times ? " (times ignored)" : "", exceeded,
				    exceeded == 1 ? "figure" : "figures");
	}
	rc = exceeded ? DUMP_EXIT_FAIL : DUMP_EXIT_OK;
	if (rc != DUMP_EXIT_OK)
		dump_flush(); /* main flushes only on success */
out:
	for (size_t i = 0; i < rs.n; i++) {
		free(rs.v[i].name);
		free(rs.v[i].alt);
	}
	free(rs.v);
	for (int i = 0; i < 2; i++) {
		site_table_free(sites[i]);
		if (have[i])
			dump_figures_free(&f[i]);
		if (r[i] && rc != DUMP_EXIT_FAIL)
			dump_close(r[i], path[i]);
		else if (r[i])
			dump_reader_free(r[i]);
	}
	return rc;
}
