/* SPDX-License-Identifier: MIT */
/*
 * Word mode (docs/design.md, "Word mode"): a blocking or timed WRITE lock
 * call for the whole resource [0, RANGE_LOCK_FULL] that finds a conflicting
 * holder of the lock word waits on the word (its sleepers code set) instead
 * of entering the tree (readers, partial ranges, trylocks other than write
 * trylocks' "fail at once" take the tree path); unlock wakes one; anything
 * that takes the tree's internal lock displaces the holder and wakes every
 * word sleeper into the tree; past the hand-off bound a word waiter asks for
 * the word in the word itself (waiter | 1 or waiter | 4, the holder in the
 * waiter's rb_left), the holder's unlock hands it over (waiter | 0) and the
 * waiter picks it up (waiter | 6): it never enters the tree for that.
 *
 * White box, through the public struct fields: tree.lock_word (low 3 bits:
 * 5 writer, 7 reader, 6 writer with word sleepers, 2 reader with word
 * sleepers; with a waiter's pointer 1 / 4 hand-off asked (holder writes /
 * reads), 0 handed; without a pointer 0 free, 1, 3, 4 tree mode),
 * tree.nr_requests, tree.root and a waiter's rb_left.
 *
 * Built against the static variants without the checking mode (which has no
 * fast path, hence no word mode), for both wait backends, and twice:
 *  - with the real hand-off bound (2 ms): 2 ms after it arrived a word
 *    waiter asks for the hand-off, so a plain word sleeper is seen only in
 *    that window (the tests retry until they see one) and a lost wake-up
 *    before it costs at most 2 ms: these variants check the outcomes
 *    (everybody gets the range, nothing is left behind), the hand-off
 *    itself and the states around it (misuse, displacement);
 *  - with a one-hour bound (RL_TEST_LONG_HANDOFF): a word waiter stays on the
 *    word until it is woken, so every state is checked exactly and a lost
 *    wake-up is a hang (caught by the 5 s bounds below, then the watchdog).
 *
 * Threads never assert: they record, the main thread asserts.
 *
 * Mutants (the code broken on purpose; F/P = real bound, futex/POSIX;
 * LF/LP = one-hour bound), and what caught them:
 *  - unlock wakes nobody (tree_fast_release_sleepers): LF/LP: the three
 *    rl_word_wait scenarios, trylock, timed, cross-thread unlock, then a hang
 *    (watchdog); F/P: nothing (the sleeper's 2 ms timer rescues it);
 *    torture_word_longhandoff_writers: HANG.
 *  - word_blocks() always false (no word mode): every variant: the
 *    rl_word_wait scenarios, trylock, timed, handoff_bound (F/P), dump,
 *    partial/full reader beside a word reader (LF/LP); torture_word_*
 *    --expect-word-mode (writers, timed, longhandoff_writers).
 *  - no pass-on wake: LF/LP: pass_on_wake; F/P: nothing (2 ms timer).
 *  - the displacer does not wake all: F/P: dump_word_sleepers; LF/LP:
 *    partial_writer_goes_to_tree, reader_beside_word_reader (then abort).
 *  - no sleepers code (sleep on the plain value): every variant: rl_word_wait
 *    scenarios, dump; LF/LP hang (watchdog); torture_word_timed
 *    (--expect-word-mode) and torture_word_longhandoff_* (HANG).
 *  - no hand-off (never ask at the bound): F/P: handoff_bound.
 *  - the holder's release frees the word (to 0) instead of handing it to
 *    the asking waiter: F: handoff_bound (a barger got in first).
 *  - write trylock takes the tree path: trylock_leaves_word_alone, all
 *    variants.
 *  - readers wait on the word: reader_waits_in_tree, all variants.
 *  - a request at 0 mod 2^32 may wait on the word (futex_half_is_small()
 *    false): F, LF: aligned_request_waits_in_tree (it waited on the word:
 *    nr_requests 0, not 2).  Skipped where the address cannot be mapped.
 *  - unlock_common() hands the word over without checking that the
 *    request is the holder (word_release_waited()'s flags test removed):
 *    F: misuse_unlock_during_handoff (the unlock returned, no abort).
 *  - word_release_waited() without the tree test (a request fast held in
 *    ANOTHER tree passes): F/P: misuse_unlock_non_holder_during_handoff,
 *    write and read cases (the unlock handed the word to the waiter while
 *    the holder held it: word w | 6).
 *  - word_release_waited() without the asking-waiter test: F/P:
 *    misuse_unlock_non_holder_during_handoff, the waiter's own request.
 *  - enter() does not record the tree (set_word_tree()): F/P: handoff_bound
 *    (every hand-off goes through the tree).
 *  - a handed-then-displaced waiter takes itself for displaced (in_tree()
 *    answer ignored): F: handed_then_displaced (it waits behind itself).
 *  - a timed waiter that gives up leaves its hand-off request in the word
 *    (no withdrawal CAS): F: timed_withdrawal_races_grant (word not 0 after
 *    the holder's unlock), timed_word_wait.  NOT caught (300 rounds): the
 *    withdrawal ignoring a FAILED CAS (the grant landing between its load
 *    and its CAS: a window of a few instructions a test cannot aim at; the
 *    model covers it).
 *  - FIFO trees word-wait: fifo_tree_no_word_wait, all variants.
 *  - a timed word waiter that gives up stays "linked": every variant
 *    aborts (ALREADY_IN_TREE when the request is reused).
 *  - _interruptible/_killable word-wait: intr_kill_wait_in_tree (F: hang,
 *    watchdog; LF/LP: fails; P: not caught).
 *  - the POSIX backend's rl_wake_all() wakes one: LP: dump_word_sleepers
 *    ("2 thread(s)"); otherwise equivalent (every woken sleeper passes a
 *    wake on).
 *  - a timed word waiter ignores its deadline: LF/LP: timed_word_wait
 *    hangs (watchdog); F/P: nothing (it leaves for the tree at 2 ms).
 *  - no -EINVAL check in rl_word_wait(): timed_word_wait, all variants.
 *  - word_blocks() without the statistics check: not caught (equivalent:
 *    with statistics on a fast holder materialises itself at once).
 */
#include "test_util.h"

#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#ifndef RL_TEST_LONG_HANDOFF
#define RL_TEST_LONG_HANDOFF 0
#endif
#define LONG_BOUND RL_TEST_LONG_HANDOFF

#define FULL RANGE_LOCK_FULL
#define CODE_W 5u
#define CODE_R 7u
#define CODE_WS 6u
#define CODE_RS 2u
#define HANDOFF_W 1u /* waiter | 1: asks for the word, the holder writes */
#define HANDOFF_R 4u /* waiter | 4: asks for the word, the holder reads */
#define HANDED 0u /* waiter | 0: handed to the waiter, not picked up yet */
#define TREE_BIASED_FLAG 4u /* struct range_lock_tree.flags: fast reads on */
#define RL_LINKED_BIT 4u /* struct range_lock.rb_parent_flags: in a tree (or word held) */

/*
 * Peeks at fields the library writes under its internal lock, without
 * taking it (that would displace the word holder and end word mode).  Not
 * instrumented by ThreadSanitizer: the values are polled, a stale one is
 * read again.  The lock word is only ever accessed atomically.
 */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define NO_TSAN __attribute__((no_sanitize("thread"), noinline))
#else
#define NO_TSAN __attribute__((noinline))
#endif

static uintptr_t peek_word(struct range_lock_tree *t)
{
	return __atomic_load_n(&t->lock_word, __ATOMIC_ACQUIRE);
}

static NO_TSAN uint32_t peek_nr(struct range_lock_tree *t)
{
	return *(volatile uint32_t *)&t->nr_requests;
}

static NO_TSAN void *peek_root(struct range_lock_tree *t)
{
	return *(void *volatile *)&t->root;
}

static NO_TSAN __attribute__((unused)) void *peek_rb_left(struct range_lock *r)
{
	return *(void *volatile *)&r->rb_left;
}

static bool is_fast(uintptr_t w)
{
	return w > 7;
}

static uintptr_t code_of(uintptr_t w)
{
	return w & 7;
}

static bool is_sleepers(uintptr_t w)
{
	return is_fast(w) && (code_of(w) == CODE_WS || code_of(w) == CODE_RS);
}

static uintptr_t word_of(struct range_lock *r, uintptr_t code)
{
	return (uintptr_t)r | code;
}

/* Poll until peek_nr(@t) == @n; false after 5 s. */
static bool wait_nr(struct range_lock_tree *t, uint32_t n)
{
	for (int i = 0; i < 5000; i++) {
		if (peek_nr(t) == n)
			return true;
		sleep_ms(1);
	}
	return peek_nr(t) == n;
}

