/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: the throughput workload, and the "throughput" section.
 *
 * N threads lock, touch the protected data, do work_in ns of busy work,
 * unlock, do work_out ns of busy work, for duration_ms.  Per run: reads and
 * writes per second, the per-thread acquisition counts (min/max within
 * readers and within writers), the single waits (lock call to its return)
 * in per-thread histograms, the run-queue wait, and the exclusion check:
 * writers increment a per-unit counter (a plain read before the work
 * inside, a plain write after it), and the counters must add up to the
 * write acquisitions.
 */
#define _GNU_SOURCE
#include "bench.h"

enum role { ROLE_READ, ROLE_WRITE, ROLE_ALTERNATE, ROLE_READ_MOSTLY };

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
	struct wait_hist wait_rd, wait_wr; /* single waits, ticks */
};

struct run {
	enum lock_kind kind;
	enum ranges rg;
	int nthreads;
	uint64_t in_ticks, out_ticks;
	uint64_t pool;
	uint64_t write_every;     /* ROLE_READ_MOSTLY: 1 write per N ops, 0: none */
	uint64_t range_len;       /* RG_RANDOM: fixed length (0: the seed's) */
	struct lockset *ls;
	struct slot *slots;       /* pool + 1 units */
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

/*
 * Single waits are timed when there is work both inside and outside: the
 * busy loop reads the clock anyway, so the wait is the time from the last
 * clock read of the work outside to the first of the work inside, that is
 * the lock call plus a few ns of loop (choosing the random range), with no
 * extra clock read (one costs ~40 ns in this VM).  The work inside starts
 * at that read, so it includes the update of the protected data.  Without
 * work on either side the loop is left as it was: timing would cost as much
 * as an uncontended lock.
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	const enum lock_kind kind = r->kind;
	const uint64_t in = r->in_ticks, out = r->out_ticks;
	const bool timed = in && out;
	struct range_lock req;
	uint64_t start = 0, last = RANGE_LOCK_FULL, sink = 0, t, v;
	uint64_t nread = 0, nwrite = 0;
	bool write = w->role == ROLE_WRITE, alt = w->role == ROLE_ALTERNATE;
	const bool mostly = w->role == ROLE_READ_MOSTLY;
	const uint64_t every = r->write_every, len = r->range_len;

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
	t = ticks();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		if (alt)
			write = !write;
		if (mostly)
			write = every && (xorshift64(&w->rng) >> 4) % every == 0;
		if (r->rg == RG_RANDOM && len) {
			/* len units at a random start in [0, pool + 1 - len] */
			start = (xorshift64(&w->rng) >> 4) % (r->pool + 2 - len);
			last = start + len - 1;
			if (lk_is_range(kind))
				range_lock_init(&req, start, last);
		} else if (r->rg == RG_RANDOM) {
			/* The seed's locktorture: last in [0, pool], start in
			 * [0, last]. */
			last = (xorshift64(&w->rng) >> 4) % (r->pool + 1);
			start = (xorshift64(&w->rng) >> 4) % (last + 1);
			if (lk_is_range(kind))
				range_lock_init(&req, start, last);
		}
		lk_lock(r->ls, kind, write, &req);
		if (timed) {
			uint64_t t1 = ticks();

			hist_add(write ? &w->wait_wr : &w->wait_rd, t1 - t);
			/* checked: a plain read before the work and a plain
			 * write after it, so that two writers inside together
			 * lose an update unless their critical sections do not
			 * overlap at all */
			v = r->slots[start].v;
			work_from(t1, in);
			if (write)
				r->slots[start].v = v + 1;
			else
				sink += v;
		} else {
			v = r->slots[start].v;
			if (in)
				work(in);
			if (write)
				r->slots[start].v = v + 1;
			else
				sink += v;
		}
		lk_unlock(r->ls, kind, write, &req);
		if (write)
			nwrite++;
		else
			nread++;
		if (out)
			t = work(out);
	}
	w->runq_ns = runq_wait_ns() - rq0;
	w->nread = nread;
	w->nwrite = nwrite;
	w->sink = sink;
	return NULL;
}

