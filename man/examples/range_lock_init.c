/* Ways to prepare requests; a request is reused once unlocked.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <errno.h>

static DEFINE_RANGE_LOCK_TREE(tree);

int main(void)
{
	DEFINE_RANGE_LOCK(header, 0, 511);      /* [0, 511] */
	struct range_lock body;

	if (range_lock_init(&body, 512, RANGE_LOCK_FULL) != 0)
		return 1;
	range_read_lock(&tree, &header);
	range_write_lock(&tree, &body);         /* disjoint: no wait */
	range_write_unlock(&tree, &body);
	range_read_unlock(&tree, &header);

	if (range_lock_init(&body, 10, 9) != -EINVAL)   /* start > last */
		return 1;
	range_lock_init_full(&body);            /* the whole resource */
	range_write_lock(&tree, &body);
	range_write_unlock(&tree, &body);
	return range_lock_tree_destroy(&tree);
}
