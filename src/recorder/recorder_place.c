/* recorder_place.c - the recorder's threads kept off busy producers' CPUs (recorder_place.h).
 *
 * The drain thread owns everything here once the placement exists; the caller creates it
 * before the drain thread starts and frees it after the join (pthread_create and join order
 * those accesses).
 */
#include "recorder_place.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session.h"
#include "session_layout.h" /* TRC_PID_FOREIGN */

#define PLACE_PERIOD_NS 2000000ull /* 2 ms */
#define PLACE_BUSY_EVENTS_PER_S 1000000ull
#define PLACE_GROWTH_BYTES (4ull << 20) /* 2.6 ms of a producer at 1.6 GB/s */
#define PLACE_BACKOFF_MIN_NS 5000000ull /* 5 ms, doubling each time */
#define PLACE_BACKOFF_MAX_NS 1000000000ull /* 1 s */
#define PLACE_MAX_TRACKED 8 /* busy producers followed per period; more: as many as CPUs */
/* Confinement only while the machine runs at most the busy producers, one thread per CPU left
 * (the drain, say) and this many more (the writer and compressor) at once. */
#define PLACE_OURS_RUNNABLE 2
/* A count of this process's runnable threads (/proc/self/task: ~70 us for 7 threads here, 3 %
 * of the drain's time if done every period) explains the machine's for this many periods, as
 * long as the machine's count does not grow past the one it explained. */
#define PLACE_OURS_REUSE 16

struct place__stream {
	uint64_t key;
	uint32_t pid, tid;
	uint64_t events; /* this period */
};

struct recorder_place {
	cpu_set_t allowed; /* at start: what the user gave trace-run (taskset...) */
	int n_allowed;
	uint32_t self_pid;
	cpu_set_t applied; /* the threads' mask now */
	bool confined; /* applied != allowed */

	struct place__stream streams[PLACE_MAX_TRACKED];
	unsigned n_streams, last;

	uint64_t period_start_ns;
	uint64_t confined_resident; /* ring residency when confinement began */
	bool pressure; /* a producer waited or lost events since the last tick */
	uint64_t backoff_ns; /* the next backoff's length */
	uint64_t backoff_until_ns;
	uint64_t confinements;

	/* The last scan of our own runnable threads that explained the machine's count: that
	 * count, and for which allowance; reused for ours_reuse more periods. */
	long ours_explained, ours_allowance;
	unsigned ours_reuse;
};

struct recorder_place *recorder_place_new(void)
{
	const char *off = getenv("TRC_NO_PLACE");
	if (off && *off && strcmp(off, "0") != 0)
		return NULL;
	struct recorder_place *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (sched_getaffinity(0, sizeof(p->allowed), &p->allowed) != 0 ||
	    (p->n_allowed = CPU_COUNT(&p->allowed)) < 2) {
		free(p);
		return NULL;
	}
	p->applied = p->allowed;
	p->self_pid = (uint32_t)getpid();
	p->backoff_ns = PLACE_BACKOFF_MIN_NS;
	return p;
}

void recorder_place_count(struct recorder_place *p, const struct session_stream *st, uint64_t n)
{
	if (!p)
		return;
	/* Records come in runs of one stream: the last one looked up first. */
	if (p->last < p->n_streams && p->streams[p->last].key == st->key) {
		p->streams[p->last].events += n;
		return;
	}
	for (unsigned i = 0; i < p->n_streams; i++) {
		if (p->streams[i].key == st->key) {
			p->streams[i].events += n;
			p->last = i;
			return;
		}
	}
	if (p->n_streams == PLACE_MAX_TRACKED)
		return; /* the period ends with more producers than followed: no confinement */
	p->streams[p->n_streams] =
		(struct place__stream){.key = st->key, .pid = st->pid, .tid = st->tid, .events = n};
	p->last = p->n_streams++;
}

void recorder_place_pressure(struct recorder_place *p)
{
	if (p)
		p->pressure = true;
}

/* Reads /proc/PID/task/TID/stat into buf; returns where its fields after comm begin (" S ppid
 * ...": the state is field 3), or NULL. comm may hold anything, so fields are counted from the
 * last ')'. */
static char *place__task_stat(uint32_t pid, uint32_t tid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strrchr(buf, ')');
}

