/* test_alloc_stacks.c - the call stack of every allocation, end to end: trace-run records the
 * programs tests/prog_stack_*.c (built -O2 without frame pointers, as distributions build, with
 * the libraries tests/lib_stack_*.c), and the stacks `trace-dump flame --weight alloc`,
 * `trace-dump memory` and `trace-dump events` show are the ones the programs are known to make:
 * through shared libraries 30 frames deep, inside signal handlers, in four threads at once,
 * after fork and after exec, across dlopen/dlclose, cut at --stack-depth, absent with
 * --alloc-stacks none, sampled at the expected rate with sample=SIZE, and a C++ plugin's
 * exceptions unaffected. Every recording runs with TRC_STACK_VERIFY=1: each cache hit is
 * unwound again and a wrong one said on stderr, which the tests refuse.
 *
 * Folded stacks are outermost first, without the process frame (--merge-processes: a fork
 * child's stacks are compared with its parent's); libc's frames are named from its symbol
 * table (the program's entry _start;__libc_start_main;__libc_start_call_main, a thread's
 * __clone3;start_thread); the signal trampoline has no symbol and is matched as any one frame.
 *
 * Threads: each test is one process (Criterion); the tools run as children.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "test_trcfile_util.h"

#define SA_MAIN "_start;__libc_start_main;__libc_start_call_main;main;"
#define SA_ENTRY "_start;__libc_start_main;__libc_start_call_main;"

static const char *sa_build(void)
{
	static char abs[PATH_MAX];
	cr_assert_not_null(realpath(tu_build(), abs), "%s: %s", tu_build(), strerror(errno));
	return abs;
}

/* Records `tests/PROG ARGS` into dir/NAME.trc with trace-run OPTS (and the environment ENV),
 * checks that it exited 0 and that the capture never returned a wrong stack; returns what the
 * program printed. */
static char *sa_record(const char *dir, const char *env, const char *opts, const char *name,
		       const char *prog_args)
{
	int rc = tu_sh("cd '%s' && TRC_STACK_VERIFY=1 %s %s/bin/trace-run -q %s -o %s.trc -- "
		       "%s/tests/%s > %s.out 2> %s.err",
		       dir, env, sa_build(), opts, name, sa_build(), prog_args, name, name);
	char errname[64], outname[64];
	snprintf(errname, sizeof(errname), "%s.err", name);
	snprintf(outname, sizeof(outname), "%s.out", name);
	char *err = tu_slurp_text(dir, errname);
	cr_assert_eq(rc, 0, "trace-run ... %s: status %d: %s", prog_args, rc, err);
	cr_assert_null(strstr(err, "wrong stack"), "%s: %s", prog_args, err);
	free(err);
	return tu_slurp_text(dir, outname);
}

/* `trace-dump CMD` in dir; asserts exit 0; returns its standard output. */
static char *sa_dump(const char *dir, const char *cmd)
{
	int rc = tu_sh("cd '%s' && %s/bin/trace-dump %s > dump.out 2> dump.err", dir, sa_build(),
		       cmd);
	cr_assert_eq(rc, 0, "trace-dump %s: status %d: %s", cmd, rc,
		     tu_slurp_text(dir, "dump.err"));
	return tu_slurp_text(dir, "dump.out");
}

/* "stack_b_recurse;" n times, into a static rotating buffer. */
static const char *sa_rec(int n)
{
	static char bufs[4][64 * 17];
	static int k;
	char *b = bufs[k++ & 3];
	b[0] = 0;
	for (int i = 0; i < n; i++)
		strcat(b, "stack_b_recurse;");
	return b;
}

/* Whether text has line as one whole line. */
static bool sa_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0))
			return true;
	return false;
}

#define sa_expect_line(text, line) \
	cr_expect(sa_has_line(text, line), "no line: %s\nin:\n%s", line, text)

