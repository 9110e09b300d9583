/* trcfile.h - the trace file: writer (with its compression pipeline), reader, merge.
 * The writer's API is declared here for every caller (the recorder's drain, compaction,
 * tests); the format's side of it is trcfile_out.h, its pipeline (threads, pool, queues) the
 * recorder's: src/recorder/chunk_pipeline_priv.h.
 *
 * Purpose: everything that touches a .trc file. The on-disk format is specified in
 * src/trcfile/FORMAT.md; this header is the in-memory API. Records are `struct trc_record`
 * (record.h) in both directions.
 *
 * Writer: a header, then self-contained chunks (one stream's records, delta timestamps and
 * varints, one zstd frame with its content checksum), then a footer with an index and a fixed
 * trailer that locates it. Appending threads only encode; full chunks go through a liburcu
 * wfcqueue to compressor threads (one reused ZSTD_CCtx each), then through a second queue to
 * one writer thread that writes them in completion order. At most max_chunks_in_flight chunks
 * are queued or being compressed/written: an append that fills a chunk beyond that blocks
 * until the writer catches up (back-pressure keeps memory bounded), unless the writer stores
 * it instead (TRCFILE_WRITER_STORE_WHEN_BEHIND: straight to the writer thread, uncompressed,
 * FORMAT.md "Stored chunks"; trcfile_compact compresses such chunks later).
 *
 * Writer concurrency (W = the writer handle, S = a stream handle):
 *
 *   operation                    thread          may run concurrently with          blocks
 *   trcfile_writer_open          any             nothing on W                       I/O
 *   trcfile_stream_open          any             anything on W but writer_close     no
 *   trcfile_stream_append        one per S       appends/flushes on other streams   when full
 *   trcfile_stream_flush         one per S       appends/flushes on other streams   when full
 *   trcfile_stream_end           one per S       anything on W but writer_close     when full
 *   trcfile_writer_error         any             anything                           no
 *   trcfile_writer_bytes_written any             anything                           no
 *   trcfile_writer_close         any             nothing on W or any of its S       yes
 *
 * Reader: plain single-threaded objects. A reader, and the iterators made from it, belong to
 * one thread at a time; two readers of the same file are independent. Memory stays bounded by
 * (number of streams) x (largest chunk), plus the chunk index and the metadata tables (names,
 * threads, processes, modules), never by the number of records.
 *
 * Errors: actions return 0 or -errno; constructors return a pointer or NULL; destructors
 * accept NULL. The reader keeps a human-readable message of its last error
 * (trcfile_reader_errmsg), which trace-dump prints as is.
 *
 * Where records go: NAME, THREAD, PROCESS and MODULE records belong in a META stream. The
 * reader loads the META streams' metadata at open so names resolve before any event that uses
 * them is read. (Records of any type may appear in any stream; iteration returns everything.)
 */
#ifndef TRC_TRCFILE_H
#define TRC_TRCFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* ---- format constants (details in FORMAT.md) ---------------------------------------------- */

#define TRCFILE_VERSION_MAJOR 1
#define TRCFILE_VERSION_MINOR 4 /* 1.1: stored chunks; 1.2: module build-ids; 1.3: exit
				 * flags, the when-full policy, wait records; 1.4: allocation
				 * stacks */

/* What a thread whose ring was full did (trace-run --when-full): the header's flags, bits 0-1
 * (1.3; FORMAT.md "Header"). */
#define TRCFILE_WHEN_FULL_UNKNOWN 0u /* not recorded (files before 1.3) */
#define TRCFILE_WHEN_FULL_WAIT 1u /* waited for the drain (WAIT records say how long) */
#define TRCFILE_WHEN_FULL_DROP 2u /* dropped the event at once (LOST records count them) */
#define TRCFILE_HDR_WHEN_FULL_MASK 3u

/* Largest string (name, thread name, command line, path, note) a record may carry. */
#define TRCFILE_MAX_STRING_BYTES (4u << 20)
/* Chunk size bounds (raw, before compression). A chunk holding one record larger than the
 * chunk size may exceed it by at most TRCFILE_MAX_RECORD_BYTES. */
