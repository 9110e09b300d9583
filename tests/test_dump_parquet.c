/* test_dump_parquet.c - `trace-dump parquet`, the built command: its options and usage errors,
 * the seven tables it writes (framed as Parquet files), several FILEs at once, and that a bad
 * input leaves no half-written table behind. What the tables hold is checked by a real engine
 * in the DuckDB tier (tests/duckdb_check.mjs, make test-duckdb); the writer's bytes by
 * test_parquet.c.
 *
 * The binary is $TRC_BUILD/bin/trace-dump (default build/bin/trace-dump).
 */
#include <criterion/criterion.h>
#include <sys/wait.h>

#include "test_trcfile_util.h"

static const char *const tdp_tables[] = {"spans",  "events",    "allocations", "rss",
					 "traces", "processes", "stacks"};
#define TDP_N_TABLES (sizeof(tdp_tables) / sizeof(tdp_tables[0]))

struct tdp_run {
	int status;
	char *out, *err;
};

/* Runs trace-dump with args, stdout and stderr captured in dir. */
static struct tdp_run tdp_run(const char *dir, const char *const *args)
{
	char exe[512], outf[400], errf[400];
	const char *b = getenv("TRC_BUILD");
	snprintf(exe, sizeof(exe), "%s/bin/trace-dump", b && *b ? b : "build");
	snprintf(outf, sizeof(outf), "%s/stdout", dir);
	snprintf(errf, sizeof(errf), "%s/stderr", dir);
	const char *argv[32] = {exe};
	int n = 1;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(99);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char **)argv);
		_exit(98);
	}
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	struct tdp_run r = {0};
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	size_t len;
	uint8_t *o = tu_read_file(outf, &len);
	r.out = realloc(o, len + 1);
	r.out[len] = 0;
	uint8_t *e = tu_read_file(errf, &len);
	r.err = realloc(e, len + 1);
	r.err[len] = 0;
	return r;
}

static void tdp_free(struct tdp_run *r)
{
	free(r->out);
	free(r->err);
}

static void tdp_small(const char *path)
{
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 3), 0);
	tu_plan_free(&p);
}

static void tdp_usage(const char *dir, const char *const *args, const char *want_err)
{
	struct tdp_run r = tdp_run(dir, args);
	cr_expect_eq(r.status, 2, "status %d: %s", r.status, r.err);
	cr_expect_str_eq(r.err, want_err);
	tdp_free(&r);
}

Test(dump_parquet, help_and_usage_errors, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/small.trc", dir);
	tdp_small(trc);
	struct tdp_run r = tdp_run(dir, (const char *const[]){"parquet", "--help", NULL});
	cr_assert_eq(r.status, 0);
	cr_assert(!strncmp(r.out, "usage: trace-dump parquet -o DIR FILE...\n", 41), "%s", r.out);
	for (size_t i = 0; i < TDP_N_TABLES; i++)
		cr_expect(strstr(r.out, tdp_tables[i]), "--help does not name %s", tdp_tables[i]);
	tdp_free(&r);
	r = tdp_run(dir, (const char *const[]){"help", NULL});
	cr_expect(strstr(r.out, "\n  parquet  "), "help does not list parquet:\n%s", r.out);
	tdp_free(&r);
	tdp_usage(dir, (const char *const[]){"parquet", trc, NULL},
		  "trace-dump parquet: no output directory given (-o DIR) (see trace-dump parquet "
		  "--help)\n");
	tdp_usage(dir, (const char *const[]){"parquet", "-o", dir, NULL},
		  "trace-dump parquet: no FILE given (see trace-dump parquet --help)\n");
	tdp_usage(
		dir,
		(const char *const[]){"parquet", "--rows-per-group", "0", "-o", dir, trc, NULL},
		"trace-dump parquet: --rows-per-group wants a count from 1 to 16777216, not \"0\" "
		"(see trace-dump parquet --help)\n");
	tdp_usage(dir,
		  (const char *const[]){"parquet", "--rows-per-group", "-5", "-o", dir, trc, NULL},
		  "trace-dump parquet: --rows-per-group wants a count from 1 to 16777216, not "
		  "\"-5\" (see trace-dump parquet --help)\n");
	r = tdp_run(dir, (const char *const[]){"parquet", "--bogus", "-o", dir, trc, NULL});
	cr_expect_eq(r.status, 2);
	tdp_free(&r);
	tu_rm_rf(dir);
}

