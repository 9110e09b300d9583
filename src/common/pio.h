/* pio.h - whole-buffer positioned reads and writes, for every part that reads or writes a file
 * at an offset (the trace writer, its spill files, the reader, the background compressor and
 * the compaction): one loop that retries EINTR and short transfers. libc only.
 *
 * Threads: any; they touch only the descriptor given.
 */
#ifndef TRC_PIO_H
#define TRC_PIO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* Writes all of buf at off. 0 or -errno (a write that takes no byte counts as -EIO). */
static inline int pio_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Reads len bytes at off, or up to the end of the file: *got says how many (less than len
 * only at the end of the file; what the caller makes of that is its own rule). 0 or -errno
 * (*got then says how many were read before the error). */
static inline int pio_pread_upto(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
	uint8_t *p = buf;
	size_t done = 0;
	int rc = 0;
	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*got = done;
	return rc;
}

/* Reads exactly len bytes at off. 0 or -errno (the end of the file before len: -EIO). */
static inline int pio_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got;
	int rc = pio_pread_upto(fd, buf, len, off, &got);
	return rc ? rc : got == len ? 0 : -EIO;
}

#endif /* TRC_PIO_H */
