/* run_compact.h - compress the chunks trace-run's recorder wrote stored (run_compact.c). */
#ifndef TRC_RUN_COMPACT_H
#define TRC_RUN_COMPACT_H

#include <stdbool.h>

/* Rewrites output with every chunk compressed (all cores), through a temporary file renamed
 * over it; progress: a live line on stderr. On failure prints a warning and leaves output as it
 * was (complete, with its stored chunks). *seconds (may be NULL): the time it took. Returns 0
 * or -errno. */
int run_compact(const char *output, int zstd_level, bool progress, double *seconds);

#endif /* TRC_RUN_COMPACT_H */
