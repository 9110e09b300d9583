// prog_stack_cxx.cc - a C++ program whose dlopen()ed plugin (lib_stack_throw.so, found beside
// it) throws exceptions, caught in the plugin and several frames up in the program
// (tests/test_alloc_stacks.c): what it prints is the same traced (with allocation stacks) and
// untraced. It prints first which library the plugin's throws go through (the one that
// defines _Unwind_RaiseException in the program's lookup order: libgcc_s, unless another
// unwinder took over). prog_stack_cxx ROUNDS
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

typedef std::vector<std::string> *(*round_fn)(int);

__attribute__((noipa)) static int run_round(round_fn f, int round)
{
	std::vector<std::string> *log = f(round);
	for (const std::string &line : *log)
		std::printf("%s\n", line.c_str());
	int n = (int)log->size();
	delete log;
	return n;
}

__attribute__((noipa)) static int guarded(round_fn f, int round)
{
	try {
		return run_round(f, round);
	} catch (const std::exception &e) {
		std::printf("caught in the program: %s\n", e.what());
		return -1;
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 30;
	char dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return 1;
	dir[n] = 0;
	std::string path = std::string(dir, std::string(dir).rfind('/')) + "/lib_stack_throw.so";
	void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		std::fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	Dl_info info;
	void *raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
	const char *unwinder = raise && dladdr(raise, &info) && info.dli_fname ? info.dli_fname : "?";
	std::printf("unwinder %s\n", std::strrchr(unwinder, '/') ? std::strrchr(unwinder, '/') + 1
								 : unwinder);
	round_fn f = (round_fn)dlsym(h, "plugin_round");
	if (!f)
		return 1;
	long total = 0;
	int thrown = 0;
	for (int r = 0; r < rounds; r++) {
		int got = guarded(f, r);
		if (got < 0)
			thrown++;
		else
			total += got;
	}
	std::printf("rounds %d lines %ld thrown %d\n", rounds, total, thrown);
	dlclose(h);
	return 0;
}
