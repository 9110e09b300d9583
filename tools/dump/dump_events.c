/* dump_events.c - `trace-dump events`: every record of every stream, merged by time, one a line.
 *
 * Purpose: the merged view (trcfile_iter), with filters. --from seeks with the index instead
 * of reading the records before it; --to stops the merge at the first record after it.
 *
 * Line format (documented in --help, and fixed by the golden test):
 *   SECONDS STREAM TYPE key=value...
 * SECONDS from the start of recording with 9 decimals; STREAM is PID/TID for a thread's
 * stream, "rss" for the sampler's, "meta" for metadata.
 *
 * Several FILEs: merged on CLOCK_REALTIME (dump_multi.c), lines labelled HOST TRACE.
 *
 * Threads: single-threaded.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_duration.h"
#include "dump_common.h"
#include "dump_symbols.h"

static const char dump__events_help[] =
	"usage: trace-dump events [--thread [PID/]TID]... [--name NAME]... [--from T] [--to T]\n"
	"                         FILE...\n"
	"\n"
	"Every record of every stream, the streams merged by time (ties: stream order), one\n"
	"per line:\n"
	"  SECONDS STREAM TYPE FIELDS\n"
	"Each stream keeps the order it was recorded in. A thread's and the sampler's are in\n"
	"time order; the metadata stream's records stand where the recorder wrote them, so\n"
	"one the recorder learnt of late (a process's exit, a module) can come after records\n"
	"a little later than its own time. SECONDS is always the record's own.\n"
	"SECONDS counts from the start of recording (9 decimals); STREAM is PID/TID for a\n"
	"thread's events, rss for the sampler, meta for metadata; TYPE is one of span_begin\n"
	"span_end instant counter alloc free func_enter func_exit rss lost thread process name\n"
	"module note exit; FIELDS are key=value pairs (strings quoted, C escapes).\n"
	"Function events name their function (fn, demangled) and its source line (src)\n"
	"from the symbol tables and debug info of the module files recorded in the trace;\n"
	"at= is always the module and file offset. A module file that is gone, changed\n"
	"since the trace (another build-id) or stripped is said once on stderr.\n"
	"\n"
	"  --thread [PID/]TID  only that thread's stream (repeat for several)\n"
	"  --name NAME         only spans, instants and counters named NAME (repeat for\n"
	"                      several)\n"
	"  --no-symbols        no fn= and src= (module+offset only; faster)\n"
	"  --from T, --to T    only records from T to T (both included), counted from the\n"
	"                      start of recording; T is a duration with a unit: ns, us, ms,\n"
	"                      s, m or h, e.g. 1.5s, 200ms (a bare number is an error)\n"
	"  -h, --help          this text\n"
	"\n"
	"When nothing matches (a --thread of no thread in the file, a range or name that holds\n"
	"no record), trace-dump says so on stderr and exits 0.\n"
	"\n"
	"Several FILEs (from one or many hosts) are merged in one order on CLOCK_REALTIME\n"
	"(each trace's recorded anchor), and each line gets HOST TRACE after SECONDS (the\n"
	"host's node name, the FILE's base name): SECONDS HOST TRACE STREAM TYPE FIELDS.\n"
	"SECONDS, --from and --to then count from the earliest start of recording.\n";

struct dump__thread_filter {
	bool has_pid;
	uint32_t pid, tid;
};

static int dump__parse_u32(const char *s, uint32_t *out)
{
	char *end = NULL;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int dump__parse_thread(const char *s, struct dump__thread_filter *f)
{
	const char *slash = strchr(s, '/');
	f->has_pid = slash != NULL;
	if (slash) {
		char pid[16];
		size_t n = (size_t)(slash - s);
		if (n == 0 || n >= sizeof(pid))
			return -1;
		memcpy(pid, s, n);
		pid[n] = 0;
		if (dump__parse_u32(pid, &f->pid))
			return -1;
		s = slash + 1;
	}
	return dump__parse_u32(s, &f->tid);
}

static void dump__name_field(const struct trcfile_reader *r, const char *key, uint32_t id)
{
	uint32_t len = 0;
	const char *n = trcfile_reader_name(r, id, &len);
	dump_char(' ');
	dump_str(key);
	dump_char('=');
	if (n) {
		dump_text_str(n, len);
	} else {
		dump_char('#');
		dump_u64(id);
	}
}

static void dump__kv(const char *key, uint64_t v)
{
	dump_char(' ');
	dump_str(key);
	dump_char('=');
	dump_u64(v);
}

static void dump__kv_hex(const char *key, uint64_t v)
{
	dump_char(' ');
	dump_str(key);
	dump_char('=');
	dump_hex(v);
}

static void dump__kv_str(const char *key, const char *s, uint32_t len)
{
	dump_char(' ');
	dump_str(key);
	dump_char('=');
	dump_text_str(s, len);
}

/* The " fn=... src=..." text of recent addresses, as written: a trace calls the same functions
 * over and over, and quoting the strings again each time is most of the cost of names. Direct
 * mapped on the address. */
