/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=segments, second part: the rows where a request
 * meets many segments, each run on a tree WITH segments and on the same
 * tree WITHOUT, side by side in one run (the locks alternate within every
 * repetition; medians of the repetitions, spread = min..max of the
 * per-repetition paired ratios).  Every number printed is measured in this
 * run; the program measures, it does not judge: the targets are printed
 * next to the ratios, a miss is not a failure.
 *
 * Tables (--seg-tables picks some; default all):
 *  - whole: requests on the full range [0, RANGE_LOCK_FULL], 64 segments by
 *    stripes of 2^12 units against the tree without segments: one thread's
 *    uncontended read pair and write pair (ns per lock + unlock, for as
 *    long as a fifth of --duration-ms), 2 threads pounding reads, 2 threads
 *    pounding writes (empty critical sections), 2 writers with 1 us inside
 *    (vs pthread_rwlock); 4 writers, 8 writers, 4 readers + 4 writers with
 *    1 us in + 1 us out (vs pthread_mutex, with the longest single wait);
 *  - k-sweep: 2 writers on [0, 4095] and [4096, 8191], 1 us inside, none
 *    outside; 64 segments by stripes of 2^k units for every k from 6 (stripes
 *    64 times smaller than the requests) to 18 (64 times larger), the tree
 *    without segments, and 64 striped pthread_rwlocks of 256 units (unit u
 *    in stripe (u / 256) % 64; a range takes its stripes in ascending
 *    order: 16 each here);
 *  - read-mostly: 2 threads, random 64-unit ranges starting in [0, 4096]
 *    (so within [0, 4159]), each operation a write with probability 1/N
 *    for N = 10, 100, 1000, 0.2 us in + 0.2 us out; 64 segments by stripes
 *    of 256 units (k = 8) against the tree without segments and the 64
 *    striped rwlocks above;
 *  - mixed: units are the bytes of a 1 MiB buffer; 2 threads, each writing
 *    random 4 KiB blocks (aligned) of its own half, and every N-th of its
 *    operations (N = 10, 100, 1000) a write of the full range instead,
 *    zeroing the buffer's last 64 KiB (a truncate); 16 segments of 64 KiB
 *    (k = 16) against the tree without segments.
 * The trees use the first policy of --policy (the default policy unless
 * --policy fifo).
 *
 * Checks (a failure makes the exit status 1): the whole-range rows are the
 * throughput workload's (a writer's plain load before the work and store
 * after it: the counters must add up to the writes); in the others each
 * write does the same on a counter of its range (the k sweep: its start;
 * read-mostly: its one unit that is a multiple of 64, which overlapping
 * ranges share one time in two) or of its block (mixed: a whole-range write increments every block's
 * counter, so one that overlapped a block writer loses an update), the
 * counters must add up, a block writer finds its block's first and last
 * byte as it wrote them (not zeroed by a concurrent truncate), and every
 * tree is empty at the end.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <unistd.h>

bool seg_table_on(const char *name)
{
	return !opt.seg_tables || in_list(opt.seg_tables, name);
}

static enum lock_kind plain_kind, seg_kind;

/* A speed ratio of two records (> 1: @a faster), medians, and the min..max
 * of the per-repetition paired ratios. */
static double speed_ratio(const struct rec *a, const struct rec *b, double *lo, double *hi)
{
	double pr[MAX_REPS];
	int n = a->n < b->n ? a->n : b->n;

	for (int j = 0; j < n; j++)
		pr[j] = a->higher_better ? a->v[j] / b->v[j] : b->v[j] / a->v[j];
	*lo = min_of(pr, n);
	*hi = max_of(pr, n);
	return a->higher_better ? rec_median(a) / rec_median(b) : rec_median(b) / rec_median(a);
}

static void fmt_rec(char *buf, size_t n, const struct rec *r)
{
	double s = r->higher_better ? 1e6 : 1;

	snprintf(buf, n, "%.4g [%.3g..%.3g]", rec_median(r) / s, min_of(r->v, r->n) / s,
		 max_of(r->v, r->n) / s);
}

/* A JSON target row (table "segwide"): @a against @b. */
static void json_row(const char *scenario, const struct rec *a, const struct rec *b,
		     const char *target, double goal, bool report)
{
	struct target_row *t = trow_new("segwide", a->lock, scenario);

	fmt_rec(t->rl, sizeof(t->rl), a);
	fmt_rec(t->base, sizeof(t->base), b);
	t->peer = lk_name[b->lock];
	t->has_spread = true;
	set_goal(t, speed_ratio(a, b, &t->spread_lo, &t->spread_hi), target, goal, false,
		 report);
	target_runq(t, a, b);
}

