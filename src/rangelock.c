/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the range reader/writer lock.
 *
 * DESIGN
 * ======
 * Every request, held or waiting, is a node of the tree's interval tree
 * (interval_tree.c) -- except a lone request on an empty tree, which holds
 * it through the lock word alone and enters the tree only when another
 * request needs the internal lock (the fast path, tree_lock.h; it is then
 * inserted first, as the held request it is).  A request R entering the tree takes the next arrival
 * number (seqnum) and counts its blockers: the requests already in the tree
 * whose range intersects R's and that conflict with R.  Two requests
 * conflict unless both are readers.  R owns its range when that count is 0.
 * Leaving the tree (unlock, or giving up while waiting) walks the
 * intersecting requests and decrements each LATER one (higher seqnum) that
 * conflicts -- by the same rule, so exactly the requests that counted the
 * leaver when they entered.  Downgrading a writer to a reader decrements the
 * later intersecting readers, which alone stop conflicting with it.  There
 * is no stealing: a request waits for every earlier conflicting request, so
 * among intersecting conflicting requests arrival order decides.
 *
 * The invariant, true whenever tree_lock is free (checked in RANGELOCK_CHECKS
 * builds, and model-checked in tests/model/):
 *   blocking(R) = #{ Q in tree : Q.seqnum < R.seqnum, Q intersects R,
 *                    Q and R conflict }
 * so a request with blocking 0 conflicts with no earlier request, and two
 * granted requests never conflict (of two intersecting conflicting requests
 * the later one counts the earlier).
 *
 * THE REQUEST'S WAIT WORD
 * =======================
 * wait_word = blocking << 1 | SLEEPING.  The count lives in the word the
 * waiter sleeps on, so the decrement that makes it 0 IS the grant: one
 * atomic operation, the last write anyone makes to a request it grants.
 *   - blocking is written only under tree_lock: set at entry before the
 *     request is published (relaxed store: nobody else can see it until
 *     tree_lock is released); decremented by others with fetch_sub.
 *   - SLEEPING is set and cleared only by the waiter, without tree_lock,
 *     by compare-and-swap: set just before FUTEX_WAIT on the value it set,
 *     cleared when it starts to spin (it spins only while next in line:
 *     one blocker left).  That is why the decrement must be an atomic
 *     read-modify-write: it races with the waiter's CAS, and its old value
 *     tells whether anyone sleeps (FUTEX_WAKE is skipped when nobody does).
 *   - The decrement that leaves a sleeping waiter next in line (2 -> 1)
 *     wakes it early, to spin for its grant while the holder works; to
 *     the waiter that is a spurious wake-up.
 *
 * Who writes which field, under which lock:
 *   tree->root, leftmost, seqnum, nr_requests, nr_waiting, stats counters (except the
 *       wait times), and every node's links, flags, start/last/subtree_last,
 *       seqnum:                             only under tree_lock.
 *   tree->stats (the pointer):              under tree_lock (release store),
 *                                            read without it (acquire) by
 *                                            waiters that time their wait.
 *   stats->wait_ns_total, wait_ns_max:      atomic RMW by granted waiters,
 *                                            no lock (their request is held,
 *                                            so the tree and its storage
 *                                            live); under tree_lock by
 *                                            waiters that give up.
 *   node->wait_word:                        see above.
 *   node->owner_tid:                        by the requesting thread before
 *                                            it is published.
 *
 * Memory orders:
 *   - tree_lock: acquire when taken, release when dropped (tree_lock.h).
 *     An uncontended lock/unlock pair is ordered through it.
 *   - The grant: fetch_sub with RELEASE, load by the waiter with ACQUIRE.
 *     The releaser's critical section happens before its tree_lock release,
 *     which happens before the granter's tree_lock acquire (when the granter
 *     is another unlocker), which happens before the granting fetch_sub;
 *     the waiter's acquire load that reads 0 synchronises with it.
 *   - SLEEPING CASes (set before sleeping, clear before spinning): acquire,
 *     only because a failed CAS hands back a value that may show the grant;
 *     the bit itself orders nothing, and all RMWs on one word are totally
 *     ordered, so a granter's fetch_sub sees the bit's latest state.
 *   - Reads of wait_word under tree_lock: relaxed for validation (only a
 *     granter, holding tree_lock, can change the count); acquire in the
 *     give-up path, which may keep a grant and enter the critical section.
 *   Race detectors (ThreadSanitizer, Helgrind, DRD) cannot see these
 *   orders in an uninstrumented library: annotate.h tells them about each
 *   edge, and lists where each annotation goes.
 *
 * Rule from ../FUTEX-RULES.md: nobody touches a request after its grant is
 * visible, except through the futex address itself.  A granter keeps the
 * request's address in a local wake list and calls FUTEX_WAKE after dropping
 * tree_lock; a wake landing on a reused stack word is spurious for whoever is
 * there.  (Reading a granted request's links under tree_lock is fine: a held
 * request stays in the tree until its unlock, which needs tree_lock.)
 *
 * THE GIVE-UP PATH
 * ================
 * withdraw_request() below: a waiting request that stops waiting (signal,
 * timeout, cancellation) takes tree_lock and looks at its count.  If a grant
 * arrived meanwhile it keeps the range (signal, timeout: report success) or
 * releases it like an unlock (cancellation: the thread is going away).
 * Otherwise it leaves the tree through remove_request(), the same code as
 * unlock, which un-accounts exactly the later requests that counted it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "checks.h"
