/* SPDX-License-Identifier: MIT */
/*
 * The second level: OFD locks on a file for what a bound tree's requests
 * hold (range_lock_tree_set_file(), docs/design.md section 9).
 *
 * STATE
 * =====
 * Per bound tree, on the heap (tree->file):
 *   fd      a PRIVATE open file description of the file, reopened through
 *           /proc/self/fd/N with the caller's access mode.  OFD locks belong
 *           to the description, so the caller's close(fd) drops nothing, a
 *           description shared after fork() cannot make two processes one
 *           owner, and two trees on one file exclude each other like two
 *           processes.
 *   seg[]   the bookkeeping, a sorted array of disjoint byte segments, each
 *           with
 *             readers, writers  how many of the tree's requests that are
 *                               granted LOCALLY (held, or granted and still
 *                               waiting here for other processes) cover it;
 *             held              the mode the kernel holds there for us.
 *           desired(seg) = WRITE if writers, READ if readers, else NONE.
 *   mutex   protects seg[] and orders the lowering system calls on fd.  It
 *           is never held while sleeping, and never together with the
 *           tree's internal lock (which is not held at all here).
 *
 * One description's locks merge and split: two local readers of [0, 9] and
 * [5, 14] hold one kernel read lock [0, 14], and F_UNLCK [0, 9] would drop
 * [5, 9] from under the second.  Hence the counts: a byte is released (or
 * downgraded) only where desired drops below held.
 *
 * INVARIANT (whenever mutex is free): held <= desired on every byte, and
 * held >= mode on the range of every request whose lock call returned 0.
 *   - Acquire (rl_file_lock): count the request in, then, while some byte
 *     of its range has held < mode, F_OFD_SETLK(mode) on its WHOLE range.
 *     Locally granted requests are compatible, so desired = mode on that
 *     range: the call sets held = desired there.  The call runs outside
 *     the mutex (see try_once()); between attempts the request sleeps
 *     with bounded back-off, outside it too.
 *   - Release (rl_file_unlock, and a request giving up): count it out, then
 *     lower held to desired, with one F_OFD_SETLK(F_RDLCK or F_UNLCK) per
 *     run of segments.  Lowering never waits for anybody.
 *   - Downgrade: WRITE -> READ counts, then the same lowering (F_RDLCK).
 *
 * WAITING FOR OTHER PROCESSES
 * ===========================
 * F_OFD_SETLKW cannot keep a deadline, is restarted under SA_RESTART and is
 * a cancellation point in glibc.  So we poll F_OFD_SETLK (not a
 * cancellation point in glibc or musl) and sleep between attempts through
 * the library's wait backend (rl_wait() on a private word nobody wakes: a
 * timed futex wait, which reports every signal handler and is no
 * cancellation point): 50 us doubling to 5 ms.  Each lock call's contract:
 *   TRY            one attempt;
 *   PLAIN          attempts until held; a signal only ends one nap;
 *   INTERRUPTIBLE  -EINTR when a handler ran during a nap;
 *   KILLABLE       pthread_testcancel() around every nap, under a cleanup
 *                  handler that counts the request out;
 *   TIMED          naps end at the deadline; one last attempt there.
 * Polling is unfair across processes (a stream of short holders elsewhere
 * can starve a poller); within the process the local level keeps order.
 *
 * fork(): a child must not share the parent's descriptions (it would be
 * the same owner).  An atfork handler closes every private description in
 * the child and marks its state unusable: a lock call there aborts, an
 * unlock or downgrade of a range the forking thread held touches nothing
 * at this level (the OFD lock is the parent's); the child binds again.
 */
#define _FILE_OFFSET_BITS 64 /* off_t and struct flock of 64 bits everywhere */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

#include "file_lock.h"
#include "wait.h"

#define OFF_MAX_U ((uint64_t)INT64_MAX)

enum { NONE = 0, READ = 1, WRITE = 2 };

#define NAP_MIN_NS 50000u
#define NAP_MAX_NS 5000000u

struct seg {
	uint64_t start, last;
	uint32_t readers, writers;
	int held;
};

