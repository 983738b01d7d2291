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

#define MAX_TROWS 320
static struct target_row trows[MAX_TROWS];
static int ntrows;

struct target_row *trow_new(const char *table, enum lock_kind kind, const char *scenario)
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

void target_runq(struct target_row *t, const struct rec *a, const struct rec *b)
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

void set_goal(struct target_row *t, double value, const char *target, double goal,
	      bool at_most, bool report)
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

	t->peer = lk_name[rw->lock];

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

/* ---- full-range scenarios of many threads (issue 12; --targets=word) --- */

void full_scenarios_oversub(struct full_scenario *o, const char *prefix)
{
	int t2 = 2 * ncpus, t4 = 4 * ncpus;

	memset(o, 0, NOVERSUB * sizeof(*o));
	snprintf(o[0].tag, sizeof(o[0].tag), "%s-2x", prefix);
	snprintf(o[1].tag, sizeof(o[1].tag), "%s-4x", prefix);
	snprintf(o[2].tag, sizeof(o[2].tag), "%s-4x", prefix);
	o[0].wl = WL_WRITE;
	o[1].wl = WL_WRITE;
	o[2].wl = WL_MIXED;
	o[0].threads = t2;
	o[1].threads = o[2].threads = t4;
	for (int i = 0; i < NOVERSUB; i++) {
		o[i].in = o[i].out = 1000;
		o[i].waits = true;
	}
	snprintf(o[0].label, sizeof(o[0].label), "%d writers", t2);
	snprintf(o[1].label, sizeof(o[1].label), "%d writers", t4);
	snprintf(o[2].label, sizeof(o[2].label), "%d readers + %d writers", t4 - t4 / 2,
		 t4 / 2);
}

int full_scenario_measure(const struct full_scenario *o, const enum lock_kind *kinds,
			  int nk)
{
	return measure_point_shaped("throughput", o->tag, kinds, nk, o->wl, RG_FULL,
				    o->threads, o->in, o->out, o->shape);
}

const struct rec *full_scenario_rec(const struct full_scenario *o, enum lock_kind k)
{
	int i = lookup_rec("throughput", o->tag, k, o->wl, o->threads);

	return i < 0 ? NULL : &recs[i];
}

/* Per repetition: the smallest min/max of the kinds with two threads or
 * more (writers; readers too in the mixed workload, unless @writers_only). */
static void fairness_per_rep(const struct rec *r, bool writers_only, double *v)
{
	for (int k = 0; k < r->n; k++) {
		v[k] = 1.0;
		if (r->nw > 1)
			v[k] = fmin(v[k], r->fwr[k]);
		if (r->nr > 1 && !writers_only)
			v[k] = fmin(v[k], r->frd[k]);
	}
}

static void fmt_fair(char *buf, size_t n, const struct rec *r, bool writers_only,
		     const char *prefix)
{
	double v[MAX_REPS];

	fairness_per_rep(r, writers_only, v);
	if (r->nr > 1)
		snprintf(buf, n, "%sW %.2f R %.2f [%.2f..%.2f]", prefix,
			 median_of(r->fwr, r->n), median_of(r->frd, r->n), min_of(v, r->n),
			 max_of(v, r->n));
	else
		snprintf(buf, n, "%sW %.2f [%.2f..%.2f]", prefix, median_of(r->fwr, r->n),
			 min_of(v, r->n), max_of(v, r->n));
}

static void fmt_ms(char *buf, size_t n, const double *v, int cnt)
{
	snprintf(buf, n, "%.3f ms [%.3f..%.3f]", median_of(v, cnt) / 1e6,
		 min_of(v, cnt) / 1e6, max_of(v, cnt) / 1e6);
}

