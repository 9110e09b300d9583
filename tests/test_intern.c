/* test_intern.c - the runtime's string table (src/runtime/intern.c): its bounds, exactly.
 *
 * Purpose: a name of the longest length kept (TRC_STRTAB_MAX_LEN bytes) arrives whole and a
 * longer one cut to exactly that; every id the library hands out while the table fills has its
 * NAME record with its exact string (an entry that ran past the end of the table would be
 * unreadable to the drain, or written over what follows the table).
 *
 * Threads: single-threaded; Criterion runs each test in its own process (fresh session).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "runtime.h"
#include "session_internal.h"
#include "test_session_util.h"

static const struct ts_rec *name_rec(const struct ts_collect *c, uint32_t id)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].r.type == TRC_REC_NAME && c->v[i].r.name.id == id)
			return &c->v[i];
	return NULL;
}

/* An instant that carries name id: the drain writes a name's NAME record with its first use. */
static void use_id(uint32_t id)
{
	trc__emit(trc__mode_load(), TRC_TAG(TRC_REC_INSTANT, id), 1, 0, 0);
}

Test(intern, longest_name_kept_whole_longer_cut_to_it, .timeout = 60)
{
	struct session_config cfg = {.max_slots = 2, .ring_bytes = 64 << 10};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0);
	static char longest[TRC_STRTAB_MAX_LEN + 1], longer[TRC_STRTAB_MAX_LEN + 100];
	memset(longest, 'a', TRC_STRTAB_MAX_LEN);
	memset(longer, 'b', sizeof(longer) - 1);
	uint32_t id_longest = trc__intern(longest), id_longer = trc__intern(longer);
	cr_assert_gt(id_longest, 1u);
	cr_assert_gt(id_longer, 1u);
	use_id(id_longest);
	use_id(id_longer);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	const struct ts_rec *a = name_rec(&c, id_longest), *b = name_rec(&c, id_longer);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(a->r.name.len, TRC_STRTAB_MAX_LEN, "the longest name kept: %u bytes",
		     a->r.name.len);
	cr_assert_eq(b->r.name.len, TRC_STRTAB_MAX_LEN, "a longer one cut to it: %u bytes",
		     b->r.name.len);
	cr_assert_eq(strspn(a->str, "a"), sizeof(a->str) - 1); /* the copy holds 511 bytes */
	cr_assert_eq(strspn(b->str, "b"), sizeof(b->str) - 1);
	ts_collect_free(&c);
	session_destroy(s);
}

/* Names of 200 bytes into a 4 KiB table: each id handed out has its whole name in the trace,
 * up to the last that fit; then the fallback id 1. */
Test(intern, every_id_of_a_filling_table_has_its_name, .timeout = 60)
{
	struct session_config cfg = {.max_slots = 2, .ring_bytes = 64 << 10, .strtab_bytes = 4096};
	int rc = -1;
	struct trc_session *s = ts_start(&cfg, &rc);
	cr_assert_not_null(s);
	cr_assert_eq(rc, 0);
	enum { MAX = 64, LEN = 200 };
	uint32_t ids[MAX];
	char names[MAX][LEN + 1];
	int n = 0;
	for (; n < MAX; n++) {
		memset(names[n], 'a' + n % 26, LEN);
		snprintf(names[n], sizeof(names[n]), "%03d", n);
		names[n][3] = '-';
		memset(names[n] + 4, 'a' + n % 26, LEN - 4);
		names[n][LEN] = 0;
		ids[n] = trc__intern(names[n]);
		if (ids[n] == 1u)
			break;
		use_id(ids[n]);
	}
	cr_assert(n > 5 && n < MAX, "a 4 KiB table holds some 200-byte names, not all: %d", n);
	struct ts_collect c = {0};
	cr_assert_geq(ts_drain_idle(s, &c), 0);
	for (int i = 0; i < n; i++) {
		const struct ts_rec *x = name_rec(&c, ids[i]);
		cr_assert_not_null(x, "no NAME record for id %u (name %d of %d)", ids[i], i, n);
		cr_assert_eq(x->r.name.len, LEN);
		cr_assert_str_eq(x->str, names[i], "name %d", i);
	}
	ts_collect_free(&c);
	session_destroy(s);
}
