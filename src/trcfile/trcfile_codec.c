/* trcfile_codec.c - record encoding and decoding, CRC-32C, and the put and get of every fixed
 * structure (file header, chunk header, footer and its entries, trailer).
 *
 * Purpose: the out-of-line half of trcfile_codec.h (see there and FORMAT.md). The hot event
 * types decode inline in the header; this file has the rest, the checked slow path used near
 * the end of a chunk, the encoder, and the only code that reads or writes a fixed structure's
 * fields (through the images declared in trcfile_codec.h: each offset is written once).
 *
 * Threads: pure functions; the CRC table is built at compile time.
 */
#include "trcfile_codec.h"

#include <stdarg.h>
#include <stdio.h>

/* ---- CRC-32C ------------------------------------------------------------------------- */

/* Table for the reflected Castagnoli polynomial 0x82f63b78, generated at compile time by the
 * macro below so there is no init-order question. */
#define TRCFILE__C(c) (((c)&1) ? (((c) >> 1) ^ 0x82f63b78u) : ((c) >> 1))
#define TRCFILE__C8(c)                    \
	TRCFILE__C(TRCFILE__C(TRCFILE__C( \
		TRCFILE__C(TRCFILE__C(TRCFILE__C(TRCFILE__C(TRCFILE__C((uint32_t)(c)))))))))
#define TRCFILE__R4(i) \
	TRCFILE__C8(i), TRCFILE__C8((i) + 1), TRCFILE__C8((i) + 2), TRCFILE__C8((i) + 3)
#define TRCFILE__R16(i) \
	TRCFILE__R4(i), TRCFILE__R4((i) + 4), TRCFILE__R4((i) + 8), TRCFILE__R4((i) + 12)
#define TRCFILE__R64(i) \
	TRCFILE__R16(i), TRCFILE__R16((i) + 16), TRCFILE__R16((i) + 32), TRCFILE__R16((i) + 48)
static const uint32_t trcfile__crc_table[256] = {TRCFILE__R64(0), TRCFILE__R64(64),
						 TRCFILE__R64(128), TRCFILE__R64(192)};

uint32_t trcfile__crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--)
		crc = trcfile__crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- encoding ------------------------------------------------------------------------- */

static bool trcfile__string_ok(const char *s, uint32_t len)
{
	return len <= TRCFILE_MAX_STRING_BYTES && (len == 0 || s != NULL);
}

long trcfile__record_max_bytes(const struct trc_record *r)
{
	uint32_t len = 0;
	switch (r->type) {
	case TRC_REC_THREAD:
		if (!trcfile__string_ok(r->thread.name, r->thread.name_len))
			return -EINVAL;
		len = r->thread.name_len;
		break;
	case TRC_REC_PROCESS:
		if (!trcfile__string_ok(r->process.cmdline, r->process.cmdline_len))
			return -EINVAL;
		len = r->process.cmdline_len;
		break;
	case TRC_REC_NAME:
		if (!trcfile__string_ok(r->name.str, r->name.len))
			return -EINVAL;
		len = r->name.len;
		break;
	case TRC_REC_MODULE:
		if (!trcfile__string_ok(r->module.path, r->module.path_len) ||
		    r->module.build_id_len > TRC_BUILD_ID_MAX ||
		    (r->module.build_id_len && !r->module.build_id))
			return -EINVAL;
		len = r->module.path_len + r->module.build_id_len;
		break;
	case TRC_REC_NOTE:
		if (!trcfile__string_ok(r->note.text, r->note.len))
			return -EINVAL;
		len = r->note.len;
		break;
	case TRC_REC_STACK:
		if (r->stack.id == 0 || r->stack.n > TRC_STACK_DEPTH_MAX || !r->stack.frames ||
		    (r->stack.flags & ~TRC_STACK_FLAGS_ALL))
			return -EINVAL;
		len = r->stack.n * TRCFILE__VARINT_MAX_BYTES;
		break;
	default:
		if (r->type == TRC_REC_INVALID || r->type >= TRC_REC_TYPE_COUNT)
			return -EINVAL;
	}
	return (long)TRCFILE__FIXED_MAX_BYTES + (long)len;
}

static uint8_t *trcfile__put_string(uint8_t *p, const char *s, uint32_t len)
{
	p = trcfile__put_varint(p, len);
	if (len)
		memcpy(p, s, len);
	return p + len;
}

