/* prog_rt_rawfork.c - forks that skip the atfork handlers (issue 12 item 5): raw
 * clone(SIGCHLD) through syscall(2), and glibc's _Fork. The parent emits N instants
 * "rawfork.parent" before the fork and N after its child exited; the child emits N
 * "rawfork.child" and leaves by _exit. Each process's events must be its own, exact, with no
 * corrupt ring. `prog_rt_rawfork clone|_Fork|fork N`; prints "parent PID child PID". */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trc.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
extern pid_t _Fork(void);
#define HAVE__FORK 1
#endif

static pid_t raw_fork(const char *how)
{
	if (strcmp(how, "clone") == 0)
		return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
#ifdef HAVE__FORK
	if (strcmp(how, "_Fork") == 0)
		return _Fork();
#endif
	if (strcmp(how, "fork") == 0)
		return fork();
	fprintf(stderr, "unknown fork %s\n", how);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "clone";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	for (long i = 0; i < n; i++)
		TRC_INSTANT("rawfork.parent", i);
	fflush(stdout);
	pid_t pid = raw_fork(how);
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (long i = 0; i < n; i++)
			TRC_INSTANT("rawfork.child", i);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	for (long i = 0; i < n; i++)
		TRC_INSTANT("rawfork.parent", n + i);
	printf("parent %d child %d status %d\n", (int)getpid(), (int)pid, st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