struct range_lock_file {
	pthread_mutex_t mutex;
	int fd;                      /* private description; -1 in a fork child */
	struct seg *seg;
	size_t nr, cap;
	struct range_lock_file *next, *prev; /* every bound tree, for fork */
};

/* ---- messages --------------------------------------------------------- */

static void die(const char *what, uint64_t start, uint64_t last, const char *why)
{
	fprintf(stderr, "librangelock: %s([%llu, %llu]) on a file-bound tree: %s\n",
		what, (unsigned long long)start, (unsigned long long)last, why);
	fflush(stderr);
	abort();
}

/* ---- every bound tree's state, so that a fork child can close them ---- */

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct range_lock_file *registry;

static void registry_prepare(void) { pthread_mutex_lock(&registry_mutex); }
static void registry_parent(void) { pthread_mutex_unlock(&registry_mutex); }

/* The child has one thread: no other may be inside a state's mutex now,
 * but one may have been at the fork; such a state is never locked again. */
static void registry_child(void)
{
	for (struct range_lock_file *f = registry; f; f = f->next) {
		if (f->fd >= 0)
			close(f->fd); /* drops our reference only: the parent's
				       * locks stay, they are the parent's */
		f->fd = -1;
	}
	pthread_mutex_unlock(&registry_mutex); /* taken by registry_prepare() */
}

__attribute__((constructor)) static void registry_atfork(void)
{
	pthread_atfork(registry_prepare, registry_parent, registry_child);
}

/* ---- binding ---------------------------------------------------------- */

int rl_file_open(struct range_lock_file **out, int fd)
{
	char path[64];
	struct stat a, b;
	struct range_lock_file *f;
	int fl, acc, nfd;

	if (fd < 0)
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -EBADF;
#ifdef O_PATH
	if (fl & O_PATH)
		return -EBADF; /* no locks through an O_PATH descriptor */
#endif
	if (fstat(fd, &a))
		return -errno;
	if (!S_ISREG(a.st_mode))
		return -EINVAL;
	acc = fl & O_ACCMODE;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, acc | O_CLOEXEC | O_NOCTTY);
	if (nfd < 0)
		return -errno;
	if (fstat(nfd, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close(nfd); /* /proc/self/fd/N led elsewhere */
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		close(nfd);
		return -ENOMEM;
	}
	pthread_mutex_init(&f->mutex, NULL);
	f->fd = nfd;
	pthread_mutex_lock(&registry_mutex);
	f->next = registry;
	if (registry)
		registry->prev = f;
	registry = f;
	pthread_mutex_unlock(&registry_mutex);
	*out = f;
	return 0;
}

void rl_file_free(struct range_lock_file *f)
{
	pthread_mutex_lock(&registry_mutex);
	if (f->prev)
		f->prev->next = f->next;
	else
		registry = f->next;
	if (f->next)
		f->next->prev = f->prev;
	pthread_mutex_unlock(&registry_mutex);
	if (f->fd >= 0) {
		close(f->fd); /* the tree is empty: nothing of ours is locked */
		pthread_mutex_destroy(&f->mutex);
	}
	free(f->seg);
	free(f);
}

bool rl_file_range_ok(uint64_t start, uint64_t last)
{
	return start <= OFF_MAX_U && (last <= OFF_MAX_U || last == RANGE_LOCK_FULL);
}

/* RANGE_LOCK_FULL (and OFF_MAX) mean "to the end and beyond": l_len 0. */
static uint64_t file_last(uint64_t last)
{
	return last > OFF_MAX_U ? OFF_MAX_U : last;
}

/* ---- the bookkeeping, under f->mutex ----------------------------------- */

static int desired(const struct seg *s)
{
	return s->writers ? WRITE : s->readers ? READ : NONE;
}

static struct seg *insert_at(struct range_lock_file *f, size_t i)
{
	if (f->nr == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct seg *n = realloc(f->seg, cap * sizeof(*n));

		if (!n)
			die("lock", 0, 0, "out of memory for the bookkeeping");
		f->seg = n;
		f->cap = cap;
	}
	memmove(&f->seg[i + 1], &f->seg[i], (f->nr - i) * sizeof(*f->seg));
	f->nr++;
	return &f->seg[i];
}

