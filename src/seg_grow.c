/* SPDX-License-Identifier: MIT */
/*
 * librangelock: range_lock_grow() on segmented trees (segments.c has the
 * design).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_internal.h"

/* ---- grow (range_lock_grow()) ------------------------------------------ */

/*
 * GROW of a held request L (seqnum s) to [start, last] (docs/design.md S7;
 * the rule is segments.pml's CFG_GROW).  A segment's own grow (protocol.c)
 * cannot serve: it takes a request whose count is 0 for a holder, but a
 * spanning request's granted part is not held while another of its parts
 * waits, and a growth that waits for it can close a cycle (design S7 has
 * one).  So:
 *
 *  - "Held" is the whole request's hold.  A request of one segment holds
 *    when its count is 0; a spanning one when its span says so (held, set
 *    under the locks of all its segments at its entry or by its claim,
 *    span_claim(); an asynchronous one's SA_HELD).
 *  - The growth enters every segment of the new range under all their
 *    locks, taken ascending and held until it is in (one step, as an
 *    arrival).  In each, the added units -- a piece below and a piece
 *    above L's hull there, or the whole hull in a segment L is not in
 *    yet -- are growths at seqnum s: each counts every conflicting holder
 *    and every request not later than L (precedes(), protocol.h), and puts
 *    one blocker on every later conflicting waiter.  Each segment's counter
 *    is raised past s.
 *  - A granted part of a later spanning request that does not hold is
 *    REVOKED: it gets that blocker too and waits again (HANDOFF-marked in
 *    the default policy: spans are never overtaken).  Its thread sees it
 *    at its claim and makes a new pass.  An asynchronous span's revoked
 *    part is due one more completion: astate + 1 by CAS unless SA_HELD,
 *    the deciding step, taken before any blocker is added (grow_pin());
 *    its grant queues the part again.  A part whose last completion is
 *    still queued cannot be queued twice: the growth lets go of every
 *    lock, pauses and enters again (PART_COMPLETION_DUE; such a
 *    completion runs once the completions ahead of it on the thread
 *    whose release granted it have returned -- user code: the pause,
 *    grow_pause(), is where a grow that may give up does).
 *  - Waiting pieces are HANDOFF-marked in the default policy, so their
 *    counts only fall; the call waits for each in turn
 *    (rl_span_wait_part()).  A give-up takes every piece out through its
 *    segment's release walk, one segment at a time (grow_abandon()); L is
 *    exactly as before the call.
 *  - Every piece granted: under all the locks again (grow_merge()), each
 *    piece merges into L's part of its segment (rl_grow_merge(): L's hull
 *    there grows; a request that counted both loses one) or becomes L's
 *    part in a segment it was not in (rl_move_request(): what counted the
 *    piece counts the part, at the same seqnum).  If L now has more parts,
 *    they move to a new span: a request of one stripe becomes spanning.
 *  - A _try inserts nothing unless the pieces count nothing and revoke
 *    nothing: a later spanning request granted in part on the added units
 *    makes it busy (it would otherwise be made to wait again by a call
 *    that may not wait).
 * Statistics: the grow counts as an acquisition (or a busy try, a
 * contention, a give-up) in the first segment of the new range -- a
 * give-up that the waiting code noticed on a piece counts in that piece's
 * segment, as the waiting code counts every give-up; each
 * waiting piece counts in waiting_now of its segment, as a tree without
 * segments counts its growths.
 */
#define GROW_BUSY  (-1)
#define GROW_RETRY (-2)

/* One segment of the new range. */
struct seg_growth {
	struct range_lock_tree *t;
	/* owner: L's part here (L itself within one stripe), NULL if L has
	 * none yet; start, last: L's new hull here; part[0..n-1]: the pieces. */
	struct growth g;
	uint32_t blockers[2];
};

