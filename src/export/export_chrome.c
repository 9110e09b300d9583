/* export_chrome.c - Chrome Trace Event JSON, streamed: export.h's export_chrome.
 *
 * Purpose: export for Perfetto UI, chrome://tracing and speedscope. The output is written as
 * the merge produces records, so memory does not grow with the trace: per stream only an
 * open-span depth, plus the live-allocation table for the heap counter (capped).
 *
 * Mapping (documented in --help):
 *   span_begin/end, func_enter/exit  "B"/"E" on (pid, tid), each "E" named as its "B";
 *                                    functions by the caller's namer (trace-dump: the
 *                                    modules' symbol tables), else module+offset when a
 *                                    module record covers the address
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
 * Slicing: from_ns/to_ns keep the records in the range (the iterator seeks to from_ns); a
 * split cuts files at record boundaries once a file reaches the size: open spans end there
 * (args.split) and begin again at the same time in the next file (args.continued), which
 * starts with the process and thread names again. Per stream the open spans are kept
 * (export_spans.h, a stack as deep as the nesting) to name them again.
 * Failure half-way (a damaged chunk): never partial JSON. What the caller can take back (a
 * file it drops or cuts back to where the document began) is left to it; otherwise (a pipe)
 * the document is closed after the last whole event, otherData {incomplete, error}.
 * Timestamps: microseconds from the start of recording, nanoseconds kept as 3 decimals.
 *
 * Threads: the caller's; no globals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "export.h"
#include "export_merge.h"
#include "export_spans.h"
#include "export_text.h"
#include "trcfile.h"
#include "u64map.h"

/* Several traces: what names trace i's processes ("HOST TRACE: name"). */
struct export__ch_label {
	const char *host; /* the header's host string; its first host_len bytes: the node name */
	size_t host_len;
	const char *trace; /* the FILE's base name */
};

#define EXPORT__CH_LIVE_MAX_ENTRIES (1u << 20)
#define EXPORT__CH_MAX_PIDS 4096

/* A stream's open spans (export_spans.h: what names them again in the next file of a split)
 * and its thread's latest name. */
struct export__ch_stack {
	struct export_stack open;
	char *thread_name; /* the last THREAD record's name seen in the merge (copy), or NULL */
	uint32_t thread_name_len;
};

struct export__chrome {
	const struct trcfile_reader *r;
	struct export_text *out;
	struct export_namer names;
	uint64_t start, last_ts;
	bool first;
	struct export__ch_stack *stacks; /* per stream: the open spans */
	struct allocmap *live;
	struct {
		uint32_t pid;
		uint64_t bytes;
	} pids[EXPORT__CH_MAX_PIDS];
	unsigned n_pids;
	uint64_t unmatched_end, closed_at_end;
	bool live_approximate;
	bool oom;
	/* Several traces: pids shown as pid + pid_base (export_pid_offset), process names
	 * prefixed "HOST TRACE: "; NULL / 0 for one. */
	const struct export__ch_label *label;
	uint64_t pid_base;
	/* The names shown in this output file: process (pid shown) and thread (pid shown << 32 |
	 * tid) -> a hash of the name. The prologue names every process and thread; a PROCESS or
	 * THREAD record met later is shown only when it renames (an exec, pthread_setname_np):
	 * each is named once, not once more per record. Emptied at each --split-size file. */
	struct u64map shown_procs, shown_threads;
};

/* At most this many names are remembered (beyond: shown again, as before). */
#define EXPORT__CH_SHOWN_MAX (1u << 20)

static void export__ch_shown_reset(struct export__chrome *c, bool init)
{
	if (!init) {
		u64map_destroy(&c->shown_procs);
		u64map_destroy(&c->shown_threads);
	}
	u64map_init(&c->shown_procs, EXPORT__CH_SHOWN_MAX);
	u64map_init(&c->shown_threads, EXPORT__CH_SHOWN_MAX);
}

