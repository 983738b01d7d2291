/* SPDX-License-Identifier: MIT */
/*
 * librangelock: waiting for a grant, and giving up.
 *
 * A lock call whose request must wait (lock_common(), calls.c) drops
 * tree_lock and calls rl_wait_for_grant(): the wait loop (wait_loop()) spins
 * on the request's wait word while next in line (spin_for_grant()), sleeps
 * on it otherwise (sleep_once()), claims an ELIGIBLE range and sets its
 * HANDOFF mark at the hand-off bound (claim_or_mark()).  The wait word and
 * the policies are explained in protocol.c's DESIGN comment.
 *
 * THE GIVE-UP PATH
 * ================
 * withdraw_request() below (withdraw_on_cancel() for cancellation): a
 * waiting request that stops waiting (signal, timeout, cancellation) takes
 * tree_lock and looks at its word.  If a grant arrived meanwhile, or it is
 * ELIGIBLE (the range is free), it keeps the range (signal, timeout: report
 * success) or releases it like an unlock (cancellation: the thread is going
 * away).  Otherwise it leaves the tree through rl_remove_request()
 * (protocol.c), the same code as unlock, which un-accounts exactly the
 * later requests that counted it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "defer.h"
#include "protocol.h"
#include "segments.h"
#include "spin.h"
#include "stats.h"
#include "wait.h"
#include "waiting.h"

/*
 * How long a killable waiter sleeps between two looks for a cancellation
 * request.  Not asynchronous cancellation around the futex wait: glibc 2.36
 * acts on a SIGCANCEL sent during such a window later, inside whatever
 * cancellable call the thread makes next, even with cancellation disabled
 * -- a thread that had just been granted its range would die holding it.
 */
#define KILLABLE_SLICE_NS 10000000L

/*
 * Spinning on the grant word before sleeping: the range lock's spin-on-owner.
 * A short wait then costs a spin, not two context switches.  Userspace cannot
 * see whether the holder runs, so each thread adapts its own budget (in ns,
 * turned into spin-wait hints by rl_spin_iters(): the same time on every
 * CPU, spin.h): it doubles when a spin ends in a grant and halves when the
 * thread had to sleep anyway -- with more threads than CPUs spins keep
 * failing and shrink to the minimum.  (It was 8 to 1024 PAUSEs: 0.12 to
 * 15 us on a 2026 Xeon, 0.15 to 19.5 us on an AMD EPYC of family 26.)
 */
#ifndef RL_GRANT_SPIN_MAX_NS
#define RL_GRANT_SPIN_MAX_NS 16384
#endif
#define RL_GRANT_SPIN_MIN_NS 128

static _Thread_local uint32_t grant_spin_budget
	__attribute__((tls_model("initial-exec"))) = RL_GRANT_SPIN_MAX_NS / 4;

/* ---- waiting time ---------------------------------------------------- */

#ifdef RL_TEST_HOOKS
void (*rl_test_give_up_hook)(void);
void (*rl_test_span_entered_hook)(void);
#endif

