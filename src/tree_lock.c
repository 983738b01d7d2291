/* SPDX-License-Identifier: MIT */
/* The slow path of the internal tree lock; see tree_lock.h. */
#include "tree_lock.h"

/* Spin iterations before sleeping; the tree lock is held for a tree walk,
 * well under a microsecond, so a short spin usually wins. */
#define TREE_LOCK_SPIN 100

void tree_lock_acquire_slow(_Atomic uint32_t *word)
{
	uint32_t v;
	int i;

	for (i = 0; i < TREE_LOCK_SPIN; i++) {
		v = atomic_load_explicit(word, memory_order_relaxed);
		if (v == 0 && atomic_compare_exchange_weak_explicit(
				      word, &v, 1, memory_order_acquire,
				      memory_order_relaxed))
			return;
		if (v == 2)
			break; /* others already sleep: queue behind them */
		rl_cpu_relax();
	}
	/* From here on we may sleep, so we take it as 2: our release must
	 * wake whoever else sleeps. */
	while (atomic_exchange_explicit(word, 2, memory_order_acquire) != 0)
		rl_wait(word, 2, CLOCK_MONOTONIC, NULL, 0);
}
