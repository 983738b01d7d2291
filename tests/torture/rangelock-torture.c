/* SPDX-License-Identifier: MIT */
/*
 * rangelock-torture: a userspace locktorture for librangelock.
 *
 * Reader and writer threads take random ranges of a pool of units (4096 by
 * default, as the kernel's range-lock torture) with a mix of lock calls, hold
 * them for a while and release them, while helper threads pause and restart
 * everybody (stutter), re-pin threads to CPUs (shuffle), send signals
 * (signal storm) and cancel threads blocked in the _killable calls (and start
 * them again).  Every unit of every range a thread holds is checked against
 * a shadow array on entry and again before leaving; a watchdog declares a
 * hang when nothing progresses.  The program decides pass or fail itself
 * after joining every thread and ends with locktorture's
 *   End of test: SUCCESS   (exit 0)   or   End of test: FAILURE   (exit 1).
 *
 * THE CHECKS (each one is reported, counted and makes the run FAIL)
 *  - exclusion (shadow array, per unit an atomic writer count and reader
 *    count): a writer finds no other writer and no reader on any unit of its
 *    range, a reader finds no writer; checked right after the lock call and
 *    again just before the unlock, after the hold.  The "Fail:" columns.
 *  - call contracts: trylock returns 0/1; _interruptible returns 0 or
 *    -EINTR, and -EINTR only if a handler ran in this thread during the
 *    call; _killable returns 0; _timedlock returns 0, -ETIMEDOUT only once
 *    the deadline has passed on its clock, -EINVAL only for a bad timespec.
 *  - cancellation: a thread cancelled in a _killable wait leaves no request
 *    of its kernel tid in the tree (range_lock_tree_dump() is searched right
 *    after the join), and nothing at the end.
 *  - the end: range_lock_tree_destroy() returns 0, the shadow array is all
 *    zero, and the tree statistics agree with what the threads saw
 *    (give-ups by signal, timeout and cancellation, trylock failures,
 *    acquisitions, nothing held or waiting).
 *  - starvation: a reader or writer thread that never acquired anything in
 *    the run is a STARVATION failure; Max/Min far apart is flagged "???"
 *    (locktorture's mark) and a STARVATION? warning.  With --max-wait-ms, a
 *    writer's lock call that waited longer than that before it got its
 *    range is a STARVATION failure too (the default policy's hand-off bound
 *    plus scheduling slack: overtaking must stay bounded).
 *  - hangs: the watchdog (its own thread) declares a HANG when no lock call
 *    completed for --watchdog seconds while the threads ran, when one thread
 *    sat in one lock call, one hold or one pause that long, or when the run
 *    overran its duration by that much; it prints every thread's state,
 *    dumps the tree and exits 1 at once.
 * Workers never abort on a failed check: they count it, print the first few
 * and go on, so that the end of the run still reports everything.
 *
 * --many and --grow add sets of requests taken in one call
 * (range_lock_many*, the opposite-order deadlock pattern among them) and
 * grow/shrink of held ranges; the shadow array then treats one thread's
 * requests as one owner (see multi_op() and README.md).
 *
 * --wide makes a share of the operations wide: on a segmented tree their
 * request meets every segment (the whole range, the pool, S to 2S stripes)
 * while the others stay within a stripe, in bursts per thread and in
 * narrow/wide phases of all threads (see make_wide() and README.md).
 *
 * --bind binds the tree to a temporary file (range_lock_tree_set_file()):
 * every call takes the OFD level too (alone on the file, it never waits
 * there), and at the end another description of the file must find no
 * lock left -- every hold, set, shrink and give-up gave its bytes back.
 *
 * Lock types (--type): range (random ranges), range-full (every request is
 * [0, RANGE_LOCK_FULL]), rwlock (pthread_rwlock_t, writer-preferring),
 * mutex (pthread_mutex_t; readers lock it too), and two negative controls
 * the checks must catch: busted (lock and unlock do nothing, like the
 * kernel's lock_busted) and busted-range (the real range lock, but writers
 * take their ranges as readers).  For the types that lock the whole
 * resource (everything but range and busted-range) the whole pool is checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

/* ---- options ----------------------------------------------------------- */

enum lock_type { T_RANGE, T_RANGE_FULL, T_RWLOCK, T_MUTEX, T_BUSTED, T_BUSTED_RANGE };
static const char *const type_names[] = {
	"range", "range-full", "rwlock", "mutex", "busted", "busted-range",
};

enum call { C_PLAIN, C_TRY, C_INTR, C_KILL, C_TIMED, NR_CALLS };
static const char *const call_names[] = { "plain", "try", "intr", "kill", "timed" };

enum sa_mode { SA_ON, SA_OFF, SA_ALTERNATE };
enum inject { INJ_NONE, INJ_HANG, INJ_LEAK };
/* When the tree's statistics are enabled (range types). */
enum stats_mode { STATS_START, STATS_MID, STATS_OFF };
static const char *const stats_names[] = { "start", "mid", "off" };

static struct options {
	enum lock_type type;
	int readers, writers;
	double duration;           /* seconds */
	uint64_t pool;             /* units in the shadow array */
	uint64_t base;             /* library unit of pool unit 0 */
	uint64_t max_len;          /* 0: kernel-style random ranges */
	double full_share;         /* percent of requests for the full range (range) */
	double long_share;         /* percent of holds that are long */
	unsigned long long long_us; /* length of a long hold */
	unsigned hold_us;          /* short holds: 0 .. hold_us of busy time */
	unsigned stutter_ms;       /* run and pause periods; 0: no stutter */
	unsigned shuffle_ms;       /* CPU re-pinning period; 0: none */
	int cpus;                  /* restrict the process to N CPUs; 0: all */
	bool calls[NR_CALLS];
	bool downgrade;
	int storm;                 /* -1: when intr is in the mix */
	enum sa_mode sa;
	unsigned signal_us;        /* between two signals of the storm */
	unsigned cancel_ms;        /* between two cancellations */
	unsigned timeout_us;       /* timed calls: deadlines 0 .. 2x this away */
	unsigned watchdog_s;
	unsigned stat_interval_s;
	uint64_t seed;
	enum inject inject;
	enum stats_mode stats;
	bool verbose;
	bool fifo;                 /* --policy=fifo: a strict-FIFO tree */
	bool defer_writers;        /* --defer-writers: writers defer to sleeping readers */
	unsigned max_wait_ms;      /* a writer waiting longer fails; 0: off */
	unsigned write_pause_us;   /* writers sleep this long between ops */
	double xunlock_share;      /* percent of holds unlocked by another thread */
	bool expect_fast_reads;    /* fail if no read hold was a fast one */
	bool expect_word_mode;     /* fail if no word sleeper was ever seen */
	bool stats_reader;         /* a helper reads the statistics all along */
	bool bind;                 /* --bind: the tree bound to a temporary file */
	double many_share;         /* percent of operations that lock a set */
	double async_share;        /* percent of operations that submit asynchronously */
	double grow_share;         /* percent of operations that grow/shrink */
	unsigned seg_n, seg_shift; /* --segments=S:K (range_lock_tree_set_segments) */
	double wide_share;         /* --wide: percent of operations that are wide */
	unsigned wide_burst;       /* --wide-burst: wide operations in a row */
	unsigned wide_phase_ms;    /* --wide-phase-ms: narrow/wide phases; 0: none */
} opt = {
	.type = T_RANGE,
	.readers = -1,
	.writers = -1,
	.duration = 5,
	.pool = 4096,
	.full_share = 1,
	.long_share = 1,
	.long_us = 2000,
	.hold_us = 20,
	.storm = -1,
	.sa = SA_ALTERNATE,
	.signal_us = 200,
	.cancel_ms = 5,
	.timeout_us = 50,
	.watchdog_s = 10,
	.wide_burst = 1,
};

static bool type_is_range(void)
{
	return opt.type == T_RANGE || opt.type == T_RANGE_FULL ||
	       opt.type == T_BUSTED_RANGE;
}

/* Types whose every acquisition covers the whole resource. */
static bool type_is_whole(void)
{
	return opt.type != T_RANGE && opt.type != T_BUSTED_RANGE;
}

static bool type_is_busted(void)
{
	return opt.type == T_BUSTED || opt.type == T_BUSTED_RANGE;
}

/* ---- time and randomness ----------------------------------------------- */

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts_ns(&ts);
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static struct timespec ns_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	return ts;
}

/* Sleep until an absolute CLOCK_MONOTONIC time, whatever signals arrive. */
static void sleep_until(uint64_t deadline)
{
	struct timespec ts = ns_ts(deadline);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_ns(uint64_t ns)
{
	sleep_until(now_ns() + ns);
}

static void spin_ns(uint64_t ns)
{
	uint64_t end;

	if (!ns)
		return;
	end = now_ns() + ns;
	while (now_ns() < end)
		;
}

struct rng { uint64_t s; };

static uint64_t rnd(struct rng *r)
{
	/* xorshift64* */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	if (!r->s)
		r->s = 1;
	for (int i = 0; i < 4; i++)
		rnd(r);
}

/* true with probability @percent (0..100) */
static bool chance(struct rng *r, double percent)
{
	if (percent <= 0)
		return false;
	return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0) * 100.0 < percent;
}

