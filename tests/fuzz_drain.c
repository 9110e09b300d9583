/* fuzz_drain.c - libFuzzer target over the drain's encoders (`make fuzz`).
 *
 * Each input is what a traced thread writes into its ring: records built from the input's
 * bytes, mostly well-formed events (every type, name ids known, unknown, 0 or beyond the
 * string table, times stepping forward and back by any amount, any field values) and now and
 * then a hostile one (a type byte that is no event, a length of its own: 0, short, odd, long).
 * The same ring bytes are drained twice, into memory, as the recorder's sinks would write
 * them: through windows (the fused path: session_drain_fast.h's loop and the careful loop of
 * session__fused_run) and through records alone (session__record, then trcfile__encode). The
 * thread stream's bytes must be equal, both paths must keep the same number of events and end
 * the stream as corrupt, or not, alike; ASan/UBSan (the fuzz build) catch the rest. A bound on
 * the bytes written catches a drain that does not move on.
 *
 * Byte 0 picks the clock form the drain converts with: nanoseconds, TSC ticks of exactly 1 ns
 * (the fast loop's general product) or of just under (its high-word product).
 * Seed corpus: tests/corpus/drain/.
 *
 * Threads: the fuzzer's thread is producer and drain at once, on a slot it claims itself.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"
#include "session.h"
#include "session_internal.h"
#include "trcfile.h"
#include "trcfile_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_RING_BYTES (1u << 20)
#define FZ_OUT_BYTES (4u << 20)
#define FZ_MAX_RECORDS 4096u
/* The session looks as old as the clock, from here on (times before it are refused). */
#define FZ_CREATED_NS 250000000ull

static void fz_agree(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_drain: the paths disagree: %s\n", what);
		abort();
	}
}

/* The thread stream's bytes as the writer would lay them out in one chunk. */
struct fz_out {
	uint8_t *buf;
	size_t n;
	struct trcfile__coder c;
	bool started;
	uint64_t events, corrupt;
};

static void fz_start(struct fz_out *o, uint64_t ts)
{
	if (!o->started)
		trcfile__coder_reset(&o->c, ts);
	o->started = true;
}

static int fz_record(void *arg, const struct session_stream *st, const struct trc_record *r)
{
	struct fz_out *o = arg;
	if (st->kind != TRC_STREAM_THREAD)
		return 0;
	if (r->type == TRC_REC_LOST && r->lost.reason == TRC_LOST_CORRUPT)
		o->corrupt++;
	long max = trcfile__record_max_bytes(r);
	fz_agree(max > 0, "the drain handed out a record the encoder refuses");
	if (o->n + (size_t)max > FZ_OUT_BYTES)
		return -E2BIG; /* more than the ring can hold: the drain did not move on */
	fz_start(o, r->ts_ns);
	o->n = (size_t)(trcfile__encode(o->buf + o->n, r, &o->c) - o->buf);
	o->events += trc_rec_is_event(r->type);
	return 0;
}

static int fz_window_open(void *arg, const struct session_stream *st, uint64_t ts,
			  struct trcfile_window *win)
{
	struct fz_out *o = arg;
	fz_agree(st->kind == TRC_STREAM_THREAD, "a window for another stream");
	if (o->n + 2 * TRCFILE_WINDOW_EVENT_MAX > FZ_OUT_BYTES)
		return -E2BIG;
	fz_start(o, ts);
	*win = (struct trcfile_window){.p = o->buf + o->n,
				       .limit = o->buf + FZ_OUT_BYTES - TRCFILE_WINDOW_EVENT_MAX,
				       .ts = o->c.ts,
				       .alloc_addr = o->c.alloc_addr,
				       .func_addr = o->c.func_addr};
	return 0;
}

static int fz_window_close(void *arg, const struct session_stream *st, struct trcfile_window *win)
{
	struct fz_out *o = arg;
	(void)st;
	o->n = (size_t)(win->p - o->buf);
	o->c.ts = win->ts;
	o->c.alloc_addr = win->alloc_addr;
	o->c.func_addr = win->func_addr;
	o->events += win->count;
	return 0;
}

static struct trc_session *fz_s;
static uint32_t fz_ids[9];

static struct trc_session *fz_session(void)
{
	if (fz_s)
		return fz_s;
	struct session_config cfg = {
		.max_slots = 2, .force_clock_gettime = true, .ring_bytes = FZ_RING_BYTES};
	int err = 0;
	fz_s = session_create(&cfg, &err);
	if (!fz_s) {
		fprintf(stderr, "fuzz_drain: session_create: %d\n", err);
		abort();
	}
	fz_s->created_ns = FZ_CREATED_NS;
	uint32_t top = (uint32_t)fz_s->name_seen_bits;
	const uint32_t ids[9] = {1, 2, 3, 127, 128, top - 1, 0, top, TRC_NAME_ID_MAX};
	memcpy(fz_ids, ids, sizeof(ids));
	return fz_s;
}

/* The input, read a byte or a word at a time; 0 past its end. */
struct fz_in {
	const uint8_t *p, *end;
};

static uint8_t fz_u8(struct fz_in *in)
{
	return in->p < in->end ? *in->p++ : 0;
}

static uint64_t fz_u64(struct fz_in *in)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)fz_u8(in) << (8 * i);
	return v;
}

static unsigned fz_words(uint32_t type)
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

