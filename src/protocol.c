/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the range reader/writer lock -- the protocol core.
 *
 * This file: the DESIGN below, the tree operations under tree_lock (the
 * entry scan, overtaking, insert and remove, the release walk put_blocker()),
 * the reader fast path's tree side (revocation, biasing) and downgrade.
 * The other files of the lock, each with one job:
 *   protocol.h    the shared internals: the wait word, tree_lock()/
 *                 tree_unlock(), the wake list, check_held(), accessors
 *   calls.h       the paths every public call shares, inlined into each:
 *                 enter(), insert_scanned(), unlock_common()
 *   calls.c       the public calls on one range: lock_common(),
 *                 trylock_common(), unlock, the two-level glue of bound trees
 *   sets.c        several ranges in one arrival (range_lock_many())
 *   grow.c        changing a held range: shrink and grow
 *   waiting.c     waiting for a grant: the wait loop, spinning, sleeping,
 *                 claims, the give-up path and cancellation (waiting.h)
 *   async.c       asynchronous requests: the completion queue, withdrawal,
 *                 submission
 *   segments.c    segmented trees: a tree split into segments (each a tree
 *                 of its own), configuration, shrink, downgrade;
 *                 seg_span.c the calls' dispatch and spanning requests,
 *                 seg_sets.c sets across segments, seg_async.c
 *                 asynchronous spans, seg_grow.c grow across segments
 *   defer.c       readers first: writers defer to the tree's sleeping readers
 *   tree_admin.c  init, destroy, set_fifo, defer_writers, set_fast_read,
 *                 set_file, versions
 *   stats.c       statistics and the dump (stats.h)
 *   thread_id.c   the thread-id cache (thread_id.h)
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
 * model-checked in tests/model/).  Exactly: "Q.seqnum < R.seqnum" is
 * precedes(Q, R) (protocol.h), which is that order between ordinary
 * requests and says how GROWTHS fit in (below).  A held request has blocking 0, so two
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
 *    and holds its range at once (rl_overtake()).  Seqnum ties are then
 *    possible, but only between requests that do not both intersect and
 *    conflict, where the order means nothing.  A waiter that has waited
 *    RL_HANDOFF_NS marks itself HANDOFF; nothing overtakes a marked waiter,
 *    so its count only falls: overtaking is bounded.  A release grants a
 *    waiter whose count reaches 0 only if it is spinning (running) or
 *    marked; a sleeping one is made ELIGIBLE and woken, and claims its range
 *    under tree_lock unless a running thread overtook it meanwhile.
 * trylock succeeds exactly when a lock call would hold at once.
 *
 * SEVERAL RANGES, GROWING AND SHRINKING
 * =====================================
 *  - A set (range_lock_many()) enters in one critical section, every
 *    member scanned before any is inserted, all at ONE seqnum: equal
 *    seqnums never precede each other, so siblings never count each other
 *    (they may overlap in any modes).  It overtakes only as a whole (every
 *    member could), else all of it takes the next seqnum.  A set partly
 *    held waits only for requests before its one seqnum: no cycle among
 *    set calls (docs/design.md has the argument; tests/model/multirange.pml
 *    checks it).
 *  - Shrink keeps the seqnum; the requests that counted the request and no
 *    longer intersect it lose that blocker (rl_shrink_request()).
 *  - Grow inserts the added parts (at most two, disjoint from the owner's
 *    range) as GROWTHS: internal requests with the owner's mode and
 *    seqnum, tagged in owner_tid.  precedes(): a growth counts every holder
 *    and every request not later than its owner; every later waiter counts
 *    it (rl_grow_enter() adds that blocker, as an overtaker does).  No pair
 *    changes its answer while both are in the tree: a request that counts
 *    another cannot be granted while that one is there, and a holder stays
 *    held until it leaves.  When all growths are granted, rl_grow_merge()
 *    takes them out and gives the owner the whole range, taking off the
 *    blockers counted twice (owner and growth); a give-up removes them
 *    through rl_remove_request() like any waiter.
 *  - Release walks (unlock, give-up, downgrade, shrink) put a blocker on
 *    each request R that counted the leaver: precedes(leaver, R).
 *  - Seqnums compare as signed differences (seq_before()): overtaking's
 *    "smallest - 1" may wrap below 0.
 *
 * ASYNCHRONOUS REQUESTS (async.c has their design)
 * =====================
 * A queued asynchronous request is a waiter that no thread waits for:
 * HANDOFF-marked at entry in the default policy (never overtaken, granted
 * by put_blocker() at count 0, never ELIGIBLE), tagged RL_ASYNC_TAG; its
 * grant appends it to the releasing thread's completion queue, which
 * wake_list_flush() runs once tree_lock is dropped.
 *
 * THE READER FAST PATH (fast_read.h has the protocol)
 * ===================================================
 * While no writer is in a tree, the tree may be BIASED (a flag bit): a
 * reader then publishes its request in its thread's slot of a process-wide
 * table and holds its range without the tree or tree_lock.  Every writer
 * entry, and every call that must see all holders, first REVOKES under
 * tree_lock (rl_revoke_fast_readers()): it clears BIASED and moves each
 * published reader of the tree into the tree as a held reader
 * (materialise()), after winning that slot's CAS.  From then on the tree is
 * the usual one: the invariant above covers materialised readers like any
 * others (they take the next seqnum; with no writer in the tree nobody
 * counts them).  rl_maybe_bias() sets BIASED again in the read slow path after
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
 *                                            reset to 0 by that read's unlock;
 *                                            RL_GROWTH_TAG for a growth (by
 *                                            the grower, under tree_lock);
 *                                            | RL_ASYNC_TAG for a queued
 *                                            asynchronous request (set by
 *                                            the submitter, cleared by the
 *                                            granter, both under tree_lock);
 *                                            RL_PART_FIRST or RL_PART_TAG
 *                                            for a part of a request that
 *                                            spans segments (its owner,
 *                                            before entry; a shrink that
 *                                            moves a held part retags it
 *                                            under tree_lock; segments.c),
 *                                            | RL_ASYNC_TAG while a part of
 *                                            an asynchronous one is queued.
 *   node->start, last of a held request:    by its user only, under tree_lock
 *                                            (shrink, grow: the node is
 *                                            re-keyed in the tree).
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
 * In waiting.c, with its comment: a waiting request that stops waiting
 * leaves the tree through rl_remove_request() below, the same code as unlock.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "fast_read.h"
