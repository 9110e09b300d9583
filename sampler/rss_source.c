/* rss_source.c - kept-open /proc files, pread from offset 0, parsed by rss_parse.c.
 *
 * Why pread at offset 0 works: statm, status and smaps_rollup are single_open seq_files, which
 * regenerate their whole text whenever a read starts at offset 0, so one pread of a buffer
 * large enough returns a fresh, complete file. A read that fills the buffer may have been cut
 * short: the buffer doubles (up to RSS__BUF_MAX) and the read is repeated, so the parsers
 * never see a truncated file as complete.
 *
 * Threads: a reader is used by one thread at a time. Invariants: fds are -1 or open with
 * O_CLOEXEC (the recorder forks and execs children; they must not inherit them).
 */
#include "rss_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RSS__BUF_INITIAL 4096u
#define RSS__BUF_MAX (1u << 20) /* a status file with a huge Groups line still fits */

enum rss__file { RSS__STATM, RSS__STATUS, RSS__ROLLUP, RSS__NFILES };

static const char *const rss__file_names[RSS__NFILES] = {"statm", "status", "smaps_rollup"};

struct rss_reader {
	pid_t pid;
	enum trc_rss_source source;
	uint64_t page_bytes;
	int fd[RSS__NFILES]; /* -1 for files this source does not read */
	char *buf;
	size_t buf_bytes;
};

/* Opens /proc/PID/<file>. Returns the fd or -errno; ENOENT (no such pid) becomes -ESRCH. */
static int rss__open_file(pid_t pid, enum rss__file f)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, rss__file_names[f]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

struct rss_reader *rss_reader_open(pid_t pid, enum trc_rss_source source, int *err)
{
	struct rss_reader *r;
	bool want[RSS__NFILES] = {false};
	long page;
	int e = 0;

	switch (source) {
	case TRC_RSS_STATM:
		want[RSS__STATM] = true;
		break;
	case TRC_RSS_STATUS:
		want[RSS__STATUS] = true;
		break;
	case TRC_RSS_SMAPS_ROLLUP:
		want[RSS__ROLLUP] = true;
		break;
	case TRC_RSS_BOTH:
		want[RSS__STATM] = want[RSS__ROLLUP] = true;
		break;
	default:
		e = -EINVAL;
		goto fail;
	}
	page = sysconf(_SC_PAGESIZE);
	if (pid <= 0 || page <= 0) {
		e = -EINVAL;
		goto fail;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		e = -ENOMEM;
		goto fail;
	}
	r->pid = pid;
	r->source = source;
	r->page_bytes = (uint64_t)page;
	for (int f = 0; f < RSS__NFILES; f++)
		r->fd[f] = -1;
	r->buf_bytes = RSS__BUF_INITIAL;
	r->buf = malloc(r->buf_bytes);
	if (!r->buf) {
		e = -ENOMEM;
		goto fail_close;
	}
	for (int f = 0; f < RSS__NFILES; f++) {
		if (!want[f])
			continue;
		r->fd[f] = rss__open_file(pid, (enum rss__file)f);
		if (r->fd[f] < 0) {
			e = r->fd[f];
			goto fail_close;
		}
	}
	return r;

fail_close:
	rss_reader_close(r);
fail:
	if (err)
		*err = e;
	return NULL;
}

void rss_reader_close(struct rss_reader *r)
{
	if (!r)
		return;
	for (int f = 0; f < RSS__NFILES; f++)
		if (r->fd[f] >= 0)
			close(r->fd[f]);
	free(r->buf);
	free(r);
}

/* Reads the whole file f into r->buf. Returns its length or -errno (-ESRCH when gone). */
static ssize_t rss__pread_all(struct rss_reader *r, enum rss__file f)
{
	for (;;) {
		ssize_t n = pread(r->fd[f], r->buf, r->buf_bytes, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ENOENT ? -ESRCH : -errno;
		}
		if ((size_t)n < r->buf_bytes)
			return n;
		/* Filled the buffer: the text may go on. Grow and read again from the start. */
		if (r->buf_bytes >= RSS__BUF_MAX)
			return -EFBIG;
		char *bigger = realloc(r->buf, r->buf_bytes * 2);
		if (!bigger)
			return -ENOMEM;
		r->buf = bigger;
		r->buf_bytes *= 2;
	}
}

static int rss__read_statm(struct rss_reader *r, struct trc_rss_figures *fig)
{
	struct rss_statm st;
	ssize_t n = rss__pread_all(r, RSS__STATM);
	int err;

	if (n < 0)
		return (int)n;
	err = rss_parse_statm(r->buf, (size_t)n, r->page_bytes, &st);
	if (err)
		return err;
	/* A zombie's statm is all zeros: its memory is gone, so is the process for us. A live
	 * process always has a mapping, so a zero size is never a real figure. */
	if (st.size_bytes == 0)
		return -ESRCH;
	fig->rss_bytes = st.resident_bytes;
	return 0;
}

static int rss__read_status(struct rss_reader *r, struct trc_rss_figures *fig)
{
	struct rss_status st;
	ssize_t n = rss__pread_all(r, RSS__STATUS);
	int err;

	if (n < 0)
		return (int)n;
	err = rss_parse_status(r->buf, (size_t)n, &st);
	if (err)
		return err;
	fig->rss_bytes = st.rss_bytes;
	fig->hwm_bytes = st.hwm_bytes;
	fig->anon_bytes = st.anon_bytes;
	fig->file_bytes = st.file_bytes;
	fig->shmem_bytes = st.shmem_bytes;
	fig->flags |= TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT;
	return 0;
}

static int rss__read_rollup(struct rss_reader *r, struct trc_rss_figures *fig)
{
	struct rss_rollup ro;
	ssize_t n = rss__pread_all(r, RSS__ROLLUP);
	int err;

	if (n == -ESRCH) {
		/* The file holds the mm it was opened on; after an exec that mm is gone while
		 * the process lives. Reopen once: a gone process fails the open or the read. */
		int fd = rss__open_file(r->pid, RSS__ROLLUP);
		if (fd < 0)
			return fd;
		close(r->fd[RSS__ROLLUP]);
		r->fd[RSS__ROLLUP] = fd;
		n = rss__pread_all(r, RSS__ROLLUP);
	}
	if (n < 0)
		return (int)n;
	/* A process whose memory is already released prints nothing: gone, not 0 bytes. */
	if (n == 0)
		return -ESRCH;
	err = rss_parse_smaps_rollup(r->buf, (size_t)n, &ro);
	if (err)
		return err;
	fig->rss_exact_bytes = ro.rss_bytes;
	fig->pss_bytes = ro.pss_bytes;
	fig->flags |= TRC_RSS_HAS_EXACT;
	return 0;
}

int rss_reader_read(struct rss_reader *r, struct trc_rss_figures *out)
{
	struct trc_rss_figures fig = {0};
	int err = 0;

	if (!r || !out)
		return -EINVAL;
	switch (r->source) {
	case TRC_RSS_STATM:
		err = rss__read_statm(r, &fig);
		break;
	case TRC_RSS_STATUS:
		err = rss__read_status(r, &fig);
		break;
	case TRC_RSS_SMAPS_ROLLUP:
		err = rss__read_rollup(r, &fig);
		fig.rss_bytes = fig.rss_exact_bytes;
		break;
	case TRC_RSS_BOTH:
		err = rss__read_statm(r, &fig);
		if (!err)
			err = rss__read_rollup(r, &fig);
		break;
	default:
		err = -EINVAL;
	}
	if (err)
		return err;
	*out = fig;
	return 0;
}
