/* dump_summary.c - `trace-dump summary`: what a trace holds, as text or as one JSON object.
 *
 * Purpose: print summary_compute's figures. The JSON keys are a stable interface
 * (scripts and the end-to-end tests parse them): they are documented in --help below; add
 * keys, never rename or remove them.
 *
 * Several FILEs: one summary each, in CLOCK_REALTIME order, labelled HOST TRACE, then totals
 * (dump_multi.c opens them and knows each one's real-time anchor).
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_plural.h"
#include "dump_common.h"
#include "dump_summary_processes.h"
#include "dump_figures.h"
#include "dump_functions.h"
#include "dump_memory.h"
#include "dump_symbols.h"
#include "summary.h"

static const char dump__summary_help[] =
	"usage: trace-dump summary [--json] [--sort self|total|calls|max|name] FILE...\n"
	"\n"
	"What the trace holds: command, duration, events recorded and lost (in total and per\n"
	"thread), records per type, per name (counts, span durations: count, total, mean, p50,\n"
	"p99, max; counters: min, max, last), functions (calls, inclusive and self time,\n"
	"by name from the modules' symbol tables, per process when several made calls; a\n"
	"recursive function's total counts its outermost calls, long names are cut in the\n"
	"text), allocations (count, bytes, peak live bytes), RSS of the traced program (peak,\n"
	"sampled min/max/last, sample count, trace buffers excluded, a sparkline over time),\n"
	"every process of the traced tree (pid, ppid, command, exit, peak, samples) and the\n"
	"tree's total RSS over time, and the recorder's notes.\n"
	"\n"
	"  --json     one JSON object instead of text (keys below)\n"
	"  --sort KEY order of the functions table: self (self time, the default), total\n"
	"             (inclusive time), calls, max (longest call) or name\n"
	"  -h, --help this text\n"
	"\n"
	"Several FILEs (from one or many hosts): each trace's summary in the order the traces\n"
	"started on CLOCK_REALTIME, headed \"== HOST TRACE (started T after the first) ==\",\n"
	"then the totals. With --json: {\"traces\":[{\"host\", \"trace\", \"start_realtime_ns\",\n"
	"\"start_offset_ns\", \"summary\": the object of one FILE}...], \"traces_count\",\n"
	"\"records\", \"events_recorded\", \"events_lost\"}.\n"
	"\n"
	"Definitions. Events are the records that are not metadata: span_begin, span_end,\n"
	"instant, counter, alloc, free, func_enter, func_exit. Lost is the sum of the lost\n"
	"records' counts, except sampler_late (skipped RSS ticks, not events). Every RSS figure\n"
	"is the program's own: the trace buffers mapped into it are taken out. The peak is the\n"
	"kernel's high-water mark at exit (the process's own VmHWM, written by the process as\n"
	"it exits; for the program, else wait4's ru_maxrss) less the trace buffers' share at\n"
	"the moment of the peak. That share is known only to lie between 0 and the most the\n"
	"process held at once (counted by its runtime as its rings grew: rings also shrink,\n"
	"freed with their thread or given back when idle), so the peak is an interval, raised\n"
	"to the largest sample if below it, and called exact only when it is a point (in files\n"
	"without that count, with --rss-source status the samples' VmHWM narrow it to the\n"
	"buffers' growth between two samples). A process with no exit figure\n"
	"(killed by a signal, or no runtime in it) has the largest sample, flagged \"sampled\".\n"
	"Times are counted from the start of recording. p50/p99 come from a log-linear\n"
	"histogram (within 3%).\n"
	"\n"
	"JSON keys (stable; integers unless noted):\n"
	"  format_version            string \"MAJOR.MINOR\" of the file\n"
	"  command                   array of strings: the traced command line\n"
	"  pid                       the traced program's pid\n"
	"  host, tool_version        strings from the header\n"
	"  start_realtime_ns         wall-clock time of the start (ns since the epoch)\n"
	"  clock_source              string: clock_gettime | tsc | unknown\n"
	"  rss_interval_ns           sampling interval (0: sampling off)\n"
	"  rss_source                string: statm | status | smaps_rollup | both | none\n"
	"  duration_ns               last record's time minus the start of recording\n"
	"  records                   all records, metadata included\n"
	"  events_recorded           events in the file\n"
	"  events_lost               events lost (emitted = recorded + lost)\n"
	"  rss_ticks_skipped         sampler ticks skipped because they came late\n"
	"  when_full                 string: what a thread whose ring was full did: wait\n"
	"                            (for the drain), drop (lost, counted), unknown (a\n"
	"                            file before format 1.3)\n"
	"  waits, waited_ns, wait_max_ns  how often threads waited for the drain, for how\n"
	"                            long in total (summed over threads) and the longest\n"
	"                            wait (0: none)\n"
	"  records_by_type           object: type name -> count (every type)\n"
	"  lost_by_reason            object: ring_full, no_slot, corrupt, oversized, "
	"sampler_late,\n"
	"                            reentrant, disk_full\n"
	"  threads                   array of {pid, tid, name, events, lost, waits, waited_ns,\n"
	"                            alloc_bytes}, by\n"
	"                            pid then tid (alloc_bytes: what its allocations asked for)\n"
	"  names                     array of {name, begins, ends, instants, counters, spans,\n"
	"                            span_total_ns, span_mean_ns, span_p50_ns, span_p99_ns,\n"
	"                            span_max_ns, span_min_ns, counter_min, counter_max,\n"
	"                            counter_last}, by name; counter_* are null without\n"
	"                            counters; the span_* times are 0 when no span ended\n"
	"  spans_unmatched_end       span_end records with no open span or function\n"
	"  spans_end_mismatched      ends that closed a span of another name, or a span and a\n"
	"                            function closing each other (an end closes the innermost\n"
	"                            open span or function: the rule every viewer draws; the\n"
	"                            span is counted under its begin's name)\n"
	"  spans_open_at_end         spans never ended\n"
	"  spans_cut_by_loss         spans open when events of their thread were lost: end "
	"unknown\n"
	"  percentiles_approximate   true when histogram memory ran out (some spans left out)\n"
	"  functions                 array of {name, calls, total_ns, mean_ns, p50_ns, p99_ns,\n"
	"                            max_ns, self_total_ns, self_mean_ns, self_p50_ns,\n"
	"                            self_p99_ns, self_max_ns, pid} per function in each process\n"
	"                            (-finstrument-functions; a forked child's calls are its\n"
	"                            own), named from the modules' symbol tables (else\n"
	"                            module+offset), in --sort order; times inclusive of the\n"
	"                            calls made, self_* without them; total_ns counts the\n"
	"                            outermost calls of each thread only (recursion once)\n"
	"  function_exits_unmatched  function exits with no open call of that function\n"
	"  function_calls_unclosed   calls closed by the exit of a function that called them\n"
	"  function_calls_open_at_end  calls never exited (not timed)\n"
	"  allocs, alloc_bytes       allocation records and their bytes\n"
	"  frees, free_bytes         free records and the bytes they released (known sizes)\n"
	"  live_peak_bytes           peak of allocated-and-not-freed bytes, in time order, of\n"
	"                            the processes alive at that moment (a heap is per process)\n"
	"  live_end_bytes            allocated and not freed by the traced program when it\n"
	"                            exited (children: in live_by_process)\n"
	"  live_by_process           array of {pid, allocs, alloc_bytes, live_peak_bytes,\n"
	"                            live_end_bytes, exited} by pid: each process's heap;\n"
	"                            live_end_bytes at its exit (exited true) or at the end\n"
	"  frees_unknown             frees of addresses not allocated in the trace\n"
	"  live_approximate          true when too many live allocations to track exactly\n"
	"  memory                    array: the 5 largest rises of a process's RSS between two\n"
	"                            of its samples, each {pid, t0_ns, t1_ns (from the start),\n"
	"                            rss_before_bytes, rss_after_bytes, rss_growth_bytes,\n"
	"                            alloc_bytes, allocs, free_bytes, live_before_bytes,\n"
	"                            live_after_bytes, sites: [{name, bytes, allocs}] (the site\n"
	"                            that allocated most in it, then \"(other sites)\")}, largest\n"
	"                            growth first; `trace-dump memory` has all\n"
	"  rss_peak_bytes            peak RSS of the program: the low end of its interval,\n"
	"                            never below a sample (see above)\n"
	"  rss_peak_high_bytes       the high end (= rss_peak_bytes when exact)\n"
	"  rss_peak_exact            true when the interval is a point\n"
	"  rss_peak_bounded          true when a figure the peak would come from was not\n"
	"                            believed (above what the kernel said: the text's note)\n"
	"  buffers_resident_refused_bytes  the program's count of its buffers' most when it\n"
	"                            was not believed (null: believed)\n"
	"  rss_peak_source           string: exit | sampled | none\n"
	"  rss_peak_sampled_bytes    largest sample\n"
	"  rss_sampled_min_bytes     smallest sample\n"
	"  rss_sampled_last_bytes    latest sample\n"
	"  rss_samples               number of samples\n"
	"  buffers_resident_peak_bytes  largest trace-buffer share seen (samples and exit:\n"
	"                            the exit record's is the most they held at once)\n"
	"  exit_maxrss_bytes         ru_maxrss at exit, buffers included (null: no exit record)\n"
	"  exit_status               wait status of the program (null: no exit record)\n"
	"  rss_spark_bytes           array: max sample per 1/60 of the duration (empty: none;\n"
	"                            null before the first sample)\n"
	"  processes                 array, by pid, of {pid, ppid (0: unknown), command (array\n"
	"                            of strings; the latest: an exec'd image's), exit (exit\n"
	"                            code, null: unknown or killed), exit_signal (null: none\n"
	"                            known), rss_peak_bytes, rss_peak_high_bytes,\n"
	"                            rss_peak_exact, rss_peak_bounded, rss_peak_source\n"
	"                            (\"kernel\": its own high-water mark; \"sampled\": its\n"
	"                            largest sample, no exit figure), rss_samples,\n"
	"                            rss_sampled_max_bytes,\n"
	"                            buffers_max_bytes}, trace buffers excluded\n"
	"  processes_truncated       true when more processes than the summary keeps\n"
	"  tree_rss_spark_bytes      array: the tree's total RSS per column of rss_spark_bytes\n"
	"                            (each process's largest sample there, summed)\n"
	"  lost_first_t_ns, lost_last_t_ns  when the first and last events were lost, from\n"
	"                            the start (null: none lost)\n"
	"  lost_spark                array: events lost per 1/60 of the duration (the\n"
	"                            columns of rss_spark_bytes; empty: none lost)\n"
	"  notes                     array of {t_ns (from the start), text}\n"
	"  truncated                 true when the file has no valid footer (read up to its\n"
	"                            last whole chunk)\n"
	"  footer_damaged            true when a footer was there but failed its checks\n"
	"  chunks, bytes_ignored     chunks read; bytes after the last whole chunk\n"
	"  chunks_missing            chunks absent before the last chunk of their stream\n"
	"  chunks_damaged            chunks that failed their checks when read: skipped\n"
	"  meta_strings_cut, meta_bytes_cut, meta_entries_dropped  metadata beyond the reader's\n"
	"                            bounds (64 MiB of strings): names cut to \"\", definitions\n"
	"                            not kept; events and figures stay complete\n";

static void dump__key(const char *k, bool *first)
{
	if (!*first)
		dump_char(',');
	*first = false;
	dump_char('"');
	dump_str(k);
	dump_str("\":");
}

static void dump__kv_u64(const char *k, uint64_t v, bool *first)
{
	dump__key(k, first);
	dump_u64(v);
}

static void dump__kv_bool(const char *k, bool v, bool *first)
{
	dump__key(k, first);
	dump_str(v ? "true" : "false");
}

static void dump__kv_str(const char *k, const char *v, bool *first)
{
	dump__key(k, first);
	dump_json_str(v, strlen(v));
}

static void dump__json(struct trcfile_reader *r, const struct summary *s,
		       const struct func_table *ft, const struct memory_report *mem)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	bool first = true;
	char ver[32];
	snprintf(ver, sizeof(ver), "%u.%u", h->version_major, h->version_minor);
	dump_char('{');
	dump__kv_str("format_version", ver, &first);
	dump__key("command", &first);
	dump_char('[');
	{
		size_t len = h->cmdline_len;
		if (len && h->cmdline[len - 1] == 0)
			len--;
		size_t i = 0, n = 0;
		while (i < len) {
			size_t j = i;
			while (j < len && h->cmdline[j])
				j++;
			if (n++)
				dump_char(',');
			dump_json_str(h->cmdline + i, j - i);
			i = j + 1;
		}
	}
	dump_char(']');
	dump__kv_u64("pid", h->pid, &first);
	dump__kv_str("host", h->host, &first);
	dump__kv_str("tool_version", h->tool_version, &first);
	dump__kv_u64("start_realtime_ns", h->start_realtime_ns, &first);
	dump__kv_str("clock_source", trcfile_clock_name(h->clock_source), &first);
	dump__kv_u64("rss_interval_ns", h->rss_interval_ns, &first);
	dump__kv_str("rss_source", trcfile_rss_source_name(h->rss_source), &first);
	dump__kv_u64("duration_ns", s->duration_ns, &first);
	dump__kv_u64("records", s->records, &first);
	dump__kv_u64("events_recorded", s->events_recorded, &first);
	dump__kv_u64("events_lost", s->events_lost, &first);
	dump__kv_u64("rss_ticks_skipped", s->rss_ticks_skipped, &first);
	dump__kv_str("when_full", trcfile_when_full_name(s->when_full), &first);
	dump__kv_u64("waits", s->waits, &first);
	dump__kv_u64("waited_ns", s->waited_ns, &first);
	dump__kv_u64("wait_max_ns", s->wait_max_ns, &first);
	dump__key("records_by_type", &first);
	{
		bool f2 = true;
		dump_char('{');
		for (uint32_t t = 1; t < TRC_REC_TYPE_COUNT; t++)
			dump__kv_u64(trcfile_type_name(t), s->per_type[t], &f2);
		dump_char('}');
	}
	dump__key("lost_by_reason", &first);
	{
		bool f2 = true;
		dump_char('{');
		for (uint32_t k = TRC_LOST_RING_FULL; k < TRC_LOST_REASON_COUNT; k++)
			dump__kv_u64(trcfile_lost_reason_name(k), s->lost_per_reason[k], &f2);
		dump_char('}');
	}
	dump__key("threads", &first);
	dump_char('[');
	for (size_t i = 0; i < s->n_threads; i++) {
		const struct summary_thread *t = &s->threads[i];
		bool f2 = true;
		if (i)
			dump_char(',');
		dump_char('{');
		dump__kv_u64("pid", t->pid, &f2);
		dump__kv_u64("tid", t->tid, &f2);
		dump__kv_str("name", t->name, &f2);
		dump__kv_u64("events", t->events, &f2);
		dump__kv_u64("lost", t->lost, &f2);
		dump__kv_u64("waits", t->waits, &f2);
		dump__kv_u64("waited_ns", t->waited_ns, &f2);
		dump__kv_u64("alloc_bytes", t->alloc_bytes, &f2);
		dump_char('}');
	}
	dump_char(']');
	dump__key("names", &first);
	dump_char('[');
	for (size_t i = 0; i < s->n_names; i++) {
		const struct summary_name *n = &s->names[i];
		bool f2 = true;
		if (i)
			dump_char(',');
		dump_char('{');
		dump__key("name", &f2);
		dump_json_str(n->name, n->name_len); /* all its bytes, NULs included */
		dump__kv_u64("begins", n->begins, &f2);
		dump__kv_u64("ends", n->ends, &f2);
		dump__kv_u64("instants", n->instants, &f2);
		dump__kv_u64("counters", n->counters, &f2);
		dump__kv_u64("spans", n->spans, &f2);
		dump__kv_u64("span_total_ns", n->span_total_ns, &f2);
		dump__kv_u64("span_mean_ns", n->spans ? n->span_total_ns / n->spans : 0, &f2);
		dump__kv_u64("span_p50_ns", n->span_p50_ns, &f2);
		dump__kv_u64("span_p99_ns", n->span_p99_ns, &f2);
		dump__kv_u64("span_max_ns", n->span_max_ns, &f2);
		dump__kv_u64("span_min_ns", n->span_min_ns, &f2);
		const char *ck[3] = {"counter_min", "counter_max", "counter_last"};
		int64_t cv[3] = {n->counter_min, n->counter_max, n->counter_last};
		for (int k = 0; k < 3; k++) {
			dump__key(ck[k], &f2);
			if (n->counters)
				dump_i64(cv[k]);
			else
				dump_str("null");
		}
		dump_char('}');
	}
	dump_char(']');
	dump__kv_u64("spans_unmatched_end", s->spans_unmatched_end, &first);
	dump__kv_u64("spans_end_mismatched", s->spans_end_mismatched, &first);
	dump__kv_u64("spans_open_at_end", s->spans_open_at_end, &first);
	dump__kv_u64("spans_cut_by_loss", s->spans_cut_by_loss, &first);
	dump__kv_bool("percentiles_approximate", s->percentiles_approximate, &first);
	dump_functions_json(ft);
	dump__kv_u64("allocs", s->allocs, &first);
	dump__kv_u64("alloc_bytes", s->alloc_bytes, &first);
	dump__kv_u64("frees", s->frees, &first);
	dump__kv_u64("free_bytes", s->free_bytes, &first);
	dump__kv_u64("live_peak_bytes", s->live_peak_bytes, &first);
	dump__kv_u64("live_end_bytes", s->live_end_bytes, &first);
	dump__key("live_by_process", &first);
	dump_char('[');
	for (size_t i = 0; i < s->n_heaps; i++) {
		const struct summary_heap *ph = &s->heaps[i];
		bool f2 = true;
		if (i)
			dump_char(',');
		dump_char('{');
		dump__kv_u64("pid", ph->pid, &f2);
		dump__kv_u64("allocs", ph->allocs, &f2);
		dump__kv_u64("alloc_bytes", ph->alloc_bytes, &f2);
		dump__kv_u64("live_peak_bytes", ph->live_peak_bytes, &f2);
		dump__kv_u64("live_end_bytes", ph->live_end_bytes, &f2);
		dump__kv_bool("exited", ph->exited, &f2);
		dump_char('}');
	}
	dump_char(']');
	dump__kv_u64("frees_unknown", s->frees_unknown, &first);
	dump__kv_bool("live_approximate", s->live_approximate, &first);
	dump_memory_summary_json(mem, dump_start_ns(r));
	dump__kv_u64("rss_peak_bytes", s->rss_peak_bytes, &first);
	dump__kv_str("rss_peak_source",
		     s->rss_peak_source == SUMMARY_RSS_PEAK_EXIT      ? "exit"
		     : s->rss_peak_source == SUMMARY_RSS_PEAK_SAMPLED ? "sampled"
								      : "none",
		     &first);
	dump__kv_u64("rss_peak_sampled_bytes", s->rss_peak_sampled_bytes, &first);
	dump__kv_u64("rss_sampled_min_bytes", s->rss_sampled_min_bytes, &first);
	dump__kv_u64("rss_sampled_last_bytes", s->rss_sampled_last_bytes, &first);
	dump__kv_u64("rss_samples", s->rss_samples, &first);
	dump__kv_u64("buffers_resident_peak_bytes", s->buffers_resident_peak_bytes, &first);
	dump__key("exit_maxrss_bytes", &first);
	if (s->has_exit)
		dump_u64(s->rss_exit_maxrss_bytes);
	else
		dump_str("null");
	dump__key("exit_status", &first);
	if (s->has_exit)
		dump_i64(s->exit_status);
	else
		dump_str("null");
	dump_summary_processes_json(s);
	dump__key("rss_spark_bytes", &first);
	dump_char('[');
	for (unsigned i = 0; i < s->n_spark; i++) {
		if (i)
			dump_char(',');
		if (s->spark_bytes[i] == SUMMARY_SPARK_NONE)
			dump_str("null"); /* before the first sample */
		else
			dump_u64(s->spark_bytes[i]);
	}
	dump_char(']');
	dump__key("lost_first_t_ns", &first);
	if (s->lost_first_ts_ns)
		dump_i64((int64_t)(s->lost_first_ts_ns - s->start_ns));
	else
		dump_str("null");
	dump__key("lost_last_t_ns", &first);
	if (s->lost_first_ts_ns)
		dump_i64((int64_t)(s->lost_last_ts_ns - s->start_ns));
	else
		dump_str("null");
	dump__key("lost_spark", &first);
	dump_char('[');
	for (unsigned i = 0; s->lost_first_ts_ns && i < SUMMARY_SPARK_COLUMNS; i++) {
		if (i)
			dump_char(',');
		dump_u64(s->lost_spark[i]);
	}
	dump_char(']');
	dump__key("notes", &first);
	dump_char('[');
	for (size_t i = 0; i < s->n_notes; i++) {
		bool f2 = true;
		if (i)
			dump_char(',');
		dump_char('{');
		dump__key("t_ns", &f2);
		dump_i64((int64_t)(s->notes[i].ts_ns - s->start_ns));
		dump__kv_str("text", s->notes[i].text, &f2);
		dump_char('}');
	}
	dump_char(']');
	dump__kv_bool("truncated", s->truncated, &first);
	dump__kv_bool("footer_damaged", st.footer_damaged, &first);
	dump__kv_u64("chunks", st.chunks, &first);
	dump__kv_u64("chunks_missing", st.chunks_missing, &first);
	dump__kv_u64("chunks_damaged", st.chunks_damaged, &first);
	dump__kv_u64("bytes_ignored", st.bytes_ignored, &first);
	dump__kv_u64("meta_strings_cut", st.meta_strings_cut, &first);
	dump__kv_u64("meta_bytes_cut", st.meta_bytes_cut, &first);
	dump__kv_u64("meta_entries_dropped", st.meta_entries_dropped, &first);
	dump_str("}\n");
}

