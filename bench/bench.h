/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: what the program's files share.
 *
 * The files, one job each (see docs/benchmarks.md for what is measured):
 *   rangelock-bench.c   the driver: the section table, main()
 *   bench_options.c     command line, defaults, usage
 *   bench_util.c        clocks, busy work, run-queue wait, sample statistics,
 *                       wait histograms, lock sets, progress line
 *   bench_output.c      result records, the table's common lines, CSV, JSON
 *   bench_throughput.c  the throughput workload (also used by --targets)
 *   bench_cost.c        single-thread costs: uncontended, with N ranges held
 *   bench_lustre.c      the file scenario (threads pwrite chunks of a file)
 *   bench_stats.c       the library's own statistics for one run
 *   bench_targets.c     --targets: the performance issues' scenarios
 *   bench_targets13.c   --targets=13: issue 13's (reader fast path) scenarios
 *   bench_targets_word.c --targets=word: colliding full-range calls (word mode)
 *   bench_targets_many.c --targets=many: several ranges in one call, grow/shrink
 *   bench_targets_segments.c --targets=segments: ranges that conflict with nothing
 *   bench_targets_segwide.c  --targets=segments: requests that meet many segments
 *   bench_targets_readers.c --targets=readers: readers among busy writers
 *   bench_sweeps.c      the opt-in sweeps read-scaling and write-ratio
 *
 * Adding a scenario: write bench_<name>.c defining a
 * `const struct bench_section bench_section_<name>` (below), declare it
 * here, add one line to the table in rangelock-bench.c and the file to
 * bench/CMakeLists.txt.  Its results go into records (rec_new()), which
 * CSV and JSON write without further code.
 */
#ifndef RANGELOCK_BENCH_H
#define RANGELOCK_BENCH_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- lock types (bench_util.c) ----------------------------------------- */

enum lock_kind {
	LK_RANGE,      /* librangelock, default policy */
	LK_RW,         /* pthread_rwlock_t, default attributes (prefer readers) */
	LK_RWW,        /* pthread_rwlock_t, PREFER_WRITER_NONRECURSIVE_NP */
	LK_MUTEX,      /* pthread_mutex_t, default */
	LK_OFD,        /* fcntl F_OFD_SETLKW (file scenario only) */
	LK_NONE,       /* no lock at all (file scenario control: shows tearing) */
	LK_RANGE_FIFO, /* librangelock, strict-FIFO tree (range_lock_tree_set_fifo) */
	/* The same two trees with range_lock_tree_set_fast_read(tree, 0): every
	 * read through the internal lock, "today's cost" for issue 13. */
	LK_RANGE_NOFAST,
	LK_RANGE_FIFO_NOFAST,
	/* 64 pthread_rwlock_t stripes of the key space (--targets=segments
	 * only: lk_lock() does not know it). */
	LK_STRIPED,
	/* The default and FIFO trees split into 64 segments by stripes of
	 * 2^14 units (range_lock_tree_set_segments(); --targets=segments). */
	LK_RANGE_SEG,
	LK_RANGE_FIFO_SEG,
	/* The default tree and its 64 segments with
	 * range_lock_tree_defer_writers() (--targets=readers). */
	LK_RANGE_DW,
	LK_RANGE_SEG_DW,
	LK_COUNT
};

extern const char *const lk_name[LK_COUNT];  /* "librangelock", ... (CSV) */
extern const char *const lk_short[LK_COUNT]; /* "range", ... (table) */

static inline bool lk_is_range(enum lock_kind k)
{
	return k == LK_RANGE || k == LK_RANGE_FIFO || k == LK_RANGE_NOFAST ||
	       k == LK_RANGE_FIFO_NOFAST || k == LK_RANGE_SEG || k == LK_RANGE_FIFO_SEG ||
	       k == LK_RANGE_DW || k == LK_RANGE_SEG_DW;
}

static inline bool lk_is_nofast(enum lock_kind k)
{
	return k == LK_RANGE_NOFAST || k == LK_RANGE_FIFO_NOFAST;
}

/* The fast-read-off kind of the same tree policy as @k (LK_RANGE or
 * LK_RANGE_FIFO). */
static inline enum lock_kind lk_nofast_of(enum lock_kind k)
{
	return k == LK_RANGE_FIFO ? LK_RANGE_FIFO_NOFAST : LK_RANGE_NOFAST;
}

