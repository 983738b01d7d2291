/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets: the scenarios of the performance issues, with
 * a "met?" column.  Every number printed is measured in this run; the
 * program measures, it does not judge (a miss is not a failure).
 *
 *  - issue 7: 2 threads (the machine has 2 CPUs), librangelock against
 *    pthread_rwlock (default), one table per librangelock policy;
 *  - issue 12: threads outnumber the CPUs 2:1 and 4:1 (4 and 8 threads on
 *    2 CPUs), full range, 1 us inside and 1 us outside, librangelock
 *    against pthread_mutex: throughput, per-thread min/max acquisitions and
 *    single waits.  Targets for the default policy; the FIFO tree's rows
 *    are reported only.
 *
 * Medians of opt.reps repetitions; within a repetition the lock kinds
 * alternate (measure_point()), so a burst of load elsewhere hits them alike.
 */
#define _GNU_SOURCE
#include "bench.h"

struct target_row {
	char scenario[64];
	const char *table;       /* "issue7" or "issue12" */
	enum lock_kind kind;     /* the librangelock policy of the row */
	char rl[48], base[48];   /* librangelock's value, the baseline's */
	double value;            /* the ratio, min/max or wait checked */
	double spread_lo, spread_hi;
	bool has_spread;
	const char *target;      /* "report": no target, measured only */
	bool met;
	bool report;
	double rq_med, rq_max;   /* run-queue wait of both sides, % */
};

#define MAX_TROWS 64
static struct target_row trows[MAX_TROWS];
static int ntrows;

static struct target_row *trow_new(const char *table, enum lock_kind kind,
				   const char *scenario)
{
	struct target_row *t;

	if (ntrows == MAX_TROWS) {
		fprintf(stderr, "rangelock-bench: internal: too many target rows\n");
		exit(2);
	}
	t = &trows[ntrows++];
	memset(t, 0, sizeof(*t));
	t->table = table;
	t->kind = kind;
	snprintf(t->scenario, sizeof(t->scenario), "%s", scenario);
	return t;
}

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

static void set_goal(struct target_row *t, double value, const char *target,
		     double goal, bool at_most, bool report)
{
	t->value = value;
	t->target = report ? "report" : target;
	t->report = report;
	t->met = at_most ? value <= goal : value >= goal;
}

/* ---- issue 7: 2 threads, vs pthread_rwlock ----------------------------- */

static void fmt_val(char *buf, size_t n, const struct rec *r, const char *unit,
		    double scale)
{
	double m = rec_median(r) / scale, sd = stddev_of(r->v, r->n) / scale;

	snprintf(buf, n, "%.4g %s (sd %.2g)", m, unit, sd);
}

static void target_from_pair(enum lock_kind kind, const char *scenario, int i_rl,
			     int i_rw, const char *unit, double scale,
			     const char *target, double goal)
{
	struct target_row *t = trow_new("issue7", kind, scenario);
	const struct rec *rl = &recs[i_rl], *rw = &recs[i_rw];

	fmt_val(t->rl, sizeof(t->rl), rl, unit, scale);
	fmt_val(t->base, sizeof(t->base), rw, unit, scale);
	t->spread_lo = rl->pr_min;
	t->spread_hi = rl->pr_max;
	t->has_spread = true;
	set_goal(t, rl->ratio, target, goal, false, false);
	target_runq(t, rl, rw);
}