/* Poll until the lock word is @v; false after 5 s. */
static bool wait_word_is(struct range_lock_tree *t, uintptr_t v)
{
	uint64_t end = mono_ns() + 5000000000ull;

	while (mono_ns() < end) {
		if (peek_word(t) == v)
			return true;
		sched_yield();
	}
	return peek_word(t) == v;
}

static bool wait_flag(atomic_int *f, long ms)
{
	for (long i = 0; i < ms && !atomic_load(f); i++)
		sleep_ms(1);
	return atomic_load(f) != 0;
}

/* ---- a thread that makes one lock call ------------------------------- */

enum op { OP_READ, OP_WRITE, OP_READ_TIMED, OP_WRITE_TIMED, OP_WRITE_INTR,
	  OP_WRITE_KILL };

struct locker {
	struct range_lock_tree *tree;
	struct range_lock req;
	enum op op;
	uint64_t start, last;
	long timeout_ms;
	bool hold;              /* hold until told, else unlock at once */
	bool leave_held;        /* return holding (another thread unlocks) */
	int ret;
	uintptr_t word_after;   /* the lock word just after the grant */
	atomic_uint tid;
	atomic_int done;        /* the lock call returned */
	atomic_int release;
	atomic_int released;
	atomic_int *seen_counter; /* optional: its value at the grant */
	int counter_at_grant;
	pthread_t th;
};

static bool op_reader(enum op op)
{
	return op == OP_READ || op == OP_READ_TIMED;
}

static void *locker_main(void *arg)
{
	struct locker *l = arg;
	struct timespec ts;
	int r = 0;

	atomic_store(&l->tid, (unsigned)syscall(SYS_gettid));
	switch (l->op) {
	case OP_READ: range_read_lock(l->tree, &l->req); break;
	case OP_WRITE: range_write_lock(l->tree, &l->req); break;
	case OP_READ_TIMED:
		deadline_in(CLOCK_MONOTONIC, l->timeout_ms, &ts);
		r = range_read_timedlock(l->tree, &l->req, CLOCK_MONOTONIC, &ts);
		break;
	case OP_WRITE_TIMED:
		deadline_in(CLOCK_MONOTONIC, l->timeout_ms, &ts);
		r = range_write_timedlock(l->tree, &l->req, CLOCK_MONOTONIC, &ts);
		break;
	case OP_WRITE_INTR: r = range_write_lock_interruptible(l->tree, &l->req); break;
	case OP_WRITE_KILL: r = range_write_lock_killable(l->tree, &l->req); break;
	}
	l->ret = r;
	l->word_after = peek_word(l->tree);
	if (l->seen_counter)
		l->counter_at_grant = atomic_load(l->seen_counter);
	atomic_store(&l->done, 1);
	if (r || l->leave_held)
		return NULL;
	if (l->hold)
		while (!atomic_load(&l->release))
			sched_yield();
	if (op_reader(l->op))
		range_read_unlock(l->tree, &l->req);
	else
		range_write_unlock(l->tree, &l->req);
	atomic_store(&l->released, 1);
	return NULL;
}

static void init_locker(struct locker *l, struct range_lock_tree *t, enum op op,
			uint64_t start, uint64_t last, bool hold)
{
	memset(l, 0, sizeof(*l));
	l->tree = t;
	l->op = op;
	l->start = start;
	l->last = last;
	l->hold = hold;
	l->timeout_ms = 10000;
	range_lock_init(&l->req, start, last);
}

static void run_locker(struct locker *l)
{
	assert_int_equal(pthread_create(&l->th, NULL, locker_main, l), 0);
}

static void start_locker(struct locker *l, struct range_lock_tree *t, enum op op,
			 uint64_t start, uint64_t last, bool hold)
{
	init_locker(l, t, op, start, last, hold);
	run_locker(l);
}

static void finish(struct locker *l)
{
	atomic_store(&l->release, 1);
	pthread_join(l->th, NULL);
}

/* Is the thread of @l asleep (state S in /proc)?  A word waiter that set
 * the sleepers code is asleep only once it is in its futex wait. */
static bool thread_asleep(struct locker *l)
{
	char path[64], buf[256];
	unsigned tid = atomic_load(&l->tid);
	ssize_t n;
	char *p;
	int fd;

	if (!tid)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%u/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Wait until @l's thread sleeps; false after @ms. */
static bool wait_asleep(struct locker *l, long ms)
{
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000u;

	do {
		if (thread_asleep(l))
			return true;
		sched_yield();
	} while (mono_ns() < end);
	return thread_asleep(l);
}

/*
 * After @l was started against a word holder @h (code @hcode): wait until
 * it sleeps on the word (the lock word reads h | sleepers code and its
 * thread is asleep).  With the one-hour bound this must happen (false after
 * 5 s); with the real bound the waiter leaves for the tree after 2 ms, so
 * false is an answer too (the caller retries).
 */
static bool wait_word_sleeper(struct range_lock_tree *t, struct range_lock *h,
			      uintptr_t hcode, struct locker *l)
{
	uintptr_t want = word_of(h, hcode == CODE_R ? CODE_RS : CODE_WS);
	uint64_t end = mono_ns() + 5000000000ull;

	while (mono_ns() < end) {
		uintptr_t v = peek_word(t);

		if (v == want) {
			if (!LONG_BOUND)
				return true;
			return wait_asleep(l, 5000) && peek_word(t) == want;
		}
		if (!is_fast(v) || atomic_load(&l->done))
			return false; /* it left for the tree (past the bound) */
		if ((v & ~(uintptr_t)7) != (uintptr_t)h)
			return false; /* it asked for a hand-off (past the bound):
				       * the sleepers code on h cannot come back */
	}
	return false;
}

static void lock_holder(struct range_lock_tree *t, struct range_lock *h, bool reader)
{
	range_lock_init_full(h);
	if (reader)
		range_read_lock(t, h);
	else
		range_write_lock(t, h);
}

static void unlock_holder(struct range_lock_tree *t, struct range_lock *h, bool reader)
{
	if (reader)
		range_read_unlock(t, h);
	else
		range_write_unlock(t, h);
}

/* The tree is empty and free: lock word 0 (or 4, "not empty", while the
 * tree is biased for fast reads: writers must go through the tree then),
 * no request, destroy works. */
static void assert_clean(struct range_lock_tree *t)
{
	if (peek_word(t) == 4)
		assert_true((t->flags & TREE_BIASED_FLAG) != 0);
	else
		assert_int_equal(peek_word(t), 0);
	assert_int_equal(peek_nr(t), 0);
	assert_null(peek_root(t));
	assert_int_equal(range_lock_tree_destroy(t), 0);
}

/* ---- (a), (b): a whole-resource waiter sleeps on the word -------------- */

/*
 * With the real bound a plain word sleeper is there only in the 2 ms before
 * it asks for the hand-off, and a loaded machine may not show it in a given
 * round: the tests that must see one retry until they do, for up to 10 s
 * (a round takes about 3 ms; unloaded, the first round nearly always sees
 * it), and fail if none ever does.
 */
#define HIT_BOUND_NS 10000000000ull

/*
 * A full-range waiter of mode @waiter_reader against a full-range word
 * holder of mode @holder_reader (they conflict): the waiter sets the
 * holder's sleepers code and sleeps, the tree stays empty; the holder's
 * unlock hands the word over (the waiter, which slept, takes it with its
 * own sleepers code).  With the real bound: retried until the sleeper is
 * seen once (in its first 2 ms), every round must end clean.
 */
static void word_wait_scenario(bool holder_reader, bool waiter_reader)
{
	static struct range_lock_tree t;
	uintptr_t hcode = holder_reader ? CODE_R : CODE_W;
	int hits = 0, rounds = 0;
	uint64_t end = mono_ns() + HIT_BOUND_NS;

	for (; !hits && (LONG_BOUND ? rounds < 1 : mono_ns() < end); rounds++) {
		struct range_lock h;
		struct locker w;
		bool seen;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, holder_reader);
		assert_int_equal(peek_word(&t), word_of(&h, hcode));
		start_locker(&w, &t, waiter_reader ? OP_READ : OP_WRITE, 0, FULL, true);
		seen = wait_word_sleeper(&t, &h, hcode, &w);
		if (seen) {
			uintptr_t v = peek_word(&t);
			uint32_t nr = peek_nr(&t);
			void *root = peek_root(&t);

			/* a consistent snapshot: the word did not change */
			if (peek_word(&t) == v && is_sleepers(v)) {
				assert_int_equal(nr, 0);
				assert_null(root);
				hits++;
			}
		}
		if (LONG_BOUND) {
			assert_true(seen);
			sleep_ms(30); /* still there, still asleep */
			assert_int_equal(peek_word(&t),
					 word_of(&h, holder_reader ? CODE_RS : CODE_WS));
			assert_int_equal(peek_nr(&t), 0);
			assert_null(peek_root(&t));
			assert_false(atomic_load(&w.done));
		}
		unlock_holder(&t, &h, holder_reader);
		assert_true(wait_flag(&w.done, 5000));
		assert_int_equal(w.ret, 0);
		if (LONG_BOUND) /* handed over through the word, pessimistically */
			assert_int_equal(w.word_after,
					 word_of(&w.req, waiter_reader ? CODE_RS : CODE_WS));
		finish(&w);
		assert_clean(&t);
	}
	print_message("word sleeper seen in %d of %d round(s)\n", hits, rounds);
	assert_true(hits > 0);
}

