/* SPDX-License-Identifier: MIT */
/*
 * librangelock: sets (range_lock_many()) across the segments of a segmented
 * tree (segments.c has the design).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_internal.h"

/* ---- sets (range_lock_many()) ------------------------------------------- */

/*
 * SETS.  A set whose requests all lie in one segment is a set of that
 * segment's tree (sets.c: one arrival there, overtaking as a whole, as on
 * any tree; rl_seg_set_tree()).  Any other set is ONE spanning arrival
 * (design S2 over the union of its members' segments): each member is
 * entered as a span -- one part per segment it meets, a member within one
 * stripe a span of one part -- under the locks of all their segments,
 * taken ascending and held until every part of every member is scanned
 * and then inserted, all at one seqnum (the largest counter), so that
 * siblings never count each other (equal seqnums never precede each
 * other, as in a plain set).  Like a spanning request, the set never
 * overtakes (every part counts every conflict) and its waiting parts are
 * HANDOFF-marked in the default policy.  The call waits for every part
 * (members in order, parts ascending: counts only fall); a give-up takes
 * every part of every member out (set_abandon()).  Held, each member is
 * what a lock call of it alone leaves: a member within one stripe takes
 * its part's place in its segment (rl_move_request(), as a shrink to one
 * stripe does), a spanning one keeps its span; range_unlock_many() and
 * the single unlocks release them alike.
 *
 * Statistics as a plain set's (sets.c): per member, in its first part's
 * segment (held or waiting at entry, its grant when the call returns);
 * once per set, in the first member's first segment: the contention, the
 * busy trylock, the wait time and the give-up (rl_span_count() leaves those
 * to the set for in_set spans).  A member granted while the set waits
 * and given up with it is never counted as acquired (a plain set's is:
 * the header documents the difference); one held at entry stays counted.
 */
/* Sets of up to this many members keep their spans' array on the stack. */
#define SET_LOCAL 8

struct set_wait {
	struct span **sp;
	const struct range_lock_item *items;
	unsigned n;
	/* Volatile: written after pthread_cleanup_push()'s setjmp and read by
	 * the cancellation handler after the unwinding's longjmp (C11
	 * 7.13.2.1: a plain local changed in between is indeterminate there;
	 * clang -O2 kept these stores in registers and the handler left a
	 * granted part in its tree). */
	volatile unsigned skip_m, skip_p; /* the part the waiting code withdrew */
	volatile int why;                 /* -EINTR, -ETIMEDOUT; -ECANCELED */
	uint64_t start_ns;       /* the set's wait, if statistics time it */
	/* @sp for a set of up to SET_LOCAL members: no allocation. */
	struct span *local[SET_LOCAL];
};

/* The array of a set's spans (@sp) is freed unless it is @local. */
static void set_spans_free(struct set_wait *sw)
{
	if (sw->sp != sw->local)
		free(sw->sp);
}

/* Every part of every member of @sw, the one at (@m, @p) last. */
#define set_foreach_part(sw, m, p) \
	for ((m) = 0; (m) < (sw)->n; (m)++) \
		for ((p) = 0; (p) < (sw)->sp[m]->n; (p)++)

/*
 * One arrival of every part of every member of @sw (SETS).  Returns 1 if
 * some part waits, 0 if all are held, -1 for a trylock (@w NULL) that
 * would wait, -EINVAL for a timed call that would wait with a bad
 * deadline, -EAGAIN if the gate refused a segment (seg_gate.c); nothing
 * entered in those cases.
 */
