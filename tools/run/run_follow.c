/* run_follow.c - the processes of the traced tree that trace-run waits for (run_follow.h).
 *
 * The children of a subreaper are listed in /proc/self/task/TID/children, one file per thread
 * of trace-run (an orphan is given to one of its threads). A zombie among them is reaped here
 * (waitpid on its pid alone: the command itself is reaped by run_main.c, the witness by
 * run_witness.c, never here).
 *
 * Threads: the main thread.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "run_follow.h"

bool run_follow_start(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

/* Adds pid to pids[0, *n) unless there already (up to max kept, all counted). */
static void run__follow_add(pid_t pid, pid_t *pids, uint32_t max, uint32_t *n)
{
	for (uint32_t k = 0; k < *n && k < max; k++)
		if (pids[k] == pid)
			return;
	if (*n < max)
		pids[*n] = pid;
	++*n;
}

/* The children listed in one task's children file: each reaped when it has ended, counted
 * when it runs. */
static void run__follow_task(const char *tid, pid_t skip, pid_t *pids, uint32_t max, uint32_t *n)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	long v;
	while (fscanf(f, "%ld", &v) == 1) {
		pid_t pid = (pid_t)v;
		if (v <= 0 || pid == skip)
			continue;
		int st;
		pid_t r;
		do
			r = waitpid(pid, &st, WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r == 0)
			run__follow_add(pid, pids, max, n);
	}
	fclose(f);
}

uint32_t run_follow_scan(pid_t skip, pid_t *pids, uint32_t max)
{
	uint32_t n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			run__follow_task(e->d_name, skip, pids, max, &n);
	closedir(d);
	return n;
}

void run_follow_names(const pid_t *pids, uint32_t n, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < n && off < len; i++) {
		char path[64], comm[32] = "?";
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pids[i]);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		off += (size_t)snprintf(buf + off, len - off, "%spid %d (%s)", i ? ", " : "",
					(int)pids[i], comm);
	}
}
