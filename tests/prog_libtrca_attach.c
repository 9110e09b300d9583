/* prog_libtrca_attach.c - a program linked with libtrc.a (no shared library, no rpath): emits one
 * instant and prints "enabled=N", whether the runtime attached to the session named in its
 * environment. The tests run it setuid to check that a privileged program ignores that
 * environment (secure_getenv). */
#include <stdio.h>

#include "trc.h"

int main(void)
{
	TRC_INSTANT("libtrca.attach", 1);
	printf("enabled=%d\n", trc_enabled());
	return 0;
}
