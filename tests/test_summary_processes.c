/* test_summary_processes.c - the summary's processes and peak intervals on hand-made traces
 * (summary_processes.c): which figure each peak comes from, the interval it lies in, never
 * below a sample, exact only when it is a point; commands, parents and exits as recorded; the
 * tree's total over time.
 */
#include <criterion/criterion.h>

#include "summary.h"
#include "test_trcfile_util.h"

#define KIB 1024ull
#define MIB (1024ull * 1024ull)

static struct trc_record rss(uint64_t ts, uint32_t pid, uint64_t bytes, uint64_t buffers)
{
	struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = ts};
	r.rss.source = TRC_RSS_STATM;
	r.rss.pid = pid;
	r.rss.rss_bytes = bytes;
	r.rss.buffers_bytes = buffers;
	return r;
}

static struct trc_record rss_hwm(uint64_t ts, uint32_t pid, uint64_t bytes, uint64_t buffers,
				 uint64_t hwm)
{
	struct trc_record r = rss(ts, pid, bytes, buffers);
	r.rss.source = TRC_RSS_STATUS;
	r.rss.flags = TRC_RSS_HAS_HWM;
	r.rss.hwm_bytes = hwm;
	return r;
}

static struct trc_record ex(uint64_t ts, uint32_t pid, int32_t status, uint64_t maxrss,
			    uint64_t buffers, uint32_t flags)
{
	struct trc_record r = {.type = TRC_REC_EXIT, .ts_ns = ts};
	r.exit.pid = pid;
	r.exit.status = status;
	r.exit.maxrss_bytes = maxrss;
	r.exit.buffers_bytes = buffers;
	r.exit.flags = flags;
	return r;
}

static struct trc_record proc(uint64_t ts, uint32_t pid, uint32_t ppid, const char *cmd,
			      uint32_t len)
{
	struct trc_record r = {.type = TRC_REC_PROCESS, .ts_ns = ts};
	r.process.pid = pid;
	r.process.ppid = ppid;
	r.process.cmdline = cmd;
	r.process.cmdline_len = len;
	return r;
}

/* Writes the plan and computes its summary into *s. */
static void summarize(struct tu_plan *p, struct summary *s)
{
	const char *dir = tu_tmpdir();
	char path[300], msg[256];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	cr_assert_eq(tu_write_plan(path, p, NULL, 100), 0);
	struct trcfile_reader *r;
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(summary_compute(r, s), 0);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

static const struct summary_process *find(const struct summary *s, uint32_t pid)
{
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i].pid == pid)
			return &s->processes[i];
	cr_assert_fail("no process %u", pid);
	return NULL;
}

/* The program (header pid 4242): wait4's 10 MiB with at most 1 MiB of buffers, statm
 * samples: the buffers' share at the peak is anywhere in [0, 1 MiB]. */
Test(summary_processes, root_interval_from_ru_maxrss, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record r;
	tu_add(rs, (r = rss(1000000100, 4242, 2 * MIB, 0), &r));
	tu_add(rs, (r = rss(1000000200, 4242, 8 * MIB + 512 * KIB, 512 * KIB), &r));
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms, (r = ex(1000000300, 4242, 3 << 8, 10 * MIB, 1 * MIB, 0), &r));
	struct summary s;
	summarize(&p, &s);
	cr_expect_eq(s.rss_peak.low_bytes, 9 * MIB);
	cr_expect_eq(s.rss_peak.high_bytes, 10 * MIB);
	cr_expect_not(s.rss_peak.exact);
	cr_expect_eq(s.rss_peak_bytes, 9 * MIB);
	cr_expect_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_EXIT);
	const struct summary_process *pr = find(&s, 4242);
	cr_expect_eq(pr->peak_source, SUMMARY_PROC_PEAK_KERNEL);
	cr_expect(pr->exit_known);
	cr_expect_eq(pr->exit_status, 3 << 8);
	cr_expect_eq(pr->rss_samples, 2);
	cr_expect_eq(pr->rss_sampled_max_bytes, 8 * MIB);
	summary_free(&s);
	tu_plan_free(&p);
}

/* A sample above ru_maxrss less the most buffers: the peak is never below it. No buffers at
 * all: the interval is a point, exact. */
