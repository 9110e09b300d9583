/* memory.c - what made RSS grow (contract in memory.h).
 *
 * Sites: a site is a group of flame nodes with the same name (the innermost frame's, or the
 * folded stack's): node -> site is made once per node (node_site, grown with the trie), the
 * names interned by string (a u64index over the report's names). A live
 * block keeps its size and site packed in one map value (40 bits of size, 24 of site: flame
 * nodes, hence sites, stay below 2^22).
 *
 * Per process: its live map and bytes, its previous sample, and what was allocated since it
 * (bytes per site: acc, indexed through acc_ix). At each of its samples the interval closes:
 * kept (sites sorted and cut) when RSS rose, then cleared.
 *
 * Threads: the reader's thread.
 */
#include "memory.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_weight.h"
#include "allocmap.h"
#include "flame.h"
#include "u64map.h"

#define MEMORY__SIZE_BITS 40
#define MEMORY__SIZE_MAX ((1ull << MEMORY__SIZE_BITS) - 1)
/* The site of a live block not sampled (sampled stacks): in the live heap, in no site. */
#define MEMORY__UNSAMPLED ((1u << (64 - MEMORY__SIZE_BITS)) - 1)

struct memory__acc {
	uint32_t site;
	uint64_t bytes, allocs;
};

/* Bytes and allocations per site. */
struct memory__accum {
	struct memory__acc *v;
	size_t n, cap;
	struct u64map ix; /* site -> index in v */
};

struct memory__proc {
	uint32_t pid;
	uint64_t peak_ts, peak_rss; /* from the first pass */
	bool peak_done, have_prev;
	uint64_t prev_ts, prev_rss, prev_live;
	struct allocmap *live;
	uint64_t live_bytes;
	uint64_t mapped_bytes; /* MAP less UNMAP (memory_sample) */
	uint64_t alloc_bytes, allocs, free_bytes; /* since the previous sample (or the start) */
	uint64_t first_ts; /* its first allocation or free (0: none yet) */
	struct memory__accum acc; /* the same per site */
	struct memory__accum all; /* per site over the whole run */
	struct memory__accum temp; /* temporary allocations per site */
	size_t cap_series, cap_intervals;
};

/* Per thread stream: its last allocation, to tell a temporary one (freed by the thread's next
 * allocation event, as heaptrack counts them). */
struct memory__last {
	uint64_t addr, size;
	uint32_t site;
	bool open;
};

struct memory__state {
	struct trcfile_reader *r;
	struct sym_resolver *syms;
	const struct memory_opts *o;
	struct memory_report *out;
	struct flame *fl;
	uint32_t *node_site; /* node -> site + 1 (0: not named yet) */
	double sample_bytes; /* the trace's sampling of stacks (alloc_weight.h), 0: none */
	struct memory__last *last; /* per stream index */
	size_t n_last;
	size_t cap_node_site;
	struct u64index site_ix; /* name -> site */
	size_t cap_names;
	struct memory__proc *procs; /* parallel to out->procs */
	struct u64map pid_ix; /* pid -> index in procs */
	uint32_t root_pid;
};

static uint64_t memory__name_hash(const void *ctx, uint32_t site, uint64_t seed)
{
	const char *s = ((const struct memory__state *)ctx)->out->names[site];
	return u64map_hash_bytes(s, strlen(s), seed);
}

/* The site of name (interned); UINT32_MAX on out of memory. */
static uint32_t memory__site_of_name(struct memory__state *m, const char *name, size_t len)
{
	struct memory_report *out = m->out;
	uint64_t h = u64map_hash_bytes(name, len, u64index_seed(&m->site_ix));
	uint32_t e;
	for (size_t pos = u64index_start(&m->site_ix, h);
	     (e = u64index_next(&m->site_ix, &pos)) != U64INDEX_END;) {
		const char *s = out->names[e];
		if (strlen(s) == len && !memcmp(s, name, len))
			return e;
	}
	if (out->n_names == m->cap_names) {
		size_t cap = m->cap_names ? 2 * m->cap_names : 256;
		char **p = realloc(out->names, cap * sizeof(*p));
		if (!p)
			return UINT32_MAX;
		out->names = p;
		m->cap_names = cap;
	}
	char *c = malloc(len + 1);
	if (!c)
		return UINT32_MAX;
	memcpy(c, name, len);
	c[len] = 0;
	out->names[out->n_names] = c;
	if (u64index_add(&m->site_ix, (uint32_t)out->n_names, h)) {
		free(c);
		return UINT32_MAX;
	}
	return (uint32_t)out->n_names++;
}

