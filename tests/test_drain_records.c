/* test_drain_records.c - the drain (src/session/session_drain.c) on records a traced program
 * writes wrong, and its lost counts over several drains, exactly.
 *
 * The test is recorder and producer at once (ts_start). Well-formed events go through trc.h;
 * the wrong ones are pushed raw into this thread's own ring (trc__self.prod, the ring the
 * runtime claimed for it), as a buggy or hostile program could write them:
 *   - a record whose payload is shorter than its type needs (the fast types and the others):
 *     the stream ends as corrupt (LOST CORRUPT and a NOTE naming pid and tid), nothing is read
 *     past the payload, and what came before is kept;
 *   - a PROCESS record whose command-line length runs past its payload, or past
 *     TRC_CMDLINE_MAX: the same;
 *   - ring-full drops over several drains: each drop reported once (recorded + lost = emitted,
 *     exactly), not the running total again at every drain.
 * Both sink kinds: records (ts_collect) and, for the short payloads, windows (the fused path).
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "ring_producer.h"
#include "session_internal.h"
#include "test_session_util.h"
#include "trcfile.h"

static struct trc_session *start(uint32_t slots, uint64_t ring)
{
	struct session_config cfg = {.max_slots = slots, .ring_bytes = ring};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0, "trc_attach: %d", rc);
	return s;
}

/* Pushes a raw record into this thread's ring (it holds one: it emitted before). */
static void push_raw(uint32_t type, uint32_t id, const void *payload, uint32_t len)
{
	cr_assert_not_null(trc__self.prod.data, "the thread holds no ring");
	cr_assert_eq(ring_push_sp(&trc__self.prod, TRC_TAG(type, id), payload, len), 0);
}

static uint64_t now_ts(void)
{
	return trc__now(trc__mode_load());
}

/* What a drain gave for this thread's stream. */
struct seen {
	size_t counters, of_type, lost_corrupt_records, notes;
	uint64_t lost_corrupt;
	char note[512];
};

static struct seen look(const struct ts_collect *c, uint32_t type)
{
	struct seen w = {0};
	uint32_t tid = (uint32_t)gettid();
	for (size_t i = 0; i < c->n; i++) {
		const struct ts_rec *x = &c->v[i];
		if (x->r.type == TRC_REC_NOTE) {
			w.notes++;
			snprintf(w.note, sizeof(w.note), "%s", x->str);
		}
		if (x->st.tid != tid)
			continue;
		w.counters += x->r.type == TRC_REC_COUNTER;
		w.of_type += x->r.type == type;
		if (x->r.type == TRC_REC_LOST && x->r.lost.reason == TRC_LOST_CORRUPT) {
			w.lost_corrupt_records++;
			w.lost_corrupt += x->r.lost.count;
		}
	}
	return w;
}

static void expect_corrupt_note(const struct seen *w)
{
	char want[200];
	snprintf(want, sizeof(want),
		 "trc: ring of pid %d tid %d is corrupt (bad record): its stream ends here",
		 (int)getpid(), (int)gettid());
	cr_assert_eq(w->notes, 1);
	cr_assert_str_eq(w->note, want);
	cr_assert_eq(w->lost_corrupt_records, 1);
	cr_assert_eq(w->lost_corrupt, 0, "an unknown number lost: count 0");
}

/* Records of every kind with a payload 8 bytes short of what the type needs (the ring pads to
 * 8): each ends the stream, with the 3 counters before it kept and nothing after it. */
static const struct {
	uint32_t type;
	uint32_t need;
} short_cases[] = {
	{TRC_REC_SPAN_BEGIN, sizeof(struct trc_ring_span)},
	{TRC_REC_COUNTER, sizeof(struct trc_ring_value)},
	{TRC_REC_ALLOC, sizeof(struct trc_ring_alloc)},
	{TRC_REC_FREE, sizeof(struct trc_ring_free)},
	{TRC_REC_FUNC_ENTER, sizeof(struct trc_ring_func)},
	{TRC_REC_THREAD, sizeof(struct trc_ring_thread)},
	{TRC_REC_PROCESS, sizeof(struct trc_ring_process)},
	{TRC_REC_MODULE, sizeof(struct trc_ring_module)},
};

static void emit_before(void)
{
	for (int i = 0; i < 3; i++)
		TRC_COUNTER("drain.before", i);
}

/* The bad record, then 3 counters the drain must not reach: the first words well-formed (a
 * time, a name id the session knows), the rest missing; what follows the payload in the ring
 * is a well-formed record the drain must not take for the missing fields. */
static void emit_short_and_after(size_t k)
{
	uint64_t p[64];
	memset(p, 0x11, sizeof(p));
	p[0] = now_ts();
	push_raw(short_cases[k].type, 1, p, short_cases[k].need - 8);
	for (int i = 0; i < 3; i++)
		TRC_COUNTER("drain.after", i);
}

