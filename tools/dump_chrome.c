/* dump_chrome.c - `trace-dump chrome`: Chrome Trace Event JSON, streamed.
 *
 * Purpose: export for Perfetto UI, chrome://tracing and speedscope. The output is written as
 * the merge produces records, so memory does not grow with the trace: per stream only an
 * open-span depth, plus the live-allocation table for the heap counter (capped).
 *
 * Mapping (documented in --help):
 *   span_begin/end, func_enter/exit  "B"/"E" on (pid, tid); functions by their names (the
 *                                    modules' symbol tables, dump_symbols.h), else
 *                                    module+offset when a module record covers the address
 *   instant                          "i" (thread scope) with args.value
 *   counter                          "C" named after the counter, args.value
 *   alloc/free                       "C" "heap live bytes" per process (args.bytes)
 *   rss                              "C" "RSS" per process: args.program_bytes and
 *                                    args.buffers_bytes (stacked, they sum to the RSS)
 *   lost, exit, note                 "i" instants (thread, process, global scope)
 *   thread, process                  "M" thread_name / process_name metadata
 * Balance: an "E" with no open span on its thread is dropped (counted in otherData); spans
 * still open at the end are closed at the last timestamp with args.unfinished = true.
 * Timestamps: microseconds from the start of recording, nanoseconds kept as 3 decimals.
 *
 * Threads: single-threaded.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "allocmap.h"
#include "cli_plural.h"
#include "dump_common.h"
#include "dump_symbols.h"

static const char dump__chrome_help[] =
	"usage: trace-dump chrome FILE... > trace.json\n"
	"\n"
	"Chrome Trace Event JSON (an object with traceEvents), for ui.perfetto.dev,\n"
	"chrome://tracing and speedscope. Streamed: memory does not grow with the trace.\n"
	"  spans, functions   B/E events per thread (functions by name from the modules'\n"
	"                     symbol tables, else module+offset); spans still open at the\n"
	"                     end are closed at the last timestamp with args.unfinished=true;\n"
	"                     an end without a begin\n"
	"                     is dropped (counted in otherData.spans_unmatched_end)\n"
	"  instants           i events with args.value; counters: C events\n"
	"  allocations        a C counter 'heap live bytes' per process\n"
	"  RSS                a C counter 'RSS' per process: program_bytes + buffers_bytes\n"
	"  lost, exit, notes  i events; threads and processes named by M events\n"
	"Timestamps are microseconds from the start of recording with 3 decimals (ns).\n"
	"Several FILEs (from one or many hosts): one JSON, merged on CLOCK_REALTIME, times\n"
	"from the earliest start; trace N's pids shown as pid + N x 10000000 (N from 1, in\n"
	"the order given), processes named \"HOST TRACE: command\"; otherData.traces lists\n"
	"each FILE's host, trace, pid_offset and start_realtime_ns.\n"
	"\n"
	"  -h, --help  this text\n";

#define DUMP__LIVE_MAX_ENTRIES (1u << 20)
#define DUMP__MAX_PIDS 4096

struct dump__chrome {
	const struct trcfile_reader *r;
	struct sym_resolver *syms; /* NULL: module+offset */
	uint64_t start, last_ts;
	bool first;
	uint64_t *depth; /* open B per stream */
	struct allocmap *live;
	struct {
		uint32_t pid;
		uint64_t bytes;
	} pids[DUMP__MAX_PIDS];
	unsigned n_pids;
	uint64_t unmatched_end, closed_at_end;
	bool live_approximate;
	/* Several FILEs (dump__chrome_multi): pids shown as pid + pid_base (each trace its own
	 * range), process names prefixed "HOST TRACE: "; NULL / 0 for one FILE. */
	const struct dump_trace *label;
	uint64_t pid_base;
};

/* Starts an event object: {"ph":"X","pid":P,"tid":T,"ts":TS */
static void dump__ev(struct dump__chrome *c, char ph, uint32_t pid, uint32_t tid, uint64_t ts)
{
	if (!c->first)
		dump_str(",\n");
	c->first = false;
	dump_str("{\"ph\":\"");
	dump_char(ph);
	dump_str("\",\"pid\":");
	dump_u64(pid + c->pid_base);
	dump_str(",\"tid\":");
	dump_u64(tid);
	dump_str(",\"ts\":");
	dump_micros((int64_t)(ts - c->start));
}

