/* test_export_api.c - the exporters called as the library (src/export/export.h).
 *
 * Purpose: each export_* runs on a small trace written here (test_trcfile_util.h) into a
 * memory sink; the tests check what the bytes say (decoded here, exact values), that they are
 * the bytes `trace-dump` writes for the same trace, and the failure paths: a sink that fails
 * (ENOSPC) and a trace the export cannot take come back as -errno with a message, never an
 * exit.
 * Threads: each test is one process (Criterion); trace-dump runs as a child.
 */
#include <criterion/criterion.h>
#include <zlib.h>

#include "cli_version.h"
#include "export.h"
#include "export_spans.h"
#include "test_trcfile_util.h"

/* ---- sinks ------------------------------------------------------------------------------ */

struct te_mem {
	uint8_t *p;
	size_t len, cap;
	unsigned writes;
};

static int te_mem_write(void *ctx, const void *p, size_t n)
{
	struct te_mem *m = ctx;
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		m->p = realloc(m->p, m->cap);
		cr_assert_not_null(m->p);
	}
	memcpy(m->p + m->len, p, n);
	m->len += n;
	m->writes++;
	return 0;
}

/* Takes `room` bytes, then fails as a full disk does. */
struct te_full {
	size_t room, taken;
};

static int te_full_write(void *ctx, const void *p, size_t n)
{
	struct te_full *f = ctx;
	(void)p;
	if (f->taken + n > f->room)
		return -ENOSPC;
	f->taken += n;
	return 0;
}

/* ---- traces ----------------------------------------------------------------------------- */

/* dir/in.trc: the small fixed trace (test_trcfile_util.h), opened. */
static struct trcfile_reader *te_small(const char *dir)
{
	char trc[300];
	snprintf(trc, sizeof(trc), "%s/in.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	cr_assert_eq(tu_write_plan(trc, &p, &o, 3), 0);
	tu_plan_free(&p);
	struct trcfile_reader *r = NULL;
	char msg[256];
	cr_assert_eq(trcfile_reader_open(trc, &r, msg, sizeof(msg)), 0, "%s", msg);
	return r;
}

/* The file dir/name, whole. */
static uint8_t *te_slurp(const char *dir, const char *name, size_t *len)
{
	char path[400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	uint8_t *b = NULL;
	size_t n = 0, cap = 0, k;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			b = realloc(b, cap);
			cr_assert_not_null(b);
		}
		k = fread(b + n, 1, cap - n, f);
		n += k;
	} while (k);
	fclose(f);
	*len = n;
	return b;
}

/* ---- pprof ------------------------------------------------------------------------------ */

/* gunzip of m (whole). */
static uint8_t *te_gunzip(const struct te_mem *m, size_t *len)
{
	z_stream z = {0};
	cr_assert_eq(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	cr_assert_not_null(out);
	z.next_in = m->p;
	z.avail_in = (uInt)m->len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END, "not one whole gzip stream");
	*len = z.total_out;
	inflateEnd(&z);
	return out;
}

static uint64_t te_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	for (unsigned s = 0; *p < end && s < 64; s += 7) {
		uint8_t c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			return v;
	}
	cr_assert_fail("bad varint");
	return 0;
}

/* The profile's samples summed: objects, bytes (Profile.sample = 2, Sample.value = 2,
 * packed), and the number of samples. */
static void te_pprof_totals(const uint8_t *b, size_t n, int64_t *objs, int64_t *bytes,
			    unsigned *samples)
{
	const uint8_t *p = b, *end = b + n;
	*objs = *bytes = 0;
	*samples = 0;
	while (p < end) {
		uint64_t tag = te_varint(&p, end);
		if ((tag & 7) == 0) {
			(void)te_varint(&p, end);
			continue;
		}
		cr_assert_eq(tag & 7, 2, "wire type %u in Profile", (unsigned)(tag & 7));
		uint64_t len = te_varint(&p, end);
		cr_assert_leq(len, (uint64_t)(end - p));
		const uint8_t *q = p, *qe = p + len;
		p += len;
		if (tag >> 3 != 2)
			continue;
		(*samples)++;
		while (q < qe) {
			uint64_t t = te_varint(&q, qe);
			uint64_t l = te_varint(&q, qe);
			if (t >> 3 == 2) {
				const uint8_t *v = q;
				*objs += (int64_t)te_varint(&v, q + l);
				*bytes += (int64_t)te_varint(&v, q + l);
			}
			q += l;
		}
	}
}

