/* SPDX-License-Identifier: MIT */
/*
 * librangelock: range reader/writer locks for POSIX threads.
 *
 * A range lock protects one resource (a file's bytes, an address space, a key
 * space) as a line of units 0 .. UINT64_MAX.  A thread locks only the closed
 * range [start, last] it works on: requests whose ranges intersect and where
 * at least one is a writer conflict and are granted one after the other;
 * readers share; ranges that do not intersect never wait for each other.
 *
 * The design is the Linux kernel's "range reader/writer lock" (Bueso 2017,
 * after Jan Kara): every request, held or waiting, sits in an interval tree;
 * a request counts on entry the conflicting requests ahead of it that
 * intersect it (its blocking count) and owns its range when that count falls
 * to zero.  Unlock removes the request and decrements the conflicting
 * requests behind it that counted it.
 *
 * Policies: who goes first among conflicting requests.
 *  - Default, "eventual fairness" (as Linux rwsem, Rust parking_lot):
 *    a request whose conflicting requests on its range are all WAITING may
 *    overtake them and take its range at once, so a running thread never
 *    waits for a sleeping one to be scheduled; and a range that falls free
 *    while its next waiter sleeps is offered to whoever claims it first.
 *    Overtaking is bounded: a waiter that has waited longer than the
 *    hand-off bound (about 2 ms) can no longer be overtaken by anything
 *    that conflicts with it, and gets its range as soon as the requests
 *    ahead of it are gone.  Readers behind a waiting writer may pass it
 *    only until then, so neither readers nor writers starve.
 *  - FIFO (DEFINE_RANGE_LOCK_TREE_FIFO, range_lock_tree_set_fifo()): the
 *    kernel patch's semantics exactly: conflicting requests are granted in
 *    arrival order, no stealing, a reader that arrives behind a waiting
 *    writer on the same units waits behind it.  Choose it when arrival order
 *    matters more than throughput with more threads than CPUs (the default
 *    policy is several times faster there in librangelock's benchmarks).
 *  - Readers first, with either policy (range_lock_tree_defer_writers()):
 *    a writer's blocking lock call that finds a reader of the tree asleep
 *    in its wait first waits, before it enters the tree, until no reader of
 *    the tree sleeps, for at most about 2 ms.  For more threads than CPUs,
 *    where readers that met a writer preempted while holding would
 *    otherwise get a small share of the operations.  It gives up one
 *    promise: a writer whose range conflicts with nothing may wait.
 *
 * Fast reads (both policies; range_lock_tree_set_fast_read() turns them
 * off for a tree): while no writer uses a tree, a read lock does not enter
 * the tree.  The reader publishes its request in its thread's slot of a
 * process-wide table (512 slots of 128 bytes, 64 KiB of zero pages until
 * threads use them) and unpublishes it at unlock, so readers write no
 * cache line another thread writes.  The first writer to come (any write
 * call, trylock included) moves the published readers of that tree into
 * the tree, as the held readers they are, and waits only for those whose
 * ranges it intersects; the tree's reads go through the tree from then on,
 * and turn fast again after a few reads with no writer in the tree (one
 * per slot ever used: the most threads that have held a slot at once).
 * So no reader reads fast past a waiting writer, in either policy, and
 * the guarantees below hold for fast reads as for any other.  Trees with
 * statistics enabled or bound to a file, and the checking mode, never read
 * fast.  A thread uses one slot (claimed at its first fast read, freed when
 * it exits); a second read it holds at the same time goes through the tree.
 *
 * Word mode (default policy): writers of the whole resource that collide
 * wait as on a mutex.  A blocking or timed write lock of [0,
 * RANGE_LOCK_FULL] that finds the tree held by one request alone (held
 * through the tree's lock word, with nothing in the tree) does not enter
 * the tree: it spins briefly on the word, then sleeps on it, and the
 * holder's unlock wakes one such sleeper; a running thread may take the
 * range first.  The hand-off bound holds there too: a word waiter that has
 * waited about 2 ms asks for the range as soon as it runs, and from then on
 * the holder's unlock hands it over directly, so no whole-resource writer
 * that runs meanwhile can take it first; when several waiters have passed
 * the bound, each hand-over goes to one of them (whichever asked first,
 * not necessarily the one that waited longest).  Anything else that comes
 * (a partial range, a reader, an interruptible or killable call, the dump,
 * statistics) sends the word waiters into the tree, where they wait as
 * usual, keeping their arrival time for the hand-off bound but not their
 * place: a request that comes as a partial range, a reader, or an
 * interruptible or killable call displaces the word -- it moves the holder
 * into the tree (with the range, if it was already handed over) and enters
 * the tree itself -- before the woken word waiters get there, so it goes
 * first, even before a waiter that had asked for the hand-over, and so
 * does any other request that enters the tree before them.  A waiter past
 * the bound enters the tree marked: nothing that comes after it passes
 * it.  When the tree empties, word mode is back.  FIFO
 * trees, trees with statistics and the checking mode never use it.  Every
 * call keeps its contract; a trylock that would have to wait on the word
 * returns 0 at once.
 *
 * Two objects:
 *  - struct range_lock_tree: the lock of the whole resource (64 bytes; 48
 *    with 32-bit pointers);
 *  - struct range_lock: one request, a range, usually on the caller's stack
 *    (64 bytes; 56 with 32-bit pointers).  It belongs to the tree from the
 *    lock call until the unlock call returns and must not be moved, reused
 *    or freed in between.
 *
 * Conventions, for every call below:
 *  - Ranges are uint64_t and inclusive at both ends; RANGE_LOCK_FULL is the
 *    last unit, so [0, RANGE_LOCK_FULL] is the whole resource.
 *  - Calls that can fail return 0 or a negative errno value, as in the
 *    kernel; the trylock calls (and the _try calls) return 1 or 0.  The
 *    values, and which calls return them:
 *     -EINTR: the _interruptible calls, when a signal handler ran while
 *      they waited.
 *     -ETIMEDOUT: the timed calls (range_read_timedlock(),
 *      range_write_timedlock(), range_lock_many_timed(),
 *      range_lock_grow_timed()), when the deadline passed first.
 *     -EINVAL: an invalid argument: start > last (range_lock_init(),
 *      range_lock_async_init()), a NULL completion
 *      (range_lock_async_init()), a bad clock or
 *      deadline (the timed calls, checked before anything else), a range that is not a sub-range or a
 *      super-range of the held one (range_lock_shrink(), the grow calls),
 *      a range beyond off_t on a tree bound to a file (the calls that can
 *      fail, asynchronous ones included), a NULL @storage
 *      (range_lock_tree_enable_stats()), a descriptor of something other
 *      than a regular file (range_lock_tree_set_file()), a segment count
 *      that is not a power of two from 1 to 256 or a stripe shift above 63
 *      (range_lock_tree_set_segments()).
 *     -EBUSY: the tree is not empty (range_lock_tree_set_fifo(),
 *      range_lock_tree_set_file(), range_lock_tree_set_segments(),
 *      range_lock_tree_destroy()), or
 *      statistics are enabled with other storage
 *      (range_lock_tree_enable_stats()).
 *     -EBADF: range_lock_tree_set_file(), for a descriptor that is not
 *      open, is an O_PATH one, or is not open O_RDWR.
 *     -EAGAIN: range_read_lock_async() and range_write_lock_async(), and
 *      the status of their completion (range_lock_async_fn), on a tree
 *      bound to a file: another process (or another tree bound to the
 *      file) holds an OFD lock on the bytes.
 *     -EINPROGRESS: range_read_lock_async() and range_write_lock_async():
 *      the request is queued; its completion will be called.
 *     -EALREADY: range_lock_async_cancel(): the request is not queued any
 *      more (it was granted, or held at submission).
 *     -ENODATA: range_lock_tree_get_stats(): statistics were never enabled
 *      for the tree.
 *     -ENOENT, -EACCES, -EMFILE, -ENFILE, -ENOMEM:
 *      range_lock_tree_set_file(), when the first bind of a file cannot
 *      reopen it.
 *     -ENOTSUP: range_lock_tree_set_segments() on a tree with statistics
 *      enabled: any call on a tree with segments, and a split (@segments
 *      above 1) of a tree without; @segments 1 on a tree without segments
 *      changes nothing and returns 0 or -EBUSY.
 *     -ENOMEM: range_lock_tree_set_segments(), and on a tree with
 *      segments the lock calls that can fail and the asynchronous
 *      submissions, for a range that spans segments, the set calls that
 *      can fail, for a set over several segments, and the grow calls
 *      that can fail.
 *  - Misuse that the void calls cannot report (unlocking a request that is
 *    not held in this tree, unlocking with the wrong mode, downgrading a read
 *    lock, locking a request that is already in a tree, any call on a
 *    request whose init failed, a NULL argument)
 *    prints one line naming the call and the range on stderr and calls
 *    abort(): continuing would corrupt the tree or break exclusion.  A
 *    request must be initialised before its first use; re-initialising one
 *    that is in a tree is not detected (its memory may hold anything).
 *    A tree holds at most 2^30 - 1024 requests at once (held or waiting;
 *    64 GiB of them on a 64-bit target): a lock call past that aborts the
 *    same way ("too many requests in this tree") rather than overflow the
 *    count a waiter keeps of the requests it waits for.
 *  - Memory ordering: everything a thread did before an unlock (or a
 *    downgrade) happens before everything a thread does after the lock call
 *    that a conflicting later request of it returns from, as for
 *    pthread_rwlock_t.
 *  - Thread safety: any call may run on any thread at any time, except that
 *    one struct range_lock is used by one thread at a time.  A request may be
 *    unlocked by a thread other than the one that locked it.
 *  - Signals: the plain lock calls never return early; a handler that runs
 *    while they wait does not disturb them.  None of the calls is
 *    async-signal-safe.
 *  - Self-deadlock: a thread that holds a range and asks the same tree for
 *    an intersecting range that conflicts with it (a write under its own
 *    hold, a read under its own write hold) waits for itself: the plain
 *    calls hang, _interruptible and _killable wait until a signal or a
 *    cancellation, _timedlock until its deadline (-ETIMEDOUT); trylock
 *    returns 0.  No call returns -EDEADLK (glibc's pthread_rwlock_t does,
 *    at once, for its own writer): a hold is not tied to a thread, so only
 *    the checking mode can tell.
 *  - Recursive reads: a thread that reads a range and asks again to read
 *    an intersecting one (through a second request) deadlocks when a
 *    conflicting writer waits on units of both:
 *      FIFO tree (range_lock_tree_set_fifo()): the second read waits behind
 *      the waiting writer, which waits for the first read: a deadlock
 *      whenever a writer arrives in between.
 *      Default policy: the second read may overtake the waiting writer while
 *      the writer is unmarked; once the writer has waited longer than the
 *      hand-off bound (about 2 ms) it can no longer be overtaken, so the
 *      same code deadlocks intermittently, under load.
 *    So never take a recursive read while a writer may wait on that range:
 *    take one request for both ranges, or reuse the first hold.
 *  - The checking mode (RANGELOCK_CHECKS, on in Debug builds) reports both
 *    at the call, in both policies: a plain, _interruptible or _killable
 *    lock call that would wait for a conflicting range its own thread holds,
 *    or a read that would wait behind, or overtake, a writer that waits for
 *    its thread's own read hold, prints "self-deadlock: ..." on stderr and
 *    aborts.  trylock and _timedlock are not checked: they fail as usual.
 *  - Processes: a tree serves the threads of one process.  In shared memory
 *    (MAP_SHARED) two processes corrupt it: requests are addresses in their
 *    own process; expect a hang or the abort "request is already in a tree
 *    (locked twice? or is the tree used from another process? ...)".  To
 *    share ranges between processes, bind each process's tree to the same
 *    file with range_lock_tree_set_file(): the ranges it grants are then
 *    also OFD locks on the file's bytes, which other processes respect.
 *  - Threads that exit: a range a thread holds stays held when it exits
 *    (fast reads too), until some thread unlocks its request; nothing is
 *    released automatically, which would break exclusion.
 *  - fork(): as for pthread locks, a child process may use a tree only if no
 *    other thread of the parent held or waited on it at the time of the fork
 *    (its requests would stay in the child's tree forever).  fork-then-exec
 *    is always fine.  Trees are private to one process.  The child's copy of
 *    the fast-read table keeps the forking thread's slot and frees the
 *    others' (their holds stay held), so the child's trees read fast too.
 *  - dlclose(): a thread that read fast (or, with the POSIX wait backend,
 *    waited in an _interruptible call) runs the library's code when it
 *    exits, so the library stays mapped until the process exits:
 *    librangelock.so is linked with -z nodelete, and a static copy linked
 *    into a plugin (librangelock.a is position-independent) keeps that
 *    plugin loaded from its first fast read (POSIX backend: its first wait
 *    of any kind); dlclose() of a plugin whose copy made neither unloads
 *    it as usual.  (musl loads no dlopen()ed object that uses initial-exec
 *    thread-local storage, as the library does: there it must be linked
 *    into the program or its startup libraries.)
 */
