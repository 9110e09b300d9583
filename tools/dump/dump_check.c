/* dump_check.c - `trace-dump check FILE RULE...`: gates for CI on what a trace shows.
 *
 * Purpose: each RULE ("peak-rss<=200M", "span:parse.p99<=5ms"; dump_rules.h) is judged
 * against the summary's own figures (dump_figures.h). Every rule is parsed before the trace is
 * read, so a bad rule is one line and exit 2 whatever the file. Exit 0 when all hold; 1 with
 * one line per failing rule on standard output (the rule, the figure, the limit); --junit FILE
 * writes the verdicts as JUnit XML (one testcase per rule) for CI systems, whole or not at
 * all (cli_outfile.h).
 *
 * Threads: single-threaded.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_common.h"
#include "dump_figures.h"
#include "dump_rules.h"

static const char dump__check_help_head[] =
	"usage: trace-dump check [--junit OUT.xml] [-v] FILE RULE...\n"
	"\n"
	"Judges each RULE, FIGURE OP LIMIT, against the figures of `trace-dump summary --json`\n"
	"(the same numbers): peak-rss<=200M, lost==0, allocs<=1e6, alloc-bytes<=2G,\n"
	"live-at-exit<=1M, span:parse.p99<=5ms, function:compress.calls<=1000. OP is <=, <,\n"
	"==, >=, > or !=. Limits carry the figure's unit: bytes as 4096, 64K, 200M or 2G\n"
	"(powers of 1024); times with a unit (ns, us, ms, s, m, h); counts as 1000 or 1e6.\n"
	"A NAME may hold '.', '<' and '>': the figure is after its last '.', the operator is\n"
	"the last one. A span or function absent from the trace has a count of 0, and its\n"
	"time rules fail.\n"
	"\n"
	"Figures:\n";

static const char dump__check_help_tail[] =
	"\n"
	"  --junit OUT  also write the verdicts as JUnit XML (one testcase per rule)\n"
	"  -v           also print the rules that hold\n"
	"  -h, --help   this text\n"
	"\n"
	"Counts, bytes and live heap are the same on every run of a deterministic program;\n"
	"times and RSS vary from run to run: gate them with a margin (see the README).\n"
	"Exit status: 0 every rule holds; 1 a rule fails (one line each: rule, figure, limit)\n"
	"or the file could not be read; 2 a bad rule or option (one line naming it).\n";

/* One verdict as a line: "FAIL RULE: FIGURE is VALUE, limit LIMIT". */
static void dump__verdict_text(const struct dump_rule *rule, const struct dump_verdict *v,
			       char *buf, size_t len)
{
	char val[64], lim[64];
	dump_rule_fmt(rule->unit, rule->limit, lim, sizeof(lim));
	if (!v->known)
		snprintf(buf, len, "no %s \"%s\" %s in the trace, limit %s",
			 rule->scope == DUMP_SCOPE_SPAN ? "span" : "function", rule->name,
			 rule->scope == DUMP_SCOPE_SPAN ? "ended" : "returned", lim);
	else
		snprintf(buf, len, "%s is %s, limit %s", dump_rule_figure_name(rule),
			 dump_rule_fmt(rule->unit, v->value, val, sizeof(val)), lim);
}

/* s as XML attribute or text content: &, <, >, " and ' escaped; control bytes (not allowed
 * in XML 1.0) as '?'. */
static void dump__xml(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '&':
			dump_str("&amp;");
			break;
		case '<':
			dump_str("&lt;");
			break;
		case '>':
			dump_str("&gt;");
			break;
		case '"':
			dump_str("&quot;");
			break;
		case '\'':
			dump_str("&apos;");
			break;
		default:
			dump_char(c < 0x20 && c != '\t' && c != '\n' ? '?' : (char)c);
		}
	}
}

