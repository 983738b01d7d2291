/* SPDX-License-Identifier: MIT */
/*
 * The tree's lock word: the internal lock that serialises every change to a
 * tree (the kernel's tree->lock, a spinlock there), and the uncontended fast
 * path that lets a lone request hold an empty tree without entering it.
 *
 * One pointer-sized word, in one of these states:
 *   0                    free, tree empty           -> a fast path may start
 *   TL_NONEMPTY          free, requests in the tree
 *   TL_LOCKED            internal lock held
 *   TL_LOCKED|TL_SLEEPERS  held, and somebody may sleep on it
 *   request | TL_FAST_W  one request holds its range for writing and the
 *   request | TL_FAST_R  tree is otherwise empty; the request is not in the
 *                        tree ("fast held").  Pointers are 8-aligned, so
 *                        every fast value is >= 8 and every other state < 8.
 *
 * The fast path: lock = CAS(0 -> request|TL_FAST_x), unlock = CAS back to 0:
 * two atomic operations in all, as for pthread_rwlock.  Whoever takes the
 * internal lock while a request is fast held displaces it with the same CAS
 * (fast value -> TL_LOCKED) and must insert it into the tree before anything
 * else ("materialise" it, see tree_lock() in protocol.h); the holder's unlock CAS then
 * fails and it unlocks through the tree.  Only the materialiser may change a
 * fast value, so a failed fast unlock always finds its request in the tree.
 *
 * The internal lock is a three-state futex mutex (Drepper, "Futexes Are
 * Tricky", mutex 2) that spins briefly before it sleeps: pure spinning stalls
 * every spinner for a time slice when the holder is preempted (more threads
 * than cores).  Sleepers wait on the low 32 bits of the word with the value
 * TL_LOCKED|TL_SLEEPERS (3); fast values end in binary 101 or 111, so their
 * low half can never read 3 and no sleeper can mistake one for a held lock.
 *
 * Memory orders: acquire when the lock (or a fast hold) is taken, release
 * when it is dropped; the fast acquire is acq_rel so that a materialiser's
 * acquire CAS sees the fields the holder wrote into its request first.
 */
#ifndef RANGELOCK_TREE_LOCK_H
#define RANGELOCK_TREE_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "annotate.h"
#include "wait.h"

#define TL_LOCKED    ((uintptr_t)1)
#define TL_SLEEPERS  ((uintptr_t)2)
#define TL_NONEMPTY  ((uintptr_t)4)
#define TL_FAST_W    ((uintptr_t)5)
#define TL_FAST_R    ((uintptr_t)7)
#define TL_FAST_BITS ((uintptr_t)7)

typedef _Atomic uintptr_t tree_word_t;

/* The 32-bit futex word inside the lock word: its low half. */
static inline _Atomic uint32_t *tree_word_futex(tree_word_t *word)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && UINTPTR_MAX > UINT32_MAX
	return (_Atomic uint32_t *)word + 1;
#else
	return (_Atomic uint32_t *)word;
#endif
}

uintptr_t tree_lock_acquire_slow(tree_word_t *word);

/*
 * Take the internal lock.  Returns 0, or the fast value (request | TL_FAST_x)
 * of a fast holder it displaced, which the caller must materialise.
 */
static inline uintptr_t tree_lock_acquire(tree_word_t *word)
{
	uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);

	if (__builtin_expect((w == 0 || w == TL_NONEMPTY) &&
			     atomic_compare_exchange_strong_explicit(
				     word, &w, TL_LOCKED, memory_order_acquire,
				     memory_order_relaxed), 1)) {
		rl_hb_acquire(word); /* from the last holder's release */
		return 0;
	}
	return tree_lock_acquire_slow(word);
}

/* Drop the internal lock; @nonempty: the tree holds requests. */
static inline void tree_lock_release(tree_word_t *word, bool nonempty)
{
	uintptr_t old, v = nonempty ? TL_NONEMPTY : 0;

	/* Before the exchange: after it the tree may be freed.  The _pass
	 * form hands @v through, so that it need not live across the call. */
	v = rl_hb_release_pass(word, v);
	old = atomic_exchange_explicit(word, v, memory_order_release);

	if (__builtin_expect(old & TL_SLEEPERS, 0))
		rl_wake_one(tree_word_futex(word));
}

/* tree_fast_acquire() when a race detector runs (annotate.h, edge 3); out
 * of line, so that the uncontended lock tests the tool flag only once. */
static __attribute__((noinline, cold)) bool
tree_fast_acquire_annotated(tree_word_t *word, uintptr_t fast)
{
	uintptr_t expected = 0;
	bool held;

	rl_hb_release_if(word, 0); /* acq_rel: publishes the request */
	held = atomic_compare_exchange_strong_explicit(word, &expected, fast,
						       memory_order_acq_rel,
						       memory_order_relaxed);
	if (held)
		rl_hb_acquire(word);
	return held;
}

/* The fast path: hold an empty, free tree with @fast = request | TL_FAST_x. */
static inline bool tree_fast_acquire(tree_word_t *word, uintptr_t fast)
{
	uintptr_t expected = 0;

	if (rl_tools_on())
		return tree_fast_acquire_annotated(word, fast);
	return atomic_compare_exchange_strong_explicit(word, &expected, fast,
						       memory_order_acq_rel,
						       memory_order_relaxed);
}

/* Release a fast hold; false if it was materialised meanwhile. */
static inline bool tree_fast_release(tree_word_t *word, uintptr_t fast)
{
	rl_hb_release_if(word, fast); /* not if materialised (CAS fails) */
	return atomic_compare_exchange_strong_explicit(word, &fast, 0,
						       memory_order_release,
						       memory_order_relaxed);
}

#endif /* RANGELOCK_TREE_LOCK_H */
