/* dump_figures.h - one trace's figures as `trace-dump summary` computes them, for every
 * subcommand that shows or judges them (summary, check, diff, report; dump_figures.c).
 *
 * Purpose: check's rules, diff's rows and the report's tables must show the same numbers as
 * `summary --json`; computing them in one place is what keeps them equal.
 *
 * Threads: trace-dump's one thread.
 */
#ifndef TRC_DUMP_FIGURES_H
#define TRC_DUMP_FIGURES_H

#include <stdbool.h>

#include "functions.h"
#include "memory.h"
#include "summary.h"
#include "symbols.h"

/* The summary with what made RSS grow (the top five rides on the summary's merged pass) and,
 * only when there are function records, the function table (its own pass), named from the
 * trace's own modules (syms). */
struct dump_figures {
	struct summary s;
	struct memory_report mem;
	struct func_table *ft; /* NULL: no function records */
	struct sym_resolver *syms; /* NULL: out of memory (addresses as module+offset) */
	bool have_summary;
};

/* Fills f from r (path names it in the one-line error). DUMP_EXIT_OK or DUMP_EXIT_FAIL (said;
 * f then holds nothing). */
int dump_figures_compute(struct trcfile_reader *r, const char *path, enum func_sort sort,
			 struct dump_figures *f);
/* The same, handing chunk(chunk_ctx, ...) the summary's chunks (summary_compute_chunks). */
int dump_figures_compute_chunks(struct trcfile_reader *r, const char *path, enum func_sort sort,
				summary_chunk_fn chunk, void *chunk_ctx, struct dump_figures *f);
/* Frees what f holds and zeroes it; accepts a zeroed f. */
void dump_figures_free(struct dump_figures *f);

#endif /* TRC_DUMP_FIGURES_H */