Test(drain_records, short_payload_ends_the_stream, .timeout = 30)
{
	for (size_t k = 0; k < sizeof(short_cases) / sizeof(short_cases[0]); k++) {
		/* A fresh session per case: the stream ends at the bad record. */
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct trc_session *s = start(4, 64 << 10);
			emit_before();
			struct ts_collect c1 = {0}, c2 = {0};
			ts_drain_idle(s, &c1);
			struct seen w1 = look(&c1, short_cases[k].type);
			emit_short_and_after(k);
			ts_drain_idle(s, &c2);
			struct seen w = look(&c2, short_cases[k].type);
			char want[200];
			snprintf(want, sizeof(want),
				 "trc: ring of pid %d tid %d is corrupt (bad record): its stream "
				 "ends here",
				 (int)getpid(), (int)gettid());
			int ok = w1.counters == 3 && w1.notes == 0 && w.counters == 0 &&
				 w.of_type == 0 && w.notes == 1 && !strcmp(w.note, want) &&
				 w.lost_corrupt_records == 1 && w.lost_corrupt == 0;
			if (!ok)
				fprintf(stderr,
					"type %u: before: %zu counters; after: %zu counters, %zu "
					"of its "
					"type, notes %zu (%s), lost corrupt %zu\n",
					short_cases[k].type, w1.counters, w.counters, w.of_type,
					w.notes, w.note, w.lost_corrupt_records);
			ts_collect_free(&c1);
			ts_collect_free(&c2);
			session_destroy(s);
			_exit(ok ? 0 : 1);
		}
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "type %u: status %x",
			  short_cases[k].type, st);
	}
}

/* The same through the fused path (a sink with windows): the events before the bad one are in
 * the window, kept; the bad one ends the stream. */
struct wsink {
	size_t window_records, records, lost_corrupt, notes;
};

static int ws_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct wsink *w = arg;
	(void)st;
	w->records++;
	w->lost_corrupt += r->type == TRC_REC_LOST && r->lost.reason == TRC_LOST_CORRUPT;
	w->notes += r->type == TRC_REC_NOTE;
	return 0;
}

static uint8_t ws_buf[1 << 16];

static int ws_open(void *arg, const struct session_stream *st, uint64_t ts,
		   struct trcfile_window *win)
{
	(void)arg;
	(void)st;
	/* A fresh buffer each time: only the count matters here. */
	*win = (struct trcfile_window){
		.p = ws_buf, .limit = ws_buf + sizeof(ws_buf) - TRCFILE_WINDOW_EVENT_MAX, .ts = ts};
	return 0;
}

static int ws_close(void *arg, const struct session_stream *st, struct trcfile_window *win)
{
	struct wsink *w = arg;
	(void)st;
	w->window_records += win->count;
	return 0;
}

Test(drain_records, short_payload_ends_the_stream_on_the_fused_path, .timeout = 30)
{
	for (size_t k = 0; k < 5; k++) { /* the event types */
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct trc_session *s = start(4, 64 << 10);
			emit_before();
			emit_short_and_after(k);
			struct wsink w = {0};
			struct session_sink sink = {.arg = &w,
						    .record = ws_record,
						    .window_open = ws_open,
						    .window_close = ws_close};
			for (int i = 0; i < 3; i++)
				session_drain(s, &sink);
			int ok = w.window_records == 3 && w.lost_corrupt == 1 && w.notes == 1;
			if (!ok)
				fprintf(stderr,
					"case %zu: %zu in windows, %zu lost corrupt, %zu notes\n",
					k, w.window_records, w.lost_corrupt, w.notes);
			session_destroy(s);
			_exit(ok ? 0 : 1);
		}
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %zu: status %x", k, st);
	}
}

/* A PROCESS record whose command-line length runs past its payload, or past TRC_CMDLINE_MAX
 * with a payload that long: refused, the stream ended as corrupt; no PROCESS record out. */
static void cmdline_case(uint64_t cmdline_len, uint32_t payload_bytes)
{
	struct trc_session *s = start(4, 1 << 20) /* holds a record of TRC_CMDLINE_MAX */;
	TRC_COUNTER("drain.before", 1);
	static uint64_t p[(TRC_CMDLINE_MAX + 64) / 8 + 8];
	memset(p, 'x', sizeof(p));
	p[0] = now_ts();
	p[1] = (uint64_t)getpid(); /* pid, ppid 0 */
	p[2] = cmdline_len;
	cr_assert_leq(payload_bytes, sizeof(p));
	push_raw(TRC_REC_PROCESS, 0, p, payload_bytes);
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	size_t bad_process = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_PROCESS && c.v[i].r.process.cmdline_len == cmdline_len)
			bad_process++;
	cr_assert_eq(bad_process, 0, "a command line of %lu bytes went out",
		     (unsigned long)cmdline_len);
	struct seen w = look(&c, TRC_REC_PROCESS);
	cr_assert_eq(w.counters, 1);
	expect_corrupt_note(&w);
	ts_collect_free(&c);
	session_destroy(s);
}

Test(drain_records, command_line_longer_than_its_payload, .timeout = 30)
{
	cmdline_case(1000, sizeof(struct trc_ring_process) + 64);
}

Test(drain_records, command_line_longer_than_the_maximum, .timeout = 30)
{
	uint64_t len = TRC_CMDLINE_MAX + 8;
	cmdline_case(len, (uint32_t)(sizeof(struct trc_ring_process) + len));
}

