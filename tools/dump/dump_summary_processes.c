/* dump_summary_processes.c - the summary's memory of every process (see the header).
 *
 * The peak is printed as the summary computed it (summary_processes.c): "exact" only when the
 * trace buffers' share at the moment of the peak is known, otherwise the interval it lies in,
 * and never below the largest sample.
 *
 * Threads: the dump's thread.
 */
#include "dump_summary_processes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cli_plural.h"
#include "dump_common.h"

void dump_sparkline(const uint64_t *cols, unsigned n)
{
	static const char *const bars[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					    "\u2585", "\u2586", "\u2587", "\u2588"};
	uint64_t lo = UINT64_MAX, hi = 0;
	for (unsigned i = 0; i < n; i++) {
		if (cols[i] == SUMMARY_SPARK_NONE)
			continue;
		if (cols[i] < lo)
			lo = cols[i];
		if (cols[i] > hi)
			hi = cols[i];
	}
	if (lo > hi)
		lo = hi = 0;
	for (unsigned i = 0; i < n; i++) {
		if (cols[i] == SUMMARY_SPARK_NONE) {
			dump_char(' '); /* before the first sample: nothing to draw */
			continue;
		}
		unsigned k = hi > lo ? (unsigned)((cols[i] - lo) * 7 / (hi - lo)) : 0;
		dump_str(bars[k]);
	}
	char a[32], b[32];
	dump_printf("  (%s .. %s)\n", cli_fmt_bytes(a, sizeof(a), lo),
		    cli_fmt_bytes(b, sizeof(b), hi));
}

void dump_summary_peak_text(const struct summary *s)
{
	char b1[32], b2[32], b3[32], b4[32], range[64];
	const struct peak *p = &s->rss_peak;
	switch (s->rss_peak_source) {
	case SUMMARY_RSS_PEAK_EXIT: {
		const char *what = s->rss_peak_hwm_own ? "its own VmHWM" : "ru_maxrss";
		uint64_t hwm = s->rss_peak_hwm_bytes;
		if (p->exact)
			dump_printf(
				"  peak:      %s exact (%s %s at exit minus %s of trace buffers)\n",
				cli_fmt_bytes(b1, sizeof(b1), p->low_bytes), what,
				cli_fmt_bytes(b2, sizeof(b2), hwm),
				cli_fmt_bytes(b3, sizeof(b3), hwm - p->low_bytes));
		else
			dump_printf("  peak:      %s (%s %s at exit, less the trace buffers' "
				    "share at the moment of the peak, which is not known: at most "
				    "%s; never below the largest sample)\n",
				    cli_fmt_bytes_range(range, sizeof(range), p->low_bytes,
							p->high_bytes),
				    what, cli_fmt_bytes(b3, sizeof(b3), hwm),
				    cli_fmt_bytes(b4, sizeof(b4), s->rss_peak_buffers_max_bytes));
		break;
	}
	case SUMMARY_RSS_PEAK_SAMPLED:
		/* The range as trace-run's last line prints it (cli_fmt_bytes_range). */
		if (p->high_bytes > p->low_bytes)
			dump_printf("  peak:      %s (from the samples; the top is ru_maxrss at "
				    "exit, which may be a descendant's)\n",
				    cli_fmt_bytes_range(range, sizeof(range), p->low_bytes,
							p->high_bytes));
		else
			dump_printf("  peak:      %s, from the samples (no exit record: the exact "
				    "peak is unknown)\n",
				    cli_fmt_bytes(b1, sizeof(b1), s->rss_peak_bytes));
		break;
	default:
		dump_str(s->has_exit ? "  peak:      unknown (wait4's ru_maxrss may be another "
				       "process's, and there are no samples)\n"
				     : "  peak:      unknown (no exit record and no samples)\n");
	}
	if (p->bounded) {
		char why[160];
		dump_printf("  note:      the peak is bounded by what the kernel said: %s\n",
			    cli_fmt_peak_doubt(why, sizeof(why),
					       (p->bounded & PEAK_HWM_REFUSED) != 0,
					       p->refused_bytes,
					       (p->bounded & PEAK_BUFFERS_BOUNDED) != 0));
	}
}

/* The command's arguments joined by spaces, cut to width. */
static void dump__command(const struct summary_process *pr, unsigned width)
{
	char buf[256];
	size_t n = 0;
	if (!pr->command) {
		dump_str("?");
		return;
	}
	for (uint32_t i = 0; i < pr->command_len && n + 1 < sizeof(buf) && n < width; i++) {
		char c = pr->command[i];
		if (c == 0 && i + 1 == pr->command_len)
			break;
		buf[n++] = c == 0 ? ' ' : (c < 32 || c == 127) ? '?' : c;
	}
	buf[n] = 0;
	dump_str(buf);
	if (n >= width)
		dump_str("...");
}

static void dump__exit_text(const struct summary_process *pr)
{
	char b[24] = "?";
	if (pr->exit_known && WIFEXITED(pr->exit_status))
		snprintf(b, sizeof(b), "%d", WEXITSTATUS(pr->exit_status));
	else if (pr->exit_known && WIFSIGNALED(pr->exit_status))
		snprintf(b, sizeof(b), "sig %d", WTERMSIG(pr->exit_status));
	dump_printf("%7s", b);
}

