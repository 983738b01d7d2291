/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the gate of a tree with segments -- one tree for every
 * workload (docs/design.md, section 15, "The gate"; SPIN model
 * tests/model/gate.pml).
 *
 * A tree with segments can hold its requests in two places: its segments
 * (each a plain tree; spanning requests split into parts), or the user's
 * tree itself, run as a plain tree (word mode, fast reads, everything of a
 * tree without segments).  Never both at once (G1).  Which one is the
 * tree's own lock word, the "top word":
 *
 *   TL_SEGMENTED             SEG: requests enter the segments; the plain
 *                            tree is empty.
 *   TL_DRAINING(|SLEEPERS)   DRAIN: one wide request (the drainer) has
 *                            closed the segments and waits for them to
 *                            empty; the plain tree is empty, and its
 *                            internal lock reads as held (TL_LOCKED is
 *                            set), so everyone who wants it waits.
 *   anything else            PLAIN: requests enter the plain tree; every
 *                            segment is CLOSED (empty, word TL_CLOSED).
 *
 * A request present in one of them (held, waiting, or queued) pins its mode:
 * SEG and DRAIN change to PLAIN only when the segments are empty, PLAIN to
 * SEG only when the plain tree is empty.  So every call that takes a
 * present request (unlock, downgrade, shrink, grow, unlock_many, cancel)
 * finds it by the top word (rl_gate_segments()), and the calls that enter
 * a request go through the gate below.
 *
 * A segment's gate state: OPEN; CLOSING (RL_TREE_CLOSING in its flags,
 * written under its lock: not empty, entries refused, the release that
 * leaves it empty closes it and counts pending down); CLOSED (its word
 * TL_CLOSED: empty, entries refused).  Entries are refused by
 * tree_lock_entering() (protocol.h): the request has entered nothing and
 * comes back here.
 *
 * WHO WRITES WHAT
 *   top word: SEG -> DRAIN, the drainer (CAS); DRAIN -> LOCKED (drained) or
 *       -> SEG (given up), the drainer alone; 0 -> LOCKED -> SEG (switch
 *       back), whoever wins the CAS from 0; every other value, the plain
 *       tree's protocol, as on any tree.
 *   a segment's CLOSING flag: set by the drainer, cleared by the release
 *       that empties the segment or by the drainer's give-up, all under
 *       the segment's lock; a grow that takes a CLOSED segment sets it too
 *       (its lock, TL_ACQ_CLOSED).
 *   a segment's word TL_CLOSED: written by the drainer (closing an empty
 *       segment, under its lock) or by the release that empties a closing
 *       segment; reopened (-> 0) by the switch back, which holds the top
 *       word LOCKED (no drain can run), or taken by the give-up and a grow
 *       (TL_ACQ_CLOSED).
 *   pending (struct rl_segments): the number of closing segments, plus one
 *       while the drainer closes them (the guard: no early zero); atomic
 *       read-modify-writes under the segment's lock, or the drainer's.
 *
 * MEMORY ORDERS.  The top word: acquire CAS / release exchange, as an
 * internal lock (the switch back's release covers its reopening stores,
 * which are release stores themselves so that a segment's entrant, whose
 * CAS from 0 acquires, sees the segment as its last user left it).
 * pending: the releases that count it down are acq_rel (the drainer's
 * acquire load of 0 then sees every segment closed and everything its
 * last users wrote).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "seg_internal.h"
#include "spin.h"

/* How long the drainer polls pending before it sleeps. */
#ifndef GATE_SPIN_NS
#define GATE_SPIN_NS 4000
#endif
#define GATE_KILLABLE_SLICE_NS 10000000L

/* The segments of a segment's tree (its flags carry its index + 1). */
static struct rl_segments *segments_of_segment(struct range_lock_tree *t, unsigned *g)
{
	unsigned g1 = (tree_flags(t) >> SEG_INDEX_SHIFT) & SEG_INDEX_MASK;
	struct rl_segment *seg = (struct rl_segment *)(void *)t - (g1 - 1);