#ifndef RANGELOCK_RANGELOCK_H
#define RANGELOCK_RANGELOCK_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h> /* clockid_t */
#include <time.h>

/* Declared here too: under strict ISO C (gcc -std=c99, no POSIX feature
 * macro) <time.h> defines no struct timespec, and the timed calls below
 * must still name the one type a POSIX program's <time.h> defines. */
struct timespec;

#include <rangelock/rangelock_export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The structs are 8-byte aligned on every target (i386 aligns uint64_t to 4
 * by default): the library tags request pointers with their 3 low bits.
 */
#if defined(__GNUC__) || defined(__clang__)
#define RANGELOCK_ALIGN8 __attribute__((aligned(8)))
#else
#define RANGELOCK_ALIGN8
#endif

/*
 * The tree's one anonymous union (C11, C++) is marked __extension__ for
 * gcc and clang, so that the header compiles without a warning under
 * -std=c99 -pedantic and -std=gnu89 -pedantic too; the layout and the
 * member names are the same.
 */
#if defined(__GNUC__) || defined(__clang__)
#define RANGELOCK_ANON_UNION __extension__ union
#else
#define RANGELOCK_ANON_UNION union
#endif

/*
 * 64-bit time on 32-bit glibc targets (i386, armhf, ...): struct timespec
 * there has a 32-bit tv_sec unless the program is built with _TIME_BITS=64
 * (glibc 2.34+).  The library exports both ABIs of the timed calls, as glibc
 * does for its own: range_*_timedlock takes the 32-bit struct timespec, and
 * range_*_timedlock_time64 the 64-bit one.  A program built with
 * _TIME_BITS=64 calls the latter under the usual names (a symbol redirect),
 * so a program and the library never disagree on the layout.  On 64-bit
 * targets and on musl (64-bit time_t everywhere) there is one ABI and no
 * _time64 symbol.
 */
#if defined(__GLIBC__) && defined(__TIMESIZE) && __TIMESIZE == 32 && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#define RANGELOCK_TIME64_ABI 1
#else
#define RANGELOCK_TIME64_ABI 0
#endif
#if RANGELOCK_TIME64_ABI && defined(__USE_TIME_BITS64)
#define RANGELOCK_TIME64_REDIRECT(name) __asm__(#name "_time64")
#else
#define RANGELOCK_TIME64_REDIRECT(name)
#endif

/* The version of this header (since 0.1); rangelock_version() gives the
 * library's. */
#define RANGELOCK_VERSION_MAJOR 0
#define RANGELOCK_VERSION_MINOR 4
#define RANGELOCK_VERSION_PATCH 0
#define RANGELOCK_VERSION_STRING "0.4.0"

/**
 * RANGE_LOCK_FULL - the last unit of every resource.
 * Since: 0.1
 */
#define RANGE_LOCK_FULL UINT64_MAX

/**
 * struct range_lock - one request for a range, held or waiting.
 *
 * All fields are private to the library; read @start and @last if you like,
 * write none of them.  Initialise with range_lock_init(), range_lock_init_full()
 * or RANGE_LOCK_INITIALIZER().  A request can be locked and unlocked any
 * number of times, one use after the other.
 *
 * Since: 0.1
 */
struct RANGELOCK_ALIGN8 range_lock {
	struct range_lock *rb_left;   /* interval-tree links */
	struct range_lock *rb_right;
	uintptr_t rb_parent_flags;    /* parent | colour, reader, in-tree bits */
	uint64_t start;               /* first unit */
	uint64_t last;                /* last unit (inclusive) */
	uint64_t subtree_last;        /* largest @last in this subtree */
	uint64_t seqnum;              /* precedence order in the tree */
	uint32_t wait_word;           /* blocking count << 2 | flags (futex) */
	uint32_t owner_tid;           /* thread that made it, or its read slot */
};

struct range_lock_file; /* private: a tree's second level (file_lock.c) */

/**
 * struct range_lock_tree - the lock protecting one whole resource.
 *
 * Private fields; initialise with range_lock_tree_init() or
 * RANGE_LOCK_TREE_INITIALIZER().  Not process-shared.
 *
 * Since: 0.1
 */
struct RANGELOCK_ALIGN8 range_lock_tree {
	uintptr_t lock_word;          /* internal lock, or the fast holder */
	struct range_lock *root;      /* interval tree of all requests */
	struct range_lock *leftmost;  /* request with the smallest start */
	uint64_t seqnum;              /* next arrival number */
	struct range_lock_stats *stats; /* NULL unless statistics are enabled */
	uint32_t nr_requests;         /* requests in the tree */
	uint32_t nr_waiting;          /* of which have blockers */
	uint32_t flags;               /* policy bits, changed only while empty */
	uint32_t nr_writers;          /* writers among them (fast reads) */
	RANGELOCK_ANON_UNION {        /* 8 bytes on every target, so that the */
		struct range_lock_file *file; /* layout is the same on 32 bits: */
		uint64_t file_slot_;  /* NULL unless bound to a file */
	};                            /* (range_lock_tree_set_file()) */
};

/* The tree's policy flags (struct range_lock_tree.flags; the other bits
 * are private): strict FIFO (since 0.2); no reader fast path (since 0.3);
 * readers first (since 0.4). */
#define RANGE_LOCK_TREE_FLAG_FIFO 1u
#define RANGE_LOCK_TREE_FLAG_NO_FAST_READ 2u
/* Readers first (since 0.4): range_lock_tree_defer_writers(). */
#define RANGE_LOCK_TREE_FLAG_DEFER_WRITERS 8u

/**
 * RANGE_LOCK_TREE_INITIALIZER() - static initialiser of a tree (default policy).
 * Since: 0.1
 */
#define RANGE_LOCK_TREE_INITIALIZER(name) { 0, 0, 0, 0, 0, 0, 0, 0, 0, { 0 } }
/**
 * RANGE_LOCK_TREE_INITIALIZER_FIFO() - static initialiser of a strict-FIFO tree.
 * Since: 0.2
 */
#define RANGE_LOCK_TREE_INITIALIZER_FIFO(name) \
	{ 0, 0, 0, 0, 0, 0, 0, RANGE_LOCK_TREE_FLAG_FIFO, 0, { 0 } }
/**
 * DEFINE_RANGE_LOCK_TREE() - define and initialise a tree (default policy).
 * Since: 0.1
 */
