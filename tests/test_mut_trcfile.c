/* test_mut_trcfile.c - the reader's time seek, exactly, and what trace-dump shows of names and
 * heaps (tests/mutants/LIST: cursor-seek-strict, dump-text-del, chrome-two-processes-key,
 * chrome-rss-pid, json-bad-continuation, dump-events-fraction).
 *
 * Purpose: after a seek to t, the first record returned is the first whose time is at or after
 * t, records at exactly t included, in a stream of many chunks and in the merged iteration of
 * two streams (what trace-dump's --from uses); a name's control bytes and DEL shown escaped by
 * trace-dump events; chrome's live heap kept per process when a forked child allocates at its
 * parent's address, and a child's RSS samples on the child; a UTF-8 lead byte not followed by
 * continuation bytes escaped in JSON; the exact offsets trace-dump events names when --from
 * leaves no record.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>

#include "test_trcfile_util.h"

static const struct trcfile_writer_opts small_chunks = {
	.chunk_bytes = TRCFILE_MIN_CHUNK_BYTES,
	.compress_threads = 1,
	.flags = TRCFILE_WRITER_NO_FSYNC,
};

/* Stream 0 at t0 + 10 i, stream 1 at t0 + 10 i + 5, 20000 instants each (many chunks). */
Test(mut_trcfile, seek_lands_on_the_first_record_at_or_after_t, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	const uint64_t t0 = 1000000000ull;
	enum { N = 20000 };
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 8);
	for (unsigned s = 0; s < 2; s++)
		for (int i = 0; i < N; i++) {
			struct trc_record r = {.type = TRC_REC_INSTANT,
					       .ts_ns = t0 + 10 * (uint64_t)i + 5 * s};
			r.value.name_id = 2;
			r.value.value = i;
			tu_add(&p.streams[s], &r);
		}
	cr_assert_eq(tu_write_plan(path, &p, &small_chunks, 1000), 0);
	struct trcfile_reader *rd = NULL;
	char msg[512] = "";
	cr_assert_eq(trcfile_reader_open(path, &rd, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_gt(trcfile_reader_stream(rd, 0)->chunks, 3, "several chunks");
	static const int ks[] = {0, 1, 999, 1000, 4321, 12345, N - 1};
	struct trc_record rec;
	for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		uint64_t t = t0 + 10 * (uint64_t)ks[j];
		struct trcfile_cursor *c = trcfile_cursor_new(rd, 0);
		cr_assert_not_null(c);
		cr_assert_eq(trcfile_cursor_seek(c, t), 0);
		cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
		cr_assert_eq(rec.ts_ns, t, "cursor seek to record %d: at %llu", ks[j],
			     (unsigned long long)(rec.ts_ns - t0));
		cr_assert_eq(trcfile_cursor_seek(c, t + 1), 0);
		if (ks[j] == N - 1) {
			cr_assert_eq(trcfile_cursor_next(c, &rec), 0, "nothing after the last");
		} else {
			cr_assert_eq(trcfile_cursor_next(c, &rec), 1);
			cr_assert_eq(rec.ts_ns, t + 10);
		}
		trcfile_cursor_free(c);

		struct trcfile_iter *it = trcfile_iter_new(rd);
		cr_assert_not_null(it);
		cr_assert_eq(trcfile_iter_seek(it, t + 5), 0);
		cr_assert_eq(trcfile_iter_next(it, &rec, NULL), 1);
		cr_assert_eq(rec.ts_ns, t + 5, "merged seek: stream 1's record at exactly t");
		cr_assert_eq(rec.value.value, ks[j]);
		trcfile_iter_free(it);
	}
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* trace-dump events shows a name's control bytes and DEL escaped, never raw to the terminal
 * (mutant dump-text-del). */
Test(mut_trcfile, events_text_escapes_control_bytes_and_del, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	static const char name[] = "a\x7f"
				   "b\x1b"
				   "c\"d\\e\tf";
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000ull};
	r.name.id = 2;
	r.name.str = name;
	r.name.len = sizeof(name) - 1;
	tu_add(&p.streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1000000100ull};
	r.value.name_id = 2;
	r.value.value = 5;
	tu_add(&p.streams[1], &r);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump events '%s' >'%s/out.txt' 2>&1", tu_build(), path, dir),
		0);
	char *out = tu_slurp_text(dir, "out.txt");
	cr_assert(strstr(out, "\"a\\x7fb\\x1bc\\\"d\\\\e\\tf\""), "%s", out);
	cr_assert_null(strchr(out, 0x7f), "a raw DEL in: %s", out);
	cr_assert_null(strchr(out, 0x1b), "a raw ESC in: %s", out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A trace of two processes (a parent and its forked child: the same heap addresses) with one
 * NAME, for trace-dump's JSON outputs. */
static void two_process_plan(struct tu_plan *p, const char *name, uint32_t name_len)
{
	tu_plan_stream(p, TRC_STREAM_META, 10, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, 10, 10);
	tu_plan_stream(p, TRC_STREAM_THREAD, 11, 11);
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000ull};
	r.name.id = 2;
	r.name.str = name;
	r.name.len = name_len;
	tu_add(&p->streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_INSTANT, .ts_ns = 1000000050ull};
	r.value.name_id = 2;
	tu_add(&p->streams[1], &r);
	/* parent: ALLOC X 100 at 100; child: ALLOC X 50 at 200, FREE X at 300 */
	r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = 1000000100ull};
	r.alloc.addr = 0x7f0000001000ull;
	r.alloc.size = 100;
	tu_add(&p->streams[1], &r);
	r.ts_ns = 1000000200ull;
	r.alloc.size = 50;
	tu_add(&p->streams[2], &r);
	r = (struct trc_record){.type = TRC_REC_FREE, .ts_ns = 1000000300ull};
	r.alloc.addr = 0x7f0000001000ull;
	tu_add(&p->streams[2], &r);
}