#include "interval_tree.h"
#include "tree_lock.h"
#include "wait.h"

#define SLEEPING 1u
#define ONE_BLOCKER 2u

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
 * see whether the holder runs, so each thread adapts its own budget (in
 * pause instructions): it doubles when a spin ends in a grant and halves when
 * the thread had to sleep anyway -- with more threads than CPUs spins keep
 * failing and shrink to the minimum.
 */
#ifndef RL_GRANT_SPIN_MAX
#define RL_GRANT_SPIN_MAX 1024
#endif
#define RL_GRANT_SPIN_MIN 8
static _Thread_local uint32_t grant_spin_budget
	__attribute__((tls_model("initial-exec"))) = RL_GRANT_SPIN_MAX / 4;

_Static_assert(sizeof(struct range_lock) <= 64, "struct range_lock grew");
_Static_assert(sizeof(struct range_lock_tree) <= 64, "struct range_lock_tree grew");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
	       _Alignof(_Atomic uint32_t) == _Alignof(uint32_t) &&
	       sizeof(tree_word_t) == sizeof(uintptr_t) &&
	       _Alignof(tree_word_t) == _Alignof(uintptr_t),
	       "atomic word layout");
_Static_assert(_Alignof(struct range_lock) >= 8, "fast values need 3 free bits");

static inline tree_word_t *tree_lock_word(struct range_lock_tree *tree)
{
	return (tree_word_t *)&tree->lock_word;
}

static inline _Atomic uint32_t *wait_word(struct range_lock *lock)
{
	return (_Atomic uint32_t *)&lock->wait_word;
}

static inline bool is_reader(const struct range_lock *lock)
{
	return lock->rb_parent_flags & RL_READER;
}

static inline bool is_linked(const struct range_lock *lock)
{
	return lock->rb_parent_flags & RL_LINKED;
}

static inline bool conflict(bool reader_a, bool reader_b)
{
	return !(reader_a && reader_b);
}

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

static void stat_granted(struct range_lock_stats *st, bool reader, bool waited)
{
	if (reader)
		STAT_ADD(st, read_acquired, 1);
	else
		STAT_ADD(st, write_acquired, 1);
	if (waited)
		STAT_ADD(st, waiting_now, -1);
	STAT_ADD(st, held_now, 1);
	STAT_PEAK(st, held_now, held_peak);
}

/* ---- misuse ---------------------------------------------------------- */

static void die(const char *call, const struct range_lock *lock, const char *why)
{
	if (lock)
		fprintf(stderr, "librangelock: %s([%llu, %llu]): %s\n", call,
			(unsigned long long)lock->start,
			(unsigned long long)lock->last, why);
	else
		fprintf(stderr, "librangelock: %s: %s\n", call, why);
	fflush(stderr);
	abort();
}

static void check_args(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock)
{
	if (!tree || !lock)
		die(call, NULL, "NULL tree or request");
}

/* Is @lock a node of @tree?  Walks up to the root: O(log n). */
static bool in_tree(const struct range_lock_tree *tree, const struct range_lock *lock)
{
	const struct range_lock *n = lock, *p;

	if (!is_linked(lock))
		return false;
	while ((p = itree_parent(n)))
		n = p;
	return n == tree->root;
}

/* ---- thread id ------------------------------------------------------- */

/* initial-exec: a plain %fs-relative load, no __tls_get_addr() call on the
 * hot path of a shared library. */
static _Thread_local uint32_t cached_tid __attribute__((tls_model("initial-exec")));