static void test_writer_waits_on_writer_word(void **state)
{
	(void)state;
	word_wait_scenario(false, false);
}

static void test_writer_waits_on_reader_word(void **state)
{
	(void)state;
	word_wait_scenario(true, false);
}


/* ---- (c) precision ----------------------------------------------------- */

/*
 * A partial-range writer intersects a full-range word holder: it waits, but
 * in the tree (it displaces and materialises the holder); the word sleeper
 * is woken into the tree behind it.  The holder's unlock grants the partial
 * writer first (it entered first), then the full-range one.
 */
static void test_partial_writer_goes_to_tree(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock h;
	struct locker w, p;

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	start_locker(&w, &t, OP_WRITE, 0, FULL, true);
	if (LONG_BOUND)
		assert_true(wait_word_sleeper(&t, &h, CODE_W, &w));
	start_locker(&p, &t, OP_WRITE, 10, 20, true);
	assert_true(wait_nr(&t, 3)); /* h materialised, p, w */
	assert_false(is_fast(peek_word(&t)));
	sleep_ms(20);
	assert_false(atomic_load(&p.done));
	assert_false(atomic_load(&w.done));
	range_write_unlock(&t, &h);
	if (LONG_BOUND) {
		/* w entered the tree after p (woken by p's displacement) */
		assert_true(wait_flag(&p.done, 5000));
		sleep_ms(20);
		assert_false(atomic_load(&w.done));
		finish(&p);
		assert_true(wait_flag(&w.done, 5000));
		finish(&w);
	} else {
		/* w may have entered marked before p came: one, then the other */
		for (int i = 0; i < 5000 && !atomic_load(&p.done) && !atomic_load(&w.done); i++)
			sleep_ms(1);
		assert_true(atomic_load(&p.done) || atomic_load(&w.done));
		assert_false(atomic_load(&p.done) && atomic_load(&w.done));
		if (atomic_load(&p.done)) {
			finish(&p);
			assert_true(wait_flag(&w.done, 5000));
			finish(&w);
		} else {
			finish(&w);
			assert_true(wait_flag(&p.done, 5000));
			finish(&p);
		}
	}
	assert_int_equal(p.ret, 0);
	assert_int_equal(w.ret, 0);
	assert_clean(&t);
}

/*
 * A reader beside a word-held reader with a sleeping writer: granted at
 * once, for a partial range (tree path) and for the whole resource (a
 * reader does not conflict with a reader holder: tree path, no word wait).
 * The sleeping writer is woken into the tree and waits for both.
 */
static void reader_beside_word_reader(uint64_t start, uint64_t last)
{
	static struct range_lock_tree t;
	struct range_lock h;
	struct locker w, r;

	range_lock_tree_init(&t);
	lock_holder(&t, &h, true);
	start_locker(&w, &t, OP_WRITE, 0, FULL, false);
	if (LONG_BOUND)
		assert_true(wait_word_sleeper(&t, &h, CODE_R, &w));
	start_locker(&r, &t, OP_READ, start, last, true);
	if (LONG_BOUND) {
		/* the writer is unmarked: the reader overtakes it at once */
		assert_true(wait_flag(&r.done, 5000));
		assert_int_equal(r.ret, 0);
		assert_true(wait_nr(&t, 3)); /* h, r held; w waits in the tree */
		assert_false(atomic_load(&w.done));
		finish(&r);
		sleep_ms(20);
		assert_false(atomic_load(&w.done)); /* h still reads */
	} else {
		/* the writer may be marked already (past 2 ms): then the
		 * reader waits behind it; the holder's unlock lets it go */
		sleep_ms(5);
		assert_false(atomic_load(&w.done));
	}
	range_read_unlock(&t, &h);
	if (!LONG_BOUND) {
		assert_true(wait_flag(&r.done, 5000));
		finish(&r);
	}
	assert_true(wait_flag(&w.done, 5000));
	finish(&w);
	assert_int_equal(w.ret, 0);
	assert_clean(&t);
}

static void test_partial_reader_beside_word_reader(void **state)
{
	(void)state;
	reader_beside_word_reader(10, 20);
}

static void test_full_reader_beside_word_reader(void **state)
{
	(void)state;
	reader_beside_word_reader(0, FULL);
}

/* ---- (d) trylock ------------------------------------------------------- */

/*
 * A full-range trylock that conflicts with the word holder fails at once
 * and touches nothing (no materialisation: the tree stays empty, the word
 * unchanged, a sleeper stays asleep).  A partial one, or a full-range read
 * beside a reader, takes the tree path as before.
 */
static void test_trylock_leaves_word_alone(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock h, x, y;
	struct locker w;

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	range_lock_init_full(&x);
	assert_int_equal(range_write_trylock(&t, &x), 0);
	assert_int_equal(peek_word(&t), word_of(&h, CODE_W));
	assert_int_equal(peek_nr(&t), 0);
	assert_null(peek_root(&t));
	assert_int_equal(x.rb_parent_flags & RL_LINKED_BIT, 0); /* not "in a tree" */
	/* A full-range READ trylock goes through the tree, as before word
	 * mode: it fails, but materialises the holder. */
	assert_int_equal(range_read_trylock(&t, &x), 0);
	assert_false(is_fast(peek_word(&t)));
	assert_int_equal(peek_nr(&t), 1);     /* h materialised */
	assert_int_equal(x.rb_parent_flags & RL_LINKED_BIT, 0);
	range_write_unlock(&t, &h);
	assert_clean(&t);

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	range_lock_init(&x, 5, 5); /* partial: the tree path, precise */
	assert_int_equal(range_write_trylock(&t, &x), 0);
	assert_int_equal(peek_nr(&t), 1);     /* h materialised */
	range_write_unlock(&t, &h);
	assert_clean(&t);

	range_lock_tree_init(&t);
	lock_holder(&t, &h, true);
	range_lock_init_full(&x);
	assert_int_equal(range_write_trylock(&t, &x), 0);
	assert_int_equal(peek_word(&t), word_of(&h, CODE_R));
	assert_int_equal(peek_nr(&t), 0);
	assert_int_equal(range_read_trylock(&t, &x), 1); /* readers share */
	assert_int_equal(peek_nr(&t), 2);
	range_lock_init_full(&y);
	assert_int_equal(range_write_trylock(&t, &y), 0);
	range_read_unlock(&t, &x);
	range_read_unlock(&t, &h);
	assert_clean(&t);

	/* With a word sleeper: the trylock neither displaces nor wakes. */
	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	start_locker(&w, &t, OP_WRITE, 0, FULL, false);
	if (LONG_BOUND) {
		assert_true(wait_word_sleeper(&t, &h, CODE_W, &w));
		range_lock_init_full(&x);
		assert_int_equal(range_write_trylock(&t, &x), 0);
		assert_int_equal(range_write_trylock(&t, &x), 0);
		assert_int_equal(peek_word(&t), word_of(&h, CODE_WS));
		assert_int_equal(peek_nr(&t), 0);
		sleep_ms(20);
		assert_true(thread_asleep(&w));
		assert_false(atomic_load(&w.done));
	} else {
		range_lock_init_full(&x);
		assert_int_equal(range_write_trylock(&t, &x), 0);
	}
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&w.done, 5000));
	finish(&w);
	assert_clean(&t);
}

/* ---- (e) timed calls ---------------------------------------------------- */

static int timed(struct range_lock_tree *t, struct range_lock *r, bool reader,
		 clockid_t clk, const struct timespec *ts)
{
	return reader ? range_read_timedlock(t, r, clk, ts)
		      : range_write_timedlock(t, r, clk, ts);
}

/*
 * A timed word waiter times out at its deadline, on either clock, and
 * leaves nothing behind: its request is reusable, the holder's unlock frees
 * the word (0), the tree is empty, destroy works.  With the one-hour bound
 * it timed out on the word itself (the tree never saw it); with the real
 * bound a 50 ms deadline is met in the tree (it entered marked at 2 ms).
 */