static int set_enter(const char *call, struct range_lock_tree *tree, struct set_wait *sw,
		     const struct range_lock_item *items, struct waiter *w)
{
	struct rl_segments *s = segments_of(tree);
	uint64_t used[RL_SEG_MAX / 64] = { 0 }, writes[RL_SEG_MAX / 64] = { 0 };
	struct range_lock_tree *t0 = part_tree(s, PART(sw->sp[0], 0));
	struct range_lock_stats *st;
	struct entry_scan scan;
	bool waiting = false, first = true;
	uint64_t seq = 0;
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		unsigned g = rl_seg_part(s, sw->sp[m]->owner->start, sw->sp[m]->owner->last, p).seg;

		used[g / 64] |= (uint64_t)1 << (g % 64);
		if (!sw->sp[m]->reader)
			writes[g / 64] |= (uint64_t)1 << (g % 64);
	}
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (!(used[g / 64] >> (g % 64) & 1))
			continue;
		if (!tree_lock_entering(t)) { /* closed or closing: the gate */
			while (g-- > 0)
				if (used[g / 64] >> (g % 64) & 1)
					tree_unlock(rl_seg_tree(s, g));
			return -EAGAIN;
		}
		if (writes[g / 64] >> (g % 64) & 1)
			rl_revoke_fast_readers(t);
		if (__builtin_expect(t->nr_requests + sw->n >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, NULL, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (first || seq_before(seq, t->seqnum))
			seq = t->seqnum;
		first = false;
	}
	/* Every part scanned before any is inserted: siblings count nothing
	 * of each other.  A part's blockers wait in its (unpublished) wait
	 * word until it is inserted. */
	for (m = 0; m < sw->n; m++) {
		struct span *sp = sw->sp[m];
		bool mw = false;

		for (p = 0; p < sp->n; p++) {
			rl_scan_entry(part_tree(s, PART(sp, p)), PART(sp, p), sp->reader, !w, &scan);
			atomic_store_explicit(wait_word(PART(sp, p)), scan.blockers,
					      memory_order_relaxed);
			mw |= scan.blockers != 0;
		}
		sp->counted = mw ? SPAN_WAITING : SPAN_HELD;
		waiting |= mw;
	}
	st = t0->stats; /* (its lock is held) */
	if (waiting && (!w || (w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime)))) {
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		for (unsigned g = 1u << s->log2n; g-- > 0;)
			if (used[g / 64] >> (g % 64) & 1)
				tree_unlock(rl_seg_tree(s, g));
		for (m = 0; m < sw->n; m++)
			sw->sp[m]->counted = SPAN_OUT;
		return w ? -EINVAL : -1;
	}
	if (waiting && w->kind != WAIT_TIMED) {
		set_foreach_part(sw, m, p) {
			struct range_lock *part = PART(sw->sp[m], p);

			if (atomic_load_explicit(wait_word(part), memory_order_relaxed))
				rl_check_self_deadlock(part_tree(s, part), part, sw->sp[m]->reader,
						       call, items[m].lock);
		}
	}
	set_foreach_part(sw, m, p) {
		struct range_lock *part = PART(sw->sp[m], p);
		struct range_lock_tree *t = part_tree(s, part);
		uint32_t b = atomic_load_explicit(wait_word(part), memory_order_relaxed);

		rl_insert_request(t, part, sw->sp[m]->reader, b, seq);
		if (b && !tree_is_fifo(t))
			atomic_fetch_or_explicit(wait_word(part), HANDOFF, memory_order_relaxed);
	}
	for (m = 0; m < sw->n; m++) {
		struct span *sp = sw->sp[m];
		struct range_lock_stats *ms = part_tree(s, PART(sp, 0))->stats;

		if (ms && sp->counted == SPAN_WAITING) {
			STAT_ADD(ms, waiting_now, 1);
			STAT_PEAK(ms, waiting_now, waiting_peak);
		} else if (ms) {
			rl_stat_granted(ms, sp->reader, false);
			stat_spanning(ms, sp->n, 1);
		}
	}
	if (st && waiting)
		STAT_ADD(st, contended, 1);
	for (m = 0; m < sw->n; m++) /* (under every part's lock) */
		sw->sp[m]->held = !waiting;
	for (unsigned g = 1u << s->log2n; g-- > 0;) {
		if (used[g / 64] >> (g % 64) & 1) {
			rl_seg_tree(s, g)->seqnum = seq + 1;
			tree_unlock(rl_seg_tree(s, g));
		}
	}
	sw->start_ns = st && waiting ? rl_now_ns() : 0;
	return waiting;
}

/* The members' marks (rl_seg_lock_many()), when the call fails. */
static void set_unmark(const struct range_lock_item *items, unsigned n)
{
	for (unsigned m = 0; m < n; m++)
		items[m].lock->rb_parent_flags &= ~(uintptr_t)RL_LINKED;
}

/* The give-up: counted once, then every part of every member leaves (but
 * the one the waiting code withdrew), and the spans and their array are
 * freed (also when a cancellation unwinds the call). */
