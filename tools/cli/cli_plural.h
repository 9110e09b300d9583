/* cli_plural.h - counts that agree in number in what the commands print: "1 sample",
 * "2 samples", "0 samples". */
#ifndef TRC_CLI_PLURAL_H
#define TRC_CLI_PLURAL_H

#include <stdint.h>

/* one when n is 1, many otherwise: printf("%" PRIu64 " %s", n, cli_plural(n, "chunk",
 * "chunks")). */
static inline const char *cli_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif /* TRC_CLI_PLURAL_H */
