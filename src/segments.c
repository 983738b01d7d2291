/* SPDX-License-Identifier: MIT */
/*
 * librangelock: segmented trees -- ranges that conflict with nothing share
 * nothing (docs/design.md, "Segments").
 *
 * DESIGN
 * ======
 * range_lock_tree_set_segments(tree, S, k) splits the key space of an
 * empty tree into S = 2^n segments: unit u is in stripe u >> k, and stripe
 * t in segment t mod S.  Each segment is a whole tree of its own (struct
 * range_lock_tree, on its own 128-byte block): its lock word, internal
 * lock, interval tree, seqnum counter, counts, fast-read bias and word
 * mode are those of sections 1-13 of the design, unchanged.  The user's
 * tree becomes a gate, only READ by the calls: its second-level slot
 * (tree->file, a bound tree's file otherwise) holds the segment array
 * tagged RL_SEGMENTS_TAG, and every public call already tests that slot
 * for NULL before its fast path, so it comes here from there, at no cost
 * to trees without segments (calls.c, is_segments()); writing nothing in
 * the user's tree keeps its line shared in every cache.  Its lock word
 * holds TL_SEGMENTED: a call that reached tree_lock() on it anyway aborts
 * (rl_tree_lock_acquire_slow()).
 *
 *  - A request whose range lies in one stripe -- or in several stripes of
 *    one segment, impossible unless S = 1 -- lies in ONE segment: the
 *    public call runs on that segment's tree, as on any tree (rl_lock_in()
 *    and the rest, calls.c), with the user's own request: straight from
 *    the public call for a range within one stripe (rl_seg_one(),
 *    segments.h), with the same one-part case kept in rl_seg_lock(), which
 *    S >= 2 never reaches.  Two such
 *    requests in different segments write no common line and take no
 *    common lock.
 *  - A request meeting several segments SPANS them.  Its PART in segment g
 *    is an internal request (struct span, seg_parts.c) for its HULL there: its
 *    units from the first in g to the last in g.  Two parts in g have
 *    intersecting hulls exactly when their requests share a unit of g (the
 *    larger hull start is a unit of g in both ranges), so each segment's
 *    tree stays exact: no false conflict across boundaries.
 *
 * A spanning request enters as ONE ARRIVAL (rl_span_enter()): it takes the
 * internal locks of its segments in ascending segment index and holds all
 * of them until every part is scanned and inserted, then drops them.  Its
 * parts all take ONE seqnum s, the largest of the segments' counters, and
 * every counter becomes s + 1 (a Lamport clock): seqnums stay arrival order
 * within each segment and form one order across segments that agrees with
 * each.  So two requests are in the same order in every segment they share
 * (FIFO: arrival order among every pair of intersecting requests), and
 * every waits-for edge goes to a lower seqnum or, for an overtaker of the
 * default policy, to a request that already holds: no cycle.  Ascending
 * acquisition forms no cycle among the internal locks either.
 *
 * Each part counts its blockers in its own wait word, as any request of
 * its segment; the request holds its range when every part is granted.  In
 * the default policy a waiting part is HANDOFF-marked at entry, as an
 * asynchronous request is: nothing overtakes it, it is never ELIGIBLE, and
 * the release that takes its last blocker grants it -- without its thread,
 * which waits for the parts one after the other (span_wait()).  A spanning
 * request never overtakes (it waits behind any conflict, like a FIFO
 * arrival), and trylock succeeds only when no part has a conflict.
 *
 * Giving up (signal, deadline, cancellation) withdraws the part it waited
 * for through the usual give-up path (waiting.c: kept if granted meanwhile,
 * except on cancellation), then, if that gave up, takes every other part
 * out of its segment (rl_span_leave(): a release walk under that segment's
 * lock, held or waiting alike).  Counts only fall meanwhile, as in an
 * unlock, which also releases the parts one segment at a time, ascending.
 *
 * WHO WRITES WHAT
 *   the user's tree: lock_word and file (the tagged segment array): only
 *       set_segments() and destroy; flags (the policy bits, kept for a
 *       re-segmenting): set_segments() and the setters; all of them need a
 *       tree nobody else uses.  Read by every call (file: relaxed loads).
 *   a segment's tree: as any tree (protocol.c), under its own lock.
 *       Its flags also hold its index + 1 in bits 4..12 (constant), so
 *       that the checking mode can name the user's tree.
 *   struct span: the parts' fields as any request's, under their
 *       segments' locks (a shrink moves a held part to another slot of
 *       the array under its segment's lock, rl_move_request()); the rest
 *       only by the request's owner -- except, for an asynchronous one,
 *       astate (atomic: the parts' completions and the cancel, see
 *       ASYNCHRONOUS) and counted and wait_start_ns, written by the
 *       completion of the last part under the first part's segment lock.
 *   the user's request of a spanning hold: rb_left (the span), flags
 *       (RL_LINKED | mode), seqnum: only by its owner, while it locks,
 *       unlocks and shrinks (an asynchronous one: set before its parts
 *       are published); rb_left and flags are cleared as the first part
 *       leaves (rl_span_leave(), under that segment's lock: an unlock, or an
 *       asynchronous request's cancel); a shrink to one stripe makes it a
 *       node of
 *       that segment's tree (rl_move_request(), under its lock), written
 *       from then on as any request of a tree.
 *   span->held (the whole request holds: GROW): set under the locks of
 *       every segment the span is in (its entry, its claim, a grow's
 *       merge), read by growths under any one of them.
 *   a part's reserved_[0] (an asynchronous span's: PART_COMPLETION_DUE):
 *       set under its segment's lock, cleared by its completion (release),
 *       read by growths under that lock (acquire).
 *   span->counted (what the request counted itself as in the statistics):
 *       by its owner, under its first part's segment lock; read by a
 *       recount under every segment's lock (STATISTICS, seg_span.c).
 *   struct rl_segments' user_stats and stats: set once, by enable_stats
 *       under every segment's lock (user_stats a release store, read with
 *       acquire loads by get_stats and reset_stats, which then lock every
 *       segment); freed by destroy.
 * Memory orders: every decision is taken under the segments' internal
 * locks, and grants are the wait words' CASes, except two: an
 * asynchronous span's astate (acq_rel CASes: the completions count down
 * without a lock, a growth's pin counts up) and a part's
 * PART_COMPLETION_DUE, whose clearing is a release after rl_async_run()
 * has read the part's queue link, so that a growth that reads it clear
 * (acquire) and revokes the part orders that read before the part's next
 * grant re-links it.
 *
 * SHRINK (seg_shrink()) changes a spanning request in every segment it
 * holds in one step, under all their locks, ascending; its comment has
 * the rules.
 *
 * ASYNCHRONOUS requests (range_*_lock_async()): within one stripe, an
 * asynchronous request of its segment; spanning, each waiting part a
 * queued asynchronous request of its segment, the user's completion at
 * the last part's grant (seg_async.c: the comment above
 * span_async_held() has the rules, and who frees the parts after a
 * withdrawal).
 *
 * SETS (range_lock_many()): within one segment, a set of its tree; else
 * one spanning arrival of every member (seg_sets.c: the comment above
 * rl_seg_lock_many() has the rules).
 *
 * BOUND TO A FILE (range_lock_tree_set_file(), before or after the split):
 * the second level stays the user's tree's.  Each request takes the OFD
 * lock of its whole range once it holds it locally and lets go of it
 * before its local unlock, exactly as on a tree without segments (calls.c,
 * async.c, sets.c and the shrink and downgrade here call file_lock.c with
 * the request's own range); the segments' trees are not bound, so a
 * spanning request's parts never touch the file, and only never read fast
 * (RL_TREE_NO_BIAS).  The file is struct rl_segments' file, and the slot's
 * tag says so (RL_SEGMENTS_BOUND instead of RL_SEGMENTS_TAG), which keeps a
 * bound tree off the hot paths at no cost to the others.
 *
 * GROW (rl_seg_grow()): the growth enters every segment of the new range
 * as one arrival, revoking granted parts of later spans that do not hold
 * yet; a span's thread claims its hold under all its segments' locks
 * (span_claim(), seg_span.c); seg_grow.c's comment above rl_seg_grow()'s
 * helpers has the rules.
 *
 * FILES: this one has the design, the configuration, the statistics,
 * shrink, downgrade and the dump; seg_span.c the one-range calls'
 * dispatch (rl_seg_lock(), rl_seg_unlock()) and spanning requests (entry,
 * wait, claim, give-up; STATISTICS); seg_sets.c sets across segments;
 * seg_async.c asynchronous spans; seg_grow.c grow across segments;
 * seg_internal.h what they share (struct span).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_internal.h"

/* The checking mode's name of a tree: a segment is its user's tree. */
const struct range_lock_tree *rl_seg_user_tree(const struct range_lock_tree *tree)
{
	unsigned g1 = (__atomic_load_n(&tree->flags, __ATOMIC_RELAXED) >> SEG_INDEX_SHIFT) &
		      SEG_INDEX_MASK;
	const struct rl_segment *seg;
	const struct rl_segments *s;

	if (!g1)
		return tree;
	seg = (const struct rl_segment *)(const void *)tree - (g1 - 1);
	s = (const struct rl_segments *)(const void *)((const char *)seg -
						       offsetof(struct rl_segments, seg));
	return s->top;
}