/* And the largest command line allowed goes out whole. */
Test(drain_records, command_line_of_the_maximum_length, .timeout = 30)
{
	struct trc_session *s = start(4, 1 << 20) /* holds a record of TRC_CMDLINE_MAX */;
	TRC_COUNTER("drain.before", 1);
	static uint64_t p[(TRC_CMDLINE_MAX + 64) / 8 + 8];
	memset(p, 'x', sizeof(p));
	p[0] = now_ts();
	p[1] = (uint64_t)getpid();
	p[2] = TRC_CMDLINE_MAX;
	push_raw(TRC_REC_PROCESS, 0, p,
		 (uint32_t)(sizeof(struct trc_ring_process) + TRC_CMDLINE_MAX));
	struct ts_collect c = {0};
	ts_drain_idle(s, &c);
	size_t found = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_PROCESS &&
		    c.v[i].r.process.cmdline_len == TRC_CMDLINE_MAX)
			found++;
	cr_assert_eq(found, 1);
	cr_assert_eq(look(&c, 0).notes, 0);
	ts_collect_free(&c);
	session_destroy(s);
}

/* Ring-full drops over several drains: three rounds of 5000 counters into a ring that holds
 * a few hundred, a drain (to idle, so at least two passes) after each. The drops of each
 * round are reported once: over the three rounds, recorded + lost = emitted exactly, and each
 * round's own LOST records add up to its own drops. */
Test(drain_records, drops_are_reported_once_over_several_drains, .timeout = 30)
{
	enum { ROUND = 5000, ROUNDS = 3 };
	struct trc_session *s = start(4, 16 << 10);
	struct ts_collect c = {0};
	uint64_t recorded = 0, lost = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < ROUND; i++)
			TRC_COUNTER("drain.drops", i);
		size_t before = c.n;
		ts_drain_idle(s, &c);
		uint64_t r_rec = 0, r_lost = 0;
		for (size_t i = before; i < c.n; i++) {
			r_rec += c.v[i].r.type == TRC_REC_COUNTER;
			if (c.v[i].r.type == TRC_REC_LOST) {
				cr_assert_eq(c.v[i].r.lost.reason, TRC_LOST_RING_FULL);
				r_lost += c.v[i].r.lost.count;
			}
		}
		cr_assert_gt(r_lost, 0, "round %d: the ring overflowed", round);
		cr_assert_eq(r_rec + r_lost, ROUND, "round %d: %lu recorded + %lu lost", round,
			     (unsigned long)r_rec, (unsigned long)r_lost);
		recorded += r_rec;
		lost += r_lost;
	}
	cr_assert_eq(recorded + lost, (uint64_t)ROUND * ROUNDS);
	cr_assert_eq(c.lost[TRC_LOST_RING_FULL], lost);
	ts_collect_free(&c);
	session_destroy(s);
}

/* The region-wide lost counters (events of a thread that had no ring: nested in its own claim,
 * or no free slot) go out on the meta stream under their own reasons, each increase once. */
static void region_lost(const struct ts_collect *c, size_t from, uint64_t *by_reason)
{
	memset(by_reason, 0, 8 * sizeof(*by_reason));
	for (size_t i = from; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_LOST && c->v[i].st.kind == TRC_STREAM_META &&
		    c->v[i].r.lost.reason < 8)
			by_reason[c->v[i].r.lost.reason] += c->v[i].r.lost.count;
}

Test(drain_records, region_lost_counts_under_their_reasons_once_each, .timeout = 30)
{
	struct trc_session *s = start(4, 64 << 10);
	struct ts_collect c = {0};
	uint64_t got[8];
	ts_drain_idle(s, &c);
	atomic_fetch_add(&s->hdr->lost_reentrant, 7);
	atomic_fetch_add(&s->hdr->lost_no_slot, 5);
	size_t before = c.n;
	ts_drain_idle(s, &c);
	region_lost(&c, before, got);
	cr_assert_eq(got[TRC_LOST_REENTRANT], 7, "reentrant %lu", (unsigned long)got[6]);
	cr_assert_eq(got[TRC_LOST_NO_SLOT], 5, "no slot %lu", (unsigned long)got[TRC_LOST_NO_SLOT]);
	cr_assert_eq(got[TRC_LOST_CORRUPT] + got[TRC_LOST_RING_FULL], 0);
	/* A counter not believed is reported as a LOST of count 0 (CORRUPT) and a NOTE: only the
	 * records show it. */
	cr_assert(!ts_trouble(&c), "%s", ts_why(&c));
	atomic_fetch_add(&s->hdr->lost_reentrant, 3);
	before = c.n;
	ts_drain_idle(s, &c);
	region_lost(&c, before, got);
	cr_assert_eq(got[TRC_LOST_REENTRANT], 3, "reentrant %lu: the increase only",
		     (unsigned long)got[TRC_LOST_REENTRANT]);
	cr_assert_eq(got[TRC_LOST_NO_SLOT], 0);
	cr_assert(!ts_trouble(&c), "%s", ts_why(&c));
	ts_collect_free(&c);
	session_destroy(s);
}
