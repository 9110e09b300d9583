/* trcfile_idle.h - puts the calling thread in the idle class: it runs only on CPU time no other
 * thread wants.
 *
 * For the threads whose work may wait for such time because nothing waits for them: the
 * background compressor (trcfile_bgc.h) and the writer's compressors when a chunk they cannot
 * take at once goes to the file stored (TRCFILE_WRITER_STORE_WHEN_BEHIND). Where the idle
 * class is refused, nice 19 at least.
 *
 * Threads: any; it changes only the caller (Linux: scheduling class and nice are per thread).
 */
#ifndef TRC_TRCFILE_IDLE_H
#define TRC_TRCFILE_IDLE_H

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

static inline void trcfile__run_when_idle(void)
{
	struct sched_param sp = {.sched_priority = 0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		(void)!nice(19);
}

#endif