uint8_t *trcfile__encode(uint8_t *p, const struct trc_record *r, struct trcfile__coder *c)
{
	uint8_t t0 = (uint8_t)r->type;
	uint64_t d;
	if (r->ts_ns >= c->ts) {
		d = r->ts_ns - c->ts;
	} else {
		d = c->ts - r->ts_ns;
		t0 |= TRCFILE__NEG_DELTA;
	}
	c->ts = r->ts_ns;
	if (r->type == TRC_REC_MODULE && r->module.build_id_len)
		t0 |= TRCFILE__MODULE_HAS_BUILD_ID;
	if (r->type == TRC_REC_EXIT && r->exit.flags)
		t0 |= TRCFILE__EXIT_HAS_FLAGS;
	if ((r->type == TRC_REC_ALLOC && r->alloc.stack_id) ||
	    (r->type == TRC_REC_MAP && r->map.stack_id))
		t0 |= TRCFILE__ALLOC_HAS_STACK;
	*p++ = t0;
	p = trcfile__put_varint(p, d);

	switch (r->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		p = trcfile__put_varint(p, r->span.name_id);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		p = trcfile__put_varint(p, r->value.name_id);
		p = trcfile__put_varint(p, trcfile__zigzag(r->value.value));
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		p = trcfile__put_varint(p,
					trcfile__zigzag((int64_t)(r->alloc.addr - c->alloc_addr)));
		c->alloc_addr = r->alloc.addr;
		if (r->type == TRC_REC_ALLOC) {
			p = trcfile__put_varint(p, r->alloc.size);
			if (r->alloc.stack_id)
				p = trcfile__put_varint(p, r->alloc.stack_id);
		}
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		p = trcfile__put_varint(p, trcfile__zigzag((int64_t)(r->func.addr - c->func_addr)));
		p = trcfile__put_varint(
			p, trcfile__zigzag((int64_t)(r->func.call_site - r->func.addr)));
		c->func_addr = r->func.addr;
		break;
	case TRC_REC_RSS:
		p = trcfile__put_varint(p, r->rss.source);
		p = trcfile__put_varint(p, r->rss.flags);
		p = trcfile__put_varint(p, r->rss.pid);
		p = trcfile__put_varint(p, r->rss.rss_bytes);
		p = trcfile__put_varint(p, r->rss.buffers_bytes);
		p = trcfile__put_varint(p, r->rss.hwm_bytes);
		p = trcfile__put_varint(p, r->rss.anon_bytes);
		p = trcfile__put_varint(p, r->rss.file_bytes);
		p = trcfile__put_varint(p, r->rss.shmem_bytes);
		p = trcfile__put_varint(p, r->rss.rss_exact_bytes);
		p = trcfile__put_varint(p, r->rss.pss_bytes);
		p = trcfile__put_varint(p, r->rss.read_ns);
		break;
	case TRC_REC_LOST:
		p = trcfile__put_varint(p, r->lost.count);
		p = trcfile__put_varint(p, r->lost.reason);
		break;
	case TRC_REC_THREAD:
		p = trcfile__put_varint(p, r->thread.pid);
		p = trcfile__put_varint(p, r->thread.tid);
		p = trcfile__put_string(p, r->thread.name, r->thread.name_len);
		break;
	case TRC_REC_PROCESS:
		p = trcfile__put_varint(p, r->process.pid);
		p = trcfile__put_varint(p, r->process.ppid);
		p = trcfile__put_string(p, r->process.cmdline, r->process.cmdline_len);
		break;
	case TRC_REC_NAME:
		p = trcfile__put_varint(p, r->name.id);
		p = trcfile__put_string(p, r->name.str, r->name.len);
		break;
	case TRC_REC_MODULE:
		p = trcfile__put_varint(p, r->module.pid);
		p = trcfile__put_varint(p, r->module.start);
		p = trcfile__put_varint(p, r->module.end);
		p = trcfile__put_varint(p, r->module.offset);
		p = trcfile__put_string(p, r->module.path, r->module.path_len);
		if (r->module.build_id_len)
			p = trcfile__put_string(p, (const char *)r->module.build_id,
						r->module.build_id_len);
		break;
	case TRC_REC_NOTE:
		p = trcfile__put_string(p, r->note.text, r->note.len);
		break;
	case TRC_REC_EXIT:
		p = trcfile__put_varint(p, r->exit.pid);
		p = trcfile__put_varint(p, trcfile__zigzag(r->exit.status));
		p = trcfile__put_varint(p, r->exit.maxrss_bytes);
		p = trcfile__put_varint(p, r->exit.buffers_bytes);
		if (r->exit.flags)
			p = trcfile__put_varint(p, r->exit.flags);
		break;
	case TRC_REC_WAIT:
		p = trcfile__put_varint(p, r->wait.waits);
		p = trcfile__put_varint(p, r->wait.waited_ns);
		p = trcfile__put_varint(p, r->wait.max_ns);
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		p = trcfile__put_varint(p, trcfile__zigzag((int64_t)(r->map.addr - c->alloc_addr)));
		c->alloc_addr = r->map.addr;
		p = trcfile__put_varint(p, r->map.len);
		if (r->type == TRC_REC_MAP) {
			p = trcfile__put_varint(p, r->map.kind);
			if (r->map.stack_id)
				p = trcfile__put_varint(p, r->map.stack_id);
		}
		break;
	case TRC_REC_STACK: {
		p = trcfile__put_varint(p, r->stack.id);
		p = trcfile__put_varint(p, r->stack.flags);
		p = trcfile__put_varint(p, r->stack.n);
		uint64_t prev = 0;
		for (uint32_t i = 0; i < r->stack.n; i++) {
			p = trcfile__put_varint(
				p, trcfile__zigzag((int64_t)(r->stack.frames[i] - prev)));
			prev = r->stack.frames[i];
		}
		break;
	}
	}
	return p;
}

