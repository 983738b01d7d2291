/* SPDX-License-Identifier: MIT */
/*
 * Several ranges in one arrival (range_lock_many*) and grow/shrink of a
 * held range (range_lock_grow*, range_lock_shrink), with real threads.
 * Built like test_lock.c: against the library as configured, the forced
 * POSIX backend and the checking mode (which checks the tree's invariant at
 * every unlock), and against the one-hour hand-off bound
 * (RL_TEST_LONG_HANDOFF), where the default policy's overtaking is exact.
 *
 * Threads never assert: an actor thread records what it saw (return value,
 * done, the request's range after the call), the main thread asserts after
 * joining or polling.  "probe" = a trylock from the main thread (another
 * thread than the actor's), released at once: it tells what is held.
 *
 * MUTANTS (the code broken on purpose, then restored; what caught each):
 *  M1 range_lock_many() takes its members one at a time (a plain lock call
 *     per member): set_deadlock_pattern (deadlock, reported after 60 s
 *     with a dump, abort) in every variant.
 *  M2 rl_enter_many() lets members overtake individually (a member with no
 *     held or marked conflict is held at once at min-1, the others wait at
 *     the next seqnum): LONG: set_overtakes_only_as_a_whole (the waiting
 *     writer was passed).  Not caught by the other variants (their waiter
 *     is marked after 2 ms: nothing overtakes it anyway).
 *  M3 rl_grow_enter() does not add the growth as a blocker of later waiters:
 *     grow_later_waiter_waits_for_grown (the later writer was granted
 *     together with the grown request), every variant.
 *  M4 precedes(): a growth does not count later holders (only seq < s):
 *     grow_waits_for_later_holder (grown at once over a held writer), and
 *     grow_try_* (returned 1), every variant.
 *  M5 rl_shrink_request() skips put_dropped(): shrink_releases_exactly (the
 *     waiter on the dropped part stayed waiting), shrink_fast_paths,
 *     every variant.
 *  M6 withdraw_group() keeps the held members of a set that gives up
 *     (removes only the waiting ones): set_timed_gives_up_all,
 *     set_interruptible_gives_up_all (probe of the free member failed), in
 *     every variant; set_killable_cancel is not affected (cancellation
 *     removes all before the mutated test).
 *  M7 rl_grow_merge() without the put_blocker of requests that counted the
 *     owner and a growth: grow_later_waiter_waits_for_grown (the writer
 *     across the old and the added part never got in after the grower's
 *     unlock: 5 s bound); the checking mode aborts at the unlock (tree
 *     invariant).
 * (Each run of a mutant: the binaries of CMakeLists.txt, see the report of
 * the commit that added this file for the exact counts.)
 */
#include "test_util.h"

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MAXN 4

enum op {
	OP_LOCK,        /* items[0] alone, by the single lock call of its mode */
	OP_MANY, OP_MANY_TRY, OP_MANY_TIMED, OP_MANY_INTR, OP_MANY_KILL,
	OP_GROW, OP_GROW_TRY, OP_GROW_TIMED, OP_GROW_INTR, OP_GROW_KILL,
};

struct spec {
	uint64_t s, e;
	int mode;
};

struct actor {
	struct range_lock_tree *tree;
	struct range_lock req[MAXN];
	struct range_lock_item items[MAXN];
	struct spec spec[MAXN];
	unsigned n;
	enum op op;
	uint64_t gs, ge;        /* grow: the new range */
	long timeout_ms;
	atomic_int holding;     /* grow: items[0] held, waiting for go */
	atomic_int go;
	atomic_int done;        /* the call returned */
	int ret;
	bool ok;                /* the call got what it asked for */
	uint64_t after_s, after_e; /* items[0]'s range after the call */
	atomic_int cancelled;   /* grow_killable: in the cleanup handler */
	atomic_int release;
	atomic_int released;
	atomic_int caller_unlocks; /* the main thread unlocked its requests */
	int order;
	pthread_t th;
};

static atomic_int order_counter;

static bool is_grow(enum op op)
{
	return op >= OP_GROW;
}

static void unlock_one(struct range_lock_tree *tree, struct range_lock *r, int mode)
{
	if (mode == RANGE_LOCK_READ)
		range_read_unlock(tree, r);
	else
		range_write_unlock(tree, r);
}

static void wait_release(struct actor *a)
{
	while (!atomic_load(&a->release))
		sched_yield();
}

/* Killable grow cancelled: the request is still held (the header says so):
 * record its range, hold until told, then unlock it. */
static void grow_cancelled(void *arg)
{
	struct actor *a = arg;

	a->after_s = a->req[0].start;
	a->after_e = a->req[0].last;
	atomic_store(&a->cancelled, 1);
	wait_release(a);
	unlock_one(a->tree, &a->req[0], a->spec[0].mode);
	atomic_store(&a->released, 1);
}

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	struct timespec ts;
	int r = 0;
	bool ok = true;

	for (unsigned i = 0; i < a->n; i++) {
		range_lock_init(&a->req[i], a->spec[i].s, a->spec[i].e);
		a->items[i].lock = &a->req[i];
		a->items[i].mode = a->spec[i].mode;
	}
	if (is_grow(a->op)) {
		if (a->spec[0].mode == RANGE_LOCK_READ)
			range_read_lock(a->tree, &a->req[0]);
		else
			range_write_lock(a->tree, &a->req[0]);
		atomic_store(&a->holding, 1);
		while (!atomic_load(&a->go))
			sched_yield();
	}
	deadline_in(CLOCK_MONOTONIC, a->timeout_ms, &ts);
	switch (a->op) {
	case OP_LOCK:
		if (a->spec[0].mode == RANGE_LOCK_READ)
			range_read_lock(a->tree, &a->req[0]);
		else
			range_write_lock(a->tree, &a->req[0]);
		break;
	case OP_MANY: range_lock_many(a->tree, a->items, a->n); break;
	case OP_MANY_TRY: r = range_lock_many_try(a->tree, a->items, a->n); ok = r == 1; break;
	case OP_MANY_TIMED:
		r = range_lock_many_timed(a->tree, a->items, a->n, CLOCK_MONOTONIC, &ts);
		ok = r == 0;
		break;
	case OP_MANY_INTR: r = range_lock_many_interruptible(a->tree, a->items, a->n); ok = !r; break;
	case OP_MANY_KILL: r = range_lock_many_killable(a->tree, a->items, a->n); ok = !r; break;
	case OP_GROW: r = range_lock_grow(a->tree, &a->req[0], a->gs, a->ge); ok = !r; break;
	case OP_GROW_TRY: r = range_lock_grow_try(a->tree, &a->req[0], a->gs, a->ge); ok = r == 1; break;
	case OP_GROW_TIMED:
		r = range_lock_grow_timed(a->tree, &a->req[0], a->gs, a->ge, CLOCK_MONOTONIC, &ts);
		ok = !r;
		break;
	case OP_GROW_INTR:
		r = range_lock_grow_interruptible(a->tree, &a->req[0], a->gs, a->ge);
		ok = !r;
		break;
	case OP_GROW_KILL:
		pthread_cleanup_push(grow_cancelled, a);
		r = range_lock_grow_killable(a->tree, &a->req[0], a->gs, a->ge);
		pthread_cleanup_pop(0);
		ok = !r;
		break;
	}
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	a->ret = r;
	a->ok = ok;
	a->after_s = a->req[0].start;
	a->after_e = a->req[0].last;
	if (ok)
		a->order = atomic_fetch_add(&order_counter, 1) + 1;
	atomic_store(&a->done, 1);
	if (!ok && !is_grow(a->op))
		return NULL; /* holds nothing */
	wait_release(a);
	if (atomic_load(&a->caller_unlocks))
		;
	else if (is_grow(a->op) || a->op == OP_LOCK)
		unlock_one(a->tree, &a->req[0], a->spec[0].mode);
	else
		range_unlock_many(a->tree, a->items, a->n);
	atomic_store(&a->released, 1);
	return NULL;
}