#define DUMP__FN_CACHE 1024u
/* More than the longest fields text: a name (cut at 2 KiB) and a source path (4 KiB), each
 * byte escaped to at most 4, so writing it never flushes the buffer midway. */
#define DUMP__FN_TEXT_MAX 32768u
static struct dump__fn_text {
	const struct sym_resolver *syms; /* the trace's resolver (several FILEs: one each) */
	uint64_t addr;
	uint32_t pid;
	uint32_t len; /* 0: empty slot */
	char *text;
} dump__fn_cache[DUMP__FN_CACHE];

static void dump__fn_cache_free(void)
{
	for (unsigned i = 0; i < DUMP__FN_CACHE; i++) {
		free(dump__fn_cache[i].text);
		dump__fn_cache[i] = (struct dump__fn_text){0};
	}
}

/* Writes " fn=NAME[+0xOFF] src=FILE:LINE" (what is known). */
static void dump__fn_fields(const struct sym_info *sip)
{
	struct sym_info si = *sip;
	if (si.name) {
		size_t n = strlen(si.name);
		dump__kv_str("fn", si.name, (uint32_t)(n < 2048 ? n : 2048)); /* cut: see below */
		if (si.name_offset) {
			dump_str("+");
			dump_hex(si.name_offset);
		}
	}
	if (si.src_file) {
		char line[4200];
		int k = snprintf(line, sizeof(line), "%s:%u", si.src_file, si.src_line);
		if (k > 0)
			dump__kv_str("src", line,
				     (uint32_t)((size_t)k < sizeof(line) ? (size_t)k
									 : sizeof(line) - 1));
	}
}

static void dump__symbol(const struct trcfile_reader *r, struct sym_resolver *syms, uint32_t pid,
			 uint64_t addr)
{
	const struct trcfile_module *m = trcfile_reader_module(r, pid, addr);
	if (!m)
		return;
	const char *base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	dump_str(" at=");
	dump_str(base);
	dump_char('+');
	dump_hex(addr - m->start + m->offset);
	if (!syms)
		return;
	struct dump__fn_text *c = &dump__fn_cache[((addr >> 4) ^ pid) & (DUMP__FN_CACHE - 1)];
	if (c->len && c->addr == addr && c->pid == pid && c->syms == syms) {
		dump_write(c->text, c->len);
		return;
	}
	/* Resolve first: the first address of a file may print a warning, which flushes the
	 * output. Then room for the longest text, so it lands contiguous in the buffer. */
	struct sym_info si;
	if (sym_resolve(syms, pid, addr, &si) != 0)
		return;
	if (DUMP_OUT_BYTES - dump_out.len < DUMP__FN_TEXT_MAX)
		dump_flush();
	size_t at = dump_out.len;
	dump__fn_fields(&si);
	size_t len = dump_out.len - at;
	char *copy = len && len < DUMP__FN_TEXT_MAX ? malloc(len) : NULL;
	if (copy) {
		memcpy(copy, dump_out.buf + at, len);
		free(c->text);
		*c = (struct dump__fn_text){
			.syms = syms, .addr = addr, .pid = pid, .len = (uint32_t)len, .text = copy};
	}
}

