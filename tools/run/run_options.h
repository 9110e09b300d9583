/* run_options.h - trace-run's command line: parsed and validated before anything starts. */
#ifndef TRC_RUN_OPTIONS_H
#define TRC_RUN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli_duration.h"

#define RUN_EXIT_RECORDER_FAILED 1
#define RUN_EXIT_USAGE 2
#define RUN_EXIT_CANNOT_EXECUTE 126
#define RUN_EXIT_NOT_FOUND 127

enum run_clock { RUN_CLOCK_AUTO, RUN_CLOCK_GETTIME };

struct run_options {
	const char *output; /* NULL: <command>.<pid>.trc */
	bool rss_enabled;
	uint64_t rss_interval_ns;
	enum trc_rss_source rss_source;
	uint64_t buffer_bytes; /* per-thread ring */
	/* Given on the command line: kept as given. Left at their defaults, they are lowered to
	 * fit a file size limit (ulimit -f) that the session's memfd counts against. */
	bool buffer_bytes_given, max_threads_given;
	uint64_t ring_budget_bytes; /* shared ring pool (session_config.ring_pool_bytes); 0 default
				     */
	uint32_t max_threads; /* ring slots in the session */
	int zstd_level;
	unsigned compress_threads;
	bool quiet;
	bool verbose; /* the last lines also say how stored chunks were compressed */
	int progress; /* -1 auto (stderr is a terminal), 0 off, 1 on */
	enum run_clock clock;
	bool preload; /* put libtrc-preload.so in LD_PRELOAD */
	bool follow; /* wait for the whole process tree, not just the command (--no-follow) */
	bool keep_stored; /* leave chunks written stored as they are (no compaction at exit) */
	bool drop_when_full; /* --when-full drop: a full ring drops at once (default: wait) */
	/* --alloc-stacks, as the preload library reads it (TRC_ALLOC_STACKS): "all", "none" or
	 * "sample=BYTES"; and --stack-depth */
	char alloc_stacks[32];
	uint32_t stack_depth;
	char **argv; /* the command and its arguments, NULL-terminated */
	int argc;
};

/* Parses argv. Returns 0 on success, RUN_EXIT_USAGE after printing a one-line error naming the
 * bad value, or -1 when --help/--version printed what was asked (exit 0). */
int run_options_parse(int argc, char **argv, struct run_options *o);

/* Parses "4M", "64K", "1G", "65536" into bytes. 0 or -EINVAL / -ERANGE. */
int run_parse_size(const char *text, uint64_t *out);

#endif /* TRC_RUN_OPTIONS_H */