uint32_t rl_thread_id(void)
{
	if (__builtin_expect(!cached_tid, 0))
		cached_tid = (uint32_t)syscall(SYS_gettid);
	return cached_tid;
}

/* The child of fork() is a new thread with the parent's TLS copy. */
static void forget_tid(void)
{
	cached_tid = 0;
}

__attribute__((constructor)) static void tid_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

/* ---- wake list: grants to announce after tree_lock is dropped ------- */

#define WAKE_BATCH 8
struct wake_list {
	_Atomic uint32_t *word[WAKE_BATCH];
	int n;
};

static inline void wake_list_add(struct wake_list *wl, _Atomic uint32_t *word)
{
	if (wl->n == WAKE_BATCH) {
		/* Full: wake now, under tree_lock.  Correct, only slower. */
		rl_wake_one(word);
		return;
	}
	wl->word[wl->n++] = word;
}

static inline void wake_list_flush(struct wake_list *wl)
{
	for (int i = 0; i < wl->n; i++)
		rl_wake_one(wl->word[i]);
}

/* ---- tree operations, under tree_lock -------------------------------- */

/* Take one blocker off @waiter; grant it if that was the last (the
 * fetch_sub is the last write to @waiter, see DESIGN), or wake it early if
 * it sleeps and is now next in line. */
static inline void put_blocker(struct range_lock_tree *tree, struct range_lock *waiter,
			       struct wake_list *wl)
{
	struct range_lock_stats *st = tree->stats;
	bool reader = is_reader(waiter);
	uint32_t old;

	rl_hb_release(wait_word(waiter)); /* BEFORE: a grant is the last touch */
	old = atomic_fetch_sub_explicit(wait_word(waiter), ONE_BLOCKER,
					memory_order_release);

	if ((old >> 1) == 2 && (old & SLEEPING)) {
		/* Next in line now, and asleep: wake it so that it spins for
		 * its grant and takes over while running, instead of a grant
		 * waiting for the scheduler (a convoy when threads outnumber
		 * CPUs).  To the waiter this is a spurious wake-up. */
		wake_list_add(wl, wait_word(waiter));
		return;
	}
	if ((old >> 1) != 1)
		return;
	tree->nr_waiting--;
	if (st)
		stat_granted(st, reader, true);
	if (old & SLEEPING)
		wake_list_add(wl, wait_word(waiter));
}

static inline bool intersects_any(const struct range_lock_tree *tree,
				  const struct range_lock *lock)
{
	/* O(1): nothing in the tree starts by @last or ends at/after @start. */
	return tree->root && lock->start <= tree->root->subtree_last &&
	       tree->leftmost->start <= lock->last;
}

/* Count the requests in the tree that @lock (of mode @reader) must wait
 * for; with @stop_at_first, just say whether there is one. */
static uint32_t count_blockers(struct range_lock_tree *tree,
			       const struct range_lock *lock, bool reader,
			       bool stop_at_first)
{
	struct range_lock *n;
	uint32_t count = 0;

	if (!intersects_any(tree, lock))
		return 0;
	itree_foreach(n, tree->root, lock->start, lock->last) {
		if (conflict(reader, is_reader(n))) {
			count++;
			if (stop_at_first)
				break;
		}
	}
	return count;
}

/* The caller has set lock->owner_tid. */
static void insert_request(struct range_lock_tree *tree, struct range_lock *lock,
			   bool reader, uint32_t blockers)
{
	lock->rb_parent_flags = reader ? RL_READER : 0;
	lock->seqnum = tree->seqnum++;
	atomic_store_explicit(wait_word(lock), blockers * ONE_BLOCKER,
			      memory_order_relaxed);
	tree->nr_requests++;
	tree->nr_waiting += blockers != 0;
	if (!tree->root) {
		/* Fast path, the uncontended case: the request is the tree. */
		lock->rb_left = lock->rb_right = NULL;
		lock->subtree_last = lock->last;
		lock->rb_parent_flags |= RB_BLACK | RL_LINKED;
		tree->root = tree->leftmost = lock;
		return;
	}
	if (lock->start < tree->leftmost->start)
		tree->leftmost = lock;
	itree_insert(&tree->root, lock);
}

/* Take @lock out of the tree and release the later requests that counted
 * it: the same conflict rule as count_blockers(), so exactly those. */
static void remove_request(struct range_lock_tree *tree, struct range_lock *lock,
			   struct wake_list *wl)
{
	bool reader = is_reader(lock);
	struct range_lock *n;

