/* SPDX-License-Identifier: MIT */
/*
 * librangelock: asynchronous spanning requests of segmented trees
 * (segments.c has the design).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_internal.h"

/* ---- asynchronous spanning requests ------------------------------------ */

/*
 * ASYNCHRONOUS.  A spanning request submitted asynchronously
 * (range_write_lock_async()) enters as any spanning request (rl_span_enter():
 * one arrival, every waiting part HANDOFF-marked in the default policy);
 * each waiting part is itself a queued asynchronous request of its
 * segment (RL_ASYNC_TAG, and the fields of a struct range_lock_async),
 * granted there by the release that takes its last blocker, which runs
 * the part's completion, span_part_done(), once it has dropped its locks
 * (async.c).  No thread waits: the grant condition is the model's (every
 * part granted), reached in whatever order the segments grant.
 *
 * sp->astate decides, by CAS, between the two ends:
 *   - the last due part completion turns the count to SA_HELD and runs
 *     the user's completion (span_async_held());
 *   - range_lock_async_cancel() sets SA_CANCELLED unless SA_HELD is set,
 *     then takes every part out (rl_span_leave(): a release walk in each
 *     segment, the queued and the granted alike), takes the queued ones,
 *     whose completions will never run, off the count and sets
 *     SA_CANCEL_DONE.  A part granted meanwhile runs its completion,
 *     which only counts down: whoever brings a cancelled span to count 0
 *     with SA_CANCEL_DONE frees it.  So after a withdrawal nothing
 *     touches the user's request or the tree (which the user may free or
 *     destroy), and the span is freed exactly once.
 * The cancel reads nothing the holder may change once the completion
 * runs (it may unlock, relock, shrink or downgrade the request): the
 * submission records in the request's private words its first segment
 * (reserved_[1], SEG_ASYNC_*: constant) and that it is queued
 * (reserved_[0] = SEG_ASYNC_QUEUED), which span_async_held() clears under
 * that segment's lock before it calls the completion.  The cancel reads
 * it under the same lock; only while it is set does it follow rb_left to
 * the span (alive then: nobody holds the request, so nobody frees it).
 * The parts' own completions never touch a tree (their tree_ is NULL, so
 * rl_async_run() asks no file for them): after a withdrawal the user may
 * destroy the tree while a late part completion is still queued.
 *
 * Giving up is a cancellation's: every part leaves, each under its own
 * segment's lock, ascending -- the form span_abandon() has and the model
 * checks (segments.pml: "a request that finishes leaves no part").
 */
static void span_async_held(struct span *sp)
{
	struct range_lock_tree *top = sp->top, *t0 = part_tree(segments_of(top), PART(sp, 0));
	struct range_lock_async *req = sp->user;
	bool reader = sp->reader;
	int status = 0;

	tree_lock(t0);
	rl_span_count(sp, t0, SPAN_HELD, 0);
	req->reserved_[0] = 0; /* not queued: a cancel now says -EALREADY */
	tree_unlock(t0);
	/* A bound tree's second level, without waiting, as on any tree
	 * (async.c): another process holds bytes of it, the request lets go
	 * (the span is freed) and the completion gets -EAGAIN. */
	if (rl_bound_file(file_of(top)))
		status = rl_file_acquire(reader ? "range_read_lock_async"
					       : "range_write_lock_async",
					 top, &req->lock, reader, NULL, RL_FILE_TRY);
	/* After this, @req and the span belong to the completion (which may
	 * unlock it: the span is freed then). */
	req->done(req, status);
}

/* The completion of a part (rl_async_run(), on the thread whose release
 * granted it, no lock held); @status is 0 (a segment is never bound). */
static void span_part_done(struct range_lock_async *a, int status)
{
	struct span *sp = a->arg;
	uint32_t old, new;

	(void)status;
	/* Off its queue (rl_async_run() read its link before calling us): a
	 * growth may make it wait again (release: after that read). */
	__atomic_store_n(&a->reserved_[0], 0, __ATOMIC_RELEASE);
	old = atomic_load_explicit(&sp->astate, memory_order_relaxed);
	do {
		new = old - 1;
		if (!(old & SA_CANCELLED) && (new & SA_COUNT) == 0)
			new = SA_HELD; /* the last part: the request holds */
	} while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old, new,
							memory_order_acq_rel,
							memory_order_relaxed));
	if (new == SA_HELD)
		span_async_held(sp);
	else if (new == (SA_CANCELLED | SA_CANCEL_DONE))
		rl_span_free(sp); /* the withdrawal finished before us */
}

