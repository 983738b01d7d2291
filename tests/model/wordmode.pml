/* SPDX-License-Identifier: MIT */
/*
 * wordmode.pml -- a SPIN model of the "word mode" of a default-policy tree
 * (issue 23; the lead's design, /work/notes/wordmode-design.md, draft 1):
 * full-range requests that conflict with the lock word's fast holder wait
 * on the lock word itself (spin, then FUTEX_WAIT with a sleepers variant of
 * the fast value), and the tree side they meet: displacement and
 * materialisation of the word holder, the tree path of ex-word-waiters
 * (HANDOFF-marked once past the bound), the internal lock tree_lock as the
 * futex mutex it is (L, L|S, sleepers on the value 3), with ONE kernel
 * queue for both kinds of sleeper on the lock word.  docs/model.md ("Word
 * mode") explains it; the step numbers below are the design's.
 *
 * MODEL STEP -> DESIGN STEP -> src/ (the word waiter's code is the lead's;
 * its function is named in docs/model.md)
 * ==================================
 * tw, TW_*, TW_FAST(k, r, s)   the lock word: 0, L, L|S, NE, P|5, P|7,
 *                              P|6, P|2 (s: sleepers variant)   tree_lock.h
 * fq[], wake1(), wake_all()    the lock word's futex queue: 1 = asleep on 3
 *                              (tree_lock), 2 = asleep on a sleepers value
 *                              (word); FUTEX_WAKE(1) wakes ANY one sleeper
 *                              of either kind; FUTEX_WAKE(INT_MAX) all
 * start:                       fast CAS 0 -> P|5/7; else word waiter iff
 *                              WORD_WAITER (full range, plain or timed,
 *                              conflicting fast value), else tree path
 * wloop:                       steps 1-4 of the word waiter's loop; 2:
 *                              CAS(0 -> N|plain, or N|sleepers once slept);
 *                              3a bound -> leave marked; 3b deadline ->
 *                              ETIMEDOUT; 3d CAS(plain -> sleepers); 4
 *                              tree mode / non-conflicting -> leave
 *                              (3c, the spin, is a pass that changes
 *                              nothing: not modelled)
 * wsleep:                      3e FUTEX_WAIT(sleepers value): EAGAIN, or
 *                              asleep until woken or (tmo) its timeout
 * wleave:, wtimeout:           "Leave": PASS-ON FUTEX_WAKE(1) if slept
 * tl_acquire()                 tree_lock_acquire(_slow): 0/NE -> mine;
 *                              fast value -> mine, materialise, wake all
 *                              if it was a sleepers variant; L -> L|S,
 *                              FUTEX_WAIT(3), mine = L|S
 * TL_RELEASE, tl_wake()        tree_lock_release(): exchange to NE/0 (0
 *                              only if the tree is empty), FUTEX_WAKE(1)
 *                              if the old value had S
 * tree:                        lock_common() under tree_lock: count,
 *                              overtake (rule 2) or insert (marked if mk)
 * twait:, tmark:, tgiveup:     the tree waiter (abstract: waits for word
 *                              == 0; rangelock.pml checks its protocol),
 *                              rule 6 mark, _timedlock give-up
 * owner:                       word unlock: CAS(P|plain -> 0), or
 *                              CAS(P|sleepers -> 0) + FUTEX_WAKE(1), else
 *                              (displaced) through the tree; downgrade
 *
 * PROPERTIES: exclusion (shadow); the tree's counting invariant and word
 * states (check_inv); the lock word and the tree agree (monitor: tree
 * non-empty => tw in {L, L|S, NE}; a fast holder is not in the tree);
 * precision (a word sleeper sleeps only on a value whose holder conflicts
 * with it; at every grant, each word sleeper conflicts with some holder
 * unless a wake is still owed or in flight); bounded overtaking (ghost
 * marks: no request that arrived, or entered the tree, after a waiter was
 * marked and conflicts with it is granted before it); the design's
 * no-lost-wake-up invariant (monitor: a futex sleeper exists only while
 * the word holds a sleepers indication, or a thread owes or is about to
 * make a wake); no invalid end state (a lost wake-up hangs a waiter whose
 * wait chose no timeout); -DLIVENESS: progress under weak fairness.
 *
 * MUTANTS: MUT_NO_WAITERS_BIT (3d skipped: sleeps on the plain value),
 * MUT_NO_HANDOFF (3a removed, never marked), MUT_PARTIAL_WAITS (a
 * partial-range request waits on the word), MUT_NO_PASS_ON (leave and
 * timeout without the pass-on wake), MUT_RELEASE_NONEMPTY (tree_unlock
 * writes 0 when no request WAITS, though held ones remain),
 * MUT_UNLOCK_NO_WAKE (CAS(P|sleepers -> 0) without the wake),
 * MUT_DISPLACE_NO_WAKE (the displacer does not wake all),
 * MUT_OVERTAKE_MARKED (a newcomer overtakes a marked waiter: shows that
 * the ghost marks of ex-word-waiters are live).
 *
 * PROBES (each must fail, to show the interleaving is reached):
 * PROBE_MIXED (both kinds of sleeper in the queue at once),
 * PROBE_CROSS_WAKE (a word unlock's FUTEX_WAKE(1) with a tree_lock sleeper
 * queued), PROBE_CROSS_WAKE2 (tree_lock's wake with a word sleeper queued).
 *
 * DESIGN OPTIONS (draft 1 as written, each fails: docs/model.md):
 * -DREADER_WORD_WAITERS: full-range readers wait on the word too; without
 * it only full-range writers do (a reader facing a writer's word takes the
 * tree path).  -DSPLIT_STEP2: a failed step-2 CAS is followed by a fresh
 * load (without it, the pass goes on with the value the CAS returned).
 *
 * OTHER FLAGS: -DNUNITS=1|2, -DROUNDS=r (-DROUNDS0), -DTWO_THREADS,
 * -DPLAIN_ONLY (no timed calls; else thread 1 may be _timedlock,
 * -DALL_TIMED any thread), -DNO_DOWNGRADE, -DNO_TREE_MARK (only ex-word-
 * waiters are marked), -DNO_INVARIANT, -DNO_WAKE_INV (drop the tree and
 * the lost-wake-up invariants, to see which behaviour catches a mutant),
 * -DATOMIC_CS (tree_lock sections as one step; implied by -DLIVENESS),
 * -DLIVENESS (clock process, progress claim; pan -a -f).
 */

