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
 *    is an internal request (struct span, malloc'd) for its HULL there: its
 *    units from the first in g to the last in g.  Two parts in g have
 *    intersecting hulls exactly when their requests share a unit of g (the
 *    larger hull start is a unit of g in both ranges), so each segment's
 *    tree stays exact: no false conflict across boundaries.
 *
 * A spanning request enters as ONE ARRIVAL (span_enter()): it takes the
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
 * out of its segment (span_leave(): a release walk under that segment's
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
 *       leaves (span_leave(), under that segment's lock: an unlock, or an
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
 *       recount under every segment's lock (STATISTICS below).
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
 * the last part's grant (the comment above span_async_held() has the
 * rules, and who frees the parts after a withdrawal).
 *
 * SETS (range_lock_many()): within one segment, a set of its tree; else
 * one spanning arrival of every member (the comment above
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
 * (span_claim()); the comment above rl_seg_grow()'s helpers has the
 * rules.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "segments.h"
#include "stats.h"

/* A spanning request's parts. */
struct span {
	struct range_lock_tree *top;  /* the tree it was locked in */
	struct range_lock *owner;     /* the user's request */
	unsigned n;
	bool reader;
	int counted;                  /* SPAN_*: under part[0]'s segment lock */
	uint64_t wait_start_ns;       /* its wait, if statistics were on */
	bool in_set;                  /* a member of a set (SETS below) */
	/* The whole request holds (GROW below): set once every part is
	 * granted, under the locks of every segment it has parts in (at entry,
	 * or by the claim after its wait), so any one of them makes it
	 * stable; read by growths.  Not used by an asynchronous one (astate's
	 * SA_HELD says it). */
	bool held;
	/* An asynchronous spanning request (ASYNCHRONOUS below): */
	struct range_lock_async *user; /* the user's request; NULL if not */
	_Atomic uint32_t astate;      /* SA_*: due completions | flags */
	/* The parts, ascending by segment: each a request (.lock) of its
	 * segment's tree; the rest serves the asynchronous ones. */
	struct range_lock_async part[];
};

#define PART(sp, i) (&(sp)->part[i].lock)

/* struct span's astate (ASYNCHRONOUS below): the completions of parts that
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

static struct range_lock_tree *part_tree(struct rl_segments *s, const struct range_lock *p)
{
	return rl_seg_tree(s, (unsigned)((p->start >> s->shift) &
					 (((uint64_t)1 << s->log2n) - 1)));
}

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

/* Every segment's lock, ascending; fast readers revoked (they are holders). */
static void lock_all(struct rl_segments *s)
{
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		tree_lock(rl_seg_tree(s, g));
		rl_revoke_fast_readers(rl_seg_tree(s, g));
	}
}

/* The same for statistics, which are on only where fast reads are off. */
static void lock_all_keep_fast(struct rl_segments *s)
{
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		tree_lock(rl_seg_tree(s, g));
}

static void unlock_all(struct rl_segments *s)
{
	for (unsigned g = 1u << s->log2n; g-- > 0;)
		tree_unlock(rl_seg_tree(s, g));
}

static bool all_empty(struct rl_segments *s)
{
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		if (rl_seg_tree(s, g)->root)
			return false;
	return true;
}

/* Back to a tree without segments, if every segment is empty; bound to
 * the file it was bound to, if any (destroy then unbinds it). */
int rl_seg_destroy(struct range_lock_tree *tree)
{
	struct rl_segments *s = segments_of(tree);

	lock_all(s);
	if (!all_empty(s)) {
		unlock_all(s);
		return -EBUSY;
	}
	unlock_all(s);
	__atomic_store_n(&tree->file, s->file, __ATOMIC_RELAXED);
	rl_hb_release(tree_lock_word(tree));
	atomic_store_explicit(tree_lock_word(tree), 0, memory_order_release);
	free(s->stats);
	free(s);
	return 0;
}

int rl_seg_set_flag(struct range_lock_tree *tree, uint32_t flag, bool on, bool need_empty)
{
	struct rl_segments *s = segments_of(tree);
	int r = 0;

	lock_all(s);
	if (need_empty && !all_empty(s)) {
		r = -EBUSY;
	} else {
		for (unsigned g = 0; g < 1u << s->log2n; g++) {
			struct range_lock_tree *t = rl_seg_tree(s, g);

			tree_flags_store(t, on ? t->flags | flag : t->flags & ~flag);
		}
		tree_flags_store(tree, on ? tree->flags | flag : tree->flags & ~flag);
	}
	unlock_all(s);
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
	struct range_lock_file *old;

	lock_all(s); /* and the segments never read fast from now on */
	if (!all_empty(s)) {
		unlock_all(s);
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
	unlock_all(s);
	if (old)
		rl_file_free(old);
	return 0;
}

/* ---- statistics ------------------------------------------------------- */

/*
 * Each segment counts in its own block (struct rl_seg_stats, allocated at
 * enabling and freed with the segments), under its own lock, exactly as a
 * tree without segments counts; a spanning request counts once, in its
 * first part's segment (span_count()).  Enabling, reading and resetting
 * lock every segment: the sums are a snapshot, as on a plain tree.
 */
int rl_seg_enable_stats(struct range_lock_tree *tree, struct range_lock_stats *storage)
{
	struct rl_segments *s = segments_of(tree);
	unsigned nseg = 1u << s->log2n;
	struct rl_seg_stats *blocks;
	void *mem;
	int r = 0;

	if (posix_memalign(&mem, 128, nseg * sizeof(*blocks)))
		return -ENOMEM;
	blocks = mem;
	lock_all(s); /* statistics count in the trees: no fast reads from now on */
	if (s->user_stats) {
		r = s->user_stats == storage ? 0 : -EBUSY;
	} else {
		rl_race_ok(blocks, nseg * sizeof(*blocks));
		rl_race_ok(storage, sizeof(*storage));
		rl_stats_zero(storage);
		for (unsigned g = 0; g < nseg; g++) {
			struct range_lock_tree *t = rl_seg_tree(s, g);

			rl_race_ok(&t->stats, sizeof(t->stats));
			rl_stats_zero(&blocks[g].st);
			rl_stats_recount(t, &blocks[g].st);
			/* release: a waiter that sees the pointer sees zeroed counters */
			__atomic_store_n(&t->stats, &blocks[g].st, __ATOMIC_RELEASE);
		}
		s->stats = blocks;
		__atomic_store_n(&s->user_stats, storage, __ATOMIC_RELEASE);
		blocks = NULL;
	}
	unlock_all(s);
	free(blocks);
	return r;
}

int rl_seg_get_stats(struct range_lock_tree *tree, struct range_lock_stats *out)
{
	struct rl_segments *s = segments_of(tree);
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
	lock_all_keep_fast(s);
	for (unsigned g = 0; g < nseg; g++) {
		const stat_word_t *f = (const stat_word_t *)(const void *)&s->stats[g].st;

		for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++) {
			uint64_t v = __atomic_load_n(&f[i], __ATOMIC_RELAXED);

			/* the longest wait is the longest of any segment's;
			 * the rest, the peaks too, add up */
			sum[i] = i == max ? (v > sum[i] ? v : sum[i]) : sum[i] + v;
		}
	}
	/* The user's storage receives the sums (every reader holds every
	 * segment's lock: no two write it at once). */
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		__atomic_store_n(&((stat_word_t *)(void *)user)[i], sum[i], __ATOMIC_RELAXED);
	unlock_all(s);
	memcpy(out, sum, sizeof(*out));
	return 0;
}

void rl_seg_reset_stats(struct range_lock_tree *tree)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock_stats *user = __atomic_load_n(&s->user_stats, __ATOMIC_ACQUIRE);

	if (!user)
		return;
	lock_all_keep_fast(s);
	rl_stats_zero(user);
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		rl_stats_zero(&s->stats[g].st);
		rl_stats_recount(rl_seg_tree(s, g), &s->stats[g].st);
	}
	unlock_all(s);
}

/* ---- spanning requests ------------------------------------------------ */

/* A span of @lock for [start, last] (its range, but for a grow's new one),
 * @n parts, none in a tree. */
