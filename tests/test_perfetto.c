/* test_perfetto.c - `trace-dump perfetto` read back by an outside reader.
 *
 * Purpose: the export is only right if Perfetto's schema reads it as meant. Each test writes a
 * trace with the file writer, exports it, decodes the output with `protoc --decode` against
 * tests/perfetto_trace.proto (Perfetto's field numbers, copied; or Perfetto's complete schema,
 * the file $TRC_PERFETTO_PROTO names, see tp_decode), and replays the packets with
 * tests/check_perfetto.py (sequences, interning, incremental clock, slice stacks), which also
 * checks names, counts and values against `trace-dump summary --json`. The tests then check
 * the exact values of the small fixed trace (test_trcfile_util.h) that the checker reports.
 *
 * Needs protoc (Debian protobuf-compiler) and python3: `make deps` installs both.
 * Threads: each test is one process (Criterion); the commands run as children.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "test_trcfile_util.h"

/* The command that decodes a Perfetto trace on stdin to text: protoc against the schema the
 * tests read the output with, tests/perfetto_trace.proto (the subset of Perfetto's schema the
 * export writes), or the file $TRC_PERFETTO_PROTO names: Perfetto's complete amalgamated
 * schema, protos/perfetto/trace/perfetto_trace.proto of github.com/google/perfetto (then
 * tp_export_check also requires the subset to decode alike). */
static const char *tp_decode(void)
{
	static char cmd[PATH_MAX * 2 + 64];
	const char *full = getenv("TRC_PERFETTO_PROTO");
	if (!full || !*full)
		return "protoc --decode=perfetto.protos.Trace -Itests tests/perfetto_trace.proto";
	const char *slash = strrchr(full, '/');
	int dl = !slash ? 1 : slash == full ? 1 : (int)(slash - full);
	snprintf(cmd, sizeof(cmd), "protoc --decode=perfetto.protos.Trace -I'%.*s' '%s'", dl,
		 slash ? full : ".", full);
	return cmd;
}

/* Exports dir/in.trc with extra perfetto options, decodes it and runs the checker; returns the
 * checker's JSON report (asserts on any failure, with its message). */
static char *tp_export_check(const char *dir, const char *opts)
{
	const char *td = tu_build();
	int rc = tu_sh("%s/bin/trace-dump perfetto %s '%s/in.trc' -o '%s/out.pb' 2>'%s/err'", td,
		       opts, dir, dir, dir);
	cr_assert_eq(rc, 0, "trace-dump perfetto failed: %s", tu_slurp_text(dir, "err"));
	rc = tu_sh("%s < '%s/out.pb' > '%s/out.txt' 2>'%s/err'", tp_decode(), dir, dir, dir);
	cr_assert_eq(rc, 0, "protoc refused the output: %s", tu_slurp_text(dir, "err"));
	if (getenv("TRC_PERFETTO_PROTO")) {
		/* The complete schema given: the subset must read the output exactly as it does
		 * (same names, same numbers, no field the subset lacks). */
		rc = tu_sh(
			"protoc --decode=perfetto.protos.Trace -Itests tests/perfetto_trace.proto "
			"< '%s/out.pb' | cmp -s - '%s/out.txt'",
			dir, dir);
		cr_assert_eq(rc, 0,
			     "tests/perfetto_trace.proto decodes the output otherwise than "
			     "$TRC_PERFETTO_PROTO");
	}
	rc = tu_sh("%s/bin/trace-dump summary --json '%s/in.trc' > '%s/sum.json'", td, dir, dir);
	cr_assert_eq(rc, 0);
	rc = tu_sh("python3 tests/check_perfetto.py '%s/out.txt' '%s/sum.json' > '%s/check' 2>&1",
		   dir, dir, dir);
	char *out = tu_slurp_text(dir, "check");
	cr_assert_eq(rc, 0, "%s", out);
	return out;
}

/* Asserts that the checker's report contains s. */
#define tp_has(report, s) cr_assert(strstr(report, s), "not in the report: %s\n%s", s, report)

