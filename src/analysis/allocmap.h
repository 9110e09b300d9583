/* allocmap.h - live allocations: the process, address and size of what is allocated and not yet
 * freed.
 *
 * Purpose: what the summary's live bytes (summary_live.c), trace-dump memory, chrome's and
 * perfetto's heap counters, pprof --live-at and the Parquet allocations table replay ALLOC and
 * FREE records into. Keyed by the exact (process, address) pair: after a fork both processes
 * use the same addresses, and pids may differ by any amount, so no key formula that mixes the
 * two into 64 bits may stand in for it (a FREE of one process would cancel an ALLOC of the
 * other). Capped at max_entries so a hostile trace cannot make it grow without bound: past
 * the cap a put of a new pair fails with -ENOSPC and the caller's figure becomes approximate
 * (it says so).
 *
 * The process is a uint64_t so that callers reading several files pass pid + their own
 * offset; one that keeps a map per process passes 0.
 *
 * Threads: none; a map belongs to one thread at a time.
 * Errors: put returns 0 or -errno; new returns NULL on out of memory; free accepts NULL.
 */
#ifndef TRC_ALLOCMAP_H
#define TRC_ALLOCMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct allocmap;

struct allocmap *allocmap_new(size_t max_entries);
/* Returns 0, or -ENOSPC when full (not recorded; the map becomes approximate), or -ENOMEM. A
 * second allocation at a live (pid, addr) replaces it (its size is returned in *replaced_size,
 * else 0; replaced_size may be NULL). */
int allocmap_put(struct allocmap *m, uint64_t pid, uint64_t addr, uint64_t size,
		 uint64_t *replaced_size);
/* Removes (pid, addr); true with *size (may be NULL) filled if it was there. */
bool allocmap_take(struct allocmap *m, uint64_t pid, uint64_t addr, uint64_t *size);
void allocmap_free(struct allocmap *m);
/* Iteration in no particular order: *pos starts at 0; true with *pid, *addr and *size (each
 * may be NULL) filled while there are more (no put or take in between). */
bool allocmap_next(const struct allocmap *m, size_t *pos, uint64_t *pid, uint64_t *addr,
		   uint64_t *size);
/* Live allocations held. */
size_t allocmap_count(const struct allocmap *m);

#endif /* TRC_ALLOCMAP_H */
