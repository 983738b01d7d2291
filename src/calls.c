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

/*
 * Under tree_lock, after scan_entry(): insert @lock -- held at once (free,
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
		seqnum = scan->blockers ? overtake(tree, lock, reader, scan)
					: tree->seqnum++;
	} else {
		blockers = scan->blockers;
		seqnum = tree->seqnum++;
	}
	insert_request(tree, lock, reader, blockers, seqnum);
	if (blockers && mark && !tree_is_fifo(tree))
		atomic_fetch_or_explicit(wait_word(lock), HANDOFF, memory_order_relaxed);
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
	return blockers;
}

static inline __attribute__((always_inline)) int lock_common(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, bool reader, struct waiter *w,
		       int subclass, void *site)
{
	struct entry_scan scan;
	uint32_t blockers;
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
	/* Marked from the start: an interruptible waiter is never overtaken,
	 * so it never wakes at the hand-off bound or to claim -- instants in
	 * which a signal handler could run unreported (see the header); a
	 * word waiter that asked for the hand-off enters the tree marked
	 * (word_mode.c). */
	blockers = insert_scanned(tree, lock, reader, &scan,
				  w->kind == WAIT_INTERRUPTIBLE || w->word == WORD_MARKED);
	tree_unlock(tree);

	if (blockers) {
		w->tree = tree;
		w->lock = lock;
		w->reader = reader;
		w->items = NULL; /* one request */
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

static const struct timespec *widen(const struct timespec_time32 *t32, struct timespec *ts)
{
	if (!t32)
		return NULL;
	ts->tv_sec = t32->tv_sec;
	ts->tv_nsec = t32->tv_nsec;
	return ts;
}

RANGELOCK_API int range_lock_many_timed_time32(struct range_lock_tree *tree,
					       const struct range_lock_item *items,
					       unsigned n, clockid_t clockid,
					       const struct timespec_time32 *abstime)
	__asm__("range_lock_many_timed");
int range_lock_many_timed_time32(struct range_lock_tree *tree,
				 const struct range_lock_item *items, unsigned n,
				 clockid_t clockid, const struct timespec_time32 *abstime)
{
	struct timespec ts;

	return range_lock_many_timed(tree, items, n, clockid, widen(abstime, &ts));
}

RANGELOCK_API int range_lock_grow_timed_time32(struct range_lock_tree *tree,
					       struct range_lock *lock, uint64_t start,
					       uint64_t last, clockid_t clockid,
					       const struct timespec_time32 *abstime)
	__asm__("range_lock_grow_timed");
int range_lock_grow_timed_time32(struct range_lock_tree *tree, struct range_lock *lock,
				 uint64_t start, uint64_t last, clockid_t clockid,
				 const struct timespec_time32 *abstime)
{
	struct timespec ts;

	return range_lock_grow_timed(tree, lock, start, last, clockid, widen(abstime, &ts));
}
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

/* ---- asynchronous requests (async.c has the rest) ------------------- */

/*
 * Submit @req without waiting: the entry of a lock call (enter(): the lock
 * word on an empty tree, the reader fast path; never a word wait, which
 * WAIT_ASYNC turns off), then the tree as lock_common() does it.  A request
 * that must wait is queued HANDOFF-marked in the default policy (nothing
 * overtakes it, and put_blocker() grants it directly at count 0: it never
 * sleeps, so it is never ELIGIBLE) with RL_ASYNC_TAG, which makes its grant
 * queue the completion.  Returns 0 (held now) or -EINPROGRESS.
 */
static int lock_async_local(const char *call, struct range_lock_tree *tree,
			    struct range_lock_async *req, bool reader)
{
	struct range_lock *lock = &req->lock;
	struct entry_scan scan;
	struct waiter w;
	uint32_t blockers;
	int r;

	waiter_init(&w, WAIT_ASYNC, CLOCK_MONOTONIC, NULL);
	r = enter(call, tree, lock, reader, &w);
	req->tree_ = tree; /* submitted: range_lock_async_cancel() accepts it */
	if (r != ENTER_TREE)
		return 0; /* held through the word or a slot */
	if (reader)
		maybe_bias(tree);
	else
		revoke_fast_readers(tree);
	scan_entry(tree, lock, reader, false, &scan);
	blockers = insert_scanned(tree, lock, reader, &scan, true);
	if (blockers)
		lock->owner_tid |= RL_ASYNC_TAG; /* queued (tree_lock held) */
	tree_unlock(tree);
	return blockers ? -EINPROGRESS : 0;
}

static int lock_async(const char *call, struct range_lock_tree *tree,
		      struct range_lock_async *req, bool reader)
{
	int r;

	if (!tree || !req)
		rl_die(call, NULL, "NULL tree or request");
	if (!req->done)
		rl_die(call, &req->lock, "asynchronous request has no completion "
		       "(range_lock_async_init())");
	if (file_range_bad(call, tree, &req->lock, true))
		return -EINVAL;
	r = lock_async_local(call, tree, req, reader);
	if (r == 0 && __builtin_expect(file_of(tree) != NULL, 0) &&
	    file_acquire(call, tree, &req->lock, reader, NULL, RL_FILE_TRY))
		return -EAGAIN; /* another process holds bytes of it: let go */
	return r;
}

int range_read_lock_async(struct range_lock_tree *tree, struct range_lock_async *req)
{
	return lock_async("range_read_lock_async", tree, req, true);
}

int range_write_lock_async(struct range_lock_tree *tree, struct range_lock_async *req)
{
	return lock_async("range_write_lock_async", tree, req, false);
}

/* A queued request was granted (rl_async_run(), outside tree_lock): on a
 * bound tree it takes its OFD lock without waiting, or lets go locally. */
int rl_async_file_grant(struct range_lock_async *req)
{
	struct range_lock_tree *tree = req->tree_;
	struct range_lock *lock = &req->lock;

	if (__builtin_expect(file_of(tree) == NULL, 1))
		return 0;
	return file_acquire(is_reader(lock) ? "range_read_lock_async"
					    : "range_write_lock_async",
			    tree, lock, is_reader(lock), NULL, RL_FILE_TRY);
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


/* ---- several ranges in one arrival (range_lock_many()) ---------------- */

static void check_items(const char *call, struct range_lock_tree *tree,
			const struct range_lock_item *items, unsigned n)
{
	if (!tree || (n && !items))
		rl_die(call, NULL, "NULL tree or set");
	if (n > RL_MAX_TREE_REQUESTS)
		rl_die(call, NULL, "too many requests in one set");
	for (unsigned i = 0; i < n; i++) {
		struct range_lock *lock = items[i].lock;

		if (!lock)
			rl_die(call, NULL, "NULL request in the set");
		if (items[i].mode != RANGE_LOCK_READ && items[i].mode != RANGE_LOCK_WRITE)
			rl_die(call, lock, "mode is neither RANGE_LOCK_READ nor RANGE_LOCK_WRITE");
		if (is_linked(lock))
			rl_die(call, lock, ALREADY_IN_TREE);
	}
}

/*
 * The second level needs one owner per byte: ranges of one set that
 * overlap where one is a writer would conflict there with each other.
 */
static void check_items_file(const char *call, const struct range_lock_item *items,
			     unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct range_lock *a = items[i].lock;

		if (!rl_file_range_ok(a->start, a->last))
			rl_die(call, a, "range does not fit off_t (tree bound to a file)");
		for (unsigned j = 0; j < i; j++) {
			const struct range_lock *b = items[j].lock;

			if ((items[i].mode == RANGE_LOCK_WRITE || items[j].mode == RANGE_LOCK_WRITE) &&
			    a->start <= b->last && b->start <= a->last)
				rl_die(call, a, "ranges of one set overlap with a writer "
				       "(not allowed on a tree bound to a file)");
		}
	}
}

static int lock_many_common(const char *call, struct range_lock_tree *tree,
			    const struct range_lock_item *items, unsigned n,
			    struct waiter *w, void *site)
{
	struct range_lock_stats *st;
	bool writer = false, held;
	uint32_t tid;

	check_items(call, tree, items, n);
	if (!n)
		return 0;
	tid = rl_thread_id();
	for (unsigned i = 0; i < n; i++) {
		items[i].lock->owner_tid = tid;
		writer |= items[i].mode == RANGE_LOCK_WRITE;
	}
	tree_lock(tree);
	if (__builtin_expect(tree->nr_requests + n >= RL_MAX_TREE_REQUESTS, 0)) {
		tree_unlock(tree);
		rl_die(call, items[0].lock, "too many requests in this tree (the limit is "
		       "2^30 - 1024 at once: a waiter counts its blockers in 30 bits)");
	}
	if (writer)
		revoke_fast_readers(tree);
	else
		maybe_bias(tree);
	held = enter_many(tree, items, n, true, false);
	if (!held) {
		if (!w) {
			if (tree->stats)
				STAT_ADD(tree->stats, trylock_failed, 1);
			tree_unlock(tree);
			return -EBUSY;
		}
		if (w->kind == WAIT_TIMED && !timespec_valid(w->clockid, w->abstime)) {
			tree_unlock(tree);
			return -EINVAL;
		}
		if (w->kind != WAIT_TIMED) {
			for (unsigned i = 0; i < n; i++)
				rl_check_self_deadlock(tree, items[i].lock,
						       items[i].mode == RANGE_LOCK_READ, call);
		}
		enter_many(tree, items, n, false, w->kind == WAIT_INTERRUPTIBLE);
	}
	st = tree->stats;
	if (st) {
		if (!held)
			STAT_ADD(st, contended, 1);
		for (unsigned i = 0; i < n; i++) {
			if (atomic_load_explicit(wait_word(items[i].lock), memory_order_relaxed)) {
				STAT_ADD(st, waiting_now, 1);
				STAT_PEAK(st, waiting_now, waiting_peak);
			} else {
				stat_granted(st, items[i].mode == RANGE_LOCK_READ, false);
			}
		}
	}
	tree_unlock(tree);
	if (!held) {
		int r;

		w->tree = tree;
		w->items = items;
		w->n = n;
		w->growth = NULL;
		w->word = WORD_NONE;
		r = wait_for_grants(w);
		if (r)
			return r;
	}
	for (unsigned i = 0; i < n; i++)
		rl_check_acquired(tree, items[i].lock, 0, site);
	return 0;
}

static void unlock_many_local(struct range_lock_tree *tree,
			      const struct range_lock_item *items, unsigned n);

struct many_hold {
	struct range_lock_tree *tree;
	const struct range_lock_item *items;
	unsigned n;
};

static void unlock_many_on_cancel(void *arg)
{
	struct many_hold *h = arg;

	unlock_many_local(h->tree, h->items, h->n);
}

/*
 * The OFD locks of @n ranges (@items: each request's range, by its mode),
 * all or nothing, never holding one while waiting for another (two
 * processes taking sets in opposite orders would deadlock there, and the
 * kernel would not tell): wait for one range (the call's way of waiting),
 * try the others; if one is busy, let go of every range taken and wait for
 * that one first.  While it waits it holds no other range of @items at
 * this level, so a cancellation there (KILLABLE) needs only
 * @on_cancel(@arg), the caller's local undo.  Returns 0, or the wait's
 * error (-EAGAIN for TRY) with nothing of @items left at this level.
 */
static int file_take_all(struct range_lock_file *f, const struct range_lock_item *items,
			 unsigned n, struct waiter *w, enum rl_file_wait kind,
			 void (*on_cancel)(void *), void *arg)
{
	unsigned first = 0, busy;
	int r;

	for (;;) {
		const struct range_lock *l = items[first].lock;

		r = rl_file_lock(f, l->start, l->last, items[first].mode == RANGE_LOCK_READ,
				 kind, w ? w->clockid : 0, w ? w->abstime : NULL,
				 on_cancel, arg);
		if (r)
			return r;
		busy = n;
		for (unsigned i = 0; i < n && busy == n; i++) {
			l = items[i].lock;
			if (i != first &&
			    rl_file_lock(f, l->start, l->last, items[i].mode == RANGE_LOCK_READ,
					 RL_FILE_TRY, 0, NULL, NULL, NULL))
				busy = i;
		}
		if (busy == n)
			return 0;
		/* Taken: @first, and every i < busy (@first may be above busy). */
		for (unsigned i = 0; i < n; i++) {
			l = items[i].lock;
			if (i == first || i < busy)
				rl_file_unlock(f, l->start, l->last,
					       items[i].mode == RANGE_LOCK_READ);
		}
		if (kind == RL_FILE_TRY)
			return -EAGAIN;
		first = busy;
	}
}

/* The second level of a set; gives up by unlocking the set locally. */
static int file_acquire_many(const char *call, struct range_lock_tree *tree,
			     const struct range_lock_item *items, unsigned n,
			     struct waiter *w, enum rl_file_wait kind)
{
	struct many_hold h = { tree, items, n };
	int r;

	(void)call;
	r = file_take_all(file_of(tree), items, n, w, kind, unlock_many_on_cancel, &h);
	if (r)
		unlock_many_local(tree, items, n);
	return r;
}

static int lock_many_two_levels(const char *call, struct range_lock_tree *tree,
				const struct range_lock_item *items, unsigned n,
				struct waiter *w, void *site)
{
	static const enum rl_file_wait kinds[] = {
		[WAIT_PLAIN] = RL_FILE_PLAIN,
		[WAIT_INTERRUPTIBLE] = RL_FILE_INTERRUPTIBLE,
		[WAIT_KILLABLE] = RL_FILE_KILLABLE,
		[WAIT_TIMED] = RL_FILE_TIMED,
	};
	int r;

	if (tree && file_of(tree)) {
		check_items(call, tree, items, n);
		check_items_file(call, items, n);
	}
	r = lock_many_common(call, tree, items, n, w, site);
	if (__builtin_expect(r == 0 && n && file_of(tree) != NULL, 0))
		r = file_acquire_many(call, tree, items, n, w,
				      w ? kinds[w->kind] : RL_FILE_TRY);
	return r;
}

void range_lock_many(struct range_lock_tree *tree, const struct range_lock_item *items,
		     unsigned n)
{
	struct waiter w;

	waiter_init(&w, WAIT_PLAIN, 0, NULL);
	lock_many_two_levels("range_lock_many", tree, items, n, &w, CALLER);
}

int range_lock_many_interruptible(struct range_lock_tree *tree,
				  const struct range_lock_item *items, unsigned n)
{
	struct waiter w;

	waiter_init(&w, WAIT_INTERRUPTIBLE, 0, NULL);
	return lock_many_two_levels("range_lock_many_interruptible", tree, items, n, &w,
				    CALLER);
}

int range_lock_many_killable(struct range_lock_tree *tree,
			     const struct range_lock_item *items, unsigned n)
{
	struct waiter w;

	waiter_init(&w, WAIT_KILLABLE, 0, NULL);
	return lock_many_two_levels("range_lock_many_killable", tree, items, n, &w, CALLER);
}

int range_lock_many_timed(struct range_lock_tree *tree, const struct range_lock_item *items,
			  unsigned n, clockid_t clockid, const struct timespec *abstime)
{
	struct waiter w;

	waiter_init(&w, WAIT_TIMED, clockid, abstime);
	return lock_many_two_levels("range_lock_many_timed", tree, items, n, &w, CALLER);
}

int range_lock_many_try(struct range_lock_tree *tree, const struct range_lock_item *items,
			unsigned n)
{
	return lock_many_two_levels("range_lock_many_try", tree, items, n, NULL, CALLER) == 0;
}

/* Unlock at the local level only, with one hold of tree_lock for all.
 * A read held in a slot (locked on its own, fast) takes the single calls'
 * path, and then all do: its slot tag is the only mark telling it apart,
 * and the fast release erases it. */
static void unlock_many_local(struct range_lock_tree *tree,
			      const struct range_lock_item *items, unsigned n)
{
	struct wake_list wl;
	struct range_lock_stats *st;

	for (unsigned i = 0; i < n; i++) {
		if (!items[i].lock)
			rl_die("range_unlock_many", NULL, "NULL request in the set");
		if (items[i].lock->owner_tid & RL_SLOT_TAG) {
			for (unsigned j = 0; j < n; j++) {
				bool reader = items[j].mode == RANGE_LOCK_READ;

				unlock_common(reader ? "range_read_unlock" : "range_write_unlock",
					      tree, items[j].lock, reader);
			}
			return;
		}
	}
	wl.n = 0;
	tree_lock(tree); /* materialises a member held through the lock word */
	st = tree->stats;
	for (unsigned i = 0; i < n; i++) {
		struct range_lock *lock = items[i].lock;

		check_held("range_unlock_many", tree, lock, items[i].mode == RANGE_LOCK_READ);
		rl_check_released(tree, lock);
		if (st)
			STAT_ADD(st, held_now, -1);
		remove_request(tree, lock, &wl);
	}
	tree_unlock(tree);
	wake_list_flush(&wl);
}

void range_unlock_many(struct range_lock_tree *tree, const struct range_lock_item *items,
		       unsigned n)
{
	if (!tree || (n && !items))
		rl_die("range_unlock_many", NULL, "NULL tree or set");
	for (unsigned i = 0; i < n; i++)
		file_release(tree, items[i].lock, items[i].mode == RANGE_LOCK_READ);
	unlock_many_local(tree, items, n);
}

/* ---- changing a held range: shrink and grow --------------------------- */

/*
 * Under tree_lock, for the calls that change a held range: a read held in a
 * slot is moved into the tree first (revocation: the tree reads through the
 * tree for a while), one held through the lock word was materialised by
 * tree_lock(); then it must be held in this tree, in either mode.
 */
static bool held_in_tree(const char *call, struct range_lock_tree *tree,
			 struct range_lock *lock)
{
	if (lock->owner_tid & RL_SLOT_TAG)
		revoke_fast_readers(tree);
	check_held(call, tree, lock, is_linked(lock) && is_reader(lock));
	return is_reader(lock);
}

int range_lock_shrink(struct range_lock_tree *tree, struct range_lock *lock,
		      uint64_t start, uint64_t last)
{
	struct range_lock_file *f;
	struct wake_list wl;
	uint64_t a, b;
	bool reader;

	check_args("range_lock_shrink", tree, lock);
	wl.n = 0;
	tree_lock(tree);
	reader = held_in_tree("range_lock_shrink", tree, lock);
	a = lock->start;
	b = lock->last;
	f = file_of(tree);
	if (start > last || start < a || last > b ||
	    (f && !rl_file_range_ok(start, last))) {
		tree_unlock(tree);
		return -EINVAL;
	}
	if (f) {
		/* The OFD level first, as unlock does, outside tree_lock; only
		 * this request's user changes its range.  Bytes above
		 * INT64_MAX are none there ([x, RANGE_LOCK_FULL] is
		 * [x, INT64_MAX]). */
		tree_unlock(tree);
		if (a < start)
			rl_file_unlock(f, a, start - 1, reader);
		if (last < b && last < (uint64_t)INT64_MAX)
			rl_file_unlock(f, last + 1, b, reader);
		tree_lock(tree);
	}
	shrink_request(tree, lock, start, last, &wl);
	rl_check_resized(tree, lock);
	tree_unlock(tree);
	wake_list_flush(&wl);
	return 0;
}

struct grow_hold {
	struct range_lock_tree *tree;
	struct range_lock *lock;
	uint64_t start, last;      /* the range before the call */
};

/* Back to the range before the call, at the local level (nothing of the
 * added parts is held at the OFD level: file_take_all()). */
static void shrink_back(struct grow_hold *h)
{
	struct wake_list wl;

	wl.n = 0;
	tree_lock(h->tree);
	shrink_request(h->tree, h->lock, h->start, h->last, &wl);
	rl_check_resized(h->tree, h->lock);
	tree_unlock(h->tree);
	wake_list_flush(&wl);
}

static void shrink_back_on_cancel(void *arg)
{
	shrink_back(arg);
}

/*
 * The second level of the added parts, both or neither (as one lock call
 * takes its one range: never one part while waiting for the other); gives
 * up by shrinking back.  Bytes above INT64_MAX are none at this level
 * ([x, RANGE_LOCK_FULL] is [x, INT64_MAX] there): such a part is skipped.
 */
static int file_grow(struct range_lock_tree *tree, struct range_lock *lock,
		     uint64_t a, uint64_t b, bool reader, struct waiter *w,
		     enum rl_file_wait kind)
{
	struct grow_hold h = { tree, lock, a, b };
	struct range_lock part[2];
	struct range_lock_item items[2];
	unsigned np = 0;
	int r;

	if (lock->start < a)
		(void)range_lock_init(&part[np++], lock->start, a - 1);
	if (lock->last > b && b < (uint64_t)INT64_MAX)
		(void)range_lock_init(&part[np++], b + 1, lock->last);
	if (!np)
		return 0;
	for (unsigned i = 0; i < np; i++)
		items[i] = (struct range_lock_item){ &part[i],
						     reader ? RANGE_LOCK_READ : RANGE_LOCK_WRITE };
	r = file_take_all(file_of(tree), items, np, w, kind, shrink_back_on_cancel, &h);
	if (r) /* nothing of the added parts is left at the OFD level */
		shrink_back(&h);
	return r;
}

static int grow_common(const char *call, struct range_lock_tree *tree,
		       struct range_lock *lock, uint64_t start, uint64_t last,
		       struct waiter *w, void *site)
{
	static const enum rl_file_wait kinds[] = {
		[WAIT_PLAIN] = RL_FILE_PLAIN,
		[WAIT_INTERRUPTIBLE] = RL_FILE_INTERRUPTIBLE,
		[WAIT_KILLABLE] = RL_FILE_KILLABLE,
		[WAIT_TIMED] = RL_FILE_TIMED,
	};
	struct range_lock_item parts[2];
	struct range_lock_stats *st;
	struct wake_list wl;
	struct growth g;
	uint64_t a, b;
	bool reader;
	int r = 0;

	(void)site;
	check_args(call, tree, lock);
	wl.n = 0;
	tree_lock(tree);
	reader = held_in_tree(call, tree, lock);
	a = lock->start;
	b = lock->last;
	if (start > a || last < b ||
	    (file_of(tree) && !rl_file_range_ok(start, last))) {
		tree_unlock(tree);
		return -EINVAL;
	}
	if (start == a && last == b) {
		tree_unlock(tree);
		return 0;
	}
	if (__builtin_expect(tree->nr_requests + 2 >= RL_MAX_TREE_REQUESTS, 0)) {
		tree_unlock(tree);
		rl_die(call, lock, "too many requests in this tree (the limit is "
		       "2^30 - 1024 at once: a waiter counts its blockers in 30 bits)");
	}
	if (!reader)
		revoke_fast_readers(tree); /* a growth of a writer is a writer */
	g.owner = lock;
	g.start = start;
	g.last = last;
	st = tree->stats;
	if (grow_enter(tree, &g, true, false, &wl)) {
		/* Free: merged at once. */
	} else if (!w) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
		tree_unlock(tree);
		return -EBUSY;
	} else if (w->kind == WAIT_TIMED && !timespec_valid(w->clockid, w->abstime)) {
		tree_unlock(tree);
		return -EINVAL;
	} else {
		unsigned waiting = 0;

		if (w->kind != WAIT_TIMED) { /* the parts, as grow_enter() set them */
			for (unsigned i = 0; i < g.n; i++)
				rl_check_self_deadlock(tree, &g.part[i], reader, call);
		}
		grow_enter(tree, &g, false, w->kind == WAIT_INTERRUPTIBLE, &wl);
		for (unsigned i = 0; i < g.n; i++) {
			parts[i].lock = &g.part[i];
			parts[i].mode = reader ? RANGE_LOCK_READ : RANGE_LOCK_WRITE;
			waiting += atomic_load_explicit(wait_word(&g.part[i]),
							memory_order_relaxed) != 0;
		}
		if (st) {
			STAT_ADD(st, contended, 1);
			STAT_ADD(st, waiting_now, (int64_t)waiting);
			STAT_PEAK(st, waiting_now, waiting_peak);
		}
		tree_unlock(tree);
		wake_list_flush(&wl);
		w->tree = tree;
		w->items = parts;
		w->n = g.n;
		w->growth = &g;
		w->word = WORD_NONE;
		r = wait_for_grants(w);
		if (r)
			return r; /* the growths left; @lock holds [a, b] as before */
		wl.n = 0;
		tree_lock(tree);
		st = tree->stats;
		grow_merge(tree, &g, &wl);
	}
	if (st) {
		if (reader)
			STAT_ADD(st, read_acquired, 1);
		else
			STAT_ADD(st, write_acquired, 1);
	}
	rl_check_resized(tree, lock);
	tree_unlock(tree);
	wake_list_flush(&wl);
	if (__builtin_expect(file_of(tree) != NULL, 0))
		r = file_grow(tree, lock, a, b, reader, w, w ? kinds[w->kind] : RL_FILE_TRY);
	return r;
}

