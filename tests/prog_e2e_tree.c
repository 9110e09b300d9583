/* prog_e2e_tree.c - a process tree: emits N events, then forks a child that execs
 * `prog_e2e_emit 1 N` (found next to this program), and waits for it. Both processes must
 * appear in the trace, each with its own pid. `prog_e2e_tree N` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trc.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	for (long i = 0; i < n; i++)
		TRC_INSTANT("tree.parent", i);
	char path[4096];
	snprintf(path, sizeof(path), "%s", argv[0]);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "prog_e2e_emit");
	char count[32];
	snprintf(count, sizeof(count), "%ld", n);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		TRC_INSTANT("tree.forked", 1);
		execl(path, path, "1", count, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	printf("parent %d child %d status %d\n", (int)getpid(), (int)pid, st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