#define TRCFILE_MIN_CHUNK_BYTES (4u << 10)
#define TRCFILE_MAX_CHUNK_BYTES (16u << 20)
#define TRCFILE_DEFAULT_CHUNK_BYTES (1u << 20)
#define TRCFILE_MAX_RECORD_BYTES (TRCFILE_MAX_STRING_BYTES + 256u)

/* What the recorder knows at start; written in the file header. Strings are copied. */
struct trcfile_header_info {
	const char *cmdline;
	uint32_t cmdline_len; /* argv joined by NUL bytes */
	uint32_t pid; /* the traced program's pid */
	uint64_t start_mono_ns, start_realtime_ns;
	uint32_t clock_source; /* TRC_CLOCK_* (TSC ticks were converted to ns) */
	uint64_t tsc_hz; /* 0 when not TSC */
	uint64_t rss_interval_ns;
	uint32_t rss_source; /* enum trc_rss_source; 0 interval = sampling off */
	uint64_t buffer_bytes; /* per-thread ring size */
	uint32_t when_full; /* TRCFILE_WHEN_FULL_* */
	/* What the preload library captured of allocations' call stacks (TRCFILE_ALLOC_STACKS_*,
	 * 0 not said), its depth cap, and for SAMPLED the mean bytes between samples. */
	uint32_t alloc_stacks, stack_depth;
	uint64_t sample_bytes;
	const char *host; /* uname nodename + sysname/release; NULL = "" */
	const char *tool_version; /* NULL = "" */
};

/* How allocations' call stacks were captured (the header's allocation stacks part, 1.4). */
#define TRCFILE_ALLOC_STACKS_NONE 1u    /* none */
#define TRCFILE_ALLOC_STACKS_ALL 2u     /* every allocation's */
#define TRCFILE_ALLOC_STACKS_SAMPLED 3u /* Poisson sampling of bytes: sample_bytes apart */

/* Bits of trcfile_writer_opts.flags. */
#define TRCFILE_WRITER_NO_FSYNC (1u << 0) /* skip the fsync at close (tests, benchmarks) */
/* Run the compressor and writer threads in the background (nice +10): on a machine with few
 * cores the appending thread (the recorder's drain) is the one whose latency decides whether
 * rings overflow, while compression only has to keep up on
 * average (the in-flight bound gives back-pressure). On a saturated machine the background
 * threads get less CPU, the pipeline fills, and the drain waits: rings then drop (counted).
 * With TRCFILE_WRITER_STORE_WHEN_BEHIND as well, the writer thread keeps its priority (the
 * drain waits for it) and the compressors run in the idle class (src/recorder/chunk_idle.h):
 * what they cannot take is stored. */
#define TRCFILE_WRITER_BACKGROUND (1u << 1)
/* Fault in the chunk buffers and the compressors' work space, so the first seconds of appending
 * do not pay a page fault per 4 KiB (microseconds each: with 1 MiB chunks, milliseconds per
 * fresh chunk, enough for a busy thread's ring to overflow). The writer's own threads do
 * it as they start, not open, which the program's start waits for; a close that comes first
 * stops it. Costs the recorder about (max_chunks_in_flight + 3) x chunk_bytes of resident
 * memory (the chunks' raw buffers, which appends write; their compressed copies are made but
 * not touched), plus each compressor's zstd work space. */
#define TRCFILE_WRITER_PREFAULT (1u << 2)

/* Compression never holds the appending thread back: when every compression slot is taken
 * (the compressors are behind), a full chunk is written stored instead (FORMAT.md "Stored
 * chunks": encoded, checksummed, indexed, not compressed), by the writer thread, at the cost of
 * a CRC and the write. Stored chunks in flight have their own bound (max_chunks_in_flight
 * again): when the disk is behind too, appends block, as without the flag.
 * trcfile_compact compresses them later. */
#define TRCFILE_WRITER_STORE_WHEN_BEHIND (1u << 3)
/* Close skips its fsync when a chunk was stored: the caller is about to compact the file into a
 * new one, which trcfile_compact syncs before it replaces this one, so syncing this one first
 * would only wait for the disk (17-45 ms here for the ~60 MiB a call-heavy program's 24 M events
 * leave stored). A caller that then does not compact (or fails to) syncs the file itself. */
