/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: librangelock side by side with glibc's pthread_rwlock
 * (default and writer-preferring), pthread_mutex and, for the file scenario,
 * fcntl OFD byte-range locks.
 *
 * What it measures (see docs/benchmarks.md):
 *  - throughput: read-only, write-only and mixed workloads, each with every
 *    thread on the full range, random ranges from a pool of 4096 units (the
 *    seed's locktorture ranges) or disjoint per-thread ranges, with a
 *    calibrated busy loop inside and outside the critical section, at thread
 *    counts 1 .. 4x the cores; per row also the 99th percentile and the
 *    longest single wait, and the per-thread min/max acquisitions;
 *  - librangelock in both tree policies (--policy): the default one and a
 *    strict-FIFO tree;
 *  - the uncontended cost of one lock+unlock on one thread;
 *  - the cost of lock+unlock of a free range while N ranges are held
 *    (0, 1k, 10k, 100k), to show the O(log n) growth;
 *  - the seed's first user (Lustre): threads writing chunks of one file with
 *    pwrite, each write locked on its byte range, checked for torn chunks;
 *  - the library's own statistics for one representative scenario.
 *
 * Method: every measurement is repeated --reps times, and the repetitions
 * are interleaved across lock types (A B C D A B C D ...), so a change of
 * machine load hits every lock alike.  Reported: median, mean, standard
 * deviation, and the ratio to pthread_rwlock (default) in the same run:
 * ratio = median(lock) / median(pthread_rwlock) for throughput, and
 * median(pthread_rwlock) / median(lock) for costs, so > 1 always means
 * "faster than pthread_rwlock".
 *
 * --targets runs the scenarios of the performance issues and prints whether
 * each target is met (--targets=13: issue 13's, the reader fast path;
 * --targets=word: colliding full-range calls, word mode; --targets=many:
 * several ranges in one call and grow/shrink against single calls;
 * --targets=segments: ranges that conflict with nothing, against 64 striped
 * pthread_rwlocks, one pthread_rwlock and no lock, then the rows where a
 * request meets many segments (whole-range requests, stripe sizes, the
 * mixed row), each with segments and without; --targets=readers:
 * readers among busy writers, per-thread operations and waits by class,
 * against one pthread_rwlock).
 * The sections read-scaling and write-ratio (issue 13's sweeps) run only
 * when --sections names them.  Nothing is hard-coded: every number printed is
 * measured in this run.
 *
 * Correctness checks ride along: writers increment a per-unit counter
 * without atomics inside the critical section, and the sum must equal the
 * number of write acquisitions; in the file scenario no chunk may hold two
 * patterns; the library's statistics and the wait histograms must count
 * every acquisition.  A failed check makes the exit status 1.
 *
 * This file is the driver: the table of sections and main().  bench.h says
 * which file does what, and how to add a section.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <unistd.h>

/* The sections of a plain run, in the order they run and print. */
static const struct bench_section *const sections[] = {
	&bench_section_uncontended,
	&bench_section_held,
	&bench_section_throughput,
	&bench_section_file,
	&bench_section_stats,
	&bench_section_read_scaling,   /* opt-in */
	&bench_section_write_ratio,    /* opt-in */
};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static bool section_enabled(const struct bench_section *s)
{
	enum lock_kind rk[2];

	if (opt.sections ? !in_list(opt.sections, s->name) : s->opt_in)
		return false;
	return !s->needs_range || range_kinds(rk) > 0;
}

static void run_sections(void)
{
	progress_total = 0;
	for (size_t i = 0; i < NSECTIONS; i++)
		if (section_enabled(sections[i]))
			progress_total += sections[i]->steps();
	for (size_t i = 0; i < NSECTIONS; i++)
		if (section_enabled(sections[i]))
			sections[i]->run();
	progress_end();
}

static void print_load_after(FILE *out)
{
	fprintf(out, "load average after: %.2f %.2f %.2f\n", load_after[0], load_after[1],
		load_after[2]);
}

int main(int argc, char **argv)
{
	FILE *table = stdout;

	parse_options(argc, argv);
	read_machine();
	read_load(load_before);
	calibrate_work();
	progress_start();

	if (opt.csv && !strcmp(opt.csv_path, "-"))
		table = NULL;
	if (opt.json && !strcmp(opt.json_path, "-"))
		table = NULL;

	if (opt.targets || opt.targets13 || opt.targets_word || opt.targets_many ||
	    opt.targets_segments || opt.targets_readers) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&buf, &len);

		if (!mem) {
			perror("open_memstream");
			return 2;
		}
		if (opt.targets)
			run_targets(mem);
		if (opt.targets13)
			run_targets13(mem);
		if (opt.targets_word)
			run_targets_word(mem);
		if (opt.targets_many)
			run_targets_many(mem);
		if (opt.targets_segments)
			run_targets_segments(mem);
		if (opt.targets_readers)
			run_targets_readers(mem);
		fclose(mem);
		read_load(load_after);
		if (table) {
			print_header(table);
			fputs(buf, table);
			print_load_after(table);
		}
		free(buf);
	} else {
		run_sections();
		compute_ratios();
		read_load(load_after);
		if (table) {
			print_header(table);
			for (size_t i = 0; i < NSECTIONS; i++)
				if (section_enabled(sections[i]))
					sections[i]->print(table);
			print_load_after(table);
		}
	}
	if (opt.csv) {
		FILE *f = open_out(opt.csv_path);
		write_csv(f);
		if (f != stdout)
			fclose(f);
	}
	if (opt.json) {
		FILE *f = open_out(opt.json_path);
		write_json(f);
		if (f != stdout)
			fclose(f);
	}
	if (check_failures) {
		fprintf(stderr, "rangelock-bench: %d correctness check(s) FAILED\n",
			check_failures);
		return 1;
	}
	return 0;
}
