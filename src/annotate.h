/* SPDX-License-Identifier: MIT */
/*
 * Telling race detectors and tracers what the lock does.
 *
 * ThreadSanitizer, Helgrind and DRD cannot see the synchronisation the
 * library makes with its own atomics (ThreadSanitizer does not instrument an
 * uninstrumented librangelock.so; Valgrind's tools see the atomic
 * instructions but not what they mean).  Without help they report races on
 * data a program correctly protects with range locks.  The calls below
 * describe every happens-before edge the library creates, and no other.
 *
 * COST.  Each call is one load of a hidden flag and a branch predicted not
 * taken; the flag (rl_tools) is set once, at load time, when a
 * ThreadSanitizer runtime is present (weak __tsan_acquire resolved: gcc's
 * and clang's runtimes both export it) or the program runs under Helgrind
 * or DRD (asked once through client requests and cached: a request on
 * every call would cost more; memcheck, callgrind & co. need nothing and
 * leave the flag 0).  Only then do the out-of-line functions in annotate.c
 * run.
 * Built with -fsanitize=thread itself, the library needs no annotations
 * (its atomics are instrumented) and they compile out, so that an
 * instrumented test suite checks the real memory orders, not these calls.
 *
 * THE CALLS.  Keys are always one of the library's own atomic words:
 *   rl_hb_release(key)      everything this thread did so far happens before
 *                           what follows a later rl_hb_acquire(key).  Call it
 *                           just BEFORE the releasing atomic operation.
 *   rl_hb_release_if(key, v)  the same, only if *key == v right now: for a
 *                           release CAS that may fail (an annotation for a
 *                           CAS that then fails would be an edge the library
 *                           does not make; the window left is a few
 *                           instructions).  Relaxed load, tools only.
 *   v = rl_hb_release_pass(key, v)  rl_hb_release(key), returning v: a
 *                           value the caller needs after the call does not
 *                           have to live in a callee-saved register, which
 *                           cost the inlined uncontended lock +2% (measured).
 *   rl_hb_acquire(key)      call just AFTER the acquiring atomic operation
 *                           read the value that lets the thread on.
 *   rl_hb_acquire_last(key) the same, when no release on @key can follow
 *                           (the request is granted: nobody writes it any
 *                           more); also lets Helgrind drop the key's state.
 *   rl_tools_on()           is any tool there (to test once, then take an
 *                           annotated out-of-line twin of a hot path)?
 *   rl_race_ok(addr, len)   Valgrind only: these bytes are accessed with
 *                           atomics (or are statistics counters); do not
 *                           race-check them.  Keys get this automatically.
 *
 * Under Valgrind every key is also excluded from race checking: the tools
 * cannot tell an atomic access from a plain one, and a waiter's load that
 * reads its grant necessarily races, for them, with the granter's store.
 * A release annotation comes before the atomic, so every write to a key is
 * preceded by that exclusion.  Helgrind checks the bytes again once they
 * are reallocated (heap, or a new stack frame), as its manual says of
 * VALGRIND_HG_DISABLE_CHECKING, so a user's later data there is checked.
 *
 * WHY KEYS ARE THE WORDS, AND WHY RELEASE COMES FIRST.
 *   - The internal lock: key = the tree's lock word.  The tree lives as long
 *     as requests use it.  A holder announces its release before the
 *     exchange that frees the lock: after it, another thread may take the
 *     lock, find the tree empty, destroy and free it.
 *   - The grant: key = the waiter's wait_word, which usually lies on the
 *     waiter's stack.  The release must come BEFORE the granting RMW: once
 *     granted, the waiter may return and its stack bytes become somebody
 *     else's request or data; a release annotation made then would merge the
 *     granter's history into a stranger's key, an edge to whoever next
 *     acquires there.  Keying the grant on the tree instead would give a
 *     waiter the history of every later releaser of the tree (it would order
 *     unrelated disjoint critical sections): too many edges.
 *   - A key reused at the same address keeps the clock of its earlier
 *     releases (ThreadSanitizer has no call to forget one).  That adds
 *     nothing: every release on a wait word is made under tree_lock before
 *     the owner either acquires it (grant) or takes tree_lock (giving up),
 *     so the owner's own clock already covers it when it reuses the address.
 *     Heap requests: ThreadSanitizer drops a key's state when the memory is
 *     freed; Helgrind forgets it in rl_hb_acquire_last().  What remains is a
 *     dead thread's stack reused by a new thread: at worst an edge from the
 *     dead thread's granters, i.e. a race missed, never one invented.
 *
 * THE EDGES AND WHERE EACH CALL GOES (keep this list true when the protocol
 * changes):
 *   1. Internal lock, taken (tree_lock.h: fast CAS in tree_lock_acquire(),
 *      both returns of rl_tree_lock_acquire_slow() -- including the CAS that
 *      displaces a fast holder): rl_hb_acquire(word) after the CAS.
 *   2. Internal lock, dropped (tree_lock_release()): rl_hb_release_pass()
 *      before the exchange.
 *   3. Fast hold taken (tree_fast_acquire(), acq_rel: it publishes the
 *      request's fields to a materialiser): rl_hb_release_if(word, 0) before
 *      the CAS, rl_hb_acquire(word) after it succeeds -- in an out-of-line
 *      twin chosen by one rl_tools_on() test, the cheapest form for the
 *      uncontended lock.
 *   4. Fast hold dropped (tree_fast_release()): rl_hb_release_if(word, fast)
 *      before the CAS.
 *   5. Blocker taken off a waiter (put_blocker(), protocol.c: grant, early
 *      wake, downgrade's readers; in the policy of issue 12 also the
 *      ELIGIBLE transition): rl_hb_release(wait_word) BEFORE the RMW.  An
 *      overtaker's added blocker and a claim are made under tree_lock and
 *      need nothing more: edges 1 and 2 cover them.
 *   6. A waiter that returns granted (rl_wait_for_grant(), whatever the way:
 *      saw word 0 in wait_loop or spin_for_grant, kept a grant in
 *      withdraw_request, or -- issue 12 -- claimed under tree_lock):
 *      rl_hb_acquire_last(wait_word).
 *   7. Statistics storage and tree->stats (atomics without tree_lock):
 *      rl_race_ok() when statistics are enabled.
 *   8. (Issue 12) An overtaker's atomic add to a waiter's word is no edge
 *      (it is made under tree_lock), but it is a write by another thread
 *      that may come before any put_blocker(): precede it with
 *      rl_race_ok(wait_word, sizeof(uint32_t)) so that Helgrind does not
 *      flag it against the waiter's own SLEEPING CAS.  Setting HANDOFF and
 *      claiming are the owner's own writes: nothing to add.
 *   9. (Issue 13) A fast reader publishes its slot (fast_read_acquire(),
 *      release: the revoker that wins the slot reads the request):
 *      rl_hb_release(&slot->state) before the exchange; the revoker,
 *      rl_hb_acquire(&slot->state) after its CAS wins (rl_take_published()).
 *   10. (Issue 13) BIASED set (rl_maybe_bias(), a release store under
 *      tree_lock: it follows the last writer's unlock) -> a fast reader that
 *      sees it: rl_hb_release(&tree->flags) before the store,
 *      rl_hb_acquire(&tree->flags) after the reader's check.
 *   11. (Issue 13) A fast read released through its slot -> the next
 *      revocation of that tree: rl_hb_release(&tree->nr_writers) before the
 *      release CAS (only when the slot still holds the publication),
 *      rl_hb_acquire(&tree->nr_writers) after the revoker's scan.  The key
 *      is the tree, not the slot: a revoker acquiring every slot it scans
 *      would order it after readers of other trees.  A fast read taken
 *      into the tree unlocks through tree_lock: edges 1-2.
 *   12. One-time initialisation by pthread_once() (the tools do not see
 *      glibc's: its fast path is a plain-looking acquire load): the
 *      initialiser ends with rl_hb_release(&once), every caller follows
 *      pthread_once() with rl_hb_acquire(&once) (fast_read.c: the slot
 *      key, made by whichever thread claims a slot first; wait_posix.c:
 *      the buckets and the thread pipe key; checks.c: the thread-exit
 *      key of the checking mode).  Without it Helgrind reports
 *      the second thread's read of the key against pthread_key_create().
 * Blind spot (docs/debugging.md): two critical sections on disjoint ranges, one after
 * the other, are ordered through edges 1-2, as they really are; a race
 * between them is reported only when they overlap in time.
 *
 * USDT PROBES (provider "rangelock", <sys/sdt.h>; compiled out without it),
 * on the slow path only, never on an uncontended lock or unlock.  Sites:
 * rl_wait_for_grant() (all three) and withdraw_on_cancel() (give-up by
 * cancellation).  Their arguments never read a request's tree fields
 * without tree_lock (hence struct waiter's reader flag).
 *   rangelock:wait_begin  (tree, request, start, last, is_reader)
 *       a request found conflicting requests and starts waiting.
 *   rangelock:wait_end    (tree, request, start, last, is_reader)
 *       it was granted after waiting (pair with wait_begin per thread to
 *       measure the wait).
 *   rangelock:wait_give_up (tree, request, start, last, is_reader, reason)
 *       it stopped waiting: reason -EINTR (signal), -ETIMEDOUT (deadline)
 *       or -ECANCELED (thread cancelled).
 * tree and request are addresses, start and last uint64_t, the rest int.
 */
