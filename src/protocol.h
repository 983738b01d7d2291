/* SPDX-License-Identifier: MIT */
/*
 * The lock's shared internals (protocol.c has the DESIGN comment): the
 * request's wait word, the accessors every file of the lock uses,
 * tree_lock()/tree_unlock(), the wake list, and the protocol core's
 * functions that the public calls (calls.c), the waiting code (waiting.c),
 * tree administration (tree_admin.c) and statistics (stats.c) call.
 * checks.c reads the wait word's encoding from here too.
 */
#ifndef RANGELOCK_PROTOCOL_H
#define RANGELOCK_PROTOCOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "checks.h"
#include "fast_read.h"
#include "interval_tree.h"
#include "stats.h"
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
 * At most this many requests in one tree at once.  A waiter's wait word
 * counts its blockers in 30 bits (blockers * ONE_BLOCKER, and overtakers
 * add ONE_BLOCKER each), and a waiter never has more blockers than the
 * tree has other requests; a count that wrapped would make a waiter held
 * at once.  So every lock call that takes tree_lock refuses, aborting, a
 * request past this limit (enter(), calls.h).  Requests enter without that
 * check in two ways, both bounded: fast reads materialised by a revoker
 * (one per slot of the table, RL_SLOTS in all) and the lock word's
 * displaced fast holder (one): hence the headroom.  2^30 requests are
 * 64 GiB of struct range_lock on 64-bit targets (more than a 32-bit
 * address space holds); a test variant sets a small limit.
 */
#ifndef RL_MAX_TREE_REQUESTS
#define RL_MAX_TREE_REQUESTS ((1u << 30) - 2 * RL_SLOTS)
#endif
_Static_assert(RL_MAX_TREE_REQUESTS + RL_SLOTS + 1 <= (1u << 30),
	       "the wait word's blocker count could wrap");

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

/*
 * A request whose init failed (start > last, range_lock_init()): it keeps
 * the range as given and this look, so that the is_linked() check every
 * call taking a request makes anyway ("already in a tree") refuses it, at
 * no cost; rl_die() then names the bad range instead (no request in a tree
 * or held has start > last).  RB_BLACK, with no parent, keeps it from
 * looking fast held (exactly RL_LINKED, or RL_READER | RL_LINKED): an
 * unlock of it must not release or hand over the lock word
 * (rl_word_release_waited()); and in_tree() finds it in no tree (it is no
 * tree's root).
 */
#define RL_BAD_INIT (RL_LINKED | RB_BLACK)

static inline bool conflict(bool reader_a, bool reader_b)
{
	return !(reader_a && reader_b);
}

/* Seqnums are compared as a signed difference: an overtaker's "smallest
 * seqnum - 1" may wrap below 0 (the first request of a tree has 0). */
static inline bool seq_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/*
 * A GROWTH: the part a held request adds to its range while it grows
 * (range_lock_grow(), rl_grow_enter() in protocol.c).  An internal request on
 * the growing caller's stack, in the tree only during that call, marked by
 * this tag in owner_tid (thread ids are below 2^29: thread_id.h).
 */
#define RL_GROWTH_TAG 0x40000000u

static inline bool is_growth(const struct range_lock *lock)
{
	return lock->owner_tid == RL_GROWTH_TAG;
}

/*
 * An ASYNCHRONOUS request (range_read_lock_async(), async.c) queued in the
 * tree: no thread waits for it; the release that grants it queues its
 * completion (put_blocker()), which runs when that release has dropped
 * tree_lock (wake_list_flush()).  Marked by this tag in owner_tid: set by
 * the submitter before it publishes the request, cleared by the granter
 * (async_granted(), under tree_lock): only queued requests carry it.
 */
#define RL_ASYNC_TAG 0x20000000u

static inline bool is_async(const struct range_lock *lock)
{
	return (lock->owner_tid & RL_ASYNC_TAG) != 0; /* (slot tags and RL_GROWTH_TAG lack the bit) */
}

/*
 * A PART of a request that spans segments (seg_span.c): an internal request
 * in one segment's tree.  Its owner_tid is one of these two values (bit 30
 * and a low bit: no thread id, growth, slot or asynchronous tag is either).
 * Parts are silent in the statistics: the spanning request counts once, in
 * its first part's segment, under that segment's lock (seg_span.c), and
 * the first part stands for it in a recount (stats.c).
 */
#define RL_PART_TAG   (RL_GROWTH_TAG | 2u) /* a part other than the first */
#define RL_PART_FIRST (RL_GROWTH_TAG | 3u) /* the first (lowest segment's) */

static inline bool is_part(const struct range_lock *lock)
{
	/* (a queued part of an asynchronous spanning request has
	 * RL_ASYNC_TAG too: seg_async.c) */
	return ((lock->owner_tid & ~RL_ASYNC_TAG) | 1u) == RL_PART_FIRST;
}