/* ---- whole-range rows -------------------------------------------------- */

#define WHOLE_NSEG 64u
#define WHOLE_K    12u

enum { W_UNC_R, W_UNC_W, W_POUND_R, W_POUND_W, W_1US, W_4W, W_8W, W_4R4W, W_COUNT };

struct whole_row {
	const char *tag, *label;
	enum workload wl;
	int threads;
	uint64_t in, out;
	enum lock_kind peer;
	int first;                /* records: plain, segmented, peer */
};

static struct whole_row wrow[W_COUNT] = {
	{ "segw-uncont", "uncontended read pair (ns)", WL_READ, 1, 0, 0, LK_RW, -1 },
	{ "segw-uncont", "uncontended write pair (ns)", WL_WRITE, 1, 0, 0, LK_RW, -1 },
	{ "segw-pound", "2 thr pounding reads (Mops/s)", WL_READ, 2, 0, 0, LK_RW, -1 },
	{ "segw-pound", "2 thr pounding writes (Mops/s)", WL_WRITE, 2, 0, 0, LK_RW, -1 },
	{ "segw-1us", "2 writers, 1 us inside (Mops/s)", WL_WRITE, 2, 1000, 0, LK_RW, -1 },
	{ "segw-4w", "4 writers, 1 us in + out (Mops/s)", WL_WRITE, 4, 1000, 1000, LK_MUTEX,
	  -1 },
	{ "segw-8w", "8 writers, 1 us in + out (Mops/s)", WL_WRITE, 8, 1000, 1000, LK_MUTEX,
	  -1 },
	{ "segw-4r4w", "4 readers + 4 writers, 1 us in + out", WL_MIXED, 8, 1000, 1000,
	  LK_MUTEX, -1 },
};

/* One thread's lock + unlock of the full range, ns per pair, for a fifth
 * of --duration-ms (at least 1 ms). */
static double uncont_pair_ns(enum lock_kind kind, bool write)
{
	struct lockset *ls = lockset_new(kind);
	struct range_lock req;
	uint64_t budget = opt.duration_ms * 200000u, n = 0, t0, t;

	if (budget < 1000000)
		budget = 1000000;
	range_lock_init_full(&req);
	for (int i = 0; i < 100; i++) {
		lk_lock(ls, kind, write, &req);
		lk_unlock(ls, kind, write, &req);
	}
	t0 = now_ns();
	do {
		for (int i = 0; i < 64; i++) {
			lk_lock(ls, kind, write, &req);
			lk_unlock(ls, kind, write, &req);
		}
		n += 64;
		t = now_ns();
	} while (t - t0 < budget);
	lockset_free(ls);
	return (double)(t - t0) / (double)n;
}

static void measure_uncont(struct whole_row *w)
{
	const enum lock_kind ks[3] = { plain_kind, seg_kind, w->peer };

	w->first = nrecs;
	for (int k = 0; k < 3; k++) {
		struct rec *rc = rec_new("segments", w->wl, RG_FULL, 1, ks[k], "ns_per_op", "ns",
					 false);
		snprintf(rc->tag, sizeof(rc->tag), "%s", w->tag);
	}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int k = 0; k < 3; k++) {
			struct rec *rc = &recs[w->first + k];
			uint64_t q0 = runq_wait_ns(), t0 = now_ns();

			progress("%s %s %s rep %d/%d", w->tag, wl_name[w->wl], lk_name[ks[k]],
				 rep + 1, opt.reps);
			rc->v[rc->n] = uncont_pair_ns(ks[k], w->wl == WL_WRITE);
			rc->rq[rc->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
					  (double)(now_ns() - t0);
		}
}

static void run_whole(void)
{
	for (int i = 0; i < W_COUNT; i++) {
		struct whole_row *w = &wrow[i];
		const enum lock_kind ks[3] = { plain_kind, seg_kind, w->peer };

		if (w->threads == 1)
			measure_uncont(w);
		else
			w->first = measure_point("throughput", w->tag, ks, 3, w->wl, RG_FULL,
						 w->threads, w->in, w->out);
	}
}

static void fmt_wait(char *buf, size_t n, const struct rec *r)
{
	if (!r->has_wait)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%.3g", median_of(r->wait_max[WAIT_ALL], r->n) / 1e6);
}

