/* SPDX-License-Identifier: MIT */
/*
 * The reader fast path (issue 13): readers that do not serialise.
 *
 * While no writer uses a tree, a reader does not enter the tree: it
 * publishes its request in its thread's SLOT of a process-wide table, and
 * unpublishes it at unlock.  Both touch only the slot's cache line, which no
 * other thread writes while the slot is in use: readers of one tree scale
 * with the cores instead of taking turns on the tree's internal lock.
 *
 * THE TABLE.  RL_SLOTS slots, one 128-byte line each (two lines: adjacent
 * lines are prefetched in pairs).  A thread claims one slot the first time
 * it reads fast (CAS FREE -> IDLE, lowest free index first) and keeps it
 * until it exits.  rl_slots_used is the high-water mark of claimed indexes:
 * a revocation scans slots [0, rl_slots_used) only, so its cost is bounded
 * by the number of threads that ever read fast at the same time, not by
 * the table.  A thread that finds no free slot reads through the tree.
 *
 * A SLOT'S STATE WORD (every write is an atomic read-modify-write, so that a
 * revoker's acquire load of any later value synchronises with the release
 * that ended a fast hold: RMWs continue a release sequence):
 *   FREE              no owner thread
 *   IDLE              owned by a thread (its rl_my_slot), nothing published
 *   tree | PUB        a reader of @tree holds its range through this slot
 *   tree | MAT        a revoker of @tree took the slot (CAS from PUB) and
 *                     moved the request into the tree as a held reader
 *                     ("materialised" it); the request keeps the slot until
 *                     its unlock, which frees it under tree_lock
 *   ... | ORPHAN      PUB or MAT whose owner thread has exited (or, in the
 *                     child of fork(), is another thread of the parent): the
 *                     unlock makes the slot FREE instead of IDLE.  A hold is
 *                     never released because its thread died.
 * Only the slot's request, through its unlock, moves PUB -> IDLE/FREE; only a
 * revoker holding @tree's internal lock moves PUB -> MAT; only an unlock
 * holding @tree's internal lock moves MAT -> IDLE/FREE; only the owner
 * thread moves IDLE -> PUB and IDLE -> FREE (at exit); ORPHAN is added by
 * the exiting thread or the fork child.  So a request that published in a
 * slot owns it until its unlock: no ABA.
 *
 * The slot's other field, req, is written by the owner thread before it
 * publishes and never while published.  A revoker reads it only after
 * winning the slot's CAS: a writer never touches a reader's request or
 * stack before the reader has lost it.  The slot holds no range: the
 * revoker moves every published reader of its tree, and the tree then
 * compares ranges.
 *
 * THE REQUEST.  A fast-held request is in no tree: its owner_tid holds
 * RL_SLOT_TAG | slot index (so that any thread can find the slot at unlock,
 * as the header allows; the materialiser never writes owner_tid) and its
 * flags RL_READER | RL_LINKED (so that locking it again aborts, as for the
 * lock word's fast holder).
 *
 * THE HANDSHAKE (the Dekker pattern; docs/design.md, "The reader fast
 * path's fences", and tests/model/handshake_wm.pml, which has store buffers):
 *   reader: publish (CAS IDLE -> PUB, seq_cst) ; check the tree's BIASED bit (load,
 *           seq_cst); set: held; clear: back out (CAS PUB -> IDLE), and if a
 *           revoker won the CAS meanwhile, it is held through the tree.
 *   revoker (under tree_lock): clear BIASED (store, seq_cst) ; scan the
 *           slots (loads, seq_cst) ; materialise each PUB of this tree.
 * C11's single total order over seq_cst operations makes at least one side
 * see the other: every reader that saw BIASED set is found by the scan.
 */
#ifndef RANGELOCK_FAST_READ_H
#define RANGELOCK_FAST_READ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "interval_tree.h"

#define RL_SLOTS 512u

#define SLOT_FREE   ((uintptr_t)0)
#define SLOT_IDLE   ((uintptr_t)1)
#define SLOT_ORPHAN ((uintptr_t)1) /* with PUB or MAT */
#define SLOT_PUB    ((uintptr_t)2)
#define SLOT_MAT    ((uintptr_t)4)

/* owner_tid of a request that took (or was materialised from) a slot.
 * Thread ids stay below 2^29 (thread_id.h). */
#define RL_SLOT_TAG 0x80000000u

/* Private bits of struct range_lock_tree.flags (the public ones are
 * RANGE_LOCK_TREE_FLAG_FIFO and _NO_FAST_READ). */
