/* SPDX-License-Identifier: MIT */
/*
 * The interval tree: an augmented red-black tree of struct range_lock, keyed
 * by @start, each node caching in @subtree_last the largest @last of its
 * subtree.  Closed intervals [start, last].  Equal starts are allowed: a new
 * node goes to the right of every node with the same start, so an in-order
 * walk meets equal starts in insertion order.
 *
 * rb_parent_flags holds the parent pointer (nodes are 8-byte aligned) and
 * three flag bits: RB_BLACK (colour), RL_READER (mode, owned by protocol.c)
 * and RL_LINKED (the node is in a tree).  The tree code keeps RL_READER as it
 * finds it.  No locking here: callers hold the tree lock.
 */
#ifndef RANGELOCK_INTERVAL_TREE_H
#define RANGELOCK_INTERVAL_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#define RB_BLACK   ((uintptr_t)1)
#define RL_READER  ((uintptr_t)2)
#define RL_LINKED  ((uintptr_t)4)
#define RL_FLAGS   ((uintptr_t)7)

static inline struct range_lock *itree_parent(const struct range_lock *n)
{
	return (struct range_lock *)(n->rb_parent_flags & ~RL_FLAGS);
}

void rl_itree_insert(struct range_lock **root, struct range_lock *node);
void rl_itree_erase(struct range_lock **root, struct range_lock *node);
/* The in-order successor of @node, or NULL. */
struct range_lock *rl_itree_next_inorder(const struct range_lock *node);
/* The in-order first node intersecting [start, last], or NULL. */
struct range_lock *rl_itree_first(struct range_lock *root, uint64_t start,
				  uint64_t last);
/* The in-order next node after @node intersecting [start, last], or NULL. */
struct range_lock *rl_itree_next(struct range_lock *node, uint64_t start,
				 uint64_t last);
/* Check every red-black and augmentation invariant: NULL when they hold,
 * else a message; *count receives the number of nodes. */
const char *rl_itree_check(const struct range_lock *root, size_t *count);

#define itree_foreach(node, root, first, final)                      \
	for ((node) = rl_itree_first((root), (first), (final)); (node); \
	     (node) = rl_itree_next((node), (first), (final)))

#endif /* RANGELOCK_INTERVAL_TREE_H */