#define DEFINE_RANGE_LOCK_TREE(name) \
	struct range_lock_tree name = RANGE_LOCK_TREE_INITIALIZER(name)
/**
 * DEFINE_RANGE_LOCK_TREE_FIFO() - define and initialise a strict-FIFO tree.
 * Since: 0.2
 */
#define DEFINE_RANGE_LOCK_TREE_FIFO(name) \
	struct range_lock_tree name = RANGE_LOCK_TREE_INITIALIZER_FIFO(name)

/**
 * RANGE_LOCK_INITIALIZER() - static initialiser of a request for
 * [start, last]; start <= last is the caller's duty here (range_lock_init()
 * checks it).  An all-zero request is a valid request for [0, 0].
 *
 * Since: 0.1
 */
#define RANGE_LOCK_INITIALIZER(first, final) \
	{ 0, 0, 0, (first), (final), (final), 0, 0, 0 }
/**
 * DEFINE_RANGE_LOCK() - define a request for [start, last].
 * Since: 0.1
 */
#define DEFINE_RANGE_LOCK(name, first, final) \
	struct range_lock name = RANGE_LOCK_INITIALIZER(first, final)
/**
 * DEFINE_RANGE_LOCK_FULL() - define a request for the whole resource.
 * Since: 0.1
 */
#define DEFINE_RANGE_LOCK_FULL(name) DEFINE_RANGE_LOCK(name, 0, RANGE_LOCK_FULL)

/**
 * range_lock_tree_init() - initialise a tree: no requests, statistics off.
 * @tree: the tree; it must not be in use.
 *
 * It reads nothing of @tree (which may be fresh memory), so it cannot tell
 * a tree that still has what range_lock_tree_set_segments() or
 * range_lock_tree_set_file() allocated: call
 * range_lock_tree_destroy() first, or that memory (a segmented tree's
 * segment array, a bound tree's file state) is lost.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_lock_tree_init(struct range_lock_tree *tree);

/**
 * range_lock_tree_set_fifo() - choose the tree's policy (see Policies above).
 * @tree: the tree; it must be empty (no request held or waiting).
 * @fifo: nonzero for strict FIFO (the kernel patch's semantics, arrival
 *        order among conflicting requests), 0 for the default policy
 *        (eventual fairness: bounded overtaking).  range_lock_tree_init()
 *        and RANGE_LOCK_TREE_INITIALIZER() give the default policy.
 *
 * Return: 0, or -EBUSY if the tree is not empty (nothing is changed).
 *
 * Since: 0.2
 */
RANGELOCK_API int range_lock_tree_set_fifo(struct range_lock_tree *tree, int fifo);

/**
 * range_lock_tree_defer_writers() - let sleeping readers go first.
 * @tree: the tree, with or without segments; it may be in use.
 * @on:   nonzero: writers defer to the tree's sleeping readers; 0 (the
 *        default of range_lock_tree_init() and the static initialisers):
 *        they do not.
 *
 * With more threads than CPUs, a reader that meets a writer preempted while
 * holding sleeps until that writer runs again, while the other writers, on
 * ranges of their own, keep the CPUs: readers then complete a small share
 * of the operations (a tenth to a fiftieth of a writer's, measured with 4
 * writers and 2 readers on 2 CPUs).  On a readers-first tree, a blocking
 * write lock call (range_write_lock(), _interruptible, _killable,
 * _timedlock, and the range_lock_many() calls of a set with a writer) that
 * finds a reader of the tree asleep in its wait first waits, before it
 * enters the tree, until no reader of the tree sleeps, for at most about
 * 2 ms; then it goes on as if it had just been called.  The wait ends
 * early at a timed call's deadline, or when a signal handler runs during an
 * interruptible call (the call goes on; it returns -EINTR only for a
 * handler that runs while it waits for a request).  Trylocks, asynchronous
 * submissions, grow, and read calls never defer.
 *
 * What it costs: a writer whose range conflicts with nothing may wait (the
 * promise "a request that conflicts with nothing is granted at once" does
 * not hold for writers of this tree), and a thread that holds a range a
 * reader sleeps for and then makes a write lock call on the tree waits the
 * whole 2 ms.  Calls on a tree without readers asleep, and every call of
 * a tree that is not readers-first, cost what they did.  The grant order
 * inside the tree is the policy's (default or FIFO) either way.
 *
 * Readers counted for this share one word with the trees whose addresses
 * hash alike (64 words per process): a writer may then defer to another
 * tree's readers, for the same bound.
 *
 * Return: 0.
 *
 * Since: 0.4
 */
RANGELOCK_API int range_lock_tree_defer_writers(struct range_lock_tree *tree, int on);

/**
 * range_lock_tree_set_fast_read() - allow or forbid the reader fast path.
 * @tree: the tree; it may be in use.
 * @on:   nonzero (the default of range_lock_tree_init() and the static
 *        initialisers) allows it; 0 forbids it: every read then goes
 *        through the tree's internal lock, as in release 0.2.
 *
 * While no writer uses a tree, its readers publish their requests in
 * per-thread slots of a process-wide table instead of the tree: a read lock
 * and unlock then write no cache line another thread writes, so readers
 * scale with the cores.  The first writer (and any call that must see every
 * holder: statistics, the dump, destroy, set_fifo, set_file, set_segments)
 * moves the
 * published readers into the tree as the held readers they are, and the
 * tree stays on the tree path for a while; writers wait only for the
 * readers whose ranges they intersect.  See "Fast reads" above.
 *
 * Return: 0.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_tree_set_fast_read(struct range_lock_tree *tree, int on);

/**
 * range_lock_tree_set_file() - bind a tree to a file: every range it grants
 * is also an OFD lock on the same bytes of the file.
 * @tree: the tree; it must be empty (no request held or waiting).
 * @fd:   an open descriptor of a regular file, open for reading AND writing
 *        (O_RDWR).  The caller may close @fd at once as far as the tree is
 *        concerned (but see "What a bound tree does to the rest of the
 *        process" below: closing any descriptor of a file drops the
 *        process's classic fcntl locks on it, POSIX).
 *
 * Afterwards units are bytes, and every lock call returns holding the range
 * at both levels: locally among this process's threads (first, with the
 * usual ordering), then as an OFD lock in the same mode (fcntl
 * F_OFD_SETLK), which other processes -- and other nodes, on a cluster file
 * system that carries OFD locks -- respect.  Unlock releases it, downgrade
 * converts it to a read lock.  One OFD lock per byte covers all the local
 * holders there (the strongest mode), released only when none is left;
 * nothing is cached after the last local holder unlocks.
 *   - [start, RANGE_LOCK_FULL] means from @start to the end of the file and
 *     beyond; other ranges must fit off_t (start and last <= INT64_MAX):
 *     otherwise the calls that can fail return -EINVAL and the plain calls
 *     and trylock abort.
 *   - Waiting for another process polls F_OFD_SETLK with a back-off from
 *     50 us to 5 ms, outside every internal lock, and keeps each call's
 *     contract: trylock returns 0 without waiting, _timedlock keeps its
 *     deadline, _interruptible returns -EINTR when a handler ran while it
 *     slept, _killable is a cancellation point (and only it); a call that
 *     gives up leaves nothing locked at either level.  Polling is not fair
 *     across processes, and the kernel detects no deadlock between OFD
 *     locks: a cycle across processes waits until a _timedlock gives up.
 *   - A process that dies loses its OFD locks (the kernel drops them when
 *     the description closes); what it half-wrote stays half-written.
 *   - Two trees bound to one file exclude each other as two processes do
 *     (the same waits, the same polling), even within one thread (which
 *     then deadlocks with itself).  They share the process's one
 *     description of the file, so the kernel sees one owner: the library
 *     keeps them apart, and shows their locks merged to other processes.
 *   - Errors a lock or unlock call cannot report (ENOLCK, EIO, a lock lost
 *     by a network file system's server and reported by fcntl) abort with a
 *     message: never success for a range not locked at the second level.
 *   - Statistics and the dump describe the local level only.
 *
 * A tree with segments (range_lock_tree_set_segments()) may be bound
 * before or after the split, and stays bound through a re-split or a
 * merge: every request, within one stripe or spanning segments, takes the
 * OFD lock of its whole range once it holds it locally.
 *
 * What a bound tree does to the rest of the process:
 *   - Descriptors: the first bind of a file (device and inode) reopens it
 *     through /proc/self/fd/@fd, O_RDWR | O_CLOEXEC, into the process's one
 *     PRIVATE open file description of that file, which every tree bound
 *     to the file shares and which stays open until the process exits or
 *     execs: destroy, a rebind and a failed bind close nothing.  So the
 *     process holds one descriptor per distinct file it ever bound, binding
 *     a file again needs none, and an unlinked bound file keeps its disk
 *     space until exit.  The process must not close that descriptor (a
 *     loop closing "every other descriptor" would break the trees and drop
 *     their locks).  (Only if another thread replaces @fd during the call
 *     does set_file return -EINVAL and keep the stray description it
 *     opened: closing it could drop locks.)
 *   - Classic fcntl locks (F_SETLK, lockf(), SQLite's): no call of the
 *     library closes a descriptor while the process may hold them, so none
 *     is dropped by the library.  They conflict with the trees' OFD locks
 *     on the same bytes, as another owner's: F_SETLK fails, F_SETLKW waits
 *     (a thread that holds the range in a tree waits for ever; the kernel
 *     reports no EDEADLK across OFD locks), and a tree's lock call waits
 *     for them.  exec() closes the private descriptions (O_CLOEXEC), and
 *     that close drops, POSIX, the classic locks the process still holds
 *     on those files -- which would otherwise survive exec().
 *   - flock() locks: untouched.  They belong to descriptions, the library
 *     never calls flock() and never closes a description that has them;
 *     on Linux they do not conflict with OFD locks (on NFS, where flock()
 *     is emulated by byte-range locks, they do).
 *   - OFD locks the process takes itself on other descriptions of the file
 *     conflict with the trees' as another owner's.
 *   - fork(): the child inherits the descriptions, and with them the
 *     parent's OFD locks' ownership.  The child closes them at once, in an
 *     atfork handler (fork() does not inherit classic locks, so that close
 *     drops nothing; the parent's locks stay, the parent still has the
 *     description).  A tree bound before the fork is cut off in the child:
 *     a lock call on it aborts, an unlock of a range the forking thread
 *     held releases it locally only.  Destroy it and bind again in the
 *     child, which then opens the child's own description.  A child made
 *     without fork() (clone(), syscall(SYS_fork)) runs no atfork handler
 *     and would share the parent's ownership: do not bind there.
 *     range_lock_tree_init() on a bound tree, instead of
 *     range_lock_tree_destroy(), leaks only the tree's count on the file
 *     (the description stays open either way).
 *   - lslocks shows these locks as OFDLCK with PID -1 and no usable path: the
 *     holder is the process whose /proc/PID/fdinfo/N lists the lock (one
 *     "lock:" line per lock, on the file's device:inode as in
 *     /proc/locks).
 *
 * There is no read-only binding: every tree can take write locks, and a
 * description shared by all the trees of a file must serve them all, so a
 * descriptor that could not take one mode is refused here rather than
 * failing at a lock call.
 *
 * Return: 0; -EBUSY if the tree is not empty (nothing changed); -EBADF if
 * @fd is not an open descriptor, is an O_PATH one, or is not open O_RDWR;
 * -EINVAL if it is not a regular file; another negative errno if the first
 * bind of the file cannot reopen it (-ENOENT when /proc is not mounted,
 * -EACCES, -EMFILE or -ENFILE when out of descriptors, -ENOMEM).  On an
 * error the tree keeps the binding it had.
 *
 * Since: 0.2
 */
