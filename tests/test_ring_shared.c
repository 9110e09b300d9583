/* test_ring_shared.c - one ring shared by two processes, as between a traced program and the
 * recorder.
 *
 * The region is a memfd mapped MAP_SHARED; the child maps it a second time at another address
 * and produces through that mapping only, so nothing in the ring may depend on addresses. The
 * child (producer) writes records carrying a sequence number, a size derived from it and a
 * checksum; the parent (consumer) checks order, integrity and that every sequence number it did
 * not receive was counted as dropped: sent = received + dropped, exactly.
 *
 * Children leave with _exit so they never run Criterion's exit handlers.
 */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define REGION_CTL_OFF 0
#define REGION_INFO_OFF 1024
#define REGION_DATA_OFF 4096

/* Written by the child only, read by the parent after waitpid (or after it was killed). */
struct shared_info {
	_Atomic uint64_t attempts; /* records the child tried to push */
};

struct region {
	int fd;
	uint8_t *base;
	size_t bytes;
	uint64_t cap;
	struct ring_ctl *ctl;
	struct shared_info *info;
	uint8_t *data;
};

static void region_map(struct region *r, uint8_t *base)
{
	r->base = base;
	r->ctl = (struct ring_ctl *)(void *)(base + REGION_CTL_OFF);
	r->info = (struct shared_info *)(void *)(base + REGION_INFO_OFF);
	r->data = base + REGION_DATA_OFF;
}

static void region_open(struct region *r, uint64_t cap)
{
	r->cap = cap;
	r->bytes = REGION_DATA_OFF + cap;
	r->fd = memfd_create("trc-test-ring", MFD_CLOEXEC);
	cr_assert_geq(r->fd, 0);
	cr_assert_eq(ftruncate(r->fd, (off_t)r->bytes), 0);
	void *m = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	region_map(r, m);
	cr_assert_eq(ring_ctl_init(r->ctl, cap, (uint64_t)0 - cap * 3), 0);
	atomic_init(&r->info->attempts, 0);
}

static void region_close(struct region *r)
{
	munmap(r->base, r->bytes);
	close(r->fd);
}

/* ---- the record format ----------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Payload: u64 seq, u64 checksum, then filler; its size is a function of seq. */
static uint32_t payload_bytes_of(uint64_t seq)
{
	return 16 + (uint32_t)(mix64(seq) % 185);
}

