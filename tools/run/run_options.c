/* run_options.c - trace-run's command line. Every bad value is a usage error (exit 2) with a
 * one-line message naming it; nothing is started before the whole line is valid. */
#include "run_options.h"
#include "cli_size.h"
#include "cli_usage.h"
#include "cli_version.h"
#include "trcfile.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 16 MiB: at 30 million events a second (16 bytes each) a ring holds 35 ms, enough to ride out
 * the tens of milliseconds a scheduler can leave the recorder's drain thread sharing a core
 * with the traced program on a small machine (measured on 2 cores: 4 MiB rings lost events in
 * about one run in three at that rate, 16 MiB in none of eight). A ring's pages are faulted
 * in only as it is written, so a quiet thread costs 64 KiB, a busy one the whole ring; all of
 * it is excluded from the program's RSS and shown beside it. */
#define RUN_DEFAULT_BUFFER (16ull << 20)
#define RUN_MIN_BUFFER (64ull << 10)
#define RUN_MAX_BUFFER (1ull << 30)
#define RUN_DEFAULT_THREADS 256u
#define RUN_MAX_THREADS 4096u

static const char run__usage[] =
	"usage: trace-run [OPTIONS] [--] COMMAND [ARG...]\n"
	"Runs COMMAND and records its events and its memory (RSS) over time into one\n"
	"trace file.\n"
	"\n"
	"  -o, --output FILE         trace file (default: <command>.<pid>.trc)\n"
	"      --rss-interval DURATION\n"
	"                            RSS sampling interval, 1ms to 1h (default 100ms),\n"
	"                            with a unit: ns, us, ms, s, m or h (a bare number\n"
	"                            is an error). Shorter shows brief peaks in the\n"
	"                            series but costs more CPU in the recorder (statm:\n"
	"                            ~1.5 us a read; smaps_rollup: ~13 us per MiB\n"
	"                            resident, and it stalls the program's page faults\n"
	"                            while it reads). The exact peak comes from the\n"
	"                            kernel whatever the interval.\n"
	"      --rss-source SOURCE   statm (default, fast), status (adds VmHWM and the\n"
	"                            anon/file/shmem split), smaps_rollup (exact Rss and\n"
	"                            Pss, slow), both (statm and smaps_rollup, to\n"
	"                            compare them)\n"
	"      --no-rss              do not sample RSS\n"
	"      --buffer-size SIZE    the most one thread's ring grows to, a power of two\n"
	"                            from 64K to 1G (default 16M); rings start at 64K\n"
	"                            and grow only while the drain lags behind them\n"
	"      --ring-budget SIZE    ring memory all threads share beyond 1M each\n"
	"                            (default 64M): rings grow only as far as the drain\n"
	"                            lags\n"
	"      --when-full wait|drop what a thread whose ring is full does. wait\n"
	"                            (default): every event is recorded, the program\n"
	"                            is slowed while the drain falls behind, and the\n"
	"                            summary says by how much. drop: the program's\n"
	"                            timing is untouched, events are lost and counted\n"
	"                            exactly (LOST records)\n"
	"      --alloc-stacks all|sample=SIZE|none\n"
	"                            call stacks of allocations (preload library).\n"
	"                            all (default): every allocation's, exact.\n"
	"                            sample=SIZE: about one per SIZE bytes allocated\n"
	"                            (Poisson; every allocation of SIZE or more), bytes\n"
	"                            per stack estimated without bias; counts and sizes\n"
	"                            of all allocations stay exact. none: no stacks\n"
	"      --stack-depth N       the most frames kept of a stack, 1 to 256\n"
	"                            (default 64): deeper stacks keep their innermost\n"
	"                            frames and are marked truncated\n"
	"      --max-threads N       ring slots: threads recording at once, 1 to 4096\n"
	"                            (default 256)\n"
	"      --compression-level N zstd level 1..19 (default 1)\n"
	"      --compress-threads N  compression threads, 1 to 64 (default 1)\n"
	"      --keep-stored         when compression fell behind the program, chunks\n"
	"                            were written uncompressed (stored); by default they\n"
	"                            are compressed before trace-run exits, on every\n"
	"                            core; this leaves them (trace-dump reads them;\n"
	"                            trace-dump compact compresses them later). The\n"
	"                            compressed copy replaces FILE (a symlink's target)\n"
	"                            whole, with its owner, mode and ACL, when FILE is a\n"
	"                            regular file of one link; else they are left, with\n"
	"                            a warning\n"
	"      --clock auto|gettime  timestamps: auto uses the TSC when it is invariant\n"
	"      --no-follow           end when the command itself exits; by default\n"
	"                            trace-run follows the whole process tree it starts\n"
	"                            (daemons that detach included) until the last of\n"
	"                            them exits; Ctrl-C ends the recording at once and\n"
	"                            names those still running\n"
	"      --no-preload          do not put libtrc-preload.so in LD_PRELOAD (no\n"
	"                            allocation or function events unless the program\n"
	"                            links libtrc)\n"
	"      --progress, --no-progress\n"
	"                            live progress on stderr (default: when it is a\n"
	"                            terminal)\n"
	"  -q, --quiet               no report at the end\n"
	"  -v, --verbose             the report also says how many chunks were written\n"
	"                            uncompressed while compression was behind, and how\n"
	"                            they were compressed (by default said only when\n"
	"                            compressing them took a second at exit)\n"
	"  -h, --help                this help\n"
	"  -V, --version             the version\n"
	"\n"
	"Exit status: the command's own (128+N if it was killed by signal N); 2 usage\n"
	"error; 126 command not executable; 127 command not found; 1 the recorder\n"
	"failed, or writing or closing the trace failed. A full disk (or ulimit -f)\n"
	"does not stop the command: what the disk does not take is counted lost in the\n"
	"trace (reason disk_full, by thread), and the status is the command's.\n"
	"\n"
	"Environment: TRC_PRELOAD=PATH[:PATH...] the libraries to preload instead of\n"
	"the libtrc-preload.so found beside trace-run; TRC_NO_PLACE=1 leaves the\n"
	"recorder's threads wherever the scheduler puts them (by default they keep off\n"
	"the CPU of the program's busiest thread while a CPU is spare).\n";