uint64_t rl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rl_stat_wait_time(struct range_lock_stats *st, uint64_t ns)
{
	uint64_t max = __atomic_load_n(&st->wait_ns_max, __ATOMIC_RELAXED);

	__atomic_fetch_add(&st->wait_ns_total, ns, __ATOMIC_RELAXED);
	while (ns > max && !__atomic_compare_exchange_n(&st->wait_ns_max, &max, ns, 1,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
		;
}

/* ---- the give-up path ------------------------------------------------- */

enum give_up { GIVE_UP_SIGNAL, GIVE_UP_TIMEOUT, GIVE_UP_CANCEL };

/* Under tree_lock: a waiter whose word is ELIGIBLE takes its range (POLICY
 * rule 5); the range is free and nobody overtook it since. */
static void claim_eligible(struct range_lock_tree *tree, struct range_lock *lock)
{
	/* Relaxed: the releases that made it eligible happened under
	 * tree_lock, which we acquired. */
	atomic_store_explicit(wait_word(lock), 0, memory_order_relaxed);
	if (tree->stats)
		rl_stat_granted_or_grown(tree->stats, lock);
}

/*
 * A request granted and then given back by a give-up (a set member granted
 * while another member waited, a request granted as its killable wait was
 * cancelled): it leaves held_now; its acquisition stays counted (struct
 * range_lock_stats: every counter but the *_now ones only grows).
 */
static void stat_given_back(struct range_lock_stats *st, const struct range_lock *lock)
{
	(void)lock;
	STAT_ADD(st, held_now, -1);
}

static void stat_give_up(struct range_lock_stats *st, enum give_up why)
{
	if (why == GIVE_UP_SIGNAL)
		STAT_ADD(st, gave_up_signal, 1);
	else if (why == GIVE_UP_TIMEOUT)
		STAT_ADD(st, gave_up_timeout, 1);
	else
		STAT_ADD(st, gave_up_cancel, 1);
}

/*
 * The give-up path of a call that waits for several requests (a set, the
 * growths of a grow): all or nothing.  Under one hold of tree_lock: if every
 * request is granted or eligible (claimed now), the call keeps them all
 * (signal, timeout: success); otherwise -- and always on cancellation --
 * every one leaves the tree through rl_remove_request(), held ones released as
 * by an unlock.  A grow's owner is not among them: it keeps what it held.
 */
static bool withdraw_group(struct waiter *w, enum give_up why)
{
	struct range_lock_tree *tree = w->tree;
	struct wake_list wl;
	struct range_lock_stats *st;
	bool all = true;

	wl.n = 0;
	tree_lock(tree);
	st = tree->stats;
	for (unsigned i = 0; i < w->n; i++) {
		uint32_t word = atomic_load_explicit(wait_word(w->items[i].lock),
						     memory_order_acquire);

		all &= word == 0 || word == ELIGIBLE;
	}
	if (why != GIVE_UP_CANCEL && all) {
		for (unsigned i = 0; i < w->n; i++) {
			struct range_lock *lock = w->items[i].lock;

			if (atomic_load_explicit(wait_word(lock), memory_order_relaxed))
				claim_eligible(tree, lock);
		}
		tree_unlock(tree);
		return true;
	}
	if (st) {
		if (w->wait_start_ns)
			rl_stat_wait_time(st, rl_now_ns() - w->wait_start_ns);
		stat_give_up(st, why);
	}
	for (unsigned i = 0; i < w->n; i++) {
		struct range_lock *lock = w->items[i].lock;
		uint32_t word = atomic_load_explicit(wait_word(lock), memory_order_relaxed);

		if (blockers_of(word))
			tree->nr_waiting--;
		/* (A growth granted stopped waiting at its grant, and its
		 * owner's hold stays.) */
		if (st && word != 0)
			STAT_ADD(st, waiting_now, -1);
		else if (st && !is_growth(lock))
			stat_given_back(st, lock);
		rl_remove_request(tree, lock, &wl);
	}
	tree_unlock(tree);
	wake_list_flush(&wl);
	return false;
}

/*
 * A waiting request stops waiting.  Returns true if the grant had already
 * arrived, or the request was eligible and claims its free range, and it
 * keeps the range (never for cancellation, where such a range is released
 * like an unlock); false if it left the tree.
 */
static bool withdraw_request(struct waiter *w, enum give_up why)
{
	struct range_lock_tree *tree = w->tree;
	struct range_lock *lock = w->lock;
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock_stats *st;
	uint32_t word;
	bool granted;

	wl.n = 0;
	tree_lock(tree);
	st = is_part(lock) ? NULL : tree->stats; /* a part counts nothing */
	word = atomic_load_explicit(wait_word(lock), memory_order_acquire);
	granted = word == 0;
	if (why != GIVE_UP_CANCEL && (granted || word == ELIGIBLE)) {
		if (!granted)
			claim_eligible(tree, lock);
		tree_unlock(tree);
		return true;
	}
	if (blockers_of(word))
		tree->nr_waiting--; /* an ELIGIBLE one was uncounted already */
	if (st) {
		/* Timed here, under tree_lock: once the request is out of the
		 * tree, the tree and its statistics storage may be freed. */
		if (w->wait_start_ns)
			rl_stat_wait_time(st, rl_now_ns() - w->wait_start_ns);
		if (granted) {
			/* (a growth -- a segmented tree's grow waits for its
			 * pieces one by one -- was never counted as held) */
			if (!is_growth(lock))
				stat_given_back(st, lock);
		} else {
			STAT_ADD(st, waiting_now, -1);
		}
		stat_give_up(st, why);
	}
	if (__builtin_expect(lock->owner_tid == RL_PART_FIRST, 0)) /* it counts */
		part_ops()->withdrawn(tree, lock, why == GIVE_UP_SIGNAL ? -EINTR :
					  why == GIVE_UP_TIMEOUT ? -ETIMEDOUT : -ECANCELED);
	rl_remove_request(tree, lock, &wl);
	tree_unlock(tree);
	wake_list_flush(&wl);
	return false;
}

/*
 * The waiter woke ELIGIBLE (claim) or its hand-off bound passed (@mark):
 * under tree_lock, take the range if it is still eligible; else, with
 * @mark, set HANDOFF so nobody overtakes it any more (POLICY rules 5, 6).
 * Returns true when the request holds its range.
 */
static bool claim_or_mark(struct waiter *w, bool mark)
{
	_Atomic uint32_t *word = wait_word(w->lock);
	uint32_t v;

	tree_lock(w->tree);
	v = atomic_load_explicit(word, memory_order_acquire);
	if (v == ELIGIBLE)
		claim_eligible(w->tree, w->lock);
	else if (v != 0 && mark)
		atomic_fetch_or_explicit(word, HANDOFF, memory_order_relaxed);
	tree_unlock(w->tree);
	return v == 0 || v == ELIGIBLE;
}

/* ---- waiting ---------------------------------------------------------- */

/*
 * Spin on the grant word for the thread's current budget.  True when the
 * grant arrived; the budget doubles then, and halves when it did not.
 */
static bool spin_for_grant(_Atomic uint32_t *word)
{
	uint32_t budget = grant_spin_budget, n = rl_spin_iters(budget);

	for (uint32_t i = 0; i < n; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) == 0) {
			grant_spin_budget = budget < RL_GRANT_SPIN_MAX_NS / 2
						    ? budget * 2 : RL_GRANT_SPIN_MAX_NS;
			return true;
		}
		rl_cpu_relax();
	}
	grant_spin_budget = budget > 2 * RL_GRANT_SPIN_MIN_NS ? budget / 2
							      : RL_GRANT_SPIN_MIN_NS;
	return false;
}

