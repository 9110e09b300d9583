/* summary_processes.c - every process of the traced tree: command, exit, peak RSS, samples;
 * and the tree's total RSS over time.
 *
 * Purpose: the summary's process table (issue "every process's memory"). A process is known
 * from its PROCESS records (pid, ppid, command line: the latest, so an exec'd command wins
 * over the shell that forked it), its RSS samples (the sampler samples every attached process
 * of the tree on the same ticks) and its EXIT records: trace-run's (wait4: status and
 * ru_maxrss, for the program it started) and the process's own (flags SELF: its VmHWM as it
 * exited, and its exit code when it left by _exit).
 *
 * The peak, trace buffers excluded: peak.h's rule (trace-run prints the program's by the
 * same), the buffers' most being the exit record's count when it has one (TRC_EXIT_BUFFERS_PEAK),
 * else the largest of the samples' and the exit's shares (which miss a ring grown and freed
 * between two samples). When every sample of the process carries its VmHWM (--rss-source
 * status) and the exit record has no count, the samples around the moment the high-water mark
 * was reached bracket the buffers' share there (summary__proc_hwm), which narrows the interval
 * to the buffers' growth between two samples; with a count the bracket is not taken, since the
 * same ring between two samples breaks it. A process with no H (killed by a signal, no runtime
 * in it, or a program whose ru_maxrss a descendant may have set) is flagged "sampled".
 *
 * Threads: the reader's thread.
 */
#include "summary_priv.h"

void summary__procs_init(struct summary__procs *p)
{
	memset(p, 0, sizeof(*p));
	u64map_init(&p->map, SUMMARY_MAX_PROCESSES);
}

void summary__procs_free(struct summary__procs *p)
{
	u64map_destroy(&p->map);
	free(p->acc);
	memset(p, 0, sizeof(*p));
}

/* The entry of pid, created on first use; NULL when out of memory (m->err set) or past
 * SUMMARY_MAX_PROCESSES (s->processes_truncated). */
static size_t summary__proc(struct summary__state *m, uint32_t pid, bool *ok)
{
	struct summary *s = m->s;
	struct summary__procs *p = &m->procs;
	const uint64_t *v = u64map_get(&p->map, pid);
	*ok = true;
	if (v)
		return (size_t)*v;
	if (s->n_processes == SUMMARY_MAX_PROCESSES) {
		s->processes_truncated = true;
		*ok = false;
		return 0;
	}
	if (s->n_processes == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct summary_process *np = realloc(s->processes, cap * sizeof(*np));
		if (np)
			s->processes = np;
		struct summary__proc_acc *na = np ? realloc(p->acc, cap * sizeof(*na)) : NULL;
		if (!na) {
			*ok = false;
			summary__nomem(m);
			return 0;
		}
		p->acc = na;
		p->cap = cap;
	}
	size_t i = s->n_processes;
	if (u64map_put(&p->map, pid, i, NULL, NULL)) {
		*ok = false;
		summary__nomem(m);
		return 0;
	}
	s->n_processes++;
	s->processes[i] = (struct summary_process){.pid = pid};
	memset(&p->acc[i], 0, sizeof(p->acc[i]));
	return i;
}

static void summary__proc_seen(struct summary_process *pr, uint64_t ts)
{
	if (!pr->first_ts_ns || ts < pr->first_ts_ns)
		pr->first_ts_ns = ts;
	if (ts > pr->last_ts_ns)
		pr->last_ts_ns = ts;
}

static void summary__proc_command(struct summary__state *m, struct summary_process *pr,
				  struct summary__proc_acc *a, const struct trc_record *rec)
{
	if (pr->command && rec->ts_ns < a->command_ts)
		return;
	char *c = summary__strndup(rec->process.cmdline, rec->process.cmdline_len);
	if (!c) {
		summary__nomem(m);
		return;
	}
	free((char *)pr->command);
	pr->command = c;
	pr->command_len = rec->process.cmdline_len;
	pr->ppid = rec->process.ppid;
	a->command_ts = rec->ts_ns;
}

