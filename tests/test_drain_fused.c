/* test_drain_fused.c - the drain's fused path writes exactly what the old encoder wrote.
 *
 * The fused path (session_drain.c, its fast loop session_drain_fast.h, trcfile.h "The fused
 * append") turns ring events into chunk bytes in one step. Its reference is the old path: each
 * ring record decoded into a struct trc_record (session__record) and encoded by trcfile__encode
 * (trcfile_stream_append). Both are fed the same ring contents here, written straight into a
 * ring with chosen timestamps and fields, covering every event type, negative time deltas,
 * address deltas across 2^64, varints of every length up to ten bytes, a name first used in the
 * middle of a run, and each clock form of the fast loop: nanoseconds (clock_gettime), TSC ticks
 * with a rate below 1 ns a tick (one high-word product) and above (the general product), with
 * times on both sides of a refit (the previous segment's conversion) and stepping back across
 * it. Each is drained in one batch of a big ring (the drain's slices) and in batches through a
 * small ring that wraps many times (records at and across its end). Both write a file through
 * the real writer with small chunks (many chunk boundaries); the files must be equal byte for
 * byte, and the fused file read back gives every record as emitted.
 *
 * Then records the fast loop must not take, in the middle of a run: an event of an unusual
 * length (the old path delivers it), and corrupt ones (id 0, also as the first record and as
 * the first named record of a fast run, an id beyond the string table, a
 * time no record can have, a tick on a clock segment that starts after now, an unknown type, a
 * payload too short): both paths stop at the same
 * record, keep what came before it and report the stream corrupt.
 *
 * Threads: the test thread is drain and (but for the corrupt cases) producer at once.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"
#include "ring.h"
#include "session.h"
#include "session_internal.h"
#include "test_drain_util.h"
#include "test_session_util.h"
#include "trc.h"
#include "trcfile.h"

#define N_EVENTS 20000u

/* One synthetic event: what is written into the ring, and what must come back. */
struct ev {
	uint32_t type, id, len; /* len: the record's payload bytes; 0 = the type's own */
	uint64_t ts, a, b;
};

static struct ev evs[N_EVENTS];

/* Events from time ts0 on (ns, or ticks when the test converts): every type, names id1 and
 * id2, and id3 from N_EVENTS / 3 on; at N_EVENTS / 2 a long pause of 2^24 and, ten events
 * later, a step back of more than that. */
static void make_events(uint64_t ts0, uint32_t id1, uint32_t id2, uint32_t id3)
{
	static const uint32_t kinds[] = {
		TRC_REC_SPAN_BEGIN, TRC_REC_FUNC_ENTER, TRC_REC_ALLOC,	   TRC_REC_INSTANT,
		TRC_REC_FREE,	    TRC_REC_COUNTER,	TRC_REC_FUNC_EXIT, TRC_REC_SPAN_END,
	};
	uint64_t ts = ts0;
	for (uint32_t i = 0; i < N_EVENTS; i++) {
		struct ev *e = &evs[i];
		memset(e, 0, sizeof(*e));
		e->type = kinds[(i * 7 + i / 8) % 8];
		e->id = (i % 3) ? id1 : id2;
		if (i >= N_EVENTS / 3 && i % 5 == 1)
			e->id = id3;
		if (i % 97 == 5)
			ts -= 1000 + i; /* negative delta */
		else if (i == N_EVENTS / 2)
			ts += 1ull << 24; /* a long pause: a four-byte delta */
		else if (i == N_EVENTS / 2 + 10)
			ts -= (1ull << 24) + 5000; /* back across the pause */
		else
			ts += 13 + (i % 5) * 1000;
		e->ts = ts;
		uint64_t base = (i % 11 == 0) ? 0xffffffffffff0000ull : 0x7f0000000000ull;
		switch (e->type) {
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			e->a = (uint64_t)((int64_t)i * 1000003 * ((i & 1) ? -1 : 1));
			if (i % 200 == 3)
				e->a = (uint64_t)INT64_MIN; /* ten-byte varints */
			if (i % 200 == 5)
				e->a = (uint64_t)INT64_MAX;
			if (i % 200 == 19)
				e->a = (uint64_t)1 << (i % 64); /* every length */
			break;
		case TRC_REC_ALLOC:
			e->a = base + (i * 48u) % 65536u;
			e->b = (uint64_t)i * 7u + ((i % 13 == 0) ? (1ull << 62) : 0);
			if (i % 130 == 2)
				e->b = UINT64_MAX;
			if (i % 130 == 12)
				e->b = (1ull << (i % 64)) - 1;
			break;
		case TRC_REC_FREE:
			e->a = (i % 17 == 0) ? 0 : base + (i * 80u) % 65536u;
			break;
		case TRC_REC_FUNC_ENTER:
		case TRC_REC_FUNC_EXIT:
			e->a = (i % 19 == 0) ? UINT64_MAX - i : 0x400000u + (i % 50u) * 64u;
			e->b = (i % 2) ? e->a + 17 : e->a - 300000;
			if (i % 23 == 0)
				e->b = e->a ^ (1ull << 63);
			break;
		default:
			break;
		}
	}
}

