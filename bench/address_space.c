/* SPDX-License-Identifier: MIT */
/*
 * address_space - a toy address-space manager whose one big lock can be a
 * pthread_rwlock_t, a range lock taken over the full range, or a range lock
 * narrowed to the pages each operation touches.
 *
 * This is the experiment of the 2017 RFC "Replace mmap_sem by a range lock":
 * first hide the lock behind wrapper macros (its mm_read_lock(mm, range)
 * and friends, switched by CONFIG_MEM_RANGE_LOCK), then replace the rwsem by
 * a range lock over the full range (no gain expected, and no loss wanted),
 * then narrow the ranges so that a fault in one region no longer waits for
 * an mmap()/munmap() in another.  The three builds of this file are the
 * three steps; AS_LOCK_MODE picks one at compile time:
 *
 *   AS_LOCK_MODE=1  address_space_rwlock  one pthread_rwlock_t
 *   AS_LOCK_MODE=2  address_space_full    range lock, always [0, FULL]
 *   AS_LOCK_MODE=3  address_space_narrow  range lock on the pages touched
 *   AS_LOCK_MODE=0  address_space_none    no lock: shows the checks work
 *
 * The address space is P pages.  A region is [start, end) in pages with
 * protection bits; the map of regions is a sorted array.  Every page has a
 * little backing store ("page contents", --page-words 8-byte words) and a
 * fault counter.  Operations:
 *   as_map(start, n, prot)   create a region; fails if anything is there
 *   as_unmap(start, n)       remove the regions inside [start, start+n)
 *   as_protect(start, n, p)  change the protection of the regions inside
 *   as_fault(addr, write)    find the region of a page, check the access,
 *                            read the page, count the fault
 * map, unmap and protect write every word of the pages they change (zero
 * filling, tearing down, re-stamping the page table, in a real kernel) and
 * then sleep --hold-us under their write lock (a kernel sleeps under
 * mmap_sem for I/O or reclaim), so they hold the lock for a while: that is
 * what faults elsewhere should not have to wait for.
 *
 * The workload: F faulter threads fault random pages of the lower half of
 * the address space (long-lived regions: heap, stacks, text), and with
 * --churn-faults some of the upper half; M mapper threads map, unmap and
 * re-protect regions in the upper half, pausing --pause-us between
 * operations.  The program prints faults per second, the mappers'
 * operations per second, and how much of the faulters' time went into
 * waiting for the lock.
 *
 * The locking rule, the same in every mode: a region, its fields and its
 * pages change only under a write lock covering the whole region, and are
 * read under a read lock covering at least the page read.  In the narrowed
 * mode two operations on disjoint pages run in parallel, so the sorted array
 * itself (which an insertion anywhere shifts) needs its own short lock,
 * as_struct_read_lock() and as_struct_write_lock(); in the two big-lock
 * modes they compile to nothing.  (The
 * RFC's cover letter says the same of the VMA tree and cache.)
 *
 * The self-checks, exit 1 if any fails:
 *   - every fault finds a region that is live (not half-mapped, half
 *     unmapped or half re-protected) and contains the page, and every word
 *     of the page holds that region's current stamp;
 *   - unmap finds each region's fault counter equal to the sum of its pages'
 *     counters (no fault ran inside the write lock), and map, unmap and
 *     protect find their pages unchanged after their sleep (no other change
 *     ran inside it; run with -m 2 or more to exercise that);
 *   - at the end: the array is sorted and non-overlapping, every mapped page
 *     holds its region's stamp and every unmapped page the poison pattern,
 *     the per-region counters match their pages, and the faults counted by
 *     the regions (live and unmapped) equal the faults the threads made.
 *
 * Only the public API is used: #include <rangelock/rangelock.h>.
 */
#define _GNU_SOURCE
#include <rangelock/rangelock.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AS_LOCK_NONE   0
#define AS_LOCK_RWLOCK 1
#define AS_LOCK_FULL   2
#define AS_LOCK_NARROW 3

#ifndef AS_LOCK_MODE
#define AS_LOCK_MODE AS_LOCK_NARROW
#endif

/* ------------------------------------------------------ the lock wrappers */
/*
 * as_range_define(r, first, last) declares the range an operation works on
 * (pages first..last inclusive); the lock calls take that range.  As in the
 * RFC, the range argument costs nothing where the lock has no ranges.
 */
