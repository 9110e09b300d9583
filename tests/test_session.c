/* test_session.c - the session region end to end inside one process: the test creates the
 * session, attaches the library to it, emits through trc.h and drains with session_drain.
 * Criterion runs each test in its own process, so each has a fresh session and attach. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "clock.h"
#include "runtime.h"
#include "session_internal.h"
#include "test_session_util.h"

static struct trc_session *start(uint32_t slots, uint64_t ring)
{
	struct session_config cfg = {.max_slots = slots, .ring_bytes = ring};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0, "trc_attach: %d", rc);
	cr_assert(trc_enabled());
	return s;
}

Test(session, records_round_trip_with_names_and_time, .timeout = 180)
{
	struct trc_session *s = start(8, 64 << 10);
	uint64_t t0 = trc_mono_ns();
	TRC_BEGIN("outer");
	TRC_INSTANT("inst", -42);
	TRC_COUNTER("queue", 7);
	{
		TRC_SCOPE("scoped");
		TRC_COUNTER("queue", 8);
	}
	TRC_END("outer");
	uint64_t t1 = trc_mono_ns();

	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 8);
	cr_assert_eq(c.by_type[TRC_REC_SPAN_BEGIN], 2);
	cr_assert_eq(c.by_type[TRC_REC_SPAN_END], 2);
	cr_assert_eq(c.by_type[TRC_REC_INSTANT], 1);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], 2);
	cr_assert_eq(c.by_type[TRC_REC_THREAD], 1);
	cr_assert_eq(c.by_type[TRC_REC_PROCESS], 1);
	cr_assert_geq(c.by_type[TRC_REC_MODULE], 1);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));

	uint64_t prev = 0;
	uint32_t queue_id = 0;
	int seen_counter = 0;
	for (size_t i = 0; i < c.n; i++) {
		struct ts_rec *x = &c.v[i];
		uint32_t t = x->r.type;
		if (t >= TRC_REC_SPAN_BEGIN && t <= TRC_REC_COUNTER) {
			cr_assert_eq(x->st.kind, TRC_STREAM_THREAD);
			cr_assert_eq(x->st.pid, (uint32_t)getpid());
			cr_assert_eq(x->st.tid, (uint32_t)gettid());
			/* ts within [t0, t1] (TSC conversion error is far below this slack) */
			cr_assert_geq(x->r.ts_ns + 100000, t0);
			cr_assert_leq(x->r.ts_ns, t1 + 100000);
			cr_assert_geq(x->r.ts_ns, prev, "time goes forward in a stream");
			prev = x->r.ts_ns;
			/* the NAME came first */
			uint32_t id =
				t <= TRC_REC_SPAN_END ? x->r.span.name_id : x->r.value.name_id;
			int named = 0;
			for (size_t j = 0; j < i; j++)
				if (c.v[j].r.type == TRC_REC_NAME && c.v[j].r.name.id == id)
					named = 1;
			cr_assert(named, "NAME %u delivered before its first use", id);
		}
		if (t == TRC_REC_COUNTER) {
			const char *nm = ts_name_of(&c, x->r.value.name_id);
			cr_assert_str_eq(nm, "queue");
			if (queue_id)
				cr_assert_eq(x->r.value.name_id, queue_id, "same name, same id");
			queue_id = x->r.value.name_id;
			cr_assert_eq(x->r.value.value, 7 + seen_counter++);
		}
		if (t == TRC_REC_INSTANT) {
			cr_assert_str_eq(ts_name_of(&c, x->r.value.name_id), "inst");
			cr_assert_eq(x->r.value.value, -42);
		}
		if (t == TRC_REC_PROCESS) {
			cr_assert_eq(x->st.kind, TRC_STREAM_META);
			cr_assert_eq(x->r.process.pid, (uint32_t)getpid());
			cr_assert_eq(x->r.process.ppid, (uint32_t)getppid());
			cr_assert_gt(x->r.process.cmdline_len, 0);
		}
		if (t == TRC_REC_THREAD) {
			cr_assert_eq(x->r.thread.tid, (uint32_t)gettid());
			cr_assert_eq(x->r.thread.pid, (uint32_t)getpid());
		}
	}
	/* The span nesting: scoped's END comes before outer's END. */
	int order = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (c.v[i].r.type != TRC_REC_SPAN_END)
			continue;
		const char *nm = ts_name_of(&c, c.v[i].r.span.name_id);
		cr_assert_str_eq(nm, order++ == 0 ? "scoped" : "outer");
	}
	cr_assert_eq(session_processes_attached(s), 1);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, module_records_cover_this_executable, .timeout = 180)
{
	struct trc_session *s = start(4, 64 << 10);
	TRC_INSTANT("x", 1);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	uintptr_t here = (uintptr_t)&ts__record;
	int found = 0;
	for (size_t i = 0; i < c.n; i++) {
		struct trc_record *r = &c.v[i].r;
		if (r->type != TRC_REC_MODULE)
			continue;
		cr_assert_lt(r->module.start, r->module.end);
		cr_assert_eq(r->module.pid, (uint32_t)getpid());
		if (here >= r->module.start && here < r->module.end) {
			found = 1;
			cr_assert(strstr(c.v[i].str, "test_session") != NULL, "%s", c.v[i].str);
		}
	}
	cr_assert(found, "a MODULE record covers the test's own code");
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- threads with known event counts ---------------------------------------------------- */

struct worker_arg {
	int index;
	int events;
	pthread_barrier_t *start;
	uint32_t tid;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	a->tid = (uint32_t)gettid();
	if (a->start)
		pthread_barrier_wait(a->start);
	for (int i = 0; i < a->events; i++)
		TRC_COUNTER("worker", ((int64_t)a->index << 32) | i);
	return NULL;
}

Test(session, threads_known_counts_nothing_lost_with_big_rings, .timeout = 180)
{
	enum { T = 6, N = 20000 };
	struct trc_session *s = start(16, 1 << 20);
	pthread_t th[T];
	struct worker_arg a[T];
	for (int i = 0; i < T; i++) {
		a[i] = (struct worker_arg){.index = i, .events = N};
		pthread_create(&th[i], NULL, worker, &a[i]);
	}
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], (size_t)T * N);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.ends, T, "every exited thread's stream ended (%zu)", c.ends);
	/* Each value is attributed to the thread that emitted it, in order. */
	int next[T] = {0};
	for (size_t i = 0; i < c.n; i++) {
		struct ts_rec *x = &c.v[i];
		if (x->r.type != TRC_REC_COUNTER)
			continue;
		int idx = (int)(x->r.value.value >> 32);
		cr_assert(idx >= 0 && idx < T);
		cr_assert_eq(x->st.tid, a[idx].tid);
		cr_assert_eq((int)(x->r.value.value & 0xffffffff), next[idx]++);
	}
	/* All slots were freed: nothing resident but the metadata. */
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), s->geom.rings_off);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, full_ring_recorded_plus_lost_equals_emitted, .timeout = 180)
{
	enum { N = 100000 };
	struct trc_session *s = start(4, 16 << 10); /* holds ~680 counter records */
	for (int i = 0; i < N; i++)
		TRC_COUNTER("c", i);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	cr_assert_gt(c.lost[TRC_LOST_RING_FULL], 0);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER] + c.lost[TRC_LOST_RING_FULL], (uint64_t)N);
	/* After the drain, the ring has room again. */
	size_t before = c.by_type[TRC_REC_COUNTER];
	TRC_COUNTER("c", 1);
	ts_drain_idle(s, &c);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], before + 1);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, thread_churn_recycles_slots_and_attributes_correctly, .timeout = 180)
{
	enum { THREADS = 1000, BATCH = 4, N = 50 };
	struct trc_session *s = start(8, 16 << 10);
	struct ts_collect c = {0};
	static struct worker_arg a[THREADS];
	for (int base = 0; base < THREADS; base += BATCH) {
		pthread_t th[BATCH];
		for (int k = 0; k < BATCH; k++) {
			a[base + k] = (struct worker_arg){.index = base + k, .events = N};
			pthread_create(&th[k], NULL, worker, &a[base + k]);
		}
		for (int k = 0; k < BATCH; k++)
			pthread_join(th[k], NULL);
		struct session_sink k = ts_sink(&c);
		cr_assert_geq(session_drain(s, &k), 0);
	}
	ts_drain_idle(s, &c);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], (size_t)THREADS * N);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.by_type[TRC_REC_THREAD], THREADS);
	cr_assert_eq(c.ends, THREADS);
	cr_assert_geq(atomic_load(&s->hdr->slots_freed), THREADS);
	static int next[THREADS];
	for (size_t i = 0; i < c.n; i++) {
		struct ts_rec *x = &c.v[i];
		if (x->r.type == TRC_REC_THREAD) {
			cr_assert_eq(x->r.thread.tid, x->st.tid);
			continue;
		}
		if (x->r.type != TRC_REC_COUNTER)
			continue;
		int idx = (int)(x->r.value.value >> 32);
		cr_assert_eq(x->st.tid, a[idx].tid, "record of thread %d in the right stream", idx);
		cr_assert_eq((int)(x->r.value.value & 0xffffffff), next[idx]++);
	}
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, slots_exhausted_counts_lost_exactly, .timeout = 180)
{
	enum { T = 4, N = 1000 };
	struct trc_session *s = start(2, 64 << 10);
	pthread_t th[T];
	struct worker_arg a[T];
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, T);
	for (int i = 0; i < T; i++) {
		a[i] = (struct worker_arg){.index = i, .events = N, .start = &bar};
		pthread_create(&th[i], NULL, worker, &a[i]);
	}
	/* No drain while they run: retired slots are not freed, so exactly 2 threads record. */
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], 2u * N);
	cr_assert_eq(c.lost[TRC_LOST_NO_SLOT], 2u * N);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER] + ts_lost_total(&c), (uint64_t)T * N);
	/* NO_SLOT losses are on streams of the threads that lost them (the thread-loss table):
	 * per thread, recorded + lost = N. */
	uint32_t tids[2 * T] = {0};
	uint64_t per[2 * T] = {0};
	for (size_t i = 0; i < c.n; i++) {
		const struct ts_rec *x = &c.v[i];
		uint64_t k = x->r.type == TRC_REC_COUNTER ? 1
			     : x->r.type == TRC_REC_LOST  ? x->r.lost.count
							  : 0;
		if (!k)
			continue;
		if (x->r.type == TRC_REC_LOST)
			cr_assert_eq(x->st.kind, TRC_STREAM_THREAD, "NO_SLOT on a thread's stream");
		int j = 0;
		while (j < 2 * T && tids[j] && tids[j] != x->st.tid)
			j++;
		cr_assert_lt(j, 2 * T);
		tids[j] = x->st.tid;
		per[j] += k;
	}
	for (int j = 0; j < T; j++)
		cr_assert_eq(per[j], N, "thread %u: %llu recorded + lost", tids[j],
			     (unsigned long long)per[j]);
	cr_assert_eq(tids[T], 0, "exactly %d threads", T);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, thread_name_emits_thread_record, .timeout = 180)
{
	struct trc_session *s = start(4, 64 << 10);
	TRC_INSTANT("a", 1);
	trc_thread_name("renamed-thread");
	TRC_INSTANT("a", 2);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	cr_assert_eq(c.by_type[TRC_REC_THREAD], 2);
	int k = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_THREAD && k++ == 1)
			cr_assert_str_eq(c.v[i].str, "renamed-thread"); /* cut to 15 bytes */
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- corrupt region ------------------------------------------------------------------------ */

