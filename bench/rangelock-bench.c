/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: librangelock side by side with glibc's pthread_rwlock
 * (default and writer-preferring), pthread_mutex and, for the file scenario,
 * fcntl OFD byte-range locks.
 *
 * What it measures (see docs/benchmarks.md):
 *  - throughput: read-only, write-only and mixed workloads, each with every
 *    thread on the full range, random ranges from a pool of 4096 units (the
 *    seed's locktorture ranges) or disjoint per-thread ranges, with a
 *    calibrated busy loop inside and outside the critical section, at thread
 *    counts 1 .. 2x the cores;
 *  - the uncontended cost of one lock+unlock on one thread;
 *  - the cost of lock+unlock of a free range while N ranges are held
 *    (0, 1k, 10k, 100k), to show the O(log n) growth;
 *  - the seed's first user (Lustre): threads writing chunks of one file with
 *    pwrite, each write locked on its byte range, checked for torn chunks;
 *  - the library's own statistics for one representative scenario.
 *
 * Method: every measurement is repeated --reps times, and the repetitions
 * are interleaved across lock types (A B C D A B C D ...), so a change of
 * machine load hits every lock alike.  Reported: median, mean, standard
 * deviation, and the ratio to pthread_rwlock (default) in the same run:
 * ratio = median(lock) / median(pthread_rwlock) for throughput, and
 * median(pthread_rwlock) / median(lock) for costs, so > 1 always means
 * "faster than pthread_rwlock".
 *
 * --targets runs the scenarios of the performance issue (2 threads) and
 * prints whether each target ratio is met.  Nothing is hard-coded: every
 * number printed is measured in this run.
 *
 * Correctness checks ride along: writers increment a per-unit counter
 * without atomics inside the critical section, and the sum must equal the
 * number of write acquisitions; in the file scenario no chunk may hold two
 * patterns.  A failed check makes the exit status 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

/* glibc extras: its version, and the writer-preferring rwlock kind.  Other
 * C libraries (musl) build without them: the rwlock-wp column is skipped. */
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#define LIBC_NAME "glibc"
#define LIBC_VERSION() gnu_get_libc_version()
#define HAVE_RWLOCK_PREFER_WRITER 1
#else
#define LIBC_NAME "libc:"
#define LIBC_VERSION() "not glibc"
#define HAVE_RWLOCK_PREFER_WRITER 0
#endif

#define MAX_REPS    64
#define MAX_THREADS 256
#define CACHELINE   64

/* ---- lock types -------------------------------------------------------- */

enum lock_kind {
	LK_RANGE,   /* librangelock */
	LK_RW,      /* pthread_rwlock_t, default attributes (prefer readers) */
	LK_RWW,     /* pthread_rwlock_t, PREFER_WRITER_NONRECURSIVE_NP */
	LK_MUTEX,   /* pthread_mutex_t, default */
	LK_OFD,     /* fcntl F_OFD_SETLKW (file scenario only) */
	LK_NONE,    /* no lock at all (file scenario control: shows tearing) */
	LK_COUNT
};

static const char *const lk_name[LK_COUNT] = {
	"librangelock", "pthread_rwlock", "pthread_rwlock_wp",
	"pthread_mutex", "ofd_lock", "none",
};
/* Short names for the seed-shaped table ("rwsem-2thr", "range-2thr"). */
static const char *const lk_short[LK_COUNT] = {
	"range", "rwlock", "rwlock-wp", "mutex", "ofd", "nolock",
};

struct lockset {
	_Alignas(CACHELINE) struct range_lock_tree tree;
	_Alignas(CACHELINE) pthread_rwlock_t rw;
	_Alignas(CACHELINE) pthread_mutex_t mtx;
};

static struct lockset *lockset_new(enum lock_kind kind)
{
	struct lockset *ls = aligned_alloc(CACHELINE, sizeof(*ls));
	pthread_rwlockattr_t attr;

	if (!ls) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(ls, 0, sizeof(*ls));
	range_lock_tree_init(&ls->tree);
	pthread_rwlockattr_init(&attr);
	(void)kind;
#if HAVE_RWLOCK_PREFER_WRITER
	if (kind == LK_RWW)
		pthread_rwlockattr_setkind_np(&attr,
				PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(&ls->rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&ls->mtx, NULL);
	return ls;
}

static void lockset_free(struct lockset *ls)
{
	if (range_lock_tree_destroy(&ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: tree not empty at the end of a run\n");
		exit(2);
	}
	pthread_rwlock_destroy(&ls->rw);
	pthread_mutex_destroy(&ls->mtx);
	free(ls);
}

static inline void lk_lock(struct lockset *ls, enum lock_kind kind, bool write,
			   struct range_lock *req)
{
	switch (kind) {
	case LK_RANGE:
		if (write)
			range_write_lock(&ls->tree, req);
		else
			range_read_lock(&ls->tree, req);
		break;
	case LK_RW:
	case LK_RWW:
		if (write)
			pthread_rwlock_wrlock(&ls->rw);
		else
			pthread_rwlock_rdlock(&ls->rw);
		break;
	case LK_MUTEX:
		pthread_mutex_lock(&ls->mtx);
		break;
	default:
		break;
	}
}

static inline void lk_unlock(struct lockset *ls, enum lock_kind kind, bool write,
			     struct range_lock *req)
{
	switch (kind) {
	case LK_RANGE:
		if (write)
			range_write_unlock(&ls->tree, req);
		else
			range_read_unlock(&ls->tree, req);
		break;
	case LK_RW:
	case LK_RWW:
		pthread_rwlock_unlock(&ls->rw);
		break;
	case LK_MUTEX:
		pthread_mutex_unlock(&ls->mtx);
		break;
	default:
		break;
	}
}

/* ---- time, work, randomness ------------------------------------------- */

static double median_of(const double *v, int n);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The busy loop ("work"): spin until a time stamp counter has advanced by
 * the requested number of ticks.  On x86 that is the TSC (constant rate on
 * every CPU this runs on: see the "constant_tsc" flag), elsewhere
 * CLOCK_MONOTONIC.  Calibrated once against CLOCK_MONOTONIC, so "1000 ns of
 * work" is 1000 ns whatever the clock frequency of the core does.  Not
 * inlined: every caller runs the same code.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void)
{
	return __rdtsc();
}
#define WORK_CLOCK "TSC"
#else
static inline uint64_t ticks(void)
{
	return now_ns();
}
#define WORK_CLOCK "CLOCK_MONOTONIC"
#endif

static double ticks_per_ns = 1.0;

static __attribute__((noinline)) void work(uint64_t nticks)
{
	uint64_t end = ticks() + nticks;

	while (ticks() < end)
		__asm__ __volatile__("" ::: "memory");
}

static void calibrate_work(void)
{
	double r[3];

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = now_ns(), k0 = ticks();
		sleep_ns(20000000);
		uint64_t t1 = now_ns(), k1 = ticks();
		r[i] = (double)(k1 - k0) / (double)(t1 - t0);
	}
	ticks_per_ns = median_of(r, 3);
	if (!(ticks_per_ns > 0))
		ticks_per_ns = 1.0;
}

static uint64_t ns_to_ticks(uint64_t ns)
{
	return (uint64_t)((double)ns * ticks_per_ns + 0.5);
}

/*
 * Interference from the rest of the machine: the time this thread spent
 * runnable but waiting for a CPU (second field of schedstat, ns).  Reported
 * beside the results as a share of the thread's time in the run, so a noisy
 * repetition shows as such.  0 where schedstat is missing.
 */
static uint64_t runq_wait_ns(void)
{
	unsigned long long run, wait;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? (uint64_t)wait : 0;
}

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- options ----------------------------------------------------------- */

enum workload { WL_READ, WL_WRITE, WL_MIXED, WL_COUNT };
static const char *const wl_name[WL_COUNT] = { "read", "write", "mixed" };
static const char *const wl_title[WL_COUNT] = { "read-only", "write-only", "mixed" };

enum ranges { RG_FULL, RG_RANDOM, RG_DISJOINT, RG_COUNT };
static const char *const rg_name[RG_COUNT] = { "full", "random", "disjoint" };
static const char *const rg_title[RG_COUNT] = {
	"full range", "random ranges", "disjoint ranges"
};

static struct options {
	bool quick, targets, progress;
	int reps;
	uint64_t duration_ms;
	uint64_t work_in_ns, work_out_ns;
	int threads[MAX_THREADS];
	int nthreads_list;
	uint64_t pool;           /* units 0 .. pool (the torture's [0, 4096]) */
	uint64_t uncont_iters;
	uint64_t held_iters;
	uint64_t held_max;
	bool locks[LK_COUNT];
	bool wl[WL_COUNT], rg[RG_COUNT];
	bool do_throughput, do_uncont, do_held, do_file, do_stats;
	uint64_t file_chunk, file_chunks, file_pieces;
	const char *file_dir;
	const char *csv_path, *json_path; /* "-" is stdout */
	bool csv, json;
} opt;

static int ncpus;

/* ---- progress ---------------------------------------------------------- */

static long progress_total, progress_done;
static bool progress_tty;
static uint64_t progress_t0, progress_last;

static void progress(const char *fmt, ...)
{
	char what[160];
	va_list ap;
	uint64_t t = now_ns();
	double pct, elapsed, eta;

	progress_done++;
	if (!opt.progress)
		return;
	if (!progress_tty && t - progress_last < 2000000000ull &&
	    progress_done != progress_total)
		return;
	progress_last = t;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	pct = progress_total ? 100.0 * (double)progress_done / (double)progress_total : 0;
	elapsed = (double)(t - progress_t0) / 1e9;
	eta = progress_done ? elapsed * (double)(progress_total - progress_done) /
				      (double)progress_done : 0;
	fprintf(stderr, "%s[%3.0f%% %4.0fs eta %4.0fs] %-70.70s%s",
		progress_tty ? "\r" : "", pct, elapsed, eta, what,
		progress_tty ? "" : "\n");
	fflush(stderr);
}

static void progress_end(void)
{
	if (opt.progress && progress_tty)
		fprintf(stderr, "\r%*s\r", 110, "");
}

/* ---- statistics of samples --------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(const double *v, int n)
{
	double s[2 * MAX_REPS];

	if (n <= 0)
		return NAN;
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Index of the (lower) median element of @v. */
static int median_index(const double *v, int n)
{
	int best = 0;

	for (int i = 0; i < n; i++) {
		int below = 0, above = 0;

		for (int j = 0; j < n; j++) {
			if (v[j] < v[i])
				below++;
			else if (v[j] > v[i])
				above++;
		}
		if (below <= (n - 1) / 2 && above <= n / 2) {
			best = i;
			break;
		}
	}
	return best;
}

static double mean_of(const double *v, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += v[i];
	return n ? sum / n : NAN;
}

static double stddev_of(const double *v, int n)
{
	double m = mean_of(v, n), ss = 0;

	if (n < 2)
		return 0;
	for (int i = 0; i < n; i++)
		ss += (v[i] - m) * (v[i] - m);
	return sqrt(ss / (n - 1));
}

static double min_of(const double *v, int n)
{
	double m = INFINITY;

	for (int i = 0; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static double max_of(const double *v, int n)
{
	double m = -INFINITY;

	for (int i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* ---- result records ---------------------------------------------------- */

enum section { SEC_THROUGHPUT, SEC_UNCONT, SEC_HELD, SEC_FILE, SEC_TARGET, SEC_COUNT };
static const char *const sec_name[SEC_COUNT] = {
	"throughput", "uncontended", "held", "file", "target"
};

struct rec {
	enum section sec;
	char tag[24];        /* targets: which scenario */
	int wl, rg;          /* workload, ranges (-1: n/a) */
	int threads;
	enum lock_kind lock;
	uint64_t held;       /* SEC_HELD: ranges held; SEC_FILE: chunk bytes */
	bool held_random;    /* SEC_HELD: random free unit (else a fixed one) */
	uint64_t work_in, work_out;
	const char *metric, *unit;
	bool higher_better;
	int n;
	double v[MAX_REPS];          /* the metric, one sample per repetition */
	double rd[MAX_REPS], wr[MAX_REPS];    /* reads/s, writes/s */
	double frd[MAX_REPS], fwr[MAX_REPS];  /* min/max per-thread count, per kind */
	uint64_t rmin[MAX_REPS], rmax[MAX_REPS], wmin[MAX_REPS], wmax[MAX_REPS];
	double extra[MAX_REPS];      /* SEC_FILE: torn chunks */
	double rq[MAX_REPS];         /* run-queue wait, % of thread time */
	int nr, nw;                  /* reader / writer threads */
	double ratio;                /* vs pthread_rwlock, > 1 is faster */
	double pr_min, pr_max;       /* per-repetition paired ratios */
	bool has_ratio;
};

static struct rec *recs;
static int nrecs, caprecs;
static int check_failures;
static double load_before[3], load_after[3];

static struct rec *rec_new(enum section sec, int wl, int rg, int threads,
			   enum lock_kind lock, const char *metric,
			   const char *unit, bool higher_better)
{
	struct rec *r;

	if (nrecs == caprecs) {
		caprecs = caprecs ? caprecs * 2 : 256;
		recs = realloc(recs, (size_t)caprecs * sizeof(*recs));
		if (!recs) {
			perror("realloc");
			exit(2);
		}
	}
	r = &recs[nrecs++];
	memset(r, 0, sizeof(*r));
	r->sec = sec;
	r->wl = wl;
	r->rg = rg;
	r->threads = threads;
	r->lock = lock;
	r->metric = metric;
	r->unit = unit;
	r->higher_better = higher_better;
	r->work_in = opt.work_in_ns;
	r->work_out = opt.work_out_ns;
	return r;
}

static double rec_median(const struct rec *r) { return median_of(r->v, r->n); }

/* Records are addressed by index: rec_new() may move the array. */
static bool same_point(const struct rec *a, const struct rec *b)
{
	return a->sec == b->sec && a->wl == b->wl && a->rg == b->rg &&
	       a->threads == b->threads && a->held == b->held &&
	       a->held_random == b->held_random && a->work_in == b->work_in &&
	       a->work_out == b->work_out && !strcmp(a->tag, b->tag) &&
	       !strcmp(a->metric, b->metric);
}

static void compute_ratios(void)
{
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i], *base = NULL;

		r->has_ratio = false;
		for (int j = 0; j < nrecs; j++)
			if (recs[j].lock == LK_RW && same_point(&recs[j], r)) {
				base = &recs[j];
				break;
			}
		if (!base || !r->n || !base->n)
			continue;
		double m = rec_median(r), b = rec_median(base);
		r->ratio = r->higher_better ? m / b : b / m;
		r->has_ratio = true;
		double pr[MAX_REPS];
		int k = r->n < base->n ? r->n : base->n;
		for (int j = 0; j < k; j++)
			pr[j] = r->higher_better ? r->v[j] / base->v[j]
						 : base->v[j] / r->v[j];
		r->pr_min = min_of(pr, k);
		r->pr_max = max_of(pr, k);
	}
}

/* ---- the throughput workload ------------------------------------------- */

enum role { ROLE_READ, ROLE_WRITE, ROLE_ALTERNATE };

struct slot {
	_Alignas(CACHELINE) volatile uint64_t v;
};

struct run;

struct worker {
	_Alignas(CACHELINE) pthread_t th;
	struct run *run;
	int id;
	enum role role;
	uint64_t rng;
	uint64_t dstart, dlast;   /* disjoint range */
	uint64_t nread, nwrite;
	uint64_t sink;
	uint64_t runq_ns;
};

struct run {
	enum lock_kind kind;
	enum ranges rg;
	int nthreads;
	uint64_t in_ticks, out_ticks;
	uint64_t pool;
	struct lockset *ls;
	struct slot *slots;       /* pool + 1 units */
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	const enum lock_kind kind = r->kind;
	const uint64_t in = r->in_ticks, out = r->out_ticks;
	struct range_lock req;
	uint64_t start = 0, last = RANGE_LOCK_FULL, sink = 0;
	uint64_t nread = 0, nwrite = 0;
	bool write = w->role == ROLE_WRITE, alt = w->role == ROLE_ALTERNATE;

	if (r->rg == RG_DISJOINT) {
		start = w->dstart;
		last = w->dlast;
	}
	if (r->rg == RG_FULL)
		range_lock_init_full(&req);
	else
		range_lock_init(&req, start, last);

	pthread_barrier_wait(&r->bar);
	uint64_t rq0 = runq_wait_ns();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		if (alt)
			write = !write;
		if (r->rg == RG_RANDOM) {
			/* The seed's locktorture: last in [0, pool], start in
			 * [0, last]. */
			last = (xorshift64(&w->rng) >> 4) % (r->pool + 1);
			start = (xorshift64(&w->rng) >> 4) % (last + 1);
			if (kind == LK_RANGE)
				range_lock_init(&req, start, last);
		}
		lk_lock(r->ls, kind, write, &req);
		if (write)
			r->slots[start].v++;   /* checked: plain increment */
		else
			sink += r->slots[start].v;
		if (in)
			work(in);
		lk_unlock(r->ls, kind, write, &req);
		if (write)
			nwrite++;
		else
			nread++;
		if (out)
			work(out);
	}
	w->runq_ns = runq_wait_ns() - rq0;
	w->nread = nread;
	w->nwrite = nwrite;
	w->sink = sink;
	return NULL;
}

struct run_result {
	double secs;
	uint64_t reads, writes;
	uint64_t rmin, rmax, wmin, wmax;
	int nr, nw;
	double runq_pct;
	bool exclusion_ok;
};

static void run_workload(enum lock_kind kind, enum workload wl, enum ranges rg,
			 int nthreads, uint64_t work_in, uint64_t work_out,
			 uint64_t duration_ms, struct lockset *ls_given,
			 struct run_result *res)
{
	struct run *r = aligned_alloc(CACHELINE, sizeof(*r));
	struct worker *w = aligned_alloc(CACHELINE, sizeof(*w) * (size_t)nthreads);
	uint64_t t0, t1, sum = 0, runq = 0;

	if (!r || !w) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->rg = rg;
	r->nthreads = nthreads;
	r->in_ticks = ns_to_ticks(work_in);
	r->out_ticks = ns_to_ticks(work_out);
	r->pool = opt.pool;
	r->ls = ls_given ? ls_given : lockset_new(kind);
	r->slots = aligned_alloc(CACHELINE, sizeof(struct slot) * (size_t)(opt.pool + 1));
	if (!r->slots) {
		perror("aligned_alloc");
		exit(2);
	}
	memset((void *)r->slots, 0, sizeof(struct slot) * (size_t)(opt.pool + 1));
	atomic_init(&r->stop, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads + 1);

	uint64_t unit = (opt.pool + 1) / (uint64_t)nthreads;
	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		w[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		if (wl == WL_READ)
			w[i].role = ROLE_READ;
		else if (wl == WL_WRITE)
			w[i].role = ROLE_WRITE;
		else if (nthreads == 1)
			w[i].role = ROLE_ALTERNATE;
		else
			w[i].role = (i % 2) ? ROLE_WRITE : ROLE_READ;
		w[i].dstart = (uint64_t)i * unit;
		w[i].dlast = (uint64_t)i * unit + unit - 1;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	t0 = now_ns();
	sleep_ns(duration_ms * 1000000ull);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	t1 = now_ns();

	memset(res, 0, sizeof(*res));
	res->rmin = res->wmin = UINT64_MAX;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		res->reads += w[i].nread;
		runq += w[i].runq_ns;
		res->writes += w[i].nwrite;
		if (w[i].role != ROLE_WRITE) {
			res->nr++;
			if (w[i].nread < res->rmin) res->rmin = w[i].nread;
			if (w[i].nread > res->rmax) res->rmax = w[i].nread;
		}
		if (w[i].role != ROLE_READ) {
			res->nw++;
			if (w[i].nwrite < res->wmin) res->wmin = w[i].nwrite;
			if (w[i].nwrite > res->wmax) res->wmax = w[i].nwrite;
		}
	}
	if (!res->nr) res->rmin = 0;
	if (!res->nw) res->wmin = 0;
	res->secs = (double)(t1 - t0) / 1e9;
	res->runq_pct = 100.0 * (double)runq / ((double)(t1 - t0) * nthreads);
	for (uint64_t u = 0; u <= opt.pool; u++)
		sum += r->slots[u].v;
	res->exclusion_ok = sum == res->writes;
	if (!res->exclusion_ok) {
		fprintf(stderr, "\nrangelock-bench: EXCLUSION BROKEN: %s %s/%s %d threads: "
			"%" PRIu64 " writes counted, %" PRIu64 " seen\n", lk_name[kind],
			wl_name[wl], rg_name[rg], nthreads, res->writes, sum);
		check_failures++;
	}
	pthread_barrier_destroy(&r->bar);
	free((void *)r->slots);
	if (!ls_given)
		lockset_free(r->ls);
	free(w);
	free(r);
}

static void add_sample(struct rec *rc, const struct run_result *res)
{
	int k = rc->n++;

	rc->rd[k] = (double)res->reads / res->secs;
	rc->wr[k] = (double)res->writes / res->secs;
	rc->v[k] = rc->rd[k] + rc->wr[k];
	rc->rq[k] = res->runq_pct;
	rc->nr = res->nr;
	rc->nw = res->nw;
	rc->rmin[k] = res->rmin;
	rc->rmax[k] = res->rmax;
	rc->wmin[k] = res->wmin;
	rc->wmax[k] = res->wmax;
	rc->frd[k] = res->nr > 1 ? (res->rmax ? (double)res->rmin / (double)res->rmax : 0) : 1;
	rc->fwr[k] = res->nw > 1 ? (res->wmax ? (double)res->wmin / (double)res->wmax : 0) : 1;
}

/* The lock kinds of the throughput sections, in table order. */
static int throughput_kinds(enum lock_kind *k)
{
	int n = 0;
	const enum lock_kind order[] = { LK_RW, LK_RWW, LK_MUTEX, LK_RANGE };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (opt.locks[order[i]] || order[i] == LK_RW)
			k[n++] = order[i];
	return n;
}

/* One point (workload, ranges, threads, work) for every lock kind,
 * repetitions interleaved.  Returns the index of the first record. */
static int measure_point(enum section sec, const char *tag, const enum lock_kind *kinds,
			 int nk, enum workload wl, enum ranges rg, int threads,
			 uint64_t work_in, uint64_t work_out)
{
	int first = nrecs;

	for (int k = 0; k < nk; k++) {
		struct rec *rc = rec_new(sec, wl, rg, threads, kinds[k], "ops_per_s",
					 "ops/s", true);
		rc->work_in = work_in;
		rc->work_out = work_out;
		if (tag)
			snprintf(rc->tag, sizeof(rc->tag), "%s", tag);
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int k = 0; k < nk; k++) {
			struct run_result res;

			progress("%s %s/%s %dthr in=%" PRIu64 " out=%" PRIu64 " %s rep %d/%d",
				 tag ? tag : "throughput", wl_name[wl], rg_name[rg],
				 threads, work_in, work_out, lk_name[kinds[k]], rep + 1,
				 opt.reps);
			run_workload(kinds[k], wl, rg, threads, work_in, work_out,
				     opt.duration_ms, NULL, &res);
			add_sample(&recs[first + k], &res);
		}
	return first;
}

/* ---- uncontended cost -------------------------------------------------- */

static double uncontended_ns(enum lock_kind kind, bool write, uint64_t iters)
{
	struct lockset *ls = lockset_new(kind);
	struct range_lock req;
	uint64_t t0, t1;

	range_lock_init_full(&req);
	/* warm up */
	for (uint64_t i = 0; i < iters / 10 + 1; i++) {
		lk_lock(ls, kind, write, &req);
		lk_unlock(ls, kind, write, &req);
	}
	t0 = now_ns();
	switch (kind) {
	case LK_RANGE:
		if (write)
			for (uint64_t i = 0; i < iters; i++) {
				range_write_lock(&ls->tree, &req);
				range_write_unlock(&ls->tree, &req);
			}
		else
			for (uint64_t i = 0; i < iters; i++) {
				range_read_lock(&ls->tree, &req);
				range_read_unlock(&ls->tree, &req);
			}
		break;
	case LK_RW:
	case LK_RWW:
		if (write)
			for (uint64_t i = 0; i < iters; i++) {
				pthread_rwlock_wrlock(&ls->rw);
				pthread_rwlock_unlock(&ls->rw);
			}
		else
			for (uint64_t i = 0; i < iters; i++) {
				pthread_rwlock_rdlock(&ls->rw);
				pthread_rwlock_unlock(&ls->rw);
			}
		break;
	case LK_MUTEX:
		for (uint64_t i = 0; i < iters; i++) {
			pthread_mutex_lock(&ls->mtx);
			pthread_mutex_unlock(&ls->mtx);
		}
		break;
	default:
		break;
	}
	t1 = now_ns();
	lockset_free(ls);
	return (double)(t1 - t0) / (double)iters;
}

/* Returns the index of the first record; kinds x {read, write}. */
static int measure_uncontended(const enum lock_kind *kinds, int nk, const char *tag)
{
	int first = nrecs;

	for (int m = 0; m < 2; m++)
		for (int k = 0; k < nk; k++) {
			struct rec *rc = rec_new(SEC_UNCONT, m ? WL_WRITE : WL_READ, RG_FULL,
						 1, kinds[k], "ns_per_op", "ns", false);
			rc->work_in = rc->work_out = 0;
			if (tag)
				snprintf(rc->tag, sizeof(rc->tag), "%s", tag);
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int m = 0; m < 2; m++)
			for (int k = 0; k < nk; k++) {
				struct rec *rc = &recs[first + m * nk + k];

				progress("uncontended %s %s rep %d/%d", m ? "write" : "read",
					 lk_name[kinds[k]], rep + 1, opt.reps);
				uint64_t q0 = runq_wait_ns(), t0 = now_ns();
				rc->v[rc->n] = uncontended_ns(kinds[k], m, opt.uncont_iters);
				rc->rq[rc->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
						  (double)(now_ns() - t0);
			}
	return first;
}

/* ---- cost with N ranges held ------------------------------------------- */

struct held_tree {
	uint64_t n;
	struct range_lock_tree *tree;
	struct range_lock *reqs;
};

static void held_build(struct held_tree *h, uint64_t n)
{
	h->n = n;
	h->tree = aligned_alloc(CACHELINE, CACHELINE);
	h->reqs = n ? aligned_alloc(CACHELINE, sizeof(struct range_lock) * (size_t)n) : NULL;
	if (!h->tree || (n && !h->reqs)) {
		perror("aligned_alloc");
		exit(2);
	}
	range_lock_tree_init(h->tree);
	/* Held ranges on the even units 0, 2, 4, ...; the odd units are
	 * free and intersect none of them. */
	for (uint64_t i = 0; i < n; i++) {
		range_lock_init(&h->reqs[i], 2 * i, 2 * i);
		if (!range_write_trylock(h->tree, &h->reqs[i])) {
			fprintf(stderr, "rangelock-bench: trylock of a free unit failed\n");
			exit(2);
		}
	}
}

static void held_free(struct held_tree *h)
{
	for (uint64_t i = 0; i < h->n; i++)
		range_write_unlock(h->tree, &h->reqs[i]);
	if (range_lock_tree_destroy(h->tree)) {
		fprintf(stderr, "rangelock-bench: held tree not empty\n");
		exit(2);
	}
	free(h->reqs);
	free(h->tree);
}

/* ns per lock+unlock of one free unit, either a random odd unit among the
 * held ones (cold paths, the realistic case) or always the same one in the
 * middle (hot path: pure O(log n) comparisons). */
static double held_cost(struct held_tree *h, bool random_unit, uint64_t iters)
{
	struct range_lock req;
	uint64_t rng = 0x2545F4914F6CDD1Dull ^ now_ns(), t0, t1, u;

	if (!rng)
		rng = 1;
	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		if (random_unit)
			u = 2 * ((xorshift64(&rng) >> 4) % (h->n + 1)) + 1;
		else
			u = 2 * (h->n / 2) + 1;
		range_lock_init(&req, u, u);
		range_write_lock(h->tree, &req);
		range_write_unlock(h->tree, &req);
	}
	t1 = now_ns();
	return (double)(t1 - t0) / (double)iters;
}

static const uint64_t held_counts[] = { 0, 1000, 10000, 100000 };
#define NHELD (sizeof(held_counts) / sizeof(held_counts[0]))

/* Returns the index of the first record: NHELD x {random, fixed}. */
static int measure_held(const char *tag)
{
	struct held_tree h[NHELD];
	int first = nrecs, nh = 0;

	for (size_t i = 0; i < NHELD; i++) {
		if (held_counts[i] > opt.held_max)
			break;
		held_build(&h[nh++], held_counts[i]);
	}
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < nh; i++) {
			struct rec *rc = rec_new(SEC_HELD, WL_WRITE, RG_DISJOINT, 1, LK_RANGE,
						 "ns_per_op", "ns", false);
			rc->held = h[i].n;
			rc->held_random = m == 0;
			rc->work_in = rc->work_out = 0;
			if (tag)
				snprintf(rc->tag, sizeof(rc->tag), "%s", tag);
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int m = 0; m < 2; m++)
			for (int i = 0; i < nh; i++) {
				struct rec *rc = &recs[first + m * nh + i];

				progress("held %" PRIu64 " ranges, %s free unit, rep %d/%d",
					 h[i].n, m ? "fixed" : "random", rep + 1, opt.reps);
				uint64_t q0 = runq_wait_ns(), t0 = now_ns();
				rc->v[rc->n] = held_cost(&h[i], m == 0, opt.held_iters);
				rc->rq[rc->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
						  (double)(now_ns() - t0);
			}
	for (int i = 0; i < nh; i++)
		held_free(&h[i]);
	return first;
}

/* ---- the file scenario (Lustre) ---------------------------------------- */

struct fworker {
	_Alignas(CACHELINE) pthread_t th;
	struct frun *run;
	int id, fd;
	uint64_t rng;
	uint64_t writes;
	uint64_t runq_ns;
	uint64_t *buf;
};

struct frun {
	enum lock_kind kind;
	const char *path;
	struct lockset *ls;
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

static void ofd_lock(int fd, short type, uint64_t off, uint64_t len)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)off;
	fl.l_len = (off_t)len;
	while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) < 0) {
		if (errno == EINTR)
			continue;
		perror("fcntl(F_OFD_SETLKW)");
		exit(2);
	}
}