	tree->nr_requests--;
	if (lock == tree->root && !lock->rb_left && !lock->rb_right) {
		/* Fast path: the last request leaves; nobody to release. */
		tree->root = tree->leftmost = NULL;
		lock->rb_parent_flags &= RL_READER;
		return;
	}
	if (tree->leftmost == lock)
		tree->leftmost = itree_next_inorder(lock);
	itree_erase(&tree->root, lock);
	if (!tree->nr_waiting)
		return; /* nobody counted us: no walk (all held, e.g.) */

	if (!intersects_any(tree, lock))
		return;
	itree_foreach(n, tree->root, lock->start, lock->last) {
		if (n->seqnum > lock->seqnum && conflict(reader, is_reader(n)))
			put_blocker(tree, n, wl);
	}
}

static inline void tree_unlock(struct range_lock_tree *tree)
{
	rl_check_tree(tree);
	tree_lock_release(tree_lock_word(tree), tree->root != NULL);
}

/*
 * Take tree_lock.  A request that held the empty tree through the fast path
 * (tree_lock.h) is displaced by that and enters the tree here, as the held
 * request it is: first in arrival order, since the tree was empty and nobody
 * could enter before it was displaced.
 */
static inline void tree_lock(struct range_lock_tree *tree)
{
	uintptr_t fast = tree_lock_acquire(tree_lock_word(tree));

	if (__builtin_expect(fast != 0, 0)) {
		struct range_lock *holder = (struct range_lock *)(fast & ~TL_FAST_BITS);
		bool reader = fast == ((uintptr_t)holder | TL_FAST_R);

		insert_request(tree, holder, reader, 0);
		/* Statistics were off when it took the fast path (or it raced
		 * with their enabling): count its hold now, as its unlock will
		 * go through the tree and be counted. */
		if (tree->stats)
			stat_granted(tree->stats, reader, false);
	}
}

/* The fast path: may @lock hold @tree without entering it? */
static inline uintptr_t fast_value(struct range_lock *lock, bool reader)
{
	return (uintptr_t)lock | (reader ? TL_FAST_R : TL_FAST_W);
}

static inline bool fast_path_allowed(struct range_lock_tree *tree)
{
#if RANGELOCK_CHECKS
	(void)tree;
	return false; /* every request goes through the checked tree */
#else
	/* Statistics count in the tree.  Enabling them displaces any fast
	 * holder; one that slips in between this look and its CAS is counted
	 * when it is displaced (tree_lock()), so a relaxed look is enough. */
	return !__atomic_load_n(&tree->stats, __ATOMIC_RELAXED);
#endif
}

/* ---- waiting time ---------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stat_wait_time(struct range_lock_stats *st, uint64_t ns)
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

enum wait_kind { WAIT_PLAIN, WAIT_INTERRUPTIBLE, WAIT_KILLABLE, WAIT_TIMED };

struct waiter {
	struct range_lock_tree *tree;
	struct range_lock *lock;
	enum wait_kind kind;
	bool reader;              /* for the probes: never read lock's flags unlocked */
	clockid_t clockid;
	const struct timespec *abstime;
	uint64_t wait_start_ns;   /* 0 unless statistics time this wait */
};


/*
 * A waiting request stops waiting.  Returns true if the grant had already
 * arrived and the request keeps its range (never for cancellation, where a
 * granted range is released like an unlock); false if it left the tree.
 */
static bool withdraw_request(struct waiter *w, enum give_up why)
{
	struct range_lock_tree *tree = w->tree;
	struct range_lock *lock = w->lock;
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock_stats *st;
	bool granted;

	wl.n = 0;
	tree_lock(tree);
	st = tree->stats;
	granted = (atomic_load_explicit(wait_word(lock), memory_order_acquire) >> 1) == 0;
	if (granted && why != GIVE_UP_CANCEL) {
		tree_unlock(tree);
		return true;
	}
	if (!granted)
		tree->nr_waiting--;
	if (st) {
		/* Timed here, under tree_lock: once the request is out of the
		 * tree, the tree and its statistics storage may be freed. */
		if (w->wait_start_ns)
			stat_wait_time(st, now_ns() - w->wait_start_ns);
		if (granted) {
			STAT_ADD(st, held_now, -1);
		} else {
			STAT_ADD(st, waiting_now, -1);
		}
		if (why == GIVE_UP_SIGNAL)
			STAT_ADD(st, gave_up_signal, 1);
		else if (why == GIVE_UP_TIMEOUT)
			STAT_ADD(st, gave_up_timeout, 1);
		else
			STAT_ADD(st, gave_up_cancel, 1);
	}
	remove_request(tree, lock, &wl);
	tree_unlock(tree);
	wake_list_flush(&wl);
	return false;
}

