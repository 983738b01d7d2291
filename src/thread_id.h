/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's id, cached per thread (thread_id.c resets the cache
 * in the child of fork()): the owner of a request (owner_tid), and the
 * thread of the checking mode's hold registry (checks.c).  Inline: every
 * lock call that does not read fast reads it before its fast path.
 *
 * owner_tid also carries tags in its top bits (RL_SLOT_TAG bit 31,
 * RL_GROWTH_TAG bit 30, RL_ASYNC_TAG bit 29): a thread id must never have
 * one of them, or a plain request would read as tagged (an asynchronous
 * one: its grant would treat the waiting thread's stack as an asynchronous
 * request).  Ids are therefore below 2^29 (thread_id.c asserts it):
 *   [1, 2^22)      the kernel's thread id (gettid(); Linux's PID_MAX_LIMIT
 *                  is 2^22, so every real id is below it),
 *   [2^22, 2^29)   the library's own id for a thread whose gettid() fails
 *                  (a seccomp filter may make it fail): one per thread, from
 *                  a process-wide counter, so never a real thread id and
 *                  different for each such thread (until 2^29 - 2^22 of
 *                  them have asked in one process: then the ids wrap).
 */
#ifndef RANGELOCK_THREAD_ID_H
#define RANGELOCK_THREAD_ID_H

#include <stdint.h>

#include "fast_read.h"

#define RL_TID_LIMIT    (1u << 22)  /* every kernel thread id is below */
#define RL_TID_FALLBACK RL_TID_LIMIT /* the first fallback id */
#define RL_TID_END      (1u << 29)  /* every id is below: no tag bit */

/* initial-exec: a plain %fs-relative load, no __tls_get_addr() call on the
 * hot path of a shared library. */
extern _Thread_local uint32_t rl_cached_tid __attribute__((tls_model("initial-exec"))) RL_HIDDEN;

/* The first call of a thread (and the first after fork()): ask the kernel. */
RL_HIDDEN uint32_t rl_thread_id_slow(void);

static inline uint32_t rl_thread_id(void)
{
	uint32_t tid = rl_cached_tid;

	if (__builtin_expect(!tid, 0))
		tid = rl_thread_id_slow();
	return tid;
}

#endif /* RANGELOCK_THREAD_ID_H */
