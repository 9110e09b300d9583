/* test_session_layout.c - the region's geometry (session_layout.h): the recorder's plan, the
 * header it writes, and the check a process attaching makes of a copy of that header.
 *
 * Every rule of trc_region_geom_check has a test of its own that breaks exactly that field of
 * a good header and expects -EPROTO (and a zeroed geometry); every range of trc_region_plan has
 * one that expects -EINVAL. Then: whatever the plan accepts, the check accepts, with the same
 * geometry; the header is read once, counters left out; and a real session whose header was
 * changed after creation is refused by trc_attach.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime.h"
#include "session_internal.h"
#include "test_session_util.h"

#define SLOTS 8u
#define PROCS 16u
#define RING (64u << 10)
#define STRTAB (8u << 10)

/* The test's own layout, independent of trc_region_plan and without its range checks: a
 * header for any counts and sizes (magic included), with `spare` free pages after each part
 * and at the end, so that a test can move one offset without running into the next part. */
static void layout(struct trc_region_hdr *h, uint32_t slots, uint32_t procs, uint64_t ring,
		   uint64_t strtab, uint64_t spare)
{
	const uint64_t pg = TRC_REGION_PAGE;
	memset(h, 0, sizeof(*h));
	atomic_store(&h->magic, TRC_REGION_MAGIC);
	h->version = TRC_REGION_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->slot_bytes = sizeof(struct trc_slot);
	h->proc_bytes = sizeof(struct trc_proc);
	h->max_slots = slots;
	h->max_procs = procs;
	h->ring_bytes = ring;
	h->strtab_bytes = strtab;
	h->clock_mode = TRC_CLOCK_GETTIME;
	h->procs_off = pg * (1 + spare);
	h->slots_off =
		h->procs_off + trc_page_up((uint64_t)procs * sizeof(struct trc_proc)) + pg * spare;
	/* The thread-loss table has no header field: it starts at the page after the slots. */
	h->strtab_off = trc_region_tlost_at(h->slots_off, slots) +
			trc_page_up((uint64_t)TRC_TLOST_ENTRIES * sizeof(struct trc_tlost)) +
			pg * spare;
	h->rings_off = h->strtab_off + trc_page_up(strtab) + pg * spare;
	h->region_bytes = h->rings_off + (uint64_t)slots * ring + pg * spare;
}

/* A good header, as session_create writes it, and its geometry (the plan). */
static void good(struct trc_region_hdr *h, struct trc_region_geom *g)
{
	cr_assert_eq(trc_region_plan(g, SLOTS, PROCS, RING, STRTAB), 0);
	layout(h, SLOTS, PROCS, RING, STRTAB, 0);
	struct trc_region_hdr planned;
	memset(&planned, 0, sizeof(planned));
	trc_region_hdr_init(&planned, g);
	atomic_store(&planned.magic, TRC_REGION_MAGIC);
	cr_assert_eq(memcmp(&planned, h, sizeof(*h)), 0, "the plan is the layout above");
}

static const uint8_t zero_geom[sizeof(struct trc_region_geom)];

/* The check refuses h with -EPROTO and leaves no geometry behind. */
static void refused(const struct trc_region_hdr *h, uint64_t mapped, const char *why)
{
	struct trc_region_geom g;
	memset(&g, 0x5a, sizeof(g));
	cr_assert_eq(trc_region_geom_check(&g, h, mapped), -EPROTO, "accepted: %s", why);
	cr_assert_eq(memcmp(&g, zero_geom, sizeof(g)), 0, "geometry left behind: %s", why);
}

/* ---- a good header -------------------------------------------------------------------------- */

