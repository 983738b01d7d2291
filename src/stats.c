/* SPDX-License-Identifier: MIT */
/*
 * librangelock: statistics (enable, get, reset) and the dump of a tree.
 * The counters are updated by the lock's other files through stats.h; the
 * wait times by waiting.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <rangelock/rangelock.h>

#include "annotate.h"
#include "fast_read.h"
#include "interval_tree.h"
#include "protocol.h"
#include "segments.h"
#include "stats.h"

/* ---- enable, get, reset and dump ----------------------------------- */

/* Under tree_lock: recount held_now and waiting_now from the tree.  A
 * request that spans segments counts once, by its first part, as what it
 * last counted itself (part_ops()->counted(), protocol.h: that part's
 * segment is locked). */
void rl_stats_recount(struct range_lock_tree *tree, struct range_lock_stats *st)
{
	uint64_t held = 0, waiting = 0;
	const struct range_lock *n;

	for (n = tree->leftmost; n; n = rl_itree_next_inorder(n)) {
		if (is_part(n)) {
			if ((n->owner_tid & ~RL_ASYNC_TAG) == RL_PART_FIRST) {
				int c = part_ops()->counted(n);

				held += c == SPAN_HELD;
				waiting += c == SPAN_WAITING;
			}
		} else if (atomic_load_explicit(wait_word((struct range_lock *)n),
						memory_order_relaxed) != 0) {
			waiting++;
		} else if (!is_growth(n)) { /* a granted growth: its owner is held */
			held++;
		}
	}
	__atomic_store_n(&st->held_now, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_now, waiting, __ATOMIC_RELAXED);
	__atomic_store_n(&st->held_peak, held, __ATOMIC_RELAXED);
	__atomic_store_n(&st->waiting_peak, waiting, __ATOMIC_RELAXED);
}


void rl_stats_zero(struct range_lock_stats *st)
{
	stat_word_t *f = (stat_word_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		__atomic_store_n(&f[i], 0, __ATOMIC_RELAXED);
}

int range_lock_tree_enable_stats(struct range_lock_tree *tree,
				 struct range_lock_stats *storage)
{
	int r = 0;

	if (!tree || !storage)
		return -EINVAL;
	if (tree_is_segmented(tree))
		return rl_seg_enable_stats(tree, storage);
	tree_lock(tree);
	if (tree->stats && tree->stats != storage) {
		r = -EBUSY;
	} else if (!tree->stats) {
		/* Statistics count in the tree: no fast reads from now on. */
		rl_revoke_fast_readers(tree);
		/* Atomics without tree_lock (waiters' wait times, readers
		 * of the pointer): Valgrind's tools must not check them. */
		rl_race_ok(storage, sizeof(*storage));
		rl_race_ok(&tree->stats, sizeof(tree->stats));
		rl_stats_zero(storage);
		rl_stats_recount(tree, storage);
		/* release: a waiter that sees the pointer sees zeroed counters */
		__atomic_store_n(&tree->stats, storage, __ATOMIC_RELEASE);
	}
	tree_unlock(tree);
	return r;
}

int range_lock_tree_get_stats(struct range_lock_tree *tree,
			      struct range_lock_stats *out)
{
	const stat_word_t *f;
	uint64_t *o = (uint64_t *)out;

	if (!tree || !out)
		return -EINVAL;
	if (tree_is_segmented(tree))
		return rl_seg_get_stats(tree, out);
	tree_lock(tree);
	if (!tree->stats) {
		tree_unlock(tree);
		memset(out, 0, sizeof(*out));
		return -ENODATA;
	}
	f = (const stat_word_t *)tree->stats;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&f[i], __ATOMIC_RELAXED);
	tree_unlock(tree);
	return 0;
}

int range_lock_tree_get_segment_stats(struct range_lock_tree *tree,
				      struct range_lock_segment_stats *stats, size_t size)
{
	struct range_lock_segment_stats mine;
	int r = 0;

	if (!tree || !stats || size < sizeof(uint64_t))
		return -EINVAL;
	if (tree_is_segmented(tree)) {
		r = rl_seg_get_segment_stats(tree, &mine);
	} else {
		/* A tree without segments is one segment. */
		memset(&mine, 0, sizeof(mine));
		tree_lock(tree);
		if (tree->stats)
			mine.one_segment =
				__atomic_load_n(&tree->stats->read_acquired, __ATOMIC_RELAXED) +
				__atomic_load_n(&tree->stats->write_acquired, __ATOMIC_RELAXED);
		else
			r = -ENODATA;
		tree_unlock(tree);
	}
	/* What the caller's struct has beyond ours (a later header's
	 * fields) reads zero. */
	memcpy(stats, &mine, size < sizeof(mine) ? size : sizeof(mine));
	if (size > sizeof(mine))
		memset((char *)stats + sizeof(mine), 0, size - sizeof(mine));
	return r;
}

