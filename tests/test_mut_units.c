/* test_mut_units.c - exact values of small parts that the wider suites check only loosely
 * (tests/mutants/LIST names the bugs each test is for).
 *
 * Purpose: the histogram's quantile rank (ceil(q * n), 1-based) on values that have buckets of
 * their own, where a quantile one rank off is a different number; the ring's pending bytes,
 * exact while healthy and 0 (never a garbage distance) when the shared positions are corrupt;
 * statm text with a second line after its one line is not a statm file; protobuf nested
 * messages of 1-, 2- and 3-byte lengths, byte for byte; Thrift compact list headers of 14, 15
 * and 16 elements (the short form holds 0..14).
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "pb_wire.h"
#include "ring.h"
#include "rss_parse.h"
#include "thrift_compact.h"

/* mutants hist-quantile-rank, hist-quantile-ceil: values 1..10, one each (exact buckets below
 * HIST_SUB): the quantile q is the value of rank ceil(10 q). */
Test(mut_units, histogram_quantile_ranks_exact, .timeout = 60)
{
	struct hist *h = NULL;
	struct hist_hot hot = {0};
	uint64_t budget = 1u << 20;
	for (uint64_t v = 1; v <= 10; v++)
		cr_assert_eq(hist_count(&h, &hot, v, &budget), 0);
	static const struct {
		double q;
		uint64_t want;
	} cases[] = {{0.1, 1}, {0.5, 5}, {0.55, 6}, {0.9, 9}, {0.91, 10}, {1.0, 10}, {0.01, 1}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(hist_quantile(h, cases[i].q, 1, 10), cases[i].want,
			     "q %.2f: %llu, not %llu", cases[i].q,
			     (unsigned long long)hist_quantile(h, cases[i].q, 1, 10),
			     (unsigned long long)cases[i].want);
	hist_free(h);
}

/* mutant ring-pending-unclamped: what the consumer has left to read, from the shared write
 * position it cannot trust. */
Test(mut_units, ring_pending_bytes_exact_and_clamped, .timeout = 60)
{
	enum { CAP = 256 };
	struct ring_ctl *ctl = aligned_alloc(RING_CACHELINE, sizeof(*ctl));
	uint8_t *data = malloc(CAP);
	cr_assert(ctl && data);
	memset(data, 0, CAP);
	struct ring_producer p;
	struct ring_consumer c;
	cr_assert_eq(ring_ctl_init(ctl, CAP, 0), 0);
	cr_assert_eq(ring_producer_attach(&p, ctl, data, CAP), 0);
	cr_assert_eq(ring_consumer_attach(&c, ctl, data, CAP), 0);
	static const uint8_t payload[40];
	cr_assert_eq(ring_consumer_pending_bytes(&c), 0);
	cr_assert_eq(ring_push_sp(&p, 1, payload, sizeof(payload)), 0);
	uint64_t one = ring_consumer_pending_bytes(&c);
	cr_assert(one >= sizeof(payload) + 8 && one % 8 == 0, "one record: %llu bytes",
		  (unsigned long long)one);
	cr_assert_eq(ring_push_sp(&p, 1, payload, sizeof(payload)), 0);
	cr_assert_eq(ring_consumer_pending_bytes(&c), 2 * one);
	/* A write position a capacity and more ahead of the reader: corrupt, nothing pending. */
	atomic_store(&ctl->write_pos, atomic_load(&ctl->read_pos) + 16 * CAP);
	cr_assert_eq(ring_consumer_pending_bytes(&c), 0);
	free(ctl);
	free(data);
}

/* mutant sampler-statm-trailing: /proc/PID/statm is one line; text after it is refused. */
Test(mut_units, statm_one_line_only, .timeout = 60)
{
	static const char ok[] = "10 4 2 1 0 3 0\n";
	struct rss_statm st = {0};
	cr_assert_eq(rss_parse_statm(ok, sizeof(ok) - 1, 4096, &st), 0);
	cr_assert_eq(st.size_bytes, 10 * 4096);
	cr_assert_eq(st.resident_bytes, 4 * 4096);
	cr_assert_eq(st.shared_bytes, 2 * 4096);
	static const char *const bad[] = {"10 4 2 1 0 3 0\n7\n", "10 4 2 1 0 3 0\n\n",
					  "10 4 2 1 0 3 0\n10 4 2 1 0 3 0\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rss_statm junk = {0};
		cr_assert_eq(rss_parse_statm(bad[i], strlen(bad[i]), 4096, &junk), -EINVAL,
			     "accepted: \"%s\"", bad[i]);
	}
}

/* mutant pb-close-long: a nested message's length takes as many varint bytes as it needs (the
 * content moves up to make room). Message 1 { bytes 2 = n bytes of 0x5a }. */
Test(mut_units, protobuf_nested_lengths_byte_exact, .timeout = 60)
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

/* mutant thrift-list-short: a list header's size nibble 15 means "size follows", so 15
 * elements take the long form (0xf0 | type, then the size). */
Test(mut_units, thrift_list_header_at_14_15_16, .timeout = 60)
{
	static const struct {
		uint32_t n;
		uint8_t hdr[2];
		size_t hdr_len;
	} cases[] = {{14, {0xe5}, 1}, {15, {0xf5, 0x0f}, 2}, {16, {0xf5, 0x10}, 2}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct thrift_enc e;
		thrift_enc_init(&e);
		thrift_field_list(&e, 1, THRIFT_I32, cases[i].n);
		for (uint32_t k = 0; k < cases[i].n; k++)
			thrift_elem_i32(&e, 1); /* zigzag 2 */
		cr_assert_eq(thrift_enc_error(&e), 0);
		/* field 1, type list (0x19), the header, then n bytes of 0x02 */
		size_t want_len = 1 + cases[i].hdr_len + cases[i].n;
		cr_assert_eq(e.len, want_len, "n %u: %zu bytes", cases[i].n, e.len);
		cr_assert_eq(e.buf[0], 0x19);
		cr_assert_eq(memcmp(e.buf + 1, cases[i].hdr, cases[i].hdr_len), 0,
			     "n %u: header %02x %02x", cases[i].n, e.buf[1], e.buf[2]);
		for (uint32_t k = 0; k < cases[i].n; k++)
			cr_assert_eq(e.buf[1 + cases[i].hdr_len + k], 0x02);
		thrift_enc_free(&e);
	}
}
