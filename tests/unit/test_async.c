/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous requests (range_read_lock_async(), range_write_lock_async(),
 * range_lock_async_cancel()) with real threads, in both policies.  Built
 * like test_many.c: against the library as configured, the forced POSIX
 * backend, the checking mode (the tree's invariant at every release of the
 * internal lock) and the one-hour hand-off bound (RL_TEST_LONG_HANDOFF),
 * where only the asynchronous request's own mark keeps overtakers out.
 *
 * Threads never assert: a "holder" thread holds a range, waits for "go",
 * then releases it in one of several ways and records what it saw; the
 * completions record their calls, status, thread and order; the main
 * thread asserts after joining.  Every binary runs under a watchdog.
 *
 * MUTANTS (the code broken on purpose, then restored; what caught each, in
 * all four variants):
 *  A1 put_blocker() does not queue the completion of an asynchronous grant
 *     (async_granted() removed): granted_on_releasing_thread and
 *     readers_share fail, then nothing_overtakes hangs (the later lock
 *     call waits for a request nobody was told about) until the watchdog.
 *  A2 the submission does not HANDOFF-mark a queued request: in the
 *     default policy a trylock and a later lock call overtake it:
 *     nothing_overtakes, cancel_withdraws_exactly (the reader overtook),
 *     stats_and_dump (no "handoff").
 *  A3 range_lock_async_cancel() withdraws whatever its state (the test of
 *     the queued tag removed): held_at_once, granted_on_releasing_thread,
 *     cancel_after_grant (and cancel_races_grant in three variants) fail:
 *     a held request is "withdrawn".
 *  A4 rl_async_run() runs nested (the "running" test removed):
 *     chain_in_order (depth 64 instead of 1).
 *  A5 rl_async_run() leaves cancellation enabled: completion_not_cancelled
 *     (the releasing thread is unwound inside the first completion; the
 *     second never runs).
 *  A6 rl_file_lock() without the may-wait check: test_bound_tree (the
 *     completion blocks on the other description's OFD lock until the
 *     child's alarm, no abort).
 *  A7 rl_async_run() without its cleanup handler: test_misuse_aborts (a
 *     completion's pthread_exit() passes silently, the second completion
 *     is lost).
 */
#include "test_util.h"

#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <cmocka.h>

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- completions that record ----------------------------------------- */

struct req {
	struct range_lock_async a;      /* first: the completion gets &a */
	atomic_int calls;
	int status;
	pid_t tid;
	int order;
	int depth;                      /* completions running on its thread */
	bool unlock_in_completion;
	bool reader;
	struct range_lock_tree *tree;
};

static atomic_int next_order;
static _Thread_local int completion_depth;
static atomic_int max_depth;

static void record(struct range_lock_async *a, int status)
{
	struct req *r = (struct req *)a;
	int d = ++completion_depth;

	if (d > atomic_load(&max_depth))
		atomic_store(&max_depth, d);
	r->status = status;
	r->tid = gettid_();
	r->order = atomic_fetch_add(&next_order, 1);
	r->depth = d;
	if (r->unlock_in_completion && status == 0) {
		if (r->reader)
			range_read_unlock(r->tree, &a->lock);
		else
			range_write_unlock(r->tree, &a->lock);
	}
	atomic_fetch_add(&r->calls, 1); /* last: the main thread polls it */
	completion_depth--;
}

static void req_init(struct req *r, struct range_lock_tree *t, uint64_t s, uint64_t e,
		     bool reader)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(range_lock_async_init(&r->a, s, e, record, r), 0);
	r->tree = t;
	r->reader = reader;
}

static int submit(struct req *r)
{
	return r->reader ? range_read_lock_async(r->tree, &r->a)
			 : range_write_lock_async(r->tree, &r->a);
}

static void req_unlock(struct req *r)
{
	if (r->reader)
		range_read_unlock(r->tree, &r->a.lock);
	else
		range_write_unlock(r->tree, &r->a.lock);
}

/* Is [s, e] free for a writer right now (a trylock from this thread)? */
static bool free_now(struct range_lock_tree *t, uint64_t s, uint64_t e)
{
	struct range_lock probe;

	range_lock_init(&probe, s, e);
	if (!range_write_trylock(t, &probe))
		return false;
	range_write_unlock(t, &probe);
	return true;
}

static void tree_setup(struct range_lock_tree *t, struct range_lock_stats *st, bool fifo)
{
	range_lock_tree_init(t);
	assert_int_equal(range_lock_tree_set_fifo(t, fifo), 0);
	memset(st, 0, sizeof(*st));
	assert_int_equal(range_lock_tree_enable_stats(t, st), 0);
	atomic_store(&next_order, 0);
	atomic_store(&max_depth, 0);
}

/* ---- a thread that holds a range and releases it on "go" -------------- */

enum release { REL_UNLOCK, REL_DOWNGRADE, REL_SHRINK, REL_TIMED_GIVE_UP, REL_CANCELLED };

