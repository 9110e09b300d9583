/* lib_stack_b.c - the deep end of the call stacks tests/test_alloc_stacks.c knows, in a shared
 * library built as distributions build theirs (-O2, no frame pointers, no instrumentation):
 * stack_b_recurse(DEPTH, SIZE) is DEPTH frames of itself over stack_b_leaf, which mallocs SIZE
 * bytes. A volatile store after each call keeps every call a real call (no tail call, no loop),
 * and noipa keeps the names the symbol table gives (no clones, no inlining). */
#include <stdlib.h>

void *stack_b_leaf(size_t size);
void *stack_b_recurse(int depth, size_t size);

void *volatile stack_b_sink;

__attribute__((noipa)) void *stack_b_leaf(size_t size)
{
	char *p = malloc(size);
	if (p)
		p[0] = 1;
	stack_b_sink = p;
	return p;
}

__attribute__((noipa)) void *stack_b_recurse(int depth, size_t size)
{
	void *p = depth <= 1 ? stack_b_leaf(size) : stack_b_recurse(depth - 1, size);
	stack_b_sink = p;
	return p;
}
