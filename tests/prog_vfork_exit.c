/* prog_vfork_exit.c - a process whose vfork child leaves by _exit(5).
 *
 * Purpose: the preload library's _exit hook runs in the vfork child, which shares its parent's
 * memory and thread: it must write nothing there (the record would carry the parent's pid,
 * and mark the parent's own exit record as written). The parent then touches 8 MiB and calls
 * exit(6), so its own record (from the runtime's destructor) says 8 MiB or more, and status 6
 * (the preload library's exit hook).
 *
 * Usage: prog_vfork_exit. Exit status 6; 1 when vfork or the child failed.
 *
 * Threads: one.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int st;
	pid_t pid = vfork();
	if (pid == 0)
		_exit(5);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 5)
		return 1;
	/* Written through a volatile pointer, page by page: GCC removes a malloc, memset and free
	 * it can see through. */
	size_t n = 8u << 20;
	volatile char *p = malloc(n);
	if (!p)
		return 1;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	free((void *)p);
	exit(6);
}
