/* A tree inside an object, set up before any thread uses it and checked
 * by destroy before the object is freed.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>
#include <stdlib.h>

struct buffer {
	struct range_lock_tree lock;    /* guards bytes of data[] */
	char data[1 << 20];
};

static struct buffer *buffer_new(int fifo)
{
	struct buffer *b = malloc(sizeof(*b));

	if (!b)
		return NULL;
	range_lock_tree_init(&b->lock);
	/* configuration: on an empty tree, before the threads start */
	if (fifo && range_lock_tree_set_fifo(&b->lock, 1) != 0)
		abort();
	return b;
}

static int buffer_free(struct buffer *b)
{
	int r = range_lock_tree_destroy(&b->lock);

	if (r == 0)                     /* -EBUSY: someone still uses it */
		free(b);
	return r;
}

int main(void)
{
	struct buffer *b = buffer_new(1);
	struct range_lock w;

	if (!b)
		return 1;
	range_lock_init(&w, 0, 4095);
	range_write_lock(&b->lock, &w);
	b->data[0] = 'x';
	printf("destroy while held: %d\n", range_lock_tree_destroy(&b->lock));
	range_write_unlock(&b->lock, &w);
	printf("destroy when unused: %d\n", buffer_free(b));
	return 0;
}
