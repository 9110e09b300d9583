/* test_record_roundtrip.c - every field of every record kind comes back in its own place.
 *
 * Each record kind with a different value in every field (no two fields of a trace alike, the
 * strings and build-id bytes too), in a sequence that moves every coder state (time forward
 * and back, both address predictors): encoded by trcfile__encode, then decoded by the checked
 * decoder (trcfile__decode_slow), by the hot loops' one (trcfile__decode: the fast decoder,
 * the checked one where it declines) and by the fast decoder alone wherever it takes the
 * record; every field of every record must be the one written, and the coder states must
 * agree after each. Two fields read into each other's places (a swap in a decoder) fail here,
 * as a comparison of a few fields would not see.
 *
 * Then the views: the same records through the writer into a trace, read by `trace-dump
 * events` (one line a record, each field labelled) and `trace-dump rss` (one CSV row a sample):
 * each line must be exactly the one its fields make.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e_util.h"
#include "record.h"
#include "trcfile.h"
#include "trcfile_codec.h"

#define TD e2e_path("bin/trace-dump")

/* ---- distinct values ------------------------------------------------------------------ */

static uint64_t field_no;

/* The next field's value: distinct from every other one handed out, of widths 17 to 63 bits
 * in turn (so that no two neighbouring fields share a varint length either). */
static uint64_t v64(void)
{
	uint64_t f = ++field_no;
	return ((f * 0x9e3779b97f4a7c15ull) >> (1 + f % 47)) | (1ull << (16 + f % 47)) | f;
}

/* The same below 2^32 (pid, tid, name id, reason, flags of a kind that takes any). */
static uint32_t v32(void)
{
	uint64_t f = ++field_no;
	return (uint32_t)(((f * 0x9e3779b9u) >> (f % 13)) | (1u << (12 + f % 19)) | f);
}

static size_t n_stacks;

static char strings[64][64];
static size_t n_strings;

/* A string of its own (NUL bytes inside for a command line). */
static const char *vstr(uint32_t *len, bool nuls)
{
	cr_assert_lt(n_strings, 64);
	char *s = strings[n_strings++];
	int n = snprintf(s, sizeof(strings[0]), "field-%" PRIu64 "-%zu", ++field_no, n_strings);
	if (nuls)
		s[5] = s[n - 2] = 0;
	*len = (uint32_t)n;
	return s;
}

static uint8_t build_ids[8][TRC_BUILD_ID_MAX];
static size_t n_build_ids;

/* ---- the records ------------------------------------------------------------------------ */

#define N_KINDS (TRC_REC_TYPE_COUNT - 1)
#define N_RECS (2 * N_KINDS + 40)

static struct trc_record recs[N_RECS];
static size_t n_recs;
static uint64_t ts_now = 1000000000ull;

