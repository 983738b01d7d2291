/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: the library's own statistics ("stats" section): one
 * mixed random-range run on as many threads as CPUs with
 * range_lock_tree_enable_stats(), printed from range_lock_tree_get_stats()
 * and cross-checked against the threads' own acquisition counts.
 */
#define _GNU_SOURCE
#include "bench.h"

struct range_lock_stats lib_stats;
char lib_stats_what[160];
static double lib_stats_secs;

/* With the policy of the first librangelock kind selected. */
static void stats_run(void)
{
	enum lock_kind rk[2];
	enum lock_kind kind = range_kinds(rk) ? rk[0] : LK_RANGE;
	struct lockset *ls = lockset_new(kind);
	struct range_lock_stats storage;
	struct run_result res;
	int threads = ncpus > 1 ? ncpus : 2;

	progress("statistics: mixed/random %dthr %s", threads, lk_name[kind]);
	if (range_lock_tree_enable_stats(&ls->tree, &storage)) {
		fprintf(stderr, "rangelock-bench: enable_stats failed\n");
		exit(2);
	}
	run_workload(kind, WL_MIXED, RG_RANDOM, threads, opt.work_in_ns,
		     opt.work_out_ns, opt.duration_ms, ls, &res);
	range_lock_tree_get_stats(&ls->tree, &lib_stats);
	lib_stats_secs = res.secs;
	snprintf(lib_stats_what, sizeof(lib_stats_what),
		 "mixed, random ranges (pool [0, %" PRIu64 "]), %d threads, "
		 "%" PRIu64 " ns in / %" PRIu64 " ns out, %" PRIu64 " ms%s",
		 opt.pool, threads, opt.work_in_ns, opt.work_out_ns, opt.duration_ms,
		 kind == LK_RANGE_FIFO ? ", FIFO tree" : "");
	if (lib_stats.read_acquired != res.reads || lib_stats.write_acquired != res.writes) {
		fprintf(stderr, "\nrangelock-bench: STATS MISMATCH: library counted "
			"%" PRIu64 "/%" PRIu64 " read/write acquisitions, threads %" PRIu64
			"/%" PRIu64 "\n", lib_stats.read_acquired, lib_stats.write_acquired,
			res.reads, res.writes);
		check_failures++;
	}
	lockset_free(ls);
}

static void stats_print(FILE *out)
{
	const struct range_lock_stats *s = &lib_stats;

	if (!lib_stats_what[0])
		return;
	fprintf(out, "== librangelock statistics (range_lock_tree_get_stats): %s ==\n",
		lib_stats_what);
	fprintf(out, "read_acquired %" PRIu64 ", write_acquired %" PRIu64
		", contended %" PRIu64 " (%.2f%%)\n", s->read_acquired,
		s->write_acquired, s->contended,
		s->read_acquired + s->write_acquired
			? 100.0 * (double)s->contended /
				  (double)(s->read_acquired + s->write_acquired)
			: 0.0);
	fprintf(out, "wait_ns_total %" PRIu64 " (mean %.0f ns per contended call), "
		"wait_ns_max %" PRIu64 "\n", s->wait_ns_total,
		s->contended ? (double)s->wait_ns_total / (double)s->contended : 0.0,
		s->wait_ns_max);
	fprintf(out, "held_now %" PRIu64 ", waiting_now %" PRIu64 ", held_peak %" PRIu64
		", waiting_peak %" PRIu64 ", trylock_failed %" PRIu64 "\n\n",
		s->held_now, s->waiting_now, s->held_peak, s->waiting_peak,
		s->trylock_failed);
}

static long stats_steps(void)
{
	return 1;
}

const struct bench_section bench_section_stats = {
	.name = "stats",
	.needs_range = true,
	.steps = stats_steps,
	.run = stats_run,
	.print = stats_print,
};
