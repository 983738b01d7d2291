/* SPDX-License-Identifier: MIT */
/*
 * The interval tree against its invariant checker (red-black rules, order,
 * cached subtree maximum, parent links) after every insert and erase of
 * random sequences, and every intersection query against a brute-force scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "interval_tree.h"

#define N 600

static struct range_lock nodes[N];
static bool present[N];

static uint64_t rnd(unsigned *seed, uint64_t mod)
{
	return ((uint64_t)rand_r(seed) << 31 ^ (uint64_t)rand_r(seed)) % mod;
}

static void check_tree(struct range_lock *root, size_t expect)
{
	size_t count;
	const char *msg = rl_itree_check(root, &count);

	if (msg)
		fail_msg("invariant broken: %s", msg);
	assert_int_equal(count, expect);
}

/* Every query answer equals the brute-force set, in in-order sequence. */
static void check_query(struct range_lock *root, uint64_t s, uint64_t e)
{
	bool seen[N] = { false };
	struct range_lock *n, *prev = NULL;
	size_t hits = 0, expect = 0;

	itree_foreach(n, root, s, e) {
		size_t i = (size_t)(n - nodes);
		assert_true(i < N && present[i]);
		assert_false(seen[i]);
		assert_true(n->start <= e && n->last >= s);
		if (prev)
			assert_true(prev->start <= n->start);
		seen[i] = true;
		prev = n;
		hits++;
	}
	for (size_t i = 0; i < N; i++)
		if (present[i] && nodes[i].start <= e && nodes[i].last >= s)
			expect++;
	assert_int_equal(hits, expect);
}

static void run_random(unsigned seed, uint64_t space, uint64_t maxlen)
{
	struct range_lock *root = NULL;
	size_t count = 0;

	memset(present, 0, sizeof(present));
	for (int step = 0; step < 6000; step++) {
		size_t i = (size_t)rnd(&seed, N);

		if (!present[i]) {
			uint64_t s = rnd(&seed, space);
			uint64_t len = rnd(&seed, maxlen + 1);
			memset(&nodes[i], 0, sizeof(nodes[i]));
			nodes[i].start = s;
			nodes[i].last = (s + len < s || s + len >= space) ? space - 1 : s + len;
			rl_itree_insert(&root, &nodes[i]);
			present[i] = true;
			count++;
		} else {
			rl_itree_erase(&root, &nodes[i]);
			assert_false(nodes[i].rb_parent_flags & RL_LINKED);
			present[i] = false;
			count--;
		}
		check_tree(root, count);
		if (step % 7 == 0) {
			uint64_t s = rnd(&seed, space);
			uint64_t e = s + rnd(&seed, maxlen * 2 + 1);
			if (e < s || e >= space)
				e = space - 1;
			check_query(root, s, e);
		}
	}
	/* Drain in random order. */
	while (count) {
		size_t i = (size_t)rnd(&seed, N);
		if (!present[i])
			continue;
		rl_itree_erase(&root, &nodes[i]);
		present[i] = false;
		count--;
		check_tree(root, count);
	}
	assert_null(root);
}

static void test_random_small_space(void **state)
{
	(void)state;
	/* Many duplicates and overlaps. */
	run_random(1, 64, 8);
	run_random(2, 16, 3);
}

static void test_random_large_space(void **state)
{
	(void)state;
	run_random(3, 1000000, 5000);
	run_random(4, UINT64_MAX, UINT64_MAX / 4);
}

/* Equal starts are walked in insertion order. */
static void test_duplicates_in_order(void **state)
{
	(void)state;
	struct range_lock *root = NULL, *n;
	size_t k = 0;

	for (size_t i = 0; i < 50; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		nodes[i].start = 7;
		nodes[i].last = 7 + i % 5;
		rl_itree_insert(&root, &nodes[i]);
	}
	check_tree(root, 50);
	itree_foreach(n, root, 0, 100)
		assert_ptr_equal(n, &nodes[k++]);
	assert_int_equal(k, 50);
	for (n = &nodes[0], k = 0; n; n = rl_itree_next_inorder(n))
		k++;
	assert_int_equal(k, 50);
}

/* The checker itself catches a broken cached maximum and a bad colour. */
static void test_checker_catches_corruption(void **state)
{
	(void)state;
	struct range_lock *root = NULL;
	size_t count;

	for (size_t i = 0; i < 20; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		nodes[i].start = i * 10;
		nodes[i].last = i * 10 + 5;
		rl_itree_insert(&root, &nodes[i]);
	}
	assert_null(rl_itree_check(root, &count));
	root->subtree_last--;
	assert_non_null(rl_itree_check(root, &count));
	root->subtree_last++;
	root->rb_parent_flags &= ~RB_BLACK;
	assert_non_null(rl_itree_check(root, &count));
	root->rb_parent_flags |= RB_BLACK;
	root->rb_left->start = 1000;
	assert_non_null(rl_itree_check(root, &count));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_small_space),
		cmocka_unit_test(test_random_large_space),
		cmocka_unit_test(test_duplicates_in_order),
		cmocka_unit_test(test_checker_catches_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
