/* lib_stack_a.c - the entry of the known call stacks (tests/test_alloc_stacks.c): a shared
 * library without frame pointers whose stack_a_enter(DEPTH, SIZE) calls into another one,
 * lib_stack_b.so (stack_b_recurse DEPTH frames deep, then stack_b_leaf's malloc). */
#include <stddef.h>

void *stack_b_recurse(int depth, size_t size);
void *stack_a_enter(int depth, size_t size);

void *volatile stack_a_sink;

__attribute__((noipa)) void *stack_a_enter(int depth, size_t size)
{
	void *p = stack_b_recurse(depth, size);
	stack_a_sink = p;
	return p;
}
