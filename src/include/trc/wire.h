/* trc/wire.h - every number that is on disk or in shared memory, defined once.
 *
 * Purpose: the values that two programs (the traced program and the recorder), or two
 * versions of one program (the writer of a trace file and a later reader), must agree on.
 * Each is defined here and nowhere else; the headers of the parts use these names. A value
 * written to a file or to the session region never changes meaning: new values are added,
 * old ones are never reused (src/trcfile/FORMAT.md "Compatibility").
 *
 * Dependencies: none but libc's <stdint.h> and <time.h>, so every part of the tree may include
 * it (ringbuf/ does not need to), and it is installed beside the public trc.h, which uses it.
 *
 * Threads: constants and one pure function; no state.
 */
#ifndef TRC_WIRE_H
#define TRC_WIRE_H

#include <stdint.h>
#include <time.h>

/* ---- record types: the ring tag's low byte, and byte 0 (bits 0-4) of a file record ------- */

enum trc_rec_type {
	TRC_REC_INVALID = 0,
	TRC_REC_SPAN_BEGIN = 1, /* span: name_id */
	TRC_REC_SPAN_END = 2,   /* span: name_id */
	TRC_REC_INSTANT = 3,    /* value: name_id, value */
	TRC_REC_COUNTER = 4,    /* value: name_id, value */
	TRC_REC_ALLOC = 5,      /* alloc: addr, size */
	TRC_REC_FREE = 6,       /* alloc: addr (size 0) */
	TRC_REC_FUNC_ENTER = 7, /* func: addr, call_site */
	TRC_REC_FUNC_EXIT = 8,  /* func: addr, call_site */
	TRC_REC_RSS = 9,        /* rss: one sample of the sampler */
	TRC_REC_LOST = 10,      /* lost: count records lost since the previous LOST of the stream */
	TRC_REC_THREAD = 11,    /* thread: pid, tid, name (a thread started or was renamed) */
	TRC_REC_PROCESS = 12,   /* process: pid, ppid, command line (a process attached) */
	TRC_REC_NAME = 13,      /* name: id -> string */
	TRC_REC_MODULE = 14,    /* module: a mapped executable file, for symbolizing addresses */
	TRC_REC_NOTE = 15,      /* note: a line of text from the recorder (e.g. why no events) */
	TRC_REC_EXIT = 16,      /* exit: a process ended (pid, status as from wait) */
	TRC_REC_WAIT = 17,      /* wait: the thread waited for the drain (waits, ns, longest) */
	TRC_REC_STACK = 18,     /* stack: id -> the return addresses of a call stack */
	TRC_REC_MAP = 19,       /* map: memory mapped outside malloc (mmap, mremap, brk) */
	TRC_REC_UNMAP = 20,     /* unmap: memory unmapped outside malloc (munmap, mremap, brk) */
	TRC_REC_TYPE_COUNT
};

#ifndef __cplusplus
_Static_assert(TRC_REC_TYPE_COUNT <= 32, "a type fits in bits 0-4 of a file record's first byte");
_Static_assert(TRC_REC_TYPE_COUNT <= 256, "a type fits in the low byte of a ring tag");
#endif

/* The event types (what a program emits, as opposed to metadata and samples): the range
 * SPAN_BEGIN..FUNC_EXIT, which the file decoder's fast path and the drain's fused loops take,
 * and MAP and UNMAP (format 1.4), which they leave to the general paths. */
static inline int trc_rec_is_event(uint32_t type)
{
	return (type >= TRC_REC_SPAN_BEGIN && type <= TRC_REC_FUNC_EXIT) || type == TRC_REC_MAP ||
	       type == TRC_REC_UNMAP;
}

/* What a MAP record maps (its kind). */
#define TRC_MAP_ANON 1u   /* private anonymous memory (mmap) */
#define TRC_MAP_SHARED 2u /* shared anonymous memory (mmap MAP_SHARED) */
#define TRC_MAP_FILE 3u   /* a file (mmap of a descriptor) */
#define TRC_MAP_BRK 4u    /* the heap's break moved up (brk, sbrk) */
#define TRC_MAP_REMAP 5u  /* the new range of an mremap */
#define TRC_MAP_KIND_MAX 5u
/* A MAP ring record's size word: the length in its low 56 bits, the kind in its top byte. */
#define TRC_MAP_LEN_MASK ((1ull << 56) - 1)

