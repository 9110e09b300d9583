/* test_drain_util.h - what the drain's encoding suites share (tests/test_drain_fused.c,
 * tests/test_drain_boundaries.c): a sink that writes the thread streams' events into one file
 * stream through the real writer, by records (the old path: session__record, trcfile__encode)
 * or by windows (the fused path), a drain pass with the session's clock pinned to the test's,
 * and a byte-for-byte comparison of two files. Not a library part.
 *
 * Threads: the test thread is drain (and producer) at once.
 */
#ifndef TEST_DRAIN_UTIL_H
#define TEST_DRAIN_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "record.h"
#include "session.h"
#include "session_internal.h"
#include "trcfile.h"

/* A sink that writes the thread streams' events (and nothing else) into one file stream, and
 * counts the CORRUPT losses reported. */
struct fsink {
	struct trcfile_writer *w;
	struct trcfile_stream *st;
	uint64_t events, corrupt;
	uint32_t name_id, names; /* NAME records delivered for name_id */
	uint64_t name_at; /* events delivered before the first of them (the open window's too) */
	const struct trcfile_window *win; /* the open window, NULL when none */
};

static inline struct trcfile_stream *fs_stream(struct fsink *f)
{
	if (!f->st)
		f->st = trcfile_stream_open(f->w, TRC_STREAM_THREAD, 1, 2);
	return f->st;
}

static inline int fs_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct fsink *f = arg;
	if (r->type == TRC_REC_NAME && r->name.id == f->name_id && !f->names++)
		f->name_at = f->events + (f->win ? f->win->count : 0);
	if (st->kind == TRC_STREAM_THREAD && r->type == TRC_REC_LOST &&
	    r->lost.reason == TRC_LOST_CORRUPT)
		f->corrupt++;
	if (st->kind != TRC_STREAM_THREAD || !trc_rec_is_event(r->type))
		return 0;
	f->events++;
	return trcfile_stream_append(fs_stream(f), r);
}

static inline int fs_window_open(void *arg, const struct session_stream *st, uint64_t ts,
				 struct trcfile_window *win)
{
	struct fsink *f = arg;
	cr_assert_eq(st->kind, TRC_STREAM_THREAD);
	f->win = win;
	return trcfile_stream_window_open(fs_stream(f), ts, win);
}

static inline int fs_window_close(void *arg, const struct session_stream *st,
				  struct trcfile_window *win)
{
	struct fsink *f = arg;
	f->events += win->count;
	f->win = NULL;
	return trcfile_stream_window_close(fs_stream(f), win);
}

/* A writer to path of chunks of chunk_bytes (one compressor: chunks reach the file in order). */
static inline struct trcfile_writer *open_writer(const char *path, uint32_t chunk_bytes)
{
	static const char cmd[] = "test_drain";
	struct trcfile_header_info h = {
		.cmdline = cmd,
		.cmdline_len = sizeof(cmd) - 1,
		.pid = 1,
		.start_mono_ns = 1000000000ull,
		.start_realtime_ns = 1,
		.clock_source = TRC_CLOCK_GETTIME,
		.buffer_bytes = 1u << 22,
	};
	struct trcfile_writer_opts o = {
		.chunk_bytes = chunk_bytes,
		.compress_threads = 1,
		.flags = TRCFILE_WRITER_NO_FSYNC,
	};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "writer: %d", err);
	return w;
}

/* The clock the drain converts ring times with: none (ns), or TSC with these two segments. */
struct clock_setup {
	bool tsc;
	struct trc_clock_conv cur, prev;
};

/* One drain pass, the session's conversion pinned to the test's (no refit in between). */
static inline long drain_once(struct trc_session *s, const struct session_sink *k,
			      const struct clock_setup *cs)
{
	if (cs && cs->tsc) {
		s->geom.clock_mode = TRC_CLOCK_TSC;
		s->conv_cur = cs->cur;
		s->conv_prev = cs->prev;
		s->last_refit_ns = trc_mono_ns();
	}
	return session_drain(s, k);
}

static inline void drain_idle(struct trc_session *s, const struct session_sink *k,
			      const struct clock_setup *cs)
{
	int idle = 0;
	while (idle < 2) {
		long n = drain_once(s, k, cs);
		cr_assert_geq(n, 0, "drain: %ld", n);
		idle = n == 0 ? idle + 1 : 0;
	}
}

static inline void *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	cr_assert_not_null(fp);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	void *buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static inline void assert_same_files(const char *a, const char *b)
{
	size_t la, lb;
	uint8_t *fa = slurp(a, &la), *fb = slurp(b, &lb);
	cr_assert_eq(la, lb, "file sizes: old %zu, fused %zu", la, lb);
	size_t first_diff = la;
	for (size_t i = 0; i < la; i++)
		if (fa[i] != fb[i]) {
			first_diff = i;
			break;
		}
	cr_assert_eq(first_diff, la, "the files differ first at byte %zu of %zu", first_diff, la);
	free(fa);
	free(fb);
}

#endif /* TEST_DRAIN_UTIL_H */