static void actor_setup(struct actor *a, struct range_lock_tree *tree, enum op op)
{
	memset(a, 0, sizeof(*a));
	a->tree = tree;
	a->op = op;
	a->timeout_ms = 200;
}

static void add(struct actor *a, uint64_t s, uint64_t e, int mode)
{
	a->spec[a->n].s = s;
	a->spec[a->n].e = e;
	a->spec[a->n++].mode = mode;
}

static void run(struct actor *a)
{
	pthread_create(&a->th, NULL, actor_main, a);
}

static bool wait_flag(atomic_int *f)
{
	for (int i = 0; i < 5000 && !atomic_load(f); i++)
		sleep_ms(1);
	return atomic_load(f);
}

static bool wait_done(struct actor *a)
{
	return wait_flag(&a->done);
}

/* One lock call in a thread, that holds until finish(). */
static void start_lock(struct actor *a, struct range_lock_tree *tree, uint64_t s,
		       uint64_t e, int mode)
{
	actor_setup(a, tree, OP_LOCK);
	add(a, s, e, mode);
	run(a);
}

/* The same, and wait until @waiters requests wait in the tree. */
static void start_lock_waiting(struct actor *a, struct range_lock_tree *tree, uint64_t s,
			       uint64_t e, int mode, uint64_t waiters)
{
	start_lock(a, tree, s, e, mode);
	assert_true(wait_for_waiters(tree, waiters));
}

/* A thread that holds [s, e] by @mode, then (start_grow()) grows it. */
static void start_holder(struct actor *a, struct range_lock_tree *tree, enum op op,
			 uint64_t s, uint64_t e, int mode, uint64_t gs, uint64_t ge)
{
	actor_setup(a, tree, op);
	add(a, s, e, mode);
	a->gs = gs;
	a->ge = ge;
	run(a);
	assert_true(wait_flag(&a->holding));
}

static void start_grow(struct actor *a)
{
	atomic_store(&a->go, 1);
}

static void finish(struct actor *a)
{
	atomic_store(&a->release, 1);
	pthread_join(a->th, NULL);
}

static bool probe(struct range_lock_tree *tree, uint64_t s, uint64_t e, int mode)
{
	struct range_lock p;
	int got;

	range_lock_init(&p, s, e);
	got = mode == RANGE_LOCK_READ ? range_read_trylock(tree, &p)
				      : range_write_trylock(tree, &p);
	if (got)
		unlock_one(tree, &p, mode);
	return got;
}

#define W RANGE_LOCK_WRITE
#define R RANGE_LOCK_READ

static struct range_lock_stats stats_storage;

static void new_tree(struct range_lock_tree *tree, int fifo)
{
	range_lock_tree_init(tree);
	assert_int_equal(range_lock_tree_enable_stats(tree, &stats_storage), 0);
	assert_int_equal(range_lock_tree_set_fifo(tree, fifo), 0);
	atomic_store(&order_counter, 0);
}

static struct range_lock_stats stats(struct range_lock_tree *tree)
{
	struct range_lock_stats st;

	assert_int_equal(range_lock_tree_get_stats(tree, &st), 0);
	return st;
}

static void expect_empty(struct range_lock_tree *tree)
{
	struct range_lock_stats st = stats(tree);

	assert_int_equal(st.held_now, 0);
	assert_int_equal(st.waiting_now, 0);
	assert_true(probe(tree, 0, RANGE_LOCK_FULL, W));
	assert_int_equal(range_lock_tree_destroy(tree), 0);
}

static atomic_int handler_runs;

static void on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handler_runs, 1);
}

static void install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

/* Signal @a until its call returns (one signal may land while it is awake
 * and go unreported, as documented; test_lock.c does the same). */
static bool interrupt_until_done(struct actor *a)
{
	for (int i = 0; i < 500 && !atomic_load(&a->done); i++) {
		pthread_kill(a->th, SIGUSR1);
		sleep_ms(10);
	}
	return atomic_load(&a->done);
}

/* ---- sets: deadlock freedom ------------------------------------------- */

#define ROUNDS 5000
static struct range_lock_tree dl_tree;
static atomic_int dl_inside[2];
static atomic_int dl_violations, dl_finished;

struct dl_arg {
	struct spec spec[2];
};

static void *dl_worker(void *arg)
{
	struct dl_arg *d = arg;
	struct range_lock req[2];
	struct range_lock_item items[2];

	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < 2; k++) {
			range_lock_init(&req[k], d->spec[k].s, d->spec[k].e);
			items[k].lock = &req[k];
			items[k].mode = d->spec[k].mode;
		}
		range_lock_many(&dl_tree, items, 2);
		/* Both workers want both ranges for writing: alone inside. */
		for (int k = 0; k < 2; k++)
			if (atomic_fetch_add(&dl_inside[k], 1))
				atomic_fetch_add(&dl_violations, 1);
		for (int k = 0; k < 2; k++)
			atomic_fetch_sub(&dl_inside[k], 1);
		if (i & 1) {
			range_unlock_many(&dl_tree, items, 2);
		} else { /* each on its own, the second first */
			range_write_unlock(&dl_tree, &req[1]);
			range_write_unlock(&dl_tree, &req[0]);
		}
	}
	atomic_fetch_add(&dl_finished, 1);
	return NULL;
}

static void deadlock_case(int fifo, uint64_t xs, uint64_t xe, uint64_t ys, uint64_t ye)
{
	struct dl_arg a = { { { xs, xe, W }, { ys, ye, W } } };
	struct dl_arg b = { { { ys, ye, W }, { xs, xe, W } } };
	pthread_t ta, tb;
	int i;

	range_lock_tree_init(&dl_tree);
	assert_int_equal(range_lock_tree_set_fifo(&dl_tree, fifo), 0);
	atomic_store(&dl_violations, 0);
	atomic_store(&dl_finished, 0);
	pthread_create(&ta, NULL, dl_worker, &a);
	pthread_create(&tb, NULL, dl_worker, &b);
	for (i = 0; i < 60000 && atomic_load(&dl_finished) < 2; i++)
		sleep_ms(1);
	if (atomic_load(&dl_finished) < 2) {
		fprintf(stderr, "deadlock (fifo=%d): sets in opposite orders never "
			"finished\n", fifo);
		range_lock_tree_dump(&dl_tree, stderr);
		abort(); /* the workers are stuck: nothing to join */
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(atomic_load(&dl_violations), 0);
	assert_int_equal(range_lock_tree_destroy(&dl_tree), 0);
}

/* Two threads, sets {x, y} and {y, x}, writers, thousands of rounds, both
 * policies: must finish (one lock call per member would deadlock). */
static void test_set_deadlock_pattern(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		deadlock_case(fifo, 0, 9, 10, 19);
		deadlock_case(fifo, 0, 15, 10, 25); /* overlapping members */
	}
}

