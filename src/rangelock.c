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
 * inserted first, as the held request it is).  Two requests conflict unless
 * both are readers.  Each request in the tree has a seqnum, its place in the
 * PRECEDENCE order, and a blocking count:
 *
 *   blocking(R) = #{ Q in tree : Q.seqnum < R.seqnum, Q intersects R,
 *                    Q and R conflict }                      (the invariant)
 *
 * true whenever tree_lock is free (checked in RANGELOCK_CHECKS builds, and
 * model-checked in tests/model/).  A held request has blocking 0, so two
 * held requests never conflict (of two intersecting conflicting requests the
 * one with the higher seqnum counts the other).  Leaving the tree (unlock,
 * or giving up while waiting) walks the intersecting requests and takes one
 * blocker off each conflicting one with a HIGHER seqnum -- exactly those
 * that count the leaver.  Downgrading a writer to a reader takes one off the
 * higher readers, which alone stop conflicting with it.
 *
 * Two policies (the tree's flags; docs/design.md, "Policies"):
 *  - FIFO (the kernel patch): an arriving request takes the next seqnum and
 *    counts every intersecting conflicting request; it holds its range when
 *    the count falls to 0.  Precedence is arrival order; no stealing.
 *  - Default, eventual fairness: an arriving request whose intersecting
 *    conflicting requests are all unmarked WAITERS overtakes them: it takes
 *    seqnum (their smallest seqnum - 1), adds one blocker to each of them,
 *    and holds its range at once (overtake()).  Seqnum ties are then
 *    possible, but only between requests that do not both intersect and
 *    conflict, where the order means nothing.  A waiter that has waited
 *    RL_HANDOFF_NS marks itself HANDOFF; nothing overtakes a marked waiter,
 *    so its count only falls: overtaking is bounded.  A release grants a
 *    waiter whose count reaches 0 only if it is spinning (running) or
 *    marked; a sleeping one is made ELIGIBLE and woken, and claims its range
 *    under tree_lock unless a running thread overtook it meanwhile.
 * trylock succeeds exactly when a lock call would hold at once.
 *
 * THE READER FAST PATH (fast_read.h has the protocol)
 * ===================================================
 * While no writer is in a tree, the tree may be BIASED (a flag bit): a
 * reader then publishes its request in its thread's slot of a process-wide
 * table and holds its range without the tree or tree_lock.  Every writer
 * entry, and every call that must see all holders, first REVOKES under
 * tree_lock (revoke_fast_readers()): it clears BIASED and moves each
 * published reader of the tree into the tree as a held reader
 * (materialise()), after winning that slot's CAS.  From then on the tree is
 * the usual one: the invariant above covers materialised readers like any
 * others (they take the next seqnum; with no writer in the tree nobody
 * counts them).  maybe_bias() sets BIASED again in the read slow path after
 * a delay with no writer in the tree.  So BIASED => no writer in the tree,
 * in both policies: no reader reads fast while a writer waits (FIFO) or is
 * marked (default), and a writer waits only for the readers it intersects.
 * While BIASED, tree_unlock() leaves the lock word non-zero: the lock-word
 * fast path of a lone writer is closed.
 *
 * THE REQUEST'S WAIT WORD
 * =======================
 * wait_word = blocking << 2 | HANDOFF | SLEEPING;  0 means HELD, in both
 * policies, and ELIGIBLE (== SLEEPING: count 0, asleep, not granted) exists
 * only in the default policy.
 *   - The count is written only under tree_lock: set at entry before the
 *     request is published (relaxed store: nobody else can see it until
 *     tree_lock is released); raised by an overtaker (fetch_add) and lowered
 *     by a releaser (a CAS loop, put_blocker()).  The CAS that sets the word
 *     to 0 IS the grant: the last write anyone makes to a request it grants.
 *   - HANDOFF is set by the waiter itself, under tree_lock (fetch_or).
 *   - SLEEPING is set and cleared only by the waiter, WITHOUT tree_lock, by
 *     compare-and-swap, and only while its count is at least 1: set just
 *     before FUTEX_WAIT on the value it set, cleared when it starts to spin
 *     (it spins only while next in line: one blocker left).  That is why
 *     every change by others is an atomic read-modify-write: it races with
 *     the waiter's CAS, and its old value tells whether anyone sleeps
 *     (FUTEX_WAKE is skipped when nobody does) and whether it may grant.
 *   - ELIGIBLE -> HELD (the claim) happens under tree_lock, by the waiter.
 *   - A release that leaves a sleeping waiter next in line wakes it early,
 *     to spin for its grant while the holder works; to the waiter that is a
 *     spurious wake-up.
 *
 * Who writes which field, under which lock:
 *   tree->root, leftmost, seqnum, nr_requests, nr_waiting, nr_writers,
 *       stats counters (except the wait times), and every node's links,
 *       flags, start/last/subtree_last, seqnum:  only under tree_lock.
 *   tree->flags:                            only under tree_lock, with
 *                                            atomic stores: fast readers
 *                                            load BIASED without it (seq_cst,
 *                                            the handshake); setting BIASED
 *                                            is a release store, clearing it
 *                                            a seq_cst one (the handshake's
 *                                            writer side); the FIFO bit and
 *                                            the delay count are relaxed.
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
 *                                            it is published: its thread id,
 *                                            or RL_SLOT_TAG | slot for a fast
 *                                            read (kept when materialised, so
 *                                            that the unlock finds the slot);
 *                                            reset to 0 by that read's unlock.
 *   A fast-held request's fields:           by its thread before it
 *                                            publishes; then by nobody until
 *                                            a revoker wins its slot, which
 *                                            makes the revoker the tree's
 *                                            writer of its node fields (as
 *                                            for the lock word's fast holder).
 *
 * Memory orders:
 *   - tree_lock: acquire when taken, release when dropped (tree_lock.h).
 *     An uncontended lock/unlock pair is ordered through it, and so are an
 *     overtaker and a claimer: every release of a range they take happened
 *     under tree_lock before they took it.
 *   - The grant: the CAS to 0 with RELEASE, the waiter's load with ACQUIRE.
 *     The releaser's critical section happens before its tree_lock release,
 *     which happens before the granter's tree_lock acquire (when the granter
 *     is another unlocker), which happens before the granting CAS; the
 *     waiter's acquire load that reads 0 synchronises with it.
 *   - An overtaker's fetch_add and the HANDOFF fetch_or: relaxed; they order
 *     nothing (the waiter only re-reads its count), and they happen under
 *     tree_lock, which every other writer of the count holds.
 *   - SLEEPING CASes (set before sleeping, clear before spinning): acquire,
 *     only because a failed CAS hands back a value that may show the grant;
 *     the bit itself orders nothing, and all RMWs on one word are totally
 *     ordered, so a granter's CAS sees the bit's latest state.
 *   - Reads of wait_word under tree_lock: relaxed for decisions (only
 *     tree_lock holders change the count); acquire in the give-up and claim
 *     paths, which may keep a grant and enter the critical section.
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
 * timeout, cancellation) takes tree_lock and looks at its word.  If a grant
 * arrived meanwhile, or it is ELIGIBLE (the range is free), it keeps the
 * range (signal, timeout: report success) or releases it like an unlock
 * (cancellation: the thread is going away).
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
#include "fast_read.h"
#include "file_lock.h"
#include "interval_tree.h"
#include "tree_lock.h"
#include "wait.h"

