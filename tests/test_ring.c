/* test_ring.c - the SPSC ring in one thread: placement, wrap, drops, limits and corruption.
 *
 * The oracle for placement and drops is a model of the ring's written contract (ring.h: a
 * record never straddles the end, padding runs to the end, a record fits when
 * write + pad + len - read <= capacity), independent of how ring.c gets there (its cached
 * read position and fast-path limit). Every push is checked against the model: the same
 * result code and, when accepted, the same address. Every record read back is checked for its
 * sequence (tag), size and payload bytes.
 *
 * Data areas are malloc'd with exactly `capacity` bytes so that ASan (this suite also runs in
 * the ASan+UBSan tier) catches any read or write past the end.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: deterministic, seedable, good enough for test schedules. */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static const uint8_t zeros[64];

struct tring {
	struct ring_ctl *ctl;
	uint8_t *data;
	uint64_t cap;
	struct ring_producer p;
	struct ring_consumer c;
};

static void tring_open(struct tring *t, uint64_t cap, uint64_t start_pos)
{
	t->cap = cap;
	t->ctl = aligned_alloc(RING_CACHELINE, sizeof(*t->ctl));
	t->data = malloc(cap); /* exact size: ASan flags any access past the end */
	cr_assert(t->ctl && t->data);
	memset(t->data, 0xa5, cap);
	cr_assert_eq(ring_ctl_init(t->ctl, cap, start_pos), 0);
	cr_assert_eq(ring_producer_attach(&t->p, t->ctl, t->data, cap), 0);
	cr_assert_eq(ring_consumer_attach(&t->c, t->ctl, t->data, cap), 0);
}

static void tring_close(struct tring *t)
{
	free(t->ctl);
	free(t->data);
}

static uint8_t pattern_byte(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + 1u);
}

static void fill_payload(void *dst, uint64_t seq, uint32_t n)
{
	uint8_t *b = dst;
	for (uint32_t i = 0; i < n; i++)
		b[i] = pattern_byte(seq, i);
}

/* The contract as a model: positions only, no memory. */
struct model_rec {
	uint64_t seq;
	uint64_t pos; /* position of the record's header */
	uint32_t payload;
};

struct model {
	uint64_t cap, w, r;
	uint64_t pushed, accepted, dropped;
	struct model_rec *q;
	size_t q_cap, q_head, q_len;
};

static void model_init(struct model *m, uint64_t cap, uint64_t start_pos)
{
	memset(m, 0, sizeof(*m));
	m->cap = cap;
	m->w = m->r = start_pos;
	m->q_cap = cap / RING_HDR_BYTES + 1;
	m->q = calloc(m->q_cap, sizeof(*m->q));
	cr_assert(m->q);
}

/* Returns the expected result of pushing `payload` bytes; on 0 stores where the header goes. */
static int model_push(struct model *m, uint32_t payload, uint64_t *pos)
{
	uint64_t len = ring_record_bytes(payload);
	m->pushed++;
	if (len > m->cap) {
		m->dropped++;
		return -EMSGSIZE;
	}
	uint64_t off = m->w % m->cap;
	uint64_t pad = off + len > m->cap ? m->cap - off : 0;
	if (m->w + pad + len - m->r > m->cap) {
		m->dropped++;
		return -ENOBUFS;
	}
	*pos = m->w + pad;
	m->w += pad + len;
	m->accepted++;
	cr_assert_lt(m->q_len, m->q_cap);
	m->q[(m->q_head + m->q_len++) % m->q_cap] =
		(struct model_rec){.seq = m->pushed - 1, .pos = *pos, .payload = payload};
	return 0;
}

static struct model_rec model_pop(struct model *m)
{
	cr_assert_gt(m->q_len, 0, "ring handed out a record the model does not have");
	struct model_rec rec = m->q[m->q_head];
	m->q_head = (m->q_head + 1) % m->q_cap;
	m->q_len--;
	m->r = rec.pos + ring_record_bytes(rec.payload);
	return rec;
}

/* Pushes one record through reserve/commit and checks it against the model. */
static void push_checked(struct tring *t, struct model *m, uint32_t payload)
{
	uint64_t pos = 0;
	uint64_t seq = m->pushed;
	int want = model_push(m, payload, &pos);
	void *dst = ring_reserve_sp(&t->p, (uint32_t)seq, payload);
	if (want) {
		cr_assert_null(dst, "seq %llu payload %u: accepted, model says %d",
			       (unsigned long long)seq, payload, want);
		cr_assert_eq(t->p.last_error, want);
		return;
	}
	cr_assert_not_null(dst, "seq %llu payload %u: dropped (%d), model says it fits",
			   (unsigned long long)seq, payload, t->p.last_error);
	cr_assert_eq((uint8_t *)dst, t->data + (pos % t->cap) + RING_HDR_BYTES,
		     "seq %llu placed at the wrong offset", (unsigned long long)seq);
	cr_assert_eq((uintptr_t)dst % 8, 0);
	fill_payload(dst, seq, payload);
	ring_commit_sp(&t->p);
}

static void check_record(struct model *m, const struct ring_record *r)
{
	struct model_rec want = model_pop(m);
	cr_assert_eq(r->tag, (uint32_t)want.seq, "expected seq %llu, got tag %u",
		     (unsigned long long)want.seq, r->tag);
	cr_assert_eq(r->payload_bytes, ring_record_bytes(want.payload) - RING_HDR_BYTES);
	cr_assert_eq((uintptr_t)r->payload % 8, 0);
	const uint8_t *b = r->payload;
	for (uint32_t i = 0; i < want.payload; i++)
		cr_assert_eq(b[i], pattern_byte(want.seq, i), "seq %llu byte %u torn",
			     (unsigned long long)want.seq, i);
}

