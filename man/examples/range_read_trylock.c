/* Take a range only if nobody conflicts with it now; otherwise do
 * something else (here: count the miss) and never wait.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>

static DEFINE_RANGE_LOCK_TREE(tree);

int main(void)
{
	struct range_lock held, a, b, c;

	range_lock_init(&held, 100, 199);
	range_read_lock(&tree, &held);          /* [100, 199] is read */

	range_lock_init(&a, 150, 250);          /* meets the reader */
	range_lock_init(&b, 150, 250);
	range_lock_init(&c, 300, 399);          /* meets nothing */
	printf("read [150, 250]: %d\n", range_read_trylock(&tree, &a));
	printf("write [150, 250]: %d\n", range_write_trylock(&tree, &b));
	printf("write [300, 399]: %d\n", range_write_trylock(&tree, &c));

	/* 1: held, unlock it as usual; 0: not held, not in the tree */
	range_read_unlock(&tree, &a);
	range_write_unlock(&tree, &c);
	range_read_unlock(&tree, &held);
	return range_lock_tree_destroy(&tree);
}