/* Whether (map, key) shows this name already; else remembers it. FNV-1a of the bytes. */
static bool export__ch_shown(struct u64map *m, uint64_t key, const char *name, size_t len)
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
static void export__ch_ev(struct export__chrome *c, char ph, uint32_t pid, uint32_t tid, uint64_t ts)
{
	if (!c->first)
		export_text_str(c->out, ",\n");
	c->first = false;
	export_text_str(c->out, "{\"ph\":\"");
	export_text_char(c->out, ph);
	export_text_str(c->out, "\",\"pid\":");
	export_text_u64(c->out, pid + c->pid_base);
	export_text_str(c->out, ",\"tid\":");
	export_text_u64(c->out, tid);
	export_text_str(c->out, ",\"ts\":");
	export_text_micros(c->out, (int64_t)(ts - c->start));
}

static void export__ch_name(const struct export__chrome *c, uint32_t id)
{
	uint32_t len = 0;
	const char *n = trcfile_reader_name(c->r, id, &len);
	export_text_str(c->out, ",\"name\":");
	if (n) {
		export_text_json_str(c->out, n, len);
	} else {
		char b[16];
		int k = snprintf(b, sizeof(b), "#%u", id);
		export_text_json_str(c->out, b, (size_t)k);
	}
}

static void export__ch_func_name(const struct export__chrome *c, uint32_t pid, uint64_t addr)
{
	char b[320];
	if (c->names.flush_first)
		export_text_flush(c->out);
	size_t k = c->names.name(c->names.ctx, c->r, pid, addr, b, sizeof(b));
	export_text_str(c->out, ",\"name\":");
	export_text_json_str(c->out, b, k);
}

static void export__ch_meta(struct export__chrome *c, const char *what, uint32_t pid, uint32_t tid,
		       const char *name, size_t len, bool cmdline)
{
	uint64_t shown_pid = pid + c->pid_base;
	if (cmdline ? export__ch_shown(&c->shown_procs, shown_pid, name, len)
		    : export__ch_shown(&c->shown_threads, shown_pid << 32 | tid, name, len))
		return;
	if (!c->first)
		export_text_str(c->out, ",\n");
	c->first = false;
	export_text_str(c->out, "{\"ph\":\"M\",\"name\":\"");
	export_text_str(c->out, what);
	export_text_str(c->out, "\",\"pid\":");
	export_text_u64(c->out, pid + c->pid_base);
	export_text_str(c->out, ",\"tid\":");
	export_text_u64(c->out, tid);
	export_text_str(c->out, ",\"args\":{\"name\":");
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
			export_text_json_str(c->out, tmp, n);
			free(tmp);
		} else {
			export_text_json_str(c->out, "", 0);
		}
	} else {
		export_text_json_str(c->out, name, len);
	}
	export_text_str(c->out, "}}");
}

static uint64_t *export__ch_pid_live(struct export__chrome *c, uint32_t pid)
{
	for (unsigned i = 0; i < c->n_pids; i++)
		if (c->pids[i].pid == pid)
			return &c->pids[i].bytes;
	if (c->n_pids == EXPORT__CH_MAX_PIDS)
		return NULL;
	c->pids[c->n_pids].pid = pid;
	c->pids[c->n_pids].bytes = 0;
	return &c->pids[c->n_pids++].bytes;
}

static void export__ch_alloc(struct export__chrome *c, uint32_t pid, uint32_t tid,
			const struct trc_record *rec)
{
	uint64_t *live = export__ch_pid_live(c, (uint32_t)(pid + c->pid_base));
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
	export__ch_ev(c, 'C', pid, tid, rec->ts_ns);
	export_text_str(c->out, ",\"name\":\"heap live bytes\",\"args\":{\"bytes\":");
	export_text_u64(c->out, *live);
	export_text_str(c->out, "}}");
}

/* Keeps the open span of stream sidx; false on out of memory. */
static bool export__ch_push(struct export__chrome *c, unsigned sidx, const struct export_frame *o)
{
	if (export_stack_push(&c->stacks[sidx].open, o, 0)) {
		c->oom = true;
		return false;
	}
	return true;
}

/* The "B" (ph 'B') or "E" (ph 'E') event of open span o, with args {FLAG:true} when flag is
 * given. Both name the span: viewers that pair events by name (speedscope) need it on each. */