static void timed_out_scenario(clockid_t clk, bool reader, long ms)
{
	static struct range_lock_tree t;
	struct range_lock h, w;
	struct timespec ts, now;
	uint32_t nr;

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	range_lock_init_full(&w);
	deadline_in(clk, ms, &ts);
	assert_int_equal(timed(&t, &w, reader, clk, &ts), -ETIMEDOUT);
	clock_gettime(clk, &now);
	assert_true(now.tv_sec > ts.tv_sec ||
		    (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
	assert_int_equal(w.rb_parent_flags & RL_LINKED_BIT, 0);
	nr = peek_nr(&t);
	if (reader) {
		/* a reader waited in the tree: h materialised, word in tree mode */
		assert_int_equal(nr, 1);
		assert_false(is_fast(peek_word(&t)));
	} else if (LONG_BOUND) {
		assert_int_equal(nr, 0);
		assert_int_equal(peek_word(&t), word_of(&h, CODE_WS));
	} else {
		assert_true(nr <= 1); /* h, materialised if w went to the tree */
		if (nr == 0)
			assert_true(peek_word(&t) == word_of(&h, CODE_WS) ||
				    peek_word(&t) == word_of(&h, CODE_W));
	}
	range_write_unlock(&t, &h);
	assert_int_equal(peek_word(&t), 0);
	assert_int_equal(peek_nr(&t), 0);
	/* the request is reusable */
	if (reader)
		range_read_lock(&t, &w);
	else
		range_write_lock(&t, &w);
	assert_int_equal(peek_word(&t), word_of(&w, reader ? CODE_R : CODE_W));
	unlock_holder(&t, &w, reader);
	assert_clean(&t);
}

static void test_timed_word_wait(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock h, w;
	struct timespec ts;
	struct locker p;

	timed_out_scenario(CLOCK_MONOTONIC, false, 50);
	timed_out_scenario(CLOCK_REALTIME, false, 50);
	timed_out_scenario(CLOCK_MONOTONIC, true, 30);
	timed_out_scenario(CLOCK_REALTIME, true, 30);
	timed_out_scenario(CLOCK_MONOTONIC, false, 1); /* within the bound */

	/* Malformed deadlines: -EINVAL at once, nothing changed. */
	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	range_lock_init_full(&w);
	ts.tv_sec = 1;
	ts.tv_nsec = 1000000000L;
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), -EINVAL);
	assert_int_equal(peek_word(&t), word_of(&h, CODE_W)); /* the writer's: untouched */
	assert_int_equal(peek_nr(&t), 0);
	ts.tv_nsec = -1;
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_REALTIME, &ts), -EINVAL);
	assert_int_equal(peek_word(&t), word_of(&h, CODE_W));
	assert_int_equal(peek_nr(&t), 0);
	assert_int_equal(w.rb_parent_flags & RL_LINKED_BIT, 0);
	/* A reader takes the tree path, which checks the deadline under
	 * tree_lock (the holder is materialised by then): -EINVAL all the
	 * same, and the request is not left in the tree. */
	assert_int_equal(range_read_timedlock(&t, &w, CLOCK_REALTIME, &ts), -EINVAL);
	assert_int_equal(w.rb_parent_flags & RL_LINKED_BIT, 0);
	assert_true(peek_nr(&t) <= 1);
	/* A negative tv_sec is a deadline long past: -ETIMEDOUT. */
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	assert_int_equal(range_read_timedlock(&t, &w, CLOCK_REALTIME, &ts), -ETIMEDOUT);
	deadline_in(CLOCK_MONOTONIC, -1000, &ts); /* passed */
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	assert_int_equal(w.rb_parent_flags & RL_LINKED_BIT, 0);
	/* the readers' tree path left h materialised: start again, on the word */
	range_write_unlock(&t, &h);
	assert_clean(&t);
	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	deadline_in(CLOCK_MONOTONIC, -1000, &ts);
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	/* on the word (it may have set the sleepers code before it looked at
	 * its deadline: a spurious wake later, nothing lost) */
	assert_true(peek_word(&t) == word_of(&h, CODE_W) ||
		    peek_word(&t) == word_of(&h, CODE_WS));
	assert_int_equal(peek_nr(&t), 0);

	/* A timed waiter that gives up beside a plain sleeper: the plain one
	 * still gets the range at the unlock (nothing was lost). */
	start_locker(&p, &t, OP_WRITE, 0, FULL, false);
	if (LONG_BOUND)
		assert_true(wait_word_sleeper(&t, &h, CODE_W, &p));
	deadline_in(CLOCK_MONOTONIC, 30, &ts);
	assert_int_equal(range_write_timedlock(&t, &w, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	if (LONG_BOUND) {
		assert_int_equal(peek_word(&t), word_of(&h, CODE_WS));
		assert_int_equal(peek_nr(&t), 0);
		assert_false(atomic_load(&p.done));
	}
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&p.done, 5000));
	finish(&p);
	assert_clean(&t);

	/* A timed waiter that gets the range before its deadline. */
	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	start_locker(&p, &t, OP_WRITE_TIMED, 0, FULL, false);
	if (LONG_BOUND)
		assert_true(wait_word_sleeper(&t, &h, CODE_W, &p));
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&p.done, 5000));
	finish(&p);
	assert_int_equal(p.ret, 0);
	assert_clean(&t);
}

/* ---- (f) the hand-off bound (real bound only) -------------------------- */

#if !RL_TEST_LONG_HANDOFF

static struct {
	struct range_lock_tree *tree;
	atomic_int stop;
	atomic_int started;     /* bargers that have begun */
	atomic_int acquired;    /* all bargers' acquisitions */
	atomic_int holders;     /* exclusion witness */
	atomic_int violations;
} barge;

static void *barger_main(void *arg)
{
	(void)arg;
	atomic_fetch_add(&barge.started, 1);
	while (!atomic_load(&barge.stop)) {
		struct range_lock r;
		uint64_t t0;

		range_lock_init_full(&r);
		range_write_lock(barge.tree, &r);
		if (atomic_fetch_add(&barge.holders, 1) != 0)
			atomic_fetch_add(&barge.violations, 1);
		atomic_fetch_add(&barge.acquired, 1);
		t0 = mono_ns();
		while (mono_ns() - t0 < 20000) /* 20 us in */
			;
		atomic_fetch_sub(&barge.holders, 1);
		range_write_unlock(barge.tree, &r);
	}
	return NULL;
}

#define NR_BARGERS 3

/* Wait until *@c >= @n; false after 5 s.  The bargers' start and their
 * first acquisition are waited for, so that no assertion rests on how soon
 * a loaded machine runs a new thread. */
static bool wait_count(atomic_int *c, int n)
{
	for (int i = 0; i < 5000 && atomic_load(c) < n; i++)
		sleep_ms(1);
	return atomic_load(c) >= n;
}