Test(perfetto, small_trace_decodes_and_agrees_with_summary, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	char *r = tp_export_check(dir, "");
	/* 6 span begins + 1 function, 5 + 1 ends + 1 closed at the end, 1 instant, 3 counters,
	 * 6 heap changes (4 allocs, 2 frees), 2 x 5 RSS values, 2 lost instants (ring full,
	 * sampler late), 1 exit and 1 note instant. */
	/* Thread a ends "main" while "compute" is open: by the span rule the end closes compute
	 * (1000 ns) and main stays open, closed at the end (unfinished). Thread b's compute is
	 * open at its LOST record: it ends there as cut_by_loss, not a slice of its own. */
	tp_has(r, "\"slices\": {\"compute\": 1, \"parse\": 3, \"prog+0x2136\": 1}");
	tp_has(r, "\"slice_total_ns\": {\"compute\": 1000, \"parse\": 1350, \"prog+0x2136\": 300}");
	tp_has(r, "\"unfinished\": {\"main\": 1}");
	tp_has(r, "\"nesting\": {\"main/compute\": 1, \"main/parse\": 3, \"main/prog+0x2136\": 1}");
	tp_has(r, "\"parse\": [1000001100, 1000001460, 1000002020]");
	tp_has(r, "[\"ready\", {\"value\": -1}]");
	tp_has(r, "[\"lost 7 records (ring_full)\", {\"count\": 7}]");
	tp_has(r, "[\"lost 2 records (sampler_late)\", {\"count\": 2}]");
	/* The exit as the summary says it (wait status 768), one instant for the process. */
	tp_has(r, "[\"exited with status 3\", {\"exit_code\": 3}]");
	tp_has(r, "\"exits\": {\"4242\": [\"exited with status 3\"]}");
	tp_has(r, "[\"recorder: all good\", {}]");
	/* The clocks the header knows, at the start of recording: MONOTONIC and REALTIME (its
	 * anchor), no BOOTTIME. */
	tp_has(r, "\"clocks\": {\"1\": 1700000000123456789, \"3\": 1000000000}");
	tp_has(r, "\"queue\": [[10, 3, -4]]");
	tp_has(r, "\"queue\": [\"4242/4242\"]");
	tp_has(r, "\"heap live bytes\": [[64, 192, 4288, 4224, 4480, 4352]]");
	tp_has(r, "\"RSS\": [[3145728, 5242880, 9437184, 8388608, 6291456]]");
	tp_has(r, "\"RSS trace buffers\": [[65536, 65536, 65536, 65536, 65536]]");
	tp_has(r, "\"threads\": {\"4242/4242\": \"main\", \"4242/4243\": \"worker \\\"1\\\"\"}");
	tp_has(r, "\"processes\": {\"4242\": \"prog\"}");
	tp_has(r, "\"cmdlines\": {\"4242\": [\"prog\", \"--flag\", \"arg with space\"]}");
	free(r);
	tu_rm_rf(dir);
}

/* Counters of one name on two threads are two tracks, each under its thread; names interned
 * per sequence (the same name on two threads is interned on each). */
Test(perfetto, counters_per_thread_and_names_per_sequence, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 8);
	tu_add_name(&p.streams[0], 1, "depth", 1000000000);
	tu_add_name(&p.streams[0], 2, "step", 1000000000);
	struct trc_record r;
	for (int s = 1; s <= 2; s++) {
		uint64_t t = 1000000000ull + 1000 * (uint64_t)s;
		for (int i = 0; i < 300; i++) {
			r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = t += 7};
			r.value.name_id = 1;
			/* Thread 8's values are negative: written as double_counter_value. */
			r.value.value = s == 1 ? 1000 + i : -(2000 + i);
			tu_add(&p.streams[s], &r);
			r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 200};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
			r = (struct trc_record){.type = TRC_REC_SPAN_END,
						.ts_ns = t += 100 + (uint64_t)s};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
		}
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 50), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	tp_has(rep, "\"counter_tracks\": {\"depth\": [\"7/7\", \"7/8\"]}");
	tp_has(rep, "\"slices\": {\"step\": 600}");
	tp_has(rep, "\"slice_total_ns\": {\"step\": 60900}");
	free(rep);
	tu_rm_rf(dir);
}

/* Sequence ids go in order of first use: in a trace of 150 threads where only the last one
 * has events, its sequence is 2 and its two counter tracks' 3 and 4 (one byte in every
 * packet, not the two of ids past 127). */
Test(perfetto, sequence_ids_follow_first_use, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	for (uint32_t k = 0; k < 150; k++)
		tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 100 + k);
	static const char *const names[] = {"", "work", "a", "b"};
	for (uint32_t i = 1; i < 4; i++)
		tu_add_name(&p.streams[0], i, names[i], 1000000000);
	struct trc_record r;
	struct tu_stream *last = &p.streams[150];
	uint64_t t = 1000000000;
	for (int i = 0; i < 3; i++) {
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(last, &r);
		for (uint32_t c = 2; c <= 3; c++) {
			r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = t += 10};
			r.value.name_id = c;
			r.value.value = i - (int)c;
			tu_add(last, &r);
		}
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(last, &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 50), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	tp_has(rep, "\"slices\": {\"work\": 3}");
	tp_has(rep, "\"a\": [[-2, -1, 0]]");
	tp_has(rep, "\"b\": [[-3, -2, -1]]");
	free(rep);
	/* every packet's sequence id, counted by id */
	char *txt = tu_slurp_text(dir, "out.txt");
	unsigned count[6] = {0}, other = 0;
	for (const char *q = txt; (q = strstr(q, "trusted_packet_sequence_id: "));) {
		q += strlen("trusted_packet_sequence_id: ");
		unsigned long id = strtoul(q, NULL, 10);
		if (id < 6)
			count[id]++;
		else
			other++;
	}
	free(txt);
	cr_assert_eq(other, 0, "a sequence id past 5");
	/* 2: the thread's first packet, 3 begins, 3 ends; 3 and 4: each counter's first packet
	 * and its 3 values */
	cr_assert_eq(count[2], 7);
	cr_assert_eq(count[3], 4);
	cr_assert_eq(count[4], 4);
	cr_assert_eq(count[5], 0);
	/* 1: the clock snapshot and the descriptors of the process, of the one thread with
	 * events (as the summary lists only it) and of its two counter tracks */
	cr_assert_eq(count[1], 5);
	tu_rm_rf(dir);
}

