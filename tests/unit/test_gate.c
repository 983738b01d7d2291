/* SPDX-License-Identifier: MIT */
/*
 * The gate of a tree with segments: wide requests (16 segments or more)
 * drain the segments and run on the tree itself as a plain tree; narrow
 * requests switch it back.  The mode is read from the tree's own lock
 * word (private header tree_lock.h): TL_SEGMENTED, TL_DRAINING(|2), or a
 * plain value.  Worker threads assert nothing; the main thread asserts
 * after joining.  Every wait is observed through the word, never a sleep.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "tree_lock.h" /* the word's values */
#include "segments.h" /* a segment's word */

#define S 64
#define K 12 /* stripes of 4096 units */

static uintptr_t word_of(struct range_lock_tree *tree)
{
	return __atomic_load_n(&tree->lock_word, __ATOMIC_ACQUIRE);
}

static bool draining(struct range_lock_tree *tree)
{
	return (word_of(tree) | TL_SLEEPERS) == (TL_DRAINING | TL_SLEEPERS);
}


/* Poll until the word is a drain and the drainer has closed every segment
 * (it closes them in ascending order, and the tests leave the last one
 * empty: its word is then TL_CLOSED); false after 10 s. */
static bool wait_for_drain(struct range_lock_tree *tree)
{
	for (int i = 0; i < 10000; i++) {
		struct range_lock_tree *last = rl_seg_tree(segments_of(tree), S - 1);

		if (draining(tree) &&
		    __atomic_load_n(&last->lock_word, __ATOMIC_ACQUIRE) == TL_CLOSED)
			return true;
		sleep_ms(1);
	}
	return false;
}

static void gate_tree(struct range_lock_tree *tree, bool fifo)
{
	range_lock_tree_init(tree);
	if (fifo)
		assert_int_equal(range_lock_tree_set_fifo(tree, 1), 0);
	assert_int_equal(range_lock_tree_set_segments(tree, S, K), 0);
	assert_int_equal(word_of(tree), TL_SEGMENTED);
}

struct locker {
	struct range_lock_tree *tree;
	struct range_lock req;
	bool reader;
	int kind; /* 0 plain, 1 interruptible, 2 killable, 3 timed 100 ms */
	atomic_int done;
	int result;
};

static void *locker_thread(void *arg)
{
	struct locker *l = arg;
	struct timespec ts;

	switch (l->kind) {
	case 0:
		if (l->reader)
			range_read_lock(l->tree, &l->req);
		else
			range_write_lock(l->tree, &l->req);
		break;
	case 1:
		l->result = l->reader ? range_read_lock_interruptible(l->tree, &l->req)
				      : range_write_lock_interruptible(l->tree, &l->req);
		break;
	case 2:
		l->result = l->reader ? range_read_lock_killable(l->tree, &l->req)
				      : range_write_lock_killable(l->tree, &l->req);
		break;
	default:
		deadline_in(CLOCK_MONOTONIC, 100, &ts);
		l->result = l->reader
			? range_read_timedlock(l->tree, &l->req, CLOCK_MONOTONIC, &ts)
			: range_write_timedlock(l->tree, &l->req, CLOCK_MONOTONIC, &ts);
		break;
	}
	atomic_store(&l->done, 1);
	return NULL;
}

static void start_locker(struct locker *l, pthread_t *th, struct range_lock_tree *tree,
			 uint64_t a, uint64_t b, bool reader, int kind)
{
	memset(l, 0, sizeof(*l));
	l->tree = tree;
	l->reader = reader;
	l->kind = kind;
	range_lock_init(&l->req, a, b);
	assert_int_equal(pthread_create(th, NULL, locker_thread, l), 0);
}

/* Whole-range requests run on the tree itself (its lock word, as on a
 * tree without segments); a narrow request on the empty tree switches it
 * back; requests meeting fewer than 16 segments stay in the segments. */
