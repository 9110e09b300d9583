/* ring_producer.h - the producer side of the SPSC ring (ring.h): its handle and its inline fast
 * path, reserve and commit.
 *
 * Purpose: the one definition of the ring's producer. ring.h includes it; the public trc.h
 * includes it too (installed as <trc/ring_producer.h>), because the tracer's event hot path is
 * this reserve and commit, inlined into the program. So this file is self-contained and usable
 * from C and C++ (any standard since C++11): libc headers only, no <stdatomic.h> and no _Atomic
 * (C++ has them only from C++23); the one shared word it touches, the ring's write position, is
 * stored with a __atomic builtin (GCC, Clang).
 *
 * Threads: the producer handle belongs to the one producer thread (P in ring.h's concurrency
 * table); every function here is P only, never blocks, never calls the kernel.
 *
 * Fast path: ring_reserve_fast_sp is two loads, one compare, the header store and one store of
 * `next`; ring_commit_sp is one release store (and the private copy of write). Everything
 * rare (wrap, full, a record larger than the ring, and whatever the caller asked to be told of
 * through the limit cap) fails the one compare and goes out of line. The limit folds those
 * checks into one number; it is computed in one place, ring.c (ring__set_limit):
 *
 *   limit = write + min(room before the end of data (or before data_cap, when lower),
 *                       room before cached_read + capacity)
 *
 * Limit cap (data_cap): a caller that prepares the data area ahead of the writer (the tracer
 * faults a fresh ring in chunks, so its hot path never page-faults) sets data_cap to the end of
 * the prepared part (ring_producer_cap_limit). A reservation that would end past it then fails
 * ring_reserve_fast_sp, so the caller's own slow path runs first, prepares more, raises the cap
 * and reserves with ring_reserve_sp. The cap bounds only the fast path: ring__reserve_slow_sp
 * ignores it. data_cap == capacity (the default) means no cap.
 *
 * Invariants (P's private handle): limit - write is in [0, capacity] (positions are free-running
 * u64, compared by difference, so they may wrap past 2^64); next is write, or the end of the
 * last reserved, uncommitted record (and of the padding before it); cached_read is a value
 * read_pos held.
 */
#ifndef TRC_RING_PRODUCER_H
#define TRC_RING_PRODUCER_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RING_HDR_BYTES 8u

#if defined(__GNUC__)
#define ring__likely(x) __builtin_expect(!!(x), 1)
#define ring__unlikely(x) __builtin_expect(!!(x), 0)
#else
#define ring__likely(x) (x)
#define ring__unlikely(x) (x)
#endif

/* The shared control block (ring.h). Only its write position is touched here, through
 * ring_producer.write_pos. */
struct ring_ctl;

/* The record header as laid out in data: {u32 len, u32 tag}, then the payload. */
struct ring__hdr {
	uint32_t len; /* header + payload + padding, a multiple of 8 */
	uint32_t tag;
};

/* The producer's private handle: lives in the producer thread (TLS, stack, heap). The fields
 * the fast path uses come first. Set up by ring_producer_attach; read by callers only through
 * the functions below (and `data != NULL` as "attached"). */
struct ring_producer {
	uint64_t write; /* private copy of ctl->write_pos (includes an unpublished pad) */
	/* Reservations whose end stays at or below limit fit without looking at anything else
	 * (the formula is in the comment at the top). */
	uint64_t limit;
	uint8_t *data;
	uint64_t mask; /* capacity - 1 */
	/* &ctl->write_pos, as a plain u64 (same size and alignment, lock-free: ring.h asserts
	 * it) so this header needs no _Atomic; stored with __atomic_store_n only. */
	uint64_t *write_pos;
	/* The end of the reserved, uncommitted record: what ring_commit_sp publishes (write when
	 * nothing is reserved, so a stray commit publishes nothing). */
	uint64_t next;
	int last_error; /* 0, -ENOBUFS (full) or -EMSGSIZE (never fits) of the last drop */
	/* Out of line only (ring.c). */
	struct ring_ctl *ctl;
	uint64_t capacity;
	uint64_t cached_read; /* last read_pos seen; refreshed only when the ring looks full */
	uint64_t dropped; /* private copy of ctl->dropped */
	uint64_t data_cap; /* the fast path's limit stops at this offset of data (see above) */
};

/* Bytes a record with this payload occupies in the ring. */
static inline uint64_t ring_record_bytes(uint32_t payload_bytes)
{
	return RING_HDR_BYTES + (((uint64_t)payload_bytes + 7u) & ~(uint64_t)7u);
}

/* Binds a producer handle to an initialised ring (ring_ctl_init), with no limit cap. P only.
 * Returns 0 or -EINVAL (bad capacity). */
int ring_producer_attach(struct ring_producer *p, struct ring_ctl *ctl, void *data,
			 uint64_t capacity);

/* Caps the fast path's limit at offset data_cap of data (>= capacity: no cap) and recomputes
 * the limit. P only; out of line (a slow-path call). */
void ring_producer_cap_limit(struct ring_producer *p, uint64_t data_cap);

/* Bytes in use (written, not yet released by the consumer), re-reading the consumer's position.
 * P only; out of line. */
uint64_t ring_producer_used(struct ring_producer *p);

