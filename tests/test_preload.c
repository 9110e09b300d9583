/* test_preload.c - libtrc-preload.so on real programs: sort, sh, python3 (identical output and
 * exit status, allocations recorded), a signal handler that allocates (exact accounting), a
 * -finstrument-functions program (entries counted), threads and exit from a thread, and the
 * library loaded without a session, programs that bring their own allocator (linked or
 * preloaded: jemalloc, tcmalloc, mimalloc). Programs that are not ours are uninstrumented, so the
 * preload library and the test programs always come from the plain build (a sanitizer build's
 * preload library cannot be loaded into them). */
#include <criterion/criterion.h>
#include <limits.h>

#include "session_internal.h"
#include "test_session_util.h"

static char build[256], preload_env[PATH_MAX + 16], path_in[64], path_a[64], path_b[64];

static void setup(void)
{
	const char *b = ts_build_dir();
	snprintf(build, sizeof(build), "%s", strstr(b, "asan") || strstr(b, "tsan") ? "build" : b);
	char lib[400];
	snprintf(lib, sizeof(lib), "%s/lib/libtrc-preload.so", build);
	cr_assert_eq(access(lib, R_OK), 0, "%s not built", lib);
	char abs[PATH_MAX];
	cr_assert_not_null(realpath(lib, abs));
	snprintf(preload_env, sizeof(preload_env), "LD_PRELOAD=%s", abs);
	strcpy(path_in, "/tmp/trc-test-pl-in-XXXXXX");
	strcpy(path_a, "/tmp/trc-test-pl-a-XXXXXX");
	strcpy(path_b, "/tmp/trc-test-pl-b-XXXXXX");
	close(mkstemp(path_in));
	close(mkstemp(path_a));
	close(mkstemp(path_b));
}

static void teardown(void)
{
	unlink(path_in);
	unlink(path_a);
	unlink(path_b);
}

static struct trc_session *new_session(uint32_t slots, uint64_t ring)
{
	struct session_config cfg = {.max_slots = slots, .ring_bytes = ring};
	int err;
	struct trc_session *s = ts_session_for_children(&cfg, &err);
	cr_assert_not_null(s, "session_create: %d", err);
	return s;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void assert_same_files(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	cr_assert_eq(la, lb, "outputs differ in length: %zu vs %zu", la, lb);
	cr_assert(memcmp(x, y, la) == 0, "outputs differ");
	free(x);
	free(y);
}

/* Runs argv bare (no session, no preload) into path_a and traced into path_b; both statuses
 * must match `want`. Returns the records. */
static void run_both(char *const argv[], const char *in, int want, struct trc_session *s,
		     struct ts_collect *c)
{
	unsetenv(TRC_SESSION_FD_ENV);
	int st_bare = ts_run_traced(NULL, NULL, argv, NULL, in, path_a);
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, c, argv, env, in, path_b);
	cr_assert(WIFEXITED(st_bare) && WEXITSTATUS(st_bare) == want, "bare status %x", st_bare);
	cr_assert_eq(st, st_bare, "traced status %x, bare %x", st, st_bare);
	assert_same_files(path_a, path_b);
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_NOTE)
			cr_assert(!strstr(c->v[i].str, "corrupt"), "%s", c->v[i].str);
}