static void test_gate_modes(void **state)
{
	struct range_lock_tree tree;
	struct range_lock whole, narrow, mid;

	(void)state;
	watchdog(30);
	for (int fifo = 0; fifo < 2; fifo++) {
		gate_tree(&tree, fifo);
		range_lock_init_full(&whole);
		range_write_lock(&tree, &whole); /* drains (nothing to wait for) */
		assert_true(word_of(&tree) != TL_SEGMENTED && !draining(&tree));
		range_write_unlock(&tree, &whole);
		assert_int_equal(word_of(&tree), 0); /* a plain, empty tree */
		/* again: no switch; held as on a tree without segments (its
		 * word, but in the checking mode, which never takes it) */
		range_read_lock(&tree, &whole);
#if !TEST_CHECKED
		assert_int_equal(word_of(&tree) & ~TL_FAST_BITS, (uintptr_t)&whole);
#endif
		range_read_unlock(&tree, &whole);
		/* a narrow request on the free plain tree switches back */
		range_lock_init(&narrow, 5, 5);
		range_write_lock(&tree, &narrow);
		assert_int_equal(word_of(&tree), TL_SEGMENTED);
		range_write_unlock(&tree, &narrow);
		/* 15 stripes: a span, no drain */
		range_lock_init(&mid, 0, (15u << K) - 1);
		range_write_lock(&tree, &mid);
		assert_int_equal(word_of(&tree), TL_SEGMENTED);
		range_write_unlock(&tree, &mid);
		/* 16 stripes: wide */
		range_lock_init(&mid, 0, (16u << K) - 1);
		range_write_lock(&tree, &mid);
		assert_true(word_of(&tree) != TL_SEGMENTED);
		range_write_unlock(&tree, &mid);
		/* a narrow trylock switches back too */
		assert_true(range_read_trylock(&tree, &narrow));
		assert_int_equal(word_of(&tree), TL_SEGMENTED);
		range_read_unlock(&tree, &narrow);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/* A wide writer waits for every request present in the segments, and
 * every request that comes after it waits for it -- a narrow one in a
 * segment it closed while requests were there too (not only a conflict
 * in the tree: the segment refuses entries); trylocks are busy meanwhile. */
static void test_gate_drain_order(void **state)
{
	struct range_lock_tree tree;
	struct range_lock held, probe;
	struct locker wide, later, later_same;
	pthread_t tw, tl, ts;

	(void)state;
	watchdog(60);
	for (int fifo = 0; fifo < 2; fifo++) {
		gate_tree(&tree, fifo);
		range_lock_init(&held, 5, 5);
		range_read_lock(&tree, &held);
		start_locker(&wide, &tw, &tree, 0, RANGE_LOCK_FULL, false, 0);
		assert_true(wait_for_drain(&tree));
		/* later requests: a reader beside the held reader, in its
		 * (closing) segment, and one in another (closed) segment */
		start_locker(&later_same, &ts, &tree, 6, 6, true, 0);
		start_locker(&later, &tl, &tree, 3u << K, 3u << K, false, 0);
		range_lock_init(&probe, 7u << K, 7u << K);
		assert_false(range_write_trylock(&tree, &probe));
		assert_false(range_read_trylock(&tree, &probe));
		sleep_ms(20); /* time to get in wrongly */
		assert_int_equal(atomic_load(&wide.done), 0);
		assert_int_equal(atomic_load(&later.done), 0);
		assert_int_equal(atomic_load(&later_same.done), 0);
		range_read_unlock(&tree, &held);
		pthread_join(tw, NULL);
		sleep_ms(20);
		assert_int_equal(atomic_load(&later.done), 0);
		assert_int_equal(atomic_load(&later_same.done), 0);
		range_write_unlock(&tree, &wide.req);
		pthread_join(tl, NULL);
		pthread_join(ts, NULL);
		range_write_unlock(&tree, &later.req);
		range_read_unlock(&tree, &later_same.req);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

static void on_signal(int sig)
{
	(void)sig;
}

/* A drain given up (deadline, signal, cancellation) reopens every segment:
 * the tree is back in its segments, and a narrow request anywhere is free
 * at once. */
static void test_gate_drain_gives_up(void **state)
{
	struct range_lock_tree tree;
	struct range_lock held, probe;
	struct sigaction sa;
	struct locker l;
	pthread_t th;

	(void)state;
	watchdog(60);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	for (int kind = 1; kind <= 3; kind++) {
		void *ret = NULL;

		gate_tree(&tree, false);
		range_lock_init(&held, 5, 5);
		range_write_lock(&tree, &held);
		start_locker(&l, &th, &tree, 0, RANGE_LOCK_FULL, kind == 2, kind);
		assert_true(wait_for_drain(&tree));
		if (kind == 2)
			pthread_cancel(th);
		/* (again and again: one may come before the thread sleeps) */
		while (kind == 1 && !atomic_load(&l.done)) {
			pthread_kill(th, SIGUSR1);
			sleep_ms(2);
		}
		pthread_join(th, &ret);
		if (kind == 1)
			assert_int_equal(l.result, -EINTR);
		else if (kind == 2)
			assert_ptr_equal(ret, PTHREAD_CANCELED);
		else
			assert_int_equal(l.result, -ETIMEDOUT);
		assert_int_equal(word_of(&tree), TL_SEGMENTED);
		for (unsigned g = 1; g < S; g++) {
			range_lock_init(&probe, (uint64_t)g << K, (uint64_t)g << K);
			assert_true(range_write_trylock(&tree, &probe));
			range_write_unlock(&tree, &probe);
		}
		range_write_unlock(&tree, &held);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/* Statistics count a drained request once, with its wait; a trylock made
 * busy by a drain counts as a busy trylock. */
static void test_gate_statistics(void **state)
{
	struct range_lock_tree tree;
	struct range_lock_stats st, got;
	struct range_lock held, probe;
	struct locker wide;
	pthread_t tw;

	(void)state;
	watchdog(30);
	gate_tree(&tree, false);
	assert_int_equal(range_lock_tree_enable_stats(&tree, &st), 0);
	range_lock_init(&held, 5, 5);
	range_write_lock(&tree, &held);
	start_locker(&wide, &tw, &tree, 0, RANGE_LOCK_FULL, false, 0);
	assert_true(wait_for_drain(&tree));
	range_lock_init(&probe, 9u << K, 9u << K);
	assert_false(range_write_trylock(&tree, &probe));
	range_write_unlock(&tree, &held);
	pthread_join(tw, NULL);
	assert_int_equal(range_lock_tree_get_stats(&tree, &got), 0);
	assert_int_equal(got.write_acquired, 2);
	assert_int_equal(got.held_now, 1);
	assert_int_equal(got.waiting_now, 0);
	assert_int_equal(got.contended, 1);
	assert_int_equal(got.trylock_failed, 1);
	assert_true(got.wait_ns_total > 0);
	range_write_unlock(&tree, &wide.req);
	assert_int_equal(range_lock_tree_get_stats(&tree, &got), 0);
	assert_int_equal(got.held_now, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* The calls that take a held request find it where it is: shrink, grow,
 * downgrade and unlock_many of requests held on the tree itself. */
static void test_gate_held_calls(void **state)
{
	struct range_lock_tree tree;
	struct range_lock a, b;
	struct range_lock_item items[2] = { { &a, RANGE_LOCK_WRITE }, { &b, RANGE_LOCK_READ } };

	(void)state;
	watchdog(30);
	gate_tree(&tree, false);
	range_lock_init_full(&a);
	range_write_lock(&tree, &a);
	/* destroy and the dump see it */
	assert_int_equal(range_lock_tree_destroy(&tree), -EBUSY);
	assert_true(tree_is_segmented(&tree)); /* nothing changed */
	assert_int_equal(dump_count(&tree, "running as a plain tree"), 1);
	assert_int_equal(dump_count(&tree, "[0, 18446744073709551615] write held"), 1);
	assert_int_equal(range_lock_shrink(&tree, &a, 0, 100), 0);
	assert_int_equal(range_lock_grow(&tree, &a, 0, (40u << K)), 0);
	range_downgrade_write(&tree, &a);
	range_read_unlock(&tree, &a);
	/* a set in plain mode: the tree is free, word 0 */
	range_lock_init(&a, 0, (20u << K));
	range_lock_init(&b, 30u << K, 50u << K);
	range_lock_many(&tree, items, 2);
	range_unlock_many(&tree, items, 2);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_modes),
		cmocka_unit_test(test_gate_drain_order),
		cmocka_unit_test(test_gate_drain_gives_up),
		cmocka_unit_test(test_gate_statistics),
		cmocka_unit_test(test_gate_held_calls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
