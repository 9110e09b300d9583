/* test_exports.c - the shared libraries export exactly their public symbols.
 *
 * libtrc.so is linked into users' programs and libtrc-preload.so is preloaded into any program:
 * a symbol they export by accident (ringbuf's ring_*, the runtime's helpers) becomes an ABI we
 * never meant to keep, and can collide with a program's own. The version scripts
 * (src/runtime/libtrc.map, src/preload/preload.map) say what is exported; this test reads the
 * built libraries' dynamic symbol tables with `nm -D --defined-only` and compares them with the
 * lists below, exactly. Changing an export means changing this list on purpose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"

/* Sorted, as `sort` orders them in the C locale. */
static const char *const libtrc_exports[] = {
	"__cyg_profile_func_enter",
	"__cyg_profile_func_exit",
	"trc__emit_full",
	"trc__emit_slow",
	"trc__exit_code",
	"trc__frames_exec",
	"trc__frames_jump",
	"trc__frames_pop_slow",
	"trc__frames_push_slow",
	"trc__frames_resume",
	"trc__frames_suspend",
	"trc__mode",
	"trc__modules_changed",
	"trc__process_exiting",
	"trc__self",
	"trc__site_intern",
	"trc__stack_emit",
	"trc__thread_name",
	"trc_attach",
};

static const char *const preload_exports[] = {
	"_Exit",
	"__cyg_profile_func_enter",
	"__cyg_profile_func_exit",
	"__libc_start_main",
	"__longjmp_chk",
	"_exit",
	"_longjmp",
	"aligned_alloc",
	"brk",
	"calloc",
	"dlopen",
	"execl",
	"execle",
	"execlp",
	"execv",
	"execve",
	"execvp",
	"execvpe",
	"exit",
	"fexecve",
	"free",
	"longjmp",
	"malloc",
	"malloc_usable_size",
	"memalign",
	"mmap",
	"mmap64",
	"mremap",
	"munmap",
	"posix_memalign",
	"pvalloc",
	"realloc",
	"reallocarray",
	"sbrk",
	"setcontext",
	"siglongjmp",
	"swapcontext",
	"valloc",
};

/* The defined dynamic symbols of lib, one per line, sorted, version suffixes removed. */
static char *dynamic_symbols(const char *lib)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
		 "nm -D --defined-only '%s' | awk '{print $3}' | sed 's/@.*//' | LC_ALL=C sort -u",
		 lib);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p, "popen(%s)", cmd);
	size_t cap = 4096, len = 0;
	char *out = malloc(cap);
	size_t n;
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2)
			out = realloc(out, cap *= 2);
	}
	out[len] = '\0';
	cr_assert_eq(pclose(p), 0, "%s failed", cmd);
	return out;
}

static void expect_exports(const char *rel, const char *const *want, size_t n_want)
{
	const char *lib = e2e_path(rel);
	char *got = dynamic_symbols(lib);
	size_t cap = 1;
	for (size_t i = 0; i < n_want; i++)
		cap += strlen(want[i]) + 1;
	char *expected = calloc(1, cap);
	for (size_t i = 0; i < n_want; i++) {
		strcat(expected, want[i]);
		strcat(expected, "\n");
	}
	cr_expect_str_eq(got, expected, "%s exports:\n%s\nexpected exactly:\n%s", lib, got,
			 expected);
	free(expected);
	free(got);
}

Test(exports, libtrc_exports_only_the_public_api, .timeout = 30)
{
	expect_exports("lib/libtrc.so", libtrc_exports,
		       sizeof(libtrc_exports) / sizeof(libtrc_exports[0]));
}

Test(exports, preload_exports_only_its_hooks, .timeout = 30)
{
	expect_exports("lib/libtrc-preload.so", preload_exports,
		       sizeof(preload_exports) / sizeof(preload_exports[0]));
}
