/* ring.c - the out-of-line parts of the SPSC ring: init, attach, the producer's rare paths
 * (wrap, full, oversized, the limit and its cap) and the consumer, which validates everything it
 * reads because the memory may belong to another, possibly broken, process. See ring.h and
 * ring_producer.h for the contract.
 *
 * Consumer invariants (what makes it safe on hostile memory):
 *   - c->capacity and c->mask are the consumer's own; ctl->capacity is never used.
 *   - c->read and every batch position are multiples of 8, so a header at (pos & mask) lies
 *     wholly inside data (capacity is a multiple of 8).
 *   - a batch never spans more than capacity bytes, and every record advances it by at least
 *     8 bytes, so ring_batch_next ends in at most capacity / 8 steps.
 *   - a header is read once into a local; every later decision uses that copy.
 */
#include "ring.h"

int ring_ctl_init(struct ring_ctl *ctl, uint64_t capacity, uint64_t start_pos)
{
	if (!ring_capacity_valid(capacity) || (start_pos & 7u))
		return -EINVAL;
	atomic_init(&ctl->write_pos, start_pos);
	atomic_init(&ctl->read_pos, start_pos);
	atomic_init(&ctl->dropped, 0);
	ctl->capacity = capacity;
	ctl->start_pos = start_pos;
	memset(ctl->reserved, 0, sizeof(ctl->reserved));
	return 0;
}

/* Recomputes the fast path's limit from write, cached_read and the cap: the one place the
 * limit formula lives (ring_producer.h). Clamped both ways, so even a read position the
 * producer did not expect can never let a reservation run past the end of data (the producer
 * trusts the consumer, but not blindly with its own memory safety). */
static void ring__set_limit(struct ring_producer *p)
{
	uint64_t w = p->write;
	uint64_t off = w & p->mask;
	/* data_cap <= capacity (ring_producer_cap_limit); past it, no room in this lap. */
	uint64_t lap_room = p->data_cap > off ? p->data_cap - off : 0;
	uint64_t used = w - p->cached_read;
	uint64_t free_bytes = used > p->capacity ? 0 : p->capacity - used;
	p->limit = w + (lap_room < free_bytes ? lap_room : free_bytes);
}

int ring_producer_attach(struct ring_producer *p, struct ring_ctl *ctl, void *data,
			 uint64_t capacity)
{
	if (!ring_capacity_valid(capacity))
		return -EINVAL;
	p->ctl = ctl;
	p->write_pos = (uint64_t *)(void *)&ctl->write_pos; /* same object, see ring.h */
	p->data = data;
	p->capacity = capacity;
	p->mask = capacity - 1;
	p->data_cap = capacity;
	/* The producer owns write_pos and dropped: relaxed loads of its own values. */
	p->write = atomic_load_explicit(&ctl->write_pos, memory_order_relaxed);
	p->dropped = atomic_load_explicit(&ctl->dropped, memory_order_relaxed);
	/* Pairs with the consumer's release store of read_pos in ring_batch_release. */
	p->cached_read = atomic_load_explicit(&ctl->read_pos, memory_order_acquire);
	p->next = p->write;
	p->last_error = 0;
	ring__set_limit(p);
	return 0;
}

void ring_producer_cap_limit(struct ring_producer *p, uint64_t data_cap)
{
	p->data_cap = data_cap < p->capacity ? data_cap : p->capacity;
	ring__set_limit(p);
}

static void *ring__drop(struct ring_producer *p, int why)
{
	p->dropped++;
	p->last_error = why;
	/* A stray ring_commit_sp after a NULL reserve then publishes nothing. */
	p->next = p->write;
	/* Pairs with the acquire load in ring_consumer_dropped: records committed before this
	 * drop are visible to a consumer that sees the new count. */
	atomic_store_explicit(&p->ctl->dropped, p->dropped, memory_order_release);
	return NULL;
}

void *ring__reserve_slow_sp(struct ring_producer *p, uint32_t tag, uint64_t total)
{
	if (total > p->capacity)
		return ring__drop(p, -EMSGSIZE);

	uint64_t w = p->write;
	uint64_t off = w & p->mask;
	/* off and capacity are multiples of 8, so a padding record is at least a header. */
	uint64_t pad = off + total > p->capacity ? p->capacity - off : 0;

	if (w + pad + total - p->cached_read > p->capacity) {
		/* Pairs with the release store of read_pos in ring_batch_release: the consumer is
		 * done with every byte below the value we load. */
		p->cached_read = atomic_load_explicit(&p->ctl->read_pos, memory_order_acquire);
		if (w + pad + total - p->cached_read > p->capacity) {
			ring__set_limit(p); /* smaller records may still fit */
			return ring__drop(p, -ENOBUFS);
		}
	}
	if (pad) {
		struct ring__hdr *ph = (struct ring__hdr *)(void *)(p->data + off);
		ph->len = (uint32_t)pad;
		ph->tag = RING_TAG_PAD;
		/* Not published yet: the commit of the record after it publishes both. */
		p->write = w + pad;
	}
	ring__set_limit(p);
	/* At offset 0 after a pad. */
	return ring__place_sp(p, p->write, tag, total);
}

uint64_t ring_producer_used(struct ring_producer *p)
{
	/* Pairs with the release store of read_pos in ring_batch_release. */
	p->cached_read = atomic_load_explicit(&p->ctl->read_pos, memory_order_acquire);
	uint64_t used = p->write - p->cached_read;
	return used > p->capacity ? p->capacity : used;
}

