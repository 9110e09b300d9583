/* cli_size.c - the byte-size parser both commands use (grammar in cli_size.h).
 *
 * Moved from run_options.c so trace-dump's --split-size reads sizes by the same rule as
 * trace-run's --buffer-size. Threads: none shared.
 */
#include "cli_size.h"

#include <errno.h>
#include <stdlib.h>

int cli_parse_size(const char *text, uint64_t *out)
{
	if (!text || !*text)
		return -EINVAL;
	errno = 0;
	char *end;
	/* A digit first: strtoull would skip spaces and take a sign, and " -1" is 2^64 - 1. */
	if (*text < '0' || *text > '9')
		return -EINVAL;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	unsigned shift = 0;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}