static struct span *span_new_range(struct range_lock_tree *tree, struct range_lock *lock,
				   bool reader, unsigned n, uint64_t start, uint64_t last)
{
	struct rl_segments *s = segments_of(tree);
	struct span *sp = malloc(sizeof(*sp) + n * sizeof(sp->part[0]));

	if (!sp)
		return NULL;
	sp->top = tree;
	sp->owner = lock;
	sp->n = n;
	sp->reader = reader;
	sp->in_set = false;
	sp->held = false;
	sp->user = NULL;
	atomic_init(&sp->astate, 0);
	for (unsigned i = 0; i < n; i++) {
		struct seg_part p = rl_seg_part(s, start, last, i);
		struct range_lock *r = PART(sp, i);

		memset(&sp->part[i], 0, sizeof(sp->part[i]));
		sp->part[i].arg = sp; /* span_of_part() */
		r->start = p.start;
		r->last = p.last;
		r->subtree_last = p.last;
		r->owner_tid = i == 0 ? RL_PART_FIRST : RL_PART_TAG;
	}
	sp->counted = SPAN_OUT;
	sp->wait_start_ns = 0;
	return sp;
}

static struct span *span_new(struct range_lock_tree *tree, struct range_lock *lock,
			     bool reader, unsigned n)
{
	return span_new_range(tree, lock, reader, n, lock->start, lock->last);
}

/*
 * STATISTICS.  A spanning request counts once, as a plain request does, in
 * the segment of its first part and under that segment's lock; its parts
 * count nothing (is_part()).  sp->counted says what it counted itself as
 * (SPAN_WAITING, SPAN_HELD, SPAN_OUT), kept whether statistics are on or
 * not, so that a recount (enable, reset: every segment locked) counts the
 * request by its first part as it will uncount itself.  It changes with
 * that part's presence in its tree: SPAN_OUT only as the part leaves.
 *
 * span_count(): the request moves to @to (SPAN_HELD after its wait;
 * SPAN_OUT at its unlock, or at a give-up: @why -EINTR, -ETIMEDOUT, or
 * -ECANCELED for a cancellation), under part[0]'s segment lock @t0.
 */
static void stat_give_up(struct range_lock_stats *st, int why)
{
	if (why == -EINTR)
		STAT_ADD(st, gave_up_signal, 1);
	else if (why == -ETIMEDOUT)
		STAT_ADD(st, gave_up_timeout, 1);
	else
		STAT_ADD(st, gave_up_cancel, 1);
}

static void span_count(struct span *sp, struct range_lock_tree *t0, int to, int why)
{
	struct range_lock_stats *st = t0->stats;

	if (st && sp->counted == SPAN_WAITING) {
		if (sp->wait_start_ns)
			rl_stat_wait_time(st, rl_now_ns() - sp->wait_start_ns);
		if (to == SPAN_HELD) {
			rl_stat_granted(st, sp->reader, true);
		} else {
			STAT_ADD(st, waiting_now, -1);
			if (!sp->in_set) /* (a set counts its give-up once) */
				stat_give_up(st, why);
		}
	} else if (st && sp->counted == SPAN_HELD && to == SPAN_OUT) {
		STAT_ADD(st, held_now, -1);
	}
	sp->counted = to;
}

static struct span *span_of_first(const struct range_lock *first)
{
	return (struct span *)(void *)((const char *)first - offsetof(struct span, part));
}

/* The span whose part @p is (any part: span_new() sets arg). */
static struct span *span_of_part(const struct range_lock *p)
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

static void part_completion_due(struct range_lock_async *a)
{
	a->lock.owner_tid |= RL_ASYNC_TAG;
	__atomic_store_n(&a->reserved_[0], PART_COMPLETION_DUE, __ATOMIC_RELAXED);
}

int rl_span_counted(const struct range_lock *first)
{
	return span_of_first(first)->counted;
}

/* The waiting code withdrew a spanning request's first part (a give-up,
 * @why as for span_count()), under its segment's lock @t0. */
void rl_span_withdrawn(struct range_lock_tree *t0, struct range_lock *first, int why)
{
	span_count(span_of_first(first), t0, SPAN_OUT, why);
}

/*
 * Take part @p out of segment tree @t, held or waiting (a release walk,
 * waking what it blocked there).  For the first part, @why is the reason
 * the request leaves (0: an unlock; else as for span_count()), and the
 * user's request, if it stands for the span (a hold, or a queued
 * asynchronous request), stops doing so.  Returns
 * whether @p was a queued part of an asynchronous request (its completion
 * will not run).
 */
static bool span_leave(struct range_lock_tree *t, struct span *sp, struct range_lock *p, int why)
{
	struct wake_list wl;
	uint32_t word;
	bool queued;

	wl.n = 0;
	tree_lock(t);
	if (p == PART(sp, 0)) {
		span_count(sp, t, SPAN_OUT, why);
		if (is_linked(sp->owner)) {
			sp->owner->rb_parent_flags = 0;
			sp->owner->rb_left = NULL;
		}
	}
	queued = is_async(p);
	word = atomic_load_explicit(wait_word(p), memory_order_relaxed);
	if (blockers_of(word))
		t->nr_waiting--;
	rl_remove_request(t, p, &wl);
	tree_unlock(t);
	wake_list_flush(&wl);
	return queued;
}

struct span_wait {
	struct span *sp;
	unsigned skip; /* the part the waiting code withdrew */
	int why;       /* -EINTR, -ETIMEDOUT; -ECANCELED: cancellation */
};

/* After the part being waited for gave up: every other part leaves. */
static void span_abandon(struct span_wait *sw)
{
	struct span *sp = sw->sp;
	struct rl_segments *s = segments_of(sp->top);

	for (unsigned i = 0; i < sp->n; i++)
		if (i != sw->skip)
			span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), sw->why);
	free(sp);
}

/* The same, as the cleanup handler of a cancelled killable wait. */
static void span_abandon_on_cancel(void *arg)
{
	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	span_abandon(arg);
}

/*
 * One arrival into every segment of @sp (see DESIGN).  Returns the number
 * of parts that wait (0: held), or -1 for a trylock (@w NULL) that would
 * wait, or -EINVAL for a timed call that would wait with a bad deadline;
 * in both cases nothing was entered.  @shown: the user's request (for the
 * checking mode's report).
 */
static int span_enter(const char *call, struct span *sp,
		      const struct range_lock *shown, struct waiter *w)
{
	struct rl_segments *s = segments_of(sp->top);
	uint32_t blockers[RL_SEG_MAX];
	struct range_lock_stats *st;
	bool reader = sp->reader, async = sp->user != NULL;
	struct entry_scan scan;
	uint64_t seq = 0;
	int waiting = 0;

	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		tree_lock(t);
		if (!reader)
			rl_revoke_fast_readers(t);
		if (__builtin_expect(t->nr_requests >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, NULL, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (i == 0 || seq_before(seq, t->seqnum))
			seq = t->seqnum;
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		rl_scan_entry(t, PART(sp, i), reader, !w, &scan);
		blockers[i] = scan.blockers;
		waiting += scan.blockers != 0;
	}
	st = part_tree(s, PART(sp, 0))->stats; /* (its lock is held) */
	if (waiting && (!w || (w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime)))) {
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		for (unsigned i = sp->n; i-- > 0;)
			tree_unlock(part_tree(s, PART(sp, i)));
		return w ? -EINVAL : -1;
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		if (blockers[i] && w->kind != WAIT_TIMED && w->kind != WAIT_ASYNC)
			rl_check_self_deadlock(t, PART(sp, i), reader, call, shown);
	}
	for (unsigned i = 0; i < sp->n; i++) {
		struct range_lock_tree *t = part_tree(s, PART(sp, i));

		rl_insert_request(t, PART(sp, i), reader, blockers[i], seq);
		t->seqnum = seq + 1;
		if (blockers[i] && !tree_is_fifo(t))
			atomic_fetch_or_explicit(wait_word(PART(sp, i)), HANDOFF,
						 memory_order_relaxed);
		if (blockers[i] && sp->user) /* its grant queues its completion */
			part_completion_due(&sp->part[i]);
	}
	sp->counted = waiting ? SPAN_WAITING : SPAN_HELD;
	sp->held = !waiting; /* (under every part's lock) */
	if (st && waiting) {
		STAT_ADD(st, contended, 1);
		STAT_ADD(st, waiting_now, 1);
		STAT_PEAK(st, waiting_now, waiting_peak);
	} else if (st) {
		rl_stat_granted(st, reader, false);
	}
	if (async) {
		/* Before the parts can be granted: their completions read
		 * these (they take a segment's lock after us). */
		sp->user->lock.seqnum = seq;
		atomic_store_explicit(&sp->astate, waiting ? (uint32_t)waiting : SA_HELD,
				      memory_order_relaxed);
		if (!waiting)
			sp->user->reserved_[0] = 0; /* held at submission */
		if (st && waiting)
			sp->wait_start_ns = rl_now_ns();
	}
	for (unsigned i = sp->n; i-- > 0;)
		tree_unlock(part_tree(s, PART(sp, i)));
	if (waiting)
		RL_TEST_SPAN_ENTERED_HOOK();
	/* (Not an asynchronous span's: once the locks are dropped, its
	 * completion may run, unlock it and free the span.) */
	if (st && waiting && !async)
		sp->wait_start_ns = rl_now_ns();
	return waiting;
}