#define RL_TREE_BIASED      4u	/* fast reads allowed now */
/* (bits 4..12: a segment's index + 1, segments.c) */
#define RL_TREE_NO_BIAS     (1u << 13) /* a segment of a bound tree: never */
#define RL_TREE_CLOSING     (1u << 14) /* a segment the gate closes (seg_gate.c) */
#define RL_TREE_DELAY_SHIFT 16	/* bits 16..31: slow reads left before biasing */
#define RL_TREE_DELAY_ONE   (1u << RL_TREE_DELAY_SHIFT)

struct rl_slot {
	_Atomic uintptr_t state;
	_Atomic(struct range_lock *) req;
} __attribute__((aligned(128)));

#define RL_HIDDEN __attribute__((visibility("hidden")))

extern struct rl_slot rl_slots[RL_SLOTS] RL_HIDDEN;
extern _Atomic uint32_t rl_slots_used RL_HIDDEN;
/* The calling thread's slot; NULL before its first claim, and while it is
 * inside fast_read_acquire()'s unpublished stretch (see there). */
extern _Thread_local struct rl_slot *rl_my_slot
	__attribute__((tls_model("initial-exec"))) RL_HIDDEN;

/* Claim a slot for this thread (first fast read); NULL if none is free,
 * and in a call nested in this thread's own fast_read_acquire() or claim
 * (a signal handler): the thread has a slot, or is claiming one. */
RL_HIDDEN struct rl_slot *rl_claim_slot(void);

/* Under @tree's internal lock, BIASED just cleared: take every slot
 * published for @tree and hand its request to @materialise. */
RL_HIDDEN void rl_take_published(struct range_lock_tree *tree,
				     void (*materialise)(struct range_lock_tree *,
							 struct range_lock *));

/* Under @tree's internal lock: the unlock of a materialised request gives
 * its slot back (IDLE, or FREE if orphaned). */
RL_HIDDEN void rl_slot_unmaterialise(struct range_lock_tree *tree, uint32_t owner_tid);

/* Test hooks (static test builds): is @tree biased; how many slots hold a
 * published, not materialised, fast read of @tree. */
RL_HIDDEN int rl_test_fast_read_biased(struct range_lock_tree *tree);
RL_HIDDEN int rl_test_fast_readers(struct range_lock_tree *tree);

/* Test builds only (RL_TEST_HOOKS: the static test variants): called, if
 * set, between the request's store into the slot and the publishing CAS,
 * where tests/unit/test_fast_read.c raises a signal. */
#ifdef RL_TEST_HOOKS
extern void (*rl_test_publish_hook)(void) RL_HIDDEN;
#define RL_TEST_PUBLISH_HOOK() do { if (rl_test_publish_hook) rl_test_publish_hook(); } while (0)
#else
#define RL_TEST_PUBLISH_HOOK() ((void)0)
#endif

static inline struct rl_slot *slot_of(uint32_t owner_tid)
{
	return &rl_slots[owner_tid & ~RL_SLOT_TAG];
}

enum fast_read { FAST_READ_NO, FAST_READ_HELD, FAST_READ_MATERIALISED,
		 FAST_READ_NO_SLOT /* (@lean only: this thread has no slot yet) */ };

/*
 * The reader's side of the handshake; the caller has seen BIASED set (a
 * relaxed look, to skip all this on unbiased trees).  FAST_READ_HELD: the
 * request holds its range through the slot.  FAST_READ_MATERIALISED: a
 * revoker took it into the tree while it backed out; it holds its range
 * there once the revoker drops tree_lock (the caller waits for that).
 * FAST_READ_NO: nothing published; go the usual way.
 */
/*
 * @lean (a constant): the caller has seen no race detector there
 * (rl_tools_on() false), so the annotations go, and it claims no slot:
 * FAST_READ_NO_SLOT instead, nothing done (calls.c's segment fast path,
 * which then goes the general way).  No call is left on its path.
 */
