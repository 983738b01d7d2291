/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=many: the cost of several ranges in one arrival
 * (range_lock_many()) and of growing a held range (range_lock_grow()),
 * against what users do without them.  Every number printed is measured in
 * this run; the program measures, it does not judge (a miss is not a
 * failure).
 *
 * Uncontended, one thread, ns per operation (one "pair"), each case a timed
 * loop; in every repetition the cases alternate, so that a case and its
 * baseline are paired:
 *  - a set of 2 disjoint write ranges ([0, 99], [200, 299]):
 *    range_lock_many + range_unlock_many, and range_lock_many + two single
 *    unlocks, against two single write lock calls + two unlocks on the same
 *    ranges (the first single call takes the empty tree's lock-word fast
 *    path, the second then materialises it: what users get, measured as
 *    is); target: the set costs at most 1.3x the two singles;
 *  - the same for read sets (there the first single read is a fast read);
 *  - a held request grown by 1 unit and shrunk back (range_lock_grow +
 *    range_lock_shrink) against unlock + relock of the bigger range, and
 *    unlock + relock of the first one again (report only).
 * Contended (report only): 2 x CPUs threads, each taking 2 random disjoint
 * ranges (2 of 16 slots of 4 units) for writing, 1 us inside and 1 us
 * outside: as one set, against the same two ranges one after the other in
 * sorted order (the deadlock-free way without sets), and against one
 * pthread_mutex / pthread_rwlock write lock for both (throughput of pairs;
 * ratios of medians, spread: per-repetition paired ratios).
 *
 * Instruction counts of the uncontended cases (load-independent):
 * bench/many_loop.c under Callgrind (docs/benchmarks.md).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <time.h>

/* ---- uncontended ------------------------------------------------------- */

enum ucase {
	U_MANY_W, U_MANY1_W, U_SINGLE_W,
	U_MANY_R, U_MANY1_R, U_SINGLE_R,
	U_GROW_W, U_RELOCK_W, U_GROW_R, U_RELOCK_R,
	U_COUNT
};

static const char *const ucase_tag[U_COUNT] = {
	"many-w", "many-1unlocks-w", "singles-w",
	"many-r", "many-1unlocks-r", "singles-r",
	"grow-shrink-w", "relock-w", "grow-shrink-r", "relock-r",
};

static bool ucase_write(enum ucase c)
{
	return c <= U_SINGLE_W || c == U_GROW_W || c == U_RELOCK_W;
}

static inline void lock1(struct range_lock_tree *t, struct range_lock *l, bool w)
{
	if (w)
		range_write_lock(t, l);
	else
		range_read_lock(t, l);
}

static inline void unlock1(struct range_lock_tree *t, struct range_lock *l, bool w)
{
	if (w)
		range_write_unlock(t, l);
	else
		range_read_unlock(t, l);
}

static void ucase_loop(struct range_lock_tree *t, enum ucase c, struct range_lock *a,
		       struct range_lock *b, const struct range_lock_item *items,
		       uint64_t iters)
{
	bool w = ucase_write(c);

	switch (c) {
	case U_MANY_W:
	case U_MANY_R:
		for (uint64_t i = 0; i < iters; i++) {
			range_lock_many(t, items, 2);
			range_unlock_many(t, items, 2);
		}
		break;
	case U_MANY1_W:
	case U_MANY1_R:
		for (uint64_t i = 0; i < iters; i++) {
			range_lock_many(t, items, 2);
			unlock1(t, a, w);
			unlock1(t, b, w);
		}
		break;
	case U_SINGLE_W:
	case U_SINGLE_R:
		for (uint64_t i = 0; i < iters; i++) {
			lock1(t, a, w);
			lock1(t, b, w);
			unlock1(t, a, w);
			unlock1(t, b, w);
		}
		break;
	case U_GROW_W:
	case U_GROW_R: /* a held as [0, 99] */
		for (uint64_t i = 0; i < iters; i++) {
			if (range_lock_grow(t, a, 0, 100) || range_lock_shrink(t, a, 0, 99)) {
				fprintf(stderr, "rangelock-bench: grow/shrink failed\n");
				exit(2);
			}
		}
		break;
	case U_RELOCK_W:
	case U_RELOCK_R: /* a held as [0, 99]; b is [0, 100] */
		for (uint64_t i = 0; i < iters; i++) {
			unlock1(t, a, w);
			lock1(t, b, w);
			unlock1(t, b, w);
			lock1(t, a, w);
		}
		break;
	default:
		break;
	}
}

