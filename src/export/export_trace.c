/* export_trace.c - what every exporter reads of a trace the same way (export.h): where its
 * relative times start, its anchor on CLOCK_REALTIME, and function names without symbols.
 *
 * Threads: no globals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "trcfile.h"

uint64_t export_start_ns(const struct trcfile_reader *r)
{
	uint64_t first = UINT64_MAX;
	for (unsigned i = 0; i < trcfile_reader_stream_count(r); i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, i);
		if (si->chunks && si->first_ts_ns < first)
			first = si->first_ts_ns;
	}
	uint64_t start = trcfile_reader_header(r)->start_mono_ns;
	if (start && start <= first)
		return start;
	return first == UINT64_MAX ? start : first;
}

int export_anchor(const struct trcfile_reader *r, int64_t *anchor, int64_t *start_rt)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	uint64_t last = 0;
	for (unsigned i = 0; i < trcfile_reader_stream_count(r); i++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, i);
		if (si->chunks && si->last_ts_ns > last)
			last = si->last_ts_ns;
	}
	int64_t end_rt;
	if (__builtin_sub_overflow(h->start_realtime_ns, h->start_mono_ns, anchor) ||
	    __builtin_add_overflow(export_start_ns(r), *anchor, start_rt) ||
	    __builtin_add_overflow(last, *anchor, &end_rt) || *start_rt < 0)
		return -ERANGE;
	return 0;
}

int64_t export_realtime(uint64_t ts, int64_t anchor)
{
	int64_t rt;
	return __builtin_add_overflow(ts, anchor, &rt) ? INT64_MAX : rt;
}

size_t export_func_name_plain(const struct trcfile_reader *r, uint32_t pid, uint64_t addr,
			      char *buf, size_t len)
{
	if (!len)
		return 0;
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
		k = (int)len - 1;
	return (size_t)k;
}
