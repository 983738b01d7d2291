/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: single-thread costs, the "uncontended" and "held"
 * sections.
 *
 *  - uncontended: one thread, lock+unlock of the full range, read and
 *    write, per lock type (ns);
 *  - held: librangelock only; N requests hold the even units 0, 2, 4, ...,
 *    then one thread times range_lock_init + write lock + unlock of an odd
 *    (free) unit, a random one or always the same one (ns).
 */
#define _GNU_SOURCE
#include "bench.h"

/* ---- uncontended cost -------------------------------------------------- */

static double uncontended_ns(enum lock_kind kind, bool write, uint64_t iters)
{
	struct lockset *ls = lockset_new(kind);
	struct range_lock req;
	uint64_t t0, t1;

	range_lock_init_full(&req);
	/* warm up */
	for (uint64_t i = 0; i < iters / 10 + 1; i++) {
		lk_lock(ls, kind, write, &req);
		lk_unlock(ls, kind, write, &req);
	}
	t0 = now_ns();
	switch (kind) {
	case LK_RANGE:
	case LK_RANGE_FIFO:
	case LK_RANGE_NOFAST:
	case LK_RANGE_FIFO_NOFAST:
	case LK_RANGE_SEG:
	case LK_RANGE_FIFO_SEG:
		if (write)
			for (uint64_t i = 0; i < iters; i++) {
				range_write_lock(&ls->tree, &req);
				range_write_unlock(&ls->tree, &req);
			}
		else
			for (uint64_t i = 0; i < iters; i++) {
				range_read_lock(&ls->tree, &req);
				range_read_unlock(&ls->tree, &req);
			}
		break;
	case LK_RW:
	case LK_RWW:
		if (write)
			for (uint64_t i = 0; i < iters; i++) {
				pthread_rwlock_wrlock(&ls->rw);
				pthread_rwlock_unlock(&ls->rw);
			}
		else
			for (uint64_t i = 0; i < iters; i++) {
				pthread_rwlock_rdlock(&ls->rw);
				pthread_rwlock_unlock(&ls->rw);
			}
		break;
	case LK_MUTEX:
		for (uint64_t i = 0; i < iters; i++) {
			pthread_mutex_lock(&ls->mtx);
			pthread_mutex_unlock(&ls->mtx);
		}
		break;
	default:
		break;
	}
	t1 = now_ns();
	lockset_free(ls);
	return (double)(t1 - t0) / (double)iters;
}

int measure_uncontended(const enum lock_kind *kinds, int nk, const char *tag)
{
	int first = nrecs;

	for (int m = 0; m < 2; m++)
		for (int k = 0; k < nk; k++) {
			struct rec *rc = rec_new("uncontended", m ? WL_WRITE : WL_READ,
						 RG_FULL, 1, kinds[k], "ns_per_op", "ns", false);
			rc->work_in = rc->work_out = 0;
			if (tag)
				snprintf(rc->tag, sizeof(rc->tag), "%s", tag);
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int m = 0; m < 2; m++)
			for (int k = 0; k < nk; k++) {
				struct rec *rc = &recs[first + m * nk + k];

				progress("uncontended %s %s rep %d/%d", m ? "write" : "read",
					 lk_name[kinds[k]], rep + 1, opt.reps);
				uint64_t q0 = runq_wait_ns(), t0 = now_ns();
				rc->v[rc->n] = uncontended_ns(kinds[k], m, opt.uncont_iters);
				rc->rq[rc->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
						  (double)(now_ns() - t0);
			}
	return first;
}

static long uncontended_steps(void)
{
	enum lock_kind kinds[LK_COUNT];

	return (long)opt.reps * 2 * throughput_kinds(kinds);
}

static void uncontended_run(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = throughput_kinds(kinds);

	measure_uncontended(kinds, nk, NULL);
}

static void uncontended_print(FILE *out)
{
	char name[64], rs[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].section, "uncontended") && !recs[i].tag[0])
			any = true;
	if (!any)
		return;
	fprintf(out, "== Uncontended lock+unlock, one thread, full range, ns ==\n");
	for (int m = 0; m < 2; m++) {
		fprintf(out, "(%s)\n", m ? "write" : "read");
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (strcmp(r->section, "uncontended") || r->tag[0] ||
			    r->wl != (m ? WL_WRITE : WL_READ))
				continue;
			snprintf(name, sizeof(name), "%s-%s:", lk_short[r->lock],
				 m ? "write" : "read");
			ratio_str(rs, sizeof(rs), r);
			print_line(out, name, rec_median(r), mean_of(r->v, r->n),
				   stddev_of(r->v, r->n), rs, r);
		}
	}
	fprintf(out, "\n");
}

const struct bench_section bench_section_uncontended = {
	.name = "uncontended",
	.steps = uncontended_steps,
	.run = uncontended_run,
	.print = uncontended_print,
};

/* ---- cost with N ranges held ------------------------------------------- */

struct held_tree {
	uint64_t n;
	struct range_lock_tree *tree;
	struct range_lock *reqs;
};

