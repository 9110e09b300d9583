/* session_layout.h - the shared session region: one memfd, mapped by the recorder and by every
 * traced process of the tree. Used by both sides (src/runtime/ in the traced process,
 * src/session/ in the recorder); nothing in it is a pointer, only offsets. Both sides view the
 * layout through one struct trc_region_geom, planned by the recorder and validated from the
 * header by each process that attaches (below, "geometry"); the two sides may be built by
 * different compilers, so every struct in shared memory has its size and offsets asserted.
 *
 * Layout (every part starts on a page boundary; sizes fixed by the recorder at creation):
 *
 *   [0]               struct trc_region_hdr   magic (published last), version, sizes, offsets,
 *                                             clock mode, region-wide lost counters, counters
 *   [procs_off]       struct trc_proc[max_procs]   one entry per process attach (pid, ppid)
 *   [slots_off]       struct trc_slot[max_slots]   per ring: state word, pid, tid, name, ring_ctl
 *   [tlost_off]       struct trc_tlost[TRC_TLOST_ENTRIES]  per thread that lost events without
 *                                             a ring of its own (no free slot, a signal during
 *                                             a claim); at the first page after the slots
 *   [strtab_off]      string table (strtab_bytes): append-only entries, see below
 *   [rings_off]       ring data, max_slots * ring_bytes, slot i at rings_off + i * ring_bytes
 *
 * The file is ftruncated to its full size (sparse) and sealed against shrinking and growing
 * (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), so a traced process can never make the recorder's
 * accesses fault with SIGBUS, and the library can tell a session fd from any other fd.
 *
 * Slot state word (64 bits): low 32 bits state, high 32 bits generation.
 *   FREE --(producer CAS)--> CLAIMING --(producer fills pid/tid/name, release)--> CLAIMED
 *   CLAIMED --(thread exit, release)--> RETIRED
 *   RETIRED or CLAIMED-of-a-dead-thread --(recorder drains it fully, punches the ring's pages,
 *   re-initialises ring_ctl, release)--> FREE with generation + 1.
 * Only the recorder makes a slot FREE, so a producer never sees a ring the recorder still reads;
 * the generation makes the CAS immune to ABA and tells the recorder a slot holds a new stream.
 *
 * String table entry at an 8-aligned offset off: { u32 ready_len; u32 reserved; char str[len];
 * NUL; padding to 8 }. ready_len is 0 until the entry is complete, then (len | READY) by a
 * release store; a name id is (off / 8) + 1, so the drain finds an entry in O(1) and id 0 means
 * "none". Space is reserved by fetch_add on hdr->strtab_used. Entry 0 (id 1) is written by the
 * recorder: the name used when the table is full.
 *
 * Residency (what session_buffers_resident_bytes reports, DESIGN "Fault the rings in before the
 * program's threads need them"): decided here, followed by both sides.
 *   The first touch of a fresh page costs microseconds, paid per page by the process that
 *   touches it (on a virtual machine most of it is the hypervisor's, so faulting the page in
 *   from the recorder's mapping does not help the child). Faulted on the hot path, the first
 *   lap of a ring costs a few times a steady event; faulting a whole ring at claim costs
 *   milliseconds, for every thread and every process, even the ones that emit three events.
 *   - So a ring is faulted in ahead of its writer in chunks: at claim the first
 *     TRC_RING_PREFAULT_BYTES (64 KiB: ~2700 events, ~0.1 ms), then, when the writer reaches the
 *     end of what is faulted, the slow path faults as much again, at most
 *     TRC_RING_FAULT_MAX_CHUNK (256 KiB) at a time (MADV_POPULATE_WRITE plus one touch per
 *     page). The writer reaches the slow path because its ring producer's fast path is capped
 *     at the end of the faulted part (ring_producer_cap_limit). The hot path never faults; the
 *     fault work is batched.
 *   - A ring grows only as far as the drain lags (memory that does not grow with the thread
 *     count): at the end of its faulted part the writer wraps early to offset 0 (padding to the
 *     end of data, ring_producer_wrap_sp) when what the drain has not yet consumed is at most
 *     half of it, and faults more only when it is not. The first TRC_RING_BASE_BYTES of every
 *     ring are its own; faulting beyond them takes the bytes from the region's pool
 *     (hdr->ring_pool_used, at most hdr->ring_pool_bytes: trace-run --ring-budget), by CAS, so
 *     ring pages resident stay within ring_pool_bytes + TRC_RING_BASE_BYTES per ring in use.
 *     A ring that can grow no more reuses what it has. The recorder gives a ring's pool bytes
 *     back (max(resident_bytes - TRC_RING_BASE_BYTES, 0)) when it frees the slot; a thread that
 *     dies between taking pool bytes and publishing resident_bytes leaks at most one chunk.
 *   - A writer whose ring is full waits for the drain (sched_yield in its slow path: on a machine
 *     whose cores the program's threads fill, that is what lets the drain run at all) as long as
 *     its ring's read position moves at least every hdr->ring_wait_ns of the writer's
 *     sleeping (default 10 s); then it drops and counts (a drain that is merely alive is not
 *     the test: one that no longer reads this ring, its stream ended corrupt after the
 *     program scribbled the region, held writers forever), and drops without waiting
 *     until its ring has had room again (a stopped or dead recorder costs one wait, not one per
 *     event). Each wait is counted in the writer's slot (waits, waited_ns, wait_max_ns: slow
 *     path only) and reported in the trace (FORMAT.md "wait"), so a slowed program is never
 *     hidden. hdr->ring_wait_ns == 0 is the other policy (trace-run --when-full drop): the
 *     writer drops and counts at once, no yield, no sleep (and a writer that meets the
 *     recorder punching its ring, the trim handshake below, drops rather than waits).
 *     The recorder gives the space of a ring it no longer reads (its stream ended
 *     corrupt) back at once, so that writer never waits. A ring the drain reaches late is not a
 * dead drain: 200 rings of 1 MiB take the drain well over 100 ms here when it gets a 200th of the
 * CPU.
 *   - Idle rings give pages back. A ring that has published nothing for SESSION_TRIM_IDLE_NS and
 *     is drained to its end has its pages below the writer's offset punched out of the memfd by
 *     the recorder (at least 64 KiB of them). That is safe without stopping the writer because
 *     the writer reaches those pages again only after it wraps, and every wrap goes through its
 *     slow path, which first announces the lap it enters in slot->trim (low 32 bits; CAS):
 *     the recorder takes the word from "lap of the write position, not busy" to busy by CAS
 *     before it punches, and the writer's CAS to the next lap fails while it is busy, so the
 *     writer waits those microseconds (or drops, should the recorder die meanwhile). After the
 *     punch the recorder sets TRC_TRIM_DONE; the writer, on its next wrap, faults its part in
 *     again (its slow path pays, not its hot path) and clears it. The recorder subtracts what it
 *     punched from the resident count until then.
 *   - The recorder's own mapping of the rings would hold every page it has read in its RSS (the
 *     program's pages, counted twice): when the rings hold more than 32 MiB, it drops its
 *     page-table entries for the ring area after every 16 MiB it reads (MADV_DONTNEED on a
 *     shared mapping unmaps, the data stays in the memfd); its next reads map them again, at
 *     ~10 us a page here, which is why it does not below that.
 *   - The writer publishes how much of its ring it has faulted in slot->resident_bytes (relaxed;
 *     only after the pages are in). The recorder counts exactly that for a CLAIMING, CLAIMED or
 *     RETIRED slot, and punches the ring's pages out of the memfd when it frees the slot, so they
 *     leave every process's RSS and the next claimer starts from zero.
 *   - So the buffers of a process shrink as well as grow (a thread's ring freed, an idle ring
 *     punched), and samples taken 100 ms apart do not bound their share at the moment of the
 *     process's RSS peak: a thread that fills its ring and exits between two samples is seen by
 *     neither. The process entry keeps the bound instead (buffers_now, buffers_peak): the most
 *     the buffers held at once, whenever that was. The process reports it in its own EXIT
 *     record, trace-run in the one it writes for the program (flag TRC_EXIT_BUFFERS_PEAK), and
 *     readers subtract it from the kernel's high-water mark for the low end of the program's
 *     peak.
 *   - Metadata (header, process table, slot table, string table, i.e. [0, rings_off)): every
 *     process maps all of it at attach (MADV_POPULATE_READ, or a read per page), so each
 *     attached, live process counts meta_bytes = rings_off, exactly.
 *   Neither distorts the program's RSS as reported: both figures are known to the byte and
 *   subtracted. The recorder never touches ring pages before the child runs.
 *
 * Ring record encoding (the ring's u32 tag = type | name_id << 8; payload little-endian; each
 * payload is a struct trc_ring_* below, its size and offsets asserted):
 *   SPAN_BEGIN/END   tag name_id   { ts }                                      8 bytes
 *   INSTANT/COUNTER  tag name_id   { ts, value }                              16 bytes
 *   ALLOC            { ts, addr, size }                                       24 bytes
 *   FREE             { ts, addr }                                             16 bytes
 *   FUNC_ENTER/EXIT  { ts, fn, call_site }                                    24 bytes
 *   THREAD           { ts, u32 pid, u32 tid, char name[16] }                  32 bytes
 *   PROCESS          { ts, u32 pid, u32 ppid, u64 cmdline_len }   + cmdline   24 bytes + len
 *   MODULE           { ts, start, end, offset, u64 path_len }     + path      40 bytes + len
 *   EXIT             { ts, u32 pid, u32 flags, hwm, buffers, u32 status, u32 0 } 40 bytes
 *   STACK            { ts, u32 id, u16 n, u16 flags }             + n frames  16 bytes + 8 n
 *   MAP              tag stack  { ts, addr, len | kind << 56 }            24 bytes
 *   UNMAP            { ts, addr, len }                                        24 bytes
 * An ALLOC's tag carries the id of its thread's STACK record that holds its call stack (0:
 * none): ids are the thread's own (its ring's), defined by a STACK record earlier in the same
 * ring; a later STACK record with the same id redefines it. The recorder turns them into the
 * trace's session-wide stack ids.
 * The events (SPAN_BEGIN..FUNC_EXIT) are written by trc.h's fast path as { ts, a?, b? }.
 * ts is in the region's clock: TSC ticks when hdr->clock_mode is TSC, else CLOCK_MONOTONIC ns.
 *
 * Concurrency: see the table in src/session/session.h (recorder) and src/runtime/runtime.h
 * (producers).
 */
