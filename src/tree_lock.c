/* SPDX-License-Identifier: MIT */
/* The slow path of the internal tree lock; see tree_lock.h. */
#include "tree_lock.h"

/* Spin iterations before sleeping; the lock is held for a tree walk, well
 * under a microsecond, so a short spin usually wins. */
#define TREE_LOCK_SPIN 100

uintptr_t tree_lock_acquire_slow(tree_word_t *word)
{
	/* Once we have slept we take the lock with TL_SLEEPERS set: others may
	 * still sleep, and our release must wake one of them. */
	uintptr_t mine = TL_LOCKED;

	for (int spins = 0;;) {
		uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);

		if (w > TL_FAST_BITS) {
			/* A fast holder: displace it; the caller materialises it. */
			if (atomic_compare_exchange_weak_explicit(
				    word, &w, mine, memory_order_acquire,
				    memory_order_relaxed)) {
				rl_hb_acquire(word); /* from its fast acquire */
				return w;
			}
			continue;
		}
		if (!(w & TL_LOCKED)) {
			if (atomic_compare_exchange_weak_explicit(
				    word, &w, mine, memory_order_acquire,
				    memory_order_relaxed)) {
				rl_hb_acquire(word);
				return 0;
			}
			continue;
		}
		if (spins < TREE_LOCK_SPIN && !(w & TL_SLEEPERS)) {
			spins++;
			rl_cpu_relax();
			continue;
		}
		if (!(w & TL_SLEEPERS) &&
		    !atomic_compare_exchange_weak_explicit(word, &w, w | TL_SLEEPERS,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		rl_wait(tree_word_futex(word), (uint32_t)(TL_LOCKED | TL_SLEEPERS),
			CLOCK_MONOTONIC, NULL, 0);
		mine = TL_LOCKED | TL_SLEEPERS;
	}
}