/* Whether text has a line "PREFIX<one frame>SUFFIX": the frame between is any one name. */
static bool sa_has_line_around(const char *text, const char *prefix, const char *suffix)
{
	size_t np = strlen(prefix), ns = strlen(suffix);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > np + ns && !strncmp(p, prefix, np) &&
		    !strncmp(p + len - ns, suffix, ns)) {
			const char *mid = p + np;
			size_t nm = len - np - ns;
			if (nm > 0 && !memchr(mid, ';', nm))
				return true;
		}
		p += len + (nl ? 1 : 0);
	}
	return false;
}

/* In `trace-dump events` output: the allocations of exactly size bytes, and of those, the ones
 * with a stack (stack=N). */
static void sa_count_allocs(const char *events, uint64_t size, int *allocs, int *with_stack)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " size=%llu", (unsigned long long)size);
	*allocs = *with_stack = 0;
	for (const char *p = events; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)(len < 511 ? len : 511), p);
		char *sz = strstr(line, pat);
		if (strstr(line, " alloc addr=") && sz &&
		    (sz[strlen(pat)] == 0 || sz[strlen(pat)] == ' ')) {
			(*allocs)++;
			if (strstr(line, " stack="))
				(*with_stack)++;
		}
		p += len + (nl ? 1 : 0);
	}
}

/* The stack id of the first allocation of size bytes (0 when it has none), and the number of
 * frames of that stack's definition; *truncated says whether it is flagged so. */
static uint32_t sa_stack_of(const char *events, uint64_t size, int *frames, bool *truncated)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " size=%llu stack=", (unsigned long long)size);
	const char *p = strstr(events, pat);
	cr_assert_not_null(p, "no allocation of %llu bytes with a stack", (unsigned long long)size);
	uint32_t id = (uint32_t)strtoul(p + strlen(pat), NULL, 10);
	char def[64];
	snprintf(def, sizeof(def), "meta stack id=%u ", id);
	const char *d = strstr(events, def);
	cr_assert_not_null(d, "stack %u is not defined", id);
	const char *nl = strchr(d, '\n');
	size_t len = nl ? (size_t)(nl - d) : strlen(d);
	const char *fr = strstr(d, "frames=");
	cr_assert(fr && fr < d + len);
	*truncated = memmem(d, len, " truncated ", 11) != NULL;
	*frames = 1;
	for (const char *c = fr; c < d + len; c++)
		*frames += *c == ',';
	return id;
}

/* main -> run_deep -> stack_a_enter (lib_stack_a.so) -> 30 x stack_b_recurse -> stack_b_leaf
 * (lib_stack_b.so) -> malloc, none of it with frame pointers: every frame named, in order, in
 * the flame graph, in memory's peak by stack and by site, and all 37 frames in the record. */
Test(alloc_stacks, thirty_frames_through_libraries_without_frame_pointers, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "--rss-interval 5ms", "deep",
			      "prog_stack_deep 30 10 1048576 150");
	cr_expect_str_eq(out, "deep 30 10 1048576\n");
	free(out);
	char stack[2048];
	snprintf(stack, sizeof(stack), SA_MAIN "run_deep;stack_a_enter;%sstack_b_leaf", sa_rec(30));
	char line[2200];
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc deep.trc");
	snprintf(line, sizeof(line), "%s 10485760", stack);
	sa_expect_line(o, line);
	free(o);
	o = sa_dump(dir, "memory --stack --csv peak deep.trc");
	snprintf(line, sizeof(line), ",\"%s\",10485760,10\n", stack);
	cr_expect(strstr(o, line), "not in memory --stack --csv peak: %s\n%s", line, o);
	free(o);
	o = sa_dump(dir, "memory --csv peak deep.trc");
	cr_expect(strstr(o, ",\"stack_b_leaf\",10485760,10\n"), "%s", o);
	free(o);
	o = sa_dump(dir, "events deep.trc");
	int allocs, with;
	sa_count_allocs(o, 1048576, &allocs, &with);
	cr_expect_eq(allocs, 10);
	cr_expect_eq(with, 10);
	int frames;
	bool trunc;
	sa_stack_of(o, 1048576, &frames, &trunc);
	cr_expect_eq(frames, 37, "leaf + 30 + stack_a_enter, run_deep, main and libc's 3: %d",
		     frames);
	cr_expect(!trunc);
	free(o);
	tu_rm_rf(dir);
}

