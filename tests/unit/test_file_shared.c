/* SPDX-License-Identifier: MIT */
/*
 * Trees bound to one file in one process share the process's one open file
 * description of that file (range_lock_tree_set_file()): they must still
 * exclude each other as two processes do; a fork child must not become the
 * same owner as its parent; binding, rebinding and destroying never close a
 * descriptor and open exactly one per distinct file.
 *
 * What another process sees is probed from a second description of the
 * file opened by the test (F_OFD_GETLK), as in test_file_lock.c.
 */
#define _FILE_OFFSET_BITS 64
#include "test_util.h"

#include <dirent.h>
#include <sched.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <cmocka.h>

static char path[] = "/tmp/rangelock-shared-test.XXXXXX";
static int file_fd = -1;

static void broken(const char *what)
{
	fprintf(stderr, "test_file_shared: %s: %s\n", what, strerror(errno));
	abort();
}

static int new_file(char *name)
{
	int fd;

	strcpy(name, "/tmp/rangelock-shared-test.XXXXXX");
	fd = mkostemp(name, O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 1 << 16))
		broken("mkstemp");
	return fd;
}

static int setup(void **state)
{
	(void)state;
	file_fd = new_file(path);
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

static int probe(int fd, short type, off_t start, off_t last)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = last - start + 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		broken("fcntl(F_OFD_GETLK)");
	return fl.l_type;
}

static void bind(struct range_lock_tree *t, int fd)
{
	range_lock_tree_init(t);
	if (range_lock_tree_set_file(t, fd))
		broken("range_lock_tree_set_file");
}

/* Open descriptors of this process (/proc/self/fd, less opendir's own). */
static int nr_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		broken("opendir(/proc/self/fd)");
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* Descriptors of this process that are descriptions of @fd's file. */
static int nr_fds_of(int fd)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat a, b;
	int n = 0;

	if (!d || fstat(fd, &a))
		broken("opendir(/proc/self/fd)");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		if (fstat(atoi(e->d_name), &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			n++;
	}
	closedir(d);
	return n;
}

/* ---- two trees on one file exclude each other ----------------------- */

struct blocked {
	struct range_lock_tree *tree;
	struct range_lock lock;
	bool reader;
	atomic_int got;
};

static void *blocked_locker(void *arg)
{
	struct blocked *b = arg;

	if (b->reader)
		range_read_lock(b->tree, &b->lock);
	else
		range_write_lock(b->tree, &b->lock);
	atomic_store(&b->got, 1);
	return NULL;
}

