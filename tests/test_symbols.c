/* test_symbols.c - function names in trace-dump's outputs (src/analysis/symbols.c), end to end
 * on the built commands: a program's own static function, a library linked at start, a
 * library loaded with dlopen after start (its module comes from the preload library's dlopen
 * hook), C++ names demangled, a stripped binary (module+offset, said once), a module file that
 * changed since the trace (another build-id) or is gone (said once, module+offset), a stripped
 * program named from the debug file its .gnu_debuglink names, two builds at one path in one
 * trace told apart, the build-id recorded against the file's own, and Chrome JSON named by
 * function. Expected names and lines are the test programs' own
 * (tests/prog_finst_names.c, tests/lib_names_*.c, tests/prog_finst_cxx.cc): the line of a
 * function is its entry's line in the line table, as addr2line gives it (the opening brace of
 * these C functions, the declaration line of the C++ ones). */
#include <limits.h>

#include "e2e_util.h"
#include "symbols.h"

#define TR e2e_path("bin/trace-run")
#define TD e2e_path("bin/trace-dump")

/* Traces argv (NULL-terminated, at most 8 words) into dir/t.trc; asserts it ran. */
static void ts_trace(const char *dir, const char *const *argv)
{
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	char *v[16] = {(char *)TR, "-q", "-o", out, "--"};
	int n = 5;
	for (; *argv && n < 15; argv++)
		v[n++] = (char *)*argv;
	v[n] = NULL;
	struct e2e_run r = e2e_runv(dir, v);
	cr_assert_eq(r.exit_code, 0, "trace-run exit %d: %s", r.exit_code, r.err);
	e2e_free(&r);
}

static struct e2e_run ts_dump(const char *dir, const char *what)
{
	char in[256];
	snprintf(in, sizeof(in), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TD, what, in, NULL);
	cr_assert_eq(r.exit_code, 0, "trace-dump %s exit %d: %s", what, r.exit_code, r.err);
	return r;
}

static size_t ts_count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Lines of out that contain every one of the (NULL-terminated) needles. */
static size_t ts_lines_with(const char *out, ...)
{
	size_t n = 0;
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, len);
		bool all = true;
		va_list ap;
		va_start(ap, out);
		for (const char *w; (w = va_arg(ap, const char *));)
			all &= strstr(line, w) != NULL;
		va_end(ap);
		n += all;
		free(line);
		p += len + (nl != NULL);
	}
	return n;
}