#define TRCFILE_WRITER_NO_FSYNC_IF_STORED (1u << 4)
/* A live recording: a full disk (ENOSPC, or EFBIG at the file size limit) does not end it.
 * The chunk that does not fit is written compressed if it was to be stored; when that does not
 * fit either, it and every chunk after it are dropped, their events counted per stream, and
 * appends go on succeeding (the caller keeps draining). Close then writes, for each stream that
 * lost events, a chunk with one lost record (reason TRC_LOST_DISK_FULL, at the first dropped
 * chunk's place: FORMAT.md), a note saying the disk filled, and the footer, cutting the
 * last whole chunks off (and counting them lost too) until those fit. Also, while the room
 * left (free space, the file size limit) is short, nothing is stored: stored chunks take
 * about three times the room of compressed ones, and would fill the disk that much sooner.
 * Without the flag a full disk is the sticky error, as any write error. */
#define TRCFILE_WRITER_LOSE_WHEN_FULL (1u << 5)

/* Zero fields take the defaults: zstd level 1, 1 compressor thread, 1 MiB chunks,
 * 2 x compress_threads + 2 chunks in flight. chunk_bytes is clamped to
 * [TRCFILE_MIN_CHUNK_BYTES, TRCFILE_MAX_CHUNK_BYTES]. */
struct trcfile_writer_opts {
	int zstd_level;
	unsigned compress_threads;
	uint32_t chunk_bytes;
	unsigned max_chunks_in_flight;
	uint32_t flags; /* TRCFILE_WRITER_* */
	/* Tests and benchmarks: store every n-th chunk submitted (1 = all), whatever the
	 * compressors' state; 0 = never. */
	unsigned store_one_in;
};

struct trcfile_writer;
struct trcfile_stream;

/* Creates (truncates) the file, writes the header and starts the pipeline threads. Returns the
 * writer, or NULL with *err = -errno (-EINVAL for bad info, e.g. a string over
 * TRCFILE_MAX_STRING_BYTES). Any thread. */
struct trcfile_writer *trcfile_writer_open(const char *path, const struct trcfile_header_info *h,
					   const struct trcfile_writer_opts *o, int *err);

/* The same on a file descriptor open for writing at offset 0; the writer owns fd afterwards
 * (closes it in trcfile_writer_close, also on failure here). */
struct trcfile_writer *trcfile_writer_open_fd(int fd, const struct trcfile_header_info *h,
					      const struct trcfile_writer_opts *o, int *err);

/* A new stream (one thread, the RSS series, or metadata); ids are given in call order from 0.
 * Any thread, not concurrently with trcfile_writer_close. NULL on out of memory (or after
 * close started). The writer owns the stream: trcfile_writer_close frees it. */
struct trcfile_stream *trcfile_stream_open(struct trcfile_writer *w, enum trc_stream_kind k,
					   uint32_t pid, uint32_t tid);

/* The stream's id in the file (its index in the reader's stream list when no stream is empty). */
uint32_t trcfile_stream_id(const struct trcfile_stream *s);

/* Appends one record. Only one thread at a time per stream (the drain thread); different
 * streams may be appended from different threads. Encodes into the stream's open chunk; a full
 * chunk goes to the compression threads (blocks only when max_chunks_in_flight are queued).
 * Timestamps should not decrease within a stream (they may; the merge then is only as ordered
 * as the stream). Returns 0, -EINVAL (bad type, string too long: the record is not written) or
 * the writer's sticky error (-ENOSPC, -EIO, ...). */
int trcfile_stream_append(struct trcfile_stream *s, const struct trc_record *r);

/* The fused append (the recorder's drain at memory speed): the caller encodes event records
 * (types SPAN_BEGIN..FUNC_EXIT, FORMAT.md "Records") straight into the stream's open chunk,
 * with no struct trc_record in between. A window is the free part of the open chunk and the
 * chunk's coder state, lent to the caller:
 *   trcfile_stream_window_open(s, ts, &win)   ts = the first record's time (it starts the
 *                                              chunk's deltas when a new chunk is opened)
 *   while (win.p < win.limit) { encode one event at win.p (at most TRCFILE_WINDOW_EVENT_MAX
 *                               bytes), advance win.p, win.count++, update win.ts/addrs }
 *   trcfile_stream_window_close(s, &win)       commits; submits the chunk once it is full
 * Chunk boundaries are the same as trcfile_stream_append's for the same records, so both give
 * the same bytes. Between open and close nothing else may touch the stream (same thread rule
 * as append; other streams may be appended meanwhile). */
