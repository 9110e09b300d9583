/* export_spans.c - the open-span stacks every exporter balances spans with (export_spans.h).
 *
 * Threads: no globals; a stack belongs to one export.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_spans.h"

int export__stack_push_full(struct export_stack *s, const struct export_frame *f,
			    size_t max_frames)
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
