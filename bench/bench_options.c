/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: the command line.  Defaults first, then --quick and
 * --targets adjust them, then explicit options win.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <getopt.h>
#include <unistd.h>

struct options opt;
int ncpus;

const char *const wl_name[WL_COUNT] = { "read", "write", "mixed" };
const char *const wl_title[WL_COUNT] = { "read-only", "write-only", "mixed" };
const char *const rg_name[RG_COUNT] = { "full", "random", "disjoint" };
const char *const rg_title[RG_COUNT] = {
	"full range", "random ranges", "disjoint ranges"
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rangelock-bench [options]\n"
"  --quick              smoke run, a few seconds (ctest's bench_quick)\n"
"  --targets            only the scenarios with performance targets, with\n"
"                       'scenario | librangelock | baseline | ratio |\n"
"                       target | met?' tables (2 threads vs pthread_rwlock;\n"
"                       threads outnumber CPUs, vs pthread_mutex)\n"
"  --targets=fast-read  the reader fast path's table instead (also\n"
"                       --targets=13): vs pthread_rwlock and vs librangelock\n"
"                       with fast reads off ('today')\n"
"  --targets=word       colliding full-range lock calls (word mode): vs\n"
"                       pthread_rwlock / pthread_mutex, with futex calls and\n"
"                       context switches per critical section;\n"
"  --targets=many       several ranges in one call (range_lock_many) vs two\n"
"                       single lock calls, grow/shrink vs unlock + relock,\n"
"                       uncontended; contended sets vs sorted single calls\n"
"  --targets=segments   ranges that conflict with nothing: disjoint writers\n"
"                       vs 64 striped pthread_rwlocks, disjoint empty critical\n"
"                       sections (n threads / 1), read-mostly random ranges\n"
"                       vs one pthread_rwlock, 1 to 8 threads; then every\n"
"                       row with segments and without, side by side:\n"
"                       whole-range requests (64 segments of 2^12 units),\n"
"                       the stripe-size sweep (2 writers on 4 KiB ranges,\n"
"                       stripes of 2^6 to 2^18 units), read-mostly 64-unit\n"
"                       ranges (stripes of 256 units) and the mixed row\n"
"                       (4 KiB blocks of 1 MiB with a whole-range write\n"
"                       every 10, 100, 1000 ops; 16 segments of 64 KiB)\n"
"  --seg-tables LIST    --targets=segments' tables to run, of disjoint (the\n"
"                       first table), whole, k-sweep, read-mostly, mixed\n"
"                       (default all)\n"
"  --targets=readers    readers among busy writers: 4 writers on random 4 KiB\n"
"                       blocks of their own quarter of 1 MiB, 2 readers of\n"
"                       random 1-16 KiB ranges (and 2+2, 1+1), per-thread\n"
"                       ops and waits by class, vs one pthread_rwlock;\n"
"                       --targets=all runs all six\n"
"  --futex-reps N       --targets=word: extra untimed runs per lock that\n"
"                       count futex calls (default 3, --quick 1; 0: none)\n"
"  --reps N             repetitions per measurement (default 5; --targets 15)\n"
"  --duration-ms N      length of one throughput run (default 200; --targets 250)\n"
"  --threads LIST       thread counts, e.g. 1,2,4,8 (default 1, 2, 4, ... up to\n"
"                       4x the online CPUs, and the CPU count and its doubles)\n"
"  --work-in-ns N       busy work inside the critical section (default 1000)\n"
"  --work-out-ns N      busy work between critical sections (default 1000)\n"
"  --pool N             random ranges lie in [0, N] (default 4096)\n"
"  --locks LIST         of range,rwlock,rwlock-wp,mutex,ofd,nolock,range-nofast\n"
"                       (default all; pthread_rwlock is always run: it is the\n"
"                       baseline; range-nofast: fast reads off, in the sweeps)\n"
"  --policy P           librangelock's tree policy: default, fifo or both\n"
"                       (default both: rows 'range' and 'range-fifo')\n"
"  --workloads LIST     of read,write,mixed (default all)\n"
"  --ranges LIST        of full,random,disjoint (default all)\n"
"  --sections LIST      of uncontended,held,throughput,file,stats (default all),\n"
"                       and the opt-in sweeps read-scaling, write-ratio\n"
"  --write-ratios LIST  the write-ratio sweep's points, 1 write per N ops\n"
"                       (0: no writes; default 0,10000,1000,100,10,2)\n"
"  --file-dir DIR       where the file scenario's temporary file goes\n"
"                       (default $TMPDIR or /tmp)\n"
"  --csv[=FILE]         CSV of every result (to stdout instead of the table,\n"
"                       or to FILE besides it)\n"
"  --json[=FILE]        the same as JSON\n"
"  --no-progress        no progress line on stderr\n"
"  --help\n");
}

