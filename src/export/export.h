/* export.h - the exporters as library calls: a trace in, another format out.
 *
 * Purpose: each exporter maps the records of an open trace (src/trcfile/trcfile.h) to a
 * target format and hands the bytes to a sink; trace-dump's subcommands (tools/dump/) are
 * their options, their help and one call here. The byte encoders are beside them
 * (pb_wire.h, parquet_writer.h, gz_deflate.h); span balancing and the several-traces pid
 * offset are export_spans.h, one rule for every exporter.
 *
 * Errors: every export_* returns 0 or -errno and never prints or exits. On failure the
 * reason (the reader's message, else strerror) is put in the caller's err buffer (err_len
 * bytes, NUL-terminated; NULL: none), for the caller to print as its one line. A sink's
 * error is returned as the sink gave it (-ENOSPC from a full disk) and ends the export.
 *
 * Ownership: the readers stay the caller's (opened and closed by it); options and sinks are
 * read during the call only.
 *
 * Threads: an export runs on the caller's thread; exports of different readers may run at
 * the same time, never two on one reader (its iterator state is the reader's).
 */
#ifndef TRC_EXPORT_H
#define TRC_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trcfile_reader;

/* Where an export's bytes go: write(ctx, p, n) takes all n bytes or returns -errno. */
struct export_sink {
	int (*write)(void *ctx, const void *p, size_t n);
	void *ctx;
};

/* How function addresses are named: name(ctx, r, pid, addr, buf, len) writes the name of
 * addr in process pid of r into buf (NUL-terminated, cut to len - 1) and returns its length.
 * A NULL name takes export_func_name_plain. trace-dump passes its symbol resolver
 * (tools/dump/dump_symbols.c). */
struct export_namer {
	size_t (*name)(void *ctx, const struct trcfile_reader *r, uint32_t pid, uint64_t addr,
		       char *buf, size_t len);
	void *ctx;
};

/* Without symbols: "module+0xOFFSET" when a module record covers addr, else "0xADDR". */
size_t export_func_name_plain(const struct trcfile_reader *r, uint32_t pid, uint64_t addr,
			      char *buf, size_t len);

/* The time every relative time of the outputs counts from: the header's start of recording,
 * or the first record when that is missing or later. */
uint64_t export_start_ns(const struct trcfile_reader *r);

/* ---- pprof: a heap profile (gzip profile.proto), export_pprof.c --------------------------- */

enum export_pprof_mode {
	EXPORT_PPROF_ALLOC = 1, /* bytes and objects allocated over the whole trace */
	EXPORT_PPROF_LIVE_PEAK, /* live when the live bytes first reach their maximum */
	EXPORT_PPROF_LIVE_END, /* live at the end (each process at its exit or the end) */
	EXPORT_PPROF_LIVE_AT, /* live at at_ns from the start of recording */
};

struct export_pprof_opts {
	enum export_pprof_mode mode;
	uint64_t at_ns; /* EXPORT_PPROF_LIVE_AT: the time, from export_start_ns */
	/* The mode as the user gave it, for the profile's comment ("peak", "1.5s"); NULL: the
	 * mode's own word. */
	const char *at_text;
	struct export_namer names;
	char *err;
	size_t err_len;
};

/* What an export found that the caller may want to say (NULL: not wanted). */
struct export_pprof_result {
	bool approximate; /* a table hit its cap: live allocations or stacks */
};

#define EXPORT_PPROF_LIVE_MAX (1u << 21) /* live allocations kept */
#define EXPORT_PPROF_MAX_NODES (1u << 24) /* distinct stacks */

/* Writes the profile of r to sink, one write of the whole gzip stream at the end (nothing is
 * written when the export fails before). 0 or -errno. */
int export_pprof(struct trcfile_reader *r, const struct export_pprof_opts *o,
		 const struct export_sink *sink, struct export_pprof_result *res);

#endif /* TRC_EXPORT_H */
