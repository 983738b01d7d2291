/* SPDX-License-Identifier: MIT */
/*
 * The limit on requests in one tree (rangelock.h: a waiter's wait word
 * counts its blockers in 30 bits, so a tree holds at most 2^30 - 1024
 * requests at once, and one more aborts instead of wrapping the count).
 * Against a variant built with the limit at 8 (RL_MAX_TREE_REQUESTS), in
 * child processes.
 */
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define LIMIT 8 /* RL_MAX_TREE_REQUESTS of rangelock_test_smalltree */

static struct range_lock_tree tree;
static struct range_lock held[LIMIT + 1];

/* LIMIT disjoint holds: the tree is full (the first hold takes the lock
 * word; the second displaces it into the tree). */
static void fill(void)
{
	for (uint64_t i = 0; i < LIMIT; i++) {
		range_lock_init(&held[i], i * 10, i * 10 + 5);
		if (i % 2)
			range_read_lock(&tree, &held[i]);
		else
			range_write_lock(&tree, &held[i]);
	}
}

static void one_more_write(void)
{
	fill();
	range_lock_init(&held[LIMIT], 1000, 1000);
	range_write_lock(&tree, &held[LIMIT]);
}

static void one_more_trylock(void)
{
	fill();
	range_lock_init(&held[LIMIT], 1000, 1000);
	(void)range_read_trylock(&tree, &held[LIMIT]);
}

/* Room again once one is unlocked: 0 means it was all right. */
static void unlock_then_more(void)
{
	fill();
	range_write_unlock(&tree, &held[0]);
	range_lock_init(&held[LIMIT], 1000, 1000);
	range_write_lock(&tree, &held[LIMIT]);
	range_write_unlock(&tree, &held[LIMIT]);
	for (int i = 1; i < LIMIT; i++) {
		if (i % 2)
			range_read_unlock(&tree, &held[i]);
		else
			range_write_unlock(&tree, &held[i]);
	}
	if (range_lock_tree_destroy(&tree))
		_exit(5);
}

static void expect_abort(void (*fn)(void), const char *needle)
{
	struct child_result r;

	range_lock_tree_init(&tree);
	run_child(fn, &r);
	if (!strstr(r.out, needle))
		print_error("status %#x, stderr was: '%s', wanted '%s'\n", r.status, r.out,
			    needle);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	assert_non_null(strstr(r.out, needle));
}

static void test_one_request_too_many_aborts(void **state)
{
	(void)state;
	expect_abort(one_more_write,
		     "range_write_lock([1000, 1000]): too many requests in this tree");
	expect_abort(one_more_trylock,
		     "range_read_trylock([1000, 1000]): too many requests in this tree");
}

static void test_room_again_after_unlock(void **state)
{
	struct child_result r;

	(void)state;
	range_lock_tree_init(&tree);
	run_child(unlock_then_more, &r);
	if (r.out[0])
		print_error("stderr: '%s'\n", r.out);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_request_too_many_aborts),
		cmocka_unit_test(test_room_again_after_unlock),
	};

	watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
