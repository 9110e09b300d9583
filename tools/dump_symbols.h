/* dump_symbols.h - the function-name resolver the trace-dump subcommands share
 * (src/analysis/symbols.h), with its warnings printed once each on stderr as
 * "trace-dump: MESSAGE". Threads: trace-dump's one thread. */
#ifndef TRC_DUMP_SYMBOLS_H
#define TRC_DUMP_SYMBOLS_H

#include "symbols.h"

/* A resolver over r's modules; NULL when out of memory (then addresses show module+offset). */
struct sym_resolver *dump_symbols_new(const struct trcfile_reader *r);

#endif /* TRC_DUMP_SYMBOLS_H */