#if AS_LOCK_MODE == AS_LOCK_RWLOCK
#define AS_MODE_NAME "rwlock"
typedef pthread_rwlock_t as_lock_t;
#define as_lock_init(as)              as_rwlock_init(&(as)->lock)
#define as_lock_destroy(as)           (pthread_rwlock_destroy(&(as)->lock), 0)
#define as_range_define(r, first, last) do { } while (0)
#define as_read_lock(as, r)           pthread_rwlock_rdlock(&(as)->lock)
#define as_read_trylock(as, r)        (pthread_rwlock_tryrdlock(&(as)->lock) == 0)
#define as_read_unlock(as, r)         pthread_rwlock_unlock(&(as)->lock)
#define as_write_lock(as, r)          pthread_rwlock_wrlock(&(as)->lock)
#define as_write_unlock(as, r)        pthread_rwlock_unlock(&(as)->lock)

#elif AS_LOCK_MODE == AS_LOCK_FULL
#define AS_MODE_NAME "full"
typedef struct range_lock_tree as_lock_t;
#define as_lock_init(as)              range_lock_tree_init(&(as)->lock)
#define as_lock_destroy(as)           range_lock_tree_destroy(&(as)->lock)
#define as_range_define(r, first, last) DEFINE_RANGE_LOCK_FULL(r)
#define as_read_lock(as, r)           range_read_lock(&(as)->lock, &(r))
#define as_read_trylock(as, r)        range_read_trylock(&(as)->lock, &(r))
#define as_read_unlock(as, r)         range_read_unlock(&(as)->lock, &(r))
#define as_write_lock(as, r)          range_write_lock(&(as)->lock, &(r))
#define as_write_unlock(as, r)        range_write_unlock(&(as)->lock, &(r))

#elif AS_LOCK_MODE == AS_LOCK_NARROW
#define AS_MODE_NAME "narrow"
typedef struct range_lock_tree as_lock_t;
#define as_lock_init(as)              range_lock_tree_init(&(as)->lock)
#define as_lock_destroy(as)           range_lock_tree_destroy(&(as)->lock)
#define as_range_define(r, first, last) DEFINE_RANGE_LOCK(r, first, last)
#define as_read_lock(as, r)           range_read_lock(&(as)->lock, &(r))
#define as_read_trylock(as, r)        range_read_trylock(&(as)->lock, &(r))
#define as_read_unlock(as, r)         range_read_unlock(&(as)->lock, &(r))
#define as_write_lock(as, r)          range_write_lock(&(as)->lock, &(r))
#define as_write_unlock(as, r)        range_write_unlock(&(as)->lock, &(r))
/* Only narrowed ranges let a change of the region array overlap a lookup
 * or another change. */
#define AS_NEED_STRUCT_LOCK 1

#elif AS_LOCK_MODE == AS_LOCK_NONE
#define AS_MODE_NAME "none"
typedef int as_lock_t;
#define as_lock_init(as)              ((as)->lock = 0)
#define as_lock_destroy(as)           0
#define as_range_define(r, first, last) do { } while (0)
#define as_read_lock(as, r)           do { } while (0)
#define as_read_trylock(as, r)        1
#define as_read_unlock(as, r)         do { } while (0)
#define as_write_lock(as, r)          do { } while (0)
#define as_write_unlock(as, r)        do { } while (0)
/* Keep the array itself intact, so that what fails is the locking above. */
#define AS_NEED_STRUCT_LOCK 1

#else
#error "AS_LOCK_MODE must be 0 (none), 1 (rwlock), 2 (full) or 3 (narrow)"
#endif

/* The region array's own lock: lookups share it, changes exclude. */
#ifdef AS_NEED_STRUCT_LOCK
#define as_struct_read_lock(as)       pthread_rwlock_rdlock(&(as)->struct_lock)
#define as_struct_write_lock(as)      pthread_rwlock_wrlock(&(as)->struct_lock)
#define as_struct_unlock(as)          pthread_rwlock_unlock(&(as)->struct_lock)
#else
#define as_struct_read_lock(as)       do { } while (0)
#define as_struct_write_lock(as)      do { } while (0)
#define as_struct_unlock(as)          do { } while (0)
#endif

/* -------------------------------------------------------- the structures */

#define PROT_R 1u
#define PROT_W 2u
#define POISON UINT64_C(0xdeaddeaddeaddead)   /* contents of unmapped pages */

enum region_state { LIVE, MAPPING, CHANGING, UNMAPPING, DEAD };
static const char *const state_name[] = {
	"live", "half-mapped", "half re-protected", "half-unmapped", "unmapped"
};