struct holder {
	struct range_lock_tree *tree;
	struct range_lock lock;
	uint64_t s, e;
	bool reader;
	enum release how;
	uint64_t ks, ke;        /* shrink: keep [ks, ke]; timed: the blocker's range */
	atomic_int holding;
	atomic_int go;
	pid_t tid;
	int ret;
	pthread_t th;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;

	h->tid = gettid_();
	if (h->how == REL_TIMED_GIVE_UP) {
		/* Wait in the tree for 200 ms, behind the main thread's hold. */
		struct timespec ts;

		range_lock_init(&h->lock, h->s, h->e);
		deadline_in(CLOCK_MONOTONIC, 200, &ts);
		atomic_store(&h->holding, 1);
		h->ret = range_write_timedlock(h->tree, &h->lock, CLOCK_MONOTONIC, &ts);
		if (h->ret == 0)
			range_write_unlock(h->tree, &h->lock);
		return NULL;
	}
	range_lock_init(&h->lock, h->s, h->e);
	if (h->reader)
		range_read_lock(h->tree, &h->lock);
	else
		range_write_lock(h->tree, &h->lock);
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->go))
		sleep_ms(1);
	switch (h->how) {
	case REL_UNLOCK:
	case REL_CANCELLED:
		if (h->reader)
			range_read_unlock(h->tree, &h->lock);
		else
			range_write_unlock(h->tree, &h->lock);
		break;
	case REL_DOWNGRADE:
		range_downgrade_write(h->tree, &h->lock);
		range_read_unlock(h->tree, &h->lock);
		break;
	case REL_SHRINK:
		h->ret = range_lock_shrink(h->tree, &h->lock, h->ks, h->ke);
		range_write_unlock(h->tree, &h->lock);
		break;
	case REL_TIMED_GIVE_UP:
		break;
	}
	return NULL;
}

static void holder_start(struct holder *h, struct range_lock_tree *t, uint64_t s,
			 uint64_t e, bool reader, enum release how)
{
	memset(h, 0, sizeof(*h));
	h->tree = t;
	h->s = s;
	h->e = e;
	h->reader = reader;
	h->how = how;
	assert_int_equal(pthread_create(&h->th, NULL, holder_main, h), 0);
	while (!atomic_load(&h->holding))
		sleep_ms(1);
}

static void holder_release(struct holder *h)
{
	atomic_store(&h->go, 1);
	assert_int_equal(pthread_join(h->th, NULL), 0);
}

/* ---- the tests --------------------------------------------------------- */

static void submit_without_completion(void)
{
	DEFINE_RANGE_LOCK_TREE(t);
	struct range_lock_async a;

	range_lock_async_init(&a, 0, 9, NULL, NULL);
	range_write_lock_async(&t, &a);
}

static void cancel_never_submitted(void)
{
	DEFINE_RANGE_LOCK_TREE(t);
	struct range_lock_async a;

	range_lock_async_init(&a, 0, 9, record, NULL);
	range_lock_async_cancel(&t, &a);
}

static void test_init_errors(void **state)
{
	struct range_lock_async a;
	struct child_result res;

	(void)state;
	assert_int_equal(range_lock_async_init(&a, 5, 4, record, NULL), -EINVAL);
	assert_int_equal(range_lock_async_init(&a, 0, 9, NULL, NULL), -EINVAL);
	assert_int_equal(range_lock_async_init(&a, 0, 9, record, &a), 0);
	assert_ptr_equal(a.arg, &a);
	assert_true(a.lock.start == 0 && a.lock.last == 9);

	run_child(submit_without_completion, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "has no completion"));
	run_child(cancel_never_submitted, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "not submitted asynchronously"));
}

/* Free range: held at once, no completion, in every path of a lock call
 * (empty tree: the lock word; a reader on a biased tree: its slot; a
 * non-empty tree: the tree), and -EALREADY from a cancel. */
