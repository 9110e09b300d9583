/* trc_bench_tp.h - LTTng-UST tracepoint provider for the peer comparison (bench/peers.sh).
 *
 * One event, trc_bench:instant, carrying one 64-bit value: the same payload as this project's
 * TRC_INSTANT(name, value), so bytes per event and ns per event compare like with like.
 * Built only by bench/peers.sh (never by the default make: it needs liblttng-ust-dev).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER trc_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./trc_bench_tp.h"

#if !defined(TRC_BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TRC_BENCH_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(trc_bench, instant,
	LTTNG_UST_TP_ARGS(int64_t, value),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int64_t, value, value)))

#endif /* TRC_BENCH_TP_H */

#include <lttng/tracepoint-event.h>
