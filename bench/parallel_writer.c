/* SPDX-License-Identifier: MIT */
/*
 * parallel_writer - many threads update one file, each extent under a range
 * lock on its bytes, and the program proves that no update was torn.
 *
 * This is the use Lustre made of the kernel's range lock (one tree per file,
 * ranges in bytes): writers on different parts of a file proceed in parallel,
 * writers on overlapping parts take turns, readers share.
 *
 * The workload
 *   - W writer threads repeatedly pick a random extent [off, off+len) of a
 *     temporary file (8-byte aligned, sizes between --min-extent and
 *     --max-extent, so extents partly overlap) and do a read-modify-write of
 *     it under range_write_lock() on the bytes [off, off+len-1]: pread the
 *     extent, check it, stamp it, and pwrite it back in --chunk sized pieces
 *     (a record written in several pieces, as real programs do; on Linux a
 *     single pwrite() of a regular file is already serialised against other
 *     writers by the kernel, a sequence of them is not).
 *   - R reader threads pread random extents under range_read_lock() and
 *     check them.
 *   - The same run is repeated with one global pthread_mutex_t and with one
 *     pthread_rwlock_t instead of the range lock, and the throughputs are
 *     printed side by side, with the share of time the threads spent
 *     waiting for the lock.  Every I/O under its lock also sleeps
 *     --io-delay-us (default 100 us: a write to a fast SSD or a network
 *     file system takes that long; the page cache of a temporary file
 *     does not, and 0 measures the page cache's memcpy, where one lock
 *     or another hardly matters).
 *
 * The check
 *   Every write gets a version number from a global counter, taken while the
 *   writer holds its lock, so two writes whose extents intersect get versions
 *   in the order in which they held the lock.  The write stamps every 8-byte
 *   word of its extent with the same tag (writer << 48 | version) and records
 *   its extent in a log indexed by version.  Then:
 *   - readers (and writers, on what they read before writing) check every
 *     snapshot: each tag must belong to a logged write whose extent covers
 *     that word, and for every version v seen, every word of v's extent inside
 *     the snapshot must hold v or a later version.  A half-done write (some
 *     words already v, others still older) breaks that rule: a torn read;
 *   - at the end the file is re-read and every word must hold exactly the
 *     newest version among the writes that covered it (or 0 if none did):
 *     the writes that covered one word all intersect, so the lock ordered
 *     them, and the newest of them must be what the word holds.  Any
 *     interleaving of two writes, or a write that landed out of lock order,
 *     breaks it.
 *   --broken (or --lock none) runs without any lock to show that these checks
 *   do catch tearing: it must exit non-zero.
 *
 * Exit status: 0 all checks passed; 1 a check failed; 2 usage or system error.
 *
 * Only the public API is used: #include <rangelock/rangelock.h>.
 */
#define _GNU_SOURCE
#include <rangelock/rangelock.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WORD 8u                         /* bytes per stamped word */
#define VERSION_BITS 48
#define VERSION_MASK ((UINT64_C(1) << VERSION_BITS) - 1)
#define MAX_WRITERS 255                 /* the log keeps the writer in 8 bits */
#define MAX_EXTENT_WORDS ((1u << 24) - 1) /* ... and the length in 24 bits */
#define MAX_REPORTS 5                   /* error lines printed per run */

enum lock_mode { LOCK_RANGE, LOCK_MUTEX, LOCK_RWLOCK, LOCK_NONE, NR_MODES };
static const char *const mode_name[NR_MODES] = {
	"range", "mutex", "rwlock", "none"
};

struct config {
	unsigned writers, readers;
	uint64_t file_size, min_extent, max_extent, chunk;
	double duration;                /* seconds per mode */
	unsigned rounds;                /* modes take turns this many times */
	long delay_us;                  /* simulated device latency per I/O */
	uint64_t ops;                   /* writes per mode, 0 = until duration */
	uint64_t seed;
	bool modes[NR_MODES];           /* which modes to run */
	bool broken;
	bool quiet;
	bool stats;                     /* print the range lock's statistics */
};