static void export__ch_span_event(struct export__chrome *c, char ph, uint32_t pid, uint32_t tid,
			     uint64_t ts, const struct export_frame *o, const char *flag)
{
	export__ch_ev(c, ph, pid, tid, ts);
	if (o->type == TRC_REC_SPAN_BEGIN)
		export__ch_name(c, o->name_id);
	else
		export__ch_func_name(c, pid, o->addr);
	if (flag) {
		export_text_str(c->out, ",\"args\":{\"");
		export_text_str(c->out, flag);
		export_text_str(c->out, "\":true}");
	}
	export_text_char(c->out, '}');
}

static void export__ch_begin(struct export__chrome *c, uint32_t pid, uint32_t tid, uint64_t ts,
			const struct export_frame *o, const char *flag)
{
	export__ch_span_event(c, 'B', pid, tid, ts, o, flag);
}

static void export__ch_end(struct export__chrome *c, uint32_t pid, uint32_t tid, uint64_t ts,
		      const struct export_frame *o, const char *flag)
{
	export__ch_span_event(c, 'E', pid, tid, ts, o, flag);
}

/* A thread renamed in the merge: its name is said again at the start of the next file. */
static void export__ch_keep_thread_name(struct export__chrome *c, const struct trc_record *rec)
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

static void export__ch_record(struct export__chrome *c, unsigned sidx, const struct trc_record *rec)
{
	const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, sidx);
	uint32_t pid = si->pid, tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
	if (rec->ts_ns > c->last_ts)
		c->last_ts = rec->ts_ns;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_FUNC_ENTER: {
		struct export_frame o = {.type = rec->type};
		if (rec->type == TRC_REC_SPAN_BEGIN)
			o.name_id = rec->span.name_id;
		else
			o.addr = rec->func.addr;
		if (!export__ch_push(c, sidx, &o))
			break;
		export__ch_begin(c, pid, tid, rec->ts_ns, &o, NULL);
		break;
	}
	case TRC_REC_SPAN_END:
	case TRC_REC_FUNC_EXIT:
	{
		const struct export_frame *f = export_stack_pop(&c->stacks[sidx].open);
		if (!f) {
			c->unmatched_end++;
			break;
		}
		export__ch_end(c, pid, tid, rec->ts_ns, f, NULL);
		break;
	}
	case TRC_REC_INSTANT:
		export__ch_ev(c, 'i', pid, tid, rec->ts_ns);
		export__ch_name(c, rec->value.name_id);
		export_text_str(c->out, ",\"s\":\"t\",\"args\":{\"value\":");
		export_text_i64(c->out, rec->value.value);
		export_text_str(c->out, "}}");
		break;
	case TRC_REC_COUNTER:
		export__ch_ev(c, 'C', pid, tid, rec->ts_ns);
		export__ch_name(c, rec->value.name_id);
		export_text_str(c->out, ",\"args\":{\"value\":");
		export_text_i64(c->out, rec->value.value);
		export_text_str(c->out, "}}");
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		export__ch_alloc(c, pid, tid, rec);
		break;
	case TRC_REC_RSS: {
		uint64_t b = rec->rss.buffers_bytes;
		export__ch_ev(c, 'C', rec->rss.pid ? rec->rss.pid : pid, 0, rec->ts_ns);
		export_text_str(c->out, ",\"name\":\"RSS\",\"args\":{\"program_bytes\":");
		export_text_u64(c->out, rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0);
		export_text_str(c->out, ",\"buffers_bytes\":");
		export_text_u64(c->out, b);
		export_text_str(c->out, "}}");
		break;
	}
	case TRC_REC_LOST: {
		/* FORMAT.md: events of this stream are missing here, so what is open on it ends as
		 * unknown, at the loss (flagged), never closed by an END after the gap. */
		for (const struct export_frame *f;
		     rec->lost.count && (f = export_stack_pop(&c->stacks[sidx].open));)
			export__ch_end(c, pid, tid, rec->ts_ns, f,
				  "cut_by_loss");
		char b[96];
		int k = snprintf(b, sizeof(b), "lost %" PRIu64 " %s (%s)", rec->lost.count,
				 rec->lost.count == 1 ? "record" : "records",
				 trcfile_lost_reason_name(rec->lost.reason));
		export__ch_ev(c, 'i', pid, tid, rec->ts_ns);
		export_text_str(c->out, ",\"s\":\"t\",\"name\":");
		export_text_json_str(c->out, b, (size_t)k);
		export_text_str(c->out, ",\"args\":{\"count\":");
		export_text_u64(c->out, rec->lost.count);
		export_text_str(c->out, "}}");
		break;
	}
	case TRC_REC_EXIT:
		export__ch_ev(c, 'i', rec->exit.pid, 0, rec->ts_ns);
		export_text_str(c->out, ",\"s\":\"p\",\"name\":\"exit\",\"args\":{\"status\":");
		export_text_i64(c->out, rec->exit.status);
		export_text_str(c->out, ",\"maxrss_bytes\":");
		export_text_u64(c->out, rec->exit.maxrss_bytes);
		export_text_str(c->out, "}}");
		break;
	case TRC_REC_NOTE:
		export__ch_ev(c, 'i', pid, 0, rec->ts_ns);
		export_text_str(c->out, ",\"s\":\"g\",\"name\":");
		export_text_json_str(c->out, rec->note.text, rec->note.len);
		export_text_str(c->out, "}");
		break;
	case TRC_REC_THREAD:
		export__ch_meta(c, "thread_name", rec->thread.pid, rec->thread.tid, rec->thread.name,
			   rec->thread.name_len, false);
		export__ch_keep_thread_name(c, rec);
		break;
	case TRC_REC_PROCESS:
		export__ch_meta(c, "process_name", rec->process.pid, 0, rec->process.cmdline,
			   rec->process.cmdline_len, true);
		break;
	}
}

