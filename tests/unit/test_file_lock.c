/* SPDX-License-Identifier: MIT */
/*
 * Trees bound to a file (range_lock_tree_set_file()): the second level.
 *
 * What another process sees is probed from a second open file description
 * of the same file in this process (OFD locks of two descriptions conflict
 * even within one process), with F_OFD_GETLK, or held there with
 * F_OFD_SETLK to play "another process".  The multi-process tests fork
 * children that die with their parent (PR_SET_PDEATHSIG) and under their
 * own alarm; the parent kills them on its watchdog.
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

static char path[] = "/tmp/rangelock-file-test.XXXXXX";

/* A helper's system call failed: say which, with errno, then abort. */
static void broken(const char *what)
{
	fprintf(stderr, "test_file_lock: %s: %s\n", what, strerror(errno));
	abort();
}
static int file_fd = -1;

static int setup(void **state)
{
	(void)state;
	strcpy(path, "/tmp/rangelock-file-test.XXXXXX");
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

/* The type (F_UNLCK, F_RDLCK, F_WRLCK) of a lock another description sees
 * conflicting with a @type lock on [start, last]. */
static int probe(int fd, short type, off_t start, off_t last)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = last - start + 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		broken("fcntl(F_OFD_GETLK)");
	return fl.l_type;
}

static int ofd(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = len };

	return fcntl(fd, cmd, &fl);
}

static void bind(struct range_lock_tree *t)
{
	range_lock_tree_init(t);
	assert_int_equal(range_lock_tree_set_file(t, file_fd), 0);
}

/* ---- set_file's answers ---------------------------------------------- */

static void test_set_file_errors(void **state)
{
	DEFINE_RANGE_LOCK_TREE(t);
	DEFINE_RANGE_LOCK(r, 0, 9);
	int pfd[2], dfd, ro, wo, o;

	(void)state;
	assert_int_equal(range_lock_tree_set_file(&t, -1), -EBADF);
	assert_int_equal(range_lock_tree_set_file(&t, 12345), -EBADF);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(range_lock_tree_set_file(&t, pfd[0]), -EINVAL);
	close(pfd[0]);
	close(pfd[1]);
	dfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	assert_int_equal(range_lock_tree_set_file(&t, dfd), -EINVAL);
	close(dfd);
	range_write_lock(&t, &r);
	assert_int_equal(range_lock_tree_set_file(&t, file_fd), -EBUSY);
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_set_file(&t, file_fd), 0);
	assert_int_equal(range_lock_tree_set_file(&t, file_fd), 0); /* rebind */

	/* Only O_RDWR: a binding that could not take write locks (or read
	 * locks) is refused at once, and the tree keeps its binding. */
	ro = open(path, O_RDONLY);
	wo = open(path, O_WRONLY);
	o = other_fd();
	assert_true(ro >= 0 && wo >= 0);
	assert_int_equal(range_lock_tree_set_file(&t, ro), -EBADF);
	assert_int_equal(range_lock_tree_set_file(&t, wo), -EBADF);
	range_write_lock(&t, &r);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_WRLCK); /* still bound */
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_set_file(&t, ro), -EBADF);
	range_write_lock(&t, &r);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_UNLCK); /* never bound */
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(ro);
	close(wo);
	close(o);
}

/* ---- the merge/split trap, deterministic ----------------------------- */

static void test_merge_split(void **state)
{
	struct range_lock_tree t;
	struct range_lock a, b, w;
	int o = other_fd();

	(void)state;
	bind(&t);
	range_lock_init(&a, 0, 9);
	range_lock_init(&b, 5, 14);
	range_read_lock(&t, &a);
	range_read_lock(&t, &b);
	/* The kernel merged them into one read lock [0, 14]. */
	assert_int_equal(probe(o, F_WRLCK, 0, 14), F_RDLCK);
	assert_int_equal(probe(o, F_RDLCK, 0, 14), F_UNLCK);
	range_read_unlock(&t, &a);
	/* [5, 9] is still b's: a naive F_UNLCK [0, 9] would have freed it. */
	assert_int_equal(probe(o, F_WRLCK, 0, 4), F_UNLCK);
	for (off_t x = 5; x <= 14; x++)
		assert_int_equal(probe(o, F_WRLCK, x, x), F_RDLCK);
	assert_int_equal(probe(o, F_WRLCK, 15, 15), F_UNLCK);
	range_read_unlock(&t, &b);
	assert_int_equal(probe(o, F_WRLCK, 0, 100), F_UNLCK);

	/* Nested readers in the middle of a wider one, released outer first. */
	range_lock_init(&a, 0, 99);
	range_lock_init(&b, 40, 59);
	range_read_lock(&t, &a);
	range_read_lock(&t, &b);
	range_read_unlock(&t, &a);
	assert_int_equal(probe(o, F_WRLCK, 0, 39), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 40, 40), F_RDLCK);
	assert_int_equal(probe(o, F_WRLCK, 59, 59), F_RDLCK);
	assert_int_equal(probe(o, F_WRLCK, 60, 99), F_UNLCK);
	range_read_unlock(&t, &b);
	assert_int_equal(probe(o, F_WRLCK, 0, 100), F_UNLCK);

	/* A writer next to a reader: unlocking the writer keeps the reader;
	 * a downgrade converts in place. */
	range_lock_init(&w, 10, 19);
	range_lock_init(&a, 20, 29);
	range_write_lock(&t, &w);
	range_read_lock(&t, &a);
	assert_int_equal(probe(o, F_RDLCK, 10, 19), F_WRLCK);
	range_downgrade_write(&t, &w);
	assert_int_equal(probe(o, F_RDLCK, 10, 19), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 10, 19), F_RDLCK);
	range_read_unlock(&t, &w);
	assert_int_equal(probe(o, F_WRLCK, 10, 19), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 20, 29), F_RDLCK);
	range_read_unlock(&t, &a);

	/* RANGE_LOCK_FULL: to the end of the file and beyond. */
	range_lock_init(&w, 100, RANGE_LOCK_FULL);
	range_write_lock(&t, &w);
	assert_int_equal(probe(o, F_RDLCK, 99, 99), F_UNLCK);
	assert_int_equal(probe(o, F_RDLCK, 1 << 20, 1 << 20), F_WRLCK);
	assert_int_equal(probe(o, F_RDLCK, INT64_MAX - 1, INT64_MAX - 1), F_WRLCK);
	range_write_unlock(&t, &w);
	assert_int_equal(probe(o, F_WRLCK, 0, INT64_MAX - 1), F_UNLCK);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(o);
}