/*
 * Wait for part @p (of a spanning request or a set; marked at entry, so
 * its count only falls).  0: granted (w->kept_after set if a signal or the
 * deadline came as it was); else the give-up's error, @p out of its tree.
 */
static int wait_part(struct range_lock_tree *t, struct range_lock *p, bool reader,
		     struct waiter *w)
{
	w->kept_after = 0;
	if (atomic_load_explicit(wait_word(p), memory_order_acquire) == 0) {
		rl_hb_acquire_last(wait_word(p));
		return 0;
	}
	w->tree = t;
	w->lock = p;
	w->reader = reader;
	w->items = NULL;
	w->word = WORD_MARKED; /* marked at entry: no hand-off clock */
	rl_probe_wait(wait_begin, w->tree, w->lock, w->reader);
	return rl_wait_for_grant(w);
}

static int span_wait_parts(struct span *sp, struct waiter *w, struct span_wait *sw)
{
	struct rl_segments *s = segments_of(sp->top);

	for (unsigned i = 0; i < sp->n; i++) {
		int r;

		sw->skip = i;
		r = wait_part(part_tree(s, PART(sp, i)), PART(sp, i), sp->reader, w);
		if (r)
			return r; /* that part left the tree: the others leave */
		if (w->kept_after) {
			/*
			 * A signal or the deadline came as this part was
			 * granted: the call keeps its range only if every other
			 * part is granted too (as a set does); else it gives
			 * up, this part included, rather than wait on -- a
			 * signal would go unreported.
			 */
			for (unsigned j = i + 1; j < sp->n; j++)
				if (atomic_load_explicit(wait_word(PART(sp, j)),
							 memory_order_acquire)) {
					sw->skip = sp->n; /* every part leaves */
					return w->kept_after;
				}
			for (unsigned j = i + 1; j < sp->n; j++)
				rl_hb_acquire_last(wait_word(PART(sp, j)));
			return 0;
		}
	}
	return 0;
}

/*
 * Wait for every part; on a give-up (and on cancellation of a killable
 * call, the waiting code having withdrawn the part it waited for) every
 * other part leaves and the span is freed.
 */
/*
 * The CLAIM, after a pass that saw every part granted (GROW below): under
 * the locks of every segment of the span, ascending, the request holds if
 * every part is still granted -- a growth may have made one wait again
 * since the pass saw it (it does so only under that part's lock, while
 * @held is false); then @held is set, which every growth reads under one
 * of those locks, and the request is counted as held.  False: a new pass.
 */
static bool span_claim(struct span *sp)
{
	struct rl_segments *s = segments_of(sp->top);
	bool all = true;

	for (unsigned i = 0; i < sp->n; i++)
		tree_lock(part_tree(s, PART(sp, i)));
	for (unsigned i = 0; i < sp->n && all; i++)
		all = atomic_load_explicit(wait_word(PART(sp, i)), memory_order_relaxed) == 0;
	if (all) {
		sp->held = true;
		span_count(sp, part_tree(s, PART(sp, 0)), SPAN_HELD, 0);
	}
	for (unsigned i = sp->n; i-- > 0;)
		tree_unlock(part_tree(s, PART(sp, i)));
	return all;
}

static int span_wait(struct span *sp, struct waiter *w)
{
	struct span_wait sw = { sp, 0, -ECANCELED };
	int r;

	pthread_cleanup_push(span_abandon_on_cancel, &sw);
	for (;;) {
		r = span_wait_parts(sp, w, &sw);
		if (r || span_claim(sp))
			break;
		if (w->kept_after) {
			/* A signal or the deadline came: no new pass, the call
			 * gives up (as when a part is still waiting then). */
			sw.skip = sp->n; /* every part leaves */
			r = w->kept_after;
			break;
		}
	}
	pthread_cleanup_pop(0);
	if (r) {
		sw.why = r;
		span_abandon(&sw);
	}
	return r;
}

static int span_lock(const char *call, struct range_lock_tree *tree,
		     struct range_lock *lock, bool reader, struct waiter *w,
		     unsigned n, int subclass, void *site)
{
	struct span *sp = span_new(tree, lock, reader, n);
	int r;

	if (!sp) {
		if (!w || w->kind == WAIT_PLAIN)
			rl_die(call, lock, "out of memory for the parts of a range "
			       "that spans segments");
		return -ENOMEM;
	}
	r = span_enter(call, sp, lock, w);
	if (r < 0) {
		free(sp);
		return r == -1 ? 0 : r; /* trylock: busy */
	}
	if (r > 0) {
		r = span_wait(sp, w);
		if (r)
			return r;
	}
	lock->rb_left = (struct range_lock *)(void *)sp;
	lock->rb_right = NULL;
	lock->seqnum = PART(sp, 0)->seqnum;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	rl_check_acquired(tree, lock, subclass, site);
	return w ? 0 : 1;
}

/* ---- sets (range_lock_many()) ------------------------------------------- */

/*
 * SETS.  A set whose requests all lie in one segment is a set of that
 * segment's tree (sets.c: one arrival there, overtaking as a whole, as on
 * any tree; rl_seg_set_tree()).  Any other set is ONE spanning arrival
 * (design S2 over the union of its members' segments): each member is
 * entered as a span -- one part per segment it meets, a member within one
 * stripe a span of one part -- under the locks of all their segments,
 * taken ascending and held until every part of every member is scanned
 * and then inserted, all at one seqnum (the largest counter), so that
 * siblings never count each other (equal seqnums never precede each
 * other, as in a plain set).  Like a spanning request, the set never
 * overtakes (every part counts every conflict) and its waiting parts are
 * HANDOFF-marked in the default policy.  The call waits for every part
 * (members in order, parts ascending: counts only fall); a give-up takes
 * every part of every member out (set_abandon()).  Held, each member is
 * what a lock call of it alone leaves: a member within one stripe takes
 * its part's place in its segment (rl_move_request(), as a shrink to one
 * stripe does), a spanning one keeps its span; range_unlock_many() and
 * the single unlocks release them alike.
 *
 * Statistics as a plain set's (sets.c): per member, in its first part's
 * segment (held or waiting at entry, its grant when the call returns);
 * once per set, in the first member's first segment: the contention, the
 * busy trylock, the wait time and the give-up (span_count() leaves those
 * to the set for in_set spans).  A member granted while the set waits
 * and given up with it is never counted as acquired (a plain set's is).
 */
struct set_wait {
	struct span **sp;
	const struct range_lock_item *items;
	unsigned n;
	unsigned skip_m, skip_p; /* the part the waiting code withdrew */
	int why;                 /* -EINTR, -ETIMEDOUT; -ECANCELED */
	uint64_t start_ns;       /* the set's wait, if statistics time it */
};

/* Every part of every member of @sw, the one at (@m, @p) last. */
#define set_foreach_part(sw, m, p) \
	for ((m) = 0; (m) < (sw)->n; (m)++) \
		for ((p) = 0; (p) < (sw)->sp[m]->n; (p)++)

/*
 * One arrival of every part of every member of @sw (SETS).  Returns 1 if
 * some part waits, 0 if all are held, -1 for a trylock (@w NULL) that
 * would wait, -EINVAL for a timed call that would wait with a bad
 * deadline (nothing entered in those two cases).
 */