/* ---- configuration ---------------------------------------------------- */

/* Back to a tree without segments, if every segment is empty; bound to
 * the file it was bound to, if any (destroy then unbinds it). */
int rl_seg_destroy(struct range_lock_tree *tree)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;

	rl_gate_admin_lock(s->top, &a, true);
	if (!rl_gate_all_empty(s->top)) {
		rl_gate_admin_unlock(s->top, &a);
		return -EBUSY;
	}
	rl_gate_admin_unlock(s->top, &a);
	__atomic_store_n(&tree->file, s->file, __ATOMIC_RELAXED);
	tree->stats = NULL; /* (the tree's own counters were in s->stats) */
	rl_hb_release(tree_lock_word(tree));
	atomic_store_explicit(tree_lock_word(tree), 0, memory_order_release);
	free(s->stats);
	free(s);
	return 0;
}

int rl_seg_set_flag(struct range_lock_tree *tree, uint32_t flag, bool on, bool need_empty)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	int r = 0;

	rl_gate_admin_lock(s->top, &a, true);
	if (need_empty && !rl_gate_all_empty(s->top)) {
		r = -EBUSY;
	} else {
		/* Readers first is the user's tree's alone (defer.c). */
		for (unsigned g = 0; flag != RANGE_LOCK_TREE_FLAG_DEFER_WRITERS &&
				     g < 1u << s->log2n; g++) {
			struct range_lock_tree *t = rl_seg_tree(s, g);

			tree_flags_store(t, on ? t->flags | flag : t->flags & ~flag);
		}
		tree_flags_store(tree, on ? tree->flags | flag : tree->flags & ~flag);
	}
	rl_gate_admin_unlock(s->top, &a);
	return r;
}

