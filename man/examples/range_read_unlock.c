/* Each unlock names the mode it was locked in.  A writer that has
 * finished writing can downgrade to a read hold: readers of the range
 * get in at once, writers still wait, and the range is never free.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>

static DEFINE_RANGE_LOCK_TREE(tree);

int main(void)
{
	struct range_lock w, r, w2;

	range_lock_init(&w, 0, 99);
	range_write_lock(&tree, &w);
	/* ... write [0, 99] ... */
	range_downgrade_write(&tree, &w);       /* now a read hold */

	range_lock_init(&r, 50, 59);
	range_lock_init(&w2, 50, 59);
	printf("reader after the downgrade: %d\n", range_read_trylock(&tree, &r));
	printf("writer after the downgrade: %d\n", range_write_trylock(&tree, &w2));

	range_read_unlock(&tree, &r);
	range_read_unlock(&tree, &w);           /* read-unlock: it reads now */
	printf("writer after both unlocks: %d\n", range_write_trylock(&tree, &w2));
	range_write_unlock(&tree, &w2);
	return range_lock_tree_destroy(&tree);
}