#include "file_lock.h"
#include "interval_tree.h"
#include "protocol.h"
#include "segments.h"
#include "stats.h"
#include "tree_lock.h"

/* Reads through tree_lock, with no writer in the tree, before fast reads
 * are allowed again, besides one per slot ever used (bias_delay()): the
 * next revocation scans those.  0 measured best on 2 CPUs in every
 * scenario (1 write per 100 reads: 1.41x pthread_rwlock against 1.00 with
 * 16 and 0.64 with 64; docs/benchmarks.md); the per-slot part keeps a
 * revocation's scan amortised over as many reads on big machines. */
#ifndef RL_BIAS_DELAY
#define RL_BIAS_DELAY 0
#endif

_Static_assert(sizeof(struct range_lock) <= 64, "struct range_lock grew");
_Static_assert(sizeof(struct range_lock_tree) <= 64, "struct range_lock_tree grew");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t) &&
	       _Alignof(_Atomic uint32_t) == _Alignof(uint32_t) &&
	       sizeof(tree_word_t) == sizeof(uintptr_t) &&
	       _Alignof(tree_word_t) == _Alignof(uintptr_t),
	       "atomic word layout");
_Static_assert(_Alignof(struct range_lock) >= 8, "fast values need 3 free bits");

/* ---- misuse ---------------------------------------------------------- */

void rl_die(const char *call, const struct range_lock *lock, const char *why)
{
	if (lock && lock->start > lock->last)
		fprintf(stderr, "librangelock: %s([%llu, %llu]): range [%llu, %llu] is "
			"invalid: start > last (range_lock_init() or "
			"range_lock_async_init() returned -EINVAL)\n", call,
			(unsigned long long)lock->start, (unsigned long long)lock->last,
			(unsigned long long)lock->start, (unsigned long long)lock->last);
	else if (lock)
		fprintf(stderr, "librangelock: %s([%llu, %llu]): %s\n", call,
			(unsigned long long)lock->start,
			(unsigned long long)lock->last, why);
	else
		fprintf(stderr, "librangelock: %s: %s\n", call, why);
	fflush(stderr);
	abort();
}