/* "default" or "fifo" for librangelock, "" for the others. */
const char *lk_policy(enum lock_kind k);

struct lockset {
	_Alignas(CACHELINE) struct range_lock_tree tree;
	_Alignas(CACHELINE) pthread_rwlock_t rw;
	_Alignas(CACHELINE) pthread_mutex_t mtx;
};

/* The geometry of the segmented kinds' trees (LK_RANGE_SEG,
 * LK_RANGE_FIFO_SEG, LK_RANGE_SEG_DW): range_lock_tree_set_segments(tree, seg_geom_n,
 * seg_geom_k); 64 and 14 unless a section sets others for its runs. */
extern unsigned seg_geom_n, seg_geom_k;

/* A set of locks for one run; the tree's policy follows @kind. */
struct lockset *lockset_new(enum lock_kind kind);
void lockset_free(struct lockset *ls);

static inline void lk_lock(struct lockset *ls, enum lock_kind kind, bool write,
			   struct range_lock *req)
{
	switch (kind) {
	case LK_RANGE:
	case LK_RANGE_FIFO:
	case LK_RANGE_NOFAST:
	case LK_RANGE_FIFO_NOFAST:
	case LK_RANGE_SEG:
	case LK_RANGE_FIFO_SEG:
	case LK_RANGE_DW:
	case LK_RANGE_SEG_DW:
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
	case LK_RANGE_FIFO:
	case LK_RANGE_NOFAST:
	case LK_RANGE_FIFO_NOFAST:
	case LK_RANGE_SEG:
	case LK_RANGE_FIFO_SEG:
	case LK_RANGE_DW:
	case LK_RANGE_SEG_DW:
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

/* ---- time, work, randomness (bench_util.c) ---------------------------- */

uint64_t now_ns(void);
void sleep_ns(uint64_t ns);

/*
 * The busy loop's clock: the TSC on x86 (constant rate: "constant_tsc"),
 * elsewhere CLOCK_MONOTONIC.  calibrate_work() measures ticks_per_ns once
 * against CLOCK_MONOTONIC, so "1000 ns of work" is 1000 ns whatever the
 * core's clock frequency does.
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

extern double ticks_per_ns;
void calibrate_work(void);
uint64_t ns_to_ticks(uint64_t ns);

/* Spin from @t0 (a ticks() value just read) until @nticks have passed;
 * returns the last clock value read (>= t0 + nticks), so that the caller
 * can use it as a time stamp without reading the clock again. */
uint64_t work_from(uint64_t t0, uint64_t nticks);
/* Spin for @nticks from now. */
static inline uint64_t work(uint64_t nticks)
{
	return work_from(ticks(), nticks);
}

/* Time this thread spent runnable but waiting for a CPU (schedstat), ns. */
uint64_t runq_wait_ns(void);

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- context switches and futex calls (bench_util.c) ------------------- */

/* Voluntary + involuntary context switches of the whole process so far
 * (getrusage(RUSAGE_SELF): its threads, running or exited). */
uint64_t context_switches(void);

/*
 * A count of this process's futex(2) calls: the perf tracepoint
 * syscalls:sys_enter_futex (and _time64 where it exists) opened on the
 * calling thread with inherit, so that it counts the threads created after
 * it; a read sums them, running or exited.  While it is open, every system
 * call on the machine takes the traced path: runs under it are not timed.
 * futex_counter_open() fails for good once it failed (no tracefs, no
 * permission); futex_count_method says which method is used, or why none.
 */
struct futex_counter {
	int fd[2];
	int n;
};
bool futex_counter_open(struct futex_counter *c);
uint64_t futex_counter_read(const struct futex_counter *c);
void futex_counter_close(struct futex_counter *c);
extern char futex_count_method[256];

/* ---- single-wait histograms (bench_util.c) ----------------------------- */

/*
 * Log-linear: values below 16 ticks have a bucket each; above, every power
 * of two is cut into 16 buckets, so a bucket is at most 1/16 (6%) wide
 * relative to its values.  976 buckets cover 64-bit values.  Filled by one
 * thread, without allocation or atomics; merged after the join.
 */
#define HIST_SUB_BITS 4
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct wait_hist {
	uint64_t n;      /* values recorded */
	uint64_t max;    /* the largest, exact */
	uint32_t b[HIST_BUCKETS];
};

static inline unsigned hist_bucket(uint64_t v)
{
	unsigned msb, shift;

	if (v < HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) & (HIST_SUB - 1));
}

static inline void hist_add(struct wait_hist *h, uint64_t v)
{
	h->n++;
	h->b[hist_bucket(v)]++;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct wait_hist *into, const struct wait_hist *h);
/* The value below which a fraction @q of the values lie: the upper edge of
 * the bucket that holds it (at most 6% above the true quantile), capped at
 * the exact maximum.  0 for an empty histogram. */
uint64_t hist_quantile(const struct wait_hist *h, double q);

/* ---- statistics of samples (bench_util.c) ------------------------------ */

double median_of(const double *v, int n);
int median_index(const double *v, int n);  /* index of the (lower) median */
double mean_of(const double *v, int n);
double stddev_of(const double *v, int n);
double min_of(const double *v, int n);
double max_of(const double *v, int n);

/* ---- options (bench_options.c) ----------------------------------------- */

enum workload { WL_READ, WL_WRITE, WL_MIXED, WL_COUNT };
extern const char *const wl_name[WL_COUNT];
extern const char *const wl_title[WL_COUNT];

enum ranges { RG_FULL, RG_RANDOM, RG_DISJOINT, RG_COUNT };
extern const char *const rg_name[RG_COUNT];
extern const char *const rg_title[RG_COUNT];

struct options {
	bool quick, targets, progress;
	bool targets13;          /* --targets=13 (--targets=all: both) */
	int reps;
	uint64_t duration_ms;
	uint64_t work_in_ns, work_out_ns;
	int threads[MAX_THREADS];
	int nthreads_list;
	uint64_t pool;           /* units 0 .. pool (the torture's [0, 4096]) */
	uint64_t uncont_iters;
	uint64_t held_iters;
	uint64_t held_max;
	bool locks[LK_COUNT];    /* LK_RANGE / LK_RANGE_FIFO: --policy */
	bool wl[WL_COUNT], rg[RG_COUNT];
	const char *sections;    /* --sections, NULL: all */
	uint64_t file_chunk, file_chunks, file_pieces;
	const char *file_dir;
	const char *csv_path, *json_path; /* "-" is stdout */
	bool csv, json;
	uint64_t write_every[16]; /* write-ratio sweep: 1 write per N ops (0: none) */
	int nwrite_every;
	bool targets_word;       /* --targets=word (--targets=all: too) */
	int futex_reps;          /* futex-counted runs per lock and scenario */
	bool targets_many;       /* --targets=many (--targets=all: too) */
	bool targets_segments;   /* --targets=segments (--targets=all: too) */
	bool targets_readers;    /* --targets=readers (--targets=all: too) */
	const char *seg_tables;  /* --seg-tables: --targets=segments' tables, NULL: all */
};

extern struct options opt;
extern int ncpus;

/* Fills opt from the command line; exits 0 (--help) or 2 (bad usage). */
void parse_options(int argc, char **argv);
bool in_list(const char *list, const char *word);

/* The librangelock kinds selected by --locks and --policy, default first;
 * returns how many (0..2). */
int range_kinds(enum lock_kind *k);
/* The same with, after each, its fast-read-off kind when --locks selects
 * range-nofast (the default); returns how many (0..4). */
int range_kinds_nofast(enum lock_kind *k);

/* ---- progress line (bench_util.c) -------------------------------------- */

extern long progress_total;
void progress_start(void);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);

