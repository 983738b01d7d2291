/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=segments: requests that conflict with nothing.
 * The scenarios by which a tree whose key space is split into segments (so
 * that requests on different ranges share no internal lock and write no
 * common cache line; range_lock_tree_set_segments()) is judged, against the
 * same tree without segments (the "before").  Every number printed is
 * measured in this run; the program measures, it does not judge (a miss is
 * not a failure).
 *
 * The key space: units [0, SEG_UNITS - 1] = [0, 2^20 - 1] (1M units); every
 * range is SEG_LEN = 64 units long.
 *  - disjoint writers: thread i of n writes [i * 2^20 / n, + 63] again and
 *    again, 1 us of work inside, none outside (as --targets' row 4);
 *  - disjoint pounding: the same ranges, empty critical sections;
 *  - read-mostly: every operation a write with probability 1/10 or 1/100
 *    (drawn per operation), at a uniformly random start in
 *    [0, 2^20 - 64], 0.2 us in + 0.2 us out (as --targets=fast-read).
 * Each at 1, 2, 4 and 8 threads (and the CPU count and its double, if
 * other): more threads than CPUs on small machines.
 *
 * The locks, alternating in every repetition:
 *  - librangelock, default policy, and the FIFO tree (--policy), without
 *    segments;
 *  - the same trees with 64 segments by stripes of 2^14 units
 *    (LK_RANGE_SEG, LK_RANGE_FIFO_SEG): the geometry of the striped locks
 *    below, so that both split the key space alike;
 *  - 64 striped pthread_rwlocks (LK_STRIPED), the hand-made range lock a
 *    careful user would build for this key space: unit u belongs to stripe
 *    u / 16384 (contiguous blocks of 2^20 / 64 units; as the key space is
 *    64 blocks, this is (u / 16384) % 64), each rwlock on its own cache
 *    line; a range takes every stripe it touches, in ascending stripe
 *    order (no deadlock), and releases them.  With this mapping every
 *    range of these scenarios takes one stripe, at most two (a random
 *    64-unit range crosses a block border with probability 63/16384), and
 *    the disjoint ranges take distinct stripes: the best case of striping.
 *    (An interleaved mapping, stripe (u / 64) % 64, would put every
 *    disjoint range above in stripe 0, and make most random ranges take
 *    two stripes.)
 *  - one pthread_rwlock over everything (default attributes);
 *  - no lock at all: the ceiling (its writes race and are not checked).
 *
 * That is the first table ("disjoint" in --seg-tables); the rows where
 * requests meet many segments (whole-range requests, a stripe-size sweep,
 * read-mostly ranges on small stripes, the mixed row) follow, from
 * bench_targets_segwide.c.
 *
 * Checks (a failure makes the exit status 1):
 *  - every timed run: writers increment a per-unit counter at their
 *    range's first unit (plain load before the work, plain store after),
 *    and the counters must add up to the writes;
 *  - with --quick (ctest), every timed run is also shadowed: each thread
 *    marks every unit of its range in a shadow array while it holds it
 *    (atomic: writers 1 << 16, readers 1), and a writer that finds a unit
 *    marked, or a reader that finds a writer there, is an exclusion
 *    violation; and every written unit's counter is incremented;
 *  - before the timed runs (every mode), a counted pass: for each scenario
 *    at 2 and 8 threads, each thread does a fixed number of operations
 *    from a fixed seed under every lock (librangelock, striped, one
 *    rwlock), shadowed, with the random ranges packed into 192 starts
 *    around a stripe border (so that they collide all the time and often
 *    take two stripes): the locks must count the same writes and leave
 *    identical per-unit counters (the same increments, whatever the
 *    interleaving), with no violation and empty trees.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <unistd.h>

#define SEG_UNITS  (1u << 20)             /* the key space: [0, 2^20 - 1] */
#define SEG_LEN    64u                    /* every range: 64 units */
#define NSTRIPES   64u
#define STRIPE_W   (SEG_UNITS / NSTRIPES) /* 16384 units per stripe */
#define SH_WRITER  (1u << 16)             /* a writer in the shadow word */
#define COUNT_OPS  3000u                  /* the counted pass: ops per thread */

static inline unsigned stripe_of(uint64_t u)
{
	return (unsigned)((u / STRIPE_W) % NSTRIPES);
}

enum seg_scen { S_DISJ_1US, S_DISJ_EMPTY, S_MOSTLY_10, S_MOSTLY_100, S_COUNT };

struct seg_scenario {
	const char *tag;          /* the records' scenario (CSV) */
	const char *title;
	bool disjoint;            /* per-thread ranges, writers only */
	uint64_t write_every;     /* read-mostly: 1 write per N ops */
	uint64_t in, out;         /* busy work, ns */
};

static const struct seg_scenario scen[S_COUNT] = {
	{ "seg-disjoint-1us", "disjoint writers, 1 us inside", true, 0, 1000, 0 },
	{ "seg-disjoint-empty", "disjoint writers, empty CS", true, 0, 0, 0 },
	{ "seg-mostly-10", "read-mostly, 1 write in 10", false, 10, 200, 200 },
	{ "seg-mostly-100", "read-mostly, 1 write in 100", false, 100, 200, 200 },
};

#define MAX_SEG_THREADS 8
#define MAX_SEG_KINDS   7
static int tcount[MAX_SEG_THREADS], ntcount;
static enum lock_kind kinds[MAX_SEG_KINDS];
static int nkinds;
/* Record index per scenario, thread count and kind (-1: none). */
static int idx[S_COUNT][MAX_SEG_THREADS][MAX_SEG_KINDS];

/* ---- the workload ------------------------------------------------------ */

struct stripe {
	_Alignas(CACHELINE) pthread_rwlock_t rw;
};

struct seg_run {
	enum lock_kind kind;
	const struct seg_scenario *s;
	int nthreads;
	uint64_t in_ticks, out_ticks;
	uint64_t iters;           /* ops per thread (0: until stop) */
	bool checked;             /* shadow, every unit's counter */
	uint64_t lo, nstarts;     /* random ranges start in [lo, lo + nstarts) */
	struct lockset *ls;
	struct stripe *stripes;
	uint64_t *data;           /* SEG_UNITS counters, written under the lock */
	_Atomic uint32_t *shadow; /* SEG_UNITS, NULL unless checked */
	_Atomic int bad;
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

struct seg_worker {
	_Alignas(CACHELINE) pthread_t th;
	struct seg_run *run;
	int id;
	uint64_t rng;
	uint64_t nread, nwrite, sink, runq_ns, ns;
};

/* The shared buffers, made once (8 MB of counters, 4 MB of shadow). */
static uint64_t *seg_data;
static _Atomic uint32_t *seg_shadow;

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(CACHELINE, (n + CACHELINE - 1) / CACHELINE * CACHELINE);

	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	return p;
}

static inline void seg_lock(struct seg_run *r, struct range_lock *req, uint64_t start,
			    uint64_t last, bool write)
{
	switch (r->kind) {
	case LK_RANGE:
	case LK_RANGE_FIFO:
	case LK_RANGE_SEG:
	case LK_RANGE_FIFO_SEG:
		if (write)
			range_write_lock(&r->ls->tree, req);
		else
			range_read_lock(&r->ls->tree, req);
		break;
	case LK_STRIPED:
		/* ascending stripe order: no deadlock between ranges */
		for (unsigned s = stripe_of(start); s <= stripe_of(last); s++) {
			if (write)
				pthread_rwlock_wrlock(&r->stripes[s].rw);
			else
				pthread_rwlock_rdlock(&r->stripes[s].rw);
		}
		break;
	case LK_RW:
		if (write)
			pthread_rwlock_wrlock(&r->ls->rw);
		else
			pthread_rwlock_rdlock(&r->ls->rw);
		break;
	default:
		break;
	}
}

static inline void seg_unlock(struct seg_run *r, struct range_lock *req, uint64_t start,
			      uint64_t last, bool write)
{
	switch (r->kind) {
	case LK_RANGE:
	case LK_RANGE_FIFO:
	case LK_RANGE_SEG:
	case LK_RANGE_FIFO_SEG:
		if (write)
			range_write_unlock(&r->ls->tree, req);
		else
			range_read_unlock(&r->ls->tree, req);
		break;
	case LK_STRIPED:
		for (unsigned s = stripe_of(last) + 1; s-- > stripe_of(start);)
			pthread_rwlock_unlock(&r->stripes[s].rw);
		break;
	case LK_RW:
		pthread_rwlock_unlock(&r->ls->rw);
		break;
	default:
		break;
	}
}

/* Checked runs: mark [start, last] held; a conflict found is a violation. */
static void shadow_enter(struct seg_run *r, uint64_t start, uint64_t last, bool write)
{
	for (uint64_t u = start; u <= last; u++) {
		uint32_t old = atomic_fetch_add_explicit(&r->shadow[u], write ? SH_WRITER : 1,
							 memory_order_relaxed);

		if (write ? old != 0 : old >= SH_WRITER)
			atomic_store_explicit(&r->bad, 1, memory_order_relaxed);
	}
}

static void shadow_leave(struct seg_run *r, uint64_t start, uint64_t last, bool write)
{
	for (uint64_t u = start; u <= last; u++)
		atomic_fetch_sub_explicit(&r->shadow[u], write ? SH_WRITER : 1,
					  memory_order_relaxed);
}

static void *seg_worker_main(void *arg)
{
	struct seg_worker *w = arg;
	struct seg_run *r = w->run;
	const struct seg_scenario *s = r->s;
	const uint64_t in = r->in_ticks, out = r->out_ticks, every = s->write_every;
	const bool range = lk_is_range(r->kind), checked = r->checked;
	struct range_lock req;
	uint64_t start = 0, last, nread = 0, nwrite = 0, sink = 0, q0, t0, v;
	bool write = true;

	if (s->disjoint)
		start = (uint64_t)w->id * (SEG_UNITS / (uint64_t)r->nthreads);
	last = start + SEG_LEN - 1;
	range_lock_init(&req, start, last);

	pthread_barrier_wait(&r->bar);
	q0 = runq_wait_ns();
	t0 = now_ns();
	for (uint64_t i = 0; r->iters ? i < r->iters :
	     !atomic_load_explicit(&r->stop, memory_order_relaxed); i++) {
		if (!s->disjoint) {
			write = (xorshift64(&w->rng) >> 4) % every == 0;
			start = r->lo + (xorshift64(&w->rng) >> 4) % r->nstarts;
			last = start + SEG_LEN - 1;
			if (range)
				range_lock_init(&req, start, last);
		}
		seg_lock(r, &req, start, last, write);
		if (__builtin_expect(checked, 0)) {
			shadow_enter(r, start, last, write);
			for (uint64_t u = start; u <= last; u++) {
				if (write)
					r->data[u]++;
				else
					sink += r->data[u];
			}
			if (in)
				work(in);
			shadow_leave(r, start, last, write);
		} else {
			/* a plain read before the work and a plain write
			 * after it: overlapping writers lose updates */
			v = r->data[start];
			if (in)
				work(in);
			if (write)
				r->data[start] = v + 1;
			else
				sink += v;
		}
		seg_unlock(r, &req, start, last, write);
		if (write)
			nwrite++;
		else
			nread++;
		if (out)
			work(out);
	}
	w->ns = now_ns() - t0;
	w->runq_ns = runq_wait_ns() - q0;
	w->nread = nread;
	w->nwrite = nwrite;
	w->sink = sink;
	return NULL;
}

struct seg_result {
	double secs;
	uint64_t reads, writes;
	double runq_pct;
	uint64_t csw;
	uint64_t checksum;        /* of the per-unit counters */
};

/*
 * One run of scenario @s under @kind with @nthreads: timed (@iters 0, for
 * opt.duration_ms) or @iters operations per thread from fixed seeds.
 * @dense: random ranges start in [STRIPE_W - 2 * SEG_LEN, STRIPE_W +
 * SEG_LEN) instead of anywhere: they collide all the time, and cross a
 * stripe border one time in three.
 */
static void seg_run_once(enum lock_kind kind, const struct seg_scenario *s, int nthreads,
			 uint64_t iters, bool checked, bool dense, struct seg_result *res)
{
	struct seg_run *r = xalloc(sizeof(*r));
	struct seg_worker *w = xalloc(sizeof(*w) * (size_t)nthreads);
	uint64_t sum = 0, runq = 0, ns = 0, csw0, t0, t1;
	static uint64_t seed0 = 0x9e3779b97f4a7c15ull;

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->s = s;
	r->nthreads = nthreads;
	r->in_ticks = ns_to_ticks(s->in);
	r->out_ticks = ns_to_ticks(s->out);
	r->iters = iters;
	r->checked = checked;
	r->lo = dense ? STRIPE_W - 2 * SEG_LEN : 0;
	r->nstarts = dense ? 3 * SEG_LEN : SEG_UNITS - SEG_LEN + 1;
	r->ls = lockset_new(kind);
	r->stripes = xalloc(sizeof(struct stripe) * NSTRIPES);
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_rwlock_init(&r->stripes[i].rw, NULL);
	if (!seg_data) {
		seg_data = xalloc(sizeof(*seg_data) * SEG_UNITS);
		seg_shadow = xalloc(sizeof(*seg_shadow) * SEG_UNITS);
	}
	r->data = seg_data;
	memset(r->data, 0, sizeof(*r->data) * SEG_UNITS);
	if (checked) {
		r->shadow = seg_shadow;
		memset((void *)r->shadow, 0, sizeof(*r->shadow) * SEG_UNITS);
	}
	atomic_init(&r->stop, 0);
	atomic_init(&r->bad, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		/* counted runs: the same sequence under every lock */
		w[i].rng = iters ? (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)) ^
				   (uint64_t)(s - scen + 1) << 40
				 : (seed0 += 0x9e3779b97f4a7c15ull) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		if (pthread_create(&w[i].th, NULL, seg_worker_main, &w[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	csw0 = context_switches();
	t0 = now_ns();
	if (!iters) {
		sleep_ns(opt.duration_ms * 1000000ull);
		atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	}
	t1 = now_ns();

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		res->reads += w[i].nread;
		res->writes += w[i].nwrite;
		runq += w[i].runq_ns;
		ns = w[i].ns > ns ? w[i].ns : ns;
	}
	res->csw = context_switches() - csw0;
	res->secs = iters ? (double)ns / 1e9 : (double)(t1 - t0) / 1e9;
	res->runq_pct = ns ? 100.0 * (double)runq / ((double)ns * nthreads) : 0;
	for (uint64_t u = 0; u < SEG_UNITS; u++) {
		sum += r->data[u];
		res->checksum = res->checksum * 0x100000001b3ull + r->data[u];
	}
	if (kind != LK_NONE) {
		uint64_t want = checked ? res->writes * SEG_LEN : res->writes;

		if (sum != want) {
			fprintf(stderr, "\nrangelock-bench: --targets=segments: EXCLUSION "
				"BROKEN: %s %s %d threads: %" PRIu64 " unit writes expected, "
				"%" PRIu64 " seen\n", lk_name[kind], s->tag, nthreads, want, sum);
			check_failures++;
		}
		if (atomic_load(&r->bad)) {
			fprintf(stderr, "\nrangelock-bench: --targets=segments: EXCLUSION "
				"BROKEN: %s %s %d threads: the shadow array saw two "
				"conflicting holders of one unit\n", lk_name[kind], s->tag,
				nthreads);
			check_failures++;
		}
	}
	for (unsigned i = 0; i < NSTRIPES; i++)
		pthread_rwlock_destroy(&r->stripes[i].rw);
	free(r->stripes);
	if (lk_is_range(kind) && range_lock_tree_destroy(&r->ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: --targets=segments: tree not empty\n");
		check_failures++;
		range_lock_tree_init(&r->ls->tree);
	}
	lockset_free(r->ls);
	pthread_barrier_destroy(&r->bar);
	free(w);
	free(r);
}

/* ---- the counted pass -------------------------------------------------- */

/*
 * Every scenario at 2 and 8 threads, @COUNT_OPS operations per thread from
 * fixed seeds, under every lock that excludes, the random ranges dense
 * (192 starts around a stripe border): the same writes and the same
 * per-unit counters under each, no shadow violation (seg_run_once()).
 * Returns the failed checks.
 */
static int count_pass(void)
{
	static const int nt[2] = { 2, 8 };
	uint64_t ops = opt.quick ? COUNT_OPS : 4 * COUNT_OPS;
	int failures = 0, before = check_failures;

	for (int si = 0; si < S_COUNT; si++)
		for (int t = 0; t < 2; t++) {
			struct seg_result first = { 0 }, res;
			enum lock_kind firstk = LK_NONE;

			for (int k = 0; k < nkinds; k++) {
				if (kinds[k] == LK_NONE)
					continue;
				progress("segments count %s %dthr %s", scen[si].tag, nt[t],
					 lk_name[kinds[k]]);
				seg_run_once(kinds[k], &scen[si], nt[t], ops, true, true, &res);
				if (res.reads + res.writes != ops * (uint64_t)nt[t]) {
					fprintf(stderr, "rangelock-bench: --targets=segments: "
						"%s %s %d threads: %" PRIu64 " operations, "
						"%" PRIu64 " expected\n", lk_name[kinds[k]],
						scen[si].tag, nt[t], res.reads + res.writes,
						ops * (uint64_t)nt[t]);
					failures++;
				}
				if (firstk == LK_NONE) {
					first = res;
					firstk = kinds[k];
				} else if (res.writes != first.writes ||
					   res.checksum != first.checksum) {
					fprintf(stderr, "rangelock-bench: --targets=segments: "
						"%s %d threads: %s counted %" PRIu64 " writes "
						"(counters %016" PRIx64 "), %s %" PRIu64
						" (%016" PRIx64 ")\n", scen[si].tag, nt[t],
						lk_name[kinds[k]], res.writes, res.checksum,
						lk_name[firstk], first.writes, first.checksum);
					failures++;
				}
			}
		}
	check_failures += failures;
	return check_failures - before;
}

/* ---- measuring --------------------------------------------------------- */

static void add_thread_count(int t)
{
	int i;

	if (t < 1 || t > MAX_THREADS || ntcount == MAX_SEG_THREADS)
		return;
	for (i = 0; i < ntcount; i++)
		if (tcount[i] == t)
			return;
	for (i = ntcount; i > 0 && tcount[i - 1] > t; i--)
		tcount[i] = tcount[i - 1];
	tcount[i] = t;
	ntcount++;
}

static int tindex(int threads)
{
	for (int i = 0; i < ntcount; i++)
		if (tcount[i] == threads)
			return i;
	return -1;
}

static int kindex(enum lock_kind k)
{
	for (int i = 0; i < nkinds; i++)
		if (kinds[i] == k)
			return i;
	return -1;
}

static const struct rec *seg_rec(int si, int threads, enum lock_kind k)
{
	int t = tindex(threads), ki = kindex(k);

	if (t < 0 || ki < 0 || idx[si][t][ki] < 0)
		return NULL;
	return &recs[idx[si][t][ki]];
}

static void measure_seg_point(int si, int t)
{
	const struct seg_scenario *s = &scen[si];
	int first = nrecs;

	for (int k = 0; k < nkinds; k++) {
		struct rec *r = rec_new("segments", s->disjoint ? WL_WRITE : WL_MIXED,
					s->disjoint ? RG_DISJOINT : RG_RANDOM, tcount[t], kinds[k],
					"ops_per_s", "ops/s", true);

		snprintf(r->tag, sizeof(r->tag), "%s", s->tag);
		r->work_in = s->in;
		r->work_out = s->out;
		r->write_every = s->write_every;
		r->range_len = SEG_LEN;
		idx[si][t][k] = first + k;
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int k = 0; k < nkinds; k++) {
			struct rec *r = &recs[first + k];
			struct seg_result res;
			int n = r->n;

			progress("segments %s %dthr %s rep %d/%d", s->tag, tcount[t],
				 lk_name[kinds[k]], rep + 1, opt.reps);
			seg_run_once(kinds[k], s, tcount[t], 0, opt.quick, false, &res);
			r->rd[n] = (double)res.reads / res.secs;
			r->wr[n] = (double)res.writes / res.secs;
			r->v[n] = r->rd[n] + r->wr[n];
			r->rq[n] = res.runq_pct;
			r->csw[n] = res.reads + res.writes ?
				    (double)res.csw / (double)(res.reads + res.writes) : NAN;
			r->frd[n] = r->fwr[n] = 1;
			r->nr = s->disjoint ? 0 : tcount[t];
			r->nw = tcount[t];
			r->n++;
		}
}

/* ---- rows -------------------------------------------------------------- */

static void target_rows(enum lock_kind k)
{
	/* targets are the segmented default tree's; the others' rows report
	 * (the trees without segments are the "before") */
	const bool rep = k != LK_RANGE_SEG;
	const struct row_ctx cs = { "segments", k, "striped: ", rep, true };
	const struct row_ctx cr = { "segments", k, "rwlock: ", rep, false };
	const struct row_ctx cn = { "segments", k, "no lock: ", rep, false };
	const struct row_ctx c1 = { "segments", k, "1 thr: ", rep, true };
	const struct row_ctx rs = { "segments", k, "striped: ", true, true };
	const struct row_ctx rr = { "segments", k, "rwlock: ", true, false };
	const struct row_ctx r1 = { "segments", k, "1 thr: ", true, true };
	char s[64];

	throughput_row(&cs, "disjoint writers 1us, 2 thr, vs striped", seg_rec(S_DISJ_1US, 2, k),
		       seg_rec(S_DISJ_1US, 2, LK_STRIPED), ">= 1.0x striped", 1.0);
	throughput_row(&cs, "  (same run, moonshot)", seg_rec(S_DISJ_1US, 2, k),
		       seg_rec(S_DISJ_1US, 2, LK_STRIPED), ">= 1.2x striped", 1.2);
	throughput_row(&c1, "disjoint empty CS, 2 thr / 1 thr", seg_rec(S_DISJ_EMPTY, 2, k),
		       seg_rec(S_DISJ_EMPTY, 1, k), ">= 1.8x 1 thr", 1.8);
	throughput_row(&cr, "read-mostly 1/10, 2 thr, vs rwlock", seg_rec(S_MOSTLY_10, 2, k),
		       seg_rec(S_MOSTLY_10, 2, LK_RW), ">= 1.4x rwlock", 1.4);
	throughput_row(&cr, "read-mostly 1/100, 2 thr, vs rwlock", seg_rec(S_MOSTLY_100, 2, k),
		       seg_rec(S_MOSTLY_100, 2, LK_RW), ">= 1.2x rwlock", 1.2);
	throughput_row(&cn, "  (moonshot: the no-lock ceiling)", seg_rec(S_MOSTLY_100, 2, k),
		       seg_rec(S_MOSTLY_100, 2, LK_NONE), ">= 0.95x no lock", 0.95);
	/* more threads than CPUs (and the CPU count, if not 2): report */
	for (int t = 0; t < ntcount; t++) {
		int n = tcount[t];

		if (n <= 2)
			continue;
		snprintf(s, sizeof(s), "disjoint writers 1us, %d thr, vs striped", n);
		throughput_row(&rs, s, seg_rec(S_DISJ_1US, n, k),
			       seg_rec(S_DISJ_1US, n, LK_STRIPED), "report", 0);
		snprintf(s, sizeof(s), "disjoint empty CS, %d thr / 1 thr", n);
		throughput_row(&r1, s, seg_rec(S_DISJ_EMPTY, n, k),
			       seg_rec(S_DISJ_EMPTY, 1, k), "report", 0);
		snprintf(s, sizeof(s), "read-mostly 1/10, %d thr, vs rwlock", n);
		throughput_row(&rr, s, seg_rec(S_MOSTLY_10, n, k),
			       seg_rec(S_MOSTLY_10, n, LK_RW), "report", 0);
		snprintf(s, sizeof(s), "read-mostly 1/100, %d thr, vs rwlock", n);
		throughput_row(&rr, s, seg_rec(S_MOSTLY_100, n, k),
			       seg_rec(S_MOSTLY_100, n, LK_RW), "report", 0);
	}
}

static void print_detail(FILE *out)
{
	const struct rec *r;

	fprintf(out, "Every lock (Mops/s, median [min..max] over the repetitions; "
		"runq: median %% of the run's thread time waiting for a CPU):\n\n");
	fprintf(out, "| scenario | threads |");
	for (int k = 0; k < nkinds; k++)
		fprintf(out, " %s |", lk_name[kinds[k]]);
	fprintf(out, " range / striped | range / rwlock | range / no lock | runq %% |\n|");
	for (int c = 0; c < 2 + nkinds + 4; c++)
		fprintf(out, " --- |");
	fprintf(out, "\n");
	for (int si = 0; si < S_COUNT; si++)
		for (int t = 0; t < ntcount; t++) {
			const struct rec *rl = seg_rec(si, tcount[t], kinds[0]);
			double q[MAX_SEG_KINDS * MAX_REPS];
			int nq = 0;

			fprintf(out, "| %s | %d |", scen[si].title, tcount[t]);
			for (int k = 0; k < nkinds; k++) {
				r = seg_rec(si, tcount[t], kinds[k]);
				fprintf(out, " %.4g [%.3g..%.3g] |", rec_median(r) / 1e6,
					min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
				for (int j = 0; j < r->n; j++)
					q[nq++] = r->rq[j];
			}
			fprintf(out, " %.2f | %.2f | %.2f | %.1f |\n",
				rec_median(rl) / rec_median(seg_rec(si, tcount[t], LK_STRIPED)),
				rec_median(rl) / rec_median(seg_rec(si, tcount[t], LK_RW)),
				rec_median(rl) / rec_median(seg_rec(si, tcount[t], LK_NONE)),
				median_of(q, nq));
		}
	fprintf(out, "\n(range: %s.)  Scaling of the empty critical sections, n threads / "
		"1 thread, medians:\n\n| lock |", lk_name[kinds[0]]);
	for (int t = 0; t < ntcount; t++)
		if (tcount[t] > 1)
			fprintf(out, " %d / 1 |", tcount[t]);
	fprintf(out, "\n| --- |");
	for (int t = 0; t < ntcount; t++)
		if (tcount[t] > 1)
			fprintf(out, " --- |");
	fprintf(out, "\n");
	for (int k = 0; k < nkinds; k++) {
		const struct rec *one = seg_rec(S_DISJ_EMPTY, 1, kinds[k]);

		fprintf(out, "| %s |", lk_name[kinds[k]]);
		for (int t = 0; t < ntcount; t++)
			if (tcount[t] > 1 && one)
				fprintf(out, " %.2f |",
					rec_median(seg_rec(S_DISJ_EMPTY, tcount[t], kinds[k])) /
					rec_median(one));
		fprintf(out, "\n");
	}
	r = seg_rec(S_MOSTLY_10, 2, kinds[0]);
	fprintf(out, "\nread-mostly, 2 threads: writes as %% of operations (median, %s): "
		"1/10 %.2f%%", lk_name[kinds[0]], 100 * median_of(r->wr, r->n) / rec_median(r));
	r = seg_rec(S_MOSTLY_100, 2, kinds[0]);
	fprintf(out, ", 1/100 %.2f%%\n\n", 100 * median_of(r->wr, r->n) / rec_median(r));
}

static void run_disjoint(FILE *out)
{
	enum lock_kind rk[4];
	int nrk = range_kinds(rk), cf;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets=segments needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	ntcount = 0;
	add_thread_count(1);
	add_thread_count(2);
	add_thread_count(4);
	add_thread_count(8);
	add_thread_count(ncpus);
	add_thread_count(2 * ncpus);
	nkinds = 0;
	for (int p = 0; p < nrk; p++)
		kinds[nkinds++] = rk[p];
	/* ... and each of them split into segments, geometry as the stripes */
	for (int p = nrk; p-- > 0;)
		rk[nrk + p] = rk[p] == LK_RANGE_FIFO ? LK_RANGE_FIFO_SEG : LK_RANGE_SEG;
	nrk *= 2;
	for (int p = nrk / 2; p < nrk; p++)
		kinds[nkinds++] = rk[p];
	kinds[nkinds++] = LK_STRIPED;
	kinds[nkinds++] = LK_RW;
	kinds[nkinds++] = LK_NONE;
	memset(idx, -1, sizeof(idx));

	progress_total = (opt.targets || opt.targets13 || opt.targets_word ||
			  opt.targets_many ? progress_total : 0) +
			 (long)S_COUNT * 2 * (nkinds - 1) +
			 (long)opt.reps * S_COUNT * ntcount * nkinds;
	cf = count_pass();
	for (int si = 0; si < S_COUNT; si++)
		for (int t = 0; t < ntcount; t++)
			measure_seg_point(si, t);
	progress_end();

	for (int p = 0; p < nrk; p++)
		target_rows(rk[p]);

	fprintf(out, "== Targets (ranges that conflict with nothing): %d CPUs, median of %d "
		"interleaved repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps,
		opt.duration_ms);
	fprintf(out, "key space [0, %u], every range %u units; disjoint: thread i of n "
		"writes [i * %u / n, + %u], 1 us in (or empty CS), 0 out;\n  read-mostly: "
		"each op a write with probability 1/N, random start, 0.2 us in + 0.2 us out\n",
		SEG_UNITS - 1, SEG_LEN, SEG_UNITS, SEG_LEN - 1);
	fprintf(out, "striped: %u pthread_rwlocks, one cache line each, unit u in stripe "
		"u / %u (= (u / %u) %% %u), a range takes its stripes in ascending order\n"
		"  (here one each, two when a random range crosses a block border); rwlock: "
		"one pthread_rwlock for everything; no lock: the ceiling\n", NSTRIPES,
		STRIPE_W, STRIPE_W, NSTRIPES);
	fprintf(out, "values: median [min..max] over the repetitions; value: ratio of the "
		"medians; spread: min..max of the per-repetition paired ratios;\n  runq: "
		"median/max %% of the measuring threads' time spent waiting for a CPU; "
		"targets apply to the default policy with segments (the others: met? '-')\n");
	fprintf(out, "checks: counted pass (%u ops per thread, fixed seeds, 2 and 8 threads, "
		"every lock, shadowed, random ranges dense): %s;\n  timed runs %s\n\n",
		opt.quick ? COUNT_OPS : 4 * COUNT_OPS,
		cf ? "FAILED" : "same writes, same counters, no violation",
		opt.quick ? "shadowed too (--quick)" : "checked by the counter of each "
		"range's first unit");
	print_target_tables(out, "segments", rk, nrk, "baseline", "value", 42, 38);
	print_detail(out);
}

void run_targets_segments(FILE *out)
{
	if (seg_table_on("disjoint"))
		run_disjoint(out);
	run_targets_segwide(out);
}
