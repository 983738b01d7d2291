/* SPDX-License-Identifier: MIT */
/*
 * Several ranges at once, grow and shrink, on a tree bound to a file
 * (range_lock_many*(), range_lock_grow*(), range_lock_shrink() with
 * range_lock_tree_set_file()): the OFD level follows every change, all or
 * nothing, and never drops a byte another local holder still needs.
 *
 * "Another process" is played, as in test_file_lock.c, by other open file
 * descriptions of the same file opened by the test (OFD locks of two
 * descriptions conflict even within one process): F_OFD_SETLK there holds
 * bytes, F_OFD_GETLK there shows what the tree holds.  Two real processes
 * take sets in opposite orders in test_opposite_orders_processes.
 */
#define _FILE_OFFSET_BITS 64
#include "test_util.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <cmocka.h>

static char path[] = "/tmp/rangelock-many-test.XXXXXX";
static int file_fd = -1;

static void broken(const char *what)
{
	fprintf(stderr, "test_file_many: %s: %s\n", what, strerror(errno));
	abort();
}

static int setup(void **state)
{
	(void)state;
	strcpy(path, "/tmp/rangelock-many-test.XXXXXX");
	file_fd = mkstemp(path);
	if (file_fd < 0 || ftruncate(file_fd, 1 << 16))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(file_fd);
	unlink(path);
	return 0;
}

static int other_fd(void)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		broken("open");
	return fd;
}

/* What another description sees conflicting with a @type lock on
 * [start, last]: F_UNLCK, F_RDLCK or F_WRLCK. */
static int probe(int fd, short type, off_t start, off_t last)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = last - start + 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		broken("fcntl(F_OFD_GETLK)");
	return fl.l_type;
}

/* F_OFD_SETLK on another description: 0, or -1 (busy). */
static int ofd(int fd, short type, off_t start, off_t last)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = last - start + 1 };

	return fcntl(fd, F_OFD_SETLK, &fl);
}

static void bind(struct range_lock_tree *t)
{
	/* Statistics for assert_clean(): a few trees live at once at most,
	 * each destroyed before its slot comes round again. */
	static struct range_lock_stats pool[8];
	static unsigned next;
	struct range_lock_stats *st = &pool[next++ % 8];

	memset(st, 0, sizeof(*st));
	range_lock_tree_init(t);
	if (range_lock_tree_set_file(t, file_fd) ||
	    range_lock_tree_enable_stats(t, st))
		broken("range_lock_tree_set_file");
}

/* Nothing of the tree left at either level on [0, 999] but @keep_* (a
 * range "another process" holds, skipped): no local request, no OFD lock,
 * and no count left in the bookkeeping (a whole-range write trylock of the
 * free parts holds and, unlocked, leaves nothing). */
static void assert_clean(struct range_lock_tree *t, int o, off_t keep_s, off_t keep_l)
{
	struct range_lock_stats st;
	DEFINE_RANGE_LOCK(lo, 0, (uint64_t)keep_s - 1);
	DEFINE_RANGE_LOCK(hi, (uint64_t)keep_l + 1, 999);

	assert_int_equal(range_lock_tree_get_stats(t, &st), 0);
	assert_int_equal(st.held_now, 0);
	assert_int_equal(st.waiting_now, 0);
	assert_int_equal(probe(o, F_RDLCK, 0, keep_s - 1), F_UNLCK);
	assert_int_equal(probe(o, F_RDLCK, keep_l + 1, 999), F_UNLCK);
	assert_int_equal(range_write_trylock(t, &lo), 1);
	assert_int_equal(range_write_trylock(t, &hi), 1);
	range_write_unlock(t, &lo);
	range_write_unlock(t, &hi);
	assert_int_equal(probe(o, F_RDLCK, 0, keep_s - 1), F_UNLCK);
	assert_int_equal(probe(o, F_RDLCK, keep_l + 1, 999), F_UNLCK);
}

/* ---- a set holds every range at the OFD level ------------------------ */