#ifndef TRC_SESSION_LAYOUT_H
#define TRC_SESSION_LAYOUT_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ring.h"
#include "trc/wire.h"

#define TRC_REGION_MAGIC 0x314e4f4953435254ull /* "TRCSION1" little-endian */
#define TRC_REGION_VERSION                                                  \
	4u /* 2: the thread-loss table; 3: the slot's wait counters; 4: the \
	    * process entry's buffer counts, the slot's process entry */
#define TRC_REGION_PAGE 4096u
#define TRC_REGION_MAX_SLOTS 65536u
#define TRC_REGION_MAX_PROCS (1u << 20)
/* Entries of the thread-loss table: threads of the session that ever lost events while they
 * held no ring (the rest are counted region-wide, per process as before). 32 KiB. */
#define TRC_TLOST_ENTRIES 1024u

/* slot states (low half of the state word) */
#define TRC_SLOT_FREE 0u
#define TRC_SLOT_CLAIMING 1u
#define TRC_SLOT_CLAIMED 2u
#define TRC_SLOT_RETIRED 3u

#define TRC_SLOT_STATE(w) ((uint32_t)(w))
#define TRC_SLOT_GEN(w) ((uint32_t)((w) >> 32))
#define TRC_SLOT_WORD(gen, state) (((uint64_t)(gen) << 32) | (uint64_t)(state))

