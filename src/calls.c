/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the public calls on one range: lock (every kind), trylock,
 * unlock, and the bound trees' hooks around them; the 32-bit time shims of
 * every timed call.
 *
 * The paths every call takes -- enter(), insert_scanned(),
 * unlock_common() -- are in calls.h, inlined into each public call
 * (always_inline): the uncontended calls cost no function call.  What they
 * do under tree_lock (scan, overtake, insert, remove) is in protocol.c,
 * with the DESIGN comment; waiting is in waiting.c.  The second level (a
 * tree bound to a file, file_lock.c) is hooked in at the public call
 * level, below.  Sets are in sets.c, grow and shrink in grow.c, the
 * asynchronous submission in async.c.
 */
#include "calls.h"

/* @fast: as enter_how()'s (calls.h). */
static inline __attribute__((always_inline)) int
lock_common_how(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		bool reader, struct waiter *w, int subclass, void *site, bool fast)
{
	struct entry_scan scan;
	uint32_t blockers;
	int r;

	r = enter_how(call, tree, lock, reader, w, fast);
	if (r != ENTER_TREE) /* held through the word, or gave up, or refused */
		return r == ENTER_HELD ? 0 : r == ENTER_REFUSED ? RL_GATE_REFUSED : r;
	if (reader)
		rl_maybe_bias(tree);
	else
		rl_revoke_fast_readers(tree);
	rl_scan_entry(tree, lock, reader, false, &scan);
	if (scan.blockers) {
		if (w->kind == WAIT_TIMED && scan.must_wait &&
		    !timespec_valid(w->clockid, w->abstime)) {
			tree_unlock(tree);
			return -EINVAL;
		}
		/* Overtaking or not: the same code would deadlock once the
		 * requests it passes are marked (POLICY rule 8). */
		if (w->kind != WAIT_TIMED)
			rl_check_self_deadlock(tree, lock, reader, call, lock);
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
		r = rl_wait_for_grant(w);
		if (r)
			return r;
	} else if (w->word != WORD_NONE) {
		rl_probe_wait(wait_end, tree, lock, reader); /* rl_word_wait() began it */
	}
	rl_check_acquired(tree, lock, subclass, site);
	return 0;
}

