/* SPDX-License-Identifier: MIT */
/*
 * The second level: OFD locks on a file for what a bound tree's requests
 * hold (range_lock_tree_set_file(), docs/design.md section 9).
 *
 * STATE
 * =====
 * Per FILE (device and inode) the process ever bound, on the heap, in a
 * process-wide registry, and shared by every tree bound to that file:
 *   fd      the process's one PRIVATE open file description of the file,
 *           reopened O_RDWR | O_CLOEXEC through /proc/self/fd/N, and NEVER
 *           closed (but in a fork child, below).  POSIX drops every classic
 *           fcntl lock a process holds on a file when the process closes
 *           any descriptor of that file: closing ours on destroy or rebind
 *           would drop locks that other code of the process took (SQLite's,
 *           for one).  OFD locks belong to the description, so the caller's
 *           close(fd) drops nothing of ours.
 *   refs    the trees bound to it (bookkeeping only: 0 closes nothing).
 *   seg[]   the bookkeeping, a sorted array of disjoint byte segments, each
 *           with
 *             readers, writers  how many requests ADMITTED here (of any
 *                               tree bound to the file: held, or granted
 *                               and still waiting for other processes)
 *                               cover it;
 *             held              the mode the kernel holds there for us.
 *           desired(seg) = WRITE if writers, READ if readers, else NONE.
 *   mutex   protects seg[] and orders the lowering system calls on fd.  It
 *           is never held while sleeping, and never together with the
 *           tree's internal lock (which is not held at all here).
 *
 * TREES SHARING ONE DESCRIPTION
 * =============================
 * The kernel sees one owner for all the trees of the process on a file, so
 * the exclusion between those trees is made here: a request is admitted
 * (counted in) only when no admitted request conflicts with it on any of
 * its bytes (conflicts()).  A tree's own admitted requests never conflict
 * with a request it has granted locally (it counts in after its local grant
 * and out before its local unlock or downgrade), so a conflicting count is
 * another tree's, and the request waits for it exactly as for another
 * process's lock: trylock fails, the other calls poll with the same naps
 * and keep the same contracts.  All admitted requests are then compatible,
 * which is what the kernel-level invariant below needs.
 *
 * One description's locks merge and split: two local readers of [0, 9] and
 * [5, 14] hold one kernel read lock [0, 14], and F_UNLCK [0, 9] would drop
 * [5, 9] from under the second.  Hence the counts: a byte is released (or
 * downgraded) only where desired drops below held.
 *
 * INVARIANT (whenever mutex is free): held <= desired on every byte, and
 *   held >= mode on the range of every request whose lock call returned 0.
 *   - Acquire (rl_file_lock): admit the request (count it in), then, while
 *     some byte of its range has held < mode, F_OFD_SETLK(mode) on its
 *     WHOLE range.  Admitted requests are compatible, so desired = mode on
 *     that range: the call sets held = desired there.  The call runs outside
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
 * fork(): the child inherits the descriptions, and with them the
 * ownership of the parent's OFD locks: the child's trees would take the
 * parent's ranges at once.  An atfork handler closes every description in
 * the child (registry_child()), marks the inherited states unusable (a lock
 * call there aborts; an unlock or downgrade of a range the forking thread
 * held touches nothing at this level: the OFD lock is the parent's) and
 * empties the registry, so that a bind in the child opens the child's own.
 * exec() closes the descriptions (O_CLOEXEC): the kernel then drops the OFD
 * locks of the image that is gone, and -- POSIX -- the classic locks the
 * process holds on those files (the one close the library cannot avoid,
 * documented in the header).
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
#include "annotate.h"
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
	int fd;                      /* the description; -1 in a fork child */
	dev_t dev;                   /* the file it is a description of */
	ino_t ino;
	bool parked;                 /* never handed out (see rl_file_open()) */
	unsigned refs;               /* trees bound to it; under registry_mutex */
	struct seg *seg;
	size_t nr, cap;
	struct range_lock_file *next; /* the registry */
};

/* ---- messages --------------------------------------------------------- */

static void die(const char *what, uint64_t start, uint64_t last, const char *why)
{
	fprintf(stderr, "librangelock: %s([%llu, %llu]) on a file-bound tree: %s\n",
		what, (unsigned long long)start, (unsigned long long)last, why);
	fflush(stderr);
	abort();
}

/* ---- the registry: one description per file, for the process's life ---- */

