/* SPDX-License-Identifier: MIT */
/*
 * Word mode: whole-resource writers wait on the tree's lock word, as on a
 * mutex, instead of entering the tree (word_mode.c has the design).
 */
#ifndef RANGELOCK_WORD_MODE_H
#define RANGELOCK_WORD_MODE_H

#include <stdbool.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#include "protocol.h"
#include "waiting.h"

enum word_result { WORD_HELD = 1, WORD_TREE };

/*
 * Futexes compare the word's low 32 bits.  A request at an address that is
 * 0 modulo 2^32 (64-bit only) would put values whose low half is 0, 1 or 4
 * (TL_HANDED, TL_HANDOFF_W, TL_HANDOFF_R) in the word -- a free or tree-mode
 * word to a sleeper -- so such a request never waits on the word (it takes
 * the tree path).  Holder values then always have a low half >= 8 or one of
 * 2, 5, 6, 7, none of them a tree_lock state.
 */
static inline bool futex_half_is_small(const struct range_lock *lock)
{
#if UINTPTR_MAX > UINT32_MAX
	return (uint32_t)(uintptr_t)lock == 0;
#else
	(void)lock;
	return false; /* the futex is the whole word */
#endif
}

/* May this call wait on the word?  @w is NULL for trylock. */
static inline bool word_mode_request(const struct range_lock *lock, bool reader,
				     const struct waiter *w)
{
	return !reader && lock->start == 0 && lock->last == RANGE_LOCK_FULL &&
	       (!w || w->kind == WAIT_PLAIN || w->kind == WAIT_TIMED) &&
	       !futex_half_is_small(lock);
}

/* Does the word value @v (read with acquire) make a whole-resource writer
 * wait in word mode? */
static inline bool word_blocks(struct range_lock_tree *tree, uintptr_t v)
{
	return tl_is_fast(v) && !tree_is_fifo(tree) &&
	       __atomic_load_n(&tree->stats, __ATOMIC_RELAXED) == NULL;
}

/*
 * Wait on the word for the whole resource, for writing; @v is the fast value
 * just read (word_blocks() was true).  Returns WORD_HELD (the word is ours),
 * WORD_TREE (take the tree path; w->word says whether marked), or
 * -ETIMEDOUT (timed calls; nothing is left behind).
 */
RL_HIDDEN int rl_word_wait(struct range_lock_tree *tree, struct range_lock *lock,
			   struct waiter *w, uintptr_t v);

#endif /* RANGELOCK_WORD_MODE_H */
