/* export_perfetto_heap.c - the allocations' call stacks in the Perfetto export, as the heap
 * profile Perfetto's UI draws as a flame graph: heapprofd's ProfilePacket.
 *
 * Purpose: a trace that carries allocation call stacks (trace-run --alloc-stacks, STACK
 * records) shows, besides the "heap live bytes" counters, one heap profile a process: for
 * each distinct call stack of the process, a HeapSample of what it allocated and what of that
 * was freed (bytes and counts), the stack's frames named by the export's namer (trace-dump's
 * symbol names, the ones pprof gets), each frame in its module's Mapping (path, build-id,
 * range; rel_pc the file offset of the address named). Frames go outermost first (Callstack
 * "bottom frame first": trace processor makes frame_ids[0] the root). Only the call stack's
 * frames: the spans open on the thread (which pprof and flame put above them) are not native
 * frames, and a heap profile has none.
 *
 * Weights: with --alloc-stacks all an allocation is its bytes and one allocation, one without
 * a stack goes to the single frame "[no call stack]" of its process (so the profile's total is
 * every byte allocated); with sampled stacks (sample=S) alloc_weight.h's n / p bytes and 1 / p
 * allocations, an allocation without a stack nothing (the other views' rule). A free takes
 * back what its allocation added (the live table keeps each allocation's sample).
 *
 * Dumps: heapprofd's values are cumulative (allocated and freed since the start), and trace
 * processor turns consecutive dumps of a process into deltas, per sequence: so every dump is
 * on one sequence, in time order, indexed from 0. One dump for each trace at its end (every
 * process of it), and one for each process at its RSS peak (the largest sample of its "RSS"
 * counter, when before the end): the stacks' values as they were at that moment, kept for one
 * copy of the counts per stack (each stack's first change after a new peak copies its counts;
 * a stack unchanged since then reads its current ones), never per record. ProcessHeapSamples'
 * timestamp is read on CLOCK_MONOTONIC_COARSE (profile_module.cc): a clock snapshot before the
 * first dump declares it equal to the trace clock (the same clock at tick resolution; for
 * several FILEs, the merged REALTIME, by the same convention).
 *
 * Bounds: one sample per distinct (process, stack), at most EXPORT__PFH_MAX_SAMPLES (past it,
 * allocations of new stacks are left out and the process's dumps say hit_guardrail, as they do
 * when the live table was full); a dump is cut into packets of about 256 KiB
 * (EXPORT__PFH_PACKET_BYTES; ProfilePacket.continued: the interned tables hold until the last
 * one). Memory: the samples, the sizes of live allocations of 2^40 bytes or more, and one
 * dump's interned strings, frames and mappings.
 *
 * Schema: protos/perfetto/trace/profiling/profile_packet.proto and profile_common.proto of
 * Perfetto (the fields used copied in tests/perfetto_trace.proto); what trace processor does
 * with them: src/trace_processor/importers/proto/profile_module.cc and
 * profile_packet_sequence_state.cc (a frame without a known mapping, or a mapping or frame
 * naming an unknown string, is dropped: every frame here has a mapping, every mapping a
 * build-id string, empty when the module has none).
 *
 * Threads: an exporter's state belongs to one export.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_weight.h"
#include "export_perfetto_priv.h"

/* A live allocation's value in the live table: its size in the low bits (wider sizes: in
 * export__pf_heap's wide), its sample + 1 above. */
#define EXPORT__PFH_SIZE_BITS 40
#define EXPORT__PFH_SIZE_MASK ((1ull << EXPORT__PFH_SIZE_BITS) - 1)
#define EXPORT__PFH_MAX_SAMPLES (1u << 18)
#define EXPORT__PFH_PACKET_BYTES (1u << 18)
#define EXPORT__PFH_HEAP_NAME "libc.malloc" /* heapprofd's name of the malloc heap */
#define EXPORT__PFH_NO_STACK "[no call stack]"