int range_lock_tree_set_segments(struct range_lock_tree *tree, unsigned segments,
				 unsigned stripe_shift)
{
	struct rl_segments *s;
	uint32_t policy;
	void *mem;
	int r;

	if (!tree)
		rl_die("range_lock_tree_set_segments", NULL, "NULL tree");
	if (segments == 0 || segments > RL_SEG_MAX || (segments & (segments - 1)) ||
	    stripe_shift > 63)
		return -EINVAL;
	/* The plain tree's hooks for parts (protocol.h): before any exists. */
	__atomic_store_n(&rl_part_ops, &rl_span_part_ops, __ATOMIC_RELAXED);
	/* Statistics stay where they were enabled (as for a plain tree). */
	if (tree_is_segmented(tree) &&
	    __atomic_load_n(&segments_of(tree)->user_stats, __ATOMIC_ACQUIRE))
		return -ENOTSUP;
	if (segments == 1) {
		if (tree_is_segmented(tree))
			return rl_seg_destroy(tree);
		tree_lock(tree);
		rl_revoke_fast_readers(tree);
		r = tree->root ? -EBUSY : 0;
		tree_unlock(tree);
		return r;
	}
	/* Allocated first: a failure changes nothing. */
	if (posix_memalign(&mem, 128, sizeof(*s) + segments * sizeof(s->seg[0])))
		return -ENOMEM;
	if (tree_is_segmented(tree)) { /* re-segment (or the same again) */
		r = rl_seg_destroy(tree);
		if (r) {
			free(mem);
			return r;
		}
	}
	s = mem;
	memset(s, 0, sizeof(*s) + segments * sizeof(s->seg[0]));
	s->top = tree;
	s->shift = stripe_shift;
	while ((1u << s->log2n) < segments)
		s->log2n++;
	s->mask = segments - 1; /* == (1 << log2n) - 1: rl_seg_one() and
				 * rl_seg_part() must agree */

	tree_lock(tree);
	rl_revoke_fast_readers(tree);
	if (tree->root || tree->stats) {
		r = tree->root ? -EBUSY : -ENOTSUP;
		tree_unlock(tree);
		free(s);
		return r;
	}
	/* A bound tree stays bound: its file is the segments' now. */
	s->file = tree->file;
	policy = tree->flags & (RANGE_LOCK_TREE_FLAG_FIFO | RANGE_LOCK_TREE_FLAG_NO_FAST_READ);
	if (s->file)
		policy |= RL_TREE_NO_BIAS;
	for (unsigned g = 0; g < segments; g++)
		rl_seg_tree(s, g)->flags = policy | ((g + 1) << SEG_INDEX_SHIFT);
	__atomic_store_n(&tree->file,
			 (struct range_lock_file *)((uintptr_t)s | (s->file ? RL_SEGMENTS_BOUND
									 : RL_SEGMENTS_TAG)),
			 __ATOMIC_RELAXED);
	/* Our release of the internal lock: TL_SEGMENTED instead of 0.  A
	 * call that waited for it meanwhile used the tree during its
	 * configuration (rl_tree_lock_acquire_slow() aborts, naming this). */
	rl_hb_release(tree_lock_word(tree));
	if (atomic_exchange_explicit(tree_lock_word(tree), TL_SEGMENTED,
				     memory_order_release) & TL_SLEEPERS)
		rl_wake_all(tree_word_futex(tree_lock_word(tree)));
	return 0;
}

