/* cli_bytes.h - the one way both commands print a byte count: "512 B", "4.3 KiB", "18.2 MiB",
 * "1.5 GiB" (powers of 1024, one decimal), and a range of two: "1.8 MiB to 2.1 MiB", or one
 * figure when both ends print the same. trace-run's last line and trace-dump summary give the
 * same peak in the same words (peak.h).
 * Threads: any; reentrant (the caller's buffer).
 */
#ifndef TRC_CLI_BYTES_H
#define TRC_CLI_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Writes bytes into buf (32 bytes are enough); returns buf. */
const char *cli_fmt_bytes(char *buf, size_t len, uint64_t bytes);

/* "LOW to HIGH", or "LOW" when the two print alike (64 bytes are enough); returns buf. */
const char *cli_fmt_bytes_range(char *buf, size_t len, uint64_t low, uint64_t high);

/* What of a peak was not believed (peak.h: hwm_refused, PEAK_HWM_REFUSED, with
 * the figure refused; buffers, PEAK_BUFFERS_BOUNDED), in the words both commands print:
 * "a high-water mark of 4.0 EiB in its exit record is not believed", ...; "" when nothing was
 * (160 bytes are enough); returns buf. */
const char *cli_fmt_peak_doubt(char *buf, size_t len, bool hwm_refused, uint64_t refused_bytes,
			       bool buffers);

#endif /* TRC_CLI_BYTES_H */