	*g = g1 - 1;
	return (struct rl_segments *)(void *)((char *)seg - offsetof(struct rl_segments, seg));
}

static void close_word(tree_word_t *word)
{
	rl_hb_release(word);
	if (atomic_exchange_explicit(word, TL_CLOSED, memory_order_release) & TL_SLEEPERS)
		rl_wake_all(tree_word_futex(word)); /* entrants: refused now */
}

/* protocol.h's tree_unlock() of a closing segment left empty. */
void rl_gate_segment_drained(struct range_lock_tree *t)
{
	unsigned g;
	struct rl_segments *s = segments_of_segment(t, &g);

	bool last;

	tree_flags_store(t, tree_flags(t) & ~RL_TREE_CLOSING);
	/* Counted down under the segment's lock, before the exchange that
	 * drops it: a give-up (gate_undo()) that resets pending after taking
	 * this lock, and a later drain's count, then come after it.  Counted
	 * after the drop, a late decrement could land in the next drain's
	 * count and end it early (the torture found it: two writers held at
	 * once).  The drainer may see 0 a moment before the word says
	 * CLOSED: the lock is held until then, so nobody enters. */
	rl_hb_release(&s->pending);
	last = atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) == 1;
	if (last) /* (before the drop: the segments live while we hold it) */
		rl_wake_all(&s->pending);
	close_word(tree_lock_word(t));
}

/* Lock segment @t whatever its gate state (a grow, which must not wait for
 * the gate: the drainer waits for it).  A closed segment becomes closing:
 * the release that leaves it empty closes it again. */
void rl_gate_lock_segment(struct range_lock_tree *t)
{
	uintptr_t f = tree_lock_acquire_how(tree_lock_word(t), TL_ACQ_CLOSED);

	if (f == TL_WAS_CLOSED) {
		unsigned g;
		struct rl_segments *s = segments_of_segment(t, &g);

		/* pending >= 1: the grower's own segment is closing, or the
		 * drainer still holds its guard. */
		atomic_fetch_add_explicit(&s->pending, 1, memory_order_relaxed);
		tree_flags_store(t, tree_flags(t) | RL_TREE_CLOSING);
		return;
	}
	tree_materialise(t, f);
}

/* The drainer closes segment @g (the top word is DRAIN: every segment is
 * open, and no other drainer runs). */
static void close_segment(struct rl_segments *s, unsigned g)
{
	struct range_lock_tree *t = rl_seg_tree(s, g);

	tree_lock(t); /* a fast holder enters the tree */
	rl_revoke_fast_readers(t); /* fast readers too: holders there */
	if (!t->root) {
		close_word(tree_lock_word(t));
		return;
	}
	atomic_fetch_add_explicit(&s->pending, 1, memory_order_relaxed);
	tree_flags_store(t, tree_flags(t) | RL_TREE_CLOSING);
	tree_unlock(t); /* (not empty: stays locked against entries) */
}

/* A drain that waits: its statistics (the top tree's, stable while the
 * drainer holds the top word). */
struct drain {
	struct range_lock_tree *top;
	struct range_lock_stats *st; /* NULL: not counted */
	uint64_t start_ns;
};

/* The drainer gives up (a deadline, a signal, a cancellation: @why, with
 * @d->st counted as waiting; or a trylock that found a segment busy):
 * every segment open again, the top word SEG, and whoever waited for the
 * drain goes back to the gate. */
static void gate_undo(struct drain *d, int why)
{
	struct rl_segments *s = segments_of(d->top);
	tree_word_t *word = tree_lock_word(d->top);

	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		(void)tree_lock_acquire_how(tree_lock_word(t), TL_ACQ_CLOSED);
		tree_flags_store(t, tree_flags(t) & ~RL_TREE_CLOSING);
		tree_unlock(t); /* 0 (reopened) or TL_NONEMPTY */
	}
	atomic_store_explicit(&s->pending, 0, memory_order_relaxed);
	if (d->st) {
		rl_stat_wait_time(d->st, rl_now_ns() - d->start_ns);
		STAT_ADD(d->st, waiting_now, -1);
		stat_give_up(d->st, why);
	}
	rl_hb_release(word);
	if (atomic_exchange_explicit(word, TL_SEGMENTED, memory_order_release) & TL_SLEEPERS)
		rl_wake_all(tree_word_futex(word));
}