static void dump__name(const struct dump__chrome *c, uint32_t id)
{
	uint32_t len = 0;
	const char *n = trcfile_reader_name(c->r, id, &len);
	dump_str(",\"name\":");
	if (n) {
		dump_json_str(n, len);
	} else {
		char b[16];
		int k = snprintf(b, sizeof(b), "#%u", id);
		dump_json_str(b, (size_t)k);
	}
}

static void dump__func_name(const struct dump__chrome *c, uint32_t pid, uint64_t addr)
{
	char b[320];
	const struct trcfile_module *m = trcfile_reader_module(c->r, pid, addr);
	struct sym_info si;
	int k;
	if (m && c->syms && sym_resolve(c->syms, pid, addr, &si) == 0 && si.name) {
		k = snprintf(b, sizeof(b), "%s", si.name);
	} else if (m) {
		const char *base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		k = snprintf(b, sizeof(b), "%.256s+0x%" PRIx64, base, addr - m->start + m->offset);
	} else {
		k = snprintf(b, sizeof(b), "0x%" PRIx64, addr);
	}
	if (k < 0)
		k = 0;
	if ((size_t)k >= sizeof(b))
		k = sizeof(b) - 1;
	dump_str(",\"name\":");
	dump_json_str(b, (size_t)k);
}

static void dump__meta(struct dump__chrome *c, const char *what, uint32_t pid, uint32_t tid,
		       const char *name, size_t len, bool cmdline)
{
	if (!c->first)
		dump_str(",\n");
	c->first = false;
	dump_str("{\"ph\":\"M\",\"name\":\"");
	dump_str(what);
	dump_str("\",\"pid\":");
	dump_u64(pid + c->pid_base);
	dump_str(",\"tid\":");
	dump_u64(tid);
	dump_str(",\"args\":{\"name\":");
	if (cmdline) {
		/* Arguments are NUL-separated: show them separated by spaces; with several FILEs
		 * after "HOST TRACE: ". */
		size_t pre = c->label ? c->label->host_len + strlen(c->label->trace) + 3 : 0;
		char *tmp = malloc(pre + len + 1);
		if (tmp) {
			size_t n = len;
			if (n && name[n - 1] == 0)
				n--;
			if (c->label)
				snprintf(tmp, pre + 1, "%.*s %s: ", (int)c->label->host_len,
					 c->label->host, c->label->trace);
			for (size_t i = 0; i < n; i++)
				tmp[pre + i] = name[i] ? name[i] : ' ';
			n += pre;
			dump_json_str(tmp, n);
			free(tmp);
		} else {
			dump_json_str("", 0);
		}
	} else {
		dump_json_str(name, len);
	}
	dump_str("}}");
}

static uint64_t *dump__pid_live(struct dump__chrome *c, uint32_t pid)
{
	for (unsigned i = 0; i < c->n_pids; i++)
		if (c->pids[i].pid == pid)
			return &c->pids[i].bytes;
	if (c->n_pids == DUMP__MAX_PIDS)
		return NULL;
	c->pids[c->n_pids].pid = pid;
	c->pids[c->n_pids].bytes = 0;
	return &c->pids[c->n_pids++].bytes;
}

static void dump__alloc(struct dump__chrome *c, uint32_t pid, uint32_t tid,
			const struct trc_record *rec)
{
	uint64_t *live = dump__pid_live(c, (uint32_t)(pid + c->pid_base));
	if (!live)
		return;
	/* Key by process: a forked child has the same addresses as its parent (and traces of
	 * other hosts, the same pids). */
	uint64_t key = rec->alloc.addr ^ ((uint64_t)pid << 48) ^ (c->pid_base << 20);
	uint64_t old = 0;
	if (rec->type == TRC_REC_ALLOC) {
		int err = allocmap_put(c->live, key, rec->alloc.size, &old);
		if (err) {
			c->live_approximate = true;
			return;
		}
		*live += rec->alloc.size - old;
	} else if (allocmap_take(c->live, key, &old)) {
		*live -= old;
	} else {
		return; /* unknown address: nothing changes */
	}
	dump__ev(c, 'C', pid, tid, rec->ts_ns);
	dump_str(",\"name\":\"heap live bytes\",\"args\":{\"bytes\":");
	dump_u64(*live);
	dump_str("}}");
}