/* ---- checked decoding ------------------------------------------------------------------ */

struct trcfile__in {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t trcfile__in_u64(struct trcfile__in *in)
{
	uint64_t v = 0;
	if (in->bad)
		return 0;
	const uint8_t *q = trcfile__get_varint(in->p, in->end, &v);
	if (!q) {
		in->bad = true;
		return 0;
	}
	in->p = q;
	return v;
}

static uint32_t trcfile__in_u32(struct trcfile__in *in)
{
	uint64_t v = trcfile__in_u64(in);
	if (v > UINT32_MAX) {
		in->bad = true;
		return 0;
	}
	return (uint32_t)v;
}

static const char *trcfile__in_str(struct trcfile__in *in, uint32_t *len)
{
	uint32_t n = trcfile__in_u32(in);
	*len = 0;
	if (in->bad)
		return NULL;
	if (n > TRCFILE_MAX_STRING_BYTES || n > (size_t)(in->end - in->p)) {
		in->bad = true;
		return NULL;
	}
	const char *s = (const char *)in->p;
	in->p += n;
	*len = n;
	return s;
}

int trcfile__decode_slow(const uint8_t **pp, const uint8_t *end, struct trcfile__coder *c,
			 struct trc_record *r)
{
	struct trcfile__in in = {*pp, end, false};
	if (in.p >= end)
		return -EBADMSG;
	uint8_t t0 = *in.p++;
	uint32_t type = t0 & TRCFILE__TYPE_MASK;
	uint8_t reserved = t0 & TRCFILE__RESERVED_BITS;
	if (type == TRC_REC_MODULE)
		reserved &= (uint8_t)~TRCFILE__MODULE_HAS_BUILD_ID;
	if (type == TRC_REC_EXIT)
		reserved &= (uint8_t)~TRCFILE__EXIT_HAS_FLAGS;
	if (type == TRC_REC_ALLOC || type == TRC_REC_MAP)
		reserved &= (uint8_t)~TRCFILE__ALLOC_HAS_STACK;
	if (reserved || type == TRC_REC_INVALID || type >= TRC_REC_TYPE_COUNT)
		return -EBADMSG;
	uint64_t d = trcfile__in_u64(&in);
	uint64_t ts = (t0 & TRCFILE__NEG_DELTA) ? c->ts - d : c->ts + d;
	/* Coder state changes only once the whole record decoded. */
	uint64_t alloc_addr = c->alloc_addr, func_addr = c->func_addr;

	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		r->span.name_id = trcfile__in_u32(&in);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		r->value.name_id = trcfile__in_u32(&in);
		r->value.value = trcfile__unzigzag(trcfile__in_u64(&in));
		break;
	case TRC_REC_ALLOC:
	case TRC_REC_FREE:
		alloc_addr += (uint64_t)trcfile__unzigzag(trcfile__in_u64(&in));
		r->alloc.addr = alloc_addr;
		r->alloc.size = type == TRC_REC_ALLOC ? trcfile__in_u64(&in) : 0;
		r->alloc.stack_id = 0;
		if (t0 & TRCFILE__ALLOC_HAS_STACK) {
			r->alloc.stack_id = trcfile__in_u32(&in);
			if (r->alloc.stack_id == 0)
				in.bad = true; /* the bit says there is one */
		}
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		func_addr += (uint64_t)trcfile__unzigzag(trcfile__in_u64(&in));
		r->func.addr = func_addr;
		r->func.call_site = func_addr + (uint64_t)trcfile__unzigzag(trcfile__in_u64(&in));
		break;
	case TRC_REC_RSS:
		r->rss.source = trcfile__in_u32(&in);
		r->rss.flags = trcfile__in_u32(&in);
		r->rss.pid = trcfile__in_u32(&in);
		r->rss.rss_bytes = trcfile__in_u64(&in);
		r->rss.buffers_bytes = trcfile__in_u64(&in);
		r->rss.hwm_bytes = trcfile__in_u64(&in);
		r->rss.anon_bytes = trcfile__in_u64(&in);
		r->rss.file_bytes = trcfile__in_u64(&in);
		r->rss.shmem_bytes = trcfile__in_u64(&in);
		r->rss.rss_exact_bytes = trcfile__in_u64(&in);
		r->rss.pss_bytes = trcfile__in_u64(&in);
		r->rss.read_ns = trcfile__in_u64(&in);
		break;
	case TRC_REC_LOST:
		r->lost.count = trcfile__in_u64(&in);
		r->lost.reason = trcfile__in_u32(&in);
		break;
	case TRC_REC_THREAD:
		r->thread.pid = trcfile__in_u32(&in);
		r->thread.tid = trcfile__in_u32(&in);
		r->thread.name = trcfile__in_str(&in, &r->thread.name_len);
		break;
	case TRC_REC_PROCESS:
		r->process.pid = trcfile__in_u32(&in);
		r->process.ppid = trcfile__in_u32(&in);
		r->process.cmdline = trcfile__in_str(&in, &r->process.cmdline_len);
		break;
	case TRC_REC_NAME:
		r->name.id = trcfile__in_u32(&in);
		r->name.str = trcfile__in_str(&in, &r->name.len);
		break;
	case TRC_REC_MODULE:
		r->module.pid = trcfile__in_u32(&in);
		r->module.start = trcfile__in_u64(&in);
		r->module.end = trcfile__in_u64(&in);
		r->module.offset = trcfile__in_u64(&in);
		r->module.path = trcfile__in_str(&in, &r->module.path_len);
		r->module.build_id = NULL;
		r->module.build_id_len = 0;
		if (t0 & TRCFILE__MODULE_HAS_BUILD_ID) {
			r->module.build_id =
				(const uint8_t *)trcfile__in_str(&in, &r->module.build_id_len);
			if (r->module.build_id_len > TRC_BUILD_ID_MAX)
				in.bad = true;
		}
		break;
	case TRC_REC_NOTE:
		r->note.text = trcfile__in_str(&in, &r->note.len);
		break;
	case TRC_REC_EXIT: {
		r->exit.pid = trcfile__in_u32(&in);
		int64_t st = trcfile__unzigzag(trcfile__in_u64(&in));
		if (st < INT32_MIN || st > INT32_MAX)
			in.bad = true;
		r->exit.status = (int32_t)st;
		r->exit.maxrss_bytes = trcfile__in_u64(&in);
		r->exit.buffers_bytes = trcfile__in_u64(&in);
		r->exit.flags = 0;
		if (t0 & TRCFILE__EXIT_HAS_FLAGS) {
			/* Kept whole: flags this reader does not know are a newer writer's. */
			r->exit.flags = trcfile__in_u32(&in);
		}
		break;
	}
	case TRC_REC_WAIT:
		r->wait.waits = trcfile__in_u64(&in);
		r->wait.waited_ns = trcfile__in_u64(&in);
		r->wait.max_ns = trcfile__in_u64(&in);
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		alloc_addr += (uint64_t)trcfile__unzigzag(trcfile__in_u64(&in));
		r->map.addr = alloc_addr;
		r->map.len = trcfile__in_u64(&in);
		r->map.kind = 0;
		r->map.stack_id = 0;
		if (type == TRC_REC_MAP) {
			r->map.kind = trcfile__in_u32(&in);
			if (t0 & TRCFILE__ALLOC_HAS_STACK) {
				r->map.stack_id = trcfile__in_u32(&in);
				if (r->map.stack_id == 0)
					in.bad = true;
			}
		}
		break;
	case TRC_REC_STACK: {
		r->stack.id = trcfile__in_u32(&in);
		r->stack.flags = trcfile__in_u32(&in);
		r->stack.n = trcfile__in_u32(&in);
		r->stack.frames = NULL;
		r->stack.packed = in.p;
		if (r->stack.id == 0 || r->stack.n > TRC_STACK_DEPTH_MAX)
			in.bad = true;
		/* Every frame is read now, so that trcfile_stack_unpack cannot fail later. */
		for (uint32_t i = 0; i < r->stack.n && !in.bad; i++)
			(void)trcfile__in_u64(&in);
		r->stack.packed_len = in.bad ? 0 : (uint32_t)(in.p - r->stack.packed);
		break;
	}
	}
	if (in.bad)
		return -EBADMSG;
	c->ts = ts;
	c->alloc_addr = alloc_addr;
	c->func_addr = func_addr;
	r->type = type;
	r->ts_ns = ts;
	*pp = in.p;
	return 0;
}