/* ---- ownership ------------------------------------------------------- */

static void test_close_drops_nothing(void **state)
{
	struct range_lock_tree t;
	struct range_lock r;
	int fd = open(path, O_RDWR), o = other_fd();

	(void)state;
	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);
	range_lock_init(&r, 0, 9);
	range_write_lock(&t, &r);
	close(fd); /* the caller's description: the tree's is its own */
	close(open(path, O_RDONLY)); /* a classic POSIX lock would go now */
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_WRLCK);
	range_write_unlock(&t, &r);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_UNLCK);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(o);
}

/* Parent and a fork child, each with its own tree bound on the same
 * (inherited) fd, exclude each other both ways. */
static void test_fork_child_excludes(void **state)
{
	struct range_lock_tree t;
	struct range_lock r;
	int to_child[2], to_parent[2], status;
	char c;
	pid_t pid;

	(void)state;
	watchdog(30);
	bind(&t);
	range_lock_init(&r, 0, 9);
	range_write_lock(&t, &r);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct range_lock_tree ct;
		struct range_lock cr;
		struct timespec ts;
		int bad = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(20);
		range_lock_tree_init(&ct);
		if (range_lock_tree_set_file(&ct, file_fd))
			_exit(10);
		range_lock_init(&cr, 5, 14);
		bad |= range_write_trylock(&ct, &cr) != 0;
		bad |= range_read_trylock(&ct, &cr) != 0;
		deadline_in(CLOCK_MONOTONIC, 50, &ts);
		bad |= range_write_timedlock(&ct, &cr, CLOCK_MONOTONIC, &ts) != -ETIMEDOUT;
		if (bad)
			_exit(11);
		if (write(to_parent[1], "w", 1) != 1) /* parent: unlock now */
			_exit(12);
		range_write_lock(&ct, &cr); /* waits for the parent's unlock */
		if (write(to_parent[1], "h", 1) != 1)
			_exit(12);
		if (read(to_child[0], &c, 1) != 1) /* parent tried */
			_exit(12);
		range_write_unlock(&ct, &cr);
		_exit(range_lock_tree_destroy(&ct) ? 13 : 0);
	}
	assert_int_equal(read(to_parent[0], &c, 1), 1);
	assert_int_equal(c, 'w');
	range_write_unlock(&t, &r);
	assert_int_equal(read(to_parent[0], &c, 1), 1);
	assert_int_equal(c, 'h');
	/* The child holds [5, 14]: the parent is excluded now. */
	range_lock_init(&r, 14, 20);
	assert_int_equal(range_read_trylock(&t, &r), 0);
	range_lock_init(&r, 0, 4);
	assert_int_equal(range_write_trylock(&t, &r), 1);
	range_write_unlock(&t, &r);
	assert_int_equal(write(to_child[1], "u", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	range_lock_init(&r, 0, 20);
	assert_int_equal(range_write_trylock(&t, &r), 1);
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	alarm(0);
}

/* A tree bound before fork() is not bound in the child: its description
 * was closed there, and using it aborts with a message. */
static struct range_lock_tree inherited;

static struct range_lock held_at_fork;

static void child_uses_inherited(void)
{
	DEFINE_RANGE_LOCK(r, 0, 9);

	/* The forking thread's hold: released locally, the OFD lock stays
	 * the parent's. */
	range_write_unlock(&inherited, &held_at_fork);
	fprintf(stderr, "unlocked in the child\n");
	range_write_lock(&inherited, &r);
}

static void test_fork_inherited_tree_aborts(void **state)
{
	struct child_result res;

	(void)state;
	int o = other_fd();

	bind(&inherited);
	range_lock_init(&held_at_fork, 100, 199);
	range_write_lock(&inherited, &held_at_fork);
	run_child(child_uses_inherited, &res);
	assert_true(WIFSIGNALED(res.status));
	assert_int_equal(WTERMSIG(res.status), SIGABRT);
	assert_non_null(strstr(res.out, "unlocked in the child"));
	assert_non_null(strstr(res.out, "bind it again in the child"));
	/* The parent still holds its range at both levels. */
	assert_int_equal(probe(o, F_RDLCK, 100, 199), F_WRLCK);
	range_write_unlock(&inherited, &held_at_fork);
	assert_int_equal(probe(o, F_RDLCK, 100, 199), F_UNLCK);
	assert_int_equal(range_lock_tree_destroy(&inherited), 0);
	close(o);
}

/* ---- misuse ------------------------------------------------------------ */

static struct range_lock_tree misuse_tree;

static void child_huge_plain(void)
{
	DEFINE_RANGE_LOCK(r, 0, (uint64_t)INT64_MAX + 1);
	struct timespec ts;

	range_lock_tree_init(&misuse_tree);
	if (range_lock_tree_set_file(&misuse_tree, file_fd))
		_exit(3);
	deadline_in(CLOCK_MONOTONIC, 10, &ts);
	if (range_write_timedlock(&misuse_tree, &r, CLOCK_MONOTONIC, &ts) != -EINVAL ||
	    range_read_lock_interruptible(&misuse_tree, &r) != -EINVAL ||
	    range_read_lock_killable(&misuse_tree, &r) != -EINVAL)
		_exit(4);
	range_write_lock(&misuse_tree, &r); /* aborts */
}

static void child_unlock_not_held(void)
{
	DEFINE_RANGE_LOCK(r, 0, 9);
	DEFINE_RANGE_LOCK(s, 5, 9);

	range_lock_tree_init(&misuse_tree);
	if (range_lock_tree_set_file(&misuse_tree, file_fd))
		_exit(3);
	range_read_lock(&misuse_tree, &r);
	range_write_unlock(&misuse_tree, &s); /* aborts */
}

static void test_misuse(void **state)
{
	struct child_result res;

	(void)state;
	run_child(child_huge_plain, &res);
	assert_true(WIFSIGNALED(res.status));
	assert_non_null(strstr(res.out, "does not fit off_t"));
	run_child(child_unlock_not_held, &res);
	assert_true(WIFSIGNALED(res.status));
	assert_non_null(strstr(res.out, "not held"));
}

/* A request whose init failed, on a bound tree: every call refuses it,
 * naming the bad range -- also a start beyond off_t, which the bound
 * tree's range check (-EINVAL from the calls that can fail) sees first. */
static int bad_case;

static void bad_range_child(void)
{
	const uint64_t huge = (uint64_t)INT64_MAX + 5;
	struct range_lock bad, big;
	struct range_lock_item set[1] = { { &big, RANGE_LOCK_WRITE } };
	struct range_lock_async req;
	struct timespec ts;

	range_lock_tree_init(&misuse_tree);
	if (range_lock_tree_set_file(&misuse_tree, file_fd) ||
	    range_lock_init(&bad, 10, 5) != -EINVAL || range_lock_init(&big, huge, 5) != -EINVAL ||
	    range_lock_async_init(&req, huge, 5, NULL, NULL) != -EINVAL)
		_exit(3);
	deadline_in(CLOCK_MONOTONIC, 1000, &ts);
	switch (bad_case) {
	case 0: range_write_timedlock(&misuse_tree, &bad, CLOCK_MONOTONIC, &ts); break;
	case 1: range_write_timedlock(&misuse_tree, &big, CLOCK_MONOTONIC, &ts); break;
	case 2: range_read_lock_interruptible(&misuse_tree, &big); break;
	case 3: range_write_lock(&misuse_tree, &big); break;
	case 4: range_read_trylock(&misuse_tree, &big); break;
	case 5: range_lock_many_timed(&misuse_tree, set, 1, CLOCK_MONOTONIC, &ts); break;
	case 6: range_write_lock_async(&misuse_tree, &req); break;
	case 7: range_write_unlock(&misuse_tree, &bad); break;
	case 8: range_read_unlock(&misuse_tree, &big); break;
	case 9: range_downgrade_write(&misuse_tree, &bad); break;
	case 10: range_unlock_many(&misuse_tree, set, 1); break;
	default: break;
	}
	_exit(4); /* not refused */
}

static void test_bad_range_aborts(void **state)
{
	static const char *const needle[] = {
		"range_write_timedlock([10, 5]): range [10, 5] is invalid: start > last",
		"range_write_timedlock([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"range_read_lock_interruptible([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"range_write_lock([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"range_read_trylock([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"range_lock_many_timed([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"range_write_lock_async([9223372036854775812, 5]): range "
		"[9223372036854775812, 5] is invalid: start > last",
		"unlock([10, 5]) on a file-bound tree: range is invalid: start > last",
		"unlock([9223372036854775812, 5]) on a file-bound tree: range is invalid: "
		"start > last",
#ifndef TEST_SEGMENTS
		"downgrade([10, 5]) on a file-bound tree: range is invalid: start > last",
#else /* a tree with segments sorts the range out before the file level */
		"range_downgrade_write([10, 5]): range [10, 5] is invalid: start > last",
#endif
		"unlock([9223372036854775812, 5]) on a file-bound tree: range is invalid: "
		"start > last",
	};
	struct child_result r;
	int failed = 0;

	(void)state;
	for (unsigned k = 0; k < sizeof(needle) / sizeof(needle[0]); k++) {
		bad_case = (int)k;
		run_child(bad_range_child, &r);
		if (!(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT) ||
		    !strstr(r.out, needle[k])) {
			print_error("case %u: status %#x, stderr '%s', wanted '%s'\n", k,
				    r.status, r.out, needle[k]);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* ---- each call's contract while another process holds ----------------- */

static void assert_empty_both(struct range_lock_tree *t, int probe_fd)
{
	struct range_lock_stats st;

	assert_int_equal(range_lock_tree_get_stats(t, &st), 0);
	assert_int_equal(st.held_now, 0);
	assert_int_equal(st.waiting_now, 0);
	assert_int_equal(probe(probe_fd, F_WRLCK, 0, 1000), F_UNLCK);
	/* Nothing left in the bookkeeping either: a count left behind would
	 * keep the kernel lock after this hold's unlock. */
	{
		DEFINE_RANGE_LOCK(all, 0, 1000);

		assert_int_equal(range_write_trylock(t, &all), 1);
		assert_int_equal(probe(probe_fd, F_RDLCK, 0, 1000), F_WRLCK);
		range_write_unlock(t, &all);
		assert_int_equal(probe(probe_fd, F_RDLCK, 0, 1000), F_UNLCK);
	}
}

static void test_trylock_and_timeout(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct range_lock r;
	struct timespec ts, bad = { 0, 1000000000L };
	int other = other_fd(), o = other_fd();
	uint64_t t0, el;

	(void)state;
	watchdog(30);
	bind(&t);
	assert_int_equal(range_lock_tree_enable_stats(&t, &st), 0);
	/* "Another process" holds [10, 19] for writing. */
	assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 10, 10), 0);
	range_lock_init(&r, 0, 10);
	assert_int_equal(range_write_trylock(&t, &r), 0);
	assert_int_equal(range_read_trylock(&t, &r), 0);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 10, 10), 0);
	assert_empty_both(&t, o);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 10, 10), 0);

	/* A bad deadline is -EINVAL when the call has to wait, at either level. */
	assert_int_equal(range_write_timedlock(&t, &r, CLOCK_MONOTONIC, &bad), -EINVAL);
	assert_int_equal(range_write_timedlock(&t, &r, 12345, &ts), -EINVAL);
	for (int clk = 0; clk < 2; clk++) {
		clockid_t c = clk ? CLOCK_REALTIME : CLOCK_MONOTONIC;

		t0 = mono_ns();
		deadline_in(c, 100, &ts);
		assert_int_equal(range_write_timedlock(&t, &r, c, &ts), -ETIMEDOUT);
		el = mono_ns() - t0;
		assert_true(el >= 99000000u && el < 5000000000u);
		/* A past deadline still makes one attempt, and times out. */
		ts.tv_sec -= 10;
		assert_int_equal(range_read_timedlock(&t, &r, c, &ts), -ETIMEDOUT);
	}
	assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 10, 10), 0);
	assert_empty_both(&t, o);
	/* Free at both levels: granted even with a past deadline. */
	ts.tv_sec = 0;
	assert_int_equal(range_write_timedlock(&t, &r, CLOCK_MONOTONIC, &ts), 0);
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

/*
 * Deadlines at the edges, for every timed call of a bound tree, while
 * "another process" holds [10, 19] (the local level is free, so the OFD
 * level alone decides): POSIX (and glibc's tst-abstime) makes only a
 * tv_nsec outside [0, 1000 million) invalid; a negative tv_sec is a time
 * long past (-ETIMEDOUT after one attempt, 0 when free, as at the local
 * level), and a tv_sec beyond 64 bits of nanoseconds means "not for a very
 * long time" (it waits), not a wrapped, past one.
 */
enum timed_call { T_WRITE, T_READ, T_MANY, T_GROW, NR_TIMED };
static const char *const timed_name[] = { "range_write_timedlock", "range_read_timedlock",
					  "range_lock_many_timed", "range_lock_grow_timed" };

/* @k's call on a range that meets [10, 19]; on 0 its hold is undone, and
 * on any result nothing of it is left. */
static int timed_call(enum timed_call k, struct range_lock_tree *t, clockid_t c,
		      const struct timespec *ts)
{
	struct range_lock r, s;
	struct range_lock_item set[2] = { { &r, RANGE_LOCK_WRITE }, { &s, RANGE_LOCK_READ } };
	int ret = -1;

	switch (k) {
	case T_WRITE:
	case T_READ:
		range_lock_init(&r, 0, 19);
		ret = k == T_WRITE ? range_write_timedlock(t, &r, c, ts)
				   : range_read_timedlock(t, &r, c, ts);
		if (!ret) {
			if (k == T_WRITE)
				range_write_unlock(t, &r);
			else
				range_read_unlock(t, &r);
		}
		break;
	case T_MANY:
		range_lock_init(&r, 0, 9);
		range_lock_init(&s, 15, 19);
		ret = range_lock_many_timed(t, set, 2, c, ts);
		if (!ret)
			range_unlock_many(t, set, 2);
		break;
	case T_GROW:
		range_lock_init(&r, 0, 9);
		range_write_lock(t, &r);
		ret = range_lock_grow_timed(t, &r, 0, 19, c, ts);
		range_write_unlock(t, &r); /* [0, 19] or, given up, [0, 9] */
		break;
	default:
		break;
	}
	return ret;
}

struct timed_arg {
	enum timed_call k;
	struct range_lock_tree *t;
	clockid_t c;
	struct timespec ts;
	atomic_int done;
	int ret;
};

static void *timed_main(void *p)
{
	struct timed_arg *a = p;

	a->ret = timed_call(a->k, a->t, a->c, &a->ts);
	atomic_store(&a->done, 1);
	return NULL;
}

/* tv_sec values that fit this program's time_t (32 bits on i386 without
 * _TIME_BITS=64). */
static bool fits_time_t(int64_t s)
{
	return sizeof(time_t) >= 8 || (s >= INT32_MIN && s <= INT32_MAX);
}

static void test_deadline_edges(void **state)
{
	static const int64_t past[] = { -1, -1000000000, INT64_MIN, INT32_MIN };
	/* 18446744074: the first second whose nanoseconds overflow 64 bits
	 * (to 0.29 s after the epoch: a past deadline, before the fix). */
	static const int64_t far[] = { 18446744074LL, 100000000000LL, INT64_MAX,
				       INT32_MAX };
	static const long bad_ns[] = { -1, 1000000000L, -1000000000L };
	struct range_lock_tree t;
	struct range_lock_stats st;
	int other = other_fd(), o = other_fd();

	(void)state;
	watchdog(120);
	bind(&t);
	assert_int_equal(range_lock_tree_enable_stats(&t, &st), 0);
	for (int k = 0; k < NR_TIMED; k++) {
		for (int clk = 0; clk < 2; clk++) {
			clockid_t c = clk ? CLOCK_REALTIME : CLOCK_MONOTONIC;
			struct timespec ts;

			/* Busy: a past deadline times out, a bad one is
			 * -EINVAL, and neither leaves anything. */
			assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 10, 10), 0);
			for (unsigned i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
				int got;

				if (!fits_time_t(past[i]))
					continue;
				ts = (struct timespec){ (time_t)past[i], 0 };
				got = timed_call(k, &t, c, &ts);
				if (got != -ETIMEDOUT)
					print_error("%s, clock %d, tv_sec %lld: %d\n", timed_name[k],
						    (int)c, (long long)past[i], got);
				assert_int_equal(got, -ETIMEDOUT);
				ts.tv_nsec = 999999999L;
				assert_int_equal(timed_call(k, &t, c, &ts), -ETIMEDOUT);
			}
			for (unsigned i = 0; i < sizeof(bad_ns) / sizeof(bad_ns[0]); i++) {
				deadline_in(c, 1000, &ts);
				ts.tv_nsec = bad_ns[i];
				assert_int_equal(timed_call(k, &t, c, &ts), -EINVAL);
				ts.tv_sec = -1;
				assert_int_equal(timed_call(k, &t, c, &ts), -EINVAL);
			}

			/* Busy, a far deadline: it waits until the range is
			 * free, then holds it. */
			for (unsigned i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
				struct timed_arg a = { .k = k, .t = &t, .c = c };
				pthread_t th;
				int early;

				if (!fits_time_t(far[i]))
					continue;
				a.ts = (struct timespec){ (time_t)far[i], 0 };
				assert_int_equal(pthread_create(&th, NULL, timed_main, &a), 0);
				sleep_ms(100);
				early = atomic_load(&a.done);
				assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 10, 10), 0);
				pthread_join(th, NULL);
				if (early || a.ret)
					print_error("%s, clock %d, tv_sec %lld: returned %d %s\n",
						    timed_name[k], (int)c, (long long)far[i],
						    a.ret, early ? "at once" : "");
				assert_false(early);
				assert_int_equal(a.ret, 0);
				assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 10, 10), 0);
			}
			assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 10, 10), 0);
			assert_empty_both(&t, o);

			/* Free at both levels: held whatever time has passed;
			 * a bad deadline is refused all the same (checked
			 * first, as glibc's rwlock), leaving nothing. */
			for (unsigned i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
				if (!fits_time_t(past[i]))
					continue;
				ts = (struct timespec){ (time_t)past[i], 0 };
				assert_int_equal(timed_call(k, &t, c, &ts), 0);
			}
			for (unsigned i = 0; i < sizeof(bad_ns) / sizeof(bad_ns[0]); i++) {
				ts = (struct timespec){ 0, bad_ns[i] };
				assert_int_equal(timed_call(k, &t, c, &ts), -EINVAL);
			}
			assert_empty_both(&t, o);
		}
	}
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

