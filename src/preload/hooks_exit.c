/* hooks_exit.c - _exit and _Exit (libtrc-preload.so).
 *
 * A process writes its own EXIT record (its VmHWM: the exact peak of that process alone) from
 * the runtime's destructor, which exit() runs after the program's atexit handlers. A process
 * that leaves by _exit (a shell does: dash ends with _exit, a fork child after its work) runs
 * no destructor: these hooks write the record first, with the exit code, then call the next
 * definition (glibc's). exit() itself is not hooked: glibc's own call of it after main returns
 * does not go through the PLT, so the code of a return from main stays unknown either way.
 *
 * Threads: any; the record goes on the calling thread's ring (trc__process_exiting).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "trc.h"

#define PRELOAD_EXIT_HOOK __attribute__((visibility("default"), noreturn, no_instrument_function))

PRELOAD_EXIT_HOOK void _exit(int code);
PRELOAD_EXIT_HOOK void _Exit(int code);

typedef void (*preload__exit_fn)(int);

__attribute__((noreturn, no_instrument_function)) static void preload__exit(const char *name,
									    int code)
{
	if (trc__mode_load())
		trc__process_exiting(code & 0xff);
	preload__exit_fn next = (preload__exit_fn)dlsym(RTLD_NEXT, name);
	if (next)
		next(code);
	abort(); /* not reached: glibc's _exit does not return */
}

PRELOAD_EXIT_HOOK void _exit(int code)
{
	preload__exit("_exit", code);
}

PRELOAD_EXIT_HOOK void _Exit(int code)
{
	preload__exit("_Exit", code);
}
