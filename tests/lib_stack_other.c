/* lib_stack_other.c - a second plugin for prog_stack_dl, of another layout than
 * lib_stack_plugin.so (a larger frame, other functions): loaded where that one was, after it
 * was unloaded, so that unwind rules kept for the old library's addresses would be wrong here. */
#include <stdlib.h>
#include <string.h>

void *other_alloc(int depth, size_t size);

void *volatile other_sink;

__attribute__((noipa)) static void *other_leaf(size_t size)
{
	char pad[200];
	memset(pad, (int)size, sizeof(pad));
	other_sink = pad;
	void *p = malloc(size);
	other_sink = p;
	return p;
}

__attribute__((noipa)) static void *other_recurse(int depth, size_t size)
{
	char pad[72];
	memset(pad, depth, sizeof(pad));
	other_sink = pad;
	void *p = depth <= 1 ? other_leaf(size) : other_recurse(depth - 1, size);
	other_sink = p;
	return p;
}

__attribute__((noipa)) void *other_alloc(int depth, size_t size)
{
	void *p = other_recurse(depth, size);
	other_sink = p;
	return p;
}