/* A waiter at the second level holds no internal lock: unrelated local
 * requests carry on, conflicting local ones wait for it locally. */
struct plain_arg {
	struct range_lock_tree *t;
	struct range_lock r;
	atomic_int done;
};

static void *plain_writer(void *p)
{
	struct plain_arg *a = p;

	range_write_lock(a->t, &a->r);
	atomic_store(&a->done, 1);
	range_write_unlock(a->t, &a->r);
	return NULL;
}

static void test_unrelated_carry_on(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct range_lock u, c;
	struct plain_arg a;
	pthread_t th;
	int other = other_fd(), o = other_fd(), i;

	(void)state;
	watchdog(30);
	bind(&t);
	assert_int_equal(range_lock_tree_enable_stats(&t, &st), 0);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_RDLCK, 5, 1), 0);
	memset(&a, 0, sizeof(a));
	a.t = &t;
	range_lock_init(&a.r, 0, 9);
	pthread_create(&th, NULL, plain_writer, &a);
	/* Wait until it is granted locally (it then polls for the other
	 * process): a fixed sleep is not enough on a loaded machine. */
	for (i = 0; i < 5000 && nr_held(&t) != 1; i++)
		sleep_ms(1);
	if (i == 5000) {
		assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 5, 1), 0);
		pthread_join(th, NULL);
		fail_msg("the writer was not granted locally within 5 s");
	}
	sleep_ms(20);
	for (i = 0; i < 100; i++) {
		range_lock_init(&u, 20 + i, 29 + i);
		assert_int_equal(range_write_trylock(&t, &u), 1);
		range_write_unlock(&t, &u);
	}
	range_lock_init(&c, 9, 12);
	assert_int_equal(range_read_trylock(&t, &c), 0); /* local conflict */
	assert_false(atomic_load(&a.done));
	assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 5, 1), 0);
	pthread_join(th, NULL);
	assert_true(atomic_load(&a.done));
	assert_int_equal(probe(o, F_WRLCK, 0, 100), F_UNLCK);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	close(other);
	close(o);
	alarm(0);
}

