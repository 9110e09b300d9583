/* procinfo.c - the PROCESS and MODULE records a process writes when its first thread
 * claims a ring: pid, ppid and command line (/proc/self/cmdline), and every executable file
 * mapping (/proc/self/maps), so trace-dump can tell processes apart and name the addresses of
 * FUNC_ENTER/EXIT records.
 *
 * Slow path, on the claiming thread, which holds its ring with ok == 0 (trc.h). No malloc (the
 * preload library may be hooking it): fixed buffers on the stack, read(2) in chunks, lines
 * longer than the buffer are skipped. Records too large for the ring are dropped and counted
 * by the ring like any other. Modules mapped later (dlopen) are not reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

static int trc__open_proc(const char *path)
{
	int fd;
	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd;
}

static ssize_t trc__read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static void trc__emit_process(struct trc__thread *t, unsigned mode)
{
	char cmd[TRC_CMDLINE_MAX];
	uint32_t len = 0;
	int fd = trc__open_proc("/proc/self/cmdline");
	if (fd >= 0) {
		ssize_t n = trc__read_full(fd, cmd, sizeof(cmd));
		close(fd);
		len = n > 0 ? (uint32_t)n : 0;
	}
	struct trc_ring_process *r =
		trc__reserve(t, TRC_TAG(TRC_REC_PROCESS, 0), (uint32_t)sizeof(*r) + len);
	if (!r)
		return;
	r->ts = trc__now(mode);
	r->pid = (uint32_t)trc__rt.pid;
	r->ppid = (uint32_t)getppid();
	r->cmdline_len = len;
	memcpy(r + 1, cmd, len);
	ring_commit_sp(&t->prod);
}

static uint64_t trc__hex(const char **s)
{
	uint64_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* One line of /proc/self/maps: "start-end perms offset dev inode   path". */
static void trc__emit_module_line(struct trc__thread *t, unsigned mode, const char *line,
				  size_t len)
{
	const char *s = line, *end = line + len;
	uint64_t start = trc__hex(&s);
	if (s >= end || *s++ != '-')
		return;
	uint64_t stop = trc__hex(&s);
	if (end - s < 6 || s[0] != ' ' || s[3] != 'x')
		return;
	s += 6;
	uint64_t offset = trc__hex(&s);
	/* skip " dev inode", then spaces up to the path */
	for (int field = 0; field < 2; field++) {
		while (s < end && *s == ' ')
			s++;
		while (s < end && *s != ' ')
			s++;
	}
	while (s < end && *s == ' ')
		s++;
	if (s >= end || (*s != '/' && *s != '['))
		return;
	uint32_t plen = (uint32_t)(end - s);
	struct trc_ring_module *r =
		trc__reserve(t, TRC_TAG(TRC_REC_MODULE, 0), (uint32_t)sizeof(*r) + plen);
	if (!r)
		return;
	r->ts = trc__now(mode);
	r->start = start;
	r->end = stop;
	r->offset = offset;
	r->path_len = plen;
	memcpy(r + 1, s, plen);
	ring_commit_sp(&t->prod);
}

static void trc__emit_modules(struct trc__thread *t, unsigned mode)
{
	char buf[8192];
	size_t have = 0;
	bool skipping = false; /* inside a line longer than buf */
	int fd = trc__open_proc("/proc/self/maps");
	if (fd < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		size_t pos = 0;
		for (;;) {
			char *nl = memchr(buf + pos, '\n', have - pos);
			if (!nl)
				break;
			size_t l = (size_t)(nl - (buf + pos));
			if (!skipping)
				trc__emit_module_line(t, mode, buf + pos, l);
			skipping = false;
			pos += l + 1;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		if (have == sizeof(buf)) {
			have = 0;
			skipping = true;
		}
	}
	close(fd);
}

void trc__emit_process_info(struct trc__thread *t, unsigned mode)
{
	trc__emit_process(t, mode);
	trc__emit_modules(t, mode);
}