/* EXIT record flags. SELF: written by the exiting process's runtime (after the program was
 * done with it: a late destructor), not by trace-run's wait4; maxrss_bytes is its VmHWM, which
 * counts that process alone (wait4's ru_maxrss is the largest of the process and its
 * waited-for descendants); status is unknown unless TRC_EXIT_STATUS. */
#define TRC_EXIT_SELF 1u
/* With SELF: status is known (the code of exit(), _exit() or main's return, seen by the preload
 * library's hooks: status = code << 8, as from waitpid). */
#define TRC_EXIT_STATUS 2u
/* buffers_bytes is the most the process's trace buffers held at once, whenever that was (its
 * process entry's buffers_peak, session_layout.h "Residency"), not their share at exit: a bound
 * on their share at the moment of the RSS peak. Without it a reader has only the share at exit
 * and the samples', which miss a ring that grew and was freed between two samples. */
#define TRC_EXIT_BUFFERS_PEAK 4u
#define TRC_EXIT_FLAGS_ALL 7u

/* ---- call stacks of allocations ------------------------------------------------------------ */

/* A STACK record's flags: the stack was deeper than the depth cap and its outermost frames were
 * cut (the record keeps the innermost ones). */
#define TRC_STACK_TRUNCATED 1u
#define TRC_STACK_FLAGS_ALL 1u
/* The depth cap's range (trace-run --stack-depth) and its default. */
#define TRC_STACK_DEPTH_DEFAULT 64u
#define TRC_STACK_DEPTH_MAX 256u

/* Environment variables through which trace-run tells the preload library what to capture:
 * "all", "none" or "sample=BYTES" (the mean number of bytes between two sampled stacks), and
 * the depth cap. */
#define TRC_ALLOC_STACKS_ENV "TRC_ALLOC_STACKS"
#define TRC_STACK_DEPTH_ENV "TRC_STACK_DEPTH"

/* ---- ring tag: u32 = type | name_id << 8 --------------------------------------------------- */

#define TRC_NAME_ID_BITS 24u
#define TRC_NAME_ID_MAX ((1u << TRC_NAME_ID_BITS) - 1u)
#define TRC_TAG(type, id) ((uint32_t)(type) | ((uint32_t)(id) << 8))
#define TRC_TAG_TYPE(tag) ((uint32_t)(tag)&0xffu)
#define TRC_TAG_ID(tag) ((uint32_t)(tag) >> 8)

/* ---- why records were lost (LOST record's reason) ------------------------------------------ */

enum trc_lost_reason {
	TRC_LOST_RING_FULL = 1,    /* the thread's ring was full */
	TRC_LOST_NO_SLOT = 2,      /* every ring slot of the session was taken */
	TRC_LOST_CORRUPT = 3,      /* the ring was corrupt; count is what could be accounted */
	TRC_LOST_OVERSIZED = 4,    /* a record larger than the ring */
	TRC_LOST_SAMPLER_LATE = 5, /* sampler ticks skipped because a tick came late */
	TRC_LOST_REENTRANT = 6,    /* a signal handler's event interrupted one of its thread */
	TRC_LOST_DISK_FULL = 7,    /* the disk filled (or the file size limit): never written */
	TRC_LOST_REASON_COUNT
};

/* ---- RSS samples: which /proc file(s) a sample read, and what it holds ---------------------- */

enum trc_rss_source {
	TRC_RSS_STATM = 1,        /* resident pages: fast (one pread, ~1.5 us), the default */
	TRC_RSS_STATUS = 2,       /* VmRSS, VmHWM and the RssAnon/RssFile/RssShmem split */
	TRC_RSS_SMAPS_ROLLUP = 3, /* exact Rss and Pss: walks every mapping, ~13 us per MiB */
	TRC_RSS_BOTH = 4          /* statm and smaps_rollup in one sample */
};