static void test_held_at_once(void **state)
{
	struct range_lock_tree t;
	struct req w, r1, r2;
	DEFINE_RANGE_LOCK(other, 100, 199);

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		range_lock_tree_init(&t);
		assert_int_equal(range_lock_tree_set_fifo(&t, fifo), 0);
		req_init(&w, &t, 0, 9, false);
		assert_int_equal(submit(&w), 0);              /* the lock word */
		assert_false(free_now(&t, 5, 5));
		assert_int_equal(range_lock_async_cancel(&t, &w.a), -EALREADY);
		range_write_lock(&t, &other);                 /* now through the tree */
		req_init(&r1, &t, 20, 29, true);
		assert_int_equal(submit(&r1), 0);
		req_init(&r2, &t, 20, 29, true);
		assert_int_equal(submit(&r2), 0);             /* readers share */
		assert_false(free_now(&t, 25, 25));
		req_unlock(&r1);
		req_unlock(&r2);
		req_unlock(&w);
		range_write_unlock(&t, &other);
		sleep_ms(5);
		assert_int_equal(atomic_load(&w.calls) + atomic_load(&r1.calls) +
				 atomic_load(&r2.calls), 0);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Queued behind another thread's hold: -EINPROGRESS, no completion while
 * it holds; its unlock grants the request and runs the completion on the
 * releasing thread, exactly once, with 0, the request then held. */
static void test_granted_on_releasing_thread(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct holder h;
	struct req a;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 9, false, REL_UNLOCK);
		req_init(&a, &t, 5, 14, false);
		assert_int_equal(submit(&a), -EINPROGRESS);
		assert_int_equal(nr_waiting(&t), 1);
		sleep_ms(20);
		assert_int_equal(atomic_load(&a.calls), 0);
		holder_release(&h);
		assert_int_equal(atomic_load(&a.calls), 1); /* before the unlock returned */
		assert_int_equal(a.status, 0);
		assert_int_equal(a.tid, h.tid);
		assert_int_equal(a.depth, 1);
		assert_int_equal(nr_held(&t), 1);
		assert_false(free_now(&t, 14, 14));
		assert_true(free_now(&t, 15, 15));
		assert_int_equal(range_lock_async_cancel(&t, &a.a), -EALREADY);
		req_unlock(&a);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(st.write_acquired, 3); /* holder, a, the probe */
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Several asynchronous readers queued behind a writer are granted by its
 * unlock together; a later asynchronous writer waits for them. */
static void test_readers_share(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct holder h;
	struct req r[3], w;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 99, false, REL_UNLOCK);
		for (int i = 0; i < 3; i++) {
			req_init(&r[i], &t, (uint64_t)i * 10, (uint64_t)i * 10 + 15, true);
			assert_int_equal(submit(&r[i]), -EINPROGRESS);
		}
		req_init(&w, &t, 0, 99, false);
		assert_int_equal(submit(&w), -EINPROGRESS);
		holder_release(&h);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(atomic_load(&r[i].calls), 1);
			assert_int_equal(r[i].status, 0);
			assert_int_equal(r[i].tid, h.tid);
			assert_int_equal(r[i].order, i);
		}
		assert_int_equal(atomic_load(&w.calls), 0);
		assert_int_equal(nr_held(&t), 3);
		req_unlock(&r[0]);
		req_unlock(&r[2]);
		assert_int_equal(atomic_load(&w.calls), 0);
		req_unlock(&r[1]);                    /* on this thread */
		assert_int_equal(atomic_load(&w.calls), 1);
		assert_int_equal(w.tid, gettid_());
		req_unlock(&w);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Default policy too: nothing overtakes a queued asynchronous request --
 * not a trylock, not a lock call arriving later; the release grants it
 * first, and the later lock call after it. */
struct late_locker {
	struct range_lock_tree *tree;
	struct range_lock lock;
	atomic_int done;
	int order;
};

static void *late_locker_main(void *arg)
{
	struct late_locker *l = arg;

	range_lock_init(&l->lock, 5, 9);
	range_write_lock(l->tree, &l->lock);
	l->order = atomic_fetch_add(&next_order, 1);
	atomic_store(&l->done, 1);
	range_write_unlock(l->tree, &l->lock);
	return NULL;
}

static void test_nothing_overtakes(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct holder h;
	struct late_locker l;
	pthread_t th;
	struct req a;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 4, false, REL_UNLOCK);
		req_init(&a, &t, 0, 9, false);
		a.unlock_in_completion = true;
		assert_int_equal(submit(&a), -EINPROGRESS);
		sleep_ms(10);
		/* [5, 9] conflicts with the queued request only: a trylock
		 * would overtake an unmarked waiter there. */
		assert_false(free_now(&t, 5, 9));
		assert_false(free_now(&t, 3, 3));
		memset(&l, 0, sizeof(l));
		l.tree = &t;
		assert_int_equal(pthread_create(&th, NULL, late_locker_main, &l), 0);
		assert_true(wait_for_waiters(&t, 2));
		holder_release(&h);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(a.order, 0);
		assert_int_equal(l.order, 1);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/*
 * A withdrawal releases exactly the requests that counted the withdrawn
 * one: a reader waiting for it only is granted at once; a writer that also
 * waits for a holder keeps waiting; the completion never runs.
 */
struct blocked {
	struct range_lock_tree *tree;
	struct range_lock lock;
	uint64_t s, e;
	bool reader;
	atomic_int done;
	pthread_t th;
};

static void *blocked_main(void *arg)
{
	struct blocked *b = arg;

	range_lock_init(&b->lock, b->s, b->e);
	if (b->reader)
		range_read_lock(b->tree, &b->lock);
	else
		range_write_lock(b->tree, &b->lock);
	atomic_store(&b->done, 1);
	return NULL;
}

static void blocked_start(struct blocked *b, struct range_lock_tree *t, uint64_t s,
			  uint64_t e, bool reader, uint64_t expect_waiting)
{
	memset(b, 0, sizeof(*b));
	b->tree = t;
	b->s = s;
	b->e = e;
	b->reader = reader;
	assert_int_equal(pthread_create(&b->th, NULL, blocked_main, b), 0);
	assert_true(wait_for_waiters(t, expect_waiting));
}

