/* test_sig_everywhere.c - a signal handler that emits, delivered at every instruction of the
 * emits it interrupts, one instruction at a time: exact accounting, whatever the instruction.
 *
 * trc.h's emit is reentrant by a per-thread flag (0 while an emit runs): a handler that
 * interrupts an emit counts its event as lost (REENTRANT) instead of writing, and one that
 * comes between two emits writes its event. A timer-driven test (test_preload.c, sigalloc)
 * lands its signals where the timer happens to fire. Here the test ptraces
 * tests/prog_sig_everywhere (its protocol is at its top): at a chosen iteration of its loop the
 * program traps, the test single-steps k instructions and injects SIGALRM there, and k runs
 * through 1, 2, ... a period long enough to cover the iteration, so that every instruction
 * boundary of the path under test gets a handler. The handler emits a TRC_INSTANT. Paths:
 * the fast path; the wrap of a fully faulted 4 KiB ring; the early wrap at the end of a ring's
 * faulted head (1 MiB ring, 64 KiB head); the full ring's drop (--when-full drop, no drain);
 * trc__emit_full (a clock_gettime session). For the wraps the test stops only at the
 * iterations that wrap (it reads the ring's write offset and faulted size from the region,
 * drains it first, and predicts the next one). Each run must account for every record:
 * recorded + lost = emitted, nothing corrupt, no note. The traced program is the plain build's
 * in every tier, so the sanitizer tiers skip these (about 10 s of single steps for nothing
 * new). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "session_internal.h"
#include "test_session_util.h"

#define REC ring_record_bytes(sizeof(struct trc_ring_value)) /* a counter's or an instant's */

/* Which iterations trap (and get a signal). */
enum everywhere_trap {
	TRAP_EVERY, /* every one */
	TRAP_WRAPPING, /* those whose records reach the end of the ring's lap (they wrap) */
	TRAP_FULL, /* those that find the ring full (published bytes not yet drained): their
		    * emits wait for the drain, which comes when the program has not trapped for
		    * 5 ms */
};

struct everywhere {
	long n, m; /* iterations, counters an iteration (0: 1) */
	bool allocs; /* mallocs and frees through the preload library instead of counters */
	const char *stacks; /* with allocs: TRC_ALLOC_STACKS ("none", "all") */
	bool drain; /* drain at every trap (else only once the program has exited) */
	bool drain_stuck; /* drain whenever the program has not trapped for 5 ms (it waits) */
	enum everywhere_trap trap;
	unsigned period, next; /* the cycle of offsets: 1, 2, ... period, 1, ... */
	long stop_next; /* the next iteration to trap at */
	long injected, handled, steps, traps, drains;
};

/* Where iteration i's signal goes: instructions to step from its trap, the next offset of the
 * cycle; 0 (no signal) at an iteration that only traps to look ahead. Sets e->stop_next: the
 * next iteration, or, for TRAP_WRAPPING and TRAP_FULL, the one before the next such when it is
 * further (fill: the ring's write offset or the bytes not yet drained; usable: where its
 * records may end in this lap, the end of the faulted head less a header or the ring's end;
 * per iteration, its counters and the handler's instant). */
static unsigned everywhere_steps(struct everywhere *e, long i, uint64_t ring_off, uint64_t usable,
				 uint64_t used)
{
	if (e->trap != TRAP_EVERY) {
		uint64_t fill = e->trap == TRAP_WRAPPING ? ring_off : used;
		uint64_t per = (uint64_t)e->m * REC;
		if (fill + per + REC <= usable) {
			uint64_t ahead = (usable - fill) / per;
			e->stop_next = i + (ahead > 2 ? (long)ahead - 1 : 1);
			return 0;
		}
	}
	e->stop_next = i + 1;
	e->next = e->next % e->period + 1;
	return e->next;
}

static void ptrace_ok(long rc, const char *what)
{
	cr_assert_neq(rc, -1, "ptrace %s: %s", what, strerror(errno));
}

/* Waits for the child; fails on anything but a stop by SIGTRAP. */
static void wait_trap(pid_t pid, const char *when)
{
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "%s: status %#x", when, st);
}

