/* SPDX-License-Identifier: MIT */
/*
 * Wait/wake backend for systems without futex: a parking lot (see wait.h for
 * the contract).  Needs POSIX.1-2008 and threads, nothing more: this file is
 * compiled with -D_POSIX_C_SOURCE=200809L and without _GNU_SOURCE
 * (src/CMakeLists.txt), so a call outside POSIX fails the build.
 *
 * Each word hashes to one of the library's buckets: a mutex, a list of parked
 * records, and two condition variables, one on CLOCK_REALTIME and one on
 * CLOCK_MONOTONIC (pthread_condattr_setclock).  A waiter compares the word
 * with @expected under the bucket mutex and parks a record there; a waker
 * changes the word before it takes the mutex to unpark -- so no wake-up is
 * lost, as with a futex.  The waiter then sleeps:
 *   - deadline on CLOCK_REALTIME: pthread_cond_timedwait() on the realtime
 *     condition, so a wall-clock step moves the deadline with it (as
 *     FUTEX_CLOCK_REALTIME does in the futex backend);
 *   - deadline on CLOCK_MONOTONIC, or none: the monotonic condition;
 *     deadlines are passed as they are, never translated, so none overflows;
 *   - interruptible: poll() on the read end of the thread's own pipe (with
 *     a deadline, for the time left on its clock when the sleep starts:
 *     the library's interruptible waits with a deadline are short naps on
 *     CLOCK_MONOTONIC); the waker writes one byte.  Condition waits never fail with
 *     EINTR, and semaphore waits hide it on musl until the process installs
 *     a handler without SA_RESTART; poll() is never restarted (Linux, the
 *     BSDs, macOS), so every handler that runs ends it with EINTR.
 * rl_wake_one() unparks the first record of the word: marks it woken and
 * broadcasts its condition, or writes to its pipe.
 *
 * Lifetimes: the record lives on the waiter's stack, but the waker touches it
 * only under the bucket mutex, and the waiter takes that mutex before it
 * returns; conditions and pipes belong to the library (buckets, and one pipe
 * per thread, closed when the thread exits), never to the waiter's stack.  A
 * byte that arrives after an interruptible waiter gave up is read back under
 * the mutex, so the pipe is empty whenever its thread is not parked.
 *
 * Unexpected errors (EINVAL, a failed initialisation) print a message and
 * abort, as in the futex backend: looking again would spin forever.
 * Condition waits and poll() are cancellation points: cancellation is
 * disabled around them, as no wait here may be one (see wait.h).
 *
 * macOS lacks pthread_condattr_setclock(), so this file does not build there
 * as it is; see docs/testing.md, "Platforms, and what a port needs".
 */
#include "annotate.h"
#include "pin.h"
#include "wait.h"

#if !RANGELOCK_USE_FUTEX

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR_BUCKETS 256

struct parked {
	_Atomic uint32_t *word;
	pthread_cond_t *cond;     /* wake by broadcast here, or ... */
	int pipe_w;               /* ... by a byte here (-1: none) */
	struct parked *next;
	bool queued;              /* in the list: not woken yet */
};

struct bucket {
	pthread_mutex_t mutex;
	pthread_cond_t realtime;  /* waits with a CLOCK_REALTIME deadline */
	pthread_cond_t monotonic; /* waits on CLOCK_MONOTONIC or untimed */
	struct parked *head;
};

static struct bucket buckets[NR_BUCKETS];
/* Also the key of the one-time initialisation's edge for Helgrind and DRD
 * (annotate.h, 12), the pointer's width that they exclude from checking. */
static union {
	pthread_once_t once;
	void *key_bytes;
} buckets_once = { PTHREAD_ONCE_INIT };

/* The thread's pipe for interruptible waits: [0] read, [1] write; -1 until
 * first needed.  Closed by the key's destructor at thread exit. */
static _Thread_local int thread_pipe[2] = { -1, -1 };
static pthread_key_t thread_pipe_key;

static void die(const char *what, int err)
{
	fprintf(stderr, "librangelock: %s failed: %s\n", what, strerror(err));
	abort();
}

static void check(const char *what, int err)
{
	if (err)
		die(what, err);
}

