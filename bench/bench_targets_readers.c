/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=readers: readers among busy writers.
 *
 * The buffer: units are bytes of a 1 MiB buffer, [0, 2^20 - 1].
 *  - writers: writer i of W write-locks a random 4 KiB block (aligned) of
 *    its own 1/W of the buffer (a quarter with 4 writers), again and again;
 *  - readers: read-lock a random range of 1 to 16 KiB (length uniform in
 *    [1024, 16384] bytes) starting anywhere in the buffer;
 *  - empty critical sections, nothing between them.
 * Scenarios: 4 writers + 2 readers (more threads than 2 CPUs), 2 + 2 and
 * 1 + 1.
 *
 * The locks, alternating in every repetition: librangelock (the policies
 * of --policy), the same trees with 64 segments by stripes of 2^14 units,
 * with the default policy the plain and segmented trees readers-first
 * (range_lock_tree_defer_writers()),
 * one pthread_rwlock for the whole buffer (default attributes), no lock.
 *
 * Per run: every thread's operations and its longest single wait (lock
 * call to return, on the TSC); per class (readers, writers) the smallest
 * and largest per-thread count, the 99th percentile and the longest wait.
 * Target rows (default policy, without and with readers first, 4 + 2):
 * each reader thread completes at
 * least a quarter as many operations as each writer thread (the fewest
 * reads of a reader / the most writes of a writer >= 0.25, median over
 * the repetitions), and the total is at least one pthread_rwlock's.
 *
 * Checks (a failure makes the exit status 1): a writer increments its
 * block's two counters, one after the other, with plain loads and stores;
 * a reader loads both counters of every block it covers, and finding them
 * different is a torn read (a writer inside its range); the first
 * counters must add up to the writes.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <unistd.h>

#define RD_UNITS  (1u << 20)
#define RD_BLOCK  4096u
#define RD_BLOCKS (RD_UNITS / RD_BLOCK)
#define RD_MINLEN 1024u
#define RD_MAXLEN 16384u

enum rd_scen { RS_4W2R, RS_2W2R, RS_1W1R, RS_COUNT };

struct rd_scenario {
	const char *tag;
	const char *title;
	int nw, nr;
};

static const struct rd_scenario scen[RS_COUNT] = {
	{ "readers-4w2r", "4 writers + 2 readers", 4, 2 },
	{ "readers-2w2r", "2 writers + 2 readers", 2, 2 },
	{ "readers-1w1r", "1 writer + 1 reader", 1, 1 },
};

#define MAX_RD_KINDS 8
static enum lock_kind kinds[MAX_RD_KINDS];
static int nkinds;
static int idx[RS_COUNT][MAX_RD_KINDS];
/* Per repetition, M ops/s: the slowest reader thread, the fastest writer
 * thread (and the fastest reader, the slowest writer). */
static double rlo[RS_COUNT][MAX_RD_KINDS][MAX_REPS], rhi[RS_COUNT][MAX_RD_KINDS][MAX_REPS];
static double wlo[RS_COUNT][MAX_RD_KINDS][MAX_REPS], whi[RS_COUNT][MAX_RD_KINDS][MAX_REPS];

