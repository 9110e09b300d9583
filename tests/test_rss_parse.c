/* test_rss_parse.c - the /proc parsers on real captures and malformed variants (tests/data/).
 *
 * The captures come from prog_touch_mem 32 on this machine (tests/data/README); the expected
 * figures below are the numbers in those files. Beyond the files, every prefix of each real
 * capture is parsed: the parser must either fail or give exactly the full file's figures,
 * which is "a clear error, never a wrong number" checked at every cut point.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rss_parse.h"

#define KIB 1024ull
#define PAGE 4096ull

struct blob {
	char *text;
	size_t len;
};

static struct blob load(const char *name)
{
	const char *dir = getenv("TRC_TEST_DATA") ? getenv("TRC_TEST_DATA") : "tests/data";
	char path[512];
	struct blob b = {NULL, 0};
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s (run from the top of the tree)", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	/* Exactly len bytes, no NUL after them: the parsers must not need one. */
	b.text = malloc((size_t)n + 1);
	cr_assert_not_null(b.text);
	b.len = fread(b.text, 1, (size_t)n, f);
	cr_assert_eq(b.len, (size_t)n);
	fclose(f);
	return b;
}

static int statm_file(const char *name, struct rss_statm *out)
{
	struct blob b = load(name);
	int err = rss_parse_statm(b.text, b.len, PAGE, out);
	free(b.text);
	return err;
}

static int status_file(const char *name, struct rss_status *out)
{
	struct blob b = load(name);
	int err = rss_parse_status(b.text, b.len, out);
	free(b.text);
	return err;
}

static int rollup_file(const char *name, struct rss_rollup *out)
{
	struct blob b = load(name);
	int err = rss_parse_smaps_rollup(b.text, b.len, out);
	free(b.text);
	return err;
}

/* ---- real captures --------------------------------------------------------------------- */

Test(rss_parse, statm_live, .timeout = 60)
{
	struct rss_statm s;
	cr_assert_eq(statm_file("statm.live", &s), 0);
	cr_expect_eq(s.size_bytes, 8778 * PAGE);
	cr_expect_eq(s.resident_bytes, 8511 * PAGE);
	cr_expect_eq(s.shared_bytes, 296 * PAGE);
}

Test(rss_parse, statm_page_size_scales, .timeout = 60)
{
	static const char text[] = "10 3 1 1 0 2 0\n";
	struct rss_statm s;
	cr_assert_eq(rss_parse_statm(text, strlen(text), 65536, &s), 0);
	cr_expect_eq(s.resident_bytes, 3 * 65536ull);
	cr_expect_eq(rss_parse_statm(text, strlen(text), 0, &s), -EINVAL);
	cr_expect_eq(rss_parse_statm(text, strlen(text), 3000, &s), -EINVAL);
	cr_expect_eq(rss_parse_statm(NULL, 0, PAGE, &s), -EINVAL);
}

Test(rss_parse, status_live, .timeout = 60)
{
	struct rss_status s;
	cr_assert_eq(status_file("status.live", &s), 0);
	cr_expect_eq(s.rss_bytes, 34044 * KIB);
	cr_expect_eq(s.hwm_bytes, 34044 * KIB);
	cr_expect_eq(s.anon_bytes, 32860 * KIB);
	cr_expect_eq(s.file_bytes, 1184 * KIB);
	cr_expect_eq(s.shmem_bytes, 0);
	cr_expect_eq(s.state, 'R');
	/* The split adds up to the total: the parser took each from its own line. */
	cr_expect_eq(s.anon_bytes + s.file_bytes + s.shmem_bytes, s.rss_bytes);
}

Test(rss_parse, smaps_rollup_live, .timeout = 60)
{
	struct rss_rollup r;
	cr_assert_eq(rollup_file("smaps_rollup.live", &r), 0);
	cr_expect_eq(r.rss_bytes, 34044 * KIB);
	/* Pss, not Pss_Anon / Pss_File / Pss_Dirty, which share its prefix. */
	cr_expect_eq(r.pss_bytes, 32949 * KIB);
}

Test(rss_parse, sources_agree_on_one_capture, .timeout = 60)
{
	struct rss_statm m;
	struct rss_status s;
	struct rss_rollup r;
	cr_assert_eq(statm_file("statm.live", &m), 0);
	cr_assert_eq(status_file("status.live", &s), 0);
	cr_assert_eq(rollup_file("smaps_rollup.live", &r), 0);
	cr_expect_eq(m.resident_bytes, s.rss_bytes);
	cr_expect_eq(s.rss_bytes, r.rss_bytes);
}

