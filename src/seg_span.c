/* SPDX-License-Identifier: MIT */
/*
 * librangelock: spanning requests of segmented trees (segments.c has the
 * design): one arrival into every segment a range meets, the parts' wait,
 * the claim, and the give-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_internal.h"

/* ---- spanning requests ------------------------------------------------ */

/* A span of @lock for [start, last] (its range, but for a grow's new one),
 * @n parts, none in a tree. */
struct span *rl_span_new_range(struct range_lock_tree *tree, struct range_lock *lock,
				bool reader, unsigned n, uint64_t start, uint64_t last)
{
	struct rl_segments *s = segments_of(tree);
	struct span *sp = rl_span_alloc(n);

	if (!sp)
		return NULL;
	sp->top = tree;
	sp->owner = lock;
	sp->n = n;
	sp->reader = reader;
	sp->in_set = false;
	sp->held = false;
	sp->user = NULL;
	atomic_init(&sp->astate, 0);
	for (unsigned i = 0; i < n; i++) {
		struct seg_part p = rl_seg_part(s, start, last, i);
		struct range_lock *r = PART(sp, i);

		memset(&sp->part[i], 0, sizeof(sp->part[i]));
		sp->part[i].arg = sp; /* span_of_part() */
		r->start = p.start;
		r->last = p.last;
		r->subtree_last = p.last;
		r->owner_tid = i == 0 ? RL_PART_FIRST : RL_PART_TAG;
	}
	sp->counted = SPAN_OUT;
	sp->wait_start_ns = 0;
	return sp;
}

/*
 * STATISTICS.  A spanning request counts once, as a plain request does, in
 * the segment of its first part and under that segment's lock; its parts
 * count nothing (is_part()).  sp->counted says what it counted itself as
 * (SPAN_WAITING, SPAN_HELD, SPAN_OUT), kept whether statistics are on or
 * not, so that a recount (enable, reset: every segment locked) counts the
 * request by its first part as it will uncount itself.  It changes with
 * that part's presence in its tree: SPAN_OUT only as the part leaves.
 *
 * rl_span_count(): the request moves to @to (SPAN_HELD after its wait;
 * SPAN_OUT at its unlock, or at a give-up: @why -EINTR, -ETIMEDOUT, or
 * -ECANCELED for a cancellation), under part[0]'s segment lock @t0.
 */

void rl_span_count(struct span *sp, struct range_lock_tree *t0, int to, int why)
{
	struct range_lock_stats *st = t0->stats;

	if (st && sp->counted == SPAN_WAITING) {
		if (sp->wait_start_ns)
			rl_stat_wait_time(st, rl_now_ns() - sp->wait_start_ns);
		if (to == SPAN_HELD) {
			rl_stat_granted(st, sp->reader, true);
			stat_spanning(st, sp->n, 1);
		} else {
			STAT_ADD(st, waiting_now, -1);
			if (!sp->in_set) /* (a set counts its give-up once) */
				stat_give_up(st, why);
		}
	} else if (st && sp->counted == SPAN_HELD && to == SPAN_OUT) {
		/* (a set member held at entry and given back with its set
		 * stays counted as acquired: counters only grow) */
		STAT_ADD(st, held_now, -1);
	}
	sp->counted = to;
}

/* The plain tree's hooks (protocol.h, struct rl_part_ops). */
static int span_counted(const struct range_lock *first)
{
	return span_of_first(first)->counted;
}

/* The waiting code withdrew a spanning request's first part (a give-up,
 * @why as for rl_span_count()), under its segment's lock @t0. */
static void span_withdrawn(struct range_lock_tree *t0, struct range_lock *first, int why)
{
	rl_span_count(span_of_first(first), t0, SPAN_OUT, why);
}

const struct rl_part_ops rl_span_part_ops = { span_counted, span_withdrawn };

/*
 * Take part @p out of segment tree @t, held or waiting (a release walk,
 * waking what it blocked there).  For the first part, @why is the reason
 * the request leaves (0: an unlock; else as for rl_span_count()), and the
 * user's request, if it stands for the span (a hold, or a queued
 * asynchronous request), stops doing so.  Returns
 * whether @p was a queued part of an asynchronous request (its completion
 * will not run).
 */
