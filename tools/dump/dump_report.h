/* dump_report.h - what `trace-dump report`'s files share (dump_report.c, dump_report_assets.c).
 * Threads: trace-dump's one thread. */
#ifndef TRC_DUMP_REPORT_H
#define TRC_DUMP_REPORT_H

/* The page's script and style sheet, NUL-terminated (dump_report_assets.c). */
extern const char dump_report_js[];
extern const char dump_report_css[];

/* Rows and series the page holds at most, whatever the trace (the bound the README states). */
#define DUMP_REPORT_RSS_PROCS 24u /* processes charted: the largest RSS */
#define DUMP_REPORT_PROCS 500u /* processes listed */
#define DUMP_REPORT_ROWS 200u /* spans, functions: by total time */
#define DUMP_REPORT_THREADS 256u /* threads: by events */
#define DUMP_REPORT_NAME_BYTES 200u /* names cut to this */
#define DUMP_REPORT_LEVELS 100u /* a thread's activity per column, 0..99 */

#endif /* TRC_DUMP_REPORT_H */