static void *emit_and_wait(void *p)
{
	struct worker_arg *a = p;
	a->tid = (uint32_t)gettid();
	for (int i = 0; i < a->events; i++)
		TRC_COUNTER("w", ((int64_t)a->index << 32) | i);
	pthread_barrier_wait(a->start); /* slot claimed, records published */
	pthread_barrier_wait(a->start); /* main scribbled */
	for (int i = 0; i < a->events; i++)
		TRC_COUNTER("w", ((int64_t)a->index << 32) | (a->events + i));
	return NULL;
}

Test(session, corrupt_ring_is_reported_and_other_streams_survive, .timeout = 180)
{
	enum { N = 100 };
	struct trc_session *s = start(4, 16 << 10);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 3);
	pthread_t th[2];
	struct worker_arg a[2];
	for (int i = 0; i < 2; i++) {
		a[i] = (struct worker_arg){.index = i, .events = N, .start = &bar};
		pthread_create(&th[i], NULL, emit_and_wait, &a[i]);
	}
	pthread_barrier_wait(&bar);
	/* Scribble over the first record of thread 0's ring: an impossible length. */
	int victim = ts_slot_of_tid(s, a[0].tid);
	cr_assert_geq(victim, 0);
	uint32_t *hdr = (uint32_t *)(void *)session__ring(s, (uint32_t)victim);
	hdr[0] = 12345; /* not a multiple of 8 */
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);

	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	size_t per[2] = {0};
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_COUNTER)
			per[c.v[i].r.value.value >> 32]++;
	cr_assert_eq(per[1], 2 * N, "the healthy thread lost nothing");
	cr_assert_eq(per[0], 0, "the corrupt ring yields no records");
	cr_assert_eq(c.by_type[TRC_REC_NOTE], 1);
	int lost_corrupt = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (c.v[i].r.type == TRC_REC_LOST && c.v[i].r.lost.reason == TRC_LOST_CORRUPT) {
			lost_corrupt = 1;
			cr_assert_eq(c.v[i].st.tid, a[0].tid);
		}
		if (c.v[i].r.type == TRC_REC_NOTE)
			cr_assert(strstr(c.v[i].str, "corrupt") != NULL);
	}
	cr_assert(lost_corrupt);
	cr_assert_eq(c.ends, 2);
	/* The corrupt slot was freed once its thread was gone: every slot is claimable again. */
	cr_assert_eq(session_buffers_resident_bytes(s, getpid()), s->geom.rings_off);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, garbage_slot_table_and_strtab_do_not_crash_the_drain, .timeout = 180)
{
	struct trc_session *s = start(4, 16 << 10);
	TRC_INSTANT("ok", 1);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	/* Now scribble on everything a producer could: states, pids, ring_ctl, string table. */
	srand(7);
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		struct trc_slot *sl = session__slot(s, i);
		uint8_t *p = (uint8_t *)sl;
		for (size_t k = 0; k < sizeof(*sl); k++)
			p[k] = (uint8_t)rand();
	}
	uint8_t *st = trc_region_strtab(s->base, &s->geom);
	for (uint64_t k = 0; k < s->geom.strtab_bytes; k++)
		st[k] = (uint8_t)rand();
	for (int round = 0; round < 5; round++) {
		struct session_sink k = ts_sink(&c);
		cr_assert_geq(session_drain(s, &k), 0);
	}
	cr_assert_leq(session_buffers_resident_bytes(s, 0), s->geom.region_bytes);
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- residency --------------------------------------------------------------------------- */

