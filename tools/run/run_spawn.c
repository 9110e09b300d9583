/* run_spawn.c - fork, hold, exec: see run_spawn.h for why the child waits for a go-ahead. */
#include "run_spawn.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

unsigned run_spawn_guard_std_fds(void)
{
	unsigned closed = 0;
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free descriptor: this one, since the ones below it are open. */
		int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n == fd)
			closed |= 1u << fd;
		else if (n >= 0)
			close(n);
	}
	return closed;
}

static void run__child(char **argv, int go_rd, int err_wr, int session_fd, const char *env_name,
		       const char *preload, const sigset_t *child_mask, unsigned closed_std_fds)
{
	/* Only async-signal-safe calls until exec, plus setenv: the parent has no other threads
	 * yet (run_spawn_prepare runs before any thread is started), so the heap is consistent. */
	char go;
	ssize_t n;
	do
		n = read(go_rd, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(RUN_SPAWN_ABORTED_STATUS);
	close(go_rd);

	if (session_fd >= 0) {
		/* The session fd crosses exec: clear close-on-exec on it. */
		int flags = fcntl(session_fd, F_GETFD);
		if (flags >= 0)
			fcntl(session_fd, F_SETFD, flags & ~FD_CLOEXEC);
		char num[16];
		snprintf(num, sizeof(num), "%d", session_fd);
		setenv(env_name, num, 1);
	}
	if (preload) {
		const char *old = getenv("LD_PRELOAD");
		if (old && *old) {
			size_t len = strlen(preload) + strlen(old) + 2;
			char *both = malloc(len);
			if (both) {
				snprintf(both, len, "%s:%s", preload, old);
				setenv("LD_PRELOAD", both, 1);
			}
		} else {
			setenv("LD_PRELOAD", preload, 1);
		}
	}
	sigprocmask(SIG_SETMASK, child_mask, NULL);
	/* The program gets its descriptors 0-2 as they were given to trace-run. */
	for (int fd = 0; fd <= 2; fd++)
		if (closed_std_fds & (1u << fd))
			close(fd);
	execvp(argv[0], argv);
	int e = errno;
	ssize_t w = write(err_wr, &e, sizeof(e));
	(void)w;
	_exit(e == ENOENT ? 127 : 126);
}

int run_spawn_prepare(struct run_child *c, char **argv, int session_fd, const char *env_name,
		      const char *preload, const sigset_t *child_mask)
{
	int go[2], err[2];
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		int e = -errno;
		close(go[0]);
		close(go[1]);
		return e;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return e;
	}
	if (pid == 0) {
		close(go[1]);
		close(err[0]);
		run__child(argv, go[0], err[1], session_fd, env_name, preload, child_mask,
			   c->closed_std_fds);
	}
	close(go[0]);
	close(err[1]);
	c->pid = pid;
	c->go_fd = go[1];
	c->err_fd = err[0];
	return 0;
}

int run_spawn_go(struct run_child *c)
{
	char go = 'g';
	ssize_t n;
	do
		n = write(c->go_fd, &go, 1);
	while (n < 0 && errno == EINTR);
	int werr = n == 1 ? 0 : -errno;
	close(c->go_fd);
	c->go_fd = -1;
	if (werr) {
		close(c->err_fd);
		c->err_fd = -1;
		return werr;
	}
	int e = 0;
	do
		n = read(c->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	if (n == (ssize_t)sizeof(e))
		return e > 0 ? e : EIO;
	return 0;
}

void run_spawn_abort(struct run_child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	c->go_fd = c->err_fd = -1;
	int st;
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* True when every path of a colon-separated list is readable. */
static bool run__all_readable(const char *list)
{
	char *copy = strdup(list), *save = NULL;
	bool ok = copy != NULL;
	for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
		ok = ok && access(p, R_OK) == 0;
	free(copy);
	return ok;
}

char *run_find_preload(void)
{
	const char *env = getenv("TRC_PRELOAD");
	if (env && *env)
		return run__all_readable(env) ? strdup(env) : NULL;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	static const char *const rel[] = {"/../lib/libtrc-preload.so", "/libtrc-preload.so",
					  "/../lib/trc/libtrc-preload.so"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		size_t len = strlen(exe) + strlen(rel[i]) + 1;
		char *path = malloc(len);
		if (!path)
			return NULL;
		snprintf(path, len, "%s%s", exe, rel[i]);
		char *real = realpath(path, NULL);
		free(path);
		if (real && access(real, R_OK) == 0)
			return real;
		free(real);
	}
	return NULL;
}
