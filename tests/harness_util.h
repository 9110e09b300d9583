/* harness_util.h - what a test needs from the harness's limits (tests/harness_limits.c).
 *
 * Every suite runs under a file-size limit (RLIMIT_FSIZE, soft limit only). A few files a test
 * creates in its own process are large without writing the disk: a session's memfd (tmpfs,
 * sized for every ring it could hold, touched only where written) and a sparse file's hole.
 * Around those, the test lifts its soft limit to the hard one and puts it back after, as
 * trace-run does around its own session. Only this test's worker process is affected. */
#ifndef TRC_HARNESS_UTIL_H
#define TRC_HARNESS_UTIL_H

#include <sys/resource.h>

/* Lifts the file-size soft limit to the hard limit; returns the limit to restore. */
static inline struct rlimit hu_fsize_lift(void)
{
	struct rlimit saved = {RLIM_INFINITY, RLIM_INFINITY};
	if (getrlimit(RLIMIT_FSIZE, &saved) == 0) {
		struct rlimit up = {saved.rlim_max, saved.rlim_max};
		setrlimit(RLIMIT_FSIZE, &up);
	}
	return saved;
}

static inline void hu_fsize_restore(struct rlimit saved)
{
	setrlimit(RLIMIT_FSIZE, &saved);
}

#endif /* TRC_HARNESS_UTIL_H */
