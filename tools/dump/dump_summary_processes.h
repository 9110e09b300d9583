/* dump_summary_processes.h - the summary's memory of every process: the program's peak line,
 * the process table, the tree's total over time, and their JSON (dump_summary_processes.c).
 *
 * Threads: the dump's thread (dump_common.h's output).
 */
#ifndef TRC_DUMP_SUMMARY_PROCESSES_H
#define TRC_DUMP_SUMMARY_PROCESSES_H

#include <stdbool.h>
#include <stdint.h>

#include "summary.h"

/* One bar per column, then "  (lo .. hi)\n". */
void dump_sparkline(const uint64_t *cols, unsigned n);
/* "  peak:      ..." for the program: exact, an interval, sampled or unknown. */
void dump_summary_peak_text(const struct summary *s);
/* The process table and the tree's total over time (nothing for a single process). */
void dump_summary_processes_text(const struct summary *s);
/* ,"rss_peak_high_bytes":..,"rss_peak_exact":..,"processes":[...],"tree_rss_spark_bytes":[..] */
void dump_summary_processes_json(const struct summary *s);

#endif /* TRC_DUMP_SUMMARY_PROCESSES_H */
