/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=13: the scenarios of issue 13 (the reader fast
 * path), with a "met?" column.  Every number printed is measured in this
 * run; the program measures, it does not judge (a miss is not a failure).
 *
 * Each scenario runs, interleaved repetition by repetition, on
 * pthread_rwlock (default), librangelock, and librangelock on the same
 * tree type with range_lock_tree_set_fast_read(tree, 0) ("today": every
 * read through the internal lock, the cost before the fast path), for each
 * policy of --policy.  Two ratios per row, both > 1 = the fast path is
 * faster: vs pthread_rwlock and vs today.  The target of a row checks one
 * of them, on the medians; its spread is the min..max of that ratio paired
 * repetition by repetition.  Beside them, in the throughput rows, the
 * same loop with no lock at all ("no lock"): the ceiling no lock can beat,
 * which says whether a target is reachable at all.
 */
#define _GNU_SOURCE
#include "bench.h"

/* "No worse than today": the fast path's median at least this fraction of
 * today's.  Not 1.00: at the API commit, where set_fast_read() only
 * recorded the flag, the two columns ran the same code, and this table's
 * vs-today medians came out 0.98..1.05 (0.85 in the noisy empty-CS row):
 * 1.00 would be a coin toss. */
#define NO_WORSE 0.97

enum t13_base { VS_RWLOCK, VS_TODAY, VS_REPORT };

struct t13_scenario {
	const char *tag;          /* the records' scenario (CSV) */
	const char *title;
	bool uncontended;         /* measure_uncontended(), else measure_point() */
	enum workload wl;
	enum ranges rg;
	int threads;
	uint64_t in, out;
	struct work_shape shape;
	/* Up to two targets on the same measurement (the moonshot). */
	struct {
		enum t13_base vs;
		const char *text;
		double goal;
	} t[2];
};

#define T13_MOSTLY(n) { .read_mostly = true, .write_every = (n), .range_len = 64 }

static const struct t13_scenario scen[] = {
	{ "t13-read-empty", "2 readers, full range, empty CS", false, WL_READ, RG_FULL, 2,
	  0, 0, { 0 },
	  { { VS_RWLOCK, ">= 1.0x rwlock", 1.0 },
	    { VS_RWLOCK, ">= 2.0x (moonshot)", 2.0 } } },
	{ "t13-read-1us", "2 readers, full range, 1us in + 1us out", false, WL_READ,
	  RG_FULL, 2, 1000, 1000, { 0 },
	  { { VS_RWLOCK, ">= 1.0x rwlock", 1.0 } } },
	{ "t13-uncontended", "uncontended read lock+unlock, 1 thr (ns)", true, WL_READ,
	  RG_FULL, 1, 0, 0, { 0 },
	  { { VS_RWLOCK, ">= 1.0x rwlock", 1.0 } } },
	{ "t13-uncontended", "uncontended write lock+unlock, 1 thr (ns)", true, WL_WRITE,
	  RG_FULL, 1, 0, 0, { 0 },
	  { { VS_REPORT, "report", 0 } } },
	{ "t13-mostly-1000", "read-mostly, 1 write per 1000 ops", false, WL_MIXED,
	  RG_RANDOM, 2, 200, 200, T13_MOSTLY(1000),
	  { { VS_RWLOCK, ">= 1.5x rwlock", 1.5 } } },
	{ "t13-mostly-100", "read-mostly, 1 write per 100 ops", false, WL_MIXED,
	  RG_RANDOM, 2, 200, 200, T13_MOSTLY(100),
	  { { VS_RWLOCK, ">= 1.0x rwlock", 1.0 } } },
	{ "t13-mostly-10", "read-mostly, 1 write per 10 ops", false, WL_MIXED,
	  RG_RANDOM, 2, 200, 200, T13_MOSTLY(10),
	  { { VS_TODAY, ">= 0.97x today", NO_WORSE } } },
	{ "t13-alternate", "1 thread alternating read/write, empty CS", false, WL_MIXED,
	  RG_FULL, 1, 0, 0, { 0 },
	  { { VS_TODAY, "cost <= 1.2x today", 1 / 1.2 } } },
	{ "t13-disjoint-wr", "2 disjoint writers, 1us inside", false, WL_WRITE,
	  RG_DISJOINT, 2, 1000, 0, { 0 },
	  { { VS_RWLOCK, ">= 2.0x rwlock", 2.0 } } },
};
#define NSCEN (int)(sizeof(scen) / sizeof(scen[0]))

