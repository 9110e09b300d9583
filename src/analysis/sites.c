/* sites.c - bytes allocated per site over the whole trace (contract in sites.h).
 *
 * Each thread's open frames are flame.h's (weight FLAME_STACKS, as memory.c uses them), so a
 * site here is the site `trace-dump memory` names. An ALLOC adds to the accumulator of the
 * innermost open node of its stream (indexed by node: nodes stay below FLAME_MAX_NODES);
 * finish names each node that allocated, sorts by name and merges equal names.
 *
 * Threads: one thread per table.
 */
#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_weight.h"
#include "flame.h"
#include "histogram.h"

struct sites__acc {
	uint64_t allocs, bytes, min, max;
	struct hist *sizes;
	struct hist_hot hot;
};

struct site_table {
	struct flame *fl;
	struct sites__acc *acc; /* by flame node */
	size_t cap;
	uint64_t budget;
	bool approximate;
	double sample_bytes; /* sampled stacks (alloc_weight.h), 0 none */
	struct site_row *rows;
	size_t n_rows;
};

struct site_table *site_table_new(const struct trcfile_reader *r)
{
	struct site_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fl = flame_new(FLAME_STACKS);
	if (!t->fl) {
		free(t);
		return NULL;
	}
	if (r) {
		flame_use_stacks(t->fl, r);
		t->sample_bytes = alloc_weight_sample_bytes(r);
	}
	t->budget = SITES_HIST_BUDGET;
	return t;
}

void site_table_free(struct site_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		hist_free(t->acc[i].sizes);
	free(t->acc);
	for (size_t i = 0; i < t->n_rows; i++)
		free((char *)t->rows[i].name);
	free(t->rows);
	flame_free(t->fl);
	free(t);
}

static struct sites__acc *sites__acc(struct site_table *t, uint32_t node)
{
	if (node >= t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		while (cap <= node)
			cap *= 2;
		struct sites__acc *p = realloc(t->acc, cap * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + t->cap, 0, (cap - t->cap) * sizeof(*p));
		t->acc = p;
		t->cap = cap;
	}
	return &t->acc[node];
}

int site_table_add(struct site_table *t, unsigned sidx, const struct trcfile_stream_info *si,
		   const struct trc_record *rec)
{
	if (si->kind != TRC_STREAM_THREAD)
		return 0;
	if (rec->type != TRC_REC_ALLOC)
		return flame_add(t->fl, sidx, si, rec);
	if (t->sample_bytes > 0 && !rec->alloc.stack_id)
		return 0; /* sampled stacks: stood for by those sampled */
	int err;
	uint32_t node = flame_alloc_node(t->fl, sidx, si, rec, &err);
	if (err)
		return err;
	struct sites__acc *a = sites__acc(t, node);
	if (!a)
		return -ENOMEM;
	uint64_t size = rec->alloc.size;
	if (!a->allocs || size < a->min)
		a->min = size;
	if (size > a->max)
		a->max = size;
	a->allocs += alloc_weight_count(size, t->sample_bytes);
	a->bytes += alloc_weight_bytes(size, t->sample_bytes);
	int rc = hist_count(&a->sizes, &a->hot, size, &t->budget);
	if (rc < 0)
		return rc;
	if (rc > 0)
		t->approximate = true;
	return 0;
}

struct sites__named {
	char *name;
	uint32_t node;
};

static int sites__by_name(const void *x, const void *y)
{
	const struct sites__named *a = x, *b = y;
	int c = strcmp(a->name, b->name);
	return c ? c : (a->node > b->node) - (a->node < b->node);
}

static int sites__by_bytes(const void *x, const void *y)
{
	const struct site_row *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return strcmp(a->name, b->name);
}

int site_table_finish(struct site_table *t, const struct trcfile_reader *r,
		      struct sym_resolver *syms)
{
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++)
		n += t->acc[i].allocs != 0;
	struct sites__named *v = calloc(n ? n : 1, sizeof(*v));
	t->rows = calloc(n ? n : 1, sizeof(*t->rows));
	if (!v || !t->rows)
		goto nomem;
	size_t k = 0;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->acc[i].allocs)
			continue;
		char buf[4096];
		size_t len = flame_node_name(t->fl, (uint32_t)i, false, r, syms, buf, sizeof(buf));
		v[k].name = strndup(buf, len);
		v[k].node = (uint32_t)i;
		if (!v[k++].name)
			goto nomem;
	}
	qsort(v, n, sizeof(*v), sites__by_name);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct hist h = {0};
		struct site_row *row = &t->rows[t->n_rows++];
		uint64_t min = UINT64_MAX;
		row->name = v[i].name;
		v[i].name = NULL;
		for (; j < n && (j == i || !strcmp(v[j].name, row->name)); j++) {
			const struct sites__acc *a = &t->acc[v[j].node];
			row->allocs += a->allocs;
			row->bytes += a->bytes;
			if (a->max > row->size_max)
				row->size_max = a->max;
			if (a->min < min)
				min = a->min;
			if (a->sizes && hist_merge(&h, a->sizes)) {
				hist_clear(&h);
				goto nomem;
			}
		}
		row->size_p50 = hist_quantile(&h, 0.50, min, row->size_max);
		row->size_p99 = hist_quantile(&h, 0.99, min, row->size_max);
		hist_clear(&h);
		i = j;
	}
	qsort(t->rows, t->n_rows, sizeof(*t->rows), sites__by_bytes);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return 0;
nomem:
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
	return -ENOMEM;
}

size_t site_table_rows(const struct site_table *t, const struct site_row **rows)
{
	*rows = t->rows;
	return t->n_rows;
}

bool site_table_approximate(const struct site_table *t)
{
	return t->approximate;
}
