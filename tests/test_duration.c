/* test_duration.c - the --rss-interval and --rss-source parsers.
 *
 * Every bad value the issue lists (zero, negative, NaN, infinite, below the 1 ms floor, above
 * one hour, garbage, empty, overflow, bare number) is rejected with the right code and a
 * message that names the value and the accepted range; good values parse exactly.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cli_duration.h"
#include "trcfile.h" /* trcfile_rss_source_parse, _name */

static uint64_t parse_ok(const char *text)
{
	uint64_t ns = 0;
	char msg[256] = "untouched";
	int err = duration_parse_ns(text, TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS, &ns, msg, sizeof(msg));
	cr_assert_eq(err, 0, "'%s' rejected: %s", text, msg);
	cr_expect_eq(msg[0], '\0', "'%s': message on success: %s", text, msg);
	return ns;
}

/* Parses text that must fail with err; checks the message quotes `shown` and the range. */
static void parse_bad(const char *text, int err, const char *shown)
{
	uint64_t ns = 777;
	char msg[256] = "";
	int got = duration_parse_ns(text, TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS, &ns, msg, sizeof(msg));
	cr_expect_eq(got, err, "'%s': got %d, want %d (%s)", text ? text : "(null)", got, err, msg);
	cr_expect_eq(ns, 777, "'%s': output written on error", text ? text : "(null)");
	cr_expect_neq(strstr(msg, shown), NULL, "message does not quote '%s': %s", shown, msg);
	cr_expect_neq(strstr(msg, "1ms to 3600s"), NULL, "message lacks the range: %s", msg);
}

Test(duration, accepts_units_exactly)
{
	cr_expect_eq(parse_ok("100ms"), 100000000ull);
	cr_expect_eq(parse_ok("0.5s"), 500000000ull);
	cr_expect_eq(parse_ok("2s"), 2000000000ull);
	cr_expect_eq(parse_ok("250000us"), 250000000ull);
	cr_expect_eq(parse_ok("1500000ns"), 1500000ull);
	cr_expect_eq(parse_ok("1ms"), TRC_RSS_INTERVAL_MIN_NS);
	cr_expect_eq(parse_ok("3600s"), TRC_RSS_INTERVAL_MAX_NS);
	cr_expect_eq(parse_ok("0.001s"), 1000000ull);
	/* Decimal, not binary floating point: 0.1 s is exactly 10^8 ns. */
	cr_expect_eq(parse_ok("0.1s"), 100000000ull);
	cr_expect_eq(parse_ok("1.000000001s"), 1000000001ull);
	cr_expect_eq(parse_ok("1.0000000010s"), 1000000001ull);
	cr_expect_eq(parse_ok("2.5ms"), 2500000ull);
	cr_expect_eq(parse_ok("007ms"), 7000000ull);
}

Test(duration, zero_and_negative)
{
	parse_bad("0s", -ERANGE, "'0s'");
	parse_bad("0ms", -ERANGE, "'0ms'");
	parse_bad("0.0s", -ERANGE, "'0.0s'");
	parse_bad("-1s", -ERANGE, "'-1s'");
	parse_bad("-100ms", -ERANGE, "'-100ms'");
	parse_bad("-0s", -ERANGE, "'-0s'");
	parse_bad("+1s", -EINVAL, "'+1s'");
}

Test(duration, nan_and_infinite)
{
	parse_bad("nan", -EINVAL, "'nan'");
	parse_bad("NaN", -EINVAL, "'NaN'");
	parse_bad("nans", -EINVAL, "'nans'");
	parse_bad("inf", -EINVAL, "'inf'");
	parse_bad("infs", -EINVAL, "'infs'");
	parse_bad("-inf", -EINVAL, "'-inf'");
	parse_bad("infinity", -EINVAL, "'infinity'");
}

Test(duration, below_floor_and_above_an_hour)
{
	parse_bad("999us", -ERANGE, "'999us'");
	parse_bad("999999ns", -ERANGE, "'999999ns'");
	parse_bad("0.5ms", -ERANGE, "'0.5ms'");
	parse_bad("1ns", -ERANGE, "'1ns'");
	parse_bad("3600.000000001s", -ERANGE, "'3600.000000001s'");
	parse_bad("3601s", -ERANGE, "'3601s'");
	parse_bad("86400s", -ERANGE, "'86400s'");
}

Test(duration, overflow)
{
	/* 2^64 ns and beyond, in every way of getting there: never wrapped into range. */
	parse_bad("18446744073709551616ns", -ERANGE, "'18446744073709551616ns'");
	parse_bad("18446744073709552s", -ERANGE, "'18446744073709552s'");
	parse_bad("99999999999999999999999999999999s", -ERANGE, "'99999999999999999999999");
	parse_bad("18446744073709551615.9s", -ERANGE, "'18446744073709551615.9s'");
	/* 2^64 / 10^9 + ms digits: multiplication overflow, not digit overflow. */
	parse_bad("18446744073709551ms", -ERANGE, "'18446744073709551ms'");
}