static void dump__record(struct dump__chrome *c, unsigned sidx, const struct trc_record *rec)
{
	const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, sidx);
	uint32_t pid = si->pid, tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
	if (rec->ts_ns > c->last_ts)
		c->last_ts = rec->ts_ns;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		dump__ev(c, 'B', pid, tid, rec->ts_ns);
		dump__name(c, rec->span.name_id);
		dump_char('}');
		c->depth[sidx]++;
		break;
	case TRC_REC_FUNC_ENTER:
		dump__ev(c, 'B', pid, tid, rec->ts_ns);
		dump__func_name(c, pid, rec->func.addr);
		dump_char('}');
		c->depth[sidx]++;
		break;
	case TRC_REC_SPAN_END:
	case TRC_REC_FUNC_EXIT:
		if (!c->depth[sidx]) {
			c->unmatched_end++;
			break;
		}
		c->depth[sidx]--;
		dump__ev(c, 'E', pid, tid, rec->ts_ns);
		dump_char('}');
		break;
	case TRC_REC_INSTANT:
		dump__ev(c, 'i', pid, tid, rec->ts_ns);
		dump__name(c, rec->value.name_id);
		dump_str(",\"s\":\"t\",\"args\":{\"value\":");
		dump_i64(rec->value.value);
		dump_str("}}");
		break;
	case TRC_REC_COUNTER:
		dump__ev(c, 'C', pid, tid, rec->ts_ns);
		dump__name(c, rec->value.name_id);
		dump_str(",\"args\":{\"value\":");
		dump_i64(rec->value.value);
		dump_str("}}");
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		dump__alloc(c, pid, tid, rec);
		break;
	case TRC_REC_RSS: {
		uint64_t b = rec->rss.buffers_bytes;
		dump__ev(c, 'C', rec->rss.pid ? rec->rss.pid : pid, 0, rec->ts_ns);
		dump_str(",\"name\":\"RSS\",\"args\":{\"program_bytes\":");
		dump_u64(rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0);
		dump_str(",\"buffers_bytes\":");
		dump_u64(b);
		dump_str("}}");
		break;
	}
	case TRC_REC_LOST: {
		char b[96];
		int k = snprintf(b, sizeof(b), "lost %" PRIu64 " %s (%s)", rec->lost.count,
				 cli_plural(rec->lost.count, "record", "records"),
				 trcfile_lost_reason_name(rec->lost.reason));
		dump__ev(c, 'i', pid, tid, rec->ts_ns);
		dump_str(",\"s\":\"t\",\"name\":");
		dump_json_str(b, (size_t)k);
		dump_str(",\"args\":{\"count\":");
		dump_u64(rec->lost.count);
		dump_str("}}");
		break;
	}
	case TRC_REC_EXIT:
		dump__ev(c, 'i', rec->exit.pid, 0, rec->ts_ns);
		dump_str(",\"s\":\"p\",\"name\":\"exit\",\"args\":{\"status\":");
		dump_i64(rec->exit.status);
		dump_str(",\"maxrss_bytes\":");
		dump_u64(rec->exit.maxrss_bytes);
		dump_str("}}");
		break;
	case TRC_REC_NOTE:
		dump__ev(c, 'i', pid, 0, rec->ts_ns);
		dump_str(",\"s\":\"g\",\"name\":");
		dump_json_str(rec->note.text, rec->note.len);
		dump_str("}");
		break;
	case TRC_REC_THREAD:
		dump__meta(c, "thread_name", rec->thread.pid, rec->thread.tid, rec->thread.name,
			   rec->thread.name_len, false);
		break;
	case TRC_REC_PROCESS:
		dump__meta(c, "process_name", rec->process.pid, 0, rec->process.cmdline,
			   rec->process.cmdline_len, true);
		break;
	}
}