/* ---- sets: all or nothing --------------------------------------------- */

/* _try with one member free and one held by another thread: 0, and nothing
 * of the set is left in the tree.  Also where the set would overtake a
 * waiter on one member and wait on the other. */
static void test_set_try_all_or_nothing(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock a, b;
		struct range_lock_item items[2] = { { &a, W }, { &b, W } };
		struct actor h, t, w;
		struct range_lock_stats st;

		new_tree(&tree, fifo);
		start_lock(&h, &tree, 10, 19, W);
		assert_true(wait_done(&h));
		range_lock_init(&a, 0, 9);
		range_lock_init(&b, 10, 19);
		assert_int_equal(range_lock_many_try(&tree, items, 2), 0);
		st = stats(&tree);
		assert_int_equal(st.held_now, 1);
		assert_int_equal(st.waiting_now, 0);
		assert_int_equal(st.trylock_failed, 1);
		assert_true(probe(&tree, 0, 9, W)); /* from this thread */
		/* and from another one */
		actor_setup(&t, &tree, OP_MANY_TRY);
		add(&t, 0, 9, W);
		run(&t);
		assert_true(wait_done(&t));
		finish(&t); /* it held, then unlocked */
		assert_int_equal(t.ret, 1);
		/* Both requests are in no tree: they can be locked again. */
		assert_int_equal(range_write_trylock(&tree, &a), 1);
		range_write_unlock(&tree, &a);

		/* A waiter on the free member's range: the set must not keep a
		 * partial hold (or an overtaking member) either. */
		start_lock_waiting(&w, &tree, 0, 12, W, 1); /* waits for h */
		range_lock_init(&a, 0, 9);
		range_lock_init(&b, 10, 19);
		assert_int_equal(range_lock_many_try(&tree, items, 2), 0);
		st = stats(&tree);
		assert_int_equal(st.held_now, 1);
		assert_int_equal(st.waiting_now, 1);
		finish(&h);
		assert_true(wait_done(&w)); /* it counted h only */
		finish(&w);
		assert_true(w.ok);

		/* All free: 1, holding all. */
		range_lock_init(&a, 0, 9);
		range_lock_init(&b, 10, 19);
		assert_int_equal(range_lock_many_try(&tree, items, 2), 1);
		assert_false(probe(&tree, 5, 5, R));
		assert_false(probe(&tree, 15, 15, R));
		range_unlock_many(&tree, items, 2);
		expect_empty(&tree);
	}
}

/*
 * A set {[0,9], [10,19]} waiting for [10,19] (held by h) holds [0,9]
 * meanwhile (the header: "the ranges already free to it may be held"), so
 * a later writer on [0,9] waits for the set.  When the set gives up (@op:
 * timeout, signal, cancellation), [0,9] is free at once: that writer gets
 * it while h still holds, and nothing of the set is left.
 */
static void giveup_case(int fifo, enum op op)
{
	struct range_lock_tree tree;
	struct actor h, s, w;
	struct range_lock_stats st;
	void *res = NULL;

	new_tree(&tree, fifo);
	start_lock(&h, &tree, 10, 19, W);
	assert_true(wait_done(&h));
	actor_setup(&s, &tree, op);
	s.timeout_ms = op == OP_MANY_TIMED ? 300 : 60000;
	add(&s, 0, 9, W);
	add(&s, 10, 19, W);
	run(&s);
	assert_true(wait_for_waiters(&tree, 1));
	st = stats(&tree);
	assert_int_equal(st.held_now, 2); /* h and the free member */
	assert_false(probe(&tree, 5, 5, R));
	start_lock_waiting(&w, &tree, 0, 9, W, 2); /* counts the set's [0,9] */
	sleep_ms(20);
	assert_false(atomic_load(&w.done));
	if (op == OP_MANY_INTR) {
		assert_true(interrupt_until_done(&s));
	} else if (op == OP_MANY_KILL) {
		pthread_cancel(s.th);
	}
	pthread_join(s.th, &res);
	if (op == OP_MANY_KILL) {
		assert_true(res == PTHREAD_CANCELED);
		assert_false(atomic_load(&s.done));
	} else {
		assert_int_equal(s.ret, op == OP_MANY_TIMED ? -ETIMEDOUT : -EINTR);
	}
	assert_true(wait_done(&w)); /* [0,9] was released, h still holds */
	assert_true(w.ok);
	assert_false(atomic_load(&h.released));
	st = stats(&tree);
	assert_int_equal(st.held_now, 2); /* h and w */
	assert_int_equal(st.waiting_now, 0);
	assert_int_equal(op == OP_MANY_TIMED ? st.gave_up_timeout :
			 op == OP_MANY_INTR ? st.gave_up_signal : st.gave_up_cancel, 1);
	finish(&w);
	assert_true(probe(&tree, 0, 9, W));
	assert_false(probe(&tree, 10, 19, R));
	finish(&h);
	/* The set's requests are in no tree: reusable. */
	assert_int_equal(range_write_trylock(&tree, &s.req[0]), 1);
	assert_int_equal(range_write_trylock(&tree, &s.req[1]), 1);
	range_write_unlock(&tree, &s.req[0]);
	range_write_unlock(&tree, &s.req[1]);
	expect_empty(&tree);
}

static void test_set_timed_gives_up_all(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock a, b, h;
	struct range_lock_item items[2] = { { &a, W }, { &b, R } };
	struct timespec bad = { 0, 1000000000L };

	giveup_case(0, OP_MANY_TIMED);
	giveup_case(1, OP_MANY_TIMED);
	/* A bad clock or deadline: -EINVAL before anything else (as glibc's
	 * rwlock), on free ranges too, and nothing is left in the tree. */
	new_tree(&tree, 0);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 10, 19);
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_MONOTONIC, &bad), -EINVAL);
	bad.tv_nsec = -1;
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_REALTIME, &bad), -EINVAL);
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_MONOTONIC, NULL), -EINVAL);
	bad.tv_nsec = 0;
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_PROCESS_CPUTIME_ID, &bad),
			 -EINVAL);
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_BOOTTIME, &bad), -EINVAL);
	assert_true(probe(&tree, 0, RANGE_LOCK_FULL, W));
	assert_int_equal(stats(&tree).held_now, 0);
	/* a passed deadline on free ranges: held */
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_MONOTONIC, &bad), 0);
	range_unlock_many(&tree, items, 2);
	bad.tv_nsec = 1000000000L;
	range_lock_init(&h, 15, 15);
	range_write_lock(&tree, &h);
	assert_int_equal(range_lock_many_timed(&tree, items, 2, CLOCK_MONOTONIC, &bad), -EINVAL);
	assert_true(probe(&tree, 0, 9, W));
	range_write_unlock(&tree, &h);
	expect_empty(&tree);
}