static inline __attribute__((always_inline)) int
lock_common(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
	    bool reader, struct waiter *w, int subclass, void *site)
{
	return lock_common_how(call, tree, lock, reader, w, subclass, site, true);
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
struct local_hold {
	const char *call;
	struct range_lock_tree *tree;
	struct range_lock *lock;
	bool reader;
};

static void unlock_local_on_cancel(void *arg)
{
	struct local_hold *h = arg;

	rl_unlock_local(h->call, h->tree, h->lock, h->reader);
}

int rl_file_acquire(const char *call, struct range_lock_tree *tree,
		    struct range_lock *lock, bool reader, struct waiter *w,
		    enum rl_file_wait kind)
{
	struct range_lock_file *f = rl_bound_file(file_of(tree));
	struct local_hold h = { call, tree, lock, reader };
	int r;

	r = rl_file_lock(f, lock->start, lock->last, reader, kind,
			 w ? w->clockid : 0, w ? w->abstime : NULL,
			 unlock_local_on_cancel, &h);
	if (r)
		rl_unlock_local(call, tree, lock, reader);
	return r;
}

/* Readers first (defer.c) on a tree with segments: a writer defers once,
 * before its dispatch (a segment's tree never defers: enter()). */
static inline __attribute__((always_inline)) void
seg_defer_writer(struct range_lock_tree *tree, bool reader, const struct waiter *w)
{
	if (!reader && __builtin_expect(tree_defers_writers(tree), 0))
		rl_defer_writer(tree, w);
}

/* @f: the tree's second-level slot, as the caller read it (tree_file()). */
static inline __attribute__((always_inline)) int
lock_two_levels_f(const char *call, struct range_lock_tree *tree,
		  struct range_lock_file *f, struct range_lock *lock, bool reader,
		  struct waiter *w, int subclass, void *site)
{
	static const enum rl_file_wait kinds[] = {
		[WAIT_PLAIN] = RL_FILE_PLAIN,
		[WAIT_INTERRUPTIBLE] = RL_FILE_INTERRUPTIBLE,
		[WAIT_KILLABLE] = RL_FILE_KILLABLE,
		[WAIT_TIMED] = RL_FILE_TIMED,
	};
	int r;

	if (__builtin_expect(f != NULL, 0)) {
		if (is_segments(f)) { /* a tree with segments (segments.c) */
			struct range_lock_tree *t = rl_seg_one(f, lock);

			/* Within one stripe: that segment's tree, unless the
			 * gate refuses it there (seg_gate.c). */
			if (is_unbound_segments(f)) {
				if (t) { /* its segment's tree */
					seg_defer_writer(tree, reader, w);
					r = rl_lock_in(call, t, lock, reader, w, subclass,
						       CHECKS_SITE(site));
					if (__builtin_expect(r != RL_GATE_REFUSED, 1))
						return r;
				} else if (lock && rl_gate_wide_range(f, lock)) {
					/* the tree itself, run as a plain tree
					 * (enter() defers a writer, readers first) */
					r = lock_common(call, tree, lock, reader, w, subclass,
							site);
					if (__builtin_expect(r != RL_GATE_REFUSED, 1))
						return r;
				} else {
					seg_defer_writer(tree, reader, w);
				}
				return rl_seg_lock(call, tree, lock, reader, w, subclass,
						   CHECKS_SITE(site));
			}
			/* bound: the local level in the segments, then the file */
			if (file_range_bad(call, tree, lock, w->kind != WAIT_PLAIN))
				return -EINVAL;
			seg_defer_writer(tree, reader, w);
			r = t ? rl_lock_in(call, t, lock, reader, w, subclass,
					   CHECKS_SITE(site))
			      : RL_GATE_REFUSED;
			if (r == RL_GATE_REFUSED)
				r = rl_seg_lock(call, tree, lock, reader, w, subclass,
						CHECKS_SITE(site));
			if (r == 0)
				r = rl_file_acquire(call, tree, lock, reader, w,
						    kinds[w->kind]);
			return r;
		}
		if (file_range_bad(call, tree, lock, w->kind != WAIT_PLAIN))
			return -EINVAL;
	}
	r = lock_common(call, tree, lock, reader, w, subclass, site);
	if (__builtin_expect(r == 0 && file_of(tree) != NULL, 0))
		r = rl_file_acquire(call, tree, lock, reader, w, kinds[w->kind]);
	return r;
}

static inline __attribute__((always_inline)) int
lock_two_levels(const char *call, struct range_lock_tree *tree,
		struct range_lock *lock, bool reader, struct waiter *w,
		int subclass, void *site)
{
	return lock_two_levels_f(call, tree, tree_file(tree), lock, reader, w, subclass,
				 site);
}

/* ---- a tree with segments, one stripe: the fast paths ---------------- */

/*
 * The uncontended request within one stripe of a tree with segments
 * (rl_seg_one()): held in its segment's tree @t through that tree's
 * fast-read slot or lock word, by exactly the steps enter()'s fast paths
 * take there -- so the same grants -- without the frame and the checks of
 * the general path.  It needs no look at the gate (seg_gate.c), because
 * neither step can succeed in a segment the gate refuses: a closed
 * segment's word is TL_CLOSED and a closing one's is never 0 (it is not
 * empty), so the CAS from 0 fails on both; and a closing or closed
 * segment is not biased (close_segment() revokes its fast readers under
 * its lock, and only an entry the gate let in biases a tree again:
 * rl_maybe_bias()), so a fast read there backs out.  The gate's refusal
 * is the failure of the fast step itself.
 *
 * No call on it, so that the function it is inlined into needs no frame:
 * whatever would call something returns instead, and the caller jumps
 * (a tail call) to the general path (seg_..._lock_in()):
 *   SEG_HELD     held;
 *   SEG_COUNT    held, and the tree must see it (statistics on, or a
 *                revoker materialised the fast read: as enter(), a
 *                tree_lock() round, seg_sync());
 *   SEG_TRIED    the fast steps failed, @lock as found (its flags 0): the
 *                general path goes on from there (enter_how() with @fast
 *                false: word mode, the tree, the gate), so that a request
 *                that meets a holder tries the CAS once, as in enter();
 *   SEG_UNTRIED  nothing that counts was tried (a race detector runs, the
 *                thread has no slot or no cached id yet, the checking
 *                mode, misuse): the general path from the start.
 */
enum seg_fast { SEG_HELD, SEG_COUNT, SEG_TRIED, SEG_UNTRIED };

static inline __attribute__((always_inline)) enum seg_fast
seg_fast_acquire(struct range_lock_tree *t, struct range_lock *lock, bool reader)
{
#if RANGELOCK_CHECKS
	(void)t;
	(void)lock;
	(void)reader;
	return SEG_UNTRIED; /* every request through the checked tree */
#else
	uintptr_t expected = 0;
	uint32_t tid;

	if (rl_tools_on() || is_linked(lock)) /* (misuse: the general path names it) */
		return SEG_UNTRIED;
	if (reader && (tree_flags(t) & RL_TREE_BIASED)) {
		switch (fast_read_acquire_how(t, lock, true)) {
		case FAST_READ_HELD:
			return SEG_HELD;
		case FAST_READ_MATERIALISED:
			return SEG_COUNT;
		case FAST_READ_NO_SLOT:
			return SEG_UNTRIED;
		case FAST_READ_NO:
			break;
		}
	}
	tid = rl_cached_tid;
	if (__builtin_expect(!tid, 0))
		return SEG_UNTRIED; /* (rl_thread_id() would call) */
	lock->owner_tid = tid;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	set_word_tree(lock, t);
	/* tree_fast_acquire() without a race detector */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(
				     tree_lock_word(t), &expected, fast_value(lock, reader),
				     memory_order_acq_rel, memory_order_relaxed), 1))
		/* word_held(): statistics count in the tree */
		return __atomic_load_n(&t->stats, __ATOMIC_RELAXED) ? SEG_COUNT : SEG_HELD;
	lock->rb_parent_flags = 0;
	return SEG_TRIED;