Test(session_layout, plan_is_accepted_and_read_back_exactly, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom want, got;
	good(&h, &want);
	cr_assert_eq(trc_region_geom_check(&got, &h, want.region_bytes), 0);
	cr_assert_eq(memcmp(&got, &want, sizeof(got)), 0);
	cr_assert_eq(got.max_slots, SLOTS);
	cr_assert_eq(got.max_procs, PROCS);
	cr_assert_eq(got.ring_bytes, RING);
	cr_assert_eq(got.strtab_bytes, STRTAB);
	cr_assert_eq(got.clock_mode, TRC_CLOCK_GETTIME);
	cr_assert_eq(got.procs_off, TRC_REGION_PAGE);
	cr_assert_eq(got.region_bytes, got.rings_off + (uint64_t)SLOTS * RING);
	h.clock_mode = TRC_CLOCK_TSC;
	cr_assert_eq(trc_region_geom_check(&got, &h, want.region_bytes), 0);
	cr_assert_eq(got.clock_mode, TRC_CLOCK_TSC);
}

Test(session_layout, every_plan_passes_the_check, .timeout = 60)
{
	/* The recorder never publishes a region the runtime would refuse (session_create also
	 * checks its own header), over the whole range of every value. */
	uint64_t seed = 12345;
	for (int i = 0; i < 20000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t slots = 1 + (uint32_t)((seed >> 33) % TRC_REGION_MAX_SLOTS);
		uint32_t procs = (uint32_t)((seed >> 13) % (TRC_REGION_MAX_PROCS + 1));
		uint64_t ring = (uint64_t)TRC_REGION_PAGE << ((seed >> 5) % 20);
		uint64_t strtab = TRC_REGION_PAGE + (seed >> 40) % TRC_STRTAB_MAX_BYTES;
		if (i % 4 == 0) { /* the edges */
			slots = i % 8 ? TRC_REGION_MAX_SLOTS : 1;
			procs = i % 16 ? TRC_REGION_MAX_PROCS : 0;
			ring = i % 32 ? RING_MAX_CAPACITY : TRC_REGION_PAGE;
			/* The largest table, rounded down to a page or not (refused). */
			strtab = i % 64 == 0 ? TRC_REGION_PAGE
				 : i % 64 == 4
					 ? TRC_STRTAB_MAX_BYTES
					 : TRC_STRTAB_MAX_BYTES & ~(uint64_t)(TRC_REGION_PAGE - 1);
		}
		struct trc_region_geom want, got;
		int rc = trc_region_plan(&want, slots, procs, ring, strtab);
		if (rc) {
			/* Only a table that rounds up past the maximum is refused. */
			cr_assert_eq(rc, -EINVAL);
			cr_assert_gt(trc_page_up(strtab), TRC_STRTAB_MAX_BYTES);
			continue;
		}
		struct trc_region_hdr h;
		memset(&h, 0, sizeof(h));
		trc_region_hdr_init(&h, &want);
		atomic_store(&h.magic, TRC_REGION_MAGIC);
		cr_assert_eq(trc_region_geom_check(&got, &h, want.region_bytes), 0,
			     "slots %u procs %u ring %llu strtab %llu", slots, procs,
			     (unsigned long long)ring, (unsigned long long)strtab);
		cr_assert_eq(memcmp(&got, &want, sizeof(got)), 0);
	}
}

/* ---- the plan refuses what the check would refuse ------------------------------------------- */

Test(session_layout, plan_refuses_zero_slots, .timeout = 60)
{
	struct trc_region_geom g;
	cr_assert_eq(trc_region_plan(&g, 0, PROCS, RING, STRTAB), -EINVAL);
}

Test(session_layout, plan_refuses_too_many_slots, .timeout = 60)
{
	struct trc_region_geom g;
	cr_assert_eq(trc_region_plan(&g, TRC_REGION_MAX_SLOTS, PROCS, RING, STRTAB), 0);
	cr_assert_eq(trc_region_plan(&g, TRC_REGION_MAX_SLOTS + 1, PROCS, RING, STRTAB), -EINVAL);
}

