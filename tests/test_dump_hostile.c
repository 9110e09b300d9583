/* test_dump_hostile.c - trace-dump summary on traces that are legitimate but awkward (issue 12):
 * time that steps back inside a stream (TSC refits), losses of every reason, spans cut by a
 * loss. Traces are made with the writer (test_trcfile_util.h); the figures are exact. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness_util.h"
#include "test_trcfile_util.h"
#include "trcfile_codec.h"

static const char *dh_dump(void)
{
	static char path[PATH_MAX];
	const char *b = getenv("TRC_BUILD");
	char rel[512];
	snprintf(rel, sizeof(rel), "%s/bin/trace-dump", b && *b ? b : "build");
	cr_assert_eq(access(rel, X_OK), 0, "%s not built", rel);
	cr_assert_not_null(realpath(rel, path)); /* absolute: some tests run it in their dir */
	return path;
}

/* Runs `trace-dump summary [--json] trc`, returns its stdout (free it). */
static char *dh_summary(const char *dir, const char *trc, bool json)
{
	char cmd[1200], out[400];
	snprintf(out, sizeof(out), "%s/summary.out", dir);
	snprintf(cmd, sizeof(cmd), "timeout 60 '%s' summary %s '%s' >'%s'", dh_dump(),
		 json ? "--json" : "", trc, out);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %x", cmd, st);
	size_t n = 0;
	uint8_t *b = tu_read_file(out, &n);
	char *s = realloc(b, n + 1);
	s[n] = 0;
	return s;
}

/* The JSON object of name `name` in the summary's "names" array. */
static const char *dh_name(const char *json, const char *name)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "{\"name\":\"%s\",", name);
	const char *p = strstr(json, pat);
	cr_assert_not_null(p, "no name %s in %s", name, json);
	return p;
}

static int64_t dh_int(const char *from, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(from, pat);
	cr_assert_not_null(p, "no %s", key);
	return strtoll(p + strlen(pat), NULL, 10);
}

/* A meta stream naming ids 1.."work", 2.."outer", and one thread stream; returns the thread's. */
static struct tu_stream *dh_plan(struct tu_plan *p)
{
	tu_plan_stream(p, TRC_STREAM_META, 100, 0);
	tu_plan_stream(p, TRC_STREAM_THREAD, 100, 101);
	static const char *const names[] = {"", "work", "outer"};
	for (uint32_t i = 1; i < 3; i++)
		tu_add_name(&p->streams[0], i, names[i], 1000);
	return &p->streams[1];
}

static void dh_span(struct tu_stream *s, int type, uint32_t id, uint64_t ts)
{
	struct trc_record r = {.type = (uint32_t)type, .ts_ns = ts};
	r.span.name_id = id;
	tu_add(s, &r);
}

static void dh_pairs(struct tu_stream *s, uint64_t *t, int n, uint64_t dur)
{
	for (int i = 0; i < n; i++) {
		dh_span(s, TRC_REC_SPAN_BEGIN, 1, *t);
		dh_span(s, TRC_REC_SPAN_END, 1, *t + dur);
		*t += 100;
	}
}

/* Writes the plan; the thread stream's chunk is ended after its record cut_after (as the
 * recorder ends chunks every second), none when 0. */
