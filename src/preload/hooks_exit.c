/* hooks_exit.c - how a process leaves: _exit, _Exit, exit, and main's return
 * (libtrc-preload.so).
 *
 * A process writes its own EXIT record (its VmHWM: the exact peak of that process alone) from
 * the runtime's destructor, which exit() runs after the program's atexit handlers. A process
 * that leaves by _exit (a shell does: dash ends with _exit, a fork child after its work) runs
 * no destructor: the _exit hooks write the record first, with the exit code, then call the
 * next definition (glibc's). The exit code of the other paths is noted for the destructor
 * (trc__exit_code): the exit hook sees the program's calls of exit(); glibc's own call after
 * main returns does not go through the PLT, so __libc_start_main is interposed to run main
 * through a wrapper that notes its return value. An exit from inside glibc (error(3)) leaves
 * the code unknown.
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
PRELOAD_EXIT_HOOK void exit(int code);

typedef void (*preload__exit_fn)(int);
typedef int (*preload__main_fn)(int, char **, char **);
typedef int (*preload__start_fn)(preload__main_fn, int, char **, void (*)(void), void (*)(void),
				 void (*)(void), void *);

static preload__exit_fn preload__next_exit, preload__next_Exit, preload__next_exit_libc;

__attribute__((constructor, no_instrument_function)) static void preload__exit_ctor(void)
{
	__atomic_store_n(&preload__next_exit, (preload__exit_fn)dlsym(RTLD_NEXT, "_exit"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&preload__next_Exit, (preload__exit_fn)dlsym(RTLD_NEXT, "_Exit"),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&preload__next_exit_libc, (preload__exit_fn)dlsym(RTLD_NEXT, "exit"),
			 __ATOMIC_RELAXED);
}

PRELOAD_EXIT_HOOK void exit(int code)
{
	if (trc__mode_load())
		trc__exit_code(code);
	preload__exit_fn next = __atomic_load_n(&preload__next_exit_libc, __ATOMIC_RELAXED);
	if (!next) /* before the constructor (another library's): not a signal handler's path */
		next = (preload__exit_fn)dlsym(RTLD_NEXT, "exit");
	if (next)
		next(code);
	abort(); /* not reached */
}

/* The program's main, for the wrapper below (set once, before main runs). */
static preload__main_fn preload__main;

__attribute__((no_instrument_function)) static int preload__main_wrapper(int argc, char **argv,
									 char **envp)
{
	int code = preload__main(argc, argv, envp);
	if (trc__mode_load())
		trc__exit_code(code);
	return code;
}

__attribute__((visibility("default"), no_instrument_function)) int
__libc_start_main(preload__main_fn main, int argc, char **argv, void (*init)(void),
		  void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

__attribute__((visibility("default"), no_instrument_function)) int
__libc_start_main(preload__main_fn main, int argc, char **argv, void (*init)(void),
		  void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	preload__start_fn next = (preload__start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
	if (!next)
		abort(); /* no C library to start the program with */
	preload__main = main;
	return next(preload__main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
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