Test(session_layout, plan_refuses_too_many_procs, .timeout = 60)
{
	struct trc_region_geom g;
	cr_assert_eq(trc_region_plan(&g, SLOTS, TRC_REGION_MAX_PROCS, RING, STRTAB), 0);
	cr_assert_eq(trc_region_plan(&g, SLOTS, TRC_REGION_MAX_PROCS + 1, RING, STRTAB), -EINVAL);
}

Test(session_layout, plan_refuses_bad_ring_sizes, .timeout = 60)
{
	struct trc_region_geom g;
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, TRC_REGION_PAGE / 2, STRTAB), -EINVAL);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING + 8, STRTAB), -EINVAL);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING_MAX_CAPACITY * 2, STRTAB), -EINVAL);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING_MAX_CAPACITY, STRTAB), 0);
}

Test(session_layout, plan_refuses_bad_string_tables, .timeout = 60)
{
	struct trc_region_geom g;
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING, TRC_REGION_PAGE - 1), -EINVAL);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING, TRC_STRTAB_MAX_BYTES + 1), -EINVAL);
	/* Below the maximum, but not once rounded up to a page: the check would refuse it. */
	cr_assert_gt(trc_page_up(TRC_STRTAB_MAX_BYTES), TRC_STRTAB_MAX_BYTES);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING, TRC_STRTAB_MAX_BYTES), -EINVAL);
	cr_assert_eq(trc_region_plan(&g, SLOTS, PROCS, RING, TRC_REGION_PAGE + 1), 0);
	cr_assert_eq(g.strtab_bytes, 2 * TRC_REGION_PAGE, "rounded up to a page");
}

/* ---- the check: one test per rule ----------------------------------------------------------- */

Test(session_layout, check_refuses_wrong_magic, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	atomic_store(&h.magic, TRC_REGION_MAGIC + 1);
	refused(&h, g.region_bytes, "magic");
}

Test(session_layout, check_refuses_another_version, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.version = TRC_REGION_VERSION + 1;
	refused(&h, g.region_bytes, "version");
}

Test(session_layout, check_refuses_another_header_size, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.hdr_bytes = sizeof(h) + 64;
	refused(&h, g.region_bytes, "hdr_bytes");
}

Test(session_layout, check_refuses_another_slot_size, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.slot_bytes = sizeof(struct trc_slot) - 64;
	refused(&h, g.region_bytes, "slot_bytes");
}

Test(session_layout, check_refuses_another_proc_size, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.proc_bytes = sizeof(struct trc_proc) * 2;
	refused(&h, g.region_bytes, "proc_bytes");
}

Test(session_layout, check_refuses_a_size_that_is_not_the_mapping, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	refused(&h, g.region_bytes + TRC_REGION_PAGE, "mapping larger than the header says");
	refused(&h, g.region_bytes - TRC_REGION_PAGE, "mapping smaller than the header says");
}

Test(session_layout, check_refuses_zero_slots, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.max_slots = 0;
	refused(&h, g.region_bytes, "max_slots 0");
}

Test(session_layout, check_refuses_too_many_slots, .timeout = 60)
{
	/* A region that really holds that many rings: only the count is wrong. */
	struct trc_region_hdr h;
	layout(&h, TRC_REGION_MAX_SLOTS + 1, PROCS, TRC_REGION_PAGE, STRTAB, 0);
	refused(&h, h.region_bytes, "max_slots above the maximum");
}

Test(session_layout, check_refuses_too_many_procs, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, SLOTS, TRC_REGION_MAX_PROCS + 1, RING, STRTAB, 0);
	refused(&h, h.region_bytes, "max_procs above the maximum");
}

Test(session_layout, check_refuses_rings_below_a_page, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, SLOTS, PROCS, TRC_REGION_PAGE / 2, STRTAB, 0);
	refused(&h, h.region_bytes, "ring_bytes below a page");
}

Test(session_layout, check_refuses_rings_not_a_power_of_two, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, SLOTS, PROCS, RING - TRC_REGION_PAGE, STRTAB, 0);
	refused(&h, h.region_bytes, "ring_bytes not a power of two");
}

