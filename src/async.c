/* SPDX-License-Identifier: MIT */
/*
 * librangelock: asynchronous requests -- acquiring a range without
 * blocking a thread (range_read_lock_async(), for event loops).
 *
 * The submission (lock_async(): the entry of every lock call, then the
 * tree) is at the end of this file; before it, what follows a submission:
 * the completion queue, the withdrawal (range_lock_async_cancel()) and
 * range_lock_async_init().
 *
 * DESIGN
 * ======
 * A queued asynchronous request is an ordinary waiter of the tree (the
 * invariant of protocol.c's DESIGN comment holds for it as for any other)
 * with three differences, all decided at submission under tree_lock:
 *   - no thread waits for it: its wait word never has SLEEPING;
 *   - in the default policy it is HANDOFF-marked from the start, so that
 *     nobody overtakes it (rl_scan_entry() finds it "must wait") and the
 *     release that takes its last blocker grants it (put_blocker(): a
 *     marked or non-sleeping waiter is granted, never made ELIGIBLE).  In a
 *     FIFO tree every waiter is granted at count 0 anyway.  So a queued
 *     asynchronous request is granted exactly by the release that leaves
 *     it no blocker, in both policies, and waits only for the requests
 *     that were in the tree when it was queued and conflict with it (and
 *     for a growth of one of those into its range: a growth takes its
 *     owner's place, protocol.c);
 *   - owner_tid carries RL_ASYNC_TAG, so that this grant appends the
 *     request to the RELEASING thread's completion queue (async_granted(),
 *     protocol.h) instead of waking a thread.
 *
 * The completion runs after that release has dropped tree_lock: every
 * release path ends in wake_list_flush(), which runs this thread's queue
 * (rl_async_run()).  Completions run one after the other, in grant order;
 * a completion that releases a range (unlock in the completion, the usual
 * pattern of a chain) appends to the same queue, which the outermost
 * rl_async_run() drains: never nested, constant stack.  Cancellation is
 * disabled meanwhile, so that a cancellation point inside a completion
 * cannot unwind the releaser with granted requests left in its queue
 * (they would hold their ranges with nobody told).
 *
 * Exactly once: a request enters a queue only at its grant, and it is
 * granted once (a granted request counts nobody's release any more).  The
 * tag says at every tree_lock release whether the request is queued (in
 * the tree, word != 0; the grant clears it under tree_lock), and the
 * withdrawal decides under tree_lock: a queued request leaves the tree
 * through rl_remove_request() like any give-up (the requests that counted it
 * lose that blocker) and is never granted; one without the tag (granted,
 * its completion queued or run, or held at submission) is left alone.
 * tests/model/rangelock.pml -DASYNC checks this, the order and the
 * progress (its aq[] is the tag).
 *
 * Who writes what:
 *   RL_ASYNC_TAG in owner_tid: set by the submitter, cleared by the
 *                 granter, both under tree_lock (protocol.h).
 *   req->next_:   by the granter under tree_lock (its own queue), read by
 *                 the same thread.
 *   req->tree_:   by the submitter before it publishes the request (every
 *                 submission, held at once or queued: it is what makes a
 *                 request cancellable); reset by init and the withdrawer.
 *   req->done, req->arg: by the user, before the submission.
 * The library touches nothing of @req after calling its completion.
 *
 * Memory order: the grant is put_blocker()'s release CAS, as for any
 * waiter; the completion runs on the thread that made it, after every
 * release that counted for the request happened under tree_lock before
 * (each announced by rl_hb_release(word)), so the completion's
 * rl_hb_acquire_last(word) is all race detectors need: the completion
 * happens after the release that granted it, and after the earlier
 * holders' critical sections.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "calls.h"
#include "protocol.h"
#include "segments.h"
#include "stats.h"

_Thread_local struct rl_async_queue rl_async_queue
	__attribute__((tls_model("initial-exec")));

/* Below: a granted request of a bound tree takes its OFD lock, without
 * waiting (0), or lets go of its range (-EAGAIN). */
static int rl_async_file_grant(struct range_lock_async *req);