static void test_set_interruptible_gives_up_all(void **state)
{
	(void)state;
	install_handler();
	giveup_case(0, OP_MANY_INTR);
	giveup_case(1, OP_MANY_INTR);
}

static void test_set_killable_cancel(void **state)
{
	(void)state;
	giveup_case(0, OP_MANY_KILL);
	giveup_case(1, OP_MANY_KILL);
}

/* A granted set holds every member, each in its mode, checked from other
 * threads; the call waits until the last one is free. */
static void test_set_granted_holds_all(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct actor h1, h2, s, w;

		new_tree(&tree, fifo);
		start_lock(&h1, &tree, 5, 5, W);
		start_lock(&h2, &tree, 45, 45, R);
		assert_true(wait_done(&h1) && wait_done(&h2));
		actor_setup(&s, &tree, OP_MANY);
		add(&s, 0, 9, W);
		add(&s, 20, 29, R);
		add(&s, 40, 49, W);
		run(&s);
		assert_true(wait_for_waiters(&tree, 2));
		finish(&h1);
		sleep_ms(30);
		assert_false(atomic_load(&s.done)); /* [40,49] still waits */
		finish(&h2);
		assert_true(wait_done(&s));
		assert_true(s.ok);
		assert_false(probe(&tree, 0, 0, R));
		assert_false(probe(&tree, 9, 9, W));
		assert_true(probe(&tree, 20, 29, R));
		assert_false(probe(&tree, 25, 25, W));
		assert_false(probe(&tree, 40, 49, R));
		assert_true(probe(&tree, 10, 19, W));
		assert_true(probe(&tree, 30, 39, W));
		/* A thread's writer across two members waits for the set. */
		start_lock_waiting(&w, &tree, 25, 45, W, 1);
		sleep_ms(20);
		assert_false(atomic_load(&w.done));
		finish(&s);
		assert_true(wait_done(&w));
		finish(&w);
		expect_empty(&tree);
	}
}

/* Members of one set never conflict with each other: write [0,9] and read
 * [5,15] (and two writers on one range) are held at once. */
static void test_set_overlapping_siblings(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct actor s, t;
		struct range_lock a, b;
		struct range_lock_item items[2] = { { &a, W }, { &b, W } };

		new_tree(&tree, fifo);
		actor_setup(&s, &tree, OP_MANY);
		add(&s, 0, 9, W);
		add(&s, 5, 15, R);
		run(&s);
		assert_true(wait_done(&s));
		assert_false(probe(&tree, 12, 12, W));
		assert_true(probe(&tree, 12, 15, R));
		assert_false(probe(&tree, 0, 4, R));
		assert_false(probe(&tree, 7, 7, R));
		assert_true(probe(&tree, 16, 16, W));
		finish(&s);

		actor_setup(&t, &tree, OP_MANY_TRY);
		add(&t, 0, 9, W);
		add(&t, 0, 9, W);
		add(&t, 3, 3, R);
		run(&t);
		assert_true(wait_done(&t));
		assert_int_equal(t.ret, 1);
		assert_false(probe(&tree, 3, 3, R));
		finish(&t);

		range_lock_init(&a, 0, 9);
		range_lock_init(&b, 0, 9);
		range_lock_many(&tree, items, 2);
		assert_false(probe(&tree, 9, 9, R));
		range_write_unlock(&tree, &a);
		assert_false(probe(&tree, 9, 9, R)); /* b still holds it */
		range_write_unlock(&tree, &b);
		expect_empty(&tree);
	}
}

/* Each member unlocked on its own, in any order, from another thread too;
 * range_unlock_many(); n == 0. */
static void test_set_unlock_members(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock a, b, c;
	struct range_lock_item items[3] = { { &a, W }, { &b, R }, { &c, W } };
	struct actor s, w;
	struct timespec ts;

	new_tree(&tree, 0);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 10, 19);
	range_lock_init(&c, 20, 29);
	range_lock_many(&tree, items, 3);
	range_read_unlock(&tree, &b); /* the middle one first */
	assert_true(probe(&tree, 10, 19, W));
	assert_false(probe(&tree, 0, 0, R));
	assert_false(probe(&tree, 29, 29, R));
	range_write_unlock(&tree, &c);
	assert_true(probe(&tree, 20, 29, W));
	assert_false(probe(&tree, 0, 0, R));
	range_write_unlock(&tree, &a);
	assert_int_equal(nr_held(&tree), 0);

	/* A set taken by a thread, its members unlocked here one by one,
	 * each releasing its own waiter. */
	actor_setup(&s, &tree, OP_MANY);
	add(&s, 0, 9, W);
	add(&s, 10, 19, W);
	run(&s);
	assert_true(wait_done(&s));
	start_lock_waiting(&w, &tree, 12, 12, W, 1);
	range_write_unlock(&tree, &s.req[0]);
	sleep_ms(20);
	assert_false(atomic_load(&w.done));
	range_write_unlock(&tree, &s.req[1]);
	assert_true(wait_done(&w));
	finish(&w);
	atomic_store(&s.caller_unlocks, 1);
	finish(&s);

	/* n == 0: every call returns at once, holding nothing. */
	assert_int_equal(range_lock_many_try(&tree, NULL, 0), 1);
	assert_int_equal(range_lock_many_try(&tree, items, 0), 1);
	range_lock_many(&tree, NULL, 0);
	assert_int_equal(range_lock_many_interruptible(&tree, NULL, 0), 0);
	assert_int_equal(range_lock_many_killable(&tree, NULL, 0), 0);
	deadline_in(CLOCK_MONOTONIC, 100, &ts);
	assert_int_equal(range_lock_many_timed(&tree, NULL, 0, CLOCK_MONOTONIC, &ts), 0);
	range_unlock_many(&tree, NULL, 0);
	expect_empty(&tree);
}

/* ---- sets: order ------------------------------------------------------ */

/* FIFO: a set arriving behind a waiting writer waits behind it (on the
 * member it shares with it), holding its free member meanwhile. */
static void test_set_fifo_behind_waiting_writer(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock h;
	struct actor w1, s;

	new_tree(&tree, 1);
	range_lock_init(&h, 0, 9);
	range_write_lock(&tree, &h);
	start_lock_waiting(&w1, &tree, 0, 20, W, 1);
	actor_setup(&s, &tree, OP_MANY);
	add(&s, 15, 15, W); /* intersects only the waiting w1 */
	add(&s, 50, 50, W); /* free */
	run(&s);
	assert_true(wait_for_waiters(&tree, 2));
	assert_false(probe(&tree, 50, 50, R));
	range_write_unlock(&tree, &h);
	assert_true(wait_done(&w1));
	sleep_ms(20);
	assert_false(atomic_load(&s.done));
	finish(&w1);
	assert_true(wait_done(&s));
	finish(&s);
	assert_int_equal(w1.order, 1);
	assert_int_equal(s.order, 2);
	expect_empty(&tree);
}

