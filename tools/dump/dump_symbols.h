/* dump_symbols.h - how trace-dump names function addresses (tools/dump/dump_symbols.c): the
 * resolver the subcommands share (src/analysis/symbols.h), with its warnings printed once each
 * on stderr as "trace-dump: MESSAGE". dump_func_name and dump_func_names_release are declared
 * in dump_common.h, which every subcommand includes. Threads: trace-dump's one thread. */
#ifndef TRC_DUMP_SYMBOLS_H
#define TRC_DUMP_SYMBOLS_H

#include "symbols.h"

/* A resolver over r's modules; NULL when out of memory (then addresses show module+offset). */
struct sym_resolver *dump_symbols_new(const struct trcfile_reader *r);
/* The same with the caller's warn (which prints "trace-dump: MESSAGE" after what it has made
 * is written: chrome's own buffer, then trace-dump's). */
struct sym_resolver *dump_symbols_new_warn(const struct trcfile_reader *r, sym_warn_fn warn,
					   void *ctx);

#endif /* TRC_DUMP_SYMBOLS_H */
