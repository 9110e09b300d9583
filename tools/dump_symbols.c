/* dump_symbols.c - the function-name resolver of trace-dump (dump_symbols.h): the analysis
 * code finds the names; only tools print, so its one-line warnings (a module file gone,
 * changed or stripped) are printed here, on stderr, once per file.
 *
 * Threads: trace-dump's one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "dump_symbols.h"

static void dump__symbols_warn(void *ctx, const char *msg)
{
	(void)ctx;
	dump_flush(); /* the warning after what was printed before it, when both go to a tty */
	fprintf(stderr, "trace-dump: %s\n", msg);
}

/* elfutils asks the debuginfod servers of DEBUGINFOD_URLS (set for every login shell where
 * debuginfod's profile script is installed) for the debug file of a module it cannot find
 * locally: a trace would choose which build-ids trace-dump looks up over the network, and a
 * slow server would stall the dump. Off unless TRC_DEBUGINFOD=1 asks for it; elfutils reads
 * DEBUGINFOD_URLS when it queries, so clearing it before the first resolver suffices. */
static void dump__symbols_no_network(void)
{
	const char *on = getenv("TRC_DEBUGINFOD");
	if (!on || strcmp(on, "1") != 0)
		unsetenv("DEBUGINFOD_URLS");
}

struct sym_resolver *dump_symbols_new(const struct trcfile_reader *r)
{
	dump__symbols_no_network();
	return sym_resolver_new(r, dump__symbols_warn, NULL);
}
