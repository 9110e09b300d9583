/* duration.c - the --rss-interval and --rss-source parsers (grammar in duration.h).
 *
 * The parse is two passes: first the shape (digits, optional fraction, unit, end of text), so
 * that garbage is always -EINVAL whatever its digits; then the value in exact integer
 * arithmetic with overflow checks, so an over-long number is -ERANGE, never a wrapped one.
 *
 * Threads: none; no state.
 */
#include "cli_duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define DURATION__SHOWN_CHARS 48 /* how much of a bad value the message quotes */

struct duration__unit {
	const char *name;
	uint64_t ns;
	unsigned frac_digits; /* log10(ns): fraction digits that still name whole nanoseconds */
};

static const struct duration__unit duration__units[] = {
	{"ns", 1ull, 0},
	{"us", 1000ull, 3},
	{"ms", 1000000ull, 6},
	{"s", 1000000000ull, 9},
};

static bool duration__is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Copies text into out as a quotable value: non-printable bytes become '?', long text is cut
 * with "...", so a message never carries control characters or runs unbounded. */
static void duration__quote(const char *text, char *out, size_t out_len)
{
	size_t i = 0, n = 0;

	if (out_len == 0)
		return;
	for (; text[i] && n + 1 < out_len && i < DURATION__SHOWN_CHARS; i++) {
		unsigned char c = (unsigned char)text[i];
		out[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (text[i] && out_len > n + 3) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

char *duration_format_ns(uint64_t ns, char *buf, size_t buf_len)
{
	size_t u = sizeof(duration__units) / sizeof(duration__units[0]);

	/* Largest unit that divides ns exactly ("1ms", not "1000000ns"); 0 shows as "0s". */
	while (u-- > 1)
		if (ns % duration__units[u].ns == 0)
			break;
	snprintf(buf, buf_len, "%llu%s", (unsigned long long)(ns / duration__units[u].ns),
		 duration__units[u].name);
	return buf;
}

static int duration__fail(int err, const char *text, const char *why, uint64_t min_ns,
			  uint64_t max_ns, char *msg, size_t msg_len)
{
	char shown[DURATION__SHOWN_CHARS + 4], lo[32], hi[32];

	if (msg && msg_len) {
		duration__quote(text ? text : "", shown, sizeof(shown));
		duration_format_ns(min_ns, lo, sizeof(lo));
		duration_format_ns(max_ns, hi, sizeof(hi));
		snprintf(msg, msg_len,
			 "invalid duration '%s': %s; accepted: %s to %s, with a unit (ns, us, ms, "
			 "s)",
			 shown, why, lo, hi);
	}
	return err;
}

int duration_parse_ns(const char *text, uint64_t min_ns, uint64_t max_ns, uint64_t *out_ns,
		      char *msg, size_t msg_len)
{
	const char *p = text, *int_start, *int_end, *frac_start = NULL, *frac_end = NULL;
	const struct duration__unit *unit = NULL;
	bool negative = false, overflow = false;
	uint64_t ns = 0;

	if (msg && msg_len)
		msg[0] = '\0';
	if (min_ns > max_ns)
		return duration__fail(-EINVAL, text, "empty range", min_ns, max_ns, msg, msg_len);
	if (!out_ns)
		return duration__fail(-EINVAL, text, "no output", min_ns, max_ns, msg, msg_len);
	if (!text || !*text)
		return duration__fail(-EINVAL, text, "empty value", min_ns, max_ns, msg, msg_len);

	/* Pass 1: the shape. */
	if (*p == '-') {
		negative = true; /* still parsed, so "-1s" says "negative" and "-x" says garbage */
		p++;
	}
	int_start = p;
	while (duration__is_digit(*p))
		p++;
	int_end = p;
	if (int_end == int_start)
		return duration__fail(-EINVAL, text, "not a number", min_ns, max_ns, msg, msg_len);
	if (*p == '.') {
		frac_start = ++p;
		while (duration__is_digit(*p))
			p++;
		frac_end = p;
		if (frac_end == frac_start)
			return duration__fail(-EINVAL, text, "no digit after the point", min_ns,
					      max_ns, msg, msg_len);
	}
	if (!*p)
		return duration__fail(-EINVAL, text, "missing unit", min_ns, max_ns, msg, msg_len);
	for (size_t i = 0; i < sizeof(duration__units) / sizeof(duration__units[0]); i++)
		if (strcmp(p, duration__units[i].name) == 0)
			unit = &duration__units[i];
	if (!unit)
		return duration__fail(-EINVAL, text, "unknown unit", min_ns, max_ns, msg, msg_len);

	/* Pass 2: the value, exactly. Overflow is remembered, not returned at once, so a
	 * fraction finer than a nanosecond is still reported as such. */
	for (const char *d = int_start; d < int_end; d++) {
		uint64_t digit = (uint64_t)(*d - '0');
		if (ns > (UINT64_MAX - digit) / 10u)
			overflow = true;
		else
			ns = ns * 10u + digit;
	}
	if (overflow || ns > UINT64_MAX / unit->ns)
		overflow = true;
	else
		ns *= unit->ns;
	if (frac_start) {
		uint64_t place = unit->ns;
		for (const char *d = frac_start; d < frac_end; d++) {
			uint64_t digit = (uint64_t)(*d - '0');
			place /= 10u;
			if (place == 0) {
				if (digit != 0)
					return duration__fail(-EINVAL, text, "finer than 1ns",
							      min_ns, max_ns, msg, msg_len);
				continue;
			}
			if (!overflow && ns > UINT64_MAX - digit * place)
				overflow = true;
			else
				ns += digit * place;
		}
	}

	if (overflow)
		return duration__fail(-ERANGE, text, "too large", min_ns, max_ns, msg, msg_len);
	if (negative)
		return duration__fail(-ERANGE, text, ns ? "negative" : "zero", min_ns, max_ns, msg,
				      msg_len);
	if (ns == 0 && min_ns > 0)
		return duration__fail(-ERANGE, text, "zero", min_ns, max_ns, msg, msg_len);
	if (ns < min_ns)
		return duration__fail(-ERANGE, text, "too small", min_ns, max_ns, msg, msg_len);
	if (ns > max_ns)
		return duration__fail(-ERANGE, text, "too large", min_ns, max_ns, msg, msg_len);
	*out_ns = ns;
	return 0;
}