static unsigned ev_words(uint32_t type)
{
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		return 1;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
	case TRC_REC_FREE:
		return 2;
	default:
		return 3;
	}
}

/* Writes events [from, to) into this thread's ring (claimed already), as the producer would. */
static void emit_events(uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++) {
		const struct ev *e = &evs[i];
		uint32_t bytes = e->len ? e->len : 8u * ev_words(e->type);
		uint32_t tag = e->type <= TRC_REC_COUNTER ? TRC_TAG(e->type, e->id) : e->type;
		uint64_t *p = ring_reserve_sp(&trc__self.prod, tag, bytes);
		cr_assert_not_null(p, "ring full at event %u", i);
		uint64_t w[4] = {e->ts, e->a, e->b, 0};
		memcpy(p, w, bytes < sizeof(w) ? bytes : sizeof(w));
		ring_commit_sp(&trc__self.prod);
	}
}

/* Emits the events batch by batch (all at once when batch is 0), draining each batch until
 * idle, into a file at path, fused or not. Returns the events written; *names, the NAME records
 * of name_id delivered. */
static uint64_t drain_to_file(struct trc_session *s, const char *path, bool fused, uint32_t batch,
			      const struct clock_setup *cs, uint32_t name_id, uint32_t *names,
			      uint64_t *name_at)
{
	struct fsink f = {.w = open_writer(path, TRCFILE_MIN_CHUNK_BYTES), /* ~25 chunks */
			  .name_id = name_id};
	struct session_sink k = {.arg = &f, .record = fs_record};
	if (fused) {
		k.window_open = fs_window_open;
		k.window_close = fs_window_close;
	}
	if (!batch)
		batch = N_EVENTS;
	for (uint32_t i = 0; i < N_EVENTS; i += batch) {
		emit_events(i, i + batch < N_EVENTS ? i + batch : N_EVENTS);
		drain_idle(s, &k, cs);
	}
	cr_assert_eq(trcfile_writer_close(f.w), 0);
	cr_assert_eq(f.corrupt, 0);
	*names = f.names;
	*name_at = f.name_at;
	return f.events;
}