int run_parse_size(const char *text, uint64_t *out)
{
	return cli_parse_size(text, out);
}

static int run__parse_uint(const char *text, unsigned long lo, unsigned long hi, unsigned long *out)
{
	if (!text || !*text || *text == '-' || *text == '+')
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long v = strtoul(text, &end, 10);
	if (*end || end == text)
		return -EINVAL;
	if (errno == ERANGE || v < lo || v > hi)
		return -ERANGE;
	*out = v;
	return 0;
}

#define run__usage_error(...) cli_usage_error("trace-run", __VA_ARGS__)

enum {
	OPT_RSS_INTERVAL = 256,
	OPT_RSS_SOURCE,
	OPT_NO_RSS,
	OPT_BUFFER_SIZE,
	OPT_RING_BUDGET,
	OPT_MAX_THREADS,
	OPT_ZSTD_LEVEL,
	OPT_COMPRESS_THREADS,
	OPT_CLOCK,
	OPT_NO_PRELOAD,
	OPT_KEEP_STORED,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_WHEN_FULL,
	OPT_ALLOC_STACKS,
	OPT_STACK_DEPTH,
	OPT_NO_FOLLOW,
};

int run_options_parse(int argc, char **argv, struct run_options *o)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"rss-interval", required_argument, NULL, OPT_RSS_INTERVAL},
		{"rss-source", required_argument, NULL, OPT_RSS_SOURCE},
		{"no-rss", no_argument, NULL, OPT_NO_RSS},
		{"buffer-size", required_argument, NULL, OPT_BUFFER_SIZE},
		{"ring-budget", required_argument, NULL, OPT_RING_BUDGET},
		{"when-full", required_argument, NULL, OPT_WHEN_FULL},
		{"alloc-stacks", required_argument, NULL, OPT_ALLOC_STACKS},
		{"stack-depth", required_argument, NULL, OPT_STACK_DEPTH},
		{"max-threads", required_argument, NULL, OPT_MAX_THREADS},
		{"compression-level", required_argument, NULL, OPT_ZSTD_LEVEL},
		{"compress-threads", required_argument, NULL, OPT_COMPRESS_THREADS},
		{"clock", required_argument, NULL, OPT_CLOCK},
		{"no-preload", no_argument, NULL, OPT_NO_PRELOAD},
		{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
		{"keep-stored", no_argument, NULL, OPT_KEEP_STORED},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0, 0, 0, 0},
	};
	*o = (struct run_options){
		.rss_enabled = true,
		.rss_interval_ns = 100000000ull,
		.rss_source = TRC_RSS_STATM,
		.buffer_bytes = RUN_DEFAULT_BUFFER,
		.max_threads = RUN_DEFAULT_THREADS,
		.zstd_level = 1,
		.compress_threads = 1,
		.progress = -1,
		.clock = RUN_CLOCK_AUTO,
		.preload = true,
		.alloc_stacks = "all",
		.stack_depth = TRC_STACK_DEPTH_DEFAULT,
		.follow = true,
	};
	char msg[320];
	unsigned long n;
	int c;

	opterr = 0;
	/* "+" stops at the first non-option: the command's own options are its own. */
	while ((c = getopt_long(argc, argv, "+:o:qvhV", longopts, NULL)) != -1) {
		if (cli_value_missing(optarg, argv, msg, sizeof(msg)))
			return run__usage_error("%s", msg);
		switch (c) {
		case 'o':
			if (!*optarg)
				return run__usage_error("empty output file name");
			o->output = optarg;
			break;
		case OPT_RSS_INTERVAL:
			if (duration_parse_ns(optarg, TRC_RSS_INTERVAL_MIN_NS,
					      TRC_RSS_INTERVAL_MAX_NS, &o->rss_interval_ns, msg,
					      sizeof(msg)))
				return run__usage_error("--rss-interval: %s", msg);
			break;
		case OPT_RSS_SOURCE:
			if (trcfile_rss_source_parse(optarg, &o->rss_source))
				return run__usage_error(
					"--rss-source: unknown source \"%s\" (expected %s)", optarg,
					"statm, status, smaps_rollup or both");
			break;
		case OPT_NO_RSS:
			o->rss_enabled = false;
			break;
		case OPT_BUFFER_SIZE: {
			uint64_t b;
			if (run_parse_size(optarg, &b) || b < RUN_MIN_BUFFER ||
			    b > RUN_MAX_BUFFER || (b & (b - 1)))
				return run__usage_error(
					"--buffer-size: invalid size \"%s\" (expected %s)", optarg,
					"a power of two from 64K to 1G, e.g. 4M");
			o->buffer_bytes = b;
			o->buffer_bytes_given = true;
			break;
		}
		case OPT_RING_BUDGET:
			if (run_parse_size(optarg, &o->ring_budget_bytes) || !o->ring_budget_bytes)
				return run__usage_error(
					"--ring-budget: invalid size \"%s\" (expected %s)", optarg,
					"a size above 0, e.g. 64M");
			break;
		case OPT_WHEN_FULL:
			if (strcmp(optarg, "wait") != 0 && strcmp(optarg, "drop") != 0)
				return run__usage_error(
					"--when-full: invalid value \"%s\" (expected %s)", optarg,
					"wait or drop");
			o->drop_when_full = strcmp(optarg, "drop") == 0;
			break;
		case OPT_ALLOC_STACKS: {
			uint64_t every;
			if (strcmp(optarg, "all") == 0 || strcmp(optarg, "none") == 0) {
				snprintf(o->alloc_stacks, sizeof(o->alloc_stacks), "%s", optarg);
			} else if (strncmp(optarg, "sample=", 7) == 0 &&
				   run_parse_size(optarg + 7, &every) == 0 && every > 0 &&
				   every <= (1ull << 40)) {
				snprintf(o->alloc_stacks, sizeof(o->alloc_stacks),
					 "sample=%" PRIu64, every);
			} else {
				return run__usage_error(
					"--alloc-stacks: invalid value \"%s\" (expected %s)", optarg,
					"all, none or sample=SIZE with SIZE from 1 to 1T, e.g. "
					"sample=512K");
			}
			break;
		}
		case OPT_STACK_DEPTH:
			if (run__parse_uint(optarg, 1, TRC_STACK_DEPTH_MAX, &n))
				return run__usage_error(
					"--stack-depth: invalid value \"%s\" (expected %s)", optarg,
					"1 to 256");
			o->stack_depth = (uint32_t)n;
			break;
		case OPT_MAX_THREADS:
			if (run__parse_uint(optarg, 1, RUN_MAX_THREADS, &n))
				return run__usage_error(
					"--max-threads: invalid value \"%s\" (expected %s)", optarg,
					"1 to 4096");
			o->max_threads = (uint32_t)n;
			o->max_threads_given = true;
			break;
		case OPT_ZSTD_LEVEL:
			if (run__parse_uint(optarg, 1, 19, &n))
				return run__usage_error(
					"--compression-level: invalid level \"%s\" (expected %s)",
					optarg, "1 to 19");
			o->zstd_level = (int)n;
			break;
		case OPT_COMPRESS_THREADS:
			if (run__parse_uint(optarg, 1, 64, &n))
				return run__usage_error(
					"--compress-threads: invalid value \"%s\" (expected %s)",
					optarg, "1 to 64");
			o->compress_threads = (unsigned)n;
			break;
		case OPT_CLOCK:
			if (!strcmp(optarg, "auto"))
				o->clock = RUN_CLOCK_AUTO;
			else if (!strcmp(optarg, "gettime"))
				o->clock = RUN_CLOCK_GETTIME;
			else
				return run__usage_error(
					"--clock: unknown clock \"%s\" (expected %s)", optarg,
					"auto or gettime");
			break;
		case OPT_NO_PRELOAD:
			o->preload = false;
			break;
		case OPT_NO_FOLLOW:
			o->follow = false;
			break;
		case OPT_KEEP_STORED:
			o->keep_stored = true;
			break;
		case OPT_PROGRESS:
			o->progress = 1;
			break;
		case OPT_NO_PROGRESS:
			o->progress = 0;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			fputs(run__usage, stdout);
			return -1;
		case 'V':
			puts("trace-run " CLI_VERSION);
			return -1;
		default: /* '?' or ':' */
			cli_refused_option(c, argv, longopts, msg, sizeof(msg));
			return run__usage_error("%s", msg);
		}
	}
	if (optind >= argc)
		return run__usage_error("no command given (usage: trace-run [OPTIONS] [--] COMMAND "
					"[ARG...])");
	o->argv = argv + optind;
	o->argc = argc - optind;
	return 0;
}