static uint64_t checksum(const uint8_t *p, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static void make_payload(uint8_t *dst, uint64_t seq, uint32_t n)
{
	uint64_t x = mix64(seq + 1);
	for (uint32_t i = 16; i < n; i++)
		dst[i] = (uint8_t)(x >> (8 * (i % 8))) ^ (uint8_t)i;
	memcpy(dst, &seq, 8);
	uint64_t sum = checksum(dst + 16, n - 16) ^ seq;
	memcpy(dst + 8, &sum, 8);
}

/* Producer body; runs in the child. Pushes seq first..last-1 and counts attempts. With
 * yield_on_drop it gives the CPU away after a drop (a test's courtesy to a consumer that shares
 * two busy cores with it; the ring itself never yields), so most records get through. */
static void produce(struct ring_producer *p, struct shared_info *info, uint64_t first,
		    uint64_t last, bool yield_on_drop)
{
	for (uint64_t seq = first; seq < last; seq++) {
		uint32_t n = payload_bytes_of(seq);
		/* Written in place: reserve, fill, commit (the path the tracer uses). */
		void *dst = ring_reserve_sp(p, 7, n);
		if (dst) {
			make_payload(dst, seq, n);
			ring_commit_sp(p);
		} else if (yield_on_drop) {
			sched_yield();
		}
		/* Relaxed: the parent reads it after waitpid, which orders everything. */
		atomic_store_explicit(&info->attempts, seq + 1, memory_order_relaxed);
	}
}

/* Consumer-side state and checks. */
struct checker {
	struct ring_consumer c;
	uint64_t received;
	uint64_t next_seq; /* lowest sequence number still allowed */
	uint64_t gaps; /* sequence numbers skipped, i.e. records the producer dropped */
};

/* Drains what is published now. Returns records received. */
static uint64_t drain(struct checker *k)
{
	struct ring_batch b;
	struct ring_record r;
	uint64_t n = 0;
	cr_assert_eq(ring_batch_begin(&k->c, &b), 0);
	int rc;
	while ((rc = ring_batch_next(&k->c, &b, &r)) == 1) {
		cr_assert_eq(r.tag, 7);
		cr_assert_geq(r.payload_bytes, 16);
		const uint8_t *pl = r.payload;
		uint64_t seq, sum;
		memcpy(&seq, pl, 8);
		memcpy(&sum, pl + 8, 8);
		cr_assert_geq(seq, k->next_seq, "seq %llu after %llu: duplicate or reordered",
			      (unsigned long long)seq, (unsigned long long)k->next_seq);
		uint32_t n_pl = payload_bytes_of(seq);
		cr_assert_eq(r.payload_bytes, (n_pl + 7) & ~7u, "seq %llu has the wrong size",
			     (unsigned long long)seq);
		cr_assert_eq(sum, checksum(pl + 16, n_pl - 16) ^ seq, "seq %llu torn",
			     (unsigned long long)seq);
		k->gaps += seq - k->next_seq;
		k->next_seq = seq + 1;
		k->received++;
		n++;
	}
	cr_assert_eq(rc, 0, "ring reported %d", rc);
	ring_batch_release(&k->c, &b);
	return n;
}

static pid_t spawn_producer(struct region *r, uint64_t n_fill, uint64_t n_total, int ready_fd)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	/* Child: its own mapping at a different address, so only offsets can work. */
	uint8_t *base = mmap(NULL, r->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (base == MAP_FAILED || base == r->base)
		_exit(10);
	struct region mine = *r;
	region_map(&mine, base);
	munmap(r->base, r->bytes);
	struct ring_producer p;
	if (ring_producer_attach(&p, mine.ctl, mine.data, mine.cap))
		_exit(11);
	/* Phase 1: more than the ring holds, with nobody consuming: some must drop. */
	produce(&p, mine.info, 0, n_fill, false);
	if (ring_producer_dropped(&p) == 0)
		_exit(12);
	if (write(ready_fd, "x", 1) != 1)
		_exit(13);
	/* Phase 2: concurrently with the consumer. */
	produce(&p, mine.info, n_fill, n_total, true);
	_exit(0);
}

static void wait_ready(int fd)
{
	char c;
	cr_assert_eq(read(fd, &c, 1), 1, "producer never got through its first phase");
}

Test(ring_shared, fork_producer_parent_consumer, .timeout = 180)
{
	const uint64_t cap = 16384, n_fill = 1000, n_total = 1000000;
	struct region r;
	region_open(&r, cap);
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = spawn_producer(&r, n_fill, n_total, pfd[1]);
	close(pfd[1]);

	struct checker k = {0};
	cr_assert_eq(ring_consumer_attach(&k.c, r.ctl, r.data, cap), 0);
	wait_ready(pfd[0]);
	int status = 0;
	uint64_t rounds = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		cr_assert_geq(w, 0);
		uint64_t n = drain(&k);
		if (w == pid)
			break;
		if (n == 0)
			sched_yield();
		/* Now and then fall behind, so phase 2 drops some too (not asserted: timing). */
		if (++rounds % 512 == 0)
			usleep(100);
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	drain(&k); /* the child is gone: whatever is left is final */

	int err = 1;
	uint64_t dropped = ring_consumer_dropped(&k.c, &err);
	uint64_t sent = atomic_load(&r.info->attempts);
	cr_assert_eq(err, 0);
	cr_assert_eq(sent, n_total);
	cr_assert_gt(dropped, 0);
	cr_assert_gt(k.received, cap / 256, "received %llu", (unsigned long long)k.received);
	/* Trailing drops (after the last record received) are gaps too. */
	k.gaps += sent - k.next_seq;
	cr_assert_eq(sent, k.received + dropped, "sent %llu received %llu dropped %llu",
		     (unsigned long long)sent, (unsigned long long)k.received,
		     (unsigned long long)dropped);
	cr_assert_eq(k.gaps, dropped, "missing sequence numbers must be exactly the drops");
	cr_log_info("sent %llu received %llu dropped %llu", (unsigned long long)sent,
		    (unsigned long long)k.received, (unsigned long long)dropped);
	cr_assert_eq(ring_consumer_pending_bytes(&k.c), 0);
	close(pfd[0]);
	region_close(&r);
}

/* Kills the producer at some point and checks the parent drains what it left, cleanly. */
static void killed_midway(uint64_t cap, bool consume_while_running, useconds_t run_us)
{
	struct region r;
	region_open(&r, cap);
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	pid_t pid = spawn_producer(&r, 4 * cap / 16, UINT64_MAX, pfd[1]);
	close(pfd[1]);
	struct checker k = {0};
	cr_assert_eq(ring_consumer_attach(&k.c, r.ctl, r.data, cap), 0);
	wait_ready(pfd[0]);

	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (consume_while_running)
			drain(&k);
		else
			sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
			 (uint64_t)t0.tv_nsec <
		 (uint64_t)run_us * 1000);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);

	/* Drain until empty: no error, every record whole and in order. */
	uint64_t rounds = 0;
	while (drain(&k))
		cr_assert_lt(++rounds, 4, "a dead producer's ring drains in one pass");
	int err = 1;
	uint64_t dropped = ring_consumer_dropped(&k.c, &err);
	cr_assert_eq(err, 0);
	uint64_t sent = atomic_load(&r.info->attempts);
	/* The child may have died between a push and counting the attempt. */
	cr_assert(sent == k.received + dropped || sent + 1 == k.received + dropped,
		  "sent %llu received %llu dropped %llu", (unsigned long long)sent,
		  (unsigned long long)k.received, (unsigned long long)dropped);
	cr_assert_gt(k.received, 0);
	cr_assert_gt(dropped, 0);
	cr_log_info("killed: sent %llu received %llu dropped %llu", (unsigned long long)sent,
		    (unsigned long long)k.received, (unsigned long long)dropped);
	cr_assert_eq(ring_consumer_pending_bytes(&k.c), 0);
	close(pfd[0]);
	region_close(&r);
}

Test(ring_shared, producer_killed_while_consumer_runs, .timeout = 180)
{
	killed_midway(65536, true, 100000);
}

Test(ring_shared, producer_killed_with_full_ring, .timeout = 180)
{
	/* Nobody consumes before the kill: the ring is full and the child is dropping. */
	killed_midway(8192, false, 50000);
}
