/* trcfile_types.c - names of record types, RSS sources and lost reasons, for trace-dump.
 *
 * Purpose: one table so every output (summary, events, chrome, JSON keys) spells a type the
 * same way. These spellings are part of trace-dump's documented output: do not rename.
 *
 * Threads: constant data only.
 */
#include "trcfile.h"

static const char *const trcfile__type_names[TRC_REC_TYPE_COUNT] = {
	[TRC_REC_INVALID] = "invalid",	   [TRC_REC_SPAN_BEGIN] = "span_begin",
	[TRC_REC_SPAN_END] = "span_end",   [TRC_REC_INSTANT] = "instant",
	[TRC_REC_COUNTER] = "counter",	   [TRC_REC_ALLOC] = "alloc",
	[TRC_REC_FREE] = "free",	   [TRC_REC_FUNC_ENTER] = "func_enter",
	[TRC_REC_FUNC_EXIT] = "func_exit", [TRC_REC_RSS] = "rss",
	[TRC_REC_LOST] = "lost",	   [TRC_REC_THREAD] = "thread",
	[TRC_REC_PROCESS] = "process",	   [TRC_REC_NAME] = "name",
	[TRC_REC_MODULE] = "module",	   [TRC_REC_NOTE] = "note",
	[TRC_REC_EXIT] = "exit",
};

const char *trcfile_type_name(uint32_t type)
{
	return type < TRC_REC_TYPE_COUNT ? trcfile__type_names[type] : "unknown";
}

bool trcfile_type_is_event(uint32_t type)
{
	return type >= TRC_REC_SPAN_BEGIN && type <= TRC_REC_FUNC_EXIT;
}

const char *trcfile_rss_source_name(uint32_t source)
{
	switch (source) {
	case 0:
		return "none";
	case TRC_RSS_STATM:
		return "statm";
	case TRC_RSS_STATUS:
		return "status";
	case TRC_RSS_SMAPS_ROLLUP:
		return "smaps_rollup";
	case TRC_RSS_BOTH:
		return "both";
	}
	return "unknown";
}

const char *trcfile_lost_reason_name(uint32_t reason)
{
	switch (reason) {
	case TRC_LOST_RING_FULL:
		return "ring_full";
	case TRC_LOST_NO_SLOT:
		return "no_slot";
	case TRC_LOST_CORRUPT:
		return "corrupt";
	case TRC_LOST_OVERSIZED:
		return "oversized";
	case TRC_LOST_SAMPLER_LATE:
		return "sampler_late";
	}
	return "unknown";
}