/* Writes the input's records into the ring of producer p (the same bytes every time). */
static void fz_write(struct ring_producer *p, const uint8_t *data, size_t size, uint64_t t0)
{
	struct fz_in in = {data, data + size};
	uint64_t ts = t0, a = 0x7f0000001000ull, b = 0x400000;
	for (unsigned k = 0; k < FZ_MAX_RECORDS && in.p < in.end; k++) {
		uint8_t sel = fz_u8(&in), step = fz_u8(&in);
		uint32_t type = 1 + sel % 8, id = fz_ids[(sel >> 3) % 9], len = 0;
		bool hostile = (sel & 0xc0) == 0xc0;
		/* a step of any size, forward or back */
		int64_t d = (int64_t)(int8_t)step * (int64_t)(1ull << (fz_u8(&in) % 40));
		ts += (uint64_t)d;
		if (sel & 0x80) { /* fields from the input */
			a = fz_u64(&in);
			b = fz_u64(&in);
		} else {
			a += (uint64_t)(int8_t)fz_u8(&in) * 16;
			b = a + fz_u8(&in);
		}
		if (hostile) { /* a type byte and a length of its own (0 too) */
			type = fz_u8(&in);
			len = fz_u8(&in) % 72;
		}
		uint32_t payload = 8u * fz_words(type <= TRC_REC_FUNC_EXIT ? type : 5);
		uint32_t tag = TRC_TAG(type, type <= TRC_REC_COUNTER || hostile ? id : 0);
		uint64_t *q = ring_reserve_sp(p, tag, payload);
		if (!q)
			return;
		uint64_t w[3] = {ts, a, b};
		memcpy(q, w, payload);
		if (hostile)
			memcpy((uint8_t *)q - RING_HDR_BYTES, &len, sizeof(len));
		ring_commit_sp(p);
	}
}

/* The clock the drain converts with, pinned for every pass (no refit in between). */
static void fz_clock(struct trc_session *s, uint8_t form)
{
	if (form % 3 == 0) {
		s->geom.clock_mode = TRC_CLOCK_GETTIME;
		return;
	}
	s->geom.clock_mode = TRC_CLOCK_TSC;
	uint64_t mult = form % 3 == 1 ? 1ull << TRC_CLOCK_SHIFT : (1ull << TRC_CLOCK_SHIFT) - 1;
	s->conv_cur =
		(struct trc_clock_conv){.tick0 = FZ_CREATED_NS, .ns0 = FZ_CREATED_NS, .mult = mult};
	s->conv_prev = (struct trc_clock_conv){.tick0 = 0, .ns0 = 0, .mult = mult};
	s->last_refit_ns = trc_mono_ns();
}

static void fz_drain_idle(struct trc_session *s, const struct session_sink *k, uint8_t form)
{
	for (int idle = 0, pass = 0; idle < 2 && pass < 1000; pass++) {
		fz_clock(s, form);
		long n = session_drain(s, k);
		fz_agree(n >= 0, "a drain failed (its output bound: it did not move on)");
		idle = n == 0 ? idle + 1 : 0;
	}
}

/* One run: claim slot 0 as this thread, write the records from time t0 on, drain, retire,
 * drain (the slot is freed). */
static void fz_run(const uint8_t *data, size_t size, uint64_t t0, bool fused, struct fz_out *o)
{
	struct trc_session *s = fz_session();
	struct trc_slot *sl = session__slot(s, 0);
	uint64_t w = atomic_load(&sl->state);
	fz_agree(TRC_SLOT_STATE(w) == TRC_SLOT_FREE, "the slot was not freed");
	uint32_t gen = TRC_SLOT_GEN(w);
	__atomic_store_n(&sl->pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&sl->tid, (uint32_t)gettid(), __ATOMIC_RELAXED);
	struct ring_producer p;
	if (ring_producer_attach(&p, &sl->ctl, session__ring(s, 0), s->geom.ring_bytes) != 0)
		abort();
	atomic_store(&sl->state, TRC_SLOT_WORD(gen, TRC_SLOT_CLAIMED));
	uint8_t form = size ? data[0] : 0;
	fz_write(&p, data + (size != 0), size - (size != 0), t0);
	struct session_sink k = {.arg = o, .record = fz_record};
	if (fused) {
		k.window_open = fz_window_open;
		k.window_close = fz_window_close;
	}
	fz_drain_idle(s, &k, form);
	atomic_store(&sl->state, TRC_SLOT_WORD(gen, TRC_SLOT_RETIRED));
	fz_drain_idle(s, &k, form);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *bufs[2];
	if (!bufs[0]) {
		bufs[0] = malloc(FZ_OUT_BYTES);
		bufs[1] = malloc(FZ_OUT_BYTES);
		if (!bufs[0] || !bufs[1])
			abort();
	}
	struct fz_out fused = {.buf = bufs[0]}, old = {.buf = bufs[1]};
	/* One first time for both runs: the same ticks convert to the same times. */
	const uint64_t t0 = FZ_CREATED_NS + (trc_mono_ns() - FZ_CREATED_NS) / 2;
	fz_run(data, size, t0, true, &fused);
	fz_run(data, size, t0, false, &old);
	fz_agree(fused.events == old.events, "the events kept");
	fz_agree(fused.corrupt == old.corrupt, "whether the stream was found corrupt");
	fz_agree(fused.corrupt <= 1, "the stream ended as corrupt more than once");
	fz_agree(fused.n == old.n && !memcmp(fused.buf, old.buf, fused.n), "the bytes written");
	return 0;
}