void dump_summary_processes_text(const struct summary *s)
{
	char b2[32], b3[64];
	if (s->n_processes < 2)
		return;
	dump_printf("\nprocesses (%zu; RSS without trace buffers):\n", s->n_processes);
	dump_str("       pid     ppid   exit                      peak  source   samples  "
		 "max sampled  command\n");
	for (size_t i = 0; i < s->n_processes; i++) {
		const struct summary_process *pr = &s->processes[i];
		dump_printf("  %8" PRIu32 " %8" PRIu32, pr->pid, pr->ppid);
		dump__exit_text(pr);
		/* As trace-run's last line prints it (cli_fmt_bytes_range). */
		if (pr->peak_source == SUMMARY_PROC_PEAK_NONE)
			snprintf(b3, sizeof(b3), "?");
		else
			cli_fmt_bytes_range(b3, sizeof(b3), pr->peak.low_bytes,
					    pr->peak.high_bytes);
		dump_printf(" %25s  %-7s %8" PRIu64 " %12s  ", b3,
			    pr->peak.bounded ? "BOUNDED"
			    : pr->peak_source == SUMMARY_PROC_PEAK_KERNEL
				    ? (pr->peak.exact ? "exact" : "kernel")
			    : pr->peak_source == SUMMARY_PROC_PEAK_SAMPLED ? "SAMPLED"
									   : "-",
			    pr->rss_samples,
			    pr->rss_samples ? cli_fmt_bytes(b2, sizeof(b2), pr->rss_sampled_max_bytes)
					    : "-"); /* never sampled: no figure, not 0 B */
		dump__command(pr, 60);
		dump_char('\n');
	}
	dump_str("  peak \"A to B\": between A and B (the trace buffers' share at the peak is not "
		 "known); SAMPLED: no exit figure (killed by a signal, or no runtime in it), the "
		 "largest sample; BOUNDED: a figure it gave is not believed (below)\n");
	unsigned said = 0;
	for (size_t i = 0; i < s->n_processes; i++) {
		const struct summary_process *pr = &s->processes[i];
		if (!pr->peak.bounded)
			continue;
		if (said++ == 10) {
			dump_str("  (more processes with figures not believed: in --json)\n");
			break;
		}
		char why[160];
		dump_printf(
			"  pid %" PRIu32 ": %s; its peak is bounded by what the kernel said\n",
			pr->pid,
			cli_fmt_peak_doubt(why, sizeof(why),
					   (pr->peak.bounded & PEAK_HWM_REFUSED) != 0,
					   pr->peak.refused_bytes,
					   (pr->peak.bounded & PEAK_BUFFERS_BOUNDED) != 0));
	}
	if (s->processes_truncated)
		dump_printf("  (more than %u processes: the rest left out)\n",
			    SUMMARY_MAX_PROCESSES);
	if (s->n_spark) {
		dump_str("  tree total over time: ");
		dump_sparkline(s->tree_spark_bytes, s->n_spark);
	}
}

static void dump__json_command(const struct summary_process *pr)
{
	dump_char('[');
	if (pr->command) {
		uint32_t start = 0;
		bool first = true;
		for (uint32_t i = 0; i <= pr->command_len; i++) {
			if (i < pr->command_len && pr->command[i] != 0)
				continue;
			if (i == pr->command_len && i == start)
				break;
			if (!first)
				dump_char(',');
			first = false;
			dump_json_str(pr->command + start, i - start);
			start = i + 1;
		}
	}
	dump_char(']');
}

void dump_summary_processes_json(const struct summary *s)
{
	dump_str(",\"rss_peak_high_bytes\":");
	dump_u64(s->rss_peak.high_bytes);
	dump_str(",\"rss_peak_exact\":");
	dump_str(s->rss_peak.exact ? "true" : "false");
	dump_str(",\"rss_peak_bounded\":");
	dump_str(s->rss_peak.bounded ? "true" : "false");
	dump_str(",\"buffers_resident_refused_bytes\":");
	if (s->buffers_resident_refused_bytes)
		dump_u64(s->buffers_resident_refused_bytes);
	else
		dump_str("null");
	dump_str(",\"processes\":[");
	for (size_t i = 0; i < s->n_processes; i++) {
		const struct summary_process *pr = &s->processes[i];
		if (i)
			dump_char(',');
		dump_printf("{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"command\":", pr->pid,
			    pr->ppid);
		dump__json_command(pr);
		dump_str(",\"exit\":");
		if (pr->exit_known && WIFEXITED(pr->exit_status))
			dump_printf("%d", WEXITSTATUS(pr->exit_status));
		else
			dump_str("null");
		dump_str(",\"exit_signal\":");
		if (pr->exit_known && WIFSIGNALED(pr->exit_status))
			dump_printf("%d", WTERMSIG(pr->exit_status));
		else
			dump_str("null");
		dump_str(",\"rss_peak_bytes\":");
		dump_u64(pr->peak.low_bytes);
		dump_str(",\"rss_peak_high_bytes\":");
		dump_u64(pr->peak.high_bytes);
		dump_str(",\"rss_peak_exact\":");
		dump_str(pr->peak.exact ? "true" : "false");
		dump_str(",\"rss_peak_bounded\":");
		dump_str(pr->peak.bounded ? "true" : "false");
		dump_str(",\"rss_peak_source\":");
		dump_str(pr->peak_source == SUMMARY_PROC_PEAK_KERNEL	? "\"kernel\""
			 : pr->peak_source == SUMMARY_PROC_PEAK_SAMPLED ? "\"sampled\""
									: "null");
		dump_str(",\"rss_samples\":");
		dump_u64(pr->rss_samples);
		dump_str(",\"rss_sampled_max_bytes\":");
		dump_u64(pr->rss_sampled_max_bytes);
		dump_str(",\"buffers_max_bytes\":");
		dump_u64(pr->buffers_max_bytes);
		dump_char('}');
	}
	dump_str("],\"processes_truncated\":");
	dump_str(s->processes_truncated ? "true" : "false");
	dump_str(",\"tree_rss_spark_bytes\":[");
	for (unsigned i = 0; i < s->n_spark; i++) {
		if (i)
			dump_char(',');
		dump_u64(s->tree_spark_bytes[i]);
	}
	dump_char(']');
}
