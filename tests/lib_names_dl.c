/* lib_names_dl.c - a shared library built with -finstrument-functions that prog_finst_names
 * loads with dlopen after it has started (its MODULE record comes from the preload library's
 * dlopen hook): names_dl_triple, and a static helper names_dl_helper that only the symbol
 * table (not the dynamic one) names. */
__attribute__((noinline)) static int names_dl_helper(int x)
{
	return x + x;
}

__attribute__((noinline)) int names_dl_triple(int x);

__attribute__((noinline)) int names_dl_triple(int x)
{
	return names_dl_helper(x) + x;
}