/* ---- result records (bench_output.c) ----------------------------------- */

/* Which acquisitions a wait statistic covers. */
enum wait_of { WAIT_ALL, WAIT_READ, WAIT_WRITE, WAIT_OF_COUNT };

struct rec {
	const char *section; /* "throughput", "uncontended", ...: the CSV's section */
	char tag[24];        /* targets: which scenario */
	int wl, rg;          /* workload, ranges (-1: n/a) */
	int threads;
	enum lock_kind lock;
	uint64_t held;       /* held: ranges held; file: chunk bytes */
	bool held_random;    /* held: random free unit (else a fixed one) */
	uint64_t work_in, work_out;
	const char *metric, *unit;
	bool higher_better;
	int n;
	double v[MAX_REPS];          /* the metric, one sample per repetition */
	double rd[MAX_REPS], wr[MAX_REPS];    /* reads/s, writes/s */
	double frd[MAX_REPS], fwr[MAX_REPS];  /* min/max per-thread count, per kind */
	uint64_t rmin[MAX_REPS], rmax[MAX_REPS], wmin[MAX_REPS], wmax[MAX_REPS];
	const char *extra_name;      /* JSON key of extra's maximum, or NULL */
	double extra[MAX_REPS];      /* file: torn chunks */
	double rq[MAX_REPS];         /* run-queue wait, % of thread time */
	/* Single waits (lock call to its return), ns, per repetition: the
	 * 99th percentile and the longest, of all, read and write acquisitions.
	 * has_wait: recorded in this row (see run_workload()). */
	bool has_wait;
	double wait_p99[WAIT_OF_COUNT][MAX_REPS], wait_max[WAIT_OF_COUNT][MAX_REPS];
	int nr, nw;                  /* reader / writer threads */
	uint64_t write_every;        /* read-mostly: 1 write per N ops (0: n/a) */
	uint64_t range_len;          /* random ranges of this many units (0: seed's) */
	/* Per acquisition: context switches of the process in each timed run
	 * (throughput records), and futex calls in nfutex extra untimed runs
	 * (measure_futex_calls(); 0: not counted). */
	double csw[MAX_REPS];
	double futex[MAX_REPS];
	int nfutex;
	double ratio;                /* vs pthread_rwlock, > 1 is faster */
	double pr_min, pr_max;       /* per-repetition paired ratios */
	bool has_ratio;
};