#define TRC_STRTAB_READY 0x80000000u
#define TRC_STRTAB_MAX_LEN 1024u /* longer names are cut */
#define TRC_STRTAB_MAX_BYTES (8ull * TRC_NAME_ID_MAX)
/* PROCESS record: the command line is recorded whole up to TRC_CMDLINE_MAX bytes (128 KiB:
 * the kernel's limit on one argument, far above real programs) or a quarter of the ring,
 * whichever is less (trc_cmdline_cap). A longer one keeps its first bytes and is marked cut by
 * not ending in a NUL byte: a whole one always does (procinfo.c). */
#define TRC_CMDLINE_MAX (128u << 10)
static inline uint32_t trc_cmdline_cap(uint64_t ring_bytes)
{
	return ring_bytes / 4 < TRC_CMDLINE_MAX ? (uint32_t)(ring_bytes / 4) : TRC_CMDLINE_MAX;
}
/* Set in a slot's or process entry's pid when the process lives in another PID namespace than
 * the recorder (hdr->pid_ns): the number is that namespace's, never tgkill'd or kill'd. */
#define TRC_PID_FOREIGN 0x80000000u
#define TRC_RING_PREFAULT_BYTES (64u << 10) /* faulted in at claim; then doubling */
#define TRC_RING_FAULT_MAX_CHUNK (256u << 10) /* ... by at most this much at a time */
#define TRC_RING_BASE_BYTES (1u << 20) /* a ring's own share; beyond it, from the pool */

struct trc_region_hdr {
	/* Written last by the recorder (release); a process attaches only after an acquire load
	 * sees it. */
	_Atomic uint64_t magic;
	uint32_t version;
	uint32_t hdr_bytes; /* sizeof(struct trc_region_hdr) */
	uint64_t region_bytes; /* total size of the memfd */
	uint32_t max_slots;
	uint32_t slot_bytes; /* sizeof(struct trc_slot) */
	uint32_t max_procs;
	uint32_t proc_bytes; /* sizeof(struct trc_proc) */
	uint64_t procs_off;
	uint64_t slots_off;
	uint64_t strtab_off;
	uint64_t strtab_bytes;
	uint64_t rings_off; /* == meta bytes: every attached process maps [0, rings_off) */
	uint64_t ring_bytes; /* data bytes per ring, power of two, multiple of the page */
	uint32_t clock_mode; /* TRC_CLOCK_* : what producers stamp with */
	uint32_t reserved0;
	uint64_t tsc_hz; /* informational; the recorder converts with its own copy */
	/* The recorder's PID namespace (inode of /proc/self/ns/pid; 0 unknown). A process in
	 * another one writes its pids into slots and process entries with TRC_PID_FOREIGN set:
	 * they are not the recorder's pids, so it never signals them. */
	uint64_t pid_ns;
	/* Ring bytes shared by all rings beyond their first TRC_RING_BASE_BYTES ("Residency"). */
	uint64_t ring_pool_bytes;
	/* How long a writer with a full ring waits for a drain that shows no sign of life; 0: it
	 * never waits, it drops at once (trace-run --when-full drop). */
	uint64_t ring_wait_ns;

	/* Shared counters (producers and recorder, relaxed: accounting only). */
	_Alignas(64) _Atomic uint64_t lost_no_slot; /* events dropped: every slot taken */
	_Atomic uint64_t lost_reentrant; /* events dropped: a signal handler interrupted an
					  * emit or slot claim on the same thread */
	_Atomic uint32_t procs_attached; /* attaches so far (fork children and exec images too) */
	_Atomic uint32_t procs_used; /* entries of the process table taken (may exceed max) */
	_Atomic uint64_t strtab_used; /* bytes of the string table reserved */
	_Atomic uint64_t slots_freed; /* bumped by the recorder on every free: a producer that
				       * found no slot rescans only when this moved */
	_Atomic uint64_t ring_pool_used; /* pool bytes taken by rings (producers add by CAS, the
					  * recorder gives back when it frees a slot) */
	uint64_t reserved_176; /* was the drain's beat; unused (writers watch their own ring) */
	_Atomic uint64_t tlost_added; /* bumped after every add to a thread-loss entry: the
				       * recorder reads the table only when this moved */
};