/* Whether a record of payload_bytes fits now (wrap included), re-reading the consumer's position
 * when the cached one says full: for a caller that would rather wait for the consumer than drop.
 * A record larger than the ring "fits" (ring_reserve_sp then refuses it). P only; out of line. */
int ring_producer_has_room(struct ring_producer *p, uint32_t payload_bytes);

/* Whether ring_producer_wrap_sp would succeed now (re-reading the consumer's position when the
 * cached one says full), without writing anything: for a caller that must do something before
 * the padding lets its fast path write at offset 0 (the runtime announces the lap it enters).
 * P only; out of line. */
int ring_producer_has_wrap_room(struct ring_producer *p, uint32_t payload_bytes);

/* Wraps early: pads from the write offset to the end of data, so the next record goes at offset
 * 0, provided a record of payload_bytes then fits (the padding occupies ring space until the
 * consumer passes it). For a caller that uses only the head of data (the runtime, which keeps
 * its rings as small as the drain allows). The padding is published with the next commit.
 * Returns 0 (also when already at offset 0 and the record fits) or -ENOBUFS (no room: nothing
 * written, nothing counted). P only; out of line. */
int ring_producer_wrap_sp(struct ring_producer *p, uint32_t payload_bytes);

/* Drops a record the caller decided not to write, counted as full (-ENOBUFS). Returns NULL, as
 * a failed reserve does. P only; out of line. */
void *ring_producer_drop_sp(struct ring_producer *p);

/* Out-of-line part of ring_reserve_sp: wrap, full, oversized; total is ring_record_bytes of the
 * payload. P only. */
void *ring__reserve_slow_sp(struct ring_producer *p, uint32_t tag, uint64_t total);

/* True when a record of total bytes written at w ends at or below the limit. A signed
 * difference, since positions wrap past 2^64. */
static inline int ring__fits_sp(const struct ring_producer *p, uint64_t w, uint64_t total)
{
	return (int64_t)(p->limit - (w + total)) >= 0;
}

/* Writes the header of a record of total bytes at w. The caller checked ring__fits_sp. */
static inline void *ring__place_sp(struct ring_producer *p, uint64_t w, uint32_t tag,
				   uint64_t total)
{
	struct ring__hdr *hdr = (struct ring__hdr *)(void *)(p->data + (w & p->mask));
	hdr->len = (uint32_t)total;
	hdr->tag = tag;
	p->next = w + total;
	return hdr + 1;
}

/* The fast path alone: reserves room for a record of payload_bytes below the limit and writes
 * its header. Returns where to write the payload (8-byte aligned), or NULL when the record does
 * not fit below the limit; NULL here drops nothing and counts nothing: the caller goes to its
 * slow path, which ends in ring_reserve_sp. For callers with a slow path of their own (limit
 * cap); others use ring_reserve_sp. P only; tag must not be RING_TAG_PAD. */
static inline void *ring_reserve_fast_sp(struct ring_producer *p, uint32_t tag,
					 uint32_t payload_bytes)
{
	uint64_t total = ring_record_bytes(payload_bytes);
	uint64_t w = p->write;
	if (ring__likely(ring__fits_sp(p, w, total)))
		return ring__place_sp(p, w, tag, total);
	return NULL;
}

/* Reserves room for a record of payload_bytes and writes its header. Returns where to write the
 * payload (8-byte aligned), or NULL when the record is dropped (counted; p->last_error says
 * why). The record is invisible to the consumer until ring_commit_sp; a reservation that is
 * never committed is simply reused by the next one. P only; never blocks.
 * tag must not be RING_TAG_PAD. Fast path as ring_reserve_fast_sp; when that fails, wrap, full
 * and oversized records are handled out of line. */
static inline void *ring_reserve_sp(struct ring_producer *p, uint32_t tag, uint32_t payload_bytes)
{
	uint64_t total = ring_record_bytes(payload_bytes);
	uint64_t w = p->write;
	if (ring__likely(ring__fits_sp(p, w, total)))
		return ring__place_sp(p, w, tag, total);
	return ring__reserve_slow_sp(p, tag, total);
}

/* Publishes the record reserved last (and any padding before it). P only; one release store.
 * Call only after a reserve that did not return NULL. */
static inline void ring_commit_sp(struct ring_producer *p)
{
	uint64_t next = p->next;
	p->write = next;
	/* Pairs with the acquire load of write_pos in ring_batch_begin (and the consumer's other
	 * loads of it): the header and payload stores above are visible to the consumer before
	 * the position that covers them. */
	__atomic_store_n(p->write_pos, next, __ATOMIC_RELEASE);
}

/* Copies a whole record in. Returns 0, -ENOBUFS (full, dropped and counted) or -EMSGSIZE
 * (larger than the ring can ever hold, dropped and counted). P only. */
static inline int ring_push_sp(struct ring_producer *p, uint32_t tag, const void *payload,
			       uint32_t payload_bytes)
{
	void *dst = ring_reserve_sp(p, tag, payload_bytes);
	if (ring__unlikely(!dst))
		return p->last_error;
	memcpy(dst, payload, payload_bytes);
	ring_commit_sp(p);
	return 0;
}

/* Records this producer has dropped so far. P only. */
static inline uint64_t ring_producer_dropped(const struct ring_producer *p)
{
	return p->dropped;
}

#ifdef __cplusplus
}
#endif

#endif /* TRC_RING_PRODUCER_H */
