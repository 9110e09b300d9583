/* test_hostile_keys.c - the analysis tables against keys crafted to collide (issue 12 item 6).
 *
 * Purpose: functions (src/analysis/functions.c), the symbol cache (symbols.c) and the flame
 * trie (flame.c) index keys wider than 64 bits through u64index. Under a forced seed the
 * tests craft function addresses whose hash is j << 32 for every j: every key on one home
 * slot, which unbounded linear probing made quadratic. The tables must keep every run of
 * occupied slots within the bound (u64index_worst_run), give exact results, and trace-dump
 * (seed forced through TRC_TEST_HASH_SEED) must take no more than a few times as long on the
 * crafted file as on a normal one of the same size. Every exporter that hashes keys a trace
 * chooses is here: pprof's frames and stack nodes, perfetto's interned names, and the live
 * allocation tables (allocmap) of chrome, perfetto, pprof, parquet and memory; and pprof
 * against the fixed hash it once had, with a large input and a generous timeout.
 *
 * Threads: single-threaded (Criterion runs the tests in worker processes).
 */
#include <criterion/criterion.h>
#include <sys/wait.h>
#include <time.h>

#include "flame.h"
#include "functions.h"
#include "memory.h"
#include "parquet_writer.h"
#include "symbols.h"
#include "test_trcfile_util.h"
#include "u64map.h"

#define HK_SEED 0x452821e638d01377ull
#define HK_PID 100u
#define HK_RUN_BOUND 256u /* U64MAP__MAX_RUN in u64map.c */

/* The odd multiplier both mixes use, inverted mod 2^64 (Newton). */
static uint64_t hk_inv_mul(void)
{
	uint64_t inv = 0xbf58476d1ce4e5b9ull;
	for (int i = 0; i < 5; i++)
		inv *= 2 - 0xbf58476d1ce4e5b9ull * inv;
	return inv;
}

/* The key k with u64map_mix(k, seed) == y: the inverse of the mix (xorshift 32, multiply,
 * xorshift 29), then the seed. */
static uint64_t hk_unmix(uint64_t y, uint64_t seed)
{
	uint64_t x = y ^ (y >> 32);
	x *= hk_inv_mul();
	x = x ^ (x >> 29) ^ (x >> 58);
	return x ^ seed;
}

enum hk_target {
	HK_NORMAL,
	HK_FUNCTIONS,
	HK_FLAME,
	HK_SPAN_NAMES,
	HK_PPROF,
	HK_PPROF_FIXED,
	HK_PERFETTO,
	HK_ALLOCS,
	HK_ALLOCS_NORMAL
};

/* The function address whose frame key (kind 2, pid HK_PID) hashed to y in the fixed,
 * unseeded mix trace-dump pprof's frame table used (mix(a, b) = a * C1 ^ (b + C2), xorshift
 * 31, multiply, xorshift 29): anyone could craft these. */
static uint64_t hk_pprof_fixed_addr(uint64_t y)
{
	uint64_t x = y ^ (y >> 29) ^ (y >> 58);
	x *= hk_inv_mul();
	x = x ^ (x >> 31) ^ (x >> 62);
	uint64_t a = 2ull << 32 | HK_PID;
	return (x ^ a * 0x9e3779b97f4a7c15ull) - 0x632be59bd9b4e019ull;
}

/* The address of perfetto's j-th crafted function: its interning key (2 << 62 | the
 * address's low 62 bits) is u64map_mix-ed to c << 32 under HK_SEED, c the j-th value for which
 * the inverse has those top bits. *c carries the search from one j to the next. */
static uint64_t hk_perfetto_addr(uint64_t *c)
{
	for (;;) {
		uint64_t k = hk_unmix(++*c << 32, HK_SEED);
		if (k >> 62 == 2)
			return k;
	}
}

/* Function j's address: ordinary, or crafted so that its key hashes to (j + 1) << 32 under
 * HK_SEED in functions.c and symbols.c (mix(addr ^ mix(pid))) or, as a child of the flame
 * trie's root, in flame.c (mix(key ^ mix(parent << 32 | pid << 2 | kind)), kind 2 a
 * function). */