static inline __attribute__((always_inline)) enum fast_read
fast_read_acquire_how(struct range_lock_tree *tree, struct range_lock *lock, bool lean)
{
	struct rl_slot *s = rl_my_slot;
	uintptr_t pub = (uintptr_t)tree | SLOT_PUB, idle = SLOT_IDLE;
	bool published;

	if (__builtin_expect(!s, 0)) {
		if (lean)
			return FAST_READ_NO_SLOT;
		if (!(s = rl_claim_slot()))
			return FAST_READ_NO;
	}
	/*
	 * From here to the publishing CAS the slot is this thread's but holds
	 * nothing yet.  A signal handler that interrupted that stretch and
	 * read fast itself would leave the slot IDLE with its own request in
	 * req, and the CAS below would then publish that dead request: the
	 * interrupted read would be invisible to writers.  So rl_my_slot is
	 * NULL meanwhile: a nested call finds no slot, and rl_claim_slot()
	 * (which knows the thread has one) sends it through the tree, which
	 * this thread does not hold at this point.  (No call of the library
	 * is async-signal-safe, as the header says; this only keeps the fast
	 * path from breaking exclusion when one is used so all the same.)
	 * Two stores, no test on the hot path; the signal fences keep the
	 * compiler from moving them across the slot's accesses and cost no
	 * instruction.
	 */
	rl_my_slot = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	/* Acquire: after a cross-thread unlock, the unlocker's release CAS
	 * comes before our writes to the slot below. */
	if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_IDLE) {
		atomic_signal_fence(memory_order_seq_cst);
		rl_my_slot = s;
		return FAST_READ_NO; /* this thread already reads fast there */
	}
	lock->owner_tid = RL_SLOT_TAG | (uint32_t)(s - rl_slots);
	lock->rb_parent_flags = RL_READER | RL_LINKED;
	atomic_store_explicit(&s->req, lock, memory_order_relaxed);

	/* Publish (release: a revoker that wins the slot sees the fields
	 * above), then the full fence of the handshake.  The CAS cannot
	 * fail: only this thread moves its slot out of IDLE, and not in a
	 * nested call (above).  A CAS rather than an exchange costs the same
	 * and, were the slot ever not IDLE here, would publish nothing. */
	RL_TEST_PUBLISH_HOOK();
	if (!lean)
		rl_hb_release(&s->state); /* annotate.h, edge 9 */
	published = atomic_compare_exchange_strong_explicit(&s->state, &idle, pub,
							    memory_order_seq_cst,
							    memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	rl_my_slot = s; /* published: a nested call sees PUB and backs off */
	if (!published)
		return FAST_READ_NO;
	if (__builtin_expect(__atomic_load_n(&tree->flags, __ATOMIC_SEQ_CST) &
			     RL_TREE_BIASED, 1)) {
		if (!lean)
			rl_hb_acquire(&tree->flags); /* edge 10: whoever set BIASED */
		return FAST_READ_HELD;
	}
	/* A revoker cleared BIASED: back out, unless it took us already. */
	if (atomic_compare_exchange_strong_explicit(&s->state, &pub, SLOT_IDLE,
						    memory_order_relaxed,
						    memory_order_relaxed))
		return FAST_READ_NO;
	return FAST_READ_MATERIALISED;
}

static inline enum fast_read fast_read_acquire(struct range_lock_tree *tree,
					       struct range_lock *lock)
{
	return fast_read_acquire_how(tree, lock, false);
}

/*
 * Unlock of a request that took a slot (owner_tid has RL_SLOT_TAG): true
 * when it was still published and is released now; false when a revoker
 * materialised it (the caller unlocks through the tree and calls
 * rl_slot_unmaterialise()).
 */
/* @lean: as fast_read_acquire_how()'s (no annotations). */
static inline __attribute__((always_inline)) bool
fast_read_release_how(struct range_lock_tree *tree, uint32_t owner_tid, bool lean)
{
	struct rl_slot *s = slot_of(owner_tid);
	uintptr_t pub = (uintptr_t)tree | SLOT_PUB, v = pub;

	/* Release: our critical section happens before the next revoker's
	 * scan, which reads this value or a later one (edge 11). */
	if (!lean && rl_tools_on() &&
	    atomic_load_explicit(&s->state, memory_order_relaxed) == pub)
		rl_hb_release(&tree->nr_writers);
	if (atomic_compare_exchange_strong_explicit(&s->state, &v, SLOT_IDLE,
						    memory_order_release,
						    memory_order_relaxed))
		return true;
	/* Our thread has exited meanwhile: the slot is nobody's now. */
	if (v == (pub | SLOT_ORPHAN)) {
		if (!lean)
			rl_hb_release(&tree->nr_writers);
		if (atomic_compare_exchange_strong_explicit(&s->state, &v, SLOT_FREE,
							    memory_order_release,
							    memory_order_relaxed))
			return true;
	}
	return false;
}

static inline bool fast_read_release(struct range_lock_tree *tree, uint32_t owner_tid)
{
	return fast_read_release_how(tree, owner_tid, false);
}

#endif /* RANGELOCK_FAST_READ_H */
