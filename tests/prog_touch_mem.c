/* prog_touch_mem.c - a process whose RSS is known: it touches N MiB, says so, then waits.
 *
 * Purpose: the live child of the sampler tests and the RSS benchmark. Its anonymous memory
 * grows by exactly N MiB (one private anonymous mapping, every page written), so a sampler
 * reading it must see about N MiB above the baseline of the same program touching 0 MiB.
 *
 * Usage: prog_touch_mem MIB [MODE]
 *   wait        (default) touch, print "ready\n", then wait until stdin reaches end of file
 *               (the parent closes its end of the pipe, or dies), exit 0
 *   exit=MS     touch, print "ready\n", sleep MS milliseconds, exit 0
 *   staged      print "base\n" first, read one byte from stdin, touch, print "ready\n",
 *               then wait as in `wait` (so a test samples the same process before and after)
 * Exit status 2 on a usage error, 1 when memory cannot be had.
 *
 * Threads: one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Not instrumented: in the ASan build each checked store reads the shadow of its page, and
 * those reads commit shadow pages (1/8 of the range), so the growth would not be N MiB. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address")))
#endif
#endif
static int
touch_mib(unsigned long mib)
{
	size_t bytes = (size_t)mib << 20;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p;

	if (mib == 0)
		return 0;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* Writing (not reading) each page: a read would map the shared zero page, not counted. */
	for (size_t off = 0; off < bytes; off += (size_t)page)
		p[off] = 1;
	return 0;
}

static void say(const char *line)
{
	if (write(STDOUT_FILENO, line, strlen(line)) < 0)
		exit(1);
}

static void wait_stdin_eof(void)
{
	char buf[64];
	ssize_t n;

	do
		n = read(STDIN_FILENO, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "wait";
	unsigned long mib, exit_ms = 0;
	char *end;

	if (argc < 2 || argc > 3)
		goto usage;
	mib = strtoul(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end != '\0' || mib > (1ul << 20))
		goto usage;
	if (strncmp(mode, "exit=", 5) == 0) {
		exit_ms = strtoul(mode + 5, &end, 10);
		if (mode[5] == '\0' || *end != '\0')
			goto usage;
	} else if (strcmp(mode, "wait") != 0 && strcmp(mode, "staged") != 0) {
		goto usage;
	}

	if (strcmp(mode, "staged") == 0) {
		char c;
		say("base\n");
		if (read(STDIN_FILENO, &c, 1) != 1)
			return 0; /* the parent gave up */
	}
	if (touch_mib(mib) != 0) {
		fprintf(stderr, "prog_touch_mem: cannot map %lu MiB\n", mib);
		return 1;
	}
	say("ready\n");
	if (strncmp(mode, "exit=", 5) == 0) {
		struct timespec ts = {(time_t)(exit_ms / 1000), (long)(exit_ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return 0;
	}
	wait_stdin_eof();
	return 0;

usage:
	fprintf(stderr, "usage: prog_touch_mem MIB [wait|exit=MS|staged]\n");
	return 2;
}