/* ---- text ------------------------------------------------------------------------------ */

static void dump__sparkline(const struct summary *s)
{
	dump_sparkline(s->spark_bytes, s->n_spark);
}

/* What a thread whose ring was full did, and, under "wait", how much the program was slowed:
 * a tracer never hides that it changed the program's timing. The waits line is printed under
 * "wait" even when nothing waited (it then says so), and under any policy when a thread did. */
static void dump__when_full(const struct summary *s)
{
	char a[32], b[32];
	if (s->when_full == TRCFILE_WHEN_FULL_WAIT)
		dump_str("when full: wait (threads wait for the drain: every event recorded)\n");
	else if (s->when_full == TRCFILE_WHEN_FULL_DROP)
		dump_str("when full: drop (events lost and counted: the program's timing "
			 "untouched)\n");
	else
		dump_str("when full: not recorded (file before format 1.3)\n");
	if (s->waits) {
		dump_printf("  threads waited for the drain: %" PRIu64 " %s, %s total", s->waits,
			    cli_plural(s->waits, "time", "times"),
			    dump_fmt_ns(a, sizeof(a), s->waited_ns));
		if (s->duration_ns)
			dump_printf(" (%.1f%% of the run, summed over threads)",
				    100.0 * (double)s->waited_ns / (double)s->duration_ns);
		dump_printf(", longest %s\n", dump_fmt_ns(b, sizeof(b), s->wait_max_ns));
	} else if (s->when_full == TRCFILE_WHEN_FULL_WAIT) {
		dump_str("  no thread waited for the drain\n");
	}
}

