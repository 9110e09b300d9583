/* dump_common.h - what the trace-dump subcommands share: buffered output, formatting, options.
 *
 * Purpose: one output path for every subcommand (tools/dump/dump_out.c), so output errors are
 * handled the same way everywhere:
 *   - a closed pipe (EPIPE) ends trace-dump quietly with status 141, the status a shell
 *     shows for a filter killed by SIGPIPE (SIGPIPE itself is ignored so the status does not
 *     depend on what the parent left in the signal mask);
 *   - any other write error (ENOSPC, EIO, ...) prints one line on stderr and exits 1.
 * Output goes through a 64 KiB buffer straight to write(2); numbers are formatted by hand on
 * the hot paths (events, chrome) because printf is most of the time otherwise.
 *
 * Exit statuses of trace-dump: 0 done; 1 the file could not be read (message on stderr) or
 * output failed; 2 usage error; 141 output pipe closed.
 *
 * Threads: trace-dump is single-threaded; the output buffer is a global.
 */
#ifndef TRC_DUMP_COMMON_H
#define TRC_DUMP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cli_bytes.h" /* cli_fmt_bytes: sizes as both commands print them */
#include "cli_outfile.h"
#include "export_merge.h"
#include "trcfile.h"

#define DUMP_EXIT_OK 0
#define DUMP_EXIT_FAIL 1
#define DUMP_EXIT_USAGE 2
#define DUMP_EXIT_PIPE 141

#define DUMP_OUT_BYTES (64u << 10)

struct dump_out {
	int fd;
	uint64_t written; /* bytes written to fd so far (all files) */
	size_t len;
	char buf[DUMP_OUT_BYTES];
};

extern struct dump_out dump_out;

/* Writes the buffer out; on error exits as described above. */
void dump_flush(void);
/* Writes p straight to the output (after dump_flush), same error handling. */
void dump__write_direct(const void *p, size_t n);

static inline void dump_write(const void *p, size_t n)
{
	if (n > DUMP_OUT_BYTES - dump_out.len) {
		dump_flush();
		if (n > DUMP_OUT_BYTES) {
			/* Large writes bypass the buffer. */
			dump__write_direct(p, n);
			return;
		}
	}
	memcpy(dump_out.buf + dump_out.len, p, n);
	dump_out.len += n;
}

static inline void dump_str(const char *s)
{
	dump_write(s, strlen(s));
}

static inline void dump_char(char c)
{
	if (dump_out.len == DUMP_OUT_BYTES)
		dump_flush();
	dump_out.buf[dump_out.len++] = c;
}

/* printf into the output buffer. */
void dump_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void dump_u64(uint64_t v);
void dump_i64(int64_t v);
void dump_hex(uint64_t v); /* 0x... */
/* A signed nanosecond count as seconds with 9 decimals ("1.000000123", "-0.5..."). */
void dump_seconds(int64_t ns);
/* A signed nanosecond count as microseconds with 3 decimals ("1234.567"). */
void dump_micros(int64_t ns);
/* A JSON string literal (quotes included): escapes ", \ and control bytes, and writes bytes
 * that are not valid UTF-8 as \u00XX so strict parsers accept the output. */
void dump_json_str(const char *s, size_t len);
/* A quoted string for the text outputs: C-style escapes for ", \ and non-printable bytes. */
void dump_text_str(const char *s, size_t len);
/* The command line (NUL-separated) as words separated by spaces. */
void dump_cmdline(const char *s, size_t len);

/* Human-readable durations into buf ("1.234 ms"); sizes: cli_fmt_bytes ("12.3 MiB"). */
const char *dump_fmt_ns(char *buf, size_t len, uint64_t ns);

/* The longest time from the start of recording --from and --to accept: the largest whole
 * number of hours a 64-bit nanosecond count holds (about 584 years), so the accepted range
 * reads "0s to 5124095h". */
#define DUMP_TIME_MAX_NS (5124095ull * 3600ull * 1000000000ull)

/* Usage errors of a subcommand (cmd is its name, argv[0]): one line on stderr,
 * "trace-dump CMD: MESSAGE (see trace-dump CMD --help)", and DUMP_EXIT_USAGE returned. */