static void set_abandon(struct set_wait *sw)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	struct range_lock_tree *t0 = part_tree(s, PART(sw->sp[0], 0));
	struct range_lock_stats *st;
	unsigned m, p;

	/* Before the parts leave: while one is in a tree, the tree lives.
	 * (The first part's segment may be empty -- the waiting code took
	 * that part out -- and closed by a drain meanwhile: taken anyway,
	 * seg_gate.c.) */
	rl_gate_lock_segment(t0);
	st = t0->stats;
	if (st) {
		if (sw->start_ns)
			rl_stat_wait_time(st, rl_now_ns() - sw->start_ns);
		stat_give_up(st, sw->why);
	}
	tree_unlock(t0);
	set_foreach_part(sw, m, p)
		if (m != sw->skip_m || p != sw->skip_p)
			rl_span_leave(part_tree(s, PART(sw->sp[m], p)), sw->sp[m],
				      PART(sw->sp[m], p), sw->why);
	for (m = 0; m < sw->n; m++)
		rl_span_free(sw->sp[m]);
	set_spans_free(sw);
	set_unmark(sw->items, sw->n);
}

static void set_abandon_on_cancel(void *arg)
{
	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	set_abandon(arg);
}

/* Wait for every part (see span_wait_parts(), whose rules it follows). */
static int set_wait_parts(struct set_wait *sw, struct waiter *w)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		int r;

		sw->skip_m = m;
		sw->skip_p = p;
		r = rl_span_wait_part(part_tree(s, PART(sw->sp[m], p)), PART(sw->sp[m], p),
				      sw->sp[m]->reader, w);
		if (r)
			return r; /* that part left its tree: the others leave */
		if (w->kept_after) {
			/* Granted as the signal or the deadline came: the set
			 * is kept only if every part is granted (a plain set's
			 * rule), else every part leaves, this one included. */
			unsigned m2, p2;
			bool all = true;

			set_foreach_part(sw, m2, p2)
				all &= atomic_load_explicit(wait_word(PART(sw->sp[m2], p2)),
							    memory_order_acquire) == 0;
			if (!all) {
				sw->skip_m = sw->n; /* every part leaves */
				return w->kept_after;
			}
			set_foreach_part(sw, m2, p2)
				rl_hb_acquire_last(wait_word(PART(sw->sp[m2], p2)));
			return 0;
		}
	}
	return 0;
}

/* The claim of a set (span_claim()'s, over the union of its members'
 * segments): every member holds, or none and a new pass. */
static bool set_claim(struct set_wait *sw)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	uint64_t used[RL_SEG_MAX / 64] = { 0 };
	bool all = true;
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		unsigned g = rl_seg_part(s, sw->sp[m]->owner->start, sw->sp[m]->owner->last, p).seg;

		used[g / 64] |= (uint64_t)1 << (g % 64);
	}
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		if (used[g / 64] >> (g % 64) & 1)
			tree_lock(rl_seg_tree(s, g));
	set_foreach_part(sw, m, p)
		all &= atomic_load_explicit(wait_word(PART(sw->sp[m], p)),
					    memory_order_relaxed) == 0;
	for (m = 0; all && m < sw->n; m++)
		sw->sp[m]->held = true;
	for (unsigned g = 1u << s->log2n; g-- > 0;)
		if (used[g / 64] >> (g % 64) & 1)
			tree_unlock(rl_seg_tree(s, g));
	return all;
}