Test(session_layout, check_refuses_rings_above_the_maximum, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, 1, PROCS, RING_MAX_CAPACITY * 2, STRTAB, 0);
	refused(&h, h.region_bytes, "ring_bytes above the ring's maximum");
}

Test(session_layout, check_refuses_a_string_table_below_a_page, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, SLOTS, PROCS, RING, 64, 0);
	refused(&h, h.region_bytes, "strtab_bytes below a page");
}

Test(session_layout, check_refuses_a_string_table_above_the_maximum, .timeout = 60)
{
	struct trc_region_hdr h;
	layout(&h, SLOTS, PROCS, RING, trc_page_up(TRC_STRTAB_MAX_BYTES), 0);
	refused(&h, h.region_bytes, "strtab_bytes above the maximum");
}

Test(session_layout, check_refuses_offsets_off_a_page, .timeout = 60)
{
	/* A page to spare around every part: moved by 64 bytes either way, each offset stays in
	 * order and in bounds, and only its alignment is wrong. */
	struct trc_region_hdr h;
	uint64_t *off[] = {&h.procs_off, &h.slots_off, &h.strtab_off, &h.rings_off};
	const char *name[] = {"procs_off", "slots_off", "strtab_off", "rings_off"};
	for (int i = 0; i < 4; i++) {
		for (int sign = -1; sign <= 1; sign += 2) {
			layout(&h, SLOTS, PROCS, RING, STRTAB, 1);
			struct trc_region_geom g;
			cr_assert_eq(trc_region_geom_check(&g, &h, h.region_bytes), 0);
			*off[i] += (uint64_t)(int64_t)(64 * sign);
			refused(&h, h.region_bytes, name[i]);
		}
	}
}

Test(session_layout, check_refuses_a_process_table_over_the_header, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.procs_off = 0;
	refused(&h, g.region_bytes, "procs_off 0");
}

Test(session_layout, check_refuses_a_slot_table_over_the_process_table, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.max_procs = TRC_REGION_PAGE / sizeof(struct trc_proc) + 1; /* one more than fits */
	refused(&h, g.region_bytes, "slots over procs");
	good(&h, &g);
	h.slots_off = h.procs_off - TRC_REGION_PAGE; /* before the process table */
	refused(&h, g.region_bytes, "slots before procs");
}

Test(session_layout, check_refuses_a_string_table_over_the_slot_table, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.strtab_off = h.slots_off;
	refused(&h, g.region_bytes, "strtab over slots");
	good(&h, &g);
	h.max_slots = (uint32_t)((h.strtab_off - h.slots_off) / sizeof(struct trc_slot)) + 1;
	h.region_bytes = h.rings_off + (uint64_t)h.max_slots * RING; /* the rings fit */
	refused(&h, h.region_bytes, "more slots than the slot table holds");
	good(&h, &g);
	h.strtab_off = h.slots_off - TRC_REGION_PAGE; /* before the slot table */
	refused(&h, g.region_bytes, "strtab before slots");
}

Test(session_layout, check_refuses_a_thread_loss_table_out_of_place, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	cr_assert_eq(g.tlost_off, trc_region_tlost_at(h.slots_off, h.max_slots));
	h.strtab_off = g.tlost_off; /* the string table over it */
	refused(&h, g.region_bytes, "strtab over tlost");
	good(&h, &g);
	h.strtab_off -= TRC_REGION_PAGE; /* over its last page */
	refused(&h, g.region_bytes, "strtab over the end of tlost");
	good(&h, &g);
	/* More slots push the table (it follows them) into the string table. */
	h.max_slots += TRC_REGION_PAGE / sizeof(struct trc_slot) + 1;
	h.region_bytes = h.rings_off + (uint64_t)h.max_slots * RING;
	refused(&h, h.region_bytes, "slots pushing tlost into strtab");
}

