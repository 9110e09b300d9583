/* test_session_util.h - helpers for the session/runtime/preload suites (not a library part).
 *
 * ts_start: a session created in this very process, named in TRC_SESSION_FD (CLOEXEC cleared so
 * fork+exec children inherit it), and the library attached to it, so the test is recorder and
 * producer at once. ts_collect: a session_sink that keeps every record (strings copied) in a
 * growable array, with per-type counts. Single-threaded use of a collector (the drain thread).
 */
#ifndef TEST_SESSION_UTIL_H
#define TEST_SESSION_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness_util.h"
#include "session.h"
#include "session_internal.h"
#include "trc.h"
#include "trcfile.h" /* the names of record types and lost reasons */

struct ts_rec {
	struct session_stream st;
	struct trc_record r;
	char str[512]; /* copy of the record's string, NUL-terminated */
};

struct ts_collect {
	struct ts_rec *v;
	size_t n, cap;
	size_t by_type[TRC_REC_TYPE_COUNT];
	uint64_t lost[8]; /* by reason: the counts the LOST records carry */
	/* LOST records by reason. A ring declared corrupt ends its stream with a LOST of count 0
	 * (reason CORRUPT) and a NOTE, so only the records say that it happened. */
	size_t lost_records[8];
	size_t ends;
	uint64_t ended_keys[4096];
};

static int ts__record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct ts_collect *c = arg;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		if (!c->v)
			abort();
	}
	struct ts_rec *x = &c->v[c->n++];
	x->st = *st;
	x->r = *r;
	const char *s = NULL;
	uint32_t len = 0;
	switch (r->type) {
	case TRC_REC_NAME:
		s = r->name.str;
		len = r->name.len;
		break;
	case TRC_REC_THREAD:
		s = r->thread.name;
		len = r->thread.name_len;
		break;
	case TRC_REC_PROCESS:
		s = r->process.cmdline;
		len = r->process.cmdline_len;
		break;
	case TRC_REC_MODULE:
		s = r->module.path;
		len = r->module.path_len;
		break;
	case TRC_REC_NOTE:
		s = r->note.text;
		len = r->note.len;
		break;
	default:
		break;
	}
	if (len >= sizeof(x->str))
		len = sizeof(x->str) - 1;
	if (s)
		memcpy(x->str, s, len);
	x->str[len] = 0;
	if (r->type < TRC_REC_TYPE_COUNT)
		c->by_type[r->type]++;
	if (r->type == TRC_REC_LOST && r->lost.reason < 8) {
		c->lost[r->lost.reason] += r->lost.count;
		c->lost_records[r->lost.reason]++;
	}
	return 0;
}

static void ts__end(void *arg, const struct session_stream *st)
{
	struct ts_collect *c = arg;
	if (c->ends < 4096)
		c->ended_keys[c->ends] = st->key;
	c->ends++;
}

static inline struct session_sink ts_sink(struct ts_collect *c)
{
	struct session_sink k = {.arg = c, .record = ts__record, .stream_end = ts__end};
	return k;
}

static inline void ts_collect_free(struct ts_collect *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static inline uint64_t ts_lost_total(const struct ts_collect *c)
{
	uint64_t t = 0;
	for (int i = 0; i < 8; i++)
		t += c->lost[i];
	return t;
}

/* Whether the recorder said something went wrong: a LOST record of reason CORRUPT (whatever
 * its count: a stream declared corrupt ends with a count of 0) or any NOTE. */
static inline bool ts_trouble(const struct ts_collect *c)
{
	return c->lost_records[TRC_LOST_CORRUPT] || c->by_type[TRC_REC_NOTE];
}

/* What a failure message needs to explain itself: lost counts by reason, records by type, and
 * the text of every NOTE (cut to fit). Returns buf. */
static inline const char *ts_describe(const struct ts_collect *c, char *buf, size_t cap)
{
	size_t n = 0;
#define TS__PUT(...)                                                          \
	do {                                                                  \
		if (n < cap)                                                  \
			n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__); \
	} while (0)
	TS__PUT("lost by reason:");
	for (int i = 0; i < 8; i++)
		if (c->lost_records[i])
			TS__PUT(" %s %llu (%zu records)", trcfile_lost_reason_name((uint32_t)i),
				(unsigned long long)c->lost[i], c->lost_records[i]);
	TS__PUT("; records by type:");
	for (int t = 0; t < TRC_REC_TYPE_COUNT; t++)
		if (c->by_type[t])
			TS__PUT(" %s %zu", trcfile_type_name((uint32_t)t), c->by_type[t]);
	TS__PUT("; streams ended %zu", c->ends);
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_NOTE)
			TS__PUT("; NOTE: %s", c->v[i].str);