Test(preload, sort_same_output_allocations_recorded, .timeout = 180, .init = setup,
     .fini = teardown)
{
	FILE *f = fopen(path_in, "w");
	srand(1);
	for (int i = 0; i < 50000; i++)
		fprintf(f, "%08x line %d %s\n", (unsigned)rand(), i,
			i % 7 ? "x" : "some longer text");
	fclose(f);
	struct trc_session *s = new_session(16, 4 << 20);
	struct ts_collect c = {0};
	char *argv[] = {"sort", NULL};
	run_both(argv, path_in, 0, s, &c);
	cr_assert_gt(c.by_type[TRC_REC_ALLOC], 10, "allocs: %zu", c.by_type[TRC_REC_ALLOC]);
	cr_assert_gt(c.by_type[TRC_REC_FREE], 0);
	cr_assert_geq(session_processes_attached(s), 1);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	/* sort reads a 1.8 MB input: some allocation holds at least that much. */
	uint64_t biggest = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_ALLOC && c.v[i].r.alloc.size > biggest)
			biggest = c.v[i].r.alloc.size;
	cr_assert_geq(biggest, 1u << 16);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, sh_pipeline_process_tree_and_exit_status, .timeout = 180, .init = setup,
     .fini = teardown)
{
	struct trc_session *s = new_session(32, 256 << 10);
	struct ts_collect c = {0};
	char *argv[] = {"sh", "-c", "echo hello; printf '%s\\n' b a c | sort; ls / | wc -l; exit 7",
			NULL};
	run_both(argv, NULL, 7, s, &c);
	cr_assert_geq(session_processes_attached(s), 3, "sh, sort, ls, wc at least: %u",
		      session_processes_attached(s));
	cr_assert_geq(c.by_type[TRC_REC_PROCESS], 3);
	int saw_sort = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_PROCESS && strcmp(c.v[i].str, "sort") == 0)
			saw_sort = 1;
	cr_assert(saw_sort, "the exec'd sort attached and said who it is");
	cr_assert_eq(session_buffers_resident_bytes(s, 0), 0,
		     "every process gone, every slot freed");
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, python_same_output_and_status, .timeout = 180, .init = setup, .fini = teardown)
{
	struct trc_session *s = new_session(32, 1 << 20);
	struct ts_collect c = {0};
	char *argv[] = {
		"python3", "-c",
		"import json, sys, threading\n"
		"out = []\n"
		"def work(n): out.append(sum(len(str(i)) for i in range(n)))\n"
		"ts = [threading.Thread(target=work, args=(20000,)) for _ in range(4)]\n"
		"[t.start() for t in ts]; [t.join() for t in ts]\n"
		"print(json.dumps({'k': sorted(out), 'v': list(range(10))}, sort_keys=True))\n"
		"sys.exit(4)\n",
		NULL};
	run_both(argv, NULL, 4, s, &c);
	cr_assert_gt(c.by_type[TRC_REC_ALLOC], 1000);
	cr_assert_geq(c.by_type[TRC_REC_THREAD], 5, "main and the four threads");
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, no_session_changes_nothing, .timeout = 180, .init = setup, .fini = teardown)
{
	FILE *f = fopen(path_in, "w");
	for (int i = 0; i < 1000; i++)
		fprintf(f, "%d\n", (i * 7919) % 1000);
	fclose(f);
	unsetenv(TRC_SESSION_FD_ENV);
	char *argv[] = {"sort", "-n", NULL};
	int st_bare = ts_run_traced(NULL, NULL, argv, NULL, path_in, path_a);
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(NULL, NULL, argv, env, path_in, path_b);
	cr_assert_eq(st_bare, 0);
	cr_assert_eq(st, 0);
	assert_same_files(path_a, path_b);
}

static long field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	cr_assert_not_null(p, "%s in %s", key, text);
	return strtol(p + strlen(key), NULL, 0);
}

/* prog_rt_sigalloc's accounting (its header): every event it emitted is recorded or counted
 * lost, exactly up to the handful of allocations glibc makes for stdio and exit; anything the
 * recorder could not count (a stream declared corrupt) fails. Reads its output in path_b. */
