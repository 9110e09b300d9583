/* rss_parse.c - pure parsers of /proc/PID/{statm,status,smaps_rollup}.
 *
 * Purpose: see rss_parse.h. The parsers are strict on the fields they use and ignore the
 * lines they do not (status and smaps_rollup grow new lines with kernel versions). They never
 * trust a length: every scan is bounded by `len`, the text need not be NUL-terminated.
 *
 * Formats (fs/proc/array.c, fs/proc/task_mmu.c):
 *   statm        "%lu %lu %lu %lu %lu %lu %lu\n"        seven counts of pages
 *   status       "Key:\tvalue\n" lines; memory ones are "VmRSS:\t    1688 kB\n"
 *   smaps_rollup a maps-style header ending in "[rollup]", then "Rss:   1708 kB\n" lines
 * Every one of them ends with a newline: text without one was cut short and is rejected,
 * since its last number might be missing digits.
 *
 * Threads: none; no state.
 */
#include "rss_parse.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define RSS__KIB 1024u

/* Parses the decimal digits in [*p, end) up to the first non-digit. Returns 0 and advances
 * *p, -EINVAL when there is no digit, -ERANGE when the value needs more than 64 bits. */
static int rss__parse_u64(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s == end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10u)
			return -ERANGE;
		v = v * 10u + d;
	}
	*p = s;
	*out = v;
	return 0;
}

/* v * unit without overflow: 0 or -ERANGE. */
static int rss__scale(uint64_t v, uint64_t unit, uint64_t *out)
{
	if (unit != 0 && v > UINT64_MAX / unit)
		return -ERANGE;
	*out = v * unit;
	return 0;
}

int rss_parse_statm(const char *text, size_t len, uint64_t page_bytes, struct rss_statm *out)
{
	const char *p = text, *end;
	uint64_t pages[7];
	struct rss_statm r;
	int err;

	if (!text || page_bytes == 0 || (page_bytes & (page_bytes - 1)) != 0)
		return -EINVAL;
	end = text + len;
	if (len == 0 || end[-1] != '\n')
		return -EINVAL; /* empty or cut short */
	for (int i = 0; i < 7; i++) {
		err = rss__parse_u64(&p, end, &pages[i]);
		if (err)
			return err;
		/* Exactly one space between fields, a newline after the last one. */
		if (p == end || *p != (i == 6 ? '\n' : ' '))
			return -EINVAL;
		p++;
	}
	if (p != end)
		return -EINVAL; /* trailing text: not a statm file */
	if ((err = rss__scale(pages[0], page_bytes, &r.size_bytes)) ||
	    (err = rss__scale(pages[1], page_bytes, &r.resident_bytes)) ||
	    (err = rss__scale(pages[2], page_bytes, &r.shared_bytes)))
		return err;
	*out = r;
	return 0;
}

/* A field this parser wants: its key (without the colon) and where the value goes. */
struct rss__field {
	const char *key;
	uint64_t *dst;
	bool seen;
};

/* Parses the value of a "Key:   1234 kB" line, [p, eol) being what follows the colon. */
static int rss__parse_kb(const char *p, const char *eol, uint64_t *out)
{
	uint64_t kib;
	int err;

	if (p == eol || (*p != ' ' && *p != '\t'))
		return -EINVAL;
	while (p < eol && (*p == ' ' || *p == '\t'))
		p++;
	err = rss__parse_u64(&p, eol, &kib);
	if (err)
		return err;
	if (eol - p != 3 || memcmp(p, " kB", 3) != 0)
		return -EINVAL;
	return rss__scale(kib, RSS__KIB, out);
}

/* Walks "Key: value" lines in [p, end), which must end with a newline, filling the wanted
 * fields. A wanted field seen twice is -EINVAL. If state is not NULL, the first letter of the
 * State line is stored there. Returns 0 or a parse error; missing fields are the caller's. */
static int rss__parse_kv_lines(const char *p, const char *end, struct rss__field *fields,
			       size_t n_fields, char *state)
{
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *colon;
		size_t key_len;

		if (!eol)
			return -EINVAL; /* cannot happen: the caller checked the final newline */
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon) {
			p = eol + 1; /* not a key/value line: none of ours */
			continue;
		}
		key_len = (size_t)(colon - p);
		if (state && key_len == 5 && memcmp(p, "State", 5) == 0) {
			const char *v = colon + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*state = v < eol ? *v : 0;
		}
		for (size_t i = 0; i < n_fields; i++) {
			if (strlen(fields[i].key) != key_len || memcmp(fields[i].key, p, key_len))
				continue;
			if (fields[i].seen)
				return -EINVAL; /* a repeated field: which one would be right? */
			int err = rss__parse_kb(colon + 1, eol, fields[i].dst);
			if (err)
				return err;
			fields[i].seen = true;
			break;
		}
		p = eol + 1;
	}
	return 0;
}

static bool rss__all_seen(const struct rss__field *fields, size_t n_fields)
{
	for (size_t i = 0; i < n_fields; i++)
		if (!fields[i].seen)
			return false;
	return true;
}

static bool rss__none_seen(const struct rss__field *fields, size_t n_fields)
{
	for (size_t i = 0; i < n_fields; i++)
		if (fields[i].seen)
			return false;
	return true;
}

int rss_parse_status(const char *text, size_t len, struct rss_status *out)
{
	struct rss_status r = {0};
	struct rss__field fields[] = {
		{"VmRSS", &r.rss_bytes, false},	     {"VmHWM", &r.hwm_bytes, false},
		{"RssAnon", &r.anon_bytes, false},   {"RssFile", &r.file_bytes, false},
		{"RssShmem", &r.shmem_bytes, false},
	};
	const size_t n = sizeof(fields) / sizeof(fields[0]);
	int err;

	if (!text || len == 0 || text[len - 1] != '\n')
		return -EINVAL;
	err = rss__parse_kv_lines(text, text + len, fields, n, &r.state);
	if (err)
		return err;
	if (!rss__all_seen(fields, n)) {
		/* A task without memory prints none of the lines: a zombie, or a task between
		 * releasing its memory and becoming one (State still R or D then). Some of them
		 * only is a broken file. */
		if (rss__none_seen(fields, n) && r.state != 0)
			return -ESRCH;
		return -ENODATA;
	}
	*out = r;
	return 0;
}

int rss_parse_smaps_rollup(const char *text, size_t len, struct rss_rollup *out)
{
	static const char tag[] = "[rollup]";
	const size_t tag_len = sizeof(tag) - 1;
	struct rss_rollup r = {0};
	struct rss__field fields[] = {
		{"Rss", &r.rss_bytes, false},
		{"Pss", &r.pss_bytes, false},
	};
	const size_t n = sizeof(fields) / sizeof(fields[0]);
	const char *eol;
	int err;

	if (!text)
		return -EINVAL;
	if (len == 0)
		return -ENODATA;
	if (text[len - 1] != '\n')
		return -EINVAL;
	/* The header line: "start-end ---p 00000000 00:00 0    [rollup]". */
	eol = memchr(text, '\n', len);
	if ((size_t)(eol - text) < tag_len || memcmp(eol - tag_len, tag, tag_len) != 0)
		return -EINVAL;
	err = rss__parse_kv_lines(eol + 1, text + len, fields, n, NULL);
	if (err)
		return err;
	if (!rss__all_seen(fields, n))
		return -ENODATA;
	*out = r;
	return 0;
}
