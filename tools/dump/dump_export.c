/* dump_export.c - the sink and the namer trace-dump gives src/export (dump_export.h).
 *
 * Threads: trace-dump's one thread.
 */
#include <errno.h>
#include <unistd.h>

#include "dump_export.h"

static int dump__export_write(void *ctx, const void *p, size_t n)
{
	struct dump_export_out *out = ctx;
	if (out->of && !out->opened) {
		if (dump_outfile_next(out->of)) {
			out->failed = true;
			return -EIO;
		}
		out->opened = true;
	}
	if (out->direct && n >= DUMP_OUT_BYTES / 2) {
		dump_flush();
		dump__write_direct(p, n);
	} else {
		dump_write(p, n);
	}
	return 0;
}

struct export_sink dump_export_sink(struct dump_export_out *out)
{
	return (struct export_sink){.write = dump__export_write, .ctx = out};
}

static size_t dump__export_name(void *ctx, const struct trcfile_reader *r, uint32_t pid,
				uint64_t addr, char *buf, size_t len)
{
	(void)ctx;
	return dump_func_name(r, pid, addr, buf, len);
}

struct export_namer dump_export_namer(void)
{
	return (struct export_namer){.name = dump__export_name};
}

static int dump__export_fd_write(void *ctx, const void *p, size_t n)
{
	int fd = *(const int *)ctx;
	const char *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

struct export_sink dump_export_fd_sink(int *fd)
{
	return (struct export_sink){.write = dump__export_fd_write, .ctx = fd};
}