#ifdef RL_TEST_LONG_HANDOFF
/*
 * Default policy (no waiter reaches the hand-off bound here): a set
 * overtakes only as a whole.  w waits on [20,29] for h2 ([15,22]); the
 * set's member [25,35] alone would pass w (nothing held conflicts), but its
 * other member [0,9] is blocked by the held h1: then no member overtakes,
 * so w, once h2 leaves, is granted before the set.  And a set whose every
 * member may overtake does, at once.
 */
static void test_set_overtakes_only_as_a_whole(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock h1, h2;
	struct actor w, s, t;

	new_tree(&tree, 0);
	range_lock_init(&h1, 0, 9);
	range_lock_init(&h2, 15, 22);
	range_write_lock(&tree, &h1);
	range_write_lock(&tree, &h2);
	start_lock_waiting(&w, &tree, 20, 29, W, 1);
	actor_setup(&s, &tree, OP_MANY);
	add(&s, 25, 35, W);
	add(&s, 0, 9, W);
	run(&s);
	assert_true(wait_for_waiters(&tree, 3)); /* w, and both members */
	assert_true(probe(&tree, 30, 35, W));    /* it holds nothing there */
	range_write_unlock(&tree, &h2);
	assert_true(wait_done(&w)); /* not passed: it counts nothing */
	range_write_unlock(&tree, &h1);
	sleep_ms(20);
	assert_false(atomic_load(&s.done)); /* [25,35] waits for w */
	finish(&w);
	assert_true(wait_done(&s));
	finish(&s);

	/* Every member may overtake: the set passes the waiter at once. */
	range_write_lock(&tree, &h2);
	start_lock_waiting(&w, &tree, 20, 29, W, 1);
	actor_setup(&t, &tree, OP_MANY_TRY);
	add(&t, 25, 35, W);
	add(&t, 0, 9, W);
	run(&t);
	assert_true(wait_done(&t));
	assert_int_equal(t.ret, 1);
	range_write_unlock(&tree, &h2);
	sleep_ms(20);
	assert_false(atomic_load(&w.done)); /* it waits for the set now */
	finish(&t);
	assert_true(wait_done(&w));
	finish(&w);
	expect_empty(&tree);
}
#endif

/* ---- sets: statistics and dump ---------------------------------------- */

static uint64_t dump_seq(const char *buf, const char *prefix)
{
	const char *p = strstr(buf, prefix), *q;

	if (!p)
		return UINT64_MAX;
	q = strstr(p, "seq=");
	return q ? strtoull(q + 4, NULL, 10) : UINT64_MAX;
}

static void test_set_stats_and_dump(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock a, b, c, h1, h2;
	struct range_lock_item items[3] = { { &a, R }, { &b, W }, { &c, W } };
	struct range_lock_stats st;
	struct actor s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	new_tree(&tree, 1);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 10, 19);
	range_lock_init(&c, 30, 39);
	assert_int_equal(range_lock_many_try(&tree, items, 3), 1);
	st = stats(&tree);
	assert_int_equal(st.read_acquired, 1);
	assert_int_equal(st.write_acquired, 2);
	assert_int_equal(st.contended, 0);
	assert_int_equal(st.held_now, 3);
	range_unlock_many(&tree, items, 3);
	assert_int_equal(nr_held(&tree), 0);

	range_lock_init(&h1, 10, 19);
	range_lock_init(&h2, 30, 39);
	range_write_lock(&tree, &h1);
	range_write_lock(&tree, &h2);
	actor_setup(&s, &tree, OP_MANY);
	add(&s, 0, 9, R);
	add(&s, 10, 19, W);
	add(&s, 30, 39, W);
	run(&s);
	assert_true(wait_for_waiters(&tree, 2)); /* two members wait */
	st = stats(&tree);
	assert_int_equal(st.contended, 1);       /* once for the call */
	assert_int_equal(st.held_now, 3);        /* h1, h2, [0,9] */
	assert_int_equal(st.waiting_now, 2);
	assert_int_equal(st.read_acquired, 2);
	f = open_memstream(&buf, &len);
	range_lock_tree_dump(&tree, f);
	fclose(f);
	assert_non_null(strstr(buf, "5 request(s)"));
	assert_non_null(strstr(buf, "[0, 9] read  held     seq="));
	assert_non_null(strstr(buf, "[10, 19] write waiting  seq="));
	assert_non_null(strstr(buf, "[30, 39] write waiting  seq="));
	/* The set's members: one place in the order, behind h1 and h2. */
	assert_int_equal(dump_seq(buf, "[0, 9] read"), dump_seq(buf, "[10, 19] write waiting"));
	assert_int_equal(dump_seq(buf, "[0, 9] read"), dump_seq(buf, "[30, 39] write waiting"));
	assert_true(dump_seq(buf, "[0, 9] read") > dump_seq(buf, "[10, 19] write held"));
	assert_true(dump_seq(buf, "[0, 9] read") > dump_seq(buf, "[30, 39] write held"));
	assert_non_null(strstr(buf, "blocking=1"));
	free(buf);
	range_write_unlock(&tree, &h1);
	range_write_unlock(&tree, &h2);
	assert_true(wait_done(&s));
	st = stats(&tree);
	assert_int_equal(st.write_acquired, 2 + 2 + 2);
	assert_int_equal(st.read_acquired, 2);
	assert_int_equal(st.contended, 1);
	assert_int_equal(st.held_now, 3);
	assert_int_equal(st.waiting_now, 0);
	finish(&s);
	expect_empty(&tree);
}

/* ---- misuse (in child processes) -------------------------------------- */

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

static void set_twice(void)
{
	struct range_lock r;
	struct range_lock_item items[2] = { { &r, W }, { &r, R } };

	range_lock_init(&r, 3, 7);
	range_lock_many(&misuse_tree, items, 2);
}

static void set_twice_try_busy(void)
{
	struct range_lock r, h;
	struct range_lock_item items[2] = { { &r, W }, { &r, W } };

	range_lock_init(&h, 0, 9);
	range_write_lock(&misuse_tree, &h);
	range_lock_init(&r, 3, 7);
	range_lock_many_try(&misuse_tree, items, 2);
}

static void set_bad_mode(void)
{
	struct range_lock r;
	struct range_lock_item items[1] = { { &r, 2 } };

	range_lock_init(&r, 3, 7);
	range_lock_many(&misuse_tree, items, 1);
}

static void set_null_request(void)
{
	struct range_lock r;
	struct range_lock_item items[2] = { { &r, W }, { NULL, W } };

	range_lock_init(&r, 3, 7);
	range_lock_many_try(&misuse_tree, items, 2);
}

static void set_null_tree(void)
{
	struct range_lock r;
	struct range_lock_item items[1] = { { &r, W } };

	range_lock_init(&r, 3, 7);
	range_lock_many(NULL, items, 1);
}

static void set_null_items(void)
{
	range_lock_many(&misuse_tree, NULL, 1);
}

static void set_member_in_tree(void)
{
	struct range_lock r, s;
	struct range_lock_item items[2] = { { &s, W }, { &r, W } };

	range_lock_init(&r, 3, 7);
	range_lock_init(&s, 20, 20);
	range_read_lock(&misuse_tree, &r);
	range_lock_many(&misuse_tree, items, 2);
}

