/* session_drain_fast.h - the drain's fast loop, one instance per clock form (no include guard:
 * session_drain.c includes it once per instance, SESSION__FAST_FN and SESSION__FAST_CLOCK
 * defined before each).
 *
 *   SESSION__FAST_CLOCK 0  the ring holds nanoseconds (clock_gettime sessions): no conversion
 *   SESSION__FAST_CLOCK 1  TSC ticks, cur->mult < 2^32 (a TSC faster than 1 GHz): the time
 *                          since tick0 is the high word of one 64x64 product with mult << 32,
 *                          which is exactly trc_clock_to_ns's (dt * mult) >> 32 (both are
 *                          floor(dt * mult / 2^32), below 2^64 since dt * mult < 2^96)
 *   SESSION__FAST_CLOCK 2  TSC ticks, any mult: trc_clock_to_ns's own arithmetic
 *
 * The fast loop (session__fused_run calls it while a window is open) encodes the common event
 * records, each by an encoder of its own type, over [q, qlim), where every record starts with
 * 32 readable, published bytes ahead of it and the window has room for every record the range
 * can hold (both checked by the caller, once per run). Per record it checks only what varies:
 * the length its type must have, a known name (spans, values: one compare while the id is the
 * last one found known in this run, the name bitmap otherwise), a time within [ts_lo, ts_lo +
 * ts_span] after the conversion of its clock segment (cur, or prev before cur's start). It
 * stops at the first record that fails any of these, before writing anything of it, and
 * returns its address: session__fused_run's careful loop (and, for what that does not take,
 * ring_batch_next and session__record) deal with that one exactly as before, corruption
 * included. The bytes written are trcfile__encode's (tests/test_drain_fused.c).
 *
 * Dispatch is threaded: a table of labels indexed by the type byte (every other byte value
 * leads out), and each encoder ends with its own dispatch of the next record, so the position
 * moves by the type's constant length (never waiting on the load of a length) and each type's
 * successor is predicted apart.
 *
 * Every record is read once (copied to locals, then a compiler fence): the traced program may
 * change its ring's bytes while we look at them. Threads: the drain thread only.
 *
 * Why the varints branch: a branch-free 1-2 byte varint (p += 1 + (v >= 0x80)) chains every
 * record's output position on the one before, where a predicted branch does not, and measured
 * slower; wider single stores for the 2- and 3-byte forms, a prefetch ahead and other code
 * layouts made no difference worth their complexity (bench=drain case=raw: the figures are in
 * the commits that tried them). */

__attribute__((noinline)) static const uint8_t *SESSION__FAST_FN(const uint8_t *q,
								 const uint8_t *const qlim,
								 struct session__fast *f,
								 const struct session__fast_in *in)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init" /* every byte leads out, but the event types */
	static const void *const dispatch[256] = {
		[0 ... 255] = &&out,
		[TRC_REC_SPAN_BEGIN] = &&span_begin,
		[TRC_REC_SPAN_END] = &&span_end,
		[TRC_REC_INSTANT] = &&instant,
		[TRC_REC_COUNTER] = &&counter,
		[TRC_REC_ALLOC] = &&alloc,
		[TRC_REC_FREE] = &&free_,
		[TRC_REC_FUNC_ENTER] = &&func_enter,
		[TRC_REC_FUNC_EXIT] = &&func_exit,
	};
#pragma GCC diagnostic pop
	const uint64_t ts_lo = in->ts_lo, ts_span = in->ts_span;
	/* Times are kept less ts_lo (y = t - ts_lo): the check of a time is then y <= ts_span,
	 * and deltas and their signs are those of the times themselves as long as every y is in
	 * [0, ts_span] and ts_lo + ts_span does not wrap (else the careful loop takes it all). */
	uint64_t wy = f->wts - ts_lo, ts_hi;
	if (wy > ts_span || __builtin_add_overflow(ts_lo, ts_span, &ts_hi))
		return q;
#if SESSION__FAST_CLOCK != 0
	const uint64_t tick0 = in->cur.tick0, base = in->cur.ns0 - ts_lo;
#if SESSION__FAST_CLOCK == 1
	const uint64_t mult = in->cur.mult << 32;
	/* The one check of a time on the current segment: dt = t - tick0 <= dt_max, the largest
	 * dt whose time base + hi(dt * mult) is at most ts_span (dt below tick0 wraps above it).
	 * Exact: hi(dt * mult) <= ts_span - base iff dt * mult < (ts_span - base + 1) << 64. A
	 * base above ts_span (cur starting before ts_lo or after now) leaves it all to the careful
	 * loop. mult > 0: session__fused_run takes this form only then. */
	if (base > ts_span)
		return q;
	uint64_t dt_max = UINT64_MAX;
	{
		const unsigned __int128 lim =
			((unsigned __int128)(ts_span - base) << 64) | UINT64_MAX;
		if (lim / mult < dt_max)
			dt_max = (uint64_t)(lim / mult);
	}
#else
	const uint64_t mult = in->cur.mult;