/* Make @x the start of a segment if a segment covers both x-1 and x. */
static void split_at(struct range_lock_file *f, uint64_t x)
{
	for (size_t i = 0; i < f->nr; i++) {
		struct seg *s = &f->seg[i];

		if (s->start < x && x <= s->last) {
			struct seg *t = insert_at(f, i + 1);

			s = &f->seg[i];
			*t = *s;
			t->start = x;
			s->last = x - 1;
			return;
		}
		if (s->start >= x)
			return;
	}
}

/*
 * Segments exactly tiling [start, last] (gaps filled with empty ones):
 * returns the index of the first; *end is one past the last.
 */
static size_t cover(struct range_lock_file *f, uint64_t start, uint64_t last,
		    size_t *end)
{
	size_t i, first;
	uint64_t at = start;

	split_at(f, start);
	if (last < OFF_MAX_U)
		split_at(f, last + 1);
	for (i = 0; i < f->nr && f->seg[i].last < start; i++)
		;
	first = i;
	for (;;) {
		if (i < f->nr && f->seg[i].start <= last && f->seg[i].start == at) {
			at = f->seg[i].last + 1;
		} else {
			uint64_t gap_last = (i < f->nr && f->seg[i].start <= last)
						    ? f->seg[i].start - 1 : last;
			struct seg *g = insert_at(f, i);

			*g = (struct seg){ .start = at, .last = gap_last };
			at = gap_last + 1;
		}
		i++;
		if (at - 1 == last)
			break;
	}
	*end = i;
	return first;
}

/* Drop segments that mean nothing; merge equal neighbours. */
static void tidy(struct range_lock_file *f)
{
	size_t out = 0;

	for (size_t i = 0; i < f->nr; i++) {
		struct seg *s = &f->seg[i];

		if (!s->readers && !s->writers && s->held == NONE)
			continue;
		if (out) {
			struct seg *p = &f->seg[out - 1];

			if (p->last + 1 == s->start && p->readers == s->readers &&
			    p->writers == s->writers && p->held == s->held) {
				p->last = s->last;
				continue;
			}
		}
		f->seg[out++] = *s;
	}
	f->nr = out;
}

static int setlk(struct range_lock_file *f, int mode, uint64_t start, uint64_t last)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = mode == WRITE ? F_WRLCK : mode == READ ? F_RDLCK : F_UNLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)start;
	fl.l_len = last >= OFF_MAX_U ? 0 : (off_t)(last - start + 1);
	/* F_OFD_SETLK never blocks and is not a cancellation point. */
	while (fcntl(f->fd, F_OFD_SETLK, &fl) < 0) {
		if (errno == EINTR)
			continue;
		return -errno;
	}
	return 0;
}

static void setlk_or_die(struct range_lock_file *f, int mode, uint64_t start,
			 uint64_t last)
{
	int r = setlk(f, mode, start, last);

	if (r) {
		pthread_mutex_unlock(&f->mutex);
		die(mode == NONE ? "unlock" : "downgrade", start, last, strerror(-r));
	}
}

/* Lower held to desired on [start, last]: one call per run of segments
 * that go to the same mode.  Never waits (lowering conflicts with nobody). */
static void lower(struct range_lock_file *f, uint64_t start, uint64_t last)
{
	size_t end, i = cover(f, start, last, &end);

	while (i < end) {
		struct seg *s = &f->seg[i];
		int to = desired(s);
		size_t j = i + 1;

		if (s->held <= to) {
			i++;
			continue;
		}
		while (j < end && f->seg[j].held > desired(&f->seg[j]) &&
		       desired(&f->seg[j]) == to)
			j++;
		setlk_or_die(f, to, s->start, f->seg[j - 1].last);
		for (size_t k = i; k < j; k++)
			f->seg[k].held = to;
		i = j;
	}
	tidy(f);
}

/* Count a request in (+1) or out (-1); false if counting out finds a byte
 * that it does not cover (the request is not held in that mode). */