/* The request's wait word: count << 2 | HANDOFF | SLEEPING; 0 is "held". */
#define SLEEPING 1u
#define HANDOFF 2u
#define ONE_BLOCKER 4u
#define ELIGIBLE SLEEPING	/* count 0, asleep, not granted (default policy) */

static inline uint32_t blockers_of(uint32_t word)
{
	return word >> 2;
}

/*
 * The hand-off bound of the default policy: a waiter that has waited this
 * long marks itself (HANDOFF) and can no longer be overtaken.  2 ms: long
 * enough for many hand-overs between running threads (a 1 us critical
 * section is taken ~1000 times meanwhile), short enough that the 99th
 * percentile wait stays within a few milliseconds (rangelock-bench).
 */
#ifndef RL_HANDOFF_NS
#define RL_HANDOFF_NS INT64_C(2000000)
#endif

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

/* Reads through tree_lock, with no writer in the tree, before fast reads
 * are allowed again (plus one per slot ever used: bias_delay()). */
#ifndef RL_BIAS_DELAY
#define RL_BIAS_DELAY 16
#endif
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

/* tree->flags: written only under tree_lock, always with an atomic store
 * (fast readers load them without it); read with relaxed loads. */
static inline uint32_t tree_flags(const struct range_lock_tree *tree)
{
	return __atomic_load_n(&tree->flags, __ATOMIC_RELAXED);
}

static inline void tree_flags_store(struct range_lock_tree *tree, uint32_t flags)
{
	rl_race_ok(&tree->flags, sizeof(tree->flags)); /* Valgrind: read unlocked */
	__atomic_store_n(&tree->flags, flags, __ATOMIC_RELAXED);
}