/* Consumes up to `max` records (UINT64_MAX: all) in one batch. Returns how many. */
static uint64_t consume_checked(struct tring *t, struct model *m, uint64_t max)
{
	struct ring_batch b;
	struct ring_record r;
	uint64_t n = 0;
	cr_assert_eq(ring_batch_begin(&t->c, &b), 0);
	while (n < max) {
		int rc = ring_batch_next(&t->c, &b, &r);
		cr_assert(rc == 0 || rc == 1, "batch_next returned %d on a healthy ring", rc);
		if (rc == 0)
			break;
		check_record(m, &r);
		n++;
	}
	ring_batch_release(&t->c, &b);
	if (max == UINT64_MAX)
		cr_assert_eq(m->q_len, 0, "model still holds %zu records after a full drain",
			     m->q_len);
	cr_assert_eq(ring_consumer_pending_bytes(&t->c), m->w - m->r);
	return n;
}

static void check_accounting(struct tring *t, struct model *m)
{
	int err = 1;
	cr_assert_eq(ring_consumer_dropped(&t->c, &err), m->dropped);
	cr_assert_eq(err, 0);
	cr_assert_eq(ring_producer_dropped(&t->p), m->dropped);
	cr_assert_eq(m->pushed, m->accepted + m->dropped);
}

/* A random schedule of pushes (payload in [min_payload, max_payload]) and partial drains. */
static void run_schedule(uint64_t cap, uint64_t start_pos, uint64_t seed, int steps,
			 uint32_t min_payload, uint32_t max_payload, unsigned push_pct)
{
	struct tring t;
	struct model m;
	tring_open(&t, cap, start_pos);
	model_init(&m, cap, start_pos);
	uint64_t s = seed;
	for (int i = 0; i < steps; i++) {
		if (rng_below(&s, 100) < push_pct) {
			uint64_t span = (uint64_t)max_payload - min_payload + 1;
			push_checked(&t, &m, min_payload + (uint32_t)rng_below(&s, span));
		} else {
			consume_checked(&t, &m, rng_below(&s, m.q_len + 2));
		}
	}
	consume_checked(&t, &m, UINT64_MAX);
	check_accounting(&t, &m);
	free(m.q);
	tring_close(&t);
}

/* ---- wrap-around, sizes, alignment ---------------------------------------------------------- */

Test(ring, wrap_every_payload_size, .timeout = 60)
{
	/* Each size on its own, in a small ring so it wraps many times, starting at a different
	 * offset each time; the consumer drains at random so the ring is also often full. */
	for (uint32_t pl = 0; pl <= 300; pl++) {
		uint64_t start = (uint64_t)pl * 8 % 1024;
		run_schedule(1024, start, 1000 + pl, 600, pl, pl, 60);
	}
}

Test(ring, wrap_every_start_offset_mixed_sizes, .timeout = 60)
{
	/* Every 8-byte aligned start offset of a 512-byte ring, mixed sizes up to ~300 bytes. */
	for (uint64_t off = 0; off < 512; off += 8)
		run_schedule(512, off, 77 + off, 400, 0, 300, 55);
}

Test(ring, positions_overflow_2_64, .timeout = 60)
{
	/* Start a few laps before 2^64 so the free-running positions wrap to 0 mid-test. */
	for (uint64_t k = 0; k < 64; k++) {
		uint64_t cap = 256u << (k % 4);
		uint64_t start = (uint64_t)0 - (k + 1) * 8 * 13;
		struct tring t;
		struct model m;
		tring_open(&t, cap, start);
		model_init(&m, cap, start);
		uint64_t s = 9000 + k;
		for (int i = 0; i < 3000; i++) {
			if (rng_below(&s, 100) < 60)
				push_checked(&t, &m, (uint32_t)rng_below(&s, cap / 3));
			else
				consume_checked(&t, &m, rng_below(&s, 8));
		}
		consume_checked(&t, &m, UINT64_MAX);
		check_accounting(&t, &m);
		uint64_t w = atomic_load(&t.ctl->write_pos);
		cr_assert_lt(w, start, "write position should have wrapped past 2^64");
		cr_assert_eq(w, m.w);
		cr_assert_eq(atomic_load(&t.ctl->read_pos), w);
		free(m.q);
		tring_close(&t);
	}
}

Test(ring, padding_skipped_and_record_lands_at_zero, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 256, 0);
	/* 200 bytes used, 56 left before the end: a 64-byte record must go to offset 0. */
	cr_assert_eq(ring_push_sp(&t.p, 1, (uint8_t[192]){0}, 192), 0);
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	ring_batch_release(&t.c, &b);
	uint8_t pl[56];
	memset(pl, 0x5c, sizeof(pl));
	void *dst = ring_reserve_sp(&t.p, 2, sizeof(pl));
	cr_assert_eq((uint8_t *)dst, t.data + RING_HDR_BYTES);
	memcpy(dst, pl, sizeof(pl));
	ring_commit_sp(&t.p);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 56 + 64); /* padding + record */
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 2);
	cr_assert_eq(r.payload_bytes, 56);
	cr_assert_eq(memcmp(r.payload, pl, sizeof(pl)), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
	ring_batch_release(&t.c, &b);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 0);
	tring_close(&t);
}

