/* trcfile_footer_walk.c - a trace's footer read and checked in bounded memory
 * (trcfile_footer_walk.h). */
#include "trcfile_footer_walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "trcfile_reader_priv.h"

#define TRCFILE__WALK_BUF_BYTES (64u << 10)
/* The stream-entry cache: blocks of consecutive ids, direct-mapped (block b in slot b % n).
 * The writer writes chunks roughly in the order their streams ran, so a thread's chunks tend to
 * sit near each other and near the few long streams (meta, RSS) that keep a slot each. */
#define TRCFILE__STREAM_BLOCK_ENTRIES 256u
#define TRCFILE__STREAM_BLOCKS 16u

struct trcfile__stream_block {
	uint32_t first_id; /* of entry 0; UINT32_MAX: empty */
	struct trcfile__footer_stream e[TRCFILE__STREAM_BLOCK_ENTRIES];
};

/* ---- the per-stream tally, modulo 2^61 - 1 ----------------------------------------------- */

#define TRCFILE__P61 ((1ull << 61) - 1)

static uint64_t trcfile__mod_reduce(uint64_t v)
{
	v = (v & TRCFILE__P61) + (v >> 61);
	return v >= TRCFILE__P61 ? v - TRCFILE__P61 : v;
}

static uint64_t trcfile__mod_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 x = (unsigned __int128)a * b; /* < 2^122 */
	uint64_t lo = (uint64_t)x & TRCFILE__P61, hi = (uint64_t)(x >> 61); /* each < 2^61 */
	return trcfile__mod_reduce(lo + hi);
}

static uint64_t trcfile__mod_add(uint64_t a, uint64_t b)
{
	uint64_t s = a + b; /* both < 2^61 */
	return s >= TRCFILE__P61 ? s - TRCFILE__P61 : s;
}

static uint64_t trcfile__mod_pow(uint64_t b, uint64_t e)
{
	uint64_t r = 1;
	for (; e; e >>= 1, b = trcfile__mod_mul(b, b))
		if (e & 1)
			r = trcfile__mod_mul(r, b);
	return r;
}

/* Three draws per walk: the streams' weights (a keyed mix of the id), x, and the key of
 * what a stream is (its kind, pid and tid). */
struct trcfile__tally {
	uint64_t key, x, inv_x_minus_1, what_key;
	uint64_t records_streams, records_chunks; /* sum of w(id) * records */
	uint64_t seqs_streams, seqs_chunks; /* sum of w(id) * (x^0 + .. + x^(chunks-1)) */
	/* sum of w(id) * chunks * what(entry), and over the chunks given their stream entry,
	 * of w(id) * what(that entry) */
	uint64_t whats_streams, whats_chunks;
};

static uint64_t trcfile__random64(uint64_t salt)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ salt;
	}
	return v;
}

static void trcfile__tally_init(struct trcfile__tally *t)
{
	memset(t, 0, sizeof(*t));
	t->key = trcfile__random64(1);
	/* x in [2, p - 1): x - 1 is invertible. */
	t->x = 2 + trcfile__random64(2) % (TRCFILE__P61 - 3);
	t->inv_x_minus_1 = trcfile__mod_pow(t->x - 1, TRCFILE__P61 - 2);
	t->what_key = trcfile__random64(3);
}

/* A new pass under the same draws. */
static void trcfile__tally_restart(struct trcfile__tally *t)
{
	t->records_streams = t->records_chunks = 0;
	t->seqs_streams = t->seqs_chunks = 0;
	t->whats_streams = t->whats_chunks = 0;
}

static uint64_t trcfile__tally_weight(const struct trcfile__tally *t, uint32_t id)
{
	uint64_t k = id ^ t->key; /* splitmix64's finaliser */
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
	k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
	return trcfile__mod_reduce(k ^ (k >> 31));
}

/* A keyed mix of what stream entry e says its stream is. */
static uint64_t trcfile__tally_what(const struct trcfile__tally *t,
				    const struct trcfile__footer_stream *e)
{
	uint64_t k = ((uint64_t)e->pid << 32 | e->tid) ^ t->what_key;
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
	k ^= (uint64_t)e->kind * 0x9e3779b97f4a7c15ull;
	k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
	return trcfile__mod_reduce(k ^ (k >> 31));
}

