/* SPDX-License-Identifier: MIT */
/*
 * A correctly locked program for race detectors (ThreadSanitizer, Helgrind,
 * DRD), linked against the normal, uninstrumented librangelock: the tools
 * must report nothing.  Built with -DRACY=1 it has exactly two races: on
 * `unguarded`, written by two threads before either takes any range, and on
 * `fast_unguarded`, written by two fast readers of one range (readers share
 * it: nothing orders them): the tools must report both every run (the
 * annotations hide no real race, and fast readers do not order each other).
 *
 * It covers writers and readers on overlapping ranges, a writer on a
 * disjoint range, waits long enough to sleep on the futex, downgrade,
 * trylock, timedlock (granted, and one that times out), an asynchronous
 * request granted by another thread's release and served by a third.  Short on purpose:
 * it also runs under Valgrind.  Exit 0 when every count is right.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

#ifndef RACY
#define RACY 0
#endif

#define UNITS 412
#define ITER 24
#define NTHREADS 6

static DEFINE_RANGE_LOCK_TREE(tree);
static int data[UNITS];                 /* protected by ranges of `tree` */
static int added[NTHREADS][UNITS];      /* each thread's own increments */
static long reads[NTHREADS];
#if RACY
int unguarded;                          /* the first deliberate race */
int fast_unguarded;                     /* the second: among fast readers */

/* The tests look for these names in the tools' reports. */
static __attribute__((noinline)) void race_here(int v)
{
	unguarded = v;
}

static __attribute__((noinline)) void fast_race_here(int v)
{
	fast_unguarded = v;
}
#endif

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void deadline(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void add(int self, uint64_t first, uint64_t last)
{
	for (uint64_t i = first; i <= last; i++) {
		data[i]++;
		added[self][i]++;
	}
}

static long sum(uint64_t first, uint64_t last)
{
	long s = 0;

	for (uint64_t i = first; i <= last; i++)
		s += data[i];
	return s;
}

/* Writers 0 and 1: overlapping ranges; every third hold lasts long enough
 * that the other waiters go to sleep on the futex. */
static void writer(int self)
{
	struct range_lock r;

#if RACY
	race_here(self); /* before any range: nothing orders the two writes */
#endif
	for (int i = 0; i < ITER; i++) {
		uint64_t first = (uint64_t)(self * 16 + (i % 2) * 32);

		range_lock_init(&r, first, first + 63);
		range_write_lock(&tree, &r);
		add(self, first, first + 63);
		if (i % 3 == 0)
			pause_us(300);
		range_write_unlock(&tree, &r);
	}
}

/* Readers 2 and 3: the whole overlapping part; 3 uses timed reads. */
static void reader(int self)
{
	struct range_lock r;
	struct timespec ts;

	for (int i = 0; i < ITER; i++) {
		range_lock_init(&r, 0, 127);
		if (self == 3) {
			deadline(&ts, 10000);
			if (range_read_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts))
				abort();
		} else {
			range_read_lock(&tree, &r);
		}
		reads[self] += sum(0, 127);
		range_read_unlock(&tree, &r);
	}
}

/* Thread 4: trylock, then downgrade (readers behind it run), then a timed
 * write lock. */
static void try_downgrade(int self)
{
	struct range_lock r;
	struct timespec ts;

	for (int i = 0; i < ITER / 2; i++) {
		range_lock_init(&r, 64, 127);
		while (!range_write_trylock(&tree, &r))
			sched_yield();
		add(self, 64, 127);
		pause_us(100);
		range_downgrade_write(&tree, &r);
		reads[self] += sum(64, 127);
		range_read_unlock(&tree, &r);

		range_lock_init(&r, 0, 31);
		deadline(&ts, 10000);
		if (range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts))
			abort();
		add(self, 0, 31);
		range_write_unlock(&tree, &r);
	}
}

/* Thread 5: a disjoint range, never waits for the others. */
static void disjoint(int self)
{
	struct range_lock r;

	for (int i = 0; i < ITER; i++) {
		range_lock_init(&r, 200, 299);
		range_write_lock(&tree, &r);
		add(self, 200, 299);
		range_write_unlock(&tree, &r);
	}
}