/* The early wrap (ring_producer_wrap_sp) pads to the end only when the record then fits at
 * offset 0, and ring_producer_has_wrap_room says so beforehand without writing a byte. */
Test(ring, early_wrap_pads_only_with_room_and_the_check_writes_nothing, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 256, 0);
	cr_assert_eq(ring_push_sp(&t.p, 1, (uint8_t[120]){0}, 120), 0); /* 128 bytes */
	/* 128 used, the padding would take the other 128: a 56-byte payload (64) has no room. */
	uint8_t copy[256];
	memcpy(copy, t.data, sizeof(copy));
	cr_assert_eq(ring_producer_has_wrap_room(&t.p, 56), 0);
	cr_assert_eq(ring_producer_wrap_sp(&t.p, 56), -ENOBUFS);
	cr_assert_eq(memcmp(copy, t.data, sizeof(copy)), 0, "a failed wrap wrote");
	cr_assert_eq(ring_producer_dropped(&t.p), 0, "a failed wrap counts nothing");
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	ring_batch_release(&t.c, &b);
	cr_assert_eq(ring_producer_has_wrap_room(&t.p, 56), 1);
	cr_assert_eq(memcmp(copy, t.data, sizeof(copy)), 0, "the check wrote");
	cr_assert_eq(ring_producer_wrap_sp(&t.p, 56), 0);
	void *dst = ring_reserve_sp(&t.p, 2, 56);
	cr_assert_eq((uint8_t *)dst, t.data + RING_HDR_BYTES, "lands at offset 0");
	ring_commit_sp(&t.p);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 128 + 64); /* padding + record */
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 2);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
	ring_batch_release(&t.c, &b);
	cr_assert_eq(ring_producer_has_wrap_room(&t.p, 256), 0, "larger than the ring");
	tring_close(&t);
}

/* ---- full ring, drops, oversized ------------------------------------------------------------- */

Test(ring, full_ring_drops_exactly_what_does_not_fit, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 1024, 0);
	uint8_t pl[24] = {0};
	/* 32-byte records fill 1024 bytes exactly: 32 fit, everything after is dropped. */
	for (uint32_t i = 0; i < 32; i++)
		cr_assert_eq(ring_push_sp(&t.p, i, pl, sizeof(pl)), 0, "record %u", i);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 1024);
	for (uint32_t i = 0; i < 10; i++)
		cr_assert_eq(ring_push_sp(&t.p, 100 + i, pl, sizeof(pl)), -ENOBUFS);
	cr_assert_eq(ring_push_sp(&t.p, 200, zeros, 0), -ENOBUFS, "even 8 bytes do not fit");
	int err = 1;
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 11);
	cr_assert_eq(err, 0);
	cr_assert_eq(ring_producer_dropped(&t.p), 11);

	/* Free exactly one record: exactly one record of that size fits again, then nothing. */
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 0);
	ring_batch_release(&t.c, &b);
	cr_assert_eq(ring_push_sp(&t.p, 300, pl, sizeof(pl)), 0);
	cr_assert_eq(ring_push_sp(&t.p, 301, zeros, 0), -ENOBUFS);
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 12);

	/* What comes out: 1..31, then 300. Nothing dropped leaks through. */
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	for (uint32_t i = 1; i < 32; i++) {
		cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
		cr_assert_eq(r.tag, i);
	}
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 300);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
	ring_batch_release(&t.c, &b);
	tring_close(&t);
}

Test(ring, full_ring_with_padding_fills_to_the_byte, .timeout = 60)
{
	/* Start at offset 1000 of 1024: the first 32-byte record needs 24 bytes of padding, then
	 * 31 records fit (24 + 31 * 32 = 1016), then exactly one 8-byte record, then nothing. */
	struct tring t;
	tring_open(&t, 1024, 1000);
	uint8_t pl[24] = {0};
	for (uint32_t i = 0; i < 31; i++)
		cr_assert_eq(ring_push_sp(&t.p, i, pl, sizeof(pl)), 0, "record %u", i);
	cr_assert_eq(ring_push_sp(&t.p, 31, pl, sizeof(pl)), -ENOBUFS);
	cr_assert_eq(ring_push_sp(&t.p, 32, zeros, 0), 0);
	cr_assert_eq(ring_push_sp(&t.p, 33, zeros, 0), -ENOBUFS);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 1024);
	int err;
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 2);
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	uint32_t n = 0;
	while (ring_batch_next(&t.c, &b, &r) == 1) {
		cr_assert_eq(r.tag, n == 31 ? 32u : n);
		n++;
	}
	cr_assert_eq(n, 32);
	ring_batch_release(&t.c, &b);
	tring_close(&t);
}