/* When events were lost: first and last, and a bar per 1/60 of the run (a space where
 * nothing was lost), so a burst at the start reads differently from a steady leak. */
static void dump__lost_over_time(const struct summary *s)
{
	static const char *const bars[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					    "\u2585", "\u2586", "\u2587", "\u2588"};
	char a[32], b[32];
	uint64_t t0 = s->lost_first_ts_ns > s->start_ns ? s->lost_first_ts_ns - s->start_ns : 0;
	uint64_t t1 = s->lost_last_ts_ns > s->start_ns ? s->lost_last_ts_ns - s->start_ns : 0;
	dump_printf("  lost from %s to %s; over time: ", dump_fmt_ns(a, sizeof(a), t0),
		    dump_fmt_ns(b, sizeof(b), t1));
	uint64_t hi = 0;
	for (unsigned i = 0; i < SUMMARY_SPARK_COLUMNS; i++)
		if (s->lost_spark[i] > hi)
			hi = s->lost_spark[i];
	dump_char('|');
	for (unsigned i = 0; i < SUMMARY_SPARK_COLUMNS; i++) {
		if (!s->lost_spark[i]) {
			dump_char(' ');
			continue;
		}
		uint64_t k = (s->lost_spark[i] * 8 - 1) / hi;
		dump_str(bars[k > 7 ? 7 : k]);
	}
	dump_printf("| (max %" PRIu64 " in 1/%u of the run)\n", hi, SUMMARY_SPARK_COLUMNS);
}

