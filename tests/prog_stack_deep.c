/* prog_stack_deep.c - allocations of known call stacks, through two shared libraries built
 * without frame pointers (tests/test_alloc_stacks.c):
 *   prog_stack_deep DEPTH COUNT SIZE [HOLD_MS]   COUNT mallocs of SIZE bytes, each under
 *       main;run_deep;stack_a_enter;stack_b_recurse (DEPTH times);stack_b_leaf
 *       all kept live (and touched) for HOLD_MS (default 0) before exit, so that RSS samples
 *       see them.
 * Prints "deep DEPTH COUNT SIZE". Built -O2 without frame pointers and without sanitizers (as a
 * user's program is); noipa keeps each frame a frame of its own name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *stack_a_enter(int depth, size_t size);

void *volatile deep_sink;

__attribute__((noipa)) static void run_deep(int depth, int count, size_t size)
{
	for (int i = 0; i < count; i++) {
		char *p = stack_a_enter(depth, size); /* kept: live at the peak */
		if (p)
			memset(p, 1, size);
		deep_sink = p;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: prog_stack_deep DEPTH COUNT SIZE [HOLD_MS]\n");
		return 2;
	}
	int depth = atoi(argv[1]), count = atoi(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	long hold_ms = argc == 5 ? atol(argv[4]) : 0;
	run_deep(depth, count, size);
	struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	printf("deep %d %d %zu\n", depth, count, size);
	return 0;
}