static void test_set_holds_all(void **state)
{
	struct range_lock_tree t;
	struct range_lock a, b, c, d, e;
	struct range_lock_item set[3] = {
		{ &a, RANGE_LOCK_WRITE }, { &b, RANGE_LOCK_READ }, { &c, RANGE_LOCK_WRITE } };
	struct range_lock_item reads[2] = { { &d, RANGE_LOCK_READ }, { &e, RANGE_LOCK_READ } };
	int o = other_fd();

	(void)state;
	watchdog(30);
	bind(&t);
	range_lock_init(&a, 40, 49);
	range_lock_init(&b, 0, 9);
	range_lock_init(&c, 20, 29);
	range_lock_many(&t, set, 3);
	assert_int_equal(probe(o, F_RDLCK, 40, 49), F_WRLCK);
	assert_int_equal(probe(o, F_WRLCK, 0, 9), F_RDLCK);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_UNLCK); /* a read lock */
	assert_int_equal(probe(o, F_RDLCK, 20, 29), F_WRLCK);
	assert_int_equal(probe(o, F_WRLCK, 10, 19), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 30, 39), F_UNLCK);
	/* One member on its own: only its bytes go. */
	range_write_unlock(&t, &c);
	assert_int_equal(probe(o, F_WRLCK, 20, 29), F_UNLCK);
	assert_int_equal(probe(o, F_RDLCK, 40, 49), F_WRLCK);
	range_unlock_many(&t, set, 2);
	assert_clean(&t, o, 500, 500);

	/* The same for _try, _timed, _interruptible, _killable. */
	{
		struct timespec ts;

		range_lock_init(&c, 20, 29);
		assert_int_equal(range_lock_many_try(&t, set, 3), 1);
		assert_int_equal(probe(o, F_RDLCK, 20, 29), F_WRLCK);
		range_unlock_many(&t, set, 3);
		deadline_in(CLOCK_MONOTONIC, 1000, &ts);
		assert_int_equal(range_lock_many_timed(&t, set, 3, CLOCK_MONOTONIC, &ts), 0);
		assert_int_equal(probe(o, F_RDLCK, 40, 49), F_WRLCK);
		range_unlock_many(&t, set, 3);
		assert_int_equal(range_lock_many_interruptible(&t, set, 3), 0);
		assert_int_equal(probe(o, F_WRLCK, 0, 9), F_RDLCK);
		range_unlock_many(&t, set, 3);
		assert_int_equal(range_lock_many_killable(&t, set, 3), 0);
		assert_int_equal(probe(o, F_RDLCK, 20, 29), F_WRLCK);
		range_unlock_many(&t, set, 3);
		assert_clean(&t, o, 500, 500);
	}

	/* Overlapping reads of one set: the shared bytes stay read-locked
	 * until both members are unlocked (per-byte counts, one owner). */
	range_lock_init(&d, 0, 9);
	range_lock_init(&e, 5, 14);
	range_lock_many(&t, reads, 2);
	assert_int_equal(probe(o, F_WRLCK, 0, 14), F_RDLCK);
	range_read_unlock(&t, &d);
	assert_int_equal(probe(o, F_WRLCK, 0, 4), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 5, 9), F_RDLCK);
	assert_int_equal(probe(o, F_WRLCK, 10, 14), F_RDLCK);
	range_read_unlock(&t, &e);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(o);
	alarm(0);
}

/* ---- a set blocked at the OFD level holds nothing there --------------- */

struct many_arg {
	struct range_lock_tree *t;
	struct range_lock_item *items;
	unsigned n;
	atomic_int done;
};

static void *many_locker(void *p)
{
	struct many_arg *m = p;

	range_lock_many(m->t, m->items, m->n);
	atomic_store(&m->done, 1);
	return NULL;
}

/*
 * Another process holds member 1's bytes.  While the set waits, none of
 * its other bytes is locked at the OFD level.  Then that process takes
 * member 0's bytes and lets member 1's go: the set, which waited for
 * member 1 and now finds member 0 busy, must let member 1 go again (not
 * wait for member 0 while holding member 1: two processes doing that in
 * opposite orders deadlock).  Once the other process unlocks, it holds
 * all.  @reader: the members' mode.
 */