static void dump__build_id(const uint8_t *id, uint32_t len)
{
	static const char hex[] = "0123456789abcdef";
	if (!len)
		return;
	dump_str(" build_id=");
	for (uint32_t i = 0; i < len; i++) {
		dump_char(hex[id[i] >> 4]);
		dump_char(hex[id[i] & 15]);
	}
}

static void dump__record(const struct trcfile_reader *r, struct sym_resolver *syms,
			 const struct trcfile_stream_info *si, const struct trc_record *rec,
			 uint64_t start, const struct dump_trace *label)
{
	dump_seconds((int64_t)(rec->ts_ns - start));
	dump_char(' ');
	if (label) {
		/* Several FILEs: HOST TRACE after the time. */
		dump_write(label->host, label->host_len);
		dump_char(' ');
		dump_str(label->trace);
		dump_char(' ');
	}
	switch (si->kind) {
	case TRC_STREAM_THREAD:
		dump_u64(si->pid);
		dump_char('/');
		dump_u64(si->tid);
		break;
	case TRC_STREAM_RSS:
		dump_str("rss");
		break;
	default:
		dump_str("meta");
	}
	dump_char(' ');
	dump_str(trcfile_type_name(rec->type));
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		dump__name_field(r, "name", rec->span.name_id);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		dump__name_field(r, "name", rec->value.name_id);
		dump_str(" value=");
		dump_i64(rec->value.value);
		break;
	case TRC_REC_ALLOC:
		dump__kv_hex("addr", rec->alloc.addr);
		dump__kv("size", rec->alloc.size);
		if (rec->alloc.stack_id)
			dump__kv("stack", rec->alloc.stack_id);
		break;
	case TRC_REC_FREE:
		dump__kv_hex("addr", rec->alloc.addr);
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP: {
		static const char *const kinds[] = {"?", "anon", "shared", "file", "brk", "remap"};
		dump__kv_hex("addr", rec->map.addr);
		dump__kv("len", rec->map.len);
		if (rec->type == TRC_REC_MAP) {
			dump_str(" kind=");
			dump_str(rec->map.kind <= TRC_MAP_KIND_MAX ? kinds[rec->map.kind] : "?");
			if (rec->map.stack_id)
				dump__kv("stack", rec->map.stack_id);
		}
		break;
	}
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		dump__kv_hex("addr", rec->func.addr);
		dump__kv_hex("call_site", rec->func.call_site);
		dump__symbol(r, syms, si->pid, rec->func.addr);
		break;
	case TRC_REC_RSS: {
		uint64_t b = rec->rss.buffers_bytes;
		dump__kv("pid", rec->rss.pid);
		dump__kv("program_bytes", rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0);
		dump__kv("rss_bytes", rec->rss.rss_bytes);
		dump__kv("buffers_bytes", b);
		dump_str(" source=");
		dump_str(trcfile_rss_source_name(rec->rss.source));
		if (rec->rss.flags & TRC_RSS_HAS_HWM)
			dump__kv("hwm_bytes", rec->rss.hwm_bytes);
		if (rec->rss.flags & TRC_RSS_HAS_SPLIT) {
			dump__kv("anon_bytes", rec->rss.anon_bytes);
			dump__kv("file_bytes", rec->rss.file_bytes);
			dump__kv("shmem_bytes", rec->rss.shmem_bytes);
		}
		if (rec->rss.flags & TRC_RSS_HAS_EXACT) {
			dump__kv("rss_exact_bytes", rec->rss.rss_exact_bytes);
			dump__kv("pss_bytes", rec->rss.pss_bytes);
		}
		if (rec->rss.flags & TRC_RSS_STRETCHED)
			dump_str(" stretched");
		if (rec->rss.flags & TRC_RSS_FINAL)
			dump_str(" final");
		dump__kv("read_ns", rec->rss.read_ns);
		break;
	}
	case TRC_REC_LOST:
		dump__kv("count", rec->lost.count);
		dump_str(" reason=");
		dump_str(trcfile_lost_reason_name(rec->lost.reason));
		break;
	case TRC_REC_THREAD:
		dump__kv("pid", rec->thread.pid);
		dump__kv("tid", rec->thread.tid);
		dump__kv_str("name", rec->thread.name, rec->thread.name_len);
		break;
	case TRC_REC_PROCESS:
		dump__kv("pid", rec->process.pid);
		dump__kv("ppid", rec->process.ppid);
		dump__kv_str("cmdline", rec->process.cmdline, rec->process.cmdline_len);
		break;
	case TRC_REC_NAME:
		dump__kv("id", rec->name.id);
		dump__kv_str("str", rec->name.str, rec->name.len);
		break;
	case TRC_REC_MODULE:
		dump__kv("pid", rec->module.pid);
		dump__kv_hex("start", rec->module.start);
		dump__kv_hex("end", rec->module.end);
		dump__kv_hex("offset", rec->module.offset);
		dump__kv_str("path", rec->module.path, rec->module.path_len);
		dump__build_id(rec->module.build_id, rec->module.build_id_len);
		break;
	case TRC_REC_NOTE:
		dump__kv_str("text", rec->note.text, rec->note.len);
		break;
	case TRC_REC_EXIT:
		dump__kv("pid", rec->exit.pid);
		dump_str(" status=");
		dump_i64(rec->exit.status);
		dump__kv("maxrss_bytes", rec->exit.maxrss_bytes);
		dump__kv("buffers_bytes", rec->exit.buffers_bytes);
		if (rec->exit.flags)
			dump__kv("flags", rec->exit.flags); /* 1: written by the process itself */
		break;
	case TRC_REC_WAIT:
		dump__kv("waits", rec->wait.waits);
		dump__kv("waited_ns", rec->wait.waited_ns);
		dump__kv("max_ns", rec->wait.max_ns);
		break;
	case TRC_REC_STACK: {
		uint64_t f[TRC_STACK_DEPTH_MAX];
		int n = trcfile_stack_unpack(rec, f, TRC_STACK_DEPTH_MAX);
		dump__kv("id", rec->stack.id);
		if (rec->stack.flags & TRC_STACK_TRUNCATED)
			dump_str(" truncated");
		dump_str(" frames=");
		for (int i = 0; i < n; i++) {
			if (i)
				dump_char(',');
			dump_hex(f[i]);
		}
		break;
	}
	}
	dump_char('\n');
}

