/* test_duration.c - the duration parser both commands use (tools/cli/cli_duration.c), and the
 * --rss-source parser.
 *
 * One rule for every duration: a unit is required (ns, us, ms, s, m, h), a bare number is
 * rejected with a message suggesting the units that would be accepted; every other bad value
 * (zero, negative, NaN, infinite, below the floor, above the ceiling, garbage, empty,
 * overflow, finer than 1 ns) is rejected with the right code and one exact message naming the
 * value and the accepted range; good values parse exactly, in decimal.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_duration.h"
#include "trcfile.h" /* trcfile_rss_source_parse, _name */

#define RSS_MIN TRC_RSS_INTERVAL_MIN_NS
#define RSS_MAX TRC_RSS_INTERVAL_MAX_NS
#define RSS_RANGE "accepted: 1ms to 1h, with a unit (ns, us, ms, s, m, h)"

static uint64_t parse_in(const char *text, uint64_t min_ns, uint64_t max_ns)
{
	uint64_t ns = 0;
	char msg[256] = "untouched";
	int err = duration_parse_ns(text, min_ns, max_ns, &ns, msg, sizeof(msg));
	cr_assert_eq(err, 0, "\"%s\" rejected: %s", text, msg);
	cr_expect_str_empty(msg, "\"%s\": message on success: %s", text, msg);
	return ns;
}

static uint64_t parse_ok(const char *text)
{
	return parse_in(text, RSS_MIN, RSS_MAX);
}

/* text must fail with err and exactly the message want. */
static void parse_bad_in(const char *text, uint64_t min_ns, uint64_t max_ns, int err,
			 const char *want)
{
	uint64_t ns = 777;
	char msg[256] = "";
	int got = duration_parse_ns(text, min_ns, max_ns, &ns, msg, sizeof(msg));
	cr_expect_eq(got, err, "\"%s\": got %d, want %d (%s)", text ? text : "(null)", got, err,
		     msg);
	cr_expect_eq(ns, 777, "\"%s\": output written on error", text ? text : "(null)");
	cr_expect_str_eq(msg, want, "\"%s\":\n got: %s\nwant: %s", text ? text : "(null)", msg,
			 want);
}

/* In the --rss-interval range, with the usual message: invalid duration "TEXT": WHY; ... */
static void parse_bad(const char *text, int err, const char *why)
{
	char want[256];
	snprintf(want, sizeof(want), "invalid duration \"%s\": %s; " RSS_RANGE, text ? text : "",
		 why);
	parse_bad_in(text, RSS_MIN, RSS_MAX, err, want);
}

Test(duration, accepts_units_exactly, .timeout = 60)
{
	cr_expect_eq(parse_ok("100ms"), 100000000ull);
	cr_expect_eq(parse_ok("0.5s"), 500000000ull);
	cr_expect_eq(parse_ok("2s"), 2000000000ull);
	cr_expect_eq(parse_ok("250000us"), 250000000ull);
	cr_expect_eq(parse_ok("1500000ns"), 1500000ull);
	cr_expect_eq(parse_ok("1ms"), RSS_MIN);
	cr_expect_eq(parse_ok("3600s"), RSS_MAX);
	cr_expect_eq(parse_ok("0.001s"), 1000000ull);
	/* Decimal, not binary floating point: 0.1 s is exactly 10^8 ns. */
	cr_expect_eq(parse_ok("0.1s"), 100000000ull);
	cr_expect_eq(parse_ok("1.000000001s"), 1000000001ull);
	cr_expect_eq(parse_ok("1.0000000010s"), 1000000001ull);
	cr_expect_eq(parse_ok("2.5ms"), 2500000ull);
	cr_expect_eq(parse_ok("007ms"), 7000000ull);
}

