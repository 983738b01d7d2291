/* SPDX-License-Identifier: MIT */
/*
 * Segmented trees (segments.c has the design): the key space of a tree
 * split into S = 2^n segments by stripes of 2^k units, each segment a
 * whole tree of its own.  Private header.
 */
#ifndef RANGELOCK_SEGMENTS_H
#define RANGELOCK_SEGMENTS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include <rangelock/rangelock.h>

#include "tree_lock.h"
#include "waiting.h"

#ifndef RL_HIDDEN
#define RL_HIDDEN __attribute__((visibility("hidden")))
#endif

#define RL_SEG_MAX 256u

/*
 * A tree with segments keeps its segment array, tagged RL_SEGMENTS_TAG,
 * in its second-level slot (tree->file, a bound tree's file state
 * otherwise): the one place that says a tree has segments.  Every public
 * call already tests that slot for NULL before its fast path, so the test
 * costs the other trees nothing (calls.c).  A segment's tree has its
 * index + 1 in bits 4..12 of its flags (the checking mode's
 * rl_seg_user_tree()).  A segmented tree's own lock word is TL_SEGMENTED
 * (tree_lock.h): a safety net.
 */
#define RL_SEGMENTS_TAG ((uintptr_t)1)
/*
 * Instead of RL_SEGMENTS_TAG: the tree with segments is also bound to a
 * file (struct rl_segments' file).  The second level is then the user's
 * tree's, taken for each request's whole range after its local grant, as
 * on a tree without segments; the segments' trees are not bound (a
 * spanning request's parts never touch the file), they only never read
 * fast (RL_TREE_NO_BIAS), as a bound tree does not.  Two tags, so that
 * the hot paths of a tree with segments test one bit, as before: the
 * plain calls' one-stripe fast paths (level2_*_lock(), calls.c), the
 * unlocks and file_release() take RL_SEGMENTS_TAG only; a bound tree
 * with segments takes the calls' general path, then the file.
 */
#define RL_SEGMENTS_BOUND ((uintptr_t)2)
#define RL_SEGMENTS_TAGS (RL_SEGMENTS_TAG | RL_SEGMENTS_BOUND)

/* A segment's statistics counters: own lines, as the segment's tree.  The
 * segment statistics (range_lock_tree_get_segment_stats()): the spanning
 * requests among the acquisitions of st, counted with them in the block
 * of their first part's segment, and the segments they met (the rest of
 * the 128-byte block: no line more). */
struct rl_seg_stats {
	struct range_lock_stats st;
	uint64_t spanning;
	uint64_t spanning_parts;
} __attribute__((aligned(128)));

/* The segment array, allocated by range_lock_tree_set_segments(). */
struct rl_segments {
	struct range_lock_tree *top;   /* the tree the user sees */
	unsigned log2n;                /* S = 1 << log2n */
	unsigned shift;                /* stripes of 1 << shift units */
	unsigned mask;                 /* S - 1 (the quick dispatch's) */
	/* The file the tree is bound to (RL_SEGMENTS_BOUND), else NULL:
	 * written, as the tag, only while nobody uses the tree (set_file,
	 * set_segments, destroy); read with relaxed loads. */
	struct range_lock_file *file;
	/* Statistics (NULL until enabled; set and read under every
	 * segment's lock): the user's storage, which receives the sums at
	 * each get_stats, and the segments' counters (segment g's tree's
	 * stats is &stats[g].st). */
	struct range_lock_stats *user_stats;
	struct rl_seg_stats *stats;
	/* The gate (seg_gate.c): closing segments not yet empty, plus the
	 * drainer's guard; the drainer sleeps on it.  Own line: written
	 * only while a drain runs. */
	_Atomic uint32_t pending __attribute__((aligned(128)));
	/* Trylocks a drain made busy (no segment's lock counts them): added
	 * to trylock_failed by the statistics. */
	_Atomic uint64_t drain_busy;
	struct rl_segment {
		struct range_lock_tree tree;
	} __attribute__((aligned(128))) seg[]; /* own lines; prefetched in pairs */
};

static inline bool is_segments(const struct range_lock_file *f)
{
	return ((uintptr_t)f & RL_SEGMENTS_TAGS) != 0;
}

static inline bool tree_is_segmented(const struct range_lock_tree *tree)
{
	return is_segments(__atomic_load_n(&tree->file, __ATOMIC_RELAXED));
}