RANGELOCK_API int range_lock_tree_set_file(struct range_lock_tree *tree, int fd);

/**
 * range_lock_tree_set_segments() - split the tree's key space into segments,
 * so that requests on different ranges share no lock and no cache line.
 * @tree:         the tree; it must be empty, and no other thread may be in
 *                a call on it, or enter one, until this call returns (as for
 *                range_lock_tree_init()).
 * @segments:     S, a power of two from 1 to 256; 1 (the default of every
 *                tree) means no segments: the tree as in earlier releases.
 * @stripe_shift: k, 0 to 63: units are dealt out in stripes of 2^k units,
 *                stripe t (units t * 2^k to (t + 1) * 2^k - 1) to segment
 *                t mod S.
 *
 * Without segments every lock and unlock that cannot use the tree's lock
 * word or a fast-read slot takes the tree's one internal lock and writes its
 * cache lines, so requests on disjoint ranges still serialise on them.  With
 * segments each segment is a tree of its own (internal lock, interval tree,
 * lock word, fast reads, word mode), and a request whose range lies within
 * one stripe runs in its segment alone: requests in different segments run
 * in parallel without touching a common line.  A request that meets several
 * stripes SPANS their segments: it enters all of them as one arrival (their
 * internal locks taken in ascending order and held together) and holds its
 * range when every segment has granted its part.  Exclusion is exact (no
 * false conflict across boundaries); both policies hold for every pair of
 * intersecting requests (FIFO: arrival order; default: the same bounded
 * overtaking, except that a spanning request never overtakes and is never
 * overtaken, as if it had waited past the hand-off bound from the start).
 *
 * Choosing S and k.  The segments repeat every S * 2^k units: segment g
 * holds stripes g, g + S, g + 2S, ...  Two threads whose ranges fall in
 * one segment share its lock and lines as on a tree without segments, so:
 *
 *  - make S * 2^k at least R, the size of the resource in units: every
 *    stripe of it then has a segment of its own (with less, areas
 *    S * 2^k units apart share their segments);
 *  - make 2^k at most the area one thread works in, with the areas'
 *    borders on multiples of 2^k: each area is then whole segments;
 *  - make 2^k several times a request, and requests aligned: a request
 *    within one stripe touches one segment; one that crosses a stripe
 *    border spans two (its parts, and each segment's internal lock:
 *    about 1,200 instructions more per lock and unlock),
 *    and one that meets n stripes spans min(n, S) segments (16 or
 *    more: a wide request, below);
 *  - segments beyond R / 2^k are never used: 128 bytes each, but every
 *    request that covers S stripes or more, the dump, statistics and
 *    destroy visit all S.
 *
 * Example: a 1 MiB buffer (bytes, R = 2^20), 4 writers each in its own
 * 256 KiB quarter, 4 KiB requests on 4 KiB boundaries, readers anywhere:
 * S = 4, k = 18 gives each quarter a segment (S * 2^k = R); no write spans,
 * a read spans only where it crosses a quarter's border.  S = 16, k = 16
 * works too (4 segments per quarter), with more reads crossing a 64 KiB
 * border.  S = 8, k = 16 puts the third quarter in segments 0-3 with the
 * first and the fourth with the second (S * 2^k = 512 KiB); S = 64,
 * k = 16 leaves segments 16-63 unused.
 *
 * Without a fixed layout (a large file, threads at random offsets): 2^k
 * several typical requests (byte ranges: k = 16..21; page numbers:
 * k = 4..9) and S the power of two at or above R / 2^k, at most 256; two
 * threads then share a segment with a probability of about 1 / S.
 *
 * Wide requests: the tree runs as a plain tree while they hold it.  On a
 * tree of 16 segments or more, a blocking lock call (plain, nested,
 * interruptible, killable, timed) whose range meets 16 segments or more
 * -- a whole-resource request, or any range over 16 stripes or more --
 * does not span them: it closes the segments (no new request enters
 * them), waits until the requests already in them have left, and then
 * holds its range in the tree itself, run as a tree without segments:
 * word mode, fast reads and everything else of such a tree apply, and
 * further wide requests run there at that speed, with no switch.  The
 * requests that arrive meanwhile wait behind it, as later arrivals; a
 * trylock returns 0 (busy) while it waits.  The first request within
 * fewer than 16 segments that finds the tree empty and free (no holder,
 * no waiter, no fast reader) opens the segments again; while the tree
 * holds requests, narrow ones enter it too, as on a tree without
 * segments.  So a small k cannot cost more than no segments: a request
 * that meets 16 segments or more is never split into 16 or more parts.
 * A deadline, signal or cancellation during the wait gives up as any
 * wait does, and reopens the segments.  An asynchronous request, a set,
 * and a trylock never close the segments (they span them, or find the
 * tree running as a plain tree); an asynchronous submission that comes
 * while a wide request waits for the segments to empty waits for that
 * before it returns.  On a tree of fewer than 16 segments every request
 * meets at most 8 and a request over several stripes always spans.
 *
 * On a tree with segments: the lock, trylock, unlock and downgrade calls,
 * range_lock_shrink(), range_lock_tree_set_fifo(),
 * range_lock_tree_set_fast_read(), statistics, the dump and destroy work
 * as documented.  Statistics see the whole tree and count a spanning
 * request once; enable them after the segments
 * (range_lock_tree_enable_stats() says how they are kept).  Asynchronous
 * requests (range_read_lock_async() says how a spanning one is granted)
 * and sets work too (range_lock_many(): a set within one segment is a set
 * of that segment; any other set enters every segment of every request as
 * one arrival, never overtakes, and is never overtaken in the default
 * policy).  A tree with segments may be bound to a file, before or after
 * the split (range_lock_tree_set_file()): every request, spanning or not,
 * takes the OFD lock of its whole range after its local grant, as on a
 * tree without segments, and the calls keep their answers there.  Grow
 * works too, across segment boundaries (range_lock_grow() says what
 * differs).  The parts of a spanning request come from a cache of the
 * calling thread, which the unlocks (or give-ups, cancels, completions)
 * of spanning requests on that thread fill, whichever thread locked them:
 * once a thread has done a spanning request of a size, the next ones
 * allocate nothing (a grow across segments still does).  A thread keeps
 * at most 66 KiB there (on x86-64; 8 blocks of each of the two smallest
 * sizes, fewer of the larger), freed when it exits.  A spanning lock call
 * that finds no part in its cache and cannot allocate returns -ENOMEM
 * (the plain and trylock calls abort with a message); so does a set over
 * several segments, and a grow (range_lock_grow() aborts).
 *
 * A split is configuration, not a lock operation: it is NOT safe while
 * another thread may be in a call on the tree, or may enter one.  -EBUSY
 * reports requests left in the tree by calls that have returned (a held
 * or queued request, a fast reader); it does not make a concurrent split
 * safe, and a call that meets a split under way may abort with a message
 * or use freed memory.  Split the tree before the threads that use it
 * start, or after they have stopped.
 *
 * What a split keeps: the policy (a FIFO tree's segments are FIFO, and so
 * is the tree merged back from them), whether fast reads are allowed
 * (range_lock_tree_set_fast_read()), and the file of a bound tree.  Every
 * call of range_lock_tree_set_segments() first revokes the tree's fast
 * readers (moves them into the tree, as the first writer would): a tree
 * whose only holders are fast readers is not empty, and the call returns
 * -EBUSY.
 *
 * Return: 0; -EINVAL for a bad @segments or @stripe_shift (checked first,
 * whatever the tree); -EBUSY if the tree is not empty (nothing is
 * changed); -ENOTSUP when statistics are enabled and the call would change
 * the layout: @segments above 1 on a tree without segments, or any
 * @segments on a tree with segments (enable statistics after the
 * segments; re-segmenting or merging needs a tree without them); -ENOMEM.
 * On a tree without segments, @segments 1 changes nothing, statistics or
 * not: it returns 0 if the tree is empty, -EBUSY if not.  Calling it again
 * with other values re-segments an empty tree without statistics; a bound
 * tree stays bound to its file through every split and merge.  A tree with
 * segments owns memory: range_lock_tree_destroy() frees it, and its
 * statistics with it (or range_lock_tree_set_segments() with @segments 1,
 * without statistics).  range_lock_tree_init() on a tree with segments
 * does not free that memory: destroy the tree first.
 *
 * Since: 0.4
 */