static long peek(pid_t pid, uint64_t addr)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKDATA, pid, (void *)addr, NULL);
	cr_assert_eq(errno, 0, "PEEKDATA: %s", strerror(errno));
	return v;
}

/* The write offset of the program's ring (its one thread's slot) and where its records may end
 * in this lap (session_layout.h "Residency": the head faulted in, less the early wrap's
 * header, or the whole ring). */
static uint64_t everywhere_ring(struct trc_session *s, pid_t pid, uint64_t *usable, uint64_t *used)
{
	uint64_t size = s->geom.ring_bytes;
	for (uint32_t i = 0; i < s->geom.max_slots; i++) {
		struct trc_slot *sl = session__slot(s, i);
		if (TRC_SLOT_STATE(atomic_load(&sl->state)) != TRC_SLOT_CLAIMED ||
		    __atomic_load_n(&sl->pid, __ATOMIC_RELAXED) != (uint32_t)pid)
			continue;
		uint64_t faulted = atomic_load(&sl->resident_bytes);
		*usable = faulted < size ? faulted - RING_HDR_BYTES : size;
		uint64_t w = atomic_load(&sl->ctl.write_pos);
		*used = w - atomic_load(&sl->ctl.read_pos);
		return w & (size - 1);
	}
	cr_assert_fail("the program holds no ring");
	return 0;
}

static void run_everywhere(struct trc_session *s, struct everywhere *e, struct ts_collect *c)
{
	char prog[400], nbuf[32], mbuf[32];
	const char *tier = getenv("TRC_SANITIZER_TIER");
	snprintf(prog, sizeof(prog), "%s/tests/prog_sig_everywhere",
		 tier && *tier ? "build" : ts_build_dir());
	if (!e->m)
		e->m = 1;
	snprintf(nbuf, sizeof(nbuf), "%ld", e->n);
	snprintf(mbuf, sizeof(mbuf), "%ld", e->m);
	int out[2];
	cr_assert_eq(pipe(out), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(126);
		if (e->allocs) {
			char lib[400];
			snprintf(lib, sizeof(lib), "%s/lib/libtrc-preload.so",
				 tier && *tier ? "build" : ts_build_dir());
			setenv("LD_PRELOAD", lib, 1);
			setenv(TRC_ALLOC_STACKS_ENV, e->stacks ? e->stacks : "none", 1);
			setenv("TRC_STACK_VERIFY", "1", 1);
		}
		execl(prog, prog, nbuf, mbuf, e->allocs ? "malloc" : "counters", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	wait_trap(pid, "exec");
	ptrace_ok(ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_EXITKILL), "SETOPTIONS");
	ptrace_ok(ptrace(PTRACE_CONT, pid, NULL, NULL), "CONT");
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "the program's own stop: %#x", st);
	char line[128] = {0};
	cr_assert_gt(read(out[0], line, sizeof(line) - 1), 0);
	uint64_t stop_at = 0, at = 0;
	cr_assert_eq(sscanf(line, "stop_at=%" SCNx64 " at=%" SCNx64, &stop_at, &at), 2, "%s", line);
	ptrace_ok(ptrace(PTRACE_CONT, pid, NULL, NULL), "CONT"); /* its SIGSTOP suppressed */
	for (;;) {
		if (e->drain_stuck) {
			/* The program runs to its next trap, or waits for the drain: 5 ms without
			 * news, and the drain comes. */
			pid_t w;
			while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
				ts_sleep_ms(5);
				if ((w = waitpid(pid, &st, WNOHANG)) != 0)
					break;
				cr_assert_geq(ts_drain_idle(s, c), 0);
				e->drains++;
			}
			cr_assert_eq(w, pid);
		} else {
			cr_assert_eq(waitpid(pid, &st, 0), pid);
		}
		if (WIFEXITED(st))
			break;
		cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "status %#x", st);
		e->traps++;
		long i = peek(pid, at);
		if (e->drain)
			cr_assert_geq(ts_drain_idle(s, c), 0);
		uint64_t usable, used;
		uint64_t ring_off = everywhere_ring(s, pid, &usable, &used);
		unsigned steps = everywhere_steps(e, i, ring_off, usable, used);
		/* Not in the last two iterations: the steps could run past the loop, after the
		 * program has read its handler count. */
		if (i >= e->n - 2)
			steps = 0;
		ptrace_ok(ptrace(PTRACE_POKEDATA, pid, (void *)stop_at, (void *)e->stop_next),
			  "POKEDATA");
		for (unsigned j = 0; j < steps; j++) {
			ptrace_ok(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), "SINGLESTEP");
			wait_trap(pid, "step");
			e->steps++;
		}
		if (steps) {
			/* Delivered before the next instruction: the step stops at the handler's
			 * first one. */
			ptrace_ok(ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)SIGALRM),
				  "inject");
			wait_trap(pid, "inject");
			e->injected++;
		}
		ptrace_ok(ptrace(PTRACE_CONT, pid, NULL, NULL), "CONT");
	}
	cr_assert_eq(WEXITSTATUS(st), 0);
	ssize_t got = read(out[0], line, sizeof(line) - 1);
	close(out[0]);
	cr_assert_gt(got, 0);
	line[got] = 0;
	cr_assert_eq(sscanf(line, "handled=%ld", &e->handled), 1, "%s", line);
	ts_sleep_ms(60); /* past the reap interval: the exited thread's slot is freed */
	cr_assert_geq(ts_drain_idle(s, c), 0);
}