#ifndef NUNITS
#define NUNITS 2
#endif
#if defined(ROUNDS) && !defined(ROUNDS0)
#define ROUNDS0 ROUNDS
#endif
#define N 3

#define HANDOFF     2
#define ONE_BLOCKER 4
#define COUNT(w)    ((w) >> 2)

#define INTERSECTS(a, b)  (st[a] <= la[b] && st[b] <= la[a])
#define CONFLICT(ra, rb)  (!((ra) && (rb)))
#define FULL(k)           (st[k] == 0 && la[k] == NUNITS - 1)

/* the lock word */
#define TW_FREE      0
#define TW_LOCKED    1
#define TW_LS        3	/* L|S: tree_lock held, sleepers may exist */
#define TW_NONEMPTY  4
#define TW_FAST(k, r, s) (8 + 4 * (k) + 2 * (r) + (s))
#define IS_FAST(w)   ((w) >= 8)
#define FK(w)        (((w) - 8) / 4)
#define FR(w)        ((((w) - 8) / 2) % 2)
#define FS(w)        (((w) - 8) % 2)
/* does the fast holder of w conflict with request i (mode isr)? */
#define WCONF(w)     (INTERSECTS(FK(w), i) && CONFLICT(FR(w), isr))
/* a sleepers indication */
#define SLEEPERS_IND(w) ((w) == TW_LS || (IS_FAST(w) && FS(w)))

/* how the call waits */
#define K_PLAIN 0
#define K_TIMED 1

/* who may wait on the word (design: "Who may wait on the word") */
#ifdef MUT_PARTIAL_WAITS
#define RANGE_OK  true		/* mutant: any range */
#else
#define RANGE_OK  FULL(i)
#endif
#ifdef READER_WORD_WAITERS
#define MODE_OK   true
#else
#define MODE_OK   (!isr)
#endif
#define WORD_WAITER (RANGE_OK && MODE_OK && IS_FAST(tw) && WCONF(tw))

