/* trcfile_spill.c - the writer's out-of-memory byte area (trcfile_spill.h). */
#include "trcfile_spill.h"
#include "pio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int trcfile__spill_file(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/.trc-spill.XXXXXX", dir) >= (int)sizeof(path))
		return -1;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

void trcfile__spill_init(struct trcfile__spill *sp, const char *dir)
{
	memset(sp, 0, sizeof(*sp));
	sp->fd = dir ? trcfile__spill_file(dir) : -1;
	if (sp->fd < 0) {
		const char *tmp = getenv("TMPDIR");
		sp->fd = trcfile__spill_file(tmp && *tmp ? tmp : "/tmp");
	}
}

void trcfile__spill_free(struct trcfile__spill *sp)
{
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp->mem);
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
}

/* The spill's disk is full (or its file size limit reached: the trace's own, when the disk it
 * shares filled): what the file holds moves to memory, where the rest goes too. Its size is a
 * part of the footer's, small beside the trace. 0 or -errno. */
static int trcfile__spill_to_memory(struct trcfile__spill *sp)
{
	uint64_t cap = 4096;
	while (cap < sp->len)
		cap *= 2;
	uint8_t *m = calloc(1, cap);
	if (!m)
		return -ENOMEM;
	int err = sp->len ? trcfile__spill_pread(sp, m, sp->len, 0) : 0;
	if (err) {
		free(m);
		return err;
	}
	close(sp->fd);
	sp->fd = -1;
	sp->mem = m;
	sp->cap = cap;
	return 0;
}

int trcfile__spill_pwrite(struct trcfile__spill *sp, const void *buf, size_t n, uint64_t off)
{
	uint64_t end = off + n;
	if (sp->fd >= 0) {
		int err = pio_pwrite_all(sp->fd, buf, n, off);
		if ((err == -ENOSPC || err == -EFBIG) && trcfile__spill_to_memory(sp) == 0)
			return trcfile__spill_pwrite(sp, buf, n, off);
		if (err)
			return err;
	} else {
		if (end > sp->cap) {
			uint64_t cap = sp->cap ? 2 * sp->cap : 4096;
			while (cap < end)
				cap *= 2;
			uint8_t *m = realloc(sp->mem, cap);
			if (!m)
				return -ENOMEM;
			memset(m + sp->cap, 0, cap - sp->cap);
			sp->mem = m;
			sp->cap = cap;
		}
		memcpy(sp->mem + off, buf, n);
	}
	if (end > sp->len)
		sp->len = end;
	return 0;
}

int trcfile__spill_pread(const struct trcfile__spill *sp, void *buf, size_t n, uint64_t off)
{
	if (off + n > sp->len)
		return -EINVAL;
	if (sp->fd < 0) {
		memcpy(buf, sp->mem + off, n);
		return 0;
	}
	size_t got;
	int err = pio_pread_upto(sp->fd, buf, n, off, &got);
	if (!err && got < n) /* a hole at the end of the file: zeros */
		memset((uint8_t *)buf + got, 0, n - got);
	return err;
}