/* ---- waiting ---------------------------------------------------------- */

/*
 * Spin on the grant word for the thread's current budget.  True when the
 * grant arrived; the budget doubles then, and halves when it did not.
 */
static bool spin_for_grant(_Atomic uint32_t *word)
{
	uint32_t budget = grant_spin_budget;

	for (uint32_t i = 0; i < budget; i++) {
		if (!(atomic_load_explicit(word, memory_order_acquire) >> 1)) {
			grant_spin_budget = budget < RL_GRANT_SPIN_MAX / 2
						    ? budget * 2 : RL_GRANT_SPIN_MAX;
			return true;
		}
		rl_cpu_relax();
	}
	grant_spin_budget = budget > 2 * RL_GRANT_SPIN_MIN ? budget / 2
							   : RL_GRANT_SPIN_MIN;
	return false;
}

/* Returns 0 when granted, -EINTR or -ETIMEDOUT after leaving the tree. */
static int wait_loop(struct waiter *w)
{
	_Atomic uint32_t *word = wait_word(w->lock);
	unsigned flags = w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0;
	/* No spin for interruptible waits: a signal handler that runs while
	 * we spin would go unreported. */
	bool may_spin = w->kind != WAIT_INTERRUPTIBLE;
	uint32_t v;
	int r;

	v = atomic_load_explicit(word, memory_order_acquire);
	for (;;) {
		if (!(v >> 1))
			return 0;
		/* Spin only when next in line (one blocker left): the others
		 * cannot be granted soon, and spinning would take CPUs from
		 * the threads that hold or are about to. */
		if (may_spin && (v >> 1) == 1) {
			may_spin = false;
			if (v & SLEEPING) {
				/* Woken early to spin (put_blocker()): stop
				 * announcing a sleep, or the grant would come
				 * with a needless FUTEX_WAKE. */
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
		/* Announce the sleep, so the granter knows to FUTEX_WAKE. */
		if (!(v & SLEEPING)) {
			if (!atomic_compare_exchange_weak_explicit(
				    word, &v, v | SLEEPING, memory_order_acquire,
				    memory_order_acquire))
				continue;
			v |= SLEEPING;
		}
		if (w->kind == WAIT_KILLABLE) {
			/* The cancellation point: bounded waits and
			 * pthread_testcancel() between them (cleanup handler
			 * in wait_loop_killable()). */
			struct timespec slice;

			pthread_testcancel();
			clock_gettime(CLOCK_MONOTONIC, &slice);
			slice.tv_nsec += KILLABLE_SLICE_NS;
			if (slice.tv_nsec >= 1000000000L) {
				slice.tv_sec++;
				slice.tv_nsec -= 1000000000L;
			}
			(void)rl_wait(word, v, CLOCK_MONOTONIC, &slice, 0);
			pthread_testcancel();
		} else {
			r = rl_wait(word, v, w->clockid,
				    w->kind == WAIT_TIMED ? w->abstime : NULL, flags);
			if ((r == -EINTR && w->kind == WAIT_INTERRUPTIBLE) ||
			    (r == -ETIMEDOUT && w->kind == WAIT_TIMED)) {
				if (withdraw_request(w, r == -EINTR ? GIVE_UP_SIGNAL
								    : GIVE_UP_TIMEOUT))
					return 0;
				return r;
			}
		}
		/* Any return means "look again" (FUTEX-RULES rule 4); after a
		 * wake-up, next in line may spin again. */
		may_spin = w->kind != WAIT_INTERRUPTIBLE;
		v = atomic_load_explicit(word, memory_order_acquire);
	}
}

static void withdraw_on_cancel(void *arg)
{
	struct waiter *w = arg;

	rl_probe_give_up(w->tree, w->lock, w->reader, -ECANCELED);
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

static int wait_for_grant(struct waiter *w)
{
	struct range_lock_stats *st = stats_of(w->tree);
	int r;

	rl_probe_wait(wait_begin, w->tree, w->lock, w->reader);
	w->wait_start_ns = st ? now_ns() : 0;
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
		stat_wait_time(st, now_ns() - w->wait_start_ns);
	return r;
}

/* ---- entry ------------------------------------------------------------ */

static bool timespec_valid(clockid_t clockid, const struct timespec *abstime)
{
	return (clockid == CLOCK_MONOTONIC || clockid == CLOCK_REALTIME) &&
	       abstime && abstime->tv_sec >= 0 && abstime->tv_nsec >= 0 &&
	       abstime->tv_nsec < 1000000000L;
}

/*
 * The start of every lock call: check the arguments, try the fast path
 * (true: @lock now holds the empty tree), else take tree_lock (false).
 */
static inline __attribute__((always_inline)) bool
enter(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
      bool reader)
{
	check_args(call, tree, lock);
	if (is_linked(lock))
		die(call, lock, "request is already in a tree (locked twice?)");
	lock->rb_parent_flags = reader ? RL_READER : 0;
	lock->owner_tid = rl_thread_id();
	if (fast_path_allowed(tree) &&
	    tree_fast_acquire(tree_lock_word(tree), fast_value(lock, reader)))
		return true;

	tree_lock(tree);
	if (is_linked(lock)) { /* it was fast held: materialised just now */
		tree_unlock(tree);
		die(call, lock, "request is already in a tree (locked twice?)");
	}
	return false;
}

static inline __attribute__((always_inline)) int lock_common(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, bool reader, struct waiter *w,
		       int subclass, void *site)
{
	struct range_lock_stats *st;
	uint32_t blockers;
	int r;

	if (enter(call, tree, lock, reader))
		return 0; /* fast held */
	blockers = count_blockers(tree, lock, reader, false);
	if (blockers) {
		if (w->kind == WAIT_TIMED && !timespec_valid(w->clockid, w->abstime)) {
			tree_unlock(tree);
			return -EINVAL;
		}
		if (w->kind != WAIT_TIMED)
			rl_check_self_deadlock(tree, lock, reader, call);
	}
	insert_request(tree, lock, reader, blockers);
	st = tree->stats;
	if (st) {
		if (blockers) {
			STAT_ADD(st, contended, 1);
			STAT_ADD(st, waiting_now, 1);
			STAT_PEAK(st, waiting_now, waiting_peak);
		} else {
			stat_granted(st, reader, false);
		}
	}
	tree_unlock(tree);

	if (blockers) {
		w->tree = tree;
		w->lock = lock;
		w->reader = reader;
		r = wait_for_grant(w);
		if (r)
			return r;
	}
	rl_check_acquired(tree, lock, subclass, site);
	return 0;
}

#define CALLER __builtin_return_address(0)

#define DEFINE_LOCK_CALLS(mode, reader)                                          \
	void range_##mode##_lock(struct range_lock_tree *tree,                   \
				 struct range_lock *lock)                        \
	{                                                                        \
		struct waiter w = { .kind = WAIT_PLAIN };                        \
		lock_common("range_" #mode "_lock", tree, lock, reader, &w, 0,   \
			    CALLER);                                             \
	}                                                                        \
	void range_##mode##_lock_nested(struct range_lock_tree *tree,            \
					struct range_lock *lock, int subclass)   \
	{                                                                        \
		struct waiter w = { .kind = WAIT_PLAIN };                        \
		lock_common("range_" #mode "_lock_nested", tree, lock, reader,   \
			    &w, subclass, CALLER);                               \
	}                                                                        \
	int range_##mode##_lock_interruptible(struct range_lock_tree *tree,      \
					      struct range_lock *lock)           \
	{                                                                        \
		struct waiter w = { .kind = WAIT_INTERRUPTIBLE };                \
		return lock_common("range_" #mode "_lock_interruptible", tree,   \
				   lock, reader, &w, 0, CALLER);                 \
	}                                                                        \
	int range_##mode##_lock_killable(struct range_lock_tree *tree,           \
					 struct range_lock *lock)                \
	{                                                                        \
		struct waiter w = { .kind = WAIT_KILLABLE };                     \
		return lock_common("range_" #mode "_lock_killable", tree, lock,  \
				   reader, &w, 0, CALLER);                       \
	}                                                                        \
	int range_##mode##_timedlock(struct range_lock_tree *tree,               \
				     struct range_lock *lock, clockid_t clockid, \
				     const struct timespec *abstime)             \
	{                                                                        \
		struct waiter w = { .kind = WAIT_TIMED,                          \
				    .clockid = clockid,                          \
				    .abstime = abstime };                        \
		return lock_common("range_" #mode "_timedlock", tree, lock,      \
				   reader, &w, 0, CALLER);                       \
	}