/* --from/--to keep the events in the range; a span cut by --to is closed there (unfinished),
 * an end whose begin is before --from is dropped. */
Test(perfetto, from_to_slice_the_trace, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	/* parse begins at 1100, 1460, 2020 ns: from 1200 to 2100 keeps the last two begins. */
	int rc = tu_sh("%s/bin/trace-dump perfetto --from 1200ns --to 2100ns '%s' -o '%s/cut.pb' "
		       "&& %s < '%s/cut.pb' > '%s/cut.txt'",
		       tu_build(), trc, dir, tp_decode(), dir, dir);
	cr_assert_eq(rc, 0);
	char *t = tu_slurp_text(dir, "cut.txt");
	size_t begins = 0, ends = 0;
	for (const char *s = t; (s = strstr(s, "TYPE_SLICE_BEGIN")); s++)
		begins++;
	for (const char *s = t; (s = strstr(s, "TYPE_SLICE_END")); s++)
		ends++;
	cr_assert_eq(begins, 2, "%s", t);
	cr_assert_eq(ends, 2, "%s", t); /* parse #2 ends at 1860; #3 is cut at 2100 */
	cr_assert(strstr(t, "unfinished"), "%s", t);
	free(t);
	tu_rm_rf(dir);
}

Test(perfetto, usage_errors, .timeout = 60)
{
	const char *td = tu_build();
	cr_assert_eq(tu_sh("%s/bin/trace-dump perfetto x.trc 2>/dev/null", td), 2);
	cr_assert_eq(tu_sh("%s/bin/trace-dump perfetto --from 5 x.trc -o y 2>/dev/null", td), 2);
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump perfetto --from 2s --to 1s x.trc -o y 2>/dev/null", td),
		2);
	cr_assert_eq(tu_sh("%s/bin/trace-dump perfetto --help | grep -q -- --from", td), 0);
}

/* --split-size: numbered files, each a whole trace (decoded and replayed alone), together
 * every span once, durations adding up, consecutive time ranges; slices open at a cut end
 * there and begin again in the next file. */
Test(perfetto, split_size_writes_whole_consecutive_traces, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 9, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 9, 9);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 9, 10);
	static const char *const nm[] = {"", "outer", "inner", "level"};
	for (uint32_t i = 1; i < 4; i++)
		tu_add_name(&p.streams[0], i, nm[i], 1000000000);
	for (int s = 1; s <= 2; s++) {
		uint64_t t = 1000000000ull + (uint64_t)s;
		struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = t};
		r.span.name_id = 1;
		tu_add(&p.streams[s], &r);
		for (int i = 0; i < 60000; i++) {
			r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 90};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
			r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = t += 5};
			r.value.name_id = 3;
			r.value.value = i % 1000;
			tu_add(&p.streams[s], &r);
			r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 40 + i % 7};
			r.span.name_id = 2;
			tu_add(&p.streams[s], &r);
		}
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(&p.streams[s], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 1000), 0);
	tu_plan_free(&p);
	const char *td = tu_build();
	int rc = tu_sh("%s/bin/trace-dump perfetto --split-size 1M '%s' -o '%s/out.pftrace' "
		       "2>'%s/err'",
		       td, trc, dir, dir);
	cr_assert_eq(rc, 0, "%s", tu_slurp_text(dir, "err"));
	rc = tu_sh("%s/bin/trace-dump summary --json '%s' > '%s/sum.json'", td, trc, dir);
	cr_assert_eq(rc, 0);
	/* Every file decodes; sizes about 1 MiB but the last. */
	unsigned n = 0;
	char list[2048] = "";
	size_t ll = 0;
	for (;; n++) {
		char f[400];
		struct stat st;
		snprintf(f, sizeof(f), "%s/out-%03u.pftrace", dir, n + 1);
		if (stat(f, &st))
			break;
		if (n + 1 < 4)
			cr_assert(st.st_size >= (1 << 20) && st.st_size < (1 << 20) + 4096,
				  "%s: %lld bytes", f, (long long)st.st_size);
		rc = tu_sh("%s < '%s' > '%s.txt' 2>'%s/err'", tp_decode(), f, f, dir);
		cr_assert_eq(rc, 0, "%s: %s", f, tu_slurp_text(dir, "err"));
		ll += (size_t)snprintf(list + ll, sizeof(list) - ll, " '%s.txt'", f);
	}
	cr_assert_geq(n, 3, "only %u files", n);
	rc = tu_sh("python3 tests/check_perfetto.py --split '%s/sum.json' %s > '%s/check' 2>&1",
		   dir, list, dir);
	char *rep = tu_slurp_text(dir, "check");
	cr_assert_eq(rc, 0, "%s", rep);
	tp_has(rep, "\"begins\": {\"inner\": 120000, \"outer\": 2}");
	free(rep);
	/* Without a size, or with one too small: usage errors. */
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump perfetto --split-size 1K '%s' -o x 2>/dev/null", td, trc),
		2);
	cr_assert_eq(
		tu_sh("%s/bin/trace-dump perfetto --split-size 1M '%s' -o - 2>/dev/null", td, trc),
		2);
	tu_rm_rf(dir);
}