enum {
	PF_PROFILE_PACKET = 37,
	PF_CLOCK_MONOTONIC_COARSE = 4,
	/* ProfilePacket */
	PFH_STRINGS = 1,
	PFH_FRAMES = 2,
	PFH_CALLSTACKS = 3,
	PFH_MAPPINGS = 4,
	PFH_DUMPS = 5,
	PFH_CONTINUED = 6,
	PFH_INDEX = 7,
	/* the sections of a packet, in the order written */
	PFH_SEC_STRINGS = 0,
	PFH_SEC_MAPPINGS,
	PFH_SEC_FRAMES,
	PFH_SEC_CALLSTACKS,
	PFH_SEC_DUMPS,
	PFH_SECS,
};

struct export__pfh_counts {
	uint64_t bytes, freed, allocs, frees;
};

/* One (process, call stack): what it allocated and freed so far, and at its process's latest
 * RSS peak (peak, valid when epoch is the process's peak_epoch; else now holds then too). */
struct export__pfh_sample {
	uint32_t proc; /* index in p->procs */
	uint32_t stack; /* the trace's stack id; 0: allocations without one */
	uint32_t epoch;
	struct export__pfh_counts now, peak;
};

struct export__pfh_str {
	size_t off, len; /* in arena */
};

struct export__pfh_frame {
	uint32_t pid;
	uint64_t addr;
};

struct export__pf_heap {
	/* The sizes of live allocations wider than EXPORT__PFH_SIZE_BITS (rare: the live
	 * table holds EXPORT__PFH_SIZE_MASK for them), by (process, address). */
	struct allocmap *wide;
	/* A wide allocation at a live (process, address) of a wide one: the size it replaced
	 * in wide, for the release that follows (export__pf_alloc). */
	uint64_t replaced_proc, replaced_addr, replaced_size;
	struct export__pfh_sample *s;
	size_t n, cap;
	struct u64map ix; /* proc << 32 | stack id -> index in s */
	uint64_t last_key; /* the last key looked up and its sample (a loop's allocations) */
	uint32_t last_idx;
	bool has_last;
	/* One dump's interning (until its last packet). */
	struct pb_buf arena; /* the interned strings' bytes */
	struct export__pfh_str *strs;
	size_t n_strs, cap_strs;
	struct u64index str_ix;
	struct export__pfh_frame *frames;
	size_t n_frames, cap_frames;
	struct u64index frame_ix;
	struct u64map maps; /* module address -> mapping iid */
	uint64_t next_map, no_map, no_stack_frame;
	struct pb_buf sec[PFH_SECS];
	struct pb_buf cur; /* the HeapSamples of the process being dumped */
	uint64_t index; /* the next packet's ProfilePacket.index */
	uint32_t seq;
	bool clock_done;
};

static uint64_t export__pfh_str_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct export__pf_heap *h = ctx;
	return u64map_hash_bytes(h->arena.p + h->strs[i].off, h->strs[i].len, seed);
}

static uint64_t export__pfh_frame_key_hash(uint32_t pid, uint64_t addr, uint64_t seed)
{
	return u64map_mix(addr ^ u64map_mix(pid, seed), seed);
}

static uint64_t export__pfh_frame_hash(const void *ctx, uint32_t i, uint64_t seed)
{
	const struct export__pf_heap *h = ctx;
	return export__pfh_frame_key_hash(h->frames[i].pid, h->frames[i].addr, seed);
}

struct export__pf_heap *export__pf_heap_new(void)
{
	struct export__pf_heap *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	u64map_init(&h->ix, EXPORT__PFH_MAX_SAMPLES);
	u64map_init(&h->maps, SIZE_MAX);
	u64index_init(&h->str_ix, export__pfh_str_hash, h);
	u64index_init(&h->frame_ix, export__pfh_frame_hash, h);
	return h;
}

void export__pf_heap_free(struct export__pf_heap *h)
{
	if (!h)
		return;
	allocmap_free(h->wide);
	free(h->s);
	u64map_destroy(&h->ix);
	u64map_destroy(&h->maps);
	u64index_destroy(&h->str_ix);
	u64index_destroy(&h->frame_ix);
	free(h->strs);
	free(h->frames);
	pb_buf_free(&h->arena);
	for (int i = 0; i < PFH_SECS; i++)
		pb_buf_free(&h->sec[i]);
	pb_buf_free(&h->cur);
	free(h);
}

bool export__pf_heap_wanted(const struct trcfile_reader *r)
{
	return trcfile_reader_stack_count(r) > 0;
}