static void print_whole(FILE *out)
{
	fprintf(out, "== Whole-range requests, %u segments by stripes of 2^%u units vs no "
		"segments: %d CPUs, median of %d interleaved repetitions x %" PRIu64
		" ms ==\n", WHOLE_NSEG, WHOLE_K, ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "every request on [0, RANGE_LOCK_FULL]; uncontended: ns per lock + "
		"unlock (lower is better), the others Mops/s;\nseg / plain: speed of the "
		"segmented tree / the tree without segments (> 1 = segmented faster; "
		"spread: per-repetition paired ratios);\npeer: pthread_rwlock (first five "
		"rows) or pthread_mutex (last three); longest wait: the longest single "
		"lock call, ms, median over the repetitions\n(only rows with work on both "
		"sides time their waits)\n\n");
	fprintf(out, "| %-38s | %-24s | %-24s | %-6s | %-11s | %-22s | %-24s | %-13s | "
		"%-13s | %-20s | %-9s |\n", "scenario", "no segments", "64 segments",
		"seg / plain", "spread", "target", "peer", "plain / peer", "seg / peer",
		"longest wait p/s/peer", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int i = 0; i < W_COUNT; i++) {
		const struct whole_row *w = &wrow[i];
		const struct rec *p = &recs[w->first], *s = &recs[w->first + 1];
		const struct rec *q = &recs[w->first + 2];
		char a[48], b[48], c[48], wp[16], ws[16], wq[16], wt[52] = "n/a";
		double lo, hi, r = speed_ratio(s, p, &lo, &hi), l2, h2;
		double rp = speed_ratio(p, q, &l2, &h2), rs = speed_ratio(s, q, &l2, &h2);
		double rq[3 * MAX_REPS];
		int nq = 0;

		for (int k = 0; k < 3; k++)
			for (int j = 0; j < recs[w->first + k].n; j++)
				rq[nq++] = recs[w->first + k].rq[j];
		fmt_rec(a, sizeof(a), p);
		fmt_rec(b, sizeof(b), s);
		fmt_rec(c, sizeof(c), q);
		fmt_wait(wp, sizeof(wp), p);
		fmt_wait(ws, sizeof(ws), s);
		fmt_wait(wq, sizeof(wq), q);
		if (w->in && w->out)
			snprintf(wt, sizeof(wt), "%s/%s/%s", wp, ws, wq);
		fprintf(out, "| %-38s | %-24s | %-24s | %6.3f | %5.3f..%5.3f | %-22s | %-24s | "
			"%13.3f | %13.3f | %-20s | %4.1f/%4.1f |\n", w->label, a, b, r, lo, hi,
			">= 0.9 (moon 0.97)", c, rp, rs, wt, median_of(rq, nq), max_of(rq, nq));
		json_row(w->label, s, p, ">= 0.9x no segments", 0.9, false);
	}
	fprintf(out, "\n");
}

/* ---- the k sweep, read-mostly, mixed: our own workload ----------------- */

enum gw_scen { GW_KSWEEP, GW_MOSTLY, GW_MIXED };
enum gw_type { GT_PLAIN, GT_SEG, GT_STRIPED };

#define GS_COUNT  64u             /* striped rwlocks */
#define GS_SHIFT  8u              /* of 256 units */
#define KS_LEN    4096u           /* the k sweep's ranges */
#define KS_KMIN   6u
#define KS_KMAX   18u
#define KS_NK     (KS_KMAX - KS_KMIN + 1)
#define MO_LEN    64u             /* read-mostly ranges */
#define MO_STARTS 4097u           /* starts in [0, 4096] */
#define MO_K      8u
#define MX_BYTES  (1u << 20)      /* the mixed row's buffer */
#define MX_BLOCK  4096u
#define MX_BLOCKS (MX_BYTES / MX_BLOCK)
#define MX_TRUNC  (64u * 1024)    /* zeroed by each whole-range write */
#define MX_NSEG   16u
#define MX_K      16u
#define GW_CNT    8192u           /* counters: units (k sweep, read-mostly), blocks */

struct gw_conf {
	enum gw_type type;
	unsigned nseg, k;
};

struct gw_stripe {
	_Alignas(CACHELINE) pthread_rwlock_t rw;
};