static bool te_has(const uint8_t *b, size_t n, const char *s)
{
	return memmem(b, n, s, strlen(s)) != NULL;
}

/* The summary of the small trace: allocs 4, 4544 bytes; live at the peak 3 blocks, 4480
 * bytes; live at the end 2 blocks, 4352 bytes; before 1.15 us one block of 64. */
Test(export_api, pprof_profiles_hold_the_trace_figures, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	static const struct {
		enum export_pprof_mode mode;
		uint64_t at_ns;
		int64_t objs, bytes;
		const char *type;
	} want[] = {
		{EXPORT_PPROF_ALLOC, 0, 4, 4544, "alloc_space"},
		{EXPORT_PPROF_LIVE_PEAK, 0, 3, 4480, "inuse_space"},
		{EXPORT_PPROF_LIVE_END, 0, 2, 4352, "inuse_space"},
		{EXPORT_PPROF_LIVE_AT, 1000, 0, 0, "inuse_space"},
		{EXPORT_PPROF_LIVE_AT, 1150, 1, 64, "inuse_space"},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct te_mem m = {0};
		struct export_sink sink = {te_mem_write, &m};
		char err[256] = "";
		struct export_pprof_opts o = {
			.mode = want[i].mode, .at_ns = want[i].at_ns, .err = err, .err_len = 256};
		struct export_pprof_result res = {.approximate = true};
		cr_assert_eq(export_pprof(r, &o, &sink, &res), 0, "case %zu: %s", i, err);
		cr_expect_eq(m.writes, 1, "case %zu: one write of the whole stream", i);
		cr_expect(!res.approximate);
		size_t n;
		uint8_t *b = te_gunzip(&m, &n);
		int64_t objs, bytes;
		unsigned samples;
		te_pprof_totals(b, n, &objs, &bytes, &samples);
		cr_expect_eq(objs, want[i].objs, "case %zu: %lld objects", i, (long long)objs);
		cr_expect_eq(bytes, want[i].bytes, "case %zu: %lld bytes", i, (long long)bytes);
		cr_expect(te_has(b, n, want[i].type), "case %zu", i);
		/* Frames named as the plain namer names them: threads, spans, the module's
		 * function (the last two only once the merge has reached them). */
		cr_expect(te_has(b, n, "tid 4243 worker \"1\""), "case %zu", i);
		cr_expect(te_has(b, n, "parse") == (want[i].at_ns != 1000), "case %zu", i);
		cr_expect(te_has(b, n, "prog+0x2136") == !want[i].at_ns, "case %zu", i);
		free(b);
		free(m.p);
	}
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* The library's bytes are trace-dump's: the command is its options and this one call. */
Test(export_api, pprof_bytes_are_the_commands, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	struct te_mem m = {0};
	struct export_sink sink = {te_mem_write, &m};
	struct export_pprof_opts o = {.mode = EXPORT_PPROF_LIVE_PEAK, .at_text = "peak"};
	cr_assert_eq(export_pprof(r, &o, &sink, NULL), 0);
	trcfile_reader_close(r);
	cr_assert_eq(tu_sh("%s/bin/trace-dump pprof --live-at peak '%s/in.trc' -o '%s/out.pb.gz' "
			   "2>/dev/null",
			   tu_build(), dir, dir),
		     0);
	size_t n;
	uint8_t *b = te_slurp(dir, "out.pb.gz", &n);
	cr_expect_eq(n, m.len);
	cr_expect(n == m.len && !memcmp(b, m.p, n), "the library's profile is not the command's");
	free(b);
	free(m.p);
	tu_rm_rf(dir);
}

Test(export_api, pprof_full_sink_and_bad_mode_are_errors, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	struct te_full f = {.room = 10};
	struct export_sink sink = {te_full_write, &f};
	char err[256] = "";
	struct export_pprof_opts o = {.mode = EXPORT_PPROF_ALLOC, .err = err, .err_len = 256};
	cr_expect_eq(export_pprof(r, &o, &sink, NULL), -ENOSPC);
	cr_expect_str_eq(err, strerror(ENOSPC));
	cr_expect_eq(f.taken, 0);
	o.mode = (enum export_pprof_mode)0;
	cr_expect_eq(export_pprof(r, &o, &sink, NULL), -EINVAL);
	cr_expect_str_eq(err, "no such pprof mode 0");
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* ---- parquet ---------------------------------------------------------------------------- */

/* A plan written under header h (tu_write_plan's, one record a batch). */
static void te_write_plan_h(const char *path, const struct tu_plan *p,
			    const struct trcfile_header_info *h)
{
	struct trcfile_writer_opts o = {.flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, h, &o, &err);
	cr_assert_not_null(w, "writer_open: %s", strerror(-err));
	for (size_t i = 0; i < p->n; i++) {
		struct trcfile_stream *s = trcfile_stream_open(w, p->streams[i].kind,
							       p->streams[i].pid, p->streams[i].tid);
		cr_assert_not_null(s);
		for (size_t k = 0; k < p->streams[i].n; k++)
			cr_assert_eq(trcfile_stream_append(s, &p->streams[i].recs[k]), 0);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
}

/* The tables of r exported into memory sinks; 0 or the export's error. */
static int te_parquet(struct trcfile_reader *r, const char *path, struct te_mem m[EXPORT_PQ_N_TABLES],
		      struct export_sink sinks[EXPORT_PQ_N_TABLES], char *err, size_t err_len)
{
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++)
		if (!sinks[t].write)
			sinks[t] = (struct export_sink){te_mem_write, &m[t]};
	struct export_parquet_opts o = {.created_by = "trc trace-dump " CLI_VERSION,
					.err = err,
					.err_len = err_len};
	return export_parquet(&r, &path, 1, &o, sinks);
}

/* The library's tables are the bytes trace-dump parquet writes, and hold the trace's names. */
Test(export_api, parquet_tables_are_the_commands, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	char path[300], err[256] = "";
	snprintf(path, sizeof(path), "%s/in.trc", dir);
	struct te_mem m[EXPORT_PQ_N_TABLES] = {0};
	struct export_sink sinks[EXPORT_PQ_N_TABLES] = {0};
	cr_assert_eq(te_parquet(r, path, m, sinks, err, sizeof(err)), 0, "%s", err);
	trcfile_reader_close(r);
	cr_assert_eq(tu_sh("%s/bin/trace-dump parquet -o '%s/pq' '%s' 2>/dev/null", tu_build(), dir,
			   path),
		     0);
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++) {
		char name[64];
		snprintf(name, sizeof(name), "pq/%s.parquet", export_parquet_tables[t]);
		size_t n;
		uint8_t *b = te_slurp(dir, name, &n);
		cr_expect(n == m[t].len && !memcmp(b, m[t].p, n), "%s differs (%zu, %zu bytes)",
			  name, n, m[t].len);
		cr_expect(n > 12 && !memcmp(m[t].p, "PAR1", 4) && !memcmp(m[t].p + n - 4, "PAR1", 4));
		free(b);
	}
	/* Dictionary pages are zstd-compressed: the names are checked through the command's
	 * equal bytes; the uncompressed footer names the columns. */
	cr_expect(te_has(m[EXPORT_PQ_SPANS].p, m[EXPORT_PQ_SPANS].len, "dur_ns"));
	cr_expect(te_has(m[EXPORT_PQ_TRACES].p, m[EXPORT_PQ_TRACES].len, "rss_peak_source"));
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++)
		free(m[t].p);
	tu_rm_rf(dir);
}

