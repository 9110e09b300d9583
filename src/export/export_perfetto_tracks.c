/* export_perfetto_tracks.c - the Perfetto exporter's packets and tracks: the output buffer,
 * track descriptors (processes, threads, counters), the clock snapshot, and the exporter's
 * state (export_perfetto_priv.h). The records' paths and the design are export_perfetto.c.
 *
 * Threads: an exporter's state belongs to one export.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_perfetto_priv.h"

/* ---- packets --------------------------------------------------------------------------- */

/* Gives sequence s its id (and the bytes of its id and flags fields, for the hot path). */
void export__pf_seq_set_id(struct export__pf_seq *s, uint32_t id)
{
	uint8_t b[8] = {(PF_SEQ_ID << 3) | PB_VARINT};
	s->id = id;
	uint8_t *q = pb_put_varint(b + 1, id);
	*q++ = (PF_SEQ_FLAGS << 3) | PB_VARINT;
	*q++ = PF_SEQ_NEEDS_STATE;
	s->hdr_len = (uint8_t)(q - b);
	s->hdr = 0;
	for (unsigned i = 0; i < s->hdr_len; i++)
		s->hdr |= (uint64_t)b[i] << (8 * i);
}

/* Hands the exporter's buffer to the sink (a sink's error is the export's). */
void export__pf_flush(struct export__pf *p)
{
	if (p->out_len) {
		int err = p->sink->write(p->sink->ctx, p->out, p->out_len);
		if (err && !p->err)
			p->err = err;
		p->file_bytes += p->out_len;
	}
	p->out_len = 0;
}

void export__pf_write(struct export__pf *p, const void *data, size_t n)
{
	if (n > EXPORT__PF_OUT_BYTES) {
		export__pf_flush(p);
		int err = p->sink->write(p->sink->ctx, data, n);
		if (err && !p->err)
			p->err = err;
		p->file_bytes += n;
		return;
	}
	memcpy(export__pf_room(p, n), data, n);
	p->out_len += n;
}

void export__pf_emit(struct export__pf *p)
{
	if (p->pkt.err) {
		p->err = p->pkt.err;
		return;
	}
	export__pf_write(p, p->pkt.p, p->pkt.len);
}

/* A track descriptor packet on sequence 1: name, parent, and (by kind) process, thread or
 * counter details. */
void export__pf_descriptor(struct export__pf *p, uint64_t uuid, uint64_t parent,
				const char *name, size_t name_len, const struct export__pf_proc *proc,
				const char *cmdline, size_t cmdline_len, uint32_t tid,
				int counter_unit)
{
	struct pb_buf *b = &p->pkt;
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	pb_uint(b, PF_SEQ_ID, 1);
	size_t td = pb_open(b, PF_TRACK_DESCRIPTOR);
	pb_uint(b, 1, uuid);
	if (parent)
		pb_uint(b, 5, parent);
	if (tid) {
		size_t th = pb_open(b, 4);
		pb_uint(b, 1, proc->pid);
		pb_uint(b, 2, tid + p->pid_base);
		if (name)
			pb_bytes(b, 5, name, name_len);
		pb_close(b, th);
	} else if (counter_unit >= 0) {
		if (name)
			pb_bytes(b, 2, name, name_len);
		size_t cd = pb_open(b, 8);
		if (counter_unit)
			pb_uint(b, 3, (uint64_t)counter_unit);
		pb_close(b, cd);
	} else {
		size_t pd = pb_open(b, 3);
		pb_uint(b, 1, proc->pid);
		/* cmdline: NUL-separated arguments, one repeated string each; the name is the
		 * first argument's last path component. */
		size_t n = cmdline_len;
		if (n && cmdline[n - 1] == 0)
			n--;
		const char *first = NULL;
		size_t first_len = 0;
		for (size_t i = 0; cmdline && i <= n;) {
			const char *e = memchr(cmdline + i, 0, n - i);
			size_t len = e ? (size_t)(e - (cmdline + i)) : n - i;
			if (!first) {
				first = cmdline + i;
				first_len = len;
			}
			pb_bytes(b, 2, cmdline + i, len);
			i += len + 1;
		}
		if (first) {
			const char *base = first;
			for (size_t i = 0; i < first_len; i++)
				if (first[i] == '/')
					base = first + i + 1;
			size_t base_len = first_len - (size_t)(base - first);
			const struct export__pf_label *l = p->label;
			char *tmp =
				l ? malloc(l->host_len + strlen(l->trace) + base_len + 4) : NULL;
			if (tmp) {
				/* Several FILEs: "HOST TRACE: name". */
				int k = sprintf(tmp, "%.*s %s: ", (int)l->host_len, l->host,
						l->trace);
				memcpy(tmp + k, base, base_len);
				pb_bytes(b, 6, tmp, (size_t)k + base_len);
				free(tmp);
			} else {
				if (l)
					p->err = -ENOMEM;
				pb_bytes(b, 6, base, base_len);
			}
		}
		pb_close(b, pd);
	}
	pb_close(b, td);
	pb_close(b, pk);
	export__pf_emit(p);
	if (!b->err) {
		/* Kept for the next file of --split-size (tracks are few: bounded). */
		if (pb_reserve(&p->desc_log, b->len) == 0) {
			memcpy(p->desc_log.p + p->desc_log.len, b->p, b->len);
			p->desc_log.len += b->len;
		} else {
			p->err = -ENOMEM;
		}
	}
}

