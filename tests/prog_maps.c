/* prog_maps.c - maps memory outside malloc, each way the preload library records:
 * mmap of 8 MiB (anonymous, private), mremap of it to 16 MiB, munmap of that, sbrk of 1 MiB
 * and back, and an mmap of a file of 4096 bytes (argv[1]) unmapped again. Every page mapped is
 * touched. Prints "maps done". Threads: one. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) static void *map_anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		memset(p, 1, n);
	return p;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	void *p = map_anon(8u << 20);
	if (p == MAP_FAILED)
		return 1;
	void *q = mremap(p, 8u << 20, 16u << 20, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		return 1;
	memset(q, 2, 16u << 20);
	if (munmap(q, 16u << 20))
		return 1;
	void *b = sbrk(1 << 20);
	if (b == (void *)-1)
		return 1;
	memset(b, 3, 1 << 20);
	sbrk(-(1 << 20));
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return 1;
	void *f = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return 1;
	volatile char c = *(volatile char *)f;
	(void)c;
	munmap(f, 4096);
	puts("maps done");
	return 0;
}