/* Real traces: a recursive program built with -finstrument-functions (function slices named
 * by the program's symbols, nested as deep as the recursion) and the demo program (threads,
 * spans, allocations, RSS), recorded by trace-run, agree with their summaries. */
Test(perfetto, recorded_programs_agree_with_summary, .timeout = 120)
{
	static const char *const progs[] = {"prog_finst_calls 12", "prog_demo"};
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		const char *dir = tu_tmpdir();
		int rc = tu_sh("%s/bin/trace-run -q -o '%s/in.trc' -- %s/tests/%s >/dev/null "
			       "2>'%s/err'",
			       tu_build(), dir, tu_build(), progs[i], dir);
		cr_assert_eq(rc, 0, "trace-run %s: %s", progs[i], tu_slurp_text(dir, "err"));
		char *r = tp_export_check(dir, "");
		if (i == 0) { /* fib(12) is 465 calls of fib, nested 12 deep under main */
			cr_assert(strstr(r, "\"fib\": 465"), "%s", r);
			cr_assert(strstr(r, "\"main\": 1"), "%s", r);
		}
		free(r);
		tu_rm_rf(dir);
	}
}

/* A shell pipeline, recorded by trace-run: each process the shell forks and then execs has two
 * streams of one (pid, tid) (the forked shell's and the new image's). Perfetto's view must be
 * the summary's: one thread track per summary thread (never a second one for the same tid),
 * named from the start (never "tid N" then renamed), one exit instant per process with the
 * summary's exit code, and every packet after a sequence's first flagged as needing its
 * incremental state (check_perfetto.py checks each of these against the summary). */
Test(perfetto, forked_and_execed_processes_agree_with_summary, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	int rc = tu_sh("%s/bin/trace-run -q -o '%s/in.trc' -- /bin/sh -c 'true | cat | wc -c; "
		       "exit 3' >/dev/null 2>'%s/err'",
		       tu_build(), dir, dir);
	cr_assert_eq(rc, 3, "trace-run: %d: %s", rc, tu_slurp_text(dir, "err"));
	char *r = tp_export_check(dir, "");
	/* the shell, its subshell for true, cat and wc: four threads, four tracks */
	tp_has(r, "\"thread_tracks\": 4,");
	tp_has(r, "\"exited with status 3\"");
	const char *e = strstr(r, "\"exits\": {");
	cr_assert(e, "%s", r);
	unsigned n = 0;
	for (const char *q = e; (q = strstr(q, "exited with status ")) && q < strchr(e, '}'); q++)
		n++;
	cr_assert_eq(n, 4, "one exit instant a process: %s", r);
	free(r);
	tu_rm_rf(dir);
}

/* Two streams of one thread (a fork's, then its exec's): one track; what the first left open
 * ends, unfinished, where the second begins, so the second's slices are not nested in it; a
 * thread the trace never names is "tid N", described once. */
Test(perfetto, a_thread_of_two_streams_is_one_track, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_add_name(&p.streams[0], 1, "before exec", 1000000000);
	tu_add_name(&p.streams[0], 2, "after exec", 1000000000);
	struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = 1000000100};
	r.span.name_id = 1;
	tu_add(&p.streams[1], &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = 1000000300};
	r.span.name_id = 2;
	tu_add(&p.streams[2], &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 1000000400};
	r.span.name_id = 2;
	tu_add(&p.streams[2], &r);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 10), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	tp_has(rep, "\"thread_tracks\": 1,");
	tp_has(rep, "\"threads\": {\"7/7\": \"tid 7\"}");
	tp_has(rep, "\"unfinished\": {\"before exec\": 1}");
	tp_has(rep, "\"nesting\": {}");
	tp_has(rep, "\"slice_total_ns\": {\"after exec\": 100}");
	free(rep);
	tu_rm_rf(dir);
}

/* Exits by the summary's rule, one instant a process: the program's runtime says exit(1)
 * (TRC_EXIT_SELF | TRC_EXIT_STATUS) and then trace-run waits for a SIGKILL with a core dump:
 * the waited-for status counts; a process whose runtime did not know its status (SELF alone)
 * "exited"; a process whose runtime said exit(4) and nothing else, that. */
