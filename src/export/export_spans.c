/* export_spans.c - the open-span stacks every exporter balances spans with (export_spans.h),
 * and what all exporters share of a trace: where its relative times start, and how functions
 * are named without symbols (export.h).
 *
 * Threads: no globals; a stack belongs to one export.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_spans.h"
#include "trcfile.h"

int export_stack_push(struct export_stack *s, const struct export_frame *f, size_t max_frames)
{
	if (s->n == s->cap) {
		if (max_frames && s->cap >= max_frames) {
			/* Forget the outer half: they stay open, never closed. */
			size_t drop = s->n / 2;
			memmove(s->v, s->v + drop, (s->n - drop) * sizeof(*s->v));
			s->n -= drop;
		} else {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct export_frame *v = realloc(s->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->v = v;
			s->cap = cap;
		}
	}
	s->v[s->n++] = *f;
	return 0;
}

struct export_stack *export_stacks_new(size_t n)
{
	return calloc(n ? n : 1, sizeof(struct export_stack));
}

void export_stacks_free(struct export_stack *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		free(s[i].v);
	free(s);
}

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
