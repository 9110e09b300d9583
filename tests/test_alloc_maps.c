/* test_alloc_maps.c - memory mapped outside malloc is recorded, with its call stack.
 *
 * prog_maps maps, remaps and unmaps memory through mmap, mremap, munmap and sbrk, and maps a
 * file: the trace holds exactly those calls (MAP with its kind and stack, UNMAP), none of the
 * tracer's own mappings (the session region, the unwinder's tables, the capture's arena), and
 * trace-dump memory puts the mapped bytes beside RSS.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")
#define TD e2e_path("bin/trace-dump")

/* The lines of text holding needle, joined. */
static char *lines_with(const char *text, const char *needle)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = calloc(cap, 1);
	cr_assert_not_null(out);
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l + 1) : strlen(l);
		if (memmem(l, n, needle, strlen(needle))) {
			memcpy(out + len, l, n);
			len += n;
		}
		l += n;
	}
	return out;
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(alloc_maps, each_call_is_one_record_with_its_stack, .timeout = 120)
{
	if (getenv("TRC_SANITIZER_TIER"))
		cr_skip_test("the traced program is the plain build's: checked in the plain tier");
	const char *dir = e2e_tmpdir();
	char out[300], file[300];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	snprintf(file, sizeof(file), "%s/page", dir);
	FILE *f = fopen(file, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 4096; i++)
		fputc('x', f);
	fclose(f);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--rss-interval", "5ms", "-o", out, "--",
				   e2e_path("tests/prog_maps"), file, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "maps done\n");
	e2e_free(&r);
	r = e2e_run(dir, TD, "events", out, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	char *maps = lines_with(r.out, " map "), *unmaps = lines_with(r.out, " unmap ");
	/* Exactly the program's four mappings and four unmappings, in order, each map with a
	 * stack. */
	cr_expect_eq(count(maps, "\n"), 4, "%s", maps);
	cr_expect_eq(count(unmaps, "\n"), 4, "%s", unmaps);
	const char *m1 = strstr(maps, "len=8388608 kind=anon stack=");
	const char *m2 = strstr(maps, "len=16777216 kind=remap stack=");
	const char *m3 = strstr(maps, "len=1048576 kind=brk stack=");
	const char *m4 = strstr(maps, "len=4096 kind=file stack=");
	cr_expect(m1 && m2 && m3 && m4 && m1 < m2 && m2 < m3 && m3 < m4, "%s", maps);
	cr_expect_eq(count(unmaps, "len=8388608\n"), 1, "%s", unmaps);
	cr_expect_eq(count(unmaps, "len=16777216\n"), 1, "%s", unmaps);
	cr_expect_eq(count(unmaps, "len=1048576\n"), 1, "%s", unmaps);
	cr_expect_eq(count(unmaps, "len=4096\n"), 1, "%s", unmaps);
	free(maps);
	free(unmaps);
	e2e_free(&r);
	/* The 8 MiB map's stack names the function that called mmap. */
	r = e2e_run(dir, TD, "memory", "--csv", "series", out, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_expect(strstr(r.out, ",8388608\n") || strstr(r.out, ",16777216\n"),
		  "no sample saw the mapping: %s", r.out);
	e2e_free(&r);
	e2e_rm_rf(dir);
}
