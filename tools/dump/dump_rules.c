/* dump_rules.c - parsing and judging `trace-dump check`'s rules (dump_rules.h).
 *
 * Each figure reads one field of the summary's figures (the field `summary --json` prints
 * under the key named beside it below), never a figure computed here: a gate and the summary
 * must agree to the byte and the nanosecond.
 *
 * Threads: trace-dump's one thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli_bytes.h"
#include "cli_duration.h"
#include "cli_size.h"
#include "dump_common.h"
#include "dump_rules.h"

/* ---- the figures ------------------------------------------------------------------------ */

struct dump__figure {
	const char *name;
	enum dump_unit unit;
};

/* The trace's totals: summary --json keys in the comments. */
enum {
	DUMP__T_PEAK_RSS, /* rss_peak_bytes */
	DUMP__T_RSS_SAMPLED_MAX, /* rss_peak_sampled_bytes */
	DUMP__T_LOST, /* events_lost */
	DUMP__T_EVENTS, /* events_recorded */
	DUMP__T_ALLOCS, /* allocs */
	DUMP__T_ALLOC_BYTES, /* alloc_bytes */
	DUMP__T_FREES, /* frees */
	DUMP__T_FREE_BYTES, /* free_bytes */
	DUMP__T_LIVE_AT_EXIT, /* live_end_bytes */
	DUMP__T_LIVE_PEAK, /* live_peak_bytes */
	DUMP__T_DURATION, /* duration_ns */
	DUMP__T_WAITS, /* waits */
	DUMP__T_WAITED, /* waited_ns */
	DUMP__T_N
};

static const struct dump__figure dump__trace_figs[DUMP__T_N] = {
	[DUMP__T_PEAK_RSS] = {"peak-rss", DUMP_UNIT_BYTES},
	[DUMP__T_RSS_SAMPLED_MAX] = {"rss-sampled-max", DUMP_UNIT_BYTES},
	[DUMP__T_LOST] = {"lost", DUMP_UNIT_COUNT},
	[DUMP__T_EVENTS] = {"events", DUMP_UNIT_COUNT},
	[DUMP__T_ALLOCS] = {"allocs", DUMP_UNIT_COUNT},
	[DUMP__T_ALLOC_BYTES] = {"alloc-bytes", DUMP_UNIT_BYTES},
	[DUMP__T_FREES] = {"frees", DUMP_UNIT_COUNT},
	[DUMP__T_FREE_BYTES] = {"free-bytes", DUMP_UNIT_BYTES},
	[DUMP__T_LIVE_AT_EXIT] = {"live-at-exit", DUMP_UNIT_BYTES},
	[DUMP__T_LIVE_PEAK] = {"live-peak", DUMP_UNIT_BYTES},
	[DUMP__T_DURATION] = {"duration", DUMP_UNIT_NS},
	[DUMP__T_WAITS] = {"waits", DUMP_UNIT_COUNT},
	[DUMP__T_WAITED] = {"waited", DUMP_UNIT_NS},
};

/* A span's (names[] of the summary: spans, span_*_ns). */
enum {
	DUMP__S_COUNT,
	DUMP__S_TOTAL,
	DUMP__S_MEAN,
	DUMP__S_P50,
	DUMP__S_P99,
	DUMP__S_MAX,
	DUMP__S_MIN,
	DUMP__S_N
};
static const struct dump__figure dump__span_figs[DUMP__S_N] = {
	[DUMP__S_COUNT] = {"count", DUMP_UNIT_COUNT}, [DUMP__S_TOTAL] = {"total", DUMP_UNIT_NS},
	[DUMP__S_MEAN] = {"mean", DUMP_UNIT_NS},      [DUMP__S_P50] = {"p50", DUMP_UNIT_NS},
	[DUMP__S_P99] = {"p99", DUMP_UNIT_NS},	      [DUMP__S_MAX] = {"max", DUMP_UNIT_NS},
	[DUMP__S_MIN] = {"min", DUMP_UNIT_NS},
};

