/* cli_bytes.c - byte counts as both commands print them (cli_bytes.h). */
#include "cli_bytes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *cli_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes;
	unsigned u = 0;
	v /= 1024;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const char *cli_fmt_bytes_range(char *buf, size_t len, uint64_t low, uint64_t high)
{
	char a[32], b[32];
	cli_fmt_bytes(a, sizeof(a), low);
	cli_fmt_bytes(b, sizeof(b), high);
	if (strcmp(a, b) == 0)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s to %s", a, b);
	return buf;
}

const char *cli_fmt_peak_doubt(char *buf, size_t len, bool hwm, uint64_t refused_bytes,
			       bool buffers)
{
	char h[32];
	snprintf(buf, len, "%s%s%s%s", hwm ? "a high-water mark of " : "",
		 hwm ? cli_fmt_bytes(h, sizeof(h), refused_bytes) : "",
		 hwm ? " in its exit record is not believed" : "",
		 buffers ? (hwm ? "; its trace buffers' most is above its high-water mark: "
				  "not believed"
				: "its trace buffers' most is above its high-water mark: not "
				  "believed")
			 : "");
	return buf;
}