bool rl_span_leave(struct range_lock_tree *t, struct span *sp, struct range_lock *p, int why)
{
	struct wake_list wl;
	uint32_t word;
	bool queued;

	wl.n = 0;
	tree_lock(t);
	if (p == PART(sp, 0)) {
		rl_span_count(sp, t, SPAN_OUT, why);
		if (is_linked(sp->owner)) {
			sp->owner->rb_parent_flags = 0;
			sp->owner->rb_left = NULL;
		}
	}
	queued = is_async(p);
	word = atomic_load_explicit(wait_word(p), memory_order_relaxed);
	if (blockers_of(word))
		t->nr_waiting--;
	rl_remove_request(t, p, &wl);
	tree_unlock(t);
	wake_list_flush(&wl);
	return queued;
}

struct span_wait {
	struct span *sp;
	/* Volatile: changed after pthread_cleanup_push()'s setjmp, read by the
	 * cancellation handler (struct set_wait in seg_sets.c says why). */
	volatile unsigned skip; /* the part the waiting code withdrew */
	volatile int why;       /* -EINTR, -ETIMEDOUT; -ECANCELED: cancellation */
};

/* After the part being waited for gave up: every other part leaves. */
static void span_abandon(struct span_wait *sw)
{
	struct span *sp = sw->sp;
	struct rl_segments *s = segments_of(sp->top);

	for (unsigned i = 0; i < sp->n; i++)
		if (i != sw->skip)
			rl_span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), sw->why);
	rl_span_free(sp);
}

/* The same, as the cleanup handler of a cancelled killable wait. */
static void span_abandon_on_cancel(void *arg)
{
	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	span_abandon(arg);
}

/*
 * One arrival into every segment of @sp (see DESIGN in segments.c).  Returns the number
 * of parts that wait (0: held), or -1 for a trylock (@w NULL) that would
 * wait, or -EINVAL for a timed call that would wait with a bad deadline,
 * or -EAGAIN if the gate refused a segment (seg_gate.c); in those cases
 * nothing was entered.  @shown: the user's request (for the
 * checking mode's report).
 */
int rl_span_enter(const char *call, struct span *sp,
		  const struct range_lock *shown, struct waiter *w)
{
	struct rl_segments *s = segments_of(sp->top);
	uint32_t blockers[RL_SEG_MAX];
	struct range_lock_stats *st;
	bool reader = sp->reader, async = sp->user != NULL;
	struct entry_scan scan;
	uint64_t seq = 0;
	int waiting = 0;

	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		if (!tree_lock_entering(t)) { /* closed or closing: the gate */
			while (i-- > 0)
				tree_unlock(part_tree(s, PART(sp, i)));
			return -EAGAIN;
		}
		if (!reader)
			rl_revoke_fast_readers(t);
		if (__builtin_expect(t->nr_requests >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, NULL, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (i == 0 || seq_before(seq, t->seqnum))
			seq = t->seqnum;
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		rl_scan_entry(t, PART(sp, i), reader, !w, &scan);
		blockers[i] = scan.blockers;
		waiting += scan.blockers != 0;
	}
	st = part_tree(s, PART(sp, 0))->stats; /* (its lock is held) */
	if (waiting && (!w || (w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime)))) {
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		for (unsigned i = sp->n; i-- > 0;)
			tree_unlock(part_tree(s, PART(sp, i)));
		return w ? -EINVAL : -1;
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		if (blockers[i] && w->kind != WAIT_TIMED && w->kind != WAIT_ASYNC)
			rl_check_self_deadlock(t, PART(sp, i), reader, call, shown);
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		rl_insert_request(t, PART(sp, i), reader, blockers[i], seq);
		t->seqnum = seq + 1;
		if (blockers[i] && !tree_is_fifo(t))
			atomic_fetch_or_explicit(wait_word(PART(sp, i)), HANDOFF,
						 memory_order_relaxed);
		if (blockers[i] && sp->user) /* its grant queues its completion */
			part_completion_due(&sp->part[i]);
	}
	sp->counted = waiting ? SPAN_WAITING : SPAN_HELD;
	sp->held = !waiting; /* (under every part's lock) */
	if (st && waiting) {
		STAT_ADD(st, contended, 1);
		STAT_ADD(st, waiting_now, 1);
		STAT_PEAK(st, waiting_now, waiting_peak);
	} else if (st) {
		rl_stat_granted(st, reader, false);
		stat_spanning(st, sp->n, 1);
	}
	if (async) {
		/* Before the parts can be granted: their completions read
		 * these (they take a segment's lock after us). */
		sp->user->lock.seqnum = seq;
		atomic_store_explicit(&sp->astate, waiting ? (uint32_t)waiting : SA_HELD,
				      memory_order_relaxed);
		if (!waiting)
			sp->user->reserved_[0] = 0; /* held at submission */
		if (st && waiting)
			sp->wait_start_ns = rl_now_ns();
	}
	for (unsigned i = sp->n; i-- > 0;)
		tree_unlock(part_tree(s, PART(sp, i)));
	if (waiting)
		RL_TEST_SPAN_ENTERED_HOOK();
	/* (Not an asynchronous span's: once the locks are dropped, its
	 * completion may run, unlock it and free the span.) */
	if (st && waiting && !async)
		sp->wait_start_ns = rl_now_ns();
	return waiting;
}