static void gate_undo_on_cancel(void *arg)
{
	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	gate_undo(arg, -ECANCELED);
}

static bool drained(struct rl_segments *s)
{
	if (atomic_load_explicit(&s->pending, memory_order_acquire))
		return false;
	rl_hb_acquire(&s->pending);
	return true;
}

/* A killable drainer: bounded sleeps, pthread_testcancel() between them. */
static void wait_killable(struct drain *d, struct rl_segments *s)
{
	pthread_cleanup_push(gate_undo_on_cancel, d);
	for (;;) {
		uint32_t v = atomic_load_explicit(&s->pending, memory_order_acquire);
		struct timespec slice;

		if (!v)
			break;
		pthread_testcancel();
		clock_gettime(CLOCK_MONOTONIC, &slice);
		timespec_add_ns(&slice, GATE_KILLABLE_SLICE_NS);
		rl_wait(&s->pending, v, CLOCK_MONOTONIC, &slice, 0);
	}
	pthread_cleanup_pop(0);
}

/* Wait until every segment is closed: 0, or -EINTR / -ETIMEDOUT after the
 * give-up (a drain that ends as the deadline or signal comes is kept, as
 * a grant is). */
static int wait_drained(struct drain *d, struct rl_segments *s, struct waiter *w)
{
	uint32_t n = rl_spin_iters(GATE_SPIN_NS);

	while (n-- && atomic_load_explicit(&s->pending, memory_order_relaxed))
		rl_cpu_relax();
	if (w->kind == WAIT_KILLABLE) {
		wait_killable(d, s); /* (ends drained, or by cancellation) */
		(void)drained(s);
		return 0;
	}
	for (;;) {
		uint32_t v = atomic_load_explicit(&s->pending, memory_order_acquire);
		int r;

		if (!v)
			break;
		if (w->kind == WAIT_TIMED)
			r = rl_wait(&s->pending, v, w->clockid, w->abstime, 0);
		else
			r = rl_wait(&s->pending, v, CLOCK_MONOTONIC, NULL,
				    w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0);
		if ((r == -ETIMEDOUT && w->kind == WAIT_TIMED) ||
		    (r == -EINTR && w->kind == WAIT_INTERRUPTIBLE)) {
			if (drained(s))
				return 0;
			gate_undo(d, r);
			return r;
		}
	}
	(void)drained(s);
	return 0;
}

/* Could the segments be closed at once (a trylock's look, without locks)? */
static bool segments_look_empty(struct rl_segments *s)
{
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (atomic_load_explicit(tree_lock_word(t), memory_order_relaxed) != 0 ||
		    (tree_flags(t) & RL_TREE_BIASED))
			return false;
	}
	return true;
}

/*
 * The drain: a wide request in SEG mode closes every segment, waits for
 * them to empty, and holds the plain tree, which it enters first.  Returns
 * what the lock (@w) or trylock (@w NULL: 1 held, 0 busy) call returns, or
 * RL_GATE_REFUSED: the mode changed before it began (look again), or, for
 * a trylock, a segment was busy (try the segments).
 */