static bool count(struct range_lock_file *f, uint64_t start, uint64_t last,
		  bool reader, int d)
{
	size_t end, first = cover(f, start, last, &end);

	for (size_t i = first; i < end; i++) {
		uint32_t *c = reader ? &f->seg[i].readers : &f->seg[i].writers;

		if (d < 0 && *c == 0) {
			tidy(f);
			return false;
		}
	}
	for (size_t i = first; i < end; i++) {
		uint32_t *c = reader ? &f->seg[i].readers : &f->seg[i].writers;

		*c += (uint32_t)d;
	}
	return true;
}

/* Does a byte of [start, last] have held < mode? */
static bool needs(struct range_lock_file *f, uint64_t start, uint64_t last, int mode)
{
	uint64_t at = start;

	for (size_t i = 0; i < f->nr; i++) {
		const struct seg *s = &f->seg[i];

		if (s->last < start)
			continue;
		if (s->start > at || s->held < mode)
			return true;
		if (s->last >= last)
			return false;
		at = s->last + 1;
	}
	return true;
}

/* ---- acquire, release ------------------------------------------------- */

struct attempt {
	struct range_lock_file *f;
	uint64_t start, last;
	bool reader;
	void (*on_cancel)(void *); /* then: the caller's local unlock */
	void *arg;
};

static void check_usable(struct range_lock_file *f, const char *what,
			 uint64_t start, uint64_t last)
{
	if (f->fd < 0)
		die(what, start, last,
		    "tree bound before fork(): bind it again in the child");
	if (!rl_file_range_ok(start, last))
		die(what, start, last, "range does not fit off_t");
}

/*
 * One attempt: 1 held, 0 another process holds a conflicting lock.
 * The F_OFD_SETLK runs outside the mutex, so that the threads' acquisitions
 * do not queue behind each other's system calls.  That is safe because
 * nobody lowers a byte of this range meanwhile: our count is in, so
 * desired >= mode there, and lowering stops at desired; nobody raises one
 * above mode either (a local writer would conflict with us).  Calls on
 * disjoint bytes commute, and two acquirers of the same bytes set the same
 * mode.  Lowering stays under the mutex: a lowering in flight could
 * otherwise undo a newcomer's acquisition of the same bytes.
 */
static int try_once(struct attempt *a)
{
	struct range_lock_file *f = a->f;
	int mode = a->reader ? READ : WRITE;
	uint64_t last = file_last(a->last);
	bool need;
	int r;

	pthread_mutex_lock(&f->mutex);
	need = needs(f, a->start, last, mode);
	pthread_mutex_unlock(&f->mutex);
	if (!need)
		return 1;
	r = setlk(f, mode, a->start, last);
	if (r == -EAGAIN || r == -EACCES)
		return 0;
	if (r)
		die("lock", a->start, a->last,
		    r == -EBADF ? (a->reader ? "the file is not open for reading"
					     : "the file is not open for writing")
				: strerror(-r));
	pthread_mutex_lock(&f->mutex);
	{
		size_t end, i = cover(f, a->start, last, &end);

		for (; i < end; i++)
			f->seg[i].held = mode;
	}
	tidy(f);
	pthread_mutex_unlock(&f->mutex);
	return 1;
}

/* Give up: count the request out and lower what only it wanted. */
static void withdraw(struct attempt *a)
{
	struct range_lock_file *f = a->f;
	uint64_t last = file_last(a->last);

	pthread_mutex_lock(&f->mutex);
	(void)count(f, a->start, last, a->reader, -1);
	lower(f, a->start, last);
	pthread_mutex_unlock(&f->mutex);
}