static void buckets_init_all(void)
{
	pthread_condattr_t mono;

	check("pthread_condattr_init", pthread_condattr_init(&mono));
	check("pthread_condattr_setclock(CLOCK_MONOTONIC)",
	      pthread_condattr_setclock(&mono, CLOCK_MONOTONIC));
	for (int i = 0; i < NR_BUCKETS; i++) {
		check("pthread_mutex_init", pthread_mutex_init(&buckets[i].mutex, NULL));
		check("pthread_cond_init", pthread_cond_init(&buckets[i].realtime, NULL));
		check("pthread_cond_init", pthread_cond_init(&buckets[i].monotonic, &mono));
		buckets[i].head = NULL;
	}
	pthread_condattr_destroy(&mono);
}

static void thread_pipe_close(void *unused)
{
	(void)unused;
	close(thread_pipe[0]);
	close(thread_pipe[1]);
	thread_pipe[0] = thread_pipe[1] = -1;
}

/*
 * fork(): a parent thread may hold a bucket mutex at the moment of fork, and
 * its parked records stay in the lists.  The child has one thread and none
 * of those: it starts with fresh buckets, and with a pipe of its own (the
 * inherited one is shared with the parent).  (Taking all 256 mutexes around
 * fork instead would also work, but costs every fork and exceeds
 * ThreadSanitizer's limit of 64 locks held at once.)
 */
static void after_fork_in_child(void)
{
	buckets_init_all();
	if (thread_pipe[0] >= 0)
		thread_pipe_close(NULL);
}

static void buckets_init(void)
{
	buckets_init_all();
	/* The destructor is this copy's code: only once that stays mapped
	 * until every thread has exited (pin.c; a static copy in a plugin
	 * pins the plugin).  Otherwise a thread's pipe stays open after it
	 * exits (two descriptors per thread that waited interruptibly). */
	check("pthread_key_create", pthread_key_create(&thread_pipe_key,
						       rl_pin_self() ? thread_pipe_close : NULL));
	check("pthread_atfork", pthread_atfork(NULL, NULL, after_fork_in_child));
	rl_hb_release(&buckets_once); /* edge 12: pthread_once's own release follows */
}

static void thread_pipe_open(void)
{
	if (pipe(thread_pipe))
		die("pipe", errno);
	if (fcntl(thread_pipe[0], F_SETFD, FD_CLOEXEC) ||
	    fcntl(thread_pipe[1], F_SETFD, FD_CLOEXEC))
		die("fcntl", errno);
	check("pthread_setspecific", pthread_setspecific(thread_pipe_key, thread_pipe));
}

static struct bucket *bucket_of(_Atomic uint32_t *word)
{
	uintptr_t a = (uintptr_t)word;

	pthread_once(&buckets_once.once, buckets_init);
	rl_hb_acquire(&buckets_once); /* edge 12 */
	return &buckets[((a >> 2) ^ (a >> 12)) % NR_BUCKETS];
}

static void lock_bucket(struct bucket *b)
{
	check("pthread_mutex_lock", pthread_mutex_lock(&b->mutex));
}

static void unlock_bucket(struct bucket *b)
{
	check("pthread_mutex_unlock", pthread_mutex_unlock(&b->mutex));
}

static void unlink_parked(struct bucket *b, struct parked *me)
{
	struct parked **pp;

	for (pp = &b->head; *pp; pp = &(*pp)->next) {
		if (*pp == me) {
			*pp = me->next;
			break;
		}
	}
	me->queued = false;
}

/* @sec + @add, saturated at the largest time_t (a signed integer type). */
static time_t add_seconds(time_t sec, time_t add)
{
	const time_t max = (time_t)((((time_t)1 << (sizeof(time_t) * 8 - 2)) - 1) * 2 + 1);

	return sec > max - add ? max : sec + add;
}

void rl_far_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec = add_seconds(ts->tv_sec, 1000000); /* a timeout then is spurious */
}

/* Sleep on a condition until woken (0) or @deadline passed (-ETIMEDOUT);
 * called and returns with the bucket mutex held. */
static int sleep_on_cond(struct bucket *b, struct parked *me,
			 const struct timespec *deadline)
{
	int r = 0;

	while (me->queued) {
		r = deadline ? pthread_cond_timedwait(me->cond, &b->mutex, deadline)
			     : pthread_cond_wait(me->cond, &b->mutex);
		if (r == ETIMEDOUT)
			break;
		check("pthread_cond_timedwait", r);
	}
	if (!me->queued)
		return 0;
	unlink_parked(b, me);
	return -ETIMEDOUT;
}