Test(perfetto, exits_follow_the_summary_rule, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_add_name(&p.streams[0], 1, "work", 1000000000);
	struct trc_record r = {.type = TRC_REC_SPAN_BEGIN, .ts_ns = 1000000100};
	r.span.name_id = 1;
	tu_add(&p.streams[1], &r);
	r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 1000000200};
	r.span.name_id = 1;
	tu_add(&p.streams[1], &r);
	static const struct {
		uint32_t pid, status, flags;
	} ex[] = {
		{8, 0, TRC_EXIT_SELF},
		{9, 4 << 8, TRC_EXIT_SELF | TRC_EXIT_STATUS},
		{7, 1 << 8, TRC_EXIT_SELF | TRC_EXIT_STATUS},
		{7, 9 | 0x80, 0},
	};
	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		r = (struct trc_record){.type = TRC_REC_EXIT, .ts_ns = 1000000300 + 100 * i};
		r.exit.pid = ex[i].pid;
		r.exit.status = ex[i].status;
		r.exit.flags = ex[i].flags;
		tu_add(&p.streams[0], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 10), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	tp_has(rep, "\"exits\": {\"7\": [\"killed by signal 9\"], \"8\": [\"exited\"], "
		    "\"9\": [\"exited with status 4\"]}");
	tp_has(rep, "[\"killed by signal 9\", {\"core_dumped\": true, \"signal\": 9}]");
	tp_has(rep, "[\"exited\", {}]");
	free(rep);
	tu_rm_rf(dir);
}

/* The crossed spans, BEGIN a, BEGIN b, END a, END b (at 0, 1.1, 2.2, 3.3 ms): one rule
 * in the summary, chrome and perfetto (an end closes the innermost open span): b = 1.1 ms,
 * a = 3.3 ms, two mismatched ends. */
Test(perfetto, crossed_spans_follow_one_rule_everywhere, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 5, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 5, 5);
	static const char *const nm[] = {"", "a", "b"};
	for (uint32_t i = 1; i < 3; i++)
		tu_add_name(&p.streams[0], i, nm[i], 1000000000);
	static const struct {
		uint32_t type, id;
		uint64_t t;
	} ev[] = {{TRC_REC_SPAN_BEGIN, 1, 0},
		  {TRC_REC_SPAN_BEGIN, 2, 1100000},
		  {TRC_REC_SPAN_END, 1, 2200000},
		  {TRC_REC_SPAN_END, 2, 3300000}};
	for (size_t i = 0; i < 4; i++) {
		struct trc_record r = {.type = ev[i].type, .ts_ns = 1000000000ull + ev[i].t};
		r.span.name_id = ev[i].id;
		tu_add(&p.streams[1], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 4), 0);
	tu_plan_free(&p);
	char *r = tp_export_check(dir, ""); /* perfetto agrees with the summary */
	tp_has(r, "\"slice_total_ns\": {\"a\": 3300000, \"b\": 1100000}");
	free(r);
	char *sum = tu_slurp_text(dir, "sum.json");
	tp_has(sum, "\"name\":\"a\",\"begins\":1,\"ends\":1,\"instants\":0,\"counters\":0,"
		    "\"spans\":1,\"span_total_ns\":3300000");
	tp_has(sum, "\"name\":\"b\",\"begins\":1,\"ends\":1,\"instants\":0,\"counters\":0,"
		    "\"spans\":1,\"span_total_ns\":1100000");
	tp_has(sum, "\"spans_end_mismatched\":2");
	free(sum);
	int rc = tu_sh("%s/bin/trace-dump chrome '%s' | python3 -c \"import json,sys\n"
		       "ev=json.load(sys.stdin)['traceEvents']\n"
		       "st=[];d={}\n"
		       "for e in ev:\n"
		       "  if e['ph']=='B': st.append(e)\n"
		       "  if e['ph']=='E': b=st.pop(); d[b['name']]=e['ts']-b['ts']\n"
		       "assert d=={'a':3300.0,'b':1100.0}, d\" > '%s/err' 2>&1",
		       tu_build(), trc, dir);
	cr_assert_eq(rc, 0, "chrome: %s", tu_slurp_text(dir, "err"));
	tu_rm_rf(dir);
}

/* Spans and functions share one stack (FORMAT.md): a span ended inside a function it began
 * around closes the function, and the function's exit closes the span. Enough records that
 * the summary's hot loop (not only its general path) sees them. */
Test(perfetto, spans_and_functions_share_one_stack, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 6, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 6, 6);
	tu_add_name(&p.streams[0], 1, "a", 1000000000);
	struct trc_record r;
	uint64_t t = 1000000000;
	for (int i = 0; i < 500; i++) {
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(&p.streams[1], &r);
		r = (struct trc_record){.type = TRC_REC_FUNC_ENTER, .ts_ns = t += 10};
		r.func.addr = 0x401000;
		tu_add(&p.streams[1], &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(&p.streams[1], &r);
		r = (struct trc_record){.type = TRC_REC_FUNC_EXIT, .ts_ns = t += 10};
		r.func.addr = 0x401000;
		tu_add(&p.streams[1], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 2000), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, ""); /* perfetto agrees with the summary */
	/* a: from its begin to the function's exit, 30 ns each; the function 10 ns each */
	tp_has(rep, "\"slice_total_ns\": {\"0x401000\": 5000, \"a\": 15000}");
	free(rep);
	char *sum = tu_slurp_text(dir, "sum.json");
	tp_has(sum, "\"spans_end_mismatched\":1000");
	free(sum);
	tu_rm_rf(dir);
}