static int dump__junit(const char *out, const char *path, const struct dump_rule *rules,
		       const struct dump_verdict *v, unsigned n, unsigned failures)
{
	struct dump_outfile o = {.base = out};
	if (dump_outfile_next(&o))
		return DUMP_EXIT_FAIL;
	dump_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	dump_printf("<testsuites name=\"trace-dump check\" tests=\"%u\" failures=\"%u\" "
		    "errors=\"0\">\n",
		    n, failures);
	dump_str("<testsuite name=\"");
	dump__xml(path);
	dump_printf("\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"0\">\n", n, failures);
	for (unsigned i = 0; i < n; i++) {
		char line[1024];
		dump__verdict_text(&rules[i], &v[i], line, sizeof(line));
		dump_str("<testcase classname=\"trace-dump.check\" name=\"");
		dump__xml(rules[i].text);
		dump_str("\" time=\"0\">");
		if (!v[i].holds) {
			dump_str("<failure type=\"limit\" message=\"");
			dump__xml(line);
			dump_str("\"/>");
		} else {
			dump_str("<system-out>");
			dump__xml(line);
			dump_str("</system-out>");
		}
		dump_str("</testcase>\n");
	}
	dump_str("</testsuite>\n</testsuites>\n");
	if (dump_outfile_close(&o)) {
		dump_outfile_discard(&o);
		return DUMP_EXIT_FAIL;
	}
	return DUMP_EXIT_OK;
}

int dump_check_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"junit", required_argument, NULL, 'J'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *junit = NULL;
	bool verbose = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hv", opts, NULL)) != -1) {
		if (dump_value_missing(argv[0], argv))
			return DUMP_EXIT_USAGE;
		switch (c) {
		case 'J':
			junit = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(dump__check_help_head, stdout);
			fputs(dump_rules_figures_help, stdout);
			fputs(dump__check_help_tail, stdout);
			return DUMP_EXIT_OK;
		default:
			return dump_refused_option(argv[0], c, argv, opts);
		}
	}
	if (optind >= argc)
		return dump_usage_error(argv[0], "no FILE given");
	const char *path = argv[optind++];
	if (optind >= argc)
		return dump_usage_error(argv[0], "no RULE given (for example lost==0)");
	unsigned n = (unsigned)(argc - optind);
	struct dump_rule *rules = calloc(n, sizeof(*rules));
	struct dump_verdict *v = calloc(n, sizeof(*v));
	int rc = DUMP_EXIT_FAIL;
	struct trcfile_reader *r = NULL;
	if (!rules || !v) {
		dump_error("out of memory");
		goto out;
	}
	for (unsigned i = 0; i < n; i++) {
		char msg[512];
		if (dump_rule_parse(argv[optind + i], &rules[i], msg, sizeof(msg))) {
			rc = dump_usage_error(argv[0], "%s", msg);
			goto out;
		}
	}
	r = dump_open(path, false);
	if (!r)
		goto out;
	struct dump_figures f;
	if (dump_figures_compute(r, path, FUNC_SORT_NAME, &f) != DUMP_EXIT_OK) {
		dump_reader_free(r);
		r = NULL;
		goto out;
	}
	unsigned failures = 0;
	for (unsigned i = 0; i < n; i++) {
		v[i] = dump_rule_judge(&rules[i], &f);
		failures += !v[i].holds;
	}
	dump_figures_free(&f);
	if (junit && dump__junit(junit, path, rules, v, n, failures) != DUMP_EXIT_OK)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		char line[1024];
		if (v[i].holds && !verbose)
			continue;
		dump__verdict_text(&rules[i], &v[i], line, sizeof(line));
		dump_str(v[i].holds ? "ok   " : "FAIL ");
		dump_str(rules[i].text);
		dump_str(": ");
		dump_str(line);
		dump_char('\n');
	}
	rc = failures ? DUMP_EXIT_FAIL : DUMP_EXIT_OK;
	if (failures)
		dump_flush(); /* main flushes only on success */
out:
	if (r)
		dump_close(r, path);
	free(rules);
	free(v);
	return rc;
}
