/* prog_finst_names.c - function names from three modules (Makefile: prog_finst_* get
 * -finstrument-functions; this one links build/tests/lib_names_linked.so): its own static
 * function names_local_add, names_linked_square of a library linked at start, and
 * names_dl_triple of lib_names_dl.so, which it loads with dlopen after its first events
 * (from the directory of its own executable). Prints "sum=S" and exits 0; 1 when the
 * library cannot be loaded. `prog_finst_names nodl` skips the dlopen. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int names_linked_square(int x);

__attribute__((noinline)) static int names_local_add(int a, int b)
{
	return a + b;
}

int main(int argc, char **argv)
{
	int sum = names_local_add(1, 2);
	sum = names_local_add(sum, names_linked_square(3));
	if (argc > 1 && strcmp(argv[1], "nodl") == 0) {
		printf("sum=%d\n", sum);
		return 0;
	}
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = 0;
	char *slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "lib_names_dl.so");
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "prog_finst_names: %s\n", dlerror());
		return 1;
	}
	int (*triple)(int) = (int (*)(int))dlsym(h, "names_dl_triple");
	if (!triple)
		return 1;
	sum = names_local_add(sum, triple(5));
	printf("sum=%d\n", sum);
	return 0;
}
