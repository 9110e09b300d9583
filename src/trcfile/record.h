/* record.h - one decoded trace record: the currency between the parts of the recorder.
 *
 * The session drain (src/session/) turns ring events into these, the recorder turns RSS
 * samples into these, the file writer (trcfile_writer.c) encodes them into chunks, and the
 * reader hands them back to trace-dump. On disk they are encoded compactly (FORMAT.md, here);
 * this struct is the in-memory form only and is never written as is.
 *
 * Time: ts_ns is CLOCK_MONOTONIC nanoseconds, the trace's only clock domain.
 * Strings: (ptr, len) pairs, not NUL-terminated, owned by whoever produced the record and
 * valid only for the duration of the call that hands the record over (copy to keep).
 * Names: name_id refers to a TRC_REC_NAME record of the same trace (ids are session-wide;
 * two ids may carry the same string, e.g. from two processes, so aggregate by string).
 *
 * Threads: plain data, no synchronisation.
 */
#ifndef TRC_RECORD_H
#define TRC_RECORD_H

#include <stdint.h>

#include "trc/wire.h"

struct trc_record {
	uint32_t type; /* enum trc_rec_type */
	uint64_t ts_ns;
	union {
		struct {
			uint32_t name_id;
		} span;
		struct {
			uint32_t name_id;
			int64_t value;
		} value;
		struct {
			uint64_t addr;
			uint64_t size;
			/* ALLOC: the STACK record of its call stack; 0 none captured (FREE: 0) */
			uint32_t stack_id;
		} alloc;
		struct {
			uint64_t addr;
			uint64_t call_site;
		} func;
		struct trc_rss_figures rss; /* one sample of the sampler */
		struct {
			uint64_t count;
			uint32_t reason; /* enum trc_lost_reason */
		} lost;
		struct {
			uint32_t pid;
			uint32_t tid;
			const char *name;
			uint32_t name_len;
		} thread;
		struct {
			uint32_t pid;
			uint32_t ppid;
			const char *cmdline; /* arguments separated by NUL bytes */
			uint32_t cmdline_len;
		} process;
		struct {
			uint32_t id;
			const char *str;
			uint32_t len;
		} name;
		struct {
			uint32_t pid;
			uint64_t start;  /* first address of the mapping */
			uint64_t end;    /* one past its last address */
			uint64_t offset; /* file offset of start */
			const char *path;
			uint32_t path_len;
			/* the file's GNU build-id (0 bytes: unknown), at most TRC_BUILD_ID_MAX */
			const uint8_t *build_id;
			uint32_t build_id_len;
		} module;
		struct {
			const char *text;
			uint32_t len;
		} note;
		struct {
			uint32_t pid;
			int32_t status; /* as from waitpid (SELF: known if STATUS) */
			/* ru_maxrss from wait4 (flags 0), or the process's own VmHWM as it
			 * exited (TRC_EXIT_SELF); buffers included; 0 unknown */
			uint64_t maxrss_bytes;
			uint64_t buffers_bytes; /* trace buffers resident in it at exit */
			uint32_t flags;         /* TRC_EXIT_* of wire.h (format 1.3; 0 before) */
		} exit;
		struct {
			uint64_t addr;
			uint64_t len;
			uint32_t kind;     /* MAP: TRC_MAP_* (UNMAP: 0) */
			uint32_t stack_id; /* MAP: its call stack, 0 none (UNMAP: 0) */
		} map;
		struct {
			uint32_t id;    /* > 0, session-wide: ALLOC records refer to it */
			uint32_t flags; /* TRC_STACK_* of wire.h */
			uint32_t n;     /* frames, at most TRC_STACK_DEPTH_MAX */
			/* Return addresses, innermost first (frames[0] is in the function that
			 * called the allocator): each is the instruction after a call, so a
			 * symbolizer looks up frames[i] - 1. A producer sets frames; the decoder
			 * leaves frames NULL and points packed at the record's encoded frames
			 * instead (already checked): trcfile_stack_unpack reads either. */
			const uint64_t *frames;
			const uint8_t *packed;
			uint32_t packed_len;
		} stack;
		struct {
			uint64_t waits;     /* waits for the drain since the stream's previous WAIT */
			uint64_t waited_ns; /* their total time */
			uint64_t max_ns;    /* the thread's longest wait so far */
		} wait;
	};
};

#endif /* TRC_RECORD_H */
