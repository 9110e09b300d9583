// prog_finst_cxx.cc - a C++ program built with -finstrument-functions (Makefile: tests/prog_*.cc
// with g++), so trace-dump must demangle: a namespaced class's member function
// names_cxx::Counter::bump(int), a template instance names_cxx::twice<long>(long) and a name
// longer than summary's text column. Prints "total=T" and exits 0.
#include <cstdio>

namespace names_cxx
{
class Counter
{
      public:
	__attribute__((noinline)) long bump(int by)
	{
		total_ += by;
		return total_;
	}

      private:
	long total_ = 0;
};

template <typename T> __attribute__((noinline)) T twice(T v)
{
	return v + v;
}
namespace a_namespace_whose_name_runs_long
{
// Its demangled name is longer than trace-dump summary's name column.
__attribute__((noinline)) long a_function_whose_name_runs_long_too(long a, long b)
{
	return a * b;
}
} // namespace a_namespace_whose_name_runs_long
} // namespace names_cxx

int main()
{
	names_cxx::Counter c;
	c.bump(2);
	long t = names_cxx::twice<long>(c.bump(3));
	t += names_cxx::a_namespace_whose_name_runs_long::a_function_whose_name_runs_long_too(t, 1);
	std::printf("total=%ld\n", t);
	return 0;
}
