/* SPDX-License-Identifier: MIT */
/*
 * The reader fast path's slot table: claiming a slot, giving it up when
 * the thread exits or after fork(), and the revoker's scan.  The protocol
 * is described in fast_read.h; the hot paths are inline there.
 */
#include <pthread.h>
#include <stdlib.h>

#include "fast_read.h"
#include "pin.h"

struct rl_slot rl_slots[RL_SLOTS];
_Atomic uint32_t rl_slots_used;
_Thread_local struct rl_slot *rl_my_slot __attribute__((tls_model("initial-exec")));
/* The thread's slot even while rl_my_slot is NULL inside an acquire
 * (fast_read.h); CLAIMING while rl_claim_slot() looks for one. */
static _Thread_local struct rl_slot *my_claimed __attribute__((tls_model("initial-exec")));
#define CLAIMING ((struct rl_slot *)1)

/* A thread that found the table full looks again only after this many of
 * its fast-read attempts: a full table must not cost a 512-slot scan per
 * read. */
#define CLAIM_RETRY 4096
static _Thread_local uint32_t claim_backoff __attribute__((tls_model("initial-exec")));

/*
 * The slot key is made once, by the first thread that claims a slot.
 * pthread_once() orders that making before every other thread's use of the
 * key, but Helgrind and DRD do not see its synchronisation (glibc's fast
 * path is an acquire load they take for a plain one), so the one-time
 * initialisation is an edge of annotate.h (12), keyed on the once word.
 * The union gives the key the pointer's width the tools exclude from race
 * checking (annotate.c), so that no neighbour's bytes are excluded too.
 */
static pthread_key_t slot_key;
static union {
	pthread_once_t once;
	uintptr_t key_bytes;
} slot_key_once = { PTHREAD_ONCE_INIT };

/* Set ORPHAN on a published or materialised slot, or free an idle one. */
static void orphan_slot(struct rl_slot *s)
{
	uintptr_t v = atomic_load_explicit(&s->state, memory_order_relaxed);

	for (;;) {
		uintptr_t to;

		if (v == SLOT_FREE || (v != SLOT_IDLE && (v & SLOT_ORPHAN)))
			return;
		to = v == SLOT_IDLE ? SLOT_FREE : v | SLOT_ORPHAN;
		if (atomic_compare_exchange_weak_explicit(&s->state, &v, to,
							  memory_order_release,
							  memory_order_relaxed))
			return;
	}
}

/* pthread key destructor: the thread exits. */
static void slot_thread_exit(void *arg)
{
	orphan_slot(arg);
	rl_my_slot = NULL;
	my_claimed = NULL;
}

/* Once, at the first claim of this copy of the library.  The destructor
 * is this copy's code: it is registered only once the code is sure to stay
 * mapped until every thread has exited (pin.c: a static copy in a plugin
 * pins the plugin).  Without a key, a thread's slot is never freed: the
 * table fills, and then reads go through the tree (correct, slower). */
static void make_slot_key(void)
{
	if (!rl_pin_self() || pthread_key_create(&slot_key, slot_thread_exit))
		slot_key = (pthread_key_t)-1; /* no destructor: the slot leaks */
	rl_hb_release(&slot_key_once); /* edge 12: pthread_once's own release follows */
}

struct rl_slot *rl_claim_slot(void)
{
	uint32_t i, used;

	/* Nested in this thread's own acquire or claim (a signal handler):
	 * through the tree (fast_read.h). */
	if (my_claimed)
		return NULL;
	if (claim_backoff) {
		claim_backoff--;
		return NULL;
	}
	my_claimed = CLAIMING;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_once(&slot_key_once.once, make_slot_key);
	rl_hb_acquire(&slot_key_once); /* edge 12: slot_key is made */
	for (i = 0; i < RL_SLOTS; i++) {
		struct rl_slot *s = &rl_slots[i];
		uintptr_t v = SLOT_FREE;

		if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_FREE ||
		    !atomic_compare_exchange_strong_explicit(&s->state, &v, SLOT_IDLE,
							     memory_order_relaxed,
							     memory_order_relaxed))
			continue;
		/* Valgrind's tools: every field is an atomic shared with
		 * revokers. */
		rl_race_ok(s, sizeof(*s));
		/* Visible to revokers before anything is published here: the
		 * publication is a later seq_cst operation of this thread.
		 * seq_cst also when another thread raised the mark past i and
		 * we only read it: C11 orders a relaxed read of that raise
		 * before nothing (docs/design.md, section 10). */
		used = atomic_load_explicit(&rl_slots_used, memory_order_seq_cst);
		while (used < i + 1 &&
		       !atomic_compare_exchange_weak_explicit(&rl_slots_used, &used, i + 1,
							      memory_order_seq_cst,
							      memory_order_seq_cst))
			;
		if (slot_key != (pthread_key_t)-1)
			pthread_setspecific(slot_key, s);
		atomic_signal_fence(memory_order_seq_cst);
		rl_my_slot = my_claimed = s;
		return s;
	}
	claim_backoff = CLAIM_RETRY;
	atomic_signal_fence(memory_order_seq_cst);
	my_claimed = NULL;
	return NULL;
}