#endif
}

/* SEG_COUNT: the tree sees the hold (enter()'s tree_lock() round). */
__attribute__((noinline)) static void seg_sync(struct range_lock_tree *t)
{
	tree_lock(t);
	tree_unlock(t);
}

/*
 * The release of such a hold (the caller saw no race detector), again
 * without a look at the gate: the CAS on the slot's value (@t | PUB) or on
 * @t's word (the request's fast value) succeeds only if @lock holds its
 * range there, fast -- which pins the segments (the gate's G1: a request
 * present in a segment keeps the tree in its segments).  False: nothing
 * changed, *@seen what the word's CAS found; the caller goes the general
 * way from there (unlock_common_how() with @tried: word waiters to wake,
 * a hold through the tree, misuse), after the gate's look (a hold in the
 * tree itself while it runs as a plain tree: that tree's unlock, from the
 * start).
 */
static inline __attribute__((always_inline)) bool
seg_fast_release(struct range_lock_tree *t, struct range_lock *lock, bool reader,
		 uintptr_t *seen)
{
	uint32_t owner = lock->owner_tid;

	if (owner & RL_SLOT_TAG) {
		if (!reader || !fast_read_release_how(t, owner, true))
			return false;
		lock->rb_parent_flags = 0;
		lock->owner_tid = 0;
		return true;
	}
	/* tree_fast_release() without a race detector */
	*seen = fast_value(lock, reader);
	if (!atomic_compare_exchange_strong_explicit(tree_lock_word(t), seen, 0,
						     memory_order_release, memory_order_relaxed))
		return false;
	lock->rb_parent_flags = 0;
	return true;
}

/*
 * The plain lock calls on a tree with a second level (@f: its slot,
 * tree_file(); segments, or a file): out of line, so that the public call
 * tests its slot first and jumps here (a tail call) before it builds its
 * frame for the plain tree's inlined path.  A range within one stripe of
 * an unbound tree with segments tries the fast steps in its segment
 * (seg_fast_acquire(): no frame either); the rest goes on out of line
 * again, by tail calls: in that segment's tree, then the gate if it
 * refuses (seg_..._lock_in()), or the general dispatch
 * (lock_two_levels_f(): other ranges, bound trees, misuse).  The unlock
 * calls likewise.
 */
