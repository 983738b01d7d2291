/* SPDX-License-Identifier: MIT */
/*
 * rangelock-async-latency: how soon after a release the next request
 * learns it holds its range -- an asynchronous request against a thread
 * blocked in range_write_lock().  One unit, two threads, uncontended
 * otherwise; each round the recipient is asleep (1 ms after it started
 * waiting), then the holder takes a timestamp and unlocks:
 *
 *   blocked    a thread blocked in range_write_lock(): until its lock call
 *              returns (futex wake-up and the scheduler);
 *   callback   an asynchronous request: until its completion starts, on
 *              the releasing thread itself (the library's own cost);
 *   loop       an asynchronous request of an event loop asleep in
 *              epoll_wait(): until the loop thread wakes (the completion
 *              writes an eventfd) -- what a server sees, to set against
 *              "blocked".
 *
 * Usage: rangelock-async-latency [ROUNDS [HOGS]]   (default 1000, 0)
 * HOGS: that many more threads spin meanwhile (more threads than CPUs).
 * Prints the median and the 99th percentile of each, in microseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <rangelock/rangelock.h>

static struct range_lock_tree tree;
static atomic_int phase;                /* 1: arm, 2: done */
static uint64_t t_release, t_seen;
static int efd, ep;
static atomic_bool hogs_stop;

static void *hog_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&hogs_stop, memory_order_relaxed))
		;
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-9s median %7.2f us   p99 %7.2f us   (%d rounds)\n", what,
	       v[n / 2] / 1e3, v[n * 99 / 100] / 1e3, n);
}

/* ---- blocked: a thread in range_write_lock() ---------------------------- */

static void *blocked_main(void *arg)
{
	int rounds = *(int *)arg;
	struct range_lock l;

	for (int i = 0; i < rounds; i++) {
		while (atomic_load(&phase) != 1)
			sched_yield();
		range_lock_init(&l, 0, 0);
		range_write_lock(&tree, &l);
		t_seen = now_ns();
		range_write_unlock(&tree, &l);
		atomic_store(&phase, 2);
	}
	return NULL;
}

/* ---- callback and loop: an asynchronous request ------------------------- */

static void completion_callback(struct range_lock_async *a, int status)
{
	(void)a;
	(void)status;
	t_seen = now_ns();
}

static void completion_post(struct range_lock_async *a, int status)
{
	(void)a;
	(void)status;
	if (eventfd_write(efd, 1))
		abort();
}

static struct range_lock_async loop_req;

static void *loop_main(void *arg)
{
	int rounds = *(int *)arg;
	struct epoll_event ev;
	eventfd_t v;

	for (int i = 0; i < rounds; i++) {
		while (atomic_load(&phase) != 1)
			sched_yield();
		if (epoll_wait(ep, &ev, 1, -1) != 1)
			abort();
		t_seen = now_ns();
		if (eventfd_read(efd, &v))
			abort();
		range_write_unlock(&tree, &loop_req.lock);
		atomic_store(&phase, 2);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	int nhogs = argc > 2 ? atoi(argv[2]) : 0;
	pthread_t hogs[64];
	uint64_t *blocked, *callback, *loop;
	struct range_lock h;
	struct range_lock_async a;
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_t th;

	if (rounds < 10)
		rounds = 10;
	blocked = calloc((size_t)rounds, sizeof(uint64_t));
	callback = calloc((size_t)rounds, sizeof(uint64_t));
	loop = calloc((size_t)rounds, sizeof(uint64_t));
	efd = eventfd(0, EFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!blocked || !callback || !loop || efd < 0 || ep < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		return 2;
	range_lock_tree_init(&tree);
	range_lock_init(&h, 0, 0);
	if (nhogs < 0 || nhogs > 64)
		return 2;
	for (int i = 0; i < nhogs; i++)
		pthread_create(&hogs[i], NULL, hog_main, NULL);

	/* blocked */
	pthread_create(&th, NULL, blocked_main, &rounds);
	for (int i = 0; i < rounds; i++) {
		range_write_lock(&tree, &h);
		atomic_store(&phase, 1);
		sleep_us(1000); /* it waits, past its spin: asleep */
		t_release = now_ns();
		range_write_unlock(&tree, &h);
		while (atomic_load(&phase) != 2)
			sched_yield(); /* a spinning holder would delay a wake-up onto its CPU */
		blocked[i] = t_seen - t_release;
		atomic_store(&phase, 0);
	}
	pthread_join(th, NULL);

	/* callback */
	for (int i = 0; i < rounds; i++) {
		range_write_lock(&tree, &h);
		range_lock_async_init(&a, 0, 0, completion_callback, NULL);
		if (range_write_lock_async(&tree, &a) != -EINPROGRESS)
			return 1;
		t_release = now_ns();
		range_write_unlock(&tree, &h); /* runs the completion */
		callback[i] = t_seen - t_release;
		range_write_unlock(&tree, &a.lock);
	}

	/* loop */
	pthread_create(&th, NULL, loop_main, &rounds);
	for (int i = 0; i < rounds; i++) {
		range_write_lock(&tree, &h);
		range_lock_async_init(&loop_req, 0, 0, completion_post, NULL);
		if (range_write_lock_async(&tree, &loop_req) != -EINPROGRESS)
			return 1;
		atomic_store(&phase, 1);
		sleep_us(1000); /* the loop sleeps in epoll_wait() */
		t_release = now_ns();
		range_write_unlock(&tree, &h);
		while (atomic_load(&phase) != 2)
			sched_yield(); /* a spinning holder would delay a wake-up onto its CPU */
		loop[i] = t_seen - t_release;
		atomic_store(&phase, 0);
	}
	pthread_join(th, NULL);

	atomic_store(&hogs_stop, true);
	for (int i = 0; i < nhogs; i++)
		pthread_join(hogs[i], NULL);
	if (nhogs)
		printf("(with %d spinning threads besides)\n", nhogs);
	report("blocked", blocked, rounds);
	report("callback", callback, rounds);
	report("loop", loop, rounds);
	return range_lock_tree_destroy(&tree) ? 1 : 0;
}