static void *fworker_main(void *arg)
{
	struct fworker *w = arg;
	struct frun *r = w->run;
	const uint64_t chunk = opt.file_chunk, piece = chunk / opt.file_pieces;
	const size_t words = (size_t)(chunk / sizeof(uint64_t));
	struct range_lock req;
	uint64_t seq = 0, writes = 0;

	pthread_barrier_wait(&r->bar);
	uint64_t rq0 = runq_wait_ns();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t c = (xorshift64(&w->rng) >> 4) % opt.file_chunks;
		uint64_t off = c * chunk;
		uint64_t pattern = ((uint64_t)(w->id + 1) << 48) | ++seq;

		for (size_t i = 0; i < words; i++)
			w->buf[i] = pattern;
		switch (r->kind) {
		case LK_RANGE:
			range_lock_init(&req, off, off + chunk - 1);
			range_write_lock(&r->ls->tree, &req);
			break;
		case LK_RW:
			pthread_rwlock_wrlock(&r->ls->rw);
			break;
		case LK_MUTEX:
			pthread_mutex_lock(&r->ls->mtx);
			break;
		case LK_OFD:
			ofd_lock(w->fd, F_WRLCK, off, chunk);
			break;
		default:
			break;
		}
		/* The chunk in several pwrite calls: without a lock two writers
		 * of one chunk interleave and leave it torn. */
		for (uint64_t p = 0; p < opt.file_pieces; p++) {
			const char *src = (const char *)w->buf + p * piece;
			if (pwrite(w->fd, src, (size_t)piece, (off_t)(off + p * piece)) !=
			    (ssize_t)piece) {
				perror("pwrite");
				exit(2);
			}
		}
		switch (r->kind) {
		case LK_RANGE:
			range_write_unlock(&r->ls->tree, &req);
			break;
		case LK_RW:
			pthread_rwlock_unlock(&r->ls->rw);
			break;
		case LK_MUTEX:
			pthread_mutex_unlock(&r->ls->mtx);
			break;
		case LK_OFD:
			ofd_lock(w->fd, F_UNLCK, off, chunk);
			break;
		default:
			break;
		}
		writes++;
	}
	w->runq_ns = runq_wait_ns() - rq0;
	w->writes = writes;
	return NULL;
}

