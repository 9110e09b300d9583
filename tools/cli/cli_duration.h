/* cli_duration.h - the one parser of every duration a user types, in both commands:
 * trace-run --rss-interval, trace-dump events --from / --to.
 *
 * Purpose: one rule everywhere, so zero, negative, non-finite, out-of-range, unitless and
 * garbage values are rejected the same way in every tool, with a message that names the value
 * and what would be accepted. Pure functions: no I/O, no state.
 *
 * Grammar:  DIGITS [ "." DIGITS ] UNIT   with UNIT one of  ns  us  ms  s  m  h
 *   - A unit is required: a bare number ("100") is rejected in every tool, because the
 *     readings a user might mean (100 ms, 100 s) differ a thousandfold and often both lie
 *     inside the range. The message suggests the units that would give an accepted value:
 *     "100" has no unit; write 100ns, 100us, 100ms or 100s
 *   - m is minutes, h is hours (1h = 60m = 3600s).
 *   - Exact decimal arithmetic, no floating point: "0.1s" is exactly 100000000 ns and "0.5m"
 *     exactly 30 s. A value that does not name a whole number of nanoseconds ("1.5ns",
 *     "1.0000000001s") is rejected, never rounded.
 *   - No sign, exponent, spaces or hexadecimal: "-1s", "+1s", "1e3ms", " 1s", "nan", "inf"
 *     are all rejected.
 * Errors: -EINVAL for text that is not a duration (garbage, empty, NaN, infinite, missing
 * unit, finer than 1 ns), -ERANGE for a duration outside [min_ns, max_ns] (zero, negative,
 * too small, too large, or too many digits to represent).
 * Messages (one line, no trailing newline; the caller prefixes the option's name):
 *   "100" has no unit; write 100ms or 100s          (the suggestions that are in range)
 *   "0" has no unit; accepted: 1ms to 1h, with a unit (ns, us, ms, s, m, h)   (none is)
 *   invalid duration "fast": not a number; accepted: 1ms to 1h, with a unit (ns, us, ms, s, m, h)
 *
 * Threads: any; reentrant.
 */
#ifndef TRC_CLI_DURATION_H
#define TRC_CLI_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "trc/wire.h" /* TRC_RSS_INTERVAL_MIN_NS, _MAX_NS */

/* Parses text into *out_ns. Returns 0, or -EINVAL / -ERANGE with a one-line message (see
 * above) written into msg (msg_len bytes, always NUL-terminated; msg may be NULL). *out_ns is
 * written only on success. min_ns > max_ns is -EINVAL. */
int duration_parse_ns(const char *text, uint64_t min_ns, uint64_t max_ns, uint64_t *out_ns,
		      char *msg, size_t msg_len);

/* Writes ns in the largest unit that shows it exactly ("100ms", "1h", "90s", "1500ns") into
 * buf. Returns buf. */
char *duration_format_ns(uint64_t ns, char *buf, size_t buf_len);

#endif /* TRC_CLI_DURATION_H */