static void blocked_set(bool reader)
{
	struct range_lock_tree t;
	struct range_lock a, b;
	int mode = reader ? RANGE_LOCK_READ : RANGE_LOCK_WRITE;
	short held = reader ? F_RDLCK : F_WRLCK;
	struct range_lock_item set[2] = { { &a, mode }, { &b, mode } };
	struct many_arg m = { &t, set, 2, 0 };
	int other = other_fd(), o = other_fd();
	pthread_t th;
	int busy0, busy1, free0, free1, done_early;

	bind(&t);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 40, 49);
	assert_int_equal(ofd(other, F_WRLCK, 40, 49), 0);
	assert_int_equal(pthread_create(&th, NULL, many_locker, &m), 0);
	sleep_ms(150);
	free0 = probe(o, F_WRLCK, 0, 9);              /* nothing of the set */
	/* The other process moves: takes member 0, lets member 1 go. */
	busy0 = ofd(other, F_WRLCK, 0, 9);
	assert_int_equal(ofd(other, F_UNLCK, 40, 49), 0);
	sleep_ms(150);
	free1 = probe(o, F_WRLCK, 40, 49);            /* let go again */
	busy1 = ofd(o, F_WRLCK, 40, 49);              /* a third process can */
	if (busy1 == 0)
		assert_int_equal(ofd(o, F_UNLCK, 40, 49), 0);
	done_early = atomic_load(&m.done);
	assert_int_equal(ofd(other, F_UNLCK, 0, 9), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(free0, F_UNLCK);
	assert_int_equal(busy0, 0);
	assert_int_equal(free1, F_UNLCK);
	assert_int_equal(busy1, 0);
	assert_int_equal(done_early, 0);
	assert_int_equal(atomic_load(&m.done), 1);
	assert_int_equal(probe(o, F_WRLCK, 0, 9), held);
	assert_int_equal(probe(o, F_WRLCK, 40, 49), held);
	range_unlock_many(&t, set, 2);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
}

static void test_set_blocked_holds_nothing(void **state)
{
	(void)state;
	watchdog(30);
	blocked_set(false);
	blocked_set(true);
	alarm(0);
}

/* ---- two processes, sets in opposite orders --------------------------- */

struct shared {
	atomic_int in[2];       /* holders of range 0 and range 1 now */
	atomic_int violations;
	atomic_long rounds[2];
};

static struct shared *sh;

#ifndef ROUNDS
#define ROUNDS 20000
#endif

static void opposite_orders(int me)
{
	struct range_lock_tree t;
	struct range_lock r[2];
	struct range_lock_item set[2];
	struct timespec ts;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	bind(&t);
	for (int i = 0; i < ROUNDS; i++) {
		/* me 0: [0, 9] then [100, 109]; me 1: the other way round */
		range_lock_init(&r[0], me ? 100 : 0, me ? 109 : 9);
		range_lock_init(&r[1], me ? 0 : 100, me ? 9 : 109);
		set[0] = (struct range_lock_item){ &r[0], RANGE_LOCK_WRITE };
		set[1] = (struct range_lock_item){ &r[1], RANGE_LOCK_WRITE };
		switch (i % 3) {
		case 0:
			range_lock_many(&t, set, 2);
			break;
		case 1:
			deadline_in(CLOCK_MONOTONIC, 20000, &ts);
			if (range_lock_many_timed(&t, set, 2, CLOCK_MONOTONIC, &ts))
				_exit(3);
			break;
		default:
			while (!range_lock_many_try(&t, set, 2))
				sched_yield();
		}
		for (int k = 0; k < 2; k++)
			if (atomic_fetch_add(&sh->in[k], 1) != 0)
				atomic_fetch_add(&sh->violations, 1);
		for (volatile int k = 0; k < 2000; k++)
			;
		for (int k = 0; k < 2; k++)
			atomic_fetch_sub(&sh->in[k], 1);
		range_unlock_many(&t, set, 2);
		atomic_fetch_add(&sh->rounds[me], 1);
	}
	if (range_lock_tree_destroy(&t))
		_exit(4);
}