/* Rss of the mapping that starts at addr, from /proc/self/smaps. */
static uint64_t mapping_rss(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	cr_assert_not_null(f);
	char line[512];
	int in = 0;
	uint64_t rss = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = start == (uintptr_t)addr;
			continue;
		}
		unsigned long kb;
		if (in && sscanf(line, "Rss: %lu kB", &kb) == 1) {
			rss = kb * 1024;
			break;
		}
	}
	fclose(f);
	return rss;
}

static void *hold_slot(void *p)
{
	struct worker_arg *a = p;
	TRC_INSTANT("hold", 1);
	pthread_barrier_wait(a->start);
	pthread_barrier_wait(a->start);
	return NULL;
}

static void check_resident(struct trc_session *s, uint64_t want)
{
	uint64_t ours = session_buffers_resident_bytes(s, getpid());
	uint64_t kernel = mapping_rss(trc__rt.base);
	cr_assert_eq(ours, want, "session says %lu, expected %lu", (unsigned long)ours,
		     (unsigned long)want);
	cr_assert_eq(kernel, want, "kernel says %lu, expected %lu", (unsigned long)kernel,
		     (unsigned long)want);
}

Test(session, resident_bytes_match_the_kernel_exactly, .timeout = 180)
{
	enum { RING = 256 << 10, HEAD = TRC_RING_PREFAULT_BYTES };
	struct trc_session *s = start(8, RING);
	/* Attached, nothing claimed: the metadata only. */
	check_resident(s, s->geom.rings_off);
	TRC_INSTANT("main", 1); /* claim: the head of the ring */
	check_resident(s, s->geom.rings_off + HEAD);
	struct ts_collect c = {0};
	/* Write past the head: the faulted part doubles, never more. */
	for (int i = 0; i < 4000; i++) /* 24 bytes each: ~96 KB */
		TRC_COUNTER("grow", i);
	check_resident(s, s->geom.rings_off + 2 * HEAD);
	ts_drain_idle(s, &c);
	/* The drain keeps up: the ring wraps early at the end of its faulted part, never grows
	 * (session_layout.h "Residency"; test_session_budget.c tests the rest). */
	for (int k = 0; k < 8; k++) {
		for (int i = 0; i < 1000; i++)
			TRC_COUNTER("grow", i);
		ts_drain_idle(s, &c);
	}
	check_resident(s, s->geom.rings_off + 2 * HEAD);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 3);
	pthread_t th[2];
	struct worker_arg a = {.start = &bar};
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, hold_slot, &a);
	pthread_barrier_wait(&bar);
	check_resident(s, s->geom.rings_off + 4 * HEAD);
	cr_assert_eq(session_buffers_resident_bytes(s, getpid() + 100000), 0);
	cr_assert_eq(session_buffers_resident_bytes(s, 0), s->geom.rings_off + 4 * HEAD);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ts_drain_idle(s, &c);
	/* The two exited threads' rings were punched out when their slots were freed. */
	check_resident(s, s->geom.rings_off + 2 * HEAD);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], 12000);
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- fork ---------------------------------------------------------------------------------- */

