/* dump_parquet.c - `trace-dump parquet FILE... -o DIR`: traces as Parquet tables for query
 * engines (DuckDB, Spark, Trino, ClickHouse).
 *
 * Purpose: the subcommand's options and help, DIR and its files, and the calls: every FILE
 * adds its rows to the tables through export_parquet_add (src/export/export_parquet.c, where
 * the mapping is described; the schema is src/export/PARQUET.md). Each table is written
 * unnamed in DIR (cli_outfile.h) and takes its name only when every FILE is in, so a failure
 * leaves DIR as it was.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_outfile.h"
#include "cli_version.h"
#include "dump_common.h"
#include "dump_export.h"

static const char dump__parquet_help[] =
	"usage: trace-dump parquet -o DIR FILE...\n"
	"\n"
	"Writes the traces as Parquet tables into DIR (created if missing), one file per\n"
	"table; every FILE adds its rows, labelled with its host and trace:\n"
	"  spans.parquet        host, trace, pid, tid, thread, name, start_ns, dur_ns, depth\n"
	"  events.parquet       host, trace, pid, tid, ts_ns, kind, name, value: instants,\n"
	"                       counters, func_enter/func_exit (name = the function, value =\n"
	"                       address), lost (name = reason, value = count)\n"
	"  allocations.parquet  host, trace, ts_ns, pid, tid, kind, addr, size, span (the\n"
	"                       innermost open span or function; null when none), stack_id\n"
	"                       (its call stack in stacks.parquet; null when none)\n"
	"  rss.parquet          host, trace, ts_ns, pid, rss_bytes, program_bytes,\n"
	"                       buffers_bytes, the status and smaps_rollup figures, read_ns, "
	"flags\n"
	"  traces.parquet       one row per FILE: host, trace, command, pid, start_ns,\n"
	"                       duration_ns, events_recorded, events_lost, rss_peak_bytes "
	"(exact)...\n"
	"  processes.parquet    one row per process of each traced tree: host, trace, pid,\n"
	"                       ppid, command, exit_status, peak_low_bytes, peak_high_bytes\n"
	"                       (the peak as summary gives it, buffers excluded), peak_source,\n"
	"                       rss_samples, rss_sampled_max_bytes, buffers_max_bytes\n"
	"  stacks.parquet       one row per frame of each allocation call stack: host, trace,\n"
	"                       pid, stack_id, depth (0 innermost), frame (return address),\n"
	"                       function, truncated\n"
	"Timestamps (start_ns, ts_ns) are nanoseconds on CLOCK_REALTIME, from each trace's\n"
	"recorded anchor, so traces of several hosts line up. host is the recording machine's\n"
	"node name, trace the FILE's base name. Strings are dictionary-encoded, pages zstd-\n"
	"compressed, every column chunk has min/max statistics. Schema: src/export/PARQUET.md.\n"
	"\n"
	"  -o, --output DIR         the directory of the tables (required; yours: one\n"
	"                           another user owns is refused). The tables appear\n"
	"                           when every FILE is in; a failure leaves DIR as it was\n"
	"      --rows-per-group N   rows per row group (default 131072; memory is bounded\n"
	"                           by it)\n"
	"  -h, --help               this text\n";

/* DIR, made if missing, opened: the tables are made in it by its fd (openat, no symlink in
 * it followed). A directory another user owns is refused: who can write in it can plant
 * names there. -1 after the message. */
static int dp_open_dir(const char *dir)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		dump_error("%s: %s", dir, strerror(errno));
		return -1;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) != 0) {
		dump_error("%s: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		dump_error("%s: the directory belongs to uid %ju, not to you (uid %ju): give a "
			   "directory of your own",
			   dir, (uintmax_t)st.st_uid, (uintmax_t)geteuid());
		close(dfd);
		return -1;
	}
	return dfd;
}