/* ---- the records' side ----------------------------------------------------------------- */

static inline uint64_t export__pfh_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Sample s is about to change: its counts at its process's latest peak are kept first. */
static void export__pfh_touch(struct export__pf *p, struct export__pfh_sample *s)
{
	uint32_t e = p->procs[s->proc].peak_epoch;
	if (s->epoch != e) {
		s->peak = s->now;
		s->epoch = e;
	}
}

/* The sample of stack id of process pr (a stack the trace does not define is none, 0);
 * UINT32_MAX when the samples are at their bound or out of memory. */
static uint32_t export__pfh_sample(struct export__pf *p, struct export__pf_proc *pr, uint32_t id)
{
	struct export__pf_heap *h = p->heap;
	uint32_t proc = (uint32_t)(pr - p->procs);
	uint64_t key = (uint64_t)proc << 32 | id;
	if (h->has_last && h->last_key == key)
		return h->last_idx;
	const uint64_t *v = u64map_get(&h->ix, key);
	if (v) {
		h->has_last = true;
		h->last_key = key;
		h->last_idx = (uint32_t)*v;
		return (uint32_t)*v;
	}
	uint32_t n = 0;
	if (id && (!trcfile_reader_stack(pr->r, id, &n, NULL) || !n)) {
		/* Not defined: its allocations are those without a stack (the same sample, found
		 * by its own key from now on). */
		uint32_t i = export__pfh_sample(p, pr, 0);
		if (i != UINT32_MAX)
			(void)u64map_put(&h->ix, key, i, NULL, NULL); /* else: looked up again */
		return i;
	}
	if (h->n >= EXPORT__PFH_MAX_SAMPLES) {
		pr->heap_capped = true;
		return UINT32_MAX;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct export__pfh_sample *s = realloc(h->s, cap * sizeof(*s));
		if (!s) {
			p->err = -ENOMEM;
			return UINT32_MAX;
		}
		h->s = s;
		h->cap = cap;
	}
	if (u64map_put(&h->ix, key, h->n, NULL, NULL)) {
		pr->heap_capped = true;
		return UINT32_MAX;
	}
	h->s[h->n] =
		(struct export__pfh_sample){.proc = proc, .stack = id, .epoch = pr->peak_epoch};
	return (uint32_t)h->n++;
}

uint64_t export__pf_heap_alloc(struct export__pf *p, struct export__pf_proc *pr, uint64_t proc,
			       const struct trc_record *rec)
{
	struct export__pf_heap *h = p->heap;
	uint64_t size = rec->alloc.size;
	uint64_t kept = size;
	h->replaced_size = 0;
	if (size >= EXPORT__PFH_SIZE_MASK) {
		kept = EXPORT__PFH_SIZE_MASK;
		if (!h->wide)
			h->wide = allocmap_new(EXPORT__PF_LIVE_MAX_ENTRIES);
		uint64_t was = 0;
		if (!h->wide || allocmap_put(h->wide, proc, rec->alloc.addr, size, &was))
			p->live_approximate = true;
		h->replaced_proc = proc;
		h->replaced_addr = rec->alloc.addr;
		h->replaced_size = was;
	}
	double sb = alloc_weight_sample_bytes(pr->r);
	if (sb > 0 && !rec->alloc.stack_id)
		return kept; /* not sampled: the sampled ones stand for it */
	uint32_t i = export__pfh_sample(p, pr, rec->alloc.stack_id);
	if (i == UINT32_MAX)
		return kept;
	struct export__pfh_sample *s = &h->s[i];
	export__pfh_touch(p, s);
	s->now.bytes = export__pfh_add(s->now.bytes, alloc_weight_bytes(size, sb));
	s->now.allocs = export__pfh_add(s->now.allocs, alloc_weight_count(size, sb));
	return kept | (uint64_t)(i + 1) << EXPORT__PFH_SIZE_BITS;
}