/* The file at path holds events [0, n) as emitted, their times through ns_of. */
static void assert_events(const char *path, uint32_t n, uint64_t (*ns_of)(uint64_t, const void *),
			  const void *arg)
{
	struct trcfile_reader *rd = NULL;
	char msg[256] = "";
	cr_assert_eq(trcfile_reader_open(path, &rd, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(trcfile_reader_stream_count(rd), 1);
	cr_assert_gt(trcfile_reader_stream(rd, 0)->chunks, 10, "several chunk boundaries");
	struct trcfile_cursor *cur = trcfile_cursor_new(rd, 0);
	cr_assert_not_null(cur);
	struct trc_record r;
	for (uint32_t i = 0; i < n; i++) {
		const struct ev *e = &evs[i];
		cr_assert_eq(trcfile_cursor_next(cur, &r), 1, "record %u: %s", i,
			     trcfile_reader_errmsg(rd));
		cr_assert_eq(r.type, e->type, "record %u type", i);
		cr_assert_eq(r.ts_ns, ns_of ? ns_of(e->ts, arg) : e->ts, "record %u ts", i);
		switch (e->type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_SPAN_END:
			cr_assert_eq(r.span.name_id, e->id, "record %u", i);
			break;
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			cr_assert_eq(r.value.name_id, e->id, "record %u", i);
			cr_assert_eq((uint64_t)r.value.value, e->a, "record %u", i);
			break;
		case TRC_REC_ALLOC:
			cr_assert_eq(r.alloc.size, e->b, "record %u", i);
			/* fall through */
		case TRC_REC_FREE:
			cr_assert_eq(r.alloc.addr, e->a, "record %u", i);
			break;
		default:
			cr_assert_eq(r.func.addr, e->a, "record %u", i);
			cr_assert_eq(r.func.call_site, e->b, "record %u", i);
			break;
		}
	}
	cr_assert_eq(trcfile_cursor_next(cur, &r), 0);
	trcfile_cursor_free(cur);
	trcfile_reader_close(rd);
}

/* A session with this thread's ring claimed, names id1 and id2 interned and delivered, id3
 * interned only (its NAME not delivered yet). */
static struct trc_session *start(uint64_t ring_bytes, uint32_t ids[3])
{
	struct session_config cfg = {
		.max_slots = 4, .force_clock_gettime = true, .ring_bytes = ring_bytes};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0);
	TRC_INSTANT("fused-a", 1);
	TRC_INSTANT("fused-b", 2);
	struct ts_collect skip = {0};
	ts_drain_idle(s, &skip);
	ids[0] = ids[1] = 0;
	for (size_t i = 0; i < skip.n; i++)
		if (skip.v[i].r.type == TRC_REC_INSTANT)
			*(ids[0] ? &ids[1] : &ids[0]) = skip.v[i].r.value.name_id;
	ts_collect_free(&skip);
	static uint32_t site;
	ids[2] = trc__site_intern(&site, "fused-c");
	cr_assert(ids[0] && ids[1] && ids[2] && ids[0] != ids[1] && ids[2] != ids[1] &&
		  ids[2] != ids[0]);
	cr_assert_not_null(trc__self.prod.data, "this thread has a ring");
	return s;
}

/* The fused path first (so id3 is first seen there), then the old one; same bytes. */
static void run_case(uint64_t ring_bytes, uint32_t batch, const struct clock_setup *cs,
		     uint64_t (*ns_of)(uint64_t, const void *))
{
	uint32_t ids[3];
	struct trc_session *s = start(ring_bytes, ids);
	/* With TSC, times cross tick0 about half-way. */
	make_events(cs && cs->tsc ? cs->cur.tick0 - 20000000u : trc_mono_ns(), ids[0], ids[1],
		    ids[2]);
	uint64_t written0 = trc__self.prod.write;

	char a[] = "/tmp/trc_fused_old_XXXXXX", b[] = "/tmp/trc_fused_new_XXXXXX";
	close(mkstemp(a));
	close(mkstemp(b));
	uint32_t names_fused = 0, names_old = 0;
	uint64_t name_at = 0, unused = 0;
	cr_assert_eq(drain_to_file(s, b, true, batch, cs, ids[2], &names_fused, &name_at),
		     N_EVENTS);
	cr_assert_eq(drain_to_file(s, a, false, batch, cs, ids[2], &names_old, &unused), N_EVENTS);
	/* The name first used by the fused run: delivered there, once, right before the first
	 * event that uses it (the fast loop's per-run cache of the last known id must not take
	 * a new id unchecked). */
	cr_assert_eq(names_fused, 1);
	cr_assert_eq(names_old, 0);
	uint64_t first_use = 0;
	while (first_use < N_EVENTS &&
	       (evs[first_use].id != ids[2] || evs[first_use].type > TRC_REC_COUNTER))
		first_use++;
	cr_assert_lt(first_use, N_EVENTS);
	cr_assert_eq(name_at, first_use, "NAME after %" PRIu64 " events, first use at %" PRIu64,
		     name_at, first_use);
	if (batch)
		cr_assert_gt(trc__self.prod.write - written0, 8 * ring_bytes, "the ring wrapped");
	assert_same_files(a, b);
	assert_events(b, N_EVENTS, ns_of, cs);
	unlink(a);
	unlink(b);
	session_destroy(s);
}

Test(drain_fused, ns_one_batch_matches_the_old_encoder, .timeout = 60)
{
	run_case(0, 0, NULL, NULL);
}

Test(drain_fused, ns_through_a_wrapping_ring_matches_the_old_encoder, .timeout = 60)
{
	run_case(64u << 10, 700, NULL, NULL);
}

/* Ticks to ns as the drain converts them (clock.h). */
static uint64_t tsc_ns(uint64_t t, const void *arg)
{
	const struct clock_setup *cs = arg;
	return trc_clock_to_ns(t >= cs->cur.tick0 ? &cs->cur : &cs->prev, t);
}

/* Two segments around tick0 = now (as a tick count: the THREAD records of the emitter threads,
 * stamped in ns by the runtime, then convert to times near now too), times within the drain's
 * belief (now - 30 ms on). */
static struct clock_setup tsc_setup(uint64_t mult_cur, uint64_t mult_prev)
{
	uint64_t now = trc_mono_ns();
	struct clock_setup cs = {.tsc = true};
	cs.cur = (struct trc_clock_conv){.tick0 = now, .ns0 = now, .mult = mult_cur};
	cs.prev = (struct trc_clock_conv){
		.tick0 = now - (1ull << 26), .ns0 = now - 30000000u, .mult = mult_prev};
	return cs;
}

Test(drain_fused, tsc_fast_rate_matches_the_old_encoder, .timeout = 60)
{
	/* 0.4 ns a tick: mult < 2^32, the fast loop's one-product form */
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	run_case(0, 0, &cs, tsc_ns);
}

Test(drain_fused, tsc_fast_rate_through_a_wrapping_ring_matches_the_old_encoder, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	run_case(64u << 10, 700, &cs, tsc_ns);
}

Test(drain_fused, tsc_slow_rate_matches_the_old_encoder, .timeout = 60)
{
	/* 1.5 ns a tick: mult >= 2^32, the general product */
	struct clock_setup cs = tsc_setup(6442450944u + 12345u, 1717986917u);
	run_case(64u << 10, 700, &cs, tsc_ns);
}

/* ---- records the fast loop must leave to the careful paths ---------------------------- */

#define BAD_AT (N_EVENTS / 2 + 3)

struct emitter {
	uint32_t n;
};

/* A thread of its own for each run: a stream found corrupt stays so until its thread exits. */
static void *emitter_main(void *arg)
{
	const struct emitter *em = arg;
	trc_thread_name("fused-emitter"); /* claims the ring, no event */
	emit_events(0, em->n);
	return NULL;
}

static uint64_t drain_thread_to_file(struct trc_session *s, const char *path, bool fused,
				     const struct clock_setup *cs, uint64_t *corrupt)
{
	struct fsink f = {.w = open_writer(path, TRCFILE_MIN_CHUNK_BYTES)};
	struct session_sink k = {.arg = &f, .record = fs_record};
	if (fused) {
		k.window_open = fs_window_open;
		k.window_close = fs_window_close;
	}
	struct emitter em = {.n = N_EVENTS};
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, emitter_main, &em), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	drain_idle(s, &k, cs);
	cr_assert_eq(trcfile_writer_close(f.w), 0);
	*corrupt = f.corrupt;
	return f.events;
}