/*
 * registry_mutex protects the list and every state's refs; it is held
 * across the reopen in rl_file_open(), so that two first binds of one file
 * cannot both open a description (the loser's could never be closed), and
 * by fork() (registry_prepare) so that the child sees a consistent list.
 * It is never held together with a state's mutex.
 */
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct range_lock_file *registry;

static void registry_prepare(void) { pthread_mutex_lock(&registry_mutex); }
static void registry_parent(void) { pthread_mutex_unlock(&registry_mutex); }

static void state_free(struct range_lock_file *f)
{
	free(f->seg);
	free(f);
}

/*
 * The child of fork() has one thread and shares every description with
 * the parent: its OFD locks would be the parent's, the same owner.  So the
 * child closes each one here, at once.  That close drops no classic lock:
 * fork() does not inherit classic locks, and the child has run nothing but
 * earlier fork handlers yet.  It drops no OFD lock either: the parent's
 * reference keeps the description (and its locks, the parent's) alive.
 * Then the registry is empty: a bind in the child opens the child's own
 * description.  A state some inherited tree still points to stays, marked
 * unusable (fd -1), until that tree is destroyed or rebound; its mutex may
 * have been held by another thread at the fork and is never locked again.
 * (glibc and musl make malloc usable in fork handlers of the child.)
 */
static void registry_child(void)
{
	struct range_lock_file *f = registry, *next;

	for (; f; f = next) {
		next = f->next;
		if (f->fd >= 0)
			close(f->fd);
		f->fd = -1;
		f->next = NULL;
		if (!f->refs)
			state_free(f);
	}
	registry = NULL;
	pthread_mutex_unlock(&registry_mutex); /* taken by registry_prepare() */
}

__attribute__((constructor)) static void registry_atfork(void)
{
	pthread_atfork(registry_prepare, registry_parent, registry_child);
}

/* ---- binding ---------------------------------------------------------- */

/*
 * No descriptor of a bound file is ever closed here (but in a fork child,
 * above): POSIX drops every classic fcntl lock the process holds on a file
 * when it closes any descriptor of that file, and those locks may belong to
 * anybody in the process (SQLite, for one).  So the state and its memory are
 * allocated BEFORE the reopen, and a description, once open, stays open.
 */