extern struct rec *recs;  /* addressed by index: rec_new() may move them */
extern int nrecs;
extern int check_failures;
extern double load_before[3], load_after[3];

struct rec *rec_new(const char *section, int wl, int rg, int threads,
		    enum lock_kind lock, const char *metric, const char *unit,
		    bool higher_better);
double rec_median(const struct rec *r);
bool same_point(const struct rec *a, const struct rec *b);
/* Index of the record of (section, tag, lock, workload, threads); exits if
 * there is none (lookup_rec(): -1). */
int find_rec(const char *section, const char *tag, enum lock_kind lock, int wl,
	     int threads);
int lookup_rec(const char *section, const char *tag, enum lock_kind lock, int wl,
	       int threads);
void compute_ratios(void);

/* ---- output (bench_output.c) ------------------------------------------- */

void read_machine(void);
void read_load(double l[3]);
void print_header(FILE *out);
/* One line of the table: "name median: ..., mean: ..., stddev: ...<tail>",
 * then the runq of @r (if not NULL). */
void print_line(FILE *out, const char *name, double med, double mean, double sd,
		const char *tail, const struct rec *r);
void ratio_str(char *buf, size_t n, const struct rec *r);
/* ", wait p99/max: A/B us" for @which, or "" when @r has no wait times. */
void wait_str(char *buf, size_t n, const struct rec *r, enum wait_of which);
/* ", W min/max: x, R min/max: y" for the kinds with two threads or more. */
void fair_str(char *buf, size_t n, const struct rec *r);
FILE *open_out(const char *path);
void json_str(FILE *f, const char *s);
void json_num(FILE *f, double v);   /* null for NaN and infinities */
void write_csv(FILE *f);
void write_json(FILE *f);

/* ---- the throughput workload (bench_throughput.c) ---------------------- */

struct run_result {
	double secs;
	uint64_t reads, writes;
	uint64_t rmin, rmax, wmin, wmax;
	int nr, nw;
	double runq_pct;
	bool exclusion_ok;
	bool has_wait;                       /* waits recorded */
	uint64_t wait_p99_ns[WAIT_OF_COUNT], wait_max_ns[WAIT_OF_COUNT];
	uint64_t csw;                        /* context switches of the process */
	bool futex_counted;                  /* shape->count_futex and it worked */
	uint64_t futex_calls;
};

/*
 * Extra shape of a workload (zero: as before).
 *  read_mostly: every thread reads, and writes once per write_every
 *      operations on average (chosen at random per operation; write_every
 *      0: never), as workload WL_MIXED;
 *  range_len: RG_RANDOM ranges are this many units long, at a random start
 *      (0: the seed's random start and end);
 *  count_futex: count the run's futex calls (struct futex_counter).
 */
struct work_shape {
	bool read_mostly;
	uint64_t write_every;
	uint64_t range_len;
	bool count_futex;
};