void range_lock_tree_reset_stats(struct range_lock_tree *tree)
{
	if (!tree)
		rl_die("range_lock_tree_reset_stats", NULL, "NULL tree");
	if (tree_is_segmented(tree)) {
		rl_seg_reset_stats(tree);
		return;
	}
	tree_lock(tree);
	if (tree->stats) {
		rl_stats_zero(tree->stats);
		rl_stats_recount(tree, tree->stats);
	}
	tree_unlock(tree);
}

/* The dump of @tree, whose lock the caller holds (fast readers revoked):
 * also each segment's, and a tree with segments run as a plain tree
 * (segments.c).  A part of a spanning request is printed by @part (the
 * segment layer's, which knows its geometry), given the line's middle
 * (mode, state, seqnum, blockers) and its end (" handoff" or ""). */
void rl_dump_locked(struct range_lock_tree *tree, FILE *out, rl_dump_part_fn part, void *arg)
{
	const struct range_lock *n;
	uint32_t word;
	char who[24], mid[64];

	fprintf(out, "range_lock_tree %p: %u request(s), next seqnum %llu\n",
		(void *)tree, tree->nr_requests, (unsigned long long)tree->seqnum);
	/* Word waiters live on their stacks only: the displacement above
	 * woke the sleeping ones (the count is the futex's: tree_lock
	 * sleepers on the same word are in it, spinning waiters are not),
	 * and they enter the tree as soon as tree_lock is free. */
	if (rl_tl_word_sleepers_woken)
		fprintf(out, "  (%d thread(s) slept on the lock word, whole-resource "
			"writers among them; woken, they now enter the tree)\n",
			rl_tl_word_sleepers_woken);
	for (n = tree->leftmost; n; n = rl_itree_next_inorder(n)) {
		word = atomic_load_explicit(wait_word((struct range_lock *)n),
					    memory_order_relaxed);
		snprintf(mid, sizeof(mid), "%s %s seq=%llu blocking=%u",
			 is_reader(n) ? "read " : "write",
			 word == 0 ? "held    " : word == ELIGIBLE ? "eligible" : "waiting ",
			 (unsigned long long)n->seqnum, blockers_of(word));
		if (is_part(n) && part) {
			part(out, n, mid, (word & HANDOFF) ? " handoff" : "", arg);
			continue;
		}
		/* A reader taken from its slot knows its slot, not its thread. */
		if (n->owner_tid & RL_SLOT_TAG)
			snprintf(who, sizeof(who), "slot=%u", n->owner_tid & ~RL_SLOT_TAG);
		else if (is_part(n)) /* of a request that spans segments */
			snprintf(who, sizeof(who), "span part");
		else if (is_growth(n)) /* units a held request is growing into */
			snprintf(who, sizeof(who), "growth");
		else if (is_async(n)) /* submitted by that thread, no thread waits */
			snprintf(who, sizeof(who), "tid=%u async", n->owner_tid & ~RL_ASYNC_TAG);
		else
			snprintf(who, sizeof(who), "tid=%u", n->owner_tid);
		fprintf(out, "  [%llu, %llu] %s %s%s\n",
			(unsigned long long)n->start, (unsigned long long)n->last, mid, who,
			(word & HANDOFF) ? " handoff" : "");
	}
}

void range_lock_tree_dump(struct range_lock_tree *tree, FILE *out)
{
	int oldstate;

	if (!tree || !out)
		rl_die("range_lock_tree_dump", NULL, "NULL tree or stream");
	/* fprintf() is a cancellation point: never be cancelled holding
	 * tree_lock. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	if (tree_is_segmented(tree)) {
		rl_seg_dump(tree, out);
	} else {
		rl_tl_word_sleepers_woken = 0;
		tree_lock(tree);
		rl_revoke_fast_readers(tree); /* fast readers are shown as the held readers they are */
		rl_dump_locked(tree, out, NULL, NULL);
		tree_unlock(tree);
	}
	pthread_setcancelstate(oldstate, NULL);
}
