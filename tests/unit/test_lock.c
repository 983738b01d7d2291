/* SPDX-License-Identifier: MIT */
/*
 * The semantics of every public call, with real threads.  Built three times:
 * against librangelock as configured, against the forced POSIX backend and
 * against the checking mode (see CMakeLists.txt).
 */
#include "test_util.h"

#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

/* ---- a thread that makes one lock call and holds until told ----------- */

enum call {
	C_READ, C_WRITE, C_READ_INTR, C_WRITE_INTR, C_READ_KILL, C_WRITE_KILL,
	C_READ_TIMED, C_WRITE_TIMED,
};

struct locker {
	struct range_lock_tree *tree;
	struct range_lock req;
	uint64_t start, last;
	enum call call;
	clockid_t clk;
	long timeout_ms;
	atomic_int done;      /* the lock call returned */
	int ret;
	int order;            /* 1, 2, ...: position among acquisitions */
	atomic_int release;   /* main thread: unlock now */
	atomic_int released;
	pthread_t th;
};

static atomic_int order_counter;

static bool is_read_call(enum call c)
{
	return c == C_READ || c == C_READ_INTR || c == C_READ_KILL || c == C_READ_TIMED;
}

static void *locker_main(void *arg)
{
	struct locker *l = arg;
	struct timespec ts;
	int r = 0;

	range_lock_init(&l->req, l->start, l->last);
	switch (l->call) {
	case C_READ: range_read_lock(l->tree, &l->req); break;
	case C_WRITE: range_write_lock(l->tree, &l->req); break;
	case C_READ_INTR: r = range_read_lock_interruptible(l->tree, &l->req); break;
	case C_WRITE_INTR: r = range_write_lock_interruptible(l->tree, &l->req); break;
	case C_READ_KILL: r = range_read_lock_killable(l->tree, &l->req); break;
	case C_WRITE_KILL: r = range_write_lock_killable(l->tree, &l->req); break;
	case C_READ_TIMED:
		deadline_in(l->clk, l->timeout_ms, &ts);
		if (!l->timeout_ms) /* 0: a deadline ~292 years away (2038
				     * where time_t has 32 bits) */
			ts.tv_sec = sizeof(time_t) > 4 ? (time_t)(INT64_MAX / 1000000000LL)
						       : (time_t)INT32_MAX;
		r = range_read_timedlock(l->tree, &l->req, l->clk, &ts);
		break;
	case C_WRITE_TIMED:
		deadline_in(l->clk, l->timeout_ms, &ts);
		if (!l->timeout_ms)
			ts.tv_sec = sizeof(time_t) > 4 ? (time_t)(INT64_MAX / 1000000000LL)
						       : (time_t)INT32_MAX;
		r = range_write_timedlock(l->tree, &l->req, l->clk, &ts);
		break;
	}
	/* Holding: the wait below must not be cancelled, or a cancelled
	 * holder would keep its range.  Disabled, and sched_yield() rather
	 * than nanosleep() (a cancellation point) for good measure. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	l->ret = r;
	if (r == 0)
		l->order = atomic_fetch_add(&order_counter, 1) + 1;
	atomic_store(&l->done, 1);
	if (r != 0)
		return NULL;
	while (!atomic_load(&l->release))
		sched_yield();
	if (is_read_call(l->call))
		range_read_unlock(l->tree, &l->req);
	else
		range_write_unlock(l->tree, &l->req);
	atomic_store(&l->released, 1);
	return NULL;
}

static void start_timed(struct locker *l, struct range_lock_tree *tree, enum call c,
			uint64_t start, uint64_t last, long timeout_ms)
{
	memset(l, 0, sizeof(*l));
	l->tree = tree;
	l->call = c;
	l->start = start;
	l->last = last;
	l->clk = CLOCK_MONOTONIC;
	l->timeout_ms = timeout_ms;
	pthread_create(&l->th, NULL, locker_main, l);
}

static void start(struct locker *l, struct range_lock_tree *tree, enum call c,
		  uint64_t s, uint64_t e)
{
	start_timed(l, tree, c, s, e, 100);
}

/* Start a locker and wait until it either holds or waits in the tree. */
static void start_waiting(struct locker *l, struct range_lock_tree *tree,
			  enum call c, uint64_t s, uint64_t e, uint64_t waiters)
{
	start(l, tree, c, s, e);
	assert_true(wait_for_waiters(tree, waiters));
}

static bool wait_done(struct locker *l)
{
	for (int i = 0; i < 5000 && !atomic_load(&l->done); i++)
		sleep_ms(1);
	return atomic_load(&l->done);
}

/*
 * Signal @l until its call returns (false after 5 s).  One signal is not
 * enough: a handler that runs while the waiter is awake -- not yet asleep,
 * or preempted just after a wake-up on a loaded machine -- is not reported
 * (documented), so a test that sends one signal would be flaky.
 */
static bool interrupt_until_done(struct locker *l)
{
	for (int i = 0; i < 500 && !atomic_load(&l->done); i++) {
		pthread_kill(l->th, SIGUSR1);
		sleep_ms(10);
	}
	return atomic_load(&l->done);
}

static void finish(struct locker *l)
{
	atomic_store(&l->release, 1);
	pthread_join(l->th, NULL);
}

static struct range_lock_stats stats_storage;

static void new_tree(struct range_lock_tree *tree)
{
	range_lock_tree_init(tree);
	assert_int_equal(range_lock_tree_enable_stats(tree, &stats_storage), 0);
	atomic_store(&order_counter, 0);
}

/* Strict FIFO (the kernel patch's semantics): the tests of arrival order. */
static void new_fifo_tree(struct range_lock_tree *tree)
{
	new_tree(tree);
	assert_int_equal(range_lock_tree_set_fifo(tree, 1), 0);
}

/* ---- setup calls ------------------------------------------------------ */

static void test_init_and_destroy(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock a, b;
	DEFINE_RANGE_LOCK(c, 5, 9);
	DEFINE_RANGE_LOCK_FULL(d);
	static DEFINE_RANGE_LOCK_TREE(static_tree);

	range_lock_tree_init(&tree);
	assert_int_equal(range_lock_init(&a, 10, 9), -EINVAL);
	assert_int_equal(range_lock_init(&a, 3, 3), 0);
	assert_int_equal(range_lock_init(&b, 0, RANGE_LOCK_FULL), 0);
	assert_int_equal(c.start, 5);
	assert_int_equal(c.last, 9);
	assert_true(d.last == RANGE_LOCK_FULL);
	range_lock_init_full(&b);
	assert_true(b.start == 0 && b.last == UINT64_MAX);

	assert_int_equal(range_lock_tree_destroy(&tree), 0);
	range_write_lock(&tree, &a);
	assert_int_equal(range_lock_tree_destroy(&tree), -EBUSY);
	range_write_unlock(&tree, &a);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);

	/* A statically initialised tree and request work as they are. */
	range_write_lock(&static_tree, &c);
	assert_int_equal(range_write_trylock(&static_tree, &d), 0);
	range_write_unlock(&static_tree, &c);
	assert_int_equal(range_write_trylock(&static_tree, &d), 1);
	range_write_unlock(&static_tree, &d);
	assert_int_equal(range_lock_tree_destroy(&static_tree), 0);

	/* A request may be used again after its unlock. */
	for (int i = 0; i < 3; i++) {
		range_read_lock(&tree, &a);
		range_read_unlock(&tree, &a);
	}
	assert_string_equal(rangelock_version(), RANGELOCK_VERSION_STRING);
	/* The sizes the README states: 64 and 64 with 64-bit pointers, 56 and
	 * 48 with 32-bit ones; 8-aligned everywhere (fast-path tag bits). */
	assert_int_equal(sizeof(struct range_lock), sizeof(void *) == 8 ? 64 : 56);
	assert_int_equal(sizeof(struct range_lock_tree), sizeof(void *) == 8 ? 64 : 48);
	assert_int_equal(_Alignof(struct range_lock), 8);
	assert_int_equal(_Alignof(struct range_lock_stats), 8);
}