/* trace-dump chrome keeps each process's live heap apart: the child's block at the parent's
 * address is its own (mutant chrome-two-processes-key). */
Test(mut_trcfile, chrome_live_heap_per_process, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	two_process_plan(&p, "mark", 4);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' -o '%s/out.json' >'%s/err.txt' 2>&1",
			   tu_build(), path, dir, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	/* In time order: parent 100; child 50, then 0; the parent's 100 untouched. */
	static const char key[] = "\"name\":\"heap live bytes\",\"args\":{\"bytes\":";
	unsigned long long want[] = {100, 50, 0}, got[4] = {0};
	int n = 0;
	for (const char *q = strstr(out, key); q; q = strstr(q + 1, key)) {
		cr_assert_lt(n, 4, "%s", out);
		got[n++] = strtoull(q + sizeof(key) - 1, NULL, 10);
	}
	cr_assert_eq(n, 3, "%s", out);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(got[i], want[i], "heap live bytes #%d: %llu, want %llu: %s", i, got[i],
			     want[i], out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* A lead byte followed by another lead byte is not UTF-8: both bytes escaped in JSON
 * (mutant json-bad-continuation). */
Test(mut_trcfile, json_lead_byte_without_continuation_escaped, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	static const char name[] = "a\xc3\xc3z\xe2\x82\xf0y\xc3\xa9";
	struct tu_plan p = {0};
	two_process_plan(&p, name, sizeof(name) - 1);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary --json '%s' >'%s/out.json' 2>&1", tu_build(),
			   path, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	/* Invalid bytes one by one as \u00XX; the valid é (c3 a9) as it is. */
	cr_assert(strstr(out, "\"a\\u00c3\\u00c3z\\u00e2\\u0082\\u00f0y\xc3\xa9\""), "%s", out);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* The pid of the chrome event that holds at, and its program_bytes. */
static void rss_event(const char *out, const char *at, unsigned long *pid, unsigned long *bytes)
{
	const char *q = at;
	while (q > out && strncmp(q, "\"pid\":", 6) != 0)
		q--;
	cr_assert_eq(strncmp(q, "\"pid\":", 6), 0, "no pid before %.60s", at);
	*pid = strtoul(q + 6, NULL, 10);
	const char *b = strstr(at, "\"program_bytes\":");
	cr_assert_not_null(b);
	*bytes = strtoul(b + 16, NULL, 10);
}

/* trace-dump chrome puts an RSS sample on the process it measured (a child's samples come in
 * the RSS stream of the traced program): mutant chrome-rss-pid. */
Test(mut_trcfile, chrome_rss_sample_on_its_process, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	two_process_plan(&p, "mark", 4);
	struct tu_stream *rss = tu_plan_stream(&p, TRC_STREAM_RSS, 10, 0);
	struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = 1000000400ull};
	r.rss.pid = 10;
	r.rss.rss_bytes = 5u << 20;
	tu_add(rss, &r);
	r.ts_ns = 1000000500ull;
	r.rss.pid = 11;
	r.rss.rss_bytes = 7u << 20;
	tu_add(rss, &r);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' -o '%s/out.json' >'%s/err.txt' 2>&1",
			   tu_build(), path, dir, dir),
		     0);
	char *out = tu_slurp_text(dir, "out.json");
	unsigned long pids[2] = {0}, bytes[2] = {0};
	int n = 0;
	for (const char *q = strstr(out, "\"name\":\"RSS\""); q;
	     q = strstr(q + 1, "\"name\":\"RSS\"")) {
		cr_assert_lt(n, 2, "%s", out);
		rss_event(out, q, &pids[n], &bytes[n]);
		n++;
	}
	cr_assert_eq(n, 2, "%s", out);
	cr_assert_eq(pids[0], 10);
	cr_assert_eq(bytes[0], 5ul << 20);
	cr_assert_eq(pids[1], 11, "the child's sample shown on pid %lu", pids[1]);
	cr_assert_eq(bytes[1], 7ul << 20);
	free(out);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* trace-dump events says where the records lie when --from leaves none, in exact offsets
 * (mutant dump-events-fraction). */
Test(mut_trcfile, events_no_match_names_exact_offsets, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	/* tu_header's start is 1 s: records 0.25 s and 1.234567891 s after it */
	static const uint64_t ts[] = {1250000000ull, 2234567891ull};
	for (int i = 0; i < 2; i++) {
		struct trc_record r = {.type = TRC_REC_INSTANT, .ts_ns = ts[i]};
		r.value.name_id = 2;
		tu_add(&p.streams[0], &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 10), 0);
	tu_sh("%s/bin/trace-dump events --from 5s '%s' >'%s/out.txt' 2>'%s/err.txt'", tu_build(),
	      path, dir, dir);
	char *err = tu_slurp_text(dir, "err.txt");
	cr_assert(strstr(err, "(its records lie between 0.25s and 1.234567891s)"), "%s", err);
	free(err);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}
