/* test_session_hostile.c - the drain against producers that race it or lie to it (issue 12):
 * a short-lived thread that finishes its claim between the drain's state load and its liveness
 * check. Races are made deterministic by interposing syscall() in this test binary (the drain
 * checks liveness with syscall(SYS_tgkill)): the interposer runs the racing producer's steps
 * exactly in the window, then makes the real call. Then a thread's wait counters as its
 * program could write them (session__report_waits): plausible ones reported as they are; a
 * total or a longest wait beyond the session's age, or more waits than nanoseconds, end its
 * stream as corrupt. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "runtime.h"
#include "session_internal.h"
#include "test_session_util.h"

/* ---- syscall interposer ------------------------------------------------------------------ */

static void (*race_in_tgkill)(long tid);
static long race_tid;

/* Reads six argument words whatever the call passed (the forwarding cannot know the arity):
 * harmless on x86-64, where they come from the register save area, but outside what a
 * sanitizer lets C code read. */
long syscall(long n, ...);
__attribute__((no_sanitize("address", "undefined"))) long syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (n == SYS_tgkill && race_in_tgkill && a[1] == race_tid) {
		void (*f)(long) = race_in_tgkill;
		race_in_tgkill = NULL;
		f(a[1]);
	}
	static long (*real)(long, ...);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static struct trc_session *start(uint32_t slots, uint64_t ring)
{
	struct session_config cfg = {.max_slots = slots, .ring_bytes = ring};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0, "trc_attach: %d", rc);
	return s;
}

static void *record_tid(void *p)
{
	*(long *)p = gettid();
	return NULL;
}

/* A tid that no thread has any more. */
static long dead_tid(void)
{
	long tid = 0;
	pthread_t th;
	pthread_create(&th, NULL, record_tid, &tid);
	pthread_join(th, NULL);
	return tid;
}

/* ---- item 4: reaping a CLAIMING slot --------------------------------------------------------- */

static struct trc_session *race_session;
static uint32_t race_slot;

/* What a short-lived thread does after the drain saw its slot CLAIMING: finish the claim, emit
 * one ALLOC, retire, exit. */
static void finish_claim_emit_retire(long tid)
{
	struct trc_session *s = race_session;
	struct trc_slot *sl = session__slot(s, race_slot);
	uint64_t w = atomic_load(&sl->state);
	struct ring_producer p;
	cr_assert_eq(
		ring_producer_attach(&p, &sl->ctl, session__ring(s, race_slot), s->geom.ring_bytes),
		0);
	struct trc_ring_alloc a = {.ts = trc__now(s->geom.clock_mode), .addr = 0x1000, .size = 42};
	cr_assert_eq(ring_push_sp(&p, TRC_TAG(TRC_REC_ALLOC, 0), &a, sizeof(a)), 0);
	atomic_store(&sl->state, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_CLAIMED));
	atomic_store(&sl->state, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_RETIRED));
	(void)tid;
}