static bool becomes_done(atomic_int *flag)
{
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(flag))
			return true;
		sleep_ms(1);
	}
	return false;
}

static void test_cancel_withdraws_exactly(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(held, 0, 4);
	struct blocked rd, wr;
	struct req a;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		range_write_lock(&t, &held);
		req_init(&a, &t, 0, 9, false);           /* waits for held */
		assert_int_equal(submit(&a), -EINPROGRESS);
		blocked_start(&rd, &t, 8, 9, true, 2);    /* waits for a only */
		blocked_start(&wr, &t, 3, 9, false, 3);   /* for held and a */
		sleep_ms(10);
		assert_false(atomic_load(&rd.done));
		assert_int_equal(range_lock_async_cancel(&t, &a.a), 0);
		assert_true(becomes_done(&rd.done));
		assert_int_equal(st.gave_up_cancel, 1);
		assert_int_equal(pthread_join(rd.th, NULL), 0);
		range_read_unlock(&t, &rd.lock);
		sleep_ms(20);
		assert_false(atomic_load(&wr.done));      /* held is still there */
		range_write_unlock(&t, &held);
		assert_true(becomes_done(&wr.done));
		assert_int_equal(pthread_join(wr.th, NULL), 0);
		range_write_unlock(&t, &wr.lock);
		sleep_ms(5);
		assert_int_equal(atomic_load(&a.calls), 0);
		/* Withdrawn, it is the caller's again: submit it anew. */
		assert_int_equal(submit(&a), 0);
		req_unlock(&a);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Once granted, a cancel is refused: -EALREADY, the completion has run. */
static void test_cancel_after_grant(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(held, 0, 9);
	struct req a;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		range_write_lock(&t, &held);
		req_init(&a, &t, 0, 9, true);
		assert_int_equal(submit(&a), -EINPROGRESS);
		range_write_unlock(&t, &held);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(range_lock_async_cancel(&t, &a.a), -EALREADY);
		assert_int_equal(range_lock_async_cancel(&t, &a.a), -EALREADY);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(nr_held(&t), 1);
		req_unlock(&a);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Every release path grants: downgrade (a queued reader), shrink (a writer
 * on the part given up), a timed give-up (FIFO: the waiter it queued
 * behind leaves), each running the completion on its own thread. */
static void test_give_up_paths_grant(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(held, 0, 4);
	struct holder h;
	struct req a;

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		/* downgrade */
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 9, false, REL_DOWNGRADE);
		req_init(&a, &t, 0, 9, true);
		assert_int_equal(submit(&a), -EINPROGRESS);
		holder_release(&h);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(a.tid, h.tid);
		req_unlock(&a);
		assert_int_equal(range_lock_tree_destroy(&t), 0);

		/* shrink */
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 9, false, REL_SHRINK);
		h.ks = 0;
		h.ke = 4;
		req_init(&a, &t, 8, 9, false);
		assert_int_equal(submit(&a), -EINPROGRESS);
		holder_release(&h);
		assert_int_equal(h.ret, 0);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(a.tid, h.tid);
		req_unlock(&a);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
	/* A timed waiter gives up: in a FIFO tree the request queued behind
	 * it (waiting for it only) is granted by that give-up. */
	tree_setup(&t, &st, true);
	range_write_lock(&t, &held);
	memset(&h, 0, sizeof(h));
	h.tree = &t;
	h.s = 0;
	h.e = 9;
	h.how = REL_TIMED_GIVE_UP;
	assert_int_equal(pthread_create(&h.th, NULL, holder_main, &h), 0);
	assert_true(wait_for_waiters(&t, 1));
	req_init(&a, &t, 5, 9, false);
	assert_int_equal(submit(&a), -EINPROGRESS);
	assert_int_equal(pthread_join(h.th, NULL), 0);
	assert_int_equal(h.ret, -ETIMEDOUT);
	assert_int_equal(atomic_load(&a.calls), 1);
	assert_int_equal(a.tid, h.tid);
	req_unlock(&a);
	range_write_unlock(&t, &held);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

/* A chain: 64 requests queued on one unit, each completion unlocking its
 * own request, which grants the next: all run on the releasing thread, in
 * submission order, one after the other (never nested). */
static void test_chain_in_order(void **state)
{
	enum { N = 64 };
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct holder h;
	static struct req r[N];

	(void)state;
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		holder_start(&h, &t, 0, 0, false, REL_UNLOCK);
		for (int i = 0; i < N; i++) {
			req_init(&r[i], &t, 0, 0, i % 3 == 1);
			r[i].unlock_in_completion = true;
			assert_int_equal(submit(&r[i]), -EINPROGRESS);
		}
		holder_release(&h);
		for (int i = 0; i < N; i++) {
			assert_int_equal(atomic_load(&r[i].calls), 1);
			assert_int_equal(r[i].order, i);
			assert_int_equal(r[i].tid, h.tid);
		}
		assert_int_equal(atomic_load(&max_depth), 1);
		assert_int_equal(nr_held(&t), 0);
		assert_int_equal(nr_waiting(&t), 0);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* A withdrawal racing the grant: either withdrawn (0, the completion never
 * runs) or granted (-EALREADY, the completion runs exactly once).  One
 * unlocker thread for all rounds: round r starts when go == r; it unlocks
 * and sets done = r.  Both wait by yielding (with more threads than CPUs a
 * spinning waiter would burn its slice). */
struct racer {
	struct range_lock_tree *tree;
	struct range_lock *held;
	atomic_int go, done;
	int rounds;
};

/* With 2 CPUs or more in @set (the test's CPUs), put the calling thread on
 * the @nth of them (so that the two sides of the race run at once); else
 * leave it. */
static cpu_set_t race_cpus;

static void pin_to(int nth)
{
	cpu_set_t one;
	int seen = 0;

	if (CPU_COUNT(&race_cpus) < 2)
		return;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (CPU_ISSET(c, &race_cpus) && seen++ == nth) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
	}
}

static void *unlock_on_go(void *arg)
{
	struct racer *x = arg;

	pin_to(1);
	for (int r = 1; r <= x->rounds; r++) {
		for (int spins = 0; atomic_load_explicit(&x->go, memory_order_acquire) != r;)
			if (++spins % 2000 == 0)
				sched_yield();
		range_write_unlock(x->tree, x->held);
		atomic_store_explicit(&x->done, r, memory_order_release);
	}
	return NULL;
}

static void test_cancel_races_grant(void **state)
{
	enum { ROUNDS = 1000 };
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct range_lock held;
	struct racer x;
	pthread_t th;
	struct req a;
	int withdrawn[2] = { 0, 0 }, granted[2] = { 0, 0 };

	(void)state;
	if (sched_getaffinity(0, sizeof(race_cpus), &race_cpus))
		CPU_ZERO(&race_cpus);
	pin_to(0);
	for (int fifo = 0; fifo < 2; fifo++) {
		tree_setup(&t, &st, fifo);
		x.tree = &t;
		x.held = &held;
		x.rounds = ROUNDS;
		atomic_store(&x.go, 0);
		atomic_store(&x.done, 0);
		assert_int_equal(pthread_create(&th, NULL, unlock_on_go, &x), 0);
		for (int round = 1; round <= ROUNDS; round++) {
			int r;

			range_lock_init(&held, 0, 9);
			range_write_lock(&t, &held);
			req_init(&a, &t, 5, 5, round & 1);
			assert_int_equal(submit(&a), -EINPROGRESS);
			atomic_store_explicit(&x.go, round, memory_order_release);
			/* A delay that sweeps the window: either may win. */
			for (volatile int d = 0; d < (round % 100) * 5; d++)
				;
			r = range_lock_async_cancel(&t, &a.a);
			while (atomic_load_explicit(&x.done, memory_order_acquire) != round)
				sched_yield();
			if (r == 0) {
				withdrawn[fifo]++;
				assert_int_equal(atomic_load(&a.calls), 0);
			} else {
				assert_int_equal(r, -EALREADY);
				granted[fifo]++;
				assert_int_equal(atomic_load(&a.calls), 1);
				req_unlock(&a);
			}
			assert_int_equal(nr_held(&t), 0);
			assert_int_equal(nr_waiting(&t), 0);
		}
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
		print_message("policy %s: %d withdrawn, %d granted\n", fifo ? "fifo" : "default",
			      withdrawn[fifo], granted[fifo]);
		assert_int_equal(withdrawn[fifo] + granted[fifo], ROUNDS);
	}
	if (CPU_COUNT(&race_cpus))
		sched_setaffinity(0, sizeof(race_cpus), &race_cpus);
}

/* The releasing thread is cancelled while its completions run: none of
 * them is cut short, and the cancellation takes effect after the call. */
struct cancel_victim {
	struct range_lock_tree *tree;
	struct range_lock held;
	atomic_int holding;
	atomic_int reached_end;
};

static pthread_t victim_thread;
static atomic_int cancel_sent;

static void cancelling_completion(struct range_lock_async *a, int status)
{
	struct req *r = (struct req *)a;

	if (!atomic_exchange(&cancel_sent, 1)) {
		pthread_cancel(victim_thread);
		/* A cancellation point: with cancellation enabled the thread
		 * would be unwound here, the second completion lost. */
		sleep_ms(10);
	}
	r->status = status;
	r->tid = gettid_();
	atomic_fetch_add(&r->calls, 1);
}

static void *victim_main(void *arg)
{
	struct cancel_victim *v = arg;

	range_write_lock(v->tree, &v->held);
	atomic_store(&v->holding, 1);
	while (atomic_load(&v->holding) != 2)
		sleep_ms(1);
	range_write_unlock(v->tree, &v->held); /* runs both completions */
	atomic_store(&v->reached_end, 1);
	pthread_testcancel();
	atomic_store(&v->reached_end, 2); /* never: cancelled just above */
	return NULL;
}

static void test_completion_not_cancelled(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct cancel_victim v;
	struct req a, b;
	void *ret;

	(void)state;
	tree_setup(&t, &st, false);
	memset(&v, 0, sizeof(v));
	v.tree = &t;
	range_lock_init(&v.held, 0, 9);
	atomic_store(&cancel_sent, 0);
	assert_int_equal(pthread_create(&victim_thread, NULL, victim_main, &v), 0);
	while (!atomic_load(&v.holding))
		sleep_ms(1);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(range_lock_async_init(&a.a, 0, 4, cancelling_completion, &a), 0);
	assert_int_equal(range_lock_async_init(&b.a, 5, 9, cancelling_completion, &b), 0);
	assert_int_equal(range_write_lock_async(&t, &a.a), -EINPROGRESS);
	assert_int_equal(range_write_lock_async(&t, &b.a), -EINPROGRESS);
	atomic_store(&v.holding, 2);
	assert_int_equal(pthread_join(victim_thread, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	assert_int_equal(atomic_load(&v.reached_end), 1);
	assert_int_equal(atomic_load(&a.calls), 1);
	assert_int_equal(atomic_load(&b.calls), 1);
	range_write_unlock(&t, &a.a.lock);
	range_write_unlock(&t, &b.a.lock);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

/* Statistics and the dump show queued asynchronous requests. */
static void test_stats_and_dump(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(held, 0, 9);
	struct req a;
	char buf[4096];
	FILE *f;

	(void)state;
	tree_setup(&t, &st, false);
	range_write_lock(&t, &held);
	req_init(&a, &t, 0, 9, false);
	assert_int_equal(submit(&a), -EINPROGRESS);
	assert_int_equal(st.contended, 1);
	assert_int_equal(st.waiting_now, 1);
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	range_lock_tree_dump(&t, f);
	fclose(f);
	assert_non_null(strstr(buf, "waiting  seq=1 blocking=1 tid="));
	assert_non_null(strstr(buf, " async handoff\n"));
	range_write_unlock(&t, &held);
	assert_int_equal(st.waiting_now, 0);
	assert_int_equal(st.held_now, 1);
	assert_int_equal(st.write_acquired, 2);
	/* granted: an ordinary held request in the dump */
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	range_lock_tree_dump(&t, f);
	fclose(f);
	assert_non_null(strstr(buf, "held     seq=1 blocking=0 tid="));
	assert_null(strstr(buf, "async"));
	req_unlock(&a);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
}

/* Word mode (a whole-resource writer fast held) and fast readers: the
 * request is queued behind them and granted by their unlock. */
struct fast_holder {
	struct range_lock_tree *tree;
	struct range_lock lock;
	bool reader;
	atomic_int holding, go;
	pid_t tid;
};

static void *fast_holder_main(void *arg)
{
	struct fast_holder *f = arg;

	f->tid = gettid_();
	if (f->reader)
		range_read_lock(f->tree, &f->lock);
	else
		range_write_lock(f->tree, &f->lock);
	atomic_store(&f->holding, 1);
	while (!atomic_load(&f->go))
		sleep_ms(1);
	if (f->reader)
		range_read_unlock(f->tree, &f->lock);
	else
		range_write_unlock(f->tree, &f->lock);
	return NULL;
}

static void test_fast_read_and_word_mode(void **state)
{
	struct range_lock_tree t;
	struct fast_holder f;
	pthread_t th;
	struct req a;

	(void)state;
	for (int reader = 0; reader < 2; reader++) {
		range_lock_tree_init(&t);  /* no statistics: the fast paths stay on */
		memset(&f, 0, sizeof(f));
		f.tree = &t;
		f.reader = reader;
		range_lock_init_full(&f.lock);
		assert_int_equal(pthread_create(&th, NULL, fast_holder_main, &f), 0);
		while (!atomic_load(&f.holding))
			sleep_ms(1);
		if (reader) {
			/* a second reader is held at once, a writer queues */
			struct req r;

			req_init(&r, &t, 0, 9, true);
			assert_int_equal(submit(&r), 0);
			req_unlock(&r);
		}
		req_init(&a, &t, 0, RANGE_LOCK_FULL, false);
		assert_int_equal(submit(&a), -EINPROGRESS);
		sleep_ms(10);
		assert_int_equal(atomic_load(&a.calls), 0);
		atomic_store(&f.go, 1);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(atomic_load(&a.calls), 1);
		assert_int_equal(a.tid, f.tid);
		assert_false(free_now(&t, 7, 7));
		req_unlock(&a);
		assert_true(free_now(&t, 0, RANGE_LOCK_FULL));
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
}

/* Misuse aborts with a message. */
static struct range_lock_tree misuse_tree;
static struct range_lock misuse_held;

static void waiting_completion(struct range_lock_async *a, int status)
{
	struct range_lock l;

	(void)a;
	(void)status;
	range_lock_init(&l, 100, 109);
	range_write_lock(&misuse_tree, &l); /* must wait: held by misuse_held */
}

static void *hold_and_wait(void *arg)
{
	struct range_lock_async *b = arg;

	range_lock_init(&misuse_held, 100, 109);
	range_write_lock(&misuse_tree, &misuse_held);
	(void)b;
	return NULL;
}

static void completion_waits(void)
{
	struct range_lock_async a;
	DEFINE_RANGE_LOCK(h1, 0, 9);
	DEFINE_RANGE_LOCK(h2, 0, 9);
	pthread_t th;

	range_lock_tree_init(&misuse_tree);
	range_write_lock(&misuse_tree, &h1);
	range_lock_async_init(&a, 0, 9, waiting_completion, NULL);
	if (range_write_lock_async(&misuse_tree, &a) != -EINPROGRESS)
		_exit(3);
	pthread_create(&th, NULL, hold_and_wait, NULL);
	pthread_join(th, NULL);
	(void)h2;
	range_write_unlock(&misuse_tree, &h1); /* grants a: the completion waits for a */
	_exit(4);
}

static void submitted_twice(void)
{
	struct range_lock_async a;
	DEFINE_RANGE_LOCK(h, 0, 9);

	range_lock_tree_init(&misuse_tree);
	range_write_lock(&misuse_tree, &h);
	range_lock_async_init(&a, 0, 9, record, NULL);
	if (range_write_lock_async(&misuse_tree, &a) != -EINPROGRESS)
		_exit(3);
	range_write_lock_async(&misuse_tree, &a);
	_exit(4);
}

static void cancel_twice(void)
{
	struct range_lock_async a;
	DEFINE_RANGE_LOCK(h, 0, 9);

	range_lock_tree_init(&misuse_tree);
	range_write_lock(&misuse_tree, &h);
	range_lock_async_init(&a, 0, 9, record, NULL);
	if (range_write_lock_async(&misuse_tree, &a) != -EINPROGRESS ||
	    range_lock_async_cancel(&misuse_tree, &a) != 0)
		_exit(3);
	range_lock_async_cancel(&misuse_tree, &a);
	_exit(4);
}

static void exiting_completion(struct range_lock_async *a, int status)
{
	(void)a;
	(void)status;
	pthread_exit(NULL);
}

static void *unlock_thread(void *arg)
{
	range_write_unlock(&misuse_tree, arg);
	return NULL;
}

static void completion_exits(void)
{
	struct range_lock_async a, b;
	DEFINE_RANGE_LOCK(h, 0, 9);
	pthread_t th;

	range_lock_tree_init(&misuse_tree);
	range_write_lock(&misuse_tree, &h);
	range_lock_async_init(&a, 0, 4, exiting_completion, NULL);
	range_lock_async_init(&b, 5, 9, record, NULL);
	if (range_write_lock_async(&misuse_tree, &a) != -EINPROGRESS ||
	    range_write_lock_async(&misuse_tree, &b) != -EINPROGRESS)
		_exit(3);
	pthread_create(&th, NULL, unlock_thread, &h);
	pthread_join(th, NULL);
	_exit(4);
}

static void cancel_other_tree(void)
{
	struct range_lock_async a;
	struct range_lock_tree other;
	DEFINE_RANGE_LOCK(h, 0, 9);

	range_lock_tree_init(&misuse_tree);
	range_lock_tree_init(&other);
	range_write_lock(&misuse_tree, &h);
	range_lock_async_init(&a, 0, 9, record, NULL);
	if (range_write_lock_async(&misuse_tree, &a) != -EINPROGRESS)
		_exit(3);
	range_lock_async_cancel(&other, &a);
	_exit(4);
}

static void test_misuse_aborts(void **state)
{
	struct child_result res;

	(void)state;
	run_child(completion_exits, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "did not return"));
	run_child(cancel_other_tree, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "submitted to another tree"));
	run_child(completion_waits, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "must not wait for a range"));
	run_child(submitted_twice, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "already in a tree"));
	run_child(cancel_twice, &res);
	assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
	assert_non_null(strstr(res.out, "not submitted asynchronously"));
}

/* A tree bound to a file: the OFD lock is tried, never waited for. */
static int ofd_lock(int fd, short type, off_t s, off_t l)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = s, .l_len = l - s + 1 };

	return fcntl(fd, F_OFD_SETLK, &fl);
}