/* ---- the fixed structures ------------------------------------------------------------ */

/* Lays image type T over the bytes at p (every member is a byte array: no alignment). */
#define TRCFILE__IMAGE(T, p) ((T *)(p))
#define TRCFILE__CIMAGE(T, p) ((const T *)(p))

/* What no chunk can hold, whether its header or its footer entry says so. NULL or why. */
static const char *trcfile__chunk_sizes_check(uint32_t count, uint32_t raw_bytes,
					      uint32_t comp_bytes)
{
	/* Every record takes at least 2 bytes (type and delta); a chunk has at least one. */
	if (count == 0 || raw_bytes < 2 || count > raw_bytes / 2)
		return "impossible record count";
	if (raw_bytes > TRCFILE_MAX_CHUNK_BYTES + TRCFILE_MAX_RECORD_BYTES)
		return "chunk larger than the format allows";
	if (comp_bytes == 0)
		return "empty compressed frame";
	return NULL;
}

/* ---- file header ---- */

size_t trcfile__header_size(const struct trcfile__file_hdr *h)
{
	return TRCFILE__HDR_FIXED_BYTES + (size_t)h->cmdline_len + h->host_len + h->tool_len +
	       (h->alloc_stacks ? TRCFILE__HDR_STACKS_BYTES : 0) + TRCFILE__HDR_CRC_BYTES;
}

