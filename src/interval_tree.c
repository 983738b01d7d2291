/* SPDX-License-Identifier: MIT */
/*
 * Augmented red-black interval tree; see interval_tree.h.
 *
 * The red-black rules (a NULL child counts as a black leaf):
 *   1. the root is black;            2. a red node has no red child;
 *   3. every path from a node down to a NULL child meets the same number of
 *      black nodes.
 * Hence the height is at most 2 log2(n + 1).  The augmentation: every node's
 * subtree_last = max(last, left->subtree_last, right->subtree_last).
 * Insertion and erasure follow Cormen et al. with NULL leaves; a rotation
 * recomputes the two nodes it moves, and erasure recomputes the path from the
 * lowest node whose children changed up to where the maximum no longer
 * depends on the erased node.
 */
#include "interval_tree.h"

static inline bool is_red(const struct range_lock *n)
{
	return n && !(n->rb_parent_flags & RB_BLACK);
}

static inline bool is_black(const struct range_lock *n)
{
	return !is_red(n);
}

static inline void set_black(struct range_lock *n)
{
	n->rb_parent_flags |= RB_BLACK;
}

static inline void set_red(struct range_lock *n)
{
	n->rb_parent_flags &= ~RB_BLACK;
}

static inline void copy_colour(struct range_lock *to, const struct range_lock *from)
{
	to->rb_parent_flags = (to->rb_parent_flags & ~RB_BLACK) |
			      (from->rb_parent_flags & RB_BLACK);
}

static inline void set_parent(struct range_lock *n, struct range_lock *p)
{
	n->rb_parent_flags = (uintptr_t)p | (n->rb_parent_flags & RL_FLAGS);
}

static inline uint64_t subtree_max(const struct range_lock *n)
{
	uint64_t m = n->last;

	if (n->rb_left && n->rb_left->subtree_last > m)
		m = n->rb_left->subtree_last;
	if (n->rb_right && n->rb_right->subtree_last > m)
		m = n->rb_right->subtree_last;
	return m;
}

/* Make @new take @old's place under @parent (or as the root). */
static inline void replace_child(struct range_lock **root, struct range_lock *parent,
				 struct range_lock *old, struct range_lock *new)
{
	if (!parent)
		*root = new;
	else if (parent->rb_left == old)
		parent->rb_left = new;
	else
		parent->rb_right = new;
}

/*
 *     x                y
 *    / \              / \
 *   a   y    ==>     x   c
 *      / \          / \
 *     b   c        a   b
 * y now heads exactly the nodes x headed, so it inherits x's subtree_last.
 */
static void rotate_left(struct range_lock **root, struct range_lock *x)
{
	struct range_lock *y = x->rb_right, *p = itree_parent(x);

	x->rb_right = y->rb_left;
	if (y->rb_left)
		set_parent(y->rb_left, x);
	set_parent(y, p);
	replace_child(root, p, x, y);
	y->rb_left = x;
	set_parent(x, y);
	y->subtree_last = x->subtree_last;
	x->subtree_last = subtree_max(x);
}

/* The mirror image of rotate_left(). */
static void rotate_right(struct range_lock **root, struct range_lock *x)
{
	struct range_lock *y = x->rb_left, *p = itree_parent(x);

	x->rb_left = y->rb_right;
	if (y->rb_right)
		set_parent(y->rb_right, x);
	set_parent(y, p);
	replace_child(root, p, x, y);
	y->rb_right = x;
	set_parent(x, y);
	y->subtree_last = x->subtree_last;
	x->subtree_last = subtree_max(x);
}