/* Everything the threads of one run share. */
struct run {
	const struct config *cfg;
	enum lock_mode mode;
	int fd;
	uint64_t nwords;                /* file size in words */

	/* The three locks; a run uses the one its mode names. */
	struct range_lock_tree tree;
	pthread_mutex_t mutex;
	pthread_rwlock_t rwlock;

	/* The write log: log[v] = off_words | len_words << 32 | writer << 56. */
	_Atomic uint64_t *log;
	uint64_t log_cap;
	_Atomic uint64_t next_version;  /* next version to hand out, from 1 */
	_Atomic uint64_t ops_left;      /* writes still allowed with --ops */
	_Atomic unsigned writers_done;  /* writer threads that have finished */

	pthread_barrier_t start;
	atomic_bool stop;
	_Atomic uint64_t errors;        /* failed checks */
	_Atomic unsigned reports;       /* error lines printed */
};

/* Per-thread results. */
struct worker {
	struct run *run;
	unsigned id;                    /* writers 1..W, readers W+1.. */
	bool writer;
	uint64_t rng;
	uint64_t ops, bytes, wait_ns;
	pthread_t thread;
};

/* ---------------------------------------------------------------- helpers */

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_sec(void)
{
	return now_ns() / 1e9;
}

/* xorshift64*: small, fast, good enough to pick extents. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* Uniform in [lo, hi]. */
static uint64_t rnd_between(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rnd(s) % (hi - lo + 1);
}

/* Print one error line (at most MAX_REPORTS per run) and count the error. */
static void report(struct run *r, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&r->errors, 1);
	if (atomic_fetch_add(&r->reports, 1) >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "  [%s] ", mode_name[r->mode]);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * With --io-delay-us, every read and write also waits that long under its
 * lock, as if the file lived on a slow device or a network file system
 * (Lustre holds its range lock across the RPCs to the servers).
 */
static void io_delay(const struct config *cfg)
{
	struct timespec ts = { cfg->delay_us / 1000000,
			       cfg->delay_us % 1000000 * 1000 };

	if (cfg->delay_us > 0)
		nanosleep(&ts, NULL);
}

static void pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pread");
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
}

static void pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pwrite");
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
}

/* ------------------------------------------------------------------ locks */

/*
 * Lock the bytes [off, off + len - 1] of the file the way the run's mode
 * says.  The range lock is the only one that looks at the range; @rl is the
 * request, on the caller's stack, and stays there until the unlock.
 */
static bool trylock_extent(struct run *r, struct range_lock *rl, uint64_t off,
			   uint64_t len, bool write)
{
	switch (r->mode) {
	case LOCK_RANGE:
		range_lock_init(rl, off, off + len - 1);
		return write ? range_write_trylock(&r->tree, rl)
			     : range_read_trylock(&r->tree, rl);
	case LOCK_MUTEX:
		return pthread_mutex_trylock(&r->mutex) == 0;
	case LOCK_RWLOCK:
		return (write ? pthread_rwlock_trywrlock(&r->rwlock)
			      : pthread_rwlock_tryrdlock(&r->rwlock)) == 0;
	default:                        /* LOCK_NONE: the broken mode */
		return true;
	}
}

/*
 * Returns how long the call waited, in ns (0: not at all).  Trying first
 * is only there to measure that; the blocking call alone would do.  A
 * request whose trylock failed is out of the tree and can be locked again.
 */
static uint64_t lock_extent(struct run *r, struct range_lock *rl, uint64_t off,
			    uint64_t len, bool write)
{
	uint64_t t0;

	if (trylock_extent(r, rl, off, len, write))
		return 0;
	t0 = now_ns();
	switch (r->mode) {
	case LOCK_RANGE:
		if (write)
			range_write_lock(&r->tree, rl);
		else
			range_read_lock(&r->tree, rl);
		break;
	case LOCK_MUTEX:
		pthread_mutex_lock(&r->mutex);
		break;
	default:
		if (write)
			pthread_rwlock_wrlock(&r->rwlock);
		else
			pthread_rwlock_rdlock(&r->rwlock);
		break;
	}
	return now_ns() - t0 + 1;
}