/* Events from BAD_AT on replaced by what kind says; the old and fused paths must agree. */
static void bad_case(int kind, bool is_corrupt, const struct clock_setup *cs)
{
	uint32_t ids[3];
	struct trc_session *s = start(0, ids);
	/* Ticks from 20 M before tick0 (so across it), or, for kind 8, from 20 M before now as
	 * a tick count, on the previous segment: tick0 of the current one is far ahead. */
	uint64_t ts0 = !cs || !cs->tsc ? trc_mono_ns()
		       : kind == 8     ? cs->prev.tick0 + (1ull << 26) - 20000000u
				       : cs->cur.tick0 - 20000000u;
	make_events(ts0, ids[0], ids[1], ids[2]);
	struct ev *e = &evs[BAD_AT];
	switch (kind) {
	case 0: /* events with longer payloads: unusual, not corrupt (the old path takes them);
		 * each after two usual ones, so the fast loop meets it */
		e[0].type = TRC_REC_SPAN_BEGIN;
		e[0].len = 16;
		e[3].type = TRC_REC_COUNTER;
		e[3].len = 24;
		e[6].type = TRC_REC_FREE;
		e[6].len = 24;
		e[9].type = TRC_REC_ALLOC;
		e[9].len = 32;
		e[12].type = TRC_REC_FUNC_EXIT;
		e[12].len = 40;
		for (int i = 0; i <= 12; i += 3)
			e[i].id = ids[0];
		break;
	case 1: /* name id 0 */
		e->type = TRC_REC_COUNTER;
		e->id = 0;
		break;
	case 2: /* a name id beyond the string table */
		e->type = TRC_REC_SPAN_END;
		e->id = (1u << 24) - 1;
		break;
	case 3: /* a time no record can have: long before the session */
		e->ts = 12345;
		break;
	case 4: /* a time no record can have: long after now */
		e->ts += 1ull << 50;
		break;
	case 7: /* on the current segment, beyond belief (1.08 s ahead at 0.9 ns a tick); what
		 * the previous segment's slower rate would make of it is believable, and wrong */
		e->ts = cs->cur.tick0 + 1200000000u;
		break;
	case 8: /* just past tick0 of a current segment that starts an hour after now (a refit
		 * read long after the drain's clock, if that could be): its time is past belief
		 * however near tick0, and the fast loop must not start on that segment */
		e->ts = cs->cur.tick0 + 1000;
		break;
	case 9: /* name id 0 as the first record of a fast run: an event of an unusual length
		 * ends the run (the old path takes it), the next one reopens the window in the
		 * careful loop, the fast loop starts at id 0 */
	case 10: /* the same with an address event first: id 0 is the run's first name */
		e[-2].type = TRC_REC_SPAN_BEGIN;
		e[-2].id = ids[0];
		e[-2].len = 16;
		e[-1].type = TRC_REC_FUNC_ENTER;
		if (kind == 10) {
			e[0].type = TRC_REC_ALLOC;
			e++;
		}
		e->type = TRC_REC_COUNTER;
		e->id = 0;
		break;
	case 5: /* an unknown type of an event's length */
		e->type = 0x7e;
		e->len = 24;
		break;
	default: /* a FREE without its address */
		e->type = TRC_REC_FREE;
		e->len = 8;
		break;
	}
	char a[] = "/tmp/trc_fused_old_XXXXXX", b[] = "/tmp/trc_fused_new_XXXXXX";
	close(mkstemp(a));
	close(mkstemp(b));
	const uint32_t bad_at = BAD_AT + (kind == 10);
	uint64_t bad_fused = 0, bad_old = 0;
	uint64_t n_fused = drain_thread_to_file(s, b, true, cs, &bad_fused);
	uint64_t n_old = drain_thread_to_file(s, a, false, cs, &bad_old);
	cr_assert_eq(n_old, is_corrupt ? bad_at : N_EVENTS, "kind %d", kind);
	cr_assert_eq(n_fused, is_corrupt ? bad_at : N_EVENTS, "kind %d", kind);
	cr_assert_eq(n_old, n_fused, "kind %d", kind);
	cr_assert_eq(bad_fused, is_corrupt ? 1 : 0, "kind %d", kind);
	cr_assert_eq(bad_old, bad_fused, "kind %d", kind);
	assert_same_files(a, b);
	assert_events(b, is_corrupt ? bad_at : N_EVENTS, cs ? tsc_ns : NULL, cs);
	unlink(a);
	unlink(b);
	session_destroy(s);
}