/* Names every process and thread of the streams before any event. */
static void dump__prologue(struct dump__chrome *c)
{
	const struct trcfile_header *h = trcfile_reader_header(c->r);
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		bool seen = false;
		for (unsigned k = 0; k < s && !seen; k++)
			seen = trcfile_reader_stream(c->r, k)->pid == si->pid;
		if (seen)
			continue;
		uint32_t len = 0;
		const char *cmd = trcfile_reader_process_cmdline(c->r, si->pid, &len);
		if (cmd)
			dump__meta(c, "process_name", si->pid, 0, cmd, len, true);
		else if (si->pid == h->pid)
			dump__meta(c, "process_name", si->pid, 0, h->cmdline, h->cmdline_len, true);
	}
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		if (si->kind != TRC_STREAM_THREAD)
			continue;
		uint32_t len = 0;
		const char *name = trcfile_reader_thread_name(c->r, si->pid, si->tid, &len);
		/* Unknown here: the THREAD record in the thread's own stream names it when the
		 * merge reaches it (viewers show "Thread TID" until then). */
		if (!name)
			continue;
		dump__meta(c, "thread_name", si->pid, si->tid, name, len, false);
	}
}

/* Several FILEs: one JSON, records merged on CLOCK_REALTIME (dump_multi.c), timestamps from the
 * earliest start of recording, trace i's processes shown as pid + (i + 1) x 10000000 (pids do
 * not reach 2^22 on Linux) and named "HOST TRACE: command". */
#define DUMP__CHROME_PID_RANGE 10000000ull

static int dump__chrome_multi(int argc, char **argv)
{
	struct dump_traces m;
	unsigned n = (unsigned)(argc - optind);
	if (dump_traces_open(&m, argv + optind, n) != DUMP_EXIT_OK)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	struct dump__chrome *c = calloc(1, sizeof(*c));
	unsigned *base = calloc(n + 1, sizeof(*base));
	uint64_t *last = calloc(n, sizeof(*last));
	uint64_t *depth = NULL; /* open spans per stream of every file: file i's at base[i] */
	if (!c || !base || !last)
		goto nomem;
	for (unsigned i = 0; i < n; i++)
		base[i + 1] = base[i] + trcfile_reader_stream_count(m.t[i].r);
	depth = calloc(base[n] ? base[n] : 1, sizeof(*depth));
	c->live = allocmap_new(DUMP__LIVE_MAX_ENTRIES);
	if (!depth || !c->live)
		goto nomem;
	c->first = true;
	if (dump_traces_start(&m, NULL) != DUMP_EXIT_OK)
		goto out;
	dump_str("{\"traceEvents\":[\n");
	for (unsigned i = 0; i < n; i++) {
		c->r = m.t[i].r;
		c->label = &m.t[i];
		c->pid_base = (i + 1) * DUMP__CHROME_PID_RANGE;
		c->start = dump_trace_start(&m, i);
		c->depth = depth + base[i];
		dump__prologue(c);
		last[i] = dump_start_ns(m.t[i].r);
	}
	struct trc_record rec;
	unsigned ti, sidx;
	int err;
	while ((err = dump_traces_next(&m, &rec, &ti, &sidx)) == 1) {
		c->r = m.t[ti].r;
		c->label = &m.t[ti];
		c->pid_base = (ti + 1) * DUMP__CHROME_PID_RANGE;
		c->start = dump_trace_start(&m, ti);
		c->depth = depth + base[ti];
		dump__record(c, sidx, &rec);
		if (rec.ts_ns > last[ti])
			last[ti] = rec.ts_ns;
	}
	if (err < 0) {
		dump_flush();
		dump_error("%s: %s", m.t[m.failed].path, trcfile_reader_errmsg(m.t[m.failed].r));
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		c->r = m.t[i].r;
		c->pid_base = (i + 1) * DUMP__CHROME_PID_RANGE;
		c->start = dump_trace_start(&m, i);
		for (unsigned s = 0; s < base[i + 1] - base[i]; s++) {
			const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
			uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
			for (; depth[base[i] + s]; depth[base[i] + s]--) {
				dump__ev(c, 'E', si->pid, tid, last[i]);
				dump_str(",\"args\":{\"unfinished\":true}}");
				c->closed_at_end++;
			}
		}
	}
	dump_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"traces\":[");
	for (unsigned i = 0; i < n; i++) {
		const struct trcfile_header *h = trcfile_reader_header(m.t[i].r);
		dump_str(i ? ",{\"host\":" : "{\"host\":");
		dump_json_str(m.t[i].host, m.t[i].host_len);
		dump_str(",\"trace\":");
		dump_json_str(m.t[i].trace, strlen(m.t[i].trace));
		dump_printf(",\"pid_offset\":%" PRIu64 ",\"start_realtime_ns\":%" PRIu64
			    ",\"format_version\":\"%u.%u\",\"truncated\":%s}",
			    (uint64_t)((i + 1) * DUMP__CHROME_PID_RANGE), h->start_realtime_ns, h->version_major,
			    h->version_minor, trcfile_reader_truncated(m.t[i].r) ? "true" : "false");
	}
	dump_printf("],\"start_realtime_ns\":%" PRId64 ",\"spans_closed_at_end\":%" PRIu64
		    ",\"spans_unmatched_end\":%" PRIu64 ",\"heap_approximate\":%s}}\n",
		    m.start_rt, c->closed_at_end, c->unmatched_end,
		    c->live_approximate ? "true" : "false");
	rc = DUMP_EXIT_OK;
	goto out;