static void dh_write_cut(struct tu_plan *p, const char *trc, size_t cut_after)
{
	struct trcfile_header_info h = tu_header();
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(trc, &h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	for (size_t i = 0; i < p->n; i++) {
		struct trcfile_stream *s = trcfile_stream_open(
			w, p->streams[i].kind, p->streams[i].pid, p->streams[i].tid);
		cr_assert_not_null(s);
		for (size_t k = 0; k < p->streams[i].n; k++) {
			cr_assert_eq(trcfile_stream_append(s, &p->streams[i].recs[k]), 0);
			if (i == 1 && cut_after && k + 1 == cut_after)
				cr_assert_eq(trcfile_stream_flush(s), 0);
		}
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
	tu_plan_free(p);
}

static void dh_write(struct tu_plan *p, const char *trc)
{
	dh_write_cut(p, trc, 0);
}

/* Item 7: a span whose end is stamped before its begin (time stepped back) lasts 0, on the
 * fast path as on the slow one; never 1.8e19 ns. Inside a chunk a step back is a negative
 * delta, which the fast loop leaves to the checked decoder; across chunks it is not: the end
 * here opens the next chunk. */
static void dh_span_back(bool across_chunks)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/back.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 200, 50);
	dh_span(th, TRC_REC_SPAN_BEGIN, 2, t + 500000);
	size_t cut = th->n;
	dh_span(th, TRC_REC_SPAN_END, 2, t + 100000); /* 400 us before its begin */
	t += 600000;
	dh_pairs(th, &t, 200, 50);
	dh_write_cut(&p, trc, across_chunks ? cut : 0);
	char *json = dh_summary(dir, trc, true);
	const char *outer = dh_name(json, "outer");
	cr_expect_eq(dh_int(outer, "spans"), 1, "%s", outer);
	cr_expect_eq(dh_int(outer, "span_max_ns"), 0, "%.300s", outer);
	cr_expect_eq(dh_int(outer, "span_total_ns"), 0, "%.300s", outer);
	cr_expect_eq(dh_int(dh_name(json, "work"), "span_max_ns"), 50);
	free(json);
	tu_rm_rf(dir);
}

Test(dump_hostile, span_ending_before_it_began_lasts_zero, .timeout = 60)
{
	dh_span_back(true);
}

/* The same step back inside one chunk: the checked decoder's path (summary_spans.c). */
Test(dump_hostile, span_ending_before_it_began_in_one_chunk_lasts_zero, .timeout = 60)
{
	dh_span_back(false);
}

/* Item 11: REENTRANT losses are in the summary's lost-by-reason, text and JSON. */
Test(dump_hostile, reentrant_losses_are_shown_by_reason, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/reentrant.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 3, 10);
	struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = t};
	r.lost.count = 5;
	r.lost.reason = TRC_LOST_REENTRANT;
	tu_add(th, &r);
	dh_write(&p, trc);
	char *json = dh_summary(dir, trc, true);
	cr_expect_eq(dh_int(json, "events_lost"), 5);
	cr_expect(strstr(json, "\"reentrant\":5") != NULL, "%s", json);
	free(json);
	char *text = dh_summary(dir, trc, false);
	cr_expect(strstr(text, "lost by reason: reentrant 5\n") != NULL, "%s", text);
	free(text);
	tu_rm_rf(dir);
}

/* Item 15: after a LOST record, the spans open on that stream end as unknown: a later END is
 * never paired with a BEGIN from before the gap (a 20 ns span shown as lasting a second). */
Test(dump_hostile, spans_are_not_paired_across_a_loss, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/gap.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 100, 20);
	dh_span(th, TRC_REC_SPAN_BEGIN, 1, t);
	struct trc_record r = {.type = TRC_REC_LOST, .ts_ns = t + 10};
	r.lost.count = 1000;
	r.lost.reason = TRC_LOST_RING_FULL;
	tu_add(th, &r);
	t += 1000000000; /* the END of the lost BEGIN, a second later */
	dh_span(th, TRC_REC_SPAN_END, 1, t);
	t += 100;
	dh_pairs(th, &t, 100, 20);
	dh_write(&p, trc);
	char *json = dh_summary(dir, trc, true);
	const char *work = dh_name(json, "work");
	cr_expect_eq(dh_int(work, "span_max_ns"), 20, "%.300s", work);
	cr_expect_eq(dh_int(work, "spans"), 200, "%.300s", work);
	cr_expect_eq(dh_int(json, "spans_cut_by_loss"), 1, "%s", json);
	cr_expect_eq(dh_int(json, "spans_unmatched_end"), 1, "%s", json);
	free(json);
	tu_rm_rf(dir);
}

