/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: issue 13's sweeps, two opt-in sections (they run only
 * when --sections names them):
 *
 *  - read-scaling: read-only, the thread counts of --threads (default 1, 2,
 *    4, 8 on 2 CPUs: 0.5x to 4x the CPUs), full range and disjoint
 *    per-thread ranges, empty critical sections and --work-in-ns inside +
 *    --work-out-ns outside (default 1 us + 1 us);
 *  - write-ratio: read-mostly, as many threads as CPUs (at least 2), each
 *    operation a write with probability 1/N for N in --write-ratios (default
 *    0 = never, 10000, 1000, 100, 10, 2), random 64-unit ranges, 0.2 us in
 *    and 0.2 us out (issue 13's read-mostly scenario).
 *
 * Both run pthread_rwlock (default), librangelock and librangelock with
 * fast reads off (range_lock_tree_set_fast_read(tree, 0), "range-nofast")
 * in the policies of --policy, interleaved repetition by repetition.
 */
#define _GNU_SOURCE
#include "bench.h"

static int sweep_kinds(enum lock_kind *k)
{
	int n = 0;

	k[n++] = LK_RW;
	n += range_kinds_nofast(k + n);
	return n;
}

/* The record of @k at the point of @m, or NULL. */
static const struct rec *kind_at(const struct rec *m, enum lock_kind k)
{
	for (int j = 0; j < nrecs; j++)
		if (recs[j].lock == k && same_point(&recs[j], m))
			return &recs[j];
	return NULL;
}

static void print_header_cells(FILE *out, const enum lock_kind *kinds, int nk,
			       const char *first)
{
	int cols = 1;

	fprintf(out, "| %s |", first);
	for (int k = 0; k < nk; k++, cols++)
		fprintf(out, " %s |", lk_short[kinds[k]]);
	for (int k = 1; k < nk; k++, cols++)
		fprintf(out, " %s / rwlock |", lk_short[kinds[k]]);
	for (int k = 1; k < nk; k++)
		if (!lk_is_nofast(kinds[k]) && k + 1 < nk && lk_is_nofast(kinds[k + 1])) {
			fprintf(out, " %s / today |", lk_short[kinds[k]]);
			cols++;
		}
	fprintf(out, "\n|");
	for (int c = 0; c < cols; c++)
		fprintf(out, " --- |");
	fprintf(out, "\n");
}

/* The cells of one point: medians (Mops/s), ratios vs rwlock, fast/today. */
static void print_point_cells(FILE *out, const struct rec *m, const enum lock_kind *kinds,
			      int nk)
{
	for (int k = 0; k < nk; k++) {
		const struct rec *r = kind_at(m, kinds[k]);

		if (r)
			fprintf(out, " %.4g [%.3g..%.3g] |", rec_median(r) / 1e6,
				min_of(r->v, r->n) / 1e6, max_of(r->v, r->n) / 1e6);
		else
			fprintf(out, " |");
	}
	for (int k = 1; k < nk; k++) {
		const struct rec *r = kind_at(m, kinds[k]);

		fprintf(out, r && r->has_ratio ? " %.2f |" : " |", r ? r->ratio : 0);
	}
	for (int k = 1; k < nk; k++)
		if (!lk_is_nofast(kinds[k]) && k + 1 < nk && lk_is_nofast(kinds[k + 1])) {
			const struct rec *f = kind_at(m, kinds[k]), *t = kind_at(m, kinds[k + 1]);

			fprintf(out, f && t ? " %.2f |" : " |",
				f && t ? rec_median(f) / rec_median(t) : 0);
		}
}

/* ---- read-scaling ------------------------------------------------------ */

static const enum ranges scale_rg[] = { RG_FULL, RG_DISJOINT };
#define NSCALE_RG 2

static int scale_works(uint64_t in[2], uint64_t out[2])
{
	in[0] = out[0] = 0;
	in[1] = opt.work_in_ns;
	out[1] = opt.work_out_ns;
	return in[1] || out[1] ? 2 : 1;
}

static long scale_steps(void)
{
	enum lock_kind k[LK_COUNT];
	uint64_t in[2], out[2];
	long n = 0;

	for (int g = 0; g < NSCALE_RG; g++)
		n += opt.rg[scale_rg[g]];
	return n * scale_works(in, out) * opt.nthreads_list * sweep_kinds(k) * opt.reps;
}

static void scale_run(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = sweep_kinds(kinds);
	uint64_t in[2], out[2];
	int nw = scale_works(in, out);

	for (int g = 0; g < NSCALE_RG; g++) {
		if (!opt.rg[scale_rg[g]])
			continue;
		for (int w = 0; w < nw; w++)
			for (int t = 0; t < opt.nthreads_list; t++)
				measure_point("read-scaling", NULL, kinds, nk, WL_READ,
					      scale_rg[g], opt.threads[t], in[w], out[w]);
	}
}

static void scale_print(FILE *out)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = sweep_kinds(kinds);
	uint64_t in[2], wout[2];
	int nw = scale_works(in, wout);
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].section, "read-scaling"))
			any = true;
	if (!any)
		return;
	fprintf(out, "== Read scaling: read-only, Mops/s median [min..max]; "
		"x / rwlock and x / today (fast reads off): median ratios; %d CPUs ==\n\n",
		ncpus);
	for (int g = 0; g < NSCALE_RG; g++)
		for (int w = 0; w < nw; w++) {
			bool head = false;

			for (int i = 0; i < nrecs; i++) {
				const struct rec *m = &recs[i];

				if (strcmp(m->section, "read-scaling") || m->lock != LK_RW ||
				    m->rg != (int)scale_rg[g] || m->work_in != in[w] ||
				    m->work_out != wout[w])
					continue;
				if (!head) {
					fprintf(out, "(%s, %" PRIu64 " ns in + %" PRIu64
						" ns out)\n", rg_title[scale_rg[g]], in[w], wout[w]);
					print_header_cells(out, kinds, nk, "readers");
					head = true;
				}
				fprintf(out, "| %d |", m->threads);
				print_point_cells(out, m, kinds, nk);
				fprintf(out, "\n");
			}
			if (head)
				fprintf(out, "\n");
		}
}

