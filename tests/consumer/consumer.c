/* A program that uses librangelock the way an application would. */
#include <rangelock/rangelock.h>
#include <stdio.h>
#include <string.h>

static DEFINE_RANGE_LOCK_TREE(tree);

int main(void)
{
	struct range_lock a, b;

	range_lock_init(&a, 0, 99);
	range_lock_init(&b, 100, 199);
	range_write_lock(&tree, &a);
	if (range_write_trylock(&tree, &b) != 1)
		return 1;
	range_write_unlock(&tree, &b);
	range_write_unlock(&tree, &a);
	if (strcmp(rangelock_version(), RANGELOCK_VERSION_STRING) != 0)
		return 2;
	printf("consumer ok: librangelock %s\n", rangelock_version());
	return range_lock_tree_destroy(&tree);
}