static void unlock_many_wrong_mode(void)
{
	struct range_lock r;
	struct range_lock_item items[1] = { { &r, R } };

	range_lock_init(&r, 3, 7);
	range_lock_many(&misuse_tree, items, 1);
	items[0].mode = W;
	range_unlock_many(&misuse_tree, items, 1);
}

static void shrink_not_held(void)
{
	struct range_lock r;

	range_lock_init(&r, 3, 7);
	range_lock_shrink(&misuse_tree, &r, 4, 5);
}

static void grow_not_held(void)
{
	struct range_lock r;

	range_lock_init(&r, 3, 7);
	range_lock_grow_try(&misuse_tree, &r, 0, 9);
}

static void test_set_misuse_aborts(void **state)
{
	(void)state;
	range_lock_tree_init(&misuse_tree);
	expect_abort(set_twice, "range_lock_many([3, 7]): request appears twice in the set");
	expect_abort(set_twice_try_busy, "range_lock_many([3, 7]): request appears twice in the set");
	expect_abort(set_bad_mode, "mode is neither RANGE_LOCK_READ nor RANGE_LOCK_WRITE");
	expect_abort(set_null_request, "NULL request in the set");
	expect_abort(set_null_tree, "NULL tree or set");
	expect_abort(set_null_items, "NULL tree or set");
	expect_abort(set_member_in_tree, "range_lock_many([3, 7]): request is already in a tree");
	expect_abort(unlock_many_wrong_mode, "([3, 7]): range is held for reading");
	expect_abort(shrink_not_held, "range_lock_shrink([3, 7]): request is not in this tree");
	expect_abort(grow_not_held, "range_lock_grow_try([3, 7]): request is not in this tree");
}

/* ---- shrink ----------------------------------------------------------- */

/*
 * Shrinking L [0,99] (write) to [10,50]: a waiter on the dropped part only
 * ([90,95], and a reader on [0,5]) gets its range at once; one that still
 * intersects ([40,60]) keeps waiting until L's unlock; the call never waits
 * (it runs here, on the main thread, under the watchdog); mode and place
 * are kept.
 */
static void test_shrink_releases_exactly(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock l;
		struct actor a, b, c;

		new_tree(&tree, fifo);
		range_lock_init(&l, 0, 99);
		range_write_lock(&tree, &l);
		start_lock_waiting(&a, &tree, 90, 95, W, 1);
		start_lock_waiting(&b, &tree, 40, 60, W, 2);
		start_lock_waiting(&c, &tree, 0, 5, R, 3);
		/* Not sub-ranges: nothing changes. */
		assert_int_equal(range_lock_shrink(&tree, &l, 0, 100), -EINVAL);
		assert_int_equal(range_lock_shrink(&tree, &l, 10, 9), -EINVAL);
		assert_int_equal(range_lock_shrink(&tree, &l, 100, 100), -EINVAL);
		assert_int_equal(range_lock_shrink(&tree, &l, UINT64_MAX, UINT64_MAX), -EINVAL);
		assert_true(l.start == 0 && l.last == 99);
		sleep_ms(10);
		assert_int_equal(nr_waiting(&tree), 3);
		/* The same range: no change. */
		assert_int_equal(range_lock_shrink(&tree, &l, 0, 99), 0);
		assert_int_equal(nr_waiting(&tree), 3);

		assert_int_equal(range_lock_shrink(&tree, &l, 10, 50), 0);
		assert_true(l.start == 10 && l.last == 50);
		assert_true(wait_done(&a));
		assert_true(wait_done(&c));
		sleep_ms(20);
		assert_false(atomic_load(&b.done));
		assert_int_equal(nr_waiting(&tree), 1);
		assert_false(probe(&tree, 10, 10, R)); /* still a writer */
		assert_false(probe(&tree, 50, 50, R));
		assert_true(probe(&tree, 70, 80, W));
		assert_true(probe(&tree, 6, 9, W));
		range_write_unlock(&tree, &l);
		assert_true(wait_done(&b));
		finish(&a);
		finish(&b);
		finish(&c);
		assert_true(a.ok && b.ok && c.ok);
		assert_int_equal(b.order, 3);
		expect_empty(&tree);
	}
	/* A reader keeps reading: shrunk, other readers still share it. */
	{
		struct range_lock_tree tree;
		struct range_lock l;
		struct actor w;

		new_tree(&tree, 0);
		range_lock_init(&l, 0, 99);
		range_read_lock(&tree, &l);
		start_lock_waiting(&w, &tree, 60, 70, W, 1);
		assert_int_equal(range_lock_shrink(&tree, &l, 0, 59), 0);
		assert_true(wait_done(&w));
		assert_true(probe(&tree, 0, 59, R));
		assert_false(probe(&tree, 59, 59, W));
		finish(&w);
		range_read_unlock(&tree, &l);
		expect_empty(&tree);
	}
}

/* The writer's hold through the lock word (alone on an empty tree) and a
 * fast read (fast reads on, a lone reader) can shrink and grow. */
static void test_shrink_grow_fast_paths(void **state)
{
	(void)state;
	for (int kind = 0; kind < 2; kind++) {
		struct range_lock_tree tree;
		struct range_lock l;
		int mode = kind ? R : W, other = kind ? W : R;
		bool fast;

		range_lock_tree_init(&tree);
		fast = kind && range_lock_tree_set_fast_read(&tree, 1) == 0;
		if (kind && !fast)
			fprintf(stderr, "note: no fast reads in this variant\n");
		range_lock_init(&l, 0, 99);
		if (kind)
			range_read_lock(&tree, &l);
		else
			range_write_lock(&tree, &l);
		assert_int_equal(range_lock_shrink(&tree, &l, 10, 20), 0);
		assert_true(l.start == 10 && l.last == 20);
		assert_true(probe(&tree, 0, 9, W));
		assert_true(probe(&tree, 21, 99, W));
		assert_false(probe(&tree, 15, 15, other));
		assert_int_equal(range_lock_grow(&tree, &l, 0, 200), 0);
		assert_true(l.start == 0 && l.last == 200);
		assert_false(probe(&tree, 150, 150, W));
		assert_false(probe(&tree, 0, 0, W));
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 300), 1);
		assert_false(probe(&tree, 300, 300, W));
		assert_true(probe(&tree, 301, 301, W));
		unlock_one(&tree, &l, mode);
		assert_true(probe(&tree, 0, RANGE_LOCK_FULL, W));
		/* Again, grow first. */
		range_lock_init(&l, 10, 20);
		if (kind)
			range_read_lock(&tree, &l);
		else
			range_write_lock(&tree, &l);
		assert_int_equal(range_lock_grow(&tree, &l, 5, 25), 0);
		assert_false(probe(&tree, 5, 5, W));
		assert_int_equal(range_lock_shrink(&tree, &l, 25, 25), 0);
		assert_true(probe(&tree, 5, 24, W));
		assert_false(probe(&tree, 25, 25, W));
		unlock_one(&tree, &l, mode);
		assert_int_equal(range_lock_tree_destroy(&tree), 0);
	}
}