void fmt_mops(char *buf, size_t n, const struct rec *r, const char *prefix)
{
	snprintf(buf, n, "%s%.4g Mops/s [%.3g..%.3g]", prefix, rec_median(r) / 1e6,
		 min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
}

struct target_row *throughput_row(const struct row_ctx *c, const char *scenario,
				  const struct rec *rl, const struct rec *peer,
				  const char *target, double goal)
{
	struct target_row *t = trow_new(c->table, c->kind, scenario);
	double pr[MAX_REPS];
	int n = rl->n < peer->n ? rl->n : peer->n;

	fmt_mops(t->rl, sizeof(t->rl), rl, "");
	fmt_mops(t->base, sizeof(t->base), peer, c->peer_prefix);
	t->peer = lk_name[peer->lock];
	for (int j = 0; j < n; j++)
		pr[j] = rl->v[j] / peer->v[j];
	t->spread_lo = min_of(pr, n);
	t->spread_hi = max_of(pr, n);
	t->has_spread = true;
	set_goal(t, rec_median(rl) / rec_median(peer), target, goal, false, c->report);
	target_runq(t, rl, peer);
	return t;
}

void fairness_row(const struct row_ctx *c, const char *label, const struct rec *rl,
		  const struct rec *peer)
{
	struct target_row *t;
	double v[MAX_REPS];
	char s[64];

	snprintf(s, sizeof(s), "%s, min/max acquisitions", label);
	t = trow_new(c->table, c->kind, s);
	fmt_fair(t->rl, sizeof(t->rl), rl, c->writers_only, "");
	fmt_fair(t->base, sizeof(t->base), peer, c->writers_only, c->peer_prefix);
	t->peer = lk_name[peer->lock];
	fairness_per_rep(rl, c->writers_only, v);
	t->spread_lo = min_of(v, rl->n);
	t->spread_hi = max_of(v, rl->n);
	t->has_spread = true;
	set_goal(t, median_of(v, rl->n), ">= 0.5", 0.5, false, c->report);
	target_runq(t, rl, peer);
}

/* One single-wait row: @v of librangelock and of the peer, ns per repetition. */
static void wait_row(const struct row_ctx *c, const char *scenario, const struct rec *rl,
		     const double *v_rl, const struct rec *peer, const double *v_peer,
		     const char *target, double goal_ms)
{
	struct target_row *t = trow_new(c->table, c->kind, scenario);
	char ms[48];

	fmt_ms(t->rl, sizeof(t->rl), v_rl, rl->n);
	fmt_ms(ms, sizeof(ms), v_peer, peer->n);
	snprintf(t->base, sizeof(t->base), "%s%s", c->peer_prefix, ms);
	t->peer = lk_name[peer->lock];
	t->spread_lo = min_of(v_rl, rl->n) / 1e6;
	t->spread_hi = max_of(v_rl, rl->n) / 1e6;
	t->has_spread = true;
	set_goal(t, median_of(v_rl, rl->n) / 1e6, target, goal_ms, true, c->report);
	target_runq(t, rl, peer);
}

void wait_rows(const struct row_ctx *c, const char *label, const struct rec *rl,
	       const struct rec *peer)
{
	char s[64];

	snprintf(s, sizeof(s), "%s, single wait p99 (ms)", label);
	wait_row(c, s, rl, rl->wait_p99[WAIT_ALL], peer, peer->wait_p99[WAIT_ALL],
		 "<= 5 ms", 5);
	snprintf(s, sizeof(s), "%s, longest single wait (ms)", label);
	wait_row(c, s, rl, rl->wait_max[WAIT_ALL], peer, peer->wait_max[WAIT_ALL],
		 "<= 20 ms", 20);
}

static struct full_scenario oversub[NOVERSUB];

static void issue12_rows(enum lock_kind k)
{
	/* targets are the default policy's */
	const struct row_ctx c = { "issue12", k, "", k != LK_RANGE, false };
	char s[64];

	for (int i = 0; i < NOVERSUB; i++) {
		const struct full_scenario *o = &oversub[i];
		const struct rec *rl = full_scenario_rec(o, k);
		const struct rec *mx = full_scenario_rec(o, LK_MUTEX);

		/* throughput, as a multiple of pthread_mutex's */
		snprintf(s, sizeof(s), "%s, throughput", o->label);
		throughput_row(&c, s, rl, mx, o->goal_text, o->goal);
		fairness_row(&c, o->label, rl, mx);
		if (o->waits)
			wait_rows(&c, o->label, rl, mx);
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
static void print_target_rows(FILE *out, const char *table, enum lock_kind k,
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
		char spread[32], rq[32], value[16];

		if (strcmp(t->table, table) || t->kind != k)
			continue;
		if (t->has_spread)
			snprintf(spread, sizeof(spread), "%.2f..%.2f", t->spread_lo, t->spread_hi);
		else
			snprintf(spread, sizeof(spread), "n/a");
		snprintf(rq, sizeof(rq), "%.1f/%.1f", t->rq_med, t->rq_max);
		if (isfinite(t->value))
			snprintf(value, sizeof(value), "%6.2f", t->value);
		else
			snprintf(value, sizeof(value), "%6s", "n/a");
		fprintf(out, "| %-*s | %-*s | %-*s | %s | %-16s | %-4s | %-13s | %-11s |\n",
			sw, t->scenario, vw, t->rl, vw, t->base, value, t->target,
			t->report ? "-" : t->met ? "yes" : "NO", spread, rq);
	}
	fprintf(out, "\n");
}

static const char *policy_title(enum lock_kind k)
{
	switch (k) {
	case LK_RANGE_FIFO:
		return "FIFO tree (range_lock_tree_set_fifo)";
	case LK_RANGE_SEG:
		return "default policy, 64 segments by stripes of 2^14 units "
		       "(range_lock_tree_set_segments)";
	case LK_RANGE_FIFO_SEG:
		return "FIFO tree, 64 segments by stripes of 2^14 units";
	case LK_RANGE_DW:
		return "default policy, readers first (range_lock_tree_defer_writers)";
	case LK_RANGE_SEG_DW:
		return "default policy, readers first, 64 segments by stripes of 2^14 units";
	default:
		return "default policy";
	}
}

void print_target_tables(FILE *out, const char *table, const enum lock_kind *rk, int nrk,
			 const char *base_name, const char *value_name, int sw, int vw)
{
	for (int p = 0; p < nrk; p++) {
		fprintf(out, "librangelock: %s\n", policy_title(rk[p]));
		print_target_rows(out, table, rk[p], base_name, value_name, sw, vw);
	}
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
	print_target_tables(out, "issue7", rk, nrk, "pthread_rwlock", "ratio", 46, 26);

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

/* Every lock kind of @no scenarios side by side (a kind not measured in a
 * scenario is left out of it). */
void print_full_detail(FILE *out, const char *title, const struct full_scenario *o,
		       int no, const enum lock_kind *kinds, int nk)
{
	fprintf(out, "All locks in %s scenarios (median [min..max] over the repetitions):"
		"\n\n", title);
	fprintf(out, "| %-22s | %-17s | %-24s | %-18s | %-18s | %-30s | %-30s | %-9s |\n",
		"scenario", "lock", "Mops/s", "writers min/max", "readers min/max",
		"wait p99 (ms)", "longest wait (ms)", "runq %");
	fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int i = 0; i < no; i++)
		for (int k = 0; k < nk; k++) {
			const struct rec *r = full_scenario_rec(&o[i], kinds[k]);
			char tp[48], fw[32], fr[32], p99[48] = "n/a", mx[48] = "n/a";

			if (!r)
				continue;
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
			if (r->has_wait) {
				fmt_ms(p99, sizeof(p99), r->wait_p99[WAIT_ALL], r->n);
				fmt_ms(mx, sizeof(mx), r->wait_max[WAIT_ALL], r->n);
			}
			fprintf(out, "| %-22s | %-17s | %-24s | %-18s | %-18s | %-30s | %-30s | "
				"%9.1f |\n", o[i].label, lk_name[kinds[k]], tp, fw, fr, p99, mx,
				median_of(r->rq, r->n));
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
	print_target_tables(out, "issue12", rk, nrk, "pthread_mutex", "value", 48, 34);
	print_full_detail(out, "the issue 12", oversub, NOVERSUB, kinds, nk);
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
	full_scenarios_oversub(oversub, "oversub");
	oversub[0].goal = oversub[1].goal = 0.9;
	oversub[0].goal_text = oversub[1].goal_text = ">= 0.9x mutex";
	oversub[2].goal = 1.0;
	oversub[2].goal_text = ">= 1.0x mutex";
	oversub[0].waits = false;

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
	for (int i = 0; i < NOVERSUB; i++)
		full_scenario_measure(&oversub[i], over, n12);
	progress_end();
	compute_ratios();

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
		if (!strcmp(t->table, "issue7") || !strcmp(t->table, "issue12")) {
			fprintf(f, ", \"%s\": ", !strcmp(t->table, "issue7") ? "pthread_rwlock"
									     : "pthread_mutex");
		} else {
			fprintf(f, ", \"peer\": ");
			json_str(f, t->peer ? t->peer : "");
			fprintf(f, ", \"peer_value\": ");
		}
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