/* A thread's losses while it held no ring, so that emitted = recorded + lost holds per thread:
 * who is (region pid << 32 | tid), 0 while free; a producer takes a free entry by CAS and
 * keeps it for the session (the recorder never frees one). The recorder reports the counts
 * on a stream of that thread (LOST, reasons NO_SLOT and REENTRANT). */
struct trc_tlost {
	_Atomic uint64_t who;
	_Atomic uint64_t no_slot; /* events dropped: every slot was taken */
	_Atomic uint64_t reentrant; /* events dropped: a signal handler's emit during a claim */
	uint64_t reserved;
};

struct trc_proc {
	_Atomic uint32_t pid; /* 0 until written */
	uint32_t ppid;
	_Atomic uint32_t dead; /* set by the recorder when it found the process gone */
	/* Which program image of that pid (trc_image_token): an exec'd image has another one,
	 * while two runtimes in one image (libtrc.a in the program, libtrc.so from the preload
	 * library) share it and register the process once. */
	uint32_t image;
	/* The trace buffers of this process image, counted as session_buffers_resident_bytes
	 * counts them ("Residency": the metadata, and what each ring of its slots has faulted
	 * in, idle give-back aside): now, and the most they ever were at once. The image's
	 * runtime adds (the metadata as it registers, a ring's pages before it publishes them)
	 * and raises the peak by CAS from the sum its own add returned, so the peak misses no
	 * moment; the recorder subtracts a ring's pages when it frees the slot (saturating at
	 * 0). Relaxed: accounting, and the process's own word (the recorder reports it, it never
	 * acts on it). Pages the recorder punched out of an idle ring are not subtracted (the
	 * writer faults them in again without a count): both figures are upper bounds. */
	_Atomic uint64_t buffers_now;
	_Atomic uint64_t buffers_peak;
};

struct trc_slot {
	_Alignas(64) _Atomic uint64_t state; /* TRC_SLOT_WORD(gen, state) */
	uint32_t pid; /* written while CLAIMING */
	uint32_t tid;
	char name[TRC_THREAD_NAME_BYTES];
	_Atomic uint64_t resident_bytes; /* ring bytes the claimer has faulted in */
	/* Events of this thread dropped because a signal handler's emit nested in one of its own
	 * (trc.h's ok flag): the thread's, reported on its stream. Zeroed by the recorder with
	 * the ring when it frees the slot. */
	_Atomic uint64_t lost_reentrant;
	uint64_t image; /* the claimer's trc_image_token, written while CLAIMING */
	/* Idle give-back handshake ("Residency"): low 32 bits the lap the writer announced,
	 * TRC_TRIM_BUSY while the recorder punches, TRC_TRIM_DONE once it has. CAS only. */
	_Atomic uint64_t trim;
	struct ring_ctl ctl;
	/* How long the writer waited for the drain ("Residency": --when-full wait): waits
	 * counted, their nanoseconds summed, the longest one. Written by the writer's slow path
	 * only (relaxed), read by the recorder like the lost counts (bounded before it is
	 * believed) and reported on the thread's stream as WAIT records. Zeroed with the ring. */
	_Alignas(64) _Atomic uint64_t waited_ns;
	_Atomic uint64_t waits;
	_Atomic uint64_t wait_max_ns;
	/* 1 + the index of the process entry whose buffers_now counts this ring (0: none, the
	 * table was full). Written by the claimer while CLAIMING, before it faults the ring in;
	 * read by the recorder when it frees the slot (bounded by max_procs first). */
	_Atomic uint32_t proc;
};
#define TRC_TRIM_BUSY (1ull << 32)
#define TRC_TRIM_DONE (1ull << 33)

/* The lap a ring position is in (rings start at position 0), as slot->trim holds it. */
static inline uint32_t trc_ring_lap(uint64_t pos, uint64_t ring_bytes)
{
	return (uint32_t)(pos / ring_bytes);
}

/* ---- what both processes must agree on, whatever compiler built them ----------------------- */

_Static_assert(sizeof(struct trc_region_hdr) == 192 && _Alignof(struct trc_region_hdr) == 64,
	       "region header size");