static uint64_t ticks_to_ns(uint64_t t)
{
	return (uint64_t)((double)t / ticks_per_ns + 0.5);
}

/* The waits of all threads: 99th percentile and longest, per kind. */
static void collect_waits(const struct worker *w, int nthreads, struct run_result *res)
{
	static struct wait_hist h[WAIT_OF_COUNT]; /* only the main thread */
	uint64_t acquisitions = 0;

	memset(h, 0, sizeof(h));
	for (int i = 0; i < nthreads; i++) {
		hist_merge(&h[WAIT_READ], &w[i].wait_rd);
		hist_merge(&h[WAIT_WRITE], &w[i].wait_wr);
		acquisitions += w[i].nread + w[i].nwrite;
	}
	h[WAIT_ALL] = h[WAIT_READ];
	hist_merge(&h[WAIT_ALL], &h[WAIT_WRITE]);
	for (int k = 0; k < WAIT_OF_COUNT; k++) {
		res->wait_p99_ns[k] = ticks_to_ns(hist_quantile(&h[k], 0.99));
		res->wait_max_ns[k] = ticks_to_ns(h[k].max);
	}
	if (h[WAIT_ALL].n != acquisitions) {
		fprintf(stderr, "\nrangelock-bench: WAIT COUNT MISMATCH: %" PRIu64
			" waits recorded for %" PRIu64 " acquisitions\n", h[WAIT_ALL].n,
			acquisitions);
		check_failures++;
	}
}

void run_workload(enum lock_kind kind, enum workload wl, enum ranges rg,
		  int nthreads, uint64_t work_in, uint64_t work_out,
		  uint64_t duration_ms, struct lockset *ls_given,
		  struct run_result *res)
{
	run_workload_shaped(kind, wl, rg, nthreads, work_in, work_out, duration_ms,
			    ls_given, NULL, res);
}

