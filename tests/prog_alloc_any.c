/* prog_alloc_any.c - prog_alloc_common.h linked with no allocator of its own: run with one in
 * LD_PRELOAD, it checks that allocator is in charge. */
#include "prog_alloc_common.h"
