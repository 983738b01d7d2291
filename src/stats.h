/* SPDX-License-Identifier: MIT */
/*
 * Statistics (stats.c enables, reads and resets them, and dumps a tree):
 * the counters that the lock's other files update, under tree_lock unless
 * said otherwise.  A leaf: it includes nothing of the lock.
 */
#ifndef RANGELOCK_STATS_H
#define RANGELOCK_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

static inline struct range_lock_stats *stats_of(struct range_lock_tree *tree)
{
	return __atomic_load_n(&tree->stats, __ATOMIC_ACQUIRE);
}

/* Stats counters written under tree_lock: relaxed load + store, no RMW
 * needed (get_stats reads them concurrently with relaxed loads). */
#define STAT_ADD(st, field, n) \
	__atomic_store_n(&(st)->field, __atomic_load_n(&(st)->field, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define STAT_PEAK(st, now, peak)                                            \
	do {                                                                \
		uint64_t v_ = __atomic_load_n(&(st)->now, __ATOMIC_RELAXED); \
		if (v_ > __atomic_load_n(&(st)->peak, __ATOMIC_RELAXED))     \
			__atomic_store_n(&(st)->peak, v_, __ATOMIC_RELAXED); \
	} while (0)

#ifndef RL_HIDDEN
#define RL_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The counters as an array; 8-aligned (as the struct is) so that i386 does
 * its atomic 64-bit accesses inline rather than through libatomic. */
typedef uint64_t stat_word_t __attribute__((aligned(8)));

/* stats.c: zero every counter (relaxed stores); under @tree's tree_lock,
 * set held_now, waiting_now and the peaks from the requests in @tree. */
RL_HIDDEN void rl_stats_zero(struct range_lock_stats *st);
RL_HIDDEN void rl_stats_recount(struct range_lock_tree *tree, struct range_lock_stats *st);

#endif /* RANGELOCK_STATS_H */