static atomic_int handled;
static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

struct waiter_arg {
	struct range_lock_tree *t;
	struct range_lock r;
	int kind; /* 0 plain, 1 interruptible, 2 killable */
	int ret;
	atomic_int returned;
};

static void *waiter_main(void *p)
{
	struct waiter_arg *w = p;

	if (w->kind == 0) {
		range_write_lock(w->t, &w->r);
		w->ret = 0;
	} else if (w->kind == 1) {
		w->ret = range_write_lock_interruptible(w->t, &w->r);
	} else {
		w->ret = range_write_lock_killable(w->t, &w->r);
	}
	atomic_store(&w->returned, 1);
	if (w->ret == 0) {
		range_write_unlock(w->t, &w->r);
		pthread_testcancel(); /* a pending cancel acts here, unlocked */
	}
	return NULL;
}

static void test_signal_and_cancel(void **state)
{
	struct range_lock_tree t;
	struct range_lock_stats st;
	struct sigaction sa;
	struct waiter_arg w;
	pthread_t th;
	void *res;
	int other = other_fd(), o = other_fd();

	(void)state;
	watchdog(60);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	bind(&t);
	assert_int_equal(range_lock_tree_enable_stats(&t, &st), 0);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 0, 100), 0);

	/* Interruptible: -EINTR, nothing left at either level. */
	memset(&w, 0, sizeof(w));
	w.t = &t;
	w.kind = 1;
	range_lock_init(&w.r, 50, 60);
	pthread_create(&th, NULL, waiter_main, &w);
	sleep_ms(50);
	while (!atomic_load(&w.returned)) {
		pthread_kill(th, SIGUSR1);
		sleep_ms(5);
	}
	pthread_join(th, NULL);
	assert_int_equal(w.ret, -EINTR);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 0, 100), 0);
	assert_empty_both(&t, o);
	assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 0, 100), 0);

	/* Plain: signals (SA_RESTART or not) and cancellation do not end it. */
	for (int pass = 0; pass < 2; pass++) {
		sa.sa_flags = pass ? 0 : SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
		memset(&w, 0, sizeof(w));
		w.t = &t;
		w.kind = 0;
		range_lock_init(&w.r, 50, 60);
		pthread_create(&th, NULL, waiter_main, &w);
		for (int i = 0; i < 40; i++) {
			pthread_kill(th, SIGUSR1);
			sleep_ms(5);
		}
		if (pass)
			pthread_cancel(th);
		sleep_ms(50);
		assert_false(atomic_load(&w.returned));
		assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 0, 100), 0);
		pthread_join(th, &res);
		assert_int_equal(w.ret, 0);
		assert_true(atomic_load(&w.returned));
		assert_true(res == (pass ? PTHREAD_CANCELED : NULL));
		assert_empty_both(&t, o);
		assert_int_equal(ofd(other, F_OFD_SETLK, F_WRLCK, 0, 100), 0);
	}

	/* Killable: a cancellation point while it waits at the second level;
	 * signals do not end it. */
	memset(&w, 0, sizeof(w));
	w.t = &t;
	w.kind = 2;
	range_lock_init(&w.r, 50, 60);
	pthread_create(&th, NULL, waiter_main, &w);
	for (int i = 0; i < 10; i++) {
		pthread_kill(th, SIGUSR1);
		sleep_ms(5);
	}
	assert_false(atomic_load(&w.returned));
	pthread_cancel(th);
	pthread_join(th, &res);
	assert_true(res == PTHREAD_CANCELED);
	assert_false(atomic_load(&w.returned));
	assert_int_equal(st.gave_up_cancel, 0); /* local statistics: not counted */
	assert_int_equal(ofd(other, F_OFD_SETLK, F_UNLCK, 0, 100), 0);
	assert_empty_both(&t, o);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	signal(SIGUSR1, SIG_DFL);
	close(other);
	close(o);
	alarm(0);
}

