/* dump_symbols.c - the function-name resolver of trace-dump (dump_symbols.h): the analysis
 * code finds the names; only tools print, so its one-line warnings (a module file gone,
 * changed or stripped) are printed here, on stderr, once per file.
 *
 * Threads: trace-dump's one thread.
 */
#include <stdio.h>

#include "dump_common.h"
#include "dump_symbols.h"

static void dump__symbols_warn(void *ctx, const char *msg)
{
	(void)ctx;
	dump_flush(); /* the warning after what was printed before it, when both go to a tty */
	fprintf(stderr, "trace-dump: %s\n", msg);
}

struct sym_resolver *dump_symbols_new(const struct trcfile_reader *r)
{
	return sym_resolver_new(r, dump__symbols_warn, NULL);
}