DEFINE_LOCK_CALLS(read, true)
DEFINE_LOCK_CALLS(write, false)

int range_write_lock_killable_nested(struct range_lock_tree *tree,
				     struct range_lock *lock, int subclass)
{
	struct waiter w = { .kind = WAIT_KILLABLE };

	return lock_common("range_write_lock_killable_nested", tree, lock,
			   false, &w, subclass, CALLER);
}

static inline __attribute__((always_inline)) int trylock_common(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, bool reader, void *site)
{
	struct range_lock_stats *st;
	bool busy;

	if (enter(call, tree, lock, reader))
		return 1; /* fast held */
	st = tree->stats;
	busy = count_blockers(tree, lock, reader, true) != 0;
	if (busy) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
	} else {
		insert_request(tree, lock, reader, 0);
		if (st)
			stat_granted(st, reader, false);
	}
	tree_unlock(tree);
	if (busy)
		return 0;
	rl_check_acquired(tree, lock, 0, site);
	return 1;
}

int range_read_trylock(struct range_lock_tree *tree, struct range_lock *lock)
{
	return trylock_common("range_read_trylock", tree, lock, true, CALLER);
}

int range_write_trylock(struct range_lock_tree *tree, struct range_lock *lock)
{
	return trylock_common("range_write_trylock", tree, lock, false, CALLER);
}

