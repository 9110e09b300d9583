/* prog_static_mem.c - a statically linked program (the preload library cannot enter it):
 * touches MIB mebibytes, holds them HOLD_MS, exits 0. `prog_static_mem MIB HOLD_MS` */
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 16;
	long hold_ms = argc > 2 ? atol(argv[2]) : 300;
	char *p = malloc(mib << 20);
	if (!p)
		return 1;
	memset(p, 1, mib << 20);
	/* read it back through a volatile pointer, so the compiler cannot drop the pages */
	volatile char *vp = p;
	long sum = 0;
	for (size_t off = 0; off < (mib << 20); off += 4096)
		sum += vp[off];
	if (sum == 42)
		return 3;
	struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	free(p);
	return 0;
}