Test(session_layout, check_refuses_rings_over_the_string_table, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.rings_off -= TRC_REGION_PAGE;
	h.region_bytes -= TRC_REGION_PAGE;
	refused(&h, h.region_bytes, "rings over strtab");
	good(&h, &g);
	h.rings_off = h.strtab_off - TRC_REGION_PAGE; /* before the string table */
	refused(&h, g.region_bytes, "rings before strtab");
}

Test(session_layout, check_refuses_rings_past_the_end, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.max_slots = SLOTS + 1; /* one ring more than the region holds */
	refused(&h, g.region_bytes, "rings past the end");
	good(&h, &g);
	h.rings_off = h.region_bytes + TRC_REGION_PAGE;
	refused(&h, g.region_bytes, "rings_off past the end");
}

Test(session_layout, check_refuses_offsets_that_wrap_around, .timeout = 60)
{
	/* Sums of offsets and sizes that wrap past 2^64 must not pass for small ones: here the
	 * process table would start 4 KiB below 2^64 and "end" at 0. */
	struct trc_region_hdr h;
	struct trc_region_geom g;
	good(&h, &g);
	h.max_procs = TRC_REGION_PAGE / sizeof(struct trc_proc);
	h.procs_off = (uint64_t)0 - TRC_REGION_PAGE;
	refused(&h, g.region_bytes, "procs_off near 2^64");
	good(&h, &g);
	h.strtab_bytes = TRC_REGION_PAGE;
	h.strtab_off = (uint64_t)0 - TRC_REGION_PAGE;
	refused(&h, g.region_bytes, "strtab_off near 2^64");
}

Test(session_layout, check_refuses_an_unknown_clock, .timeout = 60)
{
	struct trc_region_hdr h;
	struct trc_region_geom g;
	uint32_t bad[] = {0, 3, UINT32_MAX};
	for (int i = 0; i < 3; i++) {
		good(&h, &g);
		h.clock_mode = bad[i];
		refused(&h, g.region_bytes, "clock_mode");
	}
}

/* ---- reading the shared header -------------------------------------------------------------- */

Test(session_layout, header_read_copies_the_layout_and_not_the_counters, .timeout = 60)
{
	struct trc_region_hdr shared, copy;
	struct trc_region_geom g;
	good(&shared, &g);
	shared.tsc_hz = 3000000000ull;
	atomic_store(&shared.lost_no_slot, 7);
	atomic_store(&shared.strtab_used, 99);
	memset(&copy, 0xee, sizeof(copy));
	trc_region_hdr_read(&copy, &shared);
	size_t fixed = offsetof(struct trc_region_hdr, lost_no_slot);
	cr_assert_eq(memcmp(&copy, &shared, fixed), 0);
	cr_assert_eq(copy.tsc_hz, 3000000000ull);
	cr_assert_eq(atomic_load(&copy.lost_no_slot), 0);
	cr_assert_eq(atomic_load(&copy.strtab_used), 0);
}

Test(session_layout, attach_refuses_a_session_whose_header_was_changed, .timeout = 60)
{
	/* session_create checked its own header; a traced process scribbled on it since. */
	struct session_config cfg = {.max_slots = 4, .ring_bytes = 16 << 10};
	int err = 0;
	struct trc_session *s = ts_session_for_children(&cfg, &err);
	cr_assert_not_null(s, "session_create: %d", err);
	s->hdr->rings_off += TRC_REGION_PAGE * 1000;
	int rc = trc_attach();
	cr_assert_eq(rc, -EPROTO);
	cr_assert(!trc_enabled());
	cr_assert_null(trc__rt.base);
	TRC_INSTANT("nothing", 1);
	cr_assert_null(trc__self.prod.data);
	/* Put back, the same session is accepted. */
	s->hdr->rings_off -= TRC_REGION_PAGE * 1000;
	cr_assert_eq(trc_attach(), 0);
	cr_assert_eq(memcmp(&trc__rt.geom, &s->geom, sizeof(s->geom)), 0,
		     "both sides see one geometry");
	session_destroy(s);
}
