/* SPDX-License-Identifier: MIT */
/*
 * librangelock: where the parts of spanning requests live (segments.c has
 * the design; docs/design.md, section 15, S9).
 *
 * A spanning request's parts are one block (struct span and its part[]
 * array).  Blocks come from a cache of the calling thread and go back to
 * the cache of the thread that frees them -- an unlock, a give-up, a
 * cancel, or the last part completion of an asynchronous request, on
 * whatever thread that runs -- so that, once a thread has done a spanning
 * request of a size, the next one of that size allocates nothing and
 * writes no line another thread writes (malloc() may: musl's takes a
 * process-wide lock, glibc's outgrows its per-thread cache).
 *
 * The cache is a free list per size class: blocks of 2, 4, 8, ..., 256
 * parts (a request of n parts takes the class of the next power of two
 * at or above n, a set member within one segment the smallest).  A class
 * keeps at most KEEP(class) blocks (8 of 2 and of 4 parts, 4 of 8 and of
 * 16, 1 of each larger class): at most 66 KiB a thread on x86-64, and
 * only for the sizes it freed.  A free past that, a request of more than
 * 256 parts, and every free on a thread whose cache is off go to free().
 * Blocks move between threads with the requests they hold (a request
 * locked on one thread and unlocked on another gives its block to the
 * second); nothing is shared, so nothing is locked.
 *
 * The cache's thread exits: a pthread key destructor frees its blocks and
 * turns the cache off, so that a destructor that runs later (a user's,
 * unlocking a spanning request) frees to free().  The key is made, once,
 * only if this copy of the library stays mapped until every thread has
 * exited (pin.c); otherwise every thread's cache stays off, and blocks are
 * malloc()ed and freed as before.  A thread's cache is turned on by its
 * first free (pthread_setspecific() may allocate, once).  A fork child
 * keeps the forking thread's cache (memory it owns).
 *
 * Like malloc(), the cache is not async-signal-safe (no call of the
 * library is).  With AddressSanitizer, a block in a cache is poisoned (but
 * for its link), so that a use after its request ended is still reported.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "pin.h"
#include "seg_internal.h"

#ifdef RL_ASAN
#include <sanitizer/asan_interface.h>
/* All but the free list's link: LeakSanitizer does not scan poisoned
 * words, and the next block is reachable only through it. */
#define parts_poison(p, n) \
	ASAN_POISON_MEMORY_REGION((char *)(p) + sizeof(struct parts_free), \
				  (n) - sizeof(struct parts_free))
#define parts_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define parts_poison(p, n)   ((void)(p), (void)(n))
#define parts_unpoison(p, n) ((void)(p), (void)(n))
#endif

#define PARTS_CLASSES 8u /* blocks of 2 << c parts, c = 0 .. 7 */
#define KEEP(c) ((c) < 2 ? 8u : (c) < 4 ? 4u : 1u)

enum { CACHE_NEW, CACHE_ON, CACHE_OFF };

struct parts_free {
	struct parts_free *next;
};

/* 80 bytes of static TLS (initial-exec, as fast_read.c's). */
static _Thread_local struct {
	struct parts_free *head[PARTS_CLASSES];
	uint8_t count[PARTS_CLASSES];
	uint8_t state; /* CACHE_* */
} cache __attribute__((tls_model("initial-exec")));

static pthread_key_t cache_key;
static bool cache_key_ok;
/* (The union: annotate.h's edge 12, as fast_read.c's slot key.) */
static union {
	pthread_once_t once;
	uintptr_t key_bytes;
} cache_key_once = { PTHREAD_ONCE_INIT };

static inline size_t class_size(unsigned c)
{
	return sizeof(struct span) + ((size_t)2 << c) * sizeof(((struct span *)0)->part[0]);
}

/* The class of a block for @n parts; PARTS_CLASSES and up: none. */
static inline unsigned parts_class(unsigned n)
{
	return n <= 2 ? 0 : 31u - (unsigned)__builtin_clz(n - 1);
}

/* pthread key destructor: the thread exits. */
static void cache_thread_exit(void *arg)
{
	(void)arg;
	cache.state = CACHE_OFF;
	for (unsigned c = 0; c < PARTS_CLASSES; c++) {
		struct parts_free *b = cache.head[c];

		while (b) {
			struct parts_free *next;

			parts_unpoison(b, class_size(c));
			next = b->next;
			free(b);
			b = next;
		}
		cache.head[c] = NULL;
		cache.count[c] = 0;
	}
}

static void make_cache_key(void)
{
	cache_key_ok = rl_pin_self() && !pthread_key_create(&cache_key, cache_thread_exit);
	rl_hb_release(&cache_key_once); /* edge 12: pthread_once's own release follows */
}

/* The first free of this thread: on if its exit will empty it. */
static __attribute__((noinline, cold)) bool cache_start(void)
{
	pthread_once(&cache_key_once.once, make_cache_key);
	rl_hb_acquire(&cache_key_once); /* edge 12: cache_key is made */
	cache.state = cache_key_ok && !pthread_setspecific(cache_key, &cache) ? CACHE_ON
									      : CACHE_OFF;
	return cache.state == CACHE_ON;
}

struct span *rl_span_alloc(unsigned n)
{
	unsigned c = parts_class(n);
	struct parts_free *b;
	struct span *sp;

	if (c < PARTS_CLASSES && (b = cache.head[c])) {
		parts_unpoison(b, class_size(c));
		cache.head[c] = b->next;
		cache.count[c]--;
		sp = (struct span *)(void *)b;
	} else {
		sp = malloc(c < PARTS_CLASSES ? class_size(c)
					      : sizeof(*sp) + n * sizeof(sp->part[0]));
		if (!sp)
			return NULL;
	}
	sp->parts_class = (uint8_t)(c < PARTS_CLASSES ? c : PARTS_CLASSES);
	return sp;
}

void rl_span_free(struct span *sp)
{
	struct parts_free *b = (struct parts_free *)(void *)sp;
	unsigned c;

	if (!sp)
		return;
	c = sp->parts_class;
	if (c >= PARTS_CLASSES || cache.count[c] >= KEEP(c) ||
	    (cache.state != CACHE_ON && (cache.state == CACHE_OFF || !cache_start()))) {
		free(sp);
		return;
	}
	b->next = cache.head[c];
	parts_poison(b, class_size(c));
	cache.head[c] = b;
	cache.count[c]++;
}