static int gate_drain(const char *call, struct range_lock_tree *top, struct range_lock *lock,
		      bool reader, struct waiter *w, int subclass, void *site)
{
	struct rl_segments *s = segments_of(top);
	tree_word_t *word = tree_lock_word(top);
	uintptr_t v = TL_SEGMENTED;
	struct entry_scan scan;
	struct drain d;
	int r;

	(void)call;
	if (!w && !segments_look_empty(s))
		return RL_GATE_REFUSED;
	if (!atomic_compare_exchange_strong_explicit(word, &v, TL_DRAINING,
						     memory_order_acquire,
						     memory_order_relaxed))
		return RL_GATE_REFUSED;
	rl_hb_acquire(word);
	atomic_store_explicit(&s->pending, 1, memory_order_relaxed); /* the guard */
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		close_segment(s, g);
	d.top = top;
	d.st = NULL;
	rl_hb_release(&s->pending);
	if (atomic_fetch_sub_explicit(&s->pending, 1, memory_order_acq_rel) != 1) {
		if (!w) {
			gate_undo(&d, 0);
			return RL_GATE_REFUSED;
		}
		/* (written under every segment's lock, which we took since) */
		d.st = __atomic_load_n(&top->stats, __ATOMIC_ACQUIRE);
		if (d.st) {
			STAT_ADD(d.st, contended, 1);
			STAT_ADD(d.st, waiting_now, 1);
			STAT_PEAK(d.st, waiting_now, waiting_peak);
			d.start_ns = rl_now_ns();
		}
		r = wait_drained(&d, s, w);
		if (r)
			return r;
		if (d.st) {
			rl_stat_wait_time(d.st, rl_now_ns() - d.start_ns);
			STAT_ADD(d.st, waiting_now, -1);
		}
	} else {
		rl_hb_acquire(&s->pending);
	}
	/* Drained: the internal lock of the empty plain tree is ours
	 * (DRAIN -> LOCKED, keeping the sleepers bit). */
	atomic_fetch_and_explicit(word, ~TL_NONEMPTY, memory_order_relaxed);
	lock->owner_tid = rl_thread_id();
	lock->rb_parent_flags = reader ? RL_READER : 0;
	rl_scan_entry(top, lock, reader, false, &scan); /* (empty: held) */
	insert_scanned(top, lock, reader, &scan, false);
	tree_unlock(top);
	rl_check_acquired(top, lock, subclass, site);
	return w ? 0 : 1;
}

/*
 * Back to the segments: the plain tree is empty and free (the top word 0,
 * which it never is while fast reads are allowed).  False if somebody else
 * took the word first.  Every segment's lock is taken (closed ones too,
 * ascending) before the top word says SEG, and released, open, only after
 * it: no request enters a segment before the word names the segments, so
 * a request's unlock, reading the word, finds it where it is; and none can
 * see some segments open and others closed (gate.pml found both windows
 * in the first design, which reopened segments one by one under the
 * word's LOCKED).
 */
