/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the public lock, trylock and unlock calls.
 *
 * The paths every call takes -- enter() (the fast paths: a lone request on
 * an empty tree through the lock word, a reader through its fast-read
 * slot), lock_common(), trylock_common() and unlock_common() -- are here,
 * in the same file as the public calls, because they are inlined into each
 * of them (always_inline): the uncontended calls cost no function call.
 * What they do under tree_lock (scan, overtake, insert, remove) is in
 * protocol.c, with the DESIGN comment; waiting is in waiting.c.  The second
 * level (a tree bound to a file, file_lock.c) is hooked in at the public
 * call level, below.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "checks.h"
#include "fast_read.h"
#include "file_lock.h"
#include "protocol.h"
#include "stats.h"
#include "thread_id.h"
#include "tree_lock.h"
#include "waiting.h"
#include "word_mode.h"

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
 * (stats_recount): we acquired before statistics were on.  Either way every
 * acquisition after the enabling is counted once.
 */
static inline void word_held(struct range_lock_tree *tree)
{
	if (__builtin_expect(__atomic_load_n(&tree->stats, __ATOMIC_RELAXED) != NULL, 0)) {
		tree_lock(tree);
		tree_unlock(tree);
	}
}

/* enter()'s results, besides -ETIMEDOUT and -EINVAL from a timed word wait. */
enum { ENTER_TREE, ENTER_HELD, ENTER_BUSY };

/*
 * The start of every lock call: check the arguments, try the fast path,
 * then word mode (word_mode.c; @w is the lock call's waiter, NULL for
 * trylock).  Returns ENTER_HELD (@lock holds its range through the word),
 * ENTER_BUSY (trylock: a lock call would wait on the word), ENTER_TREE
 * (tree_lock is held: go on in the tree), or a timed word wait's error.
 */
static inline __attribute__((always_inline)) int
enter(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
      bool reader, struct waiter *w)
{
	check_args(call, tree, lock);
	if (is_linked(lock))
		rl_die(call, lock, ALREADY_IN_TREE);
	if (reader && (tree_flags(tree) & RL_TREE_BIASED)) {
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
		 * materialiser rewrites the flags (insert_request) and must
		 * be the only writer once the request is fast held; unlock
		 * clears them after its release CAS, when nobody else can.
		 * (A word waiter keeps them while it waits on the word.)
		 */
		lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
		if (tree_fast_acquire(tree_lock_word(tree), fast_value(lock, reader))) {
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
					r = word_wait(tree, lock, w, v);
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
	lock->rb_parent_flags = reader ? RL_READER : 0;

	tree_lock(tree);
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

static inline __attribute__((always_inline)) int lock_common(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, bool reader, struct waiter *w,
		       int subclass, void *site)
{
	struct range_lock_stats *st;
	struct entry_scan scan;
	uint32_t blockers = 0;
	uint64_t seqnum;
	int r;

	r = enter(call, tree, lock, reader, w);
	if (r != ENTER_TREE)
		return r == ENTER_HELD ? 0 : r; /* held through the word, or gave up */
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
	if (blockers && !tree_is_fifo(tree) &&
	    (w->kind == WAIT_INTERRUPTIBLE || w->word == WORD_MARKED)) {
		/* Marked from the start: an interruptible waiter is never
		 * overtaken, so it never wakes at the hand-off bound or to
		 * claim -- instants in which a signal handler could run
		 * unreported (see the header); a word waiter that asked for
		 * the hand-off enters the tree marked (word_mode.c). */
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
	} else if (w->word != WORD_NONE) {
		rl_probe_wait(wait_end, tree, lock, reader); /* word_wait() began it */
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
		rl_die(call, lock, "range does not fit off_t (tree bound to a file)");
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
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		lock_two_levels("range_" #mode "_lock", tree, lock, reader, &w, 0, \
			    CALLER);                                             \
	}                                                                        \
	void range_##mode##_lock_nested(struct range_lock_tree *tree,            \
					struct range_lock *lock, int subclass)   \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		lock_two_levels("range_" #mode "_lock_nested", tree, lock, reader, \
			    &w, subclass, CALLER);                               \
	}                                                                        \
	int range_##mode##_lock_interruptible(struct range_lock_tree *tree,      \
					      struct range_lock *lock)           \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_INTERRUPTIBLE, 0, NULL);                   \
		return lock_two_levels("range_" #mode "_lock_interruptible", tree, \
				   lock, reader, &w, 0, CALLER);                 \
	}                                                                        \
	int range_##mode##_lock_killable(struct range_lock_tree *tree,           \
					 struct range_lock *lock)                \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_KILLABLE, 0, NULL);                        \
		return lock_two_levels("range_" #mode "_lock_killable", tree, lock, \
				   reader, &w, 0, CALLER);                       \
	}                                                                        \
	int range_##mode##_timedlock(struct range_lock_tree *tree,               \
				     struct range_lock *lock, clockid_t clockid, \
				     const struct timespec *abstime)             \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_TIMED, clockid, abstime);                   \
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
		struct waiter w;                                                \
		waiter_init(&w, WAIT_TIMED, clockid, NULL);                      \
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
	struct waiter w;

	waiter_init(&w, WAIT_KILLABLE, 0, NULL);

	return lock_two_levels("range_write_lock_killable_nested", tree, lock,
			   false, &w, subclass, CALLER);
}

