/* stack_capture.h - the call stack of an allocation, in the allocating thread
 * (libtrc-preload.so).
 *
 * preload_stack_id() returns the calling thread's id of the call stack that led to the hook
 * that calls it (the allocator's caller innermost), writing the stack's STACK record first when
 * the thread has not written it yet (trc__stack_emit); 0 when no stack is taken: capture off
 * (TRC_ALLOC_STACKS=none), not sampled, the unwinder missing, or the record could not be
 * written, or nested in a capture (a signal handler's); PRELOAD_STACK_OWN for the capture's own. Lock-free, no syscall once the thread's first capture has set its tables up.
 *
 * The hook passes the allocation's size for sampling (sample=BYTES: about one stack per BYTES
 * bytes allocated, every allocation of BYTES or more).
 *
 * Threads: any, each on its own tables; from signal handlers too (as far as the unwinder is:
 * libunwind's local unwinding with per-thread caches is).
 */
#ifndef TRC_PRELOAD_STACK_CAPTURE_H
#define TRC_PRELOAD_STACK_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* preload_stack_id's answer for an allocation the capture itself makes (setting a thread's
 * tables up): not the program's, not recorded. */
#define PRELOAD_STACK_OWN UINT32_MAX

/* What the constructor read from TRC_ALLOC_STACKS: 0 none, 1 all, 2 sampled. */
extern int preload__stack_mode;

uint32_t preload_stack_id_slow(size_t size);

/* 1 while the calling thread allocates for the capture itself (loading the unwinder, setting a
 * thread's tables up): the hooks record neither those allocations nor those frees. */
extern __thread uint8_t preload__own __attribute__((tls_model("initial-exec")));
/* 1 while the calling thread captures a stack (what the unwinder maps then is its own). */
extern __thread uint8_t preload__busy __attribute__((tls_model("initial-exec")));

/* Whether ip is in the unwinder's text (libunwind's own calls). */
bool preload_stack_in_unwinder(uintptr_t ip);

/* The executable segment of the loaded object that holds addr, [*lo, *hi); 0, 0 if none. */
void preload_text_range(const void *addr, uintptr_t *lo, uintptr_t *hi);

static inline uint32_t preload_stack_id(size_t size)
{
	if (__builtin_expect(preload__stack_mode == 0, 0))
		return 0;
	return preload_stack_id_slow(size);
}

/* Reads the options and loads the unwinder (the preload library's constructor). */
void preload_stack_init(void);

#endif /* TRC_PRELOAD_STACK_CAPTURE_H */
