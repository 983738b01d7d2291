/* SPDX-License-Identifier: MIT */
/*
 * rangelock-bench: the file scenario ("file" section), after the seed's
 * first user, Lustre.  N threads write chunks of one file at random chunk
 * offsets; each chunk is written as several pwrite calls under one lock of
 * its byte range: a librangelock write lock, one pthread_rwlock or
 * pthread_mutex around every write, or an OFD write lock on the byte range
 * (each thread opens its own file description).  At the end every chunk
 * must hold a single pattern; the no-lock control shows that the check
 * catches torn chunks.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

struct fworker {
	_Alignas(CACHELINE) pthread_t th;
	struct frun *run;
	int id, fd;
	uint64_t rng;
	uint64_t writes;
	uint64_t runq_ns;
	uint64_t *buf;
};

struct frun {
	enum lock_kind kind;
	const char *path;
	struct lockset *ls;
	pthread_barrier_t bar;
	_Alignas(CACHELINE) atomic_int stop;
};

static void ofd_lock(int fd, short type, uint64_t off, uint64_t len)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)off;
	fl.l_len = (off_t)len;
	while (fcntl(fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl) < 0) {
		if (errno == EINTR)
			continue;
		perror("fcntl(F_OFD_SETLKW)");
		exit(2);
	}
}

static void *fworker_main(void *arg)
{
	struct fworker *w = arg;
	struct frun *r = w->run;
	const uint64_t chunk = opt.file_chunk, piece = chunk / opt.file_pieces;
	const size_t words = (size_t)(chunk / sizeof(uint64_t));
	struct range_lock req;
	uint64_t seq = 0, writes = 0;

	pthread_barrier_wait(&r->bar);
	uint64_t rq0 = runq_wait_ns();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t c = (xorshift64(&w->rng) >> 4) % opt.file_chunks;
		uint64_t off = c * chunk;
		uint64_t pattern = ((uint64_t)(w->id + 1) << 48) | ++seq;

		for (size_t i = 0; i < words; i++)
			w->buf[i] = pattern;
		switch (r->kind) {
		case LK_RANGE:
		case LK_RANGE_FIFO:
			range_lock_init(&req, off, off + chunk - 1);
			range_write_lock(&r->ls->tree, &req);
			break;
		case LK_RW:
			pthread_rwlock_wrlock(&r->ls->rw);
			break;
		case LK_MUTEX:
			pthread_mutex_lock(&r->ls->mtx);
			break;
		case LK_OFD:
			ofd_lock(w->fd, F_WRLCK, off, chunk);
			break;
		default:
			break;
		}
		/* The chunk in several pwrite calls: without a lock two writers
		 * of one chunk interleave and leave it torn. */
		for (uint64_t p = 0; p < opt.file_pieces; p++) {
			const char *src = (const char *)w->buf + p * piece;
			if (pwrite(w->fd, src, (size_t)piece, (off_t)(off + p * piece)) !=
			    (ssize_t)piece) {
				perror("pwrite");
				exit(2);
			}
		}
		switch (r->kind) {
		case LK_RANGE:
		case LK_RANGE_FIFO:
			range_write_unlock(&r->ls->tree, &req);
			break;
		case LK_RW:
			pthread_rwlock_unlock(&r->ls->rw);
			break;
		case LK_MUTEX:
			pthread_mutex_unlock(&r->ls->mtx);
			break;
		case LK_OFD:
			ofd_lock(w->fd, F_UNLCK, off, chunk);
			break;
		default:
			break;
		}
		writes++;
	}
	w->runq_ns = runq_wait_ns() - rq0;
	w->writes = writes;
	return NULL;
}

