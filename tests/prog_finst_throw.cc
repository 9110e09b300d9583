// prog_finst_throw.cc - a C++ exception thrown through instrumented frames (Makefile: tests/
// prog_*.cc, built with -finstrument-functions), for tests/test_calltrees.c: main calls
// catcher() twice; each time catcher() calls l1() -> l2() -> l3(), which throws, and catches
// it three frames up, then calls handled(). Prints "caught=2" and exits 0.
#include <cstdio>
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) static void l3(int i)
{
	sink = sink + i;
	throw std::runtime_error("from l3");
}

__attribute__((noinline)) static void l2(int i)
{
	l3(i);
	sink = sink + 1;
}

__attribute__((noinline)) static void l1(int i)
{
	l2(i);
	sink = sink + 1;
}

__attribute__((noinline)) static void handled()
{
	sink = sink + 1;
}

__attribute__((noinline)) static int catcher(int i)
{
	try {
		l1(i);
	} catch (const std::exception &) {
		handled();
		return 1;
	}
	return 0;
}

int main()
{
	int caught = catcher(1) + catcher(2);
	std::printf("caught=%d\n", caught);
	return 0;
}
