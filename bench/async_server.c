/* SPDX-License-Identifier: MIT */
/*
 * async_server - one event-loop thread serves many clients' range requests
 * on one tree without ever blocking, while other threads write under
 * blocking locks; the program checks its own results.
 *
 * The pattern (what an epoll, io_uring or libuv server does):
 *   - each client request is a struct range_lock_async; the loop submits it
 *     with range_read_lock_async() / range_write_lock_async(): held now (it
 *     serves it at once), or queued (-EINPROGRESS);
 *   - the completion runs on whichever thread's release granted the
 *     request -- a blocking writer's unlock, or the loop's own unlock of an
 *     earlier request -- and does nothing but push the request onto a
 *     lock-free list and write an eventfd;
 *   - the loop sleeps in epoll_wait() on that eventfd and a timerfd; woken,
 *     it serves the granted requests and unlocks them (which may grant
 *     more: their completions run right there, inside the unlock, and
 *     post to the same eventfd);
 *   - deadlines: the timerfd ticks every millisecond; a request queued for
 *     longer than --deadline-ms is withdrawn with range_lock_async_cancel()
 *     (0: it is the client's -ETIMEDOUT, resubmitted later; -EALREADY: it
 *     was granted meanwhile and its completion is on its way).
 *
 * The check: the resource is an array of counters.  Every write (the
 * loop's or a writer thread's) adds 1 to every counter of its range with a
 * load, a short pause and a store, and counts that in its own tally; at the
 * end every counter must equal the sum of the tallies (a lost update means
 * two writers overlapped).  Every read loads its range twice, around a
 * pause, and the two must agree (a writer got in under a reader).  Each
 * request must complete exactly once or be withdrawn.
 *
 * --no-lock: the loop serves its requests without locking: the checks
 * must fail (exit 1), which shows that they can.
 *
 * Usage: async_server [--duration S] [--clients N] [--writers N]
 *                     [--units N] [--deadline-ms M] [--slow-writes N]
 *                     [--no-lock] [--quiet]
 * --slow-writes N: every Nth blocking write holds its range 2 ms longer (a
 * slow device), so that queued requests pass their deadline.
 * Exit status: 0 when every check passed, 1 when one failed, 2 on usage
 * or system errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <rangelock/rangelock.h>

static double opt_duration = 2.0;
static int opt_clients = 64, opt_writers = 2, opt_deadline_ms = 5;
static unsigned opt_units = 256;
static int opt_slow_writes;             /* every Nth blocking write holds 2 ms */
static bool opt_no_lock, opt_quiet;

static struct range_lock_tree tree;
static uint64_t *counter;               /* the resource */
static atomic_bool stop_writers;
static int efd;                         /* completions -> loop */

struct client {
	struct range_lock_async req;    /* first: the completion gets &req */
	struct client *next;            /* the granted list */
	bool write, queued, idle;       /* idle: to submit its next request */
	unsigned completions;           /* calls of the completion */
	uint64_t submitted_ns;
	unsigned id;
};

static _Atomic(struct client *) granted_list; /* pushed by completions */
static atomic_ulong completion_calls;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void pause_a_little(void)
{
	for (volatile int i = 0; i < 50; i++)
		;
}

/* A write: +1 on every counter of [s, e], load-pause-store. */
static void do_write(uint64_t s, uint64_t e, uint64_t *tally)
{
	for (uint64_t u = s; u <= e; u++) {
		uint64_t v = __atomic_load_n(&counter[u], __ATOMIC_RELAXED);

		pause_a_little();
		__atomic_store_n(&counter[u], v + 1, __ATOMIC_RELAXED);
		tally[u]++;
	}
}

/* A read: the range twice; false if a writer changed it meanwhile. */
static bool do_read(uint64_t s, uint64_t e)
{
	uint64_t sum1 = 0, sum2 = 0;

	for (uint64_t u = s; u <= e; u++)
		sum1 += __atomic_load_n(&counter[u], __ATOMIC_RELAXED);
	pause_a_little();
	for (uint64_t u = s; u <= e; u++)
		sum2 += __atomic_load_n(&counter[u], __ATOMIC_RELAXED);
	return sum1 == sum2;
}

/* The completion: on the granting thread; push, notify, nothing more. */
static void completed(struct range_lock_async *a, int status)
{
	struct client *c = (struct client *)a;
	struct client *head = atomic_load_explicit(&granted_list, memory_order_relaxed);

	(void)status; /* 0: no file is bound to this tree */
	c->completions++;
	atomic_fetch_add_explicit(&completion_calls, 1, memory_order_relaxed);
	do
		c->next = head;
	while (!atomic_compare_exchange_weak_explicit(&granted_list, &head, c,
						      memory_order_release,
						      memory_order_relaxed));
	if (eventfd_write(efd, 1))
		die("eventfd_write");
}