/* Whether pad + total more bytes fit at the write position, re-reading read_pos when the cached
 * copy says no. */
static bool ring__room(struct ring_producer *p, uint64_t pad, uint64_t total)
{
	uint64_t w = p->write;
	if (w + pad + total - p->cached_read <= p->capacity)
		return true;
	/* Pairs with the release store of read_pos in ring_batch_release. */
	p->cached_read = atomic_load_explicit(&p->ctl->read_pos, memory_order_acquire);
	return w + pad + total - p->cached_read <= p->capacity;
}

int ring_producer_has_room(struct ring_producer *p, uint32_t payload_bytes)
{
	uint64_t total = ring_record_bytes(payload_bytes);
	if (total > p->capacity)
		return 1;
	uint64_t off = p->write & p->mask;
	return ring__room(p, off + total > p->capacity ? p->capacity - off : 0, total);
}

int ring_producer_has_wrap_room(struct ring_producer *p, uint32_t payload_bytes)
{
	uint64_t total = ring_record_bytes(payload_bytes);
	uint64_t off = p->write & p->mask;
	return total <= p->capacity && ring__room(p, off ? p->capacity - off : 0, total);
}

int ring_producer_wrap_sp(struct ring_producer *p, uint32_t payload_bytes)
{
	uint64_t off = p->write & p->mask;
	uint64_t pad = off ? p->capacity - off : 0;
	if (!ring_producer_has_wrap_room(p, payload_bytes))
		return -ENOBUFS;
	if (pad) {
		/* off and capacity are multiples of 8: the padding is at least a header, and the
		 * room check covers its bytes. */
		struct ring__hdr *ph = (struct ring__hdr *)(void *)(p->data + off);
		ph->len = (uint32_t)pad;
		ph->tag = RING_TAG_PAD;
		p->write += pad;
		p->next = p->write;
	}
	ring__set_limit(p);
	return 0;
}

void *ring_producer_drop_sp(struct ring_producer *p)
{
	return ring__drop(p, -ENOBUFS);
}

int ring__corrupt(struct ring_consumer *c)
{
	c->error = -EPROTO;
	return -EPROTO;
}

int ring_consumer_attach(struct ring_consumer *c, struct ring_ctl *ctl, const void *data,
			 uint64_t capacity)
{
	memset(c, 0, sizeof(*c));
	if (!ring_capacity_valid(capacity) || !ctl || !data) {
		/* Sticky, so a caller that ignores the result gets errors, not a NULL deref. */
		c->error = -EINVAL;
		return -EINVAL;
	}
	c->ctl = ctl;
	c->data = data;
	c->capacity = capacity;
	c->mask = capacity - 1;
	c->read = atomic_load_explicit(&ctl->read_pos, memory_order_relaxed);
	/* Pairs with the producer's release store in ring__drop. */
	c->last_dropped = atomic_load_explicit(&ctl->dropped, memory_order_acquire);
	/* Pairs with the producer's release store in ring_commit_sp. */
	uint64_t w = atomic_load_explicit(&ctl->write_pos, memory_order_acquire);
	if ((c->read & 7u) || (w & 7u) || w - c->read > capacity)
		return ring__corrupt(c);
	return 0;
}

int ring_batch_begin(struct ring_consumer *c, struct ring_batch *b)
{
	b->pos = b->end = c->read;
	if (c->error)
		return c->error;
	/* Pairs with the producer's release store in ring_commit_sp: every byte below end is
	 * written. */
	uint64_t w = atomic_load_explicit(&c->ctl->write_pos, memory_order_acquire);
	if (w - c->read > c->capacity || (w & 7u))
		return ring__corrupt(c);
	b->end = w;
	return 0;
}

void ring_batch_release(struct ring_consumer *c, const struct ring_batch *b)
{
	if (c->error || b->pos == c->read)
		return;
	c->read = b->pos;
	/* Pairs with the producer's acquire load of read_pos in ring__reserve_slow_sp: we are done
	 * reading every byte below it. */
	atomic_store_explicit(&c->ctl->read_pos, c->read, memory_order_release);
}

uint64_t ring_consumer_dropped(struct ring_consumer *c, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	*err = 0;
	if (!c->ctl) {
		*err = c->error ? c->error : -EINVAL;
		return 0;
	}
	/* Pairs with the producer's release store in ring__drop. */
	uint64_t d = atomic_load_explicit(&c->ctl->dropped, memory_order_acquire);
	if (d < c->last_dropped) {
		*err = ring__corrupt(c);
		return c->last_dropped;
	}
	c->last_dropped = d;
	return d;
}

uint64_t ring_consumer_pending_bytes(struct ring_consumer *c)
{
	if (c->error)
		return 0;
	/* Pairs with the producer's release store in ring_commit_sp. */
	uint64_t w = atomic_load_explicit(&c->ctl->write_pos, memory_order_acquire);
	uint64_t n = w - c->read;
	return n > c->capacity ? 0 : n;
}

uint64_t ring_touched_bytes(struct ring_ctl *ctl, uint64_t capacity)
{
	/* Accounting only: a relaxed load, and the clamp keeps garbage harmless. */
	uint64_t w = atomic_load_explicit(&ctl->write_pos, memory_order_relaxed);
	uint64_t n = w - ctl->start_pos;
	return n > capacity ? capacity : n;
}
