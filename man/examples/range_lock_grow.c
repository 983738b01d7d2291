/* Grow a held write range to append, then shrink it back, without letting
 * go of what was held (nobody gets in between).
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>

static DEFINE_RANGE_LOCK_TREE(tree);

int main(void)
{
	DEFINE_RANGE_LOCK(r, 0, 99);

	range_write_lock(&tree, &r);
	if (range_lock_grow(&tree, &r, 0, 199) != 0)   /* waits for [100, 199] */
		return 1;
	if (range_lock_shrink(&tree, &r, 100, 199) != 0) /* frees [0, 99] now */
		return 1;
	printf("holding [%llu, %llu]\n", (unsigned long long)r.start,
	       (unsigned long long)r.last);
	range_write_unlock(&tree, &r);
	return range_lock_tree_destroy(&tree);
}
