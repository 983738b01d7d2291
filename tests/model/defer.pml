/* SPDX-License-Identifier: MIT */
/*
 * defer.pml -- a SPIN model of the readers-first policy (src/defer.c;
 * docs/model.md, "Readers first"): on a tree with
 * RANGE_LOCK_TREE_FLAG_DEFER_WRITERS, a writer's lock call that finds a
 * reader of the tree asleep waits, before it enters the tree, until no
 * reader sleeps, for at most RL_DEFER_NS (2 ms).
 *
 * What it adds to the protocol is a delay BEFORE a writer's arrival: the
 * writer has no request in the tree while it defers, so every property of
 * rangelock.pml holds as before (that model already explores every
 * arrival time).  What this model checks is the deferral's own word:
 *
 *   dw = (readers asleep) << 1 | (a writer may wait on dw)
 *
 * MODEL STEP -> src/
 * ==================
 * here                         what it does                     src/
 * ---------------------------  -------------------------------  ---------------
 * reader: "dw = dw + 2"        count the sleep, before the      sleep_once()
 *                              FUTEX_WAIT on its own word        (waiting.c)
 * reader: "(heldA == 0)"       the sleep: until the holder of   rl_wait()
 *                              its range releases it
 * reader: awake:               count off; the last one clears   rl_reader_awake()
 *                              the flag by CAS and wakes all    (defer.c)
 * writer: defer:               load dw; no reader asleep: go    rl_defer_writer()
 *                              on; else set the flag by CAS,     (defer.c)
 *                              FUTEX_WAIT(dw, v); again
 * writer: the "timeout" option the 2 ms bound (only while a     rl_defer_writer()
 *                              reader sleeps: see below)
 *
 * THREADS.  H write-holds range A, then makes a write lock call for
 * another range (it defers), then releases A.  R reads A: while H holds it,
 * R sleeps (counted).  W makes a write lock call (it defers).  R2 is a
 * second reader that sleeps once for a while (on a range nobody here
 * models), so that two readers' counts interleave.  -DKILLABLE: R's sleep
 * is a killable one, cancelled at the cancellation point after its wait.
 *
 * PROPERTIES (safety run: assertions and invalid end states).
 *  - The count is never negative and is 0 at the end: no path leaves a
 *    reader counted (an end-state assertion).
 *  - No lost wake-up: a deferred writer may give up at its bound only
 *    while a reader is still counted (the timeout option below is guarded
 *    by it), so a writer still asleep in the deferral once no reader
 *    sleeps -- a wake-up was lost -- is an invalid end state.
 *  - No deadlock: H defers while holding what R sleeps for; only the bound
 *    ends that (mutant MUT_UNBOUNDED: invalid end state).
 *
 * MUTANTS (each must fail; CMakeLists.txt):
 *   MUT_UNBOUNDED        the deferral has no bound: H and R wait for each
 *                        other (a thread that holds a range and locks
 *                        another while a reader sleeps for the first)
 *   MUT_NO_WAKE          the last reader clears the flag but does not wake
 *   MUT_WAKE_FIRST       the reader wakes before it counts itself off
 *   MUT_NO_FLAG          the writer sleeps without setting the flag
 *   MUT_CANCEL_LEAK      (with -DKILLABLE) the cancellation point comes
 *                        before the count-off
 * (This model's own first draft let a writer whose flag CAS failed go on
 * to sleep without the flag -- the C loops back -- and the search found the
 * lost wake-up that MUT_NO_FLAG shows.)
 *
 * ABSTRACTIONS: sequentially consistent memory (the word is a hint: every
 * access may be relaxed, the futex's own check orders the sleep); the
 * writer's early ends (a signal for an interruptible call, a caller's
 * deadline) only shorten a deferral and are not modelled; a spurious
 * wake-up is a loop pass.
 */

byte dw = 0;       /* readers asleep << 1 | flag */
bit heldA = 0;     /* H holds range A */
bit asleep[3];     /* writer i (0: H, 1: W) asleep on dw */
bit rdone = 0;     /* R's call finished */
bit r2done = 0;

#define NR (dw >> 1)

/* FUTEX_WAKE(dw, all) */
inline wake_all()
{
	asleep[0] = 0;
	asleep[1] = 0;
}

/* rl_reader_awake(): count off; the last reader clears the flag and
 * wakes the deferred writers. */
inline reader_awake()
{
	byte v;
#ifdef MUT_WAKE_FIRST
	if
	:: (dw & 1) -> wake_all()
	:: else -> skip
	fi;
#endif
	atomic { assert(dw >= 2); dw = dw - 2; v = dw };
	if
	:: v == 1 ->
		atomic {
			if
			:: dw == 1 -> dw = 0;
#ifndef MUT_NO_WAKE
#ifndef MUT_WAKE_FIRST
				wake_all()
#endif
#endif
			:: else -> skip
			fi
		}
	:: else -> skip
	fi
}

/* rl_defer_writer(), for writer @i: a failed CAS looks again */
inline defer(i)
{
	byte v;
	v = dw;
	do
	:: (v >> 1) == 0 -> break
#ifndef MUT_NO_FLAG
	:: (v >> 1) > 0 && (v & 1) == 0 ->
		atomic {
			if
			:: dw == v -> dw = v | 1; v = v | 1
			:: else -> v = dw
			fi
		}
	:: (v >> 1) > 0 && (v & 1) == 1 ->
#else
	:: (v >> 1) > 0 ->
#endif
		/* FUTEX_WAIT(dw, v): blocks iff dw == v */
		atomic {
			if
			:: dw == v -> asleep[i] = 1
			:: else -> skip
			fi
		};
		if
		:: asleep[i] == 0 -> skip
#ifndef MUT_UNBOUNDED
		:: atomic { asleep[i] == 1 && NR > 0 -> asleep[i] = 0 };
			break /* the bound: ETIMEDOUT */
#endif
		fi;
		v = dw
	od
}

active proctype H()
{
	heldA = 1;
	defer(0);
	/* ... holds its second range; then releases both */
	heldA = 0
}

active proctype W()
{
	defer(1)
}

active proctype R()
{
	if
	:: heldA == 1 ->
		/* sleep_once(): counted from before the FUTEX_WAIT ... */
		dw = dw + 2;
		(heldA == 0);
#ifdef KILLABLE
#ifdef MUT_CANCEL_LEAK
		if
		:: goto cancelled /* pthread_testcancel(): cancelled */
		:: skip
		fi;
#endif
#endif
		/* ... to after it */
		reader_awake();
#ifdef KILLABLE
		if
		:: goto cancelled
		:: skip
		fi;
#endif
	:: else -> skip /* A is free: granted at once */
	fi;
cancelled:
	rdone = 1
}

active proctype R2()
{
	if
	:: dw = dw + 2;
		/* asleep for a while: another holder, not modelled */
		reader_awake()
	:: skip
	fi;
	r2done = 1
}

/* At the end: nobody counted, nobody left asleep in a deferral. */
active proctype monitor()
{
	timeout ->
	assert(rdone && r2done);              /* no deadlock */
	assert(NR == 0);                      /* no reader left counted */
	assert(asleep[0] == 0 && asleep[1] == 0) /* no lost wake-up */
}