static void unlock_extent(struct run *r, struct range_lock *rl, bool write)
{
	switch (r->mode) {
	case LOCK_RANGE:
		if (write)
			range_write_unlock(&r->tree, rl);
		else
			range_read_unlock(&r->tree, rl);
		break;
	case LOCK_MUTEX:
		pthread_mutex_unlock(&r->mutex);
		break;
	case LOCK_RWLOCK:
		pthread_rwlock_unlock(&r->rwlock);
		break;
	default:
		break;
	}
}

/* ---------------------------------------------------------------- the log */

static uint64_t log_entry(uint64_t off_w, uint64_t len_w, unsigned writer)
{
	return off_w | len_w << 32 | (uint64_t)writer << 56;
}

static uint64_t entry_off(uint64_t e) { return e & 0xffffffffu; }
static uint64_t entry_len(uint64_t e) { return (e >> 32) & 0xffffffu; }
static unsigned entry_writer(uint64_t e) { return (unsigned)(e >> 56); }

static uint64_t tag_version(uint64_t tag) { return tag & VERSION_MASK; }
static unsigned tag_writer(uint64_t tag) { return (unsigned)(tag >> VERSION_BITS); }

/*
 * Look up the write that produced @tag.  Returns its log entry, or 0 if the
 * tag names no logged write (a garbage or not yet logged tag).
 */
static uint64_t lookup_tag(struct run *r, uint64_t tag)
{
	uint64_t v = tag_version(tag), e;

	if (v == 0 || v >= r->log_cap)
		return 0;
	e = atomic_load_explicit(&r->log[v], memory_order_relaxed);
	if (e == 0 || entry_writer(e) != tag_writer(tag))
		return 0;
	return e;
}

/*
 * Check a snapshot @buf of the words [off_w, off_w + len_w) read under a lock
 * (see "The check" above).  @who names the thread for the error message.
 * Returns true if the snapshot is consistent.
 */
static bool check_snapshot(struct run *r, const uint64_t *buf, uint64_t off_w,
			   uint64_t len_w, const char *who)
{
	uint64_t i = 0, prev = 0;

	/* Every tag must come from a logged write that covers its word. */
	for (i = 0; i < len_w; i++) {
		uint64_t e, w = off_w + i;

		if (buf[i] == 0)
			continue;       /* never written */
		e = lookup_tag(r, buf[i]);
		if (e == 0 || w < entry_off(e) ||
		    w >= entry_off(e) + entry_len(e)) {
			report(r, "%s: byte %" PRIu64 " holds tag %#" PRIx64
			       " of no write covering it", who, w * WORD, buf[i]);
			return false;
		}
	}

	/*
	 * For each run of equal tags, the whole part of that write's extent we
	 * read must hold it or something newer.
	 */
	for (i = 0; i < len_w; i++) {
		uint64_t v = tag_version(buf[i]), e, lo, hi, k;

		if (v == 0 || buf[i] == prev)
			continue;
		prev = buf[i];
		e = lookup_tag(r, buf[i]);
		lo = entry_off(e) > off_w ? entry_off(e) : off_w;
		hi = entry_off(e) + entry_len(e);
		if (hi > off_w + len_w)
			hi = off_w + len_w;
		for (k = lo; k < hi; k++) {
			if (tag_version(buf[k - off_w]) < v) {
				report(r, "%s: torn read: write %u/%" PRIu64
				       " (bytes %" PRIu64 "..%" PRIu64 ") seen at"
				       " byte %" PRIu64 " but byte %" PRIu64
				       " still holds older tag %#" PRIx64, who,
				       tag_writer(buf[i]), v, entry_off(e) * WORD,
				       (entry_off(e) + entry_len(e)) * WORD - 1,
				       (off_w + i) * WORD, k * WORD,
				       buf[k - off_w]);
				return false;
			}
		}
	}
	return true;
}

/* ---------------------------------------------------------------- threads */

/* Pick an extent: word offset and length, inside the file. */
static void pick_extent(struct worker *me, uint64_t *off_w, uint64_t *len_w)
{
	const struct config *cfg = me->run->cfg;

	*len_w = rnd_between(&me->rng, cfg->min_extent / WORD,
			     cfg->max_extent / WORD);
	*off_w = rnd_between(&me->rng, 0, me->run->nwords - *len_w);
}