/* ---- processes x threads on random ranges, a shadow in shared memory --- */

#define SHADOW_BYTES 256
#define PROCS 3
#define THREADS 3

struct shared {
	atomic_int shadow[SHADOW_BYTES]; /* -1 writer, n readers */
	atomic_long violations;
	atomic_long ops[PROCS + 1];
	atomic_int stop;
};

static struct shared *sh;

static void enter_shadow(uint64_t s, uint64_t l, bool reader)
{
	for (uint64_t x = s; x <= l; x++) {
		if (reader) {
			if (atomic_fetch_add(&sh->shadow[x], 1) < 0)
				atomic_fetch_add(&sh->violations, 1);
		} else if (atomic_exchange(&sh->shadow[x], -1) != 0) {
			atomic_fetch_add(&sh->violations, 1);
		}
	}
}

static void leave_shadow(uint64_t s, uint64_t l, bool reader)
{
	for (uint64_t x = s; x <= l; x++) {
		if (reader)
			atomic_fetch_sub(&sh->shadow[x], 1);
		else
			atomic_store(&sh->shadow[x], 0);
	}
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct worker {
	struct range_lock_tree *t;
	int proc;
	uint64_t seed;
	bool check;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	struct range_lock r;
	struct timespec ts;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		uint64_t s = rnd(&w->seed) % SHADOW_BYTES;
		uint64_t l = s + rnd(&w->seed) % 24;
		bool reader = rnd(&w->seed) % 3 == 0, held = true;
		int call = (int)(rnd(&w->seed) % 6), ret = 0;

		if (l >= SHADOW_BYTES)
			l = SHADOW_BYTES - 1;
		range_lock_init(&r, s, l);
		switch (call) {
		case 0: case 1:
			reader ? range_read_lock(w->t, &r) : range_write_lock(w->t, &r);
			break;
		case 2:
			held = reader ? range_read_trylock(w->t, &r)
				      : range_write_trylock(w->t, &r);
			break;
		case 3:
			deadline_in(CLOCK_MONOTONIC, 2, &ts);
			ret = reader ? range_read_timedlock(w->t, &r, CLOCK_MONOTONIC, &ts)
				     : range_write_timedlock(w->t, &r, CLOCK_MONOTONIC, &ts);
			held = ret == 0;
			break;
		case 4:
			ret = reader ? range_read_lock_interruptible(w->t, &r)
				     : range_write_lock_interruptible(w->t, &r);
			held = ret == 0;
			break;
		default:
			ret = reader ? range_read_lock_killable(w->t, &r)
				     : range_write_lock_killable(w->t, &r);
			break;
		}
		if (ret && ret != -ETIMEDOUT)
			atomic_fetch_add(&sh->violations, 1000000);
		if (!held)
			continue;
		if (w->check)
			enter_shadow(s, l, reader);
		for (volatile int i = 0; i < 200; i++)
			;
		if (!reader && rnd(&w->seed) % 4 == 0) {
			if (w->check)
				leave_shadow(s, l, false);
			range_downgrade_write(w->t, &r);
			reader = true;
			if (w->check)
				enter_shadow(s, l, true);
		}
		if (w->check)
			leave_shadow(s, l, reader);
		reader ? range_read_unlock(w->t, &r) : range_write_unlock(w->t, &r);
		atomic_fetch_add_explicit(&sh->ops[w->proc], 1, memory_order_relaxed);
	}
	return NULL;
}

