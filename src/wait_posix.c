/* SPDX-License-Identifier: MIT */
/*
 * Wait/wake backend for systems without futex: a parking lot (see wait.h for
 * the contract).  Each word hashes to a bucket with a mutex and a list of
 * parked threads; each thread sleeps on its own POSIX semaphore.
 *
 * No lost wake-up, for the same reason as with a futex: a waiter compares
 * the word with @expected under the bucket mutex before it parks, and a
 * waker changes the word before it takes the bucket mutex to unpark.
 *
 * The parked record lives on the waiter's stack; the waker dequeues it and
 * posts the semaphore under the bucket mutex, and the waiter takes the same
 * mutex before it returns, so nobody touches a record or a semaphore after
 * its thread has left.  A post that arrives after the waiter gave up (timeout,
 * signal) is drained under the mutex, so every sem_wait() return is ours.
 *
 * sem_clockwait()/sem_timedwait() report every signal handler with EINTR
 * (they are timed futex waits inside), so interruptible waits use them with
 * a far deadline.
 * sem_wait()/sem_clockwait() are cancellation points: cancellation is
 * disabled around them, as no wait here may be one (see wait.h).
 */
#include "wait.h"

#if !RANGELOCK_USE_FUTEX

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define USE_SEM_CLOCKWAIT 1
#else
#define USE_SEM_CLOCKWAIT 0
#endif

#if USE_SEM_CLOCKWAIT
#define SEM_CLOCK CLOCK_MONOTONIC
#else
#define SEM_CLOCK CLOCK_REALTIME
#endif

#define NR_BUCKETS 256

struct parked {
	_Atomic uint32_t *word;
	sem_t *sem;
	struct parked *next;
	bool queued;
};

struct bucket {
	pthread_mutex_t mutex;
	struct parked *head;
};

static struct bucket buckets[NR_BUCKETS] = {
	[0 ... NR_BUCKETS - 1] = { PTHREAD_MUTEX_INITIALIZER, NULL },
};

/*
 * fork(): a parent thread may hold a bucket mutex at the moment of fork,
 * and its parked records stay in the lists.  The child has one thread and
 * none of those: it starts with fresh buckets.  (Taking all 256 mutexes
 * around fork instead would also work, but costs every fork and exceeds
 * ThreadSanitizer's limit of 64 locks held at once.)
 */
static void buckets_reset_in_child(void)
{
	for (int i = 0; i < NR_BUCKETS; i++) {
		pthread_mutex_init(&buckets[i].mutex, NULL);
		buckets[i].head = NULL;
	}
}

__attribute__((constructor)) static void buckets_atfork(void)
{
	pthread_atfork(NULL, NULL, buckets_reset_in_child);
}

static _Thread_local sem_t thread_sem;
static _Thread_local bool thread_sem_ready;

static struct bucket *bucket_of(_Atomic uint32_t *word)
{
	uintptr_t a = (uintptr_t)word;
	return &buckets[((a >> 2) ^ (a >> 12)) % NR_BUCKETS];
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

/* Leave the bucket: unpark if nobody did, else drain the post we got. */
static void leave_bucket(struct bucket *b, struct parked *me, bool got_post)
{
	pthread_mutex_lock(&b->mutex);
	if (me->queued)
		unlink_parked(b, me);
	else if (!got_post)
		while (sem_trywait(me->sem) != 0 && errno == EINTR)
			;
	pthread_mutex_unlock(&b->mutex);
}

/* Sleep on @sem until posted or the deadline (NULL: none); returns 0 or
 * the errno.  glibc 2.30+ waits on the deadline's own clock, elsewhere the
 * deadline was translated to CLOCK_REALTIME (a wall-clock step then moves
 * it).  Both report every signal handler as EINTR (timed futex waits). */
static int sleep_on(sem_t *sem, const struct timespec *deadline)
{
	int r;

	if (!deadline)
		r = sem_wait(sem);
#if USE_SEM_CLOCKWAIT
	else
		r = sem_clockwait(sem, CLOCK_MONOTONIC, deadline);
#else
	else
		r = sem_timedwait(sem, deadline);
#endif
	return r ? errno : 0;
}

void rl_far_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += 1000000;
}

