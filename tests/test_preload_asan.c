/* test_preload_asan.c - the preload library's malloc hooks under AddressSanitizer (the ASan
 * tier only; skipped elsewhere). build/asan's trace-run records an uninstrumented program
 * (prog_plain_allocs) with the instrumented preload library (libtrc-preload-asan.so) put in
 * its LD_PRELOAD before clang's shared ASan runtime, through TRC_PRELOAD: the program's malloc
 * is the hook, the hook's next malloc is ASan's, so every block the hooks hand out has ASan's
 * redzones and the hooks' own code is checked (a write past a block, a use after free, a leak
 * at exit: the runtime reports it and the program fails). The runtime comes second, so its
 * link-order check is turned off (verify_asan_link_order=0). The allocations must be recorded
 * exactly: 8 blocks of the sizes the program asked for, each freed once. */
#include <limits.h>
#include <stdlib.h>

#include "e2e_util.h"

#define TR e2e_path("bin/trace-run")

/* The sizes prog_plain_allocs asks for (see there); realloc frees the first block. */
static const int64_t sizes[] = {70001, 70007, 70010, 70020, 70144, 70030, 70040, 70050};

static bool is_prog_size(int64_t s)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i] == s)
			return true;
	return false;
}

/* clang's shared ASan runtime, as the build found it. */
static void asan_runtime(char *out, size_t len)
{
	FILE *p = popen("clang -print-file-name=libclang_rt.asan-x86_64.so", "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(out, (int)len, p));
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	cr_assert_eq(access(out, R_OK), 0, "no ASan runtime at %s", out);
}

Test(preload_asan, hooks_record_exactly_and_asan_reports_nothing, .timeout = 120)
{
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (!tier || strcmp(tier, "asan"))
		cr_skip_test("the ASan tier only (make SAN=asan test-asan)");
	const char *lib = e2e_path("lib/libtrc-preload-asan.so");
	cr_assert_eq(access(lib, R_OK), 0, "%s is not built", lib);
	char rt[1024], preload[2048], asan[1024];
	asan_runtime(rt, sizeof(rt));
	snprintf(preload, sizeof(preload), "%s:%s", lib, rt);
	const char *old = getenv("ASAN_OPTIONS");
	/* symbolize=0: the suppressions of tests/lsan.supp match by module name, and the
	 * program's LD_PRELOAD keeps ASan from starting its symbolizer (it would say so). */
	snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0:symbolize=0", old ? old : "",
		 old && *old ? ":" : "");

	const char *dir = e2e_tmpdir();
	char trace[300];
	snprintf(trace, sizeof(trace), "%s/t.trc", dir);
	setenv("TRC_PRELOAD", preload, 1);
	setenv("ASAN_OPTIONS", asan, 1);
	/* The traced program's own suppressions (tests/lsan_preload.supp: the loader's TLS block
	 * for libunwind); trace-run keeps the tier's. */
	const char *old_lsan = getenv("LSAN_OPTIONS");
	char lsan[PATH_MAX + 64], supp[PATH_MAX];
	cr_assert_not_null(realpath("tests/lsan_preload.supp", supp), "run from the source tree");
	snprintf(lsan, sizeof(lsan), "suppressions=%s:print_suppressions=0", supp);
	setenv("LSAN_OPTIONS", lsan, 1);
	struct e2e_run r = e2e_run(dir, TR, "-q", "-o", trace, "--",
				   e2e_path("tests/prog_plain_allocs"), NULL);
	unsetenv("TRC_PRELOAD");
	if (old_lsan)
		setenv("LSAN_OPTIONS", old_lsan, 1);
	else
		unsetenv("LSAN_OPTIONS");
	if (old)
		setenv("ASAN_OPTIONS", old, 1);
	else
		unsetenv("ASAN_OPTIONS");
	cr_expect_eq(r.exit_code, 0, "exit %d: %s", r.exit_code, r.err);
	cr_expect_str_eq(r.out, "allocs 8 bytes 560302\n");
	cr_expect_str_eq(r.err, "", "ASan or trace-run said something: %s", r.err);
	e2e_free(&r);

	/* Every alloc and free record: the program's 8 blocks, each freed once after it was
	 * allocated. */
	struct e2e_run ev = e2e_run(dir, (char *)e2e_path("bin/trace-dump"), "events",
				    "--no-symbols", trace, NULL);
	cr_assert_eq(ev.exit_code, 0, "trace-dump events: %s", ev.err);
	uint64_t addr[8] = {0};
	int n = 0, freed = 0, frees = 0;
	int64_t bytes = 0;
	char *save = NULL;
	for (char *l = strtok_r(ev.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		const char *a = strstr(l, " alloc addr=");
		const char *f = strstr(l, " free addr=");
		if (a) {
			uint64_t ad = strtoull(a + 12, NULL, 16);
			const char *s = strstr(a, " size=");
			int64_t sz = s ? strtoll(s + 6, NULL, 10) : -1;
			if (!is_prog_size(sz))
				continue;
			cr_assert_lt(n, 8, "more than 8 blocks of the program's sizes");
			addr[n++] = ad;
			bytes += sz;
		} else if (f) {
			uint64_t ad = strtoull(f + 11, NULL, 16);
			for (int i = 0; i < n; i++)
				if (addr[i] == ad) {
					addr[i] =
						0; /* freed: a second free of it would not match */
					freed++;
				}
			frees++;
		}
	}
	cr_expect_eq(n, 8, "blocks of the program's sizes recorded: %d", n);
	cr_expect_eq(bytes, 560302);
	cr_expect_eq(freed, 8, "of the 8 blocks, %d were recorded freed", freed);
	cr_expect_geq(frees, 8);
	e2e_free(&ev);
	e2e_rm_rf(dir);
}