static void check_sigalloc(const struct ts_collect *c)
{
	size_t len;
	char *out = slurp(path_b, &len);
	long iters = field(out, "iters="), handler = field(out, "handler="),
	     in_emit = field(out, "in_emit=");
	/* Handler k's block is hbytes + k bytes, for k below logged. */
	uint64_t hbytes = (uint64_t)field(out, "handler_bytes="),
		 logged = (uint64_t)field(out, "logged=");
	/* The program's own line (handlers without a ring, that wrote, that had one dropped). */
	char said[256];
	snprintf(said, sizeof(said), "%.*s", (int)strcspn(out, "\n"), out);
	free(out);
	cr_assert_gt(iters, 100);
	cr_assert_gt(handler, 10);
	uint64_t events =
		c->by_type[TRC_REC_COUNTER] + c->by_type[TRC_REC_ALLOC] + c->by_type[TRC_REC_FREE];
	uint64_t emitted_known = 22u * (uint64_t)iters + 2u * (uint64_t)handler;
	uint64_t accounted = events + ts_lost_total(c);
	char why[4096];
	size_t at = strlen(ts_describe(c, why, sizeof(why)));
	/* Whose events are missing, should some be: handler k's block is hbytes + k bytes, the
	 * main loop's 12345 (counted by size, each FREE by the ALLOC of its address just
	 * before). */
	size_t by[3][2] = {{0}}; /* [handler, main, other][alloc, free] */
	uint8_t *seen = calloc((size_t)handler + 1, 1); /* handler k's ALLOC recorded */
	cr_assert_not_null(seen);
	for (size_t i = 0; i < c->n; i++) {
		const struct trc_record *r = &c->v[i].r;
		if (r->type != TRC_REC_ALLOC && r->type != TRC_REC_FREE)
			continue;
		uint64_t size = r->alloc.size;
		for (size_t j = i; r->type == TRC_REC_FREE && j-- > 0 && i - j < 64;)
			if (c->v[j].r.type == TRC_REC_ALLOC &&
			    c->v[j].r.alloc.addr == r->alloc.addr) {
				size = c->v[j].r.alloc.size;
				break;
			}
		bool of_handler = size >= hbytes && size < hbytes + logged;
		if (of_handler && r->type == TRC_REC_ALLOC && size - hbytes < (uint64_t)handler)
			seen[size - hbytes] = 1;
		by[of_handler ? 0 : size == 12345 ? 1 : 2][r->type == TRC_REC_FREE]++;
	}
	at += (size_t)snprintf(
		why + at, sizeof(why) - at,
		"; recorded allocs/frees: handler %zu/%zu, main loop %zu/%zu, others "
		"%zu/%zu; handlers %ld, %ld of them inside an emit; the program said: "
		"%s",
		by[0][0], by[0][1], by[1][0], by[1][1], by[2][0], by[2][1], handler, in_emit, said);
	/* The handlers whose ALLOC is neither recorded nor a REENTRANT loss (the flag was 1 with
	 * a ring), with what each saw (the program's log: ring ok w0 w1 w2 d0 d2). */
	FILE *log = fopen(path_a, "r");
	char line[200];
	int missing = 0;
	for (long k = 0; log && fgets(line, sizeof(line), log);) {
		unsigned ring, ok;
		if (sscanf(line, "%ld %u %u", &k, &ring, &ok) != 3 || k >= handler || seen[k] ||
		    (ring && !ok))
			continue;
		if (missing++ < 6 && at < sizeof(why))
			at += (size_t)snprintf(why + at, sizeof(why) - at,
					       "; handler missing: %.*s", (int)strcspn(line, "\n"),
					       line);
	}
	if (log)
		fclose(log);
	if (missing && at < sizeof(why))
		snprintf(why + at, sizeof(why) - at, "; %d handlers missing in all", missing);
	free(seen);
	cr_log_info("iters %ld handler %ld: recorded %lu, lost %lu; %s", iters, handler,
		    (unsigned long)events, (unsigned long)ts_lost_total(c), why);
	/* Ring-full losses may happen if this busy machine starves the drain; they are counted
	 * like the others, which is what this checks. A stream declared corrupt loses its records
	 * uncounted (its LOST record says 0), so any sign of one fails, whatever the sums. */
	cr_assert(!ts_trouble(c), "the recorder reported trouble: %s", why);
	/* Exact up to the handful of allocations glibc makes for stdio and exit. */
	cr_assert_geq(accounted, emitted_known, "%lu recorded + %lu lost < %lu emitted; %s",
		      (unsigned long)events, (unsigned long)ts_lost_total(c),
		      (unsigned long)emitted_known, why);
	cr_assert_leq(accounted, emitted_known + 16, "%lu accounted, %lu emitted; %s",
		      (unsigned long)accounted, (unsigned long)emitted_known, why);
	cr_assert_leq(c->by_type[TRC_REC_COUNTER], 20u * (uint64_t)iters);
}