/* --stack-depth 8 on the same 37-frame stack: the 8 innermost kept (stack_b_leaf and 7 of
 * stack_b_recurse), the stack flagged truncated; the allocations are all there. */
Test(alloc_stacks, truncated_at_the_depth_cap, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	free(sa_record(dir, "", "--stack-depth 8", "cut", "prog_stack_deep 30 10 7777"));
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc cut.trc");
	char line[512];
	snprintf(line, sizeof(line), "%sstack_b_leaf 77770", sa_rec(7));
	sa_expect_line(o, line);
	free(o);
	o = sa_dump(dir, "events cut.trc");
	int allocs, with, frames;
	bool trunc;
	sa_count_allocs(o, 7777, &allocs, &with);
	cr_expect_eq(allocs, 10);
	cr_expect_eq(with, 10);
	sa_stack_of(o, 7777, &frames, &trunc);
	cr_expect_eq(frames, 8);
	cr_expect(trunc, "a stack cut at the cap is flagged truncated");
	free(o);
	tu_rm_rf(dir);
}

/* --alloc-stacks none: no STACK record, no allocation with a stack, and every allocation still
 * recorded: as many as with stacks (the capture's own allocations are never the program's). */
Test(alloc_stacks, none_records_every_allocation_without_stacks, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	free(sa_record(dir, "", "--alloc-stacks none", "none", "prog_stack_deep 30 10 7777"));
	free(sa_record(dir, "", "", "all", "prog_stack_deep 30 10 7777"));
	char *o = sa_dump(dir, "events none.trc");
	cr_expect_null(strstr(o, "meta stack "), "%s", o);
	cr_expect_null(strstr(o, " stack="), "%s", o);
	int allocs, with;
	sa_count_allocs(o, 7777, &allocs, &with);
	cr_expect_eq(allocs, 10);
	cr_expect_eq(with, 0);
	int n_none = 0, n_all = 0;
	for (const char *p = o; (p = strstr(p, " alloc addr=")); p++)
		n_none++;
	free(o);
	o = sa_dump(dir, "events all.trc");
	cr_expect(strstr(o, "meta stack "));
	for (const char *p = o; (p = strstr(p, " alloc addr=")); p++)
		n_all++;
	free(o);
	cr_expect_eq(n_none, n_all, "allocations without stacks %d, with %d", n_none, n_all);
	cr_expect_gt(n_none, 10);
	o = sa_dump(dir, "flame --merge-processes --weight alloc none.trc");
	cr_expect_null(strstr(o, "stack_b_leaf"), "%s", o);
	free(o);
	tu_rm_rf(dir);
}

/* An allocation in a raised signal's handler and one in a timer signal's that interrupted a
 * spinning loop: each stack is the handler's (on_usr1/on_alarm, then stack_b_leaf in its
 * library), over the signal frame, over the frames the signal interrupted. */
Test(alloc_stacks, inside_signal_handlers, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "sig", "prog_stack_signal");
	cr_expect_str_eq(out, "signal raised timer\n");
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc sig.trc");
	cr_expect(
		sa_has_line_around(o, SA_MAIN "sig_outer;sig_spin;", ";on_alarm;stack_b_leaf 6666"),
		"no timer handler's stack over sig_spin in:\n%s", o);
	cr_expect(sa_has_line_around(o, SA_MAIN "sig_raise;raise;__pthread_kill_implementation;",
				     ";on_usr1;stack_b_leaf 5555"),
		  "no raised handler's stack over raise in:\n%s", o);
	free(o);
	tu_rm_rf(dir);
}

/* Four threads allocating at once, each at its own depth (3, 8, 13, 18 frames of
 * stack_b_recurse) and size: four stacks, each with exactly its thread's bytes. */
Test(alloc_stacks, four_threads_four_stacks, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "thr", "prog_stack_threads 200");
	cr_expect_str_eq(out, "threads 4 200\n");
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc thr.trc");
	for (int k = 0; k < 4; k++) {
		char line[1024];
		snprintf(line, sizeof(line),
			 "__clone3;start_thread;thread_main;stack_a_enter;%sstack_b_leaf %d",
			 sa_rec(3 + 5 * k), 200 * (1000 + k));
		sa_expect_line(o, line);
	}
	free(o);
	tu_rm_rf(dir);
}