Test(ring, oversized_refused_and_counted, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 256, 0);
	uint8_t *big = calloc(1, 1 << 16);
	cr_assert(big);
	cr_assert_eq(ring_max_payload(256), 248);
	cr_assert_eq(ring_push_sp(&t.p, 1, big, 249), -EMSGSIZE);
	cr_assert_eq(ring_reserve_sp(&t.p, 2, UINT32_MAX), NULL);
	cr_assert_eq(t.p.last_error, -EMSGSIZE);
	cr_assert_eq(ring_push_sp(&t.p, 3, big, 1 << 16), -EMSGSIZE);
	/* A record of exactly the ring fits an empty ring at offset 0. */
	cr_assert_eq(ring_push_sp(&t.p, 4, big, 248), 0);
	cr_assert_eq(ring_push_sp(&t.p, 5, zeros, 0), -ENOBUFS);
	int err;
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 4);
	cr_assert_eq(err, 0);
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 4);
	cr_assert_eq(r.payload_bytes, 248);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
	ring_batch_release(&t.c, &b);
	/* The refusals did not disturb the producer: it goes on at offset 0 of the next lap. */
	cr_assert_eq(ring_push_sp(&t.p, 6, big, 8), 0);
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 6);
	cr_assert_eq(r.payload, t.data + RING_HDR_BYTES);
	ring_batch_release(&t.c, &b);
	free(big);
	tring_close(&t);
}

Test(ring, empty_ring, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 64, 4096);
	struct ring_batch b;
	struct ring_record r;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
		cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
		cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
		ring_batch_release(&t.c, &b);
	}
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 0);
	int err = 1;
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 0);
	cr_assert_eq(err, 0);
	cr_assert_eq(ring_consumer_dropped(&t.c, NULL), 0);
	cr_assert_eq(atomic_load(&t.ctl->read_pos), 4096, "an empty release stores nothing");
	cr_assert_eq(ring_touched_bytes(t.ctl, 64), 0);
	tring_close(&t);
}

Test(ring, uncommitted_record_is_invisible_and_reusable, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 128, 0);
	void *a = ring_reserve_sp(&t.p, 1, 16);
	cr_assert_not_null(a);
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0, "reserved but not committed");
	/* Abandon it: the next reservation takes the same place. */
	void *a2 = ring_reserve_sp(&t.p, 2, 8);
	cr_assert_eq(a2, a);
	memset(a2, 7, 8);
	ring_commit_sp(&t.p);
	/* A commit after a dropped reserve publishes nothing. */
	cr_assert_null(ring_reserve_sp(&t.p, 3, 4096));
	ring_commit_sp(&t.p);
	cr_assert_eq(ring_consumer_pending_bytes(&t.c), 16);
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	cr_assert_eq(r.tag, 2);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 0);
	ring_batch_release(&t.c, &b);
	tring_close(&t);
}

Test(ring, touched_bytes, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 256, (uint64_t)0 - 64);
	cr_assert_eq(ring_touched_bytes(t.ctl, 256), 0);
	cr_assert_eq(ring_push_sp(&t.p, 1, zeros, 40), 0);
	cr_assert_eq(ring_touched_bytes(t.ctl, 256), 48);
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), 1);
	ring_batch_release(&t.c, &b);
	cr_assert_eq(ring_touched_bytes(t.ctl, 256), 48, "consuming touches nothing new");
	struct model m;
	model_init(&m, 256, atomic_load(&t.ctl->write_pos));
	for (int i = 0; i < 100; i++) {
		push_checked(&t, &m, 32);
		consume_checked(&t, &m, UINT64_MAX);
	}
	cr_assert_eq(ring_touched_bytes(t.ctl, 256), 256, "clamped to the capacity");
	/* Untrusted: a garbage start position is still clamped. */
	t.ctl->start_pos = 12345;
	cr_assert_leq(ring_touched_bytes(t.ctl, 256), 256);
	free(m.q);
	tring_close(&t);
}

/* ---- bad arguments ------------------------------------------------------------------------- */

Test(ring, bad_capacities_rejected, .timeout = 60)
{
	/* Too small, not a power of two, too large. */
	/* clang-format off */
	static const uint64_t bad[] = {0, 1, 8, 32, 63, 65, 96, 100, 1000, 4095, 4097, 3ull << 20,
				       1ull << 32, RING_MAX_CAPACITY * 2, UINT64_MAX};
	/* clang-format on */
	struct ring_ctl *ctl = aligned_alloc(RING_CACHELINE, sizeof(*ctl));
	uint8_t data[64];
	cr_assert(ctl);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ring_producer p;
		struct ring_consumer c;
		cr_assert_not(ring_capacity_valid(bad[i]), "%llu", (unsigned long long)bad[i]);
		cr_assert_eq(ring_ctl_init(ctl, bad[i], 0), -EINVAL);
		cr_assert_eq(ring_producer_attach(&p, ctl, data, bad[i]), -EINVAL);
		cr_assert_eq(ring_consumer_attach(&c, ctl, data, bad[i]), -EINVAL);
		/* The failed handle stays harmless. */
		struct ring_batch b;
		int err;
		cr_assert_eq(ring_batch_begin(&c, &b), -EINVAL);
		cr_assert_eq(ring_consumer_dropped(&c, &err), 0);
		cr_assert_eq(err, -EINVAL);
		cr_assert_eq(ring_consumer_pending_bytes(&c), 0);
	}
	cr_assert(ring_capacity_valid(64));
	cr_assert(ring_capacity_valid(RING_MAX_CAPACITY));
	cr_assert_eq(ring_ctl_init(ctl, 64, 4), -EINVAL, "unaligned start position");
	cr_assert_eq(ring_ctl_init(ctl, 64, 0), 0);
	struct ring_consumer c;
	cr_assert_eq(ring_consumer_attach(&c, NULL, data, 64), -EINVAL);
	cr_assert_eq(ring_consumer_attach(&c, ctl, NULL, 64), -EINVAL);
	free(ctl);
}