/*
 * Translate the deadline @abstime on clock @from into one on clock @to
 * (sem_clockwait() takes CLOCK_MONOTONIC, sem_timedwait() CLOCK_REALTIME).
 * Deadlines more than ~30 years away are clamped, so nothing overflows; a
 * clock step between the two clocks moves the translated deadline, so the
 * caller trusts only @from to decide that the deadline passed.
 */
static void translate_deadline(clockid_t from, const struct timespec *abstime,
			       clockid_t to, struct timespec *out)
{
	struct timespec now_from, now_to;
	long long ns, secs;

	if (from == to) {
		*out = *abstime;
		return;
	}
	clock_gettime(from, &now_from);
	clock_gettime(to, &now_to);
	secs = (long long)abstime->tv_sec - (long long)now_from.tv_sec;
	if (secs > 1000000000LL)
		secs = 1000000000LL;
	ns = secs * 1000000000LL + (abstime->tv_nsec - now_from.tv_nsec);
	if (ns < 0)
		ns = 0;
	ns += now_to.tv_nsec;
	out->tv_sec = now_to.tv_sec + ns / 1000000000LL;
	out->tv_nsec = ns % 1000000000LL;
}

static bool deadline_passed(clockid_t clockid, const struct timespec *abstime)
{
	struct timespec now;

	clock_gettime(clockid, &now);
	return now.tv_sec > abstime->tv_sec ||
	       (now.tv_sec == abstime->tv_sec && now.tv_nsec >= abstime->tv_nsec);
}

int rl_wait(_Atomic uint32_t *word, uint32_t expected, clockid_t clockid,
	    const struct timespec *abstime, unsigned flags)
{
	struct bucket *b = bucket_of(word);
	struct parked me;
	struct timespec far, converted, *deadline = NULL;
	int err, oldstate;

	if (abstime && abstime->tv_sec < 0)
		return -ETIMEDOUT; /* before the epoch: past, whatever the clock */
	if (!thread_sem_ready) {
		sem_init(&thread_sem, 0, 0);
		thread_sem_ready = true;
	}
	if (!abstime && (flags & RL_WAIT_INTERRUPTIBLE)) {
		rl_far_deadline(&far);
		abstime = &far;
		clockid = CLOCK_MONOTONIC;
	}

	pthread_mutex_lock(&b->mutex);
	if (atomic_load_explicit(word, memory_order_relaxed) != expected) {
		pthread_mutex_unlock(&b->mutex);
		return -EAGAIN;
	}
	me.word = word;
	me.sem = &thread_sem;
	me.next = b->head;
	me.queued = true;
	b->head = &me;
	pthread_mutex_unlock(&b->mutex);

	if (abstime) {
		translate_deadline(clockid, abstime, SEM_CLOCK, &converted);
		deadline = &converted;
	}
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	err = sleep_on(&thread_sem, deadline);
	pthread_setcancelstate(oldstate, NULL);
	leave_bucket(b, &me, err == 0);

	if (err == EINTR)
		return -EINTR;
	if (err == ETIMEDOUT) {
		/* The realtime clock may have jumped: trust only @clockid. */
		if (abstime == &far || !deadline_passed(clockid, abstime))
			return 0;
		return -ETIMEDOUT;
	}
	return 0;
}

void rl_wake_one(_Atomic uint32_t *word)
{
	struct bucket *b = bucket_of(word);
	struct parked *p;

	pthread_mutex_lock(&b->mutex);
	for (p = b->head; p; p = p->next) {
		if (p->word == word) {
			unlink_parked(b, p);
			sem_post(p->sem);
			break;
		}
	}
	pthread_mutex_unlock(&b->mutex);
}

#endif /* !RANGELOCK_USE_FUTEX */