int dump_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For getopt_long's '?' and ':' (opterr = 0, ':' first in the short options). */
struct option;
int dump_refused_option(const char *cmd, int c, char **argv, const struct option *opts);
/* True, after the message, when getopt_long gave an option "--" as its value. */
bool dump_value_missing(const char *cmd, char **argv);
/* The one FILE operand after the options (argv[optind]), or NULL after the message. */
const char *dump_file_operand(const char *cmd, int argc, char **argv);

/* Opens FILE for a subcommand; on failure prints "trace-dump: FILE: message" and returns
 * NULL. Prints a warning on stderr when the file is truncated (unless quiet). */
struct trcfile_reader *dump_open(const char *path, bool quiet);

/* One line on metadata the reader cut or dropped (stats' meta_* fields): its stderr warning
 * and the summary say the same. Static storage (one thread). */
struct trcfile_reader_stats;
const char *dump_meta_cut_note(const struct trcfile_reader_stats *st);

/* Closes what dump_open opened, first warning on stderr when damaged chunks were skipped while
 * it was read (the reader reads past them). Accepts NULL. */
void dump_close(struct trcfile_reader *r, const char *path);
/* Closes r with no warning (a command that failed on it), and frees what naming its functions
 * kept (dump_func_names_release): every reader of trace-dump is closed by one of the two.
 * Accepts NULL. */
void dump_reader_free(struct trcfile_reader *r);

/* The time every relative time of the outputs counts from: the header's start of recording,
 * or the first record when that is missing or later. */
uint64_t dump_start_ns(const struct trcfile_reader *r);
/* The anchor of r (start_realtime_ns - start_mono_ns, from its header: the file's word) and
 * its start on CLOCK_REALTIME, checked: 0, or -ERANGE unless the anchor fits an int64 and the
 * start and the last chunk's time on CLOCK_REALTIME lie in [0, INT64_MAX] (tools/dump/dump_multi.c).
 * Then every sum with the anchor fits for the records the index describes. */
int dump_anchor(const struct trcfile_reader *r, int64_t *anchor, int64_t *start_rt);
/* ts on CLOCK_REALTIME under anchor, saturated at INT64_MAX: a record past its chunk's stated
 * times may still lie beyond the range dump_anchor checked. */
int64_t dump_realtime(uint64_t ts, int64_t anchor);

/* Prints "trace-dump: ..." on stderr (file and output errors; not usage errors). */
void dump_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The name of function address addr of pid into buf (NUL-terminated, cut to len - 1): the
 * function's name from the module's symbols (demangled), else module+offset ("prog+0x2136"),
 * else "0xADDR" without a module record (tools/dump/dump_symbols.c). Returns the name's length.
 * The first call for a reader reads its modules' symbols (warnings on stderr, once). */
size_t dump_func_name(const struct trcfile_reader *r, uint32_t pid, uint64_t addr, char *buf,
		      size_t len);
/* Frees what dump_func_name keeps for r: call before closing r (dump_close and
 * dump_reader_free do). */
void dump_func_names_release(const struct trcfile_reader *r);

/* The exporters' output files (-o OUT, --split-size SIZE; tools/dump/dump_outfile.c). With split 0
 * OUT is written as is ("-": standard output); with a split size the files are OUT numbered
 * before its extension (trace.pftrace -> trace-001.pftrace, trace-002.pftrace...). */
struct dump_outfile {
	const char *base;
	uint64_t split; /* 0: one file */
	unsigned n; /* files opened so far */
	uint64_t start; /* dump_out.written + len when the current file was opened */
	char name[4096];
	struct cli_outfile file; /* the current file, written beside its name (cli_outfile.h) */
};
/* Flushes what is buffered, closes the current file (if any) and opens the next one as the
 * output. 0, or DUMP_EXIT_FAIL after the message. */
int dump_outfile_next(struct dump_outfile *o);
/* Flushes and closes the current file, which takes its name only now (a file written beside
 * it until then, see cli_outfile.h); standard output is the output again. 0 or DUMP_EXIT_FAIL
 * after the message. */
