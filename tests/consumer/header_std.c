/* SPDX-License-Identifier: MIT */
/*
 * The public header in a strict project (header_std.cmake): compiled as C89,
 * gnu89, C99, C11 and C17, and as C++98, C++11 and C++17, each with
 * -pedantic -Wall -Wextra -Werror, by gcc and clang (g++ and clang++).
 * Uses the static initialisers and the tree's anonymous union member by
 * its name, as existing users do.  Valid C89 and C++ both.
 */
#include <rangelock/rangelock.h>

static DEFINE_RANGE_LOCK_TREE(tree);
static DEFINE_RANGE_LOCK_TREE_FIFO(fifo_tree);

int header_std_check(void);

int header_std_check(void)
{
	struct range_lock_tree t = RANGE_LOCK_TREE_INITIALIZER(t);
	struct range_lock r;
	int x;

	t.file = 0; /* the anonymous union's member */
	x = range_lock_init(&r, 0, 9);
	return x + (tree.file == 0) + (fifo_tree.file == 0) + (t.file == 0);
}
