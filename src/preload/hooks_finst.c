/* hooks_finst.c - function entry and exit for programs built with -finstrument-functions
 * (libtrc-preload.so).
 *
 * The compiler calls __cyg_profile_func_enter/exit(fn, call_site) around every function of such
 * a program; glibc provides no-op versions, which these interpose when the preload library is
 * loaded. Each call records FUNC_ENTER/FUNC_EXIT {fn, call_site} through trc.h's fast path and
 * keeps the thread's open frames (trc/func_frames.h, the same code as libtrc's copy in
 * src/runtime/finst.c); the process's executable mappings are in the trace as MODULE records, so
 * trace-dump can name the addresses later. The hooks themselves must not be instrumented (they
 * would call themselves).
 *
 * Threads: any; the calling thread's frames only.
 */
#include <stdint.h>

#include "trc/func_frames.h"

#define PRELOAD_HOOK __attribute__((visibility("default"), no_instrument_function))

PRELOAD_HOOK void __cyg_profile_func_enter(void *fn, void *call_site);
PRELOAD_HOOK void __cyg_profile_func_exit(void *fn, void *call_site);

PRELOAD_HOOK void __cyg_profile_func_enter(void *fn, void *call_site)
{
	trc__func_enter((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)call_site, TRC__CALLER_SP());
}

PRELOAD_HOOK void __cyg_profile_func_exit(void *fn, void *call_site)
{
	trc__func_exit((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)call_site);
}
