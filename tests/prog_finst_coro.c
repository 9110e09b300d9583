/* prog_finst_coro.c - two coroutines (makecontext/swapcontext) built with
 * -finstrument-functions (Makefile: prog_finst_*), for tests/test_calltrees.c. main -> run()
 * switches to co_a; co_a and co_b take turns: each calls its step function, then switches to the
 * other, three times; co_a then returns (to main's context, its uc_link), and run() switches to
 * co_b, which returns too. Prints "steps=6" and exits 0. */
#include <stdio.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define STACK_BYTES (64 * 1024)

static ucontext_t main_ctx, ctx_a, ctx_b;
static char stack_a[STACK_BYTES], stack_b[STACK_BYTES];
static volatile int steps;

NOINLINE static void step_a(void)
{
	steps++;
}

NOINLINE static void step_b(void)
{
	steps++;
}

NOINLINE static void co_a(void)
{
	for (int i = 0; i < 3; i++) {
		step_a();
		swapcontext(&ctx_a, &ctx_b);
	}
}

NOINLINE static void co_b(void)
{
	for (int i = 0; i < 3; i++) {
		step_b();
		swapcontext(&ctx_b, &ctx_a);
	}
}

NOINLINE static int run(void)
{
	if (getcontext(&ctx_a) != 0 || getcontext(&ctx_b) != 0)
		return 1;
	ctx_a.uc_stack.ss_sp = stack_a;
	ctx_a.uc_stack.ss_size = sizeof(stack_a);
	ctx_a.uc_link = &main_ctx;
	makecontext(&ctx_a, co_a, 0);
	ctx_b.uc_stack.ss_sp = stack_b;
	ctx_b.uc_stack.ss_size = sizeof(stack_b);
	ctx_b.uc_link = &main_ctx;
	makecontext(&ctx_b, co_b, 0);
	if (swapcontext(&main_ctx, &ctx_a) != 0) /* back when co_a returns */
		return 1;
	if (swapcontext(&main_ctx, &ctx_b) != 0) /* back when co_b returns */
		return 1;
	return 0;
}

int main(void)
{
	if (run() != 0)
		return 1;
	printf("steps=%d\n", steps);
	return 0;
}
