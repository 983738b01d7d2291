/* SPDX-License-Identifier: MIT */
/*
 * A bound tree next to SQLite in the same process: binding, locking,
 * rebinding, a failed bind and destroying the tree must leave SQLite's
 * classic POSIX (fcntl F_SETLK) locks on the database in place.  POSIX
 * drops every classic lock a process holds on a file when the process
 * closes ANY descriptor of that file, so a library that closed its own
 * descriptor of the database would silently drop SQLite's RESERVED lock,
 * and another process would then roll back our journal as abandoned and
 * commit over our transaction.
 *
 * "Another process" is this binary again, exec'ed fresh (--try-write DB):
 * a new process with a new SQLite connection (no connection ever crosses a
 * fork).  Its exit status is the SQLite result of BEGIN IMMEDIATE (then
 * an INSERT and COMMIT when it got the lock): SQLITE_BUSY while we hold
 * our write transaction.  This process keeps its own descriptor of the
 * database open until SQLite has committed: closing it would drop the
 * locks too (that is POSIX, not the library).
 */
#define _FILE_OFFSET_BITS 64
#include "test_util.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <cmocka.h>
#include <sqlite3.h>

static char db_path[] = "/tmp/rangelock-sqlite-test.XXXXXX";
static char other_path[] = "/tmp/rangelock-sqlite-other.XXXXXX";
static sqlite3 *db;

/* ---- the other process ---------------------------------------------- */

static int try_write(const char *path)
{
	sqlite3 *c;
	int r;

	if (sqlite3_open(path, &c) != SQLITE_OK)
		return 100;
	/* No busy handler: a held RESERVED lock answers SQLITE_BUSY at once. */
	r = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_exec(c, "INSERT INTO t VALUES('child'); COMMIT", NULL, NULL, NULL);
	sqlite3_close(c);
	return r & 0xff; /* the primary result code */
}

/* Exit status of a fresh process's write attempt on the database. */
static int other_process_writes(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		abort();
	if (pid == 0) {
		char *argv[] = { "test_file_sqlite", "--try-write", db_path, NULL };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv("/proc/self/exe", argv);
		_exit(101);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int rows(void)
{
	sqlite3_stmt *st;
	int n = -1;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* ---- fixture: an open write transaction ------------------------------ */

static int setup(void **state)
{
	int fd;

	(void)state;
	strcpy(db_path, "/tmp/rangelock-sqlite-test.XXXXXX");
	strcpy(other_path, "/tmp/rangelock-sqlite-other.XXXXXX");
	fd = mkstemp(db_path); /* closed before SQLite holds anything */
	if (fd < 0)
		return -1;
	close(fd);
	fd = mkstemp(other_path);
	if (fd < 0 || ftruncate(fd, 4096))
		return -1;
	close(fd);
	if (sqlite3_open(db_path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode=DELETE; CREATE TABLE t(x)",
			 NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	/* RESERVED lock (a classic write lock on one byte at 1 GiB + 1), and
	 * a hot journal on disk holding the original pages. */
	if (sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO t VALUES('parent')",
			 NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sqlite3_close(db);
	unlink(db_path);
	unlink(other_path);
	return 0;
}

/* The transaction is still ours: another process is refused, our COMMIT
 * succeeds, and the other process can write afterwards. */
static void assert_transaction_intact(void)
{
	assert_int_equal(other_process_writes(), SQLITE_BUSY);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(rows(), 1);
	assert_int_equal(other_process_writes(), SQLITE_OK);
	assert_int_equal(rows(), 2);
}

static void lock_unlock(struct range_lock_tree *t)
{
	DEFINE_RANGE_LOCK(w, 0, 4095);
	DEFINE_RANGE_LOCK(r, 100, 199);

	range_write_lock(t, &w);
	range_write_unlock(t, &w);
	assert_int_equal(range_read_trylock(t, &r), 1);
	range_read_unlock(t, &r);
}

/* ---- the calls that used to close a descriptor of the database ------- */

static void test_baseline(void **state)
{
	(void)state;
	watchdog(60);
	assert_transaction_intact(); /* the check itself, without any tree */
	alarm(0);
}

static void test_destroy(void **state)
{
	struct range_lock_tree t;
	int fd = open(db_path, O_RDWR | O_CLOEXEC);

	(void)state;
	watchdog(60);
	assert_true(fd >= 0);
	assert_int_equal(other_process_writes(), SQLITE_BUSY);
	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);
	lock_unlock(&t);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	assert_transaction_intact();
	close(fd); /* SQLite is idle now: nothing of it to drop */
	alarm(0);
}

static void test_rebind(void **state)
{
	struct range_lock_tree t;
	int fd = open(db_path, O_RDWR | O_CLOEXEC);
	int ofd = open(other_path, O_RDWR | O_CLOEXEC);

	(void)state;
	watchdog(60);
	assert_true(fd >= 0 && ofd >= 0);
	range_lock_tree_init(&t);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);
	lock_unlock(&t);
	assert_int_equal(range_lock_tree_set_file(&t, ofd), 0); /* away */
	lock_unlock(&t);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);  /* back */
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);  /* again */
	lock_unlock(&t);
	assert_int_equal(range_lock_tree_set_file(&t, ofd), 0);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	assert_transaction_intact();
	close(ofd);
	close(fd);
	alarm(0);
}

/* set_file's failure paths: the tree is busy; the descriptor is read-only. */
static void test_failed_bind(void **state)
{
	struct range_lock_tree t, u;
	DEFINE_RANGE_LOCK(r, 0, 9);
	int fd = open(db_path, O_RDWR | O_CLOEXEC);
	int rfd = open(db_path, O_RDONLY | O_CLOEXEC);

	(void)state;
	watchdog(60);
	assert_true(fd >= 0 && rfd >= 0);
	range_lock_tree_init(&t);
	range_lock_tree_init(&u);
	range_write_lock(&t, &r); /* unbound, held: set_file must say -EBUSY */
	assert_int_equal(range_lock_tree_set_file(&t, fd), -EBUSY);
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_set_file(&t, fd), 0);
	range_write_lock(&t, &r); /* bound, held */
	assert_int_equal(range_lock_tree_set_file(&t, fd), -EBUSY);
	range_write_unlock(&t, &r);
	assert_int_equal(range_lock_tree_set_file(&u, rfd), -EBADF);
	assert_int_equal(range_lock_tree_destroy(&t), 0);
	assert_int_equal(range_lock_tree_destroy(&u), 0);
	assert_transaction_intact();
	close(rfd);
	close(fd);
	alarm(0);
}

/* Two trees on the database at once, one destroyed while the other holds. */
static void test_two_trees(void **state)
{
	struct range_lock_tree a, b;
	DEFINE_RANGE_LOCK(r, 10000, 10009); /* apart from lock_unlock()'s */
	int fd = open(db_path, O_RDWR | O_CLOEXEC);

	(void)state;
	watchdog(60);
	assert_true(fd >= 0);
	range_lock_tree_init(&a);
	range_lock_tree_init(&b);
	assert_int_equal(range_lock_tree_set_file(&a, fd), 0);
	assert_int_equal(range_lock_tree_set_file(&b, fd), 0);
	range_write_lock(&b, &r);
	lock_unlock(&a);
	assert_int_equal(range_lock_tree_destroy(&a), 0);
	range_write_unlock(&b, &r);
	assert_int_equal(range_lock_tree_destroy(&b), 0);
	assert_transaction_intact();
	close(fd);
	alarm(0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_baseline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_bind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_trees, setup, teardown),
	};

	if (argc == 3 && strcmp(argv[1], "--try-write") == 0)
		return try_write(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
