/* summary_rss.c - the summary's RSS figures: samples, the EXIT record, peak, sparkline.
 *
 * Purpose: everything is the traced program's figure (the header's pid) with the trace
 * buffers taken out. The peak comes from the EXIT record's maxrss_bytes - buffers_bytes;
 * without one, the largest sample stands in (rss_peak_source says which); summary_processes.c
 * then makes it the program's interval (never below a sample, exact only when it is). The samples
 * also give the minimum, the last value, the buffers' largest share, and the sparkline: the largest
 * sample in each of SUMMARY_SPARK_COLUMNS columns of the trace's time range (from the index, so the
 * samples can be placed as they come, stream by stream).
 *
 * Threads: the reader's thread.
 */
#include "summary_priv.h"

void summary__rss_init(struct summary__state *m)
{
	const struct trcfile_header *h = trcfile_reader_header(m->r);
	struct summary__rss *rs = &m->rss;
	rs->root_pid = h->pid;
	trcfile_reader_time_span(m->r, &rs->t0, &rs->t1);
	if (h->start_mono_ns && h->start_mono_ns < rs->t0)
		rs->t0 = h->start_mono_ns;
	if (rs->t0 > rs->t1)
		rs->t0 = rs->t1 = 0;
}

/* Whether a sample (or EXIT record) of pid is the traced program's (0: unknown, taken). */
static bool summary__rss_ours(const struct summary__rss *rs, uint32_t pid)
{
	return !rs->root_pid || !pid || pid == rs->root_pid;
}

unsigned summary__spark_col(const struct summary__state *m, uint64_t ts_ns)
{
	const struct summary__rss *rs = &m->rss;
	uint64_t span = rs->t1 > rs->t0 ? rs->t1 - rs->t0 : 1;
	uint64_t t = ts_ns < rs->t0 ? 0 : ts_ns - rs->t0;
	if (t > span)
		t = span;
	unsigned col = (unsigned)((__uint128_t)t * SUMMARY_SPARK_COLUMNS / (span + 1));
	return col >= SUMMARY_SPARK_COLUMNS ? SUMMARY_SPARK_COLUMNS - 1 : col;
}

void summary__rss_sample(struct summary__state *m, const struct trc_record *rec)
{
	struct summary *s = m->s;
	struct summary__rss *rs = &m->rss;
	uint64_t b = rec->rss.buffers_bytes;
	uint64_t v = rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
	if (!summary__rss_ours(rs, rec->rss.pid))
		return;
	if (!rs->have_sample || v < s->rss_sampled_min_bytes)
		s->rss_sampled_min_bytes = v;
	if (v > s->rss_peak_sampled_bytes)
		s->rss_peak_sampled_bytes = v;
	if (b > s->buffers_resident_peak_bytes)
		s->buffers_resident_peak_bytes = b;
	s->rss_samples++;
	rs->have_sample = true;
	unsigned col = summary__spark_col(m, rec->ts_ns);
	if (v > s->spark_bytes[col])
		s->spark_bytes[col] = v;
	/* The last sample in time (streams come one after another, not in time order). */
	if (rec->ts_ns >= rs->last_sample_ts) {
		rs->last_sample_ts = rec->ts_ns;
		s->rss_sampled_last_bytes = v;
	}
}

void summary__rss_exit(struct summary__state *m, const struct trc_record *rec)
{
	struct summary *s = m->s;
	struct summary__rss *rs = &m->rss;
	/* A process's own record (SELF) is summary_processes.c's; this is trace-run's. */
	if (rec->exit.flags & TRC_EXIT_SELF)
		return;
	if ((rec->exit.pid == rs->root_pid || !rs->root_pid) &&
	    (!s->has_exit || rec->ts_ns >= rs->exit_ts)) {
		s->has_exit = true;
		rs->exit_ts = rec->ts_ns;
		s->exit_status = rec->exit.status;
		s->rss_exit_maxrss_bytes = rec->exit.maxrss_bytes;
		s->rss_exit_buffers_bytes = rec->exit.buffers_bytes;
		if (rec->exit.buffers_bytes > s->buffers_resident_peak_bytes)
			s->buffers_resident_peak_bytes = rec->exit.buffers_bytes;
	}
}

void summary__rss_finish(struct summary__state *m)
{
	struct summary *s = m->s;
	if (m->rss.have_sample) {
		s->n_spark = SUMMARY_SPARK_COLUMNS;
		/* An empty column means no sample fell in it: RSS stayed where it was; before the
		 * first sample nothing is known of it. */
		uint64_t prev = SUMMARY_SPARK_NONE;
		for (unsigned i = 0; i < SUMMARY_SPARK_COLUMNS; i++) {
			if (!s->spark_bytes[i])
				s->spark_bytes[i] = prev;
			prev = s->spark_bytes[i];
		}
	}
	if (s->has_exit && s->rss_exit_maxrss_bytes) {
		uint64_t b = s->rss_exit_buffers_bytes;
		s->rss_peak_bytes = s->rss_exit_maxrss_bytes > b ? s->rss_exit_maxrss_bytes - b : 0;
		s->rss_peak_source = SUMMARY_RSS_PEAK_EXIT;
	} else if (m->rss.have_sample) {
		s->rss_peak_bytes = s->rss_peak_sampled_bytes;
		s->rss_peak_source = SUMMARY_RSS_PEAK_SAMPLED;
	}
}