static bool dump__name_matches(const struct trcfile_reader *r, const struct trc_record *rec,
			       char **names, unsigned n_names)
{
	uint32_t id;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		id = rec->span.name_id;
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		id = rec->value.name_id;
		break;
	default:
		return false;
	}
	const char *n = trcfile_reader_name(r, id, NULL);
	if (!n)
		return false;
	for (unsigned k = 0; k < n_names; k++)
		if (!strcmp(n, names[k]))
			return true;
	return false;
}

/* "1.5s", "0.0000031s", "0s": ns from the start, exact, in the form --from and --to take. */
static const char *dump__fmt_offset(uint64_t ns, char *buf, size_t len)
{
	unsigned long long whole = ns / 1000000000u, frac = ns % 1000000000u;
	if (!frac) {
		snprintf(buf, len, "%llus", whole);
		return buf;
	}
	int digits = 9;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	snprintf(buf, len, "%llu.%0*llus", whole, digits, frac);
	return buf;
}

/* Appends to buf (at *n, len bytes) as much of the text as fits. */
__attribute__((format(printf, 4, 5))) static void dump__append(char *buf, size_t len, size_t *n,
							       const char *fmt, ...)
{
	va_list ap;
	if (*n >= len)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n = *n + (size_t)k < len ? *n + (size_t)k : len;
}

