/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a grant (waiting.c): the state of one waiting lock call.
 * A lock call sets it up with waiter_init() and, when it must wait,
 * calls wait_for_grant() after dropping tree_lock.
 */
#ifndef RANGELOCK_WAITING_H
#define RANGELOCK_WAITING_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rangelock/rangelock.h>

#ifndef RL_HIDDEN
#define RL_HIDDEN __attribute__((visibility("hidden")))
#endif

enum wait_kind { WAIT_PLAIN, WAIT_INTERRUPTIBLE, WAIT_KILLABLE, WAIT_TIMED };

struct waiter {
	struct range_lock_tree *tree;
	struct range_lock *lock;
	enum wait_kind kind;
	bool reader;              /* for the probes: never read lock's flags unlocked */
	clockid_t clockid;
	const struct timespec *abstime;
	uint64_t wait_start_ns;   /* 0 unless statistics time this wait */
	struct timespec handoff;  /* CLOCK_MONOTONIC: when to set HANDOFF */
	bool marked;              /* HANDOFF set, or a FIFO tree: no bound */
};

/* Only the fields a lock call reads before it waits: the others are set by
 * lock_common() and wait_for_grant() when it does.  Zeroing the whole
 * struct cost every uncontended call 80 bytes of stores (bench, issue 13). */
static inline void waiter_init(struct waiter *w, enum wait_kind kind,
			       clockid_t clockid, const struct timespec *abstime)
{
	w->kind = kind;
	w->clockid = clockid;
	w->abstime = abstime;
}

/*
 * Wait until @w->lock, in @w->tree with its blockers counted, is granted
 * (0), or leave the tree (the give-up path, waiting.c) and return -EINTR
 * or -ETIMEDOUT.  Called without tree_lock; cancellation of a killable
 * wait withdraws the request.
 */
RL_HIDDEN int wait_for_grant(struct waiter *w);

#endif /* RANGELOCK_WAITING_H */