static int span_lock_async(const char *call, struct range_lock_tree *tree,
			   struct range_lock_async *req, bool reader, unsigned n)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock *lock = &req->lock;
	struct span *sp = span_new(tree, lock, reader, n);
	struct waiter w;
	int r;

	if (!sp)
		return -ENOMEM;
	sp->user = req;
	for (unsigned i = 0; i < n; i++) {
		sp->part[i].done = span_part_done;
		sp->part[i].arg = sp;
		sp->part[i].tree_ = NULL; /* (no file to ask: rl_async_run()) */
	}
	/* For the cancel (ASYNCHRONOUS): queued until span_async_held()
	 * (rl_span_enter() clears it if the request is held at once). */
	req->reserved_[1] = SEG_ASYNC_SPANNING |
			    (rl_seg_part(s, lock->start, lock->last, 0).seg + 1);
	req->reserved_[0] = SEG_ASYNC_QUEUED;
	/* A spanning hold from the start (its completion may run on another
	 * thread as soon as rl_span_enter() drops the locks, and unlock it). */
	lock->rb_left = (struct range_lock *)(void *)sp;
	lock->rb_right = NULL;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	req->tree_ = tree; /* submitted: range_lock_async_cancel() accepts it */
	waiter_init(&w, WAIT_ASYNC, CLOCK_MONOTONIC, NULL);
	r = rl_span_enter(call, sp, lock, &w);
	if (r == -EAGAIN) { /* the gate refused a segment: nothing entered */
		lock->rb_left = NULL;
		lock->rb_parent_flags = 0;
		req->reserved_[0] = 0;
		req->reserved_[1] = 0;
		rl_span_free(sp);
		return RL_GATE_REFUSED;
	}
	return r ? -EINPROGRESS : 0;
}

int rl_seg_lock_async(const char *call, struct range_lock_tree *tree,
		      struct range_lock_async *req, bool reader)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock *lock = &req->lock;
	unsigned n = rl_seg_parts(s, lock->start, lock->last);
	int r;

	/* The gate (seg_gate.c): an asynchronous request never drains (no
	 * thread would wait for it); in PLAIN mode it is a request of the
	 * tree itself (the cancel finds it there: reserved_ 0). */
	do {
		uintptr_t v = atomic_load_explicit(tree_lock_word(tree),
						   memory_order_acquire);

		if (v != TL_SEGMENTED) {
			if (v == 0 && !rl_gate_wide(s, n) && rl_gate_switch_back(tree))
				continue;
			req->reserved_[1] = 0;
			req->reserved_[0] = 0;
			r = rl_lock_async_in(call, tree, tree, req, reader);
		} else if (n == 1) { /* a request of its segment, as on any tree */
			unsigned g = rl_seg_part(s, lock->start, lock->last, 0).seg;

			req->reserved_[1] = g + 1; /* the cancel's segment */
			req->reserved_[0] = 0;
			r = rl_lock_async_in(call, rl_seg_tree(s, g), tree, req, reader);
		} else {
			check_args(call, tree, lock);
			if (is_linked(lock))
				rl_die(call, lock, ALREADY_IN_TREE);
			r = span_lock_async(call, tree, req, reader, n);
		}
	} while (r == RL_GATE_REFUSED);
	return r;
}

static int seg_async_cancel(struct range_lock_tree *t0, struct range_lock_async *req)
{
	struct rl_segments *s;
	unsigned withdrawn = 0;
	struct span *sp;
	uint32_t old;

	tree_lock(t0);
	if (!(req->reserved_[0] & SEG_ASYNC_QUEUED)) {
		tree_unlock(t0);
		return -EALREADY; /* held: at submission, or its completion runs */
	}
	sp = (struct span *)(void *)req->lock.rb_left; /* queued: unchanged */
	old = atomic_load_explicit(&sp->astate, memory_order_relaxed);
	do {
		if (old & SA_HELD) { /* span_async_held() waits for t0 */
			tree_unlock(t0);
			return -EALREADY;
		}
	} while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old, old | SA_CANCELLED,
							memory_order_acq_rel,
							memory_order_relaxed));
	req->reserved_[0] = 0;
	tree_unlock(t0);
	s = segments_of(sp->top);
	for (unsigned i = 0; i < sp->n; i++)
		withdrawn += rl_span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), -ECANCELED);
	req->tree_ = NULL; /* yours again */
	old = atomic_load_explicit(&sp->astate, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old,
						      (old - withdrawn) | SA_CANCEL_DONE,
						      memory_order_acq_rel, memory_order_relaxed))
		;
	if (((old - withdrawn) & SA_COUNT) == 0)
		rl_span_free(sp); /* no part's completion is due any more */
	return 0;
}

int rl_seg_async_cancel(struct range_lock_tree *tree, struct range_lock_async *req)
{
	struct rl_segments *s = segments_of(tree);
	uint32_t where = req->reserved_[1]; /* constant since the submission */
	struct range_lock_tree *t;

	/* Not submitted since the tree got (these) segments: held and
	 * unlocked, nothing is queued. */
	if (!(where & ~SEG_ASYNC_SPANNING) || (where & ~SEG_ASYNC_SPANNING) > 1u << s->log2n)
		return -EALREADY;
	t = rl_seg_tree(s, (where & ~SEG_ASYNC_SPANNING) - 1);
	return where & SEG_ASYNC_SPANNING ? seg_async_cancel(t, req) : rl_async_cancel_in(t, req);
}