_Static_assert(offsetof(struct trc_region_hdr, magic) == 0 &&
		       offsetof(struct trc_region_hdr, version) == 8 &&
		       offsetof(struct trc_region_hdr, hdr_bytes) == 12 &&
		       offsetof(struct trc_region_hdr, region_bytes) == 16 &&
		       offsetof(struct trc_region_hdr, max_slots) == 24 &&
		       offsetof(struct trc_region_hdr, slot_bytes) == 28 &&
		       offsetof(struct trc_region_hdr, max_procs) == 32 &&
		       offsetof(struct trc_region_hdr, proc_bytes) == 36 &&
		       offsetof(struct trc_region_hdr, procs_off) == 40 &&
		       offsetof(struct trc_region_hdr, slots_off) == 48 &&
		       offsetof(struct trc_region_hdr, strtab_off) == 56 &&
		       offsetof(struct trc_region_hdr, strtab_bytes) == 64 &&
		       offsetof(struct trc_region_hdr, rings_off) == 72 &&
		       offsetof(struct trc_region_hdr, ring_bytes) == 80 &&
		       offsetof(struct trc_region_hdr, clock_mode) == 88 &&
		       offsetof(struct trc_region_hdr, reserved0) == 92 &&
		       offsetof(struct trc_region_hdr, tsc_hz) == 96 &&
		       offsetof(struct trc_region_hdr, pid_ns) == 104 &&
		       offsetof(struct trc_region_hdr, ring_pool_bytes) == 112 &&
		       offsetof(struct trc_region_hdr, ring_wait_ns) == 120,
	       "region header layout (fixed part)");
_Static_assert(offsetof(struct trc_region_hdr, lost_no_slot) == 128 &&
		       offsetof(struct trc_region_hdr, lost_reentrant) == 136 &&
		       offsetof(struct trc_region_hdr, procs_attached) == 144 &&
		       offsetof(struct trc_region_hdr, procs_used) == 148 &&
		       offsetof(struct trc_region_hdr, strtab_used) == 152 &&
		       offsetof(struct trc_region_hdr, slots_freed) == 160 &&
		       offsetof(struct trc_region_hdr, ring_pool_used) == 168 &&
		       offsetof(struct trc_region_hdr, reserved_176) == 176 &&
		       offsetof(struct trc_region_hdr, tlost_added) == 184,
	       "region header layout (counters, on their own cache line)");
_Static_assert(sizeof(struct trc_tlost) == 32 && offsetof(struct trc_tlost, who) == 0 &&
		       offsetof(struct trc_tlost, no_slot) == 8 &&
		       offsetof(struct trc_tlost, reentrant) == 16,
	       "thread-loss entry layout");
_Static_assert(sizeof(struct trc_proc) == 32 && offsetof(struct trc_proc, pid) == 0 &&
		       offsetof(struct trc_proc, ppid) == 4 &&
		       offsetof(struct trc_proc, dead) == 8 &&
		       offsetof(struct trc_proc, image) == 12 &&
		       offsetof(struct trc_proc, buffers_now) == 16 &&
		       offsetof(struct trc_proc, buffers_peak) == 24,
	       "process table entry layout");
_Static_assert(sizeof(struct trc_slot) == 384 && _Alignof(struct trc_slot) == 64 &&
		       offsetof(struct trc_slot, state) == 0 &&
		       offsetof(struct trc_slot, pid) == 8 &&
		       offsetof(struct trc_slot, tid) == 12 &&
		       offsetof(struct trc_slot, name) == 16 &&
		       offsetof(struct trc_slot, resident_bytes) == 32 &&
		       offsetof(struct trc_slot, lost_reentrant) == 40 &&
		       offsetof(struct trc_slot, image) == 48 &&
		       offsetof(struct trc_slot, trim) == 56 &&
		       offsetof(struct trc_slot, ctl) == 64 &&
		       offsetof(struct trc_slot, waited_ns) == 320 &&
		       offsetof(struct trc_slot, waits) == 328 &&
		       offsetof(struct trc_slot, wait_max_ns) == 336 &&
		       offsetof(struct trc_slot, proc) == 344,
	       "slot layout (ring_ctl's own layout: ring.h)");
/* Shared atomics are plain lock-free words: same size either side, no hidden lock. */
_Static_assert(sizeof(_Atomic uint32_t) == 4 && sizeof(_Atomic uint64_t) == 8 &&
		       __atomic_always_lock_free(4, 0) && __atomic_always_lock_free(8, 0),
	       "lock-free 32- and 64-bit atomics");

/* ---- ring record payloads (the encoding table above) ---------------------------------------- */

struct trc_ring_span { /* SPAN_BEGIN, SPAN_END */
	uint64_t ts;
};

struct trc_ring_value { /* INSTANT, COUNTER */
	uint64_t ts;
	uint64_t value;
};

struct trc_ring_alloc { /* ALLOC */
	uint64_t ts;
	uint64_t addr;
	uint64_t size;
};

struct trc_ring_free { /* FREE */
	uint64_t ts;
	uint64_t addr;
};

struct trc_ring_func { /* FUNC_ENTER, FUNC_EXIT */
	uint64_t ts;
	uint64_t fn;
	uint64_t call_site;
};

struct trc_ring_thread { /* THREAD */
	uint64_t ts;
	uint32_t pid;
	uint32_t tid;
	char name[TRC_THREAD_NAME_BYTES];
};

struct trc_ring_process { /* PROCESS, then cmdline_len bytes of command line */
	uint64_t ts;
	uint32_t pid;
	uint32_t ppid;
	uint64_t cmdline_len;
};

/* MODULE, then the path's bytes, then the build-id's: path_len holds both lengths,
 * TRC_RING_MODULE_LENS(path, build_id). */