static uint32_t gettid_(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* ---- the shared state ---------------------------------------------------- */

struct unit_shadow {
	_Atomic uint32_t writers;
	_Atomic uint32_t readers;
};

static struct unit_shadow *shadow;

static struct range_lock_tree tree;
static int bind_probe_fd = -1; /* --bind: another description of the file */
static struct range_lock_stats tree_stats;
static pthread_rwlock_t rwlock;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static atomic_bool stop;
static atomic_bool no_restart;   /* a thread died holding: create none */
static atomic_bool paused;
static pthread_mutex_t stutter_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stutter_cond = PTHREAD_COND_INITIALIZER;
static _Atomic uint64_t pause_started_ns;
static _Atomic uint64_t run_end_ns;    /* when workers were told to stop */

static _Atomic uint64_t global_errors;  /* failures outside the Fail: columns */
static _Atomic unsigned messages;      /* failure lines printed so far */
#define MAX_MESSAGES 40
static pthread_mutex_t print_mutex = PTHREAD_MUTEX_INITIALIZER;

static _Atomic uint64_t signals_sent, signals_handled, sa_toggles;
static _Atomic uint64_t cancels_sent, cancels_joined, restarts;
static _Atomic uint64_t shuffles, stutters;

static cpu_set_t allowed_cpus;
static int nr_allowed_cpus;

enum state { S_IDLE, S_LOCKING, S_HOLDING, S_PAUSED, S_DEAD, S_DONE };
static const char *const state_names[] = {
	"idle", "in a lock call", "holding", "paused by stutter",
	"cancelled, being restarted", "finished",
};

/* One reader or writer slot; the thread in it may be cancelled and
 * replaced, the counters stay. */
struct slot {
	int id;
	bool writer;
	unsigned generation;
	void *stack;                /* see start_worker() */
	pthread_mutex_t m;          /* protects thread and running */
	pthread_t thread;
	bool running;

	_Atomic uint32_t tid;
	_Atomic int state;
	_Atomic int call;
	_Atomic uint64_t since_ns;  /* when the state was entered */
	_Atomic uint64_t cur_start, cur_last;

	_Atomic uint64_t progress;  /* lock calls completed, any outcome */
	_Atomic uint64_t acquired;
	_Atomic uint64_t fails;     /* exclusion violations */
	_Atomic uint64_t errors;    /* contract violations */
	_Atomic uint64_t gave_up_intr, gave_up_timeout, gave_up_einval, try_busy;
	_Atomic uint64_t cancelled_in_lock, cancelled_outside;
	/* Cancellations sent to this slot's thread.  musl delivers even a
	 * deferred cancellation as a signal (SIGCANCEL) whose handler runs at
	 * once; that interrupts an _interruptible wait like any handler. */
	_Atomic uint64_t cancels_sent_here;
	_Atomic uint64_t downgrades, long_holds;
	_Atomic uint64_t by_call[NR_CALLS];
	_Atomic uint64_t max_wait_ns;  /* longest lock call that got its range */
	_Atomic uint64_t fast_reads;   /* read holds taken by the fast path */
	_Atomic uint64_t xunlocks;     /* holds the unlocker thread released */
	_Atomic uint64_t word_slept;   /* holds taken after sleeping on the word */
	_Atomic uint64_t word_chances; /* calls that found a conflicting word holder and waited */
	/* --many, --grow */
	_Atomic uint64_t sets, patterns, grows, shrinks, unlock_many;
	/* --async */
	_Atomic uint64_t asyncs, async_queued, async_withdrawn, async_late_cancel;
	_Atomic uint64_t stats_slack;  /* set members the library may count as
					* acquired although the set gave up */
	/* --wide: wide operations tried and held, by kind of range (whole,
	 * pool, spread: see make_wide()); sets with a wide member held; grows
	 * of a narrow request to a wide range tried and done, shrinks back */
	_Atomic uint64_t wide_tried, wide_held[3], wide_sets, wide_grows, wide_grown;
	_Atomic uint64_t wide_shrunk_back;
	/* single wide requests by call, and their give-ups (busy, -EINTR,
	 * -ETIMEDOUT, -EINVAL); downgraded; asynchronous, withdrawn */
	_Atomic uint64_t wide_calls[NR_CALLS], wide_gave_up, wide_downgrades;
	_Atomic uint64_t wide_async, wide_async_withdrawn;
	unsigned burst_left;           /* wide operations left in this burst */
	/* --xunlock: a hold handed to the unlocker thread, which unmarks
	 * [x_a, x_b] and unlocks it, then clears x_req. */
	_Atomic(struct range_lock *) x_req;
	uint64_t x_a, x_b;
	bool x_writer;
};

static struct slot *slots;
static int nr_slots;

static _Noreturn void end_run_now(const char *headline, const char *why);

#define INC(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)
#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define SET(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

static void set_state(struct slot *s, int st)
{
	SET(s->since_ns, now_ns());
	SET(s->state, st);
}

static const char *slot_name(const struct slot *s)
{
	return s->writer ? "writer" : "reader";
}

static void vreport(const char *fmt, va_list ap)
{
	if (atomic_fetch_add(&messages, 1) >= MAX_MESSAGES) {
		if (atomic_load(&messages) == MAX_MESSAGES + 1) {
			pthread_mutex_lock(&print_mutex);
			fprintf(stderr, "rangelock-torture: more failures, not printed\n");
			pthread_mutex_unlock(&print_mutex);
		}
		return;
	}
	pthread_mutex_lock(&print_mutex);
	fputs("rangelock-torture: FAILED CHECK: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&print_mutex);
}

static void report(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

/* A contract failure seen by a worker. */
static void slot_error(struct slot *s, const char *fmt, ...)
{
	va_list ap;

	INC(s->errors);
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

/* A failure seen by a helper thread or at the end. */
static void error(const char *fmt, ...)
{
	va_list ap;

	INC(global_errors);
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

/* ---- the shadow array ---------------------------------------------------
 * Per unit of the pool an atomic writer count and reader count.  A thread
 * marks its range right after its lock call returned and unmarks it right
 * before its unlock call, so a correct lock never lets two marks conflict.
 */

/* Mark the hold of pool units [a, b]; a writer must find no writer and no
 * reader on any unit, a reader no writer. */
static void shadow_enter(struct slot *s, bool writer, uint64_t a, uint64_t b)
{
	uint64_t bad = UINT64_MAX;
	uint32_t bw = 0, br = 0;

	for (uint64_t u = a; u <= b; u++) {
		uint32_t w, r;

		if (writer) {
			w = atomic_fetch_add(&shadow[u].writers, 1);
			r = atomic_load(&shadow[u].readers);
		} else {
			r = atomic_fetch_add(&shadow[u].readers, 1);
			w = atomic_load(&shadow[u].writers);
		}
		if ((w || (writer && r)) && bad == UINT64_MAX) {
			bad = u;
			bw = w;
			br = r;
		}
	}
	if (bad != UINT64_MAX) {
		INC(s->fails);
		report("exclusion violated on entry: %s %d (tid %u) got [%" PRIu64
		       ", %" PRIu64 "] but unit %" PRIu64 " already had %u writer(s)"
		       " and %u reader(s)", slot_name(s), s->id, GET(s->tid),
		       opt.base + a, opt.base + b, opt.base + bad, bw, br);
	}
}

/* Check the hold again (after the hold time): a writer must still be alone
 * on every unit, a reader must see no writer. */
static void shadow_check(struct slot *s, bool writer, uint64_t a, uint64_t b,
			 const char *when)
{
	for (uint64_t u = a; u <= b; u++) {
		uint32_t w = atomic_load(&shadow[u].writers);
		uint32_t r = atomic_load(&shadow[u].readers);

		if (writer ? (w != 1 || r != 0) : (w != 0 || r == 0)) {
			INC(s->fails);
			report("exclusion violated %s: %s %d (tid %u) holding [%" PRIu64
			       ", %" PRIu64 "] for %s finds %u writer(s) and %u reader(s)"
			       " on unit %" PRIu64, when, slot_name(s), s->id,
			       GET(s->tid), opt.base + a, opt.base + b,
			       writer ? "writing" : "reading", w, r, opt.base + u);
			return;
		}
	}
}

static void shadow_leave(bool writer, uint64_t a, uint64_t b)
{
	for (uint64_t u = a; u <= b; u++) {
		if (writer)
			atomic_fetch_sub(&shadow[u].writers, 1);
		else
			atomic_fetch_sub(&shadow[u].readers, 1);
	}
}

/* Before range_downgrade_write(): from writer to reader without a gap. */
static void shadow_downgrade(uint64_t a, uint64_t b)
{
	for (uint64_t u = a; u <= b; u++) {
		atomic_fetch_add(&shadow[u].readers, 1);
		atomic_fetch_sub(&shadow[u].writers, 1);
	}
}

/* ---- signals ------------------------------------------------------------ */

static _Thread_local volatile sig_atomic_t tl_signals;

static void on_signal(int sig)
{
	(void)sig;
	tl_signals++;
	atomic_fetch_add_explicit(&signals_handled, 1, memory_order_relaxed);
}

static void install_handler(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = restart ? SA_RESTART : 0;
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("rangelock-torture: sigaction");
		exit(2);
	}
}

/* ---- the lock calls -------------------------------------------------------- */

enum outcome { GOT, BUSY, INTR, TIMEDOUT, BADTIME, BROKEN };

/* A thread cancelled inside a _killable call: runs after the library's own
 * cleanup (which withdrew the request). */
static void cancelled_in_lock(void *arg)
{
	struct slot *s = arg;

	INC(s->cancelled_in_lock);
	set_state(s, S_DEAD);
}

static void cancelled_outside(void *arg)
{
	struct slot *s = arg;

	INC(s->cancelled_outside);
	set_state(s, S_DEAD);
}

/* A deadline for a timed call: mostly 0 .. 2 * timeout_us from now on a
 * random clock; 2% already past; 1% (range lock only) malformed. */
struct deadline {
	clockid_t clk;
	struct timespec ts;
	bool malformed;
};

static void make_deadline(struct rng *r, struct deadline *d)
{
	unsigned kind = rnd(r) % 100;
	uint64_t now;

	d->clk = (rnd(r) & 1) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
	d->malformed = false;
	now = clock_ns(d->clk);
	if (kind < 2) {
		d->ts = ns_ts(now > 1000000 ? now - 1000000 : 0);
	} else if (kind < 3 && type_is_range()) {
		d->ts = ns_ts(now + 1000000);
		d->ts.tv_nsec = (rnd(r) & 1) ? 1000000000L : -1L;
		d->malformed = true;
	} else {
		d->ts = ns_ts(now + rnd(r) % (2ull * opt.timeout_us * 1000 + 1));
	}
}

/* Judge a timed call's result (0 or a negative errno). */
static enum outcome judge_timed(struct slot *s, const struct deadline *d, int ret,
				const char *call)
{
	if (ret == 0)
		return GOT;
	if (ret == -ETIMEDOUT && !d->malformed) {
		uint64_t now = clock_ns(d->clk);

		if (now < ts_ns(&d->ts))
			slot_error(s, "%s returned ETIMEDOUT %" PRIu64 " ns before its"
				   " deadline on %s", call, ts_ns(&d->ts) - now,
				   d->clk == CLOCK_REALTIME ? "CLOCK_REALTIME"
							     : "CLOCK_MONOTONIC");
		return TIMEDOUT;
	}
	if (ret == -EINVAL && d->malformed)
		return BADTIME;
	slot_error(s, "%s returned %d (%s) for a %s deadline", call, ret,
		   strerror(-ret), d->malformed ? "malformed" : "valid");
	return ret == -ETIMEDOUT ? TIMEDOUT : BROKEN;
}

static enum outcome lock_range(struct slot *s, struct rng *r, struct range_lock *rl,
			       bool writer, enum call c)
{
	const char *mode = writer ? "write" : "read";
	struct deadline d;
	sig_atomic_t sig0;
	uint64_t cancels0;
	int ret;

	switch (c) {
	case C_PLAIN:
		if (writer)
			range_write_lock(&tree, rl);
		else
			range_read_lock(&tree, rl);
		return GOT;
	case C_TRY:
		ret = writer ? range_write_trylock(&tree, rl) : range_read_trylock(&tree, rl);
		if (ret == 1)
			return GOT;
		if (ret != 0)
			slot_error(s, "range_%s_trylock returned %d", mode, ret);
		return BUSY;
	case C_INTR:
		sig0 = tl_signals;
		cancels0 = GET(s->cancels_sent_here);
		ret = writer ? range_write_lock_interruptible(&tree, rl)
			     : range_read_lock_interruptible(&tree, rl);
		if (ret == 0)
			return GOT;
		if (ret == -EINTR) {
			/* A handler of ours ran, or (musl) the SIGCANCEL one. */
			if (tl_signals == sig0 && GET(s->cancels_sent_here) == cancels0)
				slot_error(s, "range_%s_lock_interruptible returned -EINTR"
					   " but no signal handler ran in the call", mode);
			return INTR;
		}
		slot_error(s, "range_%s_lock_interruptible returned %d", mode, ret);
		return BROKEN;
	case C_KILL:
		ret = -1;
		pthread_cleanup_push(cancelled_in_lock, s);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		ret = writer ? range_write_lock_killable(&tree, rl)
			     : range_read_lock_killable(&tree, rl);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cleanup_pop(0);
		if (ret == 0)
			return GOT;
		slot_error(s, "range_%s_lock_killable returned %d", mode, ret);
		return BROKEN;
	case C_TIMED:
		make_deadline(r, &d);
		ret = writer ? range_write_timedlock(&tree, rl, d.clk, &d.ts)
			     : range_read_timedlock(&tree, rl, d.clk, &d.ts);
		return judge_timed(s, &d, ret, writer ? "range_write_timedlock"
						      : "range_read_timedlock");
	default:
		abort();
	}
}

/* The pthread types take CLOCK_REALTIME deadlines: pthread_*_timedlock()
 * is portable (musl) and intercepted by ThreadSanitizer, the _clock
 * variants are neither. */
static void deadline_to_realtime(struct deadline *d)
{
	if (d->clk == CLOCK_MONOTONIC) {
		uint64_t mono = clock_ns(CLOCK_MONOTONIC), at = ts_ns(&d->ts);
		uint64_t rt = clock_ns(CLOCK_REALTIME);

		d->ts = ns_ts(at > mono ? rt + (at - mono) : rt - (mono - at));
		d->clk = CLOCK_REALTIME;
	}
}

static enum outcome lock_rwlock(struct slot *s, struct rng *r, bool writer, enum call c)
{
	struct deadline d;
	int ret;

	switch (c) {
	case C_TRY:
		ret = writer ? pthread_rwlock_trywrlock(&rwlock) : pthread_rwlock_tryrdlock(&rwlock);
		if (ret == EBUSY)
			return BUSY;
		break;
	case C_TIMED:
		make_deadline(r, &d);
		deadline_to_realtime(&d);
		ret = writer ? pthread_rwlock_timedwrlock(&rwlock, &d.ts)
			     : pthread_rwlock_timedrdlock(&rwlock, &d.ts);
		return judge_timed(s, &d, -ret, writer ? "pthread_rwlock_timedwrlock"
						       : "pthread_rwlock_timedrdlock");
	default:
		ret = writer ? pthread_rwlock_wrlock(&rwlock) : pthread_rwlock_rdlock(&rwlock);
		break;
	}
	if (ret == 0)
		return GOT;
	slot_error(s, "pthread_rwlock call returned %d (%s)", ret, strerror(ret));
	return BROKEN;
}

static enum outcome lock_mutex(struct slot *s, struct rng *r, enum call c)
{
	struct deadline d;
	int ret;

	switch (c) {
	case C_TRY:
		ret = pthread_mutex_trylock(&mutex);
		if (ret == EBUSY)
			return BUSY;
		break;
	case C_TIMED:
		make_deadline(r, &d);
		deadline_to_realtime(&d);
		ret = pthread_mutex_timedlock(&mutex, &d.ts);
		return judge_timed(s, &d, -ret, "pthread_mutex_timedlock");
	default:
		ret = pthread_mutex_lock(&mutex);
		break;
	}
	if (ret == 0)
		return GOT;
	slot_error(s, "pthread_mutex call returned %d (%s)", ret, strerror(ret));
	return BROKEN;
}

/* The lock mode the library is asked for: busted-range asks writers' ranges
 * for reading, so it does not exclude them. */
static bool lib_writer(bool writer)
{
	return writer && opt.type != T_BUSTED_RANGE;
}

static enum outcome do_lock(struct slot *s, struct rng *r, struct range_lock *rl,
			    bool writer, enum call c)
{
	switch (opt.type) {
	case T_RANGE:
	case T_RANGE_FULL:
	case T_BUSTED_RANGE:
		return lock_range(s, r, rl, lib_writer(writer), c);
	case T_RWLOCK:
		return lock_rwlock(s, r, writer, c);
	case T_MUTEX:
		return lock_mutex(s, r, c);
	case T_BUSTED:
		return GOT; /* BUGGY on purpose: the negative control */
	}
	abort();
}

static void do_unlock(struct range_lock *rl, bool writer)
{
	switch (opt.type) {
	case T_RANGE:
	case T_RANGE_FULL:
	case T_BUSTED_RANGE:
		if (lib_writer(writer))
			range_write_unlock(&tree, rl);
		else
			range_read_unlock(&tree, rl);
		break;
	case T_RWLOCK:
		pthread_rwlock_unlock(&rwlock);
		break;
	case T_MUTEX:
		pthread_mutex_unlock(&mutex);
		break;
	case T_BUSTED:
		break;
	}
}

/* Downgrade a write hold; false if the type cannot. */
static bool can_downgrade(void)
{
	return opt.type == T_RANGE || opt.type == T_RANGE_FULL || opt.type == T_BUSTED;
}

static void do_downgrade(struct range_lock *rl)
{
	if (opt.type == T_RANGE || opt.type == T_RANGE_FULL)
		range_downgrade_write(&tree, rl);
}

/* ---- the workers ------------------------------------------------------------ */

static enum call pick_call(struct rng *r)
{
	enum call list[NR_CALLS];
	int n = 0;
	enum call c;

	for (int i = 0; i < NR_CALLS; i++)
		if (opt.calls[i])
			list[n++] = (enum call)i;
	c = list[rnd(r) % (uint64_t)n];
	/* Only the range lock has interruptible and killable calls. */
	if (!type_is_range() && (c == C_INTR || c == C_KILL))
		c = C_PLAIN;
	return c;
}

/*
 * ---- wide requests (--wide, --wide-burst, --wide-phase-ms) ----------------
 * On a segmented tree a WIDE request meets every segment: its range is at
 * least S stripes long (wide_units).  Three kinds, drawn in equal shares:
 *   0 whole:  [0, RANGE_LOCK_FULL];
 *   1 pool:   from the pool's first unit, the whole pool or S stripes,
 *             whichever is longer (beyond the pool when the stripes are
 *             larger than it);
 *   2 spread: from a random unit of the pool, S to 2S stripes long.
 * The range may run past the pool (and below it, at the top of the key
 * space): the shadow array checks the units of the pool it covers, and
 * every other request meets the pool, so any conflict it has shows there.
 * With --wide the other requests are NARROW: 1 to one stripe long (they
 * meet one or two segments), unless --max-len says otherwise.  Without
 * segments a wide request is as long as the pool.
 */
static uint64_t wide_units;      /* 0: the whole key space (S << K overflows) */
static uint64_t run_start_ns;    /* for --wide-phase-ms */
static const char *const wide_kind_names[] = { "whole", "pool", "spread" };

static bool wide_on(void)
{
	return opt.wide_share > 0 && type_is_range() && opt.type != T_RANGE_FULL;
}

/* --wide-phase-ms: is the run in a narrow phase (no wide or whole request
 * at all)?  Phases alternate, narrow first, by the clock: every thread
 * changes together. */
static bool narrow_phase(void)
{
	if (!opt.wide_phase_ms)
		return false;
	return (((now_ns() - run_start_ns) / (opt.wide_phase_ms * 1000000ull)) & 1) == 0;
}

/* Is this operation of @s wide?  A drawn wide operation starts a burst of
 * --wide-burst of them. */
static bool want_wide(struct slot *s, struct rng *r)
{
	if (!wide_on())
		return false;
	if (narrow_phase()) {
		s->burst_left = 0;
		return false;
	}
	if (s->burst_left) {
		s->burst_left--;
		return true;
	}
	if (!chance(r, opt.wide_share))
		return false;
	s->burst_left = opt.wide_burst - 1;
	return true;
}

/* Library units [start, last] to pool units [*a, *b] (the pool part). */
static void pool_part(uint64_t start, uint64_t last, uint64_t *a, uint64_t *b)
{
	*a = start <= opt.base ? 0 : start - opt.base;
	*b = last - opt.base >= opt.pool - 1 || last < opt.base ? opt.pool - 1
								  : last - opt.base;
}

/* A wide range of kind @kind (-1: random): library units [*start, *last],
 * its pool part [*a, *b]. */
static int make_wide(struct rng *r, int kind, uint64_t *a, uint64_t *b, uint64_t *start,
		     uint64_t *last)
{
	uint64_t len, top = opt.base + (opt.pool - 1);

	if (kind < 0)
		kind = (int)(rnd(r) % 3);
	if (kind == 0 || !wide_units) {
		*start = 0;
		*last = RANGE_LOCK_FULL;
		*a = 0;
		*b = opt.pool - 1;
		return 0;
	}
	if (kind == 1) {
		*start = opt.base;
		len = wide_units > opt.pool ? wide_units : opt.pool;
	} else {
		*start = opt.base + rnd(r) % opt.pool;
		len = wide_units + rnd(r) % (wide_units < UINT64_MAX ? wide_units + 1 : 1);
		if (len < wide_units)
			len = wide_units; /* (wrapped) */
	}
	if (*start > UINT64_MAX - (len - 1)) {
		/* Past the top of the key space: end there, start lower. */
		*last = UINT64_MAX;
		*start = UINT64_MAX - (len - 1);
		if (*start > top)
			*start = top;
	} else {
		*last = *start + (len - 1);
	}
	if (opt.bind && *last > (uint64_t)INT64_MAX)
		return make_wide(r, 0, a, b, start, last); /* (past off_t: whole) */
	pool_part(*start, *last, a, b);
	return kind;
}

/* Pool units [*a, *b] to check and library units [*start, *last] to lock;
 * @wide (--wide): a wide range, counted in @s. */
static void make_range(struct slot *s, struct rng *r, bool wide, uint64_t *a, uint64_t *b,
		       uint64_t *start, uint64_t *last, int *kind)
{
	*kind = -1;
	if (wide && !type_is_whole()) {
		*kind = make_wide(r, -1, a, b, start, last);
		INC(s->wide_tried);
		return;
	}
	if (type_is_whole() || (opt.type == T_RANGE && !narrow_phase() &&
				chance(r, opt.full_share))) {
		*a = 0;
		*b = opt.pool - 1;
		*start = 0;
		*last = RANGE_LOCK_FULL;
		return;
	}
	if (opt.max_len) {
		uint64_t len = 1 + rnd(r) % opt.max_len;

		if (len > opt.pool)
			len = opt.pool;
		*a = rnd(r) % (opt.pool - len + 1);
		*b = *a + len - 1;
	} else {
		/* The kernel torture's mkrandom_range(). */
		*b = rnd(r) % opt.pool;
		*a = rnd(r) % (*b + 1);
	}
	*start = opt.base + *a;
	*last = opt.base + *b;
}

static void hold(struct slot *s, struct rng *r)
{
	if (chance(r, opt.long_share)) {
		INC(s->long_holds);
		sleep_ns(opt.long_us * 1000);
	} else if (opt.hold_us) {
		spin_ns(rnd(r) % (opt.hold_us * 1000ull + 1));
		if ((rnd(r) & 15) == 0)
			sched_yield();
	}
}

static void stutter_wait(struct slot *s)
{
	set_state(s, S_PAUSED);
	pthread_mutex_lock(&stutter_mutex);
	while (atomic_load(&paused) && !atomic_load(&stop))
		pthread_cond_wait(&stutter_cond, &stutter_mutex);
	pthread_mutex_unlock(&stutter_mutex);
	set_state(s, S_IDLE);
}

/* --inject=hang: hold forever (the watchdog must fire). */
static void inject_hang(struct slot *s)
{
	report("injected hang: %s %d (tid %u) keeps [%" PRIu64 ", %" PRIu64 "] forever",
	       slot_name(s), s->id, GET(s->tid), GET(s->cur_start), GET(s->cur_last));
	for (;;)
		sleep_ns(1000000000ull);
}

/*
 * --xunlock: the unlocker thread, not the locking one, unmarks and unlocks
 * this hold (the header allows any thread to unlock a request).  The locking
 * thread waits until it has, since the request lives on its stack.
 */
static atomic_bool xunlock_stop;

static void unlock_elsewhere(struct slot *s, struct range_lock *rl, bool writer,
			     uint64_t a, uint64_t b)
{
	s->x_a = a;
	s->x_b = b;
	s->x_writer = writer;
	atomic_store(&s->x_req, rl);
	while (atomic_load(&s->x_req))
		sleep_ns(5000);
}

static void *unlocker_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&xunlock_stop)) {
		bool any = false;

		for (int i = 0; i < nr_slots; i++) {
			struct slot *s = &slots[i];
			struct range_lock *rl = atomic_load(&s->x_req);

			if (!rl)
				continue;
			shadow_leave(s->x_writer, s->x_a, s->x_b);
			do_unlock(rl, s->x_writer);
			INC(s->xunlocks);
			atomic_store(&s->x_req, NULL);
			any = true;
		}
		if (!any)
			sleep_ns(20000);
	}
	return NULL;
}

/* --expect-word-mode: could this call wait on the lock word? */
static bool word_eligible(const struct range_lock *rl, bool writer, enum call c)
{
	return opt.expect_word_mode && type_is_range() && writer && rl->start == 0 &&
	       rl->last == RANGE_LOCK_FULL && (c == C_PLAIN || c == C_TIMED);
}

/*
 * --expect-word-mode: is this call one that word mode makes wait on the
 * lock word?  A plain or timed whole-resource write call (only those wait
 * on the word: a reader, a partial range, a trylock and the interruptible
 * calls take the tree path), arriving while the word holds a fast holder.
 * If it then waits 50 us or more (far longer than the polls before the
 * sleep), word mode should have put it to sleep on the word -- unless the
 * holder was displaced meanwhile, which any call taking the tree path may
 * do: op() counts such arrivals in wm_tree_arrivals and a chance counts
 * only if none arrived during the wait.
 */
static _Atomic uint64_t wm_tree_arrivals;

static bool word_chance(const struct range_lock *rl, bool writer, enum call c)
{
	uintptr_t v;

	if (!word_eligible(rl, writer, c))
		return false;
	v = __atomic_load_n(&tree.lock_word, __ATOMIC_RELAXED);
	return v > 7;
}

static void multi_op(struct slot *s, struct rng *r, bool set, bool wide);

/*
 * ---- asynchronous requests (range_*_lock_async, range_lock_async_cancel) --
 * --async=P: P% of the operations submit an asynchronous request.  Held at
 * once, it is held; queued, half of them are withdrawn after a random pause
 * of up to about 30 us, racing the grant (withdrawn: the completion must
 * never run; -EALREADY: it runs), the others waited for.  The completion
 * (on whichever thread's release granted it) records its call; the actor
 * waits for it, checks it ran once with 0, then holds the range under the
 * shadow check like any other hold.  Cancellation is disabled meanwhile: a
 * queued request on an unwound stack would be written by its completion.
 */
struct async_req {
	struct range_lock_async a;    /* first: the completion gets &a */
	atomic_int calls;
	atomic_int status;
};

static void async_completed(struct range_lock_async *a, int status)
{
	struct async_req *q = (struct async_req *)a;

	atomic_store_explicit(&q->status, status, memory_order_relaxed);
	atomic_fetch_add_explicit(&q->calls, 1, memory_order_release); /* last touch */
}

static void async_op(struct slot *s, struct rng *r, bool wide)
{
	struct async_req q;
	uint64_t a, b, start, last;
	bool writer = s->writer;
	int ret, cancel_state, kind;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	make_range(s, r, wide, &a, &b, &start, &last, &kind);
	atomic_init(&q.calls, 0);
	atomic_init(&q.status, 0);
	if (range_lock_async_init(&q.a, start, last, async_completed, NULL))
		slot_error(s, "range_lock_async_init failed");
	SET(s->cur_start, start);
	SET(s->cur_last, last);
	set_state(s, S_LOCKING);
	ret = lib_writer(writer) ? range_write_lock_async(&tree, &q.a)
				 : range_read_lock_async(&tree, &q.a);
	INC(s->asyncs);
	INC(s->progress);
	if (kind >= 0)
		INC(s->wide_async);
	if (ret == -EINPROGRESS) {
		INC(s->async_queued);
		if (rnd(r) & 1) {
			for (volatile unsigned i = 0, n = (unsigned)(rnd(r) % 4000); i < n; i++)
				;
			ret = range_lock_async_cancel(&tree, &q.a);
			if (ret == 0) {
				INC(s->async_withdrawn);
				if (kind >= 0)
					INC(s->wide_async_withdrawn);
				if (atomic_load(&q.calls))
					slot_error(s, "completion of a withdrawn asynchronous request");
				set_state(s, S_IDLE);
				pthread_setcancelstate(cancel_state, NULL);
				return;
			}
			if (ret != -EALREADY)
				slot_error(s, "range_lock_async_cancel returned %d", ret);
			INC(s->async_late_cancel);
		}
		while (!atomic_load_explicit(&q.calls, memory_order_acquire))
			sleep_ns(2000);
		if (atomic_load(&q.calls) != 1 || atomic_load(&q.status) != 0)
			slot_error(s, "asynchronous completion ran %d times, status %d",
				   atomic_load(&q.calls), atomic_load(&q.status));
	} else if (ret != 0) {
		slot_error(s, "range_%s_lock_async returned %d", writer ? "write" : "read", ret);
	} else if (atomic_load(&q.calls)) {
		slot_error(s, "completion of an asynchronous request held at submission");
	}
	INC(s->acquired);
	if (kind >= 0)
		INC(s->wide_held[kind]);
	set_state(s, S_HOLDING);
	shadow_enter(s, writer, a, b);
	hold(s, r);
	shadow_check(s, writer, a, b, "before unlock (asynchronous request)");
	shadow_leave(writer, a, b);
	do_unlock(&q.a.lock, writer);
	if (atomic_load(&q.calls) > 1)
		slot_error(s, "asynchronous completion ran %d times", atomic_load(&q.calls));
	set_state(s, S_IDLE);
	pthread_setcancelstate(cancel_state, NULL);
}

static void one_op(struct slot *s, struct rng *r)
{
	struct range_lock rl;
	uint64_t a, b, start, last, t0, arrivals;
	bool writer = s->writer, chance_, wide = want_wide(s, r);
	enum outcome out;
	enum call c;
	int kind;

	if (!type_is_whole() && chance(r, opt.many_share)) {
		if (opt.expect_word_mode)
			INC(wm_tree_arrivals);
		multi_op(s, r, true, wide);
		return;
	}
	if (!type_is_whole() && chance(r, opt.grow_share)) {
		if (opt.expect_word_mode)
			INC(wm_tree_arrivals);
		multi_op(s, r, false, wide);
		return;
	}
	if (type_is_range() && chance(r, opt.async_share)) {
		if (opt.expect_word_mode)
			INC(wm_tree_arrivals);
		async_op(s, r, wide);
		return;
	}
	c = pick_call(r);
	make_range(s, r, wide, &a, &b, &start, &last, &kind);
	range_lock_init(&rl, start, last);
	SET(s->cur_start, start);
	SET(s->cur_last, last);
	SET(s->call, c);
	set_state(s, S_LOCKING);
	if (opt.expect_word_mode && !word_eligible(&rl, writer, c))
		INC(wm_tree_arrivals);
	chance_ = word_chance(&rl, writer, c);
	arrivals = GET(wm_tree_arrivals);
	t0 = now_ns();
	out = do_lock(s, r, &rl, writer, c);
	t0 = now_ns() - t0;
	if (chance_ && t0 >= 50000 && GET(wm_tree_arrivals) == arrivals)
		INC(s->word_chances);
	if (out == GOT && t0 > GET(s->max_wait_ns))
		SET(s->max_wait_ns, t0);
	INC(s->by_call[c]);
	INC(s->progress);
	if (kind >= 0) {
		INC(s->wide_calls[c]);
		if (out != GOT)
			INC(s->wide_gave_up);
	}
	switch (out) {
	case GOT:
		break;
	case BUSY:
		INC(s->try_busy);
		set_state(s, S_IDLE);
		return;
	case INTR:
		INC(s->gave_up_intr);
		set_state(s, S_IDLE);
		return;
	case TIMEDOUT:
		INC(s->gave_up_timeout);
		set_state(s, S_IDLE);
		return;
	case BADTIME:
		INC(s->gave_up_einval);
		set_state(s, S_IDLE);
		return;
	case BROKEN:
		set_state(s, S_IDLE);
		return;
	}
	INC(s->acquired);
	if (kind >= 0)
		INC(s->wide_held[kind]);
	/* A fast-held request's owner_tid is a slot tag (bit 31), never a
	 * thread id (issue 13); read by its own thread, which wrote it. */
	if (!writer && type_is_range() && (rl.owner_tid & 0x80000000u))
		INC(s->fast_reads);
	/* Word mode: a whole-resource call that slept on the lock word takes
	 * it with its sleepers code (6 writer, 2 reader): the word holds this
	 * request's address with that code until someone displaces it. */
	if (opt.expect_word_mode && type_is_range()) {
		uintptr_t v = __atomic_load_n(&tree.lock_word, __ATOMIC_RELAXED);

		if ((v & ~(uintptr_t)7) == (uintptr_t)&rl && ((v & 7) == 6 || (v & 7) == 2))
			INC(s->word_slept);
	}
	set_state(s, S_HOLDING);
	shadow_enter(s, writer, a, b);
	hold(s, r);
	if (opt.inject == INJ_HANG && s->id == 0 && GET(s->acquired) >= 20)
		inject_hang(s);
	if (writer && opt.downgrade && can_downgrade() && (rnd(r) & 1)) {
		shadow_check(s, true, a, b, "before downgrade");
		shadow_downgrade(a, b);
		if (opt.expect_word_mode)
			INC(wm_tree_arrivals);
		do_downgrade(&rl);
		INC(s->downgrades);
		if (kind >= 0)
			INC(s->wide_downgrades);
		hold(s, r);
		shadow_check(s, false, a, b, "after downgrade, before unlock");
		shadow_leave(false, a, b);
		/* Now a read hold (busted-range holds it for reading anyway). */
		if (type_is_range())
			range_read_unlock(&tree, &rl);
	} else {
		shadow_check(s, writer, a, b, "before unlock");
		if (type_is_range() && chance(r, opt.xunlock_share)) {
			unlock_elsewhere(s, &rl, writer, a, b);
		} else {
			shadow_leave(writer, a, b);
			do_unlock(&rl, writer);
		}
	}
	set_state(s, S_IDLE);
}

/* ---- sets (range_lock_many*) and grow/shrink (range_lock_grow*, _shrink) ----
 * --many=P: P% of the operations lock a set of 2 or 3 requests in one call
 * (random ranges that may overlap each other, random modes in writer slots,
 * reads in reader slots; a quarter of them the deadlock pattern: the two
 * ranges of the pattern, in a random order, for writing where the slot
 * writes).  --grow=P: P% of the operations lock one range and change it
 * while held; a held set's requests are grown and shrunk at the same rate.
 *
 * The shadow array sees a thread's requests as one owner: per unit its
 * level is the strongest mode among its requests there (none, read,
 * write), and every change of the holding (lock, grow, shrink, unlock of
 * one request) moves the marks unit by unit from the old level to the new
 * one: increases after the call returned (and checked there), decreases
 * before the call.  So a set's own overlapping write and read pass, anyone
 * else's access on the same units fails.
 *
 * Blocking grows can deadlock by design (two holders growing into each
 * other's ranges, or into a set that holds part of its ranges while it
 * waits for the grower).  So the plain, interruptible and killable grows
 * run only in the thread's own lane: the last quarter of the pool is split
 * into one lane per slot; a lane operation locks a range inside its lane
 * and grows only there, set ranges are drawn outside the lanes, and every
 * other grow is a _try or _timed one, which gives up whatever happens.
 * (Interruptible and killable grows elsewhere would end their deadlocks
 * only while the storm and the cancellations run: a thread in one when
 * the run ends would stay there.)  The requests of a set are grown only by
 * _try and _timed (a grow into a conflicting sibling waits for itself:
 * that one must fail).
 */
#define MR_MAX 3

struct mr_desc {
	uint64_t a, b;   /* pool units (the pool part of a wide range) */
	uint64_t ls, ll; /* library units: the request's range */
	int mode;        /* RANGE_LOCK_READ / RANGE_LOCK_WRITE */
	bool in;         /* held */
};

/* The library range of pool units [a, b], or of @d's range changed to
 * pool units [na, nb]: an end that did not move keeps the library's (a
 * wide range runs past the pool), one that moved is in the pool. */
static uint64_t mr_ls(const struct mr_desc *d, uint64_t na)
{
	return na == d->a ? d->ls : opt.base + na;
}

static uint64_t mr_ll(const struct mr_desc *d, uint64_t nb)
{
	return nb == d->b ? d->ll : opt.base + nb;
}

struct mr_hold {
	struct slot *s;
	unsigned n;
	struct range_lock rl[MR_MAX];
	struct mr_desc d[MR_MAX];
};

static uint64_t lanes_start, lane_len;  /* lane_len 0: no lanes */

/* The mode asked of the library (busted-range: writers ask for reading). */
static int mr_lib_mode(int mode)
{
	return lib_writer(mode == RANGE_LOCK_WRITE) ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
}

static int mr_level(const struct mr_desc *d, unsigned n, uint64_t u)
{
	int l = 0;

	for (unsigned i = 0; i < n; i++)
		if (d[i].in && d[i].a <= u && u <= d[i].b && d[i].mode + 1 > l)
			l = d[i].mode + 1;
	return l;
}

static void mr_span(const struct mr_desc *d, unsigned n, uint64_t *lo, uint64_t *hi)
{
	for (unsigned i = 0; i < n; i++) {
		if (!d[i].in)
			continue;
		if (d[i].a < *lo)
			*lo = d[i].a;
		if (d[i].b > *hi)
			*hi = d[i].b;
	}
}

/* Move this thread's marks from holding @from to holding @to. */
static void shadow_move(struct slot *s, const struct mr_desc *from,
			const struct mr_desc *to, unsigned n, const char *when)
{
	uint64_t lo = UINT64_MAX, hi = 0, bad = UINT64_MAX;
	uint32_t bw = 0, br = 0;

	mr_span(from, n, &lo, &hi);
	mr_span(to, n, &lo, &hi);
	for (uint64_t u = lo; lo != UINT64_MAX && u <= hi; u++) {
		int o = mr_level(from, n, u), l = mr_level(to, n, u);
		uint32_t w = 0, r = 0;
		bool fail = false;

		if (o == l)
			continue;
		if (o == 0 && l == 1) {
			r = atomic_fetch_add(&shadow[u].readers, 1);
			w = atomic_load(&shadow[u].writers);
			fail = w != 0;
		} else if (o == 0 && l == 2) {
			w = atomic_fetch_add(&shadow[u].writers, 1);
			r = atomic_load(&shadow[u].readers);
			fail = w || r;
		} else if (o == 1 && l == 2) {
			w = atomic_fetch_add(&shadow[u].writers, 1);
			r = atomic_fetch_sub(&shadow[u].readers, 1) - 1;
			fail = w || r;
		} else if (o == 2 && l == 1) {
			atomic_fetch_add(&shadow[u].readers, 1);
			atomic_fetch_sub(&shadow[u].writers, 1);
		} else if (o == 2) {
			atomic_fetch_sub(&shadow[u].writers, 1);
		} else {
			atomic_fetch_sub(&shadow[u].readers, 1);
		}
		if (fail && bad == UINT64_MAX) {
			bad = u;
			bw = w;
			br = r;
		}
	}
	if (bad != UINT64_MAX) {
		INC(s->fails);
		report("exclusion violated %s: %s %d (tid %u) got unit %" PRIu64
		       " for %s but it already had %u other writer(s) and %u other"
		       " reader(s)", when, slot_name(s), s->id, GET(s->tid),
		       opt.base + bad, mr_level(to, n, bad) == 2 ? "writing" : "reading",
		       bw, br);
	}
}

/* Check this thread's holding: alone on its written units, no writer on
 * its read ones. */
static void shadow_check_set(struct slot *s, const struct mr_desc *d, unsigned n,
			     const char *when)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	mr_span(d, n, &lo, &hi);
	for (uint64_t u = lo; lo != UINT64_MAX && u <= hi; u++) {
		int l = mr_level(d, n, u);
		uint32_t w, r;

		if (!l)
			continue;
		w = atomic_load(&shadow[u].writers);
		r = atomic_load(&shadow[u].readers);
		if (l == 2 ? (w != 1 || r != 0) : (w != 0 || r == 0)) {
			INC(s->fails);
			report("exclusion violated %s: %s %d (tid %u) holding unit %" PRIu64
			       " for %s (set of %u) finds %u writer(s) and %u reader(s)",
			       when, slot_name(s), s->id, GET(s->tid), opt.base + u,
			       l == 2 ? "writing" : "reading", n, w, r);
			return;
		}
	}
}