Test(preload, signal_handler_allocations_accounted_exactly, .timeout = 180, .init = setup,
     .fini = teardown)
{
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect c = {0};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_rt_sigalloc", build);
	char *argv[] = {prog, "300", path_a, NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert_eq(st, 0, "status %x", st);
	check_sigalloc(&c);
	ts_collect_free(&c);
	session_destroy(s);
}

/* A sink that stalls the drain for stall_us every `every` records, in the middle of a ring's
 * batch, as an ASan drain does when its collection grows by a realloc of 100+ MB (a wait of
 * 0.6 s was seen). */
struct stall_sink {
	struct ts_collect *c;
	size_t every;
	useconds_t stall_us;
};

static int stall_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct stall_sink *k = arg;
	if (k->c->n && k->c->n % k->every == 0)
		usleep(k->stall_us);
	return ts__record(k->c, st, r);
}

static void stall_end(void *arg, const struct session_stream *st)
{
	ts__end(((struct stall_sink *)arg)->c, st);
}

/* The same program while the drain stalls again and again, on a ring small enough to wrap
 * often: the writer waits for the drain many times, long, with the handler firing inside its
 * waits (REENTRANT), and wraps early at the end of the faulted part of its ring. */
Test(preload, signal_handler_allocations_accounted_while_the_drain_stalls, .timeout = 180,
     .init = setup, .fini = teardown)
{
	struct trc_session *s = new_session(8, 256 << 10);
	struct ts_collect c = {0};
	struct stall_sink k = {&c, 20000, 100000};
	struct session_sink sink = {.arg = &k, .record = stall_record, .stream_end = stall_end};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_rt_sigalloc", build);
	/* At least 15 000 iterations (330 000 events, 16 stalls): a starved program still fills
	 * its ring during one. */
	char *argv[] = {prog, "400", path_a, "15000", NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced_into(s, &sink, &c, argv, env, NULL, path_b);
	cr_assert_eq(st, 0, "status %x", st);
	cr_assert_geq(c.by_type[TRC_REC_WAIT], 1, "the writer never waited: %s", ts_why(&c));
	check_sigalloc(&c);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, finstrument_functions_entries_and_exits, .timeout = 180, .init = setup,
     .fini = teardown)
{
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect c = {0};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_finst_calls", build);
	char *argv[] = {prog, "18", NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert_eq(st, 0);
	size_t len;
	char *out = slurp(path_b, &len);
	long calls = field(out, "calls=");
	uint64_t addr = (uint64_t)field(out, "addr=");
	free(out);
	cr_assert_gt(calls, 1000);
	long enter = 0, exit_ = 0;
	int64_t depth = 0, max_depth = 0;
	for (size_t i = 0; i < c.n; i++) {
		struct trc_record *r = &c.v[i].r;
		if ((r->type == TRC_REC_FUNC_ENTER || r->type == TRC_REC_FUNC_EXIT) &&
		    r->func.addr == addr) {
			depth += r->type == TRC_REC_FUNC_ENTER ? 1 : -1;
			cr_assert_geq(depth, 0);
			max_depth = depth > max_depth ? depth : max_depth;
			enter += r->type == TRC_REC_FUNC_ENTER;
			exit_ += r->type == TRC_REC_FUNC_EXIT;
		}
	}
	cr_assert_eq(enter, calls);
	cr_assert_eq(exit_, calls);
	cr_assert_eq(max_depth, 18);
	cr_assert_eq(c.by_type[TRC_REC_FUNC_ENTER], c.by_type[TRC_REC_FUNC_EXIT], "main too");
	/* The executable's mapping is in the trace, covering fib. */
	int covered = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_MODULE && addr >= c.v[i].r.module.start &&
		    addr < c.v[i].r.module.end && strstr(c.v[i].str, "prog_finst_calls"))
			covered = 1;
	cr_assert(covered);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, threads_and_exit_from_a_thread, .timeout = 180, .init = setup, .fini = teardown)
{
	struct trc_session *s = new_session(32, 1 << 20);
	struct ts_collect c = {0};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_rt_events", build);
	char *argv[] = {prog, "8", "3000", "exit-thread", NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %x", st);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], 10u * 3000);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_gt(c.by_type[TRC_REC_ALLOC], 8, "thread stacks and stdio at least");
	cr_assert_eq(session_buffers_resident_bytes(s, 0), 0);
	ts_collect_free(&c);
	session_destroy(s);
}

/* Issue 12 item 1: a program keeps its own allocator under the preload library. Runs
 * build/tests/prog_alloc_NAME bare (env_bare) and traced (the preload library first in
 * LD_PRELOAD, then what env_bare preloads, as trace-run does): same output, same status 0 (the
 * program asked its allocator about every block it got and every block was that allocator's),
 * and every allocation recorded. */
static void run_with_allocator(const char *prog_name, const char *lib)
{
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect c = {0};
	char prog[400], bare_env[PATH_MAX + 32], traced_env[2 * PATH_MAX + 32];
	snprintf(prog, sizeof(prog), "%s/tests/%s", build, prog_name);
	char *argv[] = {prog, NULL};
	snprintf(bare_env, sizeof(bare_env), "LD_PRELOAD=%s", lib ? lib : "");
	snprintf(traced_env, sizeof(traced_env), "%s%s%s", preload_env, lib ? ":" : "",
		 lib ? lib : "");
	const char *env_bare[] = {bare_env, NULL};
	const char *env[] = {traced_env, NULL};
	unsetenv(TRC_SESSION_FD_ENV);
	int st_bare = ts_run_traced(NULL, NULL, argv, env_bare, NULL, path_a);
	char num[16];
	snprintf(num, sizeof(num), "%d", session_fd(s));
	setenv(TRC_SESSION_FD_ENV, num, 1);
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert_eq(st_bare, 0, "%s bare: status %x", prog_name, st_bare);
	cr_assert_eq(st, 0,
		     "%s traced: status %x (0xb: SIGSEGV; 0x300: a block was not its "
		     "allocator's)",
		     prog_name, st);
	assert_same_files(path_a, path_b);
	/* 200 blocks (one realloc'd from an 8-byte one), strdup, and stdio's buffer. */
	cr_assert_geq(c.by_type[TRC_REC_ALLOC], 202, "%s: %zu allocations recorded", prog_name,
		      c.by_type[TRC_REC_ALLOC]);
	cr_assert_geq(c.by_type[TRC_REC_FREE], 201);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	ts_collect_free(&c);
	session_destroy(s);
}

Test(preload, program_linked_with_jemalloc_keeps_it, .init = setup, .fini = teardown, .timeout = 60)
{
	run_with_allocator("prog_alloc_jemalloc", NULL);
}

Test(preload, program_linked_with_tcmalloc_keeps_it, .init = setup, .fini = teardown, .timeout = 60)
{
	run_with_allocator("prog_alloc_tcmalloc", NULL);
}

Test(preload, program_linked_with_mimalloc_keeps_it, .init = setup, .fini = teardown, .timeout = 60)
{
	run_with_allocator("prog_alloc_mimalloc", NULL);
}

/* The allocators as Debian installs them, for LD_PRELOAD (found through the loader's cache). */
static void preloaded_allocator(const char *soname)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/usr/lib/x86_64-linux-gnu/%s", soname);
	if (access(path, R_OK) != 0)
		snprintf(path, sizeof(path), "/usr/lib/%s", soname);
	cr_assert_eq(access(path, R_OK), 0, "%s not installed (make deps)", soname);
	run_with_allocator("prog_alloc_any", path);
}

Test(preload, allocator_in_ld_preload_after_ours_stays_in_charge, .init = setup, .fini = teardown,
     .timeout = 90)
{
	preloaded_allocator("libjemalloc.so.2");
	preloaded_allocator("libtcmalloc.so.4");
	preloaded_allocator("libmimalloc.so.2");
}

/* Issue 12 item 13: a signal handler that leaves by siglongjmp, out of the middle of an emit,
 * must not leave the thread's fast-path flag cleared: the events after the jumps are recorded,
 * not counted as REENTRANT losses. */
Test(preload, siglongjmp_out_of_an_emit_does_not_silence_the_thread, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect c = {0};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_rt_longjmp", build);
	char *argv[] = {prog, "3000", "1000", NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert_eq(st, 0, "status %x", st);
	size_t len;
	char *out = slurp(path_b, &len);
	/* at least: the timer may fire again between the last wanted jump and its stop */
	cr_assert_geq(field(out, "jumps="), 3000, "%s", out);
	free(out);
	uint32_t after_id = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_NAME && strcmp(c.v[i].str, "longjmp.after") == 0)
			after_id = c.v[i].r.name.id;
	size_t after = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_COUNTER && after_id &&
		    c.v[i].r.value.name_id == after_id)
			after++;
	for (size_t i = 0; i < c.n && after != 1000; i++)
		if (c.v[i].r.type == TRC_REC_NOTE)
			cr_log_error("note: %s", c.v[i].str);
	cr_assert_eq(after, 1000,
		     "%zu of the 1000 events after the jumps recorded (lost: %lu reentrant, %lu "
		     "ring full, %lu corrupt; name id %u)",
		     after, (unsigned long)c.lost[TRC_LOST_REENTRANT],
		     (unsigned long)c.lost[TRC_LOST_RING_FULL],
		     (unsigned long)c.lost[TRC_LOST_CORRUPT], after_id);
	ts_collect_free(&c);
	session_destroy(s);
}