static uint64_t hk_addr(enum hk_target t, uint32_t j)
{
	uint64_t y = (uint64_t)(j + 1) << 32;
	switch (t) {
	case HK_FUNCTIONS:
		return hk_unmix(y, HK_SEED) ^ u64map_mix(HK_PID, HK_SEED);
	case HK_FLAME:
		return hk_unmix(y, HK_SEED) ^ u64map_mix((uint64_t)HK_PID << 2 | 2u, HK_SEED);
	case HK_PPROF: /* pprof's frames: mix(addr ^ mix(2 << 32 | pid)) */
		return hk_unmix(y, HK_SEED) ^ u64map_mix(2ull << 32 | HK_PID, HK_SEED);
	case HK_PPROF_FIXED:
		return hk_pprof_fixed_addr(y);
	default:
		return 0x400000ull + 16ull * j;
	}
}

/* Allocation j's address crafted against allocmap (src/analysis/allocmap.c) under HK_SEED:
 * an address above 2^47 goes to its fallback store, a u64map keyed by mix(addr ^ mix(pid)),
 * and this key is the one that map puts on the home slot of (j + 1) << 32. */
static uint64_t hk_alloc_addr(uint32_t j)
{
	uint64_t key = hk_unmix((uint64_t)(j + 1) << 32, HK_SEED);
	return hk_unmix(key, HK_SEED) ^ u64map_mix(HK_PID, HK_SEED);
}

/* A trace of n functions of process HK_PID, each called once at top level for 10 ns and
 * allocating 64 bytes (at a distinct ordinary address) inside; for HK_ALLOCS, n allocations
 * of 64 bytes at top level at hk_alloc_addr (HK_ALLOCS_NORMAL: ordinary addresses), between
 * two RSS samples (1 then 2 MiB) so that memory follows them. */
static void hk_write(const char *path, enum hk_target t, uint32_t n)
{
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, HK_PID, 0);
	struct tu_stream *th = tu_plan_stream(&p, TRC_STREAM_THREAD, HK_PID, HK_PID + 1);
	uint64_t c = 0;
	for (uint32_t j = 0; j < n; j++) {
		struct trc_record a = {.type = TRC_REC_ALLOC, .ts_ns = 1000005 + 100ull * j};
		a.alloc.addr = 0x7f0000000000ull + 64ull * j;
		a.alloc.size = 64;
		if (t == HK_ALLOCS || t == HK_ALLOCS_NORMAL) {
			if (t == HK_ALLOCS)
				a.alloc.addr = hk_alloc_addr(j);
			tu_add(th, &a);
			continue;
		}
		struct trc_record r = {.type = TRC_REC_FUNC_ENTER, .ts_ns = 1000000 + 100ull * j};
		r.func.addr = t == HK_PERFETTO ? hk_perfetto_addr(&c) : hk_addr(t, j);
		r.func.call_site = 0x1234;
		tu_add(th, &r);
		tu_add(th, &a);
		r.type = TRC_REC_FUNC_EXIT;
		r.ts_ns += 10;
		tu_add(th, &r);
	}
	if (t == HK_ALLOCS || t == HK_ALLOCS_NORMAL) {
		struct tu_stream *rss = tu_plan_stream(&p, TRC_STREAM_RSS, HK_PID, 0);
		for (uint64_t i = 0; i < 2; i++) {
			struct trc_record r = {.type = TRC_REC_RSS,
					       .ts_ns = i ? 1000010 + 100ull * n : 1000000};
			r.rss.source = TRC_RSS_STATM;
			r.rss.pid = HK_PID;
			r.rss.rss_bytes = (i + 1) << 20;
			tu_add(rss, &r);
		}
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 2), 0);
	tu_plan_free(&p);
}

static struct trcfile_reader *hk_open(const char *path)
{
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s", msg);
	return r;
}

static const uint32_t hk_n = 40000;

static void hk_warn(void *ctx, const char *msg)
{
	(void)ctx;
	cr_log_warn("%s", msg);
}

/* functions.c and the symbol cache it names functions through: n crafted (pid, address)
 * keys give n rows of one 10 ns call each, and no run past the bound. */
