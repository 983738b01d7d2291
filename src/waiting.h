/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a grant (waiting.c): the state of one waiting lock call.
 * A lock call sets it up with waiter_init() and, when it must wait,
 * calls rl_wait_for_grant() after dropping tree_lock.
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

/*
 * The hand-off bound of the default policy: a waiter that has waited this
 * long marks itself (HANDOFF) and can no longer be overtaken.  2 ms: long
 * enough for many hand-overs between running threads (a 1 us critical
 * section is taken ~1000 times meanwhile), short enough that the 99th
 * percentile wait stays within a few milliseconds (rangelock-bench).
 */
#ifndef RL_HANDOFF_NS
#define RL_HANDOFF_NS INT64_C(2000000)
#endif

/* WAIT_ASYNC: an asynchronous submission (async.c), which never waits. */
enum wait_kind { WAIT_PLAIN, WAIT_INTERRUPTIBLE, WAIT_KILLABLE, WAIT_TIMED, WAIT_ASYNC };

/* struct waiter.word: word mode's part in a wait (word_mode.c): none; it
 * polled the word only (its bound not started: it reads no clock for a
 * short wait); it waited longer (w->handoff holds its bound); it asked for
 * the hand-off. */
enum { WORD_NONE, WORD_SPUN, WORD_WAITED, WORD_MARKED };

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
	uint8_t word;             /* WORD_*: did it wait on the lock word first? */
	/* A call that waits for several requests (a set, or the growths of
	 * a grow, then @growth is set): they give up together. */
	const struct range_lock_item *items;
	unsigned n;
	struct growth *growth;
	/* Readers first (defer.c): wait_loop() looked up the tree's
	 * deferral word at the first sleep of a reader; where it counted
	 * the reader (NULL: the tree is not readers-first). */
	bool defer_looked;
	_Atomic uint32_t *defer;
	/* Set by a give-up that found the request granted and kept it
	 * (-EINTR or -ETIMEDOUT; the call returned 0): read only by a
	 * spanning request (seg_span.c), which clears it before each wait. */
	int kept_after;
};

/* Only the fields a lock call reads before it waits: the others are set by
 * lock_common() and rl_wait_for_grant() when it does.  Zeroing the whole
 * struct cost every uncontended call 80 bytes of stores (bench, issue 13). */
static inline void waiter_init(struct waiter *w, enum wait_kind kind,
			       clockid_t clockid, const struct timespec *abstime)
{
	w->kind = kind;
	w->clockid = clockid;
	w->abstime = abstime;
	/* w->word is set by enter() once the fast path has failed. */
}

/* @ns >= 0; int64_t because a bound of seconds does not fit a 32-bit long. */
static inline void timespec_add_ns(struct timespec *ts, int64_t ns)
{
	ts->tv_sec += (time_t)(ns / 1000000000);
	ts->tv_nsec += (long)(ns % 1000000000);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static inline bool timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static inline bool deadline_passed(clockid_t clockid, const struct timespec *abstime)
{
	struct timespec now;

	clock_gettime(clockid, &now);
	return !timespec_before(&now, abstime);
}

RL_HIDDEN void rl_sooner_user_deadline(const struct waiter *w, struct timespec *until);

/*
 * Wait until @w->lock, in @w->tree with its blockers counted, is granted
 * (0), or leave the tree (the give-up path, waiting.c) and return -EINTR
 * or -ETIMEDOUT.  Called without tree_lock; cancellation of a killable
 * wait withdraws the request.
 */
RL_HIDDEN int rl_wait_for_grant(struct waiter *w);

/* CLOCK_MONOTONIC in nanoseconds; a wait's time into the statistics
 * (relaxed RMWs: no tree_lock needed). */
RL_HIDDEN uint64_t rl_now_ns(void);
RL_HIDDEN void rl_stat_wait_time(struct range_lock_stats *st, uint64_t ns);

/*
 * The same for @w->items (@w->n requests of @w->tree, entered together):
 * 0 when every one is granted; else they all left the tree (held ones are
 * released as by an unlock; a growth's owner keeps its range) and -EINTR or
 * -ETIMEDOUT.  A give-up that finds every one granted or eligible keeps
 * them all: 0.
 */
RL_HIDDEN int rl_wait_for_grants(struct waiter *w);

/* Test builds only (RL_TEST_HOOKS: the static test variants): called, if
 * set, on the waiting thread when its sleep ended by a signal or the
 * deadline, before it withdraws under tree_lock -- where
 * tests/unit/test_segments.c grants the request, to reach the give-up that
 * finds its request granted. */
#ifdef RL_TEST_HOOKS
extern void (*rl_test_give_up_hook)(void) RL_HIDDEN;
#define RL_TEST_GIVE_UP_HOOK() do { if (rl_test_give_up_hook) rl_test_give_up_hook(); } while (0)
/* ... and on a spanning request's thread once its entry has dropped the
 * segments' locks with parts waiting (seg_span.c): where a test grants
 * them, so that an asynchronous request's completion runs and frees its
 * parts before the entry returns. */
extern void (*rl_test_span_entered_hook)(void) RL_HIDDEN;
#define RL_TEST_SPAN_ENTERED_HOOK() \
	do { if (rl_test_span_entered_hook) rl_test_span_entered_hook(); } while (0)
#else
#define RL_TEST_GIVE_UP_HOOK() ((void)0)
#define RL_TEST_SPAN_ENTERED_HOOK() ((void)0)
#endif

#endif /* RANGELOCK_WAITING_H */