/* Item 12: the footer's size comes from the trailer, which a sparse file can make tens of GB: the
 * reader checks it against what the chunks before it could need before it reads a byte of it,
 * and reads such a file by its chunks, in bounded memory. */
Test(dump_hostile, sparse_file_with_a_huge_footer_claim_reads_in_bounded_memory, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300], bad[300];
	snprintf(trc, sizeof(trc), "%s/ok.trc", dir);
	snprintf(bad, sizeof(bad), "%s/sparse.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 100, 20);
	dh_write(&p, trc);
	size_t n = 0;
	uint8_t *b = tu_read_file(trc, &n);
	cr_assert_gt(n, 64);
	const uint8_t *tr = b + n - 32;
	uint64_t foff;
	memcpy(&foff, tr, 8);
	/* Everything but the trailer, then 20 GiB of hole, then a trailer whose footer is
	 * everything from the old footer to it (valid trailer checksum). */
	struct rlimit fsize = hu_fsize_lift(); /* a hole, not the disk */
	int fd = open(bad, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, n - 32), (ssize_t)(n - 32));
	uint64_t size = 20ull << 30;
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	uint8_t nt[32];
	memcpy(nt, tr, 32);
	uint64_t fbytes = size - 32 - foff;
	memcpy(nt + 8, &fbytes, 8);
	uint32_t crc = trcfile__crc32c(0, nt, 20);
	memcpy(nt + 20, &crc, 4);
	cr_assert_eq(pwrite(fd, nt, 32, (off_t)(size - 32)), 32);
	close(fd);
	hu_fsize_restore(fsize);
	free(b);
	/* A gigabyte of address space is far more than this trace needs, and far less than the
	 * footer claims (no limit under a sanitizer, which reserves terabytes of shadow). */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	char cmd[1200], out[400];
	snprintf(out, sizeof(out), "%s/summary.out", dir);
	snprintf(cmd, sizeof(cmd), "%s timeout 60 '%s' summary --json '%s' >'%s' 2>'%s.err'",
		 tier && *tier ? "" : "ulimit -v 1048576;", dh_dump(), bad, out, out);
	int st = system(cmd);
	char errp[420];
	snprintf(errp, sizeof(errp), "%s.err", out);
	size_t en = 0;
	char *err = (char *)tu_read_file(errp, &en);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x: %.*s", st, (int)en, err);
	free(err);
	size_t jn = 0;
	char *json = (char *)tu_read_file(out, &jn);
	json = realloc(json, jn + 1);
	json[jn] = 0;
	cr_expect_eq(dh_int(dh_name(json, "work"), "spans"), 100, "%s", json);
	free(json);
	unlink(bad);
	tu_rm_rf(dir);
}

/* A trace of two threads' spans whose middle chunk has 4 bytes flipped. */
static void dh_damaged(const char *dir, char *bad, size_t len)
{
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/whole.trc", dir);
	snprintf(bad, len, "%s/damaged.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 3000, 20);
	size_t cut1 = th->n;
	dh_pairs(th, &t, 6000, 20);
	dh_write_cut(&p, trc, cut1);
	size_t n = 0;
	uint8_t *b = tu_read_file(trc, &n);
	for (int i = 0; i < 4; i++)
		b[n / 2 + (size_t)i] ^= 0xff;
	tu_write_file(bad, b, n);
	free(b);
}

/* Item 15: chrome that fails half-way leaves no partial JSON: an output file is cut back to
 * nothing; a pipe gets a document that parses and says it is incomplete. Exit status 1. The
 * failure is injected after 5000 records (a damaged chunk, the failure this was found with,
 * is now skipped and read past). */
Test(dump_hostile, chrome_that_fails_leaves_no_partial_json, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char bad[300], out[400], cmd[1400];
	dh_damaged(dir, bad, sizeof(bad));
	setenv("TRC_TEST_CHROME_FAIL_AFTER", "5000", 1);
	snprintf(out, sizeof(out), "%s/chrome.json", dir);
	snprintf(cmd, sizeof(cmd), "timeout 60 '%s' chrome '%s' >'%s' 2>/dev/null", dh_dump(), bad,
		 out);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %x", st);
	struct stat sb;
	cr_assert_eq(stat(out, &sb), 0);
	cr_expect_eq(sb.st_size, 0, "a failed export left %lld bytes in the file",
		     (long long)sb.st_size);
	snprintf(
		cmd, sizeof(cmd),
		"timeout 60 '%s' chrome '%s' 2>/dev/null | python3 -c "
		"'import json,sys; d=json.load(sys.stdin); assert d[\"otherData\"][\"incomplete\"] "
		"is True, d[\"otherData\"]; assert d[\"otherData\"][\"error\"]'",
		dh_dump(), bad);
	st = system(cmd);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "piped output is not a complete JSON document saying it is incomplete (%x)", st);
	unsetenv("TRC_TEST_CHROME_FAIL_AFTER");
	tu_rm_rf(dir);
}