/* Read the one byte a waker wrote to the thread's pipe. */
static void pipe_take_byte(void)
{
	char c;
	ssize_t n;

	while ((n = read(thread_pipe[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		die("read of the wake-up pipe", n < 0 ? errno : EIO);
}

/* Sleep on the thread's pipe until woken (0) or a signal handler ran
 * (-EINTR); called without the bucket mutex, returns with it held. */
/* poll()'s relative timeout for @abstime on @clockid: ms, rounded up; -1
 * without a deadline, 0 once it has passed, INT_MAX at most. */
static int poll_timeout_ms(clockid_t clockid, const struct timespec *abstime)
{
	struct timespec now;
	long long ms;

	if (!abstime)
		return -1;
	clock_gettime(clockid, &now);
	if (abstime->tv_sec - now.tv_sec > INT_MAX / 1000 - 1)
		return INT_MAX;
	ms = (long long)(abstime->tv_sec - now.tv_sec) * 1000 +
	     (abstime->tv_nsec - now.tv_nsec + 999999) / 1000000;
	return ms < 0 ? 0 : (int)ms;
}

/*
 * An interruptible wait: poll() on the thread's pipe, which every signal
 * handler ends with EINTR (a condition wait never reports one).  With a
 * deadline, poll() sleeps the remaining time, measured on @clockid when it
 * starts (a wall-clock step during the sleep is seen when it ends).
 */
static int sleep_on_pipe(struct bucket *b, struct parked *me, clockid_t clockid,
			 const struct timespec *abstime)
{
	struct pollfd pfd = { .fd = thread_pipe[0], .events = POLLIN };
	int n, err = 0;

	n = poll(&pfd, 1, poll_timeout_ms(clockid, abstime));
	if (n < 0) {
		err = errno;
		if (err != EINTR && err != EAGAIN)
			die("poll", err);
	}

	lock_bucket(b);
	if (me->queued)
		unlink_parked(b, me); /* no byte was written */
	else
		pipe_take_byte();     /* written under the mutex: it is there */
	if (err == EINTR)
		return -EINTR;
	if (n == 0 && abstime && poll_timeout_ms(clockid, abstime) == 0)
		return -ETIMEDOUT;
	return 0;
}

int rl_wait(_Atomic uint32_t *word, uint32_t expected, clockid_t clockid,
	    const struct timespec *abstime, unsigned flags)
{
	struct bucket *b = bucket_of(word);
	bool use_pipe = flags & RL_WAIT_INTERRUPTIBLE;
	struct parked me;
	int r, oldstate;

	if (abstime && abstime->tv_sec < 0)
		return -ETIMEDOUT; /* before the epoch: past, whatever the clock */
	if (use_pipe && thread_pipe[0] < 0)
		thread_pipe_open();

	lock_bucket(b);
	if (atomic_load_explicit(word, memory_order_relaxed) != expected) {
		unlock_bucket(b);
		return -EAGAIN;
	}
	me.word = word;
	me.cond = abstime && clockid == CLOCK_REALTIME ? &b->realtime : &b->monotonic;
	me.pipe_w = use_pipe ? thread_pipe[1] : -1;
	me.next = b->head;
	me.queued = true;
	b->head = &me;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	if (use_pipe) {
		unlock_bucket(b);
		r = sleep_on_pipe(b, &me, clockid, abstime);
	} else {
		r = sleep_on_cond(b, &me, abstime);
	}
	unlock_bucket(b);
	pthread_setcancelstate(oldstate, NULL);
	return r;
}

/* Under the bucket mutex: unpark @p, marked woken. */
static void unpark(struct bucket *b, struct parked *p)
{
	unlink_parked(b, p);
	if (p->pipe_w >= 0) {
		ssize_t n;

		while ((n = write(p->pipe_w, "", 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			die("write to a wake-up pipe", n < 0 ? errno : EIO);
	} else {
		check("pthread_cond_broadcast", pthread_cond_broadcast(p->cond));
	}
}

void rl_wake_one(_Atomic uint32_t *word)
{
	struct bucket *b = bucket_of(word);
	struct parked *p;

	lock_bucket(b);
	for (p = b->head; p; p = p->next) {
		if (p->word == word) {
			unpark(b, p);
			break;
		}
	}
	unlock_bucket(b);
}

int rl_wake_all(_Atomic uint32_t *word)
{
	struct bucket *b = bucket_of(word);
	struct parked *p, *next;
	int n = 0;

	lock_bucket(b);
	for (p = b->head; p; p = next) {
		next = p->next; /* read before the record is unlinked */
		if (p->word == word) {
			unpark(b, p);
			n++;
		}
	}
	unlock_bucket(b);
	return n;
}

#endif /* !RANGELOCK_USE_FUTEX */