/* The CPU thread tid of process pid last ran on, or -1. */
static int place__cpu_of(uint32_t pid, uint32_t tid)
{
	if (pid & TRC_PID_FOREIGN)
		return -1; /* another pid namespace: its numbers are not ours */
	char buf[1024];
	char *s = place__task_stat(pid, tid, buf, sizeof(buf));
	if (!s)
		return -1;
	/* "processor" is field 39 */
	for (int field = 2; field < 39; field++) {
		s = strchr(s + 1, ' ');
		if (!s)
			return -1;
	}
	char *end;
	long cpu = strtol(s + 1, &end, 10);
	return end != s + 1 && cpu >= 0 && cpu < CPU_SETSIZE ? (int)cpu : -1;
}

/* The parent of process pid (/proc/PID/stat, field 4), or -1. */
static long place__ppid_of(uint32_t pid)
{
	char buf[1024];
	char *s = place__task_stat(pid, pid, buf, sizeof(buf));
	char *end;
	if (!s || s[1] != ' ' || s[2] == 0 || s[3] != ' ')
		return -1; /* ") S ppid ..." */
	long ppid = strtol(s + 4, &end, 10);
	return end != s + 4 ? ppid : -1;
}

/* Whether process pid is a descendant of this one: the traced tree (trace-run spawns the
 * program; what it starts stays below it unless it detaches). The (pid, tid) of a stream
 * come from the traced program's slot, so it could name any process of the machine and
 * choose which CPU the recorder keeps off; only the tree's own count. A detached daemon,
 * reparented above us, is refused too: no placement for it, which costs only speed. The walk
 * is bounded (a pid reused meanwhile ends it at init). */
static bool place__in_tree(const struct recorder_place *p, uint32_t pid)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		long ppid = place__ppid_of(pid);
		if (ppid == (long)p->self_pid)
			return true;
		if (ppid <= 1)
			return false;
		pid = (uint32_t)ppid;
	}
	return false;
}

/* The next thread of this process in d (opendir("/proc/self/task")), or 0 at the end. */
static pid_t place__next_task(DIR *d)
{
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (end != e->d_name && !*end && tid > 0)
			return (pid_t)tid;
	}
	return 0;
}

/* Sets every thread of this process to mask (threads started later inherit their creator's). */
static void place__apply(struct recorder_place *p, const cpu_set_t *mask)
{
	p->applied = *mask;
	DIR *d = opendir("/proc/self/task");
	if (!d) {
		(void)sched_setaffinity(0, sizeof(*mask), mask);
		return;
	}
	for (pid_t tid; (tid = place__next_task(d));)
		(void)sched_setaffinity(tid, sizeof(*mask), mask);
	closedir(d);
}

/* The file place__runnable reads: /proc/loadavg, or the test hook's (README "Test hooks").
 * The hook is read in every build, so what it names is opened as harmlessly as can be: not
 * through a symbolic link, without blocking (a FIFO would hold the drain thread for good),
 * and kept only if it is a regular file of this user's. -1 when there is none such. */
static int place__open_loadavg(void)
{
	const char *path = secure_getenv("TRC_TEST_PLACE_LOADAVG");
	if (!path || !*path)
		return open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Threads runnable on the whole machine now (/proc/loadavg's fourth field, "R/T"; the reader
 * included), or -1. */
static long place__runnable(void)
{
	int fd = place__open_loadavg();
	if (fd < 0)
		return -1;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *s = buf;
	for (int field = 1; field < 4 && s; field++)
		s = strchr(s + 1, ' ');
	if (!s)
		return -1;
	char *end;
	long r = strtol(s + 1, &end, 10);
	return end != s + 1 && *end == '/' ? r : -1;
}

/* This process's threads that are runnable now (state R; the caller included), or -1. */
static long place__runnable_ours(const struct recorder_place *p)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long n = 0;
	char buf[1024];
	for (pid_t tid; (tid = place__next_task(d));) {
		const char *s = place__task_stat(p->self_pid, (uint32_t)tid, buf, sizeof(buf));
		n += s && s[1] == ' ' && s[2] == 'R';
	}
	closedir(d);
	return n;
}

/* Whether a stream that gave `events` over period_ns is a busy producer. */
static bool place__busy(uint64_t events, uint64_t period_ns)
{
	return events * 1000000000ull >= PLACE_BUSY_EVENTS_PER_S * period_ns;
}