Test(hostile_keys, function_table_and_symbol_cache_stay_bounded, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/fn.trc", dir);
	hk_write(path, HK_FUNCTIONS, hk_n);
	struct trcfile_reader *r = hk_open(path);
	u64map_test_force_seed(HK_SEED);
	struct func_table *t = func_table_new();
	struct sym_resolver *syms = sym_resolver_new(r, hk_warn, NULL);
	u64map_test_force_seed(0);
	cr_assert(t && syms);
	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	unsigned sidx;
	int k;
	while ((k = trcfile_iter_next(it, &rec, &sidx)) == 1)
		cr_assert_eq(func_table_add(t, sidx, trcfile_reader_stream(r, sidx), &rec), 0);
	cr_assert_eq(k, 0);
	trcfile_iter_free(it);
	cr_assert_eq(func_table_finish(t, r, syms, FUNC_SORT_NAME), 0);
	const struct func_row *rows;
	size_t n = func_table_rows(t, &rows);
	cr_assert_eq(n, hk_n);
	for (size_t i = 0; i < n; i++)
		if (rows[i].calls != 1 || rows[i].incl.total_ns != 10 ||
		    rows[i].self.total_ns != 10)
			cr_assert_fail("row %zu (%s): %llu calls, %llu ns", i, rows[i].name,
				       (unsigned long long)rows[i].calls,
				       (unsigned long long)rows[i].incl.total_ns);
	/* every address resolves to its own name: the cache answers for the key it was asked */
	char want[32], buf[64];
	for (uint32_t j = 0; j < hk_n; j += 997) {
		snprintf(want, sizeof(want), "0x%llx",
			 (unsigned long long)hk_addr(HK_FUNCTIONS, j));
		cr_assert_str_eq(
			sym_display(syms, HK_PID, hk_addr(HK_FUNCTIONS, j), buf, sizeof(buf)),
			want);
	}
	cr_assert_leq(u64index_worst_run(), HK_RUN_BOUND, "a run of %zu slots was made",
		      u64index_worst_run());
	func_table_free(t);
	sym_resolver_free(syms);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

static void hk_count(void *ctx, const char *stack, size_t len, uint64_t weight)
{
	(void)stack;
	(void)len;
	uint64_t *c = ctx;
	c[0]++;
	c[1] += weight;
	c[2] |= weight != 10;
}

/* flame.c: n crafted children of the root fold to n stacks of weight 10 each. */
Test(hostile_keys, flame_trie_stays_bounded, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/flame.trc", dir);
	hk_write(path, HK_FLAME, hk_n);
	struct trcfile_reader *r = hk_open(path);
	u64map_test_force_seed(HK_SEED);
	struct flame *f = flame_new(FLAME_TIME);
	u64map_test_force_seed(0);
	cr_assert_not_null(f);
	struct trcfile_iter *it = trcfile_iter_new(r);
	struct trc_record rec;
	unsigned sidx;
	int k;
	while ((k = trcfile_iter_next(it, &rec, &sidx)) == 1)
		cr_assert_eq(flame_add(f, sidx, trcfile_reader_stream(r, sidx), &rec), 0);
	cr_assert_eq(k, 0);
	trcfile_iter_free(it);
	uint64_t c[3] = {0};
	cr_assert_eq(flame_fold(f, r, NULL, hk_count, c), 0);
	cr_assert_eq(c[0], hk_n, "%llu stacks", (unsigned long long)c[0]);
	cr_assert_eq(c[1], 10ull * hk_n);
	cr_assert_eq(c[2], 0, "every stack weighs 10 ns");
	cr_assert_leq(u64index_worst_run(), HK_RUN_BOUND, "a run of %zu slots was made",
		      u64index_worst_run());
	flame_free(f);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* Span name j: 16 bytes (no NUL) whose u64map_hash_bytes under HK_SEED is (j + 1) << 32: the
 * first word chosen, the second solving the last step, retried until no byte is 0. */
static void hk_name(char out[17], uint32_t j)
{
	uint64_t y = (uint64_t)(j + 1) << 32;
	for (uint64_t salt = 0;; salt++) {
		uint64_t v = (uint64_t)j | salt << 28, w1 = 0x8080808080808080ull; /* no 0 byte */
		for (int b = 0; b < 8; b++)
			w1 |= ((v >> (7 * b)) & 0x7f) << (8 * b);
		uint64_t h1 = u64map_mix(u64map_mix(16, HK_SEED) ^ w1, HK_SEED);
		uint64_t w2 = hk_unmix(y, HK_SEED) ^ h1;
		bool zero = false;
		for (int b = 0; b < 8; b++)
			zero |= ((w1 >> (8 * b)) & 0xff) == 0 || ((w2 >> (8 * b)) & 0xff) == 0;
		if (zero)
			continue;
		memcpy(out, &w1, 8);
		memcpy(out + 8, &w2, 8);
		out[16] = 0;
		return;
	}
}

/* A trace of n spans of process HK_PID, one after the other, each with one 64-byte
 * allocation, named by 16-byte names crafted to collide (hk_name) or ordinary ones, between two
 * RSS samples (1 then 2 MiB): memory's sites and the Parquet dictionaries get n names. */
static void hk_write_spans(const char *path, bool crafted, uint32_t n)
{
	struct tu_plan p = {0};
	tu_plan_stream(&p, TRC_STREAM_META, HK_PID, 0);
	tu_plan_stream(&p, TRC_STREAM_THREAD, HK_PID, HK_PID);
	tu_plan_stream(&p, TRC_STREAM_RSS, HK_PID, 0);
	struct tu_stream *meta = &p.streams[0], *th = &p.streams[1], *rss = &p.streams[2];
	char(*names)[17] = calloc(n, sizeof(*names));
	cr_assert_not_null(names);
	for (uint32_t j = 0; j < n; j++) {
		if (crafted) {
			hk_name(names[j], j);
			cr_assert_eq(u64map_hash_bytes(names[j], 16, HK_SEED), (uint64_t)(j + 1)
										       << 32);
		} else {
			snprintf(names[j], sizeof(names[j]), "span-%011u", j);
		}
		struct trc_record r = {.type = TRC_REC_NAME, .ts_ns = 1000};
		r.name.id = j + 1;
		r.name.str = names[j];
		r.name.len = 16;
		tu_add(meta, &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_BEGIN, .ts_ns = 2000 + 10ull * j};
		r.span.name_id = j + 1;
		tu_add(th, &r);
		r = (struct trc_record){.type = TRC_REC_ALLOC, .ts_ns = 2001 + 10ull * j};
		r.alloc.addr = 0x10000 + 64ull * j;
		r.alloc.size = 64;
		tu_add(th, &r);
		r = (struct trc_record){.type = TRC_REC_SPAN_END, .ts_ns = 2002 + 10ull * j};
		r.span.name_id = j + 1;
		tu_add(th, &r);
	}
	for (uint64_t i = 0; i < 2; i++) {
		struct trc_record r = {.type = TRC_REC_RSS, .ts_ns = i ? 1000000 : 1500};
		r.rss.source = TRC_RSS_STATM;
		r.rss.pid = HK_PID;
		r.rss.rss_bytes = (i + 1) << 20;
		tu_add(rss, &r);
	}
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(path, &p, &o, 2), 0);
	tu_plan_free(&p);
	free(names);
}

/* memory.c interns its sites' names (here span names crafted to collide): one interval whose
 * n sites hold 64 bytes each. */
Test(hostile_keys, memory_site_names_stay_bounded, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/mem.trc", dir);
	const uint32_t n = 20000;
	hk_write_spans(path, true, n);
	struct trcfile_reader *r = hk_open(path);
	struct memory_opts mo = {.stack = false, .sites = 0};
	struct memory_report rep = {0};
	u64map_test_force_seed(HK_SEED);
	cr_assert_eq(memory_analyze(r, NULL, &mo, &rep), 0);
	u64map_test_force_seed(0);
	cr_assert_eq(rep.n_procs, 1);
	cr_assert_eq(rep.procs[0].n_intervals, 1);
	const struct memory_interval *iv = &rep.procs[0].intervals[0];
	cr_assert_eq(iv->n_sites, n, "%zu sites", iv->n_sites);
	for (size_t i = 0; i < iv->n_sites; i++)
		if (iv->sites[i].bytes != 64 || iv->sites[i].allocs != 1 ||
		    strlen(iv->sites[i].name) != 16)
			cr_assert_fail("site %zu: %llu bytes", i,
				       (unsigned long long)iv->sites[i].bytes);
	cr_assert_leq(u64index_worst_run(), HK_RUN_BOUND, "a run of %zu slots was made",
		      u64index_worst_run());
	memory_report_free(&rep);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* The Parquet writer's dictionary (src/export/parquet_writer.c) interns a column's strings:
 * n crafted names, each written twice, make a dictionary of n entries, each in the file once
 * (the statistics add the smallest and the largest), with no run past the bound. */
Test(hostile_keys, parquet_dictionary_stays_bounded, .timeout = 120)
{
	const char *dir = tu_tmpdir();
	char path[300];
	snprintf(path, sizeof(path), "%s/t.parquet", dir);
	const uint32_t n = 20000;
	char(*names)[17] = calloc(n, sizeof(*names));
	cr_assert_not_null(names);
	for (uint32_t j = 0; j < n; j++)
		hk_name(names[j], j);
	static const struct pq_col_def cols[] = {{"s", PQ_COL_STRING, false}};
	struct pq_writer_opts o = {.uncompressed = true, .created_by = "t"};
	int err = 0;
	u64map_test_force_seed(HK_SEED);
	struct pq_writer *w = pq_writer_open(path, cols, 1, &o, &err);
	u64map_test_force_seed(0);
	cr_assert_not_null(w, "%d", err);
	for (int round = 0; round < 2; round++)
		for (uint32_t j = 0; j < n; j++) {
			cr_assert_eq(pq_put_str(w, 0, names[j], 16), 0);
			cr_assert_eq(pq_end_row(w), 0);
		}
	cr_assert_eq(pq_writer_close(w), 0);
	cr_assert_leq(u64index_worst_run(), HK_RUN_BOUND, "a run of %zu slots was made",
		      u64index_worst_run());
	size_t len = 0;
	uint8_t *file = tu_read_file(path, &len);
	size_t total = 0;
	for (uint32_t j = 0; j < n; j++) {
		size_t k = 0;
		for (const uint8_t *p = file;
		     (p = memmem(p, len - (size_t)(p - file), names[j], 16)); p++)
			k++;
		if (k < 1)
			cr_assert_fail("name %u is not in the file", j);
		total += k;
	}
	cr_assert_leq(total, n + 4, "%zu copies of %u names: the dictionary repeats some", total,
		      n);
	free(file);
	free(names);
	tu_rm_rf(dir);
}

/* ---- end to end: trace-dump on crafted files, seed forced through the environment -------- */

/* Seconds `trace-dump args trc` takes (stdout kept in dir/out), which must exit 0. */
static double hk_dump_seconds(const char *dir, const char *args, const char *trc)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd),
		 "TRC_TEST_HASH_SEED=%llx timeout 100 '%s/bin/trace-dump' %s '%s' >'%s/out' 2>&1",
		 (unsigned long long)HK_SEED, tu_build(), args, trc, dir);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int st = system(cmd);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %x", cmd, st);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