/* ---- trylock ---------------------------------------------------------- */

static void test_trylock_rules(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock r1, r2, w1, w2, x;

	range_lock_tree_init(&tree);
	range_lock_init(&r1, 0, 9);
	range_lock_init(&r2, 5, 15);
	assert_int_equal(range_read_trylock(&tree, &r1), 1);
	assert_int_equal(range_read_trylock(&tree, &r2), 1); /* readers share */

	range_lock_init(&w1, 9, 9); /* touches r1 and r2 at one unit */
	assert_int_equal(range_write_trylock(&tree, &w1), 0);
	range_lock_init(&w1, 16, 20); /* adjacent, not overlapping */
	assert_int_equal(range_write_trylock(&tree, &w1), 1);
	range_lock_init(&x, 20, 20);
	assert_int_equal(range_read_trylock(&tree, &x), 0);
	assert_int_equal(range_write_trylock(&tree, &x), 0);
	range_lock_init(&w2, 21, RANGE_LOCK_FULL);
	assert_int_equal(range_write_trylock(&tree, &w2), 1);
	range_lock_init_full(&x);
	assert_int_equal(range_read_trylock(&tree, &x), 0);

	range_read_unlock(&tree, &r1);
	range_read_unlock(&tree, &r2);
	range_write_unlock(&tree, &w1);
	range_write_unlock(&tree, &w2);
	/* Nothing was left behind by the failed trylocks. */
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
	assert_int_equal(range_write_trylock(&tree, &x), 1);
	range_write_unlock(&tree, &x);
}

/* In a FIFO tree a waiting writer counts for trylock: no stealing. */
static void test_trylock_no_stealing(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock r, probe;
	struct locker w;

	new_fifo_tree(&tree);
	range_lock_init(&r, 0, 9);
	range_read_lock(&tree, &r);
	start_waiting(&w, &tree, C_WRITE, 5, 20, 1);

	range_lock_init(&probe, 0, 3); /* intersects only the held reader */
	assert_int_equal(range_read_trylock(&tree, &probe), 1);
	range_read_unlock(&tree, &probe);
	range_lock_init(&probe, 15, 15); /* intersects the waiting writer */
	assert_int_equal(range_read_trylock(&tree, &probe), 0);
	range_lock_init(&probe, 21, 30); /* intersects nothing */
	assert_int_equal(range_write_trylock(&tree, &probe), 1);
	range_write_unlock(&tree, &probe);

	range_read_unlock(&tree, &r);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* ---- exclusion and ordering ------------------------------------------- */

static void test_writer_waits_for_intersecting(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, other;
	struct locker w;

	new_tree(&tree);
	range_lock_init(&held, 0, 99);
	range_read_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 50, 60, 1);
	sleep_ms(50);
	assert_false(atomic_load(&w.done));

	/* A request that overlaps nothing is never blocked, even now. */
	range_lock_init(&other, 100, 200);
	range_write_lock(&tree, &other);
	range_write_unlock(&tree, &other);

	range_read_unlock(&tree, &held);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(nr_waiting(&tree), 0);
}

/* FIFO tree: conflicting requests are granted in arrival order; a reader
 * behind a waiting writer waits behind it. */