/* fork: the parent's stack (numbered and cached before the fork) made again in the child by the
 * same call, and new ones in both: every allocation of the child has its stack (its arena
 * started afresh, its ids defined in its own ring), and the bytes are each stack's. */
Test(alloc_stacks, after_fork_in_parent_and_child, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "fork", "prog_stack_procs fork");
	cr_expect(strstr(out, "child done\n") && strstr(out, "parent done\n"), "%s", out);
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc fork.trc");
	char line[1024];
	static const struct {
		const char *caller;
		int depth, bytes;
	} want[] = {
		{"do_fork;", 5, 40030}, /* the parent before the fork, the child after: one call */
		{"do_fork;", 7, 20040}, /* the parent after */
		{"do_fork;in_child;", 9, 20030}, /* the child */
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(line, sizeof(line), SA_ENTRY "%salloc_n;stack_a_enter;%sstack_b_leaf %d",
			 want[i].caller, sa_rec(want[i].depth), want[i].bytes);
		sa_expect_line(o, line);
	}
	free(o);
	o = sa_dump(dir, "events fork.trc");
	static const uint64_t sizes[] = {2001, 2002, 2003, 2004};
	for (size_t i = 0; i < 4; i++) {
		int allocs, with;
		sa_count_allocs(o, sizes[i], &allocs, &with);
		cr_expect_eq(allocs, 10, "%llu", (unsigned long long)sizes[i]);
		cr_expect_eq(with, 10, "allocations of %llu with a stack: %d",
			     (unsigned long long)sizes[i], with);
	}
	free(o);
	tu_rm_rf(dir);
}

/* exec: the program before and the new image after (exec of itself) each have their stacks. */
Test(alloc_stacks, before_and_after_exec, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "exec", "prog_stack_procs exec");
	cr_expect_str_eq(out, "before exec\nafter exec\n");
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc exec.trc");
	char line[1024];
	snprintf(line, sizeof(line), SA_ENTRY "do_exec;alloc_n;stack_a_enter;%sstack_b_leaf 30010",
		 sa_rec(4));
	sa_expect_line(o, line);
	snprintf(line, sizeof(line), SA_MAIN "alloc_n;stack_a_enter;%sstack_b_leaf 30020",
		 sa_rec(6));
	sa_expect_line(o, line);
	free(o);
	tu_rm_rf(dir);
}

/* A plugin loaded, used, unloaded and loaded again at another address: the allocations of
 * both loads are named from the plugin (its unwind tables and its symbols at each address). */
Test(alloc_stacks, dlopen_dlclose_and_dlopen_elsewhere, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "dl", "prog_stack_dl moved");
	cr_expect_str_eq(out, "dl moved\n");
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc dl.trc");
	sa_expect_line(o, SA_MAIN "use_lib;plugin_alloc;plugin_recurse;plugin_recurse;"
				  "plugin_recurse 40015");
	free(o);
	o = sa_dump(dir, "events dl.trc");
	for (uint64_t size = 4001; size <= 4002; size++) {
		int allocs, with;
		sa_count_allocs(o, size, &allocs, &with);
		cr_expect_eq(allocs, 5);
		cr_expect_eq(with, 5);
	}
	free(o);
	tu_rm_rf(dir);
}

/* Another library loaded where an unloaded one was. Each allocation's stack is captured
 * right, but the symbolizer finds a module by address alone (the last one recorded there
 * wins), so one library's frames may carry the other's names: trace-dump says so, one line
 * naming both files, rather than name them silently. The second library's own allocations
 * are named right. */