int dump_parquet_main(int argc, char **argv)
{
	enum { OPT_ROWS = 1000 };
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"rows-per-group", required_argument, NULL, OPT_ROWS},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *dir = NULL;
	uint32_t rows = 0;
	int opt;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(dump__parquet_help, stdout);
			return DUMP_EXIT_OK;
		case 'o':
			if (dump_value_missing(argv[0], argv))
				return DUMP_EXIT_USAGE;
			dir = optarg;
			break;
		case OPT_ROWS: {
			char *end = NULL;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || !*optarg || *end || optarg[0] == '-' || v < 1 ||
			    v > (1u << 24))
				return dump_usage_error(argv[0],
							"--rows-per-group wants a count from 1 to "
							"16777216, not \"%s\"",
							optarg);
			rows = (uint32_t)v;
			break;
		}
		default:
			return dump_refused_option(argv[0], opt, argv, opts);
		}
	}
	if (!dir)
		return dump_usage_error(argv[0], "no output directory given (-o DIR)");
	if (optind >= argc)
		return dump_usage_error(argv[0], "no FILE given");
	int dfd = dp_open_dir(dir);
	if (dfd < 0)
		return DUMP_EXIT_FAIL;
	struct cli_outfile files[EXPORT_PQ_N_TABLES];
	char paths[EXPORT_PQ_N_TABLES][4096];
	int fds[EXPORT_PQ_N_TABLES];
	struct export_sink sinks[EXPORT_PQ_N_TABLES];
	struct export_parquet *x = NULL;
	char err[600];
	struct export_parquet_opts o = {
		.rows_per_group = rows,
		.created_by = "trc trace-dump " CLI_VERSION,
		.names = dump_export_namer(),
		.err = err,
		.err_len = sizeof(err),
	};
	int rc = DUMP_EXIT_FAIL;
	unsigned opened = 0, table = 0;
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++)
		fds[t] = -1;
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++) {
		snprintf(paths[t], sizeof(paths[t]), "%s/%s.parquet", dir, export_parquet_tables[t]);
		char msg[600];
		/* Each table unnamed in DIR until every FILE is in: a failure leaves DIR's tables
		 * as they were, and whatever entry a table's name holds (a symlink) is replaced at
		 * the end, never followed. */
		if (cli_outfile_open(&files[t], dfd, paths[t], 0644, 0, NULL, "part", false, msg,
				     sizeof(msg))) {
			dump_error("%s", msg);
			goto out;
		}
		opened = t + 1;
		fds[t] = open(files[t].path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fds[t] < 0) {
			dump_error("%s: %s", paths[t], strerror(errno));
			goto out;
		}
		sinks[t] = dump_export_fd_sink(&fds[t]);
	}
	int e;
	x = export_parquet_open(&o, sinks, &e, &table);
	if (!x) {
		dump_error("%s: %s", paths[table], strerror(-e));
		goto out;
	}
	for (int i = optind; i < argc; i++) {
		struct trcfile_reader *r = dump_open(argv[i], false);
		if (!r)
			goto out;
		e = export_parquet_add(x, r, argv[i]);
		if (e)
			dump_error("%s: %s", argv[i], err);
		dump_close(r, argv[i]);
		if (e)
			goto out;
	}
	rc = DUMP_EXIT_OK;
out:
	e = export_parquet_close(x, &table);
	if (e && rc == DUMP_EXIT_OK) {
		dump_error("%s: %s", paths[table], strerror(-e));
		rc = DUMP_EXIT_FAIL;
	}
	for (unsigned t = 0; t < opened; t++) {
		if (fds[t] >= 0 && close(fds[t]) != 0 && rc == DUMP_EXIT_OK) {
			dump_error("%s: %s", paths[t], strerror(errno));
			rc = DUMP_EXIT_FAIL;
		}
	}
	/* Every table written: each put in place; else none (no half-written table). */
	for (unsigned t = 0; t < opened; t++) {
		char msg[600];
		if (rc != DUMP_EXIT_OK)
			cli_outfile_abort(&files[t]);
		else if (cli_outfile_commit(&files[t], msg, sizeof(msg))) {
			dump_error("%s", msg);
			rc = DUMP_EXIT_FAIL;
		}
	}
	close(dfd);
	return rc;
}