#endif
#endif
	/* What only the rare paths read (a name not seen in this run, the previous clock segment,
	 * the way out) is reached through pointers kept in memory: in registers they would push
	 * the per-record values (the clock's constants, the predictors) onto the stack. */
	const struct session__fast_in *volatile const rare = in;
	struct session__fast *volatile const rare_f = f;
	uint8_t *p = f->p;
	uint64_t walloc = f->walloc, wfunc = f->wfunc;
	uint32_t n = f->count;
	/* The last name id found known in this run: none at its start (no id is UINT64_MAX), so
	 * the run's first named record is looked up, id 0 too (its bit is never set). */
	uint64_t known = UINT64_MAX;
	uint64_t t, a, b;
	uint8_t type;

/* The next record's type byte and time, read once, and the jump to its type's encoder. The
 * other header fields are read (once each) by the encoder: its length first. */
#define SESSION__FAST_NEXT()                               \
	do {                                               \
		if (__builtin_expect(q >= qlim, 0))        \
			goto out;                          \
		memcpy(&type, q + 4, 1);                   \
		memcpy(&t, q + 8, 8);                      \
		atomic_signal_fence(memory_order_seq_cst); \
		goto *dispatch[type];                      \
	} while (0)
/* The record's length is its type's, or out. */
#define SESSION__FAST_LEN(payload)                                                 \
	do {                                                                       \
		uint32_t len_;                                                     \
		memcpy(&len_, q, 4);                                               \
		atomic_signal_fence(memory_order_seq_cst);                         \
		if (__builtin_expect(len_ != RING_HDR_BYTES + sizeof(payload), 0)) \
			goto out;                                                  \
	} while (0)
/* The name id of the record's tag (its top 24 bits), read once. */
#define SESSION__FAST_ID(id)                               \
	do {                                               \
		uint32_t tag_;                             \
		memcpy(&tag_, q + 4, 4);                   \
		atomic_signal_fence(memory_order_seq_cst); \
		id = TRC_TAG_ID(tag_);                     \
	} while (0)
/* The record's time in ns less ts_lo, or out when it is not one a record can have. */
#if SESSION__FAST_CLOCK == 0
#define SESSION__FAST_TIME()                          \
	do {                                          \
		t -= ts_lo;                           \
		if (__builtin_expect(t > ts_span, 0)) \
			goto out;                     \
	} while (0)
#else
#if SESSION__FAST_CLOCK == 1
#define SESSION__FAST_SINCE(dt) ((uint64_t)(((unsigned __int128)(dt)*mult) >> 64))
#else
#define SESSION__FAST_SINCE(dt) ((uint64_t)(((unsigned __int128)(dt)*mult) >> TRC_CLOCK_SHIFT))
#endif
#if SESSION__FAST_CLOCK == 1
#define SESSION__FAST_TIME()                                               \
	do {                                                               \
		if (__builtin_expect(t - tick0 <= dt_max, 1)) {            \
			t = base + SESSION__FAST_SINCE(t - tick0);         \
		} else {                                                   \
			if (t >= tick0)                                    \
				goto out;                                  \
			t = trc_clock_to_ns(&rare->prev, t) - rare->ts_lo; \
			if (t > rare->ts_span)                             \
				goto out;                                  \
		}                                                          \
	} while (0)
#else
#define SESSION__FAST_TIME()                                                                   \
	do {                                                                                   \
		t = __builtin_expect(t >= tick0, 1) ? base + SESSION__FAST_SINCE(t - tick0)    \
						    : trc_clock_to_ns(&rare->prev, t) - ts_lo; \
		if (__builtin_expect(t > ts_span, 0))                                          \
			goto out;                                                              \
	} while (0)
#endif
#endif
/* The type byte and time delta, as trcfile__encode writes them: nearly always a step forward
 * below 128 ns, both bytes in one store (d_ of a step back is above 128 unsigned). */
#define SESSION__FAST_HEAD(TYPE)                                          \
	do {                                                              \
		uint64_t d_ = t - wy;                                     \
		if (__builtin_expect(d_ < 0x80, 1)) {                     \
			const uint16_t w_ = (uint16_t)((TYPE) | d_ << 8); \
			memcpy(p, &w_, 2);                                \
			p += 2;                                           \
		} else {                                                  \
			uint8_t t0_ = (TYPE);                             \
			if (t < wy) {                                     \
				d_ = wy - t;                              \
				t0_ |= TRCFILE__NEG_DELTA;                \
			}                                                 \
			*p = t0_;                                         \
			p = session__varint(p + 1, d_);                   \
		}                                                         \
		wy = t;                                                   \
	} while (0)
/* The name id of a span or value: known (its NAME delivered) or out (the careful loop delivers
 * it, or finds it invalid). Bit 0 is never set and known is never 0: id 0 goes out too. */
#define SESSION__FAST_NAMED(id)                                                                \
	do {                                                                                   \
		if (__builtin_expect(id != known, 0)) {                                        \
			if (id >= rare->seen_bits || !(rare->seen[id / 8] & (1u << (id % 8)))) \
				goto out;                                                      \
			known = id;                                                            \
		}                                                                              \
	} while (0)
