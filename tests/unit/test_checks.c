/* SPDX-License-Identifier: MIT */
/*
 * The checking mode's detections, each triggered in a child process whose
 * stderr is captured: self-deadlock, lock-order inversion across trees
 * (honouring _nested subclasses), a thread exiting with ranges held.  And
 * the silences: trylock/timedlock on one's own range just fail, correct
 * nesting reports nothing.
 */
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <cmocka.h>

static void expect_text(const struct child_result *r, const char *needle)
{
	if (!strstr(r->out, needle))
		fail_msg("child stderr '%s' lacks '%s'", r->out, needle);
}

static struct range_lock_tree tree_a, tree_b;

static void self_deadlock(void)
{
	struct range_lock held, again;
	range_lock_init(&held, 10, 20);
	range_lock_init(&again, 15, 30);
	range_write_lock(&tree_a, &held);
	range_read_lock(&tree_a, &again); /* would wait for itself forever */
}

static void test_self_deadlock_stopped(void **state)
{
	(void)state;
	struct child_result r;

	run_child(self_deadlock, &r);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	expect_text(&r, "self-deadlock");
	expect_text(&r, "range_read_lock on [15, 30]");
	expect_text(&r, "while it holds [10, 20] for writing");
}

/* On a tree with segments the report names the user's tree and ranges,
 * not a segment or a part's hull. */
static struct range_lock_tree tree_s;
static uint64_t again_start, again_last;

static void self_deadlock_segmented(void)
{
	struct range_lock held, again;

	range_lock_tree_init(&tree_s);
	if (range_lock_tree_set_segments(&tree_s, 2, 2) != 0) /* stripes of 4 */
		abort();
	range_lock_init(&held, 10, 20); /* spans both segments */
	range_lock_init(&again, again_start, again_last);
	range_write_lock(&tree_s, &held);
	range_read_lock(&tree_s, &again);
}

static void test_self_deadlock_segmented(void **state)
{
	static const uint64_t ranges[][2] = {
		{ 5, 30 },  /* spanning, several parts wait */
		{ 12, 12 }, /* one segment */
	};
	char want[128];
	(void)state;

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct child_result r;

		again_start = ranges[i][0];
		again_last = ranges[i][1];
		run_child(self_deadlock_segmented, &r);
		assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
		snprintf(want, sizeof(want), "range_read_lock on [%llu, %llu] of tree %p",
			 (unsigned long long)again_start, (unsigned long long)again_last,
			 (void *)&tree_s);
		expect_text(&r, want);
		expect_text(&r, "while it holds [10, 20] for writing");
	}
}

/* Reading a range again is fine, unless a writer arrived in between: it
 * waits for the first read hold, the second waits for it. */
static struct range_lock_tree tree_c;

static void *writer_on_c(void *arg)
{
	struct range_lock w;
	(void)arg;
	range_lock_init(&w, 0, 100);
	range_write_lock(&tree_c, &w);
	range_write_unlock(&tree_c, &w);
	return NULL;
}

/* Read [10, 20], let a writer on [0, 100] queue behind it, then read
 * [start, last]: a deadlock (at once in FIFO, once the writer is marked in
 * the default policy) that the check must stop. */
static void read_again_behind_writer(uint64_t start, uint64_t last)
{
	struct range_lock r1, r2;
	struct range_lock_stats st, now;
	pthread_t t;

	range_lock_tree_init(&tree_c);
	range_lock_tree_enable_stats(&tree_c, &st);
	range_lock_init(&r1, 10, 20);
	range_lock_init(&r2, start, last);
	range_read_lock(&tree_c, &r1);
	pthread_create(&t, NULL, writer_on_c, NULL);
	do {
		sleep_ms(1);
		range_lock_tree_get_stats(&tree_c, &now);
	} while (now.waiting_now != 1);
	range_read_lock(&tree_c, &r2); /* deadlock: stopped by the check */
}

static void recursive_read_behind_writer(void)
{
	read_again_behind_writer(15, 25);
}

static void test_recursive_read_behind_writer(void **state)
{
	(void)state;
	struct child_result r;

	run_child(recursive_read_behind_writer, &r);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	expect_text(&r, "self-deadlock");
	expect_text(&r, "while it holds [10, 20] for reading");
	expect_text(&r, "writer [0, 100] waits between them");
}

/* The same through a hold the new read does not even intersect: the writer
 * waiting on [0, 100] links the hold of [10, 20] to a read of [30, 40]. */
static void read_linked_by_waiting_writer(void)
{
	read_again_behind_writer(30, 40);
}