#ifndef RANGELOCK_ANNOTATE_H
#define RANGELOCK_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define RL_ANNOTATE 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RL_ANNOTATE 0
#endif
#endif
#ifndef RL_ANNOTATE
#define RL_ANNOTATE 1
#endif

#if RL_ANNOTATE
#define RL_TOOL_TSAN     1u
#define RL_TOOL_VALGRIND 2u
extern unsigned rl_tools __attribute__((visibility("hidden")));

#define RL_COLD_CALL __attribute__((visibility("hidden"), cold))
RL_COLD_CALL void rl_hb_release_slow(const void *key);
RL_COLD_CALL uintptr_t rl_hb_release_pass_slow(const void *key, uintptr_t v);
RL_COLD_CALL void rl_hb_acquire_slow(const void *key, int last);
RL_COLD_CALL void rl_race_ok_slow(const void *addr, size_t len);

#define RL_TOOLS_ON() __builtin_expect(rl_tools != 0, 0)

/* Is a race detector there?  For a path that annotates several steps and
 * would rather test once (tree_fast_acquire()). */
static inline int rl_tools_on(void)
{
	return RL_TOOLS_ON();
}

static inline void rl_hb_release(const void *key)
{
	if (RL_TOOLS_ON())
		rl_hb_release_slow(key);
}

