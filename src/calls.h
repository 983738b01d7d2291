/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the paths every public lock call shares (private header).
 *
 * enter() (the argument checks and the fast paths: a lone request on an
 * empty tree through the lock word, a reader through its fast-read slot,
 * word mode), insert_scanned() and unlock_common() are inlined into each
 * public call (always_inline): the uncontended calls cost no function
 * call.  What they do under tree_lock (scan, overtake, insert, remove) is
 * in protocol.c, with the DESIGN comment; waiting is in waiting.c.  The
 * public calls: calls.c (one range), sets.c (several ranges in one
 * arrival), grow.c (grow and shrink), async.c (asynchronous submission).
 */
#ifndef RANGELOCK_CALLS_H
#define RANGELOCK_CALLS_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "checks.h"
#include "defer.h"
#include "fast_read.h"
#include "file_lock.h"
#include "protocol.h"
#include "stats.h"
#include "thread_id.h"
#include "tree_lock.h"
#include "waiting.h"
#include "word_mode.h"
#include "segments.h"

/* ---- entry ------------------------------------------------------------ */

/*
 * Also what a tree in shared memory used by two processes looks like: the
 * other process's fast holder, materialised here, is read at an address of
 * this process (often this very request's stack slot, after fork()).
 * Telling the two apart would cost a syscall on the hot path: name both.
 */
#define ALREADY_IN_TREE "request is already in a tree (locked twice? or is " \
	"the tree used from another process? trees are private to one process)"

/*
 * Held through the word (fast path or word mode).  Statistics count in the
 * tree: if they are on, go through tree_lock, which displaces and
 * materialises us and counts the acquisition.  The look comes after the
 * CAS so that no enabling slips in between: if our CAS read the 0 that the
 * enabler's tree_lock release wrote (or a later value), that release
 * synchronises with our acq_rel CAS (the lock word's RMWs form a release
 * sequence), so this relaxed load sees the pointer: we go through
 * tree_lock, which materialises us and counts the acquisition.  Otherwise
 * our CAS precedes the enabler's tree_lock acquire in the word's
 * modification order, so the enabler displaces us and counts us as held
 * (rl_stats_recount): we acquired before statistics were on.  Either way every
 * acquisition after the enabling is counted once.
 */
static inline __attribute__((always_inline)) void word_held(struct range_lock_tree *tree)
{
	if (__builtin_expect(__atomic_load_n(&tree->stats, __ATOMIC_RELAXED) != NULL, 0)) {
		tree_lock(tree);
		tree_unlock(tree);
	}
}

/*
 * The tree a request holds through the lock word (fast path, word mode):
 * kept in rb_right, which is free while the request is in no tree.  Set
 * before the fast CAS publishes the request, like its flags; a word waiter
 * keeps it (its rb_left names the holder it asks to hand over; rb_right is
 * untouched), so a waiter handed the word holds with it already set.  A
 * displacer that materialises the request overwrites it (rl_insert_request()
 * makes it NULL or a node: never a tree), and its unlock then goes through
 * the tree, which does not read it.  Nothing clears it: it counts only
 * beside the flags of a fast hold (word_release()).
 */
static inline void set_word_tree(struct range_lock *lock, struct range_lock_tree *tree)
{
	lock->rb_right = (struct range_lock *)(void *)tree;
}

/* enter()'s results, besides -ETIMEDOUT and -EINVAL from a timed word wait. */
enum { ENTER_TREE, ENTER_HELD, ENTER_BUSY, ENTER_REFUSED };

/*
 * The start of every lock call: check the arguments, try the fast path,
 * then word mode (word_mode.c; @w is the lock call's waiter, NULL for
 * trylock).  Returns ENTER_HELD (@lock holds its range through the word),
 * ENTER_BUSY (trylock: a lock call would wait on the word), ENTER_TREE
 * (tree_lock is held: go on in the tree), or a timed word wait's error.
 * (A tree with segments never gets here: the public calls send it to
 * segments.c first, see is_segments() in segments.h.)
 */