/* One record of type, every field a value of its own. back: a time before the previous one. */
static void add(uint32_t type, bool back)
{
	cr_assert_lt(n_recs, N_RECS);
	struct trc_record *r = &recs[n_recs++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	uint64_t step = (v64() & 0xfffff) + 1;
	ts_now = back ? ts_now - step : ts_now + step;
	r->ts_ns = ts_now;
	switch (type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		r->span.name_id = v32();
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		r->value.name_id = v32();
		r->value.value = -(int64_t)(v64() >> 1);
		break;
	case TRC_REC_ALLOC:
		r->alloc.addr = v64();
		r->alloc.size = v64();
		r->alloc.stack_id = v32();
		break;
	case TRC_REC_FREE:
		r->alloc.addr = v64();
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		r->func.addr = v64();
		r->func.call_site = v64();
		break;
	case TRC_REC_RSS:
		r->rss.source = v32();
		r->rss.flags = v32();
		r->rss.pid = v32();
		r->rss.rss_bytes = v64();
		r->rss.buffers_bytes = v64();
		r->rss.hwm_bytes = v64();
		r->rss.anon_bytes = v64();
		r->rss.file_bytes = v64();
		r->rss.shmem_bytes = v64();
		r->rss.rss_exact_bytes = v64();
		r->rss.pss_bytes = v64();
		r->rss.read_ns = v64();
		break;
	case TRC_REC_LOST:
		r->lost.count = v64();
		r->lost.reason = v32();
		break;
	case TRC_REC_THREAD:
		r->thread.pid = v32();
		r->thread.tid = v32();
		r->thread.name = vstr(&r->thread.name_len, false);
		break;
	case TRC_REC_PROCESS:
		r->process.pid = v32();
		r->process.ppid = v32();
		r->process.cmdline = vstr(&r->process.cmdline_len, true);
		break;
	case TRC_REC_NAME:
		r->name.id = v32();
		r->name.str = vstr(&r->name.len, false);
		break;
	case TRC_REC_MODULE: {
		r->module.pid = v32();
		r->module.start = v64();
		r->module.end = v64();
		r->module.offset = v64();
		r->module.path = vstr(&r->module.path_len, false);
		cr_assert_lt(n_build_ids, 8);
		uint8_t *b = build_ids[n_build_ids++];
		for (size_t i = 0; i < TRC_BUILD_ID_MAX; i++)
			b[i] = (uint8_t)v32();
		r->module.build_id = b;
		r->module.build_id_len = TRC_BUILD_ID_MAX - (uint32_t)(field_no % 5);
		break;
	}
	case TRC_REC_NOTE:
		r->note.text = vstr(&r->note.len, false);
		break;
	case TRC_REC_EXIT:
		r->exit.pid = v32();
		r->exit.status = -(int32_t)(v32() >> 1);
		r->exit.maxrss_bytes = v64();
		r->exit.buffers_bytes = v64();
		r->exit.flags = v32();
		break;
	case TRC_REC_WAIT:
		r->wait.waits = v64();
		r->wait.waited_ns = v64();
		r->wait.max_ns = v64();
		break;
	case TRC_REC_MAP:
		r->map.addr = v64();
		r->map.len = v64() & TRC_MAP_LEN_MASK;
		r->map.kind = TRC_MAP_FILE;
		r->map.stack_id = v32();
		break;
	case TRC_REC_UNMAP:
		r->map.addr = v64();
		r->map.len = v64();
		break;
	case TRC_REC_STACK: {
		/* frames of every width, going up and down */
		static uint64_t frames[8][5];
		cr_assert_lt(n_stacks, 8);
		uint64_t *f = frames[n_stacks++];
		for (int i = 0; i < 5; i++)
			f[i] = i % 2 ? v64() >> 8 : v64();
		r->stack.id = v32();
		r->stack.flags = TRC_STACK_TRUNCATED;
		r->stack.n = 5;
		r->stack.frames = f;
		break;
	}
	default:
		cr_assert_fail("type %u", type);
	}
}

/* Every kind twice (the second time back in time: a negative delta, and predictors that are no
 * longer 0), then enough short records that the fast decoder has its margin for all of them. */
static void make_records(void)
{
	n_recs = 0;
	field_no = 0;
	n_strings = 0;
	n_build_ids = 0;
	n_stacks = 0;
	for (int round = 0; round < 2; round++)
		for (uint32_t t = 1; t < TRC_REC_TYPE_COUNT; t++)
			add(t, round == 1 && t % 2);
	while (n_recs < N_RECS)
		add(TRC_REC_SPAN_END, false);
}

static bool str_eq(const void *a, uint32_t la, const void *b, uint32_t lb)
{
	return la == lb && (la == 0 || !memcmp(a, b, la));
}

/* The first field in which b differs from a, or NULL when every field of a's type agrees. */
static const char *rec_diff(const struct trc_record *a, const struct trc_record *b)
{
#define RT__F(f)                   \
	do {                       \
		if (a->f != b->f)  \
			return #f; \
	} while (0)
	RT__F(type);
	RT__F(ts_ns);
	switch (a->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		RT__F(span.name_id);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		RT__F(value.name_id);
		RT__F(value.value);
		break;
	case TRC_REC_ALLOC:
		RT__F(alloc.stack_id);
		/* fall through */
	case TRC_REC_FREE:
		RT__F(alloc.addr);
		RT__F(alloc.size);
		break;
	case TRC_REC_MAP:
	case TRC_REC_UNMAP:
		RT__F(map.addr);
		RT__F(map.len);
		RT__F(map.kind);
		RT__F(map.stack_id);
		break;
	case TRC_REC_STACK: {
		RT__F(stack.id);
		RT__F(stack.flags);
		RT__F(stack.n);
		uint64_t fa[TRC_STACK_DEPTH_MAX], fb[TRC_STACK_DEPTH_MAX];
		if (trcfile_stack_unpack(a, fa, TRC_STACK_DEPTH_MAX) != (int)a->stack.n ||
		    trcfile_stack_unpack(b, fb, TRC_STACK_DEPTH_MAX) != (int)b->stack.n ||
		    memcmp(fa, fb, a->stack.n * sizeof(*fa)))
			return "stack.frames";
		break;
	}
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		RT__F(func.addr);
		RT__F(func.call_site);
		break;
	case TRC_REC_RSS:
		RT__F(rss.source);
		RT__F(rss.flags);
		RT__F(rss.pid);
		RT__F(rss.rss_bytes);
		RT__F(rss.buffers_bytes);
		RT__F(rss.hwm_bytes);
		RT__F(rss.anon_bytes);
		RT__F(rss.file_bytes);
		RT__F(rss.shmem_bytes);
		RT__F(rss.rss_exact_bytes);
		RT__F(rss.pss_bytes);
		RT__F(rss.read_ns);
		break;
	case TRC_REC_LOST:
		RT__F(lost.count);
		RT__F(lost.reason);
		break;
	case TRC_REC_THREAD:
		RT__F(thread.pid);
		RT__F(thread.tid);
		if (!str_eq(a->thread.name, a->thread.name_len, b->thread.name, b->thread.name_len))
			return "thread.name";
		break;
	case TRC_REC_PROCESS:
		RT__F(process.pid);
		RT__F(process.ppid);
		if (!str_eq(a->process.cmdline, a->process.cmdline_len, b->process.cmdline,
			    b->process.cmdline_len))
			return "process.cmdline";
		break;
	case TRC_REC_NAME:
		RT__F(name.id);
		if (!str_eq(a->name.str, a->name.len, b->name.str, b->name.len))
			return "name.str";
		break;
	case TRC_REC_MODULE:
		RT__F(module.pid);
		RT__F(module.start);
		RT__F(module.end);
		RT__F(module.offset);
		if (!str_eq(a->module.path, a->module.path_len, b->module.path, b->module.path_len))
			return "module.path";
		if (!str_eq(a->module.build_id, a->module.build_id_len, b->module.build_id,
			    b->module.build_id_len))
			return "module.build_id";
		break;
	case TRC_REC_NOTE:
		if (!str_eq(a->note.text, a->note.len, b->note.text, b->note.len))
			return "note.text";
		break;
	case TRC_REC_EXIT:
		RT__F(exit.pid);
		RT__F(exit.status);
		RT__F(exit.maxrss_bytes);
		RT__F(exit.buffers_bytes);
		RT__F(exit.flags);
		break;
	case TRC_REC_WAIT:
		RT__F(wait.waits);
		RT__F(wait.waited_ns);
		RT__F(wait.max_ns);
		break;
	default:
		return "type (unknown)";
	}
	return NULL;
#undef RT__F
}

/* The values really are distinct: the comparison above could not tell a swap otherwise. */
static void assert_distinct(void)
{
	cr_assert_gt(field_no, 4 * N_KINDS);
	for (size_t i = 0; i < n_recs; i++)
		for (size_t j = i + 1; j < n_recs; j++)
			if (recs[i].type == recs[j].type && !rec_diff(&recs[i], &recs[j]))
				cr_assert_fail("records %zu and %zu alike", i, j);
}

static uint8_t *encode_all(size_t *len)
{
	size_t cap = 0;
	for (size_t i = 0; i < n_recs; i++) {
		long m = trcfile__record_max_bytes(&recs[i]);
		cr_assert_gt(m, 0, "record %zu", i);
		cap += (size_t)m;
	}
	uint8_t *b = malloc(cap), *p = b;
	cr_assert_not_null(b);
	struct trcfile__coder c;
	trcfile__coder_reset(&c, recs[0].ts_ns);
	for (size_t i = 0; i < n_recs; i++)
		p = trcfile__encode(p, &recs[i], &c);
	*len = (size_t)(p - b);
	return b;
}

static bool coder_eq(const struct trcfile__coder *a, const struct trcfile__coder *b)
{
	return a->ts == b->ts && a->alloc_addr == b->alloc_addr && a->func_addr == b->func_addr;
}

Test(record_roundtrip, every_field_of_every_kind_through_every_decoder, .timeout = 60)
{
	make_records();
	assert_distinct();
	size_t len;
	uint8_t *buf = encode_all(&len);
	const uint8_t *end = buf + len, *fast_end = trcfile__fast_end(buf, end);
	const uint8_t *ps = buf, *pd = buf;
	struct trcfile__coder cs, cd;
	trcfile__coder_reset(&cs, recs[0].ts_ns);
	trcfile__coder_reset(&cd, recs[0].ts_ns);
	size_t fast_by_type[TRC_REC_TYPE_COUNT] = {0};
	for (size_t i = 0; i < n_recs; i++) {
		const struct trc_record *want = &recs[i];
		struct trc_record rs, rd, rf;
		memset(&rs, 0xa5, sizeof(rs));
		memset(&rd, 0x5a, sizeof(rd));
		const uint8_t *at = ps;
		struct trcfile__coder cf = cs;
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(at, fast_end, &cf, &ev);
		cr_assert_eq(trcfile__decode_slow(&ps, end, &cs, &rs), 0, "record %zu refused", i);
		cr_assert_eq(trcfile__decode(&pd, end, &cd, &rd), 0, "record %zu refused", i);
		const char *d = rec_diff(want, &rs);
		cr_assert_null(d, "record %zu (%s): the checked decoder's %s differs", i,
			       trcfile_type_name(want->type), d);
		d = rec_diff(want, &rd);
		cr_assert_null(d, "record %zu (%s): trcfile__decode's %s differs", i,
			       trcfile_type_name(want->type), d);
		cr_assert(ps == pd && coder_eq(&cs, &cd), "record %zu: the decoders part ways", i);
		if (q) {
			memset(&rf, 0x3c, sizeof(rf));
			trcfile__event_record(&ev, &rf);
			d = rec_diff(want, &rf);
			cr_assert_null(d, "record %zu (%s): the fast decoder's %s differs", i,
				       trcfile_type_name(want->type), d);
			cr_assert(q == ps && coder_eq(&cf, &cs),
				  "record %zu: the fast decoder parts ways", i);
			fast_by_type[want->type]++;
		}
	}
	cr_assert_eq(ps, end);
	for (uint32_t t = TRC_REC_SPAN_BEGIN; t <= TRC_REC_FUNC_EXIT; t++)
		cr_assert_geq(fast_by_type[t], 1, "the fast decoder took no %s",
			      trcfile_type_name(t));
	free(buf);
}

/* ---- the views ------------------------------------------------------------------------- */

#define VIEW_PID 4242u
#define VIEW_TID 4243u
#define VIEW_START_NS 1000000000ull

struct line {
	char *s;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(l->s + l->n, l->cap - l->n, fmt, ap);
	va_end(ap);
	cr_assert(k >= 0 && (size_t)k < l->cap - l->n, "line too long");
	l->n += (size_t)k;
}

/* A string as the text views quote it. */
static void put_quoted(struct line *l, const char *s, uint32_t len)
{
	put(l, "\"");
	for (uint32_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20)
			put(l, "\\x%02x", c);
		else
			put(l, "%c", c);
	}
	put(l, "\"");
}