/* Every record of the run accounted for (FORMAT.md: lost counts records): the n * m + 1
 * counters (one before the loop) and one instant per injected signal, recorded or counted lost;
 * and the one record that is not an event a full ring can drop here, the EXIT record at the end
 * (the THREAD, PROCESS and MODULE records are written at the claim, into an empty ring). */
static void check_everywhere(const struct everywhere *e, const struct ts_collect *c)
{
	cr_log_info("%ld iterations, %ld traps, %ld signals injected after %ld steps, %ld drains "
		    "while stuck: %s",
		    e->n, e->traps, e->injected, e->steps, e->drains, ts_why(c));
	cr_assert_eq(e->handled, e->injected, "every injected signal ran its handler: %ld of %ld",
		     e->handled, e->injected);
	cr_assert(!ts_trouble(c), "the recorder reported trouble: %s", ts_why(c));
	cr_assert_eq(c->by_type[TRC_REC_THREAD], 1, "%s", ts_why(c));
	cr_assert_eq(c->by_type[TRC_REC_PROCESS], 1, "%s", ts_why(c));
	cr_assert_leq(c->by_type[TRC_REC_EXIT], 1, "%s", ts_why(c));
	uint64_t recorded = c->by_type[TRC_REC_COUNTER] + c->by_type[TRC_REC_INSTANT] +
			    c->by_type[TRC_REC_EXIT];
	uint64_t emitted = (uint64_t)(e->n * e->m + 1 + e->injected) + 1;
	cr_assert_eq(recorded + ts_lost_total(c), emitted,
		     "%lu recorded + %lu lost != %lu emitted (%ld signals); %s",
		     (unsigned long)recorded, (unsigned long)ts_lost_total(c),
		     (unsigned long)emitted, e->injected, ts_why(c));
}

static struct trc_session *everywhere_session(uint64_t ring, bool drop, bool gettime)
{
	struct session_config cfg = {.max_slots = 4,
				     .ring_bytes = ring,
				     .ring_pool_bytes = 4096, /* no ring grows past its base */
				     .drop_when_full = drop,
				     .force_clock_gettime = gettime};
	int err;
	struct trc_session *s = ts_session_for_children(&cfg, &err);
	cr_assert_not_null(s, "session_create: %d", err);
	return s;
}

/* Runs one path under test and checks it; only REENTRANT losses unless the ring is meant to
 * drop. */
