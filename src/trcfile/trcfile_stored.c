/* trcfile_stored.c - stored chunks: the payload check and the fast CRC-32C (trcfile_stored.h). */
#include "trcfile_stored.h"

#include <string.h>

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t trcfile__crc32c_hw(uint32_t crc, const uint8_t *p,
								      size_t len)
{
	uint64_t c = ~crc & 0xffffffffu;
	while (len && ((uintptr_t)p & 7u)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	/* Three independent streams would hide the instruction's latency; one is already far
	 * above what the writer needs (a chunk's CRC costs well under its write). */
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#endif

uint32_t trcfile__crc32c_fast(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	static int have = -1; /* racy but idempotent: every thread computes the same value */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	if (h)
		return trcfile__crc32c_hw(crc, buf, len);
#endif
	return trcfile__crc32c(crc, buf, len);
}

const char *trcfile__stored_check(const uint8_t *p, const struct trcfile__chunk_hdr *h)
{
	if (h->comp_bytes != h->raw_bytes)
		return "stored chunk whose payload is not its records' size";
	if (trcfile__crc32c_fast(0, p, h->comp_bytes) != h->payload_crc)
		return "stored chunk payload checksum mismatch";
	return NULL;
}
