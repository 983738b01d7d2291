/* Two threads write disjoint halves of a buffer at the same time; then
 * the whole buffer is read under one read lock.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <pthread.h>
#include <stdio.h>

static DEFINE_RANGE_LOCK_TREE(tree);    /* one tree per resource */
static char data[1024];                 /* the resource: units are bytes */

static void *writer(void *arg)
{
	uint64_t start = (uintptr_t)arg;
	struct range_lock r;

	range_lock_init(&r, start, start + 511);
	range_write_lock(&tree, &r);    /* [start, start + 511] only */
	for (uint64_t i = start; i <= start + 511; i++)
		data[i] = start ? 'b' : 'a';
	range_write_unlock(&tree, &r);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	struct range_lock all;

	pthread_create(&t[0], NULL, writer, (void *)0);
	pthread_create(&t[1], NULL, writer, (void *)512);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);

	range_lock_init_full(&all);     /* [0, RANGE_LOCK_FULL] */
	range_read_lock(&tree, &all);
	printf("%c%c\n", data[0], data[1023]);  /* "ab" */
	range_read_unlock(&tree, &all);
	return range_lock_tree_destroy(&tree);  /* 0: nothing held */
}
