/* lib_deep.c - the deep end of bench/work_deep.c, a shared library built as distributions
 * build theirs (-O2, no frame pointers: the Makefile's STACK_CFLAGS), loaded by work_deep with
 * dlopen from its own directory.
 *
 * deep_alloc(PATH, DEPTH, SIZE) mallocs SIZE bytes under DEPTH frames of deep_x and deep_y:
 * level L is deep_y when bit L % 3 of PATH is set, else deep_x (frames of two sizes), so PATH
 * 0-7 are eight distinct stacks of the same depth. A volatile store after each call keeps each
 * call a real one (no tail call, no loop); noipa keeps the names. */
#include <stdlib.h>

void *deep_alloc(int path, int depth, size_t size);

void *volatile deep_sink;

static void *deep_y(int path, int level, int depth, size_t size);

__attribute__((noipa)) static void *deep_next(int path, int level, int depth, size_t size);

__attribute__((noipa)) static void *deep_x(int path, int level, int depth, size_t size)
{
	void *p = deep_next(path, level + 1, depth, size);
	deep_sink = p;
	return p;
}

__attribute__((noipa)) static void *deep_y(int path, int level, int depth, size_t size)
{
	volatile char pad[40];
	pad[0] = (char)level;
	void *p = deep_next(path, level + 1, depth, size);
	deep_sink = p;
	pad[1] = pad[0];
	return p;
}

__attribute__((noipa)) static void *deep_next(int path, int level, int depth, size_t size)
{
	if (level >= depth)
		return malloc(size);
	return (path >> (level % 3)) & 1 ? deep_y(path, level, depth, size)
					 : deep_x(path, level, depth, size);
}

__attribute__((noipa)) void *deep_alloc(int path, int depth, size_t size)
{
	void *p = deep_next(path, 0, depth, size);
	deep_sink = p;
	return p;
}