/* Bind to a file (@f, opened by range_lock_tree_set_file()), if every
 * segment is empty; the file bound before, if any, is let go. */
int rl_seg_set_file(struct range_lock_tree *tree, struct range_lock_file *f)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	struct range_lock_file *old;

	rl_gate_admin_lock(s->top, &a, true); /* and the segments never read fast from now on */
	if (!rl_gate_all_empty(s->top)) {
		rl_gate_admin_unlock(s->top, &a);
		rl_file_free(f);
		return -EBUSY;
	}
	old = s->file;
	__atomic_store_n(&s->file, f, __ATOMIC_RELAXED);
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		tree_flags_store(t, t->flags | RL_TREE_NO_BIAS);
	}
	__atomic_store_n(&tree->file,
			 (struct range_lock_file *)((uintptr_t)s | RL_SEGMENTS_BOUND),
			 __ATOMIC_RELAXED);
	rl_gate_admin_unlock(s->top, &a);
	if (old)
		rl_file_free(old);
	return 0;
}

/* ---- statistics ------------------------------------------------------- */

/*
 * Each segment counts in its own block (struct rl_seg_stats, allocated at
 * enabling and freed with the segments), under its own lock, exactly as a
 * tree without segments counts; a spanning request counts once, in its
 * first part's segment (rl_span_count()).  Enabling, reading and resetting
 * lock every segment: the sums are a snapshot, as on a plain tree.
 */
