/* SPDX-License-Identifier: MIT */
/*
 * Wait/wake backend on Linux private futexes (see wait.h for the contract).
 *
 * FUTEX_WAIT_BITSET takes an absolute deadline on CLOCK_MONOTONIC, or on
 * CLOCK_REALTIME with FUTEX_CLOCK_REALTIME.  An untimed futex wait is
 * restarted by the kernel after a SA_RESTART handler; a timed one always
 * returns EINTR.  So an interruptible wait without a deadline waits with a
 * far deadline.  FUTEX_PRIVATE_FLAG always: a private key is only (address
 * space, address), so a wake that lands on a reused stack word is harmless.
 * syscall() is not a cancellation point, so no wait here is one.
 */
#include "wait.h"

#if RANGELOCK_USE_FUTEX

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void rl_far_deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += 1000000; /* about 11 days; a timeout then is spurious */
}

int rl_wait(_Atomic uint32_t *word, uint32_t expected, clockid_t clockid,
	    const struct timespec *abstime, unsigned flags)
{
	struct timespec far;
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;
	int synthetic = 0, err;
	long r;

	if (abstime && abstime->tv_sec < 0)
		return -ETIMEDOUT; /* before the epoch: past (futex says EINVAL) */
	if (!abstime && (flags & RL_WAIT_INTERRUPTIBLE)) {
		rl_far_deadline(&far);
		abstime = &far;
		clockid = CLOCK_MONOTONIC;
		synthetic = 1;
	}
	if (abstime && clockid == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;

	r = syscall(SYS_futex, word, op, expected, abstime, NULL,
		    FUTEX_BITSET_MATCH_ANY);
	err = errno;
	if (r == 0)
		return 0;
	switch (err) {
	case EAGAIN:
		return -EAGAIN;
	case EINTR:
		return -EINTR;
	case ETIMEDOUT:
		return synthetic ? 0 : -ETIMEDOUT;
	default:
		/* EFAULT/EINVAL: a bug of ours; ENOSYS: futex is blocked (seccomp).
		 * Looking again would spin forever: stop loudly instead. */
		fprintf(stderr, "librangelock: futex wait failed: %s\n", strerror(err));
		abort();
	}
}

void rl_wake_one(_Atomic uint32_t *word)
{
	/* EFAULT cannot happen on a mapped word and would be harmless. */
	syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

#endif /* RANGELOCK_USE_FUTEX */