/* A range of 1.. units inside [lo, hi] (pool units). */
static void mr_range_in(struct rng *r, uint64_t lo, uint64_t hi, uint64_t *a, uint64_t *b)
{
	uint64_t span = hi - lo + 1, len;

	if (opt.max_len)
		len = 1 + rnd(r) % (opt.max_len < span ? opt.max_len : span);
	else
		len = 1 + rnd(r) % span;
	*a = lo + rnd(r) % (span - len + 1);
	*b = *a + len - 1;
}

static uint64_t mr_set_hi(void)
{
	return lane_len ? lanes_start - 1 : opt.pool - 1;
}

/* Does pool range [a, b] conflict with a held sibling of request @i? */
static bool mr_sibling_conflict_in(const struct mr_hold *h, unsigned i, uint64_t a,
				   uint64_t b)
{
	for (unsigned j = 0; j < h->n; j++)
		if (j != i && h->d[j].in && h->d[j].a <= b && a <= h->d[j].b &&
		    (h->d[j].mode == RANGE_LOCK_WRITE || h->d[i].mode == RANGE_LOCK_WRITE))
			return true;
	return false;
}

/* Would growing request @i to [na, nb] wait for a sibling?  Only the units
 * added wait (what it held, it keeps). */
static bool mr_sibling_conflict(const struct mr_hold *h, unsigned i, uint64_t na,
				uint64_t nb)
{
	return (na < h->d[i].a && mr_sibling_conflict_in(h, i, na, h->d[i].a - 1)) ||
	       (nb > h->d[i].b && mr_sibling_conflict_in(h, i, h->d[i].b + 1, nb));
}

/* Cancelled in a _killable grow: the request is as before the call; give
 * up the whole holding (the tree must keep nothing of this thread). */
static void mr_cancelled_in_grow(void *arg)
{
	struct mr_hold *h = arg;
	struct mr_desc none[MR_MAX];

	for (unsigned i = 0; i < h->n; i++) {
		none[i] = h->d[i];
		none[i].in = false;
	}
	shadow_move(h->s, h->d, none, h->n, "on cancellation");
	for (unsigned i = 0; i < h->n; i++) {
		if (!h->d[i].in)
			continue;
		if (mr_lib_mode(h->d[i].mode) == RANGE_LOCK_WRITE)
			range_write_unlock(&tree, &h->rl[i]);
		else
			range_read_unlock(&tree, &h->rl[i]);
	}
	cancelled_in_lock(h->s);
}

/* Lock the set with call @c. */
static enum outcome mr_lock_many(struct slot *s, struct rng *r,
				 const struct range_lock_item *it, unsigned n, enum call c)
{
	struct deadline d;
	sig_atomic_t sig0;
	uint64_t cancels0;
	int ret;

	switch (c) {
	case C_PLAIN:
		range_lock_many(&tree, it, n);
		return GOT;
	case C_TRY:
		ret = range_lock_many_try(&tree, it, n);
		if (ret == 1)
			return GOT;
		if (ret != 0)
			slot_error(s, "range_lock_many_try returned %d", ret);
		return BUSY;
	case C_INTR:
		sig0 = tl_signals;
		cancels0 = GET(s->cancels_sent_here);
		ret = range_lock_many_interruptible(&tree, it, n);
		if (ret == 0)
			return GOT;
		if (ret == -EINTR) {
			if (tl_signals == sig0 && GET(s->cancels_sent_here) == cancels0)
				slot_error(s, "range_lock_many_interruptible returned -EINTR"
					   " but no signal handler ran in the call");
			return INTR;
		}
		slot_error(s, "range_lock_many_interruptible returned %d", ret);
		return BROKEN;
	case C_KILL:
		ret = -1;
		pthread_cleanup_push(cancelled_in_lock, s);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		ret = range_lock_many_killable(&tree, it, n);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cleanup_pop(0);
		if (ret == 0)
			return GOT;
		slot_error(s, "range_lock_many_killable returned %d", ret);
		return BROKEN;
	case C_TIMED:
		make_deadline(r, &d);
		ret = range_lock_many_timed(&tree, it, n, d.clk, &d.ts);
		return judge_timed(s, &d, ret, "range_lock_many_timed");
	default:
		abort();
	}
}