/* Every table is a Parquet file: "PAR1", pages, a footer whose length fits, "PAR1". */
static void tdp_check_tables(const char *out)
{
	for (size_t i = 0; i < TDP_N_TABLES; i++) {
		char p[600];
		snprintf(p, sizeof(p), "%s/%s.parquet", out, tdp_tables[i]);
		size_t n = 0;
		uint8_t *b = tu_read_file(p, &n);
		cr_assert_not_null(b, "%s missing", p);
		cr_assert_geq(n, 12, "%s: %zu bytes", p, n);
		cr_expect(!memcmp(b, "PAR1", 4) && !memcmp(b + n - 4, "PAR1", 4), "%s", p);
		uint32_t flen = (uint32_t)b[n - 8] | (uint32_t)b[n - 7] << 8 |
				(uint32_t)b[n - 6] << 16 | (uint32_t)b[n - 5] << 24;
		cr_expect_leq(flen, n - 12, "%s: footer of %u bytes in %zu", p, flen, n);
		/* The footer names the table (key_value_metadata trc.parquet.table). */
		cr_expect_not_null(
			memmem(b + n - 8 - flen, flen, tdp_tables[i], strlen(tdp_tables[i])), "%s",
			p);
		free(b);
	}
}

Test(dump_parquet, writes_every_table_from_several_files, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], b[300], out[400];
	snprintf(a, sizeof(a), "%s/a.trc", dir);
	snprintf(b, sizeof(b), "%s/b.trc", dir);
	snprintf(out, sizeof(out), "%s/tables", dir);
	tdp_small(a);
	tdp_small(b);
	struct tdp_run r = tdp_run(dir, (const char *const[]){"parquet", "-o", out, a, b, NULL});
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "");
	/* Functions are named from the modules' files, as in every other output: the small
	 * trace's module is gone, said once for each FILE. */
	cr_expect_str_eq(r.err, "trace-dump: /usr/bin/prog: the file is gone: its functions show as "
				"module+offset\n"
				"trace-dump: /usr/bin/prog: the file is gone: its functions show as "
				"module+offset\n");
	tdp_free(&r);
	tdp_check_tables(out);
	/* The traces table has one row per FILE, labelled by its base name. */
	size_t n = 0;
	char p[600];
	snprintf(p, sizeof(p), "%s/traces.parquet", out);
	uint8_t *t = tu_read_file(p, &n);
	cr_expect_not_null(memmem(t, n, "a.trc", 5));
	cr_expect_not_null(memmem(t, n, "b.trc", 5));
	free(t);
	tu_rm_rf(dir);
}

Test(dump_parquet, a_bad_file_leaves_no_tables, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char a[300], bad[300], out[400];
	snprintf(a, sizeof(a), "%s/a.trc", dir);
	snprintf(bad, sizeof(bad), "%s/bad.trc", dir);
	snprintf(out, sizeof(out), "%s/tables", dir);
	tdp_small(a);
	tu_write_file(bad, "not a trace", 11);
	struct tdp_run r = tdp_run(dir, (const char *const[]){"parquet", "-o", out, a, bad, NULL});
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "bad.trc"), "%s", r.err);
	tdp_free(&r);
	for (size_t i = 0; i < TDP_N_TABLES; i++) {
		char p[600];
		snprintf(p, sizeof(p), "%s/%s.parquet", out, tdp_tables[i]);
		cr_expect_neq(access(p, F_OK), 0, "%s left behind", p);
	}
	/* An output directory that cannot be made. */
	r = tdp_run(dir, (const char *const[]){"parquet", "-o", "/proc/nonexistent/x", a, NULL});
	cr_expect_eq(r.status, 1);
	tdp_free(&r);
	tu_rm_rf(dir);
}