static void trcfile__tally_stream(struct trcfile__tally *t, const struct trcfile__footer_stream *e)
{
	uint64_t w = trcfile__tally_weight(t, e->id);
	t->whats_streams = trcfile__mod_add(
		t->whats_streams,
		trcfile__mod_mul(trcfile__mod_mul(w, trcfile__mod_reduce(e->chunks)),
				 trcfile__tally_what(t, e)));
	t->records_streams = trcfile__mod_add(t->records_streams,
					      trcfile__mod_mul(w, trcfile__mod_reduce(e->records)));
	/* (x^n - 1) / (x - 1) */
	uint64_t geom = trcfile__mod_mul(
		trcfile__mod_add(trcfile__mod_pow(t->x, e->chunks), TRCFILE__P61 - 1),
		t->inv_x_minus_1);
	t->seqs_streams = trcfile__mod_add(t->seqs_streams, trcfile__mod_mul(w, geom));
}

static void trcfile__tally_chunk(struct trcfile__tally *t, const struct trcfile__footer_chunk *e)
{
	uint64_t w = trcfile__tally_weight(t, e->stream_id);
	t->records_chunks = trcfile__mod_add(t->records_chunks, trcfile__mod_mul(w, e->count));
	t->seqs_chunks = trcfile__mod_add(t->seqs_chunks,
					  trcfile__mod_mul(w, trcfile__mod_pow(t->x, e->seq)));
}

/* ---- the sequential read ------------------------------------------------------------------ */

/* The next n (<= the buffer) bytes of the footer, read through the buffer. */
static const uint8_t *trcfile__walk_take(struct trcfile__footer_walk *fw, size_t n, int *err)
{
	if (fw->len - fw->at < n) {
		size_t rest = fw->len - fw->at;
		memmove(fw->buf, fw->buf + fw->at, rest);
		uint64_t from = fw->pos + rest, end = fw->footer_offset + fw->footer_bytes;
		uint64_t want = end - from;
		if (want > TRCFILE__WALK_BUF_BYTES - rest)
			want = TRCFILE__WALK_BUF_BYTES - rest;
		if (rest + want < n) {
			*err = trcfile_reader_fail(fw->r, -EBADMSG, "footer ends inside an entry");
			return NULL;
		}
		const uint8_t *p = trcfile__read_at(fw->r, from, (size_t)want, err);
		if (!p)
			return NULL;
		memcpy(fw->buf + rest, p, (size_t)want);
		fw->crc = trcfile__crc32c(fw->crc, p, (size_t)want);
		fw->at = 0;
		fw->len = rest + (size_t)want;
	}
	const uint8_t *p = fw->buf + fw->at;
	fw->at += n;
	fw->pos += n;
	return p;
}

/* Starts the sequential read at footer byte `at`, its CRC from crc (that of the bytes
 * before). */
static void trcfile__walk_seek(struct trcfile__footer_walk *fw, uint64_t at, uint32_t crc)
{
	fw->pos = fw->footer_offset + at;
	fw->at = fw->len = 0;
	fw->crc = crc;
}

/* Starts a pass over the entries (both passes): at the first stream entry, no entry seen. */
static void trcfile__walk_restart(struct trcfile__footer_walk *fw)
{
	trcfile__walk_seek(fw, TRCFILE__FOOTER_FIXED_BYTES, fw->crc_fixed);
	trcfile__tally_restart(fw->tally);
	fw->streams_seen = 0;
	fw->chunks_seen = fw->chunks_listed = fw->chunks_with_stream = 0;
	fw->prev_end = fw->r->header_bytes;
	fw->why = NULL;
}

/* 1 with fw->why, for an entry that fails a check. */
static int trcfile__walk_refuse(struct trcfile__footer_walk *fw, const char *why)
{
	fw->why = why;
	return 1;
}

int trcfile__footer_walk_stream(struct trcfile__footer_walk *fw, struct trcfile__footer_stream *e)
{
	int err = 0;
	const char *why;
	const uint8_t *p = trcfile__walk_take(fw, TRCFILE__FOOTER_STREAM_BYTES, &err);
	if (!p)
		return err == -EBADMSG ? trcfile__walk_refuse(fw, "a stream entry is damaged")
				       : err;
	if (trcfile__footer_stream_get(p, e, &why) != 0)
		return trcfile__walk_refuse(fw, "a stream entry is damaged");
	if (fw->streams_seen >= fw->n_streams || e->id != fw->streams_seen)
		return trcfile__walk_refuse(fw, "stream ids are not 0, 1, 2... in the footer");
	fw->streams_seen++;
	fw->chunks_listed += e->chunks;
	trcfile__tally_stream(fw->tally, e);
	return 0;
}