#define TRC_RSS_HAS_HWM (1u << 0)   /* hwm_bytes is valid */
#define TRC_RSS_HAS_SPLIT (1u << 1) /* anon/file/shmem are valid */
#define TRC_RSS_HAS_EXACT (1u << 2) /* rss_exact_bytes and pss_bytes are valid */
#define TRC_RSS_STRETCHED (1u << 3) /* the interval was stretched: the source was slow */
#define TRC_RSS_FINAL (1u << 4)     /* last sample: the process was gone after it */
#define TRC_RSS_FLAGS_ALL 0x1fu

/* The figures of one RSS sample: what the sampler reads, and what an RSS record carries (in
 * this order on disk, FORMAT.md record type 9). Which are valid is in flags; rss_bytes always
 * is. Every byte count is as the source reports it, trace buffers included; buffers_bytes is
 * their share, so the program's own figure is rss_bytes - buffers_bytes. */
struct trc_rss_figures {
	uint32_t source;          /* enum trc_rss_source */
	uint32_t flags;           /* TRC_RSS_* */
	uint32_t pid;
	uint64_t rss_bytes;       /* statm's resident size, status's VmRSS, or smaps_rollup's Rss */
	uint64_t buffers_bytes;   /* trace buffers resident in the process */
	uint64_t hwm_bytes;       /* VmHWM (status) */
	uint64_t anon_bytes;      /* RssAnon (status) */
	uint64_t file_bytes;      /* RssFile (status) */
	uint64_t shmem_bytes;     /* RssShmem (status) */
	uint64_t rss_exact_bytes; /* Rss of smaps_rollup */
	uint64_t pss_bytes;       /* Pss of smaps_rollup */
	uint64_t read_ns;         /* how long reading the source took (wall time) */
};

/* The sampling interval's range (the file header's rss_interval_ns when sampling is on): below
 * 1 ms sampling is a busy loop, above an hour it says nothing about a run. */
#define TRC_RSS_INTERVAL_MIN_NS 1000000ull
#define TRC_RSS_INTERVAL_MAX_NS 3600000000000ull

/* ---- clocks: what producers stamp with (session header, file header, trc__mode) ------------ */

#define TRC_CLOCK_GETTIME 1u /* CLOCK_MONOTONIC ns from clock_gettime */
#define TRC_CLOCK_TSC 2u     /* TSC ticks, converted to CLOCK_MONOTONIC ns by the recorder */

/* The trace's one clock domain: CLOCK_MONOTONIC in nanoseconds. Every part reads "now" through
 * these (the vDSO: no syscall), so the conversion is written once. */
static inline uint64_t trc_timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Any clock in ns (CLOCK_REALTIME for the header's anchor, CPU-time clocks for costs). */
static inline uint64_t trc_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return trc_timespec_ns(&ts);
}

static inline uint64_t trc_mono_ns(void)
{
	return trc_clock_ns(CLOCK_MONOTONIC);
}

/* ---- streams of a trace file ---------------------------------------------------------------- */

enum trc_stream_kind {
	TRC_STREAM_THREAD = 1, /* one thread's events */
	TRC_STREAM_RSS = 2,    /* the sampler's RSS series */
	TRC_STREAM_META = 3    /* names, threads, processes, modules, notes, exits */
};

/* ---- the session: how a traced program finds it --------------------------------------------- */

/* Environment variable that holds the number of the inherited session descriptor. */
#define TRC_SESSION_FD_ENV "TRC_SESSION_FD"
/* Environment variable that makes the recorder stamp with clock_gettime ("gettime"). */
#define TRC_CLOCK_ENV "TRC_CLOCK"

/* The longest build-id a MODULE record carries (GNU build-ids are 20 bytes, sha1); longer ones
 * are not recorded. */
#define TRC_BUILD_ID_MAX 64u

/* Thread names are cut to this many bytes, NUL included (the kernel's own limit). */
#define TRC_THREAD_NAME_BYTES 16u

#endif /* TRC_WIRE_H */
