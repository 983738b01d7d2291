/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench output: result records and their ratios, the machine
 * description, the table's header and common line formats, CSV and JSON.
 * The table's sections print themselves (their .print in the section
 * table); CSV and JSON are written here for every record.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <sys/utsname.h>

/* ---- result records ---------------------------------------------------- */

struct rec *recs;
int nrecs;
static int caprecs;
int check_failures;
double load_before[3], load_after[3];

struct rec *rec_new(const char *section, int wl, int rg, int threads,
		    enum lock_kind lock, const char *metric, const char *unit,
		    bool higher_better)
{
	struct rec *r;

	if (nrecs == caprecs) {
		caprecs = caprecs ? caprecs * 2 : 256;
		recs = realloc(recs, (size_t)caprecs * sizeof(*recs));
		if (!recs) {
			perror("realloc");
			exit(2);
		}
	}
	r = &recs[nrecs++];
	memset(r, 0, sizeof(*r));
	r->section = section;
	r->wl = wl;
	r->rg = rg;
	r->threads = threads;
	r->lock = lock;
	r->metric = metric;
	r->unit = unit;
	r->higher_better = higher_better;
	r->work_in = opt.work_in_ns;
	r->work_out = opt.work_out_ns;
	return r;
}

double rec_median(const struct rec *r)
{
	return median_of(r->v, r->n);
}

bool same_point(const struct rec *a, const struct rec *b)
{
	return !strcmp(a->section, b->section) && a->wl == b->wl && a->rg == b->rg &&
	       a->threads == b->threads && a->held == b->held &&
	       a->held_random == b->held_random && a->work_in == b->work_in &&
	       a->work_out == b->work_out && !strcmp(a->tag, b->tag) &&
	       a->write_every == b->write_every && a->range_len == b->range_len &&
	       !strcmp(a->metric, b->metric);
}

int lookup_rec(const char *section, const char *tag, enum lock_kind lock, int wl,
	       int threads)
{
	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].section, section) && !strcmp(recs[i].tag, tag) &&
		    recs[i].lock == lock && recs[i].wl == wl && recs[i].threads == threads)
			return i;
	return -1;
}

int find_rec(const char *section, const char *tag, enum lock_kind lock, int wl,
	     int threads)
{
	int i = lookup_rec(section, tag, lock, wl, threads);

	if (i >= 0)
		return i;
	fprintf(stderr, "rangelock-bench: internal: record %s/%s/%s not found\n",
		section, tag, lk_name[lock]);
	exit(2);
}

/* ratio = vs pthread_rwlock (default) at the same point, > 1 is faster. */
void compute_ratios(void)
{
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i], *base = NULL;

		r->has_ratio = false;
		for (int j = 0; j < nrecs; j++)
			if (recs[j].lock == LK_RW && same_point(&recs[j], r)) {
				base = &recs[j];
				break;
			}
		if (!base || !r->n || !base->n)
			continue;
		double m = rec_median(r), b = rec_median(base);
		r->ratio = r->higher_better ? m / b : b / m;
		r->has_ratio = true;
		double pr[MAX_REPS];
		int k = r->n < base->n ? r->n : base->n;
		for (int j = 0; j < k; j++)
			pr[j] = r->higher_better ? r->v[j] / base->v[j]
						 : base->v[j] / r->v[j];
		r->pr_min = min_of(pr, k);
		r->pr_max = max_of(pr, k);
	}
}

/* ---- machine description ----------------------------------------------- */

static char cpu_model[128] = "unknown";
static int cpu_family = -1, cpu_model_nr = -1;
static double pause_ns = NAN;     /* one spin-wait hint, measured */
static struct utsname uts;

/* The spin-wait hint the library's spin loops use (src/wait.h). */
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_HINT_NAME "PAUSE"
#elif defined(__aarch64__)
#define SPIN_HINT_NAME "YIELD"
#else
#define SPIN_HINT_NAME "compiler barrier"
#endif
static inline void spin_hint(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * What one spin-wait hint (x86 PAUSE) costs on this CPU: the same count of
 * hints is a different wait on every CPU (10 to 140 cycles across Intel
 * generations alone), so the header prints it beside the figures.  The
 * fastest of 15 timings of 2000 hints: a preemption can only lengthen one.
 */
static void measure_pause(void)
{
	double best = INFINITY;

	for (int r = 0; r < 15; r++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < 2000; i++)
			spin_hint();
		double ns = (double)(now_ns() - t0) / 2000.0;
		if (ns < best)
			best = ns;
	}
	pause_ns = best;
}