void trcfile__header_put(uint8_t *p, const struct trcfile__file_hdr *h)
{
	struct trcfile__file_hdr_image *d = TRCFILE__IMAGE(struct trcfile__file_hdr_image, p);
	memset(p, 0, h->header_bytes);
	memcpy(d->magic, TRCFILE__MAGIC, sizeof(d->magic));
	TRCFILE__PUT(d->version_major, h->version_major);
	TRCFILE__PUT(d->version_minor, h->version_minor);
	TRCFILE__PUT(d->endian_mark, TRCFILE__ENDIAN_MARK);
	TRCFILE__PUT(d->header_bytes, h->header_bytes);
	TRCFILE__PUT(d->flags, h->flags);
	TRCFILE__PUT(d->pid, h->pid);
	TRCFILE__PUT(d->clock_source, h->clock_source);
	TRCFILE__PUT(d->tsc_hz, h->tsc_hz);
	TRCFILE__PUT(d->start_mono_ns, h->start_mono_ns);
	TRCFILE__PUT(d->start_realtime_ns, h->start_realtime_ns);
	TRCFILE__PUT(d->rss_interval_ns, h->rss_interval_ns);
	TRCFILE__PUT(d->rss_source, h->rss_source);
	TRCFILE__PUT(d->chunk_bytes, h->chunk_bytes);
	TRCFILE__PUT(d->buffer_bytes, h->buffer_bytes);
	TRCFILE__PUT(d->cmdline_len, h->cmdline_len);
	TRCFILE__PUT(d->host_len, h->host_len);
	TRCFILE__PUT(d->tool_len, h->tool_len);
	uint8_t *s = p + TRCFILE__HDR_FIXED_BYTES;
	if (h->cmdline_len)
		memcpy(s, h->cmdline, h->cmdline_len);
	s += h->cmdline_len;
	if (h->host_len)
		memcpy(s, h->host, h->host_len);
	s += h->host_len;
	if (h->tool_len)
		memcpy(s, h->tool, h->tool_len);
	s += h->tool_len;
	if (h->alloc_stacks) {
		trcfile__put32(s, h->alloc_stacks);
		trcfile__put32(s + 4, h->stack_depth);
		trcfile__put64(s + 8, h->sample_bytes);
	}
	uint32_t crc_at = h->header_bytes - TRCFILE__HDR_CRC_BYTES;
	trcfile__put_le(p + crc_at, TRCFILE__HDR_CRC_BYTES, trcfile__crc32c(0, p, crc_at));
}

__attribute__((format(printf, 4, 5))) static int trcfile__refuse(char *why, size_t why_len, int err,
								 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return err;
}