static int ofd_probe(int fd, short type, off_t s, off_t l)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = s, .l_len = l - s + 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		return -1;
	return fl.l_type;
}

static int ofd_other_fd = -1;
static struct range_lock_tree *ofd_tree;

static void ofd_waiting_completion(struct range_lock_async *a, int status)
{
	struct range_lock l;

	(void)a;
	(void)status;
	range_lock_init(&l, 50, 50);        /* free locally, OFD-locked elsewhere */
	range_write_lock(ofd_tree, &l);
	_exit(4);
}

/* In a child: a completion whose blocking lock call would wait for another
 * description's OFD lock aborts like one that would wait locally. */
static char ofd_path[64];

static void completion_waits_for_ofd(void)
{
	struct range_lock_tree t;
	struct range_lock_async a;
	DEFINE_RANGE_LOCK(h, 0, 9);
	int fd = open(ofd_path, O_RDWR);

	ofd_other_fd = open(ofd_path, O_RDWR);
	if (fd < 0 || ofd_other_fd < 0 || ofd_lock(ofd_other_fd, F_WRLCK, 50, 50))
		_exit(3);
	range_lock_tree_init(&t);
	if (range_lock_tree_set_file(&t, fd))
		_exit(3);
	ofd_tree = &t;
	range_write_lock(&t, &h);
	range_lock_async_init(&a, 0, 9, ofd_waiting_completion, NULL);
	if (range_write_lock_async(&t, &a) != -EINPROGRESS)
		_exit(3);
	range_write_unlock(&t, &h);
	_exit(5);
}

