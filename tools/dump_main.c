/* dump_main.c - trace-dump: answers questions about a .trc file and exports it.
 *
 * Purpose: the entry point; picks the subcommand (summary by default) and hands over. Each
 * subcommand lives in its own file (dump_summary.c, dump_events.c, dump_rss.c,
 * dump_chrome.c) with its own --help; output and its error policy are in dump_out.c.
 *
 * Threads: single-threaded.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "dump_common.h"

static void dump__usage(FILE *f)
{
	fputs("usage: trace-dump [summary|events|rss|chrome] [OPTIONS] FILE\n"
	      "\n"
	      "  summary  duration, events per type, name and thread, lost records, span\n"
	      "           durations, allocations, RSS (exact peak and sampled) (the default)\n"
	      "  events   every record of every stream in one time order, one per line\n"
	      "  rss      the RSS samples as CSV\n"
	      "  chrome   Chrome Trace Event JSON (open in ui.perfetto.dev or speedscope)\n"
	      "\n"
	      "`trace-dump COMMAND --help` describes each command and its output.\n"
	      "Exit status: 0 done; 1 the file could not be read or the output could not be\n"
	      "written; 2 usage error; 141 the output pipe was closed (quietly, like SIGPIPE).\n",
	      f);
}

int main(int argc, char **argv)
{
	/* Write errors come back as EPIPE and are handled in dump_out.c. */
	signal(SIGPIPE, SIG_IGN);
	int (*cmd)(int, char **) = dump_summary_main;
	int first = 1;
	if (argc >= 2) {
		const char *a = argv[1];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			dump__usage(stdout);
			return DUMP_EXIT_OK;
		}
		if (!strcmp(a, "summary")) {
			first = 1;
		} else if (!strcmp(a, "events")) {
			cmd = dump_events_main;
		} else if (!strcmp(a, "rss")) {
			cmd = dump_rss_main;
		} else if (!strcmp(a, "chrome")) {
			cmd = dump_chrome_main;
		} else {
			first = 0; /* summary with argv[1] as its first argument */
		}
	} else {
		dump__usage(stderr);
		return DUMP_EXIT_USAGE;
	}
	/* The subcommand sees its own name as argv[0]. */
	char *name = first ? argv[1] : (char *)"summary";
	argv[first] = name;
	int rc = cmd(argc - first, argv + first);
	if (rc == DUMP_EXIT_OK)
		dump_flush();
	return rc;
}
