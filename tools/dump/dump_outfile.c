/* dump_outfile.c - the exporters' output files: -o OUT, and --split-size's numbered files.
 *
 * Purpose: one place that names, opens and closes the files chrome and perfetto write, so
 * both number split files the same way (OUT with -001, -002... before its extension) and
 * report open/close errors alike. Writing itself goes through dump_out (dump_out.c), whose
 * fd this switches; what is buffered is flushed into the file it was meant for first. Each file
 * is written beside its name and takes it only when closed whole (cli_outfile.h), so an export
 * that fails half-way leaves what the name had (dump_outfile_discard).
 *
 * Threads: single-threaded (dump_out is a global).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_duration.h"
#include "cli_size.h"
#include "dump_common.h"

static int dump__outfile_close_fd(struct dump_outfile *o)
{
	dump_flush();
	if (dump_out.fd == STDOUT_FILENO)
		return 0;
	dump_out.fd = STDOUT_FILENO;
	char msg[PATH_MAX + 128];
	if (cli_outfile_commit(&o->file, msg, sizeof(msg))) {
		dump_error("%s", msg);
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
	/* Written beside the name, renamed over it when whole (dump_outfile_close): an export
	 * that fails leaves the file the name had. */
	char msg[PATH_MAX + 128];
	if (cli_outfile_open(&o->file, AT_FDCWD, o->name, 0644, 0, NULL, "part", true, msg,
			     sizeof(msg))) {
		dump_error("%s", msg);
		return DUMP_EXIT_FAIL;
	}
	dump_out.fd = o->file.fd;
	return 0;
}

int dump_outfile_close(struct dump_outfile *o)
{
	return dump__outfile_close_fd(o);
}

bool dump_outfile_discard(struct dump_outfile *o)
{
	if (dump_out.fd == STDOUT_FILENO || o->file.how == CLI_OUTFILE_IN_PLACE)
		return false;
	dump_out.len = 0; /* what is buffered was this file's */
	dump_out.fd = STDOUT_FILENO;
	cli_outfile_abort(&o->file);
	return true;
}

int dump_slice_option(const char *cmd, int opt, const char *arg, struct dump_slice *sl,
		      struct dump_outfile *o)
{
	char msg[256];
	switch (opt) {
	case 'f':
	case 'T':
		if (duration_parse_ns(arg, 0, DUMP_TIME_MAX_NS, opt == 'f' ? &sl->from : &sl->to,
				      msg, sizeof(msg)))
			return dump_usage_error(cmd, "--%s: %s", opt == 'f' ? "from" : "to", msg);
		if (opt == 'f')
			sl->from_arg = arg;
		else
			sl->to_arg = arg;
		return 0;
	case 'S':
		if (cli_parse_size(arg, &o->split) || o->split < DUMP_MIN_SPLIT_BYTES)
			return dump_usage_error(cmd,
						"--split-size: invalid size \"%s\" (expected "
						"1M or more: 64M, 1G)",
						arg);
		return 0;
	}
	return -1;
}

int dump_slice_check(const char *cmd, const struct dump_slice *sl)
{
	if (sl->from_arg && sl->to_arg && sl->from > sl->to)
		return dump_usage_error(cmd, "--from %s is after --to %s: the range is empty",
					sl->from_arg, sl->to_arg);
	return 0;
}
