/* hooks_exec.c - the exec family (libtrc-preload.so): a process that execs leaves the function
 * frames it is in, and the new image starts a tree of its own.
 *
 * Each hook writes a FUNC_EXIT for every frame the calling thread has open (trc__frames_exec,
 * src/runtime/frames.c), innermost first, then calls the next definition; when the exec fails
 * and returns, the frames are entered again (the program goes on inside them: its trace shows
 * each split in two at the failed exec). Other threads' frames end with them, unrecorded (exec
 * removes them without running anything of theirs). A vfork child writes nothing: its frames
 * are its parent's, which goes on in them.
 *
 * glibc's execl, execlp and execle build an argument vector and call execve internally, where
 * no hook sees it: the hooks for them build the vector (on the stack: exec may run in a vfork
 * child, where malloc must not) and call the next execv, execvp and execve. The next
 * definitions are resolved in the constructor (a vfork child must not take the loader's lock).
 *
 * Threads: any; the calling thread's frames only. Async-signal-safe as execve is.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "trc/func_frames.h"

#define PRELOAD_API __attribute__((visibility("default")))

/* More arguments than this to execl* is E2BIG (Linux's own limit is far below). */
#define PRELOAD_EXECL_ARGS_MAX 65536

typedef int (*preload__execve_fn)(const char *, char *const[], char *const[]);
typedef int (*preload__execv_fn)(const char *, char *const[]);
typedef int (*preload__fexecve_fn)(int, char *const[], char *const[]);

enum {
	PRELOAD_EXECVE,
	PRELOAD_EXECV,
	PRELOAD_EXECVP,
	PRELOAD_EXECVPE,
	PRELOAD_FEXECVE,
	PRELOAD_EXECS
};

static const char *const preload__exec_names[PRELOAD_EXECS] = {"execve", "execv", "execvp",
							       "execvpe", "fexecve"};
static void *preload__next_exec[PRELOAD_EXECS];

__attribute__((constructor)) static void preload__exec_ctor(void)
{
	for (int i = 0; i < PRELOAD_EXECS; i++)
		__atomic_store_n(&preload__next_exec[i], dlsym(RTLD_NEXT, preload__exec_names[i]),
				 __ATOMIC_RELAXED);
}

static void *preload__exec_next(int which)
{
	void *f = __atomic_load_n(&preload__next_exec[which], __ATOMIC_RELAXED);
	return f ? f : dlsym(RTLD_NEXT, preload__exec_names[which]);
}

/* The exec returned rc: it failed; the frames go on (errno kept for the caller). */
static int preload__exec_back(int rc)
{
	int e = errno;
	trc__frames_exec(true);
	errno = e;
	return rc;
}

PRELOAD_API int execve(const char *path, char *const argv[], char *const envp[])
{
	preload__execve_fn f = (preload__execve_fn)preload__exec_next(PRELOAD_EXECVE);
	if (!f)
		return errno = ENOSYS, -1;
	trc__frames_exec(false);
	return preload__exec_back(f(path, argv, envp));
}

PRELOAD_API int execv(const char *path, char *const argv[])
{
	preload__execv_fn f = (preload__execv_fn)preload__exec_next(PRELOAD_EXECV);
	if (!f)
		return errno = ENOSYS, -1;
	trc__frames_exec(false);
	return preload__exec_back(f(path, argv));
}

PRELOAD_API int execvp(const char *file, char *const argv[])
{
	preload__execv_fn f = (preload__execv_fn)preload__exec_next(PRELOAD_EXECVP);
	if (!f)
		return errno = ENOSYS, -1;
	trc__frames_exec(false);
	return preload__exec_back(f(file, argv));
}

PRELOAD_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	preload__execve_fn f = (preload__execve_fn)preload__exec_next(PRELOAD_EXECVPE);
	if (!f)
		return errno = ENOSYS, -1;
	trc__frames_exec(false);
	return preload__exec_back(f(file, argv, envp));
}

PRELOAD_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	preload__fexecve_fn f = (preload__fexecve_fn)preload__exec_next(PRELOAD_FEXECVE);
	if (!f)
		return errno = ENOSYS, -1;
	trc__frames_exec(false);
	return preload__exec_back(f(fd, argv, envp));
}

/* The arguments from a non-NULL arg0 up to the NULL after it, counted; -1 when too many. */
static long preload__execl_count(va_list ap)
{
	long n = 1;
	while (va_arg(ap, char *) != NULL)
		if (++n >= PRELOAD_EXECL_ARGS_MAX)
			return -1;
	return n;
}

/* Whether p is not NULL, asked of a pointer glibc's headers declare nonnull (execl's arg0),
 * which the compiler would otherwise take as never NULL. */
static bool preload__given(const void *p)
{
	__asm__("" : "+r"(p));
	return p != NULL;
}

/* argv[0, n] from arg0 and ap (n == 0: arg0 is the NULL), NULL last; then the char ** that
 * follows the NULL when with_env (execle's envp). */
static char **preload__execl_fill(char **argv, long n, const char *arg0, va_list ap, bool with_env)
{
	argv[0] = (char *)arg0;
	for (long i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	return with_env ? va_arg(ap, char **) : NULL;
}

#define PRELOAD_EXECL_ARGV(argv, envp, arg0, with_env)                  \
	va_list ap;                                                     \
	va_start(ap, arg0);                                             \
	long n = preload__given(arg0) ? preload__execl_count(ap) : 0;   \
	va_end(ap);                                                     \
	if (n < 0)                                                      \
		return errno = E2BIG, -1;                               \
	char **argv = alloca((size_t)(n + 1) * sizeof(char *));         \
	va_start(ap, arg0);                                             \
	char **envp = preload__execl_fill(argv, n, arg0, ap, with_env); \
	va_end(ap);                                                     \
	(void)envp

PRELOAD_API int execl(const char *path, const char *arg0, ...)
{
	PRELOAD_EXECL_ARGV(argv, envp, arg0, false);
	return execv(path, argv);
}

PRELOAD_API int execlp(const char *file, const char *arg0, ...)
{
	PRELOAD_EXECL_ARGV(argv, envp, arg0, false);
	return execvp(file, argv);
}

PRELOAD_API int execle(const char *path, const char *arg0, ...)
{
	PRELOAD_EXECL_ARGV(argv, envp, arg0, true);
	return execve(path, argv, envp);
}