/* With --ops: claim one of the remaining writes; false when none is left. */
static bool take_op(struct run *r)
{
	uint64_t left = atomic_load(&r->ops_left);

	do {
		if (left == 0)
			return false;
	} while (!atomic_compare_exchange_weak(&r->ops_left, &left, left - 1));
	return true;
}

static void *writer_main(void *arg)
{
	struct worker *me = arg;
	struct run *r = me->run;
	const struct config *cfg = r->cfg;
	uint64_t *buf = malloc(cfg->max_extent);

	if (!buf)
		die("malloc");
	pthread_barrier_wait(&r->start);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		struct range_lock rl;
		uint64_t off_w, len_w, len, off, v, tag, done, i;

		if (cfg->ops && !take_op(r))
			break;
		pick_extent(me, &off_w, &len_w);
		off = off_w * WORD;
		len = len_w * WORD;

		me->wait_ns += lock_extent(r, &rl, off, len, true);

		/* Read-modify-write: what we read must be consistent too. */
		pread_full(r->fd, buf, len, off);
		if (!check_snapshot(r, buf, off_w, len_w, "writer"))
			atomic_store(&r->stop, true);

		/* Our version: later than every write that held this range. */
		v = atomic_fetch_add(&r->next_version, 1);
		if (v >= r->log_cap) {           /* log full: end the run */
			unlock_extent(r, &rl, true);
			atomic_store(&r->stop, true);
			break;
		}
		atomic_store_explicit(&r->log[v],
				      log_entry(off_w, len_w, me->id),
				      memory_order_relaxed);

		/* Stamp every word, then write in chunks. */
		tag = (uint64_t)me->id << VERSION_BITS | v;
		for (i = 0; i < len_w; i++)
			buf[i] = tag;
		for (done = 0; done < len; done += cfg->chunk) {
			uint64_t n = len - done < cfg->chunk ? len - done
							     : cfg->chunk;

			pwrite_full(r->fd, (char *)buf + done, n, off + done);
		}
		io_delay(cfg);

		unlock_extent(r, &rl, true);
		me->ops++;
		me->bytes += len;
	}
	free(buf);
	atomic_fetch_add(&r->writers_done, 1);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct worker *me = arg;
	struct run *r = me->run;
	uint64_t *buf = malloc(r->cfg->max_extent);

	if (!buf)
		die("malloc");
	pthread_barrier_wait(&r->start);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		struct range_lock rl;
		uint64_t off_w, len_w;

		pick_extent(me, &off_w, &len_w);
		me->wait_ns += lock_extent(r, &rl, off_w * WORD, len_w * WORD,
					   false);
		pread_full(r->fd, buf, len_w * WORD, off_w * WORD);
		io_delay(r->cfg);
		unlock_extent(r, &rl, false);

		/* The copy is ours; check it outside the lock. */
		if (!check_snapshot(r, buf, off_w, len_w, "reader"))
			atomic_store(&r->stop, true);
		me->ops++;
		me->bytes += len_w * WORD;
	}
	free(buf);
	return NULL;
}

/* ------------------------------------------------------------ final check */

/* Find the first unpainted word >= w ("next" links with path halving). */
static uint64_t next_free(uint64_t *next, uint64_t w)
{
	while (next[w] != w) {
		next[w] = next[next[w]];
		w = next[w];
	}
	return w;
}

/*
 * Re-read the file: every word must hold the newest write that covered it.
 * Paint the expected tags newest first, each word once (a union-find "next
 * unpainted word" array keeps this linear), then compare.
 */