static int set_enter(const char *call, struct range_lock_tree *tree, struct set_wait *sw,
		     const struct range_lock_item *items, struct waiter *w)
{
	struct rl_segments *s = segments_of(tree);
	uint64_t used[RL_SEG_MAX / 64] = { 0 }, writes[RL_SEG_MAX / 64] = { 0 };
	struct range_lock_tree *t0 = part_tree(s, PART(sw->sp[0], 0));
	struct range_lock_stats *st;
	struct entry_scan scan;
	bool waiting = false, first = true;
	uint64_t seq = 0;
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		unsigned g = rl_seg_part(s, sw->sp[m]->owner->start, sw->sp[m]->owner->last, p).seg;

		used[g / 64] |= (uint64_t)1 << (g % 64);
		if (!sw->sp[m]->reader)
			writes[g / 64] |= (uint64_t)1 << (g % 64);
	}
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (!(used[g / 64] >> (g % 64) & 1))
			continue;
		tree_lock(t);
		if (writes[g / 64] >> (g % 64) & 1)
			rl_revoke_fast_readers(t);
		if (__builtin_expect(t->nr_requests + sw->n >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, NULL, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (first || seq_before(seq, t->seqnum))
			seq = t->seqnum;
		first = false;
	}
	/* Every part scanned before any is inserted: siblings count nothing
	 * of each other.  A part's blockers wait in its (unpublished) wait
	 * word until it is inserted. */
	for (m = 0; m < sw->n; m++) {
		struct span *sp = sw->sp[m];
		bool mw = false;

		for (p = 0; p < sp->n; p++) {
			rl_scan_entry(part_tree(s, PART(sp, p)), PART(sp, p), sp->reader, !w, &scan);
			atomic_store_explicit(wait_word(PART(sp, p)), scan.blockers,
					      memory_order_relaxed);
			mw |= scan.blockers != 0;
		}
		sp->counted = mw ? SPAN_WAITING : SPAN_HELD;
		waiting |= mw;
	}
	st = t0->stats; /* (its lock is held) */
	if (waiting && (!w || (w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime)))) {
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		for (unsigned g = 1u << s->log2n; g-- > 0;)
			if (used[g / 64] >> (g % 64) & 1)
				tree_unlock(rl_seg_tree(s, g));
		for (m = 0; m < sw->n; m++)
			sw->sp[m]->counted = SPAN_OUT;
		return w ? -EINVAL : -1;
	}
	if (waiting && w->kind != WAIT_TIMED) {
		set_foreach_part(sw, m, p) {
			struct range_lock *part = PART(sw->sp[m], p);

			if (atomic_load_explicit(wait_word(part), memory_order_relaxed))
				rl_check_self_deadlock(part_tree(s, part), part, sw->sp[m]->reader,
						       call, items[m].lock);
		}
	}
	set_foreach_part(sw, m, p) {
		struct range_lock *part = PART(sw->sp[m], p);
		struct range_lock_tree *t = part_tree(s, part);
		uint32_t b = atomic_load_explicit(wait_word(part), memory_order_relaxed);

		rl_insert_request(t, part, sw->sp[m]->reader, b, seq);
		if (b && !tree_is_fifo(t))
			atomic_fetch_or_explicit(wait_word(part), HANDOFF, memory_order_relaxed);
	}
	for (m = 0; m < sw->n; m++) {
		struct span *sp = sw->sp[m];
		struct range_lock_stats *ms = part_tree(s, PART(sp, 0))->stats;

		if (ms && sp->counted == SPAN_WAITING) {
			STAT_ADD(ms, waiting_now, 1);
			STAT_PEAK(ms, waiting_now, waiting_peak);
		} else if (ms) {
			rl_stat_granted(ms, sp->reader, false);
		}
	}
	if (st && waiting)
		STAT_ADD(st, contended, 1);
	for (m = 0; m < sw->n; m++) /* (under every part's lock) */
		sw->sp[m]->held = !waiting;
	for (unsigned g = 1u << s->log2n; g-- > 0;) {
		if (used[g / 64] >> (g % 64) & 1) {
			rl_seg_tree(s, g)->seqnum = seq + 1;
			tree_unlock(rl_seg_tree(s, g));
		}
	}
	sw->start_ns = st && waiting ? rl_now_ns() : 0;
	return waiting;
}

/* The members' marks (rl_seg_lock_many()), when the call fails. */
static void set_unmark(const struct range_lock_item *items, unsigned n)
{
	for (unsigned m = 0; m < n; m++)
		items[m].lock->rb_parent_flags &= ~(uintptr_t)RL_LINKED;
}

/* The give-up: counted once, then every part of every member leaves (but
 * the one the waiting code withdrew), and the spans and their array are
 * freed (also when a cancellation unwinds the call). */
static void set_abandon(struct set_wait *sw)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	struct range_lock_tree *t0 = part_tree(s, PART(sw->sp[0], 0));
	struct range_lock_stats *st;
	unsigned m, p;

	/* Before the parts leave: while one is in a tree, the tree lives. */
	tree_lock(t0);
	st = t0->stats;
	if (st) {
		if (sw->start_ns)
			rl_stat_wait_time(st, rl_now_ns() - sw->start_ns);
		stat_give_up(st, sw->why);
	}
	tree_unlock(t0);
	set_foreach_part(sw, m, p)
		if (m != sw->skip_m || p != sw->skip_p)
			span_leave(part_tree(s, PART(sw->sp[m], p)), sw->sp[m],
				   PART(sw->sp[m], p), sw->why);
	for (m = 0; m < sw->n; m++)
		free(sw->sp[m]);
	free(sw->sp);
	set_unmark(sw->items, sw->n);
}

static void set_abandon_on_cancel(void *arg)
{
	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	set_abandon(arg);
}

/* Wait for every part (see span_wait_parts(), whose rules it follows). */
static int set_wait_parts(struct set_wait *sw, struct waiter *w)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		int r;

		sw->skip_m = m;
		sw->skip_p = p;
		r = wait_part(part_tree(s, PART(sw->sp[m], p)), PART(sw->sp[m], p),
			      sw->sp[m]->reader, w);
		if (r)
			return r; /* that part left its tree: the others leave */
		if (w->kept_after) {
			/* Granted as the signal or the deadline came: the set
			 * is kept only if every part is granted (a plain set's
			 * rule), else every part leaves, this one included. */
			unsigned m2, p2;
			bool all = true;

			set_foreach_part(sw, m2, p2)
				all &= atomic_load_explicit(wait_word(PART(sw->sp[m2], p2)),
							    memory_order_acquire) == 0;
			if (!all) {
				sw->skip_m = sw->n; /* every part leaves */
				return w->kept_after;
			}
			set_foreach_part(sw, m2, p2)
				rl_hb_acquire_last(wait_word(PART(sw->sp[m2], p2)));
			return 0;
		}
	}
	return 0;
}

/* The claim of a set (span_claim()'s, over the union of its members'
 * segments): every member holds, or none and a new pass. */
static bool set_claim(struct set_wait *sw)
{
	struct rl_segments *s = segments_of(sw->sp[0]->top);
	uint64_t used[RL_SEG_MAX / 64] = { 0 };
	bool all = true;
	unsigned m, p;

	set_foreach_part(sw, m, p) {
		unsigned g = rl_seg_part(s, sw->sp[m]->owner->start, sw->sp[m]->owner->last, p).seg;

		used[g / 64] |= (uint64_t)1 << (g % 64);
	}
	for (unsigned g = 0; g < 1u << s->log2n; g++)
		if (used[g / 64] >> (g % 64) & 1)
			tree_lock(rl_seg_tree(s, g));
	set_foreach_part(sw, m, p)
		all &= atomic_load_explicit(wait_word(PART(sw->sp[m], p)),
					    memory_order_relaxed) == 0;
	for (m = 0; all && m < sw->n; m++)
		sw->sp[m]->held = true;
	for (unsigned g = 1u << s->log2n; g-- > 0;)
		if (used[g / 64] >> (g % 64) & 1)
			tree_unlock(rl_seg_tree(s, g));
	return all;
}

