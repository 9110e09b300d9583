/* rss_source.h - read one process's RSS from /proc with one pread per file per sample.
 *
 * Purpose: keep /proc/PID/<file> open and pread it from offset 0 on every sample, which costs
 * one syscall (~1.2 us for statm here) instead of open+read+close (~5 us), then hand the text
 * to the pure parsers of rss_parse.h. `both` reads two files (statm and smaps_rollup).
 *
 * Gone: a process that has exited (the kept-open file gives ESRCH or ENOENT), or a zombie
 * (statm reads all zeros, status has no memory lines) is reported as -ESRCH, never as a sample
 * of 0 bytes. The open files pin the struct pid, not the number, so a recycled pid is never
 * read by mistake.
 *
 * exec: smaps_rollup's file holds the mm it was opened on; after the process execs, that mm
 * is gone and the read fails with ESRCH although the process lives. The reader then reopens
 * the file once and reads again, so a sampler started between fork and exec keeps working.
 *
 * Threads: a reader belongs to one thread at a time (the sampler thread); no locking.
 */
#ifndef TRC_RSS_SOURCE_H
#define TRC_RSS_SOURCE_H

#include <stdint.h>
#include <sys/types.h>

#include "rss_parse.h"

struct rss_reader;

/* Opens the file(s) of `source` for pid. Returns the reader, or NULL with *err = -ESRCH (no
 * such process), -EINVAL (bad pid or source), -EACCES, -ENOMEM, -EMFILE... Any thread. */
struct rss_reader *rss_reader_open(pid_t pid, enum trc_rss_source source, int *err);

/* Reads the figures: one pread per file (plus, once in the reader's life, one more when the
 * text outgrows the buffer, or a reopen after exec). Returns 0, -ESRCH when the process is
 * gone, a parse error of rss_parse.h (-EINVAL, -ENODATA, -ERANGE) or a read error (-errno).
 * *out is written only on success. Blocks only as long as the kernel takes to print the file. */
int rss_reader_read(struct rss_reader *r, struct trc_rss_figures *out);

/* Closes the files and frees the reader. Accepts NULL. */
void rss_reader_close(struct rss_reader *r);

#endif /* TRC_RSS_SOURCE_H */
