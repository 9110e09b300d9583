/* lib_stack_plugin.c - a library prog_stack_dl loads with dlopen, unloads and loads again
 * (tests/test_alloc_stacks.c): plugin_alloc(DEPTH, SIZE) mallocs SIZE bytes under DEPTH frames
 * of plugin_recurse. No frame pointers: its unwind tables come and go with it. */
#include <stdlib.h>

void *plugin_alloc(int depth, size_t size);

void *volatile plugin_sink;

__attribute__((noipa)) static void *plugin_recurse(int depth, size_t size)
{
	void *p = depth <= 1 ? malloc(size) : plugin_recurse(depth - 1, size);
	plugin_sink = p;
	return p;
}

__attribute__((noipa)) void *plugin_alloc(int depth, size_t size)
{
	void *p = plugin_recurse(depth, size);
	plugin_sink = p;
	return p;
}
