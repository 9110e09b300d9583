/* run_compact.c - trace-run's last step: compress the chunks the recorder wrote stored.
 *
 * Purpose: while the program ran, compression never held the drain back: a chunk the
 * compressors could not take at once went to the file stored (FORMAT.md "Stored chunks").
 * Before trace-run exits those are compressed (trcfile_compact) on every core, into an unnamed
 * temporary file beside the trace that is then renamed over it (cli_outfile.h), so the trace
 * is whole at every moment: a trace-run killed here leaves the complete file with its stored
 * chunks and nothing beside it, which trace-dump reads as it is (and `trace-dump compact`
 * finishes). --keep-stored skips this.
 *
 * Only the file the writer opened is replaced, and only when a rename keeps what the user
 * named: through a symlink its target is (the link stays), with its owner, group, mode and
 * extended attributes (ACL). A file of several links, a device, a FIFO, or a name that no
 * longer names the file written is left as written, stored, with the warning saying why: a
 * copy written back in place would not be whole at every moment.
 * The chunks the recorder's background compressor already compressed while the program ran
 * (chunk_bgc.h) are taken from its side file as they are: only the rest is compressed here.
 * The compaction walks the trace's footer entry by entry, so trace-run's memory here does not
 * grow with the threads the program started (trcfile_compact.c).
 *
 * Threads: the caller's (trcfile_compact starts and joins its own compressor threads).
 */
#include "run_compact.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_outfile.h"
#include "trcfile.h"
#include "chunk_bgc.h"

struct run__compact_progress {
	uint64_t last_ns;
};

static uint64_t run__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void run__compact_progress(void *arg, uint64_t done, uint64_t total)
{
	struct run__compact_progress *p = arg;
	uint64_t now = run__now_ns();
	if (done != total && now - p->last_ns < 100000000ull)
		return;
	p->last_ns = now;
	fprintf(stderr, "\rtrace-run: compressing the stored chunks: %3u%% (%llu of %llu chunks)",
		total ? (unsigned)(done * 100 / total) : 100u, (unsigned long long)done,
		(unsigned long long)total);
	if (done == total)
		fputc('\n', stderr);
	fflush(stderr);
}

int run_compact(const char *output, const struct stat *written, int zstd_level, bool progress,
		const struct trcfile_bgc *bgc, struct run_compact_stats *st)
{
	struct cli_outfile of;
	char msg[512] = "";
	uint64_t t0 = run__now_ns();
	int err = cli_outfile_open(&of, AT_FDCWD, output, 0644,
				   CLI_OUTFILE_REPLACE_ONLY | CLI_OUTFILE_SYNCED, written,
				   "compacting", false, msg, sizeof(msg));
	if (err) {
		snprintf(st->why, sizeof(st->why), "%s", msg);
		return err;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct trcfile_writer_opts o = {
		.zstd_level = zstd_level,
		.compress_threads = cpus > 0 ? (unsigned)cpus : 1u,
	};
	struct run__compact_progress pr = {0};
	struct trcfile_bgc_use use = {0};
	/* Read from the resolved name, the file the writer opened (cli_outfile_open checked). */
	err = trcfile__compact_bgc(of.resolved, of.path, &o, bgc,
				   progress ? run__compact_progress : NULL, &pr, &use, msg,
				   sizeof(msg));
	/* Test hook: stop here, the compacted copy complete and not in place (a test kills). */
	if (!err && getenv("TRC_TEST_COMPACT_STOP"))
		raise(SIGSTOP);
	if (!err)
		err = cli_outfile_commit(&of, msg, sizeof(msg));
	else
		cli_outfile_abort(&of);
	st->seconds = (double)(run__now_ns() - t0) / 1e9;
	st->background = use.used;
	st->at_end = use.stored - use.used;
	st->refused = use.refused;
	snprintf(st->why, sizeof(st->why), "%s", !err ? "" : msg[0] ? msg : strerror(-err));
	return err;
}

void run_compact_warn(const char *output, const struct run_compact_stats *st)
{
	fprintf(stderr,
		"trace-run: warning: could not compress the stored chunks of %s (%s); the trace is "
		"complete as it is (trace-dump compact can try again)\n",
		output, st->why);
}