bool in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (p && *p) {
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == 0))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

int range_kinds(enum lock_kind *k)
{
	int n = 0;

	if (opt.locks[LK_RANGE])
		k[n++] = LK_RANGE;
	if (opt.locks[LK_RANGE_FIFO])
		k[n++] = LK_RANGE_FIFO;
	return n;
}

int range_kinds_nofast(enum lock_kind *k)
{
	int n = 0;

	if (opt.locks[LK_RANGE])
		k[n++] = LK_RANGE;
	if (opt.locks[LK_RANGE_NOFAST])
		k[n++] = LK_RANGE_NOFAST;
	if (opt.locks[LK_RANGE_FIFO])
		k[n++] = LK_RANGE_FIFO;
	if (opt.locks[LK_RANGE_FIFO_NOFAST])
		k[n++] = LK_RANGE_FIFO_NOFAST;
	return n;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "rangelock-bench: bad %s: %s\n", what, s);
		exit(2);
	}
	return v;
}

static void parse_threads(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	opt.nthreads_list = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t t = parse_u64(tok, "thread count");
		if (t < 1 || t > MAX_THREADS || opt.nthreads_list == MAX_THREADS) {
			fprintf(stderr, "rangelock-bench: thread count out of range: %s\n", tok);
			exit(2);
		}
		opt.threads[opt.nthreads_list++] = (int)t;
	}
	free(copy);
	if (!opt.nthreads_list) {
		fprintf(stderr, "rangelock-bench: empty thread list\n");
		exit(2);
	}
}

static void parse_write_ratios(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int n = 0, max = (int)(sizeof(opt.write_every) / sizeof(opt.write_every[0]));

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			fprintf(stderr, "rangelock-bench: --write-ratios: at most %d points\n", max);
			exit(2);
		}
		opt.write_every[n++] = parse_u64(tok, "--write-ratios point");
	}
	free(copy);
	if (!n) {
		fprintf(stderr, "rangelock-bench: empty --write-ratios list\n");
		exit(2);
	}
	opt.nwrite_every = n;
}

static void add_thread_count(int t)
{
	int i;

	if (t < 1 || t > MAX_THREADS)
		return;
	for (i = 0; i < opt.nthreads_list; i++)
		if (opt.threads[i] == t)
			return;
	/* keep the list sorted */
	for (i = opt.nthreads_list; i > 0 && opt.threads[i - 1] > t; i--)
		opt.threads[i] = opt.threads[i - 1];
	opt.threads[i] = t;
	opt.nthreads_list++;
}

/* 1, 2, 4, ... up to 4x the CPUs, and the CPU count, 2x and 4x it: from
 * one thread to threads outnumbering the CPUs four to one. */
static void default_threads(void)
{
	opt.nthreads_list = 0;
	for (int t = 1; t <= 4 * ncpus; t *= 2)
		add_thread_count(t);
	add_thread_count(ncpus);
	add_thread_count(2 * ncpus);
	add_thread_count(4 * ncpus);
}