/* ---- grow ------------------------------------------------------------- */

/*
 * Grow waits only for conflicts in the added part, and holds the old part
 * all the while: G holds [0,9] and grows to [0,19]; x (main) holds [15,19]
 * (taken after G: a later holder, which the growth waits for); t, a writer
 * on [5,5] that came after G, never gets in while the grow waits.
 */
static void test_grow_waits_for_later_holder(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock x;
		struct actor g, t;

		new_tree(&tree, fifo);
		start_holder(&g, &tree, OP_GROW, 0, 9, W, 0, 19);
		range_lock_init(&x, 15, 19);
		range_write_lock(&tree, &x);
		start_grow(&g);
		assert_true(wait_for_waiters(&tree, 1));
		start_lock_waiting(&t, &tree, 5, 5, W, 2);
		sleep_ms(30);
		assert_false(atomic_load(&g.done));
		assert_false(atomic_load(&t.done));
		assert_false(probe(&tree, 0, 9, R));
		range_write_unlock(&tree, &x);
		assert_true(wait_done(&g));
		assert_true(g.ok);
		assert_true(g.after_s == 0 && g.after_e == 19);
		assert_false(probe(&tree, 19, 19, R));
		sleep_ms(20);
		assert_false(atomic_load(&t.done));
		finish(&g);
		assert_true(wait_done(&t));
		finish(&t);
		assert_int_equal(g.order, 1);
		assert_int_equal(t.order, 2);
		expect_empty(&tree);
	}
}

/* A grow does not wait for requests that came after the holder: waiters
 * on the old part and across both parts (they wait for the holder), and
 * readers beside a growing reader. */
static void test_grow_try_passes_later_waiters(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock l, x;
		struct actor t, z;

		new_tree(&tree, fifo);
		range_lock_init(&l, 0, 9);
		range_write_lock(&tree, &l);
		start_lock_waiting(&t, &tree, 5, 5, W, 1);
		start_lock_waiting(&z, &tree, 8, 12, W, 2); /* into the added part */
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 19), 1);
		assert_true(l.start == 0 && l.last == 19);
		assert_false(probe(&tree, 15, 15, R));
		assert_true(probe(&tree, 20, 20, W));
		/* Nothing changed, nothing waited. */
		assert_int_equal(range_lock_grow(&tree, &l, 0, 19), 0);
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 19), 1);
		/* Not super-ranges: -EINVAL, nothing changed. */
		assert_int_equal(range_lock_grow(&tree, &l, 1, 19), -EINVAL);
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 18), -EINVAL);
		assert_int_equal(range_lock_grow_timed(&tree, &l, 5, 30, CLOCK_MONOTONIC,
						       NULL), -EINVAL);
		assert_int_equal(range_lock_grow_interruptible(&tree, &l, 10, 5), -EINVAL);
		assert_int_equal(range_lock_grow_killable(&tree, &l, 1, 30), -EINVAL);
		assert_true(l.start == 0 && l.last == 19);
		assert_int_equal(nr_waiting(&tree), 2);
		/* A later holder of the added part blocks a grow_try. */
		range_lock_init(&x, 25, 25);
		range_read_lock(&tree, &x);
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 30), 0);
		assert_true(l.start == 0 && l.last == 19);
		assert_true(probe(&tree, 26, 30, W)); /* nothing left of it */
		range_read_unlock(&tree, &x);
		range_write_unlock(&tree, &l);
		assert_true(wait_done(&t));
		finish(&t);
		assert_true(wait_done(&z));
		finish(&z);
		expect_empty(&tree);
	}
	/* Readers: a growing reader shares with readers. */
	{
		struct range_lock_tree tree;
		struct range_lock l, r2;

		new_tree(&tree, 0);
		range_lock_init(&l, 0, 9);
		range_lock_init(&r2, 15, 25);
		range_read_lock(&tree, &l);
		range_read_lock(&tree, &r2);
		assert_int_equal(range_lock_grow_try(&tree, &l, 0, 20), 1);
		assert_false(probe(&tree, 12, 12, W));
		range_read_unlock(&tree, &r2);
		range_read_unlock(&tree, &l);
		expect_empty(&tree);
	}
}

/*
 * The ordering rules.  L = G's [0,9]; x holds [15,19] (taken after L);
 * w2, a writer on [15,19], and w3, a writer on [8,12], came after L and wait
 * (w2 for x, w3 for L).  G grows to [0,19]: the growth waits for x, w2 and
 * w3 wait for the grown request: when x leaves, G gets [0,19] and w2 is NOT
 * granted; both get in once G unlocks.
 */
static void test_grow_later_waiter_waits_for_grown(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock x;
		struct actor g, w2, w3;

		new_tree(&tree, fifo);
		start_holder(&g, &tree, OP_GROW, 0, 9, W, 0, 19);
		range_lock_init(&x, 15, 19);
		range_write_lock(&tree, &x);
		start_lock_waiting(&w2, &tree, 15, 19, W, 1);
		start_lock_waiting(&w3, &tree, 8, 12, W, 2);
		sleep_ms(20); /* (default policy: past the real hand-off bound) */
		start_grow(&g);
		assert_true(wait_for_waiters(&tree, 3));
		sleep_ms(20);
		assert_false(atomic_load(&g.done));
		range_write_unlock(&tree, &x);
		assert_true(wait_done(&g));
		sleep_ms(30);
		assert_false(atomic_load(&w2.done));
		assert_false(atomic_load(&w3.done));
		finish(&g);
		assert_true(wait_done(&w2));
		assert_true(wait_done(&w3));
		finish(&w2);
		finish(&w3);
		assert_true(g.ok && w2.ok && w3.ok);
		assert_true(g.after_s == 0 && g.after_e == 19);
		assert_int_equal(g.order, 1);
		expect_empty(&tree);
	}
}

/* The grown part waits for a request that came before L and waits there
 * (FIFO: e waits on [10,25] for h; L [0,9] is free): h leaves, e is granted,
 * the grow still waits; e leaves, the grow is done. */
static void test_grow_waits_for_earlier_waiter(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock h;
		struct actor e, g;

		new_tree(&tree, fifo);
		range_lock_init(&h, 10, 19);
		range_write_lock(&tree, &h);
		start_lock_waiting(&e, &tree, 10, 25, W, 1);
		start_holder(&g, &tree, OP_GROW, 0, 9, W, 0, 19);
		start_grow(&g);
		assert_true(wait_for_waiters(&tree, 2));
		range_write_unlock(&tree, &h);
		assert_true(wait_done(&e));
		sleep_ms(30);
		assert_false(atomic_load(&g.done));
		finish(&e);
		assert_true(wait_done(&g));
		finish(&g);
		assert_int_equal(e.order, 1);
		assert_int_equal(g.order, 2);
		expect_empty(&tree);
	}
}

/*
 * Give-up of a grow (@op: timed, interruptible, killable; _try is in
 * grow_try_passes_later_waiters) leaves the request exactly as before: its
 * range, held (a probe fails there), the later waiter t on its old part
 * still waiting, and the waiter w2 of the added part no longer counting
 * the growth (granted as soon as x leaves, while G still holds [0,9]).
 */