Test(session, fork_child_writes_its_own_rings, .timeout = 180)
{
	enum { N = 500 };
	struct trc_session *s = start(8, 64 << 10);
	for (int i = 0; i < N; i++)
		TRC_COUNTER("parent", i);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		for (int i = 0; i < N; i++)
			TRC_COUNTER("child", 1000000 + i);
		_exit(0);
	}
	for (int i = N; i < 2 * N; i++)
		TRC_COUNTER("parent", i);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ts_sleep_ms(60);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	size_t parent = 0, child = 0;
	int child_process_record = 0;
	for (size_t i = 0; i < c.n; i++) {
		struct ts_rec *x = &c.v[i];
		if (x->r.type == TRC_REC_PROCESS && x->r.process.pid == (uint32_t)pid) {
			child_process_record = 1;
			cr_assert_eq(x->r.process.ppid, (uint32_t)getpid());
		}
		if (x->r.type != TRC_REC_COUNTER)
			continue;
		if (x->r.value.value >= 1000000) {
			cr_assert_eq(x->st.pid, (uint32_t)pid);
			cr_assert_eq(x->r.value.value, 1000000 + (int64_t)child++);
		} else {
			cr_assert_eq(x->st.pid, (uint32_t)getpid());
			cr_assert_eq(x->r.value.value, (int64_t)parent++, "parent's stream intact");
		}
	}
	cr_assert_eq(parent, 2 * N);
	cr_assert_eq(child, N);
	cr_assert(child_process_record);
	cr_assert_eq(session_processes_attached(s), 2);
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	/* The dead child's slot was found gone, drained, ended and freed. */
	cr_assert_eq(c.ends, 1);
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- attach refusals and no session --------------------------------------------------------- */