int trcfile__header_get(const uint8_t *p, size_t len, uint64_t file_bytes,
			struct trcfile__file_hdr *h, char *why, size_t why_len)
{
	const struct trcfile__file_hdr_image *d =
		TRCFILE__CIMAGE(struct trcfile__file_hdr_image, p);
	memset(h, 0, sizeof(*h));
	if (memcmp(d->magic, TRCFILE__MAGIC, sizeof(d->magic)) != 0)
		return trcfile__refuse(why, why_len, -EBADMSG, "not a trc trace (bad magic)");
	TRCFILE__GET(h->version_major, d->version_major);
	TRCFILE__GET(h->version_minor, d->version_minor);
	if (h->version_major > TRCFILE_VERSION_MAJOR)
		return trcfile__refuse(why, why_len, -EPROTONOSUPPORT,
				       "trace format version %u.%u is newer than this reader "
				       "supports (%u.x): use a newer trace-dump",
				       h->version_major, h->version_minor, TRCFILE_VERSION_MAJOR);
	if (h->version_major < 1)
		return trcfile__refuse(why, why_len, -EBADMSG, "unknown trace format version %u.%u",
				       h->version_major, h->version_minor);
	uint32_t mark;
	TRCFILE__GET(mark, d->endian_mark);
	if (mark == TRCFILE__ENDIAN_MARK_SWAPPED)
		return trcfile__refuse(
			why, why_len, -EBADMSG,
			"trace was written big-endian, which this reader does not support");
	if (mark != TRCFILE__ENDIAN_MARK)
		return trcfile__refuse(why, why_len, -EBADMSG,
				       "bad endianness mark 0x%08x (damaged header)", mark);
	TRCFILE__GET(h->header_bytes, d->header_bytes);
	if (h->header_bytes < TRCFILE__HDR_FIXED_BYTES + TRCFILE__HDR_CRC_BYTES ||
	    h->header_bytes > TRCFILE__HDR_MAX_BYTES || h->header_bytes > file_bytes)
		return trcfile__refuse(why, why_len, -EBADMSG,
				       "impossible header size %u (file has %llu bytes)",
				       h->header_bytes, (unsigned long long)file_bytes);
	if (len < h->header_bytes)
		return 1;
	uint32_t crc_at = h->header_bytes - TRCFILE__HDR_CRC_BYTES;
	if (trcfile__get_le(p + crc_at, TRCFILE__HDR_CRC_BYTES) != trcfile__crc32c(0, p, crc_at))
		return trcfile__refuse(why, why_len, -EBADMSG,
				       "header checksum mismatch (damaged header)");
	TRCFILE__GET(h->flags, d->flags);
	TRCFILE__GET(h->pid, d->pid);
	TRCFILE__GET(h->clock_source, d->clock_source);
	TRCFILE__GET(h->tsc_hz, d->tsc_hz);
	TRCFILE__GET(h->start_mono_ns, d->start_mono_ns);
	TRCFILE__GET(h->start_realtime_ns, d->start_realtime_ns);
	TRCFILE__GET(h->rss_interval_ns, d->rss_interval_ns);
	TRCFILE__GET(h->rss_source, d->rss_source);
	TRCFILE__GET(h->chunk_bytes, d->chunk_bytes);
	TRCFILE__GET(h->buffer_bytes, d->buffer_bytes);
	TRCFILE__GET(h->cmdline_len, d->cmdline_len);
	TRCFILE__GET(h->host_len, d->host_len);
	TRCFILE__GET(h->tool_len, d->tool_len);
	if (h->chunk_bytes < TRCFILE_MIN_CHUNK_BYTES || h->chunk_bytes > TRCFILE_MAX_CHUNK_BYTES)
		return trcfile__refuse(why, why_len, -EBADMSG,
				       "impossible chunk size %u in the header", h->chunk_bytes);
	if (h->cmdline_len > TRCFILE_MAX_STRING_BYTES || h->host_len > TRCFILE_MAX_STRING_BYTES ||
	    h->tool_len > TRCFILE_MAX_STRING_BYTES || trcfile__header_size(h) > h->header_bytes)
		return trcfile__refuse(why, why_len, -EBADMSG,
				       "header string lengths exceed the header");
	const char *s = (const char *)p + TRCFILE__HDR_FIXED_BYTES;
	h->cmdline = s;
	h->host = s + h->cmdline_len;
	h->tool = h->host + h->host_len;
	/* 1.4: the allocation stacks part, when the header holds it (older files end here; a
	 * newer minor version may append more after it). */
	const uint8_t *x = (const uint8_t *)h->tool + h->tool_len;
	if (h->version_minor >= 4 &&
	    (size_t)(x - p) + TRCFILE__HDR_STACKS_BYTES + TRCFILE__HDR_CRC_BYTES <= h->header_bytes) {
		h->alloc_stacks = trcfile__get32(x);
		h->stack_depth = trcfile__get32(x + 4);
		h->sample_bytes = trcfile__get64(x + 8);
		if (h->alloc_stacks > TRCFILE_ALLOC_STACKS_SAMPLED ||
		    h->stack_depth > TRC_STACK_DEPTH_MAX ||
		    (h->alloc_stacks == TRCFILE_ALLOC_STACKS_SAMPLED) != (h->sample_bytes != 0))
			return trcfile__refuse(why, why_len, -EBADMSG,
					       "impossible allocation stacks settings in the header");
	}
	return 0;
}

/* ---- chunk header ---- */

void trcfile__chunk_hdr_put(uint8_t *p, const struct trcfile__chunk_hdr *h)
{
	struct trcfile__chunk_hdr_image *d = TRCFILE__IMAGE(struct trcfile__chunk_hdr_image, p);
	memset(p, 0, sizeof(*d));
	TRCFILE__PUT(d->magic, TRCFILE__CHUNK_MAGIC);
	TRCFILE__PUT(d->stream_id, h->stream_id);
	TRCFILE__PUT(d->seq, h->seq);
	TRCFILE__PUT(d->kind, h->kind);
	TRCFILE__PUT(d->pid, h->pid);
	TRCFILE__PUT(d->tid, h->tid);
	TRCFILE__PUT(d->first_ts, h->first_ts);
	TRCFILE__PUT(d->last_ts, h->last_ts);
	TRCFILE__PUT(d->count, h->count);
	TRCFILE__PUT(d->raw_bytes, h->raw_bytes);
	TRCFILE__PUT(d->comp_bytes, h->comp_bytes);
	TRCFILE__PUT(d->flags, h->flags);
	TRCFILE__PUT(d->payload_crc, h->payload_crc);
	TRCFILE__PUT(d->crc, trcfile__crc32c(0, p, offsetof(struct trcfile__chunk_hdr_image, crc)));
}

