/* test_drain_boundaries.c - every variable-length field of every event kind at each varint width
 * boundary, through the drain's three encoders, byte for byte.
 *
 * The three: the reference (session__record decodes the ring record into a struct trc_record,
 * trcfile__encode writes it: a sink without windows), the fused fast loop (session_drain_fast.h:
 * one batch of a big ring, names known, so every record but the first and the last few is its)
 * and the fused careful loop (session__fused_run: one record per drain, so each opens the
 * window there). The same ring bytes go through each into a file of one chunk (so each delta is
 * the one planned, never one restarted at a chunk boundary); the files must be equal byte for
 * byte, and the file read back (the cursor: the fast decoder and the checked one) gives every
 * field as emitted.
 *
 * The values: 0, 1, both sides of each width boundary 2^7k - 1 | 2^7k (k = 1..9: 127 | 128,
 * 16383 | 16384, 2^21 - 1 | 2^21, ... 2^63 - 1 | 2^63) and 2^64 - 1 for plain varints (an
 * allocation's size); for zigzag fields (a value, an address step, a call site's distance) the
 * signed values whose zigzag form is each of those, and those numbers taken as signed; for name
 * ids, the boundaries up to the largest id the session's string table takes. Time deltas, forward
 * and back, at every boundary below the span of times the drain believes (the session made to
 * look as old as the clock, so that is the machine's uptime: a record stamped further from now
 * is refused as corrupt, by all three alike). Each event kind meets every value of each of its
 * fields and every time delta, the other fields turning through their own values alongside.
 * In each clock form of the fast loop: nanoseconds, and TSC ticks of exactly 1 ns (the general
 * product) and of just under 1 ns (the one high-word product), whose ticks are chosen so that
 * they convert to the planned nanoseconds exactly.
 *
 * Threads: the test thread is drain and producer at once.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"
#include "test_drain_util.h"
#include "test_session_util.h"
#include "trc.h"
#include "trcfile.h"
#include "trcfile_codec.h"

/* The session's string table: the largest the layout takes, so name ids reach 2^21 and past. */
#define BIG_STRTAB_BYTES ((1u << 27) - 4096u)
/* The earliest time planned, and the session's creation (the drain believes a time from 100 ms
 * before that on). */
#define T_BASE_NS 300000000ull
#define CREATED_NS 250000000ull
#define MAX_RECS 4096

struct bev {
	uint32_t type, id;
	uint64_t ts_ns; /* as the drain must convert it */
	uint64_t tick; /* as written into the ring */
	uint64_t a, b; /* the ring's payload words after the time */
};

static struct bev recs[MAX_RECS];
static size_t n_recs;

static uint64_t u_edges[32];
static size_t n_u;
static int64_t s_edges[64];
static size_t n_s;
static uint32_t id_edges[16];
static size_t n_id;
static uint64_t t_sched[64]; /* times: T, T + D, T, T + D', ...: every delta forward and back */
static size_t n_t;
static uint64_t largest_delta;

/* 0, 1, both sides of each LEB128 width boundary, and the top. */
static void make_edges(uint32_t id_max, uint64_t now_ns)
{
	n_u = 0;
	u_edges[n_u++] = 0;
	u_edges[n_u++] = 1;
	for (unsigned k = 7; k < 64; k += 7) {
		u_edges[n_u++] = (1ull << k) - 1;
		u_edges[n_u++] = 1ull << k;
	}
	u_edges[n_u++] = UINT64_MAX;
	n_s = 0;
	for (size_t i = 0; i < n_u; i++) {
		s_edges[n_s++] = trcfile__unzigzag(u_edges[i]); /* zigzag form on the edge */
		s_edges[n_s++] = (int64_t)u_edges[i];
	}
	n_id = 0;
	for (size_t i = 1; i < n_u && u_edges[i] <= id_max; i++)
		id_edges[n_id++] = (uint32_t)u_edges[i];
	id_edges[n_id++] = id_max;
	/* Deltas that keep every time within [T_BASE_NS, now - 10 ms]. */
	n_t = 0;
	largest_delta = 0;
	for (size_t i = 0; i < n_u; i++) {
		uint64_t d = u_edges[i];
		if (d > now_ns - T_BASE_NS - 10000000ull)
			break;
		t_sched[n_t++] = T_BASE_NS + d;
		t_sched[n_t++] = T_BASE_NS;
		largest_delta = d;
	}
}

static void add(uint32_t type, uint32_t id, uint64_t ts, uint64_t a, uint64_t b)
{
	cr_assert_lt(n_recs, MAX_RECS);
	recs[n_recs++] = (struct bev){.type = type, .id = id, .ts_ns = ts, .a = a, .b = b};
}

/* The records: a first one, then per event kind L records (L at least every set's size), the
 * j-th with its first field at value j of its set, its second at value 5j + 1 (5 is prime to
 * every set's size, so that too meets each value), the time the next of the schedule; then a
 * few more, so the fast loop owns the last planned one too. */