/* The payload words after the time, read once. */
#define SESSION__FAST_WORDS(n)                             \
	do {                                               \
		memcpy(&a, q + 16, 8);                     \
		if ((n) > 1)                               \
			memcpy(&b, q + 24, 8);             \
		atomic_signal_fence(memory_order_seq_cst); \
	} while (0)
/* The encoders shared by two types, the type byte a constant in each. */
#define SESSION__FAST_SPAN(TYPE)                            \
	SESSION__FAST_LEN(struct trc_ring_span);            \
	{                                                   \
		uint64_t id;                                \
		SESSION__FAST_ID(id);                       \
		SESSION__FAST_NAMED(id);                    \
		SESSION__FAST_TIME();                       \
		SESSION__FAST_HEAD(TYPE);                   \
		p = session__varint(p, id);                 \
	}                                                   \
	q += RING_HDR_BYTES + sizeof(struct trc_ring_span); \
	n++;                                                \
	SESSION__FAST_NEXT();
#define SESSION__FAST_VALUE(TYPE)                                    \
	SESSION__FAST_LEN(struct trc_ring_value);                    \
	{                                                            \
		uint64_t id;                                         \
		SESSION__FAST_ID(id);                                \
		SESSION__FAST_NAMED(id);                             \
		SESSION__FAST_WORDS(1);                              \
		SESSION__FAST_TIME();                                \
		SESSION__FAST_HEAD(TYPE);                            \
		p = session__varint(p, id);                          \
		p = session__varint(p, trcfile__zigzag((int64_t)a)); \
	}                                                            \
	q += RING_HDR_BYTES + sizeof(struct trc_ring_value);         \
	n++;                                                         \
	SESSION__FAST_NEXT();
#define SESSION__FAST_FUNC(TYPE)                                       \
	SESSION__FAST_LEN(struct trc_ring_func);                       \
	SESSION__FAST_WORDS(2);                                        \
	SESSION__FAST_TIME();                                          \
	SESSION__FAST_HEAD(TYPE);                                      \
	p = session__varint(p, trcfile__zigzag((int64_t)(a - wfunc))); \
	p = session__varint(p, trcfile__zigzag((int64_t)(b - a)));     \
	wfunc = a;                                                     \
	q += RING_HDR_BYTES + sizeof(struct trc_ring_func);            \
	n++;                                                           \
	SESSION__FAST_NEXT();

	SESSION__FAST_NEXT();
span_begin:
	SESSION__FAST_SPAN(TRC_REC_SPAN_BEGIN)
span_end:
	SESSION__FAST_SPAN(TRC_REC_SPAN_END)
instant:
	SESSION__FAST_VALUE(TRC_REC_INSTANT)
counter:
	SESSION__FAST_VALUE(TRC_REC_COUNTER)
alloc: {
	uint32_t id, sid;
	SESSION__FAST_LEN(struct trc_ring_alloc);
	SESSION__FAST_ID(id);
	SESSION__FAST_WORDS(2);
	SESSION__FAST_TIME();
	/* The tag's stack id, the thread's: the session's, 0 when none or unknown. */
	sid = id < rare->stack_cap ? rare->stack_ids[id] : 0;
	SESSION__FAST_HEAD(TRC_REC_ALLOC | (sid ? TRCFILE__ALLOC_HAS_STACK : 0));
	p = session__varint(p, trcfile__zigzag((int64_t)(a - walloc)));
	p = session__varint(p, b);
	if (sid)
		p = session__varint(p, sid);
	walloc = a;
	q += RING_HDR_BYTES + sizeof(struct trc_ring_alloc);
	n++;
	SESSION__FAST_NEXT();
}
free_:
	SESSION__FAST_LEN(struct trc_ring_free);
	SESSION__FAST_WORDS(1);
	SESSION__FAST_TIME();
	SESSION__FAST_HEAD(TRC_REC_FREE);
	p = session__varint(p, trcfile__zigzag((int64_t)(a - walloc)));
	walloc = a;
	q += RING_HDR_BYTES + sizeof(struct trc_ring_free);
	n++;
	SESSION__FAST_NEXT();
func_enter:
	SESSION__FAST_FUNC(TRC_REC_FUNC_ENTER)
func_exit:
	SESSION__FAST_FUNC(TRC_REC_FUNC_EXIT)
out:
	f = rare_f;
	f->p = p;
	f->wts = wy + rare->ts_lo;
	f->walloc = walloc;
	f->wfunc = wfunc;
	f->count = n;
	return q;
#undef SESSION__FAST_NEXT
#undef SESSION__FAST_LEN
#undef SESSION__FAST_ID
#undef SESSION__FAST_SINCE
#undef SESSION__FAST_TIME
#undef SESSION__FAST_HEAD
#undef SESSION__FAST_NAMED
#undef SESSION__FAST_WORDS
#undef SESSION__FAST_SPAN
#undef SESSION__FAST_VALUE
#undef SESSION__FAST_FUNC
}
#undef SESSION__FAST_FN
#undef SESSION__FAST_CLOCK