/* The line `trace-dump events` must print for r of a stream (kind, pid, tid), its fields taken
 * in order from the record as written. */
static void event_line(struct line *l, const struct trc_record *r, enum trc_stream_kind kind)
{
	uint64_t t = r->ts_ns - VIEW_START_NS;
	put(l, "%" PRIu64 ".%09" PRIu64 " ", t / 1000000000u, t % 1000000000u);
	if (kind == TRC_STREAM_THREAD)
		put(l, "%u/%u", VIEW_PID, VIEW_TID);
	else
		put(l, "%s", kind == TRC_STREAM_RSS ? "rss" : "meta");
	put(l, " %s", trcfile_type_name(r->type));
	switch (r->type) {
	case TRC_REC_SPAN_BEGIN:
	case TRC_REC_SPAN_END:
		put(l, " name=#%u", r->span.name_id);
		break;
	case TRC_REC_INSTANT:
	case TRC_REC_COUNTER:
		put(l, " name=#%u value=%" PRId64, r->value.name_id, r->value.value);
		break;
	case TRC_REC_ALLOC:
		put(l, " addr=0x%" PRIx64 " size=%" PRIu64 " stack=%u", r->alloc.addr, r->alloc.size,
		    r->alloc.stack_id);
		break;
	case TRC_REC_FREE:
		put(l, " addr=0x%" PRIx64, r->alloc.addr);
		break;
	case TRC_REC_FUNC_ENTER:
	case TRC_REC_FUNC_EXIT:
		put(l, " addr=0x%" PRIx64 " call_site=0x%" PRIx64, r->func.addr, r->func.call_site);
		break;
	case TRC_REC_RSS:
		put(l,
		    " pid=%u program_bytes=%" PRIu64 " rss_bytes=%" PRIu64 " buffers_bytes=%" PRIu64
		    " source=%s hwm_bytes=%" PRIu64 " anon_bytes=%" PRIu64 " file_bytes=%" PRIu64
		    " shmem_bytes=%" PRIu64 " rss_exact_bytes=%" PRIu64 " pss_bytes=%" PRIu64
		    " read_ns=%" PRIu64,
		    r->rss.pid, r->rss.rss_bytes - r->rss.buffers_bytes, r->rss.rss_bytes,
		    r->rss.buffers_bytes, trcfile_rss_source_name(r->rss.source), r->rss.hwm_bytes,
		    r->rss.anon_bytes, r->rss.file_bytes, r->rss.shmem_bytes,
		    r->rss.rss_exact_bytes, r->rss.pss_bytes, r->rss.read_ns);
		break;
	case TRC_REC_LOST:
		put(l, " count=%" PRIu64 " reason=%s", r->lost.count,
		    trcfile_lost_reason_name(r->lost.reason));
		break;
	case TRC_REC_THREAD:
		put(l, " pid=%u tid=%u name=", r->thread.pid, r->thread.tid);
		put_quoted(l, r->thread.name, r->thread.name_len);
		break;
	case TRC_REC_PROCESS:
		put(l, " pid=%u ppid=%u cmdline=", r->process.pid, r->process.ppid);
		put_quoted(l, r->process.cmdline, r->process.cmdline_len);
		break;
	case TRC_REC_NAME:
		put(l, " id=%u str=", r->name.id);
		put_quoted(l, r->name.str, r->name.len);
		break;
	case TRC_REC_MODULE:
		put(l, " pid=%u start=0x%" PRIx64 " end=0x%" PRIx64 " offset=0x%" PRIx64 " path=",
		    r->module.pid, r->module.start, r->module.end, r->module.offset);
		put_quoted(l, r->module.path, r->module.path_len);
		put(l, " build_id=");
		for (uint32_t i = 0; i < r->module.build_id_len; i++)
			put(l, "%02x", r->module.build_id[i]);
		break;
	case TRC_REC_NOTE:
		put(l, " text=");
		put_quoted(l, r->note.text, r->note.len);
		break;
	case TRC_REC_EXIT:
		put(l,
		    " pid=%u status=%d maxrss_bytes=%" PRIu64 " buffers_bytes=%" PRIu64 " flags=%u",
		    r->exit.pid, r->exit.status, r->exit.maxrss_bytes, r->exit.buffers_bytes,
		    r->exit.flags);
		break;
	case TRC_REC_WAIT:
		put(l, " waits=%" PRIu64 " waited_ns=%" PRIu64 " max_ns=%" PRIu64, r->wait.waits,
		    r->wait.waited_ns, r->wait.max_ns);
		break;
	case TRC_REC_MAP:
		put(l, " addr=0x%" PRIx64 " len=%" PRIu64 " kind=file stack=%u", r->map.addr,
		    r->map.len, r->map.stack_id);
		break;
	case TRC_REC_UNMAP:
		put(l, " addr=0x%" PRIx64 " len=%" PRIu64, r->map.addr, r->map.len);
		break;
	case TRC_REC_STACK:
		put(l, " id=%u truncated frames=", r->stack.id);
		for (uint32_t i = 0; i < r->stack.n; i++)
			put(l, "%s0x%" PRIx64, i ? "," : "", r->stack.frames[i]);
		break;
	}
	put(l, "\n");
}