static void cpuinfo_value(const char *line, char *buf, size_t n)
{
	const char *p = strchr(line, ':');

	buf[0] = 0;
	if (!p)
		return;
	p++;
	while (*p == ' ')
		p++;
	snprintf(buf, n, "%.*s", (int)strcspn(p, "\n"), p);
}

void read_machine(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512], v[128];

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (line[0] == '\n')
				break; /* the first CPU's block only */
			cpuinfo_value(line, v, sizeof(v));
			if (!strncmp(line, "model name", 10))
				snprintf(cpu_model, sizeof(cpu_model), "%s", v);
			else if (!strncmp(line, "cpu family", 10))
				cpu_family = atoi(v);
			else if (!strncmp(line, "model\t", 6))
				cpu_model_nr = atoi(v);
		}
		fclose(f);
	}
	uname(&uts);
	measure_pause();
}

void read_load(double l[3])
{
	if (getloadavg(l, 3) != 3)
		l[0] = l[1] = l[2] = -1;
}

/* ---- the table's common parts ------------------------------------------ */

void print_header(FILE *out)
{
	fprintf(out, "rangelock-bench (librangelock %s, " LIBC_NAME " %s)\n", rangelock_version(),
		LIBC_VERSION());
	fprintf(out, "machine: %s, %d online CPUs, %s %s %s\n", cpu_model, ncpus,
		uts.sysname, uts.release, uts.machine);
	if (cpu_family >= 0)
		fprintf(out, "cpu: %s, family %d model %d; ", cpu_model, cpu_family,
			cpu_model_nr);
	else
		fprintf(out, "cpu: %s; ", cpu_model);
	fprintf(out, "spin-wait hint (" SPIN_HINT_NAME "): %.1f ns each (fastest of 15 "
		"timings of 2000)\n", pause_ns);
	fprintf(out, "load average before: %.2f %.2f %.2f\n", load_before[0],
		load_before[1], load_before[2]);
	fprintf(out, "method: %d repetitions x %" PRIu64 " ms, interleaved across lock "
		"types; work: busy loop on the %s, %.3f ticks/ns\n", opt.reps,
		opt.duration_ms, WORK_CLOCK, ticks_per_ns);
	fprintf(out, "ratio: vs pthread_rwlock (default) in this run, median/median; "
		"> 1 means faster than pthread_rwlock\n");
	fprintf(out, "policies: range = librangelock default policy, range-fifo = "
		"strict-FIFO tree (range_lock_tree_set_fifo)\n");
	fprintf(out, "wait p99/max: single waits (lock call to return), 99th percentile "
		"and longest, us, median over repetitions; W/R min/max: per-thread "
		"acquisitions, smallest/largest within writers/readers, median\n");
	fprintf(out, "sizes: struct range_lock_tree %zu, struct range_lock %zu, "
		"pthread_rwlock_t %zu, pthread_mutex_t %zu bytes\n\n",
		sizeof(struct range_lock_tree), sizeof(struct range_lock),
		sizeof(pthread_rwlock_t), sizeof(pthread_mutex_t));
}

void print_line(FILE *out, const char *name, double med, double mean, double sd,
		const char *tail, const struct rec *r)
{
	fprintf(out, "%-26s median: %12.1f, mean: %12.1f, stddev: %10.1f (%5.1f%%)%s",
		name, med, mean, sd, mean ? 100.0 * sd / mean : 0.0, tail);
	if (r)
		fprintf(out, ", runq: %4.1f%%", median_of(r->rq, r->n));
	fprintf(out, "\n");
}

void ratio_str(char *buf, size_t n, const struct rec *r)
{
	if (r->has_ratio)
		snprintf(buf, n, ", ratio: %5.2f", r->ratio);
	else
		buf[0] = 0;
}

void wait_str(char *buf, size_t n, const struct rec *r, enum wait_of which)
{
	if (!r->has_wait) {
		buf[0] = 0;
		return;
	}
	snprintf(buf, n, ", wait p99/max: %.1f/%.1f us",
		 median_of(r->wait_p99[which], r->n) / 1e3,
		 median_of(r->wait_max[which], r->n) / 1e3);
}