int rl_seg_lock_many(const char *call, struct range_lock_tree *tree,
		     const struct range_lock_item *items, unsigned n, struct waiter *w,
		     void *site)
{
	struct rl_segments *s = segments_of(tree);
	struct set_wait sw = { NULL, NULL, n, 0, 0, -ECANCELED, 0 };
	int r;

	/* Members are marked as in a tree while the call runs, so that one
	 * listed twice is found (as in a plain set, rl_enter_many()). */
	for (unsigned m = 0; m < n; m++) {
		if (is_linked(items[m].lock))
			rl_die(call, items[m].lock, "request appears twice in the set");
		items[m].lock->rb_parent_flags |= RL_LINKED;
	}
	sw.sp = malloc(n * sizeof(*sw.sp));
	for (unsigned m = 0; sw.sp && m < n; m++) {
		struct range_lock *lock = items[m].lock;

		sw.sp[m] = span_new(tree, lock, items[m].mode == RANGE_LOCK_READ,
				    rl_seg_parts(s, lock->start, lock->last));
		if (!sw.sp[m]) {
			while (m-- > 0)
				free(sw.sp[m]);
			free(sw.sp);
			sw.sp = NULL;
		} else {
			sw.sp[m]->in_set = true;
		}
	}
	if (!sw.sp) {
		if (w && w->kind == WAIT_PLAIN)
			rl_die(call, items[0].lock, "out of memory for the parts of a set "
			       "on a tree with segments");
		set_unmark(items, n);
		return -ENOMEM;
	}
	r = set_enter(call, tree, &sw, items, w);
	if (r < 0) {
		for (unsigned m = 0; m < n; m++)
			free(sw.sp[m]);
		free(sw.sp);
		set_unmark(items, n);
		return r == -1 ? -EBUSY : r;
	}
	if (r > 0) {
		sw.items = items;
		pthread_cleanup_push(set_abandon_on_cancel, &sw);
		for (;;) {
			r = set_wait_parts(&sw, w);
			if (r || set_claim(&sw))
				break;
			if (w->kept_after) { /* (span_wait()'s rule) */
				sw.skip_m = sw.n; /* every part leaves */
				r = w->kept_after;
				break;
			}
		}
		pthread_cleanup_pop(0);
		if (r) {
			sw.why = r;
			set_abandon(&sw);
			return r;
		}
	}
	/* Held: each member becomes what a lock of it alone leaves. */
	for (unsigned m = 0; m < n; m++) {
		struct span *sp = sw.sp[m];
		struct range_lock *lock = items[m].lock;
		struct range_lock_tree *t0 = part_tree(s, PART(sp, 0));

		tree_lock(t0);
		span_count(sp, t0, SPAN_HELD, 0);
		if (m == 0 && sw.start_ns && t0->stats)
			rl_stat_wait_time(t0->stats, rl_now_ns() - sw.start_ns);
		sp->in_set = false;
		if (sp->n == 1) {
			rl_move_request(t0, PART(sp, 0), lock);
			lock->owner_tid = rl_thread_id();
		}
		tree_unlock(t0);
		if (sp->n == 1) {
			free(sp);
		} else {
			lock->rb_left = (struct range_lock *)(void *)sp;
			lock->rb_right = NULL;
			lock->seqnum = PART(sp, 0)->seqnum;
			lock->rb_parent_flags = (sp->reader ? RL_READER : 0) | RL_LINKED;
		}
		rl_check_acquired(tree, lock, 0, site);
	}
	free(sw.sp);
	return 0;
}

/* The tree of the one segment every member of the set lies in, or NULL. */
struct range_lock_tree *rl_seg_set_tree(struct range_lock_tree *tree,
					const struct range_lock_item *items, unsigned n)
{
	struct rl_segments *s = segments_of(tree);
	unsigned g = 0;

	for (unsigned m = 0; m < n; m++) {
		const struct range_lock *lock = items[m].lock;

		if (rl_seg_parts(s, lock->start, lock->last) != 1)
			return NULL;
		if (m == 0)
			g = rl_seg_part(s, lock->start, lock->last, 0).seg;
		else if (rl_seg_part(s, lock->start, lock->last, 0).seg != g)
			return NULL;
	}
	return rl_seg_tree(s, g);
}

void rl_seg_unlock_many(struct range_lock_tree *tree, const struct range_lock_item *items,
			unsigned n)
{
	for (unsigned m = 0; m < n; m++) {
		bool reader = items[m].mode == RANGE_LOCK_READ;

		if (!items[m].lock)
			rl_die("range_unlock_many", NULL, "NULL request in the set");
		rl_seg_unlock("range_unlock_many", tree, items[m].lock, reader);
	}
}

/* ---- asynchronous spanning requests ------------------------------------ */

/*
 * ASYNCHRONOUS.  A spanning request submitted asynchronously
 * (range_write_lock_async()) enters as any spanning request (span_enter():
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
 *     then takes every part out (span_leave(): a release walk in each
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
	span_count(sp, t0, SPAN_HELD, 0);
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
		free(sp); /* the withdrawal finished before us */
}

static int span_lock_async(const char *call, struct range_lock_tree *tree,
			   struct range_lock_async *req, bool reader, unsigned n)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock *lock = &req->lock;
	struct span *sp = span_new(tree, lock, reader, n);
	struct waiter w;

	if (!sp)
		return -ENOMEM;
	sp->user = req;
	for (unsigned i = 0; i < n; i++) {
		sp->part[i].done = span_part_done;
		sp->part[i].arg = sp;
		sp->part[i].tree_ = NULL; /* (no file to ask: rl_async_run()) */
	}
	/* For the cancel (ASYNCHRONOUS): queued until span_async_held()
	 * (span_enter() clears it if the request is held at once). */
	req->reserved_[1] = SEG_ASYNC_SPANNING |
			    (rl_seg_part(s, lock->start, lock->last, 0).seg + 1);
	req->reserved_[0] = SEG_ASYNC_QUEUED;
	/* A spanning hold from the start (its completion may run on another
	 * thread as soon as span_enter() drops the locks, and unlock it). */
	lock->rb_left = (struct range_lock *)(void *)sp;
	lock->rb_right = NULL;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	req->tree_ = tree; /* submitted: range_lock_async_cancel() accepts it */
	waiter_init(&w, WAIT_ASYNC, CLOCK_MONOTONIC, NULL);
	return span_enter(call, sp, lock, &w) ? -EINPROGRESS : 0;
}

int rl_seg_lock_async(const char *call, struct range_lock_tree *tree,
		      struct range_lock_async *req, bool reader)
{
	struct rl_segments *s = segments_of(tree);
	struct range_lock *lock = &req->lock;
	unsigned n = rl_seg_parts(s, lock->start, lock->last);

	if (n == 1) { /* a request of its segment, as on any tree */
		unsigned g = rl_seg_part(s, lock->start, lock->last, 0).seg;

		req->reserved_[1] = g + 1; /* the cancel's segment */
		req->reserved_[0] = 0;
		return rl_lock_async_in(call, rl_seg_tree(s, g), tree, req, reader);
	}
	check_args(call, tree, lock);
	if (is_linked(lock))
		rl_die(call, lock, ALREADY_IN_TREE);
	return span_lock_async(call, tree, req, reader, n);
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
		withdrawn += span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), -ECANCELED);
	req->tree_ = NULL; /* yours again */
	old = atomic_load_explicit(&sp->astate, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old,
						      (old - withdrawn) | SA_CANCEL_DONE,
						      memory_order_acq_rel, memory_order_relaxed))
		;
	if (((old - withdrawn) & SA_COUNT) == 0)
		free(sp); /* no part's completion is due any more */
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

/* ---- grow (range_lock_grow()) ------------------------------------------ */

/*
 * GROW of a held request L (seqnum s) to [start, last] (docs/design.md S7;
 * the rule is segments.pml's CFG_GROW).  A segment's own grow (protocol.c)
 * cannot serve: it takes a request whose count is 0 for a holder, but a
 * spanning request's granted part is not held while another of its parts
 * waits, and a growth that waits for it can close a cycle (design S7 has
 * one).  So:
 *
 *  - "Held" is the whole request's hold.  A request of one segment holds
 *    when its count is 0; a spanning one when its span says so (held, set
 *    under the locks of all its segments at its entry or by its claim,
 *    span_claim(); an asynchronous one's SA_HELD).
 *  - The growth enters every segment of the new range under all their
 *    locks, taken ascending and held until it is in (one step, as an
 *    arrival).  In each, the added units -- a piece below and a piece
 *    above L's hull there, or the whole hull in a segment L is not in
 *    yet -- are growths at seqnum s: each counts every conflicting holder
 *    and every request not later than L (precedes(), protocol.h), and puts
 *    one blocker on every later conflicting waiter.  Each segment's counter
 *    is raised past s.
 *  - A granted part of a later spanning request that does not hold is
 *    REVOKED: it gets that blocker too and waits again (HANDOFF-marked in
 *    the default policy: spans are never overtaken).  Its thread sees it
 *    at its claim and makes a new pass.  An asynchronous span's revoked
 *    part is due one more completion: astate + 1 by CAS unless SA_HELD,
 *    the deciding step, taken before any blocker is added (grow_pin());
 *    its grant queues the part again.  A part whose last completion is
 *    still queued cannot be queued twice: the growth lets go of every
 *    lock, pauses and enters again (PART_COMPLETION_DUE; such a
 *    completion runs once the completions ahead of it on the thread
 *    whose release granted it have returned -- user code: the pause,
 *    grow_pause(), is where a grow that may give up does).
 *  - Waiting pieces are HANDOFF-marked in the default policy, so their
 *    counts only fall; the call waits for each in turn (wait_part()).  A
 *    give-up takes every piece out through its segment's release walk, one
 *    segment at a time (grow_abandon()); L is exactly as before the call.
 *  - Every piece granted: under all the locks again (grow_merge()), each
 *    piece merges into L's part of its segment (rl_grow_merge(): L's hull
 *    there grows; a request that counted both loses one) or becomes L's
 *    part in a segment it was not in (rl_move_request(): what counted the
 *    piece counts the part, at the same seqnum).  If L now has more parts,
 *    they move to a new span: a request of one stripe becomes spanning.
 *  - A _try inserts nothing unless the pieces count nothing and revoke
 *    nothing: a later spanning request granted in part on the added units
 *    makes it busy (it would otherwise be made to wait again by a call
 *    that may not wait).
 * Statistics: the grow counts as an acquisition (or a busy try, a
 * contention, a give-up) in the first segment of the new range -- a
 * give-up that the waiting code noticed on a piece counts in that piece's
 * segment, as the waiting code counts every give-up; each
 * waiting piece counts in waiting_now of its segment, as a tree without
 * segments counts its growths.
 */