static inline bool tree_is_fifo(const struct range_lock_tree *tree)
{
	return tree_flags(tree) & RANGE_LOCK_TREE_FLAG_FIFO;
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

/*
 * Take one blocker off @waiter (POLICY rule 4).  When it was the last one,
 * the waiter is granted (word := 0, the last write to the request) if the
 * tree is FIFO, or the waiter has marked itself HANDOFF, or it is spinning
 * (not SLEEPING: it runs); a sleeping unmarked waiter of a default tree is
 * only made ELIGIBLE (word := SLEEPING) and woken, so that a running thread
 * may take the range first (overtake) instead of the range waiting for the
 * scheduler.  A waiter left next in line while asleep is woken early to spin.
 */
static inline void put_blocker(struct range_lock_tree *tree, struct range_lock *waiter,
			       struct wake_list *wl)
{
	_Atomic uint32_t *word = wait_word(waiter);
	uint32_t old = atomic_load_explicit(word, memory_order_relaxed), new;

	rl_hb_release(word); /* BEFORE: a grant is the last touch */

	/* A CAS loop: the waiter may flip SLEEPING meanwhile (only it, and
	 * only while it has blockers); everything else changes under
	 * tree_lock, which we hold. */
	do {
		if (blockers_of(old) > 1)
			new = old - ONE_BLOCKER;
		else if (tree_is_fifo(tree) || (old & (HANDOFF | SLEEPING)) != SLEEPING)
			new = 0;
		else
			new = ELIGIBLE;
	} while (!atomic_compare_exchange_weak_explicit(word, &old, new,
							memory_order_release,
							memory_order_relaxed));

	if (new == ELIGIBLE)
		tree->nr_waiting--; /* it counts nobody now: no walk needed for it */
	if (new != 0) {
		/* Next in line now and asleep, or eligible: wake it, to spin
		 * for its grant or to claim the range (to the waiter an
		 * early wake-up is spurious). */
		if ((old & SLEEPING) && (new == ELIGIBLE || blockers_of(new) == 1))
			wake_list_add(wl, word);
		return;
	}
	tree->nr_waiting--;
	if (tree->stats)
		stat_granted(tree->stats, is_reader(waiter), true);
	if (old & SLEEPING)
		wake_list_add(wl, word);
}

static inline bool intersects_any(const struct range_lock_tree *tree,
				  const struct range_lock *lock)
{
	/* O(1): nothing in the tree starts by @last or ends at/after @start. */
	return tree->root && lock->start <= tree->root->subtree_last &&
	       tree->leftmost->start <= lock->last;
}

/* What a request entering the tree finds on its range. */
struct entry_scan {
	uint32_t blockers;       /* intersecting conflicting requests */
	bool must_wait;          /* one of them is held, or HANDOFF-marked */
	uint64_t first_seq;      /* the smallest seqnum among them */
};

/*
 * Count the requests in the tree that @lock (of mode @reader) conflicts
 * with.  For the default policy, also find whether it may overtake them all
 * (POLICY rule 2: none of them held or marked); with @stop_at_first (a FIFO
 * trylock), just say whether there is one.
 */
static void scan_entry(struct range_lock_tree *tree, const struct range_lock *lock,
		       bool reader, bool stop_at_first, struct entry_scan *scan)
{
	struct range_lock *n;
	uint32_t word;

	scan->blockers = 0;
	scan->must_wait = false;
	scan->first_seq = UINT64_MAX;
	if (!intersects_any(tree, lock))
		return;
	itree_foreach(n, tree->root, lock->start, lock->last) {
		if (!conflict(reader, is_reader(n)))
			continue;
		scan->blockers++;
		if (stop_at_first) {
			scan->must_wait = true;
			return;
		}
		word = atomic_load_explicit(wait_word(n), memory_order_relaxed);
		if (word == 0 || (word & HANDOFF))
			scan->must_wait = true;
		if (n->seqnum < scan->first_seq)
			scan->first_seq = n->seqnum;
	}
	if (tree_is_fifo(tree))
		scan->must_wait = scan->blockers != 0;
}

/*
 * Overtake (POLICY rule 2): every request @lock conflicts with waits and is
 * unmarked, so @lock takes its range now.  It is placed just before them in
 * the precedence order (the returned seqnum) and each of them counts it as
 * one more blocker, so the invariant holds and @lock's unlock releases them.
 */
static uint64_t overtake(struct range_lock_tree *tree, const struct range_lock *lock,
			 bool reader, const struct entry_scan *scan)
{
	struct range_lock *n;

	itree_foreach(n, tree->root, lock->start, lock->last) {
		if (!conflict(reader, is_reader(n)))
			continue;
		rl_race_ok(wait_word(n), sizeof(uint32_t)); /* annotate.h, edge 8 */
		/* An ELIGIBLE waiter (count 0) has a blocker again: it counts in
		 * nr_waiting once more, or our unlock would skip its walk. */
		if (atomic_fetch_add_explicit(wait_word(n), ONE_BLOCKER,
					      memory_order_relaxed) == ELIGIBLE)
			tree->nr_waiting++;
	}
	/* No wrap: every waiter has a seqnum >= 1, since the request it
	 * first waited for entered before it (seqnum 0 goes to the first
	 * request of a tree, which nothing can be waiting for). */
	return scan->first_seq - 1;
}

/* The caller has set lock->owner_tid.  @seqnum: tree->seqnum++ for an
 * arrival, the overtake() position for an overtaker. */
static void insert_request(struct range_lock_tree *tree, struct range_lock *lock,
			   bool reader, uint32_t blockers, uint64_t seqnum)
{
	lock->rb_parent_flags = reader ? RL_READER : 0;
	lock->seqnum = seqnum;
	atomic_store_explicit(wait_word(lock), blockers * ONE_BLOCKER,
			      memory_order_relaxed);
	tree->nr_requests++;
	tree->nr_waiting += blockers != 0;
	tree->nr_writers += !reader;
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
 * it: the same conflict rule as scan_entry(), and a higher seqnum, so exactly
 * those (an overtaker has a lower seqnum than the waiters it passed). */
static void remove_request(struct range_lock_tree *tree, struct range_lock *lock,
			   struct wake_list *wl)
{
	bool reader = is_reader(lock);
	struct range_lock *n;

	tree->nr_requests--;
	tree->nr_writers -= !reader;
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
	/* While fast reads are allowed the word is never 0, so that no lone
	 * writer takes the tree through the lock word past fast readers. */
	tree_lock_release(tree_lock_word(tree),
			  tree->root != NULL || (tree_flags(tree) & RL_TREE_BIASED));
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

		insert_request(tree, holder, reader, 0, tree->seqnum++);
		/* Statistics were off when it took the fast path, or it is
		 * materialising itself because they are on (enter()): count
		 * its hold now, as its unlock will go through the tree and be
		 * counted. */
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
	/* Statistics count in the tree: enter() looks at tree->stats after
	 * its fast CAS and materialises itself when they are on (one load
	 * either way; looking before the CAS too would cost another). */
	(void)tree;
	return true;
#endif
}

/* ---- the reader fast path's tree side (fast_read.h) ------------------ */

/*
 * How many reads through tree_lock, with no writer in the tree, before fast
 * reads are allowed again after a writer: a revocation scans every slot
 * ever used, so the delay grows with them; a tree that sees a writer more
 * often than that stays on the tree path (every writer entry restarts the
 * count).
 */
static inline uint32_t bias_delay(void)
{
	uint32_t d = RL_BIAS_DELAY + atomic_load_explicit(&rl_slots_used, memory_order_relaxed);

	return d < 0xffffu ? d : 0xffffu;
}

/* Under tree_lock: a revoker moves a fast reader into the tree, as the held
 * reader it is.  The tree has no writer (BIASED was set until now), so no
 * request conflicts with it and no blocking count changes; the next seqnum
 * keeps the invariant trivially true. */
static void materialise(struct range_lock_tree *tree, struct range_lock *lock)
{
	insert_request(tree, lock, true, 0, tree->seqnum++);
}

/*
 * Under tree_lock, before anything that must see every holder (a writer's
 * entry, statistics, the dump, destroy, the setters): stop fast reads and
 * move the published fast readers into the tree (the revoker's side of the
 * handshake: clear BIASED, full fence, scan).  Also restarts the delay.
 */
static void revoke_fast_readers(struct range_lock_tree *tree)
{
	uint32_t f = tree_flags(tree), delay = bias_delay() << RL_TREE_DELAY_SHIFT;

	if (!(f & RL_TREE_BIASED)) {
		if ((f & ~(RL_TREE_DELAY_ONE - 1)) != delay)
			tree_flags_store(tree, (f & (RL_TREE_DELAY_ONE - 1)) | delay);
		return;
	}
	f = (f & (RL_TREE_DELAY_ONE - 1) & ~RL_TREE_BIASED) | delay;
	__atomic_store_n(&tree->flags, f, __ATOMIC_SEQ_CST);
	rl_take_published(tree, materialise);
}

/*
 * Under tree_lock, in the read slow path: allow fast reads again once the
 * delay has passed with no writer in the tree.  Never with statistics (they
 * count in the tree), a file binding (the second level is taken per
 * request), in the checking mode (it checks every request in the tree) or
 * when the user turned it off.
 */
static inline void maybe_bias(struct range_lock_tree *tree)
{
	uint32_t f = tree_flags(tree);

	if ((f & (RL_TREE_BIASED | RANGE_LOCK_TREE_FLAG_NO_FAST_READ)) ||
	    tree->nr_writers || tree->stats || tree->file || !fast_path_allowed(tree))
		return;
	if (f >= RL_TREE_DELAY_ONE) {
		tree_flags_store(tree, f - RL_TREE_DELAY_ONE);
		return;
	}
	/* Release: a fast reader that sees the bit sees everything that
	 * happened under tree_lock before (the last writer's unlock). */
	rl_hb_release(&tree->flags); /* annotate.h, edge 10 */
	__atomic_store_n(&tree->flags, f | RL_TREE_BIASED, __ATOMIC_RELEASE);
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
	struct timespec handoff;  /* CLOCK_MONOTONIC: when to set HANDOFF */
	bool marked;              /* HANDOFF set, or a FIFO tree: no bound */
};


/* Under tree_lock: a waiter whose word is ELIGIBLE takes its range (POLICY
 * rule 5); the range is free and nobody overtook it since. */
static void claim_eligible(struct range_lock_tree *tree, struct range_lock *lock)
{
	/* Relaxed: the releases that made it eligible happened under
	 * tree_lock, which we acquired. */
	atomic_store_explicit(wait_word(lock), 0, memory_order_relaxed);
	if (tree->stats)
		stat_granted(tree->stats, is_reader(lock), true);
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
	st = tree->stats;
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
	uint32_t budget = grant_spin_budget;

	for (uint32_t i = 0; i < budget; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) == 0) {
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

/* @ns >= 0; int64_t because a bound of seconds does not fit a 32-bit long. */
static void timespec_add_ns(struct timespec *ts, int64_t ns)
{
	ts->tv_sec += (time_t)(ns / 1000000000);
	ts->tv_nsec += (long)(ns % 1000000000);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static bool timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static bool deadline_passed(clockid_t clockid, const struct timespec *abstime)
{
	struct timespec now;

	clock_gettime(clockid, &now);
	return !timespec_before(&now, abstime);
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

		if (user) {
			/* The caller's deadline on the monotonic clock, if it
			 * comes first (a wall-clock step during these
			 * milliseconds is noticed when the sleep ends). */
			struct timespec mono = *user;

			if (w->clockid != CLOCK_MONOTONIC) {
				struct timespec now_c, now_m;

				clock_gettime(w->clockid, &now_c);
				clock_gettime(CLOCK_MONOTONIC, &now_m);
				mono = now_m;
				if (timespec_before(&now_c, user)) {
					/* At most the bound ahead: no overflow
					 * for far deadlines. */
					int64_t ns = RL_HANDOFF_NS;

					if (user->tv_sec - now_c.tv_sec <= 1)
						ns = (int64_t)(user->tv_sec - now_c.tv_sec) * 1000000000 +
						     (user->tv_nsec - now_c.tv_nsec);
					timespec_add_ns(&mono, ns < RL_HANDOFF_NS ? ns : RL_HANDOFF_NS);
				}
			}
			if (timespec_before(&mono, &until))
				until = mono;
		}
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
static int wait_loop(struct waiter *w)
{
	_Atomic uint32_t *word = wait_word(w->lock);
	/* No spin for interruptible waits: a signal handler that runs while
	 * we spin would go unreported. */
	bool may_spin = w->kind != WAIT_INTERRUPTIBLE;
	uint32_t v;
	int r;

	w->marked = tree_is_fifo(w->tree) || w->kind == WAIT_INTERRUPTIBLE;
	if (!w->marked) {
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
			if (withdraw_request(w, r == -EINTR ? GIVE_UP_SIGNAL
							    : GIVE_UP_TIMEOUT))
				return 0;
			return r;
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

/*
 * POSIX: only a tv_nsec outside [0, 1000 million) makes a deadline invalid.
 * A negative tv_sec is a time long past (-ETIMEDOUT, as glibc's tst-abstime
 * checks); the wait backends report it without sleeping (wait.h).
 */
static bool timespec_valid(clockid_t clockid, const struct timespec *abstime)
{
	return (clockid == CLOCK_MONOTONIC || clockid == CLOCK_REALTIME) &&
	       abstime && abstime->tv_nsec >= 0 &&
	       abstime->tv_nsec < 1000000000L;
}

/*
 * Also what a tree in shared memory used by two processes looks like: the
 * other process's fast holder, materialised here, is read at an address of
 * this process (often this very request's stack slot, after fork()).
 * Telling the two apart would cost a syscall on the hot path: name both.
 */
#define ALREADY_IN_TREE "request is already in a tree (locked twice? or is " \
	"the tree used from another process? trees are private to one process)"

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
		die(call, lock, ALREADY_IN_TREE);
	if (reader && (tree_flags(tree) & RL_TREE_BIASED)) {
		/* The reader fast path (fast_read.h): no tree, no tree_lock. */
		enum fast_read r = fast_read_acquire(tree, lock);

		if (__builtin_expect(r == FAST_READ_HELD, 1))
			return true;
		if (r == FAST_READ_MATERIALISED) {
			/* Held in the tree once the revoker that took us
			 * drops tree_lock: wait for it. */
			tree_lock(tree);
			tree_unlock(tree);
			return true;
		}
	}
	lock->owner_tid = rl_thread_id();
	if (fast_path_allowed(tree)) {
		/*
		 * A fast-held request counts as in a tree (RL_LINKED, no
		 * parent), so that locking it again, in this tree or any
		 * other, aborts above.  Set before the CAS publishes it: a
		 * materialiser rewrites the flags (insert_request) and must
		 * be the only writer once the request is fast held; unlock
		 * clears them after its release CAS, when nobody else can.
		 */
		lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
		if (tree_fast_acquire(tree_lock_word(tree), fast_value(lock, reader))) {
			/*
			 * Statistics count in the tree: if they are on, go
			 * through tree_lock, which displaces and materialises
			 * us and counts the acquisition.  The look comes after
			 * the CAS so that no enabling slips in between: if our CAS read the 0
			 * that the enabler's tree_lock release wrote (or a
			 * later value), that release synchronises with our
			 * acq_rel CAS (the lock word's RMWs form a release
			 * sequence), so this relaxed load sees the pointer:
			 * we go through tree_lock, which materialises us and
			 * counts the acquisition.  Otherwise our CAS precedes
			 * the enabler's tree_lock acquire in the word's
			 * modification order, so the enabler displaces us
			 * and counts us as held (stats_recount): we acquired
			 * before statistics were on.  Either way every
			 * acquisition after the enabling is counted once.
			 */
			if (__builtin_expect(__atomic_load_n(&tree->stats,
							     __ATOMIC_RELAXED) != NULL, 0)) {
				tree_lock(tree);
				tree_unlock(tree);
			}
			return true;
		}
	}
	lock->rb_parent_flags = reader ? RL_READER : 0;

	tree_lock(tree);
	if (is_linked(lock)) { /* it was fast held: materialised just now */
		tree_unlock(tree);
		die(call, lock, ALREADY_IN_TREE);
	}
	return false;
}

static inline __attribute__((always_inline)) int lock_common(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, bool reader, struct waiter *w,
		       int subclass, void *site)
{
	struct range_lock_stats *st;
	struct entry_scan scan;
	uint32_t blockers = 0;
	uint64_t seqnum;
	int r;

	if (enter(call, tree, lock, reader))
		return 0; /* fast held */
	if (reader)
		maybe_bias(tree);
	else
		revoke_fast_readers(tree);
	scan_entry(tree, lock, reader, false, &scan);
	if (scan.blockers) {
		if (w->kind == WAIT_TIMED && scan.must_wait &&
		    !timespec_valid(w->clockid, w->abstime)) {
			tree_unlock(tree);
			return -EINVAL;
		}
		/* Overtaking or not: the same code would deadlock once the
		 * requests it passes are marked (POLICY rule 8). */
		if (w->kind != WAIT_TIMED)
			rl_check_self_deadlock(tree, lock, reader, call);
	}
	if (!scan.must_wait) {
		/* Free, or every conflicting request is an unmarked waiter. */
		seqnum = scan.blockers ? overtake(tree, lock, reader, &scan)
				       : tree->seqnum++;
	} else {
		blockers = scan.blockers;
		seqnum = tree->seqnum++;
	}
	insert_request(tree, lock, reader, blockers, seqnum);
	if (blockers && w->kind == WAIT_INTERRUPTIBLE && !tree_is_fifo(tree)) {
		/* Marked from the start: never overtaken, so it never wakes at
		 * the hand-off bound or to claim -- instants in which a signal
		 * handler could run unreported (see the header). */
		atomic_fetch_or_explicit(wait_word(lock), HANDOFF, memory_order_relaxed);
	}
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

/* ---- the second level: a tree bound to a file (file_lock.c) ----------- */

/*
 * Hooks at the public-call level only: after a local grant (fast path,
 * immediate or after a wait) the request takes its OFD lock; if that gives
 * up it is unlocked locally, so nothing stays locked at either level.  The
 * fast path stays on: it is a local grant like any other.  tree->file is
 * written under tree_lock while the tree is empty and read with a relaxed
 * load: after a grant it is stable until the unlock (set_file and destroy
 * need an empty tree), and the grant orders the read after the write.
 */
static void unlock_local(const char *call, struct range_lock_tree *tree,
			 struct range_lock *lock, bool reader);

static inline struct range_lock_file *file_of(struct range_lock_tree *tree)
{
	return __atomic_load_n(&tree->file, __ATOMIC_RELAXED);
}

struct local_hold {
	const char *call;
	struct range_lock_tree *tree;
	struct range_lock *lock;
	bool reader;
};

static void unlock_local_on_cancel(void *arg)
{
	struct local_hold *h = arg;

	unlock_local(h->call, h->tree, h->lock, h->reader);
}

static int file_acquire(const char *call, struct range_lock_tree *tree,
			struct range_lock *lock, bool reader, struct waiter *w,
			enum rl_file_wait kind)
{
	struct range_lock_file *f = file_of(tree);
	struct local_hold h = { call, tree, lock, reader };
	int r;

	r = rl_file_lock(f, lock->start, lock->last, reader, kind,
			 w ? w->clockid : 0, w ? w->abstime : NULL,
			 unlock_local_on_cancel, &h);
	if (r)
		unlock_local(call, tree, lock, reader);
	return r;
}

/* A bound tree takes only ranges that fit off_t: -EINVAL, or abort for the
 * calls that cannot return it (the plain calls, trylock). */
static inline bool file_range_bad(const char *call, struct range_lock_tree *tree,
				  struct range_lock *lock, bool can_fail)
{
	if (!tree || !lock || !file_of(tree) ||
	    rl_file_range_ok(lock->start, lock->last))
		return false;
	if (!can_fail)
		die(call, lock, "range does not fit off_t (tree bound to a file)");
	return true;
}

static inline __attribute__((always_inline)) int
lock_two_levels(const char *call, struct range_lock_tree *tree,
		struct range_lock *lock, bool reader, struct waiter *w,
		int subclass, void *site)
{
	static const enum rl_file_wait kinds[] = {
		[WAIT_PLAIN] = RL_FILE_PLAIN,
		[WAIT_INTERRUPTIBLE] = RL_FILE_INTERRUPTIBLE,
		[WAIT_KILLABLE] = RL_FILE_KILLABLE,
		[WAIT_TIMED] = RL_FILE_TIMED,
	};
	int r;

	if (file_range_bad(call, tree, lock, w->kind != WAIT_PLAIN))
		return -EINVAL;
	r = lock_common(call, tree, lock, reader, w, subclass, site);
	if (__builtin_expect(r == 0 && file_of(tree) != NULL, 0))
		r = file_acquire(call, tree, lock, reader, w, kinds[w->kind]);
	return r;
}

#define CALLER __builtin_return_address(0)

#define DEFINE_LOCK_CALLS(mode, reader)                                          \
	void range_##mode##_lock(struct range_lock_tree *tree,                   \
				 struct range_lock *lock)                        \
	{                                                                        \
		struct waiter w = { .kind = WAIT_PLAIN };                        \
		lock_two_levels("range_" #mode "_lock", tree, lock, reader, &w, 0, \
			    CALLER);                                             \
	}                                                                        \
	void range_##mode##_lock_nested(struct range_lock_tree *tree,            \
					struct range_lock *lock, int subclass)   \
	{                                                                        \
		struct waiter w = { .kind = WAIT_PLAIN };                        \
		lock_two_levels("range_" #mode "_lock_nested", tree, lock, reader, \
			    &w, subclass, CALLER);                               \
	}                                                                        \
	int range_##mode##_lock_interruptible(struct range_lock_tree *tree,      \
					      struct range_lock *lock)           \
	{                                                                        \
		struct waiter w = { .kind = WAIT_INTERRUPTIBLE };                \
		return lock_two_levels("range_" #mode "_lock_interruptible", tree, \
				   lock, reader, &w, 0, CALLER);                 \
	}                                                                        \
	int range_##mode##_lock_killable(struct range_lock_tree *tree,           \
					 struct range_lock *lock)                \
	{                                                                        \
		struct waiter w = { .kind = WAIT_KILLABLE };                     \
		return lock_two_levels("range_" #mode "_lock_killable", tree, lock, \
				   reader, &w, 0, CALLER);                       \
	}                                                                        \
	int range_##mode##_timedlock(struct range_lock_tree *tree,               \
				     struct range_lock *lock, clockid_t clockid, \
				     const struct timespec *abstime)             \
	{                                                                        \
		struct waiter w = { .kind = WAIT_TIMED,                          \
				    .clockid = clockid,                          \
				    .abstime = abstime };                        \
		return lock_two_levels("range_" #mode "_timedlock", tree, lock, \
				   reader, &w, 0, CALLER);                       \
	}

DEFINE_LOCK_CALLS(read, true)
DEFINE_LOCK_CALLS(write, false)

/*
 * 32-bit glibc targets (rangelock.h, RANGELOCK_TIME64_ABI): the library is
 * built with _TIME_BITS=64, so the timed calls above are exported as
 * range_*_timedlock_time64 (the header's redirect).  Programs built without
 * _TIME_BITS=64 call range_*_timedlock with the old struct timespec, two
 * longs: widened here, losslessly.
 */
#if RANGELOCK_TIME64_ABI
#ifndef __USE_TIME_BITS64
#error "build librangelock with -D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64 here (src/CMakeLists.txt does)"
#endif
struct timespec_time32 {
	long tv_sec;
	long tv_nsec;
};

#define DEFINE_TIMEDLOCK_TIME32(mode, reader)                                    \
	RANGELOCK_API int range_##mode##_timedlock_time32(                       \
		struct range_lock_tree *tree, struct range_lock *lock,           \
		clockid_t clockid, const struct timespec_time32 *abstime)        \
		__asm__("range_" #mode "_timedlock");                            \
	int range_##mode##_timedlock_time32(struct range_lock_tree *tree,        \
					    struct range_lock *lock,             \
					    clockid_t clockid,                   \
					    const struct timespec_time32 *abstime) \
	{                                                                        \
		struct timespec ts;                                              \
		struct waiter w = { .kind = WAIT_TIMED, .clockid = clockid };    \
									         \
		if (abstime) {                                                   \
			ts.tv_sec = abstime->tv_sec;                             \
			ts.tv_nsec = abstime->tv_nsec;                           \
			w.abstime = &ts;                                         \
		}                                                                \
		return lock_two_levels("range_" #mode "_timedlock", tree, lock,  \
				       reader, &w, 0, CALLER);                   \
	}

DEFINE_TIMEDLOCK_TIME32(read, true)
DEFINE_TIMEDLOCK_TIME32(write, false)
#endif /* RANGELOCK_TIME64_ABI */

int range_write_lock_killable_nested(struct range_lock_tree *tree,
				     struct range_lock *lock, int subclass)
{
	struct waiter w = { .kind = WAIT_KILLABLE };

	return lock_two_levels("range_write_lock_killable_nested", tree, lock,
			   false, &w, subclass, CALLER);
}

static inline __attribute__((always_inline)) int trylock_common(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, bool reader, void *site)
{
	struct range_lock_stats *st;
	bool busy;

	if (enter(call, tree, lock, reader))
		return 1; /* fast held */
	struct entry_scan scan;

	if (reader)
		maybe_bias(tree);
	else
		revoke_fast_readers(tree);

	st = tree->stats;
	/* Granted exactly when a lock call would be held at once (POLICY
	 * rule 3): in a FIFO tree when nothing conflicts, in the default
	 * policy also by overtaking unmarked waiters. */
	scan_entry(tree, lock, reader, tree_is_fifo(tree), &scan);
	busy = scan.must_wait;
	if (busy) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
	} else {
		insert_request(tree, lock, reader, 0,
			       scan.blockers ? overtake(tree, lock, reader, &scan)
					     : tree->seqnum++);
		if (st)
			stat_granted(st, reader, false);
	}
	tree_unlock(tree);
	if (busy)
		return 0;
	rl_check_acquired(tree, lock, 0, site);
	return 1;
}

