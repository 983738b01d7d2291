/* SPDX-License-Identifier: MIT */
/*
 * librangelock: several ranges in one arrival -- range_lock_many() and its
 * interruptible, killable, timed and try forms, range_unlock_many(), and a
 * bound tree's OFD locks for a set.  Entry and waiting are protocol.c's
 * rl_enter_many() and waiting.c's rl_wait_for_grants().
 */
#include "calls.h"

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

/* Inlined in both callers: out of line, a set on a plain tree cost 26
 * instructions more per lock + unlock pair (Callgrind, many-w 702 -> 728). */
static inline __attribute__((always_inline)) int
lock_many_common(const char *call, struct range_lock_tree *tree,
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
	if (__builtin_expect(!tree_lock_entering_how(tree, w ? TL_ACQ_ENTER : TL_ACQ_TRY), 0))
		return RL_GATE_REFUSED; /* a tree with segments: lock_many_segments() */
	if (__builtin_expect(tree->nr_requests + n >= RL_MAX_TREE_REQUESTS, 0)) {
		tree_unlock(tree);
		rl_die(call, items[0].lock, "too many requests in this tree (the limit is "
		       "2^30 - 1024 at once: a waiter counts its blockers in 30 bits)");
	}
	if (writer)
		rl_revoke_fast_readers(tree);
	else
		rl_maybe_bias(tree);
	held = rl_enter_many(tree, items, n, true, false);
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
						       items[i].mode == RANGE_LOCK_READ, call,
						       items[i].lock);
		}
		rl_enter_many(tree, items, n, false, w->kind == WAIT_INTERRUPTIBLE);
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
				rl_stat_granted(st, items[i].mode == RANGE_LOCK_READ, false);
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
		r = rl_wait_for_grants(w);
		if (r)
			return r;
	}
	for (unsigned i = 0; i < n; i++)
		rl_check_acquired(tree, items[i].lock, 0, site);
	return 0;
}

static void unlock_many_local(struct range_lock_tree *tree,
			      const struct range_lock_item *items, unsigned n);

/* The same on a bound tree with segments or without (a give-up at the
 * second level). */
static void unlock_many_bound_local(struct range_lock_tree *tree,
				    const struct range_lock_item *items, unsigned n)
{
	if (tree_is_segmented(tree))
		rl_seg_unlock_many(tree, items, n);
	else
		unlock_many_local(tree, items, n);
}

struct many_hold {
	struct range_lock_tree *tree;
	const struct range_lock_item *items;
	unsigned n;
};