nomem:
	dump_error("out of memory");
out:
	if (c)
		allocmap_free(c->live);
	free(depth);
	free(c);
	free(base);
	free(last);
	dump_traces_close(&m);
	return rc;
}

int dump_chrome_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(dump__chrome_help, stdout);
			return DUMP_EXIT_OK;
		}
		return dump_refused_option(argv[0], opt, argv, opts);
	}
	if (argc - optind > 1)
		return dump__chrome_multi(argc, argv);
	const char *path = dump_file_operand(argv[0], argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	unsigned ns = trcfile_reader_stream_count(r);
	struct dump__chrome *c = calloc(1, sizeof(*c));
	struct trcfile_iter *it = NULL;
	if (!c)
		goto out;
	c->r = r;
	c->syms = dump_symbols_new(r);
	c->first = true;
	c->start = dump_start_ns(r);
	c->last_ts = c->start;
	c->depth = calloc(ns ? ns : 1, sizeof(*c->depth));
	c->live = allocmap_new(DUMP__LIVE_MAX_ENTRIES);
	it = trcfile_iter_new(r);
	if (!c->depth || !c->live || !it) {
		dump_error("%s: %s", path,
			   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
						       : "out of memory");
		goto out;
	}
	dump_str("{\"traceEvents\":[\n");
	dump__prologue(c);
	struct trc_record rec;
	unsigned sidx;
	int err;
	while ((err = trcfile_iter_next(it, &rec, &sidx)) == 1)
		dump__record(c, sidx, &rec);
	if (err < 0) {
		/* What was written so far is not valid JSON; say why and fail. */
		dump_flush();
		dump_error("%s: %s", path, trcfile_reader_errmsg(r));
		goto out;
	}
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		for (; c->depth[s]; c->depth[s]--) {
			dump__ev(c, 'E', si->pid, tid, c->last_ts);
			dump_str(",\"args\":{\"unfinished\":true}}");
			c->closed_at_end++;
		}
	}
	const struct trcfile_header *h = trcfile_reader_header(r);
	dump_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"command\":");
	{
		char *tmp = malloc(h->cmdline_len + 1);
		size_t n = h->cmdline_len;
		if (n && h->cmdline[n - 1] == 0)
			n--;
		if (tmp) {
			for (size_t i = 0; i < n; i++)
				tmp[i] = h->cmdline[i] ? h->cmdline[i] : ' ';
			dump_json_str(tmp, n);
			free(tmp);
		} else {
			dump_json_str("", 0);
		}
	}
	dump_printf(
		",\"format_version\":\"%u.%u\",\"truncated\":%s,\"spans_closed_at_end\":%" PRIu64
		",\"spans_unmatched_end\":%" PRIu64 ",\"heap_approximate\":%s}}\n",
		h->version_major, h->version_minor, trcfile_reader_truncated(r) ? "true" : "false",
		c->closed_at_end, c->unmatched_end, c->live_approximate ? "true" : "false");
	rc = DUMP_EXIT_OK;
out:
	trcfile_iter_free(it);
	if (c) {
		allocmap_free(c->live);
		sym_resolver_free(c->syms);
		free(c->depth);
		free(c);
	}
	trcfile_reader_close(r);
	return rc;
}
