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
struct export_text;

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
	/* The namer may print (a module's warning, once) and cannot reach the export's buffer:
	 * a text export hands what it has made to the sink before each call, so that output
	 * comes first (a sink write of a few bytes a name). A caller that gives the export its
	 * buffer (export_chrome_opts.text) flushes it itself when it prints instead. */
	bool flush_first;
};

/* Without symbols: "module+0xOFFSET" when a module record covers addr, else "0xADDR". */
size_t export_func_name_plain(const struct trcfile_reader *r, uint32_t pid, uint64_t addr,
			      char *buf, size_t len);

/* The time every relative time of the outputs counts from: the header's start of recording,
 * or the first record when that is missing or later. */
uint64_t export_start_ns(const struct trcfile_reader *r);

/* The anchor of r (start_realtime_ns - start_mono_ns, from its header: the file's word) and
 * its start on CLOCK_REALTIME, checked: 0, or -ERANGE unless the anchor fits an int64 and the
 * start and the last chunk's time on CLOCK_REALTIME lie in [0, INT64_MAX]. Then every sum
 * with the anchor fits for the records the index describes, and so does the difference of
 * two files' starts. */
int export_anchor(const struct trcfile_reader *r, int64_t *anchor, int64_t *start_rt);
/* ts on CLOCK_REALTIME under anchor, saturated at INT64_MAX: a record past its chunk's
 * stated times may still lie beyond the range export_anchor checked. */
int64_t export_realtime(uint64_t ts, int64_t anchor);

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

/* ---- parquet: tables for query engines, export_parquet.c (schema: PARQUET.md) ----------- */

enum export_parquet_table {
	EXPORT_PQ_SPANS,
	EXPORT_PQ_EVENTS,
	EXPORT_PQ_ALLOCS,
	EXPORT_PQ_RSS,
	EXPORT_PQ_TRACES,
	EXPORT_PQ_PROCESSES,
	EXPORT_PQ_STACKS,
	EXPORT_PQ_N_TABLES
};

/* The tables' names, in enum order: "spans", "events", "allocations", "rss", "traces",
 * "processes" (trace-dump names the files NAME.parquet). */
extern const char *const export_parquet_tables[EXPORT_PQ_N_TABLES];

struct export_parquet_opts {
	uint32_t rows_per_group; /* 0: the writer's default (131072) */
	const char *created_by; /* the files' created_by; NULL: the writer's */
	struct export_namer names;
	char *err;
	size_t err_len;
};

struct export_parquet;

/* The six tables' writers, table t's bytes to sinks[t] (each begins with its magic here).
 * NULL with *err (-errno) and *table, the table that failed. */
struct export_parquet *export_parquet_open(const struct export_parquet_opts *o,
					   const struct export_sink sinks[EXPORT_PQ_N_TABLES],
					   int *err, unsigned *table);
/* Adds r's rows to every table. path is the FILE as given: its base name labels the rows
 * (column trace), traces.path holds it whole. 0 or -errno (after an error the tables are not
 * to be used: close them and drop what they wrote). */
int export_parquet_add(struct export_parquet *x, struct trcfile_reader *r, const char *path);
/* Writes the tables' last row groups and footers and frees x: 0, or the first table's error
 * (-errno, its index in *table when table is not NULL). Accepts NULL. */
int export_parquet_close(struct export_parquet *x, unsigned *table);
/* open, add each of the n readers (paths[i] its FILE), close: 0 or -errno. */
int export_parquet(struct trcfile_reader *const *r, const char *const *paths, unsigned n,
		   const struct export_parquet_opts *o,
		   const struct export_sink sinks[EXPORT_PQ_N_TABLES]);

/* One trace of an export: its reader and the FILE it came from (its base name labels it when
 * several traces share an output). */
struct export_input {
	struct trcfile_reader *r;
	const char *path;
};

/* ---- perfetto: Perfetto's protobuf trace, export_perfetto.c ------------------------------ */

struct export_perfetto_opts {
	/* One trace only: the records from from_ns to to_ns (both included, counted from
	 * export_start_ns); has_from: from_ns given (the reader seeks there, the trace begins
	 * there). to_ns UINT64_MAX: to the end. */
	bool has_from;
	uint64_t from_ns, to_ns;
	/* One trace only: with split_bytes, once a file holds that many bytes the export ends
	 * it at a record boundary (open slices end, flagged split), calls split(split_ctx) (the
	 * caller makes the sink write to the next file: 0, or -errno to stop), and begins the
	 * next file as a whole trace (open slices begin again, flagged continued). */
	uint64_t split_bytes;
	int (*split)(void *ctx);
	void *split_ctx;
	struct export_namer names;
	char *err;
	size_t err_len;
};

struct export_perfetto_result {
	uint64_t too_deep; /* span or function begins left out past EXPORT_PERFETTO_MAX_DEPTH */
	int failed_input; /* the trace a read error came from (in's index); -1: none */
	bool split_failed; /* the error is split's own */
	bool flushed; /* every byte made was handed to the sink (a read error's too) */
};

#define EXPORT_PERFETTO_MAX_DEPTH (1u << 16) /* open slices kept per thread */

/* Writes the n traces of in to sink as one Perfetto trace: one trace on CLOCK_MONOTONIC,
 * several merged on CLOCK_REALTIME, trace i's pids and tids shown as id +
 * export_pid_offset(i, n). 0 or -errno: a read error (res->failed_input names the trace,
 * what was made is handed to the sink first), the sink's or split's error, -ENOMEM,
 * -EINVAL for options that do not fit. */
int export_perfetto(const struct export_input *in, unsigned n,
		    const struct export_perfetto_opts *o, const struct export_sink *sink,
		    struct export_perfetto_result *res);

/* ---- chrome: Chrome Trace Event JSON, export_chrome.c ------------------------------------- */

struct export_chrome_opts {
	/* One trace only, as export_perfetto_opts: the range, and the split of the output into
	 * files of split_bytes (open spans end there, args.split, and begin again in the next
	 * file, args.continued). */
	bool has_from;
	uint64_t from_ns, to_ns;
	uint64_t split_bytes;
	int (*split)(void *ctx);
	void *split_ctx;
	/* A read failure half-way: taken_back(ctx) says whether the caller drops or cuts back
	 * what this document wrote (then the rest is not handed over); when it cannot (NULL, or
	 * false: a pipe), the document is closed after the last whole event with otherData
	 * {incomplete, error}. */
	bool (*taken_back)(void *ctx);
	void *taken_back_ctx;
	/* Tests: fail as a damaged chunk would after fail_after records (0: never), with
	 * fail_msg as the reason. */
	uint64_t fail_after;
	const char *fail_msg;
	struct export_namer names;
	/* The buffer the document is made in (export_text.h): NULL, the export's own; given, the
	 * caller's, which can flush it (export_text_flush) before it prints. */
	struct export_text *text;
	char *err;
	size_t err_len;
};

struct export_chrome_result {
	int failed_input; /* the trace the failure came from (in's index); -1: none */
	bool split_failed; /* the error is split's own */
};

/* Writes the n traces of in to sink as one JSON document: one trace's times from its start
 * of recording, several merged on CLOCK_REALTIME, trace i's pids shown as pid +
 * export_pid_offset(i, n). 0 or -errno: a read error (res->failed_input), the sink's or
 * split's, -ENOMEM, -EINVAL for options that do not fit. */
int export_chrome(const struct export_input *in, unsigned n, const struct export_chrome_opts *o,
		  const struct export_sink *sink, struct export_chrome_result *res);

#endif /* TRC_EXPORT_H */
