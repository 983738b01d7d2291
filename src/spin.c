/* SPDX-License-Identifier: MIT */
/*
 * The cost of one spin-wait hint on this CPU, measured once (spin.h says
 * why spin budgets are times).
 *
 * The fastest of a few timings of a short run of hints: a preemption or an
 * interrupt can only make one timing longer, never shorter, so the minimum
 * is the hint's cost plus at most the clock read's.  About 5 x 64 hints
 * (6 us with a 19 ns PAUSE), paid by the first thread that spins.  Two
 * threads may measure at once: both results are valid, the last one stays.
 */
#include <time.h>

#include "spin.h"
#include "wait.h"

#define CAL_HINTS 64
#define CAL_TIMINGS 5

_Atomic uint32_t rl_spin_rate;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t rl_spin_calibrate(void)
{
	uint64_t best = UINT64_MAX, ps;
	uint32_t rate;

	for (int t = 0; t < CAL_TIMINGS; t++) {
		uint64_t t0 = mono_ns(), d;

		for (int i = 0; i < CAL_HINTS; i++)
			rl_cpu_relax();
		d = mono_ns() - t0;
		if (d < best)
			best = d;
	}
	ps = best * 1000u / CAL_HINTS;
	if (ps < RL_SPIN_HINT_PS_MIN)
		ps = RL_SPIN_HINT_PS_MIN;
	if (ps > RL_SPIN_HINT_PS_MAX)
		ps = RL_SPIN_HINT_PS_DEFAULT;
	rate = (uint32_t)(((uint64_t)1 << 20) * 1000u / ps);
	atomic_store_explicit(&rl_spin_rate, rate, memory_order_relaxed);
	return rate;
}
