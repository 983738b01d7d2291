/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the thread-id cache (thread_id.h reads it and says which
 * ids a thread may get).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "protocol.h"
#include "thread_id.h"

_Static_assert(((RL_TID_END - 1) & (RL_SLOT_TAG | RL_GROWTH_TAG | RL_ASYNC_TAG)) == 0 &&
		       RL_TID_END <= RL_ASYNC_TAG && RL_TID_END <= RL_GROWTH_TAG &&
		       RL_TID_END <= RL_SLOT_TAG,
	       "thread ids and owner_tid's tags share a bit");
_Static_assert(RL_TID_FALLBACK >= RL_TID_LIMIT && RL_TID_FALLBACK < RL_TID_END,
	       "fallback ids may be real thread ids");

_Thread_local uint32_t rl_cached_tid __attribute__((tls_model("initial-exec")));

/* Fallback ids handed out so far in this process (a fork child inherits
 * the count: its ids differ from every id its parent gave out, including
 * the forking thread's own, whose requests the child may inherit). */
static _Atomic uint32_t fallback_ids;

uint32_t rl_thread_id_slow(void)
{
	int saved = errno; /* a failed gettid() is no error of the lock call */
	long tid = syscall(SYS_gettid);

	if (tid <= 0 || tid >= (long)RL_TID_LIMIT) {
		/* gettid() failed (-1: a seccomp filter, say), or an id no
		 * Linux kernel gives: a fallback id of the thread's own. */
		uint32_t n = atomic_fetch_add_explicit(&fallback_ids, 1,
						       memory_order_relaxed);

		tid = RL_TID_FALLBACK + n % (RL_TID_END - RL_TID_FALLBACK);
	}
	errno = saved;
	rl_cached_tid = (uint32_t)tid;
	return (uint32_t)tid;
}

/* The child of fork() is a new thread with the parent's TLS copy. */
static void forget_tid(void)
{
	rl_cached_tid = 0;
}

__attribute__((constructor)) static void tid_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}
