/* dump_perfetto.c - `trace-dump perfetto`: Perfetto's native protobuf trace, streamed.
 *
 * Purpose: the subcommand's options and help, its output files, and one call: the trace is
 * made by export_perfetto (src/export/export_perfetto.c, where the mapping and the encoding
 * are described), which hands its bytes to trace-dump's output and, for --split-size, asks
 * for the next file (tools/dump/dump_outfile.c names them). What the export left out is said
 * once on stderr after it.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "dump_export.h"

static const char dump__perfetto_help[] =
	"usage: trace-dump perfetto [--from T] [--to T] [--split-size SIZE] FILE -o OUT\n"
	"       trace-dump perfetto FILE... -o OUT\n"
	"\n"
	"Perfetto's native protobuf trace (open OUT in ui.perfetto.dev or trace_processor):\n"
	"a few bytes an event, streamed, memory bounded whatever the trace size.\n"
	"  spans, functions   slices on each thread's track (functions named module+offset);\n"
	"                     spans still open at the end are closed at the last timestamp,\n"
	"                     an end without a begin is dropped\n"
	"  instants           instants with a debug annotation 'value'\n"
	"  counters           a counter track per thread and name\n"
	"  allocations        a counter track 'heap live bytes' per process\n"
	"  RSS                counter tracks 'RSS' (buffers excluded) and 'RSS trace buffers'\n"
	"                     per sampled process\n"
	"  lost records       instants on the thread that lost them; exit, notes: instants\n"
	"Timestamps are CLOCK_MONOTONIC nanoseconds, as recorded; the clock snapshot gives\n"
	"CLOCK_REALTIME at the start too, and no BOOTTIME (the file does not record it).\n"
	"To line it up with a system trace of the same boot (traced: its snapshots relate\n"
	"BOOTTIME to MONOTONIC), open the two as one archive: tar cf both.tar sys.pftrace\n"
	"OUT, in ui.perfetto.dev or trace_processor, which merge an archive's files.\n"
	"Several FILEs (from one or many hosts): one trace, merged and timed on\n"
	"CLOCK_REALTIME (each FILE's start of recording on both clocks lines them up);\n"
	"trace N's pids and tids shown as pid + N x 10000000 (N from 1, in the order\n"
	"given), processes named \"HOST TRACE: name\". --from, --to and --split-size take\n"
	"one FILE.\n"
	"\n"
	"  -o, --output OUT    the file to write (required; - writes to standard output)\n"
	"  --from T, --to T    only events from T to T (both included), counted from the\n"
	"                      start of recording: a duration with a unit (1.5s, 200ms)\n"
	"  --split-size SIZE   numbered files OUT-001, OUT-002... (before OUT's extension)\n"
	"                      of about SIZE each (1M or more: 512M, 1G), each a whole trace\n"
	"                      of consecutive time ranges; slices open at a cut end there\n"
	"                      (annotated split) and begin again in the next file (continued)\n"
	"  -h, --help          this text\n";

/* --split-size: the next file of the output. */
static int dump__pf_next_file(void *ctx)
{
	return dump_outfile_next(ctx) ? -EIO : 0;
}

/* The export of n FILEs (readers in in) into of, opened here; the messages of a failure
 * printed. DUMP_EXIT_OK or DUMP_EXIT_FAIL. */
static int dump__pf_export(const struct export_input *in, unsigned n, struct dump_outfile *of,
			   const struct dump_slice *sl)
{
	if (dump_outfile_next(of))
		return DUMP_EXIT_FAIL;
	char err[512];
	struct dump_export_out out = {0};
	struct export_sink sink = dump_export_sink(&out);
	struct export_perfetto_opts o = {
		.has_from = sl && sl->from_arg,
		.from_ns = sl ? sl->from : 0,
		.to_ns = sl ? sl->to : UINT64_MAX,
		.split_bytes = of->split,
		.split = dump__pf_next_file,
		.split_ctx = of,
		.names = dump_export_namer(),
		.err = err,
		.err_len = sizeof(err),
	};
	struct export_perfetto_result res;
	if (export_perfetto(in, n, &o, &sink, &res)) {
		if (res.split_failed)
			return DUMP_EXIT_FAIL; /* said by dump_outfile_next */
		/* A failed export leaves no file when it can (written beside its name); a file
		 * written in place, or standard output, keeps what was written. */
		if (res.flushed) {
			if (!dump_outfile_discard(of))
				dump_outfile_close(of);
		} else {
			dump_outfile_discard(of);
		}
		if (res.failed_input >= 0)
			dump_error("%s: %s", in[res.failed_input].path, err);
		else
			dump_error("%s", err);
		return DUMP_EXIT_FAIL;
	}
	if (dump_outfile_close(of))
		return DUMP_EXIT_FAIL;
	if (res.too_deep)
		dump_error("perfetto: %" PRIu64 " span or function %s past %u open on one thread "
			   "left out, with their ends",
			   res.too_deep, res.too_deep == 1 ? "begin" : "begins",
			   EXPORT_PERFETTO_MAX_DEPTH);
	return DUMP_EXIT_OK;
}

/* Several FILEs into one output (merged on CLOCK_REALTIME). */
static int dump__pf_multi(char *const *paths, unsigned n, const char *out)
{
	struct dump_traces m;
	if (dump_traces_open(&m, paths, n) != DUMP_EXIT_OK)
		return DUMP_EXIT_FAIL;
	int rc = DUMP_EXIT_FAIL;
	struct dump_outfile of = {.base = out};
	struct export_input *in = calloc(n, sizeof(*in));
	if (!in) {
		dump_error("out of memory");
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		in[i] = (struct export_input){m.t[i].r, m.t[i].path};
	rc = dump__pf_export(in, n, &of, NULL);
out:
	free(in);
	dump_traces_close(&m);
	return rc;
}

int dump_perfetto_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 'T'},
		{"split-size", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0], *out = NULL;
	struct dump_slice sl = {.to = UINT64_MAX};
	struct dump_outfile of = {0};
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			fputs(dump__perfetto_help, stdout);
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
		if (sl.from_arg || sl.to_arg || of.split)
			return dump_usage_error(cmd, "--from, --to and --split-size take one FILE "
						     "(several FILEs: whole traces)");
		if (!out)
			return dump_usage_error(cmd, "-o OUT is required (the output is binary)");
		return dump__pf_multi(argv + optind, (unsigned)(argc - optind), out);
	}
	const char *path = dump_file_operand(cmd, argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	if (!out)
		return dump_usage_error(cmd, "-o OUT is required (the output is binary)");
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	int rc;
	of.base = out;
	if (of.split && !strcmp(out, "-")) {
		rc = dump_usage_error(cmd, "--split-size writes files: -o - cannot be split");
	} else {
		struct export_input in = {r, path};
		rc = dump__pf_export(&in, 1, &of, &sl);
	}
	if (rc == DUMP_EXIT_OK)
		dump_close(r, path);
	else
		dump_reader_free(r);
	return rc;
}