/* Several FILEs: three traces recorded at once by trace-run (two demo programs overlapping in
 * time, and a recursive one), exported together in an order that is not the order they
 * started, make one trace on CLOCK_REALTIME. The checker (--multi) splits it by pid range
 * and holds each trace to its own summary, checks the process names carry "HOST TRACE", the
 * events come in realtime order within each trace's recording, and that every slice begin,
 * instant and counter is where trace-dump chrome of the same FILEs puts it, to the ns. */
Test(perfetto, several_files_merge_on_realtime_labelled, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	const char *td = tu_build();
	int rc = tu_sh(
		"T=%s/bin/trace-run; P=%s/tests; D='%s'; "
		"$T -q --no-preload -o $D/a.trc -- $P/prog_demo >/dev/null 2>$D/err.a & pa=$!; "
		"sleep 0.3; "
		"$T -q --no-preload -o $D/b.trc -- $P/prog_demo >/dev/null 2>$D/err.b & pb=$!; "
		"$T -q -o $D/c.trc -- $P/prog_finst_calls 12 >/dev/null 2>$D/err.c; c=$?; "
		"wait $pa && wait $pb && exit $c",
		td, td, dir);
	cr_assert_eq(rc, 0, "trace-run: %s %s %s", tu_slurp_text(dir, "err.a"),
		     tu_slurp_text(dir, "err.b"), tu_slurp_text(dir, "err.c"));
	static const char *const order[] = {"c", "b", "a"};
	struct utsname u;
	cr_assert_eq(uname(&u), 0);
	char args[2048] = "";
	size_t al = 0;
	for (size_t i = 0; i < 3; i++) {
		rc = tu_sh("%s/bin/trace-dump summary --json '%s/%s.trc' > '%s/%s.json'", td, dir,
			   order[i], dir, order[i]);
		cr_assert_eq(rc, 0);
		al += (size_t)snprintf(args + al, sizeof(args) - al, " '%s %s.trc' '%s/%s.json'",
				       u.nodename, order[i], dir, order[i]);
	}
	rc = tu_sh(
		"X=%s/bin/trace-dump; D='%s'; $X perfetto $D/c.trc $D/b.trc $D/a.trc -o $D/out.pb "
		"2>$D/err && $X chrome $D/c.trc $D/b.trc $D/a.trc > $D/out.json 2>>$D/err",
		td, dir);
	cr_assert_eq(rc, 0, "%s", tu_slurp_text(dir, "err"));
	rc = tu_sh("%s < '%s/out.pb' > '%s/out.txt' 2>'%s/err'", tp_decode(), dir, dir, dir);
	cr_assert_eq(rc, 0, "protoc refused the output: %s", tu_slurp_text(dir, "err"));
	rc = tu_sh("python3 tests/check_perfetto.py --multi '%s/out.txt' '%s/out.json'%s > "
		   "'%s/check' 2>&1",
		   dir, dir, args, dir);
	char *rep = tu_slurp_text(dir, "check");
	cr_assert_eq(rc, 0, "%s", rep);
	/* The two demos overlap: the merge goes from one trace to another many times. */
	const char *sw = strstr(rep, "\"switches\": ");
	cr_assert(sw && atoi(sw + 12) >= 10, "%s", rep);
	free(rep);
	/* Without -o, or with what takes one FILE: usage errors. */
	rc = tu_sh("D='%s'; %s/bin/trace-dump perfetto $D/a.trc $D/b.trc 2>/dev/null", dir, td);
	cr_assert_eq(rc, 2);
	static const char *const one[] = {"--from 1s", "--to 1s", "--split-size 1M"};
	for (size_t i = 0; i < 3; i++) {
		rc = tu_sh("D='%s'; %s/bin/trace-dump perfetto %s $D/a.trc $D/b.trc -o $D/x.pb "
			   "2>$D/err",
			   dir, td, one[i]);
		cr_assert_eq(rc, 2, "%s", one[i]);
		char *e = tu_slurp_text(dir, "err");
		cr_assert(strstr(e, "take one FILE"), "%s", e);
		free(e);
	}
	tu_rm_rf(dir);
}

/* The inlined hot path (slice begins and ends, counter values) writes the same bytes as the
 * general one at every size its fields can take: time deltas of 0, one, two, three bytes and
 * past 2^21 ns (general path), one- and two-byte name iids (a name whose iid is 129: general
 * path), counter values of each varint size, 2^21 and up (general path), negative ones
 * (double_counter_value) to INT64_MIN, and those a double would round, either sign
 * (counter_value, general path). The checker replays the timestamps and values, and
 * refuses a value not in the shorter exact encoding; the report must give back exactly what
 * was recorded. */
