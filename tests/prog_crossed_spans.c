/* prog_crossed_spans.c - spans that cross and ends that close another name's span, to check
 * that every output follows FORMAT.md's one span rule (an end closes the innermost open span
 * or function, whatever its name; the slice is named by its begin): the summary, the exports
 * and the Parquet tables must agree on every span's name and duration.
 * `prog_crossed_spans ROUNDS`: each round does BEGIN a, BEGIN b, END a, END b (crossed), then
 * BEGIN c, END d (another name's end), with short sleeps so durations differ by name. */
#include <stdlib.h>
#include <time.h>

#include "trc.h"

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 10;
	for (long i = 0; i < rounds; i++) {
		TRC_BEGIN("crossed.a");
		pause_us(100);
		TRC_BEGIN("crossed.b");
		pause_us(300);
		TRC_END("crossed.a"); /* closes b, the innermost */
		pause_us(200);
		TRC_END("crossed.b"); /* closes a */
		TRC_BEGIN("crossed.c");
		pause_us(50);
		TRC_END("crossed.d"); /* closes c */
	}
	return 0;
}
