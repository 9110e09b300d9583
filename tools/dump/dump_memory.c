/* dump_memory.c - `trace-dump memory`: what made RSS grow, per process.
 *
 * Purpose: prints src/analysis/memory.h's report: the intervals between two RSS samples in
 * which RSS rose with the bytes allocated in them by site, the live heap beside RSS over time
 * and the gap between them, what it allocated before its first sample, and the sites live at
 * its largest sample ("max sampled", as trace-dump summary says: the peak, the kernel's
 * high-water mark, is the summary's). Text (readable tables), JSON
 * (--json: everything) or CSV (--csv TABLE: one table, one row per value, for a spreadsheet or
 * DuckDB). Also the summary's top five (dump_memory.h).
 *
 * Times are from the start of recording (dump_start_ns), like the other commands.
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump_common.h"
#include "dump_memory.h"
#include "dump_symbols.h"
#include "flame.h"

#define DUMP__MEM_SERIES_ROWS 20u

static const char dump__memory_help[] =
	"usage: trace-dump memory [--stack] [--sites N] [--top N] [--json | --csv TABLE]\n"
	"                         [-o OUT] FILE\n"
	"\n"
	"What made RSS grow, for each process with RSS samples:\n"
	"  growth intervals  between two consecutive samples in which RSS rose: RSS before\n"
	"                    and after, the bytes the process allocated and freed in it, its\n"
	"                    live heap at both ends, and the bytes allocated by site\n"
	"  series            at each sample: RSS, the live heap (allocated minus freed), the\n"
	"                    gap between them (what malloc does not explain: mappings,\n"
	"                    stacks, fragmentation, memory freed but not returned) and what\n"
	"                    the program mapped outside malloc (mmap, mremap, brk)\n"
	"  before its first sample  what the process allocated and freed before it (RSS\n"
	"                    then is not known): growth no interval between samples shows\n"
	"  peak              the sites of the allocations live at its largest sample (max\n"
	"                    sampled; the peak, the kernel's, is in trace-dump summary)\n"
	"  over the run      the bytes allocated by site; what was live at the end of the\n"
	"                    trace (leaks, when the process exited); temporary allocations\n"
	"                    (freed before their thread allocated again, as heaptrack counts)\n"
	"A site is the allocation's call stack (trace-run --alloc-stacks): its innermost\n"
	"function outside the allocator (operator new, xmalloc and kin are the caller's);\n"
	"without one, what the allocating thread was running: its innermost span or\n"
	"function, or \"" FLAME_OUTSIDE "\". Functions by name from the modules' symbol\n"
	"tables, else module+offset. With sampled stacks (sample=SIZE) the bytes and counts\n"
	"by site are unbiased estimates; the totals stay exact. RSS excludes the trace\n"
	"buffers.\n"
	"\n"
	"  --stack         sites are whole stacks, outermost first (\"main;parse;load\")\n"
	"  --sites N       sites kept per interval and at the peak, largest first; the rest\n"
	"                  are one \"" MEMORY_OTHER_SITES "\" (default 10; 0: all)\n"
	"  --top N         text: the N intervals of largest growth (default 10; 0: all)\n"
	"  --json          everything as one JSON object (intervals in time order)\n"
	"  --csv TABLE     one table as CSV with a header line: intervals (a row per site of\n"
	"                  each interval), series, peak (a row per site), sites (allocated\n"
	"                  over the run), leaks (live at the end) or temporary\n"
	"  -o OUT          write to OUT instead of standard output\n"
	"  -h, --help      this text\n"
	"\n"
	"Times (t_ns, t0_ns, t1_ns) are nanoseconds from the start of recording.\n";

enum dump__mem_fmt { DUMP__MEM_TEXT, DUMP__MEM_JSON, DUMP__MEM_CSV };
enum dump__mem_table {
	DUMP__MEM_INTERVALS,
	DUMP__MEM_SERIES,
	DUMP__MEM_PEAK,
	DUMP__MEM_SITES,
	DUMP__MEM_LEAKS,
	DUMP__MEM_TEMPORARY
};

static uint64_t dump__rel(uint64_t t, uint64_t start)
{
	return t > start ? t - start : 0;
}

/* A signed byte count, readable ("-1.5 MiB"). */
static const char *dump__fmt_sbytes(char *buf, size_t len, int64_t v, bool plus)
{
	char b[24];
	cli_fmt_bytes(b, sizeof(b), v < 0 ? (uint64_t)-v : (uint64_t)v);
	snprintf(buf, len, "%s%s", v < 0 ? "-" : plus && v > 0 ? "+" : "", b);
	return buf;
}

