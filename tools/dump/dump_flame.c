/* dump_flame.c - `trace-dump flame`: folded stacks for flame graphs.
 *
 * Purpose: one line per distinct stack, "frame;frame;frame WEIGHT", the text that
 * flamegraph.pl, inferno-flamegraph and speedscope import. Frames are spans (by name) and
 * functions (by name from the modules' symbol tables, else module+offset), outermost first,
 * per thread, under a frame naming the thread's process ("prog (pid 42)") unless
 * --merge-processes; the weight is the time the stack was the thread's innermost
 * (nanoseconds) or, with --weight alloc, the bytes allocated while it was. The folding is
 * src/analysis/flame.c; this file parses options and prints.
 *
 * Threads: single-threaded.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump_common.h"
#include "dump_symbols.h"
#include "flame.h"

static const char dump__flame_help[] =
	"usage: trace-dump flame [--weight time|alloc] [--merge-processes] FILE > stacks.folded\n"
	"\n"
	"Folded stacks, one line per distinct stack: FRAME;FRAME;... WEIGHT, outermost\n"
	"frame first, lines in byte order. The outermost frame is the process, its\n"
	"program's file name and pid (\"prog (pid 42)\"; \"pid 42\" when the trace does not\n"
	"say what it ran); then the spans and functions open on a thread (functions by\n"
	"name from the modules' symbol tables, else module+offset; ';' inside a name is\n"
	"written ':'). A forked child's calls nest under the frames it inherited from its\n"
	"parent, in its own tree. Open with flamegraph.pl, inferno-flamegraph or speedscope.\n"
	"\n"
	"  --weight time   (default) nanoseconds: the time between two records of a thread\n"
	"                  goes to the stack open between them (time with no frame open is\n"
	"                  not counted)\n"
	"  --weight alloc  bytes allocated while the stack was open; allocations made with\n"
	"                  no frame open are the frame \"" FLAME_OUTSIDE "\" of their process\n"
	"  --merge-processes\n"
	"                  no process frame: the same stack in several processes is one\n"
	"                  line\n"
	"  -h, --help      this text\n"
	"\n"
	"Ends that close no open frame are ignored and counted on stderr.\n";

static void dump__flame_line(void *ctx, const char *stack, size_t len, uint64_t weight)
{
	(void)ctx;
	dump_write(stack, len);
	dump_char(' ');
	dump_u64(weight);
	dump_char('\n');
}

int dump_flame_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"weight", required_argument, NULL, 'w'},
		{"merge-processes", no_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	enum flame_weight weight = FLAME_TIME;
	bool merge = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (dump_value_missing(cmd, argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 'w':
			if (strcmp(optarg, "time") == 0)
				weight = FLAME_TIME;
			else if (strcmp(optarg, "alloc") == 0)
				weight = FLAME_ALLOC;
			else
				return dump_usage_error(
					cmd, "--weight: expected time or alloc, got \"%s\"",
					optarg);
			break;
		case 'm':
			merge = true;
			break;
		case 'h':
			fputs(dump__flame_help, stdout);
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
	int rc = DUMP_EXIT_FAIL;
	struct flame *f = flame_new(weight);
	struct trc_record *recs = malloc(256 * sizeof(*recs));
	struct sym_resolver *syms = NULL;
	if (!f || !recs) {
		dump_error("%s: out of memory", path);
		goto out;
	}
	if (!merge)
		flame_root_processes(f);
	flame_use_stacks(f, r);
	/* Stacks are per thread: each thread stream alone, in its own order (no merge). */
	for (unsigned s = 0; s < trcfile_reader_stream_count(r); s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(r, s);
		if (si->kind != TRC_STREAM_THREAD)
			continue;
		struct trcfile_cursor *cur = trcfile_cursor_new(r, s);
		if (!cur) {
			dump_error("%s: out of memory", path);
			goto out;
		}
		int n;
		while ((n = trcfile_cursor_read(cur, recs, 256)) > 0) {
			int i = 0;
			while (i < n && flame_add(f, s, si, &recs[i]) == 0)
				i++;
			if (i < n) {
				n = -ENOMEM;
				break;
			}
		}
		trcfile_cursor_free(cur);
		if (n < 0) {
			dump_error("%s: %s", path,
				   n == -ENOMEM ? "out of memory" : trcfile_reader_errmsg(r));
			goto out;
		}
	}
	syms = dump_symbols_new(r);
	if (flame_fold(f, r, syms, dump__flame_line, NULL) != 0) {
		dump_flush();
		dump_error("%s: out of memory", path);
		goto out;
	}
	dump_flush();
	struct flame_stats st;
	flame_get_stats(f, &st);
	if (st.unmatched_ends)
		fprintf(stderr, "trace-dump flame: %" PRIu64 " %s closed no open frame (ignored)\n",
			st.unmatched_ends, st.unmatched_ends == 1 ? "end" : "ends");
	if (st.folded_frames)
		fprintf(stderr,
			"trace-dump flame: %" PRIu64
			" frames beyond %u distinct stacks were folded "
			"into their callers\n",
			st.folded_frames, FLAME_MAX_NODES);
	rc = DUMP_EXIT_OK;
out:
	sym_resolver_free(syms);
	free(recs);
	flame_free(f);
	if (rc == DUMP_EXIT_OK)
		dump_close(r, path);
	else
		dump_reader_free(r);
	return rc;
}
