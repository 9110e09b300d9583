/* run_compact.h - compress the chunks trace-run's recorder wrote stored (run_compact.c). */
#ifndef TRC_RUN_COMPACT_H
#define TRC_RUN_COMPACT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct trcfile_bgc;

/* What run_compact did. */
struct run_compact_stats {
	double seconds; /* the time it took */
	uint64_t background; /* stored chunks whose background copy was taken */
	uint64_t at_end; /* stored chunks compressed here */
	uint64_t refused; /* background copies that did not match their chunk (of at_end) */
	char why[512]; /* on failure: what went wrong */
};

/* Rewrites output with every chunk compressed (all cores), through an unnamed temporary file
 * renamed over it (synced first), taking the stored chunks already compressed in the
 * background from bgc (stopped; may be NULL); progress: a live line on stderr. written: what
 * stat(2) said of output when the writer had opened it; only that file is replaced, and only
 * when it is a regular file of one link (through a symlink: its target). Otherwise, and on any
 * failure, leaves output as it was (complete, with its stored chunks) and says why in
 * st->why; run_compact_warn prints the caller's warning. *st: what it did. Returns 0 or
 * -errno. Does not free bgc. */
int run_compact(const char *output, const struct stat *written, int zstd_level, bool progress,
		const struct trcfile_bgc *bgc, struct run_compact_stats *st);

/* The one-line warning of a failed run_compact (the trace stays complete as it is). */
void run_compact_warn(const char *output, const struct run_compact_stats *st);

#endif /* TRC_RUN_COMPACT_H */