struct t13_row {
	const struct t13_scenario *s;
	int ti;                   /* which of s->t */
	enum lock_kind kind;      /* the fast-path kind (policy) of the row */
	int i_fast, i_rw, i_today;/* records */
	int i_none;               /* the no-lock ceiling, -1: none */
	double vs_rw, vs_today;   /* median ratios, > 1 = fast path faster */
	double lo, hi;            /* paired ratios of the checked comparison */
	bool met;
};

#define MAX_T13 32
static struct t13_row rows[MAX_T13];
static int nrows;

/* median(a) vs median(b), > 1 = a better; per-repetition paired min/max. */
static double pair_ratio(const struct rec *a, const struct rec *b, double *lo, double *hi)
{
	double pr[MAX_REPS];
	int n = a->n < b->n ? a->n : b->n;

	for (int j = 0; j < n; j++)
		pr[j] = a->higher_better ? a->v[j] / b->v[j] : b->v[j] / a->v[j];
	if (lo)
		*lo = min_of(pr, n);
	if (hi)
		*hi = max_of(pr, n);
	return a->higher_better ? rec_median(a) / rec_median(b)
				: rec_median(b) / rec_median(a);
}

/* The record of scenario @s for @kind. */
static int scen_rec(const struct t13_scenario *s, enum lock_kind kind)
{
	for (int i = 0; i < nrecs; i++) {
		const struct rec *r = &recs[i];

		if (!strcmp(r->tag, s->tag) && r->lock == kind && r->wl == (int)s->wl &&
		    r->threads == s->threads &&
		    !strcmp(r->section, s->uncontended ? "uncontended" : "throughput"))
			return i;
	}
	fprintf(stderr, "rangelock-bench: internal: %s/%s not found\n", s->tag, lk_name[kind]);
	exit(2);
}

static void add_rows(enum lock_kind k)
{
	for (int i = 0; i < NSCEN; i++)
		for (int ti = 0; ti < 2 && scen[i].t[ti].text; ti++) {
			struct t13_row *r = &rows[nrows++];
			double lo, hi;

			r->s = &scen[i];
			r->ti = ti;
			r->kind = k;
			r->i_fast = scen_rec(r->s, k);
			r->i_rw = scen_rec(r->s, LK_RW);
			r->i_today = scen_rec(r->s, lk_nofast_of(k));
			r->i_none = r->s->uncontended ? -1 : scen_rec(r->s, LK_NONE);
			r->vs_rw = pair_ratio(&recs[r->i_fast], &recs[r->i_rw], &r->lo, &r->hi);
			r->vs_today = pair_ratio(&recs[r->i_fast], &recs[r->i_today], &lo, &hi);
			if (r->s->t[ti].vs == VS_TODAY) {
				r->lo = lo;
				r->hi = hi;
				r->met = r->vs_today >= r->s->t[ti].goal;
			} else {
				r->met = r->vs_rw >= r->s->t[ti].goal;
			}
		}
}

