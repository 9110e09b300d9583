/* functions.h - the summary's function table: calls, inclusive and self time per function,
 * from FUNC_ENTER/FUNC_EXIT records (programs built with -finstrument-functions).
 *
 * Purpose: `trace-dump summary` (text and --json "functions"). Each thread stream keeps a
 * stack of open calls; an exit closes the innermost open call of its address (calls above it
 * that never exited close with it, counted as unmatched); an exit with no such call open is
 * counted and ignored. Inclusive time = exit - entry; self time = inclusive minus the
 * inclusive time of the calls made from it. Calls still open at the end of the trace are not
 * timed (counted in unfinished). A function's inclusive total counts only its outermost calls
 * on each thread, the calls with no call of the same function below them, so a recursive
 * function's total is the time it was active, never more than its threads ran (as uftrace's
 * report counts it); its mean, percentiles and max are those of every call, nested ones
 * included, and self time is every call's own.
 *
 * Rows: one per function name (addresses are named through the symbol resolver; the same
 * function in several processes is one row: check's rules, diff and the report), and one per
 * function name in each process (the summary: a forked child's calls are its own), with
 * total, mean, p50, p99 and max of both times. Percentiles come from a log-linear histogram
 * (32 sub-buckets per power of two, within 3 % of the exact value; groups allocated as used),
 * so memory grows with functions, not calls.
 *
 * Threads: one thread per table.
 */
#ifndef TRC_FUNCTIONS_H
#define TRC_FUNCTIONS_H

#include <stdint.h>

#include "symbols.h"
#include "trcfile.h"

struct func_stat {
	uint64_t total_ns, max_ns, p50_ns, p99_ns; /* total_ns of incl: outermost calls only */
	uint64_t mean_ns;
};

struct func_row {
	const char *name; /* owned by the table */
	uint32_t pid; /* the process (func_table_process_rows); 0 in func_table_rows */
	uint64_t calls; /* completed calls (timed) */
	struct func_stat incl, self;
};

enum func_sort {
	FUNC_SORT_SELF = 0, /* self total, descending (the default) */
	FUNC_SORT_TOTAL, /* inclusive total, descending */
	FUNC_SORT_CALLS, /* calls, descending */
	FUNC_SORT_MAX, /* inclusive max, descending */
	FUNC_SORT_NAME /* name, ascending */
};

struct func_table;

struct func_table *func_table_new(void);
void func_table_free(struct func_table *t);

/* Feeds one record of stream sidx (si its info), in stream order. 0 or -ENOMEM. */
int func_table_add(struct func_table *t, unsigned sidx, const struct trcfile_stream_info *si,
		   const struct trc_record *rec);

/* Names and merges the functions (syms may be NULL: module+offset), sorts the rows by key
 * (ties by name); rows stay valid until func_table_free. 0 or -ENOMEM. */
int func_table_finish(struct func_table *t, const struct trcfile_reader *r,
		      struct sym_resolver *syms, enum func_sort key);
size_t func_table_rows(const struct func_table *t, const struct func_row **rows);
/* The rows of each process, sorted by the same key (ties by name, then pid); *n_processes (when
 * not NULL) gets the number of distinct pids among them. */
size_t func_table_process_rows(const struct func_table *t, const struct func_row **rows,
			       unsigned *n_processes);

/* Exits that closed no open call; calls closed by an outer exit; calls open at the end. */
void func_table_counts(const struct func_table *t, uint64_t *unmatched_exits, uint64_t *unclosed,
		       uint64_t *unfinished);

/* The sort key named s ("self", "total", "calls", "max", "name"); false when unknown. */
bool func_sort_parse(const char *s, enum func_sort *out);

#endif /* TRC_FUNCTIONS_H */
