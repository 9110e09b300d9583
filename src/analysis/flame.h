/* flame.h - folded stacks ("a;b;c WEIGHT" lines, the text format flamegraph.pl, inferno and
 * speedscope import) from a trace's function entries/exits and spans.
 *
 * Purpose: `trace-dump flame`. Each thread stream keeps its stack of open frames (spans by
 * name, functions by address within their process); records are fed in any order that keeps
 * each stream's own order (the merged iterator does). Weights:
 *   FLAME_TIME   nanoseconds: the time between two consecutive records of a thread's stream
 *                goes to the stack open between them (self time of its innermost frame);
 *                nothing is counted while the stack is empty.
 *   FLAME_ALLOC  bytes: each ALLOC's size goes to the stack open when it was made; an
 *                allocation made with no frame open goes to the one frame FLAME_OUTSIDE (under
 *                its process's frame with flame_root_processes), so the weights add up to every
 *                byte allocated.
 * Ends: a span end closes the innermost open span of its name (frames above it close too); a
 * function exit closes the innermost open frame of its address; an end with no such frame
 * open is ignored (counted).
 *
 * Memory: one node per distinct stack (a trie), bounded by FLAME_MAX_NODES: past it, deeper
 * frames fold into their parent (counted in flame_stats). Threads: one thread per flame.
 */
#ifndef TRC_FLAME_H
#define TRC_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"
#include "trcfile.h"

/* FLAME_STACKS: no weight, only the stacks (for flame_stream_node; memory.c). */
enum flame_weight { FLAME_STACKS = 0, FLAME_TIME = 1, FLAME_ALLOC = 2 };

#define FLAME_OUTSIDE "[no span or function]"
#define FLAME_MAX_NODES (1u << 22)

struct flame;

struct flame_stats {
	uint64_t unmatched_ends; /* ends with no open frame to close */
	uint64_t folded_frames; /* frames not given a node (FLAME_MAX_NODES reached) */
	uint64_t total_weight;
};

struct flame *flame_new(enum flame_weight weight);
void flame_free(struct flame *f);

/* Roots each thread's stacks at a frame of its process, "prog (pid 42)" (its argv[0] without
 * the directories; "pid 42" when the trace does not say what it ran), so that the folded lines
 * say which process each tree belongs to and a forked child's calls, nested under the frames it
 * inherited, never merge with its parent's. Without it (the default) the same stack in two
 * processes is one line. Call before the first flame_add. */
void flame_root_processes(struct flame *f);

/* Allocations with a call stack (an ALLOC's stack_id) go to the stack's frames, under the
 * spans open on their thread, when r is given: its STACK records name them. Without it (and
 * for allocations without a stack) they go to their thread's innermost open frame. */
void flame_use_stacks(struct flame *f, const struct trcfile_reader *r);

/* The node the allocation rec of stream sidx goes to (see flame_use_stacks), before or after
 * flame_add takes it; *err = -ENOMEM when the trie could not grow. */
uint32_t flame_alloc_node(struct flame *f, unsigned sidx, const struct trcfile_stream_info *si,
			  const struct trc_record *rec, int *err);

/* Feeds one record of stream sidx (si its info). Returns 0 or -ENOMEM. */
int flame_add(struct flame *f, unsigned sidx, const struct trcfile_stream_info *si,
	      const struct trc_record *rec);

/* Calls emit once per distinct stack with a non-zero weight, in byte order of the folded text
 * (frames named through r's names and syms, which may be NULL: then module+offset); ';' and
 * line breaks inside a name are replaced by ':' and ' '. Returns 0 or -ENOMEM. */
typedef void (*flame_emit_fn)(void *ctx, const char *stack, size_t len, uint64_t weight);
int flame_fold(struct flame *f, const struct trcfile_reader *r, struct sym_resolver *syms,
	       flame_emit_fn emit, void *ctx);

void flame_get_stats(const struct flame *f, struct flame_stats *out);

/* The innermost open frame of stream sidx after the records fed so far: a node of the trie,
 * 0 when no frame is open. Nodes are stable (never freed or renumbered) and below
 * FLAME_MAX_NODES. */
uint32_t flame_stream_node(const struct flame *f, unsigned sidx);
/* The name of node's innermost frame (stack false) or its whole folded stack, outermost first
 * (stack true: its innermost 256 frames), into buf (cut to cap - 1, terminated; FLAME_OUTSIDE
 * for node 0). Returns the length. */
size_t flame_node_name(const struct flame *f, uint32_t node, bool stack,
		       const struct trcfile_reader *r, struct sym_resolver *syms, char *buf,
		       size_t cap);

#endif /* TRC_FLAME_H */
