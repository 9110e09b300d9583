/* prog_hwm_liar.c - a traced program that lies about its peak: `prog_hwm_liar HWM BUFFERS MIB`.
 *
 * Touches MIB MiB, emits one event (so it holds a ring), then writes its own EXIT record into
 * that ring by hand, as a program scribbling its ring would, with VmHWM HWM bytes ("real": what
 * /proc/self/status says) and a trace-buffers' most of BUFFERS bytes (flag BUFFERS_PEAK), and
 * leaves by the exit_group system call, so that the runtime writes no record of its own after
 * it. A BUFFERS figure also goes into its process entry's count of its buffers' most (the
 * region mapped from TRC_SESSION_FD, as a stray pointer into that mapping would), which
 * trace-run's own exit record takes. Exit status 0; 2 on a usage error, 1 when it cannot do it (no
 * session, no ring, no memory).
 *
 * Threads: one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session_layout.h"
#include "trc.h"

/* Writes bytes into the buffers_peak of every process entry of this pid. 0, or -1. */
static int scribble_entry(uint64_t bytes)
{
	const char *env = getenv(TRC_SESSION_FD_ENV);
	struct stat st;
	if (!env || fstat(atoi(env), &st) != 0)
		return -1;
	uint8_t *base =
		mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, atoi(env), 0);
	if (base == MAP_FAILED)
		return -1;
	struct trc_region_hdr copy;
	struct trc_region_geom g;
	trc_region_hdr_read(&copy, (const struct trc_region_hdr *)(void *)base);
	if (trc_region_geom_check(&g, &copy, (uint64_t)st.st_size) != 0)
		return -1;
	int found = -1;
	for (uint32_t i = 0; i < g.max_procs; i++) {
		struct trc_proc *pe = trc_region_proc(base, &g, i);
		if (atomic_load(&pe->pid) == (uint32_t)getpid()) {
			atomic_store(&pe->buffers_peak, bytes);
			found = 0;
		}
	}
	return found;
}

/* VmHWM from /proc/self/status, in bytes; 0 when not found. */
static uint64_t own_hwm(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address")))
#endif
#endif
static int
touch(unsigned long mib)
{
	size_t bytes = (size_t)mib << 20;
	if (!mib)
		return 0;
	unsigned char *p =
		mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t off = 0; off < bytes; off += 4096)
		p[off] = 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: prog_hwm_liar HWM|real BUFFERS MIB\n");
		return 2;
	}
	if (touch(strtoul(argv[3], NULL, 10)) != 0)
		return 1;
	TRC_INSTANT("liar.hello", 1);
	uint64_t hwm = strcmp(argv[1], "real") == 0 ? own_hwm() : strtoull(argv[1], NULL, 10);
	uint64_t buffers = strtoull(argv[2], NULL, 10);
	struct trc__thread *t = &trc__self;
	if (!trc_enabled() || !t->prod.data) {
		fprintf(stderr, "prog_hwm_liar: no ring\n");
		return 1;
	}
	/* The runtime's EXIT payload (session_layout.h struct trc_ring_exit): ts, pid | flags <<
	 * 32, VmHWM, buffers, status. */
	uint64_t *w = ring_reserve_fast_sp(&t->prod, TRC_TAG(TRC_REC_EXIT, 0), 40);
	if (!w) {
		fprintf(stderr, "prog_hwm_liar: no room\n");
		return 1;
	}
	w[0] = trc__now(trc__mode_load());
	w[1] = (uint64_t)getpid() |
	       (uint64_t)(TRC_EXIT_SELF | TRC_EXIT_STATUS | (buffers ? TRC_EXIT_BUFFERS_PEAK : 0))
		       << 32;
	w[2] = hwm;
	w[3] = buffers;
	w[4] = 0;
	ring_commit_sp(&t->prod);
	if (buffers && scribble_entry(buffers) != 0) {
		fprintf(stderr, "prog_hwm_liar: no process entry\n");
		return 1;
	}
	fflush(stdout);
	syscall(SYS_exit_group, 0);
	return 0;
}