Test(summary_processes, never_below_a_sample_and_exact_only_when_a_point, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record r;
	tu_add(rs, (r = rss(1000000100, 4242, 10 * MIB, 512 * KIB), &r));
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms, (r = ex(1000000300, 4242, 0, 10 * MIB + 256 * KIB, 1 * MIB, 0), &r));
	struct summary s;
	summarize(&p, &s);
	cr_expect_eq(s.rss_peak.low_bytes, 10 * MIB - 512 * KIB, "the sample, not 9.25 MiB");
	cr_expect_eq(s.rss_peak.high_bytes, 10 * MIB + 256 * KIB);
	cr_expect_not(s.rss_peak.exact);
	summary_free(&s);
	tu_plan_free(&p);

	p = (struct tu_plan){0};
	rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tu_add(rs, (r = rss(1000000100, 4242, 3 * MIB, 0), &r));
	ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms, (r = ex(1000000300, 4242, 0, 5 * MIB, 0, 0), &r));
	summarize(&p, &s);
	cr_expect_eq(s.rss_peak.low_bytes, 5 * MIB);
	cr_expect_eq(s.rss_peak.high_bytes, 5 * MIB);
	cr_expect(s.rss_peak.exact);
	summary_free(&s);
	tu_plan_free(&p);
}

/* A child's own VmHWM (SELF), with VmHWM in every sample: the samples bracket the moment of
 * the peak, and the buffers' share there is known: exact. With the share growing between the
 * two samples around the peak: the interval is that growth wide. */
Test(summary_processes, hwm_samples_bracket_the_peak, .timeout = 60)
{
	for (int grow = 0; grow < 2; grow++) {
		struct tu_plan p = {0};
		struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
		struct trc_record r;
		uint64_t b1 = grow ? 128 * KIB : 256 * KIB;
		tu_add(rs, (r = rss_hwm(1000000100, 5000, 5 * MIB, b1, 5 * MIB), &r));
		tu_add(rs, (r = rss_hwm(1000000200, 5000, 12 * MIB, 256 * KIB, 20 * MIB), &r));
		tu_add(rs, (r = rss_hwm(1000000300, 5000, 12 * MIB, 256 * KIB, 20 * MIB), &r));
		struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
		tu_add(ms, (r = ex(1000000400, 5000, 0, 20 * MIB, 256 * KIB, TRC_EXIT_SELF), &r));
		struct summary s;
		summarize(&p, &s);
		const struct summary_process *pr = find(&s, 5000);
		cr_expect_eq(pr->peak_source, SUMMARY_PROC_PEAK_KERNEL);
		cr_expect_eq(pr->peak.low_bytes, 20 * MIB - 256 * KIB);
		cr_expect_eq(pr->peak.high_bytes, 20 * MIB - b1, "grow %d", grow);
		cr_expect_eq(pr->peak.exact, !grow);
		cr_expect_not(pr->exit_known, "a SELF record without a status");
		summary_free(&s);
		tu_plan_free(&p);
	}
}

/* The same samples, but the exit record counted the buffers' peak (BUFFERS_PEAK): 4 MiB, a ring
 * that grew and was freed between two samples, so the samples' shares bound nothing and the
 * bracket is not taken: [20 MiB - 4 MiB, 20 MiB]. Taken, it would claim 19.75 MiB exactly. */
Test(summary_processes, a_counted_buffers_peak_replaces_the_samples_bracket, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record r;
	tu_add(rs, (r = rss_hwm(1000000100, 5000, 5 * MIB, 256 * KIB, 5 * MIB), &r));
	tu_add(rs, (r = rss_hwm(1000000200, 5000, 12 * MIB, 256 * KIB, 20 * MIB), &r));
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms, (r = ex(1000000400, 5000, 0, 20 * MIB, 4 * MIB,
			   TRC_EXIT_SELF | TRC_EXIT_BUFFERS_PEAK),
		    &r));
	struct summary s;
	summarize(&p, &s);
	const struct summary_process *pr = find(&s, 5000);
	cr_expect_eq(pr->peak_source, SUMMARY_PROC_PEAK_KERNEL);
	cr_expect_eq(pr->peak.low_bytes, 16 * MIB);
	cr_expect_eq(pr->peak.high_bytes, 20 * MIB);
	cr_expect_not(pr->peak.exact);
	cr_expect(pr->exit_buffers_peak);
	cr_expect_eq(pr->exit_buffers_bytes, 4 * MIB);
	summary_free(&s);
	tu_plan_free(&p);
}