/* ---- statistics: a grant (stats.h has the counters, stats.c the rest) -- */

/* A waiter's grant: a growth only stops waiting (its grow counts one
 * acquisition when it merges; its owner was counted as held already); a
 * part of a spanning request counts nothing. */
void rl_stat_granted_or_grown(struct range_lock_stats *st, const struct range_lock *lock)
{
	if (is_part(lock)) /* its spanning request counts for itself */
		return;
	if (is_growth(lock))
		STAT_ADD(st, waiting_now, -1);
	else
		rl_stat_granted(st, is_reader(lock), true);
}

void rl_stat_granted(struct range_lock_stats *st, bool reader, bool waited)
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
		rl_stat_granted_or_grown(tree->stats, waiter);
	if (old & SLEEPING)
		wake_list_add(wl, word);
	else if (__builtin_expect(is_async(waiter), 0))
		async_granted(waiter); /* no thread waits: queue its completion */
}

static inline bool intersects_any(const struct range_lock_tree *tree,
				  const struct range_lock *lock)
{
	/* O(1): nothing in the tree starts by @last or ends at/after @start. */
	return tree->root && lock->start <= tree->root->subtree_last &&
	       tree->leftmost->start <= lock->last;
}

/*
 * Count the requests in the tree that @lock (of mode @reader) conflicts
 * with.  For the default policy, also find whether it may overtake them all
 * (POLICY rule 2: none of them held or marked); with @stop_at_first (a FIFO
 * trylock), just say whether there is one.
 */