void run_workload_shaped(enum lock_kind kind, enum workload wl, enum ranges rg,
			 int nthreads, uint64_t work_in, uint64_t work_out,
			 uint64_t duration_ms, struct lockset *ls_given,
			 const struct work_shape *shape, struct run_result *res)
{
	const struct work_shape none = { 0 };
	struct futex_counter fc = { .n = 0 };
	uint64_t csw0, fx0 = 0;

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
	if (!shape)
		shape = &none;
	r->write_every = shape->write_every;
	r->range_len = shape->range_len > opt.pool + 1 ? opt.pool + 1 : shape->range_len;
	r->ls = ls_given ? ls_given : lockset_new(kind);
	r->slots = aligned_alloc(CACHELINE, sizeof(struct slot) * (size_t)(opt.pool + 1));
	if (!r->slots) {
		perror("aligned_alloc");
		exit(2);
	}
	memset((void *)r->slots, 0, sizeof(struct slot) * (size_t)(opt.pool + 1));
	atomic_init(&r->stop, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads + 1);

	/* Before the threads exist: they inherit the counter. */
	if (shape->count_futex)
		futex_counter_open(&fc);
	uint64_t unit = (opt.pool + 1) / (uint64_t)nthreads;
	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		w[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		if (shape->read_mostly)
			w[i].role = ROLE_READ_MOSTLY;
		else if (wl == WL_READ)
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
	csw0 = context_switches();
	if (fc.n)
		fx0 = futex_counter_read(&fc);
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
	/* After the joins: the threads' counts are the process's now.  Both
	 * include the main thread's sleep and joins: a few per run. */
	res->csw = context_switches() - csw0;
	if (fc.n) {
		res->futex_calls = futex_counter_read(&fc) - fx0;
		res->futex_counted = true;
		futex_counter_close(&fc);
	}
	if (!res->nr) res->rmin = 0;
	if (!res->nw) res->wmin = 0;
	res->secs = (double)(t1 - t0) / 1e9;
	res->runq_pct = 100.0 * (double)runq / ((double)(t1 - t0) * nthreads);
	res->has_wait = work_in && work_out && r->in_ticks && r->out_ticks;
	if (res->has_wait)
		collect_waits(w, nthreads, res);
	for (uint64_t u = 0; u <= opt.pool; u++)
		sum += r->slots[u].v;
	res->exclusion_ok = sum == res->writes;
	/* LK_NONE (no lock: the ceiling of --targets=13) loses updates by
	 * design; it is not checked. */
	if (!res->exclusion_ok && kind != LK_NONE) {
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
	rc->has_wait = res->has_wait;
	rc->csw[k] = res->reads + res->writes ?
		     (double)res->csw / (double)(res->reads + res->writes) : NAN;
	for (int j = 0; j < WAIT_OF_COUNT; j++) {
		rc->wait_p99[j][k] = (double)res->wait_p99_ns[j];
		rc->wait_max[j][k] = (double)res->wait_max_ns[j];
	}
}

int throughput_kinds(enum lock_kind *k)
{
	int n = 0;
	const enum lock_kind order[] = { LK_RW, LK_RWW, LK_MUTEX, LK_RANGE, LK_RANGE_FIFO };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (opt.locks[order[i]] || order[i] == LK_RW)
			k[n++] = order[i];
	return n;
}

int measure_point(const char *section, const char *tag, const enum lock_kind *kinds,
		  int nk, enum workload wl, enum ranges rg, int threads,
		  uint64_t work_in, uint64_t work_out)
{
	return measure_point_shaped(section, tag, kinds, nk, wl, rg, threads, work_in,
				    work_out, NULL);
}

int measure_point_shaped(const char *section, const char *tag,
			 const enum lock_kind *kinds, int nk, enum workload wl,
			 enum ranges rg, int threads, uint64_t work_in, uint64_t work_out,
			 const struct work_shape *shape)
{
	int first = nrecs;

	for (int k = 0; k < nk; k++) {
		struct rec *rc = rec_new(section, wl, rg, threads, kinds[k], "ops_per_s",
					 "ops/s", true);
		rc->work_in = work_in;
		rc->work_out = work_out;
		if (shape) {
			rc->write_every = shape->write_every;
			rc->range_len = shape->range_len;
		}
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
			run_workload_shaped(kinds[k], wl, rg, threads, work_in, work_out,
					    opt.duration_ms, NULL, shape, &res);
			add_sample(&recs[first + k], &res);
		}
	return first;
}

void measure_futex_calls(int first, int nk, const struct work_shape *shape)
{
	struct work_shape counted = { 0 };

	if (shape)
		counted = *shape;
	counted.count_futex = true;
	for (int rep = 0; rep < opt.futex_reps; rep++)
		for (int k = 0; k < nk; k++) {
			struct rec *rc = &recs[first + k];
			struct run_result res;

			progress("%s %s/%s %dthr %s futex count %d/%d", rc->tag[0] ? rc->tag :
				 "throughput", wl_name[rc->wl], rg_name[rc->rg], rc->threads,
				 lk_name[rc->lock], rep + 1, opt.futex_reps);
			run_workload_shaped(rc->lock, (enum workload)rc->wl, (enum ranges)rc->rg,
					    rc->threads, rc->work_in, rc->work_out,
					    opt.duration_ms, NULL, &counted, &res);
			if (!res.futex_counted)
				return;  /* not possible here: futex_count_method */
			if (res.reads + res.writes)
				rc->futex[rc->nfutex++] = (double)res.futex_calls /
							  (double)(res.reads + res.writes);
		}
}

/* ---- the "throughput" section ------------------------------------------ */

static long throughput_steps(void)
{
	enum lock_kind kinds[LK_COUNT];
	long nwl = 0, nrg = 0;

	for (int i = 0; i < WL_COUNT; i++)
		nwl += opt.wl[i];
	for (int i = 0; i < RG_COUNT; i++)
		nrg += opt.rg[i];
	return nwl * nrg * opt.nthreads_list * throughput_kinds(kinds) * opt.reps;
}

static void throughput_run(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = throughput_kinds(kinds);

	for (int wl = 0; wl < WL_COUNT; wl++)
		for (int rg = 0; rg < RG_COUNT; rg++) {
			if (!opt.wl[wl] || !opt.rg[rg])
				continue;
			for (int t = 0; t < opt.nthreads_list; t++)
				measure_point("throughput", NULL, kinds, nk, wl, rg,
					      opt.threads[t], opt.work_in_ns, opt.work_out_ns);
		}
}

static bool is_plain_throughput(const struct rec *r)
{
	return !strcmp(r->section, "throughput") && !r->tag[0];
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

static void print_fairness(FILE *out)
{
	char name[64];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (is_plain_throughput(&recs[i]) && recs[i].wl == WL_MIXED &&
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

			if (!is_plain_throughput(r) || r->wl != WL_MIXED || r->rg != rg ||
			    r->threads <= 2)
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

/* The smaller of the writers' and readers' median min/max (kinds with two
 * threads or more); NAN when neither has two. */
static double fairness_of(const struct rec *r)
{
	double f = NAN;

	if (r->nw > 1)
		f = median_of(r->fwr, r->n);
	if (r->nr > 1)
		f = isnan(f) ? median_of(r->frd, r->n) : fmin(f, median_of(r->frd, r->n));
	return f;
}

static const struct rec *point_rec(const struct rec *r, enum lock_kind k)
{
	for (int j = 0; j < nrecs; j++)
		if (recs[j].lock == k && same_point(&recs[j], r))
			return &recs[j];
	return NULL;
}

/*
 * One Markdown table of every point against pthread_mutex (the lock a
 * program would otherwise use when threads outnumber CPUs): medians in
 * Mops/s, librangelock / pthread_mutex per policy, min/max acquisitions
 * (the smaller of writers' and readers') and single waits per lock.
 */
static void print_summary(FILE *out)
{
	enum lock_kind kinds[LK_COUNT], rk[2];
	int nk = throughput_kinds(kinds), nrk = range_kinds(rk);
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (is_plain_throughput(&recs[i]) && recs[i].lock == LK_MUTEX)
			any = true;
	if (!any || !nrk)
		return;
	fprintf(out, "== Summary against pthread_mutex (Markdown): median Mops/s; "
		"min/max = smaller of writers' and readers' per-thread min/max; "
		"wait = p99 / longest single wait, ms ==\n\n| workload | ranges | threads |");
	for (int k = 0; k < nk; k++)
		fprintf(out, " %s |", lk_name[kinds[k]]);
	for (int p = 0; p < nrk; p++)
		fprintf(out, " %s / mutex |", lk_short[rk[p]]);
	for (int k = 0; k < nk; k++)
		fprintf(out, " min/max %s |", lk_short[kinds[k]]);
	for (int k = 0; k < nk; k++)
		fprintf(out, " wait %s |", lk_short[kinds[k]]);
	fprintf(out, "\n|");
	for (int c = 0; c < 3 + 3 * nk + nrk; c++)
		fprintf(out, " --- |");
	fprintf(out, "\n");
	for (int i = 0; i < nrecs; i++) {
		const struct rec *m = &recs[i], *r;

		if (!is_plain_throughput(m) || m->lock != LK_MUTEX)
			continue;
		fprintf(out, "| %s | %s | %d |", wl_name[m->wl], rg_name[m->rg], m->threads);
		for (int k = 0; k < nk; k++) {
			r = point_rec(m, kinds[k]);
			fprintf(out, r ? " %.3f |" : " |", r ? rec_median(r) / 1e6 : 0);
		}
		for (int p = 0; p < nrk; p++) {
			r = point_rec(m, rk[p]);
			fprintf(out, r ? " %.2f |" : " |", r ? rec_median(r) / rec_median(m) : 0);
		}
		for (int k = 0; k < nk; k++) {
			r = point_rec(m, kinds[k]);
			if (r && !isnan(fairness_of(r)))
				fprintf(out, " %.2f |", fairness_of(r));
			else
				fprintf(out, " n/a |");
		}
		for (int k = 0; k < nk; k++) {
			r = point_rec(m, kinds[k]);
			if (r && r->has_wait)
				fprintf(out, " %.3f / %.2f |",
					median_of(r->wait_p99[WAIT_ALL], r->n) / 1e6,
					median_of(r->wait_max[WAIT_ALL], r->n) / 1e6);
			else
				fprintf(out, " n/a |");
		}
		fprintf(out, "\n");
	}
	fprintf(out, "\n");
}

static void throughput_print(FILE *out)
{
	char name[64], rs[48], ws[64], fs[64], tail[192];

	fprintf(out, "== Throughput, ops/s (work inside %" PRIu64 " ns, outside %" PRIu64
		" ns) ==\n", opt.work_in_ns, opt.work_out_ns);
	for (int wl = 0; wl < WL_COUNT; wl++)
		for (int rg = 0; rg < RG_COUNT; rg++) {
			bool any = false;

			for (int i = 0; i < nrecs; i++)
				if (is_plain_throughput(&recs[i]) && recs[i].wl == wl &&
				    recs[i].rg == rg)
					any = true;
			if (!any)
				continue;
			fprintf(out, "(%s, %s)\n", wl_title[wl], rg_title[rg]);
			for (int i = 0; i < nrecs; i++) {
				struct rec *r = &recs[i];

				if (!is_plain_throughput(r) || r->wl != wl || r->rg != rg)
					continue;
				if (wl == WL_MIXED) {
					snprintf(name, sizeof(name), "%s-write-%dthr:",
						 lk_short[r->lock], r->threads);
					kind_ratio_str(rs, sizeof(rs), r, true);
					wait_str(ws, sizeof(ws), r, WAIT_WRITE);
					snprintf(tail, sizeof(tail), "%s%s", rs, ws);
					print_line(out, name, median_of(r->wr, r->n),
						   mean_of(r->wr, r->n), stddev_of(r->wr, r->n),
						   tail, r);
					snprintf(name, sizeof(name), "%s-read-%dthr:",
						 lk_short[r->lock], r->threads);
					kind_ratio_str(rs, sizeof(rs), r, false);
					wait_str(ws, sizeof(ws), r, WAIT_READ);
					snprintf(tail, sizeof(tail), "%s%s", rs, ws);
					print_line(out, name, median_of(r->rd, r->n),
						   mean_of(r->rd, r->n), stddev_of(r->rd, r->n),
						   tail, r);
					snprintf(name, sizeof(name), "%s-total-%dthr:",
						 lk_short[r->lock], r->threads);
				} else {
					snprintf(name, sizeof(name), "%s-%dthr:",
						 lk_short[r->lock], r->threads);
				}
				ratio_str(rs, sizeof(rs), r);
				wait_str(ws, sizeof(ws), r, WAIT_ALL);
				fair_str(fs, sizeof(fs), r);
				snprintf(tail, sizeof(tail), "%s%s%s", rs, ws, fs);
				print_line(out, name, rec_median(r), mean_of(r->v, r->n),
					   stddev_of(r->v, r->n), tail, r);
			}
			fprintf(out, "\n");
		}
	print_fairness(out);
	print_summary(out);
}

const struct bench_section bench_section_throughput = {
	.name = "throughput",
	.steps = throughput_steps,
	.run = throughput_run,
	.print = throughput_print,
};
