/* SPDX-License-Identifier: MIT */
/*
 * librangelock: the thread-id cache (thread_id.h reads it).
 */
#include <pthread.h>
#include <stdint.h>

#include "thread_id.h"

_Thread_local uint32_t rl_cached_tid __attribute__((tls_model("initial-exec")));

/* The child of fork() is a new thread with the parent's TLS copy. */
static void forget_tid(void)
{
	rl_cached_tid = 0;
}

__attribute__((constructor)) static void tid_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}