static inline uintptr_t rl_hb_release_pass(const void *key, uintptr_t v)
{
	if (RL_TOOLS_ON())
		return rl_hb_release_pass_slow(key, v);
	return v;
}

static inline void rl_hb_release_if(const void *key, uintptr_t v)
{
	if (RL_TOOLS_ON() && __atomic_load_n((const uintptr_t *)key,
					     __ATOMIC_RELAXED) == v)
		rl_hb_release_slow(key);
}

static inline void rl_hb_acquire(const void *key)
{
	if (RL_TOOLS_ON())
		rl_hb_acquire_slow(key, 0);
}

static inline void rl_hb_acquire_last(const void *key)
{
	if (RL_TOOLS_ON())
		rl_hb_acquire_slow(key, 1);
}

static inline void rl_race_ok(const void *addr, size_t len)
{
	if (RL_TOOLS_ON())
		rl_race_ok_slow(addr, len);
}
#else
static inline int rl_tools_on(void) { return 0; }
static inline void rl_hb_release(const void *key) { (void)key; }
static inline uintptr_t rl_hb_release_pass(const void *key, uintptr_t v) { (void)key; return v; }
static inline void rl_hb_release_if(const void *key, uintptr_t v) { (void)key; (void)v; }
static inline void rl_hb_acquire(const void *key) { (void)key; }
static inline void rl_hb_acquire_last(const void *key) { (void)key; }
static inline void rl_race_ok(const void *addr, size_t len) { (void)addr; (void)len; }
#endif

/*
 * AddressSanitizer and thread cancellation.  A cancelled wait leaves
 * through glibc's unwinder, which longjmps past the library's own frames
 * (wait_loop() and below) into the frame that pushed the cleanup handler.
 * AddressSanitizer does not see that jump, so the redzones of the frames
 * left behind stay poisoned, and the handler's own calls, which reuse that
 * stack, are reported as stack-buffer-overflows that are not there.
 * rl_asan_unwound(), first thing in every cleanup handler the library
 * pushes, clears the stale poison below the handler's frame (the stack
 * there is free) and lets the fake stack drop the frames left behind.
 * Built without AddressSanitizer it is nothing.
 */
#if defined(__SANITIZE_ADDRESS__)
#define RL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RL_ASAN 1
#endif
#endif
#ifdef RL_ASAN
__attribute__((visibility("hidden"), noinline)) void rl_asan_unwound(void);
#else
static inline void rl_asan_unwound(void) {}
#endif

/* USDT probes: a nop each, unless a tracer attaches. */
#if RANGELOCK_HAVE_SDT
#include <sys/sdt.h>
#define rl_probe_wait(name, tree, lock, reader) \
	DTRACE_PROBE5(rangelock, name, (tree), (lock), (lock)->start, (lock)->last, (int)(reader))
#define rl_probe_give_up(tree, lock, reader, reason) \
	DTRACE_PROBE6(rangelock, wait_give_up, (tree), (lock), (lock)->start, (lock)->last, \
		      (int)(reader), (int)(reason))
#else
#define rl_probe_wait(name, tree, lock, reader) ((void)0)
#define rl_probe_give_up(tree, lock, reader, reason) ((void)0)
#endif

#endif /* RANGELOCK_ANNOTATE_H */
