/* pb_wire.c - the protobuf wire-format writer's out-of-line parts (growth, bytes, nesting).
 *
 * See pb_wire.h for the encoding and the nesting scheme. Threads: none shared.
 */
#include "pb_wire.h"

#include <errno.h>
#include <stdlib.h>

int pb__grow(struct pb_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->err = -ENOMEM;
			return b->err;
		}
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void pb_buf_free(struct pb_buf *b)
{
	free(b->p);
	*b = (struct pb_buf){0};
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t n)
{
	if (n > SIZE_MAX - 30 || pb_reserve(b, n + 30))
		return;
	uint8_t *p = pb_put_varint(b->p + b->len, ((uint64_t)field << 3) | PB_LEN);
	p = pb_put_varint(p, n);
	if (n)
		memcpy(p, data, n);
	b->len = (size_t)(p - b->p) + n;
}

size_t pb_open(struct pb_buf *b, uint32_t field)
{
	pb_tag(b, field, PB_LEN);
	if (pb_reserve(b, 1))
		return b->len;
	b->p[b->len++] = 0; /* the length's first byte, fixed up by pb_close */
	return b->len;
}

void pb_close(struct pb_buf *b, size_t mark)
{
	if (b->err)
		return;
	size_t n = b->len - mark;
	unsigned k = pb_varint_size(n);
	if (k > 1) {
		if (pb_reserve(b, k - 1))
			return;
		memmove(b->p + mark + k - 1, b->p + mark, n);
		b->len += k - 1;
	}
	pb_put_varint(b->p + mark - 1, n);
}