struct trc_ring_module {
	uint64_t ts;
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t path_len;
};
/* EXIT: the process is exiting (written by its runtime's destructor, procinfo.c): its own
 * VmHWM and the trace buffers resident in it then. flags: TRC_EXIT_* of wire.h (SELF). */
/* MAP and UNMAP carry struct trc_ring_alloc's layout: MAP's size word holds the length in its
 * low 56 bits and the kind (TRC_MAP_*) in its top byte (TRC_MAP_LEN_MASK). */

/* STACK, then n return addresses (u64), innermost first. */
struct trc_ring_stack {
	uint64_t ts;
	uint32_t id; /* the thread's own id, 1 .. TRC_NAME_ID_MAX */
	uint16_t n;
	uint16_t flags; /* TRC_STACK_* */
};
_Static_assert(sizeof(struct trc_ring_stack) == 16, "STACK ring record");

struct trc_ring_exit {
	uint64_t ts;
	uint32_t pid;
	uint32_t flags;
	uint64_t hwm_bytes;
	uint64_t buffers_bytes;
	uint32_t status; /* as from waitpid, with TRC_EXIT_STATUS */
	uint32_t reserved;
};
_Static_assert(sizeof(struct trc_ring_exit) == 40 && offsetof(struct trc_ring_exit, pid) == 8 &&
		       offsetof(struct trc_ring_exit, hwm_bytes) == 16 &&
		       offsetof(struct trc_ring_exit, buffers_bytes) == 24 &&
		       offsetof(struct trc_ring_exit, status) == 32,
	       "exit payload: { ts, u32 pid, u32 flags, hwm, buffers, u32 status, u32 0 }");

#define TRC_RING_MODULE_LENS(path, bid) ((uint64_t)(path) | (uint64_t)(bid) << 32)
#define TRC_RING_MODULE_PATH_LEN(v) ((v)&0xffffffffu)
#define TRC_RING_MODULE_BID_LEN(v) ((v) >> 32)

_Static_assert(sizeof(struct trc_ring_span) == 8 && sizeof(struct trc_ring_value) == 16 &&
		       offsetof(struct trc_ring_value, value) == 8,
	       "span and value payloads");
_Static_assert(sizeof(struct trc_ring_alloc) == 24 && offsetof(struct trc_ring_alloc, addr) == 8 &&
		       offsetof(struct trc_ring_alloc, size) == 16 &&
		       sizeof(struct trc_ring_free) == 16 &&
		       offsetof(struct trc_ring_free, addr) == 8,
	       "alloc and free payloads");
_Static_assert(sizeof(struct trc_ring_func) == 24 && offsetof(struct trc_ring_func, fn) == 8 &&
		       offsetof(struct trc_ring_func, call_site) == 16,
	       "func payload");
_Static_assert(sizeof(struct trc_ring_thread) == 16 + TRC_THREAD_NAME_BYTES &&
		       offsetof(struct trc_ring_thread, pid) == 8 &&
		       offsetof(struct trc_ring_thread, tid) == 12 &&
		       offsetof(struct trc_ring_thread, name) == 16,
	       "thread payload: { ts, u32 pid, u32 tid, name }");
_Static_assert(sizeof(struct trc_ring_process) == 24 &&
		       offsetof(struct trc_ring_process, pid) == 8 &&
		       offsetof(struct trc_ring_process, ppid) == 12 &&
		       offsetof(struct trc_ring_process, cmdline_len) == 16,
	       "process payload head");
_Static_assert(sizeof(struct trc_ring_module) == 40 &&
		       offsetof(struct trc_ring_module, start) == 8 &&
		       offsetof(struct trc_ring_module, end) == 16 &&
		       offsetof(struct trc_ring_module, offset) == 24 &&
		       offsetof(struct trc_ring_module, path_len) == 32,
	       "module payload head");

/* Name id <-> string table offset. */
static inline uint32_t trc_strtab_id(uint64_t off)
{
	return (uint32_t)(off / 8u) + 1u;
}

static inline uint64_t trc_strtab_off(uint32_t id)
{
	return ((uint64_t)id - 1u) * 8u;
}

/* Bytes one entry of a string of len bytes takes. */
static inline uint64_t trc_strtab_entry_bytes(uint32_t len)
{
	return (8u + (uint64_t)len + 1u + 7u) & ~(uint64_t)7u;
}

static inline uint64_t trc_page_up(uint64_t n)
{
	return (n + TRC_REGION_PAGE - 1) & ~(uint64_t)(TRC_REGION_PAGE - 1);
}

/* ---- geometry: both sides' view of the layout -------------------------------------------------
 *
 * The recorder plans a region (trc_region_plan), writes the plan into the header
 * (trc_region_hdr_init) and keeps the plan. A process attaching reads the shared header once
 * into a private copy (trc_region_hdr_read: a hostile process may change the header between two
 * reads) and validates the copy into its own geometry (trc_region_geom_check). After that
 * neither side reads the geometry from the shared header again; every address comes from
 * the geometry through the helpers below, so it stays inside the mapping whatever the region
 * holds. */

