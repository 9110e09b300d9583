/* dump_out.c - trace-dump's output buffer, number and string formatting, shared helpers.
 *
 * Purpose: see dump_common.h (output error policy, formats). Everything that prints to stdout
 * goes through dump_out so a closed pipe or a full disk is handled in one place.
 *
 * Threads: trace-dump is single-threaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli_plural.h"
#include "cli_usage.h"
#include "dump_common.h"
#include "export.h"

struct dump_out dump_out = {.fd = STDOUT_FILENO};

void dump_error(const char *fmt, ...)
{
	va_list ap;
	fputs("trace-dump: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void dump__write_fd(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(dump_out.fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			if (errno == EPIPE)
				_exit(DUMP_EXIT_PIPE); /* quiet: the reader went away */
			dump_error("writing output: %s", strerror(errno));
			_exit(DUMP_EXIT_FAIL);
		}
		p += w;
		n -= (size_t)w;
		dump_out.written += (uint64_t)w;
	}
}

void dump_flush(void)
{
	size_t n = dump_out.len;
	dump_out.len = 0;
	dump__write_fd(dump_out.buf, n);
}

void dump__write_direct(const void *p, size_t n)
{
	dump__write_fd(p, n);
}

void dump_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dump_out.buf + dump_out.len, DUMP_OUT_BYTES - dump_out.len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < DUMP_OUT_BYTES - dump_out.len) {
		dump_out.len += (size_t)n;
		return;
	}
	/* Did not fit: flush and format again, into the buffer or a temporary. */
	dump_flush();
	va_start(ap, fmt);
	if ((size_t)n < DUMP_OUT_BYTES) {
		vsnprintf(dump_out.buf, DUMP_OUT_BYTES, fmt, ap);
		dump_out.len = (size_t)n;
	} else {
		char *tmp = malloc((size_t)n + 1);
		if (tmp) {
			vsnprintf(tmp, (size_t)n + 1, fmt, ap);
			dump__write_direct(tmp, (size_t)n);
			free(tmp);
		}
	}
	va_end(ap);
}

/* ---- numbers ------------------------------------------------------------------------ */

static char *dump__utoa_rev(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

void dump_u64(uint64_t v)
{
	char b[24];
	char *p = dump__utoa_rev(b + sizeof(b), v);
	dump_write(p, (size_t)(b + sizeof(b) - p));
}

void dump_i64(int64_t v)
{
	if (v < 0) {
		dump_char('-');
		dump_u64(-(uint64_t)v);
	} else {
		dump_u64((uint64_t)v);
	}
}

void dump_hex(uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char b[20];
	char *p = b + sizeof(b);
	do {
		*--p = digits[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	dump_write(p, (size_t)(b + sizeof(b) - p));
}

/* whole.frac with `digits` fractional digits of a value in units of 10^digits. */
static void dump__fixed(int64_t v, unsigned digits, uint64_t scale)
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
	p = dump__utoa_rev(p, whole);
	if (v < 0)
		*--p = '-';
	dump_write(p, (size_t)(end - p));
}

void dump_seconds(int64_t ns)
{
	dump__fixed(ns, 9, 1000000000ull);
}

void dump_micros(int64_t ns)
{
	dump__fixed(ns, 3, 1000ull);
}

/* ---- strings ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t dump__utf8_len(const unsigned char *s, size_t n)
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

void dump_json_str(const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	dump_char('"');
	size_t i = 0;
	while (i < n) {
		/* Runs of plain ASCII go out in one copy. */
		size_t j = i;
		while (j < n && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
			j++;
		if (j > i) {
			dump_write(s + i, j - i);
			i = j;
			continue;
		}
		unsigned c = s[i];
		if (c == '"' || c == '\\') {
			dump_char('\\');
			dump_char((char)c);
			i++;
		} else if (c == '\n') {
			dump_write("\\n", 2);
			i++;
		} else if (c == '\t') {
			dump_write("\\t", 2);
			i++;
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			dump_write(e, 6);
			i++;
		} else {
			size_t len = dump__utf8_len(s + i, n - i);
			if (len) {
				dump_write(s + i, len);
				i += len;
			} else {
				char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
				dump_write(e, 6);
				i++;
			}
		}
	}
	dump_char('"');
}

void dump_text_str(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	dump_char('"');
	for (size_t i = 0; i < n; i++) {
		unsigned c = s[i];
		if (c == '"' || c == '\\') {
			dump_char('\\');
			dump_char((char)c);
		} else if (c == '\n') {
			dump_write("\\n", 2);
		} else if (c == '\t') {
			dump_write("\\t", 2);
		} else if (c < 0x20 || c == 0x7f) {
			dump_printf("\\x%02x", c);
		} else {
			dump_char((char)c); /* UTF-8 passes through to the terminal */
		}
	}
	dump_char('"');
}

void dump_cmdline(const char *s, size_t len)
{
	/* A trailing NUL terminates the last argument; others separate arguments. */
	if (len && s[len - 1] == 0)
		len--;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == 0)
			dump_char(' ');
		else if ((unsigned char)c < 0x20 || c == 0x7f)
			dump_char('?');
		else
			dump_char(c);
	}
}

