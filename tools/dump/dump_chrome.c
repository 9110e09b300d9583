/* dump_chrome.c - `trace-dump chrome`: Chrome Trace Event JSON, streamed.
 *
 * Purpose: export for Perfetto UI, chrome://tracing and speedscope. The output is written as
 * the merge produces records, so memory does not grow with the trace: per stream only an
 * open-span depth, plus the live-allocation table for the heap counter (capped).
 *
 * Mapping (documented in --help):
 *   span_begin/end, func_enter/exit  "B"/"E" on (pid, tid), each "E" named as its "B";
 *                                    functions by their names (the modules' symbol tables,
 *                                    dump_symbols.h), else module+offset when a module
 *                                    record covers the address
 *   instant                          "i" (thread scope) with args.value
 *   counter                          "C" named after the counter, args.value
 *   alloc/free                       "C" "heap live bytes" per process (args.bytes)
 *   rss                              "C" "RSS" per process: args.program_bytes and
 *                                    args.buffers_bytes (stacked, they sum to the RSS)
 *   lost, exit, note                 "i" instants (thread, process, global scope)
 *   thread, process                  "M" thread_name / process_name metadata
 * Balance: an "E" with no open span on its thread is dropped (counted in otherData); spans
 * still open at the end are closed at the last timestamp (at --to when the trace goes on)
 * with args.unfinished = true.
 * Slicing: --from/--to keep the records in the range (the iterator seeks to --from);
 * --split-size cuts files at record boundaries once a file reaches the size: open spans end
 * there (args.split) and begin again at the same time in the next file (args.continued),
 * which starts with the process and thread names again (tools/dump/dump_outfile.c names files).
 * Per stream the open spans are kept (a stack as deep as the nesting) to name them again.
 * Failure half-way (a damaged chunk): never partial JSON. An output file is cut back to where
 * its document began; a pipe gets the document closed, otherData {incomplete, error}.
 * Timestamps: microseconds from the start of recording, nanoseconds kept as 3 decimals.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocmap.h"
#include "cli_duration.h"
#include "cli_plural.h"
#include "cli_size.h"
#include "dump_common.h"
#include "dump_symbols.h"
#include "u64map.h"

static const char dump__chrome_help[] =
	"usage: trace-dump chrome [--from T] [--to T] [-o OUT [--split-size SIZE]] FILE\n"
	"       trace-dump chrome FILE... > trace.json\n"
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
	"  -o, --output OUT    write OUT instead of standard output\n"
	"  --from T, --to T    only events from T to T (both included), counted from the\n"
	"                      start of recording: a duration with a unit (1.5s, 200ms); spans\n"
	"                      open at --to are closed there (args.unfinished=true)\n"
	"  --split-size SIZE   with -o: numbered files OUT-001, OUT-002... (before OUT's\n"
	"                      extension) of about SIZE each (1M or more: 512M, 1G), each a\n"
	"                      whole trace of consecutive time ranges; spans open at a cut end\n"
	"                      there (args.split=true) and begin again in the next file\n"
	"                      (args.continued=true)\n"
	"  -h, --help          this text\n";

#define DUMP__LIVE_MAX_ENTRIES (1u << 20)
#define DUMP__MAX_PIDS 4096

/* An open span: what names it again in the next file of --split-size. */
struct dump__open {
	uint32_t type; /* TRC_REC_SPAN_BEGIN or TRC_REC_FUNC_ENTER */
	uint32_t name_id;
	uint64_t addr;
};

struct dump__stack {
	struct dump__open *v;
	size_t cap;
	char *thread_name; /* the last THREAD record's name seen in the merge (copy), or NULL */
	uint32_t thread_name_len;
};

struct dump__chrome {
	const struct trcfile_reader *r;
	struct sym_resolver *syms; /* NULL: module+offset */
	uint64_t start, last_ts;
	bool first;
	uint64_t *depth; /* open B per stream */
	struct dump__stack *stacks; /* per stream: the open spans, for --split-size */
	struct allocmap *live;
	struct {
		uint32_t pid;
		uint64_t bytes;
	} pids[DUMP__MAX_PIDS];
	unsigned n_pids;
	uint64_t unmatched_end, closed_at_end;
	bool live_approximate;
	bool oom;
	char fail_msg[96]; /* an injected failure's message (tests) */
	/* Several FILEs (dump__chrome_multi): pids shown as pid + pid_base (each trace its own
	 * range), process names prefixed "HOST TRACE: "; NULL / 0 for one FILE. */
	const struct dump_trace *label;
	uint64_t pid_base;
	/* The names shown in this output file: process (pid shown) and thread (pid shown << 32 |
	 * tid) -> a hash of the name. The prologue names every process and thread; a PROCESS or
	 * THREAD record met later is shown only when it renames (an exec, pthread_setname_np):
	 * each is named once, not once more per record. Emptied at each --split-size file. */
	struct u64map shown_procs, shown_threads;
};