void fair_str(char *buf, size_t n, const struct rec *r)
{
	size_t k = 0;

	buf[0] = 0;
	if (r->nw > 1)
		k += (size_t)snprintf(buf + k, n - k, ", W min/max: %.2f",
				      median_of(r->fwr, r->n));
	if (r->nr > 1 && k < n)
		snprintf(buf + k, n - k, ", R min/max: %.2f", median_of(r->frd, r->n));
}

/* ---- CSV and JSON ------------------------------------------------------ */

FILE *open_out(const char *path)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "rangelock-bench: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

static const char *ranges_field(const struct rec *r)
{
	if (!strcmp(r->section, "held"))
		return r->held_random ? "random-free" : "fixed-free";
	return r->rg >= 0 ? rg_name[r->rg] : "";
}

/* Records of the throughput workload (per-kind and per-thread columns). */
static bool is_throughput_rec(const struct rec *r)
{
	return !strcmp(r->section, "throughput") || !strcmp(r->section, "read-scaling") ||
	       !strcmp(r->section, "write-ratio") || !strcmp(r->section, "segments");
}

/* The CSV's columns up to runq_wait_pct_max are those of earlier versions,
 * in the same order; later columns were added at the end. */
void write_csv(FILE *f)
{
	fprintf(f, "section,scenario,workload,ranges,threads,lock,held,work_in_ns,"
		"work_out_ns,metric,reps,median,mean,stddev,min,max,ratio,ratio_rep_min,"
		"ratio_rep_max,read_median,write_median,readers,writers,read_fair_median,"
		"read_fair_worst,write_fair_median,write_fair_worst,runq_wait_pct_median,"
		"runq_wait_pct_max,policy,wait_p99_us_median,wait_p99_us_min,"
		"wait_p99_us_max,wait_max_us_median,wait_max_us_min,wait_max_us_max,"
		"read_wait_p99_us_median,read_wait_max_us_median,write_wait_p99_us_median,"
		"write_wait_max_us_median,fast_read,write_every,range_len,csw_per_cs_median,"
		"futex_per_cs_median,futex_runs\n");
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];
		bool tp = is_throughput_rec(r);

		fprintf(f, "%s,%s,%s,%s,%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%d,"
			"%.3f,%.3f,%.3f,%.3f,%.3f,",
			r->section, r->tag[0] ? r->tag : "",
			r->wl >= 0 ? wl_name[r->wl] : "", ranges_field(r),
			r->threads, lk_name[r->lock], r->held, r->work_in, r->work_out,
			r->metric, r->n, rec_median(r), mean_of(r->v, r->n),
			stddev_of(r->v, r->n), min_of(r->v, r->n), max_of(r->v, r->n));
		if (r->has_ratio)
			fprintf(f, "%.4f,%.4f,%.4f,", r->ratio, r->pr_min, r->pr_max);
		else
			fprintf(f, ",,,");
		if (tp)
			fprintf(f, "%.3f,%.3f,%d,%d,%.4f,%.4f,%.4f,%.4f",
				median_of(r->rd, r->n), median_of(r->wr, r->n), r->nr, r->nw,
				median_of(r->frd, r->n), min_of(r->frd, r->n),
				median_of(r->fwr, r->n), min_of(r->fwr, r->n));
		else
			fprintf(f, ",,,,,,,");
		fprintf(f, ",%.2f,%.2f,%s", median_of(r->rq, r->n), max_of(r->rq, r->n),
			lk_policy(r->lock));
		if (r->has_wait) {
			const double (*p)[MAX_REPS] = r->wait_p99, (*m)[MAX_REPS] = r->wait_max;
			fprintf(f, ",%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,", median_of(p[WAIT_ALL], r->n) / 1e3,
				min_of(p[WAIT_ALL], r->n) / 1e3, max_of(p[WAIT_ALL], r->n) / 1e3,
				median_of(m[WAIT_ALL], r->n) / 1e3,
				min_of(m[WAIT_ALL], r->n) / 1e3, max_of(m[WAIT_ALL], r->n) / 1e3);
			if (r->nr)
				fprintf(f, "%.3f,%.3f,", median_of(p[WAIT_READ], r->n) / 1e3,
					median_of(m[WAIT_READ], r->n) / 1e3);
			else
				fprintf(f, ",,");
			if (r->nw)
				fprintf(f, "%.3f,%.3f", median_of(p[WAIT_WRITE], r->n) / 1e3,
					median_of(m[WAIT_WRITE], r->n) / 1e3);
			else
				fprintf(f, ",");
		} else {
			fprintf(f, ",,,,,,,,,,");  /* the 10 wait columns */
		}
		/* fast_read: 1/0 for librangelock (range_lock_tree_set_fast_read),
		 * empty for the other locks; write_every, range_len: the
		 * read-mostly shape (0: not read-mostly, the seed's ranges). */
		fprintf(f, ",%s,%" PRIu64 ",%" PRIu64,
			lk_is_range(r->lock) ? (lk_is_nofast(r->lock) ? "0" : "1") : "",
			r->write_every, r->range_len);
		/* csw_per_cs: context switches of the process per acquisition
		 * (timed runs); futex_per_cs: futex calls per acquisition in
		 * futex_runs untimed runs (--targets=word). */
		if (tp)
			fprintf(f, ",%.6f", median_of(r->csw, r->n));
		else
			fprintf(f, ",");
		if (r->nfutex)
			fprintf(f, ",%.6f,%d\n", median_of(r->futex, r->nfutex), r->nfutex);
		else
			fprintf(f, ",,0\n");
	}
}

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fprintf(f, "null");
}

