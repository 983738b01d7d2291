/* SPDX-License-Identifier: MIT */
/*
 * The checking mode; see checks.h.  Debug code: simple data structures under
 * one global mutex, taken after tree_lock when both are held (never the
 * other way round).
 */
#include "checks.h"

#if RANGELOCK_CHECKS

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "interval_tree.h"
#include "pin.h"
#include "protocol.h"
#include "segments.h"
#include "thread_id.h"

/* ---- the whole-tree invariant ----------------------------------------- */

static uint32_t word_of(const struct range_lock *n)
{
	return atomic_load_explicit(wait_word((struct range_lock *)n),
				    memory_order_relaxed);
}

/* The blocking count (protocol.h: word = count << 2 | HANDOFF | SLEEPING). */
static uint32_t blocking_of(const struct range_lock *n)
{
	return blockers_of(word_of(n));
}

static bool is_held(const struct range_lock *n)
{
	return word_of(n) == 0;
}

static void tree_broken(const struct range_lock_tree *tree, const char *what,
			const struct range_lock *a, const struct range_lock *b)
{
	fprintf(stderr, "librangelock: tree %p invariant broken: %s", (void *)tree, what);
	if (a)
		fprintf(stderr, " [%llu, %llu] seq %llu", (unsigned long long)a->start,
			(unsigned long long)a->last, (unsigned long long)a->seqnum);
	if (b)
		fprintf(stderr, " vs [%llu, %llu] seq %llu", (unsigned long long)b->start,
			(unsigned long long)b->last, (unsigned long long)b->seqnum);
	fputc('\n', stderr);
	abort();
}

void rl_check_tree(const struct range_lock_tree *tree)
{
	const struct range_lock *n, *first = NULL;
	struct range_lock *m;
	const char *msg;
	size_t count;

	msg = rl_itree_check(tree->root, &count);
	if (msg)
		tree_broken(tree, msg, NULL, NULL);
	if (count != tree->nr_requests)
		tree_broken(tree, "nr_requests differs from the node count", NULL, NULL);
	if (tree->root) {
		for (first = tree->root; first->rb_left; first = first->rb_left)
			;
	}
	if (first != tree->leftmost)
		tree_broken(tree, "leftmost is not the first node", NULL, NULL);

	count = 0;
	for (n = first; n; n = rl_itree_next_inorder(n))
		count += blocking_of(n) != 0;
	if (count != tree->nr_waiting)
		tree_broken(tree, "nr_waiting differs from the requests with blockers", NULL, NULL);
	count = 0;
	for (n = first; n; n = rl_itree_next_inorder(n))
		count += !is_reader(n);
	if (count != tree->nr_writers)
		tree_broken(tree, "nr_writers differs from the writers in the tree", NULL, NULL);

	for (n = first; n; n = rl_itree_next_inorder(n)) {
		uint32_t expect = 0;

		if (!seq_before(n->seqnum, tree->seqnum))
			tree_broken(tree, "seqnum from the future", n, NULL);
		/* (Equal starts are not in seqnum order: shrink and grow
		 * re-insert a request with its old seqnum.) */
		if ((tree->flags & RANGE_LOCK_TREE_FLAG_FIFO) && !is_held(n) &&
		    !blocking_of(n))
			tree_broken(tree, "an eligible request in a FIFO tree", n, NULL);
		itree_foreach(m, tree->root, n->start, n->last) {
			bool conflicting = !(is_reader(n) && is_reader(m));

			if (m == n || !conflicting)
				continue;
			/* precedes(): the seqnum order, and growths (protocol.h) */
			if (precedes(m, n))
				expect++;
			/* Equal seqnums: the requests of one set, which may
			 * overlap in any modes (range_lock_many()). */
			if (is_held(n) && is_held(m) &&
			    (m->seqnum != n->seqnum || is_growth(m) || is_growth(n)))
				tree_broken(tree, "conflicting requests both held", m, n);
			if (precedes(m, n) && precedes(n, m))
				tree_broken(tree, "two requests count each other", m, n);
		}
		/* Well-formed words (protocol.h): 0 (held), ELIGIBLE (only
		 * in the default policy), or a count with HANDOFF only in the
		 * default policy. */
		if (word_of(n) != 0 && !blocking_of(n) &&
		    (word_of(n) != ELIGIBLE || (tree->flags & RANGE_LOCK_TREE_FLAG_FIFO)))
			tree_broken(tree, "a wait word with no blocker that is neither held nor eligible", n, NULL);
		if ((word_of(n) & HANDOFF) && (tree->flags & RANGE_LOCK_TREE_FLAG_FIFO))
			tree_broken(tree, "a HANDOFF mark in a FIFO tree", n, NULL);
		if (blocking_of(n) != expect)
			tree_broken(tree, "blocking count differs from the earlier "
					  "conflicting requests", n, NULL);
	}
}

