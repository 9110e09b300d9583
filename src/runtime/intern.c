/* intern.c - interning names into the session's string table.
 *
 * A call site interns its name once (trc.h keeps the id in a static at the site); several sites
 * with the same name share an id through a per-process dedup cache. Both are lock-free and
 * async-signal-safe: a name may first be used from a signal handler.
 *
 * Table: space is reserved with fetch_add on hdr->strtab_used, the entry is written, then its
 * ready_len is published with a release store (session_layout.h). The id is only handed out
 * after that, so a record carrying it is never published before the string it names.
 * When the table is full the name gets id 1, the recorder's "table full" entry.
 *
 * Cache: open addressing over (hash << 32 | id) words in .bss (no malloc: the preload library
 * may be hooking it). Two threads interning the same new name at once race for the same cache
 * word; the loser adopts the winner's id (its own entry stays in the table, unused), so a
 * process has one id per name unless the cache is full; the trace allows duplicates. A fork
 * child inherits the cache, and the ids stay valid because the region is shared; exec starts
 * a new one. Full cache: names are still interned, just not shared.
 */
#include <string.h>

#include "runtime.h"

#define TRC__CACHE_SLOTS 4096u /* power of two */
#define TRC__CACHE_PROBES 16u

static _Atomic uint64_t trc__cache[TRC__CACHE_SLOTS];

static uint32_t trc__hash(const char *s, uint32_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h | 1u; /* never 0, so a cache word is never 0 */
}

/* The entry of id holds exactly s[0..len). */
static bool trc__entry_equals(uint32_t id, const char *s, uint32_t len)
{
	uint64_t off = trc_strtab_off(id);
	if (off + 8 > trc__rt.geom.strtab_bytes)
		return false;
	const uint8_t *e = trc_region_strtab(trc__rt.base, &trc__rt.geom) + off;
	/* Pairs with the release store that published the entry. */
	uint32_t rl = __atomic_load_n((const uint32_t *)(const void *)e, __ATOMIC_ACQUIRE);
	if (!(rl & TRC_STRTAB_READY) || (rl & ~TRC_STRTAB_READY) != len ||
	    off + trc_strtab_entry_bytes(len) > trc__rt.geom.strtab_bytes)
		return false;
	return memcmp(e + 8, s, len) == 0;
}

static uint32_t trc__append(const char *s, uint32_t len)
{
	struct trc_region_hdr *h = trc__rt.hdr;
	uint64_t need = trc_strtab_entry_bytes(len);
	uint64_t off = atomic_fetch_add_explicit(&h->strtab_used, need, memory_order_relaxed);
	if (off + need > trc__rt.geom.strtab_bytes || trc_strtab_id(off) > TRC_NAME_ID_MAX)
		return 1u;
	uint8_t *e = trc_region_strtab(trc__rt.base, &trc__rt.geom) + off;
	memcpy(e + 8, s, len);
	e[8 + len] = 0;
	/* Publishes the entry: pairs with the acquire load of ready_len in the drain (and in
	 * trc__entry_equals). */
	__atomic_store_n((uint32_t *)(void *)e, len | TRC_STRTAB_READY, __ATOMIC_RELEASE);
	return trc_strtab_id(off);
}

uint32_t trc__intern(const char *s)
{
	if (!trc__mode_load())
		return 1u;
	if (!s)
		s = "(null)";
	uint32_t len = (uint32_t)strnlen(s, TRC_STRTAB_MAX_LEN);
	uint32_t h = trc__hash(s, len);
	uint32_t i = h & (TRC__CACHE_SLOTS - 1);
	uint32_t free_at = UINT32_MAX;
	for (uint32_t k = 0; k < TRC__CACHE_PROBES; k++, i = (i + 1) & (TRC__CACHE_SLOTS - 1)) {
		uint64_t w = atomic_load_explicit(&trc__cache[i], memory_order_acquire);
		if (w == 0) {
			free_at = i;
			break;
		}
		if ((uint32_t)(w >> 32) == h && trc__entry_equals((uint32_t)w, s, len))
			return (uint32_t)w;
	}
	uint32_t id = trc__append(s, len);
	if (id == 1u || free_at == UINT32_MAX)
		return id;
	uint64_t want = ((uint64_t)h << 32) | id;
	for (uint32_t k = 0, j = free_at; k < TRC__CACHE_PROBES;
	     k++, j = (j + 1) & (TRC__CACHE_SLOTS - 1)) {
		uint64_t expect = 0;
		/* Release: a thread that finds this word sees the entry published. Acquire on
		 * failure: the winner's entry is published before its word. */
		if (atomic_compare_exchange_strong_explicit(&trc__cache[j], &expect, want,
							    memory_order_release,
							    memory_order_acquire))
			break;
		/* Lost the slot to a thread that interned the same name at the same time (same
		 * hash, same probe sequence): use its id, so one process has one id per name and
		 * a span's BEGIN and END sites agree. Our entry stays in the table, unused. */
		if ((uint32_t)(expect >> 32) == h && trc__entry_equals((uint32_t)expect, s, len))
			return (uint32_t)expect;
	}
	return id;
}

uint32_t trc__site_intern(uint32_t *site, const char *name)
{
	uint32_t id = trc__intern(name);
	/* Pairs with the acquire load in TRC__SITE: other threads using the id see the entry. */
	__atomic_store_n(site, id, __ATOMIC_RELEASE);
	return id;
}
