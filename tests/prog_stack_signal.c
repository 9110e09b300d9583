/* prog_stack_signal.c - allocations made inside signal handlers (tests/test_alloc_stacks.c):
 *   raised   sig_outer;sig_raise raises SIGUSR1; its handler on_usr1 mallocs 5555 B through
 *            stack_b_leaf (lib_stack_b.so): the stack is the handler's over the frames the
 *            signal interrupted (raise's in libc, sig_raise, sig_outer, main).
 *   timer    sig_outer;sig_spin spins until SIGALRM (an interval timer, 1 ms, armed before)
 *            arrives; its handler on_alarm mallocs 6666 B through stack_b_leaf once the
 *            loop runs: the interrupted frame is sig_spin's, wherever the signal found it.
 * Neither interrupts an allocation (the handlers' captures are not nested in another).
 * Prints "signal raised timer". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

void *stack_b_leaf(size_t size);

static volatile sig_atomic_t alarmed, spinning;
void *volatile signal_sink;

__attribute__((noipa)) static void on_usr1(int sig)
{
	(void)sig;
	signal_sink = stack_b_leaf(5555);
}

__attribute__((noipa)) static void on_alarm(int sig)
{
	(void)sig;
	if (!spinning)
		return; /* not in the loop yet (still in setitimer): the next tick will be */
	if (!alarmed)
		signal_sink = stack_b_leaf(6666);
	alarmed = 1;
}

__attribute__((noipa)) static void sig_raise(void)
{
	raise(SIGUSR1);
	signal_sink = 0;
}

__attribute__((noipa)) static unsigned long sig_spin(void)
{
	unsigned long spins = 0;
	spinning = 1;
	while (!alarmed)
		spins++;
	return spins;
}

__attribute__((noipa)) static void sig_outer(int timer)
{
	if (!timer) {
		sig_raise();
		return;
	}
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	unsigned long spins = sig_spin();
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	signal_sink = (void *)spins;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sig_outer(0);
	sig_outer(1);
	printf("signal raised timer\n");
	return 0;
}