/* One run of @duration_ms; @ls_given: use this lock set (NULL: a new one). */
void run_workload_shaped(enum lock_kind kind, enum workload wl, enum ranges rg,
			 int nthreads, uint64_t work_in, uint64_t work_out,
			 uint64_t duration_ms, struct lockset *ls_given,
			 const struct work_shape *shape, struct run_result *res);
void run_workload(enum lock_kind kind, enum workload wl, enum ranges rg,
		  int nthreads, uint64_t work_in, uint64_t work_out,
		  uint64_t duration_ms, struct lockset *ls_given,
		  struct run_result *res);
/* One point (workload, ranges, threads, work) for every lock kind in
 * @kinds, opt.reps repetitions interleaved across the kinds.  Returns the
 * index of the first record (one per kind, in @kinds order). */
int measure_point(const char *section, const char *tag, const enum lock_kind *kinds,
		  int nk, enum workload wl, enum ranges rg, int threads,
		  uint64_t work_in, uint64_t work_out);
int measure_point_shaped(const char *section, const char *tag,
			 const enum lock_kind *kinds, int nk, enum workload wl,
			 enum ranges rg, int threads, uint64_t work_in, uint64_t work_out,
			 const struct work_shape *shape);
/* Futex calls per acquisition of the point measured by measure_point*() at
 * record @first (@nk kinds, the same @shape): opt.futex_reps more runs of
 * each kind, interleaved, under a futex counter; their throughput is not
 * kept (the counter slows every system call).  Nothing when counting is not
 * possible (futex_count_method says why). */
void measure_futex_calls(int first, int nk, const struct work_shape *shape);
/* The lock kinds of the throughput sections, in table order. */
int throughput_kinds(enum lock_kind *k);

/* ---- single-thread costs (bench_cost.c) -------------------------------- */

int measure_uncontended(const enum lock_kind *kinds, int nk, const char *tag);
int measure_held(const char *tag);
extern const uint64_t held_counts[];
extern const int nheld_counts;

/* ---- the section table (rangelock-bench.c) ----------------------------- */

struct bench_section {
	const char *name;        /* for --sections, and the CSV's section */
	bool needs_range;        /* skipped unless librangelock is selected */
	bool opt_in;             /* runs only when --sections names it */
	long (*steps)(void);     /* progress steps it will take */
	void (*run)(void);       /* measures, adds records */
	void (*print)(FILE *out);/* its part of the table */
};

extern const struct bench_section bench_section_uncontended;
extern const struct bench_section bench_section_held;
extern const struct bench_section bench_section_throughput;
extern const struct bench_section bench_section_file;
extern const struct bench_section bench_section_stats;
extern const struct bench_section bench_section_read_scaling;
extern const struct bench_section bench_section_write_ratio;

/* The statistics section's result, for JSON (empty what: not run). */
extern struct range_lock_stats lib_stats;
extern char lib_stats_what[160];

/* ---- --targets (bench_targets.c) --------------------------------------- */

void run_targets(FILE *out);
/* The rows of every target table built by run_targets() and
 * run_targets_word(), as JSON. */
void write_json_targets(FILE *f);

/*
 * Target rows, shared by the tables of bench_targets.c and
 * bench_targets_word.c: "scenario | librangelock | peer | value | target |
 * met? | spread | runq".  A table is a name (@table); its rows are printed
 * per librangelock policy (@kind).
 */
struct target_row {
	char scenario[64];
	const char *table;       /* "issue7", "issue12", "word" */
	enum lock_kind kind;     /* the librangelock policy of the row */
	char rl[48], base[48];   /* librangelock's value, the peer's */
	const char *peer;        /* the peer lock's name (lk_name), or NULL */
	double value;            /* the ratio, min/max or wait checked */
	double spread_lo, spread_hi;
	bool has_spread;
	const char *target;      /* "report": no target, measured only */
	bool met;
	bool report;
	double rq_med, rq_max;   /* run-queue wait of both sides, % */
};

struct target_row *trow_new(const char *table, enum lock_kind kind, const char *scenario);
/* The run-queue wait of the row: median and max over @a's and @b's runs. */
void target_runq(struct target_row *t, const struct rec *a, const struct rec *b);
/* met = value >= goal (or <= with @at_most); @report: no target, met? '-'. */
void set_goal(struct target_row *t, double value, const char *target, double goal,
	      bool at_most, bool report);