static void test_handoff_bound(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	pthread_t b[NR_BARGERS];
	struct range_lock h;
	struct locker w;
	uint64_t worst = 0;

	/* Phase 1, for a writer and then a reader holder: past the bound the
	 * word waiter asks for the word (w | TL_HANDOFF_W or _R, the holder
	 * in w's rb_left); bargers that come then sleep on that value, none
	 * gets the range before w; the holder's unlock hands the word to w;
	 * the tree stays empty throughout (nothing displaces). */
	for (int reader = 0; reader < 2; reader++) {
		uintptr_t ask;
		uint32_t nr_max = 0;
		bool word_ok = true;

		range_lock_tree_init(&t);
		memset(&barge, 0, sizeof(barge));
		barge.tree = &t;
		lock_holder(&t, &h, reader);
		init_locker(&w, &t, OP_WRITE, 0, FULL, true);
		w.seen_counter = &barge.acquired;
		run_locker(&w);
		ask = word_of(&w.req, reader ? HANDOFF_R : HANDOFF_W);
		assert_true(wait_word_is(&t, ask));
		assert_ptr_equal(peek_rb_left(&w.req), &h);
		assert_int_equal(peek_nr(&t), 0);
		for (int i = 0; i < NR_BARGERS; i++)
			assert_int_equal(pthread_create(&b[i], NULL, barger_main, NULL), 0);
		assert_true(wait_count(&barge.started, NR_BARGERS));
		for (int i = 0; i < 30; i++) { /* 30 ms: the bargers sleep on it */
			word_ok &= peek_word(&t) == ask;
			if (peek_nr(&t) > nr_max)
				nr_max = peek_nr(&t);
			sleep_ms(1);
		}
		assert_true(word_ok);
		assert_int_equal(atomic_load(&barge.acquired), 0);
		assert_false(atomic_load(&w.done));
		unlock_holder(&t, &h, reader);
		assert_true(wait_flag(&w.done, 5000));
		assert_int_equal(w.ret, 0);
		assert_int_equal(w.counter_at_grant, 0); /* nobody overtook it */
		/* w holds: the word names w (picked up) or a barger asking w */
		assert_true(w.word_after == word_of(&w.req, CODE_WS) ||
			    (code_of(w.word_after) == HANDOFF_W &&
			     w.word_after != word_of(&w.req, HANDOFF_W)));
		for (int i = 0; i < 10; i++) { /* w holds: nobody gets in */
			if (peek_nr(&t) > nr_max)
				nr_max = peek_nr(&t);
			sleep_ms(1);
		}
		assert_int_equal(atomic_load(&barge.acquired), 0);
		finish(&w);
		/* the bargers, waiting since before w's grant, get in now */
		assert_true(wait_count(&barge.acquired, 1));
		atomic_store(&barge.stop, 1);
		for (int i = 0; i < NR_BARGERS; i++)
			pthread_join(b[i], NULL);
		assert_int_equal(atomic_load(&barge.violations), 0);
		assert_true(atomic_load(&barge.acquired) > 0);
		assert_int_equal(nr_max, 0); /* never in the tree */
		assert_clean(&t);
	}

	/* Phase 2: bargers hammer the word; a whole-resource writer's waits
	 * stay bounded (each call within 2 ms + scheduling; 1 s allowed). */
	range_lock_tree_init(&t);
	memset(&barge, 0, sizeof(barge));
	barge.tree = &t;
	for (int i = 0; i < NR_BARGERS; i++)
		assert_int_equal(pthread_create(&b[i], NULL, barger_main, NULL), 0);
	assert_true(wait_count(&barge.started, NR_BARGERS));
	for (int i = 0; i < 50; i++) {
		struct range_lock r;
		uint64_t t0 = mono_ns(), d;

		range_lock_init_full(&r);
		range_write_lock(&t, &r);
		d = mono_ns() - t0;
		if (atomic_fetch_add(&barge.holders, 1) != 0)
			atomic_fetch_add(&barge.violations, 1);
		atomic_fetch_sub(&barge.holders, 1);
		range_write_unlock(&t, &r);
		if (d > worst)
			worst = d;
		sleep_ms(1);
	}
	(void)wait_count(&barge.acquired, 1); /* asserted below */
	atomic_store(&barge.stop, 1);
	for (int i = 0; i < NR_BARGERS; i++)
		pthread_join(b[i], NULL);
	print_message("bargers: %d acquisitions; longest wait of the main writer %.2f ms\n",
		      atomic_load(&barge.acquired), (double)worst / 1e6);
	assert_int_equal(atomic_load(&barge.violations), 0);
	assert_true(atomic_load(&barge.acquired) > 0);
	assert_true(worst < 1000000000ull);
	assert_clean(&t);
}
#endif /* !RL_TEST_LONG_HANDOFF */

/* ---- (g) statistics, FIFO, interruptible/killable: the tree ------------- */

/* With @l waiting against word holder state: it waits in the tree (2
 * requests), and the lock word never showed a sleepers code meanwhile. */
static void assert_waits_in_tree(struct range_lock_tree *t, struct locker *l)
{
	uint64_t end = mono_ns() + 5000000000ull;
	bool sleepers = false;

	while (mono_ns() < end && peek_nr(t) != 2)
		sleepers |= is_sleepers(peek_word(t));
	for (int i = 0; i < 2000; i++) { /* and for a while after */
		sleepers |= is_sleepers(peek_word(t));
		if (i % 100 == 0)
			sleep_ms(1);
	}
	assert_int_equal(peek_nr(t), 2);
	assert_false(sleepers);
	assert_false(atomic_load(&l->done));
}

/*
 * A whole-resource READER facing a writer word holder does not wait on the
 * word: it takes the tree path (displaces the holder: 2 requests), no
 * sleepers code ever shows, and the holder's unlock grants it in the tree.
 */
static void test_reader_waits_in_tree(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock h;
	struct locker r;

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	start_locker(&r, &t, OP_READ, 0, FULL, true);
	assert_waits_in_tree(&t, &r);
	assert_false(is_fast(peek_word(&t)));
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&r.done, 5000));
	assert_int_equal(r.ret, 0);
	finish(&r);
	assert_clean(&t);
}

/* ---- a request at an address 0 modulo 2^32 never waits on the word ----- */

/*
 * Its word values would have a low half of 0, 1 or 4 -- a free or
 * tree-mode word to a futex sleeper -- so it takes the tree path.  The
 * locker is mapped so that its request sits at 0x7e0000000000.
 */
static void test_aligned_request_waits_in_tree(void **state)
{
	(void)state;
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RL_TEST_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RL_TEST_UNDER_TSAN 1
#endif
#if defined(RL_TEST_UNDER_TSAN)
	/* ThreadSanitizer reserves that part of the address space and aborts
	 * the process at a fixed mmap there ("mmap at bad address"). */
	print_message("under ThreadSanitizer: skipped\n");
	skip();
#elif UINTPTR_MAX > UINT32_MAX && defined(MAP_FIXED_NOREPLACE)
	static struct range_lock_tree t;
	const uintptr_t at = (uintptr_t)0x7e0000000000ull;
	size_t off = offsetof(struct locker, req);
	size_t len = 2 * 65536;
	char *base = mmap((void *)(at - 65536), len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	struct range_lock h;
	struct locker *l;

	if (base == MAP_FAILED || (uintptr_t)base != at - 65536) {
		if (base != MAP_FAILED)
			munmap(base, len);
		print_message("cannot map at %#lx: skipped\n", (unsigned long)at);
		skip();
		return;
	}
	assert_int_equal(off % 8, 0);
	l = (struct locker *)(at - off);
	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	init_locker(l, &t, OP_WRITE, 0, FULL, true);
	assert_int_equal((uintptr_t)&l->req, at);
	run_locker(l);
	assert_waits_in_tree(&t, l); /* 2 requests, no sleepers code seen */
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&l->done, 5000));
	assert_int_equal(l->ret, 0);
	finish(l);
	assert_clean(&t);
	/* and the fast path still works for it (an uncontended hold) */
	range_lock_tree_init(&t);
	range_lock_init_full(&l->req);
	range_write_lock(&t, &l->req);
	range_write_unlock(&t, &l->req);
	assert_clean(&t);
	munmap(base, len);
#else
	skip();
#endif
}

#if !RL_TEST_LONG_HANDOFF
/* ---- misuse while the word holds a hand-off request (death test) ------ */

static struct range_lock_tree mis_tree;
static struct range_lock mis_holder;

static void *mis_waiter(void *arg)
{
	range_write_lock(&mis_tree, arg);
	return NULL;
}

/* Child: h holds, a waiter asks for the hand-off (w | 1), then an unlock
 * of a never-locked whole-resource write request: must abort, not hand
 * the word over. */
static void unlock_never_locked_during_handoff(void)
{
	static struct range_lock wreq, bogus;
	pthread_t th;

	range_lock_tree_init(&mis_tree);
	lock_holder(&mis_tree, &mis_holder, false);
	range_lock_init_full(&wreq);
	if (pthread_create(&th, NULL, mis_waiter, &wreq))
		_exit(3);
	if (!wait_word_is(&mis_tree, word_of(&wreq, HANDOFF_W)))
		_exit(4); /* never reached the hand-off state */
	range_lock_init_full(&bogus);
	range_write_unlock(&mis_tree, &bogus);
	_exit(5); /* the unlock returned */
}

static void test_misuse_unlock_during_handoff(void **state)
{
	(void)state;
	struct child_result r;

	run_child(unlock_never_locked_during_handoff, &r);
	if (!strstr(r.out, "not in this tree") || !WIFSIGNALED(r.status))
		print_error("status %#x, stderr: '%s'\n", r.status, r.out);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	assert_non_null(strstr(r.out, "not in this tree"));
}

/*
 * Child: h holds mis_tree (writing, or reading for MIS_OTHER_READ), a
 * waiter w asks for the hand-off (w | 1 or w | 4); then an unlock against
 * mis_tree of a request that is not its holder but looks like a fast hold:
 *   MIS_OTHER_WRITE, MIS_OTHER_READ: r, holding ANOTHER, empty tree through
 *     its lock word in that mode;
 *   MIS_WAITER: w's own request, still waiting (from another thread).
 * Each must abort, not hand mis_tree to w while h holds it.
 */
enum { MIS_OTHER_WRITE, MIS_OTHER_READ, MIS_WAITER, MIS_CASES };
static int mis_case;

