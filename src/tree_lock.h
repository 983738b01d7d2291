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
 *   request | TL_FAST_WS the same, and whole-resource writers may sleep on
 *   request | TL_FAST_RS the word waiting for it ("word sleepers": word mode,
 *                        word_mode.c).  Whoever ends such a value wakes them:
 *                        the holder's release wakes one, a displacer all.
 *   waiter | TL_HANDOFF_W  a word waiter that waited the hand-off bound asks
 *   waiter | TL_HANDOFF_R  for the word: the holder (a writer, a reader) is
 *                        not in the word but in the waiter's rb_left, written
 *                        before this value was published.  The holder's
 *                        release hands the word over without freeing it, so
 *                        nobody barges: to
 *   waiter | TL_HANDED   the waiter holds for writing, and has not yet seen
 *                        it (Linux's MUTEX_FLAG_PICKUP); it turns this into
 *                        waiter | TL_FAST_WS.  Besides the holder's release
 *                        (request -> handed) and that waiter (pick-up,
 *                        withdrawal), only a displacer changes a hand-off or
 *                        handed value.
 *   TL_SEGMENTED         the tree has segments (segments.h) and runs in
 *                        them (the gate, seg_gate.c): not 0, not
 *                        TL_NONEMPTY, no fast value, so every fast path on
 *                        the tree itself fails; its low half is never the
 *                        sleepers value 3.  tree_lock() is never taken on
 *                        it: the slow path refuses an entering request
 *                        (TL_ACQ_ENTER), which goes back to the gate, and
 *                        aborts for anything else.  While the gate runs
 *                        the tree as a plain tree, its word takes the
 *                        plain values above.
 *   TL_DRAINING          a tree with segments' own word while one wide
 *   TL_DRAINING|TL_SLEEPERS  request closes the segments and waits for
 *                        them to empty (the gate's drain): a held internal
 *                        lock to everyone else (TL_LOCKED is set: they
 *                        spin, then sleep on it), which the drainer turns
 *                        into TL_LOCKED(|TL_SLEEPERS) once the segments are
 *                        empty, or back into TL_SEGMENTED if it gives up.
 *   TL_CLOSED            a segment's word while its tree runs as a plain
 *                        tree: the segment is empty, every fast path fails
 *                        on it, and the slow path refuses an entering
 *                        request as for TL_SEGMENTED; only the gate takes
 *                        it (TL_ACQ_CLOSED).
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
 * TL_LOCKED|TL_SLEEPERS (3); fast values end in binary 101, 111, 110 or 010,
 * so their low half can never read 3 and no sleeper can mistake one for a
 * held lock.  Word sleepers wait on the same 32 bits with the value they saw
 * (a TL_FAST_WS or TL_FAST_RS value): ONE kernel queue holds both kinds, and
 * a wake-one may wake either.  That is safe because every woken thread
 * passes the duty on (docs/design.md, "Word mode"): a tree_lock waiter takes
 * the lock with TL_SLEEPERS set once it slept, so its release wakes another;
 * a word waiter takes the word with a sleepers value, sleeps again with one,
 * or wakes one more thread before it goes elsewhere.
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
#define TL_FAST_WS   ((uintptr_t)6)   /* TL_FAST_W, word sleepers may exist */
#define TL_FAST_RS   ((uintptr_t)2)   /* TL_FAST_R, word sleepers may exist */
#define TL_HANDOFF_W ((uintptr_t)1)   /* with a waiter: the holder writes */
#define TL_HANDOFF_R ((uintptr_t)4)   /* with a waiter: the holder reads */
#define TL_HANDED    ((uintptr_t)0)   /* with a waiter: handed to it */
#define TL_SEGMENTED ((uintptr_t)2)   /* alone: a segmented tree's gate */
#define TL_DRAINING  ((uintptr_t)5)   /* alone: a drain (TL_LOCKED is set) */
#define TL_CLOSED    ((uintptr_t)6)   /* alone: a closed segment */

/* What an acquisition does with a gate value (TL_SEGMENTED, TL_CLOSED). */
enum tl_acquire {
	TL_ACQ_ANY,     /* abort: a call that does not know segments */
	TL_ACQ_ENTER,   /* return TL_REFUSED, not taken: an entering request */
	TL_ACQ_TRY,     /* the same, and on a drain too: a trylock's */
	TL_ACQ_CLOSED,  /* take a closed segment too: return TL_WAS_CLOSED */
};
#define TL_REFUSED    ((uintptr_t)1)  /* (never a displaced fast value) */
#define TL_WAS_CLOSED ((uintptr_t)2)

/* Does @w hold a fast value (a request pointer with a code)?  The holder
 * of the tree then is that request, or for a hand-off value its rb_left. */
static inline bool tl_is_fast(uintptr_t w)
{
	return w > TL_FAST_BITS;
}

static inline uintptr_t tl_code(uintptr_t w)
{
	return w & TL_FAST_BITS;
}

/* Of a fast value: a hand-off request (the pointer is the waiter's)? */
static inline bool tl_is_handoff(uintptr_t w)
{
	return tl_code(w) == TL_HANDOFF_W || tl_code(w) == TL_HANDOFF_R;
}

/* Of a fast value: a hand-off under way (requested, or handed and not
 * picked up), which only its waiter or a displacer may change? */
static inline bool tl_in_handoff(uintptr_t w)
{
	return tl_is_handoff(w) || tl_code(w) == TL_HANDED;
}

/* Of a fast value: is the tree's holder a reader? */
static inline bool tl_fast_reader(uintptr_t w)
{
	uintptr_t code = tl_code(w);

	return code == TL_FAST_R || code == TL_FAST_RS || code == TL_HANDOFF_R;
}

/* Of a fast value: may word sleepers wait on it? */
static inline bool tl_fast_sleepers(uintptr_t w)
{
	uintptr_t code = tl_code(w);

	return code != TL_FAST_W && code != TL_FAST_R;
}

/* The fast value of holder @req (its plain value's pointer part) with the
 * sleepers code for mode @reader. */
static inline uintptr_t tl_sleepers_value(uintptr_t req, bool reader)
{
	return (req & ~TL_FAST_BITS) | (reader ? TL_FAST_RS : TL_FAST_WS);
}

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

uintptr_t rl_tree_lock_acquire_slow(tree_word_t *word, enum tl_acquire how);

/* How many word sleepers this thread's last displacement woke (for the
 * dump; written only by rl_tree_lock_acquire_slow()). */
extern _Thread_local int rl_tl_word_sleepers_woken;

/*
 * Take the internal lock.  Returns 0, or the fast value (request | TL_FAST_x)
 * of a fast holder it displaced, which the caller must materialise; with
 * @how TL_ACQ_ENTER, TL_REFUSED (not taken) on a gate value; with
 * TL_ACQ_CLOSED, TL_WAS_CLOSED when it took a closed segment.
 */
static inline uintptr_t tree_lock_acquire_how(tree_word_t *word, enum tl_acquire how)
{
	uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);

	if (__builtin_expect((w == 0 || w == TL_NONEMPTY) &&
			     atomic_compare_exchange_strong_explicit(
				     word, &w, TL_LOCKED, memory_order_acquire,
				     memory_order_relaxed), 1)) {
		rl_hb_acquire(word); /* from the last holder's release */
		return 0;
	}
	return rl_tree_lock_acquire_slow(word, how);
}

static inline uintptr_t tree_lock_acquire(tree_word_t *word)
{
	return tree_lock_acquire_how(word, TL_ACQ_ANY);
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
 * of line (tree_lock.c), so that the uncontended lock tests the tool flag
 * only once, and so that a file that includes this header without taking
 * the lock gets no reference to the hidden tool flag, at -O0 too (a unit
 * test linked to the shared library). */
bool rl_tree_fast_acquire_annotated(tree_word_t *word, uintptr_t fast);

/* The fast path: hold an empty, free tree with @fast = request | TL_FAST_x. */
static inline bool tree_fast_acquire(tree_word_t *word, uintptr_t fast)
{
	uintptr_t expected = 0;

	if (rl_tools_on())
		return rl_tree_fast_acquire_annotated(word, fast);
	return atomic_compare_exchange_strong_explicit(word, &expected, fast,
						       memory_order_acq_rel,
						       memory_order_relaxed);
}

/*
 * The release of a fast hold that word waiters wait for (word mode): out
 * of line, since it wakes them.  @seen: the value the plain release CAS
 * found instead of the holder's plain value @fast.  The caller must know
 * that it is the word's holder (calls.c checks the request's flags and the
 * tree it recorded): a hand-off value names the asking waiter, not the
 * holder.
 */
bool rl_tree_fast_release_waited(tree_word_t *word, uintptr_t fast, uintptr_t seen);

/*
 * Release a fast hold @fast (its plain value): true if done.  False with
 * *@seen the value found instead: a displacer's (the holder is in the
 * tree), or a word waiter's (rl_tree_fast_release_waited()).
 */
static inline bool tree_fast_release(tree_word_t *word, uintptr_t fast, uintptr_t *seen)
{
	uintptr_t expected = fast;

	rl_hb_release_if(word, fast); /* not if materialised (CAS fails) */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(
				     word, &expected, 0, memory_order_release,
				     memory_order_relaxed), 1))
		return true;
	*seen = expected;
	return false;
}

#endif /* RANGELOCK_TREE_LOCK_H */
