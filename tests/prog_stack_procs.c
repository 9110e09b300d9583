/* prog_stack_procs.c - allocations of known stacks before and after fork and exec
 * (tests/test_alloc_stacks.c):
 *   prog_stack_procs fork   the parent mallocs 10 x 2001 B under stack_a_enter(5) (its
 *       capture caches that stack and numbers it), forks; the child mallocs 10 x 2002 B from
 *       the same call, under the same stack (which its capture must number afresh: the
 *       parent's ids mean nothing in the child's ring), then 10 x 2003 B under
 *       in_child;alloc_n;stack_a_enter(9); the parent 10 x 2004 B under stack_a_enter(7)
 *       while the child runs.
 *   prog_stack_procs exec   mallocs 10 x 3001 B under stack_a_enter(4), then execs itself as
 *       "prog_stack_procs after-exec", which mallocs 10 x 3002 B under stack_a_enter(6).
 * Prints one line per process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *stack_a_enter(int depth, size_t size);

void *volatile procs_sink;
static volatile int procs_rounds = 2;

__attribute__((noipa)) static void alloc_n(int depth, size_t size)
{
	for (int i = 0; i < 10; i++)
		procs_sink = stack_a_enter(depth, size);
}

__attribute__((noipa)) static void in_child(void)
{
	alloc_n(9, 2003);
	procs_sink = 0;
}

__attribute__((noipa)) static int do_fork(void)
{
	pid_t pid = 1;
	/* A trip count the compiler cannot know: the loop is not peeled, so both rounds make
	 * their allocations from the one call below. */
	for (int round = 0; round < procs_rounds; round++) {
		if (round == 1) {
			fflush(stdout);
			pid = fork();
			if (pid < 0)
				return 1;
		}
		if (pid == 0 || round == 0)
			alloc_n(5, round == 0 ? 2001 : 2002); /* one call: one stack in both */
	}
	if (pid == 0) {
		in_child();
		printf("child done\n");
		exit(0);
	}
	alloc_n(7, 2004);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("parent done\n");
	return 0;
}

__attribute__((noipa)) static int do_exec(const char *self)
{
	alloc_n(4, 3001);
	printf("before exec\n");
	fflush(stdout);
	execl(self, "prog_stack_procs", "after-exec", (char *)NULL);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "fork") == 0)
		return do_fork();
	if (argc == 2 && strcmp(argv[1], "exec") == 0)
		return do_exec("/proc/self/exe");
	if (argc == 2 && strcmp(argv[1], "after-exec") == 0) {
		alloc_n(6, 3002);
		printf("after exec\n");
		return 0;
	}
	fprintf(stderr, "usage: prog_stack_procs fork|exec\n");
	return 2;
}