static void dump__text(struct trcfile_reader *r, const struct summary *s,
		       const struct func_table *ft, enum func_sort sort,
		       const struct memory_report *mem)
{
	const struct trcfile_header *h = trcfile_reader_header(r);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];

	dump_str("command:   ");
	dump_cmdline(h->cmdline, h->cmdline_len);
	dump_printf("\npid:       %u\n", h->pid);
	if (h->host[0])
		dump_printf("host:      %s\n", h->host);
	if (h->start_realtime_ns) {
		time_t t = (time_t)(h->start_realtime_ns / 1000000000u);
		struct tm tm;
		char when[64];
		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		dump_printf("started:   %s\n", when);
	}
	dump_printf("duration:  %s\n", dump_fmt_ns(b1, sizeof(b1), s->duration_ns));
	dump_printf("file:      format %u.%u, %" PRIu64 " %s in %" PRIu64 " %s, clock %s",
		    h->version_major, h->version_minor, st.records,
		    cli_plural(st.records, "record", "records"), st.chunks,
		    cli_plural(st.chunks, "chunk", "chunks"), trcfile_clock_name(h->clock_source));
	if (h->tool_version[0])
		dump_printf(", written by %s", h->tool_version);
	dump_char('\n');
	if (s->truncated)
		dump_printf("TRUNCATED: %s; read up to the last whole chunk (%" PRIu64
			    " %s), %" PRIu64 " %s ignored\n",
			    st.footer_damaged ? "damaged footer" : "no footer (recorder killed?)",
			    st.records, cli_plural(st.records, "record", "records"),
			    st.bytes_ignored, cli_plural(st.bytes_ignored, "byte", "bytes"));
	if (st.chunks_missing)
		dump_printf("MISSING:   %" PRIu64 " %s lost before the last ones of their "
			    "streams (a write error?)\n",
			    st.chunks_missing, cli_plural(st.chunks_missing, "chunk", "chunks"));
	if (st.chunks_damaged)
		dump_printf("DAMAGED:   %" PRIu64 " %s skipped, the rest read (first: %s)\n",
			    st.chunks_damaged, cli_plural(st.chunks_damaged, "chunk", "chunks"),
			    trcfile_reader_damage_note(r));
	if (st.meta_strings_cut || st.meta_entries_dropped)
		dump_printf("METADATA:  %s\n", dump_meta_cut_note(&st));
	if (s->has_exit) {
		int stt = s->exit_status;
		if ((stt & 0x7f) == 0)
			dump_printf("exit:      exited with status %d\n", (stt >> 8) & 0xff);
		else
			dump_printf("exit:      killed by signal %d\n", stt & 0x7f);
	}

	uint64_t emitted = s->events_recorded + s->events_lost;
	dump_printf("\nevents:    %" PRIu64 " recorded, %" PRIu64 " lost", s->events_recorded,
		    s->events_lost);
	if (s->events_lost)
		dump_printf(" (%.3f%% of %" PRIu64 " emitted)",
			    100.0 * (double)s->events_lost / (double)emitted, emitted);
	dump_char('\n');
	if (s->events_lost) {
		dump_str("  lost by reason:");
		/* Every reason of lost events (late sampler ticks are not events: below). */
		for (uint32_t k = TRC_LOST_RING_FULL; k < TRC_LOST_REASON_COUNT; k++)
			if (k != TRC_LOST_SAMPLER_LATE && s->lost_per_reason[k])
				dump_printf(" %s %" PRIu64, trcfile_lost_reason_name(k),
					    s->lost_per_reason[k]);
		dump_char('\n');
		if (s->lost_first_ts_ns)
			dump__lost_over_time(s);
	}
	if (s->rss_ticks_skipped)
		dump_printf("  RSS sampler ticks skipped (late): %" PRIu64 "\n",
			    s->rss_ticks_skipped);
	dump__when_full(s);

	dump_str("\nrecords by type:\n");
	for (uint32_t t = 1; t < TRC_REC_TYPE_COUNT; t++)
		if (s->per_type[t])
			dump_printf("  %-12s %12" PRIu64 "\n", trcfile_type_name(t),
				    s->per_type[t]);

	if (s->n_threads) {
		/* The waited column only when a thread waited (most traces: none). */
		dump_printf("\nthreads:\n  %8s %8s  %-20s %12s %10s %12s", "pid", "tid", "name",
			    "events", "lost", "allocated");
		if (s->waits)
			dump_printf(" %12s", "waited");
		dump_char('\n');
		for (size_t i = 0; i < s->n_threads; i++) {
			const struct summary_thread *t = &s->threads[i];
			dump_printf("  %8u %8u  %-20s %12" PRIu64 " %10" PRIu64 " %12s", t->pid,
				    t->tid, t->name, t->events, t->lost,
				    cli_fmt_bytes(b1, sizeof(b1), t->alloc_bytes));
			if (s->waits)
				dump_printf(" %12s", dump_fmt_ns(b1, sizeof(b1), t->waited_ns));
			dump_char('\n');
		}
	}

	bool any_span = false, any_value = false;
	for (size_t i = 0; i < s->n_names; i++) {
		any_span |= s->names[i].begins || s->names[i].ends;
		any_value |= s->names[i].instants || s->names[i].counters;
	}
	if (any_span) {
		dump_printf("\nspans:\n  %-24s %10s %12s %12s %12s %12s %12s\n", "name", "count",
			    "total", "mean", "p50", "p99", "max");
		for (size_t i = 0; i < s->n_names; i++) {
			const struct summary_name *n = &s->names[i];
			if (!n->begins && !n->ends)
				continue;
			if (!n->spans) {
				/* Nothing timed: no duration to show, and zeros would read as one. */
				dump_printf("  %-24s %10d %12s %12s %12s %12s %12s  (%" PRIu64
					    " %s, none ended)\n",
					    n->name, 0, "-", "-", "-", "-", "-", n->begins,
					    cli_plural(n->begins, "begin", "begins"));
				continue;
			}
			dump_printf("  %-24s %10" PRIu64 " %12s %12s %12s %12s %12s\n", n->name,
				    n->spans, dump_fmt_ns(b1, sizeof(b1), n->span_total_ns),
				    dump_fmt_ns(b2, sizeof(b2),
						n->spans ? n->span_total_ns / n->spans : 0),
				    dump_fmt_ns(b3, sizeof(b3), n->span_p50_ns),
				    dump_fmt_ns(b4, sizeof(b4), n->span_p99_ns),
				    dump_fmt_ns(b5, sizeof(b5), n->span_max_ns));
		}
		if (s->percentiles_approximate)
			dump_str("  (p50/p99 from part of the spans: too many distinct "
				 "durations)\n");
		if (s->spans_unmatched_end || s->spans_open_at_end)
			dump_printf("  (%" PRIu64 " %s without a begin, %" PRIu64
				    " %s still open at the end)\n",
				    s->spans_unmatched_end,
				    cli_plural(s->spans_unmatched_end, "end", "ends"),
				    s->spans_open_at_end,
				    cli_plural(s->spans_open_at_end, "span", "spans"));
		if (s->spans_end_mismatched)
			dump_printf("  (%" PRIu64 " %s closed another name's span or a function: "
				    "ends close the innermost)\n",
				    s->spans_end_mismatched,
				    cli_plural(s->spans_end_mismatched, "end", "ends"));
		if (s->spans_cut_by_loss)
			dump_printf("  (%" PRIu64
				    " %s open when events were lost: end unknown, not "
				    "counted)\n",
				    s->spans_cut_by_loss,
				    cli_plural(s->spans_cut_by_loss, "span", "spans"));
	}
	if (ft) {
		const struct func_row *rows;
		if (func_table_rows(ft, &rows))
			dump_functions_text(ft, sort);
	}
	if (any_value) {
		dump_printf("\ninstants and counters:\n  %-24s %10s %10s %14s %14s %14s\n", "name",
			    "instants", "counters", "min", "max", "last");
		for (size_t i = 0; i < s->n_names; i++) {
			const struct summary_name *n = &s->names[i];
			if (!n->instants && !n->counters)
				continue;
			if (n->counters)
				dump_printf("  %-24s %10" PRIu64 " %10" PRIu64 " %14" PRId64
					    " %14" PRId64 " %14" PRId64 "\n",
					    n->name, n->instants, n->counters, n->counter_min,
					    n->counter_max, n->counter_last);
			else
				dump_printf("  %-24s %10" PRIu64 " %10" PRIu64 "\n", n->name,
					    n->instants, n->counters);
		}
	}

	if (s->allocs || s->frees) {
		dump_printf("\nallocations: %" PRIu64 " %s (%s), %" PRIu64
			    " %s (%s), peak live %s, live at end %s (the program's)%s\n",
			    s->allocs, cli_plural(s->allocs, "alloc", "allocs"),
			    cli_fmt_bytes(b1, sizeof(b1), s->alloc_bytes), s->frees,
			    cli_plural(s->frees, "free", "frees"),
			    cli_fmt_bytes(b2, sizeof(b2), s->free_bytes),
			    cli_fmt_bytes(b3, sizeof(b3), s->live_peak_bytes),
			    cli_fmt_bytes(b4, sizeof(b4), s->live_end_bytes),
			    s->live_approximate ? " (approximate: too many live allocations)" : "");
		if (s->n_heaps > 1) {
			dump_printf("  %8s %10s %12s %12s %14s\n", "pid", "allocs", "allocated",
				    "peak live", "live at exit");
			for (size_t i = 0; i < s->n_heaps; i++) {
				const struct summary_heap *ph = &s->heaps[i];
				dump_printf("  %8u %10" PRIu64 " %12s %12s %14s%s\n", ph->pid,
					    ph->allocs,
					    cli_fmt_bytes(b1, sizeof(b1), ph->alloc_bytes),
					    cli_fmt_bytes(b2, sizeof(b2), ph->live_peak_bytes),
					    cli_fmt_bytes(b3, sizeof(b3), ph->live_end_bytes),
					    ph->exited ? "" : " (no exit seen: at the end)");
			}
		}
		if (s->frees_unknown)
			dump_printf("  %" PRIu64 " %s of addresses allocated before tracing\n",
				    s->frees_unknown,
				    cli_plural(s->frees_unknown, "free", "frees"));
	}
	if (mem) {
		dump_memory_summary_text(mem, dump_start_ns(r));
		dump_memory_summary_sites_text(mem);
	}

	dump_str("\nRSS of the program (trace buffers excluded):\n");
	dump_summary_peak_text(s);
	if (s->rss_samples) {
		dump_printf("  sampled:   min %s, max %s, last %s; %" PRIu64 " %s",
			    cli_fmt_bytes(b1, sizeof(b1), s->rss_sampled_min_bytes),
			    cli_fmt_bytes(b2, sizeof(b2), s->rss_peak_sampled_bytes),
			    cli_fmt_bytes(b3, sizeof(b3), s->rss_sampled_last_bytes),
			    s->rss_samples, cli_plural(s->rss_samples, "sample", "samples"));
		if (h->rss_interval_ns)
			dump_printf(" every %s (%s)",
				    dump_fmt_ns(b4, sizeof(b4), h->rss_interval_ns),
				    trcfile_rss_source_name(h->rss_source));
		dump_char('\n');
		dump_str("  over time: ");
		dump__sparkline(s);
		if (s->rss_samples < SUMMARY_SPARK_MIN_SAMPLES)
			dump_printf("             (%" PRIu64 " %s: too few to show a shape; a "
				    "shorter --rss-interval samples more often)\n",
				    s->rss_samples, cli_plural(s->rss_samples, "sample", "samples"));
	} else {
		dump_printf("  sampled:   no samples%s\n",
			    h->rss_interval_ns ? "" : " (sampling was off)");
	}
	dump_printf("  buffers:   %s resident at most (excluded above)\n",
		    cli_fmt_bytes(b6, sizeof(b6), s->buffers_resident_peak_bytes));
	if (s->buffers_resident_refused_bytes)
		dump_printf("  note:      the program's count of its trace buffers' most, %s, is "
			    "above what its RSS held: not believed, bounded above\n",
			    cli_fmt_bytes(b6, sizeof(b6), s->buffers_resident_refused_bytes));
	dump_summary_processes_text(s);

	if (s->n_notes) {
		dump_str("\nnotes:\n");
		for (size_t i = 0; i < s->n_notes; i++) {
			dump_str("  +");
			dump_seconds((int64_t)(s->notes[i].ts_ns - s->start_ns));
			dump_str(" s  ");
			dump_str(s->notes[i].text);
			dump_char('\n');
		}
		if (s->notes_dropped)
			dump_printf("  (%" PRIu64 " more %s not shown)\n", s->notes_dropped,
				    cli_plural(s->notes_dropped, "note", "notes"));
	}
}

