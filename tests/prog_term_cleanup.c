/* prog_term_cleanup.c - a program with a clean shutdown, for the signal tests:
 * `prog_term_cleanup READYFILE`. It traps SIGTERM and SIGINT (counting each run of its
 * handler), creates READYFILE once the handlers are in place, waits for a signal (at most
 * 30 s), then "cleans up" for 1.5 s (counting any further signal), prints
 * "handled N" with the number of handler runs and exits 7. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	handled++;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prog_term_cleanup READYFILE\n");
		return 2;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 3;
	close(fd);
	for (int i = 0; i < 3000 && !handled; i++)
		nap_ms(10);
	nap_ms(1500); /* the clean shutdown: a second signal here would be counted */
	printf("handled %d\n", (int)handled);
	return 7;
}