void rl_scan_entry(struct range_lock_tree *tree, const struct range_lock *lock,
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
		if (scan->blockers == 1 || seq_before(n->seqnum, scan->first_seq))
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
uint64_t rl_overtake(struct range_lock_tree *tree, const struct range_lock *lock,
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
	/* May wrap below 0: seqnums compare as signed differences. */
	return scan->first_seq - 1;
}

/* The caller has set lock->owner_tid.  @seqnum: tree->seqnum++ for an
 * arrival, the rl_overtake() position for an overtaker. */
void rl_insert_request(struct range_lock_tree *tree, struct range_lock *lock,
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
	rl_itree_insert(&tree->root, lock);
}

/* Take @lock out of the tree and release the requests that counted it:
 * the same conflict rule as rl_scan_entry(), and precedes() (for ordinary
 * requests a higher seqnum: an overtaker has a lower seqnum than the
 * waiters it passed), so exactly those. */
void rl_remove_request(struct range_lock_tree *tree, struct range_lock *lock,
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
		tree->leftmost = rl_itree_next_inorder(lock);
	rl_itree_erase(&tree->root, lock);
	if (!tree->nr_waiting)
		return; /* nobody counted us: no walk (all held, e.g.) */

	if (!intersects_any(tree, lock))
		return;
	itree_foreach(n, tree->root, lock->start, lock->last) {
		if (conflict(reader, is_reader(n)) && precedes(lock, n))
			put_blocker(tree, n, wl);
	}
}

/* ---- several requests, shrink and grow (range_lock_many(), ..._grow()) - */

/*
 * Several requests enter as ONE arrival, in one critical section: every
 * member is scanned before any is inserted (so siblings never count each
 * other), then all take the same seqnum, and equal seqnums never precede
 * each other.  Default policy: the set overtakes only as a whole -- when no
 * member finds a held or marked conflict -- and is then held at once; else
 * every member takes the next seqnum and counts every conflict.  A set
 * partly held thus has all its members at one seqnum, behind every request
 * they wait for: no cycle can form among such calls (docs/design.md).
 * Returns true when every member is held; @try: insert only then.  @mark:
 * members that wait are HANDOFF-marked (interruptible calls).
 */
bool rl_enter_many(struct range_lock_tree *tree, const struct range_lock_item *items,
		   unsigned n, bool try, bool mark)
{
	struct entry_scan scan;
	bool must_wait = false, any = false;
	uint64_t first = 0, seq;

	/* The scan's counts wait in the members' own words until they are
	 * inserted: nobody else can see a request that is in no tree. */
	for (unsigned i = 0; i < n; i++) {
		struct range_lock *lock = items[i].lock;

		/* The caller checked that no member is in a tree: one that
		 * looks linked now is the same request twice in the set.  The
		 * mark is cleared by a try that fails, or reset on insertion. */
		if (is_linked(lock)) {
			tree_unlock(tree);
			rl_die("range_lock_many", lock, "request appears twice in the set");
		}
		lock->rb_parent_flags |= RL_LINKED;
		rl_scan_entry(tree, lock, items[i].mode == RANGE_LOCK_READ, false, &scan);
		atomic_store_explicit(wait_word(lock), scan.blockers, memory_order_relaxed);
		must_wait |= scan.must_wait;
		if (scan.blockers && (!any || seq_before(scan.first_seq, first))) {
			first = scan.first_seq;
			any = true;
		}
	}
	if (any && must_wait && try) {
		for (unsigned i = 0; i < n; i++)
			items[i].lock->rb_parent_flags &= ~(uintptr_t)RL_LINKED;
		return false;
	}
	if (any && !must_wait) {
		/* Overtake as a whole: each member passes its waiters (a waiter
		 * under two members counts both), all before any insertion. */
		for (unsigned i = 0; i < n; i++) {
			struct range_lock *lock = items[i].lock;
			bool reader = items[i].mode == RANGE_LOCK_READ;

			if (atomic_load_explicit(wait_word(lock), memory_order_relaxed)) {
				scan.first_seq = first;
				rl_overtake(tree, lock, reader, &scan);
				atomic_store_explicit(wait_word(lock), 0, memory_order_relaxed);
			}
		}
		seq = first - 1;
	} else {
		seq = tree->seqnum++;
	}
	for (unsigned i = 0; i < n; i++) {
		struct range_lock *lock = items[i].lock;
		uint32_t blockers = atomic_load_explicit(wait_word(lock), memory_order_relaxed);

		rl_insert_request(tree, lock, items[i].mode == RANGE_LOCK_READ, blockers, seq);
		if (blockers && mark && !tree_is_fifo(tree))
			atomic_fetch_or_explicit(wait_word(lock), HANDOFF, memory_order_relaxed);
	}
	return !(any && must_wait);
}

/* Under tree_lock: @lock (out of the tree, its range and its mode flag
 * set) goes back in. */
static void relink(struct range_lock_tree *tree, struct range_lock *lock)
{
	uint64_t start = lock->start, last = lock->last;

	if (!tree->root) {
		lock->rb_left = lock->rb_right = NULL;
		lock->subtree_last = last;
		lock->rb_parent_flags |= RB_BLACK | RL_LINKED;
		tree->root = tree->leftmost = lock;
		return;
	}
	if (start < tree->leftmost->start)
		tree->leftmost = lock;
	rl_itree_insert(&tree->root, lock);
}

/* Move @lock, in the tree, to [start, last]: the interval tree is keyed by
 * start, so the node is taken out and put back (no counts change here). */
static void rekey(struct range_lock_tree *tree, struct range_lock *lock,
		  uint64_t start, uint64_t last)
{
	uintptr_t reader = lock->rb_parent_flags & RL_READER;

	if (tree->leftmost == lock)
		tree->leftmost = rl_itree_next_inorder(lock);
	rl_itree_erase(&tree->root, lock);
	lock->start = start;
	lock->last = last;
	lock->rb_parent_flags = reader;
	relink(tree, lock);
}

/*
 * A HELD request moves to another struct (a segmented tree's shrink,
 * segments.c): @to takes @from's range, mode and seqnum -- its place in
 * the order -- and @from leaves the tree.  No count changes: the requests
 * that counted @from count @to (counts are numbers, not pointers), and a
 * held request counts nothing.  The caller sets @to->owner_tid.
 */
void rl_move_request(struct range_lock_tree *tree, struct range_lock *from,
		     struct range_lock *to)
{
	if (tree->leftmost == from)
		tree->leftmost = rl_itree_next_inorder(from);
	rl_itree_erase(&tree->root, from);
	to->start = from->start;
	to->last = from->last;
	to->seqnum = from->seqnum;
	atomic_store_explicit(wait_word(to), 0, memory_order_relaxed);
	to->rb_parent_flags = from->rb_parent_flags & RL_READER;
	from->rb_parent_flags = 0;
	relink(tree, to);
}

static inline bool meets(const struct range_lock *n, uint64_t start, uint64_t last)
{
	return n->start <= last && n->last >= start;
}

/* Release the requests in [from, to] that counted @lock and no longer
 * intersect it (it now covers [keep_start, keep_last] only). */
static void put_dropped(struct range_lock_tree *tree, struct range_lock *lock,
			uint64_t from, uint64_t to, struct wake_list *wl)
{
	bool reader = is_reader(lock);
	struct range_lock *n;

	itree_foreach(n, tree->root, from, to) {
		if (n != lock && !meets(n, lock->start, lock->last) &&
		    conflict(reader, is_reader(n)) && precedes(lock, n))
			put_blocker(tree, n, wl);
	}
}

/*
 * A held request keeps [start, last] of its range and gives up the rest:
 * never waits; exactly the requests that counted it and do not intersect
 * what it keeps lose that blocker (and may be granted).  Its seqnum stays.
 */
void rl_shrink_request(struct range_lock_tree *tree, struct range_lock *lock,
		       uint64_t start, uint64_t last, struct wake_list *wl)
{
	uint64_t a = lock->start, b = lock->last;

	if (a == start && b == last)
		return;
	rekey(tree, lock, start, last);
	if (!tree->nr_waiting)
		return;
	if (a < start)
		put_dropped(tree, lock, a, start - 1, wl);
	if (last < b)
		put_dropped(tree, lock, last + 1, b, wl);
}

/*
 * GROWING a held request L to [g->start, g->last]: its added parts (one on
 * each side at most) enter as GROWTHS, internal requests with L's mode and
 * seqnum, which precedes() orders: a growth counts every holder and every
 * request not later than L; every later waiter counts it (one blocker
 * more; an ELIGIBLE one is counted in nr_waiting again).  L keeps what it
 * held all the while.  When every growth is granted, rl_grow_merge() gives L
 * the whole range.  A give-up removes the growths like any waiter
 * (rl_remove_request()), which leaves L exactly as before.
 */
bool rl_grow_enter(struct range_lock_tree *tree, struct growth *g, bool try, bool mark,
		   struct wake_list *wl)
{
	struct range_lock *owner = g->owner, *n;
	bool reader = is_reader(owner);
	uint32_t blockers[2] = { 0, 0 };
	unsigned total = 0;

	g->n = 0;
	if (g->start < owner->start) {
		g->part[g->n].start = g->start;
		g->part[g->n++].last = owner->start - 1;
	}
	if (g->last > owner->last) {
		g->part[g->n].start = owner->last + 1;
		g->part[g->n++].last = g->last;
	}
	for (unsigned i = 0; i < g->n; i++) {
		struct range_lock *p = &g->part[i];

		p->owner_tid = RL_GROWTH_TAG;
		p->seqnum = owner->seqnum;
		p->rb_parent_flags = reader ? RL_READER : 0;
		/* Not held while it is scanned (precedes() reads the word). */
		atomic_store_explicit(wait_word(p), ONE_BLOCKER, memory_order_relaxed);
		itree_foreach(n, tree->root, p->start, p->last) {
			if (conflict(reader, is_reader(n)) && precedes(n, p))
				blockers[i]++;
		}
		total += blockers[i];
	}
	if (try && total)
		return false;
	for (unsigned i = 0; i < g->n; i++) {
		struct range_lock *p = &g->part[i];

		itree_foreach(n, tree->root, p->start, p->last) {
			if (!conflict(reader, is_reader(n)) || precedes(n, p))
				continue;
			rl_race_ok(wait_word(n), sizeof(uint32_t)); /* annotate.h, edge 8 */
			if (atomic_fetch_add_explicit(wait_word(n), ONE_BLOCKER,
						      memory_order_relaxed) == ELIGIBLE)
				tree->nr_waiting++;
		}
	}
	for (unsigned i = 0; i < g->n; i++) {
		rl_insert_request(tree, &g->part[i], reader, blockers[i], owner->seqnum);
		if (blockers[i] && mark && !tree_is_fifo(tree))
			atomic_fetch_or_explicit(wait_word(&g->part[i]), HANDOFF,
						 memory_order_relaxed);
	}
	if (!total)
		rl_grow_merge(tree, g, wl);
	return true;
}

/*
 * Every growth is granted: the owner takes the whole range, at its own
 * seqnum.  A request that counted the owner and a growth, or two growths,
 * now counts the owner once: it loses the rest (it keeps one, so it is
 * never granted here).  One that counted a growth alone counts the owner
 * instead: no change.
 */
void rl_grow_merge(struct range_lock_tree *tree, struct growth *g, struct wake_list *wl)
{
	struct range_lock *owner = g->owner, *n;
	bool reader = is_reader(owner);

	for (unsigned i = 0; i < g->n; i++) {
		struct range_lock *p = &g->part[i];

		tree->nr_requests--;
		tree->nr_writers -= !reader;
		if (tree->leftmost == p)
			tree->leftmost = rl_itree_next_inorder(p);
		rl_itree_erase(&tree->root, p);
	}
	if (tree->nr_waiting) {
		itree_foreach(n, tree->root, g->start, g->last) {
			unsigned before = 0, after;

			if (n == owner || !conflict(reader, is_reader(n)))
				continue;
			before = meets(n, owner->start, owner->last) && precedes(owner, n);
			for (unsigned i = 0; i < g->n; i++)
				before += meets(n, g->part[i].start, g->part[i].last) &&
					  precedes(&g->part[i], n);
			after = precedes(owner, n);
			if (before < after)
				rl_die("range_lock_grow", owner, "internal error: a merge "
				       "found a request that counted nothing");
			while (before-- > after)
				put_blocker(tree, n, wl);
		}
	}
	for (unsigned i = 0; i < g->n; i++)
		g->part[i].rb_parent_flags = 0;
	rekey(tree, owner, g->start, g->last);
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
	rl_insert_request(tree, lock, true, 0, tree->seqnum++);
}

/*
 * Under tree_lock, before anything that must see every holder (a writer's
 * entry, statistics, the dump, destroy, the setters): stop fast reads and
 * move the published fast readers into the tree (the revoker's side of the
 * handshake: clear BIASED, full fence, scan).  Also restarts the delay.
 */
void rl_revoke_fast_readers(struct range_lock_tree *tree)
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
 * request; a bound tree's segments: RL_TREE_NO_BIAS), in the checking mode
 * (it checks every request in the tree) or when the user turned it off.
 */
void rl_maybe_bias(struct range_lock_tree *tree)
{
	uint32_t f = tree_flags(tree);

	/* Never a closing segment (the gate, seg_gate.c), nor a bound tree;
	 * a tree with segments running as a plain tree reads fast as any. */
	if ((f & (RL_TREE_BIASED | RANGE_LOCK_TREE_FLAG_NO_FAST_READ | RL_TREE_NO_BIAS |
		  RL_TREE_CLOSING)) ||
	    tree->nr_writers || tree->stats ||
	    (tree->file && !is_unbound_segments(tree->file)) || !fast_path_allowed(tree))
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

/* The segment layer's hooks (protocol.h); NULL until a tree gets segments. */
const struct rl_part_ops *rl_part_ops;

/* range_downgrade_write() on a tree without segments (calls.c dispatches;
 * the segment layer calls it on a segment's tree). */
void rl_downgrade_write(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock *n;

	/* A read held fast is in no tree (its slot holds it): name the misuse,
	 * as check_held() does for a read held in the tree, rather than "not
	 * in this tree".  The tag is the request's own, never written by a
	 * revoker (fast_read.h). */
	if (lock->owner_tid & RL_SLOT_TAG)
		rl_die("range_downgrade_write", lock, "range is held for reading, not writing");
	if (rl_bound_file(file_of(tree))) /* the OFD lock converts first (never waits) */
		rl_file_downgrade(rl_bound_file(file_of(tree)), lock->start, lock->last);
	wl.n = 0;
	tree_lock(tree);
	check_held("range_downgrade_write", tree, lock, false);
	lock->rb_parent_flags |= RL_READER;
	tree->nr_writers--;
	/* Later readers counted us as a writer; as a reader we no longer
	 * conflict with them.  Later writers still wait for us. */
	if (tree->nr_waiting) {
		itree_foreach(n, tree->root, lock->start, lock->last) {
			if (is_reader(n) && precedes(lock, n))
				put_blocker(tree, n, &wl);
		}
	}
	tree_unlock(tree);
	wake_list_flush(&wl);
}
