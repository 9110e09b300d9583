/* test_summary_fast.c - the summary's figures on traces big enough for its fast path.
 *
 * Purpose: summary_pass.c decodes a chunk's records with the codec's fast decoder except the
 * last TRCFILE__FAST_MARGIN (160) bytes of each chunk, which take the checked decoder. The
 * small traces of test_trcfile.c fit in that margin, so they test the slow path only; every
 * real trace takes the fast one. Here the counters are written in 1 MiB chunks (the
 * writer's default) with their extremes far from a chunk's end, and the expected figures are
 * exact. Also live bytes when a FREE was lost and the address is allocated again: the old
 * block is gone (the allocator handed its address out again), so its bytes are no longer
 * live and must not be counted twice.
 */
#include "summary.h"
#include "test_trcfile_util.h"

static struct trcfile_reader *sf_open(const char *path)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	int err = trcfile_reader_open(path, &r, msg, sizeof(msg));
	cr_assert_eq(err, 0, "reader_open: %d %s", err, msg);
	return r;
}

static void sf_name(struct tu_stream *meta, uint32_t id, const char *text)
{
	struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000000000ull};
	r.name.id = id;
	r.name.str = text;
	r.name.len = (uint32_t)strlen(text);
	tu_add(meta, &r);
}

static const struct summary_name *sf_find(const struct summary *s, const char *name)
{
	for (size_t i = 0; i < s->n_names; i++)
		if (!strcmp(s->names[i].name, name))
			return &s->names[i];
	cr_assert_fail("no name %s in the summary", name);
	return NULL;
}

/* Two counters of 200 000 values each, on two threads, in one or two 1 MiB chunks per
 * stream: "pos" only positive values (a minimum that started at 0 would show 0), its
 * extremes in the middle of the stream; "neg" around zero. Min, max, last exact. */
Test(summary_fast, counter_range_on_big_chunks, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *meta = tu_plan_stream(&p, TRC_STREAM_META, 4242, 0);
	sf_name(meta, 1, "pos");
	sf_name(meta, 2, "neg");
	const size_t n = 200000;
	for (uint32_t k = 0; k < 2; k++) {
		struct tu_stream *th = tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242 + k);
		for (size_t i = 0; i < n; i++) {
			struct trc_record r = {.type = TRC_REC_COUNTER,
					       .ts_ns = 1000000000ull + 10 * i + k};
			r.value.name_id = 1 + k;
			int64_t v = (int64_t)((i * 7919) % 10007); /* 0..10006, spread */
			if (k == 0) {
				v += 500; /* 500..10506 */
				if (i == n / 2)
					v = 123; /* the minimum, mid-stream */
				if (i == n / 3)
					v = 99999; /* the maximum */
			} else {
				v -= 5000; /* -5000..5006 */
				if (i == n / 4)
					v = -77777;
				if (i == 2 * n / 3)
					v = 88888;
			}
			if (i == n - 1)
				v = k == 0 ? 4321 : -4321; /* the last value */
			r.value.value = v;
			tu_add(th, &r);
		}
	}
	/* batch 1000: the chunks of the two threads interleave in the file */
	cr_assert_eq(tu_write_plan(path, &p, NULL, 1000), 0);
	struct trcfile_reader *rd = sf_open(path);
	/* The fast path needs chunks much longer than its 160-byte margin. */
	const struct trcfile_stream_info *si = trcfile_reader_stream(rd, 1);
	cr_assert_eq(si->records, n);
	cr_assert_lt(si->chunks, 10, "chunks %lu", (unsigned long)si->chunks);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.n_names, 2);
	const struct summary_name *pos = sf_find(&s, "pos"), *neg = sf_find(&s, "neg");
	cr_assert_eq(pos->counters, n);
	cr_assert_eq(pos->counter_min, 123, "min %ld", (long)pos->counter_min);
	cr_assert_eq(pos->counter_max, 99999, "max %ld", (long)pos->counter_max);
	cr_assert_eq(pos->counter_last, 4321, "last %ld", (long)pos->counter_last);
	cr_assert_eq(neg->counters, n);
	cr_assert_eq(neg->counter_min, -77777, "min %ld", (long)neg->counter_min);
	cr_assert_eq(neg->counter_max, 88888, "max %ld", (long)neg->counter_max);
	cr_assert_eq(neg->counter_last, -4321, "last %ld", (long)neg->counter_last);
	cr_assert_eq(s.per_type[TRC_REC_COUNTER], 2 * n);
	cr_assert_eq(s.events_recorded, 2 * n);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}

/* An address allocated again without a FREE between (the free was lost): the new block
 * replaces the old one, whose bytes leave the live total. Thread A allocates 50 000 blocks
 * of 100 bytes, then allocates the same addresses again with 40 bytes and no free between,
 * then frees the first 10 000. Exact figures:
 *   peak  = 50 000 x 100 (after the first round; the second only shrinks the total)
 *   end   = 40 000 x 40
 *   freed = 10 000 x 40 (a free takes the size of the block it frees, the newer one) */
Test(summary_fast, live_bytes_after_a_lost_free, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	struct tu_plan p = {0};
	struct tu_stream *th = tu_plan_stream(&p, TRC_STREAM_THREAD, 4242, 4242);
	const uint64_t n = 50000, nfree = 10000;
	uint64_t ts = 1000000000ull;
	for (int round = 0; round < 2; round++)
		for (uint64_t i = 0; i < n; i++) {
			struct trc_record r = {.type = TRC_REC_ALLOC, .ts_ns = ts++};
			r.alloc.addr = 0x10000000ull + 128 * i;
			r.alloc.size = round == 0 ? 100 : 40;
			tu_add(th, &r);
		}
	for (uint64_t i = 0; i < nfree; i++) {
		struct trc_record r = {.type = TRC_REC_FREE, .ts_ns = ts++};
		r.alloc.addr = 0x10000000ull + 128 * i;
		tu_add(th, &r);
	}
	cr_assert_eq(tu_write_plan(path, &p, NULL, 1000), 0);
	struct trcfile_reader *rd = sf_open(path);
	struct summary s;
	cr_assert_eq(summary_compute(rd, &s), 0, "%s", trcfile_reader_errmsg(rd));
	cr_assert_eq(s.allocs, 2 * n);
	cr_assert_eq(s.alloc_bytes, n * 100 + n * 40);
	cr_assert_eq(s.frees, nfree);
	cr_assert_eq(s.live_peak_bytes, n * 100, "peak %lu", (unsigned long)s.live_peak_bytes);
	cr_assert_eq(s.live_end_bytes, (n - nfree) * 40, "end %lu",
		     (unsigned long)s.live_end_bytes);
	cr_assert_eq(s.free_bytes, nfree * 40, "freed %lu", (unsigned long)s.free_bytes);
	cr_assert_eq(s.frees_unknown, 0);
	cr_assert_not(s.live_approximate);
	summary_free(&s);
	trcfile_reader_close(rd);
	tu_plan_free(&p);
	tu_rm_rf(dir);
}
