/* SPDX-License-Identifier: MIT */
/*
 * The parts of spanning requests on segmented trees come from a per-thread
 * cache (src/seg_parts.c): after a warm-up, spanning lock/unlock pairs of
 * every call kind allocate nothing; a span locked on one thread and
 * unlocked on another (or completed there) still works and nothing leaks
 * (AddressSanitizer's leak check, in the asan preset, sees a cache a thread
 * left behind at its exit); a lock call that cannot allocate still says
 * -ENOMEM; a fork child keeps its thread's cache.
 *
 * Allocations are counted per thread: with a sanitizer, through its malloc
 * hook; on glibc otherwise, by this program's own malloc(), calloc() and
 * realloc(), which forward to glibc's (and can be made to fail).  Elsewhere
 * (musl) the counting tests skip.  Worker threads assert nothing: the main
 * thread asserts after joining.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_SANITIZER 1
#endif
#endif

static _Thread_local int counting;        /* count this thread's allocations */
static _Thread_local unsigned long allocs; /* ... here */
static _Thread_local int failing;          /* and make them fail (not with a sanitizer) */

#if defined(TEST_SANITIZER)
/* (sanitizer/allocator_interface.h: clang's, not gcc 12's) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					      void (*free_hook)(const volatile void *));
#define CAN_COUNT 1
#define CAN_FAIL 0
static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	if (counting)
		allocs++;
}

static void on_free(const volatile void *p)
{
	(void)p;
}

static void counting_init(void)
{
	__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#elif defined(__GLIBC__)
#define CAN_COUNT 1
#define CAN_FAIL 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static bool counted_fails(void)
{
	if (!counting)
		return false;
	allocs++;
	if (!failing)
		return false;
	errno = ENOMEM;
	return true;
}

void *malloc(size_t n)
{
	return counted_fails() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return counted_fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return counted_fails() ? NULL : __libc_realloc(p, n);
}

static void counting_init(void)
{
}
#else
#define CAN_COUNT 0
#define CAN_FAIL 0
static void counting_init(void)
{
}
#endif

#define STRIPE_SHIFT 6 /* 64 segments of 64 units */

static void seg_tree(struct range_lock_tree *tree)
{
	range_lock_tree_init(tree);
	assert_int_equal(range_lock_tree_set_segments(tree, 64, STRIPE_SHIFT), 0);
}

static void in_a_second(struct timespec *ts)
{
	deadline_in(CLOCK_MONOTONIC, 1000, ts);
}

static void no_completion(struct range_lock_async *req, int status)
{
	(void)req;
	(void)status;
	abort(); /* uncontended: held at submission */
}

/*
 * One round of every spanning call kind, uncontended (the counted loop):
 * 2 parts ([0, 99]), 3 (rounded up to a block of 4), 64 (the whole range),
 * a set of 2 spanning members, an asynchronous request held at
 * submission, a shrink to one segment.  Returns the number of calls that
 * did not do what they should.
 */
static int one_round(struct range_lock_tree *tree)
{
	struct range_lock a, b, whole, three;
	struct range_lock_item items[2] = { { &a, RANGE_LOCK_WRITE }, { &b, RANGE_LOCK_READ } };
	struct range_lock_async req;
	struct timespec ts;
	int bad = 0;

	range_lock_init(&a, 0, 99);
	range_lock_init(&b, 200, 299);
	range_lock_init(&three, 1000, 1150);
	range_lock_init_full(&whole);
	range_write_lock(tree, &a);
	range_write_unlock(tree, &a);
	range_read_lock(tree, &a);
	range_read_unlock(tree, &a);
	bad += range_write_trylock(tree, &a) != 1;
	range_write_unlock(tree, &a);
	in_a_second(&ts);
	bad += range_write_timedlock(tree, &a, CLOCK_MONOTONIC, &ts) != 0;
	range_write_unlock(tree, &a);
	bad += range_write_lock_killable(tree, &a) != 0;
	range_write_unlock(tree, &a);
	bad += range_read_lock_interruptible(tree, &a) != 0;
	range_read_unlock(tree, &a);
	range_write_lock(tree, &three);
	range_write_unlock(tree, &three);
	range_write_lock(tree, &whole);
	range_write_unlock(tree, &whole);
	range_read_lock(tree, &whole);
	range_read_unlock(tree, &whole);
	range_lock_many(tree, items, 2);
	range_unlock_many(tree, items, 2);
	bad += range_lock_many_try(tree, items, 2) != 1;
	range_write_unlock(tree, &a);
	range_read_unlock(tree, &b);
	bad += range_lock_async_init(&req, 0, 99, no_completion, NULL) != 0;
	bad += range_write_lock_async(tree, &req) != 0;
	range_write_unlock(tree, &req.lock);
	range_write_lock(tree, &a);
	bad += range_lock_shrink(tree, &a, 0, 9) != 0;
	range_write_unlock(tree, &a);
	return bad;
}

