/* dump_main.c - trace-dump: answers questions about a .trc file and exports it.
 *
 * Purpose: the entry point; picks the subcommand and hands over. Each subcommand lives in its
 * own file (dump_summary.c, dump_events.c, dump_rss.c, dump_chrome.c, dump_flame.c,
 * dump_perfetto.c, dump_pprof.c, dump_compact.c, dump_memory.c) with its own --help; output and its
 * error policy are in dump_out.c.
 *
 * The first argument is a command, `help`, --help or --version. `trace-dump FILE` is short
 * for `trace-dump summary FILE` when FILE is not a command word: an existing file, or a name
 * with a '.' or '/' in it (commands have neither). Anything else is an unknown command
 * (exit 2), with the closest command suggested: `trace-dump sumary x.trc` must not read as
 * summary of a file named "sumary".
 *
 * Threads: single-threaded.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_version.h"
#include "dump_common.h"

static const struct {
	const char *name;
	int (*main)(int, char **);
} dump__cmds[] = {
	/* In the order of dump__usage's list. */
	{"summary", dump_summary_main},	  {"events", dump_events_main},
	{"rss", dump_rss_main},		  {"chrome", dump_chrome_main},
	{"flame", dump_flame_main},	  {"memory", dump_memory_main},
	{"parquet", dump_parquet_main},	  {"perfetto", dump_perfetto_main},
	{"pprof", dump_pprof_main},	  {"compact", dump_compact_main},
	{"check", dump_check_main},	  {"diff", dump_diff_main},
	{"report", dump_report_main},
};

#define DUMP__N_CMDS (sizeof(dump__cmds) / sizeof(dump__cmds[0]))

static void dump__usage(FILE *f)
{
	fputs("usage: trace-dump COMMAND [OPTIONS] FILE\n"
	      "       trace-dump FILE              (the same as: trace-dump summary FILE)\n"
	      "\n"
	      "Commands:\n"
	      "  summary  duration, events per type, name and thread, lost records, span\n"
	      "           durations, allocations, RSS (exact peak and sampled)\n"
	      "  events   every record of every stream, merged by time, one per line\n"
	      "  rss      the RSS samples as CSV\n"
	      "  chrome   Chrome Trace Event JSON (open in ui.perfetto.dev or speedscope)\n"
	      "  flame    folded stacks of functions and spans, by time or bytes allocated\n"
	      "           (for flamegraph.pl, inferno, speedscope)\n"
	      "  memory   what made RSS grow: allocations by site between RSS samples, live\n"
	      "           heap beside RSS, what was live at the max sample\n"
	      "  parquet  Parquet tables of one or many traces for query engines (DuckDB...)\n"
	      "  perfetto Perfetto's protobuf trace, a few bytes an event (ui.perfetto.dev)\n"
	      "  pprof    heap profile (live at a moment, or allocated) for go tool pprof\n"
	      "  compact  FILE -o OUT: the trace with every chunk compressed (chunks the\n"
	      "           recorder wrote uncompressed while compression was behind)\n"
	      "  report   FILE -o OUT.html: one self-contained HTML page (RSS and live heap\n"
	      "           over time, flame graphs, spans, functions, threads)\n"
	      "  check    FILE RULE...: gates for CI (peak-rss<=200M, span:parse.p99<=5ms...);\n"
	      "           exit 1 with one line per failing rule, --junit OUT.xml\n"
	      "  diff     A B: what changed between two traces (spans, functions, allocation\n"
	      "           sites, processes), largest first; --threshold PCT fails a CI job\n"
	      "  help     this text; `trace-dump help COMMAND` describes COMMAND\n"
	      "\n"
	      "  -h, --help     this text\n"
	      "  -V, --version  the version\n"
	      "\n"
	      "`trace-dump COMMAND --help` describes each command, its options and its output.\n"
	      "Durations (--from, --to) need a unit: ns, us, ms, s, m or h.\n"
	      "Function names come from the module files on this machine; debuginfod servers\n"
	      "(DEBUGINFOD_URLS) are asked only with TRC_DEBUGINFOD=1 in the environment.\n"
	      "Exit status: 0 done; 1 the file could not be read or the output could not be\n"
	      "written; 2 usage error; 141 the output pipe was closed (quietly, like SIGPIPE).\n",
	      f);
}

