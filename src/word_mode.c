/* SPDX-License-Identifier: MIT */
/*
 * librangelock: word mode (docs/design.md, "Word mode"; model: tests/model/).
 *
 * A lone request holds an empty tree through the lock word (tree_lock.h).
 * When a second request conflicts with it, the tree path would displace the
 * holder into the tree, insert the newcomer, sleep, and make the holder's
 * unlock a tree walk: two tree_lock round trips, an insert and an erase per
 * critical section.  Instead, in a default-policy tree, a newcomer that
 *   - writes the whole resource [0, RANGE_LOCK_FULL]: it conflicts with and
 *     intersects every holder, so waiting for the word's holder is always
 *     precise (a partial request keeps the tree path: it displaces the
 *     holder and waits only for what it intersects; a reader keeps it too,
 *     since a reader asleep on the word could sleep through a reader's hold),
 *   - is a blocking or timed lock call (trylock just fails: a lock call
 *     would wait; interruptible and killable calls take the tree path),
 * waits on the word as on a mutex: it polls the word briefly, then sets the
 * holder's "sleepers" code (TL_FAST_WS / TL_FAST_RS) and sleeps on the
 * word's futex; the holder's unlock clears the word and wakes one sleeper;
 * whoever finds the word 0 takes it with one CAS -- a running thread may
 * win (barging), and a thread that slept takes it with the sleepers code
 * (glibc's mutex rule: others may still sleep).  No tree, no tree_lock.
 *
 * Bounded unfairness: the hand-off.  A word waiter's bound (RL_HANDOFF_NS)
 * runs from the end of its polls (a few microseconds after its arrival:
 * a wait that polling ends reads no clock).  Past it, the waiter M writes the holder P into
 * its own M->rb_left and replaces P's value in the word with M | TL_HANDOFF_x
 * (x: P's mode), which P's release turns into M | TL_FAST_WS -- the grant,
 * with no free word in between, so nobody barges -- and wakes every
 * sleeper (only M must wake).  Only P's release may: an unlock of any
 * other request (another tree's fast holder, M's own) takes the tree path
 * and aborts there (rl_word_release_waited(), calls.c, checks the marks
 * of a fast hold of this tree that enter() left in the request).  Later
 * waiters, marked or not, just sleep on a hand-off value.  A timed M that gives up restores P | sleepers code; if
 * that CAS fails, the grant arrived (M keeps the range) or a displacer took
 * the word (M then takes the tree path, whose tree_lock waits out the
 * displacer, which may still read M->rb_left under it).
 *
 * Leaving word mode.  Anything that takes tree_lock meanwhile displaces the
 * holder as today (for a hand-off value: the rb_left it names) and, if word
 * waiters may sleep, wakes them all (rl_tree_lock_acquire_slow()); a word
 * waiter that sees anything but a conflicting fast value, 0 or its own grant
 * leaves for the tree path, where it waits like any request (marked at once
 * if past its bound).  The tree is in word mode again when it empties.
 * Nothing about word waiters is stored anywhere but on their own stacks.
 *
 * No lost wake-up.  Word sleepers and tree_lock sleepers share the word's
 * futex (tree_lock.h), and a wake-one may wake either kind.  Every woken
 * thread passes the duty on: a tree_lock waiter takes the lock with
 * TL_SLEEPERS once it slept; a word waiter takes the word with the sleepers
 * code or sleeps again on a sleepers or hand-off value -- or, when it leaves
 * (for the tree, or on a timeout), wakes one more thread first (the pass-on
 * wake below).
 *
 * Memory orders.  Taking the word: the fast path's acq_rel CAS
 * (tree_fast_acquire()) or, after a hand-off, an acquire load that reads the
 * grant; releasing it: a release CAS (tree_fast_release()): a critical
 * section thus happens before the next holder's, as through the fast path.
 * The waiter's loads of the word are acquire: the tree's flags and
 * statistics pointer change only under tree_lock, and a fast value read by
 * an acquire load carries that release (the word's RMWs form a release
 * sequence), so word_blocks() sees them as of the holder's acquisition.
 * Publishing a hand-off request: acq_rel CAS (release: the displacer reads
 * M->rb_left after its acquire CAS).  Setting the sleepers code: acquire CAS,
 * only because a failed one hands back the value the loop acts on next.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "protocol.h"
#include "spin.h"
#include "tree_lock.h"
#include "wait.h"
#include "waiting.h"
#include "word_mode.h"

/* How long a word waiter polls the word before it sleeps, in ns (spin.h:
 * a time, the same on every CPU; it was 100 PAUSEs, 1.5 us on a 2026 Xeon
 * and 1.9 us on an AMD EPYC of family 26): a 1 us critical section and
 * the hand-over to the next holder end within it. */