/* One line on stderr when a --thread names no thread of the file: which, and the threads
 * there are (the first few). */
static void dump__say_unmatched_threads(const struct trcfile_reader *r, const char *path,
					char **thread_args, const bool *matched, unsigned n_threads)
{
	char line[600];
	size_t n = 0;
	unsigned shown = 0, total = 0;
	dump__append(line, sizeof(line), &n, "no thread in %s matches", path);
	for (unsigned k = 0, j = 0; k < n_threads; k++)
		if (!matched[k])
			dump__append(line, sizeof(line), &n, "%s --thread %s", j++ ? " or" : "",
				     thread_args[k]);
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (si->kind != TRC_STREAM_THREAD)
			continue;
		if (total++ < 8)
			dump__append(line, sizeof(line), &n, "%s%u/%u",
				     shown++ ? ", " : " (its threads: ", si->pid, si->tid);
	}
	if (total > shown)
		dump__append(line, sizeof(line), &n, ", and %u more", total - shown);
	dump__append(line, sizeof(line), &n, "%s", total ? ")" : " (it has no thread streams)");
	fprintf(stderr, "trace-dump events: %s\n", line);
}

/* One line on stderr when no record matched: the filters, and when a range was given, the
 * times the selected streams' records lie between. */
static void dump__say_nothing_matched(const struct trcfile_reader *r, const char *path,
				      const bool *include, char **thread_args, unsigned n_threads,
				      char **names, unsigned n_names, const char *from_arg,
				      const char *to_arg, uint64_t start)
{
	char line[600], a[40], b[40];
	size_t n = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	if (!n_threads && !n_names && !from_arg && !to_arg) {
		fprintf(stderr, "trace-dump events: %s holds no record\n", path);
		return;
	}
	/* The filters as given: alternatives joined by "or", different filters by ",". */
	const char *sep = "";
	dump__append(line, sizeof(line), &n, "no record in %s matches", path);
	for (unsigned k = 0; k < n_threads; k++, sep = ",")
		dump__append(line, sizeof(line), &n, "%s --thread %s", k ? " or" : sep,
			     thread_args[k]);
	for (unsigned k = 0; k < n_names; k++, sep = ",")
		dump__append(line, sizeof(line), &n, "%s --name %s", k ? " or" : sep, names[k]);
	if (from_arg) {
		dump__append(line, sizeof(line), &n, "%s --from %s", sep, from_arg);
		sep = ",";
	}
	if (to_arg)
		dump__append(line, sizeof(line), &n, "%s --to %s", sep, to_arg);
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (!include[s] || !si->chunks)
			continue;
		if (si->first_ts_ns < lo)
			lo = si->first_ts_ns;
		if (si->last_ts_ns > hi)
			hi = si->last_ts_ns;
	}
	if ((from_arg || to_arg) && lo <= hi)
		dump__append(line, sizeof(line), &n, " (its records lie between %s and %s)",
			     dump__fmt_offset(lo > start ? lo - start : 0, a, sizeof(a)),
			     dump__fmt_offset(hi > start ? hi - start : 0, b, sizeof(b)));
	fprintf(stderr, "trace-dump events: %s\n", line);
}

/* Several FILEs: one time order on CLOCK_REALTIME, each line labelled HOST TRACE; --from and
 * --to count from the earliest start of recording of them all. */