/* ---- the hold registry ------------------------------------------------ */

struct hold {
	const struct range_lock_tree *tree;
	const struct range_lock *lock;
	uint64_t start, last;
	uint32_t tid;
	int subclass;
	void *site;
};

struct order_edge {
	const struct range_lock_tree *from, *to;
	int from_sub, to_sub;
	void *from_site, *to_site;
	bool reported;
};

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct hold *holds;
static size_t nr_holds, cap_holds;
static struct order_edge *edges;
static size_t nr_edges, cap_edges;
/* The thread-exit key: made once (annotate.h, edge 12, for Helgrind and
 * DRD; the union gives the once word a pointer's width), and only when its
 * destructor, this copy's code, stays mapped until every thread has exited
 * (pin.c: a static copy in a plugin pins the plugin); else no key, and no
 * report of a thread that exits holding a range. */
static pthread_key_t exit_key;
static bool exit_key_made;
static union {
	pthread_once_t once;
	void *key_bytes;
} exit_key_once = { PTHREAD_ONCE_INIT };

/* The registry functions print (cancellation points) with registry_mutex
 * held: they run with cancellation disabled. */
static int registry_enter(void)
{
	int oldstate;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	pthread_mutex_lock(&registry_mutex);
	return oldstate;
}

static void registry_leave(int oldstate)
{
	pthread_mutex_unlock(&registry_mutex);
	pthread_setcancelstate(oldstate, NULL);
}

static void registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

static void registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

__attribute__((constructor)) static void registry_atfork(void)
{
	pthread_atfork(registry_lock, registry_unlock, registry_unlock);
}


static void print_site(FILE *f, void *site)
{
	Dl_info info;

	if (site && dladdr(site, &info) && info.dli_sname)
		fprintf(f, "%s+0x%lx (%p)", info.dli_sname,
			(unsigned long)((char *)site - (char *)info.dli_saddr), site);
	else
		fprintf(f, "%p", site);
}

static void report_exit_with_holds(void *arg)
{
	uint32_t tid = (uint32_t)(uintptr_t)arg;

	int cancel_state = registry_enter();
	for (size_t i = 0; i < nr_holds; i++) {
		struct hold *h = &holds[i];
		if (h->tid != tid)
			continue;
		fprintf(stderr, "librangelock: thread %u exits holding [%llu, %llu] "
				"of tree %p, locked at ", tid,
			(unsigned long long)h->start, (unsigned long long)h->last,
			(const void *)h->tree);
		print_site(stderr, h->site);
		fputc('\n', stderr);
	}
	registry_leave(cancel_state);
}

static void make_exit_key(void)
{
	exit_key_made = rl_pin_self() &&
			pthread_key_create(&exit_key, report_exit_with_holds) == 0;
	rl_hb_release(&exit_key_once); /* edge 12: pthread_once's own release follows */
}

static bool conflicting(bool reader_a, bool reader_b)
{
	return !(reader_a && reader_b);
}

/*
 * A request @m in the tree that waits for the hold @h (it intersects and
 * conflicts with it, and comes after it) and that the new request @lock
 * conflicts with and intersects: @lock waits for @m (or, in the default
 * policy, overtakes it only until @m is marked), which waits for @h, which
 * the caller holds.  @h need not intersect @lock: a writer waiting on
 * [0, 19] links a hold of [0, 9] to a request for [10, 19].  (Longer
 * chains, through further waiters, are not followed.)
 */
static const struct range_lock *waiter_between(const struct range_lock_tree *tree,
					       const struct range_lock *lock,
					       bool reader, const struct hold *h)
{
	struct range_lock *m;

	itree_foreach(m, tree->root, lock->start, lock->last) {
		if (m != h->lock && conflicting(reader, is_reader(m)) &&
		    conflicting(is_reader(h->lock), is_reader(m)) &&
		    seq_before(h->lock->seqnum, m->seqnum) &&
		    m->start <= h->last && m->last >= h->start)
			return m;
	}
	return NULL;
}

