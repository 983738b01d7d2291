/* SPDX-License-Identifier: MIT */
/*
 * The tool side of annotate.h: which race detector runs, and what each
 * annotation tells it.  Runs only when one does (rl_tools != 0).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_getattr_np(), AddressSanitizer builds only */
#endif
#include "annotate.h"
#include "spin.h"

#ifdef RL_ASAN
#include <pthread.h>
#include <sanitizer/asan_interface.h>

/* At most this much free stack below the handler is cleared: more than any
 * chain of the library's frames that a cancellation can leave behind. */
#define UNWOUND_SPAN (256u * 1024u)

void rl_asan_unwound(void)
{
	pthread_attr_t attr;
	void *low = NULL;
	size_t size = 0;
	char *frame = (char *)__builtin_frame_address(0);
	char *below = frame - 1024;
	char *from = below - UNWOUND_SPAN;
	int r;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	r = pthread_attr_getstack(&attr, &low, &size);
	pthread_attr_destroy(&attr);
	/* Only on this thread's own stack: a handler running on another
	 * (a coroutine's, an alternate signal stack) would clear memory
	 * that is not free stack. */
	if (r != 0 || frame < (char *)low + 1024 || frame >= (char *)low + size)
		return;
	/* The fake stack (detect_stack_use_after_return) forgets the frames
	 * left behind; the real stack is cleared from a page below this
	 * frame up to the stack's top (the live frames' redzones too: the
	 * thread is being cancelled, its frames are all about to go). */
	__asan_handle_no_return();
	/* The rest of the span below, never below this thread's stack. */
	if ((char *)low > from)
		from = low;
	if (from < below)
		ASAN_UNPOISON_MEMORY_REGION(from, (size_t)(below - from));
}
#endif

#if RL_ANNOTATE

#if RANGELOCK_VALGRIND
#include "vendor/valgrind/helgrind.h"
#include "vendor/valgrind/drd.h"

/* DRD understands Helgrind's happens-before requests (same numbers). */
_Static_assert((int)VG_USERREQ__DRD_ANNOTATE_HAPPENS_BEFORE ==
		       (int)_VG_USERREQ__HG_USERSO_SEND_PRE &&
	       (int)VG_USERREQ__DRD_ANNOTATE_HAPPENS_AFTER ==
		       (int)_VG_USERREQ__HG_USERSO_RECV_POST,
	       "helgrind.h and drd.h disagree");
#endif

/*
 * ThreadSanitizer's public interface (sanitizer/tsan_interface.h declares
 * them differently in gcc and clang; these are the ABI).  Weak: without a
 * ThreadSanitizer runtime in the process they stay NULL.
 */
void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));

#define RL_TOOL_HELGRIND 4u
#define RL_TOOL_DRD      8u

unsigned rl_tools;

/* Once, at load time, before any thread of the program can lock. */
__attribute__((constructor)) static void rl_tools_detect(void)
{
	unsigned tools = 0;

	if (__tsan_acquire && __tsan_release)
		tools |= RL_TOOL_TSAN;
#if RANGELOCK_VALGRIND
	/* Only the race detectors need to be told; memcheck & co. do not. */
	if (RUNNING_ON_VALGRIND) {
		/* Helgrind answers with the number of addressable bytes;
		 * other tools leave a default (which the header's macro
		 * mangles into 0xfffffffe: do not compare with -2). */
		if (VALGRIND_HG_GET_ABITS(&tools, NULL, sizeof(tools)) == sizeof(tools))
			tools |= RL_TOOL_VALGRIND | RL_TOOL_HELGRIND;
		else if (DRD_GET_DRD_THREADID != 0)
			tools |= RL_TOOL_VALGRIND | RL_TOOL_DRD;
	}
#endif
	rl_tools = tools;
	/* The spin-wait hint's measured cost (spin.c): a relaxed atomic that
	 * the first thread to spin writes while others may read it (either
	 * value is valid), which Helgrind and DRD, blind to atomics, would
	 * report as a race. */
	rl_race_ok(&rl_spin_rate, sizeof(rl_spin_rate));
}

void rl_race_ok_slow(const void *addr, size_t len)
{
#if RANGELOCK_VALGRIND
	if (rl_tools & RL_TOOL_HELGRIND)
		VALGRIND_HG_DISABLE_CHECKING(addr, len);
	else if (rl_tools & RL_TOOL_DRD)
		VALGRIND_DO_CLIENT_REQUEST_STMT(VG_USERREQ__DRD_START_SUPPRESSION,
						addr, len, 0, 0, 0);
#else
	(void)addr;
	(void)len;
#endif
}

/* Keys are atomic words: 4 bytes (wait words) or a pointer (lock word);
 * excluding a pointer's width from checking covers both. */
#define KEY_BYTES sizeof(void *)

void rl_hb_release_slow(const void *key)
{
	if (rl_tools & RL_TOOL_TSAN)
		__tsan_release((void *)key);
#if RANGELOCK_VALGRIND
	if (rl_tools & RL_TOOL_VALGRIND) {
		rl_race_ok_slow(key, KEY_BYTES);
		VALGRIND_DO_CLIENT_REQUEST_STMT(_VG_USERREQ__HG_USERSO_SEND_PRE,
						key, 0, 0, 0, 0);
	}
#endif
}

uintptr_t rl_hb_release_pass_slow(const void *key, uintptr_t v)
{
	rl_hb_release_slow(key);
	return v;
}

void rl_hb_acquire_slow(const void *key, int last)
{
	if (rl_tools & RL_TOOL_TSAN)
		__tsan_acquire((void *)key);
#if RANGELOCK_VALGRIND
	if (rl_tools & RL_TOOL_VALGRIND) {
		VALGRIND_DO_CLIENT_REQUEST_STMT(_VG_USERREQ__HG_USERSO_RECV_POST,
						key, 0, 0, 0, 0);
		rl_race_ok_slow(key, KEY_BYTES);
		if (last && (rl_tools & RL_TOOL_HELGRIND))
			VALGRIND_DO_CLIENT_REQUEST_STMT(_VG_USERREQ__HG_USERSO_FORGET_ALL,
							key, 0, 0, 0, 0);
	}
#else
	(void)last;
#endif
}

#endif /* RL_ANNOTATE */