Test(duration, minutes_and_hours, .timeout = 60)
{
	/* --help promises up to 1h: it is accepted, in every spelling of the same hour. */
	cr_expect_eq(parse_ok("1h"), RSS_MAX);
	cr_expect_eq(parse_ok("60m"), RSS_MAX);
	cr_expect_eq(parse_ok("1.0h"), RSS_MAX);
	cr_expect_eq(parse_ok("1m"), 60000000000ull);
	cr_expect_eq(parse_ok("0.5m"), 30000000000ull);
	cr_expect_eq(parse_ok("1.5m"), 90000000000ull);
	cr_expect_eq(parse_ok("0.25h"), 900000000000ull);
	cr_expect_eq(parse_ok("0.001m"), 60000000ull);
	/* A fraction is exact as a whole: 1/60000 m is 1 ms, though it is no finite decimal;
	 * 0.00000000005m is exactly 3 ns although no single digit of it is a whole ns. */
	cr_expect_eq(parse_in("0.00000000005m", 0, UINT64_MAX), 3ull);
	cr_expect_eq(parse_in("0.0000000000025h", 0, UINT64_MAX), 9ull);
	cr_expect_eq(parse_in("5124095h", 0, UINT64_MAX), 18446742000000000000ull);
	parse_bad("61m", -ERANGE, "too large");
	parse_bad("1.000000000001h", -EINVAL, "finer than 1ns");
	parse_bad("2h", -ERANGE, "too large");
	parse_bad("0.00001m", -ERANGE, "too small");
	parse_bad("0.00000000001m", -EINVAL, "finer than 1ns"); /* 0.6 ns */
	parse_bad("0.000000000001h", -EINVAL, "finer than 1ns"); /* 3.6 ns */
	parse_bad_in("5124096h", 0, UINT64_MAX, -ERANGE,
		     "invalid duration \"5124096h\": too large; accepted: 0s to "
		     "18446744073709551615ns, with a unit (ns, us, ms, s, m, h)");
}

Test(duration, bare_number_suggests_the_units, .timeout = 60)
{
	/* Every unit that gives an accepted value is suggested, none that does not. */
	parse_bad_in("100", 0, UINT64_MAX, -EINVAL,
		     "\"100\" has no unit; write 100ns, 100us, 100ms or 100s");
	parse_bad_in("100", RSS_MIN, RSS_MAX, -EINVAL, "\"100\" has no unit; write 100ms or 100s");
	parse_bad_in("5000", RSS_MIN, RSS_MAX, -EINVAL,
		     "\"5000\" has no unit; write 5000us or 5000ms");
	parse_bad_in("1", RSS_MIN, RSS_MAX, -EINVAL, "\"1\" has no unit; write 1ms or 1s");
	parse_bad_in("3601", RSS_MIN, RSS_MAX, -EINVAL,
		     "\"3601\" has no unit; write 3601us or 3601ms");
	parse_bad_in("0.5", RSS_MIN, RSS_MAX, -EINVAL, "\"0.5\" has no unit; write 0.5s");
	parse_bad_in("0.5", 0, UINT64_MAX, -EINVAL,
		     "\"0.5\" has no unit; write 0.5us, 0.5ms or 0.5s");
	parse_bad_in("0", 0, UINT64_MAX, -EINVAL, "\"0\" has no unit; write 0ns, 0us, 0ms or 0s");
	/* None would do: the range is given instead. */
	parse_bad_in("0", RSS_MIN, RSS_MAX, -EINVAL, "\"0\" has no unit; " RSS_RANGE);
	parse_bad_in("-5", RSS_MIN, RSS_MAX, -EINVAL, "\"-5\" has no unit; " RSS_RANGE);
	parse_bad_in("99999999999999999999", RSS_MIN, RSS_MAX, -EINVAL,
		     "\"99999999999999999999\" has no unit; " RSS_RANGE);
	parse_bad_in(
		"1234567890123456789012345678901234567890123456789", RSS_MIN, RSS_MAX, -EINVAL,
		"\"123456789012345678901234567890123456789012345678...\" has no unit; " RSS_RANGE);
}

Test(duration, zero_and_negative, .timeout = 60)
{
	parse_bad("0s", -ERANGE, "zero");
	parse_bad("0ms", -ERANGE, "zero");
	parse_bad("0.0s", -ERANGE, "zero");
	parse_bad("0h", -ERANGE, "zero");
	parse_bad("-1s", -ERANGE, "negative");
	parse_bad("-100ms", -ERANGE, "negative");
	parse_bad("-0s", -ERANGE, "zero");
	parse_bad("+1s", -EINVAL, "not a number");
	/* Where zero is accepted, it is a time like any other; a sign never is. */
	cr_expect_eq(parse_in("0s", 0, UINT64_MAX), 0);
	cr_expect_eq(parse_in("0.000ns", 0, UINT64_MAX), 0);
	parse_bad_in("-0s", 0, UINT64_MAX, -ERANGE,
		     "invalid duration \"-0s\": negative; accepted: 0s to 18446744073709551615ns, "
		     "with a unit (ns, us, ms, s, m, h)");
}