/* Several FILEs: each trace's summary, in the order they started on CLOCK_REALTIME, labelled
 * HOST TRACE, then the totals. JSON: {"traces":[{"host","trace","start_realtime_ns",
 * "start_offset_ns","summary":{...one FILE's object...}}...], "traces_count", "records",
 * "events_recorded", "events_lost"}. */
static int dump__summary_multi(int argc, char **argv, bool json, enum func_sort sort)
{
	struct dump_traces m;
	unsigned n = (unsigned)(argc - optind);
	if (dump_traces_open(&m, argv + optind, n) != DUMP_EXIT_OK)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	struct dump_figures *f = calloc(n, sizeof(*f));
	unsigned *order = calloc(n, sizeof(*order));
	unsigned done = 0;
	if (!f || !order) {
		dump_error("out of memory");
		goto out;
	}
	/* Every trace computed before anything is printed: a failure leaves no partial output. */
	for (; done < n; done++)
		if (dump_figures_compute(m.t[done].r, m.t[done].path, sort, &f[done]) !=
		    DUMP_EXIT_OK)
			goto out;
	/* Insertion sort by start on CLOCK_REALTIME; ties keep the order given. */
	for (unsigned i = 0; i < n; i++) {
		int64_t si = (int64_t)dump_start_ns(m.t[i].r) + m.t[i].anchor;
		unsigned k = i;
		while (k && (int64_t)dump_start_ns(m.t[order[k - 1]].r) + m.t[order[k - 1]].anchor >
				    si) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = i;
	}
	uint64_t records = 0, recorded = 0, lost = 0;
	if (json)
		dump_str("{\"traces\":[\n");
	for (unsigned k = 0; k < n; k++) {
		unsigned i = order[k];
		const struct dump_trace *t = &m.t[i];
		int64_t start = (int64_t)dump_start_ns(t->r) + t->anchor;
		const struct summary *s = &f[i].s;
		records += s->records;
		recorded += s->events_recorded;
		lost += s->events_lost;
		if (json) {
			dump_str(k ? ",{\"host\":" : "{\"host\":");
			dump_json_str(t->host, t->host_len);
			dump_str(",\"trace\":");
			dump_json_str(t->trace, strlen(t->trace));
			dump_printf(",\"start_realtime_ns\":%" PRId64
				    ",\"start_offset_ns\":%" PRId64 ",\"summary\":",
				    start, start - m.start_rt);
			dump__json(t->r, s, f[i].ft, &f[i].mem);
			dump_char('}');
		} else {
			char b[32];
			dump_str(k ? "\n== " : "== ");
			dump_write(t->host, t->host_len);
			dump_char(' ');
			dump_str(t->trace);
			dump_printf(" (started %s after the first) ==\n",
				    dump_fmt_ns(b, sizeof(b), (uint64_t)(start - m.start_rt)));
			dump__text(t->r, s, f[i].ft, sort, &f[i].mem);
		}
	}
	if (json)
		dump_printf("],\"traces_count\":%u,\"records\":%" PRIu64
			    ",\"events_recorded\":%" PRIu64 ",\"events_lost\":%" PRIu64 "}\n",
			    n, records, recorded, lost);
	else
		dump_printf("\n== %u traces: %" PRIu64 " events recorded, %" PRIu64
			    " lost, %" PRIu64 " records ==\n",
			    n, recorded, lost, records);
	rc = DUMP_EXIT_OK;
out:
	for (unsigned i = 0; f && i < done; i++)
		dump_figures_free(&f[i]);
	free(f);
	free(order);
	dump_traces_close(&m);
	return rc;
}

int dump_summary_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"sort", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	enum func_sort sort = FUNC_SORT_SELF;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (dump_value_missing(argv[0], argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 'j':
			json = true;
			break;
		case 's':
			if (!func_sort_parse(optarg, &sort))
				return dump_usage_error(
					argv[0],
					"--sort: expected self, total, calls, max or "
					"name, got \"%s\"",
					optarg);
			break;
		case 'h':
			fputs(dump__summary_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(argv[0], c, argv, opts);
		}
	}
	if (argc - optind > 1)
		return dump__summary_multi(argc, argv, json, sort);
	const char *path = dump_file_operand(argv[0], argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	struct dump_figures f;
	if (dump_figures_compute(r, path, sort, &f) != DUMP_EXIT_OK) {
		dump_reader_free(r);
		return DUMP_EXIT_FAIL;
	}
	if (json)
		dump__json(r, &f.s, f.ft, &f.mem);
	else
		dump__text(r, &f.s, f.ft, sort, &f.mem);
	dump_figures_free(&f);
	dump_close(r, path);
	return DUMP_EXIT_OK;
}
