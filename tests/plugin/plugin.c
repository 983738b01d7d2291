/* SPDX-License-Identifier: MIT */
/*
 * A plugin with its own static copy of librangelock (linked from a PIC
 * librangelock.a), for host.c: dlopen()ed, used on a worker thread,
 * dlclose()d while that thread still lives.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <rangelock/rangelock.h>

#define FAST_TAG 0x80000000u /* owner_tid of a request held fast */

static DEFINE_RANGE_LOCK_TREE(tree);

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* Read until a read is fast: the calling thread then owns a slot of this
 * copy's table, with the slot key's destructor (this copy's code) pending
 * until it exits.  An anchor read is held meanwhile, so that the reads take
 * the read slow path, which biases the tree. */
static int read_fast(void)
{
	struct range_lock anchor, r;
	unsigned fast;

	range_lock_init(&anchor, 0, 0);
	range_read_lock(&tree, &anchor);
	fast = anchor.owner_tid & FAST_TAG;
	for (int i = 0; i < 100000 && !fast; i++) {
		range_lock_init(&r, 1, 1);
		range_read_lock(&tree, &r);
		fast = r.owner_tid & FAST_TAG;
		range_read_unlock(&tree, &r);
	}
	range_read_unlock(&tree, &anchor);
	return fast != 0;
}

static void *hold_a_while(void *arg)
{
	struct range_lock *w = arg;

	pause_ms(50);
	range_write_unlock(&tree, w);
	return NULL;
}

/* An interruptible wait that sleeps: with the POSIX backend the calling
 * thread then has a pipe, closed by a key destructor at its exit. */
static int wait_interruptible(void)
{
	struct range_lock w, r;
	pthread_t th;
	int err;

	range_lock_init(&w, 2, 2);
	range_write_lock(&tree, &w);
	if (pthread_create(&th, NULL, hold_a_while, &w))
		return 0;
	range_lock_init(&r, 2, 2);
	err = range_write_lock_interruptible(&tree, &r);
	if (!err)
		range_write_unlock(&tree, &r);
	pthread_join(th, NULL);
	return err == 0;
}

/* What the worker calls: 'f' fast reads, 'w' an interruptible wait that
 * sleeps, 'n' neither (an uncontended write: no slot, no wait).  1 when
 * done. */
__attribute__((visibility("default"))) int plugin_use(int what)
{
	struct range_lock w;

	if (what == 'f')
		return read_fast();
	if (what == 'w')
		return wait_interruptible();
	range_lock_init(&w, 3, 3);
	range_write_lock(&tree, &w);
	range_write_unlock(&tree, &w);
	return 1;
}