static void *run(void *arg)
{
	int self = (int)(long)arg;

	if (self < 2)
		writer(self);
	else if (self < 4)
		reader(self);
	else if (self == 4)
		try_downgrade(self);
	else
		disjoint(self);
	return NULL;
}

/*
 * Deterministic hand-offs, before the mixed workload: main holds [400, 401]
 * (the fast path: the tree is empty), a writer of [400] and a reader of
 * [401] queue behind it (main waits until the tree shows both waiting),
 * then main writes both units, downgrades (granting the reader) and
 * unlocks (granting the writer).  The waiters' accesses are ordered after
 * main's only by those two grants, so a grant the tools are not told about
 * is reported every run.
 */
static void *handoff_writer(void *arg)
{
	struct range_lock r;

	(void)arg;
	range_lock_init(&r, 400, 400);
	range_write_lock(&tree, &r);
	data[400]++;
	range_write_unlock(&tree, &r);
	return NULL;
}

static void *handoff_reader(void *arg)
{
	struct range_lock r;
	long v;

	(void)arg;
	range_lock_init(&r, 401, 401);
	range_read_lock(&tree, &r);
	v = data[401];
	range_read_unlock(&tree, &r);
	return (void *)v;
}

static int waiting_in_tree(void)
{
	char *buf = NULL;
	size_t len = 0;
	int n = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	range_lock_tree_dump(&tree, f);
	fclose(f);
	for (char *p = buf; (p = strstr(p, " waiting ")); p++)
		n++;
	free(buf);
	return n;
}

/*
 * Through the fast path alone: with the tree otherwise empty, one thread
 * writes [402] once while another polls it; each lock is a fast hold and
 * each unlock a fast release, and only those order the two threads.
 */
static void *fast_writer(void *arg)
{
	struct range_lock r;

	(void)arg;
	pause_us(2000);
	range_lock_init(&r, 402, 402);
	range_write_lock(&tree, &r);
	data[402] = 5;
	range_write_unlock(&tree, &r);
	return NULL;
}

static void *fast_poller(void *arg)
{
	struct range_lock r;
	int v;

	(void)arg;
	do {
		pause_us(1000);
		range_lock_init(&r, 402, 402);
		range_read_lock(&tree, &r);
		v = data[402];
		range_read_unlock(&tree, &r);
	} while (v != 5);
	return NULL;
}

/*
 * Displacing a fast holder: one thread fast-holds [403] for a while, another
 * locks the disjoint [404] meanwhile and so inserts the holder's request
 * into the tree, writing fields the holder wrote just before its fast CAS.
 * Only that CAS orders them (the library's own accesses: Helgrind and DRD
 * see them, ThreadSanitizer does not instrument the library).
 */
static void *fast_holder(void *arg)
{
	struct range_lock r;

	range_lock_init(&r, (uint64_t)(long)arg, (uint64_t)(long)arg);
	pause_us(arg == (void *)403 ? 0 : 5000);
	range_write_lock(&tree, &r);
	data[(long)arg]++;
	pause_us(arg == (void *)403 ? 20000 : 0);
	range_write_unlock(&tree, &r);
	return NULL;
}

static int handoffs(void)
{
	pthread_t fw, fp;
	pthread_t w, r;
	struct range_lock hold;
	void *seen;

	range_lock_init(&hold, 400, 401);
	range_write_lock(&tree, &hold);
	if (pthread_create(&w, NULL, handoff_writer, NULL) ||
	    pthread_create(&r, NULL, handoff_reader, NULL))
		abort();
	while (waiting_in_tree() < 2)
		pause_us(1000);
	pause_us(2000); /* let them go to sleep on the futex */
	data[400]++;
	data[401] = 7;
	range_downgrade_write(&tree, &hold);  /* grants the reader */
	pthread_join(r, &seen);
	range_read_unlock(&tree, &hold);      /* grants the writer */
	pthread_join(w, NULL);
	if ((long)seen != 7 || data[400] != 2) {
		fprintf(stderr, "tools_prog: hand-offs saw %ld, %d\n", (long)seen, data[400]);
		return 1;
	}
	if (pthread_create(&fw, NULL, fast_writer, NULL) ||
	    pthread_create(&fp, NULL, fast_poller, NULL))
		abort();
	pthread_join(fw, NULL);
	pthread_join(fp, NULL);
	if (pthread_create(&fw, NULL, fast_holder, (void *)403) ||
	    pthread_create(&fp, NULL, fast_holder, (void *)404))
		abort();
	pthread_join(fw, NULL);
	pthread_join(fp, NULL);
	return 0;
}