/* The process pid of the trace at hand (described on first use). */
struct export__pf_proc *export__pf_proc(struct export__pf *p, uint32_t pid)
{
	for (size_t i = 0; i < p->n_procs; i++)
		if (p->procs[i].pid == pid + p->pid_base)
			return &p->procs[i];
	if (p->n_procs == p->cap_procs) {
		size_t cap = p->cap_procs ? p->cap_procs * 2 : 16;
		struct export__pf_proc *n = realloc(p->procs, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return NULL;
		}
		p->procs = n;
		p->cap_procs = cap;
	}
	struct export__pf_proc *pr = &p->procs[p->n_procs++];
	*pr = (struct export__pf_proc){
		.pid = pid + p->pid_base, .track = p->next_uuid++, .r = p->r, .trace_pid = pid};
	uint32_t len = 0;
	const char *cmd = trcfile_reader_process_cmdline(p->r, pid, &len);
	const struct trcfile_header *h = trcfile_reader_header(p->r);
	if (!cmd && pid == h->pid) {
		cmd = h->cmdline;
		len = h->cmdline_len;
	}
	pr->named = cmd != NULL;
	export__pf_descriptor(p, pr->track, 0, NULL, 0, pr, cmd, cmd ? len : 0, 0, -1);
	return pr;
}

/* A new counter track under parent, and its sequence: its index + 1, or 0 out of memory. */
uint64_t export__pf_new_counter(struct export__pf *p, uint64_t parent, const char *name,
				     size_t len, int unit)
{
	if (p->n_ctrs == p->cap_ctrs) {
		size_t cap = p->cap_ctrs ? p->cap_ctrs * 2 : 16;
		struct export__pf_seq **n = realloc(p->ctrs, cap * sizeof(*n));
		if (!n) {
			p->err = -ENOMEM;
			return 0;
		}
		p->ctrs = n;
		p->cap_ctrs = cap;
	}
	struct export__pf_seq *c = calloc(1, sizeof(*c));
	if (!c) {
		p->err = -ENOMEM;
		return 0;
	}
	c->track = p->next_uuid++;
	u64map_init(&c->iids, SIZE_MAX);
	p->ctrs[p->n_ctrs++] = c;
	export__pf_descriptor(p, c->track, parent, name, len, NULL, NULL, 0, 0, unit);
	return p->n_ctrs;
}

/* A process's counter track in *slot, created on first use. */
uint64_t export__pf_counter_track(struct export__pf *p, uint64_t *slot, uint64_t parent,
				       const char *name, int unit)
{
	if (!*slot)
		*slot = export__pf_new_counter(p, parent, name, strlen(name), unit);
	return *slot;
}

/* The track of thread stream sidx's thread (its owner's), described: named name (len) when
 * given, else as the trace's metadata names it, else "tid N" (as in the summary and pprof). */
void export__pf_thread_track(struct export__pf *p, unsigned sidx, const char *name, uint32_t len)
{
	unsigned k = p->seqs[sidx].owner;
	struct export__pf_seq *o = &p->seqs[k];
	const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, k);
	struct export__pf_proc *pr = export__pf_proc(p, o->pid);
	if (!pr)
		return;
	o->described = true;
	if (!name || !len)
		name = trcfile_reader_thread_name(p->r, si->pid, si->tid, &len);
	char unnamed[24];
	if (!name || !len) {
		len = (uint32_t)snprintf(unnamed, sizeof(unnamed), "tid %u", si->tid);
		name = unnamed;
	}
	export__pf_descriptor(p, o->track, pr->track, name, len, pr, NULL, 0, si->tid, -1);
}

