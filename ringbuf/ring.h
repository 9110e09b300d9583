/* ring.h - single-producer single-consumer ring of variable-length records.
 *
 * Purpose: carry records from one producer thread to one consumer thread over memory the
 * caller provides: private memory inside one process, or a region shared between a traced
 * process (producer) and the recorder (consumer). Nothing in the shared part is a pointer:
 * the control block holds positions only, so both sides may map it at different addresses.
 * The ring knows nothing of events; a record is (tag, payload bytes).
 *
 * Layout (shared):
 *   struct ring_ctl  write position, read position and dropped count, each on its own cache
 *                    line so the two sides never write the same line.
 *   data[capacity]   records. capacity is a power of two >= RING_MIN_CAPACITY.
 * Each record is an 8-byte header {u32 len, u32 tag} followed by the payload, padded to a
 * multiple of 8; len counts header, payload and padding. A record never straddles the end of
 * data: when it would, the producer writes a padding record (tag RING_TAG_PAD) that runs
 * exactly to the end and puts the record at offset 0. The padding occupies ring space until
 * the consumer passes it, so a record larger than half the ring can be refused as full
 * (-ENOBUFS) even by an empty ring when the write offset is unlucky; records are meant to be
 * much smaller than the ring.
 *
 * Positions are free-running 64-bit byte counts (never reduced modulo capacity), so
 * write - read is the number of bytes in use, even when the positions wrap past 2^64.
 *
 * Both sides of a shared ring may be built by different compilers (the recorder, and a traced
 * program built against the installed headers): the layout of struct ring_ctl and of the record
 * header is fixed by the _Static_asserts below.
 *
 * The producer side (handle, inline reserve/commit, limit cap) is ring_producer.h, which this
 * header includes; it is kept free of C11 atomics so that the public trc.h can include it.
 *
 * Concurrency contract (P = the one producer thread, C = the one consumer thread):
 *
 *   operation                     thread  may run concurrently with   blocks  syscalls
 *   ring_ctl_init                 any     nothing on that ring        no      no
 *   ring_producer_attach          P       any consumer operation      no      no
 *   ring_producer_cap_limit       P       any consumer operation      no      no
 *   ring_reserve_sp/_fast_sp      P       any consumer operation      no      no
 *   ring_commit_sp, ring_push_sp  P       any consumer operation      no      no
 *   ring_producer_used/has_room   P       any consumer operation      no      no
 *   ring_producer_has_wrap_room   P       any consumer operation      no      no
 *   ring_producer_wrap_sp/drop_sp P       any consumer operation      no      no
 *   ring_consumer_attach          C       any producer operation      no      no
 *   ring_batch_begin/next/release C       any producer operation      no      no
 *   ring_consumer_dropped         C       any producer operation      no      no
 *   ring_consumer_pending_bytes   C       any producer operation      no      no
 *   ring_touched_bytes            any     anything (relaxed read)     no      no
 *
 * Memory ordering: the producer publishes records with a release store of write_pos, which
 * the consumer's acquire load in ring_batch_begin pairs with. The consumer frees space with a
 * release store of read_pos, which the producer's acquire load in the full path pairs with
 * (so the producer never overwrites bytes the consumer is still reading). The dropped count
 * is stored with release and loaded with acquire, so a consumer that reads the count and then
 * begins a batch gets every record committed before the last of those drops.
 *
 * Trust: the consumer treats the control block and data as untrusted (another process may
 * scribble on them). It keeps its own copy of the capacity and read position, validates
 * every header it reads, and reports anything impossible as -EPROTO (sticky), never by
 * crashing, looping or reading out of bounds. The producer trusts the consumer, yet clamps
 * what it derives from read_pos, so it never writes outside data whatever read_pos says.
 *
 * When full, the producer drops the record and counts it in a producer-owned counter that
 * the consumer reads (so emitted = consumed + dropped, exactly). It never blocks, spins,
 * allocates or calls into the kernel.
 *
 * References: Linux tools/include/linux/ring_buffer.h (barrier pairing), Concurrency Kit
 * ck_ring.h (naming the concurrency contract in the function name).
 */
