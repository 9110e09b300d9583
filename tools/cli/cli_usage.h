/* cli_usage.h - what both commands say about a command line they refuse.
 *
 * Purpose: getopt_long's own messages name the program as argv[0] says (a subcommand's name,
 * or a path), take two lines with the usage, and cannot tell "--output=x" from "-o x"; the
 * commands set opterr = 0 and describe the refused option with these helpers instead, in one
 * line, spelled as the user typed it.
 *
 * Every usage error of both commands is one line on stderr:
 *   PROG: MESSAGE (see PROG --help)
 * with PROG "trace-run", or "trace-dump" followed by the subcommand ("trace-dump events").
 *
 * Threads: the caller's; the helpers read getopt's globals (optind, optopt).
 */
#ifndef TRC_CLI_USAGE_H
#define TRC_CLI_USAGE_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* Prints "PROG: MESSAGE (see PROG --help)" on stderr. Returns 2, the usage exit status. */
int cli_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Describes what getopt_long just refused (it returned c, '?' or ':', with opterr = 0 and
 * ':' first in the short options) into buf: unknown option "--bogus", unknown option "-x",
 * option "--quiet" takes no value, option "--from" needs a value. */
void cli_refused_option(int c, char *const argv[], const struct option *longopts, char *buf,
			size_t len);

/* True when value, what getopt_long just gave an option (optarg), is no value: "--", the end of
 * the options ("trace-run -o -- cmd" forgot the file name). The option, as typed, is then
 * written into buf for the message. */
bool cli_value_missing(const char *value, char *const argv[], char *buf, size_t len);

#endif /* TRC_CLI_USAGE_H */