/* ---- shared state --------------------------------------------------- */
byte tw;
bit  intree[N];
bit  rd[N];           /* the request's mode (RL_READER; set at the call) */
byte st[N], la[N];
byte seq[N];
byte nreq;
byte nwait;
byte word[N];         /* wait word: count << 2 | HANDOFF (abstract) */
byte fq[N];           /* futex queue of the lock word: 0 awake, 1 asleep on
			 3 (tree_lock), 2 asleep on a word sleepers value */
bit  owe[N];          /* ghost: woken (or returned from a wait) and not yet
			 discharged: pessimistic acquire, sleep again with
			 the indication, or pass-on wake */
bit  pw[N];           /* ghost: about to make a wake it decided on */
bit  marked[N];
byte late[N];
bit  waiting[N];
bit  expired[N];      /* the waiter's hand-off bound has passed */
byte sr[NUNITS];
bit  sw[NUNITS];

hidden byte hk, hm, hc;

#ifndef NO_INVARIANT
#define ASSERT_COUNTED(w)  assert(COUNT(w) >= 1)
#else
#define ASSERT_COUNTED(w)  skip
#endif

#ifdef MUT_RELEASE_NONEMPTY
#define TL_NONEMPTY_NOW  (nwait > 0)	/* mutant: "nonempty" = someone waits */
#else
#define TL_NONEMPTY_NOW  (nreq > 0)
#endif

/* rule 6 / step 3a: may the bound have passed at this look? */
#ifdef MUT_NO_HANDOFF
#define CAN_EXPIRE   false
#define NOT_EXPIRED  true
#elif defined(LIVENESS)
#define CAN_EXPIRE   expired[i]
#define NOT_EXPIRED  (!expired[i])
#else
#define CAN_EXPIRE   true
#define NOT_EXPIRED  true
#endif
/* may a tree waiter mark itself now?  (-DNO_TREE_MARK: only an
 * ex-word-waiter past the bound is marked, at its insertion) */
#if defined(MUT_NO_HANDOFF) || defined(NO_TREE_MARK)
#define CAN_TMARK    false
#elif defined(LIVENESS)
#define CAN_TMARK    (!marked[i] && expired[i])
#else
#define CAN_TMARK    (!marked[i])
#endif
/* may a word sleeper's FUTEX_WAIT return without a wake (its timeout at
 * min(deadline, t0 + bound), or spuriously)? */
#ifdef LIVENESS
#define WTIMEOUT_OK  expired[i]
#else
#define WTIMEOUT_OK  tmo
#endif

inline wake1()
{
	if
	:: fq[0] != 0 -> fq[0] = 0; owe[0] = 1
	:: fq[1] != 0 -> fq[1] = 0; owe[1] = 1
	:: fq[2] != 0 -> fq[2] = 0; owe[2] = 1
	:: else
	fi
}

inline wake_all()
{
	d_step {
		if :: fq[0] != 0 -> fq[0] = 0; owe[0] = 1 :: else fi;
		if :: fq[1] != 0 -> fq[1] = 0; owe[1] = 1 :: else fi;
		if :: fq[2] != 0 -> fq[2] = 0; owe[2] = 1 :: else fi
	}
}

/* the displaced fast holder becomes a held request, first in the tree */
inline materialise()
{
	hk = FK(tw);
#ifndef NO_INVARIANT
	assert(nreq == 0 && !intree[hk]);	/* fast holders: empty tree */
#endif
	assert(rd[hk] == FR(tw));
	seq[hk] = 0; nreq = 1; intree[hk] = 1; word[hk] = 0;
	hk = 0
}