const struct bench_section bench_section_read_scaling = {
	.name = "read-scaling",
	.needs_range = true,
	.opt_in = true,
	.steps = scale_steps,
	.run = scale_run,
	.print = scale_print,
};

/* ---- write-ratio ------------------------------------------------------- */

static int ratio_threads(void)
{
	return ncpus > 2 ? ncpus : 2;
}

static long ratio_steps(void)
{
	enum lock_kind k[LK_COUNT];

	return (long)opt.nwrite_every * sweep_kinds(k) * opt.reps;
}

static void ratio_run(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = sweep_kinds(kinds);

	for (int i = 0; i < opt.nwrite_every; i++) {
		struct work_shape shape = {
			.read_mostly = true, .write_every = opt.write_every[i], .range_len = 64
		};

		measure_point_shaped("write-ratio", NULL, kinds, nk, WL_MIXED, RG_RANDOM,
				     ratio_threads(), 200, 200, &shape);
	}
}

static void ratio_print(FILE *out)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = sweep_kinds(kinds);
	bool head = false;

	for (int i = 0; i < nrecs; i++) {
		const struct rec *m = &recs[i];
		char every[32];

		if (strcmp(m->section, "write-ratio") || m->lock != LK_RW)
			continue;
		if (!head) {
			fprintf(out, "== Write ratio: %d threads, each op a write "
				"with probability 1/N, random 64-unit ranges in [0, %" PRIu64
				"], 0.2 us in + 0.2 us out; Mops/s median [min..max] ==\n\n",
				m->threads, opt.pool);
			print_header_cells(out, kinds, nk, "1 write per N ops");
			head = true;
		}
		if (m->write_every)
			snprintf(every, sizeof(every), "1/%" PRIu64, m->write_every);
		else
			snprintf(every, sizeof(every), "0 (no writes)");
		fprintf(out, "| %s |", every);
		print_point_cells(out, m, kinds, nk);
		fprintf(out, "\n");
	}
	if (head)
		fprintf(out, "\n");
}

const struct bench_section bench_section_write_ratio = {
	.name = "write-ratio",
	.needs_range = true,
	.opt_in = true,
	.steps = ratio_steps,
	.run = ratio_run,
	.print = ratio_print,
};