Test(session, no_session_means_no_state_and_no_records, .timeout = 180)
{
	unsetenv(TRC_SESSION_FD_ENV);
	cr_assert_eq(trc_attach(), -ENOENT);
	cr_assert(!trc_enabled());
	TRC_BEGIN("x");
	TRC_COUNTER("y", 1);
	{
		TRC_SCOPE("z");
	}
	TRC_END("x");
	trc_thread_name("t");
	cr_assert_null(trc__self.prod.data, "no ring was claimed");
	cr_assert_eq(*trc__self.ok_flag, 0);
	cr_assert_null(trc__rt.base);
}

Test(session, attach_refuses_fds_that_are_not_a_session, .timeout = 180)
{
	setenv(TRC_SESSION_FD_ENV, "abc", 1);
	cr_assert_eq(trc_attach(), -EINVAL);
	setenv(TRC_SESSION_FD_ENV, "987", 1);
	cr_assert_eq(trc_attach(), -EBADF);
	int fd = open("/dev/null", O_RDONLY);
	char num[16];
	snprintf(num, sizeof(num), "%d", fd);
	setenv(TRC_SESSION_FD_ENV, num, 1);
	cr_assert_eq(trc_attach(), -EINVAL);
	/* A sealed memfd with the wrong magic. */
	int m = memfd_create("x", MFD_ALLOW_SEALING);
	cr_assert_eq(ftruncate(m, 1 << 20), 0);
	fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	snprintf(num, sizeof(num), "%d", m);
	setenv(TRC_SESSION_FD_ENV, num, 1);
	cr_assert_eq(trc_attach(), -EPROTO);
	cr_assert(!trc_enabled());
	TRC_INSTANT("nothing", 1);
	cr_assert_null(trc__self.prod.data);
}