int range_lock_grow(struct range_lock_tree *tree, struct range_lock *lock,
		    uint64_t start, uint64_t last)
{
	struct waiter w;

	waiter_init(&w, WAIT_PLAIN, 0, NULL);
	return grow_common("range_lock_grow", tree, lock, start, last, &w, CALLER);
}

int range_lock_grow_interruptible(struct range_lock_tree *tree, struct range_lock *lock,
				  uint64_t start, uint64_t last)
{
	struct waiter w;

	waiter_init(&w, WAIT_INTERRUPTIBLE, 0, NULL);
	return grow_common("range_lock_grow_interruptible", tree, lock, start, last, &w,
			   CALLER);
}

int range_lock_grow_killable(struct range_lock_tree *tree, struct range_lock *lock,
			     uint64_t start, uint64_t last)
{
	struct waiter w;

	waiter_init(&w, WAIT_KILLABLE, 0, NULL);
	return grow_common("range_lock_grow_killable", tree, lock, start, last, &w, CALLER);
}

int range_lock_grow_timed(struct range_lock_tree *tree, struct range_lock *lock,
			  uint64_t start, uint64_t last, clockid_t clockid,
			  const struct timespec *abstime)
{
	struct waiter w;

	waiter_init(&w, WAIT_TIMED, clockid, abstime);
	return grow_common("range_lock_grow_timed", tree, lock, start, last, &w, CALLER);
}

int range_lock_grow_try(struct range_lock_tree *tree, struct range_lock *lock,
			uint64_t start, uint64_t last)
{
	int r = grow_common("range_lock_grow_try", tree, lock, start, last, NULL, CALLER);

	return r == -EINVAL ? r : r == 0;
}