Test(duration, nan_and_infinite, .timeout = 60)
{
	parse_bad("nan", -EINVAL, "not a number");
	parse_bad("NaN", -EINVAL, "not a number");
	parse_bad("nans", -EINVAL, "not a number");
	parse_bad("inf", -EINVAL, "not a number");
	parse_bad("infs", -EINVAL, "not a number");
	parse_bad("-inf", -EINVAL, "not a number");
	parse_bad("infinity", -EINVAL, "not a number");
}

Test(duration, below_floor_and_above_an_hour, .timeout = 60)
{
	parse_bad("999us", -ERANGE, "too small");
	parse_bad("999999ns", -ERANGE, "too small");
	parse_bad("0.5ms", -ERANGE, "too small");
	parse_bad("1ns", -ERANGE, "too small");
	parse_bad("3600.000000001s", -ERANGE, "too large");
	parse_bad("3601s", -ERANGE, "too large");
	parse_bad("86400s", -ERANGE, "too large");
	parse_bad("1.0000001h", -ERANGE, "too large");
}

Test(duration, overflow, .timeout = 60)
{
	/* 2^64 ns and beyond, in every way of getting there: never wrapped into range. */
	parse_bad("18446744073709551616ns", -ERANGE, "too large");
	parse_bad("18446744073709552s", -ERANGE, "too large");
	parse_bad("99999999999999999999999999999999s", -ERANGE, "too large");
	parse_bad("18446744073709551615.9s", -ERANGE, "too large");
	/* 2^64 / 10^9 + ms digits: multiplication overflow, not digit overflow. */
	parse_bad("18446744073709551ms", -ERANGE, "too large");
	/* In hours: 5124096h is past 2^64 ns; the fraction pushes 5124095h over. */
	parse_bad("5124096h", -ERANGE, "too large");
	parse_bad("5124095.999h", -ERANGE, "too large");
	/* The last nanosecond that fits, and the first that does not. */
	cr_expect_eq(parse_in("18446744073709551615ns", 0, UINT64_MAX), UINT64_MAX);
	cr_expect_eq(parse_in("18446744073.709551615s", 0, UINT64_MAX), UINT64_MAX);
	parse_bad_in("18446744073.709551616s", 0, UINT64_MAX, -ERANGE,
		     "invalid duration \"18446744073.709551616s\": too large; accepted: 0s to "
		     "18446744073709551615ns, with a unit (ns, us, ms, s, m, h)");
}

Test(duration, garbage_empty_and_unknown_unit, .timeout = 60)
{
	parse_bad("", -EINVAL, "empty value");
	parse_bad("ms", -EINVAL, "not a number");
	parse_bad("fast", -EINVAL, "not a number");
	parse_bad("100 ms", -EINVAL, "unknown unit");
	parse_bad(" 100ms", -EINVAL, "not a number");
	parse_bad("100ms ", -EINVAL, "unknown unit");
	parse_bad("100MS", -EINVAL, "unknown unit");
	parse_bad("100msx", -EINVAL, "unknown unit");
	parse_bad("100min", -EINVAL, "unknown unit");
	parse_bad("1d", -EINVAL, "unknown unit");
	parse_bad("1H", -EINVAL, "unknown unit");
	parse_bad("1e3ms", -EINVAL, "unknown unit");
	parse_bad("0x10ms", -EINVAL, "unknown unit");
	parse_bad(".5s", -EINVAL, "not a number");
	parse_bad("1.s", -EINVAL, "no digit after the point");
	parse_bad("1..5s", -EINVAL, "no digit after the point");
	parse_bad("1.5.s", -EINVAL, "unknown unit");
	parse_bad("1.5ns", -EINVAL, "finer than 1ns"); /* not rounded */
	parse_bad("1.0000000001s", -EINVAL, "finer than 1ns");
	parse_bad("1.00000000000000000000000000001ms", -EINVAL, "finer than 1ns");
	/* Garbage with a huge number in it is garbage, not out of range. */
	parse_bad("99999999999999999999999999xs", -EINVAL, "unknown unit");
}