static inline __attribute__((always_inline)) int
enter_how(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
	  bool reader, struct waiter *w, bool fast)
{
	check_args(call, tree, lock);
	if (is_linked(lock))
		rl_die(call, lock, ALREADY_IN_TREE);
	if (fast && reader && (tree_flags(tree) & RL_TREE_BIASED)) {
		/* The reader fast path (fast_read.h): no tree, no tree_lock. */
		enum fast_read r = fast_read_acquire(tree, lock);

		if (__builtin_expect(r == FAST_READ_HELD, 1))
			return ENTER_HELD;
		if (r == FAST_READ_MATERIALISED) {
			/* Held in the tree once the revoker that took us
			 * drops tree_lock: wait for it. */
			tree_lock(tree);
			tree_unlock(tree);
			return ENTER_HELD;
		}
	}
	lock->owner_tid = rl_thread_id();
	if (fast_path_allowed(tree)) {
		/*
		 * A fast-held request counts as in a tree (RL_LINKED, no
		 * parent), so that locking it again, in this tree or any
		 * other, aborts above.  Set before the CAS publishes it: a
		 * materialiser rewrites the flags (rl_insert_request) and must
		 * be the only writer once the request is fast held; unlock
		 * clears them after its release CAS, when nobody else can.
		 * (A word waiter keeps them while it waits on the word.)
		 */
		lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
		set_word_tree(lock, tree);
		if (fast && tree_fast_acquire(tree_lock_word(tree), fast_value(lock, reader))) {
			word_held(tree);
			return ENTER_HELD;
		}
		if (w)
			w->word = WORD_NONE; /* not on the uncontended path */
		if (word_mode_request(lock, reader, w)) {
			uintptr_t v = atomic_load_explicit(tree_lock_word(tree),
							   memory_order_acquire);

			if (word_blocks(tree, v)) {
				int r;

				if (!w)
					r = -EBUSY; /* trylock: a lock call would wait */
				else if (w->kind == WAIT_TIMED &&
					 !timespec_valid(w->clockid, w->abstime))
					r = -EINVAL;
				else
					r = rl_word_wait(tree, lock, w, v);
				if (r == WORD_HELD) {
					word_held(tree);
					return ENTER_HELD;
				}
				if (r != WORD_TREE) {
					lock->rb_parent_flags = 0;
					return r == -EBUSY ? ENTER_BUSY : r;
				}
			}
		}
	} else if (w) {
		w->word = WORD_NONE; /* the checking mode: no fast path */
	}
	/* Readers first (defer.c): before the writer enters.  Never here for
	 * a segment's tree (the flag is the user's tree's; its dispatch
	 * defers), nor on a free tree (a sleeping reader is in the tree). */
	if (!reader && w && w->kind != WAIT_ASYNC &&
	    __builtin_expect(tree_defers_writers(tree), 0))
		rl_defer_writer(tree, w);
	lock->rb_parent_flags = reader ? RL_READER : 0;

	if (__builtin_expect(!tree_lock_entering_how(tree, w ? TL_ACQ_ENTER : TL_ACQ_TRY), 0)) {
		/* The gate of a tree with segments sends it elsewhere
		 * (seg_gate.c): nothing entered. */
		lock->rb_parent_flags = 0;
		return ENTER_REFUSED;
	}
	if (is_linked(lock)) { /* it was fast held: materialised just now */
		tree_unlock(tree);
		rl_die(call, lock, ALREADY_IN_TREE);
	}
	if (__builtin_expect(tree->nr_requests >= RL_MAX_TREE_REQUESTS, 0)) {
		/* The wait word's count must not wrap (protocol.h). */
		tree_unlock(tree);
		rl_die(call, lock, "too many requests in this tree (the limit is "
		       "2^30 - 1024 at once: a waiter counts its blockers in 30 bits)");
	}
	return ENTER_TREE;
}