/* Segments, not bound to a file: the hot paths' test. */
static inline bool is_unbound_segments(const struct range_lock_file *f)
{
	return ((uintptr_t)f & RL_SEGMENTS_TAG) != 0;
}

static inline struct rl_segments *segments_in(const struct range_lock_file *f)
{
	return (struct rl_segments *)((uintptr_t)f & ~RL_SEGMENTS_TAGS);
}

static inline struct rl_segments *segments_of(const struct range_lock_tree *tree)
{
	return segments_in(__atomic_load_n(&tree->file, __ATOMIC_RELAXED));
}

/*
 * The file whose OFD locks a tree's requests take (@f: the tree's
 * second-level slot): a bound tree's, a bound segmented tree's, or NULL.
 */
static inline struct range_lock_file *rl_bound_file(struct range_lock_file *f)
{
	if (!is_segments(f))
		return f;
	if (is_unbound_segments(f))
		return NULL;
	return __atomic_load_n(&segments_in(f)->file, __ATOMIC_RELAXED);
}

/*
 * Part @i (0 <= i < rl_seg_parts()) of [start, last]: the segment it falls
 * in, ascending by segment index, and its hull there -- the units from the
 * range's first in that segment to its last.
 */
struct seg_part {
	unsigned seg;
	uint64_t start, last;
};

static inline unsigned rl_seg_parts(const struct rl_segments *s, uint64_t start, uint64_t last)
{
	uint64_t span = (last >> s->shift) - (start >> s->shift); /* stripes - 1 */

	return span >= (1u << s->log2n) - 1 ? 1u << s->log2n : (unsigned)span + 1;
}

static inline struct seg_part rl_seg_part(const struct rl_segments *s, uint64_t start,
					  uint64_t last, unsigned i)
{
	uint64_t mask = ((uint64_t)1 << s->log2n) - 1;
	uint64_t a = start >> s->shift, b = last >> s->shift;
	unsigned n = rl_seg_parts(s, start, last);
	struct seg_part p;
	uint64_t f, l;

	if (n == mask + 1) {
		p.seg = i;
	} else {
		/* A cyclic run of n segments from a's; listed ascending. */
		unsigned first = (unsigned)(a & mask), end = (unsigned)(b & mask);

		if (first <= end)
			p.seg = first + i;
		else /* wraps: 0..end, then first..S-1 */
			p.seg = i <= end ? i : first + (i - end - 1);
	}
	f = a + ((p.seg - a) & mask);  /* first stripe of the range in it */
	l = b - ((b - p.seg) & mask);  /* its last stripe there */
	p.start = f == a ? start : f << s->shift;
	p.last = l == b ? last : ((l + 1) << s->shift) - 1;
	return p;
}

static inline struct range_lock_tree *rl_seg_tree(struct rl_segments *s, unsigned g)
{
	return &s->seg[g].tree;
}

/*
 * The calls' quick dispatch (calls.c, calls.h): for a request within one
 * stripe, the tree of its segment, where the call goes on as on any tree;
 * NULL for anything else (a range over several stripes, or no request),
 * which rl_seg_lock() & co. sort out.  @f: the tree's tagged file slot.
 * Equivalent to their one-part case, without their frame: the plain lock
 * and unlock calls try the segment's fast paths straight from here
 * (calls.c, seg_fast_acquire()).
 */
static inline struct range_lock_tree *rl_seg_one(const struct range_lock_file *f,
						 const struct range_lock *lock)
{
	struct rl_segments *s = segments_in(f);

	if (!lock || (lock->start ^ lock->last) >> s->shift)
		return NULL;
	return rl_seg_tree(s, (unsigned)(lock->start >> s->shift) & s->mask);
}

/*
 * The gate (seg_gate.c): does @top, a tree with segments, run in its
 * segments now (its word TL_SEGMENTED, or a drain)?  Else it runs as a
 * plain tree, and every request present in it is in the user's tree
 * itself.  A present request pins the answer: read it for any call that
 * takes one (unlock, downgrade, shrink, grow, cancel).
 */
static inline bool rl_gate_segments(const struct range_lock_tree *top)
{
	uintptr_t w = __atomic_load_n(&top->lock_word, __ATOMIC_ACQUIRE);

	return w == TL_SEGMENTED || (w | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS);
}