/*
 * Wait for part @p (of a spanning request or a set; marked at entry, so
 * its count only falls).  0: granted (w->kept_after set if a signal or the
 * deadline came as it was); else the give-up's error, @p out of its tree.
 */
int rl_span_wait_part(struct range_lock_tree *t, struct range_lock *p, bool reader,
		      struct waiter *w)
{
	w->kept_after = 0;
	if (atomic_load_explicit(wait_word(p), memory_order_acquire) == 0) {
		rl_hb_acquire_last(wait_word(p));
		return 0;
	}
	w->tree = t;
	w->lock = p;
	w->reader = reader;
	w->items = NULL;
	w->word = WORD_MARKED; /* marked at entry: no hand-off clock */
	rl_probe_wait(wait_begin, w->tree, w->lock, w->reader);
	return rl_wait_for_grant(w);
}

static int span_wait_parts(struct span *sp, struct waiter *w, struct span_wait *sw)
{
	struct rl_segments *s = segments_of(sp->top);

	for (unsigned i = 0; i < sp->n; i++) {
		int r;

		sw->skip = i;
		r = rl_span_wait_part(part_tree(s, PART(sp, i)), PART(sp, i), sp->reader, w);
		if (r)
			return r; /* that part left the tree: the others leave */
		if (w->kept_after) {
			/*
			 * A signal or the deadline came as this part was
			 * granted: the call keeps its range only if every other
			 * part is granted too (as a set does); else it gives
			 * up, this part included, rather than wait on -- a
			 * signal would go unreported.
			 */
			for (unsigned j = i + 1; j < sp->n; j++)
				if (atomic_load_explicit(wait_word(PART(sp, j)),
							 memory_order_acquire)) {
					sw->skip = sp->n; /* every part leaves */
					return w->kept_after;
				}
			for (unsigned j = i + 1; j < sp->n; j++)
				rl_hb_acquire_last(wait_word(PART(sp, j)));
			return 0;
		}
	}
	return 0;
}

/*
 * Wait for every part; on a give-up (and on cancellation of a killable
 * call, the waiting code having withdrawn the part it waited for) every
 * other part leaves and the span is freed.
 */
/*
 * The CLAIM, after a pass that saw every part granted (GROW, seg_grow.c): under
 * the locks of every segment of the span, ascending, the request holds if
 * every part is still granted -- a growth may have made one wait again
 * since the pass saw it (it does so only under that part's lock, while
 * @held is false); then @held is set, which every growth reads under one
 * of those locks, and the request is counted as held.  False: a new pass.
 */
static bool span_claim(struct span *sp)
{
	struct rl_segments *s = segments_of(sp->top);
	bool all = true;

	for (unsigned i = 0; i < sp->n; i++)
		tree_lock(part_tree(s, PART(sp, i)));
	for (unsigned i = 0; i < sp->n && all; i++)
		all = atomic_load_explicit(wait_word(PART(sp, i)), memory_order_relaxed) == 0;
	if (all) {
		sp->held = true;
		rl_span_count(sp, part_tree(s, PART(sp, 0)), SPAN_HELD, 0);
	}
	for (unsigned i = sp->n; i-- > 0;)
		tree_unlock(part_tree(s, PART(sp, i)));
	return all;
}