/* Grow request @i of @h to pool units [na, nb] with call @c. */
static enum outcome mr_grow(struct mr_hold *h, struct rng *r, unsigned i,
			    uint64_t st, uint64_t la, enum call c)
{
	struct slot *s = h->s;
	struct range_lock *rl = &h->rl[i];
	struct deadline d;
	sig_atomic_t sig0;
	uint64_t cancels0;
	int ret;

	switch (c) {
	case C_PLAIN:
		ret = range_lock_grow(&tree, rl, st, la);
		if (ret)
			slot_error(s, "range_lock_grow returned %d", ret);
		return ret ? BROKEN : GOT;
	case C_TRY:
		ret = range_lock_grow_try(&tree, rl, st, la);
		if (ret == 1)
			return GOT;
		if (ret != 0)
			slot_error(s, "range_lock_grow_try returned %d", ret);
		return BUSY;
	case C_INTR:
		sig0 = tl_signals;
		cancels0 = GET(s->cancels_sent_here);
		ret = range_lock_grow_interruptible(&tree, rl, st, la);
		if (ret == 0)
			return GOT;
		if (ret == -EINTR) {
			if (tl_signals == sig0 && GET(s->cancels_sent_here) == cancels0)
				slot_error(s, "range_lock_grow_interruptible returned -EINTR"
					   " but no signal handler ran in the call");
			return INTR;
		}
		slot_error(s, "range_lock_grow_interruptible returned %d", ret);
		return BROKEN;
	case C_KILL:
		ret = -1;
		pthread_cleanup_push(mr_cancelled_in_grow, h);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		ret = range_lock_grow_killable(&tree, rl, st, la);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cleanup_pop(0);
		if (ret == 0)
			return GOT;
		slot_error(s, "range_lock_grow_killable returned %d", ret);
		return BROKEN;
	case C_TIMED:
		make_deadline(r, &d);
		ret = range_lock_grow_timed(&tree, rl, st, la, d.clk, &d.ts);
		return judge_timed(s, &d, ret, "range_lock_grow_timed");
	default:
		abort();
	}
}

static void mr_count(struct slot *s, enum outcome out)
{
	switch (out) {
	case GOT:
	case BROKEN:
		break;
	case BUSY:
		INC(s->try_busy);
		break;
	case INTR:
		INC(s->gave_up_intr);
		break;
	case TIMEDOUT:
		INC(s->gave_up_timeout);
		break;
	case BADTIME:
		INC(s->gave_up_einval);
		break;
	}
}

static unsigned mr_pick_held(const struct mr_hold *h, struct rng *r)
{
	unsigned k = (unsigned)(rnd(r) % h->n);

	while (!h->d[k].in)
		k = (k + 1) % h->n;
	return k;
}

static unsigned mr_nr_held(const struct mr_hold *h)
{
	unsigned k = 0;

	for (unsigned i = 0; i < h->n; i++)
		k += h->d[i].in;
	return k;
}

/* One grow of a held request (a random super-range; 3% not one: -EINVAL). */
static void mr_do_grow(struct mr_hold *h, struct rng *r, bool lane, uint64_t lo, uint64_t hi)
{
	struct slot *s = h->s;
	unsigned i = mr_pick_held(h, r);
	struct mr_desc nd[MR_MAX];
	uint64_t a = h->d[i].a, b = h->d[i].b, na, nb, os, ol, nls, nll;
	uint64_t ext = opt.max_len > 1 ? opt.max_len : opt.max_len ? 2 : 64;
	bool bad = chance(r, 3), selfc;
	enum call c = pick_call(r);
	enum outcome out;

	if (a < lo)
		lo = a;
	if (b > hi)
		hi = b;
	na = a - (a > lo ? rnd(r) % (a - lo + 1 < ext ? a - lo + 1 : ext) : 0);
	nb = b + (b < hi ? rnd(r) % (hi - b + 1 < ext ? hi - b + 1 : ext) : 0);
	if (bad) {
		if (nb > b)
			nb = b - (a < b); /* shorter on the right, or the same */
		else if (na < a)
			na = a + (a < b);
		else if (a < b)
			na = a + 1;
		else
			bad = false; /* one unit and no room: a valid no-op */
		if (bad && na > nb)
			nb = na;
		if (bad && na <= a && nb >= b)
			bad = false;
	}
	selfc = !bad && mr_sibling_conflict(h, i, na, nb);
	/* The calls that may wait for good (plain; interruptible and killable,
	 * which the storm and the cancellations end only while the run lasts:
	 * a thread in such a call when they stop would stay there) only in
	 * the lane; elsewhere, and into a sibling, _try or _timed. */
	if ((c == C_PLAIN || c == C_INTR || c == C_KILL) && (!lane || h->n > 1))
		c = (rnd(r) & 1) ? C_TRY : C_TIMED;
	if (selfc && c != C_TRY && c != C_TIMED)
		c = (rnd(r) & 1) ? C_TRY : C_TIMED;
	os = h->rl[i].start;
	ol = h->rl[i].last;
	nls = mr_ls(&h->d[i], na);
	nll = mr_ll(&h->d[i], nb);
	if (bad) {
		/* Not a super-range: -EINVAL at once from every call, nothing
		 * changed. */
		struct timespec ts = ns_ts(clock_ns(CLOCK_MONOTONIC) + 1000000);
		int ret;

		switch (rnd(r) % 3) {
		case 0:
			ret = range_lock_grow(&tree, &h->rl[i], nls, nll);
			break;
		case 1:
			ret = range_lock_grow_try(&tree, &h->rl[i], nls, nll);
			break;
		default:
			ret = range_lock_grow_timed(&tree, &h->rl[i], nls, nll,
						    CLOCK_MONOTONIC, &ts);
			break;
		}
		if (ret != -EINVAL || h->rl[i].start != os || h->rl[i].last != ol)
			slot_error(s, "grow of [%" PRIu64 ", %" PRIu64 "] to the non-super-range"
				   " [%" PRIu64 ", %" PRIu64 "] returned %d, left [%" PRIu64
				   ", %" PRIu64 "]", os, ol, nls, nll, ret,
				   h->rl[i].start, h->rl[i].last);
		return;
	}
	SET(s->cur_start, nls);
	SET(s->cur_last, nll);
	SET(s->call, c);
	set_state(s, S_LOCKING);
	out = mr_grow(h, r, i, nls, nll, c);
	INC(s->by_call[c]);
	INC(s->progress);
	INC(s->grows);
	set_state(s, S_HOLDING);
	mr_count(s, out);
	if (out != GOT) {
		if (h->rl[i].start != os || h->rl[i].last != ol)
			slot_error(s, "failed grow (%s) left [%" PRIu64 ", %" PRIu64 "], was"
				   " [%" PRIu64 ", %" PRIu64 "]", call_names[c],
				   h->rl[i].start, h->rl[i].last, os, ol);
		return;
	}
	if (selfc)
		slot_error(s, "grow of a set's request into a conflicting sibling"
			   " succeeded (it must wait for itself)");
	if (h->rl[i].start != nls || h->rl[i].last != nll)
		slot_error(s, "grow returned success but the request is [%" PRIu64 ", %"
			   PRIu64 "], not [%" PRIu64 ", %" PRIu64 "]", h->rl[i].start,
			   h->rl[i].last, nls, nll);
	if (nls != os || nll != ol)
		INC(s->acquired);
	memcpy(nd, h->d, sizeof(nd));
	nd[i].a = na;
	nd[i].b = nb;
	nd[i].ls = nls;
	nd[i].ll = nll;
	shadow_move(s, h->d, nd, h->n, "after grow");
	memcpy(h->d, nd, sizeof(nd));
}

/* Shrink request @i of @h to pool units [na, nb], library units [ls, ll]. */
static void mr_shrink_to(struct mr_hold *h, unsigned i, uint64_t na, uint64_t nb,
			 uint64_t ls, uint64_t ll)
{
	struct slot *s = h->s;
	struct mr_desc nd[MR_MAX];
	int ret;

	memcpy(nd, h->d, sizeof(nd));
	nd[i].a = na;
	nd[i].b = nb;
	nd[i].ls = ls;
	nd[i].ll = ll;
	shadow_move(s, h->d, nd, h->n, "before shrink");
	memcpy(h->d, nd, sizeof(nd));
	ret = range_lock_shrink(&tree, &h->rl[i], ls, ll);
	INC(s->shrinks);
	if (ret || h->rl[i].start != ls || h->rl[i].last != ll)
		slot_error(s, "range_lock_shrink returned %d, request [%" PRIu64 ", %"
			   PRIu64 "] (wanted [%" PRIu64 ", %" PRIu64 "])", ret,
			   h->rl[i].start, h->rl[i].last, ls, ll);
}

/*
 * --wide: grow held request @i to a wide range (a super-range of its own:
 * a narrow request to the whole range, the pool, or a spread), by _try or
 * _timed only (two holders growing over each other's ranges wait for each
 * other for good: a deadlock by design); then, half the time, shrink it
 * back to what it was.
 */
static void mr_do_grow_wide(struct mr_hold *h, struct rng *r, unsigned i)
{
	struct slot *s = h->s;
	struct mr_desc nd[MR_MAX], old = h->d[i];
	uint64_t na, nb, nls, nll;
	enum call c = (rnd(r) & 1) ? C_TRY : C_TIMED;
	enum outcome out;
	bool selfc;

	make_wide(r, -1, &na, &nb, &nls, &nll);
	if (nls > old.ls)
		nls = old.ls;
	if (nll < old.ll)
		nll = old.ll;
	pool_part(nls, nll, &na, &nb);
	selfc = mr_sibling_conflict(h, i, na, nb);
	SET(s->cur_start, nls);
	SET(s->cur_last, nll);
	SET(s->call, c);
	set_state(s, S_LOCKING);
	out = mr_grow(h, r, i, nls, nll, c);
	INC(s->by_call[c]);
	INC(s->progress);
	INC(s->grows);
	INC(s->wide_grows);
	set_state(s, S_HOLDING);
	mr_count(s, out);
	if (out != GOT) {
		if (h->rl[i].start != old.ls || h->rl[i].last != old.ll)
			slot_error(s, "failed grow to a wide range (%s) left [%" PRIu64 ", %"
				   PRIu64 "], was [%" PRIu64 ", %" PRIu64 "]", call_names[c],
				   h->rl[i].start, h->rl[i].last, old.ls, old.ll);
		return;
	}
	if (selfc)
		slot_error(s, "grow of a set's request to a wide range over a conflicting"
			   " sibling succeeded (it must wait for itself)");
	if (h->rl[i].start != nls || h->rl[i].last != nll)
		slot_error(s, "grow to a wide range returned success but the request is [%"
			   PRIu64 ", %" PRIu64 "], not [%" PRIu64 ", %" PRIu64 "]",
			   h->rl[i].start, h->rl[i].last, nls, nll);
	if (nls != old.ls || nll != old.ll)
		INC(s->acquired);
	INC(s->wide_grown);
	memcpy(nd, h->d, sizeof(nd));
	nd[i].a = na;
	nd[i].b = nb;
	nd[i].ls = nls;
	nd[i].ll = nll;
	shadow_move(s, h->d, nd, h->n, "after grow to a wide range");
	memcpy(h->d, nd, sizeof(nd));
	hold(s, r);
	shadow_check_set(s, h->d, h->n, "after grow to a wide range");
	if (rnd(r) & 1) {
		mr_shrink_to(h, i, old.a, old.b, old.ls, old.ll);
		INC(s->wide_shrunk_back);
	}
}

static void mr_do_shrink(struct mr_hold *h, struct rng *r)
{
	struct slot *s = h->s;
	unsigned i = mr_pick_held(h, r);
	uint64_t a = h->d[i].a, b = h->d[i].b, na, nb;
	int ret;

	na = a + rnd(r) % (b - a + 1);
	nb = na + rnd(r) % (b - na + 1);
	if (chance(r, 3) && (a > 0 || b < opt.pool - 1)) {
		/* Not a sub-range: -EINVAL, nothing changed.  (a > 0: the
		 * range starts in the pool; else it ends there.) */
		uint64_t xs = a > 0 ? opt.base + a - 1 : h->d[i].ls;
		uint64_t xl = a > 0 ? h->d[i].ll : opt.base + b + 1;

		ret = range_lock_shrink(&tree, &h->rl[i], xs, xl);
		if (ret != -EINVAL || h->rl[i].start != h->d[i].ls ||
		    h->rl[i].last != h->d[i].ll)
			slot_error(s, "range_lock_shrink to a super-range returned %d", ret);
		return;
	}
	mr_shrink_to(h, i, na, nb, mr_ls(&h->d[i], na), mr_ll(&h->d[i], nb));
}

static void mr_unlock_one(struct mr_hold *h, unsigned i)
{
	struct mr_desc nd[MR_MAX];

	memcpy(nd, h->d, sizeof(nd));
	nd[i].in = false;
	shadow_move(h->s, h->d, nd, h->n, "before unlock");
	memcpy(h->d, nd, sizeof(nd));
	if (mr_lib_mode(nd[i].mode) == RANGE_LOCK_WRITE)
		range_write_unlock(&tree, &h->rl[i]);
	else
		range_read_unlock(&tree, &h->rl[i]);
}

static void multi_op(struct slot *s, struct rng *r, bool set, bool wide)
{
	struct mr_hold h;
	struct range_lock_item it[MR_MAX];
	struct mr_desc none[MR_MAX];
	bool lane = false, grow_wide = false;
	int wide_kind = -1;
	unsigned wide_i = 0;
	uint64_t lo = 0, hi = opt.pool - 1;
	unsigned steps;
	enum outcome out;
	enum call c = pick_call(r);
	uint64_t t0;

	memset(&h, 0, sizeof(h));
	h.s = s;
	h.n = set ? 2 + (unsigned)(rnd(r) & 1) : 1;
	if (set && chance(r, 25)) {
		/* The deadlock pattern: the same two ranges, in either order. */
		uint64_t top = mr_set_hi(), len = top / 8 ? top / 8 : 1;
		unsigned x = (unsigned)(rnd(r) & 1);

		h.n = 2;
		h.d[x].a = 0;
		h.d[x].b = len - 1;
		h.d[!x].a = top - len + 1;
		h.d[!x].b = top;
		h.d[0].mode = h.d[1].mode = s->writer ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
		INC(s->patterns);
	} else if (set) {
		/* A bound tree refuses sets whose ranges overlap with a writer
		 * (its OFD level has one owner): disjoint slices there. */
		uint64_t slice = (mr_set_hi() + 1) / h.n;

		for (unsigned i = 0; i < h.n; i++) {
			if (opt.bind)
				mr_range_in(r, i * slice, (i + 1) * slice - 1, &h.d[i].a,
					    &h.d[i].b);
			else
				mr_range_in(r, 0, mr_set_hi(), &h.d[i].a, &h.d[i].b);
			h.d[i].mode = s->writer && (rnd(r) & 1) ? RANGE_LOCK_WRITE
								 : RANGE_LOCK_READ;
		}
		if (s->writer && h.d[0].mode == RANGE_LOCK_READ &&
		    h.d[1].mode == RANGE_LOCK_READ)
			h.d[0].mode = RANGE_LOCK_WRITE;
		if (wide) {
			/* A wide member (it meets the lanes: the set waits by
			 * _try or _timed then, see below).  Bound: every member
			 * reads (the wide one overlaps the others). */
			wide_i = (unsigned)(rnd(r) % h.n);
			wide_kind = make_wide(r, -1, &h.d[wide_i].a, &h.d[wide_i].b,
					      &h.d[wide_i].ls, &h.d[wide_i].ll);
			INC(s->wide_tried);
			for (unsigned i = 0; opt.bind && i < h.n; i++)
				h.d[i].mode = RANGE_LOCK_READ;
		}
	} else if (wide && (rnd(r) & 1)) {
		/* Locked wide, then grown, shrunk (the way back to narrow). */
		h.d[0].mode = s->writer ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
		wide_kind = make_wide(r, -1, &h.d[0].a, &h.d[0].b, &h.d[0].ls, &h.d[0].ll);
		INC(s->wide_tried);
	} else {
		/* (wide: locked narrow, then grown to a wide range) */
		grow_wide = wide;
		h.d[0].mode = s->writer ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
		if (lane_len && (rnd(r) & 1)) {
			lane = true;
			lo = lanes_start + (uint64_t)(s - slots) * lane_len; /* ids repeat */
			hi = lo + lane_len - 1;
			mr_range_in(r, lo, lo + (lane_len - 1) / 2, &h.d[0].a, &h.d[0].b);
		} else {
			mr_range_in(r, 0, opt.pool - 1, &h.d[0].a, &h.d[0].b);
		}
	}
	for (unsigned i = 0; i < h.n; i++) {
		if (wide_kind < 0 || i != wide_i) {
			h.d[i].ls = opt.base + h.d[i].a;
			h.d[i].ll = opt.base + h.d[i].b;
		}
		range_lock_init(&h.rl[i], h.d[i].ls, h.d[i].ll);
		it[i].lock = &h.rl[i];
		it[i].mode = mr_lib_mode(h.d[i].mode);
		none[i] = h.d[i];
		none[i].in = false;
	}
	/* A set with a wide member meets the lanes, where blocking grows
	 * wait: it must not wait for good (see above). */
	if (set && wide_kind >= 0 && lane_len && c != C_TRY && c != C_TIMED)
		c = (rnd(r) & 1) ? C_TRY : C_TIMED;
	SET(s->cur_start, h.d[0].ls);
	SET(s->cur_last, h.d[0].ll);
	SET(s->call, c);
	set_state(s, S_LOCKING);
	t0 = now_ns();
	if (set && c == C_KILL)
		atomic_fetch_add(&s->stats_slack, h.n); /* it may die in there */
	if (set)
		out = mr_lock_many(s, r, it, h.n, c);
	else
		out = lock_range(s, r, &h.rl[0], mr_lib_mode(h.d[0].mode) == RANGE_LOCK_WRITE, c);
	t0 = now_ns() - t0;
	if (out == GOT && t0 > GET(s->max_wait_ns))
		SET(s->max_wait_ns, t0);
	INC(s->by_call[c]);
	INC(s->progress);
	mr_count(s, out);
	if (out != GOT) {
		/* Granted members of a set given up were counted as acquired by
		 * the library's statistics. */
		if (set && out != BUSY && c != C_KILL)
			atomic_fetch_add(&s->stats_slack, h.n);
		set_state(s, S_IDLE);
		return;
	}
	if (set)
		INC(s->sets);
	if (wide_kind >= 0) {
		INC(s->wide_held[wide_kind]);
		if (set)
			INC(s->wide_sets);
	}
	atomic_fetch_add(&s->acquired, h.n);
	for (unsigned i = 0; i < h.n; i++)
		h.d[i].in = true;
	set_state(s, S_HOLDING);
	shadow_move(s, none, h.d, h.n, set ? "on entry (set)" : "on entry");
	hold(s, r);
	if (grow_wide) {
		mr_do_grow_wide(&h, r, 0);
		shadow_check_set(s, h.d, h.n, "after a change");
		lane = false; /* (it may have left its lane: no blocking grow) */
	}
	for (steps = (unsigned)(rnd(r) % 4); steps; steps--) {
		unsigned what = (unsigned)(rnd(r) % 4);

		if (what <= 1 && wide && set && chance(r, opt.grow_share))
			mr_do_grow_wide(&h, r, mr_pick_held(&h, r));
		else if (what <= 1 && (chance(r, opt.grow_share) || !set))
			mr_do_grow(&h, r, lane, lo, hi);
		else if (what == 2 && (chance(r, opt.grow_share) || !set))
			mr_do_shrink(&h, r);
		else if (what == 3 && mr_nr_held(&h) > 1)
			mr_unlock_one(&h, mr_pick_held(&h, r));
		hold(s, r);
		shadow_check_set(s, h.d, h.n, "after a change");
	}
	shadow_check_set(s, h.d, h.n, "before unlock");
	if (mr_nr_held(&h) > 1 && (rnd(r) & 1)) {
		struct range_lock_item left[MR_MAX];
		unsigned k = 0;

		for (unsigned i = 0; i < h.n; i++)
			if (h.d[i].in)
				left[k++] = it[i];
		shadow_move(s, h.d, none, h.n, "before unlock");
		range_unlock_many(&tree, left, k);
		INC(s->unlock_many);
	} else {
		for (unsigned i = 0; i < h.n; i++)
			if (h.d[i].in)
				mr_unlock_one(&h, i);
	}
	set_state(s, S_IDLE);
}

