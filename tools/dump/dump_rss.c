/* dump_rss.c - `trace-dump rss`: the RSS samples as CSV.
 *
 * Purpose: the sampled series for spreadsheets and plotting scripts. Only the streams that
 * can hold samples are merged (the sampler's and metadata streams, never the threads'
 * events), so this reads a small part of a large trace.
 *
 * Threads: single-threaded.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "dump_common.h"

static const char dump__rss_help[] =
	"usage: trace-dump rss FILE\n"
	"\n"
	"The RSS samples as CSV, one row per sample in time order, with a header row:\n"
	"  time_ns           time from the start of recording\n"
	"  pid               the sampled process\n"
	"  program_bytes     the program's RSS: rss_bytes - buffers_bytes\n"
	"  rss_bytes         RSS as the source reports it (trace buffers included)\n"
	"  buffers_bytes     trace buffers resident in the program\n"
	"  source            statm | status | smaps_rollup | both\n"
	"  hwm_bytes, anon_bytes, file_bytes, shmem_bytes   (status; empty otherwise)\n"
	"  rss_exact_bytes, pss_bytes                       (smaps_rollup; empty otherwise)\n"
	"  stretched         1 when the sampler stretched its interval (slow source)\n"
	"  read_ns           time the sample took to read\n"
	"\n"
	"  -h, --help  this text\n";

static void dump__opt(bool has, uint64_t v)
{
	dump_char(',');
	if (has)
		dump_u64(v);
}

int dump_rss_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(dump__rss_help, stdout);
			return DUMP_EXIT_OK;
		}
		return dump_refused_option(argv[0], c, argv, opts);
	}
	const char *path = dump_file_operand(argv[0], argc, argv);
	if (!path)
		return DUMP_EXIT_USAGE;
	struct trcfile_reader *r = dump_open(path, false);
	if (!r)
		return DUMP_EXIT_FAIL;
	unsigned ns = trcfile_reader_stream_count(r);
	bool *include = calloc(ns ? ns : 1, sizeof(bool));
	if (!include) {
		dump_error("out of memory");
		dump_reader_free(r);
		return DUMP_EXIT_FAIL;
	}
	for (unsigned s = 0; s < ns; s++)
		include[s] = trcfile_reader_stream(r, s)->kind != TRC_STREAM_THREAD;
	struct trcfile_iter *it = trcfile_iter_new_subset(r, include);
	free(include);
	if (!it) {
		dump_error("%s: %s", path,
			   trcfile_reader_errmsg(r)[0] ? trcfile_reader_errmsg(r)
						       : "out of memory");
		dump_reader_free(r);
		return DUMP_EXIT_FAIL;
	}
	uint64_t start = dump_start_ns(r);
	dump_str("time_ns,pid,program_bytes,rss_bytes,buffers_bytes,source,hwm_bytes,anon_bytes,"
		 "file_bytes,shmem_bytes,rss_exact_bytes,pss_bytes,stretched,read_ns\n");
	struct trc_record rec;
	int err;
	while ((err = trcfile_iter_next(it, &rec, NULL)) == 1) {
		if (rec.type != TRC_REC_RSS)
			continue;
		uint32_t f = rec.rss.flags;
		uint64_t b = rec.rss.buffers_bytes;
		dump_i64((int64_t)(rec.ts_ns - start));
		dump_char(',');
		dump_u64(rec.rss.pid);
		dump_char(',');
		dump_u64(rec.rss.rss_bytes > b ? rec.rss.rss_bytes - b : 0);
		dump_char(',');
		dump_u64(rec.rss.rss_bytes);
		dump_char(',');
		dump_u64(b);
		dump_char(',');
		dump_str(trcfile_rss_source_name(rec.rss.source));
		dump__opt(f & TRC_RSS_HAS_HWM, rec.rss.hwm_bytes);
		dump__opt(f & TRC_RSS_HAS_SPLIT, rec.rss.anon_bytes);
		dump__opt(f & TRC_RSS_HAS_SPLIT, rec.rss.file_bytes);
		dump__opt(f & TRC_RSS_HAS_SPLIT, rec.rss.shmem_bytes);
		dump__opt(f & TRC_RSS_HAS_EXACT, rec.rss.rss_exact_bytes);
		dump__opt(f & TRC_RSS_HAS_EXACT, rec.rss.pss_bytes);
		dump_str(f & TRC_RSS_STRETCHED ? ",1," : ",0,");
		dump_u64(rec.rss.read_ns);
		dump_char('\n');
	}
	int rc = DUMP_EXIT_OK;
	if (err < 0) {
		dump_flush();
		dump_error("%s: %s", path, trcfile_reader_errmsg(r));
		rc = DUMP_EXIT_FAIL;
	}
	trcfile_iter_free(it);
	dump_close(r, path);
	return rc;
}