/* A process of N threads, each tree bound on its own: the child binds. */
static void run_process(int proc, bool check)
{
	struct range_lock_tree t;
	struct worker w[THREADS];
	pthread_t th[THREADS];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	range_lock_tree_init(&t);
	if (range_lock_tree_set_file(&t, file_fd))
		_exit(20);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ &t, proc,
					0x9E3779B97F4A7C15ull * (uint64_t)(proc * 7 + i + 1),
					check };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	_exit(range_lock_tree_destroy(&t) ? 21 : 0);
}

/* A program that uses plain fcntl(F_OFD_SETLKW), without librangelock. */
static void run_plain_ofd(int proc)
{
	uint64_t seed = 12345;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	fd = open(path, O_RDWR);
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		uint64_t s = rnd(&seed) % SHADOW_BYTES, l = s + rnd(&seed) % 24;
		bool reader = rnd(&seed) % 3 == 0;

		if (l >= SHADOW_BYTES)
			l = SHADOW_BYTES - 1;
		if (ofd(fd, F_OFD_SETLKW, reader ? F_RDLCK : F_WRLCK, (off_t)s,
			(off_t)(l - s + 1)))
			_exit(22);
		enter_shadow(s, l, reader);
		for (volatile int i = 0; i < 200; i++)
			;
		leave_shadow(s, l, reader);
		if (ofd(fd, F_OFD_SETLK, F_UNLCK, (off_t)s, (off_t)(l - s + 1)))
			_exit(23);
		atomic_fetch_add_explicit(&sh->ops[proc], 1, memory_order_relaxed);
	}
	_exit(0);
}

