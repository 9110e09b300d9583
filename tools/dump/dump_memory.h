/* dump_memory.h - "what made RSS grow" (src/analysis/memory.h) as `trace-dump memory` prints
 * it, and the summary's top five (dump_memory.c). Threads: trace-dump's one thread. */
#ifndef TRC_DUMP_MEMORY_H
#define TRC_DUMP_MEMORY_H

#include "memory.h"

#define DUMP_MEMORY_SUMMARY_ROWS 5u

/* The feed of the report the summary shows (innermost sites, the largest one per interval),
 * for summary_compute_feeding; NULL with *err = -errno (message in the reader; -ENOMEM: out
 * of memory). */
struct memory_feed *dump_memory_feed_for_summary(struct trcfile_reader *r,
						 struct sym_resolver *syms, int *err);
/* The summary's text section (nothing when no interval grew) and its JSON member
 * `,"memory":[...]` (the DUMP_MEMORY_SUMMARY_ROWS intervals of largest growth). start: the
 * time relative times count from. */
void dump_memory_summary_text(const struct memory_report *m, uint64_t start);
/* The largest allocation sites over the run (text). */
void dump_memory_summary_sites_text(const struct memory_report *m);
void dump_memory_summary_json(const struct memory_report *m, uint64_t start);

#endif /* TRC_DUMP_MEMORY_H */
