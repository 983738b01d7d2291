/* SPDX-License-Identifier: MIT */
/*
 * The checking mode (RANGELOCK_CHECKS, on in Debug builds): the whole-tree
 * invariant at every release of tree_lock, and the lockdep analogs --
 * self-deadlock, lock order across trees, threads exiting with ranges held.
 * Without RANGELOCK_CHECKS every hook is an empty inline.
 */
#ifndef RANGELOCK_CHECKS_H
#define RANGELOCK_CHECKS_H

#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#if RANGELOCK_CHECKS
/* Under tree_lock: abort with a message if the tree breaks an invariant. */
void rl_check_tree(const struct range_lock_tree *tree);
/* Under tree_lock, before a request that must wait enters: abort if the
 * calling thread holds a conflicting range of @tree.  @shown is the request
 * as its caller sees it, for the message: @lock itself, or the request a
 * part (@lock) of a spanning request belongs to, or the request a piece
 * of a growth in a segmented tree grows (never reported as its own
 * blocker). */
void rl_check_self_deadlock(const struct range_lock_tree *tree,
			    const struct range_lock *lock, bool reader,
			    const char *call, const struct range_lock *shown);
/* After a lock call succeeded (no tree_lock held): record the hold, check
 * the order of trees this thread holds. */
void rl_check_acquired(struct range_lock_tree *tree, struct range_lock *lock,
		       int subclass, void *site);
/* Under tree_lock, before a held request leaves. */
void rl_check_released(const struct range_lock_tree *tree,
		       const struct range_lock *lock);
/* Under tree_lock: a held request's range changed (shrink, grow). */
void rl_check_resized(const struct range_lock_tree *tree,
		      const struct range_lock *lock);
#else
static inline void rl_check_tree(const struct range_lock_tree *tree) { (void)tree; }
static inline void rl_check_self_deadlock(const struct range_lock_tree *tree,
					  const struct range_lock *lock,
					  bool reader, const char *call,
					  const struct range_lock *shown)
{
	(void)tree; (void)lock; (void)reader; (void)call; (void)shown;
}
static inline void rl_check_acquired(struct range_lock_tree *tree,
				     struct range_lock *lock, int subclass,
				     void *site)
{
	(void)tree; (void)lock; (void)subclass; (void)site;
}
static inline void rl_check_released(const struct range_lock_tree *tree,
				     const struct range_lock *lock)
{
	(void)tree; (void)lock;
}
static inline void rl_check_resized(const struct range_lock_tree *tree,
				    const struct range_lock *lock)
{
	(void)tree; (void)lock;
}
#endif

#endif /* RANGELOCK_CHECKS_H */
