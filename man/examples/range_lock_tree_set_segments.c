/* Byte ranges of a file, four threads on four 1 MiB regions: with 64
 * segments by stripes of 64 KiB, each thread's locks run in a segment of
 * their own; a range across a stripe border spans two segments.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <pthread.h>
#include <stdio.h>

static struct range_lock_tree tree;

static void *worker(void *arg)
{
	unsigned long long base = (unsigned long long)(unsigned long)arg << 20;

	for (int i = 0; i < 1000; i++) {
		struct range_lock r;

		range_lock_init(&r, base + 4096, base + 8191);
		range_write_lock(&tree, &r);
		/* ... write those bytes ... */
		range_write_unlock(&tree, &r);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	struct range_lock across;

	range_lock_tree_init(&tree);
	if (range_lock_tree_set_segments(&tree, 64, 16) != 0)
		return 1;
	for (unsigned long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	range_lock_init(&across, 65000, 66000); /* stripes 0 and 1 */
	range_read_lock(&tree, &across);
	range_read_unlock(&tree, &across);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	puts("done");
	return range_lock_tree_destroy(&tree); /* frees the segments */
}
