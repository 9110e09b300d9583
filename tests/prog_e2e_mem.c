/* prog_e2e_mem.c - allocates and touches MIB mebibytes, holds them HOLD_MS, frees them and
 * exits: `prog_e2e_mem MIB HOLD_MS`. A known peak for the RSS tests (compared against
 * /usr/bin/time -v of the same program run without tracing). Emits a span around the work so
 * the trace has events and rings in use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trc.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: prog_e2e_mem MIB HOLD_MS\n");
		return 2;
	}
	size_t mib = (size_t)atol(argv[1]);
	long hold_ms = atol(argv[2]);
	TRC_BEGIN("touch");
	char *p = malloc(mib << 20);
	if (!p)
		return 1;
	/* through a volatile pointer, so the compiler cannot drop the malloc/touch/free */
	volatile char *vp = p;
	for (size_t off = 0; off < (mib << 20); off += 4096)
		vp[off] = (char)(off >> 12);
	TRC_END("touch");
	TRC_COUNTER("mib", (long)mib);
	struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	free(p);
	printf("touched %zu MiB\n", mib);
	return 0;
}
