/* dump_compact.c - `trace-dump compact`: compress the chunks a recorder wrote stored.
 *
 * Purpose: a trace may hold stored chunks (FORMAT.md "Stored chunks": written uncompressed when
 * the recorder's compressors were behind, and left so by `trace-run --keep-stored`, or by a
 * trace-run that was killed). This rewrites the file with every chunk compressed, the same
 * records, streams and header (trcfile_compact), on every core. A file without a footer (a
 * recorder killed) gets one, with everything the reader recovers.
 *
 * Threads: the main thread reads; trcfile_compact's threads compress.
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
#include "dump_common.h"

static const char dump__compact_help[] =
	"usage: trace-dump compact FILE -o OUT\n"
	"\n"
	"Writes OUT: the trace FILE with every chunk compressed. Chunks the recorder wrote\n"
	"uncompressed (stored) while compression was behind the program are compressed now;\n"
	"compressed chunks are copied as they are. The records, streams and header stay the\n"
	"same; a file cut short (its recorder killed) gets its index back. Prints one line on\n"
	"stderr: chunks compressed and the sizes.\n"
	"\n"
	"  -o, --output OUT   the file to write (required; may not be FILE). OUT appears\n"
	"                     whole or not at all: written beside it and renamed over\n"
	"                     it (keeping its mode, owner and ACL; a symlink stays a\n"
	"                     link) only when done; a failure leaves OUT as it was\n"
	"      --threads N    compression threads (default: every core)\n"
	"  -h, --help         this text\n";

static void dump__compact_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	if (done % 64 && done != total)
		return;
	fprintf(stderr, "\rtrace-dump compact: %3u%%",
		total ? (unsigned)(done * 100 / total) : 100u);
	if (done == total)
		fputc('\n', stderr);
}

int dump_compact_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus > 0 ? (unsigned)cpus : 1u;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (dump_value_missing(argv[0], argv))
				return DUMP_EXIT_USAGE;
			out = optarg;
			break;
		case 't': {
			char *end;
			errno = 0;
			unsigned long n = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || optarg[0] == '-' || n < 1 || n > 64)
				return dump_usage_error(argv[0],
							"--threads: invalid value \"%s\" (expected "
							"1 to 64)",
							optarg);
			threads = (unsigned)n;
			break;
		}
		case 'h':
			fputs(dump__compact_help, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(argv[0], c, argv, opts);
		}
	}
	const char *path = dump_file_operand(argv[0], argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	if (!out)
		return dump_usage_error(argv[0], "no output given (-o OUT)");
	struct stat a, b;
	if (!strcmp(path, out) || (stat(path, &a) == 0 && stat(out, &b) == 0 &&
				   a.st_dev == b.st_dev && a.st_ino == b.st_ino))
		return dump_usage_error(argv[0], "OUT is FILE: write another file, then rename it");
	/* OUT is written beside it and renamed over it only once whole: a FILE that cannot be
	 * read, or a compaction that fails, leaves OUT as it was (cli_outfile.h). */
	struct cli_outfile of;
	char msg[600] = "";
	if (cli_outfile_open(&of, AT_FDCWD, out, 0644, 0, NULL, "compacting", false, msg,
			     sizeof(msg))) {
		fprintf(stderr, "trace-dump: %s\n", msg);
		return DUMP_EXIT_FAIL;
	}
	struct trcfile_writer_opts o = {.compress_threads = threads};
	uint64_t stored = 0;
	int err = trcfile_compact(path, of.path, &o,
				  isatty(STDERR_FILENO) ? dump__compact_progress : NULL, NULL,
				  &stored, msg, sizeof(msg));
	if (!err)
		err = cli_outfile_commit(&of, msg, sizeof(msg));
	else
		cli_outfile_abort(&of);
	if (err) {
		fprintf(stderr, "trace-dump: %s\n", msg);
		return DUMP_EXIT_FAIL;
	}
	char x[32], y[32];
	stat(path, &a);
	stat(out, &b);
	fprintf(stderr, "trace-dump compact: %s: %llu stored %s compressed; %s -> %s\n", out,
		(unsigned long long)stored, stored == 1 ? "chunk" : "chunks",
		cli_fmt_bytes(x, sizeof(x), (uint64_t)a.st_size),
		cli_fmt_bytes(y, sizeof(y), (uint64_t)b.st_size));
	return DUMP_EXIT_OK;
}