Test(symbols, program_linked_library_and_dlopened_library, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_names"), NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	cr_expect_str_empty(r.err, "nothing to say about these modules: %s", r.err);
	const char *o = r.out;
	cr_expect_eq(ts_lines_with(o, "func_enter", "fn=\"names_local_add\"",
				   "tests/prog_finst_names.c:16\"", NULL),
		     3);
	cr_expect_eq(ts_lines_with(o, "func_exit", "fn=\"names_local_add\"", NULL), 3);
	cr_expect_eq(ts_lines_with(o, "func_enter", "fn=\"main\"", "prog_finst_names.c:21\"", NULL),
		     1);
	cr_expect_eq(ts_lines_with(o, "func_enter", "at=lib_names_linked.so+",
				   "fn=\"names_linked_square\"", "tests/lib_names_linked.c:7\"",
				   NULL),
		     1);
	/* dlopen'ed after the first events: named only when its module was recorded then. */
	cr_expect_eq(ts_lines_with(o, "func_enter", "at=lib_names_dl.so+", "fn=\"names_dl_triple\"",
				   "tests/lib_names_dl.c:13\"", NULL),
		     1, "%s", o);
	cr_expect_eq(ts_lines_with(o, "func_enter", "fn=\"names_dl_helper\"",
				   "tests/lib_names_dl.c:6\"", NULL),
		     1);
	/* Every function event is named. */
	cr_expect_eq(ts_lines_with(o, "func_", NULL), ts_lines_with(o, "func_", " fn=\"", NULL));
	cr_expect_eq(ts_lines_with(o, "func_", NULL), 2 * 7);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(symbols, build_id_recorded_is_the_files, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_names"), NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	struct e2e_run re =
		e2e_run(dir, "/usr/bin/readelf", "-n", e2e_path("tests/lib_names_dl.so"), NULL);
	cr_assert_eq(re.exit_code, 0);
	const char *b = strstr(re.out, "Build ID: ");
	cr_assert_not_null(b, "%s", re.out);
	char want[200];
	int k = snprintf(want, sizeof(want), " build_id=");
	for (b += 10; *b && *b != '\n' && k < (int)sizeof(want) - 1; b++)
		want[k++] = *b;
	want[k] = 0;
	cr_expect_eq(strlen(want), strlen(" build_id=") + 40, "%s", want);
	cr_expect_eq(ts_lines_with(r.out, "meta module", "lib_names_dl.so\"", want, NULL), 1,
		     "want %s in\n%s", want, r.out);
	e2e_free(&re);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(symbols, cxx_names_demangled, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_cxx"), NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"names_cxx::Counter::bump(int)\"",
				   "prog_finst_cxx.cc:12\"", NULL),
		     2, "%s", r.out);
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"long names_cxx::twice<long>(long)\"",
				   "prog_finst_cxx.cc:22\"", NULL),
		     1);
	cr_expect_eq(ts_count(r.out, "fn=\"_Z"), 0, "nothing left mangled");
	e2e_free(&r);
	/* A long name is cut in the summary's text table, one line a row, and whole in --json. */
	static const char long_name[] =
		"names_cxx::a_namespace_whose_name_runs_long::a_function_whose_name_runs_long_too("
		"long, long)";
	r = ts_dump(dir, "summary");
	cr_expect_eq(ts_lines_with(r.out, "  names_cxx::a_namespace_whose_name_runs_long::a_function_w... ",
				   NULL),
		     1, "%s", r.out);
	cr_expect_eq(ts_count(r.out, long_name), 0);
	e2e_free(&r);
	char in[256], want[256];
	snprintf(in, sizeof(in), "%s/t.trc", dir);
	char *json = e2e_summary_json(dir, in);
	snprintf(want, sizeof(want), "{\"name\":\"%s\",\"calls\":1,", long_name);
	cr_expect_not_null(strstr(json, want), "%s", json);
	free(json);
	e2e_rm_rf(dir);
}