/* The trace's clock snapshot, then a track for every process and thread of the streams. */
void export__pf_clock(struct export__pf *p, uint64_t t0)
{
	struct pb_buf *b = &p->pkt;
	pb_reset(b);
	size_t pk = pb_open(b, PF_TRACE_PACKET);
	pb_uint(b, PF_TIMESTAMP, t0);
	pb_uint(b, PF_TIMESTAMP_CLOCK_ID, p->clock);
	pb_uint(b, PF_SEQ_ID, 1);
	size_t cs = pb_open(b, PF_CLOCK_SNAPSHOT);
	/* Only the clocks the file knows: the trace clock, CLOCK_MONOTONIC (CLOCK_REALTIME for
	 * several FILEs), and for one FILE CLOCK_REALTIME at the same moment, from the header's
	 * anchor (start_realtime_ns - start_mono_ns). The header has no BOOTTIME (FORMAT.md):
	 * declaring it equal to MONOTONIC would be off by the machine's time in suspend and
	 * contradict a system trace's own snapshots when the two are merged; left out, trace
	 * processor converts through the clocks given (a system trace relates MONOTONIC to
	 * BOOTTIME itself). */
	size_t c = pb_open(b, 1);
	pb_uint(b, 1, p->clock);
	pb_uint(b, 2, t0);
	pb_close(b, c);
	int64_t anchor = 0, start_rt = 0;
	if (p->clock == PF_CLOCK_MONOTONIC && trcfile_reader_header(p->r)->start_realtime_ns &&
	    export_anchor(p->r, &anchor, &start_rt) == 0 && export_realtime(t0, anchor) > 0) {
		c = pb_open(b, 1);
		pb_uint(b, 1, PF_CLOCK_REALTIME);
		pb_uint(b, 2, (uint64_t)export_realtime(t0, anchor));
		pb_close(b, c);
	}
	pb_uint(b, 2, p->clock);
	pb_close(b, cs);
	pb_close(b, pk);
	export__pf_emit(p);
}

/* The tracks of the trace at hand. */
void export__pf_tracks(struct export__pf *p)
{
	struct u64map owners; /* (pid, tid) -> the first thread stream of it */
	u64map_init(&owners, SIZE_MAX);
	for (unsigned s = 0; s < p->n_streams; s++) {
		const struct trcfile_stream_info *si = trcfile_reader_stream(p->r, s);
		/* META and RSS streams may say pid 0: they are the program's. */
		uint32_t pid = si->pid ? si->pid : trcfile_reader_header(p->r)->pid;
		p->seqs[s].pid = pid;
		struct export__pf_proc *pr = export__pf_proc(p, pid);
		if (!pr)
			break;
		if (si->kind != TRC_STREAM_THREAD) {
			p->seqs[s].track = pr->track;
			continue;
		}
		/* One track per thread: a later stream of the same (pid, tid) shares the first's.
		 * Described on first use (export__pf_thread_track), with the name known then. */
		p->seqs[s].thread = true;
		uint64_t key = (uint64_t)si->pid << 32 | si->tid;
		const uint64_t *o = u64map_get(&owners, key);
		p->seqs[s].owner = o ? (unsigned)*o : s;
		p->seqs[s].active = p->seqs[s].owner;
		p->seqs[s].track = o ? p->seqs[*o].track : p->next_uuid++;
		if (!o && u64map_put(&owners, key, s, NULL, NULL)) {
			p->err = -ENOMEM;
			break;
		}
	}
	u64map_destroy(&owners);
}

void export__pf_prologue(struct export__pf *p, uint64_t t0)
{
	export__pf_clock(p, t0);
	export__pf_tracks(p);
}

/* The exporter's state for n streams (of every trace); NULL when out of memory. */
struct export__pf *export__pf_new(unsigned n)
{
	struct export__pf *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->n_all = n;
	p->next_uuid = 1;
	p->clock = PF_CLOCK_MONOTONIC;
	p->all_seqs = calloc(n ? n : 1, sizeof(*p->all_seqs));
	p->live = allocmap_new(EXPORT__PF_LIVE_MAX_ENTRIES);
	p->out = malloc(EXPORT__PF_OUT_BYTES + EXPORT__PF_OUT_SLACK);
	u64map_init(&p->counters, SIZE_MAX);
	p->next_seq_id = EXPORT__PF_SEQ_BASE;
	for (unsigned k = 0; p->all_seqs && k < n; k++)
		u64map_init(&p->all_seqs[k].iids, SIZE_MAX);
	p->seqs = p->all_seqs;
	p->n_streams = n;
	return p;
}

void export__pf_free(struct export__pf *p)
{
	if (!p)
		return;
	for (unsigned s = 0; s < p->n_all && p->all_seqs; s++) {
		u64map_destroy(&p->all_seqs[s].iids);
		free(p->all_seqs[s].name_iid);
		free(p->all_seqs[s].ctr_of);
		free(p->all_seqs[s].stack);
	}
	for (size_t c = 0; c < p->n_ctrs; c++) {
		u64map_destroy(&p->ctrs[c]->iids);
		free(p->ctrs[c]);
	}
	free(p->ctrs);
	pb_buf_free(&p->desc_log);
	u64map_destroy(&p->counters);
	allocmap_free(p->live);
	export__pf_heap_free(p->heap);
	pb_buf_free(&p->pkt);
	free(p->procs);
	free(p->all_seqs);
	free(p->out);
	free(p);
}