#define GROW_BUSY  (-1)
#define GROW_RETRY (-2)

/* One segment of the new range. */
struct seg_growth {
	struct range_lock_tree *t;
	/* owner: L's part here (L itself within one stripe), NULL if L has
	 * none yet; start, last: L's new hull here; part[0..n-1]: the pieces. */
	struct growth g;
	uint32_t blockers[2];
};

struct grow_wait {
	struct seg_growth *gs;
	unsigned n;                /* segments of the new range */
	bool reader;
	unsigned skip_k, skip_j;   /* the piece the waiting code withdrew */
	int why;
	struct span *to;           /* the new span, if any (freed on cancel) */
};

#define grow_foreach_piece(segs, nsegs, k, j) \
	for ((k) = 0; (k) < (nsegs); (k)++) \
		for ((j) = 0; (j) < (segs)[k].g.n; (j)++)

/* Does the request holding spanning part @p's span hold (GROW)? */
static bool span_holds(const struct span *sp)
{
	if (sp->user)
		return atomic_load_explicit(&((struct span *)sp)->astate,
					    memory_order_acquire) & SA_HELD;
	return sp->held;
}

enum { MEETS_NONE, MEETS_COUNT, MEETS_BLOCK, MEETS_REVOKE };

/* Under its segment's lock: what piece @p does about request @q there. */
static int grow_meets(struct range_lock *q, const struct range_lock *p, bool reader)
{
	if (!conflict(reader, is_reader(q)))
		return MEETS_NONE;
	if (!is_part(q))
		return precedes(q, p) ? MEETS_COUNT : MEETS_BLOCK;
	/* A part: counted if not later than L or if its request holds. */
	if (!seq_before(p->seqnum, q->seqnum) || span_holds(span_of_part(q)))
		return MEETS_COUNT;
	return atomic_load_explicit(wait_word(q), memory_order_relaxed) ? MEETS_BLOCK
									: MEETS_REVOKE;
}

/*
 * Before anything changes: GROW_BUSY if a try would revoke a part,
 * GROW_RETRY if a part to revoke still has its completion queued, else 0.
 * (A part met by both pieces of one hull covers L's hull there, so it
 * counted L's part: it is waiting, never revoked twice.)
 */
static int grow_check(struct seg_growth *gs, unsigned n, bool reader, bool try)
{
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock *p = &gs[k].g.part[j];

		itree_foreach(q, gs[k].t->root, p->start, p->last) {
			if (grow_meets(q, p, reader) != MEETS_REVOKE)
				continue;
			if (try)
				return GROW_BUSY;
			if (span_of_part(q)->user &&
			    (__atomic_load_n(&((struct range_lock_async *)(void *)q)->reserved_[0],
					     __ATOMIC_ACQUIRE) & PART_COMPLETION_DUE))
				return GROW_RETRY;
		}
	}
	return 0;
}

/* An asynchronous span is due one more completion, unless it holds. */
static bool grow_pin(struct span *sp)
{
	uint32_t old = atomic_load_explicit(&sp->astate, memory_order_relaxed);

	do {
		if (old & SA_HELD)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&sp->astate, &old, old + 1,
							memory_order_acq_rel,
							memory_order_relaxed));
	return true;
}

/* Each piece's blockers (@pin: an asynchronous span's revocation decided
 * here, pinned, so that grow_block() gets the same answer after; else
 * only counted, changing nothing); the total. */
static uint32_t grow_count(struct seg_growth *gs, unsigned n, bool reader, bool pin)
{
	uint32_t total = 0;
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock *p = &gs[k].g.part[j];
		uint32_t b = 0;

		itree_foreach(q, gs[k].t->root, p->start, p->last) {
			int d = grow_meets(q, p, reader);

			if (d == MEETS_REVOKE && pin && span_of_part(q)->user &&
			    !grow_pin(span_of_part(q)))
				d = MEETS_COUNT; /* it holds since grow_check() */
			b += d == MEETS_COUNT;
		}
		gs[k].blockers[j] = b;
		total += b;
	}
	return total;
}

/* The later waiters get a blocker each; granted parts of spans that do
 * not hold are revoked. */
static void grow_block(struct seg_growth *gs, unsigned n, bool reader)
{
	struct range_lock *q;
	unsigned k, j;

	grow_foreach_piece(gs, n, k, j) {
		struct range_lock_tree *t = gs[k].t;
		struct range_lock *p = &gs[k].g.part[j];

		itree_foreach(q, t->root, p->start, p->last) {
			int d = grow_meets(q, p, reader);
			uint32_t old;

			if (d != MEETS_BLOCK && d != MEETS_REVOKE)
				continue;
			rl_race_ok(wait_word(q), sizeof(uint32_t)); /* annotate.h, edge 8 */
			old = atomic_fetch_add_explicit(wait_word(q), ONE_BLOCKER,
							memory_order_relaxed);
			if (old == ELIGIBLE || old == 0)
				t->nr_waiting++;
			if (old != 0)
				continue;
			/* Revoked (its request does not hold: no thread is in
			 * its critical section; the claim will see this). */
			if (!tree_is_fifo(t))
				atomic_fetch_or_explicit(wait_word(q), HANDOFF,
							 memory_order_relaxed);
			if (span_of_part(q)->user)
				part_completion_due((struct range_lock_async *)(void *)q);
		}
	}
}

/* Lock (@on) or unlock every segment of the new range, ascending / not. */
static void grow_lock_all(struct seg_growth *gs, unsigned n, bool on)
{
	if (on)
		for (unsigned k = 0; k < n; k++)
			tree_lock(gs[k].t);
	else
		for (unsigned k = n; k-- > 0;)
			tree_unlock(gs[k].t);
}

/* Every piece but the withdrawn one leaves (release walks), one segment
 * at a time; the give-up counts once (the waiting code counted it if it
 * withdrew a piece). */
static void grow_abandon(struct grow_wait *gw)
{
	unsigned k, j;

	grow_foreach_piece(gw->gs, gw->n, k, j) {
		struct range_lock_tree *t = gw->gs[k].t;
		struct range_lock *p = &gw->gs[k].g.part[j];
		struct wake_list wl;
		uint32_t word;

		if (k == gw->skip_k && j == gw->skip_j)
			continue;
		wl.n = 0;
		tree_lock(t);
		word = atomic_load_explicit(wait_word(p), memory_order_relaxed);
		if (blockers_of(word)) {
			t->nr_waiting--;
			if (t->stats)
				STAT_ADD(t->stats, waiting_now, -1);
		}
		rl_remove_request(t, p, &wl);
		tree_unlock(t);
		wake_list_flush(&wl);
	}
	if (gw->skip_k == gw->n) {
		struct range_lock_tree *t0 = gw->gs[0].t;

		tree_lock(t0);
		if (t0->stats)
			stat_give_up(t0->stats, gw->why);
		tree_unlock(t0);
	}
}

static void grow_abandon_on_cancel(void *arg)
{
	struct grow_wait *gw = arg;

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	grow_abandon(gw);
	free(gw->to);
	free(gw->gs);
}

/* A cancellation in grow_pause(): a give-up, with nothing to take out. */
static void grow_free_on_cancel(void *arg)
{
	struct grow_wait *gw = arg;
	struct range_lock_tree *t0 = gw->gs[0].t;

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	tree_lock(t0);
	if (t0->stats)
		stat_give_up(t0->stats, -ECANCELED);
	tree_unlock(t0);
	free(gw->to);
	free(gw->gs);
}

