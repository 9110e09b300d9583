/* harness_limits.c - limits every Criterion suite runs under, linked into each tests/test_*
 * binary by the Makefile (one place, so a new suite gets them without asking).
 *
 * A file-size limit (RLIMIT_FSIZE): rlimits are inherited across fork and exec, so the suite's
 * workers and every tool they spawn (trace-run, trace-dump, the programs traced, sh, python3)
 * stop with SIGXFSZ/EFBIG at the limit instead of filling the disk when a bug makes a writer
 * loop. 1 GiB: five times the largest legitimate output measured (test_trcfile_stored's
 * 128 streams, 128-192 MiB when compression falls behind; protoc's decoding of a recorded
 * perfetto trace, 32-64 MiB; everything else under 32 MiB). Only the soft limit is set: the
 * files that are large without writing the disk (a session's memfd, a sparse file's hole) are
 * created with it lifted (tests/harness_util.h; trace-run lifts it for its own session). A
 * test that needs a smaller limit sets its own in its child (lowering is always allowed); a
 * limit already lower than this one (ulimit -f) is kept. TRC_TEST_FSIZE_MB overrides it (for
 * measuring).
 *
 * Runs as a constructor: in the Criterion runner and in each worker it starts, before any test. */
#include <stdlib.h>
#include <sys/resource.h>

#define HARNESS_FSIZE_LIMIT_MB 1024

__attribute__((constructor)) static void harness_limit_file_size(void)
{
	rlim_t mb = HARNESS_FSIZE_LIMIT_MB;
	const char *env = getenv("TRC_TEST_FSIZE_MB");
	if (env && *env)
		mb = strtoull(env, NULL, 10);
	rlim_t bytes = mb << 20;
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0)
		return;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= bytes)
		return;
	rl.rlim_cur = bytes;
	setrlimit(RLIMIT_FSIZE, &rl);
}