struct trc_region_geom {
	uint64_t region_bytes; /* size of the memfd, as mapped */
	uint64_t procs_off;
	uint64_t slots_off;
	uint64_t strtab_off;
	uint64_t strtab_bytes;
	uint64_t rings_off; /* == meta bytes: every attached process maps [0, rings_off) */
	uint64_t ring_bytes;
	uint64_t ring_pool_bytes; /* "Residency"; set by the recorder after trc_region_plan */
	uint64_t ring_wait_ns; /* likewise */
	uint32_t max_slots;
	uint32_t max_procs;
	uint32_t max_tlost; /* TRC_TLOST_ENTRIES */
	uint32_t clock_mode; /* TRC_CLOCK_* */
	uint64_t tlost_off; /* the first page after the slot table (no header field) */
};

/* Where the thread-loss table starts: the first page after the slot table. */
static inline uint64_t trc_region_tlost_at(uint64_t slots_off, uint32_t max_slots)
{
	return trc_page_up(slots_off + (uint64_t)max_slots * sizeof(struct trc_slot));
}

/* Lays out a region of max_slots rings of ring_bytes, a process table of max_procs and a string
 * table of strtab_bytes (rounded up to a page), clock_mode TRC_CLOCK_GETTIME (the recorder sets
 * the clock once it has calibrated). Returns 0, or -EINVAL when a value is out of range: slots
 * in [1, TRC_REGION_MAX_SLOTS], procs up to TRC_REGION_MAX_PROCS, ring_bytes a power of two in
 * [TRC_REGION_PAGE, RING_MAX_CAPACITY], strtab_bytes in [TRC_REGION_PAGE,
 * TRC_STRTAB_MAX_BYTES] after rounding. Every plan it accepts, trc_region_geom_check accepts. */
static inline int trc_region_plan(struct trc_region_geom *g, uint32_t max_slots, uint32_t max_procs,
				  uint64_t ring_bytes, uint64_t strtab_bytes)
{
	memset(g, 0, sizeof(*g));
	if (max_slots == 0 || max_slots > TRC_REGION_MAX_SLOTS ||
	    max_procs > TRC_REGION_MAX_PROCS || ring_bytes < TRC_REGION_PAGE ||
	    !ring_capacity_valid(ring_bytes) || strtab_bytes < TRC_REGION_PAGE ||
	    strtab_bytes > TRC_STRTAB_MAX_BYTES || trc_page_up(strtab_bytes) > TRC_STRTAB_MAX_BYTES)
		return -EINVAL;
	g->max_slots = max_slots;
	g->max_procs = max_procs;
	g->ring_bytes = ring_bytes;
	g->strtab_bytes = trc_page_up(strtab_bytes);
	g->procs_off = trc_page_up(sizeof(struct trc_region_hdr));
	g->slots_off = trc_page_up(g->procs_off + (uint64_t)max_procs * sizeof(struct trc_proc));
	g->max_tlost = TRC_TLOST_ENTRIES;
	g->tlost_off = trc_region_tlost_at(g->slots_off, max_slots);
	g->strtab_off =
		trc_page_up(g->tlost_off + (uint64_t)g->max_tlost * sizeof(struct trc_tlost));
	g->rings_off = g->strtab_off + g->strtab_bytes;
	g->region_bytes = g->rings_off + (uint64_t)max_slots * ring_bytes;
	g->clock_mode = TRC_CLOCK_GETTIME;
	return 0;
}

/* Writes the geometry into a fresh header: everything but the magic (published last, by the
 * recorder), tsc_hz and the counters. Recorder, before it publishes the region. */
static inline void trc_region_hdr_init(struct trc_region_hdr *h, const struct trc_region_geom *g)
{
	h->version = TRC_REGION_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->region_bytes = g->region_bytes;
	h->max_slots = g->max_slots;
	h->slot_bytes = sizeof(struct trc_slot);
	h->max_procs = g->max_procs;
	h->proc_bytes = sizeof(struct trc_proc);
	h->procs_off = g->procs_off;
	h->slots_off = g->slots_off;
	h->strtab_off = g->strtab_off;
	h->strtab_bytes = g->strtab_bytes;
	h->rings_off = g->rings_off;
	h->ring_bytes = g->ring_bytes;
	h->ring_pool_bytes = g->ring_pool_bytes;
	h->ring_wait_ns = g->ring_wait_ns;
	h->clock_mode = g->clock_mode;
}

/* Copies the header's fixed part (magic through tsc_hz; not the counters, which other processes
 * change all the time) out of the shared region, reading each byte once. The caller has
 * acquired the magic first (the copy then holds a complete layout, or whatever a hostile
 * process wrote; trc_region_geom_check decides). */
static inline void trc_region_hdr_read(struct trc_region_hdr *copy,
				       const struct trc_region_hdr *shared)
{
	memset(copy, 0, sizeof(*copy));
	memcpy((void *)copy, (const void *)shared, offsetof(struct trc_region_hdr, lost_no_slot));
	/* The checks that follow must use the copy: no reading the shared header again. */
	atomic_signal_fence(memory_order_seq_cst);
}

/* Validates a private copy of a header (trc_region_hdr_read) for a mapping of mapped_bytes and
 * fills *g from it. Returns 0, or -EPROTO (and *g zeroed) when the header is not a version
 * TRC_REGION_VERSION layout of this region: wrong magic, version or struct sizes; a size that
 * is not the mapping's; a count, ring or string table size out of range (as in
 * trc_region_plan); an offset not on a page; the parts out of order, overlapping or
 * running past the end; an unknown clock (or the TSC on a machine without one). Overflow-safe:
 * offsets are compared by difference, never summed. Any thread; no shared memory is read. */