static void final_check(struct run *r)
{
	uint64_t nwords = r->nwords, nver, v, w, bad = 0, torn_writes = 0;
	uint64_t *expect = calloc(nwords, sizeof(*expect));
	uint64_t *next = malloc((nwords + 1) * sizeof(*next));
	uint64_t *file = malloc(nwords * WORD);
	unsigned char *counted;

	if (!expect || !next || !file)
		die("malloc");
	for (w = 0; w <= nwords; w++)
		next[w] = w;
	nver = atomic_load(&r->next_version);
	if (nver > r->log_cap)
		nver = r->log_cap;
	counted = calloc(nver ? nver : 1, 1);
	if (!counted)
		die("calloc");

	for (v = nver - 1; v >= 1; v--) {
		uint64_t e = atomic_load(&r->log[v]);
		uint64_t end = entry_off(e) + entry_len(e);

		if (e == 0)             /* version taken when the log was full */
			continue;
		for (w = next_free(next, entry_off(e)); w < end;
		     w = next_free(next, w)) {
			expect[w] = (uint64_t)entry_writer(e) << VERSION_BITS | v;
			next[w] = w + 1;
		}
	}

	pread_full(r->fd, file, nwords * WORD, 0);
	for (w = 0; w < nwords; w++) {
		if (file[w] == expect[w])
			continue;
		bad++;
		if (expect[w] && !counted[tag_version(expect[w])]) {
			counted[tag_version(expect[w])] = 1;
			torn_writes++;
		}
		if (bad == 1)
			report(r, "final check: byte %" PRIu64 " holds %#" PRIx64
			       " but the last write covering it was %#" PRIx64,
			       w * WORD, file[w], expect[w]);
	}
	if (bad)
		report(r, "final check: %" PRIu64 " words wrong, %" PRIu64
		       " writes torn or overwritten out of order", bad,
		       torn_writes);
	free(counted);
	free(file);
	free(next);
	free(expect);
}

/* ---------------------------------------------------------------- one run */

/*
 * glibc's rwlock prefers readers by default, and with readers always busy a
 * writer can wait for ever; the range lock serves requests in arrival order.
 * Compare with the fair kind.
 */
static void rwlock_init_fair(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
#ifdef __GLIBC__
	pthread_rwlockattr_setkind_np(&attr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(l, &attr);
	pthread_rwlockattr_destroy(&attr);
}

struct result {
	double secs;
	uint64_t writes, reads, wbytes, rbytes, errors, wait_ns;
	struct range_lock_stats stats;  /* range mode only */
};

static struct result run_mode(const struct config *cfg, enum lock_mode mode,
			      int fd, double duration)
{
	unsigned nthreads = cfg->writers + cfg->readers, i;
	struct worker *workers = calloc(nthreads, sizeof(*workers));
	struct range_lock_stats stats_storage;
	struct result res = { 0 };
	struct run r;
	double t0;

	if (!workers)
		die("calloc");
	memset(&r, 0, sizeof(r));
	r.cfg = cfg;
	r.mode = mode;
	r.fd = fd;
	r.nwords = cfg->file_size / WORD;
	range_lock_tree_init(&r.tree);
	/* Statistics cost a little (and switch off the lone-request fast
	 * path), so they are counted only when asked for. */
	if (cfg->stats)
		range_lock_tree_enable_stats(&r.tree, &stats_storage);
	pthread_mutex_init(&r.mutex, NULL);
	rwlock_init_fair(&r.rwlock);
	atomic_init(&r.next_version, 1);
	atomic_init(&r.ops_left, cfg->ops);
	atomic_init(&r.writers_done, 0);
	atomic_init(&r.stop, false);
	atomic_init(&r.errors, 0);
	atomic_init(&r.reports, 0);

	/* One log slot per write; 2^22 writes (32 MiB) or --ops + 1. */
	r.log_cap = cfg->ops ? cfg->ops + 1 : UINT64_C(1) << 22;
	r.log = calloc(r.log_cap, sizeof(*r.log));
	if (!r.log)
		die("calloc");

	/* A fresh, all-zero file: zero means "never written". */
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)cfg->file_size))
		die("ftruncate");

	pthread_barrier_init(&r.start, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		w->run = &r;
		w->id = i + 1;
		w->writer = i < cfg->writers;
		w->rng = cfg->seed * 0x9e3779b97f4a7c15u + i + 1;
		if (pthread_create(&w->thread, NULL,
				   w->writer ? writer_main : reader_main, w))
			die("pthread_create");
	}
	pthread_barrier_wait(&r.start);
	t0 = now_sec();

	/* Run for --duration, or until --ops writes are done, or an error. */
	while (!atomic_load(&r.stop)) {
		double left = duration - (now_sec() - t0);
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (left <= 0 || atomic_load(&r.writers_done) == cfg->writers)
			break;
		nanosleep(&ts, NULL);
	}
	atomic_store(&r.stop, true);
	for (i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	res.secs = now_sec() - t0;

	if (range_lock_tree_destroy(&r.tree) != 0)
		report(&r, "range lock tree still busy at the end");
	if (cfg->stats)
		range_lock_tree_get_stats(&r.tree, &res.stats);
	final_check(&r);

	for (i = 0; i < nthreads; i++) {
		res.wait_ns += workers[i].wait_ns;
		if (workers[i].writer) {
			res.writes += workers[i].ops;
			res.wbytes += workers[i].bytes;
		} else {
			res.reads += workers[i].ops;
			res.rbytes += workers[i].bytes;
		}
	}
	res.errors = atomic_load(&r.errors);

	pthread_barrier_destroy(&r.start);
	pthread_rwlock_destroy(&r.rwlock);
	pthread_mutex_destroy(&r.mutex);
	free(r.log);
	free(workers);
	return res;
}