#ifndef RL_WORD_SPIN_NS
#define RL_WORD_SPIN_NS 2000
#endif

/* One sleep on the word, which holds @v: until the hand-off bound if
 * @bounded (the waiter may still ask for a hand-off when it passes), and
 * the caller's deadline if sooner.  Any return means "look again". */
static void word_sleep(struct waiter *w, tree_word_t *word, uintptr_t v, bool bounded)
{
	struct timespec until = w->handoff;

	if (!bounded) {
		if (w->kind != WAIT_TIMED) {
			(void)rl_wait(tree_word_futex(word), (uint32_t)v,
				      CLOCK_MONOTONIC, NULL, 0);
			return;
		}
		rl_far_deadline(&until);
	}
	rl_sooner_user_deadline(w, &until);
	(void)rl_wait(tree_word_futex(word), (uint32_t)v, CLOCK_MONOTONIC, &until, 0);
}

/*
 * CAS a free word to @value (the fast path's acq_rel CAS and annotations).
 * On failure *@v is the value that beat us: going on with it, not with a
 * fresh load, means a waiter that keeps losing to bargers still sees their
 * fast values and so reaches its hand-off bound (a fresh load could read 0
 * every time: found by the model's progress check).
 */
static bool take_free_word(tree_word_t *word, uintptr_t *v, uintptr_t value)
{
	uintptr_t seen = 0;

	rl_hb_release_if(word, 0); /* acq_rel: publishes the request */
	if (atomic_compare_exchange_strong_explicit(word, &seen, value,
						    memory_order_acq_rel,
						    memory_order_acquire)) {
		rl_hb_acquire(word); /* from the last holder's release */
		return true;
	}
	*v = seen;
	return false;
}

/* The word waiter's loop (the design above; word_mode.h says what it
 * returns). */
int rl_word_wait(struct range_lock_tree *tree, struct range_lock *lock,
		 struct waiter *w, uintptr_t v)
{
	tree_word_t *word = tree_lock_word(tree);
	const uintptr_t mine = fast_value(lock, false);
	const uintptr_t granted = tl_sleepers_value(mine, false);
	const uintptr_t handed = (mine & ~TL_FAST_BITS) | TL_HANDED;
	uintptr_t asking = 0; /* our hand-off value, once published */
	bool slept = false, past = false;
	uint32_t spins = 0, polls = rl_spin_iters(RL_WORD_SPIN_NS);
	int r = WORD_TREE;

	rl_async_check_may_wait("range_write_lock", lock);