/*
 * The reader fast path (issue 13), on a tree of its own.  While no writer
 * uses a tree, readers publish their ranges in per-thread slots and never
 * take its internal lock, so edges 1-2 order nothing; each step below is
 * ordered only by a fast-path edge the tools must be told about:
 *   1. a fast reader's release, then a writer whose revocation scans the
 *      released slot (the reader's read happens before the writer's write);
 *   2. a writer's unlock, then the bias set again by a slow-path reader
 *      (main), then a fast reader of another thread that sees the bias
 *      (it must see the writer's data);
 *   3. a writer that revokes a fast hold, moves it into the tree and waits
 *      for it (Helgrind and DRD see the library's own accesses to the slot
 *      and the request).
 * The threads are sequenced by sleeps, which order nothing for the tools.
 * A request's owner_tid has bit 31 set when the fast path holds it.
 */
static DEFINE_RANGE_LOCK_TREE(ftree);
static int fdata[8];                    /* protected by ranges of `ftree` */

#define FAST_TAG 0x80000000u

/* Read until a hold is fast (the tree is biased); 0 if never.  An anchor
 * read is held meanwhile: a lone reader of an empty tree holds it through
 * the lock word and never reaches the read slow path that biases. */
static int bias_ftree(void)
{
	struct range_lock anchor, r;
	unsigned fast = 0;

	range_lock_init(&anchor, 6, 6);
	range_read_lock(&ftree, &anchor);
	fast = anchor.owner_tid & FAST_TAG; /* biased already */
	for (int i = 0; i < 100000 && !fast; i++) {
		range_lock_init(&r, 7, 7);
		range_read_lock(&ftree, &r);
		fast = r.owner_tid & FAST_TAG;
		range_read_unlock(&ftree, &r);
	}
	range_read_unlock(&ftree, &anchor);
	return fast != 0;
}

struct fast_reader {
	uint64_t unit;
	long delay_us;     /* before the lock */
	long hold_us;      /* inside */
	long after_us;     /* after the unlock, before returning */
	int want;          /* poll until this value (-1: read once) */
	int seen, fast;
	int racy;
};

static void *fast_reader_main(void *arg)
{
	struct fast_reader *f = arg;
	struct range_lock r;

	pause_us(f->delay_us);
	for (int i = 0; i < 2000; i++) {
		range_lock_init(&r, f->unit, f->unit);
		range_read_lock(&ftree, &r);
		f->fast = (r.owner_tid & FAST_TAG) != 0;
		f->seen = fdata[f->unit];
#if RACY
		if (f->racy)
			fast_race_here((int)f->unit); /* a write under a READ lock */
#endif
		pause_us(f->hold_us);
		range_read_unlock(&ftree, &r);
		if (f->want < 0 || f->seen == f->want)
			break;
		pause_us(5000);
	}
	pause_us(f->after_us);
	return NULL;
}

static void fwrite_unit(uint64_t unit, int v)
{
	struct range_lock w;

	range_lock_init(&w, unit, unit);
	range_write_lock(&ftree, &w);
	fdata[unit] = v;
	range_write_unlock(&ftree, &w);
}

