/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench helpers: lock sets, clocks and busy work, run-queue wait,
 * statistics of samples, single-wait histograms, the progress line.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdarg.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The kernel's perf header, for counting futex calls; C libraries without
 * the kernel headers (musl-gcc) build without that count. */
#if defined(__has_include)
#if __has_include(<linux/perf_event.h>)
#include <linux/perf_event.h>
#define HAVE_PERF_EVENT 1
#endif
#endif
#ifndef HAVE_PERF_EVENT
#define HAVE_PERF_EVENT 0
#endif

/* ---- lock types -------------------------------------------------------- */

const char *const lk_name[LK_COUNT] = {
	"librangelock", "pthread_rwlock", "pthread_rwlock_wp",
	"pthread_mutex", "ofd_lock", "none", "librangelock_fifo",
	"librangelock_nofast", "librangelock_fifo_nofast", "pthread_rwlock_striped64",
	"librangelock_seg64", "librangelock_fifo_seg64", "librangelock_deferw",
	"librangelock_seg64_deferw",
};
/* Short names for the seed-shaped table ("rwsem-2thr", "range-2thr"). */
const char *const lk_short[LK_COUNT] = {
	"range", "rwlock", "rwlock-wp", "mutex", "ofd", "nolock", "range-fifo",
	"range-nofast", "range-fifo-nofast", "striped64", "range-seg64", "range-fifo-seg64",
	"range-deferw", "range-seg64-deferw",
};

const char *lk_policy(enum lock_kind k)
{
	if (k == LK_RANGE || k == LK_RANGE_NOFAST || k == LK_RANGE_SEG)
		return "default";
	if (k == LK_RANGE_DW || k == LK_RANGE_SEG_DW)
		return "default-defer-writers";
	return k == LK_RANGE_FIFO || k == LK_RANGE_FIFO_NOFAST ||
	       k == LK_RANGE_FIFO_SEG ? "fifo" : "";
}

unsigned seg_geom_n = 64, seg_geom_k = 14;

struct lockset *lockset_new(enum lock_kind kind)
{
	struct lockset *ls = aligned_alloc(CACHELINE, sizeof(*ls));
	pthread_rwlockattr_t attr;

	if (!ls) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(ls, 0, sizeof(*ls));
	range_lock_tree_init(&ls->tree);
	if (range_lock_tree_set_fifo(&ls->tree, kind == LK_RANGE_FIFO ||
					       kind == LK_RANGE_FIFO_NOFAST ||
					       kind == LK_RANGE_FIFO_SEG) != 0) {
		fprintf(stderr, "rangelock-bench: range_lock_tree_set_fifo failed\n");
		exit(2);
	}
	/* The segmented kinds: seg_geom_n segments by stripes of 2^seg_geom_k
	 * units (64 and 14 unless a section sets others). */
	if ((kind == LK_RANGE_SEG || kind == LK_RANGE_FIFO_SEG || kind == LK_RANGE_SEG_DW) &&
	    range_lock_tree_set_segments(&ls->tree, seg_geom_n, seg_geom_k) != 0) {
		fprintf(stderr, "rangelock-bench: range_lock_tree_set_segments(%u, %u) failed\n",
			seg_geom_n, seg_geom_k);
		exit(2);
	}
	/* Readers first: writers defer to sleeping readers. */
	if ((kind == LK_RANGE_DW || kind == LK_RANGE_SEG_DW) &&
	    range_lock_tree_defer_writers(&ls->tree, 1) != 0) {
		fprintf(stderr, "rangelock-bench: range_lock_tree_defer_writers failed\n");
		exit(2);
	}
	/* The fast-read-off kinds: every read through the internal lock. */
	if (lk_is_nofast(kind) && range_lock_tree_set_fast_read(&ls->tree, 0) != 0) {
		fprintf(stderr, "rangelock-bench: range_lock_tree_set_fast_read failed\n");
		exit(2);
	}
	pthread_rwlockattr_init(&attr);
#if HAVE_RWLOCK_PREFER_WRITER
	if (kind == LK_RWW)
		pthread_rwlockattr_setkind_np(&attr,
				PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(&ls->rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&ls->mtx, NULL);
	return ls;
}

void lockset_free(struct lockset *ls)
{
	if (range_lock_tree_destroy(&ls->tree) != 0) {
		fprintf(stderr, "rangelock-bench: tree not empty at the end of a run\n");
		exit(2);
	}
	pthread_rwlock_destroy(&ls->rw);
	pthread_mutex_destroy(&ls->mtx);
	free(ls);
}

/* ---- time, work -------------------------------------------------------- */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double ticks_per_ns = 1.0;

/* Not inlined: every caller runs the same code. */
__attribute__((noinline)) uint64_t work_from(uint64_t t0, uint64_t nticks)
{
	uint64_t end = t0 + nticks, t;

	while ((t = ticks()) < end)
		__asm__ __volatile__("" ::: "memory");
	return t;
}

void calibrate_work(void)
{
	double r[3];

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = now_ns(), k0 = ticks();
		sleep_ns(20000000);
		uint64_t t1 = now_ns(), k1 = ticks();
		r[i] = (double)(k1 - k0) / (double)(t1 - t0);
	}
	ticks_per_ns = median_of(r, 3);
	if (!(ticks_per_ns > 0))
		ticks_per_ns = 1.0;
}