static void unlock_non_holder_during_handoff(void)
{
	static struct range_lock_tree other;
	static struct range_lock wreq, r;
	bool reader = mis_case == MIS_OTHER_READ;
	pthread_t th;

	range_lock_tree_init(&mis_tree);
	range_lock_tree_init(&other);
	lock_holder(&mis_tree, &mis_holder, reader);
	range_lock_init_full(&wreq);
	if (pthread_create(&th, NULL, mis_waiter, &wreq))
		_exit(3);
	if (!wait_word_is(&mis_tree, word_of(&wreq, reader ? HANDOFF_R : HANDOFF_W)))
		_exit(4); /* never reached the hand-off state */
	if (mis_case == MIS_WAITER) {
		range_write_unlock(&mis_tree, &wreq);
	} else {
		range_lock_init(&r, 0, 9);
		if (reader)
			range_read_lock(&other, &r);
		else
			range_write_lock(&other, &r);
		if (peek_word(&other) != word_of(&r, reader ? CODE_R : CODE_W))
			_exit(6); /* not held through the word */
		if (reader)
			range_read_unlock(&mis_tree, &r);
		else
			range_write_unlock(&mis_tree, &r);
	}
	/* The unlock returned: the word went to the waiter while h holds. */
	fprintf(stderr, "unlock returned, word %#lx\n", (unsigned long)peek_word(&mis_tree));
	_exit(5);
}

static void test_misuse_unlock_non_holder_during_handoff(void **state)
{
	(void)state;
	static const char *const name[MIS_CASES] = {
		"write, other tree", "read, other tree", "the waiter's own"
	};
	struct child_result r;
	int bad = 0;

	for (mis_case = 0; mis_case < MIS_CASES; mis_case++) { /* all, then assert */
		run_child(unlock_non_holder_during_handoff, &r);
		if (!strstr(r.out, "not in this tree") || !WIFSIGNALED(r.status) ||
		    WTERMSIG(r.status) != SIGABRT) {
			print_error("%s: status %#x, stderr: '%s'\n", name[mis_case],
				    r.status, r.out);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* The same with a request whose init failed (it carries a mark that makes
 * lock calls refuse it): it must not look like the word's fast holder
 * either.  The whole resource, so that it would release the holder's
 * word in write mode. */
static void unlock_bad_init_during_handoff(void)
{
	static struct range_lock wreq, bogus;
	pthread_t th;

	range_lock_tree_init(&mis_tree);
	lock_holder(&mis_tree, &mis_holder, false);
	range_lock_init_full(&wreq);
	if (pthread_create(&th, NULL, mis_waiter, &wreq))
		_exit(3);
	if (!wait_word_is(&mis_tree, word_of(&wreq, HANDOFF_W)))
		_exit(4);
	if (range_lock_init(&bogus, RANGE_LOCK_FULL, 0) != -EINVAL)
		_exit(6);
	range_write_unlock(&mis_tree, &bogus);
	_exit(5); /* the unlock returned */
}

static void test_misuse_unlock_bad_init_during_handoff(void **state)
{
	(void)state;
	struct child_result r;

	run_child(unlock_bad_init_during_handoff, &r);
	if (!strstr(r.out, "is invalid: start > last") || !WIFSIGNALED(r.status))
		print_error("status %#x, stderr: '%s'\n", r.status, r.out);
	assert_true(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT);
	assert_non_null(strstr(r.out, "is invalid: start > last"));
}

/* ---- handed, then displaced before the pick-up ------------------------- */

static FILE *devnull;

/*
 * The holder's unlock turns w's request into w | 0 (handed) and, at once,
 * a displacer (the dump, from the unlocking thread) materialises w in the
 * tree, often before w ran.  w must return holding (nobody else gets the
 * range while it holds), and its unlock must work through the tree.
 * Rounds in which the dump came before the unlock or after the pick-up are
 * legal too; the handed state seen by the last look before the dump is
 * counted (a race: asserted after all rounds, only that it happened once).
 */
static void test_handed_then_displaced(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	int handed_seen = 0, rounds = 0, bad = 0;
	uint64_t end = mono_ns() + 1500000000ull;

	devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	while ((mono_ns() < end || handed_seen == 0) && rounds < 2000) {
		struct range_lock h, x;
		struct locker w;
		uintptr_t v;

		rounds++;
		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		start_locker(&w, &t, OP_WRITE, 0, FULL, true);
		assert_true(wait_word_is(&t, word_of(&w.req, HANDOFF_W)));
		if (LONG_BOUND == 0)
			(void)wait_asleep(&w, 2);
		range_write_unlock(&t, &h);
		v = peek_word(&t);
		range_lock_tree_dump(&t, devnull);
		if (v == word_of(&w.req, HANDED))
			handed_seen++;
		assert_true(wait_flag(&w.done, 5000));
		if (w.ret != 0)
			bad++;
		/* w holds: nobody else gets any part of the range */
		range_lock_init_full(&x);
		if (range_write_trylock(&t, &x))
			bad++, range_write_unlock(&t, &x);
		range_lock_init(&x, 7, 7);
		if (range_read_trylock(&t, &x))
			bad++, range_read_unlock(&t, &x);
		finish(&w); /* w's unlock, through the tree */
		assert_int_equal(bad, 0);
		assert_clean(&t);
		if (mono_ns() > end + 10000000000ull)
			break;
	}
	fclose(devnull);
	print_message("handed state displaced in %d of %d round(s)\n", handed_seen, rounds);
	assert_int_equal(bad, 0);
	assert_true(handed_seen > 0);
}
#endif /* !RL_TEST_LONG_HANDOFF */

/* ---- a timed waiter's withdrawal racing the grant ---------------------- */

/*
 * A timed whole-resource writer with a 5 ms deadline (past the 2 ms bound:
 * it has asked for the hand-off; with the one-hour bound it sleeps on the
 * sleepers value) and a holder that unlocks at about that deadline (3 to
 * 7 ms after the waiter started, spread over the rounds).  Every round:
 * 0 and the waiter holds (nobody else can lock), or -ETIMEDOUT and nothing
 * is left (word 0, tree empty once the holder unlocked, destroy works).
 */
static void test_timed_withdrawal_races_grant(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	int got = 0, timedout = 0, bad = 0;

	for (int round = 0; round < 300; round++) {
		struct range_lock h, x;
		struct locker w;
		uint64_t t0;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		init_locker(&w, &t, OP_WRITE_TIMED, 0, FULL, true);
		w.timeout_ms = 5;
		t0 = mono_ns();
		run_locker(&w);
		while (!atomic_load(&w.tid))
			sched_yield();
		t0 = mono_ns();
		while (mono_ns() - t0 < 3000000ull + (uint64_t)(round % 41) * 100000u)
			;
		range_write_unlock(&t, &h);
		assert_true(wait_flag(&w.done, 5000));
		if (w.ret == 0) {
			got++;
			range_lock_init_full(&x);
			if (range_write_trylock(&t, &x))
				bad++, range_write_unlock(&t, &x);
			finish(&w);
		} else if (w.ret == -ETIMEDOUT) {
			timedout++;
			pthread_join(w.th, NULL);
			if (w.req.rb_parent_flags & RL_LINKED_BIT)
				bad++;
		} else {
			bad++;
			finish(&w);
		}
		assert_int_equal(bad, 0);
		assert_clean(&t);
	}
	print_message("timed waiter: granted %d, timed out %d\n", got, timedout);
	assert_int_equal(bad, 0);
	assert_true(got + timedout == 300);
}

static void test_stats_tree_no_word_wait(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock_stats st;
	struct range_lock h;
	struct locker w;

	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_enable_stats(&t, &st), 0);
	lock_holder(&t, &h, false);
	start_locker(&w, &t, OP_WRITE, 0, FULL, false);
	assert_true(wait_for_waiters(&t, 1));
	assert_waits_in_tree(&t, &w);
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&w.done, 5000));
	finish(&w);
	assert_int_equal(nr_waiting(&t), 0);
	assert_clean(&t);
}

static void test_fifo_tree_no_word_wait(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct range_lock h;
	struct locker w;

	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_set_fifo(&t, 1), 0);
	lock_holder(&t, &h, false);
	assert_int_equal(peek_word(&t), word_of(&h, CODE_W)); /* fast path on */
	start_locker(&w, &t, OP_WRITE, 0, FULL, false);
	assert_waits_in_tree(&t, &w);
	range_write_unlock(&t, &h);
	assert_true(wait_flag(&w.done, 5000));
	finish(&w);
	assert_clean(&t);
}