#define DEFINE_SEG_ONE_CALLS(mode, reader)                                       \
	__attribute__((noinline)) static void                                     \
	seg_##mode##_lock_in(struct range_lock_tree *tree, struct range_lock_tree *t, \
			     struct range_lock *lock, void *site, bool fast)      \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		seg_defer_writer(tree, reader, &w); /* defer.c */              \
		if (lock_common_how("range_" #mode "_lock", t, lock, reader, &w, \
				    0, site, fast) == RL_GATE_REFUSED)           \
			rl_seg_lock("range_" #mode "_lock", tree, lock, reader, \
				    &w, 0, site); /* seg_gate.c */               \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	level2_##mode##_lock_slow(struct range_lock_tree *tree,                  \
				  struct range_lock_file *f,                     \
				  struct range_lock *lock, void *site)           \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		lock_two_levels_f("range_" #mode "_lock", tree, f, lock, reader, \
				  &w, 0, site);                                  \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	seg_##mode##_lock_span(struct range_lock_tree *tree,                     \
			       struct range_lock_file *f,                        \
			       struct range_lock *lock, void *site)              \
	{ /* lock_two_levels_f() for a range over several stripes */             \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		if (lock && rl_gate_wide_range(f, lock)) {                       \
			/* the tree itself, run as a plain tree (enter()   \
			 * defers a writer of a readers-first tree) */     \
			if (lock_common("range_" #mode "_lock", tree, lock, reader, \
					&w, 0, site) != RL_GATE_REFUSED)        \
				return;                                          \
		} else {                                                         \
			seg_defer_writer(tree, reader, &w); /* defer.c */      \
		}                                                                \
		rl_seg_lock("range_" #mode "_lock", tree, lock, reader, &w, 0,  \
			    site);                                               \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	level2_##mode##_lock(struct range_lock_tree *tree, struct range_lock_file *f, \
			     struct range_lock *lock, void *site)                 \
	{                                                                        \
		struct range_lock_tree *t;                                      \
		if (__builtin_expect(!is_unbound_segments(f), 0)) {              \
			level2_##mode##_lock_slow(tree, f, lock, site);         \
			return; /* a bound tree */                               \
		}                                                                \
		if ((t = rl_seg_one(f, lock)) == NULL) {                         \
			seg_##mode##_lock_span(tree, f, lock, site);             \
			return;                                                  \
		}                                                                \
		if (!reader && __builtin_expect(tree_defers_writers(tree), 0)) { \
			/* readers first: defer before any fast step */        \
			seg_##mode##_lock_in(tree, t, lock, site, true);         \
			return;                                                  \
		}                                                                \
		switch (seg_fast_acquire(t, lock, reader)) {                     \
		case SEG_HELD:                                                   \
			return;                                                  \
		case SEG_COUNT:                                                  \
			seg_sync(t);                                             \
			return;                                                  \
		case SEG_TRIED:                                                  \
			seg_##mode##_lock_in(tree, t, lock, site, false);        \
			return;                                                  \
		case SEG_UNTRIED:                                                \
			seg_##mode##_lock_in(tree, t, lock, site, true);         \
			return;                                                  \
		}                                                                \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	seg_##mode##_unlock_in(struct range_lock_tree *tree, struct range_lock_tree *t, \
			       struct range_lock *lock, uintptr_t seen)           \
	{                                                                        \
		if (!rl_gate_segments(tree)) /* held in the tree itself */       \
			unlock_common("range_" #mode "_unlock", tree, lock, reader); \
		else                                                             \
			unlock_common_how("range_" #mode "_unlock", t, lock,     \
					  reader, true, seen);                   \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	seg_##mode##_unlock_span(struct range_lock_tree *tree, struct range_lock *lock) \
	{ /* file_release() for a range over several stripes */                  \
		if (!rl_gate_segments(tree)) /* held in the tree itself */       \
			unlock_common("range_" #mode "_unlock", tree, lock, reader); \
		else                                                             \
			rl_seg_unlock("range_" #mode "_unlock", tree, lock, reader); \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	level2_##mode##_unlock(struct range_lock_tree *tree, struct range_lock *lock) \
	{                                                                        \
		if (!file_release("range_" #mode "_unlock", tree, lock, reader)) \
			unlock_common("range_" #mode "_unlock", tree, lock, reader); \
	}                                                                        \
	__attribute__((noinline)) static void                                     \
	level2_##mode##_unlock_fast(struct range_lock_tree *tree,                \
				    struct range_lock_file *f,                   \
				    struct range_lock *lock)                     \
	{                                                                        \
		struct range_lock_tree *t;                                      \
		uintptr_t seen = 0;                                              \
		if (__builtin_expect(!is_unbound_segments(f), 0) || rl_tools_on()) { \
			level2_##mode##_unlock(tree, lock);                      \
			return;                                                  \
		}                                                                \
		if ((t = rl_seg_one(f, lock)) == NULL) {                         \
			seg_##mode##_unlock_span(tree, lock);                    \
			return;                                                  \
		}                                                                \
		if (__builtin_expect(seg_fast_release(t, lock, reader, &seen), 1)) \
			return;                                                  \
		seg_##mode##_unlock_in(tree, t, lock, seen);                     \
	}

DEFINE_SEG_ONE_CALLS(read, true)
DEFINE_SEG_ONE_CALLS(write, false)

/*
 * The public lock and unlock calls test the tree's second-level slot and
 * jump (tail calls) either to the plain tree's path or to the second
 * level's (above), both out of line: the call itself builds no frame,
 * which GCC would otherwise build for the plain tree's inlined path before
 * the test (no shrink-wrapping there).  A jump more for a plain tree, some
 * 30 instructions less for a range within one stripe of a tree with
 * segments (docs/benchmarks.md, "Instructions per operation").
 */
#if RANGELOCK_CHECKS
#define PLAIN_SITE_PARAM , void *site
#define PLAIN_SITE site
#define PLAIN_SITE_ARG , CALLER
#else /* (a constant argument would still be passed) */
#define PLAIN_SITE_PARAM
#define PLAIN_SITE NULL
#define PLAIN_SITE_ARG
#endif
#define DEFINE_LOCK_CALLS(mode, reader)                                          \
	__attribute__((noinline, nonnull(1))) static void                          \
	plain_##mode##_lock(struct range_lock_tree *tree, struct range_lock *lock \
			    PLAIN_SITE_PARAM)                                    \
	{                                                                        \
		struct waiter w;                                                \
		waiter_init(&w, WAIT_PLAIN, 0, NULL);                           \
		lock_two_levels_f("range_" #mode "_lock", tree, NULL, lock, reader, \
				  &w, 0, PLAIN_SITE);                            \
	}                                                                        \
	void range_##mode##_lock(struct range_lock_tree *tree,                   \
				 struct range_lock *lock)                        \
	{                                                                        \
		struct range_lock_file *f;                                      \
		if (__builtin_expect(!tree, 0))                                  \
			rl_die("range_" #mode "_lock", NULL, "NULL tree or request"); \
		f = file_of(tree);                                               \
		if (__builtin_expect(f != NULL, 0)) {                            \
			level2_##mode##_lock(tree, f, lock, CHECKS_SITE(CALLER)); \
			return;                                                  \
		}                                                                \
		plain_##mode##_lock(tree, lock PLAIN_SITE_ARG);                 \
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
		if (!timespec_valid(clockid, abstime)) /* up front, as glibc */  \
			return -EINVAL;                                          \
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
		if (!timespec_valid(clockid, w.abstime))                         \
			return -EINVAL;                                          \
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

	if (r != ENTER_TREE) /* fast held, or busy in word mode, or refused */
		return r == ENTER_REFUSED ? RL_GATE_REFUSED : r == ENTER_HELD;
	struct entry_scan scan;

	if (reader)
		rl_maybe_bias(tree);
	else
		rl_revoke_fast_readers(tree);

	st = tree->stats;
	/* Granted exactly when a lock call would be held at once (POLICY
	 * rule 3): in a FIFO tree when nothing conflicts, in the default
	 * policy also by overtaking unmarked waiters. */
	rl_scan_entry(tree, lock, reader, tree_is_fifo(tree), &scan);
	busy = scan.must_wait;
	if (busy) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
	} else {
		rl_insert_request(tree, lock, reader, 0,
				  scan.blockers ? rl_overtake(tree, lock, reader, &scan)
						: tree->seqnum++);
		if (st)
			rl_stat_granted(st, reader, false);
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
	struct range_lock_file *f = tree ? file_of(tree) : NULL;

	if (__builtin_expect(f != NULL, 0)) {
		if (is_segments(f)) { /* a tree with segments (segments.c) */
			struct range_lock_tree *t = rl_seg_one(f, lock);
			int r;

			/* bound: the local level in the segments, then the file */
			if (!is_unbound_segments(f))
				file_range_bad(call, tree, lock, false);
			/* within one stripe: that segment's tree, unless the
			 * gate refuses it there (seg_gate.c) */
			r = t ? rl_trylock_in(call, t, lock, reader, CHECKS_SITE(site))
			      : RL_GATE_REFUSED;
			if (r == RL_GATE_REFUSED)
				r = rl_seg_lock(call, tree, lock, reader, NULL, 0,
						CHECKS_SITE(site));
			if (is_unbound_segments(f))
				return r;
			if (r == 1 &&
			    rl_file_acquire(call, tree, lock, reader, NULL, RL_FILE_TRY))
				return 0; /* and unlocked locally */
			return r;
		}
		file_range_bad(call, tree, lock, false);
	}
	if (!trylock_common(call, tree, lock, reader, site))
		return 0;
	if (__builtin_expect(file_of(tree) != NULL, 0) &&
	    rl_file_acquire(call, tree, lock, reader, NULL, RL_FILE_TRY))
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

/* The one-range calls on a segment's tree (segments.c): out of line. */
int rl_lock_in(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
	       bool reader, struct waiter *w, int subclass, void *site)
{
	return lock_common(call, tree, lock, reader, w, subclass, site);
}

int rl_trylock_in(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		  bool reader, void *site)
{
	return trylock_common(call, tree, lock, reader, site);
}

void rl_unlock_in(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		  bool reader)
{
	unlock_common(call, tree, lock, reader);
}

/* ---- release (check_held(): protocol.h; downgrade: protocol.c) -------- */

/*
 * word_release() when word waiters changed the word (or a displacer): out
 * of line, off the uncontended path.  The loads of the flags and the tree
 * race, formally, with a displacer's plain stores into the same request
 * (rl_insert_request(), under tree_lock): benign, as said above, but a data
 * race to ThreadSanitizer, which instruments this library in the sanitizer
 * builds; so this function is not instrumented.  (Every field of a fast
 * hold that its user writes, owner_tid, start and last aside, is one a
 * displacer rewrites: no record of the holder's could avoid the race.)
 */
__attribute__((noinline, no_sanitize("thread"))) bool
rl_word_release_waited(struct range_lock_tree *tree, struct range_lock *lock,
		       bool reader, uintptr_t seen)
{
	if (!tl_is_fast(seen))
		return false;
	/* The waiter asking for the word is not its holder. */
	if (tl_is_handoff(seen) && (seen & ~TL_FAST_BITS) == (uintptr_t)lock)
		return false;
	rl_race_ok(&lock->rb_parent_flags, sizeof(lock->rb_parent_flags));
	rl_race_ok(&lock->rb_right, sizeof(lock->rb_right));
	if (__atomic_load_n(&lock->rb_parent_flags, __ATOMIC_RELAXED) !=
	    ((reader ? RL_READER : 0) | RL_LINKED) ||
	    __atomic_load_n(&lock->rb_right, __ATOMIC_RELAXED) !=
	    (struct range_lock *)(void *)tree)
		return false;
	return rl_tree_fast_release_waited(tree_lock_word(tree), fast_value(lock, reader),
					   seen);
}
void rl_unlock_local(const char *call, struct range_lock_tree *tree,
		  struct range_lock *lock, bool reader)
{
	if (tree_is_segmented(tree)) /* a bound tree with segments */
		rl_seg_unlock(call, tree, lock, reader);
	else
		unlock_common(call, tree, lock, reader);
}

__attribute__((noinline, nonnull)) static void plain_read_unlock(struct range_lock_tree *tree,
								   struct range_lock *lock)
{
	unlock_common("range_read_unlock", tree, lock, true);
}

void range_read_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct range_lock_file *f;

	if (__builtin_expect(!tree || !lock, 0))
		rl_die("range_read_unlock", NULL, "NULL tree or request");
	f = file_of(tree);
	if (__builtin_expect(f != NULL, 0)) {
		level2_read_unlock_fast(tree, f, lock);
		return;
	}
	plain_read_unlock(tree, lock);
}

__attribute__((noinline, nonnull)) static void plain_write_unlock(struct range_lock_tree *tree,
								   struct range_lock *lock)
{
	unlock_common("range_write_unlock", tree, lock, false);
}

void range_write_unlock(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct range_lock_file *f;

	if (__builtin_expect(!tree || !lock, 0))
		rl_die("range_write_unlock", NULL, "NULL tree or request");
	f = file_of(tree);
	if (__builtin_expect(f != NULL, 0)) {
		level2_write_unlock_fast(tree, f, lock);
		return;
	}
	plain_write_unlock(tree, lock);
}

/* The segment layer's downgrade, or the plain tree's (protocol.c). */
void range_downgrade_write(struct range_lock_tree *tree, struct range_lock *lock)
{
	check_args("range_downgrade_write", tree, lock);
	if (__builtin_expect(tree_is_segmented(tree), 0) && rl_gate_segments(tree)) {
		rl_seg_downgrade(tree, lock);
		return;
	}
	rl_downgrade_write(tree, lock);
}