/*
 * A timed waiter sleeps until @until (CLOCK_MONOTONIC: its hand-off
 * deadline) at the latest: move @until to the caller's own deadline if that
 * comes first.  A wall-clock deadline is turned into a monotonic one, at
 * most the bound ahead (no overflow for far deadlines; a wall-clock step
 * during these milliseconds is noticed when the sleep ends).
 */
void rl_sooner_user_deadline(const struct waiter *w, struct timespec *until)
{
	const struct timespec *user = w->abstime;
	struct timespec mono;

	if (w->kind != WAIT_TIMED)
		return;
	mono = *user;
	if (w->clockid != CLOCK_MONOTONIC) {
		struct timespec now_c, now_m;

		clock_gettime(w->clockid, &now_c);
		clock_gettime(CLOCK_MONOTONIC, &now_m);
		mono = now_m;
		if (timespec_before(&now_c, user)) {
			int64_t ns = RL_HANDOFF_NS;

			if (user->tv_sec - now_c.tv_sec <= 1)
				ns = (int64_t)(user->tv_sec - now_c.tv_sec) * 1000000000 +
				     (user->tv_nsec - now_c.tv_nsec);
			timespec_add_ns(&mono, ns < RL_HANDOFF_NS ? ns : RL_HANDOFF_NS);
		}
	}
	if (timespec_before(&mono, until))
		*until = mono;
}

/*
 * One sleep on @word (which held @v).  Until the waiter is marked, the sleep
 * ends at the hand-off deadline (CLOCK_MONOTONIC) at the latest, and the
 * caller's own deadline is checked on its own clock when it ends.
 * Returns 0 (look again: wait_loop() checks the hand-off deadline on every
 * pass), -EINTR or -ETIMEDOUT (the caller's deadline).
 */