int trcfile__chunk_hdr_get(const uint8_t *p, struct trcfile__chunk_hdr *h, const char **why)
{
	const struct trcfile__chunk_hdr_image *d =
		TRCFILE__CIMAGE(struct trcfile__chunk_hdr_image, p);
	uint32_t magic, crc;
	TRCFILE__GET(magic, d->magic);
	TRCFILE__GET(crc, d->crc);
	if (magic != TRCFILE__CHUNK_MAGIC) {
		*why = "no chunk magic";
		return -EBADMSG;
	}
	if (crc != trcfile__crc32c(0, p, offsetof(struct trcfile__chunk_hdr_image, crc))) {
		*why = "chunk header checksum mismatch";
		return -EBADMSG;
	}
	TRCFILE__GET(h->stream_id, d->stream_id);
	TRCFILE__GET(h->seq, d->seq);
	TRCFILE__GET(h->kind, d->kind);
	TRCFILE__GET(h->pid, d->pid);
	TRCFILE__GET(h->tid, d->tid);
	TRCFILE__GET(h->first_ts, d->first_ts);
	TRCFILE__GET(h->last_ts, d->last_ts);
	TRCFILE__GET(h->count, d->count);
	TRCFILE__GET(h->raw_bytes, d->raw_bytes);
	TRCFILE__GET(h->comp_bytes, d->comp_bytes);
	TRCFILE__GET(h->flags, d->flags);
	TRCFILE__GET(h->payload_crc, d->payload_crc);
	if (h->kind < TRC_STREAM_THREAD || h->kind > TRC_STREAM_META) {
		*why = "unknown stream kind";
		return -EBADMSG;
	}
	if ((h->flags & ~TRCFILE__CHUNK_FLAGS_KNOWN) ||
	    (!(h->flags & TRCFILE__CHUNK_STORED) && h->payload_crc != 0)) {
		*why = "reserved chunk header bits set";
		return -EBADMSG;
	}
	if ((h->flags & TRCFILE__CHUNK_STORED) && h->comp_bytes != h->raw_bytes) {
		*why = "stored chunk whose payload is not its records' size";
		return -EBADMSG;
	}
	*why = trcfile__chunk_sizes_check(h->count, h->raw_bytes, h->comp_bytes);
	return *why ? -EBADMSG : 0;
}

/* ---- footer ---- */

void trcfile__footer_put(uint8_t *p, const struct trcfile__footer *f)
{
	struct trcfile__footer_image *d = TRCFILE__IMAGE(struct trcfile__footer_image, p);
	TRCFILE__PUT(d->magic, TRCFILE__FOOTER_MAGIC);
	TRCFILE__PUT(d->stream_count, f->stream_count);
	TRCFILE__PUT(d->chunk_count, f->chunk_count);
}

bool trcfile__is_footer(const uint8_t *p)
{
	const struct trcfile__footer_image *d = TRCFILE__CIMAGE(struct trcfile__footer_image, p);
	uint32_t magic;
	TRCFILE__GET(magic, d->magic);
	return magic == TRCFILE__FOOTER_MAGIC;
}

int trcfile__footer_get(const uint8_t *p, const struct trcfile__trailer *t,
			struct trcfile__footer *f, const char **why)
{
	uint64_t bytes = t->footer_bytes;
	*why = NULL;
	if (bytes < TRCFILE__FOOTER_FIXED_BYTES)
		*why = "footer counts do not match its size";
	else if (trcfile__crc32c(0, p, (size_t)bytes) != t->footer_crc)
		*why = "footer checksum mismatch";
	if (*why)
		return -EBADMSG;
	return trcfile__footer_fixed_get(p, bytes, f, why);
}

int trcfile__footer_fixed_get(const uint8_t *p, uint64_t bytes, struct trcfile__footer *f,
			      const char **why)
{
	const struct trcfile__footer_image *d = TRCFILE__CIMAGE(struct trcfile__footer_image, p);
	uint32_t magic;
	*why = NULL;
	TRCFILE__GET(magic, d->magic);
	TRCFILE__GET(f->stream_count, d->stream_count);
	TRCFILE__GET(f->chunk_count, d->chunk_count);
	/* Each count first on its own, so their sum cannot overflow. */
	if (magic != TRCFILE__FOOTER_MAGIC)
		*why = "bad footer magic";
	else if (f->chunk_count > bytes / TRCFILE__FOOTER_CHUNK_BYTES ||
		 f->stream_count > bytes / TRCFILE__FOOTER_STREAM_BYTES ||
		 trcfile__footer_bytes(f->stream_count, f->chunk_count) != bytes)
		*why = "footer counts do not match its size";
	return *why ? -EBADMSG : 0;
}

void trcfile__footer_stream_put(uint8_t *p, const struct trcfile__footer_stream *s)
{
	struct trcfile__footer_stream_image *d =
		TRCFILE__IMAGE(struct trcfile__footer_stream_image, p);
	memset(p, 0, sizeof(*d));
	TRCFILE__PUT(d->id, s->id);
	TRCFILE__PUT(d->kind, s->kind);
	TRCFILE__PUT(d->pid, s->pid);
	TRCFILE__PUT(d->tid, s->tid);
	TRCFILE__PUT(d->chunks, s->chunks);
	TRCFILE__PUT(d->records, s->records);
}