static void test_read_linked_by_waiting_writer(void **state)
{
	(void)state;
	struct child_result r;

	run_child(read_linked_by_waiting_writer, &r);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	expect_text(&r, "self-deadlock");
	expect_text(&r, "range_read_lock on [30, 40]");
	expect_text(&r, "while it holds [10, 20] for reading");
	expect_text(&r, "writer [0, 100] waits between them");
}

static void own_range_try_and_timed(void)
{
	struct range_lock held, again, reader2;
	struct timespec ts;

	range_lock_init(&held, 10, 20);
	range_lock_init(&again, 15, 30);
	range_write_lock(&tree_a, &held);
	if (range_read_trylock(&tree_a, &again) != 0)
		_exit(3);
	deadline_in(CLOCK_MONOTONIC, 20, &ts);
	if (range_write_timedlock(&tree_a, &again, CLOCK_MONOTONIC, &ts) != -ETIMEDOUT)
		_exit(4);
	range_write_unlock(&tree_a, &held);
	/* Readers may nest on their own ranges: no conflict, no report. */
	range_read_lock(&tree_a, &held);
	range_lock_init(&reader2, 12, 40);
	range_read_lock(&tree_a, &reader2);
	range_read_unlock(&tree_a, &reader2);
	range_read_unlock(&tree_a, &held);
}

static void test_try_and_timed_just_fail(void **state)
{
	(void)state;
	struct child_result r;

	run_child(own_range_try_and_timed, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_string_equal(r.out, "");
}

/* Not static, and the binary exports its symbols: the report names them. */
__attribute__((noinline)) void take_ab(void);
__attribute__((noinline)) void take_ba(void);

void take_ab(void)
{
	struct range_lock a, b;
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 0, 9);
	range_write_lock(&tree_a, &a);
	range_write_lock(&tree_b, &b);
	range_write_unlock(&tree_b, &b);
	range_write_unlock(&tree_a, &a);
}

void take_ba(void)
{
	struct range_lock a, b;
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 0, 9);
	range_read_lock(&tree_b, &b);
	range_read_lock(&tree_a, &a);
	range_read_unlock(&tree_a, &a);
	range_read_unlock(&tree_b, &b);
}

static void abba(void)
{
	take_ab();
	take_ba();
}

static void abba_nested(void)
{
	struct range_lock a, b;

	take_ab();
	/* B then A again, but A annotated as a deliberate nesting level. */
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 0, 9);
	range_write_lock(&tree_b, &b);
	range_write_lock_nested(&tree_a, &a, 1);
	range_write_unlock(&tree_a, &a);
	range_write_unlock(&tree_b, &b);
}

static void same_order_twice(void)
{
	take_ab();
	take_ab();
}

static void test_lock_order_inversion(void **state)
{
	(void)state;
	struct child_result r;

	run_child(abba, &r);
	assert_true(WIFEXITED(r.status));
	expect_text(&r, "lock order inversion (ABBA)");
	expect_text(&r, "take_ab"); /* both call sites are named */
	expect_text(&r, "take_ba");

	run_child(abba_nested, &r);
	assert_true(WIFEXITED(r.status));
	assert_string_equal(r.out, "");

	run_child(same_order_twice, &r);
	assert_true(WIFEXITED(r.status));
	assert_string_equal(r.out, "");
}

static void *exit_holding(void *arg)
{
	static struct range_lock leaked;
	(void)arg;
	range_lock_init(&leaked, 40, 49);
	range_read_lock(&tree_a, &leaked);
	return NULL;
}

static void *exit_clean(void *arg)
{
	struct range_lock r;
	(void)arg;
	range_lock_init(&r, 40, 49);
	range_read_lock(&tree_a, &r);
	range_read_unlock(&tree_a, &r);
	return NULL;
}

static void thread_exits_holding(void)
{
	pthread_t t;
	pthread_create(&t, NULL, exit_clean, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, exit_holding, NULL);
	pthread_join(t, NULL);
}

static void test_thread_exit_holding(void **state)
{
	(void)state;
	struct child_result r;

	run_child(thread_exits_holding, &r);
	assert_true(WIFEXITED(r.status));
	expect_text(&r, "exits holding [40, 49]");
	assert_null(strstr(r.out, "exits holding [40, 49]\n")); /* the site follows */
	/* Exactly one report: the clean thread said nothing. */
	assert_null(strstr(strstr(r.out, "exits holding") + 1, "exits holding"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_deadlock_stopped),
		cmocka_unit_test(test_self_deadlock_segmented),
		cmocka_unit_test(test_try_and_timed_just_fail),
		cmocka_unit_test(test_recursive_read_behind_writer),
		cmocka_unit_test(test_read_linked_by_waiting_writer),
		cmocka_unit_test(test_lock_order_inversion),
		cmocka_unit_test(test_thread_exit_holding),
	};

	range_lock_tree_init(&tree_a);
	range_lock_tree_init(&tree_b);
	watchdog(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