static int fast_phase(void)
{
	struct fast_reader f1 = { 1, 0, 0, 0, -1, 0, 0, 0 };
	struct fast_reader f2 = { 3, 300000, 0, 0, 11, 0, 0, 0 };
	struct fast_reader f3 = { 2, 0, 20000, 0, -1, 0, 0, 0 };
	pthread_t th;
	int bad = 0;

	if (!bias_ftree()) {
		fprintf(stderr, "tools_prog: the fast-read tree was never biased\n");
		return 1;
	}
	/* 1: f1 reads [1] fast and unlocks; main then writes it. */
	if (pthread_create(&th, NULL, fast_reader_main, &f1))
		abort();
	pause_us(50000);
	fwrite_unit(1, 9);
	pthread_join(th, NULL);
	/* 2: f2 sleeps; main writes [3], biases the tree again; f2 reads. */
	if (pthread_create(&th, NULL, fast_reader_main, &f2))
		abort();
	fwrite_unit(3, 11);
	bad |= !bias_ftree();
	pthread_join(th, NULL);
	/* 3: f3 fast-holds [2] for a while; main's write revokes and waits. */
	bad |= !bias_ftree();
	if (pthread_create(&th, NULL, fast_reader_main, &f3))
		abort();
	pause_us(5000);
	fwrite_unit(2, 13);
	pthread_join(th, NULL);
	/* Each reader reads before main's write, or (when the machine is
	 * too busy for the sleeps above) after it: both are right. */
	if (bad || (f1.seen != 0 && f1.seen != 9) || f2.seen != 11 ||
	    (f3.seen != 0 && f3.seen != 13) || fdata[1] != 9 || fdata[2] != 13 ||
	    fdata[3] != 11) {
		fprintf(stderr, "tools_prog: fast phase: bias %d, seen %d %d %d\n",
			!bad, f1.seen, f2.seen, f3.seen);
		bad = 1;
	}
	printf("tools_prog: fast phase: reads fast %d %d %d (the edges are tested"
	       " when 1 1 1)\n", f1.fast, f2.fast, f3.fast);
#if RACY
	{
		/* Two fast readers of [5] both write fast_unguarded; the first
		 * stays alive until the second is done (a slot freed at its exit
		 * and claimed by the second would be a real edge). */
		struct fast_reader a = { 5, 0, 0, 100000, -1, 0, 0, 1 };
		struct fast_reader b = { 5, 20000, 0, 0, -1, 0, 0, 1 };
		pthread_t ta, tb;

		bad |= !bias_ftree();
		if (pthread_create(&ta, NULL, fast_reader_main, &a) ||
		    pthread_create(&tb, NULL, fast_reader_main, &b))
			abort();
		pthread_join(ta, NULL);
		pthread_join(tb, NULL);
		if (!a.fast || !b.fast) {
			fprintf(stderr, "tools_prog: racy fast readers not fast: %d %d\n",
				a.fast, b.fast);
			bad = 1;
		}
	}
#endif
	if (range_lock_tree_destroy(&ftree)) {
		fprintf(stderr, "tools_prog: fast-read tree not empty\n");
		bad = 1;
	}
	return bad;
}

/*
 * The first fast reads of the process, on two threads that nothing else
 * orders: one biases ftree and so claims the first slot (which makes the
 * library's per-thread slot key), the other polls until its read is fast
 * and claims the second (reading that key).  Only the library's one-time
 * initialisation orders the two: a tool not told about it reports a race
 * on the key every run.  This must be the first fast read of the process
 * (main runs it first).
 */
struct first_claim {
	int fast;
};

static void *first_claim_biaser(void *arg)
{
	struct first_claim *c = arg;

	c->fast = bias_ftree();
	return NULL;
}

static void *first_claim_poller(void *arg)
{
	struct first_claim *c = arg;
	struct range_lock r;

	for (int i = 0; i < 4000 && !c->fast; i++) {
		pause_us(1000);
		range_lock_init(&r, 0, 0);
		range_read_lock(&ftree, &r);
		c->fast = (r.owner_tid & FAST_TAG) != 0;
		range_read_unlock(&ftree, &r);
	}
	return NULL;
}

static int first_claims(void)
{
	struct first_claim a = { 0 }, b = { 0 };
	pthread_t ta, tb;

	if (pthread_create(&ta, NULL, first_claim_biaser, &a) ||
	    pthread_create(&tb, NULL, first_claim_poller, &b))
		abort();
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	if (!a.fast || !b.fast) {
		fprintf(stderr, "tools_prog: first claims not fast: %d %d\n", a.fast, b.fast);
		return 1;
	}
	return 0;
}

/*
 * An asynchronous request for [410, 411], queued behind main's hold of
 * [410] and thread A's of [411]; whichever unlocks last grants it and runs
 * the completion, which updates both units and hands the request to thread
 * C (a mutex and condition variable, as an event loop's queue would), which
 * updates them again and unlocks.  Each update is ordered after the
 * other's only by the library's edges (tree_lock, the grant).
 */
static pthread_mutex_t async_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t async_cv = PTHREAD_COND_INITIALIZER;
static int async_step;                  /* 1: A holds, 2: go, 3: completed */
static struct range_lock_async async_req;

