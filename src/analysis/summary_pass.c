/* summary_pass.c - one stream of the summary: every record decoded once and counted.
 *
 * Purpose: every figure of the summary except live bytes is a sum or an extreme that does not
 * depend on the order across streams, so each stream is walked alone (no merge), chunk by
 * chunk through a cursor's chunk buffer, its records decoded by the codec's one decoder
 * (trcfile__decode_fast inline for the event types, trcfile__decode_slow for the rest and for
 * a chunk's last TRCFILE__FAST_MARGIN bytes). Each record goes to the part it concerns
 * (summary_priv.h); lost records and notes are kept here.
 *
 * The hot loop (summary__pass_chunk): span begin/end, counter and instant records are counted
 * right there, the common cases of span matching included (a push when there is room, a pop
 * when the top matches), with the span stack's size and capacity in locals: the aggregation's
 * stores are uint64_t, which may alias any size_t or uint64_t field the compiler would
 * otherwise reload per record (pointers, like the name table's, cannot be aliased so). Anything
 * rarer calls out of line into its part.
 *
 * Threads: the reader's thread.
 */
#include "summary_priv.h"

/* At most this many notes are kept (the rest are counted), each cut to this many bytes. */
#define SUMMARY__NOTES_MAX 1000u
#define SUMMARY__NOTE_MAX 4096u

/* What a pass over one stream has seen besides what its parts keep. */
struct summary__walk {
	struct summary_thread *th; /* the stream's thread, or NULL */
	/* Records per type, except those the hot loop counts per name id (from the per-id
	 * figures at the end: summary__names_finish). */
	uint64_t per_type[32];
	uint64_t first, last; /* smallest and largest time */
};

/* The types counted per name id. */
static bool summary__name_counted(unsigned t)
{
	return t == TRC_REC_SPAN_BEGIN || t == TRC_REC_SPAN_END || t == TRC_REC_INSTANT ||
	       t == TRC_REC_COUNTER;
}

static void summary__note(struct summary__state *m, const struct trc_record *rec)
{
	struct summary *s = m->s;
	if (s->n_notes >= SUMMARY__NOTES_MAX) {
		s->notes_dropped++;
		return;
	}
	if (s->n_notes == m->cap_notes) {
		size_t cap = m->cap_notes ? 2 * m->cap_notes : 8;
		void *p = realloc(s->notes, cap * sizeof(*s->notes));
		if (!p)
			goto nomem;
		s->notes = p;
		m->cap_notes = cap;
	}
	uint32_t len = rec->note.len < SUMMARY__NOTE_MAX ? rec->note.len : SUMMARY__NOTE_MAX;
	char *text = summary__strndup(rec->note.text, len);
	if (!text)
		goto nomem;
	s->notes[s->n_notes++] = (struct summary_note){rec->ts_ns, text};
	return;
nomem:
	summary__nomem(m);
}

