/* SPDX-License-Identifier: MIT */
/*
 * The segment layer's own header (segments.c has the design): a spanning
 * request's parts (struct span) and what the files of that layer share --
 * segments.c (configuration, statistics, the calls' dispatch, shrink,
 * downgrade, dump), seg_span.c (spanning requests), seg_sets.c (sets
 * across segments), seg_async.c (asynchronous spans) and seg_grow.c (grow
 * across segments).  Included by those files only: the plain tree's files
 * see segments.h.
 */
#ifndef RANGELOCK_SEG_INTERNAL_H
#define RANGELOCK_SEG_INTERNAL_H

#include <stddef.h>

#include "calls.h"
#include "segments.h"
#include "stats.h"

/* A spanning request's parts. */
struct span {
	struct range_lock_tree *top;  /* the tree it was locked in */
	struct range_lock *owner;     /* the user's request */
	unsigned n;
	bool reader;
	uint8_t parts_class;          /* its block's size class (seg_parts.c) */
	int counted;                  /* SPAN_*: under part[0]'s segment lock */
	uint64_t wait_start_ns;       /* its wait, if statistics were on */
	bool in_set;                  /* a member of a set (seg_sets.c) */
	/* The whole request holds (GROW, seg_grow.c): set once every part is
	 * granted, under the locks of every segment it has parts in (at entry,
	 * or by the claim after its wait), so any one of them makes it
	 * stable; read by growths.  Not used by an asynchronous one (astate's
	 * SA_HELD says it). */
	bool held;
	/* An asynchronous spanning request (seg_async.c): */
	struct range_lock_async *user; /* the user's request; NULL if not */
	_Atomic uint32_t astate;      /* SA_*: due completions | flags */
	/* The parts, ascending by segment: each a request (.lock) of its
	 * segment's tree; the rest serves the asynchronous ones. */
	struct range_lock_async part[];
};

#define PART(sp, i) (&(sp)->part[i].lock)

/* struct span's astate (ASYNCHRONOUS, seg_async.c): the completions of parts that
 * are still due, and what became of the request. */
#define SA_COUNT       0xffffu     /* queued parts whose completion is due */
#define SA_HELD        (1u << 29)  /* every part granted: the request holds */
#define SA_CANCELLED   (1u << 30)  /* withdrawn: no completion of the user's */
#define SA_CANCEL_DONE (1u << 31)  /* the withdrawal is done with the span */

/* A request submitted asynchronously to a segmented tree keeps, in its
 * private words: reserved_[1], its first segment + 1 | SEG_ASYNC_SPANNING
 * for a spanning one (set at submission); reserved_[0], SEG_ASYNC_QUEUED
 * while a spanning one is queued (cleared under that segment's lock). */
#define SEG_ASYNC_SPANNING (1u << 31)
#define SEG_ASYNC_QUEUED   1u

#define SEG_INDEX_SHIFT 4
#define SEG_INDEX_MASK 0x1ffu

/* The segment tree of part @p (its first unit's). */
static inline struct range_lock_tree *part_tree(struct rl_segments *s,
						const struct range_lock *p)
{
	return rl_seg_tree(s, (unsigned)((p->start >> s->shift) &
					 (((uint64_t)1 << s->log2n) - 1)));
}

static inline struct span *span_of_first(const struct range_lock *first)
{
	return (struct span *)(void *)((const char *)first - offsetof(struct span, part));
}

/* The span whose part @p is (any part: span_new() sets arg). */
static inline struct span *span_of_part(const struct range_lock *p)
{
	return ((const struct range_lock_async *)(const void *)p)->arg;
}

/*
 * A part of an asynchronous span whose grant queues a completion
 * (RL_ASYNC_TAG) has PART_COMPLETION_DUE in its private word from then
 * until span_part_done() runs for it: set under its segment's lock, cleared
 * by the completion (once rl_async_run() has taken it off its queue), read
 * by a growth under that lock (GROW: a part whose completion is still
 * queued cannot be made to wait again -- its grant would queue it twice).
 */