#ifndef TRC_RING_H
#define TRC_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ring_producer.h"

#define RING_CACHELINE 64
#define RING_MIN_CAPACITY 64u
/* Largest capacity: the header's u32 len must hold any record that fits. */
#define RING_MAX_CAPACITY (1ull << 31)
#define RING_TAG_PAD UINT32_MAX

/* The shared control block. Lives in caller memory, usually right before the data. */
struct ring_ctl {
	/* Written by P only (release), read by C (acquire). */
	_Alignas(RING_CACHELINE) _Atomic uint64_t write_pos;
	/* Written by C only (release), read by P (acquire) when its cached copy says full. */
	_Alignas(RING_CACHELINE) _Atomic uint64_t read_pos;
	/* Written by P only (release), read by C (acquire). Records dropped because the ring was
	 * full or the record could never fit. */
	_Alignas(RING_CACHELINE) _Atomic uint64_t dropped;
	/* Written once at init; informational for the consumer, which trusts its own copy. */
	uint64_t capacity;
	/* Written once at init: the position the ring started at, for ring_touched_bytes. */
	uint64_t start_pos;
	uint64_t reserved[6];
};

/* The shared layout, the same for every compiler that builds either side. */
_Static_assert(sizeof(struct ring_ctl) == 256 && _Alignof(struct ring_ctl) == RING_CACHELINE,
	       "ring_ctl is 4 cache lines");
_Static_assert(offsetof(struct ring_ctl, write_pos) == 0 &&
		       offsetof(struct ring_ctl, read_pos) == 64 &&
		       offsetof(struct ring_ctl, dropped) == 128 &&
		       offsetof(struct ring_ctl, capacity) == 136 &&
		       offsetof(struct ring_ctl, start_pos) == 144 &&
		       offsetof(struct ring_ctl, reserved) == 152,
	       "ring_ctl field offsets");
_Static_assert(sizeof(struct ring__hdr) == RING_HDR_BYTES && offsetof(struct ring__hdr, len) == 0 &&
		       offsetof(struct ring__hdr, tag) == 4,
	       "record header {u32 len, u32 tag}");
/* The producer stores write_pos through a plain uint64_t * (ring_producer.h): the atomic type
 * must have the plain type's size and alignment, and be lock-free (no hidden lock). */
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
		       _Alignof(_Atomic uint64_t) == _Alignof(uint64_t) &&
		       __atomic_always_lock_free(sizeof(uint64_t), 0),
	       "_Atomic uint64_t is a lock-free uint64_t");

/* The consumer's private handle: lives in the consumer thread. */
struct ring_consumer {
	struct ring_ctl *ctl;
	const uint8_t *data;
	uint64_t capacity;
	uint64_t mask;
	uint64_t read; /* authoritative read position; ctl->read_pos is a copy for P */
	uint64_t last_dropped; /* last dropped count seen, to check it never goes back */
	int error; /* sticky: once corrupt, every call returns it */
};

/* A snapshot of the records published at ring_batch_begin time. */
struct ring_batch {
	uint64_t pos; /* next record to read */
	uint64_t end; /* write position seen by ring_batch_begin */
};

/* One record handed to the consumer. payload stays valid until ring_batch_release. */
struct ring_record {
	uint32_t tag;
	uint32_t payload_bytes; /* padded size: len - RING_HDR_BYTES */
	const void *payload;
};

/* True when n is a power of two within [RING_MIN_CAPACITY, RING_MAX_CAPACITY]. */
static inline bool ring_capacity_valid(uint64_t n)
{
	return n >= RING_MIN_CAPACITY && n <= RING_MAX_CAPACITY && (n & (n - 1)) == 0;
}

/* Largest payload a ring of this capacity accepts: the record then takes the whole ring, so
 * it fits only when the write offset is 0 and the ring is empty (see padding above). */
static inline uint32_t ring_max_payload(uint64_t capacity)
{
	return (uint32_t)(capacity - RING_HDR_BYTES);
}

