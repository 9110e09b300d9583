/* test_rt_process.c - the runtime across processes: a program started by the test under a
 * session it created (fork + exec with the fd inherited, as trace-run does), its threads, exec of
 * itself, a forked child, exit from a secondary thread, and the same program without a session.
 * The programs are tests/prog_rt_events.c from $TRC_BUILD. */
#include <criterion/criterion.h>

#include "session_internal.h"
#include "test_session_util.h"

static char prog[512];

static void setup(void)
{
	snprintf(prog, sizeof(prog), "%s/tests/prog_rt_events", ts_build_dir());
	cr_assert_eq(access(prog, X_OK), 0, "%s not built", prog);
}

static struct trc_session *new_session(void)
{
	struct session_config cfg = {.max_slots = 32, .ring_bytes = 256 << 10};
	int err;
	struct trc_session *s = ts_session_for_children(&cfg, &err);
	cr_assert_not_null(s, "session_create: %d", err);
	return s;
}

/* counts[index] of "prog" counters; checks each index's values arrive in order per stream. */
static void count_prog(const struct ts_collect *c, long *counts, int max_index, uint32_t pid)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct ts_rec *x = &c->v[i];
		if (x->r.type != TRC_REC_COUNTER)
			continue;
		cr_assert_str_eq(ts_name_of(c, x->r.value.name_id), "prog");
		long idx = (long)(x->r.value.value >> 32);
		cr_assert(idx >= 0 && idx <= max_index, "index %ld", idx);
		if (pid)
			cr_assert_eq(x->st.pid, pid);
		counts[idx]++;
	}
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

Test(rt_process, exec_child_threads_counted_exactly, .timeout = 180, .init = setup)
{
	struct trc_session *s = new_session();
	struct ts_collect c = {0};
	char *argv[] = {prog, "3", "5000", NULL};
	char out[] = "/tmp/trc-test-rt-XXXXXX";
	int ofd = mkstemp(out);
	close(ofd);
	int st = ts_run_traced(s, &c, argv, NULL, NULL, out);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %x", st);
	cr_assert_str_eq(read_file(out), "emitted 20000\n");
	long counts[4] = {0};
	count_prog(&c, counts, 3, 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(counts[i], 5000, "index %d: %ld", i, counts[i]);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.by_type[TRC_REC_THREAD], 4);
	cr_assert_eq(c.by_type[TRC_REC_PROCESS], 1);
	cr_assert_eq(session_processes_attached(s), 1);
	/* Every stream ended: the three threads retired, main's slot was found dead. */
	cr_assert_eq(c.ends, 4);
	cr_assert_eq(session_buffers_resident_bytes(s, 0), 0, "all slots freed, process gone");
	/* The command line made it. */
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_PROCESS) {
			cr_assert_eq(c.v[i].r.process.cmdline_len, strlen(prog) + 1 + 2 + 5);
			cr_assert_str_eq(c.v[i].str, prog);
		}
	unlink(out);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(rt_process, exec_again_attaches_and_retires_the_old_image, .timeout = 180, .init = setup)
{
	struct trc_session *s = new_session();
	struct ts_collect c = {0};
	char *argv[] = {prog, "1", "3000", "exec", NULL};
	int st = ts_run_traced(s, &c, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	long counts[2] = {0};
	count_prog(&c, counts, 1, 0);
	cr_assert_eq(counts[0], 6000, "both images' main threads: %ld", counts[0]);
	cr_assert_eq(counts[1], 6000);
	cr_assert_eq(c.by_type[TRC_REC_PROCESS], 2, "each image says who it is");
	cr_assert_eq(session_processes_attached(s), 2);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.ends, 4);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(rt_process, forked_grandchild_is_its_own_process, .timeout = 180, .init = setup)
{
	struct trc_session *s = new_session();
	struct ts_collect c = {0};
	char *argv[] = {prog, "0", "2000", "fork", NULL};
	int st = ts_run_traced(s, &c, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	long counts[1001] = {0};
	count_prog(&c, counts, 1000, 0);
	cr_assert_eq(counts[0], 2000);
	cr_assert_eq(counts[1000], 2000);
	uint32_t parent = 0, child = 0;
	for (size_t i = 0; i < c.n; i++) {
		struct ts_rec *x = &c.v[i];
		if (x->r.type != TRC_REC_COUNTER)
			continue;
		if (x->r.value.value >> 32 == 1000)
			child = x->st.pid;
		else
			parent = x->st.pid;
	}
	cr_assert_neq(parent, child, "the child's records carry its own pid");
	cr_assert_eq(c.by_type[TRC_REC_PROCESS], 2);
	cr_assert_eq(session_processes_attached(s), 2);
	cr_assert_eq(c.ends, 2);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(rt_process, exit_from_a_secondary_thread, .timeout = 180, .init = setup)
{
	struct trc_session *s = new_session();
	struct ts_collect c = {0};
	char *argv[] = {prog, "2", "4000", "exit-thread", NULL};
	int st = ts_run_traced(s, &c, argv, NULL, NULL, NULL);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %x", st);
	long counts[4] = {0};
	count_prog(&c, counts, 3, 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(counts[i], 4000, "index %d", i);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.ends, 4, "the exiting thread's and main's slots were reaped too");
	ts_collect_free(&c);
	session_destroy(s);
}

Test(rt_process, no_session_same_output_and_status, .timeout = 180, .init = setup)
{
	char *argv[] = {prog, "2", "1000", NULL};
	char out1[] = "/tmp/trc-test-rt-XXXXXX", out2[] = "/tmp/trc-test-rt-XXXXXX";
	close(mkstemp(out1));
	close(mkstemp(out2));
	unsetenv(TRC_SESSION_FD_ENV);
	int st1 = ts_run_traced(NULL, NULL, argv, NULL, NULL, out1);
	char a[4096];
	strcpy(a, read_file(out1));
	/* A stale variable naming an fd that is not a session changes nothing either. */
	setenv(TRC_SESSION_FD_ENV, "1", 1);
	int st2 = ts_run_traced(NULL, NULL, argv, NULL, NULL, out2);
	unsetenv(TRC_SESSION_FD_ENV);
	cr_assert_eq(st1, 0);
	cr_assert_eq(st2, 0);
	cr_assert_str_eq(a, "emitted 3000\n");
	cr_assert_str_eq(read_file(out2), a);
	unlink(out1);
	unlink(out2);
}
