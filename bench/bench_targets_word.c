/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench --targets=word: colliding whole-resource lock calls, the
 * case word mode serves (in a default-policy tree without statistics, a
 * full-range call that conflicts with a lone holder waits on the tree's
 * lock word as on a mutex).  Every number printed is measured in this run;
 * the program measures, it does not judge (a miss is not a failure).
 *
 * Scenarios, every thread on the full range:
 *  - 2 writers, empty critical sections, against pthread_rwlock;
 *  - 2 threads, empty critical sections, each operation a read or a write
 *    at random (1 in 2 a write), against pthread_rwlock;
 *  - threads outnumber the CPUs 2:1 and 4:1, 1 us inside and 1 us outside
 *    (issue 12's scenarios, the same code: full_scenarios_oversub()):
 *    writers, and readers + writers, against pthread_mutex.
 * In every repetition the locks alternate (measure_point()): the peers,
 * then librangelock in each policy of --policy.  Per row: throughput as a
 * multiple of the peer's, writers' min/max acquisitions, single waits (the
 * rows with work on both sides, where they are timed), and what the
 * critical sections cost in the kernel: context switches of the process
 * per acquisition (getrusage around each timed run) and futex calls per
 * acquisition (counted in opt.futex_reps extra untimed runs per lock:
 * measure_futex_calls()).
 *
 * The FIFO tree never uses word mode: its rows are reported only ("no
 * worse than today" is a comparison with the previous library, which
 * bench/compare.sh makes: two binaries alternating).
 */
#define _GNU_SOURCE
#include "bench.h"

#define NEMPTY 2 /* the empty-CS scenarios, against pthread_rwlock */
#define NWORD (NEMPTY + NOVERSUB)
static struct full_scenario scen[NWORD];

/* 1 in 2 operations a write, at random, on the full range */
static const struct work_shape half_reads = { .read_mostly = true, .write_every = 2 };

static void word_setup(void)
{
	struct full_scenario *e = &scen[0], *m = &scen[1], *o = &scen[NEMPTY];

	memset(e, 0, NEMPTY * sizeof(*e));
	snprintf(e->tag, sizeof(e->tag), "word-2w-empty");
	e->wl = WL_WRITE;
	e->threads = 2;
	snprintf(e->label, sizeof(e->label), "2 writers, empty CS");
	e->goal = 1.0;
	e->goal_text = ">= 1.0x rwlock";

	snprintf(m->tag, sizeof(m->tag), "word-2m-empty");
	m->wl = WL_MIXED;
	m->threads = 2;
	m->shape = &half_reads;
	snprintf(m->label, sizeof(m->label), "2 threads, 1 in 2 a read, empty CS");
	m->goal = 1.0;
	m->goal_text = ">= 1.0x rwlock";

	full_scenarios_oversub(o, "word");
	o[0].goal = 1.5;
	o[0].goal_text = ">= 1.5x mutex";
	o[1].goal = 1.5;
	o[1].goal_text = ">= 1.5x mutex";
	/* the list lock's throughput (issue 23), with bounded waits */
	o[1].moonshot = 1.8;
	o[1].moonshot_text = ">= 1.8x moonshot";
	o[2].goal = 1.2;
	o[2].goal_text = ">= 1.2x mutex";
}

/* The peer of a scenario's throughput: pthread_rwlock for the empty
 * critical sections (issue 7's baseline), pthread_mutex for the others. */
static enum lock_kind peer_of(const struct full_scenario *o)
{
	return o < &scen[NEMPTY] ? LK_RW : LK_MUTEX;
}

static void fmt_cost(char *buf, size_t n, const double *v, int cnt, const char *prefix)
{
	if (cnt <= 0)
		snprintf(buf, n, "%snot counted", prefix);
	else
		snprintf(buf, n, "%s%.3g [%.3g..%.3g]", prefix, median_of(v, cnt),
			 min_of(v, cnt), max_of(v, cnt));
}

/* A cost per critical section, librangelock against pthread_mutex; value:
 * their ratio (< 1: librangelock makes fewer), reported only. */
static void cost_row(const struct row_ctx *c, const char *scenario, const struct rec *rl,
		     const double *v_rl, int n_rl, const struct rec *mx,
		     const double *v_mx, int n_mx)
{
	struct target_row *t = trow_new(c->table, c->kind, scenario);
	double a = median_of(v_rl, n_rl), b = median_of(v_mx, n_mx);

	fmt_cost(t->rl, sizeof(t->rl), v_rl, n_rl, "");
	fmt_cost(t->base, sizeof(t->base), v_mx, n_mx, "mutex: ");
	t->peer = lk_name[mx->lock];
	set_goal(t, n_rl > 0 && n_mx > 0 && b > 0 ? a / b : NAN, "report", 0, false, true);
	target_runq(t, rl, mx);
}

static void word_rows(enum lock_kind k)
{
	/* targets are the default policy's; the FIFO tree has no word mode */
	const bool report = k != LK_RANGE;
	const struct row_ctx vs_rw = { "word", k, "rwlock: ", report, true };
	const struct row_ctx vs_mx = { "word", k, "mutex: ", report, true };
	char s[80];

	for (int i = 0; i < NWORD; i++) {
		const struct full_scenario *o = &scen[i];
		const struct rec *rl = full_scenario_rec(o, k);
		const struct rec *mx = full_scenario_rec(o, LK_MUTEX);
		const struct rec *peer = full_scenario_rec(o, peer_of(o));
		const struct row_ctx *c = peer_of(o) == LK_RW ? &vs_rw : &vs_mx;

		snprintf(s, sizeof(s), "%s, throughput", o->label);
		throughput_row(c, s, rl, peer, o->goal_text, o->goal);
		if (o->moonshot)
			throughput_row(c, "  (same run)", rl, peer, o->moonshot_text, o->moonshot);
		fairness_row(&vs_mx, o->label, rl, mx);
		if (o->waits)
			wait_rows(&vs_mx, o->label, rl, mx);
		snprintf(s, sizeof(s), "%s, futex calls per CS", o->label);
		cost_row(&vs_mx, s, rl, rl->futex, rl->nfutex, mx, mx->futex, mx->nfutex);
		snprintf(s, sizeof(s), "%s, context switches per CS", o->label);
		cost_row(&vs_mx, s, rl, rl->csw, rl->n, mx, mx->csw, mx->n);
	}
}

/* Every lock's costs per critical section, side by side. */
static void print_costs(FILE *out, const enum lock_kind *kinds, int nk)
{
	fprintf(out, "Kernel work per critical section (CS = one acquisition), every lock, "
		"median [min..max]:\n\n");
	fprintf(out, "| %-24s | %-17s | %-30s | %-30s |\n", "scenario", "lock",
		"futex calls per CS", "context switches per CS");
	fprintf(out, "| --- | --- | --- | --- |\n");
	for (int i = 0; i < NWORD; i++)
		for (int k = 0; k < nk; k++) {
			const struct rec *r = full_scenario_rec(&scen[i], kinds[k]);
			char fx[48], cs[48];

			if (!r)
				continue;
			fmt_cost(fx, sizeof(fx), r->futex, r->nfutex, "");
			fmt_cost(cs, sizeof(cs), r->csw, r->n, "");
			fprintf(out, "| %-24s | %-17s | %-30s | %-30s |\n", scen[i].label,
				lk_name[kinds[k]], fx, cs);
		}
	fprintf(out, "\n");
}

static void print_word(FILE *out, const enum lock_kind *rk, int nrk,
		       const enum lock_kind *kinds, int nk)
{
	fprintf(out, "== Targets (word mode): colliding full-range lock calls, %d CPUs, median "
		"of %d interleaved repetitions x %" PRIu64 " ms ==\n", ncpus, opt.reps,
		opt.duration_ms);
	fprintf(out, "rows: 2 writers with empty critical sections, and 2 threads whose "
		"operations are 1 in 2 a read (vs pthread_rwlock);\n  threads outnumbering "
		"the CPUs 2:1 and 4:1, 1 us in + 1 us out (vs pthread_mutex); every thread "
		"on the full range\n"
		"value: throughput = librangelock / peer, > 1 = librangelock faster (spread: "
		"min..max of the per-repetition paired ratios);\n  min/max acquisitions = "
		"writers' smallest/largest per-thread count (spread: over the repetitions; "
		"readers' shown, not judged);\n  single wait = lock call to its return, all "
		"acquisitions of the run, 99th percentile / longest, ms (timed only with "
		"work on both sides);\n  futex calls, context switches per CS = per "
		"acquisition, librangelock / pthread_mutex (< 1 = fewer; report only)\n"
		"values: median [min..max] over the repetitions; runq: median/max %% of the "
		"row's threads' time spent waiting for a CPU\n"
		"%s\n"
		"context switches: getrusage(RUSAGE_SELF) ru_nvcsw + ru_nivcsw, the process's "
		"delta over each timed run, / its acquisitions\n"
		"targets apply to the default policy (word mode); the FIFO tree never uses "
		"word mode: its rows are reported only (met? '-'),\n  \"no worse than "
		"today\" compares two builds: bench/compare.sh --set word BASE NEW\n\n",
		futex_count_method);
	print_target_tables(out, "word", rk, nrk, "peer", "value", 48, 36);
	print_full_detail(out, "the word-mode", scen, NWORD, kinds, nk);
	print_costs(out, kinds, nk);
}

void run_targets_word(FILE *out)
{
	enum lock_kind rk[2], kinds[2 + 2];
	int nrk = range_kinds(rk), nk = 0;

	if (!nrk) {
		fprintf(stderr, "rangelock-bench: --targets=word needs librangelock "
			"(--locks range)\n");
		exit(2);
	}
	kinds[nk++] = LK_RW;     /* the empty-CS scenario's peer only */
	kinds[nk++] = LK_MUTEX;
	for (int p = 0; p < nrk; p++)
		kinds[nk++] = rk[p];
	word_setup();

	progress_total = (opt.targets || opt.targets13 ? progress_total : 0) +
			 (long)(opt.reps + opt.futex_reps) * (NEMPTY * nk + NOVERSUB * (nk - 1));
	for (int i = 0; i < NWORD; i++) {
		/* the peer rwlock runs in the empty-CS scenarios only */
		const enum lock_kind *ks = i >= NEMPTY ? kinds + 1 : kinds;
		int n = i >= NEMPTY ? nk - 1 : nk;
		int first = full_scenario_measure(&scen[i], ks, n);

		measure_futex_calls(first, n, scen[i].shape);
	}
	progress_end();
	compute_ratios();

	for (int p = 0; p < nrk; p++)
		word_rows(rk[p]);
	print_word(out, rk, nrk, kinds, nk);
}