/* Initialises a control block for a ring of `capacity` data bytes, positions starting at
 * start_pos (tests start near 2^64 to cross the wrap). Any thread, before either side
 * attaches. Returns 0 or -EINVAL for a bad capacity. */
int ring_ctl_init(struct ring_ctl *ctl, uint64_t capacity, uint64_t start_pos);

/* Binds a consumer handle. C only. Validates what it can of the shared state; a control block
 * that is already impossible gives -EPROTO. Returns 0, -EINVAL (bad capacity) or -EPROTO. */
int ring_consumer_attach(struct ring_consumer *c, struct ring_ctl *ctl, const void *data,
			 uint64_t capacity);

/* Takes a snapshot of what the producer has published. C only. Returns 0 or -EPROTO. */
int ring_batch_begin(struct ring_consumer *c, struct ring_batch *b);

/* Hands out the next record of the batch, skipping padding. Returns 1 with *r filled, 0 at the
 * end of the batch, or -EPROTO when the ring is corrupt (the consumer stays in error). C only. */
/* Marks the consumer corrupt (sticky) and returns -EPROTO. Out of line: the rare path. */
int ring__corrupt(struct ring_consumer *c);

static inline int ring_batch_next(struct ring_consumer *c, struct ring_batch *b,
				  struct ring_record *r)
{
	/* Defined on every return, so inlined callers see no maybe-uninitialized path. */
	*r = (struct ring_record){0, 0, NULL};
	for (;;) {
		if (c->error)
			return c->error;
		uint64_t avail = b->end - b->pos;
		if (avail == 0)
			return 0;
		/* b->pos is a multiple of 8 (see the invariants above); a hand-made batch that
		 * breaks that is refused rather than read across the end of data. */
		if (avail < RING_HDR_BYTES || avail > c->capacity || (b->pos & 7u))
			return ring__corrupt(c);
		uint64_t off = b->pos & c->mask;
		/* The producer wrote these lines on another core: ask for the ones a few records
		 * ahead now, so their transfer overlaps the decoding of this one. */
		__builtin_prefetch(c->data + ((off + 256) & c->mask));
		/* Read the header once: the other side may change it under us, and the fence keeps
		 * the compiler from fetching it again after the checks. */
		struct ring__hdr hdr;
		memcpy(&hdr, c->data + off, sizeof(hdr));
		atomic_signal_fence(memory_order_seq_cst);
		uint64_t len = hdr.len;
		if (len < RING_HDR_BYTES || (len & 7u) || len > avail || off + len > c->capacity)
			return ring__corrupt(c);
		b->pos += len;
		if (hdr.tag == RING_TAG_PAD) {
			/* Padding exists only to skip to the end of data. */
			if (off + len != c->capacity)
				return ring__corrupt(c);
			continue;
		}
		r->tag = hdr.tag;
		r->payload_bytes = (uint32_t)(len - RING_HDR_BYTES);
		r->payload = c->data + off + RING_HDR_BYTES;
		return 1;
	}
}

/* Gives the space of every record handed out by this batch back to the producer (one release
 * store). Records' payload pointers are invalid afterwards. C only. */
void ring_batch_release(struct ring_consumer *c, const struct ring_batch *b);

/* The producer's dropped count (total since init). Sets *err (may be NULL) to 0, or to
 * -EPROTO when the shared count went backwards (corrupt ring; the last sane count is
 * returned). Exact once the producer has stopped (joined thread, reaped process). C only. */
uint64_t ring_consumer_dropped(struct ring_consumer *c, int *err);

/* Bytes published and not yet consumed (0 when corrupt). C only. */
uint64_t ring_consumer_pending_bytes(struct ring_consumer *c);

/* Data bytes the producer has ever touched since init, i.e. the resident size of the data
 * area when its memory was untouched before: min(written since init, capacity). Any thread;
 * a relaxed read is enough (accounting). Clamped to capacity, so safe on untrusted memory. */
uint64_t ring_touched_bytes(struct ring_ctl *ctl, uint64_t capacity);

#endif /* TRC_RING_H */
