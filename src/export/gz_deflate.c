/* gz_deflate.c - gzip in memory with zlib (see gz_deflate.h). Threads: none shared. */
#include "gz_deflate.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

int gz_deflate(const void *in, size_t len, uint8_t **out, size_t *out_len)
{
	/* One deflate call into a buffer of deflateBound: zlib's counters are 32 bits. */
	if (len > (1u << 30))
		return -EFBIG;
	z_stream z = {0};
	/* 15 window bits + 16: the gzip header and trailer instead of zlib's. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	size_t cap = deflateBound(&z, (uLong)len) + 64;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	int rc = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*out_len = (size_t)(z.next_out - buf);
	return 0;
}
