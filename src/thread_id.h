/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's id, cached per thread (thread_id.c resets the cache
 * in the child of fork()): the owner of a request (owner_tid), and the
 * thread of the checking mode's hold registry (checks.c).  Inline: every
 * lock call that does not read fast reads it before its fast path.
 */
#ifndef RANGELOCK_THREAD_ID_H
#define RANGELOCK_THREAD_ID_H

#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fast_read.h"

/* initial-exec: a plain %fs-relative load, no __tls_get_addr() call on the
 * hot path of a shared library. */
extern _Thread_local uint32_t rl_cached_tid __attribute__((tls_model("initial-exec"))) RL_HIDDEN;

static inline uint32_t rl_thread_id(void)
{
	/* Masked: a failing gettid() (-1, e.g. under seccomp) must not look
	 * like a fast read's slot tag (fast_read.h). */
	if (__builtin_expect(!rl_cached_tid, 0))
		rl_cached_tid = (uint32_t)syscall(SYS_gettid) & ~RL_SLOT_TAG;
	return rl_cached_tid;
}

#endif /* RANGELOCK_THREAD_ID_H */