/* Returns the number of torn chunks; *secs, *writes out. */
static uint64_t run_file(enum lock_kind kind, int nthreads, double *writes_per_s,
			 double *runq_pct)
{
	char path[4096];
	struct frun *r = aligned_alloc(CACHELINE, sizeof(*r));
	struct fworker *w = aligned_alloc(CACHELINE, sizeof(*w) * (size_t)nthreads);
	const uint64_t size = opt.file_chunk * opt.file_chunks;
	uint64_t t0, t1, total = 0, torn = 0, runq = 0;
	uint64_t *chunkbuf;
	int fd;

	if (!r || !w) {
		perror("aligned_alloc");
		exit(2);
	}
	snprintf(path, sizeof(path), "%s/rangelock-bench.XXXXXX", opt.file_dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "rangelock-bench: mkstemp in %s: %s\n", opt.file_dir,
			strerror(errno));
		exit(2);
	}
	if (ftruncate(fd, (off_t)size)) {
		perror("ftruncate");
		exit(2);
	}
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->path = path;
	r->ls = lockset_new(kind);
	atomic_init(&r->stop, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		w[i].rng = (0x9E3779B97F4A7C15ull * (uint64_t)(i + 7)) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		/* One open file description per thread: OFD locks belong to it,
		 * so only separate descriptions exclude each other. */
		w[i].fd = open(path, O_RDWR);
		w[i].buf = aligned_alloc(4096, (size_t)opt.file_chunk);
		if (w[i].fd < 0 || !w[i].buf) {
			perror("open");
			exit(2);
		}
		if (pthread_create(&w[i].th, NULL, fworker_main, &w[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	t0 = now_ns();
	sleep_ns(opt.duration_ms * 1000000ull);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	t1 = now_ns();
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].writes;
		runq += w[i].runq_ns;
		close(w[i].fd);
		free(w[i].buf);
	}
	*writes_per_s = (double)total / ((double)(t1 - t0) / 1e9);
	*runq_pct = 100.0 * (double)runq / ((double)(t1 - t0) * nthreads);

	/* Every chunk must hold one pattern (or still be zero). */
	chunkbuf = aligned_alloc(4096, (size_t)opt.file_chunk);
	if (!chunkbuf) {
		perror("aligned_alloc");
		exit(2);
	}
	for (uint64_t c = 0; c < opt.file_chunks; c++) {
		if (pread(fd, chunkbuf, (size_t)opt.file_chunk,
			  (off_t)(c * opt.file_chunk)) != (ssize_t)opt.file_chunk) {
			perror("pread");
			exit(2);
		}
		for (size_t i = 1; i < opt.file_chunk / sizeof(uint64_t); i++)
			if (chunkbuf[i] != chunkbuf[0]) {
				torn++;
				break;
			}
	}
	free(chunkbuf);
	close(fd);
	unlink(path);
	pthread_barrier_destroy(&r->bar);
	lockset_free(r->ls);
	free(w);
	free(r);
	if (torn && kind != LK_NONE) {
		fprintf(stderr, "\nrangelock-bench: TORN WRITE: %s, %d threads: %" PRIu64
			" torn chunk(s)\n", lk_name[kind], nthreads, torn);
		check_failures++;
	}
	return torn;
}

static void measure_file(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = 0;
	const enum lock_kind order[] = { LK_RW, LK_MUTEX, LK_OFD, LK_RANGE, LK_NONE };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (opt.locks[order[i]] || order[i] == LK_RW)
			kinds[nk++] = order[i];
	for (int t = 0; t < opt.nthreads_list; t++) {
		int threads = opt.threads[t], first = nrecs;

		for (int k = 0; k < nk; k++) {
			struct rec *rc = rec_new(SEC_FILE, WL_WRITE, RG_RANDOM, threads,
						 kinds[k], "writes_per_s", "writes/s", true);
			rc->held = opt.file_chunk;
			rc->work_in = rc->work_out = 0;
		}
		for (int rep = 0; rep < opt.reps; rep++)
			for (int k = 0; k < nk; k++) {
				struct rec *rc = &recs[first + k];
				double wps;

				progress("file %dthr %s rep %d/%d", threads, lk_name[kinds[k]],
					 rep + 1, opt.reps);
				rc->extra[rc->n] = (double)run_file(kinds[k], threads, &wps,
								    &rc->rq[rc->n]);
				rc->v[rc->n++] = wps;
			}
	}
}

/* ---- library statistics for one scenario ------------------------------- */

static struct range_lock_stats lib_stats;
static char lib_stats_what[160];
static double lib_stats_secs;

static void measure_stats(void)
{
	struct lockset *ls = lockset_new(LK_RANGE);
	struct range_lock_stats storage;
	struct run_result res;
	int threads = ncpus > 1 ? ncpus : 2;

	progress("statistics: mixed/random %dthr librangelock", threads);
	if (range_lock_tree_enable_stats(&ls->tree, &storage)) {
		fprintf(stderr, "rangelock-bench: enable_stats failed\n");
		exit(2);
	}
	run_workload(LK_RANGE, WL_MIXED, RG_RANDOM, threads, opt.work_in_ns,
		     opt.work_out_ns, opt.duration_ms, ls, &res);
	range_lock_tree_get_stats(&ls->tree, &lib_stats);
	lib_stats_secs = res.secs;
	snprintf(lib_stats_what, sizeof(lib_stats_what),
		 "mixed, random ranges (pool [0, %" PRIu64 "]), %d threads, "
		 "%" PRIu64 " ns in / %" PRIu64 " ns out, %" PRIu64 " ms",
		 opt.pool, threads, opt.work_in_ns, opt.work_out_ns, opt.duration_ms);
	if (lib_stats.read_acquired != res.reads || lib_stats.write_acquired != res.writes) {
		fprintf(stderr, "\nrangelock-bench: STATS MISMATCH: library counted "
			"%" PRIu64 "/%" PRIu64 " read/write acquisitions, threads %" PRIu64
			"/%" PRIu64 "\n", lib_stats.read_acquired, lib_stats.write_acquired,
			res.reads, res.writes);
		check_failures++;
	}
	lockset_free(ls);
}

/* ---- machine description ----------------------------------------------- */

static char cpu_model[128] = "unknown";
static struct utsname uts;

static void read_machine(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10)) {
				char *p = strchr(line, ':');
				if (p) {
					p++;
					while (*p == ' ')
						p++;
					p[strcspn(p, "\n")] = 0;
					snprintf(cpu_model, sizeof(cpu_model), "%s", p);
				}
				break;
			}
		fclose(f);
	}
	uname(&uts);
}

