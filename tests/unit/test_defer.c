/* SPDX-License-Identifier: MIT */
/*
 * Readers first (range_lock_tree_defer_writers(), src/defer.c): a
 * writer's blocking lock call defers to the tree's sleeping readers, for
 * at most the bound.  The tests lengthen the bound to 30 s (the
 * RL_TEST_HOOKS variable rl_test_defer_ns), so that only a reader's
 * count-off can end a deferral, and watch the deferral word
 * (rl_test_defer_word(): readers counted << 1 | a writer deferring), never
 * a sleep.  "Quick" is under 10 s: a call that deferred for the lengthened
 * bound would take 30.  Worker threads assert nothing; the main thread
 * asserts after joining.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "test_util.h"
#include "defer.h" /* the test hooks */

#define LONG_NS (30LL * 1000000000)
#define QUICK_NS (10ULL * 1000000000)
#define S 64
#define K 12 /* stripes of 4096 units */

enum tree_kind { PLAIN, FIFO, SEG, SEG_FIFO };
/* What the deferring writer takes, and the sleeping reader's range. */
enum writer_kind { W_ONE, W_SPAN, W_SET, R_SPAN };

struct scenario {
	enum tree_kind tree;
	enum writer_kind writer;
};

static void make_tree(struct range_lock_tree *t, enum tree_kind k)
{
	range_lock_tree_init(t);
	if (k == FIFO || k == SEG_FIFO)
		assert_int_equal(range_lock_tree_set_fifo(t, 1), 0);
	if (k == SEG || k == SEG_FIFO)
		assert_int_equal(range_lock_tree_set_segments(t, S, K), 0);
	assert_int_equal(range_lock_tree_defer_writers(t, 1), 0);
	assert_true(t->flags & RANGE_LOCK_TREE_FLAG_DEFER_WRITERS);
}

static uint32_t counted(struct range_lock_tree *t)
{
	return rl_test_defer_word(t) >> 1;
}