/* One timed run of case @c in a new tree of policy @kind: ns per pair. */
static double ucase_ns(enum lock_kind kind, enum ucase c, uint64_t iters)
{
	struct lockset *ls = lockset_new(kind);
	struct range_lock a, b;
	struct range_lock_item items[2];
	bool w = ucase_write(c), held = c >= U_GROW_W;
	int mode = w ? RANGE_LOCK_WRITE : RANGE_LOCK_READ;
	uint64_t t0, t1;

	range_lock_init(&a, 0, 99);
	range_lock_init(&b, held ? 0 : 200, held ? 100 : 299);
	items[0] = (struct range_lock_item){ &a, mode };
	items[1] = (struct range_lock_item){ &b, mode };
	if (held)
		lock1(&ls->tree, &a, w);
	ucase_loop(&ls->tree, c, &a, &b, items, iters / 10 + 1); /* warm up */
	t0 = now_ns();
	ucase_loop(&ls->tree, c, &a, &b, items, iters);
	t1 = now_ns();
	if (held)
		unlock1(&ls->tree, &a, w);
	if (range_lock_tree_destroy(&ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: --targets=many: tree not empty after %s\n",
			ucase_tag[c]);
		check_failures++;
	}
	lockset_free(ls);
	return (double)(t1 - t0) / (double)iters;
}

static int measure_many_uncontended(const enum lock_kind *rk, int nrk, uint64_t iters)
{
	int first = nrecs;

	for (int p = 0; p < nrk; p++)
		for (int c = 0; c < U_COUNT; c++) {
			struct rec *r = rec_new("many", ucase_write(c) ? WL_WRITE : WL_READ,
						RG_DISJOINT, 1, rk[p], "ns_per_pair", "ns", false);
			snprintf(r->tag, sizeof(r->tag), "%s", ucase_tag[c]);
			r->work_in = r->work_out = 0;
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int p = 0; p < nrk; p++)
			for (int c = 0; c < U_COUNT; c++) {
				struct rec *r = &recs[first + p * U_COUNT + c];
				uint64_t q0, t0;

				progress("many uncontended %s %s rep %d/%d", ucase_tag[c],
					 lk_name[rk[p]], rep + 1, opt.reps);
				q0 = runq_wait_ns();
				t0 = now_ns();
				r->v[r->n] = ucase_ns(rk[p], (enum ucase)c, iters);
				r->rq[r->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
						(double)(now_ns() - t0);
			}
	return first;
}

/* ---- contended: sets of 2 random ranges -------------------------------- */

#define NSLOTS    16
#define SLOT_LEN  4

enum chow { C_SET, C_SORTED, C_MUTEX, C_RWLOCK, C_COUNT };
static const char *const chow_tag[C_COUNT] = {
	"pairs-set", "pairs-sorted", "pairs-one-lock", "pairs-one-lock"
};

struct cshared {
	struct lockset *ls;
	enum chow how;
	_Atomic int go, stop;
	_Atomic int busy[NSLOTS]; /* holders of each slot: 0 or 1 */
	_Atomic int bad;
	uint64_t in, out;
};

struct cthread {
	_Alignas(CACHELINE) struct cshared *sh;
	pthread_t th;
	uint64_t seed, pairs, runq_ns, ns;
};

static void slot_enter(struct cshared *sh, int s)
{
	if (atomic_fetch_add_explicit(&sh->busy[s], 1, memory_order_relaxed) != 0)
		atomic_store_explicit(&sh->bad, 1, memory_order_relaxed);
}

static void slot_leave(struct cshared *sh, int s)
{
	atomic_fetch_sub_explicit(&sh->busy[s], 1, memory_order_relaxed);
}

static void *cthread_main(void *arg)
{
	struct cthread *ct = arg;
	struct cshared *sh = ct->sh;
	struct range_lock a, b;
	struct range_lock_item items[2];
	uint64_t tin = ns_to_ticks(sh->in), tout = ns_to_ticks(sh->out), q0, t0, n = 0;

	while (!atomic_load_explicit(&sh->go, memory_order_acquire))
		;
	q0 = runq_wait_ns();
	t0 = now_ns();
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		int s1 = (int)(xorshift64(&ct->seed) % NSLOTS);
		int s2 = (int)(xorshift64(&ct->seed) % (NSLOTS - 1));
		int lo, hi;

		if (s2 >= s1)
			s2++;
		lo = s1 < s2 ? s1 : s2;
		hi = s1 < s2 ? s2 : s1;
		switch (sh->how) {
		case C_SET: /* in the random order: the call does not care */
			range_lock_init(&a, (uint64_t)s1 * SLOT_LEN, (uint64_t)s1 * SLOT_LEN + SLOT_LEN - 1);
			range_lock_init(&b, (uint64_t)s2 * SLOT_LEN, (uint64_t)s2 * SLOT_LEN + SLOT_LEN - 1);
			items[0] = (struct range_lock_item){ &a, RANGE_LOCK_WRITE };
			items[1] = (struct range_lock_item){ &b, RANGE_LOCK_WRITE };
			range_lock_many(&sh->ls->tree, items, 2);
			break;
		case C_SORTED:
			range_lock_init(&a, (uint64_t)lo * SLOT_LEN, (uint64_t)lo * SLOT_LEN + SLOT_LEN - 1);
			range_lock_init(&b, (uint64_t)hi * SLOT_LEN, (uint64_t)hi * SLOT_LEN + SLOT_LEN - 1);
			range_write_lock(&sh->ls->tree, &a);
			range_write_lock(&sh->ls->tree, &b);
			break;
		case C_MUTEX:
			pthread_mutex_lock(&sh->ls->mtx);
			break;
		case C_RWLOCK:
			pthread_rwlock_wrlock(&sh->ls->rw);
			break;
		default:
			break;
		}
		slot_enter(sh, lo);
		slot_enter(sh, hi);
		if (tin)
			work(tin);
		slot_leave(sh, lo);
		slot_leave(sh, hi);
		switch (sh->how) {
		case C_SET:
			range_unlock_many(&sh->ls->tree, items, 2);
			break;
		case C_SORTED:
			range_write_unlock(&sh->ls->tree, &b);
			range_write_unlock(&sh->ls->tree, &a);
			break;
		case C_MUTEX:
			pthread_mutex_unlock(&sh->ls->mtx);
			break;
		case C_RWLOCK:
			pthread_rwlock_unlock(&sh->ls->rw);
			break;
		default:
			break;
		}
		n++;
		if (tout)
			work(tout);
	}
	ct->ns = now_ns() - t0;
	ct->runq_ns = runq_wait_ns() - q0;
	ct->pairs = n;
	return NULL;
}