RANGELOCK_API int range_lock_tree_set_segments(struct range_lock_tree *tree,
					       unsigned segments, unsigned stripe_shift);

/**
 * range_lock_tree_destroy() - check that a tree is unused before freeing it.
 * @tree: the tree.
 *
 * Fast reads are requests too: a fast reader makes the tree busy.
 *
 * Return: 0 when no request is held or waiting (the tree may then be freed or
 * re-initialised; a tree bound to a file is unbound, and the process's
 * description of the file stays open: range_lock_tree_set_file(); a tree
 * with segments frees them and is a tree without segments again),
 * -EBUSY otherwise (nothing is changed).
 *
 * Since: 0.1
 */
RANGELOCK_API int range_lock_tree_destroy(struct range_lock_tree *tree);

/**
 * range_lock_init() - prepare a request for the range [start, last].
 * @lock:  the request; it must not be in a tree.
 * @start: first unit.
 * @last:  last unit, inclusive; start <= last.
 *
 * Return: 0, or -EINVAL if start > last.  The request then keeps
 * [start, last] as given, marked invalid: every call that takes it (lock,
 * trylock, the set calls, the asynchronous calls, grow, shrink, unlock,
 * downgrade) aborts with a message naming the range ("range [10, 5] is
 * invalid: start > last"), rather than locking some other range.  Init it
 * again to use it.
 *
 * Since: 0.1
 */
RANGELOCK_API int range_lock_init(struct range_lock *lock, uint64_t start,
				  uint64_t last);

/**
 * range_lock_init_full() - prepare a request for [0, RANGE_LOCK_FULL].
 * Since: 0.1
 */
RANGELOCK_API void range_lock_init_full(struct range_lock *lock);

/**
 * range_read_lock() - lock [start, last] for reading; wait as long as needed.
 * @tree: the tree.
 * @lock: a request prepared by range_lock_init() and in no tree.
 *
 * Returns once no writer request ahead of this one on an intersecting range
 * remains (FIFO tree: no earlier one; default policy: see Policies above).
 * Readers share units with readers.  Not interrupted by signals.  Not a
 * cancellation point.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_read_lock(struct range_lock_tree *tree,
				   struct range_lock *lock);
/**
 * range_write_lock() - lock [start, last] for writing; wait as long as needed.
 *
 * Returns once no request of either mode ahead of this one on an
 * intersecting range remains.  Otherwise as range_read_lock().
 *
 * Since: 0.1
 */
RANGELOCK_API void range_write_lock(struct range_lock_tree *tree,
				    struct range_lock *lock);

/**
 * range_read_lock_interruptible() - range_read_lock(), but a signal handler
 * ends the wait.
 *
 * Return: 0 when the range is held; -EINTR when a signal handler ran while
 * the call slept, with or without SA_RESTART (as sem_wait(); a handler that
 * runs in the instants the call is awake -- taking the internal lock,
 * announcing its sleep -- is not reported, as with sem_wait()).  After -EINTR
 * the request is out of the tree and the later requests it delayed go on.
 * A request granted at the same moment as the signal is kept: 0.  In the
 * default policy an interruptible waiter is never overtaken (as if it had
 * reached the hand-off bound at once): an overtaken waiter wakes up to mark
 * itself or to claim its range, and a handler that ran in such an instant
 * would go unreported.
 *
 * Since: 0.1
 */
RANGELOCK_API int range_read_lock_interruptible(struct range_lock_tree *tree,
						struct range_lock *lock);
/**
 * range_write_lock_interruptible() - the writer's range_read_lock_interruptible().
 * Since: 0.1
 */
RANGELOCK_API int range_write_lock_interruptible(struct range_lock_tree *tree,
						 struct range_lock *lock);

/**
 * range_read_lock_killable() - range_read_lock() that is a cancellation point
 * while it waits.
 *
 * A thread cancelled by pthread_cancel() while it waits here (with
 * cancellation enabled) withdraws its request, leaving nothing in the tree,
 * and is then cancelled (cleanup handlers run, the thread exits).  Signals do
 * not end the wait.  The call does not wait and is not a cancellation point
 * when the range is free.
 *
 * The waiting thread looks for a cancellation request at least every
 * 10 ms (deferred cancellation only: no asynchronous cancellation, so
 * signal handlers and the rest of the program see none).  A cancellation
 * that arrives just as the range is granted may find the call returning 0:
 * the thread then holds the range and the cancellation stays pending for
 * its next cancellation point, as always with deferred cancellation -- so
 * hold ranges across cancellation points only under a cleanup handler that
 * unlocks them.
 *
 * Return: 0 when the range is held.  (The kernel's killable call returns
 * -EINTR on a fatal signal; in a process, a fatal signal ends the process.)
 *
 * Since: 0.1
 */
RANGELOCK_API int range_read_lock_killable(struct range_lock_tree *tree,
					   struct range_lock *lock);
/**
 * range_write_lock_killable() - the writer's range_read_lock_killable().
 * Since: 0.1
 */
RANGELOCK_API int range_write_lock_killable(struct range_lock_tree *tree,
					    struct range_lock *lock);

/**
 * range_read_trylock() - lock for reading only if that needs no wait.
 *
 * Succeeds exactly when range_read_lock() called at that moment would
 * return without waiting.  FIFO tree: when no intersecting writer request
 * is held or waiting (a waiting writer counts: no stealing).  Default
 * policy: also when every intersecting writer request waits and none has
 * reached the hand-off bound (the trylock then overtakes them).
 *
 * Return: 1 when acquired, 0 otherwise.  On 0 nothing is left in the tree.
 *
 * Since: 0.1
 */
RANGELOCK_API int range_read_trylock(struct range_lock_tree *tree,
				     struct range_lock *lock);
/**
 * range_write_trylock() - lock for writing only if that needs no wait.
 *
 * As range_read_trylock(), with every intersecting request conflicting.
 * Return: 1 when acquired, 0 otherwise.  On 0 nothing is left in the tree.
 *
 * Since: 0.1
 */
RANGELOCK_API int range_write_trylock(struct range_lock_tree *tree,
				      struct range_lock *lock);

/**
 * range_read_timedlock() - range_read_lock() with an absolute deadline.
 * @clockid: CLOCK_MONOTONIC or CLOCK_REALTIME, the clock of @abstime.
 * @abstime: the deadline.
 *
 * A free range is taken even when the deadline has passed (as
 * pthread_rwlock_timedrdlock()).  @clockid and @abstime are checked first,
 * before the range is looked at: a bad one is -EINVAL even when the range
 * is free, as glibc's pthread_rwlock_timedrdlock() and
 * pthread_rwlock_clockrdlock() do (POSIX allows skipping the check when the
 * lock is free; pthread_mutex_timedlock() in glibc does).  Signals do not
 * end the wait.
 *
 * Return: 0 when the range is held; -ETIMEDOUT when the deadline passed first
 * (the request is then out of the tree); -EINVAL, with nothing changed,
 * for another clock, a NULL @abstime, or when "the abs_timeout nanoseconds
 * value is less than zero or greater than or equal to 1000 million"
 * (POSIX's words: the only invalid timespecs), whether or not the range is
 * free.  A negative tv_sec is valid: a deadline that has passed, so
 * -ETIMEDOUT when the call would have to wait (as glibc).
 *
 *
 * On 32-bit glibc targets a program built with _TIME_BITS=64 calls
 * range_read_timedlock_time64() under this name (see RANGELOCK_TIME64_ABI).
 *
 * Since: 0.1 (range_read_timedlock_time64(), on 32-bit glibc targets: 0.2)
 */
RANGELOCK_API int range_read_timedlock(struct range_lock_tree *tree,
				       struct range_lock *lock,
				       clockid_t clockid,
				       const struct timespec *abstime)
	RANGELOCK_TIME64_REDIRECT(range_read_timedlock);
/**
 * range_write_timedlock() - the writer's range_read_timedlock().
 * Since: 0.1 (range_write_timedlock_time64(), on 32-bit glibc targets: 0.2)
 */
RANGELOCK_API int range_write_timedlock(struct range_lock_tree *tree,
					struct range_lock *lock,
					clockid_t clockid,
					const struct timespec *abstime)
	RANGELOCK_TIME64_REDIRECT(range_write_timedlock);

/**
 * range_read_unlock() - release a range held for reading.
 *
 * Wakes the later requests that waited for this one only.  Aborts (see
 * Conventions above) if @lock is not held in @tree for reading.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_read_unlock(struct range_lock_tree *tree,
				     struct range_lock *lock);
/**
 * range_write_unlock() - release a range held for writing.
 *
 * Aborts if @lock is not held in @tree for writing.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_write_unlock(struct range_lock_tree *tree,
				      struct range_lock *lock);

/**
 * range_downgrade_write() - turn a write hold into a read hold, atomically.
 *
 * No other writer can get in between.  Later readers that waited only for
 * this request run now; later writers keep waiting.  Release afterwards with
 * range_read_unlock().  Aborts if @lock is not held in @tree for writing.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_downgrade_write(struct range_lock_tree *tree,
					 struct range_lock *lock);

/* ---- several ranges in one arrival ----------------------------------- */