bool rl_gate_switch_back(struct range_lock_tree *top)
{
	struct rl_segments *s = segments_of(top);
	tree_word_t *word = tree_lock_word(top);
	uintptr_t v = 0;

	if (!atomic_compare_exchange_strong_explicit(word, &v, TL_LOCKED,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false;
	rl_hb_acquire(word);
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		(void)tree_lock_acquire_how(tree_lock_word(rl_seg_tree(s, g)), TL_ACQ_CLOSED);
	rl_hb_release(word);
	if (atomic_exchange_explicit(word, TL_SEGMENTED, memory_order_release) & TL_SLEEPERS)
		rl_wake_all(tree_word_futex(word)); /* back to the gate, all */
	for (unsigned g = 1u << s->log2n; g-- > 0;)
		tree_unlock(rl_seg_tree(s, g)); /* empty, not closing: 0, open */
	return true;
}

/*
 * The lock calls (@w: plain, interruptible, killable, timed) and trylock
 * (@w NULL) on a tree with segments, any range: the gate.  Returns what the
 * call returns (trylock: 1 held, 0 busy).
 */
int rl_seg_lock(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		bool reader, struct waiter *w, int subclass, void *site)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n;
	bool wide;
	int r;

	check_args(call, tree, lock);
	if (is_linked(lock)) /* locked twice, or a failed init (rl_die names it) */
		rl_die(call, lock, ALREADY_IN_TREE);
	n = rl_seg_parts(s, lock->start, lock->last);
	wide = rl_gate_wide(s, n);
	for (;;) {
		uintptr_t v = atomic_load_explicit(tree_lock_word(tree), memory_order_acquire);

		if (v == TL_SEGMENTED) {
			if (wide) {
				r = gate_drain(call, tree, lock, reader, w, subclass, site);
				if (r != RL_GATE_REFUSED)
					return r;
				if (w)
					continue; /* the mode changed */
			}
			r = rl_seg_lock_segments(call, tree, lock, reader, w, n, subclass,
						 site);
		} else {
			if (v == 0 && !wide && rl_gate_switch_back(tree))
				continue;
			/* A drain: a lock call waits for the tree's internal
			 * lock, which the drainer holds; a trylock is busy. */
			if (!w && (v | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS)) {
				rl_gate_count_busy(s);
				return 0;
			}
			r = w ? rl_lock_in(call, tree, lock, reader, w, subclass, site)
			      : rl_trylock_in(call, tree, lock, reader, site);
		}
		if (r != RL_GATE_REFUSED)
			return r;
	}
}

/* ---- the admin calls' hold --------------------------------------------- */

/* Every segment's lock, ascending, closed ones too (recorded in @a). */
static void admin_lock_segments(struct rl_segments *s, struct rl_gate_admin *a, bool revoke)
{
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);
		uintptr_t f = tree_lock_acquire_how(tree_lock_word(t), TL_ACQ_CLOSED);

		if (f == TL_WAS_CLOSED) {
			a->closed[g / 64] |= (uint64_t)1 << (g % 64);
			continue;
		}
		tree_materialise(t, f);
		if (revoke)
			rl_revoke_fast_readers(t);
	}
}

static void admin_unlock_segments(struct rl_segments *s, struct rl_gate_admin *a)
{
	for (unsigned g = 1u << s->log2n; g-- > 0;) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (a->closed[g / 64] >> (g % 64) & 1)
			close_word(tree_lock_word(t));
		else
			tree_unlock(t);
	}
}

/*
 * In the segments (SEG, or a drain under way): every segment's lock, which
 * keeps the mode -- a drain needs them to close the segments, and its
 * pending count falls only under them; a drain that has already seen it
 * reach 0 is waited out (it no longer waits for anyone: it is entering
 * the tree itself), so that the tree itself is never read while it
 * changes.  As a plain tree: its internal lock (a switch back starts by
 * taking it), then the segments' locks (all closed).  Never waits for a
 * request to leave, so a thread that holds one may call it.
 */
void rl_gate_admin_lock(struct range_lock_tree *top, struct rl_gate_admin *a, bool revoke)
{
	struct rl_segments *s = segments_of(top);

	for (;;) {
		uintptr_t v = atomic_load_explicit(tree_lock_word(top), memory_order_acquire);

		memset(a, 0, sizeof(*a));
		if (v == TL_SEGMENTED || (v | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS)) {
			admin_lock_segments(s, a, revoke);
			v = atomic_load_explicit(tree_lock_word(top), memory_order_acquire);
			if (v == TL_SEGMENTED ||
			    ((v | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS) &&
			     atomic_load_explicit(&s->pending, memory_order_acquire)))
				return;
			admin_unlock_segments(s, a); /* a drain ends: again */
			rl_cpu_relax();
			continue;
		}
		if (tree_lock_entering(top)) {
			a->plain = true;
			if (revoke)
				rl_revoke_fast_readers(top);
			admin_lock_segments(s, a, revoke);
			return;
		}
	}
}

void rl_gate_admin_unlock(struct range_lock_tree *top, struct rl_gate_admin *a)
{
	admin_unlock_segments(segments_of(top), a);
	if (a->plain)
		tree_unlock(top);
}

bool rl_gate_all_empty(struct range_lock_tree *top)
{
	struct rl_segments *s = segments_of(top);

	if (top->root)
		return false;
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		if (rl_seg_tree(s, g)->root)
			return false;
	return true;
}