static pid_t spawn(int proc, bool plain, bool check)
{
	pid_t pid = fork();

	if (pid < 0)
		broken("fork");
	if (pid == 0) {
		if (plain)
			run_plain_ofd(proc);
		run_process(proc, check);
	}
	return pid;
}

/* Reap @pid within @ms, else kill it; its exit status, or -1. */
static int reap(pid_t pid, int ms)
{
	int status;

	for (int i = 0; i < ms; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(1);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static struct shared *new_shared(void)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (s == MAP_FAILED)
		broken("mmap");
	memset(s, 0, sizeof(*s));
	return s;
}

static void test_processes_exclusion(void **state)
{
	pid_t pid[PROCS + 1];
	long before[PROCS + 1];
	int o = other_fd();

	(void)state;
	watchdog(60);
	sh = new_shared();
	for (int p = 0; p < PROCS; p++)
		pid[p] = spawn(p, false, true);
	pid[PROCS] = spawn(PROCS, true, true);
	sleep_ms(1000);
	for (int p = 0; p <= PROCS; p++)
		before[p] = atomic_load(&sh->ops[p]);
	sleep_ms(500);
	atomic_store(&sh->stop, 1);
	for (int p = 0; p <= PROCS; p++)
		assert_int_equal(reap(pid[p], 20000), 0);
	assert_int_equal(atomic_load(&sh->violations), 0);
	for (int p = 0; p <= PROCS; p++) {
		print_message("process %d: %ld lock/unlock pairs\n", p,
			      atomic_load(&sh->ops[p]));
		assert_true(atomic_load(&sh->ops[p]) > before[p]); /* all progress */
	}
	assert_int_equal(probe(o, F_WRLCK, 0, SHADOW_BYTES), F_UNLCK);
	munmap(sh, sizeof(*sh));
	close(o);
	alarm(0);
}

/* kill -9 of holders and waiters in a loop: the others carry on. */
static void test_kill9_loop(void **state)
{
	pid_t pid[PROCS];
	int o = other_fd();

	(void)state;
	watchdog(90);
	sh = new_shared();
	for (int p = 0; p < PROCS; p++)
		pid[p] = spawn(p, false, false);
	for (int round = 0; round < 8; round++) {
		int victim = round % PROCS;
		long seen[PROCS];

		sleep_ms(40 + 13 * round);
		kill(pid[victim], SIGKILL);
		waitpid(pid[victim], NULL, 0);
		for (int p = 0; p < PROCS; p++)
			seen[p] = atomic_load(&sh->ops[p]);
		/* Every survivor progresses after the kill (no lock leaked). */
		for (int p = 0; p < PROCS; p++) {
			int i;

			if (p == victim)
				continue;
			for (i = 0; i < 5000 && atomic_load(&sh->ops[p]) <= seen[p] + 20; i++)
				sleep_ms(1);
			assert_true(i < 5000);
		}
		pid[victim] = spawn(victim, false, false);
	}
	atomic_store(&sh->stop, 1);
	for (int p = 0; p < PROCS; p++)
		assert_int_equal(reap(pid[p], 20000), 0);
	assert_int_equal(atomic_load(&sh->violations), 0);
	assert_int_equal(probe(o, F_WRLCK, 0, INT64_MAX - 1), F_UNLCK);
	munmap(sh, sizeof(*sh));
	close(o);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_file_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_drops_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_child_excludes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_inherited_tree_aborts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_misuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_range_aborts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trylock_and_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadline_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unrelated_carry_on, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_and_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_processes_exclusion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kill9_loop, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL); /* a fresh file per test */
}
