/* cli_size.h - the one parser of byte sizes a user types, in both commands: trace-run
 * --buffer-size, trace-dump chrome/perfetto --split-size.
 *
 * Grammar: DIGITS [K|M|G] [i] [B]  (case-insensitive unit; powers of 1024: "4M" = "4MiB" =
 * 4194304; a bare number is bytes). No sign, spaces or fractions.
 * Errors: -EINVAL for text that is not a size, -ERANGE for one above 2^64 - 1.
 * Threads: any; reentrant.
 */
#ifndef TRC_CLI_SIZE_H
#define TRC_CLI_SIZE_H

#include <stdint.h>

/* Parses "4M", "64K", "1G", "65536" into bytes. 0 or -EINVAL / -ERANGE; *out only on 0. */
int cli_parse_size(const char *text, uint64_t *out);

#endif /* TRC_CLI_SIZE_H */