static size_t count_allocs(const struct ts_collect *c, uint64_t min_size)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_ALLOC && c->v[i].r.alloc.size >= min_size)
			n++;
	return n;
}

/* Issue 12 item 14: heaptrack counts one allocation more than trc on every C program (sed
 * 630578/630579). It is heaptrack's own: its preload library is C++, so libstdc++ is loaded into
 * the program and its constructor allocates the exception-handling emergency pool (72704 bytes
 * with GCC 12) before main. With libstdc++ preloaded beside ours, trc records that allocation
 * too, and exactly that one more: nothing the program itself allocates is missed, constructors
 * that run before main included. */
Test(preload, heaptracks_extra_allocation_is_its_own_libstdcxx_pool, .init = setup,
     .fini = teardown, .timeout = 60)
{
	const char *stdcxx = "/lib/x86_64-linux-gnu/libstdc++.so.6";
	if (access(stdcxx, R_OK) != 0)
		stdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	cr_assert_eq(access(stdcxx, R_OK), 0, "libstdc++.so.6 not found");
	FILE *f = fopen(path_in, "w");
	for (int i = 0; i < 2000; i++)
		fprintf(f, "%d\n", (i * 7919) % 2000);
	fclose(f);
	char *argv[] = {"sed", "-e", "s/1/x/", path_in, NULL};
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect plain = {0}, with_cxx = {0};
	const char *env[] = {preload_env, NULL};
	cr_assert_eq(ts_run_traced(s, &plain, argv, env, NULL, path_a), 0);
	char both[2 * PATH_MAX + 32];
	snprintf(both, sizeof(both), "%s:%s", preload_env, stdcxx);
	const char *env_cxx[] = {both, NULL};
	cr_assert_eq(ts_run_traced(s, &with_cxx, argv, env_cxx, NULL, path_b), 0);
	assert_same_files(path_a, path_b);
	cr_assert_gt(count_allocs(&plain, 0), 100);
	cr_assert_eq(count_allocs(&with_cxx, 0), count_allocs(&plain, 0) + 1,
		     "sed alone: %zu allocations, with libstdc++ loaded: %zu",
		     count_allocs(&plain, 0), count_allocs(&with_cxx, 0));
	cr_assert_eq(count_allocs(&with_cxx, 64 << 10), count_allocs(&plain, 64 << 10) + 1,
		     "the one more is libstdc++'s emergency pool (64 KiB or more)");
	cr_assert_eq(ts_lost_total(&plain) + ts_lost_total(&with_cxx), 0);
	ts_collect_free(&plain);
	ts_collect_free(&with_cxx);
	session_destroy(s);
}