/* Lines of dir/out. */
static size_t hk_out_lines(const char *dir)
{
	char *s = tu_slurp_text(dir, "out");
	size_t n = 0;
	for (const char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

/* The summary (its function table) and the flame graph of 60000 crafted functions, memory's
 * sites and the Parquet dictionaries of 60000 crafted span names, take no more than a few
 * times a normal file's time: without the bound they take seconds to minutes (quadratic). The
 * medians of three runs each, the normal runs interleaved with the crafted ones so that machine
 * load hits both alike. */
static void hk_compare(const char *command, enum hk_target t, size_t want_lines)
{
	const char *dir = tu_tmpdir();
	char normal[300], crafted[300], args[600];
	snprintf(normal, sizeof(normal), "%s/normal.trc", dir);
	snprintf(crafted, sizeof(crafted), "%s/crafted.trc", dir);
	/* an output file or directory (parquet, perfetto, pprof): '@' in command is dir */
	size_t k = 0;
	for (const char *c = command; *c && k + strlen(dir) + 1 < sizeof(args); c++)
		if (*c == '@')
			k += (size_t)snprintf(args + k, sizeof(args) - k, "%s", dir);
		else
			args[k++] = *c;
	args[k] = 0;
	const uint32_t n = 60000;
	if (t == HK_SPAN_NAMES) {
		hk_write_spans(normal, false, n);
		hk_write_spans(crafted, true, n);
	} else {
		hk_write(normal, t == HK_ALLOCS ? HK_ALLOCS_NORMAL : HK_NORMAL, n);
		hk_write(crafted, t, n);
	}
	/* Under a sanitizer the times are the sanitizer's: one run each looks for memory errors
	 * in both paths and for a crafted run far past the normal one; the plain tier times. */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	const int runs = tier && *tier ? 1 : 3;
	double tn[3], tc[3];
	for (int i = 0; i < runs; i++) {
		tn[i] = hk_dump_seconds(dir, args, normal);
		tc[i] = hk_dump_seconds(dir, args, crafted);
		if (want_lines)
			cr_assert_eq(hk_out_lines(dir), want_lines);
		if (tc[i] > 10 * tn[i] + 2) /* far past: no need for the medians */
			cr_assert_fail("%s: crafted %.3f s, normal %.3f s", args, tc[i], tn[i]);
	}
	if (runs < 3) {
		tu_rm_rf(dir);
		return;
	}
	for (int i = 0; i < 2; i++)
		for (int j = i + 1; j < 3; j++) {
			double x;
			if (tn[j] < tn[i])
				x = tn[i], tn[i] = tn[j], tn[j] = x;
			if (tc[j] < tc[i])
				x = tc[i], tc[i] = tc[j], tc[j] = x;
		}
	cr_log_info("%s: crafted %.3f s, normal %.3f s (medians of 3)", args, tc[1], tn[1]);
	cr_expect_leq(tc[1], 4 * tn[1] + 0.5, "%s: crafted %.3f s, normal %.3f s (medians)", args,
		      tc[1], tn[1]);
	tu_rm_rf(dir);
}

Test(hostile_keys, summary_of_crafted_functions_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("summary --json", HK_FUNCTIONS, 0);
}

Test(hostile_keys, flame_of_crafted_functions_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("flame", HK_FLAME, 60000);
}

Test(hostile_keys, memory_of_crafted_span_names_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("memory --json --sites 0", HK_SPAN_NAMES, 0);
}

Test(hostile_keys, parquet_of_crafted_span_names_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("parquet -o '@/pq'", HK_SPAN_NAMES, 0);
}

/* pprof's frames (function addresses) and stack nodes, crafted under the forced seed. */
Test(hostile_keys, pprof_of_crafted_functions_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("pprof --alloc -o '@/out.pb.gz'", HK_PPROF, 0);
}

/* Chrome names each function through the symbol cache (the same keys as the summary's). */
Test(hostile_keys, chrome_of_crafted_functions_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("chrome", HK_FUNCTIONS, 0);
}

/* Perfetto interns each function's name per sequence (a u64map of 2 << 62 | address). */
Test(hostile_keys, perfetto_of_crafted_functions_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("perfetto -o '@/out.pftrace'", HK_PERFETTO, 0);
}

/* The live tables of chrome, perfetto, pprof and parquet (allocmap) and memory's, against
 * allocation addresses crafted under the forced seed. */
Test(hostile_keys, chrome_of_crafted_allocations_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("chrome", HK_ALLOCS, 0);
}

Test(hostile_keys, perfetto_of_crafted_allocations_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("perfetto -o '@/out.pftrace'", HK_ALLOCS, 0);
}

Test(hostile_keys, pprof_of_crafted_allocations_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("pprof --live-at end -o '@/out.pb.gz'", HK_ALLOCS, 0);
}

Test(hostile_keys, parquet_of_crafted_allocations_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("parquet -o '@/pq'", HK_ALLOCS, 0);
}

Test(hostile_keys, memory_of_crafted_allocations_costs_no_more_than_normal, .timeout = 300)
{
	hk_compare("memory --json", HK_ALLOCS, 0);
}

/* Function addresses crafted against the fixed hash pprof's frame table had (no seed, no
 * bound): every frame on one home slot. 300 000 of them cost on the order of 10^11 probes with
 * it, well past the minute given here; with the seeded, bounded index the export is linear,
 * and its profile holds every function with its 64 bytes (decoded by protoc). */
Test(hostile_keys, pprof_of_functions_crafted_against_a_fixed_hash_is_linear, .timeout = 200)
{
	const char *dir = tu_tmpdir();
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/crafted.trc", dir);
	const uint32_t n = 300000;
	hk_write(trc, HK_PPROF_FIXED, n);
	/* they do share one home slot in the old hash: their hashes are (j + 1) << 32 */
	cr_assert_neq(hk_pprof_fixed_addr(1ull << 32), hk_pprof_fixed_addr(2ull << 32));
	int rc = tu_sh("timeout 60 '%s/bin/trace-dump' pprof --alloc '%s' -o '%s/out.pb.gz' "
		       "2>'%s/err'",
		       tu_build(), trc, dir, dir);
	cr_assert_eq(rc, 0, "status %d (124: past the minute): %s", rc, tu_slurp_text(dir, "err"));
	rc = tu_sh("gzip -dc '%s/out.pb.gz' | protoc --decode=perftools.profiles.Profile -Itests "
		   "tests/profile.proto | grep -c '^function {' > '%s/nf'",
		   dir, dir);
	cr_assert_eq(rc, 0);
	char *nf = tu_slurp_text(dir, "nf");
	cr_expect_eq(strtoul(nf, NULL, 10), n + 1, "functions: %s (n and the thread's)", nf);
	free(nf);
	tu_rm_rf(dir);
}