int rl_seg_enable_stats(struct range_lock_tree *tree, struct range_lock_stats *storage)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	unsigned nseg = 1u << s->log2n;
	struct rl_seg_stats *blocks;
	void *mem;
	int r = 0;

	/* One block per segment, and one for the tree itself, which counts
	 * while it runs as a plain tree (the gate, seg_gate.c). */
	if (posix_memalign(&mem, 128, (nseg + 1) * sizeof(*blocks)))
		return -ENOMEM;
	blocks = mem;
	rl_gate_admin_lock(s->top, &a, true); /* statistics count in the trees: no fast reads from now on */
	if (s->user_stats) {
		r = s->user_stats == storage ? 0 : -EBUSY;
	} else {
		rl_race_ok(blocks, (nseg + 1) * sizeof(*blocks));
		rl_race_ok(storage, sizeof(*storage));
		rl_stats_zero(storage);
		atomic_store_explicit(&s->drain_busy, 0, memory_order_relaxed);
		for (unsigned g = 0; g <= nseg; g++) {
			struct range_lock_tree *t = g < nseg ? rl_seg_tree(s, g) : tree;

			rl_race_ok(&t->stats, sizeof(t->stats));
			rl_stats_zero(&blocks[g].st);
			blocks[g].spanning = 0;
			blocks[g].spanning_parts = 0;
			rl_stats_recount(t, &blocks[g].st);
			/* release: a waiter that sees the pointer sees zeroed counters */
			__atomic_store_n(&t->stats, &blocks[g].st, __ATOMIC_RELEASE);
		}
		s->stats = blocks;
		__atomic_store_n(&s->user_stats, storage, __ATOMIC_RELEASE);
		blocks = NULL;
	}
	rl_gate_admin_unlock(s->top, &a);
	free(blocks);
	return r;
}

int rl_seg_get_stats(struct range_lock_tree *tree, struct range_lock_stats *out)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	unsigned nseg = 1u << s->log2n;
	uint64_t sum[sizeof(*out) / sizeof(uint64_t)] = { 0 };
	const size_t max = offsetof(struct range_lock_stats, wait_ns_max) / sizeof(uint64_t);
	struct range_lock_stats *user;

	/* Set once, never cleared while the segments live. */
	user = __atomic_load_n(&s->user_stats, __ATOMIC_ACQUIRE);
	if (!user) {
		memset(out, 0, sizeof(*out));
		return -ENODATA;
	}
	rl_gate_admin_lock(s->top, &a, false);
	for (unsigned g = 0; g <= nseg; g++) { /* (nseg: the tree itself) */
		const stat_word_t *f = (const stat_word_t *)(const void *)&s->stats[g].st;

		for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++) {
			uint64_t v = __atomic_load_n(&f[i], __ATOMIC_RELAXED);

			/* the longest wait is the longest of any segment's;
			 * the rest, the peaks too, add up */
			sum[i] = i == max ? (v > sum[i] ? v : sum[i]) : sum[i] + v;
		}
	}
	sum[offsetof(struct range_lock_stats, trylock_failed) / sizeof(uint64_t)] +=
		atomic_load_explicit(&s->drain_busy, memory_order_relaxed);
	/* The user's storage receives the sums (every reader holds every
	 * segment's lock: no two write it at once). */
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		__atomic_store_n(&((stat_word_t *)(void *)user)[i], sum[i], __ATOMIC_RELAXED);
	rl_gate_admin_unlock(s->top, &a);
	memcpy(out, sum, sizeof(*out));
	return 0;
}

void rl_seg_reset_stats(struct range_lock_tree *tree)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	struct range_lock_stats *user = __atomic_load_n(&s->user_stats, __ATOMIC_ACQUIRE);

	if (!user)
		return;
	rl_gate_admin_lock(s->top, &a, false);
	rl_stats_zero(user);
	atomic_store_explicit(&s->drain_busy, 0, memory_order_relaxed);
	for (unsigned g = 0; g <= 1u << s->log2n; g++) { /* (and the tree itself) */
		rl_stats_zero(&s->stats[g].st);
		__atomic_store_n(&s->stats[g].spanning, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->stats[g].spanning_parts, 0, __ATOMIC_RELAXED);
		rl_stats_recount(g < 1u << s->log2n ? rl_seg_tree(s, g) : tree, &s->stats[g].st);
	}
	rl_gate_admin_unlock(s->top, &a);
}

/*
 * The segment statistics (range_lock_tree_get_segment_stats()), a
 * snapshot under every segment's lock: the acquisitions of the segments'
 * blocks are the requests within one segment and the spanning ones
 * (counted apart, stat_spanning()); the tree's own block (index S) counts
 * the holds on the tree run as a plain tree.  -ENODATA if statistics are
 * not enabled (@out zeroed).
 */
