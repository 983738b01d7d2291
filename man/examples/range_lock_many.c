/* Copy a range of a buffer to another offset: read one range and write
 * the other as one arrival, so that two copies in opposite directions
 * cannot deadlock.
 * cc example.c -lrangelock -pthread */
#include <rangelock/rangelock.h>
#include <stdio.h>
#include <string.h>

static DEFINE_RANGE_LOCK_TREE(tree);
static char file[8192];

static void copy_range(uint64_t from, uint64_t to, size_t len)
{
	struct range_lock src, dst;
	struct range_lock_item set[] = {
		{ &src, RANGE_LOCK_READ },
		{ &dst, RANGE_LOCK_WRITE },
	};

	range_lock_init(&src, from, from + len - 1);
	range_lock_init(&dst, to, to + len - 1);
	range_lock_many(&tree, set, 2);         /* both, or (on give-up) none */
	memmove(file + to, file + from, len);   /* ranges may overlap */
	range_unlock_many(&tree, set, 2);
}

int main(void)
{
	memcpy(file, "abc", 3);
	copy_range(0, 4096, 3);
	copy_range(4096, 1, 3);
	printf("%.4s\n", file);                 /* "aabc" */
	return range_lock_tree_destroy(&tree);
}
