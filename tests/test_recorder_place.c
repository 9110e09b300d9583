/* test_recorder_place.c - the recorder's threads kept off busy producers' CPUs
 * (src/recorder/recorder_place.h), driven with a clock of the test's own (no timing).
 *
 * The busy producer is a child process pinned to one CPU (the placement reads its CPU from
 * /proc); the placement confines every thread of this process, so the test reads its own
 * mask back. Needs two allowed CPUs: skipped with fewer (taskset -c 0). The machine's load is
 * the test's too: TRC_TEST_PLACE_LOADAVG names a file written here in /proc/loadavg's form.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "recorder_place.h"
#include "session.h"

#define MS 1000000ull

struct rp_fixture {
	char loadavg[64];
	cpu_set_t allowed;
	int cpu; /* the producer's */
	pid_t child;
	struct session_stream st;
};

/* Writes the machine's load as the placement reads it: runnable threads now. */
static void rp_runnable(struct rp_fixture *f, int runnable)
{
	FILE *o = fopen(f->loadavg, "w");
	cr_assert_not_null(o);
	fprintf(o, "0.52 0.58 0.59 %d/123 4567\n", runnable);
	fclose(o);
}

/* Starts the producer on the first allowed CPU, spinning, and waits until /proc shows it
 * there (it may start elsewhere for a moment). */
