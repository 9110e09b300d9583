/* trcfile_codec.c - record encoding and decoding, CRC-32C, header and chunk-header layout.
 *
 * Purpose: the out-of-line half of trcfile_codec.h (see there and src/FORMAT.md). The hot
 * event types decode inline in the header; this file has the rest, the checked slow path
 * used near the end of a chunk, and the encoder.
 *
 * Threads: pure functions; the CRC table is built at compile time.
 */
#include "trcfile_codec.h"

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
		if (r->type == TRC_REC_ALLOC)
			p = trcfile__put_varint(p, r->alloc.size);
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
		break;
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

/* ---- chunk header ----------------------------------------------------------------------- */

void trcfile__chunk_hdr_put(uint8_t *p, const struct trcfile__chunk_hdr *h)
{
	memset(p, 0, TRCFILE__CHUNK_HDR_BYTES);
	trcfile__put32(p + 0, TRCFILE__CHUNK_MAGIC);
	trcfile__put32(p + 4, h->stream_id);
	trcfile__put32(p + 8, h->seq);
	trcfile__put32(p + 12, h->kind);
	trcfile__put32(p + 16, h->pid);
	trcfile__put32(p + 20, h->tid);
	trcfile__put64(p + 24, h->first_ts);
	trcfile__put64(p + 32, h->last_ts);
	trcfile__put32(p + 40, h->count);
	trcfile__put32(p + 44, h->raw_bytes);
	trcfile__put32(p + 48, h->comp_bytes);
	trcfile__put32(p + 52, h->flags);
	trcfile__put32(p + 60, trcfile__crc32c(0, p, 60));
}

int trcfile__chunk_hdr_get(const uint8_t *p, struct trcfile__chunk_hdr *h, const char **why)
{
	if (trcfile__get32(p) != TRCFILE__CHUNK_MAGIC) {
		*why = "no chunk magic";
		return -EBADMSG;
	}
	if (trcfile__get32(p + 60) != trcfile__crc32c(0, p, 60)) {
		*why = "chunk header checksum mismatch";
		return -EBADMSG;
	}
	h->stream_id = trcfile__get32(p + 4);
	h->seq = trcfile__get32(p + 8);
	h->kind = trcfile__get32(p + 12);
	h->pid = trcfile__get32(p + 16);
	h->tid = trcfile__get32(p + 20);
	h->first_ts = trcfile__get64(p + 24);
	h->last_ts = trcfile__get64(p + 32);
	h->count = trcfile__get32(p + 40);
	h->raw_bytes = trcfile__get32(p + 44);
	h->comp_bytes = trcfile__get32(p + 48);
	h->flags = trcfile__get32(p + 52);
	if (h->kind < TRC_STREAM_THREAD || h->kind > TRC_STREAM_META) {
		*why = "unknown stream kind";
		return -EBADMSG;
	}
	if (h->flags != 0 || trcfile__get32(p + 56) != 0) {
		*why = "reserved chunk header bits set";
		return -EBADMSG;
	}
	/* Every record takes at least 2 bytes (type and delta); a chunk has at least one. */
	if (h->count == 0 || h->raw_bytes < 2 || h->count > h->raw_bytes / 2) {
		*why = "impossible record count";
		return -EBADMSG;
	}
	if (h->raw_bytes > TRCFILE_MAX_CHUNK_BYTES + TRCFILE_MAX_RECORD_BYTES) {
		*why = "chunk larger than the format allows";
		return -EBADMSG;
	}
	if (h->comp_bytes == 0) {
		*why = "empty compressed frame";
		return -EBADMSG;
	}
	return 0;
}

/* ---- file header ------------------------------------------------------------------------- */

size_t trcfile__header_bytes(const struct trcfile_header_info *h, uint32_t host_len,
			     uint32_t tool_len)
{
	return TRCFILE__HDR_FIXED_BYTES + (size_t)h->cmdline_len + host_len + tool_len + 4;
}

void trcfile__header_put(uint8_t *p, size_t bytes, const struct trcfile_header_info *h,
			 uint32_t chunk_bytes, uint32_t host_len, uint32_t tool_len)
{
	memset(p, 0, bytes);
	memcpy(p, TRCFILE__MAGIC, 8);
	trcfile__put16(p + 8, TRCFILE_VERSION_MAJOR);
	trcfile__put16(p + 10, TRCFILE_VERSION_MINOR);
	trcfile__put32(p + 12, TRCFILE__ENDIAN_MARK);
	trcfile__put32(p + 16, (uint32_t)bytes);
	trcfile__put32(p + 20, 0); /* flags */
	trcfile__put32(p + 24, h->pid);
	trcfile__put32(p + 28, h->clock_source);
	trcfile__put64(p + 32, h->tsc_hz);
	trcfile__put64(p + 40, h->start_mono_ns);
	trcfile__put64(p + 48, h->start_realtime_ns);
	trcfile__put64(p + 56, h->rss_interval_ns);
	trcfile__put32(p + 64, h->rss_source);
	trcfile__put32(p + 68, chunk_bytes);
	trcfile__put64(p + 72, h->buffer_bytes);
	trcfile__put32(p + 80, h->cmdline_len);
	trcfile__put32(p + 84, host_len);
	trcfile__put32(p + 88, tool_len);
	uint8_t *s = p + TRCFILE__HDR_FIXED_BYTES;
	if (h->cmdline_len)
		memcpy(s, h->cmdline, h->cmdline_len);
	s += h->cmdline_len;
	if (host_len)
		memcpy(s, h->host, host_len);
	s += host_len;
	if (tool_len)
		memcpy(s, h->tool_version, tool_len);
	trcfile__put32(p + bytes - 4, trcfile__crc32c(0, p, bytes - 4));
}
