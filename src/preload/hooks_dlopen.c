/* hooks_dlopen.c - modules loaded after start (libtrc-preload.so).
 *
 * A library loaded with dlopen after the process's MODULE records were written would leave
 * its functions' addresses without a module, so trace-dump could not name them. This hook
 * calls the next dlopen (dlsym(RTLD_NEXT), the program's own choice of loader entry), and
 * when it returns a handle asks the runtime to report the executable mappings it has not
 * reported yet (trc__modules_changed: a re-read of /proc/self/maps on the calling thread's
 * ring, slow path, no malloc). dlopen is rare; its cost does not matter.
 *
 * Threads: any; the resolved pointer is written with a relaxed atomic store (any thread may
 * resolve it; they all find the same value).
 */
#include <dlfcn.h>
#include <stddef.h>

#include "trc.h"

#define PRELOAD_HOOK __attribute__((visibility("default"), no_instrument_function))

PRELOAD_HOOK void *dlopen(const char *file, int flags);

typedef void *(*preload__dlopen_fn)(const char *, int);

PRELOAD_HOOK void *dlopen(const char *file, int flags)
{
	static preload__dlopen_fn next;
	preload__dlopen_fn fn = __atomic_load_n(&next, __ATOMIC_RELAXED);
	if (!fn) {
		fn = (preload__dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
		if (!fn)
			return NULL;
		__atomic_store_n(&next, fn, __ATOMIC_RELAXED);
	}
	void *h = fn(file, flags);
	if (h && file && trc__mode_load())
		trc__modules_changed();
	return h;
}