int range_lock_async_init(struct range_lock_async *req, uint64_t start,
			  uint64_t last, range_lock_async_fn *done, void *arg)
{
	int r;

	if (!req)
		rl_die("range_lock_async_init", NULL, "NULL request");
	r = range_lock_init(&req->lock, start, last);
	req->done = r ? NULL : done;
	req->arg = arg;
	req->tree_ = NULL;
	req->next_ = NULL;
	req->reserved_[0] = req->reserved_[1] = 0;
	return r ? r : done ? 0 : -EINVAL;
}

/* A completion left by pthread_exit() (or a thread cancellation it enabled
 * itself): the requests queued behind it would hold their ranges with
 * nobody told.  Say so and abort. */
static void completion_did_not_return(void *arg)
{
	(void)arg;
	rl_asan_unwound(); /* annotate.h: pthread_exit()'s unwinding */
	rl_die("rl_async_run", NULL, "a completion of an asynchronous request did "
	       "not return (pthread_exit() in a completion?)");
}

void rl_async_run(void)
{
	struct rl_async_queue *q = &rl_async_queue;
	struct range_lock_async *req;
	int cancel_state;

	if (q->running)
		return; /* a completion of ours granted it: run after it returns */
	q->running = true;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	pthread_cleanup_push(completion_did_not_return, NULL);
	while ((req = q->head)) {
		q->head = req->next_;
		if (!q->head)
			q->tail = NULL;
		rl_hb_acquire_last(wait_word(&req->lock));
		/* After this, @req belongs to its completion. */
		req->done(req, rl_async_file_grant(req));
	}
	pthread_cleanup_pop(0);
	q->running = false;
	pthread_setcancelstate(cancel_state, NULL);
}

void rl_async_check_may_wait(const char *call, const struct range_lock *lock)
{
	/* The wait would stall the release this completion runs in; the
	 * range waited for may even be one whose completion is queued
	 * behind this one, on this thread: a deadlock. */
	if (__builtin_expect(rl_async_queue.running, 0))
		rl_die(call, lock, "a completion of an asynchronous request must "
		       "not wait for a range (use trylock or an asynchronous request)");
}

/* Withdraw @req from tree @t (the tree it is queued in: the user's, or a
 * segment's) if it is still queued: 0, else -EALREADY. */
int rl_async_cancel_in(struct range_lock_tree *t, struct range_lock_async *req)
{
	struct wake_list wl; /* only wl.n is set: zeroing the array costs stores */
	struct range_lock *lock = &req->lock;
	struct range_lock_stats *st;
	uint32_t word;

	wl.n = 0;
	tree_lock(t);
	if (!is_async(lock)) {
		tree_unlock(t);
		return -EALREADY; /* granted: its completion runs exactly once */
	}
	/* Queued: in the tree with blockers (a grant would have cleared the
	 * tag under tree_lock, which we hold). */
	word = atomic_load_explicit(wait_word(lock), memory_order_relaxed);
	if (blockers_of(word))
		t->nr_waiting--;
	st = t->stats;
	if (st) {
		STAT_ADD(st, waiting_now, -1);
		STAT_ADD(st, gave_up_cancel, 1);
	}
	rl_remove_request(t, lock, &wl);
	req->tree_ = NULL;
	lock->owner_tid = 0;
	tree_unlock(t);
	wake_list_flush(&wl);
	return 0;
}

int range_lock_async_cancel(struct range_lock_tree *tree, struct range_lock_async *req)
{
	if (!tree || !req)
		rl_die("range_lock_async_cancel", NULL, "NULL tree or request");
	/* The submitter wrote tree_ before it published the request; the
	 * caller, who submitted it, sees it. */
	if (req->tree_ != tree)
		rl_die("range_lock_async_cancel", &req->lock,
		       req->tree_ ? "request was submitted to another tree"
				  : "request was not submitted asynchronously (or was withdrawn)");
	/* A queued request pins its tree's mode (the gate, seg_gate.c). */
	if (__builtin_expect(tree_is_segmented(tree), 0) && rl_gate_segments(tree))
		return rl_seg_async_cancel(tree, req);
	return rl_async_cancel_in(tree, req);
}

/* ---- submission ------------------------------------------------------ */

