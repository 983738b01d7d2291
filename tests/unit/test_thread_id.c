/* SPDX-License-Identifier: MIT */
/*
 * Thread ids when gettid() fails.  A seccomp filter may make gettid() fail
 * (here: EPERM, through a raw BPF filter installed with prctl(), no
 * libseccomp).  The library must then give the thread an id of its own that
 * has none of the tag bits of owner_tid (thread_id.h): with the tags, every
 * plain request of that thread read as asynchronous, and the grant of a
 * waiter that does not sleep (a set member, a spinning waiter) wrote a
 * completion-queue link past the end of its struct range_lock -- a crash.
 *
 * Seccomp filters are per thread (without TSYNC): each test runs its calls
 * in a fresh thread that installs the filter first ("filtered thread");
 * the main thread holds and releases the other requests.  Where no filter
 * can be installed (qemu-user refuses seccomp; old kernels; a compiler
 * without the kernel headers), every test is skipped, visibly.  Threads
 * never assert: they record, the main thread
 * asserts after joining.  abort() needs gettid() in glibc, so nothing here
 * aborts in a filtered thread.
 *
 * Built against the library as configured, the forced POSIX backend and
 * the checking mode (TEST_CHECKED, also for a library configured with
 * RANGELOCK_CHECKS: the hold registry keyed by thread id, and its
 * thread-exit report).
 *
 * MUTANTS (src/thread_id.c broken on purpose, then restored; caught in all
 * three variants):
 *  - a failed gettid() masked to 0x7fffffff (the code before the fix):
 *    every test fails; set_member_granted_while_waiting with SIGSEGV.
 *  - one fallback id for every thread (no counter): ids_are_untagged_and_
 *    distinct (4194304 twice), fork_child_gets_new_id.
 *  - errno not restored after the failed gettid(): ids_are_untagged_and_
 *    distinct.
 */
#include "test_util.h"

#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#ifndef TEST_NO_SECCOMP_H
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#endif
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <cmocka.h>

#ifndef TEST_CHECKED
#define TEST_CHECKED 0
#endif

/* The thread ids the library hands out (src/thread_id.h). */
#define KERNEL_TID_LIMIT (1u << 22)
#define ID_END (1u << 29)

/* The audit architecture of the build target: the filter acts on the
 * system calls of this ABI only. */
#if defined(TEST_NO_SECCOMP_H)
/* no kernel headers: fail_gettid() says so */
#elif defined(__x86_64__) && !defined(__ILP32__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__i386__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_I386
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__s390x__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_S390X
#elif defined(__riscv) && __riscv_xlen == 64
#define TEST_AUDIT_ARCH AUDIT_ARCH_RISCV64
#endif

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define NO_TSAN __attribute__((no_sanitize("thread"), noinline))
#else
#define NO_TSAN __attribute__((noinline))
#endif

/* Requests in @t, polled without the internal lock (a stale value is read
 * again). */
static NO_TSAN uint32_t peek_nr(struct range_lock_tree *t)
{
	return *(volatile uint32_t *)&t->nr_requests;
}

static bool wait_nr(struct range_lock_tree *t, uint32_t n)
{
	for (int i = 0; i < 5000; i++) {
		if (peek_nr(t) == n)
			return true;
		sleep_ms(1);
	}
	return peek_nr(t) == n;
}

/*
 * Make gettid() fail with EPERM in the calling thread (and in the children
 * it forks or creates from now on).  NULL when done and seen to work, else
 * why not.
 */
static const char *fail_gettid(void)
{
#ifdef TEST_AUDIT_ARCH
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* another ABI */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_gettid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return "prctl(PR_SET_NO_NEW_PRIVS) failed";
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return "prctl(PR_SET_SECCOMP) failed (no seccomp here, or qemu-user)";
	errno = 0;
	if (syscall(SYS_gettid) != -1 || errno != EPERM)
		return "the filter did not make gettid() fail";
	return NULL;
#elif defined(TEST_NO_SECCOMP_H)
	return "no kernel headers (linux/seccomp.h) for this compiler";
#else
	return "no audit architecture known for this target";
#endif
}

/* ---- a filtered thread running one job -------------------------------- */

struct filtered {
	void (*job)(struct filtered *f);
	int which;                      /* for jobs run by several threads */
	const char *why_not;            /* the filter could not be installed */
	atomic_int ready;               /* the job reached its wait point */
	atomic_int go;                  /* the main thread says: go on */
	int bad;                        /* what the job saw wrong */
	uint32_t id;                    /* owner_tid of its request */
	char what[160];                 /* the first wrong thing */
	pthread_t th;
};

