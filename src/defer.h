/* SPDX-License-Identifier: MIT */
/*
 * Readers first (defer.c has the design): on a tree with
 * RANGE_LOCK_TREE_FLAG_DEFER_WRITERS, a writer's blocking lock call defers
 * to the tree's sleeping readers, for at most RL_DEFER_NS.  Private header.
 */
#ifndef RANGELOCK_DEFER_H
#define RANGELOCK_DEFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#include "waiting.h"

#ifndef RL_HIDDEN
#define RL_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The bound of one call's deferral (the hand-off bound's length). */
#ifndef RL_DEFER_NS
#define RL_DEFER_NS INT64_C(2000000)
#endif

/* Does the user's tree @tree ask writers to defer?  (Its own flags: the
 * flag is never copied into a segment's tree.) */
static inline bool tree_defers_writers(const struct range_lock_tree *tree)
{
	return (__atomic_load_n(&tree->flags, __ATOMIC_RELAXED) &
		RANGE_LOCK_TREE_FLAG_DEFER_WRITERS) != 0;
}

/*
 * The deferral word of a reader's wait in @tree (a segment's tree, or a
 * tree without segments), or NULL when its user's tree is not
 * readers-first: a sleeping reader counts itself there.
 */
RL_HIDDEN _Atomic uint32_t *rl_defer_word_of_sleeper(const struct range_lock_tree *tree);
/* A reader counts itself in @d (NULL: nothing) before it sleeps ... */
static inline void rl_defer_reader_asleep(_Atomic uint32_t *d)
{
	if (__builtin_expect(d != NULL, 0))
		atomic_fetch_add_explicit(d, 2, memory_order_relaxed);
}
/* ... and off after: the last one wakes the deferred writers. */
RL_HIDDEN void rl_defer_reader_count_off(_Atomic uint32_t *d);
static inline void rl_defer_reader_awake(_Atomic uint32_t *d)
{
	if (__builtin_expect(d != NULL, 0))
		rl_defer_reader_count_off(d);
}

/*
 * A writer's blocking lock call (@w: plain, interruptible, killable or
 * timed) on the readers-first user's tree @tree, before it enters: wait
 * while a reader of @tree sleeps, until none does, RL_DEFER_NS has passed,
 * a timed call's deadline has come, or (interruptible) a signal handler
 * ran.  Never fails: the call then goes on as if it had just been made.
 */
RL_HIDDEN void rl_defer_writer(const struct range_lock_tree *tree, const struct waiter *w);

#ifdef RL_TEST_HOOKS
extern int64_t rl_test_defer_ns; /* the bound (default RL_DEFER_NS) */
uint32_t rl_test_defer_word(const struct range_lock_tree *tree);
#endif

#endif /* RANGELOCK_DEFER_H */