Test(session, config_is_validated, .timeout = 180)
{
	hu_fsize_lift(); /* the default session's memfd is sized for 256 4 MiB rings */
	int err = 0;
	struct session_config bad_ring = {.ring_bytes = 5000};
	cr_assert_null(session_create(&bad_ring, &err));
	cr_assert_eq(err, -EINVAL);
	struct session_config small_ring = {.ring_bytes = 1024};
	cr_assert_null(session_create(&small_ring, &err));
	struct session_config slots = {.max_slots = 1u << 20};
	cr_assert_null(session_create(&slots, &err));
	session_destroy(NULL);
	struct trc_session *s = session_create(NULL, &err);
	cr_assert_not_null(s, "defaults");
	cr_assert_eq(s->geom.ring_bytes, 4u << 20);
	cr_assert_eq(s->geom.max_slots, 256);
	session_destroy(s);
}

/* ---- clock -------------------------------------------------------------------------------- */

static void check_clock(bool force_gettime)
{
	struct session_config cfg = {
		.max_slots = 2, .ring_bytes = 16 << 10, .force_clock_gettime = force_gettime};
	int rc;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_eq(rc, 0);
	struct session_clock_info ci;
	session_clock_info(s, &ci);
	if (force_gettime || !trc_clock_tsc_invariant()) {
		cr_assert_eq(ci.clock_source, TRC_CLOCK_GETTIME);
		cr_assert_eq(trc__mode, 1u);
	} else {
		cr_assert_eq(ci.clock_source, TRC_CLOCK_TSC);
		cr_assert_eq(trc__mode, 2u);
		cr_assert(ci.tsc_hz > 100000000ull && ci.tsc_hz < 10000000000ull);
	}
	struct ts_collect c = {0};
	/* Over ~0.5 s (so the drain refits the TSC rate), each instant lands between the
	 * CLOCK_MONOTONIC readings around it. */
	uint64_t lo[20], hi[20];
	for (int i = 0; i < 20; i++) {
		lo[i] = trc_mono_ns();
		TRC_INSTANT("t", i);
		hi[i] = trc_mono_ns();
		ts_sleep_ms(25);
		struct session_sink k = ts_sink(&c);
		session_drain(s, &k);
	}
	ts_drain_idle(s, &c);
	int n = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (c.v[i].r.type != TRC_REC_INSTANT)
			continue;
		int64_t v = c.v[i].r.value.value;
		/* 20 us slack: TSC pair error plus calibration error over 0.5 s. */
		cr_assert_geq(c.v[i].r.ts_ns + 20000, lo[v], "instant %ld early by %ld ns", (long)v,
			      (long)(lo[v] - c.v[i].r.ts_ns));
		cr_assert_leq(c.v[i].r.ts_ns, hi[v] + 20000, "instant %ld late by %ld ns", (long)v,
			      (long)(c.v[i].r.ts_ns - hi[v]));
		n++;
	}
	cr_assert_eq(n, 20);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session, tsc_timestamps_convert_to_monotonic, .timeout = 180)
{
	check_clock(false);
}

Test(session, forced_clock_gettime, .timeout = 180)
{
	check_clock(true);
}

