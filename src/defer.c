/* SPDX-License-Identifier: MIT */
/*
 * librangelock: readers first -- writers defer to the tree's sleeping readers.
 *
 * WHY.  With more threads than CPUs, a reader that meets a writer preempted
 * while holding sleeps until that writer runs again.  The other writers,
 * on ranges of their own, never sleep: they keep the CPUs, the holder waits
 * its turn in the run queue, and the readers get a small share of the
 * operations (docs/benchmarks.md, "readers among busy writers").  On a
 * tree with RANGE_LOCK_TREE_FLAG_DEFER_WRITERS (range_lock_tree_defer_
 * writers()), a writer's blocking lock call that finds a reader of
 * the tree asleep first sleeps itself, before it enters the tree, until no
 * reader of the tree sleeps or RL_DEFER_NS (2 ms) has passed: the
 * preempted holder gets a CPU sooner, and the readers a fair share.
 *
 * WHAT IT GIVES UP.  A writer whose range conflicts with nothing may wait
 * up to 2 ms, so the rule is a policy a tree opts into.  The grant protocol
 * inside the tree is unchanged: the deferring writer is not in the tree
 * yet (docs/model.md, "Readers first").  A thread that holds a range a
 * reader sleeps for and makes a write lock call meanwhile waits the whole
 * bound (the bound is what ends it: defer.pml's MUT_UNBOUNDED deadlocks).
 *
 * THE WORD.  Per user's tree, one 32-bit futex word in a process-wide table
 * of RL_DEFER_SLOTS, hashed by the tree's address (two trees that share a
 * word defer to each other's readers: time, never correctness):
 *
 *   readers of the tree asleep << 1 | DEFER_WAITERS (a writer may sleep on it)
 *
 *  - A reader counts itself (+2) before its FUTEX_WAIT in sleep_once()
 *    (waiting.c) and off (-2) after it; the one whose count-off leaves
 *    exactly DEFER_WAITERS clears it by CAS and wakes every deferred writer.
 *  - A writer loads the word: no reader asleep, it goes on.  Otherwise it
 *    sets DEFER_WAITERS by CAS (a failed CAS looks again), FUTEX_WAITs on
 *    the value with the flag, and looks again.
 * Every access is relaxed: the word orders nothing (no data is published
 * through it, and the deferring writer enters the tree through tree_lock
 * afterwards); the futex's own check of the value makes the sleep safe
 * (FUTEX-RULES rule 1: the writer sleeps only on a value with the flag, so
 * the count-off that empties the word sees the flag and wakes).
 */
#include <errno.h>
#include <time.h>

#include "defer.h"
#include "segments.h"
#include "wait.h"

#define RL_DEFER_SLOTS 64u
#define DEFER_WAITERS 1u
#define DEFER_READER 2u

static struct {
	_Atomic uint32_t word;
} __attribute__((aligned(128))) defer_slots[RL_DEFER_SLOTS];

static _Atomic uint32_t *defer_word(const struct range_lock_tree *tree)
{
	uintptr_t x = (uintptr_t)tree;

	return &defer_slots[((x >> 6) ^ (x >> 12)) & (RL_DEFER_SLOTS - 1)].word;
}

#ifdef RL_TEST_HOOKS
/* The unit tests lengthen the bound, so that only a reader's count-off
 * can end a deferral, and read the word to see who is counted. */
int64_t rl_test_defer_ns = RL_DEFER_NS;
#define DEFER_NS rl_test_defer_ns
uint32_t rl_test_defer_word(const struct range_lock_tree *tree)
{
	return atomic_load_explicit(defer_word(tree), memory_order_relaxed);
}
#else
#define DEFER_NS RL_DEFER_NS
#endif

_Atomic uint32_t *rl_defer_word_of_sleeper(const struct range_lock_tree *tree)
{
	const struct range_lock_tree *user = rl_seg_user_tree(tree);

	return tree_defers_writers(user) ? defer_word(user) : NULL;
}

void rl_defer_reader_count_off(_Atomic uint32_t *d)
{
	uint32_t v = atomic_fetch_sub_explicit(d, DEFER_READER, memory_order_relaxed) -
		     DEFER_READER;

	if (v == DEFER_WAITERS &&
	    atomic_compare_exchange_strong_explicit(d, &v, 0, memory_order_relaxed,
						    memory_order_relaxed))
		rl_wake_all(d);
}

void rl_defer_writer(const struct range_lock_tree *tree, const struct waiter *w)
{
	_Atomic uint32_t *d = defer_word(tree);
	unsigned flags = w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0;
	uint32_t v = atomic_load_explicit(d, memory_order_relaxed);
	struct timespec until;

	if (v < DEFER_READER)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	timespec_add_ns(&until, DEFER_NS);
	rl_sooner_user_deadline(w, &until);
	while (v >= DEFER_READER) {
		int r;

		if (!(v & DEFER_WAITERS)) {
			if (!atomic_compare_exchange_weak_explicit(d, &v, v | DEFER_WAITERS,
								   memory_order_relaxed,
								   memory_order_relaxed))
				continue; /* v reloaded: look again */
			v |= DEFER_WAITERS;
		}
		r = rl_wait(d, v, CLOCK_MONOTONIC, &until, flags);
		if (r == -ETIMEDOUT || (r == -EINTR && flags))
			return;
		v = atomic_load_explicit(d, memory_order_relaxed);
	}
}