/* Names every process and thread of the streams before any event. */
static void export__ch_prologue(struct export__chrome *c)
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
			export__ch_meta(c, "process_name", si->pid, 0, cmd, len, true);
		else if (si->pid == h->pid)
			export__ch_meta(c, "process_name", si->pid, 0, h->cmdline, h->cmdline_len, true);
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
		export__ch_meta(c, "thread_name", si->pid, si->tid, name, len, false);
	}
}

/* Closes every open span at ts: "E" events with args {FLAG:true}. */
static void export__ch_close_all(struct export__chrome *c, uint64_t ts, const char *flag, bool pop)
{
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		for (size_t d = c->stacks[s].open.n; d; d--) {
			export__ch_end(c, si->pid, tid, ts, &c->stacks[s].open.v[d - 1], flag);
			if (pop)
				c->closed_at_end++;
		}
		if (pop)
			c->stacks[s].open.n = 0;
	}
}

/* The end of a file: the array, then otherData. */
static void export__ch_epilogue(struct export__chrome *c)
{
	const struct trcfile_header *h = trcfile_reader_header(c->r);
	export_text_str(c->out, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"command\":");
	char *tmp = malloc(h->cmdline_len + 1);
	size_t n = h->cmdline_len;
	if (n && h->cmdline[n - 1] == 0)
		n--;
	if (tmp) {
		for (size_t i = 0; i < n; i++)
			tmp[i] = h->cmdline[i] ? h->cmdline[i] : ' ';
		export_text_json_str(c->out, tmp, n);
		free(tmp);
	} else {
		export_text_json_str(c->out, "", 0);
	}
	export_text_printf(c->out, ",\"format_version\":\"%u.%u\",\"truncated\":%s,\"spans_closed_at_end\":%" PRIu64
		",\"spans_unmatched_end\":%" PRIu64 ",\"heap_approximate\":%s}}\n",
		h->version_major, h->version_minor,
		trcfile_reader_truncated(c->r) ? "true" : "false", c->closed_at_end,
		c->unmatched_end, c->live_approximate ? "true" : "false");
}

/* --split-size: ends this file at the last timestamp written (open spans end there,
 * args.split) and starts the next: names of processes and threads, then the open spans begun
 * again at that time (args.continued). */