uint64_t export__pf_heap_release(struct export__pf *p, uint64_t proc, uint64_t addr, uint64_t live)
{
	uint64_t size = live & EXPORT__PFH_SIZE_MASK;
	uint64_t i = live >> EXPORT__PFH_SIZE_BITS;
	struct export__pf_heap *h = p->heap;
	if (size == EXPORT__PFH_SIZE_MASK && h->replaced_size && h->replaced_proc == proc &&
	    h->replaced_addr == addr)
		size = h->replaced_size;
	else if (size == EXPORT__PFH_SIZE_MASK && h->wide)
		(void)allocmap_take(h->wide, proc, addr, &size);
	h->replaced_size = 0;
	if (!i || i > h->n)
		return size;
	struct export__pfh_sample *s = &h->s[i - 1];
	double sb = alloc_weight_sample_bytes(p->procs[s->proc].r);
	export__pfh_touch(p, s);
	/* What the allocation added, taken back (the same weights: never more than added). */
	s->now.freed = export__pfh_add(s->now.freed, alloc_weight_bytes(size, sb));
	s->now.frees = export__pfh_add(s->now.frees, alloc_weight_count(size, sb));
	return size;
}

void export__pf_heap_rss(struct export__pf_proc *pr, uint64_t ts, uint64_t bytes)
{
	if (pr->rss_seen && bytes <= pr->rss_peak)
		return;
	pr->rss_seen = true;
	pr->rss_peak = bytes;
	pr->rss_peak_ts = ts;
	pr->peak_epoch++;
}

/* ---- the dumps -------------------------------------------------------------------------- */

/* The iid of string s (len bytes) in the dump, interned (an InternedString) on first use. */
static uint64_t export__pfh_str(struct export__pf *p, const void *s, size_t len)
{
	struct export__pf_heap *h = p->heap;
	uint64_t hash = u64map_hash_bytes(s, len, u64index_seed(&h->str_ix));
	uint32_t e;
	for (size_t pos = u64index_start(&h->str_ix, hash);
	     (e = u64index_next(&h->str_ix, &pos)) != U64INDEX_END;)
		if (h->strs[e].len == len && !memcmp(h->arena.p + h->strs[e].off, s, len))
			return e + 1u;
	if (h->n_strs == h->cap_strs) {
		size_t cap = h->cap_strs ? h->cap_strs * 2 : 256;
		struct export__pfh_str *n = realloc(h->strs, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return 0;
		}
		h->strs = n;
		h->cap_strs = cap;
	}
	if (pb_reserve(&h->arena, len + 1)) {
		p->err = -ENOMEM;
		return 0;
	}
	h->strs[h->n_strs] = (struct export__pfh_str){h->arena.len, len};
	if (len)
		memcpy(h->arena.p + h->arena.len, s, len);
	h->arena.len += len;
	if (u64index_add(&h->str_ix, (uint32_t)h->n_strs, hash)) {
		p->err = -ENOMEM;
		return 0;
	}
	uint64_t iid = ++h->n_strs;
	struct pb_buf *b = &h->sec[PFH_SEC_STRINGS];
	size_t m = pb_open(b, PFH_STRINGS);
	pb_uint(b, 1, iid);
	pb_bytes(b, 2, s, len);
	pb_close(b, m);
	return iid;
}

/* The iid of module m's Mapping (NULL: the one of addresses no module covers). */
static uint64_t export__pfh_mapping(struct export__pf *p, const struct trcfile_module *m)
{
	struct export__pf_heap *h = p->heap;
	if (!m && h->no_map)
		return h->no_map;
	const uint64_t *v = m ? u64map_get(&h->maps, (uint64_t)(uintptr_t)m) : NULL;
	if (v)
		return *v;
	uint64_t build_id =
		m ? export__pfh_str(p, m->build_id, m->build_id_len) : export__pfh_str(p, "", 0);
	uint64_t path = m ? export__pfh_str(p, m->path, m->path_len) : 0;
	uint64_t iid = ++h->next_map;
	if (m ? u64map_put(&h->maps, (uint64_t)(uintptr_t)m, iid, NULL, NULL) != 0 : false) {
		p->err = -ENOMEM;
		return 0;
	}
	if (!m)
		h->no_map = iid;
	struct pb_buf *b = &h->sec[PFH_SEC_MAPPINGS];
	size_t k = pb_open(b, PFH_MAPPINGS);
	pb_uint(b, 1, iid);
	pb_uint(b, 2, build_id);
	if (m) {
		pb_uint(b, 4, m->start);
		pb_uint(b, 5, m->end);
		/* One component, the whole path: trace processor joins components with '/'
		 * and drops the extra one before an absolute path. */
		pb_uint(b, 7, path);
		pb_uint(b, 8, m->offset);
	}
	pb_close(b, k);
	return iid;
}