/* The tree: a shell (the program) and two children, one exec'd (its latest command wins) and
 * leaving by _exit(3), one killed (no exit record: its samples, flagged). The shell's ru_maxrss
 * is the larger child's: it is only an upper bound of the shell's own peak. The tree's total
 * is the sum per column. */
Test(summary_processes, a_tree_of_three, .timeout = 60)
{
	static const char sh[] = "sh\0-c\0x", child[] = "child\0a";
	struct tu_plan p = {0};
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	struct trc_record r;
	tu_add(ms, (r = proc(1000000010, 4242, 1, sh, sizeof(sh)), &r));
	tu_add(ms, (r = proc(1000000020, 5000, 4242, sh, sizeof(sh)), &r));
	tu_add(ms, (r = proc(1000000030, 5000, 4242, child, sizeof(child)), &r));
	tu_add(ms, (r = proc(1000000040, 5001, 4242, sh, sizeof(sh)), &r));
	tu_add(ms, (r = ex(1000000900, 5000, 3 << 8, 30 * MIB, 0, TRC_EXIT_SELF | TRC_EXIT_STATUS),
		    &r));
	tu_add(ms, (r = ex(1000001000, 4242, 0, 30 * MIB, 0, 0), &r));
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	for (uint64_t t = 1000000100; t <= 1000000800; t += 100) {
		tu_add(rs, (r = rss(t, 4242, 1 * MIB, 0), &r));
		tu_add(rs, (r = rss(t + 1, 5000, 20 * MIB, 0), &r));
		if (t <= 1000000400)
			tu_add(rs, (r = rss(t + 2, 5001, 7 * MIB, 0), &r));
	}
	struct summary s;
	summarize(&p, &s);
	cr_assert_eq(s.n_processes, 3);
	cr_expect_eq(s.processes[0].pid, 4242);
	cr_expect_eq(s.processes[1].pid, 5000);
	const struct summary_process *root = find(&s, 4242), *a = find(&s, 5000),
				     *k = find(&s, 5001);
	cr_expect_eq(root->ppid, 1);
	cr_expect_eq(root->peak_source, SUMMARY_PROC_PEAK_SAMPLED, "ru_maxrss is the child's");
	cr_expect_eq(root->peak.low_bytes, 1 * MIB);
	cr_expect_eq(root->peak.high_bytes, 30 * MIB);
	cr_expect_eq(s.rss_peak_bytes, 1 * MIB);
	cr_expect_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_SAMPLED);
	cr_expect(root->exit_known);
	cr_expect_eq(root->exit_status, 0);
	cr_expect_eq(a->ppid, 4242);
	cr_expect_eq(a->command_len, sizeof(child));
	cr_expect_arr_eq(a->command, child, sizeof(child));
	cr_expect(a->exit_known);
	cr_expect_eq(a->exit_status, 3 << 8);
	cr_expect_eq(a->peak_source, SUMMARY_PROC_PEAK_KERNEL);
	cr_expect(a->peak.exact);
	cr_expect_eq(a->peak.low_bytes, 30 * MIB);
	cr_expect_eq(k->peak_source, SUMMARY_PROC_PEAK_SAMPLED);
	cr_expect_not(k->peak.exact);
	cr_expect_eq(k->peak.low_bytes, 7 * MIB);
	cr_expect_not(k->exit_known);
	cr_expect_eq(k->rss_samples, 4);
	/* The total: 28 MiB while all three live, 21 MiB after the killed one's last sample. */
	cr_assert_eq(s.n_spark, SUMMARY_SPARK_COLUMNS);
	uint64_t most = 0;
	for (unsigned c = 0; c < s.n_spark; c++)
		if (s.tree_spark_bytes[c] > most)
			most = s.tree_spark_bytes[c];
	cr_expect_eq(most, 28 * MIB);
	cr_expect_eq(s.tree_spark_bytes[45], 21 * MIB);
	summary_free(&s);
	tu_plan_free(&p);
}