static int (*dump__find(const char *name))(int, char **)
{
	for (size_t i = 0; i < DUMP__N_CMDS; i++)
		if (!strcmp(name, dump__cmds[i].name))
			return dump__cmds[i].main;
	return NULL;
}

/* Edit distance between a and b (insertions, deletions, substitutions), for suggestions;
 * capped: anything above 3 is 4. */
static unsigned dump__distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[16];

	if (la > 15 || lb > 15)
		return 4;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] > 3 ? 4 : row[lb];
}

/* The command word meant, when word is one typo (or two, in a long word) away from one, or
 * the start of one; NULL otherwise. */
static const char *dump__closest(const char *word)
{
	const char *best = NULL;
	unsigned best_d = 3;

	for (size_t i = 0; i <= DUMP__N_CMDS; i++) {
		const char *name = i < DUMP__N_CMDS ? dump__cmds[i].name : "help";
		size_t n = strlen(word);
		unsigned d = dump__distance(word, name);
		if (n >= 2 && !strncmp(name, word, n))
			d = 1; /* a prefix: "sum", "ev" */
		if (d > (strlen(name) > 4 ? 2u : 1u))
			continue;
		if (d < best_d) {
			best = name;
			best_d = d;
		}
	}
	return best;
}

/* "summary, events, ... and help": every command of dump__cmds, so the list cannot miss one. */
static const char *dump__command_list(void)
{
	static char list[256];
	size_t n = 0;
	for (size_t i = 0; i < DUMP__N_CMDS; i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s, ", dump__cmds[i].name);
	if (n >= 2)
		n -= 2;
	snprintf(list + n, sizeof(list) - n, " and help");
	return list;
}

/* True when a first argument that is not a command is meant as the FILE of summary. */
static bool dump__is_file_arg(const char *a)
{
	return strchr(a, '.') || strchr(a, '/') || access(a, F_OK) == 0;
}

static int dump__unknown_command(const char *word)
{
	const char *near = dump__closest(word);
	char shown[64];
	size_t n = 0;

	/* Quote it printably and briefly. */
	for (const char *p = word; *p && n + 4 < sizeof(shown); p++)
		shown[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	if (word[n])
		n += (size_t)snprintf(shown + n, sizeof(shown) - n, "...");
	shown[n] = '\0';
	if (near)
		dump_error("unknown command \"%s\"; did you mean \"%s\"? (see trace-dump help)",
			   shown, near);
	else
		dump_error("unknown command \"%s\" (and no such file); the commands are %s",
			   shown, dump__command_list());
	return DUMP_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	/* Write errors come back as EPIPE and are handled in dump_out.c. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		dump__usage(stderr);
		return DUMP_EXIT_USAGE;
	}
	const char *a = argv[1];
	if (!strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help")) {
		if (!strcmp(a, "help") && argc >= 3) {
			/* trace-dump help COMMAND: that command's --help. */
			int (*cmd)(int, char **) = dump__find(argv[2]);
			if (!cmd)
				return dump__unknown_command(argv[2]);
			char *hargv[] = {argv[2], (char *)"--help", NULL};
			int rc = cmd(2, hargv);
			if (rc == DUMP_EXIT_OK)
				dump_flush();
			return rc;
		}
		dump__usage(stdout);
		return DUMP_EXIT_OK;
	}
	if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
		puts("trace-dump " CLI_VERSION);
		return DUMP_EXIT_OK;
	}

	int (*cmd)(int, char **) = dump__find(a);
	int first = 1; /* argv[first] is the subcommand's argv[0] */
	if (!cmd) {
		if (a[0] != '-' && !dump__is_file_arg(a))
			return dump__unknown_command(a);
		/* summary with argv[1] as its first argument (a FILE, or an option: --json) */
		cmd = dump_summary_main;
		first = 0;
	}
	/* The subcommand sees its own name as argv[0]. */
	argv[first] = (char *)(first ? a : "summary");
	int rc = cmd(argc - first, argv + first);
	if (rc == DUMP_EXIT_OK)
		dump_flush();
	return rc;
}