/* With the killable mix a cancellation may be pending when the killable call
 * did not wait (it is a cancellation point only while it waits): act on it
 * here, where the thread holds nothing. */
static void cancellation_point(struct slot *s)
{
	pthread_cleanup_push(cancelled_outside, s);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_testcancel();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_pop(0);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	struct rng r;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	SET(s->tid, gettid_());
	rng_seed(&r, opt.seed ^ ((uint64_t)s->id << 20) ^ ((uint64_t)s->generation << 40));
	set_state(s, S_IDLE);
	while (!atomic_load(&stop)) {
		if (atomic_load(&paused))
			stutter_wait(s);
		if (atomic_load(&stop))
			break;
		one_op(s, &r);
		if (s->writer && opt.write_pause_us)
			sleep_ns(opt.write_pause_us * 1000ull);
		if (opt.calls[C_KILL])
			cancellation_point(s);
		/* locktorture's occasional sleep outside the lock */
		if ((rnd(&r) & 0x3ff) == 0)
			sleep_ns(20000);
	}
	if (opt.inject == INJ_LEAK && s->id == 0 && type_is_range()) {
		/* --inject=leak: a request nobody ever unlocks, on a unit
		 * outside the pool (the end-of-run check must see it). */
		struct range_lock *leak = malloc(sizeof(*leak));

		uint64_t u = opt.base + (opt.pool - 1) < UINT64_MAX ? opt.base + opt.pool
								     : opt.base - 1;

		range_lock_init(leak, u, u);
		range_read_lock(&tree, leak);
		report("injected leak: %s %d (tid %u) keeps [%" PRIu64 ", %" PRIu64 "]",
		       slot_name(s), s->id, GET(s->tid), leak->start, leak->last);
	}
	set_state(s, S_DONE);
	return NULL;
}

/*
 * Each slot runs its threads on one stack of its own, reused by the thread
 * that replaces a cancelled one (after the join and the withdrawal check) and
 * never unmapped: a request is usually on its thread's stack, so a request
 * wrongly left in the tree must stay readable memory for the checks and the
 * dump (glibc would unmap or hand out its cached stacks).
 */
#define WORKER_STACK (4u << 20) /* sanitizers need more than 1 MB */

static int start_worker(struct slot *s)
{
	pthread_attr_t attr;
	int rc;

	if (!s->stack) {
		void *p = mmap(NULL, WORKER_STACK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

		if (p == MAP_FAILED)
			return errno;
		mprotect(p, 4096, PROT_NONE); /* guard page */
		s->stack = p;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, s->stack, WORKER_STACK);
	pthread_mutex_lock(&s->m);
	rc = pthread_create(&s->thread, &attr, worker, s);
	pthread_attr_destroy(&attr);
	s->running = rc == 0;
	pthread_mutex_unlock(&s->m);
	return rc;
}

/* ---- the helpers -------------------------------------------------------------- */

/*
 * --expect-word-mode: a monitor samples the tree's lock word (a public
 * field; the library accesses it only atomically) about every 50 us, and
 * counts the samples that show word sleepers (a fast holder's code 6,
 * writer, or 2, reader: whole-resource lock calls sleep on the word), and
 * the samples taken while some whole-resource plain or timed lock call had
 * been waiting for 50 us or more.  The workers count the holds they took
 * after a sleep on the word (word_slept) and their calls that word mode
 * should have put to sleep (word_chances: see word_chance()).  A run with
 * word_chances but neither sleeper samples nor word_slept fails: word mode
 * did not run.  (Word mode may rightly stay off for a whole run, when the
 * tree never empties: then there are no chances either.)
 */
static struct {
	_Atomic uint64_t samples, fast, sleepers_w, sleepers_r, contended;
} wm;
static atomic_bool wm_stop;

static bool whole_call_waiting(uint64_t now)
{
	for (int i = 0; i < nr_slots; i++) {
		struct slot *s = &slots[i];
		int c = GET(s->call);

		if (GET(s->state) == S_LOCKING && (c == C_PLAIN || c == C_TIMED) &&
		    GET(s->cur_start) == 0 && GET(s->cur_last) == RANGE_LOCK_FULL &&
		    now - GET(s->since_ns) >= 50000)
			return true;
	}
	return false;
}

static void *word_monitor_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&wm_stop)) {
		uintptr_t v = __atomic_load_n(&tree.lock_word, __ATOMIC_RELAXED);

		INC(wm.samples);
		if (v > 7) {
			INC(wm.fast);
			if ((v & 7) == 6)
				INC(wm.sleepers_w);
			else if ((v & 7) == 2)
				INC(wm.sleepers_r);
		}
		if (whole_call_waiting(now_ns()))
			INC(wm.contended);
		sleep_ns(50000);
	}
	return NULL;
}

/*
 * --stats-reader: a helper calls range_lock_tree_get_stats() about every
 * 100 us while the workers run, and checks each reading on its own and
 * against the one before: every counter and peak only grows (no reset
 * happens during a run), held_now and waiting_now stay within what the
 * threads can hold or wait for at once (MR_MAX requests each: a set), and
 * each peak is at least its current value.  A reading is a snapshot (on a
 * segmented tree, taken under every segment's lock), so a request that
 * moves between segments (a shrink, a set's member taking its part's
 * place) or is counted in two steps must never show twice, or not at all.
 */
static atomic_bool sr_stop;
static _Atomic uint64_t sr_reads;

static void *stats_reader_thread(void *arg)
{
	struct range_lock_stats prev, cur;
	const size_t nf = sizeof(cur) / sizeof(uint64_t);
	const size_t held_i = offsetof(struct range_lock_stats, held_now) / sizeof(uint64_t);
	const size_t waiting_i = offsetof(struct range_lock_stats, waiting_now) / sizeof(uint64_t);
	const uint64_t bound = (uint64_t)nr_slots * MR_MAX;
	/* A grow's pieces wait each on its own, two per segment of the new
	 * range at most (two on a tree without segments): a thread's one call
	 * in flight is a set or a grow. */
	const uint64_t per_grow = opt.seg_n ? 2u * opt.seg_n : 2u;
	const uint64_t wbound = (uint64_t)nr_slots * (per_grow > MR_MAX ? per_grow : MR_MAX);
	bool have_prev = false;

	(void)arg;
	while (!atomic_load(&sr_stop)) {
		if (range_lock_tree_get_stats(&tree, &cur) == 0) {
			const uint64_t *c = (const uint64_t *)&cur, *p = (const uint64_t *)&prev;

			INC(sr_reads);
			if (cur.held_now > bound || cur.waiting_now > wbound)
				error("--stats-reader: held_now=%" PRIu64 " waiting_now=%" PRIu64
				      " with %d threads (bounds: %" PRIu64 " held, %" PRIu64
				      " waiting)", cur.held_now, cur.waiting_now, nr_slots,
				      bound, wbound);
			if (cur.held_peak < cur.held_now || cur.waiting_peak < cur.waiting_now)
				error("--stats-reader: a peak below its current value (held %"
				      PRIu64 "/%" PRIu64 ", waiting %" PRIu64 "/%" PRIu64 ")",
				      cur.held_now, cur.held_peak, cur.waiting_now, cur.waiting_peak);
			for (size_t i = 0; have_prev && i < nf; i++)
				if (i != held_i && i != waiting_i && c[i] < p[i])
					error("--stats-reader: counter %zu of struct range_lock_stats"
					      " fell from %" PRIu64 " to %" PRIu64, i, p[i], c[i]);
			prev = cur;
			have_prev = true;
		}
		sleep_ns(100000);
	}
	return NULL;
}

/*
 * --wide on a segmented tree: a monitor samples the tree's lock word about
 * every 50 us and counts the samples in each mode and the changes between
 * them: the gate's segments mode (the word TL_SEGMENTED, 2, or draining, 5
 * or 7) and its plain mode (anything else).  Printed, not judged: a library
 * without the gate stays in segments mode for the whole run.
 */
static struct {
	_Atomic uint64_t samples, seg, plain, switches;
} gm;
static atomic_bool gm_stop;

static void *gate_monitor_thread(void *arg)
{
	int last = -1;

	(void)arg;
	while (!atomic_load(&gm_stop)) {
		uintptr_t v = __atomic_load_n(&tree.lock_word, __ATOMIC_RELAXED);
		int seg = v == 2 || v == 5 || v == 7;

		INC(gm.samples);
		INC(*(seg ? &gm.seg : &gm.plain));
		if (last >= 0 && seg != last)
			INC(gm.switches);
		last = seg;
		sleep_ns(50000);
	}
	return NULL;
}

/* Calls that should have slept on the word needed to judge a run.  A
 * chance counts only while no call took the tree path (word_chance()), so
 * nearly every chance sleeps (the writers-only mixes: about one hold after
 * a word sleep per chance), and a library whose whole-resource writers
 * never sleep on the word shows 5 to 13 chances in a 1.5 s writers run. */
#define WM_JUDGE_CHANCES 5

static uint64_t sum_word_slept(void);
static uint64_t sum_word_chances(void);

static void judge_word_mode(void)
{
	uint64_t sl = GET(wm.sleepers_w) + GET(wm.sleepers_r), slept = sum_word_slept();
	uint64_t chances = sum_word_chances();

	printf("Word mode: %" PRIu64 " of %" PRIu64 " samples of the lock word saw word"
	       " sleepers (writer holder %" PRIu64 ", reader holder %" PRIu64 ");"
	       " a fast holder in %" PRIu64 "; a whole-resource plain/timed call"
	       " waiting in %" PRIu64 "; %" PRIu64 " holds were taken after a sleep"
	       " on the word; %" PRIu64 " calls found a conflicting word holder"
	       " and waited 50 us or more\n", sl, GET(wm.samples), GET(wm.sleepers_w),
	       GET(wm.sleepers_r), GET(wm.fast), GET(wm.contended), slept, chances);
	if (sl || slept)
		return;
	if (chances >= WM_JUDGE_CHANCES)
		error("--expect-word-mode: %" PRIu64 " whole-resource calls found a"
		      " conflicting word holder and waited, but no sample saw a word"
		      " sleeper and no hold followed a sleep on the word", chances);
	else
		printf("--expect-word-mode: not judged (only %" PRIu64 " calls found a"
		       " conflicting word holder and waited, fewer than %d)\n",
		       chances, WM_JUDGE_CHANCES);
}

/* Sleep @ns in slices, returning early (true) when the run stops. */
static bool nap(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (!atomic_load(&stop)) {
		uint64_t now = now_ns();

		if (now >= end)
			return false;
		sleep_ns(end - now < 20000000 ? end - now : 20000000);
	}
	return true;
}

static void *stutter_thread(void *arg)
{
	(void)arg;
	while (!nap(opt.stutter_ms * 1000000ull)) {
		pthread_mutex_lock(&stutter_mutex);
		SET(pause_started_ns, now_ns());
		atomic_store(&paused, true);
		pthread_mutex_unlock(&stutter_mutex);
		INC(stutters);
		nap(opt.stutter_ms * 1000000ull);
		/* All restart together. */
		pthread_mutex_lock(&stutter_mutex);
		atomic_store(&paused, false);
		pthread_cond_broadcast(&stutter_cond);
		pthread_mutex_unlock(&stutter_mutex);
	}
	pthread_mutex_lock(&stutter_mutex);
	atomic_store(&paused, false);
	pthread_cond_broadcast(&stutter_cond);
	pthread_mutex_unlock(&stutter_mutex);
	return NULL;
}

static int cpu_list[CPU_SETSIZE];

static void *shuffle_thread(void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, opt.seed ^ 0x5348554646ull);
	while (!nap(opt.shuffle_ms * 1000000ull)) {
		cpu_set_t set;
		bool single = (rnd(&r) & 3) == 0;
		int idle;

		if (nr_allowed_cpus < 2)
			continue;
		/* Like the kernel's shuffler: one CPU left idle; sometimes
		 * each thread pinned to a single CPU instead. */
		idle = cpu_list[rnd(&r) % (uint64_t)nr_allowed_cpus];
		for (int i = 0; i < nr_slots; i++) {
			struct slot *s = &slots[i];

			if (single) {
				CPU_ZERO(&set);
				CPU_SET(cpu_list[rnd(&r) % (uint64_t)nr_allowed_cpus], &set);
			} else {
				set = allowed_cpus;
				CPU_CLR(idle, &set);
			}
			pthread_mutex_lock(&s->m);
			if (s->running) {
				int rc = pthread_setaffinity_np(s->thread, sizeof(set), &set);
				if (rc && rc != ESRCH)
					error("pthread_setaffinity_np: %s", strerror(rc));
			}
			pthread_mutex_unlock(&s->m);
		}
		INC(shuffles);
	}
	return NULL;
}

static void *storm_thread(void *arg)
{
	struct rng r;
	bool restart = opt.sa != SA_OFF;
	uint64_t next_toggle = now_ns() + 100000000ull;

	(void)arg;
	rng_seed(&r, opt.seed ^ 0x5349474eull);
	while (!nap(opt.signal_us * 1000ull)) {
		struct slot *s = &slots[rnd(&r) % (uint64_t)nr_slots];

		pthread_mutex_lock(&s->m);
		if (s->running && pthread_kill(s->thread, SIGUSR1) == 0)
			INC(signals_sent);
		pthread_mutex_unlock(&s->m);
		if (opt.sa == SA_ALTERNATE && now_ns() >= next_toggle) {
			restart = !restart;
			install_handler(restart);
			INC(sa_toggles);
			next_toggle = now_ns() + 100000000ull;
		}
	}
	return NULL;
}

/* After a cancelled thread is joined: no request of its tid may be left. */
static void check_withdrawn(struct slot *s, uint32_t tid)
{
	char *buf = NULL, pat[32];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		error("open_memstream: %s", strerror(errno));
		return;
	}
	range_lock_tree_dump(&tree, f);
	fclose(f);
	snprintf(pat, sizeof(pat), "tid=%u\n", tid);
	if (strstr(buf, pat))
		error("%s %d (tid %u) was cancelled in a killable call and left a"
		      " request in the tree:\n%s", slot_name(s), s->id, tid, buf);
	free(buf);
}

