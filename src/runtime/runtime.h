/* runtime.h - private state of the runtime (libtrc) shared by the files of src/runtime/.
 *
 * One process-wide struct trc__rt, written by trc_attach (once, before trc__mode is set) and by
 * the fork child handler (in the child, which then has one thread); read by every thread after
 * it loads trc__mode != 0. Its geometry is the validated copy of the region's layout
 * (session_layout.h), never re-read from the shared header. Per-thread state is trc__self
 * (trc.h), whose ring producer is ringbuf's (ring_producer.h).
 *
 * Concurrency (producer side):
 *   operation                  thread                  concurrent with               blocks
 *   trc_attach                 any, before emitting    nothing in this process        no
 *   fast emit (trc.h)          owner thread            recorder drain, other threads  no
 *   trc__emit_slow / claim     owner thread            other claims (CAS), drain      no
 *   trc__site_intern           any                     other interns (fetch_add, CAS) no
 *   thread exit (key dtor)     exiting thread          drain                           no
 *   fork child handler         child's only thread     nothing                         no
 * Signal handlers may run any of the emit paths on top of any of them: trc__self.ok_flag/busy turn a
 * nested event into a counted loss.
 */
#ifndef TRC_RUNTIME_H
#define TRC_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring.h"
#include "session_layout.h"
#include "trc.h"
#include "trc/func_frames.h"

struct trc__rt {
	uint8_t *base; /* the mapped region */
	struct trc_region_hdr *hdr; /* the shared header: its counters only */
	struct trc_region_geom geom; /* validated at attach from one read of the header */
	int fd;
	pid_t pid; /* this process (updated in the fork child) */
	/* pid as written into slots and process entries: | TRC_PID_FOREIGN when this process is
	 * in another PID namespace than the recorder (attach.c). */
	uint32_t region_pid;
	uint32_t pid_tag;
	uint32_t image; /* this program image's token (attach.c): same in every runtime copy */
	pthread_key_t key;
	bool key_ok;
	bool atfork_ok;
	/* 0 until a thread of this process wrote the PROCESS and MODULE records. */
	int meta_done;
	/* This copy of the runtime registered the process (attach.c): it describes it, and writes
	 * its EXIT record as it exits (procinfo.c). */
	bool describes;
	/* 1 + the index of this image's process entry (attach.c), whose buffer counts its rings
	 * go into; 0 when the table was full. Every runtime copy of the image finds the same. */
	uint32_t proc;
	/* The fork guard (thread.c): private anonymous memory the kernel zeroes in a forked
	 * child (MADV_WIPEONFORK). Line 0 holds 1 while this process is the one that attached;
	 * line i + 1 holds the fast-path flag of the thread on slot i (trc.h's ok). */
	uint8_t *guard;
	uint64_t guard_bytes;
	bool guard_wipes; /* the kernel took MADV_WIPEONFORK: a copy is detected */
};

extern struct trc__rt trc__rt;

/* This process's region: session_layout.h's helpers on trc__rt's geometry. */
static inline struct trc_slot *trc__slot(uint32_t i)
{
	return trc_region_slot(trc__rt.base, &trc__rt.geom, i);
}

static inline uint8_t *trc__ring_data(uint32_t i)
{
	return trc_region_ring(trc__rt.base, &trc__rt.geom, i);
}

/* Reserves a record on t->prod through the ring's general path (ring_reserve_sp). At the end of
 * the faulted part of the ring it faults more in (raising the producer's limit cap to match)
 * while the drain lags, within the region's ring pool, or else wraps early; when the ring is
 * full it waits for the drain (yields, then short sleeps) while the drain shows signs of life;
 * before entering a new lap it takes back pages the recorder gave back (session_layout.h
 * "Residency"). Commit with ring_commit_sp(&t->prod). Slow paths; ok == 0. */
void *trc__reserve(struct trc__thread *t, uint32_t tag, uint32_t payload_bytes);

/* Maps [0, rings_off) into this process's page tables (attach.c). */
void trc__populate_meta(void);

/* Writes the PROCESS and MODULE records of this process into the calling thread's ring, which
 * it holds (procinfo.c). Slow path. */
void trc__emit_process_info(struct trc__thread *t, unsigned mode);

/* Writes the MODULE records of executable mappings this process has not reported yet (after a
 * dlopen), into the calling thread's ring, which it holds (procinfo.c). Slow path. */
void trc__emit_new_modules(struct trc__thread *t, unsigned mode);

/* Writes this process's own EXIT record (its VmHWM now, the trace buffers resident in it;
 * code: the exit code, -1 unknown) into the calling thread's ring, which it holds, once per
 * process (procinfo.c). Slow path. trc__process_exiting (trc.h, thread.c) calls it. */
void trc__emit_exit_info(struct trc__thread *t, unsigned mode, int code);

/* Counts n more bytes of trace buffers resident in this process image: into its process entry's
 * buffers_now, raising buffers_peak to the sum (session_layout.h "Residency"). Before the bytes
 * are published anywhere the recorder could subtract them. Slow paths (attach.c). */
void trc__buffers_add(uint64_t n);

/* The most trace-buffer bytes this process image held at once (its process entry's
 * buffers_peak); 0 without an entry (attach.c). */
uint64_t trc__buffers_peak(void);

/* Forgets which modules were reported (fork child handler, procinfo.c). */
void trc__procinfo_atfork_child(void);

/* Interns a string; returns its id (1, the "table full" entry, when there is no room). Lock-free,
 * async-signal-safe (intern.c). */
uint32_t trc__intern(const char *s);

/* Maps the fork guard for geom's slots (attach, before the mode is set). 0 or -errno. */
int trc__guard_map(const struct trc_region_geom *geom);

/* True in a process that is a copy of the attached one made without the atfork handlers
 * (raw clone(SIGCHLD), _Fork): its guard was zeroed by the kernel. Slow paths only. */
static inline bool trc__forked_unseen(void)
{
	return trc__rt.guard_wipes && !__atomic_load_n(trc__rt.guard, __ATOMIC_RELAXED);
}

/* Makes the calling process (a fork child: its only thread) a process of its own in the
 * session: forgets the parent's ring, registers the new pid. The atfork child handler, and
 * the slow paths of a child whose fork skipped it (attach.c). */
void trc__atfork_child(void);

/* Thread-exit hook (pthread key destructor, thread.c). */
void trc__thread_exit(void *arg);

/* Forgets the calling thread's slot without retiring it (fork child, thread.c). */
void trc__thread_forget(void);

/* The sentinel every thread's frames point at until its first function entry (frames.c). */
extern const struct trc__frame trc__frames_none[1];

/* A fork child's first claim, after its THREAD record: a FUNC_ENTER for each frame it inherited
 * open (frames.c). Slow path; ok == 0. */
void trc__frames_replay(struct trc__thread *t, unsigned mode);

/* A FUNC_EXIT for each open frame of t, innermost first; none stays open (frames.c: the thread
 * or the process ends). Slow path; ok == 0. */
void trc__frames_close_ring(struct trc__thread *t, unsigned mode);

/* Gives t's frames back to the system (thread exit: a thread that goes on emitting maps them
 * again on its next function entry). Any open frames are forgotten (frames.c). */
void trc__frames_unmap(struct trc__thread *t);

#endif /* TRC_RUNTIME_H */