static void test_two_trees_exclude(void **state)
{
	struct range_lock_tree a, b, c;
	struct range_lock ra, rb;
	struct blocked bl;
	struct timespec ts;
	pthread_t th;
	int o = other_fd(), n0 = nr_fds_of(file_fd);

	(void)state;
	watchdog(30);
	bind(&a, file_fd);
	bind(&b, file_fd);
	bind(&c, file_fd);
	/* One description for the three (plus the test's two). */
	assert_int_equal(nr_fds_of(file_fd), n0 + 1);

	/* A writer on A: B is refused overlapping ranges in every mode. */
	range_lock_init(&ra, 0, 9);
	range_write_lock(&a, &ra);
	range_lock_init(&rb, 5, 14);
	assert_int_equal(range_write_trylock(&b, &rb), 0);
	assert_int_equal(range_read_trylock(&b, &rb), 0);
	deadline_in(CLOCK_MONOTONIC, 30, &ts);
	assert_int_equal(range_write_timedlock(&b, &rb, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	deadline_in(CLOCK_MONOTONIC, 30, &ts);
	assert_int_equal(range_read_timedlock(&b, &rb, CLOCK_MONOTONIC, &ts), -ETIMEDOUT);
	/* ... and gave up cleanly: nothing of B counted, A's lock intact. */
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_WRLCK);
	assert_int_equal(probe(o, F_RDLCK, 10, 14), F_UNLCK);
	/* Disjoint ranges do not conflict. */
	range_lock_init(&rb, 10, 19);
	assert_int_equal(range_write_trylock(&b, &rb), 1);
	assert_int_equal(probe(o, F_RDLCK, 10, 19), F_WRLCK);
	range_write_unlock(&b, &rb);
	assert_int_equal(probe(o, F_RDLCK, 10, 19), F_UNLCK);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_WRLCK); /* A's: kept */

	/* A blocking writer on B waits for A's unlock, then holds. */
	memset(&bl, 0, sizeof(bl));
	bl.tree = &b;
	range_lock_init(&bl.lock, 9, 9);
	assert_int_equal(pthread_create(&th, NULL, blocked_locker, &bl), 0);
	sleep_ms(100);
	assert_int_equal(atomic_load(&bl.got), 0);
	range_write_unlock(&a, &ra);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(atomic_load(&bl.got), 1);
	assert_int_equal(probe(o, F_RDLCK, 9, 9), F_WRLCK);   /* B's now */
	assert_int_equal(probe(o, F_WRLCK, 0, 8), F_UNLCK);
	assert_int_equal(range_read_trylock(&a, &ra), 0);     /* A is refused */
	range_write_unlock(&b, &bl.lock);
	assert_int_equal(probe(o, F_WRLCK, 0, 100), F_UNLCK);

	/* Readers of different trees share; a writer of a third waits for
	 * both; the kernel's read lock stays while either tree reads. */
	range_lock_init(&ra, 100, 109);
	range_lock_init(&rb, 105, 114);
	range_read_lock(&a, &ra);
	assert_int_equal(range_read_trylock(&b, &rb), 1);
	memset(&bl, 0, sizeof(bl));
	bl.tree = &c;
	range_lock_init(&bl.lock, 104, 106);
	assert_int_equal(pthread_create(&th, NULL, blocked_locker, &bl), 0);
	range_read_unlock(&a, &ra);
	assert_int_equal(probe(o, F_WRLCK, 100, 104), F_UNLCK);
	assert_int_equal(probe(o, F_WRLCK, 105, 114), F_RDLCK); /* B's */
	sleep_ms(100);
	assert_int_equal(atomic_load(&bl.got), 0); /* B still reads 105, 106 */
	range_read_unlock(&b, &rb);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(atomic_load(&bl.got), 1);
	assert_int_equal(probe(o, F_RDLCK, 104, 106), F_WRLCK);
	/* A downgrade on C lets B's readers in, not B's writers. */
	range_downgrade_write(&c, &bl.lock);
	range_lock_init(&rb, 106, 110);
	assert_int_equal(range_read_trylock(&b, &rb), 1);
	assert_int_equal(range_write_trylock(&a, &ra), 0);
	range_read_unlock(&b, &rb);
	range_read_unlock(&c, &bl.lock);
	assert_int_equal(probe(o, F_WRLCK, 0, 1000), F_UNLCK);

	assert_int_equal(range_lock_tree_destroy(&a), 0);
	assert_int_equal(range_lock_tree_destroy(&b), 0);
	assert_int_equal(range_lock_tree_destroy(&c), 0);
	close(o);
	alarm(0);
}

/* Threads of two trees on one file, random ranges: a checker inside every
 * critical section sees no overlap of a writer with anybody. */
#define UNITS 64
#define STRESS_THREADS 4
#define STRESS_ROUNDS 3000

static struct range_lock_tree stress_tree[2];
static atomic_int unit_readers[UNITS], unit_writers[UNITS];
static atomic_long violations;

static void *stress_worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	struct range_lock_tree *t = &stress_tree[(uintptr_t)arg & 1];

	for (int i = 0; i < STRESS_ROUNDS; i++) {
		uint64_t s = (uint64_t)(rand_r(&seed) % UNITS);
		uint64_t l = s + (uint64_t)(rand_r(&seed) % 8);
		bool reader = rand_r(&seed) % 3 != 0;
		struct range_lock r;

		if (l >= UNITS)
			l = UNITS - 1;
		range_lock_init(&r, s, l);
		if (reader)
			range_read_lock(t, &r);
		else
			range_write_lock(t, &r);
		for (uint64_t u = s; u <= l; u++) {
			if (reader) {
				atomic_fetch_add(&unit_readers[u], 1);
				if (atomic_load(&unit_writers[u]))
					atomic_fetch_add(&violations, 1);
			} else {
				if (atomic_fetch_add(&unit_writers[u], 1) ||
				    atomic_load(&unit_readers[u]))
					atomic_fetch_add(&violations, 1);
			}
		}
		sched_yield(); /* a window for a wrongly admitted other tree */
		for (uint64_t u = s; u <= l; u++) {
			if (atomic_load(&unit_writers[u]) != !reader)
				atomic_fetch_add(&violations, 1);
			if (reader)
				atomic_fetch_sub(&unit_readers[u], 1);
			else
				atomic_fetch_sub(&unit_writers[u], 1);
		}
		if (reader)
			range_read_unlock(t, &r);
		else
			range_write_unlock(t, &r);
	}
	return NULL;
}