/* A Frame: iid, name, mapping, rel_pc. */
static void export__pfh_put_frame(struct export__pf *p, uint64_t iid, uint64_t name, uint64_t map,
				  uint64_t rel_pc)
{
	struct pb_buf *b = &p->heap->sec[PFH_SEC_FRAMES];
	size_t k = pb_open(b, PFH_FRAMES);
	pb_uint(b, 1, iid);
	pb_uint(b, 2, name);
	pb_uint(b, 3, map);
	pb_uint(b, 4, rel_pc);
	pb_close(b, k);
}

/* The iid of the frame at addr (the return address less one) of process pr, interned on first
 * use: named by the export's namer, in its module's mapping. */
static uint64_t export__pfh_frame(struct export__pf *p, const struct export__pf_proc *pr,
				  uint64_t addr)
{
	struct export__pf_heap *h = p->heap;
	uint64_t hash =
		export__pfh_frame_key_hash(pr->trace_pid, addr, u64index_seed(&h->frame_ix));
	uint32_t e;
	for (size_t pos = u64index_start(&h->frame_ix, hash);
	     (e = u64index_next(&h->frame_ix, &pos)) != U64INDEX_END;)
		if (h->frames[e].pid == pr->trace_pid && h->frames[e].addr == addr)
			return e + 2u; /* iid 1 is the frame "[no call stack]" */
	if (h->n_frames == h->cap_frames) {
		size_t cap = h->cap_frames ? h->cap_frames * 2 : 256;
		struct export__pfh_frame *n = realloc(h->frames, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return 0;
		}
		h->frames = n;
		h->cap_frames = cap;
	}
	h->frames[h->n_frames] = (struct export__pfh_frame){pr->trace_pid, addr};
	if (u64index_add(&h->frame_ix, (uint32_t)h->n_frames, hash)) {
		p->err = -ENOMEM;
		return 0;
	}
	uint64_t iid = ++h->n_frames + 1;
	char name[320];
	size_t k =
		p->o->names.name(p->o->names.ctx, pr->r, pr->trace_pid, addr, name, sizeof(name));
	const struct trcfile_module *m = trcfile_reader_module(pr->r, pr->trace_pid, addr);
	uint64_t name_iid = export__pfh_str(p, name, k);
	uint64_t map = export__pfh_mapping(p, m);
	export__pfh_put_frame(p, iid, name_iid, map, m ? addr - m->start + m->offset : addr);
	return iid;
}

/* Sample i's Callstack (iid i + 1, the same in every dump), outermost frame first. */
static void export__pfh_callstack(struct export__pf *p, const struct export__pf_proc *pr,
				  uint32_t i)
{
	struct export__pf_heap *h = p->heap;
	uint32_t n = 0;
	const uint64_t *fr =
		h->s[i].stack ? trcfile_reader_stack(pr->r, h->s[i].stack, &n, NULL) : NULL;
	uint64_t ids[TRC_STACK_DEPTH_MAX];
	uint32_t k = 0;
	if (!fr || !n) {
		if (!h->no_stack_frame) {
			h->no_stack_frame = 1;
			export__pfh_put_frame(p, 1,
					      export__pfh_str(p, EXPORT__PFH_NO_STACK,
							      strlen(EXPORT__PFH_NO_STACK)),
					      export__pfh_mapping(p, NULL), 0);
		}
		ids[k++] = 1;
	} else {
		if (n > TRC_STACK_DEPTH_MAX)
			n = TRC_STACK_DEPTH_MAX;
		for (uint32_t j = n; j-- > 0;)
			ids[k++] = export__pfh_frame(p, pr, fr[j] ? fr[j] - 1 : 0);
	}
	struct pb_buf *b = &h->sec[PFH_SEC_CALLSTACKS];
	size_t c = pb_open(b, PFH_CALLSTACKS);
	pb_uint(b, 1, (uint64_t)i + 1);
	for (uint32_t j = 0; j < k; j++)
		pb_uint(b, 2, ids[j]); /* repeated, not packed: as profile_common.proto declares */
	pb_close(b, c);
}