/* _interruptible and _killable calls wait in the tree. */
static void test_intr_kill_wait_in_tree(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	enum op ops[] = { OP_WRITE_INTR, OP_WRITE_KILL };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct range_lock h;
		struct locker w;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		start_locker(&w, &t, ops[i], 0, FULL, false);
		assert_waits_in_tree(&t, &w);
		range_write_unlock(&t, &h);
		assert_true(wait_flag(&w.done, 5000));
		finish(&w);
		assert_int_equal(w.ret, 0);
		assert_clean(&t);
	}
}

/* ---- (h) the dump ------------------------------------------------------- */

/* The dump while a word sleeper exists says so, and the sleeper (woken by
 * the dump's displacement) then waits in the tree. */
static void test_dump_word_sleepers(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	int hits = 0, rounds = 0;
	uint64_t end = mono_ns() + HIT_BOUND_NS;

	for (; !hits && (LONG_BOUND ? rounds < 1 : mono_ns() < end); rounds++) {
		struct range_lock h;
		struct locker w;
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		start_locker(&w, &t, OP_WRITE, 0, FULL, true);
		if (wait_word_sleeper(&t, &h, CODE_W, &w) && !LONG_BOUND)
			(void)wait_asleep(&w, 1); /* in the futex, if in time */
		f = open_memstream(&buf, &len);
		assert_non_null(f);
		range_lock_tree_dump(&t, f);
		fclose(f);
		if (strstr(buf, "1 thread(s) slept on the lock word"))
			hits++;
		else if (LONG_BOUND)
			print_message("dump:\n%s", buf);
		free(buf);
		assert_true(wait_nr(&t, 2)); /* h materialised, w in the tree */
		assert_false(atomic_load(&w.done));
		range_write_unlock(&t, &h);
		assert_true(wait_flag(&w.done, 5000));
		finish(&w);
		assert_clean(&t);
	}
	print_message("dump saw the word sleeper in %d of %d round(s)\n", hits, rounds);
	assert_true(hits > 0);

	/* With the one-hour bound: two sleepers, both woken at once by the
	 * dump's displacement (a wake-all, not a wake-one and a pass-on). */
	if (LONG_BOUND) {
		struct range_lock h;
		struct locker w[2];
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		for (int i = 0; i < 2; i++) {
			start_locker(&w[i], &t, OP_WRITE, 0, FULL, false); /* readers never word-wait */
			assert_true(wait_word_sleeper(&t, &h, CODE_W, &w[i]));
		}
		f = open_memstream(&buf, &len);
		assert_non_null(f);
		range_lock_tree_dump(&t, f);
		fclose(f);
		if (!strstr(buf, "2 thread(s) slept on the lock word"))
			print_message("dump:\n%s", buf);
		assert_non_null(strstr(buf, "2 thread(s) slept on the lock word"));
		free(buf);
		assert_true(wait_nr(&t, 3));
		range_write_unlock(&t, &h);
		for (int i = 0; i < 2; i++) {
			assert_true(wait_flag(&w[i].done, 5000));
			finish(&w[i]);
		}
		assert_clean(&t);
	}
}

/* ---- (i) downgrade ------------------------------------------------------ */

/*
 * Downgrading a word-held writer with a word sleeper (a whole-resource
 * writer): the displacement wakes it into the tree, where it waits for the
 * downgraded holder.  Whole-resource readers that come then take the tree
 * path (readers never wait on the word) and are granted beside the
 * downgraded holder; the writer waits for all three.
 */
static void test_downgrade_with_word_sleepers(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	struct locker r1, r2, w;
	struct range_lock h;
	bool hold = LONG_BOUND; /* the real bound may order them otherwise */

	range_lock_tree_init(&t);
	lock_holder(&t, &h, false);
	start_locker(&w, &t, OP_WRITE, 0, FULL, true);
	if (LONG_BOUND) {
		assert_true(wait_word_sleeper(&t, &h, CODE_W, &w));
		assert_int_equal(peek_nr(&t), 0);
	}
	range_downgrade_write(&t, &h);
	if (LONG_BOUND)
		assert_true(wait_nr(&t, 2)); /* h materialised, w woken into the tree */
	start_locker(&r1, &t, OP_READ, 0, FULL, hold);
	start_locker(&r2, &t, OP_READ, 0, FULL, hold);
	if (LONG_BOUND) {
		/* w is unmarked (one-hour bound): the readers overtake it */
		assert_true(wait_flag(&r1.done, 5000));
		assert_true(wait_flag(&r2.done, 5000));
		assert_true(wait_nr(&t, 4));
		sleep_ms(20);
		assert_false(atomic_load(&w.done));
		finish(&r1);
		finish(&r2);
		sleep_ms(10);
		assert_false(atomic_load(&w.done)); /* h still reads */
	} else {
		sleep_ms(5);
		assert_false(atomic_load(&w.done));
	}
	range_read_unlock(&t, &h);
	assert_true(wait_flag(&w.done, 5000));
	finish(&w);
	if (!LONG_BOUND) {
		assert_true(wait_flag(&r1.done, 5000));
		assert_true(wait_flag(&r2.done, 5000));
		finish(&r1);
		finish(&r2);
	}
	assert_int_equal(w.ret, 0);
	assert_clean(&t);
}

/* ---- (j) cross-thread unlock -------------------------------------------- */

static struct range_lock xh;

static void *lock_and_leave(void *arg)
{
	lock_holder(arg, &xh, false);
	return NULL;
}

static void *read_lock_and_leave(void *arg)
{
	lock_holder(arg, &xh, true);
	return NULL;
}

/* A word hold taken by a thread that is gone, unlocked by another, with a
 * word sleeper: the sleeper is woken and handed the word; its own hold
 * (with the sleepers code) unlocked by yet another thread frees the word. */
static void test_cross_thread_unlock_with_sleeper(void **state)
{
	(void)state;
	static struct range_lock_tree t;

	for (int reader = 0; reader < 2; reader++) {
		struct locker w;
		pthread_t a;

		range_lock_tree_init(&t);
		assert_int_equal(pthread_create(&a, NULL, reader ? read_lock_and_leave
								  : lock_and_leave, &t), 0);
		pthread_join(a, NULL);
		assert_int_equal(peek_word(&t), word_of(&xh, reader ? CODE_R : CODE_W));
		init_locker(&w, &t, OP_WRITE, 0, FULL, false);
		w.leave_held = true;
		run_locker(&w);
		if (LONG_BOUND)
			assert_true(wait_word_sleeper(&t, &xh, reader ? CODE_R : CODE_W, &w));
		unlock_holder(&t, &xh, reader);
		assert_true(wait_flag(&w.done, 5000));
		pthread_join(w.th, NULL);
		if (LONG_BOUND)
			assert_int_equal(w.word_after, word_of(&w.req, CODE_WS));
		/* w's hold, unlocked here, not in its thread */
		range_write_unlock(&t, &w.req);
		assert_clean(&t);
	}
}

/* ---- (k) many waiters --------------------------------------------------- */

#define MANY 16
#define MANY_ROUNDS 100

static struct {
	struct range_lock_tree tree;
	atomic_int go;
	atomic_int writers, readers, violations, finished;
	atomic_uint tid[MANY];
	cpu_set_t cpus;
} many;

static void *many_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	bool reader = id % 4 == 3;

	(void)sched_setaffinity(0, sizeof(many.cpus), &many.cpus);
	atomic_store(&many.tid[id], (unsigned)syscall(SYS_gettid));
	for (int i = 0; i < MANY_ROUNDS; i++) {
		struct range_lock r;

		range_lock_init_full(&r);
		if (reader) {
			range_read_lock(&many.tree, &r);
			atomic_fetch_add(&many.readers, 1);
			if (atomic_load(&many.writers))
				atomic_fetch_add(&many.violations, 1);
			sched_yield();
			atomic_fetch_sub(&many.readers, 1);
			range_read_unlock(&many.tree, &r);
		} else {
			range_write_lock(&many.tree, &r);
			if (atomic_fetch_add(&many.writers, 1) || atomic_load(&many.readers))
				atomic_fetch_add(&many.violations, 1);
			if (i % 8 == 0)
				sched_yield();
			atomic_fetch_sub(&many.writers, 1);
			range_write_unlock(&many.tree, &r);
		}
	}
	atomic_fetch_add(&many.finished, 1);
	return NULL;
}

/* 16 whole-resource threads (12 writers, 4 readers) behind one word-held
 * writer, then 100 rounds each: all get through, exclusion holds. */
