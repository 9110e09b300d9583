/* finst.c - function entry and exit for programs built with -finstrument-functions that link
 * libtrc (libtrc.so or libtrc.a) themselves, with or without the preload library.
 *
 * The compiler calls __cyg_profile_func_enter/exit(fn, call_site) around every function of
 * such a program; glibc's versions do nothing. A program linked with -ltrc binds these names
 * to libtrc's (it precedes libc in the link order), so trace-run --no-preload records its
 * functions too. Under the preload library the preload's copies (src/preload/hooks_finst.c)
 * come first in symbol order and do the same. Each call records FUNC_ENTER/FUNC_EXIT
 * {fn, call_site} through trc.h's fast path and keeps the thread's open frames
 * (trc/func_frames.h); when no session is attached (trc__mode 0) a call costs one load. The
 * hooks must not be instrumented themselves (they would call themselves).
 *
 * Threads: any; the calling thread's frames only.
 */
#include <stdint.h>

#include "trc/func_frames.h"

#define TRC__FINST_HOOK __attribute__((visibility("default"), no_instrument_function))

TRC__FINST_HOOK void __cyg_profile_func_enter(void *fn, void *call_site);
TRC__FINST_HOOK void __cyg_profile_func_exit(void *fn, void *call_site);

TRC__FINST_HOOK void __cyg_profile_func_enter(void *fn, void *call_site)
{
	trc__func_enter((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)call_site, TRC__CALLER_SP());
}

TRC__FINST_HOOK void __cyg_profile_func_exit(void *fn, void *call_site)
{
	trc__func_exit((uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)call_site);
}