static void read_load(double l[3])
{
	if (getloadavg(l, 3) != 3)
		l[0] = l[1] = l[2] = -1;
}

/* ---- output: the seed-shaped table ------------------------------------- */

static void print_header(FILE *out)
{
	fprintf(out, "rangelock-bench (librangelock %s, " LIBC_NAME " %s)\n", rangelock_version(),
		LIBC_VERSION());
	fprintf(out, "machine: %s, %d online CPUs, %s %s %s\n", cpu_model, ncpus,
		uts.sysname, uts.release, uts.machine);
	fprintf(out, "load average before: %.2f %.2f %.2f\n", load_before[0],
		load_before[1], load_before[2]);
	fprintf(out, "method: %d repetitions x %" PRIu64 " ms, interleaved across lock "
		"types; work: busy loop on the %s, %.3f ticks/ns\n", opt.reps,
		opt.duration_ms, WORK_CLOCK, ticks_per_ns);
	fprintf(out, "ratio: vs pthread_rwlock (default) in this run, median/median; "
		"> 1 means faster than pthread_rwlock\n");
	fprintf(out, "sizes: struct range_lock_tree %zu, struct range_lock %zu, "
		"pthread_rwlock_t %zu, pthread_mutex_t %zu bytes\n\n",
		sizeof(struct range_lock_tree), sizeof(struct range_lock),
		sizeof(pthread_rwlock_t), sizeof(pthread_mutex_t));
}

static const struct rec *line_rec; /* the record print_line() reports runq of */

static void print_line(FILE *out, const char *name, double med, double mean,
		       double sd, const char *ratio)
{
	fprintf(out, "%-26s median: %12.1f, mean: %12.1f, stddev: %10.1f (%5.1f%%)%s",
		name, med, mean, sd, mean ? 100.0 * sd / mean : 0.0, ratio);
	if (line_rec)
		fprintf(out, ", runq: %4.1f%%", median_of(line_rec->rq, line_rec->n));
	fprintf(out, "\n");
}

