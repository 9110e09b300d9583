// lib_stack_throw.cc - a C++ plugin that prog_stack_cxx loads with dlopen (tests/
// test_alloc_stacks.c), built as a distribution builds one (-O2, no frame pointers): its
// exceptions unwind through its own frames (no frame pointers) and the program's, allocating
// as they go (std::string, std::vector, the exception objects themselves).
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Guard {
	std::vector<std::string> *log;
	int depth;
	~Guard() { log->push_back("unwound " + std::to_string(depth)); }
};

__attribute__((noipa)) int dive(int depth, int throw_at, std::vector<std::string> &log)
{
	Guard g{&log, depth};
	std::string frame(40 + depth, 'a' + depth % 26);
	if (depth == throw_at)
		throw std::runtime_error("thrown at depth " + std::to_string(depth) + " " + frame);
	if (depth == 0)
		return (int)frame.size();
	int r = dive(depth - 1, throw_at, log);
	return r + (int)frame.size();
}

__attribute__((noipa)) int catch_inside(int depth, std::vector<std::string> &log)
{
	try {
		return dive(depth, depth / 2, log);
	} catch (const std::runtime_error &e) {
		log.push_back(std::string("caught inside: ") + e.what());
		return -1;
	}
}

} // namespace

// Called through dlsym: the round's log, or an exception for the caller to catch.
extern "C" __attribute__((noipa)) std::vector<std::string> *plugin_round(int round)
{
	auto *log = new std::vector<std::string>;
	log->push_back("round " + std::to_string(round) + " inside " +
		       std::to_string(catch_inside(6 + round % 5, *log)));
	if (round % 3 == 2) {
		std::vector<std::string> lost;
		delete log;
		dive(5 + round % 4, 0, lost); // thrown to the program, several frames up
	}
	return log;
}