void rl_itree_insert(struct range_lock **root, struct range_lock *node)
{
	struct range_lock **link = root, *parent = NULL, *n, *p, *g, *u;
	uint64_t start = node->start, last = node->last;

	/* Descend; every node passed will have @node below it. */
	while (*link) {
		parent = *link;
		if (parent->subtree_last < last)
			parent->subtree_last = last;
		link = start < parent->start ? &parent->rb_left : &parent->rb_right;
	}
	node->rb_left = node->rb_right = NULL;
	node->subtree_last = last;
	node->rb_parent_flags = (uintptr_t)parent | RL_LINKED |
				(node->rb_parent_flags & RL_READER); /* red */
	*link = node;

	/* Loop invariant: only rule 2 may be broken, between n and its parent. */
	n = node;
	while ((p = itree_parent(n)) && is_red(p)) {
		g = itree_parent(p); /* exists: a red node is not the root */
		if (p == g->rb_left) {
			u = g->rb_right;
			if (is_red(u)) {
				set_black(p);
				set_black(u);
				set_red(g);
				n = g;
				continue;
			}
			if (n == p->rb_right) {
				rotate_left(root, p);
				n = p;
				p = itree_parent(n);
			}
			set_black(p);
			set_red(g);
			rotate_right(root, g);
		} else {
			u = g->rb_left;
			if (is_red(u)) {
				set_black(p);
				set_black(u);
				set_red(g);
				n = g;
				continue;
			}
			if (n == p->rb_left) {
				rotate_right(root, p);
				n = p;
				p = itree_parent(n);
			}
			set_black(p);
			set_red(g);
			rotate_left(root, g);
		}
	}
	set_black(*root);
}

/* Put @v where @u is (v may be NULL). */
static void transplant(struct range_lock **root, struct range_lock *u,
		       struct range_lock *v)
{
	struct range_lock *p = itree_parent(u);

	replace_child(root, p, u, v);
	if (v)
		set_parent(v, p);
}

/* Restore rule 3 after a black node left the path through @x (child of @xp). */
static void erase_fixup(struct range_lock **root, struct range_lock *x,
			struct range_lock *xp)
{
	struct range_lock *w;

	/* Loop invariant: paths through x have one black node too few. */
	while (x != *root && is_black(x)) {
		if (x == xp->rb_left) {
			w = xp->rb_right; /* not NULL: its side has a black node more */
			if (is_red(w)) {
				set_black(w);
				set_red(xp);
				rotate_left(root, xp);
				w = xp->rb_right;
			}
			if (is_black(w->rb_left) && is_black(w->rb_right)) {
				set_red(w);
				x = xp;
				xp = itree_parent(x);
			} else {
				if (is_black(w->rb_right)) {
					set_black(w->rb_left);
					set_red(w);
					rotate_right(root, w);
					w = xp->rb_right;
				}
				copy_colour(w, xp);
				set_black(xp);
				set_black(w->rb_right);
				rotate_left(root, xp);
				x = *root;
				xp = NULL;
			}
		} else {
			w = xp->rb_left;
			if (is_red(w)) {
				set_black(w);
				set_red(xp);
				rotate_right(root, xp);
				w = xp->rb_left;
			}
			if (is_black(w->rb_right) && is_black(w->rb_left)) {
				set_red(w);
				x = xp;
				xp = itree_parent(x);
			} else {
				if (is_black(w->rb_left)) {
					set_black(w->rb_right);
					set_red(w);
					rotate_left(root, w);
					w = xp->rb_left;
				}
				copy_colour(w, xp);
				set_black(xp);
				set_black(w->rb_left);
				rotate_right(root, xp);
				x = *root;
				xp = NULL;
			}
		}
	}
	if (x)
		set_black(x);
}

void rl_itree_erase(struct range_lock **root, struct range_lock *z)
{
	struct range_lock *x, *xp, *y = NULL, *n;
	bool removed_black;

	if (!z->rb_left || !z->rb_right) {
		/* z has at most one child: it moves up into z's place. */
		x = z->rb_left ? z->rb_left : z->rb_right;
		xp = itree_parent(z);
		removed_black = is_black(z);
		transplant(root, z, x);
	} else {
		/* y, z's successor, has no left child: it takes z's place and
		 * colour, and y's right child x takes y's old place. */
		y = z->rb_right;
		while (y->rb_left)
			y = y->rb_left;
		removed_black = is_black(y);
		x = y->rb_right;
		if (itree_parent(y) == z) {
			xp = y;
		} else {
			xp = itree_parent(y);
			transplant(root, y, x);
			y->rb_right = z->rb_right;
			set_parent(y->rb_right, y);
		}
		transplant(root, z, y);
		y->rb_left = z->rb_left;
		set_parent(y->rb_left, y);
		copy_colour(y, z);
	}
	/*
	 * Every node whose subtree lost z lies on the path from xp up, and lost
	 * only z; y (if z had two children) now stands in z's place, on that
	 * path, with new children.  A node whose cached maximum exceeds z->last
	 * keeps it (another node provides it), and so do all above it: stop
	 * there, once past y.  This spares reading the siblings along the path,
	 * which are cache misses in a large tree.
	 */
	for (n = xp; n; n = itree_parent(n)) {
		if (n == y)
			y = NULL;
		else if (n->subtree_last > z->last && !y)
			break;
		n->subtree_last = subtree_max(n);
	}
	if (removed_black)
		erase_fixup(root, x, xp);

	z->rb_left = z->rb_right = NULL;
	z->rb_parent_flags &= RL_READER; /* unlinked: no parent, no colour */
}

