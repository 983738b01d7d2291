/* SPDX-License-Identifier: MIT */
/*
 * rangelock-many-loop: one thread, uncontended, a loop of one operation of
 * the several-ranges and grow/shrink calls, for instruction counts under
 * Callgrind (load-independent, unlike the timings of rangelock-bench
 * --targets=many).  The loop is in loop(): count it alone with
 *
 *   valgrind --tool=callgrind --toggle-collect=loop \
 *       build/bench/rangelock-many-loop MODE N [TREE]
 *
 * and divide the "Collected" Ir by N + N / 10 + 1 (loop() runs a warm-up
 * of N / 10 + 1 too) (see docs/benchmarks.md, "Instruction counts").
 * Modes (two disjoint ranges [0, 99] and
 * [200, 299]; grow: [0, 99] held, grown to [0, 100] and back):
 *   many-w     range_lock_many + range_unlock_many, 2 writers
 *   many1-w    range_lock_many + 2 single unlocks, 2 writers
 *   single-w   2 single write locks + 2 unlocks (the baseline)
 *   many-r, many1-r, single-r   the same for readers
 *   grow-w     range_lock_grow by 1 unit + range_lock_shrink back, held writer
 *   relock-w   unlock + lock of the bigger range, then unlock + lock of
 *              the first one again (the baseline of grow-w: two changes)
 *   grow-r, relock-r            the same for a reader
 *   one-w, one-r               1 single lock + unlock (for scale)
 *   async-w, async-r           range_*_lock_async (held at once) + unlock:
 *                              against one-w / one-r, the cost of an
 *                              uncontended asynchronous acquire
 * TREE: default (the default policy), fifo (range_lock_tree_set_fifo),
 * nofast (default policy, range_lock_tree_set_fast_read(tree, 0): every
 * read through the tree), seg (64 segments by stripes of 2^14 units: every
 * range above in one segment) or segspan (64 segments by stripes of 64
 * units: [0, 99] and [200, 299] span two segments each).
 */
#include <rangelock/rangelock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct range_lock_tree tree;
static struct range_lock a, b;
static struct range_lock_item items[2];

enum mode { MANY, MANY1, SINGLE, GROW, RELOCK, ONE, ASYNC };

static struct range_lock_async areq;

static void no_completion(struct range_lock_async *req, int status)
{
	(void)req;
	(void)status;
	abort(); /* uncontended: always held at once */
}

static void lock1(struct range_lock *l, int w)
{
	if (w)
		range_write_lock(&tree, l);
	else
		range_read_lock(&tree, l);
}

static void unlock1(struct range_lock *l, int w)
{
	if (w)
		range_write_unlock(&tree, l);
	else
		range_read_unlock(&tree, l);
}

static void one(enum mode m, int w)
{
	switch (m) {
	case MANY:
		range_lock_many(&tree, items, 2);
		range_unlock_many(&tree, items, 2);
		break;
	case MANY1:
		range_lock_many(&tree, items, 2);
		unlock1(&a, w);
		unlock1(&b, w);
		break;
	case SINGLE:
		lock1(&a, w);
		lock1(&b, w);
		unlock1(&a, w);
		unlock1(&b, w);
		break;
	case GROW: /* a is held as [0, 99] */
		if (range_lock_grow(&tree, &a, 0, 100) || range_lock_shrink(&tree, &a, 0, 99))
			abort();
		break;
	case RELOCK: /* a is held as [0, 99]; b is [0, 100] and not held:
		      * relock bigger, then relock back (grow's two steps) */
		unlock1(&a, w);
		lock1(&b, w);
		unlock1(&b, w);
		lock1(&a, w);
		break;
	case ONE:
		lock1(&a, w);
		unlock1(&a, w);
		break;
	case ASYNC:
		if ((w ? range_write_lock_async(&tree, &areq)
		       : range_read_lock_async(&tree, &areq)) != 0)
			abort();
		unlock1(&areq.lock, w);
		break;
	}
}

/* Counted under --toggle-collect=loop. */
__attribute__((noinline)) void loop(enum mode m, int w, long n)
{
	for (long i = 0; i < n; i++)
		one(m, w);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "many", "many1", "single", "grow", "relock", "one",
					     "async" };
	const char *arg = argc > 1 ? argv[1] : "many-w";
	const char *kind = argc > 3 ? argv[3] : "default";
	long n = argc > 2 ? atol(argv[2]) : 100000;
	size_t len = strlen(arg);
	enum mode m = ONE;
	int w, found = 0;

	if (len < 3 || arg[len - 2] != '-' || (arg[len - 1] != 'w' && arg[len - 1] != 'r')) {
		fprintf(stderr, "usage: rangelock-many-loop MODE-w|MODE-r [N]\n");
		return 2;
	}
	w = arg[len - 1] == 'w';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len - 2 && !strncmp(arg, names[i], len - 2)) {
			m = (enum mode)i;
			found = 1;
		}
	if (!found || n < 1) {
		fprintf(stderr, "rangelock-many-loop: unknown mode %s\n", arg);
		return 2;
	}
	range_lock_tree_init(&tree);
	if (!strcmp(kind, "fifo")) {
		if (range_lock_tree_set_fifo(&tree, 1))
			return 2;
	} else if (!strcmp(kind, "nofast")) {
		if (range_lock_tree_set_fast_read(&tree, 0))
			return 2;
	} else if (!strcmp(kind, "seg") || !strcmp(kind, "segspan")) {
		if (range_lock_tree_set_segments(&tree, 64, !strcmp(kind, "seg") ? 14 : 6))
			return 2;
	} else if (strcmp(kind, "default")) {
		fprintf(stderr, "rangelock-many-loop: TREE is default, fifo, nofast, seg "
				"or segspan\n");
		return 2;
	}
	if (m == RELOCK) {
		range_lock_init(&a, 0, 99);
		range_lock_init(&b, 0, 100);
	} else {
		range_lock_init(&a, 0, 99);
		range_lock_init(&b, 200, 299);
	}
	if (range_lock_async_init(&areq, 0, 99, no_completion, NULL))
		return 2;
	items[0].lock = &a;
	items[0].mode = w ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
	items[1].lock = &b;
	items[1].mode = items[0].mode;
	if (m == GROW || m == RELOCK)
		lock1(&a, w);
	loop(m, w, n / 10 + 1); /* warm up (counted too: the same operations) */
	loop(m, w, n);
	if (m == GROW || m == RELOCK)
		unlock1(&a, w);
	range_lock_tree_destroy(&tree);
	return 0;
}
