/* dump_symbol.c - how trace-dump names a function address: the one place for it.
 *
 * Purpose: chrome, perfetto and pprof all show function frames (func_enter/exit records) by
 * name; until symbols are read (the "readable traces" issue), the name is the module and the
 * offset in it ("prog+0x2136"), or the bare address when no module record covers it. A
 * symbolizer replaces this function's body; its callers need not change.
 *
 * Threads: single-threaded (the reader's lookups).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dump_common.h"

size_t dump_func_name(const struct trcfile_reader *r, uint32_t pid, uint64_t addr, char *buf,
		      size_t len)
{
	const struct trcfile_module *m = trcfile_reader_module(r, pid, addr);
	int k;
	if (m) {
		const char *base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		k = snprintf(buf, len, "%.256s+0x%" PRIx64, base, addr - m->start + m->offset);
	} else {
		k = snprintf(buf, len, "0x%" PRIx64, addr);
	}
	if (k < 0)
		k = 0;
	if ((size_t)k >= len)
		k = len ? (int)len - 1 : 0;
	return (size_t)k;
}