/* tree_lock_acquire() and its slow path (tree_lock.c), the spin omitted */
inline tl_acquire()
{
	mine = TW_LOCKED;
	do
	:: atomic { IS_FAST(tw) ->	/* displace the fast holder */
		disp = tw; materialise(); tw = mine;
		if :: mine == TW_LS -> owe[i] = 0 :: else fi;
#ifndef MUT_DISPLACE_NO_WAKE
		pw[i] = FS(disp);	/* it will wake all */
#endif
		break }
	:: atomic { (tw == TW_FREE || tw == TW_NONEMPTY) ->
		tw = mine;
		if :: mine == TW_LS -> owe[i] = 0 :: else fi;
		break }
	:: atomic { (tw == TW_LOCKED || tw == TW_LS) ->
		tw = TW_LS }		/* CAS(L -> L|S) (or S already set) */
		/* FUTEX_WAIT(3): asleep, or EAGAIN */
		atomic {
			if
			:: tw == TW_LS -> fq[i] = 1; owe[i] = 0
			:: else
			fi
		}
		(fq[i] == 0);	/* returned (a waker set owe[i]) */
		mine = TW_LS
	od;
	mine = 0;
	/* a displaced sleepers variant: FUTEX_WAKE(INT_MAX) */
	if
	:: IS_FAST(disp) && FS(disp) ->
#ifndef MUT_DISPLACE_NO_WAKE
		atomic { wake_all(); pw[i] = 0; disp = 0 }
#else
		disp = 0
#endif
	:: else -> disp = 0
	fi
}

/* A critical section of tree_lock: TL_BEGIN ... TL_RELEASE }.
 * -DATOMIC_CS (implied by -DLIVENESS): the whole section is one atomic
 * step, as in rangelock.pml (nobody sees L, nobody sleeps on 3): the
 * progress check is about word mode, and the futex mutex tree_lock is
 * not starvation-free (a sleeper woken by each release can find it taken
 * again every time; weak fairness allows that cycle). */
#if defined(LIVENESS) && !defined(ATOMIC_CS)
#define ATOMIC_CS
#endif
#ifndef ATOMIC_CS
#define TL_BEGIN  tl_acquire(); atomic {
#else
#define TL_BEGIN  atomic { (tw != TW_LOCKED && tw != TW_LS) -> tl_take();
#endif
inline tl_take()
{
	if
	:: IS_FAST(tw) ->
		materialise();
#ifndef MUT_DISPLACE_NO_WAKE
		if :: FS(tw) -> wake_all() :: else fi;
#endif
		tw = TW_LOCKED
	:: else -> tw = TW_LOCKED
	fi
}

/* tree_lock_release(): the exchange; the wake is tl_wake() */
#define TL_RELEASE						\
	assert(tw == TW_LOCKED || tw == TW_LS);			\
	ws = (tw == TW_LS);					\
	tw = (TL_NONEMPTY_NOW -> TW_NONEMPTY : TW_FREE);	\
	pw[i] = ws

inline tl_wake()
{
	if
	:: ws -> atomic {
#ifdef PROBE_CROSS_WAKE2
			/* probe: tree_lock's wake may reach a word sleeper */
			assert(fq[0] != 2 && fq[1] != 2 && fq[2] != 2);
#endif
			wake1(); ws = 0; pw[i] = 0 }
	:: else
	fi
}

/* the tree's invariant, whenever tree_lock is free (rangelock.pml's,
 * without SLEEPING and ELIGIBLE) */
inline check_inv()
{
#ifndef NO_INVARIANT
	d_step {
		hk = 0; hm = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] && COUNT(word[hk]) > 0 -> hm++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		assert(hm == nwait);
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] ->
				assert(!(word[hk] & HANDOFF) || COUNT(word[hk]) > 0);
				assert((word[hk] & 1) == 0);
				hc = 0; hm = 0;
				do
				:: hm < N ->
					if
					:: hm != hk && intree[hm] &&
					   INTERSECTS(hm, hk) && CONFLICT(rd[hm], rd[hk]) ->
						assert(word[hm] != 0 || word[hk] != 0);
						if
						:: seq[hm] < seq[hk] -> hc++
						:: else
						fi
					:: else
					fi;
					hm++
				:: else -> break
				od;
				assert(COUNT(word[hk]) == hc)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0; hm = 0; hc = 0
	}
#else
	skip
#endif
}

/* request k is granted: bounded overtaking, precedence */
inline granted(k)
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			assert(!(late[hk] & (1 << k)));
#ifndef NO_INVARIANT
			assert(!(hk != k && intree[hk] && seq[hk] < seq[k] &&
				 INTERSECTS(hk, k) && CONFLICT(rd[hk], rd[k])));
#endif
			hk++
		:: else -> break
		od;
		hk = 0;
		marked[k] = 0; late[k] = 0
	}
}