/* Item 15: 4 bytes flipped in one chunk cost that chunk, not the file: it is skipped with a
 * note, the rest is read, and spans open across it end as unknown. */
Test(dump_hostile, damaged_chunk_is_skipped_and_the_rest_read, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char bad[300];
	dh_damaged(dir, bad, sizeof(bad));
	char *json = dh_summary(dir, bad, true);
	cr_expect_eq(dh_int(json, "chunks_damaged"), 1, "%s", json);
	int64_t spans = dh_int(dh_name(json, "work"), "spans");
	cr_expect(spans >= 3000 && spans < 9000, "%lld of 9000 spans read", (long long)spans);
	cr_expect_eq(dh_int(dh_name(json, "work"), "span_max_ns"), 20);
	free(json);
	char *text = dh_summary(dir, bad, false);
	cr_expect(strstr(text, "DAMAGED:   1 chunk skipped") != NULL, "%s", text);
	free(text);
	tu_rm_rf(dir);
}

/* ---- item 6: hash maps against crafted keys ------------------------------------------------ */

/* The inverse of the unseeded home mix (k ^= k >> 29; k *= C; k ^= k >> 32): keys whose mixed
 * values share their low 32 bits land on one slot of every table up to 2^32 slots. */
static uint64_t dh_unmix(uint64_t v)
{
	v ^= v >> 32;
	uint64_t inv = 0xbf58476d1ce4e5b9ull; /* Newton: inverse of the odd multiplier mod 2^64 */
	for (int i = 0; i < 5; i++)
		inv *= 2 - 0xbf58476d1ce4e5b9ull * inv;
	v *= inv;
	v ^= (v >> 29) ^ (v >> 58);
	return v;
}

static double dh_summary_seconds(const char *dir, const char *trc)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	free(dh_summary(dir, trc, true));
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void dh_allocs(const char *trc, bool crafted, uint32_t n)
{
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	for (uint32_t i = 0; i < n; i++) {
		struct trc_record r = {.type = TRC_REC_ALLOC, .ts_ns = 1000000 + i};
		r.alloc.addr = crafted ? dh_unmix((uint64_t)(i + 1) << 32) : 0x10000 + 64ull * i;
		r.alloc.size = 64;
		tu_add(th, &r);
	}
	dh_write(&p, trc);
}

/* A file of allocations whose addresses all collide in the maps' unseeded hash costs no more
 * than a few times a normal one (it was quadratic: minutes at a million). */
Test(dump_hostile, colliding_addresses_cost_no_more_than_normal_ones, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char normal[300], crafted[300];
	snprintf(normal, sizeof(normal), "%s/normal.trc", dir);
	snprintf(crafted, sizeof(crafted), "%s/crafted.trc", dir);
	uint32_t n = 60000;
	dh_allocs(normal, false, n);
	dh_allocs(crafted, true, n);
	/* the keys do collide without a seed */
	cr_assert_eq(dh_unmix(1ull << 32) != dh_unmix(2ull << 32), true);
	double t_normal = dh_summary_seconds(dir, normal);
	double t_crafted = dh_summary_seconds(dir, crafted);
	char *json = dh_summary(dir, crafted, true);
	cr_expect_eq(dh_int(json, "allocs"), n, "%.300s", json);
	free(json);
	cr_expect_leq(t_crafted, 5 * t_normal + 0.5, "crafted %.3f s, normal %.3f s", t_crafted,
		      t_normal);
	tu_rm_rf(dir);
}

