/* cli_duration.c - the duration parser of both commands (grammar and messages in
 * cli_duration.h).
 *
 * The parse is two passes: first the shape (digits, optional fraction, unit, end of text), so
 * that garbage is always -EINVAL whatever its digits; then the value in exact integer
 * arithmetic with overflow checks, so an over-long number is -ERANGE, never a wrapped one.
 * The fraction is taken as a whole, DIGITS / 10^n of the unit, and accepted only when that is
 * a whole number of nanoseconds: "0.00000000005m" is exactly 3 ns, though no single digit of
 * it is.
 *
 * Threads: none; no state.
 */
#include "cli_duration.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define DURATION__SHOWN_CHARS 48 /* how much of a bad value the message quotes */
/* Significant fraction digits beyond which no unit below can name whole nanoseconds: with the
 * last digit non-zero, 10^n divides DIGITS x unit only if 2^n or 5^n divides the unit, and the
 * largest such powers in these units are 2^13 and 5^11 (1h = 2^13 x 3^2 x 5^11 ns). 19 keeps
 * DIGITS and 10^n inside 64 bits. */
#define DURATION__MAX_FRAC_DIGITS 19
#define DURATION__UNITS_TEXT "(ns, us, ms, s, m, h)"

struct duration__unit {
	const char *name;
	uint64_t ns;
};

/* Smallest first; duration_format_ns relies on the order. */
static const struct duration__unit duration__units[] = {
	{"ns", 1ull}, /* nanoseconds */
	{"us", 1000ull}, /* microseconds */
	{"ms", 1000000ull}, /* milliseconds */
	{"s", 1000000000ull}, /* seconds */
	{"m", 60000000000ull}, /* minutes */
	{"h", 3600000000000ull}, /* hours */
};

#define DURATION__N_UNITS (sizeof(duration__units) / sizeof(duration__units[0]))
/* A bare number's message suggests these units (the first four: the ones people mean). */
#define DURATION__N_SUGGESTED 4

static bool duration__is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static uint64_t duration__gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
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
	size_t u = DURATION__N_UNITS;

	/* Largest unit that divides ns exactly ("1ms", not "1000000ns"); 0 shows as "0s". */
	if (ns == 0)
		u = 3;
	else
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
			 "invalid duration \"%s\": %s; accepted: %s to %s, with a "
			 "unit " DURATION__UNITS_TEXT,
			 shown, why, lo, hi);
	}
	return err;
}

/* A number without a unit: names the units that would make it an accepted value. */
static int duration__no_unit(const char *text, uint64_t min_ns, uint64_t max_ns, char *msg,
			     size_t msg_len)
{
	char shown[DURATION__SHOWN_CHARS + 4], lo[32], hi[32];
	const char *ok[DURATION__N_SUGGESTED];
	size_t n_ok = 0;

	if (!msg || !msg_len)
		return -EINVAL;
	duration__quote(text, shown, sizeof(shown));
	if (strlen(text) <= DURATION__SHOWN_CHARS) {
		for (size_t u = 0; u < DURATION__N_SUGGESTED; u++) {
			char with_unit[DURATION__SHOWN_CHARS + 4];
			uint64_t ns;
			snprintf(with_unit, sizeof(with_unit), "%s%s", text,
				 duration__units[u].name);
			if (duration_parse_ns(with_unit, min_ns, max_ns, &ns, NULL, 0) == 0)
				ok[n_ok++] = duration__units[u].name;
		}
	}
	if (n_ok == 0) {
		duration_format_ns(min_ns, lo, sizeof(lo));
		duration_format_ns(max_ns, hi, sizeof(hi));
		snprintf(
			msg, msg_len,
			"\"%s\" has no unit; accepted: %s to %s, with a unit " DURATION__UNITS_TEXT,
			shown, lo, hi);
		return -EINVAL;
	}
	/* "write 5ms", "write 5ms or 5s", "write 5ns, 5us, 5ms or 5s" */
	size_t len = (size_t)snprintf(msg, msg_len, "\"%s\" has no unit; write ", shown);
	for (size_t i = 0; i < n_ok && len < msg_len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n_ok ? " or " : ", ";
		len += (size_t)snprintf(msg + len, msg_len - len, "%s%s%s", sep, shown, ok[i]);
	}
	return -EINVAL;
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
		return duration__no_unit(text, min_ns, max_ns, msg, msg_len);
	for (size_t i = 0; i < DURATION__N_UNITS; i++)
		if (strcmp(p, duration__units[i].name) == 0)
			unit = &duration__units[i];
	if (!unit)
		return duration__fail(-EINVAL, text, "unknown unit", min_ns, max_ns, msg, msg_len);

	/* Pass 2: the value, exactly. Overflow is remembered, not returned at once, so a
	 * fraction finer than a nanosecond is still reported as such. */
	for (const char *d = int_start; d < int_end; d++) {
		uint64_t digit = (uint64_t)(*d - '0');
		if (overflow || ns > (UINT64_MAX - digit) / 10u)
			overflow = true;
		else
			ns = ns * 10u + digit;
	}
	if (overflow || ns > UINT64_MAX / unit->ns)
		overflow = true;
	else
		ns *= unit->ns;
	if (frac_start) {
		/* The fraction is digits / 10^n units, trailing zeros dropped. It names whole
		 * nanoseconds when 10^n / gcd(unit, 10^n) divides digits; then it adds
		 * digits / that x unit / gcd, which is less than one unit. */
		while (frac_end > frac_start && frac_end[-1] == '0')
			frac_end--;
		size_t n = (size_t)(frac_end - frac_start);
		if (n > DURATION__MAX_FRAC_DIGITS)
			return duration__fail(-EINVAL, text, "finer than 1ns", min_ns, max_ns, msg,
					      msg_len);
		uint64_t digits = 0, pow10 = 1;
		for (const char *d = frac_start; d < frac_end; d++) {
			digits = digits * 10u + (uint64_t)(*d - '0');
			pow10 *= 10u;
		}
		uint64_t g = duration__gcd(unit->ns, pow10), den = pow10 / g;
		if (digits % den)
			return duration__fail(-EINVAL, text, "finer than 1ns", min_ns, max_ns, msg,
					      msg_len);
		uint64_t part = digits / den * (unit->ns / g);
		if (overflow || ns > UINT64_MAX - part)
			overflow = true;
		else
			ns += part;
	}

	if (overflow)
		return duration__fail(-ERANGE, text, "too large", min_ns, max_ns, msg, msg_len);
	if (negative)
		return duration__fail(-ERANGE, text, ns || min_ns == 0 ? "negative" : "zero",
				      min_ns, max_ns, msg, msg_len);
	if (ns == 0 && min_ns > 0)
		return duration__fail(-ERANGE, text, "zero", min_ns, max_ns, msg, msg_len);
	if (ns < min_ns)
		return duration__fail(-ERANGE, text, "too small", min_ns, max_ns, msg, msg_len);
	if (ns > max_ns)
		return duration__fail(-ERANGE, text, "too large", min_ns, max_ns, msg, msg_len);
	*out_ns = ns;
	return 0;
}