/* request i arrives, or enters the tree: it is late for every marked
 * request it conflicts with */
inline note_late()
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: marked[hk] && hk != i && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) ->
				late[hk] = late[hk] | (1 << i)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

inline count_blockers()
{
	d_step {
		cnt = 0; ovt = 1; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) ->
				cnt++;
				if
#ifndef MUT_OVERTAKE_MARKED
				:: word[hk] == 0 || (word[hk] & HANDOFF) -> ovt = 0
#else
				:: word[hk] == 0 -> ovt = 0	/* mutant */
#endif
				:: else
				fi
			:: else
			fi;
			hk++
		:: else -> break
		od;
		if
		:: cnt == 0 -> ovt = 0
		:: else
		fi;
		hk = 0
	}
}

inline overtake_seq()
{
	d_step {
		hm = N; hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && INTERSECTS(i, hk) &&
			   CONFLICT(isr, rd[hk]) && seq[hk] < hm -> hm = seq[hk]
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0;
		do
		:: hk < N ->
			if
			:: hk != i && intree[hk] && seq[hk] >= hm -> seq[hk]++
			:: else
			fi;
			hk++
		:: else -> break
		od;
		seq[i] = hm;
		hk = 0; hm = 0
	}
}

/* one blocker off request k (tree waiters are abstract: no SLEEPING, no
 * ELIGIBLE; the last blocker grants) */
inline put_blocker(k)
{
	ASSERT_COUNTED(word[k]);
	assert(word[k] != 0);
	if
	:: COUNT(word[k]) > 1 -> word[k] = word[k] - ONE_BLOCKER
	:: else ->
		word[k] = 0; nwait--;
		granted(k)
	fi
}

inline remove_request()
{
	intree[i] = 0;
	nreq--;
	marked[i] = 0; late[i] = 0;
	j = (nwait == 0 -> N : 0);
	do
	:: j < N ->
		if
		:: intree[j] && seq[j] > seq[i] && INTERSECTS(i, j) &&
		   CONFLICT(rd[i], rd[j]) -> put_blocker(j)
		:: else
		fi;
		j++
	:: else -> break
	od;
	j = 0;
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: intree[hk] && seq[hk] > seq[i] -> seq[hk]--
			:: else
			fi;
			late[hk] = late[hk] & ~(1 << i);
			hk++
		:: else -> break
		od;
		hk = 0;
		seq[i] = 0; word[i] = 0
	}
}

/* precision at a grant: every word sleeper conflicts with some holder, or
 * a wake is still owed or in flight */
inline check_precision()
{
	d_step {
		hk = 0;
		do
		:: hk < N ->
			if
			:: fq[hk] == 2 &&
			   !(owe[0] || owe[1] || owe[2] || pw[0] || pw[1] || pw[2]) ->
				hc = 0; hm = st[hk];
				do
				:: hm <= la[hk] ->
					if
					:: sw[hm] || (!rd[hk] && sr[hm] > 0) -> hc = 1
					:: else
					fi;
					hm++
				:: else -> break
				od;
				assert(hc)
			:: else
			fi;
			hk++
		:: else -> break
		od;
		hk = 0; hm = 0; hc = 0
	}
}

inline shadow_enter()
{
	d_step {
		assert(!intree[i] || word[i] == 0);
		waiting[i] = 0; expired[i] = 0;
		hk = st[i];
		do
		:: hk <= la[i] ->
			if
			:: isr -> assert(!sw[hk]); sr[hk]++
			:: else -> assert(!sw[hk] && sr[hk] == 0); sw[hk] = 1
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	};
	check_precision()
}

inline shadow_leave()
{
	d_step {
		hk = st[i];
		do
		:: hk <= la[i] ->
			if
			:: isr -> sr[hk]--
			:: else -> sw[hk] = 0
			fi;
			hk++
		:: else -> break
		od;
		hk = 0
	}
}

