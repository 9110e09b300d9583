/* export_spans.h - span balancing and the several-traces pid offset, for every exporter.
 *
 * Purpose: FORMAT.md's rule for spans, written once. A stream has one stack of open spans and
 * functions: span_begin and func_enter push a frame; span_end and func_exit close the
 * innermost frame whatever it is, and an end with nothing open is unmatched (no frame: the
 * exporter drops or counts it). A loss (a LOST record with a count) ends what is open on its
 * stream as unknown; what is still open when the trace (or the exported range) ends is closed
 * there by the exporter, each in its format. The frame keeps what names the span again (its
 * name id or function address), when it began, and one word for the exporter (pprof: the
 * stack node it opened).
 *
 * Several traces in one output (chrome, perfetto): trace i of n shows its pids (and tids, for
 * perfetto) as id + export_pid_offset(i, n), so traces of different hosts, which have the
 * same pids, never share a track; Linux pids stay below 2^22 (PID_MAX_LIMIT), well inside
 * one range.
 *
 * Memory: a stack grows by doubling; with a frame limit it forgets its outer half when full
 * (those frames stay open and are never closed), as the summary does.
 * Threads: a stack belongs to one export (one thread).
 */
#ifndef TRC_EXPORT_SPANS_H
#define TRC_EXPORT_SPANS_H

#include <stddef.h>
#include <stdint.h>

/* One trace's pid range in a several-traces output. */
#define EXPORT_PID_RANGE 10000000u

/* The offset added to trace i's pids when n traces share one output: 0 for one trace,
 * (i + 1) x EXPORT_PID_RANGE for each of several. */
static inline uint64_t export_pid_offset(unsigned i, unsigned n)
{
	return n > 1 ? (uint64_t)(i + 1) * EXPORT_PID_RANGE : 0;
}

/* An open span (type TRC_REC_SPAN_BEGIN, name_id) or function (TRC_REC_FUNC_ENTER, addr). */
struct export_frame {
	uint32_t type;
	uint32_t name_id;
	uint64_t addr;
	uint64_t ts_ns; /* when it began */
	uint64_t tag; /* the exporter's own word */
};

struct export_stack {
	struct export_frame *v; /* innermost last */
	size_t n, cap;
};

/* The full stack's push (export_spans.c): grows it, or forgets its outer half. */
int export__stack_push_full(struct export_stack *s, const struct export_frame *f,
			    size_t max_frames);

/* Pushes f. With max_frames (0: no limit) reached the outer half is forgotten first.
 * 0, or -ENOMEM (nothing pushed). Inline: a push per span begin of every export. */
static inline int export_stack_push(struct export_stack *s, const struct export_frame *f,
				    size_t max_frames)
{
	if (__builtin_expect(s->n == s->cap, 0))
		return export__stack_push_full(s, f, max_frames);
	s->v[s->n++] = *f;
	return 0;
}

/* Closes the innermost frame: the frame (valid until the next push), or NULL when nothing is
 * open (an unmatched end). */
static inline const struct export_frame *export_stack_pop(struct export_stack *s)
{
	return s->n ? &s->v[--s->n] : NULL;
}

/* The innermost open frame, or NULL. */
static inline const struct export_frame *export_stack_top(const struct export_stack *s)
{
	return s->n ? &s->v[s->n - 1] : NULL;
}

/* n stacks, all empty; NULL when out of memory. Freed by export_stacks_free. */
struct export_stack *export_stacks_new(size_t n);
/* Frees n stacks made by export_stacks_new. Accepts NULL. */
void export_stacks_free(struct export_stack *s, size_t n);

#endif /* TRC_EXPORT_SPANS_H */
