/* dump_pprof.c - `trace-dump pprof`: heap profiles in pprof's format (gzip profile.proto).
 *
 * Purpose: the subcommand's options and help, and one call: the profile is made by
 * export_pprof (src/export/export_pprof.c, where the mapping is described); the file is
 * opened only when the profile is whole, so a failed export leaves OUT as it was.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli_duration.h"
#include "dump_common.h"
#include "dump_export.h"

static const char dump__pprof_help[] =
	"usage: trace-dump pprof (--live-at peak|end|T | --alloc) FILE -o OUT\n"
	"\n"
	"A heap profile in pprof's format (gzip-compressed profile.proto): open it with\n"
	"`go tool pprof OUT`, speedscope or ui.perfetto.dev. The stack of each allocation is\n"
	"the spans and functions open on its thread at that moment (functions named\n"
	"module+offset), under a frame for the thread.\n"
	"  --live-at peak      bytes and objects live when the live bytes first peak\n"
	"  --live-at end       ... at the end of the trace: every process of the tree, each\n"
	"                      at its exit or at the end (the summary's live_by_process\n"
	"                      summed; its \"live at end\" is the program's alone)\n"
	"  --live-at T         ... at T from the start of recording (a duration: 1.5s)\n"
	"  --alloc             bytes and objects allocated over the whole trace\n"
	"  -o, --output OUT    the file to write (required)\n"
	"  -h, --help          this text\n";

int dump_pprof_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"live-at", required_argument, NULL, 'L'},
		{"alloc", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0], *live_at = NULL;
	struct dump_outfile of = {0};
	bool alloc = false;
	uint64_t at = 0;
	char msg[256];
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (opt) {
		case 'o':
			of.base = optarg;
			break;
		case 'L':
			live_at = optarg;
			if (strcmp(optarg, "peak") && strcmp(optarg, "end") &&
			    duration_parse_ns(optarg, 0, DUMP_TIME_MAX_NS, &at, msg, sizeof(msg)))
				return dump_usage_error(cmd, "--live-at: peak, end or a time: %s",
							msg);
			break;
		case 'A':
			alloc = true;
			break;
		case 'h':
			fputs(dump__pprof_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(cmd, opt, argv, opts);
		}
	}
	if (!!live_at == alloc)
		return dump_usage_error(cmd, "give one of --live-at peak|end|T and --alloc");
	const char *path = dump_file_operand(cmd, argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	if (!of.base || !strcmp(of.base, "-"))
		return dump_usage_error(cmd, "-o OUT is required (the output is binary)");
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	char err[512];
	struct dump_export_out out = {.of = &of};
	struct export_sink sink = dump_export_sink(&out);
	struct export_pprof_opts o = {
		.mode = alloc			 ? EXPORT_PPROF_ALLOC
			: !strcmp(live_at, "peak") ? EXPORT_PPROF_LIVE_PEAK
			: !strcmp(live_at, "end")  ? EXPORT_PPROF_LIVE_END
						   : EXPORT_PPROF_LIVE_AT,
		.at_ns = at,
		.at_text = live_at,
		.names = dump_export_namer(),
		.err = err,
		.err_len = sizeof(err),
	};
	struct export_pprof_result res = {0};
	int rc = DUMP_EXIT_FAIL;
	if (export_pprof(r, &o, &sink, &res)) {
		if (!out.failed)
			dump_error("%s: %s", path, err);
		goto out;
	}
	if (dump_outfile_close(&of))
		goto out;
	if (res.approximate)
		fprintf(stderr,
			"trace-dump pprof: approximate: a table hit its cap (%u live "
			"allocations, %u stacks)\n",
			EXPORT_PPROF_LIVE_MAX, EXPORT_PPROF_MAX_NODES);
	rc = DUMP_EXIT_OK;
out:
	if (rc == DUMP_EXIT_OK)
		dump_close(r, path);
	else
		dump_reader_free(r);
	return rc;
}