/* ---- release ---------------------------------------------------------- */

/* Under tree_lock: abort unless @lock is held in @tree in mode @reader. */
static void check_held(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, bool reader)
{
	if (!in_tree(tree, lock)) {
		tree_unlock(tree);
		die(call, lock, "request is not in this tree (not locked?)");
	}
	if (atomic_load_explicit(wait_word(lock), memory_order_relaxed) >> 1) {
		tree_unlock(tree);
		die(call, lock, "request is still waiting, not held");
	}
	if (is_reader(lock) != reader) {
		tree_unlock(tree);
		die(call, lock, reader ? "range is held for writing, not reading"
				       : "range is held for reading, not writing");
	}
}

static inline __attribute__((always_inline)) void unlock_common(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, bool reader)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock_stats *st;

	check_args(call, tree, lock);
	if (tree_fast_release(tree_lock_word(tree), fast_value(lock, reader)))
		return;
	wl.n = 0;
	tree_lock(tree);
	check_held(call, tree, lock, reader);
	rl_check_released(tree, lock);
	st = tree->stats;
	if (st)
		STAT_ADD(st, held_now, -1); /* before the grants it makes */
	remove_request(tree, lock, &wl);
	tree_unlock(tree);
	wake_list_flush(&wl);
}

void range_read_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	unlock_common("range_read_unlock", tree, lock, true);
}

void range_write_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	unlock_common("range_write_unlock", tree, lock, false);
}

void range_downgrade_write(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock *n;

	check_args("range_downgrade_write", tree, lock);
	wl.n = 0;
	tree_lock(tree);
	check_held("range_downgrade_write", tree, lock, false);
	lock->rb_parent_flags |= RL_READER;
	/* Later readers counted us as a writer; as a reader we no longer
	 * conflict with them.  Later writers still wait for us. */
	if (tree->nr_waiting) {
		itree_foreach(n, tree->root, lock->start, lock->last) {
			if (n->seqnum > lock->seqnum && is_reader(n))
				put_blocker(tree, n, &wl);
		}
	}
	tree_unlock(tree);
	wake_list_flush(&wl);
}

/* ---- setup ------------------------------------------------------------ */

void range_lock_tree_init(struct range_lock_tree *tree)
{
	if (!tree)
		die("range_lock_tree_init", NULL, "NULL tree");
	memset(tree, 0, sizeof(*tree));
}

int range_lock_tree_set_fifo(struct range_lock_tree *tree, int fifo)
{
	int busy;

	if (!tree)
		die("range_lock_tree_set_fifo", NULL, "NULL tree");
	tree_lock(tree);
	busy = tree->root != NULL;
	if (!busy) {
		if (fifo)
			tree->flags |= RANGE_LOCK_TREE_FLAG_FIFO;
		else
			tree->flags &= ~RANGE_LOCK_TREE_FLAG_FIFO;
	}
	tree_unlock(tree);
	return busy ? -EBUSY : 0;
}

int range_lock_tree_destroy(struct range_lock_tree *tree)
{
	int busy;

	if (!tree)
		die("range_lock_tree_destroy", NULL, "NULL tree");
	tree_lock(tree);
	busy = tree->root != NULL;
	tree_lock_release(tree_lock_word(tree), busy);
	return busy ? -EBUSY : 0;
}