static void everywhere(uint64_t ring, bool drop, bool gettime, struct everywhere *e)
{
	/* What this checks is the plain build's program (the producer's reentrancy); the
	 * sanitizer tier would run the very same program again, for ~10 s of single steps. */
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (tier && *tier)
		cr_skip_test("the traced program is the plain build's: checked in the plain tier");
	struct trc_session *s = everywhere_session(ring, drop, gettime);
	struct ts_collect c = {0};
	run_everywhere(s, e, &c);
	check_everywhere(e, &c);
	if (drop) {
		cr_assert_gt(c.lost[TRC_LOST_RING_FULL], (uint64_t)e->period, "%s", ts_why(&c));
	} else {
		cr_assert_eq(ts_lost_total(&c), c.lost[TRC_LOST_REENTRANT], "%s", ts_why(&c));
		cr_assert_gt(c.lost[TRC_LOST_REENTRANT], 0, "some signals landed inside an emit");
		cr_assert_gt(c.by_type[TRC_REC_INSTANT], 0, "some landed between two");
	}
	ts_collect_free(&c);
	session_destroy(s);
}

/* The preload library's emits (its own inlined copy of the fast path) inside malloc and free:
 * main allocates and frees 72 bytes, ~150 instructions an iteration with glibc's tcache. Every
 * ALLOC and FREE of the loop is recorded (a handler never takes an event of main's; glibc's own
 * allocations are the others), and every signal's instant is recorded or a REENTRANT loss. */
Test(sig_everywhere, preload_malloc_and_free, .timeout = 120)
{
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (tier && *tier)
		cr_skip_test("the traced program is the plain build's: checked in the plain tier");
	struct trc_session *s = everywhere_session(1 << 20, false, false);
	struct ts_collect c = {0};
	struct everywhere e = {
		.n = 211 * 2, .allocs = true, .drain = true, .trap = TRAP_EVERY, .period = 211};
	run_everywhere(s, &e, &c);
	cr_log_info("%ld iterations, %ld signals injected after %ld steps: %s", e.n, e.injected,
		    e.steps, ts_why(&c));
	cr_assert_eq(e.handled, e.injected);
	cr_assert(!ts_trouble(&c), "the recorder reported trouble: %s", ts_why(&c));
	cr_assert_eq(ts_lost_total(&c), c.lost[TRC_LOST_REENTRANT], "%s", ts_why(&c));
	cr_assert_eq(c.by_type[TRC_REC_INSTANT] + c.lost[TRC_LOST_REENTRANT], (uint64_t)e.injected,
		     "%s", ts_why(&c));
	cr_assert_gt(c.lost[TRC_LOST_REENTRANT], 0, "some signals landed inside an emit");
	uint64_t mine = 0;
	for (size_t i = 0; i < c.n; i++)
		mine += c.v[i].r.type == TRC_REC_ALLOC && c.v[i].r.alloc.size == 72;
	cr_assert_eq(mine, (uint64_t)e.n, "ALLOCs of the loop: %lu; %s", (unsigned long)mine,
		     ts_why(&c));
	cr_assert_geq(c.by_type[TRC_REC_FREE], (uint64_t)e.n, "%s", ts_why(&c));
	ts_collect_free(&c);
	session_destroy(s);
}

/* The same loop with a call stack on every allocation: the signals now land in the capture
 * (the unwinder, the stack cache, the thread's table) as well as in the emits. Every ALLOC of
 * the loop is recorded, each with its stack (the cache is checked against a full unwind on
 * every hit: a wrong stack would be said on stderr), and every signal's instant is recorded
 * or a REENTRANT loss. */
