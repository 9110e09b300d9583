/* dump_export.h - how trace-dump's exporting subcommands hand their output to src/export:
 * a sink onto trace-dump's one output path (dump_common.h: buffered, its error policy), and
 * the namer every subcommand names functions with (dump_func_name). tools/dump/dump_export.c.
 *
 * Threads: trace-dump's one thread.
 */
#ifndef TRC_DUMP_EXPORT_H
#define TRC_DUMP_EXPORT_H

#include <stdbool.h>

#include "dump_common.h"
#include "export.h"

/* The state of a sink onto dump_out. With of set, the first write opens of's next file
 * (dump_outfile_next), so an export that fails before writing leaves no file. failed: that
 * open failed, its message printed (the export then fails with -EIO). */
struct dump_export_out {
	struct dump_outfile *of;
	bool opened, failed;
	bool direct; /* large writes straight to the output, after what is buffered */
};

/* A sink writing through dump_write: a write error ends trace-dump there, as every output of
 * trace-dump does (dump_out.c), so the export sees only an open's failure. */
struct export_sink dump_export_sink(struct dump_export_out *out);

/* A sink writing to *fd with write(2) (EINTR retried): -errno on an error, which the export
 * returns (parquet's tables). */
struct export_sink dump_export_fd_sink(int *fd);

/* Functions named by dump_func_name (symbols, else module+offset, else the address). */
struct export_namer dump_export_namer(void);

#endif /* TRC_DUMP_EXPORT_H */
