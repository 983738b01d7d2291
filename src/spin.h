/* SPDX-License-Identifier: MIT */
/*
 * Spin budgets in time, not in spin-wait hints (spin.c).
 *
 * Every spin loop of the library (a word waiter's polls, word_mode.c; the
 * internal tree lock's spin, tree_lock.c; a waiter's spin for its grant,
 * waiting.c) pauses with rl_cpu_relax() (wait.h) between two looks.  What
 * one such hint costs depends on the CPU: an x86 PAUSE takes about 10
 * cycles on Intel cores before Skylake, about 140 on Skylake, other counts
 * since (about 15 ns on a 2026 Xeon, 19 ns on an AMD EPYC of family 26);
 * so a spin of "100 PAUSEs" is a different wait on every CPU.  Instead each
 * loop is given a budget in nanoseconds, turned into a number of hints by
 * rl_spin_iters() with the hint's cost measured once per process, the
 * first time a thread is about to spin (as .NET normalises its spin-waits;
 * glibc's adaptive mutex has the same problem with its spin count).
 *
 * Nothing here runs on an uncontended call: only loops that already wait
 * read the rate (one relaxed load, a multiply and a shift).
 */
#ifndef RANGELOCK_SPIN_H
#define RANGELOCK_SPIN_H

#include <stdatomic.h>
#include <stdint.h>

/*
 * Spin-wait hints per 2^20 ns (about a millisecond) on this CPU, measured
 * by rl_spin_calibrate(); 0 until then.  Relaxed: it is a tuning value, any
 * thread may store a fresh measurement (they agree to the noise), and
 * nothing else is published with it.
 */
extern _Atomic uint32_t rl_spin_rate;

/* Bounds of a measured cost per hint, ps: outside them the measurement was
 * disturbed (a preemption across every timing) and the default is used. */
#define RL_SPIN_HINT_PS_MIN 100u        /* 0.1 ns: a compiler barrier */
#define RL_SPIN_HINT_PS_MAX 500000u     /* 500 ns: no CPU's PAUSE is near it */
#define RL_SPIN_HINT_PS_DEFAULT 20000u  /* 20 ns: a recent x86 PAUSE */

/* Measure the hint's cost and store the rate; returns the rate. */
uint32_t rl_spin_calibrate(void);

/* The rate as a cost per hint, in picoseconds (the tests, the dump). */
static inline uint32_t rl_spin_rate_to_ps(uint32_t rate)
{
	return (uint32_t)(((uint64_t)1 << 20) * 1000u / rate);
}

/* How many rl_cpu_relax() make about @ns nanoseconds on this CPU (>= 1). */
static inline uint32_t rl_spin_iters(uint32_t ns)
{
	uint32_t rate = atomic_load_explicit(&rl_spin_rate, memory_order_relaxed);
	uint64_t n;

	if (__builtin_expect(rate == 0, 0))
		rate = rl_spin_calibrate();
	n = ((uint64_t)ns * rate) >> 20;
	return n == 0 ? 1 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

#endif /* RANGELOCK_SPIN_H */