static int dump__events_multi(const char *cmd, int argc, char **argv,
			      const struct dump__thread_filter *threads, unsigned n_threads,
			      char **names, unsigned n_names, bool from_set, uint64_t from,
			      uint64_t to, bool no_symbols)
{
	struct dump_traces m;
	unsigned n = (unsigned)(argc - optind);
	if (dump_traces_open(&m, argv + optind, n) != DUMP_EXIT_OK)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	bool **include = calloc(n, sizeof(*include));
	struct sym_resolver **syms = calloc(n, sizeof(*syms));
	bool any_thread = n_threads == 0;
	if (!include || !syms)
		goto out;
	for (unsigned i = 0; i < n && !no_symbols; i++)
		syms[i] = dump_symbols_new(m.t[i].r);
	for (unsigned i = 0; i < n; i++) {
		struct trcfile_reader *r = m.t[i].r;
		unsigned ns = trcfile_reader_stream_count(r);
		include[i] = calloc(ns ? ns : 1, sizeof(bool));
		if (!include[i])
			goto out;
		for (unsigned s = 0; s < ns; s++) {
			const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
			include[i][s] = n_threads == 0;
			for (unsigned k = 0; k < n_threads && si->kind == TRC_STREAM_THREAD; k++)
				if (si->tid == threads[k].tid &&
				    (!threads[k].has_pid || si->pid == threads[k].pid))
					include[i][s] = any_thread = true;
		}
	}
	if (dump_traces_start(&m, include) != DUMP_EXIT_OK)
		goto out;
	uint64_t printed = 0;
	struct trc_record rec;
	unsigned ti, sidx;
	int k;
	while ((k = dump_traces_next(&m, &rec, &ti, &sidx)) == 1) {
		struct trcfile_reader *r = m.t[ti].r;
		uint64_t start = dump_trace_start(&m, ti);
		int64_t rel = (int64_t)(rec.ts_ns - start);
		if (rel > 0 && (uint64_t)rel > to)
			continue; /* other files may still be before --to */
		if (from_set && (rel < 0 || (uint64_t)rel < from))
			continue;
		if (n_names && !dump__name_matches(r, &rec, names, n_names))
			continue;
		dump__record(r, syms[ti], trcfile_reader_stream(r, sidx), &rec, start, &m.t[ti]);
		printed++;
	}
	dump_flush();
	if (k < 0) {
		dump_error("%s: %s", m.t[m.failed].path, trcfile_reader_errmsg(m.t[m.failed].r));
		goto out;
	}
	rc = DUMP_EXIT_OK;
	if (!any_thread)
		dump_error("no --thread given names a thread of these %u files", n);
	else if (!printed)
		dump_error("no record of these %u files matches", n);
	(void)cmd;
out:
	for (unsigned i = 0; include && i < n; i++)
		free(include[i]);
	free(include);
	dump__fn_cache_free();
	for (unsigned i = 0; syms && i < n; i++)
		sym_resolver_free(syms[i]);
	free(syms);
	dump_traces_close(&m);
	return rc;
}