static void test_two_trees_stress(void **state)
{
	pthread_t th[STRESS_THREADS];
	int o = other_fd();

	(void)state;
	watchdog(120);
	bind(&stress_tree[0], file_fd);
	bind(&stress_tree[1], file_fd);
	for (uintptr_t i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, stress_worker, (void *)i), 0);
	for (int i = 0; i < STRESS_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	assert_int_equal(atomic_load(&violations), 0);
	assert_int_equal(probe(o, F_WRLCK, 0, 1000), F_UNLCK);
	assert_int_equal(range_lock_tree_destroy(&stress_tree[0]), 0);
	assert_int_equal(range_lock_tree_destroy(&stress_tree[1]), 0);
	close(o);
	alarm(0);
}

/* ---- fork() ----------------------------------------------------------- */

/*
 * The child inherits the parent's description of the file.  Were it kept,
 * a tree the child binds would be the parent's lock owner and take the
 * parent's ranges at once.  The child closes it at fork: its own binding
 * opens its own description, excluded by the parent's locks; the child's
 * exit (and that close) leaves the parent's locks in place.
 */
static void test_fork(void **state)
{
	struct range_lock_tree a, b;
	struct range_lock ra, rb;
	int o = other_fd(), status;
	int before = nr_fds_of(file_fd);
	pid_t pid;

	(void)state;
	watchdog(30);
	bind(&a, file_fd);
	bind(&b, file_fd);
	assert_int_equal(nr_fds_of(file_fd), before + 1);
	range_lock_init(&ra, 0, 9);
	range_write_lock(&a, &ra);
	range_lock_init(&rb, 20, 29);
	range_read_lock(&b, &rb);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct range_lock_tree c, d;
		struct range_lock r;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(20);
		/* The inherited description is gone in the child. */
		if (nr_fds_of(file_fd) != before)
			_exit(10);
		range_lock_tree_init(&c);
		range_lock_tree_init(&d);
		if (range_lock_tree_set_file(&c, file_fd) ||
		    range_lock_tree_set_file(&d, file_fd))
			_exit(11);
		if (nr_fds_of(file_fd) != before + 1) /* the child's own one */
			_exit(12);
		range_lock_init(&r, 5, 5);
		if (range_write_trylock(&c, &r) != 0 || range_read_trylock(&c, &r) != 0)
			_exit(13); /* the parent's write lock excludes */
		range_lock_init(&r, 25, 25);
		if (range_write_trylock(&c, &r) != 0)
			_exit(14); /* the parent's read lock excludes writers */
		if (range_read_trylock(&c, &r) != 1)
			_exit(15); /* and shares with readers */
		range_read_unlock(&c, &r);
		range_lock_init(&r, 40, 49);
		if (range_write_trylock(&c, &r) != 1)
			_exit(16);
		/* Held at exit: the kernel drops it with the child's
		 * description; the parent's stay. */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(probe(o, F_RDLCK, 0, 9), F_WRLCK);
	assert_int_equal(probe(o, F_WRLCK, 20, 29), F_RDLCK);
	assert_int_equal(probe(o, F_WRLCK, 40, 49), F_UNLCK);
	assert_int_equal(nr_fds_of(file_fd), before + 1);
	range_write_unlock(&a, &ra);
	range_read_unlock(&b, &rb);
	assert_int_equal(probe(o, F_WRLCK, 0, 100), F_UNLCK);
	/* Still one description, still usable after the fork. */
	range_lock_init(&ra, 0, 100);
	assert_int_equal(range_write_trylock(&a, &ra), 1);
	assert_int_equal(probe(o, F_RDLCK, 0, 100), F_WRLCK);
	range_write_unlock(&a, &ra);
	assert_int_equal(range_lock_tree_destroy(&a), 0);
	assert_int_equal(range_lock_tree_destroy(&b), 0);
	close(o);
	alarm(0);
}