/* trylock across both levels: another process's lock makes it 0 as well. */
static inline __attribute__((always_inline)) int
trylock_two_levels(const char *call, struct range_lock_tree *tree,
		   struct range_lock *lock, bool reader, void *site)
{
	file_range_bad(call, tree, lock, false);
	if (!trylock_common(call, tree, lock, reader, site))
		return 0;
	if (__builtin_expect(file_of(tree) != NULL, 0) &&
	    file_acquire(call, tree, lock, reader, NULL, RL_FILE_TRY))
		return 0;
	return 1;
}

int range_read_trylock(struct range_lock_tree *tree, struct range_lock *lock)
{
	return trylock_two_levels("range_read_trylock", tree, lock, true, CALLER);
}

int range_write_trylock(struct range_lock_tree *tree, struct range_lock *lock)
{
	return trylock_two_levels("range_write_trylock", tree, lock, false, CALLER);
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
	if (atomic_load_explicit(wait_word(lock), memory_order_relaxed) != 0) {
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

	uint32_t owner = lock ? lock->owner_tid : 0;

	check_args(call, tree, lock);
	if (owner & RL_SLOT_TAG) {
		/* It took a slot (fast_read.h): still published there, or
		 * materialised into the tree by a revoker. */
		if (!reader)
			die(call, lock, "range is held for reading, not writing");
		if (fast_read_release(tree, owner)) {
			lock->rb_parent_flags = 0;
			lock->owner_tid = 0;
			return;
		}
	} else if (tree_fast_release(tree_lock_word(tree), fast_value(lock, reader))) {
		/* Ours alone again (nobody displaced it): not in a tree. */
		lock->rb_parent_flags = 0;
		return;
	}
	wl.n = 0;
	tree_lock(tree);
	check_held(call, tree, lock, reader);
	if (owner & RL_SLOT_TAG) { /* materialised: give the slot back */
		rl_slot_unmaterialise(tree, owner);
		lock->owner_tid = 0;
	}
	rl_check_released(tree, lock);
	st = tree->stats;
	if (st)
		STAT_ADD(st, held_now, -1); /* before the grants it makes */
	remove_request(tree, lock, &wl);
	tree_unlock(tree);
	wake_list_flush(&wl);
}

static void unlock_local(const char *call, struct range_lock_tree *tree,
			 struct range_lock *lock, bool reader)
{
	unlock_common(call, tree, lock, reader);
}

/* Before the local unlock: the file state lives while the request is in
 * the tree (set_file and destroy free it only when the tree is empty). */
static inline void file_release(struct range_lock_tree *tree, struct range_lock *lock,
				bool reader)
{
	struct range_lock_file *f = tree && lock ? file_of(tree) : NULL;

	if (__builtin_expect(f != NULL, 0))
		rl_file_unlock(f, lock->start, lock->last, reader);
}

void range_read_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	file_release(tree, lock, true);
	unlock_common("range_read_unlock", tree, lock, true);
}