struct grow_wait {
	struct seg_growth *gs;
	unsigned n;                /* segments of the new range */
	bool reader;
	/* Volatile: changed after pthread_cleanup_push()'s setjmp, read by the
	 * cancellation handlers (struct set_wait in seg_sets.c says why). */
	volatile unsigned skip_k, skip_j; /* the piece the waiting code withdrew */
	volatile int why;
	struct span *volatile to;  /* the new span, if any (freed on cancel) */
};

#define grow_foreach_piece(segs, nsegs, k, j) \
	for ((k) = 0; (k) < (nsegs); (k)++) \
		for ((j) = 0; (j) < (segs)[k].g.n; (j)++)


enum { MEETS_NONE, MEETS_COUNT, MEETS_BLOCK, MEETS_REVOKE };

/* Under its segment's lock: what piece @p does about request @q there. */
static int grow_meets(struct range_lock *q, const struct range_lock *p, bool reader)
{
	if (!conflict(reader, is_reader(q)))
		return MEETS_NONE;
	if (!is_part(q))
		return precedes(q, p) ? MEETS_COUNT : MEETS_BLOCK;
	/* A part: counted if not later than L or if its request holds. */
	if (!seq_before(p->seqnum, q->seqnum) || span_holds(span_of_part(q)))
		return MEETS_COUNT;
	return atomic_load_explicit(wait_word(q), memory_order_relaxed) ? MEETS_BLOCK
									: MEETS_REVOKE;
}

/*
 * Before anything changes: GROW_BUSY if a try would revoke a part,
 * GROW_RETRY if a part to revoke still has its completion queued, else 0.
 * (A part met by both pieces of one hull covers L's hull there, so it
 * counted L's part: it is waiting, never revoked twice.)
 */
static int grow_check(struct seg_growth *gs, unsigned n, bool reader, bool try)
{
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock *p = &gs[k].g.part[j];

		itree_foreach(q, gs[k].t->root, p->start, p->last) {
			if (grow_meets(q, p, reader) != MEETS_REVOKE)
				continue;
			if (try)
				return GROW_BUSY;
			if (span_of_part(q)->user &&
			    (__atomic_load_n(&((struct range_lock_async *)(void *)q)->reserved_[0],
					     __ATOMIC_ACQUIRE) & PART_COMPLETION_DUE))
				return GROW_RETRY;
		}
	}
	return 0;
}

/* An asynchronous span is due one more completion, unless it holds. */
static bool grow_pin(struct span *sp)
{
	uint32_t old = atomic_load_explicit(&sp->astate, memory_order_relaxed);

	do {
		if (old & SA_HELD)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old, old + 1,
							memory_order_acq_rel,
							memory_order_relaxed));
	return true;
}

/* Each piece's blockers (@pin: an asynchronous span's revocation decided
 * here, pinned, so that grow_block() gets the same answer after; else
 * only counted, changing nothing); the total. */
static uint32_t grow_count(struct seg_growth *gs, unsigned n, bool reader, bool pin)
{
	uint32_t total = 0;
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock *p = &gs[k].g.part[j];
		uint32_t b = 0;

		itree_foreach(q, gs[k].t->root, p->start, p->last) {
			int d = grow_meets(q, p, reader);

			if (d == MEETS_REVOKE && pin && span_of_part(q)->user &&
			    !grow_pin(span_of_part(q)))
				d = MEETS_COUNT; /* it holds since grow_check() */
			b += d == MEETS_COUNT;
		}
		gs[k].blockers[j] = b;
		total += b;
	}
	return total;
}

/* The later waiters get a blocker each; granted parts of spans that do
 * not hold are revoked. */
