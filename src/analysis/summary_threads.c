/* summary_threads.c - the summary's per-thread table.
 *
 * Purpose: one entry per (pid, tid) in s->threads: its events, lost records, bytes allocated
 * and time range (added by the pass over its stream) and its name (the reader's THREAD metadata at
 * first, then the last THREAD record seen in any stream; "tid N" for a thread the trace does
 * not name). At most SUMMARY__THREADS_MAX threads
 * (beyond: an error, hostile input only); names are cut to SUMMARY__THREAD_NAME_MAX bytes.
 *
 * Threads: the reader's thread.
 */
#include <stdio.h>

#include "summary_priv.h"

#define SUMMARY__THREADS_MAX (1u << 20)
/* A record may carry 4 MiB of name; the summary keeps this much of it. */
#define SUMMARY__THREAD_NAME_MAX 256u

void summary__threads_init(struct summary__threads *t)
{
	u64map_init(&t->map, SUMMARY__THREADS_MAX);
	t->cap = 0;
}

void summary__threads_free(struct summary__threads *t)
{
	u64map_destroy(&t->map);
}

static char *summary__thread_name_copy(const char *name, uint32_t len)
{
	return summary__strndup(name,
				len < SUMMARY__THREAD_NAME_MAX ? len : SUMMARY__THREAD_NAME_MAX);
}

/* The name of a thread the trace does not name (it never held a ring: NO_SLOT losses; or its
 * THREAD record was lost): "tid N", as pprof's thread frames say, never an empty string. */
static char *summary__thread_unnamed(uint32_t tid)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "tid %u", tid);
	return summary__thread_name_copy(buf, (uint32_t)n);
}

struct summary_thread *summary__thread(struct summary__state *m, uint32_t pid, uint32_t tid)
{
	struct summary *s = m->s;
	struct summary__threads *tt = &m->threads;
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint64_t *slot = u64map_get(&tt->map, key);
	if (slot)
		return &s->threads[*slot];
	if (s->n_threads == tt->cap) {
		size_t cap = tt->cap ? 2 * tt->cap : 16;
		void *p = realloc(s->threads, cap * sizeof(*s->threads));
		if (!p)
			goto nomem;
		s->threads = p;
		tt->cap = cap;
	}
	int err = u64map_put(&tt->map, key, s->n_threads, NULL, NULL);
	if (err) {
		m->err = trcfile_reader_fail(m->r, err == -ENOSPC ? -EFBIG : err, "too many threads");
		return NULL;
	}
	struct summary_thread *t = &s->threads[s->n_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	uint32_t len = 0;
	const char *name = trcfile_reader_thread_name(m->r, pid, tid, &len);
	t->name = name && len ? summary__thread_name_copy(name, len) : summary__thread_unnamed(tid);
	if (!t->name) {
		s->n_threads--;
		u64map_del(&tt->map, key, NULL);
		goto nomem;
	}
	return t;
nomem:
	summary__nomem(m);
	return NULL;
}

void summary__thread_named(struct summary__state *m, const struct trc_record *rec)
{
	struct summary_thread *t = summary__thread(m, rec->thread.pid, rec->thread.tid);
	if (!t)
		return;
	if (!rec->thread.name_len)
		return; /* keeps what it has: a name, or "tid N" */
	char *name = summary__thread_name_copy(rec->thread.name, rec->thread.name_len);
	if (!name) {
		summary__nomem(m);
		return;
	}
	free((char *)t->name);
	t->name = name;
}

static int summary__cmp_thread(const void *a, const void *b)
{
	const struct summary_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void summary__threads_finish(struct summary__state *m)
{
	struct summary *s = m->s;
	if (s->n_threads)
		qsort(s->threads, s->n_threads, sizeof(*s->threads), summary__cmp_thread);
}