Test(perfetto, field_sizes_at_every_boundary, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 9, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 9, 9);
	static char names[130][8];
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000};
	for (uint32_t i = 1; i < 130; i++) {
		r.name.id = i;
		r.name.len = (uint32_t)snprintf(names[i], sizeof(names[i]), "n%u", i);
		r.name.str = names[i];
		tu_add(&p.streams[0], &r);
	}
	r.name.id = 200;
	r.name.str = "ctr";
	r.name.len = 3;
	tu_add(&p.streams[0], &r);
	uint64_t t = 1000000000;
	/* n1..n129 in order: iids 1..129 on the thread's sequence */
	for (uint32_t i = 1; i < 130; i++) {
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += 5};
		r.span.name_id = i;
		tu_add(&p.streams[1], &r);
		r.type = TRC_REC_SPAN_END;
		r.ts_ns = t += 5;
		tu_add(&p.streams[1], &r);
	}
	static const uint64_t deltas[] = {0,	   1,	    127,     128,    16383,	16384,
					  2097151, 2097152, 2097153, 300000, 1000000000};
	/* ... and values a double would round (-(2^53 + 1), INT64_MIN + 1, 2^53 + 1, 2^60 + 1,
	 * INT64_MAX: counter_value), and 2^56, 2^62 (double_counter_value, one byte shorter) */
	static const int64_t values[] = {0,
					 1,
					 127,
					 128,
					 16383,
					 16384,
					 2097151,
					 2097152,
					 -1,
					 -128,
					 -2097152,
					 -(1ll << 53),
					 -(1ll << 53) - 1,
					 INT64_MIN,
					 INT64_MIN + 1,
					 (1ll << 53) + 1,
					 1ll << 56,
					 (1ll << 60) + 1,
					 1ll << 62,
					 INT64_MAX,
					 42};
	const size_t nd = sizeof(deltas) / sizeof(deltas[0]);
	const size_t nv = sizeof(values) / sizeof(values[0]);
	char want_b1[1024] = "\"n1\": [1000000005", want_b129[1024] = "", want_c[2048] = "";
	uint64_t total1 = 5, total129 = 5;
	size_t k1 = strlen(want_b1), k129 = 0, kc = 0;
	/* n1 (iid 1) and n129 (iid 129), each a slice of delta d begun d after the last event */
	for (size_t i = 0; i < nd; i++) {
		uint64_t d = deltas[i];
		for (uint32_t name = 1; name <= 129; name += 128) {
			r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = t += d};
			r.span.name_id = name;
			tu_add(&p.streams[1], &r);
			if (name == 1)
				k1 += (size_t)snprintf(want_b1 + k1, sizeof(want_b1) - k1,
						       ", %" PRIu64, t);
			else
				k129 += (size_t)snprintf(want_b129 + k129, sizeof(want_b129) - k129,
							 "%s%" PRIu64, k129 ? ", " : "", t);
			r.type = TRC_REC_SPAN_END;
			r.ts_ns = t += d;
			tu_add(&p.streams[1], &r);
			*(name == 1 ? &total1 : &total129) += d;
		}
	}
	/* then every counter value, 3 ns apart (the hot path's deltas), twice: the first value
	 * makes the track, by the general path */
	for (size_t i = 0; i < 2 * nv; i++) {
		r = (struct trc_record){.type = TRC_REC_COUNTER, .ts_ns = t += 3};
		r.value.name_id = 200;
		r.value.value = values[i % nv];
		tu_add(&p.streams[1], &r);
		kc += (size_t)snprintf(want_c + kc, sizeof(want_c) - kc, "%s%" PRId64,
				       kc ? ", " : "", r.value.value);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 1000), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	char want[2100];
	snprintf(want, sizeof(want), "%s]", want_b1);
	tp_has(rep, want);
	/* n129's first begin came before the loop (5 ns after n128's end) */
	cr_assert(strstr(rep, want_b129), "n129's begins %s not in %s", want_b129, rep);
	snprintf(want, sizeof(want), "\"n1\": %" PRIu64 ",", total1);
	tp_has(rep, want);
	snprintf(want, sizeof(want), "\"n129\": %" PRIu64 ",", total129);
	tp_has(rep, want);
	snprintf(want, sizeof(want), "\"ctr\": [[%s]]", want_c);
	tp_has(rep, want);
	free(rep);
	tu_rm_rf(dir);
}

/* A step back in time on a stream (FORMAT.md allows it: bit 7, the negative delta) is written
 * on the absolute clock, and the sequence's incremental clock stays where it was: span s at
 * 1000-1500, 3000-3200, then 2000-2400 ns; the third begins 1000 ns after the first, not 2^64
 * ns later (a wrapped delta), and the events after it keep their times. */