/*
 * The plain tree's two upward calls, for a spanning request's FIRST part
 * only (the code tests RL_PART_FIRST before it calls them, so a tree
 * without parts never does): hooks the segment layer installs
 * (seg_span.c's rl_span_part_ops, stored by range_lock_tree_set_segments()
 * before any part can exist, with a relaxed store: whoever meets a part
 * is ordered after the set_segments() of its tree).  Both under the
 * part's segment lock.
 *   counted: what the spanning request counted itself as in the
 *       statistics (SPAN_*), for a recount (stats.c).
 *   withdrawn: the waiting code withdrew the part (a give-up, waiting.c;
 *       @why: -EINTR, -ETIMEDOUT, or -ECANCELED for a cancellation).
 */
enum { SPAN_OUT, SPAN_WAITING, SPAN_HELD };
struct rl_part_ops {
	int (*counted)(const struct range_lock *first);
	void (*withdrawn)(struct range_lock_tree *t0, struct range_lock *first, int why);
};
RL_HIDDEN extern const struct rl_part_ops *rl_part_ops;

static inline const struct rl_part_ops *part_ops(void)
{
	return __atomic_load_n(&rl_part_ops, __ATOMIC_RELAXED);
}


/* The calling thread's completions to run (async.c): appended under
 * tree_lock by the releases this thread makes, run by wake_list_flush()
 * once tree_lock is dropped; @running: a completion runs now (the queue is
 * run from the outermost call only). */
struct rl_async_queue {
	struct range_lock_async *head, *tail;
	bool running;
};
RL_HIDDEN extern _Thread_local struct rl_async_queue rl_async_queue
	__attribute__((tls_model("initial-exec")));
/* Run the queued completions, in grant order (unless one runs already). */
RL_HIDDEN void rl_async_run(void);

/*
 * A call that releases several requests one tree lock at a time (a set's
 * unlock on a tree with segments, or with a member held fast) holds this
 * thread's completions back until every member is released, as one hold
 * of the tree lock does: rl_async_hold() before the first release (false
 * if a completion runs already: the queue runs after it anyway), then
 * rl_async_release() with what it returned.
 */
static inline bool rl_async_hold(void)
{
	if (rl_async_queue.running)
		return false;
	rl_async_queue.running = true;
	return true;
}

static inline void rl_async_release(bool held)
{
	if (!held)
		return;
	rl_async_queue.running = false;
	if (rl_async_queue.head)
		rl_async_run();
}

/* A lock call is about to make its thread wait: abort if a completion is
 * running on it (async.c says why). */
RL_HIDDEN void rl_async_check_may_wait(const char *call, const struct range_lock *lock);

/* Under tree_lock: @lock, asynchronous, has just been granted. */
static inline void async_granted(struct range_lock *lock)
{
	struct range_lock_async *req = (struct range_lock_async *)lock; /* first member */
	struct rl_async_queue *q = &rl_async_queue;

	lock->owner_tid &= ~RL_ASYNC_TAG; /* held now: an ordinary request */
	req->next_ = NULL;
	if (q->tail)
		q->tail->next_ = req;
	else
		q->head = req;
	q->tail = req;
}

/* Under tree_lock: held (granted; for a growth: granted, not yet merged). */
static inline bool held_now(const struct range_lock *lock)
{
	return atomic_load_explicit((_Atomic uint32_t *)&lock->wait_word,
				    memory_order_relaxed) == 0;
}

/*
 * PRECEDENCE: under tree_lock, for two requests @q and @r of the tree that
 * intersect and conflict: does @r count @q (the DESIGN comment's invariant)?
 * Between ordinary requests the seqnum order; equal seqnums (the requests
 * of one set, range_lock_many()) never count each other.  A growth waits
 * for every holder and every request that is not later than its owner, and
 * every later waiter waits for it (the added part takes the owner's place).
 * Stable: no pair changes its answer while both are in the tree.
 */