void rl_take_published(struct range_lock_tree *tree,
			   void (*materialise)(struct range_lock_tree *, struct range_lock *))
{
	uintptr_t pub = (uintptr_t)tree | SLOT_PUB;
	uint32_t n = atomic_load_explicit(&rl_slots_used, memory_order_seq_cst);

	for (uint32_t i = 0; i < n; i++) {
		struct rl_slot *s = &rl_slots[i];
		uintptr_t v = atomic_load_explicit(&s->state, memory_order_seq_cst);

		/*
		 * Win the slot first; only then is the request ours to touch
		 * (acquire: the owner's writes before it published).  A CAS
		 * that fails because the owner thread exited meanwhile (PUB ->
		 * PUB|ORPHAN) must try again: the read is still held (found
		 * by the SPIN model, -DORPHAN).  Acquire on failure too: a
		 * release between our load and our CAS must happen before
		 * our critical section.
		 */
		while ((v & ~SLOT_ORPHAN) == pub) {
			if (atomic_compare_exchange_strong_explicit(
				    &s->state, &v, (v & SLOT_ORPHAN) | (uintptr_t)tree | SLOT_MAT,
				    memory_order_acquire, memory_order_acquire)) {
				rl_hb_acquire(&s->state); /* annotate.h, edge 9 */
				materialise(tree, atomic_load_explicit(&s->req,
								       memory_order_relaxed));
				break;
			}
		}
	}
	/* The critical sections of the fast readers that released before
	 * the scan read their slots (annotate.h, edge 11). */
	rl_hb_acquire(&tree->nr_writers);
}

void rl_slot_unmaterialise(struct range_lock_tree *tree, uint32_t owner_tid)
{
	struct rl_slot *s = slot_of(owner_tid);
	uintptr_t mat = (uintptr_t)tree | SLOT_MAT;
	uintptr_t v = atomic_load_explicit(&s->state, memory_order_relaxed);

	/* Only ORPHAN can be added meanwhile (the owner thread exits). */
	while (!atomic_compare_exchange_weak_explicit(
		       &s->state, &v, v == mat ? SLOT_IDLE : SLOT_FREE,
		       memory_order_release, memory_order_relaxed))
		;
}

/* The child of fork() has one thread: the other threads' slots are
 * orphans (their holds stay held, as the fork rule of the header says). */
static void slots_after_fork(void)
{
	uint32_t n = atomic_load_explicit(&rl_slots_used, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		if (&rl_slots[i] != my_claimed)
			orphan_slot(&rl_slots[i]);
	claim_backoff = 0;
}

__attribute__((constructor)) static void slots_atfork(void)
{
	pthread_atfork(NULL, NULL, slots_after_fork);
}

#ifdef RL_TEST_HOOKS
void (*rl_test_publish_hook)(void);
#endif

int rl_test_fast_read_biased(struct range_lock_tree *tree)
{
	return (__atomic_load_n(&tree->flags, __ATOMIC_RELAXED) &
		RL_TREE_BIASED) != 0;
}

int rl_test_fast_readers(struct range_lock_tree *tree)
{
	uintptr_t pub = (uintptr_t)tree | SLOT_PUB;
	uint32_t n = atomic_load_explicit(&rl_slots_used, memory_order_acquire);
	int count = 0;

	for (uint32_t i = 0; i < n; i++)
		if ((atomic_load_explicit(&rl_slots[i].state, memory_order_acquire) &
		     ~SLOT_ORPHAN) == pub)
			count++;
	return count;
}
