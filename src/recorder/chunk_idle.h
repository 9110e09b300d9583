/* chunk_idle.h - puts a thread in the idle class (it runs only on CPU time no other thread
 * wants), and back.
 *
 * For the threads whose work may wait for such time because nothing waits for them: the
 * background compressor (chunk_bgc.h) and the writer's compressors when a chunk they cannot
 * take at once goes to the file stored (TRCFILE_WRITER_STORE_WHEN_BEHIND). Where the idle
 * class is refused, nice 19 at least. When they are stopped, something does wait for their
 * last work: back to the normal class then.
 *
 * Threads: trcfile__run_when_idle changes only the caller (Linux: scheduling class and nice
 * are per thread); trcfile__run_normally any thread's, from any thread.
 */
#ifndef TRC_RECORDER_CHUNK_IDLE_H
#define TRC_RECORDER_CHUNK_IDLE_H

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

static inline void trcfile__run_when_idle(void)
{
	struct sched_param sp = {.sched_priority = 0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		(void)!nice(19);
}

/* Takes tid (in the idle class) back to the normal class, where allowed: root or RLIMIT_NICE;
 * else it stays where it is. */
static inline void trcfile__run_normally(pthread_t tid)
{
	struct sched_param sp = {.sched_priority = 0};
	(void)pthread_setschedparam(tid, SCHED_OTHER, &sp);
}

#endif