/* Bounds from a sample carrying VmHWM (see the top): the high-water mark hwm_i was reached at
 * some time t <= t_i, when the buffers held at most what they had held up to t_i, so the
 * program then had at least hwm_i - (their most so far); and between the previous sample and
 * this one RSS stayed below hwm_i while the buffers held at least the smaller of the two
 * samples' shares (they only shrink when a thread's ring is freed), so the program had at most
 * hwm_i - that. Before the first sample nothing is known of the buffers (0). Called before
 * the sample's time is recorded in a. */
static void summary__proc_hwm(struct summary__proc_acc *a, const struct trc_record *rec)
{
	uint64_t b = rec->rss.buffers_bytes, h = rec->rss.hwm_bytes;
	if (!a->has_sample)
		a->hwm_all = true;
	if (!a->hwm_all)
		return;
	if (!(rec->rss.flags & TRC_RSS_HAS_HWM) ||
	    (a->has_sample && rec->ts_ns < a->sample_last_ts)) {
		a->hwm_all = false;
		return;
	}
	if (b > a->buffers_upto)
		a->buffers_upto = b;
	uint64_t least = !a->has_sample ? 0 : a->last_buffers < b ? a->last_buffers : b;
	uint64_t lo = h > a->buffers_upto ? h - a->buffers_upto : 0;
	uint64_t hi = h > least ? h - least : 0;
	if (lo > a->hwm_low)
		a->hwm_low = lo;
	if (hi > a->hwm_high)
		a->hwm_high = hi;
	a->last_buffers = b;
}

static void summary__proc_sample(struct summary__state *m, struct summary_process *pr,
				 struct summary__proc_acc *a, const struct trc_record *rec)
{
	uint64_t b = rec->rss.buffers_bytes;
	uint64_t v = rec->rss.rss_bytes > b ? rec->rss.rss_bytes - b : 0;
	pr->rss_samples++;
	if (v > pr->rss_sampled_max_bytes)
		pr->rss_sampled_max_bytes = v;
	if (b > pr->buffers_max_bytes)
		pr->buffers_max_bytes = b;
	unsigned col = summary__spark_col(m, rec->ts_ns);
	if (v > a->cols[col])
		a->cols[col] = v;
	summary__proc_hwm(a, rec);
	if (!a->has_sample || rec->ts_ns < a->sample_first_ts)
		a->sample_first_ts = rec->ts_ns;
	if (!a->has_sample || rec->ts_ns > a->sample_last_ts)
		a->sample_last_ts = rec->ts_ns;
	a->has_sample = true;
}

static void summary__proc_exit(struct summary_process *pr, struct summary__proc_acc *a,
			       const struct trc_record *rec)
{
	if (rec->exit.flags & TRC_EXIT_SELF) {
		if (a->has_self && rec->ts_ns < a->self_ts)
			return;
		a->has_self = true;
		a->self_ts = rec->ts_ns;
		a->self_hwm = rec->exit.maxrss_bytes;
		a->self_buffers = rec->exit.buffers_bytes;
		a->self_buffers_peak = rec->exit.flags & TRC_EXIT_BUFFERS_PEAK;
		if ((rec->exit.flags & TRC_EXIT_STATUS) && !a->has_wait) {
			pr->exit_known = true;
			pr->exit_status = rec->exit.status;
		}
		return;
	}
	/* trace-run's: the status it waited for is the one that counts. */
	a->has_wait = true;
	a->wait_maxrss = rec->exit.maxrss_bytes;
	a->wait_buffers = rec->exit.buffers_bytes;
	a->wait_buffers_peak = rec->exit.flags & TRC_EXIT_BUFFERS_PEAK;
	pr->exit_known = true;
	pr->exit_status = rec->exit.status;
}

void summary__procs_record(struct summary__state *m, const struct trc_record *rec)
{
	uint32_t pid = rec->type == TRC_REC_PROCESS ? rec->process.pid
		       : rec->type == TRC_REC_RSS   ? rec->rss.pid
						    : rec->exit.pid;
	bool ok;
	if (!pid)
		return;
	size_t i = summary__proc(m, pid, &ok);
	if (!ok)
		return;
	struct summary_process *pr = &m->s->processes[i];
	struct summary__proc_acc *a = &m->procs.acc[i];
	summary__proc_seen(pr, rec->ts_ns);
	if (rec->type == TRC_REC_PROCESS)
		summary__proc_command(m, pr, a, rec);
	else if (rec->type == TRC_REC_RSS)
		summary__proc_sample(m, pr, a, rec);
	else
		summary__proc_exit(pr, a, rec);
}