static void dump__csv_str(const char *s)
{
	dump_char('"');
	for (; *s; s++) {
		if (*s == '"')
			dump_char('"');
		dump_char(*s);
	}
	dump_char('"');
}

/* ---- text ----------------------------------------------------------------------------- */

static void dump__text_sites(const struct memory_site *s, size_t n)
{
	char b1[32];
	for (size_t i = 0; i < n; i++)
		dump_printf("        %12s %8" PRIu64 "  %s\n",
			    cli_fmt_bytes(b1, sizeof(b1), s[i].bytes), s[i].allocs, s[i].name);
}

static void dump__text_interval(const struct memory_interval *iv, uint64_t start, bool pid)
{
	char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
	if (pid)
		dump_printf("  %8u", iv->pid);
	dump_printf(
		"  %10s %10s %10s %10s %10s %10s %10s\n",
		dump_fmt_ns(b1, sizeof(b1), dump__rel(iv->t0_ns, start)),
		dump_fmt_ns(b2, sizeof(b2), dump__rel(iv->t1_ns, start)),
		cli_fmt_bytes(b3, sizeof(b3), iv->rss_before),
		dump__fmt_sbytes(b4, sizeof(b4), (int64_t)(iv->rss_after - iv->rss_before), true),
		cli_fmt_bytes(b5, sizeof(b5), iv->alloc_bytes),
		cli_fmt_bytes(b6, sizeof(b6), iv->free_bytes),
		dump__fmt_sbytes(b7, sizeof(b7), (int64_t)(iv->live_after - iv->live_before),
				 true));
}