void range_write_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	file_release(tree, lock, false);
	unlock_common("range_write_unlock", tree, lock, false);
}

void range_downgrade_write(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock *n;

	check_args("range_downgrade_write", tree, lock);
	if (file_of(tree)) /* the OFD lock converts first (never waits) */
		rl_file_downgrade(file_of(tree), lock->start, lock->last);
	wl.n = 0;
	tree_lock(tree);
	check_held("range_downgrade_write", tree, lock, false);
	lock->rb_parent_flags |= RL_READER;
	tree->nr_writers--;
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
	revoke_fast_readers(tree); /* fast readers are requests too */
	busy = tree->root != NULL;
	if (!busy) {
		if (fifo)
			tree_flags_store(tree, tree->flags | RANGE_LOCK_TREE_FLAG_FIFO);
		else
			tree_flags_store(tree, tree->flags & ~RANGE_LOCK_TREE_FLAG_FIFO);
	}
	tree_unlock(tree);
	return busy ? -EBUSY : 0;
}

int range_lock_tree_set_fast_read(struct range_lock_tree *tree, int on)
{
	if (!tree)
		die("range_lock_tree_set_fast_read", NULL, "NULL tree");
	tree_lock(tree);
	revoke_fast_readers(tree);
	if (on)
		tree_flags_store(tree, tree->flags & ~RANGE_LOCK_TREE_FLAG_NO_FAST_READ);
	else
		tree_flags_store(tree, tree->flags | RANGE_LOCK_TREE_FLAG_NO_FAST_READ);
	tree_unlock(tree);
	return 0;
}

