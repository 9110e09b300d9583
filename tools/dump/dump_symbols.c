/* dump_symbols.c - how trace-dump names a function address: the one place for it.
 *
 * Purpose: every subcommand shows function frames (func_enter/exit records) by name: the
 * function's name from the module's symbol tables (src/analysis/symbols.c, C++ demangled), else
 * the module and the offset in it ("prog+0x2136"), else the bare address when no module record
 * covers it. The analysis code finds the names; only tools print, so the resolver's one-line
 * warnings (a module file gone, changed, stripped or not a regular file) are printed here, on
 * stderr, once per file. Two ways in: dump_symbols_new for a command that keeps its own
 * resolver (chrome, events, flame, memory, summary), and dump_func_name, whose resolver of each
 * reader is made here on first use and freed by dump_func_names_release, which dump_close and
 * dump_reader_free call before the reader is closed.
 *
 * Threads: trace-dump's one thread; the table of resolvers is a global.
 */
#include <inttypes.h>
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

struct sym_resolver *dump_symbols_new_warn(const struct trcfile_reader *r, sym_warn_fn warn,
					   void *ctx)
{
	dump__symbols_no_network();
	return sym_resolver_new(r, warn, ctx);
}

struct sym_resolver *dump_symbols_new(const struct trcfile_reader *r)
{
	return dump_symbols_new_warn(r, dump__symbols_warn, NULL);
}

/* One resolver per open reader (several FILEs: one each). s NULL after an out-of-memory
 * failure: that reader's addresses keep module+offset. */
struct dump__names {
	const struct trcfile_reader *r;
	struct sym_resolver *s;
};
static struct dump__names *dump__names;
static size_t dump__n_names, dump__cap_names;

static struct sym_resolver *dump__resolver(const struct trcfile_reader *r)
{
	for (size_t i = 0; i < dump__n_names; i++)
		if (dump__names[i].r == r)
			return dump__names[i].s;
	if (dump__n_names == dump__cap_names) {
		size_t cap = dump__cap_names ? 2 * dump__cap_names : 4;
		struct dump__names *n = realloc(dump__names, cap * sizeof(*n));
		if (!n)
			return NULL;
		dump__names = n;
		dump__cap_names = cap;
	}
	struct sym_resolver *s = dump_symbols_new(r);
	dump__names[dump__n_names++] = (struct dump__names){r, s};
	return s;
}

void dump_func_names_release(const struct trcfile_reader *r)
{
	for (size_t i = 0; i < dump__n_names; i++) {
		if (dump__names[i].r != r)
			continue;
		sym_resolver_free(dump__names[i].s);
		dump__names[i] = dump__names[--dump__n_names];
		break;
	}
	if (!dump__n_names) {
		free(dump__names);
		dump__names = NULL;
		dump__cap_names = 0;
	}
}

size_t dump_func_name(const struct trcfile_reader *r, uint32_t pid, uint64_t addr, char *buf,
		      size_t len)
{
	if (!len)
		return 0;
	struct sym_resolver *s = dump__resolver(r);
	struct sym_info si;
	const struct trcfile_module *m;
	int k;
	if (s && sym_resolve(s, pid, addr, &si) == 0 && si.name) {
		k = snprintf(buf, len, "%s", si.name);
	} else if ((m = trcfile_reader_module(r, pid, addr))) {
		const char *base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		k = snprintf(buf, len, "%.256s+0x%" PRIx64, base, addr - m->start + m->offset);
	} else {
		k = snprintf(buf, len, "0x%" PRIx64, addr);
	}
	if (k < 0)
		k = 0;
	if ((size_t)k >= len)
		k = (int)len - 1;
	return (size_t)k;
}