/* Where each kind goes, as the recorder puts it: events, losses and waits on the thread's
 * stream, samples on the RSS stream, the rest on the meta stream. */
static enum trc_stream_kind view_stream(uint32_t type)
{
	if (trc_rec_is_event(type) || type == TRC_REC_LOST || type == TRC_REC_WAIT)
		return TRC_STREAM_THREAD;
	return type == TRC_REC_RSS ? TRC_STREAM_RSS : TRC_STREAM_META;
}

/* The records made fit for the views: times in one increasing order (the views merge the
 * streams by time), values the views name (an RSS source, a lost reason), every RSS figure
 * present (flags), the program's share of RSS positive, no module covering an address (no
 * symbol lookup), names unknown (printed by id). Every field still distinct. */
static void make_view_records(void)
{
	make_records();
	uint64_t ts = VIEW_START_NS + 1000;
	for (size_t i = 0; i < n_recs; i++) {
		struct trc_record *r = &recs[i];
		ts += 1 + i * 7919;
		r->ts_ns = ts;
		switch (r->type) {
		case TRC_REC_RSS:
			r->rss.source = TRC_RSS_STATUS;
			r->rss.flags = TRC_RSS_HAS_HWM | TRC_RSS_HAS_SPLIT | TRC_RSS_HAS_EXACT;
			r->rss.rss_bytes |= 1ull << 63;
			r->rss.buffers_bytes &= ~(1ull << 63);
			break;
		case TRC_REC_LOST:
			r->lost.reason = TRC_LOST_RING_FULL + (uint32_t)(i % 2);
			break;
		case TRC_REC_MODULE:
			r->module.pid = VIEW_PID + 1;
			break;
		default:
			break;
		}
	}
}