/* Narrows a process's peak interval with the bounds its VmHWM samples gave. After its last
 * sample RSS stayed below hwm (the exit figure) and the buffers held at least the smaller of
 * the last sample's share and the exit's. */
static void summary__proc_hwm_bracket(struct summary_process *pr, const struct summary__proc_acc *a,
				      uint64_t hwm, uint64_t eb)
{
	uint64_t least = a->last_buffers < eb ? a->last_buffers : eb;
	uint64_t hi = hwm > least ? hwm - least : 0;
	if (a->hwm_high > hi)
		hi = a->hwm_high;
	if (a->hwm_low > pr->peak.low_bytes)
		pr->peak.low_bytes = a->hwm_low;
	if (hi < pr->peak.high_bytes)
		pr->peak.high_bytes = hi;
	if (pr->peak.high_bytes < pr->peak.low_bytes)
		pr->peak.high_bytes = pr->peak.low_bytes;
	pr->peak.exact = pr->peak.low_bytes == pr->peak.high_bytes;
}

/* Decides one process's peak (see the top). others_max: the largest believed own VmHWM of the
 * other processes (buffers included). */
static void summary__proc_peak(struct summary_process *pr, const struct summary__proc_acc *a,
			       uint64_t others_max)
{
	const struct peak_figures f = {
		.self_hwm_bytes = a->has_self ? a->self_hwm : 0,
		.self_buffers_bytes = a->self_buffers,
		.wait_maxrss_bytes = a->has_wait ? a->wait_maxrss : 0,
		.wait_buffers_bytes = a->wait_buffers,
		.others_hwm_bytes = others_max,
		.samples = pr->rss_samples,
		.sampled_max_bytes = pr->rss_sampled_max_bytes,
		.sampled_buffers_max_bytes = pr->buffers_max_bytes,
	};
	pr->peak = peak_of(&f);
	if (pr->peak.source == PEAK_KERNEL) {
		/* The exit record H came from says what the buffers held. */
		const bool counted = pr->peak.own ? a->self_buffers_peak : a->wait_buffers_peak;
		pr->hwm_bytes = pr->peak.hwm_bytes;
		pr->exit_buffers_bytes = pr->peak.own ? a->self_buffers : a->wait_buffers;
		pr->exit_buffers_peak = counted;
		pr->peak_source = SUMMARY_PROC_PEAK_KERNEL;
		/* The bracket takes the samples' shares for the buffers' bounds between them,
		 * which a ring grown and freed between two samples breaks; a file whose exit
		 * record says so carries the counted bound instead (see the top). */
		if (a->has_sample && a->hwm_all && !counted &&
		    !(pr->peak.bounded & PEAK_BUFFERS_BOUNDED))
			summary__proc_hwm_bracket(pr, a, pr->peak.hwm_bytes,
						  pr->exit_buffers_bytes);
	} else if (pr->peak.source == PEAK_SAMPLED) {
		pr->peak_source = SUMMARY_PROC_PEAK_SAMPLED;
	}
}