struct gw_run {
	enum gw_scen sc;
	enum gw_type type;
	uint64_t every;           /* read-mostly: 1 write in N; mixed: whole every N */
	uint64_t in_ticks, out_ticks;
	struct lockset *ls;
	struct gw_stripe *stripes;
	uint64_t *cnt;            /* GW_CNT counters */
	uint8_t *buf;             /* mixed: MX_BYTES */
	_Atomic int bad;
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

struct gw_worker {
	_Alignas(CACHELINE) pthread_t th;
	struct gw_run *run;
	int id;
	uint64_t rng;
	uint64_t nread, nwrite, nwhole, sink, runq_ns;
};

static void *gw_alloc(size_t n)
{
	void *p = aligned_alloc(CACHELINE, (n + CACHELINE - 1) / CACHELINE * CACHELINE);

	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	return p;
}

static inline void gw_lock(struct gw_run *r, struct range_lock *req, uint64_t start,
			   uint64_t last, bool write)
{
	if (r->type != GT_STRIPED) {
		if (write)
			range_write_lock(&r->ls->tree, req);
		else
			range_read_lock(&r->ls->tree, req);
		return;
	}
	/* ascending stripe order (the ranges here take fewer than 64) */
	for (uint64_t s = start >> GS_SHIFT; s <= last >> GS_SHIFT; s++) {
		if (write)
			pthread_rwlock_wrlock(&r->stripes[s % GS_COUNT].rw);
		else
			pthread_rwlock_rdlock(&r->stripes[s % GS_COUNT].rw);
	}
}

static inline void gw_unlock(struct gw_run *r, struct range_lock *req, uint64_t start,
			     uint64_t last, bool write)
{
	if (r->type != GT_STRIPED) {
		if (write)
			range_write_unlock(&r->ls->tree, req);
		else
			range_read_unlock(&r->ls->tree, req);
		return;
	}
	for (uint64_t s = (last >> GS_SHIFT) + 1; s-- > start >> GS_SHIFT;)
		pthread_rwlock_unlock(&r->stripes[s % GS_COUNT].rw);
}

static void *gw_main(void *arg)
{
	struct gw_worker *w = arg;
	struct gw_run *r = w->run;
	const uint64_t in = r->in_ticks, out = r->out_ticks, every = r->every;
	volatile uint8_t *vbuf = r->buf;
	struct range_lock req, whole;
	uint64_t start = 0, last = 0, nread = 0, nwrite = 0, nwhole = 0, sink = 0, v, q0;
	bool write = true;

	range_lock_init_full(&whole);
	if (r->sc == GW_KSWEEP) {
		start = (uint64_t)w->id * KS_LEN;
		last = start + KS_LEN - 1;
	}
	range_lock_init(&req, start, last);
	pthread_barrier_wait(&r->bar);
	q0 = runq_wait_ns();
	for (uint64_t i = 0; !atomic_load_explicit(&r->stop, memory_order_relaxed); i++) {
		if (r->sc == GW_MOSTLY) {
			write = (xorshift64(&w->rng) >> 4) % every == 0;
			start = (xorshift64(&w->rng) >> 4) % MO_STARTS;
			last = start + MO_LEN - 1;
			if (r->type != GT_STRIPED)
				range_lock_init(&req, start, last);
		} else if (r->sc == GW_MIXED) {
			if (i % every == every - 1) {
				/* the truncate: the full range, the last 64 KiB
				 * zeroed, every block's counter incremented */
				range_write_lock(&r->ls->tree, &whole);
				memset(r->buf + MX_BYTES - MX_TRUNC, 0, MX_TRUNC);
				for (unsigned b = 0; b < MX_BLOCKS; b++)
					r->cnt[b]++;
				range_write_unlock(&r->ls->tree, &whole);
				nwhole++;
				continue;
			}
			start = ((uint64_t)w->id * (MX_BLOCKS / 2) +
				 (xorshift64(&w->rng) >> 4) % (MX_BLOCKS / 2)) * MX_BLOCK;
			last = start + MX_BLOCK - 1;
			range_lock_init(&req, start, last);
		}
		gw_lock(r, &req, start, last, write);
		if (r->sc == GW_MIXED) {
			uint64_t b = start / MX_BLOCK;
			uint8_t pat;

			v = r->cnt[b];
			pat = (uint8_t)(2 * v + 1);    /* never 0 */
			memset(r->buf + start, pat, MX_BLOCK);
			if (vbuf[start] != pat || vbuf[last] != pat)
				atomic_store_explicit(&r->bad, 1, memory_order_relaxed);
			r->cnt[b] = v + 1;
		} else {
			/* a plain load before the work, a plain store after, on
			 * the counter of the range's one multiple of 64 (of its
			 * start in the k sweep): overlapping writers often share
			 * it, and lose an update if inside together */
			uint64_t u = (start + MO_LEN - 1) & ~(uint64_t)(MO_LEN - 1);

			v = r->cnt[u];
			if (in)
				work(in);
			if (write)
				r->cnt[u] = v + 1;
			else
				sink += v;
		}
		gw_unlock(r, &req, start, last, write);
		if (write)
			nwrite++;
		else
			nread++;
		if (out)
			work(out);
	}
	w->runq_ns = runq_wait_ns() - q0;
	w->nread = nread;
	w->nwrite = nwrite;
	w->nwhole = nwhole;
	w->sink = sink;
	return NULL;
}

static const char *const gw_tag[3] = { "k-sweep", "read-mostly", "mixed" };

static const char *conf_name(const struct gw_conf *c, char *buf, size_t n)
{
	if (c->type == GT_PLAIN)
		snprintf(buf, n, "no segments");
	else if (c->type == GT_STRIPED)
		snprintf(buf, n, "%u striped rwlocks", GS_COUNT);
	else
		snprintf(buf, n, "%u segments, k=%u", c->nseg, c->k);
	return buf;
}

/* One timed run of 2 threads; the sample goes into @rc. */
static void gw_run_once(enum gw_scen sc, const struct gw_conf *c, uint64_t every,
			struct rec *rc)
{
	struct gw_run *r = gw_alloc(sizeof(*r));
	struct gw_worker w[2];
	uint64_t reads = 0, writes = 0, wholes = 0, runq = 0, sum = 0, want, csw0, t0, t1;
	static uint64_t seed0 = 0x9e3779b97f4a7c15ull;
	enum lock_kind kind = c->type == GT_SEG ? seg_kind : plain_kind;
	const int nt = 2;
	char name[48];