#define TRCFILE_WINDOW_EVENT_MAX 40u /* type byte, three varints of at most 10 bytes, a stack id */
struct trcfile_window {
	uint8_t *p; /* next byte to write */
	uint8_t *limit; /* the chunk is full once p reaches it; p + TRCFILE_WINDOW_EVENT_MAX
			 * bytes are writable whenever p < limit */
	uint32_t count; /* records written into the window */
	uint64_t ts; /* coder: the previous record's ts (the chunk's first_ts at its start) */
	uint64_t alloc_addr, func_addr; /* coder: the address predictors (FORMAT.md) */
};

/* Lends the open chunk (opening one, first_ts = ts, when there is none). Returns 0 or the
 * writer's sticky error / -ENOMEM. Blocks only as append does (never: a full chunk was
 * submitted at the close that filled it). */
int trcfile_stream_window_open(struct trcfile_stream *s, uint64_t ts, struct trcfile_window *win);

/* Takes the window back: its records join the chunk, and a full chunk goes to the compressors
 * (blocks when max_chunks_in_flight are queued, as append does). Returns 0 or the sticky
 * error. */
int trcfile_stream_window_close(struct trcfile_stream *s, struct trcfile_window *win);

/* Ends the stream's open chunk now (e.g. a thread exited); the stream may still be appended.
 * Same thread rule as append. Returns 0 or the sticky error. */
int trcfile_stream_flush(struct trcfile_stream *s);
/* Ends the stream for good: submits its open chunk, keeps its footer entry out of memory
 * (trcfile_out.h: the stream spill) and frees it; s is gone (whatever the return). For streams of threads
 * that exited: the writer's memory then does not grow with the threads ever traced. Same
 * thread rule as append. Returns 0 or the sticky error. */
int trcfile_stream_end(struct trcfile_stream *s);

/* Flushes every stream, waits for the pipeline, writes the footer (index) and trailer, fsyncs
 * (unless TRCFILE_WRITER_NO_FSYNC), closes the file, frees everything (streams included).
 * Returns 0 or the first error. Accepts NULL. After a write error the chunks already written
 * stay readable (the reader reports the file as truncated if the footer could not be
 * written). */
int trcfile_writer_close(struct trcfile_writer *w);

/* trcfile_writer_close, and the writer's final figures in *st (may be NULL). */
struct trcfile_writer_stats {
	uint64_t bytes_written; /* the whole file */
	uint64_t chunks_stored; /* chunks the file holds stored */
	/* TRCFILE_WRITER_LOSE_WHEN_FULL: 0, or the -errno of the write that found the disk full
	 * (-ENOSPC, -EFBIG); then the events counted lost for it (the file's disk-full lost
	 * records: events not written, and the counts of the lost records that went with them),
	 * of them the events appended but not written, and every record not written (events,
	 * samples, metadata). */
	int full_err;
	uint64_t full_lost_events, full_events_unwritten, full_records_unwritten;
};
int trcfile_writer_close_stats(struct trcfile_writer *w, struct trcfile_writer_stats *st);

/* fsync of the trace at path, as close does it: for a trace that close left unsynced
 * (TRCFILE_WRITER_NO_FSYNC_IF_STORED) and that stays as it is. 0 or -errno; a file that cannot
 * be synced (EINVAL, EROFS) is no error. Any thread. */
int trcfile_sync_path(const char *path);

/* The sticky error: 0 or the first -errno of the pipeline. Any thread. */
int trcfile_writer_error(const struct trcfile_writer *w);

/* Bytes written to the file so far (header and chunks). Any thread, relaxed. */
uint64_t trcfile_writer_bytes_written(const struct trcfile_writer *w);

/* Chunks sent to the file stored so far (TRCFILE_WRITER_STORE_WHEN_BEHIND, store_one_in).
 * Any thread, relaxed. trcfile_writer_close stores no chunk because of the compressors (it waits
 * for them); trcfile_writer_close_stats gives the final count. */