static int export__ch_split(struct export__chrome *c, const struct export_chrome_opts *o)
{
	uint64_t t = c->last_ts;
	export__ch_close_all(c, t, "split", false);
	export__ch_epilogue(c);
	export_text_flush(c->out);
	if (c->out->err)
		return c->out->err;
	int err = o->split(o->split_ctx);
	if (err)
		return err;
	c->out->file_bytes = 0;
	c->first = true;
	export_text_str(c->out, "{\"traceEvents\":[\n");
	export__ch_shown_reset(c, false); /* a new file names everything again */
	export__ch_prologue(c);
	unsigned ns = trcfile_reader_stream_count(c->r);
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
		uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
		if (c->stacks[s].thread_name)
			export__ch_meta(c, "thread_name", si->pid, si->tid, c->stacks[s].thread_name,
				   c->stacks[s].thread_name_len, false);
		for (size_t d = 0; d < c->stacks[s].open.n; d++)
			export__ch_begin(c, si->pid, tid, t, &c->stacks[s].open.v[d], "continued");
	}
	return 0;
}

static void export__ch_say(const struct export_chrome_opts *o, const char *s)
{
	if (o->err && o->err_len)
		snprintf(o->err, o->err_len, "%s", s);
}

/* The end of a failed document the caller cannot take back: closed after the last whole
 * event, saying why. */
static void export__ch_incomplete(struct export__chrome *c, const char *why)
{
	export_text_str(c->out, "\n],\n\"otherData\":{\"incomplete\":true,\"error\":");
	export_text_json_str(c->out, why, strlen(why));
	export_text_str(c->out, "}}\n");
	export_text_flush(c->out);
}

/* One trace, from o->from_ns to o->to_ns. */
static int export__ch_one(struct export__chrome *c, struct trcfile_reader *r,
			  const struct export_chrome_opts *o, struct export_chrome_result *res)
{
	unsigned ns = trcfile_reader_stream_count(r);
	struct trcfile_iter *it = NULL;
	int err = -ENOMEM;
	c->r = r;
	c->first = true;
	c->start = export_start_ns(r);
	c->stacks = calloc(ns ? ns : 1, sizeof(*c->stacks));
	it = trcfile_iter_new(r);
	if (!c->stacks || !it) {
		res->failed_input = 0;
		export__ch_say(o, trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
							      : "out of memory");
		goto out;
	}
	uint64_t t_from = o->from_ns > UINT64_MAX - c->start ? UINT64_MAX : c->start + o->from_ns;
	uint64_t t_to = o->to_ns > UINT64_MAX - c->start ? UINT64_MAX : c->start + o->to_ns;
	c->last_ts = o->has_from ? t_from : c->start;
	export_text_str(c->out, "{\"traceEvents\":[\n");
	export__ch_prologue(c);
	struct trc_record rec;
	unsigned sidx;
	err = o->has_from ? trcfile_iter_seek(it, t_from) : 0;
	const char *injected = NULL;
	uint64_t n_recs = 0;
	while (!err && !c->oom && !c->out->err && (err = trcfile_iter_next(it, &rec, &sidx)) == 1) {
		err = 0;
		if (o->fail_after && n_recs++ == o->fail_after - 1) {
			err = -EIO;
			injected = o->fail_msg ? o->fail_msg : "injected failure";
			break;
		}
		if (rec.ts_ns > t_to) {
			/* What is open is known to be open until to_ns: closed there. */
			c->last_ts = t_to;
			break;
		}
		if (rec.ts_ns < t_from)
			continue;
		if (o->split_bytes && export_text_size(c->out) >= o->split_bytes) {
			err = export__ch_split(c, o);
			if (err) {
				res->split_failed = !c->out->err;
				export__ch_say(o, strerror(-err));
				goto out;
			}
		}
		export__ch_record(c, sidx, &rec);
	}
	if (c->out->err) {
		err = c->out->err;
		export__ch_say(o, strerror(-err));
		goto out;
	}
	if (err < 0 || c->oom) {
		const char *why = c->oom ? "out of memory" : injected ? injected
								  : trcfile_reader_errmsg(r);
		if (c->oom)
			err = -ENOMEM;
		/* No partial JSON: the caller takes back what it can; else the document is closed
		 * here. Either way, the error. */
		if (o->taken_back && o->taken_back(o->taken_back_ctx))
			c->out->len = 0;
		else
			export__ch_incomplete(c, why);
		res->failed_input = 0;
		export__ch_say(o, why);
		goto out;
	}
	export__ch_close_all(c, c->last_ts, "unfinished", true);
	export__ch_epilogue(c);
	export_text_flush(c->out);
	err = c->out->err;
	if (err)
		export__ch_say(o, strerror(-err));
out:
	trcfile_iter_free(it);
	for (unsigned s = 0; s < ns && c->stacks; s++) {
		free(c->stacks[s].open.v);
		free(c->stacks[s].thread_name);
	}
	free(c->stacks);
	return err;
}

