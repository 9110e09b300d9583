/* export_text.h - a buffered text writer onto an export's sink, with the number and JSON
 * string formats of the text exporters (chrome), byte for byte those of trace-dump's own
 * output (tools/dump/dump_out.c).
 *
 * Purpose: the JSON exporter writes many small pieces an event; they go into a 64 KiB buffer
 * handed to the sink when full (export_text_flush), numbers formatted by hand (printf is most
 * of the time otherwise). Errors: the sink's first error is kept (err, sticky); later writes
 * are dropped, and the exporter checks err at record boundaries. file_bytes counts what the
 * current file holds (handed over plus buffered: export_text_size), for splits.
 * Threads: a writer belongs to one export.
 */
#ifndef TRC_EXPORT_TEXT_H
#define TRC_EXPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export.h"

#define EXPORT_TEXT_BYTES (64u << 10)

struct export_text {
	const struct export_sink *sink;
	int err; /* the sink's first error */
	uint64_t file_bytes; /* handed to the sink since the file began */
	size_t len;
	char buf[EXPORT_TEXT_BYTES];
};

/* Hands the buffer to the sink. */
void export_text_flush(struct export_text *t);
/* Writes p straight to the sink (after export_text_flush). */
void export__text_direct(struct export_text *t, const void *p, size_t n);

static inline void export_text_write(struct export_text *t, const void *p, size_t n)
{
	if (n > EXPORT_TEXT_BYTES - t->len) {
		export_text_flush(t);
		if (n > EXPORT_TEXT_BYTES) {
			export__text_direct(t, p, n);
			return;
		}
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

static inline void export_text_str(struct export_text *t, const char *s)
{
	export_text_write(t, s, strlen(s));
}

static inline void export_text_char(struct export_text *t, char c)
{
	if (t->len == EXPORT_TEXT_BYTES)
		export_text_flush(t);
	t->buf[t->len++] = c;
}

/* The bytes of the current file: handed over and buffered. */
static inline uint64_t export_text_size(const struct export_text *t)
{
	return t->file_bytes + t->len;
}

void export_text_printf(struct export_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void export_text_u64(struct export_text *t, uint64_t v);
void export_text_i64(struct export_text *t, int64_t v);
/* A signed nanosecond count as microseconds with 3 decimals ("1234.567"). */
void export_text_micros(struct export_text *t, int64_t ns);
/* A JSON string literal (quotes included): escapes ", \ and control bytes, and writes bytes
 * that are not valid UTF-8 as \u00XX so strict parsers accept the output. */
void export_text_json_str(struct export_text *t, const char *s, size_t len);

#endif /* TRC_EXPORT_TEXT_H */