static void make_records(void)
{
	static const uint32_t kinds[] = {
		TRC_REC_SPAN_BEGIN, TRC_REC_SPAN_END, TRC_REC_INSTANT,	  TRC_REC_COUNTER,
		TRC_REC_ALLOC,	    TRC_REC_FREE,     TRC_REC_FUNC_ENTER, TRC_REC_FUNC_EXIT,
	};
	cr_assert(n_s % 5 && n_u % 5 && n_id % 5, "5 prime to the set sizes");
	n_recs = 0;
	uint64_t walloc = 0, wfunc = 0; /* the coder's address predictors (one chunk) */
	size_t g = 0;
	add(TRC_REC_SPAN_BEGIN, id_edges[0], T_BASE_NS, 0, 0);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const uint32_t type = kinds[k];
		size_t l = n_s > n_t ? n_s : n_t;
		for (size_t j = 0; j < l; j++, g++) {
			uint64_t ts = t_sched[(g + 1) % n_t];
			int64_t s1 = s_edges[j % n_s], s2 = s_edges[(5 * j + 1) % n_s];
			uint32_t id = id_edges[j % n_id];
			switch (type) {
			case TRC_REC_SPAN_BEGIN:
			case TRC_REC_SPAN_END:
				add(type, id, ts, 0, 0);
				break;
			case TRC_REC_INSTANT:
			case TRC_REC_COUNTER:
				/* the id turns with the second index here, the value with the first
				 */
				add(type, id_edges[(5 * j + 1) % n_id], ts, (uint64_t)s1, 0);
				break;
			case TRC_REC_ALLOC:
				walloc += (uint64_t)s1;
				add(type, 0, ts, walloc, u_edges[(5 * j + 1) % n_u]);
				break;
			case TRC_REC_FREE:
				walloc += (uint64_t)s1;
				add(type, 0, ts, walloc, 0);
				break;
			default:
				wfunc += (uint64_t)s1;
				add(type, 0, ts, wfunc, wfunc + (uint64_t)s2);
				break;
			}
		}
	}
	for (int i = 0; i < 4; i++)
		add(TRC_REC_SPAN_END, id_edges[0], T_BASE_NS, 0, 0);
}

/* The ticks of each record under conversion c (identity when NULL): the least tick that
 * converts to its planned time, which with under 1 ns a tick always does exactly. */
static void make_ticks(const struct trc_clock_conv *c)
{
	for (size_t i = 0; i < n_recs; i++) {
		struct bev *e = &recs[i];
		if (!c) {
			e->tick = e->ts_ns;
			continue;
		}
		unsigned __int128 num = (unsigned __int128)(e->ts_ns - c->ns0) << TRC_CLOCK_SHIFT;
		e->tick = c->tick0 + (uint64_t)((num + c->mult - 1) / c->mult);
		cr_assert_eq(trc_clock_to_ns(c, e->tick), e->ts_ns, "record %zu: tick %" PRIu64, i,
			     e->tick);
	}
}

static unsigned payload_words(uint32_t type)
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

static void emit_one(const struct bev *e)
{
	uint32_t bytes = 8u * payload_words(e->type);
	uint32_t tag = e->type <= TRC_REC_COUNTER ? TRC_TAG(e->type, e->id) : e->type;
	uint64_t *p = ring_reserve_sp(&trc__self.prod, tag, bytes);
	cr_assert_not_null(p, "ring full");
	uint64_t w[3] = {e->tick, e->a, e->b};
	memcpy(p, w, bytes);
	ring_commit_sp(&trc__self.prod);
}

static void emit(size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		emit_one(&recs[i]);
}

enum path { PATH_REFERENCE, PATH_FAST, PATH_CAREFUL };

/* The records through one path into a file at path. */
static void drain_path(struct trc_session *s, const char *path, enum path how,
		       const struct clock_setup *cs)
{
	struct fsink f = {.w = open_writer(path, 1u << 20)};
	struct session_sink k = {.arg = &f, .record = fs_record};
	if (how != PATH_REFERENCE) {
		k.window_open = fs_window_open;
		k.window_close = fs_window_close;
	}
	if (how == PATH_CAREFUL) {
		for (size_t i = 0; i < n_recs; i++) {
			emit(i, i + 1);
			drain_idle(s, &k, cs);
		}
	} else {
		emit(0, n_recs);
		drain_idle(s, &k, cs);
	}
	cr_assert_eq(trcfile_writer_close(f.w), 0);
	cr_assert_eq(f.corrupt, 0, "path %d: a record was refused", how);
	cr_assert_eq(f.events, n_recs, "path %d", how);
}