Test(sig_everywhere, preload_malloc_with_stacks, .timeout = 120)
{
	const char *tier = getenv("TRC_SANITIZER_TIER");
	if (tier && *tier)
		cr_skip_test("the traced program is the plain build's: checked in the plain tier");
	struct trc_session *s = everywhere_session(1 << 20, false, false);
	struct ts_collect c = {0};
	struct everywhere e = {.n = 211,
			       .allocs = true,
			       .stacks = "all",
			       .drain = true,
			       .trap = TRAP_EVERY,
			       .period = 1999};
	run_everywhere(s, &e, &c);
	cr_log_info("%ld iterations, %ld signals injected after %ld steps: %s", e.n, e.injected,
		    e.steps, ts_why(&c));
	cr_assert_eq(e.handled, e.injected);
	cr_assert(!ts_trouble(&c), "the recorder reported trouble: %s", ts_why(&c));
	cr_assert_eq(ts_lost_total(&c), c.lost[TRC_LOST_REENTRANT], "%s", ts_why(&c));
	cr_assert_eq(c.by_type[TRC_REC_INSTANT] + c.lost[TRC_LOST_REENTRANT], (uint64_t)e.injected,
		     "%s", ts_why(&c));
	uint64_t mine = 0, with_stack = 0;
	for (size_t i = 0; i < c.n; i++)
		if (c.v[i].r.type == TRC_REC_ALLOC && c.v[i].r.alloc.size == 72) {
			mine++;
			with_stack += c.v[i].r.alloc.stack_id != 0;
		}
	cr_assert_eq(mine, (uint64_t)e.n, "ALLOCs of the loop: %lu; %s", (unsigned long)mine,
		     ts_why(&c));
	cr_assert_eq(with_stack, mine, "ALLOCs of the loop with a stack");
	cr_assert_gt(c.by_type[TRC_REC_STACK], 0);
	ts_collect_free(&c);
	session_destroy(s);
}

/* The fast path: ~40 instructions an iteration with the loop's; offsets 1..61 cover it and the
 * start of the next one. */
Test(sig_everywhere, fast_path, .timeout = 120)
{
	struct everywhere e = {.n = 61 * 6, .drain = true, .trap = TRAP_EVERY, .period = 61};
	everywhere(4096, false, false, &e);
}

/* The wrap at the end of a fully faulted 4 KiB ring, 8 counters an iteration: every iteration
 * that wraps, at offsets 1..257 (8 emits and the wrap's slow path). */
Test(sig_everywhere, ring_wraps, .timeout = 120)
{
	struct everywhere e = {
		.n = 257 * 22, .m = 8, .drain = true, .trap = TRAP_WRAPPING, .period = 257};
	everywhere(4096, false, false, &e);
	cr_assert_gt(e.injected, 257 * 3 / 4, "signals in wrapping iterations: %ld", e.injected);
}

/* The early wrap at the end of a 1 MiB ring's 64 KiB head (drained before each: the ring wraps
 * there rather than grow), one counter an iteration. */
Test(sig_everywhere, early_wraps, .timeout = 120)
{
	struct everywhere e = {
		.n = 257 * 2740, .drain = true, .trap = TRAP_WRAPPING, .period = 257};
	everywhere(1 << 20, false, false, &e);
	cr_assert_gt(e.injected, 257 * 3 / 4, "signals in wrapping iterations: %ld", e.injected);
}

/* --when-full wait (the default): the iterations that find a 4 KiB ring full wait for the drain
 * (sched_yield, then nanosleep), and the test drains only once the program has been stuck for
 * 5 ms; each such iteration (8 counters) gets a signal at offsets 1..257, many of them inside
 * the wait (its sleeps make this the slowest path to step through). */
Test(sig_everywhere, full_ring_waits, .timeout = 120)
{
	struct everywhere e = {
		.n = 257 * 22, .m = 8, .drain_stuck = true, .trap = TRAP_FULL, .period = 257};
	everywhere(4096, false, false, &e);
	cr_assert_gt(e.drains, 200, "the program waited for the drain %ld times", e.drains);
	cr_assert_gt(e.injected, 200, "signals in iterations that wait: %ld", e.injected);
}

/* --when-full drop with no drain until the end: after the first ~170 events every event goes
 * through the full ring's drop (~230 instructions an iteration). */
Test(sig_everywhere, full_ring_drops, .timeout = 120)
{
	struct everywhere e = {.n = 307 + 200, .drain = false, .trap = TRAP_EVERY, .period = 307};
	everywhere(4096, true, false, &e);
}

/* A clock_gettime session: every event through trc__emit_full. */
Test(sig_everywhere, clock_gettime_path, .timeout = 120)
{
	struct everywhere e = {.n = 2 * 151, .drain = true, .trap = TRAP_EVERY, .period = 151};
	everywhere(4096, false, true, &e);
}
