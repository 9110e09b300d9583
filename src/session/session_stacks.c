/* session_stacks.c - the trace's call stacks: each thread's stack ids mapped to the session's.
 *
 * A traced thread names each distinct call stack it captures by an id of its own and writes
 * the stack once in a STACK ring record (src/runtime/thread.c, src/preload/stack_capture.c);
 * its ALLOC records carry that id. The drain gives every distinct stack of the session one id
 * (the same frames from any thread or process, whose addresses mean the same code only in one
 * process: the pid is part of what is compared), writes its STACK record once on the meta
 * stream, and keeps per slot the map from the thread's ids to the session's, which the fused
 * loops read to encode an ALLOC. A thread id the slot's stream never defined (its STACK record
 * was lost, or the ring is a forked child's that inherited its parent's ids) maps to 0: the
 * ALLOC is recorded without a stack rather than with a wrong one.
 *
 * Memory: SESSION_STACKS_MAX distinct stacks and SESSION_STACK_FRAMES_MAX frames are kept for
 * deduplication; beyond them every definition gets a new session id without being kept (the
 * file grows, nothing is wrong). A slot's map grows to the largest id its thread used.
 *
 * Threads: the drain thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "u64map.h"

#define SESSION_STACKS_MAX (1u << 22)
#define SESSION_STACK_FRAMES_MAX (64u << 20)
/* A slot's map never grows past this many ids (a thread's ids are dense from 1). */
#define SESSION_STACK_SLOT_IDS_MAX (1u << 24)

struct session_stack_def {
	uint32_t pid, flags, n;
	size_t first; /* its frames in frames[] */
};

struct session_stacks {
	struct u64map by_hash; /* hash of (pid, flags, frames) -> index in defs */
	struct session_stack_def *defs;
	size_t n_defs, cap_defs;
	uint64_t *frames;
	size_t n_frames, cap_frames;
	uint32_t next_id; /* the session's last id given */
};

void session_stacks_free(struct trc_session *s)
{
	if (s->stacks) {
		u64map_destroy(&s->stacks->by_hash);
		free(s->stacks->defs);
		free(s->stacks->frames);
		free(s->stacks);
		s->stacks = NULL;
	}
	if (s->stack_ids) {
		for (uint32_t i = 0; i < s->geom.max_slots; i++)
			free(s->stack_ids[i].ids);
		free(s->stack_ids);
		s->stack_ids = NULL;
	}
}

void session_stacks_slot_reset(struct trc_session *s, uint32_t slot)
{
	if (!s->stack_ids)
		return;
	struct session_stack_ids *m = &s->stack_ids[slot];
	if (m->ids)
		memset(m->ids, 0, (size_t)m->cap * sizeof(*m->ids));
}

static uint64_t session__stack_hash(const struct session_stacks *st, uint32_t pid,
				    uint32_t flags, const uint64_t *frames, uint32_t n)
{
	uint64_t h = u64map_hash_bytes(frames, (size_t)n * sizeof(*frames), st->by_hash.seed);
	return u64map_mix(h ^ ((uint64_t)pid << 32 | (uint64_t)flags << 16 | n),
			  st->by_hash.seed);
}

/* The session id of the stack, a new one when it is new (then *fresh). 0: out of memory. */
static uint32_t session__stack_intern(struct session_stacks *st, uint32_t pid, uint32_t flags,
				      const uint64_t *frames, uint32_t n, bool *fresh)
{
	uint64_t h = session__stack_hash(st, pid, flags, frames, n);
	uint64_t *at = u64map_get(&st->by_hash, h);
	if (at) {
		const struct session_stack_def *d = &st->defs[*at];
		if (d->pid == pid && d->flags == flags && d->n == n &&
		    memcmp(st->frames + d->first, frames, (size_t)n * sizeof(*frames)) == 0) {
			*fresh = false;
			return (uint32_t)(*at + 1);
		}
	}
	*fresh = true;
	if (st->next_id == UINT32_MAX)
		return 0;
	/* Kept for deduplication while within bounds and the hash is free. */
	if (!at && st->n_defs < SESSION_STACKS_MAX && st->n_frames + n <= SESSION_STACK_FRAMES_MAX &&
	    st->next_id == st->n_defs) {
		if (st->n_defs == st->cap_defs) {
			size_t nc = st->cap_defs ? 2 * st->cap_defs : 1024;
			void *p = realloc(st->defs, nc * sizeof(*st->defs));
			if (!p)
				return 0;
			st->defs = p;
			st->cap_defs = nc;
		}
		if (st->n_frames + n > st->cap_frames) {
			size_t nc = st->cap_frames ? 2 * st->cap_frames : 16384;
			while (nc < st->n_frames + n)
				nc *= 2;
			void *p = realloc(st->frames, nc * sizeof(*st->frames));
			if (!p)
				return 0;
			st->frames = p;
			st->cap_frames = nc;
		}
		if (u64map_put(&st->by_hash, h, st->n_defs, NULL, NULL) == 0) {
			st->defs[st->n_defs] = (struct session_stack_def){pid, flags, n, st->n_frames};
			memcpy(st->frames + st->n_frames, frames, (size_t)n * sizeof(*frames));
			st->n_frames += n;
			st->n_defs++;
		}
	}
	/* Ids stay dense while every stack is kept (id = index + 1); once one is not, later
	 * ones are not kept either (next_id != n_defs), so the two never disagree. */
	return ++st->next_id;
}

int session_stacks_define(struct trc_session *s, uint32_t slot, uint32_t pid, uint32_t local_id,
			  uint32_t flags, const uint64_t *frames, uint32_t n, uint32_t *global,
			  bool *fresh)
{
	*global = 0;
	*fresh = false;
	if (local_id == 0 || local_id >= SESSION_STACK_SLOT_IDS_MAX)
		return -EINVAL;
	if (!s->stacks) {
		s->stacks = calloc(1, sizeof(*s->stacks));
		if (!s->stacks)
			return -ENOMEM;
		u64map_init(&s->stacks->by_hash, SESSION_STACKS_MAX);
	}
	if (!s->stack_ids) {
		s->stack_ids = calloc(s->geom.max_slots, sizeof(*s->stack_ids));
		if (!s->stack_ids)
			return -ENOMEM;
	}
	struct session_stack_ids *m = &s->stack_ids[slot];
	if (local_id >= m->cap) {
		uint32_t nc = m->cap ? m->cap : 64;
		while (nc <= local_id)
			nc *= 2;
		uint32_t *p = realloc(m->ids, (size_t)nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + m->cap, 0, (size_t)(nc - m->cap) * sizeof(*p));
		m->ids = p;
		m->cap = nc;
	}
	uint32_t g = session__stack_intern(s->stacks, pid, flags, frames, n, fresh);
	if (!g)
		return -ENOMEM;
	m->ids[local_id] = g;
	*global = g;
	return 0;
}