/* At most this many names are remembered (beyond: shown again, as before). */
#define DUMP__SHOWN_MAX (1u << 20)

static void dump__shown_reset(struct dump__chrome *c, bool init)
{
	if (!init) {
		u64map_destroy(&c->shown_procs);
		u64map_destroy(&c->shown_threads);
	}
	u64map_init(&c->shown_procs, DUMP__SHOWN_MAX);
	u64map_init(&c->shown_threads, DUMP__SHOWN_MAX);
}

/* Whether (map, key) shows this name already; else remembers it. FNV-1a of the bytes. */
static bool dump__shown(struct u64map *m, uint64_t key, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ len;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	const uint64_t *v = u64map_get(m, key);
	if (v && *v == h)
		return true;
	(void)u64map_put(m, key, h, NULL, NULL); /* full: shown again next time */
	return false;
}

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
	struct sym_info si;
	size_t k;
	if (c->syms && sym_resolve(c->syms, pid, addr, &si) == 0 && si.name) {
		int n = snprintf(b, sizeof(b), "%s", si.name);
		k = n < 0 ? 0 : (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1;
	} else if (c->syms) {
		/* module+offset from the same resolver: dump_func_name's own would open the
		 * module again and say its problem a second time */
		k = strlen(sym_display(c->syms, pid, addr, b, sizeof(b)));
	} else {
		k = dump_func_name(c->r, pid, addr, b, sizeof(b));
	}
	dump_str(",\"name\":");
	dump_json_str(b, k);
}

static void dump__meta(struct dump__chrome *c, const char *what, uint32_t pid, uint32_t tid,
		       const char *name, size_t len, bool cmdline)
{
	uint64_t shown_pid = pid + c->pid_base;
	if (cmdline ? dump__shown(&c->shown_procs, shown_pid, name, len)
		    : dump__shown(&c->shown_threads, shown_pid << 32 | tid, name, len))
		return;
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
	/* By process: a forked child has the same addresses as its parent (and traces of other
	 * hosts, the same pids). */
	uint64_t proc = (uint64_t)pid + c->pid_base;
	uint64_t old = 0;
	if (rec->type == TRC_REC_ALLOC) {
		int err = allocmap_put(c->live, proc, rec->alloc.addr, rec->alloc.size, &old);
		if (err) {
			c->live_approximate = true;
			return;
		}
		*live += rec->alloc.size - old;
	} else if (allocmap_take(c->live, proc, rec->alloc.addr, &old)) {
		*live -= old;
	} else {
		return; /* unknown address: nothing changes */
	}
	dump__ev(c, 'C', pid, tid, rec->ts_ns);
	dump_str(",\"name\":\"heap live bytes\",\"args\":{\"bytes\":");
	dump_u64(*live);
	dump_str("}}");
}

/* Keeps the open span of stream sidx (its depth is the count); false on out of memory. */
static bool dump__push(struct dump__chrome *c, unsigned sidx, const struct dump__open *o)
{
	struct dump__stack *st = &c->stacks[sidx];
	if (c->depth[sidx] == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 16;
		struct dump__open *v = realloc(st->v, cap * sizeof(*v));
		if (!v) {
			c->oom = true;
			return false;
		}
		st->v = v;
		st->cap = cap;
	}
	st->v[c->depth[sidx]++] = *o;
	return true;
}

/* The "B" (ph 'B') or "E" (ph 'E') event of open span o, with args {FLAG:true} when flag is
 * given. Both name the span: viewers that pair events by name (speedscope) need it on each. */
static void dump__span_event(struct dump__chrome *c, char ph, uint32_t pid, uint32_t tid,
			     uint64_t ts, const struct dump__open *o, const char *flag)
{
	dump__ev(c, ph, pid, tid, ts);
	if (o->type == TRC_REC_SPAN_BEGIN)
		dump__name(c, o->name_id);
	else
		dump__func_name(c, pid, o->addr);
	if (flag) {
		dump_str(",\"args\":{\"");
		dump_str(flag);
		dump_str("\":true}");
	}
	dump_char('}');
}