Test(session, env_forces_clock_gettime, .timeout = 180)
{
	hu_fsize_lift(); /* the default session's memfd is sized for 256 4 MiB rings */
	setenv("TRC_CLOCK", "gettime", 1);
	int err;
	struct trc_session *s = session_create(NULL, &err);
	struct session_clock_info ci;
	session_clock_info(s, &ci);
	cr_assert_eq(ci.clock_source, TRC_CLOCK_GETTIME);
	cr_assert_eq(ci.tsc_hz, 0);
	session_destroy(s);
}

Test(clock, conversion_is_exact_for_known_rates, .timeout = 180)
{
	struct trc_clock_pair a = {.tsc = 1000, .ns = 5000};
	struct trc_clock_pair b = {.tsc = 1000 + 3000000000ull, .ns = 5000 + 1000000000ull};
	struct trc_clock_conv c;
	cr_assert_eq(trc_clock_fit(&c, &a, &b), 0);
	cr_assert_eq(trc_clock_hz(&c), 3000000000ull);
	cr_assert_eq(trc_clock_to_ns(&c, b.tsc), b.ns);
	/* 3 GHz: 3e9 ticks later is 1 s later (within a ns of rounding) */
	uint64_t t = trc_clock_to_ns(&c, b.tsc + 3000000000ull);
	cr_assert(t >= b.ns + 999999999ull && t <= b.ns + 1000000000ull);
	uint64_t back = trc_clock_to_ns(&c, a.tsc);
	cr_assert(back >= a.ns - 1 && back <= a.ns + 1);
	struct trc_clock_conv early = {.tick0 = 1000000000000ull, .ns0 = 10, .mult = c.mult};
	cr_assert_eq(trc_clock_to_ns(&early, 0), 0, "clamped, no wrap below zero");
	cr_assert_eq(trc_clock_fit(&c, &b, &a), -EINVAL);
}

Test(session, string_table_full_falls_back_and_says_so, .timeout = 180)
{
	struct session_config cfg = {.max_slots = 2, .ring_bytes = 16 << 10, .strtab_bytes = 4096};
	int rc;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_eq(rc, 0);
	char name[64];
	uint32_t last = 0, id3 = 0;
	int full_at = -1;
	for (int i = 0; i < 400 && full_at < 0; i++) {
		snprintf(name, sizeof(name), "name-number-%d", i);
		uint32_t id = trc__intern(name);
		if (id == 1u)
			full_at = i;
		else
			cr_assert_gt(id, last, "ids grow with the table");
		if (i == 3)
			id3 = id;
		last = id;
	}
	cr_assert_gt(full_at, 50, "a 4 KiB table holds dozens of names (%d)", full_at);
	cr_assert_eq(trc__intern("name-number-3"), id3, "dedup: same id again");
	TRC_INSTANT("late-name", 5); /* interned after the table filled: id 1 */
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	int saw = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_INSTANT) {
			cr_assert_eq(c.v[i].r.value.name_id, 1u);
			cr_assert_str_eq(ts_name_of(&c, 1u), "(string table full)");
			saw = 1;
		}
	cr_assert(saw);
	cr_assert_eq(c.by_type[TRC_REC_NOTE], 1, "the recorder says the table is full");
	ts_collect_free(&c);
	session_destroy(s);
}

static int stop_after;

static int stopping_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	ts__record(arg, st, r);
	return --stop_after == 0 ? 77 : 0;
}

Test(session, sink_error_stops_the_drain_and_nothing_is_lost, .timeout = 180)
{
	struct trc_session *s = start(4, 64 << 10);
	for (int i = 0; i < 100; i++)
		TRC_COUNTER("n", i);
	struct ts_collect c = {0};
	struct session_sink k = {.arg = &c, .record = stopping_record, .stream_end = ts__end};
	stop_after = 10;
	cr_assert_eq(session_drain(s, &k), 77);
	size_t first = c.n;
	cr_assert_eq(first, 10);
	ts_drain_idle(s, &c);
	/* Every counter exactly once, in order, across the two drains. */
	int next = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_COUNTER)
			cr_assert_eq(c.v[i].r.value.value, next++);
	cr_assert_eq(next, 100);
	ts_collect_free(&c);
	session_destroy(s);
}