Test(rss_parse, zombie, .timeout = 60)
{
	struct rss_statm m;
	struct rss_status s;
	/* statm parses (all zeros: the reader, not the parser, calls that gone); status says so. */
	cr_assert_eq(statm_file("statm.zombie", &m), 0);
	cr_expect_eq(m.size_bytes, 0);
	cr_expect_eq(m.resident_bytes, 0);
	cr_expect_eq(status_file("status.zombie", &s), -ESRCH);
}

/* ---- malformed variants ---------------------------------------------------------------- */

struct bad_case {
	const char *file;
	int err;
};

Test(rss_parse, statm_malformed, .timeout = 60)
{
	static const struct bad_case cases[] = {
		{"statm.truncated", -EINVAL},	   {"statm.no_newline", -EINVAL},
		{"statm.missing_field", -EINVAL},  {"statm.extra_field", -EINVAL},
		{"statm.negative", -EINVAL},	   {"statm.nonnumeric", -EINVAL},
		{"statm.empty", -EINVAL},	   {"statm.huge", -ERANGE},
		{"statm.overflow_bytes", -ERANGE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rss_statm s = {.resident_bytes = 12345};
		cr_expect_eq(statm_file(cases[i].file, &s), cases[i].err, "%s", cases[i].file);
		cr_expect_eq(s.resident_bytes, 12345, "%s: output written on error", cases[i].file);
	}
}

Test(rss_parse, status_malformed, .timeout = 60)
{
	static const struct bad_case cases[] = {
		{"status.truncated", -EINVAL},	    {"status.nonnumeric", -EINVAL},
		{"status.no_unit", -EINVAL},	    {"status.duplicate", -EINVAL},
		{"status.huge", -ERANGE},	    {"status.overflow_bytes", -ERANGE},
		{"status.missing_vmrss", -ENODATA}, {"status.missing_hwm", -ENODATA},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rss_status s = {.rss_bytes = 12345};
		cr_expect_eq(status_file(cases[i].file, &s), cases[i].err, "%s", cases[i].file);
		cr_expect_eq(s.rss_bytes, 12345, "%s: output written on error", cases[i].file);
	}
}

Test(rss_parse, smaps_rollup_malformed, .timeout = 60)
{
	static const struct bad_case cases[] = {
		{"smaps_rollup.truncated", -EINVAL},	{"smaps_rollup.no_header", -EINVAL},
		{"smaps_rollup.nonnumeric", -EINVAL},	{"smaps_rollup.huge", -ERANGE},
		{"smaps_rollup.missing_pss", -ENODATA}, {"smaps_rollup.empty", -ENODATA},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rss_rollup r = {.rss_bytes = 12345};
		cr_expect_eq(rollup_file(cases[i].file, &r), cases[i].err, "%s", cases[i].file);
		cr_expect_eq(r.rss_bytes, 12345, "%s: output written on error", cases[i].file);
	}
}

Test(rss_parse, status_edge_lines, .timeout = 60)
{
	/* Unknown and value-less lines are skipped; a used line must be "Key:<ws>N kB". */
	static const char ok[] =
		"Name:\tx\nGroups:\t\nnot a field\nVmHWM:\t2 kB\nVmRSS:\t1 kB\n"
		"RssAnon:\t1 kB\nRssFile:\t0 kB\nRssShmem:\t0 kB\nState:\tS (sleeping)\n";
	static const char no_space[] = "VmHWM:2 kB\nVmRSS:\t1 kB\nRssAnon:\t1 kB\nRssFile:\t0 kB\n"
				       "RssShmem:\t0 kB\n";
	static const char mb_unit[] = "VmHWM:\t2 MB\nVmRSS:\t1 kB\nRssAnon:\t1 kB\nRssFile:\t0 kB\n"
				      "RssShmem:\t0 kB\n";
	static const char zombie_half[] = "State:\tZ (zombie)\nVmRSS:\t1 kB\n";
	static const char exiting[] = "Name:\tx\nState:\tR (running)\nThreads:\t1\n";
	static const char nothing[] = "Name:\tx\nThreads:\t1\n";
	struct rss_status s;

	cr_assert_eq(rss_parse_status(ok, strlen(ok), &s), 0);
	cr_expect_eq(s.rss_bytes, 1024);
	cr_expect_eq(s.hwm_bytes, 2048);
	cr_expect_eq(s.state, 'S');
	cr_expect_eq(rss_parse_status(no_space, strlen(no_space), &s), -EINVAL);
	cr_expect_eq(rss_parse_status(mb_unit, strlen(mb_unit), &s), -EINVAL);
	/* Some memory lines but not all: malformed, not a zombie. */
	cr_expect_eq(rss_parse_status(zombie_half, strlen(zombie_half), &s), -ENODATA);
	/* No memory lines at all: a task that has released its memory, about to be a zombie.
	 * Without even a State line it is not a status file worth trusting. */
	cr_expect_eq(rss_parse_status(exiting, strlen(exiting), &s), -ESRCH);
	cr_expect_eq(rss_parse_status(nothing, strlen(nothing), &s), -ENODATA);
}

/* ---- every cut point of the real captures ---------------------------------------------- */

Test(rss_parse, every_prefix_fails_or_agrees, .timeout = 60)
{
	struct blob m = load("statm.live"), st = load("status.live"),
		    ro = load("smaps_rollup.live");
	struct rss_statm fm, pm;
	struct rss_status fs, ps;
	struct rss_rollup fr, pr;
	size_t ok_status = 0, ok_rollup = 0;

	cr_assert_eq(rss_parse_statm(m.text, m.len, PAGE, &fm), 0);
	cr_assert_eq(rss_parse_status(st.text, st.len, &fs), 0);
	cr_assert_eq(rss_parse_smaps_rollup(ro.text, ro.len, &fr), 0);
	for (size_t n = 0; n < m.len; n++)
		cr_expect_neq(rss_parse_statm(m.text, n, PAGE, &pm), 0, "statm prefix %zu", n);
	for (size_t n = 0; n < st.len; n++) {
		if (rss_parse_status(st.text, n, &ps) != 0)
			continue;
		ok_status++;
		cr_expect_eq(ps.rss_bytes, fs.rss_bytes, "status prefix %zu", n);
		cr_expect_eq(ps.hwm_bytes, fs.hwm_bytes, "status prefix %zu", n);
		cr_expect_eq(ps.anon_bytes, fs.anon_bytes, "status prefix %zu", n);
		cr_expect_eq(ps.file_bytes, fs.file_bytes, "status prefix %zu", n);
		cr_expect_eq(ps.shmem_bytes, fs.shmem_bytes, "status prefix %zu", n);
	}
	for (size_t n = 0; n < ro.len; n++) {
		if (rss_parse_smaps_rollup(ro.text, n, &pr) != 0)
			continue;
		ok_rollup++;
		cr_expect_eq(pr.rss_bytes, fr.rss_bytes, "rollup prefix %zu", n);
		cr_expect_eq(pr.pss_bytes, fr.pss_bytes, "rollup prefix %zu", n);
	}
	/* Prefixes that end on a line break after the last needed field are whole enough;
	 * those exist in both files, so the loops above did compare something. */
	cr_expect_gt(ok_status, 0);
	cr_expect_gt(ok_rollup, 0);
	free(m.text);
	free(st.text);
	free(ro.text);
}

/* ---- the edges of a number and of a line (issue 13) -------------------------------------- */

/* A status file with the five memory lines, VmRSS's value and tail replaced by `rss`. */
static int status_with_rss(const char *rss, struct rss_status *s)
{
	char text[512];
	int n = snprintf(text, sizeof(text),
			 "Name:\tx\nState:\tS (sleeping)\nVmHWM:\t2 kB\nVmRSS:%s\nRssAnon:\t1 kB\n"
			 "RssFile:\t0 kB\nRssShmem:\t0 kB\n",
			 rss);
	return rss_parse_status(text, (size_t)n, s);
}

Test(rss_parse, text_after_kb_is_refused, .timeout = 10)
{
	struct rss_status s = {.rss_bytes = 12345};
	cr_assert_eq(status_with_rss("\t7 kB", &s), 0);
	cr_assert_eq(s.rss_bytes, 7 * KIB);
	static const char *const bad[] = {"\t7 kB extra", "\t7 kBx", "\t7 kB ", "\t7 kB\t",
					  "\t7 kb",	  "\t7 KB",  "\t7 k",	"\t7 kBkB"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s.rss_bytes = 12345;
		cr_expect_eq(status_with_rss(bad[i], &s), -EINVAL, "\"%s\"", bad[i]);
		cr_expect_eq(s.rss_bytes, 12345, "\"%s\": output written on error", bad[i]);
	}
	/* smaps_rollup's lines by the same rule */
	static const char rollup[] = "0-1 ---p 00000000 00:00 0 [rollup]\nRss:  3 kB junk\n"
				     "Pss:  2 kB\n";
	struct rss_rollup r;
	cr_expect_eq(rss_parse_smaps_rollup(rollup, strlen(rollup), &r), -EINVAL);
}

/* 2^64 - 1 is the largest number; 2^64 (18446744073709551616) and anything larger is an
 * overflow, refused as one, never wrapped to a small value (2^64 wraps to 0). */
Test(rss_parse, two_to_the_64_is_an_overflow_not_zero, .timeout = 10)
{
	struct rss_statm m = {.resident_bytes = 12345};
	static const char max[] = "18446744073709551615 1 1 1 0 1 0\n";
	cr_assert_eq(rss_parse_statm(max, strlen(max), 1, &m), 0);
	cr_assert_eq(m.size_bytes, UINT64_MAX);
	cr_assert_eq(m.resident_bytes, 1);
	static const char *const over[] = {
		"18446744073709551616 1 1 1 0 1 0\n", /* 2^64 */
		"1 18446744073709551616 1 1 0 1 0\n",
		"1 1 1 1 0 1 18446744073709551616\n", /* a field the parser does not keep */
		"1 18446744073709551617 1 1 0 1 0\n",
		"1 18446744073709551620 1 1 0 1 0\n", /* wraps to 4 */
		"1 36893488147419103232 1 1 0 1 0\n", /* 2^65 */
		"1 184467440737095516160 1 1 0 1 0\n",
	};
	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		m.resident_bytes = 12345;
		cr_expect_eq(rss_parse_statm(over[i], strlen(over[i]), 1, &m), -ERANGE, "%s",
			     over[i]);
		cr_expect_eq(m.resident_bytes, 12345, "%s: output written on error", over[i]);
	}
	/* Pages and KiB times their unit: the largest that fits, and one more. */
	static const char pages_max[] = "1 4503599627370495 1 1 0 1 0\n"; /* (2^64-1) / 4096 */
	cr_assert_eq(rss_parse_statm(pages_max, strlen(pages_max), PAGE, &m), 0);
	cr_assert_eq(m.resident_bytes, 4503599627370495ull * PAGE);
	static const char pages_over[] = "1 4503599627370496 1 1 0 1 0\n";
	cr_expect_eq(rss_parse_statm(pages_over, strlen(pages_over), PAGE, &m), -ERANGE);
	struct rss_status s;
	cr_assert_eq(status_with_rss("\t18014398509481983 kB", &s), 0); /* (2^64-1) / 1024 */
	cr_assert_eq(s.rss_bytes, 18014398509481983ull * KIB);
	cr_expect_eq(status_with_rss("\t18014398509481984 kB", &s), -ERANGE);
	cr_expect_eq(status_with_rss("\t18446744073709551616 kB", &s), -ERANGE);
	static const char rollup[] = "0-1 ---p 00000000 00:00 0 [rollup]\n"
				     "Rss:  18446744073709551616 kB\nPss:  2 kB\n";
	struct rss_rollup r;
	cr_expect_eq(rss_parse_smaps_rollup(rollup, strlen(rollup), &r), -ERANGE);
}

/* /proc/PID/statm is one line; text after it is refused. */
Test(rss_parse, statm_one_line_only, .timeout = 60)
{
	static const char ok[] = "10 4 2 1 0 3 0\n";
	struct rss_statm st = {0};
	cr_assert_eq(rss_parse_statm(ok, sizeof(ok) - 1, 4096, &st), 0);
	cr_assert_eq(st.size_bytes, 10 * 4096);
	cr_assert_eq(st.resident_bytes, 4 * 4096);
	cr_assert_eq(st.shared_bytes, 2 * 4096);
	static const char *const bad[] = {"10 4 2 1 0 3 0\n7\n", "10 4 2 1 0 3 0\n\n",
					  "10 4 2 1 0 3 0\n10 4 2 1 0 3 0\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rss_statm junk = {0};
		cr_assert_eq(rss_parse_statm(bad[i], strlen(bad[i]), 4096, &junk), -EINVAL,
			     "accepted: \"%s\"", bad[i]);
	}
}