/*
 * A region.  The atomics are for the broken (none) build only: there the
 * fields really are read while they change, and relaxed atomics keep that
 * defined behaviour that the checks can observe.  With a lock they cost
 * nothing on common CPUs.
 */
struct region {
	uint64_t start, end;            /* pages [start, end) */
	_Atomic unsigned state;         /* enum region_state */
	_Atomic unsigned prot;          /* PROT_R | PROT_W */
	_Atomic uint64_t stamp;         /* what every word of its pages holds */
	_Atomic uint64_t faults;        /* faults served in this region */
	uint64_t id;
	struct region *next_retired;
};

struct address_space {
	as_lock_t lock;                 /* the lock the wrappers take */
	pthread_rwlock_t struct_lock;   /* the array, in the narrowed mode */
	struct region **regions;        /* sorted by start, non-overlapping */
	_Atomic size_t nr_regions;
	uint64_t pages, page_words;
	_Atomic uint64_t *backing;      /* pages * page_words words */
	_Atomic uint64_t *page_faults;  /* faults per page since mapped */
	_Atomic uint64_t next_id;
	long hold_us;                   /* extra time map/unmap/protect hold */

	pthread_mutex_t retire_lock;    /* unmapped regions, freed at exit */
	struct region *retired;

	_Atomic uint64_t errors;
	_Atomic unsigned reports;
};

static void report(struct address_space *as, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&as->errors, 1);
	if (atomic_fetch_add(&as->reports, 1) >= 5)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "  [" AS_MODE_NAME "] ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define RELAXED memory_order_relaxed
#define LOAD(p) atomic_load_explicit((p), RELAXED)
#define STORE(p, v) atomic_store_explicit((p), (v), RELAXED)

/*
 * glibc's rwlock prefers readers by default: with faults arriving all the
 * time, map and unmap could wait for ever.  The kernel's rwsem and the range
 * lock (first come, first served) do not starve writers; ask for the same.
 */
static void as_rwlock_init(pthread_rwlock_t *l)
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

/* ------------------------------------------- the sorted array of regions */
/* Under as_struct_*_lock() and a range lock covering what they touch. */