struct rd_run {
	enum lock_kind kind;
	const struct rd_scenario *s;
	struct lockset *ls;
	/* per block: two counters a writer increments one after the other */
	uint64_t data[RD_BLOCKS][2];
	_Atomic int torn;
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

struct rd_worker {
	_Alignas(CACHELINE) pthread_t th;
	struct rd_run *run;
	int id;
	bool writer;
	uint64_t rng;
	uint64_t ops, sink, maxwait, runq_ns, ns;
	struct wait_hist h;
};

static void *rd_worker_main(void *arg)
{
	struct rd_worker *w = arg;
	struct rd_run *r = w->run;
	const bool writer = w->writer, range = lk_is_range(r->kind);
	const uint64_t share = RD_BLOCKS / (uint64_t)r->s->nw;
	const uint64_t base = writer ? (uint64_t)w->id * share : 0;
	struct range_lock req;
	uint64_t ops = 0, sink = 0, maxwait = 0, start, last, t0, t1, q0, n0;

	range_lock_init(&req, 0, 0);
	pthread_barrier_wait(&r->bar);
	q0 = runq_wait_ns();
	n0 = now_ns();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t x = xorshift64(&w->rng) >> 4;

		if (writer) {
			start = (base + x % share) * RD_BLOCK;
			last = start + RD_BLOCK - 1;
		} else {
			uint64_t len = RD_MINLEN + (x & 0xffff) % (RD_MAXLEN - RD_MINLEN + 1);

			start = (x >> 16) % (RD_UNITS - len + 1);
			last = start + len - 1;
		}
		if (range)
			range_lock_init(&req, start, last);
		t0 = ticks();
		lk_lock(r->ls, r->kind, writer, &req);
		t1 = ticks();
		if (writer) {
			volatile uint64_t *d = r->data[start / RD_BLOCK];

			d[0] = d[0] + 1;
			d[1] = d[1] + 1;
		} else {
			for (uint64_t b = start / RD_BLOCK; b <= last / RD_BLOCK; b++) {
				volatile uint64_t *d = r->data[b];
				uint64_t a = d[0];

				if (d[1] != a)
					atomic_store_explicit(&r->torn, 1, memory_order_relaxed);
				sink += a;
			}
		}
		lk_unlock(r->ls, r->kind, writer, &req);
		hist_add(&w->h, t1 - t0);
		if (t1 - t0 > maxwait)
			maxwait = t1 - t0;
		ops++;
	}
	w->ns = now_ns() - n0;
	w->runq_ns = runq_wait_ns() - q0;
	w->ops = ops;
	w->sink = sink;
	w->maxwait = maxwait;
	return NULL;
}

struct rd_result {
	double secs;
	uint64_t rmin, rmax, wmin, wmax, reads, writes;
	struct wait_hist hr, hw;
	double runq_pct;
	uint64_t csw;
};

static struct rd_worker *workers;

static void rd_run_once(enum lock_kind kind, const struct rd_scenario *s,
			struct rd_result *res)
{
	struct rd_run *r = aligned_alloc(CACHELINE, (sizeof(*r) + CACHELINE - 1) /
						     CACHELINE * CACHELINE);
	int n = s->nw + s->nr;
	uint64_t sum = 0, runq = 0, ns = 0, csw0, t0, t1;
	static uint64_t seed0 = 0x9e3779b97f4a7c15ull;