static void test_opposite_orders_processes(void **state)
{
	pid_t pid[2];
	int status, o = other_fd();

	(void)state;
	watchdog(90);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	if (sh == MAP_FAILED)
		broken("mmap");
	memset(sh, 0, sizeof(*sh));
	for (int p = 0; p < 2; p++) {
		pid[p] = fork();
		if (pid[p] < 0)
			broken("fork");
		if (pid[p] == 0) {
			opposite_orders(p);
			_exit(0);
		}
	}
	for (int p = 0; p < 2; p++) {
		assert_int_equal(waitpid(pid[p], &status, 0), pid[p]);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			print_message("process %d: status %#x after %ld rounds\n", p, status,
				      atomic_load(&sh->rounds[p]));
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(atomic_load(&sh->violations), 0);
	assert_int_equal(atomic_load(&sh->rounds[0]), ROUNDS);
	assert_int_equal(atomic_load(&sh->rounds[1]), ROUNDS);
	assert_int_equal(probe(o, F_WRLCK, 0, 999), F_UNLCK);
	munmap(sh, sizeof(*sh));
	close(o);
	alarm(0);
}

/* ---- _try and _timed give up leaving nothing ------------------------- */

static void test_set_gives_up_clean(void **state)
{
	struct range_lock_tree t;
	struct range_lock a, b, c;
	struct range_lock_item set[3] = {
		{ &a, RANGE_LOCK_WRITE }, { &b, RANGE_LOCK_READ }, { &c, RANGE_LOCK_WRITE } };
	int other = other_fd(), o = other_fd();
	struct timespec ts;
	uint64_t t0;

	(void)state;
	watchdog(30);
	bind(&t);
	assert_int_equal(ofd(other, F_WRLCK, 500, 509), 0);
	/* The busy member first, in the middle, last. */
	for (int at = 0; at < 3; at++) {
		range_lock_init(&a, at == 0 ? 500 : 0, at == 0 ? 509 : 9);
		range_lock_init(&b, at == 1 ? 500 : 100, at == 1 ? 509 : 109);
		range_lock_init(&c, at == 2 ? 500 : 200, at == 2 ? 509 : 209);
		assert_int_equal(range_lock_many_try(&t, set, 3), 0);
		assert_clean(&t, o, 500, 509);
		/* t0 before the deadline is computed: a thread preempted
		 * between the two (qemu-i386 on a loaded host) must not make
		 * a call that waited the full 100 ms look early. */
		t0 = mono_ns();
		deadline_in(CLOCK_MONOTONIC, 100, &ts);
		assert_int_equal(range_lock_many_timed(&t, set, 3, CLOCK_MONOTONIC, &ts),
				 -ETIMEDOUT);
		assert_true(mono_ns() - t0 >= 99000000u);
		assert_clean(&t, o, 500, 509);
	}
	assert_int_equal(ofd(other, F_UNLCK, 500, 509), 0);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

/* ---- overlapping writers of one set on a bound tree abort ------------ */

static void child_overlap(int mode0, int mode1)
{
	struct range_lock_tree t;
	struct range_lock a, b;
	struct range_lock_item set[2] = { { &a, mode0 }, { &b, mode1 } };

	bind(&t);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 9, 19);
	range_lock_many(&t, set, 2);
}

static void child_overlap_ww(void) { child_overlap(RANGE_LOCK_WRITE, RANGE_LOCK_WRITE); }
static void child_overlap_wr(void) { child_overlap(RANGE_LOCK_WRITE, RANGE_LOCK_READ); }
static void child_overlap_rw(void) { child_overlap(RANGE_LOCK_READ, RANGE_LOCK_WRITE); }

static void test_overlapping_writers_abort(void **state)
{
	void (*fn[])(void) = { child_overlap_ww, child_overlap_wr, child_overlap_rw };
	struct child_result res;
	int o = other_fd();

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		run_child(fn[i], &res);
		assert_true(WIFSIGNALED(res.status));
		assert_int_equal(WTERMSIG(res.status), SIGABRT);
		assert_non_null(strstr(res.out, "overlap with a writer"));
	}
	assert_int_equal(probe(o, F_WRLCK, 0, 999), F_UNLCK);
	close(o);
}

/* ---- shrink ---------------------------------------------------------- */