uint64_t trcfile_writer_chunks_stored(const struct trcfile_writer *w);

/* Compresses a trace: writes out_path with the records of in_path, every chunk compressed
 * (stored chunks compressed now; compressed ones copied as they are), the same streams,
 * sequence numbers and header (o: compression level and threads; its chunk size is ignored).
 * A file without a footer (a recorder killed) gets one: everything the reader recovers is
 * kept. progress (may be NULL) is called after each chunk with chunks done and total. Returns
 * 0, or -errno with a message in msg. Blocks; starts o->compress_threads threads.
 * Memory: fixed (a few chunks and the compressors') for a file whose footer it can walk,
 * which every file a writer closed has (trcfile_compact.c: it streams the index); in
 * proportion to the chunks for any other (it loads the index, as the reader does). */
int trcfile_compact(const char *in_path, const char *out_path, const struct trcfile_writer_opts *o,
		    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
		    uint64_t *stored_in, char *msg, size_t msg_len);

/* ---- reader ---------------------------------------------------------------------------- */

struct trcfile_reader;

/* The decoded file header. Strings are NUL-terminated copies owned by the reader (cmdline
 * keeps its NUL separators, cmdline_len says where it ends). */
struct trcfile_header {
	uint16_t version_major, version_minor;
	uint32_t pid;
	uint64_t start_mono_ns, start_realtime_ns;
	uint32_t clock_source;
	uint64_t tsc_hz;
	uint64_t rss_interval_ns;
	uint32_t rss_source;
	uint64_t buffer_bytes;
	uint32_t when_full; /* TRCFILE_WHEN_FULL_*; UNKNOWN in files before 1.3 */
	uint32_t chunk_bytes; /* the writer's chunk size */
	/* as trcfile_header_info's (format 1.4; 0 in older files: not said) */
	uint32_t alloc_stacks, stack_depth;
	uint64_t sample_bytes;
	const char *cmdline;
	uint32_t cmdline_len;
	const char *host;
	const char *tool_version;
};

/* One stream as the index describes it. Streams are listed in increasing id order; a stream's
 * index in that list is what iterators report. */
struct trcfile_stream_info {
	uint32_t id;
	uint32_t kind; /* enum trc_stream_kind */
	uint32_t pid, tid;
	uint64_t records; /* sum of its chunks' record counts */
	uint32_t chunks;
	uint64_t first_ts_ns, last_ts_ns; /* of its first and last chunk; 0 when no chunk */
	uint64_t max_chunk_raw_bytes; /* buffer one cursor over it needs */
};

/* What was read and what was not. */
struct trcfile_reader_stats {
	uint64_t file_bytes;
	uint64_t chunks;
	uint64_t records;
	uint64_t bytes_recovered; /* header + whole chunks found */
	uint64_t bytes_ignored; /* after the last whole chunk when truncated */
	uint64_t chunks_missing; /* sequence numbers absent before a stream's last chunk
				  * (chunks lost in the middle, e.g. a write error while
				  * later ones were already on disk) */
	uint64_t chunks_damaged; /* chunks found damaged when read (checksum, header): skipped,
				  * the rest of the stream read on (so far: grows as chunks are
				  * read) */
	/* Metadata beyond the reader's bounds (64 MiB of strings, 2^20 entries a table): a
	 * legitimate trace of very many processes or threads reads on, their strings cut. */
	uint64_t meta_strings_cut; /* names, thread names, command lines, paths cut (to "") */
	uint64_t meta_bytes_cut; /* the bytes those lost */
	uint64_t meta_entries_dropped; /* definitions not kept (table full), e.g. modules */
	bool truncated; /* no (valid) footer: read up to the last whole chunk */
	bool footer_damaged; /* a footer was there but failed its checks (then scanned) */
};

/* Opens a trace. On failure returns -errno (-EBADMSG bad or damaged file, -EPROTONOSUPPORT
 * newer major version, -ENOENT, -ENOMEM, ...) with a one-line message in msg (which may be
 * NULL). Reads the header, the index (footer, or a scan of the chunk headers when the footer
 * is missing or damaged) and the metadata of the META streams. */