static void withdraw_on_cancel(void *arg)
{
	struct attempt *a = arg;

	withdraw(a);
	a->on_cancel(a->arg);
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

static bool timespec_ok(clockid_t clockid, const struct timespec *t)
{
	return (clockid == CLOCK_MONOTONIC || clockid == CLOCK_REALTIME) && t &&
	       t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L;
}

/*
 * Sleep @ns (less when the deadline is nearer).  0 after the nap;
 * -EINTR (INTERRUPTIBLE) when a handler ran; -ETIMEDOUT when the deadline
 * had passed before the nap.  Never a cancellation point: rl_wait().
 */
static int nap(uint64_t ns, enum rl_file_wait kind, clockid_t clockid,
	       const struct timespec *abstime)
{
	_Atomic uint32_t word = 0; /* nobody wakes it: a timed sleep */
	struct timespec now, until;
	uint64_t t;
	int r;

	if (kind == RL_FILE_TIMED) {
		clock_gettime(clockid, &now);
		if (ts_ns(&now) >= ts_ns(abstime))
			return -ETIMEDOUT;
		if (ts_ns(abstime) - ts_ns(&now) < ns)
			ns = ts_ns(abstime) - ts_ns(&now);
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	t = ts_ns(&until) + ns;
	until.tv_sec = (time_t)(t / 1000000000u);
	until.tv_nsec = (long)(t % 1000000000u);
	r = rl_wait(&word, 0, CLOCK_MONOTONIC, &until,
		    kind == RL_FILE_INTERRUPTIBLE ? RL_WAIT_INTERRUPTIBLE : 0);
	if (r == -EINTR && kind == RL_FILE_INTERRUPTIBLE)
		return -EINTR;
	return 0;
}

static int wait_loop(struct attempt *a, enum rl_file_wait kind, clockid_t clockid,
		     const struct timespec *abstime)
{
	uint64_t ns = NAP_MIN_NS;
	int r;

	for (;;) {
		if (kind == RL_FILE_KILLABLE)
			pthread_testcancel();
		r = nap(ns, kind, clockid, abstime);
		if (kind == RL_FILE_KILLABLE)
			pthread_testcancel();
		if (try_once(a))
			return 0;
		if (r)
			return r; /* -EINTR, or -ETIMEDOUT after the last attempt */
		ns = ns * 2 > NAP_MAX_NS ? NAP_MAX_NS : ns * 2;
	}
}

int rl_file_lock(struct range_lock_file *f, uint64_t start, uint64_t last,
		 bool reader, enum rl_file_wait kind, clockid_t clockid,
		 const struct timespec *abstime, void (*on_cancel)(void *),
		 void *arg)
{
	struct attempt a = { f, start, last, reader, on_cancel, arg };
	int r;

	check_usable(f, "lock", start, last);
	pthread_mutex_lock(&f->mutex);
	count(f, start, file_last(last), reader, +1);
	pthread_mutex_unlock(&f->mutex);
	if (try_once(&a))
		return 0;
	if (kind == RL_FILE_TRY) {
		withdraw(&a);
		return -EAGAIN;
	}
	if (kind == RL_FILE_TIMED && !timespec_ok(clockid, abstime)) {
		withdraw(&a);
		return -EINVAL;
	}
	if (kind == RL_FILE_KILLABLE) {
		pthread_cleanup_push(withdraw_on_cancel, &a);
		r = wait_loop(&a, kind, clockid, abstime);
		pthread_cleanup_pop(0);
	} else {
		r = wait_loop(&a, kind, clockid, abstime);
	}
	if (r)
		withdraw(&a);
	return r;
}

void rl_file_unlock(struct range_lock_file *f, uint64_t start, uint64_t last,
		    bool reader)
{
	if (f->fd < 0)
		return; /* fork child, a range the forking thread held: the OFD
			 * lock is the parent's, nothing of it is ours */
	check_usable(f, "unlock", start, last);
	last = file_last(last);
	pthread_mutex_lock(&f->mutex);
	if (!count(f, start, last, reader, -1)) {
		pthread_mutex_unlock(&f->mutex);
		die("unlock", start, last, reader ? "range is not held for reading"
						  : "range is not held for writing");
	}
	lower(f, start, last);
	pthread_mutex_unlock(&f->mutex);
}

void rl_file_downgrade(struct range_lock_file *f, uint64_t start, uint64_t last)
{
	if (f->fd < 0)
		return; /* as in rl_file_unlock() */
	check_usable(f, "downgrade", start, last);
	last = file_last(last);
	pthread_mutex_lock(&f->mutex);
	if (!count(f, start, last, false, -1)) {
		pthread_mutex_unlock(&f->mutex);
		die("downgrade", start, last, "range is not held for writing");
	}
	count(f, start, last, true, +1);
	lower(f, start, last);
	pthread_mutex_unlock(&f->mutex);
}