/* ---- corruption -------------------------------------------------------------------------- */

/* Drains a (possibly corrupt) ring: only 0, 1 and -EPROTO are allowed, every payload must lie
 * inside data (and is read whole, for ASan), and no batch may hand out more records than the
 * ring could hold. Optionally scribbles on the shared state between batches. */
static int drain_hostile(struct tring *t, uint64_t *s, bool scribble)
{
	struct ring_batch b;
	struct ring_record r;
	int last = 0;
	for (int round = 0; round < 8; round++) {
		int rc = ring_batch_begin(&t->c, &b);
		cr_assert(rc == 0 || rc == -EPROTO, "batch_begin returned %d", rc);
		if (rc)
			return rc;
		uint64_t n = 0;
		while ((rc = ring_batch_next(&t->c, &b, &r)) == 1) {
			const uint8_t *pl = r.payload;
			cr_assert(pl >= t->data + RING_HDR_BYTES && pl <= t->data + t->cap);
			cr_assert_leq(r.payload_bytes, (uint64_t)(t->data + t->cap - pl));
			volatile uint8_t sink = 0;
			for (uint32_t i = 0; i < r.payload_bytes; i++)
				sink ^= pl[i];
			(void)sink;
			cr_assert_leq(++n, t->cap / RING_HDR_BYTES, "batch does not end");
		}
		cr_assert(rc == 0 || rc == -EPROTO, "batch_next returned %d", rc);
		ring_batch_release(&t->c, &b);
		int err = 0;
		(void)ring_consumer_dropped(&t->c, &err);
		cr_assert(err == 0 || err == -EPROTO);
		(void)ring_consumer_pending_bytes(&t->c);
		if (rc)
			return rc;
		last = rc;
		if (scribble) {
			/* The other side keeps scribbling, sometimes plausibly. */
			uint64_t x = rng_next(s);
			switch (x % 4) {
			case 0:
				atomic_store(&t->ctl->write_pos,
					     t->c.read + (rng_next(s) % (t->cap + 16)));
				break;
			case 1:
				atomic_store(&t->ctl->write_pos,
					     t->c.read + 8 * (rng_next(s) % (t->cap / 8 + 2)));
				break;
			case 2:
				atomic_store(&t->ctl->dropped, rng_next(s));
				break;
			default:
				t->data[rng_next(s) % t->cap] = (uint8_t)rng_next(s);
				break;
			}
		}
	}
	return last;
}

static void fill_random(void *dst, size_t n, uint64_t *s)
{
	uint8_t *b = dst;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rng_next(s);
}

Test(ring, corruption_random_bytes_many_seeds, .timeout = 60)
{
	unsigned corrupt = 0, clean = 0;
	for (uint64_t seed = 1; seed <= 4000; seed++) {
		uint64_t s = seed * 0x100000001b3ull;
		uint64_t cap = 64u << rng_below(&s, 7); /* 64 .. 4096 */
		struct tring t;
		t.cap = cap;
		t.ctl = aligned_alloc(RING_CACHELINE, sizeof(*t.ctl));
		t.data = malloc(cap);
		cr_assert(t.ctl && t.data);
		fill_random(t.ctl, sizeof(*t.ctl), &s);
		fill_random(t.data, cap, &s);
		unsigned mode = (unsigned)(seed % 4);
		if (mode >= 1) {
			/* Plausible positions, so the consumer gets past attach and reads headers.
			 */
			uint64_t rd = rng_next(&s) & ~7ull;
			atomic_store(&t.ctl->read_pos, rd);
			atomic_store(&t.ctl->write_pos, rd + 8 * rng_below(&s, cap / 8 + 1));
		}
		if (mode >= 2) {
			/* Headers that are mostly sane: small lengths, some pads, some tags. */
			for (uint64_t off = 0; off + 8 <= cap; off += 8) {
				if (rng_below(&s, 3))
					continue;
				uint32_t len = (uint32_t)(8 * rng_below(&s, 6));
				if (mode == 3 && rng_below(&s, 8) == 0)
					len = (uint32_t)rng_next(&s);
				uint32_t tag =
					rng_below(&s, 4) ? (uint32_t)rng_next(&s) : RING_TAG_PAD;
				memcpy(t.data + off, &len, 4);
				memcpy(t.data + off + 4, &tag, 4);
			}
		}
		int rc = ring_consumer_attach(&t.c, t.ctl, t.data, cap);
		cr_assert(rc == 0 || rc == -EPROTO, "attach returned %d", rc);
		if (rc == 0)
			rc = drain_hostile(&t, &s, seed % 2 == 0);
		if (rc)
			corrupt++;
		else
			clean++;
		/* Sticky: a corrupt consumer says so on every later call. */
		if (rc) {
			struct ring_batch b;
			struct ring_record r = {0};
			cr_assert_eq(ring_batch_begin(&t.c, &b), -EPROTO);
			cr_assert_eq(ring_batch_next(&t.c, &b, &r), -EPROTO);
			cr_assert_eq(ring_consumer_pending_bytes(&t.c), 0);
		}
		tring_close(&t);
	}
	/* Both outcomes must actually happen, or the generator is not testing anything. */
	cr_assert_gt(corrupt, 100);
	cr_assert_gt(clean, 10);
}

/* A healthy ring with some records in it, ready for a targeted corruption. Returns the
 * position of the first record. */