int trcfile__footer_walk_chunk(struct trcfile__footer_walk *fw, struct trcfile__footer_chunk *e,
			       struct trcfile__footer_stream *s)
{
	int err = 0;
	const char *why;
	if (fw->streams_seen != fw->n_streams || fw->chunks_seen >= fw->n_chunks)
		return trcfile_reader_fail(fw->r, -EINVAL,
					   "footer walk: entries read out of order");
	const uint8_t *p = trcfile__walk_take(fw, TRCFILE__FOOTER_CHUNK_BYTES, &err);
	if (!p)
		return err == -EBADMSG ? trcfile__walk_refuse(fw, "a chunk entry is damaged") : err;
	if (trcfile__footer_chunk_get(p, e, &why) != 0)
		return trcfile__walk_refuse(fw, "a chunk entry is damaged");
	struct trcfile__chunk_ref c = trcfile__chunk_ref_of(e);
	if ((why = trcfile__ref_check(fw->r, &c, fw->footer_offset)))
		return trcfile__walk_refuse(fw, why);
	if (e->stream_id >= fw->n_streams)
		return trcfile__walk_refuse(fw, "chunk entry of an unknown stream");
	if (e->offset < fw->prev_end)
		return trcfile__walk_refuse(fw, "chunk entries not in file order, or overlapping");
	fw->prev_end = e->offset + TRCFILE__CHUNK_HDR_BYTES + e->comp_bytes;
	fw->chunks_seen++;
	trcfile__tally_chunk(fw->tally, e);
	if (s) {
		err = trcfile__footer_walk_stream_at(fw, e->stream_id, s);
		if (err)
			return err == -EBADMSG
				       ? trcfile__walk_refuse(fw, "a stream entry is damaged")
				       : err;
		if (s->id != e->stream_id)
			return trcfile__walk_refuse(fw,
						    "stream ids are not 0, 1, 2... in the footer");
		fw->chunks_with_stream++;
		struct trcfile__tally *t = fw->tally;
		t->whats_chunks = trcfile__mod_add(t->whats_chunks,
						   trcfile__mod_mul(trcfile__tally_weight(t, s->id),
								    trcfile__tally_what(t, s)));
	}
	return 0;
}

int trcfile__footer_walk_end(struct trcfile__footer_walk *fw, const char **why)
{
	const struct trcfile__tally *t = fw->tally;
	*why = NULL;
	if (fw->streams_seen != fw->n_streams || fw->chunks_seen != fw->n_chunks)
		*why = "the footer was not read to its end";
	else if (fw->chunks_listed != fw->n_chunks)
		*why = "footer stream totals do not match its chunk entries";
	else if (fw->crc != fw->footer_crc)
		*why = "footer checksum mismatch";
	else if (t->records_streams != t->records_chunks)
		*why = "footer stream totals do not match its chunk entries";
	else if (t->seqs_streams != t->seqs_chunks)
		*why = "a stream's chunk sequence numbers are not 0 .. chunks - 1";
	else if (fw->chunks_with_stream == fw->n_chunks && t->whats_streams != t->whats_chunks)
		*why = "a chunk's stream entry is not the one the stream table gave";
	return *why ? 1 : 0;
}

/* ---- the check -------------------------------------------------------------------------- */

/* The trailer and the footer's fixed part. 0, 1 (not walkable, *why) or <0. */
static int trcfile__walk_locate(struct trcfile__footer_walk *fw, const char **why)
{
	struct trcfile_reader *r = fw->r;
	int err = 0;
	if (r->size <
	    (uint64_t)r->header_bytes + TRCFILE__FOOTER_FIXED_BYTES + TRCFILE__TRAILER_BYTES) {
		*why = "no footer";
		return 1;
	}
	const uint8_t *p =
		trcfile__read_at(r, r->size - TRCFILE__TRAILER_BYTES, TRCFILE__TRAILER_BYTES, &err);
	if (!p)
		return err;
	struct trcfile__trailer t;
	if (trcfile__trailer_get(p, &t, why) != 0)
		return 1;
	uint64_t foff = t.footer_offset, fbytes = t.footer_bytes;
	if (foff < r->header_bytes || fbytes < TRCFILE__FOOTER_FIXED_BYTES ||
	    foff > r->size - TRCFILE__TRAILER_BYTES ||
	    fbytes != r->size - TRCFILE__TRAILER_BYTES - foff) {
		*why = "trailer points outside the file";
		return 1;
	}
	fw->footer_offset = foff;
	fw->footer_bytes = fbytes;
	fw->footer_crc = t.footer_crc;
	trcfile__walk_seek(fw, 0, 0);
	p = trcfile__walk_take(fw, TRCFILE__FOOTER_FIXED_BYTES, &err);
	if (!p)
		return err;
	/* walk_take CRCs whole reads: the fixed part's own, read alone */
	uint8_t fixed[TRCFILE__FOOTER_FIXED_BYTES];
	memcpy(fixed, p, sizeof(fixed));
	fw->crc_fixed = trcfile__crc32c(0, fixed, sizeof(fixed));
	struct trcfile__footer f;
	if (trcfile__footer_fixed_get(p, fbytes, &f, why) != 0)
		return 1;
	fw->n_streams = f.stream_count;
	fw->n_chunks = f.chunk_count;
	return 0;
}