/* Item 8: a legitimate trace of 20000 processes with 4000-byte command lines holds 80 MB of
 * metadata, beyond the reader's 64 MiB: it reads as a whole (exit 0), the command lines that
 * did not fit are cut with one warning on stderr and one line in the summary, and the event
 * figures are exact. */
Test(dump_hostile, metadata_beyond_the_readers_bounds_is_cut_with_a_note, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/procs.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	uint64_t t = 1000000;
	dh_pairs(th, &t, 300, 10);
	static char cmd[4000];
	memset(cmd, 'x', sizeof(cmd));
	const uint32_t procs = 20000;
	for (uint32_t i = 0; i < procs; i++) {
		struct trc_record r = {.type = TRC_REC_PROCESS, .ts_ns = 2000 + i};
		r.process.pid = 1000 + i;
		r.process.ppid = 100;
		r.process.cmdline = cmd;
		r.process.cmdline_len = sizeof(cmd);
		tu_add(&p.streams[0], &r);
	}
	dh_write(&p, trc);

	struct trcfile_reader *rd = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(trc, &rd, msg, sizeof(msg)), 0, "%s", msg);
	uint32_t len = 0;
	cr_expect_not_null(trcfile_reader_process_cmdline(rd, 1000, &len));
	cr_expect_eq(len, sizeof(cmd), "the first command lines are whole");
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(rd, &st);
	/* 64 MiB hold 16773 strings of 4001 bytes (the names take 11 bytes). */
	cr_expect_eq(st.meta_strings_cut, procs - ((64u << 20) - 11) / 4001, "%llu",
		     (unsigned long long)st.meta_strings_cut);
	cr_expect_eq(st.meta_bytes_cut, st.meta_strings_cut * sizeof(cmd));
	cr_expect_eq(st.meta_entries_dropped, 0);
	const char *last = trcfile_reader_process_cmdline(rd, 1000 + procs - 1, &len);
	cr_expect(last && len == 0, "the last one is known, its command line cut");
	trcfile_reader_close(rd);

	char cmdl[1200], out[400], err[400];
	snprintf(out, sizeof(out), "%s/summary.out", dir);
	snprintf(err, sizeof(err), "%s/summary.err", dir);
	snprintf(cmdl, sizeof(cmdl), "timeout 60 '%s' summary '%s' >'%s' 2>'%s'", dh_dump(), trc,
		 out, err);
	int rc = system(cmdl);
	cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: status %x", cmdl, rc);
	char *text = tu_slurp_text(dir, "summary.out"), *warn = tu_slurp_text(dir, "summary.err");
	const char *note =
		"metadata beyond the reader's bounds: 3227 names or command lines cut "
		"(12908000 bytes), 0 definitions dropped; events and figures are complete";
	char line[700];
	snprintf(line, sizeof(line), "warning: %s: %s\n", trc, note);
	cr_expect(strstr(warn, line) != NULL, "stderr: %s", warn);
	cr_expect_null(strstr(strstr(warn, "metadata") + 1, "metadata"), "said once: %s", warn);
	snprintf(line, sizeof(line), "METADATA:  %s\n", note);
	cr_expect(strstr(text, line) != NULL, "%s", text);
	free(text);
	free(warn);
	char *json = dh_summary(dir, trc, true);
	cr_expect_eq(dh_int(json, "events"), 600, "%.400s", json);
	cr_expect_eq(dh_int(json, "events_lost"), 0);
	cr_expect_eq(dh_int(json, "meta_strings_cut"), 3227);
	cr_expect_eq(dh_int(dh_name(json, "work"), "spans"), 300);
	free(json);
	tu_rm_rf(dir);
}