int trcfile_reader_open(const char *path, struct trcfile_reader **out, char *msg, size_t msg_len);
/* The same on an open fd (not taken over: the caller closes it after trcfile_reader_close). */
int trcfile_reader_open_fd(int fd, struct trcfile_reader **out, char *msg, size_t msg_len);
/* The same on a buffer that must outlive the reader (fuzzing, tests). */
int trcfile_reader_open_mem(const void *buf, size_t len, struct trcfile_reader **out, char *msg,
			    size_t msg_len);
void trcfile_reader_close(struct trcfile_reader *r);

const struct trcfile_header *trcfile_reader_header(const struct trcfile_reader *r);
void trcfile_reader_get_stats(const struct trcfile_reader *r, struct trcfile_reader_stats *st);
bool trcfile_reader_truncated(const struct trcfile_reader *r);
/* Message of the last error of the reader or of an iterator over it ("" if none). */
const char *trcfile_reader_errmsg(const struct trcfile_reader *r);
/* The smallest and the largest time any chunk of r says it holds (each chunk's first and last
 * record's, either order); *lo > *hi (UINT64_MAX, 0) when r has no chunk. */
void trcfile_reader_time_span(const struct trcfile_reader *r, uint64_t *lo, uint64_t *hi);
/* Why the first damaged chunk was skipped ("" if none was). */
const char *trcfile_reader_damage_note(const struct trcfile_reader *r);
/* When the file was read by a scan of its chunks (truncated: no valid footer), what the scan
 * stopped at: "end of file", or the first thing that is not a whole chunk and where ("zstd
 * frame without content checksum at offset 4242"). "" when the footer was used. */
const char *trcfile_reader_scan_stop(const struct trcfile_reader *r);

unsigned trcfile_reader_stream_count(const struct trcfile_reader *r);
/* NULL when idx is out of range. */
const struct trcfile_stream_info *trcfile_reader_stream(const struct trcfile_reader *r,
							unsigned idx);

/* Metadata lookups (from the META streams only: records elsewhere, e.g. THREAD records at
 * the start of a thread's stream, are seen by iteration, and the summary takes them from any
 * stream). Strings are owned by the reader, NUL-terminated (len excludes the NUL); NULL when
 * unknown. When an id or thread was defined twice the last definition in time wins. */
const char *trcfile_reader_name(const struct trcfile_reader *r, uint32_t id, uint32_t *len);
const char *trcfile_reader_thread_name(const struct trcfile_reader *r, uint32_t pid, uint32_t tid,
				       uint32_t *len);
const char *trcfile_reader_process_cmdline(const struct trcfile_reader *r, uint32_t pid,
					   uint32_t *len);
/* The module mapping addr of pid, or NULL. */
struct trcfile_module {
	uint32_t pid;
	uint64_t start, end, offset;
	const char *path;
	uint32_t path_len;
	uint32_t build_id_len; /* 0: not recorded (a format 1.0 file, or the file had none) */
	uint8_t build_id[TRC_BUILD_ID_MAX];
};
const struct trcfile_module *trcfile_reader_module(const struct trcfile_reader *r, uint32_t pid,
						   uint64_t addr);
/* Every module, by pid then start address: *first and the count. */
size_t trcfile_reader_modules(const struct trcfile_reader *r, const struct trcfile_module **first);
/* The modules of pid, by start address: *first and the count (0: none). */
size_t trcfile_reader_modules_of(const struct trcfile_reader *r, uint32_t pid,
				 const struct trcfile_module **first);

/* The call stack of id (an ALLOC record's stack_id): its frames, innermost first, return
 * addresses (FORMAT.md "stack"), with *n of them and *flags (TRC_STACK_*, may be NULL); NULL
 * and *n = 0 when the trace does not define id. Owned by the reader. */
const uint64_t *trcfile_reader_stack(const struct trcfile_reader *r, uint32_t id, uint32_t *n,
				     uint32_t *flags);
/* How many stacks the trace defines. */
size_t trcfile_reader_stack_count(const struct trcfile_reader *r);

/* ---- iteration ------------------------------------------------------------------------- */

/* Record strings (names, notes...) returned by the iterators point into the iterator's chunk
 * buffers: valid until the next call on that iterator. */

