/* A program for the symbol-version test (check_versions.sh): it uses the
 * calls of release 0.1, and with -DUSE_0_2 also a call added in 0.2. */
#include <rangelock/rangelock.h>
#include <stdio.h>

int main(void)
{
	struct range_lock_tree tree;
	struct range_lock lock;

	range_lock_tree_init(&tree);
#ifdef USE_0_2
	if (range_lock_tree_set_fifo(&tree, 1) != 0)
		return 1;
#endif
	range_lock_init_full(&lock);
	range_write_lock(&tree, &lock);
	range_write_unlock(&tree, &lock);
	printf("ran against librangelock %s\n", rangelock_version());
	return range_lock_tree_destroy(&tree);
}