/* A function's (functions[]: calls, the inclusive times, self_*). */
enum {
	DUMP__F_CALLS,
	DUMP__F_TOTAL,
	DUMP__F_MEAN,
	DUMP__F_P50,
	DUMP__F_P99,
	DUMP__F_MAX,
	DUMP__F_SELF_TOTAL,
	DUMP__F_SELF_MEAN,
	DUMP__F_SELF_P50,
	DUMP__F_SELF_P99,
	DUMP__F_SELF_MAX,
	DUMP__F_N
};
static const struct dump__figure dump__func_figs[DUMP__F_N] = {
	[DUMP__F_CALLS] = {"calls", DUMP_UNIT_COUNT},
	[DUMP__F_TOTAL] = {"total", DUMP_UNIT_NS},
	[DUMP__F_MEAN] = {"mean", DUMP_UNIT_NS},
	[DUMP__F_P50] = {"p50", DUMP_UNIT_NS},
	[DUMP__F_P99] = {"p99", DUMP_UNIT_NS},
	[DUMP__F_MAX] = {"max", DUMP_UNIT_NS},
	[DUMP__F_SELF_TOTAL] = {"self-total", DUMP_UNIT_NS},
	[DUMP__F_SELF_MEAN] = {"self-mean", DUMP_UNIT_NS},
	[DUMP__F_SELF_P50] = {"self-p50", DUMP_UNIT_NS},
	[DUMP__F_SELF_P99] = {"self-p99", DUMP_UNIT_NS},
	[DUMP__F_SELF_MAX] = {"self-max", DUMP_UNIT_NS},
};

const char dump_rules_figures_help[] =
	"  peak-rss, rss-sampled-max, alloc-bytes, free-bytes, live-at-exit, live-peak (bytes);\n"
	"  lost, events, allocs, frees, waits (counts); duration, waited (times);\n"
	"  span:NAME.{count, total, mean, p50, p99, max, min};\n"
	"  function:NAME.{calls, total, mean, p50, p99, max, self-total, self-mean, self-p50,\n"
	"  self-p99, self-max}\n";

static const struct dump__figure *dump__table(enum dump_scope scope, unsigned *n)
{
	switch (scope) {
	case DUMP_SCOPE_SPAN:
		*n = DUMP__S_N;
		return dump__span_figs;
	case DUMP_SCOPE_FUNCTION:
		*n = DUMP__F_N;
		return dump__func_figs;
	default:
		*n = DUMP__T_N;
		return dump__trace_figs;
	}
}

static const char *const dump__op_texts[] = {
	[DUMP_OP_LE] = "<=", [DUMP_OP_LT] = "<", [DUMP_OP_EQ] = "==",
	[DUMP_OP_GE] = ">=", [DUMP_OP_GT] = ">", [DUMP_OP_NE] = "!=",
};

const char *dump_op_text(enum dump_op op)
{
	return dump__op_texts[op];
}

const char *dump_rule_figure_name(const struct dump_rule *rule)
{
	unsigned n;
	return dump__table(rule->scope, &n)[rule->figure].name;
}

/* ---- parsing ---------------------------------------------------------------------------- */

static bool dump__is_op_char(char c)
{
	return c == '<' || c == '>' || c == '=' || c == '!';
}

/* A count: DIGITS, or DIGITS e DIGITS ("1e6"), exact and below 2^64. */
static int dump__parse_count(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p == 'e' || *p == 'E') {
		unsigned e = 0;
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++)
			if ((e = e * 10 + (unsigned)(*p - '0')) > 19)
				return -ERANGE;
		for (unsigned i = 0; i < e && v; i++) {
			if (v > UINT64_MAX / 10)
				return -ERANGE;
			v *= 10;
		}
	}
	if (*p)
		return -EINVAL;
	*out = v;
	return 0;
}

