/* SPDX-License-Identifier: MIT */
/*
 * Spin budgets in time (src/spin.h, src/spin.c): the cost of one spin-wait
 * hint is measured once, and a budget in nanoseconds becomes a number of
 * hints that takes about that long on this CPU, whatever its hint costs.
 * Built against the static test variants (the calls are hidden).
 *
 * Timings are the fastest of several: a preemption can only lengthen one,
 * so the minimum is the loop's own time even on a loaded machine.
 */
#include "test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "spin.h"
#include "wait.h"

/* The fastest of @reps timings of @n hints, ns. */
static uint64_t fastest_spin(uint32_t n, int reps)
{
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < reps; r++) {
		uint64_t t0 = mono_ns(), d;

		for (uint32_t i = 0; i < n; i++)
			rl_cpu_relax();
		d = mono_ns() - t0;
		if (d < best)
			best = d;
	}
	return best;
}

/* The measured cost lies within the bounds no CPU leaves, and is stored. */
static void test_calibrated_cost_is_sane(void **state)
{
	(void)state;
	uint32_t rate = rl_spin_calibrate(), ps = rl_spin_rate_to_ps(rate);

	print_message("one spin-wait hint: %.2f ns (rate %u per 2^20 ns)\n", ps / 1000.0,
		      rate);
	assert_true(rate > 0);
	assert_int_equal(atomic_load(&rl_spin_rate), rate);
	assert_in_range(ps, RL_SPIN_HINT_PS_MIN, RL_SPIN_HINT_PS_MAX);
#if defined(__x86_64__) || defined(__i386__)
	/* A PAUSE is some cycles on every x86 (about 10 at the least): at
	 * least 1 ns.  Less means the loop timed nothing. */
	assert_true(ps >= 1000);
#endif
}

/* Nothing measured yet: the first budget asked for measures. */
static void test_first_spin_calibrates(void **state)
{
	(void)state;
	atomic_store(&rl_spin_rate, 0);
	assert_true(rl_spin_iters(1000) >= 1);
	assert_true(atomic_load(&rl_spin_rate) > 0);
}

/* Budgets scale with the time asked for, and never reach 0 hints. */
static void test_iters_scale_with_time(void **state)
{
	(void)state;
	uint32_t rate = rl_spin_calibrate(), ps = rl_spin_rate_to_ps(rate);
	uint64_t want = 2000000ull * 1000u / ps; /* 2 ms of hints */
	uint32_t got = rl_spin_iters(2000000);

	assert_int_equal(rl_spin_iters(0), 1);
	assert_true(rl_spin_iters(1000000) <= rl_spin_iters(2000000));
	/* within 1% of the cost's own rounding */
	assert_in_range(got, want - want / 100 - 1, want + want / 100 + 1);
	/* a budget too long for 32 bits saturates instead of wrapping */
	assert_true(rl_spin_iters(UINT32_MAX) >= rl_spin_iters(UINT32_MAX / 2));
}

/* A budget in ns is about that long in wall time: 200 us, the fastest of 9
 * spins, within [0.6, 2.5] x (a budget counted wrong by 2x either way
 * fails; the hint's cost measured on 64 hints agrees with 10,000). */
static void test_budget_is_bounded_in_time(void **state)
{
	(void)state;
	const uint64_t budget = 200000;
	uint32_t n;
	uint64_t t;

	rl_spin_calibrate();
	n = rl_spin_iters((uint32_t)budget);
	t = fastest_spin(n, 9);
	print_message("200 us budget: %u hints, %.1f us\n", n, t / 1000.0);
	assert_in_range(t, budget * 6 / 10, budget * 25 / 10);
	/* and the library's short budgets (2 us) are short too */
	t = fastest_spin(rl_spin_iters(2000), 9);
	assert_true(t < 20000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calibrated_cost_is_sane),
		cmocka_unit_test(test_first_spin_calibrates),
		cmocka_unit_test(test_iters_scale_with_time),
		cmocka_unit_test(test_budget_is_bounded_in_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