static void *cancel_thread(void *arg)
{
	struct rng r;
	int *cand = calloc((size_t)nr_slots, sizeof(int));

	(void)arg;
	rng_seed(&r, opt.seed ^ 0x43414e43ull);
	while (!nap(opt.cancel_ms * 1000000ull)) {
		struct slot *s;
		char why[256];
		pthread_t h;
		void *ret;
		uint32_t tid;
		int n = 0, rc;

		for (int i = 0; i < nr_slots; i++)
			if (GET(slots[i].state) == S_LOCKING && GET(slots[i].call) == C_KILL)
				cand[n++] = i;
		if (!n)
			continue;
		s = &slots[cand[rnd(&r) % (uint64_t)n]];
		pthread_mutex_lock(&s->m);
		if (!s->running) {
			pthread_mutex_unlock(&s->m);
			continue;
		}
		h = s->thread;
		s->running = false;
		pthread_mutex_unlock(&s->m);

		tid = GET(s->tid);
		INC(s->cancels_sent_here);
		pthread_cancel(h);
		INC(cancels_sent);
		rc = pthread_join(h, &ret);
		if (rc) {
			error("pthread_join: %s", strerror(rc));
			continue;
		}
		if (ret != PTHREAD_CANCELED)
			continue; /* ended by the stop before acting on it */
		INC(cancels_joined);
		if (GET(s->state) != S_DEAD) {
			/* Its cancel state was DISABLED there: a cancellation
			 * requested in a killable wait acted later.  Whatever
			 * it held stays held (in the tree and in the shadow
			 * array), so later failures follow from this one; its
			 * slot is not restarted, so that its stack (where the
			 * request lives) is not reused under the tree. */
			error("%s %d (tid %u) ended cancelled while %s (%s call) [%" PRIu64
			      ", %" PRIu64 "], outside the killable call and the"
			      " testcancel point, with cancellation disabled; what it"
			      " held stays locked", slot_name(s), s->id, tid,
			      state_names[GET(s->state)], call_names[GET(s->call)],
			      GET(s->cur_start), GET(s->cur_last));
			set_state(s, S_DONE);
			/* Stop here: no new thread may get the dead thread's
			 * cached stack, where its request still is. */
			atomic_store(&no_restart, true);
			snprintf(why, sizeof(why), "%s %d (tid %u) died holding [%" PRIu64
				 ", %" PRIu64 "] with cancellation disabled; its request"
				 " stays in the tree", slot_name(s), s->id, tid,
				 GET(s->cur_start), GET(s->cur_last));
			end_run_now("ABORTED", why);
		}
		check_withdrawn(s, tid);
		if (atomic_load(&stop) || atomic_load(&no_restart)) {
			set_state(s, S_DONE);
			continue;
		}
		s->generation++;
		rc = start_worker(s);
		if (rc)
			error("cannot restart %s %d: pthread_create: %s", slot_name(s),
			      s->id, strerror(rc));
		else
			INC(restarts);
	}
	free(cand);
	return NULL;
}

/* ---- statistics --------------------------------------------------------------- */

struct mode_sum {
	uint64_t total, max, min, fails;
	int threads;
};

static struct mode_sum sum_mode(bool writer)
{
	struct mode_sum m = { 0, 0, UINT64_MAX, 0, 0 };

	for (int i = 0; i < nr_slots; i++) {
		uint64_t n;

		if (slots[i].writer != writer)
			continue;
		n = GET(slots[i].acquired);
		m.threads++;
		m.total += n;
		m.fails += GET(slots[i].fails);
		if (n > m.max)
			m.max = n;
		if (n < m.min)
			m.min = n;
	}
	if (!m.threads)
		m.min = 0;
	return m;
}

static void print_mode(FILE *f, const char *prefix, bool writer)
{
	struct mode_sum m = sum_mode(writer);

	fprintf(f, "%s%s Total: %" PRIu64 " Max/Min: %" PRIu64 "/%" PRIu64 "%s Fail: %"
		PRIu64 "%s\n", prefix, writer ? "Writes:" : "Reads:", m.total, m.max,
		m.min, m.threads && m.max / 2 > m.min ? " ???" : "", m.fails,
		m.fails ? " !!!" : "");
}

static uint64_t sum_field(size_t offset)
{
	uint64_t t = 0;

	for (int i = 0; i < nr_slots; i++)
		t += atomic_load_explicit((_Atomic uint64_t *)((char *)&slots[i] + offset),
					  memory_order_relaxed);
	return t;
}
#define SUM(field) sum_field(offsetof(struct slot, field))

static uint64_t sum_word_slept(void)
{
	return SUM(word_slept);
}

static uint64_t sum_word_chances(void)
{
	return SUM(word_chances);
}

/* ---- the watchdog --------------------------------------------------------------- */

static atomic_bool watchdog_done;

static void *dump_thread(void *arg)
{
	(void)arg;
	range_lock_tree_dump(&tree, stdout);
	fflush(stdout);
	return NULL;
}

/* End the run at once: print every thread's state and the tree, then
 * FAILURE.  For hangs, and for a thread that died holding a range (its
 * request stays in the tree, on the stack of a dead thread). */
static _Noreturn void end_run_now(const char *headline, const char *why)
{
	uint64_t now = now_ns();
	pthread_t t;

	fflush(stderr);
	printf("%s: %s\n", headline, why);
	for (int i = 0; i < nr_slots; i++) {
		struct slot *s = &slots[i];
		int st = GET(s->state);
		double secs = (double)(now - GET(s->since_ns)) / 1e9;
		bool stuck = (st == S_LOCKING || st == S_HOLDING || st == S_PAUSED) &&
			     secs * 1000 >= opt.watchdog_s * 1000.0;

		printf("  %s %d (tid %u): %s", slot_name(s), s->id, GET(s->tid),
		       state_names[st]);
		if (st == S_LOCKING || st == S_HOLDING)
			printf(" (%s call) [%" PRIu64 ", %" PRIu64 "]",
			       call_names[GET(s->call)], GET(s->cur_start), GET(s->cur_last));
		printf(" for %.3f s, %" PRIu64 " acquisitions%s\n", secs,
		       GET(s->acquired), stuck ? "  <-- STUCK" : "");
	}
	if (type_is_range()) {
		struct timespec ts;

		printf("Tree:\n");
		fflush(stdout);
		/* The dump takes the internal tree lock: if that is what hangs,
		 * do not hang with it. */
		if (pthread_create(&t, NULL, dump_thread, NULL) == 0) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 3;
			if (pthread_timedjoin_np(t, NULL, &ts))
				printf("  (tree dump blocked for 3 s: the internal tree lock is held)\n");
		}
	}
	print_mode(stdout, "", true);
	print_mode(stdout, "", false);
	printf("End of test: FAILURE\n");
	fflush(stdout);
	_exit(EXIT_FAILURE);
}

static _Noreturn void hang(const char *why)
{
	end_run_now("HANG", why);
}

static void *watchdog_thread(void *arg)
{
	uint64_t last_sum = 0, last_change = now_ns(), next_stat;
	uint64_t limit = opt.watchdog_s * 1000000000ull;
	uint64_t t0 = now_ns();
	char why[256];

	(void)arg;
	next_stat = t0 + opt.stat_interval_s * 1000000000ull;
	while (!atomic_load(&watchdog_done)) {
		uint64_t now, sum, end;

		sleep_ns(50000000);
		now = now_ns();
		sum = SUM(progress);
		if (sum != last_sum || atomic_load(&paused)) {
			last_sum = sum;
			last_change = now;
		}
		if (now - last_change >= limit) {
			snprintf(why, sizeof(why), "no lock call completed for %u s", opt.watchdog_s);
			hang(why);
		}
		for (int i = 0; i < nr_slots; i++) {
			struct slot *s = &slots[i];
			int st = GET(s->state);
			uint64_t since = GET(s->since_ns);
			uint64_t lim = limit + (st == S_PAUSED ? opt.stutter_ms * 1000000ull : 0);

			if ((st == S_LOCKING || st == S_HOLDING || st == S_PAUSED) &&
			    now > since && now - since >= lim) {
				snprintf(why, sizeof(why), "%s %d (tid %u) %s for %.1f s",
					 slot_name(s), s->id, GET(s->tid), state_names[st],
					 (double)(now - since) / 1e9);
				hang(why);
			}
		}
		end = GET(run_end_ns);
		if (end && now - end >= limit) {
			snprintf(why, sizeof(why), "the threads did not finish %u s after"
				 " the end of the run", opt.watchdog_s);
			hang(why);
		}
		if (opt.stat_interval_s && now >= next_stat) {
			char prefix[32];

			snprintf(prefix, sizeof(prefix), "[%.1f s] ", (double)(now - t0) / 1e9);
			print_mode(stdout, prefix, true);
			print_mode(stdout, prefix, false);
			fflush(stdout);
			next_stat += opt.stat_interval_s * 1000000000ull;
		}
	}
	return NULL;
}

/* ---- options ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: rangelock-torture [options]\n"
"  --type=T            range (default), range-full, rwlock, mutex, busted,\n"
"                      busted-range (the last two are broken on purpose)\n"
"  --readers=N         reader threads (default 2 per CPU; 0 for mutex)\n"
"  --writers=N         writer threads (default 2 per CPU); not both 0\n"
"  --duration=S        seconds to run (default 5; decimals allowed)\n"
"  --pool=N            units in the range pool (default 4096)\n"
"  --base=N            library unit of pool unit 0 (default 0)\n"
"  --max-len=N         range lengths 1..N (default 0: the kernel torture's\n"
"                      random [start, last] in the pool)\n"
"  --full-share=P      percent of range requests for [0, RANGE_LOCK_FULL] (1)\n"
"  --long-hold=P       percent of holds that are long (default 1)\n"
"  --long-us=US        length of a long hold (default 2000)\n"
"  --hold-us=US        short holds: 0..US of busy time (default 20; 0: empty)\n"
"  --empty             empty critical sections (--hold-us=0 --long-hold=0)\n"
"  --calls=LIST        lock calls to mix, comma-separated: plain, try, intr,\n"
"                      kill, timed, downgrade, all (default plain)\n"
"  --stutter=MS        run MS, pause MS, all threads together (default 0: off)\n"
"  --shuffle=MS        re-pin threads to CPUs every MS (default 0: off)\n"
"  --cpus=N            run on N CPUs only (default 0: all allowed)\n"
"  --storm / --no-storm  signal storm (default: on when intr is in the mix)\n"
"  --sa-restart=M      storm handler flags: on, off, alternate (default,\n"
"                      switching every 100 ms)\n"
"  --signal-us=US      between two signals of the storm (default 200)\n"
"  --cancel-ms=MS      between two cancellations, kill mix (default 5)\n"
"  --timeout-us=US     timed calls: deadlines 0..2*US ahead (default 50)\n"
"  --watchdog=S        declare a hang after S s without progress (default 10)\n"
"  --stat-interval=S   print the counters every S s (default 0: at the end)\n"
"  --stats=W           tree statistics: start (default: enabled before the\n"
"                      threads start), mid (enabled half-way through, so the\n"
"                      first half runs with the uncontended fast path live and\n"
"                      the enabling races with it), off (fast path live all\n"
"                      run; no statistics check)\n"
"  --seed=N            random seed (default: from the clock; printed)\n"
"  --inject=W          break the harness on purpose: hang (a thread never\n"
"                      unlocks; the watchdog must fire), leak (a request is\n"
"                      never unlocked; range_lock_tree_destroy must fail)\n"
"  --verbose           per-thread counters at the end\n"
"  --policy=P          default (eventual fairness) or fifo (strict arrival order)\n"
"  --defer-writers     range_lock_tree_defer_writers(): writers defer to the\n"
"                      tree's sleeping readers (at most about 2 ms)\n"
"  --max-wait-ms=N     fail if a writer waits longer than N ms for its range\n"
"  --write-pause-us=US writers sleep US between operations (read-mostly mixes)\n"
"  --xunlock=P         percent of holds unlocked by another thread (0)\n"
"  --many=P            percent of operations that lock a set of 2-3 ranges (0)\n"
"  --grow=P            percent of operations that grow/shrink a held range (0)\n"
"  --async=P           percent of operations that submit an asynchronous request,\n"
"                      half of the queued ones withdrawn racing the grant (0)\n"
"  --segments=S:K     split the tree into S segments (2..256, a power of two)\n"
"                      by stripes of 2^K units\n"
"  --expect-fast-reads fail if no read hold took the reader fast path\n"
"  --expect-word-mode  sample the tree's lock word; fail if whole-resource\n"
"                      calls met a conflicting word holder and waited, but\n"
"                      none was seen sleeping on the word (word mode needs\n"
"                      --stats=off or mid, and no checking mode)\n"
"  --stats-reader      a helper reads the statistics every 100 us during the\n"
"                      run: counters only grow, peaks cover the current\n"
"                      values, held/waiting stay within the threads' reach\n"
"  --bind              bind the tree to a temporary file (after --segments):\n"
"                      every hold takes its OFD lock too; at the end another\n"
"                      description must find no lock left on the file\n"
"  --wide=P            percent of operations that are wide: their request (a\n"
"                      set's member, a grow's target) meets every segment:\n"
"                      [0, RANGE_LOCK_FULL], the pool, or S to 2S stripes;\n"
"                      the other ranges are narrow: one stripe at most (0)\n"
"  --wide-burst=N      a thread's wide operations come N in a row (1)\n"
"  --wide-phase-ms=MS  alternate narrow phases (no wide or whole request) and\n"
"                      wide phases of MS each, all threads together (0: off)\n"
"  --help\n"
"environment: RANGELOCK_TORTURE_DURATION_SCALE=F multiplies --duration by F\n"
"  (0 < F <= 100; the test command's sanitizer and other-platform stages\n"
"  run the torture at 0.5)\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		return false;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* --duration was multiplied by RANGELOCK_TORTURE_DURATION_SCALE. */
static bool duration_scaled;

static bool parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !errno && *end == '\0' && end != s && *out >= 0;
}

static _Noreturn void bad_option(const char *name, const char *value)
{
	fprintf(stderr, "rangelock-torture: bad value for --%s: '%s'\n", name,
		value ? value : "");
	usage(stderr);
	exit(2);
}

static void parse_calls(char *list)
{
	char *save = NULL;

	memset(opt.calls, 0, sizeof(opt.calls));
	opt.downgrade = false;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		bool found = false;

		if (!strcmp(t, "all")) {
			for (int i = 0; i < NR_CALLS; i++)
				opt.calls[i] = true;
			opt.downgrade = true;
			continue;
		}
		if (!strcmp(t, "downgrade")) {
			opt.downgrade = true;
			continue;
		}
		for (int i = 0; i < NR_CALLS; i++) {
			if (!strcmp(t, call_names[i]) ||
			    (i == C_TRY && !strcmp(t, "trylock")) ||
			    (i == C_INTR && !strcmp(t, "interruptible")) ||
			    (i == C_KILL && !strcmp(t, "killable"))) {
				opt.calls[i] = true;
				found = true;
			}
		}
		if (!found)
			bad_option("calls", t);
	}
	/* downgrade alone: plain write locks, then downgraded */
	if (!opt.calls[C_PLAIN] && !opt.calls[C_TRY] && !opt.calls[C_INTR] &&
	    !opt.calls[C_KILL] && !opt.calls[C_TIMED])
		opt.calls[C_PLAIN] = true;
}

