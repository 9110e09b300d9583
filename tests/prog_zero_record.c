/* prog_zero_record.c - a traced program that writes one record of length 0 into its own ring,
 * as a hostile or buggy program could: `prog_zero_record`. One counter, then a record whose
 * header says length 0 and type 0 with the counter's name id and a believable time, then one
 * more counter. Prints "wrote it" and exits 0. Untraced (no ring) it writes nothing. */
#include <stdio.h>
#include <string.h>

#include "trc.h"

int main(void)
{
	TRC_COUNTER("zero.before", 1);
	int wrote = 0;
	if (trc__self.prod.data) {
		static uint32_t site;
		uint32_t id = trc__site_intern(&site, "zero.before");
		uint64_t *pl = ring_reserve_fast_sp(&trc__self.prod, TRC_TAG(0, id), 8);
		if (pl) {
			const uint32_t len = 0;
			pl[0] = trc__now(trc__mode_load());
			memcpy((uint8_t *)pl - RING_HDR_BYTES, &len, sizeof(len));
			ring_commit_sp(&trc__self.prod);
			wrote = 1;
		}
	}
	TRC_COUNTER("zero.after", 2);
	puts(wrote ? "wrote it" : "no ring");
	return 0;
}