int dump_outfile_close(struct dump_outfile *o);
/* After a failure: drops the current file whole when it can be (written beside its name: the
 * name keeps what it had) and returns true; false, doing nothing, for standard output or a
 * file written in place (a device, a FIFO, a file of several links), which the caller cuts
 * back or closes itself. */
bool dump_outfile_discard(struct dump_outfile *o);
/* The exporters' slicing options (--from, --to, --split-size), parsed the same way for every
 * exporter. from/to are times from the start of recording; the text as typed is kept for
 * messages (NULL: not given). */
struct dump_slice {
	const char *from_arg, *to_arg;
	uint64_t from, to; /* to: UINT64_MAX when not given */
};
#define DUMP_MIN_SPLIT_BYTES (1u << 20)
/* Takes option opt ('f' --from, 'T' --to, 'S' --split-size into o->split) with its value arg.
 * Returns 0 when taken, DUMP_EXIT_USAGE after the message for a bad value, -1 when opt is
 * not a slicing option. */
int dump_slice_option(const char *cmd, int opt, const char *arg, struct dump_slice *sl,
		      struct dump_outfile *o);
/* After the options: a reversed range is a usage error. 0 or DUMP_EXIT_USAGE. */
int dump_slice_check(const char *cmd, const struct dump_slice *sl);

/* ---- several traces at once (dump_multi.c) ---------------------------------------------- */

/* Several FILEs in one chrome or perfetto output: trace i's pids (and perfetto's tids) are
 * shown as pid + export_pid_offset(i, n) (src/export/export_spans.h). */

/* One input of a command that takes several FILEs. */
struct dump_trace {
	struct trcfile_reader *r;
	const char *path;
	const char *host; /* the header's host string; its first host_len bytes: the node name */
	size_t host_len;
	const char *trace; /* the FILE's base name: the trace's label */
	int64_t anchor; /* start_realtime_ns - start_mono_ns: ts_ns + anchor is CLOCK_REALTIME */
};

struct dump_traces {
	struct dump_trace *t;
	unsigned n;
	int64_t start_rt; /* the earliest start of recording on CLOCK_REALTIME */
	int failed; /* the file of the last error */
	struct export_merge merge; /* src/export/export_merge.h, from dump_traces_start */
};

/* Opens the n FILEs (messages printed): DUMP_EXIT_OK or DUMP_EXIT_FAIL (all closed then). */
int dump_traces_open(struct dump_traces *m, char *const *paths, unsigned n);
/* Makes each file's merged iterator, over the streams include[i] selects (include or
 * include[i] NULL: all). DUMP_EXIT_OK or DUMP_EXIT_FAIL (message printed). */
int dump_traces_start(struct dump_traces *m, bool *const *include);
/* The next record of all files in CLOCK_REALTIME order (ties: the file given first): 1 with
 * *rec, *trace (file index) and *sidx (stream index in that file) filled, 0 at the end,
 * -errno (message in m->t[m->failed].r). *rec stays valid until the next call. */
int dump_traces_next(struct dump_traces *m, struct trc_record *rec, unsigned *trace,
		     unsigned *sidx);
/* The "start" of file i for relative times: ts_ns - dump_trace_start(m, i) is the time since
 * the earliest start of all files, on CLOCK_REALTIME (negative values wrap: cast to int64). */
uint64_t dump_trace_start(const struct dump_traces *m, unsigned i);
void dump_traces_close(struct dump_traces *m);

/* Subcommands: argv[0] is the subcommand name. Return the exit status. */
int dump_summary_main(int argc, char **argv);
int dump_events_main(int argc, char **argv);
int dump_rss_main(int argc, char **argv);
int dump_chrome_main(int argc, char **argv);
int dump_flame_main(int argc, char **argv);
int dump_memory_main(int argc, char **argv);
int dump_parquet_main(int argc, char **argv);
int dump_perfetto_main(int argc, char **argv);
int dump_pprof_main(int argc, char **argv);
int dump_compact_main(int argc, char **argv);
int dump_check_main(int argc, char **argv);
int dump_diff_main(int argc, char **argv);
int dump_report_main(int argc, char **argv);

#endif /* TRC_DUMP_COMMON_H */