static void parse_options(int argc, char **argv)
{
	enum {
		O_TYPE = 256, O_READERS, O_WRITERS, O_DURATION, O_POOL, O_BASE,
		O_MAXLEN, O_FULL, O_LONG, O_LONGUS, O_HOLDUS, O_EMPTY, O_CALLS,
		O_STUTTER, O_SHUFFLE, O_CPUS, O_STORM, O_NOSTORM, O_SA, O_SIGUS,
		O_CANCELMS, O_TIMEOUTUS, O_WATCHDOG, O_STAT, O_SEED, O_INJECT, O_STATS,
		O_VERBOSE, O_HELP, O_POLICY, O_RFIRST, O_MAXWAIT, O_WPAUSE, O_XUNLOCK, O_EXPFAST, O_EXPWORD,
		O_MANY, O_GROW, O_ASYNCSHARE, O_SEGMENTS, O_STATSREADER, O_BIND,
		O_WIDE, O_WIDEBURST, O_WIDEPHASE,
	};
	static const struct option longopts[] = {
		{ "type", required_argument, 0, O_TYPE },
		{ "readers", required_argument, 0, O_READERS },
		{ "writers", required_argument, 0, O_WRITERS },
		{ "duration", required_argument, 0, O_DURATION },
		{ "pool", required_argument, 0, O_POOL },
		{ "base", required_argument, 0, O_BASE },
		{ "max-len", required_argument, 0, O_MAXLEN },
		{ "full-share", required_argument, 0, O_FULL },
		{ "long-hold", required_argument, 0, O_LONG },
		{ "long-us", required_argument, 0, O_LONGUS },
		{ "hold-us", required_argument, 0, O_HOLDUS },
		{ "empty", no_argument, 0, O_EMPTY },
		{ "calls", required_argument, 0, O_CALLS },
		{ "stutter", required_argument, 0, O_STUTTER },
		{ "shuffle", required_argument, 0, O_SHUFFLE },
		{ "cpus", required_argument, 0, O_CPUS },
		{ "storm", no_argument, 0, O_STORM },
		{ "no-storm", no_argument, 0, O_NOSTORM },
		{ "sa-restart", required_argument, 0, O_SA },
		{ "signal-us", required_argument, 0, O_SIGUS },
		{ "cancel-ms", required_argument, 0, O_CANCELMS },
		{ "timeout-us", required_argument, 0, O_TIMEOUTUS },
		{ "watchdog", required_argument, 0, O_WATCHDOG },
		{ "stat-interval", required_argument, 0, O_STAT },
		{ "seed", required_argument, 0, O_SEED },
		{ "inject", required_argument, 0, O_INJECT },
		{ "stats", required_argument, 0, O_STATS },
		{ "verbose", no_argument, 0, O_VERBOSE },
		{ "policy", required_argument, 0, O_POLICY },
		{ "defer-writers", no_argument, 0, O_RFIRST },
		{ "max-wait-ms", required_argument, 0, O_MAXWAIT },
		{ "write-pause-us", required_argument, 0, O_WPAUSE },
		{ "xunlock", required_argument, 0, O_XUNLOCK },
		{ "many", required_argument, 0, O_MANY },
		{ "grow", required_argument, 0, O_GROW },
		{ "async", required_argument, 0, O_ASYNCSHARE },
		{ "segments", required_argument, 0, O_SEGMENTS },
		{ "expect-fast-reads", no_argument, 0, O_EXPFAST },
		{ "expect-word-mode", no_argument, 0, O_EXPWORD },
		{ "stats-reader", no_argument, 0, O_STATSREADER },
		{ "bind", no_argument, 0, O_BIND },
		{ "wide", required_argument, 0, O_WIDE },
		{ "wide-burst", required_argument, 0, O_WIDEBURST },
		{ "wide-phase-ms", required_argument, 0, O_WIDEPHASE },
		{ "help", no_argument, 0, O_HELP },
		{ 0, 0, 0, 0 },
	};
	bool seeded = false;
	uint64_t v;
	int c;

	opt.calls[C_PLAIN] = true;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		const char *name = NULL;

		for (const struct option *o = longopts; o->name; o++)
			if (o->val == c)
				name = o->name;
		switch (c) {
		case O_TYPE: {
			bool found = false;

			for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
				if (!strcmp(optarg, type_names[i])) {
					opt.type = (enum lock_type)i;
					found = true;
				}
			if (!found)
				bad_option(name, optarg);
			break;
		}
		case O_READERS:
		case O_WRITERS:
			if (!parse_u64(optarg, &v) || v > 4096)
				bad_option(name, optarg);
			*(c == O_READERS ? &opt.readers : &opt.writers) = (int)v;
			break;
		case O_DURATION:
			if (!parse_double(optarg, &opt.duration) || opt.duration <= 0 ||
			    opt.duration > 1e6)
				bad_option(name, optarg);
			break;
		case O_POOL:
			if (!parse_u64(optarg, &opt.pool) || !opt.pool || opt.pool > (1u << 24))
				bad_option(name, optarg);
			break;
		case O_BASE:
			if (!parse_u64(optarg, &opt.base))
				bad_option(name, optarg);
			break;
		case O_MAXLEN:
			if (!parse_u64(optarg, &opt.max_len))
				bad_option(name, optarg);
			break;
		case O_FULL:
			if (!parse_double(optarg, &opt.full_share) || opt.full_share > 100)
				bad_option(name, optarg);
			break;
		case O_LONG:
			if (!parse_double(optarg, &opt.long_share) || opt.long_share > 100)
				bad_option(name, optarg);
			break;
		case O_LONGUS:
			if (!parse_u64(optarg, &v) || v > 10000000)
				bad_option(name, optarg);
			opt.long_us = v;
			break;
		case O_HOLDUS:
			if (!parse_u64(optarg, &v) || v > 1000000)
				bad_option(name, optarg);
			opt.hold_us = (unsigned)v;
			break;
		case O_EMPTY:
			opt.hold_us = 0;
			opt.long_share = 0;
			break;
		case O_CALLS:
			parse_calls(optarg);
			break;
		case O_STUTTER:
		case O_SHUFFLE:
		case O_SIGUS:
		case O_CANCELMS:
		case O_TIMEOUTUS:
		case O_WATCHDOG:
		case O_STAT:
			if (!parse_u64(optarg, &v) || v > 100000000)
				bad_option(name, optarg);
			*(c == O_STUTTER ? &opt.stutter_ms : c == O_SHUFFLE ? &opt.shuffle_ms :
			  c == O_SIGUS ? &opt.signal_us : c == O_CANCELMS ? &opt.cancel_ms :
			  c == O_TIMEOUTUS ? &opt.timeout_us : c == O_WATCHDOG ? &opt.watchdog_s :
			  &opt.stat_interval_s) = (unsigned)v;
			break;
		case O_CPUS:
			if (!parse_u64(optarg, &v) || v > CPU_SETSIZE)
				bad_option(name, optarg);
			opt.cpus = (int)v;
			break;
		case O_STORM:
			opt.storm = 1;
			break;
		case O_NOSTORM:
			opt.storm = 0;
			break;
		case O_SA:
			if (!strcmp(optarg, "on"))
				opt.sa = SA_ON;
			else if (!strcmp(optarg, "off"))
				opt.sa = SA_OFF;
			else if (!strcmp(optarg, "alternate"))
				opt.sa = SA_ALTERNATE;
			else
				bad_option(name, optarg);
			break;
		case O_SEED:
			if (!parse_u64(optarg, &opt.seed))
				bad_option(name, optarg);
			seeded = true;
			break;
		case O_INJECT:
			if (!strcmp(optarg, "hang"))
				opt.inject = INJ_HANG;
			else if (!strcmp(optarg, "leak"))
				opt.inject = INJ_LEAK;
			else if (!strcmp(optarg, "none"))
				opt.inject = INJ_NONE;
			else
				bad_option(name, optarg);
			break;
		case O_STATS:
			if (!strcmp(optarg, "start"))
				opt.stats = STATS_START;
			else if (!strcmp(optarg, "mid"))
				opt.stats = STATS_MID;
			else if (!strcmp(optarg, "off"))
				opt.stats = STATS_OFF;
			else
				bad_option(name, optarg);
			break;
		case O_VERBOSE:
			opt.verbose = true;
			break;
		case O_RFIRST:
			opt.defer_writers = true;
			break;
		case O_POLICY:
			if (!strcmp(optarg, "fifo"))
				opt.fifo = true;
			else if (strcmp(optarg, "default"))
				bad_option(name, optarg);
			break;
		case O_MAXWAIT:
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				bad_option(name, optarg);
			opt.max_wait_ms = (unsigned)v;
			break;
		case O_WPAUSE:
			if (!parse_u64(optarg, &v) || v > 1000000)
				bad_option(name, optarg);
			opt.write_pause_us = (unsigned)v;
			break;
		case O_XUNLOCK:
			if (!parse_double(optarg, &opt.xunlock_share) || opt.xunlock_share > 100)
				bad_option(name, optarg);
			break;
		case O_MANY:
			if (!parse_double(optarg, &opt.many_share) || opt.many_share > 100)
				bad_option(name, optarg);
			break;
		case O_GROW:
			if (!parse_double(optarg, &opt.grow_share) || opt.grow_share > 100)
				bad_option(name, optarg);
			break;
		case O_ASYNCSHARE:
			if (!parse_double(optarg, &opt.async_share) || opt.async_share > 100)
				bad_option(name, optarg);
			break;
		case O_SEGMENTS: {
			unsigned n, k;
			char end;

			if (sscanf(optarg, "%u:%u%c", &n, &k, &end) != 2 || n < 2 || n > 256 ||
			    (n & (n - 1)) || k > 63)
				bad_option(name, optarg);
			opt.seg_n = n;
			opt.seg_shift = k;
			break;
		}
		case O_EXPFAST:
			opt.expect_fast_reads = true;
			break;
		case O_EXPWORD:
			opt.expect_word_mode = true;
			break;
		case O_STATSREADER:
			opt.stats_reader = true;
			break;
		case O_BIND:
			opt.bind = true;
			break;
		case O_WIDE:
			if (!parse_double(optarg, &opt.wide_share) || opt.wide_share > 100)
				bad_option(name, optarg);
			break;
		case O_WIDEBURST:
			if (!parse_u64(optarg, &v) || !v || v > 1000000)
				bad_option(name, optarg);
			opt.wide_burst = (unsigned)v;
			break;
		case O_WIDEPHASE:
			if (!parse_u64(optarg, &v) || v > 1000000)
				bad_option(name, optarg);
			opt.wide_phase_ms = (unsigned)v;
			break;
		case O_HELP:
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rangelock-torture: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (!seeded)
		opt.seed = now_ns() ^ ((uint64_t)getpid() << 32);
	const char *scale_env = getenv("RANGELOCK_TORTURE_DURATION_SCALE");
	if (scale_env && *scale_env) {
		double scale;

		if (!parse_double(scale_env, &scale) || scale <= 0 || scale > 100) {
			fprintf(stderr, "rangelock-torture: bad value for "
				"RANGELOCK_TORTURE_DURATION_SCALE: '%s' (0 < F <= 100)\n",
				scale_env);
			exit(2);
		}
		opt.duration *= scale;
		duration_scaled = true;
	}
	if (!opt.watchdog_s)
		bad_option("watchdog", "0");
	if (opt.calls[C_INTR] && !opt.signal_us)
		bad_option("signal-us", "0");
	if (opt.calls[C_KILL] && !opt.cancel_ms)
		bad_option("cancel-ms", "0");
	if (opt.base > UINT64_MAX - (opt.pool - 1))
		bad_option("base", "(base + pool - 1 must fit in 64 bits)");
	if (opt.bind && (!type_is_range() || opt.expect_fast_reads ||
			 opt.base > (uint64_t)INT64_MAX - (opt.pool - 1))) {
		fprintf(stderr, "rangelock-torture: --bind needs a range type whose units "
			"fit off_t, without --expect-fast-reads (bound trees never "
			"read fast)\n");
		exit(2);
	}
	if (opt.seg_n && (!type_is_range() || opt.expect_fast_reads)) {
		fprintf(stderr, "rangelock-torture: --segments needs a range type, "
			"without --expect-fast-reads\n");
		exit(2);
	}
	if (wide_on()) {
		/* S stripes meet every segment (0: the whole key space). */
		unsigned log2n = 0;

		while (opt.seg_n >> (log2n + 1))
			log2n++;
		wide_units = !opt.seg_n ? opt.pool :
			     opt.seg_shift + log2n >= 64 ? 0 : (uint64_t)opt.seg_n << opt.seg_shift;
		/* Narrow requests: one stripe at most (one or two segments). */
		if (opt.seg_n && !opt.max_len)
			opt.max_len = opt.seg_shift >= 63 || (1ull << opt.seg_shift) > opt.pool ?
				      opt.pool : 1ull << opt.seg_shift;
	}
	if (opt.storm < 0)
		opt.storm = opt.calls[C_INTR];
	if (opt.storm && !opt.signal_us)
		bad_option("signal-us", "0");
}

/* ---- main ---------------------------------------------------------------------------- */

static void join_helper(const pthread_t *t, bool started)
{
	if (started)
		pthread_join(*t, NULL);
}

static void restrict_cpus(void)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(allowed_cpus), &allowed_cpus)) {
		perror("rangelock-torture: sched_getaffinity");
		exit(2);
	}
	CPU_ZERO(&set);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed_cpus))
			continue;
		if (opt.cpus && n >= opt.cpus)
			break;
		CPU_SET(c, &set);
		cpu_list[n++] = c;
	}
	if (opt.cpus && n < opt.cpus)
		fprintf(stderr, "rangelock-torture: only %d CPU(s) allowed, running on %d\n",
			n, n);
	if (opt.cpus && sched_setaffinity(0, sizeof(set), &set)) {
		perror("rangelock-torture: sched_setaffinity");
		exit(2);
	}
	allowed_cpus = set;
	nr_allowed_cpus = n;
}

/* The statistics must agree with what the threads saw. */
static void check_tree_stats(const struct range_lock_stats *st)
{
	uint64_t acquired = SUM(acquired), lib = st->read_acquired + st->write_acquired;

	if (st->held_now || st->waiting_now)
		error("tree statistics: held_now=%" PRIu64 " waiting_now=%" PRIu64
		      " after every thread ended (expected 0 and 0)", st->held_now,
		      st->waiting_now);
	if (st->gave_up_signal != SUM(gave_up_intr))
		error("tree statistics: gave_up_signal=%" PRIu64 " but the threads saw"
		      " %" PRIu64 " -EINTR", st->gave_up_signal, SUM(gave_up_intr));
	if (st->gave_up_timeout != SUM(gave_up_timeout))
		error("tree statistics: gave_up_timeout=%" PRIu64 " but the threads saw"
		      " %" PRIu64 " -ETIMEDOUT", st->gave_up_timeout, SUM(gave_up_timeout));
	if (st->trylock_failed != SUM(try_busy))
		error("tree statistics: trylock_failed=%" PRIu64 " but the threads saw"
		      " %" PRIu64 " busy trylocks", st->trylock_failed, SUM(try_busy));
	if (st->gave_up_cancel != SUM(cancelled_in_lock) + SUM(async_withdrawn))
		error("tree statistics: gave_up_cancel=%" PRIu64 " but %" PRIu64
		      " threads were cancelled in a killable call and %" PRIu64
		      " asynchronous requests withdrawn", st->gave_up_cancel,
		      SUM(cancelled_in_lock), SUM(async_withdrawn));
	/* A waiter cancelled just after its grant is counted as acquired by
	 * the library but never saw its lock call return. */
	if (lib < acquired || lib > acquired + st->gave_up_cancel + SUM(stats_slack))
		error("tree statistics: %" PRIu64 " acquisitions but the threads saw"
		      " %" PRIu64 " (and %" PRIu64 " cancellations)", lib, acquired,
		      st->gave_up_cancel);
}

/*
 * --stats=mid: statistics were enabled half-way, while the threads ran.
 * @before and @after are the acquisitions the threads had counted just
 * before and just after range_lock_tree_enable_stats().  The library counts
 * exactly the acquisitions that took effect after the enabling: each was
 * counted by its thread after @before was read, and all but those still
 * between their lock call and their count (at most one per thread) after
 * @after.  held_now and waiting_now started from the tree's contents and
 * must come back to 0.
 */
static void check_tree_stats_mid(const struct range_lock_stats *st,
				 uint64_t before, uint64_t after)
{
	uint64_t acquired = SUM(acquired), lib = st->read_acquired + st->write_acquired;
	uint64_t low = acquired - after > (uint64_t)nr_slots ?
		       acquired - after - (uint64_t)nr_slots : 0;

	if (st->held_now || st->waiting_now)
		error("tree statistics: held_now=%" PRIu64 " waiting_now=%" PRIu64
		      " after every thread ended (expected 0 and 0)", st->held_now,
		      st->waiting_now);
	if (lib < low || lib > acquired - before + st->gave_up_cancel + SUM(stats_slack))
		error("tree statistics enabled half-way: %" PRIu64 " acquisitions"
		      " counted, but the threads made %" PRIu64 " after the enabling"
		      " began and %" PRIu64 " after it ended (%d threads, %" PRIu64
		      " cancellations)", lib, acquired - before, acquired - after,
		      nr_slots, st->gave_up_cancel);
	if (st->gave_up_signal > SUM(gave_up_intr) ||
	    st->gave_up_timeout > SUM(gave_up_timeout) ||
	    st->trylock_failed > SUM(try_busy) ||
	    st->gave_up_cancel > SUM(cancelled_in_lock) + SUM(async_withdrawn))
		error("tree statistics enabled half-way count more give-ups or busy"
		      " trylocks than the threads saw in the whole run");
}

static void print_calls(void)
{
	printf("Calls: plain %" PRIu64 ", try %" PRIu64 " (busy %" PRIu64 "), intr %" PRIu64
	       " (EINTR %" PRIu64 "), kill %" PRIu64 " (cancelled in call %" PRIu64
	       ", at testcancel %" PRIu64 "), timed %" PRIu64 " (ETIMEDOUT %" PRIu64
	       ", EINVAL %" PRIu64 "); downgrades %" PRIu64 ", long holds %" PRIu64 "\n",
	       SUM(by_call[C_PLAIN]), SUM(by_call[C_TRY]), SUM(try_busy),
	       SUM(by_call[C_INTR]), SUM(gave_up_intr), SUM(by_call[C_KILL]),
	       SUM(cancelled_in_lock), SUM(cancelled_outside), SUM(by_call[C_TIMED]),
	       SUM(gave_up_timeout), SUM(gave_up_einval), SUM(downgrades),
	       SUM(long_holds));
	printf("Helpers: signals sent %" PRIu64 ", handled %" PRIu64 " (SA_RESTART"
	       " toggles %" PRIu64 "); cancels %" PRIu64 " (joined cancelled %" PRIu64
	       ", restarted %" PRIu64 "); shuffles %" PRIu64 "; stutters %" PRIu64 "\n",
	       GET(signals_sent), GET(signals_handled), GET(sa_toggles), GET(cancels_sent),
	       GET(cancels_joined), GET(restarts), GET(shuffles), GET(stutters));
	if (opt.many_share > 0 || opt.grow_share > 0)
		printf("Sets: %" PRIu64 " held (%" PRIu64 " of the deadlock pattern"
		       " tried), unlocked at once %" PRIu64 "; grow calls %" PRIu64
		       ", shrinks %" PRIu64 "\n", SUM(sets), SUM(patterns),
		       SUM(unlock_many), SUM(grows), SUM(shrinks));
	if (opt.async_share > 0)
		printf("Asynchronous: %" PRIu64 " submitted, %" PRIu64 " queued, %" PRIu64
		       " withdrawn, %" PRIu64 " cancels too late (granted)\n", SUM(asyncs),
		       SUM(async_queued), SUM(async_withdrawn), SUM(async_late_cancel));
	if (wide_on())
		printf("Wide: %" PRIu64 " requests tried, held: %s %" PRIu64 ", %s %" PRIu64
		       ", %s %" PRIu64 "; sets with a wide member held %" PRIu64 "; grows"
		       " to a wide range %" PRIu64 " (done %" PRIu64 ", shrunk back %"
		       PRIu64 ")\n", SUM(wide_tried), wide_kind_names[0], SUM(wide_held[0]),
		       wide_kind_names[1], SUM(wide_held[1]), wide_kind_names[2],
		       SUM(wide_held[2]), SUM(wide_sets), SUM(wide_grows), SUM(wide_grown),
		       SUM(wide_shrunk_back));
	if (wide_on())
		printf("Wide calls: plain %" PRIu64 ", try %" PRIu64 ", intr %" PRIu64
		       ", kill %" PRIu64 ", timed %" PRIu64 " (%" PRIu64 " gave up: busy,"
		       " EINTR, ETIMEDOUT, EINVAL); downgraded %" PRIu64 "; asynchronous %"
		       PRIu64 " (withdrawn %" PRIu64 ")\n", SUM(wide_calls[C_PLAIN]),
		       SUM(wide_calls[C_TRY]), SUM(wide_calls[C_INTR]),
		       SUM(wide_calls[C_KILL]), SUM(wide_calls[C_TIMED]), SUM(wide_gave_up),
		       SUM(wide_downgrades), SUM(wide_async), SUM(wide_async_withdrawn));
}