/* @fast false: the caller has just tried the fast paths (the fast read
 * and the word's CAS) and failed; enter() goes on from there. */
static inline __attribute__((always_inline)) int
enter(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
      bool reader, struct waiter *w)
{
	return enter_how(call, tree, lock, reader, w, true);
}

/*
 * Under tree_lock, after rl_scan_entry(): insert @lock -- held at once (free,
 * or overtaking unmarked waiters) or waiting with its blockers, HANDOFF-
 * marked from the start if @mark (default policy) -- and count it in the
 * statistics.  Returns its blockers (0: held).  Shared by lock_common() and
 * the asynchronous submission.
 */
static inline __attribute__((always_inline)) uint32_t
insert_scanned(struct range_lock_tree *tree, struct range_lock *lock, bool reader,
	       const struct entry_scan *scan, bool mark)
{
	struct range_lock_stats *st;
	uint32_t blockers = 0;
	uint64_t seqnum;

	if (!scan->must_wait) {
		/* Free, or every conflicting request is an unmarked waiter. */
		seqnum = scan->blockers ? rl_overtake(tree, lock, reader, scan)
					: tree->seqnum++;
	} else {
		blockers = scan->blockers;
		seqnum = tree->seqnum++;
	}
	rl_insert_request(tree, lock, reader, blockers, seqnum);
	if (blockers && mark && !tree_is_fifo(tree))
		atomic_fetch_or_explicit(wait_word(lock), HANDOFF, memory_order_relaxed);
	st = tree->stats;
	if (st) {
		if (blockers) {
			STAT_ADD(st, contended, 1);
			STAT_ADD(st, waiting_now, 1);
			STAT_PEAK(st, waiting_now, waiting_peak);
		} else {
			rl_stat_granted(st, reader, false);
		}
	}
	return blockers;
}

/* A bound tree takes only ranges that fit off_t: -EINVAL, or abort for the
 * calls that cannot return it (the plain calls, trylock). */
static inline bool file_range_bad(const char *call, struct range_lock_tree *tree,
				  struct range_lock *lock, bool can_fail)
{
	if (!tree || !lock || !rl_bound_file(file_of(tree)) ||
	    rl_file_range_ok(lock->start, lock->last))
		return false;
	if (!can_fail || lock->start > lock->last) /* rl_die(): a failed init */
		rl_die(call, lock, "range does not fit off_t (tree bound to a file)");
	return true;
}

#define CALLER __builtin_return_address(0)
/* The call site, for the checking mode only: read early on a path that
 * does not need it, it would cost the others a load. */
#if RANGELOCK_CHECKS
#define CHECKS_SITE(site) (site)
#else
#define CHECKS_SITE(site) NULL
#endif

/* calls.c: the second level's hooks (a tree bound to a file, with or
 * without segments).  After a local grant, take the OFD lock (or unlock
 * locally and fail); unlock a request locally, without its OFD lock. */
RL_HIDDEN int rl_file_acquire(const char *call, struct range_lock_tree *tree,
			   struct range_lock *lock, bool reader, struct waiter *w,
			   enum rl_file_wait kind);
/* sets.c: take the OFD locks of every member of a set (also a growth's
 * parts, grow.c). */
RL_HIDDEN int rl_file_take_all(struct range_lock_file *f, const struct range_lock_item *items,
			       unsigned n, struct waiter *w, enum rl_file_wait kind,
			       void (*on_cancel)(void *), void *arg);
RL_HIDDEN void rl_unlock_local(const char *call, struct range_lock_tree *tree,
			    struct range_lock *lock, bool reader);

/* ---- release (check_held(): protocol.h; downgrade: protocol.c) -------- */

