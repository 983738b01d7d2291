/* SPDX-License-Identifier: MIT */
/*
 * The wait/wake backend: block while a 32-bit word holds an expected value,
 * and wake a thread blocked on a word.  One contract, two implementations
 * chosen at configure time: Linux private futexes (wait_futex.c) and a
 * POSIX.1-2008 parking lot (wait_posix.c).  Deadlines are the C library's
 * struct timespec, 64-bit time_t wherever the C library offers it (the
 * library is built with _TIME_BITS=64); each backend converts to what its
 * wait takes.
 *
 * rl_wait() returns
 *   0          woken, or spuriously: the caller must look at the word again;
 *   -EAGAIN    the word did not hold @expected on entry;
 *   -EINTR     a signal handler ran (always reported, with or without
 *              SA_RESTART, when RL_WAIT_INTERRUPTIBLE is set; may also be
 *              returned without it, and then means "look again");
 *   -ETIMEDOUT @abstime (on @clockid) has passed; a deadline with a
 *              negative tv_sec has always passed (at once, without sleeping:
 *              the kernel rejects it with EINVAL).
 * The backend gives no memory ordering: callers read the word with acquire
 * order and writers change it with release order before they wake.
 *
 * A wait is never a pthread cancellation point: the killable calls get
 * theirs from pthread_testcancel() between bounded waits (waiting.c).
 */
#ifndef RANGELOCK_WAIT_H
#define RANGELOCK_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define RL_WAIT_INTERRUPTIBLE 1u

/*
 * A timed call's deadline.  Every public timed call checks it first, before
 * it looks at the range (-EINVAL even when the range is free, as glibc's
 * pthread_rwlock_clockwrlock() does; POSIX allows either); the levels below
 * (the local waits and a bound tree's OFD polling, file_lock.c) check it
 * again when they would wait, for their internal callers.
 * POSIX: only a tv_nsec outside [0, 1000 million) makes a deadline invalid.
 * A negative tv_sec is a time long past (-ETIMEDOUT, as glibc's tst-abstime
 * checks); the wait backends report it without sleeping (below).
 */
static inline bool timespec_valid(clockid_t clockid, const struct timespec *abstime)
{
	return (clockid == CLOCK_MONOTONIC || clockid == CLOCK_REALTIME) &&
	       abstime && abstime->tv_nsec >= 0 &&
	       abstime->tv_nsec < 1000000000L;
}

int rl_wait(_Atomic uint32_t *word, uint32_t expected, clockid_t clockid,
	    const struct timespec *abstime, unsigned flags);
void rl_wake_one(_Atomic uint32_t *word);
/* Wakes every thread waiting on @word; returns how many it woke (the POSIX
 * backend: how many it unparked). */
int rl_wake_all(_Atomic uint32_t *word);

/* A deadline far enough away to mean "never", on CLOCK_MONOTONIC; used when
 * a wait must be timed only so that the kernel reports every signal. */
void rl_far_deadline(struct timespec *ts);

static inline void rl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* RANGELOCK_WAIT_H */