static void write_view_trace(const char *path)
{
	static const char cmd[] = "test_record_roundtrip";
	struct trcfile_header_info h = {
		.cmdline = cmd,
		.cmdline_len = sizeof(cmd) - 1,
		.pid = VIEW_PID,
		.start_mono_ns = VIEW_START_NS,
		.start_realtime_ns = 1,
		.clock_source = TRC_CLOCK_GETTIME,
		.rss_interval_ns = 100000000u,
		.rss_source = TRC_RSS_STATUS,
		.buffer_bytes = 1u << 22,
	};
	struct trcfile_writer_opts o = {.compress_threads = 1, .flags = TRCFILE_WRITER_NO_FSYNC};
	int err = 0;
	struct trcfile_writer *w = trcfile_writer_open(path, &h, &o, &err);
	cr_assert_not_null(w, "writer: %d", err);
	struct trcfile_stream *th = trcfile_stream_open(w, TRC_STREAM_THREAD, VIEW_PID, VIEW_TID);
	struct trcfile_stream *rss = trcfile_stream_open(w, TRC_STREAM_RSS, VIEW_PID, 0);
	struct trcfile_stream *meta = trcfile_stream_open(w, TRC_STREAM_META, 0, 0);
	cr_assert(th && rss && meta);
	for (size_t i = 0; i < n_recs; i++) {
		enum trc_stream_kind k = view_stream(recs[i].type);
		struct trcfile_stream *s = k == TRC_STREAM_THREAD ? th
					   : k == TRC_STREAM_RSS  ? rss
								  : meta;
		cr_assert_eq(trcfile_stream_append(s, &recs[i]), 0, "record %zu", i);
	}
	cr_assert_eq(trcfile_writer_close(w), 0);
}