/* Poll until @n readers of @t are counted asleep; false after 10 s. */
static bool wait_counted(struct range_lock_tree *t, uint32_t n)
{
	for (int i = 0; i < 10000; i++) {
		if (counted(t) == n)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* Poll until a writer defers on @t's word; false after 10 s. */
static bool wait_deferring(struct range_lock_tree *t)
{
	for (int i = 0; i < 10000; i++) {
		if (rl_test_defer_word(t) & 1)
			return true;
		sleep_ms(1);
	}
	return false;
}

enum call { C_PLAIN, C_TIMED, C_KILLABLE, C_INTERRUPTIBLE, C_SET };

struct op {
	struct range_lock_tree *tree;
	struct range_lock lock, lock2; /* lock2: a set's second member */
	bool reader;
	enum call call;
	long timeout_ms;               /* C_TIMED */
	int r;
	uint64_t end_ns;
	_Atomic int done;
	_Atomic int *released;         /* the holder's release, as seen at the end */
	int saw_released;
	pthread_t thread;
};

static void *run_op(void *arg)
{
	struct op *o = arg;
	struct timespec ts;

	switch (o->call) {
	case C_PLAIN:
		if (o->reader)
			range_read_lock(o->tree, &o->lock);
		else
			range_write_lock(o->tree, &o->lock);
		o->r = 0;
		break;
	case C_TIMED:
		deadline_in(CLOCK_MONOTONIC, o->timeout_ms, &ts);
		o->r = o->reader ? range_read_timedlock(o->tree, &o->lock, CLOCK_MONOTONIC, &ts)
				 : range_write_timedlock(o->tree, &o->lock, CLOCK_MONOTONIC, &ts);
		break;
	case C_KILLABLE:
		o->r = o->reader ? range_read_lock_killable(o->tree, &o->lock)
				 : range_write_lock_killable(o->tree, &o->lock);
		break;
	case C_INTERRUPTIBLE:
		o->r = o->reader ? range_read_lock_interruptible(o->tree, &o->lock)
				 : range_write_lock_interruptible(o->tree, &o->lock);
		break;
	case C_SET: {
		struct range_lock_item items[2] = {
			{ &o->lock, RANGE_LOCK_WRITE },
			{ &o->lock2, RANGE_LOCK_READ },
		};

		range_lock_many(o->tree, items, 2);
		o->r = 0;
		break;
	}
	}
	o->end_ns = mono_ns();
	if (o->released)
		o->saw_released = atomic_load(o->released);
	atomic_store(&o->done, 1);
	return NULL;
}

static void start_op(struct op *o, struct range_lock_tree *t, uint64_t start, uint64_t last,
		     bool reader, enum call call)
{
	o->tree = t;
	assert_int_equal(range_lock_init(&o->lock, start, last), 0);
	o->reader = reader;
	o->call = call;
	atomic_store(&o->done, 0);
	assert_int_equal(pthread_create(&o->thread, NULL, run_op, o), 0);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static int setup(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */

	(void)state;
	sigaction(SIGUSR1, &sa, NULL);
	rl_test_defer_ns = LONG_NS;
	watchdog(240);
	return 0;
}

/*
 * The rule itself: a holder H of [0, 9], a reader R asleep for it, and a
 * writer W whose range conflicts with nothing.  W defers until R is
 * granted (the 30 s bound cannot end it), and wakes at R's count-off.
 */
static void test_writer_defers_until_reader_granted(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h;
	static struct op r, w;
	static _Atomic int released;
	uint64_t release_ns;

	make_tree(&t, sc->tree);
	atomic_store(&released, 0);
	memset(&w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	assert_int_equal(range_lock_init(&h, 0, 9), 0);
	range_write_lock(&t, &h);
	/* R: [0, 9], or [0, 5000] across two segments (a part sleeps) */
	start_op(&r, &t, 0, sc->writer == R_SPAN ? 5000 : 9, true, C_PLAIN);
	assert_true(wait_counted(&t, 1));
	w.released = &released;
	if (sc->writer == W_SET)
		assert_int_equal(range_lock_init(&w.lock2, 20000, 20009), 0);
	/* W: in another segment ([8192, 8201]), across two ([12000, 12500]),
	 * or a set of a writer and a reader */
	start_op(&w, &t, sc->writer == W_SPAN ? 12000 : 8192,
		 sc->writer == W_SPAN ? 12500 : 8201, false,
		 sc->writer == W_SET ? C_SET : C_PLAIN);
	assert_true(wait_deferring(&t));
	sleep_ms(20);
	assert_int_equal(atomic_load(&w.done), 0); /* still deferring */
	assert_int_equal(atomic_load(&r.done), 0);
	atomic_store(&released, 1);
	release_ns = mono_ns();
	range_write_unlock(&t, &h);
	pthread_join(r.thread, NULL);
	pthread_join(w.thread, NULL);
	assert_int_equal(r.r, 0);
	assert_int_equal(w.r, 0);
	assert_int_equal(w.saw_released, 1);
	/* woken by R's count-off, not by the 30 s bound */
	assert_true(w.end_ns - release_ns < QUICK_NS);
	assert_int_equal(counted(&t), 0);
	range_read_unlock(&t, &r.lock);
	if (sc->writer == W_SET) {
		struct range_lock_item items[2] = {
			{ &w.lock, RANGE_LOCK_WRITE },
			{ &w.lock2, RANGE_LOCK_READ },
		};

		range_unlock_many(&t, items, 2);
	} else {
		range_write_unlock(&t, &w.lock);
	}
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

/*
 * The scene of the tests below: a tree of @sc's kind, @h write-holding
 * [0, 9], and reader @r asleep for it (counted in the deferral word).
 */
static void sleeping_reader(struct range_lock_tree *t, const struct scenario *sc,
			    struct range_lock *h, struct op *r)
{
	make_tree(t, sc->tree);
	memset(r, 0, sizeof(*r));
	assert_int_equal(range_lock_init(h, 0, 9), 0);
	range_write_lock(t, h);
	start_op(r, t, 0, 9, true, C_PLAIN);
	assert_true(wait_counted(t, 1));
}

/* ... and its end: @h released, @r granted and released, the tree empty. */
static void end_sleeping_reader(struct range_lock_tree *t, struct range_lock *h,
				struct op *r)
{
	range_write_unlock(t, h);
	pthread_join(r->thread, NULL);
	range_read_unlock(t, &r->lock);
	assert_int_equal(range_lock_tree_destroy(t), 0);
}

/*
 * The bound: a thread that holds what a reader sleeps for and makes a
 * write lock call on the tree waits the bound (about 2 ms) and goes on;
 * without it, the two would wait for each other for ever.
 */
static void test_bound_ends_deferral(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h, w;
	static struct op r;
	uint64_t t0, dt;

	rl_test_defer_ns = RL_DEFER_NS;
	sleeping_reader(&t, sc, &h, &r);
	assert_int_equal(range_lock_init(&w, 8192, 8201), 0);
	t0 = mono_ns();
	range_write_lock(&t, &w); /* defers the bound: R sleeps for h */
	dt = mono_ns() - t0;
	rl_test_defer_ns = LONG_NS;
	assert_true(dt >= (uint64_t)RL_DEFER_NS * 9 / 10);
	assert_int_equal(atomic_load(&r.done), 0);
	range_write_unlock(&t, &w);
	end_sleeping_reader(&t, &h, &r);
}

/* A timed call's deadline ends its deferral: it then takes its free range. */
static void test_deadline_ends_deferral(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h, w;
	static struct op r;
	struct timespec ts;
	uint64_t t0, dt;

	sleeping_reader(&t, sc, &h, &r);
	assert_int_equal(range_lock_init(&w, 8192, 8201), 0);
	t0 = mono_ns();
	deadline_in(CLOCK_MONOTONIC, 100, &ts);
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), 0);
	dt = mono_ns() - t0;
	assert_true(dt >= 90000000u);
	assert_true(dt < QUICK_NS);
	assert_int_equal(atomic_load(&r.done), 0);
	range_write_unlock(&t, &w);
	end_sleeping_reader(&t, &h, &r);
}

/* A signal handler that runs during an interruptible call's deferral ends
 * it; the call goes on and takes its free range (0, not -EINTR). */
static void test_signal_ends_deferral(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h;
	static struct op r, w;
	uint64_t t0;

	memset(&w, 0, sizeof(w));
	sleeping_reader(&t, sc, &h, &r);
	t0 = mono_ns();
	start_op(&w, &t, 8192, 8201, false, C_INTERRUPTIBLE);
	assert_true(wait_deferring(&t));
	for (int i = 0; i < 1000 && !atomic_load(&w.done); i++) {
		pthread_kill(w.thread, SIGUSR1);
		sleep_ms(10);
	}
	pthread_join(w.thread, NULL);
	assert_int_equal(w.r, 0);
	assert_true(w.end_ns - t0 < QUICK_NS);
	assert_int_equal(atomic_load(&r.done), 0);
	range_write_unlock(&t, &w.lock);
	end_sleeping_reader(&t, &h, &r);
}

/*
 * Nothing else defers: reads, trylocks, asynchronous submissions, grow,
 * and every call once the tree is not readers-first any more (while the
 * reader is still counted).
 */
static void done_fn(struct range_lock_async *req, int status)
{
	(void)req;
	(void)status;
}

static void test_others_never_defer(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h, rd, tw, g, w;
	struct range_lock_async as;
	static struct op r;
	uint64_t t0;

	make_tree(&t, sc->tree);
	memset(&r, 0, sizeof(r));
	assert_int_equal(range_lock_init(&h, 0, 9), 0);
	assert_int_equal(range_lock_init(&rd, 8192, 8201), 0);
	assert_int_equal(range_lock_init(&tw, 16384, 16393), 0);
	assert_int_equal(range_lock_init(&g, 20480, 20489), 0);
	assert_int_equal(range_lock_init(&w, 24576, 24585), 0);
	assert_int_equal(range_lock_async_init(&as, 28672, 28681, done_fn, NULL), 0);
	range_write_lock(&t, &h);
	range_write_lock(&t, &g); /* before the reader sleeps */
	start_op(&r, &t, 0, 9, true, C_PLAIN);
	assert_true(wait_counted(&t, 1));
	t0 = mono_ns();
	range_read_lock(&t, &rd);
	assert_int_equal(range_write_trylock(&t, &tw), 1);
	assert_int_equal(range_write_lock_async(&t, &as), 0);
	assert_int_equal(range_lock_grow(&t, &g, 20480, 20499), 0);
	assert_int_equal(range_lock_tree_defer_writers(&t, 0), 0);
	range_write_lock(&t, &w);
	assert_true(mono_ns() - t0 < QUICK_NS);
	assert_int_equal(counted(&t), 1); /* R still counted */
	assert_int_equal(atomic_load(&r.done), 0);
	range_write_unlock(&t, &w);
	range_write_unlock(&t, &as.lock);
	range_write_unlock(&t, &g);
	range_write_unlock(&t, &tw);
	range_read_unlock(&t, &rd);
	range_write_unlock(&t, &h);
	pthread_join(r.thread, NULL);
	range_read_unlock(&t, &r.lock);
	assert_int_equal(counted(&t), 0);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

/*
 * A reader that gives up leaves nothing counted: timeout, cancellation of
 * a killable wait, a signal in an interruptible one.  A writer then does
 * not defer.
 */
static void test_give_ups_count_off(const struct scenario *sc)
{
	struct range_lock_tree t;
	struct range_lock h, w;
	static struct op r;
	uint64_t t0;

	make_tree(&t, sc->tree);
	assert_int_equal(range_lock_init(&h, 0, 9), 0);
	assert_int_equal(range_lock_init(&w, 8192, 8201), 0);
	range_write_lock(&t, &h);

	memset(&r, 0, sizeof(r));
	r.timeout_ms = 50;
	start_op(&r, &t, 0, 9, true, C_TIMED);
	pthread_join(r.thread, NULL);
	assert_int_equal(r.r, -ETIMEDOUT);
	assert_int_equal(counted(&t), 0);

	memset(&r, 0, sizeof(r));
	start_op(&r, &t, 0, 9, true, C_KILLABLE);
	assert_true(wait_counted(&t, 1));
	assert_int_equal(pthread_cancel(r.thread), 0);
	pthread_join(r.thread, NULL);
	assert_int_equal(atomic_load(&r.done), 0); /* cancelled in the wait */
	assert_int_equal(counted(&t), 0);

	memset(&r, 0, sizeof(r));
	start_op(&r, &t, 0, 9, true, C_INTERRUPTIBLE);
	assert_true(wait_counted(&t, 1));
	for (int i = 0; i < 1000 && !atomic_load(&r.done); i++) {
		pthread_kill(r.thread, SIGUSR1);
		sleep_ms(10);
	}
	pthread_join(r.thread, NULL);
	assert_int_equal(r.r, -EINTR);
	assert_int_equal(counted(&t), 0);

	t0 = mono_ns();
	range_write_lock(&t, &w);
	assert_true(mono_ns() - t0 < QUICK_NS);
	range_write_unlock(&t, &w);
	range_write_unlock(&t, &h);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

static const struct scenario plain_one = { PLAIN, W_ONE }, fifo_one = { FIFO, W_ONE },
			     plain_set = { PLAIN, W_SET }, seg_one = { SEG, W_ONE },
			     seg_span = { SEG, W_SPAN }, seg_set = { SEG, W_SET },
			     seg_fifo_one = { SEG_FIFO, W_ONE }, seg_rspan = { SEG, R_SPAN };

/* One cmocka test per function and scenario (no prestate: the musl
 * stage's cmocka_lite has none). */
#define CASE(fn, sc)                            \
	static void fn##__##sc(void **state)    \
	{                                       \
		(void)state;                    \
		fn(&sc);                        \
	}
CASE(test_writer_defers_until_reader_granted, plain_one)
CASE(test_writer_defers_until_reader_granted, fifo_one)
CASE(test_writer_defers_until_reader_granted, plain_set)
CASE(test_writer_defers_until_reader_granted, seg_one)
CASE(test_writer_defers_until_reader_granted, seg_span)
CASE(test_writer_defers_until_reader_granted, seg_set)
CASE(test_writer_defers_until_reader_granted, seg_fifo_one)
CASE(test_writer_defers_until_reader_granted, seg_rspan)
CASE(test_bound_ends_deferral, plain_one)
CASE(test_bound_ends_deferral, seg_one)
CASE(test_deadline_ends_deferral, plain_one)
CASE(test_deadline_ends_deferral, seg_one)
CASE(test_signal_ends_deferral, plain_one)
CASE(test_signal_ends_deferral, seg_one)
CASE(test_others_never_defer, plain_one)
CASE(test_others_never_defer, seg_one)
CASE(test_give_ups_count_off, plain_one)
CASE(test_give_ups_count_off, seg_one)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_defers_until_reader_granted__plain_one),
		cmocka_unit_test(test_writer_defers_until_reader_granted__fifo_one),
		cmocka_unit_test(test_writer_defers_until_reader_granted__plain_set),
		cmocka_unit_test(test_writer_defers_until_reader_granted__seg_one),
		cmocka_unit_test(test_writer_defers_until_reader_granted__seg_span),
		cmocka_unit_test(test_writer_defers_until_reader_granted__seg_set),
		cmocka_unit_test(test_writer_defers_until_reader_granted__seg_fifo_one),
		cmocka_unit_test(test_writer_defers_until_reader_granted__seg_rspan),
		cmocka_unit_test(test_bound_ends_deferral__plain_one),
		cmocka_unit_test(test_bound_ends_deferral__seg_one),
		cmocka_unit_test(test_deadline_ends_deferral__plain_one),
		cmocka_unit_test(test_deadline_ends_deferral__seg_one),
		cmocka_unit_test(test_signal_ends_deferral__plain_one),
		cmocka_unit_test(test_signal_ends_deferral__seg_one),
		cmocka_unit_test(test_others_never_defer__plain_one),
		cmocka_unit_test(test_others_never_defer__seg_one),
		cmocka_unit_test(test_give_ups_count_off__plain_one),
		cmocka_unit_test(test_give_ups_count_off__seg_one),
	};

	/* (the group setup is not run by cmocka_lite: called here) */
	setup(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