static void dump__begin(struct dump__chrome *c, uint32_t pid, uint32_t tid, uint64_t ts,
			const struct dump__open *o, const char *flag)
{
	dump__span_event(c, 'B', pid, tid, ts, o, flag);
}

static void dump__end(struct dump__chrome *c, uint32_t pid, uint32_t tid, uint64_t ts,
		      const struct dump__open *o, const char *flag)
{
	dump__span_event(c, 'E', pid, tid, ts, o, flag);
}

/* A thread renamed in the merge: its name is said again at the start of the next file. */
static void dump__keep_thread_name(struct dump__chrome *c, const struct trc_record *rec)
{
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		if (si->kind != TRC_STREAM_THREAD || si->pid != rec->thread.pid ||
		    si->tid != rec->thread.tid)
			continue;
		char *n = malloc(rec->thread.name_len + 1u);
		if (!n) {
			c->oom = true;
			return;
		}
		memcpy(n, rec->thread.name, rec->thread.name_len);
		free(c->stacks[s].thread_name);
		c->stacks[s].thread_name = n;
		c->stacks[s].thread_name_len = rec->thread.name_len;
	}
}

static void dump__record(struct dump__chrome *c, unsigned sidx, const struct trc_record *rec)
{
	const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, sidx);
	uint32_t pid = si->pid, tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
	if (rec->ts_ns > c->last_ts)
		c->last_ts = rec->ts_ns;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_FUNC_ENTER: {
		struct dump__open o = {.type = rec->type};
		if (rec->type == TRC_REC_SPAN_BEGIN)
			o.name_id = rec->span.name_id;
		else
			o.addr = rec->func.addr;
		if (!dump__push(c, sidx, &o))
			break;
		dump__begin(c, pid, tid, rec->ts_ns, &o, NULL);
		break;
	}
	case TRC_REC_SPAN_END:
	case TRC_REC_FUNC_EXIT:
		if (!c->depth[sidx]) {
			c->unmatched_end++;
			break;
		}
		c->depth[sidx]--;
		dump__end(c, pid, tid, rec->ts_ns, &c->stacks[sidx].v[c->depth[sidx]], NULL);
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
		/* FORMAT.md: events of this stream are missing here, so what is open on it ends as
		 * unknown, at the loss (flagged), never closed by an END after the gap. */
		for (; rec->lost.count && c->depth[sidx]; c->depth[sidx]--)
			dump__end(c, pid, tid, rec->ts_ns, &c->stacks[sidx].v[c->depth[sidx] - 1],
				  "cut_by_loss");
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
		dump__keep_thread_name(c, rec);
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

/* Closes every open span at ts: "E" events with args {FLAG:true}. */
static void dump__close_all(struct dump__chrome *c, uint64_t ts, const char *flag, bool pop)
{
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		for (uint64_t d = c->depth[s]; d; d--) {
			dump__end(c, si->pid, tid, ts, &c->stacks[s].v[d - 1], flag);
			if (pop)
				c->closed_at_end++;
		}
		if (pop)
			c->depth[s] = 0;
	}
}

/* The end of a file: the array, then otherData. */
static void dump__epilogue(struct dump__chrome *c)
{
	const struct trcfile_header *h = trcfile_reader_header(c->r);
	dump_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"command\":");
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
	dump_printf(
		",\"format_version\":\"%u.%u\",\"truncated\":%s,\"spans_closed_at_end\":%" PRIu64
		",\"spans_unmatched_end\":%" PRIu64 ",\"heap_approximate\":%s}}\n",
		h->version_major, h->version_minor,
		trcfile_reader_truncated(c->r) ? "true" : "false", c->closed_at_end,
		c->unmatched_end, c->live_approximate ? "true" : "false");
}

/* --split-size: ends this file at the last timestamp written (open spans end there,
 * args.split) and starts the next: names of processes and threads, then the open spans begun
 * again at that time (args.continued). */
static int dump__split(struct dump__chrome *c, struct dump_outfile *of)
{
	uint64_t t = c->last_ts;
	dump__close_all(c, t, "split", false);
	dump__epilogue(c);
	if (dump_outfile_next(of))
		return DUMP_EXIT_FAIL;
	c->first = true;
	dump_str("{\"traceEvents\":[\n");
	dump__shown_reset(c, false); /* a new file names everything again */
	dump__prologue(c);
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		if (c->stacks[s].thread_name)
			dump__meta(c, "thread_name", si->pid, si->tid, c->stacks[s].thread_name,
				   c->stacks[s].thread_name_len, false);
		for (uint64_t d = 0; d < c->depth[s]; d++)
			dump__begin(c, si->pid, tid, t, &c->stacks[s].v[d], "continued");
	}
	return 0;
}