proctype thread(byte i)
{
	bit  isr;	/* reader request */
	bit  fast;	/* held in the word (fast path or word waiter) */
	bit  slept;	/* the word waiter has slept (FUTEX_WAIT returned) */
	bit  mk;	/* enters the tree HANDOFF-marked (past the bound) */
	bit  ovt, ws, tmo, keep;
	byte kind;
	byte mine;	/* tree_lock_acquire_slow()'s mine: L or L|S */
	byte disp;	/* the displaced fast value */
	byte cnt, v, j;
#ifdef ROUNDS
	byte rounds;
#endif

start:
	atomic {
#ifdef TWO_THREADS
		if
		:: i == 2 -> goto stop
		:: else
		fi;
#endif
#ifndef LIVENESS
		if
		:: true
		:: true -> goto stop
		fi;
#endif
		if
		:: isr = 1
		:: isr = 0
		fi;
#if NUNITS == 1
		st[i] = 0; la[i] = 0;
#else
		if
		:: st[i] = 0; la[i] = 1
		:: st[i] = 0; la[i] = 0
		:: st[i] = 1; la[i] = 1
		fi;
#endif
		rd[i] = isr;
#if defined(PLAIN_ONLY)
		kind = K_PLAIN;
#elif defined(ALL_TIMED)
		if
		:: kind = K_PLAIN
		:: kind = K_TIMED
		fi;
#else
		if
		:: kind = K_PLAIN
		:: i == 1 -> kind = K_TIMED
		fi;
#endif
		note_late();	/* it arrives */
		/* the fast path: CAS(0 -> request | mode) */
		if
		:: tw == TW_FREE ->
			tw = TW_FAST(i, isr, 0); fast = 1;
			granted(i); shadow_enter(); goto owner
		:: else
		fi;
		waiting[i] = 1;
		if
		:: WORD_WAITER -> goto wloop
		:: else -> goto tree
		fi
	}

wloop:	/* the word waiter's loop, one pass */
	atomic {
		if
#ifndef SPLIT_STEP2
		/* step 2: CAS(0 -> N|code), won.  The load and the CAS in one
		 * step: a failed CAS goes on with the value it returned, as
		 * the load of the next pass (-DSPLIT_STEP2: not so) */
		:: tw == TW_FREE ->
			tw = TW_FAST(i, isr, slept); fast = 1;
			owe[i] = 0;	/* slept: pessimistic, discharged */
			granted(i); shadow_enter(); goto owner
#else
		:: tw == TW_FREE -> goto wcas
#endif
		:: IS_FAST(tw) && WCONF(tw) ->	/* step 3 */
			if
			:: CAN_EXPIRE ->	/* 3a: the bound: leave, marked */
				expired[i] = 1; mk = 1; goto wleave
			:: kind == K_TIMED -> goto wtimeout	/* 3b */
			:: NOT_EXPIRED ->
				v = tw;
#ifndef MUT_NO_WAITERS_BIT
				if	/* 3d: CAS(plain -> sleepers) */
				:: !FS(v) -> v = v + 1; tw = v
				:: else
				fi;
#endif
				goto wsleep
			fi
		:: else ->	/* step 4: tree mode, or a non-conflicting holder */
#if defined(LIVENESS) || defined(MUT_NO_HANDOFF)
			mk = expired[i];
#else
			if
			:: mk = expired[i]
			:: !expired[i] -> expired[i] = 1; mk = 1
			fi;
#endif
			goto wleave
		fi
	}
#ifdef SPLIT_STEP2
wcas:	/* the CAS of step 2 after a load of 0; failed: pass again, with a
	 * fresh load (the value the CAS returned is ignored) */
	atomic {
		if
		:: tw == TW_FREE ->
			tw = TW_FAST(i, isr, slept); fast = 1;
			owe[i] = 0;
			granted(i); shadow_enter(); goto owner
		:: else -> goto wloop
		fi
	}
#endif
wsleep:	/* 3e: FUTEX_WAIT(sleepers value, until min(deadline, t0 + bound)) */
	atomic {
		if
		:: tw == v ->
			/* precision: it sleeps only on a conflicting holder */
			assert(WCONF(v));
			fq[i] = 2;
			owe[i] = (FS(v) -> 0 : owe[i]);	/* (b): asleep with the bit */
#ifndef LIVENESS
			if	/* will this wait time out (or return spuriously)? */
			:: tmo = 0
			:: tmo = 1
			fi
#endif
		:: else ->	/* EAGAIN */
			slept = 1; v = 0; goto wloop
		fi
	}
	if
	:: atomic { fq[i] == 0 -> slept = 1; v = 0; tmo = 0; goto wloop }
	:: atomic { fq[i] != 0 && WTIMEOUT_OK ->
			fq[i] = 0; slept = 1; v = 0; tmo = 0; goto wloop }
	fi;

wleave:	/* leave for the tree (marked iff mk); pass-on wake if slept */
#ifndef MUT_NO_PASS_ON
	if
	:: slept -> pw[i] = 1; atomic { wake1(); pw[i] = 0; owe[i] = 0 }
	:: else
	fi;
#else
	owe[i] = 0;
#endif
	slept = 0;
	goto tree;

wtimeout:	/* 3b: -ETIMEDOUT (pass-on wake if slept) */
#ifndef MUT_NO_PASS_ON
	if
	:: slept -> pw[i] = 1; atomic { wake1(); pw[i] = 0; owe[i] = 0 }
	:: else
	fi;
#else
	owe[i] = 0;
#endif
	slept = 0;
	waiting[i] = 0; expired[i] = 0;
	goto leave;

tree:	/* lock_common(): tree_lock, count, overtake or insert */
	TL_BEGIN

		count_blockers();
		note_late();
		if
		:: ovt ->
			overtake_seq();
			intree[i] = 1;
			word[i] = 0;
			j = 0;
			do
			:: j < N ->
				if
				:: j != i && intree[j] && INTERSECTS(i, j) &&
				   CONFLICT(isr, rd[j]) ->
					assert(word[j] != 0);
					if
					:: COUNT(word[j]) == 0 -> nwait++
					:: else
					fi;
					word[j] = word[j] + ONE_BLOCKER
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0; cnt = 0; ovt = 0
		:: else ->
			seq[i] = nreq;
			intree[i] = 1;
			word[i] = cnt * ONE_BLOCKER;
			if	/* an ex-word-waiter past the bound: marked */
			:: mk && cnt > 0 ->
				word[i] = word[i] | HANDOFF;
				marked[i] = 1; late[i] = 0
			:: else
			fi
		fi;
		mk = 0;
		nreq++;
		if
		:: cnt > 0 -> nwait++
		:: else -> granted(i)
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: cnt == 0 -> shadow_enter(); goto owner
	:: else -> cnt = 0
	fi;

twait:	/* the tree waiter (abstract) */
	if
	:: atomic { word[i] == 0 -> shadow_enter(); goto owner }
	:: kind == K_TIMED -> goto tgiveup	/* ETIMEDOUT racing a grant */
	:: CAN_TMARK -> goto tmark		/* rule 6 */
	fi;

tmark:
	TL_BEGIN

		if
		:: word[i] == 0 -> keep = 1	/* granted meanwhile */
		:: else ->
			word[i] = word[i] | HANDOFF;
			marked[i] = 1; late[i] = 0
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: keep -> keep = 0; shadow_enter(); goto owner
	:: else -> goto twait
	fi;

tgiveup:	/* withdraw_request(GIVE_UP_TIMEOUT) */
	TL_BEGIN

		if
		:: word[i] == 0 -> keep = 1	/* the grant won: keep it */
		:: else ->
			nwait--;
			remove_request();
			waiting[i] = 0; expired[i] = 0
		fi;
		check_inv();
		TL_RELEASE
	}
	tl_wake();
	if
	:: keep -> keep = 0; shadow_enter(); goto owner
	:: else -> goto leave
	fi;