static void job_bad(struct filtered *f, const char *what)
{
	if (!f->bad++)
		snprintf(f->what, sizeof(f->what), "%s", what);
}

static void *filtered_main(void *arg)
{
	struct filtered *f = arg;

	f->why_not = fail_gettid();
	if (f->why_not) {
		atomic_store(&f->ready, 1);
		return NULL;
	}
	f->job(f);
	return NULL;
}

static void start_filtered(struct filtered *f, void (*job)(struct filtered *))
{
	memset(f, 0, sizeof(*f));
	f->job = job;
	assert_int_equal(pthread_create(&f->th, NULL, filtered_main, f), 0);
}

/* Join, skip the test if the filter could not be installed, else assert
 * that the job saw nothing wrong. */
static void join_filtered(struct filtered *f)
{
	pthread_join(f->th, NULL);
	if (f->why_not) {
		print_message("seccomp: %s: skipped\n", f->why_not);
		skip();
	}
	if (f->bad)
		print_error("filtered thread: %d wrong, first: %s\n", f->bad, f->what);
	assert_int_equal(f->bad, 0);
}

static bool id_ok(uint32_t id)
{
	return id >= KERNEL_TID_LIMIT && id < ID_END;
}

/* ---- the reproduction: a set member granted while its thread waits ----- */

static struct range_lock_tree set_tree;

static void set_job(struct filtered *f)
{
	struct range_lock a, b;
	struct range_lock_item items[2] = { { &a, RANGE_LOCK_WRITE },
					    { &b, RANGE_LOCK_WRITE } };

	range_lock_init(&a, 0, 0);
	range_lock_init(&b, 10, 10);
	atomic_store(&f->ready, 1);
	range_lock_many(&set_tree, items, 2); /* waits for both */
	f->id = a.owner_tid;
	if (b.owner_tid != a.owner_tid)
		job_bad(f, "the members have different owners");
	range_unlock_many(&set_tree, items, 2);
}

/*
 * The main thread holds [0, 0] and [10, 10]; the filtered thread locks both
 * in one set (it waits); the main thread unlocks [10, 10] (the grant of a
 * member its thread does not sleep on), then [0, 0].
 */
static void test_set_member_granted_while_waiting(void **state)
{
	(void)state;
	struct range_lock h0, h10;
	struct filtered f;

	range_lock_tree_init(&set_tree);
	range_lock_init(&h0, 0, 0);
	range_lock_init(&h10, 10, 10);
	range_write_lock(&set_tree, &h0);
	range_write_lock(&set_tree, &h10);
	start_filtered(&f, set_job);
	while (!atomic_load(&f.ready))
		sched_yield();
	if (!f.why_not) {
		assert_true(wait_nr(&set_tree, 4)); /* the set waits in the tree */
		sleep_ms(10); /* and its thread sleeps, on one member */
	}
	range_write_unlock(&set_tree, &h10);
	sleep_ms(5);
	range_write_unlock(&set_tree, &h0);
	join_filtered(&f);
	assert_true(id_ok(f.id));
	assert_int_equal(range_lock_tree_destroy(&set_tree), 0);
}

/* ---- waiters granted while they spin, or asleep ----------------------- */

static struct range_lock_tree spin_tree;
static struct range_lock spin_holder;
static atomic_int spin_round;   /* the main thread holds for this round */
static atomic_int spin_done;    /* the filtered thread's last round */

#define SPIN_ROUNDS 300

static void spin_job(struct filtered *f)
{
	struct range_lock r;

	atomic_store(&f->ready, 1);
	for (int i = 1; i <= SPIN_ROUNDS; i++) {
		while (atomic_load(&spin_round) != i)
			sched_yield();
		range_lock_init(&r, 5, 5);
		range_write_lock(&spin_tree, &r); /* waits for the holder */
		if (!id_ok(r.owner_tid))
			job_bad(f, "tagged owner_tid");
		f->id = r.owner_tid;
		range_write_unlock(&spin_tree, &r);
		atomic_store(&spin_done, i);
	}
}

/*
 * Rounds: the main thread holds [0, 9]; the filtered thread locks [5, 5]
 * (it waits: it spins first, then sleeps); the main thread unlocks after 0
 * to 60 us, so some grants find it spinning and some asleep.
 */