/* Several traces: one JSON, records merged on CLOCK_REALTIME (export_merge.h), timestamps
 * from the earliest start of recording, trace i's processes shown as pid +
 * export_pid_offset(i, n) and named "HOST TRACE: command". */
static int export__ch_multi(struct export__chrome *c, const struct export_input *in, unsigned n,
			    const struct export_chrome_opts *o, struct export_chrome_result *res)
{
	struct export_merge m = {0};
	int err = -ENOMEM;
	unsigned *base = calloc(n + 1, sizeof(*base));
	uint64_t *last = calloc(n, sizeof(*last));
	struct export__ch_label *labels = calloc(n, sizeof(*labels));
	struct trcfile_reader **r = calloc(n, sizeof(*r));
	struct export__ch_stack *stacks = NULL; /* every file's streams: file i's at base[i] */
	if (!base || !last || !labels || !r)
		goto nomem;
	for (unsigned i = 0; i < n; i++) {
		base[i + 1] = base[i] + trcfile_reader_stream_count(in[i].r);
		r[i] = in[i].r;
		const char *host = trcfile_reader_header(in[i].r)->host;
		const char *slash = strrchr(in[i].path, '/');
		labels[i] = (struct export__ch_label){
			host, strcspn(host, " "), slash ? slash + 1 : in[i].path};
	}
	stacks = calloc(base[n] ? base[n] : 1, sizeof(*stacks));
	if (!stacks)
		goto nomem;
	c->first = true;
	err = export_merge_start(&m, r, n, NULL);
	if (err) {
		res->failed_input = m.failed;
		export__ch_say(o, err == -ERANGE ? "its start on CLOCK_REALTIME is out of range"
				  : trcfile_reader_errmsg(in[m.failed].r)[0]
					  ? trcfile_reader_errmsg(in[m.failed].r)
					  : "out of memory");
		goto out;
	}
	/* trace i's relative times count from the earliest start, on CLOCK_REALTIME */
#define EXPORT__CH_SELECT(i)                                                          \
	do {                                                                          \
		c->r = in[i].r;                                                       \
		c->label = &labels[i];                                                \
		c->pid_base = export_pid_offset(i, n);                                \
		c->start = (uint64_t)m.start_rt - (uint64_t)m.t[i].anchor; /* wraps */ \
		c->stacks = stacks + base[i];                                         \
	} while (0)
	export_text_str(c->out, "{\"traceEvents\":[\n");
	for (unsigned i = 0; i < n; i++) {
		EXPORT__CH_SELECT(i);
		export__ch_prologue(c);
		last[i] = export_start_ns(in[i].r);
	}
	struct trc_record rec;
	unsigned ti, sidx;
	int k;
	while ((k = export_merge_next(&m, &rec, &ti, &sidx)) == 1) {
		EXPORT__CH_SELECT(ti);
		export__ch_record(c, sidx, &rec);
		if (c->oom || c->out->err)
			break;
		if (rec.ts_ns > last[ti])
			last[ti] = rec.ts_ns;
	}
	if (c->oom)
		goto nomem;
	if (c->out->err) {
		err = c->out->err;
		export__ch_say(o, strerror(-err));
		goto out;
	}
	if (k < 0) {
		export_text_flush(c->out);
		res->failed_input = m.failed;
		export__ch_say(o, trcfile_reader_errmsg(in[m.failed].r));
		err = k;
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		EXPORT__CH_SELECT(i);
		for (unsigned s = 0; s < base[i + 1] - base[i]; s++) {
			const struct trcfile_stream_info *si = trcfile_reader_stream(c->r, s);
			uint32_t tid = si->kind == TRC_STREAM_THREAD ? si->tid : 0;
			for (const struct export_frame *f;
			     (f = export_stack_pop(&stacks[base[i] + s].open));) {
				export__ch_end(c, si->pid, tid, last[i], f, "unfinished");
				c->closed_at_end++;
			}
		}
	}
#undef EXPORT__CH_SELECT
	export_text_str(c->out, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"traces\":[");
	for (unsigned i = 0; i < n; i++) {
		const struct trcfile_header *h = trcfile_reader_header(in[i].r);
		export_text_str(c->out, i ? ",{\"host\":" : "{\"host\":");
		export_text_json_str(c->out, labels[i].host, labels[i].host_len);
		export_text_str(c->out, ",\"trace\":");
		export_text_json_str(c->out, labels[i].trace, strlen(labels[i].trace));
		export_text_printf(c->out,
				   ",\"pid_offset\":%" PRIu64 ",\"start_realtime_ns\":%" PRIu64
				   ",\"format_version\":\"%u.%u\",\"truncated\":%s}",
				   export_pid_offset(i, n), h->start_realtime_ns, h->version_major,
				   h->version_minor,
				   trcfile_reader_truncated(in[i].r) ? "true" : "false");
	}
	export_text_printf(c->out,
			   "],\"start_realtime_ns\":%" PRId64 ",\"spans_closed_at_end\":%" PRIu64
			   ",\"spans_unmatched_end\":%" PRIu64 ",\"heap_approximate\":%s}}\n",
			   m.start_rt, c->closed_at_end, c->unmatched_end,
			   c->live_approximate ? "true" : "false");
	export_text_flush(c->out);
	err = c->out->err;
	if (err)
		export__ch_say(o, strerror(-err));
	goto out;
nomem:
	err = -ENOMEM;
	export__ch_say(o, "out of memory");
out:
	export_merge_stop(&m);
	for (unsigned s = 0; stacks && s < base[n]; s++) {
		free(stacks[s].open.v);
		free(stacks[s].thread_name);
	}
	free(stacks);
	free(base);
	free(last);
	free(labels);
	free(r);
	return err;
}