static void rp_start(struct rp_fixture *f)
{
	cr_assert_eq(sched_getaffinity(0, sizeof(f->allowed), &f->allowed), 0);
	if (CPU_COUNT(&f->allowed) < 2)
		cr_skip_test("fewer than two CPUs allowed: nothing to place");
	snprintf(f->loadavg, sizeof(f->loadavg), "/tmp/trc-place-%d", (int)getpid());
	rp_runnable(f, 2); /* the producer and the drain */
	setenv("TRC_TEST_PLACE_LOADAVG", f->loadavg, 1);
	f->cpu = 0;
	while (!CPU_ISSET(f->cpu, &f->allowed))
		f->cpu++;
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t parent = getpid();
	f->child = fork();
	cr_assert_geq(f->child, 0);
	if (f->child == 0) {
		/* Gone with the test, even one that stops at a failed assertion. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(1);
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(f->cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			_exit(1);
		while (sched_getcpu() != f->cpu)
			sched_yield();
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (volatile unsigned long i = 0;; i++)
			;
	}
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	f->st = (struct session_stream){
		.key = 42, .kind = 1, .pid = (uint32_t)f->child, .tid = (uint32_t)f->child};
}

static void rp_stop(struct rp_fixture *f)
{
	kill(f->child, SIGKILL);
	waitpid(f->child, NULL, 0);
	unlink(f->loadavg);
	unsetenv("TRC_TEST_PLACE_LOADAVG");
}

/* This thread's mask is the allowed CPUs less the producer's. */
static bool rp_confined(const struct rp_fixture *f)
{
	cpu_set_t now, want = f->allowed;
	CPU_CLR(f->cpu, &want);
	cr_assert_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	return CPU_EQUAL(&now, &want);
}

static bool rp_free_to_run(const struct rp_fixture *f)
{
	cpu_set_t now;
	cr_assert_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	return CPU_EQUAL(&now, &f->allowed);
}

/* One period of the placement: n events of the producer over 2 ms, ending at t_ms. */
static void rp_period(struct recorder_place *p, const struct rp_fixture *f, uint64_t t_ms,
		      uint64_t n, uint64_t resident)
{
	recorder_place_count(p, &f->st, n);
	recorder_place_tick(p, t_ms * MS, resident);
}

Test(recorder_place, confines_to_the_other_cpus_while_a_producer_is_busy, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	recorder_place_tick(p, 1 * MS, 0); /* the first period starts */
	rp_period(p, &f, 2, 100000, 0); /* half a period: nothing decided yet */
	cr_expect(rp_free_to_run(&f));
	rp_period(p, &f, 3, 100000, 0); /* 200 000 events in 2 ms: 100 M/s, busy */
	cr_expect(rp_confined(&f));
	cr_expect_eq(recorder_place_confinements(p), 1);
	/* Busy again: stays confined, no new confinement. */
	rp_period(p, &f, 5, 200000, 0);
	cr_expect(rp_confined(&f));
	cr_expect_eq(recorder_place_confinements(p), 1);
	/* The producer slows to 0.5 M events/s: every CPU back. */
	rp_period(p, &f, 7, 1000, 0);
	cr_expect(rp_free_to_run(&f));
	rp_period(p, &f, 9, 200000, 0);
	cr_expect(rp_confined(&f));
	cr_expect_eq(recorder_place_confinements(p), 2);
	recorder_place_free(p);
	cr_expect(rp_free_to_run(&f), "free gives every CPU back");
	rp_stop(&f);
}

Test(recorder_place, a_producer_that_waits_gives_every_cpu_back_for_a_while, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	recorder_place_tick(p, 1 * MS, 0);
	rp_period(p, &f, 3, 200000, 0);
	cr_assert(rp_confined(&f));
	/* A WAIT record: released at the next pass, not a period later. */
	recorder_place_pressure(p);
	recorder_place_tick(p, 4 * MS, 0);
	cr_expect(rp_free_to_run(&f));
	/* Busy, but within the first backoff (5 ms, until 9 ms): stays free. */
	rp_period(p, &f, 6, 200000, 0);
	rp_period(p, &f, 8, 200000, 0);
	cr_expect(rp_free_to_run(&f));
	/* After it: confined again. */
	rp_period(p, &f, 10, 200000, 0);
	cr_expect(rp_confined(&f));
	/* Pressure again: the backoff doubles (10 ms, until 21 ms). */
	recorder_place_pressure(p);
	recorder_place_tick(p, 11 * MS, 0);
	cr_expect(rp_free_to_run(&f));
	rp_period(p, &f, 13, 200000, 0);
	rp_period(p, &f, 20, 200000, 0);
	cr_expect(rp_free_to_run(&f));
	rp_period(p, &f, 22, 200000, 0);
	cr_expect(rp_confined(&f));
	cr_expect_eq(recorder_place_confinements(p), 3);
	recorder_place_free(p);
	rp_stop(&f);
}

Test(recorder_place, rings_growing_while_confined_give_every_cpu_back, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	recorder_place_tick(p, 1 * MS, 8 << 20);
	rp_period(p, &f, 3, 200000, 8 << 20);
	cr_assert(rp_confined(&f));
	/* Less than 4 MiB of growth: the drain keeps up. */
	rp_period(p, &f, 4, 200000, (11 << 20) + (512 << 10));
	cr_expect(rp_confined(&f));
	/* Rings freed, then grown back to where they were: still less than 4 MiB over the low
	 * point... */
	rp_period(p, &f, 5, 200000, 5 << 20);
	rp_period(p, &f, 6, 200000, (9 << 20) - 1);
	cr_expect(rp_confined(&f));
	/* ...and 4 MiB over it: released. */
	rp_period(p, &f, 7, 200000, 9 << 20);
	cr_expect(rp_free_to_run(&f));
	recorder_place_free(p);
	rp_stop(&f);
}

Test(recorder_place, no_confinement_without_a_cpu_to_spare, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	recorder_place_tick(p, 1 * MS, 0);
	/* A producer on every allowed CPU: this process's own threads, one busy stream each
	 * (their CPUs as /proc says; the test thread's is where it runs now). With two CPUs,
	 * the child's and this thread's cover them only when they differ, so pin this thread to
	 * another CPU first. */
	int other = f.cpu + 1;
	while (!CPU_ISSET(other, &f.allowed))
		other++;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(other, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	while (sched_getcpu() != other)
		sched_yield();
	/* Only the two CPUs count: as many busy producers as CPUs when exactly two are allowed. */
	if (CPU_COUNT(&f.allowed) != 2) {
		recorder_place_free(p);
		rp_stop(&f);
		cr_skip_test("more than two CPUs allowed");
	}
	struct session_stream me = {
		.key = 43, .kind = 1, .pid = (uint32_t)getpid(), .tid = (uint32_t)gettid()};
	recorder_place_count(p, &me, 200000);
	rp_period(p, &f, 3, 200000, 0);
	cr_expect_eq(recorder_place_confinements(p), 0, "no CPU to spare");
	cpu_set_t now;
	cr_assert_eq(sched_getaffinity(0, sizeof(now), &now), 0);
	cr_expect(CPU_EQUAL(&now, &one), "left as it was");
	/* The child alone: confined to this thread's CPU. */
	rp_period(p, &f, 5, 200000, 0);
	cr_expect_eq(recorder_place_confinements(p), 1);
	recorder_place_free(p);
	rp_stop(&f);
}

Test(recorder_place, no_confinement_for_a_producer_of_this_process, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	/* This thread emits (a recorder in the program itself): confining this process's
	 * threads would move it too. */
	struct session_stream me = {
		.key = 43, .kind = 1, .pid = (uint32_t)getpid(), .tid = (uint32_t)gettid()};
	recorder_place_tick(p, 1 * MS, 0);
	recorder_place_count(p, &me, 200000);
	recorder_place_tick(p, 3 * MS, 0);
	cr_expect(rp_free_to_run(&f));
	cr_expect_eq(recorder_place_confinements(p), 0);
	recorder_place_free(p);
	rp_stop(&f);
}

/* The (pid, tid) of a slot is the traced program's to write: a stream naming a process outside
 * the traced tree (here the test runner, this process's parent, not its descendant) must not
 * choose which CPU the recorder keeps off. The fixture's producer, a child, still does. */
Test(recorder_place, no_confinement_for_a_thread_outside_the_traced_tree, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	uint32_t outsider = (uint32_t)getppid();
	struct session_stream st = {.key = 44, .kind = 1, .pid = outsider, .tid = outsider};
	recorder_place_tick(p, 1 * MS, 0);
	recorder_place_count(p, &st, 200000);
	recorder_place_tick(p, 3 * MS, 0);
	cr_expect(rp_free_to_run(&f), "confined away from pid %u, not traced", outsider);
	cr_expect_eq(recorder_place_confinements(p), 0);
	/* A traced thread of another process (a tid that is not one of pid's threads) is
	 * refused as well. */
	st = (struct session_stream){
		.key = 45, .kind = 1, .pid = (uint32_t)f.child, .tid = outsider};
	recorder_place_count(p, &st, 200000);
	recorder_place_tick(p, 5 * MS, 0);
	cr_expect(rp_free_to_run(&f));
	cr_expect_eq(recorder_place_confinements(p), 0);
	/* The real producer, a descendant: confined. */
	rp_period(p, &f, 7, 200000, 0);
	cr_expect(rp_confined(&f));
	cr_expect_eq(recorder_place_confinements(p), 1);
	recorder_place_free(p);
	rp_stop(&f);
}

Test(recorder_place, no_confinement_on_a_crowded_machine, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	/* Busy, and as many threads runnable as it takes: the producer, the drain on the CPUs
	 * left, and two more of ours. */
	int most = 1 + (CPU_COUNT(&f.allowed) - 1) + 2;
	rp_runnable(&f, most);
	recorder_place_tick(p, 1 * MS, 0);
	rp_period(p, &f, 3, 200000, 0);
	cr_expect(rp_confined(&f));
	/* One more: other programs wait for a CPU too. Every CPU back at the next period. */
	rp_runnable(&f, most + 1);
	rp_period(p, &f, 5, 200000, 0);
	cr_expect(rp_free_to_run(&f));
	rp_runnable(&f, 40);
	rp_period(p, &f, 7, 200000, 0);
	cr_expect(rp_free_to_run(&f));
	cr_expect_eq(recorder_place_confinements(p), 1);
	/* Quiet again: confined again. */
	rp_runnable(&f, 2);
	rp_period(p, &f, 9, 200000, 0);
	cr_expect(rp_confined(&f));
	recorder_place_free(p);
	rp_stop(&f);
}

/* A thread of ours that is always runnable: spins until told to stop. */
struct rp_spinners {
	_Atomic bool stop;
	_Atomic int spinning;
};

static void *rp_spin(void *arg)
{
	struct rp_spinners *sp = arg;
	atomic_fetch_add(&sp->spinning, 1);
	while (!atomic_load_explicit(&sp->stop, memory_order_relaxed))
		;
	return NULL;
}

/* Confined, the recorder's own threads queue on the CPUs left and all count as runnable in
 * /proc/loadavg: they are not a crowd. Only the others' runnable threads count; a read of ours
 * serves 16 periods while the machine's count stays within it. */
Test(recorder_place, our_own_runnable_threads_are_not_a_crowd, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	enum { SPINNERS = 3 };
	struct rp_spinners sp = {false, 0};
	pthread_t spin[SPINNERS];
	for (int i = 0; i < SPINNERS; i++)
		cr_assert_eq(pthread_create(&spin[i], NULL, rp_spin, &sp), 0);
	/* Spinning, not still starting (a thread may sleep on a lock of the sanitizer's while
	 * it starts) */
	while (atomic_load(&sp.spinning) < SPINNERS)
		sched_yield();
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	/* The producer, one other thread per CPU left, and ours: this thread and the spinners
	 * (more than the two of ours the quick test allows). */
	int others = 1 + (CPU_COUNT(&f.allowed) - 1);
	rp_runnable(&f, others + 1 + SPINNERS);
	recorder_place_tick(p, 1 * MS, 0);
	rp_period(p, &f, 3, 200000, 0);
	cr_expect(rp_confined(&f), "confined: the runnable threads beyond the others are ours");
	rp_period(p, &f, 5, 200000, 0);
	cr_expect(rp_confined(&f));
	/* One more that is not ours: a crowd. */
	rp_runnable(&f, others + 1 + SPINNERS + 1);
	rp_period(p, &f, 7, 200000, 0);
	cr_expect(rp_free_to_run(&f));
	cr_expect_eq(recorder_place_confinements(p), 1);
	/* Back to ours: confined again (9 ms). Then the spinners end, the machine's count stays:
	 * the read that explained it serves 16 more periods (to 41 ms), the next read finds the
	 * count is others' now (43 ms). */
	rp_runnable(&f, others + 1 + SPINNERS);
	rp_period(p, &f, 9, 200000, 0);
	cr_expect(rp_confined(&f));
	atomic_store(&sp.stop, true);
	for (int i = 0; i < SPINNERS; i++)
		pthread_join(spin[i], NULL);
	for (uint64_t t = 11; t <= 41; t += 2) {
		rp_period(p, &f, t, 200000, 0);
		cr_expect(rp_confined(&f), "%llu ms: the last read serves 16 periods",
			  (unsigned long long)t);
	}
	rp_period(p, &f, 43, 200000, 0);
	cr_expect(rp_free_to_run(&f), "43 ms: read again, the runnable threads are not ours");
	cr_expect_eq(recorder_place_confinements(p), 2);
	recorder_place_free(p);
	rp_stop(&f);
}

/* The test hook TRC_TEST_PLACE_LOADAVG is read in every trace-run: it may name only a regular
 * file of the user's, opened without blocking and not through a symbolic link. A FIFO (which
 * blocked the drain thread for good), a device or a link is not read: the machine counts as
 * unknown, no confinement. */
Test(recorder_place, the_loadavg_hook_reads_only_a_regular_file_of_the_user, .timeout = 30)
{
	struct rp_fixture f;
	rp_start(&f);
	char fifo[80], link[80];
	snprintf(fifo, sizeof(fifo), "%s.fifo", f.loadavg);
	snprintf(link, sizeof(link), "%s.link", f.loadavg);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(symlink(f.loadavg, link), 0);
	const char *bad[] = {fifo, link, "/dev/zero"};
	uint64_t t = 1;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("TRC_TEST_PLACE_LOADAVG", bad[i], 1);
		struct recorder_place *p = recorder_place_new();
		cr_assert_not_null(p);
		recorder_place_tick(p, t * MS, 0);
		rp_period(p, &f, t + 2, 200000, 0);
		cr_expect(rp_free_to_run(&f), "%s was read", bad[i]);
		cr_expect_eq(recorder_place_confinements(p), 0, "%s", bad[i]);
		recorder_place_free(p);
		t += 4;
	}
	/* A regular file another user owns (as root the test can make one): not read either. */
	if (geteuid() == 0) {
		char other[80];
		snprintf(other, sizeof(other), "%s.other", f.loadavg);
		FILE *o = fopen(other, "w");
		cr_assert_not_null(o);
		fprintf(o, "0.52 0.58 0.59 2/123 4567\n");
		fclose(o);
		cr_assert_eq(chown(other, 65534, 65534), 0);
		setenv("TRC_TEST_PLACE_LOADAVG", other, 1);
		struct recorder_place *p = recorder_place_new();
		cr_assert_not_null(p);
		recorder_place_tick(p, t * MS, 0);
		rp_period(p, &f, t + 2, 200000, 0);
		cr_expect(rp_free_to_run(&f), "another user's file was read");
		recorder_place_free(p);
		unlink(other);
		t += 4;
	}
	/* The regular file the test wrote is still read. */
	setenv("TRC_TEST_PLACE_LOADAVG", f.loadavg, 1);
	struct recorder_place *p = recorder_place_new();
	cr_assert_not_null(p);
	recorder_place_tick(p, t * MS, 0);
	rp_period(p, &f, t + 2, 200000, 0);
	cr_expect(rp_confined(&f));
	recorder_place_free(p);
	unlink(fifo);
	unlink(link);
	rp_stop(&f);
}

Test(recorder_place, off_with_trc_no_place, .timeout = 30)
{
	setenv("TRC_NO_PLACE", "1", 1);
	cr_expect_null(recorder_place_new());
	unsetenv("TRC_NO_PLACE");
	/* NULL is a placement that does nothing. */
	struct session_stream st = {.key = 1, .pid = 1, .tid = 1};
	recorder_place_count(NULL, &st, 1);
	recorder_place_pressure(NULL);
	recorder_place_tick(NULL, 1, 0);
	cr_expect_eq(recorder_place_confinements(NULL), 0);
	recorder_place_free(NULL);
}
