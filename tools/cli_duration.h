/* duration.h - parsers of the sampler's command-line values: --rss-interval, --rss-source.
 *
 * Purpose: one parser for every duration a user types ("100ms", "0.5s"), so zero, negative,
 * non-finite, out-of-range and garbage values are rejected the same way everywhere, with a
 * message that names the value and the accepted range. Pure functions: no I/O, no state.
 *
 * Grammar:  DIGITS [ "." DIGITS ] UNIT   with UNIT one of  ns  us  ms  s
 *   - A unit is required: a bare number ("100") is rejected, because the two readings a user
 *     might mean (100 ms, 100 s) differ a thousandfold and both lie inside the range.
 *   - Exact decimal arithmetic, no floating point: "0.1s" is exactly 100000000 ns. A value
 *     with a non-zero digit finer than one nanosecond is rejected, never rounded.
 *   - No sign, exponent, spaces or hexadecimal: "-1s", "+1s", "1e3ms", " 1s", "nan", "inf"
 *     are all rejected.
 * Errors: -EINVAL for text that is not a duration (garbage, empty, NaN, infinite, missing
 * unit), -ERANGE for a duration outside [min_ns, max_ns] (zero, negative, too small, too
 * large, or too many digits to represent).
 *
 * Threads: any; reentrant.
 */
#ifndef TRC_DURATION_H
#define TRC_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "trc/wire.h" /* enum trc_rss_source */


/* Parses text into *out_ns. Returns 0, or -EINVAL / -ERANGE with a one-line message naming
 * the value and the accepted range written into msg (msg_len bytes, always NUL-terminated;
 * msg may be NULL). *out_ns is written only on success. min_ns > max_ns is -EINVAL. */
int duration_parse_ns(const char *text, uint64_t min_ns, uint64_t max_ns, uint64_t *out_ns,
		      char *msg, size_t msg_len);

/* Writes ns in the largest unit that shows it exactly ("100ms", "3600s", "1500ns") into buf.
 * Returns buf. */
char *duration_format_ns(uint64_t ns, char *buf, size_t buf_len);

#endif /* TRC_DURATION_H */