static inline bool precedes(const struct range_lock *q, const struct range_lock *r)
{
	bool qg = is_growth(q), rg = is_growth(r);

	if (__builtin_expect(!qg && !rg, 1))
		return seq_before(q->seqnum, r->seqnum);
	if (rg && !qg)
		return !seq_before(r->seqnum, q->seqnum) || held_now(q);
	if (qg && !rg)
		return seq_before(q->seqnum, r->seqnum) && !held_now(r);
	if (held_now(q))
		return true;
	if (held_now(r))
		return false;
	return seq_before(q->seqnum, r->seqnum) ||
	       (q->seqnum == r->seqnum && (uintptr_t)q < (uintptr_t)r);
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

/* The second level of a tree bound to a file (file_lock.c), or NULL: set
 * under tree_lock while the tree is empty, read with a relaxed load
 * (calls.c explains why that suffices). */
static inline struct range_lock_file *file_of(struct range_lock_tree *tree)
{
	return __atomic_load_n(&tree->file, __ATOMIC_RELAXED);
}

/* ---- misuse ---------------------------------------------------------- */

/* Print "librangelock: @call([start, last]): @why" and abort; for a
 * request whose init failed (start > last, RL_BAD_INIT), that instead. */
RL_HIDDEN __attribute__((noreturn)) void rl_die(const char *call,
						const struct range_lock *lock,
						const char *why);

static inline void check_args(const char *call, struct range_lock_tree *tree,
			      struct range_lock *lock)
{
	if (!tree || !lock)
		rl_die(call, NULL, "NULL tree or request");
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
	/* Grants of asynchronous requests: their completions, now that
	 * tree_lock is dropped (async.c). */
	if (__builtin_expect(rl_async_queue.head != NULL, 0))
		rl_async_run();
}

/* ---- tree operations, under tree_lock (protocol.c) -------------------- */

/* A request is granted (under tree_lock, statistics on): count the
 * acquisition and the hold. */
RL_HIDDEN void rl_stat_granted(struct range_lock_stats *st, bool reader, bool waited);
/* The same for a waiter granted (or claiming): a growth only stops waiting. */
RL_HIDDEN void rl_stat_granted_or_grown(struct range_lock_stats *st, const struct range_lock *lock);

/* What a request entering the tree finds on its range. */
struct entry_scan {
	uint32_t blockers;       /* intersecting conflicting requests */
	bool must_wait;          /* one of them is held, or HANDOFF-marked */
	uint64_t first_seq;      /* the smallest seqnum among them */
};

/* Count the requests @lock conflicts with, and whether it may overtake. */
RL_HIDDEN void rl_scan_entry(struct range_lock_tree *tree, const struct range_lock *lock,
			     bool reader, bool stop_at_first, struct entry_scan *scan);
/* Overtake them all (every one an unmarked waiter): returns @lock's seqnum. */
RL_HIDDEN uint64_t rl_overtake(struct range_lock_tree *tree, const struct range_lock *lock,
			       bool reader, const struct entry_scan *scan);
/* The caller has set lock->owner_tid.  @seqnum: tree->seqnum++ for an
 * arrival, the rl_overtake() position for an overtaker. */
RL_HIDDEN void rl_insert_request(struct range_lock_tree *tree, struct range_lock *lock,
				 bool reader, uint32_t blockers, uint64_t seqnum);
/* Take @lock out of the tree and release the later requests that counted it. */
RL_HIDDEN void rl_remove_request(struct range_lock_tree *tree, struct range_lock *lock,
				 struct wake_list *wl);
/* Several requests enter as one arrival (range_lock_many()): true when all
 * of them are held at once; @try: enter only then. */
RL_HIDDEN bool rl_enter_many(struct range_lock_tree *tree, const struct range_lock_item *items,
			     unsigned n, bool try, bool mark);
/* range_downgrade_write() on a tree without segments (protocol.c). */
RL_HIDDEN void rl_downgrade_write(struct range_lock_tree *tree, struct range_lock *lock);
/* A held request moves to another struct, keeping its place (segments.c,
 * seg_sets.c, seg_grow.c). */
RL_HIDDEN void rl_move_request(struct range_lock_tree *tree, struct range_lock *from,
			       struct range_lock *to);
/* A held request keeps only [start, last] of its range (a sub-range). */
RL_HIDDEN void rl_shrink_request(struct range_lock_tree *tree, struct range_lock *lock,
				 uint64_t start, uint64_t last, struct wake_list *wl);

/* A held request growing: its growths, the added parts (at most two). */
struct growth {
	struct range_lock part[2];
	unsigned n;
	struct range_lock *owner;
	uint64_t start, last;  /* the range asked for */
};
/* Insert the growths of @g->owner (false: @try and they would wait, nothing
 * changed).  When none has a blocker, the growth is merged at once. */
RL_HIDDEN bool rl_grow_enter(struct range_lock_tree *tree, struct growth *g, bool try,
			     bool mark, struct wake_list *wl);
/* Every growth granted: the owner takes the whole range. */
RL_HIDDEN void rl_grow_merge(struct range_lock_tree *tree, struct growth *g,
			     struct wake_list *wl);
/* Stop fast reads and move the published fast readers into the tree. */
RL_HIDDEN void rl_revoke_fast_readers(struct range_lock_tree *tree);
/* In the read slow path: allow fast reads again after the delay. */
RL_HIDDEN void rl_maybe_bias(struct range_lock_tree *tree);

/* ---- tree_lock: the internal lock of a tree (tree_lock.h) -------------- */

/*
 * What the entering paths (lock, trylock, asynchronous submission, sets)
 * return when the gate of a tree with segments refuses them the tree they
 * tried, the user's tree or a segment's (tree_lock_entering()): nothing
 * was entered; the caller goes back to the gate (rl_gate_lock() & co.).
 * Never returned on a tree without segments, nor by a public call.
 */
#define RL_GATE_REFUSED 0x4000

/* The gate (seg_gate.c): a closing segment that a release left empty
 * closes; the last one wakes the drainer.  Called for tree_unlock(). */
RL_HIDDEN void rl_gate_segment_drained(struct range_lock_tree *tree);

static inline void tree_unlock(struct range_lock_tree *tree)
{
	bool nonempty = true;

	rl_check_tree(tree);
	if (tree->root == NULL) {
		uint32_t f = tree_flags(tree);

		if (__builtin_expect(f & RL_TREE_CLOSING, 0)) {
			rl_gate_segment_drained(tree); /* releases the lock */
			return;
		}
		/* While fast reads are allowed the word is never 0, so that
		 * no lone writer takes the tree through the lock word past
		 * fast readers. */
		nonempty = f & RL_TREE_BIASED;
	}
	tree_lock_release(tree_lock_word(tree), nonempty);
}

/* tree_lock()'s second half: enter the fast holder @fast (0: none). */
static inline void tree_materialise(struct range_lock_tree *tree, uintptr_t fast)
{
	if (__builtin_expect(fast != 0, 0)) {
		struct range_lock *holder = (struct range_lock *)(fast & ~TL_FAST_BITS);
		bool reader = tl_fast_reader(fast);

		/* A hand-off request names the word waiter, which wrote the
		 * holder into its rb_left before it published the value; it
		 * cannot leave before we drop tree_lock (word_mode.c). */
		if (tl_is_handoff(fast))
			holder = holder->rb_left;

		rl_insert_request(tree, holder, reader, 0, tree->seqnum++);
		/* Statistics were off when it took the fast path, or it is
		 * materialising itself because they are on (enter()): count
		 * its hold now, as its unlock will go through the tree and be
		 * counted. */
		if (tree->stats)
			rl_stat_granted(tree->stats, reader, false);
	}
}

/*
 * Take tree_lock.  A request that held the empty tree through the fast path
 * (tree_lock.h) is displaced by that and enters the tree here, as the held
 * request it is: first in arrival order, since the tree was empty and nobody
 * could enter before it was displaced.
 */
static inline void tree_lock(struct range_lock_tree *tree)
{
	tree_materialise(tree, tree_lock_acquire(tree_lock_word(tree)));
}

/*
 * tree_lock() for a request that is about to enter @tree: false (the lock
 * not taken) if the gate of a tree with segments refuses it there -- the
 * user's tree while it runs in its segments, a closed or closing segment
 * while it runs as a plain tree (seg_gate.c) -- and the request must go
 * back to the gate.  Never false on a tree without segments.  A trylock
 * (TL_ACQ_TRY) is refused by a drain as well, instead of waiting for it.
 */
static inline bool tree_lock_entering_how(struct range_lock_tree *tree, enum tl_acquire how)
{
	uintptr_t fast = tree_lock_acquire_how(tree_lock_word(tree), how);

	if (__builtin_expect(fast == TL_REFUSED, 0))
		return false;
	tree_materialise(tree, fast);
	if (__builtin_expect(tree_flags(tree) & RL_TREE_CLOSING, 0)) {
		tree_unlock(tree); /* (not empty: no closing step) */
		return false;
	}
	return true;
}

static inline bool tree_lock_entering(struct range_lock_tree *tree)
{
	return tree_lock_entering_how(tree, TL_ACQ_ENTER);
}

/* Is @lock a node of @tree?  Walks up to the root: O(log n). */
static inline bool in_tree(const struct range_lock_tree *tree, const struct range_lock *lock)
{
	const struct range_lock *n = lock, *p;

	if (!is_linked(lock))
		return false;
	while ((p = itree_parent(n)))
		n = p;
	return n == tree->root;
}

/* Under tree_lock: abort unless @lock is held in @tree in mode @reader. */
static inline void check_held(const char *call, struct range_lock_tree *tree,
			      struct range_lock *lock, bool reader)
{
	if (!in_tree(tree, lock)) {
		tree_unlock(tree);
		rl_die(call, lock, "request is not in this tree (not locked?)");
	}
	if (atomic_load_explicit(wait_word(lock), memory_order_relaxed) != 0) {
		tree_unlock(tree);
		rl_die(call, lock, "request is still waiting, not held");
	}
	if (is_reader(lock) != reader) {
		tree_unlock(tree);
		rl_die(call, lock, reader ? "range is held for writing, not reading"
				       : "range is held for reading, not writing");
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

#endif /* RANGELOCK_PROTOCOL_H */
