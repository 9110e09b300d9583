/* prog_alloc_tcmalloc.c - prog_alloc_common.h linked with tcmalloc (Makefile:
 * PROG_ALLOC_LIBS_tcmalloc). */
#include "prog_alloc_common.h"
