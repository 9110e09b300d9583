/* export_text.c - the text exporters' buffered writer and formats (export_text.h).
 *
 * Threads: no globals; a writer belongs to one export.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "export_text.h"

void export__text_direct(struct export_text *t, const void *p, size_t n)
{
	if (t->err || !n)
		return;
	t->err = t->sink->write(t->sink->ctx, p, n);
	t->file_bytes += n;
}

void export_text_flush(struct export_text *t)
{
	size_t n = t->len;
	t->len = 0;
	export__text_direct(t, t->buf, n);
}

void export_text_printf(struct export_text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, EXPORT_TEXT_BYTES - t->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < EXPORT_TEXT_BYTES - t->len) {
		t->len += (size_t)n;
		return;
	}
	/* Did not fit: flush and format again, into the buffer or a temporary. */
	export_text_flush(t);
	va_start(ap, fmt);
	if ((size_t)n < EXPORT_TEXT_BYTES) {
		vsnprintf(t->buf, EXPORT_TEXT_BYTES, fmt, ap);
		t->len = (size_t)n;
	} else {
		char *tmp = malloc((size_t)n + 1);
		if (tmp) {
			vsnprintf(tmp, (size_t)n + 1, fmt, ap);
			export__text_direct(t, tmp, (size_t)n);
			free(tmp);
		}
	}
	va_end(ap);
}

static char *export__text_utoa_rev(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void export_text_u64(struct export_text *t, uint64_t v)
{
	char b[24];
	char *p = export__text_utoa_rev(b + sizeof(b), v);
	export_text_write(t, p, (size_t)(b + sizeof(b) - p));
}

void export_text_i64(struct export_text *t, int64_t v)
{
	if (v < 0) {
		export_text_char(t, '-');
		export_text_u64(t, -(uint64_t)v);
	} else {
		export_text_u64(t, (uint64_t)v);
	}
}

/* whole.frac with `digits` fractional digits of a value in units of 10^digits. */
static void export__text_fixed(struct export_text *t, int64_t v, unsigned digits, uint64_t scale)
{
	char b[48];
	char *end = b + sizeof(b), *p = end;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	uint64_t frac = u % scale, whole = u / scale;
	for (unsigned i = 0; i < digits; i++) {
		*--p = (char)('0' + frac % 10);
		frac /= 10;
	}
	*--p = '.';
	p = export__text_utoa_rev(p, whole);
	if (v < 0)
		*--p = '-';
	export_text_write(t, p, (size_t)(end - p));
}

void export_text_micros(struct export_text *t, int64_t ns)
{
	export__text_fixed(t, ns, 3, 1000ull);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t export__text_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void export_text_json_str(struct export_text *t, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	export_text_char(t, '"');
	size_t i = 0;
	while (i < n) {
		/* Runs of plain ASCII go out in one copy. */
		size_t j = i;
		while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
			j++;
		if (j > i) {
			export_text_write(t, s + i, j - i);
			i = j;
			continue;
		}
		unsigned c = s[i];
		if (c == '"' || c == '\\') {
			export_text_char(t, '\\');
			export_text_char(t, (char)c);
			i++;
		} else if (c == '\n') {
			export_text_write(t, "\\n", 2);
			i++;
		} else if (c == '\t') {
			export_text_write(t, "\\t", 2);
			i++;
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			export_text_write(t, e, 6);
			i++;
		} else {
			size_t len = export__text_utf8_len(s + i, n - i);
			if (len) {
				export_text_write(t, s + i, len);
				i += len;
			} else {
				char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				export_text_write(t, e, 6);
				i++;
			}
		}
	}
	export_text_char(t, '"');
}