static void test_waiter_granted_spinning(void **state)
{
	(void)state;
	struct filtered f;

	range_lock_tree_init(&spin_tree);
	atomic_store(&spin_round, 0);
	atomic_store(&spin_done, 0);
	start_filtered(&f, spin_job);
	while (!atomic_load(&f.ready))
		sched_yield();
	for (int i = 1; i <= SPIN_ROUNDS && !f.why_not; i++) {
		uint64_t t0;

		range_lock_init(&spin_holder, 0, 9);
		range_write_lock(&spin_tree, &spin_holder);
		atomic_store(&spin_round, i);
		t0 = mono_ns();
		while (peek_nr(&spin_tree) < 2 && mono_ns() - t0 < 1000000000ull)
			sched_yield();
		t0 = mono_ns();
		while (mono_ns() - t0 < (uint64_t)(i % 7) * 10000u)
			;
		range_write_unlock(&spin_tree, &spin_holder);
		while (atomic_load(&spin_done) != i)
			sched_yield();
	}
	join_filtered(&f);
	assert_true(id_ok(f.id));
	assert_int_equal(range_lock_tree_destroy(&spin_tree), 0);
}

/* ---- asynchronous requests -------------------------------------------- */

static struct range_lock_tree async_tree;

struct done_rec {
	struct range_lock_async a; /* first: the completion gets &a */
	atomic_int calls;
	int status;
};

static void record_done(struct range_lock_async *a, int status)
{
	struct done_rec *d = (struct done_rec *)a;

	d->status = status;
	atomic_fetch_add(&d->calls, 1);
}

static struct done_rec held_now, queued;

/* The filtered thread submits one request that is held at once and one
 * that is queued behind the main thread's hold; the main thread's unlock
 * grants the second (its completion runs there). */
static void async_job(struct filtered *f)
{
	range_lock_async_init(&held_now.a, 100, 199, record_done, NULL);
	if (range_write_lock_async(&async_tree, &held_now.a) != 0)
		job_bad(f, "not held at once");
	else if (!id_ok(held_now.a.lock.owner_tid))
		job_bad(f, "tagged owner_tid (held at once)");
	else
		range_write_unlock(&async_tree, &held_now.a.lock);
	range_lock_async_init(&queued.a, 0, 9, record_done, NULL);
	if (range_write_lock_async(&async_tree, &queued.a) != -EINPROGRESS)
		job_bad(f, "not queued");
	f->id = queued.a.lock.owner_tid; /* queued: with the async tag */
	atomic_store(&f->ready, 1);
}

static void test_async(void **state)
{
	(void)state;
	struct range_lock h;
	struct filtered f;

	range_lock_tree_init(&async_tree);
	range_lock_init(&h, 0, 9);
	range_write_lock(&async_tree, &h);
	start_filtered(&f, async_job);
	join_filtered(&f);
	assert_true(id_ok(f.id & ~0x20000000u)); /* the tag, on a plain id */
	assert_int_equal(atomic_load(&held_now.calls), 0);
	assert_int_equal(atomic_load(&queued.calls), 0);
	range_write_unlock(&async_tree, &h); /* grants it: the completion runs */
	assert_int_equal(atomic_load(&queued.calls), 1);
	assert_int_equal(queued.status, 0);
	assert_int_equal(queued.a.lock.owner_tid, f.id & ~0x20000000u);
	range_write_unlock(&async_tree, &queued.a.lock);
	assert_int_equal(range_lock_tree_destroy(&async_tree), 0);
}

/* ---- two filtered threads: two different ids -------------------------- */

static struct range_lock_tree id_tree;
static struct range_lock id_req[2];

static void hold_job(struct filtered *f)
{
	struct range_lock *r = &id_req[f->which];

	errno = 0;
	range_write_lock(&id_tree, r); /* the thread's first call */
	if (errno != 0)
		job_bad(f, "the failed gettid() left errno set");
	f->id = r->owner_tid;
	atomic_store(&f->ready, 1);
	while (!atomic_load(&f->go))
		sched_yield();
	range_write_unlock(&id_tree, r);
}

/* Each holds a range of one tree (the first through the lock word, the
 * second in the tree): distinct ids, none tagged, both in the dump; the
 * failed gettid() of the first call leaves errno alone. */