static void ratio_str(char *buf, size_t n, const struct rec *r)
{
	if (r->has_ratio)
		snprintf(buf, n, ", ratio: %5.2f", r->ratio);
	else
		buf[0] = 0;
}

/* Ratio of a per-kind series (reads or writes) vs pthread_rwlock's. */
static void kind_ratio_str(char *buf, size_t n, const struct rec *r, bool writes)
{
	for (int j = 0; j < nrecs; j++)
		if (recs[j].lock == LK_RW && same_point(&recs[j], r)) {
			double b = median_of(writes ? recs[j].wr : recs[j].rd, recs[j].n);
			double m = median_of(writes ? r->wr : r->rd, r->n);
			if (b > 0) {
				snprintf(buf, n, ", ratio: %5.2f", m / b);
				return;
			}
		}
	snprintf(buf, n, ", ratio:   n/a");
}

static void print_throughput(FILE *out)
{
	char name[64], rs[48];

	fprintf(out, "== Throughput, ops/s (work inside %" PRIu64 " ns, outside %" PRIu64
		" ns) ==\n", opt.work_in_ns, opt.work_out_ns);
	for (int wl = 0; wl < WL_COUNT; wl++)
		for (int rg = 0; rg < RG_COUNT; rg++) {
			bool any = false;

			for (int i = 0; i < nrecs; i++)
				if (recs[i].sec == SEC_THROUGHPUT && !recs[i].tag[0] &&
				    recs[i].wl == wl && recs[i].rg == rg)
					any = true;
			if (!any)
				continue;
			fprintf(out, "(%s, %s)\n", wl_title[wl], rg_title[rg]);
			for (int i = 0; i < nrecs; i++) {
				struct rec *r = &recs[i];

				if (r->sec != SEC_THROUGHPUT || r->tag[0] || r->wl != wl ||
				    r->rg != rg)
					continue;
				if (wl == WL_MIXED) {
					snprintf(name, sizeof(name), "%s-write-%dthr:",
						 lk_short[r->lock], r->threads);
					kind_ratio_str(rs, sizeof(rs), r, true);
					line_rec = r;
					print_line(out, name, median_of(r->wr, r->n),
						   mean_of(r->wr, r->n), stddev_of(r->wr, r->n), rs);
					snprintf(name, sizeof(name), "%s-read-%dthr:",
						 lk_short[r->lock], r->threads);
					kind_ratio_str(rs, sizeof(rs), r, false);
					print_line(out, name, median_of(r->rd, r->n),
						   mean_of(r->rd, r->n), stddev_of(r->rd, r->n), rs);
					snprintf(name, sizeof(name), "%s-total-%dthr:",
						 lk_short[r->lock], r->threads);
				} else {
					snprintf(name, sizeof(name), "%s-%dthr:",
						 lk_short[r->lock], r->threads);
				}
				ratio_str(rs, sizeof(rs), r);
				line_rec = r;
				print_line(out, name, rec_median(r), mean_of(r->v, r->n),
					   stddev_of(r->v, r->n), rs);
			}
			fprintf(out, "\n");
		}

	/* Fairness: per-thread acquisitions of the mixed workloads. */
	bool any = false;
	for (int i = 0; i < nrecs; i++)
		if (recs[i].sec == SEC_THROUGHPUT && !recs[i].tag[0] && recs[i].wl == WL_MIXED &&
		    recs[i].threads > 2)
			any = true;
	if (!any)
		return;
	fprintf(out, "== Fairness (mixed): per-thread acquisitions within each kind, "
		"min/max = smallest/largest count (1.00 = even); the repetition with the "
		"median min/max [worst repetition] ==\n");
	for (int rg = 0; rg < RG_COUNT; rg++)
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];
			int mr, mw;

			if (r->sec != SEC_THROUGHPUT || r->tag[0] || r->wl != WL_MIXED ||
			    r->rg != rg || r->threads <= 2)
				continue;
			mr = median_index(r->frd, r->n);
			mw = median_index(r->fwr, r->n);
			snprintf(name, sizeof(name), "%s-%s-%dthr:", lk_short[r->lock],
				 rg_name[rg], r->threads);
			fprintf(out, "%-28s readers(%d) %8" PRIu64 "/%8" PRIu64 " = %.2f [%.2f]"
				"   writers(%d) %8" PRIu64 "/%8" PRIu64 " = %.2f [%.2f]\n",
				name, r->nr, r->rmin[mr], r->rmax[mr], r->frd[mr],
				min_of(r->frd, r->n), r->nw, r->wmin[mw], r->wmax[mw],
				r->fwr[mw], min_of(r->fwr, r->n));
		}
	fprintf(out, "\n");
}

static void print_uncont(FILE *out)
{
	char name[64], rs[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (recs[i].sec == SEC_UNCONT && !recs[i].tag[0])
			any = true;
	if (!any)
		return;
	fprintf(out, "== Uncontended lock+unlock, one thread, full range, ns ==\n");
	for (int m = 0; m < 2; m++) {
		fprintf(out, "(%s)\n", m ? "write" : "read");
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (r->sec != SEC_UNCONT || r->tag[0] || r->wl != (m ? WL_WRITE : WL_READ))
				continue;
			snprintf(name, sizeof(name), "%s-%s:", lk_short[r->lock],
				 m ? "write" : "read");
			ratio_str(rs, sizeof(rs), r);
			line_rec = r;
			print_line(out, name, rec_median(r), mean_of(r->v, r->n),
				   stddev_of(r->v, r->n), rs);
		}
	}
	fprintf(out, "\n");
}

static void print_held(FILE *out)
{
	char name[64], rs[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (recs[i].sec == SEC_HELD && !recs[i].tag[0])
			any = true;
	if (!any)
		return;
	fprintf(out, "== librangelock: write lock+unlock of a free unit with N ranges held, "
		"ns ==\n");
	for (int m = 0; m < 2; m++) {
		double base = 0;

		fprintf(out, "(%s free unit)\n", m ? "the same" : "a random");
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (r->sec != SEC_HELD || r->tag[0] || r->held_random != (m == 0))
				continue;
			if (r->held == 1000)
				base = rec_median(r);
		}
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (r->sec != SEC_HELD || r->tag[0] || r->held_random != (m == 0))
				continue;
			snprintf(name, sizeof(name), "range-held-%" PRIu64 ":", r->held);
			if (base > 0)
				snprintf(rs, sizeof(rs), ", vs 1k held: %5.2fx",
					 rec_median(r) / base);
			else
				rs[0] = 0;
			line_rec = r;
			print_line(out, name, rec_median(r), mean_of(r->v, r->n),
				   stddev_of(r->v, r->n), rs);
		}
	}
	fprintf(out, "\n");
}

static void print_file(FILE *out)
{
	char name[64], rs[96], rr[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (recs[i].sec == SEC_FILE)
			any = true;
	if (!any)
		return;
	fprintf(out, "== File (Lustre): %" PRIu64 " chunks of %" PRIu64 " bytes, each "
		"write = %" PRIu64 " pwrite calls under one lock, writes/s ==\n",
		opt.file_chunks, opt.file_chunk, opt.file_pieces);
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];

		if (r->sec != SEC_FILE)
			continue;
		snprintf(name, sizeof(name), "%s-%dthr:", lk_short[r->lock], r->threads);
		ratio_str(rr, sizeof(rr), r);
		snprintf(rs, sizeof(rs), "%s, torn chunks: %.0f%s", rr,
			 max_of(r->extra, r->n),
			 r->lock == LK_NONE ? " (no lock: tearing expected)" : "");
		line_rec = r;
		print_line(out, name, rec_median(r), mean_of(r->v, r->n),
			   stddev_of(r->v, r->n), rs);
	}
	fprintf(out, "\n");
}

static void print_stats(FILE *out)
{
	const struct range_lock_stats *s = &lib_stats;

	if (!lib_stats_what[0])
		return;
	fprintf(out, "== librangelock statistics (range_lock_tree_get_stats): %s ==\n",
		lib_stats_what);
	fprintf(out, "read_acquired %" PRIu64 ", write_acquired %" PRIu64
		", contended %" PRIu64 " (%.2f%%)\n", s->read_acquired,
		s->write_acquired, s->contended,
		s->read_acquired + s->write_acquired
			? 100.0 * (double)s->contended /
				  (double)(s->read_acquired + s->write_acquired)
			: 0.0);
	fprintf(out, "wait_ns_total %" PRIu64 " (mean %.0f ns per contended call), "
		"wait_ns_max %" PRIu64 "\n", s->wait_ns_total,
		s->contended ? (double)s->wait_ns_total / (double)s->contended : 0.0,
		s->wait_ns_max);
	fprintf(out, "held_now %" PRIu64 ", waiting_now %" PRIu64 ", held_peak %" PRIu64
		", waiting_peak %" PRIu64 ", trylock_failed %" PRIu64 "\n\n",
		s->held_now, s->waiting_now, s->held_peak, s->waiting_peak,
		s->trylock_failed);
}

/* ---- output: CSV and JSON ---------------------------------------------- */

static FILE *open_out(const char *path)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "rangelock-bench: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

static void write_csv(FILE *f)
{
	fprintf(f, "section,scenario,workload,ranges,threads,lock,held,work_in_ns,"
		"work_out_ns,metric,reps,median,mean,stddev,min,max,ratio,ratio_rep_min,"
		"ratio_rep_max,read_median,write_median,readers,writers,read_fair_median,"
		"read_fair_worst,write_fair_median,write_fair_worst,runq_wait_pct_median,"
		"runq_wait_pct_max\n");
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		bool tp = r->sec == SEC_THROUGHPUT;

		fprintf(f, "%s,%s,%s,%s,%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%d,"
			"%.3f,%.3f,%.3f,%.3f,%.3f,",
			sec_name[r->sec], r->tag[0] ? r->tag : "",
			r->wl >= 0 ? wl_name[r->wl] : "",
			r->sec == SEC_HELD ? (r->held_random ? "random-free" : "fixed-free")
					   : rg_name[r->rg],
			r->threads, lk_name[r->lock], r->held, r->work_in, r->work_out,
			r->metric, r->n, rec_median(r), mean_of(r->v, r->n),
			stddev_of(r->v, r->n), min_of(r->v, r->n), max_of(r->v, r->n));
		if (r->has_ratio)
			fprintf(f, "%.4f,%.4f,%.4f,", r->ratio, r->pr_min, r->pr_max);
		else
			fprintf(f, ",,,");
		if (tp)
			fprintf(f, "%.3f,%.3f,%d,%d,%.4f,%.4f,%.4f,%.4f",
				median_of(r->rd, r->n), median_of(r->wr, r->n), r->nr, r->nw,
				median_of(r->frd, r->n), min_of(r->frd, r->n),
				median_of(r->fwr, r->n), min_of(r->fwr, r->n));
		else
			fprintf(f, ",,,,,,,");
		fprintf(f, ",%.2f,%.2f\n", median_of(r->rq, r->n), max_of(r->rq, r->n));
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fprintf(f, "null");
}