/* A trace of one function call (0x401000 at 2000 ns, 100 ns long, allocating 64 bytes) of
 * pid 100 in a module mapped at 0x400000 from the file at module_path, between two RSS
 * samples (1 then 2 MiB). */
static void dh_write_module_call(const char *trc, const char *module_path)
{
	struct tu_plan p = {0};
	struct tu_stream *th = dh_plan(&p);
	struct trc_record r = {.type = TRC_REC_MODULE, .ts_ns = 900};
	r.module.pid = 100;
	r.module.start = 0x400000;
	r.module.end = 0x500000;
	r.module.path = module_path;
	r.module.path_len = (uint32_t)strlen(module_path);
	tu_add(&p.streams[0], &r);
	r = (struct trc_record){.type = TRC_REC_FUNC_ENTER, .ts_ns = 2000};
	r.func.addr = 0x401000;
	r.func.call_site = 0x401040;
	tu_add(th, &r);
	struct trc_record a = {.type = TRC_REC_ALLOC, .ts_ns = 2050};
	a.alloc.addr = 0x10000;
	a.alloc.size = 64;
	tu_add(th, &a);
	r.type = TRC_REC_FUNC_EXIT;
	r.ts_ns = 2100;
	tu_add(th, &r);
	struct tu_stream *rss = tu_plan_stream(&p, TRC_STREAM_RSS, 100, 0);
	for (uint64_t i = 0; i < 2; i++) {
		struct trc_record q = {.type = TRC_REC_RSS, .ts_ns = i ? 3000 : 1500};
		q.rss.source = TRC_RSS_STATM;
		q.rss.pid = 100;
		q.rss.rss_bytes = (i + 1) << 20;
		tu_add(rss, &q);
	}
	dh_write(&p, trc);
}

/* Runs `trace-dump ARGS trc` in dir under `timeout 20` through wrap (a command that runs
 * its arguments, or ""), stdout and stderr into dir/out and dir/err; returns the exit status
 * (124: timed out). */
static int dh_dump_timed(const char *dir, const char *args, const char *trc, const char *wrap)
{
	return tu_sh("cd '%s' && timeout 20 %s '%s' %s '%s' >'%s/out' 2>'%s/err'", dir, wrap,
		     dh_dump(), args, trc, dir, dir);
}

/* The module file of a trace is now a FIFO (or /dev/stdin on a pipe): opening or reading it
 * would block for good. Every command that names functions refuses it at once, says so
 * once, and shows the function as module+offset. */