int range_lock_tree_destroy(struct range_lock_tree *tree)
{
	struct range_lock_file *f = NULL;
	int busy;

	if (!tree)
		die("range_lock_tree_destroy", NULL, "NULL tree");
	tree_lock(tree);
	revoke_fast_readers(tree); /* a fast reader makes the tree busy */
	busy = tree->root != NULL;
	if (!busy) { /* a bound tree is unbound: its description closed */
		f = tree->file;
		__atomic_store_n(&tree->file, NULL, __ATOMIC_RELAXED);
	}
	tree_lock_release(tree_lock_word(tree), busy);
	if (f)
		rl_file_free(f);
	return busy ? -EBUSY : 0;
}

int range_lock_tree_set_file(struct range_lock_tree *tree, int fd)
{
	struct range_lock_file *f, *old = NULL;
	int r;

	if (!tree)
		die("range_lock_tree_set_file", NULL, "NULL tree");
	r = rl_file_open(&f, fd); /* system calls: outside tree_lock */
	if (r)
		return r;
	tree_lock(tree);
	revoke_fast_readers(tree); /* and bound trees never read fast */
	if (tree->root) {
		tree_unlock(tree);
		rl_file_free(f);
		return -EBUSY;
	}
	old = tree->file;
	__atomic_store_n(&tree->file, f, __ATOMIC_RELAXED);
	tree_unlock(tree);
	if (old)
		rl_file_free(old);
	return 0;
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
					 memory_order_relaxed) != 0)
			waiting++;
		else
			held++;
	}
	__atomic_store_n(&st->held_now, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_now, waiting, __ATOMIC_RELAXED);
	__atomic_store_n(&st->held_peak, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_peak, waiting, __ATOMIC_RELAXED);
}

