/* dump_functions.h - the function table of `trace-dump summary` (dump_functions.c).
 * Threads: trace-dump's one thread. */
#ifndef TRC_DUMP_FUNCTIONS_H
#define TRC_DUMP_FUNCTIONS_H

#include "functions.h"

#define DUMP_FUNCTIONS_TEXT_ROWS 20u

/* The table of r's function records, rows named through syms (may be NULL) and sorted by key;
 * NULL with *err = -ENOMEM or the reader's error (message in the reader). */
struct func_table *dump_functions_compute(struct trcfile_reader *r, struct sym_resolver *syms,
					  enum func_sort key, int *err);

/* The text section ("functions (by ...):" and the table, first DUMP_FUNCTIONS_TEXT_ROWS). */
void dump_functions_text(const struct func_table *t, enum func_sort key);

/* The JSON members `,"functions":[...]` and the unmatched counts (t NULL: an empty list). */
void dump_functions_json(const struct func_table *t);

#endif /* TRC_DUMP_FUNCTIONS_H */
