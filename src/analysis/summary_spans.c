/* summary_spans.c - span matching: which begin an end closes, on one stream.
 *
 * Purpose: a begin is matched with the next end of the same name on the same stream: a stack
 * of open spans per stream (innermost last), searched from the top for an end's name; spans
 * opened inside it and never closed stay open (counted at the end of the stream). The
 * duration goes to the name's figures (summary__span_duration).
 *
 * The pass's hot loop does the two common cases itself, on its own copy of the stack's fields
 * (a push when there is room, a pop when the top matches); these functions are the general
 * case and keep the stack consistent for it.
 *
 * Bounds: an end searches at most SUMMARY__MATCH_DEPTH frames down, so a stream of ends whose
 * begins were lost cannot cost a scan of a deep stack each; past SUMMARY__STACK_MAX open
 * spans (not a real program's nesting) the outer half is forgotten at once, counted as open.
 *
 * Threads: the reader's thread.
 */
#include "summary_priv.h"

#define SUMMARY__STACK_MAX (1u << 20)
#define SUMMARY__MATCH_DEPTH 4096u

void summary__span_begin(struct summary__state *m, uint32_t id, uint64_t ts)
{
	struct summary__spans *sp = &m->spans;
	if (sp->n == sp->cap) {
		if (sp->cap >= SUMMARY__STACK_MAX) {
			/* Forget the outer half at once, so a stream of unmatched begins costs O(1)
			 * each, not a memmove of the whole stack. */
			size_t drop = sp->n / 2;
			memmove(sp->stack, sp->stack + drop, (sp->n - drop) * sizeof(*sp->stack));
			sp->n -= drop;
			m->s->spans_open_at_end += drop;
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
	sp->stack[sp->n++] = (struct summary__frame){id, ts};
}

void summary__span_end(struct summary__state *m, struct summary__idstat *st, uint32_t id,
		       uint64_t ts)
{
	struct summary__spans *sp = &m->spans;
	/* Innermost open span of that name; usually the top. */
	size_t i = sp->n;
	size_t lowest = sp->n > SUMMARY__MATCH_DEPTH ? sp->n - SUMMARY__MATCH_DEPTH : 0;
	while (i > lowest && sp->stack[i - 1].name_id != id)
		i--;
	if (i == lowest) {
		m->s->spans_unmatched_end++;
		return;
	}
	uint64_t begin = sp->stack[i - 1].ts;
	/* Spans opened inside it and never closed stay open (counted at the end). */
	memmove(&sp->stack[i - 1], &sp->stack[i], (sp->n - i) * sizeof(*sp->stack));
	sp->n--;
	summary__span_duration(m, st, ts >= begin ? ts - begin : 0);
}

void summary__spans_free(struct summary__spans *sp)
{
	free(sp->stack);
	sp->stack = NULL;
	sp->n = sp->cap = 0;
}