uint64_t ns_to_ticks(uint64_t ns)
{
	return (uint64_t)((double)ns * ticks_per_ns + 0.5);
}

/*
 * Interference from the rest of the machine: the time this thread spent
 * runnable but waiting for a CPU (second field of schedstat, ns).  Reported
 * beside the results as a share of the thread's time in the run, so a noisy
 * repetition shows as such.  0 where schedstat is missing.
 */
uint64_t runq_wait_ns(void)
{
	unsigned long long run, wait;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? (uint64_t)wait : 0;
}

/* ---- context switches and futex calls ---------------------------------- */

uint64_t context_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

char futex_count_method[256] = "futex calls not counted (--futex-reps 0)";
static bool futex_count_failed;

/* The id of tracepoint syscalls:@name, or -1 with errno of the first place
 * tried (ENOENT: tracefs not mounted, or no such system call here; EACCES:
 * tracefs is readable by root only). */
static long tracepoint_id(const char *name)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[160];
	long id = -1;
	int err = 0;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]) && id < 0; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/events/syscalls/%s/id", roots[i], name);
		f = fopen(path, "r");
		if (!f) {
			if (!err)
				err = errno;
			continue;
		}
		if (fscanf(f, "%ld", &id) != 1)
			id = -1;
		fclose(f);
	}
	if (id < 0)
		errno = err ? err : EINVAL;
	return id;
}

#if HAVE_PERF_EVENT
static int perf_open_tracepoint(long id)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = (uint64_t)id;
	a.inherit = 1;  /* the threads this thread creates from now on */
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		/* perf_event_paranoid >= 2 without CAP_PERFMON: the syscall
		 * tracepoints fire with the caller's user registers, so they
		 * still count with the kernel excluded. */
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd;
}
#else
static int perf_open_tracepoint(long id)
{
	(void)id;
	errno = ENOSYS;
	return -1;
}
#endif

bool futex_counter_open(struct futex_counter *c)
{
	/* futex_time64: the 64-bit-time call of 32-bit ABIs (librangelock and
	 * glibc use it there); absent on 64-bit ones. */
	static const char *const names[] = { "sys_enter_futex", "sys_enter_futex_time64" };
	char used[64] = "";

	c->n = 0;
	if (futex_count_failed)
		return false;
	if (!HAVE_PERF_EVENT) {
		snprintf(futex_count_method, sizeof(futex_count_method),
			 "futex calls not counted: built without <linux/perf_event.h>");
		futex_count_failed = true;
		return false;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		long id = tracepoint_id(names[i]);
		int fd;

		if (id < 0) {
			if (i == 0) {
				snprintf(futex_count_method, sizeof(futex_count_method),
					 "futex calls not counted: tracepoint "
					 "syscalls:sys_enter_futex: %s (tracefs must be mounted "
					 "on /sys/kernel/tracing and readable: root)",
					 strerror(errno));
				futex_count_failed = true;
				return false;
			}
			continue;
		}
		fd = perf_open_tracepoint(id);
		if (fd < 0) {
			snprintf(futex_count_method, sizeof(futex_count_method),
				 "futex calls not counted: perf_event_open(syscalls:%s): %s "
				 "(kernel.perf_event_paranoid?)", names[i], strerror(errno));
			futex_counter_close(c);
			futex_count_failed = true;
			return false;
		}
		c->fd[c->n++] = fd;
		snprintf(used + strlen(used), sizeof(used) - strlen(used), "%s%s",
			 i ? "+" : "", names[i] + strlen("sys_enter_"));
	}
	snprintf(futex_count_method, sizeof(futex_count_method),
		 "futex calls: perf tracepoint syscalls:sys_enter_{%s} (perf_event_open "
		 "on the process, inherited by the run's threads), in %d extra untimed "
		 "run(s) per lock", used, opt.futex_reps);
	return true;
}