static int span_wait(struct span *sp, struct waiter *w)
{
	struct span_wait sw = { sp, 0, -ECANCELED };
	int r;

	pthread_cleanup_push(span_abandon_on_cancel, &sw);
	for (;;) {
		r = span_wait_parts(sp, w, &sw);
		if (r || span_claim(sp))
			break;
		if (w->kept_after) {
			/* A signal or the deadline came: no new pass, the call
			 * gives up (as when a part is still waiting then). */
			sw.skip = sp->n; /* every part leaves */
			r = w->kept_after;
			break;
		}
	}
	pthread_cleanup_pop(0);
	if (r) {
		sw.why = r;
		span_abandon(&sw);
	}
	return r;
}

static int span_lock(const char *call, struct range_lock_tree *tree,
		     struct range_lock *lock, bool reader, struct waiter *w,
		     unsigned n, int subclass, void *site)
{
	struct span *sp = span_new(tree, lock, reader, n);
	int r;

	if (!sp) {
		if (!w || w->kind == WAIT_PLAIN)
			rl_die(call, lock, "out of memory for the parts of a range "
			       "that spans segments");
		return -ENOMEM;
	}
	r = rl_span_enter(call, sp, lock, w);
	if (r < 0) {
		rl_span_free(sp);
		if (r == -EAGAIN)
			return RL_GATE_REFUSED;
		return r == -1 ? 0 : r; /* trylock: busy */
	}
	if (r > 0) {
		r = span_wait(sp, w);
		if (r)
			return r;
	}
	lock->rb_left = (struct range_lock *)(void *)sp;
	lock->rb_right = NULL;
	lock->seqnum = PART(sp, 0)->seqnum;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	rl_check_acquired(tree, lock, subclass, site);
	return w ? 0 : 1;
}

/* ---- the calls' dispatch ----------------------------------------------- */

/* (Here, beside the spanning requests they run, so that span_lock() and
 * rl_span_leave() inline into them as before the split.) */

int rl_seg_lock_segments(const char *call, struct range_lock_tree *tree,
			 struct range_lock *lock, bool reader, struct waiter *w, unsigned n,
			 int subclass, void *site)
{
	struct rl_segments *s = segments_of(tree);

	if (n == 1) {
		struct range_lock_tree *t = rl_seg_tree(s, rl_seg_part(s, lock->start,
								       lock->last, 0).seg);

		return w ? rl_lock_in(call, t, lock, reader, w, subclass, site)
			 : rl_trylock_in(call, t, lock, reader, site);
	}
	return span_lock(call, tree, lock, reader, w, n, subclass, site);
}

void rl_seg_unlock(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		   bool reader)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n = rl_seg_parts(s, lock->start, lock->last);
	struct span *sp;

	if (!rl_gate_segments(tree)) { /* held in the user's tree (seg_gate.c) */
		rl_unlock_in(call, tree, lock, reader);
		return;
	}
	if (n == 1) {
		rl_unlock_in(call, rl_seg_tree(s, rl_seg_part(s, lock->start, lock->last, 0).seg),
			     lock, reader);
		return;
	}
	sp = (struct span *)(void *)lock->rb_left;
	if (!is_linked(lock) || !sp)
		rl_die(call, lock, "range is not locked");
	if (sp->top != tree)
		rl_die(call, lock, "range is not locked in this tree");
	span_check_held(call, sp, lock);
	if (sp->reader != reader)
		rl_die(call, lock, reader ? "range is held for writing, not reading"
					  : "range is held for reading, not writing");
	rl_check_released(tree, lock);
	for (unsigned i = 0; i < sp->n; i++) /* the first clears @lock's links */
		rl_span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), 0);
	rl_span_free(sp);
}

void rl_seg_file_unlock(const char *call, struct range_lock_tree *tree,
			struct range_lock *lock, bool reader)
{
	/* Before the local unlock, as on any bound tree (file_release()). */
	rl_file_unlock(rl_bound_file(file_of(tree)), lock->start, lock->last, reader);
	rl_seg_unlock(call, tree, lock, reader);
}