/* The counters as an array; 8-aligned (as the struct is) so that i386 does
 * its atomic 64-bit accesses inline rather than through libatomic. */
typedef uint64_t stat_word_t __attribute__((aligned(8)));

static void stats_zero(struct range_lock_stats *st)
{
	stat_word_t *f = (stat_word_t *)st;

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
		/* Statistics count in the tree: no fast reads from now on. */
		revoke_fast_readers(tree);
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
	const stat_word_t *f;
	uint64_t *o = (uint64_t *)out;

	if (!tree || !out)
		return -EINVAL;
	tree_lock(tree);
	if (!tree->stats) {
		tree_unlock(tree);
		memset(out, 0, sizeof(*out));
		return -ENODATA;
	}
	f = (const stat_word_t *)tree->stats;
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
	char who[24];
	int oldstate;

	if (!tree || !out)
		die("range_lock_tree_dump", NULL, "NULL tree or stream");
	/* fprintf() is a cancellation point: never be cancelled holding
	 * tree_lock. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	tree_lock(tree);
	revoke_fast_readers(tree); /* fast readers are shown as the held readers they are */
	fprintf(out, "range_lock_tree %p: %u request(s), next seqnum %llu\n",
		(void *)tree, tree->nr_requests, (unsigned long long)tree->seqnum);
	for (n = tree->leftmost; n; n = itree_next_inorder(n)) {
		word = atomic_load_explicit(wait_word((struct range_lock *)n),
					    memory_order_relaxed);
		/* A reader taken from its slot knows its slot, not its thread. */
		if (n->owner_tid & RL_SLOT_TAG)
			snprintf(who, sizeof(who), "slot=%u", n->owner_tid & ~RL_SLOT_TAG);
		else
			snprintf(who, sizeof(who), "tid=%u", n->owner_tid);
		fprintf(out, "  [%llu, %llu] %s %s seq=%llu blocking=%u %s%s\n",
			(unsigned long long)n->start, (unsigned long long)n->last,
			is_reader(n) ? "read " : "write",
			word == 0 ? "held    " : word == ELIGIBLE ? "eligible" : "waiting ",
			(unsigned long long)n->seqnum, blockers_of(word), who,
			(word & HANDOFF) ? " handoff" : "");
	}
	tree_unlock(tree);
	pthread_setcancelstate(oldstate, NULL);
}