/* The site of flame node `node`; UINT32_MAX on out of memory. */
static uint32_t memory__site(struct memory__state *m, uint32_t node)
{
	if (node >= m->cap_node_site) {
		size_t cap = m->cap_node_site ? m->cap_node_site : 1024;
		while (cap <= node)
			cap *= 2;
		uint32_t *p = realloc(m->node_site, cap * sizeof(*p));
		if (!p)
			return UINT32_MAX;
		memset(p + m->cap_node_site, 0, (cap - m->cap_node_site) * sizeof(*p));
		m->node_site = p;
		m->cap_node_site = cap;
	}
	if (m->node_site[node])
		return m->node_site[node] - 1;
	char buf[4096];
	size_t len = flame_node_name(m->fl, node, m->o->stack, m->r, m->syms, buf, sizeof(buf));
	uint32_t site = memory__site_of_name(m, buf, len);
	if (site != UINT32_MAX)
		m->node_site[node] = site + 1;
	return site;
}

/* The process entry of pid (made on first use when make); NULL when absent or out of memory
 * (*nomem set). */
static struct memory__proc *memory__proc(struct memory__state *m, uint32_t pid, bool make,
					 bool *nomem)
{
	uint64_t *v = u64map_get(&m->pid_ix, pid);
	if (v)
		return &m->procs[*v];
	if (!make)
		return NULL;
	struct memory_report *out = m->out;
	size_t n = out->n_procs;
	struct memory__proc *p = realloc(m->procs, (n + 1) * sizeof(*p));
	if (p)
		m->procs = p;
	struct memory_process *q = p ? realloc(out->procs, (n + 1) * sizeof(*q)) : NULL;
	if (q)
		out->procs = q;
	if (!p || !q || u64map_put(&m->pid_ix, pid, n, NULL, NULL)) {
		*nomem = true;
		return NULL;
	}
	memset(&m->procs[n], 0, sizeof(*p));
	memset(&out->procs[n], 0, sizeof(*q));
	m->procs[n].pid = out->procs[n].pid = pid;
	u64map_init(&m->procs[n].acc.ix, SIZE_MAX);
	u64map_init(&m->procs[n].all.ix, SIZE_MAX);
	u64map_init(&m->procs[n].temp.ix, SIZE_MAX);
	out->n_procs++;
	return &m->procs[n];
}

static uint32_t memory__sample_pid(const struct memory__state *m, const struct trc_record *rec)
{
	return rec->rss.pid ? rec->rss.pid : m->root_pid;
}

static uint64_t memory__program_rss(const struct trc_record *rec)
{
	uint64_t b = rec->rss.buffers_bytes;
	return rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
}

/* Pass 1: each process's peak sample (the first of its largest value), over the RSS streams. */
static int memory__peaks(struct memory__state *m)
{
	unsigned ns = trcfile_reader_stream_count(m->r);
	bool *inc = calloc(ns ? ns : 1, sizeof(*inc));
	if (!inc)
		return -ENOMEM;
	for (unsigned s = 0; s < ns; s++)
		inc[s] = trcfile_reader_stream(m->r, s)->kind == TRC_STREAM_RSS;
	struct trcfile_iter *it = trcfile_iter_new_subset(m->r, inc);
	free(inc);
	if (!it)
		return -ENOMEM;
	struct trc_record rec;
	int rc;
	bool nomem = false;
	while ((rc = trcfile_iter_next(it, &rec, NULL)) == 1) {
		if (rec.type != TRC_REC_RSS)
			continue;
		struct memory__proc *p = memory__proc(m, memory__sample_pid(m, &rec), true, &nomem);
		if (!p)
			break;
		uint64_t v = memory__program_rss(&rec);
		if (!p->peak_ts || v > p->peak_rss) {
			p->peak_ts = rec.ts_ns;
			p->peak_rss = v;
		}
	}
	trcfile_iter_free(it);
	return nomem ? -ENOMEM : rc < 0 ? rc : 0;
}