/* Index of the first region whose end is above @page (nr if none). */
static size_t first_ending_after(struct address_space *as, uint64_t page)
{
	size_t lo = 0, hi = LOAD(&as->nr_regions);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->regions[mid]->end <= page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void array_insert(struct address_space *as, struct region *reg)
{
	size_t i = first_ending_after(as, reg->start), nr = LOAD(&as->nr_regions);

	memmove(&as->regions[i + 1], &as->regions[i],
		(nr - i) * sizeof(*as->regions));
	as->regions[i] = reg;
	STORE(&as->nr_regions, nr + 1);
}

static void array_remove(struct address_space *as, struct region *reg)
{
	size_t i = first_ending_after(as, reg->start), nr = LOAD(&as->nr_regions);

	if (i >= nr || as->regions[i] != reg) {
		report(as, "region %" PRIu64 " missing from the array", reg->id);
		return;
	}
	memmove(&as->regions[i], &as->regions[i + 1],
		(nr - i - 1) * sizeof(*as->regions));
	STORE(&as->nr_regions, nr - 1);
}

/*
 * Collect the regions intersecting [start, end) into @out (at most @max).
 * Returns how many, or -1 if one of them sticks out of [start, end): the
 * toy does not split regions, so unmap and protect work on whole regions.
 */
static int regions_in(struct address_space *as, uint64_t start, uint64_t end,
		      struct region **out, int max)
{
	size_t i = first_ending_after(as, start), nr = LOAD(&as->nr_regions);
	int n = 0;

	for (; i < nr && as->regions[i]->start < end; i++) {
		if (as->regions[i]->start < start || as->regions[i]->end > end)
			return -1;
		if (n < max)
			out[n++] = as->regions[i];
	}
	return n;
}

/* ------------------------------------------------------- the operations */

static _Atomic uint64_t *page_words_of(struct address_space *as, uint64_t page)
{
	return &as->backing[page * as->page_words];
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Write @value into every word of the pages [start, end). */
static void fill_pages(struct address_space *as, uint64_t start, uint64_t end,
		       uint64_t value)
{
	_Atomic uint64_t *w = page_words_of(as, start);
	uint64_t i, n = (end - start) * as->page_words;

	for (i = 0; i < n; i++)
		STORE(&w[i], value);
}

/*
 * After its sleep a change checks that its pages still hold what it wrote:
 * nobody else may write them while it holds its write lock.
 */
static void check_pages(struct address_space *as, const struct region *reg,
			uint64_t value, const char *who)
{
	_Atomic uint64_t *w = page_words_of(as, reg->start);
	uint64_t i, n = (reg->end - reg->start) * as->page_words;

	for (i = 0; i < n; i++) {
		if (LOAD(&w[i]) != value) {
			report(as, "%s: page %" PRIu64 " of region %" PRIu64
			       " changed under our write lock", who,
			       reg->start + i / as->page_words, reg->id);
			return;
		}
	}
}

/*
 * The rest of a change's time under the write lock: --hold-us asleep, as a
 * kernel sleeps under mmap_sem for I/O, memory reclaim or a TLB shootdown.
 * While it sleeps, every fault that needs the lock waits; that waiting, not
 * the CPU the change uses, is what narrowing the ranges removes.
 */
static void hold(struct address_space *as)
{
	struct timespec ts = { as->hold_us / 1000000, as->hold_us % 1000000 * 1000 };

	if (as->hold_us > 0)
		nanosleep(&ts, NULL);
}

static uint64_t make_stamp(uint64_t id, unsigned prot)
{
	return id << 8 | prot;
}

/* Map [start, start + n) with @prot.  0, or -EEXIST if anything is there. */
static int as_map(struct address_space *as, uint64_t start, uint64_t n,
		  unsigned prot)
{
	struct region *reg, *clash[1];
	uint64_t p;

	as_range_define(r, start, start + n - 1);
	as_write_lock(as, r);

	as_struct_write_lock(as);
	if (regions_in(as, start, start + n, clash, 1) != 0) {
		as_struct_unlock(as);
		as_write_unlock(as, r);
		return -EEXIST;
	}
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		abort();
	reg->start = start;
	reg->end = start + n;
	reg->id = atomic_fetch_add(&as->next_id, 1);
	STORE(&reg->state, MAPPING);    /* visible, but nobody may look yet */
	STORE(&reg->prot, prot);
	STORE(&reg->stamp, make_stamp(reg->id, prot));
	array_insert(as, reg);
	as_struct_unlock(as);

	/* The slow part: "zero-fill" the pages, outside the struct lock. */
	fill_pages(as, reg->start, reg->end, LOAD(&reg->stamp));
	for (p = reg->start; p < reg->end; p++)
		STORE(&as->page_faults[p], 0);
	hold(as);
	check_pages(as, reg, LOAD(&reg->stamp), "map");
	STORE(&reg->state, LIVE);

	as_write_unlock(as, r);
	return 0;
}

/* Sum of the page counters of @reg; must equal reg->faults. */
static uint64_t page_fault_sum(struct address_space *as, struct region *reg)
{
	uint64_t p, sum = 0;

	for (p = reg->start; p < reg->end; p++)
		sum += LOAD(&as->page_faults[p]);
	return sum;
}

/* Unmap the regions inside [start, start + n); returns how many, or -EINVAL
 * if a region sticks out of the range. */
static int as_unmap(struct address_space *as, uint64_t start, uint64_t n)
{
	struct region *victims[64];
	int nr, i;

	as_range_define(r, start, start + n - 1);
	as_write_lock(as, r);

	as_struct_read_lock(as);
	nr = regions_in(as, start, start + n, victims, 64);
	as_struct_unlock(as);

	for (i = 0; i < nr; i++) {
		struct region *reg = victims[i];

		STORE(&reg->state, UNMAPPING);
		if (LOAD(&reg->faults) != page_fault_sum(as, reg))
			report(as, "unmap: region %" PRIu64 " counted %" PRIu64
			       " faults, its pages %" PRIu64, reg->id,
			       LOAD(&reg->faults), page_fault_sum(as, reg));
		fill_pages(as, reg->start, reg->end, POISON);
		hold(as);
		check_pages(as, reg, POISON, "unmap");
		as_struct_write_lock(as);
		array_remove(as, reg);
		as_struct_unlock(as);
		STORE(&reg->state, DEAD);

		/* Keep it: its fault count is part of the final tally. */
		pthread_mutex_lock(&as->retire_lock);
		reg->next_retired = as->retired;
		as->retired = reg;
		pthread_mutex_unlock(&as->retire_lock);
	}

	as_write_unlock(as, r);
	return nr < 0 ? -EINVAL : nr;
}

/* Set the protection of the regions inside [start, start + n). */
static int as_protect(struct address_space *as, uint64_t start, uint64_t n,
		      unsigned prot)
{
	struct region *regs[64];
	int nr, i;

	as_range_define(r, start, start + n - 1);
	as_write_lock(as, r);

	as_struct_read_lock(as);
	nr = regions_in(as, start, start + n, regs, 64);
	as_struct_unlock(as);

	for (i = 0; i < nr; i++) {
		struct region *reg = regs[i];
		uint64_t stamp = make_stamp(reg->id, prot);

		/* "Rewrite the page table entries": re-stamp every page. */
		STORE(&reg->state, CHANGING);
		fill_pages(as, reg->start, reg->end, stamp);
		hold(as);
		check_pages(as, reg, stamp, "protect");
		STORE(&reg->prot, prot);
		STORE(&reg->stamp, stamp);
		STORE(&reg->state, LIVE);
	}

	as_write_unlock(as, r);
	return nr < 0 ? -EINVAL : nr;
}

enum fault_result { FAULT_OK, FAULT_SEGV, FAULT_BAD };

/*
 * A fault on page @addr: read (or write) access.  *@waited_ns is how long
 * the fault waited for the lock (the trylock first is only there to measure
 * that; a plain as_read_lock() alone would do).
 */
static enum fault_result as_fault(struct address_space *as, uint64_t addr,
				  bool write, uint64_t *waited_ns)
{
	enum fault_result res = FAULT_OK;
	struct region *reg = NULL;
	_Atomic uint64_t *w;
	uint64_t stamp, i;
	unsigned state;
	size_t idx;

	as_range_define(r, addr, addr);
	*waited_ns = 0;
	if (!as_read_trylock(as, r)) {
		uint64_t t0 = now_ns();

		as_read_lock(as, r);
		*waited_ns = now_ns() - t0 + 1;
	}

	as_struct_read_lock(as);
	idx = first_ending_after(as, addr);
	if (idx < LOAD(&as->nr_regions) && as->regions[idx]->start <= addr)
		reg = as->regions[idx];
	as_struct_unlock(as);

	if (!reg) {
		res = FAULT_SEGV;               /* nothing mapped here */
		goto out;
	}
	state = LOAD(&reg->state);
	if (state != LIVE || addr < reg->start || addr >= reg->end) {
		report(as, "fault at page %" PRIu64 ": region %" PRIu64
		       " [%" PRIu64 ", %" PRIu64 ") is %s", addr, reg->id,
		       reg->start, reg->end, state <= DEAD ? state_name[state] : "?");
		res = FAULT_BAD;
		goto out;
	}
	if (!(LOAD(&reg->prot) & (write ? PROT_W : PROT_R))) {
		res = FAULT_SEGV;               /* protection fault */
		goto out;
	}

	/* Read the page: every word must hold the region's stamp. */
	stamp = LOAD(&reg->stamp);
	w = page_words_of(as, addr);
	for (i = 0; i < as->page_words; i++) {
		if (LOAD(&w[i]) != stamp) {
			report(as, "fault at page %" PRIu64 ": word %" PRIu64
			       " holds %#" PRIx64 ", region %" PRIu64
			       " stamp %#" PRIx64, addr, i, LOAD(&w[i]),
			       reg->id, stamp);
			res = FAULT_BAD;
			goto out;
		}
	}
	atomic_fetch_add_explicit(&as->page_faults[addr], 1, RELAXED);
	atomic_fetch_add_explicit(&reg->faults, 1, RELAXED);
out:
	as_read_unlock(as, r);
	return res;
}

/* ------------------------------------------------------------ final check */

static uint64_t final_check(struct address_space *as)
{
	size_t i, nr = LOAD(&as->nr_regions);
	uint64_t page = 0, total = 0, p, k;
	struct region *reg;

	for (i = 0; i < nr; i++) {
		reg = as->regions[i];
		if (reg->start < page || reg->end <= reg->start ||
		    reg->end > as->pages || LOAD(&reg->state) != LIVE)
			report(as, "final: region %" PRIu64 " [%" PRIu64 ", %" PRIu64
			       ") out of order, overlapping or not live", reg->id,
			       reg->start, reg->end);
		/* Pages before the region are unmapped: poison. */
		for (; page < reg->start && page < as->pages; page++)
			for (k = 0; k < as->page_words; k++)
				if (LOAD(&page_words_of(as, page)[k]) != POISON) {
					report(as, "final: unmapped page %" PRIu64
					       " not poisoned", page);
					break;
				}
		for (p = reg->start; p < reg->end && p < as->pages; p++)
			for (k = 0; k < as->page_words; k++)
				if (LOAD(&page_words_of(as, p)[k]) !=
				    LOAD(&reg->stamp)) {
					report(as, "final: page %" PRIu64 " of region %"
					       PRIu64 " torn", p, reg->id);
					break;
				}
		if (LOAD(&reg->faults) != page_fault_sum(as, reg))
			report(as, "final: region %" PRIu64 " counted %" PRIu64
			       " faults, its pages %" PRIu64, reg->id,
			       LOAD(&reg->faults), page_fault_sum(as, reg));
		total += LOAD(&reg->faults);
		if (reg->end > page)
			page = reg->end;
	}
	for (; page < as->pages; page++)
		for (k = 0; k < as->page_words; k++)
			if (LOAD(&page_words_of(as, page)[k]) != POISON) {
				report(as, "final: unmapped page %" PRIu64
				       " not poisoned", page);
				break;
			}
	for (reg = as->retired; reg; reg = reg->next_retired)
		total += LOAD(&reg->faults);
	return total;
}

/* --------------------------------------------- watchdog (none build only) */

#if AS_LOCK_MODE == AS_LOCK_NONE
/*
 * Without a lock the structure really gets corrupted, and a thread or the
 * final check can loop for ever on it (a region list that no longer ends).
 * That is a race detected too: say so and exit 1, like any failed check, so
 * that the negative control always ends by itself and a ctest timeout can
 * only mean a real hang.  The locked builds have no watchdog.
 */
static void watchdog_fired(int sig)
{
	static const char msg[] = "  [" AS_MODE_NAME "] watchdog: a check got "
		"stuck on the corrupted structure: race detected\n"
		"  checks   FAILED: races seen (stuck)\n";
	ssize_t r;

	(void)sig;
	r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	_exit(1);
}

static void start_watchdog(double duration)
{
	signal(SIGALRM, watchdog_fired);
	alarm((unsigned)duration + 10);
}
#else
static void start_watchdog(double duration) { (void)duration; }
#endif

/* ---------------------------------------------------------------- threads */

struct config {
	uint64_t pages, page_words, slot, stable_len, stable_gap;
	unsigned faulters, mappers, churn_pct;
	long hold_us, pause_us;
	double duration;
	uint64_t seed;
};

struct worker {
	struct address_space *as;
	const struct config *cfg;
	pthread_t thread;
	uint64_t rng;
	uint64_t ok, segv, bad, waited, wait_ns, maps, unmaps, protects;
};

static pthread_barrier_t start_barrier;
static atomic_bool stop;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/*
 * The layout: the lower half of the address space holds long-lived regions
 * (stable_len pages every stable_len + stable_gap pages, mapped at start and
 * never changed: a program's heap, stacks and text); the upper half is cut
 * into slots of --slot pages where the mappers map, unmap and re-protect
 * regions all the time.
 */
static uint64_t stable_end(const struct config *cfg) { return cfg->pages / 2; }

/* Faulters: mostly the stable half, --churn-faults percent the other half. */
static void *faulter_main(void *arg)
{
	struct worker *me = arg;
	const struct config *cfg = me->cfg;
	uint64_t half = stable_end(cfg);

	pthread_barrier_wait(&start_barrier);
	while (!atomic_load_explicit(&stop, RELAXED)) {
		uint64_t x = rnd(&me->rng), addr;
		uint64_t waited_ns;

		if (x % 100 < cfg->churn_pct)
			addr = half + (x >> 8) % (cfg->pages - half);
		else
			addr = (x >> 8) % half;
		/* One fault in four is a write. */
		switch (as_fault(me->as, addr, (x >> 6 & 3) == 0, &waited_ns)) {
		case FAULT_OK: me->ok++; break;
		case FAULT_SEGV: me->segv++; break;
		default: me->bad++; break;
		}
		me->waited += waited_ns != 0;
		me->wait_ns += waited_ns;
	}
	return NULL;
}

/*
 * Mappers work in the upper half only: pick a slot, and either change the
 * protection of what is there (one time in four), or unmap it, or, if it
 * was empty, map a new region of random size into it.
 */
static void *mapper_main(void *arg)
{
	struct worker *me = arg;
	const struct config *cfg = me->cfg;
	uint64_t half = stable_end(cfg), nslots = (cfg->pages - half) / cfg->slot;

	pthread_barrier_wait(&start_barrier);
	while (!atomic_load_explicit(&stop, RELAXED)) {
		uint64_t x = rnd(&me->rng);
		uint64_t slot = half + (x >> 8) % nslots * cfg->slot;
		uint64_t len = 1 + (x >> 32) % cfg->slot;
		uint64_t off = (x >> 48) % (cfg->slot - len + 1);
		/* One region in four is read-only. */
		unsigned prot = (x >> 20 & 3) ? PROT_R | PROT_W : PROT_R;

		if (x % 4 == 0) {
			if (as_protect(me->as, slot, cfg->slot, prot) > 0)
				me->protects++;
		} else if (as_unmap(me->as, slot, cfg->slot) > 0) {
			me->unmaps++;
		} else if (as_map(me->as, slot + off, len, prot) == 0) {
			me->maps++;
		}
		if (cfg->pause_us > 0) {
			struct timespec ts = { cfg->pause_us / 1000000,
					       cfg->pause_us % 1000000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------- main */

static void usage(FILE *out)
{
	fprintf(out,
"usage: address_space_" AS_MODE_NAME " [options]\n"
"  -f, --faulters N     fault threads (default 2)\n"
"  -m, --mappers N      map/unmap/protect threads (default 1)\n"
"  -p, --pages N        pages in the address space (default 4096)\n"
"  -w, --page-words N   8-byte words per page (default 512: 4 KiB)\n"
"      --slot N         pages per map/unmap slot (default 128)\n"
"      --hold-us US     sleep under the write lock in each map, unmap and\n"
"                       protect (default 2000)\n"
"      --pause-us US    mappers sleep between operations (default 500)\n"
"  -c, --churn-faults P percent of faults sent to the half where regions\n"
"                       change (default 0; ctest uses 20 to exercise the\n"
"                       checks)\n"
"  -d, --duration SEC   seconds to run (default 2)\n"
"      --seed N         random seed (default 1)\n"
"  -h, --help           this text\n"
"Exit status: 0 checks passed, 1 a check failed, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "faulters", required_argument, NULL, 'f' },
		{ "mappers", required_argument, NULL, 'm' },
		{ "pages", required_argument, NULL, 'p' },
		{ "page-words", required_argument, NULL, 'w' },
		{ "slot", required_argument, NULL, 1 },
		{ "churn-faults", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 2 },
		{ "hold-us", required_argument, NULL, 3 },
		{ "pause-us", required_argument, NULL, 4 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct config cfg = {
		.pages = 4096, .page_words = 512, .slot = 128,
		.stable_len = 120, .stable_gap = 8,
		.faulters = 2, .mappers = 1, .churn_pct = 0,
		.hold_us = 2000, .pause_us = 500, .duration = 2.0, .seed = 1,
	};
	struct address_space as;
	struct worker *workers;
	uint64_t faults_ok = 0, segv = 0, bad = 0, waited = 0, wait_ns = 0;
	uint64_t maps = 0, unmaps = 0;
	uint64_t protects = 0, counted, total, i;
	unsigned nthreads;
	struct timespec t0, t1;
	double secs;
	int c;

	while ((c = getopt_long(argc, argv, "f:m:p:w:c:d:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'f': cfg.faulters = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': cfg.mappers = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'p': cfg.pages = strtoull(optarg, NULL, 0); break;
		case 'w': cfg.page_words = strtoull(optarg, NULL, 0); break;
		case 1: cfg.slot = strtoull(optarg, NULL, 0); break;
		case 'c': cfg.churn_pct = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': cfg.duration = atof(optarg); break;
		case 2: cfg.seed = strtoull(optarg, NULL, 0); break;
		case 3: cfg.hold_us = strtol(optarg, NULL, 0); break;
		case 4: cfg.pause_us = strtol(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || cfg.faulters + cfg.mappers == 0 ||
	    cfg.page_words == 0 || cfg.slot == 0 ||
	    cfg.pages < 4 * cfg.slot || cfg.pages < 2 * cfg.stable_len ||
	    cfg.pages > (UINT64_C(1) << 32) || cfg.churn_pct > 100 ||
	    cfg.hold_us < 0 || cfg.hold_us > 999999 || cfg.pause_us < 0 ||
	    cfg.pause_us > 999999 || !(cfg.duration > 0)) {
		fprintf(stderr, "address_space: need at least one thread, "
			"pages >= 4 * slot and >= 240, churn-faults <= 100, "
			"hold-us and pause-us < 1000000, duration > 0\n");
		return 2;
	}

	start_watchdog(cfg.duration);

	/* The address space: everything poisoned, then the stable regions. */
	memset(&as, 0, sizeof(as));
	as_lock_init(&as);
	as_rwlock_init(&as.struct_lock);
	pthread_mutex_init(&as.retire_lock, NULL);
	as.pages = cfg.pages;
	as.page_words = cfg.page_words;
	as.regions = calloc(cfg.pages, sizeof(*as.regions));
	as.backing = malloc(cfg.pages * cfg.page_words * sizeof(*as.backing));
	as.page_faults = calloc(cfg.pages, sizeof(*as.page_faults));
	if (!as.regions || !as.backing || !as.page_faults) {
		perror("address_space");
		return 2;
	}
	atomic_init(&as.next_id, 1);
	as.hold_us = 0;                 /* no sleeping for the initial maps */
	fill_pages(&as, 0, cfg.pages, POISON);
	for (i = 0; i + cfg.stable_len <= stable_end(&cfg);
	     i += cfg.stable_len + cfg.stable_gap)
		as_map(&as, i, cfg.stable_len, PROT_R | PROT_W);

	as.hold_us = cfg.hold_us;
	nthreads = cfg.faulters + cfg.mappers;
	workers = calloc(nthreads, sizeof(*workers));
	if (!workers)
		return 2;
	pthread_barrier_init(&start_barrier, NULL, nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		workers[i].as = &as;
		workers[i].cfg = &cfg;
		workers[i].rng = cfg.seed * 0x9e3779b97f4a7c15u + i + 1;
		if (pthread_create(&workers[i].thread, NULL,
				   i < cfg.faulters ? faulter_main : mapper_main,
				   &workers[i])) {
			perror("pthread_create");
			return 2;
		}
	}
	pthread_barrier_wait(&start_barrier);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Run for --duration, or until a check fails. */
	while (!atomic_load(&as.errors)) {
		struct timespec tick = { 0, 10 * 1000 * 1000 };

		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((double)(t1.tv_sec - t0.tv_sec) +
		    (t1.tv_nsec - t0.tv_nsec) / 1e9 >= cfg.duration)
			break;
		nanosleep(&tick, NULL);
	}
	atomic_store(&stop, true);
	for (i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		faults_ok += workers[i].ok;
		segv += workers[i].segv;
		bad += workers[i].bad;
		waited += workers[i].waited;
		wait_ns += workers[i].wait_ns;
		maps += workers[i].maps;
		unmaps += workers[i].unmaps;
		protects += workers[i].protects;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;

	counted = final_check(&as);
	if (counted != faults_ok)
		report(&as, "final: regions counted %" PRIu64 " faults, threads made %"
		       PRIu64, counted, faults_ok);
	if (as_lock_destroy(&as) != 0)
		report(&as, "lock still busy at exit");

	total = faults_ok + segv + bad;
	printf("address_space_%s (librangelock %s): %u faulters, %u mappers, "
	       "%" PRIu64 " pages of %" PRIu64 " words, %.2f s\n",
	       AS_MODE_NAME, rangelock_version(), cfg.faulters, cfg.mappers,
	       cfg.pages, cfg.page_words, secs);
	printf("  faults   %10.0f /s   segv %4.1f%%   %4.1f%% waited for the "
	       "lock, for %4.1f%% of the faulters' time\n", total / secs,
	       total ? 100.0 * segv / total : 0.0,
	       total ? 100.0 * waited / total : 0.0,
	       cfg.faulters ? 100.0 * wait_ns / 1e9 / secs / cfg.faulters : 0.0);
	printf("  mapper   %10.0f /s   (map %" PRIu64 ", unmap %" PRIu64
	       ", protect %" PRIu64 ")\n", (maps + unmaps + protects) / secs,
	       maps, unmaps, protects);
	printf("  checks   %s\n", atomic_load(&as.errors) ?
	       "FAILED: races seen (see above)" : "ok");

	while (as.retired) {
		struct region *reg = as.retired;

		as.retired = reg->next_retired;
		free(reg);
	}
	for (i = 0; i < LOAD(&as.nr_regions); i++)
		free(as.regions[i]);
	free(as.regions);
	free((void *)as.backing);
	free((void *)as.page_faults);
	free(workers);
	return atomic_load(&as.errors) ? 1 : 0;
}