/* One table per policy of @rk: its rows of @table; @sw, @vw: widths of the
 * scenario and value columns. */
void print_target_tables(FILE *out, const char *table, const enum lock_kind *rk, int nrk,
			 const char *base_name, const char *value_name, int sw, int vw);
/* "<prefix>M Mops/s [min..max]" of a throughput record. */
void fmt_mops(char *buf, size_t n, const struct rec *r, const char *prefix);

/*
 * A full-range throughput scenario of a target table (every thread locks
 * [0, RANGE_LOCK_FULL]): its records are those of measure_point() with
 * section "throughput" and scenario @tag.
 */
struct full_scenario {
	char tag[24];
	enum workload wl;
	int threads;
	uint64_t in, out;         /* busy work inside and outside, ns */
	char label[40];           /* "4 writers", "4 readers + 4 writers" */
	double goal;              /* throughput goal, x the peer */
	const char *goal_text;
	double moonshot;          /* a second throughput goal (0: none) */
	const char *moonshot_text;
	bool waits;               /* single-wait rows */
	const struct work_shape *shape; /* NULL: the workload's plain roles */
};

/* Threads outnumber the CPUs 2:1 and 4:1, 1 us in + 1 us out: 2x writers,
 * 4x writers, 4x readers and writers (half each); tags "<prefix>-2x",
 * "<prefix>-4x".  Goals unset (0), waits on. */
#define NOVERSUB 3
void full_scenarios_oversub(struct full_scenario *o, const char *prefix);
/* opt.reps interleaved repetitions of @o for every lock of @kinds. */
int full_scenario_measure(const struct full_scenario *o, const enum lock_kind *kinds,
			  int nk);
/* The record of @o for lock @k, NULL if @k was not measured in it. */
const struct rec *full_scenario_rec(const struct full_scenario *o, enum lock_kind k);

/* How a table's rows are built. */
struct row_ctx {
	const char *table;
	enum lock_kind kind;      /* the librangelock policy */
	const char *peer_prefix;  /* before the peer's value ("mutex: "), or "" */
	bool report;              /* no targets: met? '-' */
	bool writers_only;        /* min/max judges writers only (else also readers) */
};

/* librangelock's throughput / @peer's: medians; spread: paired ratios. */
struct target_row *throughput_row(const struct row_ctx *c, const char *scenario,
				  const struct rec *rl, const struct rec *peer,
				  const char *target, double goal);
/* "<label>, min/max acquisitions", target >= 0.5. */
void fairness_row(const struct row_ctx *c, const char *label, const struct rec *rl,
		  const struct rec *peer);
/* "<label>, single wait p99 (ms)" <= 5 ms and "longest single wait" <= 20 ms. */
void wait_rows(const struct row_ctx *c, const char *label, const struct rec *rl,
	       const struct rec *peer);
/* "All locks in @title scenarios": every lock of @o side by side,
 * throughput, min/max, waits. */
void print_full_detail(FILE *out, const char *title, const struct full_scenario *o,
		       int no, const enum lock_kind *kinds, int nk);

/* ---- --targets=13 (bench_targets13.c) ---------------------------------- */

void run_targets13(FILE *out);
void write_json_targets13(FILE *f);

/* ---- --targets=word (bench_targets_word.c) ----------------------------- */

/* Its rows are target rows (table "word"): write_json_targets() writes them. */
void run_targets_word(FILE *out);

/* ---- --targets=many (bench_targets_many.c) ----------------------------- */

/* Its rows are target rows (table "many"): write_json_targets() writes them. */
void run_targets_many(FILE *out);

/* ---- --targets=segments (bench_targets_segments.c) --------------------- */

/* Its rows are target rows (table "segments"): write_json_targets() writes them. */
void run_targets_segments(FILE *out);
/* Its second part (bench_targets_segwide.c): whole-range requests on a
 * segmented tree, the stripe-size sweep, read-mostly ranges with stripes of
 * 256 units, the mixed row; each with and without segments in one run.
 * @tables: opt.seg_tables (NULL: every table). */
void run_targets_segwide(FILE *out);
bool seg_table_on(const char *name);

/* ---- --targets=readers (bench_targets_readers.c) ----------------------- */

/* Its rows are target rows (table "readers"): write_json_targets() writes them. */
void run_targets_readers(FILE *out);

#endif /* RANGELOCK_BENCH_H */