Test(alloc_stacks, another_library_where_one_was_unloaded, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "", "", "dl", "prog_stack_dl reused");
	cr_expect_str_eq(out, "dl reused\n");
	free(out);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc dl.trc");
	sa_expect_line(o, SA_MAIN "use_lib;other_alloc;other_recurse;other_recurse;other_recurse;"
				  "other_recurse;other_leaf 20015");
	free(o);
	char *e = tu_slurp_text(dir, "dump.err");
	cr_expect(strstr(e, "lib_stack_plugin.so") && strstr(e, "lib_stack_other.so") &&
			  strstr(e, " over the same addresses at different times"),
		  "no word of the reused addresses: %s", e);
	tu_rm_rf(dir);
}

/* Whether got is within 5 standard deviations of the expected count of n independent draws of
 * probability p. */
static void sa_expect_binomial(int got, int n, double p, const char *what)
{
	double mean = n * p, sd = sqrt(n * p * (1 - p));
	cr_expect(fabs(got - mean) <= 5 * sd + 1e-9, "%s: %d sampled, expected %.1f +- %.1f", what,
		  got, mean, 5 * sd);
}

/* sample=4096 on a fixed seed: every allocation recorded with its exact size; those with a
 * stack are as many as Poisson sampling of bytes gives (1 - exp(-n/4096) each, within 5
 * standard deviations), all 100 of the 8192-byte ones. */
Test(alloc_stacks, sampled_counts_within_bounds, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char *out = sa_record(dir, "TRC_STACK_SEED=12345", "--alloc-stacks sample=4096", "smp",
			      "prog_stack_sample");
	cr_expect_str_eq(out, "sample 20000 2000 100\n");
	free(out);
	char *o = sa_dump(dir, "events smp.trc");
	static const struct {
		uint64_t size;
		int n;
	} want[] = {{100, 20000}, {3000, 2000}, {8192, 100}};
	int total_with = 0;
	for (size_t i = 0; i < 3; i++) {
		int allocs, with;
		sa_count_allocs(o, want[i].size, &allocs, &with);
		cr_expect_eq(allocs, want[i].n, "allocations of %llu: %d",
			     (unsigned long long)want[i].size, allocs);
		char what[64];
		snprintf(what, sizeof(what), "%llu B", (unsigned long long)want[i].size);
		if (want[i].size >= 4096)
			cr_expect_eq(with, want[i].n, "%s: all sampled, got %d", what, with);
		else
			sa_expect_binomial(with, want[i].n, 1 - exp(-(double)want[i].size / 4096),
					   what);
		total_with += with;
	}
	cr_expect_lt(total_with, 22100 / 10, "most allocations are not sampled");
	free(o);
	o = sa_dump(dir, "flame --merge-processes --weight alloc smp.trc");
	cr_expect(strstr(o, SA_MAIN), "the sampled stacks are named: %s", o);
	free(o);
	tu_rm_rf(dir);
}

/* A C++ program whose dlopen()ed plugin throws, caught in the plugin and in the program
 * several frames up, allocating all along: what it prints traced (stacks of every allocation)
 * is what it prints untraced, libgcc's unwinder still the one its throws go through (not the
 * capture's libunwind), and the plugin's allocations have their stacks. */
Test(alloc_stacks, cxx_plugin_exceptions_unchanged, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	int rc = tu_sh("cd '%s' && %s/tests/prog_stack_cxx 30 > plain.out 2> plain.err", dir,
		       sa_build());
	cr_assert_eq(rc, 0, "untraced: %s", tu_slurp_text(dir, "plain.err"));
	char *plain = tu_slurp_text(dir, "plain.out");
	cr_assert(strstr(plain, "rounds 30 lines "), "%s", plain);
	cr_assert(strstr(plain, "caught in the program: thrown at depth 0"), "%s", plain);
	cr_assert(!strncmp(plain, "unwinder libgcc_s.so", 20), "%s", plain);
	char *traced = sa_record(dir, "", "", "cxx", "prog_stack_cxx 30");
	cr_expect_str_eq(traced, plain);
	free(traced);
	free(plain);
	char *o = sa_dump(dir, "flame --merge-processes --weight alloc cxx.trc");
	cr_expect(strstr(o, ";plugin_round;"), "the plugin's allocations have stacks: %s", o);
	free(o);
	tu_rm_rf(dir);
}