static int dump__bad(char *msg, size_t len, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int dump__bad(char *msg, size_t len, const char *text, const char *fmt, ...)
{
	char what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(msg, len, "bad rule \"%.200s\": %s", text, what);
	return -EINVAL;
}

int dump_rule_parse(const char *text, struct dump_rule *rule, char *msg, size_t msg_len)
{
	memset(rule, 0, sizeof(*rule));
	rule->text = text;
	size_t len = strlen(text);
	/* The operator: the last run of operator characters (a limit has none). */
	size_t e = len;
	while (e > 0 && !dump__is_op_char(text[e - 1]))
		e--;
	size_t b = e;
	while (b > 0 && dump__is_op_char(text[b - 1]))
		b--;
	if (e == 0)
		return dump__bad(msg, msg_len, text,
				 "no operator (expected FIGURE<=LIMIT; also <, ==, >=, >, !=)");
	char op[4] = "";
	if (e - b > 2)
		return dump__bad(msg, msg_len, text, "unknown operator \"%.3s...\"", text + b);
	memcpy(op, text + b, e - b);
	op[e - b] = 0;
	bool found = false;
	for (unsigned i = 0; i < sizeof(dump__op_texts) / sizeof(dump__op_texts[0]); i++)
		if (!strcmp(op, dump__op_texts[i])) {
			rule->op = (enum dump_op)i;
			found = true;
		}
	if (!found)
		return dump__bad(msg, msg_len, text,
				 "unknown operator \"%s\" (expected <=, <, ==, >=, > or !=)", op);
	const char *limit = text + e;
	if (!*limit)
		return dump__bad(msg, msg_len, text, "no limit after the operator");
	if (b == 0)
		return dump__bad(msg, msg_len, text, "no figure before the operator");

	/* The figure: "span:NAME.STAT", "function:NAME.STAT" or a total. */
	char fig[600];
	if (b >= sizeof(fig))
		return dump__bad(msg, msg_len, text, "the figure is too long");
	memcpy(fig, text, b);
	fig[b] = 0;
	const char *stat = fig;
	if (!strncmp(fig, "span:", 5) || !strncmp(fig, "function:", 9)) {
		rule->scope = fig[0] == 's' ? DUMP_SCOPE_SPAN : DUMP_SCOPE_FUNCTION;
		const char *name = fig + (rule->scope == DUMP_SCOPE_SPAN ? 5 : 9);
		char *dot = strrchr(name, '.');
		if (!dot || dot == name)
			return dump__bad(msg, msg_len, text,
					 "expected %s:NAME.FIGURE (for example span:parse.p99)",
					 rule->scope == DUMP_SCOPE_SPAN ? "span" : "function");
		rule->name_len = (size_t)(dot - name);
		if (rule->name_len >= sizeof(rule->name_buf))
			return dump__bad(msg, msg_len, text, "the name is too long");
		memcpy(rule->name_buf, name, rule->name_len);
		rule->name_buf[rule->name_len] = 0;
		rule->name = rule->name_buf;
		stat = dot + 1;
	}
	unsigned n;
	const struct dump__figure *tab = dump__table(rule->scope, &n);
	unsigned i = 0;
	while (i < n && strcmp(stat, tab[i].name))
		i++;
	if (i == n) {
		char names[256];
		size_t k = 0;
		for (unsigned j = 0; j < n && k < sizeof(names); j++)
			k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", j ? ", " : "",
					      tab[j].name);
		return dump__bad(msg, msg_len, text, "unknown figure \"%.64s\"%s (known: %s)", stat,
				 rule->scope == DUMP_SCOPE_SPAN	      ? " of a span"
				 : rule->scope == DUMP_SCOPE_FUNCTION ? " of a function"
								      : "",
				 names);
	}
	rule->figure = i;
	rule->unit = tab[i].unit;

	/* The limit, in the figure's unit. */
	int rc;
	char dmsg[200] = "";
	switch (rule->unit) {
	case DUMP_UNIT_BYTES:
		rc = cli_parse_size(limit, &rule->limit);
		if (rc)
			return dump__bad(msg, msg_len, text,
					 rc == -ERANGE ? "limit \"%s\" is too large"
						       : "limit \"%s\" is not a size (bytes, or "
							 "with K, M or G: 200M, 2G)",
					 limit);
		break;
	case DUMP_UNIT_NS:
		rc = duration_parse_ns(limit, 0, UINT64_MAX, &rule->limit, dmsg, sizeof(dmsg));
		if (rc)
			return dump__bad(msg, msg_len, text, "limit: %s", dmsg);
		break;
	default:
		rc = dump__parse_count(limit, &rule->limit);
		if (rc)
			return dump__bad(msg, msg_len, text,
					 rc == -ERANGE ? "limit \"%s\" is too large"
						       : "limit \"%s\" is not a count (1000, 1e6)",
					 limit);
		break;
	}
	return 0;
}

/* ---- judging ---------------------------------------------------------------------------- */

static uint64_t dump__trace_value(unsigned fig, const struct summary *s)
{
	switch (fig) {
	case DUMP__T_PEAK_RSS:
		return s->rss_peak_bytes;
	case DUMP__T_RSS_SAMPLED_MAX:
		return s->rss_peak_sampled_bytes;
	case DUMP__T_LOST:
		return s->events_lost;
	case DUMP__T_EVENTS:
		return s->events_recorded;
	case DUMP__T_ALLOCS:
		return s->allocs;
	case DUMP__T_ALLOC_BYTES:
		return s->alloc_bytes;
	case DUMP__T_FREES:
		return s->frees;
	case DUMP__T_FREE_BYTES:
		return s->free_bytes;
	case DUMP__T_LIVE_AT_EXIT:
		return s->live_end_bytes;
	case DUMP__T_LIVE_PEAK:
		return s->live_peak_bytes;
	case DUMP__T_DURATION:
		return s->duration_ns;
	case DUMP__T_WAITS:
		return s->waits;
	default:
		return s->waited_ns;
	}
}

