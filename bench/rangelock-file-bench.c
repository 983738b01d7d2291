/* SPDX-License-Identifier: MIT */
/*
 * rangelock-file-bench: the file scenario of a tree bound to a file
 * (range_lock_tree_set_file()) against plain OFD locks.
 *
 * Writers lock a chunk of a shared file, write it in several pwrite() calls
 * (torn without exclusion) and unlock, side by side:
 *   ofd   each thread its own open file description and fcntl(F_OFD_SETLKW)
 *         (the way to lock a file's bytes among threads without us);
 *   tree  one bound tree per process: range_write_lock() (local level, then
 *         F_OFD_SETLK for the process) -- no lock caching, so every hold
 *         still costs two fcntl calls.
 * Patterns: "disjoint" (every thread its own chunks: nobody ever conflicts),
 * "overlap" (all threads of all processes on 4 chunks) and "same" (all on
 * one chunk).  Thread counts
 * 1, 2, 4 x CPUs in one process, and processes x threads.  Each
 * configuration runs --reps times, interleaved; the median is printed, with
 * the ratio tree/ofd.  At the end of every run each chunk must hold one
 * writer's pattern.  Also printed: the cost of the system calls (an
 * uncontended F_OFD_SETLK + F_UNLCK pair) and of a bound tree's uncontended
 * lock/unlock pair against an unbound tree's.
 *
 * Usage: rangelock-file-bench [--quick] [--reps N] [--ms N] [--dir DIR]
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rangelock/rangelock.h>

#define CHUNK 4096
#define PIECES 4
#define CHUNKS 64
#define HOT 4 /* chunks of the overlapping pattern */

enum kind { K_OFD, K_TREE };
enum pattern { P_DISJOINT, P_OVERLAP, P_SAME, P_COUNT };

static const char *kind_name[] = { "ofd", "tree" };
static const char *pattern_name[] = { "disjoint", "overlap", "same" };

static struct {
	int reps, ms, cost_iters;
	const char *dir;
} opt = { 5, 300, 200000, "/tmp" };

struct shared {
	atomic_int go, stop;
	atomic_ullong writes;
};

static char path[4096];
static struct shared *sh;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void ofd(int fd, int cmd, short type, off_t off, off_t len)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = off, .l_len = len };

	while (fcntl(fd, cmd, &fl) < 0)
		if (errno != EINTR)
			die("fcntl");
}

struct worker {
	pthread_t th;
	enum kind kind;
	enum pattern pattern;
	struct range_lock_tree *tree;
	int fd, id, nr;       /* global thread id, of nr threads in all */
	uint64_t rng;
	uint64_t buf[CHUNK / 8];
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct range_lock r;
	uint64_t seq = 0, writes = 0;
	int per = CHUNKS / w->nr;

	while (!atomic_load(&sh->go))
		;
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		uint64_t c = w->pattern == P_SAME ? 0
			     : w->pattern == P_OVERLAP
				     ? rnd(&w->rng) % HOT
				     : (uint64_t)(w->id * per) + rnd(&w->rng) % (uint64_t)per;
		off_t off = (off_t)(c * CHUNK);

		for (size_t i = 0; i < CHUNK / 8; i++)
			w->buf[i] = ((uint64_t)(w->id + 1) << 48) | seq;
		seq++;
		if (w->kind == K_TREE) {
			range_lock_init(&r, (uint64_t)off, (uint64_t)off + CHUNK - 1);
			range_write_lock(w->tree, &r);
		} else {
			ofd(w->fd, F_OFD_SETLKW, F_WRLCK, off, CHUNK);
		}
		for (int p = 0; p < PIECES; p++)
			if (pwrite(w->fd, (char *)w->buf + p * (CHUNK / PIECES),
				   CHUNK / PIECES, off + p * (CHUNK / PIECES)) !=
			    CHUNK / PIECES)
				die("pwrite");
		if (w->kind == K_TREE)
			range_write_unlock(w->tree, &r);
		else
			ofd(w->fd, F_OFD_SETLK, F_UNLCK, off, CHUNK);
		writes++;
	}
	atomic_fetch_add(&sh->writes, writes);
	return NULL;
}

/* One process of @threads threads; @first is its first global thread id. */
static void run_process(enum kind kind, enum pattern pattern, int first,
			int threads, int nr)
{
	struct range_lock_tree tree;
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	int shared_fd = open(path, O_RDWR);

	if (!w || shared_fd < 0)
		die("setup");
	range_lock_tree_init(&tree);
	if (kind == K_TREE && range_lock_tree_set_file(&tree, shared_fd))
		die("range_lock_tree_set_file");
	for (int i = 0; i < threads; i++) {
		w[i].kind = kind;
		w[i].pattern = pattern;
		w[i].tree = &tree;
		w[i].id = first + i;
		w[i].nr = nr;
		w[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(first + i + 1) ^ now_ns();
		/* ofd: one description per thread, as OFD locks belong to it;
		 * tree: the data goes through one fd, the tree has its own. */
		w[i].fd = kind == K_OFD ? open(path, O_RDWR) : shared_fd;
		if (w[i].fd < 0 || pthread_create(&w[i].th, NULL, worker_main, &w[i]))
			die("worker");
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].fd != shared_fd)
			close(w[i].fd);
	}
	if (range_lock_tree_destroy(&tree))
		die("range_lock_tree_destroy");
	close(shared_fd);
	free(w);
}

static int torn_chunks(int fd)
{
	static uint64_t buf[CHUNK / 8];
	int torn = 0;

	for (int c = 0; c < CHUNKS; c++) {
		if (pread(fd, buf, CHUNK, (off_t)c * CHUNK) != CHUNK)
			die("pread");
		for (int i = 1; i < CHUNK / 8; i++)
			if (buf[i] != buf[0]) {
				torn++;
				break;
			}
	}
	return torn;
}