/* Line by line: the first line that differs, with both. */
static void assert_lines(const char *what, const char *got, const char *want)
{
	size_t line = 1;
	const char *g = got, *x = want;
	while (*g && *x) {
		const char *ge = strchr(g, '\n'), *xe = strchr(x, '\n');
		size_t gl = ge ? (size_t)(ge - g) : strlen(g),
		       xl = xe ? (size_t)(xe - x) : strlen(x);
		if (gl != xl || memcmp(g, x, gl))
			cr_assert_fail("%s, line %zu:\n got: %.*s\nwant: %.*s", what, line, (int)gl,
				       g, (int)xl, x);
		g += gl + (ge != NULL);
		x += xl + (xe != NULL);
		line++;
	}
	cr_assert(!*g && !*x, "%s: %s at line %zu", what,
		  *g ? "more lines than written" : "lines missing", line);
}

Test(record_roundtrip, trace_dump_events_prints_every_field_in_its_place, .timeout = 120)
{
	make_view_records();
	const char *dir = e2e_tmpdir();
	char path[256];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	write_view_trace(path);
	struct line want = {.cap = 1u << 16};
	want.s = calloc(want.cap, 1);
	for (size_t i = 0; i < n_recs; i++)
		event_line(&want, &recs[i], view_stream(recs[i].type));
	struct e2e_run r = e2e_run(dir, TD, "events", path, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	assert_lines("trace-dump events", r.out, want.s);
	e2e_free(&r);
	free(want.s);
	e2e_rm_rf(dir);
}

Test(record_roundtrip, trace_dump_rss_prints_every_figure_in_its_column, .timeout = 120)
{
	make_view_records();
	const char *dir = e2e_tmpdir();
	char path[256];
	snprintf(path, sizeof(path), "%s/t.trc", dir);
	write_view_trace(path);
	struct line want = {.cap = 1u << 14};
	want.s = calloc(want.cap, 1);
	put(&want, "time_ns,pid,program_bytes,rss_bytes,buffers_bytes,source,hwm_bytes,anon_bytes,"
		   "file_bytes,shmem_bytes,rss_exact_bytes,pss_bytes,stretched,read_ns\n");
	size_t samples = 0;
	for (size_t i = 0; i < n_recs; i++) {
		const struct trc_record *x = &recs[i];
		if (x->type != TRC_REC_RSS)
			continue;
		samples++;
		put(&want,
		    "%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64
		    ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",0,%" PRIu64 "\n",
		    (uint64_t)(x->ts_ns - VIEW_START_NS), x->rss.pid,
		    x->rss.rss_bytes - x->rss.buffers_bytes, x->rss.rss_bytes, x->rss.buffers_bytes,
		    trcfile_rss_source_name(x->rss.source), x->rss.hwm_bytes, x->rss.anon_bytes,
		    x->rss.file_bytes, x->rss.shmem_bytes, x->rss.rss_exact_bytes, x->rss.pss_bytes,
		    x->rss.read_ns);
	}
	cr_assert_eq(samples, 2);
	struct e2e_run r = e2e_run(dir, TD, "rss", path, NULL);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	assert_lines("trace-dump rss", r.out, want.s);
	e2e_free(&r);
	free(want.s);
	e2e_rm_rf(dir);
}