static void test_fifo_and_reader_behind_writer(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker w1, r1, w2, r2;

	new_fifo_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_read_lock(&tree, &held);
	start_waiting(&w1, &tree, C_WRITE, 0, 9, 1);   /* waits for held */
	start_waiting(&r1, &tree, C_READ, 5, 5, 2);    /* behind w1 */
	start_waiting(&w2, &tree, C_WRITE, 0, 0, 3);   /* behind w1 */
	start_waiting(&r2, &tree, C_READ, 5, 9, 4);    /* behind w1 */
	sleep_ms(30);
	assert_false(atomic_load(&r1.done));
	assert_false(atomic_load(&r2.done));

	range_read_unlock(&tree, &held);
	assert_true(wait_done(&w1));
	sleep_ms(30);
	assert_false(atomic_load(&r1.done));
	assert_false(atomic_load(&w2.done));
	finish(&w1);
	/* r1, w2 and r2 each wait for w1 only: w2 [0,0] intersects neither
	 * r1 [5,5] nor r2 [5,9], and r1 and r2 are both readers. */
	assert_true(wait_done(&r1));
	assert_true(wait_done(&w2));
	assert_true(wait_done(&r2));
	finish(&r1);
	finish(&w2);
	finish(&r2);
	assert_int_equal(w1.order, 1);
	assert_true(r1.order > 1 && w2.order > 1 && r2.order > 1);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* FIFO tree: writers on the same range are granted strictly in arrival order. */
static void test_fifo_writers(void **state)
{
	(void)state;
	enum { N = 6 };
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker w[N];

	new_fifo_tree(&tree);
	range_lock_init(&held, 0, 0);
	range_write_lock(&tree, &held);
	for (int i = 0; i < N; i++)
		start_waiting(&w[i], &tree, (i & 1) ? C_READ : C_WRITE, 0, 10 + i,
			      (uint64_t)i + 1);
	range_write_unlock(&tree, &held);
	for (int i = 0; i < N; i++) {
		assert_true(wait_done(&w[i]));
		/* The next one cannot get in while this one holds. */
		if (i + 1 < N) {
			sleep_ms(5);
			assert_false(atomic_load(&w[i + 1].done));
		}
		finish(&w[i]);
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(w[i].order, i + 1);
}

/* ---- downgrade -------------------------------------------------------- */

static void test_downgrade(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker r1, r2, w2, r3;

	new_tree(&tree);
	range_lock_init(&held, 0, 99);
	range_write_lock(&tree, &held);
	start_waiting(&r1, &tree, C_READ, 0, 9, 1);
	start_waiting(&w2, &tree, C_WRITE, 20, 29, 2);
	start_waiting(&r2, &tree, C_READ, 50, 59, 3);
	start_waiting(&r3, &tree, C_READ, 25, 25, 4); /* behind w2 */

	range_downgrade_write(&tree, &held);
	assert_true(wait_done(&r1));
	assert_true(wait_done(&r2));
	sleep_ms(30);
	assert_false(atomic_load(&w2.done)); /* still waits for our read hold */
	assert_false(atomic_load(&r3.done)); /* waits behind w2 */

	range_read_unlock(&tree, &held);
	assert_true(wait_done(&w2));
	sleep_ms(20);
	assert_false(atomic_load(&r3.done));
	finish(&w2);
	assert_true(wait_done(&r3));
	finish(&r1);
	finish(&r2);
	finish(&r3);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* ---- signals ---------------------------------------------------------- */

static atomic_int handler_runs;

static void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handler_runs, 1);
}

static void install_handler(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

static void interruptible_case(bool restart, enum call c)
{
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker l, later;

	install_handler(restart);
	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_waiting(&l, &tree, c, 0, 9, 1);
	start_waiting(&later, &tree, C_WRITE, 5, 15, 2); /* counted l */
	sleep_ms(20);
	assert_true(interrupt_until_done(&l));
	finish(&l);
	assert_int_equal(l.ret, -EINTR);
	assert_int_equal(nr_waiting(&tree), 1);
	/* The give-up released what l blocked: later now waits for held only. */
	range_write_unlock(&tree, &held);
	assert_true(wait_done(&later));
	finish(&later);
	assert_int_equal(later.ret, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

static void test_interruptible_eintr(void **state)
{
	(void)state;
	interruptible_case(true, C_WRITE_INTR);
	interruptible_case(false, C_WRITE_INTR);
	interruptible_case(true, C_READ_INTR);
	interruptible_case(false, C_READ_INTR);
}

/* Plain, killable and timed calls never return early on signals. */
static void test_signals_do_not_end_plain_waits(void **state)
{
	(void)state;
	const enum call calls[] = { C_READ, C_WRITE, C_READ_KILL, C_WRITE_TIMED };

	for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]); k++) {
		for (int restart = 0; restart < 2; restart++) {
			struct range_lock_tree tree;
			struct range_lock held;
			struct locker l;

			install_handler(restart);
			new_tree(&tree);
			range_lock_init(&held, 0, 9);
			range_write_lock(&tree, &held);
			start_timed(&l, &tree, calls[k], 0, 9, 5000);
			assert_true(wait_for_waiters(&tree, 1));
			atomic_store(&handler_runs, 0);
			for (int i = 0; i < 20; i++) {
				pthread_kill(l.th, SIGUSR1);
				sleep_ms(2);
			}
			assert_false(atomic_load(&l.done));
			range_write_unlock(&tree, &held);
			assert_true(wait_done(&l));
			finish(&l);
			assert_int_equal(l.ret, 0);
			/* After the join: ThreadSanitizer defers handlers while
			 * a thread sits in a raw syscall. */
			assert_true(atomic_load(&handler_runs) > 0);
			assert_int_equal(range_lock_tree_destroy(&tree), 0);
		}
	}
}

/* ---- cancellation ----------------------------------------------------- */

static void test_killable_cancel(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker k, later;
	void *res;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_waiting(&k, &tree, C_WRITE_KILL, 0, 9, 1);
	start_waiting(&later, &tree, C_READ, 0, 9, 2);
	pthread_cancel(k.th);
	pthread_join(k.th, &res);
	assert_true(res == PTHREAD_CANCELED);
	assert_false(atomic_load(&k.done));
	assert_int_equal(nr_waiting(&tree), 1);
	range_write_unlock(&tree, &held);
	assert_true(wait_done(&later)); /* it no longer counts k */
	finish(&later);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
	assert_int_equal(stats_storage.gave_up_cancel, 1);
}

/* Cancellation racing the grant: the cancelled thread never keeps the
 * range, nothing is left in the tree, nobody hangs. */
static void test_killable_cancel_races_grant(void **state)
{
	(void)state;
	for (int i = 0; i < 200; i++) {
		struct range_lock_tree tree;
		struct range_lock held, probe;
		struct locker k;
		void *res;

		new_tree(&tree);
		range_lock_init(&held, 0, 9);
		range_write_lock(&tree, &held);
		start_waiting(&k, &tree, C_READ_KILL, 0, 9, 1);
		if (i & 1) {
			range_write_unlock(&tree, &held);
			pthread_cancel(k.th);
		} else {
			pthread_cancel(k.th);
			range_write_unlock(&tree, &held);
		}
		atomic_store(&k.release, 1);
		pthread_join(k.th, &res);
		/* Either it was cancelled while waiting, or it got the range
		 * first and unlocked it (it is not a cancellation point then). */
		assert_true(res == PTHREAD_CANCELED || atomic_load(&k.released));
		range_lock_init_full(&probe);
		if (range_write_trylock(&tree, &probe) != 1) {
			range_lock_tree_dump(&tree, stderr);
			fail_msg("iteration %d: left in the tree (res %p, done %d, ret %d)",
				 i, res, atomic_load(&k.done), k.ret);
		}
		range_write_unlock(&tree, &probe);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/* ---- timeouts --------------------------------------------------------- */

static void test_timedlock_validation(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, r;
	struct timespec ts;

	range_lock_tree_init(&tree);
	range_lock_init(&r, 0, 9);
	/* A free range is taken whatever time the deadline says. */
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), 0);
	range_write_unlock(&tree, &r);
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_REALTIME, &ts), 0);
	range_read_unlock(&tree, &r);

	range_lock_init(&held, 5, 5);
	range_write_lock(&tree, &held);
	ts.tv_sec = 1;
	ts.tv_nsec = -1;
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = 1000000000L;
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), -EINVAL);
	deadline_in(CLOCK_MONOTONIC, 10, &ts);
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_PROCESS_CPUTIME_ID, &ts), -EINVAL);
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, NULL), -EINVAL);
	/* A passed deadline on a busy range: -ETIMEDOUT at once. */
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_REALTIME, &ts), -ETIMEDOUT);
	range_write_unlock(&tree, &held);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/*
 * A bad clock or deadline is -EINVAL before anything else, as glibc's
 * pthread_rwlock_timedwrlock() and _clockwrlock() answer: on a free range
 * too, with nothing taken (the same request is used again at once, so a
 * request left linked would abort), whatever the tree's state.
 */
