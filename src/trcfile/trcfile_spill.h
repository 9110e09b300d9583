/* trcfile_spill.h - a byte area the writer keeps out of its memory: the footer's entries of
 * streams that ended and of chunks written, which grow with every thread ever traced, go to an unlinked temporary file and are copied into the footer at close.
 *
 * The file is made with O_TMPFILE in the trace's directory (else in $TMPDIR or /tmp; else
 * mkstemp and unlink there); when no file can be made the area lives in memory, as before,
 * and so does it from the moment its file finds the disk full (ENOSPC, EFBIG: the disk the
 * trace fills too), so that a full disk's trace can still get its footer.
 * Page cache, not the recorder's RSS, holds what is written.
 *
 * Threads: none; the owner serialises calls. Errors: -errno.
 */
#ifndef TRC_TRCFILE_SPILL_H
#define TRC_TRCFILE_SPILL_H

#include <stddef.h>
#include <stdint.h>

struct trcfile__spill {
	int fd; /* -1: in memory */
	uint8_t *mem;
	uint64_t len; /* bytes written up to (holes read as zeros) */
	uint64_t cap; /* of mem */
};

/* An empty area; a file in dir (NULL: $TMPDIR or /tmp) when one can be made. */
void trcfile__spill_init(struct trcfile__spill *sp, const char *dir);
void trcfile__spill_free(struct trcfile__spill *sp);
/* Writes n bytes at off (the area grows to cover them). 0 or -errno. */
int trcfile__spill_pwrite(struct trcfile__spill *sp, const void *buf, size_t n, uint64_t off);
/* Reads n bytes at off; off + n <= len. 0 or -errno. */
int trcfile__spill_pread(const struct trcfile__spill *sp, void *buf, size_t n, uint64_t off);

#endif /* TRC_TRCFILE_SPILL_H */