/* The file holds every record as planned, in one chunk. */
static void assert_records(const char *path)
{
	struct trcfile_reader *rd = NULL;
	char msg[256] = "";
	cr_assert_eq(trcfile_reader_open(path, &rd, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(trcfile_reader_stream_count(rd), 1);
	cr_assert_eq(trcfile_reader_stream(rd, 0)->chunks, 1, "one chunk: the deltas planned");
	struct trcfile_cursor *cur = trcfile_cursor_new(rd, 0);
	cr_assert_not_null(cur);
	struct trc_record r;
	for (size_t i = 0; i < n_recs; i++) {
		const struct bev *e = &recs[i];
		cr_assert_eq(trcfile_cursor_next(cur, &r), 1, "record %zu: %s", i,
			     trcfile_reader_errmsg(rd));
		cr_assert_eq(r.type, e->type, "record %zu type", i);
		cr_assert_eq(r.ts_ns, e->ts_ns, "record %zu ts", i);
		switch (e->type) {
		case TRC_REC_SPAN_BEGIN:
		case TRC_REC_SPAN_END:
			cr_assert_eq(r.span.name_id, e->id, "record %zu", i);
			break;
		case TRC_REC_INSTANT:
		case TRC_REC_COUNTER:
			cr_assert_eq(r.value.name_id, e->id, "record %zu", i);
			cr_assert_eq((uint64_t)r.value.value, e->a, "record %zu", i);
			break;
		case TRC_REC_ALLOC:
			cr_assert_eq(r.alloc.size, e->b, "record %zu", i);
			/* fall through */
		case TRC_REC_FREE:
			cr_assert_eq(r.alloc.addr, e->a, "record %zu", i);
			break;
		default:
			cr_assert_eq(r.func.addr, e->a, "record %zu", i);
			cr_assert_eq(r.func.call_site, e->b, "record %zu", i);
			break;
		}
	}
	cr_assert_eq(trcfile_cursor_next(cur, &r), 0);
	trcfile_cursor_free(cur);
	trcfile_reader_close(rd);
}

static void run(const struct clock_setup *cs)
{
	struct session_config cfg = {.max_slots = 4,
				     .force_clock_gettime = true,
				     .ring_bytes = 1u << 20,
				     .strtab_bytes = BIG_STRTAB_BYTES};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0);
	/* As old as the clock: every time from T_BASE_NS to now is one the drain believes. */
	s->created_ns = CREATED_NS;
	TRC_INSTANT("boundaries", 1); /* claims this thread's ring */
	cr_assert_not_null(trc__self.prod.data);
	uint32_t id_max = (uint32_t)(s->name_seen_bits - 1);
	cr_assert_geq(id_max, 1u << 21, "the string table takes ids past 2^21");
	cr_assert_leq(id_max, TRC_NAME_ID_MAX);
	make_edges(id_max, trc_mono_ns());
	cr_assert_geq(largest_delta, 1ull << 28, "time deltas up to 2^28 at least");
	make_records();
	make_ticks(cs ? &cs->cur : NULL);
	/* Every name known before the runs, so none sends a record out of the fast loop. */
	struct ts_collect skip = {0};
	for (size_t i = 0; i < n_id; i++)
		emit_one(&(struct bev){
			.type = TRC_REC_SPAN_BEGIN, .id = id_edges[i], .tick = recs[0].tick});
	struct session_sink k = ts_sink(&skip);
	drain_idle(s, &k, cs);
	cr_assert(!ts_trouble(&skip), "%s", ts_why(&skip));
	for (size_t i = 0; i < n_id; i++)
		cr_assert(s->name_seen[id_edges[i] / 8] & (1u << (id_edges[i] % 8)),
			  "name %u known", id_edges[i]);
	ts_collect_free(&skip);

	char ref[] = "/tmp/trc_bound_ref_XXXXXX", fast[] = "/tmp/trc_bound_fast_XXXXXX",
	     careful[] = "/tmp/trc_bound_careful_XXXXXX";
	close(mkstemp(ref));
	close(mkstemp(fast));
	close(mkstemp(careful));
	drain_path(s, fast, PATH_FAST, cs);
	drain_path(s, careful, PATH_CAREFUL, cs);
	drain_path(s, ref, PATH_REFERENCE, cs);
	assert_same_files(ref, fast);
	assert_same_files(ref, careful);
	assert_records(ref);
	unlink(ref);
	unlink(fast);
	unlink(careful);
	session_destroy(s);
}

Test(drain_boundaries, ns_clock_every_path_writes_the_same_bytes, .timeout = 60)
{
	run(NULL);
}

/* TSC ticks from tick0 = ns0 = CREATED_NS on (a segment the fast loop takes: it starts
 * within the times believed); the previous segment the same (no tick is below it). */
static struct clock_setup tsc(uint64_t mult)
{
	struct clock_setup cs = {.tsc = true};
	cs.cur = (struct trc_clock_conv){.tick0 = CREATED_NS, .ns0 = CREATED_NS, .mult = mult};
	cs.prev = cs.cur;
	return cs;
}

Test(drain_boundaries, tsc_general_product_every_path_writes_the_same_bytes, .timeout = 60)
{
	struct clock_setup cs = tsc(1ull << TRC_CLOCK_SHIFT); /* 1 ns a tick: mult >= 2^32 */
	run(&cs);
}

Test(drain_boundaries, tsc_high_word_product_every_path_writes_the_same_bytes, .timeout = 60)
{
	struct clock_setup cs = tsc((1ull << TRC_CLOCK_SHIFT) - 1); /* just under: mult < 2^32 */
	run(&cs);
}