static void export__pfh_append(struct pb_buf *b, const struct pb_buf *src)
{
	if (src->err) {
		b->err = src->err;
		return;
	}
	if (!src->len || pb_reserve(b, src->len))
		return;
	memcpy(b->p + b->len, src->p, src->len);
	b->len += src->len;
}

/* The HeapSamples gathered for process pr into the packet's process_dumps (nothing when none). */
static void export__pfh_close_proc(struct export__pf *p, const struct export__pf_proc *pr,
				   uint64_t ts)
{
	struct export__pf_heap *h = p->heap;
	if (!h->cur.len)
		return;
	struct pb_buf *b = &h->sec[PFH_SEC_DUMPS];
	size_t d = pb_open(b, PFH_DUMPS);
	pb_uint(b, 1, pr->pid);
	export__pfh_append(b, &h->cur);
	pb_uint(b, 9, ts);
	if (pr->heap_capped || p->live_approximate)
		pb_uint(b, 10, 1); /* hit_guardrail: some allocations are not in it */
	pb_str(b, 11, EXPORT__PFH_HEAP_NAME);
	double sb = alloc_weight_sample_bytes(pr->r);
	if (sb > 0)
		pb_uint(b, 12, (uint64_t)sb);
	pb_close(b, d);
	pb_reset(&h->cur);
}

/* The packet of what is gathered, at ts: ProfilePacket continued (more of the dump follows)
 * or its last. The first ever is preceded by the clock snapshot and starts the sequence. */
static void export__pfh_emit(struct export__pf *p, uint64_t ts, bool continued)
{
	struct export__pf_heap *h = p->heap;
	struct pb_buf *b = &p->pkt;
	if (!h->clock_done) {
		h->clock_done = true;
		h->seq = p->next_seq_id++;
		pb_reset(b);
		size_t pk = pb_open(b, PF_TRACE_PACKET);
		pb_uint(b, PF_TIMESTAMP, ts);
		pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
		pb_uint(b, PF_SEQ_ID, 1);
		size_t cs = pb_open(b, PF_CLOCK_SNAPSHOT);
		size_t c = pb_open(b, 1);
		pb_uint(b, 1, PF_CLOCK_MONOTONIC_COARSE);
		pb_uint(b, 2, ts);
		pb_close(b, c);
		c = pb_open(b, 1);
		pb_uint(b, 1, p->clock);
		pb_uint(b, 2, ts);
		pb_close(b, c);
		pb_close(b, cs);
		pb_close(b, pk);
		export__pf_emit(p);
	}
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	pb_uint(b, PF_TIMESTAMP, ts);
	pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
	pb_uint(b, PF_SEQ_ID, h->seq);
	size_t pp = pb_open(b, PF_PROFILE_PACKET);
	for (int i = 0; i < PFH_SECS; i++) {
		export__pfh_append(b, &h->sec[i]);
		pb_reset(&h->sec[i]);
	}
	if (continued)
		pb_uint(b, PFH_CONTINUED, 1);
	pb_uint(b, PFH_INDEX, h->index++);
	pb_close(b, pp);
	pb_close(b, pk);
	export__pf_emit(p);
}

static size_t export__pfh_pending(const struct export__pf_heap *h)
{
	size_t n = h->cur.len;
	for (int i = 0; i < PFH_SECS; i++)
		n += h->sec[i].len;
	return n;
}

/* One dump at ts: of process only (index in p->procs), at its peak, or of every process of
 * trace r (only NULL), at the end. by_proc lists the samples of each process (from start[k]
 * to start[k + 1]). Writes nothing when no sample of them has a value. */
