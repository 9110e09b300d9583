/* prog_stack_sample.c - a known distribution of allocation sizes for sampled stacks
 * (tests/test_alloc_stacks.c): 20000 mallocs of 100 B, 2000 of 3000 B and 100 of 8192 B,
 * interleaved in a fixed order (every 10th a 3000, every 200th an 8192 instead), each freed at
 * once. Prints "sample 20000 2000 100". */
#include <stdio.h>
#include <stdlib.h>

void *volatile sample_sink;

int main(void)
{
	int n100 = 0, n3000 = 0, n8192 = 0;
	for (int i = 0; i < 22100; i++) {
		size_t size = 100;
		if (i % 221 == 0)
			size = 8192, n8192++;
		else if (i % 11 == 0)
			size = 3000, n3000++;
		else
			n100++;
		char *p = malloc(size);
		if (!p)
			return 1;
		p[0] = 1;
		sample_sink = p;
		free(p);
	}
	printf("sample %d %d %d\n", n100, n3000, n8192);
	return 0;
}