struct target_row;
static void write_json_targets(FILE *f);

static void write_json(FILE *f)
{
	fprintf(f, "{\n  \"tool\": \"rangelock-bench\",\n  \"librangelock\": ");
	json_str(f, rangelock_version());
	fprintf(f, ",\n  \"libc\": ");
	json_str(f, LIBC_NAME);
	fprintf(f, ",\n  \"libc_version\": ");
	json_str(f, LIBC_VERSION());
	fprintf(f, ",\n  \"machine\": {\"cpu\": ");
	json_str(f, cpu_model);
	fprintf(f, ", \"cpus\": %d, \"kernel\": ", ncpus);
	json_str(f, uts.release);
	fprintf(f, ", \"load_before\": [%.2f, %.2f, %.2f], \"load_after\": [%.2f, %.2f, %.2f]},\n",
		load_before[0], load_before[1], load_before[2], load_after[0],
		load_after[1], load_after[2]);
	fprintf(f, "  \"config\": {\"reps\": %d, \"duration_ms\": %" PRIu64
		", \"work_in_ns\": %" PRIu64 ", \"work_out_ns\": %" PRIu64
		", \"pool\": %" PRIu64 ", \"work_ticks_per_ns\": %.4f, \"quick\": %s, "
		"\"targets\": %s},\n", opt.reps, opt.duration_ms, opt.work_in_ns,
		opt.work_out_ns, opt.pool, ticks_per_ns, opt.quick ? "true" : "false",
		opt.targets ? "true" : "false");
	fprintf(f, "  \"sizes\": {\"range_lock_tree\": %zu, \"range_lock\": %zu, "
		"\"pthread_rwlock_t\": %zu, \"pthread_mutex_t\": %zu},\n",
		sizeof(struct range_lock_tree), sizeof(struct range_lock),
		sizeof(pthread_rwlock_t), sizeof(pthread_mutex_t));
	if (lib_stats_what[0]) {
		const struct range_lock_stats *s = &lib_stats;
		fprintf(f, "  \"library_stats\": {\"scenario\": ");
		json_str(f, lib_stats_what);
		fprintf(f, ", \"read_acquired\": %" PRIu64 ", \"write_acquired\": %" PRIu64
			", \"contended\": %" PRIu64 ", \"wait_ns_total\": %" PRIu64
			", \"wait_ns_max\": %" PRIu64 ", \"held_peak\": %" PRIu64
			", \"waiting_peak\": %" PRIu64 "},\n", s->read_acquired,
			s->write_acquired, s->contended, s->wait_ns_total, s->wait_ns_max,
			s->held_peak, s->waiting_peak);
	}
	fprintf(f, "  \"check_failures\": %d,\n", check_failures);
	if (opt.targets)
		write_json_targets(f);
	fprintf(f, "  \"results\": [\n");
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];

		fprintf(f, "    {\"section\": \"%s\", \"scenario\": ", sec_name[r->sec]);
		json_str(f, r->tag);
		fprintf(f, ", \"workload\": \"%s\", \"ranges\": \"%s\", \"threads\": %d, "
			"\"lock\": \"%s\", \"held\": %" PRIu64 ", \"held_random\": %s, "
			"\"work_in_ns\": %" PRIu64 ", \"work_out_ns\": %" PRIu64
			", \"metric\": \"%s\", \"samples\": [",
			r->wl >= 0 ? wl_name[r->wl] : "", rg_name[r->rg], r->threads,
			lk_name[r->lock], r->held, r->held_random ? "true" : "false",
			r->work_in, r->work_out, r->metric);
		for (int k = 0; k < r->n; k++) {
			if (k)
				fprintf(f, ", ");
			json_num(f, r->v[k]);
		}
		fprintf(f, "], \"median\": ");
		json_num(f, rec_median(r));
		fprintf(f, ", \"mean\": ");
		json_num(f, mean_of(r->v, r->n));
		fprintf(f, ", \"stddev\": ");
		json_num(f, stddev_of(r->v, r->n));
		fprintf(f, ", \"ratio\": ");
		json_num(f, r->has_ratio ? r->ratio : NAN);
		fprintf(f, ", \"runq_wait_pct\": [");
		for (int k = 0; k < r->n; k++) {
			if (k)
				fprintf(f, ", ");
			json_num(f, r->rq[k]);
		}
		fprintf(f, "]");
		if (r->sec == SEC_THROUGHPUT) {
			fprintf(f, ", \"read_median\": ");
			json_num(f, median_of(r->rd, r->n));
			fprintf(f, ", \"write_median\": ");
			json_num(f, median_of(r->wr, r->n));
			fprintf(f, ", \"readers\": %d, \"writers\": %d, \"per_thread\": [", r->nr,
				r->nw);
			for (int k = 0; k < r->n; k++)
				fprintf(f, "%s{\"rmin\": %" PRIu64 ", \"rmax\": %" PRIu64
					", \"wmin\": %" PRIu64 ", \"wmax\": %" PRIu64 "}",
					k ? ", " : "", r->rmin[k], r->rmax[k], r->wmin[k],
					r->wmax[k]);
			fprintf(f, "]");
		}
		if (r->sec == SEC_FILE) {
			fprintf(f, ", \"torn_max\": ");
			json_num(f, max_of(r->extra, r->n));
		}
		fprintf(f, "}%s\n", i + 1 < nrecs ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

/* ---- the default (full or quick) run ----------------------------------- */

static void run_all(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = throughput_kinds(kinds);
	int nwl = 0, nrg = 0;

	for (int i = 0; i < WL_COUNT; i++)
		nwl += opt.wl[i];
	for (int i = 0; i < RG_COUNT; i++)
		nrg += opt.rg[i];
	progress_total = 0;
	if (opt.do_uncont)
		progress_total += (long)opt.reps * 2 * nk;
	if (opt.do_held)
		progress_total += (long)opt.reps * 2 * (long)NHELD;
	if (opt.do_throughput)
		progress_total += (long)nwl * nrg * opt.nthreads_list * nk * opt.reps;
	if (opt.do_file)
		progress_total += (long)opt.nthreads_list * opt.reps *
				  (1 + opt.locks[LK_RANGE] + opt.locks[LK_MUTEX] +
				   opt.locks[LK_OFD] + opt.locks[LK_NONE]);
	if (opt.do_stats)
		progress_total += 1;

	if (opt.do_uncont)
		measure_uncontended(kinds, nk, NULL);
	if (opt.do_held)
		measure_held(NULL);
	if (opt.do_throughput)
		for (int wl = 0; wl < WL_COUNT; wl++)
			for (int rg = 0; rg < RG_COUNT; rg++) {
				if (!opt.wl[wl] || !opt.rg[rg])
					continue;
				for (int t = 0; t < opt.nthreads_list; t++)
					measure_point(SEC_THROUGHPUT, NULL, kinds, nk, wl, rg,
						      opt.threads[t], opt.work_in_ns,
						      opt.work_out_ns);
			}
	if (opt.do_file)
		measure_file();
	if (opt.do_stats)
		measure_stats();
	progress_end();
}

/* ---- --targets: the performance issue's scenarios ---------------------- */

struct target_row {
	const char *scenario;
	char rl[48], rw[48];
	double ratio, spread_lo, spread_hi;
	bool has_spread;
	const char *target;
	bool met;
	double goal;
	bool at_most;
	double rq_med, rq_max;   /* run-queue wait of both sides, % */
};

static void target_runq(struct target_row *t, const struct rec *a, const struct rec *b)
{
	double v[2 * MAX_REPS];
	int n = 0;

	for (int k = 0; k < a->n; k++)
		v[n++] = a->rq[k];
	for (int k = 0; b && k < b->n; k++)
		v[n++] = b->rq[k];
	t->rq_med = median_of(v, n);
	t->rq_max = max_of(v, n);
}

static struct target_row trows[16];
static int ntrows;

static void fmt_val(char *buf, size_t n, const struct rec *r, const char *unit,
		    double scale)
{
	double m = rec_median(r) / scale, sd = stddev_of(r->v, r->n) / scale;

	snprintf(buf, n, "%.4g %s (sd %.2g)", m, unit, sd);
}

static void target_from_pair(const char *scenario, int i_rl, int i_rw, const char *unit,
			     double scale, const char *target, double goal)
{
	struct target_row *t = &trows[ntrows++];
	const struct rec *rl = &recs[i_rl], *rw = &recs[i_rw];

	t->scenario = scenario;
	fmt_val(t->rl, sizeof(t->rl), rl, unit, scale);
	fmt_val(t->rw, sizeof(t->rw), rw, unit, scale);
	t->ratio = rl->ratio;
	t->spread_lo = rl->pr_min;
	t->spread_hi = rl->pr_max;
	t->has_spread = true;
	t->target = target;
	t->goal = goal;
	t->met = rl->ratio >= goal;
	target_runq(t, rl, rw);
}

static int find_rec(enum section sec, const char *tag, enum lock_kind lock, int wl,
		    int threads)
{
	for (int i = 0; i < nrecs; i++)
		if (recs[i].sec == sec && !strcmp(recs[i].tag, tag) &&
		    recs[i].lock == lock && recs[i].wl == wl && recs[i].threads == threads)
			return i;
	fprintf(stderr, "rangelock-bench: internal: record %s/%s not found\n",
		sec_name[sec], tag);
	exit(2);
}

static void run_targets(FILE *out)
{
	const enum lock_kind two[] = { LK_RW, LK_RANGE };
	const int T = 2;
	int i;

	progress_total = (long)opt.reps * (2 * 2 + 2 * NHELD + 2 * 7);
	measure_uncontended(two, 2, "uncontended");
	measure_point(SEC_THROUGHPUT, "empty-cs", two, 2, WL_READ, RG_FULL, T, 0, 0);
	measure_point(SEC_THROUGHPUT, "empty-cs", two, 2, WL_WRITE, RG_FULL, T, 0, 0);
	measure_point(SEC_THROUGHPUT, "1us-in-out", two, 2, WL_READ, RG_FULL, T, 1000, 1000);
	measure_point(SEC_THROUGHPUT, "1us-in-out", two, 2, WL_WRITE, RG_FULL, T, 1000, 1000);
	measure_point(SEC_THROUGHPUT, "1us-in-out", two, 2, WL_MIXED, RG_FULL, T, 1000, 1000);
	measure_point(SEC_THROUGHPUT, "disjoint-1us", two, 2, WL_WRITE, RG_DISJOINT, T, 1000, 0);
	/* Fairness needs two threads of a kind: 2 readers + 2 writers. */
	measure_point(SEC_THROUGHPUT, "fairness-4thr", two, 2, WL_MIXED, RG_FULL, 4, 1000, 1000);
	int held0 = measure_held("held");
	progress_end();
	compute_ratios();

	ntrows = 0;
	target_from_pair("1. uncontended lock+unlock, read (ns)",
			 find_rec(SEC_UNCONT, "uncontended", LK_RANGE, WL_READ, 1),
			 find_rec(SEC_UNCONT, "uncontended", LK_RW, WL_READ, 1),
			 "ns", 1, ">= 0.8", 0.8);
	target_from_pair("1. uncontended lock+unlock, write (ns)",
			 find_rec(SEC_UNCONT, "uncontended", LK_RANGE, WL_WRITE, 1),
			 find_rec(SEC_UNCONT, "uncontended", LK_RW, WL_WRITE, 1),
			 "ns", 1, ">= 1.25", 1.25);
	target_from_pair("2. full range, empty CS, 2 thr, read-only",
			 find_rec(SEC_THROUGHPUT, "empty-cs", LK_RANGE, WL_READ, T),
			 find_rec(SEC_THROUGHPUT, "empty-cs", LK_RW, WL_READ, T),
			 "Mops/s", 1e6, ">= 0.5", 0.5);
	target_from_pair("2. full range, empty CS, 2 thr, write-only",
			 find_rec(SEC_THROUGHPUT, "empty-cs", LK_RANGE, WL_WRITE, T),
			 find_rec(SEC_THROUGHPUT, "empty-cs", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 0.7", 0.7);
	target_from_pair("3. full range, 1us in + 1us out, read-only",
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RANGE, WL_READ, T),
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RW, WL_READ, T),
			 "Mops/s", 1e6, ">= 0.95", 0.95);
	target_from_pair("3. full range, 1us in + 1us out, write-only",
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RANGE, WL_WRITE, T),
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 1.7", 1.7);
	target_from_pair("3. full range, 1us in + 1us out, mixed 1R+1W",
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RANGE, WL_MIXED, T),
			 find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RW, WL_MIXED, T),
			 "Mops/s", 1e6, ">= 10", 10);
	target_from_pair("4. disjoint ranges, 1us in, 2 thr, write",
			 find_rec(SEC_THROUGHPUT, "disjoint-1us", LK_RANGE, WL_WRITE, T),
			 find_rec(SEC_THROUGHPUT, "disjoint-1us", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 2.0", 2.0);

	/* 5. cost with 100k held / with 1k held (random free unit). */
	{
		int i1k = -1, i100k = -1;
		struct target_row *t = &trows[ntrows++];

		for (i = held0; i < nrecs; i++)
			if (recs[i].sec == SEC_HELD && recs[i].held_random) {
				if (recs[i].held == 1000)
					i1k = i;
				if (recs[i].held == 100000)
					i100k = i;
			}
		t->scenario = "5. free-range lock+unlock, 100k held / 1k held";
		t->target = "<= 2.5x";
		t->goal = 2.5;
		t->at_most = true;
		if (i1k >= 0 && i100k >= 0) {
			double pr[MAX_REPS];
			int n = recs[i1k].n < recs[i100k].n ? recs[i1k].n : recs[i100k].n;

			snprintf(t->rl, sizeof(t->rl), "100k: %.4g ns (sd %.2g)",
				 rec_median(&recs[i100k]), stddev_of(recs[i100k].v, recs[i100k].n));
			snprintf(t->rw, sizeof(t->rw), "1k: %.4g ns (sd %.2g)",
				 rec_median(&recs[i1k]), stddev_of(recs[i1k].v, recs[i1k].n));
			t->ratio = rec_median(&recs[i100k]) / rec_median(&recs[i1k]);
			for (int k = 0; k < n; k++)
				pr[k] = recs[i100k].v[k] / recs[i1k].v[k];
			t->spread_lo = min_of(pr, n);
			t->spread_hi = max_of(pr, n);
			t->has_spread = true;
			t->met = t->ratio <= 2.5;
			target_runq(t, &recs[i100k], &recs[i1k]);
		} else {
			snprintf(t->rl, sizeof(t->rl), "not measured");
			snprintf(t->rw, sizeof(t->rw), "n/a");
			t->ratio = NAN;
		}
	}

	/* 6. fairness: min/max per-thread acquisitions within each kind. */
	{
		int a = find_rec(SEC_THROUGHPUT, "fairness-4thr", LK_RANGE, WL_MIXED, 4);
		int b = find_rec(SEC_THROUGHPUT, "fairness-4thr", LK_RW, WL_MIXED, 4);
		struct rec *rl = &recs[a], *rw = &recs[b];
		struct target_row *t = &trows[ntrows++];
		double frl = fmin(median_of(rl->frd, rl->n), median_of(rl->fwr, rl->n));
		double worst = fmin(min_of(rl->frd, rl->n), min_of(rl->fwr, rl->n));

		t->scenario = "6. fairness, mixed 2R+2W, min/max per kind";
		snprintf(t->rl, sizeof(t->rl), "R %.2f W %.2f [worst %.2f]",
			 median_of(rl->frd, rl->n), median_of(rl->fwr, rl->n), worst);
		snprintf(t->rw, sizeof(t->rw), "R %.2f W %.2f [worst %.2f]",
			 median_of(rw->frd, rw->n), median_of(rw->fwr, rw->n),
			 fmin(min_of(rw->frd, rw->n), min_of(rw->fwr, rw->n)));
		t->ratio = frl;
		t->spread_lo = worst;
		t->spread_hi = fmax(max_of(rl->frd, rl->n), max_of(rl->fwr, rl->n));
		t->has_spread = true;
		t->target = ">= 0.5 (min/max)";
		t->goal = 0.5;
		t->met = frl >= 0.5;
		target_runq(t, rl, rw);
	}

	fprintf(out, "== Targets (issue 7): 2 threads on %d CPUs, median of %d interleaved "
		"repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "ratio: librangelock vs pthread_rwlock (default), > 1 = librangelock "
		"faster\nrow 5: cost with 100k ranges held / with 1k held (librangelock "
		"only, random free unit; lower is better)\nrow 6: min/max of the "
		"per-thread acquisitions within a kind, median over repetitions "
		"[worst repetition]\n");
	fprintf(out, "values: median (sd: standard deviation); spread: min..max of the per-repetition "
		"paired ratios\nrunq: time the measuring threads waited for a CPU "
		"(other load), %% of their time, median/max over the row's runs\n\n");
	fprintf(out, "| %-46s | %-26s | %-26s | %6s | %-16s | %-4s | %-13s | %-11s |\n",
		"scenario", "librangelock", "pthread_rwlock", "ratio", "target", "met?",
		"spread", "runq %");
	fprintf(out, "|%.*s|%.*s|%.*s|%.*s|%.*s|%.*s|%.*s|%.*s|\n", 48,
		"------------------------------------------------", 28,
		"----------------------------", 28, "----------------------------", 8,
		"--------", 18, "------------------", 6, "------", 15, "---------------", 13,
		"-------------");
	for (i = 0; i < ntrows; i++) {
		struct target_row *t = &trows[i];
		char spread[32];

		if (t->has_spread)
			snprintf(spread, sizeof(spread), "%.2f..%.2f", t->spread_lo, t->spread_hi);
		else
			snprintf(spread, sizeof(spread), "n/a");
		char rq[32];

		snprintf(rq, sizeof(rq), "%.1f/%.1f", t->rq_med, t->rq_max);
		fprintf(out, "| %-46s | %-26s | %-26s | %6.2f | %-16s | %-4s | %-13s | %-11s |\n",
			t->scenario, t->rl, t->rw, t->ratio, t->target,
			t->met ? "yes" : "NO", spread, rq);
	}
	fprintf(out, "\n");

	/* The 2-thread mixed run (1 reader + 1 writer): per-kind throughput. */
	{
		int a = find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RANGE, WL_MIXED, T);
		int b = find_rec(SEC_THROUGHPUT, "1us-in-out", LK_RW, WL_MIXED, T);

		fprintf(out, "mixed 1R+1W detail (ops/s, median): librangelock reads %.0f "
			"writes %.0f; pthread_rwlock reads %.0f writes %.0f\n",
			median_of(recs[a].rd, recs[a].n), median_of(recs[a].wr, recs[a].n),
			median_of(recs[b].rd, recs[b].n), median_of(recs[b].wr, recs[b].n));
	}
	{
		int i1k = -1, i100k = -1;
		for (i = held0; i < nrecs; i++)
			if (recs[i].sec == SEC_HELD && !recs[i].held_random) {
				if (recs[i].held == 1000)
					i1k = i;
				if (recs[i].held == 100000)
					i100k = i;
			}
		if (i1k >= 0 && i100k >= 0)
			fprintf(out, "row 5 with the same free unit every time (hot path): "
				"1k %.1f ns, 100k %.1f ns, ratio %.2fx\n",
				rec_median(&recs[i1k]), rec_median(&recs[i100k]),
				rec_median(&recs[i100k]) / rec_median(&recs[i1k]));
	}
	fprintf(out, "\n");
}

