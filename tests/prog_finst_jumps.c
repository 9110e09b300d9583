/* prog_finst_jumps.c - non-local jumps through instrumented frames (Makefile: prog_finst_*, built
 * with -finstrument-functions), for tests/test_calltrees.c. `prog_finst_jumps MODE`, exit 0:
 *   one     main: setjmp, foo() longjmps back, then bar()
 *   deep    main: setjmp, a() -> b() -> c() longjmps back over the three, then bar()
 *   nested  main: setjmp(outer), l1(): setjmp(inner), l2() -> l3() longjmps to inner, then
 *           l4() longjmps to outer; then bar()
 *   signal  main: sigsetjmp, work() raises SIGUSR1, whose handler siglongjmps out; then bar()
 *   loop    main: five times setjmp, thrower() -> inner() longjmps back; then bar()
 * Each function is noinline and does a little work so that it stays a call. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env, inner_env;
static sigjmp_buf sig_env;
static volatile int sink;

NOINLINE static void bar(void)
{
	sink++;
}

NOINLINE static void foo(void)
{
	sink++;
	longjmp(env, 1);
}

NOINLINE static void c(void)
{
	sink++;
	longjmp(env, 1);
}

NOINLINE static void b(void)
{
	c();
	sink++;
}

NOINLINE static void a(void)
{
	b();
	sink++;
}

NOINLINE static void l3(void)
{
	sink++;
	longjmp(inner_env, 1);
}

NOINLINE static void l2(void)
{
	l3();
	sink++;
}

NOINLINE static void l4(void)
{
	sink++;
	longjmp(env, 2);
}

NOINLINE static void l1(void)
{
	if (!setjmp(inner_env))
		l2();
	l4();
	sink++;
}

NOINLINE static void handler(int sig)
{
	sink += sig;
	siglongjmp(sig_env, 1);
}

NOINLINE static void work(void)
{
	raise(SIGUSR1);
	sink++;
}

NOINLINE static void inner(int i)
{
	sink += i;
	longjmp(env, i + 1);
}

NOINLINE static void thrower(int i)
{
	inner(i);
	sink++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "one";
	if (strcmp(mode, "one") == 0) {
		if (!setjmp(env))
			foo();
	} else if (strcmp(mode, "deep") == 0) {
		if (!setjmp(env))
			a();
	} else if (strcmp(mode, "nested") == 0) {
		if (!setjmp(env))
			l1();
	} else if (strcmp(mode, "signal") == 0) {
		signal(SIGUSR1, handler);
		if (!sigsetjmp(sig_env, 1))
			work();
	} else if (strcmp(mode, "loop") == 0) {
		for (volatile int i = 0; i < 5; i++)
			if (!setjmp(env))
				thrower(i);
	} else {
		fprintf(stderr, "prog_finst_jumps: unknown mode %s\n", mode);
		return 2;
	}
	bar();
	printf("sink=%d\n", sink);
	return 0;
}