/* Several FILEs: one JSON, records merged on CLOCK_REALTIME (dump_multi.c), timestamps from the
 * earliest start of recording, trace i's processes shown as pid + (i + 1) x
 * DUMP_MULTI_PID_RANGE and named "HOST TRACE: command". */

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
	struct dump__stack *stacks = NULL; /* the same streams' open spans */
	if (!c || !base || !last)
		goto nomem;
	for (unsigned i = 0; i < n; i++)
		base[i + 1] = base[i] + trcfile_reader_stream_count(m.t[i].r);
	depth = calloc(base[n] ? base[n] : 1, sizeof(*depth));
	stacks = calloc(base[n] ? base[n] : 1, sizeof(*stacks));
	c->live = allocmap_new(DUMP__LIVE_MAX_ENTRIES);
	dump__shown_reset(c, true);
	if (!depth || !stacks || !c->live)
		goto nomem;
	c->first = true;
	if (dump_traces_start(&m, NULL) != DUMP_EXIT_OK)
		goto out;
	dump_str("{\"traceEvents\":[\n");
	for (unsigned i = 0; i < n; i++) {
		c->r = m.t[i].r;
		c->label = &m.t[i];
		c->pid_base = (i + 1) * (uint64_t)DUMP_MULTI_PID_RANGE;
		c->start = dump_trace_start(&m, i);
		c->depth = depth + base[i];
		c->stacks = stacks + base[i];
		dump__prologue(c);
		last[i] = dump_start_ns(m.t[i].r);
	}
	struct trc_record rec;
	unsigned ti, sidx;
	int err;
	while ((err = dump_traces_next(&m, &rec, &ti, &sidx)) == 1) {
		c->r = m.t[ti].r;
		c->label = &m.t[ti];
		c->pid_base = (ti + 1) * (uint64_t)DUMP_MULTI_PID_RANGE;
		c->start = dump_trace_start(&m, ti);
		c->depth = depth + base[ti];
		c->stacks = stacks + base[ti];
		dump__record(c, sidx, &rec);
		if (c->oom)
			goto nomem;
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
		c->pid_base = (i + 1) * (uint64_t)DUMP_MULTI_PID_RANGE;
		c->start = dump_trace_start(&m, i);
		for (unsigned s = 0; s < base[i + 1] - base[i]; s++) {
			const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
			uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
			for (; depth[base[i] + s]; depth[base[i] + s]--) {
				const struct dump__stack *st = &stacks[base[i] + s];
				dump__end(c, si->pid, tid, last[i], &st->v[depth[base[i] + s] - 1],
					  "unfinished");
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
			    (i + 1) * (uint64_t)DUMP_MULTI_PID_RANGE, h->start_realtime_ns,
			    h->version_major, h->version_minor,
			    trcfile_reader_truncated(m.t[i].r) ? "true" : "false");
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
	if (c) {
		allocmap_free(c->live);
		u64map_destroy(&c->shown_procs);
		u64map_destroy(&c->shown_threads);
	}
	for (unsigned k = 0; stacks && k < base[n]; k++) {
		free(stacks[k].v);
		free(stacks[k].thread_name);
	}
	free(stacks);
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
		{"output", required_argument, NULL, 'o'},
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 'T'},
		{"split-size", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	struct dump_slice sl = {.to = UINT64_MAX};
	struct dump_outfile of = {.base = "-"};
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (opt) {
		case 'o':
			of.base = optarg;
			break;
		case 'h':
			fputs(dump__chrome_help, stdout);
			return DUMP_EXIT_OK;
		default: {
			int k = dump_slice_option(cmd, opt, optarg, &sl, &of);
			if (k > 0)
				return k;
			if (k < 0)
				return dump_refused_option(cmd, opt, argv, opts);
		}
		}
	}
	if (dump_slice_check(cmd, &sl))
		return DUMP_EXIT_USAGE;
	const char *from_arg = sl.from_arg, *to_arg = sl.to_arg;
	uint64_t from = sl.from, to = sl.to;
	if (argc - optind > 1) {
		if (from_arg || to_arg || of.split || strcmp(of.base, "-"))
			return dump_usage_error(cmd,
						"--from, --to, -o and --split-size take one FILE "
						"(several FILEs: standard output, whole traces)");
		return dump__chrome_multi(argc, argv);
	}
	const char *path = dump_file_operand(cmd, argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	if (of.split && !strcmp(of.base, "-"))
		return dump_usage_error(cmd, "--split-size writes files: give them a name with -o");
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
	c->depth = calloc(ns ? ns : 1, sizeof(*c->depth));
	c->stacks = calloc(ns ? ns : 1, sizeof(*c->stacks));
	c->live = allocmap_new(DUMP__LIVE_MAX_ENTRIES);
	dump__shown_reset(c, true);
	it = trcfile_iter_new(r);
	if (!c->depth || !c->stacks || !c->live || !it) {
		dump_error("%s: %s", path,
			   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
						       : "out of memory");
		goto out;
	}
	uint64_t t_from = from > UINT64_MAX - c->start ? UINT64_MAX : c->start + from;
	uint64_t t_to = to > UINT64_MAX - c->start ? UINT64_MAX : c->start + to;
	c->last_ts = from_arg ? t_from : c->start;
	if (dump_outfile_next(&of))
		goto out;
	/* Where the document starts in the output, to cut a failed export back to: a file of
	 * ours (-o) starts at 0, standard output where it is now if it is a file (-1: a pipe). */
	struct stat ost;
	off_t out_start = strcmp(of.base, "-") ? 0
			  : fstat(dump_out.fd, &ost) == 0 && S_ISREG(ost.st_mode)
				  ? lseek(dump_out.fd, 0, SEEK_CUR) - (off_t)dump_out.len
				  : (off_t)-1;
	dump_str("{\"traceEvents\":[\n");
	dump__prologue(c);
	struct trc_record rec;
	unsigned sidx;
	int err = from_arg ? trcfile_iter_seek(it, t_from) : 0;
	/* Fault injection for the tests (a failure the reader no longer makes on a damaged
	 * chunk, which it skips): fail after that many records. */
	const char *fail_env = getenv("TRC_TEST_CHROME_FAIL_AFTER");
	uint64_t fail_after = fail_env ? strtoull(fail_env, NULL, 10) : UINT64_MAX, n_recs = 0;
	while (!err && !c->oom && (err = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		err = 0;
		if (n_recs++ == fail_after) {
			err = -EIO;
			snprintf(c->fail_msg, sizeof(c->fail_msg), "injected failure (%s)",
				 "TRC_TEST_CHROME_FAIL_AFTER");
			break;
		}
		if (rec.ts_ns > t_to) {
			/* What is open is known to be open until --to: closed there. */
			c->last_ts = t_to;
			break;
		}
		if (rec.ts_ns < t_from)
			continue;
		if (dump_outfile_full(&of)) {
			if (dump__split(c, &of))
				goto out;
			out_start = 0; /* the document of the new file */
		}
		dump__record(c, sidx, &rec);
	}
	if (err < 0 || c->oom) {
		const char *why = c->oom	   ? "out of memory"
				  : c->fail_msg[0] ? c->fail_msg
						   : trcfile_reader_errmsg(r);
		/* No partial JSON: -o OUT is dropped (OUT keeps what it had); a file written in
		 * place or standard output is cut back to where the document started; a pipe,
		 * which cannot be taken back, gets the document closed after the last whole
		 * event, with otherData saying it is incomplete and why. Either way, status 1. */
		if (dump_outfile_discard(&of)) {
			/* nothing of this export left */
		} else if (out_start >= 0) {
			dump_out.len = 0;
			if (ftruncate(dump_out.fd, out_start) != 0 ||
			    lseek(dump_out.fd, out_start, SEEK_SET) < 0)
				dump_error("%s: cannot remove the partial output: %s", path,
					   strerror(errno));
		} else {
			dump_str("\n],\n\"otherData\":{\"incomplete\":true,\"error\":");
			dump_json_str(why, strlen(why));
			dump_str("}}\n");
			dump_flush();
		}
		dump_outfile_close(&of);
		dump_error("%s: %s", path, why);
		goto out;
	}
	dump__close_all(c, c->last_ts, "unfinished", true);
	dump__epilogue(c);
	if (dump_outfile_close(&of))
		goto out;
	rc = DUMP_EXIT_OK;
out:
	trcfile_iter_free(it);
	if (c) {
		allocmap_free(c->live);
		u64map_destroy(&c->shown_procs);
		u64map_destroy(&c->shown_threads);
		sym_resolver_free(c->syms);
		for (unsigned s = 0; s < ns && c->stacks; s++) {
			free(c->stacks[s].v);
			free(c->stacks[s].thread_name);
		}
		free(c->stacks);
		free(c->depth);
		free(c);
	}
	dump_close(r, path);
	return rc;
}
