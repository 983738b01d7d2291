/* SPDX-License-Identifier: MIT */
/*
 * A random model test: trylock answers against a plain list of held ranges.
 * A read trylock must succeed exactly when no held writer intersects, a
 * write trylock exactly when nothing held intersects.  Downgrades and
 * unlocks in random order keep the list and the tree in step.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <rangelock/rangelock.h>

#define SLOTS 48

struct slot {
	struct range_lock req;
	bool held, reader;
	uint64_t start, last;
};

static bool model_allows(const struct slot *s, uint64_t start, uint64_t last,
			 bool reader)
{
	for (size_t i = 0; i < SLOTS; i++) {
		if (!s[i].held || s[i].last < start || s[i].start > last)
			continue;
		if (!reader || !s[i].reader)
			return false;
	}
	return true;
}

/* @segments > 1: the tree split into that many segments by stripes of
 * 2^@shift units (range_lock_tree_set_segments()): the answers must not
 * change -- no false conflict across segment boundaries, none missed. */
static void run_segmented(unsigned seed, uint64_t space, unsigned segments,
			  unsigned shift)
{
	struct range_lock_tree tree;
	static struct slot s[SLOTS];

	range_lock_tree_init(&tree);
	if (segments > 1)
		assert_int_equal(range_lock_tree_set_segments(&tree, segments, shift), 0);
	for (size_t i = 0; i < SLOTS; i++)
		s[i].held = false;
	for (int step = 0; step < 100000; step++) {
		size_t i = (size_t)rand_r(&seed) % SLOTS;
		struct slot *x = &s[i];

		if (!x->held) {
			uint64_t a = (uint64_t)rand_r(&seed) % space;
			uint64_t b = a + (uint64_t)rand_r(&seed) % (space / 8 + 1);
			bool reader = rand_r(&seed) & 1;
			bool expect, got;

			if (b >= space)
				b = space - 1;
			if (rand_r(&seed) % 50 == 0) { /* sometimes the full range */
				a = 0;
				b = RANGE_LOCK_FULL;
			}
			assert_int_equal(range_lock_init(&x->req, a, b), 0);
			expect = model_allows(s, a, b, reader);
			got = reader ? range_read_trylock(&tree, &x->req)
				     : range_write_trylock(&tree, &x->req);
			if (got != expect)
				fail_msg("step %d: %s trylock [%llu, %llu] returned %d, "
					 "model says %d", step, reader ? "read" : "write",
					 (unsigned long long)a, (unsigned long long)b,
					 got, expect);
			if (got) {
				x->held = true;
				x->reader = reader;
				x->start = a;
				x->last = b;
			}
		} else if (!x->reader && rand_r(&seed) % 4 == 0) {
			range_downgrade_write(&tree, &x->req);
			x->reader = true;
		} else {
			if (x->reader)
				range_read_unlock(&tree, &x->req);
			else
				range_write_unlock(&tree, &x->req);
			x->held = false;
		}
	}
	for (size_t i = 0; i < SLOTS; i++) {
		if (!s[i].held)
			continue;
		if (s[i].reader)
			range_read_unlock(&tree, &s[i].req);
		else
			range_write_unlock(&tree, &s[i].req);
	}
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

static void run(unsigned seed, uint64_t space)
{
	run_segmented(seed, space, 1, 0);
}

static void test_trylock_matches_model(void **state)
{
	(void)state;
	run(1, 32);
	run(2, 256);
	run(3, 4096);
}

/* Stripes of 1, 4 and 64 units over 2 to 256 segments: most ranges span
 * segments (wrapping past the last one back to 0), some cover every stripe
 * of a segment more than once, and the full range meets them all. */
static void test_trylock_matches_model_segmented(void **state)
{
	(void)state;
	run_segmented(11, 32, 4, 0);
	run_segmented(12, 32, 2, 2);
	run_segmented(13, 256, 8, 2);
	run_segmented(14, 256, 16, 0);
	run_segmented(15, 4096, 64, 6);
	run_segmented(16, 4096, 256, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trylock_matches_model),
		cmocka_unit_test(test_trylock_matches_model_segmented),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