Test(drain_fused, unusual_lengths_are_delivered_as_by_the_old_path, .timeout = 60)
{
	bad_case(0, false, NULL);
}

Test(drain_fused, name_id_0_ends_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(1, true, NULL);
}

Test(drain_fused, name_id_0_first_in_a_fast_run_ends_the_stream_where_the_old_path_does,
     .timeout = 60)
{
	bad_case(9, true, NULL);
}

Test(drain_fused, name_id_0_first_named_in_a_fast_run_ends_the_stream_where_the_old_path_does,
     .timeout = 60)
{
	bad_case(10, true, NULL);
}

Test(drain_fused, name_id_0_first_in_a_fast_tsc_run_ends_the_stream_where_the_old_path_does,
     .timeout = 60)
{
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	bad_case(9, true, &cs);
}

Test(drain_fused, name_id_0_first_in_a_slow_tsc_run_ends_the_stream_where_the_old_path_does,
     .timeout = 60)
{
	struct clock_setup cs = tsc_setup(6442450944u + 12345u, 1717986917u);
	bad_case(10, true, &cs);
}

Test(drain_fused, a_name_id_beyond_the_table_ends_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(2, true, NULL);
}

Test(drain_fused, impossible_times_end_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(3, true, NULL);
}

Test(drain_fused, future_times_end_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(4, true, NULL);
}

Test(drain_fused, impossible_tsc_times_end_the_stream_where_the_old_path_does, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	bad_case(3, true, &cs);
}

Test(drain_fused, future_tsc_times_end_the_stream_where_the_old_path_does, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	bad_case(4, true, &cs);
}

Test(drain_fused, future_slow_tsc_times_end_the_stream_where_the_old_path_does, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(6442450944u + 12345u, 1717986917u);
	bad_case(4, true, &cs);
}

Test(drain_fused, a_future_time_is_never_taken_on_the_previous_segment, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(3865470566u, 429496730u);
	bad_case(7, true, &cs);
}

Test(drain_fused, a_segment_starting_after_now_is_never_believed, .timeout = 60)
{
	struct clock_setup cs = tsc_setup(1717986919u, 1717986917u);
	cs.cur.tick0 = cs.prev.tick0 + (1ull << 26) + (1ull << 32);
	cs.cur.ns0 = trc_mono_ns() + 3600000000000ull;
	bad_case(8, true, &cs);
}

Test(drain_fused, an_unknown_type_ends_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(5, true, NULL);
}

Test(drain_fused, a_short_payload_ends_the_stream_where_the_old_path_does, .timeout = 60)
{
	bad_case(6, true, NULL);
}
