/* prog_alloc_mimalloc.c - prog_alloc_common.h linked with mimalloc (Makefile:
 * PROG_ALLOC_LIBS_mimalloc). */
#include "prog_alloc_common.h"