/* The allowed CPUs less the busy producers' ones; false when that leaves none, or there is
 * no busy producer, or one's CPU is unknown, or the machine has more threads to run than
 * CPUs without us: confined, the recorder would share the CPUs left with them, while free it
 * gets a share of every CPU. */
static bool place__choose(struct recorder_place *p, uint64_t period_ns, cpu_set_t *out)
{
	if (p->n_streams == PLACE_MAX_TRACKED)
		return false;
	unsigned busy = 0;
	for (unsigned i = 0; i < p->n_streams; i++)
		busy += place__busy(p->streams[i].events, period_ns);
	/* Enough busy producers to fill every CPU: nothing to spare (no /proc read needed). */
	if (!busy || busy >= (unsigned)p->n_allowed)
		return false;
	*out = p->allowed;
	for (unsigned i = 0; i < p->n_streams; i++) {
		const struct place__stream *s = &p->streams[i];
		if (!place__busy(s->events, period_ns))
			continue;
		/* A producer of this process (a recorder run in the program itself) would be
		 * confined with the recorder's threads: no placement. */
		if (s->pid == p->self_pid)
			return false;
		/* A thread outside the traced tree (its tid is read below as one of pid's
		 * threads: /proc/PID/task/TID). */
		if (!place__in_tree(p, s->pid))
			return false;
		int cpu = place__cpu_of(s->pid, s->tid);
		if (cpu < 0)
			return false;
		CPU_CLR(cpu, out);
	}
	if (!CPU_COUNT(out))
		return false;
	long runnable = place__runnable();
	long others_may = (long)busy + CPU_COUNT(out);
	if (runnable < 0)
		return false;
	if (runnable <= others_may + PLACE_OURS_RUNNABLE)
		return true;
	/* More than that: maybe ours. Confined, the recorder's threads (drain, writer,
	 * compressor, background compressor) queue on the CPUs left and all count as runnable,
	 * which read as a crowded machine every other period: every CPU back, then confined
	 * again, ~50 flips in a run of 100 ms, with the compressors on the producer's CPU half
	 * the time. So only the others' runnable threads count here. Read only past the quick
	 * test above, and then at most once every PLACE_OURS_REUSE periods while the machine's
	 * count stays within what the last read explained. */
	if (p->ours_reuse && runnable <= p->ours_explained && others_may == p->ours_allowance) {
		p->ours_reuse--;
		return true;
	}
	long ours = place__runnable_ours(p);
	bool ok = ours >= 0 && runnable - ours <= others_may;
	p->ours_explained = runnable;
	p->ours_allowance = others_may;
	p->ours_reuse = ok ? PLACE_OURS_REUSE : 0;
	return ok;
}

void recorder_place_tick(struct recorder_place *p, uint64_t now_ns, uint64_t resident_bytes)
{
	if (!p)
		return;
	if (!p->period_start_ns)
		p->period_start_ns = now_ns;
	if (resident_bytes < p->confined_resident)
		p->confined_resident = resident_bytes; /* rings freed: growth counts from here */
	if (p->confined &&
	    (p->pressure || resident_bytes >= p->confined_resident + PLACE_GROWTH_BYTES)) {
		/* The drain does not keep up on the CPUs left to it: all of them back, for longer
		 * each time. */
		place__apply(p, &p->allowed);
		p->confined = false;
		p->backoff_until_ns = now_ns + p->backoff_ns;
		if (p->backoff_ns < PLACE_BACKOFF_MAX_NS)
			p->backoff_ns *= 2;
	}
	p->pressure = false;
	uint64_t period_ns = now_ns - p->period_start_ns;
	if (period_ns < PLACE_PERIOD_NS)
		return;
	cpu_set_t want;
	if (now_ns < p->backoff_until_ns || !place__choose(p, period_ns, &want))
		want = p->allowed;
	if (!CPU_EQUAL(&want, &p->applied)) {
		bool confine = !CPU_EQUAL(&want, &p->allowed);
		if (confine && !p->confined) {
			p->confined_resident = resident_bytes;
			p->confinements++;
		}
		place__apply(p, &want);
		p->confined = confine;
	}
	p->n_streams = 0;
	p->last = 0;
	p->period_start_ns = now_ns;
}

uint64_t recorder_place_confinements(const struct recorder_place *p)
{
	return p ? p->confinements : 0;
}

void recorder_place_free(struct recorder_place *p)
{
	if (!p)
		return;
	if (p->confined)
		place__apply(p, &p->allowed);
	free(p);
}