static void async_done(struct range_lock_async *a, int status)
{
	if (status)
		abort();
	data[410]++;
	data[411]++;
	pthread_mutex_lock(&async_mu);
	async_step = 3;
	pthread_cond_broadcast(&async_cv);
	pthread_mutex_unlock(&async_mu);
	(void)a;
}

static void async_wait_step(int step)
{
	pthread_mutex_lock(&async_mu);
	while (async_step < step)
		pthread_cond_wait(&async_cv, &async_mu);
	pthread_mutex_unlock(&async_mu);
}

static void async_set_step(int step)
{
	pthread_mutex_lock(&async_mu);
	async_step = step;
	pthread_cond_broadcast(&async_cv);
	pthread_mutex_unlock(&async_mu);
}

static void *async_holder(void *arg)
{
	struct range_lock r;

	(void)arg;
	range_lock_init(&r, 411, 411);
	range_write_lock(&tree, &r);
	async_set_step(1);
	async_wait_step(2);
	data[411]++;
	range_write_unlock(&tree, &r);
	return NULL;
}

static void *async_server(void *arg)
{
	(void)arg;
	async_wait_step(3);
	data[410]++;
	data[411]++;
	range_write_unlock(&tree, &async_req.lock);
	return NULL;
}

static int async_phase(void)
{
	struct range_lock r;
	pthread_t a, c;
	int ret;

	range_lock_init(&r, 410, 410);
	range_write_lock(&tree, &r);
	if (pthread_create(&a, NULL, async_holder, NULL) ||
	    pthread_create(&c, NULL, async_server, NULL))
		abort();
	async_wait_step(1);
	range_lock_async_init(&async_req, 410, 411, async_done, NULL);
	ret = range_write_lock_async(&tree, &async_req);
	async_set_step(2);
	data[410]++;
	range_write_unlock(&tree, &r);
	pthread_join(a, NULL);
	pthread_join(c, NULL);
	if (ret != -EINPROGRESS) {
		fprintf(stderr, "tools_prog: asynchronous request returned %d\n", ret);
		return 1;
	}
	return 0;
}

/* A timed wait that gives up: main holds [300, 300] meanwhile. */
static void *give_up(void *arg)
{
	struct range_lock r;
	struct timespec ts;

	(void)arg;
	range_lock_init(&r, 300, 300);
	deadline(&ts, 20);
	return (void *)(long)range_write_timedlock(&tree, &r, CLOCK_MONOTONIC, &ts);
}

int main(void)
{
	pthread_t th[NTHREADS], late;
	struct range_lock hold;
	void *ret;
	int bad;

	alarm(120); /* watchdog: Valgrind is slow, but not that slow */
	bad = first_claims();
	bad |= handoffs();
	bad |= fast_phase();
	bad |= async_phase();
	range_lock_init(&hold, 300, 300);
	range_write_lock(&tree, &hold);
	if (pthread_create(&late, NULL, give_up, NULL))
		abort();
	for (long t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, run, (void *)t))
			abort();
	pthread_join(late, &ret);
	data[300]++;
	range_write_unlock(&tree, &hold);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);

	if ((long)ret != -ETIMEDOUT) {
		fprintf(stderr, "tools_prog: timed wait returned %ld\n", (long)ret);
		bad = 1;
	}
	for (int i = 0; i < UNITS; i++) {
		int want = i == 300 || i == 403 || i == 404 ? 1 : i == 400 ? 2 :
			   i == 401 ? 7 : i == 402 ? 5 : i == 410 || i == 411 ? 3 : 0;

		for (int t = 0; t < NTHREADS; t++)
			want += added[t][i];
		if (data[i] != want) {
			fprintf(stderr, "tools_prog: data[%d] = %d, want %d\n", i, data[i], want);
			bad = 1;
		}
	}
	if (range_lock_tree_destroy(&tree)) {
		fprintf(stderr, "tools_prog: tree not empty\n");
		bad = 1;
	}
#if RACY
	printf("tools_prog: unguarded = %d at %p\n", unguarded, (void *)&unguarded);
	printf("tools_prog: fast_unguarded = %d at %p\n", fast_unguarded,
	       (void *)&fast_unguarded);
#endif
	printf("tools_prog: %s (reads %ld)\n", bad ? "FAILED" : "ok",
	       reads[2] + reads[3] + reads[4]);
	return bad;
}
