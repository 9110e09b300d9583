/* calltree_util.h - the call tree of a recorded trace, as text, for the suites that compare it
 * with what a program's source implies (tests/test_calltrees.c).
 *
 * ct_tree reads `trace-dump events FILE` and replays every thread's func_enter/func_exit
 * records strictly: an exit must close the innermost open frame of its thread, by name. Output,
 * one line per distinct call path, sorted: "P<k> main;foo;bar N" where k numbers the processes
 * in the order their first thread or function record appears and N counts the calls on that path.
 * Any exit that does not close the innermost frame adds "!exit P<k> path<-name", every frame still
 * open at the end of its thread's stream (the trace's end, or a THREAD record of the same
 * thread: the image it exec'd) "!open P<k> path": a right trace has neither, but for frames a
 * process really ended inside. */
#ifndef TRC_CALLTREE_UTIL_H
#define TRC_CALLTREE_UTIL_H

#include "e2e_util.h"

#define CT_MAX_LINES 4096
#define CT_MAX_THREADS 64
#define CT_MAX_DEPTH 64
#define CT_PATH_BYTES 1024

struct ct_thread {
	char key[32]; /* "pid/tid" */
	unsigned proc;
	char *frames[CT_MAX_DEPTH];
	unsigned depth;
};

struct ct_tree {
	char *lines[CT_MAX_LINES];
	unsigned long counts[CT_MAX_LINES];
	unsigned n;
	struct ct_thread threads[CT_MAX_THREADS];
	unsigned n_threads;
	unsigned pids[CT_MAX_THREADS];
	unsigned n_pids;
};

static inline void ct__count(struct ct_tree *t, const char *line)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->lines[i], line) == 0) {
			t->counts[i]++;
			return;
		}
	cr_assert_lt(t->n, CT_MAX_LINES);
	t->lines[t->n] = strdup(line);
	t->counts[t->n++] = 1;
}

static inline void ct__path(const struct ct_thread *th, char *out, size_t cap)
{
	size_t len = (size_t)snprintf(out, cap, "P%u ", th->proc);
	for (unsigned i = 0; i < th->depth && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ";" : "", th->frames[i]);
}

static inline struct ct_thread *ct__thread(struct ct_tree *t, const char *key, unsigned pid)
{
	for (unsigned i = 0; i < t->n_threads; i++)
		if (strcmp(t->threads[i].key, key) == 0)
			return &t->threads[i];
	cr_assert_lt(t->n_threads, CT_MAX_THREADS);
	struct ct_thread *th = &t->threads[t->n_threads++];
	memset(th, 0, sizeof(*th));
	snprintf(th->key, sizeof(th->key), "%s", key);
	unsigned k = 0;
	while (k < t->n_pids && t->pids[k] != pid)
		k++;
	if (k == t->n_pids)
		t->pids[t->n_pids++] = pid;
	th->proc = k;
	return th;
}

static inline int ct__cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tree of trace (see the top), as one malloc'd string of sorted lines. */
static inline char *ct_tree(const char *trace)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' events '%s'", e2e_path("bin/trace-dump"), trace);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	static struct ct_tree t;
	memset(&t, 0, sizeof(t));
	char line[4096], path[CT_PATH_BYTES + 64], out[CT_PATH_BYTES + 128];
	while (fgets(line, sizeof(line), p)) {
		char key[32], kind[32];
		if (sscanf(line, "%*s %31s %31s", key, kind) != 2)
			continue;
		bool enter = strcmp(kind, "func_enter") == 0;
		if (strcmp(kind, "thread") == 0) {
			/* A new image (exec) of the same thread: a stream of its own. */
			struct ct_thread *th =
				ct__thread(&t, key, (unsigned)strtoul(key, NULL, 10));
			if (th->depth) {
				ct__path(th, path, sizeof(path));
				snprintf(out, sizeof(out), "!open %s", path);
				ct__count(&t, out);
			}
			while (th->depth)
				free(th->frames[--th->depth]);
			continue;
		}
		if (!enter && strcmp(kind, "func_exit") != 0)
			continue;
		const char *q = strstr(line, " fn=\"");
		cr_assert_not_null(q, "no name: %s", line);
		q += 5;
		const char *e = strchr(q, '"');
		cr_assert_not_null(e);
		char *name = strndup(q, (size_t)(e - q));
		struct ct_thread *th = ct__thread(&t, key, (unsigned)strtoul(key, NULL, 10));
		if (enter) {
			cr_assert_lt(th->depth, CT_MAX_DEPTH, "deeper than %d", CT_MAX_DEPTH);
			th->frames[th->depth++] = name;
			ct__path(th, path, sizeof(path));
			ct__count(&t, path);
			continue;
		}
		if (th->depth && strcmp(th->frames[th->depth - 1], name) == 0) {
			free(th->frames[--th->depth]);
		} else {
			ct__path(th, path, sizeof(path));
			snprintf(out, sizeof(out), "!exit %s<-%s", path, name);
			ct__count(&t, out);
		}
		free(name);
	}
	pclose(p);
	for (unsigned i = 0; i < t.n_threads; i++) {
		struct ct_thread *th = &t.threads[i];
		if (th->depth) {
			ct__path(th, path, sizeof(path));
			snprintf(out, sizeof(out), "!open %s", path);
			ct__count(&t, out);
		}
		while (th->depth)
			free(th->frames[--th->depth]);
	}
	char *sorted[CT_MAX_LINES];
	size_t total = 1;
	for (unsigned i = 0; i < t.n; i++) {
		char *s = malloc(strlen(t.lines[i]) + 24);
		sprintf(s, "%s %lu", t.lines[i], t.counts[i]);
		sorted[i] = s;
		total += strlen(s) + 1;
		free(t.lines[i]);
	}
	qsort(sorted, t.n, sizeof(sorted[0]), ct__cmp);
	char *res = malloc(total);
	res[0] = 0;
	for (unsigned i = 0; i < t.n; i++) {
		strcat(res, sorted[i]);
		strcat(res, "\n");
		free(sorted[i]);
	}
	return res;
}

#endif /* TRC_CALLTREE_UTIL_H */