/* ---- descriptors ------------------------------------------------------ */

/* 1000 rounds of bind, lock, rebind, destroy over two files: two
 * descriptors in all (one per distinct file), none closed, none leaked. */
static void test_bind_cycles(void **state)
{
	char other[sizeof(path)];
	int ofd = new_file(other);
	int n0 = nr_fds(), x0 = nr_fds_of(file_fd), y0 = nr_fds_of(ofd);
	struct range_lock_tree keep;
	DEFINE_RANGE_LOCK(k, 1000, 1009);

	(void)state;
	watchdog(60);
	bind(&keep, ofd); /* a second tree holding meanwhile */
	range_write_lock(&keep, &k);
	for (int i = 0; i < 1000; i++) {
		struct range_lock_tree t;
		DEFINE_RANGE_LOCK(r, 0, 9);

		bind(&t, file_fd);
		range_write_lock(&t, &r);
		range_write_unlock(&t, &r);
		assert_int_equal(range_lock_tree_set_file(&t, ofd), 0);
		range_read_lock(&t, &r);
		assert_int_equal(range_lock_tree_set_file(&t, file_fd), -EBUSY);
		range_read_unlock(&t, &r);
		assert_int_equal(range_lock_tree_set_file(&t, file_fd), 0);
		assert_int_equal(range_lock_tree_destroy(&t), 0);
	}
	assert_int_equal(nr_fds(), n0 + 2);
	assert_int_equal(nr_fds_of(file_fd), x0 + 1);
	assert_int_equal(nr_fds_of(ofd), y0 + 1);
	range_write_unlock(&keep, &k);
	assert_int_equal(range_lock_tree_destroy(&keep), 0);
	assert_int_equal(nr_fds(), n0 + 2); /* kept for the process's life */
	close(ofd);
	unlink(other);
	alarm(0);
}

/* Out of descriptors: the first bind of a file fails with -EMFILE and
 * changes nothing; a file already bound needs none.  In a child, whose
 * registry starts empty, under a low RLIMIT_NOFILE. */
static void test_fd_exhaustion(void **state)
{
	char other[sizeof(path)];
	int ofd = new_file(other), status;
	pid_t pid;

	(void)state;
	watchdog(30);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct range_lock_tree t, u;
		struct rlimit rl;
		DEFINE_RANGE_LOCK(r, 0, 9);
		DEFINE_RANGE_LOCK(s, 5, 5);
		int o = other_fd();

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(20);
		bind(&t, file_fd);
		range_lock_tree_init(&u);
		if (getrlimit(RLIMIT_NOFILE, &rl))
			_exit(10);
		rl.rlim_cur = (rlim_t)nr_fds() + 8;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(10);
		while (dup(o) >= 0)
			;
		if (errno != EMFILE)
			_exit(11);
		if (range_lock_tree_set_file(&u, ofd) != -EMFILE)
			_exit(12);
		if (range_lock_tree_set_file(&t, ofd) != -EMFILE)
			_exit(13);
		if (range_lock_tree_set_file(&u, file_fd) != 0)
			_exit(14); /* shares t's description: no descriptor */
		/* t is still bound to the first file, u too: they exclude. */
		range_write_lock(&t, &r);
		if (probe(o, F_RDLCK, 0, 9) != F_WRLCK)
			_exit(15);
		if (range_read_trylock(&u, &s) != 0)
			_exit(16);
		range_write_unlock(&t, &r);
		if (range_read_trylock(&u, &s) != 1)
			_exit(17);
		range_read_unlock(&u, &s);
		if (range_lock_tree_destroy(&t) || range_lock_tree_destroy(&u))
			_exit(18);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(ofd);
	unlink(other);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_trees_exclude, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_trees_stress, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_cycles, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_exhaustion, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