int trcfile__footer_walk_check(struct trcfile__footer_walk *fw, struct trcfile_reader *r,
			       const char **why)
{
	memset(fw, 0, sizeof(*fw));
	fw->r = r;
	*why = NULL;
	fw->buf = malloc(TRCFILE__WALK_BUF_BYTES);
	if (!fw->buf)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	fw->tally = malloc(sizeof(*fw->tally));
	if (!fw->tally)
		return trcfile_reader_fail(r, -ENOMEM, "out of memory");
	int err = trcfile__walk_locate(fw, why);
	if (err)
		return err;
	trcfile__tally_init(fw->tally);
	trcfile__walk_restart(fw);
	for (uint32_t i = 0; i < fw->n_streams; i++) {
		struct trcfile__footer_stream e;
		err = trcfile__footer_walk_stream(fw, &e);
		if (err == 1)
			*why = fw->why;
		if (err)
			return err;
	}
	if (fw->chunks_listed != fw->n_chunks) {
		*why = "footer stream totals do not match its chunk entries";
		return 1;
	}
	for (uint64_t i = 0; i < fw->n_chunks; i++) {
		struct trcfile__footer_chunk e;
		err = trcfile__footer_walk_chunk(fw, &e, NULL);
		if (err == 1)
			*why = fw->why;
		if (err)
			return err;
	}
	err = trcfile__footer_walk_end(fw, why);
	if (err)
		return err;
	trcfile__walk_restart(fw);
	return 0;
}

int trcfile__footer_walk_stream_at(struct trcfile__footer_walk *fw, uint32_t id,
				   struct trcfile__footer_stream *e)
{
	if (id >= fw->n_streams)
		return trcfile_reader_fail(fw->r, -EINVAL, "stream %u is not in the footer", id);
	if (!fw->blocks) {
		fw->blocks = malloc(TRCFILE__STREAM_BLOCKS * sizeof(*fw->blocks));
		if (!fw->blocks)
			return trcfile_reader_fail(fw->r, -ENOMEM, "out of memory");
		for (unsigned i = 0; i < TRCFILE__STREAM_BLOCKS; i++)
			fw->blocks[i].first_id = UINT32_MAX;
	}
	uint32_t block = id / TRCFILE__STREAM_BLOCK_ENTRIES;
	struct trcfile__stream_block *b = &fw->blocks[block % TRCFILE__STREAM_BLOCKS];
	uint32_t first = block * TRCFILE__STREAM_BLOCK_ENTRIES;
	if (b->first_id != first) {
		uint32_t n = fw->n_streams - first < TRCFILE__STREAM_BLOCK_ENTRIES
				     ? fw->n_streams - first
				     : TRCFILE__STREAM_BLOCK_ENTRIES;
		int err = 0;
		const uint8_t *p = trcfile__read_at(
			fw->r, fw->footer_offset + trcfile__footer_stream_at(first),
			(size_t)n * TRCFILE__FOOTER_STREAM_BYTES, &err);
		if (!p)
			return err;
		b->first_id = UINT32_MAX;
		for (uint32_t i = 0; i < n; i++) {
			const char *why;
			if (trcfile__footer_stream_get(p + (size_t)i * TRCFILE__FOOTER_STREAM_BYTES,
						       &b->e[i], &why) != 0)
				return trcfile_reader_fail(fw->r, -EBADMSG, "%s", why);
		}
		b->first_id = first;
	}
	*e = b->e[id - first];
	return 0;
}

void trcfile__footer_walk_free(struct trcfile__footer_walk *fw)
{
	free(fw->buf);
	free(fw->blocks);
	free(fw->tally);
	memset(fw, 0, sizeof(*fw));
}
