/* rss_parse.h - pure parsers of the /proc files the sampler reads, and the sampler's types.
 *
 * Purpose: turn the text of /proc/PID/statm, /proc/PID/status and /proc/PID/smaps_rollup into
 * byte counts. Pure functions: no I/O, no allocation, no global state, so they are tested on
 * files captured from this machine's /proc (tests/data/) and on malformed variants.
 *
 * Rule: a clear error, never a wrong number. Input that is truncated (no final newline),
 * lacks a required field, repeats one, holds a non-numeric or out-of-range value, or whose
 * byte count would overflow 64 bits is rejected as a whole; no partial figures are returned.
 *   -EINVAL  malformed text (truncated, non-numeric, wrong shape, duplicate field)
 *   -ENODATA a required field is missing from otherwise well-formed text
 *   -ERANGE  a number does not fit (more than 64 bits, or its byte count overflows)
 *   -ESRCH   the text is that of a task without memory: a zombie or an exiting process
 *            (status: a State line and none of the memory lines)
 *
 * Threads: none of their own; callable from any thread.
 *
 * Dependency rule: sampler/ uses libc, pthreads, ringbuf/ and the dependency-free
 * src/include/trc/wire.h, where the sources (enum trc_rss_source) and the sample flags
 * (TRC_RSS_*) are defined once for the sampler, the recorder and the file.
 */
#ifndef TRC_RSS_PARSE_H
#define TRC_RSS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "trc/wire.h" /* enum trc_rss_source, TRC_RSS_* flags */

/* /proc/PID/statm: "size resident shared text lib data dt\n", in pages. */
struct rss_statm {
	uint64_t size_bytes;
	uint64_t resident_bytes;
	uint64_t shared_bytes;
};

/* /proc/PID/status: the memory lines (kB in the file, bytes here) and the state letter. */
struct rss_status {
	uint64_t rss_bytes; /* VmRSS */
	uint64_t hwm_bytes; /* VmHWM: the kernel's own high-water mark of VmRSS */
	uint64_t anon_bytes; /* RssAnon */
	uint64_t file_bytes; /* RssFile */
	uint64_t shmem_bytes; /* RssShmem */
	char state; /* first letter of State: ('R', 'S', 'Z'...), 0 when absent */
};

/* /proc/PID/smaps_rollup: the sums over every mapping. */
struct rss_rollup {
	uint64_t rss_bytes; /* Rss */
	uint64_t pss_bytes; /* Pss */
};

/* Parses statm text (len bytes, need not be NUL-terminated). page_bytes must be a power of
 * two. Returns 0, -EINVAL or -ERANGE; *out is written only on success. */
int rss_parse_statm(const char *text, size_t len, uint64_t page_bytes, struct rss_statm *out);

/* Parses status text. All five memory fields are required. Returns 0, -EINVAL, -ERANGE,
 * -ENODATA (some missing), or -ESRCH when all are missing and a State line is there: the
 * status of a task that has released its memory (zombie, or exiting). */
int rss_parse_status(const char *text, size_t len, struct rss_status *out);

/* Parses smaps_rollup text: a "[rollup]" header line, then Rss and Pss (both required).
 * Returns 0, -EINVAL, -ERANGE or -ENODATA. Empty text (what a process whose memory is gone
 * gives) is -ENODATA. */
int rss_parse_smaps_rollup(const char *text, size_t len, struct rss_rollup *out);

#endif /* TRC_RSS_PARSE_H */