/*
 * Release @lock's hold through the lock word: true if done, false if it
 * must be unlocked through the tree (it was displaced into it, or it is no
 * fast hold of this tree at all: then check_held() names the misuse).
 * When word waiters changed the word, the slow release runs only for a
 * request that looks fast held in this mode (linked, no parent) in THIS
 * tree (set_word_tree()), and is not the waiter that asks for the word: a
 * hand-off value names the asking waiter, not the holder, so an unlock of
 * a request that is not the word's holder (never locked, unlocked twice,
 * the wrong mode, held in another tree, still waiting) must not hand the
 * word over.  The flags and the tree are read relaxed: a displacer may
 * rewrite them meanwhile, and then its CAS on the word made ours fail or
 * will (any value read leads to the tree path or a failed CAS there).
 */
RL_HIDDEN __attribute__((no_sanitize("thread"))) bool
rl_word_release_waited(struct range_lock_tree *tree, struct range_lock *lock,
		       bool reader, uintptr_t seen);

static inline bool word_release(struct range_lock_tree *tree, struct range_lock *lock,
				bool reader)
{
	tree_word_t *word = tree_lock_word(tree);
	uintptr_t seen;

	if (__builtin_expect(tree_fast_release(word, fast_value(lock, reader), &seen), 1))
		return true;
	return rl_word_release_waited(tree, lock, reader, seen);
}

/*
 * The unlock of @lock in @tree.  @tried: the caller has just tried the
 * fast releases (the slot's CAS for a reader that took one, else the
 * word's CAS, which found @seen) and failed; go on from there.
 */
static inline __attribute__((always_inline)) void
unlock_common_how(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		  bool reader, bool tried, uintptr_t seen)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock_stats *st;

	uint32_t owner = lock ? lock->owner_tid : 0;

	check_args(call, tree, lock);
	if (owner & RL_SLOT_TAG) {
		/* It took a slot (fast_read.h): still published there, or
		 * materialised into the tree by a revoker. */
		if (!reader)
			rl_die(call, lock, "range is held for reading, not writing");
		if (!tried && fast_read_release(tree, owner)) {
			lock->rb_parent_flags = 0;
			lock->owner_tid = 0;
			return;
		}
	} else if (tried ? rl_word_release_waited(tree, lock, reader, seen)
			 : word_release(tree, lock, reader)) {
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
	rl_remove_request(tree, lock, &wl);
	tree_unlock(tree);
	wake_list_flush(&wl);
}

static inline __attribute__((always_inline)) void
unlock_common(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
	      bool reader)
{
	unlock_common_how(call, tree, lock, reader, false, 0);
}

/* The tree's second-level slot (tree->file: NULL, a bound tree's file, or
 * a tree's tagged segments), NULL for a NULL tree: loaded once per call. */
static inline __attribute__((always_inline)) struct range_lock_file *
tree_file(struct range_lock_tree *tree)
{
	return tree ? file_of(tree) : NULL;
}

/* Before the local unlock: the file state lives while the request is in
 * the tree (set_file and destroy free it only when the tree is empty).
 * A tree with segments (is_segments()) is unlocked here, in its segments:
 * true, the caller has nothing more to do. */
static inline bool file_release(const char *call, struct range_lock_tree *tree,
				struct range_lock *lock, bool reader)
{
	struct range_lock_file *f = tree && lock ? file_of(tree) : NULL;

	if (__builtin_expect(f != NULL, 0)) {
		if (is_unbound_segments(f)) {
			struct range_lock_tree *t = rl_seg_one(f, lock);
			/* The tree runs as a plain tree (the gate,
			 * seg_gate.c): the request is in it, the caller
			 * unlocks it there.  (In its segments the word is a
			 * line nobody writes: the read is shared.) */
			if (!rl_gate_segments(tree))
				return false;
			/* within one stripe: that segment's tree */
			if (t)
				rl_unlock_in(call, t, lock, reader);
			else
				rl_seg_unlock(call, tree, lock, reader);
			return true;
		}
		if (is_segments(f)) { /* bound: both levels, out of line */
			rl_seg_file_unlock(call, tree, lock, reader);
			return true;
		}
		rl_file_unlock(f, lock->start, lock->last, reader);
	}
	return false;
}
#endif /* RANGELOCK_CALLS_H */