/* One run: pairs per second; *rq: run-queue wait, % of the threads' time. */
static double contended_run(enum lock_kind kind, enum chow how, int nthreads, double *rq)
{
	struct cshared *sh = aligned_alloc(CACHELINE, sizeof(*sh));
	struct cthread *ct = aligned_alloc(CACHELINE, sizeof(*ct) * (size_t)nthreads);
	uint64_t pairs = 0, rqns = 0, ns = 0;
	static uint64_t seed0 = 0x9e3779b97f4a7c15ull;

	if (!sh || !ct) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(sh, 0, sizeof(*sh));
	sh->ls = lockset_new(kind);
	sh->how = how;
	sh->in = 1000;
	sh->out = 1000;
	for (int i = 0; i < nthreads; i++) {
		memset(&ct[i], 0, sizeof(ct[i]));
		ct[i].sh = sh;
		ct[i].seed = (seed0 += 0x9e3779b97f4a7c15ull) | 1;
		if (pthread_create(&ct[i].th, NULL, cthread_main, &ct[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	atomic_store_explicit(&sh->go, 1, memory_order_release);
	sleep_ns(opt.duration_ms * 1000000ull);
	atomic_store_explicit(&sh->stop, 1, memory_order_relaxed);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(ct[i].th, NULL);
		pairs += ct[i].pairs;
		rqns += ct[i].runq_ns;
		ns = ct[i].ns > ns ? ct[i].ns : ns;
	}
	if (atomic_load(&sh->bad)) {
		fprintf(stderr, "rangelock-bench: --targets=many: two holders of one slot "
			"(%s, %s)\n", lk_name[kind], chow_tag[how]);
		check_failures++;
	}
	if (lk_is_range(kind) && range_lock_tree_destroy(&sh->ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: --targets=many: tree not empty\n");
		check_failures++;
	}
	lockset_free(sh->ls);
	free(sh);
	free(ct);
	*rq = ns ? 100.0 * (double)rqns / ((double)ns * nthreads) : 0;
	return ns ? (double)pairs / ((double)ns / 1e9) : 0;
}

/* Records: per policy a set and a sorted row, then mutex, rwlock. */
static int measure_many_contended(const enum lock_kind *rk, int nrk, int nthreads)
{
	int first = nrecs, nruns = 2 * nrk + 2;
	enum lock_kind kind[2 * 2 + 2];
	enum chow how[2 * 2 + 2];

	for (int p = 0; p < nrk; p++) {
		kind[2 * p] = rk[p];
		how[2 * p] = C_SET;
		kind[2 * p + 1] = rk[p];
		how[2 * p + 1] = C_SORTED;
	}
	kind[2 * nrk] = LK_MUTEX;
	how[2 * nrk] = C_MUTEX;
	kind[2 * nrk + 1] = LK_RW;
	how[2 * nrk + 1] = C_RWLOCK;
	for (int i = 0; i < nruns; i++) {
		struct rec *r = rec_new("many", WL_WRITE, RG_RANDOM, nthreads, kind[i],
					"pairs_per_s", "pairs/s", true);
		snprintf(r->tag, sizeof(r->tag), "%s", chow_tag[how[i]]);
		r->work_in = r->work_out = 1000;
		r->nw = nthreads;
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int i = 0; i < nruns; i++) {
			struct rec *r = &recs[first + i];

			progress("many contended %s %s rep %d/%d", chow_tag[how[i]],
				 lk_name[kind[i]], rep + 1, opt.reps);
			r->v[r->n] = contended_run(kind[i], how[i], nthreads, &r->rq[r->n]);
			r->n++;
		}
	return first;
}

/* ---- rows -------------------------------------------------------------- */

static void fmt_ns(char *buf, size_t n, const char *prefix, const struct rec *r)
{
	snprintf(buf, n, "%s%.1f ns [%.1f..%.1f]", prefix, rec_median(r), min_of(r->v, r->n),
		 max_of(r->v, r->n));
}

static void fmt_pairs(char *buf, size_t n, const char *prefix, const struct rec *r)
{
	snprintf(buf, n, "%s%.3g Mpairs/s [%.3g..%.3g]", prefix, rec_median(r) / 1e6,
		 min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
}

/* value = median of @a / median of @b; spread: per-repetition a/b. */
static void ratio_row(const char *scenario, enum lock_kind k, const struct rec *a,
		      const struct rec *b, const char *bprefix, const char *target,
		      double goal, bool at_most, bool report, bool is_ns)
{
	struct target_row *t = trow_new("many", k, scenario);
	double pr[MAX_REPS];
	int n = a->n < b->n ? a->n : b->n;

	if (is_ns) {
		fmt_ns(t->rl, sizeof(t->rl), "", a);
		fmt_ns(t->base, sizeof(t->base), bprefix, b);
	} else {
		fmt_pairs(t->rl, sizeof(t->rl), "", a);
		fmt_pairs(t->base, sizeof(t->base), bprefix, b);
	}
	t->peer = lk_name[b->lock];
	for (int i = 0; i < n; i++)
		pr[i] = a->v[i] / b->v[i];
	t->spread_lo = min_of(pr, n);
	t->spread_hi = max_of(pr, n);
	t->has_spread = n > 0;
	set_goal(t, rec_median(a) / rec_median(b), target, goal, at_most, report);
	target_runq(t, a, b);
}

static void many_rows(enum lock_kind k, int u0, int c0, int p, int nrk)
{
	const struct rec *u = &recs[u0 + p * U_COUNT];
	const struct rec *set = &recs[c0 + 2 * p], *sorted = &recs[c0 + 2 * p + 1];
	const struct rec *mtx = &recs[c0 + 2 * nrk], *rw = &recs[c0 + 2 * nrk + 1];

	ratio_row("2 write ranges: set + unlock_many (ns)", k, &u[U_MANY_W], &u[U_SINGLE_W],
		  "2 singles: ", "<= 1.3x singles", 1.3, true, false, true);
	ratio_row("2 write ranges: set + 2 single unlocks", k, &u[U_MANY1_W], &u[U_SINGLE_W],
		  "2 singles: ", "<= 1.3x singles", 1.3, true, false, true);
	ratio_row("2 read ranges: set + unlock_many (ns)", k, &u[U_MANY_R], &u[U_SINGLE_R],
		  "2 singles: ", "<= 1.3x singles", 1.3, true, false, true);
	ratio_row("2 read ranges: set + 2 single unlocks", k, &u[U_MANY1_R], &u[U_SINGLE_R],
		  "2 singles: ", "<= 1.3x singles", 1.3, true, false, true);
	ratio_row("write: grow 1 unit + shrink back (ns)", k, &u[U_GROW_W], &u[U_RELOCK_W],
		  "2 relocks: ", "report", 0, true, true, true);
	ratio_row("read: grow 1 unit + shrink back (ns)", k, &u[U_GROW_R], &u[U_RELOCK_R],
		  "2 relocks: ", "report", 0, true, true, true);
	ratio_row("contended pairs: set / sorted singles", k, set, sorted, "sorted: ",
		  "report", 0, false, true, false);
	ratio_row("contended pairs: set / pthread_mutex", k, set, mtx, "mutex: ",
		  "report", 0, false, true, false);
	ratio_row("contended pairs: sorted / pthread_mutex", k, sorted, mtx, "mutex: ",
		  "report", 0, false, true, false);
	ratio_row("contended pairs: set / pthread_rwlock", k, set, rw, "rwlock: ",
		  "report", 0, false, true, false);
}

void run_targets_many(FILE *out)
{
	enum lock_kind rk[2];
	int nrk = range_kinds(rk), u0, c0;
	int nthreads = 2 * ncpus > MAX_THREADS ? MAX_THREADS : 2 * ncpus;
	uint64_t iters = opt.uncont_iters / 10 ? opt.uncont_iters / 10 : 1;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets=many needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	if (nthreads < 4)
		nthreads = 4;
	progress_total = (opt.targets || opt.targets13 || opt.targets_word ? progress_total : 0) +
			 (long)opt.reps * (nrk * U_COUNT + 2 * nrk + 2);
	u0 = measure_many_uncontended(rk, nrk, iters);
	c0 = measure_many_contended(rk, nrk, nthreads);
	progress_end();

	for (int p = 0; p < nrk; p++)
		many_rows(rk[p], u0, c0, p, nrk);

	fprintf(out, "== Targets (several ranges, grow): %d CPUs, median of %d interleaved "
		"repetitions ==\n", ncpus, opt.reps);
	fprintf(out, "uncontended, one thread, ns per pair (%" PRIu64 " pairs a run): 2 disjoint "
		"ranges [0, 99] + [200, 299]\n  as one set (range_lock_many) vs two single lock "
		"calls (the first takes the empty tree's\n  lock word or a fast read, the "
		"second materialises it: as users get it); unlocks: range_unlock_many or\n"
		"  two single unlocks; grow: a held [0, 99] grown to [0, 100] and shrunk back "
		"vs unlock + lock [0, 100],\n  unlock + lock [0, 99]; value = set / singles "
		"(lower = cheaper), target <= 1.3\n", iters);
	fprintf(out, "contended: %d threads on %d CPUs, each pair 2 random disjoint ranges "
		"(2 of %d slots of %d units), written,\n  1 us in + 1 us out, %" PRIu64
		" ms a run: one set vs two single write locks in sorted order vs one\n"
		"  pthread_mutex / pthread_rwlock write lock for both; value = throughput "
		"ratio (> 1 = the first faster), report only\n", nthreads, ncpus, NSLOTS,
		SLOT_LEN, opt.duration_ms);
	fprintf(out, "values: median [min..max] over the repetitions; spread: min..max of "
		"the per-repetition paired ratios;\n  runq: median/max %% of the measuring "
		"threads' time spent waiting for a CPU (other load: timings are then noisy)\n"
		"load-independent instruction counts: bench/many_loop.c under Callgrind "
		"(docs/benchmarks.md)\n\n");
	print_target_tables(out, "many", rk, nrk, "baseline", "value", 40, 38);
}