/* The modes of struct range_lock_item (since 0.3). */
#define RANGE_LOCK_READ  0
#define RANGE_LOCK_WRITE 1

/**
 * struct range_lock_item - one request of a set, and its mode.
 * @lock: a request prepared by range_lock_init() and in no tree.
 * @mode: RANGE_LOCK_READ or RANGE_LOCK_WRITE (anything else aborts).
 *
 * Since: 0.3
 */
struct range_lock_item {
	struct range_lock *lock;
	int mode;
};

/**
 * range_lock_many() - lock several ranges of one tree at once, all or
 * nothing, without deadlock.
 * @tree:  the tree.
 * @items: @n requests, each with its mode; their ranges may overlap.
 * @n:     how many; 0 locks nothing.
 *
 * For work on several places of one resource at once (copying a range of a
 * file to another offset, moving a record, a transaction over several key
 * spans).  Locking them one after the other can deadlock: thread A holds x
 * and waits for y while B holds y and waits for x.  The requests of one call
 * enter the tree as ONE arrival, in one critical section, all with the same
 * place in the order; so no cycle can form among such calls, whatever the
 * order of their items.  The call returns once it holds every one.
 *
 * Requests of one call never conflict with each other: two writers of one
 * call on the same unit both hold it, as do a writer and a reader (one
 * caller, who knows what it does with its own units).  Each request
 * conflicts with everyone else's as usual.
 *
 * Order: FIFO tree: the set takes its place behind every request that came
 * before it, on every unit of every range.  Default policy: a set overtakes
 * waiting requests only as a whole, when each of its ranges could be taken
 * at once by a lock call; otherwise all of it waits in arrival order.
 * While it waits, the ranges already free to it may be held (as the kernel
 * does for one range): other requests wait for them.  A hand-off bound
 * started at the call's first wait covers all of it.  "Without deadlock"
 * is among set calls and single lock calls of threads that hold nothing
 * else on the tree; a thread that grows a held range into a range of the
 * set can still deadlock with it (see range_lock_grow()).
 *
 * Each request is unlocked on its own (range_read_unlock() or
 * range_write_unlock() by its mode, in any order, from any thread) or all
 * at once with range_unlock_many().  Never read fast, never in word mode.
 * On a tree bound to a file the second level is taken for each range (see
 * range_lock_tree_set_file()), all or nothing as well, without holding one
 * process's OFD lock while waiting for another's; there the ranges of one
 * call must not overlap unless both are reads (abort: the kernel has one
 * owner for all of them).  On a tree with segments
 * (range_lock_tree_set_segments()), a set whose requests all lie in one
 * segment is a set of that segment, as above; any other set enters every
 * segment of every request as one arrival, all at one place in the order
 * (no cycle among set calls either), never overtakes and, in the default
 * policy, is never overtaken, as a spanning request; it allocates its
 * requests' parts (out of memory: the void call aborts with a message,
 * the others return -ENOMEM).  Aborts, as for single requests, on a NULL
 * tree or request, a request already in a tree, or one listed twice.
 *
 * Since: 0.3
 */
RANGELOCK_API void range_lock_many(struct range_lock_tree *tree,
				   const struct range_lock_item *items, unsigned n);
/**
 * range_lock_many_interruptible() - range_lock_many(), but a signal handler
 * ends the wait.
 *
 * Return: 0 when every range is held; -EINTR as
 * range_read_lock_interruptible(), and then no request of the set is in the
 * tree (those already held are released).  A call whose ranges are all
 * granted by the time it looks keeps them: 0.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_many_interruptible(struct range_lock_tree *tree,
						const struct range_lock_item *items,
						unsigned n);
/**
 * range_lock_many_killable() - range_lock_many() that is a cancellation
 * point while it waits (as range_read_lock_killable(): cancelled, it
 * withdraws every request of the set, held ones included).
 *
 * Return: 0.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_many_killable(struct range_lock_tree *tree,
					   const struct range_lock_item *items,
					   unsigned n);
/**
 * range_lock_many_timed() - range_lock_many() with an absolute deadline
 * (@clockid and @abstime as for range_read_timedlock()).
 *
 * Return: 0; -ETIMEDOUT (no request of the set left in the tree); -EINVAL
 * for a bad clock or deadline (as for range_read_timedlock(): checked
 * first, even when every range is free; nothing is locked).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_many_timed(struct range_lock_tree *tree,
					const struct range_lock_item *items, unsigned n,
					clockid_t clockid, const struct timespec *abstime)
	RANGELOCK_TIME64_REDIRECT(range_lock_many_timed);
/**
 * range_lock_many_try() - lock the set only if that needs no wait (when
 * range_lock_many() would return without waiting).
 *
 * Return: 1 when every range is held, 0 otherwise (nothing is left in the
 * tree); -ENOMEM (tree with segments, see range_lock_many()).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_many_try(struct range_lock_tree *tree,
				      const struct range_lock_item *items, unsigned n);
/**
 * range_unlock_many() - unlock @n held requests of @tree, each by its mode
 * (any held requests: of one set or not).  Aborts as the unlock calls do.
 *
 * Every member is released before any completion of an asynchronous
 * request that the releases grant runs (on the calling thread, before the
 * call returns; inside a completion, after that completion returns): a
 * completion never runs while a member of the call is still held, on
 * every tree, with segments or without.
 *
 * Since: 0.3
 */
RANGELOCK_API void range_unlock_many(struct range_lock_tree *tree,
				     const struct range_lock_item *items, unsigned n);

/* ---- changing a held range ------------------------------------------- */

/**
 * range_lock_shrink() - keep only [start, last] of a held range.
 * @tree:  the tree.
 * @lock:  a request held in @tree (either mode).
 * @start: first unit kept; @lock->start <= @start.
 * @last:  last unit kept; @start <= @last <= @lock->last.
 *
 * Never waits.  The units given up are free at once: the requests that
 * waited only for them are released, exactly as if @lock had been
 * unlocked for them (those that still intersect [start, last] keep waiting).
 * The request keeps its mode and its place in the order.  (OpenZFS's
 * zfs_rangelock_reduce(): a write that must grow the file's block size
 * locks the whole file, then reduces the lock to the range it writes.)
 * On a tree bound to a file the OFD locks of the units given up are
 * released first.  On a tree with segments a request that spans several
 * changes in every segment it holds in one step (the segments it leaves
 * are free at once, each part keeps its place), and one shrunk to a single
 * stripe is a plain hold of that segment again.
 *
 * Return: 0; -EINVAL if [start, last] is not a non-empty sub-range of what
 * @lock holds, or does not fit off_t on a bound tree (nothing changed).
 * Aborts if @lock is not held in @tree.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_shrink(struct range_lock_tree *tree, struct range_lock *lock,
				    uint64_t start, uint64_t last);

/**
 * range_lock_grow() - extend a held range to [start, last], holding what it
 * held all the while.
 * @tree:  the tree.
 * @lock:  a request held in @tree (either mode).
 * @start: first unit; @start <= @lock->start.
 * @last:  last unit; @last >= @lock->last.
 *
 * Waits only for conflicts on the units added.  Unlike an unlock and a new
 * lock, nobody gets in between: the request holds its old range throughout.
 * The units added take the request's place in the order (both policies):
 * they wait for every current holder and for every request that came before
 * this one first entered; every request that came later and still waits
 * there waits for them -- even one past the hand-off bound (a holder that
 * keeps growing keeps it out, as a holder that never unlocks does).  A
 * reader that grows reads fast no more (it goes through the tree, as every
 * call here).  On a tree bound to a file the added units take their OFD
 * lock after the local grant (waiting for other processes as a lock call
 * does); if that gives up, the request is shrunk back.
 *
 * On a tree with segments (range_lock_tree_set_segments()) the request
 * may grow into segments it was not in (a request within one stripe then
 * spans segments, until a shrink brings it back to one stripe), with the
 * same rules.  A request spanning segments that came later and is granted
 * in some of them but still waits in another is not a holder: where the
 * added units meet its granted part, that part waits again, for the
 * grown request -- once, if it is asynchronous, the completion its
 * grant queued on the releasing thread has run (the grow sleeps briefly
 * until then; the forms that give up do so there too).  A grow that must
 * wait for a holder of the added units
 * in several segments waits for them one after the other.
 *
 * Deadlocks the caller can make, as with any lock taken while holding
 * another: the grow waits for every holder of the added units and goes
 * ahead of every later waiter there, so it deadlocks with a thread that
 * holds some of the added units while it waits for a range there or for
 * this request -- whatever it waited for before the grow: two holders
 * growing into each other; a set partly held (range_lock_many() holds the
 * ranges free to it while it waits for the others) whose waiting range is
 * among the added units; a thread holding one range and locking another.
 * And growing into a conflicting range the caller holds itself through
 * another request (a set's sibling too) waits for itself.  Where another
 * thread may hold part of the added units while it waits, use the _try or
 * _timed call (or unlock and lock the larger range).
 *
 * Return: 0 when [start, last] is held; -EINVAL if it is not a super-range
 * of what @lock holds, or does not fit off_t on a bound tree (nothing
 * changed).  Aborts if @lock is not held in @tree, or, on a tree with
 * segments, if the parts of a range that now spans segments cannot be
 * allocated (the forms that return errors return -ENOMEM).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_grow(struct range_lock_tree *tree, struct range_lock *lock,
				  uint64_t start, uint64_t last);
/**
 * range_lock_grow_interruptible() - range_lock_grow(), but a signal handler
 * ends the wait: -EINTR, and the request is left exactly as before the
 * call (its old range held, its place kept).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_grow_interruptible(struct range_lock_tree *tree,
						struct range_lock *lock,
						uint64_t start, uint64_t last);
/**
 * range_lock_grow_killable() - range_lock_grow() that is a cancellation
 * point while it waits; cancelled, it leaves the request as before the call
 * (still held: unlock it in a cleanup handler).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_grow_killable(struct range_lock_tree *tree,
					   struct range_lock *lock,
					   uint64_t start, uint64_t last);
/**
 * range_lock_grow_timed() - range_lock_grow() with an absolute deadline:
 * -ETIMEDOUT leaves the request as before the call; -EINVAL for a bad clock
 * or deadline (as for range_read_timedlock(): checked first, even when the
 * added units are free; the request is left as before the call).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_grow_timed(struct range_lock_tree *tree,
					struct range_lock *lock, uint64_t start,
					uint64_t last, clockid_t clockid,
					const struct timespec *abstime)
	RANGELOCK_TIME64_REDIRECT(range_lock_grow_timed);
/**
 * range_lock_grow_try() - grow only if that needs no wait.
 *
 * On a tree with segments it also reports 0 where the added units meet a
 * granted part of a later request spanning segments that still waits in
 * another segment: range_lock_grow() would make that part wait again, a
 * change a call that gives up at once does not make.
 *
 * Return: 1 when grown, 0 otherwise (nothing changed), -EINVAL as
 * range_lock_grow(), -ENOMEM on a tree with segments.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_grow_try(struct range_lock_tree *tree,
				      struct range_lock *lock,
				      uint64_t start, uint64_t last);

/* ---- asynchronous requests (event loops) ----------------------------- */