const char *dump_fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	return buf;
}

/* ---- usage errors ------------------------------------------------------------------------ */

/* "trace-dump CMD" for the messages. */
static const char *dump__prog(const char *cmd, char *buf, size_t len)
{
	snprintf(buf, len, "trace-dump %.40s", cmd);
	return buf;
}

int dump_usage_error(const char *cmd, const char *fmt, ...)
{
	char prog[64], msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_usage_error(dump__prog(cmd, prog, sizeof(prog)), "%s", msg);
	return DUMP_EXIT_USAGE;
}

int dump_refused_option(const char *cmd, int c, char **argv, const struct option *opts)
{
	char msg[320];
	cli_refused_option(c, argv, opts, msg, sizeof(msg));
	return dump_usage_error(cmd, "%s", msg);
}

bool dump_value_missing(const char *cmd, char **argv)
{
	char msg[320];
	if (!cli_value_missing(optarg, argv, msg, sizeof(msg)))
		return false;
	dump_usage_error(cmd, "%s", msg);
	return true;
}

const char *dump_file_operand(const char *cmd, int argc, char **argv)
{
	if (optind == argc - 1)
		return argv[optind];
	if (optind >= argc)
		dump_usage_error(cmd, "no FILE given");
	else
		dump_usage_error(cmd, "one FILE expected, got %d: \"%s\", \"%s\"%s", argc - optind,
				 argv[optind], argv[optind + 1], argc - optind > 2 ? "..." : "");
	return NULL;
}

/* ---- shared reader helpers -------------------------------------------------------------- */

struct trcfile_reader *dump_open(const char *path, bool quiet)
{
	struct trcfile_reader *r = NULL;
	char msg[600];
	int err = trcfile_reader_open(path, &r, msg, sizeof(msg));
	if (err) {
		/* The path is part of the message when open(2) itself failed. */
		if (!strncmp(msg, path, strlen(path)))
			dump_error("%s", msg);
		else
			dump_error("%s: %s", path, msg);
		return NULL;
	}
	if (!quiet && trcfile_reader_truncated(r)) {
		struct trcfile_reader_stats st;
		trcfile_reader_get_stats(r, &st);
		dump_error("warning: %s is truncated (%s): read %" PRIu64 " %s, %" PRIu64
			   " %s; %" PRIu64 " %s at the end ignored (stopped at: %s)",
			   path,
			   st.footer_damaged ? "damaged footer" : "no footer, recorder killed?",
			   st.chunks, cli_plural(st.chunks, "chunk", "chunks"), st.records,
			   cli_plural(st.records, "record", "records"), st.bytes_ignored,
			   cli_plural(st.bytes_ignored, "byte", "bytes"),
			   trcfile_reader_scan_stop(r));
	}
	if (!quiet) {
		struct trcfile_reader_stats st;
		trcfile_reader_get_stats(r, &st);
		if (st.chunks_missing)
			dump_error("warning: %s: %" PRIu64 " %s missing in the middle of streams",
				   path, st.chunks_missing,
				   cli_plural(st.chunks_missing, "chunk", "chunks"));
		if (st.meta_strings_cut || st.meta_entries_dropped)
			dump_error("warning: %s: %s", path, dump_meta_cut_note(&st));
	}
	return r;
}

const char *dump_meta_cut_note(const struct trcfile_reader_stats *st)
{
	static char note[256];
	snprintf(note, sizeof(note),
		 "metadata beyond the reader's bounds: %" PRIu64 " %s cut (%" PRIu64
		 " bytes), %" PRIu64 " %s dropped; events and figures are complete",
		 st->meta_strings_cut,
		 cli_plural(st->meta_strings_cut, "name or command line", "names or command lines"),
		 st->meta_bytes_cut, st->meta_entries_dropped,
		 cli_plural(st->meta_entries_dropped, "definition", "definitions"));
	return note;
}

void dump_close(struct trcfile_reader *r, const char *path)
{
	if (!r)
		return;
	struct trcfile_reader_stats st;
	trcfile_reader_get_stats(r, &st);
	if (st.chunks_damaged)
		dump_error("warning: %s: %" PRIu64 " damaged %s skipped, the rest read (first: %s)",
			   path, st.chunks_damaged,
			   cli_plural(st.chunks_damaged, "chunk", "chunks"),
			   trcfile_reader_damage_note(r));
	dump_reader_free(r);
}

void dump_reader_free(struct trcfile_reader *r)
{
	if (!r)
		return;
	dump_func_names_release(r);
	trcfile_reader_close(r);
}

uint64_t dump_start_ns(const struct trcfile_reader *r)
{
	return export_start_ns(r);
}