owner:
	if
#ifndef NO_DOWNGRADE
	:: !isr ->	/* range_downgrade_write(): through the tree */
		TL_BEGIN	/* (displaces its own word hold) */

			assert(intree[i] && word[i] == 0 && !rd[i]);
			shadow_leave(); isr = 1; rd[i] = 1; shadow_enter();
			j = (nwait == 0 -> N : 0);
			do
			:: j < N ->
				if
				:: intree[j] && seq[j] > seq[i] &&
				   INTERSECTS(i, j) && rd[j] -> put_blocker(j)
				:: else
				fi;
				j++
			:: else -> break
			od;
			j = 0;
			check_inv();
			TL_RELEASE
		}
		tl_wake();
		goto owner
#endif
	:: atomic { fast && tw == TW_FAST(i, isr, 0) ->	/* CAS(P|plain -> 0) */
			shadow_leave(); tw = TW_FREE; goto leave }
	:: atomic { fast && tw == TW_FAST(i, isr, 1) ->	/* CAS(P|sleepers -> 0) */
			shadow_leave(); tw = TW_FREE;
#ifndef MUT_UNLOCK_NO_WAKE
			pw[i] = 1
#endif
		}
#ifndef MUT_UNLOCK_NO_WAKE
		atomic {
#ifdef PROBE_CROSS_WAKE
			/* probe: the word's wake may reach a tree_lock sleeper */
			assert(fq[0] != 1 && fq[1] != 1 && fq[2] != 1);
#endif
			wake1(); pw[i] = 0
		};	/* FUTEX_WAKE(1) */