/*
 * Submit @req without waiting: the entry of a lock call (enter(): the lock
 * word on an empty tree, the reader fast path; never a word wait, which
 * WAIT_ASYNC turns off), then the tree as lock_common() does it.  A request
 * that must wait is queued HANDOFF-marked in the default policy (nothing
 * overtakes it, and put_blocker() grants it directly at count 0: it never
 * sleeps, so it is never ELIGIBLE) with RL_ASYNC_TAG, which makes its grant
 * queue the completion.  Returns 0 (held now) or -EINPROGRESS.  @tree:
 * where it enters; @top: the tree the user named (the same, or the tree
 * whose segment @tree is: seg_async.c), which range_lock_async_cancel()
 * will be given.
 */
static inline __attribute__((always_inline)) int
lock_async_local(const char *call, struct range_lock_tree *tree,
		 struct range_lock_tree *top, struct range_lock_async *req, bool reader)
{
	struct range_lock *lock = &req->lock;
	struct entry_scan scan;
	struct waiter w;
	uint32_t blockers;
	int r;

	waiter_init(&w, WAIT_ASYNC, CLOCK_MONOTONIC, NULL);
	r = enter(call, tree, lock, reader, &w);
	req->tree_ = top; /* submitted: range_lock_async_cancel() accepts it */
	if (r == ENTER_REFUSED)
		return RL_GATE_REFUSED; /* seg_gate.c */
	if (r != ENTER_TREE)
		return 0; /* held through the word or a slot */
	if (reader)
		rl_maybe_bias(tree);
	else
		rl_revoke_fast_readers(tree);
	rl_scan_entry(tree, lock, reader, false, &scan);
	blockers = insert_scanned(tree, lock, reader, &scan, true);
	if (blockers)
		lock->owner_tid |= RL_ASYNC_TAG; /* queued (tree_lock held) */
	tree_unlock(tree);
	return blockers ? -EINPROGRESS : 0;
}

/* The same for a segment's tree (seg_async.c); out of line. */
int rl_lock_async_in(const char *call, struct range_lock_tree *tree,
		     struct range_lock_tree *top, struct range_lock_async *req, bool reader)
{
	return lock_async_local(call, tree, top, req, reader);
}

/* A bound tree, with segments or not: the local level, then the OFD
 * lock without waiting (out of line: off the others' path). */
static __attribute__((noinline)) int
lock_async_bound(const char *call, struct range_lock_tree *tree,
		 struct range_lock_async *req, bool reader)
{
	int r;

	if (file_range_bad(call, tree, &req->lock, true))
		return -EINVAL;
	r = is_segments(file_of(tree)) ? rl_seg_lock_async(call, tree, req, reader)
				       : lock_async_local(call, tree, tree, req, reader);
	if (r == 0 && rl_file_acquire(call, tree, &req->lock, reader, NULL, RL_FILE_TRY))
		return -EAGAIN; /* another process holds bytes of it: let go */
	return r;
}

static int lock_async(const char *call, struct range_lock_tree *tree,
		      struct range_lock_async *req, bool reader)
{
	struct range_lock_file *f;

	if (!tree || !req)
		rl_die(call, NULL, "NULL tree or request");
	if (!req->done)
		rl_die(call, &req->lock, "asynchronous request has no completion "
		       "(range_lock_async_init())");
	f = file_of(tree);
	if (__builtin_expect(f != NULL, 0)) {
		if (is_unbound_segments(f))
			return rl_seg_lock_async(call, tree, req, reader);
		return lock_async_bound(call, tree, req, reader);
	}
	return lock_async_local(call, tree, tree, req, reader);
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
static int rl_async_file_grant(struct range_lock_async *req)
{
	struct range_lock_tree *tree = req->tree_, *t;
	struct range_lock *lock = &req->lock;
	bool reader;

	/* (A part of a spanning request has no tree_: seg_async.c.) */
	if (__builtin_expect(!tree || rl_bound_file(file_of(tree)) == NULL, 1))
		return 0;
	/* Its mode is a bit of its flags word, which the rebalancing of the
	 * tree it is a node of rewrites (keeping the bit): read under that
	 * tree's lock -- its segment's, on a tree with segments, where a
	 * queued request lies within one stripe. */
	t = is_segments(file_of(tree)) && rl_gate_segments(tree)
		? rl_seg_one(file_of(tree), lock) : tree;
	tree_lock(t);
	reader = is_reader(lock);
	tree_unlock(t);
	return rl_file_acquire(reader ? "range_read_lock_async" : "range_write_lock_async",
			       tree, lock, reader, NULL, RL_FILE_TRY);
}
