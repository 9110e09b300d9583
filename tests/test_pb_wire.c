/* test_pb_wire.c - the protobuf encoder the Perfetto and pprof exporters write with
 * (src/export/pb_wire.c), byte for byte.
 *
 * Purpose: a nested message's length takes as many varint bytes as it needs, at the 1/2 and
 * 2/3-byte boundaries, with the content moved up to make room. The exporters' output as a
 * whole is decoded by protoc in test_perfetto and test_pprof.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "pb_wire.h"

/* A nested message's length takes as many varint bytes as it needs (the
 * content moves up to make room). Message 1 { bytes 2 = n bytes of 0x5a }. */
Test(pb_wire, protobuf_nested_lengths_byte_exact, .timeout = 60)
{
	static const size_t ns[] = {3, 124, 125, 200, 16380, 20000};
	static uint8_t data[20000];
	memset(data, 0x5a, sizeof(data));
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		size_t n = ns[i];
		struct pb_buf b = {0};
		size_t mark = pb_open(&b, 1);
		pb_bytes(&b, 2, data, n);
		pb_close(&b, mark);
		cr_assert_eq(b.err, 0);
		uint8_t want[20010];
		size_t k = 0, inner = 1 + pb_varint_size(n) + n;
		want[k++] = 0x0a; /* field 1, length-delimited */
		for (uint64_t v = inner;; v >>= 7) {
			want[k++] = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
			if (v < 0x80)
				break;
		}
		want[k++] = 0x12; /* field 2, length-delimited */
		for (uint64_t v = n;; v >>= 7) {
			want[k++] = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
			if (v < 0x80)
				break;
		}
		memcpy(want + k, data, n);
		k += n;
		cr_assert_eq(b.len, k, "n %zu: %zu bytes, want %zu", n, b.len, k);
		cr_assert_eq(memcmp(b.p, want, k), 0, "n %zu: bytes differ", n);
		pb_buf_free(&b);
	}
}