#endif
		goto leave
	:: (!fast || (tw != TW_FAST(i, isr, 0) && tw != TW_FAST(i, isr, 1))) ->
		/* displaced, or held in the tree: unlock through the tree */
		TL_BEGIN

			assert(intree[i] && word[i] == 0 && rd[i] == isr);
			shadow_leave();
			remove_request();
			check_inv();
			TL_RELEASE
		}
		tl_wake()
	fi;
leave:
	skip;
	d_step {
		assert(!intree[i] && fq[i] == 0 && !owe[i] && !pw[i]);
		isr = 0; fast = 0; slept = 0; mk = 0; kind = 0; v = 0;
		mine = 0; keep = 0; tmo = 0; rd[i] = 0; st[i] = 0; la[i] = 0
	}
#ifdef ROUNDS
	if
	:: rounds + 1 < (i == 0 -> ROUNDS0 : ROUNDS) -> rounds++; goto start
	:: else -> goto stop
	fi;
#elif defined(ONE_VICTIM)
	if
	:: i == 0 -> goto stop
	:: else -> goto start
	fi;
#else
	goto start;
#endif
stop:
	skip
}

#ifdef LIVENESS
active proctype clock()
{
	do
	:: d_step {
		(waiting[0] && !expired[0]) || (waiting[1] && !expired[1]) ||
		(waiting[2] && !expired[2]) ->
		expired[0] = waiting[0];
		expired[1] = waiting[1];
		expired[2] = waiting[2]
	   }
	od
}
#endif

/* Checked in every state:
 *  - the lock word and the tree agree: a non-empty tree keeps the word in
 *    tree mode (L, L|S, NE), a fast holder is not in the tree;
 *  - the design's no-lost-wake-up invariant: while a thread sleeps on the
 *    lock word, the word holds a sleepers indication, or some thread owes a
 *    wake (it was woken or returned and has not discharged it) or is about
 *    to make one. */
#define WORD_OK  ((nreq == 0 || tw == TW_LOCKED || tw == TW_LS || \
		   tw == TW_NONEMPTY) && (!IS_FAST(tw) || !intree[FK(tw)]))
#define ANY_SLEEPER (fq[0] != 0 || fq[1] != 0 || fq[2] != 0)
#define DEBT (owe[0] || owe[1] || owe[2] || pw[0] || pw[1] || pw[2])
#ifndef NO_WAKE_INV
#define WAKE_OK  (!ANY_SLEEPER || SLEEPERS_IND(tw) || DEBT)
#else
#define WAKE_OK  true	/* (to see which behaviour catches a mutant) */
#endif
#ifndef NO_INVARIANT
#define MON_OK  (WORD_OK && WAKE_OK)
#else
#define MON_OK  WAKE_OK
#endif
#ifdef PROBE_MIXED
/* probe: both kinds of sleeper in the queue at once */
#undef MON_OK
#define MON_OK (!((fq[0] == 1 || fq[1] == 1 || fq[2] == 1) && \
		  (fq[0] == 2 || fq[1] == 2 || fq[2] == 2)))
#endif
active proctype monitor()
{
end:	atomic { !MON_OK -> assert(MON_OK) }
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run thread(2)
	}
}

#ifdef LIVENESS
ltl progress {
	[] ((waiting[0] -> <> !waiting[0]) &&
	    (waiting[1] -> <> !waiting[1]) &&
	    (waiting[2] -> <> !waiting[2]))
}
#endif