static int sleep_once(struct waiter *w, _Atomic uint32_t *word, uint32_t v)
{
	unsigned flags = w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0;
	const struct timespec *user = w->kind == WAIT_TIMED ? w->abstime : NULL;
	struct timespec slice;
	int r;

	if (w->kind == WAIT_KILLABLE) {
		/* The cancellation point: bounded waits and
		 * pthread_testcancel() between them (cleanup handler in
		 * wait_loop_killable()). */
		pthread_testcancel();
		clock_gettime(CLOCK_MONOTONIC, &slice);
		timespec_add_ns(&slice, KILLABLE_SLICE_NS);
		if (!w->marked && timespec_before(&w->handoff, &slice))
			slice = w->handoff;
		r = rl_wait(word, v, CLOCK_MONOTONIC, &slice, 0);
		pthread_testcancel();
	} else if (!w->marked) {
		struct timespec until = w->handoff;

		rl_sooner_user_deadline(w, &until);
		r = rl_wait(word, v, CLOCK_MONOTONIC, &until, flags);
		if (r == -ETIMEDOUT && user && deadline_passed(w->clockid, user))
			return -ETIMEDOUT;
	} else {
		r = rl_wait(word, v, w->clockid, user, flags);
	}
	if (r == -EINTR && w->kind == WAIT_INTERRUPTIBLE)
		return -EINTR;
	if (r == -ETIMEDOUT && w->kind == WAIT_TIMED && w->marked)
		return -ETIMEDOUT;
	return 0; /* look again; wait_loop() checks the hand-off deadline */
}