static void dh_module_not_regular(const char *module_path, const char *wrap, const char *what)
{
	const char *dir = tu_tmpdir();
	char trc[300], fifo[300];
	snprintf(trc, sizeof(trc), "%s/t.trc", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
	dh_write_module_call(trc, module_path ? module_path : fifo);
	char warn[600];
	snprintf(warn, sizeof(warn),
		 "trace-dump: %s: not a regular file (%s): its functions show as module+offset\n",
		 module_path ? module_path : fifo, what);
	const char *base = module_path ? strrchr(module_path, '/') + 1 : "fifo";
	static const char *const cmds[] = {
		"summary",
		"events",
		"chrome",
		"flame",
		"memory",
		"parquet -o pq",
		"pprof --alloc -o out.pb.gz",
		"perfetto -o out.pftrace",
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int st = dh_dump_timed(dir, cmds[i], trc, wrap);
		char *err = tu_slurp_text(dir, "err"), *out = tu_slurp_text(dir, "out");
		cr_assert_eq(st, 0, "trace-dump %s: status %d (124: it hung): %s", cmds[i], st,
			     err);
		cr_expect_str_eq(err, warn, "trace-dump %s: %s", cmds[i], err);
		if (!strcmp(cmds[i], "events")) {
			char want[400];
			snprintf(want, sizeof(want),
				 "0.000001000 100/101 func_enter addr=0x401000 call_site=0x401040 "
				 "at=%s+0x1000\n",
				 base);
			cr_expect(strstr(out, want), "want\n%s in\n%s", want, out);
			snprintf(want, sizeof(want),
				 "0.000001100 100/101 func_exit addr=0x401000 call_site=0x401040 "
				 "at=%s+0x1000\n",
				 base);
			cr_expect(strstr(out, want), "want\n%s in\n%s", want, out);
		}
		if (!strcmp(cmds[i], "flame")) {
			char want[200];
			/* under its process, which the trace does not name */
			snprintf(want, sizeof(want), "pid 100;%s+0x1000 100\n", base);
			cr_expect_str_eq(out, want);
		}
		free(err);
		free(out);
	}
	tu_rm_rf(dir);
}

Test(dump_hostile, module_file_now_a_fifo_is_refused_without_blocking, .timeout = 200)
{
	dh_module_not_regular(NULL, "", "a FIFO");
}

Test(dump_hostile, module_file_dev_stdin_on_a_fifo_is_refused_without_blocking, .timeout = 200)
{
	/* stdin is the FIFO with no writer left (the shell opened it beside a writer of its
	 * own, which the exec closes): an open of /dev/stdin waits for a writer for good */
	dh_module_not_regular("/dev/stdin", "sh -c 'exec 3<>fifo; exec \"$0\" \"$@\" <fifo 3>&-'",
			      "a FIFO");
}

/* A TCP socket listening on 127.0.0.1 (non-blocking: accept returns at once), its port in
 * *port. */
static int dh_listen(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, len), 0);
	cr_assert_eq(listen(fd, 16), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Connections made to the listening socket lfd since the last call (the kernel completes
 * them without an accept). */
static int dh_connections(int lfd)
{
	int n = 0;
	for (int c; (c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0; n++)
		close(c);
	return n;
}

/* A stripped module (a build-id, no symbol table, no debug file on this machine) makes
 * elfutils look for its debug file; with DEBUGINFOD_URLS set it would ask the servers. The
 * trace chooses the module: trace-dump asks no server unless TRC_DEBUGINFOD=1 says so. */
Test(dump_hostile, debuginfod_is_not_asked_unless_enabled, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300], prog[400];
	snprintf(trc, sizeof(trc), "%s/t.trc", dir);
	snprintf(prog, sizeof(prog), "%s/tests/prog_finst_calls_stripped", tu_build());
	char abs_prog[PATH_MAX];
	cr_assert_not_null(realpath(prog, abs_prog), "%s", prog);
	dh_write_module_call(trc, abs_prog);
	int port = 0, lfd = dh_listen(&port);
	char env[600], want[PATH_MAX + 200];
	snprintf(want, sizeof(want),
		 "trace-dump: %s: stripped (no symbol table): functions it does not export show "
		 "as module+offset\n",
		 abs_prog);
	for (int on = 0; on < 2; on++) {
		snprintf(env, sizeof(env),
			 "DEBUGINFOD_URLS=http://127.0.0.1:%d DEBUGINFOD_TIMEOUT=1 "
			 "DEBUGINFOD_RETRY_LIMIT=0 "
			 "DEBUGINFOD_CACHE_PATH='%s/cache' %s",
			 port, dir, on ? "TRC_DEBUGINFOD=1" : "");
		int st = tu_sh("cd '%s' && %s timeout 60 '%s' events '%s' >'%s/out' 2>'%s/err'",
			       dir, env, dh_dump(), trc, dir, dir);
		char *err = tu_slurp_text(dir, "err");
		cr_assert_eq(st, 0, "status %d: %s", st, err);
		int n = dh_connections(lfd);
		if (on) {
			cr_expect_gt(n, 0, "TRC_DEBUGINFOD=1: the server was asked");
		} else {
			cr_expect_eq(n, 0, "a server was asked without TRC_DEBUGINFOD=1");
			cr_expect_str_eq(err, want);
		}
		free(err);
	}
	close(lfd);
	tu_rm_rf(dir);
}