	if (!r) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->s = s;
	r->ls = lockset_new(kind);
	atomic_init(&r->stop, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		struct rd_worker *w = &workers[i];

		memset(w, 0, sizeof(*w));
		w->run = r;
		w->writer = i < s->nw;
		w->id = w->writer ? i : i - s->nw;
		w->rng = (seed0 += 0x9e3779b97f4a7c15ull) ^ now_ns();
		if (!w->rng)
			w->rng = 1;
		if (pthread_create(&w->th, NULL, rd_worker_main, w)) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	csw0 = context_switches();
	t0 = now_ns();
	sleep_ns(opt.duration_ms * 1000000ull);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	t1 = now_ns();

	memset(res, 0, sizeof(*res));
	res->rmin = res->wmin = UINT64_MAX;
	for (int i = 0; i < n; i++) {
		struct rd_worker *w = &workers[i];

		pthread_join(w->th, NULL);
		runq += w->runq_ns;
		ns += w->ns;
		if (w->writer) {
			res->writes += w->ops;
			res->wmin = w->ops < res->wmin ? w->ops : res->wmin;
			res->wmax = w->ops > res->wmax ? w->ops : res->wmax;
			hist_merge(&res->hw, &w->h);
		} else {
			res->reads += w->ops;
			res->rmin = w->ops < res->rmin ? w->ops : res->rmin;
			res->rmax = w->ops > res->rmax ? w->ops : res->rmax;
			hist_merge(&res->hr, &w->h);
		}
	}
	res->csw = context_switches() - csw0;
	res->secs = (double)(t1 - t0) / 1e9;
	res->runq_pct = ns ? 100.0 * (double)runq / (double)ns : 0;
	for (unsigned b = 0; b < RD_BLOCKS; b++)
		sum += r->data[b][0];
	if (kind != LK_NONE && atomic_load(&r->torn)) {
		fprintf(stderr, "\nrangelock-bench: --targets=readers: EXCLUSION BROKEN: "
			"%s %s: a reader saw a block's two counters differ\n", lk_name[kind],
			s->tag);
		check_failures++;
	}
	if (kind != LK_NONE && sum != res->writes) {
		fprintf(stderr, "\nrangelock-bench: --targets=readers: EXCLUSION BROKEN: "
			"%s %s: %" PRIu64 " writes, counters add up to %" PRIu64 "\n",
			lk_name[kind], s->tag, res->writes, sum);
		check_failures++;
	}
	if (lk_is_range(kind) && range_lock_tree_destroy(&r->ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: --targets=readers: tree not empty\n");
		check_failures++;
		range_lock_tree_init(&r->ls->tree);
	}
	lockset_free(r->ls);
	pthread_barrier_destroy(&r->bar);
	free(r);
}

/* ---- measuring --------------------------------------------------------- */

static const struct rec *rd_rec(int si, enum lock_kind k)
{
	for (int i = 0; i < nkinds; i++)
		if (kinds[i] == k)
			return idx[si][i] >= 0 ? &recs[idx[si][i]] : NULL;
	return NULL;
}

static int rd_k(enum lock_kind k)
{
	for (int i = 0; i < nkinds; i++)
		if (kinds[i] == k)
			return i;
	return 0;
}

static void measure_rd_point(int si)
{
	const struct rd_scenario *s = &scen[si];
	int first = nrecs;

	for (int k = 0; k < nkinds; k++) {
		struct rec *r = rec_new("readers", WL_MIXED, RG_RANDOM, s->nw + s->nr, kinds[k],
					"ops_per_s", "ops/s", true);

		snprintf(r->tag, sizeof(r->tag), "%s", s->tag);
		r->has_wait = true;
		r->work_in = r->work_out = 0; /* empty critical sections */
		r->nr = s->nr;
		r->nw = s->nw;
		idx[si][k] = first + k;
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int k = 0; k < nkinds; k++) {
			struct rec *r = &recs[first + k];
			struct rd_result res;
			int n = r->n;

			progress("readers %s %s rep %d/%d", s->tag, lk_name[kinds[k]], rep + 1,
				 opt.reps);
			rd_run_once(kinds[k], s, &res);
			r->rd[n] = (double)res.reads / res.secs;
			r->wr[n] = (double)res.writes / res.secs;
			r->v[n] = r->rd[n] + r->wr[n];
			rlo[si][k][n] = (double)res.rmin / res.secs / 1e6;
			rhi[si][k][n] = (double)res.rmax / res.secs / 1e6;
			wlo[si][k][n] = (double)res.wmin / res.secs / 1e6;
			whi[si][k][n] = (double)res.wmax / res.secs / 1e6;
			r->rmin[n] = res.rmin;
			r->rmax[n] = res.rmax;
			r->wmin[n] = res.wmin;
			r->wmax[n] = res.wmax;
			r->frd[n] = res.rmax ? (double)res.rmin / (double)res.rmax : 0;
			r->fwr[n] = res.wmax ? (double)res.wmin / (double)res.wmax : 0;
			/* the row's figure: fewest reads of a reader / most
			 * writes of a writer */
			r->extra[n] = res.wmax ? (double)res.rmin / (double)res.wmax : 0;
			r->rq[n] = res.runq_pct;
			r->csw[n] = res.reads + res.writes ?
				    (double)res.csw / (double)(res.reads + res.writes) : NAN;
			r->wait_p99[WAIT_READ][n] = (double)hist_quantile(&res.hr, 0.99) /
						    ticks_per_ns;
			r->wait_max[WAIT_READ][n] = (double)res.hr.max / ticks_per_ns;
			r->wait_p99[WAIT_WRITE][n] = (double)hist_quantile(&res.hw, 0.99) /
						     ticks_per_ns;
			r->wait_max[WAIT_WRITE][n] = (double)res.hw.max / ticks_per_ns;
			hist_merge(&res.hr, &res.hw);
			r->wait_p99[WAIT_ALL][n] = (double)hist_quantile(&res.hr, 0.99) /
						   ticks_per_ns;
			r->wait_max[WAIT_ALL][n] = (double)res.hr.max / ticks_per_ns;
			r->n++;
		}
}

/* ---- rows -------------------------------------------------------------- */


static void target_rows(enum lock_kind k)
{
	/* targets: the default tree's, without and with readers first */
	const bool rep = k != LK_RANGE && k != LK_RANGE_DW && k != LK_RANGE_SEG_DW;

	for (int si = 0; si < RS_COUNT; si++) {
		const struct rec *rl = rd_rec(si, k), *rw = rd_rec(si, LK_RW);
		const bool rs = rep || si != RS_4W2R;
		struct target_row *t;
		char s[64];
		double lo = INFINITY, hi = -INFINITY;

		if (!rl || !rw)
			continue;
		snprintf(s, sizeof(s), "%s: reader / writer per thread", scen[si].title);
		t = trow_new("readers", k, s);
		snprintf(t->rl, sizeof(t->rl), "R %.3g W %.3g M/s",
			 median_of(rlo[si][rd_k(k)], rl->n), median_of(whi[si][rd_k(k)], rl->n));
		snprintf(t->base, sizeof(t->base), "rwlock: %.2f (R %.3g W %.3g)",
			 median_of(rw->extra, rw->n), median_of(rlo[si][rd_k(LK_RW)], rw->n),
			 median_of(whi[si][rd_k(LK_RW)], rw->n));
		t->peer = lk_name[LK_RW];
		for (int j = 0; j < rl->n; j++) {
			lo = fmin(lo, rl->extra[j]);
			hi = fmax(hi, rl->extra[j]);
		}
		t->spread_lo = lo;
		t->spread_hi = hi;
		t->has_spread = true;
		set_goal(t, median_of(rl->extra, rl->n), ">= 0.25", 0.25, false, rs);
		target_runq(t, rl, rw);

		snprintf(s, sizeof(s), "%s: total vs one rwlock", scen[si].title);
		t = trow_new("readers", k, s);
		fmt_mops(t->rl, sizeof(t->rl), rl, "");
		fmt_mops(t->base, sizeof(t->base), rw, "rwlock: ");
		t->peer = lk_name[LK_RW];
		lo = INFINITY;
		hi = -INFINITY;
		for (int j = 0; j < rl->n && j < rw->n; j++) {
			lo = fmin(lo, rl->v[j] / rw->v[j]);
			hi = fmax(hi, rl->v[j] / rw->v[j]);
		}
		t->spread_lo = lo;
		t->spread_hi = hi;
		t->has_spread = true;
		set_goal(t, rec_median(rl) / rec_median(rw), ">= 1.0x rwlock", 1.0, false, rs);
		target_runq(t, rl, rw);

		snprintf(s, sizeof(s), "%s: readers' longest wait", scen[si].title);
		t = trow_new("readers", k, s);
		snprintf(t->rl, sizeof(t->rl), "%.3g ms", median_of(rl->wait_max[WAIT_READ],
								      rl->n) / 1e6);
		snprintf(t->base, sizeof(t->base), "rwlock: %.3g ms",
			 median_of(rw->wait_max[WAIT_READ], rw->n) / 1e6);
		t->peer = lk_name[LK_RW];
		set_goal(t, median_of(rl->wait_max[WAIT_READ], rl->n) / 1e6, "report", 0,
			 true, true);
		target_runq(t, rl, rw);
	}
}

static void print_detail(FILE *out)
{
	fprintf(out, "Every lock (medians over the repetitions; per thread: M ops/s of the "
		"slowest and fastest thread of the class; waits: single waits, lock call "
		"to return, p99 / longest, us):\n\n");
	fprintf(out, "| scenario | lock | total Mops/s | reads Mops/s | writes Mops/s | "
		"per reader min..max | per writer min..max | reader/writer | "
		"R wait p99/max us | W wait p99/max us | csw/1k ops | runq %% |\n");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
		"--- |\n");
	for (int si = 0; si < RS_COUNT; si++)
		for (int k = 0; k < nkinds; k++) {
			const struct rec *r = rd_rec(si, kinds[k]);

			if (!r)
				continue;
			fprintf(out, "| %s | %s | %.3g | %.3g | %.3g | %.3g..%.3g | "
				"%.3g..%.3g | %.3f | %.2g / %.0f | %.2g / %.0f | %.3g | "
				"%.1f |\n", scen[si].title, lk_name[kinds[k]],
				rec_median(r) / 1e6, median_of(r->rd, r->n) / 1e6,
				median_of(r->wr, r->n) / 1e6,
				median_of(rlo[si][k], r->n), median_of(rhi[si][k], r->n),
				median_of(wlo[si][k], r->n), median_of(whi[si][k], r->n),
				median_of(r->extra, r->n),
				median_of(r->wait_p99[WAIT_READ], r->n) / 1e3,
				median_of(r->wait_max[WAIT_READ], r->n) / 1e3,
				median_of(r->wait_p99[WAIT_WRITE], r->n) / 1e3,
				median_of(r->wait_max[WAIT_WRITE], r->n) / 1e3,
				1e3 * median_of(r->csw, r->n), median_of(r->rq, r->n));
		}
	fprintf(out, "\n");
}

void run_targets_readers(FILE *out)
{
	enum lock_kind rk[6];
	int nrk = range_kinds(rk);
	bool rf = false;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets=readers needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	nkinds = 0;
	for (int p = 0; p < nrk; p++)
		kinds[nkinds++] = rk[p];
	for (int p = 0; p < nrk; p++)
		rk[nrk + p] = rk[p] == LK_RANGE_FIFO ? LK_RANGE_FIFO_SEG : LK_RANGE_SEG;
	nrk *= 2;
	for (int p = nrk / 2; p < nrk; p++)
		kinds[nkinds++] = rk[p];
	/* readers first, with the default policy */
	for (int p = 0; p < nrk; p++)
		rf |= rk[p] == LK_RANGE;
	if (rf) {
		kinds[nkinds++] = rk[nrk++] = LK_RANGE_DW;
		kinds[nkinds++] = rk[nrk++] = LK_RANGE_SEG_DW;
	}
	kinds[nkinds++] = LK_RW;
	kinds[nkinds++] = LK_NONE;
	memset(idx, -1, sizeof(idx));
	workers = aligned_alloc(CACHELINE, sizeof(*workers) * 8);
	if (!workers) {
		perror("aligned_alloc");
		exit(2);
	}

	progress_total = (opt.targets || opt.targets13 || opt.targets_word ||
			  opt.targets_many || opt.targets_segments ? progress_total : 0) +
			 (long)opt.reps * RS_COUNT * nkinds;
	for (int si = 0; si < RS_COUNT; si++)
		measure_rd_point(si);
	progress_end();
	free(workers);

	for (int p = 0; p < nrk; p++)
		target_rows(rk[p]);

	fprintf(out, "== Targets (readers among busy writers): %d CPUs, median of %d "
		"interleaved repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps,
		opt.duration_ms);
	fprintf(out, "units: bytes of a %u KiB buffer; writer i of W write-locks a random "
		"%u-byte block of its own 1/W of it; readers read-lock\n  random ranges of "
		"%u..%u bytes anywhere; empty critical sections, nothing between them\n",
		RD_UNITS / 1024, RD_BLOCK, RD_MINLEN, RD_MAXLEN);
	fprintf(out, "reader / writer per thread: the fewest operations of a reader thread "
		"/ the most of a writer thread, per repetition (M ops/s: R the slowest\n  "
		"reader, W the fastest writer); rwlock: one pthread_rwlock for the whole "
		"buffer, same run; spread: min..max over the repetitions (total: of the\n  "
		"paired ratios); targets apply to the default policy, without and with "
		"readers first, 4 writers + 2 readers (the others: met? '-')\n\n");
	print_target_tables(out, "readers", rk, nrk, "baseline", "value", 44, 34);
	print_detail(out);
}
