/* gz_deflate.h - gzip-compress a buffer in memory (zlib), for formats that must be gzip.
 *
 * Purpose: pprof's profile.proto is read gzip-compressed ("On-disk, the serialized proto must
 * be gzip-compressed", google/pprof proto/profile.proto); zstd, the project's compressor,
 * does not do gzip, so this is zlib's deflate with the gzip wrapper (RFC 1952), level 6.
 * Threads: reentrant; no globals.
 */
#ifndef TRC_GZ_DEFLATE_H
#define TRC_GZ_DEFLATE_H

#include <stddef.h>
#include <stdint.h>

/* Compresses in[0..len) into a new buffer (*out, *out_len; free() it). 0 or -ENOMEM/-EIO. */
int gz_deflate(const void *in, size_t len, uint8_t **out, size_t *out_len);

#endif /* TRC_GZ_DEFLATE_H */
