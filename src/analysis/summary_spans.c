/* summary_spans.c - span matching: which begin an end closes, on one stream.
 *
 * Purpose: the rule of FORMAT.md ("span_begin / span_end"), the one every exporter follows
 * too: a stream has one stack of open spans and functions (innermost last); span_begin and
 * func_enter push, span_end and func_exit close the innermost frame whatever it is. A span
 * closed is charged to its begin's name (summary__span_duration), as a viewer names the slice;
 * an end that closes a span of another name, or a span and a function closing each other, is
 * counted as mismatched; a span_end with nothing open as unmatched (a func_exit with nothing
 * open is not counted: traces start inside functions). Spans left open are counted at the end
 * of the stream.
 *
 * The pass's hot loop does the two common cases itself, on its own copy of the stack's fields
 * (a push when there is room, a pop when the top is what the end expects); these functions are
 * the general case and keep the stack consistent for it.
 *
 * Bounds: O(1) per record. Past SUMMARY__STACK_MAX open frames (not a real program's nesting)
 * the outer half is forgotten at once, its spans counted as open.
 *
 * Threads: the reader's thread.
 */
#include "summary_priv.h"

#define SUMMARY__STACK_MAX (1u << 20)

uint64_t summary__spans_open(const struct summary__spans *sp)
{
	uint64_t n = 0;
	for (size_t i = 0; i < sp->n; i++)
		n += !sp->stack[i].func;
	return n;
}

void summary__span_begin(struct summary__state *m, uint32_t id, uint32_t func, uint64_t ts)
{
	struct summary__spans *sp = &m->spans;
	if (sp->n == sp->cap) {
		if (sp->cap >= SUMMARY__STACK_MAX) {
			/* Forget the outer half at once, so a stream of unmatched begins costs O(1)
			 * each, not a memmove of the whole stack. */
			size_t drop = sp->n / 2;
			struct summary__spans outer = {.stack = sp->stack, .n = drop};
			m->s->spans_open_at_end += summary__spans_open(&outer);
			memmove(sp->stack, sp->stack + drop, (sp->n - drop) * sizeof(*sp->stack));
			sp->n -= drop;
		} else {
			size_t cap = sp->cap ? 2 * sp->cap : 64;
			void *p = realloc(sp->stack, cap * sizeof(*sp->stack));
			if (!p) {
				summary__nomem(m);
				return;
			}
			sp->stack = p;
			sp->cap = cap;
		}
	}
	sp->stack[sp->n++] = (struct summary__frame){func ? 0 : id, func, ts};
}

void summary__span_end(struct summary__state *m, uint32_t id, uint32_t func, uint64_t ts)
{
	struct summary__spans *sp = &m->spans;
	if (!sp->n) {
		if (!func)
			m->s->spans_unmatched_end++;
		return;
	}
	const struct summary__frame top = sp->stack[--sp->n];
	if (top.func != func || (!func && top.name_id != id))
		m->s->spans_end_mismatched++;
	if (top.func)
		return; /* a function: the summary keeps no figures per function */
	struct summary__idstat *st = summary__idstat(m, top.name_id);
	if (st)
		summary__span_duration(m, st, ts >= top.ts ? ts - top.ts : 0);
}

void summary__spans_free(struct summary__spans *sp)
{
	free(sp->stack);
	sp->stack = NULL;
	sp->n = sp->cap = 0;
}