#undef TS__PUT
	if (cap)
		buf[cap - 1] = 0;
	return buf;
}

/* ts_describe into a buffer of the calling thread's, for a failure message. */
static inline const char *ts_why(const struct ts_collect *c)
{
	static __thread char buf[4096];
	return ts_describe(c, buf, sizeof(buf));
}

/* Nothing lost, and nothing the recorder could not count: no LOST record of any count (a
 * corrupt stream's says 0) and no NOTE. */
static inline bool ts_nothing_lost(const struct ts_collect *c)
{
	return ts_lost_total(c) == 0 && !ts_trouble(c);
}

/* Creates a session for the programs this process will start: its fd inheritable and named in
 * TRC_SESSION_FD, this process not attached. Returns NULL (*err = -errno) on failure. */
static inline struct trc_session *ts_session_for_children(const struct session_config *cfg,
							  int *err)
{
	struct rlimit fsize = hu_fsize_lift(); /* the memfd is sized for every ring */
	struct trc_session *s = session_create(cfg, err);
	hu_fsize_restore(fsize);
	if (!s)
		return NULL;
	int fd = session_fd(s);
	fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
	char num[16];
	snprintf(num, sizeof(num), "%d", fd);
	setenv(TRC_SESSION_FD_ENV, num, 1);
	return s;
}

/* Creates a session, publishes it in the environment (inheritable) and attaches this process.
 * Returns NULL on failure. */
static inline struct trc_session *ts_start(const struct session_config *cfg, int *attach_rc)
{
	int err = 0;
	/* A ring filled with no drain running waits for one (session_layout.h "Residency"): in
	 * these tests, that is by design, so not the recorder's 10 s. */
	struct session_config c = cfg ? *cfg : (struct session_config){0};
	if (!c.ring_wait_ns)
		c.ring_wait_ns = 200000000ull;
	struct trc_session *s = ts_session_for_children(&c, &err);
	if (!s)
		return NULL;
	int rc = trc_attach();
	if (attach_rc)
		*attach_rc = rc;
	return s;
}

/* Drains until a drain returns nothing twice in a row. */
static inline long ts_drain_idle(struct trc_session *s, struct ts_collect *c)
{
	struct session_sink k = ts_sink(c);
	long total = 0, n;
	int idle = 0;
	while (idle < 2) {
		n = session_drain(s, &k);
		if (n < 0)
			return n;
		total += n;
		idle = n == 0 ? idle + 1 : 0;
	}
	return total;
}

static inline const char *ts_build_dir(void)
{
	const char *b = getenv("TRC_BUILD");
	return b && *b ? b : "build";
}

/* The name of a name id, from the NAME records collected (NULL if none). */
static inline const char *ts_name_of(const struct ts_collect *c, uint32_t id)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_NAME && c->v[i].r.name.id == id)
			return c->v[i].str;
	return NULL;
}

/* The slot whose claimer is thread tid (the last such; a freed slot's tid is 0), or -1: what the
 * region says, for tests that reach into a thread's slot or ring. */
static inline int ts_slot_of_tid(struct trc_session *s, uint32_t tid)
{
	int slot = -1;
	for (uint32_t i = 0; i < s->geom.max_slots; i++)
		if (session__slot(s, i)->tid == tid)
			slot = (int)i;
	return slot;
}

static inline void ts_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ts_run_traced with the sink the drain uses while the child runs (NULL: ts_sink(c)); the
 * drain after it exits goes to c. */
static inline int ts_run_traced_into(struct trc_session *s, const struct session_sink *during,
				     struct ts_collect *c, char *const argv[],
				     const char *const *env_add, const char *in_path,
				     const char *out_path)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		for (const char *const *e = env_add; e && *e; e++)
			putenv((char *)*e);
		int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
		int out =
			open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	struct session_sink k = during ? *during : ts_sink(c);
	int status = 0;
	for (;;) {
		if (s)
			session_drain(s, &k);
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0)
			return -1;
		ts_sleep_ms(2);
	}
	if (s) {
		ts_sleep_ms(60); /* past the reap interval: the dead process's slots get freed */
		ts_drain_idle(s, c);
	}
	return status;
}

/* Spawns argv with env additions (NULL-terminated "K=V" list), stdin from in_path (or
 * /dev/null), stdout to out_path (or /dev/null); drains the session into c until the child
 * exits, then drains until idle. Returns the wait status, or -1. */
static inline int ts_run_traced(struct trc_session *s, struct ts_collect *c, char *const argv[],
				const char *const *env_add, const char *in_path,
				const char *out_path)
{
	return ts_run_traced_into(s, NULL, c, argv, env_add, in_path, out_path);
}

#endif /* TEST_SESSION_UTIL_H */
