/* lib_names_linked.c - a shared library built with -finstrument-functions and linked at start
 * by prog_finst_names (Makefile: tests/lib_*.c -> build/tests/lib_*.so), so trace-dump must
 * name a function of a module other than the executable: names_linked_square. */
__attribute__((noinline)) int names_linked_square(int x);

__attribute__((noinline)) int names_linked_square(int x)
{
	return x * x;
}