/* After a warm-up, no allocation in 1,000 rounds. */
static void test_spanning_pairs_allocate_nothing(void **state)
{
	struct range_lock_tree tree;
	unsigned long n;
	int bad = 0;

	(void)state;
	if (!CAN_COUNT)
		skip();
	seg_tree(&tree);
	bad += one_round(&tree);
	counting = 1;
	allocs = 0;
	for (int i = 0; i < 1000; i++)
		bad += one_round(&tree);
	counting = 0;
	n = allocs;
	assert_int_equal(bad, 0);
	assert_int_equal(n, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/*
 * A thread with an empty cache and no memory: the calls that return
 * errors say -ENOMEM and leave nothing behind; once it has memory and has
 * done a spanning request, it does the same ones without any.
 */
struct nomem {
	struct range_lock_tree *tree;
	int timed, killable, many, async, after_timed, after_plain;
	unsigned long allocs_after;
};

static void *nomem_thread(void *arg)
{
	struct nomem *x = arg;
	struct range_lock a, b;
	struct range_lock_item items[2] = { { &a, RANGE_LOCK_WRITE }, { &b, RANGE_LOCK_WRITE } };
	struct range_lock_async req;
	struct timespec ts;

	range_lock_init(&a, 0, 99);
	range_lock_init(&b, 200, 299);
	range_lock_async_init(&req, 0, 99, no_completion, NULL);
	in_a_second(&ts);
	counting = failing = 1;
	x->timed = range_write_timedlock(x->tree, &a, CLOCK_MONOTONIC, &ts);
	x->killable = range_write_lock_killable(x->tree, &a);
	x->many = range_lock_many_killable(x->tree, items, 2);
	x->async = range_write_lock_async(x->tree, &req);
	failing = 0;
	range_write_lock(x->tree, &a); /* fills the cache at its unlock */
	range_write_unlock(x->tree, &a);
	failing = 1;
	allocs = 0;
	x->after_timed = range_write_timedlock(x->tree, &a, CLOCK_MONOTONIC, &ts);
	if (!x->after_timed)
		range_write_unlock(x->tree, &a);
	range_write_lock(x->tree, &a); /* (would abort without memory) */
	range_write_unlock(x->tree, &a);
	x->after_plain = 0;
	x->allocs_after = allocs;
	counting = failing = 0;
	return NULL;
}

static void test_no_memory(void **state)
{
	struct range_lock_tree tree;
	struct nomem x = { &tree, 1, 1, 1, 1, 1, 1, 1 };
	pthread_t th;

	(void)state;
	if (!CAN_FAIL)
		skip();
	seg_tree(&tree);
	assert_int_equal(pthread_create(&th, NULL, nomem_thread, &x), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(x.timed, -ENOMEM);
	assert_int_equal(x.killable, -ENOMEM);
	assert_int_equal(x.many, -ENOMEM);
	assert_int_equal(x.async, -ENOMEM);
	assert_int_equal(x.after_timed, 0);
	assert_int_equal(x.after_plain, 0);
	assert_int_equal(x.allocs_after, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0); /* nothing left behind */
}

/*
 * Spans locked on one thread and unlocked on another, in rounds: the
 * locker's cache empties, the unlocker's fills past what it keeps (the
 * rest is freed); each thread exits with blocks in its cache.  Every lock
 * is granted, every range is free afterwards (destroy), and under
 * AddressSanitizer nothing leaks and no block is used after its free.
 */
#define XT_REQS 64
#define XT_ROUNDS 50

struct cross {
	struct range_lock_tree *tree;
	struct range_lock req[XT_REQS];
	int bad;
};

static void *cross_locker(void *arg)
{
	struct cross *x = arg;

	for (int i = 0; i < XT_REQS; i++) {
		/* [i * 128 + 32, i * 128 + 100]: 2 parts, disjoint */
		range_lock_init(&x->req[i], (uint64_t)i * 128 + 32, (uint64_t)i * 128 + 100);
		if (i % 2)
			range_write_lock(x->tree, &x->req[i]);
		else
			range_read_lock(x->tree, &x->req[i]);
	}
	return NULL;
}

static void *cross_unlocker(void *arg)
{
	struct cross *x = arg;

	for (int i = 0; i < XT_REQS; i++) {
		if (i % 2)
			range_write_unlock(x->tree, &x->req[i]);
		else
			range_read_unlock(x->tree, &x->req[i]);
	}
	return NULL;
}

static void test_unlock_on_another_thread(void **state)
{
	static struct cross x;
	struct range_lock_tree tree;
	struct range_lock whole;
	pthread_t th;

	(void)state;
	seg_tree(&tree);
	x.tree = &tree;
	for (int r = 0; r < XT_ROUNDS; r++) {
		assert_int_equal(pthread_create(&th, NULL, cross_locker, &x), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		/* every range held: a whole-range trylock fails */
		range_lock_init_full(&whole);
		assert_int_equal(range_write_trylock(&tree, &whole), 0);
		assert_int_equal(pthread_create(&th, NULL, cross_unlocker, &x), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		/* and here (this thread's cache), relocked and unlocked */
		cross_locker(&x);
		cross_unlocker(&x);
	}
	assert_int_equal(range_write_trylock(&tree, &whole), 1);
	range_write_unlock(&tree, &whole);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/*
 * An asynchronous span that waits: its parts are granted by a release on
 * another thread, whose completions make it hold there; that thread
 * unlocks it (its block goes to that thread's cache, then that thread
 * exits).  Then one is cancelled while it waits.
 */
struct async_x {
	struct range_lock_tree *tree;
	struct range_lock_async req;
	struct range_lock blocker;
	_Atomic int done;
};

static void async_done(struct range_lock_async *req, int status)
{
	struct async_x *x = req->arg;

	if (status == 0)
		range_write_unlock(x->tree, &req->lock); /* on the releasing thread */
	atomic_store(&x->done, status == 0 ? 1 : -1);
}

static void *async_releaser(void *arg)
{
	struct async_x *x = arg;

	range_write_unlock(x->tree, &x->blocker); /* runs the completions here */
	return NULL;
}

static void *async_blocker(void *arg)
{
	struct async_x *x = arg;

	range_write_lock(x->tree, &x->blocker);
	return NULL;
}

static void test_async_span_completes_elsewhere(void **state)
{
	static struct async_x x;
	struct range_lock_tree tree;
	pthread_t th;
	int submitted[20], cancelled[20], done[20];

	(void)state;
	seg_tree(&tree);
	x.tree = &tree;
	for (int r = 0; r < 20; r++) {
		range_lock_init(&x.blocker, 60, 70); /* both parts' segments: [60, 63], [64, 70] */
		assert_int_equal(pthread_create(&th, NULL, async_blocker, &x), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		range_lock_async_init(&x.req, 0, 99, async_done, &x);
		atomic_store(&x.done, 0);
		submitted[r] = range_write_lock_async(&tree, &x.req);
		if (r % 2) {
			cancelled[r] = range_lock_async_cancel(&tree, &x.req);
		} else {
			cancelled[r] = 0;
		}
		assert_int_equal(pthread_create(&th, NULL, async_releaser, &x), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		done[r] = atomic_load(&x.done);
	}
	for (int r = 0; r < 20; r++) {
		assert_int_equal(submitted[r], -EINPROGRESS);
		assert_int_equal(cancelled[r], 0);
		assert_int_equal(done[r], r % 2 ? 0 : 1);
	}
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* A fork child keeps the forking thread's cache: no allocation there. */
static void test_fork_child_keeps_cache(void **state)
{
	struct range_lock_tree tree;
	int status;
	pid_t pid;

	(void)state;
	if (!CAN_COUNT)
		skip();
	seg_tree(&tree);
	one_round(&tree);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad;

		alarm(10);
		counting = 1;
		allocs = 0;
		bad = 0;
		for (int i = 0; i < 100; i++)
			bad += one_round(&tree);
		counting = 0;
		_exit(bad ? 2 : allocs ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spanning_pairs_allocate_nothing),
		cmocka_unit_test(test_no_memory),
		cmocka_unit_test(test_unlock_on_another_thread),
		cmocka_unit_test(test_async_span_completes_elsewhere),
		cmocka_unit_test(test_fork_child_keeps_cache),
	};

	watchdog(120);
	counting_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