static void check_starvation(bool writer, double secs)
{
	struct mode_sum m = sum_mode(writer);
	uint64_t longest = 0;

	if (!m.threads)
		return;
	for (int i = 0; i < nr_slots; i++)
		if (slots[i].writer == writer && GET(slots[i].max_wait_ns) > longest)
			longest = GET(slots[i].max_wait_ns);
	printf("%s: longest wait for a range: %.3f ms\n", writer ? "Writes" : "Reads",
	       longest / 1e6);
	if (writer && opt.max_wait_ms && longest > opt.max_wait_ms * 1000000ull)
		error("STARVATION: a writer waited %.3f ms for its range (--max-wait-ms=%u)",
		      longest / 1e6, opt.max_wait_ms);
	/* Zero in a run of a second or more while another thread of the
	 * same kind got the lock at least 100 times: starved. */
	if (m.min == 0 && secs >= 1.0 && m.max >= 100) {
		for (int i = 0; i < nr_slots; i++)
			if (slots[i].writer == writer && !GET(slots[i].acquired))
				error("STARVATION: %s %d never acquired its lock in %.1f s",
				      slot_name(&slots[i]), slots[i].id, secs);
		printf("STARVATION: %s thread(s) never acquired the lock\n",
		       writer ? "writer" : "reader");
	} else if (m.max / 2 > m.min) {
		printf("STARVATION?: %s Max/Min %" PRIu64 "/%" PRIu64 " (per thread, %s)\n",
		       writer ? "Writes" : "Reads", m.max, m.min,
		       m.max / 16 > m.min ? "far apart" : "uneven");
	}
}

int main(int argc, char **argv)
{
	pthread_t wd, stut, shuf, storm, canc, xunl, wmon, srd, gmon;
	bool have_stut = false, have_shuf = false, have_storm = false, have_canc = false;
	bool have_xunl = false, have_wmon = false, have_srd = false, have_gmon = false;
	struct range_lock_stats st;
	uint64_t t0, failures, stats_before = 0, stats_after = 0;
	double secs;
	int ncpu, rc, destroyed = 0;

	parse_options(argc, argv);
	restrict_cpus();
	ncpu = nr_allowed_cpus > 0 ? nr_allowed_cpus : 1;
	if (opt.writers < 0)
		opt.writers = 2 * ncpu;
	if (opt.readers < 0)
		opt.readers = opt.type == T_MUTEX ? 0 : 2 * ncpu;
	if (!opt.readers && !opt.writers) {
		fprintf(stderr, "rangelock-torture: nothing to torture: --readers and"
				" --writers are both 0; run at least one reader or"
				" writer thread\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	shadow = calloc(opt.pool, sizeof(*shadow));
	nr_slots = opt.writers + opt.readers;
	slots = calloc((size_t)nr_slots, sizeof(*slots));
	/* --grow: one lane per slot in the last quarter of the pool, for the
	 * blocking grows (see multi_op()). */
	lanes_start = opt.pool - opt.pool / 4;
	lane_len = opt.grow_share > 0 && nr_slots ? (opt.pool / 4) / (uint64_t)nr_slots : 0;
	if (lane_len < 2)
		lane_len = 0;
	if (!shadow || !slots) {
		fprintf(stderr, "rangelock-torture: out of memory\n");
		return 2;
	}
	for (int i = 0; i < nr_slots; i++) {
		slots[i].writer = i < opt.writers;
		slots[i].id = slots[i].writer ? i : i - opt.writers;
		pthread_mutex_init(&slots[i].m, NULL);
		set_state(&slots[i], S_IDLE);
	}

	if (type_is_range()) {
		range_lock_tree_init(&tree);
		if (opt.fifo)
			range_lock_tree_set_fifo(&tree, 1);
		if (opt.defer_writers)
			range_lock_tree_defer_writers(&tree, 1);
		if (opt.seg_n) {
			rc = range_lock_tree_set_segments(&tree, opt.seg_n, opt.seg_shift);
			if (rc) {
				fprintf(stderr, "rangelock-torture: range_lock_tree_set_segments: "
					"%d\n", rc);
				return 2;
			}
		}
		if (opt.bind) {
			char path[] = "/tmp/rangelock-torture-XXXXXX";
			int fd = mkstemp(path);

			bind_probe_fd = fd < 0 ? -1 : open(path, O_RDWR | O_CLOEXEC);
			if (fd < 0 || bind_probe_fd < 0) {
				perror("rangelock-torture: --bind: a temporary file");
				return 2;
			}
			unlink(path);
			rc = range_lock_tree_set_file(&tree, fd);
			close(fd); /* (the tree keeps its own description) */
			if (rc) {
				fprintf(stderr, "rangelock-torture: range_lock_tree_set_file: "
					"%d\n", rc);
				return 2;
			}
		}
		rc = opt.stats == STATS_START ?
		     range_lock_tree_enable_stats(&tree, &tree_stats) : 0;
		if (rc) {
			fprintf(stderr, "rangelock-torture: range_lock_tree_enable_stats: %d\n", rc);
			return 2;
		}
	} else if (opt.type == T_RWLOCK) {
		pthread_rwlockattr_t a;

		/* Writer-preferring, so that writers are not starved. */
		pthread_rwlockattr_init(&a);
#ifdef __GLIBC__
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
		pthread_rwlock_init(&rwlock, &a);
		pthread_rwlockattr_destroy(&a);
	}

	printf("rangelock-torture (librangelock %s): type=%s writers=%d readers=%d"
	       " duration=%.3g s%s pool=%" PRIu64 " base=%" PRIu64 " max-len=%" PRIu64
	       " full-share=%g%% long-hold=%g%% long-us=%llu hold-us=%u calls=",
	       rangelock_version(), type_names[opt.type], opt.writers, opt.readers,
	       opt.duration, duration_scaled ? " (scaled)" : "",
	       opt.pool, opt.base, opt.max_len, opt.full_share,
	       opt.long_share, opt.long_us, opt.hold_us);
	for (int i = 0, n = 0; i < NR_CALLS; i++)
		if (opt.calls[i])
			printf("%s%s", n++ ? "," : "", call_names[i]);
	printf("%s stutter=%u ms shuffle=%u ms cpus=%d storm=%s sa-restart=%s"
	       " watchdog=%u s stats=%s seed=%" PRIu64 "%s\n",
	       opt.downgrade ? ",downgrade" : "", opt.stutter_ms, opt.shuffle_ms,
	       nr_allowed_cpus, opt.storm ? "on" : "off",
	       opt.sa == SA_ON ? "on" : opt.sa == SA_OFF ? "off" : "alternate",
	       opt.watchdog_s, stats_names[opt.stats], opt.seed,
	       opt.inject == INJ_HANG ? " inject=hang" : opt.inject == INJ_LEAK ? " inject=leak" : "");
	if (opt.seg_n)
		printf("segments: %u by stripes of 2^%u units (pool units %" PRIu64
		       ".. in segment %" PRIu64 "..)\n", opt.seg_n, opt.seg_shift, opt.base,
		       (opt.base >> opt.seg_shift) % opt.seg_n);
	if (wide_on())
		printf("wide: %g%% of operations, in bursts of %u, %s; a wide range is"
		       " %" PRIu64 " units or more (0: the whole key space), a narrow"
		       " one 1 to %" PRIu64 " (0: the kernel's random ranges)\n",
		       opt.wide_share, opt.wide_burst,
		       opt.wide_phase_ms ? "in wide phases only" : "all run",
		       wide_units, opt.max_len);
	if (opt.wide_phase_ms && wide_on())
		printf("wide phases: %u ms narrow (no wide or whole request), %u ms"
		       " wide, alternating\n", opt.wide_phase_ms, opt.wide_phase_ms);
	if (!type_is_range() && (opt.calls[C_INTR] || opt.calls[C_KILL]))
		printf("note: %s has no interruptible or killable calls: those are plain calls here\n",
		       type_names[opt.type]);
	if (opt.downgrade && !can_downgrade())
		printf("note: %s cannot downgrade: downgrade ignored\n", type_names[opt.type]);
	if (type_is_busted())
		printf("note: %s is broken on purpose: this run must end in FAILURE\n",
		       type_names[opt.type]);

	if (opt.storm)
		install_handler(opt.sa != SA_OFF);

	if ((rc = pthread_create(&wd, NULL, watchdog_thread, NULL))) {
		fprintf(stderr, "rangelock-torture: pthread_create: %s\n", strerror(rc));
		return 2;
	}
	t0 = now_ns();
	run_start_ns = t0;
	if (wide_on() && opt.seg_n)
		have_gmon = !pthread_create(&gmon, NULL, gate_monitor_thread, NULL);
	if (opt.xunlock_share > 0 && type_is_range() &&
	    (rc = pthread_create(&xunl, NULL, unlocker_thread, NULL))) {
		fprintf(stderr, "rangelock-torture: pthread_create: %s\n", strerror(rc));
		return 2;
	}
	have_xunl = opt.xunlock_share > 0 && type_is_range();
	if (opt.expect_word_mode && type_is_range())
		have_wmon = !pthread_create(&wmon, NULL, word_monitor_thread, NULL);
	if (opt.stats_reader && type_is_range())
		have_srd = !pthread_create(&srd, NULL, stats_reader_thread, NULL);
	for (int i = 0; i < nr_slots; i++) {
		if ((rc = start_worker(&slots[i]))) {
			error("pthread_create: %s", strerror(rc));
			atomic_store(&stop, true);
			break;
		}
	}
	if (opt.stutter_ms)
		have_stut = !pthread_create(&stut, NULL, stutter_thread, NULL);
	if (opt.shuffle_ms)
		have_shuf = !pthread_create(&shuf, NULL, shuffle_thread, NULL);
	if (opt.storm)
		have_storm = !pthread_create(&storm, NULL, storm_thread, NULL);
	if (opt.calls[C_KILL] && type_is_range())
		have_canc = !pthread_create(&canc, NULL, cancel_thread, NULL);

	if (opt.stats == STATS_MID && type_is_range() && !atomic_load(&stop)) {
		sleep_until(t0 + (uint64_t)(opt.duration * 0.5e9));
		stats_before = SUM(acquired);
		rc = range_lock_tree_enable_stats(&tree, &tree_stats);
		stats_after = SUM(acquired);
		if (rc)
			error("range_lock_tree_enable_stats half-way: %d", rc);
		else
			printf("Tree stats enabled half-way, after %" PRIu64
			       " acquisitions\n", stats_before);
	}
	if (!atomic_load(&stop))
		sleep_until(t0 + (uint64_t)(opt.duration * 1e9));

	/* Stop: helpers first (the canceller joins what it cancelled and
	 * restarts nothing more), then every worker. */
	SET(run_end_ns, now_ns());
	atomic_store(&stop, true);
	pthread_mutex_lock(&stutter_mutex);
	atomic_store(&paused, false);
	pthread_cond_broadcast(&stutter_cond);
	pthread_mutex_unlock(&stutter_mutex);
	join_helper(&canc, have_canc);
	join_helper(&storm, have_storm);
	join_helper(&shuf, have_shuf);
	join_helper(&stut, have_stut);
	for (int i = 0; i < nr_slots; i++) {
		struct slot *s = &slots[i];
		pthread_t h;
		bool running;
		void *ret = NULL;

		pthread_mutex_lock(&s->m);
		running = s->running;
		h = s->thread;
		s->running = false;
		pthread_mutex_unlock(&s->m);
		if (running) {
			pthread_join(h, &ret);
			if (ret == PTHREAD_CANCELED)
				error("%s %d ended cancelled after the canceller stopped",
				      slot_name(s), s->id);
		}
	}
	/* The unlocker last: a worker waits for it before it can end. */
	atomic_store(&xunlock_stop, true);
	join_helper(&xunl, have_xunl);
	atomic_store(&wm_stop, true);
	join_helper(&wmon, have_wmon);
	atomic_store(&sr_stop, true);
	join_helper(&srd, have_srd);
	atomic_store(&gm_stop, true);
	join_helper(&gmon, have_gmon);
	if (have_srd) {
		printf("Statistics read %" PRIu64 " times during the run\n", GET(sr_reads));
		if (opt.stats != STATS_OFF && GET(sr_reads) == 0)
			error("--stats-reader: no reading succeeded");
	}
	secs = (double)(now_ns() - t0) / 1e9;
	if (have_gmon)
		printf("Gate: %" PRIu64 " samples of the lock word, %" PRIu64 " in segments"
		       " mode, %" PRIu64 " in plain mode, %" PRIu64 " mode changes seen\n",
		       GET(gm.samples), GET(gm.seg), GET(gm.plain), GET(gm.switches));
	atomic_store(&watchdog_done, true);
	pthread_join(wd, NULL);

	/* Everything is joined: judge. */
	for (uint64_t u = 0; u < opt.pool; u++) {
		uint32_t w = atomic_load(&shadow[u].writers), r = atomic_load(&shadow[u].readers);

		if (w || r) {
			error("shadow array not empty at the end: unit %" PRIu64 " has %u"
			      " writer(s) and %u reader(s)", opt.base + u, w, r);
			break;
		}
	}
	print_mode(stdout, "", true);
	print_mode(stdout, "", false);
	if (opt.verbose) {
		for (int i = 0; i < nr_slots; i++) {
			struct slot *s = &slots[i];

			printf("  %s %d: %" PRIu64 " acquisitions, %" PRIu64 " lock calls,"
			       " %" PRIu64 " fails, %" PRIu64 " errors, %u restarts\n",
			       slot_name(s), s->id, GET(s->acquired), GET(s->progress),
			       GET(s->fails), GET(s->errors), s->generation);
		}
	}
	print_calls();
	if (type_is_range()) {
		printf("Fast reads: %" PRIu64 " of %" PRIu64 " read holds;"
		       " unlocked by another thread: %" PRIu64 "\n",
		       SUM(fast_reads), sum_mode(false).total, SUM(xunlocks));
		/* A machine too busy for 1000 read holds proves nothing. */
		if (opt.expect_fast_reads && !SUM(fast_reads) &&
		    sum_mode(false).total >= 1000)
			error("--expect-fast-reads: no read hold took the fast path");
		else if (opt.expect_fast_reads && !SUM(fast_reads))
			printf("--expect-fast-reads: not judged (fewer than 1000"
			       " read holds)\n");
		if (have_wmon)
			judge_word_mode();
		if (opt.stats == STATS_START && SUM(fast_reads))
			error("%" PRIu64 " fast read(s) on a tree with statistics on"
			      " (they must all go through the tree)", SUM(fast_reads));
	}
	if (type_is_range()) {
		bool stats_on = range_lock_tree_get_stats(&tree, &st) == 0;

		if (!stats_on)
			printf("Tree stats: off (--stats=%s: the fast path ran"
			       " unobserved)\n", stats_names[opt.stats]);
		else
			printf("Tree stats: read_acquired=%" PRIu64 " write_acquired=%" PRIu64
			       " contended=%" PRIu64 " wait_ns_total=%" PRIu64 " wait_ns_max=%" PRIu64
			       " gave_up_signal=%" PRIu64 " gave_up_timeout=%" PRIu64
			       " gave_up_cancel=%" PRIu64 " trylock_failed=%" PRIu64
			       " held_now=%" PRIu64 " waiting_now=%" PRIu64 " held_peak=%" PRIu64
			       " waiting_peak=%" PRIu64 "\n",
			       st.read_acquired, st.write_acquired, st.contended, st.wait_ns_total,
			       st.wait_ns_max, st.gave_up_signal, st.gave_up_timeout,
			       st.gave_up_cancel, st.trylock_failed, st.held_now, st.waiting_now,
			       st.held_peak, st.waiting_peak);
		/* On a segmented tree the storage receives the sums at each
		 * reading (the segments count in their own memory). */
		if (stats_on && opt.seg_n && memcmp(&st, &tree_stats, sizeof(st)))
			error("tree statistics: the storage given to "
			      "range_lock_tree_enable_stats() differs from what "
			      "range_lock_tree_get_stats() returned");
		if (stats_on && st.contended)
			printf("Tree wait: mean %.1f us, max %.1f us\n",
			       (double)st.wait_ns_total / (double)st.contended / 1e3,
			       (double)st.wait_ns_max / 1e3);
		if (!stats_on || opt.type == T_BUSTED_RANGE)
			;
		else if (opt.stats == STATS_MID)
			check_tree_stats_mid(&st, stats_before, stats_after);
		else
			check_tree_stats(&st);
		if (opt.bind) {
			/* Every hold gave back its OFD lock: another description
			 * of the file finds none. */
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
					    .l_start = 0, .l_len = 0 };

			if (fcntl(bind_probe_fd, F_OFD_GETLK, &fl))
				error("--bind: F_OFD_GETLK: %s", strerror(errno));
			else if (fl.l_type != F_UNLCK)
				error("--bind: an OFD lock is left on the file at the end: "
				      "%s [%lld, +%lld]", fl.l_type == F_RDLCK ? "read" : "write",
				      (long long)fl.l_start, (long long)fl.l_len);
		}
		destroyed = range_lock_tree_destroy(&tree);
		if (destroyed) {
			error("range_lock_tree_destroy returned %d (%s): requests left in"
			      " the tree", destroyed, strerror(-destroyed));
			if (atomic_load(&no_restart))
				printf("(tree not dumped: a request in it lives on the"
				       " stack of a dead thread)\n");
			else
				range_lock_tree_dump(&tree, stdout);
		}
	} else if (opt.type == T_RWLOCK) {
		if ((rc = pthread_rwlock_destroy(&rwlock)))
			error("pthread_rwlock_destroy: %s", strerror(rc));
	} else if (opt.type == T_MUTEX) {
		if ((rc = pthread_mutex_destroy(&mutex)))
			error("pthread_mutex_destroy: %s", strerror(rc));
	}
	check_starvation(true, secs);
	check_starvation(false, secs);
	/* --wide must have run: 100 wide requests tried and none held (or
	 * grown to) means the mix never tested them. */
	if (wide_on() && SUM(wide_tried) + SUM(wide_grows) >= 100 &&
	    !SUM(wide_held[0]) && !SUM(wide_held[1]) && !SUM(wide_held[2]) &&
	    !SUM(wide_grown))
		error("--wide: %" PRIu64 " wide requests tried, none held",
		      SUM(wide_tried) + SUM(wide_grows));

	failures = SUM(fails) + SUM(errors) + GET(global_errors);
	if (SUM(errors) || GET(global_errors))
		printf("Errors: %" PRIu64 " call contract / end-of-run check failure(s)"
		       " (details on stderr)\n", SUM(errors) + GET(global_errors));
	printf("Run: %.2f s\n", secs);
	fflush(stderr);
	printf("End of test: %s\n", failures ? "FAILURE" : "SUCCESS");
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
