/* dump_outfile.c - the exporters' output files: -o OUT, and --split-size's numbered files.
 *
 * Purpose: one place that names, opens and closes the files chrome and perfetto write, so
 * both number split files the same way (OUT with -001, -002... before its extension) and
 * report open/close errors alike. Writing itself goes through dump_out (dump_out.c), whose
 * fd this switches; what is buffered is flushed into the file it was meant for first.
 *
 * Threads: single-threaded (dump_out is a global).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dump_common.h"

static int dump__outfile_close_fd(struct dump_outfile *o)
{
	dump_flush();
	if (dump_out.fd == STDOUT_FILENO)
		return 0;
	int rc = close(dump_out.fd);
	dump_out.fd = STDOUT_FILENO;
	if (rc) {
		dump_error("%s: %s", o->name, strerror(errno));
		return DUMP_EXIT_FAIL;
	}
	return 0;
}

int dump_outfile_next(struct dump_outfile *o)
{
	if (dump__outfile_close_fd(o))
		return DUMP_EXIT_FAIL;
	o->n++;
	if (!o->split) {
		snprintf(o->name, sizeof(o->name), "%s", o->base);
	} else {
		/* The extension is what follows the last '.' of the last path component. */
		const char *slash = strrchr(o->base, '/');
		const char *dot = strrchr(slash ? slash + 1 : o->base, '.');
		int stem = dot && dot != (slash ? slash + 1 : o->base) ? (int)(dot - o->base)
								       : (int)strlen(o->base);
		snprintf(o->name, sizeof(o->name), "%.*s-%03u%s", stem, o->base, o->n,
			 o->base + stem);
	}
	o->start = dump_out.written + dump_out.len;
	if (!o->split && !strcmp(o->base, "-"))
		return 0;
	int fd = open(o->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		dump_error("%s: %s", o->name, strerror(errno));
		return DUMP_EXIT_FAIL;
	}
	dump_out.fd = fd;
	return 0;
}

int dump_outfile_close(struct dump_outfile *o)
{
	return dump__outfile_close_fd(o);
}
