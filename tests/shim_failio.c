/* shim_failio.c - LD_PRELOAD shim for the tests: makes writing or closing a trace file (a file
 * whose name ends in ".trc") fail the way a sick disk would, to check what trace-run does then
 * (tests/test_e2e_write_fail.c). Other files are left alone, so the traced program and
 * trace-run's own descriptors behave normally. TRC_TEST_FAILIO selects the failure:
 *   fsync            fsync of the trace (or of the compaction's new trace) fails with EIO
 *   close            close of the trace closes it, then reports EIO
 *   synclog:PATH     nothing fails; each fsync of a trace (or of the compaction's new trace,
 *                    or of a directory: "directory")
 *                    appends "trace" (or "compacting") to the file PATH
 *   footer           the write of the footer and trailer (the buffer ending in "TRCEND\r\n")
 *                    fails with EIO
 *   eio:N            every write that reaches past byte N of the trace fails with EIO
 *   enospc:N         the same with ENOSPC (a disk that is full at N bytes)
 * Built without sanitizers (it is preloaded into sanitized and plain programs alike). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* What fd is: a trace, the file trace-run's compaction writes to replace one (unnamed,
 * O_TMPFILE: "DIR/#INO (deleted)", or T.trc.compacting.XXXXXX where there is no O_TMPFILE:
 * the sync of a trace with stored chunks is that file's), or anything else. The writer's
 * spill files and the background compressor's side file are unnamed too, and never synced:
 * an unnamed file counts only for fsync (unnamed_too). */
enum failio_file { FAILIO_OTHER, FAILIO_TRACE, FAILIO_COMPACTING, FAILIO_DIR };

static enum failio_file failio__file(int fd, bool unnamed_too)
{
	char link[64], path[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n < 4)
		return FAILIO_OTHER;
	path[n] = '\0';
	if (strstr(path, ".trc.compacting."))
		return FAILIO_COMPACTING;
	const char *slash = strrchr(path, '/');
	if (unnamed_too && slash && slash[1] == '#' && n > 10 &&
	    !strcmp(path + n - 10, " (deleted)"))
		return FAILIO_COMPACTING;
	return !strcmp(path + n - 4, ".trc") ? FAILIO_TRACE : FAILIO_OTHER;
}

static bool failio__is_trace(int fd)
{
	return failio__file(fd, false) != FAILIO_OTHER;
}

static bool failio__mode(const char *m)
{
	const char *e = getenv("TRC_TEST_FAILIO");
	return e && !strncmp(e, m, strlen(m));
}

/* synclog:PATH: appends "trace", "compacting" or "directory" to PATH, a line per fsync of such
 * a file. */
static void failio__log_sync(enum failio_file file, const char *log)
{
	const char *line = file == FAILIO_COMPACTING ? "compacting\n"
			   : file == FAILIO_DIR	     ? "directory\n"
						     : "trace\n";
	int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (out >= 0) {
		if (write(out, line, strlen(line)) < 0)
			perror("shim_failio: synclog");
		close(out);
	}
}

/* The errno a write to [off, off + len) of a trace gets, or 0. */
static int failio__write_error(int fd, const void *buf, size_t len, off_t off)
{
	const char *e = getenv("TRC_TEST_FAILIO");
	if (!e || !failio__is_trace(fd))
		return 0;
	if (!strcmp(e, "footer"))
		return len >= 8 && !memcmp((const char *)buf + len - 8, "TRCEND\r\n", 8) ? EIO : 0;
	int err = !strncmp(e, "eio:", 4) ? EIO : !strncmp(e, "enospc:", 7) ? ENOSPC : 0;
	if (!err)
		return 0;
	unsigned long long limit = strtoull(strchr(e, ':') + 1, NULL, 10);
	return (unsigned long long)off + len > limit ? err : 0;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);
	if (!real)
		real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	int err = failio__write_error(fd, buf, len, off);
	if (err) {
		errno = err;
		return -1;
	}
	return real(fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite(fd, buf, len, off);
}

int fsync(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	enum failio_file file = failio__file(fd, true);
	if (failio__mode("fsync") && file != FAILIO_OTHER) {
		errno = EIO;
		return -1;
	}
	struct stat st;
	if (file == FAILIO_OTHER && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		file = FAILIO_DIR; /* logged, never failed */
	if (failio__mode("synclog:") && file != FAILIO_OTHER)
		failio__log_sync(file, getenv("TRC_TEST_FAILIO") + strlen("synclog:"));
	return real(fd);
}

int close(int fd)
{
	static int (*real)(int);
	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "close");
	bool fail = failio__mode("close") && failio__is_trace(fd);
	int rc = real(fd);
	if (fail && rc == 0) {
		errno = EIO;
		return -1;
	}
	return rc;
}