static uint64_t healthy(struct tring *t, uint64_t start)
{
	tring_open(t, 256, start);
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(ring_push_sp(&t->p, i, (uint8_t[16]){0}, 16), 0);
	return start;
}

static void hdr_set(struct tring *t, uint64_t pos, uint32_t len, uint32_t tag)
{
	uint64_t off = pos & (t->cap - 1);
	memcpy(t->data + off, &len, 4);
	memcpy(t->data + off + 4, &tag, 4);
}

/* Expects the next batch to fail with -EPROTO, after handing out `good` records (-1: the
 * failure must come from ring_batch_begin itself, before any header is read). */
static void expect_corrupt_after(struct tring *t, int good)
{
	struct ring_batch b;
	struct ring_record r;
	uint64_t read_before = atomic_load(&t->ctl->read_pos);
	int rc = ring_batch_begin(&t->c, &b);
	if (good < 0)
		cr_assert_eq(rc, -EPROTO, "batch_begin must see it");
	int n = 0;
	while (rc == 0 && (rc = ring_batch_next(&t->c, &b, &r)) == 1)
		n++, rc = 0;
	cr_assert_eq(rc, -EPROTO);
	cr_assert_eq(n, good < 0 ? 0 : good);
	ring_batch_release(&t->c, &b);
	/* Sticky, and the consumer no longer writes to the shared block. */
	cr_assert_eq(atomic_load(&t->ctl->read_pos), read_before);
	cr_assert_eq(ring_batch_begin(&t->c, &b), -EPROTO);
	cr_assert_eq(ring_batch_next(&t->c, &b, &r), -EPROTO);
}

Test(ring, corrupt_len_zero, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 0);
	hdr_set(&t, p0 + 24, 0, 1);
	expect_corrupt_after(&t, 1);
	tring_close(&t);
}

Test(ring, corrupt_len_not_multiple_of_8, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 0);
	hdr_set(&t, p0, 20, 0);
	expect_corrupt_after(&t, 0);
	tring_close(&t);
}

Test(ring, corrupt_len_shorter_than_header, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 0);
	hdr_set(&t, p0 + 48, 4, 2);
	expect_corrupt_after(&t, 2);
	tring_close(&t);
}

Test(ring, corrupt_len_past_write_pos, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 0);
	/* Last record claims 32 bytes but only 24 are published. */
	hdr_set(&t, p0 + 72, 32, 3);
	expect_corrupt_after(&t, 3);
	tring_close(&t);
}

Test(ring, corrupt_len_past_end_of_data, .timeout = 60)
{
	struct tring t;
	/* Records start at offset 240 of 256: the producer pads to the end. Make the first real
	 * record pretend to straddle the end instead. */
	tring_open(&t, 256, 240);
	for (uint32_t i = 0; i < 4; i++)
		cr_assert_eq(ring_push_sp(&t.p, i, (uint8_t[16]){0}, 16), 0);
	hdr_set(&t, 240, 40, 9); /* was the 16-byte pad; now a record across the end */
	expect_corrupt_after(&t, 0);
	tring_close(&t);
}

Test(ring, corrupt_pad_not_reaching_end, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 0);
	/* A pad that covers record 1 exactly: a consumer that only skipped would go on to
	 * records 2 and 3 as if nothing happened. */
	hdr_set(&t, p0 + 24, 24, RING_TAG_PAD);
	expect_corrupt_after(&t, 1);
	tring_close(&t);
}

Test(ring, corrupt_write_minus_read_over_capacity, .timeout = 60)
{
	struct tring t;
	uint64_t p0 = healthy(&t, 1ull << 40);
	atomic_store(&t.ctl->write_pos, p0 + 256 + 8);
	expect_corrupt_after(&t, -1);
	tring_close(&t);

	/* Write behind read. */
	p0 = healthy(&t, 1ull << 40);
	atomic_store(&t.ctl->write_pos, p0 - 8);
	expect_corrupt_after(&t, -1);
	tring_close(&t);

	/* Unaligned write position, inside the published range of a real record. */
	p0 = healthy(&t, 0);
	atomic_store(&t.ctl->write_pos, p0 + 28);
	expect_corrupt_after(&t, -1);
	tring_close(&t);

	/* Already impossible at attach time. */
	p0 = healthy(&t, 0);
	atomic_store(&t.ctl->write_pos, p0 + 4096);
	cr_assert_eq(ring_consumer_attach(&t.c, t.ctl, t.data, 256), -EPROTO);
	expect_corrupt_after(&t, 0);
	/* Unaligned read position, the 8 bytes after it would cross the end of data. */
	atomic_store(&t.ctl->read_pos, 256 * 5 + 252);
	atomic_store(&t.ctl->write_pos, 256 * 5 + 260);
	cr_assert_eq(ring_consumer_attach(&t.c, t.ctl, t.data, 256), -EPROTO);
	/* Unaligned write position, sane distance. */
	atomic_store(&t.ctl->read_pos, 256 * 5);
	atomic_store(&t.ctl->write_pos, 256 * 5 + 4);
	cr_assert_eq(ring_consumer_attach(&t.c, t.ctl, t.data, 256), -EPROTO);
	tring_close(&t);
}

Test(ring, corrupt_dropped_going_backwards, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 64, 0);
	uint8_t big[128] = {0};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ring_push_sp(&t.p, 1, big, sizeof(big)), -EMSGSIZE);
	int err;
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 3);
	cr_assert_eq(err, 0);
	atomic_store(&t.ctl->dropped, 1);
	cr_assert_eq(ring_consumer_dropped(&t.c, &err), 3, "keeps the last sane count");
	cr_assert_eq(err, -EPROTO);
	struct ring_batch b;
	cr_assert_eq(ring_batch_begin(&t.c, &b), -EPROTO, "the whole ring is now corrupt");
	tring_close(&t);
}