struct range_lock_async;

/**
 * range_lock_async_fn - the completion of an asynchronous request.
 * @req:    the request, now granted (@status 0) or given back (< 0).
 * @status: 0: @req holds its range; unlock it as any request
 *          (range_read_unlock() or range_write_unlock() on &@req->lock, by
 *          its mode, from any thread).  -EAGAIN: only on a tree bound to a
 *          file, when another process (or another tree of this process
 *          bound to the same file) holds an OFD lock on its bytes: the
 *          request holds nothing and is in no tree; submit it again later.
 *
 * Called exactly once per queued request that is not withdrawn, on the
 * thread whose release (unlock, downgrade, shrink, a give-up, a
 * withdrawal) granted it, after that call has dropped every internal lock
 * and before it returns, with cancellation disabled.  The library never
 * touches @req after calling it: the completion may free it.  It must
 * return (pthread_exit() in a completion aborts with a message: the
 * completions queued behind it would be lost; longjmp() out of it is
 * undefined).  It runs inside whatever call released the range, on that
 * thread -- an unlock, a timed lock call that gave up, a killable call's
 * cancellation -- so it must not take a lock that such a caller may hold
 * around that call (an application mutex held across an unlock, taken
 * again in the completion, deadlocks).
 *
 * A completion may call any librangelock call that does not wait: unlock,
 * trylock, the asynchronous calls, shrink, downgrade.  A lock call that
 * has to wait (on any tree) aborts with a message: it would stall the
 * release the completion runs in, maybe for ever (the range it waits for
 * may be one whose completion is queued behind it).  (On a tree bound to a
 * file, a blocking lock call held at once locally may still wait for
 * another process's OFD lock; in a completion, use trylock there.)  When a
 * completion's own unlock grants other asynchronous requests, their
 * completions run on the same thread after it returns, one after the other
 * in grant order -- never nested, so a chain of grants takes constant
 * stack.  Keep
 * completions short: post the request to your event loop (an eventfd, a
 * pipe, a queue) and do the work there.
 *
 * Since: 0.3
 */
typedef void range_lock_async_fn(struct range_lock_async *req, int status);

/**
 * struct range_lock_async - a request acquired without blocking a thread.
 * @lock: the request itself: read @lock.start and @lock.last; unlock it
 *        with range_read_unlock() or range_write_unlock() once granted.
 * @done: the completion (range_lock_async_fn).
 * @arg:  yours; the library never reads it.
 *
 * The other fields are private.  Initialise with range_lock_async_init().
 * From a submission that queues it until its completion has been called (or
 * it has been withdrawn) the library owns the request: do not free or
 * reuse it meanwhile.
 *
 * Since: 0.3
 */
struct RANGELOCK_ALIGN8 range_lock_async {
	struct range_lock lock;
	range_lock_async_fn *done;
	void *arg;
	struct range_lock_tree *tree_;   /* private: the tree it was queued in */
	struct range_lock_async *next_;  /* private: the completion queue */
	uint32_t reserved_[2];
};

/**
 * range_lock_async_init() - prepare an asynchronous request for
 * [start, last].
 * @req:   the request; it must not be in a tree.
 * @start: first unit.
 * @last:  last unit, inclusive; start <= last.
 * @done:  the completion; not NULL.
 * @arg:   stored in @req->arg for the completion.
 *
 * Return: 0, or -EINVAL if start > last (the request is then marked
 * invalid, as range_lock_init() does) or @done is NULL; either way it has
 * no completion then, and submitting it aborts with a message naming the
 * bad range or the missing completion.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_async_init(struct range_lock_async *req,
					uint64_t start, uint64_t last,
					range_lock_async_fn *done, void *arg);

/**
 * range_read_lock_async() - lock @req's range for reading without waiting:
 * held now, or queued until a release grants it.
 *
 * For event loops (epoll, io_uring, libuv servers) that must not park a
 * thread.  A queued request waits in the tree like any waiter and is
 * granted by the release that frees it, which then calls @req->done on the
 * releasing thread (see range_lock_async_fn).  Order: FIFO tree: arrival
 * order, as every request.  Default policy: a queued asynchronous request
 * is never overtaken (it is marked for the hand-off from the moment it is
 * queued, so the hand-off bound is 0 for it), and the release that leaves
 * it no blocker grants it directly.  (A holder from before it that grows
 * into its range still comes first: a growth takes its owner's place, see
 * range_lock_grow().)  An asynchronous request is taken
 * through the lock word on an empty tree, or through the reader fast path,
 * when that holds it at once, and never waits on the lock word.
 *
 * Deadlines: the library has no timer thread.  Arm a timer in your loop and
 * call range_lock_async_cancel() when it fires; 0 is your -ETIMEDOUT, and
 * -EALREADY means the completion comes (or came) with the grant.
 *
 * On a tree bound to a file, the OFD lock is tried without waiting, at
 * submission (held now, -EAGAIN) and at the grant (the completion gets 0
 * or -EAGAIN): a request never blocks a thread on another process.
 *
 * The checking mode checks the tree with asynchronous requests in it, but
 * counts them as no thread's holds (no self-deadlock, lock-order or
 * thread-exit checks: they belong to the loop, not to a thread).
 *
 * A queued request stands in the tree like a held one for later requests:
 * a thread that would unlock it (the loop) must not block in a lock call
 * on a range that conflicts with it -- that call waits for the request,
 * whose completion waits for the loop.
 *
 * Statistics count a queued request as a contended lock call, its grant as
 * an acquisition, a withdrawal in @gave_up_cancel; the dump shows a queued
 * one as "async".
 *
 * On a tree with segments (range_lock_tree_set_segments()), a request
 * within one stripe is a request of its segment, as above.  A request that
 * spans segments is queued in each segment where it meets a conflict and
 * holds its part at once in the others; the completion is called on the
 * thread whose release granted the last part, once every part is granted.
 * Its order is a spanning request's (it never overtakes, and is never
 * overtaken in the default policy).  The dump shows its parts as "span
 * part".
 *
 * Return: 0 (held now; the completion is not called), -EINPROGRESS (queued:
 * the completion will be called exactly once, unless the request is
 * withdrawn), -EAGAIN (bound tree, another process or another tree bound
 * to the file holds the bytes; nothing held, no completion), -EINVAL (bound
 * tree, a range beyond off_t), or -ENOMEM (a tree with segments could not
 * allocate the parts of a spanning request; nothing held, no completion).
 * Aborts on a NULL tree or request, a request with no completion,
 * or one already in a tree or queued.
 *
 * Since: 0.3
 */
RANGELOCK_API int range_read_lock_async(struct range_lock_tree *tree,
					struct range_lock_async *req);
/**
 * range_write_lock_async() - range_read_lock_async() for writing.
 * Since: 0.3
 */
RANGELOCK_API int range_write_lock_async(struct range_lock_tree *tree,
					 struct range_lock_async *req);

/**
 * range_lock_async_cancel() - withdraw a queued asynchronous request.
 * @tree: the tree it was submitted to.
 * @req:  the request.
 *
 * A withdrawn request leaves the tree as a give-up does: the requests that
 * waited for it only are released (and may be granted, their completions
 * run on this thread before the call returns).  Its completion is never
 * called; @req is yours again.
 *
 * On a tree with segments, a spanning request is withdrawn from every
 * segment at once, the parts already granted included: it is withdrawn
 * unless its last part was granted.
 *
 * Return: 0 when withdrawn; -EALREADY when @req was not queued any more: it
 * was granted -- its completion has run, is running or is about to run on
 * the granting thread, exactly once (wait for it through whatever the
 * completion signals; do not unlock or free @req before) -- or it was held
 * at submission.  Aborts on a NULL argument, a request queued in another
 * tree, or one not submitted asynchronously since its initialisation or its
 * withdrawal (a second cancel of a withdrawn request).
 *
 * Since: 0.3
 */
RANGELOCK_API int range_lock_async_cancel(struct range_lock_tree *tree,
					  struct range_lock_async *req);