/* One stream, in stream order, fast (no heap). */
struct trcfile_cursor;
struct trcfile_cursor *trcfile_cursor_new(struct trcfile_reader *r, unsigned stream_idx);
/* 1 with *rec filled, 0 at the end, -EBADMSG (message in the reader) on a damaged chunk. */
int trcfile_cursor_next(struct trcfile_cursor *c, struct trc_record *rec);
/* Decodes up to max records at once (the fast path for whole-stream passes), never past the
 * loaded chunk: exactly the records that many trcfile_cursor_next calls give (one decoder
 * serves both). Returns the count (0 at the end) or -EBADMSG; an error met after records were
 * handed out comes at the next call. Strings of the batch stay valid until the next call. */
int trcfile_cursor_read(struct trcfile_cursor *c, struct trc_record *recs, unsigned max);
/* Positions on the first record with ts_ns >= t (uses the index to skip chunks). 0 or -errno. */
int trcfile_cursor_seek(struct trcfile_cursor *c, uint64_t t_ns);
void trcfile_cursor_free(struct trcfile_cursor *c);

/* All streams merged in time order: a tournament over one cursor per stream. Ties (equal
 * ts_ns) go to the lower stream index, and within a stream records keep their stream order,
 * so the order is the same on every run. */
struct trcfile_iter;
struct trcfile_iter *trcfile_iter_new(struct trcfile_reader *r);
/* The same over the streams with include[stream index] true (an array of
 * trcfile_reader_stream_count(r) entries); stream indexes reported stay the reader's. */
struct trcfile_iter *trcfile_iter_new_subset(struct trcfile_reader *r, const bool *include);
/* 1 with *rec (and *stream_idx, may be NULL) filled, 0 at the end, -EBADMSG / -ENOMEM. */
int trcfile_iter_next(struct trcfile_iter *it, struct trc_record *rec, unsigned *stream_idx);
/* The same without the copy: *rec points at the merge's own record, valid (strings too) until
 * the next call on it. For the hot loops of the exporters. */
int trcfile_iter_next_ref(struct trcfile_iter *it, const struct trc_record **rec,
			  unsigned *stream_idx);
/* Up to max (>= 1) records at once, in the order trcfile_iter_next_ref gives them: recs[i]
 * and stream_idx[i] for i below the count returned (0 at the end, or -EBADMSG / -ENOMEM).
 * Every record of the run (strings too) stays valid until the next call on it. A run ends
 * early where a stream needs its next chunk decoded. The exporters' loop without a call per
 * record. */
int trcfile_iter_next_refs(struct trcfile_iter *it, const struct trc_record **recs,
			   unsigned *stream_idx, unsigned max);
/* Restarts the merge at the first records with ts_ns >= t_ns. 0 or -errno. */
int trcfile_iter_seek(struct trcfile_iter *it, uint64_t t_ns);
void trcfile_iter_free(struct trcfile_iter *it);

/* ---- helpers shared by trace-dump ------------------------------------------------------- */

/* Lower-case name of a record type ("span_begin"...), "unknown" otherwise. */
const char *trcfile_type_name(uint32_t type);
/* The frames of a STACK record (a producer's or a decoded one) into out: their count, or
 * -EINVAL when r is not a STACK record or has more than cap frames. */
int trcfile_stack_unpack(const struct trc_record *r, uint64_t *out, uint32_t cap);
/* Name of an RSS source ("statm"...), "none" for 0, "unknown" otherwise. */
const char *trcfile_rss_source_name(uint32_t source);
/* The inverse for a source's name as a user types it ("statm"...; not "none"): 0 or -EINVAL. */
int trcfile_rss_source_parse(const char *text, enum trc_rss_source *out);
/* Name of a clock source ("clock_gettime", "tsc"), "unknown" otherwise. */
const char *trcfile_clock_name(uint32_t clock);
/* Name of a when-full policy ("wait", "drop"), "unknown" otherwise (files before 1.3). */
const char *trcfile_when_full_name(uint32_t policy);
/* Name of a lost reason ("ring_full"...), "unknown" otherwise. */
const char *trcfile_lost_reason_name(uint32_t reason);

#endif /* TRC_TRCFILE_H */