int rl_seg_lock_many(const char *call, struct range_lock_tree *tree,
		     const struct range_lock_item *items, unsigned n, struct waiter *w,
		     void *site)
{
	struct rl_segments *s = segments_of(tree);
	struct set_wait sw = { NULL, NULL, n, 0, 0, -ECANCELED, 0, { NULL } };
	int r;

	/* Members are marked as in a tree while the call runs, so that one
	 * listed twice is found (as in a plain set, rl_enter_many()). */
	for (unsigned m = 0; m < n; m++) {
		if (is_linked(items[m].lock))
			rl_die(call, items[m].lock, "request appears twice in the set");
		items[m].lock->rb_parent_flags |= RL_LINKED;
	}
	sw.sp = n <= SET_LOCAL ? sw.local : malloc(n * sizeof(*sw.sp));
	for (unsigned m = 0; sw.sp && m < n; m++) {
		struct range_lock *lock = items[m].lock;

		sw.sp[m] = span_new(tree, lock, items[m].mode == RANGE_LOCK_READ,
				    rl_seg_parts(s, lock->start, lock->last));
		if (!sw.sp[m]) {
			while (m-- > 0)
				rl_span_free(sw.sp[m]);
			set_spans_free(&sw);
			sw.sp = NULL;
		} else {
			sw.sp[m]->in_set = true;
		}
	}
	if (!sw.sp) {
		if (w && w->kind == WAIT_PLAIN)
			rl_die(call, items[0].lock, "out of memory for the parts of a set "
			       "on a tree with segments");
		set_unmark(items, n);
		return -ENOMEM;
	}
	r = set_enter(call, tree, &sw, items, w);
	if (r < 0) {
		for (unsigned m = 0; m < n; m++)
			rl_span_free(sw.sp[m]);
		set_spans_free(&sw);
		set_unmark(items, n);
		if (r == -EAGAIN)
			return RL_GATE_REFUSED; /* back to the gate (sets.c) */
		return r == -1 ? -EBUSY : r;
	}
	if (r > 0) {
		sw.items = items;
		pthread_cleanup_push(set_abandon_on_cancel, &sw);
		for (;;) {
			r = set_wait_parts(&sw, w);
			if (r || set_claim(&sw))
				break;
			if (w->kept_after) { /* (span_wait()'s rule) */
				sw.skip_m = sw.n; /* every part leaves */
				r = w->kept_after;
				break;
			}
		}
		pthread_cleanup_pop(0);
		if (r) {
			sw.why = r;
			set_abandon(&sw);
			return r;
		}
	}
	/* Held: each member becomes what a lock of it alone leaves. */
	for (unsigned m = 0; m < n; m++) {
		struct span *sp = sw.sp[m];
		struct range_lock *lock = items[m].lock;
		struct range_lock_tree *t0 = part_tree(s, PART(sp, 0));

		tree_lock(t0);
		rl_span_count(sp, t0, SPAN_HELD, 0);
		if (m == 0 && sw.start_ns && t0->stats)
			rl_stat_wait_time(t0->stats, rl_now_ns() - sw.start_ns);
		sp->in_set = false;
		if (sp->n == 1) {
			rl_move_request(t0, PART(sp, 0), lock);
			lock->owner_tid = rl_thread_id();
		}
		tree_unlock(t0);
		if (sp->n == 1) {
			rl_span_free(sp);
		} else {
			lock->rb_left = (struct range_lock *)(void *)sp;
			lock->rb_right = NULL;
			lock->seqnum = PART(sp, 0)->seqnum;
			lock->rb_parent_flags = (sp->reader ? RL_READER : 0) | RL_LINKED;
		}
		rl_check_acquired(tree, lock, 0, site);
	}
	set_spans_free(&sw);
	return 0;
}

/* The tree of the one segment every member of the set lies in, or NULL. */
struct range_lock_tree *rl_seg_set_tree(struct range_lock_tree *tree,
					const struct range_lock_item *items, unsigned n)
{
	struct rl_segments *s = segments_of(tree);
	unsigned g = 0;

	for (unsigned m = 0; m < n; m++) {
		const struct range_lock *lock = items[m].lock;

		if (rl_seg_parts(s, lock->start, lock->last) != 1)
			return NULL;
		if (m == 0)
			g = rl_seg_part(s, lock->start, lock->last, 0).seg;
		else if (rl_seg_part(s, lock->start, lock->last, 0).seg != g)
			return NULL;
	}
	return rl_seg_tree(s, g);
}

/*
 * Each member is released as its single unlock does, one segment lock at a
 * time; the completions that the releases queue on this thread run once
 * every member is released (rl_async_hold()), as after a plain tree's one
 * hold of its lock, so that no completion runs while a member of the call
 * is still held.
 */
void rl_seg_unlock_many(struct range_lock_tree *tree, const struct range_lock_item *items,
			unsigned n)
{
	bool held;

	for (unsigned m = 0; m < n; m++)
		if (!items[m].lock)
			rl_die("range_unlock_many", NULL, "NULL request in the set");
	held = rl_async_hold();
	for (unsigned m = 0; m < n; m++) {
		bool reader = items[m].mode == RANGE_LOCK_READ;

		rl_seg_unlock("range_unlock_many", tree, items[m].lock, reader);
	}
	rl_async_release(held);
}