/*
 * GROW_RETRY's pause, no segment locked and nothing entered: up to 50 us,
 * as the call's kind allows.  0 to look again; -ETIMEDOUT past a timed
 * call's deadline (-EINVAL if that is invalid: the call would wait),
 * -EINTR when a signal interrupts an interruptible call; a killable call
 * is a cancellation point here.  (The completion may stay queued for as
 * long as a completion ahead of it on its thread runs.)
 */
static int grow_pause(struct grow_wait *gw, const struct waiter *w)
{
	_Atomic uint32_t never = 0;
	struct timespec until;
	int r;

	if (w->kind == WAIT_TIMED) {
		if (!timespec_valid(w->clockid, w->abstime))
			return -EINVAL;
		if (deadline_passed(w->clockid, w->abstime))
			return -ETIMEDOUT;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	timespec_add_ns(&until, 50000);
	rl_sooner_user_deadline(w, &until);
	pthread_cleanup_push(grow_free_on_cancel, gw);
	if (w->kind == WAIT_KILLABLE)
		pthread_testcancel();
	r = rl_wait(&never, 0, CLOCK_MONOTONIC, &until,
		    w->kind == WAIT_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0);
	if (w->kind == WAIT_KILLABLE)
		pthread_testcancel();
	pthread_cleanup_pop(0);
	if (r == -EINTR && w->kind == WAIT_INTERRUPTIBLE)
		return -EINTR;
	if (w->kind == WAIT_TIMED && deadline_passed(w->clockid, w->abstime))
		return -ETIMEDOUT;
	return 0;
}

/* Wait for every piece (span_wait_parts()'s rules). */
static int grow_wait_pieces(struct grow_wait *gw, struct waiter *w)
{
	unsigned k, j;

	grow_foreach_piece(gw->gs, gw->n, k, j) {
		int r;

		gw->skip_k = k;
		gw->skip_j = j;
		/* (its segment is gs[k]'s: a piece above a hull may begin
		 * in a stripe of another segment) */
		r = wait_part(gw->gs[k].t, &gw->gs[k].g.part[j], gw->reader, w);
		if (r)
			return r; /* that piece left its tree: the others leave */
		if (w->kept_after) {
			unsigned k2, j2;
			bool all = true;

			grow_foreach_piece(gw->gs, gw->n, k2, j2)
				all &= atomic_load_explicit(wait_word(&gw->gs[k2].g.part[j2]),
							    memory_order_acquire) == 0;
			if (!all) {
				gw->skip_k = gw->n; /* every piece leaves */
				return w->kept_after;
			}
			grow_foreach_piece(gw->gs, gw->n, k2, j2)
				rl_hb_acquire_last(wait_word(&gw->gs[k2].g.part[j2]));
			return 0;
		}
	}
	return 0;
}

/* Wait for every piece; on a give-up (and on cancellation of a killable
 * call) every piece leaves. */
static int grow_wait(struct grow_wait *gw, struct waiter *w)
{
	int r;

	pthread_cleanup_push(grow_abandon_on_cancel, gw);
	r = grow_wait_pieces(gw, w);
	pthread_cleanup_pop(0);
	if (r) {
		gw->why = r;
		grow_abandon(gw);
	}
	return r;
}

/*
 * Every piece granted, every segment of the new range locked: L takes the
 * new range (see GROW).  @sp: L's span (NULL within one stripe); @to: the
 * new span if L has more parts now, else NULL.  Returns the span to free.
 */
static struct span *grow_merge(struct range_lock_tree *tree, struct range_lock *lock,
			       struct span *sp, struct span *to, struct seg_growth *gs,
			       unsigned n, uint64_t start, uint64_t last, struct wake_list *wl)
{
	struct range_lock_tree *old_t0 = sp ? part_tree(segments_of(tree), PART(sp, 0)) : NULL;
	bool reader = sp ? sp->reader : is_reader(lock);

	for (unsigned k = 0; k < n; k++) {
		struct seg_growth *x = &gs[k];

		if (x->g.owner) {
			if (!old_t0)
				old_t0 = x->t; /* (within one stripe: L's segment) */
			if (x->g.n)
				rl_grow_merge(x->t, &x->g, wl); /* rekeys the owner */
		}
		if (!to)
			continue;
		/* A read held fast within one stripe (materialised above): its
		 * slot goes back, as at its unlock; L is a span's now. */
		if (x->g.owner == lock && (lock->owner_tid & RL_SLOT_TAG)) {
			rl_slot_unmaterialise(x->t, lock->owner_tid);
			lock->owner_tid = rl_thread_id();
		}
		/* Into the new span: L's part here, or the piece that becomes it
		 * (merged pieces are out of their tree already). */
		rl_move_request(x->t, x->g.owner ? x->g.owner : &x->g.part[0], PART(to, k));
		PART(to, k)->owner_tid = k == 0 ? RL_PART_FIRST : RL_PART_TAG;
	}
	if (!to) {
		/* Same segments: every part (or L) was rekeyed in place. */
		lock->start = start;
		lock->last = last;
		return NULL;
	}
	/* The request counts as held in its first part's segment. */
	if (old_t0 != gs[0].t) {
		if (old_t0->stats)
			STAT_ADD(old_t0->stats, held_now, -1);
		if (gs[0].t->stats) {
			STAT_ADD(gs[0].t->stats, held_now, 1);
			STAT_PEAK(gs[0].t->stats, held_now, held_peak);
		}
	}
	to->held = true;
	to->counted = SPAN_HELD;
	to->reader = reader;
	lock->start = start;
	lock->last = last;
	lock->rb_left = (struct range_lock *)(void *)to;
	lock->rb_right = NULL;
	lock->rb_parent_flags = (reader ? RL_READER : 0) | RL_LINKED;
	return sp;
}

int rl_seg_grow(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		uint64_t start, uint64_t last, struct waiter *w, bool *reader_out)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n = rl_seg_parts(s, start, last), had, k, j;
	struct span *sp = NULL, *to = NULL, *old = NULL;
	struct range_lock_tree *t_one = NULL;
	struct grow_wait gw = { NULL, n, false, 0, 0, -ECANCELED, NULL };
	struct range_lock_stats *st;
	struct seg_growth *gs;
	struct wake_list wl;
	uint32_t total;
	bool reader;
	int r;

	if (start > lock->start || last < lock->last)
		return -EINVAL; /* (only its owner changes its range) */
	had = rl_seg_parts(s, lock->start, lock->last);
	if (had == 1)
		t_one = rl_seg_tree(s, rl_seg_part(s, lock->start, lock->last, 0).seg);
	gs = calloc(n, sizeof(*gs));
	if (gs && n > had) {
		to = span_new_range(tree, lock, false, n, start, last);
		if (!to) {
			free(gs);
			gs = NULL;
		}
	}
	if (!gs) {
		if (w && w->kind == WAIT_PLAIN)
			rl_die(call, lock, "out of memory for the parts of a range "
			       "that spans segments");
		return -ENOMEM;
	}
	gw.gs = gs;
	gw.to = to;
	for (k = 0; k < n; k++)
		gs[k].t = rl_seg_tree(s, rl_seg_part(s, start, last, k).seg);
retry:
	wl.n = 0;
	grow_lock_all(gs, n, true);
	/* Held, in this tree, and in which mode. */
	if (t_one) {
		if (lock->owner_tid & RL_SLOT_TAG)
			rl_revoke_fast_readers(t_one); /* a read held in a slot */
		check_held(call, t_one, lock, is_linked(lock) && is_reader(lock));
		reader = is_reader(lock);
	} else {
		sp = (struct span *)(void *)lock->rb_left;
		if (!is_linked(lock) || !sp || sp->top != tree)
			rl_die(call, lock, "range is not locked in this tree");
		if (!span_holds(sp)) /* (an asynchronous request still queued) */
			rl_die(call, lock, "range is not held yet");
		reader = sp->reader;
	}
	*reader_out = reader;
	gw.reader = reader;
	if (start == lock->start && last == lock->last) {
		grow_lock_all(gs, n, false);
		free(gs);
		free(to);
		return 0;
	}
	for (k = 0; k < n; k++) {
		struct seg_growth *x = &gs[k];
		struct seg_part np = rl_seg_part(s, start, last, k);
		struct range_lock *mine = NULL;

		if (!reader)
			rl_revoke_fast_readers(x->t); /* a growth of a writer is a writer */
		if (__builtin_expect(x->t->nr_requests + 2 >= RL_MAX_TREE_REQUESTS, 0))
			rl_die(call, lock, "too many requests in a segment of this tree "
			       "(the limit is 2^30 - 1024 at once)");
		if (t_one)
			mine = x->t == t_one ? lock : NULL;
		else
			for (unsigned i = 0; i < sp->n && !mine; i++)
				if (part_tree(s, PART(sp, i)) == x->t)
					mine = PART(sp, i);
		x->g.owner = mine;
		x->g.start = np.start;
		x->g.last = np.last;
		x->g.n = 0;
		if (!mine) {
			x->g.part[x->g.n].start = np.start;
			x->g.part[x->g.n++].last = np.last;
		} else {
			if (np.start < mine->start) {
				x->g.part[x->g.n].start = np.start;
				x->g.part[x->g.n++].last = mine->start - 1;
			}
			if (np.last > mine->last) {
				x->g.part[x->g.n].start = mine->last + 1;
				x->g.part[x->g.n++].last = np.last;
			}
		}
		for (j = 0; j < x->g.n; j++) {
			struct range_lock *p = &x->g.part[j];

			p->owner_tid = RL_GROWTH_TAG;
			p->seqnum = lock->seqnum;
			p->rb_parent_flags = reader ? RL_READER : 0;
			/* Not held while it is scanned (precedes() reads it). */
			atomic_store_explicit(wait_word(p), ONE_BLOCKER, memory_order_relaxed);
		}
	}
	st = gs[0].t->stats;
	r = grow_check(gs, n, reader, !w);
	if (r == GROW_RETRY) {
		/* A completion still queued on another thread: it runs once
		 * that thread's earlier completions have returned. */
		grow_lock_all(gs, n, false);
		/* (from a completion: that one may be queued behind ours) */
		rl_async_check_may_wait(call, lock);
		r = grow_pause(&gw, w);
		if (!r)
			goto retry;
		if (r != -EINVAL) {
			tree_lock(gs[0].t);
			if (gs[0].t->stats)
				stat_give_up(gs[0].t->stats, r);
			tree_unlock(gs[0].t);
		}
		free(gs);
		free(to);
		return r; /* nothing entered: @lock holds what it held */
	}
	if (r == GROW_BUSY || (w && w->kind == WAIT_TIMED &&
			       !timespec_valid(w->clockid, w->abstime) &&
			       grow_count(gs, n, reader, false))) {
		/* (before anything is pinned or changed) */
		if (!w && st)
			STAT_ADD(st, trylock_failed, 1);
		grow_lock_all(gs, n, false);
		free(gs);
		free(to);
		return w ? -EINVAL : -EBUSY;
	}
	total = grow_count(gs, n, reader, true);
	if (total && !w) {
		if (st)
			STAT_ADD(st, trylock_failed, 1);
		grow_lock_all(gs, n, false);
		free(gs);
		free(to);
		return -EBUSY;
	}
	if (total && w->kind != WAIT_TIMED)
		grow_foreach_piece(gs, n, k, j)
			if (gs[k].blockers[j])
				rl_check_self_deadlock(gs[k].t, &gs[k].g.part[j], reader, call,
						       lock);
	grow_block(gs, n, reader);
	grow_foreach_piece(gs, n, k, j) {
		struct range_lock_tree *t = gs[k].t;
		struct range_lock *p = &gs[k].g.part[j];

		rl_insert_request(t, p, reader, gs[k].blockers[j], lock->seqnum);
		if (gs[k].blockers[j]) {
			if (!tree_is_fifo(t))
				atomic_fetch_or_explicit(wait_word(p), HANDOFF,
							 memory_order_relaxed);
			if (t->stats) {
				STAT_ADD(t->stats, waiting_now, 1);
				STAT_PEAK(t->stats, waiting_now, waiting_peak);
			}
		}
	}
	for (k = 0; k < n; k++) /* every counter past s: later arrivals are later */
		if (!seq_before(lock->seqnum, gs[k].t->seqnum))
			gs[k].t->seqnum = lock->seqnum + 1;
	if (total) {
		if (st)
			STAT_ADD(st, contended, 1);
		grow_lock_all(gs, n, false);
		r = grow_wait(&gw, w);
		if (r) {
			free(gs);
			free(to);
			return r; /* @lock holds what it held before */
		}
		grow_lock_all(gs, n, true);
		st = gs[0].t->stats;
	}
	old = grow_merge(tree, lock, sp, to, gs, n, start, last, &wl);
	if (st) {
		if (reader)
			STAT_ADD(st, read_acquired, 1);
		else
			STAT_ADD(st, write_acquired, 1);
	}
	rl_check_resized(tree, lock);
	grow_lock_all(gs, n, false);
	wake_list_flush(&wl);
	free(gs);
	free(old);
	return 0;
}

