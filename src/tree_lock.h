/* SPDX-License-Identifier: MIT */
/*
 * The internal lock that serialises every change to a tree (the kernel's
 * tree->lock, a spinlock there).  A three-state futex mutex (Drepper,
 * "Futexes Are Tricky", mutex 2) that spins briefly before it sleeps:
 *   0 free, 1 locked, 2 locked and somebody may sleep.
 * Pure spinning stalls every spinner for a time slice when the holder is
 * preempted (more threads than cores); sleeping after a bounded spin keeps
 * oversubscribed runs sane.  Acquire order on taking it, release order on
 * dropping it: the tree and every field written under it are published
 * through this lock.
 */
#ifndef RANGELOCK_TREE_LOCK_H
#define RANGELOCK_TREE_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "wait.h"

void tree_lock_acquire_slow(_Atomic uint32_t *word);

static inline void tree_lock_acquire(_Atomic uint32_t *word)
{
	uint32_t expected = 0;

	if (__builtin_expect(atomic_compare_exchange_strong_explicit(
		    word, &expected, 1, memory_order_acquire,
		    memory_order_relaxed), 1))
		return;
	tree_lock_acquire_slow(word);
}

static inline void tree_lock_release(_Atomic uint32_t *word)
{
	if (__builtin_expect(atomic_exchange_explicit(word, 0,
						      memory_order_release) == 2, 0))
		rl_wake_one(word);
}

#endif /* RANGELOCK_TREE_LOCK_H */
