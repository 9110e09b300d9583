/* prog_finst_calls.c - a program built with -finstrument-functions (Makefile: prog_finst_*),
 * for the preload library's function hooks: `prog_finst_calls N` computes fib(N) recursively
 * and prints "fib=F calls=C addr=0x..." (C = calls of fib, addr = fib's address), exit 0. */
#include <stdio.h>
#include <stdlib.h>

static long calls;

__attribute__((noinline)) static long fib(int n)
{
	calls++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 15;
	long f = fib(n);
	printf("fib=%ld calls=%ld addr=%p\n", f, calls, (void *)&fib);
	return 0;
}