static int memory__cmp_acc(const void *a, const void *b)
{
	const struct memory__acc *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* acc[0..n) sorted, cut to opts.sites (the rest as one MEMORY_OTHER_SITES entry), as sites. */
static int memory__sites(struct memory__state *m, struct memory__acc *acc, size_t n,
			 struct memory_site **out, size_t *n_out)
{
	*out = NULL;
	*n_out = 0;
	if (!n)
		return 0;
	qsort(acc, n, sizeof(*acc), memory__cmp_acc);
	size_t keep = m->o->sites && n > m->o->sites ? m->o->sites : n;
	struct memory_site *s = calloc(keep + (keep < n), sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < keep; i++)
		s[i] = (struct memory_site){m->out->names[acc[i].site], acc[i].bytes,
					    acc[i].allocs};
	if (keep < n) {
		uint32_t other =
			memory__site_of_name(m, MEMORY_OTHER_SITES, strlen(MEMORY_OTHER_SITES));
		if (other == UINT32_MAX) {
			free(s);
			return -ENOMEM;
		}
		s[keep].name = m->out->names[other];
		for (size_t i = keep; i < n; i++) {
			s[keep].bytes += acc[i].bytes;
			s[keep].allocs += acc[i].allocs;
		}
		keep++;
	}
	*out = s;
	*n_out = keep;
	return 0;
}

/* Adds (bytes, allocs) to site. */
static int memory__acc_add(struct memory__accum *a, uint32_t site, uint64_t bytes, uint64_t allocs)
{
	uint64_t *ix = u64map_get(&a->ix, site);
	if (ix) {
		a->v[*ix].bytes += bytes;
		a->v[*ix].allocs += allocs;
		return 0;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct memory__acc *v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	if (u64map_put(&a->ix, site, a->n, NULL, NULL))
		return -ENOMEM;
	a->v[a->n++] = (struct memory__acc){site, bytes, allocs};
	return 0;
}

/* Empties a (keeps its array for the next interval). */
static void memory__acc_clear(struct memory__accum *a)
{
	a->n = 0;
	u64map_destroy(&a->ix);
}

/* The sites of p's live blocks now, weighed (alloc_weight.h), into *out. */
static int memory__live_sites(struct memory__state *m, struct memory__proc *p,
			      struct memory_site **out, size_t *n_out)
{
	struct memory__accum a = {0};
	u64map_init(&a.ix, SIZE_MAX);
	size_t pos = 0;
	uint64_t addr, v;
	int rc = 0;
	while (!rc && p->live && allocmap_next(p->live, &pos, NULL, &addr, &v)) {
		uint32_t site = (uint32_t)(v >> MEMORY__SIZE_BITS);
		uint64_t size = v & MEMORY__SIZE_MAX;
		if (site != MEMORY__UNSAMPLED)
			rc = memory__acc_add(&a, site, alloc_weight_bytes(size, m->sample_bytes),
					     alloc_weight_count(size, m->sample_bytes));
	}
	if (!rc)
		rc = memory__sites(m, a.v, a.n, out, n_out);
	free(a.v);
	u64map_destroy(&a.ix);
	return rc;
}

/* The sites of p's live blocks now: its peak. */
static int memory__peak_sites(struct memory__state *m, struct memory__proc *p,
			      struct memory_process *q)
{
	return memory__live_sites(m, p, &q->peak_sites, &q->n_peak_sites);
}

static int memory__sample(struct memory__state *m, const struct trc_record *rec)
{
	bool nomem = false;
	struct memory__proc *p = memory__proc(m, memory__sample_pid(m, rec), false, &nomem);
	if (!p)
		return 0; /* cannot happen: pass 1 made every sampled process */
	struct memory_process *q = &m->out->procs[p - m->procs];
	uint64_t v = memory__program_rss(rec);
	if (q->n_series == p->cap_series) {
		size_t cap = p->cap_series ? 2 * p->cap_series : 64;
		struct memory_sample *s = realloc(q->series, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		q->series = s;
		p->cap_series = cap;
	}
	q->series[q->n_series++] =
		(struct memory_sample){rec->ts_ns, v, p->live_bytes, p->mapped_bytes};
	if (!p->peak_done && rec->ts_ns == p->peak_ts && v == p->peak_rss) {
		p->peak_done = true;
		q->peak_ts_ns = rec->ts_ns;
		q->peak_rss_bytes = v;
		q->peak_live_bytes = p->live_bytes;
		int rc = memory__peak_sites(m, p, q);
		if (rc)
			return rc;
	}
	if (!p->have_prev && (p->allocs || p->free_bytes)) {
		/* What it allocated before its first sample: RSS then is not known. */
		q->has_before_first = true;
		q->before_first = (struct memory_interval){
			.pid = p->pid,
			.t0_ns = p->first_ts,
			.t1_ns = rec->ts_ns,
			.rss_after = v,
			.alloc_bytes = p->alloc_bytes,
			.allocs = p->allocs,
			.free_bytes = p->free_bytes,
			.live_after = p->live_bytes,
		};
		if (memory__sites(m, p->acc.v, p->acc.n, &q->before_first.sites,
				  &q->before_first.n_sites))
			return -ENOMEM;
	}
	if (p->have_prev && v > p->prev_rss) {
		if (q->n_intervals == p->cap_intervals) {
			size_t cap = p->cap_intervals ? 2 * p->cap_intervals : 16;
			struct memory_interval *iv = realloc(q->intervals, cap * sizeof(*iv));
			if (!iv)
				return -ENOMEM;
			q->intervals = iv;
			p->cap_intervals = cap;
		}
		struct memory_interval *iv = &q->intervals[q->n_intervals];
		*iv = (struct memory_interval){
			.pid = p->pid,
			.t0_ns = p->prev_ts,
			.t1_ns = rec->ts_ns,
			.rss_before = p->prev_rss,
			.rss_after = v,
			.alloc_bytes = p->alloc_bytes,
			.allocs = p->allocs,
			.free_bytes = p->free_bytes,
			.live_before = p->prev_live,
			.live_after = p->live_bytes,
		};
		if (memory__sites(m, p->acc.v, p->acc.n, &iv->sites, &iv->n_sites))
			return -ENOMEM;
		q->n_intervals++;
	}
	memory__acc_clear(&p->acc);
	p->alloc_bytes = p->allocs = p->free_bytes = 0;
	p->have_prev = true;
	p->prev_ts = rec->ts_ns;
	p->prev_rss = v;
	p->prev_live = p->live_bytes;
	return 0;
}

static int memory__alloc_free(struct memory__state *m, const struct trc_record *rec, unsigned sidx,
			      const struct trcfile_stream_info *si)
{
	bool nomem = false;
	struct memory__proc *p = memory__proc(m, si->pid, false, &nomem);
	if (!p) {
		if (rec->type == TRC_REC_ALLOC)
			m->out->alloc_bytes_unsampled += rec->alloc.size;
		return 0;
	}
	struct memory_process *q = &m->out->procs[p - m->procs];
	if (!p->live && !(p->live = allocmap_new(MEMORY_LIVE_MAX)))
		return -ENOMEM;
	if (!p->first_ts)
		p->first_ts = rec->ts_ns;
	if (sidx >= m->n_last) {
		size_t n = sidx + 16;
		struct memory__last *l = realloc(m->last, n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		memset(l + m->n_last, 0, (n - m->n_last) * sizeof(*l));
		m->last = l;
		m->n_last = n;
	}
	struct memory__last *last = &m->last[sidx];
	if (last->open && rec->type == TRC_REC_FREE && rec->alloc.addr == last->addr &&
	    last->site != MEMORY__UNSAMPLED) {
		int err = memory__acc_add(&p->temp, last->site,
					  alloc_weight_bytes(last->size, m->sample_bytes),
					  alloc_weight_count(last->size, m->sample_bytes));
		if (err)
			return err;
	}
	last->open = false;
	uint64_t old = 0;
	if (rec->type == TRC_REC_FREE) {
		if (allocmap_take(p->live, 0, rec->alloc.addr, &old)) {
			p->live_bytes -= old & MEMORY__SIZE_MAX;
			p->free_bytes += old & MEMORY__SIZE_MAX;
		}
		return 0;
	}
	/* Sampled stacks: an allocation without one is in the live heap and the totals, and in
	 * no site (the sampled ones stand for it: alloc_weight.h). */
	bool unsampled = m->sample_bytes > 0 && !rec->alloc.stack_id;
	uint32_t site = MEMORY__UNSAMPLED;
	if (!unsampled) {
		int ferr;
		uint32_t node = flame_alloc_node(m->fl, sidx, si, rec, &ferr);
		if (ferr)
			return ferr;
		site = memory__site(m, node);
		if (site == UINT32_MAX)
			return -ENOMEM;
	}
	uint64_t size = rec->alloc.size > MEMORY__SIZE_MAX ? MEMORY__SIZE_MAX : rec->alloc.size;
	int err = allocmap_put(p->live, 0, rec->alloc.addr,
			       size | (uint64_t)site << MEMORY__SIZE_BITS, &old);
	if (err == -ENOSPC) {
		q->live_approximate = true;
	} else if (err) {
		return err;
	} else {
		p->live_bytes = p->live_bytes - (old & MEMORY__SIZE_MAX) + size;
	}
	p->alloc_bytes += rec->alloc.size;
	p->allocs++;
	*last = (struct memory__last){rec->alloc.addr, rec->alloc.size, site, true};
	if (unsampled)
		return 0;
	uint64_t wb = alloc_weight_bytes(rec->alloc.size, m->sample_bytes),
		 wn = alloc_weight_count(rec->alloc.size, m->sample_bytes);
	err = memory__acc_add(&p->all, site, wb, wn);
	return err ? err : memory__acc_add(&p->acc, site, wb, wn);
}

static int memory__cmp_proc(const void *a, const void *b)
{
	const struct memory_process *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The feed: the state, the options and the report it builds (m.out points at report). */
struct memory_feed {
	struct memory__state m;
	struct memory_opts opts;
	struct memory_report report;
	bool failed;
};

static void memory__state_free(struct memory__state *m)
{
	for (size_t i = 0; i < m->out->n_procs; i++) {
		allocmap_free(m->procs[i].live);
		free(m->procs[i].acc.v);
		u64map_destroy(&m->procs[i].acc.ix);
		free(m->procs[i].all.v);
		u64map_destroy(&m->procs[i].all.ix);
		free(m->procs[i].temp.v);
		u64map_destroy(&m->procs[i].temp.ix);
	}
	free(m->last);
	free(m->procs);
	free(m->node_site);
	u64index_destroy(&m->site_ix);
	u64map_destroy(&m->pid_ix);
	flame_free(m->fl);
}

void memory_feed_free(struct memory_feed *f)
{
	if (!f)
		return;
	memory__state_free(&f->m);
	memory_report_free(&f->report);
	free(f);
}

struct memory_feed *memory_feed_new(struct trcfile_reader *r, struct sym_resolver *syms,
				    const struct memory_opts *opts, int *err)
{
	struct memory_feed *f = calloc(1, sizeof(*f));
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->opts = *opts;
	f->m = (struct memory__state){
		.r = r,
		.syms = syms,
		.o = &f->opts,
		.out = &f->report,
		.fl = flame_new(FLAME_STACKS),
		.root_pid = trcfile_reader_header(r)->pid,
	};
	u64index_init(&f->m.site_ix, memory__name_hash, &f->m);
	u64map_init(&f->m.pid_ix, SIZE_MAX);
	if (f->m.fl)
		flame_use_stacks(f->m.fl, r);
	f->m.sample_bytes = alloc_weight_sample_bytes(r);
	*err = f->m.fl ? memory__peaks(&f->m) : -ENOMEM;
	if (*err) {
		memory_feed_free(f);
		return NULL;
	}
	return f;
}

int memory_feed_add(struct memory_feed *f, const struct trc_record *rec, unsigned sidx)
{
	struct memory__state *m = &f->m;
	if (f->failed || !m->out->n_procs)
		return f->failed ? -ENOMEM : 0;
	const struct trcfile_stream_info *si = trcfile_reader_stream(m->r, sidx);
	int rc = 0;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		rc = flame_add(m->fl, sidx, si, rec);
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		if (si->kind == TRC_STREAM_THREAD)
			rc = memory__alloc_free(m, rec, sidx, si);
		break;
	case TRC_REC_RSS:
		rc = memory__sample(m, rec);
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		if (si->kind == TRC_STREAM_THREAD) {
			bool nomem = false;
			struct memory__proc *p = memory__proc(m, si->pid, false, &nomem);
			if (p && rec->type == TRC_REC_MAP)
				p->mapped_bytes += rec->map.len;
			else if (p)
				p->mapped_bytes -= p->mapped_bytes < rec->map.len ? p->mapped_bytes
										  : rec->map.len;
		}
		break;
	default:
		break;
	}
	f->failed = rc != 0;
	return rc;
}

int memory_feed_finish(struct memory_feed *f, struct memory_report *out)
{
	memset(out, 0, sizeof(*out));
	if (f->failed) {
		memory_feed_free(f);
		return -ENOMEM;
	}
	struct flame_stats st;
	flame_get_stats(f->m.fl, &st);
	f->report.folded_frames = st.folded_frames;
	/* Over the whole run: allocated by site, temporary by site, live at the end (leaks). */
	if (f->opts.run_sites)
		f->opts.sites = f->opts.run_sites;
	for (size_t i = 0; i < f->report.n_procs; i++) {
		struct memory__proc *p = &f->m.procs[i];
		struct memory_process *q = &f->report.procs[i];
		int rc = memory__sites(&f->m, p->all.v, p->all.n, &q->sites, &q->n_sites);
		if (!rc)
			rc = memory__sites(&f->m, p->temp.v, p->temp.n, &q->temp_sites,
					   &q->n_temp_sites);
		if (!rc)
			rc = memory__live_sites(&f->m, p, &q->exit_sites, &q->n_exit_sites);
		q->exit_live_bytes = p->live_bytes;
		if (rc) {
			memory_feed_free(f);
			return rc;
		}
	}
	memory__state_free(&f->m);
	*out = f->report;
	free(f);
	if (out->n_procs)
		qsort(out->procs, out->n_procs, sizeof(*out->procs), memory__cmp_proc);
	return 0;
}

int memory_analyze(struct trcfile_reader *r, struct sym_resolver *syms,
		   const struct memory_opts *opts, struct memory_report *out)
{
	memset(out, 0, sizeof(*out));
	int rc = 0;
	struct memory_feed *f = memory_feed_new(r, syms, opts, &rc);
	if (!f)
		return rc;
	struct trcfile_iter *it = f->report.n_procs ? trcfile_iter_new(r) : NULL;
	if (f->report.n_procs && !it)
		rc = -ENOMEM;
	struct trc_record rec;
	unsigned sidx;
	while (!rc && it && (rc = trcfile_iter_next(it, &rec, &sidx)) == 1)
		rc = memory_feed_add(f, &rec, sidx);
	trcfile_iter_free(it);
	if (rc < 0) {
		memory_feed_free(f);
		return rc;
	}
	return memory_feed_finish(f, out);
}

void memory_report_free(struct memory_report *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_procs; i++) {
		struct memory_process *q = &m->procs[i];
		for (size_t k = 0; k < q->n_intervals; k++)
			free(q->intervals[k].sites);
		free(q->before_first.sites);
		free(q->intervals);
		free(q->series);
		free(q->peak_sites);
		free(q->sites);
		free(q->temp_sites);
		free(q->exit_sites);
	}
	free(m->procs);
	for (size_t i = 0; i < m->n_names; i++)
		free(m->names[i]);
	free(m->names);
	memset(m, 0, sizeof(*m));
}

static int memory__cmp_growth(const void *a, const void *b)
{
	const struct memory_interval *x = *(const struct memory_interval *const *)a;
	const struct memory_interval *y = *(const struct memory_interval *const *)b;
	uint64_t gx = x->rss_after - x->rss_before, gy = y->rss_after - y->rss_before;
	if (gx != gy)
		return gx > gy ? -1 : 1;
	if (x->t0_ns != y->t0_ns)
		return x->t0_ns < y->t0_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t memory_top_intervals(const struct memory_report *m, const struct memory_interval **out,
			    size_t n)
{
	size_t total = 0;
	for (size_t i = 0; i < m->n_procs; i++)
		total += m->procs[i].n_intervals;
	if (!total || !n)
		return 0;
	const struct memory_interval **all = malloc(total * sizeof(*all));
	if (!all)
		return 0; /* out of memory: none shown rather than the wrong ones */
	size_t k = 0;
	for (size_t i = 0; i < m->n_procs; i++)
		for (size_t j = 0; j < m->procs[i].n_intervals; j++)
			all[k++] = &m->procs[i].intervals[j];
	qsort(all, total, sizeof(*all), memory__cmp_growth);
	k = total < n ? total : n;
	memcpy(out, all, k * sizeof(*out));
	free(all);
	return k;
}