#define PART_COMPLETION_DUE 1u

static inline void part_completion_due(struct range_lock_async *a)
{
	a->lock.owner_tid |= RL_ASYNC_TAG;
	__atomic_store_n(&a->reserved_[0], PART_COMPLETION_DUE, __ATOMIC_RELAXED);
}

/* Does the request holding spanning part @p's span hold (GROW, seg_grow.c)? */
static inline bool span_holds(const struct span *sp)
{
	if (sp->user)
		return atomic_load_explicit(&((struct span *)sp)->astate,
					    memory_order_acquire) & SA_HELD;
	return sp->held;
}

/*
 * Abort unless the spanning request @lock, whose span is @sp, holds: an
 * asynchronous one may still be queued (its parts wait), which every call
 * that takes a held request refuses before it changes anything, as a
 * plain tree's check_held() does.
 */
static inline void span_check_held(const char *call, const struct span *sp,
				   const struct range_lock *lock)
{
	if (!span_holds(sp))
		rl_die(call, lock, "request is still waiting, not held");
}

/* An acquisition (@d 1: counters only grow) of a request of @n parts, in
 * the segment statistics of @st, a block of struct rl_seg_stats
 * (every segment's, and the tree's own while it runs as a plain tree):
 * spanning only (a request within one segment counts in st alone).
 * Under the lock of @st's tree, with the acquisition itself. */
static inline void stat_spanning(struct range_lock_stats *st, unsigned n, int d)
{
	struct rl_seg_stats *b = (struct rl_seg_stats *)(void *)st; /* (st is its first member) */

	if (n > 1) {
		STAT_ADD(b, spanning, (uint64_t)(int64_t)d);
		STAT_ADD(b, spanning_parts, (uint64_t)((int64_t)d * n));
	}
}

/* A give-up in the statistics @st (@why: -EINTR, -ETIMEDOUT, or
 * -ECANCELED for a cancellation). */
static inline void stat_give_up(struct range_lock_stats *st, int why)
{
	if (why == -EINTR)
		STAT_ADD(st, gave_up_signal, 1);
	else if (why == -ETIMEDOUT)
		STAT_ADD(st, gave_up_timeout, 1);
	else
		STAT_ADD(st, gave_up_cancel, 1);
}

/* seg_parts.c: a block for a span of @n parts (NULL: out of memory), from
 * this thread's cache; and back to it (any thread; NULL: nothing). */
RL_HIDDEN struct span *rl_span_alloc(unsigned n);
RL_HIDDEN void rl_span_free(struct span *sp);

/* seg_span.c: spanning requests (SPANNING there has the rules). */
RL_HIDDEN struct span *rl_span_new_range(struct range_lock_tree *tree, struct range_lock *lock,
					 bool reader, unsigned n, uint64_t start, uint64_t last);
static inline struct span *span_new(struct range_lock_tree *tree, struct range_lock *lock,
				    bool reader, unsigned n)
{
	return rl_span_new_range(tree, lock, reader, n, lock->start, lock->last);
}
/* The hooks the plain tree calls for a first part (protocol.h). */
RL_HIDDEN extern const struct rl_part_ops rl_span_part_ops;
RL_HIDDEN void rl_span_count(struct span *sp, struct range_lock_tree *t0, int to, int why);
RL_HIDDEN bool rl_span_leave(struct range_lock_tree *t, struct span *sp, struct range_lock *p,
			     int why);
RL_HIDDEN int rl_span_enter(const char *call, struct span *sp, const struct range_lock *shown,
			    struct waiter *w);
RL_HIDDEN int rl_span_wait_part(struct range_lock_tree *t, struct range_lock *p, bool reader,
				struct waiter *w);

#endif /* RANGELOCK_SEG_INTERNAL_H */
