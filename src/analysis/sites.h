/* sites.h - the bytes each allocation site allocated over the whole trace, and the sizes it
 * asked for, for `trace-dump diff` and `trace-dump report`.
 *
 * Purpose: "what allocates more than before" needs the run's totals by site, with the site
 * named as `trace-dump memory` names it: what the allocating thread was running, its
 * innermost span or function (flame.h's stacks, flame_node_name without the stack), or
 * FLAME_OUTSIDE. Rows: one per distinct name (the same function in several processes, or the
 * same span on several threads, is one row): allocations, bytes, and the p50, p99 and max of
 * the sizes asked for (histogram.h: within 3 %).
 *
 * Memory: flame.h's trie (bounded), one accumulator per trie node that allocated, one
 * histogram per such node within SITES_HIST_BUDGET (past it sizes are left out of the
 * percentiles, said by sites_approximate); never per record.
 *
 * Threads: one thread per table. Errors: 0 or -ENOMEM.
 */
#ifndef TRC_SITES_H
#define TRC_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"
#include "trcfile.h"

#define SITES_HIST_BUDGET (64u << 20)

struct site_row {
	const char *name; /* owned by the table */
	uint64_t allocs, bytes;
	uint64_t size_p50, size_p99, size_max;
};

struct site_table;

/* A table for the trace r, whose allocation call stacks name the sites of allocations that
 * carry one (flame_use_stacks; sampled stacks weigh alloc_weight.h's); r may be NULL (no
 * stacks: sites are the innermost span or function). */
struct site_table *site_table_new(const struct trcfile_reader *r);
void site_table_free(struct site_table *t);
/* Feeds one record of stream sidx (si its info), in the stream's order. 0 or -ENOMEM. */
int site_table_add(struct site_table *t, unsigned sidx, const struct trcfile_stream_info *si,
		   const struct trc_record *rec);
/* Names the sites (syms may be NULL) and merges them by name, largest bytes first (ties by
 * name). 0 or -ENOMEM. */
int site_table_finish(struct site_table *t, const struct trcfile_reader *r,
		      struct sym_resolver *syms);
size_t site_table_rows(const struct site_table *t, const struct site_row **rows);
/* True when the histogram budget ran out: some sizes are not in the percentiles. */
bool site_table_approximate(const struct site_table *t);

#endif /* TRC_SITES_H */