static void test_many_waiters(void **state)
{
	(void)state;
	pthread_t th[MANY];
	struct range_lock h;
	cpu_set_t *cpus = &many.cpus;

	memset(&many, 0, sizeof(many));
	range_lock_tree_init(&many.tree);
	/* Two CPUs at most (the first two the process may use). */
	{
		cpu_set_t all;
		int n = 0;

		CPU_ZERO(cpus);
		if (sched_getaffinity(0, sizeof(all), &all) == 0)
			for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
				if (CPU_ISSET(c, &all)) {
					CPU_SET(c, cpus);
					n++;
				}
		if (!n)
			*cpus = all;
	}
	lock_holder(&many.tree, &h, false);
	/* the writers first: readers take the tree path (they would end
	 * word mode), so they start after the word check */
	for (int i = 0; i < MANY; i++)
		if (i % 4 != 3)
			assert_int_equal(pthread_create(&th[i], NULL, many_main,
							(void *)(intptr_t)i), 0);
	if (LONG_BOUND) { /* all writers asleep on the word before the unlock */
		assert_true(wait_word_is(&many.tree, word_of(&h, CODE_WS)));
		for (int i = 0; i < 5000; i++) {
			int asleep = 0;

			for (int j = 0; j < MANY; j++) {
				struct locker fake = { 0 };

				if (j % 4 == 3) {
					asleep++;
					continue;
				}

				atomic_store(&fake.tid, atomic_load(&many.tid[j]));
				asleep += thread_asleep(&fake);
			}
			if (asleep == MANY)
				break;
			sleep_ms(1);
		}
		assert_int_equal(peek_word(&many.tree), word_of(&h, CODE_WS));
		assert_int_equal(peek_nr(&many.tree), 0);
	} else {
		sleep_ms(5);
	}
	for (int i = 3; i < MANY; i += 4)
		assert_int_equal(pthread_create(&th[i], NULL, many_main, (void *)(intptr_t)i), 0);
	range_write_unlock(&many.tree, &h);
	for (int i = 0; i < 20000 && atomic_load(&many.finished) < MANY; i++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&many.finished), MANY);
	for (int i = 0; i < MANY; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&many.violations), 0);
	assert_clean(&many.tree);
}

/* ---- the pass-on wake --------------------------------------------------- */

static atomic_int spin_state; /* 1: spin, 2: spinning, 0: stop */

static void *spinner_main(void *arg)
{
	cpu_set_t *cpus = arg;

	if (cpus)
		(void)sched_setaffinity(0, sizeof(*cpus), cpus);
	atomic_store(&spin_state, 2);
	while (atomic_load(&spin_state))
		;
	return NULL;
}

/*
 * Three word sleepers; the unlock wakes one, and before it runs the tree
 * goes to tree mode without a displacement of a sleepers code (two partial
 * requests: the second displaces the first's plain fast hold, which wakes
 * nobody).  The woken sleeper leaves for the tree and must wake the next
 * one (the pass-on), which does the same: all three end up in the tree.
 * So that the woken sleeper does not run before main's two trylocks, the
 * sleepers are moved (asleep) to SCHED_IDLE on a CPU where a thread of
 * normal priority spins meanwhile, and main to the other CPU, for the
 * unlock and the trylocks only (at SCHED_IDLE under a CPU hog a thread
 * starting up under TSan needs seconds); a round in which a sleeper still
 * won the word (the first trylock fails) proves nothing and is repeated.
 */
static bool set_sleeper_sched(struct locker *l, int policy, const cpu_set_t *cpus)
{
	struct sched_param sp = { 0 };
	pid_t tid = (pid_t)atomic_load(&l->tid);

	return tid && sched_setaffinity(tid, sizeof(*cpus), cpus) == 0 &&
	       sched_setscheduler(tid, policy, &sp) == 0;
}

static void test_pass_on_wake(void **state)
{
	(void)state;
	static struct range_lock_tree t;
	cpu_set_t old, mine, theirs;
	int exercised = 0, rounds = 0, n = 0;
	bool idle = sched_getaffinity(0, sizeof(old), &old) == 0;

	/* main on the first allowed CPU, the sleepers and spinner on the
	 * second (or the first, if there is one) */
	CPU_ZERO(&mine);
	CPU_ZERO(&theirs);
	for (int c = 0; idle && c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &old))
			CPU_SET(c, n++ ? &theirs : &mine);
	if (n == 1)
		theirs = mine;
	idle = idle && n > 0;
	for (; rounds < 20 && exercised < 3; rounds++) {
		struct locker s[3];
		struct range_lock h, p1, p2;
		pthread_t spinner;
		int got1, got2;

		range_lock_tree_init(&t);
		lock_holder(&t, &h, false);
		for (int i = 0; i < 3; i++) {
			start_locker(&s[i], &t, OP_WRITE, 0, FULL, true);
			if (LONG_BOUND) {
				assert_true(wait_word_sleeper(&t, &h, CODE_W, &s[i]));
				assert_true(wait_asleep(&s[i], 5000));
			} else {
				for (int k = 0; k < 5000 && !atomic_load(&s[i].tid); k++)
					sleep_ms(1);
			}
		}
		for (int i = 0; i < 3 && idle; i++)
			if (!set_sleeper_sched(&s[i], SCHED_IDLE, &theirs))
				idle = false; /* refused: rounds may prove nothing */
		range_lock_init(&p1, 0, 0);
		range_lock_init(&p2, 1, 1);
		atomic_store(&spin_state, 1);
		if (idle)
			(void)sched_setaffinity(0, sizeof(mine), &mine);
		assert_int_equal(pthread_create(&spinner, NULL, spinner_main,
						idle ? &theirs : NULL), 0);
		while (atomic_load(&spin_state) != 2)
			sched_yield();
		range_write_unlock(&t, &h);
		got1 = range_write_trylock(&t, &p1);
		got2 = got1 ? range_write_trylock(&t, &p2) : 0;
		atomic_store(&spin_state, 0);
		pthread_join(spinner, NULL);
		for (int i = 0; i < 3; i++)
			(void)set_sleeper_sched(&s[i], SCHED_OTHER, &old);
		if (idle)
			(void)sched_setaffinity(0, sizeof(old), &old);
		if (got1 && got2) {
			exercised++;
			/* p1, p2 and the three sleepers, now tree waiters */
			assert_true(wait_nr(&t, 5));
		}
		if (got2)
			range_write_unlock(&t, &p2);
		if (got1)
			range_write_unlock(&t, &p1);
		/* release them in the order they are granted */
		for (int left = 3; left > 0;) {
			int i, k;

			for (k = 0; k < 5000; k++) {
				for (i = 0; i < 3; i++)
					if (atomic_load(&s[i].done) && !atomic_load(&s[i].release))
						break;
				if (i < 3)
					break;
				sleep_ms(1);
			}
			assert_true(i < 3);
			finish(&s[i]);
			left--;
		}
		assert_clean(&t);
	}
	print_message("pass-on exercised in %d of %d round(s)%s\n", exercised, rounds,
		      idle ? "" : " (no SCHED_IDLE)");
	if (LONG_BOUND && idle)
		assert_true(exercised > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_waits_on_writer_word),
		cmocka_unit_test(test_writer_waits_on_reader_word),
		cmocka_unit_test(test_reader_waits_in_tree),
		cmocka_unit_test(test_partial_writer_goes_to_tree),
		cmocka_unit_test(test_partial_reader_beside_word_reader),
		cmocka_unit_test(test_full_reader_beside_word_reader),
		cmocka_unit_test(test_trylock_leaves_word_alone),
		cmocka_unit_test(test_timed_word_wait),
#if !RL_TEST_LONG_HANDOFF
		cmocka_unit_test(test_handoff_bound),
#endif
		cmocka_unit_test(test_aligned_request_waits_in_tree),
		cmocka_unit_test(test_timed_withdrawal_races_grant),
#if !RL_TEST_LONG_HANDOFF
		cmocka_unit_test(test_misuse_unlock_during_handoff),
		cmocka_unit_test(test_misuse_unlock_non_holder_during_handoff),
		cmocka_unit_test(test_misuse_unlock_bad_init_during_handoff),
		cmocka_unit_test(test_handed_then_displaced),
#endif
		cmocka_unit_test(test_stats_tree_no_word_wait),
		cmocka_unit_test(test_fifo_tree_no_word_wait),
		cmocka_unit_test(test_intr_kill_wait_in_tree),
		cmocka_unit_test(test_dump_word_sleepers),
		cmocka_unit_test(test_downgrade_with_word_sleepers),
		cmocka_unit_test(test_cross_thread_unlock_with_sleeper),
		cmocka_unit_test(test_many_waiters),
		cmocka_unit_test(test_pass_on_wake),
	};

	watchdog(120); /* 1-2 s alone, up to 7 s with 2 CPU hogs and another
			* test beside it (a mutant that is never seen sleeping
			* on the word: 10 s for each of three tests); a hang
			* ends the binary */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