int rl_seg_get_segment_stats(struct range_lock_tree *tree, struct range_lock_segment_stats *out)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	unsigned nseg = 1u << s->log2n;
	uint64_t acq = 0, spanning = 0, parts = 0, plain;

	memset(out, 0, sizeof(*out));
	if (!__atomic_load_n(&s->user_stats, __ATOMIC_ACQUIRE))
		return -ENODATA;
	rl_gate_admin_lock(s->top, &a, false);
	for (unsigned g = 0; g < nseg; g++) {
		const struct rl_seg_stats *b = &s->stats[g];

		acq += __atomic_load_n(&b->st.read_acquired, __ATOMIC_RELAXED) +
		       __atomic_load_n(&b->st.write_acquired, __ATOMIC_RELAXED);
		spanning += __atomic_load_n(&b->spanning, __ATOMIC_RELAXED);
		parts += __atomic_load_n(&b->spanning_parts, __ATOMIC_RELAXED);
	}
	plain = __atomic_load_n(&s->stats[nseg].st.read_acquired, __ATOMIC_RELAXED) +
		__atomic_load_n(&s->stats[nseg].st.write_acquired, __ATOMIC_RELAXED);
	rl_gate_admin_unlock(s->top, &a);
	out->one_segment = acq - spanning;
	out->spanning = spanning;
	out->spanning_parts = parts;
	out->whole_tree = plain;
	return 0;
}

/*
 * SHRINK of a held request to [start, last] (a sub-range; never waits).
 * Within one stripe it is a plain shrink in its segment.  A spanning
 * request takes the locks of every segment it holds, ascending (as an
 * arrival), and under all of them: a part whose segment the new range
 * leaves goes (a release walk there, as an unlock), a part whose hull
 * shrinks keeps the smaller hull (rl_shrink_request(): the walk of its
 * dropped units), each at its seqnum -- its place.  One step, so the
 * statistics move with the first part (below) and no reader of every
 * segment sees the request half-changed (segments.pml, CFG_SHRINK).
 *
 * The parts that stay move down to part[0..n'-1] (rl_move_request()), so
 * that part[0] stays the first, the one that counts the request and that
 * rl_span_counted() finds; with one part left, the user's request itself
 * takes that part's place, and is a plain hold of that segment again.
 */
static int seg_shrink(struct range_lock_tree *tree, struct range_lock *lock,
		      uint64_t start, uint64_t last)
{
	struct rl_segments *s = segments_of(tree);
	struct span *sp = (struct span *)(void *)lock->rb_left;
	struct range_lock_tree *locked[RL_SEG_MAX];
	unsigned n, held, kept = 0;
	struct wake_list wl;

	if (!is_linked(lock) || !sp)
		rl_die("range_lock_shrink", lock, "range is not locked");
	if (sp->top != tree)
		rl_die("range_lock_shrink", lock, "range is not locked in this tree");
	span_check_held("range_lock_shrink", sp, lock);
	if (start > last || start < lock->start || last > lock->last)
		return -EINVAL;
	if (start == lock->start && last == lock->last)
		return 0;
	n = rl_seg_parts(s, start, last);
	wl.n = 0;
	held = sp->n;
	for (unsigned i = 0; i < held; i++) {
		locked[i] = part_tree(s, PART(sp, i));
		tree_lock(locked[i]);
	}
	for (unsigned i = 0; i < held; i++) {
		struct range_lock *p = PART(sp, i), *to;
		struct range_lock_tree *t = locked[i];
		/* the new range's next part (both lists ascend by segment) */
		struct seg_part np = kept < n ? rl_seg_part(s, start, last, kept)
					      : (struct seg_part){ 0, 0, 0 };

		if (kept == n || rl_seg_tree(s, np.seg) != t) {
			if (i == 0) /* the request counts on in the new first part */
				rl_span_count(sp, t, SPAN_OUT, 0);
			rl_remove_request(t, p, &wl);
			continue;
		}
		rl_shrink_request(t, p, np.start, np.last, &wl);
		to = n == 1 ? lock : PART(sp, kept);
		if (to != p) {
			rl_move_request(t, p, to);
			to->owner_tid = n == 1 ? rl_thread_id()
					       : kept == 0 ? RL_PART_FIRST : RL_PART_TAG;
		}
		if (kept == 0 && i != 0 && t->stats) {
			/* held_now moves with the first part (it was
			 * uncounted in the old first part's segment above) */
			STAT_ADD(t->stats, held_now, 1);
			STAT_PEAK(t->stats, held_now, held_peak);
		}
		if (kept == 0)
			sp->counted = SPAN_HELD;
		kept++;
	}
	if (kept != n) /* every part of the new range is one of the old */
		rl_die("range_lock_shrink", lock, "internal error: a shrink lost a part");
	lock->start = start;
	lock->last = last;
	rl_check_resized(tree, lock);
	for (unsigned i = held; i-- > 0;)
		tree_unlock(locked[i]);
	if (n == 1)
		rl_span_free(sp);
	else
		sp->n = n;
	wake_list_flush(&wl);
	return 0;
}

