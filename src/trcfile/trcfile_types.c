/* trcfile_types.c - names of record types, RSS sources and lost reasons (wire.h values).
 *
 * Purpose: one table so every output (summary, events, chrome, JSON keys) spells a type the
 * same way. These spellings are part of trace-dump's documented output: do not rename.
 *
 * Threads: constant data only.
 */
#include <errno.h>
#include <string.h>

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
	[TRC_REC_WAIT] = "wait",
	[TRC_REC_STACK] = "stack",
	[TRC_REC_MAP] = "map",
	[TRC_REC_UNMAP] = "unmap",
};

const char *trcfile_type_name(uint32_t type)
{
	return type < TRC_REC_TYPE_COUNT ? trcfile__type_names[type] : "unknown";
}

/* Indexed by enum trc_rss_source; 0 is "sampling off". */
static const char *const trcfile__rss_source_names[] = {
	[0] = "none",
	[TRC_RSS_STATM] = "statm",
	[TRC_RSS_STATUS] = "status",
	[TRC_RSS_SMAPS_ROLLUP] = "smaps_rollup",
	[TRC_RSS_BOTH] = "both",
};
#define TRCFILE__N_RSS_SOURCES (sizeof(trcfile__rss_source_names) / sizeof(trcfile__rss_source_names[0]))

const char *trcfile_rss_source_name(uint32_t source)
{
	return source < TRCFILE__N_RSS_SOURCES ? trcfile__rss_source_names[source] : "unknown";
}

int trcfile_rss_source_parse(const char *text, enum trc_rss_source *out)
{
	if (!text || !out)
		return -EINVAL;
	for (uint32_t i = TRC_RSS_STATM; i < TRCFILE__N_RSS_SOURCES; i++) {
		if (strcmp(text, trcfile__rss_source_names[i]) == 0) {
			*out = (enum trc_rss_source)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *trcfile_clock_name(uint32_t clock)
{
	switch (clock) {
	case TRC_CLOCK_GETTIME:
		return "clock_gettime";
	case TRC_CLOCK_TSC:
		return "tsc";
	}
	return "unknown";
}

const char *trcfile_when_full_name(uint32_t policy)
{
	switch (policy) {
	case TRCFILE_WHEN_FULL_WAIT:
		return "wait";
	case TRCFILE_WHEN_FULL_DROP:
		return "drop";
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
	case TRC_LOST_REENTRANT:
		return "reentrant";
	case TRC_LOST_DISK_FULL:
		return "disk_full";
	}
	return "unknown";
}