static int summary__cmp_note(const void *a, const void *b)
{
	const struct summary_note *x = a, *y = b;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

void summary__notes_finish(struct summary__state *m)
{
	struct summary *s = m->s;
	if (s->n_notes)
		qsort(s->notes, s->n_notes, sizeof(*s->notes), summary__cmp_note);
}

static void summary__lost(struct summary__state *m, const struct trc_record *rec,
			  struct summary_thread *th)
{
	struct summary *s = m->s;
	if (rec->lost.reason < 8)
		s->lost_per_reason[rec->lost.reason] += rec->lost.count;
	if (rec->lost.reason == TRC_LOST_SAMPLER_LATE) {
		s->rss_ticks_skipped += rec->lost.count;
	} else {
		s->events_lost += rec->lost.count;
		if (th)
			th->lost += rec->lost.count;
		if (rec->lost.count) {
			s->lost_spark[summary__spark_col(m, rec->ts_ns)] += rec->lost.count;
			if (!s->lost_first_ts_ns || rec->ts_ns < s->lost_first_ts_ns)
				s->lost_first_ts_ns = rec->ts_ns;
			if (rec->ts_ns > s->lost_last_ts_ns)
				s->lost_last_ts_ns = rec->ts_ns;
			/* Events of this stream are missing here: the spans and functions open on
			 * it may have ended in the gap, so they end as unknown, never paired with
			 * an END after it (a 20 ns span would show as lasting the whole gap). */
			s->spans_cut_by_loss += summary__spans_open(&m->spans);
			m->spans.n = 0;
		}
	}
}

/* Any record, the general way (also the name-counted types near a chunk's end). */
static void summary__record(struct summary__state *m, const struct trc_record *rec,
			    struct summary_thread *th)
{
	struct summary__idstat *st;
	switch (rec->type) {
	case TRC_REC_SPAN_BEGIN:
		st = summary__idstat(m, rec->span.name_id);
		if (!st)
			return;
		st->begins++;
		summary__span_begin(m, rec->span.name_id, 0, rec->ts_ns);
		break;
	case TRC_REC_SPAN_END:
		st = summary__idstat(m, rec->span.name_id);
		if (!st)
			return;
		st->ends++;
		summary__span_end(m, rec->span.name_id, 0, rec->ts_ns);
		break;
	case TRC_REC_FUNC_ENTER:
		summary__span_begin(m, 0, 1, rec->ts_ns);
		break;
	case TRC_REC_FUNC_EXIT:
		summary__span_end(m, 0, 1, rec->ts_ns);
		break;
	case TRC_REC_INSTANT:
		st = summary__idstat(m, rec->value.name_id);
		if (st)
			st->instants++;
		break;
	case TRC_REC_COUNTER:
		st = summary__idstat(m, rec->value.name_id);
		if (st)
			summary__counter(st, rec->value.value, rec->ts_ns);
		break;
	case TRC_REC_ALLOC:
		m->s->alloc_bytes += rec->alloc.size;
		break;
	case TRC_REC_RSS:
		summary__rss_sample(m, rec);
		summary__procs_record(m, rec);
		break;
	case TRC_REC_PROCESS:
		summary__procs_record(m, rec);
		break;
	case TRC_REC_LOST:
		summary__lost(m, rec, th);
		break;
	case TRC_REC_THREAD:
		summary__thread_named(m, rec);
		break;
	case TRC_REC_NOTE:
		summary__note(m, rec);
		break;
	case TRC_REC_EXIT:
		summary__rss_exit(m, rec);
		summary__procs_record(m, rec);
		break;
	case TRC_REC_WAIT:
		m->s->waits += rec->wait.waits;
		m->s->waited_ns += rec->wait.waited_ns;
		if (rec->wait.max_ns > m->s->wait_max_ns)
			m->s->wait_max_ns = rec->wait.max_ns;
		if (th) {
			th->waits += rec->wait.waits;
			th->waited_ns += rec->wait.waited_ns;
		}
		break;
	default: /* free, function enter and exit, name, module: counted only */
		break;
	}
}

/* One record the codec's fast decoder declined: decoded at *pp with the checked decoder and
 * counted. 0, -EBADMSG (*pp still on the record) or m->err. Out of line, on copies of the
 * chunk loop's position and coder, so that loop keeps its own in registers. */
__attribute__((noinline)) static int summary__pass_slow(struct summary__state *m,
							struct summary__walk *w, const uint8_t **pp,
							const uint8_t *end,
							struct trcfile__coder *cd)
{
	struct trc_record rec;
	/* The fast path only adds to the time: the largest so far is where it stands now. */
	if (cd->ts > w->last)
		w->last = cd->ts;
	if (trcfile__decode_slow(pp, end, cd, &rec) != 0)
		return -EBADMSG;
	w->per_type[rec.type]++;
	summary__record(m, &rec, w->th);
	if (m->err)
		return m->err;
	if (rec.ts_ns < w->first)
		w->first = rec.ts_ns;
	if (rec.ts_ns > w->last)
		w->last = rec.ts_ns;
	return 0;
}

/* One loaded chunk: every record through trcfile__decode_fast, the ones it declines through
 * summary__pass_slow. Out of line, a function of its own keeps the register allocator's job
 * small (bench_dump: a few percent). Returns 0 with the chunk used up; -EBADMSG with the
 * cursor on the damaged record; or m->err. */
__attribute__((noinline)) static int
summary__pass_chunk(struct summary__state *m, struct summary__walk *w, struct trcfile_cursor *c)
{
	const uint8_t *p = c->p;
	const uint8_t *const end = c->pend;
	const uint8_t *const fast_end = trcfile__fast_end(p, end);
	struct trcfile__coder cd = c->coder;
	uint32_t left = c->left;
	struct summary__frame *stk = m->spans.stack;
	size_t sn = m->spans.n, scap = m->spans.cap;
	int rc = 0;
	/* The chunk's first record has delta 0: its time is the smallest the fast path sees. */
	if (cd.ts < w->first)
		w->first = cd.ts;
	for (; left; left--) {
		struct trcfile__event ev;
		const uint8_t *q = trcfile__decode_fast(p, fast_end, &cd, &ev);
		if (trcfile__unlikely(!q)) {
			m->spans.n = sn;
			const uint8_t *sp = p;
			struct trcfile__coder sc = cd;
			rc = summary__pass_slow(m, w, &sp, end, &sc);
			if (rc)
				goto out;
			p = sp;
			cd = sc;
			stk = m->spans.stack;
			sn = m->spans.n;
			scap = m->spans.cap;
			continue;
		}
		p = q;
		const uint32_t t = ev.type;
		if (t > TRC_REC_COUNTER) { /* alloc, free, function enter and exit */
			w->per_type[t]++;
			if (t == TRC_REC_ALLOC) {
				m->s->alloc_bytes += ev.b;
			} else if (t == TRC_REC_FUNC_ENTER) {
				/* Functions share the spans' stack (FORMAT.md's span rule). */
				if (trcfile__likely(sn < scap)) {
					stk[sn++] = (struct summary__frame){0, 1, ev.ts_ns};
				} else {
					m->spans.n = sn;
					summary__span_begin(m, 0, 1, ev.ts_ns);
					stk = m->spans.stack;
					sn = m->spans.n;
					scap = m->spans.cap;
					if (m->err)
						goto fail;
				}
			} else if (t == TRC_REC_FUNC_EXIT) {
				if (trcfile__likely(sn && stk[sn - 1].func)) {
					sn--;
				} else {
					m->spans.n = sn;
					summary__span_end(m, 0, 1, ev.ts_ns);
					sn = m->spans.n;
					if (m->err)
						goto fail;
				}
			}
			continue;
		}
		const uint64_t a = ev.a; /* span begin/end, instant, counter: the name id */
		struct summary__idstat *st;
		uint32_t ix;
		if (trcfile__likely(a < SUMMARY__DENSE_IDS && (ix = m->names.dense[a]) != 0)) {
			st = &m->names.ids[ix - 1];
		} else {
			st = summary__idstat_slow(m, (uint32_t)a);
			if (!st)
				goto fail;
		}
		const uint64_t ts = ev.ts_ns;
		if (t == TRC_REC_SPAN_BEGIN) {
			st->begins++;
			if (trcfile__likely(sn < scap)) {
				stk[sn].name_id = (uint32_t)a;
				stk[sn].func = 0;
				stk[sn].ts = ts;
				sn++;
			} else {
				m->spans.n = sn;
				summary__span_begin(m, (uint32_t)a, 0, ts);
				stk = m->spans.stack;
				sn = m->spans.n;
				scap = m->spans.cap;
				if (m->err)
					goto fail;
			}
		} else if (t == TRC_REC_SPAN_END) {
			st->ends++;
			if (trcfile__likely(sn && stk[sn - 1].name_id == a && !stk[sn - 1].func)) {
				/* The begin may be from an earlier chunk stamped later (time
				 * stepped back: a TSC refit): such a span lasts 0, as on the
				 * general path. */
				uint64_t begin = stk[--sn].ts;
				if (summary__span_duration(m, st, ts >= begin ? ts - begin : 0))
					goto fail;
			} else {
				m->spans.n = sn;
				summary__span_end(m, (uint32_t)a, 0, ts);
				sn = m->spans.n;
				if (m->err)
					goto fail;
			}
		} else if (t == TRC_REC_INSTANT) {
			st->instants++;
		} else {
			summary__counter(st, (int64_t)ev.b, ts);
		}
	}
	goto out;
fail:
	rc = m->err ? m->err : -ENOMEM;
out:
	c->p = p;
	c->coder = cd;
	c->left = left;
	m->spans.n = sn;
	return rc;
}

int summary__pass_stream(struct summary__state *m, unsigned sidx)
{
	struct summary *s = m->s;
	const struct trcfile_stream_info *si = trcfile_reader_stream(m->r, sidx);
	struct summary__walk w = {.first = UINT64_MAX, .last = 0};
	const uint64_t alloc_bytes_before = s->alloc_bytes; /* this stream's: the difference */
	if (si->kind == TRC_STREAM_THREAD && si->records) {
		w.th = summary__thread(m, si->pid, si->tid);
		if (!w.th)
			return m->err;
	}
	struct trcfile_cursor *c = trcfile_cursor_new(m->r, sidx);
	if (!c)
		return summary__nomem(m);
	m->spans.n = 0;
	uint64_t decoded = 0; /* records of the stream, from the chunk counts */
	int rc;
	while (!m->err && (rc = trcfile_scan_next_chunk(c)) == 1) {
		if (c->skipped) {
			/* A damaged chunk was skipped: as after a LOST record, the spans open
			 * across it end as unknown. */
			c->skipped = false;
			s->spans_cut_by_loss += summary__spans_open(&m->spans);
			m->spans.n = 0;
		}
		decoded += c->left;
		const struct trcfile_cursor loaded = *c; /* for m->chunk */
		rc = summary__pass_chunk(m, &w, c);
		if (rc == -EBADMSG) {
			/* Let the cursor's own decoder say where (same message as every reader). */
			struct trc_record dummy;
			rc = trcfile_cursor_next(c, &dummy);
			if (rc >= 0)
				rc = trcfile_reader_fail(m->r, -EBADMSG, "damaged chunk");
			break;
		}
		if (rc)
			break;
		if (c->coder.ts > w.last)
			w.last = c->coder.ts;
		rc = trcfile_scan_chunk_done(c);
		if (rc)
			break;
		if (m->chunk && m->chunk(m->chunk_ctx, sidx, &loaded)) {
			summary__nomem(m);
			break;
		}
	}
	trcfile_cursor_free(c);
	if (m->err)
		return m->err;
	if (rc < 0)
		return m->err = rc;
	s->spans_open_at_end += summary__spans_open(&m->spans);
	uint64_t events = decoded;
	for (unsigned t = 0; t < TRC_REC_TYPE_COUNT; t++) {
		if (!summary__name_counted(t))
			s->per_type[t] += w.per_type[t];
		if (!trc_rec_is_event(t))
			events -= w.per_type[t];
	}
	s->records += decoded;
	s->events_recorded += events;
	s->allocs += w.per_type[TRC_REC_ALLOC];
	s->frees += w.per_type[TRC_REC_FREE];
	if (w.first <= w.last) {
		if (!s->first_ts_ns || w.first < s->first_ts_ns)
			s->first_ts_ns = w.first;
		if (w.last > s->last_ts_ns)
			s->last_ts_ns = w.last;
	}
	if (w.th) {
		w.th->events += events;
		w.th->alloc_bytes += s->alloc_bytes - alloc_bytes_before;
		if (w.first <= w.last) {
			if (!w.th->first_ts_ns || w.first < w.th->first_ts_ns)
				w.th->first_ts_ns = w.first;
			if (w.last > w.th->last_ts_ns)
				w.th->last_ts_ns = w.last;
		}
	}
	return 0;
}