static void test_bound_tree(void **state)
{
	char path[] = "/tmp/rangelock-async-XXXXXX";
	int fd = mkstemp(path), other;
	struct range_lock_tree t;
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(held, 0, 9);
	struct req a;

	(void)state;
	assert_true(fd >= 0);
	other = open(path, O_RDWR | O_CLOEXEC);
	assert_true(other >= 0);
	unlink(path);
	tree_setup(&t, &st, false);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);

	/* held at once: the OFD lock too */
	req_init(&a, &t, 0, 9, false);
	assert_int_equal(submit(&a), 0);
	assert_int_equal(ofd_probe(other, F_RDLCK, 5, 5), F_WRLCK);
	req_unlock(&a);
	assert_int_equal(ofd_probe(other, F_RDLCK, 5, 5), F_UNLCK);

	/* another description holds a byte: -EAGAIN at submission */
	assert_int_equal(ofd_lock(other, F_WRLCK, 5, 5), 0);
	req_init(&a, &t, 0, 9, false);
	assert_int_equal(submit(&a), -EAGAIN);
	assert_int_equal(nr_held(&t) + nr_waiting(&t), 0);

	/* queued, granted locally, the OFD lock busy: the completion gets
	 * -EAGAIN and nothing is left */
	assert_int_equal(ofd_lock(other, F_UNLCK, 5, 5), 0);
	assert_int_equal(ofd_lock(other, F_WRLCK, 15, 15), 0);
	range_write_lock(&t, &held);           /* [0, 9]; other holds [15, 15] */
	req_init(&a, &t, 0, 19, false);
	assert_int_equal(submit(&a), -EINPROGRESS);
	range_write_unlock(&t, &held);
	assert_int_equal(atomic_load(&a.calls), 1);
	assert_int_equal(a.status, -EAGAIN);
	assert_int_equal(nr_held(&t) + nr_waiting(&t), 0);
	assert_int_equal(ofd_probe(other, F_RDLCK, 0, 9), F_UNLCK);

	/* queued, granted, the OFD lock free: 0 and held at both levels */
	assert_int_equal(ofd_lock(other, F_UNLCK, 15, 15), 0);
	range_write_lock(&t, &held);
	req_init(&a, &t, 0, 19, false);
	assert_int_equal(submit(&a), -EINPROGRESS);
	range_write_unlock(&t, &held);
	assert_int_equal(atomic_load(&a.calls), 1);
	assert_int_equal(a.status, 0);
	assert_int_equal(ofd_probe(other, F_RDLCK, 15, 15), F_WRLCK);
	req_unlock(&a);
	assert_int_equal(ofd_probe(other, F_RDLCK, 0, 19), F_UNLCK);

	/* a completion that would wait for another description's lock */
	{
		struct child_result res;

		snprintf(ofd_path, sizeof(ofd_path), "/tmp/rangelock-async-ofd-%d", (int)getpid());
		close(open(ofd_path, O_RDWR | O_CREAT, 0600));
		run_child(completion_waits_for_ofd, &res);
		unlink(ofd_path);
		assert_true(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGABRT);
		assert_non_null(strstr(res.out, "must not wait for a range"));
	}

	/* a range beyond off_t on a bound tree */
	req_init(&a, &t, 0, UINT64_MAX - 1, false);
	assert_int_equal(submit(&a), -EINVAL);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_held_at_once),
		cmocka_unit_test(test_granted_on_releasing_thread),
		cmocka_unit_test(test_readers_share),
		cmocka_unit_test(test_nothing_overtakes),
		cmocka_unit_test(test_cancel_withdraws_exactly),
		cmocka_unit_test(test_cancel_after_grant),
		cmocka_unit_test(test_give_up_paths_grant),
		cmocka_unit_test(test_chain_in_order),
		cmocka_unit_test(test_cancel_races_grant),
		cmocka_unit_test(test_completion_not_cancelled),
		cmocka_unit_test(test_stats_and_dump),
		cmocka_unit_test(test_fast_read_and_word_mode),
		cmocka_unit_test(test_misuse_aborts),
		cmocka_unit_test(test_bound_tree),
	};

	watchdog(240);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