Test(session_hostile, claiming_slot_that_completes_before_the_reap_is_drained_not_freed,
     .timeout = 30)
{
	struct trc_session *s = start(4, 64 << 10);
	long tid = dead_tid();
	/* A claimer caught between its CAS to CLAIMING and its publication of CLAIMED. */
	race_session = s;
	race_slot = 2;
	struct trc_slot *sl = session__slot(s, race_slot);
	uint64_t w = atomic_load(&sl->state);
	cr_assert_eq(TRC_SLOT_STATE(w), TRC_SLOT_FREE);
	atomic_store(&sl->state, TRC_SLOT_WORD(TRC_SLOT_GEN(w), TRC_SLOT_CLAIMING));
	__atomic_store_n(&sl->pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&sl->tid, (uint32_t)tid, __ATOMIC_RELAXED);
	race_tid = tid;
	race_in_tgkill = finish_claim_emit_retire;

	s->last_reap_ns = 0; /* this drain checks liveness */
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	cr_assert_null(race_in_tgkill, "the drain never checked the claimer's liveness");
	cr_assert_eq(c.by_type[TRC_REC_ALLOC], 1, "the record emitted in the window was %s",
		     c.by_type[TRC_REC_LOST] ? "counted lost" : "silently dropped");
	cr_assert(ts_nothing_lost(&c), "%s", ts_why(&c));
	cr_assert_eq(c.ends, 1, "its stream ended");
	cr_assert_eq(TRC_SLOT_STATE(atomic_load(&sl->state)), TRC_SLOT_FREE, "and the slot freed");
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- item 12: a privileged program ignores the session in its environment ---------------- */

static int run_capture(struct trc_session *s, const char *prog, char *out, size_t len)
{
	char path[] = "/tmp/trc-test-suid-out-XXXXXX";
	close(mkstemp(path));
	chmod(path, 0666);
	char *argv[] = {(char *)prog, NULL};
	struct ts_collect c = {0};
	int st = ts_run_traced(s, &c, argv, NULL, NULL, path);
	ts_collect_free(&c);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(out, 1, len - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	unlink(path);
	return st;
}

Test(session_hostile, setuid_program_ignores_the_session_fd_in_its_environment, .timeout = 30)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to make a setuid program of another user");
	struct trc_session *s = start(4, 64 << 10);
	char src[400], dir[] = "/tmp/trc-test-suid-XXXXXX", prog[400], cmd[2048], out[64];
	/* The plain build's program in every tier (a sanitizer runtime in a setuid program has
	 * rules of its own). */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	snprintf(src, sizeof(src), "%s/tests/prog_libtrca_attach",
		 tier && *tier ? "build" : ts_build_dir());
	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chown nobody '%s' && chmod 4755 '%s'", src,
		 prog, prog, prog);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* Not privileged: it attaches. */
	chmod(prog, 0755);
	cr_assert_eq(run_capture(s, prog, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "enabled=1\n");
	/* Setuid: the environment is not its to trust. */
	chmod(prog, 04755);
	cr_assert_eq(run_capture(s, prog, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "enabled=0\n");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	session_destroy(s);
}

/* ---- item 11: exact accounting per thread and per reason ---------------------------------- */

static void *name_only(void *arg)
{
	(void)arg;
	trc_thread_name("no-slot-left");
	return NULL;
}

Test(session_hostile, naming_a_thread_without_a_slot_is_no_lost_event, .timeout = 30)
{
	struct trc_session *s = start(1, 64 << 10);
	TRC_INSTANT("hostile.holder", 1); /* the only slot */
	pthread_t th;
	pthread_create(&th, NULL, name_only, NULL);
	pthread_join(th, NULL);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	cr_assert_eq(c.by_type[TRC_REC_INSTANT], 1);
	cr_assert_eq(ts_lost_total(&c), 0, "a name is not an event: %lu lost (no_slot %lu)",
		     (unsigned long)ts_lost_total(&c), (unsigned long)c.lost[TRC_LOST_NO_SLOT]);
	ts_collect_free(&c);
	session_destroy(s);
}

struct reentrant_arg {
	long tid;
};

/* 10 events, 5 emitted as a signal handler nested in an emit would (ok == 0 with a ring),
 * 10 more. */
static void *emit_with_nested(void *p)
{
	struct reentrant_arg *a = p;
	a->tid = gettid();
	for (int i = 0; i < 10; i++)
		TRC_COUNTER("hostile.outer", i);
	*trc__self.ok_flag = 0;
	for (int i = 0; i < 5; i++)
		TRC_COUNTER("hostile.nested", i);
	*trc__self.ok_flag = 1;
	for (int i = 0; i < 10; i++)
		TRC_COUNTER("hostile.outer", 10 + i);
	return NULL;
}

Test(session_hostile, reentrant_losses_are_the_threads_own, .timeout = 30)
{
	struct trc_session *s = start(4, 64 << 10);
	struct reentrant_arg a = {0};
	pthread_t th;
	pthread_create(&th, NULL, emit_with_nested, &a);
	pthread_join(th, NULL);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	uint64_t recorded = 0, lost = 0, lost_elsewhere = 0;
	for (size_t i = 0; i < c.n; i++) {
		const struct ts_rec *x = &c.v[i];
		bool mine = x->st.kind == TRC_STREAM_THREAD && x->st.tid == (uint32_t)a.tid;
		if (x->r.type == TRC_REC_COUNTER && mine)
			recorded++;
		if (x->r.type == TRC_REC_LOST && x->r.lost.reason == TRC_LOST_REENTRANT)
			*(mine ? &lost : &lost_elsewhere) += x->r.lost.count;
	}
	cr_assert_eq(recorded, 20);
	cr_assert_eq(lost, 5, "the thread's stream says %lu lost (elsewhere: %lu)",
		     (unsigned long)lost, (unsigned long)lost_elsewhere);
	cr_assert_eq(lost_elsewhere, 0);
	ts_collect_free(&c);
	session_destroy(s);
}

/* ---- the wait counters of a slot, as a traced program could write them ------------------- */

struct waits_arg {
	struct trc_session *s;
	uint64_t waits, waited_ns, max_ns;
	long tid;
};

/* 5 counters, the slot's wait counters set to the test's figures, 5 more. */
static void *emit_with_waits(void *p)
{
	struct waits_arg *a = p;
	a->tid = gettid();
	for (int i = 0; i < 5; i++)
		TRC_COUNTER("hostile.waits", i);
	int slot = ts_slot_of_tid(a->s, (uint32_t)a->tid);
	cr_assert_geq(slot, 0);
	struct trc_slot *sl = session__slot(a->s, (uint32_t)slot);
	atomic_store(&sl->waits, a->waits);
	atomic_store(&sl->waited_ns, a->waited_ns);
	atomic_store(&sl->wait_max_ns, a->max_ns);
	for (int i = 5; i < 10; i++)
		TRC_COUNTER("hostile.waits", i);
	return NULL;
}

/* What the drain makes of the figures: the thread's counters (all 10 either way), and either
 * the one WAIT record carrying them (believed) or its stream ended as corrupt, naming them. */
static void expect_waits(uint64_t waits, uint64_t waited_ns, uint64_t max_ns, bool believed)
{
	struct trc_session *s = start(4, 64 << 10);
	struct waits_arg a = {.s = s, .waits = waits, .waited_ns = waited_ns, .max_ns = max_ns};
	pthread_t th;
	pthread_create(&th, NULL, emit_with_waits, &a);
	pthread_join(th, NULL);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	size_t counters = 0, wait_records = 0, notes = 0;
	char why[64];
	snprintf(why, sizeof(why), "tid %ld is corrupt (wait counters implausible)", a.tid);
	for (size_t i = 0; i < c.n; i++) {
		const struct ts_rec *x = &c.v[i];
		if (x->r.type == TRC_REC_NOTE && strstr(x->str, why)) /* the meta stream's */
			notes++;
		if (x->st.kind != TRC_STREAM_THREAD || x->st.tid != (uint32_t)a.tid)
			continue;
		if (x->r.type == TRC_REC_COUNTER)
			counters++;
		if (x->r.type == TRC_REC_WAIT) {
			wait_records++;
			cr_assert_eq(x->r.wait.waits, waits);
			cr_assert_eq(x->r.wait.waited_ns, waited_ns);
			cr_assert_eq(x->r.wait.max_ns, max_ns);
		}
	}
	cr_assert_eq(counters, 10, "%zu counters", counters);
	cr_assert_eq(wait_records, believed ? 1 : 0, "waits %lu, %lu ns, longest %lu ns",
		     (unsigned long)waits, (unsigned long)waited_ns, (unsigned long)max_ns);
	cr_assert_eq(notes, believed ? 0 : 1);
	cr_assert_eq(c.lost_records[TRC_LOST_CORRUPT], believed ? 0 : 1);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(session_hostile, plausible_wait_counters_are_reported_as_they_are, .timeout = 30)
{
	expect_waits(3, 7000, 4000, true);
}

Test(session_hostile, a_longest_wait_beyond_the_sessions_age_ends_the_stream, .timeout = 30)
{
	expect_waits(1, 1000, 3600000000000ull, false);
}

Test(session_hostile, a_total_wait_beyond_the_sessions_age_ends_the_stream, .timeout = 30)
{
	expect_waits(1, 3600000000000ull, 1000, false);
}

Test(session_hostile, waits_faster_than_one_a_nanosecond_end_the_stream, .timeout = 30)
{
	expect_waits(UINT64_MAX / 2, 1000, 1000, false);
}

/* ---- a record that would not move the drain on ---------------------------------------------
 *
 * A ring record whose length is 0 and whose type byte is no event type (0, a metadata type,
 * one beyond the table, padding's 0xff), with a believable time, as a hostile program writes it
 * into its own ring: the drain ends that stream as corrupt, once, keeps what came before, and
 * goes on with the other streams. A drain that took such a record for one and moved on by its
 * length would encode it forever: the sink below refuses more events than were emitted, so
 * that drain fails the test instead of filling memory or hanging it. */

#define ZERO_BEFORE 3 /* well-formed counters before the bad record, and after it */

struct zero_arg {
	uint32_t tag; /* the bad record's tag */
	bool named; /* with the name id of the counters before it in the tag's top bits */
	uint32_t len; /* the length its header says */
	long tid;
};

/* 3 counters, the bad record (a 16-byte record whose header then says len), 3 counters. */
static void *emit_zero_len(void *p)
{
	struct zero_arg *a = p;
	a->tid = gettid();
	for (int i = 0; i < ZERO_BEFORE; i++)
		TRC_COUNTER("hostile.zero", i);
	static uint32_t site;
	uint32_t tag = a->named ? a->tag | trc__site_intern(&site, "hostile.zero") << 8 : a->tag;
	uint64_t *pl = ring_reserve_sp(&trc__self.prod, tag, 8);
	cr_assert_not_null(pl);
	pl[0] = trc__now(trc__mode_load()); /* a time the drain believes */
	memcpy((uint8_t *)pl - RING_HDR_BYTES, &a->len, sizeof(a->len));
	ring_commit_sp(&trc__self.prod);
	for (int i = 0; i < ZERO_BEFORE; i++)
		TRC_COUNTER("hostile.zero", 100 + i);
	return NULL;
}

/* A sink that counts what the drain gives for one thread (records or windows) and refuses
 * anything beyond a bound. */
#define ZERO_BOUND 1000
struct zero_sink {
	long tid;
	uint64_t events, lost_corrupt, notes, ends, refused;
	uint8_t buf[1 << 16];
};

static int zs_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct zero_sink *z = arg;
	char want[96];
	snprintf(want, sizeof(want), "tid %ld is corrupt (bad record header)", z->tid);
	if (r->type == TRC_REC_NOTE && memmem(r->note.text, r->note.len, want, strlen(want)))
		z->notes++;
	if (st->kind != TRC_STREAM_THREAD || st->tid != (uint32_t)z->tid)
		return 0;
	if (trc_rec_is_event(r->type))
		z->events++;
	if (r->type == TRC_REC_LOST && r->lost.reason == TRC_LOST_CORRUPT)
		z->lost_corrupt++;
	if (z->events > ZERO_BOUND) {
		z->refused++;
		return -E2BIG;
	}
	return 0;
}

static int zs_open(void *arg, const struct session_stream *st, uint64_t ts,
		   struct trcfile_window *win)
{
	struct zero_sink *z = arg;
	(void)st;
	*win = (struct trcfile_window){
		.p = z->buf, .limit = z->buf + sizeof(z->buf) - TRCFILE_WINDOW_EVENT_MAX, .ts = ts};
	return 0;
}

static int zs_close(void *arg, const struct session_stream *st, struct trcfile_window *win)
{
	struct zero_sink *z = arg;
	if (st->tid == (uint32_t)z->tid)
		z->events += win->count;
	if (z->events > ZERO_BOUND) {
		z->refused++;
		return -E2BIG;
	}
	return 0;
}

static void zs_end(void *arg, const struct session_stream *st)
{
	struct zero_sink *z = arg;
	z->ends += st->tid == (uint32_t)z->tid;
}

/* One bad record in a thread's ring, drained through windows (fused) or records alone. */
static void expect_zero_len_ends_once(struct trc_session *s, uint32_t tag, bool named, uint32_t len,
				      bool fused)
{
	TRC_COUNTER("hostile.zero.other", 1); /* another stream, before and after */
	struct zero_arg a = {.tag = tag, .named = named, .len = len};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emit_zero_len, &a), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	TRC_COUNTER("hostile.zero.other", 2);
	static struct zero_sink z;
	memset(&z, 0, sizeof(z));
	z.tid = a.tid;
	struct session_sink k = {.arg = &z, .record = zs_record, .stream_end = zs_end};
	if (fused) {
		k.window_open = zs_open;
		k.window_close = zs_close;
	}
	long n = 0;
	for (int idle = 0, pass = 0; idle < 2 && pass < 100; pass++) {
		n = session_drain(s, &k);
		if (n < 0)
			break;
		idle = n == 0 ? idle + 1 : 0;
	}
	const char *how = fused ? "fused" : "records";
	cr_assert_eq(z.refused, 0,
		     "tag 0x%x len %u (%s): the drain encoded the record over and "
		     "over (%lu events of %d)",
		     tag, len, how, (unsigned long)z.events, 2 * ZERO_BEFORE);
	cr_assert_geq(n, 0, "tag 0x%x len %u (%s): drain %ld", tag, len, how, n);
	cr_assert_eq(z.events, ZERO_BEFORE, "tag 0x%x len %u (%s): %lu events kept", tag, len, how,
		     (unsigned long)z.events);
	cr_assert_eq(z.lost_corrupt, 1, "tag 0x%x len %u (%s)", tag, len, how);
	cr_assert_eq(z.notes, 1, "tag 0x%x len %u (%s)", tag, len, how);
	cr_assert_eq(z.ends, 1, "tag 0x%x len %u (%s): stream ended %lu times", tag, len, how,
		     (unsigned long)z.ends);
	/* The other stream goes on: a counter after the bad one is still drained. */
	TRC_COUNTER("hostile.zero.other", 3);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	cr_assert_eq(c.by_type[TRC_REC_COUNTER], 1, "%s", ts_why(&c));
	cr_assert(!ts_trouble(&c), "%s", ts_why(&c));
	ts_collect_free(&c);
}

Test(session_hostile, a_record_of_length_0_ends_its_stream_once, .timeout = 60)
{
	static const struct {
		uint32_t tag;
		bool named;
	} cases[] = {
		{TRC_REC_INVALID, true}, /* type 0 with a name the session knows */
		{TRC_REC_INVALID, false},
		{TRC_REC_RSS, false}, /* the first type beyond the events */
		{TRC_REC_THREAD, true},
		{TRC_REC_WAIT, false},
		{TRC_REC_TYPE_COUNT, false}, /* beyond the table */
		{0x7e, true},
		{0xff, true}, /* padding's type byte */
		{RING_TAG_PAD, false},
	};
	/* One session: each case's thread ends its own stream; the slot is freed once it exits. */
	struct trc_session *s = start(4, 64 << 10);
	for (int fused = 0; fused < 2; fused++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			expect_zero_len_ends_once(s, cases[i].tag, cases[i].named, 0, fused);
	session_destroy(s);
}