	w->word = WORD_SPUN; /* the bound starts when the polls end */
	rl_probe_wait(wait_begin, tree, lock, false);
	for (;;) {
		if (asking) {
			if (v == handed) {
				/* Handed to us: pick it up.  Past-bound
				 * sleepers on the handed value sleep without
				 * a bound and must look again, to ask us. */
				rl_hb_acquire(word); /* from the holder's release CAS */
				if (atomic_compare_exchange_strong_explicit(
					    word, &v, granted, memory_order_acquire,
					    memory_order_acquire)) {
					rl_wake_all(tree_word_futex(word));
					r = WORD_HELD;
					break;
				}
				continue; /* displaced meanwhile */
			}
			if (v != asking) {
				/* Only a displacer changes our request or our
				 * handed value: it took either the holder we
				 * named (into the tree) or us (held, into the
				 * tree).  tree_lock tells which, and waits out
				 * a displacer still reading our rb_left. */
				bool held = false;
				uintptr_t f = tree_lock_acquire_how(word, TL_ACQ_ENTER);

				/* (Refused: a tree with segments went back to
				 * them after the holder we named left -- we
				 * are in no tree; the gate sends us on.) */
				if (f != TL_REFUSED) {
					tree_materialise(tree, f);
					held = in_tree(tree, lock);
					tree_unlock(tree);
				}
				if (held)
					r = WORD_HELD;
				break;
			}
		} else if (v == 0) {
			if (take_free_word(word, &v, slept ? granted : mine)) {
				r = WORD_HELD;
				break;
			}
			continue; /* with the value that beat us, never 0 */
		}
		/* Not for an asker whose v is its own request: v may be
		 * stale, and the tree's flags or statistics pointer may have
		 * changed with a displacement that already made it a holder
		 * (found by the model: it would leave for the tree holding).
		 * Its request is changed only by the holder's grant, its own
		 * withdrawal or a displacer, all handled above on reload. */
		if (!asking && !word_blocks(tree, v))
			break; /* tree mode: displaced */
		if (!tl_in_handoff(v) && spins < polls) {
			/* A holder's value: poll it a while first. */
			spins++;
			rl_cpu_relax();
			v = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		if (w->word == WORD_SPUN) {
			/* The polls are over: the hand-off bound starts now
			 * (not at arrival: a wait that polling ends reads no
			 * clock, which costs more than such a wait). */
			clock_gettime(CLOCK_MONOTONIC, &w->handoff);
			timespec_add_ns(&w->handoff, RL_HANDOFF_NS);
			w->word = WORD_WAITED;
		} else if (!past) {
			past = deadline_passed(CLOCK_MONOTONIC, &w->handoff);
		}
		if (!tl_in_handoff(v)) {
			/* A holder's value, plain or with the sleepers code. */
			if (past) {
				uintptr_t ask = (mine & ~TL_FAST_BITS) |
						(tl_fast_reader(v) ? TL_HANDOFF_R : TL_HANDOFF_W);

				w->word = WORD_MARKED;
				lock->rb_left = (struct range_lock *)(v & ~TL_FAST_BITS);
				rl_hb_release_if(word, v); /* to the displacer's read */
				if (!atomic_compare_exchange_weak_explicit(
					    word, &v, ask, memory_order_acq_rel,
					    memory_order_acquire))
					continue;
				v = asking = ask;
			} else if (!tl_fast_sleepers(v)) {
				uintptr_t s = tl_sleepers_value(v, tl_fast_reader(v));

				if (!atomic_compare_exchange_weak_explicit(
					    word, &v, s, memory_order_acquire,
					    memory_order_acquire))
					continue;
				v = s;
			}
		}
		if (w->kind == WAIT_TIMED && deadline_passed(w->clockid, w->abstime)) {
			if (!asking) {
				r = -ETIMEDOUT;
				break;
			}
			/* Withdraw the hand-off request: the holder again, with
			 * the sleepers code (we may not be the only sleeper). */
			uintptr_t back = tl_sleepers_value((uintptr_t)lock->rb_left,
							   tl_fast_reader(v));

			if (atomic_compare_exchange_strong_explicit(
				    word, &v, back, memory_order_acquire,
				    memory_order_acquire)) {
				/* Past-bound sleepers on our request sleep
				 * without a bound: they may ask now. */
				rl_wake_all(tree_word_futex(word));
				r = -ETIMEDOUT;
				break;
			}
			continue; /* handed meanwhile, or displaced: look */
		}
		/* Once past the bound, on a hand-off value (ours or
		 * another's), the bound no longer matters: every end of a
		 * hand-off (grant, pick-up, withdrawal, displacement) wakes
		 * every sleeper.  Before it, the sleep ends at the bound. */
		word_sleep(w, word, v, !past);
		slept = true;
		v = atomic_load_explicit(word, memory_order_acquire);
	}
	/* The pass-on wake: we may have taken the wake meant for another
	 * sleeper, and we neither hold the word with the sleepers code nor
	 * sleep again. */
	if (slept && r != WORD_HELD)
		rl_wake_one(tree_word_futex(word));
	if (r == WORD_HELD)
		rl_probe_wait(wait_end, tree, lock, false);
	else if (r < 0)
		rl_probe_give_up(tree, lock, false, r);
	return r;
}

