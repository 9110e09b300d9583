/* cli_usage.c - one-line usage errors for both commands (see cli_usage.h).
 *
 * Where getopt_long leaves things (glibc), which the descriptions rely on:
 *   - an unknown long option: optopt = 0, and optind has moved past it (argv[optind - 1]);
 *   - a long option given a value it does not take ("--quiet=x"): optopt = the option's val,
 *     optind past it;
 *   - an unknown short option: optopt = the character; optind moves on only at the end of a
 *     cluster ("-qx"), so argv[optind - 1] is not always it;
 *   - a missing value (':'): the option was the last argument, optind past it;
 *   - a value in the next argument: optarg == argv[optind - 1], the option is argv[optind - 2];
 *     a value in the same argument ("-o--", "--output=--") points inside argv[optind - 1].
 * Permutation of non-options happens on the next call, so these hold when c is returned.
 */
#include "cli_usage.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cli_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see %s --help)\n", prog);
	return 2;
}

/* "--name" of "--name=value" into buf. */
static void cli__long_name(const char *arg, char *buf, size_t len)
{
	size_t n = strcspn(arg, "=");
	snprintf(buf, len, "%.*s", (int)(n < 200 ? n : 200), arg);
}

/* True when arg is "--name=..." for a long option with val v that takes no value. */
static bool cli__takes_no_value(const char *arg, int v, const struct option *longopts)
{
	if (strncmp(arg, "--", 2) != 0 || !strchr(arg, '='))
		return false;
	size_t n = strcspn(arg + 2, "=");
	for (const struct option *o = longopts; o && o->name; o++)
		if (o->has_arg == no_argument && o->val == v && strlen(o->name) == n &&
		    strncmp(o->name, arg + 2, n) == 0)
			return true;
	return false;
}

void cli_refused_option(int c, char *const argv[], const struct option *longopts, char *buf,
			size_t len)
{
	const char *last = optind > 0 ? argv[optind - 1] : "";
	char name[256];

	if (c == ':') {
		if (strncmp(last, "--", 2) == 0)
			cli__long_name(last, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "-%c", optopt);
		snprintf(buf, len, "option \"%s\" needs a value", name);
	} else if (optopt == 0) {
		cli__long_name(last, name, sizeof(name));
		snprintf(buf, len, "unknown option \"%s\"", name);
	} else if (cli__takes_no_value(last, optopt, longopts)) {
		cli__long_name(last, name, sizeof(name));
		snprintf(buf, len, "option \"%s\" takes no value", name);
	} else if (optopt > 0x20 && optopt < 0x7f) {
		snprintf(buf, len, "unknown option \"-%c\"", optopt);
	} else {
		snprintf(buf, len, "unknown option");
	}
}

bool cli_value_missing(const char *value, char *const argv[], char *buf, size_t len)
{
	if (!value || strcmp(value, "--") != 0)
		return false;
	const char *opt = "";
	char name[256];
	if (optind >= 2 && value == argv[optind - 1]) {
		opt = argv[optind - 2]; /* "-o --" or "--output --" */
		if (strncmp(opt, "--", 2) == 0)
			cli__long_name(opt, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "-%c", opt[0] ? opt[strlen(opt) - 1] : '?');
	} else if (optind >= 1) {
		opt = argv[optind - 1]; /* "-o--" or "--output=--" */
		if (strncmp(opt, "--", 2) == 0)
			cli__long_name(opt, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "-%c", value > opt ? value[-1] : '?');
	} else {
		snprintf(name, sizeof(name), "?");
	}
	snprintf(buf, len, "option \"%s\" needs a value, got \"--\"", name);
	return true;
}