Test(export_api, parquet_full_sink_is_enospc, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	char err[256] = "";
	struct te_mem m[EXPORT_PQ_N_TABLES] = {0};
	struct export_sink sinks[EXPORT_PQ_N_TABLES] = {0};
	/* The events table takes its magic, then fails at its first row group (the close). */
	struct te_full f = {.room = 4};
	sinks[EXPORT_PQ_EVENTS] = (struct export_sink){te_full_write, &f};
	cr_expect_eq(te_parquet(r, "in.trc", m, sinks, err, sizeof(err)), -ENOSPC);
	cr_expect_str_eq(err, strerror(ENOSPC));
	cr_expect_eq(f.taken, 4);
	/* No room even for the magic: the open fails, naming the table. */
	f = (struct te_full){.room = 0};
	unsigned table = 99;
	int e = 0;
	struct export_parquet_opts o = {.err = err, .err_len = sizeof(err)};
	cr_expect_null(export_parquet_open(&o, sinks, &e, &table));
	cr_expect_eq(e, -ENOSPC);
	cr_expect_eq(table, EXPORT_PQ_EVENTS);
	trcfile_reader_close(r);
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++)
		free(m[t].p);
	tu_rm_rf(dir);
}

/* A header whose anchor puts the records past CLOCK_REALTIME's range: -ERANGE, said. */
Test(export_api, parquet_trace_outside_realtime_is_erange, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	char path[300], err[256] = "";
	snprintf(path, sizeof(path), "%s/far.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_header_info h = tu_header();
	h.start_realtime_ns = (uint64_t)INT64_MAX - 10;
	te_write_plan_h(path, &p, &h);
	tu_plan_free(&p);
	struct trcfile_reader *r = NULL;
	cr_assert_eq(trcfile_reader_open(path, &r, err, sizeof(err)), 0, "%s", err);
	struct te_mem m[EXPORT_PQ_N_TABLES] = {0};
	struct export_sink sinks[EXPORT_PQ_N_TABLES] = {0};
	cr_expect_eq(te_parquet(r, path, m, sinks, err, sizeof(err)), -ERANGE);
	cr_expect_str_eq(err, "start_realtime_ns 9223372036854775797 and start_mono_ns 1000000000 "
			      "put its records outside CLOCK_REALTIME's range (0 to 2^63 ns)");
	trcfile_reader_close(r);
	for (unsigned t = 0; t < EXPORT_PQ_N_TABLES; t++)
		free(m[t].p);
	tu_rm_rf(dir);
}

/* ---- perfetto --------------------------------------------------------------------------- */

/* Slice begins and ends of a Trace (TracePacket = 1, track_event = 11, type = 9), and the
 * packets. */
static void te_pf_count(const uint8_t *b, size_t n, unsigned *packets, unsigned *begins,
			unsigned *ends)
{
	const uint8_t *p = b, *end = b + n;
	*packets = *begins = *ends = 0;
	while (p < end) {
		uint64_t tag = te_varint(&p, end);
		cr_assert_eq(tag, (1 << 3) | 2, "a Trace holds packets only");
		uint64_t len = te_varint(&p, end);
		cr_assert_leq(len, (uint64_t)(end - p));
		const uint8_t *q = p, *qe = p + len;
		p += len;
		(*packets)++;
		while (q < qe) {
			uint64_t t = te_varint(&q, qe);
			switch (t & 7) {
			case 0:
				(void)te_varint(&q, qe);
				continue;
			case 1:
				q += 8;
				continue;
			case 5:
				q += 4;
				continue;
			}
			uint64_t l = te_varint(&q, qe);
			if (t >> 3 == 11) {
				const uint8_t *e = q, *ee = q + l;
				while (e < ee) {
					uint64_t et = te_varint(&e, ee);
					if ((et & 7) == 0) {
						uint64_t v = te_varint(&e, ee);
						if (et >> 3 == 9) {
							*begins += v == 1;
							*ends += v == 2;
						}
					} else if ((et & 7) == 2) {
						e += te_varint(&e, ee);
					} else {
						e += (et & 7) == 1 ? 8 : 4;
					}
				}
			}
			q += l;
		}
	}
}

/* Every span and function of the small trace is one slice begin with its end: those left
 * open end at the loss or at the end of the trace. The bytes are trace-dump's. */
Test(export_api, perfetto_slices_balance_and_bytes_are_the_commands, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	struct tu_plan plan = {0};
	tu_small_plan(&plan);
	unsigned opened = 0;
	for (size_t i = 0; i < plan.n; i++)
		for (size_t k = 0; k < plan.streams[i].n; k++)
			opened += plan.streams[i].recs[k].type == TRC_REC_SPAN_BEGIN ||
				  plan.streams[i].recs[k].type == TRC_REC_FUNC_ENTER;
	tu_plan_free(&plan);
	char path[300], err[256] = "";
	snprintf(path, sizeof(path), "%s/in.trc", dir);
	struct te_mem m = {0};
	struct export_sink sink = {te_mem_write, &m};
	struct export_input in = {r, path};
	struct export_perfetto_opts o = {.to_ns = UINT64_MAX, .err = err, .err_len = 256};
	struct export_perfetto_result res;
	cr_assert_eq(export_perfetto(&in, 1, &o, &sink, &res), 0, "%s", err);
	cr_expect_eq(res.too_deep, 0);
	unsigned packets, begins, ends;
	te_pf_count(m.p, m.len, &packets, &begins, &ends);
	cr_expect_eq(begins, opened, "%u begins, %u spans and functions", begins, opened);
	cr_expect_eq(ends, opened, "%u ends", ends);
	cr_expect(te_has(m.p, m.len, "worker \"1\""));
	cr_expect(te_has(m.p, m.len, "prog+0x2136"));
	cr_assert_eq(tu_sh("%s/bin/trace-dump perfetto '%s' -o '%s/out.pf' 2>/dev/null",
			   tu_build(), path, dir),
		     0);
	size_t n;
	uint8_t *b = te_slurp(dir, "out.pf", &n);
	cr_expect(n == m.len && !memcmp(b, m.p, n), "%zu bytes, the command's %zu", m.len, n);
	free(b);
	/* Two traces: one output, each trace's pids in its own range, as the command's. */
	free(m.p);
	m = (struct te_mem){0};
	struct trcfile_reader *r2 = NULL;
	cr_assert_eq(trcfile_reader_open(path, &r2, err, sizeof(err)), 0);
	struct export_input two[] = {{r, path}, {r2, path}};
	cr_assert_eq(export_perfetto(two, 2, &o, &sink, &res), 0, "%s", err);
	te_pf_count(m.p, m.len, &packets, &begins, &ends);
	cr_expect_eq(begins, 2 * opened);
	cr_expect_eq(ends, 2 * opened);
	cr_expect(te_has(m.p, m.len, "testhost in.trc: prog"), "processes named HOST TRACE: name");
	cr_assert_eq(tu_sh("%s/bin/trace-dump perfetto '%s' '%s' -o '%s/two.pf' 2>/dev/null",
			   tu_build(), path, path, dir),
		     0);
	b = te_slurp(dir, "two.pf", &n);
	cr_expect(n == m.len && !memcmp(b, m.p, n), "%zu bytes, the command's %zu", m.len, n);
	free(b);
	free(m.p);
	trcfile_reader_close(r2);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

static unsigned te_splits;
static int te_split_ok(void *ctx)
{
	(void)ctx;
	te_splits++;
	return 0;
}

static int te_split_fail(void *ctx)
{
	(void)ctx;
	return -EDQUOT;
}

Test(export_api, perfetto_failures_come_back, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	char err[256] = "";
	struct export_input in = {r, "in.trc"};
	struct export_perfetto_opts o = {.to_ns = UINT64_MAX, .err = err, .err_len = 256};
	struct export_perfetto_result res;
	/* A full disk: the sink's error, said; nothing was cut short silently. */
	struct te_full f = {.room = 100};
	struct export_sink full = {te_full_write, &f};
	cr_expect_eq(export_perfetto(&in, 1, &o, &full, &res), -ENOSPC);
	cr_expect_str_eq(err, strerror(ENOSPC));
	cr_expect_eq(res.failed_input, -1);
	/* Options that do not fit. */
	struct export_input two[] = {in, in};
	o.has_from = true;
	cr_expect_eq(export_perfetto(two, 2, &o, &full, &res), -EINVAL);
	cr_expect_str_eq(err, "a range or a split takes one trace");
	o.has_from = false;
	/* A split every packet: each file a whole trace; a split that fails stops the export. */
	struct te_mem m = {0};
	struct export_sink mem = {te_mem_write, &m};
	o.split_bytes = 1;
	o.split = te_split_ok;
	te_splits = 0;
	cr_expect_eq(export_perfetto(&in, 1, &o, &mem, &res), 0, "%s", err);
	cr_expect_gt(te_splits, 10, "%u splits", te_splits);
	o.split = te_split_fail;
	cr_expect_eq(export_perfetto(&in, 1, &o, &mem, &res), -EDQUOT);
	cr_expect(res.split_failed);
	free(m.p);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* ---- chrome ----------------------------------------------------------------------------- */

static unsigned te_count(const struct te_mem *m, const char *s)
{
	unsigned n = 0;
	size_t k = strlen(s);
	for (const uint8_t *p = m->p, *end = m->p + m->len;
	     (p = memmem(p, (size_t)(end - p), s, k)); p += k)
		n++;
	return n;
}

static bool te_taken_back;
static bool te_take_back(void *ctx)
{
	(void)ctx;
	return te_taken_back;
}

/* Every span and function is one "B" with its "E" (those left open end at the loss, flagged,
 * or at the end, unfinished); the document is trace-dump's, for one trace and for two. */
Test(export_api, chrome_spans_balance_and_bytes_are_the_commands, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	struct tu_plan plan = {0};
	tu_small_plan(&plan);
	unsigned opened = 0;
	for (size_t i = 0; i < plan.n; i++)
		for (size_t k = 0; k < plan.streams[i].n; k++)
			opened += plan.streams[i].recs[k].type == TRC_REC_SPAN_BEGIN ||
				  plan.streams[i].recs[k].type == TRC_REC_FUNC_ENTER;
	tu_plan_free(&plan);
	char path[300], err[256] = "";
	snprintf(path, sizeof(path), "%s/in.trc", dir);
	struct te_mem m = {0};
	struct export_sink sink = {te_mem_write, &m};
	struct export_input in = {r, path};
	struct export_chrome_opts o = {.to_ns = UINT64_MAX, .err = err, .err_len = 256};
	cr_assert_eq(export_chrome(&in, 1, &o, &sink, NULL), 0, "%s", err);
	cr_expect_eq(te_count(&m, "{\"ph\":\"B\""), opened);
	cr_expect_eq(te_count(&m, "{\"ph\":\"E\""), opened);
	/* a's last end closes compute (the innermost), so main is closed at the end; b's span
	 * ends at its loss, and its end after the loss has no begin. */
	cr_expect_eq(te_count(&m, "\"unfinished\":true"), 1);
	cr_expect_eq(te_count(&m, "\"cut_by_loss\":true"), 1);
	cr_expect(te_has(m.p, m.len, "\"name\":\"prog+0x2136\""));
	cr_expect(te_has(m.p, m.len, "\"spans_closed_at_end\":1,\"spans_unmatched_end\":1"));
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' -o '%s/out.json' 2>/dev/null",
			   tu_build(), path, dir),
		     0);
	size_t n;
	uint8_t *b = te_slurp(dir, "out.json", &n);
	cr_expect(n == m.len && !memcmp(b, m.p, n), "%zu bytes, the command's %zu", m.len, n);
	free(b);
	free(m.p);
	m = (struct te_mem){0};
	struct trcfile_reader *r2 = NULL;
	cr_assert_eq(trcfile_reader_open(path, &r2, err, sizeof(err)), 0);
	struct export_input two[] = {{r, path}, {r2, path}};
	cr_assert_eq(export_chrome(two, 2, &o, &sink, NULL), 0, "%s", err);
	cr_expect_eq(te_count(&m, "{\"ph\":\"B\""), 2 * opened);
	cr_expect(te_has(m.p, m.len, "\"pid_offset\":20000000"));
	cr_expect(te_has(m.p, m.len, "\"pid\":10004242"));
	cr_assert_eq(tu_sh("%s/bin/trace-dump chrome '%s' '%s' > '%s/two.json' 2>/dev/null",
			   tu_build(), path, path, dir),
		     0);
	b = te_slurp(dir, "two.json", &n);
	cr_expect(n == m.len && !memcmp(b, m.p, n), "%zu bytes, the command's %zu", m.len, n);
	free(b);
	free(m.p);
	trcfile_reader_close(r2);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* Several traces count their times from the earliest start of recording, whichever FILE is
 * given first: here the second, which started 1 s earlier on CLOCK_REALTIME. */
Test(export_api, chrome_several_traces_start_at_the_earliest, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *a = te_small(dir);
	char path[300], err[256] = "";
	snprintf(path, sizeof(path), "%s/early.trc", dir);
	struct tu_plan p = {0};
	tu_small_plan(&p);
	struct trcfile_header_info h = tu_header();
	h.start_realtime_ns -= 1000000000ull;
	te_write_plan_h(path, &p, &h);
	tu_plan_free(&p);
	struct trcfile_reader *b = NULL;
	cr_assert_eq(trcfile_reader_open(path, &b, err, sizeof(err)), 0, "%s", err);
	struct te_mem m = {0};
	struct export_sink sink = {te_mem_write, &m};
	struct export_input two[] = {{a, "late.trc"}, {b, path}};
	struct export_chrome_opts o = {.to_ns = UINT64_MAX, .err = err, .err_len = 256};
	cr_assert_eq(export_chrome(two, 2, &o, &sink, NULL), 0, "%s", err);
	cr_expect(te_has(m.p, m.len, "],\"start_realtime_ns\":1699999999123456789,"),
		  "the merged start is the earlier trace's");
	/* The late trace's first span begins 1 s + 1 us after the early one's start. */
	cr_expect(te_has(m.p, m.len, "{\"ph\":\"B\",\"pid\":10004242,\"tid\":4242,"
				     "\"ts\":1000001.000,"));
	cr_expect(te_has(m.p, m.len, "{\"ph\":\"B\",\"pid\":20004242,\"tid\":4242,"
				     "\"ts\":1.000,"));
	free(m.p);
	trcfile_reader_close(b);
	trcfile_reader_close(a);
	tu_rm_rf(dir);
}

/* A failure half-way: the error comes back; a document the caller cannot take back is
 * closed, saying why, and one it takes back gets nothing more. */
Test(export_api, chrome_failures_come_back, .timeout = 60)
{
	const char *dir = tu_tmpdir();
	struct trcfile_reader *r = te_small(dir);
	char err[256] = "";
	struct export_input in = {r, "in.trc"};
	struct export_chrome_opts o = {.to_ns = UINT64_MAX,
				       .fail_after = 5,
				       .fail_msg = "broken here",
				       .taken_back = te_take_back,
				       .err = err,
				       .err_len = 256};
	struct export_chrome_result res;
	struct te_mem m = {0};
	struct export_sink sink = {te_mem_write, &m};
	te_taken_back = false;
	cr_expect_eq(export_chrome(&in, 1, &o, &sink, &res), -EIO);
	cr_expect_str_eq(err, "broken here");
	cr_expect_eq(res.failed_input, 0);
	static const char tail[] = "\n],\n\"otherData\":{\"incomplete\":true,\"error\":"
				   "\"broken here\"}}\n";
	cr_expect(m.len > sizeof(tail) && !memcmp(m.p + m.len - (sizeof(tail) - 1), tail,
						  sizeof(tail) - 1));
	free(m.p);
	m = (struct te_mem){0};
	te_taken_back = true;
	cr_expect_eq(export_chrome(&in, 1, &o, &sink, &res), -EIO);
	cr_expect_eq(m.len, 0, "the small document was still in the buffer: nothing handed over");
	/* A full disk. */
	o.fail_after = 0;
	struct te_full f = {.room = 0};
	struct export_sink full = {te_full_write, &f};
	cr_expect_eq(export_chrome(&in, 1, &o, &full, &res), -ENOSPC);
	cr_expect_str_eq(err, strerror(ENOSPC));
	free(m.p);
	trcfile_reader_close(r);
	tu_rm_rf(dir);
}

/* ---- the shared span stacks ------------------------------------------------------------- */

Test(export_api, span_stack_balances_and_forgets_its_outer_half, .timeout = 30)
{
	struct export_stack *s = export_stacks_new(2);
	cr_assert_not_null(s);
	cr_expect_null(export_stack_pop(&s[0]), "an end with nothing open is unmatched");
	for (uint32_t i = 0; i < 40; i++) {
		struct export_frame f = {.type = TRC_REC_SPAN_BEGIN, .name_id = i, .ts_ns = i};
		cr_assert_eq(export_stack_push(&s[0], &f, 32), 0);
	}
	/* 32 reached at the 33rd push: the outer 16 forgotten, then 8 more pushed. */
	cr_expect_eq(s[0].n, 24);
	cr_expect_eq(export_stack_top(&s[0])->name_id, 39);
	cr_expect_eq(s[0].v[0].name_id, 16);
	const struct export_frame *f = export_stack_pop(&s[0]);
	cr_assert_not_null(f);
	cr_expect_eq(f->name_id, 39);
	cr_expect_eq(s[1].n, 0, "streams are apart");
	cr_expect_eq(export_pid_offset(0, 1), 0);
	cr_expect_eq(export_pid_offset(0, 2), 10000000u);
	cr_expect_eq(export_pid_offset(2, 3), 30000000u);
	export_stacks_free(s, 2);
}