static void issue7_rows(enum lock_kind k, int held0)
{
	const int T = 2;
	int i;

	target_from_pair(k, "1. uncontended lock+unlock, read (ns)",
			 find_rec("uncontended", "uncontended", k, WL_READ, 1),
			 find_rec("uncontended", "uncontended", LK_RW, WL_READ, 1),
			 "ns", 1, ">= 0.8", 0.8);
	target_from_pair(k, "1. uncontended lock+unlock, write (ns)",
			 find_rec("uncontended", "uncontended", k, WL_WRITE, 1),
			 find_rec("uncontended", "uncontended", LK_RW, WL_WRITE, 1),
			 "ns", 1, ">= 1.25", 1.25);
	target_from_pair(k, "2. full range, empty CS, 2 thr, read-only",
			 find_rec("throughput", "empty-cs", k, WL_READ, T),
			 find_rec("throughput", "empty-cs", LK_RW, WL_READ, T),
			 "Mops/s", 1e6, ">= 0.5", 0.5);
	target_from_pair(k, "2. full range, empty CS, 2 thr, write-only",
			 find_rec("throughput", "empty-cs", k, WL_WRITE, T),
			 find_rec("throughput", "empty-cs", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 0.7", 0.7);
	target_from_pair(k, "3. full range, 1us in + 1us out, read-only",
			 find_rec("throughput", "1us-in-out", k, WL_READ, T),
			 find_rec("throughput", "1us-in-out", LK_RW, WL_READ, T),
			 "Mops/s", 1e6, ">= 0.95", 0.95);
	target_from_pair(k, "3. full range, 1us in + 1us out, write-only",
			 find_rec("throughput", "1us-in-out", k, WL_WRITE, T),
			 find_rec("throughput", "1us-in-out", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 1.7", 1.7);
	target_from_pair(k, "3. full range, 1us in + 1us out, mixed 1R+1W",
			 find_rec("throughput", "1us-in-out", k, WL_MIXED, T),
			 find_rec("throughput", "1us-in-out", LK_RW, WL_MIXED, T),
			 "Mops/s", 1e6, ">= 10", 10);
	target_from_pair(k, "4. disjoint ranges, 1us in, 2 thr, write",
			 find_rec("throughput", "disjoint-1us", k, WL_WRITE, T),
			 find_rec("throughput", "disjoint-1us", LK_RW, WL_WRITE, T),
			 "Mops/s", 1e6, ">= 2.0", 2.0);

	/* 5. cost with 100k held / with 1k held (random free unit).  One
	 * measurement, in the first policy's tree: no contention there. */
	{
		int i1k = -1, i100k = -1;
		struct target_row *t = trow_new("issue7", k,
						"5. free-range lock+unlock, 100k held / 1k held");

		for (i = held0; i < nrecs; i++)
			if (!strcmp(recs[i].section, "held") && recs[i].held_random) {
				if (recs[i].held == 1000)
					i1k = i;
				if (recs[i].held == 100000)
					i100k = i;
			}
		if (i1k >= 0 && i100k >= 0) {
			double pr[MAX_REPS];
			int n = recs[i1k].n < recs[i100k].n ? recs[i1k].n : recs[i100k].n;

			snprintf(t->rl, sizeof(t->rl), "100k: %.4g ns (sd %.2g)",
				 rec_median(&recs[i100k]), stddev_of(recs[i100k].v, recs[i100k].n));
			snprintf(t->base, sizeof(t->base), "1k: %.4g ns (sd %.2g)",
				 rec_median(&recs[i1k]), stddev_of(recs[i1k].v, recs[i1k].n));
			for (int j = 0; j < n; j++)
				pr[j] = recs[i100k].v[j] / recs[i1k].v[j];
			t->spread_lo = min_of(pr, n);
			t->spread_hi = max_of(pr, n);
			t->has_spread = true;
			set_goal(t, rec_median(&recs[i100k]) / rec_median(&recs[i1k]),
				 "<= 2.5x", 2.5, true, false);
			target_runq(t, &recs[i100k], &recs[i1k]);
		} else {
			snprintf(t->rl, sizeof(t->rl), "not measured");
			snprintf(t->base, sizeof(t->base), "n/a");
			t->value = NAN;
			t->target = "<= 2.5x";
		}
	}

	/* 6. fairness: min/max per-thread acquisitions within each kind. */
	{
		int a = find_rec("throughput", "fairness-4thr", k, WL_MIXED, 4);
		int b = find_rec("throughput", "fairness-4thr", LK_RW, WL_MIXED, 4);
		struct rec *rl = &recs[a], *rw = &recs[b];
		struct target_row *t = trow_new("issue7", k,
						"6. fairness, mixed 2R+2W, min/max per kind");
		double frl = fmin(median_of(rl->frd, rl->n), median_of(rl->fwr, rl->n));
		double worst = fmin(min_of(rl->frd, rl->n), min_of(rl->fwr, rl->n));

		snprintf(t->rl, sizeof(t->rl), "R %.2f W %.2f [worst %.2f]",
			 median_of(rl->frd, rl->n), median_of(rl->fwr, rl->n), worst);
		snprintf(t->base, sizeof(t->base), "R %.2f W %.2f [worst %.2f]",
			 median_of(rw->frd, rw->n), median_of(rw->fwr, rw->n),
			 fmin(min_of(rw->frd, rw->n), min_of(rw->fwr, rw->n)));
		t->spread_lo = worst;
		t->spread_hi = fmax(max_of(rl->frd, rl->n), max_of(rl->fwr, rl->n));
		t->has_spread = true;
		set_goal(t, frl, ">= 0.5 (min/max)", 0.5, false, false);
		target_runq(t, rl, rw);
	}
}

/* ---- issue 12: threads outnumber the CPUs, vs pthread_mutex ------------ */

struct oversub {
	const char *tag;
	enum workload wl;
	int threads;
	char label[32];           /* "4 writers", "4 readers + 4 writers" */
	double throughput_goal;   /* x pthread_mutex */
	bool waits;               /* single-wait targets apply (8 threads) */
};

static struct oversub oversub[3];

static void oversub_setup(void)
{
	int t2 = 2 * ncpus, t4 = 4 * ncpus;

	oversub[0] = (struct oversub){ "oversub-2x", WL_WRITE, t2, "", 0.9, false };
	oversub[1] = (struct oversub){ "oversub-4x", WL_WRITE, t4, "", 0.9, true };
	oversub[2] = (struct oversub){ "oversub-4x", WL_MIXED, t4, "", 1.0, true };
	snprintf(oversub[0].label, sizeof(oversub[0].label), "%d writers", t2);
	snprintf(oversub[1].label, sizeof(oversub[1].label), "%d writers", t4);
	snprintf(oversub[2].label, sizeof(oversub[2].label), "%d readers + %d writers",
		 t4 - t4 / 2, t4 / 2);
}

/* Per repetition: the smallest min/max of the kinds with two threads or
 * more (writers; readers too in the mixed workload). */
static void fairness_per_rep(const struct rec *r, double *v)
{
	for (int k = 0; k < r->n; k++) {
		v[k] = 1.0;
		if (r->nw > 1)
			v[k] = fmin(v[k], r->fwr[k]);
		if (r->nr > 1)
			v[k] = fmin(v[k], r->frd[k]);
	}
}

static void fmt_fair(char *buf, size_t n, const struct rec *r)
{
	double v[MAX_REPS];

	fairness_per_rep(r, v);
	if (r->nr > 1)
		snprintf(buf, n, "W %.2f R %.2f [%.2f..%.2f]", median_of(r->fwr, r->n),
			 median_of(r->frd, r->n), min_of(v, r->n), max_of(v, r->n));
	else
		snprintf(buf, n, "W %.2f [%.2f..%.2f]", median_of(r->fwr, r->n),
			 min_of(v, r->n), max_of(v, r->n));
}

static void fmt_ms(char *buf, size_t n, const double *v, int cnt)
{
	snprintf(buf, n, "%.3f ms [%.3f..%.3f]", median_of(v, cnt) / 1e6,
		 min_of(v, cnt) / 1e6, max_of(v, cnt) / 1e6);
}

static void issue12_rows(enum lock_kind k)
{
	const bool report = k != LK_RANGE;  /* targets are the default policy's */
	char s[64];

	for (int i = 0; i < 3; i++) {
		const struct oversub *o = &oversub[i];
		const struct rec *rl = &recs[find_rec("throughput", o->tag, k, o->wl, o->threads)];
		const struct rec *mx = &recs[find_rec("throughput", o->tag, LK_MUTEX, o->wl,
						       o->threads)];
		struct target_row *t;
		double pr[MAX_REPS], v[MAX_REPS];
		int n = rl->n < mx->n ? rl->n : mx->n;

		/* throughput, as a multiple of pthread_mutex's */
		snprintf(s, sizeof(s), "%s, throughput", o->label);
		t = trow_new("issue12", k, s);
		snprintf(t->rl, sizeof(t->rl), "%.4g Mops/s [%.3g..%.3g]", rec_median(rl) / 1e6,
			 min_of(rl->v, rl->n) / 1e6, max_of(rl->v, rl->n) / 1e6);
		snprintf(t->base, sizeof(t->base), "%.4g Mops/s [%.3g..%.3g]",
			 rec_median(mx) / 1e6, min_of(mx->v, mx->n) / 1e6,
			 max_of(mx->v, mx->n) / 1e6);
		for (int j = 0; j < n; j++)
			pr[j] = rl->v[j] / mx->v[j];
		t->spread_lo = min_of(pr, n);
		t->spread_hi = max_of(pr, n);
		t->has_spread = true;
		set_goal(t, rec_median(rl) / rec_median(mx), o->throughput_goal == 0.9 ?
			 ">= 0.9x mutex" : ">= 1.0x mutex", o->throughput_goal, false, report);
		target_runq(t, rl, mx);

		/* min/max acquisitions per kind */
		snprintf(s, sizeof(s), "%s, min/max acquisitions", o->label);
		t = trow_new("issue12", k, s);
		fmt_fair(t->rl, sizeof(t->rl), rl);
		fmt_fair(t->base, sizeof(t->base), mx);
		fairness_per_rep(rl, v);
		t->spread_lo = min_of(v, rl->n);
		t->spread_hi = max_of(v, rl->n);
		t->has_spread = true;
		set_goal(t, median_of(v, rl->n), ">= 0.5", 0.5, false, report);
		target_runq(t, rl, mx);

		if (!o->waits)
			continue;
		/* single waits: 99th percentile and longest, ms */
		snprintf(s, sizeof(s), "%s, single wait p99 (ms)", o->label);
		t = trow_new("issue12", k, s);
		fmt_ms(t->rl, sizeof(t->rl), rl->wait_p99[WAIT_ALL], rl->n);
		fmt_ms(t->base, sizeof(t->base), mx->wait_p99[WAIT_ALL], mx->n);
		t->spread_lo = min_of(rl->wait_p99[WAIT_ALL], rl->n) / 1e6;
		t->spread_hi = max_of(rl->wait_p99[WAIT_ALL], rl->n) / 1e6;
		t->has_spread = true;
		set_goal(t, median_of(rl->wait_p99[WAIT_ALL], rl->n) / 1e6, "<= 5 ms", 5,
			 true, report);
		target_runq(t, rl, mx);

		snprintf(s, sizeof(s), "%s, longest single wait (ms)", o->label);
		t = trow_new("issue12", k, s);
		fmt_ms(t->rl, sizeof(t->rl), rl->wait_max[WAIT_ALL], rl->n);
		fmt_ms(t->base, sizeof(t->base), mx->wait_max[WAIT_ALL], mx->n);
		t->spread_lo = min_of(rl->wait_max[WAIT_ALL], rl->n) / 1e6;
		t->spread_hi = max_of(rl->wait_max[WAIT_ALL], rl->n) / 1e6;
		t->has_spread = true;
		set_goal(t, median_of(rl->wait_max[WAIT_ALL], rl->n) / 1e6, "<= 20 ms", 20,
			 true, report);
		target_runq(t, rl, mx);
	}
}

/* ---- printing ---------------------------------------------------------- */

static void dashes(FILE *out, int n)
{
	fputc('|', out);
	for (int i = 0; i < n + 2; i++)
		fputc('-', out);
}

/* The rows of one table and policy; @sw, @vw: widths of the scenario and
 * value columns (issue 7's table keeps its earlier layout). */
static void print_rows(FILE *out, const char *table, enum lock_kind k,
		       const char *base_name, const char *value_name, int sw, int vw)
{
	fprintf(out, "| %-*s | %-*s | %-*s | %6s | %-16s | %-4s | %-13s | %-11s |\n",
		sw, "scenario", vw, lk_name[k], vw, base_name, value_name, "target", "met?",
		"spread", "runq %");
	dashes(out, sw);
	dashes(out, vw);
	dashes(out, vw);
	dashes(out, 6);
	dashes(out, 16);
	dashes(out, 4);
	dashes(out, 13);
	dashes(out, 11);
	fprintf(out, "|\n");
	for (int i = 0; i < ntrows; i++) {
		struct target_row *t = &trows[i];
		char spread[32], rq[32];

		if (strcmp(t->table, table) || t->kind != k)
			continue;
		if (t->has_spread)
			snprintf(spread, sizeof(spread), "%.2f..%.2f", t->spread_lo, t->spread_hi);
		else
			snprintf(spread, sizeof(spread), "n/a");
		snprintf(rq, sizeof(rq), "%.1f/%.1f", t->rq_med, t->rq_max);
		fprintf(out, "| %-*s | %-*s | %-*s | %6.2f | %-16s | %-4s | %-13s | %-11s |\n",
			sw, t->scenario, vw, t->rl, vw, t->base, t->value, t->target,
			t->report ? "-" : t->met ? "yes" : "NO", spread, rq);
	}
	fprintf(out, "\n");
}

static const char *policy_title(enum lock_kind k)
{
	return k == LK_RANGE_FIFO ? "FIFO tree (range_lock_tree_set_fifo)"
				  : "default policy";
}

static void print_issue7(FILE *out, const enum lock_kind *rk, int nrk, int held0)
{
	const int T = 2;

	fprintf(out, "== Targets (2 threads): 2 threads on %d CPUs, median of %d interleaved "
		"repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "ratio: librangelock vs pthread_rwlock (default), > 1 = librangelock "
		"faster\nrow 5: cost with 100k ranges held / with 1k held (librangelock "
		"only, random free unit; lower is better)\nrow 6: min/max of the "
		"per-thread acquisitions within a kind, median over repetitions "
		"[worst repetition]\n");
	fprintf(out, "values: median (sd: standard deviation); spread: min..max of the per-repetition "
		"paired ratios\nrunq: time the measuring threads waited for a CPU "
		"(other load), %% of their time, median/max over the row's runs\n\n");
	for (int p = 0; p < nrk; p++) {
		fprintf(out, "librangelock: %s\n", policy_title(rk[p]));
		print_rows(out, "issue7", rk[p], "pthread_rwlock", "ratio", 46, 26);
	}

	/* The 2-thread mixed run (1 reader + 1 writer): per-kind throughput. */
	for (int p = 0; p < nrk; p++) {
		int a = find_rec("throughput", "1us-in-out", rk[p], WL_MIXED, T);
		int b = find_rec("throughput", "1us-in-out", LK_RW, WL_MIXED, T);

		fprintf(out, "mixed 1R+1W detail (ops/s, median): %s reads %.0f "
			"writes %.0f; pthread_rwlock reads %.0f writes %.0f\n", lk_name[rk[p]],
			median_of(recs[a].rd, recs[a].n), median_of(recs[a].wr, recs[a].n),
			median_of(recs[b].rd, recs[b].n), median_of(recs[b].wr, recs[b].n));
	}
	{
		int i1k = -1, i100k = -1;
		for (int i = held0; i < nrecs; i++)
			if (!strcmp(recs[i].section, "held") && !recs[i].held_random) {
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

/* Every lock kind of the issue 12 scenarios side by side. */
static void print_issue12_detail(FILE *out, const enum lock_kind *kinds, int nk)
{
	fprintf(out, "All locks in the oversubscribed scenarios (median [min..max] over the "
		"repetitions):\n\n");
	fprintf(out, "| %-22s | %-17s | %-24s | %-18s | %-18s | %-30s | %-30s | %-9s |\n",
		"scenario", "lock", "Mops/s", "writers min/max", "readers min/max",
		"wait p99 (ms)", "longest wait (ms)", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int i = 0; i < 3; i++) {
		const struct oversub *o = &oversub[i];

		for (int k = 0; k < nk; k++) {
			const struct rec *r = &recs[find_rec("throughput", o->tag, kinds[k], o->wl,
							     o->threads)];
			char tp[48], fw[32], fr[32], p99[48], mx[48];

			snprintf(tp, sizeof(tp), "%.4g [%.3g..%.3g]", rec_median(r) / 1e6,
				 min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
			snprintf(fw, sizeof(fw), "%.2f [%.2f..%.2f]", median_of(r->fwr, r->n),
				 min_of(r->fwr, r->n), max_of(r->fwr, r->n));
			if (r->nr > 1)
				snprintf(fr, sizeof(fr), "%.2f [%.2f..%.2f]",
					 median_of(r->frd, r->n), min_of(r->frd, r->n),
					 max_of(r->frd, r->n));
			else
				snprintf(fr, sizeof(fr), "n/a");
			fmt_ms(p99, sizeof(p99), r->wait_p99[WAIT_ALL], r->n);
			fmt_ms(mx, sizeof(mx), r->wait_max[WAIT_ALL], r->n);
			fprintf(out, "| %-22s | %-17s | %-24s | %-18s | %-18s | %-30s | %-30s | "
				"%9.1f |\n", o->label, lk_name[kinds[k]], tp, fw, fr, p99, mx,
				median_of(r->rq, r->n));
		}
	}
	fprintf(out, "\n");
}

static void print_issue12(FILE *out, const enum lock_kind *rk, int nrk,
			  const enum lock_kind *kinds, int nk)
{
	fprintf(out, "== Targets (oversubscribed): threads outnumber the %d CPUs, full range, "
		"1 us in + 1 us out, median of %d interleaved repetitions x %" PRIu64
		" ms ==\n", ncpus, opt.reps, opt.duration_ms);
	fprintf(out, "value: throughput = librangelock / pthread_mutex (spread: min..max of "
		"the per-repetition paired ratios);\n  min/max acquisitions = smallest/largest "
		"per-thread count, the smaller of writers' and readers' (spread: over the "
		"repetitions);\n  single wait = lock call to its return, all acquisitions "
		"of the run, 99th percentile / longest, ms (spread: over the repetitions)\n"
		"targets apply to the default policy; the FIFO tree's rows are reported "
		"only (met? '-')\n\n");
	for (int p = 0; p < nrk; p++) {
		fprintf(out, "librangelock: %s\n", policy_title(rk[p]));
		print_rows(out, "issue12", rk[p], "pthread_mutex", "value", 48, 34);
	}
	print_issue12_detail(out, kinds, nk);
}

/* ---- the run ----------------------------------------------------------- */

void run_targets(FILE *out)
{
	enum lock_kind rk[2], two[3], over[4];
	int nrk = range_kinds(rk), n2 = 0, n12 = 0;
	const int T = 2;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets needs librangelock (--locks range)\n");
		exit(2);
	}
	two[n2++] = LK_RW;
	over[n12++] = LK_MUTEX;
	over[n12++] = LK_RW;
	for (int p = 0; p < nrk; p++) {
		two[n2++] = rk[p];
		over[n12++] = rk[p];
	}
	oversub_setup();

	progress_total = (long)opt.reps * (2 * n2 + 2 * nheld_counts + 7 * n2 + 3 * n12);
	/* issue 7 */
	measure_uncontended(two, n2, "uncontended");
	measure_point("throughput", "empty-cs", two, n2, WL_READ, RG_FULL, T, 0, 0);
	measure_point("throughput", "empty-cs", two, n2, WL_WRITE, RG_FULL, T, 0, 0);
	measure_point("throughput", "1us-in-out", two, n2, WL_READ, RG_FULL, T, 1000, 1000);
	measure_point("throughput", "1us-in-out", two, n2, WL_WRITE, RG_FULL, T, 1000, 1000);
	measure_point("throughput", "1us-in-out", two, n2, WL_MIXED, RG_FULL, T, 1000, 1000);
	measure_point("throughput", "disjoint-1us", two, n2, WL_WRITE, RG_DISJOINT, T, 1000, 0);
	/* Fairness needs two threads of a kind: 2 readers + 2 writers. */
	measure_point("throughput", "fairness-4thr", two, n2, WL_MIXED, RG_FULL, 4, 1000, 1000);
	int held0 = measure_held("held");
	/* issue 12 */
	for (int i = 0; i < 3; i++)
		measure_point("throughput", oversub[i].tag, over, n12, oversub[i].wl, RG_FULL,
			      oversub[i].threads, 1000, 1000);
	progress_end();
	compute_ratios();

	ntrows = 0;
	for (int p = 0; p < nrk; p++)
		issue7_rows(rk[p], held0);
	for (int p = 0; p < nrk; p++)
		issue12_rows(rk[p]);
	print_issue7(out, rk, nrk, held0);
	print_issue12(out, rk, nrk, over, n12);
}

void write_json_targets(FILE *f)
{
	fprintf(f, "  \"targets\": [\n");
	for (int i = 0; i < ntrows; i++) {
		struct target_row *t = &trows[i];

		fprintf(f, "    {\"table\": \"%s\", \"policy\": \"%s\", \"scenario\": ",
			t->table, lk_policy(t->kind));
		json_str(f, t->scenario);
		fprintf(f, ", \"librangelock\": ");
		json_str(f, t->rl);
		fprintf(f, ", \"%s\": ", !strcmp(t->table, "issue7") ? "pthread_rwlock"
								     : "pthread_mutex");
		json_str(f, t->base);
		fprintf(f, ", \"ratio\": ");
		json_num(f, t->value);
		fprintf(f, ", \"spread_min\": ");
		json_num(f, t->has_spread ? t->spread_lo : NAN);
		fprintf(f, ", \"spread_max\": ");
		json_num(f, t->has_spread ? t->spread_hi : NAN);
		fprintf(f, ", \"target\": ");
		json_str(f, t->target);
		fprintf(f, ", \"met\": %s}%s\n",
			t->report ? "null" : t->met ? "true" : "false",
			i + 1 < ntrows ? "," : "");
	}
	fprintf(f, "  ],\n");
}