void rl_check_self_deadlock(const struct range_lock_tree *tree,
			    const struct range_lock *lock, bool reader,
			    const char *call, const struct range_lock *shown)
{
	uint32_t me = rl_thread_id();
	const struct range_lock *w = NULL;

	int cancel_state = registry_enter();
	for (size_t i = 0; i < nr_holds; i++) {
		struct hold *h = &holds[i];
		bool direct;

		if (h->tid != me || h->tree != rl_seg_user_tree(tree))
			continue;
		/* A growth never waits for the request it grows (@shown in a
		 * segmented tree, whose pieces span its hull's other units). */
		if (is_growth(lock) && h->lock == shown)
			continue;
		direct = h->last >= lock->start && h->start <= lock->last &&
			 conflicting(reader, is_reader(h->lock));
		/* A growth goes ahead of the waiters behind its owner: only
		 * a direct conflict makes it wait for its own thread. */
		w = direct || is_growth(lock) ? NULL : waiter_between(tree, lock, reader, h);
		if (!direct && !w)
			continue;
		fprintf(stderr, "librangelock: self-deadlock: thread %u calls %s on "
				"[%llu, %llu] of tree %p while it holds [%llu, %llu] "
				"for %s there (locked at ", me, call,
			(unsigned long long)shown->start, (unsigned long long)shown->last,
			(const void *)h->tree, (unsigned long long)h->start,
			(unsigned long long)h->last,
			is_reader(h->lock) ? "reading" : "writing");
		print_site(stderr, h->site);
		if (w)
			fprintf(stderr, "), and %s [%llu, %llu] waits between them\n",
				is_reader(w) ? "reader" : "writer",
				(unsigned long long)w->start, (unsigned long long)w->last);
		else
			fputs(")\n", stderr);
		abort();
	}
	registry_leave(cancel_state);
}

static struct order_edge *find_edge(const struct range_lock_tree *from, int fs,
				    const struct range_lock_tree *to, int ts)
{
	for (size_t i = 0; i < nr_edges; i++)
		if (edges[i].from == from && edges[i].to == to &&
		    edges[i].from_sub == fs && edges[i].to_sub == ts)
			return &edges[i];
	return NULL;
}

void rl_check_acquired(struct range_lock_tree *seg_or_tree, struct range_lock *lock,
		       int subclass, void *site)
{
	/* A segment of a segmented tree is its user's tree here. */
	const struct range_lock_tree *tree = rl_seg_user_tree(seg_or_tree);
	uint32_t me = rl_thread_id();

	pthread_once(&exit_key_once.once, make_exit_key);
	rl_hb_acquire(&exit_key_once); /* edge 12 */
	if (exit_key_made)
		pthread_setspecific(exit_key, (void *)(uintptr_t)me);

	int cancel_state = registry_enter();
	/* Order: every other tree this thread holds was taken before @tree. */
	for (size_t i = 0; i < nr_holds; i++) {
		struct hold *h = &holds[i];
		struct order_edge *fwd, *back;

		if (h->tid != me || h->tree == tree)
			continue;
		fwd = find_edge(h->tree, h->subclass, tree, subclass);
		if (!fwd) {
			if (nr_edges == cap_edges) {
				cap_edges = cap_edges ? 2 * cap_edges : 64;
				edges = realloc(edges, cap_edges * sizeof(*edges));
				if (!edges)
					abort();
			}
			fwd = &edges[nr_edges++];
			*fwd = (struct order_edge){ h->tree, tree, h->subclass, subclass,
						    h->site, site, false };
		}
		back = find_edge(tree, subclass, h->tree, h->subclass);
		if (back && !back->reported) {
			back->reported = fwd->reported = true;
			fprintf(stderr, "librangelock: lock order inversion (ABBA): "
					"tree %p then tree %p at ",
				(const void *)back->from, (const void *)back->to);
			print_site(stderr, back->from_site);
			fputs(" -> ", stderr);
			print_site(stderr, back->to_site);
			fprintf(stderr, "; but thread %u took tree %p then tree %p at ",
				me, (const void *)h->tree, (const void *)tree);
			print_site(stderr, h->site);
			fputs(" -> ", stderr);
			print_site(stderr, site);
			fputc('\n', stderr);
		}
	}
	if (nr_holds == cap_holds) {
		cap_holds = cap_holds ? 2 * cap_holds : 64;
		holds = realloc(holds, cap_holds * sizeof(*holds));
		if (!holds)
			abort();
	}
	holds[nr_holds++] = (struct hold){ tree, lock, lock->start, lock->last,
					   me, subclass, site };
	registry_leave(cancel_state);
}

void rl_check_released(const struct range_lock_tree *tree,
		       const struct range_lock *lock)
{
	tree = rl_seg_user_tree(tree);
	int cancel_state = registry_enter();
	for (size_t i = 0; i < nr_holds; i++) {
		if (holds[i].tree == tree && holds[i].lock == lock) {
			holds[i] = holds[--nr_holds];
			break;
		}
	}
	registry_leave(cancel_state);
}

void rl_check_resized(const struct range_lock_tree *tree,
		      const struct range_lock *lock)
{
	tree = rl_seg_user_tree(tree);
	int cancel_state = registry_enter();
	for (size_t i = 0; i < nr_holds; i++) {
		if (holds[i].tree == tree && holds[i].lock == lock) {
			holds[i].start = lock->start;
			holds[i].last = lock->last;
			break;
		}
	}
	registry_leave(cancel_state);
}

#endif /* RANGELOCK_CHECKS */