int range_lock_init(struct range_lock *lock, uint64_t start, uint64_t last)
{
	if (!lock)
		die("range_lock_init", NULL, "NULL request");
	memset(lock, 0, sizeof(*lock));
	if (start > last)
		return -EINVAL;
	lock->start = start;
	lock->last = last;
	lock->subtree_last = last;
	return 0;
}

void range_lock_init_full(struct range_lock *lock)
{
	range_lock_init(lock, 0, RANGE_LOCK_FULL);
}

const char *rangelock_version(void)
{
	return RANGELOCK_VERSION_STRING;
}

/* ---- statistics and dump ---------------------------------------------- */

/* Under tree_lock: recount held_now and waiting_now from the tree. */
static void stats_recount(struct range_lock_tree *tree, struct range_lock_stats *st)
{
	uint64_t held = 0, waiting = 0;
	const struct range_lock *n;

	for (n = tree->leftmost; n; n = itree_next_inorder(n)) {
		if (atomic_load_explicit(wait_word((struct range_lock *)n),
					 memory_order_relaxed) >> 1)
			waiting++;
		else
			held++;
	}
	__atomic_store_n(&st->held_now, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_now, waiting, __ATOMIC_RELAXED);
	__atomic_store_n(&st->held_peak, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_peak, waiting, __ATOMIC_RELAXED);
}

static void stats_zero(struct range_lock_stats *st)
{
	uint64_t *f = (uint64_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		__atomic_store_n(&f[i], 0, __ATOMIC_RELAXED);
}

int range_lock_tree_enable_stats(struct range_lock_tree *tree,
				 struct range_lock_stats *storage)
{
	int r = 0;

	if (!tree || !storage)
		return -EINVAL;
	tree_lock(tree);
	if (tree->stats && tree->stats != storage) {
		r = -EBUSY;
	} else if (!tree->stats) {
		/* Atomics without tree_lock (waiters' wait times, readers
		 * of the pointer): Valgrind's tools must not check them. */
		rl_race_ok(storage, sizeof(*storage));
		rl_race_ok(&tree->stats, sizeof(tree->stats));
		stats_zero(storage);
		stats_recount(tree, storage);
		/* release: a waiter that sees the pointer sees zeroed counters */
		__atomic_store_n(&tree->stats, storage, __ATOMIC_RELEASE);
	}
	tree_unlock(tree);
	return r;
}

int range_lock_tree_get_stats(struct range_lock_tree *tree,
			      struct range_lock_stats *out)
{
	const uint64_t *f;
	uint64_t *o = (uint64_t *)out;

	if (!tree || !out)
		return -EINVAL;
	tree_lock(tree);
	if (!tree->stats) {
		tree_unlock(tree);
		memset(out, 0, sizeof(*out));
		return -ENODATA;
	}
	f = (const uint64_t *)tree->stats;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&f[i], __ATOMIC_RELAXED);
	tree_unlock(tree);
	return 0;
}

void range_lock_tree_reset_stats(struct range_lock_tree *tree)
{
	if (!tree)
		die("range_lock_tree_reset_stats", NULL, "NULL tree");
	tree_lock(tree);
	if (tree->stats) {
		stats_zero(tree->stats);
		stats_recount(tree, tree->stats);
	}
	tree_unlock(tree);
}

void range_lock_tree_dump(struct range_lock_tree *tree, FILE *out)
{
	const struct range_lock *n;
	uint32_t word;

	int oldstate;

	if (!tree || !out)
		die("range_lock_tree_dump", NULL, "NULL tree or stream");
	/* fprintf() is a cancellation point: never be cancelled holding
	 * tree_lock. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	tree_lock(tree);
	fprintf(out, "range_lock_tree %p: %u request(s), next seqnum %llu\n",
		(void *)tree, tree->nr_requests, (unsigned long long)tree->seqnum);
	for (n = tree->leftmost; n; n = itree_next_inorder(n)) {
		word = atomic_load_explicit(wait_word((struct range_lock *)n),
					    memory_order_relaxed);
		fprintf(out, "  [%llu, %llu] %s %s seq=%llu blocking=%u tid=%u\n",
			(unsigned long long)n->start, (unsigned long long)n->last,
			is_reader(n) ? "read " : "write",
			(word >> 1) ? "waiting" : "held   ",
			(unsigned long long)n->seqnum, word >> 1, n->owner_tid);
	}
	tree_unlock(tree);
	pthread_setcancelstate(oldstate, NULL);
}
