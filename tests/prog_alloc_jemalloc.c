/* prog_alloc_jemalloc.c - prog_alloc_common.h linked with jemalloc (Makefile:
 * PROG_ALLOC_LIBS_jemalloc). */
#include "prog_alloc_common.h"