/* ---- the calls' dispatch ---------------------------------------------- */

int rl_seg_lock(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		bool reader, struct waiter *w, int subclass, void *site)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n;

	check_args(call, tree, lock);
	if (is_linked(lock)) /* locked twice, or a failed init (rl_die names it) */
		rl_die(call, lock, ALREADY_IN_TREE);
	n = rl_seg_parts(s, lock->start, lock->last);
	if (n == 1) {
		struct range_lock_tree *t = rl_seg_tree(s, rl_seg_part(s, lock->start,
								       lock->last, 0).seg);

		return w ? rl_lock_in(call, t, lock, reader, w, subclass, site)
			 : rl_trylock_in(call, t, lock, reader, site);
	}
	return span_lock(call, tree, lock, reader, w, n, subclass, site);
}

void rl_seg_unlock(const char *call, struct range_lock_tree *tree, struct range_lock *lock,
		   bool reader)
{
	struct rl_segments *s = segments_of(tree);
	unsigned n = rl_seg_parts(s, lock->start, lock->last);
	struct span *sp;

	if (n == 1) {
		rl_unlock_in(call, rl_seg_tree(s, rl_seg_part(s, lock->start, lock->last, 0).seg),
			     lock, reader);
		return;
	}
	sp = (struct span *)(void *)lock->rb_left;
	if (!is_linked(lock) || !sp)
		rl_die(call, lock, "range is not locked");
	if (sp->top != tree)
		rl_die(call, lock, "range is not locked in this tree");
	if (sp->reader != reader)
		rl_die(call, lock, reader ? "range is held for writing, not reading"
					  : "range is held for reading, not writing");
	rl_check_released(tree, lock);
	for (unsigned i = 0; i < sp->n; i++) /* the first clears @lock's links */
		span_leave(part_tree(s, PART(sp, i)), sp, PART(sp, i), 0);
	free(sp);
}

void rl_seg_file_unlock(const char *call, struct range_lock_tree *tree,
			struct range_lock *lock, bool reader)
{
	/* Before the local unlock, as on any bound tree (file_release()). */
	rl_file_unlock(rl_bound_file(file_of(tree)), lock->start, lock->last, reader);
	rl_seg_unlock(call, tree, lock, reader);
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
				span_count(sp, t, SPAN_OUT, 0);
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
		free(sp);
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
		range_downgrade_write(rl_seg_tree(s, rl_seg_part(s, lock->start,
								  lock->last, 0).seg), lock);
		return;
	}
	sp = (struct span *)(void *)lock->rb_left;
	if (!is_linked(lock) || !sp || sp->top != tree)
		rl_die("range_downgrade_write", lock, "range is not locked in this tree");
	if (sp->reader)
		rl_die("range_downgrade_write", lock, "range is held for reading, not writing");
	if (f)
		rl_file_downgrade(f, lock->start, lock->last);
	/* Each part in its segment: a reader of one segment's units may go
	 * ahead once that part is a reader. */
	for (unsigned i = 0; i < sp->n; i++)
		range_downgrade_write(part_tree(s, PART(sp, i)), PART(sp, i));
	sp->reader = true;
	lock->rb_parent_flags |= RL_READER;
}

void rl_seg_dump(struct range_lock_tree *tree, void *out)
{
	struct rl_segments *s = segments_of(tree);
	FILE *f = out;

	fprintf(f, "range_lock_tree %p: %u segments, stripes of 2^%u units\n",
		(void *)tree, 1u << s->log2n, s->shift);
	for (unsigned g = 0; g < 1u << s->log2n; g++) {
		struct range_lock_tree *t = rl_seg_tree(s, g);

		if (!__atomic_load_n(&t->lock_word, __ATOMIC_RELAXED))
			continue; /* empty and free: nothing to show */
		fprintf(f, " segment %u:\n", g);
		range_lock_tree_dump(t, f);
	}
}
