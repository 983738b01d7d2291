/* SPDX-License-Identifier: MIT */
/* The slow path of the internal tree lock; see tree_lock.h. */
#include <stdio.h>
#include <stdlib.h>

#include "spin.h"
#include "tree_lock.h"

/* How long to spin before sleeping, in ns (spin.h: a time, the same on
 * every CPU; it was 100 PAUSEs, 1.5 to 1.9 us on today's CPUs); the lock is
 * held for a tree walk, well under a microsecond, so a short spin usually
 * wins. */
#ifndef TREE_LOCK_SPIN_NS
#define TREE_LOCK_SPIN_NS 2000
#endif
#define NOT_SPUN UINT32_MAX

_Thread_local int rl_tl_word_sleepers_woken;

/*
 * The lock is held (@w has TL_LOCKED).  Unless sleepers are announced, spin
 * while it stays held by a thread that does not sleep, for the rest of the
 * call's spin (*@spins, NOT_SPUN before its first spin); once that is used
 * up, announce a sleeper.  Then sleep once.  Returns false when the caller
 * must look at the word again, true when it slept (it then takes the lock
 * with TL_SLEEPERS).  Out of line: the calls that find the lock free or
 * displace a fast holder keep the slow path's cost.
 */
static __attribute__((noinline)) bool wait_held(tree_word_t *word, uintptr_t w,
						uint32_t *spins)
{
	if (!(w & TL_SLEEPERS)) {
		uint32_t n = *spins;

		if (n == NOT_SPUN) {
			n = rl_spin_iters(TREE_LOCK_SPIN_NS);
			if (n == NOT_SPUN)
				n--;
		}
		if (n) {
			do {
				n--;
				rl_cpu_relax();
				w = atomic_load_explicit(word, memory_order_relaxed);
			} while (n && (w == TL_LOCKED || w == TL_DRAINING));
			*spins = n;
			return false; /* look again, at what ended the spin */
		}
		if (!atomic_compare_exchange_weak_explicit(word, &w, w | TL_SLEEPERS,
							   memory_order_relaxed,
							   memory_order_relaxed))
			return false;
	}
	/* TL_LOCKED or TL_DRAINING (a drain, seg_gate.c), with sleepers. */
	rl_wait(tree_word_futex(word), (uint32_t)(w | TL_SLEEPERS), CLOCK_MONOTONIC,
		NULL, 0);
	return true;
}

uintptr_t rl_tree_lock_acquire_slow(tree_word_t *word, enum tl_acquire how)
{
	/* Once we have slept we take the lock with TL_SLEEPERS set: others may
	 * still sleep, and our release must wake one of them. */
	uintptr_t mine = TL_LOCKED;
	uint32_t spins = NOT_SPUN;

	for (;;) {
		uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);

		if (__builtin_expect(w == TL_SEGMENTED || w == TL_CLOSED, 0)) {
			if (how == TL_ACQ_ENTER || how == TL_ACQ_TRY) {
				/* To the gate (seg_gate.c).  Having slept, we
				 * may have taken a release's wake-one: pass it
				 * on, or a sleeper behind us sleeps for ever on
				 * a word nobody releases (gate.pml). */
				if (mine & TL_SLEEPERS)
					rl_wake_all(tree_word_futex(word));
				return TL_REFUSED;
			}
			if (w == TL_CLOSED && how == TL_ACQ_CLOSED) {
				if (atomic_compare_exchange_weak_explicit(
					    word, &w, mine, memory_order_acquire,
					    memory_order_relaxed)) {
					rl_hb_acquire(word);
					return TL_WAS_CLOSED;
				}
				continue;
			}
			/* segments.h: a segmented tree's own word is a gate. */
			fputs("librangelock: a tree got segments while a call used it "
			      "(range_lock_tree_set_segments() needs a tree that "
			      "nobody uses), or a call does not know segments\n", stderr);
			abort();
		}
		if (tl_is_fast(w)) {
			/* A fast holder: displace it; the caller materialises it. */
			if (atomic_compare_exchange_weak_explicit(
				    word, &w, mine, memory_order_acquire,
				    memory_order_relaxed)) {
				rl_hb_acquire(word); /* from its fast acquire */
				/* Word sleepers waited for it: the word now
				 * says "tree", so every one of them must look
				 * again and enter the tree (word_mode.c). */
				if (tl_fast_sleepers(w))
					rl_tl_word_sleepers_woken =
						rl_wake_all(tree_word_futex(word));
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
		if (__builtin_expect((w | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS), 0) &&
		    how == TL_ACQ_TRY)
			return TL_REFUSED; /* a trylock never waits for a drain */
		if (wait_held(word, w, &spins))
			mine = TL_LOCKED | TL_SLEEPERS;
	}
}

__attribute__((cold)) bool rl_tree_fast_acquire_annotated(tree_word_t *word, uintptr_t fast)
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

/*
 * A fast holder leaves, and its release CAS found @seen instead of its plain
 * value @fast.  While it holds through the word, only word waiters change
 * that value, into one about this holder: its sleepers value (a word
 * sleeper set it, or a timed hand-off waiter restored it) or a hand-off
 * request (a marked word waiter asked for the word).  Anything else means a
 * displacer took the word: the holder is in the tree (false).  (A displaced
 * holder is in the tree until its own unlock, so no other holder's value
 * can be there meanwhile.)
 */
bool rl_tree_fast_release_waited(tree_word_t *word, uintptr_t fast, uintptr_t seen)
{
	uintptr_t sleepers = tl_sleepers_value(fast, tl_fast_reader(fast));

	for (;;) {
		if (!tl_is_fast(seen))
			return false; /* displaced: the displacer woke them all */
		if (seen == sleepers) {
			rl_hb_release_if(word, seen);
			if (!atomic_compare_exchange_strong_explicit(
				    word, &seen, 0, memory_order_release,
				    memory_order_relaxed))
				continue;
			/* One word sleeper (or a tree_lock sleeper: both wait
			 * here, and either passes the duty on) looks again. */
			rl_wake_one(tree_word_futex(word));
			return true;
		}
		if (tl_is_handoff(seen)) {
			/* The grant: the waiter named in the word holds it
			 * now (TL_HANDED until it looks).  Release: our
			 * critical section happens before its.  Every sleeper
			 * wakes: a wake-one might miss it. */
			uintptr_t to = (seen & ~TL_FAST_BITS) | TL_HANDED;

			rl_hb_release_if(word, seen);
			if (!atomic_compare_exchange_strong_explicit(
				    word, &seen, to, memory_order_release,
				    memory_order_relaxed))
				continue;
			rl_wake_all(tree_word_futex(word));
			return true;
		}
		return false; /* displaced: the displacer woke them all */
	}
}