int rl_seg_shrink(struct range_lock_tree *tree, struct range_lock *lock,
		  uint64_t start, uint64_t last)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock_file *f = rl_bound_file(file_of(tree));

	if (f) {
		/* The OFD level first, as on a tree without segments (grow.c);
		 * only this request's user changes its range and mode.  Held
		 * here first, and its mode: a spanning hold's in its span
		 * (the owner's); one within one stripe is a node of its
		 * segment's tree, whose flags word that tree's inserts and
		 * erases rewrite, so under that segment's lock. */
		uint64_t a = lock->start, b = lock->last;
		bool reader;

		if (rl_seg_parts(s, a, b) == 1) {
			struct range_lock_tree *t = rl_seg_tree(s, rl_seg_part(s, a, b, 0).seg);

			tree_lock(t);
			check_held("range_lock_shrink", t, lock, is_linked(lock) && is_reader(lock));
			reader = is_reader(lock);
			tree_unlock(t);
		} else {
			struct span *sp = (struct span *)(void *)lock->rb_left;

			if (!is_linked(lock) || !sp || sp->top != tree)
				rl_die("range_lock_shrink", lock, "range is not locked in this tree");
			span_check_held("range_lock_shrink", sp, lock);
			reader = sp->reader;
		}
		if (start > last || start < a || last > b || !rl_file_range_ok(start, last))
			return -EINVAL;
		if (a < start)
			rl_file_unlock(f, a, start - 1, reader);
		if (last < b && last < (uint64_t)INT64_MAX)
			rl_file_unlock(f, last + 1, b, reader);
	}
	return rl_seg_shrink_local(tree, lock, start, last);
}

int rl_seg_shrink_local(struct range_lock_tree *tree, struct range_lock *lock,
			uint64_t start, uint64_t last)
{
	struct rl_segments *s = segments_of(tree);

	if (rl_seg_parts(s, lock->start, lock->last) == 1)
		return range_lock_shrink(rl_seg_tree(s, rl_seg_part(s, lock->start,
								    lock->last, 0).seg),
					 lock, start, last);
	return seg_shrink(tree, lock, start, last);
}

void rl_seg_downgrade(struct range_lock_tree *tree, struct range_lock *lock)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n = rl_seg_parts(s, lock->start, lock->last);
	struct range_lock_file *f = rl_bound_file(file_of(tree));
	struct span *sp;

	if (n == 1) {
		/* (A bound tree's OFD lock converts first, as on any tree.) */
		if (f)
			rl_file_downgrade(f, lock->start, lock->last);
		rl_downgrade_write(rl_seg_tree(s, rl_seg_part(s, lock->start,
							      lock->last, 0).seg), lock);
		return;
	}
	sp = (struct span *)(void *)lock->rb_left;
	if (!is_linked(lock) || !sp || sp->top != tree)
		rl_die("range_downgrade_write", lock, "range is not locked in this tree");
	/* The whole request first: no part changes if one still waits. */
	span_check_held("range_downgrade_write", sp, lock);
	if (sp->reader)
		rl_die("range_downgrade_write", lock, "range is held for reading, not writing");
	if (f)
		rl_file_downgrade(f, lock->start, lock->last);
	/* Each part in its segment: a reader of one segment's units may go
	 * ahead once that part is a reader. */
	for (unsigned i = 0; i < sp->n; i++)
		rl_downgrade_write(part_tree(s, PART(sp, i)), PART(sp, i));
	sp->reader = true;
	lock->rb_parent_flags |= RL_READER;
}