struct range_lock *rl_itree_next_inorder(const struct range_lock *n)
{
	struct range_lock *p;

	if (n->rb_right) {
		n = n->rb_right;
		while (n->rb_left)
			n = n->rb_left;
		return (struct range_lock *)n;
	}
	while ((p = itree_parent(n)) && n == p->rb_right)
		n = p;
	return p;
}

/*
 * The in-order first node of the subtree @n with last >= @start (it exists:
 * the caller checked n->subtree_last >= start), if it starts by @last.  Any
 * node before it ends before @start; any node after it starts no earlier.
 */
static struct range_lock *subtree_first(struct range_lock *n, uint64_t start,
					uint64_t last)
{
	for (;;) {
		if (n->rb_left && n->rb_left->subtree_last >= start) {
			n = n->rb_left;
			continue;
		}
		if (n->start > last)
			return NULL;
		if (n->last >= start)
			return n;
		if (n->rb_right && n->rb_right->subtree_last >= start) {
			n = n->rb_right;
			continue;
		}
		return NULL;
	}
}

struct range_lock *rl_itree_first(struct range_lock *root, uint64_t start,
				  uint64_t last)
{
	if (!root || root->subtree_last < start)
		return NULL;
	return subtree_first(root, start, last);
}

struct range_lock *rl_itree_next(struct range_lock *n, uint64_t start,
				 uint64_t last)
{
	struct range_lock *p, *prev;

	for (;;) {
		/* Candidates in the right subtree come first... */
		if (n->rb_right && n->rb_right->subtree_last >= start)
			return subtree_first(n->rb_right, start, last);
		/* ...then the first ancestor we reach from its left side. */
		do {
			p = itree_parent(n);
			if (!p)
				return NULL;
			prev = n;
			n = p;
		} while (prev == n->rb_right);
		if (n->start > last)
			return NULL;
		if (n->last >= start)
			return n;
	}
}

/* Returns the black height of @n's subtree, or -1 with *msg set. */
static int check_subtree(const struct range_lock *n, const struct range_lock *parent,
			 size_t *count, const char **msg)
{
	int lh, rh;

	if (!n)
		return 1;
	(*count)++;
	if (itree_parent(n) != parent)
		return *msg = "parent pointer wrong", -1;
	if (!(n->rb_parent_flags & RL_LINKED))
		return *msg = "node in tree without its linked flag", -1;
	if (is_red(n) && (is_red(n->rb_left) || is_red(n->rb_right)))
		return *msg = "red node with a red child", -1;
	if (n->start > n->last)
		return *msg = "node with start > last", -1;
	if (n->rb_left && n->rb_left->start > n->start)
		return *msg = "left child starts after its parent", -1;
	if (n->rb_right && n->rb_right->start < n->start)
		return *msg = "right child starts before its parent", -1;
	if (n->subtree_last != subtree_max(n))
		return *msg = "cached subtree_last is not the subtree's maximum", -1;
	lh = check_subtree(n->rb_left, n, count, msg);
	if (lh < 0)
		return -1;
	rh = check_subtree(n->rb_right, n, count, msg);
	if (rh < 0)
		return -1;
	if (lh != rh)
		return *msg = "black heights differ", -1;
	return lh + is_black(n);
}

const char *rl_itree_check(const struct range_lock *root, size_t *count)
{
	const char *msg = NULL;
	const struct range_lock *n, *prev = NULL;

	*count = 0;
	if (root && is_red(root))
		return "red root";
	if (check_subtree(root, NULL, count, &msg) < 0)
		return msg;
	/* Child-parent order is not enough: the whole in-order walk must be
	 * sorted by start. */
	for (n = root; n && n->rb_left; n = n->rb_left)
		;
	for (; n; prev = n, n = rl_itree_next_inorder(n))
		if (prev && prev->start > n->start)
			return "in-order walk not sorted by start";
	return NULL;
}