/* Issue 13: what each member of the malloc family records, exactly. prog_preload_exact makes
 * known calls between two INSTANT markers on its main thread (see there) and prints the
 * addresses it got; the ALLOC and FREE records of that thread between the markers must be
 * exactly these, in this order. */
struct exact_rec {
	enum trc_rec_type type;
	char who; /* the program's name for the address */
	uint64_t size; /* ALLOC only */
};

static uint64_t exact_addr(const char *out, char who)
{
	char key[4] = {who, '=', 0};
	return (uint64_t)strtoull(strstr(out, key) ? strstr(out, key) + 2 : "0", NULL, 0);
}

Test(preload, each_allocation_call_records_exact_sizes, .init = setup, .fini = teardown,
     .timeout = 60)
{
	static const struct exact_rec want[] = {
		{TRC_REC_ALLOC, 'a', 1000}, /* malloc(1000) */
		{TRC_REC_ALLOC, 'b', 3000}, /* calloc(10, 300): n * size */
		{TRC_REC_FREE, 'a', 0}, /* realloc(a, 50000): the old block freed ... */
		{TRC_REC_ALLOC, 'c', 50000}, /* ... and the new one allocated */
		{TRC_REC_ALLOC, 'd', 700}, /* realloc(NULL, 700): an allocation only */
		{TRC_REC_FREE, 'd', 0}, /* realloc(d, 0): a free only */
		/* free(NULL), a failed realloc, an overflowing calloc: nothing */
		{TRC_REC_ALLOC, 'f', 1100}, /* posix_memalign(64, 1100) */
		{TRC_REC_ALLOC, 'g', 1280}, /* aligned_alloc(256, 1280) */
		{TRC_REC_ALLOC, 'h', 1300}, /* memalign(128, 1300) */
		{TRC_REC_ALLOC, 'i', 1400}, /* valloc(1400) */
		{TRC_REC_ALLOC, 'j', 1500}, /* pvalloc(1500): the size asked for */
		{TRC_REC_ALLOC, 'k', 600}, /* reallocarray(NULL, 20, 30) */
		{TRC_REC_FREE, 'b', 0},
		{TRC_REC_FREE, 'c', 0},
		{TRC_REC_FREE, 'f', 0},
		{TRC_REC_FREE, 'g', 0},
		{TRC_REC_FREE, 'h', 0},
		{TRC_REC_FREE, 'i', 0},
		{TRC_REC_FREE, 'j', 0},
		{TRC_REC_FREE, 'k', 0},
	};
	const size_t n_want = sizeof(want) / sizeof(want[0]);
	struct trc_session *s = new_session(8, 4 << 20);
	struct ts_collect c = {0};
	char prog[400];
	snprintf(prog, sizeof(prog), "%s/tests/prog_preload_exact", build);
	char *argv[] = {prog, NULL};
	const char *env[] = {preload_env, NULL};
	int st = ts_run_traced(s, &c, argv, env, NULL, path_b);
	cr_assert_eq(st, 0, "status %x", st);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	size_t len;
	char *out = slurp(path_b, &len);
	size_t begin = c.n, end = c.n;
	for (size_t i = 0; i < c.n; i++) {
		const struct trc_record *r = &c.v[i].r;
		if (r->type == TRC_REC_INSTANT && r->value.value == 1)
			begin = i;
		if (r->type == TRC_REC_INSTANT && r->value.value == 2)
			end = i;
	}
	cr_assert(begin < end && end < c.n, "the markers: %zu %zu of %zu", begin, end, c.n);
	size_t k = 0;
	for (size_t i = begin + 1; i < end; i++) {
		const struct ts_rec *x = &c.v[i];
		if (x->st.key != c.v[begin].st.key ||
		    (x->r.type != TRC_REC_ALLOC && x->r.type != TRC_REC_FREE))
			continue;
		cr_assert_lt(k, n_want, "more records than calls: %s %#lx %lu",
			     x->r.type == TRC_REC_ALLOC ? "ALLOC" : "FREE",
			     (unsigned long)x->r.alloc.addr, (unsigned long)x->r.alloc.size);
		const struct exact_rec *w = &want[k];
		cr_assert_eq(x->r.type, w->type, "record %zu (%c): type %u", k, w->who, x->r.type);
		cr_assert_eq(x->r.alloc.addr, exact_addr(out, w->who), "record %zu (%c): address",
			     k, w->who);
		if (w->type == TRC_REC_ALLOC)
			cr_assert_eq(x->r.alloc.size, w->size,
				     "record %zu (%c): size %lu, want %lu", k, w->who,
				     (unsigned long)x->r.alloc.size, (unsigned long)w->size);
		k++;
	}
	cr_assert_eq(k, n_want, "%zu records for %zu expected", k, n_want);
	free(out);
	ts_collect_free(&c);
	session_destroy(s);
}