static size_t export__ch_plain_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				    uint64_t addr, char *buf, size_t len)
{
	(void)ctx;
	return export_func_name_plain(r, pid, addr, buf, len);
}

int export_chrome(const struct export_input *in, unsigned n, const struct export_chrome_opts *o,
		  const struct export_sink *sink, struct export_chrome_result *res)
{
	struct export_chrome_result none;
	if (!res)
		res = &none;
	*res = (struct export_chrome_result){.failed_input = -1};
	if (!n || (n > 1 && (o->has_from || o->to_ns != UINT64_MAX || o->split_bytes)) ||
	    (o->split_bytes && !o->split)) {
		export__ch_say(o, !n	  ? "no trace given"
				  : n > 1 ? "a range or a split takes one trace"
					  : "a split size needs a split callback");
		return -EINVAL;
	}
	int err = -ENOMEM;
	struct export__chrome *c = calloc(1, sizeof(*c));
	struct export_text *out = o->text ? o->text : malloc(sizeof(*out));
	if (!c || !out) {
		export__ch_say(o, "out of memory");
		goto out;
	}
	*out = (struct export_text){.sink = sink};
	c->out = out;
	c->names = o->names;
	if (!c->names.name)
		c->names = (struct export_namer){.name = export__ch_plain_name};
	c->live = allocmap_new(EXPORT__CH_LIVE_MAX_ENTRIES);
	export__ch_shown_reset(c, true);
	if (!c->live) {
		export__ch_say(o, "out of memory");
		goto out;
	}
	err = n == 1 ? export__ch_one(c, in[0].r, o, res) : export__ch_multi(c, in, n, o, res);
out:
	if (c) {
		allocmap_free(c->live);
		u64map_destroy(&c->shown_procs);
		u64map_destroy(&c->shown_threads);
	}
	free(c);
	if (!o->text)
		free(out);
	return err;
}