/* Returns 0 when granted, -EINTR or -ETIMEDOUT after leaving the tree. */
static int wait_loop_counted(struct waiter *w)
{
	_Atomic uint32_t *word = wait_word(w->lock);
	/* No spin for interruptible waits: a signal handler that runs while
	 * we spin would go unreported. */
	bool may_spin = w->kind != WAIT_INTERRUPTIBLE;
	uint32_t v;
	int r;

	w->marked = tree_is_fifo(w->tree) || w->kind == WAIT_INTERRUPTIBLE ||
		    w->word == WORD_MARKED;
	if (!w->marked && w->word < WORD_WAITED) {
		/* (A longer word waiter's bound runs from its first sleep
		 * decision: rl_word_wait(); the later requests of a set or a
		 * grow keep the bound of the first: rl_wait_for_grants().) */
		clock_gettime(CLOCK_MONOTONIC, &w->handoff);
		timespec_add_ns(&w->handoff, RL_HANDOFF_NS);
	}
	v = atomic_load_explicit(word, memory_order_acquire);
	for (bool first = true;; first = false) {
		if (v == 0)
			return 0;
		/*
		 * The bound is checked on every pass, not only when a sleep
		 * times out: a waiter can be overtaken for ever without
		 * sleeping -- its claims and CASes keep failing as overtakers
		 * come and go (found by the SPIN model's progress check).
		 */
		if (!w->marked && !first &&
		    deadline_passed(CLOCK_MONOTONIC, &w->handoff)) {
			w->marked = true;
			if (claim_or_mark(w, true))
				return 0;
			v = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		if (v == ELIGIBLE) {
			/* Woken with the range free: claim it, unless a
			 * running thread overtook us meanwhile. */
			if (claim_or_mark(w, false))
				return 0;
			v = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		/* Spin only when next in line (one blocker left): the others
		 * cannot be granted soon, and spinning would take CPUs from
		 * the threads that hold or are about to. */
		if (may_spin && blockers_of(v) == 1) {
			may_spin = false;
			if (v & SLEEPING) {
				/* Woken early to spin (put_blocker()): stop
				 * announcing a sleep, so that the release
				 * grants us directly, with no FUTEX_WAKE. */
				if (!atomic_compare_exchange_weak_explicit(
					    word, &v, v & ~SLEEPING, memory_order_acquire,
					    memory_order_acquire)) {
					may_spin = true;
					continue;
				}
			}
			if (spin_for_grant(word))
				return 0;
			v = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		/* A reader of a readers-first tree counts itself from its
		 * first sleep to the end of its wait (defer.c). */
		if (w->reader && !w->defer_looked) {
			w->defer_looked = true;
			w->defer = rl_defer_word_of_sleeper(w->tree);
			rl_defer_reader_asleep(w->defer);
		}
		/* Announce the sleep, so the releaser knows to FUTEX_WAKE. */
		if (!(v & SLEEPING)) {
			if (!atomic_compare_exchange_weak_explicit(
				    word, &v, v | SLEEPING, memory_order_acquire,
				    memory_order_acquire))
				continue;
			v |= SLEEPING;
		}
		r = sleep_once(w, word, v);
		if (r < 0) {
			enum give_up why = r == -EINTR ? GIVE_UP_SIGNAL : GIVE_UP_TIMEOUT;

			RL_TEST_GIVE_UP_HOOK();
			if (w->items ? withdraw_group(w, why) : withdraw_request(w, why)) {
				w->kept_after = r;
				return 0;
			}
			return r;
		}
		/* Any return means "look again" (FUTEX-RULES rule 4); after a
		 * wake-up, next in line may spin again. */
		may_spin = w->kind != WAIT_INTERRUPTIBLE;
		v = atomic_load_explicit(word, memory_order_acquire);
	}
}

/* Granted or given up: a reader counted asleep counts itself off, which
 * may end the deferral of the tree's writers (defer.c). */
static int wait_loop(struct waiter *w)
{
	int r;

	w->defer_looked = false;
	w->defer = NULL;
	r = wait_loop_counted(w);
	rl_defer_reader_awake(w->defer);
	return r;
}

static void withdraw_on_cancel(void *arg)
{
	struct waiter *w = arg;

	rl_defer_reader_awake(w->defer); /* cancelled in sleep_once() */

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	rl_probe_give_up(w->tree, w->lock, w->reader, -ECANCELED);
	if (w->items)
		withdraw_group(w, GIVE_UP_CANCEL);
	else
		withdraw_request(w, GIVE_UP_CANCEL);
}

/* A cancellation point while it waits: cancelled, the request withdraws. */
static int wait_loop_killable(struct waiter *w)
{
	int r;

	pthread_cleanup_push(withdraw_on_cancel, w);
	r = wait_loop(w);
	pthread_cleanup_pop(0);
	return r;
}

int rl_wait_for_grant(struct waiter *w)
{
	/* A part of a spanning request counts nothing: the request times
	 * its whole wait (seg_span.c); nor does a segmented tree's growth. */
	struct range_lock_stats *st = is_part(w->lock) || is_growth(w->lock) ? NULL
									   : stats_of(w->tree);
	int r;

	rl_async_check_may_wait("lock call", w->lock);

	if (w->word == WORD_NONE) /* else rl_word_wait() began it */
		rl_probe_wait(wait_begin, w->tree, w->lock, w->reader);
	w->wait_start_ns = st ? rl_now_ns() : 0;
	if (w->kind == WAIT_KILLABLE)
		r = wait_loop_killable(w);
	else
		r = wait_loop(w);
	if (r == 0) {
		/* Granted, however it was seen: the granter's release. */
		rl_hb_acquire_last(wait_word(w->lock));
		rl_probe_wait(wait_end, w->tree, w->lock, w->reader);
	} else {
		rl_probe_give_up(w->tree, w->lock, w->reader, r);
	}
	/* Granted: the request is held, so the storage still lives. */
	if (r == 0 && st)
		rl_stat_wait_time(st, rl_now_ns() - w->wait_start_ns);
	return r;
}


int rl_wait_for_grants(struct waiter *w)
{
	struct range_lock_stats *st = stats_of(w->tree);
	int r = 0;

	rl_async_check_may_wait("lock call", NULL);

	w->wait_start_ns = st ? rl_now_ns() : 0;
	for (unsigned i = 0; i < w->n; i++) {
		w->lock = w->items[i].lock;
		w->reader = w->items[i].mode == RANGE_LOCK_READ;
		if (atomic_load_explicit(wait_word(w->lock), memory_order_acquire) == 0) {
			rl_hb_acquire_last(wait_word(w->lock));
			continue;
		}
		rl_probe_wait(wait_begin, w->tree, w->lock, w->reader);
		r = w->kind == WAIT_KILLABLE ? wait_loop_killable(w) : wait_loop(w);
		if (r) {
			/* withdraw_group() took them all out of the tree. */
			rl_probe_give_up(w->tree, w->lock, w->reader, r);
			return r;
		}
		rl_hb_acquire_last(wait_word(w->lock));
		rl_probe_wait(wait_end, w->tree, w->lock, w->reader);
		/* The hand-off bound runs from the call's first wait. */
		w->word = WORD_WAITED;
	}
	/* Every one is held (a give-up that found them all granted kept them). */
	if (st && w->wait_start_ns)
		rl_stat_wait_time(st, rl_now_ns() - w->wait_start_ns);
	return 0;
}
