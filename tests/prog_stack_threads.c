/* prog_stack_threads.c - four threads allocating at once, each under a stack of its own
 * (tests/test_alloc_stacks.c): thread K (0-3) mallocs COUNT blocks of 1000+K bytes, each under
 *   start_thread;thread_main;stack_a_enter;stack_b_recurse (3+5K times);stack_b_leaf
 * all four released together so that their captures overlap. Prints "threads 4 COUNT". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *stack_a_enter(int depth, size_t size);

static pthread_barrier_t go;
static int count;
void *volatile threads_sink;

__attribute__((noipa)) static void *thread_main(void *arg)
{
	int k = (int)(long)arg;
	pthread_barrier_wait(&go);
	for (int i = 0; i < count; i++)
		threads_sink = stack_a_enter(3 + 5 * k, 1000 + (size_t)k);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prog_stack_threads COUNT\n");
		return 2;
	}
	count = atoi(argv[1]);
	pthread_t t[4];
	pthread_barrier_init(&go, NULL, 4);
	for (long k = 0; k < 4; k++)
		if (pthread_create(&t[k], NULL, thread_main, (void *)k) != 0)
			return 1;
	for (int k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	printf("threads 4 %d\n", count);
	return 0;
}
