/* ring.c - the out-of-line parts of the SPSC ring: init, attach, the producer's rare paths
 * (wrap, full, oversized) and the consumer, which validates everything it reads because the
 * memory may belong to another, possibly broken, process. See ring.h for the contract. */
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

int ring_producer_attach(struct ring_producer *p, struct ring_ctl *ctl, void *data,
			 uint64_t capacity)
{
	if (!ring_capacity_valid(capacity))
		return -EINVAL;
	p->ctl = ctl;
	p->data = data;
	p->capacity = capacity;
	p->mask = capacity - 1;
	/* The producer owns write_pos and dropped: relaxed loads of its own values. */
	p->write = atomic_load_explicit(&ctl->write_pos, memory_order_relaxed);
	p->dropped = atomic_load_explicit(&ctl->dropped, memory_order_relaxed);
	/* Pairs with the consumer's release store of read_pos in ring_batch_release. */
	p->cached_read = atomic_load_explicit(&ctl->read_pos, memory_order_acquire);
	p->pending = 0;
	p->last_error = 0;
	return 0;
}

static void *ring__drop(struct ring_producer *p, int why)
{
	p->dropped++;
	p->last_error = why;
	/* Only P writes dropped; the consumer reads it for accounting, order does not matter
	 * beyond eventual visibility (the final drain happens after the producer is gone). */
	atomic_store_explicit(&p->ctl->dropped, p->dropped, memory_order_relaxed);
	return NULL;
}

void *ring__reserve_slow_sp(struct ring_producer *p, uint32_t tag, uint64_t total)
{
	if (total > p->capacity)
		return ring__drop(p, -EMSGSIZE);

	uint64_t w = p->write;
	uint64_t off = w & p->mask;
	uint64_t pad = off + total > p->capacity ? p->capacity - off : 0;

	if (w + pad + total - p->cached_read > p->capacity) {
		/* Pairs with the release store of read_pos in ring_batch_release: the consumer is
		 * done with every byte below the value we load. */
		p->cached_read = atomic_load_explicit(&p->ctl->read_pos, memory_order_acquire);
		if (w + pad + total - p->cached_read > p->capacity)
			return ring__drop(p, -ENOBUFS);
	}
	if (pad) {
		uint32_t *ph = (uint32_t *)(void *)(p->data + off);
		ph[0] = (uint32_t)pad;
		ph[1] = RING_TAG_PAD;
		/* Not published yet: the commit of the record after it publishes both. */
		p->write = w + pad;
		off = 0;
	}
	uint32_t *hdr = (uint32_t *)(void *)(p->data + off);
	hdr[0] = (uint32_t)total;
	hdr[1] = tag;
	p->pending = (uint32_t)total;
	return hdr + 2;
}

static int ring__corrupt(struct ring_consumer *c)
{
	c->error = -EPROTO;
	return -EPROTO;
}

int ring_consumer_attach(struct ring_consumer *c, struct ring_ctl *ctl, const void *data,
			 uint64_t capacity)
{
	memset(c, 0, sizeof(*c));
	if (!ring_capacity_valid(capacity))
		return -EINVAL;
	c->ctl = ctl;
	c->data = data;
	c->capacity = capacity;
	c->mask = capacity - 1;
	c->read = atomic_load_explicit(&ctl->read_pos, memory_order_relaxed);
	c->last_dropped = 0;
	/* Pairs with the producer's release store in ring_commit_sp. */
	uint64_t w = atomic_load_explicit(&ctl->write_pos, memory_order_acquire);
	if ((c->read & 7u) || w - c->read > capacity)
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

int ring_batch_next(struct ring_consumer *c, struct ring_batch *b, struct ring_record *r)
{
	for (;;) {
		if (c->error)
			return c->error;
		uint64_t avail = b->end - b->pos;
		if (avail == 0)
			return 0;
		if (avail < RING_HDR_BYTES || avail > c->capacity)
			return ring__corrupt(c);
		uint64_t off = b->pos & c->mask;
		/* Read the header once: the other side may change it under us. */
		uint64_t hdr;
		memcpy(&hdr, c->data + off, sizeof(hdr));
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		uint32_t len = (uint32_t)hdr;
		uint32_t tag = (uint32_t)(hdr >> 32);
		if (len < RING_HDR_BYTES || (len & 7u) || len > avail || off + len > c->capacity)
			return ring__corrupt(c);
		if (tag == RING_TAG_PAD) {
			/* Padding exists only to skip to the end of data. */
			if (off + len != c->capacity)
				return ring__corrupt(c);
			b->pos += len;
			continue;
		}
		r->tag = tag;
		r->payload_bytes = len - RING_HDR_BYTES;
		r->payload = c->data + off + RING_HDR_BYTES;
		b->pos += len;
		return 1;
	}
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
	*err = 0;
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
	uint64_t w = atomic_load_explicit(&c->ctl->write_pos, memory_order_acquire);
	uint64_t n = w - c->read;
	return n > c->capacity ? 0 : n;
}

uint64_t ring_touched_bytes(struct ring_ctl *ctl, uint64_t capacity)
{
	uint64_t w = atomic_load_explicit(&ctl->write_pos, memory_order_relaxed);
	uint64_t n = w - ctl->start_pos;
	return n > capacity ? capacity : n;
}
