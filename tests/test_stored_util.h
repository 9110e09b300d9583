/* test_stored_util.h - helpers the stored-chunk suites share (test_trcfile_stored.c,
 * test_trcfile_bgc.c), on top of test_trcfile_util.h: count a file's stored and compressed
 * chunks, open a reader that must open, and a file's `trace-dump summary --json`.
 */
#ifndef TEST_STORED_UTIL_H
#define TEST_STORED_UTIL_H

#include "test_trcfile_util.h"
#include "trcfile_codec.h"
#include "trcfile_stored.h"

/* Counts the stored and compressed chunks of a file by walking its chunk headers. */
static inline void tu_count_chunks(const char *path, unsigned *stored, unsigned *compressed)
{
	size_t len;
	uint8_t *b = tu_read_file(path, &len);
	*stored = *compressed = 0;
	uint64_t off = trcfile__get32(b + 16);
	while (off + TRCFILE__CHUNK_HDR_BYTES <= len) {
		struct trcfile__chunk_hdr h;
		const char *why;
		if (trcfile__chunk_hdr_get(b + off, &h, &why) != 0)
			break;
		if (trcfile__chunk_is_stored(&h))
			(*stored)++;
		else
			(*compressed)++;
		off += TRCFILE__CHUNK_HDR_BYTES + h.comp_bytes;
	}
	free(b);
}

static inline struct trcfile_reader *tu_open_ok(const char *path)
{
	struct trcfile_reader *r = NULL;
	char msg[512] = "";
	cr_assert_eq(trcfile_reader_open(path, &r, msg, sizeof(msg)), 0, "%s: %s", path, msg);
	return r;
}

/* `trace-dump summary --json` of path, as a string (dir/summary.json holds it). */
static inline char *tu_summary_json(const char *dir, const char *path)
{
	cr_assert_eq(tu_sh("%s/bin/trace-dump summary --json '%s' > '%s/summary.json' 2>/dev/null",
			   tu_build(), path, dir),
		     0);
	return tu_slurp_text(dir, "summary.json");
}

#endif /* TEST_STORED_UTIL_H */