static void json_samples(FILE *f, const char *key, const double *v, int n)
{
	fprintf(f, ", \"%s\": [", key);
	for (int k = 0; k < n; k++) {
		if (k)
			fprintf(f, ", ");
		json_num(f, v[k]);
	}
	fprintf(f, "]");
}

void write_json(FILE *f)
{
	fprintf(f, "{\n  \"tool\": \"rangelock-bench\",\n  \"librangelock\": ");
	json_str(f, rangelock_version());
	fprintf(f, ",\n  \"libc\": ");
	json_str(f, LIBC_NAME);
	fprintf(f, ",\n  \"libc_version\": ");
	json_str(f, LIBC_VERSION());
	fprintf(f, ",\n  \"machine\": {\"cpu\": ");
	json_str(f, cpu_model);
	fprintf(f, ", \"cpu_family\": %d, \"cpu_model\": %d, \"pause_ns\": ", cpu_family,
		cpu_model_nr);
	json_num(f, pause_ns);
	fprintf(f, ", \"cpus\": %d, \"kernel\": ", ncpus);
	json_str(f, uts.release);
	fprintf(f, ", \"load_before\": [%.2f, %.2f, %.2f], \"load_after\": [%.2f, %.2f, %.2f]},\n",
		load_before[0], load_before[1], load_before[2], load_after[0],
		load_after[1], load_after[2]);
	fprintf(f, "  \"config\": {\"reps\": %d, \"duration_ms\": %" PRIu64
		", \"work_in_ns\": %" PRIu64 ", \"work_out_ns\": %" PRIu64
		", \"pool\": %" PRIu64 ", \"work_ticks_per_ns\": %.4f, \"quick\": %s, "
		"\"targets\": %s, \"policies\": [%s%s%s]},\n", opt.reps, opt.duration_ms,
		opt.work_in_ns, opt.work_out_ns, opt.pool, ticks_per_ns,
		opt.quick ? "true" : "false",
		opt.targets || opt.targets13 || opt.targets_word || opt.targets_many ||
		opt.targets_segments || opt.targets_readers ? "true" : "false",
		opt.locks[LK_RANGE] ? "\"default\"" : "",
		opt.locks[LK_RANGE] && opt.locks[LK_RANGE_FIFO] ? ", " : "",
		opt.locks[LK_RANGE_FIFO] ? "\"fifo\"" : "");
	fprintf(f, "  \"sizes\": {\"range_lock_tree\": %zu, \"range_lock\": %zu, "
		"\"pthread_rwlock_t\": %zu, \"pthread_mutex_t\": %zu},\n",
		sizeof(struct range_lock_tree), sizeof(struct range_lock),
		sizeof(pthread_rwlock_t), sizeof(pthread_mutex_t));
	if (lib_stats_what[0]) {
		const struct range_lock_stats *s = &lib_stats;
		fprintf(f, "  \"library_stats\": {\"scenario\": ");
		json_str(f, lib_stats_what);
		fprintf(f, ", \"read_acquired\": %" PRIu64 ", \"write_acquired\": %" PRIu64
			", \"contended\": %" PRIu64 ", \"wait_ns_total\": %" PRIu64
			", \"wait_ns_max\": %" PRIu64 ", \"held_peak\": %" PRIu64
			", \"waiting_peak\": %" PRIu64 "},\n", s->read_acquired,
			s->write_acquired, s->contended, s->wait_ns_total, s->wait_ns_max,
			s->held_peak, s->waiting_peak);
	}
	fprintf(f, "  \"check_failures\": %d,\n", check_failures);
	fprintf(f, "  \"futex_count_method\": ");
	json_str(f, futex_count_method);
	fprintf(f, ",\n");
	if (opt.targets || opt.targets_word || opt.targets_many || opt.targets_segments ||
	    opt.targets_readers)
		write_json_targets(f);
	if (opt.targets13)
		write_json_targets13(f);
	fprintf(f, "  \"results\": [\n");
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];

		fprintf(f, "    {\"section\": \"%s\", \"scenario\": ", r->section);
		json_str(f, r->tag);
		fprintf(f, ", \"workload\": \"%s\", \"ranges\": \"%s\", \"threads\": %d, "
			"\"lock\": \"%s\", \"policy\": \"%s\", \"held\": %" PRIu64
			", \"held_random\": %s, \"work_in_ns\": %" PRIu64
			", \"work_out_ns\": %" PRIu64 ", \"metric\": \"%s\"",
			r->wl >= 0 ? wl_name[r->wl] : "", r->rg >= 0 ? rg_name[r->rg] : "",
			r->threads, lk_name[r->lock], lk_policy(r->lock), r->held,
			r->held_random ? "true" : "false", r->work_in, r->work_out, r->metric);
		if (lk_is_range(r->lock))
			fprintf(f, ", \"fast_read\": %s", lk_is_nofast(r->lock) ? "false" : "true");
		if (r->write_every || r->range_len)
			fprintf(f, ", \"write_every\": %" PRIu64 ", \"range_len\": %" PRIu64,
				r->write_every, r->range_len);
		json_samples(f, "samples", r->v, r->n);
		fprintf(f, ", \"median\": ");
		json_num(f, rec_median(r));
		fprintf(f, ", \"mean\": ");
		json_num(f, mean_of(r->v, r->n));
		fprintf(f, ", \"stddev\": ");
		json_num(f, stddev_of(r->v, r->n));
		fprintf(f, ", \"ratio\": ");
		json_num(f, r->has_ratio ? r->ratio : NAN);
		json_samples(f, "runq_wait_pct", r->rq, r->n);
		if (is_throughput_rec(r)) {
			fprintf(f, ", \"read_median\": ");
			json_num(f, median_of(r->rd, r->n));
			fprintf(f, ", \"write_median\": ");
			json_num(f, median_of(r->wr, r->n));
			fprintf(f, ", \"readers\": %d, \"writers\": %d, \"per_thread\": [", r->nr,
				r->nw);
			for (int k = 0; k < r->n; k++)
				fprintf(f, "%s{\"rmin\": %" PRIu64 ", \"rmax\": %" PRIu64
					", \"wmin\": %" PRIu64 ", \"wmax\": %" PRIu64 "}",
					k ? ", " : "", r->rmin[k], r->rmax[k], r->wmin[k],
					r->wmax[k]);
			fprintf(f, "]");
			json_samples(f, "csw_per_cs", r->csw, r->n);
			if (r->nfutex)
				json_samples(f, "futex_per_cs", r->futex, r->nfutex);
		}
		if (r->has_wait) {
			json_samples(f, "wait_p99_ns", r->wait_p99[WAIT_ALL], r->n);
			json_samples(f, "wait_max_ns", r->wait_max[WAIT_ALL], r->n);
			if (r->nr) {
				json_samples(f, "read_wait_p99_ns", r->wait_p99[WAIT_READ], r->n);
				json_samples(f, "read_wait_max_ns", r->wait_max[WAIT_READ], r->n);
			}
			if (r->nw) {
				json_samples(f, "write_wait_p99_ns", r->wait_p99[WAIT_WRITE], r->n);
				json_samples(f, "write_wait_max_ns", r->wait_max[WAIT_WRITE], r->n);
			}
		}
		if (r->extra_name) {
			fprintf(f, ", \"%s\": ", r->extra_name);
			json_num(f, max_of(r->extra, r->n));
		}
		fprintf(f, "}%s\n", i + 1 < nrecs ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}