static inline int trc_region_geom_check(struct trc_region_geom *g, const struct trc_region_hdr *h,
					uint64_t mapped_bytes)
{
	memset(g, 0, sizeof(*g));
	uint64_t size = h->region_bytes;
	if (atomic_load_explicit(&h->magic, memory_order_relaxed) != TRC_REGION_MAGIC ||
	    h->version != TRC_REGION_VERSION || h->hdr_bytes != sizeof(*h) ||
	    h->slot_bytes != sizeof(struct trc_slot) || h->proc_bytes != sizeof(struct trc_proc) ||
	    size != mapped_bytes)
		return -EPROTO;
	if (h->max_slots == 0 || h->max_slots > TRC_REGION_MAX_SLOTS ||
	    h->max_procs > TRC_REGION_MAX_PROCS || h->ring_bytes < TRC_REGION_PAGE ||
	    !ring_capacity_valid(h->ring_bytes) || h->strtab_bytes < TRC_REGION_PAGE ||
	    h->strtab_bytes > TRC_STRTAB_MAX_BYTES)
		return -EPROTO;
	if ((h->procs_off | h->slots_off | h->strtab_off | h->rings_off) % TRC_REGION_PAGE)
		return -EPROTO;
	/* In order, each part after the one before, the rings last and inside the region. The
	 * products are small (counts and sizes bounded above), so none of them overflows. */
	if (h->procs_off < sizeof(*h) || h->slots_off < h->procs_off ||
	    h->slots_off - h->procs_off < (uint64_t)h->max_procs * sizeof(struct trc_proc) ||
	    h->strtab_off < h->slots_off ||
	    h->strtab_off - h->slots_off < (uint64_t)h->max_slots * sizeof(struct trc_slot) ||
	    h->strtab_off < trc_region_tlost_at(h->slots_off, h->max_slots) ||
	    h->strtab_off - trc_region_tlost_at(h->slots_off, h->max_slots) <
		    (uint64_t)TRC_TLOST_ENTRIES * sizeof(struct trc_tlost) ||
	    h->rings_off < h->strtab_off || h->rings_off - h->strtab_off < h->strtab_bytes ||
	    h->rings_off > size || (size - h->rings_off) / h->ring_bytes < h->max_slots)
		return -EPROTO;
	if (h->clock_mode != TRC_CLOCK_GETTIME && h->clock_mode != TRC_CLOCK_TSC)
		return -EPROTO;
#if !defined(__x86_64__) && !defined(__i386__)
	if (h->clock_mode == TRC_CLOCK_TSC)
		return -EPROTO;
#endif
	g->region_bytes = size;
	g->procs_off = h->procs_off;
	g->slots_off = h->slots_off;
	g->tlost_off = trc_region_tlost_at(h->slots_off, h->max_slots);
	g->max_tlost = TRC_TLOST_ENTRIES;
	g->strtab_off = h->strtab_off;
	g->strtab_bytes = h->strtab_bytes;
	g->rings_off = h->rings_off;
	g->ring_bytes = h->ring_bytes;
	g->ring_pool_bytes = h->ring_pool_bytes; /* any value: it bounds only this tree's rings */
	/* Any value: it delays only this tree's threads (0: none). */
	g->ring_wait_ns = h->ring_wait_ns;
	g->max_slots = h->max_slots;
	g->max_procs = h->max_procs;
	g->clock_mode = h->clock_mode;
	return 0;
}

/* Addresses in a region mapped at base, from a validated geometry (i below max_procs or
 * max_slots). Any thread. */
static inline struct trc_proc *trc_region_proc(uint8_t *base, const struct trc_region_geom *g,
					       uint32_t i)
{
	return (struct trc_proc *)(void *)(base + g->procs_off +
					   (uint64_t)i * sizeof(struct trc_proc));
}

static inline struct trc_slot *trc_region_slot(uint8_t *base, const struct trc_region_geom *g,
					       uint32_t i)
{
	return (struct trc_slot *)(void *)(base + g->slots_off +
					   (uint64_t)i * sizeof(struct trc_slot));
}

static inline struct trc_tlost *trc_region_tlost(uint8_t *base, const struct trc_region_geom *g,
						uint32_t i)
{
	return (struct trc_tlost *)(void *)(base + g->tlost_off +
					    (uint64_t)i * sizeof(struct trc_tlost));
}

static inline uint8_t *trc_region_strtab(uint8_t *base, const struct trc_region_geom *g)
{
	return base + g->strtab_off;
}

/* Offset in the region of ring i's data (for calls that take a file offset). */
static inline uint64_t trc_region_ring_off(const struct trc_region_geom *g, uint32_t i)
{
	return g->rings_off + (uint64_t)i * g->ring_bytes;
}

static inline uint8_t *trc_region_ring(uint8_t *base, const struct trc_region_geom *g, uint32_t i)
{
	return base + trc_region_ring_off(g, i);
}

#endif /* TRC_SESSION_LAYOUT_H */