#define EIB_4 (1ull << 62)

/* The program's own exit record claims 4 EiB, wait4 says 10 MiB: its own VmHWM cannot exceed
 * ru_maxrss, so it is not believed, and the peak is decided as if it had given none (wait4's
 * figure, no other process: [9 MiB, 10 MiB]), flagged, with the figure refused. */
Test(summary_processes, an_own_vmhwm_above_ru_maxrss_is_not_believed, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record r;
	tu_add(rs, (r = rss(1000000200, 4242, 8 * MIB + 512 * KIB, 512 * KIB), &r));
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms,
	       (r = ex(1000000290, 4242, 0, EIB_4, 1 * MIB, TRC_EXIT_SELF | TRC_EXIT_BUFFERS_PEAK),
		&r));
	tu_add(ms, (r = ex(1000000300, 4242, 0, 10 * MIB, 1 * MIB, TRC_EXIT_BUFFERS_PEAK), &r));
	struct summary s;
	summarize(&p, &s);
	cr_expect_eq(s.rss_peak.low_bytes, 9 * MIB);
	cr_expect_eq(s.rss_peak.high_bytes, 10 * MIB);
	cr_expect_eq(s.rss_peak_source, SUMMARY_RSS_PEAK_EXIT);
	cr_expect_eq(s.rss_peak_hwm_bytes, 10 * MIB);
	cr_expect_not(s.rss_peak_hwm_own);
	cr_expect_eq(s.rss_peak.bounded, PEAK_HWM_REFUSED);
	cr_expect_eq(s.rss_peak.refused_bytes, EIB_4);
	summary_free(&s);
	tu_plan_free(&p);
}

/* A child claims 4 EiB (no kernel figure of its own to check it against, but no address space
 * holds that much): its row is its largest sample, flagged; and since it may be the process
 * wait4's 30 MiB is of, the program's peak is its samples with 30 MiB at most, not 30 MiB. */
Test(summary_processes, an_implausible_child_vmhwm_is_not_believed, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	struct trc_record r;
	tu_add(ms, (r = ex(1000000900, 5000, 0, EIB_4, 0, TRC_EXIT_SELF | TRC_EXIT_STATUS), &r));
	tu_add(ms, (r = ex(1000001000, 4242, 0, 30 * MIB, 0, 0), &r));
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tu_add(rs, (r = rss(1000000100, 4242, 1 * MIB, 0), &r));
	tu_add(rs, (r = rss(1000000101, 5000, 20 * MIB, 0), &r));
	struct summary s;
	summarize(&p, &s);
	const struct summary_process *root = find(&s, 4242), *a = find(&s, 5000);
	cr_expect_eq(a->peak_source, SUMMARY_PROC_PEAK_SAMPLED);
	cr_expect_eq(a->peak.low_bytes, 20 * MIB);
	cr_expect_eq(a->peak.high_bytes, 20 * MIB);
	cr_expect_eq(a->peak.bounded, PEAK_HWM_REFUSED);
	cr_expect_eq(root->peak_source, SUMMARY_PROC_PEAK_SAMPLED);
	cr_expect_eq(root->peak.low_bytes, 1 * MIB);
	cr_expect_eq(root->peak.high_bytes, 30 * MIB);
	cr_expect_eq(root->peak.bounded, 0);
	summary_free(&s);
	tu_plan_free(&p);
}

/* The program counts 4 EiB of buffers (its own record, and trace-run's, which takes the
 * count): more than its high-water mark holds, so the bound is H itself, flagged, and the
 * summary's buffers figure is bounded by it too, the claim kept apart. A VmHWM a little above
 * ru_maxrss (the kernel's counters are not exact) is believed. */