Test(ring, corrupt_capacity_field_ignored, .timeout = 60)
{
	/* The consumer trusts its own capacity, never the one in shared memory. */
	struct tring t;
	healthy(&t, 0);
	t.ctl->capacity = 1ull << 40;
	t.ctl->start_pos = 3;
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t.c, &b), 0);
	int n = 0;
	while (ring_batch_next(&t.c, &b, &r) == 1)
		n++;
	cr_assert_eq(n, 4);
	ring_batch_release(&t.c, &b);
	tring_close(&t);
}

Test(ring, corrupt_hand_made_batch, .timeout = 60)
{
	/* The batch is the caller's; one that claims more than a ring's worth, or sits between
	 * records, is refused rather than read. */
	struct tring t;
	healthy(&t, 0);
	struct ring_batch b = {.pos = 0, .end = 4096};
	struct ring_record r;
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), -EPROTO);
	tring_close(&t);

	healthy(&t, 0);
	b = (struct ring_batch){.pos = 252, .end = 260};
	cr_assert_eq(ring_batch_next(&t.c, &b, &r), -EPROTO);
	tring_close(&t);
}

/* ---- the producer against a broken consumer ------------------------------------------------ */

Test(ring, producer_stays_in_bounds_whatever_read_pos_says, .timeout = 60)
{
	/* The producer trusts the consumer, but a read position that is impossible must still
	 * never make it write outside data (guard bytes after it) or over unread bytes. */
	const uint64_t cap = 512, guard = 256;
	struct ring_ctl *ctl = aligned_alloc(RING_CACHELINE, sizeof(*ctl));
	uint8_t *data = malloc(cap + guard);
	cr_assert(ctl && data);
	memset(data + cap, 0xee, guard);
	uint64_t s = 42;
	for (int round = 0; round < 200; round++) {
		uint64_t start = 8 * rng_below(&s, 1000);
		cr_assert_eq(ring_ctl_init(ctl, cap, start), 0);
		/* Behind by more than the capacity: the ring must look full, not empty. */
		atomic_store(&ctl->read_pos, start - cap - 8 * rng_below(&s, 100));
		struct ring_producer p;
		cr_assert_eq(ring_producer_attach(&p, ctl, data, cap), 0);
		cr_assert_eq(ring_push_sp(&p, 1, zeros, 8), -ENOBUFS);
		for (int i = 0; i < 200; i++) {
			if (rng_below(&s, 4) == 0)
				atomic_store(&ctl->read_pos, rng_next(&s) & ~7ull);
			uint32_t pl = (uint32_t)rng_below(&s, 300);
			void *dst = ring_reserve_sp(&p, 2, pl);
			if (dst) {
				cr_assert((uint8_t *)dst >= data + 8 &&
					  (uint8_t *)dst + pl <= data + cap);
				memset(dst, 0x11, pl);
				ring_commit_sp(&p);
			}
		}
	}
	for (uint64_t i = 0; i < guard; i++)
		cr_assert_eq(data[cap + i], 0xee, "producer wrote past the end of data");
	free(data);
	free(ctl);
}

/* ---- the limit cap (ring_producer.h) ------------------------------------------------------- */

static void drain_all(struct tring *t)
{
	struct ring_batch b;
	struct ring_record r;
	cr_assert_eq(ring_batch_begin(&t->c, &b), 0);
	while (ring_batch_next(&t->c, &b, &r) == 1)
		;
	ring_batch_release(&t->c, &b);
}

Test(ring, limit_cap_sends_the_fast_path_to_its_caller, .timeout = 60)
{
	/* The runtime faults a ring in ahead of its writer and caps the fast path at the end of
	 * the faulted part: a record that would end past it must fail ring_reserve_fast_sp
	 * (nothing written, nothing dropped), while ring_reserve_sp still places it. */
	struct tring t;
	tring_open(&t, 1024, 0);
	ring_producer_cap_limit(&t.p, 64);
	for (uint32_t i = 0; i < 2; i++) {
		void *dst = ring_reserve_fast_sp(&t.p, i, 24); /* 32 bytes: ends at 32, 64 */
		cr_assert_eq((uint8_t *)dst, t.data + 32 * i + RING_HDR_BYTES);
		ring_commit_sp(&t.p);
	}
	cr_assert_null(ring_reserve_fast_sp(&t.p, 2, 0),
		       "a record past the cap takes the slow path");
	cr_assert_eq(t.data[64], 0xa5, "the refused fast path wrote nothing");
	cr_assert_eq(ring_producer_dropped(&t.p), 0);
	cr_assert_eq(t.p.last_error, 0);
	cr_assert_eq(atomic_load(&t.ctl->write_pos), 64, "and published nothing");
	/* The general path does not look at the cap. */
	void *dst = ring_reserve_sp(&t.p, 2, 24);
	cr_assert_eq((uint8_t *)dst, t.data + 64 + RING_HDR_BYTES);
	ring_commit_sp(&t.p);
	/* Raised to the capacity (or beyond: clamped), the cap is gone: the fast path runs to the
	 * end of data, and no further. */
	ring_producer_cap_limit(&t.p, 1u << 20);
	drain_all(&t);
	uint32_t n = 3;
	while (ring_reserve_fast_sp(&t.p, n, 24)) {
		ring_commit_sp(&t.p);
		n++;
	}
	cr_assert_eq(atomic_load(&t.ctl->write_pos), 1024, "fast path stopped at %llu",
		     (unsigned long long)atomic_load(&t.ctl->write_pos));
	cr_assert_eq(ring_producer_dropped(&t.p), 0);
	tring_close(&t);
}