/* A request meeting this many segments is wide: in SEG mode a blocking
 * lock of it drains the segments and takes the plain tree (seg_gate.c),
 * rather than one part per segment. */
#ifndef RL_GATE_WIDE_PARTS
#define RL_GATE_WIDE_PARTS 16u
#endif

/* The lock calls' first look (calls.c), for a range over several stripes
 * of an unbound tree with segments (@f its slot): is it wide?  Then it
 * tries the tree itself first -- without loading the word: the fast CAS
 * is the look, and a tree running in its segments refuses it there
 * (tree_lock_entering()), and it goes to the gate, rl_seg_lock(). */
static inline bool rl_gate_wide_range(const struct range_lock_file *f,
				      const struct range_lock *lock)
{
	const struct rl_segments *s = segments_in(f);

	return ((lock->last >> s->shift) - (lock->start >> s->shift)) >=
	       RL_GATE_WIDE_PARTS - 1;
}

/* The calls' dispatch (calls.c): a lock or trylock (@w NULL) of @lock in
 * @tree with segments, through the gate (seg_gate.c). */
RL_HIDDEN int rl_seg_lock(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, bool reader, struct waiter *w,
			  int subclass, void *site);
/* The same in the segments (seg_span.c), @n the parts of the range: may
 * return RL_GATE_REFUSED (a segment closed or closing). */
RL_HIDDEN int rl_seg_lock_segments(const char *call, struct range_lock_tree *tree,
				   struct range_lock *lock, bool reader, struct waiter *w,
				   unsigned n, int subclass, void *site);
/* A trylock that a drain made busy, for the statistics. */
static inline void rl_gate_count_busy(struct rl_segments *s)
{
	atomic_fetch_add_explicit(&s->drain_busy, 1, memory_order_relaxed);
}
/* Back to SEG mode from an empty, free plain tree (false: lost the race). */
RL_HIDDEN bool rl_gate_switch_back(struct range_lock_tree *top);
/* A segment's lock whatever its gate state (a grow, which the gate must
 * not refuse): a closed segment becomes closing. */
RL_HIDDEN void rl_gate_lock_segment(struct range_lock_tree *t);
RL_HIDDEN void rl_seg_unlock(const char *call, struct range_lock_tree *tree,
			     struct range_lock *lock, bool reader);
/* The unlock calls on a segmented tree bound to a file: the OFD level,
 * then rl_seg_unlock(). */
RL_HIDDEN void rl_seg_file_unlock(const char *call, struct range_lock_tree *tree,
				  struct range_lock *lock, bool reader);
RL_HIDDEN int rl_seg_shrink(struct range_lock_tree *tree, struct range_lock *lock,
			    uint64_t start, uint64_t last);
/* The same without the OFD level (a bound tree's grow giving back what it
 * could not take there). */
RL_HIDDEN int rl_seg_shrink_local(struct range_lock_tree *tree, struct range_lock *lock,
				  uint64_t start, uint64_t last);
/* range_lock_grow() and its forms (@w NULL: _try) on a segmented tree, the
 * local level: 0, -EBUSY (a busy try), -EINVAL, -EINTR, -ETIMEDOUT,
 * -ENOMEM; @reader: the request's mode. */
RL_HIDDEN int rl_seg_grow(const char *call, struct range_lock_tree *tree,
			  struct range_lock *lock, uint64_t start, uint64_t last,
			  struct waiter *w, bool *reader);
RL_HIDDEN void rl_seg_downgrade(struct range_lock_tree *tree, struct range_lock *lock);
/* Back to a tree without segments (a binding to a file stays): 0, or
 * -EBUSY if a segment is in use. */
RL_HIDDEN int rl_seg_destroy(struct range_lock_tree *tree);
/* range_lock_tree_set_file() on a segmented tree: @f opened by the caller
 * (freed here on -EBUSY). */
RL_HIDDEN int rl_seg_set_file(struct range_lock_tree *tree, struct range_lock_file *f);
RL_HIDDEN int rl_seg_set_flag(struct range_lock_tree *tree, uint32_t flag, bool on,
			      bool need_empty);
RL_HIDDEN void rl_seg_dump(struct range_lock_tree *tree, void *out);
/* stats.c: the dump of a tree whose lock the caller holds; @part prints
 * a part of a spanning request (NULL: as any request, "span part"). */
typedef void (*rl_dump_part_fn)(FILE *out, const struct range_lock *part, const char *mid,
				const char *end, void *arg);
