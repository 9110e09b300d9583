/* dump_figures.c - one trace's figures as the summary computes them (dump_figures.h).
 *
 * The summary's pass feeds the memory report (one merged pass for both); the function table
 * is its own pass, run only when the trace holds function records.
 *
 * Threads: trace-dump's one thread.
 */
#include <errno.h>
#include <string.h>

#include "dump_common.h"
#include "dump_figures.h"
#include "dump_functions.h"
#include "dump_memory.h"
#include "dump_symbols.h"

static int dump__feed_memory(void *ctx, const struct trc_record *rec, unsigned sidx)
{
	return memory_feed_add(ctx, rec, sidx);
}

void dump_figures_free(struct dump_figures *f)
{
	memory_report_free(&f->mem);
	func_table_free(f->ft);
	sym_resolver_free(f->syms);
	if (f->have_summary)
		summary_free(&f->s);
	memset(f, 0, sizeof(*f));
}

int dump_figures_compute(struct trcfile_reader *r, const char *path, enum func_sort sort,
			 struct dump_figures *f)
{
	return dump_figures_compute_chunks(r, path, sort, NULL, NULL, f);
}

int dump_figures_compute_chunks(struct trcfile_reader *r, const char *path, enum func_sort sort,
				summary_chunk_fn chunk, void *chunk_ctx, struct dump_figures *f)
{
	memset(f, 0, sizeof(*f));
	f->syms = dump_symbols_new(r);
	int err = 0;
	struct memory_feed *feed = dump_memory_feed_for_summary(r, f->syms, &err);
	if (feed)
		err = summary_compute_chunks(r, &f->s, dump__feed_memory, feed, chunk, chunk_ctx);
	if (!err) {
		f->have_summary = true;
		err = memory_feed_finish(feed, &f->mem);
	} else {
		memory_feed_free(feed);
	}
	if (!err && f->s.per_type[TRC_REC_FUNC_ENTER])
		f->ft = dump_functions_compute(r, f->syms, sort, &err);
	if (err) {
		dump_error("%s: %s", path,
			   err == -ENOMEM || !trcfile_reader_errmsg(r)[0]
				   ? "out of memory"
				   : trcfile_reader_errmsg(r));
		dump_figures_free(f);
		return DUMP_EXIT_FAIL;
	}
	return DUMP_EXIT_OK;
}