static void add_result(struct result *sum, const struct result *one)
{
	sum->secs += one->secs;
	sum->writes += one->writes;
	sum->reads += one->reads;
	sum->wbytes += one->wbytes;
	sum->rbytes += one->rbytes;
	sum->errors += one->errors;
	sum->wait_ns += one->wait_ns;
	sum->stats.read_acquired += one->stats.read_acquired;
	sum->stats.write_acquired += one->stats.write_acquired;
	sum->stats.contended += one->stats.contended;
	sum->stats.wait_ns_total += one->stats.wait_ns_total;
	if (one->stats.wait_ns_max > sum->stats.wait_ns_max)
		sum->stats.wait_ns_max = one->stats.wait_ns_max;
}

/* ------------------------------------------------------------------- main */

static uint64_t parse_size(const char *s, const char *opt)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == '\0')
		return v;
bad:
	fprintf(stderr, "parallel_writer: bad value '%s' for %s\n", s, opt);
	exit(2);
}

static void usage(FILE *out)
{
	fprintf(out,
"usage: parallel_writer [options]\n"
"  -w, --writers N       writer threads (default 4)\n"
"  -r, --readers N       reader threads (default 2)\n"
"  -s, --file-size SIZE  file size in bytes, K/M/G suffixes (default 16M)\n"
"      --min-extent SIZE smallest extent (default 4K)\n"
"      --max-extent SIZE largest extent (default 64K)\n"
"      --chunk SIZE      pwrite() piece size (default 4K)\n"
"      --io-delay-us US  every read and write also sleeps this long under\n"
"                        its lock, like I/O to a device (default 100; 0:\n"
"                        the page cache alone)\n"
"  -d, --duration SEC    seconds per lock mode (default 2)\n"
"      --rounds N        split that into N turns per mode, the modes taking\n"
"                        turns (fairer on a busy machine; default 1)\n"
"  -n, --ops N           writes per lock mode and round (default 0: run for\n"
"                        --duration; a run ends at whichever comes first)\n"
"  -l, --lock MODE       range, mutex, rwlock, none or all (default all:\n"
"                        range, mutex and rwlock, compared)\n"
"      --broken          no lock at all (same as --lock none): the checks\n"
"                        must catch torn extents and the program exit 1\n"
"      --seed N          random seed (default 1)\n"
"      --stats           count and print the range lock's statistics\n"
"                        (acquisitions that waited, wait times)\n"
"  -q, --quiet           print only the summary\n"
"  -h, --help            this text\n"
"Sizes are rounded down to multiples of 8 bytes.  Exit status: 0 checks\n"
"passed, 1 a check failed, 2 usage or system error.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "writers", required_argument, NULL, 'w' },
		{ "readers", required_argument, NULL, 'r' },
		{ "file-size", required_argument, NULL, 's' },
		{ "min-extent", required_argument, NULL, 1 },
		{ "max-extent", required_argument, NULL, 2 },
		{ "chunk", required_argument, NULL, 3 },
		{ "duration", required_argument, NULL, 'd' },
		{ "ops", required_argument, NULL, 'n' },
		{ "lock", required_argument, NULL, 'l' },
		{ "broken", no_argument, NULL, 4 },
		{ "seed", required_argument, NULL, 5 },
		{ "io-delay-us", required_argument, NULL, 6 },
		{ "rounds", required_argument, NULL, 7 },
		{ "stats", no_argument, NULL, 8 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct config cfg = {
		.writers = 4, .readers = 2,
		.file_size = 16 << 20, .min_extent = 4 << 10, .max_extent = 64 << 10,
		.chunk = 4096, .duration = 2.0, .rounds = 1, .seed = 1,
		.delay_us = 100,
	};
	struct result res[NR_MODES];
	bool any_mode = false, failed = false;
	char path[] = "/tmp/parallel_writer.XXXXXX";
	const char *tmpdir = getenv("TMPDIR");
	char *tmppath;
	unsigned round;
	int c, fd, m;

	while ((c = getopt_long(argc, argv, "w:r:s:d:n:l:qh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'w': cfg.writers = (unsigned)parse_size(optarg, "--writers"); break;
		case 'r': cfg.readers = (unsigned)parse_size(optarg, "--readers"); break;
		case 's': cfg.file_size = parse_size(optarg, "--file-size"); break;
		case 1: cfg.min_extent = parse_size(optarg, "--min-extent"); break;
		case 2: cfg.max_extent = parse_size(optarg, "--max-extent"); break;
		case 3: cfg.chunk = parse_size(optarg, "--chunk"); break;
		case 'd': cfg.duration = atof(optarg); break;
		case 'n': cfg.ops = parse_size(optarg, "--ops"); break;
		case 'l':
			for (m = 0; m < NR_MODES; m++)
				if (!strcmp(optarg, mode_name[m]))
					break;
			if (m < NR_MODES) {
				cfg.modes[m] = true;
			} else if (!strcmp(optarg, "all")) {
				cfg.modes[LOCK_RANGE] = cfg.modes[LOCK_MUTEX] =
					cfg.modes[LOCK_RWLOCK] = true;
			} else {
				fprintf(stderr, "parallel_writer: unknown lock '%s'\n",
					optarg);
				return 2;
			}
			any_mode = true;
			break;
		case 4: cfg.broken = true; break;
		case 5: cfg.seed = parse_size(optarg, "--seed"); break;
		case 6: cfg.delay_us = (long)parse_size(optarg, "--io-delay-us"); break;
		case 7: cfg.rounds = (unsigned)parse_size(optarg, "--rounds"); break;
		case 8: cfg.stats = true; break;
		case 'q': cfg.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (cfg.broken) {
		memset(cfg.modes, 0, sizeof(cfg.modes));
		cfg.modes[LOCK_NONE] = true;
	} else if (!any_mode) {
		cfg.modes[LOCK_RANGE] = cfg.modes[LOCK_MUTEX] =
			cfg.modes[LOCK_RWLOCK] = true;
	}
	cfg.file_size -= cfg.file_size % WORD;
	cfg.min_extent -= cfg.min_extent % WORD;
	cfg.max_extent -= cfg.max_extent % WORD;
	if (cfg.writers < 1 || cfg.writers > MAX_WRITERS ||
	    cfg.readers > 1000 || cfg.min_extent < WORD ||
	    cfg.max_extent < cfg.min_extent ||
	    cfg.max_extent > cfg.file_size ||
	    cfg.max_extent / WORD > MAX_EXTENT_WORDS ||
	    cfg.file_size / WORD > UINT32_MAX || cfg.chunk < 1 ||
	    cfg.delay_us < 0 || cfg.delay_us > 10000000 ||
	    cfg.rounds < 1 || cfg.rounds > 1000 ||
	    !(cfg.duration > 0)) {
		fprintf(stderr, "parallel_writer: need 1 <= writers <= %u, "
			"8 <= min-extent <= max-extent <= file-size, "
			"max-extent < 128M, file-size < 32G, chunk >= 1, "
			"io-delay-us <= 10 s, 1 <= rounds <= 1000, "
			"duration > 0\n", MAX_WRITERS);
		return 2;
	}

	/* The temporary file, unlinked at once so that it goes away at exit. */
	if (tmpdir && *tmpdir) {
		if (asprintf(&tmppath, "%s/parallel_writer.XXXXXX", tmpdir) < 0)
			die("asprintf");
	} else if (!(tmppath = strdup(path))) {
		die("strdup");
	}
	fd = mkstemp(tmppath);
	if (fd < 0)
		die(tmppath);
	unlink(tmppath);
	free(tmppath);

	printf("parallel_writer (librangelock %s): %u writers, %u readers, "
	       "file %" PRIu64 " bytes, extents %" PRIu64 "..%" PRIu64
	       " bytes, chunk %" PRIu64 ", I/O delay %ld us\n",
	       rangelock_version(), cfg.writers, cfg.readers, cfg.file_size,
	       cfg.min_extent, cfg.max_extent, cfg.chunk, cfg.delay_us);
	printf("%-7s %8s %10s %10s %9s %8s %s\n", "lock", "seconds",
	       "writes/s", "reads/s", "MiB/s", "waiting", "result");

	/*
	 * The modes take turns, --rounds times, so that a noisy moment on a
	 * shared machine hits them all alike; the results are summed.
	 */
	memset(res, 0, sizeof(res));
	for (round = 0; round < cfg.rounds && !failed; round++) {
		for (m = 0; m < NR_MODES; m++) {
			struct result one;

			if (!cfg.modes[m])
				continue;
			one = run_mode(&cfg, (enum lock_mode)m, fd,
				       cfg.duration / cfg.rounds);
			add_result(&res[m], &one);
			if (one.errors)
				failed = true;
		}
	}

	for (m = 0; m < NR_MODES; m++) {
		double mib;

		if (!cfg.modes[m] || res[m].secs <= 0)
			continue;
		mib = (double)(res[m].wbytes + res[m].rbytes) / (1 << 20);
		printf("%-7s %8.2f %10.0f %10.0f %9.1f %7.1f%% %s\n",
		       mode_name[m], res[m].secs, res[m].writes / res[m].secs,
		       res[m].reads / res[m].secs, mib / res[m].secs,
		       100.0 * res[m].wait_ns / 1e9 / res[m].secs /
		       (cfg.writers + cfg.readers),
		       res[m].errors ? "TORN" : "ok");
		fflush(stdout);
		if (m == LOCK_RANGE && cfg.stats)
			printf("        (range lock statistics: %" PRIu64 " of %"
			       PRIu64 " acquisitions waited for an overlapping"
			       " extent, %.0f us on average, %.0f us at most)\n",
			       res[m].stats.contended,
			       res[m].stats.read_acquired +
			       res[m].stats.write_acquired,
			       res[m].stats.contended ?
			       res[m].stats.wait_ns_total / 1e3 /
			       res[m].stats.contended : 0.0,
			       res[m].stats.wait_ns_max / 1e3);
	}

	if (!cfg.quiet)
		printf("waiting: share of the threads' time spent blocked on the"
		       " lock\n");
	/* Throughput relative to the mutex, for the runs that can compare. */
	if (cfg.modes[LOCK_MUTEX] && res[LOCK_MUTEX].secs > 0) {
		double base = (res[LOCK_MUTEX].wbytes + res[LOCK_MUTEX].rbytes) /
			      res[LOCK_MUTEX].secs;

		for (m = 0; m < LOCK_NONE; m++) {
			if (!cfg.modes[m] || m == LOCK_MUTEX || base <= 0)
				continue;
			printf("%s vs mutex: %.2fx (bytes moved per second)\n",
			       mode_name[m],
			       (res[m].wbytes + res[m].rbytes) / res[m].secs /
			       base);
		}
	}

	close(fd);
	if (failed) {
		printf("FAILED: torn or misordered extents detected%s\n",
		       cfg.broken ? " (expected: --broken takes no lock)" : "");
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