RL_HIDDEN void rl_dump_locked(struct range_lock_tree *tree, FILE *out, rl_dump_part_fn part,
			      void *arg);
/* The gate's admin hold (seg_gate.c): the user's tree's word whatever the
 * mode, then every segment's lock, a closed one too, ascending; fast
 * readers revoked if @revoke.  @a records what to give back. */
struct rl_gate_admin {
	bool plain;                          /* the tree ran as a plain tree */
	uint64_t closed[RL_SEG_MAX / 64];    /* segments taken closed */
};
RL_HIDDEN void rl_gate_admin_lock(struct range_lock_tree *top, struct rl_gate_admin *a,
				  bool revoke);
RL_HIDDEN void rl_gate_admin_unlock(struct range_lock_tree *top, struct rl_gate_admin *a);
/* Every segment empty, and the user's tree (under the admin hold)? */
RL_HIDDEN bool rl_gate_all_empty(struct range_lock_tree *top);
/* Does a request of @n parts take the plain tree (a drain) rather than
 * its segments (seg_gate.c)?  Only on trees of RL_GATE_WIDE_PARTS
 * segments or more: on fewer, a request has at most 8 parts, and a span
 * costs less than two switches. */
static inline bool rl_gate_wide(const struct rl_segments *s, unsigned n)
{
	(void)s;
	return n >= RL_GATE_WIDE_PARTS;
}
/* Statistics of a segmented tree (stats.c dispatches here). */
RL_HIDDEN int rl_seg_enable_stats(struct range_lock_tree *tree, struct range_lock_stats *storage);
RL_HIDDEN int rl_seg_get_stats(struct range_lock_tree *tree, struct range_lock_stats *out);
RL_HIDDEN void rl_seg_reset_stats(struct range_lock_tree *tree);
RL_HIDDEN int rl_seg_get_segment_stats(struct range_lock_tree *tree,
				       struct range_lock_segment_stats *out);
/* The checking mode's name of a tree: a segment's is its user's tree. */
RL_HIDDEN const struct range_lock_tree *rl_seg_user_tree(const struct range_lock_tree *tree);
/* Sets on a segmented tree (sets.c dispatches here, once check_items()
 * has passed): the one segment all members lie in, if any (the set is
 * then a set of that segment's tree), else one spanning arrival of them
 * all (0, -EBUSY for a trylock, -EINTR, -ETIMEDOUT, -EINVAL, -ENOMEM). */
RL_HIDDEN struct range_lock_tree *rl_seg_set_tree(struct range_lock_tree *tree,
						  const struct range_lock_item *items,
						  unsigned n);
RL_HIDDEN int rl_seg_lock_many(const char *call, struct range_lock_tree *tree,
			       const struct range_lock_item *items, unsigned n,
			       struct waiter *w, void *site);
RL_HIDDEN void rl_seg_unlock_many(struct range_lock_tree *tree,
				  const struct range_lock_item *items, unsigned n);
/* Asynchronous requests on a segmented tree (async.c dispatches here). */
RL_HIDDEN int rl_seg_lock_async(const char *call, struct range_lock_tree *tree,
				struct range_lock_async *req, bool reader);
RL_HIDDEN int rl_seg_async_cancel(struct range_lock_tree *tree, struct range_lock_async *req);
/* async.c: a submission entering @tree, for the user's tree @top; the
 * withdrawal from @t, the tree @req is queued in. */
RL_HIDDEN int rl_lock_async_in(const char *call, struct range_lock_tree *tree,
			       struct range_lock_tree *top, struct range_lock_async *req,
			       bool reader);
RL_HIDDEN int rl_async_cancel_in(struct range_lock_tree *t, struct range_lock_async *req);

/* calls.c: the one-range calls, out of line, on a segment's tree. */
RL_HIDDEN int rl_lock_in(const char *call, struct range_lock_tree *tree,
			 struct range_lock *lock, bool reader, struct waiter *w,
			 int subclass, void *site);
RL_HIDDEN int rl_trylock_in(const char *call, struct range_lock_tree *tree,
			    struct range_lock *lock, bool reader, void *site);
RL_HIDDEN void rl_unlock_in(const char *call, struct range_lock_tree *tree,
			    struct range_lock *lock, bool reader);

#endif /* RANGELOCK_SEGMENTS_H */
