/* SPDX-License-Identifier: MIT */
/*
 * The second level of a tree bound to a file (range_lock_tree_set_file()):
 * the OFD locks this process holds on the file for what its requests hold.
 * file_lock.c owns the state, one per file, shared by the trees bound to
 * that file; the public calls (calls.c, sets.c, grow.c, async.c) call in
 * only -- after a local grant (rl_file_lock), before a local unlock
 * (rl_file_unlock), before a local downgrade (rl_file_downgrade) -- so a tree's requests are counted
 * in the state only while they are in the tree, and a tree found empty
 * under tree_lock (set_file, destroy) may let go of it (rl_file_free).
 */
#ifndef RANGELOCK_FILE_LOCK_H
#define RANGELOCK_FILE_LOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct range_lock;
struct range_lock_file;

/* How a second-level acquisition may wait (the lock call's contract). */
enum rl_file_wait {
	RL_FILE_TRY,            /* never: -EAGAIN when another owner holds */
	RL_FILE_PLAIN,          /* until held; no signal, no cancellation ends it */
	RL_FILE_INTERRUPTIBLE,  /* -EINTR when a signal handler ran while it slept */
	RL_FILE_KILLABLE,       /* a cancellation point while it waits */
	RL_FILE_TIMED,          /* -ETIMEDOUT at the deadline, -EINVAL for a bad one */
};

/* The process's description of @fd's file, opened at its first bind and
 * shared by every tree bound to it: 0 and *out, or -errno (nothing changed). */
int rl_file_open(struct range_lock_file **out, int fd);
/* A tree lets go (it is empty): the description is never closed. */
void rl_file_free(struct range_lock_file *f);
/* Do the bytes [start, last] fit off_t (RANGE_LOCK_FULL: to the end)? */
bool rl_file_range_ok(uint64_t start, uint64_t last);

/*
 * Hold [start, last] at the second level for a request granted locally.
 * 0 when held; otherwise (-EAGAIN, -EINTR, -ETIMEDOUT, -EINVAL, or
 * cancellation) nothing of the request is left at the second level and the
 * caller must unlock it locally -- on cancellation through @on_cancel(@arg),
 * which the cleanup handler calls after withdrawing (KILLABLE only).
 * Unexpected errors of the system (ENOLCK, EIO) abort with a message.
 */
int rl_file_lock(struct range_lock_file *f, uint64_t start, uint64_t last,
		 bool reader, enum rl_file_wait kind, clockid_t clockid,
		 const struct timespec *abstime, void (*on_cancel)(void *),
		 void *arg);
/* async.c: abort if a completion of an asynchronous request runs on this
 * thread (a lock call there must not wait). */
void rl_async_check_may_wait(const char *call, const struct range_lock *lock);

/* Release a held request's part; aborts when it is not held at this level. */
void rl_file_unlock(struct range_lock_file *f, uint64_t start, uint64_t last,
		    bool reader);
/* A held writer becomes a reader: never waits. */
void rl_file_downgrade(struct range_lock_file *f, uint64_t start, uint64_t last);

#endif /* RANGELOCK_FILE_LOCK_H */