/* ---- the blocking writers --------------------------------------------- */

struct writer {
	pthread_t th;
	uint64_t *tally;
	uint64_t ops, seed;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct range_lock lock;

	while (!atomic_load_explicit(&stop_writers, memory_order_relaxed)) {
		uint64_t s = rnd(&w->seed) % opt_units;
		uint64_t e = s + rnd(&w->seed) % 16;

		if (e >= opt_units)
			e = opt_units - 1;
		range_lock_init(&lock, s, e);
		range_write_lock(&tree, &lock);
		do_write(s, e, w->tally);
		if (opt_slow_writes && w->ops % (uint64_t)opt_slow_writes == 0)
			usleep(2000); /* a slow device: queued requests pass their deadline */
		range_write_unlock(&tree, &lock); /* may run completions */
		w->ops++;
	}
	return NULL;
}

/* ---- the loop ----------------------------------------------------------- */

static uint64_t *loop_tally;
static uint64_t served, served_at_once, queued_total, withdrawn, torn_reads;
static uint64_t seed = 88172645463325252ull;
static uint64_t *latency;               /* submission -> served, queued ones */
static size_t nlatency, caplatency;

static void serve(struct client *c)
{
	uint64_t s = c->req.lock.start, e = c->req.lock.last;

	if (c->write)
		do_write(s, e, loop_tally);
	else if (!do_read(s, e))
		torn_reads++;
	served++;
	if (!opt_no_lock) {
		if (c->write)
			range_write_unlock(&tree, &c->req.lock);
		else
			range_read_unlock(&tree, &c->req.lock);
	}
}

/* A client sends its next request; the loop submits it.  Served at once,
 * the client is idle: its next request comes in the next round. */
