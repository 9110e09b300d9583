/* test_cli_numbers.c - the byte sizes users type (tools/cli/cli_size.c: trace-run --buffer-size,
 * trace-dump --split-size), exactly, at the edges of 64 bits; and the byte counts both commands
 * print (tools/cli/cli_bytes.c), a range as one figure when its ends print alike.
 *
 * 2^64 - 1 is the largest size; 2^64 (18446744073709551616), a unit that takes a number past
 * it, and a sign (strtoull would negate "-1" to 2^64 - 1, after spaces too) are refused, never
 * wrapped into a size.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "cli_bytes.h"
#include "cli_size.h"

static void size_ok(const char *text, uint64_t want)
{
	uint64_t v = 12345;
	int err = cli_parse_size(text, &v);
	cr_expect_eq(err, 0, "\"%s\": %d", text, err);
	cr_expect_eq(v, want, "\"%s\": %llu, want %llu", text, (unsigned long long)v,
		     (unsigned long long)want);
}

static void size_bad(const char *text, int want)
{
	uint64_t v = 12345;
	int err = cli_parse_size(text, &v);
	cr_expect_eq(err, want, "\"%s\": %d, want %d (value %llu)", text, err, want,
		     (unsigned long long)v);
	cr_expect_eq(v, 12345, "\"%s\": output written on error", text);
}

Test(cli_size, units_exactly, .timeout = 10)
{
	size_ok("0", 0);
	size_ok("65536", 65536);
	size_ok("64K", 64u << 10);
	size_ok("64k", 64u << 10);
	size_ok("64KiB", 64u << 10);
	size_ok("64KB", 64u << 10);
	size_ok("4M", 4u << 20);
	size_ok("4mib", 4u << 20);
	size_ok("1G", 1u << 30);
	size_ok("3GiB", 3ull << 30);
}

Test(cli_size, edges_of_64_bits, .timeout = 10)
{
	size_ok("18446744073709551615", UINT64_MAX);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("18446744073709551617", -ERANGE);
	size_bad("99999999999999999999999999", -ERANGE);
	size_ok("18014398509481983K", 18014398509481983ull << 10); /* (2^64-1) >> 10 */
	size_bad("18014398509481984K", -ERANGE);
	size_ok("17592186044415M", 17592186044415ull << 20);
	size_bad("17592186044416M", -ERANGE);
	size_ok("17179869183G", 17179869183ull << 30);
	size_bad("17179869184G", -ERANGE);
	size_bad("18446744073709551616K", -ERANGE);
}

Test(cli_size, signs_spaces_and_garbage, .timeout = 10)
{
	static const char *const bad[] = {
		"",   "-1",    "+1", " -1", " 1",  "\t1", "1 ",	 "-0",	"0x10", "1.5M",
		"1T", "1KiBx", "K",  "1MM", "1 M", "1e3", "--1", " +1", "\n5",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		size_bad(bad[i], -EINVAL);
	size_bad(NULL, -EINVAL);
}

Test(cli_bytes, each_unit_with_one_decimal, .timeout = 10)
{
	char b[32];
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), 0), "0 B");
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), 1023), "1023 B");
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), 1024), "1.0 KiB");
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), 19062784), "18.2 MiB");
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), 3ull << 29), "1.5 GiB");
	cr_expect_str_eq(cli_fmt_bytes(b, sizeof(b), UINT64_MAX), "16.0 EiB");
}

Test(cli_bytes, a_range_whose_ends_print_alike_is_one_figure, .timeout = 10)
{
	char b[64];
	cr_expect_str_eq(cli_fmt_bytes_range(b, sizeof(b), 1916928, 2202009), "1.8 MiB to 2.1 MiB");
	/* 3.90 and 3.94 MiB: "3.9 MiB to 3.9 MiB" says nothing a single figure does not. */
	cr_expect_str_eq(cli_fmt_bytes_range(b, sizeof(b), 4089446, 4131389), "3.9 MiB");
	cr_expect_str_eq(cli_fmt_bytes_range(b, sizeof(b), 512, 512), "512 B");
	cr_expect_str_eq(cli_fmt_bytes_range(b, sizeof(b), 1023, 1024), "1023 B to 1.0 KiB");
}