Test(duration, null_and_hostile_text, .timeout = 60)
{
	uint64_t ns;
	char msg[160];
	char long_text[300];

	parse_bad(NULL, -EINVAL, "empty value");
	/* Control bytes are not copied into the message; long values are cut. */
	parse_bad_in("1\x1b[2Jms", RSS_MIN, RSS_MAX, -EINVAL,
		     "invalid duration \"1?[2Jms\": unknown unit; " RSS_RANGE);
	memset(long_text, '7', sizeof(long_text) - 3);
	strcpy(long_text + sizeof(long_text) - 3, "q");
	cr_assert_eq(duration_parse_ns(long_text, RSS_MIN, RSS_MAX, &ns, msg, sizeof(msg)),
		     -EINVAL);
	cr_expect_str_eq(msg, "invalid duration \"777777777777777777777777777777777777777777777777"
			      "...\": unknown unit; " RSS_RANGE);
	/* A small buffer is filled and terminated; no buffer at all is fine too. */
	cr_assert_eq(duration_parse_ns("x", RSS_MIN, RSS_MAX, &ns, msg, 8), -EINVAL);
	cr_expect_str_eq(msg, "invalid");
	cr_assert_eq(duration_parse_ns("100", RSS_MIN, RSS_MAX, &ns, msg, 20), -EINVAL);
	cr_expect_str_eq(msg, "\"100\" has no unit; ");
	cr_expect_eq(duration_parse_ns("x", RSS_MIN, RSS_MAX, &ns, NULL, 0), -EINVAL);
	cr_expect_eq(duration_parse_ns("100", RSS_MIN, RSS_MAX, &ns, NULL, 0), -EINVAL);
}

Test(duration, custom_range, .timeout = 60)
{
	uint64_t ns = 0;
	char msg[200];

	cr_assert_eq(duration_parse_ns("5ns", 1, 10, &ns, msg, sizeof(msg)), 0);
	cr_expect_eq(ns, 5);
	cr_expect_eq(duration_parse_ns("11ns", 1, 10, &ns, msg, sizeof(msg)), -ERANGE);
	cr_expect_str_eq(msg, "invalid duration \"11ns\": too large; accepted: 1ns to 10ns, with "
			      "a unit (ns, us, ms, s, m, h)");
	/* An empty range is a caller error. */
	cr_expect_eq(duration_parse_ns("5ns", 10, 1, &ns, msg, sizeof(msg)), -EINVAL);
	/* With min 0, zero is a valid duration. */
	cr_expect_eq(duration_parse_ns("0s", 0, 10, &ns, msg, sizeof(msg)), 0);
	cr_expect_eq(ns, 0);
}

Test(duration, format, .timeout = 60)
{
	char buf[32];
	cr_expect_str_eq(duration_format_ns(1000000, buf, sizeof(buf)), "1ms");
	cr_expect_str_eq(duration_format_ns(RSS_MAX, buf, sizeof(buf)), "1h");
	cr_expect_str_eq(duration_format_ns(60000000000ull, buf, sizeof(buf)), "1m");
	cr_expect_str_eq(duration_format_ns(90000000000ull, buf, sizeof(buf)), "90s");
	cr_expect_str_eq(duration_format_ns(7200000000000ull, buf, sizeof(buf)), "2h");
	cr_expect_str_eq(duration_format_ns(1500000, buf, sizeof(buf)), "1500us");
	cr_expect_str_eq(duration_format_ns(7, buf, sizeof(buf)), "7ns");
	cr_expect_str_eq(duration_format_ns(0, buf, sizeof(buf)), "0s");
	cr_expect_str_eq(duration_format_ns(UINT64_MAX, buf, sizeof(buf)),
			 "18446744073709551615ns");
	/* What it writes parses back to the same value. */
	static const uint64_t vals[] = {
		1, 999, 1000000, 60000000000ull, 3600000000000ull, 123456789012ull, UINT64_MAX};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		cr_expect_eq(parse_in(duration_format_ns(vals[i], buf, sizeof(buf)), 0, UINT64_MAX),
			     vals[i], "%s", buf);
}

Test(rss_source, parse_and_name, .timeout = 60)
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
	static const char *const bad[] = {"",	   "STATM", "stat", "statm ",
					  "smaps", "all",   "0",    "none"};
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