static void grow_giveup_case(int fifo, enum op op)
{
	struct range_lock_tree tree;
	struct range_lock x;
	struct actor g, t, w2;
	struct range_lock_stats st;

	new_tree(&tree, fifo);
	start_holder(&g, &tree, op, 0, 9, W, 0, 19);
	g.timeout_ms = 300; /* read after start_grow() */
	range_lock_init(&x, 15, 19);
	range_write_lock(&tree, &x);
	start_lock_waiting(&t, &tree, 5, 5, W, 1);
	start_lock_waiting(&w2, &tree, 15, 19, W, 2);
	start_grow(&g);
	assert_true(wait_for_waiters(&tree, 3));
	if (op == OP_GROW_INTR) {
		assert_true(interrupt_until_done(&g));
	} else if (op == OP_GROW_KILL) {
		pthread_cancel(g.th);
		assert_true(wait_flag(&g.cancelled));
	} else {
		assert_true(wait_done(&g));
	}
	if (op != OP_GROW_KILL) {
		assert_int_equal(g.ret, op == OP_GROW_TIMED ? -ETIMEDOUT : -EINTR);
		assert_false(atomic_load(&g.cancelled));
	}
	assert_true(g.after_s == 0 && g.after_e == 9);
	assert_int_equal(nr_waiting(&tree), 2);   /* t and w2 */
	assert_false(probe(&tree, 0, 9, R));      /* still held */
	assert_true(probe(&tree, 10, 14, W));     /* nothing of the growth */
	st = stats(&tree);
	assert_int_equal(st.held_now, 2);         /* G and x */
	assert_int_equal(op == OP_GROW_TIMED ? st.gave_up_timeout :
			 op == OP_GROW_INTR ? st.gave_up_signal : st.gave_up_cancel, 1);
	range_write_unlock(&tree, &x);
	assert_true(wait_done(&w2));              /* it no longer counts G */
	sleep_ms(20);
	assert_false(atomic_load(&t.done));       /* it still waits for G */
	finish(&w2);
	finish(&g);
	if (op == OP_GROW_KILL)
		assert_true(atomic_load(&g.released));
	assert_true(wait_done(&t));
	finish(&t);
	expect_empty(&tree);
}

static void test_grow_timed_gives_up(void **state)
{
	(void)state;
	struct range_lock_tree tree;
	struct range_lock l, x;
	struct timespec bad = { 0, 1000000000L };

	grow_giveup_case(0, OP_GROW_TIMED);
	grow_giveup_case(1, OP_GROW_TIMED);
	/* A bad clock or deadline: -EINVAL before anything else (as glibc's
	 * rwlock), when the added units are free too; nothing changed. */
	new_tree(&tree, 0);
	range_lock_init(&l, 0, 9);
	range_write_lock(&tree, &l);
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_MONOTONIC, &bad), -EINVAL);
	bad.tv_nsec = -1;
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_REALTIME, &bad), -EINVAL);
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_MONOTONIC, NULL), -EINVAL);
	bad.tv_nsec = 0;
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_THREAD_CPUTIME_ID, &bad),
			 -EINVAL);
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_MONOTONIC_RAW, &bad),
			 -EINVAL);
	assert_true(l.start == 0 && l.last == 9);
	assert_true(probe(&tree, 10, RANGE_LOCK_FULL, W));
	/* a passed deadline, added units free: grown */
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 19, CLOCK_MONOTONIC, &bad), 0);
	assert_true(l.start == 0 && l.last == 19);
	bad.tv_nsec = 1000000000L;
	range_lock_init(&x, 25, 25);
	range_write_lock(&tree, &x);
	assert_int_equal(range_lock_grow_timed(&tree, &l, 0, 29, CLOCK_MONOTONIC, &bad),
			 -EINVAL);
	assert_true(l.start == 0 && l.last == 19);
	assert_true(probe(&tree, 20, 24, W));
	range_write_unlock(&tree, &x);
	range_write_unlock(&tree, &l);
	expect_empty(&tree);
}

static void test_grow_interruptible_gives_up(void **state)
{
	(void)state;
	install_handler();
	grow_giveup_case(0, OP_GROW_INTR);
	grow_giveup_case(1, OP_GROW_INTR);
}

static void test_grow_killable_cancel(void **state)
{
	(void)state;
	grow_giveup_case(0, OP_GROW_KILL);
	grow_giveup_case(1, OP_GROW_KILL);
}

/* Both sides at once, and a reader growing over a writer's waiter. */
static void test_grow_both_sides(void **state)
{
	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		struct range_lock_tree tree;
		struct range_lock lo, hi;
		struct actor g;

		new_tree(&tree, fifo);
		start_holder(&g, &tree, OP_GROW, 40, 49, R, 30, 59);
		range_lock_init(&lo, 30, 31);
		range_lock_init(&hi, 58, 59);
		range_write_lock(&tree, &lo);
		range_write_lock(&tree, &hi);
		assert_true(probe(&tree, 35, 39, R));
		start_grow(&g);
		assert_true(wait_for_waiters(&tree, 2)); /* both parts wait */
		range_write_unlock(&tree, &lo);
		sleep_ms(30);
		assert_false(atomic_load(&g.done));
		assert_false(probe(&tree, 30, 31, W)); /* its part is held now */
		range_write_unlock(&tree, &hi);
		assert_true(wait_done(&g));
		assert_true(g.after_s == 30 && g.after_e == 59);
		assert_true(probe(&tree, 30, 59, R));
		assert_false(probe(&tree, 59, 59, W));
		finish(&g);
		expect_empty(&tree);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_deadlock_pattern),
		cmocka_unit_test(test_set_try_all_or_nothing),
		cmocka_unit_test(test_set_timed_gives_up_all),
		cmocka_unit_test(test_set_interruptible_gives_up_all),
		cmocka_unit_test(test_set_killable_cancel),
		cmocka_unit_test(test_set_granted_holds_all),
		cmocka_unit_test(test_set_overlapping_siblings),
		cmocka_unit_test(test_set_unlock_members),
		cmocka_unit_test(test_set_fifo_behind_waiting_writer),
#ifdef RL_TEST_LONG_HANDOFF
		cmocka_unit_test(test_set_overtakes_only_as_a_whole),
#endif
		cmocka_unit_test(test_set_stats_and_dump),
		cmocka_unit_test(test_set_misuse_aborts),
		cmocka_unit_test(test_shrink_releases_exactly),
		cmocka_unit_test(test_shrink_grow_fast_paths),
		cmocka_unit_test(test_grow_waits_for_later_holder),
		cmocka_unit_test(test_grow_try_passes_later_waiters),
		cmocka_unit_test(test_grow_later_waiter_waits_for_grown),
		cmocka_unit_test(test_grow_waits_for_earlier_waiter),
		cmocka_unit_test(test_grow_timed_gives_up),
		cmocka_unit_test(test_grow_interruptible_gives_up),
		cmocka_unit_test(test_grow_killable_cancel),
		cmocka_unit_test(test_grow_both_sides),
	};

	watchdog(240);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