static void dump__text_process(const struct memory_process *q, uint64_t start, unsigned top)
{
	char b1[32], b2[32], b3[32], b4[32];
	dump_printf("\nprocess %u: max sampled %s at %s (live heap %s, gap %s; the peak, the "
		    "kernel's, is in trace-dump summary)%s\n",
		    q->pid, cli_fmt_bytes(b1, sizeof(b1), q->peak_rss_bytes),
		    dump_fmt_ns(b2, sizeof(b2), dump__rel(q->peak_ts_ns, start)),
		    cli_fmt_bytes(b3, sizeof(b3), q->peak_live_bytes),
		    dump__fmt_sbytes(b4, sizeof(b4),
				     (int64_t)(q->peak_rss_bytes - q->peak_live_bytes), false),
		    q->live_approximate ? " (live heap approximate: too many live blocks)" : "");
	if (q->has_before_first) {
		const struct memory_interval *bf = &q->before_first;
		char b5[32], b6[32];
		dump_printf("  before its first sample (%s to %s): %s allocated in %" PRIu64
			    " %s, %s freed, %s live; RSS at the first sample %s\n",
			    dump_fmt_ns(b1, sizeof(b1), dump__rel(bf->t0_ns, start)),
			    dump_fmt_ns(b2, sizeof(b2), dump__rel(bf->t1_ns, start)),
			    cli_fmt_bytes(b3, sizeof(b3), bf->alloc_bytes), bf->allocs,
			    bf->allocs == 1 ? "alloc" : "allocs",
			    cli_fmt_bytes(b4, sizeof(b4), bf->free_bytes),
			    cli_fmt_bytes(b5, sizeof(b5), bf->live_after),
			    cli_fmt_bytes(b6, sizeof(b6), bf->rss_after));
		dump__text_sites(bf->sites, bf->n_sites);
	}
	size_t n = q->n_intervals;
	if (!n) {
		dump_printf("  RSS never rose between two of its %zu samples\n", q->n_series);
	} else {
		size_t shown = top && n > top ? top : n;
		const struct memory_interval **iv = malloc(n * sizeof(*iv));
		struct memory_report one = {.procs = (struct memory_process *)q, .n_procs = 1};
		if (iv)
			shown = memory_top_intervals(&one, iv, shown);
		dump_printf("  RSS rose in %zu of %zu intervals between samples; %s%zu, largest "
			    "growth first, with the bytes allocated by site:\n",
			    n, q->n_series ? q->n_series - 1 : 0, shown < n ? "the top " : "all ",
			    shown);
		dump_printf("  %10s %10s %10s %10s %10s %10s %10s\n", "from", "to", "RSS before",
			    "growth", "allocated", "freed", "heap +/-");
		dump_printf("        %12s %8s  %s\n", "bytes", "allocs", "site");
		for (size_t i = 0; iv && i < shown; i++) {
			dump__text_interval(iv[i], start, false);
			dump__text_sites(iv[i]->sites, iv[i]->n_sites);
		}
		free(iv);
	}
	if (q->n_series) {
		size_t step = (q->n_series + DUMP__MEM_SERIES_ROWS - 1) / DUMP__MEM_SERIES_ROWS;
		dump_printf("  live heap beside RSS (%s%zu samples; --csv series for all):\n",
			    step > 1 ? "every few of " : "", q->n_series);
		dump_printf("  %10s %10s %10s %10s %10s\n", "time", "RSS", "live heap", "gap",
			    "mapped");
		for (size_t i = 0; i < q->n_series; i++) {
			const struct memory_sample *s = &q->series[i];
			if (i % step && i + 1 != q->n_series && s->ts_ns != q->peak_ts_ns)
				continue;
			char b5[32];
			dump_printf("  %10s %10s %10s %10s %10s%s\n",
				    dump_fmt_ns(b1, sizeof(b1), dump__rel(s->ts_ns, start)),
				    cli_fmt_bytes(b2, sizeof(b2), s->rss_bytes),
				    cli_fmt_bytes(b3, sizeof(b3), s->live_bytes),
				    dump__fmt_sbytes(b4, sizeof(b4),
						     (int64_t)(s->rss_bytes - s->live_bytes),
						     false),
				    cli_fmt_bytes(b5, sizeof(b5), s->mapped_bytes),
				    s->ts_ns == q->peak_ts_ns ? "  peak" : "");
		}
	}
	if (q->n_peak_sites) {
		dump_str("  live at the max sample, by site:\n");
		dump_printf("        %12s %8s  %s\n", "bytes", "blocks", "site");
		dump__text_sites(q->peak_sites, q->n_peak_sites);
	}
	if (q->n_sites) {
		dump_str("  allocated over the run, by site:\n");
		dump_printf("        %12s %8s  %s\n", "bytes", "allocs", "site");
		dump__text_sites(q->sites, q->n_sites);
	}
	if (q->n_exit_sites) {
		dump_printf("  live at the end of the trace (leaks if it exited), %s, by site:\n",
			    cli_fmt_bytes(b1, sizeof(b1), q->exit_live_bytes));
		dump_printf("        %12s %8s  %s\n", "bytes", "blocks", "site");
		dump__text_sites(q->exit_sites, q->n_exit_sites);
	}
	if (q->n_temp_sites) {
		dump_str("  temporary allocations (freed before their thread allocated again), by "
			 "site:\n");
		dump_printf("        %12s %8s  %s\n", "bytes", "allocs", "site");
		dump__text_sites(q->temp_sites, q->n_temp_sites);
	}
}