Test(summary_processes, a_buffers_count_above_the_high_water_mark_is_bounded, .timeout = 60)
{
	struct tu_plan p = {0};
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	struct trc_record r;
	tu_add(rs, (r = rss(1000000200, 4242, 6 * MIB + 256 * KIB, 256 * KIB), &r));
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	tu_add(ms, (r = ex(1000000290, 4242, 0, 10 * MIB + 100 * KIB, EIB_4,
			   TRC_EXIT_SELF | TRC_EXIT_BUFFERS_PEAK),
		    &r));
	tu_add(ms, (r = ex(1000000300, 4242, 0, 10 * MIB, EIB_4, TRC_EXIT_BUFFERS_PEAK), &r));
	struct summary s;
	summarize(&p, &s);
	cr_expect(s.rss_peak_hwm_own);
	cr_expect_eq(s.rss_peak_hwm_bytes, 10 * MIB + 100 * KIB);
	cr_expect_eq(s.rss_peak.low_bytes, 6 * MIB);
	cr_expect_eq(s.rss_peak.high_bytes, 10 * MIB + 100 * KIB);
	cr_expect_eq(s.rss_peak.bounded, PEAK_BUFFERS_BOUNDED);
	cr_expect_eq(s.rss_peak_buffers_max_bytes, 10 * MIB + 100 * KIB);
	cr_expect_eq(s.buffers_resident_peak_bytes, 10 * MIB + 100 * KIB);
	cr_expect_eq(s.buffers_resident_refused_bytes, EIB_4);
	summary_free(&s);
	tu_plan_free(&p);
}

/* A program whose peak comes from its samples, with wait4's figure (maybe a descendant's) as
 * the top: the summary's peak line gives the range as trace-run's last line and the process
 * table give it ("A to B", cli_fmt_bytes_range), not the low end alone. */
Test(summary_processes, a_sampled_range_prints_as_trace_run_prints_it, .timeout = 60)
{
	static const char sh[] = "sh\0-c\0x";
	struct tu_plan p = {0};
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	struct trc_record r;
	tu_add(ms, (r = proc(1000000010, 4242, 1, sh, sizeof(sh)), &r));
	tu_add(ms, (r = ex(1000000900, 5000, 0, 30 * MIB, 0, TRC_EXIT_SELF), &r));
	tu_add(ms, (r = ex(1000001000, 4242, 0, 30 * MIB, 0, 0), &r));
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tu_add(rs, (r = rss(1000000100, 4242, 1 * MIB, 0), &r));
	tu_add(rs, (r = rss(1000000101, 5000, 20 * MIB, 0), &r));
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 100), 0);
	tu_plan_free(&p);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary '%s' > '%s/out'", tu_build(), path, dir), 0);
	char *o = tu_slurp_text(dir, "out");
	cr_expect(strstr(o, "\n  peak:      1.0 MiB to 30.0 MiB (from the samples; the top is "
			    "ru_maxrss at exit, which may be a descendant's)\n"),
		  "%s", o);
	cr_expect(strstr(o, "  1.0 MiB to 30.0 MiB  SAMPLED"), "%s", o);
	free(o);
	tu_rm_rf(dir);
}

/* A process never sampled (it lived between two ticks) has no sampled maximum: its row says
 * "-", not "0 B", which would read as a process that held no memory. */
Test(summary_processes, a_process_never_sampled_shows_no_sampled_maximum, .timeout = 60)
{
	static const char sh[] = "sh\0-c\0x", child[] = "child\0a";
	struct tu_plan p = {0};
	struct tu_stream *ms = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	struct trc_record r;
	tu_add(ms, (r = proc(1000000010, 4242, 1, sh, sizeof(sh)), &r));
	tu_add(ms, (r = proc(1000000020, 5000, 4242, child, sizeof(child)), &r));
	tu_add(ms, (r = ex(1000000050, 5000, 0, 3 * MIB, 0, TRC_EXIT_SELF | TRC_EXIT_STATUS), &r));
	tu_add(ms, (r = ex(1000001000, 4242, 0, 4 * MIB, 0, 0), &r));
	struct tu_stream *rs = tu_plan_stream(&p, TRC_STREAM_RSS, 4242, 0);
	tu_add(rs, (r = rss(1000000100, 4242, 2 * MIB, 0), &r));
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	cr_assert_eq(tu_write_plan(path, &p, NULL, 100), 0);
	tu_plan_free(&p);
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary '%s' > '%s/out'", tu_build(), path, dir), 0);
	char *o = tu_slurp_text(dir, "out");
	cr_expect(strstr(o, "3.0 MiB  exact          0            -  child a\n"), "%s", o);
	cr_expect(strstr(o, "        1      2.0 MiB  sh -c x\n"), "%s", o);
	free(o);
	tu_rm_rf(dir);
}