int dump_events_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"thread", required_argument, NULL, 't'},
		{"name", required_argument, NULL, 'n'},
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 'T'},
		{"no-symbols", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	/* Each --thread or --name takes at least one argument: argc bounds their number. */
	struct dump__thread_filter *threads = calloc((size_t)argc, sizeof(*threads));
	char **thread_args = calloc((size_t)argc, sizeof(char *));
	char **names = calloc((size_t)argc, sizeof(char *));
	bool *matched = calloc((size_t)argc, sizeof(bool));
	bool *include = NULL;
	unsigned n_threads = 0, n_names = 0;
	const char *from_arg = NULL, *to_arg = NULL, *path = NULL;
	uint64_t from = 0, to = UINT64_MAX;
	struct trcfile_reader *r = NULL;
	struct trcfile_iter *it = NULL;
	struct sym_resolver *syms = NULL;
	bool no_symbols = false;
	char msg[320];
	int c, rc = DUMP_EXIT_USAGE;

	if (!threads || !thread_args || !names || !matched) {
		dump_error("out of memory");
		rc = DUMP_EXIT_FAIL;
		goto out;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			goto out;
		switch (c) {
		case 't':
			if (dump__parse_thread(optarg, &threads[n_threads])) {
				dump_usage_error(cmd,
						 "--thread: expected TID or PID/TID, got \"%s\"",
						 optarg);
				goto out;
			}
			thread_args[n_threads++] = optarg;
			break;
		case 'n':
			names[n_names++] = optarg;
			break;
		case 'S':
			no_symbols = true;
			break;
		case 'f':
		case 'T':
			if (duration_parse_ns(optarg, 0, DUMP_TIME_MAX_NS, c == 'f' ? &from : &to,
					      msg, sizeof(msg))) {
				dump_usage_error(cmd, "--%s: %s", c == 'f' ? "from" : "to", msg);
				goto out;
			}
			if (c == 'f')
				from_arg = optarg;
			else
				to_arg = optarg;
			break;
		case 'h':
			fputs(dump__events_help, stdout);
			rc = DUMP_EXIT_OK;
			goto out;
		default:
			dump_refused_option(cmd, c, argv, opts);
			goto out;
		}
	}
	if (from_arg && to_arg && from > to) {
		dump_usage_error(cmd, "--from %s is after --to %s: the range is empty", from_arg,
				 to_arg);
		goto out;
	}
	if (argc - optind > 1) {
		rc = dump__events_multi(cmd, argc, argv, threads, n_threads, names, n_names,
					from_arg != NULL, from, to, no_symbols);
		goto out;
	}
	path = dump_file_operand(cmd, argc, argv);
	if (!path)
		goto out;
	rc = DUMP_EXIT_FAIL;
	r = dump_open(path, false);
	if (!r)
		goto out;
	unsigned ns = trcfile_reader_stream_count(r);
	include = calloc(ns ? ns : 1, sizeof(bool));
	if (!include) {
		dump_error("out of memory");
		goto out;
	}
	for (unsigned s = 0; s < ns; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		include[s] = n_threads == 0;
		for (unsigned k = 0; k < n_threads && si->kind == TRC_STREAM_THREAD; k++)
			if (si->tid == threads[k].tid &&
			    (!threads[k].has_pid || si->pid == threads[k].pid)) {
				include[s] = true;
				matched[k] = true;
			}
	}
	uint64_t start = dump_start_ns(r);
	if (!no_symbols)
		syms = dump_symbols_new(r);
	it = trcfile_iter_new_subset(r, include);
	if (!it) {
		dump_error("%s: %s", path,
			   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
						       : "out of memory");
		goto out;
	}
	uint64_t t_from = from > UINT64_MAX - start ? UINT64_MAX : start + from;
	uint64_t t_to = to > UINT64_MAX - start ? UINT64_MAX : start + to;
	int err = 0;
	uint64_t printed = 0;
	if (from_arg)
		err = trcfile_iter_seek(it, t_from);
	struct trc_record rec;
	unsigned sidx;
	while (!err) {
		int k = trcfile_iter_next(it, &rec, &sidx);
		if (k <= 0) {
			err = k;
			break;
		}
		if (rec.ts_ns > t_to)
			break;
		if (from_arg && rec.ts_ns < t_from)
			continue;
		if (n_names && !dump__name_matches(r, &rec, names, n_names))
			continue;
		dump__record(r, syms, trcfile_reader_stream(r, sidx), &rec, start, NULL);
		printed++;
	}
	dump_flush();
	if (err < 0) {
		dump_error("%s: %s", path, trcfile_reader_errmsg(r));
		goto out;
	}
	rc = DUMP_EXIT_OK;
	bool all_matched = true;
	for (unsigned k = 0; k < n_threads; k++)
		all_matched &= matched[k];
	if (!all_matched)
		dump__say_unmatched_threads(r, path, thread_args, matched, n_threads);
	else if (!printed)
		dump__say_nothing_matched(r, path, include, thread_args, n_threads, names, n_names,
					  from_arg, to_arg, start);
out:
	trcfile_iter_free(it);
	dump__fn_cache_free();
	sym_resolver_free(syms);
	dump_close(r, path);
	free(include);
	free(matched);
	free(names);
	free(thread_args);
	free(threads);
	return rc;
}