Test(duration, garbage_empty_and_missing_unit)
{
	parse_bad("", -EINVAL, "''");
	parse_bad("100", -EINVAL, "'100'"); /* bare number: no unit is assumed */
	parse_bad("0.5", -EINVAL, "'0.5'");
	parse_bad("ms", -EINVAL, "'ms'");
	parse_bad("fast", -EINVAL, "'fast'");
	parse_bad("100 ms", -EINVAL, "'100 ms'");
	parse_bad(" 100ms", -EINVAL, "' 100ms'");
	parse_bad("100ms ", -EINVAL, "'100ms '");
	parse_bad("100MS", -EINVAL, "'100MS'");
	parse_bad("100msx", -EINVAL, "'100msx'");
	parse_bad("1e3ms", -EINVAL, "'1e3ms'");
	parse_bad("0x10ms", -EINVAL, "'0x10ms'");
	parse_bad(".5s", -EINVAL, "'.5s'");
	parse_bad("1.s", -EINVAL, "'1.s'");
	parse_bad("1..5s", -EINVAL, "'1..5s'");
	parse_bad("100m", -EINVAL, "'100m'");
	parse_bad("1.5ns", -EINVAL, "'1.5ns'"); /* finer than a nanosecond: not rounded */
	parse_bad("1.0000000001s", -EINVAL, "'1.0000000001s'");
	/* Garbage with a huge number in it is garbage, not out of range. */
	parse_bad("99999999999999999999999999xs", -EINVAL, "'99999999999999999999999");
}

Test(duration, null_and_hostile_text)
{
	uint64_t ns;
	char msg[128];
	char long_text[300];

	parse_bad(NULL, -EINVAL, "''");
	/* Control bytes are not copied into the message; long values are cut. */
	parse_bad("1\x1b[2Jms", -EINVAL, "'1?[2Jms'");
	memset(long_text, '7', sizeof(long_text) - 3);
	strcpy(long_text + sizeof(long_text) - 3, "q");
	cr_assert_eq(duration_parse_ns(long_text, TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS, &ns, msg,
				       sizeof(msg)),
		     -EINVAL);
	cr_expect_neq(strstr(msg, "...'"), NULL, "%s", msg);
	cr_expect_lt(strlen(msg), sizeof(msg));
	/* A small buffer is filled and terminated; no buffer at all is fine too. */
	cr_assert_eq(duration_parse_ns("x", TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS, &ns, msg, 8),
		     -EINVAL);
	cr_expect_eq(strlen(msg), 7);
	cr_expect_eq(duration_parse_ns("x", TRC_RSS_INTERVAL_MIN_NS, TRC_RSS_INTERVAL_MAX_NS, &ns, NULL, 0),
		     -EINVAL);
}

Test(duration, custom_range)
{
	uint64_t ns = 0;
	char msg[200];

	cr_assert_eq(duration_parse_ns("5ns", 1, 10, &ns, msg, sizeof(msg)), 0);
	cr_expect_eq(ns, 5);
	cr_expect_eq(duration_parse_ns("11ns", 1, 10, &ns, msg, sizeof(msg)), -ERANGE);
	cr_expect_neq(strstr(msg, "1ns to 10ns"), NULL, "%s", msg);
	/* An empty range is a caller error. */
	cr_expect_eq(duration_parse_ns("5ns", 10, 1, &ns, msg, sizeof(msg)), -EINVAL);
	/* With min 0, zero is a valid duration. */
	cr_expect_eq(duration_parse_ns("0s", 0, 10, &ns, msg, sizeof(msg)), 0);
	cr_expect_eq(ns, 0);
}

Test(duration, format)
{
	char buf[32];
	cr_expect_str_eq(duration_format_ns(1000000, buf, sizeof(buf)), "1ms");
	cr_expect_str_eq(duration_format_ns(TRC_RSS_INTERVAL_MAX_NS, buf, sizeof(buf)), "3600s");
	cr_expect_str_eq(duration_format_ns(1500000, buf, sizeof(buf)), "1500us");
	cr_expect_str_eq(duration_format_ns(7, buf, sizeof(buf)), "7ns");
	cr_expect_str_eq(duration_format_ns(0, buf, sizeof(buf)), "0s");
}

Test(rss_source, parse_and_name)
{
	static const struct {
		const char *name;
		enum trc_rss_source src;
	} good[] = {
		{"statm", TRC_RSS_STATM},
		{"status", TRC_RSS_STATUS},
		{"smaps_rollup", TRC_RSS_SMAPS_ROLLUP},
		{"both", TRC_RSS_BOTH},
	};
	static const char *const bad[] = {"", "STATM", "stat", "statm ", "smaps", "all", "0", "none"};
	enum trc_rss_source s;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		s = (enum trc_rss_source)0;
		cr_expect_eq(trcfile_rss_source_parse(good[i].name, &s), 0, "%s", good[i].name);
		cr_expect_eq(s, good[i].src, "%s", good[i].name);
		cr_expect_str_eq(trcfile_rss_source_name(good[i].src), good[i].name);
	}
	/* The values are on disk (file header, RSS records): wire.h must never change them. */
	cr_expect_eq(TRC_RSS_STATM, 1);
	cr_expect_eq(TRC_RSS_STATUS, 2);
	cr_expect_eq(TRC_RSS_SMAPS_ROLLUP, 3);
	cr_expect_eq(TRC_RSS_BOTH, 4);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = TRC_RSS_STATM;
		cr_expect_eq(trcfile_rss_source_parse(bad[i], &s), -EINVAL, "'%s'", bad[i]);
		cr_expect_eq(s, TRC_RSS_STATM);
	}
	cr_expect_eq(trcfile_rss_source_parse(NULL, &s), -EINVAL);
	cr_expect_str_eq(trcfile_rss_source_name(0), "none");
	cr_expect_str_eq(trcfile_rss_source_name(5), "unknown");
}
