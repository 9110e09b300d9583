/* dump_chrome.c - `trace-dump chrome`: Chrome Trace Event JSON, streamed.
 *
 * Purpose: the subcommand's options and help, its output, and one call: the document is made
 * by export_chrome (src/export/export_chrome.c, where the mapping is described). Here: the
 * output files (-o OUT, --split-size: tools/dump/dump_outfile.c names them), function names
 * from one symbol resolver for the FILE, and what a failed export leaves: -o OUT is dropped
 * (OUT keeps what it had), a file written in place or standard output is cut back to where
 * the document began, and a pipe, which cannot be taken back, gets the document closed by
 * the export (otherData {incomplete, error}). Either way, status 1.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump_common.h"
#include "dump_export.h"
#include "dump_symbols.h"
#include "export_text.h"

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

/* Function names from the FILE's own resolver (NULL: dump_func_name's), module+offset from
 * the same resolver when a symbol is missing: dump_func_name's own would open the module
 * again and say its problem a second time. */
static size_t dump__chrome_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				uint64_t addr, char *buf, size_t len)
{
	struct sym_resolver *syms = ctx;
	struct sym_info si;
	if (!syms)
		return dump_func_name(r, pid, addr, buf, len);
	if (sym_resolve(syms, pid, addr, &si) == 0 && si.name) {
		int n = snprintf(buf, len, "%s", si.name);
		return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
	}
	return strlen(sym_display(syms, pid, addr, buf, len));
}

/* The document's buffer: a module's warning is printed after what was made before it (the
 * buffer, then trace-dump's), and a closed pipe ends trace-dump there, quietly. */
static struct export_text dump__chrome_text;

static void dump__chrome_warn(void *ctx, const char *msg)
{
	(void)ctx;
	export_text_flush(&dump__chrome_text);
	dump_flush();
	fprintf(stderr, "trace-dump: %s\n", msg);
}

/* What a failed export can take back: its file, dropped or cut back to start (-1: a pipe,
 * nothing). */
struct dump__chrome_out {
	struct dump_outfile *of;
	off_t start;
	const char *path;
};

static bool dump__chrome_take_back(void *ctx)
{
	struct dump__chrome_out *co = ctx;
	if (dump_outfile_discard(co->of))
		return true; /* nothing of this export left */
	if (co->start < 0)
		return false;
	dump_out.len = 0;
	if (ftruncate(dump_out.fd, co->start) != 0 || lseek(dump_out.fd, co->start, SEEK_SET) < 0)
		dump_error("%s: cannot remove the partial output: %s", co->path, strerror(errno));
	return true;
}

static int dump__chrome_next_file(void *ctx)
{
	struct dump__chrome_out *co = ctx;
	if (dump_outfile_next(co->of))
		return -EIO;
	co->start = 0; /* the document of the new file */
	return 0;
}

/* The export of n FILEs into of; the messages of a failure printed. */
static int dump__chrome_export(const struct export_input *in, unsigned n, struct dump_outfile *of,
			       const struct dump_slice *sl, struct sym_resolver *syms)
{
	if (dump_outfile_next(of))
		return DUMP_EXIT_FAIL;
	/* Where the document starts in the output, to cut a failed export back to: a file of
	 * ours (-o) starts at 0, standard output where it is now if it is a file (-1: a pipe). */
	struct stat ost;
	struct dump__chrome_out co = {
		.of = of,
		.path = in[0].path,
		.start = strcmp(of->base, "-") ? 0
			 : fstat(dump_out.fd, &ost) == 0 && S_ISREG(ost.st_mode)
				 ? lseek(dump_out.fd, 0, SEEK_CUR) - (off_t)dump_out.len
				 : (off_t)-1,
	};
	/* Fault injection for the tests (a failure the reader no longer makes on a damaged
	 * chunk, which it skips): fail after that many records. */
	const char *fail_env = n == 1 ? getenv("TRC_TEST_CHROME_FAIL_AFTER") : NULL;
	char err[512];
	struct dump_export_out out = {.direct = true};
	struct export_sink sink = dump_export_sink(&out);
	struct export_chrome_opts o = {
		.has_from = sl && sl->from_arg,
		.from_ns = sl ? sl->from : 0,
		.to_ns = sl ? sl->to : UINT64_MAX,
		.split_bytes = of->split,
		.split = dump__chrome_next_file,
		.split_ctx = &co,
		.taken_back = dump__chrome_take_back,
		.taken_back_ctx = &co,
		.fail_after = fail_env ? strtoull(fail_env, NULL, 10) + 1 : 0,
		.fail_msg = "injected failure (TRC_TEST_CHROME_FAIL_AFTER)",
		/* One FILE: its resolver's warnings flush the buffer; several: dump_func_name's
		 * cannot, so the export hands its output over before each name. */
		.names = {dump__chrome_name, syms, .flush_first = n > 1},
		.text = &dump__chrome_text,
		.err = err,
		.err_len = sizeof(err),
	};
	struct export_chrome_result res;
	if (export_chrome(in, n, &o, &sink, &res)) {
		if (res.split_failed)
			return DUMP_EXIT_FAIL; /* said by dump_outfile_next */
		if (n == 1 && res.failed_input == 0)
			dump_outfile_close(of);
		else if (res.failed_input >= 0)
			dump_flush(); /* what the merge made before the failure */
		if (res.failed_input >= 0)
			dump_error("%s: %s", in[res.failed_input].path, err);
		else
			dump_error("%s", err);
		return DUMP_EXIT_FAIL;
	}
	return dump_outfile_close(of) ? DUMP_EXIT_FAIL : DUMP_EXIT_OK;
}

/* Several FILEs: one JSON on standard output, merged on CLOCK_REALTIME. */
static int dump__chrome_multi(int argc, char **argv)
{
	struct dump_traces m;
	unsigned n = (unsigned)(argc - optind);
	if (dump_traces_open(&m, argv + optind, n) != DUMP_EXIT_OK)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	struct dump_outfile of = {.base = "-"};
	struct export_input *in = calloc(n, sizeof(*in));
	if (!in) {
		dump_error("out of memory");
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		in[i] = (struct export_input){m.t[i].r, m.t[i].path};
	rc = dump__chrome_export(in, n, &of, NULL, NULL);
out:
	free(in);
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
	if (argc - optind > 1) {
		if (sl.from_arg || sl.to_arg || of.split || strcmp(of.base, "-"))
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
	struct sym_resolver *syms = dump_symbols_new_warn(r, dump__chrome_warn, NULL);
	struct export_input in = {r, path};
	int rc = dump__chrome_export(&in, 1, &of, &sl, syms);
	sym_resolver_free(syms);
	dump_close(r, path);
	return rc;
}
