/* prog_stack_dl.c - allocations from libraries loaded and unloaded while traced
 * (tests/test_alloc_stacks.c), from the program's own directory; first, in both modes,
 * dlopen lib_stack_plugin.so, 5 x plugin_alloc(3, 4001), dlclose. Then:
 *   prog_stack_dl moved    the first page the library had is taken (an inaccessible
 *       mapping), so that dlopen puts it elsewhere: dlopen again, 5 x plugin_alloc(3, 4002),
 *       dlclose. Prints "dl moved" (exit 3 when it was not loaded elsewhere).
 *   prog_stack_dl reused   dlopen lib_stack_other.so (another layout) where the first one
 *       was, 5 x other_alloc(4, 4003), dlclose. Prints "dl reused" (exit 3 when the loader
 *       put it elsewhere). */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char dir[PATH_MAX];

typedef void *(*alloc_fn)(int, size_t);

__attribute__((noipa)) static uintptr_t use_lib(const char *name, const char *sym, int depth,
						size_t size)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(1);
	}
	alloc_fn f = (alloc_fn)(uintptr_t)dlsym(h, sym);
	Dl_info info;
	if (!f || !dladdr((void *)(uintptr_t)f, &info))
		exit(1);
	for (int i = 0; i < 5; i++)
		free(f(depth, size));
	dlclose(h);
	return (uintptr_t)info.dli_fbase;
}

int main(int argc, char **argv)
{
	bool moved = argc == 2 && strcmp(argv[1], "moved") == 0;
	if (!moved && !(argc == 2 && strcmp(argv[1], "reused") == 0)) {
		fprintf(stderr, "usage: prog_stack_dl moved|reused\n");
		return 2;
	}
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return 1;
	dir[n] = 0;
	*strrchr(dir, '/') = 0;
	uintptr_t first = use_lib("lib_stack_plugin.so", "plugin_alloc", 3, 4001);
	if (!moved) {
		uintptr_t other = use_lib("lib_stack_other.so", "other_alloc", 4, 4003);
		if (other != first)
			return 3;
		printf("dl reused\n");
		return 0;
	}
	const size_t span = 4096; /* its first page: the whole library no longer fits there */
	void *block = mmap((void *)first, span, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (block == MAP_FAILED)
		return 1;
	uintptr_t second = use_lib("lib_stack_plugin.so", "plugin_alloc", 3, 4002);
	munmap(block, span);
	if (second == first)
		return 3;
	printf("dl moved\n");
	return 0;
}