static void held_build(struct held_tree *h, uint64_t n, enum lock_kind kind)
{
	h->n = n;
	h->tree = aligned_alloc(CACHELINE, CACHELINE);
	h->reqs = n ? aligned_alloc(CACHELINE, sizeof(struct range_lock) * (size_t)n) : NULL;
	if (!h->tree || (n && !h->reqs)) {
		perror("aligned_alloc");
		exit(2);
	}
	range_lock_tree_init(h->tree);
	if (range_lock_tree_set_fifo(h->tree, kind == LK_RANGE_FIFO) != 0) {
		fprintf(stderr, "rangelock-bench: range_lock_tree_set_fifo failed\n");
		exit(2);
	}
	/* Held ranges on the even units 0, 2, 4, ...; the odd units are
	 * free and intersect none of them. */
	for (uint64_t i = 0; i < n; i++) {
		range_lock_init(&h->reqs[i], 2 * i, 2 * i);
		if (!range_write_trylock(h->tree, &h->reqs[i])) {
			fprintf(stderr, "rangelock-bench: trylock of a free unit failed\n");
			exit(2);
		}
	}
}

static void held_free(struct held_tree *h)
{
	for (uint64_t i = 0; i < h->n; i++)
		range_write_unlock(h->tree, &h->reqs[i]);
	if (range_lock_tree_destroy(h->tree)) {
		fprintf(stderr, "rangelock-bench: held tree not empty\n");
		exit(2);
	}
	free(h->reqs);
	free(h->tree);
}

/* ns per lock+unlock of one free unit, either a random odd unit among the
 * held ones (cold paths, the realistic case) or always the same one in the
 * middle (hot path: pure O(log n) comparisons). */
static double held_cost(struct held_tree *h, bool random_unit, uint64_t iters)
{
	struct range_lock req;
	uint64_t rng = 0x2545F4914F6CDD1Dull ^ now_ns(), t0, t1, u;

	if (!rng)
		rng = 1;
	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		if (random_unit)
			u = 2 * ((xorshift64(&rng) >> 4) % (h->n + 1)) + 1;
		else
			u = 2 * (h->n / 2) + 1;
		range_lock_init(&req, u, u);
		range_write_lock(h->tree, &req);
		range_write_unlock(h->tree, &req);
	}
	t1 = now_ns();
	return (double)(t1 - t0) / (double)iters;
}

const uint64_t held_counts[] = { 0, 1000, 10000, 100000 };
const int nheld_counts = (int)(sizeof(held_counts) / sizeof(held_counts[0]));

/* Returns the index of the first record: counts x {random, fixed}.  The
 * tree has the policy of the first librangelock kind selected (without
 * contention both policies run the same code). */
int measure_held(const char *tag)
{
	struct held_tree h[sizeof(held_counts) / sizeof(held_counts[0])];
	enum lock_kind rk[2];
	enum lock_kind kind = range_kinds(rk) ? rk[0] : LK_RANGE;
	int first = nrecs, nh = 0;

	for (int i = 0; i < nheld_counts; i++) {
		if (held_counts[i] > opt.held_max)
			break;
		held_build(&h[nh++], held_counts[i], kind);
	}
	for (int m = 0; m < 2; m++)
		for (int i = 0; i < nh; i++) {
			struct rec *rc = rec_new("held", WL_WRITE, RG_DISJOINT, 1, kind,
						 "ns_per_op", "ns", false);
			rc->held = h[i].n;
			rc->held_random = m == 0;
			rc->work_in = rc->work_out = 0;
			if (tag)
				snprintf(rc->tag, sizeof(rc->tag), "%s", tag);
		}
	for (int rep = 0; rep < opt.reps; rep++)
		for (int m = 0; m < 2; m++)
			for (int i = 0; i < nh; i++) {
				struct rec *rc = &recs[first + m * nh + i];

				progress("held %" PRIu64 " ranges, %s free unit, rep %d/%d",
					 h[i].n, m ? "fixed" : "random", rep + 1, opt.reps);
				uint64_t q0 = runq_wait_ns(), t0 = now_ns();
				rc->v[rc->n] = held_cost(&h[i], m == 0, opt.held_iters);
				rc->rq[rc->n++] = 100.0 * (double)(runq_wait_ns() - q0) /
						  (double)(now_ns() - t0);
			}
	for (int i = 0; i < nh; i++)
		held_free(&h[i]);
	return first;
}

static long held_steps(void)
{
	return (long)opt.reps * 2 * nheld_counts;
}

static void held_run(void)
{
	measure_held(NULL);
}

static void held_print(FILE *out)
{
	char name[64], rs[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].section, "held") && !recs[i].tag[0])
			any = true;
	if (!any)
		return;
	fprintf(out, "== librangelock: write lock+unlock of a free unit with N ranges held, "
		"ns ==\n");
	for (int m = 0; m < 2; m++) {
		double base = 0;

		fprintf(out, "(%s free unit)\n", m ? "the same" : "a random");
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (strcmp(r->section, "held") || r->tag[0] || r->held_random != (m == 0))
				continue;
			if (r->held == 1000)
				base = rec_median(r);
		}
		for (int i = 0; i < nrecs; i++) {
			struct rec *r = &recs[i];

			if (strcmp(r->section, "held") || r->tag[0] || r->held_random != (m == 0))
				continue;
			snprintf(name, sizeof(name), "range-held-%" PRIu64 ":", r->held);
			if (base > 0)
				snprintf(rs, sizeof(rs), ", vs 1k held: %5.2fx",
					 rec_median(r) / base);
			else
				rs[0] = 0;
			print_line(out, name, rec_median(r), mean_of(r->v, r->n),
				   stddev_of(r->v, r->n), rs, r);
		}
	}
	fprintf(out, "\n");
}

const struct bench_section bench_section_held = {
	.name = "held",
	.needs_range = true,
	.steps = held_steps,
	.run = held_run,
	.print = held_print,
};