static void grow_block(struct seg_growth *gs, unsigned n, bool reader)
{
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock_tree *t = gs[k].t;
		struct range_lock *p = &gs[k].g.part[j];

		itree_foreach(q, t->root, p->start, p->last) {
			int d = grow_meets(q, p, reader);
			uint32_t old;

			if (d != MEETS_BLOCK && d != MEETS_REVOKE)
				continue;
			rl_race_ok(wait_word(q), sizeof(uint32_t)); /* annotate.h, edge 8 */
			old = atomic_fetch_add_explicit(wait_word(q), ONE_BLOCKER,
							memory_order_relaxed);
			if (old == ELIGIBLE || old == 0)
				t->nr_waiting++;
			if (old != 0)
				continue;
			/* Revoked (its request does not hold: no thread is in
			 * its critical section; the claim will see this). */
			if (!tree_is_fifo(t))
				atomic_fetch_or_explicit(wait_word(q), HANDOFF,
							 memory_order_relaxed);
			if (span_of_part(q)->user)
				part_completion_due((struct range_lock_async *)(void *)q);
		}
	}
}

/* Lock (@on) or unlock every segment of the new range, ascending / not. */
static void grow_lock_all(struct seg_growth *gs, unsigned n, bool on)
{
	if (on)
		for (unsigned k = 0; k < n; k++)
			rl_gate_lock_segment(gs[k].t);
	else
		for (unsigned k = n; k-- > 0;)
			tree_unlock(gs[k].t);
}

/* Every piece but the withdrawn one leaves (release walks), one segment
 * at a time; the give-up counts once (the waiting code counted it if it
 * withdrew a piece). */
static void grow_abandon(struct grow_wait *gw)
{
	unsigned k, j;

	grow_foreach_piece(gw->gs, gw->n, k, j) {
		struct range_lock_tree *t = gw->gs[k].t;
		struct range_lock *p = &gw->gs[k].g.part[j];
		struct wake_list wl;
		uint32_t word;

		if (k == gw->skip_k && j == gw->skip_j)
			continue;
		wl.n = 0;
		rl_gate_lock_segment(t);
		word = atomic_load_explicit(wait_word(p), memory_order_relaxed);
		if (blockers_of(word)) {
			t->nr_waiting--;
			if (t->stats)
				STAT_ADD(t->stats, waiting_now, -1);
		}
		rl_remove_request(t, p, &wl);
		tree_unlock(t);
		wake_list_flush(&wl);
	}
	if (gw->skip_k == gw->n) {
		struct range_lock_tree *t0 = gw->gs[0].t;

		rl_gate_lock_segment(t0);
		if (t0->stats)
			stat_give_up(t0->stats, gw->why);
		tree_unlock(t0);
	}
}

static void grow_abandon_on_cancel(void *arg)
{
	struct grow_wait *gw = arg;

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	grow_abandon(gw);
	rl_span_free(gw->to);
	free(gw->gs);
}

/* A cancellation in grow_pause(): a give-up, with nothing to take out. */
static void grow_free_on_cancel(void *arg)
{
	struct grow_wait *gw = arg;
	struct range_lock_tree *t0 = gw->gs[0].t;

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	rl_gate_lock_segment(t0);
	if (t0->stats)
		stat_give_up(t0->stats, -ECANCELED);
	tree_unlock(t0);
	rl_span_free(gw->to);
	free(gw->gs);
}

/*
 * GROW_RETRY's pause, no segment locked and nothing entered: up to 50 us,
 * as the call's kind allows.  0 to look again; -ETIMEDOUT past a timed
 * call's deadline (-EINVAL if that is invalid: the call would wait),
 * -EINTR when a signal interrupts an interruptible call; a killable call
 * is a cancellation point here.  (The completion may stay queued for as
 * long as a completion ahead of it on its thread runs.)
 */