/* A count from 1 whose last value may be 2^64 (k = 0, the whole range):
 * @v is the count minus one. */
static const char *count_str(uint64_t v, char buf[24])
{
	if (v == UINT64_MAX)
		return "18446744073709551616";
	snprintf(buf, 24, "%llu", (unsigned long long)(v + 1));
	return buf;
}

/* A part with more stripes than this in its segment prints the first two,
 * a line for those between, and the last. */
#define DUMP_PIECES_MAX 4u

/*
 * The dump of part @p of a spanning request, in its segment: its hull
 * there runs from the request's first unit in that segment to its last,
 * over the stripes of the other segments between; so the part is printed
 * as its PIECES, one line per stripe of its segment that the request
 * meets, each clipped to that stripe: "[0, 15] ... span part 1/3 of
 * [0, 40]" (the request's first of 3 stripes), then, for the same part,
 * "[32, 40] the same part, 3/3 of [0, 40]" -- so that every line of a
 * segment lies within that segment's units, and the mode and state words
 * appear once per part.
 */
static void dump_part(FILE *f, const struct range_lock *p, const char *mid, const char *end,
		      void *arg)
{
	const struct rl_segments *s = arg;
	const struct range_lock *owner = span_of_part(p)->owner;
	unsigned k = s->shift, S = 1u << s->log2n;
	uint64_t t0 = p->start >> k, n = ((p->last >> k) - t0) / S + 1; /* pieces */
	uint64_t of = owner->start >> k;
	bool known = owner->start <= p->start && p->last <= owner->last;
	char a[24], b[24];

	for (uint64_t j = 0; j < n; j++) {
		uint64_t t = t0 + j * S;
		uint64_t lo = j == 0 ? p->start : t << k;
		uint64_t hi = j == n - 1 ? p->last : ((t + 1) << k) - 1;

		if (j == 2 && n > DUMP_PIECES_MAX) {
			fprintf(f, "    (%llu more of the same part, one in every %u stripes)\n",
				(unsigned long long)(n - 3), S);
			j = n - 2;
			continue;
		}
		fprintf(f, "  [%llu, %llu] ", (unsigned long long)lo, (unsigned long long)hi);
		if (j == 0)
			fprintf(f, "%s span part", mid);
		else
			fprintf(f, "the same part,");
		if (known)
			fprintf(f, " %s/%s of [%llu, %llu]", count_str(t - of, a),
				count_str((owner->last >> k) - of, b),
				(unsigned long long)owner->start, (unsigned long long)owner->last);
		fprintf(f, "%s\n", j == 0 ? end : "");
	}
}

void rl_seg_dump(struct range_lock_tree *tree, void *out)
{
	struct rl_segments *s = segments_of(tree);
	struct rl_gate_admin a;
	FILE *f = out;

	/* Every lock (a snapshot); fast readers are shown as the held
	 * readers they are.  (The caller disabled cancellation.) */
	rl_tl_word_sleepers_woken = 0;
	rl_gate_admin_lock(tree, &a, true);
	fprintf(f, "range_lock_tree %p: %u segments, stripes of 2^%u units, %s\n",
		(void *)tree, 1u << s->log2n, s->shift,
		a.plain ? "running as a plain tree (wide requests)" : "running in its segments");
	if (a.plain)
		rl_dump_locked(tree, f, NULL, NULL);
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (!t->root)
			continue; /* empty: nothing to show */
		fprintf(f, " segment %u:\n", g);
		rl_dump_locked(t, f, dump_part, s);
	}
	rl_gate_admin_unlock(tree, &a);
}