static void export__pfh_dump(struct export__pf *p, uint64_t ts, const struct trcfile_reader *r,
			     const size_t *only, const uint32_t *by_proc, const size_t *start)
{
	struct export__pf_heap *h = p->heap;
	u64index_destroy(&h->str_ix);
	u64index_destroy(&h->frame_ix);
	u64map_destroy(&h->maps);
	h->n_strs = h->n_frames = 0;
	h->next_map = h->no_map = h->no_stack_frame = 0;
	pb_reset(&h->arena);
	bool wrote = false;
	for (size_t k = only ? *only : 0; k < (only ? *only + 1 : p->n_procs) && !p->err; k++) {
		const struct export__pf_proc *pr = &p->procs[k];
		if (!only && pr->r != r)
			continue;
		for (size_t j = start[k]; j < start[k + 1] && !p->err; j++) {
			uint32_t i = by_proc[j];
			const struct export__pfh_sample *s = &h->s[i];
			const struct export__pfh_counts *c =
				only && s->epoch == pr->peak_epoch ? &s->peak : &s->now;
			if (!c->bytes && !c->allocs)
				continue;
			export__pfh_callstack(p, pr, i);
			struct pb_buf *b = &h->cur;
			size_t m = pb_open(b, 2);
			pb_uint(b, 1, (uint64_t)i + 1);
			pb_uint(b, 2, c->bytes);
			pb_uint(b, 3, c->freed);
			pb_uint(b, 5, c->allocs);
			pb_uint(b, 6, c->frees);
			pb_close(b, m);
			wrote = true;
			if (export__pfh_pending(h) >= EXPORT__PFH_PACKET_BYTES) {
				export__pfh_close_proc(p, pr, ts);
				export__pfh_emit(p, ts, true);
			}
		}
		export__pfh_close_proc(p, pr, ts);
	}
	for (int i = 0; i < PFH_SECS; i++)
		if (h->sec[i].err)
			p->err = h->sec[i].err;
	if (h->arena.err || h->cur.err)
		p->err = -ENOMEM;
	if (wrote && !p->err)
		export__pfh_emit(p, ts, false);
	for (int i = 0; i < PFH_SECS; i++)
		pb_reset(&h->sec[i]);
}

struct export__pfh_when {
	uint64_t ts;
	unsigned trace; /* end dumps: the trace's index */
	size_t proc; /* peak dumps: the process; SIZE_MAX for an end dump */
};

static int export__pfh_when_cmp(const void *a, const void *b)
{
	const struct export__pfh_when *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* at one time, peaks before ends (each dump of a process at least as late as the last) */
	return (x->proc == SIZE_MAX) - (y->proc == SIZE_MAX);
}

void export__pf_heap_finish(struct export__pf *p, struct trcfile_reader *const *r,
			    const uint64_t *end_ts, unsigned n)
{
	struct export__pf_heap *h = p->heap;
	if (!h || !h->n || p->err)
		return;
	size_t np = p->n_procs;
	size_t *start = calloc(np + 1, sizeof(*start));
	uint32_t *by_proc = malloc(h->n * sizeof(*by_proc));
	struct export__pfh_when *w = malloc((n + np) * sizeof(*w));
	if (!start || !by_proc || !w) {
		p->err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < h->n; i++)
		start[h->s[i].proc + 1]++;
	for (size_t k = 0; k < np; k++)
		start[k + 1] += start[k];
	size_t *fill = calloc(np + 1, sizeof(*fill));
	if (!fill) {
		p->err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < h->n; i++) {
		uint32_t k = h->s[i].proc;
		by_proc[start[k] + fill[k]++] = (uint32_t)i;
	}
	free(fill);
	size_t nw = 0;
	for (unsigned t = 0; t < n; t++)
		w[nw++] = (struct export__pfh_when){end_ts[t], t, SIZE_MAX};
	for (size_t k = 0; k < np; k++) {
		const struct export__pf_proc *pr = &p->procs[k];
		if (start[k] == start[k + 1] || !pr->rss_seen)
			continue;
		for (unsigned t = 0; t < n; t++)
			if (r[t] == pr->r) {
				if (pr->rss_peak_ts < end_ts[t])
					w[nw++] = (struct export__pfh_when){pr->rss_peak_ts, t, k};
				break; /* one peak a process */
			}
	}
	qsort(w, nw, sizeof(*w), export__pfh_when_cmp);
	for (size_t i = 0; i < nw && !p->err; i++)
		export__pfh_dump(p, w[i].ts, r[w[i].trace],
				 w[i].proc == SIZE_MAX ? NULL : &w[i].proc, by_proc, start);
out:
	free(start);
	free(by_proc);
	free(w);
}
