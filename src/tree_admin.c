/* SPDX-License-Identifier: MIT */
/*
 * librangelock: tree and request administration -- init, destroy, the
 * setters (set_fifo, defer_writers, set_fast_read, set_file), request
 * init, the version.
 * Each setter revokes the fast readers first (protocol.c): they are
 * requests too.
 */
#include <errno.h>
#include <string.h>

#include <rangelock/rangelock.h>

#include "file_lock.h"
#include "protocol.h"
#include "segments.h"
#include "tree_lock.h"

/* ---- setup ------------------------------------------------------------ */

void range_lock_tree_init(struct range_lock_tree *tree)
{
	if (!tree)
		rl_die("range_lock_tree_init", NULL, "NULL tree");
	memset(tree, 0, sizeof(*tree));
}

int range_lock_tree_set_fifo(struct range_lock_tree *tree, int fifo)
{
	int busy;

	if (!tree)
		rl_die("range_lock_tree_set_fifo", NULL, "NULL tree");
	if (tree_is_segmented(tree))
		return rl_seg_set_flag(tree, RANGE_LOCK_TREE_FLAG_FIFO, fifo, true);
	tree_lock(tree);
	rl_revoke_fast_readers(tree); /* fast readers are requests too */
	busy = tree->root != NULL;
	if (!busy) {
		if (fifo)
			tree_flags_store(tree, tree->flags | RANGE_LOCK_TREE_FLAG_FIFO);
		else
			tree_flags_store(tree, tree->flags & ~RANGE_LOCK_TREE_FLAG_FIFO);
	}
	tree_unlock(tree);
	return busy ? -EBUSY : 0;
}

int range_lock_tree_defer_writers(struct range_lock_tree *tree, int on)
{
	if (!tree)
		rl_die("range_lock_tree_defer_writers", NULL, "NULL tree");
	/* The user's tree's flag alone (never a segment's: defer.c); read
	 * with relaxed loads, so it may change while the tree is in use: a
	 * reader decides once per sleep, a writer once per call. */
	if (tree_is_segmented(tree))
		return rl_seg_set_flag(tree, RANGE_LOCK_TREE_FLAG_DEFER_WRITERS, on, false);
	tree_lock(tree);
	if (on)
		tree_flags_store(tree, tree->flags | RANGE_LOCK_TREE_FLAG_DEFER_WRITERS);
	else
		tree_flags_store(tree, tree->flags & ~RANGE_LOCK_TREE_FLAG_DEFER_WRITERS);
	tree_unlock(tree);
	return 0;
}

int range_lock_tree_set_fast_read(struct range_lock_tree *tree, int on)
{
	if (!tree)
		rl_die("range_lock_tree_set_fast_read", NULL, "NULL tree");
	if (tree_is_segmented(tree))
		return rl_seg_set_flag(tree, RANGE_LOCK_TREE_FLAG_NO_FAST_READ, !on, false);
	tree_lock(tree);
	rl_revoke_fast_readers(tree);
	if (on)
		tree_flags_store(tree, tree->flags & ~RANGE_LOCK_TREE_FLAG_NO_FAST_READ);
	else
		tree_flags_store(tree, tree->flags | RANGE_LOCK_TREE_FLAG_NO_FAST_READ);
	tree_unlock(tree);
	return 0;
}

int range_lock_tree_destroy(struct range_lock_tree *tree)
{
	struct range_lock_file *f = NULL;
	int busy;

	if (!tree)
		rl_die("range_lock_tree_destroy", NULL, "NULL tree");
	if (tree_is_segmented(tree)) {
		int r = rl_seg_destroy(tree); /* frees the segments */

		if (r)
			return r;
		/* a tree without segments now, bound if it was: unbind */
	}
	tree_lock(tree);
	rl_revoke_fast_readers(tree); /* a fast reader makes the tree busy */
	busy = tree->root != NULL;
	if (!busy) { /* a bound tree is unbound: its description closed */
		f = tree->file;
		__atomic_store_n(&tree->file, NULL, __ATOMIC_RELAXED);
	}
	tree_lock_release(tree_lock_word(tree), busy);
	if (f)
		rl_file_free(f);
	return busy ? -EBUSY : 0;
}

int range_lock_tree_set_file(struct range_lock_tree *tree, int fd)
{
	struct range_lock_file *f, *old = NULL;
	int r;

	if (!tree)
		rl_die("range_lock_tree_set_file", NULL, "NULL tree");
	r = rl_file_open(&f, fd); /* system calls: outside tree_lock */
	if (r)
		return r;
	if (tree_is_segmented(tree))
		return rl_seg_set_file(tree, f);
	tree_lock(tree);
	rl_revoke_fast_readers(tree); /* and bound trees never read fast */
	if (tree->root) {
		tree_unlock(tree);
		rl_file_free(f);
		return -EBUSY;
	}
	old = tree->file;
	__atomic_store_n(&tree->file, f, __ATOMIC_RELAXED);
	tree_unlock(tree);
	if (old)
		rl_file_free(old);
	return 0;
}

int range_lock_init(struct range_lock *lock, uint64_t start, uint64_t last)
{
	if (!lock)
		rl_die("range_lock_init", NULL, "NULL request");
	memset(lock, 0, sizeof(*lock));
	lock->start = start;
	lock->last = last;
	lock->subtree_last = last;
	if (start > last) {
		/* Refused by every call that takes it, naming the range. */
		lock->rb_parent_flags = RL_BAD_INIT;
		return -EINVAL;
	}
	return 0;
}

void range_lock_init_full(struct range_lock *lock)
{
	range_lock_init(lock, 0, RANGE_LOCK_FULL);
}

const char *rangelock_version(void)
{
	return RANGELOCK_VERSION_STRING;
}