/*
 * Lock-order annotations (the kernel's lockdep names).  @subclass tells the
 * checking mode (RANGELOCK_CHECKS: see Conventions above)
 * that taking two trees of the same kind in a nested fashion is
 * deliberate; without checking it is ignored and these are exactly the
 * plain calls.
 *
 * The checking mode (RANGELOCK_CHECKS) counts a hold as its locking
 * thread's until the unlock, as lockdep does: a range handed to another
 * thread for unlocking can make it report a false self-deadlock or a thread
 * exiting with ranges held.
 *
 * Return: range_write_lock_killable_nested() returns 0 when the range is
 * held, as range_write_lock_killable(); the others return nothing.
 * Since: 0.1
 */
RANGELOCK_API void range_read_lock_nested(struct range_lock_tree *tree,
					  struct range_lock *lock, int subclass);
RANGELOCK_API void range_write_lock_nested(struct range_lock_tree *tree,
					   struct range_lock *lock, int subclass);
RANGELOCK_API int range_write_lock_killable_nested(struct range_lock_tree *tree,
						   struct range_lock *lock,
						   int subclass);
/**
 * range_write_lock_nest_lock() - @nest_lock serialises this; plain write lock.
 * Since: 0.1
 */
#define range_write_lock_nest_lock(tree, lock, nest_lock) \
	((void)(nest_lock), range_write_lock((tree), (lock)))

/**
 * struct range_lock_stats - statistics of one tree.
 *
 * Counted only while enabled by range_lock_tree_enable_stats().  Acquisitions
 * include trylock successes; @contended counts the lock calls that had to
 * wait (granted or not); wait times are in nanoseconds of CLOCK_MONOTONIC and
 * are measured only for those.
 *
 * Every counter but the *_now ones only grows (until a reset).
 * Acquisitions count grants: one per request of a call that succeeded (a
 * lock, a trylock, each member of a set, an asynchronous request whose
 * completion ran), and one per grow.  A request granted and then given
 * back by a give-up (a member of a set granted when the set gave up, a
 * request granted as its killable wait was cancelled) leaves @held_now
 * and stays counted as acquired, with one difference between the trees:
 * a set member granted while other members of its set waited counts on
 * a tree without segments, and not on a tree with segments (a member
 * held at entry counts on both).
 *
 * Since: 0.1
 */
struct RANGELOCK_ALIGN8 range_lock_stats {
	uint64_t read_acquired;       /* read holds granted */
	uint64_t write_acquired;      /* write holds granted */
	uint64_t contended;           /* lock calls that had to wait */
	uint64_t wait_ns_total;       /* total time those waited */
	uint64_t wait_ns_max;         /* longest single wait */
	uint64_t gave_up_signal;      /* _interruptible calls that returned -EINTR */
	uint64_t gave_up_timeout;     /* _timedlock calls that returned -ETIMEDOUT */
	uint64_t gave_up_cancel;      /* _killable waits ended by cancellation,
				       * asynchronous requests withdrawn */
	uint64_t trylock_failed;      /* trylock calls that returned 0 */
	uint64_t held_now;            /* requests holding their range now */
	uint64_t waiting_now;         /* requests waiting now */
	uint64_t held_peak;           /* largest held_now seen */
	uint64_t waiting_peak;        /* largest waiting_now seen */
};

/**
 * range_lock_tree_enable_stats() - start counting statistics into @storage.
 * @storage: memory the library writes the counters to (with atomic
 *           stores); it must stay valid until the tree is destroyed.
 *
 * The tree itself stays 64 bytes; the counters live in memory you provide.
 * Counting starts from the requests present now (held_now, waiting_now).
 * Statistics count in the tree: the tree's fast reads stop (the fast
 * readers present are moved into the tree and counted) and do not resume
 * while statistics are enabled.
 *
 * On a tree with segments (range_lock_tree_set_segments()) each segment
 * counts in memory of its own, which the library allocates here (128
 * bytes a segment) and frees at range_lock_tree_destroy(), so that
 * segments still share no cache line; @storage receives the whole tree's
 * counters at each range_lock_tree_get_stats().  A request that spans
 * segments counts once (one acquisition, one hold, one wait), not once per
 * segment.  held_peak and waiting_peak are then the sums of the segments'
 * peaks: at least the whole tree's peak, possibly more.
 *
 * Return: 0, or -EINVAL if @storage is NULL, or -EBUSY if statistics are
 * already enabled with other storage, or -ENOMEM (a tree with segments).
 *
 * Since: 0.1
 */
RANGELOCK_API int range_lock_tree_enable_stats(struct range_lock_tree *tree,
					       struct range_lock_stats *storage);
/**
 * range_lock_tree_get_stats() - copy the counters.  All but the wait times
 * form a consistent snapshot (taken under the internal lock, every
 * segment's on a tree with segments); a waiter adds
 * its wait time without that lock, just after its grant.
 *
 * Return: 0, or -ENODATA if statistics were never enabled for @tree (@stats
 * is then zeroed).
 *
 * Since: 0.1
 */
RANGELOCK_API int range_lock_tree_get_stats(struct range_lock_tree *tree,
					    struct range_lock_stats *stats);
/**
 * range_lock_tree_reset_stats() - zero the counters; held_now and
 * waiting_now (and the peaks) restart from the requests present now.  On a
 * tree with segments the storage given to range_lock_tree_enable_stats()
 * is zeroed too.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_lock_tree_reset_stats(struct range_lock_tree *tree);

/**
 * struct range_lock_segment_stats - where a tree's holds lay: within one
 * segment, across several, or on the tree itself.
 *
 * Counted with the acquisitions of struct range_lock_stats, while
 * statistics are enabled, at no other cost: the three holds counters add
 * up to read_acquired + write_acquired.  Read by
 * range_lock_tree_get_segment_stats().
 *
 * A request that meets several segments costs a lock of each and waits
 * for the conflicts of all of them: when @spanning is a large share of
 * the holds, the stripes (2^k units) are narrow for the requests, or the
 * requests straddle the boundaries of the ranges the threads work on;
 * @spanning_parts / @spanning is the number of segments such a request
 * meets on average.  @whole_tree counts the holds on the tree run as a
 * plain tree (wide requests, range_lock_tree_set_segments(), and those
 * that came while one held it).
 *
 * Since: 0.4
 */
struct RANGELOCK_ALIGN8 range_lock_segment_stats {
	uint64_t one_segment;    /* holds of requests within one segment */
	uint64_t spanning;       /* holds of requests that met several segments */
	uint64_t spanning_parts; /* the segments those met, summed */
	uint64_t whole_tree;     /* holds on the tree itself (wide requests) */
};

/**
 * range_lock_tree_get_segment_stats() - copy the segment statistics.
 * @tree:  the tree.
 * @stats: where to copy them.
 * @size:  sizeof(struct range_lock_segment_stats), of the header you
 *         compiled with.
 *
 * A snapshot taken under the internal locks, as range_lock_tree_get_stats()
 * takes one.  The library writes exactly @size bytes of @stats: the
 * fields it knows, up to @size, and zeros after them.  So a program built
 * against a later header, whose struct has more fields, reads zeros for
 * those from this library, and a later library writes only this header's
 * fields for a program built against it.  A tree without segments is one
 * segment: every hold is in @one_segment.  A grow counts where the grown
 * request lies.
 *
 * Return: 0; -ENODATA if statistics are not enabled for @tree
 * (range_lock_tree_enable_stats()), with @stats zeroed; -EINVAL if @tree
 * or @stats is NULL or @size is less than 8.
 *
 * Since: 0.4
 */
RANGELOCK_API int range_lock_tree_get_segment_stats(struct range_lock_tree *tree,
						    struct range_lock_segment_stats *stats,
						    size_t size);

/**
 * range_lock_tree_dump() - print every request in the tree, in start order.
 *
 * One line per request: range, mode, held or waiting, seqnum, blocking count
 * and the thread id that made it: the kernel's (gettid()), or from 4194304
 * (2^22, above every kernel thread id) up an id of the library's own, one
 * per thread, for a thread whose gettid() fails (a seccomp filter may do
 * that); "slot=N" instead for a fast read, which knows its slot, not its
 * thread.  Fast readers are moved into the tree first, so they are shown
 * too.  Writers waiting on the lock word (word mode) keep no record but
 * their stacks: the dump wakes them, says how many it woke, and they wait
 * in the tree from then on.  Safe at any time; it holds the internal lock
 * while it prints, so do not dump to a pipe nobody reads.
 *
 * A tree with segments is shown segment by segment (" segment G:", then
 * that segment's requests), every line within the units of its segment.
 * A request that spans segments has a part in each segment it meets,
 * shown as the pieces of its range there, one line per stripe, each
 * clipped to its stripe: with 2 segments of 16-unit stripes, [0, 40]
 * shows under segment 0 as "[0, 15] write held seq=.. blocking=.. span
 * part 1/3 of [0, 40]" and "[32, 40] the same part, 3/3 of [0, 40]", and
 * under segment 1 as "[16, 31] ... span part 2/3 of [0, 40]" (the 2nd of
 * the 3 stripes it meets).  Mode and state appear once per part, on its
 * first line; a part of more than 4 stripes shows its first two, a line
 * "(N more of the same part, one in every S stripes)", and its last.
 *
 * Since: 0.1
 */
RANGELOCK_API void range_lock_tree_dump(struct range_lock_tree *tree,
					FILE *out);

/**
 * rangelock_version() - the version of the library that runs.
 *
 * RANGELOCK_VERSION_STRING is the version of the header a program was
 * compiled with; this call tells the version of the library it runs
 * against, which may be later (see VERSIONS in rangelock(7)).
 *
 * Return: a static string, "MAJOR.MINOR.PATCH" (e.g. "0.3.0"); never NULL.
 * Since: 0.1
 */
RANGELOCK_API const char *rangelock_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RANGELOCK_RANGELOCK_H */
