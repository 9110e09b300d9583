/* prog_finst_procs.c - processes made inside instrumented frames (Makefile: prog_finst_*, built
 * with -finstrument-functions), for tests/test_calltrees.c. `prog_finst_procs MODE [FILE]`:
 *   fork        main -> spawn(): fork; the child calls child_work(), the parent waits for it
 *               and calls parent_work(); both return to main, which calls done()
 *   daemon      main: daemon(1, 1); the detached child creates FILE.started, waits for
 *               FILE.go to exist (at most
 *               20 s), then work() -> step() three times, then creates FILE
 *   forkexec    main -> spawn(): fork, the child execs this program in mode leaf; the parent
 *               waits, then done()
 *   vforkexec   the same with vfork
 *   threadexec  main starts a thread, worker() -> do_exec() execs this program in mode leaf
 *               while main waits in pthread_join
 *   leaf        main -> leaf_work()
 * Exit 0 (the exec'd image's); 1 when a call fails. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile int sink;
static char self[4096];

NOINLINE static void leaf_work(void)
{
	sink++;
}

NOINLINE static void child_work(void)
{
	sink++;
}

NOINLINE static void parent_work(void)
{
	sink++;
}

NOINLINE static void done(void)
{
	sink++;
}

NOINLINE static void step(void)
{
	sink++;
}

NOINLINE static void work(void)
{
	for (int i = 0; i < 3; i++)
		step();
}

NOINLINE static void exec_leaf(void)
{
	execl(self, self, "leaf", (char *)NULL);
	_exit(1);
}

NOINLINE static int spawn(const char *mode)
{
	pid_t pid = strcmp(mode, "vforkexec") == 0 ? vfork() : fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (strcmp(mode, "fork") == 0) {
			child_work();
			return 0;
		}
		execl(self, self, "leaf", (char *)NULL);
		_exit(1);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	if (strcmp(mode, "fork") == 0)
		parent_work();
	return 0;
}

NOINLINE static void do_exec(void)
{
	exec_leaf();
}

NOINLINE static void *worker(void *arg)
{
	(void)arg;
	do_exec();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fork";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	if (strcmp(mode, "leaf") == 0) {
		leaf_work();
		return 0;
	}
	if (strcmp(mode, "daemon") == 0) {
		if (argc < 3 || daemon(1, 1) != 0)
			return 1;
		/* Detached: waits (at most 20 s) for FILE.go, which the test makes when it wants
		 * the work done. */
		char go[4200];
		snprintf(go, sizeof(go), "%s.started", argv[2]);
		FILE *started = fopen(go, "w");
		if (!started)
			return 1;
		fclose(started);
		snprintf(go, sizeof(go), "%s.go", argv[2]);
		for (int i = 0; i < 2000 && access(go, F_OK) != 0; i++)
			usleep(10000);
		work();
		FILE *f = fopen(argv[2], "w");
		if (!f)
			return 1;
		fclose(f);
		return 0;
	}
	if (strcmp(mode, "threadexec") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) != 0)
			return 1;
		pthread_join(t, NULL);
		return 1; /* not reached: the exec ends this image */
	}
	if (spawn(mode) != 0)
		return 1;
	done();
	return 0;
}