static int grow_pause(struct grow_wait *gw, const struct waiter *w)
{
	_Atomic uint32_t never = 0;
	struct timespec until;
	int r;

	if (w->kind == WAIT_TIMED) {
		if (!timespec_valid(w->clockid, w->abstime))
			return -EINVAL;
		if (deadline_passed(w->clockid, w->abstime))
			return -ETIMEDOUT;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	timespec_add_ns(&until, 50000);
	rl_sooner_user_deadline(w, &until);
	pthread_cleanup_push(grow_free_on_cancel, gw);
	if (w->kind == WAIT_KILLABLE)
		pthread_testcancel();
	r = rl_wait(&never, 0, CLOCK_MONOTONIC, &until,
		    w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0);
	if (w->kind == WAIT_KILLABLE)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	if (r == -EINTR && w->kind == WAIT_INTERRUPTIBLE)
		return -EINTR;
	if (w->kind == WAIT_TIMED && deadline_passed(w->clockid, w->abstime))
		return -ETIMEDOUT;
	return 0;
}

/* Wait for every piece (span_wait_parts()'s rules). */
static int grow_wait_pieces(struct grow_wait *gw, struct waiter *w)
{
	unsigned k, j;

	grow_foreach_piece(gw->gs, gw->n, k, j) {
		int r;

		gw->skip_k = k;
		gw->skip_j = j;
		/* (its segment is gs[k]'s: a piece above a hull may begin
		 * in a stripe of another segment) */
		r = rl_span_wait_part(gw->gs[k].t, &gw->gs[k].g.part[j], gw->reader, w);
		if (r)
			return r; /* that piece left its tree: the others leave */
		if (w->kept_after) {
			unsigned k2, j2;
			bool all = true;

			grow_foreach_piece(gw->gs, gw->n, k2, j2)
				all &= atomic_load_explicit(wait_word(&gw->gs[k2].g.part[j2]),
							    memory_order_acquire) == 0;
			if (!all) {
				gw->skip_k = gw->n; /* every piece leaves */
				return w->kept_after;
			}
			grow_foreach_piece(gw->gs, gw->n, k2, j2)
				rl_hb_acquire_last(wait_word(&gw->gs[k2].g.part[j2]));
			return 0;
		}
	}
	return 0;
}

/* Wait for every piece; on a give-up (and on cancellation of a killable
 * call) every piece leaves. */
static int grow_wait(struct grow_wait *gw, struct waiter *w)
{
	int r;

	pthread_cleanup_push(grow_abandon_on_cancel, gw);
	r = grow_wait_pieces(gw, w);
	pthread_cleanup_pop(0);
	if (r) {
		gw->why = r;
		grow_abandon(gw);
	}
	return r;
}

/*
 * Every piece granted, every segment of the new range locked: L takes the
 * new range (see GROW).  @sp: L's span (NULL within one stripe); @to: the
 * new span if L has more parts now, else NULL.  Returns the span to free.
 */
static struct span *grow_merge(struct range_lock_tree *tree, struct range_lock *lock,
			       struct span *sp, struct span *to, struct seg_growth *gs,
			       unsigned n, uint64_t start, uint64_t last, struct wake_list *wl)
{
	struct range_lock_tree *old_t0 = sp ? part_tree(segments_of(tree), PART(sp, 0)) : NULL;
	bool reader = sp ? sp->reader : is_reader(lock);

	for (unsigned k = 0; k < n; k++) {
		struct seg_growth *x = &gs[k];

		if (x->g.owner) {
			if (!old_t0)
				old_t0 = x->t; /* (within one stripe: L's segment) */
			if (x->g.n)
				rl_grow_merge(x->t, &x->g, wl); /* rekeys the owner */
		}
		if (!to)
			continue;
		/* A read held fast within one stripe (materialised above): its
		 * slot goes back, as at its unlock; L is a span's now. */
		if (x->g.owner == lock && (lock->owner_tid & RL_SLOT_TAG)) {
			rl_slot_unmaterialise(x->t, lock->owner_tid);
			lock->owner_tid = rl_thread_id();
		}
		/* Into the new span: L's part here, or the piece that becomes it
		 * (merged pieces are out of their tree already). */
		rl_move_request(x->t, x->g.owner ? x->g.owner : &x->g.part[0], PART(to, k));
		PART(to, k)->owner_tid = k == 0 ? RL_PART_FIRST : RL_PART_TAG;
	}
	if (!to) {
		/* Same segments: every part (or L) was rekeyed in place. */
		lock->start = start;
		lock->last = last;
		return NULL;
	}
	/* The request counts as held in its first part's segment. */
	if (old_t0 != gs[0].t) {
		if (old_t0->stats)
			STAT_ADD(old_t0->stats, held_now, -1);
		if (gs[0].t->stats) {
			STAT_ADD(gs[0].t->stats, held_now, 1);
			STAT_PEAK(gs[0].t->stats, held_now, held_peak);
		}
	}
	to->held = true;
	to->counted = SPAN_HELD;
	to->reader = reader;
	lock->start = start;
	lock->last = last;
	lock->rb_left = (struct range_lock *)(void *)to;
	lock->rb_right = NULL;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	return sp;
}

int rl_seg_grow(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		uint64_t start, uint64_t last, struct waiter *w, bool *reader_out)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n = rl_seg_parts(s, start, last), had, k, j;
	struct span *sp = NULL, *to = NULL, *old = NULL;
	struct range_lock_tree *t_one = NULL;
	struct grow_wait gw = { NULL, n, false, 0, 0, -ECANCELED, NULL };
	struct range_lock_stats *st;
	struct seg_growth *gs;
	struct wake_list wl;
	uint32_t total;
	bool reader;
	int r;

	if (start > lock->start || last < lock->last)
		return -EINVAL; /* (only its owner changes its range) */
	had = rl_seg_parts(s, lock->start, lock->last);
	if (had == 1)
		t_one = rl_seg_tree(s, rl_seg_part(s, lock->start, lock->last, 0).seg);
	gs = calloc(n, sizeof(*gs));
	if (gs && n > had) {
		to = rl_span_new_range(tree, lock, false, n, start, last);
		if (!to) {
			free(gs);
			gs = NULL;
		}
	}
	if (!gs) {
		if (w && w->kind == WAIT_PLAIN)
			rl_die(call, lock, "out of memory for the parts of a range "
			       "that spans segments");
		return -ENOMEM;
	}
	gw.gs = gs;
	gw.to = to;
	for (k = 0; k < n; k++)
		gs[k].t = rl_seg_tree(s, rl_seg_part(s, start, last, k).seg);
retry:
	wl.n = 0;
	grow_lock_all(gs, n, true);
	/* Held, in this tree, and in which mode. */
	if (t_one) {
		if (lock->owner_tid & RL_SLOT_TAG)
			rl_revoke_fast_readers(t_one); /* a read held in a slot */
		check_held(call, t_one, lock, is_linked(lock) && is_reader(lock));
		reader = is_reader(lock);
	} else {
		sp = (struct span *)(void *)lock->rb_left;
		if (!is_linked(lock) || !sp || sp->top != tree)
			rl_die(call, lock, "range is not locked in this tree");
		if (!span_holds(sp)) /* (an asynchronous request still queued) */
			rl_die(call, lock, "range is not held yet");
		reader = sp->reader;
	}
	*reader_out = reader;
	gw.reader = reader;
	if (start == lock->start && last == lock->last) {
		grow_lock_all(gs, n, false);
		free(gs);
		rl_span_free(to);
		return 0;
	}
	for (k = 0; k < n; k++) {
		struct seg_growth *x = &gs[k];
		struct seg_part np = rl_seg_part(s, start, last, k);
		struct range_lock *mine = NULL;

		if (!reader)
			rl_revoke_fast_readers(x->t); /* a growth of a writer is a writer */
		if (__builtin_expect(x->t->nr_requests + 2 >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, lock, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (t_one)
			mine = x->t == t_one ? lock : NULL;
		else
			for (unsigned i = 0; i < sp->n && !mine; i++)
				if (part_tree(s, PART(sp, i)) == x->t)
					mine = PART(sp, i);
		x->g.owner = mine;
		x->g.start = np.start;
		x->g.last = np.last;
		x->g.n = 0;
		if (!mine) {
			x->g.part[x->g.n].start = np.start;
			x->g.part[x->g.n++].last = np.last;
		} else {
			if (np.start < mine->start) {
				x->g.part[x->g.n].start = np.start;
				x->g.part[x->g.n++].last = mine->start - 1;
			}
			if (np.last > mine->last) {
				x->g.part[x->g.n].start = mine->last + 1;
				x->g.part[x->g.n++].last = np.last;
			}
		}
		for (j = 0; j < x->g.n; j++) {
			struct range_lock *p = &x->g.part[j];

			p->owner_tid = RL_GROWTH_TAG;
			p->seqnum = lock->seqnum;
			p->rb_parent_flags = reader ? RL_READER : 0;
			/* Not held while it is scanned (precedes() reads it). */
			atomic_store_explicit(wait_word(p), ONE_BLOCKER, memory_order_relaxed);
		}
	}
	st = gs[0].t->stats;
	r = grow_check(gs, n, reader, !w);
	if (r == GROW_RETRY) {
		/* A completion still queued on another thread: it runs once
		 * that thread's earlier completions have returned. */
		grow_lock_all(gs, n, false);
		/* (from a completion: that one may be queued behind ours) */
		rl_async_check_may_wait(call, lock);
		r = grow_pause(&gw, w);
		if (!r)
			goto retry;
		if (r != -EINVAL) {
			rl_gate_lock_segment(gs[0].t);
			if (gs[0].t->stats)
				stat_give_up(gs[0].t->stats, r);
			tree_unlock(gs[0].t);
		}
		free(gs);
		rl_span_free(to);
		return r; /* nothing entered: @lock holds what it held */
	}
	if (r == GROW_BUSY || (w && w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime) &&
			       grow_count(gs, n, reader, false))) {
		/* (before anything is pinned or changed) */
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		grow_lock_all(gs, n, false);
		free(gs);
		rl_span_free(to);
		return w ? -EINVAL : -EBUSY;
	}
	total = grow_count(gs, n, reader, true);
	if (total && !w) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
		grow_lock_all(gs, n, false);
		free(gs);
		rl_span_free(to);
		return -EBUSY;
	}
	if (total && w->kind != WAIT_TIMED)
		grow_foreach_piece(gs, n, k, j)
			if (gs[k].blockers[j])
				rl_check_self_deadlock(gs[k].t, &gs[k].g.part[j], reader, call,
						       lock);
	grow_block(gs, n, reader);
	grow_foreach_piece(gs, n, k, j) {
		struct range_lock_tree *t = gs[k].t;
		struct range_lock *p = &gs[k].g.part[j];

		rl_insert_request(t, p, reader, gs[k].blockers[j], lock->seqnum);
		if (gs[k].blockers[j]) {
			if (!tree_is_fifo(t))
				atomic_fetch_or_explicit(wait_word(p), HANDOFF,
							 memory_order_relaxed);
			if (t->stats) {
				STAT_ADD(t->stats, waiting_now, 1);
				STAT_PEAK(t->stats, waiting_now, waiting_peak);
			}
		}
	}
	for (k = 0; k < n; k++) /* every counter past s: later arrivals are later */
		if (!seq_before(lock->seqnum, gs[k].t->seqnum))
			gs[k].t->seqnum = lock->seqnum + 1;
	if (total) {
		if (st)
			STAT_ADD(st, contended, 1);
		grow_lock_all(gs, n, false);
		r = grow_wait(&gw, w);
		if (r) {
			free(gs);
			rl_span_free(to);
			return r; /* @lock holds what it held before */
		}
		grow_lock_all(gs, n, true);
		st = gs[0].t->stats;
	}
	old = grow_merge(tree, lock, sp, to, gs, n, start, last, &wl);
	if (st) {
		if (reader)
			STAT_ADD(st, read_acquired, 1);
		else
			STAT_ADD(st, write_acquired, 1);
		stat_spanning(st, n, 1);
	}
	rl_check_resized(tree, lock);
	grow_lock_all(gs, n, false);
	wake_list_flush(&wl);
	free(gs);
	rl_span_free(old);
	return 0;
}