void parse_options(int argc, char **argv)
{
	enum { O_QUICK = 256, O_TARGETS, O_REPS, O_DUR, O_THREADS, O_WIN, O_WOUT, O_POOL,
	       O_LOCKS, O_POLICY, O_WL, O_RG, O_SECT, O_FDIR, O_CSV, O_JSON, O_NOPROG,
	       O_HELP, O_WRATIOS, O_FUTEX_REPS, O_SEGTAB };
	static const struct option lopts[] = {
		{ "quick", no_argument, 0, O_QUICK },
		{ "targets", optional_argument, 0, O_TARGETS },
		{ "reps", required_argument, 0, O_REPS },
		{ "duration-ms", required_argument, 0, O_DUR },
		{ "threads", required_argument, 0, O_THREADS },
		{ "work-in-ns", required_argument, 0, O_WIN },
		{ "work-out-ns", required_argument, 0, O_WOUT },
		{ "pool", required_argument, 0, O_POOL },
		{ "locks", required_argument, 0, O_LOCKS },
		{ "policy", required_argument, 0, O_POLICY },
		{ "workloads", required_argument, 0, O_WL },
		{ "ranges", required_argument, 0, O_RG },
		{ "sections", required_argument, 0, O_SECT },
		{ "file-dir", required_argument, 0, O_FDIR },
		{ "csv", optional_argument, 0, O_CSV },
		{ "json", optional_argument, 0, O_JSON },
		{ "no-progress", no_argument, 0, O_NOPROG },
		{ "help", no_argument, 0, O_HELP },
		{ "write-ratios", required_argument, 0, O_WRATIOS },
		{ "futex-reps", required_argument, 0, O_FUTEX_REPS },
		{ "seg-tables", required_argument, 0, O_SEGTAB },
		{ 0, 0, 0, 0 }
	};
	int reps = -1, futex_reps = -1, c;
	int64_t dur = -1;
	const char *threads = NULL, *locks = NULL, *wls = NULL, *rgs = NULL;
	const char *policy = "both", *wratios = "0,10000,1000,100,10,2";
	bool any_targets;

	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	opt.progress = true;
	opt.work_in_ns = 1000;
	opt.work_out_ns = 1000;
	opt.pool = 4096;
	opt.file_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_QUICK: opt.quick = true; break;
		case O_TARGETS:
			if (!optarg || !strcmp(optarg, "7,12") || !strcmp(optarg, "all"))
				opt.targets = true;
			/* "13" and "7,12": the names these sets had first. */
			if (optarg && (!strcmp(optarg, "fast-read") || !strcmp(optarg, "13") ||
				       !strcmp(optarg, "all")))
				opt.targets13 = true;
			if (optarg && (!strcmp(optarg, "word") || !strcmp(optarg, "all")))
				opt.targets_word = true;
			if (optarg && (!strcmp(optarg, "many") || !strcmp(optarg, "all")))
				opt.targets_many = true;
			if (optarg && (!strcmp(optarg, "segments") || !strcmp(optarg, "all")))
				opt.targets_segments = true;
			if (optarg && (!strcmp(optarg, "readers") || !strcmp(optarg, "all")))
				opt.targets_readers = true;
			if (!opt.targets && !opt.targets13 && !opt.targets_word &&
			    !opt.targets_many && !opt.targets_segments && !opt.targets_readers) {
				fprintf(stderr, "rangelock-bench: --targets takes no value, "
					"=fast-read, =word, =many, =segments, =readers or =all\n");
				exit(2);
			}
			break;
		case O_WRATIOS: wratios = optarg; break;
		case O_SEGTAB: {
			static const char *const known[] = { "disjoint", "whole", "k-sweep",
							     "read-mostly", "mixed" };
			char *copy = strdup(optarg), *tok, *save = NULL;

			for (tok = strtok_r(copy, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				size_t i;

				for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
					if (!strcmp(tok, known[i]))
						break;
				if (i == sizeof(known) / sizeof(known[0])) {
					fprintf(stderr, "rangelock-bench: --seg-tables: unknown "
						"table %s (disjoint, whole, k-sweep, "
						"read-mostly, mixed)\n", tok);
					exit(2);
				}
			}
			free(copy);
			opt.seg_tables = optarg;
			break;
		}
		case O_FUTEX_REPS:
			futex_reps = (int)parse_u64(optarg, "--futex-reps");
			if (parse_u64(optarg, "--futex-reps") > MAX_REPS) {
				fprintf(stderr, "rangelock-bench: --futex-reps must be in "
					"[0, %d]\n", MAX_REPS);
				exit(2);
			}
			break;
		case O_REPS: reps = (int)parse_u64(optarg, "--reps"); break;
		case O_DUR: dur = (int64_t)parse_u64(optarg, "--duration-ms"); break;
		case O_THREADS: threads = optarg; break;
		case O_WIN: opt.work_in_ns = parse_u64(optarg, "--work-in-ns"); break;
		case O_WOUT: opt.work_out_ns = parse_u64(optarg, "--work-out-ns"); break;
		case O_POOL: opt.pool = parse_u64(optarg, "--pool"); break;
		case O_LOCKS: locks = optarg; break;
		case O_POLICY: policy = optarg; break;
		case O_WL: wls = optarg; break;
		case O_RG: rgs = optarg; break;
		case O_SECT: opt.sections = optarg; break;
		case O_FDIR: opt.file_dir = optarg; break;
		case O_CSV: opt.csv = true; opt.csv_path = optarg ? optarg : "-"; break;
		case O_JSON: opt.json = true; opt.json_path = optarg ? optarg : "-"; break;
		case O_NOPROG: opt.progress = false; break;
		case O_HELP: case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	if (opt.csv && opt.json && !strcmp(opt.csv_path, "-") && !strcmp(opt.json_path, "-")) {
		fprintf(stderr, "rangelock-bench: --csv and --json cannot both go to stdout\n");
		exit(2);
	}
	if (opt.pool < 1 || opt.pool > (1u << 24)) {
		fprintf(stderr, "rangelock-bench: --pool must be in [1, 16777216]\n");
		exit(2);
	}
	if (strcmp(policy, "default") && strcmp(policy, "fifo") && strcmp(policy, "both")) {
		fprintf(stderr, "rangelock-bench: --policy must be default, fifo or both\n");
		exit(2);
	}

	/* Defaults, then --quick, then explicit options. */
	any_targets = opt.targets || opt.targets13 || opt.targets_word || opt.targets_many ||
		      opt.targets_segments || opt.targets_readers;
	opt.reps = any_targets ? 15 : 5;
	opt.duration_ms = any_targets ? 250 : 200;
	opt.futex_reps = opt.quick ? 1 : 3;
	opt.uncont_iters = 2000000;
	opt.held_iters = 200000;
	opt.held_max = 100000;
	opt.file_chunk = 64 * 1024;
	opt.file_chunks = 64;
	opt.file_pieces = 4;
	default_threads();
	if (opt.quick) {
		opt.reps = 2;
		opt.duration_ms = any_targets ? 20 : 10;
		opt.uncont_iters = 100000;
		/* Small: checking builds (Debug, sanitizer CI) verify the whole
		 * tree on every call, so this section is O(n) per call there. */
		opt.held_iters = 5000;
		opt.held_max = 1000;
		/* 1 thread, and 4: two threads of a kind to compare, more
		 * threads than 2 CPUs.  No more: the run count sets the time. */
		opt.nthreads_list = 0;
		opt.threads[opt.nthreads_list++] = 1;
		opt.threads[opt.nthreads_list++] = 4;
		opt.file_chunk = 16 * 1024;
	}
	if (opt.targets)
		opt.held_max = 100000; /* the 100k row must exist */
	if (reps >= 0) {
		if (reps < 1 || reps > MAX_REPS) {
			fprintf(stderr, "rangelock-bench: --reps must be in [1, %d]\n", MAX_REPS);
			exit(2);
		}
		opt.reps = reps;
	}
	if (futex_reps >= 0)
		opt.futex_reps = futex_reps;
	if (dur >= 0) {
		if (dur < 1) {
			fprintf(stderr, "rangelock-bench: --duration-ms must be >= 1\n");
			exit(2);
		}
		opt.duration_ms = (uint64_t)dur;
	}
	if (threads)
		parse_threads(threads);
	parse_write_ratios(wratios);
	for (int t = 0; t < opt.nthreads_list; t++)
		if ((uint64_t)opt.threads[t] > opt.pool + 1) {
			fprintf(stderr, "rangelock-bench: %d threads need --pool >= %d for "
				"disjoint ranges\n", opt.threads[t], opt.threads[t] - 1);
			exit(2);
		}
	for (int k = 0; k < LK_COUNT; k++)
		opt.locks[k] = !locks || in_list(locks, lk_short[k]) || in_list(locks, lk_name[k]);
	/* "range" in --locks means librangelock in the policies of --policy. */
	if (opt.locks[LK_RANGE] || opt.locks[LK_RANGE_FIFO]) {
		bool both = !strcmp(policy, "both");

		opt.locks[LK_RANGE] = both || !strcmp(policy, "default");
		opt.locks[LK_RANGE_FIFO] = both || !strcmp(policy, "fifo");
	}
	/* "range-nofast": the same policies with fast reads off. */
	if (opt.locks[LK_RANGE_NOFAST] || opt.locks[LK_RANGE_FIFO_NOFAST]) {
		bool both = !strcmp(policy, "both");

		opt.locks[LK_RANGE_NOFAST] = both || !strcmp(policy, "default");
		opt.locks[LK_RANGE_FIFO_NOFAST] = both || !strcmp(policy, "fifo");
	}
	opt.locks[LK_RW] = true;
	if (!HAVE_RWLOCK_PREFER_WRITER)
		opt.locks[LK_RWW] = false;  /* no such rwlock kind here */
	for (int w = 0; w < WL_COUNT; w++)
		opt.wl[w] = !wls || in_list(wls, wl_name[w]);
	for (int r = 0; r < RG_COUNT; r++)
		opt.rg[r] = !rgs || in_list(rgs, rg_name[r]);
}