static void unlock_many_on_cancel(void *arg)
{
	struct many_hold *h = arg;

	unlock_many_bound_local(h->tree, h->items, h->n);
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
int rl_file_take_all(struct range_lock_file *f, const struct range_lock_item *items,
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
	r = rl_file_take_all(rl_bound_file(file_of(tree)), items, n, w, kind,
			     unlock_many_on_cancel, &h);
	if (r)
		unlock_many_bound_local(tree, items, n);
	return r;
}

/* A set on a tree with segments: all in one segment, a set of its tree;
 * else one arrival across segments (seg_sets.c). */
static __attribute__((noinline)) int
lock_many_segments(const char *call, struct range_lock_tree *tree,
		   const struct range_lock_item *items, unsigned n, struct waiter *w,
		   void *site)
{
	struct range_lock_tree *t;

	int r;

	check_items(call, tree, items, n);
	if (!n)
		return 0;
	/* The gate (seg_gate.c): in the segments, or in the tree itself run
	 * as a plain tree; refused where the mode changed meanwhile. */
	do {
		uintptr_t v = __atomic_load_n(&tree->lock_word, __ATOMIC_ACQUIRE);

		if (v == TL_SEGMENTED) {
			t = rl_seg_set_tree(tree, items, n);
			r = t ? lock_many_common(call, t, items, n, w, site)
			      : rl_seg_lock_many(call, tree, items, n, w, site);
		} else if (!w && (v | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS)) {
			rl_gate_count_busy(segments_of(tree));
			r = -EBUSY; /* a trylock never waits for a drain */
		} else { /* (a drain: waits for the tree's internal lock) */
			r = lock_many_common(call, tree, items, n, w, site);
		}
	} while (r == RL_GATE_REFUSED);
	return r;
}

/* A set on a bound tree, with segments or not: the local level, then the
 * OFD locks of every member (out of line: off the others' path). */
static __attribute__((noinline)) int
lock_many_bound(const char *call, struct range_lock_tree *tree,
		const struct range_lock_item *items, unsigned n, struct waiter *w,
		void *site)
{
	static const enum rl_file_wait kinds[] = {
		[WAIT_PLAIN] = RL_FILE_PLAIN,
		[WAIT_INTERRUPTIBLE] = RL_FILE_INTERRUPTIBLE,
		[WAIT_KILLABLE] = RL_FILE_KILLABLE,
		[WAIT_TIMED] = RL_FILE_TIMED,
	};
	int r;

	check_items(call, tree, items, n);
	check_items_file(call, items, n);
	if (is_segments(file_of(tree)))
		r = lock_many_segments(call, tree, items, n, w, site);
	else
		r = lock_many_common(call, tree, items, n, w, site);
	if (r == 0 && n)
		r = file_acquire_many(call, tree, items, n, w,
				      w ? kinds[w->kind] : RL_FILE_TRY);
	return r;
}

static int lock_many_two_levels(const char *call, struct range_lock_tree *tree,
				const struct range_lock_item *items, unsigned n,
				struct waiter *w, void *site)
{
	struct range_lock_file *f = tree ? file_of(tree) : NULL;

	/* Readers first (defer.c): a set with a writer defers before it
	 * enters (the entries below never defer again). */
	if (w && tree && items && __builtin_expect(tree_defers_writers(tree), 0)) {
		for (unsigned i = 0; i < n; i++) {
			if (items[i].mode != RANGE_LOCK_READ) {
				rl_defer_writer(tree, w);
				break;
			}
		}
	}
	if (__builtin_expect(f != NULL, 0)) {
		if (is_unbound_segments(f))
			return lock_many_segments(call, tree, items, n, w, site);
		return lock_many_bound(call, tree, items, n, w, site);
	}
	return lock_many_common(call, tree, items, n, w, site);
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

	if (!timespec_valid(clockid, abstime)) /* up front, as glibc (wait.h) */
		return -EINVAL;
	waiter_init(&w, WAIT_TIMED, clockid, abstime);
	return lock_many_two_levels("range_lock_many_timed", tree, items, n, &w, CALLER);
}

int range_lock_many_try(struct range_lock_tree *tree, const struct range_lock_item *items,
			unsigned n)
{
	int r = lock_many_two_levels("range_lock_many_try", tree, items, n, NULL, CALLER);

	/* Busy: -EBUSY here, -EAGAIN from a bound tree's second level. */
	return r == 0 ? 1 : r == -ENOMEM ? r : 0; /* (-ENOMEM: segments) */
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
			/* every member released before any completion runs */
			bool held = rl_async_hold();

			for (unsigned j = 0; j < n; j++) {
				bool reader = items[j].mode == RANGE_LOCK_READ;

				unlock_common(reader ? "range_read_unlock" : "range_write_unlock",
					      tree, items[j].lock, reader);
			}
			rl_async_release(held);
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
		rl_remove_request(tree, lock, &wl);
	}
	tree_unlock(tree);
	wake_list_flush(&wl);
}

void range_unlock_many(struct range_lock_tree *tree, const struct range_lock_item *items,
		       unsigned n)
{
	struct range_lock_file *f;

	if (!tree || (n && !items))
		rl_die("range_unlock_many", NULL, "NULL tree or set");
	f = file_of(tree);
	if (__builtin_expect(f != NULL, 0)) {
		if (is_unbound_segments(f)) {
			rl_seg_unlock_many(tree, items, n);
			return;
		}
		/* Before the local unlock: see file_release(). */
		for (unsigned i = 0; i < n; i++)
			if (items[i].lock)
				rl_file_unlock(rl_bound_file(f), items[i].lock->start,
					       items[i].lock->last,
					       items[i].mode == RANGE_LOCK_READ);
		if (is_segments(f)) { /* bound, with segments */
			rl_seg_unlock_many(tree, items, n);
			return;
		}
	}
	unlock_many_local(tree, items, n);
}