static void test_timedlock_bad_deadline_free_range(void **state)
{
	(void)state;
	static const clockid_t bad_clocks[] = { CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, -1, 12345 };
	static const long bad_ns[] = { -1, 1000000000L, -1000000000L, 1999999999L };
	const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	struct range_lock_tree tree;
	struct range_lock r, other;
	struct timespec ts;

	for (int fifo = 0; fifo < 2; fifo++) {
		range_lock_tree_init(&tree);
		assert_int_equal(range_lock_tree_set_fifo(&tree, fifo), 0);
		for (int reader = 0; reader < 2; reader++) {
			int (*timed)(struct range_lock_tree *, struct range_lock *, clockid_t,
				     const struct timespec *) =
				reader ? range_read_timedlock : range_write_timedlock;

			range_lock_init(&r, 0, 9);
			for (int c = 0; c < 2; c++) {
				for (unsigned i = 0; i < sizeof(bad_ns) / sizeof(bad_ns[0]); i++) {
					deadline_in(clocks[c], 1000, &ts);
					ts.tv_nsec = bad_ns[i];
					assert_int_equal(timed(&tree, &r, clocks[c], &ts), -EINVAL);
					ts.tv_sec = -1; /* passed, and bad */
					assert_int_equal(timed(&tree, &r, clocks[c], &ts), -EINVAL);
				}
				assert_int_equal(timed(&tree, &r, clocks[c], NULL), -EINVAL);
			}
			deadline_in(CLOCK_MONOTONIC, 1000, &ts);
			for (unsigned i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++)
				assert_int_equal(timed(&tree, &r, bad_clocks[i], &ts), -EINVAL);
			/* Nothing taken: a writer of everything gets in. */
			range_lock_init_full(&other);
			assert_int_equal(range_write_trylock(&tree, &other), 1);
			range_write_unlock(&tree, &other);
			/* The request is free to use: a good deadline takes it. */
			assert_int_equal(timed(&tree, &r, CLOCK_MONOTONIC, &ts), 0);
			if (reader)
				range_read_unlock(&tree, &r);
			else
				range_write_unlock(&tree, &r);
		}
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/*
 * POSIX (and glibc's tst-abstime): only tv_nsec outside [0, 999999999] makes
 * a deadline invalid; a negative tv_sec is a deadline that has passed.
 */
static void test_timedlock_negative_tv_sec(void **state)
{
	(void)state;
	const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
	const time_t secs[] = { -1, -2, INT32_MIN };
	struct range_lock_tree tree;
	struct range_lock held, r;
	struct range_lock_stats st;
	struct timespec ts;
	uint64_t t0;

	new_tree(&tree);
	range_lock_init(&r, 0, 9);
	/* A free range is taken whatever the deadline says. */
	ts.tv_sec = -2;
	ts.tv_nsec = 0;
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), 0);
	range_write_unlock(&tree, &r);
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_REALTIME, &ts), 0);
	range_read_unlock(&tree, &r);

	/* A busy range: -ETIMEDOUT at once, and nothing left in the tree. */
	range_lock_init(&held, 5, 5);
	range_write_lock(&tree, &held);
	t0 = mono_ns();
	for (int c = 0; c < 2; c++) {
		for (int s = 0; s < 3; s++) {
			ts.tv_sec = secs[s];
			ts.tv_nsec = s == 0 ? 999999999L : 0;
			assert_int_equal(range_read_timedlock(&tree, &r, clocks[c], &ts), -ETIMEDOUT);
			assert_int_equal(range_write_timedlock(&tree, &r, clocks[c], &ts), -ETIMEDOUT);
		}
	}
	assert_true(mono_ns() - t0 < 1000000000u);
	assert_int_equal(range_lock_tree_get_stats(&tree, &st), 0);
	assert_int_equal(st.gave_up_timeout, 12);
	assert_int_equal(st.waiting_now, 0);
	/* Still invalid with a negative tv_sec: tv_nsec out of range. */
	ts.tv_sec = -1;
	ts.tv_nsec = -1;
	assert_int_equal(range_read_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts), -EINVAL);
	ts.tv_nsec = 1000000000L;
	assert_int_equal(range_write_timedlock(&tree, &r, CLOCK_REALTIME, &ts), -EINVAL);
	/* The timed-out request left nothing behind: [0, 9] minus the held
	 * unit is free, and the tree empties. */
	range_lock_init(&r, 6, 9);
	assert_int_equal(range_write_trylock(&tree, &r), 1);
	range_write_unlock(&tree, &r);
	range_write_unlock(&tree, &held);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