Test(perfetto, a_step_back_in_time_keeps_every_time, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 7, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 7, 7);
	tu_add_name(&p.streams[0], 1, "s", 1000000000);
	struct trc_record r;
	static const uint64_t at[][2] = {{1000, 1500}, {3000, 3200}, {2000, 2400}};
	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < 2; k++) {
			r = (struct trc_record){.type = k ? TRC_REC_SPAN_END : TRC_REC_SPAN_BEGIN,
						.ts_ns = 1000000000ull + at[i][k]};
			r.span.name_id = 1;
			tu_add(&p.streams[1], &r);
		}
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 50), 0);
	tu_plan_free(&p);
	char *rep = tp_export_check(dir, "");
	tp_has(rep, "\"slice_total_ns\": {\"s\": 1100}");
	const char *b = strstr(rep, "\"begin_ts\": {\"s\": [");
	cr_assert_not_null(b, "%s", rep);
	unsigned long long t[3];
	cr_assert_eq(sscanf(b, "\"begin_ts\": {\"s\": [%llu, %llu, %llu]", &t[0], &t[1], &t[2]), 3,
		     "%s", b);
	cr_assert_eq(t[1] - t[0], 2000, "%s", b);
	cr_assert_eq(t[2] - t[0], 1000, "%s", b);
	free(rep);
	tu_rm_rf(dir);
}

/* A trace of `begins` begins of span "deep" on one thread, then `ends` ends. */
static void tp_write_deep(const char *trc, uint32_t begins, uint32_t ends)
{
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, 6, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, 6, 6);
	tu_add_name(&p.streams[0], 1, "deep", 1000000000);
	uint64_t t = 1000000000;
	for (uint32_t i = 0; i < begins + ends; i++) {
		struct trc_record r = {.type = i < begins ? TRC_REC_SPAN_BEGIN : TRC_REC_SPAN_END,
				       .ts_ns = t += 10};
		r.span.name_id = 1;
		tu_add(&p.streams[1], &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 4096), 0);
	tu_plan_free(&p);
}

/* Exports dir/in.trc; *begins, *ends and *unfinished get the slice events of the output (as
 * protoc decodes it); returns trace-dump's stderr. */
static char *tp_count_slices(const char *dir, const char *opts, unsigned long *begins,
			     unsigned long *ends, unsigned long *unfinished)
{
	int rc = tu_sh("%s/bin/trace-dump perfetto %s '%s/in.trc' -o '%s/out.pb' 2>'%s/err'",
		       tu_build(), opts, dir, dir, dir);
	cr_assert_eq(rc, 0, "trace-dump perfetto failed: %s", tu_slurp_text(dir, "err"));
	rc = tu_sh("%s < '%s/out.pb' > '%s/out.txt' && (grep -c 'type: TYPE_SLICE_BEGIN' "
		   "'%s/out.txt'; grep -c 'type: TYPE_SLICE_END' '%s/out.txt'; grep -c "
		   "'\"unfinished\"' '%s/out.txt'; true) > '%s/n'",
		   tp_decode(), dir, dir, dir, dir, dir, dir);
	cr_assert_eq(rc, 0);
	char *n = tu_slurp_text(dir, "n"), *e;
	*begins = strtoul(n, &e, 10);
	*ends = strtoul(e, &e, 10);
	*unfinished = strtoul(e, NULL, 10);
	free(n);
	return tu_slurp_text(dir, "err");
}

/* Begins that never end kept 8 bytes each on the stream's stack (16 at its doubling): a
 * million made 16 MiB, and a file of begin-only chunks costs a few bytes a begin. The stack
 * stops at 65536 open slices: begins past it are left out with their ends, said once. */
Test(perfetto, begins_past_the_depth_bound_are_left_out_and_said, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	unsigned long b, e, u;
	/* 70000 nested and closed: the 4464 innermost are left out, ends and all */
	tp_write_deep(trc, 70000, 70000);
	char *err = tp_count_slices(dir, "", &b, &e, &u);
	cr_expect_eq(b, 65536);
	cr_expect_eq(e, 65536);
	cr_expect_eq(u, 0, "every slice kept is closed by its own end");
	cr_expect_str_eq(err, "trace-dump: perfetto: 4464 span or function begins past 65536 open "
			      "on one thread left out, with their ends\n");
	free(err);
	/* a million begins that never end: 65536 kept, closed at the end as unfinished */
	tp_write_deep(trc, 1000000, 0);
	err = tp_count_slices(dir, "", &b, &e, &u);
	cr_expect_eq(b, 65536);
	cr_expect_eq(e, 65536);
	cr_expect_eq(u, 65536);
	cr_expect_str_eq(err, "trace-dump: perfetto: 934464 span or function begins past 65536 "
			      "open on one thread left out, with their ends\n");
	free(err);
	/* at the bound exactly: nothing left out, nothing said */
	tp_write_deep(trc, 65536, 65536);
	err = tp_count_slices(dir, "", &b, &e, &u);
	cr_expect_eq(b, 65536);
	cr_expect_eq(e, 65536);
	cr_expect_str_empty(err);
	free(err);
	tu_rm_rf(dir);
}