int rl_file_open(struct range_lock_file **out, int fd)
{
	char path[64];
	struct stat a, b;
	struct range_lock_file *f;
	int fl, nfd, r;

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
	if ((fl & O_ACCMODE) != O_RDWR)
		return -EBADF; /* read and write locks need both */
	pthread_mutex_lock(&registry_mutex);
	for (f = registry; f; f = f->next) {
		if (!f->parked && f->dev == a.st_dev && f->ino == a.st_ino) {
			f->refs++; /* bound before: no system call at all */
			pthread_mutex_unlock(&registry_mutex);
			*out = f;
			return 0;
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		pthread_mutex_unlock(&registry_mutex);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (nfd < 0) {
		r = -errno; /* -EMFILE, -ENFILE, -ENOENT without /proc, -EACCES */
		pthread_mutex_unlock(&registry_mutex);
		free(f);
		return r;
	}
	f->fd = nfd;
	if (fstat(nfd, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		/* /proc/self/fd/N led elsewhere: @fd was replaced meanwhile (by
		 * another thread of the caller).  nfd is a description of some
		 * other file, maybe one with classic locks: keep it, parked. */
		f->parked = true;
		r = -EINVAL;
	} else {
		pthread_mutex_init(&f->mutex, NULL);
		f->dev = a.st_dev;
		f->ino = a.st_ino;
		f->refs = 1;
		*out = f;
		r = 0;
	}
	f->next = registry;
	registry = f;
	pthread_mutex_unlock(&registry_mutex);
	return r;
}

/*
 * A tree lets go of its binding (destroy, rebind, a bind found busy): the
 * tree is empty, so none of its requests is counted here.  The description
 * stays open and registered for the next bind of the file.
 */
void rl_file_free(struct range_lock_file *f)
{
	bool dead;

	pthread_mutex_lock(&registry_mutex);
	f->refs--;
	dead = f->fd < 0 && !f->refs; /* a fork child's inherited state */
	pthread_mutex_unlock(&registry_mutex);
	if (dead)
		state_free(f);
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

/*
 * Does a request counted in here conflict with @mode on [start, last]?
 * Every tree bound to the file counts in here, and the caller's own tree
 * has nothing counted that conflicts with a request it granted locally (it
 * counts out before its local unlock, in after its local grant): so a
 * conflicting count is another tree's request, which excludes us as
 * another process's lock would.
 */
static bool conflicts(struct range_lock_file *f, uint64_t start, uint64_t last,
		      int mode)
{
	for (size_t i = 0; i < f->nr; i++) {
		const struct seg *s = &f->seg[i];

		if (s->last < start)
			continue;
		if (s->start > last)
			break;
		if (s->writers || (mode == WRITE && s->readers))
			return true;
	}
	return false;
}

/* ---- acquire, release ------------------------------------------------- */

struct attempt {
	struct range_lock_file *f;
	uint64_t start, last;
	bool reader;
	void (*on_cancel)(void *); /* then: the caller's local unlock */
	void *arg;
	/* Volatile: set after a killable wait's pthread_cleanup_push() (its
	 * setjmp) and read by withdraw_on_cancel() after the unwinding's
	 * longjmp, where a plain local changed in between is indeterminate
	 * (C11 7.13.2.1; the same fault left a cancelled set's part behind
	 * in clang builds, seg_sets.c). */
	volatile bool in;          /* admitted: counted in the bookkeeping */
};

static void check_usable(struct range_lock_file *f, const char *what,
			 uint64_t start, uint64_t last)
{
	if (f->fd < 0)
		die(what, start, last,
		    "tree bound before fork(): bind it again in the child");
	if (start > last) /* an unlock or downgrade of it: never locked */
		die(what, start, last, "range is invalid: start > last "
		    "(range_lock_init() or range_lock_async_init() returned -EINVAL)");
	if (!rl_file_range_ok(start, last))
		die(what, start, last, "range does not fit off_t");
}

/*
 * One attempt: 1 held, 0 another tree of this process (the request is not
 * admitted) or another process (admitted, the kernel says no) holds a
 * conflicting lock.  Admission counts the request in, under the mutex, only
 * when no other tree's counted request conflicts: so all counted requests
 * are compatible, as the invariant above needs.  The F_OFD_SETLK runs outside the mutex, so that the threads' acquisitions
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
	if (!a->in) {
		if (conflicts(f, a->start, last, mode)) {
			pthread_mutex_unlock(&f->mutex);
			return 0;
		}
		count(f, a->start, last, a->reader, +1);
		a->in = true;
	}
	need = needs(f, a->start, last, mode);
	pthread_mutex_unlock(&f->mutex);
	if (!need)
		return 1;
	r = setlk(f, mode, a->start, last);
	if (r == -EAGAIN || r == -EACCES)
		return 0;
	if (r) /* never EBADF: the description is O_RDWR */
		die("lock", a->start, a->last, strerror(-r));
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

	if (!a->in)
		return; /* never admitted: nothing of it here */
	a->in = false;
	pthread_mutex_lock(&f->mutex);
	(void)count(f, a->start, last, a->reader, -1);
	lower(f, a->start, last);
	pthread_mutex_unlock(&f->mutex);
}

static void withdraw_on_cancel(void *arg)
{
	struct attempt *a = arg;

	rl_asan_unwound(); /* annotate.h: a cancellation's unwinding */
	withdraw(a);
	a->on_cancel(a->arg);
}

/*
 * A valid time (timespec_valid(), wait.h) in nanoseconds on its clock,
 * saturated as the local waits treat it: a negative tv_sec is a time long
 * past (0), and a time beyond 64 bits of nanoseconds (tv_sec above about
 * 1.8e10, the year 2554) is "not for a very long time" (UINT64_MAX), not
 * a wrapped one that could be in the past.
 */
#define TS_SEC_MAX ((UINT64_MAX - 999999999u) / 1000000000u)

static uint64_t ts_ns(const struct timespec *ts)
{
	if (ts->tv_sec < 0)
		return 0;
	if ((uint64_t)ts->tv_sec > TS_SEC_MAX)
		return UINT64_MAX;
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
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
	struct attempt a = { f, start, last, reader, on_cancel, arg, false };
	int r;

	check_usable(f, "lock", start, last);
	if (try_once(&a))
		return 0;
	if (kind == RL_FILE_TRY) {
		withdraw(&a);
		return -EAGAIN;
	}
	if (kind == RL_FILE_TIMED && !timespec_valid(clockid, abstime)) {
		withdraw(&a);
		return -EINVAL;
	}
	rl_async_check_may_wait("lock call (waiting for another process's OFD lock)", NULL);
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