static int summary__proc_cmp(const void *x, const void *y)
{
	const struct summary_process *a = x, *b = y;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* A process's own VmHWM when it is believed (peak.h), else 0. */
static uint64_t summary__own_believed(const struct summary__proc_acc *a)
{
	return a->has_self && peak_own_believed(a->self_hwm,
							a->has_wait ? a->wait_maxrss : 0)
		       ? a->self_hwm
		       : 0;
}

void summary__procs_finish(struct summary__state *m)
{
	struct summary *s = m->s;
	struct summary__procs *p = &m->procs;
	/* The two largest own kernel figures that are believed, and how many were refused: a
	 * process whose own figure is not believed may be the one wait4's ru_maxrss is of. */
	uint64_t top = 0, second = 0;
	size_t refused = 0;
	for (size_t i = 0; i < s->n_processes; i++) {
		uint64_t h = summary__own_believed(&p->acc[i]);
		refused += p->acc[i].has_self && !h;
		if (h > top) {
			second = top;
			top = h;
		} else if (h > second) {
			second = h;
		}
	}
	for (size_t i = 0; i < s->n_processes; i++) {
		struct summary_process *pr = &s->processes[i];
		const struct summary__proc_acc *a = &p->acc[i];
		uint64_t own = summary__own_believed(a);
		bool others_refused = refused > (a->has_self && !own);
		summary__proc_peak(pr, a, others_refused ? UINT64_MAX : own == top ? second : top);
		if (!a->has_sample)
			continue;
		/* From its first sample to its last record (its exit) a process holds its last
		 * value in columns where it has none; the tree's total is the sum. */
		unsigned c0 = summary__spark_col(m, a->sample_first_ts);
		unsigned c1 = summary__spark_col(m, pr->last_ts_ns);
		uint64_t prev = a->cols[c0];
		for (unsigned c = c0; c <= c1; c++) {
			uint64_t v = a->cols[c] ? a->cols[c] : prev;
			s->tree_spark_bytes[c] += v;
			prev = v;
		}
	}
	/* The program's own figures follow its entry (rss_peak_bytes: the interval's low end). */
	const uint64_t *ix = u64map_get(&p->map, m->rss.root_pid);
	if (ix) {
		const struct summary_process *root = &s->processes[*ix];
		s->rss_peak = root->peak;
		s->rss_peak_hwm_bytes = root->hwm_bytes;
		s->rss_peak_hwm_own = root->peak.own;
		s->rss_peak_buffers_max_bytes = root->peak.buffers_max_bytes;
		const uint64_t wait = p->acc[*ix].has_wait ? p->acc[*ix].wait_maxrss : 0;
		const uint64_t bound = root->peak.hwm_bytes ? root->peak.hwm_bytes
				       : wait && wait <= PEAK_PLAUSIBLE_BYTES
					       ? wait
					       : PEAK_PLAUSIBLE_BYTES;
		if (s->buffers_resident_peak_bytes > bound) {
			s->buffers_resident_refused_bytes = s->buffers_resident_peak_bytes;
			s->buffers_resident_peak_bytes = bound;
		}
		if (root->peak_source == SUMMARY_PROC_PEAK_KERNEL) {
			s->rss_peak_bytes = root->peak.low_bytes;
		} else if (root->peak_source == SUMMARY_PROC_PEAK_NONE) {
			/* Its exit figure was not believed and it has no sample. */
			s->rss_peak_bytes = 0;
			s->rss_peak_source = SUMMARY_RSS_PEAK_NONE;
		} else if (root->peak_source == SUMMARY_PROC_PEAK_SAMPLED &&
			   s->rss_peak_source == SUMMARY_RSS_PEAK_EXIT) {
			s->rss_peak_bytes = root->peak.low_bytes;
			s->rss_peak_source = SUMMARY_RSS_PEAK_SAMPLED;
		}
	} else if (s->rss_peak_source == SUMMARY_RSS_PEAK_EXIT) {
		/* An exit record but no process entry (pid 0 in an old file): same rule. */
		const struct peak_figures f = {
			.wait_maxrss_bytes = s->rss_exit_maxrss_bytes,
			.wait_buffers_bytes = s->buffers_resident_peak_bytes,
			.samples = s->rss_samples,
			.sampled_max_bytes = s->rss_peak_sampled_bytes,
		};
		s->rss_peak = peak_of(&f);
		s->rss_peak_bytes = s->rss_peak.low_bytes;
		s->rss_peak_hwm_bytes = s->rss_peak.hwm_bytes;
		s->rss_peak_buffers_max_bytes = s->rss_peak.buffers_max_bytes;
		if (s->rss_peak.source == PEAK_SAMPLED)
			s->rss_peak_source = SUMMARY_RSS_PEAK_SAMPLED;
	} else {
		s->rss_peak = (struct peak){.low_bytes = s->rss_peak_bytes,
						    .high_bytes = s->rss_peak_bytes};
	}
	if (s->n_processes > 1)
		qsort(s->processes, s->n_processes, sizeof(*s->processes), summary__proc_cmp);
}