static uint64_t dump__span_value(unsigned fig, const struct summary_name *n)
{
	switch (fig) {
	case DUMP__S_COUNT:
		return n->spans;
	case DUMP__S_TOTAL:
		return n->span_total_ns;
	case DUMP__S_MEAN:
		return n->spans ? n->span_total_ns / n->spans : 0; /* as span_mean_ns */
	case DUMP__S_P50:
		return n->span_p50_ns;
	case DUMP__S_P99:
		return n->span_p99_ns;
	case DUMP__S_MAX:
		return n->span_max_ns;
	default:
		return n->span_min_ns;
	}
}

static uint64_t dump__func_value(unsigned fig, const struct func_row *r)
{
	switch (fig) {
	case DUMP__F_CALLS:
		return r->calls;
	case DUMP__F_TOTAL:
		return r->incl.total_ns;
	case DUMP__F_MEAN:
		return r->incl.mean_ns;
	case DUMP__F_P50:
		return r->incl.p50_ns;
	case DUMP__F_P99:
		return r->incl.p99_ns;
	case DUMP__F_MAX:
		return r->incl.max_ns;
	case DUMP__F_SELF_TOTAL:
		return r->self.total_ns;
	case DUMP__F_SELF_MEAN:
		return r->self.mean_ns;
	case DUMP__F_SELF_P50:
		return r->self.p50_ns;
	case DUMP__F_SELF_P99:
		return r->self.p99_ns;
	default:
		return r->self.max_ns;
	}
}

static bool dump__compare(enum dump_op op, uint64_t v, uint64_t limit)
{
	switch (op) {
	case DUMP_OP_LE:
		return v <= limit;
	case DUMP_OP_LT:
		return v < limit;
	case DUMP_OP_EQ:
		return v == limit;
	case DUMP_OP_GE:
		return v >= limit;
	case DUMP_OP_GT:
		return v > limit;
	default:
		return v != limit;
	}
}

struct dump_verdict dump_rule_judge(const struct dump_rule *rule, const struct dump_figures *f)
{
	struct dump_verdict v = {.known = true};
	if (rule->scope == DUMP_SCOPE_TRACE) {
		v.value = dump__trace_value(rule->figure, &f->s);
	} else if (rule->scope == DUMP_SCOPE_SPAN) {
		const struct summary_name *hit = NULL;
		for (size_t i = 0; i < f->s.n_names && !hit; i++)
			if (f->s.names[i].name_len == rule->name_len &&
			    !memcmp(f->s.names[i].name, rule->name, rule->name_len))
				hit = &f->s.names[i];
		/* A span that never ended has no times: a count of 0, and time rules fail
		 * (a renamed or vanished span must not pass a gate unseen). */
		if (!hit || !hit->spans) {
			v.known = rule->figure == DUMP__S_COUNT;
			v.value = 0;
		} else {
			v.value = dump__span_value(rule->figure, hit);
		}
	} else {
		const struct func_row *rows = NULL, *hit = NULL;
		size_t n = f->ft ? func_table_rows(f->ft, &rows) : 0;
		for (size_t i = 0; i < n && !hit; i++)
			if (strlen(rows[i].name) == rule->name_len &&
			    !memcmp(rows[i].name, rule->name, rule->name_len))
				hit = &rows[i];
		if (!hit || !hit->calls) {
			v.known = rule->figure == DUMP__F_CALLS;
			v.value = 0;
		} else {
			v.value = dump__func_value(rule->figure, hit);
		}
	}
	v.holds = v.known && dump__compare(rule->op, v.value, rule->limit);
	return v;
}

const char *dump_rule_fmt(enum dump_unit unit, uint64_t v, char *buf, size_t len)
{
	char h[40];
	switch (unit) {
	case DUMP_UNIT_BYTES:
		snprintf(buf, len, "%s (%" PRIu64 " B)", cli_fmt_bytes(h, sizeof(h), v), v);
		break;
	case DUMP_UNIT_NS:
		snprintf(buf, len, "%s (%" PRIu64 " ns)", dump_fmt_ns(h, sizeof(h), v), v);
		break;
	default:
		snprintf(buf, len, "%" PRIu64, v);
		break;
	}
	return buf;
}
