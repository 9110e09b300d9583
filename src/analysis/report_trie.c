/* report_trie.c - the report's trie of open frames (contract in report_trie.h).
 *
 * The index is a u64index over the nodes, hashed under its seed as flame.c hashes its own (a
 * file must not choose collisions); the cache in front of it is unseeded and only ever
 * checked. The walk that hands the trie to a struct flame goes depth first, so that it feeds
 * each node's frame once (a push when entering it, a pop when leaving it) whatever the depth.
 *
 * Threads: one thread per trie.
 */
#include "report_trie.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t report_trie__hash(uint32_t parent, uint32_t kind, uint32_t pid, uint64_t key,
				  uint64_t seed)
{
	return u64map_mix(
		key ^ u64map_mix((uint64_t)parent << 32 | (uint64_t)pid << 2 | kind, seed), seed);
}

static uint64_t report_trie__node_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct report_trie_node *n = &((const struct report_trie *)ctx)->nodes[i];
	return report_trie__hash(n->parent, n->kind, n->pid, n->key, seed);
}

int report_trie_init(struct report_trie *t)
{
	memset(t, 0, sizeof(*t));
	t->cap_nodes = 1024;
	t->nodes = calloc(t->cap_nodes, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->n_nodes = 1; /* the root */
	u64index_init(&t->index, report_trie__node_hash, t);
	return 0;
}

void report_trie_free(struct report_trie *t)
{
	free(t->nodes);
	if (t->index.hash)
		u64index_destroy(&t->index);
	memset(t, 0, sizeof(*t));
}

uint32_t report_trie_child_slow(struct report_trie *t, uint32_t parent, uint32_t kind, uint32_t pid,
				uint64_t key, uint32_t slot)
{
	uint64_t h = report_trie__hash(parent, kind, pid, key, u64index_seed(&t->index));
	uint32_t e;
	for (size_t pos = u64index_start(&t->index, h);
	     (e = u64index_next(&t->index, &pos)) != U64INDEX_END;) {
		const struct report_trie_node *n = &t->nodes[e];
		if (n->parent == parent && n->kind == kind && n->pid == pid && n->key == key)
			goto found;
	}
	if (t->n_nodes >= FLAME_MAX_NODES)
		return REPORT_TRIE_FULL;
	if (t->n_nodes == t->cap_nodes) {
		uint32_t nc = 2 * t->cap_nodes;
		struct report_trie_node *p = realloc(t->nodes, (size_t)nc * sizeof(*p));
		if (!p)
			return REPORT_TRIE_NOMEM;
		t->nodes = p;
		t->cap_nodes = nc;
	}
	e = t->n_nodes;
	t->nodes[e] =
		(struct report_trie_node){.parent = parent, .kind = kind, .pid = pid, .key = key};
	if (u64index_add(&t->index, e, h) != 0)
		return REPORT_TRIE_NOMEM;
	t->n_nodes++;
found:
	t->cache[slot] = e;
	return e;
}

/* Feeds f one record of the walk's stream: frame (kind, pid, key) opening or closing, or an
 * instant (weight) at ts. */
static int report_trie__feed(struct flame *f, uint32_t type, uint32_t pid, uint64_t key,
			     uint64_t ts)
{
	struct trcfile_stream_info si = {.kind = TRC_STREAM_THREAD, .pid = pid};
	struct trc_record rec = {.type = type, .ts_ns = ts};
	if (type == TRC_REC_FUNC_ENTER || type == TRC_REC_FUNC_EXIT)
		rec.func.addr = key;
	else
		rec.span.name_id = (uint32_t)key;
	return flame_add(f, 0, &si, &rec);
}

/* The walk: frames open and close at time 0; a node's weight w is an instant at w while the
 * node is innermost (flame.h: the time since the previous record goes to the open node), the
 * next record back at 0 adding nothing. */
int report_trie_to_flame(const struct report_trie *t, struct flame *f, uint32_t *map)
{
	const uint32_t n = t->n_nodes;
	uint32_t *first = calloc(n, sizeof(*first)), *next = calloc(n, sizeof(*next));
	int rc = -ENOMEM;
	if (!first || !next)
		goto out;
	for (uint32_t i = n; i-- > 1;) {
		next[i] = first[t->nodes[i].parent];
		first[t->nodes[i].parent] = i;
	}
	map[0] = 0;
	uint32_t v = first[0];
	while (v) {
		const struct report_trie_node *x = &t->nodes[v];
		bool span = x->kind == REPORT_TRIE_SPAN;
		if ((rc = report_trie__feed(f, span ? TRC_REC_SPAN_BEGIN : TRC_REC_FUNC_ENTER,
					    x->pid, x->key, 0)))
			goto out;
		map[v] = flame_stream_node(f, 0);
		if (x->weight && (rc = report_trie__feed(f, TRC_REC_INSTANT, 0, 0, x->weight)))
			goto out;
		if (first[v]) {
			v = first[v];
			continue;
		}
		/* Leaving v, and each ancestor whose children are all walked. */
		while (v) {
			x = &t->nodes[v];
			span = x->kind == REPORT_TRIE_SPAN;
			if ((rc = report_trie__feed(f, span ? TRC_REC_SPAN_END : TRC_REC_FUNC_EXIT,
						    x->pid, x->key, 0)))
				goto out;
			if (next[v]) {
				v = next[v];
				break;
			}
			v = x->parent;
		}
	}
	rc = 0;
out:
	free(first);
	free(next);
	return rc;
}