static void test_shrink(void **state)
{
	struct range_lock_tree t;
	struct range_lock w, r1, r2;
	int other = other_fd(), o = other_fd();

	(void)state;
	watchdog(30);
	bind(&t);
	/* A writer keeps [20, 39] of [0, 99]: the rest is free at once. */
	range_lock_init(&w, 0, 99);
	range_write_lock(&t, &w);
	assert_int_equal(range_lock_shrink(&t, &w, 20, 39), 0);
	assert_int_equal(ofd(other, F_WRLCK, 0, 19), 0);
	assert_int_equal(ofd(other, F_WRLCK, 40, 99), 0);
	assert_int_equal(ofd(other, F_RDLCK, 20, 20), -1);
	assert_int_equal(ofd(other, F_RDLCK, 39, 39), -1);
	assert_int_equal(probe(o, F_RDLCK, 20, 39), F_WRLCK);
	assert_int_equal(ofd(other, F_UNLCK, 0, 99), 0);
	/* Not a sub-range: nothing changes. */
	assert_int_equal(range_lock_shrink(&t, &w, 19, 39), -EINVAL);
	assert_int_equal(probe(o, F_RDLCK, 20, 39), F_WRLCK);
	assert_int_equal(probe(o, F_RDLCK, 19, 19), F_UNLCK);
	range_write_unlock(&t, &w);
	assert_clean(&t, o, 500, 500);

	/* Two local readers overlapping on [30, 49]; the first keeps [0, 9]:
	 * [30, 49] stays read-locked for the second, [10, 29] is free. */
	range_lock_init(&r1, 0, 49);
	range_lock_init(&r2, 30, 79);
	range_read_lock(&t, &r1);
	range_read_lock(&t, &r2);
	assert_int_equal(range_lock_shrink(&t, &r1, 0, 9), 0);
	assert_int_equal(probe(o, F_WRLCK, 0, 9), F_RDLCK);
	assert_int_equal(ofd(other, F_WRLCK, 10, 29), 0);
	assert_int_equal(ofd(other, F_WRLCK, 30, 30), -1);
	assert_int_equal(ofd(other, F_WRLCK, 49, 49), -1);
	assert_int_equal(probe(o, F_WRLCK, 30, 79), F_RDLCK);
	assert_int_equal(ofd(other, F_UNLCK, 10, 29), 0);
	/* The second gives up its part the first never had, and [30, 49]. */
	assert_int_equal(range_lock_shrink(&t, &r2, 50, 59), 0);
	assert_int_equal(ofd(other, F_WRLCK, 10, 49), 0);
	assert_int_equal(ofd(other, F_WRLCK, 60, 79), 0);
	assert_int_equal(probe(o, F_WRLCK, 50, 59), F_RDLCK);
	assert_int_equal(ofd(other, F_UNLCK, 0, 999), 0);
	range_read_unlock(&t, &r1);
	range_read_unlock(&t, &r2);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

/* [x, RANGE_LOCK_FULL] is "to the end and beyond" at the OFD level, the
 * same bytes as [x, INT64_MAX]: changing one into the other changes no OFD
 * lock, and a range in between does not fit off_t. */
static void child_full_edges(void)
{
	struct range_lock_tree t;
	struct range_lock r;
	int o = other_fd();

	bind(&t);
	range_lock_init(&r, 10, RANGE_LOCK_FULL);
	range_write_lock(&t, &r);
	if (range_lock_shrink(&t, &r, 10, (uint64_t)INT64_MAX + 1) != -EINVAL)
		_exit(11);
	if (range_lock_shrink(&t, &r, 10, INT64_MAX) != 0)
		_exit(12);
	if (probe(o, F_RDLCK, 10, INT64_MAX - 1) != F_WRLCK)
		_exit(13);
	if (range_lock_grow_try(&t, &r, 10, RANGE_LOCK_FULL) != 1)
		_exit(14);
	if (range_lock_grow(&t, &r, 0, RANGE_LOCK_FULL) != 0)
		_exit(15);
	if (probe(o, F_RDLCK, 0, INT64_MAX - 1) != F_WRLCK)
		_exit(16);
	range_write_unlock(&t, &r);
	if (probe(o, F_RDLCK, 0, INT64_MAX - 1) != F_UNLCK)
		_exit(17);
}

static void test_full_edges(void **state)
{
	struct child_result res;

	(void)state;
	run_child(child_full_edges, &res);
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status))
		print_message("child: status %#x: %s\n", res.status, res.out);
	assert_true(WIFEXITED(res.status));
	assert_int_equal(WEXITSTATUS(res.status), 0);
}

/* ---- grow ------------------------------------------------------------ */

struct grow_arg {
	struct range_lock_tree *t;
	struct range_lock *lock;
	uint64_t start, last;
	int r;
	atomic_int done;
};

static void *grower(void *p)
{
	struct grow_arg *g = p;

	g->r = range_lock_grow(g->t, g->lock, g->start, g->last);
	atomic_store(&g->done, 1);
	return NULL;
}

/*
 * A writer [10, 19] grows to [0, 39] while another process holds @busy_s..
 * @busy_l (in one of the added parts): it waits, holding [10, 19] and no
 * byte of the added parts (the other part included: a process that holds
 * the busy part and wants the free one must not be locked out), then holds
 * [0, 39] once the other process unlocks.
 */