/* "median [min..max]" of one record. */
static void fmt_rec(char *buf, size_t n, const struct rec *r)
{
	if (r->higher_better)
		snprintf(buf, n, "%.4g [%.3g..%.3g] M/s", rec_median(r) / 1e6,
			 min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
	else
		snprintf(buf, n, "%.4g [%.3g..%.3g] ns", rec_median(r), min_of(r->v, r->n),
			 max_of(r->v, r->n));
}

static void print_t13(FILE *out, const enum lock_kind *rk, int nrk)
{
	fprintf(out, "== Targets (reader fast path): %d CPUs, median of %d "
		"interleaved repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps,
		opt.duration_ms);
	fprintf(out, "columns: librangelock (fast reads allowed, the default), "
		"pthread_rwlock (default), today = librangelock on the same tree type with\n"
		"  range_lock_tree_set_fast_read(tree, 0); values: median [min..max] over "
		"the repetitions (M/s: Mops/s; ns: cost)\n"
		"vs rwlock, vs today: median ratios, > 1 = librangelock (fast path) "
		"faster; met? checks the ratio the target names, on the medians\n"
		"spread: min..max of that ratio paired repetition by repetition; runq: "
		"median/max %% of the row's threads' time spent waiting for a CPU\n"
		"no lock: the same loop without any lock (Mops/s, median; writes race, "
		"unchecked): the ceiling of the row\n"
		"read-mostly: 2 threads, each op a write with probability 1/N, random "
		"64-unit ranges in [0, %" PRIu64 "], 0.2 us in + 0.2 us out\n\n", opt.pool);
	for (int p = 0; p < nrk; p++) {
		fprintf(out, "librangelock: %s\n", rk[p] == LK_RANGE_FIFO ?
			"FIFO tree (range_lock_tree_set_fifo)" : "default policy");
		fprintf(out, "| %-42s | %-26s | %-26s | %-26s | %9s | %8s | %-19s | %-4s | "
			"%-11s | %-9s | %-7s |\n", "scenario", "librangelock", "pthread_rwlock",
			"today (fast read off)", "vs rwlock", "vs today", "target", "met?",
			"spread", "runq %", "no lock");
		fprintf(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		for (int i = 0; i < nrows; i++) {
			const struct t13_row *r = &rows[i];
			const struct rec *f = &recs[r->i_fast], *b = &recs[r->i_rw],
					 *t = &recs[r->i_today];
			char vf[48], vb[48], vt[48], sp[32], rq[32], nl[32] = "n/a";
			double q[3 * MAX_REPS];
			int nq = 0;

			if (r->kind != rk[p])
				continue;
			fmt_rec(vf, sizeof(vf), f);
			fmt_rec(vb, sizeof(vb), b);
			fmt_rec(vt, sizeof(vt), t);
			snprintf(sp, sizeof(sp), "%.2f..%.2f", r->lo, r->hi);
			for (int j = 0; j < f->n; j++)
				q[nq++] = f->rq[j];
			for (int j = 0; j < b->n; j++)
				q[nq++] = b->rq[j];
			for (int j = 0; j < t->n; j++)
				q[nq++] = t->rq[j];
			snprintf(rq, sizeof(rq), "%.1f/%.1f", median_of(q, nq), max_of(q, nq));
			if (r->i_none >= 0)
				snprintf(nl, sizeof(nl), "%.4g", rec_median(&recs[r->i_none]) / 1e6);
			fprintf(out, "| %-42s | %-26s | %-26s | %-26s | %9.2f | %8.2f | %-19s | "
				"%-4s | %-11s | %-9s | %-7s |\n", r->ti ? "  (same run)" : r->s->title,
				vf, vb, vt, r->vs_rw, r->vs_today, r->s->t[r->ti].text,
				r->s->t[r->ti].vs == VS_REPORT ? "-" : r->met ? "yes" : "NO",
				sp, rq, nl);
		}
		fprintf(out, "\n");
	}

	/* The read-mostly rows: the write share each lock actually ran. */
	fprintf(out, "read-mostly detail, writes as %% of operations (median), "
		"reads/s and writes/s (median):\n");
	for (int i = 0; i < NSCEN; i++) {
		const struct t13_scenario *s = &scen[i];
		enum lock_kind kinds[1 + 4];
		int nk = 0;

		if (!s->shape.read_mostly)
			continue;
		kinds[nk++] = LK_RW;
		for (int p = 0; p < nrk; p++) {
			kinds[nk++] = rk[p];
			kinds[nk++] = lk_nofast_of(rk[p]);
		}
		fprintf(out, "  1/%-5" PRIu64, s->shape.write_every);
		for (int k = 0; k < nk; k++) {
			const struct rec *r = &recs[scen_rec(s, kinds[k])];
			double rd = median_of(r->rd, r->n), wr = median_of(r->wr, r->n);

			fprintf(out, "  %s %.3f%% (%.3g/%.3g)", lk_short[kinds[k]],
				100.0 * wr / (rd + wr), rd, wr);
		}
		fprintf(out, "\n");
	}
	fprintf(out, "\n");
}

void run_targets13(FILE *out)
{
	enum lock_kind rk[2], kinds[1 + 4 + 1];
	int nrk = range_kinds(rk), nk = 0;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets=fast-read needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	kinds[nk++] = LK_RW;
	for (int p = 0; p < nrk; p++) {
		kinds[nk++] = rk[p];
		kinds[nk++] = lk_nofast_of(rk[p]);
	}
	kinds[nk] = LK_NONE;  /* the ceiling: throughput rows only */
	progress_total = (opt.targets ? progress_total : 0) + (long)opt.reps * nk * 2;
	for (int i = 0; i < NSCEN; i++)
		if (!scen[i].uncontended)
			progress_total += (long)opt.reps * (nk + 1);

	measure_uncontended(kinds, nk, "t13-uncontended");
	for (int i = 0; i < NSCEN; i++) {
		const struct t13_scenario *s = &scen[i];

		if (!s->uncontended)
			measure_point_shaped("throughput", s->tag, kinds, nk + 1, s->wl, s->rg,
					     s->threads, s->in, s->out, &s->shape);
	}
	progress_end();
	compute_ratios();

	nrows = 0;
	for (int p = 0; p < nrk; p++)
		add_rows(rk[p]);
	print_t13(out, rk, nrk);
}

void write_json_targets13(FILE *f)
{
	fprintf(f, "  \"targets13\": [\n");
	for (int i = 0; i < nrows; i++) {
		const struct t13_row *r = &rows[i];

		fprintf(f, "    {\"policy\": \"%s\", \"scenario\": ", lk_policy(r->kind));
		json_str(f, r->s->title);
		fprintf(f, ", \"tag\": ");
		json_str(f, r->s->tag);
		fprintf(f, ", \"librangelock\": ");
		json_num(f, rec_median(&recs[r->i_fast]));
		fprintf(f, ", \"pthread_rwlock\": ");
		json_num(f, rec_median(&recs[r->i_rw]));
		fprintf(f, ", \"today\": ");
		json_num(f, rec_median(&recs[r->i_today]));
		fprintf(f, ", \"no_lock\": ");
		json_num(f, r->i_none >= 0 ? rec_median(&recs[r->i_none]) : NAN);
		fprintf(f, ", \"unit\": \"%s\", \"vs_rwlock\": ", recs[r->i_fast].unit);
		json_num(f, r->vs_rw);
		fprintf(f, ", \"vs_today\": ");
		json_num(f, r->vs_today);
		fprintf(f, ", \"spread_min\": ");
		json_num(f, r->lo);
		fprintf(f, ", \"spread_max\": ");
		json_num(f, r->hi);
		fprintf(f, ", \"target\": ");
		json_str(f, r->s->t[r->ti].text);
		fprintf(f, ", \"met\": %s}%s\n",
			r->s->t[r->ti].vs == VS_REPORT ? "null" : r->met ? "true" : "false",
			i + 1 < nrows ? "," : "");
	}
	fprintf(f, "  ],\n");
}