/* Returns the number of torn chunks; *secs, *writes out. */
static uint64_t run_file(enum lock_kind kind, int nthreads, double *writes_per_s,
			 double *runq_pct)
{
	char path[4096];
	struct frun *r = aligned_alloc(CACHELINE, sizeof(*r));
	struct fworker *w = aligned_alloc(CACHELINE, sizeof(*w) * (size_t)nthreads);
	const uint64_t size = opt.file_chunk * opt.file_chunks;
	uint64_t t0, t1, total = 0, torn = 0, runq = 0;
	uint64_t *chunkbuf;
	int fd;

	if (!r || !w) {
		perror("aligned_alloc");
		exit(2);
	}
	snprintf(path, sizeof(path), "%s/rangelock-bench.XXXXXX", opt.file_dir);
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "rangelock-bench: mkstemp in %s: %s\n", opt.file_dir,
			strerror(errno));
		exit(2);
	}
	if (ftruncate(fd, (off_t)size)) {
		perror("ftruncate");
		exit(2);
	}
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->path = path;
	r->ls = lockset_new(kind);
	atomic_init(&r->stop, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].run = r;
		w[i].id = i;
		w[i].rng = (0x9E3779B97F4A7C15ull * (uint64_t)(i + 7)) ^ now_ns();
		if (!w[i].rng)
			w[i].rng = 1;
		/* One open file description per thread: OFD locks belong to it,
		 * so only separate descriptions exclude each other. */
		w[i].fd = open(path, O_RDWR);
		w[i].buf = aligned_alloc(4096, (size_t)opt.file_chunk);
		if (w[i].fd < 0 || !w[i].buf) {
			perror("open");
			exit(2);
		}
		if (pthread_create(&w[i].th, NULL, fworker_main, &w[i])) {
			perror("pthread_create");
			exit(2);
		}
	}
	pthread_barrier_wait(&r->bar);
	t0 = now_ns();
	sleep_ns(opt.duration_ms * 1000000ull);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	t1 = now_ns();
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].writes;
		runq += w[i].runq_ns;
		close(w[i].fd);
		free(w[i].buf);
	}
	*writes_per_s = (double)total / ((double)(t1 - t0) / 1e9);
	*runq_pct = 100.0 * (double)runq / ((double)(t1 - t0) * nthreads);

	/* Every chunk must hold one pattern (or still be zero). */
	chunkbuf = aligned_alloc(4096, (size_t)opt.file_chunk);
	if (!chunkbuf) {
		perror("aligned_alloc");
		exit(2);
	}
	for (uint64_t c = 0; c < opt.file_chunks; c++) {
		if (pread(fd, chunkbuf, (size_t)opt.file_chunk,
			  (off_t)(c * opt.file_chunk)) != (ssize_t)opt.file_chunk) {
			perror("pread");
			exit(2);
		}
		for (size_t i = 1; i < opt.file_chunk / sizeof(uint64_t); i++)
			if (chunkbuf[i] != chunkbuf[0]) {
				torn++;
				break;
			}
	}
	free(chunkbuf);
	close(fd);
	unlink(path);
	pthread_barrier_destroy(&r->bar);
	lockset_free(r->ls);
	free(w);
	free(r);
	if (torn && kind != LK_NONE) {
		fprintf(stderr, "\nrangelock-bench: TORN WRITE: %s, %d threads: %" PRIu64
			" torn chunk(s)\n", lk_name[kind], nthreads, torn);
		check_failures++;
	}
	return torn;
}

/* The lock kinds of the file scenario, in table order. */
static int file_kinds(enum lock_kind *kinds)
{
	const enum lock_kind order[] = { LK_RW, LK_MUTEX, LK_OFD, LK_RANGE, LK_RANGE_FIFO,
					 LK_NONE };
	int nk = 0;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (opt.locks[order[i]] || order[i] == LK_RW)
			kinds[nk++] = order[i];
	return nk;
}

static long file_steps(void)
{
	enum lock_kind kinds[LK_COUNT];

	return (long)opt.nthreads_list * opt.reps * file_kinds(kinds);
}

static void file_run(void)
{
	enum lock_kind kinds[LK_COUNT];
	int nk = file_kinds(kinds);

	for (int t = 0; t < opt.nthreads_list; t++) {
		int threads = opt.threads[t], first = nrecs;

		for (int k = 0; k < nk; k++) {
			struct rec *rc = rec_new("file", WL_WRITE, RG_RANDOM, threads,
						 kinds[k], "writes_per_s", "writes/s", true);
			rc->held = opt.file_chunk;
			rc->work_in = rc->work_out = 0;
			rc->extra_name = "torn_max";
		}
		for (int rep = 0; rep < opt.reps; rep++)
			for (int k = 0; k < nk; k++) {
				struct rec *rc = &recs[first + k];
				double wps;

				progress("file %dthr %s rep %d/%d", threads, lk_name[kinds[k]],
					 rep + 1, opt.reps);
				rc->extra[rc->n] = (double)run_file(kinds[k], threads, &wps,
								    &rc->rq[rc->n]);
				rc->v[rc->n++] = wps;
			}
	}
}

static void file_print(FILE *out)
{
	char name[64], rs[96], rr[48];
	bool any = false;

	for (int i = 0; i < nrecs; i++)
		if (!strcmp(recs[i].section, "file"))
			any = true;
	if (!any)
		return;
	fprintf(out, "== File (Lustre): %" PRIu64 " chunks of %" PRIu64 " bytes, each "
		"write = %" PRIu64 " pwrite calls under one lock, writes/s ==\n",
		opt.file_chunks, opt.file_chunk, opt.file_pieces);
	for (int i = 0; i < nrecs; i++) {
		struct rec *r = &recs[i];

		if (strcmp(r->section, "file"))
			continue;
		snprintf(name, sizeof(name), "%s-%dthr:", lk_short[r->lock], r->threads);
		ratio_str(rr, sizeof(rr), r);
		snprintf(rs, sizeof(rs), "%s, torn chunks: %.0f%s", rr,
			 max_of(r->extra, r->n),
			 r->lock == LK_NONE ? " (no lock: tearing expected)" : "");
		print_line(out, name, rec_median(r), mean_of(r->v, r->n),
			   stddev_of(r->v, r->n), rs, r);
	}
	fprintf(out, "\n");
}

const struct bench_section bench_section_file = {
	.name = "file",
	.steps = file_steps,
	.run = file_run,
	.print = file_print,
};
