/* report_trie.h - the report's trie of open frames: flame.h's trie, fed from the report's own
 * loop over a stream's records, then given to a struct flame to fold and name.
 *
 * Purpose: the report's pass weighs every record by time to the stack open at it (as
 * FLAME_TIME does) and counts the bytes allocated under each node beside it. flame_add costs a
 * seeded hash and an index probe for every frame opened; here a frame opened under a node is
 * found through a small direct-mapped cache in front of that index (the same few stacks recur
 * millions of times), and the per-stream state sits where the caller's loop keeps it.
 *
 * Same nodes as flame.h, made in the same order: node 0 the root; a node is (parent, kind,
 * pid, key), kind span (key the name id, pid 0) or function (key the address, pid its
 * process); at most FLAME_MAX_NODES, past which deeper frames fold into their parent. Same
 * rules: the time between two records of a stream goes to the node open between them (not to
 * the root); a span end closes the innermost open span of its name, a function exit the
 * innermost open call of its address (frames above close too), an end with nothing to close
 * is ignored. So report_trie_to_flame gives a flame that folds (flame_fold) and names
 * (flame_node_name) as the one flame_add would have built from the same records.
 *
 * Memory: one node per distinct stack (bounded as flame.h's), the index, a fixed cache.
 * Threads: one thread per trie. Errors: 0 or -ENOMEM.
 */
#ifndef TRC_REPORT_TRIE_H
#define TRC_REPORT_TRIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flame.h"
#include "u64map.h"

enum { REPORT_TRIE_SPAN = 1, REPORT_TRIE_FUNC = 2 };

#define REPORT_TRIE__CACHE_BITS 12

struct report_trie_node {
	uint32_t parent, kind, pid;
	uint64_t key;
	uint64_t weight; /* ns with this node innermost */
	uint64_t bytes; /* bytes allocated with this node innermost */
};

struct report_trie {
	struct report_trie_node *nodes;
	uint32_t n_nodes, cap_nodes;
	struct u64index index; /* (parent, kind, pid, key) -> node */
	/* Node a frame opened under a parent last was, by a cheap hash of the frame: checked
	 * against the node itself, so a collision costs a probe of the index, never a wrong
	 * node. 0: empty (the root is nobody's child). */
	uint32_t cache[1u << REPORT_TRIE__CACHE_BITS];
};

int report_trie_init(struct report_trie *t);
/* Frees what t holds; accepts a zeroed t. */
void report_trie_free(struct report_trie *t);

/* What report_trie_child returns besides a node: the trie is full (the frame folds into its
 * parent: the caller counts it open past the trie), or out of memory. */
#define REPORT_TRIE_FULL UINT32_MAX
#define REPORT_TRIE_NOMEM (UINT32_MAX - 1)

/* The out-of-line half of report_trie_child: the index, or a new node. */
uint32_t report_trie_child_slow(struct report_trie *t, uint32_t parent, uint32_t kind, uint32_t pid,
				uint64_t key, uint32_t slot);

static inline uint32_t report_trie__slot(uint32_t parent, uint32_t kind, uint32_t pid, uint64_t key)
{
	uint64_t h = (key ^ ((uint64_t)parent << 32 | (uint64_t)pid << 2 | kind)) *
		     0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> (64 - REPORT_TRIE__CACHE_BITS));
}

/* The node of frame (kind, pid, key) opened under parent, made when missing;
 * REPORT_TRIE_FULL or REPORT_TRIE_NOMEM. t->nodes may move when a node is made. */
static inline uint32_t report_trie_child(struct report_trie *t, uint32_t parent, uint32_t kind,
					 uint32_t pid, uint64_t key)
{
	uint32_t slot = report_trie__slot(parent, kind, pid, key);
	uint32_t e = t->cache[slot];
	const struct report_trie_node *n = &t->nodes[e];
	if (__builtin_expect(e && n->parent == parent && n->key == key && n->kind == kind &&
				     n->pid == pid,
			     1))
		return e;
	return report_trie_child_slow(t, parent, kind, pid, key, slot);
}

/* The innermost node open after frame (kind, pid, key) closes at cur: the parent of its
 * innermost open frame, cur itself when none is open. */
static inline uint32_t report_trie_close(const struct report_trie *t, uint32_t cur, uint32_t kind,
					 uint32_t pid, uint64_t key)
{
	for (uint32_t i = cur; i != 0; i = t->nodes[i].parent) {
		const struct report_trie_node *n = &t->nodes[i];
		if (n->key == key && n->kind == kind && n->pid == pid)
			return n->parent;
	}
	return cur;
}

/* Builds in f (new, FLAME_TIME, nothing fed yet) the trie's nodes with their weights, by
 * feeding it the records of one walk over them; map[i] (n_nodes entries) receives the node
 * of f that is t's node i. 0 or -ENOMEM. */
int report_trie_to_flame(const struct report_trie *t, struct flame *f, uint32_t *map);

#endif /* TRC_REPORT_TRIE_H */