static void submit(struct client *c, bool stopping)
{
	uint64_t s, e;
	int r;

	c->idle = false;
	if (stopping)
		return;
	s = rnd(&seed) % opt_units;
	e = s + rnd(&seed) % 32;
	if (e >= opt_units)
		e = opt_units - 1;
	c->write = rnd(&seed) % 10 < 7;
	if (range_lock_async_init(&c->req, s, e, completed, c))
		die("range_lock_async_init");
	c->submitted_ns = now_ns();
	c->completions = 0;
	if (opt_no_lock) {
		served_at_once++;
		serve(c);
		c->idle = true;
		return;
	}
	r = c->write ? range_write_lock_async(&tree, &c->req)
		     : range_read_lock_async(&tree, &c->req);
	if (r == 0) {
		served_at_once++;
		serve(c);
		c->idle = true;
	} else if (r == -EINPROGRESS) {
		c->queued = true;
		queued_total++;
	} else {
		fprintf(stderr, "async_server: submission returned %d\n", r);
		exit(2);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct client *clients;
	struct writer *writers;
	struct epoll_event ev;
	struct itimerspec tick = { { 0, 1000000 }, { 0, 1000000 } };
	uint64_t end_ns, bad_counters = 0, bad_completions = 0, pending;
	int ep, tfd, failed = 0;
	bool stopping = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--duration") && i + 1 < argc)
			opt_duration = atof(argv[++i]);
		else if (!strcmp(argv[i], "--clients") && i + 1 < argc)
			opt_clients = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--writers") && i + 1 < argc)
			opt_writers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--units") && i + 1 < argc)
			opt_units = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--deadline-ms") && i + 1 < argc)
			opt_deadline_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--slow-writes") && i + 1 < argc)
			opt_slow_writes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-lock"))
			opt_no_lock = true;
		else if (!strcmp(argv[i], "--quiet"))
			opt_quiet = true;
		else {
			fprintf(stderr, "usage: async_server [--duration S] [--clients N] "
				"[--writers N] [--units N] [--deadline-ms M] [--slow-writes N] "
				"[--no-lock] [--quiet]\n");
			return 2;
		}
	}
	if (opt_clients < 1 || opt_writers < 0 || opt_units < 32 || opt_deadline_ms < 1 ||
	    opt_slow_writes < 0) {
		fprintf(stderr, "async_server: bad option value\n");
		return 2;
	}

	range_lock_tree_init(&tree);
	counter = calloc(opt_units, sizeof(*counter));
	loop_tally = calloc(opt_units, sizeof(*loop_tally));
	clients = calloc((size_t)opt_clients, sizeof(*clients));
	writers = calloc((size_t)opt_writers + 1, sizeof(*writers));
	if (!counter || !loop_tally || !clients || !writers)
		die("calloc");
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (efd < 0 || tfd < 0 || ep < 0)
		die("eventfd/timerfd/epoll");
	ev.events = EPOLLIN;
	ev.data.fd = efd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev))
		die("epoll_ctl");
	ev.data.fd = tfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) || timerfd_settime(tfd, 0, &tick, NULL))
		die("timerfd");

	for (int i = 0; i < opt_writers; i++) {
		writers[i].tally = calloc(opt_units, sizeof(uint64_t));
		writers[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (!writers[i].tally || pthread_create(&writers[i].th, NULL, writer_main, &writers[i]))
			die("writer");
	}

	end_ns = now_ns() + (uint64_t)(opt_duration * 1e9);
	for (int i = 0; i < opt_clients; i++) {
		clients[i].id = (unsigned)i;
		submit(&clients[i], false);
	}
	for (;;) {
		struct epoll_event evs[2];
		bool any_idle = false;
		int n;
		uint64_t t;

		for (int i = 0; i < opt_clients; i++)
			any_idle |= clients[i].idle && !stopping;
		n = epoll_wait(ep, evs, 2, any_idle ? 0 : 100);
		t = now_ns();

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		if (!stopping && t >= end_ns)
			stopping = true;
		for (int k = 0; k < n; k++) {
			uint64_t v;

			if (evs[k].data.fd == tfd) {
				/* Deadlines: withdraw what waited too long. */
				if (read(tfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
					die("read timerfd");
				for (int i = 0; i < opt_clients; i++) {
					struct client *c = &clients[i];

					if (!c->queued || t - c->submitted_ns <
					    (uint64_t)opt_deadline_ms * 1000000u)
						continue;
					if (range_lock_async_cancel(&tree, &c->req) == 0) {
						c->queued = false; /* its -ETIMEDOUT */
						withdrawn++;
						submit(c, stopping);
					}
					/* else -EALREADY: its completion is posted */
				}
				continue;
			}
			if (eventfd_read(efd, &v) && errno != EAGAIN)
				die("eventfd_read");
		}
		/* Serve what was granted (completions may add more meanwhile:
		 * the eventfd tells us again). */
		struct client *c = atomic_exchange_explicit(&granted_list, NULL,
							    memory_order_acquire);
		while (c) {
			struct client *next = c->next;

			if (c->completions != 1)
				bad_completions++;
			c->queued = false;
			if (caplatency == nlatency) {
				caplatency = caplatency ? 2 * caplatency : 4096;
				latency = realloc(latency, caplatency * sizeof(*latency));
				if (!latency)
					die("realloc");
			}
			latency[nlatency++] = now_ns() - c->submitted_ns;
			serve(c);
			submit(c, stopping);
			c = next;
		}
		pending = 0;
		for (int i = 0; i < opt_clients; i++) {
			if (clients[i].idle)
				submit(&clients[i], stopping);
			pending += clients[i].queued;
		}
		if (stopping && !pending)
			break;
	}
	atomic_store(&stop_writers, true);
	for (int i = 0; i < opt_writers; i++)
		pthread_join(writers[i].th, NULL);

	/* The checks. */
	for (unsigned u = 0; u < opt_units; u++) {
		uint64_t expect = loop_tally[u];

		for (int i = 0; i < opt_writers; i++)
			expect += writers[i].tally[u];
		bad_counters += counter[u] != expect;
	}
	if (atomic_load(&completion_calls) != queued_total - withdrawn)
		bad_completions++;
	if (!opt_no_lock && range_lock_tree_destroy(&tree))
		bad_completions++; /* something left in the tree */
	failed = bad_counters || torn_reads || bad_completions;

	qsort(latency, nlatency, sizeof(*latency), cmp_u64);
	if (!opt_quiet || failed) {
		uint64_t wops = 0;

		for (int i = 0; i < opt_writers; i++)
			wops += writers[i].ops;
		printf("async_server: %" PRIu64 " requests served by the loop (%" PRIu64
		       " held at once, %" PRIu64 " queued, %" PRIu64 " withdrawn at "
		       "their deadline), %" PRIu64 " blocking writes\n",
		       served, served_at_once, queued_total, withdrawn, wops);
		if (nlatency)
			printf("  queued request, submission to service: median %.1f us, "
			       "p99 %.1f us\n", latency[nlatency / 2] / 1e3,
			       latency[nlatency * 99 / 100] / 1e3);
		printf("  checks: %" PRIu64 " counters wrong, %" PRIu64 " torn reads, %" PRIu64
		       " bad completions: %s\n", bad_counters, torn_reads, bad_completions,
		       failed ? "FAILED" : "ok");
	}
	return failed ? 1 : 0;
}