Test(ring, limit_cap_zero_and_cap_below_the_writer, .timeout = 60)
{
	struct tring t;
	tring_open(&t, 256, 0);
	ring_producer_cap_limit(&t.p, 0);
	cr_assert_null(ring_reserve_fast_sp(&t.p, 1, 0));
	cr_assert_eq(ring_push_sp(&t.p, 1, zeros, 8), 0, "the general path still writes");
	/* A cap at or below the writer's offset stops the fast path until it is raised. */
	ring_producer_cap_limit(&t.p, 8);
	cr_assert_null(ring_reserve_fast_sp(&t.p, 2, 0));
	ring_producer_cap_limit(&t.p, 32);
	cr_assert_not_null(ring_reserve_fast_sp(&t.p, 2, 8)); /* 16..32 */
	ring_commit_sp(&t.p);
	cr_assert_null(ring_reserve_fast_sp(&t.p, 3, 0));
	cr_assert_eq(ring_producer_dropped(&t.p), 0);
	tring_close(&t);
}

Test(ring, limit_cap_random_against_the_model, .timeout = 60)
{
	/* Random caps (below, at and beyond the capacity) while pushing through the fast path
	 * first, as the runtime does: whatever the fast path accepts is what the model accepts,
	 * at the model's address, and ends at or below the cap; what it refuses, the general path
	 * decides exactly as the model does. */
	for (uint64_t k = 0; k < 48; k++) {
		uint64_t cap = 256u << (k % 3);
		uint64_t start = k < 16	  ? 0
				 : k < 32 ? 8 * (k * 7 % (cap / 8))
					  : (uint64_t)0 - 8 * k;
		struct tring t;
		struct model m;
		tring_open(&t, cap, start);
		model_init(&m, cap, start);
		uint64_t s = 4242 + k, fast = 0;
		for (int i = 0; i < 3000; i++) {
			uint64_t roll = rng_below(&s, 100);
			if (roll < 10) {
				ring_producer_cap_limit(&t.p, 8 * rng_below(&s, cap / 8 + 8));
			} else if (roll < 65) {
				uint32_t pl = (uint32_t)rng_below(&s, cap / 3);
				uint64_t data_cap = t.p.data_cap;
				uint64_t seq = m.pushed;
				void *dst = ring_reserve_fast_sp(&t.p, (uint32_t)seq, pl);
				if (!dst) {
					push_checked(&t, &m, pl);
					continue;
				}
				fast++;
				uint64_t pos = 0;
				cr_assert_eq(model_push(&m, pl, &pos), 0,
					     "fast path accepted a drop");
				uint64_t off = pos % cap;
				cr_assert_eq((uint8_t *)dst, t.data + off + RING_HDR_BYTES);
				cr_assert_leq(off + ring_record_bytes(pl), data_cap,
					      "fast path ran past the cap");
				fill_payload(dst, seq, pl);
				ring_commit_sp(&t.p);
			} else {
				consume_checked(&t, &m, rng_below(&s, m.q_len + 2));
			}
		}
		consume_checked(&t, &m, UINT64_MAX);
		check_accounting(&t, &m);
		cr_assert_gt(fast, 100, "the fast path ran (%llu)", (unsigned long long)fast);
		free(m.q);
		tring_close(&t);
	}
}

/* What the consumer has left to read, from the shared write
 * position it cannot trust. */
Test(ring, ring_pending_bytes_exact_and_clamped, .timeout = 60)
{
	enum { CAP = 256 };
	struct ring_ctl *ctl = aligned_alloc(RING_CACHELINE, sizeof(*ctl));
	uint8_t *data = malloc(CAP);
	cr_assert(ctl && data);
	memset(data, 0, CAP);
	struct ring_producer p;
	struct ring_consumer c;
	cr_assert_eq(ring_ctl_init(ctl, CAP, 0), 0);
	cr_assert_eq(ring_producer_attach(&p, ctl, data, CAP), 0);
	cr_assert_eq(ring_consumer_attach(&c, ctl, data, CAP), 0);
	static const uint8_t payload[40];
	cr_assert_eq(ring_consumer_pending_bytes(&c), 0);
	cr_assert_eq(ring_push_sp(&p, 1, payload, sizeof(payload)), 0);
	uint64_t one = ring_consumer_pending_bytes(&c);
	cr_assert(one >= sizeof(payload) + 8 && one % 8 == 0, "one record: %llu bytes",
		  (unsigned long long)one);
	cr_assert_eq(ring_push_sp(&p, 1, payload, sizeof(payload)), 0);
	cr_assert_eq(ring_consumer_pending_bytes(&c), 2 * one);
	/* A write position a capacity and more ahead of the reader: corrupt, nothing pending. */
	atomic_store(&ctl->write_pos, atomic_load(&ctl->read_pos) + 16 * CAP);
	cr_assert_eq(ring_consumer_pending_bytes(&c), 0);
	free(ctl);
	free(data);
}