	memset(r, 0, sizeof(*r));
	r->sc = sc;
	r->type = c->type;
	r->every = every;
	r->in_ticks = ns_to_ticks(sc == GW_KSWEEP ? 1000 : sc == GW_MOSTLY ? 200 : 0);
	r->out_ticks = ns_to_ticks(sc == GW_MOSTLY ? 200 : 0);
	seg_geom_n = c->nseg;
	seg_geom_k = c->k;
	r->ls = lockset_new(kind);
	seg_geom_n = 64;
	seg_geom_k = 14;
	r->stripes = gw_alloc(sizeof(*r->stripes) * GS_COUNT);
	for (unsigned i = 0; i < GS_COUNT; i++)
		pthread_rwlock_init(&r->stripes[i].rw, NULL);
	r->cnt = gw_alloc(sizeof(*r->cnt) * GW_CNT);
	memset(r->cnt, 0, sizeof(*r->cnt) * GW_CNT);
	if (sc == GW_MIXED) {
		r->buf = gw_alloc(MX_BYTES);
		memset(r->buf, 0, MX_BYTES);
	}
	atomic_init(&r->stop, 0);
	atomic_init(&r->bad, 0);
	pthread_barrier_init(&r->bar, NULL, nt + 1);
	for (int i = 0; i < nt; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		w[i].rng = (seed0 += 0x9e3779b97f4a7c15ull) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		if (pthread_create(&w[i].th, NULL, gw_main, &w[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	csw0 = context_switches();
	t0 = now_ns();
	sleep_ns(opt.duration_ms * 1000000ull);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	for (int i = 0; i < nt; i++) {
		pthread_join(w[i].th, NULL);
		reads += w[i].nread;
		writes += w[i].nwrite;
		wholes += w[i].nwhole;
		runq += w[i].runq_ns;
	}
	t1 = now_ns();

	for (unsigned u = 0; u < GW_CNT; u++)
		sum += r->cnt[u];
	want = writes + wholes * (sc == GW_MIXED ? MX_BLOCKS : 0);
	if (sum != want || atomic_load(&r->bad)) {
		fprintf(stderr, "\nrangelock-bench: --targets=segments: EXCLUSION BROKEN: %s, "
			"%s, 1 in %" PRIu64 ": %" PRIu64 " counted writes expected, %" PRIu64
			" seen%s\n", gw_tag[sc], conf_name(c, name, sizeof(name)), every, want,
			sum, atomic_load(&r->bad) ? "; a block was zeroed under its writer" : "");
		check_failures++;
	}
	{
		int k = rc->n++;
		double secs = (double)(t1 - t0) / 1e9;

		rc->rd[k] = (double)reads / secs;
		rc->wr[k] = (double)(writes + wholes) / secs;
		rc->v[k] = rc->rd[k] + rc->wr[k];
		rc->rq[k] = 100.0 * (double)runq / ((double)(t1 - t0) * nt);
		rc->csw[k] = reads + writes + wholes ? (double)(context_switches() - csw0) /
			     (double)(reads + writes + wholes) : NAN;
		rc->frd[k] = rc->fwr[k] = 1;
		rc->nr = sc == GW_MOSTLY ? nt : 0;
		rc->nw = nt;
	}
	for (unsigned i = 0; i < GS_COUNT; i++)
		pthread_rwlock_destroy(&r->stripes[i].rw);
	free(r->stripes);
	if (range_lock_tree_destroy(&r->ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: --targets=segments: tree not empty\n");
		check_failures++;
		range_lock_tree_init(&r->ls->tree);
	}
	lockset_free(r->ls);
	pthread_barrier_destroy(&r->bar);
	free(r->cnt);
	free(r->buf);
	free(r);
}

/* A table of @nrow rows (one per N of @every, or one) by @nconf lock
 * configurations: records first + row * nconf + conf; every repetition runs
 * every row and configuration once, in turn. */
struct gw_table {
	enum gw_scen sc;
	const struct gw_conf *conf;
	int nconf;
	const uint64_t *every;
	int nrow;
	int first;
};

static void gw_measure(struct gw_table *t)
{
	char name[48];

	t->first = nrecs;
	for (int row = 0; row < t->nrow; row++)
		for (int c = 0; c < t->nconf; c++) {
			const struct gw_conf *cf = &t->conf[c];
			struct rec *rc = rec_new("segments", t->sc == GW_MOSTLY ? WL_MIXED : WL_WRITE,
						 t->sc == GW_KSWEEP ? RG_DISJOINT : RG_RANDOM, 2,
						 cf->type == GT_SEG ? seg_kind : cf->type ==
						 GT_STRIPED ? LK_STRIPED : plain_kind,
						 "ops_per_s", "ops/s", true);

			/* the tag names the geometry: "segk-k06", "segm-10-k8" */
			if (t->sc == GW_KSWEEP)
				snprintf(rc->tag, sizeof(rc->tag), "segk-%s%02u", cf->type ==
					 GT_SEG ? "k" : cf->type == GT_PLAIN ? "plain" : "striped",
					 cf->type == GT_SEG ? cf->k : 0);
			else
				snprintf(rc->tag, sizeof(rc->tag), "seg%c-%" PRIu64 "-%s%u",
					 t->sc == GW_MOSTLY ? 'm' : 'x', t->every[row],
					 cf->type == GT_SEG ? "k" : cf->type == GT_PLAIN ? "plain" :
					 "striped", cf->type == GT_SEG ? cf->k : 0);
			rc->work_in = t->sc == GW_KSWEEP ? 1000 : t->sc == GW_MOSTLY ? 200 : 0;
			rc->work_out = t->sc == GW_MOSTLY ? 200 : 0;
			rc->write_every = t->sc == GW_MOSTLY ? t->every[row] : 0;
			rc->range_len = t->sc == GW_KSWEEP ? KS_LEN : t->sc == GW_MOSTLY ? MO_LEN
												  : MX_BLOCK;
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int row = 0; row < t->nrow; row++)
			for (int c = 0; c < t->nconf; c++) {
				progress("segments %s %" PRIu64 " %s rep %d/%d", gw_tag[t->sc],
					 t->every[row], conf_name(&t->conf[c], name, sizeof(name)),
					 rep + 1, opt.reps);
				gw_run_once(t->sc, &t->conf[c], t->every[row],
					    &recs[t->first + row * t->nconf + c]);
			}
}

static const struct rec *gw_rec(const struct gw_table *t, int row, int c)
{
	return &recs[t->first + row * t->nconf + c];
}

static void runq_of(const struct rec *const *r, int n, double *med, double *max)
{
	double v[8 * MAX_REPS];
	int m = 0;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < r[i]->n; j++)
			v[m++] = r[i]->rq[j];
	*med = median_of(v, m);
	*max = max_of(v, m);
}

/* k sweep: configurations 0 = no segments, 1 = striped, 2.. = k 6..18 */
static struct gw_conf ks_conf[2 + KS_NK];
static const uint64_t ks_every[1] = { 0 };
static struct gw_table ks_tab = { GW_KSWEEP, ks_conf, 2 + KS_NK, ks_every, 1, -1 };

static void print_ksweep(FILE *out)
{
	const struct rec *p = gw_rec(&ks_tab, 0, 0), *st = gw_rec(&ks_tab, 0, 1);
	char a[48];
	double lo, hi, l2, h2, m, x;

	fprintf(out, "== Stripe size: 2 writers on [0, 4095] and [4096, 8191], 1 us inside, "
		"%d CPUs, median of %d interleaved repetitions x %" PRIu64 " ms ==\n", ncpus,
		opt.reps, opt.duration_ms);
	fprintf(out, "64 segments by stripes of 2^k units (k=12: as large as the requests); "
		"striped: %u pthread_rwlocks of %u units (16 per request);\n/ plain, / "
		"striped: speed ratios of the medians (spread: per-repetition paired "
		"ratios)\n\n", GS_COUNT, 1u << GS_SHIFT);
	fprintf(out, "| %-22s | %-14s | %-24s | %-7s | %-11s | %-9s | %-11s | %-24s | "
		"%-9s |\n", "lock", "stripe/request", "Mops/s", "/ plain", "spread",
		"/ striped", "spread", "target", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int c = 0; c < ks_tab.nconf; c++) {
		const struct gw_conf *cf = &ks_conf[c];
		const struct rec *r = gw_rec(&ks_tab, 0, c);
		const struct rec *two[2] = { r, r };
		const char *target = "report";
		char name[48], rel[24];
		double rp = speed_ratio(r, p, &lo, &hi), rs = speed_ratio(r, st, &l2, &h2);

		runq_of(two, 1, &m, &x);
		if (cf->type == GT_SEG) {
			int d = (int)cf->k - 12;

			if (d < 0)
				snprintf(rel, sizeof(rel), "1/%u", 1u << -d);
			else
				snprintf(rel, sizeof(rel), "%u", 1u << d);
		} else {
			snprintf(rel, sizeof(rel), "%s", cf->type == GT_STRIPED ? "1/16" : "-");
		}
		if (cf->type == GT_SEG && cf->k == 12) {
			target = ">= 1.2x striped";
			json_row("k sweep, k=12 (stripe = request), vs striped", r, st, target,
				 1.2, false);
		} else if (cf->type == GT_SEG && cf->k == 6) {
			target = ">= 1.0x no segments";
			json_row("k sweep, k=6 (stripe = request / 64), vs no segments", r, p,
				 target, 1.0, false);
		}
		fmt_rec(a, sizeof(a), r);
		fprintf(out, "| %-22s | %-14s | %-24s | %7.3f | %5.3f..%5.3f | %9.3f | "
			"%5.3f..%5.3f | %-24s | %4.1f/%4.1f |\n",
			conf_name(cf, name, sizeof(name)), rel, a, rp, lo, hi, rs, l2, h2, target,
			m, x);
	}
	fprintf(out, "\n");
}

/* read-mostly: 0 = no segments, 1 = 64 segments k=8, 2 = striped */
static const struct gw_conf mo_conf[3] = {
	{ GT_PLAIN, 0, 0 }, { GT_SEG, 64, MO_K }, { GT_STRIPED, 0, 0 }
};
static const uint64_t mo_every[3] = { 10, 100, 1000 };
static struct gw_table mo_tab = { GW_MOSTLY, mo_conf, 3, mo_every, 3, -1 };

static void print_mostly(FILE *out)
{
	fprintf(out, "== Read-mostly: 2 threads, random 64-unit ranges in [0, 4159], 1 write "
		"in N, 0.2 us in + 0.2 us out, %d CPUs, median of %d interleaved "
		"repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "64 segments by stripes of 256 units (k=8); striped: %u pthread_rwlocks "
		"of 256 units; Mops/s, median [min..max];\nvs best: segmented / the faster "
		"of no segments and striped (medians; spread: per-repetition, against "
		"the better of the two)\n\n", GS_COUNT);
	fprintf(out, "| %-11s | %-24s | %-24s | %-24s | %-10s | %-12s | %-7s | %-11s | "
		"%-22s | %-9s |\n", "1 write in", "no segments", "64 segments, k=8",
		"64 striped rwlocks", "seg/plain", "seg/striped", "vs best", "spread",
		"target", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int row = 0; row < 3; row++) {
		const struct rec *p = gw_rec(&mo_tab, row, 0), *s = gw_rec(&mo_tab, row, 1);
		const struct rec *st = gw_rec(&mo_tab, row, 2);
		const struct rec *all[3] = { p, s, st };
		const struct rec *best = rec_median(p) >= rec_median(st) ? p : st;
		char a[48], b[48], c[48], sc[64];
		double lo, hi, l2, h2, m, x;
		double rp = speed_ratio(s, p, &l2, &h2), rs = speed_ratio(s, st, &l2, &h2);
		double rb = speed_ratio(s, best, &lo, &hi);
		double pr[MAX_REPS];
		int n = s->n;

		/* spread against the better of the two in each repetition */
		for (int j = 0; j < n; j++)
			pr[j] = s->v[j] / fmax(p->v[j], st->v[j]);
		lo = min_of(pr, n);
		hi = max_of(pr, n);
		runq_of(all, 3, &m, &x);
		fmt_rec(a, sizeof(a), p);
		fmt_rec(b, sizeof(b), s);
		fmt_rec(c, sizeof(c), st);
		fprintf(out, "| %-11" PRIu64 " | %-24s | %-24s | %-24s | %10.3f | %12.3f | %7.3f "
			"| %5.3f..%5.3f | %-22s | %4.1f/%4.1f |\n", mo_every[row], a, b, c, rp, rs,
			rb, lo, hi, ">= 1.0x best", m, x);
		snprintf(sc, sizeof(sc), "read-mostly 1/%" PRIu64 ", k=8, vs the better",
			 mo_every[row]);
		json_row(sc, s, best, ">= 1.0x the better", 1.0, false);
	}
	fprintf(out, "\n");
}

/* mixed: 0 = no segments, 1 = 16 segments of 64 KiB */
static const struct gw_conf mx_conf[2] = { { GT_PLAIN, 0, 0 }, { GT_SEG, MX_NSEG, MX_K } };
static const uint64_t mx_every[3] = { 10, 100, 1000 };
static struct gw_table mx_tab = { GW_MIXED, mx_conf, 2, mx_every, 3, -1 };

static void print_mixed(FILE *out)
{
	fprintf(out, "== Mixed: 2 threads writing random 4 KiB blocks of their own half of "
		"1 MiB (units = bytes), every N-th op a whole-range write zeroing the last "
		"64 KiB;\n   %d CPUs, median of %d interleaved repetitions x %" PRIu64
		" ms ==\n", ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "16 segments of 64 KiB (k=16) vs no segments; Mops/s (block and "
		"whole-range writes), median [min..max]; seg / plain: speed ratio\n\n");
	fprintf(out, "| %-17s | %-24s | %-24s | %-10s | %-11s | %-22s | %-9s |\n",
		"whole write every", "no segments", "16 segments, k=16", "seg/plain", "spread",
		"target", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- |\n");
	for (int row = 0; row < 3; row++) {
		const struct rec *p = gw_rec(&mx_tab, row, 0), *s = gw_rec(&mx_tab, row, 1);
		const struct rec *all[2] = { p, s };
		const char *target = mx_every[row] >= 1000 ? ">= 5.0x no segments"
							    : ">= 1.0x no segments";
		char a[48], b[48], sc[64];
		double lo, hi, m, x, r = speed_ratio(s, p, &lo, &hi);

		runq_of(all, 2, &m, &x);
		fmt_rec(a, sizeof(a), p);
		fmt_rec(b, sizeof(b), s);
		fprintf(out, "| %-17" PRIu64 " | %-24s | %-24s | %10.3f | %5.3f..%5.3f | %-22s | "
			"%4.1f/%4.1f |\n", mx_every[row], a, b, r, lo, hi, target, m, x);
		snprintf(sc, sizeof(sc), "mixed, whole write every %" PRIu64 ", k=16",
			 mx_every[row]);
		json_row(sc, s, p, target, mx_every[row] >= 1000 ? 5.0 : 1.0, false);
	}
	fprintf(out, "\n");
}

void run_targets_segwide(FILE *out)
{
	enum lock_kind rk[2];
	bool whole = seg_table_on("whole"), ks = seg_table_on("k-sweep");
	bool mo = seg_table_on("read-mostly"), mx = seg_table_on("mixed");

	if (!range_kinds(rk)) {
		fprintf(stderr, "rangelock-bench: --targets=segments needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	plain_kind = rk[0];
	seg_kind = rk[0] == LK_RANGE_FIFO ? LK_RANGE_FIFO_SEG : LK_RANGE_SEG;
	ks_conf[0] = (struct gw_conf){ GT_PLAIN, 0, 0 };
	ks_conf[1] = (struct gw_conf){ GT_STRIPED, 0, 0 };
	for (unsigned k = KS_KMIN; k <= KS_KMAX; k++)
		ks_conf[2 + k - KS_KMIN] = (struct gw_conf){ GT_SEG, 64, k };

	progress_total += (long)opt.reps * ((whole ? 3 * W_COUNT : 0) + (ks ? 2 + KS_NK : 0) +
					    (mo ? 9 : 0) + (mx ? 6 : 0));
	if (whole) {
		seg_geom_n = WHOLE_NSEG;
		seg_geom_k = WHOLE_K;
		run_whole();
		seg_geom_n = 64;
		seg_geom_k = 14;
	}
	if (ks)
		gw_measure(&ks_tab);
	if (mo)
		gw_measure(&mo_tab);
	if (mx)
		gw_measure(&mx_tab);
	progress_end();

	fprintf(out, "librangelock trees: %s policy (the first of --policy); every table "
		"side by side with and without segments in one run;\nchecks: writers' "
		"counters add up (a lost update is a failure), blocks never zeroed under "
		"their writer, trees empty afterwards\n\n", lk_policy(plain_kind));
	if (whole)
		print_whole(out);
	if (ks)
		print_ksweep(out);
	if (mo)
		print_mostly(out);
	if (mx)
		print_mixed(out);
}
