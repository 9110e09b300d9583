/* dump_functions.c - the summary's function table (src/analysis/functions.h), computed and
 * printed for `trace-dump summary` (text and --json "functions").
 *
 * The table is its own pass over the thread streams, one cursor per stream (a function's calls
 * and their nesting are per thread: no merge needed), and runs only when the trace holds
 * function records. Both show a row per function in each process (a forked child's calls are
 * its own): text the first DUMP_FUNCTIONS_TEXT_ROWS rows in the chosen order, with a pid
 * column when more than one process made calls (one process: the table as it always was), JSON
 * every row with its pid.
 *
 * Threads: trace-dump's one thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "dump_functions.h"

struct func_table *dump_functions_compute(struct trcfile_reader *r, struct sym_resolver *syms,
					  enum func_sort key, int *err)
{
	struct func_table *t = func_table_new();
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
				if (func_table_add(t, s, si, &recs[i]) != 0) {
					trcfile_cursor_free(c);
					goto fail;
				}
		trcfile_cursor_free(c);
		if (n < 0) {
			*err = n;
			goto fail;
		}
	}
	if (func_table_finish(t, r, syms, key) != 0)
		goto fail;
	free(recs);
	*err = 0;
	return t;
fail:
	free(recs);
	func_table_free(t);
	return NULL;
}

static const char *const dump__sort_names[] = {
	[FUNC_SORT_SELF] = "self time", [FUNC_SORT_TOTAL] = "total time",
	[FUNC_SORT_CALLS] = "calls",	[FUNC_SORT_MAX] = "longest call",
	[FUNC_SORT_NAME] = "name",
};

/* The text table's name column: a name longer than this (a C++ signature runs to hundreds of
 * characters) is cut to fit with "...", so every row stays one line; --json keeps it whole. */
#define DUMP__FUNC_NAME_COLS 60

/* name as the text table shows it, in out (DUMP__FUNC_NAME_COLS + 1 bytes): whole when it
 * fits, else its start cut at a character boundary (never inside a UTF-8 sequence) and "...". */
static const char *dump__func_name_cut(const char *name, char *out)
{
	size_t n = strlen(name);
	if (n <= DUMP__FUNC_NAME_COLS)
		return name;
	size_t k = DUMP__FUNC_NAME_COLS - 3;
	while (k > 0 && ((unsigned char)name[k] & 0xc0) == 0x80)
		k--;
	memcpy(out, name, k);
	memcpy(out + k, "...", 4);
	return out;
}

void dump_functions_text(const struct func_table *t, enum func_sort key)
{
	char cut[DUMP__FUNC_NAME_COLS + 1];
	const struct func_row *rows;
	unsigned n_procs = 0;
	size_t n = func_table_process_rows(t, &rows, &n_procs);
	bool pids = n_procs > 1;
	char b[10][32];
	if (pids)
		dump_printf(
			"\nfunctions (by %s, in each of %u processes; inclusive time, then self "
			"time):\n",
			dump__sort_names[key], n_procs);
	else
		dump_printf("\nfunctions (by %s; inclusive time, then self time):\n",
			    dump__sort_names[key]);
	int cols = 28; /* the widest name shown, cut or not: the columns line up */
	for (size_t i = 0; i < n && i < DUMP_FUNCTIONS_TEXT_ROWS; i++) {
		int w = (int)strlen(dump__func_name_cut(rows[i].name, cut));
		cols = w > cols ? w : cols;
	}
	if (pids)
		dump_printf("  %8s", "pid");
	dump_printf("  %-*s %9s %11s %11s %11s %11s %11s %11s %11s %11s\n", cols, "name", "calls",
		    "total", "mean", "p50", "p99", "max", "self", "self mean", "self p99");
	for (size_t i = 0; i < n && i < DUMP_FUNCTIONS_TEXT_ROWS; i++) {
		const struct func_row *f = &rows[i];
		if (pids)
			dump_printf("  %8" PRIu32, f->pid);
		dump_printf("  %-*s %9" PRIu64 " %11s %11s %11s %11s %11s %11s %11s %11s\n", cols,
			    dump__func_name_cut(f->name, cut), f->calls,
			    dump_fmt_ns(b[0], sizeof(b[0]), f->incl.total_ns),
			    dump_fmt_ns(b[1], sizeof(b[1]), f->incl.mean_ns),
			    dump_fmt_ns(b[2], sizeof(b[2]), f->incl.p50_ns),
			    dump_fmt_ns(b[3], sizeof(b[3]), f->incl.p99_ns),
			    dump_fmt_ns(b[4], sizeof(b[4]), f->incl.max_ns),
			    dump_fmt_ns(b[5], sizeof(b[5]), f->self.total_ns),
			    dump_fmt_ns(b[6], sizeof(b[6]), f->self.mean_ns),
			    dump_fmt_ns(b[7], sizeof(b[7]), f->self.p99_ns));
	}
	if (n > DUMP_FUNCTIONS_TEXT_ROWS)
		dump_printf("  (%zu more %s: summary --json lists every one)\n",
			    n - DUMP_FUNCTIONS_TEXT_ROWS, pids ? "rows" : "functions");
	uint64_t unmatched, unclosed, unfinished;
	func_table_counts(t, &unmatched, &unclosed, &unfinished);
	if (unmatched || unclosed || unfinished)
		dump_printf("  (%" PRIu64 " exits without an entry, %" PRIu64
			    " calls closed by an outer exit, %" PRIu64 " calls open at the end)\n",
			    unmatched, unclosed, unfinished);
}

static void dump__stat_json(const char *prefix, const struct func_stat *s)
{
	dump_printf(",\"%stotal_ns\":%" PRIu64 ",\"%smean_ns\":%" PRIu64 ",\"%sp50_ns\":%" PRIu64
		    ",\"%sp99_ns\":%" PRIu64 ",\"%smax_ns\":%" PRIu64,
		    prefix, s->total_ns, prefix, s->mean_ns, prefix, s->p50_ns, prefix, s->p99_ns,
		    prefix, s->max_ns);
}

void dump_functions_json(const struct func_table *t)
{
	const struct func_row *rows = NULL;
	size_t n = t ? func_table_process_rows(t, &rows, NULL) : 0;
	dump_str(",\"functions\":[");
	for (size_t i = 0; i < n; i++) {
		/* pid last: the members before it are where they always were */
		dump_str(i ? ",{\"name\":" : "{\"name\":");
		dump_json_str(rows[i].name, strlen(rows[i].name));
		dump_printf(",\"calls\":%" PRIu64, rows[i].calls);
		dump__stat_json("", &rows[i].incl);
		dump__stat_json("self_", &rows[i].self);
		dump_printf(",\"pid\":%" PRIu32 "}", rows[i].pid);
	}
	dump_char(']');
	uint64_t unmatched = 0, unclosed = 0, unfinished = 0;
	if (t)
		func_table_counts(t, &unmatched, &unclosed, &unfinished);
	dump_printf(",\"function_exits_unmatched\":%" PRIu64 ",\"function_calls_unclosed\":%" PRIu64
		    ",\"function_calls_open_at_end\":%" PRIu64,
		    unmatched, unclosed, unfinished);
}