Test(symbols, stripped_binary_module_offset_said_once, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_calls_stripped"), "10", NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	/* fib(10): 177 calls, and main. */
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "at=prog_finst_calls_stripped+0x", NULL),
		     178);
	cr_expect_eq(ts_lines_with(r.out, "func_", " fn=", NULL), 0);
	cr_expect_eq(ts_count(r.err, "stripped (no symbol table)"), 1, "%s", r.err);
	cr_expect_eq(ts_count(r.err, "prog_finst_calls_stripped: stripped"), 1, "%s", r.err);
	cr_expect_eq(ts_count(r.err, "\n"), 1, "one line: %s", r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* dir/bin/prog (its path in prog), a copy of tests/prog_finst_calls beside a dir/lib link to the
 * build's libraries, so its rpath ($ORIGIN/../lib) still works: a program file the test may
 * replace or remove. */
static void ts_prog_copy(const char *dir, char *prog, size_t len)
{
	char bin[300], lib[300], cmd[1400], abs_lib[PATH_MAX];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	snprintf(prog, len, "%s/prog", bin);
	cr_assert_eq(mkdir(bin, 0755), 0);
	cr_assert_not_null(realpath(e2e_path("lib"), abs_lib));
	cr_assert_eq(symlink(abs_lib, lib), 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s", e2e_path("tests/prog_finst_calls"), prog);
	cr_assert_eq(system(cmd), 0);
}

Test(symbols, changed_or_gone_file_said_once, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char prog[320], cmd[1400];
	ts_prog_copy(dir, prog, sizeof(prog));
	const char *argv[] = {prog, "10", NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"fib\"", NULL), 177);
	cr_expect_str_empty(r.err);
	/* fib and main, and in the sanitizer tier what its instrumentation calls */
	size_t enters = ts_lines_with(r.out, "func_enter", "at=prog+0x", NULL);
	cr_expect_geq(enters, 178);
	e2e_free(&r);

	/* Rebuilt since: another build-id at the same path. */
	snprintf(cmd, sizeof(cmd), "cp %s %s", e2e_path("tests/prog_finst_cxx"), prog);
	cr_assert_eq(system(cmd), 0);
	r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "at=prog+0x", NULL), enters);
	cr_expect_eq(ts_lines_with(r.out, "func_", " fn=", NULL), 0,
		     "none named from the wrong file");
	cr_expect_eq(ts_count(r.err, "the file changed since the trace (another build-id)"), 1,
		     "%s", r.err);
	cr_expect_eq(ts_count(r.err, "\n"), 1, "%s", r.err);
	e2e_free(&r);

	unlink(prog);
	r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "at=prog+0x", NULL), enters);
	cr_expect_eq(ts_count(r.err, "/bin/prog: the file is gone"), 1, "%s", r.err);
	cr_expect_eq(ts_count(r.err, "\n"), 1, "%s", r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* A stripped program whose symbols are in a separate debug file, found by its .gnu_debuglink
 * (beside it, as a distribution's debug package puts them under /usr/lib/debug): named as the
 * unstripped one; without the debug file, module+offset and the stripped file said once. */
Test(symbols, stripped_program_named_from_its_debuglink_file, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char prog[320], cmd[2400];
	ts_prog_copy(dir, prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd),
		 "objcopy --only-keep-debug %s %s.debug && strip %s && "
		 "objcopy --add-gnu-debuglink=%s.debug %s",
		 prog, prog, prog, prog, prog);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	const char *argv[] = {prog, "10", NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"fib\"", NULL), 177, "%s", r.err);
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"main\"", NULL), 1);
	cr_expect_str_empty(r.err);
	e2e_free(&r);

	snprintf(cmd, sizeof(cmd), "%s.debug", prog);
	cr_assert_eq(unlink(cmd), 0);
	r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"fib\"", NULL), 0);
	cr_expect_geq(ts_lines_with(r.out, "func_enter", "at=prog+0x", NULL), 178);
	cr_expect_eq(ts_count(r.err, "stripped (no symbol table)"), 1, "%s", r.err);
	cr_expect_eq(ts_count(r.err, "\n"), 1, "one line: %s", r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* One trace, one path, two builds: a script runs the program, replaces it with another build and
 * runs that. Each process's module has its own build-id, so the second is named from the file
 * (it is that build) and the first shows as module+offset, said once: a file entry shared by
 * path alone would name both or neither. */
Test(symbols, two_builds_at_one_path_are_told_apart, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char prog[320], cmd[3000];
	ts_prog_copy(dir, prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "%s 5 && cp %s %s.new && mv %s.new %s && %s", prog,
		 e2e_path("tests/prog_finst_cxx"), prog, prog, prog, prog);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", " fn=\"fib\"", NULL), 0,
		     "the first build named from the second's file");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", " fn=\"main\"", "prog_finst_cxx.cc", NULL),
		     1, "the second build not named from its own file:\n%s", r.out);
	cr_expect_eq(ts_count(r.err, "the file changed since the trace (another build-id)"), 1,
		     "%s", r.err);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(symbols, chrome_names_functions, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_names"), "nodl", NULL};
	ts_trace(dir, argv);
	struct e2e_run r = ts_dump(dir, "chrome");
	/* Each function's "B" and its "E", both named. */
	cr_expect_eq(ts_count(r.out, "\"name\":\"names_linked_square\""), 2, "%s", r.out);
	cr_expect_eq(ts_count(r.out, "\"name\":\"names_local_add\""), 4);
	cr_expect_eq(ts_count(r.out, "\"name\":\"main\""), 2);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

Test(symbols, demangle, .timeout = 180)
{
	char b[128];
	cr_assert(sym_demangle("_ZN9names_cxx7Counter4bumpEi", b, sizeof(b)));
	cr_expect_str_eq(b, "names_cxx::Counter::bump(int)");
	cr_assert(sym_demangle("_ZN9names_cxx7Counter4bumpEi", b, 9));
	cr_expect_str_eq(b, "names_cx", "cut, terminated");
	strcpy(b, "x");
	cr_expect_not(sym_demangle("main", b, sizeof(b)));
	cr_expect_not(sym_demangle("_Z", b, sizeof(b)), "not a whole mangled name");
	cr_expect_not(sym_demangle(NULL, b, sizeof(b)));
	cr_expect_str_eq(b, "x", "untouched");
}

/* A program that links libtrc and is built with -finstrument-functions records its functions
 * without the preload library (libtrc.so exports the hooks). */
Test(symbols, no_preload_functions_from_libtrc, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r = e2e_run(dir, TR, "-q", "--no-preload", "-o", out, "--",
				   e2e_path("tests/prog_finst_calls"), "10", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	r = ts_dump(dir, "events");
	cr_expect_eq(ts_lines_with(r.out, "func_enter", "fn=\"fib\"", NULL), 177, "%s", r.out);
	cr_expect_eq(ts_lines_with(r.out, "func_exit", "fn=\"fib\"", NULL), 177);
	cr_expect_eq(ts_lines_with(r.out, " alloc ", NULL), 0, "no preload: no allocation hooks");
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* Without the preload library and without libtrc, the note says which flag it was. */
Test(symbols, no_preload_note_names_the_flag, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	char out[256];
	snprintf(out, sizeof(out), "%s/t.trc", dir);
	struct e2e_run r =
		e2e_run(dir, TR, "-q", "--no-preload", "-o", out, "--", "/bin/true", NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	e2e_free(&r);
	r = ts_dump(dir, "summary");
	cr_expect(strstr(r.out, "it does not link libtrc and trace-run ran it with --no-preload"),
		  "%s", r.out);
	cr_expect_not(strstr(r.out, "setuid"), "%s", r.out);
	e2e_free(&r);
	e2e_rm_rf(dir);
}

/* The summary's function table against calls whose counts and times are known. */
Test(symbols, summary_functions_known_calls_and_times, .timeout = 60)
{
	const char *dir = e2e_tmpdir();
	const char *argv[] = {e2e_path("tests/prog_finst_timed"), NULL};
	ts_trace(dir, argv);
	char in[256];
	snprintf(in, sizeof(in), "%s/t.trc", dir);
	char *json = e2e_summary_json(dir, in);
	const char *sl = strstr(json, "{\"name\":\"timed_sleep\"");
	const char *ou = strstr(json, "{\"name\":\"timed_outer\"");
	const char *mn = strstr(json, "{\"name\":\"main\"");
	cr_assert(sl && ou && mn, "%s", json);
	cr_expect_eq(e2e_json_int_from(json, sl, "calls"), 4);
	cr_expect_eq(e2e_json_int_from(json, ou, "calls"), 2);
	cr_expect_eq(e2e_json_int_from(json, mn, "calls"), 1);
	int64_t sleep_total = e2e_json_int_from(json, sl, "total_ns");
	int64_t sleep_self = e2e_json_int_from(json, sl, "self_total_ns");
	int64_t outer_total = e2e_json_int_from(json, ou, "total_ns");
	int64_t outer_self = e2e_json_int_from(json, ou, "self_total_ns");
	int64_t main_total = e2e_json_int_from(json, mn, "total_ns");
	cr_expect_geq(e2e_json_int_from(json, sl, "max_ns"), 20000000);
	cr_expect_geq(e2e_json_int_from(json, sl, "p50_ns"), 20000000 * 0.98, "within 2 %%");
	cr_expect_geq(sleep_total, 80000000);
	cr_expect_lt(sleep_total, 80000000 + 200000000, "a loaded machine, not 2x");
	cr_expect_eq(sleep_self, sleep_total, "calls nothing instrumented");
	cr_expect_geq(outer_total, sleep_total, "includes the sleeps");
	cr_expect_eq(outer_self, outer_total - sleep_total);
	cr_expect_lt(outer_self, 5000000);
	cr_expect_geq(main_total, outer_total);
	free(json);
	/* The text table in --sort order; a bad key is a usage error. */
	struct e2e_run r = e2e_run(dir, TD, "summary", "--sort", "calls", in, NULL);
	cr_expect_eq(r.exit_code, 0);
	const char *t = strstr(r.out, "functions (by calls;");
	cr_assert_not_null(t, "%s", r.out);
	const char *a = strstr(t, "\n  timed_sleep "), *b = strstr(t, "\n  timed_outer "),
		   *c = strstr(t, "\n  main ");
	cr_expect(a && b && c && a < b && b < c, "%s", t);
	e2e_free(&r);
	r = e2e_run(dir, TD, "summary", "--sort", "bytes", in, NULL);
	cr_expect_eq(r.exit_code, 2);
	cr_expect_str_eq(r.err, "trace-dump summary: --sort: expected self, total, calls, max or "
				"name, got \"bytes\" (see trace-dump summary --help)\n");
	e2e_free(&r);
	e2e_rm_rf(dir);
}