int trcfile__footer_stream_get(const uint8_t *p, struct trcfile__footer_stream *s, const char **why)
{
	const struct trcfile__footer_stream_image *d =
		TRCFILE__CIMAGE(struct trcfile__footer_stream_image, p);
	TRCFILE__GET(s->id, d->id);
	TRCFILE__GET(s->kind, d->kind);
	TRCFILE__GET(s->pid, d->pid);
	TRCFILE__GET(s->tid, d->tid);
	TRCFILE__GET(s->chunks, d->chunks);
	TRCFILE__GET(s->records, d->records);
	/* The reserved field is not checked: 1.x readers reject reserved chunk fields only. */
	if (s->kind < TRC_STREAM_THREAD || s->kind > TRC_STREAM_META) {
		*why = "unknown stream kind in the footer";
		return -EBADMSG;
	}
	*why = NULL;
	return 0;
}

void trcfile__footer_chunk_put(uint8_t *p, const struct trcfile__footer_chunk *c)
{
	struct trcfile__footer_chunk_image *d =
		TRCFILE__IMAGE(struct trcfile__footer_chunk_image, p);
	memset(p, 0, sizeof(*d));
	TRCFILE__PUT(d->offset, c->offset);
	TRCFILE__PUT(d->stream_id, c->stream_id);
	TRCFILE__PUT(d->seq, c->seq);
	TRCFILE__PUT(d->first_ts, c->first_ts);
	TRCFILE__PUT(d->last_ts, c->last_ts);
	TRCFILE__PUT(d->count, c->count);
	TRCFILE__PUT(d->raw_bytes, c->raw_bytes);
	TRCFILE__PUT(d->comp_bytes, c->comp_bytes);
}

int trcfile__footer_chunk_get(const uint8_t *p, struct trcfile__footer_chunk *c, const char **why)
{
	const struct trcfile__footer_chunk_image *d =
		TRCFILE__CIMAGE(struct trcfile__footer_chunk_image, p);
	TRCFILE__GET(c->offset, d->offset);
	TRCFILE__GET(c->stream_id, d->stream_id);
	TRCFILE__GET(c->seq, d->seq);
	TRCFILE__GET(c->first_ts, d->first_ts);
	TRCFILE__GET(c->last_ts, d->last_ts);
	TRCFILE__GET(c->count, d->count);
	TRCFILE__GET(c->raw_bytes, d->raw_bytes);
	TRCFILE__GET(c->comp_bytes, d->comp_bytes);
	*why = trcfile__chunk_sizes_check(c->count, c->raw_bytes, c->comp_bytes);
	return *why ? -EBADMSG : 0;
}

/* ---- trailer ---- */

void trcfile__trailer_put(uint8_t *p, const struct trcfile__trailer *t)
{
	struct trcfile__trailer_image *d = TRCFILE__IMAGE(struct trcfile__trailer_image, p);
	TRCFILE__PUT(d->footer_offset, t->footer_offset);
	TRCFILE__PUT(d->footer_bytes, t->footer_bytes);
	TRCFILE__PUT(d->footer_crc, t->footer_crc);
	TRCFILE__PUT(d->trailer_crc,
		     trcfile__crc32c(0, p, offsetof(struct trcfile__trailer_image, trailer_crc)));
	memcpy(d->magic, TRCFILE__TRAILER_MAGIC, sizeof(d->magic));
}

int trcfile__trailer_get(const uint8_t *p, struct trcfile__trailer *t, const char **why)
{
	const struct trcfile__trailer_image *d = TRCFILE__CIMAGE(struct trcfile__trailer_image, p);
	if (memcmp(d->magic, TRCFILE__TRAILER_MAGIC, sizeof(d->magic)) != 0) {
		*why = "no footer";
		return -ENOENT;
	}
	uint32_t crc;
	TRCFILE__GET(crc, d->trailer_crc);
	if (crc != trcfile__crc32c(0, p, offsetof(struct trcfile__trailer_image, trailer_crc))) {
		*why = "trailer checksum mismatch";
		return -EBADMSG;
	}
	TRCFILE__GET(t->footer_offset, d->footer_offset);
	TRCFILE__GET(t->footer_bytes, d->footer_bytes);
	TRCFILE__GET(t->footer_crc, d->footer_crc);
	*why = NULL;
	return 0;
}

int trcfile_stack_unpack(const struct trc_record *r, uint64_t *out, uint32_t cap)
{
	if (r->type != TRC_REC_STACK || r->stack.n > cap)
		return -EINVAL;
	if (r->stack.frames) {
		memcpy(out, r->stack.frames, r->stack.n * sizeof(*out));
		return (int)r->stack.n;
	}
	struct trcfile__in in = {r->stack.packed, r->stack.packed + r->stack.packed_len, false};
	uint64_t prev = 0;
	for (uint32_t i = 0; i < r->stack.n; i++) {
		prev += (uint64_t)trcfile__unzigzag(trcfile__in_u64(&in));
		out[i] = prev;
	}
	return in.bad ? -EBADMSG : (int)r->stack.n;
}
