/* dump_rules.h - the rules of `trace-dump check` (dump_rules.c): "FIGURE OP LIMIT", parsed
 * from what the user typed and judged against a trace's figures (dump_figures.h).
 *
 * Figures: the trace's totals (peak-rss, lost, allocs, alloc-bytes, live-at-exit, ...), a
 * span's ("span:NAME.p99") and a function's ("function:NAME.calls"), each taken from the same
 * field `summary --json` prints, so a rule and the summary never disagree. Each figure has a
 * unit, and its limit is parsed as that unit is typed everywhere else: bytes by cli_size.h
 * ("200M"), times by cli_duration.h ("5ms", a unit required), counts as integers ("1000",
 * "1e6"). OP is <=, <, ==, >=, > or !=; the operator is the last one in the text, so a
 * name may hold '<' and '>' (C++ templates) and '.' (the stat is after the last '.').
 *
 * Threads: trace-dump's one thread.
 */
#ifndef TRC_DUMP_RULES_H
#define TRC_DUMP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dump_figures.h"

enum dump_unit { DUMP_UNIT_COUNT = 0, DUMP_UNIT_BYTES, DUMP_UNIT_NS };
enum dump_op { DUMP_OP_LE = 0, DUMP_OP_LT, DUMP_OP_EQ, DUMP_OP_GE, DUMP_OP_GT, DUMP_OP_NE };
enum dump_scope { DUMP_SCOPE_TRACE = 0, DUMP_SCOPE_SPAN, DUMP_SCOPE_FUNCTION };

struct dump_rule {
	const char *text; /* as typed (argv: not owned) */
	enum dump_scope scope;
	const char *name; /* span or function name: into name_buf */
	size_t name_len;
	unsigned figure; /* index into the scope's figure table */
	enum dump_unit unit;
	enum dump_op op;
	uint64_t limit;
	char name_buf[512];
};

/* What a rule found in a trace. */
struct dump_verdict {
	bool holds;
	bool known; /* false: the trace has no such span or function (the rule fails) */
	uint64_t value;
};

/* Parses text into *rule. 0, or -EINVAL with a one-line message naming the problem in msg. */
int dump_rule_parse(const char *text, struct dump_rule *rule, char *msg, size_t msg_len);
/* Judges rule against f. */
struct dump_verdict dump_rule_judge(const struct dump_rule *rule, const struct dump_figures *f);
/* The figure's name as typed after the scope ("p99", "peak-rss"). */
const char *dump_rule_figure_name(const struct dump_rule *rule);
/* The operator's text ("<="). */
const char *dump_op_text(enum dump_op op);
/* A value in the rule's unit for people: "250.0 MiB (262144000 B)", "7.2 ms (7200000 ns)",
 * "2000000". Returns buf. */
const char *dump_rule_fmt(enum dump_unit unit, uint64_t v, char *buf, size_t len);
/* Every figure's name, for the help and the message of an unknown one. */
extern const char dump_rules_figures_help[];

#endif /* TRC_DUMP_RULES_H */
