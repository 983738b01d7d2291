/* SPDX-License-Identifier: MIT */
/*
 * rangelock-span-pairs: throughput of spanning lock/unlock pairs on a
 * segmented tree (64 segments of 64 units), empty critical sections, side
 * by side in one run with the striped pthread_rwlocks a user would write
 * for the same geometry (64, one per segment, each on its own line, a
 * range taking every stripe it meets in ascending order).
 *
 *   rangelock-span-pairs [THREADS [MS [REPS]]]   (default 2, 200, 7)
 *
 * Rows: "disjoint writers" -- thread i writes [i * 256 + 32, i * 256 + 100]
 * (two segments each, none shared); "shared readers" -- every thread reads
 * [32, 100].  Each repetition runs the rows under both locks alternately;
 * the medians of pairs per second (all threads) are printed, with their
 * ratio.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <rangelock/rangelock.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SEGS 64
#define SHIFT 6

static struct range_lock_tree tree;
static struct {
	pthread_rwlock_t l;
	char pad[64 - sizeof(pthread_rwlock_t) % 64];
} stripes[SEGS] __attribute__((aligned(64)));

static atomic_int stop;

struct job {
	pthread_t th;
	int id, reader, striped;
	uint64_t ops;
};

static void *run(void *arg)
{
	struct job *j = arg;
	uint64_t start = j->reader ? 32 : (uint64_t)j->id * 256 + 32, last = start + 68;
	unsigned s0 = (unsigned)(start >> SHIFT) % SEGS, s1 = (unsigned)(last >> SHIFT) % SEGS;
	struct range_lock r;
	uint64_t n = 0;

	range_lock_init(&r, start, last);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int k = 0; k < 64; k++) {
			if (j->striped) {
				if (j->reader) {
					pthread_rwlock_rdlock(&stripes[s0].l);
					pthread_rwlock_rdlock(&stripes[s1].l);
				} else {
					pthread_rwlock_wrlock(&stripes[s0].l);
					pthread_rwlock_wrlock(&stripes[s1].l);
				}
				pthread_rwlock_unlock(&stripes[s1].l);
				pthread_rwlock_unlock(&stripes[s0].l);
			} else if (j->reader) {
				range_read_lock(&tree, &r);
				range_read_unlock(&tree, &r);
			} else {
				range_write_lock(&tree, &r);
				range_write_unlock(&tree, &r);
			}
		}
		n += 64;
	}
	j->ops = n;
	return NULL;
}

static double once(int threads, int ms, int reader, int striped)
{
	struct job *j = calloc((size_t)threads, sizeof(*j));
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L }, t0, t1;
	uint64_t total = 0;

	atomic_store(&stop, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ .id = i, .reader = reader, .striped = striped };
		pthread_create(&j[i].th, NULL, run, &j[i]);
	}
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++) {
		pthread_join(j[i].th, NULL);
		total += j[i].ops;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(j);
	return (double)total / ((double)(t1.tv_sec - t0.tv_sec) +
				(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2, ms = argc > 2 ? atoi(argv[2]) : 200;
	int reps = argc > 3 ? atoi(argv[3]) : 7;
	double *v = calloc((size_t)reps * 4, sizeof(double));

	if (threads < 1 || threads > SEGS / 4 || ms < 1 || reps < 1 || !v)
		return 2;
	range_lock_tree_init(&tree);
	if (range_lock_tree_set_segments(&tree, SEGS, SHIFT))
		return 2;
	for (int i = 0; i < SEGS; i++)
		pthread_rwlock_init(&stripes[i].l, NULL);
	for (int r = 0; r < reps; r++)
		for (int row = 0; row < 4; row++) /* (reader, striped) alternating */
			v[row * reps + r] = once(threads, ms, row >> 1, row & 1);
	printf("%d threads, %d x %d ms, median M pairs/s | range (64 segments) | "
	       "64 striped rwlocks | ratio\n", threads, reps, ms);
	for (int row = 0; row < 4; row += 2) {
		qsort(&v[row * reps], (size_t)reps, sizeof(double), cmp);
		qsort(&v[(row + 1) * reps], (size_t)reps, sizeof(double), cmp);
		double a = v[row * reps + reps / 2], b = v[(row + 1) * reps + reps / 2];

		printf("%-17s | %6.2f | %6.2f | %.2f\n", row ? "shared readers" : "disjoint writers",
		       a / 1e6, b / 1e6, a / b);
	}
	free(v);
	return range_lock_tree_destroy(&tree) ? 1 : 0;
}