static inline __attribute__((always_inline)) int trylock_common(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, bool reader, void *site)
{
	struct range_lock_stats *st;
	bool busy;

	int r = enter(call, tree, lock, reader, NULL);

	if (r != ENTER_TREE)
		return r == ENTER_HELD; /* fast held, or busy in word mode */
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

/* ---- release (check_held(): protocol.h; downgrade: protocol.c) -------- */

/*
 * Release @lock's hold through the lock word: true if done, false if it
 * must be unlocked through the tree (it was displaced into it, or it is no
 * fast hold at all: then check_held() names the misuse).  When word waiters
 * changed the word, the slow release runs only for a request that looks
 * fast held in this mode (linked, no parent): a hand-off value names the
 * asking waiter, not the holder, so an unlock of a request that is not the
 * word's holder (never locked, unlocked twice, the wrong mode) must not
 * hand the word over.  The flags are read relaxed: a displacer may rewrite
 * them meanwhile, and then its CAS on the word made ours fail or will
 * (either value read leads to the tree path or a failed CAS there).
 */
static __attribute__((no_sanitize("thread"))) bool
word_release_waited(tree_word_t *word, struct range_lock *lock, bool reader, uintptr_t seen);

static inline bool word_release(struct range_lock_tree *tree, struct range_lock *lock,
				bool reader)
{
	tree_word_t *word = tree_lock_word(tree);
	uintptr_t seen;

	if (__builtin_expect(tree_fast_release(word, fast_value(lock, reader), &seen), 1))
		return true;
	return word_release_waited(word, lock, reader, seen);
}

/*
 * word_release() when word waiters changed the word (or a displacer): out
 * of line, off the uncontended path.  The flags load races, formally, with
 * a displacer's plain stores into the same request (insert_request(), under
 * tree_lock): benign, as said above, but a data race to ThreadSanitizer,
 * which instruments this library in the sanitizer builds; so this function
 * is not instrumented.  (A race-free check would keep a mark in owner_tid,
 * which only the request's user writes.)
 */
static __attribute__((noinline, no_sanitize("thread"))) bool
word_release_waited(tree_word_t *word, struct range_lock *lock, bool reader,
		    uintptr_t seen)
{
	if (!tl_is_fast(seen))
		return false;
	rl_race_ok(&lock->rb_parent_flags, sizeof(lock->rb_parent_flags));
	if (__atomic_load_n(&lock->rb_parent_flags, __ATOMIC_RELAXED) !=
	    ((reader ? RL_READER : 0) | RL_LINKED))
		return false;
	return tree_fast_release_waited(word, fast_value(lock, reader), seen);
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
			rl_die(call, lock, "range is held for reading, not writing");
		if (fast_read_release(tree, owner)) {
			lock->rb_parent_flags = 0;
			lock->owner_tid = 0;
			return;
		}
	} else if (word_release(tree, lock, reader)) {
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

