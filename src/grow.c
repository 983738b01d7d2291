/* SPDX-License-Identifier: MIT */
/*
 * librangelock: changing a held range -- range_lock_shrink() and
 * range_lock_grow() with its interruptible, killable, timed and try forms,
 * on both levels of a bound tree.  The rules are protocol.c's
 * rl_grow_enter(), rl_grow_merge() and rl_shrink_request(); a tree with
 * segments grows in seg_grow.c (rl_seg_grow()).
 */
#include "calls.h"

/* ---- changing a held range: shrink and grow --------------------------- */

/*
 * Under tree_lock, for the calls that change a held range: a read held in a
 * slot is moved into the tree first (revocation: the tree reads through the
 * tree for a while), one held through the lock word was materialised by
 * tree_lock(); then it must be held in this tree, in either mode.
 */
static inline __attribute__((always_inline)) bool
held_in_tree(const char *call, struct range_lock_tree *tree,
	     struct range_lock *lock)
{
	if (lock->owner_tid & RL_SLOT_TAG)
		rl_revoke_fast_readers(tree);
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
	if (tree_is_segmented(tree) && rl_gate_segments(tree))
		return rl_seg_shrink(tree, lock, start, last);
	wl.n = 0;
	tree_lock(tree);
	reader = held_in_tree("range_lock_shrink", tree, lock);
	a = lock->start;
	b = lock->last;
	f = rl_bound_file(file_of(tree)); /* (a tree with segments run plain) */
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
	rl_shrink_request(tree, lock, start, last, &wl);
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
 * added parts is held at the OFD level: rl_file_take_all()). */
static void shrink_back(struct grow_hold *h)
{
	struct wake_list wl;

	if (tree_is_segmented(h->tree) && rl_gate_segments(h->tree)) {
		(void)rl_seg_shrink_local(h->tree, h->lock, h->start, h->last);
		return;
	}
	wl.n = 0;
	tree_lock(h->tree);
	rl_shrink_request(h->tree, h->lock, h->start, h->last, &wl);
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
	r = rl_file_take_all(rl_bound_file(file_of(tree)), items, np, w, kind,
			     shrink_back_on_cancel, &h);
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
	if (tree_is_segmented(tree) && rl_gate_segments(tree)) {
		struct range_lock_file *f = rl_bound_file(file_of(tree));

		a = lock->start; /* (only its owner changes them) */
		b = lock->last;
		if (f && !rl_file_range_ok(start, last))
			return -EINVAL;
		r = rl_seg_grow(call, tree, lock, start, last, w, &reader);
		if (r == 0 && f && (a != start || b != last))
			r = file_grow(tree, lock, a, b, reader, w,
				      w ? kinds[w->kind] : RL_FILE_TRY);
		return r;
	}
	wl.n = 0;
	tree_lock(tree);
	reader = held_in_tree(call, tree, lock);
	a = lock->start;
	b = lock->last;
	if (start > a || last < b ||
	    (rl_bound_file(file_of(tree)) && !rl_file_range_ok(start, last))) {
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
		rl_revoke_fast_readers(tree); /* a growth of a writer is a writer */
	g.owner = lock;
	g.start = start;
	g.last = last;
	st = tree->stats;
	if (rl_grow_enter(tree, &g, true, false, &wl)) {
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

		if (w->kind != WAIT_TIMED) { /* the parts, as rl_grow_enter() set them */
			for (unsigned i = 0; i < g.n; i++)
				rl_check_self_deadlock(tree, &g.part[i], reader, call,
						       &g.part[i]);
		}
		rl_grow_enter(tree, &g, false, w->kind == WAIT_INTERRUPTIBLE, &wl);
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
		r = rl_wait_for_grants(w);
		if (r)
			return r; /* the growths left; @lock holds [a, b] as before */
		wl.n = 0;
		tree_lock(tree);
		st = tree->stats;
		rl_grow_merge(tree, &g, &wl);
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
	if (__builtin_expect(rl_bound_file(file_of(tree)) != NULL, 0))
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

	if (!timespec_valid(clockid, abstime)) /* up front, as glibc (wait.h) */
		return -EINVAL;
	waiter_init(&w, WAIT_TIMED, clockid, abstime);
	return grow_common("range_lock_grow_timed", tree, lock, start, last, &w, CALLER);
}

int range_lock_grow_try(struct range_lock_tree *tree, struct range_lock *lock,
			uint64_t start, uint64_t last)
{
	int r = grow_common("range_lock_grow_try", tree, lock, start, last, NULL, CALLER);

	return r == -EINVAL || r == -ENOMEM ? r : r == 0;
}