uint64_t futex_counter_read(const struct futex_counter *c)
{
	uint64_t sum = 0;

	for (int i = 0; i < c->n; i++) {
		uint64_t v;

		if (read(c->fd[i], &v, sizeof(v)) == (ssize_t)sizeof(v))
			sum += v;
	}
	return sum;
}

void futex_counter_close(struct futex_counter *c)
{
	for (int i = 0; i < c->n; i++)
		close(c->fd[i]);
	c->n = 0;
}

/* ---- single-wait histograms -------------------------------------------- */

void hist_merge(struct wait_hist *into, const struct wait_hist *h)
{
	into->n += h->n;
	if (h->max > into->max)
		into->max = h->max;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->b[i] += h->b[i];
}

/* The largest value that falls into bucket @i. */
static uint64_t bucket_top(unsigned i)
{
	unsigned shift;

	if (i < HIST_SUB)
		return i;
	shift = i / HIST_SUB - 1;
	return (((uint64_t)(HIST_SUB + i % HIST_SUB) << shift) - 1) + ((uint64_t)1 << shift);
}

uint64_t hist_quantile(const struct wait_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->n)
		return 0;
	rank = (uint64_t)ceil(q * (double)h->n);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t top = bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

/* ---- statistics of samples --------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double median_of(const double *v, int n)
{
	double s[2 * MAX_REPS];

	if (n <= 0)
		return NAN;
	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int median_index(const double *v, int n)
{
	int best = 0;

	for (int i = 0; i < n; i++) {
		int below = 0, above = 0;

		for (int j = 0; j < n; j++) {
			if (v[j] < v[i])
				below++;
			else if (v[j] > v[i])
				above++;
		}
		if (below <= (n - 1) / 2 && above <= n / 2) {
			best = i;
			break;
		}
	}
	return best;
}

double mean_of(const double *v, int n)
{
	double sum = 0;

	for (int i = 0; i < n; i++)
		sum += v[i];
	return n ? sum / n : NAN;
}

double stddev_of(const double *v, int n)
{
	double m = mean_of(v, n), ss = 0;

	if (n < 2)
		return 0;
	for (int i = 0; i < n; i++)
		ss += (v[i] - m) * (v[i] - m);
	return sqrt(ss / (n - 1));
}

double min_of(const double *v, int n)
{
	double m = INFINITY;

	for (int i = 0; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

double max_of(const double *v, int n)
{
	double m = -INFINITY;

	for (int i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* ---- progress ---------------------------------------------------------- */

long progress_total;
static long progress_done;
static bool progress_tty;
static uint64_t progress_t0, progress_last;

void progress_start(void)
{
	progress_tty = isatty(STDERR_FILENO);
	progress_t0 = now_ns();
}

void progress(const char *fmt, ...)
{
	char what[160];
	va_list ap;
	uint64_t t = now_ns();
	double pct, elapsed, eta;

	progress_done++;
	if (!opt.progress)
		return;
	if (!progress_tty && t - progress_last < 2000000000ull &&
	    progress_done != progress_total)
		return;
	progress_last = t;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	pct = progress_total ? 100.0 * (double)progress_done / (double)progress_total : 0;
	elapsed = (double)(t - progress_t0) / 1e9;
	eta = progress_done ? elapsed * (double)(progress_total - progress_done) /
				      (double)progress_done : 0;
	fprintf(stderr, "%s[%3.0f%% %4.0fs eta %4.0fs] %-70.70s%s",
		progress_tty ? "\r" : "", pct, elapsed, eta, what,
		progress_tty ? "" : "\n");
	fflush(stderr);
}

void progress_end(void)
{
	if (opt.progress && progress_tty)
		fprintf(stderr, "\r%*s\r", 110, "");
}
