/* summary.c - the numbers behind `trace-dump summary`: the entry point.
 *
 * Purpose: counts per type, name and thread, lost records, span durations, allocation totals
 * and the RSS figures (summary.h), computed without the merge where the order across streams
 * does not matter: one pass per stream (summary_pass.c) feeds the parts of the computation
 * (summary_priv.h lists them, one file each), then each part finishes its figures. Live
 * allocation bytes need the global time order (a thread may free what another allocated): a
 * second, merged pass runs when the trace has allocations (summary_live.c).
 *
 * Memory is bounded whatever the file says: distinct name ids, threads, live allocations,
 * histogram bytes, the span stack and kept strings all have caps (past them figures are
 * merged or marked approximate, never dropped silently); see each part.
 *
 * Threads: the reader's thread.
 */
#include "summary.h"

#include "summary_priv.h"

void summary_free(struct summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_threads; i++)
		free((char *)s->threads[i].name);
	free(s->threads);
	for (size_t i = 0; i < s->n_names; i++)
		free((char *)s->names[i].name);
	free(s->names);
	for (size_t i = 0; i < s->n_notes; i++)
		free((char *)s->notes[i].text);
	free(s->notes);
	for (size_t i = 0; i < s->n_processes; i++)
		free((char *)s->processes[i].command);
	free(s->processes);
	free(s->heaps);
	memset(s, 0, sizeof(*s));
}

int summary_compute(struct trcfile_reader *r, struct summary *s)
{
	return summary_compute_feeding(r, s, NULL, NULL);
}

int summary_compute_feeding(struct trcfile_reader *r, struct summary *s, summary_feed_fn feed,
			    void *feed_ctx)
{
	return summary_compute_chunks(r, s, feed, feed_ctx, NULL, NULL);
}

int summary_compute_chunks(struct trcfile_reader *r, struct summary *s, summary_feed_fn feed,
			   void *feed_ctx, summary_chunk_fn chunk, void *chunk_ctx)
{
	memset(s, 0, sizeof(*s));
	struct summary__state m = {.r = r,
				   .s = s,
				   .feed = feed,
				   .feed_ctx = feed_ctx,
				   .chunk = chunk,
				   .chunk_ctx = chunk_ctx};
	summary__threads_init(&m.threads);
	summary__procs_init(&m.procs);
	if (summary__names_init(&m))
		goto out;
	summary__rss_init(&m);

	const unsigned n_streams = trcfile_reader_stream_count(r);
	for (unsigned i = 0; i < n_streams && !m.err; i++)
		summary__pass_stream(&m, i);
	if (!m.err && s->allocs + s->frees)
		summary__live(&m);
	if (!m.err)
		summary__names_finish(&m);
	if (m.err)
		goto out;

	summary__threads_finish(&m);
	summary__notes_finish(&m);
	summary__rss_finish(&m);
	summary__procs_finish(&m);
	const struct trcfile_header *h = trcfile_reader_header(r);
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	s->start_ns = h->start_mono_ns && h->start_mono_ns <= s->first_ts_ns ? h->start_mono_ns
									 : s->first_ts_ns;
	s->duration_ns = s->last_ts_ns > s->start_ns ? s->last_ts_ns - s->start_ns : 0;
	s->truncated = st.truncated;
	s->when_full = h->when_full;
out:
	summary__names_free(&m.names);
	summary__threads_free(&m.threads);
	summary__procs_free(&m.procs);
	summary__spans_free(&m.spans);
	if (m.err)
		summary_free(s);
	return m.err;
}
