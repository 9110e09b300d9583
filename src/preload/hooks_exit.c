/* hooks_exit.c - _exit and _Exit (libtrc-preload.so).
 *
 * A process writes its own EXIT record (its VmHWM: the exact peak of that process alone) from
 * the runtime's destructor, which exit() runs after the program's atexit handlers. A process
 * that leaves by _exit (a shell does: dash ends with _exit, a fork child after its work) runs
 * no destructor: these hooks write the record first, with the exit code, then call the next
 * definition (glibc's). exit() itself is not hooked: glibc's own call of it after main returns
 * does not go through the PLT, so the code of a return from main stays unknown either way.
 *
 * _exit is what a fork child calls because it is async-signal-safe: the hook must stay so. The
 * next definitions are resolved in the constructor (dlsym may take the loader's lock, which a
 * thread of the parent may have held at fork); trc__process_exiting takes no lock and does not
 * allocate, and does nothing in a vfork child (it shares its parent's memory).
 *
 * Threads: any; the record goes on the calling thread's ring (trc__process_exiting).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trc.h"

#define PRELOAD_EXIT_HOOK __attribute__((visibility("default"), noreturn, no_instrument_function))

PRELOAD_EXIT_HOOK void _exit(int code);
PRELOAD_EXIT_HOOK void _Exit(int code);

typedef void (*preload__exit_fn)(int);

static preload__exit_fn preload__next_exit, preload__next_Exit;

__attribute__((constructor, no_instrument_function)) static void preload__exit_ctor(void)
{
	__atomic_store_n(&preload__next_exit, (preload__exit_fn)dlsym(RTLD_NEXT, "_exit"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&preload__next_Exit, (preload__exit_fn)dlsym(RTLD_NEXT, "_Exit"),
			 __ATOMIC_RELAXED);
}

__attribute__((noreturn, no_instrument_function)) static void preload__exit(preload__exit_fn next,
									    int code)
{
	if (trc__mode_load())
		trc__process_exiting(code & 0xff);
	if (next)
		next(code);
	/* Not resolved (an _exit before this library's constructor ran): the system call. */
	syscall(SYS_exit_group, code);
	abort(); /* not reached */
}

PRELOAD_EXIT_HOOK void _exit(int code)
{
	preload__exit(__atomic_load_n(&preload__next_exit, __ATOMIC_RELAXED), code);
}

PRELOAD_EXIT_HOOK void _Exit(int code)
{
	preload__exit(__atomic_load_n(&preload__next_Exit, __ATOMIC_RELAXED), code);
}