/* Writes per second of one run of @procs x @threads; *cpu_us: CPU time
 * (user + system, all processes) per write, less sensitive than the
 * throughput to other load on the machine. */
static double run(enum kind kind, enum pattern pattern, int procs, int threads,
		  double *cpu_us)
{
	struct rusage ru;
	double cpu = 0;
	pid_t pid[16];
	uint64_t t0, t1;
	int fd = open(path, O_RDWR | O_TRUNC), status;

	if (fd < 0 || ftruncate(fd, CHUNKS * CHUNK))
		die("open");
	memset(sh, 0, sizeof(*sh));
	for (int p = 0; p < procs; p++) {
		pid[p] = fork();
		if (pid[p] < 0)
			die("fork");
		if (pid[p] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			run_process(kind, pattern, p * threads, threads, procs * threads);
			_exit(0);
		}
	}
	usleep(20000);
	atomic_store(&sh->go, 1);
	t0 = now_ns();
	usleep((useconds_t)opt.ms * 1000);
	atomic_store(&sh->stop, 1);
	t1 = now_ns();
	for (int p = 0; p < procs; p++)
		if (wait4(pid[p], &status, 0, &ru) != pid[p] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("worker process");
		else
			cpu += (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
			       (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	if (torn_chunks(fd)) {
		fprintf(stderr, "rangelock-file-bench: TORN CHUNK (%s, %s)\n",
			kind_name[kind], pattern_name[pattern]);
		exit(1);
	}
	close(fd);
	*cpu_us = cpu / (double)(atomic_load(&sh->writes) + 1);
	return (double)atomic_load(&sh->writes) / ((double)(t1 - t0) / 1e9);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Uncontended costs, in ns per lock/unlock pair. */
static void syscall_cost(void)
{
	const int n = opt.cost_iters;
	struct range_lock_tree plain, bound;
	struct range_lock r;
	int fd = open(path, O_RDWR);
	uint64_t t0, ofd_ns, plain_ns, bound_ns;

	range_lock_tree_init(&plain);
	range_lock_tree_init(&bound);
	if (fd < 0 || range_lock_tree_set_file(&bound, fd))
		die("setup");
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		ofd(fd, F_OFD_SETLK, F_WRLCK, 0, CHUNK);
		ofd(fd, F_OFD_SETLK, F_UNLCK, 0, CHUNK);
	}
	ofd_ns = (now_ns() - t0) / n;
	range_lock_init(&r, 0, CHUNK - 1);
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		range_write_lock(&plain, &r);
		range_write_unlock(&plain, &r);
	}
	plain_ns = (now_ns() - t0) / n;
	t0 = now_ns();
	for (int i = 0; i < n; i++) {
		range_write_lock(&bound, &r);
		range_write_unlock(&bound, &r);
	}
	bound_ns = (now_ns() - t0) / n;
	printf("uncontended lock+unlock pair: F_OFD_SETLK+F_UNLCK %" PRIu64
	       " ns, unbound tree %" PRIu64 " ns, bound tree %" PRIu64 " ns\n",
	       ofd_ns, plain_ns, bound_ns);
	range_lock_tree_destroy(&bound);
	close(fd);
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct { int procs, threads; } cfg[8];
	int ncfg = 0, fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			opt.reps = 1;
			opt.ms = 40;
			opt.cost_iters = 10000;
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			opt.reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			opt.ms = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			opt.dir = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--ms N] [--dir DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (cpus < 1)
		cpus = 1;
	if (opt.reps < 1 || opt.reps > 99)
		opt.reps = 5;
	for (int m = 1; m <= 4; m *= 2)
		cfg[ncfg].procs = 1, cfg[ncfg++].threads = (int)(m * cpus > 8 ? 8 : m * cpus);
	cfg[ncfg].procs = 2, cfg[ncfg++].threads = 2;
	cfg[ncfg].procs = 2, cfg[ncfg++].threads = (int)(cpus > 4 ? 4 : cpus) * 2;
	snprintf(path, sizeof(path), "%s/rangelock-file-bench.XXXXXX", opt.dir);
	fd = mkstemp(path);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || sh == MAP_FAILED)
		die("setup");
	close(fd);
	printf("rangelock-file-bench: %ld CPUs, chunk %d B in %d pwrites, %d chunks "
	       "(overlap: %d), %d ms x %d reps, medians, file in %s\n",
	       cpus, CHUNK, PIECES, CHUNKS, HOT, opt.ms, opt.reps, opt.dir);
	syscall_cost();
	printf("%-9s %5s %7s %13s %13s %8s %11s %11s %8s\n", "pattern", "procs",
	       "threads", "ofd writes/s", "tree writes/s", "tree/ofd", "ofd cpu us",
	       "tree cpu us", "ofd/tree");
	for (int p = 0; p < P_COUNT; p++) {
		for (int c = 0; c < ncfg; c++) {
			double v[2][99], u[2][99];

			for (int rep = 0; rep < opt.reps; rep++)
				for (int k = 0; k < 2; k++)
					v[k][rep] = run((enum kind)k, (enum pattern)p,
							cfg[c].procs, cfg[c].threads,
							&u[k][rep]);
			double o = median(v[K_OFD], opt.reps), t = median(v[K_TREE], opt.reps);
			double uo = median(u[K_OFD], opt.reps), ut = median(u[K_TREE], opt.reps);

			printf("%-9s %5d %7d %13.0f %13.0f %8.2f %11.1f %11.1f %8.2f\n",
			       pattern_name[p], cfg[c].procs, cfg[c].threads, o, t, t / o,
			       uo, ut, uo / ut);
			fflush(stdout);
		}
	}
	unlink(path);
	return 0;
}