static void write_json_targets(FILE *f)
{
	fprintf(f, "  \"targets\": [\n");
	for (int i = 0; i < ntrows; i++) {
		struct target_row *t = &trows[i];

		fprintf(f, "    {\"scenario\": ");
		json_str(f, t->scenario);
		fprintf(f, ", \"librangelock\": ");
		json_str(f, t->rl);
		fprintf(f, ", \"pthread_rwlock\": ");
		json_str(f, t->rw);
		fprintf(f, ", \"ratio\": ");
		json_num(f, t->ratio);
		fprintf(f, ", \"spread_min\": ");
		json_num(f, t->has_spread ? t->spread_lo : NAN);
		fprintf(f, ", \"spread_max\": ");
		json_num(f, t->has_spread ? t->spread_hi : NAN);
		fprintf(f, ", \"target\": ");
		json_str(f, t->target);
		fprintf(f, ", \"met\": %s}%s\n", t->met ? "true" : "false",
			i + 1 < ntrows ? "," : "");
	}
	fprintf(f, "  ],\n");
}

/* ---- main -------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: rangelock-bench [options]\n"
"  --quick              smoke run, a few seconds (ctest's bench_quick)\n"
"  --targets            only the performance issue's scenarios, with a\n"
"                       'scenario | librangelock | pthread_rwlock | ratio |\n"
"                       target | met?' table\n"
"  --reps N             repetitions per measurement (default 5; --targets 11)\n"
"  --duration-ms N      length of one throughput run (default 200)\n"
"  --threads LIST       thread counts, e.g. 1,2,4 (default 1 .. 2x CPUs)\n"
"  --work-in-ns N       busy work inside the critical section (default 1000)\n"
"  --work-out-ns N      busy work between critical sections (default 1000)\n"
"  --pool N             random ranges lie in [0, N] (default 4096)\n"
"  --locks LIST         of range,rwlock,rwlock-wp,mutex,ofd,nolock (default all;\n"
"                       pthread_rwlock is always run: it is the baseline)\n"
"  --workloads LIST     of read,write,mixed (default all)\n"
"  --ranges LIST        of full,random,disjoint (default all)\n"
"  --sections LIST      of uncontended,held,throughput,file,stats (default all)\n"
"  --file-dir DIR       where the file scenario's temporary file goes\n"
"                       (default $TMPDIR or /tmp)\n"
"  --csv[=FILE]         CSV of every result (to stdout instead of the table,\n"
"                       or to FILE besides it)\n"
"  --json[=FILE]        the same as JSON\n"
"  --no-progress        no progress line on stderr\n"
"  --help\n");
}

static bool in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p && *p) {
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == 0))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "rangelock-bench: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static void parse_threads(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	opt.nthreads_list = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t t = parse_u64(tok, "thread count");
		if (t < 1 || t > MAX_THREADS || opt.nthreads_list == MAX_THREADS) {
			fprintf(stderr, "rangelock-bench: thread count out of range: %s\n", tok);
			exit(2);
		}
		opt.threads[opt.nthreads_list++] = (int)t;
	}
	free(copy);
	if (!opt.nthreads_list) {
		fprintf(stderr, "rangelock-bench: empty thread list\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	enum { O_QUICK = 256, O_TARGETS, O_REPS, O_DUR, O_THREADS, O_WIN, O_WOUT, O_POOL,
	       O_LOCKS, O_WL, O_RG, O_SECT, O_FDIR, O_CSV, O_JSON, O_NOPROG, O_HELP };
	static const struct option lopts[] = {
		{ "quick", no_argument, 0, O_QUICK },
		{ "targets", no_argument, 0, O_TARGETS },
		{ "reps", required_argument, 0, O_REPS },
		{ "duration-ms", required_argument, 0, O_DUR },
		{ "threads", required_argument, 0, O_THREADS },
		{ "work-in-ns", required_argument, 0, O_WIN },
		{ "work-out-ns", required_argument, 0, O_WOUT },
		{ "pool", required_argument, 0, O_POOL },
		{ "locks", required_argument, 0, O_LOCKS },
		{ "workloads", required_argument, 0, O_WL },
		{ "ranges", required_argument, 0, O_RG },
		{ "sections", required_argument, 0, O_SECT },
		{ "file-dir", required_argument, 0, O_FDIR },
		{ "csv", optional_argument, 0, O_CSV },
		{ "json", optional_argument, 0, O_JSON },
		{ "no-progress", no_argument, 0, O_NOPROG },
		{ "help", no_argument, 0, O_HELP },
		{ 0, 0, 0, 0 }
	};
	int reps = -1, c;
	int64_t dur = -1;
	const char *threads = NULL, *locks = NULL, *wls = NULL, *rgs = NULL, *sects = NULL;
	FILE *table = stdout;

	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	opt.progress = true;
	opt.work_in_ns = 1000;
	opt.work_out_ns = 1000;
	opt.pool = 4096;
	opt.file_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_QUICK: opt.quick = true; break;
		case O_TARGETS: opt.targets = true; break;
		case O_REPS: reps = (int)parse_u64(optarg, "--reps"); break;
		case O_DUR: dur = (int64_t)parse_u64(optarg, "--duration-ms"); break;
		case O_THREADS: threads = optarg; break;
		case O_WIN: opt.work_in_ns = parse_u64(optarg, "--work-in-ns"); break;
		case O_WOUT: opt.work_out_ns = parse_u64(optarg, "--work-out-ns"); break;
		case O_POOL: opt.pool = parse_u64(optarg, "--pool"); break;
		case O_LOCKS: locks = optarg; break;
		case O_WL: wls = optarg; break;
		case O_RG: rgs = optarg; break;
		case O_SECT: sects = optarg; break;
		case O_FDIR: opt.file_dir = optarg; break;
		case O_CSV: opt.csv = true; opt.csv_path = optarg ? optarg : "-"; break;
		case O_JSON: opt.json = true; opt.json_path = optarg ? optarg : "-"; break;
		case O_NOPROG: opt.progress = false; break;
		case O_HELP: case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (opt.csv && opt.json && !strcmp(opt.csv_path, "-") && !strcmp(opt.json_path, "-")) {
		fprintf(stderr, "rangelock-bench: --csv and --json cannot both go to stdout\n");
		return 2;
	}
	if (opt.pool < 1 || opt.pool > (1u << 24)) {
		fprintf(stderr, "rangelock-bench: --pool must be in [1, 16777216]\n");
		return 2;
	}

	/* Defaults, then --quick, then explicit options. */
	opt.reps = opt.targets ? 11 : 5;
	opt.duration_ms = opt.targets ? 250 : 200;
	opt.uncont_iters = 2000000;
	opt.held_iters = 200000;
	opt.held_max = 100000;
	opt.file_chunk = 64 * 1024;
	opt.file_chunks = 64;
	opt.file_pieces = 4;
	opt.nthreads_list = 0;
	for (int t = 1; t <= 2 * ncpus && t <= MAX_THREADS; t++)
		opt.threads[opt.nthreads_list++] = t;
	if (opt.quick) {
		opt.reps = 2;
		opt.duration_ms = opt.targets ? 20 : 10;
		opt.uncont_iters = 100000;
		/* Small: checking builds (Debug, sanitizer CI) verify the whole
		 * tree on every call, so this section is O(n) per call there. */
		opt.held_iters = 5000;
		opt.held_max = 1000;
		opt.nthreads_list = 0;
		opt.threads[opt.nthreads_list++] = 1;
		opt.threads[opt.nthreads_list++] = 2;
		opt.file_chunk = 16 * 1024;
	}
	if (opt.targets && !opt.quick)
		opt.held_max = 100000;
	if (opt.targets && opt.quick)
		opt.held_max = 100000; /* the 100k row must exist */
	if (reps >= 0) {
		if (reps < 1 || reps > MAX_REPS) {
			fprintf(stderr, "rangelock-bench: --reps must be in [1, %d]\n", MAX_REPS);
			return 2;
		}
		opt.reps = reps;
	}
	if (dur >= 0) {
		if (dur < 1) {
			fprintf(stderr, "rangelock-bench: --duration-ms must be >= 1\n");
			return 2;
		}
		opt.duration_ms = (uint64_t)dur;
	}
	if (threads)
		parse_threads(threads);
	for (int t = 0; t < opt.nthreads_list; t++)
		if ((uint64_t)opt.threads[t] > opt.pool + 1) {
			fprintf(stderr, "rangelock-bench: %d threads need --pool >= %d for "
				"disjoint ranges\n", opt.threads[t], opt.threads[t] - 1);
			return 2;
		}
	for (int k = 0; k < LK_COUNT; k++)
		opt.locks[k] = !locks || in_list(locks, lk_short[k]) || in_list(locks, lk_name[k]);
	opt.locks[LK_RW] = true;
	if (!HAVE_RWLOCK_PREFER_WRITER)
		opt.locks[LK_RWW] = false;  /* no such rwlock kind here */
	for (int w = 0; w < WL_COUNT; w++)
		opt.wl[w] = !wls || in_list(wls, wl_name[w]);
	for (int r = 0; r < RG_COUNT; r++)
		opt.rg[r] = !rgs || in_list(rgs, rg_name[r]);
	opt.do_uncont = !sects || in_list(sects, "uncontended");
	opt.do_held = (!sects || in_list(sects, "held")) && opt.locks[LK_RANGE];
	opt.do_throughput = !sects || in_list(sects, "throughput");
	opt.do_file = !sects || in_list(sects, "file");
	opt.do_stats = (!sects || in_list(sects, "stats")) && opt.locks[LK_RANGE];

	progress_tty = isatty(STDERR_FILENO);
	read_machine();
	read_load(load_before);
	calibrate_work();
	progress_t0 = now_ns();

	if (opt.csv && !strcmp(opt.csv_path, "-"))
		table = NULL;
	if (opt.json && !strcmp(opt.json_path, "-"))
		table = NULL;

	if (opt.targets) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		run_targets(mem);
		fclose(mem);
		read_load(load_after);
		if (table) {
			print_header(table);
			fputs(buf, table);
			fprintf(table, "load average after: %.2f %.2f %.2f\n", load_after[0],
				load_after[1], load_after[2]);
		}
		free(buf);
	} else {
		run_all();
		compute_ratios();
		read_load(load_after);
		if (table) {
			print_header(table);
			print_uncont(table);
			print_held(table);
			print_throughput(table);
			print_file(table);
			print_stats(table);
			fprintf(table, "load average after: %.2f %.2f %.2f\n", load_after[0],
				load_after[1], load_after[2]);
		}
	}
	if (opt.csv) {
		FILE *f = open_out(opt.csv_path);
		write_csv(f);
		if (f != stdout)
			fclose(f);
	}
	if (opt.json) {
		FILE *f = open_out(opt.json_path);
		write_json(f);
		if (f != stdout)
			fclose(f);
	}
	if (check_failures) {
		fprintf(stderr, "rangelock-bench: %d correctness check(s) FAILED\n",
			check_failures);
		return 1;
	}
	return 0;
}