static void dump__text(const struct memory_report *m, uint64_t start, unsigned top, bool stack)
{
	char b1[32];
	dump_printf("memory: what made RSS grow (sites: %s)\n",
		    stack ? "whole stacks"
			  : "the allocation's innermost function outside the allocator, else the "
			    "innermost span or function; --stack for stacks");
	if (!m->n_procs)
		dump_str("no RSS samples: nothing to set the allocations beside (trace-run "
			 "samples RSS unless --rss-interval 0)\n");
	for (size_t i = 0; i < m->n_procs; i++)
		dump__text_process(&m->procs[i], start, top);
	if (m->alloc_bytes_unsampled)
		dump_printf("\n%s allocated by processes without RSS samples (not shown)\n",
			    cli_fmt_bytes(b1, sizeof(b1), m->alloc_bytes_unsampled));
	if (m->folded_frames)
		dump_printf("(%" PRIu64 " frames past %u distinct stacks folded into their "
			    "callers)\n",
			    m->folded_frames, FLAME_MAX_NODES);
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void dump__json_sites(const char *key, const struct memory_site *s, size_t n)
{
	dump_printf(",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		dump_str(i ? ",{\"name\":" : "{\"name\":");
		dump_json_str(s[i].name, strlen(s[i].name));
		dump_printf(",\"bytes\":%" PRIu64 ",\"allocs\":%" PRIu64 "}", s[i].bytes,
			    s[i].allocs);
	}
	dump_char(']');
}

static void dump__json_interval(const struct memory_interval *iv, uint64_t start)
{
	dump_printf("{\"pid\":%u,\"t0_ns\":%" PRIu64 ",\"t1_ns\":%" PRIu64
		    ",\"rss_before_bytes\":%" PRIu64 ",\"rss_after_bytes\":%" PRIu64
		    ",\"rss_growth_bytes\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
		    ",\"allocs\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		    ",\"live_before_bytes\":%" PRIu64 ",\"live_after_bytes\":%" PRIu64,
		    iv->pid, dump__rel(iv->t0_ns, start), dump__rel(iv->t1_ns, start),
		    iv->rss_before, iv->rss_after, iv->rss_after - iv->rss_before, iv->alloc_bytes,
		    iv->allocs, iv->free_bytes, iv->live_before, iv->live_after);
	dump__json_sites("sites", iv->sites, iv->n_sites);
	dump_char('}');
}

static void dump__json(const struct memory_report *m, uint64_t start, bool stack)
{
	dump_printf("{\"sites\":\"%s\",\"processes\":[", stack ? "stack" : "innermost");
	for (size_t i = 0; i < m->n_procs; i++) {
		const struct memory_process *q = &m->procs[i];
		dump_printf(
			"%s{\"pid\":%u,\"rss_peak_bytes\":%" PRIu64 ",\"rss_peak_t_ns\":%" PRIu64
			",\"live_at_peak_bytes\":%" PRIu64 ",\"live_approximate\":%s,"
			"\"intervals\":[",
			i ? "," : "", q->pid, q->peak_rss_bytes, dump__rel(q->peak_ts_ns, start),
			q->peak_live_bytes, q->live_approximate ? "true" : "false");
		for (size_t k = 0; k < q->n_intervals; k++) {
			if (k)
				dump_char(',');
			dump__json_interval(&q->intervals[k], start);
		}
		dump_char(']');
		if (q->has_before_first) {
			dump_str(",\"before_first_sample\":");
			dump__json_interval(&q->before_first, start);
		}
		dump_str(",\"series\":[");
		for (size_t k = 0; k < q->n_series; k++) {
			const struct memory_sample *s = &q->series[k];
			dump_printf("%s{\"t_ns\":%" PRIu64 ",\"rss_bytes\":%" PRIu64
				    ",\"live_heap_bytes\":%" PRIu64 ",\"gap_bytes\":%" PRId64
				    ",\"mapped_bytes\":%" PRIu64 "}",
				    k ? "," : "", dump__rel(s->ts_ns, start), s->rss_bytes,
				    s->live_bytes, (int64_t)(s->rss_bytes - s->live_bytes),
				    s->mapped_bytes);
		}
		dump_char(']');
		dump__json_sites("peak_sites", q->peak_sites, q->n_peak_sites);
		dump__json_sites("sites", q->sites, q->n_sites);
		dump_printf(",\"live_at_end_bytes\":%" PRIu64, q->exit_live_bytes);
		dump__json_sites("live_at_end_sites", q->exit_sites, q->n_exit_sites);
		dump__json_sites("temporary_sites", q->temp_sites, q->n_temp_sites);
		dump_char('}');
	}
	dump_printf("],\"alloc_bytes_unsampled\":%" PRIu64 ",\"folded_frames\":%" PRIu64 "}\n",
		    m->alloc_bytes_unsampled, m->folded_frames);
}

/* ---- CSV ------------------------------------------------------------------------------ */

static void dump__csv(const struct memory_report *m, uint64_t start, enum dump__mem_table t)
{
	static const char *const head[] = {
		[DUMP__MEM_INTERVALS] = "pid,t0_ns,t1_ns,rss_before_bytes,rss_after_bytes,"
					"rss_growth_bytes,alloc_bytes,allocs,free_bytes,"
					"live_before_bytes,live_after_bytes,site,site_bytes,"
					"site_allocs\n",
		[DUMP__MEM_SERIES] = "pid,t_ns,rss_bytes,live_heap_bytes,gap_bytes,mapped_bytes\n",
		[DUMP__MEM_PEAK] = "pid,t_ns,rss_bytes,live_heap_bytes,site,bytes,blocks\n",
		[DUMP__MEM_SITES] = "pid,site,bytes,allocs\n",
		[DUMP__MEM_LEAKS] = "pid,site,bytes,blocks\n",
		[DUMP__MEM_TEMPORARY] = "pid,site,bytes,allocs\n",
	};
	dump_str(head[t]);
	for (size_t i = 0; i < m->n_procs; i++) {
		const struct memory_process *q = &m->procs[i];
		if (t == DUMP__MEM_SITES || t == DUMP__MEM_LEAKS || t == DUMP__MEM_TEMPORARY) {
			const struct memory_site *v = t == DUMP__MEM_SITES   ? q->sites
						      : t == DUMP__MEM_LEAKS ? q->exit_sites
									     : q->temp_sites;
			size_t nv = t == DUMP__MEM_SITES   ? q->n_sites
				    : t == DUMP__MEM_LEAKS ? q->n_exit_sites
							   : q->n_temp_sites;
			for (size_t k = 0; k < nv; k++) {
				dump_printf("%u,", q->pid);
				dump__csv_str(v[k].name);
				dump_printf(",%" PRIu64 ",%" PRIu64 "\n", v[k].bytes, v[k].allocs);
			}
		} else if (t == DUMP__MEM_SERIES) {
			for (size_t k = 0; k < q->n_series; k++) {
				const struct memory_sample *s = &q->series[k];
				dump_printf("%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64
					    ",%" PRIu64 "\n",
					    q->pid, dump__rel(s->ts_ns, start), s->rss_bytes,
					    s->live_bytes, (int64_t)(s->rss_bytes - s->live_bytes),
					    s->mapped_bytes);
			}
		} else if (t == DUMP__MEM_PEAK) {
			for (size_t k = 0; k < q->n_peak_sites; k++) {
				dump_printf("%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", q->pid,
					    dump__rel(q->peak_ts_ns, start), q->peak_rss_bytes,
					    q->peak_live_bytes);
				dump__csv_str(q->peak_sites[k].name);
				dump_printf(",%" PRIu64 ",%" PRIu64 "\n", q->peak_sites[k].bytes,
					    q->peak_sites[k].allocs);
			}
		} else {
			for (size_t k = 0; k < q->n_intervals; k++) {
				const struct memory_interval *iv = &q->intervals[k];
				for (size_t j = 0; j < iv->n_sites || (j == 0 && !iv->n_sites);
				     j++) {
					dump_printf("%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64
						    ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
						    ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
						    iv->pid, dump__rel(iv->t0_ns, start),
						    dump__rel(iv->t1_ns, start), iv->rss_before,
						    iv->rss_after, iv->rss_after - iv->rss_before,
						    iv->alloc_bytes, iv->allocs, iv->free_bytes,
						    iv->live_before, iv->live_after);
					if (!iv->n_sites) {
						dump_str(",,\n");
						break;
					}
					dump__csv_str(iv->sites[j].name);
					dump_printf(",%" PRIu64 ",%" PRIu64 "\n",
						    iv->sites[j].bytes, iv->sites[j].allocs);
				}
			}
		}
	}
}

/* ---- the summary's top five ----------------------------------------------------------- */

struct memory_feed *dump_memory_feed_for_summary(struct trcfile_reader *r,
						 struct sym_resolver *syms, int *err)
{
	const struct memory_opts o = {
		.stack = false, .sites = 1, .run_sites = DUMP_MEMORY_SUMMARY_ROWS};
	return memory_feed_new(r, syms, &o, err);
}

void dump_memory_summary_text(const struct memory_report *m, uint64_t start)
{
	const struct memory_interval *top[DUMP_MEMORY_SUMMARY_ROWS];
	size_t n = memory_top_intervals(m, top, DUMP_MEMORY_SUMMARY_ROWS);
	if (!n)
		return;
	char b1[32], b2[32], b3[32], b4[32], b5[32];
	dump_printf("\nRSS growth (the %zu largest rises between samples; trace-dump memory "
		    "for all):\n",
		    n);
	dump_printf("  %8s  %10s %10s %10s %10s  %s\n", "pid", "from", "to", "growth", "allocated",
		    "allocated most in");
	for (size_t i = 0; i < n; i++) {
		const struct memory_interval *iv = top[i];
		dump_printf("  %8u  %10s %10s %10s %10s  %s%s%s%s\n", iv->pid,
			    dump_fmt_ns(b1, sizeof(b1), dump__rel(iv->t0_ns, start)),
			    dump_fmt_ns(b2, sizeof(b2), dump__rel(iv->t1_ns, start)),
			    dump__fmt_sbytes(b3, sizeof(b3),
					     (int64_t)(iv->rss_after - iv->rss_before), true),
			    cli_fmt_bytes(b4, sizeof(b4), iv->alloc_bytes),
			    iv->n_sites ? iv->sites[0].name : "-", iv->n_sites ? " (" : "",
			    iv->n_sites ? cli_fmt_bytes(b5, sizeof(b5), iv->sites[0].bytes) : "",
			    iv->n_sites ? ")" : "");
	}
}

/* The largest sites over the run of every process, by bytes: up to n into out. */
struct dump__run_site {
	uint32_t pid;
	const struct memory_site *s;
};

static int dump__cmp_run_site(const void *a, const void *b)
{
	const struct dump__run_site *x = a, *y = b;
	if (x->s->bytes != y->s->bytes)
		return x->s->bytes > y->s->bytes ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static size_t dump__run_sites(const struct memory_report *m, struct dump__run_site *out, size_t n)
{
	size_t k = 0, total = 0;
	for (size_t i = 0; m && i < m->n_procs; i++)
		total += m->procs[i].n_sites;
	struct dump__run_site *all = total ? calloc(total, sizeof(*all)) : NULL;
	if (!all)
		return 0;
	for (size_t i = 0; i < m->n_procs; i++)
		for (size_t j = 0; j < m->procs[i].n_sites; j++)
			if (strcmp(m->procs[i].sites[j].name, MEMORY_OTHER_SITES) != 0)
				all[k++] = (struct dump__run_site){m->procs[i].pid,
								   &m->procs[i].sites[j]};
	qsort(all, k, sizeof(*all), dump__cmp_run_site);
	if (k > n)
		k = n;
	memcpy(out, all, k * sizeof(*out));
	free(all);
	return k;
}

void dump_memory_summary_sites_text(const struct memory_report *m)
{
	struct dump__run_site top[DUMP_MEMORY_SUMMARY_ROWS];
	size_t n = dump__run_sites(m, top, DUMP_MEMORY_SUMMARY_ROWS);
	if (!n)
		return;
	char b1[32];
	dump_printf("\nallocation sites (the %zu largest by bytes over the run; trace-dump "
		    "memory for all):\n",
		    n);
	dump_printf("  %8s  %10s %8s  %s\n", "pid", "bytes", "allocs", "site");
	for (size_t i = 0; i < n; i++)
		dump_printf("  %8u  %10s %8" PRIu64 "  %s\n", top[i].pid,
			    cli_fmt_bytes(b1, sizeof(b1), top[i].s->bytes), top[i].s->allocs,
			    top[i].s->name);
}

void dump_memory_summary_json(const struct memory_report *m, uint64_t start)
{
	const struct memory_interval *top[DUMP_MEMORY_SUMMARY_ROWS];
	size_t n = m ? memory_top_intervals(m, top, DUMP_MEMORY_SUMMARY_ROWS) : 0;
	dump_str(",\"memory\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			dump_char(',');
		dump__json_interval(top[i], start);
	}
	dump_char(']');
	struct dump__run_site sites[DUMP_MEMORY_SUMMARY_ROWS];
	size_t ns = dump__run_sites(m, sites, DUMP_MEMORY_SUMMARY_ROWS);
	dump_str(",\"alloc_sites\":[");
	for (size_t i = 0; i < ns; i++) {
		dump_printf("%s{\"pid\":%u,\"name\":", i ? "," : "", sites[i].pid);
		dump_json_str(sites[i].s->name, strlen(sites[i].s->name));
		dump_printf(",\"bytes\":%" PRIu64 ",\"allocs\":%" PRIu64 "}", sites[i].s->bytes,
			    sites[i].s->allocs);
	}
	dump_char(']');
}

/* ---- the command ---------------------------------------------------------------------- */

static int dump__count_arg(const char *cmd, const char *opt, const char *arg, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || v > 1000000 || arg[0] == '-')
		return dump_usage_error(cmd, "%s: expected a count from 0 to 1000000, got \"%s\"",
					opt, arg);
	*out = (unsigned)v;
	return 0;
}

int dump_memory_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"stack", no_argument, NULL, 's'},
		{"sites", required_argument, NULL, 'n'},
		{"top", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"csv", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	struct memory_opts mo = {.stack = false, .sites = 10};
	unsigned top = 10;
	enum dump__mem_fmt fmt = DUMP__MEM_TEXT;
	enum dump__mem_table table = DUMP__MEM_INTERVALS;
	struct dump_outfile of = {.base = NULL};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 's':
			mo.stack = true;
			break;
		case 'n':
			if (dump__count_arg(cmd, "--sites", optarg, &mo.sites))
				return DUMP_EXIT_USAGE;
			break;
		case 't':
			if (dump__count_arg(cmd, "--top", optarg, &top))
				return DUMP_EXIT_USAGE;
			break;
		case 'j':
			if (fmt == DUMP__MEM_CSV)
				return dump_usage_error(cmd, "--json and --csv: choose one");
			fmt = DUMP__MEM_JSON;
			break;
		case 'c':
			if (fmt == DUMP__MEM_JSON)
				return dump_usage_error(cmd, "--json and --csv: choose one");
			fmt = DUMP__MEM_CSV;
			if (!strcmp(optarg, "intervals"))
				table = DUMP__MEM_INTERVALS;
			else if (!strcmp(optarg, "series"))
				table = DUMP__MEM_SERIES;
			else if (!strcmp(optarg, "peak"))
				table = DUMP__MEM_PEAK;
			else if (!strcmp(optarg, "sites"))
				table = DUMP__MEM_SITES;
			else if (!strcmp(optarg, "leaks"))
				table = DUMP__MEM_LEAKS;
			else if (!strcmp(optarg, "temporary"))
				table = DUMP__MEM_TEMPORARY;
			else
				return dump_usage_error(
					cmd,
					"--csv: expected intervals, series, peak, sites, leaks or temporary, got \"%s\"",
					optarg);
			break;
		case 'o':
			of.base = optarg;
			break;
		case 'h':
			fputs(dump__memory_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(cmd, c, argv, opts);
		}
	}
	const char *path = dump_file_operand(cmd, argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	struct sym_resolver *syms = dump_symbols_new(r);
	struct memory_report m;
	int rc = memory_analyze(r, syms, &mo, &m);
	if (rc) {
		dump_error("%s: %s", path,
			   rc == -ENOMEM || !trcfile_reader_errmsg(r)[0]
				   ? "out of memory"
				   : trcfile_reader_errmsg(r));
		sym_resolver_free(syms);
		dump_close(r, path);
		return DUMP_EXIT_FAIL;
	}
	rc = DUMP_EXIT_OK;
	if (of.base && dump_outfile_next(&of))
		rc = DUMP_EXIT_FAIL;
	if (!rc) {
		uint64_t start = dump_start_ns(r);
		if (fmt == DUMP__MEM_JSON)
			dump__json(&m, start, mo.stack);
		else if (fmt == DUMP__MEM_CSV)
			dump__csv(&m, start, table);
		else
			dump__text(&m, start, top, mo.stack);
		if (of.base)
			rc = dump_outfile_close(&of) ? DUMP_EXIT_FAIL : DUMP_EXIT_OK;
		else
			dump_flush();
	}
	memory_report_free(&m);
	sym_resolver_free(syms);
	dump_close(r, path);
	return rc;
}