static void grow_waits(off_t busy_s, off_t busy_l, off_t free_s, off_t free_l)
{
	struct range_lock_tree t;
	struct range_lock w;
	struct grow_arg g = { &t, &w, 0, 39, -1, 0 };
	int other = other_fd(), o = other_fd();
	int kept, free_part, took, done_early;
	pthread_t th;

	bind(&t);
	range_lock_init(&w, 10, 19);
	range_write_lock(&t, &w);
	assert_int_equal(ofd(other, F_WRLCK, busy_s, busy_l), 0);
	assert_int_equal(pthread_create(&th, NULL, grower, &g), 0);
	sleep_ms(150);
	kept = probe(o, F_RDLCK, 10, 19);
	free_part = probe(o, F_RDLCK, free_s, free_l);
	took = ofd(other, F_WRLCK, free_s, free_l);    /* "the other process" */
	if (took == 0)
		assert_int_equal(ofd(other, F_UNLCK, free_s, free_l), 0);
	done_early = atomic_load(&g.done);
	assert_int_equal(ofd(other, F_UNLCK, busy_s, busy_l), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(kept, F_WRLCK);
	assert_int_equal(free_part, F_UNLCK);
	assert_int_equal(took, 0);
	assert_int_equal(done_early, 0);
	assert_int_equal(g.r, 0);
	assert_true(w.start == 0 && w.last == 39);
	assert_int_equal(probe(o, F_RDLCK, 0, 39), F_WRLCK);
	assert_int_equal(ofd(o, F_RDLCK, 0, 0), -1);
	assert_int_equal(ofd(o, F_RDLCK, 39, 39), -1);
	range_write_unlock(&t, &w);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
}

static void test_grow_waits(void **state)
{
	(void)state;
	watchdog(30);
	grow_waits(30, 39, 0, 9);  /* the upper part busy */
	grow_waits(0, 9, 30, 39);  /* the lower part busy */
	alarm(0);
}

/* Given up at the OFD level (_try, _timed): the request is exactly as
 * before, at both levels, and so is a local reader sharing bytes. */
static void test_grow_gives_up(void **state)
{
	struct range_lock_tree t;
	struct range_lock r, r2, probe_req;
	int other = other_fd(), o = other_fd();
	struct timespec ts;

	(void)state;
	watchdog(30);
	bind(&t);
	range_lock_init(&r, 10, 19);
	range_lock_init(&r2, 25, 29);
	range_read_lock(&t, &r);
	range_read_lock(&t, &r2);
	/* Another process writes [35, 39]; grow [10, 19] to [0, 39]. */
	assert_int_equal(ofd(other, F_WRLCK, 35, 39), 0);
	for (int k = 0; k < 3; k++) {
		int got;

		if (k == 0) {
			got = range_lock_grow_try(&t, &r, 0, 39);
			assert_int_equal(got, 0);
		} else {
			deadline_in(k == 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME, 100, &ts);
			got = range_lock_grow_timed(&t, &r, 0, 39,
						    k == 1 ? CLOCK_MONOTONIC : CLOCK_REALTIME, &ts);
			assert_int_equal(got, -ETIMEDOUT);
		}
		/* Local level: the range as before; [0, 9] and [20, 24] free
		 * for a local writer, [10, 19] not. */
		assert_true(r.start == 10 && r.last == 19);
		range_lock_init(&probe_req, 0, 9);
		assert_int_equal(range_write_trylock(&t, &probe_req), 1);
		range_write_unlock(&t, &probe_req);
		range_lock_init(&probe_req, 20, 24);
		assert_int_equal(range_write_trylock(&t, &probe_req), 1);
		range_write_unlock(&t, &probe_req);
		range_lock_init(&probe_req, 19, 19);
		assert_int_equal(range_write_trylock(&t, &probe_req), 0);
		/* OFD level: [10, 19] and r2's [25, 29] read-locked, the rest of
		 * the added part free. */
		assert_int_equal(probe(o, F_WRLCK, 10, 19), F_RDLCK);
		assert_int_equal(probe(o, F_WRLCK, 25, 29), F_RDLCK);
		assert_int_equal(probe(o, F_WRLCK, 0, 9), F_UNLCK);
		assert_int_equal(probe(o, F_WRLCK, 20, 24), F_UNLCK);
		assert_int_equal(probe(o, F_WRLCK, 30, 34), F_UNLCK);
	}
	/* Once free, the grow holds all of [0, 39]. */
	assert_int_equal(ofd(other, F_UNLCK, 35, 39), 0);
	assert_int_equal(range_lock_grow_try(&t, &r, 0, 39), 1);
	assert_int_equal(probe(o, F_WRLCK, 0, 39), F_RDLCK);
	range_read_unlock(&t, &r);
	assert_int_equal(probe(o, F_WRLCK, 25, 29), F_RDLCK); /* r2's */
	assert_int_equal(probe(o, F_WRLCK, 0, 24), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 30, 39), F_UNLCK);
	range_read_unlock(&t, &r2);
	assert_clean(&t, o, 500, 500);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_holds_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_blocked_holds_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_opposite_orders_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_gives_up_clean, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_writers_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shrink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow_gives_up, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