static void test_timedlock_times_out(void **state)
{
	(void)state;
	const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };

	for (int c = 0; c < 2; c++) {
		struct range_lock_tree tree;
		struct range_lock held, r;
		struct timespec ts;
		uint64_t t0, t1;

		range_lock_tree_init(&tree);
		range_lock_init(&held, 0, 9);
		range_lock_init(&r, 9, 19);
		range_read_lock(&tree, &held);
		t0 = mono_ns();
		deadline_in(clocks[c], 60, &ts);
		assert_int_equal(range_write_timedlock(&tree, &r, clocks[c], &ts), -ETIMEDOUT);
		t1 = mono_ns();
		assert_true(t1 - t0 >= 55000000u);
		assert_true(t1 - t0 < 2000000000u);
		/* The request left the tree: a writer on its range gets in. */
		range_lock_init(&r, 10, 19);
		assert_int_equal(range_write_trylock(&tree, &r), 1);
		range_write_unlock(&tree, &r);
		/* Granted before the deadline: 0. */
		range_lock_init(&r, 9, 19);
		deadline_in(clocks[c], 2000, &ts);
		range_read_unlock(&tree, &held);
		assert_int_equal(range_write_timedlock(&tree, &r, clocks[c], &ts), 0);
		range_write_unlock(&tree, &r);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/* ---- the give-up path un-accounts exactly the requests that counted it -- */

/*
 * held: writer [0,9].  g (gives up) arrives, then later reader r and later
 * writer w, all on [0,9].  If g is a reader, r never counted g (readers do
 * not block readers): g's give-up must not decrement r, or r would run
 * while held still writes.  w counted g and must be decremented.
 */
/* Returns false (after cleaning up) when a timed g left before r and w were
 * both in the tree -- a loaded machine -- so the case must run again with a
 * longer timeout. */
static bool giveup_case_try(enum call g_call, bool timeout, long timeout_ms)
{
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker g, r, w;
	bool arrived;

	install_handler(false);
	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_timed(&g, &tree, g_call, 0, 9, timeout ? timeout_ms : 100000);
	arrived = wait_for_waiters(&tree, 1);
	start(&r, &tree, C_READ, 0, 9);
	arrived = arrived && wait_for_waiters(&tree, 2);
	start(&w, &tree, C_WRITE, 0, 9);
	arrived = arrived && wait_for_waiters(&tree, 3);
	if (!arrived) {
		assert_true(timeout); /* only a timeout can end g this early */
		range_write_unlock(&tree, &held);
		/* Release all before joining any: r may wait behind w. */
		atomic_store(&g.release, 1);
		atomic_store(&r.release, 1);
		atomic_store(&w.release, 1);
		finish(&g);
		finish(&r);
		finish(&w);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
		return false;
	}
	if (!timeout)
		assert_true(interrupt_until_done(&g));
	assert_true(wait_done(&g));
	assert_int_equal(g.ret, timeout ? -ETIMEDOUT : -EINTR);
	finish(&g);
	sleep_ms(30);
	assert_false(atomic_load(&r.done)); /* held still writes */
	assert_false(atomic_load(&w.done));
	range_write_unlock(&tree, &held);
	assert_true(wait_done(&r));
	sleep_ms(30);
	assert_false(atomic_load(&w.done)); /* w still waits for r */
	finish(&r);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
	return true;
}

static void giveup_case(enum call g_call, bool timeout)
{
	long ms = 150;

	while (!giveup_case_try(g_call, timeout, ms)) {
		ms *= 4;
		assert_true(ms <= 10000);
	}
}

static void test_giveup_unaccounting(void **state)
{
	(void)state;
	giveup_case(C_READ_TIMED, true);
	giveup_case(C_WRITE_TIMED, true);
	giveup_case(C_READ_INTR, false);
	giveup_case(C_WRITE_INTR, false);
}

/* ---- misuse ends the process with a message ---------------------------- */

static void expect_abort(void (*fn)(void), const char *needle)
{
	struct child_result r;

	run_child(fn, &r);
	if (!strstr(r.out, needle))
		print_error("stderr was: '%s', wanted '%s'\n", r.out, needle);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	assert_non_null(strstr(r.out, needle));
}

static struct range_lock_tree misuse_tree;

static void unlock_not_held(void)
{
	struct range_lock r;
	range_lock_init(&r, 3, 7);
	range_write_unlock(&misuse_tree, &r);
}

static void read_unlock_of_write(void)
{
	struct range_lock r;
	range_lock_init(&r, 3, 7);
	range_write_lock(&misuse_tree, &r);
	range_read_unlock(&misuse_tree, &r);
}

static void write_unlock_of_read(void)
{
	struct range_lock r;
	range_lock_init(&r, 3, 7);
	range_read_lock(&misuse_tree, &r);
	range_write_unlock(&misuse_tree, &r);
}

static void downgrade_of_read(void)
{
	struct range_lock r;
	range_lock_init(&r, 3, 7);
	range_read_lock(&misuse_tree, &r);
	range_downgrade_write(&misuse_tree, &r);
}

static void lock_twice(void)
{
	struct range_lock r;
	range_lock_init(&r, 3, 7);
	range_read_lock(&misuse_tree, &r);
	range_read_lock(&misuse_tree, &r);
}

static void unlock_in_other_tree(void)
{
	struct range_lock_tree other;
	struct range_lock r, s;
	range_lock_tree_init(&other);
	range_lock_init(&r, 3, 7);
	range_lock_init(&s, 100, 107);
	range_write_lock(&misuse_tree, &r);
	range_write_lock(&other, &s);
	range_write_unlock(&other, &r);
}

/*
 * A tree in MAP_SHARED memory used by the same code in two processes: the
 * second process meets the first one's request (at the same address, after
 * fork()) in the tree.  The message must name that possibility.
 */
static void tree_in_two_processes(void)
{
	struct range_lock_tree *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct range_lock r;
	int status;
	pid_t pid;

	if (t == MAP_FAILED)
		return;
	range_lock_tree_init(t);
	range_lock_init(&r, 3, 7);
	range_write_lock(t, &r);
	pid = fork();
	if (pid == 0) {
		range_write_lock(t, &r); /* this process's r: never locked here */
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)
		abort();
}

/* A request holding an empty tree through the fast path is in a tree too:
 * locking it in a second, empty tree must abort, not succeed. */
static void lock_in_two_trees(void)
{
	struct range_lock_tree other;
	struct range_lock r;
	range_lock_tree_init(&other);
	range_lock_init(&r, 3, 7);
	range_write_lock(&misuse_tree, &r);
	range_read_lock(&other, &r);
}

static void trylock_in_two_trees(void)
{
	struct range_lock_tree other;
	struct range_lock r;
	range_lock_tree_init(&other);
	range_lock_init(&r, 3, 7);
	range_read_lock(&misuse_tree, &r);
	range_write_trylock(&other, &r);
}

static void test_misuse_aborts(void **state)
{
	(void)state;
	range_lock_tree_init(&misuse_tree);
	expect_abort(unlock_not_held, "range_write_unlock([3, 7]): request is not in this tree");
	expect_abort(read_unlock_of_write, "range_read_unlock([3, 7]): range is held for writing");
	expect_abort(write_unlock_of_read, "range_write_unlock([3, 7]): range is held for reading");
	expect_abort(downgrade_of_read, "range_downgrade_write([3, 7]): range is held for reading");
	expect_abort(lock_twice, "range_read_lock([3, 7]): request is already in a tree");
	expect_abort(tree_in_two_processes, "range_write_lock([3, 7]): request is already "
		     "in a tree (locked twice? or is the tree used from another process?");
	expect_abort(unlock_in_other_tree, "range_write_unlock([3, 7]): request is not in this tree");
	expect_abort(lock_in_two_trees, "range_read_lock([3, 7]): request is already in a tree");
	expect_abort(trylock_in_two_trees, "range_write_trylock([3, 7]): request is already in a tree");
}

/*
 * A request whose init failed (start > last: range_lock_init() and
 * range_lock_async_init() return -EINVAL) is refused by every call that
 * takes it, with a message naming the bad range -- not locked as some
 * other range, and not reported as something else.
 */
static int bad_case;

static void no_completion(struct range_lock_async *req, int status)
{
	(void)req;
	(void)status;
}

static void bad_range_child(void)
{
	struct timespec ts;
	struct range_lock good, bad;
	struct range_lock_item set[2] = { { &good, RANGE_LOCK_READ },
					  { &bad, RANGE_LOCK_WRITE } };
	struct range_lock_async req;
	int k = bad_case;

	range_lock_tree_init(&misuse_tree);
	range_lock_init(&good, 20, 29);
	if (range_lock_init(&bad, 10, 5) != -EINVAL ||
	    range_lock_async_init(&req, 10, 5, no_completion, NULL) != -EINVAL)
		_exit(3);
	deadline_in(CLOCK_MONOTONIC, 1000, &ts);
	switch (k) {
	case 0: range_read_lock(&misuse_tree, &bad); break;
	case 1: range_write_lock(&misuse_tree, &bad); break;
	case 2: range_read_lock_nested(&misuse_tree, &bad, 1); break;
	case 3: range_write_lock_nested(&misuse_tree, &bad, 1); break;
	case 4: range_read_lock_interruptible(&misuse_tree, &bad); break;
	case 5: range_write_lock_interruptible(&misuse_tree, &bad); break;
	case 6: range_read_lock_killable(&misuse_tree, &bad); break;
	case 7: range_write_lock_killable(&misuse_tree, &bad); break;
	case 8: range_write_lock_killable_nested(&misuse_tree, &bad, 1); break;
	case 9: range_read_timedlock(&misuse_tree, &bad, CLOCK_MONOTONIC, &ts); break;
	case 10: range_write_timedlock(&misuse_tree, &bad, CLOCK_REALTIME, &ts); break;
	case 11: range_read_trylock(&misuse_tree, &bad); break;
	case 12: range_write_trylock(&misuse_tree, &bad); break;
	case 13: range_lock_many(&misuse_tree, set, 2); break;
	case 14: range_lock_many_interruptible(&misuse_tree, set, 2); break;
	case 15: range_lock_many_killable(&misuse_tree, set, 2); break;
	case 16: range_lock_many_timed(&misuse_tree, set, 2, CLOCK_MONOTONIC, &ts); break;
	case 17: range_lock_many_try(&misuse_tree, set, 2); break;
	case 18: range_read_lock_async(&misuse_tree, &req); break;
	case 19: range_write_lock_async(&misuse_tree, &req); break;
	case 20: range_lock_grow(&misuse_tree, &bad, 0, 99); break;
	case 21: range_lock_grow_interruptible(&misuse_tree, &bad, 0, 99); break;
	case 22: range_lock_grow_killable(&misuse_tree, &bad, 0, 99); break;
	case 23: range_lock_grow_timed(&misuse_tree, &bad, 0, 99, CLOCK_MONOTONIC, &ts); break;
	case 24: range_lock_grow_try(&misuse_tree, &bad, 0, 99); break;
	case 25: range_lock_shrink(&misuse_tree, &bad, 6, 7); break;
	case 26: range_read_unlock(&misuse_tree, &bad); break;
	case 27: range_write_unlock(&misuse_tree, &bad); break;
	case 28: range_downgrade_write(&misuse_tree, &bad); break;
	case 29: range_unlock_many(&misuse_tree, set + 1, 1); break;
	/* The same request after a good lock of another one in the tree
	 * (the tree path, not the lock word) and on a reader-biased tree. */
	case 30:
		range_write_lock(&misuse_tree, &good);
		range_write_lock(&misuse_tree, &bad);
		break;
	case 31:
		range_read_lock(&misuse_tree, &good);
		range_read_unlock(&misuse_tree, &good);
		range_read_lock(&misuse_tree, &good);
		range_read_lock(&misuse_tree, &bad);
		break;
	default: break;
	}
	_exit(4); /* not refused */
}

static void test_bad_range_aborts(void **state)
{
	static const char *const call[] = {
		"range_read_lock", "range_write_lock", "range_read_lock_nested",
		"range_write_lock_nested", "range_read_lock_interruptible",
		"range_write_lock_interruptible", "range_read_lock_killable",
		"range_write_lock_killable", "range_write_lock_killable_nested",
		"range_read_timedlock", "range_write_timedlock", "range_read_trylock",
		"range_write_trylock", "range_lock_many", "range_lock_many_interruptible",
		"range_lock_many_killable", "range_lock_many_timed", "range_lock_many_try",
		"range_read_lock_async", "range_write_lock_async", "range_lock_grow",
		"range_lock_grow_interruptible", "range_lock_grow_killable",
		"range_lock_grow_timed", "range_lock_grow_try", "range_lock_shrink",
		"range_read_unlock", "range_write_unlock", "range_downgrade_write",
		"range_unlock_many", "range_write_lock", "range_read_lock",
	};
	struct child_result r;
	char needle[160];
	int failed = 0;

	(void)state;
	for (unsigned k = 0; k < sizeof(call) / sizeof(call[0]); k++) {
		bad_case = (int)k;
		snprintf(needle, sizeof(needle), "%s([10, 5]): range [10, 5] is invalid: "
			 "start > last", call[k]);
		run_child(bad_range_child, &r);
		if (!(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT) ||
		    !strstr(r.out, needle)) {
			print_error("case %u: status %#x, stderr '%s', wanted '%s'\n", k,
				    r.status, r.out, needle);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* ---- requests on the stack, reused at once ----------------------------- */

#define UNITS 64
static atomic_int shadow_writers[UNITS], shadow_readers[UNITS];
static atomic_int violations;
static struct range_lock_tree stress_tree;

static void *stress_worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < 20000; i++) {
		struct range_lock req; /* same stack slot every iteration */
		uint64_t s = (uint64_t)rand_r(&seed) % UNITS;
		uint64_t e = s + (uint64_t)rand_r(&seed) % 8;
		bool reader = rand_r(&seed) % 3 == 0;

		if (e >= UNITS)
			e = UNITS - 1;
		range_lock_init(&req, s, e);
		if (reader)
			range_read_lock(&stress_tree, &req);
		else
			range_write_lock(&stress_tree, &req);
		for (uint64_t u = s; u <= e; u++) {
			if (reader) {
				atomic_fetch_add(&shadow_readers[u], 1);
				if (atomic_load(&shadow_writers[u]))
					atomic_fetch_add(&violations, 1);
			} else {
				if (atomic_fetch_add(&shadow_writers[u], 1) ||
				    atomic_load(&shadow_readers[u]))
					atomic_fetch_add(&violations, 1);
			}
		}
		for (uint64_t u = s; u <= e; u++) {
			if (reader)
				atomic_fetch_sub(&shadow_readers[u], 1);
			else
				atomic_fetch_sub(&shadow_writers[u], 1);
		}
		if (reader)
			range_read_unlock(&stress_tree, &req);
		else
			range_write_unlock(&stress_tree, &req);
	}
	return NULL;
}

static void test_stack_requests_stress(void **state)
{
	(void)state;
	enum { T = 6 };
	pthread_t th[T];

	range_lock_tree_init(&stress_tree);
	for (int i = 0; i < T; i++)
		pthread_create(&th[i], NULL, stress_worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&violations), 0);
	assert_int_equal(range_lock_tree_destroy(&stress_tree), 0);
}

/* ---- statistics and dump ---------------------------------------------- */

static void test_stats(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock_stats st, other;
	struct range_lock a, b, c, h;
	struct locker w, t;
	struct timespec ts;

	range_lock_tree_init(&tree);
	assert_int_equal(range_lock_tree_get_stats(&tree, &st), -ENODATA);
	assert_int_equal(range_lock_tree_enable_stats(&tree, NULL), -EINVAL);
	range_lock_init(&a, 0, 9);
	range_read_lock(&tree, &a); /* before enabling: counted as held_now */
	assert_int_equal(range_lock_tree_enable_stats(&tree, &stats_storage), 0);
	assert_int_equal(range_lock_tree_enable_stats(&tree, &stats_storage), 0);
	assert_int_equal(range_lock_tree_enable_stats(&tree, &other), -EBUSY);
	range_lock_tree_get_stats(&tree, &st);
	assert_int_equal(st.held_now, 1);
	assert_int_equal(st.read_acquired, 0);

	range_lock_init(&b, 5, 5);
	assert_int_equal(range_read_trylock(&tree, &b), 1);
	range_lock_init(&c, 0, 0);
	assert_int_equal(range_write_trylock(&tree, &c), 0);
	range_lock_init(&h, 10, 10);
	range_write_lock(&tree, &h);
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	range_lock_init(&c, 9, 9);
	assert_int_equal(range_write_timedlock(&tree, &c, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	start_waiting(&w, &tree, C_WRITE, 0, 3, 1);
	range_lock_tree_get_stats(&tree, &st);
	assert_int_equal(st.held_now, 3);
	assert_int_equal(st.waiting_now, 1);
	sleep_ms(20);
	range_read_unlock(&tree, &a);
	range_read_unlock(&tree, &b);
	assert_true(wait_done(&w));
	finish(&w);
	install_handler(true);
	start_waiting(&t, &tree, C_READ_INTR, 10, 10, 1);
	assert_true(interrupt_until_done(&t));
	finish(&t);

	range_lock_tree_get_stats(&tree, &st);
	assert_int_equal(st.read_acquired, 1);     /* b */
	assert_int_equal(st.write_acquired, 2);    /* [10,10], w */
	assert_int_equal(st.trylock_failed, 1);
	assert_int_equal(st.contended, 3);         /* timed, w, t */
	assert_int_equal(st.gave_up_timeout, 1);
	assert_int_equal(st.gave_up_signal, 1);
	assert_int_equal(st.gave_up_cancel, 0);
	assert_true(st.wait_ns_total >= 20000000u);
	assert_true(st.wait_ns_max >= 20000000u && st.wait_ns_max <= st.wait_ns_total);
	assert_int_equal(st.held_now, 1);          /* [10,10] */
	assert_int_equal(st.waiting_now, 0);
	assert_int_equal(st.held_peak, 3);
	assert_int_equal(st.waiting_peak, 1);

	range_lock_tree_reset_stats(&tree);
	range_lock_tree_get_stats(&tree, &st);
	assert_int_equal(st.write_acquired, 0);
	assert_int_equal(st.contended, 0);
	assert_int_equal(st.held_now, 1);
	assert_int_equal(st.held_peak, 1);
	range_write_unlock(&tree, &h);

	/* Alone on the empty tree, with statistics on: still counted (the
	 * fast path looks at the statistics after its CAS), and the same
	 * request can be locked again at once. */
	range_lock_tree_reset_stats(&tree);
	for (int i = 0; i < 3; i++) {
		range_write_lock(&tree, &h);
		range_write_unlock(&tree, &h);
		assert_int_equal(range_read_trylock(&tree, &h), 1);
		range_read_unlock(&tree, &h);
	}
	range_lock_tree_get_stats(&tree, &st);
	assert_int_equal(st.write_acquired, 3);
	assert_int_equal(st.read_acquired, 3);
	assert_int_equal(st.held_now, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

static void test_dump(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock a;
	struct locker w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	new_tree(&tree);
	range_lock_init(&a, 100, 199);
	range_read_lock(&tree, &a);
	start_waiting(&w, &tree, C_WRITE, 150, 250, 1);
	f = open_memstream(&buf, &len);
	range_lock_tree_dump(&tree, f);
	fclose(f);
	range_read_unlock(&tree, &a);
	assert_true(wait_done(&w));
	finish(&w);
	assert_non_null(strstr(buf, "2 request(s)"));
	assert_non_null(strstr(buf, "[100, 199] read  held     seq=0 blocking=0 tid="));
	assert_non_null(strstr(buf, "[150, 250] write waiting  seq=1 blocking=1 tid="));
	free(buf);
}

/* Cancelling a thread that dumps must not leave tree_lock held: the dump
 * blocks in write() on a full pipe (a cancellation point) while it holds
 * the internal lock. */
static struct range_lock_tree dump_tree;

static void *dump_main(void *arg)
{
	range_lock_tree_dump(&dump_tree, arg);
	return NULL;
}

static void test_dump_not_cancelled_holding_lock(void **state)
{
	(void)state;
	int fds[2];
	char buf[4096];
	FILE *f;
	pthread_t th;
	struct range_lock a, probe;
	void *res;

	range_lock_tree_init(&dump_tree);
	range_lock_init(&a, 1, 2);
	range_read_lock(&dump_tree, &a);
	assert_int_equal(pipe(fds), 0);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	memset(buf, 'x', sizeof(buf));
	while (write(fds[1], buf, sizeof(buf)) > 0)
		;
	fcntl(fds[1], F_SETFL, 0);
	f = fdopen(fds[1], "w");
	setvbuf(f, NULL, _IONBF, 0);
	pthread_create(&th, NULL, dump_main, f);
	sleep_ms(50);              /* now blocked in write(), holding the lock */
	pthread_cancel(th);
	sleep_ms(20);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 200; i++) {  /* drain until the dump is done */
		while (read(fds[0], buf, sizeof(buf)) > 0)
			;
		sleep_ms(1);
	}
	pthread_join(th, &res);
	range_lock_init_full(&probe);
	/* Would hang here (watchdog) if the cancelled dump kept tree_lock. */
	assert_int_equal(range_write_trylock(&dump_tree, &probe), 0);
	range_read_unlock(&dump_tree, &a);
	assert_int_equal(range_write_trylock(&dump_tree, &probe), 1);
	range_write_unlock(&dump_tree, &probe);
	fclose(f);
	close(fds[0]);
}

/* A far deadline ("practically never") waits quietly on every backend:
 * no overflow, no busy loop. */
static void test_timedlock_far_deadline(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker l;
	struct timespec cpu;
	clockid_t cid;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_timed(&l, &tree, C_WRITE_TIMED, 0, 9, 0);
	assert_true(wait_for_waiters(&tree, 1));
	sleep_ms(200);
	pthread_getcpuclockid(l.th, &cid);
	clock_gettime(cid, &cpu);
	assert_false(atomic_load(&l.done));
	range_write_unlock(&tree, &held);
	assert_true(wait_done(&l));
	finish(&l);
	assert_int_equal(l.ret, 0);
	/* Well under the 200 ms it waited (a busy loop would use most). */
	assert_true(cpu.tv_sec == 0 && cpu.tv_nsec < 40000000L);
}

/*
 * 64-bit time (issue 16): a deadline reaches the kernel whole, whatever the
 * target and _TIME_BITS.  Passing the C library's 64-bit struct timespec to
 * the old 32-bit futex call cuts it to whole seconds on little-endian
 * targets (an early -ETIMEDOUT) and makes it EINVAL on big-endian ones (an
 * abort).  So: deadlines with tv_nsec = 0.9 s, on both clocks at once, must
 * time out no earlier than asked; and where time_t has 64 bits, a deadline
 * past 2038 must wait (no timeout, no abort) until the grant.
 */
struct timed_probe {
	pthread_t th;
	struct range_lock_tree *tree;
	clockid_t clk;
	struct timespec deadline, after;
	int ret;
};

static void *timed_probe_main(void *arg)
{
	struct timed_probe *p = arg;
	struct range_lock req;

	range_lock_init(&req, 0, 9);
	p->ret = range_write_timedlock(p->tree, &req, p->clk, &p->deadline);
	clock_gettime(p->clk, &p->after);
	if (p->ret == 0)
		range_write_unlock(p->tree, &req);
	return NULL;
}

static bool timespec_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void timedlock_time64_checks(void)
{
	struct range_lock_tree tree;
	struct range_lock held;
	struct timed_probe p[2];

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_read_lock(&tree, &held);
	for (int i = 0; i < 2; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].tree = &tree;
		p[i].clk = i ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		clock_gettime(p[i].clk, &p[i].deadline);
		p[i].deadline.tv_sec += 1; /* 0.9 .. 1.9 s away */
		p[i].deadline.tv_nsec = 900000000L;
		pthread_create(&p[i].th, NULL, timed_probe_main, &p[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(p[i].th, NULL);
		assert_int_equal(p[i].ret, -ETIMEDOUT);
		assert_false(timespec_before(&p[i].after, &p[i].deadline));
	}

	if (sizeof(time_t) > 4) {
		/* 2100-01-01T00:00:00.999999999 on the wall clock. */
		uint64_t t0, waited;

		memset(&p[0], 0, sizeof(p[0]));
		p[0].tree = &tree;
		p[0].clk = CLOCK_REALTIME;
		p[0].deadline.tv_sec = (time_t)4102444800LL;
		p[0].deadline.tv_nsec = 999999999L;
		t0 = mono_ns();
		pthread_create(&p[0].th, NULL, timed_probe_main, &p[0]);
		assert_true(wait_for_waiters(&tree, 1));
		sleep_ms(100);
		range_read_unlock(&tree, &held);
		pthread_join(p[0].th, NULL);
		waited = mono_ns() - t0;
		assert_int_equal(p[0].ret, 0);
		assert_true(waited >= 90000000u);
	} else {
		range_read_unlock(&tree, &held);
	}
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* Set on 32-bit futex builds of the static test variants (wait_futex.c):
 * forces the fallback from SYS_futex_time64 to SYS_futex (kernels < 5.1). */
extern _Atomic int rl_futex_time64_missing __attribute__((weak));

static void test_timedlock_time64(void **state)
{
	(void)state;
	timedlock_time64_checks();
	if (&rl_futex_time64_missing) {
		atomic_store(&rl_futex_time64_missing, 1);
		timedlock_time64_checks(); /* 2100 is clamped to 2038 there */
		atomic_store(&rl_futex_time64_missing, 0);
	}
}

/* fork(): the child may use a new tree even while parent threads were in
 * the middle of lock calls (their backend state must not be inherited
 * locked). */
static atomic_int fork_stop;
static struct range_lock_tree fork_tree;

static void *fork_hammer(void *arg)
{
	(void)arg;
	while (!atomic_load(&fork_stop)) {
		struct range_lock r;
		range_lock_init(&r, 0, 9);
		range_write_lock(&fork_tree, &r);
		range_write_unlock(&fork_tree, &r);
	}
	return NULL;
}

static void test_fork_child_uses_new_tree(void **state)
{
	(void)state;
	pthread_t th[3];
	int bad = 0;

	range_lock_tree_init(&fork_tree);
	atomic_store(&fork_stop, 0);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, fork_hammer, NULL);
	for (int i = 0; i < 40; i++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			struct range_lock_tree t;
			struct range_lock a, b;
			struct timespec ts;

			alarm(5);
			range_lock_tree_init(&t);
			range_lock_init(&a, 0, 9);
			range_lock_init(&b, 5, 5);
			range_write_lock(&t, &a);
			deadline_in(CLOCK_MONOTONIC, 5, &ts);
			if (range_read_timedlock(&t, &b, CLOCK_MONOTONIC, &ts) != -ETIMEDOUT)
				_exit(2);
			range_write_unlock(&t, &a);
			_exit(range_lock_tree_destroy(&t) == 0 ? 0 : 3);
		}
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	atomic_store(&fork_stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(bad, 0);
}

/* ---- the default policy (eventual fairness) ---------------------------- */

/* The policy is chosen while the tree is empty, statically or by call. */
static void test_policy_setting(void **state)
{
	(void)state;
	static DEFINE_RANGE_LOCK_TREE_FIFO(static_fifo);
	struct range_lock_tree tree;
	struct range_lock a, b;

	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 5, 5);
	range_lock_tree_init(&tree);
	range_write_lock(&tree, &a);
	assert_int_equal(range_lock_tree_set_fifo(&tree, 1), -EBUSY);
	range_write_unlock(&tree, &a);
	assert_int_equal(range_lock_tree_set_fifo(&tree, 1), 0);
	assert_int_equal(range_lock_tree_set_fifo(&tree, 0), 0);
	assert_int_equal(range_lock_tree_set_fifo(&static_fifo, 1), 0);
	range_read_lock(&static_fifo, &a);
	assert_int_equal(range_read_trylock(&static_fifo, &b), 1);
	range_read_unlock(&static_fifo, &b);
	range_read_unlock(&static_fifo, &a);
	assert_int_equal(range_lock_tree_destroy(&static_fifo), 0);
}

#ifdef RL_TEST_LONG_HANDOFF
/*
 * Built against a library whose hand-off bound is an hour, so that no
 * waiter marks itself during the test: overtaking is then deterministic.
 */

/* Readers pass a waiting, unmarked writer (trylock and lock alike); the
 * writer is granted once they and the reader it waited for are gone. */
static void test_readers_overtake_waiting_writer(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, t;
	struct locker w, r;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_read_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 5, 20, 1);

	range_lock_init(&t, 15, 15); /* intersects only the waiting writer */
	assert_int_equal(range_read_trylock(&tree, &t), 1);
	start(&r, &tree, C_READ, 0, 20); /* both: granted at once too */
	assert_true(wait_done(&r));
	assert_int_equal(r.ret, 0);
	assert_int_equal(nr_waiting(&tree), 1);

	range_read_unlock(&tree, &held);
	sleep_ms(20);
	assert_false(atomic_load(&w.done)); /* counts t and r now */
	range_read_unlock(&tree, &t);
	sleep_ms(20);
	assert_false(atomic_load(&w.done));
	finish(&r);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* A writer passes a waiting writer it intersects when nothing held
 * conflicts with it, and the passed writer then waits for it too. */
static void test_writer_overtakes_waiting_writer(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held;
	struct locker w, n, blocked;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 5, 20, 1);
	start(&n, &tree, C_WRITE, 15, 25);   /* intersects only w: overtakes */
	assert_true(wait_done(&n));
	start_waiting(&blocked, &tree, C_WRITE, 0, 2, 2); /* held conflicts: waits */

	range_write_unlock(&tree, &held);
	assert_true(wait_done(&blocked)); /* it waited for held only */
	finish(&blocked);
	sleep_ms(20);
	assert_false(atomic_load(&w.done)); /* n still holds */
	finish(&n);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}

/* A sleeping writer whose range falls free is only made eligible: a running
 * thread may take the range first, and then the sleeper waits for it. */
static void test_free_range_goes_to_a_running_thread(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, mine;
	struct locker w;
	int took;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_write_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 0, 9, 1);
	sleep_ms(50); /* long past its spin: it sleeps */
	range_write_unlock(&tree, &held);
	range_lock_init(&mine, 0, 9);
	took = range_write_trylock(&tree, &mine);
	if (took) {
		sleep_ms(20);
		assert_false(atomic_load(&w.done));
		range_write_unlock(&tree, &mine);
	}
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(w.ret, 0);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
	/* The usual outcome: the woken thread had not run yet. */
	if (!took)
		fprintf(stderr, "note: the woken waiter claimed first\n");
}

/* A deadline is not checked when the call overtakes (it need not wait). */
static void test_overtaking_timedlock_ignores_deadline(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, t;
	struct timespec bad = { 0, 1000000000L };
	struct locker w;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_read_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 0, 9, 1);
	range_lock_init(&t, 5, 5);
	/* A bad deadline is refused before the tree is looked at... */
	assert_int_equal(range_read_timedlock(&tree, &t, CLOCK_MONOTONIC, &bad), -EINVAL);
	/* ...a deadline that has passed is not: the reader overtakes. */
	bad.tv_nsec = 0;
	assert_int_equal(range_read_timedlock(&tree, &t, CLOCK_MONOTONIC, &bad), 0);
	range_read_unlock(&tree, &t);
	range_read_unlock(&tree, &held);
	assert_true(wait_done(&w));
	finish(&w);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}
#else
/*
 * The real hand-off bound: once a writer has waited past it, readers can no
 * longer pass it, and it gets the range when the reader it waits for goes.
 */
static void test_handoff_stops_overtaking(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock held, t;
	struct locker w;
	int i;

	new_tree(&tree);
	range_lock_init(&held, 0, 9);
	range_read_lock(&tree, &held);
	start_waiting(&w, &tree, C_WRITE, 0, 9, 1);
	range_lock_init(&t, 5, 5);
	/* Within a few milliseconds of CPU time for w, readers stop passing. */
	for (i = 0; i < 5000; i++) {
		if (!range_read_trylock(&tree, &t))
			break;
		range_read_unlock(&tree, &t);
		sleep_ms(1);
	}
	assert_true(i < 5000);
	for (i = 0; i < 20; i++) { /* and the mark stays */
		assert_int_equal(range_read_trylock(&tree, &t), 0);
		sleep_ms(1);
	}
	range_read_unlock(&tree, &held);
	assert_true(wait_done(&w));
	assert_int_equal(range_read_trylock(&tree, &t), 0);
	finish(&w);
	assert_int_equal(range_read_trylock(&tree, &t), 1);
	range_read_unlock(&tree, &t);
	assert_int_equal(range_lock_tree_destroy(&tree), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_destroy),
		cmocka_unit_test(test_trylock_rules),
		cmocka_unit_test(test_trylock_no_stealing),
		cmocka_unit_test(test_writer_waits_for_intersecting),
		cmocka_unit_test(test_fifo_and_reader_behind_writer),
		cmocka_unit_test(test_fifo_writers),
		cmocka_unit_test(test_downgrade),
		cmocka_unit_test(test_interruptible_eintr),
		cmocka_unit_test(test_signals_do_not_end_plain_waits),
		cmocka_unit_test(test_killable_cancel),
		cmocka_unit_test(test_killable_cancel_races_grant),
		cmocka_unit_test(test_timedlock_validation),
		cmocka_unit_test(test_timedlock_bad_deadline_free_range),
		cmocka_unit_test(test_timedlock_negative_tv_sec),
		cmocka_unit_test(test_timedlock_times_out),
		cmocka_unit_test(test_giveup_unaccounting),
		cmocka_unit_test(test_misuse_aborts),
		cmocka_unit_test(test_bad_range_aborts),
		cmocka_unit_test(test_stack_requests_stress),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_dump_not_cancelled_holding_lock),
		cmocka_unit_test(test_timedlock_far_deadline),
		cmocka_unit_test(test_timedlock_time64),
		cmocka_unit_test(test_fork_child_uses_new_tree),
		cmocka_unit_test(test_policy_setting),
#ifdef RL_TEST_LONG_HANDOFF
		cmocka_unit_test(test_readers_overtake_waiting_writer),
		cmocka_unit_test(test_writer_overtakes_waiting_writer),
		cmocka_unit_test(test_free_range_goes_to_a_running_thread),
		cmocka_unit_test(test_overtaking_timedlock_ignores_deadline),
#else
		cmocka_unit_test(test_handoff_stops_overtaking),
#endif
	};

	watchdog(240);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