static void test_ids_are_untagged_and_distinct(void **state)
{
	(void)state;
	struct filtered f[2];
	char *buf = NULL, want[32];
	size_t len = 0;
	FILE *out;

	range_lock_tree_init(&id_tree);
	range_lock_init(&id_req[0], 0, 0);
	range_lock_init(&id_req[1], 1, 1);
	for (int i = 0; i < 2; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].job = hold_job;
		f[i].which = i;
		assert_int_equal(pthread_create(&f[i].th, NULL, filtered_main, &f[i]), 0);
		while (!atomic_load(&f[i].ready))
			sched_yield();
	}
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	if (!f[0].why_not && !f[1].why_not)
		range_lock_tree_dump(&id_tree, out);
	fclose(out);
	for (int i = 0; i < 2; i++) {
		atomic_store(&f[i].go, 1);
		join_filtered(&f[i]);
	}
	print_message("ids %u and %u\n", f[0].id, f[1].id);
	assert_true(id_ok(f[0].id));
	assert_true(id_ok(f[1].id));
	assert_true(f[0].id != f[1].id);
	snprintf(want, sizeof(want), "tid=%u\n", f[0].id);
	assert_non_null(strstr(buf, want));
	snprintf(want, sizeof(want), "tid=%u\n", f[1].id);
	assert_non_null(strstr(buf, want));
	free(buf);
	assert_int_equal(range_lock_tree_destroy(&id_tree), 0);
}

/* ---- fork: the child's thread gets an id of its own ------------------- */

static void fork_job(struct filtered *f)
{
	struct range_lock_tree t;
	struct range_lock r;
	int status;
	pid_t pid;

	range_lock_tree_init(&t);
	range_lock_init(&r, 0, 0);
	range_write_lock(&t, &r);
	f->id = r.owner_tid;
	range_write_unlock(&t, &r);
	pid = fork(); /* the filter is inherited: gettid() fails there too */
	if (pid < 0) {
		job_bad(f, "fork failed");
		return;
	}
	if (pid == 0) {
		alarm(10);
		range_write_lock(&t, &r);
		/* 0: a fresh id, 1: tagged, 2: the parent's id kept */
		_exit(!id_ok(r.owner_tid) ? 1 : r.owner_tid == f->id ? 2 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(f->what, sizeof(f->what), "child status %#x", status);
		f->bad++;
	}
}

static void test_fork_child_gets_new_id(void **state)
{
	(void)state;
	struct filtered f;

	start_filtered(&f, fork_job);
	join_filtered(&f);
	assert_true(id_ok(f.id));
}

/* ---- the checking mode: its registry, keyed by thread id -------------- */

static struct range_lock_tree chk_a, chk_b;

/* Two trees in one order, a set, then exit holding a range: the registry
 * reports the thread by its id. */
static void exit_holding_job(struct filtered *f)
{
	static struct range_lock r1, r2, m1, m2, left;
	struct range_lock_item items[2] = { { &m1, RANGE_LOCK_READ },
					    { &m2, RANGE_LOCK_WRITE } };

	range_lock_init(&r1, 0, 9);
	range_lock_init(&r2, 0, 9);
	range_write_lock(&chk_a, &r1);
	range_read_lock(&chk_b, &r2);
	range_read_unlock(&chk_b, &r2);
	range_write_unlock(&chk_a, &r1);
	range_lock_init(&m1, 20, 29);
	range_lock_init(&m2, 30, 39);
	range_lock_many(&chk_a, items, 2);
	range_unlock_many(&chk_a, items, 2);
	range_lock_init(&left, 50, 50);
	range_write_lock(&chk_a, &left);
	f->id = left.owner_tid;
}

static void exit_holding_child(void)
{
	struct filtered f;

	range_lock_tree_init(&chk_a);
	range_lock_tree_init(&chk_b);
	memset(&f, 0, sizeof(f));
	f.job = exit_holding_job;
	if (pthread_create(&f.th, NULL, filtered_main, &f))
		_exit(3);
	pthread_join(f.th, NULL);
	if (f.why_not)
		_exit(77);
	fprintf(stderr, "id %u\n", f.id);
	_exit(0);
}

static void test_checking_mode_registry(void **state)
{
	(void)state;
	struct child_result r;
	unsigned id = 0;
	char want[64];

	run_child(exit_holding_child, &r);
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77) {
		print_message("seccomp not available: skipped\n");
		skip();
	}
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		print_error("status %#x, stderr: '%s'\n", r.status, r.out);
	assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
	const char *p = strstr(r.out, "id ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "id %u", &id), 1);
	assert_true(id_ok(id));
	snprintf(want, sizeof(want), "thread %u exits holding [50, 50]", id);
	if (TEST_CHECKED) {
		if (!strstr(r.out, want))
			print_error("stderr: '%s'\n", r.out);
		assert_non_null(strstr(r.out, want));
	} else {
		assert_null(strstr(r.out, "exits holding"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_member_granted_while_waiting),
		cmocka_unit_test(test_waiter_granted_spinning),
		cmocka_unit_test(test_async),
		cmocka_unit_test(test_ids_are_untagged_and_distinct),
		cmocka_unit_test(test_fork_child_gets_new_id),
		cmocka_unit_test(test_checking_mode_registry),
	};

	watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
