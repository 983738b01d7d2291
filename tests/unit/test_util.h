/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the threaded unit tests.  Rules: worker threads never call
 * cmocka asserts (a failed assert off the main thread kills the binary with
 * no message); they record what they saw and the main thread asserts after
 * joining.  Every binary runs under a watchdog (alarm) and ctest's TIMEOUT.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

static inline void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void deadline_in(clockid_t clk, long ms, struct timespec *ts)
{
	clock_gettime(clk, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Requests now waiting in @tree (statistics must be enabled). */
static inline uint64_t nr_waiting(struct range_lock_tree *tree)
{
	struct range_lock_stats st;
	if (range_lock_tree_get_stats(tree, &st))
		return UINT64_MAX;
	return st.waiting_now;
}

static inline uint64_t nr_held(struct range_lock_tree *tree)
{
	struct range_lock_stats st;
	if (range_lock_tree_get_stats(tree, &st))
		return UINT64_MAX;
	return st.held_now;
}

/* Poll until @n requests wait in @tree; false after 5 s. */
static inline bool wait_for_waiters(struct range_lock_tree *tree, uint64_t n)
{
	for (int i = 0; i < 5000; i++) {
		if (nr_waiting(tree) == n)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* Lines of the tree's dump containing @what. */
static inline int dump_count(struct range_lock_tree *tree, const char *what)
{
	char *buf = NULL, *p;
	size_t len = 0;
	int n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	range_lock_tree_dump(tree, f);
	fclose(f);
	for (p = buf; (p = strstr(p, what)); p += strlen(what))
		n++;
	free(buf);
	return n;
}

/* Run @fn in a child process (under a 10 s alarm) and capture its stderr. */
struct child_result {
	int status;
	char out[2048];
};

static inline void run_child(void (*fn)(void), struct child_result *res)
{
	int pipefd[2];
	ssize_t n, got = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (pipe(pipefd) != 0)
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		alarm(10); /* a check that fails to fire would hang: SIGALRM */
		fn();
		_exit(0);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], res->out + got, sizeof(res->out) - 1 - (size_t)got)) > 0)
		got += n;
	close(pipefd[0]);
	waitpid(pid, &res->status, 0);
}

static inline void watchdog(unsigned seconds)
{
	signal(SIGALRM, SIG_DFL);
	alarm(seconds);
}

#ifdef TEST_SEGMENTS
/*
 * The bound-tree suites again, on trees with segments (the *_segments
 * tests): every bind also splits the tree into 4 segments of 4-unit
 * stripes, so that a range of 5 units or more spans segments.  Binding
 * and splitting alternate in order (each must accept the other's tree);
 * a busy tree answers -EBUSY either way.
 */
static inline int test_seg_set_file(struct range_lock_tree *t, int fd)
{
	static _Atomic unsigned calls;
	int r;

	if (atomic_fetch_add(&calls, 1) % 2) {
		r = range_lock_tree_set_file(t, fd);
		return r ? r : range_lock_tree_set_segments(t, 4, 2);
	}
	r = range_lock_tree_set_segments(t, 4, 2);
	if (r == -EBUSY)
		return r;
	/* (-ENOTSUP: statistics were enabled on the tree with segments it
	 * has: it keeps them) */
	return range_lock_tree_set_file(t, fd);
}
#define range_lock_tree_set_file(t, fd) test_seg_set_file(t, fd)
#endif

#endif
